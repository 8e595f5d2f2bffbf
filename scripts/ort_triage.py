"""Triage of a disagreement between ONNX Runtime and Kiln's reference: which side is right?

usage: .venv/bin/python scripts/ort_triage.py CASE_DIR [--kiln build/kiln] [--rtol R]

CASE_DIR holds model.onnx and input_<i>.pb (a case written by `kiln fuzz` or `kiln verify`).
Every node output of the main graph is made a model output, and the model is evaluated by
  truth   onnx.reference.ReferenceEvaluator (ONNX's own numpy implementation, independent of
          both) on the model converted to float64: float inputs, initializers, constants and
          the float types of value_info and Cast targets become double;
  ort     onnxruntime (CPU, ORT_ENABLE_ALL) and ort-noopt (ORT_DISABLE_ALL);
  kiln    `kiln run` (the reference interpreter, in the model's dtypes), when --kiln exists.
Each value prints its distance to the truth per side in units of the dtype floor
(atol + rtol*|truth|: f32 1e-5 + 1.3e-6, f16 1e-5 + 1e-3, bf16 1e-5 + 1.6e-2). The first node
where one side leaves the truth while the other stays is named, and a verdict is printed:
"ORT's fault", "Kiln's fault", "both off" or "neither" (both near the truth: Kiln's error
bound was too tight or the inputs sit on a discontinuity). Exit 0; 2 on bad usage.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
FLOOR = {TensorProto.FLOAT: (1e-5, 1.3e-6), TensorProto.FLOAT16: (1e-5, 1e-3),
         TensorProto.BFLOAT16: (1e-5, 1.6e-2), TensorProto.DOUBLE: (1e-12, 1e-12)}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_oracle  # noqa: E402 (the server's opset fitting and raw tensor handling)


def load_inputs(case, model):
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {}
    for k, name in enumerate(names):
        t = TensorProto()
        with open(os.path.join(case, "input_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        feeds[name] = t
    return feeds


def traced(model):
    """A copy whose outputs are the graph outputs and then every other node output."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    have = {o.name for o in g.output}
    typed = {v.name: v for v in g.value_info}
    for node in g.node:
        for name in node.output:
            if name and name not in have:
                have.add(name)
                g.output.append(typed[name] if name in typed
                                else helper.make_empty_tensor_value_info(name))
    return m


def producers(model):
    out = {}
    for node in model.graph.node:
        for name in node.output:
            out[name] = node
    return out


# ---- the float64 truth ----

def to_f64_type(tp):
    if tp.HasField("tensor_type") and tp.tensor_type.elem_type in FLOATS:
        tp.tensor_type.elem_type = TensorProto.DOUBLE
    for sub in ("sequence_type", "optional_type"):
        if tp.HasField(sub):
            to_f64_type(getattr(tp, sub).elem_type)


def to_f64_tensor(t):
    if t.data_type in FLOATS:
        arr = numpy_helper.to_array(t).astype(np.float64)
        t.CopyFrom(numpy_helper.from_array(arr, t.name))


def to_f64_graph(g):
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        to_f64_type(vi.type)
    for t in g.initializer:
        to_f64_tensor(t)
    for node in g.node:
        for a in node.attribute:
            if a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i in FLOATS:
                a.i = TensorProto.DOUBLE
            if a.type == onnx.AttributeProto.TENSOR:
                to_f64_tensor(a.t)
            if a.type == onnx.AttributeProto.GRAPH:
                to_f64_graph(a.g)
            for sub in a.graphs:
                to_f64_graph(sub)


def truth(model, feeds):
    from onnx.reference import ReferenceEvaluator
    m = onnx.ModelProto()
    m.CopyFrom(model)
    to_f64_graph(m.graph)
    inputs = {}
    for name, t in feeds.items():
        arr = numpy_helper.to_array(t)
        inputs[name] = arr.astype(np.float64) if t.data_type in FLOATS else arr
    ref = ReferenceEvaluator(m)
    outs = ref.run(None, inputs)
    return {o.name: np.asarray(v) for o, v in zip(m.graph.output, outs)}


# ---- onnxruntime ----

def ort_run(model, feeds, optimize):
    """Runs as the oracle does (ort_oracle.py: opset fitting, raw feeds and outputs)."""
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    ort_oracle.fit_opset(onnx, m, *LIMITS(onnx, ort))
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    inputs = {n: ort_oracle.feed_value(ort, np, numpy_helper, t) for n, t in feeds.items()}
    names = [o.name for o in sess.get_outputs()]
    values = sess.run_with_ort_values(names, inputs)
    return {n: numpy_helper.to_array(ort_oracle.tensor_proto(onnx, numpy_helper, v, n))
            for n, v in zip(names, values)}


_limits = []


def LIMITS(onnx_mod, ort):  # noqa: N802 (computed once)
    if not _limits:
        _limits.append(ort_oracle.probe_limits(onnx_mod, ort))
    return _limits[0]


# ---- Kiln ----

def kiln_run(kiln, model, feeds):
    with tempfile.TemporaryDirectory(prefix="kiln-triage.") as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        cmd = [kiln, "run", path, "--output-dir", d, "--format", "pb"]
        for k, (name, t) in enumerate(feeds.items()):
            f = os.path.join(d, "in_%d.pb" % k)
            with open(f, "wb") as fh:
                fh.write(t.SerializeToString())
            cmd += ["--input", "%s=%s" % (name, f)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1])
        out = {}
        for o in model.graph.output:
            f = os.path.join(d, o.name + ".pb")
            if os.path.exists(f):
                out[o.name] = numpy_helper.to_array(onnx.load_tensor(f))
        return out


# ---- comparison ----

def ratio(got, want, elem):
    """Max distance to the truth in units of the dtype floor; inf for a NaN/Inf or shape
    mismatch; 0 or inf for exact types."""
    if got is None or want is None:
        return None
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if elem not in FLOATS:
        return 0.0 if np.array_equal(got, want) else float("inf")
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(g[~fin & ~np.isnan(w)],
                                                                         w[~fin & ~np.isnan(w)]):
        return float("inf")
    if not fin.any():
        return 0.0
    atol, rtol = FLOOR.get(elem, (1e-3, 1e-3))
    with np.errstate(invalid="ignore"):
        r = np.abs(g[fin] - w[fin]) / (atol + rtol * np.abs(w[fin]))
    return float(np.nanmax(r)) if r.size else 0.0


def elem_types(model):
    out = {}
    for vi in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        if vi.type.HasField("tensor_type"):
            out[vi.name] = vi.type.tensor_type.elem_type
    return out


def fmt(r):
    return "-" if r is None else "inf" if r == float("inf") else "%.3g" % r


def verdict(ort_r, kiln_r):
    off = lambda r: r is not None and r > 1  # noqa: E731
    if off(ort_r) and not off(kiln_r):
        return "ORT's fault" if kiln_r is not None else "ORT off the truth (Kiln not run)"
    if off(kiln_r) and not off(ort_r):
        return "Kiln's fault"
    if off(ort_r) and off(kiln_r):
        return "both off"
    return "neither"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--kiln", default="build/kiln")
    args = ap.parse_args()
    model = onnx.load(os.path.join(args.case, "model.onnx"))
    feeds = load_inputs(args.case, model)
    tm = traced(model)
    try:
        tm = onnx.shape_inference.infer_shapes(tm)
    except Exception:
        pass
    types, prod = elem_types(tm), producers(tm)
    sides = {}
    for label, fn in (("truth", lambda: truth(tm, feeds)),
                      ("ort", lambda: ort_run(model, feeds, True)),
                      ("ort-trace", lambda: ort_run(tm, feeds, True)),
                      ("ort-noopt", lambda: ort_run(model, feeds, False)),
                      ("kiln", lambda: kiln_run(args.kiln, tm, feeds)
                       if os.path.exists(args.kiln) else {})):
        try:
            sides[label] = fn()
        except Exception as e:
            print("%s: could not run: %s" % (label, " ".join(str(e).split())[:300]))
            sides[label] = {}
    t = sides["truth"]
    if not t:
        print("verdict: unknown (no float64 truth)")
        return 0
    outputs = [o.name for o in model.graph.output]
    print("%-20s %-18s %-6s %10s %10s %10s %10s" % ("value", "op", "dtype", "ort", "ort-node",
                                                   "ort-noopt", "kiln"))
    first = None
    for o in tm.graph.output:
        name = o.name
        node = prod.get(name)
        elem = types.get(name, 0)
        r_ort = ratio(sides["ort"].get(name), t.get(name), elem) if name in outputs else None
        r_tr = ratio(sides["ort-trace"].get(name), t.get(name), elem)
        r_no = ratio(sides["ort-noopt"].get(name), t.get(name), elem) if name in outputs else None
        r_k = ratio(sides["kiln"].get(name), t.get(name), elem)
        print("%-20s %-18s %-6s %10s %10s %10s %10s" % (
            name[:20], (node.op_type if node else "?")[:18],
            TensorProto.DataType.Name(elem)[:6] if elem else "?", fmt(r_ort), fmt(r_tr),
            fmt(r_no), fmt(r_k)))
        if first is None and verdict(r_tr, r_k) != "neither":
            first = (name, node, verdict(r_tr, r_k))
    overall = [verdict(ratio(sides["ort"].get(n), t.get(n), types.get(n, 0)),
                       ratio(sides["kiln"].get(n), t.get(n), types.get(n, 0))) for n in outputs]
    for n, v in zip(outputs, overall):
        print("output %s: %s" % (n, v))
    if first:
        name, node, v = first
        print("first node off the truth: %s (%s) -> %s: %s" % (
            node.name or name, node.op_type if node else "?", name, v))
    worst = [v for v in overall if v != "neither"]
    print("verdict: %s" % (worst[0] if worst else "neither"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
