"""ONNX Runtime server for Kiln's second oracle (src/verify/oracle/ort.c embeds a copy of this file).

Protocol (stdin requests, replies on the original stdout; anything else goes to stderr):
  -> "ready <onnxruntime version> <max opset> <max ir version>" once at start-up,
     or "error <message>" and exit 1 when onnxruntime cannot be imported.
  <- "run\t<dir>" or "trace\t<dir>": <dir> holds model.onnx and input_<i>.pb (one TensorProto
     per graph input, in order). trace also makes every node output of the main graph a model
     output (their names in <dir>/outputs.txt, one per line).
  -> "ok <n>" after writing output_<i>.pb for the n model outputs, or "error <message>" when
     onnxruntime refuses or fails on the model.
  <- "check\t<dir>": onnx.checker.check_model(full_check=True) on <dir>/model.onnx as it is.
  -> "ok 0", or "error <the checker's message>".
Sessions: CPUExecutionProvider, ORT_ENABLE_ALL, one intra-op and one inter-op thread.
"""
import ctypes
import os
import sys

DEFAULT_DOMAINS = ("", "ai.onnx")


def reply_channel():
    """Keeps the real stdout for replies; fd 1 then points at stderr, so prints of libraries
    cannot corrupt the protocol."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def one_line(text):
    return " ".join(str(text).split())[:1500]


def relu_model(onnx, opset, ir):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    return m


def probe_limits(onnx, ort):
    """The newest default-domain opset and IR version this onnxruntime loads."""
    ir_of = {}
    for entry in onnx.helper.VERSION_TABLE:
        ir_of.setdefault(entry[2], entry[1])
    for opset in range(onnx.defs.onnx_opset_version(), 6, -1):
        ir = ir_of.get(opset, 7)
        try:
            ort.InferenceSession(relu_model(onnx, opset, ir).SerializeToString(),
                                 providers=["CPUExecutionProvider"])
            return opset, ir
        except Exception:
            continue
    return 7, 3


def all_nodes(graph):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from all_nodes(attr.g)
            for sub in attr.graphs:
                yield from all_nodes(sub)


def same_meaning(old, new, node):
    """Whether node means the same under schema old as under the newer schema new: the newer
    definition only adds types, optional attributes the node does not set, or optional
    trailing inputs it does not use."""
    if old.since_version == new.since_version:
        return True
    used_attrs = {a.name for a in node.attribute}
    for name, attr in new.attributes.items():
        if name not in old.attributes and (attr.required or name in used_attrs):
            return False
    if any(name not in new.attributes for name in old.attributes):
        return False
    if len(new.inputs) < len(old.inputs) or len(node.input) > len(old.inputs):
        return False
    if [i.name for i in old.inputs] != [i.name for i in new.inputs[:len(old.inputs)]]:
        return False
    if [o.name for o in old.outputs] != [o.name for o in new.outputs]:
        return False
    old_types = {t.type_param_str: set(t.allowed_type_strs) for t in old.type_constraints}
    new_types = {t.type_param_str: set(t.allowed_type_strs) for t in new.type_constraints}
    return all(k in new_types and v <= new_types[k] for k, v in old_types.items())


def fit_opset(onnx, model, max_opset, max_ir):
    """Runs a model of a newer opset at max_opset when every node means the same there."""
    for imp in model.opset_import:
        if imp.domain not in DEFAULT_DOMAINS or imp.version <= max_opset:
            continue
        for node in all_nodes(model.graph):
            if node.domain not in DEFAULT_DOMAINS:
                continue
            try:
                new = onnx.defs.get_schema(node.op_type, imp.version, "")
            except Exception:
                continue  # unknown op: onnxruntime will say so
            try:
                old = onnx.defs.get_schema(node.op_type, max_opset, "")
            except Exception:
                old = None
            if old is None or not same_meaning(old, new, node):
                raise RuntimeError("%s-%d (opset %d) differs from its definition in opset %d, "
                                   "the newest this onnxruntime runs" %
                                   (node.op_type, new.since_version, imp.version, max_opset))
        imp.version = max_opset
    if model.ir_version > max_ir:
        model.ir_version = max_ir


def trace_outputs(onnx, model, dirname):
    """Makes every node output of the main graph a model output; writes their names."""
    g = model.graph
    have = {o.name for o in g.output}
    typed = {v.name: v for v in g.value_info}
    names = [o.name for o in g.output]
    for node in g.node:
        for name in node.output:
            if not name or name in have:
                continue
            have.add(name)
            names.append(name)
            if name in typed:
                g.output.append(typed[name])
            else:
                g.output.append(onnx.helper.make_empty_tensor_value_info(name))
    with open(os.path.join(dirname, "outputs.txt"), "w") as f:
        for name in names:
            f.write(name + "\n")


def feed_value(ort, np, numpy_helper, tensor):
    arr = np.array(numpy_helper.to_array(tensor), order="C")  # (ascontiguousarray makes 0-d 1-d)
    if arr.dtype.kind in "biufO":
        return ort.OrtValue.ortvalue_from_numpy(arr)
    # bfloat16, float8 ... (ml_dtypes): the raw bits with the ONNX element type
    bits = arr.view(np.dtype("u%d" % arr.dtype.itemsize))
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, tensor.data_type)


ONNX_TYPE = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "string": 8, "bool": 9, "float16": 10, "double": 11, "uint32": 12, "uint64": 13,
    "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18, "float8e5m2": 19,
    "float8e5m2fnuz": 20,
}


def tensor_proto(onnx, numpy_helper, value, name):
    """An OrtValue tensor as a TensorProto (raw bytes, so bfloat16 and float8 survive)."""
    kind = value.data_type()  # "tensor(float)"
    elem = kind[kind.index("(") + 1:-1]
    if elem not in ONNX_TYPE:
        raise RuntimeError("output '%s' has type %s, which Kiln does not read" % (name, kind))
    if elem == "string":
        return numpy_helper.from_array(value.numpy(), name)
    t = onnx.TensorProto()
    t.name = name
    t.data_type = ONNX_TYPE[elem]
    t.dims.extend(value.shape())
    t.raw_data = ctypes.string_at(value.data_ptr(), value.tensor_size_in_bytes())
    return t


def write_output(onnx, numpy_helper, value, name, path):
    if value.is_tensor_sequence():
        raise RuntimeError("output '%s' is a sequence; Kiln reads only tensors from "
                           "onnxruntime" % name)
    if not value.has_value():
        raise RuntimeError("output '%s' is an empty optional" % name)
    with open(path, "wb") as f:
        f.write(tensor_proto(onnx, numpy_helper, value, name).SerializeToString())


def run(mods, limits, mode, dirname):
    onnx, ort, np, numpy_helper = mods
    model = onnx.load(os.path.join(dirname, "model.onnx"))
    if mode == "check":
        onnx.checker.check_model(model, full_check=True)
        return 0
    fit_opset(onnx, model, *limits)
    if mode == "trace":
        trace_outputs(onnx, model, dirname)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(dirname, "input_%d.pb" % i), "rb") as f:
            t.ParseFromString(f.read())
        feeds[inp.name] = feed_value(ort, np, numpy_helper, t)
    names = [o.name for o in sess.get_outputs()]
    values = sess.run_with_ort_values(names, feeds)
    for i, (name, value) in enumerate(zip(names, values)):
        write_output(onnx, numpy_helper, value, name, os.path.join(dirname, "output_%d.pb" % i))
    return len(names)


def main():
    out = reply_channel()
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper
    except Exception as e:
        out.write("error cannot import onnxruntime: %s\n" % one_line(e))
        return 1
    ort.set_default_logger_severity(3)
    limits = probe_limits(onnx, ort)
    out.write("ready %s %d %d\n" % (ort.__version__, limits[0], limits[1]))
    mods = (onnx, ort, np, numpy_helper)
    for line in sys.stdin:
        mode, _, dirname = line.rstrip("\n").partition("\t")
        if mode not in ("run", "trace", "check"):
            out.write("error bad request\n")
            continue
        try:
            out.write("ok %d\n" % run(mods, limits, mode, dirname))
        except Exception as e:
            out.write("error %s\n" % one_line(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
