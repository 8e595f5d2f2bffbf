# Types a model declares against the ones Kiln infers, and the plan of programs with
# subgraphs. Exporters name computed dims ('Gemmoutput_dim_0') and onnx.shape_inference
# declares every intermediate value ('unk__123'): inferred static extents must win, so the
# same nodes compile as without the declarations; a declared fact that inference
# contradicts is bad input naming the value; the memory plan never sees a read before a
# definition (a fused reduction's result read elsewhere, an If reading outer values).

# fallbacks FILE: the fallback count of a `kiln compile` summary line in FILE
fallbacks() { sed -n 's/.* \([0-9][0-9]*\) fallback steps.*/\1/p' "$1" | tail -1; }

for seed in 0 1 2; do
  for mode in sym infer; do
    m=$tmp/declared_${mode}_$seed.onnx
    model declared "$m" --mode "$mode" --seed "$seed"
    expect 0 "declared $mode (seed $seed): compiles" "$kiln" compile "$m"
    expect_out " 0 fallback steps" "declared $mode (seed $seed): symbols on static dims do not fall back"
  done
  for mode in static dtype rank; do
    m=$tmp/declared_${mode}_$seed.onnx
    model declared "$m" --mode "$mode" --seed "$seed"
    for cmd in compile info; do
      expect 2 "declared $mode (seed $seed): $cmd is bad input" "$kiln" "$cmd" "$m"
      expect_err "is declared .*, but the node computes" "declared $mode (seed $seed): $cmd names the value"
      expect_err "node 'Relu_0' \(Relu\)" "declared $mode (seed $seed): $cmd names the node"
    done
  done
done

# The SSD-like tail: as exported (an If in the graph used to leave a fused ReduceL2's result
# unwritten: "memory plan, step 1 reads 'norm' before any step defines it") and after
# shape inference (used to make every node a fallback). Same fallbacks either way (the If,
# whose output is dynamic), and the compiled code matches the reference interpreter.
"$PYTHON" -c "import numpy as np; np.save('$tmp/features.npy', np.random.default_rng(3).random((1, 8, 6, 6), dtype=np.float32) - 0.25)"
for mode in plain infer; do
  m=$tmp/detector_$mode.onnx
  model detector "$m" --mode "$mode"
  expect 0 "detector $mode: compiles" "$kiln" compile "$m" --report
  expect_out " 1 fallback steps" "detector $mode: only the If falls back"
  expect 0 "detector $mode: reference run" "$kiln" run "$m" --input features="$tmp/features.npy" \
    --output-dir "$tmp/ref_$mode"
  for backend in cpu tile; do
    expect 0 "detector $mode: $backend matches the reference" "$kiln" run "$m" --backend "$backend" \
      --threads 2 --input features="$tmp/features.npy" --expect scaled="$tmp/ref_$mode/scaled.npy" \
      --expect kept="$tmp/ref_$mode/kept.npy"
  done
  expect 0 "detector $mode: artifact" "$kiln" compile "$m" -o "$tmp/art_$mode"
  expect 0 "detector $mode: artifact runs" "$kiln" run "$tmp/art_$mode" \
    --input features="$tmp/features.npy" --expect scaled="$tmp/ref_$mode/scaled.npy" \
    --expect kept="$tmp/ref_$mode/kept.npy"
done
p=$tmp/ref_plain/kept.npy i=$tmp/ref_infer/kept.npy
[ -s "$p" ] && [ -s "$i" ] && expect_same "$p" "$i" "detector: declarations do not change the result"

# Declarations on an input-dependent model: a symbolic batch bound with --dim; the
# exporter's symbols are recomputed from the bound input.
m=$tmp/conv_batch.onnx
model conv "$m" --mode batch
"$PYTHON" - "$m" "$tmp/conv_batch_inf.onnx" <<'EOF'
import sys, onnx
m = onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1]))
for vi in m.graph.value_info:
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            d.dim_param = "unk__%d" % d.dim_value
onnx.save(m, sys.argv[2])
EOF
for n in 1 3; do
  expect 0 "conv batch: --dim N=$n compiles" "$kiln" compile "$tmp/conv_batch_inf.onnx" --dim N=$n
  expect_out " 0 fallback steps" "conv batch: --dim N=$n with declared symbols does not fall back"
done

# A data-dependent value declared static (NonZero's output as [1,2]; the data has 4
# non-zeros): the interpreter computes the real shape; compiled code and the program
# interpreter, lowered for the declared shape, refuse the run instead of reading part of it.
m=$tmp/declared_datadep.onnx
model declared "$m" --mode datadep
"$PYTHON" -c "import numpy as np; np.save('$tmp/nz.npy', np.array([1, 0, 2, 3, 0, 4], np.float32))"
x=$("$PYTHON" -c "import onnx; print(onnx.load('$m').graph.input[0].name, end='')")
if [ -n "$x" ] && [ "${x#*=}" = "$x" ]; then
  expect 0 "datadep: the interpreter computes the real shape" "$kiln" run "$m" --input "$x=$tmp/nz.npy"
  expect_out "i64\[1,4\]" "datadep: interpreter output shape"
  for backend in cpu tile; do
    expect 1 "datadep: $backend refuses the run" "$kiln" run "$m" --backend "$backend" \
      --input "$x=$tmp/nz.npy"
    expect_err "was computed as i64\[1,4\], the (plan|program) holds i64\[1,2\]" \
      "datadep: $backend says what was computed and what was planned"
  done
fi
