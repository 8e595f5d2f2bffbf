#!/bin/bash
# The generated tables (src/ops/op_attrs.c, src/verify/gen/gen_types_table.c) are what
# scripts/gen_op_attrs.py and scripts/gen_type_constraints.py write
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
"$py" "$src/scripts/gen_type_constraints.py" >"$tmp" || { echo "gen_type_constraints.py failed"; exit 1; }
if ! cmp -s "$tmp" "$src/src/verify/gen/gen_types_table.c"; then
  echo "src/verify/gen/gen_types_table.c differs from what scripts/gen_type_constraints.py generates:"
  diff "$tmp" "$src/src/verify/gen/gen_types_table.c" | head -20
  exit 1
fi
echo "generated: 2 passed, 0 failed"
