#!/usr/bin/env python3
"""Builds hostile models for tests/hostile/*.sh with the onnx package.

  models.py names OUT.onnx [--seed N]   small MLP whose every name is hostile
  models.py list                        prints the hostile names, one repr per line
  models.py memory KIND OUT.onnx [--n N]  a small model that describes a huge tensor
                                        (memory bombs; KIND: see MEMORY_KINDS)

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


# ---- memory bombs: small models that describe huge tensors ----
def _mem_model(nodes, inputs, outputs, inits, opset=17):
    """Not passed through onnx.checker: outputs declare no shape (Kiln infers them)."""
    from onnx import helper
    g = helper.make_graph(nodes, "bomb", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _i64(name, vals):
    import numpy as np
    from onnx import numpy_helper
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def _f32(name, vals):
    import numpy as np
    from onnx import numpy_helper
    return numpy_helper.from_array(np.array(vals, dtype=np.float32), name)


def build_memory(kind, out, n):
    """n: the huge extent (default 100000: 1e10 elements, 40 GB of f32)."""
    import onnx
    from onnx import TensorProto as T, helper
    vi = helper.make_tensor_value_info
    node = helper.make_node
    fill = helper.make_tensor("value", T.FLOAT, [1], [1.0])
    y_any = vi("y", T.FLOAT, None)  # no declared shape: Kiln infers it
    if kind == "symbatch":  # f32[N,1000,1000]: --dim N=4000 is a 16 GB arena
        m = _mem_model([node("Relu", ["x"], ["h"]), node("Neg", ["h"], ["y"])],
                       [vi("x", T.FLOAT, ["N", 1000, 1000])],
                       [vi("y", T.FLOAT, ["N", 1000, 1000])], [])
    elif kind == "constofshape":  # a constant shape [n, n]
        m = _mem_model([node("ConstantOfShape", ["s"], ["y"], value=fill)], [], [y_any],
                       [_i64("s", [n, n])])
    elif kind == "constofshape_input":  # the shape is data: known only when it runs
        m = _mem_model([node("ConstantOfShape", ["s"], ["y"], value=fill)],
                       [vi("s", T.INT64, [2])], [y_any], [])
    elif kind == "constofshape_computed":  # shape computed from constants (folded)
        m = _mem_model([node("Mul", ["a", "b"], ["s"]),
                        node("ConstantOfShape", ["s"], ["y"], value=fill)], [], [y_any],
                       [_i64("a", [n, n]), _i64("b", [1, 1])])
    elif kind == "expand":
        m = _mem_model([node("Expand", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1])], [y_any],
                       [_i64("s", [n, n])])
    elif kind == "expand_empty":  # no elements, but strides n^3 (overflow for n = 2^62)
        m = _mem_model([node("Expand", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1])], [y_any],
                       [_i64("s", [0, n, n, n])])
    elif kind == "expand_input":  # the target shape is data
        m = _mem_model([node("Expand", ["x", "s"], ["y"])],
                       [vi("x", T.FLOAT, [1]), vi("s", T.INT64, [4])], [y_any], [])
    elif kind == "tile":
        m = _mem_model([node("Tile", ["x", "r"], ["y"])], [vi("x", T.FLOAT, [2, 2])], [y_any],
                       [_i64("r", [n, n])])
    elif kind == "resize":
        m = _mem_model([node("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
                       [vi("x", T.FLOAT, [1, 1, 2, 2])], [y_any],
                       [_f32("sc", [1, 1, float(n), float(n)])])
    elif kind == "range":
        m = _mem_model([node("Range", ["a", "b", "d"], ["y"])], [], [vi("y", T.INT64, None)],
                       [_i64("a", 0), _i64("b", min(n * n, 2**63 - 1)), _i64("d", 1)])
    elif kind == "pad":
        m = _mem_model([node("Pad", ["x", "p"], ["y"])], [vi("x", T.FLOAT, [2, 2])], [y_any],
                       [_i64("p", [0, 0, n, n])])
    elif kind == "reshape":  # a target whose element count overflows
        m = _mem_model([node("Reshape", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [4])],
                       [y_any],
                       [_i64("s", [n, n, n, n])])
    elif kind == "input_dims":  # a declared input of n^4 elements
        m = _mem_model([node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [n, n, n, n])],
                       [y_any], [])
    elif kind == "value_info":  # a declared intermediate type of n^4 elements
        m = _mem_model([node("Relu", ["x"], ["h"]), node("Neg", ["h"], ["y"])],
                       [vi("x", T.FLOAT, ["N"])], [y_any], [])
        m.graph.value_info.append(vi("h", T.FLOAT, [n, n, n, n]))
    elif kind == "initializer":  # dims declared, no data
        t = onnx.TensorProto()
        t.name, t.data_type = "w", T.FLOAT
        t.dims.extend([n, n])
        m = _mem_model([node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [n, n])], [y_any],
                       [t])
    elif kind == "attention":  # Q, K, V of n rows and width 1: n^2 attention scores
        qkv = [vi(k, T.FLOAT, [1, 1, n, 1]) for k in ("q", "k", "v")]
        m = _mem_model([node("Attention", ["q", "k", "v"], ["y"])], qkv, [y_any], [], opset=23)
    elif kind == "matmul":  # a real n x n weight (4 n^2 bytes) that verification widens
        import numpy as np
        w = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
        m = _mem_model([node("MatMul", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [1, n])],
                       [vi("y", T.FLOAT, [1, n])], [_f32("w", w)])
    else:
        raise SystemExit("unknown memory kind %r (one of %s)" % (kind, ", ".join(MEMORY_KINDS)))
    onnx.save(m, out)


MEMORY_KINDS = ["symbatch", "constofshape", "constofshape_input", "constofshape_computed",
                "expand", "tile", "resize", "range", "pad", "reshape", "input_dims",
                "value_info", "initializer", "matmul", "attention", "expand_empty",
                "expand_input"]


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("list")
    p = sub.add_parser("memory")
    p.add_argument("kind", choices=MEMORY_KINDS)
    p.add_argument("out")
    p.add_argument("--n", type=int, default=100000)
    a = ap.parse_args()
    if a.cmd == "list":
        for s in HOSTILE:
            print(repr(s))
    elif a.cmd == "memory":
        build_memory(a.kind, a.out, a.n)
    else:
        build_names(a.out, a.seed)


if __name__ == "__main__":
    sys.exit(main())
