#!/usr/bin/env python3
"""`make demo`: build a small model, compile it for the CPU, run it, check the result.

Needs nothing but Python's standard library and a C compiler: the model (a two-layer
MLP with a softmax head, random weights from a fixed seed) is written as ONNX protobuf
by a few lines of encoder below, and the expected output is computed here in double
precision and stored as a TensorProto. Kiln runs the model with its reference
interpreter (`kiln run`), compiles it to C kernels (`kiln compile`), runs the compiled
form and a standalone C program built from it, checks every result against the
expected output, and times the compiled form against the interpreter (`kiln bench`)."""

import argparse
import json
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

    with open(os.path.join(args.out, "x.npy"), "wb") as f:
        f.write(npy_f32([1, n_in], x[0]))
    subprocess.run([args.kiln, "info", paths["model.onnx"]], check=True)
    expect = ["--expect", "y=" + paths["y_expected.pb"], "--rtol", "1e-5", "--atol", "1e-6"]
    steps = [
        ("the reference interpreter matches the double-precision reference",
         ["run", paths["model.onnx"], "--input", "x=" + paths["x.pb"]] + expect),
        ("compiled for the CPU (kernels, memory plan, standalone C)",
         ["compile", paths["model.onnx"], "-o", os.path.join(args.out, "compiled"), "--report",
          "--emit-c", os.path.join(args.out, "standalone")]),
        ("the compiled model matches the reference",
         ["run", os.path.join(args.out, "compiled"), "--input", "x=" + paths["x.pb"]] + expect),
    ]
    for what, cmd in steps:
        if not kiln(args.kiln, cmd):
            return 1
        print("demo: ok: " + what)
    if not standalone(args, expect):
        return 1
    return speedup(args.kiln, paths["model.onnx"])


def kiln(exe, cmd):
    print("demo: $ kiln " + " ".join(cmd))
    sys.stdout.flush()
    rc = subprocess.run([exe] + cmd).returncode
    if rc != 0:
        print("demo: FAILED (kiln %s exited with %d)" % (cmd[0], rc))
    return rc == 0


def npy_f32(dims, values):
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % \
        "".join("%d, " % d for d in dims)
    head += " " * ((64 - (10 + len(head) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + \
        struct.pack("<%df" % len(values), *values)


def standalone(args, expect):
    """Builds the standalone C program with only the C compiler and checks its output."""
    folder = os.path.join(args.out, "standalone")
    cc = os.environ.get("CC", "cc")
    build = [cc, "-O2", "main.c", "model.c", "-lm", "-o", "model_main"]
    print("demo: $ (cd %s && %s)" % (folder, " ".join(build)))
    if subprocess.run(build, cwd=folder).returncode != 0:
        print("demo: FAILED (the standalone C does not build)")
        return False
    out_dir = os.path.join(folder, "outputs")
    os.makedirs(out_dir, exist_ok=True)
    run = [os.path.join(folder, "model_main"), "-w", os.path.join(folder, "model.bin"), "-o",
           out_dir, os.path.join(args.out, "x.npy")]
    if subprocess.run(run).returncode != 0:
        print("demo: FAILED (the standalone program failed)")
        return False
    check = ["run", os.path.join(args.out, "model.onnx"), "--input",
             "x=" + os.path.join(args.out, "x.pb"), "--expect",
             "y=" + os.path.join(out_dir, "y.npy"), "--rtol", "1e-5", "--atol", "1e-6"]
    if not kiln(args.kiln, check):
        return False
    print("demo: ok: the standalone C program (cc main.c model.c -lm) matches the reference")
    return True


def bench(exe, model, backend):
    p = subprocess.run([exe, "bench", model, "--backend", backend, "--iters", "200",
                        "--warmup", "20", "--threads", "1", "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr.strip())
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def speedup(exe, model):
    ref, cpu = bench(exe, model, "interp"), bench(exe, model, "cpu")
    if not ref or not cpu:
        print("demo: FAILED (kiln bench)")
        return 1
    print("demo: median latency: interpreter %.4f ms, compiled %.4f ms (compile %.0f ms): "
          "%.1fx faster" % (ref["median_ms"], cpu["median_ms"], cpu["compile_ms"],
                            ref["median_ms"] / cpu["median_ms"]))
    print("demo: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
