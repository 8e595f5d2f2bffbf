# Wrong blame: a user's input that does not fit the model is bad input (exit 2, naming the
# input, before anything runs), never a compiler failure nor a case to reduce; a broken
# environment (no C compiler, a full disk) is a runner error (exit 1 with the reason), never a
# finding nor a case folder. Also: verify on a model folder, outer values read in subgraphs,
# the messages for an unbound symbolic dim and for unstable bounds, test-onnx sets that
# compare nothing, compile --report listing each fallback once.
fx=$tmp/fx
model blame "$fx"

# expect_status "0|1" DESC CMD...: like expect, for a command whose status may be one of a few
# (an unusable cache may only cost time, or fail the run as the environment's error).
expect_status() {
  local want=$1 what=$2; shift 2
  timeout -k 5 "${HOSTILE_TIMEOUT:-120}" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local got=$?
  if [ "$got" -gt 128 ] || [ "$got" -eq 124 ]; then bad "$what: killed or hung ($got)"; return; fi
  if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$tmp/err"; then
    bad "$what: sanitizer report"; return
  fi
  if echo "$got" | grep -qxE "$want"; then ok; else bad "$what: exit $got, expected $want"; tail -3 "$tmp/err"; fi
}
# not_a_finding DESC: the last run named no failing layer and wrote no signature.
not_a_finding() {
  if grep -qE "first failing layer|signature:|new failure" "$tmp/out" "$tmp/err"; then
    bad "$1: reported as a finding"; grep -E "first failing layer|signature:|new failure" "$tmp/out" "$tmp/err" | head -3
  else ok; fi
}

# ---- verify: the user's inputs are checked before anything runs ----
expect 0 "verify, right input" $kiln verify "$fx/m.onnx" --input x="$fx/good.npy" -q
expect_out "every layer agrees" "verify, right input"
for f in shape:'f32\[3,2\]' dtype:'f64\[2,3\]' int:'i32\[2,3\]' rank:'f32\[6\]' scalar:'f32\[\]' \
         empty:'f32\[0,3\]' more:'f32\[2,3,1\]'; do
  name=${f%%:*} shown=${f#*:}
  expect 2 "verify --input of wrong $name" $kiln verify "$fx/m.onnx" --input x="$fx/$name.npy" --repro "$tmp/repro_$name"
  expect_err "input 'x' is $shown, the model takes f32\[2,3\]" "verify, wrong $name: names the input"
  expect_err "$name.npy" "verify, wrong $name: names the file"
  not_a_finding "verify, wrong $name"
  if grep -q "^\[verify\]" "$tmp/err"; then bad "verify, wrong $name: a layer ran"; else ok; fi
  expect_no_file "$tmp/repro_$name" "verify, wrong $name: no case written"
done
expect 2 "verify, missing input file" $kiln verify "$fx/m.onnx" --input x="$fx/nonexistent.npy"
expect_err "nonexistent.npy" "verify, missing input file named"
expect 2 "verify, corrupt input file" $kiln verify "$fx/m.onnx" --input x="$fx/corrupt.npy"
expect_err "input 'x'" "verify, corrupt input file: names the input"
expect 2 "verify, a folder as the input file" $kiln verify "$fx/m.onnx" --input x="$fx/cases"
expect 2 "verify, input of another name" $kiln verify "$fx/m.onnx" --input X="$fx/good.npy"
expect_err "no input of that name" "verify, input of another name"
expect 0 "verify, one symbol one extent" $kiln verify "$fx/m2.onnx" --input y="$fx/y23.npy" --input z="$fx/z2.npy" -q
expect 2 "verify, a symbol with two extents" $kiln verify "$fx/m2.onnx" --input y="$fx/y23.npy" --input z="$fx/z3.npy"
expect_err "input 'z' has N = 3 .* input 'y' has N = 2" "verify, two extents named"
not_a_finding "verify, two extents"
# kiln run makes the same check (one check in the runtime)
expect 2 "run, wrong shape" $kiln run "$fx/m.onnx" --input x="$fx/shape.npy"
expect_err "input 'x' is f32\[3,2\], the model takes f32\[2,3\]" "run, wrong shape named"
expect 2 "run, a symbol with two extents" $kiln run "$fx/m2.onnx" --input y="$fx/y23.npy" --input z="$fx/z3.npy"
expect_err "input 'z' has N = 3 .* input 'y' has N = 2" "run, two extents: the inputs, not a node"
# an input drawn next to a given one takes the given extent of their symbol
expect 0 "verify, one input given, one drawn" $kiln verify "$fx/m2.onnx" --input y="$fx/y53.npy" -q
expect_out "every layer agrees" "verify, the drawn input follows the given extent"
expect 0 "verify, the other input given" $kiln verify "$fx/m2.onnx" --input z="$fx/z3.npy" -q
expect 2 "verify, --dim against a given input" $kiln verify "$fx/m2.onnx" --input y="$fx/y53.npy" --dim N=3 -q
expect_err "input 'y' has N = 5 .*--dim N=3" "verify, --dim against a given input named"

# ---- case folders (verify, reduce) with inputs that do not fit ----
expect 0 "verify, right case" $kiln verify "$fx/cases/ok" -q
for c in shape dtype rank extra missing corrupt empty; do
  expect 2 "verify, case with $c input" $kiln verify "$fx/cases/$c" -q
  expect_err "input" "verify, case with $c input: names it"
  not_a_finding "verify, case with $c input"
  expect 2 "reduce, case with $c input" $kiln reduce "$fx/cases/$c" -q --out "$tmp/reduced_$c"
  expect_no_file "$tmp/reduced_$c" "reduce, case with $c input: nothing reduced"
  if grep -q "^reduced:" "$tmp/out"; then bad "reduce, case with $c input: reduced"; else ok; fi
done
for c in hostile_case0 hostile_case1; do
  expect 2 "verify, $c with a wrong input" $kiln verify "$fx/$c" -q
  expect_err "is f32\[4,2\], the model takes f32\[2,4\]" "verify, $c: the shapes"
  expect 2 "reduce, $c with a wrong input" $kiln reduce "$fx/$c" -q --out "$tmp/reduced_$c"
  expect_no_file "$tmp/reduced_$c" "reduce, $c: nothing reduced"
done
expect 2 "verify, case input one too many" $kiln verify "$fx/cases/extra" -q
expect_err "input_1.pb is one input too many" "verify, extra case input"

# ---- model folders (ONNX's test layout), as every other command takes them ----
expect 0 "verify, model folder" $kiln verify "$fx/folder" -q
expect_out "every layer agrees" "verify, model folder"
expect 0 "verify, model folder without data" $kiln verify "$fx/folder_nodata" -q
expect 2 "verify, model folder with a wrong input" $kiln verify "$fx/folder_badset" -q
expect_err "input_0.pb: input 'x' is f32\[3,2\]" "verify, model folder with a wrong input"
expect 2 "verify, folder without a model" $kiln verify "$fx/folder_nomodel" -q
expect_err "without model.onnx" "verify, folder without a model"

# ---- the environment: no C compiler ----
expect 1 "verify, no C compiler" env CC=/nonexistent/cc $kiln verify "$fx/m.onnx" -q --repro "$tmp/repro_cc"
expect_err "environment failed.*(no usable C compiler|not found)" "verify, no C compiler: the reason"
not_a_finding "verify, no C compiler"
expect_no_file "$tmp/repro_cc" "verify, no C compiler: no case"
expect 1 "verify, cc not on PATH" env -u CC PATH=/nonexistent $kiln verify "$fx/m.onnx" -q
expect_err "environment failed" "verify, cc not on PATH"
expect 1 "verify, a compiler that fails --version" env CC=false $kiln verify "$fx/m.onnx" -q
expect_err "no usable C compiler" "verify, CC=false"
cp -r "$fx/cases/ok" "$tmp/cpu_case"
printf 'signature: cpu|-|Add,Relu\ncommand: kiln verify DIR\n' >"$tmp/cpu_case/case.txt"
expect 1 "reduce, no C compiler" env CC=/nonexistent/cc $kiln reduce "$tmp/cpu_case" -q --out "$tmp/cpu_reduced"
expect_err "environment failed" "reduce, no C compiler: the reason, not 'does not fail'"
expect_no_file "$tmp/cpu_reduced" "reduce, no C compiler: nothing written"
expect 0 "verify --backend none needs no compiler" env CC=/nonexistent/cc $kiln verify "$fx/m.onnx" -q --backend none
expect 1 "fuzz, no C compiler" env CC=/nonexistent/cc $kiln fuzz --count 8 --cpu-every 1 --max-nodes 3 -q --out "$tmp/fuzz_cc"
expect_err "environment failed on every graph" "fuzz, no C compiler: stops with the reason"
expect_out "runner errors \([1-9][0-9]* from the environment\)" "fuzz, no C compiler: counted as runner errors"
expect_out "failures: 0 signatures" "fuzz, no C compiler: no finding"
if find "$tmp/fuzz_cc" -name model.onnx 2>/dev/null | grep -q .; then bad "fuzz, no C compiler: case folder written"; else ok; fi
expect 1 "fuzz, no C compiler, default cpu-every" env CC=/nonexistent/cc $kiln fuzz --count 4 --max-nodes 3 -q --out "$tmp/fuzz_cc2"
expect_err "environment failed on every graph" "fuzz, no compiler on the few graphs that compile"
expect 0 "fuzz --backend none needs no compiler" env CC=/nonexistent/cc $kiln fuzz --count 3 --max-nodes 3 -q --backend none --out "$tmp/fuzz_none"

# ---- the environment: a full disk (the kernel cache, --out) ----
full=$tmp/full
mkdir -p "$full"
if mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
  dd if=/dev/zero of="$full/fill" bs=4k 2>/dev/null
  expect_status "0|1" "verify, full kernel cache" env KILN_CACHE_DIR="$full/cache" $kiln verify "$fx/m.onnx" -q
  not_a_finding "verify, full kernel cache"
  if [ -s "$tmp/err" ] && ! grep -qE "environment failed|kernel cache .* is not usable" "$tmp/err"; then bad "verify, full cache: error without the reason"; else ok; fi
  expect_status "0|1" "fuzz, --out on a full disk" $kiln fuzz --count 4 --cpu-every 1 --max-nodes 3 -q --out "$full/fuzz"
  not_a_finding "fuzz, --out on a full disk"
  if find "$full/fuzz" -name model.onnx 2>/dev/null | grep -q .; then bad "fuzz, full disk: case folder"; else ok; fi
  umount "$full"
else
  echo "SKIP full-disk checks: cannot mount a tmpfs (needs root)"
fi

# ---- the reference: outer values read in subgraphs ----
expect 0 "verify, If reading an outer value" $kiln verify "$fx/sub_if.onnx" --input c="$fx/true.npy" -q
expect_out "every layer agrees" "verify, If (then)"
expect 0 "verify, If else branch" $kiln verify "$fx/sub_if.onnx" --input c="$fx/false.npy" -q
expect 0 "verify, Loop reading an outer value" $kiln verify "$fx/sub_loop.onnx" -q
expect_out "every layer agrees" "verify, Loop"
expect 0 "verify, Scan reading an outer value" $kiln verify "$fx/sub_scan.onnx" -q
expect_out "every layer agrees" "verify, Scan"

# ---- messages ----
expect 0 "verify, finite values with a bound at the f32 range" $kiln verify "$fx/bigsq.onnx" --input x="$fx/big.npy" --backend none -q
expect_out "are finite, but their error bound reaches the range" "verify, unstable bounds said so"
if grep -q "NaN/Inf element" "$tmp/out"; then bad "verify, finite values called NaN/Inf"; else ok; fi
expect 2 "compile, unbound symbolic dim" $kiln compile "$fx/sym.onnx"
expect_err "--dim seq=N" "compile, unbound dim names --dim"
if grep -q kiln_graph_bind_inputs "$tmp/err"; then bad "compile, unbound dim names the C API"; else ok; fi
expect 2 "compile --target cuda, unbound symbolic dim" $kiln compile "$fx/sym.onnx" --target cuda
expect_err "--dim seq=N" "compile --target cuda, unbound dim names --dim"
expect 0 "compile, dim bound" $kiln compile "$fx/sym.onnx" --dim seq=3
expect 0 "compile --report with a fallback" $kiln compile "$fx/m.onnx" --report --force-fallback Relu
n=$(cat "$tmp/out" "$tmp/err" | grep -c "node 'relu'")
if [ "$n" -eq 1 ]; then ok; else bad "compile --report lists the fallback $n times"; fi
expect 0 "compile without --report still lists a fallback" $kiln compile "$fx/m.onnx" --force-fallback Relu
expect_err "fallback node 'relu'" "compile, fallback on stderr"

# ---- test-onnx: a set must compare something ----
expect 0 "test-onnx, a right case" $kiln test-onnx "$fx/tno_good"
expect 1 "test-onnx, a set without expected outputs" $kiln test-onnx "$fx/tno_noout"
expect_out "nothing to compare" "test-onnx, no outputs: says so"
expect_out "0 passed" "test-onnx, no outputs: not passed"
expect 1 "test-onnx, more output files than outputs" $kiln test-onnx "$fx/tno_extra"
expect_out "more output files" "test-onnx, extra outputs"

# a misspelt --dim is bad input before anything runs, as in compile, bench and run
cat > "$tmp/sym.kiln" <<'IR'
graph @m(%x: f32[seq,2]) -> (%y: f32[seq,2]) {
  opset "" 17
  %y = Relu(%x) : f32[seq,2]
  return %y
}
IR
expect 2 "verify --dim with a misspelt symbol" $kiln verify "$tmp/sym.kiln" --dim sqe=3 -q
expect_err "--dim sqe: the model has no symbolic dim.*'seq'" "verify names the misspelt dim and the known ones"
expect 0 "verify --dim with the right symbol" $kiln verify "$tmp/sym.kiln" --dim seq=3 -q

# Cast of floats to text: the reference formats the value in the input's dtype, as the model
# does (it formatted the double and blamed every layer of every such model)
"$PYTHON" - "$tmp" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
for name, nodes in (("cs_in", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING)]),
                    ("cs_sin", [helper.make_node("Sin", ["x"], ["s"]),
                                helper.make_node("Cast", ["s"], ["y"], to=TensorProto.STRING)])):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.STRING, [4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]),
              "%s/%s.onnx" % (sys.argv[1], name))
PY
for c in cs_in cs_sin; do
  expect 0 "verify: Cast f32 -> string ($c) is no finding" $kiln verify "$tmp/$c.onnx" -q
done
