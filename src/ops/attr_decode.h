/* Typed attribute decoders: one struct per op family, filled from a node.
 *
 * The reference kernels (src/ops), the shape inference and the lowering (src/lower) read an
 * op's attributes through these decoders, so that the facts of an attribute are stated once:
 * its name, its default (taken from the generated ONNX schema table, op_attrs.h, at the node's
 * opset, never written as a literal here), its range. What the op computes with them is not
 * shared: the reference kernel and the lowering stay two independent implementations.
 *
 * Every decoder fails with KILN_ERR_INVALID naming the node ("node 'n1' (LeakyRelu): ...") when
 * an attribute has the wrong kind or a value outside its range. Fields of attributes the
 * node's schema version does not have are zero, except where a family says what their absence
 * means (group 1, TopK before opset 11 largest and sorted, Cast before 19 saturating). */
#ifndef KILN_ATTR_DECODE_H
#define KILN_ATTR_DECODE_H

#include "graph/window.h" /* kiln_auto_pad */
#include "op_attrs.h"

/* ---- single attributes: the node's value, else the schema's default at the node's opset ----
 * An attribute that is absent and has no default is an error (a required attribute missing). */
KILN_MUST_USE kiln_status kiln_attr_f(const kiln_node *n, const char *name, float *out);
KILN_MUST_USE kiln_status kiln_attr_i(const kiln_node *n, const char *name, int64_t *out);
KILN_MUST_USE kiln_status kiln_attr_s(const kiln_node *n, const char *name, const char **out);
/* Lists: *out_n = -1 and *out = NULL when absent and the schema gives no default. */
KILN_MUST_USE kiln_status kiln_attr_ints(const kiln_node *n, const char *name, const int64_t **out,
                                         int *out_n);
/* A string attribute that must be one of choices[] (NULL-terminated); *out is its index. */
KILN_MUST_USE kiln_status kiln_attr_choice(const kiln_node *n, const char *name,
                                           const char *const *choices, int *out);

/* ---- elementwise: activations and the attributes of elementwise ops ----
 * LeakyRelu, Elu, Celu, ThresholdedRelu, Swish: alpha. HardSigmoid: alpha, beta. Selu: alpha,
 * gamma. Shrink: bias, lambd. HardSwish: alpha, beta of the HardSigmoid in its ONNX function
 * body (constants of the schema, not attributes of the node). Gelu: approximate; gelu_c and
 * gelu_k, the constants of the tanh form's function body (0.044715 and 2/pi, binary32 values
 * as the body states them; the body takes sqrt(gelu_k) in the value's type). Clip before opset 11:
 * min, max (absent in Clip-1, which gives no default: unbounded, -FLT_MAX and FLT_MAX). Mod: fmod.
 * BitShift: direction. IsInf: detect_negative, detect_positive. */
typedef enum kiln_gelu_mode { KILN_GELU_NONE, KILN_GELU_TANH, KILN_GELU_MODE_COUNT } kiln_gelu_mode;

typedef struct kiln_attrs_ew {
  float alpha, beta, gamma;
  float bias, lambd;
  float min, max;
  kiln_gelu_mode gelu;
  float gelu_c, gelu_k;
  bool fmod;
  bool shift_right;
  bool detect_negative, detect_positive;
} kiln_attrs_ew;

KILN_MUST_USE kiln_status kiln_attrs_ew_decode(const kiln_node *n, kiln_attrs_ew *out);

/* ---- Softmax, LogSoftmax, Hardmax ----
 * axis (default 1 before opset 13, -1 from it); coerce_2d: before opset 13 the input is seen
 * as 2-D [prod(dims[:axis]), prod(dims[axis:])]. With rank >= 0 the axis is checked against
 * it (an error naming the node) and normalized to [0, rank) (a rank-0 input takes axis 0 or
 * -1, normalized to 0); rank < 0 (unknown) leaves it as written. */
typedef struct kiln_attrs_softmax {
  int64_t axis;
  bool coerce_2d;
} kiln_attrs_softmax;

KILN_MUST_USE kiln_status kiln_attrs_softmax_decode(const kiln_node *n, int rank,
                                                    kiln_attrs_softmax *out);

/* ---- reductions (ReduceSum, ReduceMean, ... ) ----
 * keepdims; noop_with_empty_axes (only where axes are an input); axes_input: the axes are
 * input 1 (ReduceSum from opset 13, the others from 18), else the axes attribute (axes,
 * n_axes = -1 when absent: every axis). */
typedef struct kiln_attrs_reduce {
  bool keepdims;
  bool noop_with_empty_axes;
  bool axes_input;
  const int64_t *axes;
  int n_axes;
} kiln_attrs_reduce;

KILN_MUST_USE kiln_status kiln_attrs_reduce_decode(const kiln_node *n, kiln_attrs_reduce *out);

/* ---- ArgMax, ArgMin ----
 * axis (as written; checked against rank and normalized when rank >= 0), keepdims,
 * select_last_index (false before opset 12, which lacks it). */
typedef struct kiln_attrs_arg {
  int64_t axis;
  bool keepdims, select_last_index;
} kiln_attrs_arg;

KILN_MUST_USE kiln_status kiln_attrs_arg_decode(const kiln_node *n, int rank, kiln_attrs_arg *out);

/* ---- normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
 * RMSNormalization, GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization ----
 * epsilon (ONNX does not require > 0; a negative one is rejected), momentum, training_mode
 * (BatchNorm 14+), is_test (BatchNorm before 7), axis (LayerNorm, RMSNorm, LpNorm: as
 * written), stash_type (LayerNorm, RMSNorm: as written), num_groups (GroupNorm: >= 1), p
 * (LpNorm: 1 or 2), axes (MeanVarianceNormalization, default [0, 2, 3]), LRN's alpha, beta,
 * bias, size (>= 1). */
typedef struct kiln_attrs_norm {
  float epsilon, momentum;
  bool training_mode, is_test;
  int64_t axis;
  int64_t stash_type;
  int64_t num_groups;
  int64_t p;
  const int64_t *axes;
  int n_axes;
  float alpha, beta, bias;
  int64_t size;
} kiln_attrs_norm;

KILN_MUST_USE kiln_status kiln_attrs_norm_decode(const kiln_node *n, kiln_attrs_norm *out);

/* ---- Gemm: alpha, beta, transA, transB ---- */
typedef struct kiln_attrs_gemm {
  float alpha, beta;
  bool trans_a, trans_b;
} kiln_attrs_gemm;

KILN_MUST_USE kiln_status kiln_attrs_gemm_decode(const kiln_node *n, kiln_attrs_gemm *out);

/* ---- convolution and pooling windows: Conv, ConvTranspose, ConvInteger, QLinearConv,
 * AveragePool, MaxPool, LpPool, GlobalLpPool, MaxUnpool, DeformConv ----
 * The lists as written (n_* = -1 when absent: the geometry code supplies what their absence
 * means), each value checked: kernel_shape, strides, dilations >= 1; pads >= 0 with an even
 * count (pooling: each smaller than the kernel); auto_pad one of NOTSET, SAME_UPPER, SAME_LOWER,
 * VALID (an empty string, which some exporters write, is NOTSET); group, offset_group >= 1 (1 for
 * ops without groups); ceil_mode, count_include_pad, storage_order 0 or 1; p > 0 (LpPool: a float
 * in opset 1, an int later). This decodes the attributes only; the window geometry they give is
 * computed by graph/window.h. */

typedef struct kiln_attrs_window {
  const int64_t *kernel_shape, *strides, *pads, *dilations;
  int n_kernel_shape, n_strides, n_pads, n_dilations;
  const int64_t *output_padding, *output_shape; /* ConvTranspose */
  int n_output_padding, n_output_shape;
  kiln_auto_pad auto_pad;
  int64_t group, offset_group;
  bool ceil_mode, count_include_pad;
  int64_t storage_order;
  double p;
} kiln_attrs_window;

KILN_MUST_USE kiln_status kiln_attrs_window_decode(const kiln_node *n, kiln_attrs_window *out);

/* ---- conversions: Cast, CastLike, QuantizeLinear ----
 * saturate (true where the version lacks it: before opset 19 every conversion saturates);
 * round_mode (Cast, CastLike from opset 24). */
typedef enum kiln_round_mode {
  KILN_ROUND_UP,
  KILN_ROUND_DOWN,
  KILN_ROUND_NEAREST,
  KILN_ROUND_MODE_COUNT
} kiln_round_mode;

typedef struct kiln_attrs_cast {
  bool saturate;
  kiln_round_mode round_mode;
} kiln_attrs_cast;

KILN_MUST_USE kiln_status kiln_attrs_cast_decode(const kiln_node *n, kiln_attrs_cast *out);

/* ---- data movement and indexing: Concat, Split, Gather, GatherElements, GatherND,
 * ScatterElements, ScatterND, OneHot, Hardmax... (axis), Pad, DepthToSpace, SpaceToDepth,
 * Trilu, EyeLike, CumSum, CumProd, TopK ----
 * axis: as written (has_axis false when absent with no default: Compress, Unique; Concat-1
 * without one takes 1, the default its documentation states and its schema does not);
 * batch_dims >= 0; reduction (ScatterElements, ScatterND); pad mode (Pad); blocksize >= 1
 * and crd (mode CRD rather than DCR; DepthToSpace); upper (Trilu); k (EyeLike); exclusive,
 * reverse (CumSum, CumProd); largest, sorted (TopK, Unique); Pad's value before opset 11;
 * allowzero (Reshape); keepdims (SplitToSequence); new_axis (ConcatFromSequence); batch_axis,
 * time_axis (ReverseSequence). */
typedef enum kiln_scatter_reduction {
  KILN_SCATTER_NONE,
  KILN_SCATTER_ADD,
  KILN_SCATTER_MUL,
  KILN_SCATTER_MAX,
  KILN_SCATTER_MIN,
  KILN_SCATTER_REDUCTION_COUNT
} kiln_scatter_reduction;

typedef enum kiln_pad_mode {
  KILN_PAD_CONSTANT,
  KILN_PAD_REFLECT,
  KILN_PAD_EDGE,
  KILN_PAD_WRAP,
  KILN_PAD_MODE_COUNT
} kiln_pad_mode;

typedef struct kiln_attrs_data {
  int64_t axis;
  bool has_axis;
  int64_t batch_dims;
  kiln_scatter_reduction reduction;
  kiln_pad_mode pad_mode;
  int64_t blocksize;
  bool crd;
  bool upper;
  int64_t k;
  bool exclusive, reverse;
  bool largest, sorted;
  float pad_value;               /* Pad before opset 11 */
  bool allowzero;                /* Reshape */
  bool keepdims;                 /* SplitToSequence */
  bool new_axis;                 /* ConcatFromSequence */
  int64_t batch_axis, time_axis; /* ReverseSequence (as written) */
} kiln_attrs_data;

KILN_MUST_USE kiln_status kiln_attrs_data_decode(const kiln_node *n, kiln_attrs_data *out);

/* The names of the enums above, for messages ("none", "add", ...; "constant", ...). */
const char *kiln_scatter_reduction_name(kiln_scatter_reduction r);
const char *kiln_pad_mode_name(kiln_pad_mode m);

#endif
