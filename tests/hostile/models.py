#!/usr/bin/env python3
"""Builds hostile models for tests/hostile/*.sh with the onnx package.

  models.py names OUT.onnx [--seed N]   small MLP whose every name is hostile
  models.py list                        prints the hostile names, one repr per line
  models.py race OUT.onnx --kind conv|matmul|gemm [--m M] [--seed N]
                                        a contraction with a remainder row tile (Conv
                                        256->546 1x1 on 1x256x3x3, a 37x512 by 512x96 MatMul,
                                        a 45-row Gemm; --m: other channels or rows): its
                                        parallel schedule once raced on the scratch tile
  models.py input OUT.npy D0,D1,... [--seed N]   random float32 input of that shape

Hostile names: comment closers, quotes, backslashes, newlines, control bytes (no NUL), '..',
'/', very long, non-ASCII, format directives, shell metacharacters.
"""
import argparse
import random
import sys

HOSTILE = [
    'r */ system("touch PWNED"); /* ',
    "g\n__attribute__((constructor)) static void pwn(void){system(\"touch PWNED\");}\n//",
    "a\\\"b'c`d$(touch PWNED)",
    "../../escape",
    "/abs/path",
    "a/b",
    "a_b",
    "..",
    ".",
    "x" * 5000,
    "ctl\x01\x02\x1b[31m\x7f\r\t\v\f",
    "ünï¢ødé ✓ \u202e",
    "%s%n%d%x",
    "??/ trigraph ??=",
    "#define X 1",
    "*/",
    "/*",
    "//",
    "}\n}\nint main(){return 0;}\n{",
    " ",
    "-o",
    "--help",
]


def hostile_names(seed):
    rng = random.Random(seed)
    names = HOSTILE[:]
    rng.shuffle(names)
    return names


def build_names(out, seed):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names = hostile_names(seed)
    pick = iter(names * 4)
    uniq = {}

    def n(role):
        base = next(pick)
        k = uniq.get(base, 0)
        uniq[base] = k + 1
        return base if k == 0 else "%s#%d" % (base, k)

    x, w, b, h, y, z = (n(r) for r in ("x", "w", "b", "h", "y", "z"))
    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), w)
    B = numpy_helper.from_array(rng.standard_normal((3,)).astype(np.float32), b)
    nodes = [
        helper.make_node("Gemm", [x, w, b], [h], name=n("gemm"), transB=1, doc_string=n("doc")),
        helper.make_node("Relu", [h], [y], name=n("relu")),
        helper.make_node("Neg", [h], [z], name=n("neg")),
    ]
    g = helper.make_graph(
        nodes,
        n("graph"),
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info(z, TensorProto.FLOAT, [2, 3])],
        [W, B],
        doc_string=n("gdoc"),
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name=n("producer"), doc_string=n("mdoc"))
    helper.set_model_props(m, {n("key"): n("value")})
    onnx.checker.check_model(m)
    onnx.save(m, out)


def build_race(out, kind, seed, m=0):
    """One contraction whose rows do not split into whole register tiles of 8: 546 output
    channels (68*8 + 2) of a 1x1 Conv, or 37 rows (4*8 + 5) of a MatMul; m overrides the
    channels (conv) or rows (matmul, gemm)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    if kind == "conv":
        co = m or 546
        W = numpy_helper.from_array(
            rng.standard_normal((co, 256, 1, 1)).astype(np.float32) * 0.1, "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv_%d" % co)
        xs, ys = [1, 256, 3, 3], [1, co, 3, 3]
    elif kind == "gemm":
        rows = m or 45
        W = numpy_helper.from_array(rng.standard_normal((96, 512)).astype(np.float32) * 0.1, "w")
        B = numpy_helper.from_array(rng.standard_normal((96,)).astype(np.float32), "b")
        node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm_%d" % rows, transB=1)
        g = helper.make_graph(
            [node], "race_gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 512])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 96])], [W, B])
        mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(mod)
        onnx.save(mod, out)
        return
    else:
        # 3 panels of 32 columns split worse on 2 threads than 4 row blocks: the row-block
        # loop runs on the threads and the 5-row tail after it
        W = numpy_helper.from_array(rng.standard_normal((512, 96)).astype(np.float32) * 0.1, "w")
        rows = m or 37
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="linear_%d" % rows)
        xs, ys = [rows, 512], [rows, 96]
    g = helper.make_graph(
        [node], "race_" + kind,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], [W])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, out)


def write_input(out, shape, seed):
    """A float32 .npy of the comma-separated shape, normal random data."""
    import numpy as np

    dims = [int(d) for d in shape.split(",")]
    np.save(out, np.random.default_rng(seed).standard_normal(dims).astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("list")
    p = sub.add_parser("race")
    p.add_argument("out")
    p.add_argument("--kind", choices=("conv", "matmul", "gemm"), default="conv")
    p.add_argument("--m", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("input")
    p.add_argument("out")
    p.add_argument("shape")
    p.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "race":
        build_race(a.out, a.kind, a.seed, a.m)
    elif a.cmd == "input":
        write_input(a.out, a.shape, a.seed)
    elif a.cmd == "list":
        for s in HOSTILE:
            print(repr(s))
    else:
        build_names(a.out, a.seed)


if __name__ == "__main__":
    sys.exit(main())
