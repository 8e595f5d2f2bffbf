#!/usr/bin/env python3
"""`make demo`: build a small model, run it with Kiln, check the result.

Needs nothing but Python's standard library: the model (a two-layer MLP with a
softmax head, random weights from a fixed seed) is written as ONNX protobuf by a
few lines of encoder below, and the expected output is computed here in double
precision and stored as a TensorProto. Kiln runs the model (`kiln run`) and
compares its output with the expected one (`--expect`)."""

import argparse
import math
import os
import random
import struct
import subprocess
import sys
import time


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, wire, payload):
    if wire == 0:
        return varint(num << 3) + varint(payload)
    return varint((num << 3) | 2) + varint(len(payload)) + payload


def s(num, text):
    return field(num, 2, text.encode())


def tensor(name, dims, values):
    """TensorProto (float32): dims=1, data_type=2, name=8, raw_data=9."""
    raw = struct.pack("<%df" % len(values), *values)
    return b"".join(field(1, 0, d) for d in dims) + field(2, 0, 1) + s(8, name) + field(9, 2, raw)


def value_info(name, dims):
    dim_msgs = b"".join(field(1, 2, field(1, 0, d)) for d in dims)  # Dimension.dim_value
    tensor_type = field(1, 0, 1) + field(2, 2, dim_msgs)  # elem_type, shape
    return s(1, name) + field(2, 2, field(1, 2, tensor_type))  # name, type.tensor_type


def node(op, inputs, outputs, name, attrs=b""):
    return b"".join(s(1, i) for i in inputs) + b"".join(s(2, o) for o in outputs) + \
        s(3, name) + s(4, op) + attrs


def int_attr(name, v):
    return field(5, 2, s(1, name) + field(3, 0, v) + field(20, 0, 2))  # type INT


def model_bytes(weights, sizes):
    n_in, n_hidden, n_out = sizes
    nodes = [
        node("Gemm", ["x", "w1", "b1"], ["h"], "fc1", int_attr("transB", 1)),
        node("Relu", ["h"], ["r"], "relu1"),
        node("Gemm", ["r", "w2", "b2"], ["logits"], "fc2", int_attr("transB", 1)),
        node("Softmax", ["logits"], ["y"], "softmax", int_attr("axis", -1)),
    ]
    inits = [tensor(k, dims, vals) for k, (dims, vals) in weights.items()]
    graph = b"".join(field(1, 2, n) for n in nodes) + s(2, "demo_mlp") + \
        b"".join(field(5, 2, t) for t in inits) + \
        field(11, 2, value_info("x", [1, n_in])) + field(12, 2, value_info("y", [1, n_out]))
    opset = field(8, 2, s(1, "") + field(2, 0, 17))
    return field(1, 0, 8) + s(2, "kiln-demo") + field(7, 2, graph) + opset


def reference(x, weights):
    def gemm(a, w, b):  # a [m,k], w [n,k] (transB), b [n]
        return [[sum(ai * wi for ai, wi in zip(row, w[j])) + b[j] for j in range(len(w))]
                for row in a]

    def mat(name):
        dims, vals = weights[name]
        return [vals[i * dims[1]:(i + 1) * dims[1]] for i in range(dims[0])]

    h = gemm(x, mat("w1"), weights["b1"][1])
    r = [[max(v, 0.0) for v in row] for row in h]
    logits = gemm(r, mat("w2"), weights["b2"][1])
    out = []
    for row in logits:
        m = max(row)
        e = [math.exp(v - m) for v in row]
        out.append([v / sum(e) for v in e])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rnd = random.Random(7)
    sizes = (64, 128, 10)
    n_in, n_hidden, n_out = sizes
    f32 = lambda v: struct.unpack("<f", struct.pack("<f", v))[0]  # round like the file will
    weights = {
        "w1": ([n_hidden, n_in], [f32(rnd.gauss(0, 1 / math.sqrt(n_in))) for _ in range(n_hidden * n_in)]),
        "b1": ([n_hidden], [f32(rnd.uniform(-0.1, 0.1)) for _ in range(n_hidden)]),
        "w2": ([n_out, n_hidden], [f32(rnd.gauss(0, 1 / math.sqrt(n_hidden))) for _ in range(n_out * n_hidden)]),
        "b2": ([n_out], [f32(rnd.uniform(-0.1, 0.1)) for _ in range(n_out)]),
    }
    x = [[f32(rnd.uniform(-1, 1)) for _ in range(n_in)]]
    y = reference(x, weights)

    os.makedirs(args.out, exist_ok=True)
    paths = {k: os.path.join(args.out, k) for k in ("model.onnx", "x.pb", "y_expected.pb")}
    with open(paths["model.onnx"], "wb") as f:
        f.write(model_bytes(weights, sizes))
    with open(paths["x.pb"], "wb") as f:
        f.write(tensor("x", [1, n_in], x[0]))
    with open(paths["y_expected.pb"], "wb") as f:
        f.write(tensor("y", [1, n_out], [f32(v) for v in y[0]]))
    print("demo: wrote a %d-%d-%d MLP with softmax to %s" % (n_in, n_hidden, n_out, paths["model.onnx"]))

    subprocess.run([args.kiln, "info", paths["model.onnx"]], check=True)
    cmd = [args.kiln, "run", paths["model.onnx"], "--input", "x=" + paths["x.pb"],
           "--output-dir", os.path.join(args.out, "outputs"),
           "--expect", "y=" + paths["y_expected.pb"], "--rtol", "1e-5", "--atol", "1e-6"]
    print("demo: $ " + " ".join(cmd))
    t0 = time.time()
    rc = subprocess.run(cmd).returncode
    if rc != 0:
        print("demo: FAILED (kiln run exited with %d)" % rc)
        return 1
    print("demo: Kiln's interpreter matches the double-precision reference "
          "(rtol 1e-5, atol 1e-6) in %.2f s" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
