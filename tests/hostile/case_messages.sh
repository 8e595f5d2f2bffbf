# Messages for common slips: each names what is wrong in the user's terms (the file, the
# value, the dim), and exits 2. Short external data, a text IR file with another extension,
# other text given as a model, empty files, a zero extent from --dim, an input of the wrong
# element type.

# --- short external data: the numbers say what is short ---
model short_external "$tmp/short"
for cmd in info compile; do
  expect 2 "short external data: $cmd" "$kiln" "$cmd" "$tmp/short/model.onnx"
  expect_err "'weights.bin' has 3000 bytes: the tensor needs 4000 bytes from offset 0, 1000 are missing" \
    "short external data: $cmd says how much is missing"
  expect_err "tensor 'w'" "short external data: $cmd names the tensor"
done

# --- text IR files whatever their extension; other text is not a protobuf ---
model conv "$tmp/conv.onnx" --mode batch
"$kiln" print --full "$tmp/conv.onnx" >"$tmp/conv.kiln" 2>/dev/null
"$PYTHON" -c "import numpy as np; np.save('$tmp/x2.npy', np.ones((2, 3, 8, 8), np.float32)); np.save('$tmp/x0.npy', np.ones((0, 3, 8, 8), np.float32)); np.save('$tmp/xi.npy', np.ones((1, 3, 8, 8), np.int64))"
for name in model.txt model.onnx model noext.ir; do
  { printf '# written by kiln print\n\n'; cat "$tmp/conv.kiln"; } >"$tmp/$name"
  expect 0 "text IR named $name: info" "$kiln" info "$tmp/$name"
  expect 0 "text IR named $name: run" "$kiln" run "$tmp/$name" --input pixels="$tmp/x2.npy"
  expect_out "f32\[2,4,8,8\]" "text IR named $name: runs the model"
done
printf 'name,value\nalpha,1\n' >"$tmp/table.txt"
cp "$tmp/table.txt" "$tmp/table.onnx"
printf '{"graph": "@g"}\n' >"$tmp/json.onnx"
for f in table.txt table.onnx json.onnx; do
  expect 2 "text $f: not a model" "$kiln" info "$tmp/$f"
  expect_err "not an ONNX model: the file is text" "text $f: says the file is text"
  if grep -qi "wire type" "$tmp/err"; then bad "text $f: a protobuf wire-type error"; else ok; fi
done
head -c 300 /dev/urandom >"$tmp/noise.onnx"
printf '\001' | cat - "$tmp/noise.onnx" >"$tmp/noise2.onnx"
expect 2 "binary noise: bad input" "$kiln" info "$tmp/noise2.onnx"

# --- empty files say they are empty ---
: >"$tmp/empty.pb"
: >"$tmp/empty.onnx"
expect 2 "empty .pb input" "$kiln" run "$tmp/conv.onnx" --input pixels="$tmp/empty.pb"
expect_err "empty\.pb: the file is empty" "empty .pb input: says the file is empty"
for cmd in info compile; do
  expect 2 "empty model: $cmd" "$kiln" "$cmd" "$tmp/empty.onnx"
  expect_err "empty\.onnx: the file is empty" "empty model: $cmd says the file is empty"
done

# --- a zero extent: empty tensors compile to kernels that do nothing ---
expect 0 "--dim N=0: compiles" "$kiln" compile "$tmp/conv.onnx" --dim N=0 --report
expect_out " 0 fallback steps" "--dim N=0: nothing falls back"
grep -q "no lowering" "$tmp/out" "$tmp/err" && bad "--dim N=0: 'no lowering' in the report" || ok
for backend in cpu tile interp; do
  expect 0 "empty batch on $backend" "$kiln" run "$tmp/conv.onnx" --backend "$backend" \
    --input pixels="$tmp/x0.npy"
  expect_out "f32\[0,4,8,8\]" "empty batch on $backend: empty output"
done
expect 0 "--dim N=0: artifact" "$kiln" compile "$tmp/conv.onnx" --dim N=0 -o "$tmp/art0"
expect 0 "--dim N=0: artifact runs" "$kiln" run "$tmp/art0" --input pixels="$tmp/x0.npy"

# empty reductions (K=0): the reference kernels say why they run, and agree with the
# interpreter (sums 0, max -inf, an empty softmax)
model reductions "$tmp/red.onnx"
"$PYTHON" -c "import numpy as np; np.save('$tmp/a0.npy', np.ones((2, 0), np.float32)); np.save('$tmp/b0.npy', np.ones((0, 3), np.float32))"
expect 0 "--dim K=0 reductions: compile" "$kiln" compile "$tmp/red.onnx" --dim K=0 --report
# (with --report the fallbacks are listed once, in the report on stdout)
grep -qE "input 'a' is empty \(a zero extent\)" "$tmp/out" "$tmp/err" && ok ||
  bad "--dim K=0 reductions: the fallback says the input is empty"
grep -q "no lowering" "$tmp/out" "$tmp/err" && bad "--dim K=0 reductions: 'no lowering' in the report" || ok
for backend in interp cpu tile; do
  expect 0 "empty reductions on $backend" "$kiln" run "$tmp/red.onnx" --backend "$backend" \
    --input a="$tmp/a0.npy" --input b="$tmp/b0.npy" --output-dir "$tmp/red_$backend"
done
for o in y s mx sm; do
  for backend in cpu tile; do
    expect_same "$tmp/red_interp/$o.npy" "$tmp/red_$backend/$o.npy" "empty reductions: $o on $backend"
  done
done

# --- an input of the wrong element type: the message names the input and its type ---
model conv "$tmp/conv_i64.onnx" --mode i64
for cmd in info compile; do
  expect 2 "i64 input into a Conv: $cmd" "$kiln" "$cmd" "$tmp/conv_i64.onnx"
  expect_err "X must be a float tensor, but it is the graph input 'pixels' \(i64\[1,3,8,8\]\)" \
    "i64 input into a Conv: $cmd names the input and its type"
done
"$PYTHON" - "$tmp/conv_i64.onnx" "$tmp/conv_i64_untyped.onnx" <<'EOF'
import sys, onnx
m = onnx.load(sys.argv[1])
del m.graph.value_info[:]
t = m.graph.output[0].type.tensor_type
t.elem_type = 0
t.ClearField("shape")
onnx.save(m, sys.argv[2])
EOF
expect 2 "i64 input into a Conv, output untyped: run" "$kiln" run "$tmp/conv_i64_untyped.onnx" \
  --input pixels="$tmp/xi.npy"
expect_err "graph input 'pixels' \(i64\[1,3,8,8\]\)" "i64 input, output untyped: run names the input"
