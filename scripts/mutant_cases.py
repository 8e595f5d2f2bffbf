#!/usr/bin/env python3
"""One small model per seeded bug of docs/MUTANTS.md that exposes it.

  .venv/bin/python scripts/mutant_cases.py --kiln build-mutation/kiln [--only 3,7] [--backend cpu]

For each mutant n: writes the model and its inputs, computes the expected outputs with the
reference interpreter, then runs the chosen backend (default cpu: passes, lowering, C code
and memory plan) with KILN_MUTANT=n and with KILN_MUTANT unset. A mutant is exposed when
its run fails (mismatch or error) while the unmutated run passes. Prints one line per
mutant and "N exposed, N not exposed, N control failures". Needs a build configured with
-DKILN_MUTATION=ON. Generated kernels go to a private cache folder.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

F, I32, I64 = TP.FLOAT, TP.INT32, TP.INT64
rng = np.random.default_rng(7)


def r(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def c(name, arr):
    return NH.from_array(np.asarray(arr), name)


class Case:
    def __init__(self, nodes, inputs, outputs, inits=(), opset=17):
        self.nodes, self.inputs, self.outputs = nodes, inputs, outputs
        self.inits, self.opset = list(inits), opset

    def write(self, d):
        dyn = getattr(self, "dyn", {})  # inputs declared with unknown dims: name -> dims
        vi = [H.make_tensor_value_info(n, NH.helper.np_dtype_to_tensor_dtype(a.dtype),
                                       dyn[n] if n in dyn else a.shape)
              for n, a in self.inputs]
        vo = [H.make_tensor_value_info(n, t, None) for n, t in self.outputs]
        g = H.make_graph(self.nodes, "mutant", vi, vo, self.inits)
        m = H.make_model(g, opset_imports=[H.make_opsetid("", self.opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(d, "model.onnx"))
        args = []
        for n, a in self.inputs:
            p = os.path.join(d, n + ".npy")
            np.save(p, a)
            args += ["--input", f"{n}={p}"]
        return args


N = H.make_node
CASES = {}


def case(n):
    def reg(f):
        CASES[n] = f
        return f
    return reg


# ---- passes ----
case(1)(lambda: Case([N("Relu", ["x"], ["t"]), N("Sub", ["z", "t"], ["y"])], [("x", r(3))], [("y", F)],
                     [c("z", np.zeros(3, np.float32))]))
case(2)(lambda: Case([N("Relu", ["x"], ["t"]), N("Mul", ["t", "one"], ["y"])], [("x", r(3))],
                     [("y", F)],
                     [c("one", np.ones((2, 3), np.float32))]))
case(3)(lambda: Case([N("Relu", ["x"], ["u"]), N("Transpose", ["u"], ["t"], perm=[1, 0, 2]),
                      N("Transpose", ["t"], ["y"], perm=[0, 2, 1])], [("x", r(3, 3, 3))],
                     [("y", F)]))
case(4)(lambda: Case([N("Reshape", ["x", "s"], ["t"]), N("Transpose", ["t"], ["y"])],
                     [("x", r(2, 6))], [("y", F)], [c("s", np.array([3, 4], np.int64))]))
case(5)(lambda: Case([N("Relu", ["x"], ["t"]), N("Cast", ["t"], ["y"], to=TP.FLOAT16)], [("x", r(5))],
                     [("y", TP.FLOAT16)]))
case(6)(lambda: Case([N("MatMul", ["a", "b"], ["m"]), N("Add", ["m", "bias"], ["y"])],
                     [("a", r(3, 4))], [("y", F)], [c("b", r(4, 5)), c("bias", r(5))]))
case(7)(lambda: Case([N("LeakyRelu", ["x"], ["y1"], alpha=0.1),
                      N("LeakyRelu", ["x"], ["y2"], alpha=0.3), N("Sub", ["y1", "y2"], ["y"])],
                     [("x", r(6))], [("y", F)]))
case(8)(lambda: Case([N("Split", ["x"], ["a", "b"], axis=0), N("Relu", ["b"], ["y"])],
                     [("x", r(6))], [("y", F)]))


def conv_bn(bias=True):
    w = r(3, 2, 3, 3)
    ins = ["x", "w", "cb"] if bias else ["x", "w"]
    bn = [c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)), c("mu", r(3)),
          c("var", r(3, lo=0.1, hi=2))]
    return Case([N("Conv", ins, ["t"]),
                 N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                [("x", r(1, 2, 5, 5))], [("y", F)], [c("w", w), c("cb", r(3))] + bn)


case(9)(lambda: conv_bn())
case(10)(lambda: conv_bn())
case(11)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["t"]),
                       N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                      [("a", r(2, 4))], [("y", F)],
                      [c("b", r(4, 3)), c("cc", r(3)), c("s", r(3, lo=0.5, hi=2)),
                       c("bb", r(3)), c("mu", r(3)), c("var", r(3, lo=0.1, hi=2))]))
case(12)(lambda: Case([N("Relu", ["x"], ["t"]), N("Dropout", ["t"], ["y", "mask"]),
                       N("Cast", ["mask"], ["m"], to=F)],
                      [("x", r(4))], [("y", F), ("m", F)], opset=13))
case(13)(lambda: Case([N("Add", ["c1", "c2"], ["t"]), N("Add", ["x", "t"], ["y"])],
                      [("x", r(3))], [("y", F)], [c("c1", r(3)), c("c2", r(3))]))
case(14)(lambda: Case([N("Size", ["x"], ["y"])], [("x", r(2, 3))], [("y", I64)]))
case(15)(lambda: Case([N("Shape", ["x"], ["y"], start=1)], [("x", r(2, 3, 4))], [("y", I64)]))
case(16)(lambda: Case([N("Relu", ["x"], ["a"]), N("Transpose", ["a"], ["b"]),
                       N("Add", ["a", "b"], ["y"])], [("x", r(4, 4))], [("y", F)]))
case(17)(lambda: Case([N("Exp", ["x"], ["a"]), N("ReduceSum", ["a", "ax"], ["y"]),
                       N("Transpose", ["a"], ["z"])], [("x", r(3, 4))], [("y", F), ("z", F)],
                      [c("ax", np.array([1], np.int64))]))


# ---- lowering ----
def unary(op, x=None, **attrs):
    return lambda: Case([N(op, ["x"], ["y"], **attrs)], [("x", r(3, 5) if x is None else x)],
                        [("y", F)])


case(18)(unary("Elu", alpha=0.7))
case(19)(unary("Softsign"))
case(20)(lambda: Case([N("Add", ["x", "b"], ["y"])], [("x", r(3, 4)), ("b", r(4))], [("y", F)]))
case(21)(lambda: Case([N("Where", ["k", "a", "b"], ["y"])],
                      [("k", rng.uniform(size=(3, 4)) > 0.5), ("a", r(3, 4)), ("b", r(3, 4))],
                      [("y", F)]))
case(22)(lambda: Case([N("Cast", ["x"], ["y"], to=I32)],
                      [("x", np.array([0.7, -1.6, 2.2, -0.3, 3.8], np.float32))], [("y", I32)]))
case(23)(lambda: Case([N("Mod", ["a", "b"], ["y"])],
                      [("a", np.array([7, -7, 5, -9, 4], np.int32)),
                       ("b", np.array([3, 3, -2, 4, -3], np.int32))], [("y", I32)]))
case(24)(lambda: Case([N("ReduceMax", ["x"], ["y"], axes=[1])], [("x", r(3, 5, lo=-2, hi=-0.5))],
                      [("y", F)]))
case(25)(lambda: Case([N("ReduceMean", ["x"], ["y"], axes=[1])], [("x", r(3, 5))], [("y", F)]))
case(26)(lambda: Case([N("ReduceL1", ["x"], ["y"], axes=[1])], [("x", r(3, 5))], [("y", F)]))
case(27)(unary("LogSoftmax", x=r(3, 5, lo=1, hi=3)))
case(28)(lambda: Case([N("LayerNormalization", ["x", "sc", "bi"], ["y"])], [("x", r(2, 5))],
                      [("y", F)], [c("sc", r(5)), c("bi", r(5))]))
case(29)(unary("Transpose", x=r(3, 3, 3), perm=[1, 2, 0]))
case(30)(lambda: Case([N("Slice", ["x", "st", "en"], ["y"])], [("x", r(6))], [("y", F)],
                      [c("st", np.array([-4], np.int64)), c("en", np.array([6], np.int64))]))
case(31)(lambda: Case([N("Concat", ["a", "b"], ["y"], axis=1)], [("a", r(2, 1)), ("b", r(2, 3))],
                      [("y", F)]))
case(32)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=1)], [("x", r(3, 5))], [("y", F)],
                      [c("i", np.array([-1, 2], np.int64))]))
case(33)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", r(1, 4))], [("y", F)],
                      [c("p", np.array([0, 2, 0, 2], np.int64))], opset=13))
case(34)(lambda: Case([N("Pad", ["x", "p", "v"], ["y"])], [("x", r(4))], [("y", F)],
                      [c("p", np.array([1, 1], np.int64)), c("v", np.array(2.5, np.float32))],
                      opset=13))
case(35)(lambda: Case([N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                      [("x", r(1, 1, 4, 4))], [("y", F)]))
case(36)(lambda: Case([N("Conv", ["x", "w"], ["y"], dilations=[2, 2])], [("x", r(1, 2, 7, 7))],
                      [("y", F)], [c("w", r(3, 2, 3, 3))]))


def grouped_conv():
    return Case([N("Conv", ["x", "w"], ["y"], group=2)], [("x", r(1, 4, 5, 5))], [("y", F)],
                [c("w", r(6, 2, 3, 3))])


case(37)(grouped_conv)
case(38)(lambda: Case([N("Gemm", ["a", "b"], ["y"], transA=1)], [("a", r(4, 3)), ("b", r(4, 5))],
                      [("y", F)]))
case(39)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["y"], alpha=2.0, beta=0.5)],
                      [("a", r(2, 3))], [("y", F)], [c("b", r(3, 4)), c("cc", r(4))]))
case(40)(lambda: Case([N("CumSum", ["x", "ax"], ["y"], exclusive=1)], [("x", r(5))], [("y", F)],
                      [c("ax", np.array(0, np.int64))]))


# ---- schedules ----
def matmul_const(m, k, n):
    return lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(m, k))], [("y", F)],
                        [c("b", r(k, n))])


case(41)(matmul_const(9, 4, 5))
case(42)(matmul_const(3, 4, 20))
case(43)(matmul_const(3, 4, 5))
case(44)(lambda: Case([N("Conv", ["x", "w"], ["y"])], [("x", r(1, 2, 6, 6))], [("y", F)],
                      [c("w", r(3, 2, 3, 3))]))
case(45)(grouped_conv)
case(46)(lambda: Case([N("Transpose", ["x"], ["a"]), N("Exp", ["a"], ["b"]),
                       N("Transpose", ["a"], ["z"])], [("x", r(4, 6))], [("b", F), ("z", F)]))
case(47)(lambda: Case([N("Conv", ["x", "w"], ["t"]), N("Transpose", ["t"], ["y"])],
                      [("x", r(1, 2, 6, 6))], [("y", F)], [c("w", r(3, 2, 3, 3))]))

# ---- C code generation ----
case(48)(lambda: Case([N("Min", ["a", "b"], ["y"])], [("a", r(3, 4)), ("b", r(3, 4))], [("y", F)]))
case(49)(lambda: Case([N("Div", ["a", "b"], ["y"])],
                      [("a", np.array([7, -7, 5, -9, 4], np.int32)),
                       ("b", np.array([2, 2, -3, 4, -3], np.int32))], [("y", I32)]))
case(50)(unary("Elu", alpha=0.7))
case(51)(lambda: Case([N("Greater", ["a", "b"], ["y"])],
                      [("a", np.array([1, 2, 3, 4], np.int32)),
                       ("b", np.array([1, 3, 3, 2], np.int32))], [("y", TP.BOOL)]))
case(52)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(2, 3, 4)), ("b", r(2, 4, 8))],
                      [("y", F)]))
case(53)(lambda: Case([N("Conv", ["x", "w"], ["y"])], [("x", r(1, 2, 6, 6))], [("y", F)],
                      [c("w", r(3, 2, 3, 3))]))
case(54)(unary("Relu", x=r(3, 13)))


# ---- races (run at 2 threads: the row blocks of a 37-row product go to the threads) ----
def race_case():
    def ints(*shape):  # small integers: every sum is exact, whatever the order
        return rng.integers(-2, 3, shape).astype(np.float32)
    k = Case([N("MatMul", ["a", "b"], ["y"])], [("a", ints(37, 300))], [("y", F)],
             [c("b", ints(300, 96))])
    k.threads = 2
    return k


case(55)(race_case)


# ---- Set B (56-86): written from the compiler's code only ----
BIG = np.iinfo(np.int64).max
U8, F16, BF16, F64 = TP.UINT8, TP.FLOAT16, TP.BFLOAT16, TP.DOUBLE

# passes
case(56)(lambda: Case([N("Pad", ["x", "p"], ["a"], mode="reflect"),
                       N("Pad", ["x", "p"], ["b"], mode="edge"), N("Sub", ["a", "b"], ["y"])],
                      [("x", r(1, 4))], [("y", F)], [c("p", np.array([0, 2, 0, 2], np.int64))],
                      opset=13))
case(57)(lambda: Case([N("Conv", ["x", "w"], ["t"]),
                       N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                      [("x", r(1, 2, 5, 5))], [("y", F)],
                      [c("w", r(3, 2, 3, 3)), c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)),
                       c("mu", r(3)), c("var", r(3, lo=1e-4, hi=1e-3))]))
case(58)(lambda: Case([N("Shape", ["x"], ["y"], start=-1)], [("x", r(2, 3, 4))], [("y", I64)]))
case(59)(lambda: Case([N("Add", ["x", "z"], ["t"]), N("Div", ["one", "t"], ["y"])],
                      [("x", np.array([-0.0, 1.0, -2.0, -0.0], np.float32))], [("y", F)],
                      [c("z", np.zeros(4, np.float32)), c("one", np.ones(4, np.float32))]))
case(60)(lambda: Case([N("Reshape", ["x", "s1"], ["t"]), N("Reshape", ["t", "s2"], ["u"]),
                       N("Transpose", ["u"], ["y"], perm=[2, 0, 1])],
                      [("x", r(4, 6))], [("y", F)],
                      [c("s1", np.array([2, 12], np.int64)), c("s2", np.array([0, 3, -1], np.int64))]))
case(61)(lambda: Case([N("Sub", ["a", "b"], ["y1"]), N("Sub", ["b", "a"], ["y2"]),
                       N("Mul", ["y1", "y2"], ["y"])],
                      [("a", r(5)), ("b", r(5))], [("y", F)]))
case(62)(lambda: Case([N("Relu", ["x"], ["a"]), N("Transpose", ["a"], ["t"]),
                       N("Add", ["a", "t"], ["y"])], [("x", r(4, 4))], [("y", F)]))

# lowering
case(63)(lambda: Case([N("ReduceLogSumExp", ["x"], ["y"], axes=[1])],
                      [("x", r(3, 5, lo=800, hi=1000))], [("y", F)]))
case(64)(lambda: Case([N("LayerNormalization", ["x", "sc", "bi"], ["y"])],
                      [("x", (1e7 + rng.integers(-4, 5, (2, 16))).astype(np.float32))], [("y", F)],
                      [c("sc", r(16)), c("bi", r(16))]))
case(65)(lambda: Case([N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")],
                      [("x", r(1, 8, 2, 2))], [("y", F)]))
case(66)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_LOWER")],
                      [("x", r(1, 1, 4, 4))], [("y", F)]))
case(67)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])], [("x", r(1, 1, 5, 5))],
                      [("y", F)]))
case(68)(lambda: Case([N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", r(5))], [("y", F)],
                      [c("st", np.array([BIG], np.int64)), c("en", np.array([-BIG], np.int64)),
                       c("ax", np.array([0], np.int64)), c("sp", np.array([-1], np.int64))]))
case(69)(lambda: Case([N("Add", ["a", "b"], ["y"])], [("a", r(3, 1)), ("b", r(1, 3))], [("y", F)]))
case(70)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(1, 3, 4)), ("b", r(2, 4, 5))],
                      [("y", F)]))
case(71)(lambda: Case([N("Conv", ["x", "w"], ["y"], group=2)], [("x", r(1, 2, 5, 5))], [("y", F)],
                      [c("w", r(4, 1, 3, 3))]))


# C code generation
def race_locals():  # Softmax rows on the threads: the row's max and 1/sum shared by them
    k = Case([N("Softmax", ["x"], ["y"], axis=1)], [("x", r(1024, 1024, lo=-3, hi=3))], [("y", F)])
    k.threads, k.runs = 2, 10
    return k


case(72)(race_locals)
case(73)(lambda: Case([N("Cast", ["x"], ["h"], to=BF16), N("Cast", ["h"], ["y"], to=F)],
                      [("x", r(16))], [("y", F)]))
case(74)(lambda: Case([N("Cast", ["x"], ["h"], to=F16), N("Cast", ["h"], ["y"], to=F)],
                      [("x", r(8, lo=2e-5, hi=5e-5))], [("y", F)]))
case(75)(lambda: Case([N("Add", ["a", "b"], ["s"]), N("Cast", ["s"], ["y"], to=F)],
                      [("a", np.array([200, 100, 5, 250], np.uint8)),
                       ("b", np.array([100, 50, 10, 10], np.uint8))], [("y", F)]))
case(76)(lambda: Case([N("Exp", ["x"], ["y"])],
                      [("x", rng.uniform(90, 100, 6).astype(np.float64))], [("y", F64)]))
case(77)(lambda: Case([N("Add", ["a", "b"], ["y"])],
                      [("a", np.array([-1, 5, 7, -3], np.int64)),
                       ("b", np.array([0, -7, 1, 1], np.int64))], [("y", I64)]))
case(78)(lambda: Case([N("Cast", ["x"], ["h"], to=BF16), N("Cast", ["h"], ["y"], to=F)],
                      [("x", np.array([1.0, -2.0, 0.5, 3.0], np.float32))], [("y", F)]))

# memory plan
case(79)(lambda: Case([N("Transpose", ["x1"], ["a"]), N("Transpose", ["x2"], ["b"]),
                       N("Add", ["a", "b"], ["y"])], [("x1", r(3, 5)), ("x2", r(3, 5))], [("y", F)]))
case(80)(lambda: Case([N("Transpose", ["x1"], ["y1"]), N("Transpose", ["x2"], ["t"]),
                       N("Exp", ["t"], ["y2"])], [("x1", r(4, 6)), ("x2", r(4, 6))],
                      [("y1", F), ("y2", F)]))
case(81)(lambda: Case([N("Transpose", ["x1"], ["t"]), N("Concat", ["t", "t"], ["a"], axis=0),
                       N("Transpose", ["x2"], ["b"]), N("Add", ["a", "b"], ["y"])],
                      [("x1", r(4, 6)), ("x2", r(4, 12))], [("y", F)]))
case(82)(lambda: Case([N("Transpose", ["x1"], ["a"]), N("Transpose", ["x2"], ["b"]),
                       N("Add", ["a", "b"], ["y"])],
                      [("x1", rng.uniform(-1, 1, (4, 4))), ("x2", rng.uniform(-1, 1, (4, 4)))],
                      [("y", F64)]))
case(83)(lambda: Case([N("Transpose", ["x"], ["a"]), N("Exp", ["a"], ["b"]),
                       N("Transpose", ["b"], ["y"])], [("x", r(4, 6))], [("y", F)]))

# executor / runtime
case(84)(lambda: Case([N("TopK", ["x", "k"], ["v", "i"], axis=1), N("Relu", ["v"], ["y"])],
                      [("x", r(3, 6))], [("y", F)], [c("k", np.array([2], np.int64))]))
case(85)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Cast", ["nz"], ["y"], to=F)],
                      [("x", (rng.uniform(size=(6, 6)) > 0.5).astype(np.float32))],
                      [("nz", I64), ("y", F)]))
case(86)(lambda: Case([N("Add", ["a", "b"], ["y1"]), N("Sub", ["a", "b"], ["y2"])],
                      [("a", r(3, 4)), ("b", r(3, 4))], [("y1", F), ("y2", F)]))


def unit_chain():  # six kernels: two translation units
    ops = ["Transpose", "Exp", "Transpose", "Sigmoid", "Transpose", "Neg"]
    names = ["x"] + [f"t{i}" for i in range(len(ops) - 1)] + ["y"]
    return Case([N(op, [names[i]], [names[i + 1]]) for i, op in enumerate(ops)],
                [("x", r(4, 6))], [("y", F)])


def prefix_consts():  # two constants of 1100 floats, equal in their first 1024
    c1 = r(1100)
    c2 = c1.copy()
    c2[1050:] += 1
    return Case([N("Add", ["x", "c1"], ["a"]), N("Add", ["x", "c2"], ["b"]),
                 N("Sub", ["a", "b"], ["y"])], [("x", r(1100))], [("y", F)],
                [c("c1", c1), c("c2", c2)])


case(87)(unit_chain)
case(88)(lambda: Case([N("Trilu", ["x"], ["y"], upper=0)], [("x", r(4, 5))], [("y", F)], opset=14))
case(89)(prefix_consts)
case(90)(lambda: Case([N("Softplus", ["x"], ["y"])], [("x", r(3, 5, lo=750, hi=1000))],
                      [("y", F)]))  # drawn when run: inputs drawn at import shift every case



# ---- Set C (91-125): written from the compiler's code only (second blind set) ----
U32, U64, BOOL = TP.UINT32, TP.UINT64, TP.BOOL
NAN, INF = np.float32(np.nan), np.float32(np.inf)

# passes
case(91)(lambda: Case([N("Exp", ["x"], ["y1"]), N("Exp", ["x"], ["y2"])], [("x", r(6))],
                      [("y1", F), ("y2", F)]))
case(92)(lambda: Case([N("Sub", ["z", "x"], ["t"]), N("Div", ["one", "t"], ["y"])],
                      [("x", np.array([0.0, 1.0, -2.0, 0.0], np.float32))], [("y", F)],
                      [c("z", np.zeros(4, np.float32)), c("one", np.ones(4, np.float32))]))
case(93)(lambda: Case([N("Relu", ["x"], ["t"]), N("Transpose", ["t"], ["u"]),
                       N("MatMul", ["u", "w"], ["y"])], [("x", r(3, 4)), ("w", r(3, 5))],
                      [("y", F)]))
case(94)(lambda: Case([N("Shape", ["x"], ["y"], end=2)], [("x", r(2, 3, 4))], [("y", I64)]))
case(95)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["t"], beta=0.5),
                       N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                      [("a", r(2, 4))], [("y", F)],
                      [c("b", r(4, 3)), c("cc", r(3)), c("s", r(3, lo=0.5, hi=2)),
                       c("bb", r(3)), c("mu", r(3)), c("var", r(3, lo=0.1, hi=2))]))
case(96)(lambda: Case([N("Mul", ["x", "w1"], ["a"]), N("Mul", ["u", "w2"], ["b"]),
                       N("Transpose", ["b"], ["bt"]), N("Add", ["a", "bt"], ["y"])],
                      [("x", r(2, 3)), ("u", r(3, 2))], [("y", F)],
                      [c("w1", np.full((2, 3), 2.0, np.float32)),
                       c("w2", np.full((3, 2), 2.0, np.float32))]))
case(97)(lambda: Case([N("Relu", ["x"], ["t"]), N("Mul", ["t", "k"], ["y"])],
                      [("x", np.array([[0.5, 1.0, -2.0], [1.5, 0.25, 3.0]], np.float32))],
                      [("y", F)], [c("k", np.array([1.0, 2.0, 3.0], np.float32))]))
case(98)(lambda: Case([N("Clip", ["c", "", "hi"], ["t"]), N("Add", ["x", "t"], ["y"])],
                      [("x", r(4))], [("y", F)],
                      [c("c", np.array([-2.0, 0.5, 3.0, 1.0], np.float32)),
                       c("hi", np.array(0.8, np.float32))]))

# lowering
case(99)(lambda: Case([N("Relu", ["x"], ["y"])],
                      [("x", np.array([NAN, -1.0, 2.0, NAN, 0.5], np.float32))], [("y", F)]))
case(100)(lambda: Case([N("IsInf", ["x"], ["y"], detect_negative=0)],
                       [("x", np.array([INF, -INF, 1.0, -2.0, INF], np.float32))], [("y", BOOL)]))
case(101)(lambda: Case([N("OneHot", ["i", "d", "v"], ["y"])],
                       [("i", np.array([0, -1, 2, -3], np.int64))], [("y", F)],
                       [c("d", np.array(4, np.int64)), c("v", np.array([0.0, 1.0], np.float32))]))
case(102)(lambda: Case([N("EyeLike", ["x"], ["y"], k=1)], [("x", r(3, 4))], [("y", F)]))
case(103)(lambda: Case([N("Hardmax", ["x"], ["y"])],
                       [("x", np.array([[1, 3, 3, 2], [0, 0, 0, 0], [5, 1, 5, 5]], np.float32))],
                       [("y", F)]))
case(104)(lambda: Case([N("LRN", ["x"], ["y"], size=4, alpha=0.5)],
                       [("x", r(1, 6, 2, 2, lo=-2, hi=2))], [("y", F)]))
case(105)(lambda: Case([N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
                       [("x", r(1, 4, 2, 3))], [("y", F)],
                       [c("s", np.array([0.5, 2.0], np.float32)),
                        c("b", np.array([0.1, -0.3], np.float32))], opset=18))
case(106)(lambda: Case([N("RMSNormalization", ["x", "s"], ["y"])], [("x", r(2, 6, lo=0, hi=2))],
                       [("y", F)], [c("s", r(6, lo=0.5, hi=1.5))], opset=23))
case(107)(lambda: Case([N("LayerNormalization", ["x", "s", "b"], ["y"], axis=1)],
                       [("x", r(2, 3, 4))], [("y", F)], [c("s", r(3, 4)), c("b", r(3, 4))]))
case(108)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[0, 1, 0, 0])],
                       [("x", r(1, 1, 4, 4))], [("y", F)]))


def scatter_add():  # duplicate indices: the updates of one cell must be applied in turn
    k = Case([N("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="add")],
             [("x", r(2, 256)), ("u", r(512, 256))], [("y", F)],
             [c("i", rng.integers(0, 2, (512, 256)).astype(np.int64))], opset=16)
    k.threads, k.runs = 2, 5
    return k


case(109)(scatter_add)

# C code generation
case(110)(lambda: Case([N("Max", ["a", "b"], ["y"])],
                       [("a", np.array([NAN, 1.0, NAN, -3.0], np.float32)),
                        ("b", np.array([2.0, NAN, -1.0, 4.0], np.float32))], [("y", F)]))
case(111)(lambda: Case([N("Cast", ["x"], ["y"], to=F16)],
                       [("x", np.array([65505.0, 65519.0, -65510.0, 1.5], np.float32))],
                       [("y", F16)]))
case(112)(lambda: Case([N("Round", ["x"], ["y"])],
                       [("x", np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.7], np.float32))], [("y", F)]))
case(113)(lambda: Case([N("Cast", ["x"], ["y"], to=U64)],
                       [("x", np.array([1e19, 3.0, 1.5e19, 2.0**63], np.float64))], [("y", U64)]))
case(114)(lambda: Case([N("Max", ["a", "b"], ["y"])],
                       [("a", np.array([3000000000, 5, 4000000000, 1], np.uint32)),
                        ("b", np.array([7, 2147483648, 1, 2], np.uint32))], [("y", U32)]))

case(115)(lambda: Case([N("Min", ["a", "b"], ["y"])],
                       [("a", np.array([-5, 3, -1, 7], np.int16)),
                        ("b", np.array([2, -4, -3, 1], np.int16))], [("y", TP.INT16)]))
case(116)(lambda: Case([N("Cast", ["x"], ["y"], to=F16)],
                       [("x", np.array([INF, -INF, 1.0, 70000.0], np.float32))], [("y", F16)]))


# memory plan
def if_outer():  # the branches read t, computed by a kernel before other kernels run
    then_g = H.make_graph([N("Neg", ["t"], ["o"])], "then", [],
                          [H.make_tensor_value_info("o", F, None)])
    else_g = H.make_graph([N("Sigmoid", ["t"], ["o2"])], "else", [],
                          [H.make_tensor_value_info("o2", F, None)])
    return Case([N("Exp", ["x"], ["t"]), N("Transpose", ["x2"], ["u"]), N("Relu", ["u"], ["v"]),
                 N("Transpose", ["v"], ["w"]),
                 N("If", ["k"], ["y"], then_branch=then_g, else_branch=else_g)],
                [("x", r(8, 8)), ("x2", r(8, 8)), ("k", np.array(True))], [("y", F), ("w", F)])


case(118)(if_outer)

case(117)(lambda: Case([N("Transpose", ["x"], ["t"]), N("Concat", ["t", "t", "t"], ["u"], axis=0),
                        N("Transpose", ["u"], ["v"]), N("Exp", ["t"], ["w"])],
                       [("x", r(4, 6))], [("v", F), ("w", F)]))
case(119)(lambda: Case([N("Transpose", ["x"], ["t"]), N("Gather", ["t", "i"], ["y"], axis=0)],
                       [("x", r(4, 6)), ("i", np.array([0, 2, 5], np.int64))], [("y", F)]))
case(123)(lambda: Case([N("Slice", ["x", "st", "en"], ["e"]), N("Relu", ["e"], ["r"]),
                        N("Concat", ["r", "x"], ["y"], axis=0)], [("x", r(3, 4))], [("y", F)],
                       [c("st", np.array([2], np.int64)), c("en", np.array([2], np.int64))]))
case(125)(lambda: Case([N("Transpose", ["x"], ["y1"]), N("Exp", ["y1"], ["y2"])], [("x", r(4, 6))],
                       [("y1", F), ("y2", F)]))

# executor and runtime
case(120)(lambda: Case([N("Transpose", ["x"], ["t"]), N("TopK", ["t", "k"], ["v", "i"], axis=1),
                        N("MatMul", ["v", "w"], ["y"])], [("x", r(6, 4)), ("w", r(3, 5))],
                       [("y", F)], [c("k", np.array([3], np.int64))]))
case(121)(lambda: Case([N("Transpose", ["x"], ["t"]), N("ReduceSum", ["t", "ax"], ["u"]),
                        N("Gather", ["u", "i"], ["y"], axis=0)],
                       [("x", r(8, 8, lo=1, hi=2)), ("i", np.array([0, 2], np.int64))], [("y", F)],
                       [c("ax", np.array([1], np.int64))]))
case(122)(lambda: Case([N("TopK", ["x", "k"], ["v", "i"], axis=1)], [("x", r(3, 6))],
                       [("v", F), ("i", I64)], [c("k", np.array([2], np.int64))]))



def dyn_inputs():  # two inputs of unnamed dynamic dims: each takes its tensor's extents
    k = Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(3, 4)), ("b", r(4, 5))], [("y", F)])
    k.dyn = {"a": [None, None], "b": [None, None]}
    return k


case(124)(dyn_inputs)


# ---- Set D (126-160) ----
U8, F64, F16, BOOL = TP.UINT8, TP.DOUBLE, TP.FLOAT16, TP.BOOL
# passes
case(126)(lambda: Case([N("Transpose", ["x"], ["t1"], perm=[1, 0, 2, 3]),
                        N("Transpose", ["x"], ["t2"], perm=[1, 0, 3, 2]),
                        N("Add", ["t1", "t2"], ["y"])],
                       [("x", r(2, 3, 4, 4))], [("y", F)]))
case(127)(lambda: Case([N("Neg", ["a"], ["na"]), N("Add", ["na", "b"], ["y"])],
                       [("a", r(3, 4)), ("b", r(3, 4))], [("y", F)]))
case(128)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["s"]),
                        N("Gather", ["s", "i0"], ["n"], axis=0), N("Unsqueeze", ["n", "ax"], ["n1"]),
                        N("Concat", ["n1", "m1"], ["t"], axis=0), N("Reshape", ["w", "t"], ["y"])],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32)), ("w", r(4, 6))],
                       [("y", F)],
                       [c("i0", np.array(0, np.int64)), c("ax", np.array([0], np.int64)),
                        c("m1", np.array([-1], np.int64))], opset=13))
case(129)(lambda: Case([N("Conv", ["x", "w"], ["cv"]),
                        N("BatchNormalization", ["cv", "s", "b", "m", "v"], ["y1"]),
                        N("Relu", ["cv"], ["y2"])],
                       [("x", r(1, 2, 5, 5))], [("y1", F), ("y2", F)],
                       [c("w", r(3, 2, 3, 3)), c("s", r(3, lo=0.5, hi=2)), c("b", r(3)),
                        c("m", r(3)), c("v", r(3, lo=0.5, hi=2))]))
case(130)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["s"]),
                        N("Cast", ["s"], ["y"], to=F)],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", F)]))
case(131)(lambda: Case([N("Gemm", ["a", "w", "cc"], ["g"]),
                        N("BatchNormalization", ["g", "s", "b", "m", "v"], ["y"])],
                       [("a", r(3, 4))], [("y", F)],
                       [c("w", r(4, 5)), c("cc", r(3, 5)), c("s", r(5, lo=0.5, hi=2)),
                        c("b", r(5)), c("m", r(5)), c("v", r(5, lo=0.5, hi=2))]))
case(132)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Transpose", ["nz"], ["tz"]),
                        N("Shape", ["tz"], ["s"]), N("Slice", ["s", "st", "en"], ["t"]),
                        N("Concat", ["m1", "t"], ["u"], axis=0), N("Reshape", ["w", "u"], ["y"])],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32)), ("w", r(4, 6))],
                       [("y", F)],
                       [c("st", np.array([1], np.int64)),
                        c("en", np.array([np.iinfo(np.int64).max], np.int64)),
                        c("m1", np.array([-1], np.int64))], opset=13))
case(133)(lambda: Case([N("MatMul", ["a", "w"], ["m"]), N("Add", ["m", "bias"], ["y"])],
                       [("a", r(2, 3, 4))], [("y", F)], [c("w", r(4, 5)), c("bias", r(5))]))
case(134)(lambda: Case([N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", r(6, 6))],
                       [("y", F)],
                       [c("st", np.array([0, 0], np.int64)), c("en", np.array([6, 6], np.int64)),
                        c("ax", np.array([1, 0], np.int64)), c("sp", np.array([2, 1], np.int64))],
                       opset=13))
case(135)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="edge")], [("x", r(3, 4))], [("y", F)],
                       [c("p", np.array([0, 0, 1, 2], np.int64))], opset=13))
case(136)(lambda: Case([N("Celu", ["x"], ["y"], alpha=2.0)], [("x", r(3, 4, lo=-3, hi=1))],
                       [("y", F)]))
case(137)(lambda: Case([N("Shrink", ["x"], ["y"], lambd=0.5, bias=1.5)],
                       [("x", r(4, 4, lo=-3, hi=3))], [("y", F)]))
case(138)(lambda: Case([N("ReduceMin", ["x", "ax"], ["y"])],
                       [("x", rng.integers(200, 250, (3, 4)).astype(np.uint8))], [("y", U8)],
                       [c("ax", np.array([1], np.int64))], opset=18))
case(139)(lambda: Case([N("ReduceSum", ["x", "ax"], ["y"])], [("x", r(3, 4))], [("y", F)],
                       [c("ax", np.zeros(0, np.int64))], opset=13))
case(140)(lambda: Case([N("ArgMin", ["x"], ["y"], axis=1, select_last_index=1)],
                       [("x", np.array([[1, 0, 0, 2], [0, 3, 0, 0]], np.float32))], [("y", I64)]))
case(141)(lambda: Case([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
                       [("x", r(2, 3, 3))], [("y", F)],
                       [c("s", r(3, lo=0.5, hi=2)), c("b", r(3)), c("m", r(3)),
                        c("v", r(3, lo=0.5, hi=2))]))
case(142)(lambda: Case([N("LpNormalization", ["x"], ["y"], axis=1, p=2)],
                       [("x", np.concatenate([r(2, 4), np.zeros((1, 4), np.float32)]))],
                       [("y", F)]))
case(143)(lambda: Case([N("AveragePool", ["x"], ["y"], kernel_shape=[3], pads=[0, 1],
                          count_include_pad=1)], [("x", r(1, 1, 5))], [("y", F)]))
case(144)(lambda: Case([N("GatherElements", ["x", "i"], ["y"], axis=0)],
                       [("x", r(4, 3)), ("i", np.array([[-1, 0, -2], [1, -3, -4]], np.int64))],
                       [("y", F)]))
# C code generation
case(145)(lambda: Case([N("Cast", ["x"], ["y"], to=F16)],
                       [("x", np.array([4.0e-5, -3.5e-5, 5.5e-5, 0.25], np.float64))], [("y", F16)]))
case(146)(lambda: Case([N("Cast", ["x"], ["y"], to=I64)],
                       [("x", np.array([123456789.0, -98765432.5, 3.0, 2.0**40 + 7], np.float64))],
                       [("y", I64)]))
case(147)(lambda: Case([N("Abs", ["x"], ["y"])],
                       [("x", np.array([-(2**60 + 1), 2**55 + 3, -5, 0], np.int64))], [("y", I64)]))
case(148)(lambda: Case([N("LeakyRelu", ["x"], ["y"], alpha=3.3e-7)],
                       [("x", r(3, 4, lo=-100, hi=-50))], [("y", F)]))
case(149)(lambda: Case([N("MatMul", ["a", "b"], ["y"])],
                       [("a", np.array([[1e8 + 1, -1e8, 3], [2, 1e8 + 3, -1e8]], np.float64)),
                        ("b", np.array([[1, 2], [1, 2], [1, 1]], np.float64))], [("y", F64)]))
case(150)(lambda: Case([N("Cast", ["x"], ["h"], to=F16), N("Cast", ["h"], ["t"], to=F),
                        N("Mul", ["t", "big"], ["y"])],
                       [("x", (np.array([0.7, 3.6, 10.8, -5.9], np.float32) * 2.0**-24))],
                       [("y", F)], [c("big", np.array(2.0**24, np.float32))]))


def softmax_threads():  # rows on the threads
    k = Case([N("Softmax", ["x"], ["y"], axis=1)], [("x", r(64, 32))], [("y", F)])
    k.threads = 4
    return k


case(151)(lambda: Case([N("Neg", ["x"], ["t"]), N("Reciprocal", ["t"], ["y"])],
                       [("x", np.array([0.0, 1.0, -2.0, 0.0], np.float32))], [("y", F)]))


# memory plan
def plan_chain():  # values of several sizes and lives
    return Case([N("Exp", ["x"], ["a"]), N("Transpose", ["a"], ["b"]),
                 N("ReduceSum", ["b", "ax"], ["s"]), N("Relu", ["x2"], ["c"]),
                 N("MatMul", ["b", "c"], ["d"]), N("Mul", ["d", "s"], ["e"]),
                 N("Transpose", ["e"], ["f"]), N("Tanh", ["f"], ["y"])],
                [("x", r(32, 16)), ("x2", r(32, 8))], [("y", F)],
                [c("ax", np.array([1], np.int64))], opset=13)




def plan_gaps():  # a long-lived value placed beside a big early one and a small late one
    return Case([N("Exp", ["x"], ["keep"]), N("Transpose", ["z"], ["big"]),
                 N("ReduceSum", ["big", "ax"], ["s1"]), N("Transpose", ["s1"], ["s2"]),
                 N("MatMul", ["s2", "w"], ["s3"]), N("Transpose", ["s3"], ["s4"]),
                 N("Add", ["keep", "s4"], ["y"])],
                [("x", r(16, 1)), ("z", r(64, 64)), ("w", r(1, 16))], [("y", F)],
                [c("ax", np.array([0], np.int64))], opset=13)


def plan_transpose():  # the input of a Transpose dies at its step
    return Case([N("MatMul", ["x", "w1"], ["a"]), N("Transpose", ["a"], ["b"]),
                 N("MatMul", ["b", "w2"], ["y"])],
                [("x", r(24, 24)), ("w1", r(24, 24)), ("w2", r(24, 8))], [("y", F)])


case(152)(plan_gaps)
case(153)(lambda: Case([N("Relu", ["x"], ["t"]), N("Reshape", ["t", "s"], ["u"]),
                        N("Exp", ["u"], ["y"])],
                       [("x", r(4, 6))], [("y", F)], [c("s", np.array([6, 4], np.int64))]))
case(154)(plan_gaps)
case(155)(plan_chain)
case(156)(plan_gaps)


# executor and runtime
case(157)(unit_chain)


case(158)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Cast", ["nz"], ["y"], to=F)],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", F)]))


def if_heap():  # a value of data-dependent shape read only by a branch
    then_g = H.make_graph([N("Cast", ["nz"], ["o"], to=F)], "then", [],
                          [H.make_tensor_value_info("o", F, None)])
    else_g = H.make_graph([N("Cast", ["nz"], ["o2"], to=F)], "else", [],
                          [H.make_tensor_value_info("o2", F, None)])
    return Case([N("NonZero", ["x"], ["nz"]),
                 N("If", ["k"], ["y"], then_branch=then_g, else_branch=else_g)],
                [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32)), ("k", np.array(True))],
                [("y", F)])


case(159)(if_heap)


def two_symbols():  # two symbolic dims, one name the prefix of the other
    k = Case([N("Concat", ["a", "b"], ["y"], axis=0)], [("a", r(3, 4)), ("b", r(5, 4))], [("y", F)])
    k.dyn = {"a": ["N", 4], "b": ["NB", 4]}
    return k


case(160)(two_symbols)


# ---- Set E (161-195): written from the compiler's code only (fourth blind set) ----
I8 = TP.INT8
# passes
case(161)(lambda: Case([N("LeakyRelu", ["x"], ["y1"], alpha=0.0),
                        N("LeakyRelu", ["x"], ["y2"], alpha=-0.0), N("Reciprocal", ["y1"], ["z1"]),
                        N("Reciprocal", ["y2"], ["z2"])], [("x", r(6, lo=-2, hi=-1))],
                       [("z1", F), ("z2", F)]))
case(162)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["s"]),
                        N("Slice", ["s", "st", "en", "ax", "sp"], ["y"])],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", I64)],
                       [c("st", np.array([0], np.int64)),
                        c("en", np.array([np.iinfo(np.int64).min], np.int64)),
                        c("ax", np.array([0], np.int64)), c("sp", np.array([-1], np.int64))],
                       opset=13))
case(163)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["t"], beta=0.5),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                       [("a", r(2, 4))], [("y", F)],
                       [c("b", r(4, 3)), c("cc", r(3, lo=1, hi=2)), c("s", r(3, lo=0.5, hi=2)),
                        c("bb", r(3)), c("mu", r(3)), c("var", r(3, lo=0.1, hi=2))]))
case(164)(lambda: Case([N("ConvTranspose", ["x", "w"], ["t"]),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                       [("x", r(1, 3, 4, 4))], [("y", F)],
                       [c("w", r(3, 3, 3, 3)), c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)),
                        c("mu", r(3)), c("var", r(3, lo=0.1, hi=2))]))
case(165)(lambda: Case([N("Relu", ["x"], ["u"]), N("Squeeze", ["u", "a1"], ["s"]),
                        N("Unsqueeze", ["s", "a2"], ["y"])], [("x", r(2, 3, 1))], [("y", F)],
                       [c("a1", np.array([-1], np.int64)), c("a2", np.array([1], np.int64))],
                       opset=13))


def if_const():  # a constant read only by the branches
    then_g = H.make_graph([N("Add", ["x", "cw"], ["o"])], "then", [],
                          [H.make_tensor_value_info("o", F, None)])
    else_g = H.make_graph([N("Mul", ["x", "cw"], ["o2"])], "else", [],
                          [H.make_tensor_value_info("o2", F, None)])
    return Case([N("If", ["k"], ["y"], then_branch=then_g, else_branch=else_g)],
                [("x", r(4)), ("k", np.array(True))], [("y", F)], [c("cw", r(4))])


case(166)(if_const)
case(167)(lambda: Case([N("Relu", ["x"], ["u"]), N("Transpose", ["u"], ["t"]),
                        N("Reshape", ["t", "s"], ["y"])], [("x", r(2, 3))], [("y", F)],
                       [c("s", np.array([6], np.int64))]))


def fill_pair():  # two big fills of a computed shape, equal but for their value
    one = H.make_tensor("v1", F, [1], [1.0])
    two = H.make_tensor("v2", F, [1], [2.0])
    return Case([N("Shape", ["x"], ["s"]), N("ConstantOfShape", ["s"], ["f1"], value=one),
                 N("ConstantOfShape", ["s"], ["f2"], value=two), N("Sub", ["f1", "f2"], ["d"]),
                 N("Add", ["d", "x"], ["y"])], [("x", r(300, 300))], [("y", F)])


case(168)(fill_pair)
# lowering
case(169)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", r(1, 3))], [("y", F)],
                       [c("p", np.array([0, 3, 0, 3], np.int64))], opset=13))
case(170)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=1)], [("x", r(3, 4, 5))], [("y", F)],
                       [c("i", np.array([[0, 3], [2, 1]], np.int64))]))
case(171)(lambda: Case([N("SpaceToDepth", ["x"], ["y"], blocksize=2)], [("x", r(1, 1, 4, 4))],
                       [("y", F)]))
case(172)(lambda: Case([N("Hardmax", ["x"], ["y"])], [("x", r(2, 3, 4))], [("y", F)], opset=11))
case(173)(lambda: Case([N("OneHot", ["i", "d", "v"], ["y"])],
                       [("i", np.array([1, 3, 0, 2], np.int64))], [("y", F)],
                       [c("d", np.array(4, np.int64)), c("v", np.array([0.0, 1.0], np.float32))]))
case(174)(lambda: Case([N("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="max")],
                       [("x", r(4, 3)), ("u", r(2, 3, lo=-2, hi=2))], [("y", F)],
                       [c("i", np.array([[1, 0, 3], [2, 2, 0]], np.int64))], opset=18))
case(175)(lambda: Case([N("GatherND", ["x", "i"], ["y"], batch_dims=1)], [("x", r(2, 3, 5))],
                       [("y", F)], [c("i", np.array([[-1], [-2]], np.int64))]))
case(176)(unary("GlobalAveragePool", x=r(1, 2, 3, 5)))
case(177)(lambda: Case([N("BitShift", ["a", "b"], ["y"], direction="LEFT")],
                       [("a", np.array([1, 3, 5, 7], np.uint64)),
                        ("b", np.array([40, 33, 2, 63], np.uint64))], [("y", U64)]))
case(178)(lambda: Case([N("Clip", ["x", "lo", "hi"], ["y"])], [("x", r(6))], [("y", F)],
                       [c("lo", np.array(0.3, np.float32)), c("hi", np.array(-0.3, np.float32))]))
case(179)(lambda: Case([N("LRN", ["x"], ["y"], size=3, alpha=0.5)], [("x", r(1, 5, 2, 2, lo=-2, hi=2))],
                       [("y", F)]))
# C code generation
case(180)(lambda: Case([N("Pad", ["x", "p", "v"], ["t"]), N("Reciprocal", ["t"], ["y"])],
                       [("x", r(4, lo=1, hi=2))], [("y", F)],
                       [c("p", np.array([1, 1], np.int64)), c("v", np.array(-0.0, np.float32))],
                       opset=13))
case(181)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
                       [("x", r(1, 1, 4, 4))], [("y", F)]))
case(182)(lambda: Case([N("Cast", ["x"], ["y"], to=F)],
                       [("x", np.array([-np.inf, np.inf, 1, -2], np.float16))], [("y", F)]))
case(183)(matmul_const(4, 8, 32))
case(184)(lambda: Case([N("BitwiseNot", ["x"], ["y"])],
                       [("x", np.array([5, 0, -1, 12], np.int32))], [("y", I32)], opset=18))
case(185)(lambda: Case([N("Cast", ["x"], ["y"], to=F16)],
                       [("x", np.array([1e5, -7e4, 1.0, 65504.0], np.float64))], [("y", F16)]))
case(186)(unary("Floor", x=r(3, 5, lo=-3, hi=3)))
# memory plan
case(187)(plan_gaps)
case(188)(plan_gaps)
case(189)(plan_gaps)
case(190)(lambda: Case([N("Transpose", ["z"], ["k"]), N("Transpose", ["x"], ["a"]),
                        N("Exp", ["a"], ["e"]), N("Reshape", ["e", "s"], ["v"]),
                        N("Transpose", ["v"], ["y"]), N("Sigmoid", ["k"], ["y2"])],
                       [("x", r(4, 6)), ("z", r(8, 8))], [("y", F), ("y2", F)],
                       [c("s", np.array([4, 6], np.int64))]))
case(191)(plan_transpose)
# executor and runtime
case(192)(lambda: Case([N("NonZero", ["x"], ["y"])],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", I64)]))
case(193)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Cast", ["nz"], ["y"], to=F),
                        N("Neg", ["nz"], ["z"])],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", F), ("z", I64)]))
case(194)(lambda: Case([N("Trilu", ["x"], ["y"], upper=1)], [("x", r(2, 3, 4))], [("y", F)],
                       opset=14))
case(195)(lambda: Case([N("Relu", ["x"], ["t"]), N("Reshape", ["t", "s"], ["y"])],
                       [("x", r(4, 6))], [("y", F)], [c("s", np.array([3, 8], np.int64))]))



# ---- Set F (196-225): written from the compiler's code only (fifth blind set) ----
# passes
case(196)(lambda: conv_bn())
case(197)(lambda: Case([N("Conv", ["x", "w"], ["t"]),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"],
                          training_mode=1)],
                       [("x", r(2, 2, 4, 4))], [("y", F)],
                       [c("w", r(3, 2, 3, 3)), c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)),
                        c("mu", r(3)), c("var", r(3, lo=0.1, hi=2))], opset=15))
def rnn_pair():  # two RNNs that differ only in their activations
    w, rr = r(1, 3, 2), r(1, 3, 3)
    return Case([N("RNN", ["x", "w", "rr"], ["y1"], hidden_size=3, activations=["Tanh"]),
                 N("RNN", ["x", "w", "rr"], ["y2"], hidden_size=3, activations=["Relu"]),
                 N("Sub", ["y1", "y2"], ["y"])], [("x", r(2, 1, 2, lo=-2, hi=2))], [("y", F)],
                [c("w", w), c("rr", rr)])


case(198)(rnn_pair)
case(199)(lambda: Case([N("Max", ["xi", "zi"], ["yi"]), N("Add", ["xf", "zf"], ["yf"])],
                       [("xi", np.array([-3, 5, -1], np.int32)), ("xf", r(3))],
                       [("yi", I32), ("yf", F)],
                       [c("zi", np.zeros(3, np.int32)), c("zf", np.zeros(3, np.float32))]))

def shape_gather():  # Gather(Shape-15 with start) by a negative index; the last dim data-dependent
    return Case([N("NonZero", ["x"], ["nz"]), N("Unsqueeze", ["nz", "ax"], ["u"]),
                 N("Shape", ["u"], ["s"], start=1), N("Gather", ["s", "i"], ["y"])],
                [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", I64)],
                [c("i", np.array([-3], np.int64)), c("ax", np.array([0, 1], np.int64))], opset=15)


case(200)(shape_gather)
case(201)(lambda: Case([N("Relu", ["x"], ["t"]), N("Mul", ["t", "one"], ["y"])], [("x", r(3))],
                       [("y", F)], [c("one", np.ones((2, 3), np.float32))]))
case(202)(lambda: Case([N("Sub", ["x", "z"], ["t"]), N("Reciprocal", ["t"], ["y"])],
                       [("x", np.array([-0.0, 1.0, -0.0, 2.0], np.float32))], [("y", F)],
                       [c("z", np.full(4, -0.0, np.float32))]))
# lowering
case(203)(lambda: Case([N("Sign", ["x"], ["y"])],
                       [("x", np.array([np.nan, -2.0, 0.0, 3.0], np.float32))], [("y", F)]))
case(204)(lambda: Case([N("Div", ["a", "b"], ["y"])],
                       [("a", np.array([250, 7, 255, 100], np.uint8)),
                        ("b", np.array([255, 255, 255, 3], np.uint8))], [("y", TP.UINT8)]))
case(205)(lambda: Case([N("OneHot", ["i", "d", "v"], ["y"])],
                       [("i", np.array([1, 3, 0], np.int64))], [("y", F)],
                       [c("d", np.array(4, np.int64)), c("v", np.array([0.5, 2.0], np.float32))]))
case(206)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.BOOL)],
                       [("x", np.array([0.5, -0.25, 0.0, 2.0], np.float32))], [("y", TP.BOOL)]))
case(207)(lambda: Case([N("Expand", ["x", "s"], ["y"])], [("x", r(3))], [("y", F)],
                       [c("s", np.array([2, 3], np.int64))]))
case(208)(lambda: Case([N("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="add")],
                       [("x", r(4, 3)), ("u", r(2, 3))], [("y", F)],
                       [c("i", np.array([[1, 0, 3], [1, 0, 2]], np.int64))], opset=18))
case(209)(lambda: Case([N("CumSum", ["x", "ax"], ["y"])],
                       [("x", r(3, 4)), ("ax", np.array(-1, np.int64))], [("y", F)]))
case(210)(lambda: Case([N("ReduceLogSumExp", ["x"], ["y"], axes=[1])],
                       [("x", np.array([[-np.inf, -np.inf], [1.0, 2.0]], np.float32))], [("y", F)]))
case(211)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
                       [("x", r(1, 1, 5, 5))], [("y", F)], opset=12))
case(212)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["y"])], [("a", r(3, 4))], [("y", F)],
                       [c("b", r(4, 3)), c("cc", np.array([1.0, 2.0, 3.0], np.float32))]))
case(213)(lambda: Case([N("ThresholdedRelu", ["x"], ["y"])],
                       [("x", np.array([1.0, 0.5, 2.0, 1.0], np.float32))], [("y", F)]))
# C code generation
case(214)(lambda: Case([N("Abs", ["x"], ["y"])],
                       [("x", np.array([-5000000000, 3, -7, 2 ** 40], np.int64))], [("y", TP.INT64)]))
case(215)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.FLOAT16)],
                       [("x", np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 2.0, -(1 + 2 ** -11)],
                                       np.float32))], [("y", TP.FLOAT16)]))
case(216)(lambda: Case([N("Cast", ["x"], ["y"], to=I32)],
                       [("x", np.array([np.nan, 1.5, -2.5, 3.0], np.float32))], [("y", I32)]))
case(217)(lambda: Case([N("Cast", ["x"], ["t"], to=TP.BFLOAT16), N("Cast", ["t"], ["y"], to=F)],
                       [("x", np.array([0x7f800001, 0x3f800000, 0xff800003, 0x40000000],
                                       np.uint32).view(np.float32))], [("y", F)]))
case(218)(lambda: Case([N("Pad", ["x", "p", "v"], ["y"])], [("x", np.ones(3, np.float64))],
                       [("y", TP.DOUBLE)],
                       [c("p", np.array([1, 1], np.int64)), c("v", np.array(1e300, np.float64))],
                       opset=13))
case(219)(lambda: Case([N("Min", ["a", "b"], ["y"])],
                       [("a", np.array([np.nan, 1.0, 2.0], np.float64)),
                        ("b", np.array([1.0, np.nan, 0.5], np.float64))], [("y", F64)]))
case(220)(lambda: Case([N("Cast", ["x"], ["y"], to=I32)],
                       [("x", np.array([-5, 3, -300, 7], np.int16))], [("y", I32)]))

# memory plan
case(221)(plan_gaps)
def conv_scratch():  # a Conv whose im2col scratch lives beside its input and output
    return Case([N("Relu", ["x"], ["a"]), N("Conv", ["a", "w"], ["m"], strides=[4, 4]),
                 N("Neg", ["m"], ["y"])], [("x", r(1, 4, 40, 40))], [("y", F), ("a", F)],
                [c("w", r(8, 4, 3, 3))])


case(222)(conv_scratch)
case(223)(conv_scratch)


# executor and runtime
def unnamed_dims():  # an input declared with two unnamed unknown dims
    k = Case([N("Relu", ["x"], ["y"])], [("x", r(2, 3))], [("y", F)])
    k.dyn = {"x": [None, None]}
    return k


case(224)(unnamed_dims)
case(225)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Cast", ["nz"], ["y"], to=F)],
                       [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32))], [("y", F)]))


# ---- set G ----
# passes
case(226)(lambda: Case([N("Shape", ["x"], ["y"], end=-1)], [("x", r(2, 3, 4))], [("y", I64)],
                       opset=15))
def shape_slice_steps():  # Slice(Shape(v), 0, 3, axes 0, steps 2) with v's last dim data-dependent
    return Case([N("NonZero", ["x"], ["nz"]), N("Cast", ["nz"], ["nf"], to=F),
                 N("Unsqueeze", ["nf", "ax"], ["u"]), N("Mul", ["z", "u"], ["m"]),
                 N("Shape", ["m"], ["s"]), N("Slice", ["s", "st", "en", "a0", "sp"], ["y"])],
                [("x", np.array([[1, 0, 2], [0, 3, 0]], np.float32)), ("z", r(3, 4, 1, 1))],
                [("y", I64)],
                [c("ax", np.array([0, 1], np.int64)), c("st", np.array([0], np.int64)),
                 c("en", np.array([3], np.int64)), c("a0", np.array([0], np.int64)),
                 c("sp", np.array([2], np.int64))], opset=13)


case(227)(shape_slice_steps)
def rnn_alpha_pair():  # two RNNs that differ only in activation_alpha (0.5 and 0.25)
    w, rr = r(1, 3, 2), r(1, 3, 3)
    return Case([N("RNN", ["x", "w", "rr"], ["y1"], hidden_size=3, activations=["LeakyRelu"],
                   activation_alpha=[0.5]),
                 N("RNN", ["x", "w", "rr"], ["y2"], hidden_size=3, activations=["LeakyRelu"],
                   activation_alpha=[0.25]),
                 N("Sub", ["y1", "y2"], ["y"])], [("x", r(2, 1, 2, lo=-2, hi=2))], [("y", F)],
                [c("w", w), c("rr", rr)])


case(228)(rnn_alpha_pair)
case(229)(lambda: Case([N("Relu", ["x"], ["t"]), N("Unsqueeze", ["t", "a2"], ["u"]),
                        N("Squeeze", ["u", "a1"], ["y"])], [("x", r(2, 3))], [("y", F)],
                       [c("a2", np.array([0, 1], np.int64)), c("a1", np.array([0], np.int64))],
                       opset=13))
case(230)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["t"]),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                       [("a", r(2, 4))], [("y", F)],
                       [c("b", r(4, 3)), c("cc", np.array([0.7], np.float32)),
                        c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)), c("mu", r(3)),
                        c("var", r(3, lo=0.1, hi=2))]))
# lowering
case(231)(unary("Selu", x=r(3, 5, lo=-2, hi=2)))
case(232)(lambda: Case([N("Pow", ["x", "e"], ["y"])],
                       [("x", np.array([1.5, 2.5, -1.5, 3.2], np.float32)),
                        ("e", np.array([2, 3, 2, 1], np.int64))], [("y", F)], opset=15))
case(233)(lambda: Case([N("HardSwish", ["x"], ["y"])], [("x", r(3, 5, lo=-4, hi=4))], [("y", F)],
                       opset=14))
case(234)(lambda: Case([N("Transpose", ["x"], ["t"]), N("Neg", ["t"], ["a"]),
                        N("Mul", ["a", "t"], ["y"])], [("x", r(4, 4))], [("a", F), ("y", F)]))
case(235)(lambda: Case([N("Tile", ["x", "rp"], ["y"])], [("x", r(2, 3))], [("y", F)],
                       [c("rp", np.array([2, 2], np.int64))]))
case(236)(lambda: Case([N("ReduceSumSquare", ["x"], ["y"], axes=[1])], [("x", r(3, 4))],
                       [("y", F)], opset=13))
case(237)(lambda: Case([N("Relu", ["x"], ["t"]), N("Dropout", ["t"], ["y", "mask"]),
                        N("Cast", ["mask"], ["m"], to=F)],
                       [("x", r(4))], [("y", F), ("m", F)], opset=13))
case(238)(lambda: Case([N("CumSum", ["x", "ax"], ["y"], reverse=1)], [("x", r(5))], [("y", F)],
                       [c("ax", np.array(0, np.int64))]))
case(239)(lambda: Case([N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
                       [("x", r(1, 4, 2, 3))], [("y", F)],
                       [c("s", np.array([0.5, 2.0, -1.0, 1.5], np.float32)),
                        c("b", np.array([0.1, -0.2, 0.3, 0.0], np.float32))], opset=21))
case(240)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(11, 16)), ("b", r(16, 32))],
                       [("y", F)]))
case(241)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(8, 16)), ("b", r(16, 32))],
                       [("y", F)]))
case(242)(lambda: Case([N("MatMul", ["a", "b"], ["y"])],
                       [("a", r(5, 6).astype(np.float64)), ("b", r(6, 7).astype(np.float64))],
                       [("y", TP.DOUBLE)]))
case(243)(lambda: Case([N("Cast", ["x"], ["h"], to=TP.FLOAT16), N("Cast", ["h"], ["f"], to=F),
                        N("Reciprocal", ["f"], ["y"])],
                       [("x", np.array([-0.0, 0.0, -2.0, 0.5], np.float64))], [("y", F)]))
case(244)(lambda: Case([N("Relu", ["x"], ["t"]), N("Mod", ["t", "d"], ["y"], fmod=1)],
                       [("x", np.array([5.0, 7.5, 2.9, 8.0, 0.4, 11.0], np.float32))], [("y", F)],
                       [c("d", np.array([3.0, 2.0, 2.0, 3.0, 0.3, 4.0], np.float32))]))
case(245)(lambda: Case([N("Cast", ["x"], ["h"], to=TP.FLOAT16), N("Cast", ["h"], ["y"], to=F)],
                       [("x", np.array([1 + 2**-11, 1 + 3 * 2**-11, 2 + 2**-10, 0.25,
                                        -(1 + 2**-11), 3.0], np.float64))], [("y", F)]))
case(246)(lambda: Case([N("Relu", ["x"], ["y"])], [("x", r(4, 4))], [("y", F)]))
case(247)(lambda: Case([N("Relu", ["x"], ["a"]), N("Transpose", ["x"], ["b"]),
                        N("MatMul", ["a", "b"], ["y"])], [("x", r(4, 4))], [("y", F)]))
case(248)(lambda: Case([N("Relu", ["x"], ["a"]), N("Cast", ["a"], ["q"], to=TP.INT4),
                        N("Cast", ["q"], ["b"], to=F), N("Transpose", ["a"], ["at"]),
                        N("Add", ["b", "at"], ["y"])], [("x", r(32, 32, lo=-7, hi=7))], [("y", F)],
                       opset=21))


def if_reading_outer():
    thn = H.make_graph([N("Add", ["a", "one"], ["o1"])], "then", [],
                       [H.make_tensor_value_info("o1", F, None)], [c("one", np.ones(3, np.float32))])
    els = H.make_graph([N("Sub", ["a", "one2"], ["o2"])], "else", [],
                       [H.make_tensor_value_info("o2", F, None)], [c("one2", np.ones(3, np.float32))])
    return Case([N("Identity", ["x"], ["t"]), N("Neg", ["t"], ["u"]), N("Relu", ["u"], ["a"]),
                 N("Exp", ["x"], ["e"]), N("If", ["cond"], ["y"], then_branch=thn, else_branch=els),
                 N("Add", ["y", "e"], ["z"])], [("x", r(3)), ("cond", np.array(True))], [("z", F)])


case(249)(if_reading_outer)
case(250)(lambda: Case([N("ReduceSum", ["x"], ["s1"], keepdims=0),
                        N("ReduceMax", ["x"], ["s2"], keepdims=0)], [("x", r(3, 4))],
                       [("s1", F), ("s2", F)], opset=13))
case(251)(lambda: Case([N("Relu", ["x"], ["t"]), N("Cast", ["t"], ["y"], to=I32)],
                       [("x", r(6, lo=-5, hi=5))], [("y", I32)]))
case(252)(lambda: Case([N("Relu", ["x"], ["t"]), N("Exp", ["x"], ["e"]),
                        N("TopK", ["t", "kk"], ["v", "i"], axis=-1)], [("x", r(4, 4))],
                       [("v", F), ("e", F)], [c("kk", np.array([2], np.int64))]))
case(253)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(4, 8)), ("b", r(8, 32))],
                       [("y", F)]))
case(254)(lambda: Case([N("Relu", ["x"], ["t"]), N("CastLike", ["t", "like"], ["y"])],
                       [("x", r(5, lo=-4, hi=4))], [("y", I32)],
                       [c("like", np.array([1], np.int32))], opset=15))
case(255)(lambda: Case([N("Xor", ["a", "b"], ["y"])],
                       [("a", np.array([True, False, True, False])),
                        ("b", np.array([True, True, False, False]))], [("y", TP.BOOL)]))
# 256: the Pad's output takes the block of the Transpose's, dead after the ReduceSum
case(256)(lambda: Case([N("Transpose", ["z"], ["t"], perm=[1, 0]),
                        N("ReduceSum", ["t"], ["s"], keepdims=0), N("Pad", ["x", "p"], ["y"])],
                       [("z", r(7, 5)), ("x", r(3, 4))], [("s", F), ("y", F)],
                       [c("p", np.array([1, 0, 1, 2], np.int64))], opset=13))

# ---- set H ----
case(257)(lambda: Case([N("MatMul", ["a", "b"], ["m"]), N("Add", ["m", "bias"], ["y"])],
                       [("a", r(1, 4))], [("y", F)], [c("b", r(4, 3)), c("bias", r(2, 3))]))
case(258)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["t"]),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                       [("a", r(2, 4)), ("cc", r(3))], [("y", F)],
                       [c("b", r(4, 3)), c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)), c("mu", r(3)),
                        c("var", r(3, lo=0.1, hi=2))]))


def shared_filter():  # two Convs read one filter constant; only the first is normalized
    bn = [c("s", r(3, lo=0.5, hi=2)), c("bb", r(3)), c("mu", r(3)),
          c("var", r(3, lo=0.1, hi=2))]
    return Case([N("Conv", ["x", "w"], ["t"]),
                 N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y1"]),
                 N("Conv", ["x", "w"], ["y2"])],
                [("x", r(1, 2, 5, 5))], [("y1", F), ("y2", F)], [c("w", r(3, 2, 3, 3))] + bn)


case(259)(shared_filter)
case(260)(lambda: Case([N("Split", ["x"], ["a1", "b1"], axis=0), N("Split", ["x"], ["a2", "b2"], axis=0),
                        N("Sub", ["b2", "a1"], ["y"])], [("x", r(6))], [("y", F)], opset=13))
case(261)(lambda: Case([N("Div", ["x", "c1"], ["y1"]), N("Div", ["x", "c2"], ["y2"])],
                       [("x", np.array([1.0, 2.0], np.float32))], [("y1", F), ("y2", F)],
                       [c("c1", np.array([-0.0, 2.0], np.float32)),
                        c("c2", np.array([0.0, 2.0], np.float32))]))
case(262)(lambda: Case([N("Add", ["c1", "c2"], ["y"]), N("Relu", ["x"], ["z"])], [("x", r(4))],
                       [("y", F), ("z", F)], [c("c1", r(4)), c("c2", r(4))]))
case(263)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="reflect")],
                       [("x", np.array([[1.0, 2.0, 3.0]], np.float32))], [("y", F)],
                       [c("p", np.array([0, 5, 0, 0], np.int64))], opset=13))
case(264)(lambda: Case([N("Slice", ["x", "st", "en", "ax"], ["y"])], [("x", r(3, 5))], [("y", F)],
                       [c("st", np.array([1], np.int64)), c("en", np.array([4], np.int64)),
                        c("ax", np.array([-1], np.int64))]))
case(265)(lambda: Case([N("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],
                       [("x", np.array([[-128, -128], [3, -128]], np.int8))], [("y", TP.INT8)],
                       opset=13))
case(266)(lambda: Case([N("Conv", ["x", "w"], ["y"], pads=[1, 0, 1, 0])], [("x", r(1, 2, 6, 34))],
                       [("y", F)], [c("w", r(3, 2, 3, 3))]))
case(267)(lambda: Case([N("Gemm", ["a", "b"], ["y"], transB=1)], [("a", r(3, 4)), ("b", r(5, 4))],
                       [("y", F)]))
case(268)(lambda: Case([N("CumProd", ["x", "ax"], ["y"])],
                       [("x", np.array([1.5, -2.0, 0.5, 3.0, 1.25], np.float32))], [("y", F)],
                       [c("ax", np.array(0, np.int64))], opset=26))
case(269)(lambda: Case([N("BatchNormalization", ["x", "s", "bb", "mu", "var"], ["y"])],
                       [("x", r(1, 3, 2, 2))], [("y", F)],
                       [c("s", np.array([1.0, 0.5, 2.0], np.float32)), c("bb", r(3)),
                        c("mu", r(3)), c("var", np.array([0.0, 0.5, 1.0], np.float32))]))
case(270)(lambda: Case([N("MatMul", ["a", "b"], ["m"]), N("Add", ["m", "cc"], ["y"])],
                       [("a", r(2, 3, 5)), ("cc", r(2, 1, 4))], [("y", F)], [c("b", r(5, 4))]))


def if_reads_fused():  # a = Relu(x) fused with Neg(a); the If's branches read a
    thn = H.make_graph([N("Add", ["a", "one"], ["o1"])], "then", [],
                       [H.make_tensor_value_info("o1", F, None)], [c("one", np.ones(3, np.float32))])
    els = H.make_graph([N("Sub", ["a", "one2"], ["o2"])], "else", [],
                       [H.make_tensor_value_info("o2", F, None)], [c("one2", np.ones(3, np.float32))])
    return Case([N("Relu", ["x"], ["a"]), N("Neg", ["a"], ["b"]),
                 N("If", ["cond"], ["y"], then_branch=thn, else_branch=els)],
                [("x", r(3)), ("cond", np.array(True))], [("b", F), ("y", F)])


case(271)(if_reads_fused)
case(272)(lambda: Case([N("Split", ["x", "sp"], ["e", "f"], axis=0), N("Relu", ["f"], ["y"])],
                       [("x", r(4))], [("y", F)], [c("sp", np.array([0, 4], np.int64))], opset=13))
case(273)(lambda: Case([N("ReduceMin", ["x"], ["y"], axes=[1], keepdims=0)],
                       [("x", np.array([[5, 7], [3, 9]], np.uint32))], [("y", TP.UINT32)], opset=13))
case(274)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=0)],
                       [("x", r(4, 3)), ("i", np.array([3, -1, 0], np.int64))], [("y", F)]))
case(275)(lambda: Case([N("Equal", ["a", "b"], ["y"])],
                       [("a", np.array([True, False, True, False])),
                        ("b", np.array([True, True, False, False]))], [("y", TP.BOOL)]))
case(276)(lambda: Case([N("Relu", ["x"], ["y"], name="relu */ bad")], [("x", r(4))], [("y", F)]))
case(277)(lambda: Case([N("Cast", ["x"], ["y"], to=I32)],
                       [("x", np.array([-1.5, -0.5, 2.7, -3.2], np.float32))], [("y", I32)]))
case(278)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(4, 8)), ("b", r(8, 32))],
                       [("y", F)]))
case(279)(lambda: Case([N("Cast", ["x"], ["h"], to=TP.BFLOAT16), N("Cast", ["h"], ["y"], to=F)],
                       [("x", np.array([16842753, 5, -16842753, 3], np.int32))], [("y", F)]))
case(280)(lambda: Case([N("Max", ["a", "b"], ["y"])],
                       [("a", np.array([np.nan, 1.0, 2.0])), ("b", np.array([3.0, np.nan, 1.0]))],
                       [("y", TP.DOUBLE)]))
case(281)(lambda: Case([N("GatherElements", ["x", "i"], ["y"], axis=1)],
                       [("x", r(3, 3)), ("i", np.array([[0, 2], [1, -1], [2, 0]], np.int64))],
                       [("y", F)]))
case(282)(lambda: Case([N("Relu", ["x"], ["a"]), N("Transpose", ["a"], ["b"]),
                        N("MatMul", ["a", "b"], ["m"]), N("Transpose", ["m"], ["y"])],
                       [("x", r(4, 4))], [("a", F), ("y", F)]))
case(283)(lambda: Case([N("Transpose", ["x"], ["t"]), N("Neg", ["t"], ["y"])], [("x", r(4, 4))],
                       [("t", F), ("y", F)]))
case(284)(lambda: Case([N("Reshape", ["x", "s"], ["r"]), N("TopK", ["r", "kk"], ["v", "i"], axis=-1)],
                       [("x", r(2, 6))], [("v", F)],
                       [c("s", np.array([3, 4], np.int64)), c("kk", np.array([2], np.int64))]))
case(285)(lambda: Case([N("Reshape", ["x", "s"], ["y"]), N("Relu", ["x"], ["z"])], [("x", r(2, 6))],
                       [("y", F), ("z", F)], [c("s", np.array([3, 4], np.int64))]))
case(286)(lambda: Case([N("Tile", ["x", "rp"], ["y"])], [("x", r(2, 3))], [("y", F)],
                       [c("rp", np.array([2, 2], np.int64))]))


# set I
case(287)(lambda: Case([N("Sigmoid", ["x"], ["y"])], [("x", r(8, lo=-3, hi=3))], [("y", F)]))
case(288)(lambda: Case([N("Gelu", ["x"], ["y"], approximate="tanh")], [("x", r(8, lo=-3, hi=3))],
                       [("y", F)], opset=20))
case(289)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=-1)], [("x", r(3, 4))], [("y", F)],
                       [c("i", np.array(2, np.int64))]))
case(290)(lambda: Case([N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                          ceil_mode=1, count_include_pad=1)], [("x", r(1, 1, 5, 5))], [("y", F)],
                       opset=19))
case(291)(lambda: Case([N("GatherElements", ["x", "i"], ["y"], axis=1)],
                       [("x", r(3, 3)), ("i", np.array([[0, 2], [1, 0], [2, 1]], np.int64))],
                       [("y", F)]))
case(292)(lambda: Case([N("Softmax", ["x"], ["y"], axis=1)], [("x", r(2, 3, 4))], [("y", F)],
                       opset=11))
case(293)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(2, 3, 4, 5)), ("b", r(3, 5, 6))],
                       [("y", F)]))
case(294)(lambda: Case([N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                       [("x", r(1, 1, 4, 4))], [("y", F)]))
case(295)(lambda: Case([N("Greater", ["a", "b"], ["g"]), N("Transpose", ["g"], ["t"]),
                        N("Cast", ["t"], ["y"], to=F)], [("a", r(4, 4)), ("b", r(4, 4))],
                       [("y", F)]))
case(296)(lambda: Case([N("Identity", ["x"], ["t"]), N("Relu", ["t"], ["a"]), N("Neg", ["t"], ["b"]),
                        N("Add", ["a", "b"], ["y"])], [("x", r(4))], [("y", F)]))
case(297)(lambda: Case([N("Split", ["x"], ["a", "b", "c"], axis=0),
                        N("Split", ["x"], ["d", "e"], axis=0), N("Add", ["a", "c"], ["y1"]),
                        N("Sub", ["d", "e"], ["y2"])], [("x", r(6))], [("y1", F), ("y2", F)],
                       opset=13))
case(298)(lambda: Case([N("Split", ["k"], ["p", "q"], axis=0), N("Add", ["x", "p"], ["y1"]),
                        N("Sub", ["x", "q"], ["y2"])], [("x", r(2))], [("y1", F), ("y2", F)],
                       [c("k", np.array([1.0, 2.0, 3.0, 4.0], np.float32))], opset=13))
case(299)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["s"]),
                        N("Gather", ["s", "i"], ["y"], axis=0)],
                       [("x", np.array([0.0, 1.0, 2.0, 0.0, 3.0], np.float32))], [("y", I64)],
                       [c("i", np.array(1, np.int64))]))
case(300)(lambda: Case([N("Exp", ["x"], ["t"]), N("Div", ["one", "t"], ["y"])], [("x", r(4))],
                       [("y", F)], [c("one", np.ones(4, np.float32))]))
case(301)(lambda: Case([N("NonZero", ["x"], ["nz"]), N("Size", ["nz"], ["y"])],
                       [("x", np.array([0.0, 1.0, 2.0, 0.0, 3.0], np.float32))], [("y", I64)]))
case(302)(lambda: Case([N("Gelu", ["x"], ["y"])], [("x", r(6).astype(np.float64))],
                       [("y", TP.DOUBLE)], opset=20))
case(303)(lambda: Case([N("MatMul", ["a", "b"], ["y"])],
                       [("a", r(4, 8).astype(np.float64)), ("b", r(8, 5).astype(np.float64))],
                       [("y", TP.DOUBLE)]))
case(304)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=0)],
                       [("x", r(4, 3)), ("i", np.array([2, -1, 0], np.int64))], [("y", F)]))
case(305)(lambda: Case([N("Cast", ["x"], ["y"], to=F)],
                       [("x", np.array([np.nan, 1.0, -np.inf, 2.0], np.float16))], [("y", F)]))
case(306)(lambda: Case([N("Cast", ["x"], ["h"], to=TP.BFLOAT16), N("Cast", ["h"], ["y"], to=F)],
                       [("x", np.array([2**56 + 2**48 + 1, 5, -(2**56 + 2**48 + 1), 3], np.int64))],
                       [("y", F)]))
case(307)(lambda: Case([N("Pad", ["x", "p", "v"], ["y"], mode="constant")], [("x", r(2, 3))],
                       [("y", F)], [c("p", np.array([1, 0, 0, 2], np.int64)),
                                    c("v", np.array(1.5, np.float32))]))
case(308)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.FLOAT16)],
                       [("x", np.array([65504.0, 1.0, -65504.0]))], [("y", TP.FLOAT16)]))
case(309)(lambda: Case([N("Softmax", ["x"], ["y"], axis=-1)],
                       [("x", np.array([[-120.0, -121.0, -122.0], [1.0, 2.0, 3.0]], np.float32))],
                       [("y", F)], opset=13))
case(310)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.FLOAT16)],
                       [("x", np.array([1 + 2**-11 + 2**-30, 3.0, -(1 + 2**-11 + 2**-30)]))],
                       [("y", TP.FLOAT16)]))
case(311)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="constant")], [("x", r(2, 3))], [("y", F)],
                       [c("p", np.array([0, 1, 2, 0], np.int64))]))
case(312)(plan_chain)
case(313)(conv_scratch)
case(314)(lambda: Case([N("Sub", ["b", "a"], ["y"])], [("a", r(4)), ("b", r(4))], [("y", F)]))
case(315)(lambda: Case([N("Conv", ["x", "w"], ["y"], pads=[1, 1, 0, 0])], [("x", r(1, 1, 5, 5))],
                       [("y", F)], [c("w", r(1, 1, 3, 3))]))
case(316)(lambda: Case([N("Clip", ["x", "lo", "hi"], ["y"])], [("x", r(6, lo=-2, hi=2))],
                       [("y", F)], [c("lo", np.array(-0.5, np.float32)),
                                    c("hi", np.array(0.5, np.float32))], opset=11))



# set J
def gemm_col_bias():
    return Case([N("Gemm", ["a", "b", "cc"], ["y"])], [("a", r(3, 4))], [("y", F)],
                [c("b", r(4, 5)), c("cc", r(3, 1))])


def inplace_bcast():
    return Case([N("Transpose", ["x"], ["t"]), N("Add", ["a", "t"], ["y"])],
                [("x", r(4, 1)), ("a", r(4, 4))], [("y", F)])


case(317)(lambda: Case([N("Neg", ["b"], ["nb"]), N("Sub", ["a", "nb"], ["y"])],
                       [("a", r(5)), ("b", r(5))], [("y", F)]))
case(318)(lambda: Case([N("Mul", ["x", "m"], ["y"])], [("x", r(4))], [("y", F)],
                       [c("m", -np.ones((2, 4), np.float32))]))
case(319)(lambda: Case([N("Exp", ["x"], ["y"])], [("x", r(4))], [("y", F)]))
case(320)(lambda: Case([N("Transpose", ["x"], ["t"]), N("Transpose", ["t"], ["y"])],
                       [("x", r(3, 4))], [("y", F)]))
case(321)(lambda: Case([N("Shrink", ["x"], ["y"], lambd=0.5, bias=0.25)],
                       [("x", np.array([-0.5, 0.5, -1.0, 0.2, 0.75], np.float32))], [("y", F)]))
case(322)(lambda: Case([N("Mean", ["a", "b", "d"], ["y"])], [("a", r(4)), ("b", r(4)), ("d", r(4))],
                       [("y", F)]))
case(323)(lambda: Case([N("Cast", ["x"], ["y"], to=F)],
                       [("x", np.array([-3e-6, 2e-6, -1.0, -5e-7], np.float16))], [("y", F)]))
case(324)(inplace_bcast)
case(325)(lambda: Case([N("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)], [("x", r(3, 4))],
                       [("y", F)], opset=17))
case(326)(lambda: Case([N("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="mul")],
                       [("x", r(3, 2)), ("i", np.array([[1, 0], [2, 2]], np.int64)),
                        ("u", r(2, 2))], [("y", F)], opset=16))
case(327)(lambda: Case([N("Slice", ["x"], ["y"], starts=[1], ends=[3], axes=[1])],
                       [("x", r(2, 4))], [("y", F)], opset=9))
case(328)(lambda: Case([N("LpNormalization", ["x"], ["y"], p=1)], [("x", r(3, 4))], [("y", F)]))
case(329)(lambda: Case([N("Trilu", ["x", "k"], ["y"])],
                       [("x", r(4, 4)), ("k", np.array(1, np.int64))], [("y", F)], opset=14))
case(330)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                       [("x", np.array([[[[-np.inf, -np.inf, 1, 2], [-np.inf, -np.inf, 3, 4],
                                          [5, 6, 7, 8], [9, 1, 2, 3]]]], np.float32))],
                       [("y", F)]))
case(331)(gemm_col_bias)
case(332)(lambda: Case([N("ReduceMax", ["x", "ax"], ["y"], keepdims=0)],
                       [("x", np.array([[3, -5, 7], [-9, 2, 4]], np.int32))], [("y", I32)],
                       [c("ax", np.array([1], np.int64))], opset=18))
case(333)(lambda: Case([N("ReduceSum", ["x"], ["y"], keepdims=0)], [("x", r(3, 4))], [("y", F)],
                       opset=13))

case(334)(lambda: Case([N("SpaceToDepth", ["x"], ["y"], blocksize=1)], [("x", r(1, 2, 3, 3))],
                       [("y", F)]))
case(335)(lambda: Case([N("Cast", ["x"], ["h"], to=TP.BFLOAT16), N("Cast", ["h"], ["y"], to=F)],
                       [("x", np.array([2**53 + 2**45 + 1, 7, -(2**53 + 2**45 + 1)], np.int64))],
                       [("y", F)]))
case(336)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.FLOAT16)],
                       [("x", np.array([3.2e-5, 4.5e-5, 1.0, -5.0e-5], np.float32))],
                       [("y", TP.FLOAT16)]))

# set J, second part
def view_inplace():  # y1 = v + t with v a view of t, then y2 = y1 * t: y1 may not take v's storage
    return Case([N("Transpose", ["x"], ["t"]), N("Reshape", ["t", "s"], ["v"]),
                 N("Add", ["v", "t"], ["y1"]), N("Mul", ["y1", "t"], ["y2"])],
                [("x", r(3, 2))], [("y1", F), ("y2", F)], [c("s", np.array([1, 2, 3], np.int64))])


def reshape_dyn():  # two Reshapes to shapes given at run time: types [?, ?] and [?, ?]
    return Case([N("Reshape", ["a", "s1"], ["h"]), N("Reshape", ["h", "s2"], ["y"])],
                [("a", r(2, 6)), ("s1", np.array([3, 4], np.int64)),
                 ("s2", np.array([4, 3], np.int64))], [("y", F)])


case(337)(view_inplace)
case(338)(reshape_dyn)
case(339)(lambda: Case([N("Einsum", ["a", "b"], ["p"], equation="ij,jk"),
                        N("Einsum", ["a", "b"], ["q"], equation="ij,jk->ki"),
                        N("Sub", ["p", "q"], ["y"])], [("a", r(3, 3)), ("b", r(3, 3))],
                       [("y", F)]))
case(340)(lambda: Case([N("ReduceProd", ["x"], ["y"], axes=[1], keepdims=0)],
                       [("x", r(2, 0))], [("y", F)], opset=13))


# set K
case(341)(lambda: Case([N("Gemm", ["a", "b", "d"], ["p"], alpha=1.0, beta=1.0),
                        N("Gemm", ["a", "b", "d"], ["q"], alpha=1.0, beta=0.5),
                        N("Sub", ["p", "q"], ["y"])],
                       [("a", r(3, 3)), ("b", r(3, 3)), ("d", r(3, 3))], [("y", F)]))
case(342)(lambda: Case([N("Add", ["a", "b"], ["y"], broadcast=1, axis=1)],
                       [("a", r(2, 3, 3)), ("b", r(3))], [("y", F)], opset=6))
case(343)(lambda: Case([N("GatherND", ["x", "i"], ["y"], batch_dims=1)],
                       [("x", r(2, 3, 4)), ("i", np.array([[2], [1]], np.int64))], [("y", F)],
                       opset=12))
case(344)(lambda: Case([N("Abs", ["x"], ["y"])],
                       [("x", np.array([-5, 3, -100, 0, 127, -1], np.int8))], [("y", TP.INT8)]))
case(345)(lambda: Case([N("ReduceSum", ["x"], ["s"], keepdims=0), N("Neg", ["s"], ["y"])],
                       [("x", r(3, 4))], [("y", F)], opset=13))

# set K, second part
F16 = TP.FLOAT16


def inplace_cast():  # y1 stored before y2 loads a (f16: every load is under a cast)
    return Case([N("Transpose", ["x"], ["a"]), N("Relu", ["z"], ["y1"]),
                 N("Add", ["y1", "a"], ["y2"])],
                [("x", r(6, 4).astype(np.float16)), ("z", r(4, 6).astype(np.float16))],
                [("y1", F16), ("y2", F16)])


case(346)(inplace_cast)
case(347)(lambda: Case([N("ReduceSum", ["x", "ax"], ["y"], noop_with_empty_axes=1)],
                       [("x", r(3, 4))], [("y", F)], [c("ax", np.zeros(0, np.int64))], opset=13))
case(348)(lambda: Case([N("LpNormalization", ["x"], ["y"])], [("x", r(3, 4))], [("y", F)]))

# set L, third part


def race_static_tile():  # the row blocks of the product on 4 threads, each with its C tile
    k = Case([N("MatMul", ["a", "w"], ["y"])], [("a", r(4096, 8))], [("y", F)],
             [c("w", r(8, 64))])
    k.threads, k.runs = 4, 5
    return k


def local_search_plan():  # seven fallback values whose lives only the local search packs
    sizes = [96, 96, 80, 32, 48, 80, 64]
    reads = [["x"], ["v0"], ["v1"], ["v2"], ["v1", "v3"], ["v4"], ["v2", "v3", "v4", "v5"]]
    nodes, inits = [], []
    for s, rd in enumerate(reads):
        n_in = sum(5 if v == "x" else sizes[int(v[1:])] for v in rd)
        inits.append(c(f"c{s}", r(sizes[s], lo=0.5, hi=1.0) / np.float32(n_in)))
        nodes.append(N("Einsum", [f"c{s}"] + rd, [f"v{s}"],
                       equation="i," + ",".join("jklmn"[:len(rd)]) + "->i"))
    return Case(nodes, [("x", r(5, lo=0.5, hi=1.0))], [("v6", F)], inits)


def alias_then_kernels():  # step 1 is kernel 0 (an alias step first)
    return Case([N("Reshape", ["x", "sh"], ["r"]), N("MatMul", ["r", "w"], ["h"]),
                 N("MatMul", ["h", "w2"], ["y"])], [("x", r(4, 6))], [("y", F)],
                [c("sh", np.array([6, 4], np.int64)), c("w", r(4, 5)), c("w2", r(5, 3))])


case(365)(race_static_tile)
case(366)(lambda: Case([N("Pow", ["a", "b"], ["y"])],
                       [("a", rng.uniform(1.001, 1.02, 6)), ("b", rng.uniform(1000, 3000, 6))],
                       [("y", TP.DOUBLE)]))  # near 1 to a high power: float's rounding shows
case(367)(local_search_plan)
case(368)(alias_then_kernels)


# ---- set L, second part (eleventh blind set) ----
case(358)(lambda: Case([N("DepthToSpace", ["x"], ["y"], blocksize=2)], [("x", r(1, 8, 2, 3))],
                       [("y", F)]))
case(359)(lambda: Case([N("Relu", ["x"], ["y1"]), N("Exp", ["y1"], ["y2"])], [("x", r(3, 5))],
                       [("y1", F), ("y2", F)]))
case(364)(lambda: Case([N("Pad", ["x", "p"], ["y"])], [("x", r(3, 4))], [("y", F)],
                       [c("p", np.array([1, 0, 1, 2], np.int64))]))
case(363)(lambda: Case([N("Gemm", ["a", "b"], ["y"], transB=1)], [("a", r(4, 8)), ("b", r(24, 8))],
                       [("y", F)]))
case(362)(lambda: Case([N("Add", ["x", "b"], ["y"])], [("x", r(3, 4)), ("b", r(1, 4))], [("y", F)]))


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, (p.stdout + p.stderr).strip().splitlines()


def check(kiln, n, backend, work, env):
    d = os.path.join(work, f"m{n}")
    os.makedirs(d, exist_ok=True)
    case_ = CASES[n]()
    args = case_.write(d)
    model = os.path.join(d, "model.onnx")
    e0 = dict(env)
    e0.pop("KILN_MUTANT", None)
    rc, out = run([kiln, "run", model, *args, "--output-dir", os.path.join(d, "ref")], e0)
    if rc:
        return "reference failed: " + (out[-1] if out else "?"), None
    exp = []
    for name, _ in case_.outputs:
        exp += ["--expect", f"{name}={os.path.join(d, 'ref', name + '.npy')}"]
    threads = str(getattr(case_, "threads", 1))
    cmd = [kiln, "run", model, *args, "--backend", backend, "--threads", threads, *exp,
           "--rtol", "1e-5", "--atol", "1e-6"]
    e1 = dict(e0, KILN_MUTANT=str(n))
    rc_ctl = rc_mut = 0
    for _ in range(getattr(case_, "runs", 1)):  # a race: any run of several may differ
        rc, out_ctl = run(cmd, e0)
        rc_ctl = rc_ctl or rc
        rc, out_mut = run(cmd, e1)
        if rc:
            rc_mut = rc
            break
    why = next((ln for ln in out_mut if "MISMATCH" in ln or "error" in ln),
               next((ln for ln in out_mut if "mismatch" in ln or "kiln" in ln),
                    out_mut[-1] if out_mut else ""))
    return rc_mut != 0, rc_ctl != 0, why


# ---- set L, first part (349-356) ----
case(349)(lambda: Case([N("Conv", ["x", "w", "cb"], ["y"], pads=[0, 0, 1, 1])],
                       [("x", r(1, 2, 4, 4))], [("y", F)], [c("w", r(3, 2, 1, 1)), c("cb", r(3))]))
case(350)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.FLOAT16)],  # f64 ties for f32, not for f16
                       [("x", np.array([1 + 2.0**-11 + 2.0**-40, -(3 + 2.0**-9 + 2.0**-35),
                                        0.5 + 2.0**-12 + 2.0**-45, 2.0], np.float64))],
                       [("y", TP.FLOAT16)]))
case(351)(lambda: Case([N("Conv", ["x", "w"], ["y"])], [("x", r(1, 2, 4, 4, 4))], [("y", F)],
                       [c("w", r(3, 2, 2, 2, 2))]))
case(352)(lambda: Case([N("ReduceSum", ["x", "ax"], ["y"], keepdims=0)], [("x", r(2, 3, 4))],
                       [("y", F)], [c("ax", np.array([-1], np.int64))]))
case(353)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(2, 3, 4))], [("y", F)],
                       [c("b", r(4))]))
case(354)(lambda: Case([N("Relu", ["x"], ["t"]), N("Mul", ["t", "one"], ["y"])], [("x", r(3, 1))],
                       [("y", F)], [c("one", np.ones((3, 4), np.float32))]))
case(355)(lambda: Case([N("Gemm", ["a", "b"], ["y"], alpha=0.5)], [("a", r(3, 4))], [("y", F)],
                       [c("b", r(4, 5))]))
case(356)(lambda: Case([N("MatMul", ["a", "b"], ["m"]), N("Add", ["m", "bias"], ["y"])],
                       [("a", r(3, 4))], [("m", F), ("y", F)], [c("b", r(4, 5)), c("bias", r(5))]))


# ---- set M, first part (twelfth blind set) ----
case(370)(lambda: Case([N("Neg", ["b"], ["nb"]), N("Add", ["x", "nb"], ["y"], broadcast=1, axis=0)],
                       [("x", r(3, 3)), ("b", r(3))], [("y", F)], opset=6))
case(371)(lambda: Case([N("MatMul", ["a", "w"], ["m"]), N("Add", ["bias", "m"], ["y"])],
                       [("a", r(4, 4))], [("y", F)], [c("w", r(4, 4)), c("bias", r(4))]))


def slice_of_partial_shape():  # t.shape[2:] of a rank-2 t whose first dim is data-dependent: empty
    return Case([N("NonZero", ["x"], ["nz"]), N("Transpose", ["nz"], ["t"]),
                 N("Shape", ["t"], ["s"]), N("Slice", ["s", "st", "en"], ["y"])],
                [("x", r(3, 4))], [("y", I64)],
                [c("st", np.array([2], np.int64)), c("en", np.array([2**62], np.int64))])


case(372)(slice_of_partial_shape)
case(373)(lambda: Case([N("Sub", ["z", "x"], ["y"])], [("x", np.array(5, np.int32))], [("y", I32)],
                       [c("z", np.zeros(3, np.int32))]))
case(374)(lambda: Case([N("Sub", ["z", "x"], ["y"])],
                       [("x", np.array([0, 1, 7, 200, 255], np.uint8))], [("y", TP.UINT8)],
                       [c("z", np.zeros(5, np.uint8))]))


def conv_bn_small_var():  # a variance near epsilon: where epsilon goes matters
    k = conv_bn()
    k.inits[-1] = c("var", r(3, lo=1e-4, hi=1e-3))
    return k


case(375)(conv_bn_small_var)


def if_reads_outer():  # a branch reads x*1, a value the simplification forwards
    then_g = H.make_graph([N("Relu", ["t"], ["o"])], "then", [],
                          [H.make_tensor_value_info("o", F, None)])
    else_g = H.make_graph([N("Neg", ["t"], ["o2"])], "else", [],
                          [H.make_tensor_value_info("o2", F, None)])
    return Case([N("Mul", ["x", "one"], ["t"]), N("If", ["cond"], ["y"], then_branch=then_g,
                                                 else_branch=else_g)],
                [("x", r(4)), ("cond", np.array(True))], [("y", F)],
                [c("one", np.ones(4, np.float32))])


case(376)(if_reads_outer)
case(377)(lambda: Case([N("Concat", ["x", "e3"], ["y"], axis=0),
                        N("Concat", ["w", "e2"], ["z"], axis=0)],
                       [("x", r(2, 3)), ("w", r(2, 2))], [("y", F), ("z", F)],
                       [c("e3", np.zeros((0, 3), np.float32)),
                        c("e2", np.zeros((0, 2), np.float32))]))
case(378)(lambda: Case([N("ReduceL1", ["x"], ["y"], axes=[1])],
                       [("x", np.array([[-7, 2, -9], [4, -1, -6]], np.int32))], [("y", I32)],
                       opset=13))
# ---- set M, second part (twelfth blind set) ----
case(380)(lambda: Case([N("MatMul", ["a", "b"], ["y"])], [("a", r(2, 3, 4, 5)), ("b", r(3, 5, 6))],
                       [("y", F)]))  # B broadcast over A's leading batch dim
case(381)(lambda: Case([N("ReduceMean", ["x"], ["y"], axes=[1, 2])], [("x", r(2, 3, 4))],
                       [("y", F)], opset=13))
case(382)(lambda: Case([N("Relu", ["x"], ["t"]), N("Transpose", ["t"], ["y"])], [("x", r(3, 3))],
                       [("y", F)]))
case(383)(lambda: Case([N("Conv", ["x", "w"], ["y"], group=2)], [("x", r(1, 2, 6, 6))], [("y", F)],
                       [c("w", r(2, 1, 3, 2))]))  # depthwise, a 3x2 kernel
case(384)(lambda: Case([N("LRN", ["x"], ["y"], size=3)], [("x", r(2, 4, 2, 2))], [("y", F)]))
case(385)(lambda: Case([N("Add", ["x", "b"], ["t"]), N("ReduceSum", ["t", "ax"], ["y"])],
                       [("x", r(3, 4)), ("b", r(1, 4))], [("y", F)],
                       [c("ax", np.array([1], np.int64))]))  # a broadcast operand of the prologue
case(386)(lambda: Case([N("Conv", ["x", "w"], ["y"])], [("x", r(1, 1, 4, 30))], [("y", F)],
                       [c("w", r(2, 1, 3, 3))]))  # 28-wide output rows: row-aligned panels
case(387)(lambda: Case([N("Gather", ["x", "i"], ["y"], axis=1)], [("x", r(3, 5))], [("y", F)],
                       [c("i", np.array([4, 0, 2], np.int64))]))
case(388)(lambda: Case([N("Conv", ["x", "w"], ["y"], group=2)], [("x", r(1, 4, 3, 3))], [("y", F)],
                       [c("w", r(6, 2, 1, 1))]))  # grouped 1x1 conv, Cig 2 != Cog 3
# ---- set M, third part (twelfth blind set) ----
def contract_fma():  # a*b + c, c = -fl(a*b): 0 in float, the product's rounding error when fused
    g = np.random.default_rng(390)
    a = g.uniform(1000, 9000, 16).astype(np.float32)
    b = g.uniform(1000, 9000, 16).astype(np.float32)
    return Case([N("Mul", ["a", "b"], ["t"]), N("Add", ["t", "c"], ["y"])],
                [("a", a), ("b", b), ("c", -(a * b))], [("y", F)])


def int64_to_bf16(dtype, vals):  # through bf16 and back: the rounding of one conversion
    return Case([N("Cast", ["x"], ["h"], to=TP.BFLOAT16), N("Cast", ["h"], ["y"], to=F)],
                [("x", np.array(vals, dtype))], [("y", F)])


def residual_from_input_zero():  # value 0 (input x) read after the packed B (packed id 0)
    g = np.random.default_rng(395)
    w = g.uniform(-1, 1, (8, 16)).astype(np.float32)
    return Case([N("Constant", [], ["w"], value=NH.from_array(w)), N("MatMul", ["a", "w"], ["m"]),
                 N("Add", ["m", "x"], ["y"])], [("x", r(4, 16)), ("a", r(4, 8))], [("y", F)])


case(390)(contract_fma)
case(391)(lambda: int64_to_bf16(np.int64, [2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), 12345, -7,
                                           2**55 + 2**47 + 3, 2**62 + 2**54 + 5]))
case(392)(lambda: Case([N("IsInf", ["x"], ["y"])],  # -inf: isinf gives -1 (glibc, GCC)
                       [("x", np.array([1, -np.inf, np.inf, 0, -2.5, np.nan, -np.inf, 3],
                                       np.float32))], [("y", TP.BOOL)]))
case(393)(lambda: Case([N("Shrink", ["x"], ["t"], bias=-1e8, lambd=0.0),  # x + 1e8, then - 1e8
                        N("Shrink", ["t"], ["y"], bias=1e8, lambd=0.5)],
                       [("x", r(16, lo=0.5, hi=3.0))], [("y", F)]))
case(394)(lambda: Case([N("MatMul", ["a", "w"], ["y"])], [("a", r(6, 8))], [("y", F)],
                       [c("w", r(8, 32))]))
case(395)(residual_from_input_zero)
case(396)(lambda: Case([N("MatMul", ["a", "w"], ["m"]), N("Relu", ["x"], ["r"]),
                        N("Add", ["m", "r"], ["y"])],  # the Add joins the MatMul's group
                       [("x", r(4, 16)), ("a", r(4, 8))], [("y", F)], [c("w", r(8, 16))]))
case(397)(lambda: int64_to_bf16(np.uint64, [2**63 + 2**55 + 1, 2**63 + 3 * 2**55 + 5, 12345, 7,
                                            2**62 + 2**54 + 1, 2**63]))

# ---- set N, first part (thirteenth blind set) ----
case(400)(lambda: Case([N("Gemm", ["a", "w", "cc"], ["t"], transB=1),
                        N("BatchNormalization", ["t", "s", "bb", "mu", "var"], ["y"])],
                       [("a", r(2, 4))], [("y", F)],
                       [c("w", r(4, 4)), c("cc", r(4)), c("s", r(4, lo=0.5, hi=2)), c("bb", r(4)),
                        c("mu", r(4)), c("var", r(4, lo=0.1, hi=2))]))


def fusion_side_path():  # b reaches the group directly (d) and through a Transpose (t -> c)
    return Case([N("Relu", ["x"], ["a"]), N("Exp", ["x"], ["b"]), N("Transpose", ["b"], ["t"]),
                 N("Add", ["a", "t"], ["c"]), N("Add", ["c", "b"], ["y"])],
                [("x", r(3, 3))], [("y", F)])


case(401)(fusion_side_path)


def slice_back_past_start():  # shape [2, ?][-3::-1] (before the start, step -1): empty
    return Case([N("NonZero", ["x"], ["nz"]), N("Shape", ["nz"], ["s"]),
                 N("Slice", ["s", "st", "en", "ax", "sp"], ["t"]),
                 N("Concat", ["t", "k"], ["y"], axis=0)],
                [("x", r(3, 4))], [("y", I64)],
                [c("st", np.array([-3], np.int64)), c("en", np.array([-9], np.int64)),
                 c("ax", np.array([0], np.int64)), c("sp", np.array([-1], np.int64)),
                 c("k", np.array([7], np.int64))])


case(402)(slice_back_past_start)


def if_reads_fused():  # the If reads a, which joins a group that waits for the Transpose
    then_g = H.make_graph([N("Neg", ["a"], ["o1"])], "then", [],
                          [H.make_tensor_value_info("o1", F, None)])
    else_g = H.make_graph([N("Exp", ["a"], ["o2"])], "else", [],
                          [H.make_tensor_value_info("o2", F, None)])
    return Case([N("Relu", ["x"], ["a"]), N("If", ["cond"], ["o"], then_branch=then_g,
                                            else_branch=else_g),
                 N("Transpose", ["x"], ["t"]), N("Add", ["a", "t"], ["c"]),
                 N("Add", ["c", "o"], ["y"])],
                [("x", r(3, 3)), ("cond", np.array(True))], [("y", F)])


case(403)(if_reads_fused)
case(404)(lambda: Case([N("Relu", ["x"], ["a"]), N("Add", ["a", "a"], ["d"]),  # d: read by no one
                        N("Exp", ["a"], ["y"])], [("x", r(4))], [("y", F)]))
case(405)(lambda: Case([N("Split", ["x"], ["a1", "b1"], axis=0),
                        N("Split", ["x"], ["a2", "b2"], axis=0), N("Sub", ["a1", "b2"], ["y"])],
                       [("x", r(6))], [("y", F)]))


def if_reads_member():  # the If reads a (a member) and feeds the Add that would join a's group
    then_g = H.make_graph([N("Neg", ["a"], ["o1"])], "then", [],
                          [H.make_tensor_value_info("o1", F, [3, 3])])
    else_g = H.make_graph([N("Exp", ["a"], ["o2"])], "else", [],
                          [H.make_tensor_value_info("o2", F, [3, 3])])
    return Case([N("Relu", ["x"], ["a"]), N("If", ["cond"], ["o"], then_branch=then_g,
                                            else_branch=else_g),
                 N("Add", ["a", "o"], ["y"])],
                [("x", r(3, 3)), ("cond", np.array(True))], [("y", F)])


case(406)(if_reads_member)
case(407)(lambda: Case([N("Shape", ["x"], ["y"], start=1)], [("x", r(2, 3, 4))], [("y", I64)],
                       opset=15))
# ---- set N, second part (thirteenth blind set) ----
case(410)(lambda: Case([N("Conv", ["x", "w"], ["y"], group=2)], [("x", r(1, 2, 3, 4, 5))],
                       [("y", F)], [c("w", r(2, 1, 2, 2, 2))]))  # depthwise 3-D: the direct form
case(411)(lambda: Case([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[1, 2])],
                       [("x", r(1, 2, 5, 6))], [("y", F)]))
case(412)(lambda: Case([N("Relu", ["x"], ["t"]), N("Add", ["t", "b"], ["y"])],
                       [("x", r(3, 4)), ("b", r(2, 3, 4))], [("y", F)]))  # two groups: t shared
case(413)(lambda: Case([N("LpNormalization", ["x"], ["y"], axis=1, p=2)], [("x", r(2, 3, 4))],
                       [("y", F)]))
case(414)(lambda: Case([N("Add", ["x", "b"], ["t"]), N("ReduceSum", ["t", "ax"], ["y"])],
                       [("x", r(3, 4)), ("b", r(4))], [("y", F)],
                       [c("ax", np.array([1], np.int64))]))  # a rank-1 operand of the prologue
case(415)(lambda: Case([N("GatherElements", ["x", "i"], ["y"], axis=0)], [("x", r(3, 4))],
                       [("y", F)], [c("i", np.array([[2, 0], [1, 2]], np.int64))]))
case(416)(lambda: Case([N("Gemm", ["a", "b", "cc"], ["y"], alpha=2.0, beta=0.5)], [("a", r(3, 4))],
                       [("y", F)], [c("b", r(4, 5)), c("cc", r(3, 5))]))
case(417)(lambda: Case([N("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", r(2, 3))], [("y", F)],
                       [c("p", np.array([0, 0, 0, 4], np.int64))]))  # an end pad past n - 1
case(418)(lambda: Case([N("Conv", ["x", "w"], ["y"], dilations=[1, 2])], [("x", r(1, 2, 4, 32))],
                       [("y", F)], [c("w", r(3, 2, 3, 3))]))  # 28-wide output rows: row panels
# ---- set N, third part (thirteenth blind set) ----
case(420)(lambda: Case([N("Cast", ["x"], ["y"], to=TP.UINT32)],  # u32 values from 2^31 on
                       [("x", np.array([3e9, 1.5, 2.0**31, 4e9, 7.0, 2147483520.0], np.float32))],
                       [("y", TP.UINT32)]))
case(421)(lambda: Case([N("Cast", ["x"], ["y"], to=F)],  # u64 values from 2^63 on
                       [("x", np.array([2**63 + 2**40, 5, 2**64 - 2**12, 2**62, 12345, 2**63],
                                       np.uint64))], [("y", F)]))
case(422)(lambda: Case([N("Max", ["a", "b"], ["y"])],  # a NaN on either side
                       [("a", np.array([1, np.nan, 3, -np.inf, 0, 2, np.nan, -1], np.float32)),
                        ("b", np.array([2, 0, np.nan, 1, -0.0, np.inf, 5, -2], np.float32))],
                       [("y", F)]))


def matmul_rounding_residue():  # y[i, i] = a0*b0 - fl(a0*b0): 0 unless one rounding (fma)
    g = np.random.default_rng(423)
    a0 = g.uniform(1000, 9000, 20).astype(np.float32)
    b0 = g.uniform(1000, 9000, 20).astype(np.float32)
    p = (a0 * b0).astype(np.float32)
    a = np.stack([-p, a0], 1).astype(np.float32)  # [20, 2]
    b = np.stack([np.ones(20, np.float32), b0], 0).astype(np.float32)  # [2, 20]: B in place
    return Case([N("MatMul", ["a", "b"], ["y"])], [("a", a), ("b", b)], [("y", F)])


case(423)(matmul_rounding_residue)
case(424)(lambda: Case([N("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],  # a row of -inf
                       [("x", np.array([[1, 2, 3, 4], [-np.inf] * 4, [-np.inf, -5, 0.5, -np.inf]],
                                       np.float32))], [("y", F)], opset=13))


def int64_to_f32_minus_exact():  # Cast(x) - fl32(x): 0 when rounded once, 2^37 off through double
    x = np.array([2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 12345, 2**40 + 2**16 + 1, -7,
                  2**62 + 2**38 + 3], np.int64)
    return Case([N("Cast", ["x"], ["t"], to=F), N("Sub", ["t", "c"], ["y"])], [("x", x)],
                [("y", F)], [c("c", x.astype(np.float32))])


case(425)(int64_to_f32_minus_exact)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    ids = [int(x) for x in a.only.split(",") if x] or sorted(CASES)
    work = tempfile.mkdtemp(prefix="kiln-mutant-cases-")
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache"))
    exposed = missed = ctl_bad = 0
    for n in ids:
        res = check(a.kiln, n, a.backend, work, env)
        if res[1] is None:
            print(f"mutant {n:3d}: {res[0]}")
            ctl_bad += 1
            continue
        hit, ctl, why = res
        exposed += hit
        missed += not hit
        ctl_bad += ctl
        print(f"mutant {n:3d}: {'exposed' if hit else 'NOT exposed'}"
              f"{'  (control FAILED)' if ctl else ''}  {why[:150]}")
    print(f"{exposed} exposed, {missed} not exposed, {ctl_bad} control failures")
    return 0 if missed == 0 and ctl_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
