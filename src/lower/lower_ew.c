/* Elementwise lowering: the compute definition of every pure-math elementwise op (one
 * output element as an expression of one element of each input) and the kernel of an
 * elementwise group (a DAG of such ops with one output shape, broadcasting inputs by index
 * arithmetic).
 *
 * Precision: f32/f16/bf16 compute in F32 and f64 in F64, except the ops whose F32 formula
 * cancels (Elu, Selu, Celu, Softplus, Mish, Gelu, Swish): those compute in F64 and round
 * once. Integers and bool are exact in their own type. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"
#include "ops/op_desc.h"

/* ---- op classes ----
 * Which ops have an elementwise compute definition here, and the dtypes it takes, is the
 * op descriptor's .ew (ops/op_desc.h); the compute width its .compute_bits. */
static kiln_ew_dtypes class_of(kiln_op op) {
  return kiln_op_desc_of(op)->ew;
}

static bool legacy_broadcast(const kiln_node *n) {
  const kiln_attr *a = kiln_node_attr(n, "broadcast");
  /* mutant 342: the boundary taken as opset 6 (Add-6 still has the broadcast attribute) */
  return n->opset < (KILN_MUTANT(342) ? 6 : 7) && a && a->kind == KILN_ATTR_INT && a->i != 0;
}

static bool is_f8(kiln_dtype t) {
  return t == KILN_F8E4M3FN || t == KILN_F8E4M3FNUZ || t == KILN_F8E5M2 || t == KILN_F8E5M2FNUZ;
}

/* A type this node may load or store. float8 values are storage only: no ONNX operator other
 * than the conversions computes on them, so Cast and CastLike take them (the tile IR's casts
 * and the C helpers decode exactly and encode with one rounding to nearest even); a cast to
 * float8 with saturate=0 (out of range gives NaN or infinity, not the largest finite value)
 * is left to the reference kernel, as the helpers saturate. */
static bool ew_dtype_ok(const kiln_node *n, kiln_dtype t, kiln_dtype out) {
  if (kiln_lower_dtype_ok(t)) return true;
  if (!is_f8(t) || (n->op != KILN_OP_Cast && n->op != KILN_OP_CastLike)) return false;
  if (!is_f8(out)) return true; /* from float8: saturate does not apply */
  kiln_attrs_cast ca;
  kiln_status st = kiln_attrs_cast_decode(n, &ca);
  if (st) return kiln_status_free(st), false;
  return ca.saturate;
}

bool kiln_lower_is_elementwise(const kiln_graph *g, const kiln_node *n) {
  kiln_ew_dtypes c = class_of(n->op);
  if (c == KILN_EWD_NONE || n->n_outputs < 1 || n->outputs[0] < 0 || legacy_broadcast(n))
    return false;
  for (int k = 1; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0) return false;
  if (!kiln_lower_node_static(g, n)) return false;
  const kiln_type *out = kiln_lower_static(g, n->outputs[0]);
  if (!ew_dtype_ok(n, out->dtype, out->dtype)) return false;
  for (int k = 0; k < n->n_inputs; k++) {
    if (n->inputs[k] < 0) continue;
    const kiln_type *t = kiln_lower_static(g, n->inputs[k]);
    if (!ew_dtype_ok(n, t->dtype, out->dtype)) return false;
    bool data = !(n->op == KILN_OP_Where && k == 0) && !(n->op == KILN_OP_Pow && k == 1) &&
                !(n->op == KILN_OP_CastLike && k == 1);
    if (data && !kiln_ew_dtypes_take(c, t->dtype)) return false;
    if (t->rank > out->rank) return false;
  }
  if (n->op == KILN_OP_Pow && !kiln_dtype_is_float(kiln_lower_static(g, n->inputs[1])->dtype) &&
      !kiln_dtype_is_int(kiln_lower_static(g, n->inputs[1])->dtype))
    return false;
  return n->n_inputs >= 1;
}

/* ---- expression helpers ---- */
static kiln_texpr *num(kiln_tkernel *k, kiln_dtype t, double v) {
  return kiln_dtype_is_float(t) ? kiln_tfloat(k, t, v) : kiln_tconst_int(k, t, (int64_t)v);
}
static kiln_texpr *bin(kiln_tkernel *k, kiln_top op, kiln_texpr *a, kiln_texpr *b) {
  return kiln_tbin(k, op, a, b);
}
static kiln_texpr *un(kiln_tkernel *k, kiln_top op, kiln_texpr *a) {
  return kiln_tun(k, op, a);
}
static kiln_texpr *sel(kiln_tkernel *k, kiln_texpr *c, kiln_texpr *a, kiln_texpr *b) {
  return kiln_tselect(k, c, a, b);
}

/* sigmoid(a) = 1 / (1 + exp(-a)) */
/* sigmoid(a) = (a >= 0 ? 1 : e) / (1 + e) with e = exp(-|a|): e never overflows, so a
 * result in the type's subnormal range (a below -88.7 in f32, below -11.1 in f16) is not
 * flushed to 0 as 1 / (1 + exp(-a)) flushes it. */
static kiln_texpr *sigmoid(kiln_tkernel *k, kiln_texpr *a) {
  kiln_dtype t = a->type;
  kiln_texpr *e = un(k, KILN_TOP_EXP, /* mutant 287: exp(-a), the abs left out */
                     un(k, KILN_TOP_NEG, KILN_MUTANT(287) ? a : un(k, KILN_TOP_ABS, a)));
  kiln_texpr *top = sel(k, bin(k, KILN_TOP_GE, a, num(k, t, 0)), num(k, t, 1), e);
  return bin(k, KILN_TOP_DIV, top, bin(k, KILN_TOP_ADD, num(k, t, 1), e));
}

/* log(1 + e) accurate for tiny e, without a log1p op: with u = 1 + e rounded, e * (log(u) /
 * (u - 1)) (e itself when u == 1) is within a few ulps (Goldberg's formula); log(1 + e) alone
 * is 0 for e below the unit roundoff, which Pow or Div after it turns into Inf. The quotient
 * first: log(u) * e is about e^2, an f16 subnormal for e near 1e-3 (5% spacing), where the
 * quotient is near 1. */
static kiln_texpr *log1p_(kiln_tkernel *k, kiln_texpr *e) {
  kiln_dtype t = e->type;
  kiln_texpr *u = bin(k, KILN_TOP_ADD, num(k, t, 1), e);
  kiln_texpr *d = bin(k, KILN_TOP_SUB, u, num(k, t, 1));
  kiln_texpr *q = bin(k, KILN_TOP_MUL, e, bin(k, KILN_TOP_DIV, un(k, KILN_TOP_LOG, u), d));
  return sel(k, bin(k, KILN_TOP_EQ, d, num(k, t, 0)), e, q);
}

/* softplus(a) = a > 0 ? a + log1p(exp(-a)) : log1p(exp(a)) */
static kiln_texpr *softplus(kiln_tkernel *k, kiln_texpr *a) {
  kiln_dtype t = a->type;
  kiln_texpr *pos = bin(k, KILN_TOP_ADD, a, log1p_(k, un(k, KILN_TOP_EXP, un(k, KILN_TOP_NEG, a))));
  kiln_texpr *neg = log1p_(k, un(k, KILN_TOP_EXP, a));
  if (KILN_MUTANT(90)) return neg; /* mutant 90: log1p(exp(a)) for every a (overflows) */
  return sel(k, bin(k, KILN_TOP_GT, a, num(k, t, 0)), pos, neg);
}

/* exp(a) - 1 */
static kiln_texpr *expm1_(kiln_tkernel *k, kiln_texpr *a) {
  return bin(k, KILN_TOP_SUB, un(k, KILN_TOP_EXP, a), num(k, a->type, 1));
}

static kiln_texpr *clamp01(kiln_tkernel *k, kiln_texpr *a) {
  return bin(k, KILN_TOP_MIN, bin(k, KILN_TOP_MAX, a, num(k, a->type, 0)), num(k, a->type, 1));
}

/* Ops computed in F64 for f32 data (their F32 formula cancels). */
static bool wide_op(kiln_op op) {
  return kiln_op_desc_of(op)->compute_bits == 64;
}

/* erf for F32 without a library call (the loops around it then vectorize): x P(x^2) /
 * Q(x^2) on x clamped to [-3.925, 3.925] (where erf rounds to +-1 in F32), the result
 * clamped to [-1, 1]; NaN stays NaN (min/max propagate it). The coefficients are a
 * weighted least-squares fit of the relative error (fitted for this file); evaluated in
 * F32 the result is within 4e-7 relative of erf over all floats. */
static kiln_texpr *erf_f32(kiln_tkernel *k, kiln_texpr *a) {
  static const double p[] = {1.1283791693023677,    0.18336482663379328,    0.053390398856386766,
                             0.0036886364140533484, 0.00034830995565618764, 3.867429400492006e-06,
                             -8.704377357782178e-09};
  static const double q[] = {1.0,
                             0.4958362215316966,
                             0.11259450802762053,
                             0.015026989790639076,
                             0.001233356556611583,
                             5.546782766641112e-05};
  kiln_dtype t = a->type;
  kiln_texpr *x =
      bin(k, KILN_TOP_MIN, bin(k, KILN_TOP_MAX, a, num(k, t, -3.925)), num(k, t, 3.925));
  kiln_texpr *z = bin(k, KILN_TOP_MUL, x, x);
  int np = (int)(sizeof p / sizeof p[0]), nq = (int)(sizeof q / sizeof q[0]);
  kiln_texpr *pp = num(k, t, p[np - 1]), *qq = num(k, t, q[nq - 1]);
  for (int i = np - 2; i >= 0; i--)
    pp = bin(k, KILN_TOP_ADD, bin(k, KILN_TOP_MUL, pp, z), num(k, t, p[i]));
  for (int i = nq - 2; i >= 0; i--)
    qq = bin(k, KILN_TOP_ADD, bin(k, KILN_TOP_MUL, qq, z), num(k, t, q[i]));
  kiln_texpr *r = bin(k, KILN_TOP_DIV, bin(k, KILN_TOP_MUL, x, pp), qq);
  return bin(k, KILN_TOP_MIN, bin(k, KILN_TOP_MAX, r, num(k, t, -1)), num(k, t, 1));
}

/* ---- unary float math ---- */
static kiln_texpr *intrinsic(kiln_tkernel *k, kiln_op op, kiln_texpr *a) {
  if (op == KILN_OP_Erf && a->type == KILN_F32) return erf_f32(k, a);
  static const struct {
    kiln_op op;
    kiln_top top;
  } map[] = {
      {KILN_OP_Acos, KILN_TOP_ACOS},   {KILN_OP_Acosh, KILN_TOP_ACOSH},
      {KILN_OP_Asin, KILN_TOP_ASIN},   {KILN_OP_Asinh, KILN_TOP_ASINH},
      {KILN_OP_Atan, KILN_TOP_ATAN},   {KILN_OP_Atanh, KILN_TOP_ATANH},
      {KILN_OP_Cos, KILN_TOP_COS},     {KILN_OP_Cosh, KILN_TOP_COSH},
      {KILN_OP_Sin, KILN_TOP_SIN},     {KILN_OP_Sinh, KILN_TOP_SINH},
      {KILN_OP_Tan, KILN_TOP_TAN},     {KILN_OP_Tanh, KILN_TOP_TANH},
      {KILN_OP_Erf, KILN_TOP_ERF},     {KILN_OP_Exp, KILN_TOP_EXP},
      {KILN_OP_Log, KILN_TOP_LOG},     {KILN_OP_Sqrt, KILN_TOP_SQRT},
      {KILN_OP_Ceil, KILN_TOP_CEIL},   {KILN_OP_Floor, KILN_TOP_FLOOR},
      {KILN_OP_Round, KILN_TOP_ROUND},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (map[i].op == op) return un(k, map[i].top, a);
  return NULL;
}

/* The activations with float attributes (at: the node's, kiln_attrs_ew_decode). */
static kiln_texpr *activation(kiln_tkernel *k, const kiln_node *n, const kiln_attrs_ew *at,
                              kiln_texpr *a) {
  kiln_dtype t = a->type;
  kiln_texpr *zero = num(k, t, 0);
  switch (n->op) {
  case KILN_OP_Reciprocal: return bin(k, KILN_TOP_DIV, num(k, t, 1), a);
  case KILN_OP_Sigmoid: return sigmoid(k, a);
  case KILN_OP_Softplus: return softplus(k, a);
  case KILN_OP_Softsign: /* mutant 19: |a| written as a */
    return bin(k, KILN_TOP_DIV, a,
               bin(k, KILN_TOP_ADD, num(k, t, 1), KILN_MUTANT(19) ? a : un(k, KILN_TOP_ABS, a)));
  case KILN_OP_Mish: return bin(k, KILN_TOP_MUL, a, un(k, KILN_TOP_TANH, softplus(k, a)));
  case KILN_OP_HardSwish:
    return bin(
        k, KILN_TOP_MUL, a,
        clamp01(k, bin(k, KILN_TOP_ADD, /* mutant 233: HardSigmoid's default alpha 0.2 */
                       bin(k, KILN_TOP_MUL, a, num(k, t, KILN_MUTANT(233) ? 0.2 : at->alpha)),
                       num(k, t, at->beta)))); /* the ONNX function body's HardSigmoid */
  case KILN_OP_Elu: {
    kiln_texpr *em1 = expm1_(k, a);
    if (KILN_MUTANT(18)) em1 = un(k, KILN_TOP_EXP, a); /* mutant 18: exp(a) for exp(a) - 1 */
    return sel(k, bin(k, KILN_TOP_LT, a, zero), bin(k, KILN_TOP_MUL, num(k, t, at->alpha), em1), a);
  }
  case KILN_OP_Celu: {
    kiln_texpr *al = num(k, t, at->alpha);
    kiln_texpr *e = bin(k, KILN_TOP_MUL, al, /* mutant 136: a not divided by alpha */
                        expm1_(k, KILN_MUTANT(136) ? a : bin(k, KILN_TOP_DIV, a, al)));
    return bin(k, KILN_TOP_ADD, bin(k, KILN_TOP_MAX, zero, a), bin(k, KILN_TOP_MIN, zero, e));
  }
  case KILN_OP_Selu: {
    double al = at->alpha, ga = at->gamma;
    return sel(k, bin(k, KILN_TOP_GT, a, zero), bin(k, KILN_TOP_MUL, num(k, t, ga), a),
               bin(k, KILN_TOP_MUL, num(k, t, KILN_MUTANT(231) ? al : ga * al), expm1_(k, a)));
    /* mutant 231: gamma left out of the negative branch */
  }
  case KILN_OP_HardSigmoid: {
    kiln_texpr *lin =
        bin(k, KILN_TOP_ADD, bin(k, KILN_TOP_MUL, num(k, t, at->alpha), a), num(k, t, at->beta));
    return clamp01(k, lin);
  }
  case KILN_OP_LeakyRelu:
    return sel(k, bin(k, KILN_TOP_LT, a, zero), bin(k, KILN_TOP_MUL, num(k, t, at->alpha), a), a);
  case KILN_OP_ThresholdedRelu:
    return sel(k, bin(k, KILN_MUTANT(213) ? KILN_TOP_GE : KILN_TOP_GT, a, num(k, t, at->alpha)), a,
               zero); /* mutant 213: x == alpha kept (>= for >) */
  case KILN_OP_Swish:
    return bin(k, KILN_TOP_MUL, a, sigmoid(k, bin(k, KILN_TOP_MUL, num(k, t, at->alpha), a)));
  case KILN_OP_Shrink: {
    double l = at->lambd, b = at->bias;
    kiln_texpr *hi =
        sel(k, bin(k, KILN_TOP_GT, a, num(k, t, l)), bin(k, KILN_TOP_SUB, a, num(k, t, b)), zero);
    return sel(k, bin(k, KILN_MUTANT(321) ? KILN_TOP_LE : KILN_TOP_LT, a, num(k, t, -l)),
               /* mutant 137: bias subtracted; mutant 321: x == -lambd shrunk (<= for <) */
               bin(k, KILN_MUTANT(137) ? KILN_TOP_SUB : KILN_TOP_ADD, a, num(k, t, b)), hi);
  }
  default: return NULL;
  }
}

static kiln_texpr *gelu(kiln_tkernel *k, const kiln_attrs_ew *at, kiln_texpr *a) {
  kiln_dtype t = a->type;
  kiln_texpr *half_a = bin(k, KILN_TOP_MUL, num(k, t, 0.5), a);
  kiln_texpr *inner;
  if (at->gelu == KILN_GELU_NONE) {
    inner = un(k, KILN_TOP_ERF, bin(k, KILN_TOP_DIV, a, num(k, t, sqrt(2.0))));
  } else {
    kiln_texpr *cube = bin(k, KILN_TOP_MUL, bin(k, KILN_TOP_MUL, a, a), a);
    /* the float constants of the ONNX function body (kiln_attrs_ew_decode) */
    kiln_texpr *s = bin(k, KILN_TOP_ADD, a, bin(k, KILN_TOP_MUL, num(k, t, at->gelu_c), cube));
    double gk = KILN_MUTANT(288) ? (double)at->gelu_k : sqrt((double)at->gelu_k); /* mutant 288 */
    inner = un(k, KILN_TOP_TANH, bin(k, KILN_TOP_MUL, num(k, t, gk), s)); /* 288: 2/pi unrooted */
  }
  return bin(k, KILN_TOP_MUL, half_a, bin(k, KILN_TOP_ADD, num(k, t, 1), inner));
}

static kiln_texpr *isinf_(kiln_tkernel *k, const kiln_attrs_ew *at, kiln_texpr *a) {
  bool neg = at->detect_negative || KILN_MUTANT(100), /* mutant 100: detect_* ignored */
      pos = at->detect_positive || KILN_MUTANT(100);
  kiln_texpr *zero = num(k, a->type, 0);
  kiln_texpr *sign = kiln_tconst_int(k, KILN_BOOL, 0);
  if (neg) sign = bin(k, KILN_TOP_OR, sign, bin(k, KILN_TOP_LT, a, zero));
  if (pos) sign = bin(k, KILN_TOP_OR, sign, bin(k, KILN_TOP_GT, a, zero));
  return bin(k, KILN_TOP_AND, un(k, KILN_TOP_ISINF, a), sign);
}

/* ---- integer-aware arithmetic ---- */
static bool is_signed(kiln_dtype t) {
  return kiln_dtype_class_of(t) == KILN_CLASS_SINT;
}

/* a / b; integers: a zero divisor gives 0 (the reference reports an error), -1 negates */
static kiln_texpr *divide(kiln_tkernel *k, kiln_texpr *a, kiln_texpr *b) {
  kiln_dtype t = a->type;
  if (kiln_dtype_is_float(t)) return bin(k, KILN_TOP_DIV, a, b);
  kiln_texpr *safe_b = sel(k, bin(k, KILN_TOP_EQ, b, num(k, t, 0)), num(k, t, 1), b);
  kiln_texpr *q = bin(k, KILN_TOP_DIV, a, safe_b);
  if (is_signed(t) || KILN_MUTANT(204)) { /* mutant 204: unsigned too (b = 255 taken for -1) */
    safe_b = sel(k, bin(k, KILN_TOP_EQ, b, num(k, t, -1)), num(k, t, 1), safe_b);
    q = sel(k, bin(k, KILN_TOP_EQ, b, num(k, t, -1)), un(k, KILN_TOP_NEG, a),
            bin(k, KILN_TOP_DIV, a, safe_b));
  }
  return sel(k, bin(k, KILN_TOP_EQ, b, num(k, t, 0)), num(k, t, 0), q);
}

/* Mod: floats fmod; integers with fmod=0 take the sign of the divisor (Python). */
static kiln_texpr *modulo(kiln_tkernel *k, const kiln_attrs_ew *at, kiln_texpr *a, kiln_texpr *b) {
  kiln_dtype t = a->type;
  if (kiln_dtype_is_float(t)) return bin(k, KILN_TOP_MOD, a, b);
  bool fmod_ = at->fmod;
  kiln_texpr *bad = bin(k, KILN_TOP_EQ, b, num(k, t, 0));
  if (is_signed(t)) bad = bin(k, KILN_TOP_OR, bad, bin(k, KILN_TOP_EQ, b, num(k, t, -1)));
  kiln_texpr *safe_b = sel(k, bad, num(k, t, 1), b);
  kiln_texpr *r = bin(k, KILN_TOP_MOD, a, safe_b);
  if (is_signed(t) && !fmod_ && !KILN_MUTANT(23)) { /* mutant 23: C remainder, sign of a */
    kiln_texpr *fix = bin(k, KILN_TOP_AND, bin(k, KILN_TOP_NE, r, num(k, t, 0)),
                          bin(k, KILN_TOP_NE, bin(k, KILN_TOP_LT, r, num(k, t, 0)),
                              bin(k, KILN_TOP_LT, b, num(k, t, 0))));
    r = sel(k, fix, bin(k, KILN_TOP_ADD, r, safe_b), r);
  }
  return sel(k, bad, num(k, t, 0), r);
}

static kiln_texpr *sign(kiln_tkernel *k, kiln_texpr *a) {
  kiln_dtype t = a->type;
  kiln_texpr *zero = num(k, t, 0);
  /* mutant 203: a float neither > 0 nor < 0 gives the constant 0 (NaN becomes 0) */
  kiln_texpr *rest =
      kiln_dtype_is_float(t) && !KILN_MUTANT(203) ? bin(k, KILN_TOP_MUL, a, zero) : zero;
  if (!kiln_dtype_is_float(t) && !is_signed(t))
    return sel(k, bin(k, KILN_TOP_NE, a, zero), num(k, t, 1), zero);
  return sel(k, bin(k, KILN_TOP_GT, a, zero), num(k, t, 1),
             sel(k, bin(k, KILN_TOP_LT, a, zero), num(k, t, -1), rest));
}

static kiln_texpr *shift(kiln_tkernel *k, const kiln_attrs_ew *at, kiln_texpr *a, kiln_texpr *b) {
  bool right = at->shift_right;
  kiln_texpr *a64 = kiln_tcast(k, KILN_U64, a), *b64 = kiln_tcast(k, KILN_U64, b);
  kiln_texpr *big = bin(k, KILN_TOP_GE, b64, /* mutant 177: a limit of 32 bits */
                        kiln_tconst_int(k, KILN_U64, KILN_MUTANT(177) ? 32 : 64));
  kiln_texpr *safe = sel(k, big, kiln_tconst_int(k, KILN_U64, 0), b64);
  kiln_texpr *r = bin(k, right ? KILN_TOP_SHR : KILN_TOP_SHL, a64, safe);
  return kiln_tcast(k, a->type, sel(k, big, kiln_tconst_int(k, KILN_U64, 0), r));
}

/* Clip: a < lo -> lo; then a > hi -> hi (bounds from attributes before opset 11). */
static kiln_texpr *clip(kiln_tkernel *k, const kiln_node *n, const kiln_attrs_ew *at,
                        kiln_texpr *const *x) {
  kiln_texpr *a = x[0], *lo = NULL, *hi = NULL;
  if (n->opset < 11 + KILN_MUTANT(316)) { /* mutant 316: Clip-11 read as Clip-6 (attributes) */
    lo = num(k, a->type, at->min);
    hi = num(k, a->type, at->max);
  } else {
    lo = n->n_inputs > 1 ? x[1] : NULL;
    hi = n->n_inputs > 2 ? x[2] : NULL;
  }
  if (hi && KILN_MUTANT(178)) a = sel(k, bin(k, KILN_TOP_GT, a, hi), hi, a); /* mutant 178 */
  if (lo) a = sel(k, bin(k, KILN_TOP_LT, a, lo), lo, a);
  if (hi && !KILN_MUTANT(178)) a = sel(k, bin(k, KILN_TOP_GT, a, hi), hi, a);
  return a;
}

/* Fold of a variadic op over its inputs (Max/Min/Sum/Mean). */
static kiln_texpr *fold(kiln_tkernel *k, kiln_top op, int n, kiln_texpr *const *x) {
  kiln_texpr *r = x[0];
  for (int i = 1; i < n; i++) r = bin(k, op, r, x[i]);
  return r;
}

static kiln_status cast_to(kiln_tkernel *k, kiln_dtype to, kiln_texpr *a, kiln_texpr **out) {
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_ELEMENTWISE, to);
  if (to == KILN_BOOL && a->type != KILN_BOOL &&
      !(KILN_MUTANT(206) && kiln_dtype_is_float(a->type)))
    *out = bin(k, KILN_TOP_NE, a, num(k, a->type, 0)); /* mutant 206: floats converted as ints */
  else if (KILN_MUTANT(206) && to == KILN_BOOL && a->type != KILN_BOOL)
    *out = kiln_tcast(k, ct, kiln_tcast(k, KILN_I64, a));
  else if (KILN_MUTANT(22) && kiln_dtype_is_float(a->type) && kiln_dtype_is_int(ct))
    *out = kiln_tcast(k, ct, un(k, KILN_TOP_ROUND, a)); /* mutant 22: rounds, not truncates */
  else if (kiln_dtype_is_float(to) && to != ct && a->type != to &&
           !(KILN_MUTANT(350) && to == KILN_F16))   /* mutant 350: only bf16 rounded */
    *out = kiln_tcast(k, ct, kiln_tcast(k, to, a)); /* round to the storage type (f16, bf16) */
  else *out = kiln_tcast(k, ct, a);
  return KILN_OK;
}

static kiln_status binary(kiln_tkernel *k, const kiln_node *n, kiln_texpr *const *x,
                          kiln_texpr **out) {
  kiln_texpr *a = x[0], *b = n->n_inputs > 1 ? x[1] : NULL;
  static const struct {
    kiln_op op;
    kiln_top top;
  } map[] = {
      {KILN_OP_Add, KILN_TOP_ADD},      {KILN_OP_Sub, KILN_TOP_SUB},
      {KILN_OP_Mul, KILN_TOP_MUL},      {KILN_OP_Equal, KILN_TOP_EQ},
      {KILN_OP_Greater, KILN_TOP_GT},   {KILN_OP_GreaterOrEqual, KILN_TOP_GE},
      {KILN_OP_Less, KILN_TOP_LT},      {KILN_OP_LessOrEqual, KILN_TOP_LE},
      {KILN_OP_And, KILN_TOP_AND},      {KILN_OP_Or, KILN_TOP_OR},
      {KILN_OP_Xor, KILN_TOP_XOR},      {KILN_OP_BitwiseAnd, KILN_TOP_AND},
      {KILN_OP_BitwiseOr, KILN_TOP_OR}, {KILN_OP_BitwiseXor, KILN_TOP_XOR},
  };
  for (size_t i = 0; b && i < sizeof map / sizeof map[0]; i++)
    if (map[i].op == n->op) return *out = bin(k, map[i].top, a, b), KILN_OK;
  *out = NULL;
  return KILN_OK;
}

static kiln_status expr_of(kiln_tkernel *k, const kiln_node *n, kiln_texpr *const *x,
                           kiln_dtype out_dt, kiln_texpr **out) {
  kiln_texpr *a = x[0], *b = n->n_inputs > 1 ? x[1] : NULL;
  KILN_TRY(binary(k, n, x, out));
  if (*out) return KILN_OK;
  kiln_attrs_ew at;
  KILN_TRY(kiln_attrs_ew_decode(n, &at));
  if ((*out = intrinsic(k, n->op, a)) || (*out = activation(k, n, &at, a))) return KILN_OK;
  bool ok = true;
  switch (n->op) {
  case KILN_OP_Identity: *out = a; break;
  case KILN_OP_Abs:
    /* mutant 344: only 32- and 64-bit signed integers taken as signed (i8, i16 left as is) */
    *out = (is_signed(a->type) && (!KILN_MUTANT(344) || kiln_dtype_size(a->type) >= 4)) ||
                   kiln_dtype_is_float(a->type)
               ? un(k, KILN_TOP_ABS, a)
               : a;
    break;
  case KILN_OP_Neg: *out = un(k, KILN_TOP_NEG, a); break;
  case KILN_OP_Sign: *out = sign(k, a); break;
  case KILN_OP_Relu: /* mutant 99: a > 0 ? a : 0 (NaN becomes 0) */
    *out = KILN_MUTANT(99)
               ? sel(k, bin(k, KILN_TOP_GT, a, num(k, a->type, 0)), a, num(k, a->type, 0))
               : sel(k, bin(k, KILN_TOP_LT, a, num(k, a->type, 0)), num(k, a->type, 0), a);
    break;
  case KILN_OP_PRelu:
    *out = sel(k, bin(k, KILN_TOP_LT, a, num(k, a->type, 0)), bin(k, KILN_TOP_MUL, a, b), a);
    break;
  case KILN_OP_Not: *out = un(k, KILN_TOP_NOT, a); break;
  case KILN_OP_BitwiseNot: *out = un(k, KILN_TOP_BITNOT, a); break;
  case KILN_OP_IsNaN: *out = un(k, KILN_TOP_ISNAN, a); break;
  case KILN_OP_IsInf: *out = isinf_(k, &at, a); break;
  case KILN_OP_Gelu: *out = gelu(k, &at, a); break;
  case KILN_OP_Div: *out = divide(k, a, b); break;
  case KILN_OP_Mod: *out = modulo(k, &at, a, b); break;
  case KILN_OP_Pow: /* mutant 232: the base cast to the exponent's type */
    *out = KILN_MUTANT(232) && b->type != a->type
               ? kiln_tcast(k, a->type, bin(k, KILN_TOP_POW, kiln_tcast(k, b->type, a), b))
               : bin(k, KILN_TOP_POW, a, kiln_tcast(k, a->type, b));
    break;
  case KILN_OP_BitShift: *out = shift(k, &at, a, b); break;
  case KILN_OP_Clip: *out = clip(k, n, &at, x); break;
  case KILN_OP_Max: *out = fold(k, KILN_TOP_MAX, n->n_inputs, x); break;
  case KILN_OP_Min: *out = fold(k, KILN_TOP_MIN, n->n_inputs, x); break;
  case KILN_OP_Sum: *out = fold(k, KILN_TOP_ADD, n->n_inputs, x); break;
  case KILN_OP_Mean:
    *out = bin(k, KILN_TOP_DIV, fold(k, KILN_TOP_ADD, n->n_inputs, x), /* mutant 322: by 2 */
               num(k, a->type, KILN_MUTANT(322) && n->n_inputs > 2 ? 2 : n->n_inputs));
    break;
  case KILN_OP_Where: /* mutant 21: the two branches swapped */
    *out = KILN_MUTANT(21) ? sel(k, a, x[2], b) : sel(k, a, b, x[2]);
    break;
  case KILN_OP_Cast:
  case KILN_OP_CastLike: return cast_to(k, out_dt, a, out);
  default: ok = false;
  }
  if (!ok || !*out) return kiln_unsupported("no compute definition for %s", n->op_type);
  return KILN_OK;
}

kiln_status kiln_lower_ew_expr(kiln_lower_ctx *c, kiln_tkernel *k, const kiln_node *n,
                               kiln_texpr *const *operands, kiln_texpr **out) {
  *out = NULL;
  const kiln_graph *g = c->g;
  if (!kiln_lower_is_elementwise(g, n))
    return kiln_unsupported("%s is not a lowered elementwise op for these types", n->op_type);
  for (int i = 0; i < n->n_inputs; i++)
    if (!operands[i] && !(n->op == KILN_OP_Clip && i > 0))
      return kiln_invalid("%s: input %d is missing", n->op_type, i);
  kiln_dtype out_dt = g->values.data[n->outputs[0]].type.dtype;
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_ELEMENTWISE, out_dt);
  bool wide = wide_op(n->op) && ct == KILN_F32;
  kiln_texpr *x[16], **xs = x;
  if (n->n_inputs > 16) xs = kiln_arena_calloc(k->module->arena, (size_t)n->n_inputs, sizeof *xs);
  for (int i = 0; i < n->n_inputs; i++) {
    /* An operand computed by another class (a reduction's result, a contraction's
     * accumulator) enters in the elementwise compute type of its dtype: a no-op unless the
     * precision policy gives the classes different types. */
    kiln_texpr *a = operands[i];
    if (a && n->inputs[i] >= 0)
      a = kiln_tcast(k,
                     kiln_lower_compute_type(k, KILN_PREC_ELEMENTWISE,
                                             g->values.data[n->inputs[i]].type.dtype),
                     a);
    xs[i] = a && wide ? kiln_tcast(k, KILN_F64, a) : a;
  }
  kiln_texpr *r;
  KILN_TRY(expr_of(k, n, xs, out_dt, &r));
  *out = kiln_tcast(k, ct, r);
  return KILN_OK;
}

/* Size of e as a tree (a shared subexpression counts each time it is reached), counted up
 * to budget only: the walk is bounded whatever e is. */
static int expr_weight(const kiln_texpr *e, int budget) {
  if (!e || budget <= 0) return 0;
  int w = 1;
  if (e->kind == KILN_TE_LOAD) w += expr_weight(e->index, budget - w);
  if (e->kind == KILN_TE_OP || e->kind == KILN_TE_CAST)
    for (int a = 0; a < 3; a++) w += expr_weight(e->args[a], budget - w);
  return w;
}

enum { EXPR_INLINE_MAX = 64 }; /* nodes; far below KILN_TILE_MAX_DEPTH */

bool kiln_lower_expr_large(const kiln_texpr *e) {
  return expr_weight(e, EXPR_INLINE_MAX + 1) > EXPR_INLINE_MAX;
}

/* ---- the kernel of an elementwise group ---- */
typedef struct ew_state {
  kiln_lower_ctx *c;
  const kiln_group *grp;
  kiln_tkernel *k;
  kiln_step step;
  kiln_nest nest;
  const kiln_type *shape;
  kiln_texpr **val; /* per value id: its element expression (NULL until known) */
  int *uses;        /* per value id: reads inside the group */
} ew_state;

static bool is_out(const kiln_group *grp, int v) {
  for (int i = 0; i < grp->n_outputs; i++)
    if (grp->outputs[i] == v) return true;
  return false;
}

static bool bcastable(const kiln_type *t, const kiln_type *to) {
  if (t->rank > to->rank) return false;
  for (int d = 0; d < t->rank; d++) {
    int64_t a = t->dims[d].value, b = to->dims[to->rank - t->rank + d].value;
    if (a != 1 && a != b) return false;
  }
  return true;
}

static kiln_status ew_check(ew_state *s) {
  const kiln_graph *g = s->c->g;
  for (int i = 0; i < s->grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    const kiln_type *t = kiln_lower_static(g, n->outputs[0]);
    if (t->rank != s->shape->rank || kiln_lower_numel(t) != kiln_lower_numel(s->shape) ||
        !bcastable(t, s->shape))
      return kiln_unsupported("elementwise group with several output shapes");
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0 && !bcastable(kiln_lower_static(g, n->inputs[j]), s->shape))
        return kiln_unsupported("input does not broadcast to the group's shape");
  }
  return KILN_OK;
}

/* Binds the group's inputs, then its outputs, as kernel parameters. */
static void ew_params(ew_state *s) {
  for (int i = 0; i < s->grp->n_inputs; i++)
    kiln_lower_param_value(s->c, s->k, &s->step, s->grp->inputs[i]);
  for (int i = 0; i < s->grp->n_outputs; i++)
    kiln_lower_param_value(s->c, s->k, &s->step, s->grp->outputs[i]);
}

static int param_of(const ew_state *s, int v) {
  for (int i = 0; i < s->step.n_args; i++)
    if (s->step.args[i].kind == KILN_ARG_VALUE && s->step.args[i].id == v) return i;
  return -1;
}

static kiln_texpr *operand(ew_state *s, int v) {
  if (v < 0) return NULL;
  if (s->val[v]) return s->val[v];
  const kiln_type *t = kiln_lower_static(s->c->g, v);
  kiln_texpr *idx = kiln_lower_bcast_index(s->k, &s->nest, t);
  s->val[v] = kiln_lower_load(s->k, KILN_PREC_ELEMENTWISE, param_of(s, v), idx);
  return s->val[v];
}

static kiln_texpr *flat_index(ew_state *s) {
  kiln_texpr *idx[KILN_MAX_RANK];
  for (int d = 0; d < s->nest.rank; d++) idx[d] = kiln_tv(s->k, s->nest.vars[d]);
  return kiln_lower_index(s->k, s->nest.rank, s->nest.dims, idx);
}

/* Computes node n's element; values read more than once or stored become variables. */
static kiln_status ew_node(ew_state *s, const kiln_node *n) {
  kiln_texpr *ops[16], **x = ops;
  if (n->n_inputs > 16) x = kiln_arena_calloc(s->c->scratch, (size_t)n->n_inputs, sizeof *x);
  for (int i = 0; i < n->n_inputs; i++) x[i] = operand(s, n->inputs[i]);
  if (KILN_MUTANT(69) && n->n_inputs == 2 && n->inputs[0] >= 0 && n->inputs[1] >= 0) {
    /* mutant 69: two operands of one size taken as needing no broadcast */
    const kiln_type *ta = kiln_lower_static(s->c->g, n->inputs[0]);
    const kiln_type *tb = kiln_lower_static(s->c->g, n->inputs[1]);
    if (kiln_lower_numel(ta) == kiln_lower_numel(tb) && ta->rank == s->shape->rank)
      for (int i = 0; i < 2; i++)
        if (param_of(s, n->inputs[i]) >= 0)
          x[i] = kiln_lower_load(s->k, KILN_PREC_ELEMENTWISE, param_of(s, n->inputs[i]),
                                 flat_index(s));
  }
  kiln_texpr *e;
  KILN_TRY(kiln_lower_ew_expr(s->c, s->k, n, x, &e));
  int v = n->outputs[0];
  kiln_dtype dt = s->c->g->values.data[v].type.dtype;
  if (dt != e->type && !is_out(s->grp, v)) /* round an intermediate to its storage type */
    e = kiln_tcast(s->k, e->type, kiln_tcast(s->k, dt, e));
  if (s->uses[v] > 1 || is_out(s->grp, v) || kiln_lower_expr_large(e)) {
    char name[32];
    snprintf(name, sizeof name, "t%d", v);
    int var = kiln_tkernel_var(s->k, name, e->type);
    kiln_tblock_push(s->k, s->nest.body, kiln_tassign(s->k, var, e));
    e = kiln_tv(s->k, var);
  }
  s->val[v] = e;
  if (is_out(s->grp, v))
    kiln_tblock_push(
        s->k, s->nest.body,
        kiln_tstore(s->k, param_of(s, v), flat_index(s), kiln_lower_to_storage(s->k, dt, e)));
  return KILN_OK;
}

/* Program order of one iteration of the kernel body: statements numbered in preorder;
 * last_load[b] is the last statement that loads parameter b (0: none), first_store[b] the
 * first that stores it (0: none). A store statement's own loads come before its store. */
typedef struct ew_order {
  int *last_load, *first_store;
  int seq;
} ew_order;

static void order_expr(ew_order *o, const kiln_texpr *e) {
  if (!e) return;
  if (e->kind == KILN_TE_LOAD) o->last_load[e->buf] = o->seq, order_expr(o, e->index);
  if (e->kind == KILN_TE_OP || (e->kind == KILN_TE_CAST && !KILN_MUTANT(346))) /* mutant 346 */
    for (int a = 0; a < 3; a++) order_expr(o, e->args[a]); /* a load under a cast not seen */
}

static void order_block(ew_order *o, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *st = b->data[i];
    o->seq++;
    order_expr(o, st->extent);
    order_expr(o, st->cond);
    order_expr(o, st->index);
    order_expr(o, st->value);
    if (st->kind == KILN_TS_STORE && !o->first_store[st->buf]) o->first_store[st->buf] = o->seq;
    order_block(o, &st->body);
    order_block(o, &st->orelse);
  }
}

static bool same_dims(const kiln_type *a, const kiln_type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d].value != b->dims[d].value) return false;
  return true;
}

/* In-place candidates (the contract of kiln_step.inplace): output parameter po may reuse
 * input parameter pj when the input has the output's dtype and the group's full shape
 * (a broadcast input is read by several iterations, so never) and no statement after the
 * output's store loads the input (each element is read before the same iteration writes
 * it: an input read by a node after an earlier output's store must keep its storage). */
static void ew_inplace(ew_state *s) {
  const kiln_graph *g = s->c->g;
  int n = s->step.n_args;
  int *ip = kiln_arena_calloc(s->c->prog->module->arena, (size_t)n, sizeof(int));
  bool *taken = kiln_arena_calloc(s->c->scratch, (size_t)n + 1, 1);
  ew_order o = {kiln_arena_calloc(s->c->scratch, (size_t)s->k->bufs.len + 1, sizeof(int)),
                kiln_arena_calloc(s->c->scratch, (size_t)s->k->bufs.len + 1, sizeof(int)), 0};
  order_block(&o, &s->k->body);
  bool any = false;
  for (int i = 0; i < n; i++) {
    ip[i] = -1;
    int v = s->step.args[i].id;
    if (!is_out(s->grp, v)) continue;
    for (int j = 0; j < s->grp->n_inputs && ip[i] < 0; j++) {
      int u = s->grp->inputs[j], pj = param_of(s, u);
      const kiln_type *tu = kiln_lower_static(g, u);
      bool read_first = o.last_load[pj] <= o.first_store[i] || KILN_MUTANT(234); /* mutant 234 */
      if (!taken[pj] && /* mutant 295: the dtypes not compared (block sizes are rounded) */
          (tu->dtype == g->values.data[v].type.dtype || KILN_MUTANT(295)) &&
          (same_dims(tu, s->shape) || KILN_MUTANT(324)) && /* mutant 324: broadcast inputs too */
          g->values.data[u].kind == KILN_VALUE_NODE && read_first)
        ip[i] = pj, taken[pj] = any = true;
    }
  }
  s->step.inplace = any ? ip : NULL;
}

static void count_uses(ew_state *s) {
  const kiln_graph *g = s->c->g;
  for (int i = 0; i < s->grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0) s->uses[n->inputs[j]]++;
  }
}

static const char *group_base(const kiln_graph *g, const kiln_group *grp) {
  return g->nodes.data[grp->nodes[grp->n_nodes - 1]].op_type;
}

/* The group's kernel, from s->val and s->uses. */
static kiln_status ew_kernel(ew_state *sp) {
  ew_state s = *sp;
  kiln_lower_ctx *c = s.c;
  const kiln_graph *g = c->g;
  const kiln_group *grp = s.grp;
  s.k = kiln_lower_kernel(c, grp, grp->n_nodes > 1 ? "fused_ew" : group_base(g, grp), &s.step);
  ew_params(&s);
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < s.shape->rank; d++) dims[d] = s.shape->dims[d].value;
  kiln_lower_nest(s.k, &s.k->body, s.shape->rank, dims, "i", true, &s.nest);
  if (s.shape->rank == 0) s.nest.body = &s.k->body;
  for (int i = 0; i < grp->n_nodes; i++) KILN_TRY(ew_node(&s, &g->nodes.data[grp->nodes[i]]));
  ew_inplace(&s);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}

/* Zeroes the entries of s->val and s->uses that the group set (its nodes' inputs and
 * outputs), leaving the shared arrays clean for the next group. */
static void clear_values(ew_state *s) {
  const kiln_graph *g = s->c->g;
  for (int i = 0; i < s->grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    for (int j = 0; j < n->n_inputs; j++)
      if (n->inputs[j] >= 0) s->val[n->inputs[j]] = NULL, s->uses[n->inputs[j]] = 0;
    for (int j = 0; j < n->n_outputs; j++) /* mutant 412: outputs left set (only inputs) */
      if (n->outputs[j] >= 0 && !KILN_MUTANT(412))
        s->val[n->outputs[j]] = NULL, s->uses[n->outputs[j]] = 0;
  }
}

kiln_status kiln_lower_ew_group(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_graph *g = c->g;
  ew_state s = {0};
  s.c = c;
  s.grp = grp;
  const kiln_node *last = &g->nodes.data[grp->nodes[grp->n_nodes - 1]];
  s.shape = kiln_lower_static(g, last->outputs[0]);
  KILN_TRY(ew_check(&s));
  s.val = c->ew_val;
  s.uses = c->ew_uses;
  count_uses(&s);
  kiln_status st = ew_kernel(&s);
  clear_values(&s);
  return st;
}
