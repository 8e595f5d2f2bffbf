#!/usr/bin/env python3
"""Builds hostile models for tests/hostile/*.sh with the onnx package.

  models.py names OUT.onnx [--seed N]   small MLP whose every name is hostile
  models.py list                        prints the hostile names, one repr per line
  models.py race OUT.onnx --kind conv|matmul|gemm [--m M] [--seed N]
                                        a contraction with a remainder row tile (Conv
                                        256->546 1x1 on 1x256x3x3, a 37x512 by 512x96 MatMul,
                                        a 45-row Gemm; --m: other channels or rows): its
                                        parallel schedule once raced on the scratch tile
  models.py input OUT.npy D0,D1,... [--seed N]   random float32 input of that shape
  models.py declared OUT.onnx --mode M  an MLP whose value_info and outputs declare types:
                                        sym (exporter symbols on static dims), infer (as
                                        onnx.shape_inference writes them, dims renamed to
                                        'unk__N'), static / dtype / rank (a contradiction),
                                        datadep (NonZero's output declared [1,2])
  models.py detector OUT.onnx --mode M  an SSD-like tail: L2 norm, Shape -> ReduceProd ->
                                        Equal -> If whose branches read outer values; infer:
                                        after onnx.shape_inference, dims renamed to symbols;
                                        plain: as exported
  models.py conv OUT.onnx --mode M      a Conv model: batch (symbolic batch 'N'), i64 (an
                                        i64 input feeding the Conv)
  models.py short_external DIR          DIR/model.onnx whose external weights file is short
  models.py reductions OUT.onnx         MatMul and reductions over a symbolic extent 'K'
  models.py blame DIR                   fixtures of case_blame.sh (wrong inputs, cases, folders)
  models.py names-more OUT.onnx [--seed N]
                                        the same MLP with other hostile names (MORE_HOSTILE:
                                        line splices, names of the emitted symbols and files,
                                        escapes as text, names that collide once encoded)
  models.py io OUT.onnx                 x: f32[2,4] -> outputs '../../x' and 'sub/../y'
  models.py inputs DIR                  hostile input files for an f32[2,4] input (see
                                        write_inputs)
  models.py expect-args MODEL DIR FILE...
                                        NUL-separated `kiln run` arguments: --input NAME=FILE
                                        per input (in order) and --expect NAME=DIR/F.npy per
                                        output, F the name as kiln_esc_file_name encodes it
  models.py memory KIND OUT.onnx [--n N]  a small model that describes a huge tensor
                                        (memory bombs; KIND: see MEMORY_KINDS)

Hostile names: comment closers, quotes, backslashes, newlines, control bytes (no NUL), '..',
'/', very long, non-ASCII, format directives, shell metacharacters.
"""
import argparse
import random
import sys

HOSTILE = [
    'r */ system("touch PWNED"); /* ',
    "g\n__attribute__((constructor)) static void pwn(void){system(\"touch PWNED\");}\n//",
    "a\\\"b'c`d$(touch PWNED)",
    "../../escape",
    "/abs/path",
    "a/b",
    "a_b",
    "..",
    ".",
    "x" * 5000,
    "ctl\x01\x02\x1b[31m\x7f\r\t\v\f",
    "ünï¢ødé ✓ \u202e",
    "%s%n%d%x",
    "??/ trigraph ??=",
    "#define X 1",
    "*/",
    "/*",
    "//",
    "}\n}\nint main(){return 0;}\n{",
    " ",
    "-o",
    "--help",
]


def hostile_names(seed):
    rng = random.Random(seed)
    names = HOSTILE[:]
    rng.shuffle(names)
    return names


def build_names(out, seed):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names = hostile_names(seed)
    pick = iter(names * 4)
    uniq = {}

    def n(role):
        base = next(pick)
        k = uniq.get(base, 0)
        uniq[base] = k + 1
        return base if k == 0 else "%s#%d" % (base, k)

    x, w, b, h, y, z = (n(r) for r in ("x", "w", "b", "h", "y", "z"))
    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), w)
    B = numpy_helper.from_array(rng.standard_normal((3,)).astype(np.float32), b)
    nodes = [
        helper.make_node("Gemm", [x, w, b], [h], name=n("gemm"), transB=1, doc_string=n("doc")),
        helper.make_node("Relu", [h], [y], name=n("relu")),
        helper.make_node("Neg", [h], [z], name=n("neg")),
    ]
    g = helper.make_graph(
        nodes,
        n("graph"),
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info(z, TensorProto.FLOAT, [2, 3])],
        [W, B],
        doc_string=n("gdoc"),
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name=n("producer"), doc_string=n("mdoc"))
    helper.set_model_props(m, {n("key"): n("value")})
    onnx.checker.check_model(m)
    onnx.save(m, out)


def build_blame(d):
    """Fixtures of case_blame.sh in folder d: models, right and wrong inputs, case folders
    with wrong inputs, model folders in ONNX's test layout, outer values read in subgraphs,
    ONNX test cases without expected outputs."""
    import os
    import numpy as np
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh

    F = T.FLOAT
    os.makedirs(d, exist_ok=True)

    def path(*p):
        q = os.path.join(d, *p)
        os.makedirs(os.path.dirname(q), exist_ok=True)
        return q

    def save(nodes, name, ins, outs, *rel):
        m = h.make_model(h.make_graph(nodes, name, ins, outs),
                         opset_imports=[h.make_opsetid("", 17)])
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, path(*rel))

    def pb(arr, name, *rel):
        with open(path(*rel), "wb") as f:
            f.write(nh.from_array(arr, name).SerializeToString())

    def const(name, arr):
        return h.make_node("Constant", [], [name], value=nh.from_array(arr))

    vi = h.make_tensor_value_info
    x = vi("x", F, [2, 3])
    basic = [h.make_node("Relu", ["x"], ["r"], name="relu"),
             h.make_node("Add", ["r", "x"], ["y"], name="add")]
    save(basic, "g", [x], [vi("y", F, [2, 3])], "m.onnx")
    good = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.save(path("good.npy"), good)
    np.save(path("shape.npy"), good.reshape(3, 2))
    np.save(path("dtype.npy"), good.astype(np.float64))
    np.save(path("int.npy"), np.ones((2, 3), np.int32))
    np.save(path("rank.npy"), good.reshape(6))
    np.save(path("scalar.npy"), np.float32(1))
    np.save(path("empty.npy"), np.zeros((0, 3), np.float32))
    np.save(path("more.npy"), np.ones((2, 3, 1), np.float32))
    with open(path("corrupt.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00garbage")
    # two inputs sharing a symbol N
    save([h.make_node("ReduceMax", ["y"], ["m"], name="rm", axes=[1], keepdims=0),
          h.make_node("Add", ["m", "z"], ["o"], name="add")], "g2",
         [vi("y", F, ["N", 3]), vi("z", F, ["N"])], [vi("o", F, ["N"])], "m2.onnx")
    np.save(path("y23.npy"), good)
    np.save(path("z2.npy"), np.ones(2, np.float32))
    np.save(path("z3.npy"), np.ones(3, np.float32))
    np.save(path("y53.npy"), np.ones((5, 3), np.float32))
    # case folders (as kiln verify --repro writes them) with wrong inputs
    cases = {"ok": [good], "shape": [good.reshape(3, 2)], "dtype": [good.astype(np.float64)],
             "rank": [good.reshape(1, 2, 3)], "extra": [good, good], "missing": []}
    for name, arrs in cases.items():
        save(basic, "g", [x], [vi("y", F, [2, 3])], "cases", name, "model.onnx")
        for i, a in enumerate(arrs):
            pb(a, "x", "cases", name, "input_%d.pb" % i)
        with open(path("cases", name, "case.txt"), "w") as f:
            f.write("signature: pass|-|-\ncommand: kiln verify DIR\n")
    with open(path("cases", "corrupt", "input_0.pb"), "wb") as f:
        f.write(b"\xff\xff\xff\xff garbage")
    open(path("cases", "empty", "input_0.pb"), "wb").close()
    for name in ("corrupt", "empty"):
        save(basic, "g", [x], [vi("y", F, [2, 3])], "cases", name, "model.onnx")
    # model folders in ONNX's test layout
    for name in ("folder", "folder_nodata", "folder_badset", "tno_good", "tno_noout", "tno_extra"):
        save(basic, "g", [x], [vi("y", F, [2, 3])], name, "model.onnx")
    for name in ("folder", "tno_good", "tno_noout", "tno_extra"):
        pb(good, "x", name, "test_data_set_0", "input_0.pb")
    pb(good.reshape(3, 2), "x", "folder_badset", "test_data_set_0", "input_0.pb")
    want = np.maximum(good, 0) + good
    pb(want, "y", "folder", "test_data_set_0", "output_0.pb")
    pb(want, "y", "tno_good", "test_data_set_0", "output_0.pb")
    pb(want, "y", "tno_extra", "test_data_set_0", "output_0.pb")
    pb(want, "y2", "tno_extra", "test_data_set_0", "output_1.pb")
    os.makedirs(path("folder_nomodel", "test_data_set_0", "x"), exist_ok=True)
    # a symbolic dim
    save([h.make_node("Relu", ["x"], ["y"], name="r")], "gs", [vi("x", F, ["seq", 3])],
         [vi("y", F, ["seq", 3])], "sym.onnx")
    # a finite f32 whose error bound reaches the range of f32
    save([h.make_node("Mul", ["x", "x"], ["y"], name="sq")], "gq", [vi("x", F, [2])],
         [vi("y", F, [2])], "bigsq.onnx")
    np.save(path("big.npy"), np.array([np.nextafter(np.float32(2.0**64), np.float32(0)), 1],
                                      np.float32))
    # a case of a model whose every name is hostile, with an input of the wrong shape
    for seed in (0, 1):
        build_names(path("hostile_case%d" % seed, "model.onnx"), seed)
        hm = onnx.load(path("hostile_case%d" % seed, "model.onnx"))
        pb(np.ones((4, 2), np.float32), hm.graph.input[0].name, "hostile_case%d" % seed,
           "input_0.pb")
    # outer values read in subgraphs; b gets no dtype from inference (computed axes)
    pre = [const("ax", np.array([0], np.int64)),
           h.make_node("ReduceSum", ["x", "ax"], ["b"], name="rs", keepdims=0)]

    def branch(nm, k):
        return h.make_graph([const(nm + "_k", np.full((3,), k, np.float32)),
                             h.make_node("Add", ["b", nm + "_k"], [nm + "_o"], name=nm + "_add")],
                            nm, [], [vi(nm + "_o", F, [3])])
    save(pre + [h.make_node("If", ["c"], ["y"], name="If_1", then_branch=branch("then", 0.5),
                            else_branch=branch("else", -0.5))],
         "gi", [x, vi("c", T.BOOL, [])], [vi("y", F, [3])], "sub_if.onnx")
    np.save(path("true.npy"), np.array(True))
    np.save(path("false.npy"), np.array(False))
    body = h.make_graph([const("k", np.full((3,), 0.25, np.float32)),
                         h.make_node("Add", ["b", "k"], ["t"], name="lb_add1"),
                         h.make_node("Add", ["acc", "t"], ["acc_o"], name="lb_add2"),
                         h.make_node("Identity", ["cin"], ["cout"])], "body",
                        [vi("i", T.INT64, []), vi("cin", T.BOOL, []), vi("acc", F, [3])],
                        [vi("cout", T.BOOL, []), vi("acc_o", F, [3])])
    save(pre + [const("trip", np.array(3, np.int64)), const("t0", np.array(True)),
                const("z", np.zeros((3,), np.float32)),
                h.make_node("Loop", ["trip", "t0", "z"], ["y"], name="Loop_1", body=body)],
         "gl", [x], [vi("y", F, [3])], "sub_loop.onnx")
    body = h.make_graph([const("k", np.full((3,), 0.125, np.float32)),
                         h.make_node("Add", ["row", "b"], ["t"], name="sb_add1"),
                         h.make_node("Add", ["t", "k"], ["t2"], name="sb_add2"),
                         h.make_node("Add", ["s", "t2"], ["s_o"], name="sb_add3"),
                         h.make_node("Identity", ["t2"], ["out"])], "sbody",
                        [vi("s", F, [3]), vi("row", F, [3])], [vi("s_o", F, [3]), vi("out", F, [3])])
    save(pre + [const("s0", np.zeros((3,), np.float32)),
                h.make_node("Scan", ["s0", "x"], ["ys", "y2"], name="Scan_1", body=body,
                            num_scan_inputs=1)],
         "gsc", [x], [vi("ys", F, [3]), vi("y2", F, [2, 3])], "sub_scan.onnx")
MORE_HOSTILE = [
    "\\\n*/ int pwn; /*",
    "*\\\n/ system(\"touch PWNED\");",
    "??/\nsystem(\"touch PWNED\");",
    "\\x2A/",
    "\\n\\0\\\"",
    "%%%00%2F",
    "a%2Fb",
    "a/b",
    "model_init",
    "main",
    "A",
    "in",
    ".npy",
    "x.npy",
    "model.bin",
    "-w",
    "\"); system(\"touch PWNED\"); (\"",
    "'); system('touch PWNED'); ('",
    "y" * 255,
    "\u00e9\u0301\ufeff\u2028\u0000x".replace("\u0000", ""),
]


def build_names_more(out, seed):
    """build_names with MORE_HOSTILE in place of HOSTILE."""
    global HOSTILE
    saved = HOSTILE
    HOSTILE = MORE_HOSTILE
    try:
        build_names(out, seed)
    finally:
        HOSTILE = saved


def build_io(out):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    W = numpy_helper.from_array(
        np.arange(12, dtype=np.float32).reshape(4, 3) / 7 - 0.5, "W")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["../../x"], name="mm"),
        helper.make_node("Relu", ["../../x"], ["sub/../y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes, "io",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("../../x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("sub/../y", TensorProto.FLOAT, [2, 3])],
        [W])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, out)


def npy_bytes(header, data, version=1):
    """A .npy file with this header text (padded as numpy pads it) and data."""
    head = header.encode("latin1")
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(head) + 1) % 64) % 64
    head += b" " * pad + b"\n"
    size = len(head).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + size + head + data


def write_inputs(d):
    """Input files for an f32[2,4] input: good ones and one per way of being wrong."""
    import os
    import numpy as np

    a = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) / 4
    files = {
        "good.npy": None, "v2.npy": None, "v3.npy": None,
        "raw.bin": a.tobytes(), "i32.npy": a.astype(np.int32),
        "f64half.npy": a.reshape(8)[:4].astype(np.float64),
        "fortran.npy": np.asfortranarray(np.ones((4, 2), np.float32).T),
        "bigendian.npy": a.astype(">f4"), "shape.npy": a.reshape(4, 2),
        "flat.npy": a.reshape(8), "rank3.npy": a.reshape(1, 2, 4),
        "rawshort.bin": a.tobytes()[:-1], "rawlong.bin": a.tobytes() + b"\0",
        "empty.bin": b"",
    }
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }"
    files["good.npy"] = npy_bytes(hdr, a.tobytes())
    files["v2.npy"] = npy_bytes(hdr, a.tobytes(), 2)
    files["v3.npy"] = npy_bytes(hdr, a.tobytes(), 3)
    files["v4.npy"] = npy_bytes(hdr, a.tobytes(), 4)
    files["trunc.npy"] = npy_bytes(hdr, a.tobytes())[:-4]
    files["extra.npy"] = npy_bytes(hdr, a.tobytes()) + b"\0\0\0\0"
    files["headcut.npy"] = npy_bytes(hdr, b"")[:40]
    files["magiconly.npy"] = b"\x93NUMPY"
    files["nodescr.npy"] = npy_bytes("{'fortran_order': False, 'shape': (2, 4), }", a.tobytes())
    files["dupkey.npy"] = npy_bytes(
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }",
        a.tobytes())
    files["badshape.npy"] = npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -4), }", a.tobytes())
    files["bigdim.npy"] = npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 4), }",
        a.tobytes())
    files["structured.npy"] = npy_bytes(
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 4), }", a.tobytes())
    files["hugehead.npy"] = b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{"
    for name, v in files.items():
        path = os.path.join(d, name)
        if isinstance(v, bytes):
            open(path, "wb").write(v)
        else:
            np.save(path, v)


def esc_file_name(s):
    """kiln_esc_file_name (src/base/text.c) in Python, over the name's UTF-8 bytes."""
    raw = s.encode("utf-8")
    out = "%00" if not raw else ""
    for i, c in enumerate(raw):
        ok = chr(c).isascii() and (chr(c).isalnum() or chr(c) in "_-" or (c == 46 and i > 0))
        out += chr(c) if ok else "%%%02X" % c
    if len(out) <= 200:
        return out
    cut = 200 - 18
    if out[cut - 1] == "%":
        cut -= 1
    elif out[cut - 2] == "%":
        cut -= 2
    h = 1469598103934665603 ^ 0x6b696c6e
    for c in raw:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return out[:cut] + "~%016x" % h


def expect_args(model, outdir, files):
    import onnx

    g = onnx.load(model).graph
    inits = {t.name for t in g.initializer}
    ins = [v.name for v in g.input if v.name not in inits]
    args = []
    for name, f in zip(ins, files):
        args += ["--input", "%s=%s" % (name, f)]
    for v in g.output:
        args += ["--expect", "%s=%s/%s.npy" % (v.name, outdir, esc_file_name(v.name))]
    sys.stdout.buffer.write(b"".join(a.encode("utf-8") + b"\0" for a in args))
# ---- memory bombs: small models that describe huge tensors ----
def _mem_model(nodes, inputs, outputs, inits, opset=17):
    """Not passed through onnx.checker: outputs declare no shape (Kiln infers them)."""
    from onnx import helper
    g = helper.make_graph(nodes, "bomb", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _i64(name, vals):
    import numpy as np
    from onnx import numpy_helper
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def _f32(name, vals):
    import numpy as np
    from onnx import numpy_helper
    return numpy_helper.from_array(np.array(vals, dtype=np.float32), name)


def build_memory(kind, out, n):
    """n: the huge extent (default 100000: 1e10 elements, 40 GB of f32)."""
    import onnx
    from onnx import TensorProto as T, helper
    vi = helper.make_tensor_value_info
    node = helper.make_node
    fill = helper.make_tensor("value", T.FLOAT, [1], [1.0])
    y_any = vi("y", T.FLOAT, None)  # no declared shape: Kiln infers it
    if kind == "symbatch":  # f32[N,1000,1000]: --dim N=4000 is a 16 GB arena
        m = _mem_model([node("Relu", ["x"], ["h"]), node("Neg", ["h"], ["y"])],
                       [vi("x", T.FLOAT, ["N", 1000, 1000])],
                       [vi("y", T.FLOAT, ["N", 1000, 1000])], [])
    elif kind == "constofshape":  # a constant shape [n, n]
        m = _mem_model([node("ConstantOfShape", ["s"], ["y"], value=fill)], [], [y_any],
                       [_i64("s", [n, n])])
    elif kind == "constofshape_input":  # the shape is data: known only when it runs
        m = _mem_model([node("ConstantOfShape", ["s"], ["y"], value=fill)],
                       [vi("s", T.INT64, [2])], [y_any], [])
    elif kind == "constofshape_computed":  # shape computed from constants (folded)
        m = _mem_model([node("Mul", ["a", "b"], ["s"]),
                        node("ConstantOfShape", ["s"], ["y"], value=fill)], [], [y_any],
                       [_i64("a", [n, n]), _i64("b", [1, 1])])
    elif kind == "expand":
        m = _mem_model([node("Expand", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1])], [y_any],
                       [_i64("s", [n, n])])
    elif kind == "expand_empty":  # no elements, but strides n^3 (overflow for n = 2^62)
        m = _mem_model([node("Expand", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [1])], [y_any],
                       [_i64("s", [0, n, n, n])])
    elif kind == "expand_input":  # the target shape is data
        m = _mem_model([node("Expand", ["x", "s"], ["y"])],
                       [vi("x", T.FLOAT, [1]), vi("s", T.INT64, [4])], [y_any], [])
    elif kind == "tile":
        m = _mem_model([node("Tile", ["x", "r"], ["y"])], [vi("x", T.FLOAT, [2, 2])], [y_any],
                       [_i64("r", [n, n])])
    elif kind == "resize":
        m = _mem_model([node("Resize", ["x", "", "sc"], ["y"], mode="nearest")],
                       [vi("x", T.FLOAT, [1, 1, 2, 2])], [y_any],
                       [_f32("sc", [1, 1, float(n), float(n)])])
    elif kind == "range":
        m = _mem_model([node("Range", ["a", "b", "d"], ["y"])], [], [vi("y", T.INT64, None)],
                       [_i64("a", 0), _i64("b", min(n * n, 2**63 - 1)), _i64("d", 1)])
    elif kind == "pad":
        m = _mem_model([node("Pad", ["x", "p"], ["y"])], [vi("x", T.FLOAT, [2, 2])], [y_any],
                       [_i64("p", [0, 0, n, n])])
    elif kind == "reshape":  # a target whose element count overflows
        m = _mem_model([node("Reshape", ["x", "s"], ["y"])], [vi("x", T.FLOAT, [4])],
                       [y_any],
                       [_i64("s", [n, n, n, n])])
    elif kind == "input_dims":  # a declared input of n^4 elements
        m = _mem_model([node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [n, n, n, n])],
                       [y_any], [])
    elif kind == "value_info":  # a declared intermediate type of n^4 elements
        m = _mem_model([node("Relu", ["x"], ["h"]), node("Neg", ["h"], ["y"])],
                       [vi("x", T.FLOAT, ["N"])], [y_any], [])
        m.graph.value_info.append(vi("h", T.FLOAT, [n, n, n, n]))
    elif kind == "initializer":  # dims declared, no data
        t = onnx.TensorProto()
        t.name, t.data_type = "w", T.FLOAT
        t.dims.extend([n, n])
        m = _mem_model([node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [n, n])], [y_any],
                       [t])
    elif kind == "attention":  # Q, K, V of n rows and width 1: n^2 attention scores
        qkv = [vi(k, T.FLOAT, [1, 1, n, 1]) for k in ("q", "k", "v")]
        m = _mem_model([node("Attention", ["q", "k", "v"], ["y"])], qkv, [y_any], [], opset=23)
    elif kind == "matmul":  # a real n x n weight (4 n^2 bytes) that verification widens
        import numpy as np
        w = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
        m = _mem_model([node("MatMul", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [1, n])],
                       [vi("y", T.FLOAT, [1, n])], [_f32("w", w)])
    else:
        raise SystemExit("unknown memory kind %r (one of %s)" % (kind, ", ".join(MEMORY_KINDS)))
    onnx.save(m, out)


MEMORY_KINDS = ["symbatch", "constofshape", "constofshape_input", "constofshape_computed",
                "expand", "tile", "resize", "range", "pad", "reshape", "input_dims",
                "value_info", "initializer", "matmul", "attention", "expand_empty",
                "expand_input"]



def _symbolize(model, prefix):
    """Renames every dim of value_info and graph outputs to a symbol, as exporters and
    onnx.shape_inference leave them ('unk__N', 'Gemmoutput_dim_0')."""
    k = 0
    for vi in list(model.graph.value_info) + list(model.graph.output):
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            d.dim_param = "%s%d" % (prefix, k)
            k += 1


def build_declared(out, seed, mode):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names = hostile_names(seed)
    x, h, y, w = names[0], names[1] + "#h", names[2] + "#y", names[3] + "#w"
    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), w)
    nodes = [
        helper.make_node("Relu", [x], [h], name="Relu_0"),
        helper.make_node("Gemm", [h, w], [y], name="Gemm_1", transB=1),
    ]
    out_dims = ["Gemmoutput_dim_0", 10]
    vi_dims = ["unk__7", "unk__8"]
    vi_type = TensorProto.FLOAT
    if mode == "static":
        vi_dims = [3, 16]
    elif mode == "dtype":
        vi_type = TensorProto.INT64
        vi_dims = [2, 16]
    elif mode == "rank":
        vi_dims = [32]
    g = helper.make_graph(
        nodes, "declared",
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, out_dims)], [W],
        value_info=[helper.make_tensor_value_info(h, vi_type, vi_dims)])
    if mode == "datadep":  # a data-dependent value (NonZero) declared with a static shape
        nodes = [helper.make_node("NonZero", [x], [h], name="NonZero_0"),
                 helper.make_node("Neg", [h], [y], name="Neg_1")]
        g = helper.make_graph(
            nodes, "declared", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [6])],
            [helper.make_tensor_value_info(y, TensorProto.INT64, [1, 2])], [],
            value_info=[helper.make_tensor_value_info(h, TensorProto.INT64, [1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    if mode == "infer":
        del m.graph.value_info[:]
        m = onnx.shape_inference.infer_shapes(m)
        _symbolize(m, "unk__")
    onnx.save(m, out)


def build_detector(out, seed, mode):
    """The tail of an SSD-like detector: an L2 norm of features (ReduceL2 -> Clip ->
    Expand -> Div), then Shape -> ReduceProd -> Equal -> Cast -> If whose branches read
    values of the outer graph, as torchvision's batched NMS exports; after
    onnx.shape_inference, every intermediate value declared with symbolic dims."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    f32 = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array(1e-12, np.float32), "eps"),
        numpy_helper.from_array(rng.random((1, 8, 1, 1)).astype(np.float32), "scale"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([-1, 4], np.int64), "box_shape"),
    ]
    then_g = helper.make_graph(
        [helper.make_node("Constant", [], ["empty"],
                          value=numpy_helper.from_array(np.zeros((0,), np.float32)))],
        "then_branch", [], [helper.make_tensor_value_info("empty", f32, None)])
    else_g = helper.make_graph(
        [helper.make_node("ReduceMax", ["boxes"], ["max_coordinate"], keepdims=0),
         helper.make_node("Add", ["boxes", "max_coordinate"], ["shifted"]),
         helper.make_node("ReduceMax", ["shifted"], ["keep"], axes=[1], keepdims=0)],
        "else_branch", [], [helper.make_tensor_value_info("keep", f32, None)])
    nodes = [
        helper.make_node("Relu", ["features"], ["feat"]),
        helper.make_node("ReduceL2", ["feat"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Clip", ["norm", "eps", ""], ["clipped"]),
        helper.make_node("Shape", ["feat"], ["feat_shape"]),
        helper.make_node("Expand", ["clipped", "feat_shape"], ["expanded"]),
        helper.make_node("Div", ["feat", "expanded"], ["normed"]),
        helper.make_node("Mul", ["normed", "scale"], ["scaled"]),
        helper.make_node("Reshape", ["scaled", "box_shape"], ["boxes"]),
        helper.make_node("Shape", ["boxes"], ["onnx::ReduceProd_4095"]),
        helper.make_node("ReduceProd", ["onnx::ReduceProd_4095"], ["onnx::Equal_4096"],
                         keepdims=0),
        helper.make_node("Equal", ["onnx::Equal_4096", "zero"], ["onnx::Cast_4097"]),
        helper.make_node("Cast", ["onnx::Cast_4097"], ["onnx::If_4098"], to=TensorProto.BOOL),
        helper.make_node("If", ["onnx::If_4098"], ["kept"], name="If_3478",
                         then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(
        nodes, "detector", [helper.make_tensor_value_info("features", f32, [1, 8, 6, 6])],
        [helper.make_tensor_value_info("scaled", f32, [1, 8, 6, 6]),
         helper.make_tensor_value_info("kept", f32, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    if mode == "infer":
        m = onnx.shape_inference.infer_shapes(m)
        _symbolize(m, "unk__")
    onnx.save(m, out)


def build_conv(out, seed, mode):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    xt = TensorProto.INT64 if mode == "i64" else TensorProto.FLOAT
    batch = "N" if mode == "batch" else 1
    nodes = [helper.make_node("Conv", ["pixels", "W"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
             helper.make_node("Relu", ["c"], ["y"], name="relu0")]
    g = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("pixels", xt, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], [W])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out)



def build_reductions(out, seed):
    """MatMul, ReduceSum, ReduceMax and Softmax over a symbolic extent 'K' (bound to 0: empty
    reductions)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    f32 = TensorProto.FLOAT
    ax = numpy_helper.from_array(np.array([1], np.int64), "ax")
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"]),
             helper.make_node("ReduceSum", ["a", "ax"], ["s"], keepdims=0),
             helper.make_node("ReduceMax", ["a", "ax"], ["mx"], keepdims=0),
             helper.make_node("Softmax", ["a"], ["sm"], axis=1),
             helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(
        nodes, "reductions",
        [helper.make_tensor_value_info("a", f32, [2, "K"]),
         helper.make_tensor_value_info("b", f32, ["K", 3])],
        [helper.make_tensor_value_info(o, f32, None) for o in ["y", "s", "mx", "sm"]], [ax])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), out)

def build_short_external(out_dir, seed):
    import os

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = numpy_helper.from_array(rng.standard_normal((1000,)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Relu", ["w"], ["y"])], "ext", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1000])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    with open(os.path.join(out_dir, "weights.bin"), "r+b") as f:
        f.truncate(3000)  # 1000 bytes short



def build_race(out, kind, seed, m=0):
    """One contraction whose rows do not split into whole register tiles of 8: 546 output
    channels (68*8 + 2) of a 1x1 Conv, or 37 rows (4*8 + 5) of a MatMul; m overrides the
    channels (conv) or rows (matmul, gemm)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    if kind == "conv":
        co = m or 546
        W = numpy_helper.from_array(
            rng.standard_normal((co, 256, 1, 1)).astype(np.float32) * 0.1, "w")
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv_%d" % co)
        xs, ys = [1, 256, 3, 3], [1, co, 3, 3]
    elif kind == "gemm":
        rows = m or 45
        W = numpy_helper.from_array(rng.standard_normal((96, 512)).astype(np.float32) * 0.1, "w")
        B = numpy_helper.from_array(rng.standard_normal((96,)).astype(np.float32), "b")
        node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm_%d" % rows, transB=1)
        g = helper.make_graph(
            [node], "race_gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 512])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 96])], [W, B])
        mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(mod)
        onnx.save(mod, out)
        return
    else:
        # 3 panels of 32 columns split worse on 2 threads than 4 row blocks: the row-block
        # loop runs on the threads and the 5-row tail after it
        W = numpy_helper.from_array(rng.standard_normal((512, 96)).astype(np.float32) * 0.1, "w")
        rows = m or 37
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="linear_%d" % rows)
        xs, ys = [rows, 512], [rows, 96]
    g = helper.make_graph(
        [node], "race_" + kind,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, xs)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ys)], [W])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, out)


def write_input(out, shape, seed):
    """A float32 .npy of the comma-separated shape, normal random data."""
    import numpy as np

    dims = [int(d) for d in shape.split(",")]
    np.save(out, np.random.default_rng(seed).standard_normal(dims).astype(np.float32))




def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("list")
    p = sub.add_parser("blame")
    p.add_argument("dir")
    p = sub.add_parser("names-more")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("io").add_argument("out")
    sub.add_parser("inputs").add_argument("dir")
    p = sub.add_parser("expect-args")
    p.add_argument("model")
    p.add_argument("outdir")
    p.add_argument("files", nargs="*")
    p = sub.add_parser("memory")
    p.add_argument("kind", choices=MEMORY_KINDS)
    p.add_argument("out")
    p.add_argument("--n", type=int, default=100000)
    for cmd, modes in (("declared", ["sym", "infer", "static", "dtype", "rank", "datadep"]),
                       ("detector", ["infer", "plain"]), ("conv", ["batch", "i64"]),
                       ("short_external", None), ("reductions", None)):
        p = sub.add_parser(cmd)
        p.add_argument("out")
        p.add_argument("--seed", type=int, default=0)
        if modes:
            p.add_argument("--mode", choices=modes, default=modes[0])
    p = sub.add_parser("race")
    p.add_argument("out")
    p.add_argument("--kind", choices=("conv", "matmul", "gemm"), default="conv")
    p.add_argument("--m", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("input")
    p.add_argument("out")
    p.add_argument("shape")
    p.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "blame":
        return build_blame(a.dir)
    if a.cmd == "names-more":
        build_names_more(a.out, a.seed)
    elif a.cmd == "io":
        build_io(a.out)
    elif a.cmd == "inputs":
        write_inputs(a.dir)
    elif a.cmd == "expect-args":
        expect_args(a.model, a.outdir, a.files)
    elif a.cmd == "list":
        for s in HOSTILE:
            print(repr(s))
    elif a.cmd == "memory":
        build_memory(a.kind, a.out, a.n)
    elif a.cmd == "declared":
        build_declared(a.out, a.seed, a.mode)
    elif a.cmd == "detector":
        build_detector(a.out, a.seed, a.mode)
    elif a.cmd == "conv":
        build_conv(a.out, a.seed, a.mode)
    elif a.cmd == "reductions":
        build_reductions(a.out, a.seed)
    elif a.cmd == "short_external":
        build_short_external(a.out, a.seed)
    elif a.cmd == "race":
        build_race(a.out, a.kind, a.seed, a.m)
    elif a.cmd == "input":
        write_input(a.out, a.shape, a.seed)
    else:
        build_names(a.out, a.seed)


if __name__ == "__main__":
    sys.exit(main())
