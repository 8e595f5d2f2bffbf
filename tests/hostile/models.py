#!/usr/bin/env python3
"""Builds hostile models for tests/hostile/*.sh with the onnx package.

  models.py names OUT.onnx [--seed N]   small MLP whose every name is hostile
  models.py list                        prints the hostile names, one repr per line
  models.py declared OUT.onnx --mode M  an MLP whose value_info and outputs declare types:
                                        sym (exporter symbols on static dims), infer (as
                                        onnx.shape_inference writes them, dims renamed to
                                        'unk__N'), static / dtype / rank (a contradiction),
                                        datadep (NonZero's output declared [1,2])
  models.py detector OUT.onnx --mode M  an SSD-like tail: L2 norm, Shape -> ReduceProd ->
                                        Equal -> If whose branches read outer values; infer:
                                        after onnx.shape_inference, dims renamed to symbols;
                                        plain: as exported
  models.py conv OUT.onnx --mode M      a Conv model: batch (symbolic batch 'N'), i64 (an
                                        i64 input feeding the Conv)
  models.py short_external DIR          DIR/model.onnx whose external weights file is short
  models.py reductions OUT.onnx         MatMul and reductions over a symbolic extent 'K'

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



def _symbolize(model, prefix):
    """Renames every dim of value_info and graph outputs to a symbol, as exporters and
    onnx.shape_inference leave them ('unk__N', 'Gemmoutput_dim_0')."""
    k = 0
    for vi in list(model.graph.value_info) + list(model.graph.output):
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            d.dim_param = "%s%d" % (prefix, k)
            k += 1


def build_declared(out, seed, mode):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names = hostile_names(seed)
    x, h, y, w = names[0], names[1] + "#h", names[2] + "#y", names[3] + "#w"
    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), w)
    nodes = [
        helper.make_node("Relu", [x], [h], name="Relu_0"),
        helper.make_node("Gemm", [h, w], [y], name="Gemm_1", transB=1),
    ]
    out_dims = ["Gemmoutput_dim_0", 10]
    vi_dims = ["unk__7", "unk__8"]
    vi_type = TensorProto.FLOAT
    if mode == "static":
        vi_dims = [3, 16]
    elif mode == "dtype":
        vi_type = TensorProto.INT64
        vi_dims = [2, 16]
    elif mode == "rank":
        vi_dims = [32]
    g = helper.make_graph(
        nodes, "declared",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_dims)], [W],
        value_info=[helper.make_tensor_value_info(h, vi_type, vi_dims)])
    if mode == "datadep":  # a data-dependent value (NonZero) declared with a static shape
        nodes = [helper.make_node("NonZero", [x], [h], name="NonZero_0"),
                 helper.make_node("Neg", [h], [y], name="Neg_1")]
        g = helper.make_graph(
            nodes, "declared", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [6])],
            [helper.make_tensor_value_info(y, TensorProto.INT64, [1, 2])], [],
            value_info=[helper.make_tensor_value_info(h, TensorProto.INT64, [1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    if mode == "infer":
        del m.graph.value_info[:]
        m = onnx.shape_inference.infer_shapes(m)
        _symbolize(m, "unk__")
    onnx.save(m, out)


def build_detector(out, seed, mode):
    """The tail of an SSD-like detector: an L2 norm of features (ReduceL2 -> Clip ->
    Expand -> Div), then Shape -> ReduceProd -> Equal -> Cast -> If whose branches read
    values of the outer graph, as torchvision's batched NMS exports; after
    onnx.shape_inference, every intermediate value declared with symbolic dims."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    f32 = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array(1e-12, np.float32), "eps"),
        numpy_helper.from_array(rng.random((1, 8, 1, 1)).astype(np.float32), "scale"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([-1, 4], np.int64), "box_shape"),
    ]
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["empty"],
                          value=numpy_helper.from_array(np.zeros((0,), np.float32)))],
        "then_branch", [], [helper.make_tensor_value_info("empty", f32, None)])
    else_g = helper.make_graph(
        [helper.make_node("ReduceMax", ["boxes"], ["max_coordinate"], keepdims=0),
         helper.make_node("Add", ["boxes", "max_coordinate"], ["shifted"]),
         helper.make_node("ReduceMax", ["shifted"], ["keep"], axes=[1], keepdims=0)],
        "else_branch", [], [helper.make_tensor_value_info("keep", f32, None)])
    nodes = [
        helper.make_node("Relu", ["features"], ["feat"]),
        helper.make_node("ReduceL2", ["feat"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Clip", ["norm", "eps", ""], ["clipped"]),
        helper.make_node("Shape", ["feat"], ["feat_shape"]),
        helper.make_node("Expand", ["clipped", "feat_shape"], ["expanded"]),
        helper.make_node("Div", ["feat", "expanded"], ["normed"]),
        helper.make_node("Mul", ["normed", "scale"], ["scaled"]),
        helper.make_node("Reshape", ["scaled", "box_shape"], ["boxes"]),
        helper.make_node("Shape", ["boxes"], ["onnx::ReduceProd_4095"]),
        helper.make_node("ReduceProd", ["onnx::ReduceProd_4095"], ["onnx::Equal_4096"],
                         keepdims=0),
        helper.make_node("Equal", ["onnx::Equal_4096", "zero"], ["onnx::Cast_4097"]),
        helper.make_node("Cast", ["onnx::Cast_4097"], ["onnx::If_4098"], to=TensorProto.BOOL),
        helper.make_node("If", ["onnx::If_4098"], ["kept"], name="If_3478",
                         then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "detector", [helper.make_tensor_value_info("features", f32, [1, 8, 6, 6])],
        [helper.make_tensor_value_info("scaled", f32, [1, 8, 6, 6]),
         helper.make_tensor_value_info("kept", f32, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    if mode == "infer":
        m = onnx.shape_inference.infer_shapes(m)
        _symbolize(m, "unk__")
    onnx.save(m, out)


def build_conv(out, seed, mode):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    xt = TensorProto.INT64 if mode == "i64" else TensorProto.FLOAT
    batch = "N" if mode == "batch" else 1
    nodes = [helper.make_node("Conv", ["pixels", "W"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node("Relu", ["c"], ["y"], name="relu0")]
    g = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("pixels", xt, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], [W])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out)



def build_reductions(out, seed):
    """MatMul, ReduceSum, ReduceMax and Softmax over a symbolic extent 'K' (bound to 0: empty
    reductions)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    f32 = TensorProto.FLOAT
    ax = numpy_helper.from_array(np.array([1], np.int64), "ax")
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]),
             helper.make_node("ReduceSum", ["a", "ax"], ["s"], keepdims=0),
             helper.make_node("ReduceMax", ["a", "ax"], ["mx"], keepdims=0),
             helper.make_node("Softmax", ["a"], ["sm"], axis=1),
             helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(
        nodes, "reductions",
        [helper.make_tensor_value_info("a", f32, [2, "K"]),
         helper.make_tensor_value_info("b", f32, ["K", 3])],
        [helper.make_tensor_value_info(o, f32, None) for o in ["y", "s", "mx", "sm"]], [ax])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), out)

def build_short_external(out_dir, seed):
    import os

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((1000,)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "ext", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1000])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    with open(os.path.join(out_dir, "weights.bin"), "r+b") as f:
        f.truncate(3000)  # 1000 bytes short

def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("list")
    for cmd, modes in (("declared", ["sym", "infer", "static", "dtype", "rank", "datadep"]),
                       ("detector", ["infer", "plain"]), ("conv", ["batch", "i64"]),
                       ("short_external", None), ("reductions", None)):
        p = sub.add_parser(cmd)
        p.add_argument("out")
        p.add_argument("--seed", type=int, default=0)
        if modes:
            p.add_argument("--mode", choices=modes, default=modes[0])
    a = ap.parse_args()
    if a.cmd == "list":
        for s in HOSTILE:
            print(repr(s))
    elif a.cmd == "declared":
        build_declared(a.out, a.seed, a.mode)
    elif a.cmd == "detector":
        build_detector(a.out, a.seed, a.mode)
    elif a.cmd == "conv":
        build_conv(a.out, a.seed, a.mode)
    elif a.cmd == "reductions":
        build_reductions(a.out, a.seed)
    elif a.cmd == "short_external":
        build_short_external(a.out, a.seed)
    else:
        build_names(a.out, a.seed)


if __name__ == "__main__":
    sys.exit(main())
