# Shared helpers of the hostile-input suite (tests/hostile/*.sh). Each test script is run as
#   bash tests/hostile/NAME.sh KILN WORKDIR
# after sourcing this file; it ends with `hostile_done`, which prints "N passed, N failed"
# and exits non-zero when a check failed. Environment: PYTHON (a Python with the onnx package,
# for building hostile models), CC (the C compiler for standalone output).
set -u
kiln=$1 work=$2
passed=0 failed=0
mkdir -p "$work"
tmp=$(mktemp -d "$work/XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$tmp/cache}
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL $*"; }

# expect STATUS DESCRIPTION CMD...: runs CMD (stdout in $tmp/out, stderr in $tmp/err) with a
# time limit; a crash (signal), a sanitizer report or a hang fails whatever the status.
expect() {
  local want=$1 what=$2; shift 2
  timeout -k 5 "${HOSTILE_TIMEOUT:-120}" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local got=$?
  if [ "$got" -eq 124 ] || [ "$got" -eq 137 ]; then bad "$what: hung (killed after ${HOSTILE_TIMEOUT:-120} s)"; return; fi
  if [ "$got" -gt 128 ]; then bad "$what: killed by signal $((got - 128))"; tail -5 "$tmp/err"; return; fi
  if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$tmp/err"; then
    bad "$what: sanitizer report"; grep -E -A3 "ERROR:|runtime error:" "$tmp/err" | head -12; return
  fi
  if [ "$got" -eq "$want" ]; then ok
  else bad "$what: exit $got, expected $want"; tail -5 "$tmp/err"; fi
}

# expect_err PATTERN DESCRIPTION: the last command's stderr matches the extended regex.
expect_err() {
  if grep -qiE -- "$1" "$tmp/err"; then ok
  else bad "$2: stderr lacks /$1/"; tail -5 "$tmp/err"; fi
}
# expect_out PATTERN DESCRIPTION: the last command's stdout matches.
expect_out() {
  if grep -qiE -- "$1" "$tmp/out"; then ok
  else bad "$2: stdout lacks /$1/"; tail -5 "$tmp/out"; fi
}
# expect_no_file PATH DESCRIPTION / expect_file PATH DESCRIPTION
expect_no_file() { if [ -e "$1" ] || [ -L "$1" ]; then bad "$2: $1 exists"; else ok; fi; }
expect_file() { if [ -s "$1" ]; then ok; else bad "$2: $1 missing or empty"; fi; }
# expect_same A B DESCRIPTION: two files are byte-identical.
expect_same() { if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; fi; }

# model NAME ARGS...: runs tests/hostile/models.py to build a hostile model (see its --help).
model() { "$PYTHON" "$here/models.py" "$@"; }

# mlp_fixture: writes $tmp/mlp.kiln, a Gemm + Relu MLP in the text IR with input x:
# f32[batch,4], and $tmp/x.npy, an f32[2,4] input for it (standard library only).
mlp_fixture() {
  cat >"$tmp/mlp.kiln" <<'IR'
graph @mlp(%x: f32[batch,4]) -> (%y: f32[batch,3]) {
  opset "" 17
  %w = const f32[3,4] [0.5, -1, 0.25, 2, 1, 1, -0.5, 0, 0.125, 3, -2, 1]
  %b = const f32[3] [0.1, -0.2, 0.3]
  %h = Gemm(%x, %w, %b) {transB=1} : f32[batch,3]
  %y = Relu(%h) : f32[batch,3]
  return %y
}
IR
  python3 - "$tmp/x.npy" <<'PY'
import struct, sys
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"
head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
data = struct.pack("<8f", 0.5, -1, 2, 0.25, -0.75, 1.5, 3, -2)
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + data)
PY
}

# unary_fixture OP FILE: a graph in the text IR with one OP node on x: f32[2,4].
unary_fixture() {
  cat >"$2" <<IR
graph @m(%x: f32[2,4]) -> (%y: f32[2,4]) {
  opset "" 17
  %y = $1(%x) : f32[2,4]
  return %y
}
IR
}

hostile_done() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
