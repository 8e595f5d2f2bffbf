# Variants of the name and file classes beyond case_names.sh and case_files.sh:
# - case folders (`kiln verify --repro`, `kiln reduce --out`) are written whole and never into
#   the folder of the model being verified, the case being reduced or a folder of other files;
# - names that reach the terminal (a test-onnx case name, an output name in `kiln run`'s
#   listing, a fallback node in `kiln bench`/`compile --report`, a domain in an error) neither
#   send an escape sequence, a C1 control or a bidirectional override, nor forge a line.
CC=${CC:-cc}
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac
unary_fixture Exp "$tmp/exp.kiln"
# A C compiler whose exp is wrong: the cpu layer of `kiln verify` fails, so a case is written.
printf '#include <math.h>\n#define expf(x) ((x) * 0.5f)\n#define exp(x) ((x) * 0.5)\n' >"$tmp/bad.h"
badcc() { CC="$CC -include $tmp/bad.h" KILN_CACHE_DIR="$tmp/cache_bad" "$@"; } # bash exports them to "$@"
no_tmp_left() { # DIR DESC
  if find "$1" -maxdepth 1 -name '*kiln-tmp*' | grep -q .; then bad "$2: temporaries left"; else ok; fi
}

# ---- verify --repro / reduce --out ----
expect 0 "an ONNX model with metadata" "$kiln" compile "$tmp/exp.kiln" -o "$tmp/a"
mkdir -p "$tmp/md"
"$PYTHON" - "$tmp/md/model.onnx" <<'PY'
import sys, onnx
from onnx import helper as h, TensorProto as T
g = h.make_graph([h.make_node("Exp", ["x"], ["y"])], "e", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                 [h.make_tensor_value_info("y", T.FLOAT, [2, 4])], doc_string="the author's notes")
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], producer_name="me", doc_string="precious")
h.set_model_props(m, {"license": "mine"})
onnx.save(m, sys.argv[1])
PY
cp "$tmp/md/model.onnx" "$tmp/md.ref"
badcc expect 1 "verify with a broken exp fails (a finding)" "$kiln" verify "$tmp/md/model.onnx" -q
for r in "$tmp/md" "$tmp/md/" "$tmp/md/." "$tmp/md/../md"; do
  badcc expect 2 "verify md/model.onnx --repro '$r'" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$r"
  expect_err "holds the input|replace the input model" "--repro '$r': the refusal says why"
  expect_same "$tmp/md/model.onnx" "$tmp/md.ref" "--repro '$r' leaves the model alone"
done
badcc expect 2 "verify a model folder --repro itself" "$kiln" verify "$tmp/md" -q --repro "$tmp/md"
ln -s "$tmp/md" "$tmp/mdlink"
badcc expect 2 "verify --repro a symlink to the model's folder" "$kiln" verify "$tmp/md/model.onnx" -q \
  --repro "$tmp/mdlink"
mkdir -p "$tmp/other" && ln "$tmp/md/model.onnx" "$tmp/other/model.onnx"
badcc expect 2 "verify --repro a folder holding a hard link to the model" "$kiln" verify \
  "$tmp/md/model.onnx" -q --repro "$tmp/other"
expect_same "$tmp/md/model.onnx" "$tmp/md.ref" "the model is intact"
[ "$(ls -A "$tmp/md")" = "model.onnx" ] && ok || bad "--repro wrote into the model's folder: $(ls -A "$tmp/md")"
# a folder of the user's own files: refused before anything runs, nothing written or removed
mkdir -p "$tmp/mine" && echo keep >"$tmp/mine/notes.txt" && echo old >"$tmp/mine/case.txt"
badcc expect 2 "verify --repro a folder of other files" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/mine"
expect_err "not a case folder" "says the folder holds other files"
[ "$(cat "$tmp/mine/case.txt")" = old ] && [ "$(ls -A "$tmp/mine" | wc -l)" -eq 2 ] && ok ||
  bad "--repro changed a folder of other files: $(ls -A "$tmp/mine")"
echo data >"$tmp/afile"
badcc expect 2 "verify --repro a file" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/afile"
# a new folder: the case is written whole; a second run replaces it whole
badcc expect 1 "verify --repro a new folder" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/c1"
expect_file "$tmp/c1/case.txt" "the case is written"
touch "$tmp/c1/input_7.pb"
badcc expect 1 "verify --repro an earlier case folder" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/c1"
expect_no_file "$tmp/c1/input_7.pb" "the earlier case was replaced whole"
expect_file "$tmp/c1/model.onnx" "the new case is complete"
no_tmp_left "$tmp" "verify --repro"
mkdir -p "$tmp/empty"
badcc expect 1 "verify --repro an empty folder" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/empty"
expect_file "$tmp/empty/case.txt" "the case is written into the empty folder"
# a case as input: neither verify --repro nor reduce --out write over it
cp -r "$tmp/c1" "$tmp/c1.ref"
badcc expect 2 "verify a case --repro itself" "$kiln" verify "$tmp/c1" -q --repro "$tmp/c1"
badcc expect 2 "reduce a case --out itself" "$kiln" reduce "$tmp/c1" -q --out "$tmp/c1"
expect_err "input folder itself" "reduce says why"
badcc expect 2 "reduce a case --out a folder of other files" "$kiln" reduce "$tmp/c1" -q --out "$tmp/mine"
badcc expect 2 "reduce a case --out its parent" "$kiln" reduce "$tmp/c1" -q --out "$tmp"
diff -r "$tmp/c1" "$tmp/c1.ref" >/dev/null && ok || bad "the input case was changed"
badcc expect 0 "reduce a case --out a new folder" "$kiln" reduce "$tmp/c1" -q --max-tests 5 --out "$tmp/r1"
expect_file "$tmp/r1/case.txt" "the reduced case is written"
expect_file "$tmp/mine/notes.txt" "the user's file is kept"

# ---- text from a model on the terminal ----
# raw C1 controls (U+0080-U+009F) and bidirectional overrides/isolates in UTF-8
raw_hidden() {
  "$PYTHON" - "$@" <<'PY'
import re, sys
bad = re.compile(rb"\x1b|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")
sys.exit(0 if any(bad.search(open(f, "rb").read()) for f in sys.argv[1:]) else 1)
PY
}
clean_terminal() { # DESC: neither $tmp/out nor $tmp/err holds an escape, C1 or bidi byte sequence
  if raw_hidden "$tmp/out" "$tmp/err"; then bad "$1: raw escape/C1/bidi reaches the terminal"
  else ok; fi
  if grep -qE '^(FORGED|__attribute__)' "$tmp/out" "$tmp/err"; then bad "$1: a name forged a line"
  else ok; fi
}
mkdir -p "$tmp/to"
"$PYTHON" - "$tmp" <<'PY'
import os, sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
ESC = "e\x1b]0;pwn\x07\x1b[31m\u009b31m\u202e\u2066"
NL = "n\nFORGED line\n__attribute__((constructor))"
# test-onnx cases whose folder names are hostile (one passes, one fails)
for n, want in [("test_" + ESC, 1), ("test_nl\nFORGED  test_fake (1 ms)", 0)]:
    c = os.path.join(d, "to", n)
    os.makedirs(c + "/test_data_set_0")
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [h.make_tensor_value_info("x", T.FLOAT, [2])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2])])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), c + "/model.onnx")
    with open(c + "/test_data_set_0/input_0.pb", "wb") as f:
        f.write(nh.from_array(np.array([1, -1], np.float32), "x").SerializeToString())
    with open(c + "/test_data_set_0/output_0.pb", "wb") as f:
        f.write(nh.from_array(np.array([1, want], np.float32), "y").SerializeToString())
# outputs and fallback nodes (If, Loop) with hostile names, inside subgraphs too
tb = h.make_graph([h.make_node("Relu", ["x"], [NL + "t"], name=ESC)], "then" + NL, [],
                  [h.make_tensor_value_info(NL + "t", T.FLOAT, [2, 4])])
eb = h.make_graph([h.make_node("Neg", ["x"], [ESC + "e"], name=NL)], "else" + ESC, [],
                  [h.make_tensor_value_info(ESC + "e", T.FLOAT, [2, 4])])
nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
         h.make_node("If", ["c"], [ESC], then_branch=tb, else_branch=eb, name=NL + ESC),
         h.make_node("Exp", [ESC], [NL])]
g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                 [h.make_tensor_value_info(ESC, T.FLOAT, [2, 4]), h.make_tensor_value_info(NL, T.FLOAT, [2, 4])],
                 [nh.from_array(np.array(0, np.float32), "zero")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), d + "/sub.onnx")
np.save(d + "/x.npy", np.arange(8, dtype=np.float32).reshape(2, 4) - 3)
np.save(d + "/want.npy", np.zeros((2, 4), np.float32))
# an unsupported domain named by the model: the error message
g = h.make_graph([h.make_node("Relu", ["x"], ["y"], domain=NL + ESC)], "g",
                 [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, [2])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(NL + ESC, 1)]), d + "/dom.onnx")
PY
expect 1 "test-onnx on hostile case names" "$kiln" test-onnx "$tmp/to"
clean_terminal "test-onnx"
expect_out "1 passed, 1 failed" "test-onnx still counts the cases"
expect 0 "run: hostile output names" "$kiln" run "$tmp/sub.onnx" --input x="$tmp/x.npy" --report
clean_terminal "run --report"
expect 1 "run --expect: hostile output names" bash -c \
  'exec "$1" run "$2" --input x="$3" --expect "$(printf "e\033]0;pwn\a\033[31m\302\23331m\342\200\256\342\201\246")=$4"' \
  _ "$kiln" "$tmp/sub.onnx" "$tmp/x.npy" "$tmp/want.npy"
expect_out "MISMATCH" "the check is printed"
clean_terminal "run --expect"
expect 0 "bench: hostile fallback nodes" "$kiln" bench "$tmp/sub.onnx" --iters 1 --warmup 0
clean_terminal "bench"
expect 0 "compile --report: hostile fallback nodes" "$kiln" compile "$tmp/sub.onnx" --report
clean_terminal "compile --report"
expect 0 "compile: hostile fallback nodes on stderr" "$kiln" compile "$tmp/sub.onnx"
clean_terminal "compile"
expect 0 "verify: hostile names" "$kiln" verify "$tmp/sub.onnx"
clean_terminal "verify"
for c in info print run compile verify; do
  expect 2 "$c: an unsupported domain named by the model" "$kiln" $c "$tmp/dom.onnx"
  expect_err "domain" "$c names the domain"
  clean_terminal "$c: the domain in the error message"
done
badcc expect 1 "verify with a broken exp: the failure names hostile outputs" "$kiln" verify "$tmp/sub.onnx" \
  --repro "$tmp/c2"
clean_terminal "verify failure report"

# ---- a NUL byte in a name: refused, never cut (a name valid only once cut at the NUL) ----
mkdir -p "$tmp/nul"
"$PYTHON" - "$tmp/nul" <<'PY'
import sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
d = sys.argv[1]
def save(name, nodes, ins=None, outs=None, inits=(), gname="g", opsets=None):
    ins = ins or [h.make_tensor_value_info("x", T.FLOAT, [2, 4])]
    outs = outs or [h.make_tensor_value_info("y", T.FLOAT, [2, 4])]
    g = h.make_graph(nodes, gname, ins, outs, list(inits))
    m = h.make_model(g, opset_imports=opsets or [h.make_opsetid("", 17)])
    open("%s/%s.onnx" % (d, name), "wb").write(m.SerializeToString())
save("ref", [h.make_node("Relu", ["x\0undefined"], ["y"])])               # reads 'x' once cut
save("twins", [h.make_node("Relu", ["x"], ["y\0a"]), h.make_node("Neg", ["x"], ["y\0b"])],
     outs=[h.make_tensor_value_info("y\0a", T.FLOAT, [2, 4]), h.make_tensor_value_info("y\0b", T.FLOAT, [2, 4])])
save("optype", [h.make_node("Relu\0Evil", ["x"], ["y"])])
save("node", [h.make_node("Relu", ["x"], ["y"], name="n\0m")])
save("graph", [h.make_node("Relu", ["x"], ["y"])], gname="g\0h")
save("input", [h.make_node("Relu", ["x\0i"], ["y"])], ins=[h.make_tensor_value_info("x\0i", T.FLOAT, [2, 4])])
save("init", [h.make_node("Add", ["x", "w\0v"], ["y"])], inits=[nh.from_array(np.ones((2, 4), np.float32), "w\0v")])
save("dim", [h.make_node("Relu", ["x"], ["y"])], ins=[h.make_tensor_value_info("x", T.FLOAT, ["N\0M", 4])],
     outs=[h.make_tensor_value_info("y", T.FLOAT, ["N\0M", 4])])
n = h.make_node("Relu", ["x"], ["y"]); n.attribute.extend([h.make_attribute("alpha\0beta", 1.0)])
save("attr", [n])
save("domain", [h.make_node("Relu", ["x"], ["y"], domain="\0")], opsets=[h.make_opsetid("", 17), h.make_opsetid("\0", 1)])
PY
for f in "$tmp"/nul/*.onnx; do
  k=$(basename "$f" .onnx)
  expect 2 "info: a NUL byte in a name ($k)" "$kiln" info "$f"
  expect_err "NUL byte" "$k: the message says why"
  expect 2 "run: a NUL byte in a name ($k)" "$kiln" run "$f" --input x="$tmp/x.npy"
done

# ---- kiln run --output-dir never replaces a file the run reads ----
cat >"$tmp/mlp.kiln" <<'IR'
graph @mlp(%x: f32[2,4]) -> (%y: f32[2,3]) {
  opset "" 17
  %w = const f32[3,4] [0.5, -1, 0.25, 2, 1, 1, -0.5, 0, 0.125, 3, -2, 1]
  %y = Gemm(%x, %w) {transB=1} : f32[2,3]
  return %y
}
IR
mkdir -p "$tmp/rd"
"$PYTHON" -c "import numpy as np, sys; np.save(sys.argv[1], np.ones((2, 3), np.float32))" "$tmp/rd/y.npy"
cp "$tmp/x.npy" "$tmp/rd/x.npy" && cp "$tmp/rd/y.npy" "$tmp/rd/y.ref" && cp "$tmp/x.npy" "$tmp/rd/in.ref"
expect 2 "run --expect y=D/y.npy --output-dir D" "$kiln" run "$tmp/mlp.kiln" --input x="$tmp/rd/x.npy" \
  --expect y="$tmp/rd/y.npy" --output-dir "$tmp/rd"
expect_err "the --expect file of 'y'" "says the output would replace the --expect file"
expect_same "$tmp/rd/y.npy" "$tmp/rd/y.ref" "the expected output is kept"
ln -s "$tmp/rd/y.npy" "$tmp/ylink.npy"
expect 2 "run --expect a link to D/y.npy --output-dir D" "$kiln" run "$tmp/mlp.kiln" \
  --input x="$tmp/rd/x.npy" --expect y="$tmp/ylink.npy" --output-dir "$tmp/rd"
cp "$tmp/x.npy" "$tmp/rd/y2.npy" && mv "$tmp/rd/y2.npy" "$tmp/rd/y.npy"
expect 2 "run --input x=D/y.npy --output-dir D (an output named y)" "$kiln" run "$tmp/mlp.kiln" \
  --input x="$tmp/rd/y.npy" --output-dir "$tmp/rd"
expect_err "the --input file of 'x'" "says the output would replace the --input file"
expect_same "$tmp/rd/y.npy" "$tmp/rd/in.ref" "the input file is kept"
expect 0 "run --output-dir D with other files in D" "$kiln" run "$tmp/mlp.kiln" --input x="$tmp/rd/x.npy" \
  --output-dir "$tmp/rd/out"
expect_file "$tmp/rd/out/y.npy" "the output is written"

# ---- the standalone program never replaces a file it reads; it builds warning-free ----
expect 0 "compile --emit-c" "$kiln" compile "$tmp/mlp.kiln" --emit-c "$tmp/sa"
if (cd "$tmp/sa" && $CC -std=c11 -Wall -Wextra -Werror main.c model.c -lm -o prog) >"$tmp/out" 2>&1; then
  ok
  mkdir -p "$tmp/so" && cp "$tmp/x.npy" "$tmp/so/y.npy" && cp "$tmp/x.npy" "$tmp/so.ref"
  expect 2 "standalone -o D with its input file D/y.npy (an output named y)" "$tmp/sa/prog" \
    -w "$tmp/sa/model.bin" -o "$tmp/so" "$tmp/so/y.npy"
  expect_err "would replace" "the standalone says why"
  expect_same "$tmp/so/y.npy" "$tmp/so.ref" "the standalone kept its input file"
  ln -s "$tmp/so/y.npy" "$tmp/in_link.npy"
  expect 2 "standalone -o D with a link to D/y.npy as input" "$tmp/sa/prog" -w "$tmp/sa/model.bin" \
    -o "$tmp/so" "$tmp/in_link.npy"
  cp "$tmp/sa/model.bin" "$tmp/so/y.npy"
  expect 2 "standalone -o D with its weights at D/y.npy" "$tmp/sa/prog" -w "$tmp/so/y.npy" \
    -o "$tmp/so" "$tmp/x.npy"
  expect_same "$tmp/so/y.npy" "$tmp/sa/model.bin" "the standalone kept its weights file"
  mkdir -p "$tmp/so/o"
  expect 0 "standalone -o another folder" "$tmp/sa/prog" -w "$tmp/sa/model.bin" -o "$tmp/so/o" "$tmp/so.ref"
else
  bad "the standalone C does not build with -Wall -Wextra -Werror"; head -20 "$tmp/out"
fi
for kind in names names-more; do
  model "$kind" "$tmp/$kind.onnx" --seed 5 || { bad "models.py $kind failed"; continue; }
  expect 0 "$kind: compile --emit-c" "$kiln" compile "$tmp/$kind.onnx" --emit-c "$tmp/sa_$kind"
  (cd "$tmp/sa_$kind" && $CC -std=c11 -Wall -Wextra -Werror main.c model.c -lm -o prog) \
    >"$tmp/out" 2>&1 && ok || { bad "$kind: the standalone C has warnings"; head -10 "$tmp/out"; }
done

# ---- test-onnx --json never replaces a file the run reads (--json is a flag in info/bench) ----
mkdir -p "$tmp/tj" && cp -r "$tmp/to/test_"*"FORGED"* "$tmp/tj/case1" && cp "$tmp/tj/case1/model.onnx" "$tmp/tj.ref"
expect 2 "test-onnx CASE --json CASE/model.onnx" "$kiln" test-onnx "$tmp/tj/case1" --json "$tmp/tj/case1/model.onnx"
expect_err "inside the test case folder" "says why"
expect_same "$tmp/tj/case1/model.onnx" "$tmp/tj.ref" "the case's model is kept"
cp "$tmp/tj/case1/test_data_set_0/output_0.pb" "$tmp/tj.out.ref"
expect 2 "test-onnx DIR --json DIR/CASE/test_data_set_0/output_0.pb" "$kiln" test-onnx "$tmp/tj" \
  --json "$tmp/tj/case1/test_data_set_0/output_0.pb"
expect_same "$tmp/tj/case1/test_data_set_0/output_0.pb" "$tmp/tj.out.ref" "the expected output is kept"
echo "case1 fail reason" >"$tmp/tj.expect" && cp "$tmp/tj.expect" "$tmp/tj.expect.ref"
expect 2 "test-onnx --expect L --json L" "$kiln" test-onnx "$tmp/tj/case1" --expect "$tmp/tj.expect" --json "$tmp/tj.expect"
expect_same "$tmp/tj.expect" "$tmp/tj.expect.ref" "the --expect list is kept"
expect 0 "test-onnx DIR --json DIR/results.json (outside every case)" "$kiln" test-onnx "$tmp/tj" --json "$tmp/tj/results.json"
expect_file "$tmp/tj/results.json" "the results are written"

# ---- JSON on the terminal: valid, and no raw C1 control or bidi override ----
for c in "info --json" "bench --json --iters 1 --warmup 0"; do
  expect 0 "$c: hostile names" "$kiln" $c "$tmp/sub.onnx"
  clean_terminal "$c"
  "$PYTHON" -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/out" && ok || bad "$c: not valid JSON"
done
expect 0 "run --trace: hostile node names" "$kiln" run "$tmp/sub.onnx" --input x="$tmp/x.npy" --trace
expect_err "\[interp\]" "the trace is printed"
clean_terminal "run --trace"

# ---- an output .npy cannot hold: refused before the run, not after the others were written ----
"$PYTHON" - "$tmp/str.onnx" <<'PY'
import sys, onnx
from onnx import helper as h, TensorProto as T
g = h.make_graph([h.make_node("Relu", ["x"], ["y"]), h.make_node("Cast", ["x"], ["s"], to=T.STRING)], "g",
                 [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                 [h.make_tensor_value_info("y", T.FLOAT, [2, 4]), h.make_tensor_value_info("s", T.STRING, [2, 4])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
PY
expect 2 "run --output-dir: a string output as .npy" "$kiln" run "$tmp/str.onnx" --input x="$tmp/x.npy" --output-dir "$tmp/stro"
expect_err "use --format pb" "says which format holds it"
if grep -q '^ran ' "$tmp/out"; then bad "a string output as .npy: the model ran first"; else ok; fi
expect_no_file "$tmp/stro" "no output is written"
expect 0 "run --output-dir --format pb: a string output" "$kiln" run "$tmp/str.onnx" --input x="$tmp/x.npy" \
  --output-dir "$tmp/stro" --format pb
expect_file "$tmp/stro/s.pb" "the string output is written as .pb"

# ---- a case with its reduced case: replaced whole again, never while one of them is the input ----
badcc expect 1 "verify --repro a new case" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/c3"
badcc expect 0 "reduce it (CASE/reduced)" "$kiln" reduce "$tmp/c3" -q --max-tests 3
expect_file "$tmp/c3/reduced/case.txt" "the reduced case is written"
badcc expect 1 "verify --repro a case holding its reduced case" "$kiln" verify "$tmp/md/model.onnx" -q --repro "$tmp/c3"
badcc expect 0 "reduce it again" "$kiln" reduce "$tmp/c3" -q --max-tests 3
badcc expect 2 "verify CASE/reduced --repro CASE" "$kiln" verify "$tmp/c3/reduced" -q --repro "$tmp/c3"
expect_err "holds the input" "says why"
expect_file "$tmp/c3/reduced/model.onnx" "the input case is kept"

# ---- --emit-cuda into an earlier folder: no model.ptx of an earlier build is left behind ----
expect 0 "--emit-cuda" "$kiln" compile "$tmp/mlp.kiln" --emit-cuda "$tmp/cu"
want=0
[ -f "$tmp/cu/model.ptx" ] && want=1 # NVRTC is here: compute_1 makes it fail (exit 1)
printf 'stale PTX of another model\n' >"$tmp/cu/model.ptx"
expect $want "--emit-cuda again, no PTX this time" "$kiln" compile "$tmp/mlp.kiln" --emit-cuda "$tmp/cu" \
  --cuda-arch compute_1
expect_no_file "$tmp/cu/model.ptx" "the earlier model.ptx is removed"
expect_file "$tmp/cu/model.cu" "the CUDA C is written"

# ---- compile -o replaces only an artifact, not a folder that merely has its entries' names ----
mkdir -p "$tmp/proj/src" && echo "int main(void) { return 0; }" >"$tmp/proj/src/main.c" && echo notes >"$tmp/proj/report.txt"
expect 2 "compile -o a folder holding src/ of the user's code" "$kiln" compile "$tmp/mlp.kiln" -o "$tmp/proj"
expect_file "$tmp/proj/src/main.c" "the user's src/ is kept"
rm -rf "$tmp/proj/src"
expect 2 "compile -o a folder holding only a report.txt" "$kiln" compile "$tmp/mlp.kiln" -o "$tmp/proj"
expect_err "not a Kiln artifact" "says why"
expect_file "$tmp/proj/report.txt" "the user's report.txt is kept"
expect 0 "compile -o a new artifact" "$kiln" compile "$tmp/mlp.kiln" -o "$tmp/art2"
echo "my file" >"$tmp/art2/src/notes.txt"
expect 2 "compile -o an artifact whose src/ holds a file of the user" "$kiln" compile "$tmp/mlp.kiln" -o "$tmp/art2"
expect_file "$tmp/art2/src/notes.txt" "the user's file in src/ is kept"
rm "$tmp/art2/src/notes.txt"
expect 0 "compile -o over an earlier artifact" "$kiln" compile "$tmp/mlp.kiln" -o "$tmp/art2"
echo "my file" >"$tmp/c3/reduced/notes.txt"
badcc expect 2 "verify --repro a case whose reduced/ holds a file of the user" "$kiln" verify \
  "$tmp/md/model.onnx" -q --repro "$tmp/c3"
expect_file "$tmp/c3/reduced/notes.txt" "the user's file in reduced/ is kept"
expect 0 "compile --emit-cuda: hostile fallback nodes in the CUDA report" "$kiln" compile "$tmp/sub.onnx" --emit-cuda "$tmp/cu_sub"
expect_out "fallback" "the CUDA report lists the fallback"
clean_terminal "compile --emit-cuda"
