"""Cases broken at the graph level: names (undefined, duplicated, cycles), missing
graph parts, opsets, value types, data types, initializer data, external data,
subgraphs and functions."""

import numpy as np
from onnx import AttributeProto, TensorProto, ValueInfoProto, helper

from common import const, graph, model, node, raw_attr, simple, vi

F = TensorProto.FLOAT


def tensor(name, dtype, dims, values):
    """A TensorProto with values in the field ONNX uses for dtype, unchecked."""
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    if dtype == TensorProto.STRING:
        t.string_data.extend(values)
    elif dtype in (TensorProto.INT64,):
        t.int64_data.extend(values)
    elif dtype == F:
        t.float_data.extend(values)
    else:
        t.int32_data.extend(values)
    return t


def untyped(name):
    v = ValueInfoProto()
    v.name = name
    return v


def relu_model():
    return simple([node("Relu", ["x"], ["y"])], [vi("x", shape=[2, 3])], [vi("y", shape=[2, 3])])


def names(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    c.add("undef_node_input", "a node input that nothing defines",
          simple([node("Add", ["x", "nope"], ["y"])], [x], [y]))
    c.add("undef_graph_output", "a graph output that nothing defines",
          simple([node("Relu", ["x"], ["t"])], [x], [vi("nope", shape=[2])]))
    c.add("undef_empty_required_input", "an empty name in a required input of Add",
          simple([node("Add", ["x", ""], ["y"])], [x], [y]))
    c.add("undef_empty_graph_output", "a graph output with an empty name",
          simple([node("Relu", ["x"], ["y"])], [x], [vi("", shape=[2])]))
    c.add("undef_empty_node_output", "the only output of Relu has an empty name",
          simple([node("Relu", ["x"], [""]), node("Neg", ["x"], ["y"])], [x], [y]))
    c.add("undef_later_defined_outer", "a node reads a value that a later node defines "
          "from its own output (not a cycle: defined from an undefined value)",
          simple([node("Add", ["x", "t"], ["y"]), node("Relu", ["u"], ["t"])], [x], [y]))
    c.add("dup_node_outputs", "two nodes define the same value",
          simple([node("Relu", ["x"], ["y"]), node("Neg", ["x"], ["y"])], [x], [y]))
    c.add("dup_output_is_input", "a node redefines a graph input",
          simple([node("Relu", ["x"], ["x"]), node("Neg", ["x"], ["y"])], [x], [y]))
    c.add("dup_output_is_initializer", "a node redefines an initializer",
          simple([node("Relu", ["x"], ["w"]), node("Add", ["x", "w"], ["y"])], [x], [y],
                 [const("w", np.ones(2, np.float32))]))
    c.add("dup_graph_inputs", "the same graph input declared twice",
          simple([node("Relu", ["x"], ["y"])], [x, vi("x", shape=[3])], [y]),
          inputs=[("x", np.ones(2, np.float32))])
    c.add("dup_initializers", "two initializers with the same name and different shapes",
          simple([node("Add", ["x", "w"], ["y"])], [x], [y],
                 [const("w", np.ones(2, np.float32)), const("w", np.ones(5, np.float32))]))
    c.add("dup_same_output_twice", "one node lists the same output twice",
          simple([node("Split", ["x"], ["y", "y"], axis=0, num_outputs=2)], [x],
                 [vi("y", shape=[1])], opset=18))
    c.add("dup_graph_output_twice", "the same value listed twice as a graph output",
          simple([node("Relu", ["x"], ["y"])], [x], [y, y]), "nocrash")
    c.add("dup_initializer_unnamed", "an initializer with no name",
          simple([node("Relu", ["x"], ["y"])], [x], [y], [const("", np.ones(2, np.float32))]),
          "nocrash")
    c.add("dup_node_names", "two nodes with the same name (ONNX Runtime rejects it)",
          simple([node("Relu", ["x"], ["t"], name="n"), node("Neg", ["t"], ["y"], name="n")],
                 [x], [y]), "nocrash")


def cycles(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    c.add("cycle_self_loop", "a node that reads its own output",
          simple([node("Add", ["x", "y"], ["y"])], [x], [y]))
    c.add("cycle_two_nodes", "two nodes feeding each other",
          simple([node("Add", ["x", "b"], ["a"]), node("Relu", ["a"], ["b"]),
                  node("Neg", ["a"], ["y"])], [x], [y]))
    c.add("cycle_four_nodes", "a cycle of four nodes off the output path",
          simple([node("Add", ["x", "d"], ["a"]), node("Relu", ["a"], ["b"]),
                  node("Neg", ["b"], ["e"]), node("Abs", ["e"], ["d"]),
                  node("Relu", ["x"], ["y"])], [x], [y]))
    then_g = graph([node("Add", ["g", "t2"], ["t1"]), node("Relu", ["t1"], ["t2"])], [],
                   [vi("t2", shape=[2])], name="then")
    else_g = graph([node("Neg", ["x"], ["e"])], [], [vi("e", shape=[2])], name="else")
    c.add("cycle_in_subgraph", "a cycle inside an If branch",
          simple([node("Relu", ["x"], ["g"]),
                  node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                 [x, vi("cond", TensorProto.BOOL, [])], [y]),
          inputs=[("x", np.ones(2, np.float32)), ("cond", np.array(True))])
    c.add("valid_nodes_unsorted", "valid: nodes listed in reverse topological order",
          simple([node("Neg", ["t"], ["y"]), node("Relu", ["x"], ["t"])], [x], [y]), "nocrash")


def graph_parts(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    m = relu_model()
    m.ClearField("graph")
    c.add("no_graph", "a model with no graph", m, inputs=[])
    c.add("no_outputs", "a graph with nodes and no outputs",
          simple([node("Relu", ["x"], ["y"])], [x], []))
    c.add("empty_graph", "a graph with no nodes, inputs or outputs", simple([], [], []))
    c.add("output_without_type", "a graph output with no type",
          simple([node("Relu", ["x"], ["y"])], [x], [untyped("y")]),
          "nocrash")
    c.add("input_without_type", "a graph input with no type",
          simple([node("Relu", ["x"], ["y"])], [untyped("x")], [y]),
          inputs=[("x", np.ones(2, np.float32))])
    c.add("input_map_type", "a graph input of map type",
          simple([node("Identity", ["x"], ["y"])],
                 [helper.make_value_info("x", helper.make_map_type_proto(
                     TensorProto.INT64, helper.make_tensor_type_proto(F, [2])))], [y]),
          inputs=[("x", np.ones(2, np.float32))])
    c.add("input_sequence_to_relu", "a sequence-typed graph input fed to Relu",
          simple([node("Relu", ["x"], ["y"])],
                 [helper.make_value_info("x", helper.make_sequence_type_proto(
                     helper.make_tensor_type_proto(F, [2])))], [y]),
          "check", inputs=[("x", np.ones(2, np.float32))])
    c.add("output_type_mismatch", "graph output declared int64, computed float",
          simple([node("Relu", ["x"], ["y"])], [x], [vi("y", TensorProto.INT64, [2])]), "check")
    c.add("output_shape_mismatch", "graph output declared [7], computed [2]",
          simple([node("Relu", ["x"], ["y"])], [x], [vi("y", shape=[7])]), "nocrash")
    c.add("value_info_conflict", "value_info declares a shape that conflicts with inference",
          simple([node("Relu", ["x"], ["t"]), node("Neg", ["t"], ["y"])], [x], [y],
                 value_info=[vi("t", TensorProto.INT32, [5, 5])]), "nocrash")


def opsets(c):
    body = ([node("Relu", ["x"], ["y"])], [vi("x", shape=[2])], [vi("y", shape=[2])])
    m = simple(*body)
    m.ClearField("opset_import")
    c.add("opset_missing", "a model with no opset_import", m, "check")
    for v, name in ((0, "zero"), (-3, "negative"), (100000, "huge")):
        c.add("opset_%s" % name, "default-domain opset version %d" % v, simple(*body, opset=v),
              "check")
    m = simple(*body)
    m.opset_import.append(helper.make_opsetid("", 13))
    c.add("opset_duplicate_domain", "the default domain imported twice (17 and 13)", m,
          "nocrash")
    c.add("opset_op_too_new", "Gelu (opset 20) in an opset-13 model",
          simple([node("Gelu", ["x"], ["y"])], body[1], body[2], opset=13), "check")
    c.add("opset_op_removed", "Upsample (removed in opset 10 as deprecated) in opset 17",
          simple([node("Upsample", ["x", "s"], ["y"])], body[1], body[2],
                 [const("s", np.array([2.0], np.float32))]), "check")


def dtypes(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    for dt in (0, 27, 99, -1, 2**31 - 1):
        t = tensor("w", F, [2], [1.0, 2.0])
        t.data_type = dt
        c.add("dtype_initializer_%s" % str(dt).replace("-", "m"),
              "an initializer with data_type %d" % dt,
              simple([node("Add", ["x", "w"], ["y"])], [x], [y], [t]))
    for dt in (0, 99, -5):
        inp = vi("x", F, [2])
        inp.type.tensor_type.elem_type = dt
        c.add("dtype_input_%s" % str(dt).replace("-", "m"), "a graph input with elem_type %d" % dt,
              simple([node("Relu", ["x"], ["y"])], [inp], [y]),
              inputs=[("x", np.ones(2, np.float32))])
    for to in (0, 99, -2):
        c.add("dtype_cast_to_%s" % str(to).replace("-", "m"), "Cast to=%d" % to,
              simple([node("Cast", ["x"], ["y"], to=to)], [x], [y]))
    t = tensor("v", F, [1], [1.0])
    t.data_type = 99
    c.add("dtype_constant_of_shape_value", "ConstantOfShape value with data_type 99",
          simple([node("ConstantOfShape", ["s"], ["y"], value=t)], [], [y],
                 [const("s", np.array([2], np.int64))]))
    t = tensor("v", F, [2], [1.0, 2.0])
    t.data_type = 77
    c.add("dtype_constant_node", "a Constant node whose tensor has data_type 77",
          simple([node("Constant", [], ["y"], value=t)], [], [y]))
    out = vi("y", F, [2])
    out.type.tensor_type.elem_type = 99
    c.add("dtype_output", "a graph output with elem_type 99",
          simple([node("Relu", ["x"], ["y"])], [x], [out]))
    t = tensor("w", TensorProto.STRING, [2], [b"a", b"b"])
    c.add("dtype_string_to_add", "Add of a float input and a string initializer",
          simple([node("Add", ["x", "w"], ["y"])], [x], [y], [t]), "check")


def shapes(c):
    y = vi("y", shape=[2])
    big = [2**32, 2**32, 2**32]
    c.add("shape_input_overflow", "graph input dims [2^32,2^32,2^32] (count overflows int64)",
          simple([node("Relu", ["x"], ["y"])], [vi("x", shape=big)], [vi("y", shape=big)]),
          "check", inputs=[("x", np.ones(2, np.float32))])
    for dims, tag, desc in (
            ([2**32, 2**32, 2**32], "3x2p32", "overflows int64"),
            ([2**31, 2**31, 4], "wrap_to_zero", "count 2^64 wraps to 0 elements"),
            ([2**62, 4], "bytes_wrap", "2^64 bytes wraps to 0"),
            ([2**61, 2**3], "bytes_wrap2", "count 2^64 wraps to 0"),
            ([2**63 - 1], "max", "2^63-1 elements, no data"),
            ([-1, 4], "neg", "a negative dim"),
            ([-2**63, 2], "min", "dim -2^63")):
        t = tensor("w", F, [1], [1.0])
        t.ClearField("dims")
        t.ClearField("float_data")
        t.dims.extend(dims)
        t.raw_data = b""
        c.add("shape_init_%s" % tag, "initializer dims %s: %s; no data" % (dims, desc),
              simple([node("Add", ["x", "w"], ["y"])], [vi("x", shape=[2])], [y], [t]))
    t = tensor("w", F, [4], [1.0, 2.0, 3.0, 4.0])
    t.dims[0] = 2**62
    t.raw_data = np.ones(4, np.float32).tobytes()
    t.ClearField("float_data")
    c.add("shape_init_huge_with_data", "initializer dims [2^62] with 16 bytes of data",
          simple([node("Add", ["x", "w"], ["y"])], [vi("x", shape=[2])], [y], [t]))
    for dims, tag in (([-3, 2], "neg"), ([2**63 - 1, 2], "huge")):
        inp = vi("x", shape=dims)
        c.add("shape_input_%s" % tag, "graph input dims %s" % dims,
              simple([node("Relu", ["x"], ["y"])], [inp], [vi("y", shape=[2])]), "check",
              inputs=[("x", np.ones(2, np.float32))])
    c.add("shape_value_info_neg", "value_info with a negative dim",
          simple([node("Relu", ["x"], ["t"]), node("Neg", ["t"], ["y"])], [vi("x", shape=[2])],
                 [y], value_info=[vi("t", shape=[-7])]), "nocrash")


def initializer_data(c):
    x, y = vi("x", shape=[4]), vi("y", shape=[4])

    def add_with(t, expect="load"):
        return simple([node("Add", ["x", "w"], ["y"])], [x], [y], [t]), expect

    cases = {}
    t = const("w", np.ones(4, np.float32))
    t.raw_data = t.raw_data[:10]
    cases["raw_short"] = ("raw_data of 10 bytes for 4 floats",) + add_with(t)
    t = const("w", np.ones(4, np.float32))
    t.raw_data = t.raw_data + b"\0\0\0\0"
    cases["raw_long"] = ("raw_data of 20 bytes for 4 floats",) + add_with(t)
    t = tensor("w", F, [4], [1.0, 2.0, 3.0])
    cases["float_data_short"] = ("3 float_data values for 4 floats",) + add_with(t)
    t = tensor("w", F, [4], [1.0] * 5)
    cases["float_data_long"] = ("5 float_data values for 4 floats",) + add_with(t)
    t = tensor("w", F, [4], [])
    t.int64_data.extend([1, 2, 3, 4])
    cases["wrong_data_field"] = ("a float tensor holding int64_data",) + add_with(t)
    t = tensor("w", F, [], [])
    cases["scalar_no_data"] = ("a scalar float initializer with no data",) + add_with(t)
    t = tensor("w", F, [], [1.0, 2.0])
    cases["scalar_two_values"] = ("a scalar float initializer with 2 values",) + add_with(t)
    t = tensor("w", F, [0], [])
    t.raw_data = b"\0\0\0\0"
    cases["empty_with_data"] = ("dims [0] with 4 bytes of raw_data",) + add_with(t)
    t = tensor("w", F, [4], [1.0, 2.0, 3.0, 4.0])
    t.raw_data = np.ones(4, np.float32).tobytes()
    cases["raw_and_float_data"] = ("both raw_data and float_data",) + add_with(t, "nocrash")
    t = tensor("w", TensorProto.INT64, [4], [1, 2, 3])
    cases["int64_short"] = ("3 int64_data values for 4 int64",) + add_with(t)
    t = tensor("w", TensorProto.FLOAT16, [4], [])
    t.int32_data.extend([0x3C00, 0x1FFFF, -5, 2**31 - 1])
    cases["f16_bad_int32"] = ("float16 values out of 16-bit range in int32_data",) + \
        add_with(t, "nocrash")
    t = tensor("w", TensorProto.BOOL, [4], [])
    t.raw_data = bytes([0, 1, 2, 255])
    cases["bool_bytes_2_255"] = ("bool raw_data bytes 2 and 255",) + add_with(t, "nocrash")
    t = tensor("w", TensorProto.STRING, [4], [b"a", b"b"])
    cases["string_short"] = ("2 string_data values for 4 strings",) + add_with(t)
    t = tensor("w", TensorProto.INT4, [4], [])
    t.raw_data = b"\x12"
    cases["int4_short"] = ("1 byte of raw_data for 4 int4 values",) + add_with(t)
    t = tensor("w", F, [4], [])
    t.ParseFromString(t.SerializeToString() + b"\x70\x07")  # data_location 7 (closed enum)
    t.raw_data = np.ones(4, np.float32).tobytes()
    cases["bad_data_location"] = ("data_location 7",) + add_with(t, "nocrash")
    t = tensor("w", F, [4], [])
    t.segment.begin, t.segment.end = 0, 2
    cases["segment"] = ("a segmented tensor with no data",) + add_with(t)
    for tag, (desc, m, expect) in cases.items():
        c.add("init_" + tag, desc, m, expect)


def external(c):
    x, y = vi("x", shape=[4]), vi("y", shape=[4])
    weights = np.arange(4, dtype=np.float32).tobytes()

    def ext_model(entries, location=1, extra=None):
        t = tensor("w", F, [4], [])
        t.ClearField("float_data")
        t.data_location = location
        for k, v in entries:
            e = t.external_data.add()
            e.key, e.value = k, v
        if extra:
            extra(t)
        return simple([node("Add", ["x", "w"], ["y"])], [x], [y], [t])

    ok_files = {"w.bin": weights}
    c.add("valid_external_data", "valid: external data in w.bin",
          ext_model([("location", "w.bin")]), "ok", files=ok_files)
    cases = [
        ("parent", [("location", "../../etc/passwd")], {}, "location ../../etc/passwd"),
        ("absolute", [("location", "/etc/passwd")], {}, "absolute location /etc/passwd"),
        ("sibling", [("location", "../sibling.bin")], {}, "location ../sibling.bin"),
        ("dotdot_inside", [("location", "sub/../../w.bin")], {"sub/x": b""},
         "location sub/../../w.bin"),
        ("missing", [("location", "nope.bin")], {}, "a missing file"),
        ("empty_location", [("location", "")], {}, "an empty location"),
        ("dot_location", [("location", ".")], {}, "location . (a folder)"),
        ("dir_location", [("location", "sub")], {"sub/x": b""}, "location is a folder"),
        ("no_location", [("offset", "0")], ok_files, "no location key"),
        ("offset_past_end", [("location", "w.bin"), ("offset", "64")], ok_files,
         "offset past the end of the file"),
        ("length_past_end", [("location", "w.bin"), ("offset", "8"), ("length", "16")],
         ok_files, "offset+length past the end of the file"),
        ("length_overflow", [("location", "w.bin"), ("offset", str(2**63)),
                             ("length", str(2**63))], ok_files, "offset+length wraps 2^64"),
        ("offset_negative", [("location", "w.bin"), ("offset", "-4")], ok_files,
         "negative offset"),
        ("offset_text", [("location", "w.bin"), ("offset", "abc")], ok_files,
         "non-numeric offset"),
        ("length_float", [("location", "w.bin"), ("length", "1e3")], ok_files,
         "length written as 1e3"),
        ("offset_huge_digits", [("location", "w.bin"), ("offset", "9" * 40)], ok_files,
         "offset of 40 digits"),
        ("length_mismatch", [("location", "w.bin"), ("length", "8")], ok_files,
         "length 8 for 16 bytes of data"),
        ("short_file", [("location", "w.bin")], {"w.bin": weights[:6]},
         "file shorter than the tensor"),
        ("nul_in_location", [("location", "w.bin\0../../etc/passwd")], ok_files,
         "a NUL byte inside the location"),
    ]
    for tag, entries, files, desc in cases:
        c.add("ext_" + tag, "external data: " + desc, ext_model(entries), "load", files=files)
    c.add("ext_symlink_escape", "external data: w.bin is a symlink to /etc/passwd",
          ext_model([("location", "w.bin")]), "load", symlinks={"w.bin": "/etc/passwd"})
    c.add("ext_symlink_dir_escape", "external data: d/w.bin where d links to /etc",
          ext_model([("location", "d/passwd")]), "load", symlinks={"d": "/etc"})
    c.add("ext_default_location_with_entries",
          "external_data entries but data_location DEFAULT and no data",
          ext_model([("location", "w.bin")], location=0), "load", files=ok_files)

    def string_t(t):
        t.data_type = TensorProto.STRING

    c.add("ext_string_tensor", "external data for a string tensor",
          ext_model([("location", "w.bin")], extra=string_t), "load", files=ok_files)

    def raw_too(t):
        t.raw_data = weights

    c.add("ext_and_raw_data", "external data and raw_data both set",
          ext_model([("location", "w.bin")], extra=raw_too), "nocrash", files=ok_files)


def subgraphs(c):
    x = vi("x", shape=[2])
    cond = vi("cond", TensorProto.BOOL, [])
    ins = [("x", np.ones(2, np.float32)), ("cond", np.array(True))]

    def if_model(then_g, else_g, outs=("y",), extra_nodes=(), attrs=None):
        nd = node("If", ["cond"], list(outs))
        if attrs is None:
            nd.attribute.extend([helper.make_attribute("then_branch", then_g),
                                 helper.make_attribute("else_branch", else_g)])
        else:
            nd.attribute.extend(attrs)
        return simple([nd] + list(extra_nodes), [x, cond], [vi(o, shape=[2]) for o in outs])

    good_else = graph([node("Neg", ["x"], ["e"])], [], [vi("e", shape=[2])], name="else")
    good_then = graph([node("Relu", ["x"], ["t"])], [], [vi("t", shape=[2])], name="then")
    c.add("valid_if", "valid: an If reading an outer value", if_model(good_then, good_else),
          "ok", inputs=ins)
    cases = [
        ("undef_name", graph([node("Relu", ["nope"], ["t"])], [], [vi("t", shape=[2])]),
         good_else, ("y",), "then branch reads an undefined name"),
        ("undef_output", graph([node("Relu", ["x"], ["t"])], [], [vi("zz", shape=[2])]),
         good_else, ("y",), "then branch output undefined"),
        ("output_count", graph([node("Relu", ["x"], ["t"])], [],
                               [vi("t", shape=[2]), vi("t2", shape=[2])]),
         good_else, ("y",), "then branch has 2 outputs, If has 1"),
        ("branch_inputs", graph([node("Relu", ["a"], ["t"])], [vi("a", shape=[2])],
                                [vi("t", shape=[2])]),
         good_else, ("y",), "then branch declares a graph input"),
        ("shadow_outer", graph([node("Relu", ["x"], ["x"])], [], [vi("x", shape=[2])]),
         good_else, ("y",), "then branch redefines the outer value x"),
        ("no_outputs", graph([node("Relu", ["x"], ["t"])], [], []), good_else, ("y",),
         "then branch has no outputs"),
    ]
    for tag, tg, eg, outs, desc in cases:
        # A branch's signature is checked against its If node: at load or when run.
        expect = "check" if tag in ("branch_inputs", "no_outputs", "output_count") else "load"
        c.add("sub_" + tag, desc, if_model(tg, eg, outs), expect, inputs=ins)
    c.add("sub_reads_later_value", "then branch reads a value defined after the If",
          if_model(graph([node("Relu", ["late"], ["t"])], [], [vi("t", shape=[2])]), good_else,
                   extra_nodes=[node("Neg", ["x"], ["late"])]), "nocrash", inputs=ins)
    inner_only = simple([node("If", ["cond"], ["y0"], then_branch=good_then,
                              else_branch=good_else), node("Add", ["y0", "t"], ["y"])],
                        [x, cond], [vi("y", shape=[2])])
    c.add("sub_outer_reads_inner", "the outer graph reads a value defined only in a branch",
          inner_only, "load", inputs=ins)
    c.add("sub_missing_else", "If without else_branch",
          if_model(None, None, attrs=[helper.make_attribute("then_branch", good_then)]), "load",
          inputs=ins)
    c.add("sub_branch_as_tensor", "If then_branch given as a tensor",
          if_model(None, None, attrs=[
              raw_attr("then_branch", AttributeProto.TENSOR, t=const("t", np.ones(2))),
              helper.make_attribute("else_branch", good_else)]), "check", inputs=ins)
    c.add("sub_branch_as_int", "If then_branch given as an int",
          if_model(None, None, attrs=[raw_attr("then_branch", AttributeProto.INT, i=1),
                                      helper.make_attribute("else_branch", good_else)]),
          "check", inputs=ins)
    c.add("sub_branch_type_graph_no_g", "then_branch with type GRAPH and no graph",
          if_model(None, None, attrs=[raw_attr("then_branch", AttributeProto.GRAPH),
                                      helper.make_attribute("else_branch", good_else)]),
          "load", inputs=ins)
    c.add("sub_cond_float", "If condition of type float",
          simple([node("If", ["x"], ["y"], then_branch=good_then, else_branch=good_else)],
                 [x], [vi("y", shape=[2])]), "check")
    c.add("sub_cond_two_elements", "If condition with 2 elements (from the input data)",
          simple([node("If", ["c2"], ["y"], then_branch=good_then, else_branch=good_else)],
                 [x, vi("c2", TensorProto.BOOL, [2])], [vi("y", shape=[2])]), "check",
          inputs=[("x", np.ones(2, np.float32)), ("c2", np.array([True, False]))])
    body = graph([node("Identity", ["c_in"], ["c_out"])],
                 [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, [])],
                 [vi("c_out", TensorProto.BOOL, []), vi("extra", shape=[2])], name="body")
    c.add("sub_loop_body_signature", "Loop body with 2 inputs for 1 loop-carried value",
          simple([node("Loop", ["m", "cond", "x"], ["y"], body=body)], [x, cond],
                 [vi("y", shape=[2])], [const("m", np.array(3, np.int64))]), "load", inputs=ins)
    body = graph([node("Identity", ["c_in"], ["c_out"]), node("Relu", ["v"], ["v2"])],
                 [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
                  vi("v", shape=[2])],
                 [vi("c_out", TensorProto.BOOL, []), vi("v2", shape=[2])], name="body")
    c.add("sub_loop_m_float", "Loop trip count of type float",
          simple([node("Loop", ["m", "cond", "x"], ["y"], body=body)], [x, cond],
                 [vi("y", shape=[2])], [const("m", np.array(3.0, np.float32))]), "check",
          inputs=ins)
    c.add("valid_loop", "valid: a Loop of 3 Relu steps",
          simple([node("Loop", ["m", "cond", "x"], ["y"], body=body)], [x, cond],
                 [vi("y", shape=[2])], [const("m", np.array(3, np.int64))]), "ok", inputs=ins)


def functions(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    rec = helper.make_function("local", "F", ["a"], ["b"],
                               [node("F", ["a"], ["b"], domain="local")],
                               [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    m = model(graph([node("F", ["x"], ["y"], domain="local")], [x], [y]),
              extra_opsets=[helper.make_opsetid("local", 1)])
    m.functions.append(rec)
    c.add("func_recursive", "a model-local function that calls itself", m)
    mut_f = helper.make_function("local", "F", ["a"], ["b"],
                                 [node("G", ["a"], ["b"], domain="local")],
                                 [helper.make_opsetid("local", 1)])
    mut_g = helper.make_function("local", "G", ["a"], ["b"],
                                 [node("F", ["a"], ["b"], domain="local")],
                                 [helper.make_opsetid("local", 1)])
    m = model(graph([node("F", ["x"], ["y"], domain="local")], [x], [y]),
              extra_opsets=[helper.make_opsetid("local", 1)])
    m.functions.extend([mut_f, mut_g])
    c.add("func_mutual_recursion", "two model-local functions calling each other", m)
    undef = helper.make_function("local", "F", ["a"], ["b"],
                                 [node("Add", ["a", "nope"], ["b"])],
                                 [helper.make_opsetid("", 17)])
    m = model(graph([node("F", ["x"], ["y"], domain="local")], [x], [y]),
              extra_opsets=[helper.make_opsetid("local", 1)])
    m.functions.append(undef)
    c.add("func_undefined_name", "a function body reading an undefined name", m)
    c.add("func_ref_attr_in_graph", "an attribute with ref_attr_name in the main graph",
          simple([with_ref(node("Softmax", ["x"], ["y"]))], [x], [y]), "check")


def with_ref(n):
    a = AttributeProto()
    a.name, a.ref_attr_name, a.type = "axis", "ax", AttributeProto.INT
    n.attribute.append(a)
    return n


def generate(c):
    names(c)
    cycles(c)
    graph_parts(c)
    opsets(c)
    dtypes(c)
    shapes(c)
    initializer_data(c)
    external(c)
    subgraphs(c)
    functions(c)
