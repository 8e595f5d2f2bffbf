"""Cases broken at the operator level: unknown ops, wrong arity, attributes of the
wrong type or with impossible values, shapes and types that do not fit the op,
and data that only fails at run time."""

import numpy as np
from onnx import AttributeProto as A
from onnx import TensorProto, helper

from common import const, node, one_op, raw_attr, simple, vi, with_attrs

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32


def unknown_ops(c):
    x, y = vi("x", shape=[2]), vi("y", shape=[2])
    for tag, op, domain in (("name", "FooBar", None), ("empty", "", None),
                            ("trailing_space", "Relu ", None), ("lowercase", "relu", None),
                            ("domain", "Relu", "com.example"),
                            ("ml_domain", "Normalizer", "ai.onnx.ml"),  # valid, unsupported
                            ("utf8", "R\xe9lu", None)):
        extra = [helper.make_opsetid(domain, 1)] if domain else []
        m = simple([node(op, ["x"], ["y"], domain=domain)], [x], [y])
        m.opset_import.extend(extra)
        c.add("op_unknown_" + tag, "op %r in domain %r" % (op, domain or ""), m)
    m = simple([node("Relu", ["x"], ["y"])], [x], [y])
    m.graph.node[0].op_type = "Re\udcfflu".encode("utf-8", "surrogateescape").decode(
        "latin-1")
    c.add("op_unknown_latin1", "op type with non-ASCII bytes", m)
    m = simple([node("Relu", ["x"], ["y"], domain="undeclared.domain")], [x], [y])
    c.add("op_undeclared_domain", "a node in a domain with no opset_import", m)


def arity(c):
    cases = [
        ("add_1_input", "Add", [[2]], [2], 1),
        ("add_3_inputs", "Add", [[2], [2], [2]], [2], 1),
        ("relu_2_outputs", "Relu", [[2]], [2], 2),
        ("relu_0_outputs", "Relu", [[2]], [2], 0),
        ("conv_1_input", "Conv", [[1, 1, 4, 4]], [1, 1, 4, 4], 1),
        ("conv_0_inputs", "Conv", [], [1, 1, 4, 4], 1),
        ("gemm_1_input", "Gemm", [[2, 2]], [2, 2], 1),
        ("clip_4_inputs", "Clip", [[2], [], [], []], [2], 1),
        ("concat_0_inputs", "Concat", [], [2], 1),
        ("matmul_1_input", "MatMul", [[2, 2]], [2, 2], 1),
        ("where_2_inputs", "Where", [[2], [2]], [2], 1),
        ("gather_1_input", "Gather", [[2]], [2], 1),
        ("softmax_2_inputs", "Softmax", [[2], [2]], [2], 1),
        ("dropout_4_outputs", "Dropout", [[2]], [2], 4),
        ("batchnorm_3_inputs", "BatchNormalization", [[1, 2, 2], [2], [2]], [1, 2, 2], 1),
        ("reshape_1_input", "Reshape", [[2]], [2], 1),
        ("sum_0_inputs", "Sum", [], [2], 1),
        ("layernorm_1_input", "LayerNormalization", [[2, 2]], [2, 2], 1),
        ("split_0_outputs", "Split", [[2]], [2], 0),
        ("topk_1_input", "TopK", [[4]], None, 2),
        ("if_0_inputs", "If", [], [2], 1),
    ]
    for tag, op, ins, out, nout in cases:
        attrs = {"Concat": [helper.make_attribute("axis", 0)],
                 "Clip": []}.get(op, [])
        c.add("arity_" + tag, "%s with %d inputs and %d outputs" % (op, len(ins), nout),
              one_op(op, ins, out, attrs, n_out=nout), "check")


def conv_model(*attrs, wshape=(4, 3, 3, 3), xshape=(1, 3, 8, 8), out=None):
    w = const("w", np.ones(wshape, np.float32))
    nd = with_attrs(node("Conv", ["x", "w"], ["y"]), *attrs)
    return simple([nd], [vi("x", shape=list(xshape))], [vi("y", shape=out)], [w])


def attr_types(c):
    cases = [
        ("conv_strides_float", conv_model(raw_attr("strides", A.FLOAT, f=1.0)),
         "Conv strides as a float"),
        ("conv_strides_string", conv_model(raw_attr("strides", A.STRING, s=b"1,1")),
         "Conv strides as a string"),
        ("conv_strides_tensor", conv_model(raw_attr("strides", A.TENSOR,
                                                    t=const("s", np.array([1, 1])))),
         "Conv strides as a tensor"),
        ("conv_pads_floats", conv_model(raw_attr("pads", A.FLOATS, floats=[1, 1, 1, 1])),
         "Conv pads as floats"),
        ("conv_group_float", conv_model(raw_attr("group", A.FLOAT, f=1.0)),
         "Conv group as a float"),
        ("conv_group_ints", conv_model(raw_attr("group", A.INTS, ints=[1])),
         "Conv group as ints"),
        ("conv_auto_pad_int", conv_model(raw_attr("auto_pad", A.INT, i=1)),
         "Conv auto_pad as an int"),
        ("conv_strides_graph", conv_model(raw_attr("strides", A.GRAPH, g=helper.make_graph(
            [], "e", [], []))), "Conv strides as a graph"),
        ("conv_attr_type_99", conv_model(raw_attr("strides", 99, ints=[1, 1])),
         "Conv strides with attribute type 99"),
    ]
    x3 = [[2, 3, 4]]
    cases += [
        ("transpose_perm_string", one_op("Transpose", x3, None, [raw_attr(
            "perm", A.STRING, s=b"0,2,1")]), "Transpose perm as a string"),
        ("transpose_perm_floats", one_op("Transpose", x3, None, [raw_attr(
            "perm", A.FLOATS, floats=[0, 2, 1])]), "Transpose perm as floats"),
        ("transpose_perm_strings", one_op("Transpose", x3, None, [raw_attr(
            "perm", A.STRINGS, strings=[b"0", b"2", b"1"])]), "Transpose perm as strings"),
        ("gemm_alpha_string", one_op("Gemm", [[2, 3], [3, 4]], [2, 4], [raw_attr(
            "alpha", A.STRING, s=b"1.0")]), "Gemm alpha as a string"),
        ("gemm_alpha_floats", one_op("Gemm", [[2, 3], [3, 4]], [2, 4], [raw_attr(
            "alpha", A.FLOATS, floats=[1.0, 2.0])]), "Gemm alpha as floats"),
        ("concat_axis_float", one_op("Concat", [[2], [2]], [4], [raw_attr(
            "axis", A.FLOAT, f=0.0)]), "Concat axis as a float"),
        ("concat_axis_string", one_op("Concat", [[2], [2]], [4], [raw_attr(
            "axis", A.STRING, s=b"0")]), "Concat axis as a string"),
        ("softmax_axis_strings", one_op("Softmax", [[2, 3]], [2, 3], [raw_attr(
            "axis", A.STRINGS, strings=[b"1"])]), "Softmax axis as strings"),
        ("cast_to_string", one_op("Cast", [[2]], [2], [raw_attr("to", A.STRING, s=b"float")]),
         "Cast to as a string"),
        ("cast_to_float", one_op("Cast", [[2]], [2], [raw_attr("to", A.FLOAT, f=1.0)]),
         "Cast to as a float"),
        ("maxpool_kernel_int", one_op("MaxPool", [[1, 1, 4, 4]], None, [raw_attr(
            "kernel_shape", A.INT, i=2)]), "MaxPool kernel_shape as one int"),
        ("maxpool_auto_pad_ints", one_op("MaxPool", [[1, 1, 4, 4]], None, [
            helper.make_attribute("kernel_shape", [2, 2]),
            raw_attr("auto_pad", A.INTS, ints=[0])]), "MaxPool auto_pad as ints"),
        ("leakyrelu_alpha_ints", one_op("LeakyRelu", [[2]], [2], [raw_attr(
            "alpha", A.INTS, ints=[1])]), "LeakyRelu alpha as ints"),
        ("flatten_axis_graph", one_op("Flatten", [[2, 3]], None, [raw_attr(
            "axis", A.GRAPH, g=helper.make_graph([], "e", [], []))]), "Flatten axis as a graph"),
        ("gather_axis_tensor", one_op("Gather", [[4], [1]], None, [raw_attr(
            "axis", A.TENSOR, t=const("a", np.array(0)))], in_dtypes=[F, I64],
            inits=[const("x1", np.array([1], np.int64))]), "Gather axis as a tensor"),
        ("constant_value_float", simple([with_attrs(node("Constant", [], ["y"]), raw_attr(
            "value", A.FLOAT, f=1.0))], [], [vi("y", shape=[])]), "Constant value as a float"),
        ("constant_value_int_as_ints", simple([with_attrs(node("Constant", [], ["y"]), raw_attr(
            "value_int", A.INTS, ints=[1, 2]))], [], [vi("y", I64, [])]),
         "Constant value_int as ints"),
        ("attr_empty_name", one_op("Softmax", [[2, 3]], [2, 3], [raw_attr("", A.INT, i=1)]),
         "an attribute with an empty name"),
        ("attr_unknown_name", one_op("Relu", [[2]], [2], [raw_attr("foo", A.INT, i=1)]),
         "Relu with an unknown attribute foo"),
        ("attr_duplicate", conv_model(helper.make_attribute("strides", [1, 1]),
                                      helper.make_attribute("strides", [2, 2])),
         "Conv strides given twice"),
    ]
    for tag, m, desc in cases:
        c.add("attr_" + tag, desc, m, "check")
    # Declared type and filled field disagree: readers differ (ONNX's checker rejects).
    for tag, m, desc in [
            ("int_type_float_field", one_op("Softmax", [[2, 3]], [2, 3], [raw_attr(
                "axis", A.INT, f=1.0)]), "Softmax axis of type INT holding only f"),
            ("undefined_type_int_field", one_op("Softmax", [[2, 3]], [2, 3], [raw_attr(
                "axis", A.UNDEFINED, i=1)]), "Softmax axis of type UNDEFINED holding i"),
            ("ints_type_int_field", conv_model(raw_attr("strides", A.INTS, i=1)),
             "Conv strides of type INTS holding only i")]:
        c.add("attr_" + tag, desc, m, "nocrash")


def attr_missing(c):
    x = [[2]]
    cases = [
        ("cast_no_to", one_op("Cast", x, [2]), "Cast without to"),
        ("maxpool_no_kernel", one_op("MaxPool", [[1, 1, 4, 4]], None), "MaxPool without "
         "kernel_shape"),
        ("constant_no_value", simple([node("Constant", [], ["y"])], [], [vi("y", shape=[])]),
         "Constant without a value"),
        ("constant_two_values", simple([node("Constant", [], ["y"], value_float=1.0,
                                             value_int=2)], [], [vi("y", shape=[])]),
         "Constant with value_float and value_int"),
        ("lrn_no_size", one_op("LRN", [[1, 2, 2, 2]], None), "LRN without size"),
        ("depth_to_space_no_blocksize", one_op("DepthToSpace", [[1, 4, 2, 2]], None),
         "DepthToSpace without blocksize"),
        ("loop_no_body", simple([node("Loop", ["m", ""], ["y"])], [], [vi("y", shape=[])],
                                [const("m", np.array(1, np.int64))]), "Loop without body"),
    ]
    for tag, m, desc in cases:
        c.add("attr_missing_" + tag, desc, m, "check")


TOPK = dict(in_dtypes=[F, I64], out_dtype=[F, I64], n_out=2)  # TopK(x, k) -> values, indices

# Values that look wrong but have a defined (if degenerate) result: an empty output, inf ...
VALUE_NOCRASH = {"cast_to_string", "conv_zero_weight_dim", "lppool_p_0", "maxpool_kernel_too_big",
                 "reducemean_axes_dup", "range_span_overflow"}


def attr_values(c):
    def cm(*attrs, **kw):
        return conv_model(*[helper.make_attribute(k, v) for k, v in attrs], **kw)

    cases = [
        ("conv_stride_0", cm(("strides", [0, 0])), "Conv strides 0 (a division by zero)"),
        ("conv_stride_neg", cm(("strides", [-1, 1])), "Conv strides -1"),
        ("conv_dilation_0", cm(("dilations", [0, 1])), "Conv dilations 0"),
        ("conv_dilation_neg", cm(("dilations", [-3, 1])), "Conv dilations -3"),
        ("conv_dilation_huge", cm(("dilations", [2**62, 1])), "Conv dilations 2^62"),
        ("conv_group_0", cm(("group", 0)), "Conv group 0 (a division by zero)"),
        ("conv_group_neg", cm(("group", -1)), "Conv group -1"),
        ("conv_group_not_dividing", cm(("group", 2)), "Conv group 2 with 3 input channels"),
        ("conv_pads_neg_huge", cm(("pads", [-100, -100, -100, -100])), "Conv pads -100"),
        ("conv_pads_huge", cm(("pads", [2**62, 0, 2**62, 0])), "Conv pads 2^62"),
        ("conv_pads_wrong_len", cm(("pads", [1, 1, 1])), "Conv pads of length 3 for 2-D"),
        ("conv_strides_wrong_len", cm(("strides", [1, 1, 1])), "Conv strides of length 3"),
        ("conv_kernel_mismatch", cm(("kernel_shape", [5, 5])), "Conv kernel_shape [5,5] "
         "for a 3x3 weight"),
        ("conv_auto_pad_bogus", cm(("auto_pad", "BOGUS")), "Conv auto_pad BOGUS"),
        ("conv_kernel_bigger_than_input", conv_model(wshape=(4, 3, 9, 9)),
         "Conv 9x9 kernel on an 8x8 input without padding"),
        ("conv_channel_mismatch", conv_model(wshape=(4, 5, 3, 3)), "Conv weight for 5 input "
         "channels on 3"),
        ("conv_weight_rank", conv_model(wshape=(4, 3, 3)), "Conv weight of rank 3 on 4-D "
         "input"),
        ("conv_input_rank_1", conv_model(xshape=(8,), wshape=(4, 3, 3, 3)), "Conv on a 1-D "
         "input"),
        ("conv_zero_weight_dim", conv_model(wshape=(4, 3, 0, 3)), "Conv with a 0x3 kernel"),
    ]
    p = [[1, 1, 4, 4]]

    def pool(op, **attrs):
        return one_op(op, p, None, [helper.make_attribute(k, v) for k, v in attrs.items()])

    cases += [
        ("maxpool_kernel_0", pool("MaxPool", kernel_shape=[0, 0]), "MaxPool kernel 0"),
        ("maxpool_kernel_neg", pool("MaxPool", kernel_shape=[-2, 2]), "MaxPool kernel -2"),
        ("maxpool_kernel_too_big", pool("MaxPool", kernel_shape=[5, 5]), "MaxPool 5x5 on 4x4"),
        ("maxpool_stride_0", pool("MaxPool", kernel_shape=[2, 2], strides=[0, 0]),
         "MaxPool strides 0"),
        ("maxpool_pads_ge_kernel", pool("MaxPool", kernel_shape=[2, 2], pads=[3, 3, 3, 3]),
         "MaxPool pads 3 for kernel 2"),
        ("maxpool_kernel_rank", pool("MaxPool", kernel_shape=[2, 2, 2]),
         "MaxPool 3-D kernel on 2-D input"),
        ("avgpool_pads_neg", pool("AveragePool", kernel_shape=[2, 2], pads=[-1, -1, -1, -1]),
         "AveragePool pads -1"),
        ("avgpool_dilation_0", pool("AveragePool", kernel_shape=[2, 2], dilations=[0, 0]),
         "AveragePool dilations 0", ),
        ("lppool_p_0", pool("LpPool", kernel_shape=[2, 2], p=0), "LpPool p 0"),
        ("lrn_size_0", one_op("LRN", p, None, [helper.make_attribute("size", 0)]), "LRN size 0"),
        ("lrn_size_neg", one_op("LRN", p, None, [helper.make_attribute("size", -3)]),
         "LRN size -3"),
    ]
    x3 = [[2, 3, 4]]

    def op3(op, in_shapes=x3, **attrs):
        return one_op(op, in_shapes, None, [helper.make_attribute(k, v)
                                            for k, v in attrs.items()])

    cases += [
        ("transpose_perm_dup", op3("Transpose", perm=[0, 0, 1]), "Transpose perm [0,0,1]"),
        ("transpose_perm_range", op3("Transpose", perm=[0, 1, 9]), "Transpose perm [0,1,9]"),
        ("transpose_perm_neg", op3("Transpose", perm=[-1, 0, 1]), "Transpose perm [-1,0,1]"),
        ("transpose_perm_short", op3("Transpose", perm=[1, 0]), "Transpose perm too short"),
        ("transpose_perm_huge", op3("Transpose", perm=[0, 1, 2**62]), "Transpose perm 2^62"),
        ("concat_axis_range", op3("Concat", [[2, 3], [2, 3]], axis=10), "Concat axis 10"),
        ("concat_axis_neg_range", op3("Concat", [[2, 3], [2, 3]], axis=-3), "Concat axis -3"),
        ("concat_rank_mismatch", op3("Concat", [[2, 3], [2, 3, 1]], axis=0),
         "Concat of rank 2 and 3"),
        ("concat_dim_mismatch", op3("Concat", [[2, 3], [2, 4]], axis=0),
         "Concat with mismatched non-axis dims"),
        ("softmax_axis_range", op3("Softmax", axis=-10), "Softmax axis -10"),
        ("flatten_axis_range", op3("Flatten", axis=7), "Flatten axis 7"),
        ("argmax_axis_range", op3("ArgMax", axis=3), "ArgMax axis 3"),
        ("reducemean_axes_range", op3("ReduceMean", axes=[5]), "ReduceMean axes [5]"),
        ("reducemean_axes_dup", op3("ReduceMean", axes=[1, 1]), "ReduceMean axes [1,1]"),
        ("cumsum_axis_range", one_op("CumSum", [[2, 3], []], None, in_dtypes=[F, I64],
                                     inits=[const("x1", np.array(5, np.int64))]),
         "CumSum axis 5"),
        ("gather_axis_range", one_op("Gather", [[4], [1]], None,
                                     [helper.make_attribute("axis", 3)], in_dtypes=[F, I64],
                                     inits=[const("x1", np.array([1], np.int64))]),
         "Gather axis 3 on a 1-D tensor"),
        ("depth_to_space_0", op3("DepthToSpace", [[1, 4, 2, 2]], blocksize=0),
         "DepthToSpace blocksize 0"),
        ("depth_to_space_3", op3("DepthToSpace", [[1, 4, 2, 2]], blocksize=3),
         "DepthToSpace blocksize 3 with 4 channels"),
        ("space_to_depth_0", op3("SpaceToDepth", [[1, 1, 4, 4]], blocksize=0),
         "SpaceToDepth blocksize 0"),
        ("space_to_depth_3", op3("SpaceToDepth", [[1, 1, 4, 4]], blocksize=3),
         "SpaceToDepth blocksize 3 on 4x4"),
        ("split_num_outputs_0", one_op("Split", [[4]], None,
                                       [helper.make_attribute("num_outputs", 0)], opset=18),
         "Split num_outputs 0"),
        ("split_too_many", one_op("Split", [[2]], None, [helper.make_attribute(
            "num_outputs", 5)], opset=18, n_out=5), "Split of 2 elements into 5"),
        ("onehot_axis_range", one_op("OneHot", [[2], [], [2]], None,
                                     [helper.make_attribute("axis", 5)],
                                     in_dtypes=[I64, I64, F],
                                     inits=[const("x1", np.array(3, np.int64)),
                                            const("x2", np.array([0, 1], np.float32))]),
         "OneHot axis 5"),
        ("einsum_bad_eq", op3("Einsum", [[2, 3]], equation="ij,jk->ik"),
         "Einsum equation with 2 operands for 1 input"),
        ("einsum_garbage", op3("Einsum", [[2, 3]], equation="i$j->"), "Einsum equation i$j->"),
        ("einsum_rank", op3("Einsum", [[2, 3]], equation="ijk->i"),
         "Einsum ijk on a 2-D input"),
        ("einsum_empty", op3("Einsum", [[2, 3]], equation=""), "Einsum with an empty equation"),
        ("einsum_unbalanced_ellipsis", op3("Einsum", [[2, 3]], equation="..i..->i"),
         "Einsum with a broken ellipsis"),
        ("einsum_output_letter", op3("Einsum", [[2, 3]], equation="ij->ijk"),
         "Einsum output letter not in any input"),
        ("resize_mode_bogus", one_op("Resize", [[1, 1, 2, 2], [0], [4]], None,
                                     [helper.make_attribute("mode", "bogus")],
                                     inits=[const("x1", np.zeros(0, np.float32)),
                                            const("x2", np.array([1, 1, 2, 2], np.float32))]),
         "Resize mode bogus"),
        ("pad_mode_bogus", one_op("Pad", [[2, 2], [4]], None, [helper.make_attribute(
            "mode", "bogus")], in_dtypes=[F, I64],
            inits=[const("x1", np.array([1, 1, 1, 1], np.int64))]), "Pad mode bogus"),
        ("pad_pads_wrong_len", one_op("Pad", [[2, 2], [3]], None, in_dtypes=[F, I64],
                                      inits=[const("x1", np.array([1, 1, 1], np.int64))]),
         "Pad pads of length 3 for a 2-D input"),
        ("pad_pads_huge", one_op("Pad", [[2, 2], [4]], None, in_dtypes=[F, I64],
                                 inits=[const("x1", np.array([2**62, 0, 2**62, 0], np.int64))]),
         "Pad pads 2^62"),
        ("pad_pads_too_negative", one_op("Pad", [[2, 2], [4]], None, in_dtypes=[F, I64],
                                         inits=[const("x1", np.array([-3, 0, 0, 0], np.int64))]),
         "Pad pads -3 on a dim of 2"),
        ("gemm_3d", one_op("Gemm", [[2, 3, 4], [4, 2]], None), "Gemm on a 3-D input"),
        ("gemm_k_mismatch", one_op("Gemm", [[2, 3], [4, 2]], None), "Gemm 2x3 by 4x2"),
        ("gemm_bias_mismatch", one_op("Gemm", [[2, 3], [3, 2], [5]], None),
         "Gemm bias of 5 for 2x2"),
        ("matmul_mismatch", one_op("MatMul", [[1, 3], [4, 5]], None), "MatMul 1x3 by 4x5"),
        ("matmul_batch_mismatch", one_op("MatMul", [[2, 1, 3], [3, 3, 5]], None),
         "MatMul batch dims 2 and 3"),
        ("matmul_scalar", one_op("MatMul", [[], [3]], None), "MatMul of a scalar"),
        ("add_broadcast_mismatch", one_op("Add", [[3], [4]], None), "Add [3] + [4]"),
        ("where_broadcast_mismatch", one_op("Where", [[2], [3], [4]], None,
                                            in_dtypes=[TensorProto.BOOL, F, F]),
         "Where [2],[3],[4]"),
        ("add_dtype_mismatch", one_op("Add", [[2], [2]], None, in_dtypes=[F, I64]),
         "Add of float and int64"),
        ("sqrt_int64", one_op("Sqrt", [[2]], None, dtype=I64), "Sqrt of int64"),
        ("matmul_bool", one_op("MatMul", [[2, 2], [2, 2]], None, dtype=TensorProto.BOOL),
         "MatMul of bool"),
        ("relu_string", one_op("Relu", [[2]], None, dtype=TensorProto.STRING),
         "Relu of strings"),
        ("where_cond_float", one_op("Where", [[2], [2], [2]], None), "Where with float cond"),
        ("batchnorm_scale_len", one_op("BatchNormalization", [[1, 2, 2], [3], [2], [2], [2]],
                                       None), "BatchNormalization scale of 3 for 2 channels"),
        ("layernorm_axis_range", one_op("LayerNormalization", [[2, 3], [3]], None,
                                        [helper.make_attribute("axis", 4)]),
         "LayerNormalization axis 4"),
        ("reshape_count_mismatch", one_op("Reshape", [[2, 3], [2]], None, in_dtypes=[F, I64],
                                          inits=[const("x1", np.array([4, 2], np.int64))]),
         "Reshape 6 elements to [4,2]"),
        ("reshape_two_minus_one", one_op("Reshape", [[2, 3], [2]], None, in_dtypes=[F, I64],
                                         inits=[const("x1", np.array([-1, -1], np.int64))]),
         "Reshape shape [-1,-1]"),
        ("reshape_minus_two", one_op("Reshape", [[2, 3], [2]], None, in_dtypes=[F, I64],
                                     inits=[const("x1", np.array([-2, 3], np.int64))]),
         "Reshape shape [-2,3]"),
        ("reshape_zero_past_rank", one_op("Reshape", [[6], [3]], None, in_dtypes=[F, I64],
                                          inits=[const("x1", np.array([1, 0, 0], np.int64))]),
         "Reshape with 0 copying a dim past the input rank"),
        ("reshape_overflow", one_op("Reshape", [[2, 3, 1], [3]], None, in_dtypes=[F, I64],
                                    inits=[const("x1", np.array([2**32, 2**32, 0], np.int64))]),
         "Reshape [2,3,1] to [2^32,2^32,0] (0 copies dim 2; the count overflows)"),
        ("reshape_minus_one_zero", one_op("Reshape", [[0, 3], [2]], None, in_dtypes=[F, I64],
                                          inits=[const("x1", np.array([-1, 0], np.int64))],
                                          attrs=[helper.make_attribute("allowzero", 1)]),
         "Reshape of an empty tensor to [-1,0] with allowzero (-1 is ambiguous)"),
        ("slice_step_0", one_op("Slice", [[4], [1], [1], [1], [1]], None,
                                in_dtypes=[F, I64, I64, I64, I64],
                                inits=[const("x1", np.array([0], np.int64)),
                                       const("x2", np.array([4], np.int64)),
                                       const("x3", np.array([0], np.int64)),
                                       const("x4", np.array([0], np.int64))]), "Slice step 0"),
        ("slice_axes_dup", one_op("Slice", [[4, 4], [2], [2], [2]], None,
                                  in_dtypes=[F, I64, I64, I64],
                                  inits=[const("x1", np.array([0, 0], np.int64)),
                                         const("x2", np.array([2, 2], np.int64)),
                                         const("x3", np.array([1, 1], np.int64))]),
         "Slice axes [1,1]"),
        ("squeeze_non_one", one_op("Squeeze", [[2, 3], [1]], None, in_dtypes=[F, I64],
                                   inits=[const("x1", np.array([0], np.int64))]),
         "Squeeze of a dim of size 2"),
        ("unsqueeze_axis_range", one_op("Unsqueeze", [[2, 3], [1]], None, in_dtypes=[F, I64],
                                        inits=[const("x1", np.array([9], np.int64))]),
         "Unsqueeze axes [9]"),
        ("tile_repeats_len", one_op("Tile", [[2, 3], [3]], None, in_dtypes=[F, I64],
                                    inits=[const("x1", np.array([1, 1, 1], np.int64))]),
         "Tile repeats of length 3 for rank 2"),
        ("expand_incompatible", one_op("Expand", [[3], [1]], None, in_dtypes=[F, I64],
                                       inits=[const("x1", np.array([4], np.int64))]),
         "Expand [3] to [4]"),
        ("constant_of_shape_neg", one_op("ConstantOfShape", [[2]], None, dtype=I64,
                                         out_dtype=F,
                                         inits=[const("x0", np.array([-1, 2], np.int64))]),
         "ConstantOfShape [-1,2]"),
        ("constant_of_shape_overflow", one_op("ConstantOfShape", [[3]], None, dtype=I64,
                                              out_dtype=F, inits=[const("x0", np.array(
                                                  [2**32, 2**32, 2**32], np.int64))]),
         "ConstantOfShape [2^32,2^32,2^32] (count overflows int64)"),
        ("constant_of_shape_2p62", one_op("ConstantOfShape", [[2]], None, dtype=I64,
                                          out_dtype=F, inits=[const("x0", np.array(
                                              [2**31, 2**31], np.int64))]),
         "ConstantOfShape [2^31,2^31] (2^64 bytes wraps to 0)"),
        ("range_delta_0", one_op("Range", [[], [], []], None, inits=[
            const("x0", np.array(0, np.float32)), const("x1", np.array(10, np.float32)),
            const("x2", np.array(0, np.float32))]), "Range with delta 0"),
        ("range_huge", one_op("Range", [[], [], []], None, dtype=I64, inits=[
            const("x0", np.array(-2**62, np.int64)), const("x1", np.array(2**62, np.int64)),
            const("x2", np.array(1, np.int64))]), "Range of 2^63 elements"),
        ("range_span_overflow", one_op("Range", [[], [], []], None, dtype=I64, inits=[
            const("x0", np.array(-2**63, np.int64)), const("x1", np.array(2**63 - 1, np.int64)),
            const("x2", np.array(2**62, np.int64))]),
         "Range from INT64_MIN to INT64_MAX (limit-start overflows)"),
        ("topk_k_too_big", one_op("TopK", [[4], [1]], None, **TOPK,
                                  inits=[const("x1", np.array([9], np.int64))]),
         "TopK k 9 on 4 elements"),
        ("topk_k_neg", one_op("TopK", [[4], [1]], None, **TOPK,
                              inits=[const("x1", np.array([-1], np.int64))]), "TopK k -1"),
        ("gather_const_index_range", one_op("Gather", [[4], [1]], None, in_dtypes=[F, I64],
                                            inits=[const("x1", np.array([7], np.int64))]),
         "Gather constant index 7 on 4 elements"),
        ("onehot_depth_neg", one_op("OneHot", [[2], [], [2]], None, in_dtypes=[I64, I64, F],
                                    inits=[const("x1", np.array(-3, np.int64)),
                                           const("x2", np.array([0, 1], np.float32))]),
         "OneHot depth -3"),
        ("onehot_depth_huge", one_op("OneHot", [[2], [], [2]], None, in_dtypes=[I64, I64, F],
                                     inits=[const("x1", np.array(2**62, np.int64)),
                                            const("x2", np.array([0, 1], np.float32))]),
         "OneHot depth 2^62"),
        ("resize_scales_huge", one_op("Resize", [[1, 1, 2, 2], [0], [4]], None,
                                      inits=[const("x1", np.zeros(0, np.float32)),
                                             const("x2", np.array([1, 1, 1e12, 1e12],
                                                                  np.float32))]),
         "Resize scales 1e12"),
        ("resize_scales_nan", one_op("Resize", [[1, 1, 2, 2], [0], [4]], None,
                                     inits=[const("x1", np.zeros(0, np.float32)),
                                            const("x2", np.array([1, 1, np.nan, 2],
                                                                 np.float32))]),
         "Resize scales NaN"),
        ("resize_scales_len", one_op("Resize", [[1, 1, 2, 2], [0], [3]], None,
                                     inits=[const("x1", np.zeros(0, np.float32)),
                                            const("x2", np.array([1, 1, 2], np.float32))]),
         "Resize scales of length 3 for rank 4"),
        ("tile_huge", one_op("Tile", [[2], [1]], None, in_dtypes=[F, I64],
                             inits=[const("x1", np.array([2**62], np.int64))]),
         "Tile repeats 2^62 (count overflows)"),
        ("expand_huge", one_op("Expand", [[1], [3]], None, in_dtypes=[F, I64],
                               inits=[const("x1", np.array([2**22, 2**22, 2**22], np.int64))]),
         "Expand to [2^22,2^22,2^22] (2^66 elements)"),
        ("cast_to_string", one_op("Cast", [[2]], None, out_dtype=TensorProto.STRING,
                                  attrs=[helper.make_attribute("to", TensorProto.STRING)]),
         "Cast to string (valid ONNX; unsupported by many engines)"),
    ]
    for tag, m, desc in cases:
        c.add("value_" + tag, desc, m, "nocrash" if tag in VALUE_NOCRASH else "check")


def run_time(c):
    """Valid models whose input data is out of range: found only when run."""
    def gather(op, data_shape, idx, axis=0, **kw):
        m = one_op(op, [data_shape, list(np.shape(idx))], None,
                   [helper.make_attribute("axis", axis)] if axis is not None else [],
                   in_dtypes=[F, I64])
        return m, [("x0", np.ones(data_shape, np.float32)), ("x1", np.array(idx, np.int64))]

    cases = [
        ("gather_index_range", gather("Gather", [4], [10]), "Gather index 10 on 4 elements"),
        ("gather_index_neg", gather("Gather", [4], [-100]), "Gather index -100"),
        ("gather_index_min", gather("Gather", [4], [-2**63]), "Gather index INT64_MIN"),
        ("gather_elements_range", gather("GatherElements", [2, 2], [[0, 5], [1, 0]]),
         "GatherElements index 5"),
        ("gather_nd_range", gather("GatherND", [2, 2], [[0, 9]], axis=None),
         "GatherND index 9"),
    ]
    m = one_op("ScatterElements", [[4], [1], [1]], None, in_dtypes=[F, I64, F])
    cases.append(("scatter_elements_range", (m, [("x0", np.ones(4, np.float32)),
                                                  ("x1", np.array([8], np.int64)),
                                                  ("x2", np.ones(1, np.float32))]),
                  "ScatterElements index 8"))
    m = one_op("ScatterND", [[4], [1, 1], [1]], None, in_dtypes=[F, I64, F])
    cases.append(("scatter_nd_range", (m, [("x0", np.ones(4, np.float32)),
                                           ("x1", np.array([[-9]], np.int64)),
                                           ("x2", np.ones(1, np.float32))]),
                  "ScatterND index -9"))

    def shape_op(op, x_shape, shape_val, dtype=F):
        m = one_op(op, [x_shape, [len(shape_val)]], None, in_dtypes=[dtype, I64])
        return m, [("x0", np.ones(x_shape, helper.tensor_dtype_to_np_dtype(dtype))),
                   ("x1", np.array(shape_val, np.int64))]

    cases += [
        ("reshape_mismatch", shape_op("Reshape", [2, 3], [4, 2]), "Reshape 6 to [4,2] (input)"),
        ("reshape_overflow", shape_op("Reshape", [2, 3], [2**32, 2**32, 2**32]),
         "Reshape to [2^32]^3 (input)"),
        ("expand_mismatch", shape_op("Expand", [3], [4]), "Expand [3] to [4] (input)"),
        ("expand_huge", shape_op("Expand", [1], [2**21, 2**21, 2**21]),
         "Expand to [2^21]^3 = 2^63 elements (input)"),
        ("tile_neg", shape_op("Tile", [2], [-1]), "Tile repeats -1 (input)"),
        ("tile_huge", shape_op("Tile", [2], [2**62]), "Tile repeats 2^62 (input)"),
        ("topk_k_big", (one_op("TopK", [[4], [1]], None, **TOPK),
                        [("x0", np.ones(4, np.float32)), ("x1", np.array([5], np.int64))]),
         "TopK k 5 on 4 elements (input)"),
        ("unsqueeze_axis", shape_op("Unsqueeze", [2], [7]), "Unsqueeze axes [7] (input)"),
        ("squeeze_axis", shape_op("Squeeze", [2, 1], [0]), "Squeeze a dim of 2 (input)"),
        ("reducesum_axis", (one_op("ReduceSum", [[2, 2], [1]], None, in_dtypes=[F, I64]),
                            [("x0", np.ones((2, 2), np.float32)),
                             ("x1", np.array([4], np.int64))]), "ReduceSum axes [4] (input)"),
        ("pad_huge", shape_op("Pad", [2], [2**61, 2**61]), "Pad pads 2^61 (input)"),
        ("onehot_depth_neg", (one_op("OneHot", [[2], [], [2]], None, in_dtypes=[I64, I64, F]),
                              [("x0", np.array([0, 1], np.int64)), ("x1", np.array(-2, np.int64)),
                               ("x2", np.array([0, 1], np.float32))]), "OneHot depth -2 (input)"),
        ("split_sizes", (one_op("Split", [[4], [2]], None, in_dtypes=[F, I64], n_out=2),
                         [("x0", np.ones(4, np.float32)), ("x1", np.array([3, 3], np.int64))]),
         "Split sizes [3,3] of 4 elements (input)"),
    ]
    m = one_op("ConstantOfShape", [[2]], None, dtype=I64, out_dtype=F)
    cases += [
        ("constant_of_shape_neg", (m, [("x0", np.array([3, -1], np.int64))]),
         "ConstantOfShape [3,-1] (input)"),
        ("constant_of_shape_overflow", (m, [("x0", np.array([2**62, 4], np.int64))]),
         "ConstantOfShape [2^62,4] (input; bytes overflow)"),
        ("constant_of_shape_huge", (m, [("x0", np.array([2**20, 2**25], np.int64))]),
         "ConstantOfShape [2^20,2^25] (input; 128 TiB)"),
    ]
    rng = one_op("Range", [[], [], []], None)
    cases += [
        ("range_delta_0", (rng, [("x0", np.array(0, np.float32)), ("x1", np.array(1, np.float32)),
                                 ("x2", np.array(0, np.float32))]), "Range delta 0 (input)"),
        ("range_nan", (rng, [("x0", np.array(0, np.float32)),
                             ("x1", np.array(np.nan, np.float32)),
                             ("x2", np.array(1, np.float32))]), "Range limit NaN (input)"),
        ("range_inf", (rng, [("x0", np.array(0, np.float32)),
                             ("x1", np.array(np.inf, np.float32)),
                             ("x2", np.array(1, np.float32))]), "Range limit inf (input)"),
        ("range_huge", (rng, [("x0", np.array(0, np.float32)), ("x1", np.array(1e30, np.float32)),
                              ("x2", np.array(1, np.float32))]), "Range of 1e30 elements"),
    ]
    m = one_op("Resize", [[1, 1, 2, 2], [0], [0], [4]], None, in_dtypes=[F, F, F, I64],
               inits=[const("x1", np.zeros(0, np.float32)), const("x2", np.zeros(0, np.float32))])
    cases.append(("resize_sizes_huge", (m, [("x0", np.ones((1, 1, 2, 2), np.float32)),
                                            ("x3", np.array([1, 1, 2**31, 2**31], np.int64))]),
                  "Resize sizes [1,1,2^31,2^31] (input)"))
    for tag, (m, ins), desc in cases:
        c.add("run_" + tag, desc, m, "nocrash" if tag == "range_nan" else "run", inputs=ins)


def undefined_behaviour(c):
    """Integer and conversion corner cases that are UB in C; ONNX leaves some results
    undefined, so any exit status will do, but there must be no crash and no
    sanitizer report."""
    i32min, i64min = np.iinfo(np.int32).min, np.iinfo(np.int64).min

    def binop(op, a, b, **attrs):
        a, b = np.asarray(a), np.asarray(b)
        dt = helper.np_dtype_to_tensor_dtype(a.dtype)
        m = one_op(op, [list(a.shape), list(b.shape)], None,
                   [helper.make_attribute(k, v) for k, v in attrs.items()],
                   in_dtypes=[dt, helper.np_dtype_to_tensor_dtype(b.dtype)], out_dtype=dt)
        return m, [("x0", a), ("x1", b)]

    def unop(op, a, out=None, **attrs):
        a = np.asarray(a)
        dt = helper.np_dtype_to_tensor_dtype(a.dtype)
        m = one_op(op, [list(a.shape)], None, [helper.make_attribute(k, v)
                                              for k, v in attrs.items()], dtype=dt,
                   out_dtype=out)
        return m, [("x0", a)]

    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    cases = [
        ("div_int_zero", binop("Div", i32(1, 2), i32(0, 0)), "int32 Div by zero"),
        ("div_int_min", binop("Div", i32(i32min), i32(-1)), "int32 INT_MIN / -1"),
        ("div_int64_min", binop("Div", i64(i64min), i64(-1)), "int64 INT64_MIN / -1"),
        ("mod_int_zero", binop("Mod", i32(5), i32(0)), "int32 Mod by zero"),
        ("mod_fmod_int_zero", binop("Mod", i32(5), i32(0), fmod=1), "int32 fmod by zero"),
        ("mod_int_min", binop("Mod", i64(i64min), i64(-1)), "int64 INT64_MIN % -1"),
        ("add_overflow", binop("Add", i32(2**31 - 1), i32(1)), "int32 Add overflow"),
        ("sub_overflow", binop("Sub", i64(i64min), i64(1)), "int64 Sub overflow"),
        ("mul_overflow", binop("Mul", i64(2**62), i64(4)), "int64 Mul overflow"),
        ("pow_int_overflow", binop("Pow", i32(2), i32(100)), "int32 Pow 2^100"),
        ("pow_int_neg_exp", binop("Pow", i32(0), i32(-1)), "int32 Pow 0^-1"),
        ("matmul_int_overflow", binop("MatMul", np.full((1, 2), 2**31 - 1, np.int32),
                                      np.full((2, 1), 2**31 - 1, np.int32)),
         "int32 MatMul overflow"),
        ("bitshift_64", binop("BitShift", np.array([1], np.uint64), np.array([64], np.uint64),
                              direction="LEFT"), "uint64 shift by 64"),
        ("bitshift_200", binop("BitShift", np.array([1], np.uint8), np.array([200], np.uint8),
                               direction="RIGHT"), "uint8 shift by 200"),
        ("abs_int_min", unop("Abs", i32(i32min)), "Abs INT32_MIN"),
        ("neg_int64_min", unop("Neg", i64(i64min)), "Neg INT64_MIN"),
        ("sum_reduce_overflow", unop("ReduceSum", i32(2**31 - 1, 2**31 - 1), keepdims=0),
         "int32 ReduceSum overflow"),
        ("prod_reduce_overflow", unop("ReduceProd", i64(2**40, 2**40), keepdims=0),
         "int64 ReduceProd overflow"),
        ("cast_float_to_int32_big", unop("Cast", np.array([1e30, -1e30], np.float32), I32,
                                         to=I32), "Cast 1e30 to int32"),
        ("cast_nan_to_int64", unop("Cast", np.array([np.nan, np.inf], np.float32), I64, to=I64),
         "Cast NaN and inf to int64"),
        ("cast_neg_to_uint32", unop("Cast", np.array([-1.5, 5e9], np.float64),
                                    TensorProto.UINT32, to=TensorProto.UINT32),
         "Cast -1.5 and 5e9 to uint32"),
        ("cast_big_to_uint8", unop("Cast", np.array([300.0, -7.0], np.float32), TensorProto.UINT8,
                                   to=TensorProto.UINT8), "Cast 300 and -7 to uint8"),
        ("cast_int64_to_f16", unop("Cast", i64(2**62, -2**62), TensorProto.FLOAT16,
                                   to=TensorProto.FLOAT16), "Cast 2^62 to float16"),
        ("cast_big_to_f8", unop("Cast", np.array([1e10, np.nan], np.float32),
                                TensorProto.FLOAT8E4M3FN, to=TensorProto.FLOAT8E4M3FN),
         "Cast 1e10 and NaN to float8e4m3fn"),
        ("argmax_nan", unop("ArgMax", np.array([1, np.nan, 3], np.float32), I64),
         "ArgMax over NaN"),
        ("clip_min_gt_max", (one_op("Clip", [[2], [], []], None), [
            ("x0", np.array([1, 5], np.float32)), ("x1", np.array(4, np.float32)),
            ("x2", np.array(2, np.float32))]), "Clip with min > max"),
        ("round_huge", unop("Round", np.array([3e38, np.inf], np.float32)), "Round 3e38 and inf"),
        ("cumsum_overflow", (one_op("CumSum", [[2], []], None, dtype=I64, inits=[
            const("x1", np.array(0, np.int64))]), [("x0", i64(2**62, 2**62 * 2 - 1))]),
         "int64 CumSum overflow"),
        ("range_int_overflow", (one_op("Range", [[], [], []], None, dtype=I64), [
            ("x0", i64(2**63 - 3)), ("x1", i64(2**63 - 1)), ("x2", i64(5))]),
         "int64 Range stepping past INT64_MAX"),
        ("gather_index_int32_min", (one_op("Gather", [[4], [1]], None, in_dtypes=[F, I32]), [
            ("x0", np.ones(4, np.float32)), ("x1", i32(i32min))]), "Gather index INT32_MIN"),
        ("slice_extreme", (one_op("Slice", [[4], [1], [1], [1], [1]], None,
                                  in_dtypes=[F, I64, I64, I64, I64]), [
            ("x0", np.ones(4, np.float32)), ("x1", i64(i64min)), ("x2", i64(2**63 - 1)),
            ("x3", i64(0)), ("x4", i64(i64min))]), "Slice with INT64_MIN step and bounds"),
        ("slice_step_max", (one_op("Slice", [[4], [1], [1], [1], [1]], None,
                                   in_dtypes=[F, I64, I64, I64, I64]), [
            ("x0", np.ones(4, np.float32)), ("x1", i64(0)), ("x2", i64(2**63 - 1)),
            ("x3", i64(0)), ("x4", i64(2**63 - 1))]), "Slice with INT64_MAX step"),
    ]
    for tag, (m, ins), desc in cases:
        c.add("ub_" + tag, desc, m, "nocrash", inputs=ins)


def input_files(c):
    """A valid model and input files that do not fit it (run must say 'bad input')."""
    m = one_op("Relu", [[2, 3]], [2, 3])
    good = np.ones((2, 3), np.float32)
    from onnx import numpy_helper

    def tp(array, **changes):
        t = numpy_helper.from_array(np.asarray(array), "x0")
        for k, v in changes.items():
            if k == "dims":
                t.ClearField("dims")
                t.dims.extend(v)
            else:
                setattr(t, k, v)
        return t

    blob = tp(good).SerializeToString()
    cases = [
        ("wrong_dtype", tp(good.astype(np.int32)), "an int32 input for a float input"),
        ("wrong_shape", tp(np.ones((3, 2), np.float32)), "a [3,2] input for [2,3]"),
        ("wrong_rank", tp(np.ones(6, np.float32)), "a [6] input for [2,3]"),
        ("truncated", blob[:-5], "a truncated input file"),
        ("empty_file", b"", "an empty input file"),
        ("garbage", b"\xff" * 40, "an input file of 0xff bytes"),
        ("dims_overflow", tp(good, dims=[2**32, 2**32, 2**32]), "input dims overflowing int64"),
        ("dims_wrap", tp(good, dims=[2**31, 2**31, 4]), "input dims whose byte count wraps"),
        ("dims_neg", tp(good, dims=[-2, -3]), "input dims [-2,-3]"),
        ("raw_short", tp(good, raw_data=good.tobytes()[:7]), "input raw_data of 7 bytes"),
        ("dtype_99", tp(good, data_type=99), "input data_type 99"),
        ("dtype_0", tp(good, data_type=0), "input data_type 0"),
        ("npy_as_pb", b"\x93NUMPY\x01\x00" + b"\x00" * 40, "a .npy header in a .pb file"),
    ]
    for tag, value, desc in cases:
        c.add("input_" + tag, "valid Relu model; " + desc, m, "check", inputs=[("x0", value)])
    c.add("input_unknown_name", "valid Relu model; input file for an unknown name nope", m,
          "check", inputs=[("nope", good)])
    c.add("input_missing", "valid Add model; only one of two inputs given",
          one_op("Add", [[2], [2]], [2]), "check", inputs=[("x0", np.ones(2, np.float32))])
    c.add("input_twice", "valid Relu model; the same input given twice", m, "nocrash",
          inputs=[("x0", good), ("x0", good)])


def generate(c):
    unknown_ops(c)
    arity(c)
    attr_types(c)
    attr_missing(c)
    attr_values(c)
    run_time(c)
    undefined_behaviour(c)
    input_files(c)
