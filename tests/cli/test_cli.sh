#!/usr/bin/env bash
# CLI contract: --help on every subcommand, exit 2 on bad usage and bad input.
#   tests/cli/test_cli.sh KILN
kiln=$1 passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # expect STATUS DESCRIPTION CMD...
  local want=$1 what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAIL $what: exit $got, expected $want"; cat "$tmp/err"; fi
}

expect_stderr() { # expect_stderr PATTERN DESCRIPTION
  if grep -q -- "$1" "$tmp/err"; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAIL $2: stderr lacks '$1'"; cat "$tmp/err"; fi
}

expect 0 "kiln --help" "$kiln" --help
expect 2 "kiln without a command" "$kiln"
expect 2 "unknown command" "$kiln" frobnicate
for cmd in info print run test-onnx bench; do
  expect 0 "$cmd --help" "$kiln" "$cmd" --help
  grep -q "usage: kiln $cmd" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL $cmd --help does not show usage"; }
  expect 2 "$cmd with an unknown option" "$kiln" "$cmd" --no-such-option
  expect 2 "$cmd on a missing file" "$kiln" "$cmd" "$tmp/missing.onnx"
done
expect_stderr "missing.onnx" "errors name the file"
printf 'not a protobuf \377\377\377' > "$tmp/bad.onnx"
expect 2 "info on garbage" "$kiln" info "$tmp/bad.onnx"
: > "$tmp/empty.onnx"
expect 2 "info on an empty file" "$kiln" info "$tmp/empty.onnx"
expect 2 "run with a malformed --input" "$kiln" run "$tmp/bad.onnx" --input nonsense
expect 2 "test-onnx on a folder without cases" "$kiln" test-onnx "$tmp"
expect 2 "test-onnx --jobs 0" "$kiln" test-onnx --jobs 0 "$tmp"
expect_stderr "--jobs" "test-onnx --jobs 0 names the option"

# A small model in the text IR, for the commands that run models.
cat > "$tmp/mlp.kiln" <<'IR'
graph @mlp(%x: f32[batch,4]) -> (%y: f32[batch,3]) {
  opset "" 17
  %w = const f32[3,4] [0.5, -1, 0.25, 2, 1, 1, -0.5, 0, 0.125, 3, -2, 1]
  %b = const f32[3] [0.1, -0.2, 0.3]
  %h = Gemm(%x, %w, %b) {transB=1} : f32[batch,3]
  %y = Relu(%h) : f32[batch,3]
  return %y
}
IR
for b in interp; do
  expect 0 "bench --backend $b" "$kiln" bench "$tmp/mlp.kiln" --backend $b --iters 3 --warmup 1 --dim batch=2
  grep -q "^latency: min .* ms, median .* ms, p90 .* ms" "$tmp/out" && grep -q "^throughput: .* inferences/s" "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL bench --backend $b output"; cat "$tmp/out"; }
done
expect 2 "bench with an unknown backend" "$kiln" bench "$tmp/mlp.kiln" --backend nosuch
expect 2 "bench --iters 0" "$kiln" bench "$tmp/mlp.kiln" --iters 0
expect 2 "bench --dim without a value" "$kiln" bench "$tmp/mlp.kiln" --dim batch
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
