/* The scalar functions of the elementwise ops, one per compute class, and the
 * table that gives them to the broadcasting loop (elementwise_map.c).
 *
 * Floats are computed in double and rounded once by the store. Integers are
 * exact: signed arithmetic is done in uint64 so it wraps like C's unsigned
 * arithmetic (the store then wraps into narrower types). */
#include <math.h>
#include <string.h>

#include "ew_internal.h"

#define F(name) static double name(const kiln_ew_arg *x, kiln_ew_params *p)
#define I(name) static int64_t name(const kiln_ew_arg *x, kiln_ew_params *p)
#define U(name) static uint64_t name(const kiln_ew_arg *x, kiln_ew_params *p)

/* A float unary op written as an expression of a = x[0].f. */
#define FUN(name, expr)                                                                            \
  F(name) {                                                                                        \
    (void)p;                                                                                       \
    double a = x[0].f;                                                                             \
    return (expr);                                                                                 \
  }
/* A binary op as an expression of a, b in each class. */
#define BIN(name, T, m, expr)                                                                      \
  static T name(const kiln_ew_arg *x, kiln_ew_params *p) {                                         \
    (void)p;                                                                                       \
    T a = x[0].m, b = x[1].m;                                                                      \
    return (expr);                                                                                 \
  }

static int64_t wrap(uint64_t v) {
  return (int64_t)v;
}
#define UA(v) ((uint64_t)(v))

/* ---- unary math ---- */
static double softplus(double a) {
  return a > 0 ? a + log1p(exp(-a)) : log1p(exp(a));
}
static double sigmoid(double a) {
  return a >= 0 ? 1 / (1 + exp(-a)) : exp(a) / (1 + exp(a));
}
static double clamp01(double a) {
  return a < 0 ? 0 : (a > 1 ? 1 : a);
}

FUN(f_acos, acos(a))
FUN(f_acosh, acosh(a))
FUN(f_asin, asin(a))
FUN(f_asinh, asinh(a))
FUN(f_atan, atan(a))
FUN(f_atanh, atanh(a))
FUN(f_cos, cos(a))
FUN(f_cosh, cosh(a))
FUN(f_sin, sin(a))
FUN(f_sinh, sinh(a))
FUN(f_tan, tan(a))
FUN(f_tanh, tanh(a))
FUN(f_erf, erf(a))
FUN(f_exp, exp(a))
FUN(f_log, log(a))
FUN(f_sqrt, sqrt(a))
FUN(f_reciprocal, 1 / a)
FUN(f_ceil, ceil(a))
FUN(f_floor, floor(a))
FUN(f_round, nearbyint(a)) /* half to even in the default rounding mode */
FUN(f_sigmoid, sigmoid(a))
FUN(f_softplus, softplus(a))
FUN(f_softsign, a / (1 + fabs(a)))
FUN(f_mish, a *tanh(softplus(a)))
/* HardSwish is HardSigmoid<alpha, beta>(x) * x in the ONNX schema's function body (p holds
 * the body's alpha and beta, kiln_attrs_ew_decode): alpha is float 1/6, not 1/6, which f64
 * shows */
F(f_hardswish) {
  double a = x[0].f;
  return a * clamp01(a * p->alpha + p->beta);
}
FUN(f_abs, fabs(a))
FUN(f_neg, -a)
FUN(f_sign, a > 0 ? 1.0 : (a < 0 ? -1.0 : a * 0)) /* 0 and NaN stay */
FUN(f_relu, a < 0 ? 0 : a)
FUN(f_isnan, isnan(a) ? 1 : 0)

I(i_abs) {
  (void)p;
  return x[0].i < 0 ? wrap(0 - UA(x[0].i)) : x[0].i;
}
I(i_neg) {
  (void)p;
  return wrap(0 - UA(x[0].i));
}
I(i_sign) {
  (void)p;
  return x[0].i > 0 ? 1 : (x[0].i < 0 ? -1 : 0);
}
I(i_relu) {
  (void)p;
  return x[0].i < 0 ? 0 : x[0].i;
}
U(u_ident) {
  (void)p;
  return x[0].u;
}
U(u_sign) {
  (void)p;
  return x[0].u != 0;
}
U(u_not) {
  (void)p;
  return !x[0].u;
}
U(u_bitnot) {
  (void)p;
  return ~x[0].u;
}
I(i_bitnot) {
  (void)p;
  return ~x[0].i;
}

/* ---- activations with attributes ---- */
F(f_elu) {
  return x[0].f < 0 ? p->alpha * expm1(x[0].f) : x[0].f;
}
F(f_celu) {
  double a = x[0].f;
  return fmax(0, a) + fmin(0, p->alpha * expm1(a / p->alpha)) + (isnan(a) ? a : 0);
}
F(f_selu) {
  return x[0].f > 0 ? p->gamma * x[0].f : p->gamma * p->alpha * expm1(x[0].f);
}
F(f_hardsigmoid) {
  return isnan(x[0].f) ? x[0].f : clamp01(p->alpha * x[0].f + p->beta);
}
F(f_leakyrelu) {
  return x[0].f < 0 ? p->alpha * x[0].f : x[0].f;
}
F(f_thresholdedrelu) {
  return x[0].f > p->alpha ? x[0].f : 0;
} /* NaN: "otherwise", 0 */
F(f_swish) {
  return x[0].f * sigmoid(p->alpha * x[0].f);
}
F(f_shrink) {
  double a = x[0].f;
  return a < -p->lambd ? a + p->bias : (a > p->lambd ? a - p->bias : 0); /* NaN: 0 */
}
F(f_gelu) {
  double a = x[0].f;
  if (p->mode == 0) return 0.5 * a * (1 + erf(a / sqrt(2.0)));
  /* the constants of the schema's function body are float attributes (p->gelu_k = 2/pi and
   * p->gelu_c = 0.044715 as floats, sqrt taken in the value's type), which f64 results show */
  return 0.5 * a * (1 + tanh(sqrt(p->gelu_k) * (a + p->gelu_c * a * a * a)));
}
F(f_isinf) {
  double a = x[0].f;
  return isinf(a) && ((a < 0 && (p->mode & 1)) || (a > 0 && (p->mode & 2)));
}

/* ---- Clip (bounds in p; min(max(x, lo), hi) so lo > hi gives hi) ---- */
F(f_clip) {
  double a = x[0].f;
  if (a < p->lo_f) a = p->lo_f;
  return a > p->hi_f ? p->hi_f : a;
}
I(i_clip) {
  int64_t a = x[0].i < p->lo_i ? p->lo_i : x[0].i;
  return a > p->hi_i ? p->hi_i : a;
}
U(u_clip) {
  uint64_t a = x[0].u < p->lo_u ? p->lo_u : x[0].u;
  return a > p->hi_u ? p->hi_u : a;
}

/* ---- arithmetic ---- */
BIN(f_add, double, f, a + b)
BIN(i_add, int64_t, i, wrap(UA(a) + UA(b)))
BIN(u_add, uint64_t, u, a + b)
BIN(f_sub, double, f, a - b)
BIN(i_sub, int64_t, i, wrap(UA(a) - UA(b)))
BIN(u_sub, uint64_t, u, a - b)
BIN(f_mul, double, f, a *b)
BIN(i_mul, int64_t, i, wrap(UA(a) * UA(b)))
BIN(u_mul, uint64_t, u, a *b)
BIN(f_div, double, f, a / b)
BIN(f_prelu, double, f, a < 0 ? a * b : a)
BIN(i_prelu, int64_t, i, a < 0 ? wrap(UA(a) * UA(b)) : a)
BIN(f_pow, double, f, pow(a, b))

I(i_div) { /* truncates toward zero; INT64_MIN / -1 wraps */
  int64_t a = x[0].i, b = x[1].i;
  if (b == 0) return p->div_zero = true, 0;
  return b == -1 ? wrap(0 - UA(a)) : a / b;
}
U(u_div) {
  if (x[1].u == 0) return p->div_zero = true, 0;
  return x[0].u / x[1].u;
}
F(f_mod) { /* floats: always fmod (the sign of the dividend), as the spec
              demands fmod=1 */
  (void)p;
  return fmod(x[0].f, x[1].f);
}
I(i_mod) { /* fmod=0: sign of the divisor (Python); fmod=1: sign of the dividend
              (C) */
  int64_t a = x[0].i, b = x[1].i;
  if (b == 0) return p->div_zero = true, 0;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (!p->mode && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
U(u_mod) {
  if (x[1].u == 0) return p->div_zero = true, 0;
  return x[0].u % x[1].u;
}
I(i_pow) { /* exact with wrap-around; negative exponents truncate 1/a^-b */
  int64_t a = x[0].i, b = x[1].i;
  (void)p;
  if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
  uint64_t r = 1, base = UA(a);
  for (uint64_t e = UA(b); e; e >>= 1, base *= base)
    if (e & 1) r *= base;
  return wrap(r);
}

/* ---- bitwise and logical (bool is uint 0/1) ---- */
BIN(u_and, uint64_t, u, a &b)
BIN(u_or, uint64_t, u, a | b)
BIN(u_xor, uint64_t, u, a ^ b)
BIN(i_and, int64_t, i, a &b)
BIN(i_or, int64_t, i, a | b)
BIN(i_xor, int64_t, i, a ^ b)
BIN(u_land, uint64_t, u, a &&b)
BIN(u_lor, uint64_t, u, a || b)
BIN(u_lxor, uint64_t, u, (a != 0) != (b != 0))
U(u_shift) {
  uint64_t a = x[0].u, s = x[1].u;
  if (s >= 64) return 0;
  return p->mode ? a >> s : a << s;
}

/* ---- comparisons (results 0/1, stored as bool) ---- */
#define CMP(name, op)                                                                              \
  BIN(f_##name, double, f, a op b)                                                                 \
  BIN(i_##name, int64_t, i, a op b)                                                                \
  BIN(u_##name, uint64_t, u, a op b)
CMP(eq, ==)
CMP(gt, >)
CMP(ge, >=)
CMP(lt, <)
CMP(le, <=)
U(s_eq) {
  (void)p;
  return strcmp(x[0].s, x[1].s) == 0;
}

/* ---- variadic (any number of broadcast inputs; NaN propagates in Max/Min)
 * ---- */
static double f_pick(const kiln_ew_arg *x, int n, bool max) {
  double r = x[0].f;
  for (int k = 1; k < n && !isnan(r); k++)
    if (isnan(x[k].f) || (max ? x[k].f > r : x[k].f < r)) r = x[k].f;
  return r;
}
F(f_max) {
  return f_pick(x, p->n, true);
}
F(f_min) {
  return f_pick(x, p->n, false);
}

#define PICK(name, T, m, op)                                                                       \
  static T name(const kiln_ew_arg *x, kiln_ew_params *p) {                                         \
    T r = x[0].m;                                                                                  \
    for (int k = 1; k < p->n; k++) r = x[k].m op r ? x[k].m : r;                                   \
    return r;                                                                                      \
  }
PICK(i_max, int64_t, i, >)
PICK(i_min, int64_t, i, <)
PICK(u_max, uint64_t, u, >)
PICK(u_min, uint64_t, u, <)
F(f_sum) { /* from the first input, not +0: Sum(-0, -0) is -0 */
  double r = p->n > 0 ? x[0].f : 0;
  for (int k = 1; k < p->n; k++) r += x[k].f;
  return r;
}
I(i_sum) {
  uint64_t r = 0;
  for (int k = 0; k < p->n; k++) r += UA(x[k].i);
  return wrap(r);
}
U(u_sum) {
  uint64_t r = 0;
  for (int k = 0; k < p->n; k++) r += x[k].u;
  return r;
}
F(f_mean) {
  return f_sum(x, p) / p->n;
}

/* ---- the table ---- */
#define FO(fn)                                                                                     \
  { fn, NULL, NULL, NULL, 0 }
#define ALL(name)                                                                                  \
  { f_##name, i_##name, u_##name, NULL, 0 }
#define BOOLS(fu)                                                                                  \
  { NULL, NULL, fu, NULL, 0 }
#define CMPS(name)                                                                                 \
  { f_##name, i_##name, u_##name, NULL, KILN_EW_BOOL_OUT }

static const kiln_ew_fns fns_table[KILN_OP_COUNT] = {
    [KILN_OP_Acos] = FO(f_acos),
    [KILN_OP_Acosh] = FO(f_acosh),
    [KILN_OP_Asin] = FO(f_asin),
    [KILN_OP_Asinh] = FO(f_asinh),
    [KILN_OP_Atan] = FO(f_atan),
    [KILN_OP_Atanh] = FO(f_atanh),
    [KILN_OP_Cos] = FO(f_cos),
    [KILN_OP_Cosh] = FO(f_cosh),
    [KILN_OP_Sin] = FO(f_sin),
    [KILN_OP_Sinh] = FO(f_sinh),
    [KILN_OP_Tan] = FO(f_tan),
    [KILN_OP_Tanh] = FO(f_tanh),
    [KILN_OP_Erf] = FO(f_erf),
    [KILN_OP_Exp] = FO(f_exp),
    [KILN_OP_Log] = FO(f_log),
    [KILN_OP_Sqrt] = FO(f_sqrt),
    [KILN_OP_Reciprocal] = FO(f_reciprocal),
    [KILN_OP_Ceil] = FO(f_ceil),
    [KILN_OP_Floor] = FO(f_floor),
    [KILN_OP_Round] = FO(f_round),
    [KILN_OP_Sigmoid] = FO(f_sigmoid),
    [KILN_OP_Softplus] = FO(f_softplus),
    [KILN_OP_Softsign] = FO(f_softsign),
    [KILN_OP_Mish] = FO(f_mish),
    [KILN_OP_HardSwish] = FO(f_hardswish),
    [KILN_OP_Elu] = FO(f_elu),
    [KILN_OP_Celu] = FO(f_celu),
    [KILN_OP_Selu] = FO(f_selu),
    [KILN_OP_HardSigmoid] = FO(f_hardsigmoid),
    [KILN_OP_LeakyRelu] = FO(f_leakyrelu),
    [KILN_OP_ThresholdedRelu] = FO(f_thresholdedrelu),
    [KILN_OP_Swish] = FO(f_swish),
    [KILN_OP_Gelu] = FO(f_gelu),
    [KILN_OP_Mean] = FO(f_mean),
    [KILN_OP_IsNaN] = {f_isnan, NULL, NULL, NULL, KILN_EW_BOOL_OUT},
    [KILN_OP_IsInf] = {f_isinf, NULL, NULL, NULL, KILN_EW_BOOL_OUT},
    [KILN_OP_Abs] = {f_abs, i_abs, u_ident, NULL, 0},
    [KILN_OP_Neg] = {f_neg, i_neg, NULL, NULL, 0},
    [KILN_OP_Sign] = {f_sign, i_sign, u_sign, NULL, 0},
    [KILN_OP_Relu] = {f_relu, i_relu, NULL, NULL, 0},
    [KILN_OP_Shrink] = {f_shrink, NULL, NULL, NULL, KILN_EW_VIA_FLOAT},
    [KILN_OP_Clip] = ALL(clip),
    [KILN_OP_Add] = ALL(add),
    [KILN_OP_Sub] = ALL(sub),
    [KILN_OP_Mul] = ALL(mul),
    [KILN_OP_Div] = ALL(div),
    [KILN_OP_Mod] = ALL(mod),
    [KILN_OP_Pow] = {f_pow, i_pow, NULL, NULL, KILN_EW_MIXED},
    [KILN_OP_PRelu] = {f_prelu, i_prelu, u_ident, NULL, 0},
    [KILN_OP_Max] = ALL(max),
    [KILN_OP_Min] = ALL(min),
    [KILN_OP_Sum] = ALL(sum),
    [KILN_OP_Not] = BOOLS(u_not),
    [KILN_OP_And] = BOOLS(u_land),
    [KILN_OP_Or] = BOOLS(u_lor),
    [KILN_OP_Xor] = BOOLS(u_lxor),
    [KILN_OP_BitShift] = BOOLS(u_shift),
    [KILN_OP_BitwiseNot] = {NULL, i_bitnot, u_bitnot, NULL, 0},
    [KILN_OP_BitwiseAnd] = {NULL, i_and, u_and, NULL, 0},
    [KILN_OP_BitwiseOr] = {NULL, i_or, u_or, NULL, 0},
    [KILN_OP_BitwiseXor] = {NULL, i_xor, u_xor, NULL, 0},
    [KILN_OP_Equal] = {f_eq, i_eq, u_eq, s_eq, KILN_EW_BOOL_OUT},
    [KILN_OP_Greater] = CMPS(gt),
    [KILN_OP_GreaterOrEqual] = CMPS(ge),
    [KILN_OP_Less] = CMPS(lt),
    [KILN_OP_LessOrEqual] = CMPS(le),
};

const kiln_ew_fns *kiln_ew_fns_of(kiln_op op) {
  if ((unsigned)op >= KILN_OP_COUNT) return NULL;
  const kiln_ew_fns *f = &fns_table[op];
  return f->f || f->i || f->u || f->s ? f : NULL;
}
