# Hostile files: outputs that would replace the input model, output names that collide, a
# full disk (a small tmpfs, /dev/full), an interrupted compile, folders and FIFOs where files
# are expected, an unusable kernel cache, repeated and unknown arguments. Nothing may be lost
# or left half-written; bad input is exit 2 before anything runs, a failing environment exit 1
# with errno's text; kiln never blocks on a FIFO (the harness time limit catches a hang).

mlp_fixture # $tmp/mlp.kiln (x: f32[batch,4]) and $tmp/x.npy (f32[2,4])
m=$tmp/mlp.kiln x=$tmp/x.npy
case $kiln in /*) ;; *) kiln=$PWD/$kiln ;; esac # some checks run from another folder
# no_leftovers DIR DESC: no temporary of the file writer or of an artifact is left in DIR
no_leftovers() {
  if find "$1" -name '*kiln-tmp*' 2>/dev/null | grep -q .; then
    bad "$2: temporaries left: $(find "$1" -name '*kiln-tmp*' | head -3)"
  else ok; fi
}
# not_ran DESC: the last command stopped before running the model
not_ran() { if grep -q '^ran ' "$tmp/out"; then bad "$1: the model ran first"; else ok; fi; }

expect 0 "an ONNX model (an artifact's model.onnx)" "$kiln" compile "$m" --dim batch=2 -o "$tmp/a0"
mkdir -p "$tmp/src"
cp "$tmp/a0/model.onnx" "$tmp/src/model.onnx"
cp "$tmp/a0/model.onnx" "$tmp/model.ref"
echo "my notes" >"$tmp/src/notes.txt"

# ---- outputs that would replace the input model ----
for o in "$tmp/src" "$tmp/src/" "$tmp/src/." "$tmp/src//" "$tmp/src/../src"; do
  expect 2 "compile src/model.onnx -o '$o'" "$kiln" compile "$tmp/src/model.onnx" --dim batch=2 -o "$o"
  expect_same "$tmp/src/model.onnx" "$tmp/model.ref" "-o '$o' leaves the source model alone"
done
expect 2 "compile a model folder -o itself" "$kiln" compile "$tmp/src" --dim batch=2 -o "$tmp/src"
expect 2 "compile model.onnx -o . from inside its folder" \
  bash -c 'cd "$1/src" && exec "$2" compile model.onnx --dim batch=2 -o .' _ "$tmp" "$kiln"
expect_same "$tmp/src/model.onnx" "$tmp/model.ref" "-o . leaves the source model alone"
expect_file "$tmp/src/notes.txt" "-o . leaves the user's other files alone"
ln -s "$tmp/src" "$tmp/srclink"
expect 2 "compile -o a symlink to the model's folder" "$kiln" compile "$tmp/src/model.onnx" --dim batch=2 -o "$tmp/srclink"
# an existing artifact whose model.onnx is the input, by a hard link or a symlink
expect 0 "an artifact" "$kiln" compile "$m" --dim batch=2 -o "$tmp/a1"
cp "$tmp/a1/model.onnx" "$tmp/a1.ref"
ln "$tmp/a1/model.onnx" "$tmp/hard.onnx"
ln -s "$tmp/a1/model.onnx" "$tmp/soft.onnx"
expect 2 "compile a hard link to DIR/model.onnx -o DIR" "$kiln" compile "$tmp/hard.onnx" --dim batch=2 -o "$tmp/a1"
expect_err "replace the input model" "the refusal says why"
expect 2 "compile a symlink to DIR/model.onnx -o DIR" "$kiln" compile "$tmp/soft.onnx" --dim batch=2 -o "$tmp/a1"
expect 2 "compile DIR/model.onnx -o DIR on an artifact" "$kiln" compile "$tmp/a1/model.onnx" --dim batch=2 -o "$tmp/a1"
expect_same "$tmp/a1/model.onnx" "$tmp/a1.ref" "the artifact's model is intact"
expect 0 "the artifact still runs" "$kiln" run "$tmp/a1" --input x="$x"
# --emit-c into the model's folder where a file it writes is the model
mkdir -p "$tmp/em" && cp "$tmp/model.ref" "$tmp/em/model.bin"
expect 2 "compile --emit-c over the input model" "$kiln" compile "$tmp/em/model.bin" --dim batch=2 --emit-c "$tmp/em"
expect_same "$tmp/em/model.bin" "$tmp/model.ref" "--emit-c leaves the source model alone"
# -o that is a file, or a folder holding other files
echo data >"$tmp/afile"
expect 2 "compile -o a file" "$kiln" compile "$m" --dim batch=2 -o "$tmp/afile"
expect_err "not a folder" "says the -o path is not a folder"
mkdir -p "$tmp/userdir" && echo mine >"$tmp/userdir/keep.txt"
expect 2 "compile -o a folder of other files" "$kiln" compile "$m" --dim batch=2 -o "$tmp/userdir"
expect_file "$tmp/userdir/keep.txt" "the user's file is kept"
expect 0 "compile --emit-c into a folder of other files" "$kiln" compile "$m" --dim batch=2 --emit-c "$tmp/userdir"
expect_file "$tmp/userdir/keep.txt" "--emit-c keeps the user's other files"
expect_file "$tmp/userdir/model.c" "--emit-c wrote into the existing folder"
mkdir -p "$tmp/empty"
expect 0 "compile -o an empty folder" "$kiln" compile "$m" --dim batch=2 -o "$tmp/empty"
expect 0 "recompile over an artifact" "$kiln" compile "$m" --dim batch=2 --threads 2 -o "$tmp/empty"
expect 0 "the replaced artifact runs" "$kiln" run "$tmp/empty" --input x="$x"
no_leftovers "$tmp" "compile -o"

# external data next to the model: -o its folder is refused, the weights kept
if "$PYTHON" -c 'import onnx' 2>/dev/null; then
  mkdir -p "$tmp/ext"
  "$PYTHON" - "$tmp/ext" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(m, d + "/model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
PY
  cp "$tmp/ext/model.onnx" "$tmp/ext.ref"; cp "$tmp/ext/weights.bin" "$tmp/weights.ref"
  expect 2 "compile an external-data model -o its folder" "$kiln" compile "$tmp/ext/model.onnx" -o "$tmp/ext"
  expect_same "$tmp/ext/model.onnx" "$tmp/ext.ref" "the external-data model is intact"
  expect_same "$tmp/ext/weights.bin" "$tmp/weights.ref" "its weights are intact"
  # external data that is a folder or a FIFO: an error, never a wait
  mkdir -p "$tmp/extd" && cp "$tmp/ext/model.onnx" "$tmp/extd/" && mkdir "$tmp/extd/weights.bin"
  expect 2 "external data that is a folder" "$kiln" info "$tmp/extd/model.onnx"
  mkdir -p "$tmp/extf" && cp "$tmp/ext/model.onnx" "$tmp/extf/" && mkfifo "$tmp/extf/weights.bin"
  HOSTILE_TIMEOUT=30 expect 2 "external data that is a FIFO" "$kiln" info "$tmp/extf/model.onnx"
  expect_err "FIFO" "says it is a FIFO"

  # ---- output names that collide on disk ----
  "$PYTHON" - "$tmp/names.onnx" <<'PY'
import sys, onnx
from onnx import helper, TensorProto
outs = ["a/b", "a_b", "a%2Fb", "..", ".", "A/B", "y", "../y", "/y"]
nodes = [helper.make_node("Identity", ["x"], [o]) for o in outs]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                      [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 4]) for o in outs])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
  mkdir -p "$tmp/nout/inner"
  expect 0 "run a model whose outputs collide as file names" "$kiln" run "$tmp/names.onnx" \
    --input x="$x" --output-dir "$tmp/nout/inner"
  n=$(find "$tmp/nout/inner" -type f | wc -l)
  [ "$n" -eq 9 ] && ok || bad "9 outputs give 9 files, not $n"
  n=$(find "$tmp/nout" -type f | wc -l)
  [ "$n" -eq 9 ] && ok || bad "nothing is written outside the output folder ($n files)"
  [ "$(grep -c -- '-> ' "$tmp/out")" -eq 9 ] && ok || bad "each output's file is printed"
  for f in "$tmp"/nout/inner/*.npy; do
    expect 0 "output file $(basename "$f") is a whole .npy" "$kiln" run "$tmp/names.onnx" \
      --input x="$f"
  done
fi

# ---- repeated and unknown arguments, an --output-dir that is a file: before the run ----
expect 2 "run with --input x= twice" "$kiln" run "$m" --input x="$x" --input x="$tmp/other.npy"
expect_err "twice" "says the input is given twice"
not_ran "repeated --input"
expect 2 "verify with --input x= twice" "$kiln" verify "$m" --dim batch=2 --input x="$x" --input x="$x"
expect_err "twice" "verify says the input is given twice"
expect 2 "run with the same --input twice" "$kiln" run "$m" --input x="$x" --input x="$x"
expect 2 "run with --expect y= twice" "$kiln" run "$m" --input x="$x" --expect y="$x" --expect y="$x"
expect 2 "run --backend cpu with an unknown --expect name" "$kiln" run "$m" --backend cpu --input x="$x" --expect nosuch="$x"
expect_err "nosuch" "the unknown output is named"
not_ran "unknown --expect"
expect 2 "run with a missing --expect file" "$kiln" run "$m" --backend cpu --input x="$x" --expect y="$tmp/nofile.npy"
not_ran "missing --expect file"
expect 2 "run --output-dir a file" "$kiln" run "$m" --backend cpu --input x="$x" --output-dir "$tmp/afile"
expect_err "not a folder" "says the output dir is not a folder"
not_ran "--output-dir a file"
expect 2 "run --output-dir under a file" "$kiln" run "$m" --input x="$x" --output-dir "$tmp/afile/sub/dir"
not_ran "--output-dir under a file"
expect_same "$tmp/afile" <(echo data) "the file is intact"

# ---- folders where files are expected; model folders where models are taken ----
mkdir -p "$tmp/nomodel"
for cmd in info print run compile bench; do
  expect 2 "$cmd on a folder without model.onnx" "$kiln" $cmd "$tmp/nomodel"
  expect_err "folder" "$cmd says it is a folder"
  if grep -q '9223372036854775807' "$tmp/err"; then bad "$cmd: a byte count for a folder"; else ok; fi
done
expect 0 "info on a model folder" "$kiln" info "$tmp/src"
expect 0 "print a model folder" "$kiln" print "$tmp/src"
expect 0 "run a model folder" "$kiln" run "$tmp/src" --input x="$x"
expect 0 "compile a model folder" "$kiln" compile "$tmp/src" --dim batch=2
expect 0 "bench a model folder" "$kiln" bench "$tmp/src" --dim batch=2 --iters 1 --warmup 0
mkdir -p "$tmp/d.npy" "$tmp/d.kiln" "$tmp/d.onnx"
expect 2 "run --input a folder" "$kiln" run "$m" --input x="$tmp/d.npy"
expect_err "folder" "says the input is a folder"
expect 2 "run --expect a folder" "$kiln" run "$m" --input x="$x" --expect y="$tmp/d.npy"
expect 2 "print a folder named .kiln" "$kiln" print "$tmp/d.kiln"
expect 2 "test-onnx --expect a folder" "$kiln" test-onnx --expect "$tmp/d.npy" "$tmp/nomodel"
mkdir -p "$tmp/a2" && cp -r "$tmp/a1/." "$tmp/a2/" && rm "$tmp/a2/manifest.txt" && mkdir "$tmp/a2/manifest.txt"
expect 2 "run an artifact whose manifest is a folder" "$kiln" run "$tmp/a2" --input x="$x"

# ---- FIFOs: refused at once, never waited on ----
mkfifo "$tmp/f.onnx" "$tmp/f.kiln" "$tmp/f.npy" "$tmp/f.pb" "$tmp/f.txt"
export HOSTILE_TIMEOUT=30
for cmd in info print run compile bench verify; do
  expect 2 "$cmd on a FIFO model" "$kiln" $cmd "$tmp/f.onnx"
  expect_err "FIFO" "$cmd says it is a FIFO"
done
expect 2 "print a FIFO .kiln" "$kiln" print "$tmp/f.kiln"
expect 2 "run --input a FIFO .npy" "$kiln" run "$m" --input x="$tmp/f.npy"
expect 2 "run --input a FIFO .pb" "$kiln" run "$m" --input x="$tmp/f.pb"
expect 2 "run --expect a FIFO" "$kiln" run "$m" --input x="$x" --expect y="$tmp/f.npy"
expect 2 "test-onnx --expect a FIFO" "$kiln" test-onnx --expect "$tmp/f.txt" "$tmp/nomodel"
expect 2 "test-onnx --json a FIFO" "$kiln" test-onnx --json "$tmp/f.txt" "$tmp/a1"
expect 2 "test-onnx --json a folder" "$kiln" test-onnx --json "$tmp/d.npy" "$tmp/a1"
mkdir -p "$tmp/fo" && mkfifo "$tmp/fo/y.npy"
expect 2 "run writing an output over a FIFO" "$kiln" run "$m" --input x="$x" --output-dir "$tmp/fo"
not_ran "an output over a FIFO"
mkdir -p "$tmp/fd/y.npy"
expect 2 "run writing an output over a folder" "$kiln" run "$m" --input x="$x" --output-dir "$tmp/fd"
not_ran "an output over a folder"
mkdir -p "$tmp/a3" && cp -r "$tmp/a1/." "$tmp/a3/" && rm "$tmp/a3/manifest.txt" && mkfifo "$tmp/a3/manifest.txt"
expect 2 "run an artifact whose manifest is a FIFO" "$kiln" run "$tmp/a3" --input x="$x"
mkdir -p "$tmp/fm" && mkfifo "$tmp/fm/model.onnx"
for cmd in info run compile bench test-onnx; do
  expect 2 "$cmd on a model folder whose model.onnx is a FIFO" "$kiln" $cmd "$tmp/fm"
done
mkdir -p "$tmp/a4" && cp -r "$tmp/a1/." "$tmp/a4/" && rm "$tmp/a4/model.onnx" && mkfifo "$tmp/a4/model.onnx"
expect 2 "run an artifact whose model.onnx is a FIFO" "$kiln" run "$tmp/a4" --input x="$x"
mkdir -p "$tmp/case" && mkfifo "$tmp/case/case.txt" && cp "$tmp/model.ref" "$tmp/case/model.onnx"
expect 2 "reduce a case whose case.txt is a FIFO" "$kiln" reduce "$tmp/case" --out "$tmp/case_out"
unset HOSTILE_TIMEOUT

# ---- /dev/full: the write fails with errno's text, exit 1 ----
if [ -w /dev/full ]; then
  mkdir -p "$tmp/df" && ln -s /dev/full "$tmp/df/y.npy"
  expect 1 "run writing an output to /dev/full" "$kiln" run "$m" --input x="$x" --output-dir "$tmp/df"
  expect_err "No space left on device" "/dev/full: errno's text"
  expect 1 "test-onnx --json /dev/full" "$kiln" test-onnx --json /dev/full "$tmp/a1"
  expect_err "No space left on device" "test-onnx --json /dev/full: errno's text"
  expect 0 "run writing an output to /dev/null" bash -c \
    'mkdir -p "$1/dn" && ln -sf /dev/null "$1/dn/y.npy" && exec "$2" run "$3" --input x="$4" --output-dir "$1/dn"' \
    _ "$tmp" "$kiln" "$m" "$x"
else
  echo "SKIP /dev/full checks: /dev/full is not writable here"
fi

# ---- a full disk (a 64 KiB tmpfs) for every command that writes ----
full=$tmp/full
mkdir -p "$full"
if mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
  trap 'umount "$full" 2>/dev/null; umount "$tmp/ro" 2>/dev/null; rm -rf "$tmp"' EXIT
  mkdir -p "$full/out" "$full/cache"
  dd if=/dev/zero of="$full/fill" bs=1k count=100 2>/dev/null # fills it: ENOSPC expected
  expect 1 "run --output-dir on a full disk" "$kiln" run "$m" --input x="$x" --output-dir "$full/out"
  expect_err "No space left on device" "run: errno's text"
  expect_no_file "$full/out/y.npy" "run leaves no partial output"
  expect 1 "compile -o on a full disk" "$kiln" compile "$m" --dim batch=2 -o "$full/art"
  expect_err "No space left on device" "compile -o: errno's text"
  expect 2 "the failed artifact does not run" "$kiln" run "$full/art" --input x="$x"
  expect_no_file "$full/art" "compile -o leaves no artifact"
  expect 1 "compile --emit-c on a full disk" "$kiln" compile "$m" --dim batch=2 --emit-c "$full/sa"
  expect_err "No space left on device" "compile --emit-c: errno's text"
  expect_no_file "$full/sa" "compile --emit-c leaves no part-written folder"
  expect 1 "compile --emit-cuda on a full disk" "$kiln" compile "$m" --dim batch=2 --emit-cuda "$full/cu"
  expect_no_file "$full/cu" "compile --emit-cuda leaves no part-written folder"
  expect 1 "test-onnx --json on a full disk" "$kiln" test-onnx --json "$full/r.json" "$tmp/a1"
  expect_no_file "$full/r.json" "test-onnx leaves no partial JSON"
  no_leftovers "$full" "full disk"
  # a kernel cache on the full disk only costs time: one warning, the compile works
  expect 0 "compile with the kernel cache on a full disk" env KILN_CACHE_DIR="$full/cache" \
    "$kiln" compile "$m" --dim batch=2 --threads 3
  expect_err "warning: the kernel cache" "one warning about the cache"
  [ "$(grep -c warning "$tmp/err")" -eq 1 ] && ok || bad "one warning line, not $(grep -c warning "$tmp/err")"
  expect 0 "run an artifact with the kernel cache on a full disk" env KILN_CACHE_DIR="$full/cache" \
    "$kiln" run "$tmp/a1" --input x="$x" --threads 5
  expect 1 "cache and build folder both on a full disk: a failed run" env KILN_CACHE_DIR="$full/cache" \
    TMPDIR="$full" "$kiln" compile "$m" --dim batch=2 --threads 6
  # a full disk part-way through an artifact: model.onnx fits, the rest does not
  rm -f "$full/fill"
  dd if=/dev/zero of="$full/fill" bs=1k count=56 2>/dev/null
  expect 1 "compile -o with room for part of the artifact" "$kiln" compile "$m" --dim batch=2 -o "$full/art2"
  expect_no_file "$full/art2" "a part-written artifact is not left"
  no_leftovers "$full" "part-full disk"
  umount "$full"
else
  echo "SKIP full-disk checks: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)"
fi

# ---- an unusable kernel cache: a file, a path under a file, a read-only folder ----
for c in "$tmp/afile" "$tmp/afile/sub"; do
  expect 0 "compile with KILN_CACHE_DIR=$c" env KILN_CACHE_DIR="$c" "$kiln" compile "$m" --dim batch=2 --threads 7
  expect_err "warning: the kernel cache" "one warning for KILN_CACHE_DIR=$c"
done
mkdir -p "$tmp/ro"
if mount -t tmpfs -o ro,size=64k tmpfs "$tmp/ro" 2>/dev/null; then
  expect 0 "compile with a read-only kernel cache" env KILN_CACHE_DIR="$tmp/ro" "$kiln" compile "$m" --dim batch=2 --threads 8
  expect_err "warning: the kernel cache" "one warning for a read-only cache"
  umount "$tmp/ro"
else
  echo "SKIP read-only cache check: cannot mount a read-only tmpfs here"
fi
# cache entries replaced by FIFOs, folders and garbage: a miss, never a wait or a crash
expect 0 "fill a kernel cache" env KILN_CACHE_DIR="$tmp/cache_bad" "$kiln" compile "$m" --dim batch=2 --threads 13
n=0
for e in "$tmp"/cache_bad/obj/* "$tmp"/cache_bad/lib/*; do
  [ -f "$e" ] || continue
  rm "$e"
  case $((n % 3)) in 0) mkfifo "$e" ;; 1) mkdir "$e" ;; 2) printf 'KILNC1 99999999999999999999 0\n' >"$e" ;; esac
  n=$((n + 1))
done
[ "$n" -ge 2 ] && ok || bad "the kernel cache holds entries to spoil ($n)"
HOSTILE_TIMEOUT=60 expect 0 "compile with spoilt cache entries" env KILN_CACHE_DIR="$tmp/cache_bad" \
  "$kiln" compile "$m" --dim batch=2 --threads 13
expect 1 "no C compiler at all: a failed run, not bad input" env CC=/nonexistent/cc \
  KILN_CACHE_DIR="$tmp/cache_nocc" "$kiln" compile "$m" --dim batch=2 --threads 9
expect_err "C compiler" "names the missing compiler"

# ---- an interrupted compile leaves no runnable artifact; a replaced one stays valid ----
# A C compiler that waits (until $tmp/stop exists) whenever it compiles a unit.
cat >"$tmp/slowcc" <<'SH'
#!/bin/sh
for a in "$@"; do
  if [ "$a" = "-c" ]; then
    while [ ! -e "$STOP" ]; do sleep 0.1; done
    exit 1
  fi
done
exec cc "$@"
SH
chmod +x "$tmp/slowcc"
# killed DESC OUT: compile -o OUT killed (SIGKILL) while the compiler runs
killed() {
  rm -f "$tmp/stop"
  STOP=$tmp/stop CC=$tmp/slowcc KILN_CACHE_DIR=$tmp/cache_slow timeout -s KILL 3 \
    "$kiln" compile "$m" --dim batch=2 --threads 11 -o "$2" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  touch "$tmp/stop" # the orphaned compiler gives up
  [ "$rc" -eq 137 ] && ok || bad "$1: exit $rc, expected to be killed (137)"
}
killed "compile -o killed while compiling" "$tmp/killed"
expect_no_file "$tmp/killed" "the killed compile left no artifact"
expect 2 "the killed artifact does not run" "$kiln" run "$tmp/killed" --input x="$x"
cp "$tmp/a1/manifest.txt" "$tmp/a1.manifest"
killed "compile -o over an artifact killed while compiling" "$tmp/a1"
expect_same "$tmp/a1/manifest.txt" "$tmp/a1.manifest" "the old artifact is untouched"
expect 0 "the old artifact still runs" "$kiln" run "$tmp/a1" --input x="$x"
n=0
for d in "$tmp"/.killed.kiln-tmp.* "$tmp"/.a1.kiln-tmp.*; do
  [ -e "$d" ] || continue
  n=$((n + 1))
  expect 2 "a killed compile's temporary folder does not run" "$kiln" run "$d" --input x="$x"
done
[ "$n" -ge 1 ] && ok || bad "the killed compiles left their (hidden) temporary folders: none found"

# Names and file names holding '=': NAME=FILE is split after the model's own name.
"$PYTHON" - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper
d = sys.argv[1]
g = helper.make_graph([helper.make_node("Relu", ["a=b"], ["y=z"])], "eq",
                      [helper.make_tensor_value_info("a=b", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y=z", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), d + "/eq.onnx")
np.save(d + "/in=1.npy", np.array([1, -1], np.float32))
np.save(d + "/want=1.npy", np.array([1, 0], np.float32))
PY
expect 0 "run: input and output names holding '='" "$kiln" run "$tmp/eq.onnx" \
  --input "a=b=$tmp/in=1.npy" --expect "y=z=$tmp/want=1.npy" --output-dir "$tmp/eqout"
expect_file "$tmp/eqout/y%3Dz.npy" "the output named 'y=z' is written as y%3Dz.npy"
expect 0 "verify: an input name holding '='" "$kiln" verify "$tmp/eq.onnx" --input "a=b=$tmp/in=1.npy" -q
expect 2 "run: a prefix of a name is not the name" "$kiln" run "$tmp/eq.onnx" --input "a=$tmp/in=1.npy"
expect_err "no input named 'a'" "run names the unknown input"

# -o and --emit-c into one folder: a usage error before anything is written
expect 2 "compile -o D --emit-c D/" "$kiln" compile "$m" --dim batch=2 -o "$tmp/same" --emit-c "$tmp/same/"
expect_err "need two folders" "the error says why"
expect_no_file "$tmp/same" "nothing written"

# what a command prints to stdout must all arrive: a full stdout is exit 1 with the reason
for c in "print $m" "info $m" "compile $m --dim batch=2 --report"; do
  timeout 60 "$kiln" $c >/dev/full 2>"$tmp/err" </dev/null
  rc=$?
  [ "$rc" -eq 1 ] && grep -q "No space left on device" "$tmp/err" && ok || bad "$c > /dev/full: exit $rc"
done
