#!/bin/bash
# The generated attribute table (src/ops/op_attrs.c) is what scripts/gen_op_attrs.py writes
# from the pinned onnx package: a hand edit, or a schema fact (a default value) changed
# without regenerating, fails here. Exit 77 (skipped) when no Python with onnx is at hand.
# usage: tests/lint/generated_test.sh SOURCE_DIR
src=${1:-.}
py=${PYTHON:-$src/.venv/bin/python}
[ -x "$py" ] || py=python3
"$py" -c "import onnx" 2>/dev/null || { echo "SKIPPED: no Python with onnx"; exit 77; }
tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT
"$py" "$src/scripts/gen_op_attrs.py" >"$tmp" || { echo "gen_op_attrs.py failed"; exit 1; }
if ! cmp -s "$tmp" "$src/src/ops/op_attrs.c"; then
  echo "src/ops/op_attrs.c differs from what scripts/gen_op_attrs.py generates:"
  diff "$tmp" "$src/src/ops/op_attrs.c" | head -20
  exit 1
fi
echo "generated: 1 passed, 0 failed"
