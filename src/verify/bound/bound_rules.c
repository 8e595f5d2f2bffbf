/* The op -> rule table of the error bounds and the generic rules (MOVE, SUM, SUB, MULTILIN,
 * GEMM, CORNER, LIPSCHITZ, DISCRETE, REDUCE_MONO, PERTURB, EXACT). Cast and ArgMax/ArgMin
 * live in bound_cast.c, Softmax and the normalizations in bound_norm.c.
 *
 * Notation: y the reference output (double), x the inputs, e their error bounds, u the unit
 * roundoff of the output's dtype, gamma_K = K u / (1 - K u). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

/* ---- the table ----
 * One row per op of ops.def, keyed by op, with named fields (zero when not given): .rule,
 * and for the rules that read them .ulps, .absmag, .absc, .pole1, .mono_all, .mask (see
 * bnd_opinfo). An op without a rule says so with P(op, why): it falls back to PERTURB
 * (documented in docs/DESIGN.md); test_op_registry fails for an op with neither. */
#define P(name, reason) [KILN_OP_##name] = {.rule = BND_PERTURB, .perturb_why = reason}
static const bnd_opinfo table[KILN_OP_COUNT] = {
    /* exact or discrete */
    [KILN_OP_Shape] = {.rule = BND_EXACT},
    [KILN_OP_Size] = {.rule = BND_EXACT},
    [KILN_OP_Constant] = {.rule = BND_EXACT},
    [KILN_OP_ConstantOfShape] = {.rule = BND_EXACT},
    [KILN_OP_EyeLike] = {.rule = BND_EXACT},
    [KILN_OP_RandomNormal] = {.rule = BND_EXACT},
    [KILN_OP_RandomNormalLike] = {.rule = BND_EXACT},
    [KILN_OP_RandomUniform] = {.rule = BND_EXACT},
    [KILN_OP_RandomUniformLike] = {.rule = BND_EXACT},
    [KILN_OP_HannWindow] = {.rule = BND_EXACT, .ulps = 8, .absc = 1},
    [KILN_OP_HammingWindow] = {.rule = BND_EXACT, .ulps = 8, .absc = 1},
    [KILN_OP_BlackmanWindow] = {.rule = BND_EXACT, .ulps = 8, .absc = 1},
    [KILN_OP_MelWeightMatrix] = {.rule = BND_EXACT, .ulps = 16, .absc = 1},
    [KILN_OP_Greater] = {.rule = BND_DISCRETE},
    [KILN_OP_Less] = {.rule = BND_DISCRETE},
    [KILN_OP_GreaterOrEqual] = {.rule = BND_DISCRETE},
    [KILN_OP_LessOrEqual] = {.rule = BND_DISCRETE},
    [KILN_OP_Equal] = {.rule = BND_DISCRETE},
    [KILN_OP_Floor] = {.rule = BND_DISCRETE},
    [KILN_OP_Ceil] = {.rule = BND_DISCRETE},
    [KILN_OP_Round] = {.rule = BND_DISCRETE},
    [KILN_OP_Sign] = {.rule = BND_DISCRETE},
    [KILN_OP_IsNaN] = {.rule = BND_DISCRETE},
    [KILN_OP_IsInf] = {.rule = BND_DISCRETE},
    [KILN_OP_QuantizeLinear] = {.rule = BND_DISCRETE, .ulps = 2},
    [KILN_OP_Cast] = {.rule = BND_CAST},
    [KILN_OP_CastLike] = {.rule = BND_CAST},
    [KILN_OP_ArgMax] = {.rule = BND_ARGMINMAX},
    [KILN_OP_ArgMin] = {.rule = BND_ARGMINMAX},
    [KILN_OP_TopK] = {.rule = BND_TOPK},
    [KILN_OP_Hardmax] = {.rule = BND_HARDMAX},
    /* data movement: err = op(err); mask: the data inputs (0: input 0) */
    [KILN_OP_Identity] = {.rule = BND_MOVE},
    [KILN_OP_Reshape] = {.rule = BND_MOVE},
    [KILN_OP_Transpose] = {.rule = BND_MOVE},
    [KILN_OP_Squeeze] = {.rule = BND_MOVE},
    [KILN_OP_Unsqueeze] = {.rule = BND_MOVE},
    [KILN_OP_Flatten] = {.rule = BND_MOVE},
    [KILN_OP_Slice] = {.rule = BND_MOVE},
    [KILN_OP_Gather] = {.rule = BND_MOVE},
    [KILN_OP_GatherElements] = {.rule = BND_MOVE},
    [KILN_OP_GatherND] = {.rule = BND_MOVE},
    [KILN_OP_Concat] = {.rule = BND_MOVE, .mask = ~0u},
    [KILN_OP_Split] = {.rule = BND_MOVE},
    [KILN_OP_Expand] = {.rule = BND_MOVE},
    [KILN_OP_Tile] = {.rule = BND_MOVE},
    [KILN_OP_Pad] = {.rule = BND_MOVE, .mask = 1 | 4},
    [KILN_OP_DepthToSpace] = {.rule = BND_MOVE},
    [KILN_OP_SpaceToDepth] = {.rule = BND_MOVE},
    [KILN_OP_ReverseSequence] = {.rule = BND_MOVE},
    [KILN_OP_Compress] = {.rule = BND_MOVE},
    [KILN_OP_Dropout] = {.rule = BND_MOVE},
    [KILN_OP_Trilu] = {.rule = BND_MOVE},
    [KILN_OP_CenterCropPad] = {.rule = BND_MOVE},
    [KILN_OP_Where] = {.rule = BND_MOVE, .mask = 2 | 4},
    [KILN_OP_ScatterElements] = {.rule = BND_MOVE, .mask = 1 | 4},
    [KILN_OP_ScatterND] = {.rule = BND_MOVE, .mask = 1 | 4},
    [KILN_OP_Scatter] = {.rule = BND_MOVE, .mask = 1 | 4},
    [KILN_OP_OneHot] = {.rule = BND_MOVE, .mask = 4},
    [KILN_OP_MaxUnpool] = {.rule = BND_MOVE},
    [KILN_OP_Resize] = {.rule = BND_MOVE},
    [KILN_OP_Upsample] = {.rule = BND_MOVE},
    /* positive linear combinations: err = op(err) + gamma_K op(|x|) */
    [KILN_OP_Add] = {.rule = BND_SUM, .mask = ~0u},
    [KILN_OP_Sum] = {.rule = BND_SUM, .mask = ~0u},
    [KILN_OP_Mean] = {.rule = BND_SUM, .mask = ~0u},
    [KILN_OP_ReduceSum] = {.rule = BND_SUM},
    [KILN_OP_ReduceMean] = {.rule = BND_SUM},
    [KILN_OP_AveragePool] = {.rule = BND_SUM},
    [KILN_OP_GlobalAveragePool] = {.rule = BND_SUM},
    [KILN_OP_CumSum] = {.rule = BND_SUM},
    [KILN_OP_ReduceL1] = {.rule = BND_SUM},
    [KILN_OP_ReduceL2] = {.rule = BND_SUM},
    [KILN_OP_LpPool] = {.rule = BND_SUM},
    [KILN_OP_GlobalLpPool] = {.rule = BND_SUM},
    [KILN_OP_Sub] = {.rule = BND_SUB},
    /* multilinear contractions */
    [KILN_OP_Mul] = {.rule = BND_MULTILIN, .mask = ~0u},
    [KILN_OP_MatMul] = {.rule = BND_MULTILIN, .mask = ~0u},
    [KILN_OP_Conv] = {.rule = BND_MULTILIN, .mask = ~0u},
    [KILN_OP_ConvTranspose] = {.rule = BND_MULTILIN, .mask = ~0u},
    [KILN_OP_Einsum] = {.rule = BND_MULTILIN, .mask = ~0u},
    [KILN_OP_ReduceProd] = {.rule = BND_MULTILIN},
    [KILN_OP_ReduceSumSquare] = {.rule = BND_MULTILIN},
    [KILN_OP_CumProd] = {.rule = BND_MULTILIN},
    [KILN_OP_Gemm] = {.rule = BND_GEMM},
    /* elementwise, by corners of the input boxes: ulps, absmag, absc, pole input, monotone */
    [KILN_OP_Abs] = {.rule = BND_CORNER},
    [KILN_OP_Neg] = {.rule = BND_CORNER},
    [KILN_OP_Relu] = {.rule = BND_CORNER, .mono_all = true},
    [KILN_OP_Max] = {.rule = BND_CORNER, .mono_all = true},
    [KILN_OP_Min] = {.rule = BND_CORNER, .mono_all = true},
    [KILN_OP_Clip] = {.rule = BND_CORNER, .mono_all = true},
    [KILN_OP_ThresholdedRelu] = {.rule = BND_CORNER},
    [KILN_OP_Shrink] = {.rule = BND_CORNER, .ulps = 1},
    [KILN_OP_Div] = {.rule = BND_CORNER, .ulps = 1, .pole1 = 2},
    [KILN_OP_Reciprocal] = {.rule = BND_CORNER, .ulps = 1, .pole1 = 1},
    [KILN_OP_Sqrt] = {.rule = BND_CORNER, .ulps = 1, .mono_all = true},
    [KILN_OP_LeakyRelu] = {.rule = BND_CORNER, .ulps = 1},
    [KILN_OP_PRelu] = {.rule = BND_CORNER, .ulps = 1},
    [KILN_OP_Mod] = {.rule = BND_MOD},
    [KILN_OP_HardSigmoid] = {.rule = BND_CORNER, .ulps = 2, .absmag = 1},
    [KILN_OP_HardSwish] = {.rule = BND_CORNER, .ulps = 4, .absmag = 1},
    [KILN_OP_Exp] = {.rule = BND_CORNER, .ulps = 4, .mono_all = true},
    [KILN_OP_Log] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .pole1 = 1, .mono_all = true},
    [KILN_OP_Tanh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Sigmoid] = {.rule = BND_CORNER, .ulps = 6, .mono_all = true},
    [KILN_OP_Erf] = {.rule = BND_CORNER, .ulps = 8, .mono_all = true},
    [KILN_OP_Softplus] = {.rule = BND_CORNER, .ulps = 6, .mono_all = true},
    [KILN_OP_Softsign] = {.rule = BND_CORNER, .ulps = 3, .mono_all = true},
    [KILN_OP_Elu] = {.rule = BND_CORNER, .ulps = 4, .absc = 2},
    [KILN_OP_Celu] = {.rule = BND_CORNER, .ulps = 4, .absc = 2},
    [KILN_OP_Selu] = {.rule = BND_CORNER, .ulps = 4, .absc = 4},
    [KILN_OP_Gelu] = {.rule = BND_CORNER, .ulps = 10, .absmag = 1},
    [KILN_OP_Mish] = {.rule = BND_CORNER, .ulps = 12, .absmag = 1},
    [KILN_OP_Swish] = {.rule = BND_CORNER, .ulps = 8, .absmag = 1},
    [KILN_OP_Pow] = {.rule = BND_CORNER, .ulps = 8},
    [KILN_OP_Acos] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Asin] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Atan] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Acosh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Asinh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Atanh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Sinh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1, .mono_all = true},
    [KILN_OP_Cosh] = {.rule = BND_CORNER, .ulps = 4, .absc = 1},
    [KILN_OP_Tan] = {.rule = BND_CORNER, .ulps = 4, .absmag = 1, .absc = 1},
    [KILN_OP_DequantizeLinear] = {.rule = BND_CORNER, .ulps = 1},
    [KILN_OP_BatchNormalization] = {.rule = BND_CORNER, .ulps = 6},
    [KILN_OP_Sin] = {.rule = BND_LIPSCHITZ, .ulps = 4, .absmag = 1},
    [KILN_OP_Cos] = {.rule = BND_LIPSCHITZ, .ulps = 4, .absmag = 1},
    /* monotone increasing reductions: corners of all inputs together */
    [KILN_OP_ReduceMax] = {.rule = BND_REDUCE_MONO, .mono_all = true},
    [KILN_OP_ReduceMin] = {.rule = BND_REDUCE_MONO, .mono_all = true},
    [KILN_OP_MaxPool] = {.rule = BND_REDUCE_MONO, .mono_all = true},
    [KILN_OP_GlobalMaxPool] = {.rule = BND_REDUCE_MONO, .mono_all = true},
    [KILN_OP_ReduceLogSumExp] = {.rule = BND_REDUCE_MONO, .ulps = 4, .mono_all = true},
    [KILN_OP_ReduceLogSum] = {.rule = BND_REDUCE_MONO, .ulps = 4, .mono_all = true},
    /* composites by decomposition */
    [KILN_OP_Softmax] = {.rule = BND_SOFTMAX},
    [KILN_OP_LogSoftmax] = {.rule = BND_SOFTMAX},
    [KILN_OP_LayerNormalization] = {.rule = BND_NORM},
    [KILN_OP_RMSNormalization] = {.rule = BND_NORM},
    [KILN_OP_InstanceNormalization] = {.rule = BND_NORM},
    [KILN_OP_GroupNormalization] = {.rule = BND_NORM},
    [KILN_OP_MeanVarianceNormalization] = {.rule = BND_NORM},
    [KILN_OP_LpNormalization] = {.rule = BND_NORM},
    [KILN_OP_LRN] = {.rule = BND_LRN},
    /* no rule: perturbation of all inputs with a safety factor (kiln_bnd_info) */
    P(AffineGrid, "no rule yet, perturbation of all inputs"),
    P(And, "integer, bool or raw bits: no float error to bound"),
    P(Attention, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(Bernoulli, "random: no rule, perturbation of all inputs"),
    P(BitCast, "integer, bool or raw bits: no float error to bound"),
    P(BitShift, "integer, bool or raw bits: no float error to bound"),
    P(BitwiseAnd, "integer, bool or raw bits: no float error to bound"),
    P(BitwiseNot, "integer, bool or raw bits: no float error to bound"),
    P(BitwiseOr, "integer, bool or raw bits: no float error to bound"),
    P(BitwiseXor, "integer, bool or raw bits: no float error to bound"),
    P(CausalConvWithState, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(Col2Im, "no rule yet, perturbation of all inputs"),
    P(ConcatFromSequence, "control flow, sequences and optionals: no arithmetic of its own; bodies "
                          "are bounded node by node"),
    P(ConvInteger, "no rule yet, perturbation of all inputs"),
    P(DFT, "transforms: no rule yet, perturbation of all inputs"),
    P(DeformConv, "no rule yet, perturbation of all inputs"),
    P(Det, "no rule yet, perturbation of all inputs"),
    P(DynamicQuantizeLinear,
      "quantized arithmetic: integer outputs, rounding at the quantization step"),
    P(GRU, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(GridSample, "no rule yet, perturbation of all inputs"),
    P(If, "control flow, sequences and optionals: no arithmetic of its own; bodies are bounded "
          "node by node"),
    P(ImageDecoder, "detection: no rule yet, perturbation of all inputs"),
    P(LSTM, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(LinearAttention, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(Loop, "control flow, sequences and optionals: no arithmetic of its own; bodies are bounded "
            "node by node"),
    P(MatMulInteger, "no rule yet, perturbation of all inputs"),
    P(MaxRoiPool, "no rule yet, perturbation of all inputs"),
    P(Multinomial, "random: no rule, perturbation of all inputs"),
    P(NegativeLogLikelihoodLoss, "losses: no rule yet, perturbation of all inputs"),
    P(NonMaxSuppression, "detection: no rule yet, perturbation of all inputs"),
    [KILN_OP_NonZero] = {.rule = BND_NONZERO},
    P(Not, "integer, bool or raw bits: no float error to bound"),
    P(Optional, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                "bounded node by node"),
    P(OptionalGetElement, "control flow, sequences and optionals: no arithmetic of its own; bodies "
                          "are bounded node by node"),
    P(OptionalHasElement, "control flow, sequences and optionals: no arithmetic of its own; bodies "
                          "are bounded node by node"),
    P(Or, "integer, bool or raw bits: no float error to bound"),
    P(QLinearConv, "quantized arithmetic: integer outputs, rounding at the quantization step"),
    P(QLinearMatMul, "quantized arithmetic: integer outputs, rounding at the quantization step"),
    P(RNN, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(Range, "no rule yet, perturbation of all inputs"),
    P(RegexFullMatch, "strings: no float output"),
    P(RoiAlign, "detection: no rule yet, perturbation of all inputs"),
    P(RotaryEmbedding, "recurrences and attention: no rule yet, perturbation of all inputs"),
    P(STFT, "transforms: no rule yet, perturbation of all inputs"),
    P(Scan, "control flow, sequences and optionals: no arithmetic of its own; bodies are bounded "
            "node by node"),
    P(SequenceAt, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                  "bounded node by node"),
    P(SequenceConstruct, "control flow, sequences and optionals: no arithmetic of its own; bodies "
                         "are bounded node by node"),
    P(SequenceEmpty, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                     "bounded node by node"),
    P(SequenceErase, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                     "bounded node by node"),
    P(SequenceInsert, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                      "bounded node by node"),
    P(SequenceLength, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                      "bounded node by node"),
    P(SequenceMap, "control flow, sequences and optionals: no arithmetic of its own; bodies are "
                   "bounded node by node"),
    P(SoftmaxCrossEntropyLoss, "losses: no rule yet, perturbation of all inputs"),
    P(SplitToSequence, "control flow, sequences and optionals: no arithmetic of its own; bodies "
                       "are bounded node by node"),
    P(StringConcat, "strings: no float output"),
    P(StringNormalizer, "strings: no float output"),
    P(StringSplit, "strings: no float output"),
    P(TensorScatter, "no rule yet, perturbation of all inputs"),
    P(TfIdfVectorizer, "strings: no float output"),
    P(Unique, "no rule yet, perturbation of all inputs"),
    P(Xor, "integer, bool or raw bits: no float error to bound"),
};
#undef P

const bnd_opinfo *kiln_bnd_row(kiln_op op) {
  if (op <= 0 || op >= KILN_OP_COUNT) return NULL;
  const bnd_opinfo *r = &table[op];
  return r->rule != BND_PERTURB || r->perturb_why ? r : NULL;
}

const bnd_opinfo *kiln_bnd_info(kiln_op op) {
  static const bnd_opinfo perturb = {.rule = BND_PERTURB, .ulps = 32};
  if (op <= 0 || op >= KILN_OP_COUNT || table[op].rule == BND_PERTURB) return &perturb;
  return &table[op];
}
