#!/bin/bash
# The layer check (cmake/check_layers.cmake) passes on the project's sources and refuses each
# kind of bad include planted in a copy: a higher stage, a sideways stage that is not a
# dependency, a "../" path, another stage's private header. Ends with "N passed, N failed".
#   tests/lint/layers_test.sh SOURCE_DIR
root=$1 tmp=$(mktemp -d) pass=0 fail=0
trap 'rm -rf "$tmp"' EXIT
check() { cmake -DSRC="$1" -P "$root/cmake/check_layers.cmake" >"$tmp/out" 2>&1; }
if check "$root/src"; then pass=$((pass + 1)); else echo "FAIL: the sources break the layers:"; cat "$tmp/out"; fail=$((fail + 1)); fi
plant() { # plant FILE LINE EXPECTED_REGEX
  rm -rf "$tmp/src" && cp -r "$root/src" "$tmp/src" && echo "$2" >>"$tmp/src/$1"
  if check "$tmp/src"; then echo "FAIL: $1 with '$2' passed the layer check"; fail=$((fail + 1))
  elif grep -q "$3" "$tmp/out"; then pass=$((pass + 1))
  else echo "FAIL: $1 with '$2': no '$3' in:"; cat "$tmp/out"; fail=$((fail + 1)); fi
}
plant graph/graph.c '#include "runtime/runtime.h"' "src/graph/graph.c: .*stage 'graph' may not include stage 'runtime'"
plant tile/tile.c '#include "lower/lower.h"' "stage 'tile' may not include stage 'lower'"
plant codegen/render.c '#include "graph/graph.h"' "stage 'codegen' may not include stage 'graph'"
plant base/status.c '#  include <ops/ops.h>' "stage 'base' may not include stage 'ops'"
plant ops/ops.h '#include "../verify/verify.h"' "no \.\./"
plant runtime/plan.c '#include "lower/lower_internal.h"' "private to stage 'lower'"
plant verify/case.c '#include "lower/lower_ops.h"' "private to stage 'lower'"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
