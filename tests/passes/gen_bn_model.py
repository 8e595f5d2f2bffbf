"""Writes OUT/cnn_bn/{model.onnx,test_data_set_0}: a small CNN whose BatchNormalization
nodes are not folded (Conv+BN, grouped Conv+BN, Gemm with alpha/beta + BN), with the
expected output computed by ONNX Runtime. Exported PyTorch models arrive with their
BatchNorms already folded, so this is the real-model check of the bnfold pass.

    python gen_bn_model.py OUT
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def const(name, a):
    return numpy_helper.from_array(a.astype(np.float32), name)


def bn_params(rng, tag, n):
    return [const("s" + tag, rng.uniform(0.5, 2, n)), const("o" + tag, rng.normal(size=n)),
            const("m" + tag, rng.normal(size=n)), const("v" + tag, rng.uniform(0.1, 2, n))]


def bn(x, tag, y, **kw):
    return helper.make_node("BatchNormalization", [x, "s" + tag, "o" + tag, "m" + tag, "v" + tag],
                            [y], **kw)


def main(out):
    rng = np.random.default_rng(0)
    inits = [const("w1", rng.normal(size=(8, 3, 3, 3)) * 0.3), const("b1", rng.normal(size=8)),
             const("w2", rng.normal(size=(8, 1, 3, 3)) * 0.3),
             const("gw", rng.normal(size=(5, 8)) * 0.3), const("gb", rng.normal(size=5))]
    inits += bn_params(rng, "1", 8) + bn_params(rng, "2", 8) + bn_params(rng, "3", 5)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        bn("c1", "1", "n1", epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], group=8, pads=[1, 1, 1, 1]),
        bn("c2", "2", "n2"),
        helper.make_node("GlobalAveragePool", ["n2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "gw", "gb"], ["g"], transB=1, alpha=0.7, beta=0.3),
        bn("g", "3", "y"),
    ]
    graph = helper.make_graph(nodes, "cnn_bn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    case = os.path.join(out, "cnn_bn")
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(case, "model.onnx"))
    x = rng.normal(size=(2, 3, 8, 8)).astype(np.float32)
    y = ort.InferenceSession(os.path.join(case, "model.onnx")).run(None, {"x": x})[0]
    for name, a in (("input_0", x), ("output_0", y)):
        with open(os.path.join(case, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
