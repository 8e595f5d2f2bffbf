#!/usr/bin/env python3
"""`make bench`: Kiln against ONNX Runtime on the exported models, in the same run.

For each model, `kiln bench --backend cpu` (compile, then timed runs) and ONNX Runtime
(intra_op_num_threads as Kiln's --threads, all graph optimizations) run on the same
inputs (the model folder's test_data_set_0). The table gives both medians and the
ratio of throughputs (Kiln / ORT: above 1 means Kiln is faster). Nothing passes or
fails on time; a model that Kiln cannot compile or run is shown as an error."""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

MODELS = ["resnet50", "resnet18", "mobilenet_v2", "squeezenet1_1", "bert_tiny"]


def ort_bench(folder, threads, warmup, iters):
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    sess = ort.InferenceSession(os.path.join(folder, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    setup_ms = (time.perf_counter() - t0) * 1e3
    feeds = {}
    names = [i.name for i in sess.get_inputs()]
    for k, name in enumerate(names):
        t = onnx.TensorProto()
        with open(os.path.join(folder, "test_data_set_0", "input_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        feeds[name] = np.ascontiguousarray(numpy_helper.to_array(t))
    for _ in range(warmup):
        sess.run(None, feeds)
    times = []
    start = time.perf_counter()
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    total = time.perf_counter() - start
    return {"setup_ms": setup_ms, "median_ms": statistics.median(times), "min_ms": min(times),
            "throughput": iters / total}


def kiln_bench(kiln, folder, threads, warmup, iters, backend):
    cmd = [kiln, "bench", folder, "--backend", backend, "--threads", str(threads),
           "--warmup", str(warmup), "--iters", str(iters), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if l]
        return {"error": lines[-1] if lines else "exit %d" % p.returncode}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kiln", default="build/kiln")
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--only", nargs="*", help="model names (default: the five exported models)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    names = args.only or MODELS
    rows = []
    print("Kiln (--backend %s) vs ONNX Runtime %s, %d threads, %d warmup + %d timed runs"
          % (args.backend, ort_version(), args.threads, args.warmup, args.iters))
    for name in names:
        folder = os.path.join(args.models, name)
        if not glob.glob(os.path.join(folder, "test_data_set_0", "input_*.pb")):
            rows.append({"model": name, "kiln": {"error": "not exported (make models)"}, "ort": {}})
            continue
        k = kiln_bench(args.kiln, folder, args.threads, args.warmup, args.iters, args.backend)
        o = ort_bench(folder, args.threads, args.warmup, args.iters)
        rows.append({"model": name, "kiln": k, "ort": o})
        print_row(rows[-1], header=len(rows) == 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def ort_version():
    try:
        import onnxruntime
        return onnxruntime.__version__
    except ImportError:
        return "(not installed)"


def print_row(r, header):
    if header:
        print("%-14s %12s %12s %12s %10s %10s" % ("model", "kiln compile", "kiln median",
                                                   "ort median", "kiln/ort", "kiln ips"))
    k, o = r["kiln"], r["ort"]
    if "error" in k:
        print("%-14s %12s %12s %10.3f ms   kiln error: %s" % (r["model"], "-", "-",
                                                               o.get("median_ms", 0), k["error"]))
    else:
        print("%-14s %9.0f ms %9.3f ms %9.3f ms %9.3gx %10.1f" % (
            r["model"], k["compile_ms"], k["median_ms"], o["median_ms"],
            k["throughput"] / o["throughput"], k["throughput"]))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
