# Limits found by a second hostile review: small models whose compiled code used to grow
# without bound. An elementwise op may read its operand twice (Relu is a select on a compare
# of x), and fused chains were inlined into one expression: 14 Relus made compile take 30 s
# and 760 MB, 40 never ended (2^n subtrees), and a long Add/Mul chain was an internal error
# ("expression nested too deeply", exit 1). Every fused kernel (elementwise groups, reduction
# prologues and epilogues, contraction epilogues) must compile quickly and match the
# reference interpreter.

"$PYTHON" - "$tmp" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T, numpy_helper
vi, node = helper.make_tensor_value_info, helper.make_node
d = sys.argv[1]

def save(name, nodes, inits=()):
    g = helper.make_graph(nodes, "g", [vi("x", T.FLOAT, [3, 4])], [vi("y", T.FLOAT, None)],
                          list(inits))
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              "%s/%s.onnx" % (d, name))

def chain(op, src, n, tag, last="y"):
    out = []
    for i in range(n):
        dst = last if i == n - 1 else "%s%d" % (tag, i)
        out.append(node(op, [src], [dst]))
        src = dst
    return out

save("relu40", chain("Relu", "x", 40, "a"))
save("sigmoid40", chain("Sigmoid", "x", 40, "a"))
save("redchain", chain("Relu", "x", 40, "p", "px") + [node("ReduceSum", ["px"], ["r"])] +
     chain("Relu", "r", 40, "e"))
save("softmax_pro", chain("Relu", "x", 40, "p", "px") + [node("Softmax", ["px"], ["y"])])
save("mmchain", [node("MatMul", ["x", "w"], ["r"])] + chain("Relu", "r", 40, "e"),
     [numpy_helper.from_array(np.ones((4, 4), np.float32), "w")])
nodes, src = [], "x"
for i in range(20000):
    nodes.append(node("Add" if i % 2 else "Mul", [src, "x"], ["a%d" % i]))
    src = "a%d" % i
save("deep20000", nodes + [node("Identity", [src], ["y"])])
np.save(d + "/x.npy", (np.arange(12, dtype=np.float32).reshape(3, 4) - 5) / 8)
PY

for m in relu40 sigmoid40 redchain softmax_pro mmchain deep20000; do
  HOSTILE_TIMEOUT=60 expect 0 "$m: compiles quickly" "$kiln" compile "$tmp/$m.onnx"
  expect 0 "$m: reference run" "$kiln" run "$tmp/$m.onnx" --input x="$tmp/x.npy" \
    --output-dir "$tmp/ref_$m"
  for b in cpu tile; do
    HOSTILE_TIMEOUT=60 expect 0 "$m: $b matches the reference" "$kiln" run "$tmp/$m.onnx" \
      --backend $b --input x="$tmp/x.npy" --expect y="$tmp/ref_$m/y.npy"
  done
done
# the emitted C stays linear in the chain's length
expect 0 "relu40: artifact" "$kiln" compile "$tmp/relu40.onnx" -o "$tmp/art40"
size=$(cat "$tmp"/art40/src/*.c 2>/dev/null | wc -c)
if [ "${size:-0}" -gt 0 ] && [ "$size" -lt 200000 ]; then ok; else bad "relu40: emitted C is $size bytes"; fi

# A C compiler that hangs: compile and run stop it after $KILN_CC_TIMEOUT seconds with exit 1
# (the environment failed) and a message naming the limit; they used to wait forever, silently.
unary_fixture Relu "$tmp/mlp.kiln"
printf '#!/bin/sh\nsleep 300\n' >"$tmp/slowcc"
chmod +x "$tmp/slowcc"
for cmd in "compile" "bench --iters 1 --warmup 0"; do
  HOSTILE_TIMEOUT=40 expect 1 "$cmd with a hanging C compiler" env KILN_CC_TIMEOUT=2 \
    CC="$tmp/slowcc" KILN_CACHE_DIR="$tmp/cc_cache" "$kiln" $cmd "$tmp/mlp.kiln"
  expect_err "did not finish in 2 s.*KILN_CC_TIMEOUT" "$cmd with a hanging C compiler: names the limit"
done
for v in abc 0 -5 99999999999999999999; do
  expect 1 "KILN_CC_TIMEOUT='$v'" env KILN_CC_TIMEOUT="$v" KILN_CACHE_DIR="$tmp/cc_cache2" \
    "$kiln" compile "$tmp/mlp.kiln"
  expect_err "KILN_CC_TIMEOUT" "KILN_CC_TIMEOUT='$v' is named"
done

# Kernel cache entries swapped between keys or kinds (an object where the library belongs):
# each entry's hash covers its own name, so a swapped entry is rebuilt like a damaged one
# (an unusable cache only costs time); it used to load and fail ("kernel ... missing").
"$PYTHON" -c "import numpy as np; np.save('$tmp/x24.npy', np.arange(8, dtype=np.float32).reshape(2, 4) - 3)"
expect 0 "mlp: reference" "$kiln" run "$tmp/mlp.kiln" --input x="$tmp/x24.npy" --output-dir "$tmp/ref_mlp"
for round in 1 2; do
  rm -rf "$tmp/sw_cache"
  expect 0 "swap round $round: fill the cache" env KILN_CACHE_DIR="$tmp/sw_cache" "$kiln" run \
    "$tmp/mlp.kiln" --backend cpu --input x="$tmp/x24.npy"
  o=$(ls "$tmp"/sw_cache/obj/* 2>/dev/null | head -1) l=$(ls "$tmp"/sw_cache/lib/* 2>/dev/null | head -1)
  if [ -f "$o" ] && [ -f "$l" ]; then
    ok
    if [ $round = 1 ]; then cp "$o" "$tmp/sw"; cp "$l" "$o"; cp "$tmp/sw" "$l"
    else cp "$o" "$l"; fi
  else bad "swap round $round: no obj/ and lib/ entries in the cache"; fi
  expect 0 "swap round $round: a swapped entry is rebuilt" env KILN_CACHE_DIR="$tmp/sw_cache" \
    "$kiln" run "$tmp/mlp.kiln" --backend cpu --input x="$tmp/x24.npy" --expect y="$tmp/ref_mlp/y.npy"
done
