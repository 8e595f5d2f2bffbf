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
for cmd in info print run test-onnx; do
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
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
