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
 * Every op of ops.def not listed falls back to PERTURB (documented in docs/DESIGN.md). */
#define E(name, rule, ulps, absmag, absc, pole, mono, mask)                                       \
  [KILN_OP_##name] = {BND_##rule, ulps, absmag, absc, (pole) + 1, mono, mask}
static const bnd_opinfo table[KILN_OP_COUNT] = {
    /* exact or discrete */
    E(Shape, EXACT, 0, 0, 0, -1, 0, 0), E(Size, EXACT, 0, 0, 0, -1, 0, 0),
    E(Constant, EXACT, 0, 0, 0, -1, 0, 0), E(ConstantOfShape, EXACT, 0, 0, 0, -1, 0, 0),
    E(EyeLike, EXACT, 0, 0, 0, -1, 0, 0), E(RandomNormal, EXACT, 0, 0, 0, -1, 0, 0),
    E(RandomNormalLike, EXACT, 0, 0, 0, -1, 0, 0), E(RandomUniform, EXACT, 0, 0, 0, -1, 0, 0),
    E(RandomUniformLike, EXACT, 0, 0, 0, -1, 0, 0),
    E(HannWindow, EXACT, 8, 0, 1, -1, 0, 0), E(HammingWindow, EXACT, 8, 0, 1, -1, 0, 0),
    E(BlackmanWindow, EXACT, 8, 0, 1, -1, 0, 0), E(MelWeightMatrix, EXACT, 16, 0, 1, -1, 0, 0),
    E(Greater, DISCRETE, 0, 0, 0, -1, 0, 0), E(Less, DISCRETE, 0, 0, 0, -1, 0, 0),
    E(GreaterOrEqual, DISCRETE, 0, 0, 0, -1, 0, 0), E(LessOrEqual, DISCRETE, 0, 0, 0, -1, 0, 0),
    E(Equal, DISCRETE, 0, 0, 0, -1, 0, 0), E(Floor, DISCRETE, 0, 0, 0, -1, 0, 0),
    E(Ceil, DISCRETE, 0, 0, 0, -1, 0, 0), E(Round, DISCRETE, 0, 0, 0, -1, 0, 0),
    E(Sign, DISCRETE, 0, 0, 0, -1, 0, 0), E(IsNaN, DISCRETE, 0, 0, 0, -1, 0, 0),
    E(IsInf, DISCRETE, 0, 0, 0, -1, 0, 0), E(QuantizeLinear, DISCRETE, 2, 0, 0, -1, 0, 0),
    E(Cast, CAST, 0, 0, 0, -1, 0, 0), E(CastLike, CAST, 0, 0, 0, -1, 0, 0),
    E(ArgMax, ARGMINMAX, 0, 0, 0, -1, 0, 0), E(ArgMin, ARGMINMAX, 0, 0, 0, -1, 0, 0),
    E(TopK, TOPK, 0, 0, 0, -1, 0, 0), E(Hardmax, HARDMAX, 0, 0, 0, -1, 0, 0),
    /* data movement: err = op(err); mask: the data inputs (0: input 0) */
    E(Identity, MOVE, 0, 0, 0, -1, 0, 0), E(Reshape, MOVE, 0, 0, 0, -1, 0, 0),
    E(Transpose, MOVE, 0, 0, 0, -1, 0, 0), E(Squeeze, MOVE, 0, 0, 0, -1, 0, 0),
    E(Unsqueeze, MOVE, 0, 0, 0, -1, 0, 0), E(Flatten, MOVE, 0, 0, 0, -1, 0, 0),
    E(Slice, MOVE, 0, 0, 0, -1, 0, 0), E(Gather, MOVE, 0, 0, 0, -1, 0, 0),
    E(GatherElements, MOVE, 0, 0, 0, -1, 0, 0), E(GatherND, MOVE, 0, 0, 0, -1, 0, 0),
    E(Concat, MOVE, 0, 0, 0, -1, 0, ~0u), E(Split, MOVE, 0, 0, 0, -1, 0, 0),
    E(Expand, MOVE, 0, 0, 0, -1, 0, 0), E(Tile, MOVE, 0, 0, 0, -1, 0, 0),
    E(Pad, MOVE, 0, 0, 0, -1, 0, 1 | 4), E(DepthToSpace, MOVE, 0, 0, 0, -1, 0, 0),
    E(SpaceToDepth, MOVE, 0, 0, 0, -1, 0, 0), E(ReverseSequence, MOVE, 0, 0, 0, -1, 0, 0),
    E(Compress, MOVE, 0, 0, 0, -1, 0, 0), E(Dropout, MOVE, 0, 0, 0, -1, 0, 0),
    E(Trilu, MOVE, 0, 0, 0, -1, 0, 0), E(CenterCropPad, MOVE, 0, 0, 0, -1, 0, 0),
    E(Where, MOVE, 0, 0, 0, -1, 0, 2 | 4), E(ScatterElements, MOVE, 0, 0, 0, -1, 0, 1 | 4),
    E(ScatterND, MOVE, 0, 0, 0, -1, 0, 1 | 4), E(Scatter, MOVE, 0, 0, 0, -1, 0, 1 | 4),
    E(OneHot, MOVE, 0, 0, 0, -1, 0, 4), E(MaxUnpool, MOVE, 0, 0, 0, -1, 0, 0),
    E(Resize, MOVE, 0, 0, 0, -1, 0, 0), E(Upsample, MOVE, 0, 0, 0, -1, 0, 0),
    /* positive linear combinations: err = op(err) + gamma_K op(|x|) */
    E(Add, SUM, 0, 0, 0, -1, 0, ~0u), E(Sum, SUM, 0, 0, 0, -1, 0, ~0u),
    E(Mean, SUM, 0, 0, 0, -1, 0, ~0u), E(ReduceSum, SUM, 0, 0, 0, -1, 0, 0),
    E(ReduceMean, SUM, 0, 0, 0, -1, 0, 0), E(AveragePool, SUM, 0, 0, 0, -1, 0, 0),
    E(GlobalAveragePool, SUM, 0, 0, 0, -1, 0, 0), E(CumSum, SUM, 0, 0, 0, -1, 0, 0),
    E(ReduceL1, SUM, 0, 0, 0, -1, 0, 0), E(ReduceL2, SUM, 0, 0, 0, -1, 0, 0),
    E(LpPool, SUM, 0, 0, 0, -1, 0, 0), E(GlobalLpPool, SUM, 0, 0, 0, -1, 0, 0),
    E(Sub, SUB, 0, 0, 0, -1, 0, 0),
    /* multilinear contractions */
    E(Mul, MULTILIN, 0, 0, 0, -1, 0, ~0u), E(MatMul, MULTILIN, 0, 0, 0, -1, 0, ~0u),
    E(Conv, MULTILIN, 0, 0, 0, -1, 0, ~0u), E(ConvTranspose, MULTILIN, 0, 0, 0, -1, 0, ~0u),
    E(Einsum, MULTILIN, 0, 0, 0, -1, 0, ~0u), E(ReduceProd, MULTILIN, 0, 0, 0, -1, 0, 0),
    E(ReduceSumSquare, MULTILIN, 0, 0, 0, -1, 0, 0), E(CumProd, MULTILIN, 0, 0, 0, -1, 0, 0), E(Gemm, GEMM, 0, 0, 0, -1, 0, 0),
    /* elementwise, by corners of the input boxes: ulps, absmag, absc, pole input, monotone */
    E(Abs, CORNER, 0, 0, 0, -1, 0, 0), E(Neg, CORNER, 0, 0, 0, -1, 0, 0),
    E(Relu, CORNER, 0, 0, 0, -1, 1, 0), E(Max, CORNER, 0, 0, 0, -1, 1, 0),
    E(Min, CORNER, 0, 0, 0, -1, 1, 0), E(Clip, CORNER, 0, 0, 0, -1, 1, 0),
    E(ThresholdedRelu, CORNER, 0, 0, 0, -1, 0, 0), E(Shrink, CORNER, 1, 0, 0, -1, 0, 0),
    E(Div, CORNER, 1, 0, 0, 1, 0, 0), E(Reciprocal, CORNER, 1, 0, 0, 0, 0, 0),
    E(Sqrt, CORNER, 1, 0, 0, -1, 1, 0), E(LeakyRelu, CORNER, 1, 0, 0, -1, 0, 0),
    E(PRelu, CORNER, 1, 0, 0, -1, 0, 0), E(Mod, CORNER, 1, 0, 0, -1, 0, 0),
    E(HardSigmoid, CORNER, 2, 1, 0, -1, 0, 0), E(HardSwish, CORNER, 4, 1, 0, -1, 0, 0),
    E(Exp, CORNER, 4, 0, 0, -1, 1, 0), E(Log, CORNER, 4, 0, 1, 0, 1, 0),
    E(Tanh, CORNER, 4, 0, 1, -1, 1, 0), E(Sigmoid, CORNER, 6, 0, 0, -1, 1, 0),
    E(Erf, CORNER, 8, 0, 0, -1, 1, 0), E(Softplus, CORNER, 6, 0, 0, -1, 1, 0),
    E(Softsign, CORNER, 3, 0, 0, -1, 1, 0), E(Elu, CORNER, 4, 0, 2, -1, 0, 0),
    E(Celu, CORNER, 4, 0, 2, -1, 0, 0), E(Selu, CORNER, 4, 0, 4, -1, 0, 0),
    E(Gelu, CORNER, 10, 1, 0, -1, 0, 0), E(Mish, CORNER, 12, 1, 0, -1, 0, 0),
    E(Swish, CORNER, 8, 1, 0, -1, 0, 0), E(Pow, CORNER, 8, 0, 0, -1, 0, 0),
    E(Acos, CORNER, 4, 0, 1, -1, 1, 0), E(Asin, CORNER, 4, 0, 1, -1, 1, 0),
    E(Atan, CORNER, 4, 0, 1, -1, 1, 0), E(Acosh, CORNER, 4, 0, 1, -1, 1, 0),
    E(Asinh, CORNER, 4, 0, 1, -1, 1, 0), E(Atanh, CORNER, 4, 0, 1, -1, 1, 0),
    E(Sinh, CORNER, 4, 0, 1, -1, 1, 0), E(Cosh, CORNER, 4, 0, 1, -1, 0, 0),
    E(Tan, CORNER, 4, 1, 1, -1, 0, 0), E(DequantizeLinear, CORNER, 1, 0, 0, -1, 0, 0),
    E(BatchNormalization, CORNER, 6, 0, 0, -1, 0, 0),
    E(Sin, LIPSCHITZ, 4, 1, 0, -1, 0, 0), E(Cos, LIPSCHITZ, 4, 1, 0, -1, 0, 0),
    /* monotone increasing reductions: corners of all inputs together */
    E(ReduceMax, REDUCE_MONO, 0, 0, 0, -1, 1, 0), E(ReduceMin, REDUCE_MONO, 0, 0, 0, -1, 1, 0),
    E(MaxPool, REDUCE_MONO, 0, 0, 0, -1, 1, 0), E(GlobalMaxPool, REDUCE_MONO, 0, 0, 0, -1, 1, 0),
    E(ReduceLogSumExp, REDUCE_MONO, 4, 0, 0, -1, 1, 0),
    E(ReduceLogSum, REDUCE_MONO, 4, 0, 0, -1, 1, 0),
    /* composites by decomposition */
    E(Softmax, SOFTMAX, 0, 0, 0, -1, 0, 0), E(LogSoftmax, SOFTMAX, 0, 0, 0, -1, 0, 0),
    E(LayerNormalization, NORM, 0, 0, 0, -1, 0, 0), E(RMSNormalization, NORM, 0, 0, 0, -1, 0, 0),
    E(InstanceNormalization, NORM, 0, 0, 0, -1, 0, 0),
    E(GroupNormalization, NORM, 0, 0, 0, -1, 0, 0),
    E(MeanVarianceNormalization, NORM, 0, 0, 0, -1, 0, 0),
    E(LpNormalization, NORM, 0, 0, 0, -1, 0, 0), E(LRN, LRN, 0, 0, 0, -1, 0, 0),
};
#undef E

const bnd_opinfo *kiln_bnd_info(kiln_op op) {
  static const bnd_opinfo perturb = {BND_PERTURB, 32, 0, 0, 0, 0, 0};
  if (op <= 0 || op >= KILN_OP_COUNT || table[op].rule == BND_PERTURB) return &perturb;
  return &table[op];
}
