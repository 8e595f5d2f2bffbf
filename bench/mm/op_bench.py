#!/usr/bin/env python3
"""Contraction micro benchmark: GFLOP/s of Kiln's compiled Conv / MatMul / Gemm kernels
against ONNX Runtime on the same single-op models, measured in the same run.

  .venv/bin/python bench/mm/op_bench.py [--kiln build/kiln] [--threads 2] [--only NAME]

Each case is a one-node ONNX model (constant weights, bias, a Relu epilogue for the convs)
written to a temporary folder; ORT runs it with intra_op_num_threads = threads, Kiln with
`kiln bench --backend cpu --threads N --json`. Prints one line per case and the geometric
mean of the ratios (Kiln / ORT throughput)."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name, kind, params; conv: (C, H, W, Co, k, stride, pad, group); matmul: (batch dims, M, K, N)
CASES = [
    ("r50_conv1_7x7s2", "conv", (3, 224, 224, 64, 7, 2, 3, 1)),
    ("r50_l1_1x1_64", "conv", (64, 56, 56, 64, 1, 1, 0, 1)),
    ("r50_l1_3x3_64", "conv", (64, 56, 56, 64, 3, 1, 1, 1)),
    ("r50_l1_1x1_256", "conv", (64, 56, 56, 256, 1, 1, 0, 1)),
    ("r50_l2_3x3_128s2", "conv", (128, 56, 56, 128, 3, 2, 1, 1)),
    ("r50_l3_3x3_256", "conv", (256, 14, 14, 256, 3, 1, 1, 1)),
    ("r50_l3_1x1_1024", "conv", (256, 14, 14, 1024, 1, 1, 0, 1)),
    ("r50_l4_3x3_512", "conv", (512, 7, 7, 512, 3, 1, 1, 1)),
    ("r50_l4_1x1_2048", "conv", (512, 7, 7, 2048, 1, 1, 0, 1)),
    ("mnv2_dw_3x3_144", "conv", (144, 56, 56, 144, 3, 1, 1, 144)),
    ("r50_fc_gemm", "gemm", ((), 1, 2048, 1000)),
    ("bert_linear", "matmul", ((1,), 32, 128, 128)),
    ("bert_ffn", "matmul", ((1,), 32, 128, 512)),
    ("bert_attn_qk", "matmul_nc", ((1, 2), 32, 64, 32)),
    ("square_512", "matmul", ((), 512, 512, 512)),
]


def conv_model(C, H, W, Co, k, s, p, g):
    rng = np.random.default_rng(0)
    w = rng.uniform(-0.1, 0.1, (Co, C // g, k, k)).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, (Co,)).astype(np.float32)
    Ho, Wo = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[p] * 4, strides=[s, s], group=g),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, H, W])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, Co, Ho, Wo])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    flops = 2.0 * Co * Ho * Wo * (C // g) * k * k
    return graph, flops


def matmul_model(kind, batch, M, K, N):
    rng = np.random.default_rng(0)
    inits, inputs = [], [helper.make_tensor_value_info("a", TensorProto.FLOAT, [*batch, M, K])]
    if kind == "matmul_nc":
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [*batch, K, N]))
    else:
        inits.append(numpy_helper.from_array(rng.uniform(-0.1, 0.1, (K, N)).astype(np.float32), "b"))
    if kind == "gemm":
        inits.append(numpy_helper.from_array(rng.uniform(-0.1, 0.1, (N,)).astype(np.float32), "c"))
        node = helper.make_node("Gemm", ["a", "b", "c"], ["y"])
    else:
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
    graph = helper.make_graph([node], kind, inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*batch, M, N])],
                              inits)
    return graph, 2.0 * math.prod(batch) * M * N * K


def ort_ms(path, threads, iters):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.random.default_rng(1).uniform(-1, 1, [d for d in i.shape]).astype(np.float32)
             for i in sess.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)
    best = float("inf")
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        best = min(best, (time.perf_counter() - t) * 1e3)
    return best


def kiln_ms(kiln, path, threads, iters):
    out = subprocess.run([kiln, "bench", path, "--backend", "cpu", "--threads", str(threads),
                          "--iters", str(iters), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "kiln failed")
    return json.loads(out.stdout.strip().splitlines()[-1])["min_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/kiln")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    ratios = []
    print(f"{'case':20s} {'GFLOP':>7s} {'kiln ms':>9s} {'ORT ms':>9s} {'kiln GF/s':>10s} "
          f"{'ORT GF/s':>9s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, prm in CASES:
            if a.only and a.only not in name:
                continue
            graph, flops = conv_model(*prm) if kind == "conv" else matmul_model(kind, *prm)
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            o = ort_ms(path, a.threads, a.iters)
            try:
                k = kiln_ms(a.kiln, path, a.threads, a.iters)
            except RuntimeError as e:
                print(f"{name:20s} kiln failed: {e}")
                continue
            ratios.append(o / k)
            print(f"{name:20s} {flops / 1e9:7.3f} {k:9.3f} {o:9.3f} {flops / k / 1e6:10.1f} "
                  f"{flops / o / 1e6:9.1f} {o / k:6.2f}", flush=True)
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean of kiln/ORT throughput: {gm:.2f} over {len(ratios)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
