/* The lowering table: for every op, the lowering that takes a group of one node of it, or
 * none and the reason why (the node then runs its reference kernel).
 *
 * lower.c's dispatch reads the row of the node's op and calls its lowering; it never tries
 * another one and never reads the text of a status. A lowering that is given a node it
 * cannot take (a dtype, a dynamic shape, an attribute value it has no compute definition
 * for) declines with kiln_unsupported("reason"): that reason becomes the fallback's. Invalid
 * nodes never reach this table: inference (src/ops) rejects them as bad input first.
 *
 * The family rows (elementwise, reduction, contraction) are the same lowerings that take the
 * fused groups of lower_kernels; their node-level entry here first asks the family's
 * classifier (kiln_lower_is_elementwise, ...), so a node the family has no compute
 * definition for declines with a reason instead of reaching the group lowering. */
#include <stdio.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/op_desc.h"

/* The reason a family lowering gives for a node its classifier refuses. */
static kiln_status decline(kiln_lower_ctx *c, const kiln_node *n) {
  for (int i = 0; i < n->n_inputs; i++) {
    const kiln_type *t = n->inputs[i] >= 0 ? kiln_lower_static(c->g, n->inputs[i]) : NULL;
    if (t && kiln_lower_numel(t) == 0)
      return kiln_unsupported("input '%.100s' is empty (a zero extent): the reference kernel "
                              "computes the result",
                              c->g->values.data[n->inputs[i]].name);
  }
  for (int i = 0; i < n->n_inputs; i++) {
    const kiln_type *t = n->inputs[i] >= 0 ? kiln_lower_static(c->g, n->inputs[i]) : NULL;
    if (t && !kiln_lower_dtype_ok(t->dtype) && !kiln_dtype_is_float(t->dtype))
      return kiln_unsupported("no lowering for %s of %s", n->op_type, kiln_dtype_name(t->dtype));
  }
  const kiln_type *y =
      n->n_outputs > 0 && n->outputs[0] >= 0 ? kiln_lower_static(c->g, n->outputs[0]) : NULL;
  if ((n->op == KILN_OP_Cast || n->op == KILN_OP_CastLike) && y && !kiln_lower_dtype_ok(y->dtype))
    return kiln_unsupported(kiln_dtype_bits(y->dtype) == 8 && kiln_dtype_is_float(y->dtype) &&
                                    y->dtype != KILN_F8E8M0
                                ? "no lowering for %s to %s with saturate=0 (the compiled "
                                  "float8 conversions saturate)"
                                : "no lowering for %s to %s",
                            n->op_type, kiln_dtype_name(y->dtype));
  for (int i = 0; i < n->n_inputs; i++) {
    const kiln_type *t = n->inputs[i] >= 0 ? kiln_lower_static(c->g, n->inputs[i]) : NULL;
    if (t && !kiln_lower_dtype_ok(t->dtype))
      return kiln_unsupported("no lowering for %s of %s", n->op_type, kiln_dtype_name(t->dtype));
  }
  return kiln_unsupported("no lowering for %s with these input types, shapes or attributes",
                          n->op_type);
}

static const kiln_node *only_node(const kiln_lower_ctx *c, const kiln_group *grp) {
  return &c->g->nodes.data[grp->nodes[0]];
}

static kiln_status lower_ew(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = only_node(c, grp);
  if (!kiln_lower_is_elementwise(c->g, n)) return decline(c, n);
  return kiln_lower_ew_group(c, grp);
}

static kiln_status lower_reduce(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = only_node(c, grp);
  if (!kiln_lower_is_reduction(c->g, n)) return decline(c, n);
  return kiln_lower_reduce_group(c, grp);
}

static kiln_status lower_contract(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = only_node(c, grp);
  if (!kiln_lower_is_contraction(c->g, n)) return decline(c, n);
  return kiln_lower_contraction(c, grp);
}

/* ---- reasons of the ops without a lowering ---- */
#define R_CONTROL "a control-flow op: its subgraphs run in the interpreter"
#define R_SEQ "it works on sequences or optionals, which kernels do not hold"
#define R_RANDOM "it draws random numbers: the reference kernel's generator makes them"
#define R_DYNAMIC "its output shape depends on the values of its inputs"
#define R_STRING "it works on strings"
#define R_QUANT "quantized arithmetic has no compute definition yet"
#define R_RNN "a recurrent sequence model: no compute definition yet"
#define R_SIGNAL "a signal-processing op: no compute definition yet"
#define R_TODO "no compute definition yet"
#define R_VIEW                                                                                     \
  "a view only (an alias step): its input and output must be static tensors of one dtype "         \
  "and element count"

#define RED                                                                                        \
  { lower_reduce, false, NULL }
#define MM                                                                                         \
  { lower_contract, false, NULL }
#define ONE(fn)                                                                                    \
  { fn, false, NULL }
#define NONE(why)                                                                                  \
  { NULL, false, why }

static const kiln_lower_row rows[KILN_OP_COUNT] = {
    [KILN_OP_UNKNOWN] = NONE("an op Kiln does not know"),
    /* elementwise (lower_ew.c): every op whose descriptor has an elementwise dtype class
     * (op_desc.c .ew) takes the elementwise row, see kiln_lower_row_of; Identity is also a
     * view */
    [KILN_OP_Identity] = {lower_ew, true, NULL},
    [KILN_OP_BitCast] = NONE("it reinterprets bytes: " R_TODO),
    /* reductions (lower_reduce.c) */
    [KILN_OP_ArgMax] = RED,
    [KILN_OP_ArgMin] = RED,
    [KILN_OP_LayerNormalization] = RED,
    [KILN_OP_LogSoftmax] = RED,
    [KILN_OP_ReduceL1] = RED,
    [KILN_OP_ReduceL2] = RED,
    [KILN_OP_ReduceLogSum] = RED,
    [KILN_OP_ReduceLogSumExp] = RED,
    [KILN_OP_ReduceMax] = RED,
    [KILN_OP_ReduceMean] = RED,
    [KILN_OP_ReduceMin] = RED,
    [KILN_OP_ReduceProd] = RED,
    [KILN_OP_ReduceSum] = RED,
    [KILN_OP_ReduceSumSquare] = RED,
    [KILN_OP_Softmax] = RED,
    [KILN_OP_TopK] = NONE("a selection (sorting) op: " R_TODO),
    /* contractions (lower_matmul.c, lower_conv.c) */
    [KILN_OP_Conv] = MM,
    [KILN_OP_Gemm] = MM,
    [KILN_OP_MatMul] = MM,
    [KILN_OP_ConvInteger] = NONE(R_QUANT),
    [KILN_OP_MatMulInteger] = NONE(R_QUANT),
    [KILN_OP_ConvTranspose] = NONE(R_TODO),
    [KILN_OP_DeformConv] = NONE(R_TODO),
    [KILN_OP_Einsum] = NONE("its contraction is given by an equation: " R_TODO),
    [KILN_OP_Det] = NONE(R_TODO),
    [KILN_OP_Col2Im] = NONE(R_TODO),
    /* data movement (lower_data.c) */
    [KILN_OP_Concat] = ONE(kiln_lower_data_node),
    [KILN_OP_DepthToSpace] = ONE(kiln_lower_data_node),
    [KILN_OP_Expand] = ONE(kiln_lower_data_node),
    [KILN_OP_Gather] = ONE(kiln_lower_data_node),
    [KILN_OP_Pad] = ONE(kiln_lower_data_node),
    [KILN_OP_Slice] = ONE(kiln_lower_data_node),
    [KILN_OP_SpaceToDepth] = ONE(kiln_lower_data_node),
    [KILN_OP_Split] = ONE(kiln_lower_data_node),
    [KILN_OP_Tile] = ONE(kiln_lower_data_node),
    [KILN_OP_Transpose] = ONE(kiln_lower_data_node),
    /* views: an alias step or nothing (lower.c try_alias) */
    [KILN_OP_Flatten] = {NULL, true, R_VIEW},
    [KILN_OP_Reshape] = {NULL, true, R_VIEW},
    [KILN_OP_Squeeze] = {NULL, true, R_VIEW},
    [KILN_OP_Unsqueeze] = {NULL, true, R_VIEW},
    /* pooling (lower_pool.c) */
    [KILN_OP_AveragePool] = ONE(kiln_lower_pool_node),
    [KILN_OP_GlobalAveragePool] = ONE(kiln_lower_pool_node),
    [KILN_OP_GlobalMaxPool] = ONE(kiln_lower_pool_node),
    [KILN_OP_MaxPool] = ONE(kiln_lower_pool_node),
    [KILN_OP_GlobalLpPool] = NONE(R_TODO),
    [KILN_OP_LpPool] = NONE(R_TODO),
    [KILN_OP_MaxRoiPool] = NONE(R_TODO),
    [KILN_OP_MaxUnpool] = NONE(R_TODO),
    /* gathers and scatters (lower_index.c) */
    [KILN_OP_GatherElements] = ONE(kiln_lower_index_node),
    [KILN_OP_GatherND] = ONE(kiln_lower_index_node),
    [KILN_OP_Scatter] = ONE(kiln_lower_index_node),
    [KILN_OP_ScatterElements] = ONE(kiln_lower_index_node),
    [KILN_OP_ScatterND] = ONE(kiln_lower_index_node),
    [KILN_OP_TensorScatter] = NONE(R_TODO),
    /* normalizations (lower_norm.c) */
    [KILN_OP_BatchNormalization] = ONE(kiln_lower_norm_node),
    [KILN_OP_GroupNormalization] = ONE(kiln_lower_norm_node),
    [KILN_OP_InstanceNormalization] = ONE(kiln_lower_norm_node),
    [KILN_OP_LRN] = ONE(kiln_lower_norm_node),
    [KILN_OP_LpNormalization] = ONE(kiln_lower_norm_node),
    [KILN_OP_RMSNormalization] = ONE(kiln_lower_norm_node),
    [KILN_OP_MeanVarianceNormalization] = NONE(R_TODO),
    /* single-node kernels and constants folded at compile time (lower_misc.c) */
    [KILN_OP_Constant] = ONE(kiln_lower_misc_node),
    [KILN_OP_ConstantOfShape] = ONE(kiln_lower_misc_node),
    [KILN_OP_CumProd] = ONE(kiln_lower_misc_node),
    [KILN_OP_CumSum] = ONE(kiln_lower_misc_node),
    [KILN_OP_Dropout] = {kiln_lower_misc_node, true, NULL},
    [KILN_OP_EyeLike] = ONE(kiln_lower_misc_node),
    [KILN_OP_Hardmax] = ONE(kiln_lower_misc_node),
    [KILN_OP_OneHot] = ONE(kiln_lower_misc_node),
    [KILN_OP_Shape] = ONE(kiln_lower_misc_node),
    [KILN_OP_Size] = ONE(kiln_lower_misc_node),
    [KILN_OP_Trilu] = ONE(kiln_lower_misc_node),
    /* no lowering */
    [KILN_OP_AffineGrid] = NONE(R_TODO),
    [KILN_OP_CenterCropPad] = NONE(R_TODO),
    [KILN_OP_GridSample] = NONE(R_TODO),
    [KILN_OP_Range] = NONE(R_DYNAMIC),
    [KILN_OP_Resize] = NONE(R_TODO),
    [KILN_OP_Upsample] = NONE(R_TODO),
    [KILN_OP_ReverseSequence] = NONE(R_TODO),
    [KILN_OP_Compress] = NONE(R_DYNAMIC),
    [KILN_OP_NonZero] = NONE(R_DYNAMIC),
    [KILN_OP_Unique] = NONE(R_DYNAMIC),
    [KILN_OP_NonMaxSuppression] = NONE(R_DYNAMIC),
    [KILN_OP_If] = NONE(R_CONTROL),
    [KILN_OP_Loop] = NONE(R_CONTROL),
    [KILN_OP_Scan] = NONE(R_CONTROL),
    [KILN_OP_SequenceMap] = NONE(R_CONTROL),
    [KILN_OP_ConcatFromSequence] = NONE(R_SEQ),
    [KILN_OP_Optional] = NONE(R_SEQ),
    [KILN_OP_OptionalGetElement] = NONE(R_SEQ),
    [KILN_OP_OptionalHasElement] = NONE(R_SEQ),
    [KILN_OP_SequenceAt] = NONE(R_SEQ),
    [KILN_OP_SequenceConstruct] = NONE(R_SEQ),
    [KILN_OP_SequenceEmpty] = NONE(R_SEQ),
    [KILN_OP_SequenceErase] = NONE(R_SEQ),
    [KILN_OP_SequenceInsert] = NONE(R_SEQ),
    [KILN_OP_SequenceLength] = NONE(R_SEQ),
    [KILN_OP_SplitToSequence] = NONE(R_SEQ),
    [KILN_OP_Bernoulli] = NONE(R_RANDOM),
    [KILN_OP_Multinomial] = NONE(R_RANDOM),
    [KILN_OP_RandomNormal] = NONE(R_RANDOM),
    [KILN_OP_RandomNormalLike] = NONE(R_RANDOM),
    [KILN_OP_RandomUniform] = NONE(R_RANDOM),
    [KILN_OP_RandomUniformLike] = NONE(R_RANDOM),
    [KILN_OP_ImageDecoder] = NONE("it decodes encoded image bytes"),
    [KILN_OP_RegexFullMatch] = NONE(R_STRING),
    [KILN_OP_StringConcat] = NONE(R_STRING),
    [KILN_OP_StringNormalizer] = NONE(R_STRING),
    [KILN_OP_StringSplit] = NONE(R_STRING),
    [KILN_OP_TfIdfVectorizer] = NONE("it counts n-grams: " R_TODO),
    [KILN_OP_DequantizeLinear] = NONE(R_QUANT),
    [KILN_OP_DynamicQuantizeLinear] = NONE(R_QUANT),
    [KILN_OP_QLinearConv] = NONE(R_QUANT),
    [KILN_OP_QLinearMatMul] = NONE(R_QUANT),
    [KILN_OP_QuantizeLinear] = NONE(R_QUANT),
    [KILN_OP_GRU] = NONE(R_RNN),
    [KILN_OP_LSTM] = NONE(R_RNN),
    [KILN_OP_RNN] = NONE(R_RNN),
    [KILN_OP_Attention] = NONE("an attention block: " R_TODO),
    [KILN_OP_LinearAttention] = NONE("an attention block: " R_TODO),
    [KILN_OP_RotaryEmbedding] = NONE(R_TODO),
    [KILN_OP_CausalConvWithState] = NONE(R_TODO),
    [KILN_OP_RoiAlign] = NONE(R_TODO),
    [KILN_OP_BlackmanWindow] = NONE(R_SIGNAL),
    [KILN_OP_HammingWindow] = NONE(R_SIGNAL),
    [KILN_OP_HannWindow] = NONE(R_SIGNAL),
    [KILN_OP_MelWeightMatrix] = NONE(R_SIGNAL),
    [KILN_OP_DFT] = NONE(R_SIGNAL),
    [KILN_OP_STFT] = NONE(R_SIGNAL),
    [KILN_OP_NegativeLogLikelihoodLoss] = NONE("a loss: " R_TODO),
    [KILN_OP_SoftmaxCrossEntropyLoss] = NONE("a loss: " R_TODO),
};

/* An op without a row of its own whose descriptor names an elementwise dtype class (its
 * compute definition in lower_ew.c) takes this row: a new elementwise op needs no line here. */
static const kiln_lower_row ew_row = {lower_ew, false, NULL};

const kiln_lower_row *kiln_lower_row_of(kiln_op op) {
  if ((unsigned)op >= KILN_OP_COUNT) op = KILN_OP_UNKNOWN;
  const kiln_lower_row *r = &rows[op];
  static const kiln_lower_row dts_view = {kiln_lower_data_node, true, NULL};
  if (KILN_MUTANT(358) && op == KILN_OP_DepthToSpace) /* mutant 358: a view (same dtype and */
    return &dts_view;                                 /* count, as Reshape) */
  if (!r->lower && !r->view && !r->reason && kiln_op_desc_of(op)->ew != KILN_EWD_NONE)
    return &ew_row;
  return r;
}

bool kiln_lower_has_lowering(kiln_op op) {
  const kiln_lower_row *r = kiln_lower_row_of(op);
  return op != KILN_OP_UNKNOWN && (r->lower || r->view);
}

const char *kiln_lower_op_reason(kiln_op op) {
  const kiln_lower_row *r = kiln_lower_row_of(op);
  return kiln_lower_has_lowering(op) ? NULL : r->reason;
}
