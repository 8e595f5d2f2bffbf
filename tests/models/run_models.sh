#!/usr/bin/env bash
# Exports the reference models (scripts/export_models.py) and runs them through
# `kiln test-onnx`.
#
#   tests/models/run_models.sh BUILD_DIR OUT_DIR [MODELS]
#
# MODELS is a comma-separated subset (default: all of resnet18, resnet50,
# mobilenet_v2, squeezenet1_1, bert_tiny). $TORCH_PYTHON is a python with torch
# and torchvision (default /usr/bin/python3, Debian's python3-torch). Models
# already exported into OUT_DIR are reused unless REEXPORT=1. Tolerances:
# RTOL (default 1e-3), ATOL (default 1e-4). Exit status is test-onnx's.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR [MODELS]" >&2
  exit 2
fi
build=$1 out=$2
models=${3:-resnet18,resnet50,mobilenet_v2,squeezenet1_1,bert_tiny}
root=$(cd "$(dirname "$0")/../.." && pwd)
missing=""
for m in ${models//,/ }; do
  if [ "${REEXPORT:-0}" = 1 ] || [ ! -f "$out/$m/test_data_set_0/output_0.pb" ]; then
    missing="$missing,$m"
  fi
done
if [ -n "$missing" ]; then
  "${TORCH_PYTHON:-/usr/bin/python3}" "$root/scripts/export_models.py" --out "$out" \
    --models "${missing#,}"
fi
dirs=()
for m in ${models//,/ }; do dirs+=("$out/$m"); done
exec "$build/kiln" test-onnx --rtol "${RTOL:-1e-3}" --atol "${ATOL:-1e-4}" "${dirs[@]}"
