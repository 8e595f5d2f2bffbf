# Memory bombs: small models that describe huge tensors, and huge symbolic dims, through every
# command that loads, compiles or runs a model. Each must end quickly with exit 2 and a message
# that names the value and --max-memory (or the overflow), without allocating what the model
# only describes: compile allocates no arena, folding and lowering materialize nothing large.
#
# Peak memory: outside ASan every command runs under `ulimit -v` (virtual memory: a request
# for the described tensor fails there instead of succeeding lazily) and its peak RSS is read
# from /usr/bin/time when that exists. ASan reserves terabytes of virtual memory for its
# shadow, so under ASan the bound is skipped (the exit status and message are still checked).

limit_re='needs [0-9]+ bytes.*above the limit of [0-9]+ bytes.*\(--max-memory\)'
over_re='overflows|too large'
if grep -qa __asan_init "$kiln" 2>/dev/null; then
  asan=1
  echo "note: ASan build: peak-memory bounds skipped (ASan reserves its shadow memory)"
else
  asan=0
fi
have_time=0
[ -x /usr/bin/time ] && /usr/bin/time -f %M true >/dev/null 2>&1 && have_time=1

# bounded STATUS DESC MAX_MB CMD...: `expect`, under a virtual-memory limit of 4 GiB, and the
# peak RSS stays under MAX_MB.
bounded() {
  local want=$1 what=$2 mb=$3
  shift 3
  if [ "$asan" = 1 ]; then
    expect "$want" "$what" "$@"
    return
  fi
  if [ "$have_time" = 1 ]; then
    expect "$want" "$what" bash -c 'ulimit -v 4194304; exec /usr/bin/time -f "%M" -o "$0" "$@"' \
      "$tmp/rss" "$@"
    local kb
    kb=$(grep -E '^[0-9]+$' "$tmp/rss" | tail -1)
    if [ -z "$kb" ]; then bad "$what: no peak RSS measured"
    elif [ "$kb" -gt $((mb * 1024)) ]; then bad "$what: peak RSS $((kb / 1024)) MB > $mb MB"
    else ok; fi
  else
    expect "$want" "$what" bash -c 'ulimit -v 4194304; exec "$@"' kiln "$@"
  fi
}

mm() { model memory "$1" "$tmp/$2.onnx" "${@:3}"; }
npy() { "$PYTHON" -c "import numpy as np, sys; np.save(sys.argv[1], $2)" "$tmp/$1.npy"; }
npy x1 'np.ones([1], np.float32)'
npy x22 'np.ones([2, 2], np.float32)'
npy x1122 'np.ones([1, 1, 2, 2], np.float32)'
npy s 'np.array([100000, 100000], np.int64)'
npy s_small 'np.array([3, 4], np.int64)'
npy s4 'np.array([1, 1, 100000, 100000], np.int64)'

# ---- 1. a symbolic batch bound to a large extent: compile plans, allocates nothing ----
mm symbatch sym
bounded 0 "compile --dim N=4000 (16 GB arena) allocates no arena" 400 \
  "$kiln" compile "$tmp/sym.onnx" --dim N=4000 --max-memory 64G
expect_out "arena 16000000000 bytes" "compile --dim N=4000 reports the planned arena"
bounded 0 "compile -o with a 16 GB arena writes the artifact, allocates nothing" 400 \
  "$kiln" compile "$tmp/sym.onnx" --dim N=4000 --max-memory 64G -o "$tmp/sym_art"
bounded 2 "compile --dim N=4000 over --max-memory 1G" 400 \
  "$kiln" compile "$tmp/sym.onnx" --dim N=4000 --max-memory 1G
expect_err "memory plan.*'[hy]'.*$limit_re" "compile --dim N=4000 --max-memory 1G message"
for n in 17592186044416 4611686018427387904 9223372036854775807; do
  bounded 2 "compile --dim N=$n (element count overflows)" 400 \
    "$kiln" compile "$tmp/sym.onnx" --dim N=$n
  expect_err "'x'.*($over_re)" "compile --dim N=$n names the input"
done
bounded 2 "bench --dim N=4000 over --max-memory 2G" 400 \
  "$kiln" bench "$tmp/sym.onnx" --dim N=4000 --max-memory 2G --iters 1 --warmup 0
expect_err "$limit_re" "bench --dim N=4000 message"
bounded 2 "bench --dim N=2^44" 400 "$kiln" bench "$tmp/sym.onnx" --dim N=17592186044416
expect_err "$over_re" "bench --dim N=2^44 message"

# ---- 2. ConstantOfShape: the 171-byte model that made compile use 785 MB ----
mm constofshape cos_mid --n 14000
bounded 0 "compile ConstantOfShape 14000x14000 (784 MB) stays small" 300 \
  "$kiln" compile "$tmp/cos_mid.onnx" --max-memory 4G
bounded 2 "compile ConstantOfShape 14000x14000 over --max-memory 256M" 300 \
  "$kiln" compile "$tmp/cos_mid.onnx" --max-memory 256M
expect_err "'y'.*$limit_re" "compile ConstantOfShape over the limit names 'y'"
bounded 2 "run --backend cpu ConstantOfShape over --max-memory 256M" 300 \
  "$kiln" run "$tmp/cos_mid.onnx" --backend cpu --max-memory 256M
expect_err "$limit_re" "run --backend cpu ConstantOfShape message"
bounded 2 "run (interpreter) ConstantOfShape over --max-memory 256M" 300 \
  "$kiln" run "$tmp/cos_mid.onnx" --max-memory 256M
expect_err "'y'.*$limit_re" "run ConstantOfShape (interpreter) names 'y'"

# ---- 3. huge tensors described by attributes and shape inputs, every entry point ----
mm constofshape cos
mm constofshape_computed cosc
mm expand expand
mm tile tile
mm resize resize
mm range range
mm pad pad
for k in cos cosc expand tile resize range pad; do
  case $k in
  expand) in=(--input "x=$tmp/x1.npy") ;;
  resize) in=(--input "x=$tmp/x1122.npy") ;;
  tile | pad) in=(--input "x=$tmp/x22.npy") ;;
  *) in=() ;;
  esac
  bounded 2 "$k: compile" 400 "$kiln" compile "$tmp/$k.onnx"
  expect_err "$limit_re" "$k: compile message"
  bounded 2 "$k: run (interpreter)" 300 "$kiln" run "$tmp/$k.onnx" "${in[@]}"
  expect_err "'y'.*$limit_re" "$k: run (interpreter) names 'y'"
  bounded 2 "$k: run --backend cpu" 400 "$kiln" run "$tmp/$k.onnx" --backend cpu "${in[@]}"
  expect_err "$limit_re" "$k: run --backend cpu message"
  bounded 2 "$k: run --backend tile" 400 "$kiln" run "$tmp/$k.onnx" --backend tile "${in[@]}"
  bounded 2 "$k: verify" 400 "$kiln" verify "$tmp/$k.onnx" -q
  expect_err "$limit_re" "$k: verify message"
done
# the same with extents whose element count overflows int64: found by inference
for n in 4294967296 4611686018427387904; do
  for k in constofshape expand tile resize pad; do
    mm $k big_$k --n $n
    bounded 2 "$k --n $n: compile" 300 "$kiln" compile "$tmp/big_$k.onnx"
    bounded 2 "$k --n $n: run" 300 "$kiln" run "$tmp/big_$k.onnx" --input "x=$tmp/x22.npy"
  done
done

# ---- 4. a shape known only when the model runs (data): the interpreter's allocations ----
mm constofshape_input cosi
bounded 2 "ConstantOfShape of an input shape: run" 300 \
  "$kiln" run "$tmp/cosi.onnx" --input "s=$tmp/s.npy"
expect_err "'y'.*$limit_re" "ConstantOfShape of an input shape: message"
bounded 2 "ConstantOfShape of an input shape: run --backend cpu (fallback step)" 400 \
  "$kiln" run "$tmp/cosi.onnx" --backend cpu --input "s=$tmp/s.npy"
expect_err "$limit_re" "ConstantOfShape of an input shape, cpu: message"
bounded 0 "ConstantOfShape of a small input shape still runs" 300 \
  "$kiln" run "$tmp/cosi.onnx" --input "s=$tmp/s_small.npy" --max-memory 64M

# empty tensors whose strides overflow: f32[0, 2^62, 2^62, 2^62], declared or from data
mm expand_empty expand_empty --n 4611686018427387904
bounded 2 "Expand to [0, 2^62, 2^62, 2^62]: compile" 300 "$kiln" compile "$tmp/expand_empty.onnx"
expect_err "'y'.*overflows" "Expand to an empty shape with huge dims: message"
mm expand_input expand_input
npy s_empty 'np.array([0, 2**62, 2**62, 2**62], np.int64)'
for b in interp cpu tile; do
  bounded 2 "Expand to [0, 2^62, 2^62, 2^62] from data: run --backend $b" 300 \
    "$kiln" run "$tmp/expand_input.onnx" --backend $b --input "x=$tmp/x1.npy" \
    --input "s=$tmp/s_empty.npy"
  expect_err "'y'.*overflow" "Expand from data ($b): message"
  bounded 2 "Expand to [100000, 100000] from data: run --backend $b" 300 \
    "$kiln" run "$tmp/expand_input.onnx" --backend $b --input "x=$tmp/x1.npy" \
    --input "s=$tmp/s4.npy"
  expect_err "'y'.*$limit_re" "Expand to 10^10 from data ($b): message"
done

# scratch beside the outputs: Attention's n x n scores from three n x 1 inputs (400 KB each)
mm attention att
npy q 'np.ones([1, 1, 100000, 1], np.float32)'
bounded 2 "Attention of 10^5 rows: the 80 GB of scores are refused" 300 \
  "$kiln" run "$tmp/att.onnx" --input "q=$tmp/q.npy" --input "k=$tmp/q.npy" --input "v=$tmp/q.npy"
expect_err "Attention.*scores.*$limit_re" "Attention scores: message"
mm attention att_small --n 64
npy q64 'np.ones([1, 1, 64, 1], np.float32)'
bounded 0 "Attention of 64 rows still runs" 300 "$kiln" run "$tmp/att_small.onnx" \
  --input "q=$tmp/q64.npy" --input "k=$tmp/q64.npy" --input "v=$tmp/q64.npy"

# ---- 5. declared types: inputs, intermediates, initializers without data ----
mm reshape reshape
bounded 2 "Reshape to a target whose element count overflows" 300 \
  "$kiln" run "$tmp/reshape.onnx" --input "x=$tmp/x1.npy"
mm input_dims indims
bounded 2 "declared input of 10^20 elements: compile" 300 "$kiln" compile "$tmp/indims.onnx"
expect_err "'x'.*($over_re)" "declared input: message names 'x'"
mm value_info vinfo
bounded 2 "declared intermediate of 10^20 elements: compile" 300 \
  "$kiln" compile "$tmp/vinfo.onnx" --dim N=4
expect_err "'h'.*($over_re|is declared .* but the node computes)" "declared intermediate: message names 'h'"
mm initializer init
bounded 2 "initializer with huge dims and no data: compile" 300 "$kiln" compile "$tmp/init.onnx"
bounded 2 "initializer with huge dims and no data: run" 300 "$kiln" run "$tmp/init.onnx"

# input files whose header declares a huge tensor over a few bytes of data: refused before
# the tensor is allocated, even with the limit raised
"$PYTHON" - "$tmp" <<'PY'
import sys, onnx
d = sys.argv[1]
for name, shape in (("big", (100000, 100000)), ("ovf", (4000000000000000, 1000))):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (shape,)
    h += " " * (118 - len(h)) + "\n"
    open("%s/%s.npy" % (d, name), "wb").write(
        b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + b"\0" * 16)
t = onnx.TensorProto(name="x", data_type=1, dims=[100000, 1000, 1000], raw_data=b"\0" * 16)
open(d + "/big.pb", "wb").write(t.SerializeToString())
PY
for f in big.npy ovf.npy big.pb; do
  bounded 2 "input file $f declaring a huge tensor (limit raised)" 300 \
    "$kiln" run "$tmp/sym.onnx" --input "x=$tmp/$f" --max-memory 1T
  expect_err "does not match|has 16 bytes" "input file $f: message"
done

# test-onnx: a case over the limit fails (exit 1: a case failed), with the message
mkdir -p "$tmp/tc/cos/test_data_set_0"
cp "$tmp/cos.onnx" "$tmp/tc/cos/model.onnx"
"$PYTHON" -c "import sys, onnx; t = onnx.TensorProto(name='y', data_type=1, dims=[1], float_data=[0]); open(sys.argv[1], 'wb').write(t.SerializeToString())" \
  "$tmp/tc/cos/test_data_set_0/output_0.pb"
for b in interp cpu; do
  bounded 1 "test-onnx --backend $b on a case over the limit" 400 \
    "$kiln" test-onnx "$tmp/tc" --backend $b --no-fork
  expect_out "$limit_re" "test-onnx --backend $b: the case's message"
done

# ---- 6. verification holds f64 copies and error bounds of every value: a clear refusal ----
mm matmul mm --n 2048
for lim in 20M 40M 80M; do
  bounded 2 "verify a 16 MB weight under --max-memory $lim" 400 \
    "$kiln" verify "$tmp/mm.onnx" --max-memory $lim -q
  expect_err "$limit_re" "verify under --max-memory $lim: message"
done
for cmd in info print; do
  bounded 2 "$cmd: a 16 MB weight under --max-memory 8M" 300 "$kiln" $cmd "$tmp/mm.onnx" --max-memory 8M
  expect_err "'w'.*$limit_re" "$cmd: a weight over the limit: message names 'w'"
done
bounded 0 "verify the same model under the default limit" 600 "$kiln" verify "$tmp/mm.onnx" -q
bounded 2 "run (interpreter) a 16 MB weight under --max-memory 8M: the weight itself" 300 \
  "$kiln" run "$tmp/mm.onnx" --max-memory 8M
expect_err "'w'.*$limit_re" "a weight over the limit: message names 'w'"

# ---- 7. --max-memory itself: every command takes it, bad values are usage errors ----
for cmd in compile run bench verify test-onnx reduce fuzz info print; do
  expect 0 "$cmd --help mentions --max-memory" "$kiln" $cmd --help
  expect_out "--max-memory" "$cmd --help lists --max-memory"
done
for bad in abc -1 0 1k 99999999999999999999G 8Q ""; do
  expect 2 "--max-memory '$bad' is a usage error" "$kiln" run "$tmp/cos_mid.onnx" --max-memory "$bad"
  expect_err "max-memory" "--max-memory '$bad': message"
done
expect 2 "--max-memory without a value" "$kiln" compile "$tmp/cos_mid.onnx" --max-memory
# a fuzz campaign under a tight limit: generated cases are small; a case over the limit is
# the user's limit, not a compiler bug
bounded 0 "fuzz under --max-memory 64M" 600 \
  "$kiln" fuzz --count 3 --seed 1 --backend none -q --out "$tmp/fz" --max-memory 64M
expect_no_file "$tmp/fz/case_0" "fuzz under a limit records no case"
