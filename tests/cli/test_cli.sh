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
for cmd in info print run test-onnx bench compile; do
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
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$tmp/cache}
for b in interp opt tile cpu; do
  expect 0 "bench --backend $b" "$kiln" bench "$tmp/mlp.kiln" --backend $b --iters 3 --warmup 1 --dim batch=2
  grep -q "^latency: min .* ms, median .* ms, p90 .* ms" "$tmp/out" && grep -q "^throughput: .* inferences/s" "$tmp/out" &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL bench --backend $b output"; cat "$tmp/out"; }
done
# x: f32[2,4] as .npy, written with the standard library only
python3 - "$tmp/x.npy" <<'PY'
import struct, sys
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"
head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
data = struct.pack("<8f", 0.5, -1, 2, 0.25, -0.75, 1.5, 3, -2)
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + data)
PY
expect 0 "run --backend interp" "$kiln" run "$tmp/mlp.kiln" --input x="$tmp/x.npy" --output-dir "$tmp/ref"
for b in opt tile cpu; do
  expect 0 "run --backend $b matches interp" "$kiln" run "$tmp/mlp.kiln" --backend $b --input x="$tmp/x.npy" \
    --expect y="$tmp/ref/y.npy" --rtol 1e-6 --atol 1e-6
done
expect 2 "run with an unknown backend" "$kiln" run "$tmp/mlp.kiln" --backend nosuch --input x="$tmp/x.npy"
expect 2 "run --backend cpu with a wrong input shape" "$kiln" run "$tmp/mlp.kiln" --backend cpu \
  --input x="$tmp/ref/y.npy"

# compile: artifact, report, standalone C
expect 0 "compile -o --report" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 -o "$tmp/art" --report \
  --emit-c "$tmp/sa" --disable-pass=cse
for f in art/manifest.txt art/model.onnx art/report.txt sa/model.c sa/model.h sa/model.bin sa/main.c; do
  [ -s "$tmp/$f" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL compile wrote no $f"; }
done
grep -q "^memory: arena .* lower bound" "$tmp/out" && grep -q "^compile time:" "$tmp/out" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL compile --report lacks memory/time lines"; cat "$tmp/out"; }
expect 0 "run an artifact folder" "$kiln" run "$tmp/art" --input x="$tmp/x.npy" --expect y="$tmp/ref/y.npy" --rtol 1e-6 --atol 1e-6
grep -q "backend cpu" "$tmp/out" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL artifact not run on cpu"; }

# --schedule: a schedule from a file changes the kernel, not the results; a bad one is exit 2
grep -q "^  k0_gemm micro=packed mr=8 nr=16 par=none  # gemm; loops" "$tmp/art/report.txt" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL the report lacks the schedule"; cat "$tmp/art/report.txt"; }
printf '# tuned\nk0_gemm mr=1 nr=1 par=panels split=jb:2 unroll=i  # three panels\n' > "$tmp/sched.txt"
expect 0 "compile --schedule" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 -o "$tmp/art_s" --report \
  --disable-pass=cse --schedule "$tmp/sched.txt"
grep -q "^  k0_gemm micro=packed mr=1 nr=1 par=panels split=jb:2 unroll=i  #" "$tmp/out" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL the report lacks the set schedule"; cat "$tmp/out"; }
if cmp -s "$tmp/art/src/unit0.c" "$tmp/art_s/src/unit0.c"; then
  failed=$((failed + 1)); echo "FAIL --schedule did not change the generated kernel"
else passed=$((passed + 1)); fi
[ -s "$tmp/art_s/schedule.txt" ] && grep -q "^schedule schedule.txt" "$tmp/art_s/manifest.txt" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL the artifact lacks its schedule"; }
expect 0 "run a scheduled artifact" "$kiln" run "$tmp/art_s" --input x="$tmp/x.npy" --expect y="$tmp/ref/y.npy" \
  --rtol 1e-6 --atol 1e-6 --report
grep -q "k0_gemm micro=packed mr=1 nr=1" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL kiln run DIR did not use the artifact's schedule"; cat "$tmp/out"; }
printf 'k0_gemm mr=4\nk0_gemm frob=1\n' > "$tmp/bad_s.txt"
expect 2 "compile --schedule with an unknown field" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 --schedule "$tmp/bad_s.txt"
expect_stderr "bad_s.txt:2: unknown field 'frob'" "a bad schedule file names its line"
printf 'k0_gemm nr=0\n' > "$tmp/bad_s.txt"
expect 2 "compile --schedule with nr out of range" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 --schedule "$tmp/bad_s.txt"
printf 'k0_gemm par_min_elements=4\n' > "$tmp/bad_s.txt"
expect 2 "compile --schedule with a field that does not apply" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 \
  --schedule "$tmp/bad_s.txt"
expect_stderr "does not apply to kernel k0_gemm" "the error names the kernel"
printf 'k0_gemm vector=b\n' > "$tmp/bad_s.txt"
expect 2 "compile --schedule with a refused directive" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 \
  --schedule "$tmp/bad_s.txt"
expect_stderr "kernel k0_gemm: vectorize loop 'b'" "a refused directive names the kernel and loop"
printf 'k7_conv mr=4\n' > "$tmp/bad_s.txt"
expect 2 "compile --schedule matching no kernel" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 --schedule "$tmp/bad_s.txt"
expect_stderr "matches no kernel" "a line that matches no kernel is named"
expect 2 "compile --schedule on a missing file" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 --schedule "$tmp/nosuch.txt"
if (cd "$tmp/sa" && ${CC:-cc} -O2 -w main.c model.c -lm -o model_main) >"$tmp/out" 2>&1; then
  mkdir -p "$tmp/sa_out"
  expect 0 "standalone program runs" "$tmp/sa/model_main" -w "$tmp/sa/model.bin" -o "$tmp/sa_out" "$tmp/x.npy"
  expect 0 "standalone output matches interp" "$kiln" run "$tmp/mlp.kiln" --input x="$tmp/x.npy" \
    --expect y="$tmp/sa_out/y.npy" --rtol 1e-6 --atol 1e-6
else
  failed=$((failed + 1)); echo "FAIL the standalone C does not build"; cat "$tmp/out"
fi
expect 2 "compile without --dim on a symbolic model" "$kiln" compile "$tmp/mlp.kiln"
expect_stderr "batch" "the error names the unbound dim"
expect 0 "compile with a forced fallback" "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 --force-fallback Relu
expect_stderr "^fallback Relu" "fallbacks are listed on stderr with the reason"
expect 2 "compile with an unknown target" "$kiln" compile "$tmp/mlp.kiln" --target tpu
expect_stderr "unknown target 'tpu' (cpu, cuda)" "an unknown target lists the registered ones"
# help texts name the registered targets and the backends that run (the target registry)
expect 0 "compile --help" "$kiln" compile --help
grep -q -- "--target cpu|cuda " "$tmp/out" && ! grep -q "{" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL compile --help does not list the targets"; }
expect 0 "bench --help" "$kiln" bench --help
grep -q -- "--backend B       interp, opt, tile, cpu (default cpu)" "$tmp/out" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL bench --help backends"; }
expect 0 "run --help" "$kiln" run --help
grep -q "interpreter; cpu: compiled C kernels (default interp)" "$tmp/out" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL run --help backends"; }
expect 2 "run on a target that compiles only" "$kiln" run "$tmp/mlp.kiln" --backend cuda
expect_stderr "the cuda target compiles only .*the backends that run: interp, opt, tile, cpu" \
  "a target without a runtime is named as such, with the backends that run"
# An invalid attribute is bad input in every command, not a node without a lowering (a
# Softmax over axis 9 of a rank-2 input used to compile as a reference fallback, exit 0, and
# fail only when run); a node without a lowering still falls back with the table's reason.
cat > "$tmp/badaxis.kiln" <<'IR'
graph @badaxis(%x: f32[2,4]) -> (%y: f32[2,4]) {
  opset "" 17
  %y = Softmax(%x) {axis=9} : f32[2,4] @probs
  return %y
}
IR
for cmd in compile run info print verify; do
  expect 2 "$cmd: Softmax axis 9 of a rank-2 input" "$kiln" $cmd "$tmp/badaxis.kiln"
  expect_stderr "node 'probs' (Softmax): axis 9 is out of range" "$cmd: the error names the node and the axis"
done
cat > "$tmp/d2s.kiln" <<'IR'
graph @d2s(%x: f32[1,4,2,2]) -> (%y: f32[1,1,6,6]) {
  opset "" 17
  %y = DepthToSpace(%x) {blocksize=3} : f32[1,1,6,6] @shuffle
  return %y
}
IR
expect 2 "compile: a DepthToSpace blocksize that does not divide the channels" "$kiln" compile "$tmp/d2s.kiln"
expect_stderr "node 'shuffle' (DepthToSpace)" "DepthToSpace: the error names the node"
cat > "$tmp/det.kiln" <<'IR'
graph @det(%x: f32[3,3]) -> (%y: f32[]) {
  opset "" 17
  %y = Det(%x) : f32[] @d
  return %y
}
IR
expect 0 "compile: an op without a lowering falls back" "$kiln" compile "$tmp/det.kiln"
expect_stderr "fallback node 'd' (Det): no lowering for Det: " "the fallback gives the table's reason"
expect 2 "compile with an unknown pass" "$kiln" compile "$tmp/mlp.kiln" --disable-pass=nosuch
expect 2 "compile --dim without a value" "$kiln" compile "$tmp/mlp.kiln" --dim batch
expect 2 "bench with an unknown backend" "$kiln" bench "$tmp/mlp.kiln" --backend nosuch
expect 2 "bench --iters 0" "$kiln" bench "$tmp/mlp.kiln" --iters 0
expect 2 "bench --dim without a value" "$kiln" bench "$tmp/mlp.kiln" --dim batch
expect 0 "print --after simplify --time-passes" "$kiln" print "$tmp/mlp.kiln" --after simplify --time-passes
expect_stderr "// pass timings" "print --time-passes prints a table"
expect 0 "print --pass-limit=1" "$kiln" print "$tmp/mlp.kiln" --pass-limit=1
expect_stderr "BISECT: NOT running pass (2) identity" "print --pass-limit logs the passes it skips"
expect 2 "print --disable-pass with an unknown pass" "$kiln" print "$tmp/mlp.kiln" --disable-pass=nosuch
expect_stderr "nosuch" "print names the unknown pass"
expect 2 "print --pass-limit=x" "$kiln" print "$tmp/mlp.kiln" --pass-limit=x
expect 2 "print --after an unknown pass" "$kiln" print "$tmp/mlp.kiln" --after nosuch
# an index out of range is an error on every backend (compiled kernels check it too)
cat > "$tmp/gather.kiln" <<'IR'
graph @gather(%x: f32[5,3], %i: i64[2]) -> (%y: f32[2,3]) {
  opset "" 13
  %y = Gather(%x, %i) {axis=0} : f32[2,3]
  return %y
}
IR
python3 - "$tmp" <<'PY'
import struct, sys
def npy(path, descr, shape, fmt, vals):
    head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() +
                           struct.pack(fmt, *vals))
npy(sys.argv[1] + "/gx.npy", "<f4", "(5, 3)", "<15f", [float(v) for v in range(15)])
npy(sys.argv[1] + "/gi_ok.npy", "<i8", "(2,)", "<2q", [4, -5])
npy(sys.argv[1] + "/gi_bad.npy", "<i8", "(2,)", "<2q", [1, 5])
PY
for b in interp tile cpu; do
  expect 0 "Gather in range, --backend $b" "$kiln" run "$tmp/gather.kiln" --backend $b \
    --input x="$tmp/gx.npy" --input i="$tmp/gi_ok.npy"
  expect 2 "Gather index out of range, --backend $b" "$kiln" run "$tmp/gather.kiln" --backend $b \
    --input x="$tmp/gx.npy" --input i="$tmp/gi_bad.npy"
  expect_stderr "out of range" "--backend $b names the bad index"
done
expect 0 "compile --emit-c a Gather" "$kiln" compile "$tmp/gather.kiln" --emit-c "$tmp/gsa"
if (cd "$tmp/gsa" && ${CC:-cc} -O2 -w main.c model.c -lm -o model_main) >"$tmp/out" 2>&1; then
  expect 0 "standalone Gather in range" "$tmp/gsa/model_main" -w "$tmp/gsa/model.bin" \
    "$tmp/gx.npy" "$tmp/gi_ok.npy"
  expect 1 "standalone Gather index out of range" "$tmp/gsa/model_main" -w "$tmp/gsa/model.bin" \
    "$tmp/gx.npy" "$tmp/gi_bad.npy"
  expect_stderr "out of range" "the standalone program names the bad index"
else
  failed=$((failed + 1)); echo "FAIL the standalone Gather does not build"; cat "$tmp/out"
fi
# ---- kiln reduce ----
expect 0 "reduce --help" "$kiln" reduce --help
grep -q "usage: kiln reduce CASE_DIR" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL reduce --help does not show usage"; }
expect 2 "reduce without a case" "$kiln" reduce
expect 2 "reduce with an unknown option" "$kiln" reduce "$tmp" --no-such-option
expect 2 "reduce --max-tests 0" "$kiln" reduce "$tmp" --max-tests 0
expect 2 "reduce --time with no value" "$kiln" reduce "$tmp" --time
expect 2 "reduce two cases" "$kiln" reduce "$tmp/a" "$tmp/b"
expect 2 "reduce a folder that holds no case" "$kiln" reduce "$tmp/missing-case"
# a case that does not fail: Relu on f32[2,3] (model.onnx from compile -o, input_0.pb by hand)
cat > "$tmp/relu.kiln" <<'IR'
graph @relu(%x: f32[2,3]) -> (%y: f32[2,3]) {
  opset "" 17
  %y = Relu(%x) : f32[2,3]
  return %y
}
IR
if "$kiln" compile "$tmp/relu.kiln" -o "$tmp/okcase" >"$tmp/out" 2>&1; then
  python3 - "$tmp/okcase/input_0.pb" <<'PY'
import struct, sys
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
raw = struct.pack("<6f", -1.5, 0.5, 2.0, -0.25, 1.0, 3.0)
msg = b"\x08" + varint(2) + b"\x08" + varint(3) + b"\x10" + varint(1)
msg += b"\x42" + varint(1) + b"x" + b"\x4a" + varint(len(raw)) + raw
open(sys.argv[1], "wb").write(msg)
PY
  printf 'signature: cpu|-|Relu\ncommand: kiln verify %s\n' "$tmp/okcase" > "$tmp/okcase/case.txt"
  expect 1 "reduce a case that does not fail" "$kiln" reduce "$tmp/okcase" -q
  grep -q "does not fail" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL reduce does not say the case does not fail"; cat "$tmp/out"; }
  [ ! -e "$tmp/okcase/reduced" ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL reduce wrote a case that does not fail"; }
else
  failed=$((failed + 1)); echo "FAIL compile -o for the reduce case"; cat "$tmp/out"
fi
# ---- end kiln reduce ----
# ---- kiln fuzz ----
expect 0 "fuzz --help" "$kiln" fuzz --help
grep -q "usage: kiln fuzz" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --help does not show usage"; }
expect 0 "fuzz --list-ops" "$kiln" fuzz --list-ops
grep -qx "Conv" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --list-ops lacks Conv"; }
expect 2 "fuzz with an unknown option" "$kiln" fuzz --no-such-option
expect 2 "fuzz --count 0" "$kiln" fuzz --count 0
expect 2 "fuzz --shard 3/3" "$kiln" fuzz --shard 3/3
expect 2 "fuzz --backend gpu" "$kiln" fuzz --backend gpu
expect 2 "fuzz --max-nodes 31" "$kiln" fuzz --max-nodes 31
expect 2 "fuzz --threads 0" "$kiln" fuzz --threads 0
expect 2 "fuzz --cpu-every 0" "$kiln" fuzz --cpu-every 0
expect 2 "fuzz --cpu-novel 256" "$kiln" fuzz --cpu-novel 256
expect 2 "fuzz --sweep -1" "$kiln" fuzz --sweep -1
# the gate: with no graph drawn to compile, the first graphs compile for their new features
expect 0 "fuzz --cpu-novel 1" "$kiln" fuzz --count 3 --seed 5 --max-nodes 4 --cpu-every 1000000 --cpu-novel 1 --sweep 0 --no-grid --out "$tmp/fzn" -q
grep -Eq "\(([1-9][0-9]*) of them for a rare feature\); 0 cells of the edge grid, 0 graphs of the helper sweep" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --cpu-novel 1 compiled no graph for a feature"; cat "$tmp/out"; }
expect 0 "fuzz --cpu-novel 0" "$kiln" fuzz --count 3 --seed 5 --max-nodes 4 --cpu-every 1000000 --cpu-novel 0 --sweep 0 --no-grid --out "$tmp/fzn" -q
grep -q "on 0 graphs (0 of them for a rare feature); 0 cells of the edge grid, 0 graphs of the helper sweep" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --cpu-novel 0 compiled graphs for a feature"; cat "$tmp/out"; }
# the edge grid, then the helper sweep: the first graphs, compiled; neither with --ops
expect 0 "fuzz with the edge grid" "$kiln" fuzz --count 3 --seed 5 --cpu-every 1000000 --out "$tmp/fzn" -q
grep -q "on 3 graphs (0 of them for a rare feature); 3 cells of the edge grid, 0 graphs of the helper sweep" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz did not compile its edge grid"; cat "$tmp/out"; }
expect 0 "fuzz with the helper sweep" "$kiln" fuzz --count 3 --seed 5 --cpu-every 1000000 --no-grid --out "$tmp/fzn" -q
grep -q "on 3 graphs (0 of them for a rare feature); 0 cells of the edge grid, 3 graphs of the helper sweep" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz did not compile its helper sweep"; cat "$tmp/out"; }
# the bandit draws part of its fresh graphs by the table's own weights (fuzz_feedback.c)
expect 0 "fuzz bandit with table draws" "$kiln" fuzz --count 60 --seed 5 --backend none --max-nodes 4 --no-grid --sweep 0 --out "$tmp/fzb" -q
awk '/^feedback: / { n = $2; m = substr($5, 2); exit !(m > 0 && m < n) } END { if (!n) exit 1 }' "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz bandit: fresh graphs not split between the table and the bandit"; cat "$tmp/out"; }
# precision policies: drawn by default, fixed rules on every graph, none with default
expect 2 "fuzz --precision-policy bogus" "$kiln" fuzz --precision-policy elementwise:f32
expect 2 "fuzz --precision-policy narrower accumulator" "$kiln" fuzz --precision-policy reduction:f32=f32/f16
expect 0 "fuzz --precision-policy RULES" "$kiln" fuzz --count 3 --seed 5 --max-nodes 4 --no-grid --sweep 0 --precision-policy elementwise:f32=f64,elementwise:f16=f16 --out "$tmp/fzp" -q
grep -q "^precision policies: 3 graphs" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --precision-policy RULES not on every graph"; cat "$tmp/out"; }
expect 0 "fuzz --precision-policy default" "$kiln" fuzz --count 3 --seed 5 --max-nodes 4 --no-grid --sweep 0 --precision-policy default --out "$tmp/fzp" -q
grep -q "^precision policies: 0 graphs" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --precision-policy default drew a policy"; cat "$tmp/out"; }
expect 0 "fuzz --ops: no grid, no sweep" "$kiln" fuzz --count 2 --seed 5 --ops Relu --cpu-every 1000000 --out "$tmp/fzn" -q
grep -q "0 cells of the edge grid, 0 graphs of the helper sweep" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --ops ran the edge grid or the helper sweep"; cat "$tmp/out"; }
expect 2 "fuzz --ops with an unknown op" "$kiln" fuzz --ops Relu,NoSuchOp --out "$tmp/fz0"
expect_stderr "NoSuchOp" "fuzz names the unknown op"
expect 0 "fuzz --count 3" "$kiln" fuzz --count 3 --seed 5 --max-nodes 6 --out "$tmp/fz" -q
for line in "fuzz: 3 graphs" "cpu layer (compiled C) on" "nodes per op: fewest" "ops covered:" "op pairs covered" "passes fired" "failures: 0" "files written"; do
  grep -q "$line" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL fuzz summary lacks '$line'"; cat "$tmp/out"; }
done
expect 0 "fuzz shard 1/2 of the graph-only layers" "$kiln" fuzz --count 2 --shard 1/2 --backend none --out "$tmp/fz" -q
expect 0 "fuzz --out with missing parent folders" "$kiln" fuzz --count 1 --backend none --out "$tmp/fzp/a/b" -q
[ -d "$tmp/fzp/a/b" ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL fuzz --out did not create its parent folders"; }
touch "$tmp/fzfile"
expect 2 "fuzz --out under a file" "$kiln" fuzz --count 1 --backend none --out "$tmp/fzfile/x" -q
expect_stderr "fzfile" "fuzz names the folder it cannot create"
# ---- end kiln fuzz ----
# ---- kiln verify ----
expect 0 "verify --help" "$kiln" verify --help
grep -q "usage: kiln verify" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL verify --help does not show usage"; }
expect 2 "verify without a model" "$kiln" verify
expect 2 "verify with an unknown option" "$kiln" verify "$tmp/mlp.kiln" --no-such-option
expect 2 "verify on a missing file" "$kiln" verify "$tmp/missing.onnx"
expect 2 "verify on garbage" "$kiln" verify "$tmp/bad.onnx"
expect 2 "verify --backend gpu" "$kiln" verify "$tmp/mlp.kiln" --backend gpu
expect 2 "verify --threads 0" "$kiln" verify "$tmp/mlp.kiln" --threads 0
expect 2 "verify --dim without a value" "$kiln" verify "$tmp/mlp.kiln" --dim batch
# fuzz case files name schedule seeds of the whole 64-bit range
expect 0 "verify --sched-seed above 2^63" "$kiln" verify "$tmp/mlp.kiln" -q --backend none --sched-seed 15751677108457757585
expect 0 "verify --precision-policy" "$kiln" verify "$tmp/mlp.kiln" -q --backend none --precision-policy elementwise:f32=f64,reduction:f32=f32/f32
expect 0 "verify --force-fallback" "$kiln" verify "$tmp/mlp.kiln" -q --force-fallback Relu,MatMul
expect 2 "verify --force-fallback without ops" "$kiln" verify "$tmp/mlp.kiln" --force-fallback ""
expect 2 "verify --precision-policy to an integer" "$kiln" verify "$tmp/mlp.kiln" --precision-policy elementwise:f32=i8
expect_stderr "precision-policy" "verify --precision-policy names the flag"
expect 2 "verify --sched-seed 0" "$kiln" verify "$tmp/mlp.kiln" --sched-seed 0
expect 2 "verify --sched-seed past 2^64" "$kiln" verify "$tmp/mlp.kiln" --sched-seed 18446744073709551616
expect 2 "verify --input of an unknown input" "$kiln" verify "$tmp/mlp.kiln" --input nosuch="$tmp/x.npy"
expect_stderr "nosuch" "verify names the unknown input"
expect 0 "verify a model on drawn inputs" "$kiln" verify "$tmp/mlp.kiln" --seed 3
for line in "^layer  *ran  *max error  *err/bound" "^reference  *yes .* ok" "^pass [0-9]* fusion  *yes .* ok" \
  "^tile  *yes .* ok" "^cpu  *yes .* ok" "^result: every layer agrees"; do
  grep -q "$line" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL verify table lacks '$line'"; cat "$tmp/out"; }
done
expect_stderr "\[verify\] cpu" "verify prints progress on stderr"
expect 0 "verify -q --bisect-only --input" "$kiln" verify "$tmp/mlp.kiln" -q --bisect-only --input x="$tmp/x.npy"
grep -q "^passes ([0-9]* applications)  *yes" "$tmp/out" && [ ! -s "$tmp/err" ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL verify --bisect-only -q output"; cat "$tmp/out" "$tmp/err"; }
expect 0 "verify --backend cuda" "$kiln" verify "$tmp/mlp.kiln" -q --backend cuda --dim batch=3
grep -q "^cuda (tile interpreter)  *yes .* ok" "$tmp/out" && grep -q "^cuda (device)  *no .*skipped" "$tmp/out" &&
  ! grep -q "^cpu " "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL verify --backend cuda rows"; cat "$tmp/out"; }
expect 0 "verify --backend none" "$kiln" verify "$tmp/mlp.kiln" -q --backend none
! grep -q "^cpu " "$tmp/out" && grep -q "^tile " "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL verify --backend none rows"; cat "$tmp/out"; }
# a case folder: model.onnx (from compile -o), input_0.pb written by hand, case.txt
if "$kiln" compile "$tmp/mlp.kiln" --dim batch=2 -o "$tmp/vart" >/dev/null 2>&1; then
  mkdir -p "$tmp/vcase" && cp "$tmp/vart/model.onnx" "$tmp/vcase/model.onnx"
  python3 - "$tmp/vcase/input_0.pb" <<'PY'
import struct, sys
raw = struct.pack("<8f", 0.5, -1, 2, 0.25, -0.75, 1.5, 3, -2)
pb = b"\x08\x02\x08\x04\x10\x01\x42\x01x\x4a" + bytes([len(raw)]) + raw  # dims, FLOAT, name, raw_data
open(sys.argv[1], "wb").write(pb)
PY
  printf 'signature: -\ncommand: kiln verify %s\n' "$tmp/vcase" > "$tmp/vcase/case.txt"
  expect 0 "verify a case folder" "$kiln" verify "$tmp/vcase" -q
  grep -q "^recorded signature: - (same)" "$tmp/out" && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL verify a case folder output"; cat "$tmp/out"; }
  rm "$tmp/vcase/input_0.pb"
  expect 2 "verify a case folder without its input" "$kiln" verify "$tmp/vcase" -q
else
  failed=$((failed + 1)); echo "FAIL compile -o for the verify case"
fi
# ---- end kiln verify ----
# ---- kiln verify: local checks ----
expect 0 "verify checks each kernel locally" "$kiln" verify "$tmp/mlp.kiln" -q --seed 3
grep -q "^layer  *ran .* local " "$tmp/out" && grep -q "^cpu  *yes .* ok ([0-9]* kernels checked locally" "$tmp/out" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL verify local column"; cat "$tmp/out"; }
expect 0 "verify --no-local" "$kiln" verify "$tmp/mlp.kiln" -q --seed 3 --no-local
! grep -q "checked locally" "$tmp/out" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL verify --no-local still checks locally"; cat "$tmp/out"; }
# ---- end kiln verify: local checks ----
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
