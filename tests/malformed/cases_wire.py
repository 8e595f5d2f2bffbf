"""Cases broken at the protobuf wire level: truncations, byte flips, bad varints,
wrong and invalid wire types, lengths that overrun their message, deep nesting."""

import numpy as np

from common import base_cnn, base_mlp, graph, model, node, vi
from wire import (I32, I64, LEN, VARINT, emit, find, key, parse, path, read_varint,
                  top_level_boundaries, varint)


def ld(num, payload):
    return key(num, LEN) + varint(len(payload)) + payload


def truncations(c, base, prefix, count):
    data = base.SerializeToString()
    clean = top_level_boundaries(data)
    offsets = set(range(1, min(48, len(data))))
    offsets |= {int(x) for x in np.linspace(1, len(data) - 1, count)}
    offsets |= {len(data) - k for k in range(1, 17)}
    offsets = sorted(o for o in offsets if o not in clean)
    for o in offsets:
        c.add("%s_trunc_%05d" % (prefix, o),
              "%s model truncated to %d of %d bytes (inside a field)" % (prefix, o, len(data)),
              data[:o], "load", inputs_from=base)


def flips(c, base, prefix, count):
    """Random byte mutations; a mutated model may still be valid, so only no crash."""
    data = bytearray(base.SerializeToString())
    for i in range(count):
        d = bytearray(data)
        kind = i % 4
        nmut = 1 + (i // 4) % 3
        what = []
        for _ in range(nmut):
            pos = int(c.rng.integers(0, len(d)))
            if kind == 0:
                d[pos] ^= 1 << int(c.rng.integers(0, 8))
            elif kind == 1:
                d[pos] = int(c.rng.integers(0, 256))
            elif kind == 2:
                d[pos] = 0xFF
            else:
                d[pos] = 0x80 | d[pos]  # turns a varint end into a continuation
            what.append(pos)
        c.add("%s_flip_%03d" % (prefix, i),
              "%s model with bytes mutated at offsets %s" % (prefix, what), bytes(d), "nocrash",
              inputs_from=base)


def garbage(c):
    c.add("wire_empty_file", "empty file (a ModelProto with no graph)", b"", "load", inputs=[])
    c.add("wire_one_zero_byte", "one zero byte: field number 0", b"\x00", "load", inputs=[])
    for i in range(6):
        n = [16, 100, 1000, 4096, 65536, 7][i]
        c.add("wire_random_%d" % i, "%d random bytes" % n, c.rng.bytes(n), "load", inputs=[])
    c.add("wire_text_file", "a text file, not protobuf", b"ir_version: 8\ngraph { }\n", "load",
          inputs=[])


def bad_varints(c, base):
    data = base.SerializeToString()
    cases = {
        "wire_key_varint_11_bytes": (b"\x80" * 10 + b"\x01" + data, "key varint of 11 bytes"),
        "wire_key_varint_overflow": (b"\xff" * 9 + b"\x7f" + data,
                                     "key varint of 10 bytes with bits past 64"),
        "wire_varint_at_eof": (data + b"\x08\x80", "varint cut at end of file"),
        "wire_len_varint_at_eof": (data + b"\x3a\xff", "length varint cut at end of file"),
        "wire_key_at_eof": (data + b"\xba", "key varint cut at end of file"),
        "wire_graph_len_2p63": (b"\x3a" + varint(2**63) + data[:64],
                                "graph length 2^63"),
        "wire_graph_len_2p64m1": (b"\x3a" + b"\xff" * 9 + b"\x01" + data[:64],
                                  "graph length 2^64-1 (wraps a position pointer)"),
        "wire_graph_len_2p32p5": (b"\x3a" + varint(2**32 + 5) + b"\x0a\x03abc" + data,
                                  "graph length 2^32+5 (5 if truncated to 32 bits)"),
        "wire_graph_len_2p31": (b"\x3a" + varint(2**31) + data,
                                "graph length 2^31 (negative as int32)"),
        "wire_len_one_past_end": (b"\x3a" + varint(len(data) + 1) + data,
                                  "graph length one past the end of the file"),
        "wire_fixed64_at_eof": (data + b"\x09\x01\x02", "fixed64 field cut at end of file"),
        "wire_fixed32_at_eof": (data + b"\x0d\x01", "fixed32 field cut at end of file"),
    }
    for name, (blob, desc) in cases.items():
        c.add(name, desc, blob, "load", inputs_from=base)


def bad_wire_types(c, base):
    data = base.SerializeToString()
    for wt, what in ((3, "start-group"), (4, "end-group"), (6, "invalid wire type 6"),
                     (7, "invalid wire type 7")):
        c.add("wire_top_wt%d" % wt, "top-level field 7 (graph) with %s" % what,
              data + key(7, wt) + b"\x00" * 8, "load", inputs_from=base)
        f = parse(data)
        g = find(f, 7)[2]
        find(g, 1, 2)[2].append(key(4, wt) + b"\x00" * 4)
        c.add("wire_node_wt%d" % wt, "node op_type field with %s" % what, f, "load",
              inputs_from=base)
    # Unknown fields with matched groups: protobuf skips them, Kiln may reject them.
    c.add("wire_unknown_group", "an unknown field encoded as a well-formed group",
          data + key(99, 3) + key(1, VARINT) + b"\x01" + key(99, 4), "nocrash",
          inputs_from=base)
    c.add("wire_unmatched_end_group", "an end-group with no start",
          data + key(99, 4), "load", inputs_from=base)
    c.add("wire_field_number_0", "field number 0 in the graph",
          _graph_append(data, key(0, LEN) + b"\x00"), "load", inputs_from=base)
    c.add("wire_field_number_max", "field number 2^29-1 (valid, unknown, skipped)",
          data + key(2**29 - 1, VARINT) + b"\x01", "ok", inputs_from=base)
    c.add("wire_field_number_too_big", "field number 2^32 in a key varint",
          data + varint(2**32 << 3) + b"\x01", "load", inputs_from=base)


def _graph_append(data, raw):
    f = parse(data)
    find(f, 7)[2].append(raw)
    return emit(f)


def wrong_known_wire_types(c, base):
    """Known fields sent with another wire type: a parser may reject them or skip them as
    unknown; either way the model left is invalid."""
    data = base.SerializeToString()
    f = parse(data)
    g = find(f, 7)
    g[1] = VARINT
    g[2] = 5
    c.add("wrongwt_graph_as_varint", "model.graph sent as a varint", f, "load", inputs_from=base)

    f = parse(data)
    n = path(f, (7, 0), (1, 1))[2]  # the Relu node
    op = find(n, 4)
    op[1], op[2] = VARINT, 7
    c.add("wrongwt_op_type_as_varint", "node.op_type sent as a varint", f, "load",
          inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]  # initializer w
    dt = find(t, 2)
    dt[1], dt[2] = LEN, b"\x01"
    c.add("wrongwt_data_type_as_bytes", "tensor.data_type sent length-delimited", f, "load",
          inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]
    dims = [x for x in t if x[0] == 1]
    for d in dims:
        d[1], d[2] = I64, 3
    c.add("wrongwt_dims_as_fixed64", "tensor.dims sent as fixed64", f, "load", inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]
    raw = find(t, 9)
    raw[1], raw[2] = I32, 0
    c.add("wrongwt_raw_data_as_fixed32", "tensor.raw_data sent as fixed32", f, "load",
          inputs_from=base)

    f = parse(data)
    inp = path(f, (7, 0), (1, 0))[2]  # Conv node
    for x in inp:
        if x[0] == 1:
            x[1], x[2] = VARINT, 1
    c.add("wrongwt_node_inputs_as_varint", "node.input strings sent as varints", f, "load",
          inputs_from=base)


def overruns(c, base):
    """Lengths that fit in the file but overrun the enclosing message."""
    data = base.SerializeToString()
    tail = ld(8, ld(1, b"") + key(2, VARINT) + varint(17)) + ld(6, b"x" * 300)

    f = parse(data)
    g = find(f, 7)[2]
    nd = emit(find(g, 1, 1)[2])
    g.append(key(1, LEN) + varint(len(nd) + 100) + nd)
    c.add("overrun_node_past_graph", "a node whose length runs 100 bytes past its graph",
          emit(f) + tail, "load", inputs_from=base)

    f = parse(data)
    n = path(f, (7, 0), (1, 1))[2]
    n.append(key(3, LEN) + varint(200) + b"relu")
    c.add("overrun_name_past_node", "a node name whose length runs past its node",
          emit(f) + tail, "load", inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]
    raw = find(t, 9)
    t.remove(raw)
    t.append(key(9, LEN) + varint(len(raw[2]) + 64) + raw[2])
    c.add("overrun_raw_data_past_tensor", "raw_data whose length runs past its tensor",
          emit(f) + tail, "load", inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]
    for x in [x for x in t if x[0] == 1]:
        t.remove(x)
    t.insert(0, ld(1, varint(4) + varint(3) + b"\x83"))  # last dim varint cut inside packed
    c.add("overrun_packed_dims_cut", "packed dims whose last varint is cut", f, "load",
          inputs_from=base)

    f = parse(data)
    t = path(f, (7, 0), (5, 0))[2]
    t.append(key(9, LEN) + varint(2**62) + b"\x00" * 16)
    c.add("overrun_raw_data_2p62", "raw_data declaring 2^62 bytes", emit(f) + tail, "load",
          inputs_from=base)

    f = parse(data)
    g = find(f, 7)[2]
    g.append(key(5, LEN) + varint(2**40))
    c.add("overrun_initializer_2p40", "an initializer declaring 2^40 bytes at end of graph",
          f, "load", inputs_from=base)

    f = parse(data)
    a = path(f, (7, 0), (1, 0), (5, 0))[2]  # Conv attribute
    a.append(key(8, LEN) + varint(1000) + varint(1))
    c.add("overrun_packed_ints_attr", "packed ints attribute whose length runs past it",
          emit(f) + tail, "load", inputs_from=base)


def variants(c):
    """Valid encodings a reader must accept: unpacked dims, packed float_data, fields
    out of order, repeated singular fields (last wins)."""
    b = base_mlp()
    f = parse(b.SerializeToString())
    t = path(f, (7, 0), (5, 0))[2]
    dims = find(t, 1)
    if dims[1] == LEN:
        pos, out = 0, []
        while pos < len(dims[2]):
            v, pos = read_varint(dims[2], pos)
            out.append([1, VARINT, v])
        idx = t.index(dims)
        t[idx:idx + 1] = out
    c.add("valid_unpacked_dims", "valid: tensor dims as unpacked varints", f, "ok",
          inputs_from=b)
    f = parse(b.SerializeToString())
    g = find(f, 7)[2]
    g.reverse()  # fields in any order; repeated fields keep their relative order reversed
    # Reversing the node list breaks topological order, which ONNX requires; Kiln sorts.
    c.add("valid_fields_reversed", "valid fields in reverse order (nodes not in topological "
          "order)", f, "nocrash", inputs_from=b)
    m = base_mlp()
    init = m.graph.initializer[1]
    arr = np.frombuffer(init.raw_data, np.float32)
    init.ClearField("raw_data")
    init.float_data.extend(arr.tolist())
    c.add("valid_float_data", "valid: an initializer in float_data", m, "ok", inputs_from=m)
    f = parse(b.SerializeToString())
    f.append([1, VARINT, 3])  # ir_version again: last one wins
    f.append([1, VARINT, 8])
    c.add("valid_repeated_ir_version", "valid: ir_version given three times", f, "ok",
          inputs_from=b)


def deep_nesting(c):
    """Subgraphs nested far deeper than any real model (a recursive reader's stack)."""
    for depth in (100, 5000):
        body = b""
        for _ in range(depth):
            nd = ld(1, b"c") + ld(2, b"y") + ld(4, b"If") + ld(5, ld(1, b"then_branch") +
                                                              key(20, VARINT) + varint(5) +
                                                              ld(6, body + ld(12, ld(1, b"y"))))
            body = ld(1, nd)
        g = body + ld(11, ld(1, b"c") + ld(2, ld(1, key(1, VARINT) + varint(9)))) + \
            ld(12, ld(1, b"y"))
        blob = key(1, VARINT) + varint(8) + ld(8, ld(1, b"") + key(2, VARINT) + varint(17)) + \
            ld(7, g)
        c.add("deep_if_nesting_%d" % depth,
              "If nodes nested %d deep (missing else_branch at every level)" % depth, blob,
              "load", inputs=[("c", np.array(True))])
    # Deeply nested sequence types.
    t = ld(1, key(1, VARINT) + varint(1))
    for _ in range(20000):
        t = ld(4, ld(1, t))
    blob = key(1, VARINT) + varint(8) + ld(8, ld(1, b"") + key(2, VARINT) + varint(17)) + \
        ld(7, ld(1, ld(1, b"x") + ld(2, b"y") + ld(4, b"Identity")) +
           ld(11, ld(1, b"x") + ld(2, t)) + ld(12, ld(1, b"y")))
    c.add("deep_sequence_type", "a graph input of type sequence(sequence(... 20000 deep))",
          blob, "load", inputs=[])
    # A graph 100000 nodes long (valid; checks that nothing recurses per node).
    nodes = [node("Neg", ["v%d" % i], ["v%d" % (i + 1)]) for i in range(20000)]
    g = graph(nodes, [vi("v0", shape=[2])], [vi("v20000", shape=[2])])
    c.add("valid_long_chain", "valid: a chain of 20000 Neg nodes", model(g), "ok")


def generate(c):
    cnn, mlp = base_cnn(), base_mlp()
    c.add("valid_base_cnn", "valid: the base CNN model the mutations start from", cnn, "ok")
    c.add("valid_base_mlp", "valid: the base MLP model the mutations start from", mlp, "ok")
    truncations(c, cnn, "cnn", 90)
    truncations(c, mlp, "mlp", 30)
    flips(c, cnn, "cnn", 80)
    flips(c, mlp, "mlp", 40)
    garbage(c)
    bad_varints(c, cnn)
    bad_wire_types(c, cnn)
    wrong_known_wire_types(c, cnn)
    overruns(c, cnn)
    variants(c)
    deep_nesting(c)
