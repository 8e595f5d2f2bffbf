# Data races in compiled code: contractions whose rows end in a partial register tile of 8
# (546 = 68*8 + 2 output channels, 37 = 4*8 + 5 rows, 449 = 56*8 + 1 channels, a 45-row Gemm)
# once shared one accumulator tile between the threads of the row-block loop and the serial
# tail after it. Compiled for several threads, every run must give the same bits as the
# first, agree with the reference interpreter, and kiln verify must pass (it runs the code at
# 1 and N threads, twice at N).

race_model() { # NAME KIND M SHAPE
  model race "$tmp/$1.onnx" --kind "$2" --m "$3" --seed 3 || bad "model $1: cannot build"
  model input "$tmp/$1.npy" "$4" --seed 5 || bad "model $1: cannot build its input"
  expect 0 "$1: reference" "$kiln" run "$tmp/$1.onnx" --input "x=$tmp/$1.npy" --output-dir "$tmp/$1.ref"
}

race_runs() { # NAME THREADS RUNS
  local name=$1 threads=$2 runs=$3 i
  for i in $(seq 1 "$runs"); do
    expect 0 "$name at $threads threads, run $i" "$kiln" run "$tmp/$name.onnx" --backend cpu \
      --threads "$threads" --input "x=$tmp/$name.npy" --output-dir "$tmp/$name.t$threads.$i" \
      --expect "y=$tmp/$name.ref/y.npy" --atol 1e-4
    expect_same "$tmp/$name.t$threads.1/y.npy" "$tmp/$name.t$threads.$i/y.npy" \
      "$name at $threads threads: run $i gives the bits of run 1"
  done
}

race_model conv546 conv 546 1,256,3,3
race_model conv449 conv 449 1,256,3,3
race_model mm37 matmul 37 37,512
race_model gemm45 gemm 45 45,512

for t in 2 4; do
  race_runs conv546 "$t" 8
  race_runs mm37 "$t" 8
done
race_runs conv449 3 6
race_runs gemm45 2 6

# kiln verify: the tile verifier's race check, the one- and N-thread cpu layers, the second run
for name in conv546 mm37 gemm45; do
  expect 0 "verify $name at 2 threads" "$kiln" verify "$tmp/$name.onnx" --threads 2 -q
  expect_out "cpu \(2 threads\) .* ok" "verify $name: a 2-thread cpu layer that passes"
  expect_out "every layer agrees" "verify $name: every layer agrees"
done
expect 0 "verify conv546 at the default threads" "$kiln" verify "$tmp/conv546.onnx" -q
expect_out "every layer agrees" "verify conv546 (default threads): every layer agrees"

# a compiled artifact run again and again gives the same bits
expect 0 "compile conv546 for 2 threads" "$kiln" compile "$tmp/conv546.onnx" -o "$tmp/art546" --threads 2
for i in 1 2 3 4 5 6; do
  expect 0 "artifact run $i" "$kiln" run "$tmp/art546" --input "x=$tmp/conv546.npy" \
    --output-dir "$tmp/art546.$i"
  expect_same "$tmp/art546.1/y.npy" "$tmp/art546.$i/y.npy" "artifact run $i gives the bits of run 1"
done
