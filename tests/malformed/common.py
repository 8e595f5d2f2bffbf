"""Shared pieces of the malformed-model generator: the corpus writer, model
builders and the two valid base models that the mutation cases start from."""

import os
import re

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

# What a case must do (checked by run_malformed.sh):
#   ok       a valid control case: info, print and run exit 0
#   load     invalid on its face: info, print and run all exit 2
#   check    invalid, found at load or when run: info/print exit 0 or 2 (the same), run exits 2
#   run      valid to load, fails on its data at run time: info/print 0 or 2, run exits 1 or 2
#   nocrash  behaviour is implementation-defined (or undefined by ONNX): any of 0, 1, 2
EXPECTS = ("ok", "load", "check", "run", "nocrash")


class Corpus:
    def __init__(self, out_dir, seed):
        self.out = out_dir
        self.rng = np.random.default_rng(seed)
        self.names = set()

    def add(self, name, desc, model, expect="load", inputs=None, inputs_from=None, files=None,
            symlinks=None):
        """Writes one case. model: ModelProto, bytes, or a wire field list.
        inputs: [(name, ndarray or bytes)] written to test_data_set_0; by default
        random inputs are made from the graph inputs of model (or inputs_from)."""
        assert expect in EXPECTS, expect
        assert re.fullmatch(r"[a-z0-9_]+", name), name
        assert name not in self.names, "duplicate case " + name
        self.names.add(name)
        case = os.path.join(self.out, name)
        os.makedirs(case, exist_ok=True)
        if isinstance(model, onnx.ModelProto):
            data = model.SerializeToString()
        elif isinstance(model, list):
            from wire import emit

            data = emit(model)
        else:
            data = bytes(model)
        with open(os.path.join(case, "model.onnx"), "wb") as f:
            f.write(data)
        with open(os.path.join(case, "desc.txt"), "w") as f:
            f.write(desc.strip().replace("\n", " ") + "\n")
        with open(os.path.join(case, "expect.txt"), "w") as f:
            f.write(expect + "\n")
        for rel, content in (files or {}).items():
            path = os.path.join(case, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(content)
        for rel, target in (symlinks or {}).items():
            os.symlink(target, os.path.join(case, rel))
        if inputs is None:
            src = inputs_from if inputs_from is not None else model
            inputs = self.random_inputs(src) if isinstance(src, onnx.ModelProto) else []
        self.write_inputs(case, inputs)

    def write_inputs(self, case, inputs):
        if not inputs:
            return
        data = os.path.join(case, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        lines = []
        for i, (name, value) in enumerate(inputs):
            rel = "test_data_set_0/input_%d.pb" % i
            if isinstance(value, (bytes, bytearray)):
                blob = bytes(value)
            elif isinstance(value, TensorProto):
                blob = value.SerializeToString()
            else:
                blob = numpy_helper.from_array(np.asarray(value), name).SerializeToString()
            with open(os.path.join(case, rel), "wb") as f:
                f.write(blob)
            lines.append("%s\t%s\n" % (name, rel))
        with open(os.path.join(case, "inputs.txt"), "w") as f:
            f.writelines(lines)

    def random_inputs(self, model):
        inits = {t.name for t in model.graph.initializer}
        out = []
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            out.append((vi.name, self.random_value(vi.type)))
        return out

    def random_value(self, tp):
        tt = tp.tensor_type
        try:
            dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        except Exception:
            dtype = np.dtype("float32")
        shape = []
        for d in tt.shape.dim:
            v = d.dim_value if d.HasField("dim_value") else 1
            shape.append(v if 0 < v <= 64 else 1)
        n = int(np.prod(shape)) if shape else 1
        if dtype == np.dtype(bool):
            return (self.rng.integers(0, 2, n) == 1).reshape(shape)
        if dtype.kind in "iu":
            return self.rng.integers(0, 3, n).astype(dtype).reshape(shape)
        if dtype.kind == "f":
            return self.rng.standard_normal(n).astype(dtype).reshape(shape)
        return np.zeros(shape, np.float32)


# ---- builders ------------------------------------------------------------------------------

def vi(name, dtype=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def node(op, inputs, outputs, domain=None, name=None, **attrs):
    return helper.make_node(op, inputs, outputs, name=name, domain=domain, **attrs)


def graph(nodes, inputs, outputs, inits=(), value_info=(), name="g"):
    return helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits),
                             value_info=list(value_info))


def model(g, opset=OPSET, ir_version=IR_VERSION, extra_opsets=()):
    opsets = [helper.make_opsetid("", opset)] + list(extra_opsets)
    m = helper.make_model(g, opset_imports=opsets, producer_name="kiln-malformed")
    m.ir_version = ir_version
    return m


def simple(nodes, inputs, outputs, inits=(), opset=OPSET, value_info=()):
    return model(graph(nodes, inputs, outputs, inits, value_info), opset)


def raw_attr(name, atype, **fields):
    """An AttributeProto with an explicit (possibly wrong) type and fields."""
    a = AttributeProto()
    if atype in AttributeProto.AttributeType.values():
        a.type = atype
    else:  # not in the (closed) enum: only settable as an unknown field
        a.ParseFromString(b"\xa0\x01" + bytes([atype]))
    a.name = name
    for k, v in fields.items():
        if k in ("ints", "floats", "strings"):
            getattr(a, k).extend(v)
        elif k in ("t", "g", "tp"):
            getattr(a, k).CopyFrom(v)
        elif k in ("tensors", "graphs"):
            getattr(a, k).extend(v)
        else:
            setattr(a, k, v)
    return a


def with_attrs(n, *attrs):
    n.attribute.extend(attrs)
    return n


def one_op(op, in_shapes, out_shape, attrs=(), dtype=TensorProto.FLOAT, in_dtypes=None,
           out_dtype=None, inits=(), opset=OPSET, n_out=1):
    """A model holding one node `op` on graph inputs x0..xN (or initializers)."""
    in_dtypes = in_dtypes or [dtype] * len(in_shapes)
    init_names = {t.name for t in inits}
    names = ["x%d" % i for i in range(len(in_shapes))]
    inputs = [vi(n, t, s) for n, t, s in zip(names, in_dtypes, in_shapes) if n not in init_names]
    outs = ["y%d" % i for i in range(n_out)]
    nd = helper.make_node(op, names, outs)
    nd.attribute.extend(attrs)
    od = out_dtype if out_dtype is not None else dtype
    ods = od if isinstance(od, (list, tuple)) else [od] * n_out
    outputs = [vi(o, t, out_shape) for o, t in zip(outs, ods)]
    return simple([nd], inputs, outputs, inits, opset)


# ---- the valid base models -----------------------------------------------------------------

def base_cnn():
    """x[1,3,8,8] -> Conv -> Relu -> MaxPool -> Reshape -> Gemm -> If(Softmax | Neg) -> y[1,5]."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    fc = rng.standard_normal((64, 5)).astype(np.float32) * 0.1
    fb = rng.standard_normal(5).astype(np.float32)
    then_g = graph([node("Softmax", ["g"], ["ts"], axis=1)], [], [vi("ts", shape=[1, 5])],
                   name="then")
    else_g = graph([node("Neg", ["g"], ["es"])], [], [vi("es", shape=[1, 5])], name="else")
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        node("Relu", ["c"], ["r"], name="relu"),
        node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2],
             auto_pad="NOTSET"),
        node("Reshape", ["p", "shape"], ["f"], name="flat"),
        node("Gemm", ["f", "fc", "fb"], ["g"], name="fc", alpha=1.0, beta=1.0),
        node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
    ]
    inits = [const("w", w), const("b", b), const("shape", np.array([1, 64], np.int64)),
             const("fc", fc), const("fb", fb), const("cond", np.array(True))]
    vinfo = [vi("c", shape=[1, 4, 8, 8]), vi("g", shape=[1, 5])]
    g = graph(nodes, [vi("x", shape=[1, 3, 8, 8])], [vi("y", shape=[1, 5])], inits, vinfo)
    g.doc_string = "base model of the malformed corpus"
    return model(g)


def base_mlp():
    """ids[2,3] int64 -> Gather(emb) -> ReduceMean -> MatMul -> Add -> Cast/Tanh -> y[2,3]."""
    rng = np.random.default_rng(8)
    nodes = [
        node("Gather", ["emb", "ids"], ["e"], axis=0),
        node("ReduceMean", ["e"], ["m"], axes=[1], keepdims=0),
        node("MatMul", ["m", "w"], ["h"]),
        node("Constant", [], ["bias"], value=const("bias_v", rng.standard_normal(3).astype(
            np.float32))),
        node("Add", ["h", "bias"], ["a"]),
        node("Cast", ["a"], ["a64"], to=TensorProto.DOUBLE),
        node("Tanh", ["a64"], ["t"]),
        node("Cast", ["t"], ["y"], to=TensorProto.FLOAT),
    ]
    inits = [const("emb", rng.standard_normal((10, 4)).astype(np.float32)),
             const("w", rng.standard_normal((4, 3)).astype(np.float32))]
    g = graph(nodes, [vi("ids", TensorProto.INT64, [2, 3])], [vi("y", shape=[2, 3])], inits)
    return model(g)
