"""Triage of a disagreement between ONNX Runtime and Kiln's reference: which side is right?

usage: .venv/bin/python scripts/ort_triage.py CASE_DIR [--kiln build/kiln] [--rtol R]

CASE_DIR holds model.onnx and input_<i>.pb (a case written by `kiln fuzz` or `kiln verify`).
Every node output of the main graph is made a model output, and the model is evaluated by
  truth   onnx.reference.ReferenceEvaluator (ONNX's own numpy implementation, independent of
          both) on the model converted to float64: float inputs, initializers, constants and
          value_info types become double; a Cast to f32/f16/bf16 still rounds to that type
          (then widens to double);
  ort     onnxruntime (CPU, ORT_ENABLE_ALL) and ort-noopt (ORT_DISABLE_ALL);
  kiln    `kiln run` (the reference interpreter, in the model's dtypes), when --kiln exists.
Each value prints its distance to the truth per side in units of the dtype floor
(atol + rtol*|truth|: f32 1e-5 + 1.3e-6, f16 1e-5 + 1e-3, bf16 1e-5 + 1.6e-2), end to end and
locally: the node alone evaluated in float64 on that side's own inputs (so errors that grow
through later nodes do not hide where they started). The first node where a side is off its
local truth is named with the verdict: "ORT's fault", "Kiln's fault", "both off" (the float64
evaluator itself may be wrong: onnx.reference has bugs too, e.g. BatchNormalization-9 applies
the momentum default), ORT's fault in its graph rewrites (with every value kept as an output
ORT agrees node by node, but the model's own outputs are off: a rewrite of ORT's changed them) or
"neither" (every node within its floor: Kiln's error bound was too
tight, or the inputs sit on a discontinuity). Exit 0; 2 on bad usage.
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


def round_casts(g):
    """A Cast to a float type rounds (every correct implementation must): the float64 truth
    keeps that Cast and widens its result with a Cast to double after it."""
    nodes = []
    for node in g.node:
        nodes.append(node)
        to = [a for a in node.attribute if a.name == "to"]
        if node.op_type != "Cast" or not to or to[0].i not in FLOATS - {TensorProto.DOUBLE}:
            continue
        out = node.output[0]
        node.output[0] = out + "__rounded"
        nodes.append(helper.make_node("Cast", [node.output[0]], [out], to=TensorProto.DOUBLE))
    del g.node[:]
    g.node.extend(nodes)


def to_f64_graph(g):
    round_casts(g)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        to_f64_type(vi.type)
    for t in g.initializer:
        to_f64_tensor(t)
    for node in g.node:
        if node.op_type == "Cast" and node.output[0].endswith("__rounded"):
            continue
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
        return "both off (suspect the float64 evaluator)"
    return "neither"


def local_truth(model, node, values):
    """The node alone, run in float64 on one side's values of its inputs (initializers and
    graph inputs from the model and the case). None when the node reads outer values
    (subgraphs) or the evaluator fails."""
    from onnx.reference import ReferenceEvaluator
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for a in node.attribute):
        return None
    feeds, ins = {}, []
    for name in node.input:
        if not name or name in feeds:
            continue
        if name not in values:
            return None
        arr = np.asarray(values[name])
        if arr.dtype.kind == "f" or arr.dtype.kind == "V":
            arr = arr.astype(np.float64)
        feeds[name] = arr
        ins.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
    n = onnx.NodeProto()
    n.CopyFrom(node)
    g = helper.make_graph([n], "node", ins,
                          [helper.make_empty_tensor_value_info(o) for o in node.output if o])
    m = helper.make_model(g, opset_imports=model.opset_import)
    to_f64_graph(m.graph)
    try:
        outs = ReferenceEvaluator(m).run(None, feeds)
    except Exception:
        return None
    return {o: np.asarray(v) for o, v in zip([o for o in node.output if o], outs)}


def side_values(model, feeds, side):
    vals = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    vals.update({name: numpy_helper.to_array(t) for name, t in feeds.items()})
    vals.update(side)
    return vals


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
    types = elem_types(tm)
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
    outputs = [o.name for o in model.graph.output]
    ort_vals = side_values(model, feeds, sides["ort-trace"])
    kiln_vals = side_values(model, feeds, sides["kiln"])
    print("distance to the float64 truth in units of the dtype floor; 'local': the node alone "
          "on that side's own inputs")
    print("%-14s %-18s %-7s %9s %9s %9s %9s %9s" % ("value", "op", "dtype", "ort", "ort-noopt",
                                                   "kiln", "ort-local", "kiln-local"))
    found = {}  # verdict -> the first node with it
    for node in model.graph.node:
        lt_o, lt_k = local_truth(model, node, ort_vals), local_truth(model, node, kiln_vals)
        for name in node.output:
            if not name:
                continue
            elem = types.get(name, 0)
            out = name in outputs
            r_o = ratio(sides["ort" if out else "ort-trace"].get(name), t.get(name), elem)
            r_n = ratio(sides["ort-noopt"].get(name), t.get(name), elem) if out else None
            r_k = ratio(sides["kiln"].get(name), t.get(name), elem)
            l_o = ratio(ort_vals.get(name), lt_o.get(name), elem) if lt_o else None
            l_k = ratio(kiln_vals.get(name), lt_k.get(name), elem) if lt_k else None
            print("%-14s %-18s %-7s %9s %9s %9s %9s %9s" % (
                name[:14], node.op_type[:18],
                TensorProto.DataType.Name(elem)[:7] if elem else "?", fmt(r_o), fmt(r_n),
                fmt(r_k), fmt(l_o), fmt(l_k)))
            # a side within its floor end to end is not blamed: ORT may keep an intermediate
            # in higher precision than the traced value shows (inserted casts for fp16)
            v = verdict(l_o if r_o is None or r_o > 1 else 0.0,
                        l_k if r_k is None or r_k > 1 else 0.0)
            found.setdefault(v, "%s (%s)" % (node.name or name, node.op_type))
    optimizer = []  # outputs that ORT's graph optimizations alone put off
    for n in outputs:
        e = types.get(n, 0)
        r_o, r_t = ratio(sides["ort"].get(n), t.get(n), e), ratio(sides["ort-trace"].get(n), t.get(n), e)
        print("output %s: %s" % (n, verdict(r_o, ratio(sides["kiln"].get(n), t.get(n), e))))
        if r_o is not None and r_o > 1 and r_t is not None and r_t <= 1:
            optimizer.append(n)
    found.pop("neither", None)
    for v, where in found.items():
        print("first node off its local truth with %s: %s" % (v, where))
    faults = [v for v in ("ORT's fault", "Kiln's fault") if v in found]
    if faults:
        print("verdict: %s" % " and ".join("%s at %s" % (v, found[v]) for v in faults))
    elif found:
        print("verdict: unknown (only the float64 evaluator disagrees)")
    elif optimizer:
        print("verdict: ORT's fault in its graph rewrites at %s (with every value kept as an "
              "output, ORT agrees node by node; ort-noopt shows whether ORT_DISABLE_ALL avoids it)"
              % ", ".join(optimizer))
    else:
        print("verdict: neither (every node is within its dtype floor locally)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
