#!/usr/bin/env python3
"""Builds hostile models for tests/hostile/*.sh with the onnx package.

  models.py names OUT.onnx [--seed N]   small MLP whose every name is hostile
  models.py list                        prints the hostile names, one repr per line
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


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("list")
    p = sub.add_parser("names-more")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    sub.add_parser("io").add_argument("out")
    sub.add_parser("inputs").add_argument("dir")
    p = sub.add_parser("expect-args")
    p.add_argument("model")
    p.add_argument("outdir")
    p.add_argument("files", nargs="*")
    a = ap.parse_args()
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
    else:
        build_names(a.out, a.seed)


if __name__ == "__main__":
    sys.exit(main())
