#!/usr/bin/env python3
"""Writes a transformer-style ONNX model of about N nodes, for the compile-scaling benchmark.

Each layer is pre-norm attention and a pre-norm MLP with residuals, built from plain ONNX ops
(MatMul, Add, Mul, Sub, Div, Sqrt, ReduceMean, Transpose, Softmax, Sigmoid), 40 nodes a layer:

  LayerNorm as a ReduceMean chain (9 nodes), Q/K/V projections, Q.K^T, scale, Softmax, .V,
  output projection, residual Add; LayerNorm, MatMul+bias, a Gelu-like x*sigmoid(1.702x),
  MatMul+bias, residual Add.

Layers are added until the node count reaches N. The shapes are small (SEQ x DIM) so that the
weights stay small and the benchmark measures the compiler, not the data. Every weight is
distinct and seeded, so two runs write the same bytes.

usage: gen_transformer_graph.py N OUT.onnx [--seq S] [--dim D]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.nodes, self.inits = [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def weight(self, shape, scale=0.1):
        name = self.name("w")
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def scalar(self, value):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
        return name


def layer_norm(b, x, dim):
    mean = b.node("ReduceMean", [x], axes=[-1], keepdims=1)
    d = b.node("Sub", [x, mean])
    sq = b.node("Mul", [d, d])
    var = b.node("ReduceMean", [sq], axes=[-1], keepdims=1)
    ve = b.node("Add", [var, b.scalar(1e-5)])
    sd = b.node("Sqrt", [ve])
    n = b.node("Div", [d, sd])
    s = b.node("Mul", [n, b.weight([dim], 1.0)])
    return b.node("Add", [s, b.weight([dim])])


def attention(b, x, dim):
    h = layer_norm(b, x, dim)
    q = b.node("MatMul", [h, b.weight([dim, dim])])
    k = b.node("MatMul", [h, b.weight([dim, dim])])
    v = b.node("MatMul", [h, b.weight([dim, dim])])
    kt = b.node("Transpose", [k], perm=[1, 0])
    sc = b.node("MatMul", [q, kt])
    scs = b.node("Mul", [sc, b.scalar(1.0 / np.sqrt(dim))])
    sm = b.node("Softmax", [scs], axis=-1)
    a = b.node("MatMul", [sm, v])
    o = b.node("MatMul", [a, b.weight([dim, dim])])
    return b.node("Add", [x, o])


def mlp(b, x, dim):
    h = layer_norm(b, x, dim)
    m1 = b.node("MatMul", [h, b.weight([dim, 2 * dim])])
    b1 = b.node("Add", [m1, b.weight([2 * dim])])
    z = b.node("Mul", [b1, b.scalar(1.702)])
    sg = b.node("Sigmoid", [z])
    ge = b.node("Mul", [b1, sg])
    m2 = b.node("MatMul", [ge, b.weight([2 * dim, dim])])
    b2 = b.node("Add", [m2, b.weight([dim])])
    return b.node("Add", [x, b2])


def build(n_nodes, seq, dim):
    b = Builder(seed=n_nodes)
    x = "x"
    while len(b.nodes) < n_nodes:
        x = mlp(b, attention(b, x, dim), dim)
    y = b.node("Identity", [x])
    graph = helper.make_graph(
        b.nodes,
        f"transformer_{n_nodes}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, dim])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [seq, dim])],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nodes", type=int)
    ap.add_argument("out")
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--dim", type=int, default=16)
    a = ap.parse_args()
    if a.nodes < 1:
        ap.error("nodes must be >= 1")
    onnx.save(build(a.nodes, a.seq, a.dim), a.out)


if __name__ == "__main__":
    main()
