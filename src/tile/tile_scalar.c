/* Scalar semantics of the tile IR interpreter: what the C code a backend emits computes.
 * F32 in float with the float libm functions, F64 in double; F16 and BF16 (held as their
 * bits) widen exactly to float, run the F32 operation and round the result back to the
 * type (nearest even; kiln_store_f64); integer arithmetic wraps in
 * the type's width (done in uint64 and truncated, never signed overflow); integer division
 * or remainder by zero, INT_MIN / -1 in 32 and 64 bits, and float-to-integer casts of
 * values out of the target's range (or NaN) are errors, because they are undefined in C. */
#include <math.h>
#include <string.h>

#include "tile_interp.h"

/* ---- integer representation ---- */
static int width(kiln_dtype t) {
  switch (t) {
  case KILN_BOOL: return 1;
  case KILN_I8:
  case KILN_U8: return 8;
  case KILN_I16:
  case KILN_U16: return 16;
  case KILN_I32:
  case KILN_U32: return 32;
  default: return 64;
  }
}

static bool is_signed(kiln_dtype t) {
  return t == KILN_I8 || t == KILN_I16 || t == KILN_I32 || t == KILN_I64;
}

/* Truncates v to t's width; sign-extends signed types. */
static uint64_t norm(kiln_dtype t, uint64_t v) {
  int w = width(t);
  if (w == 64) return v;
  uint64_t m = (uint64_t)1 << (w - 1);
  v &= (m << 1) - 1;
  return is_signed(t) ? (v ^ m) - m : v;
}

void kiln_tscalar_read(kiln_dtype t, const unsigned char *p, kiln_tval *out) {
  memset(out, 0, sizeof *out);
  int8_t i8;
  int16_t i16;
  int32_t i32;
  uint16_t u16;
  uint32_t u32;
  switch (t) {
  case KILN_F32: memcpy(&out->f, p, 4); break;
  case KILN_F64: memcpy(&out->d, p, 8); break;
  case KILN_BOOL: out->u = *p != 0; break;
  case KILN_U8: out->u = *p; break;
  case KILN_I8: memcpy(&i8, p, 1), out->i = i8; break;
  case KILN_I16: memcpy(&i16, p, 2), out->i = i16; break;
  case KILN_U16: memcpy(&u16, p, 2), out->u = u16; break;
  case KILN_I32: memcpy(&i32, p, 4), out->i = i32; break;
  case KILN_U32: memcpy(&u32, p, 4), out->u = u32; break;
  case KILN_I64:
  case KILN_U64: memcpy(&out->u, p, 8); break;
  default: memcpy(out->raw, p, kiln_dtype_size(t)); break;
  }
}

void kiln_tscalar_write(kiln_dtype t, unsigned char *p, kiln_tval v) {
  uint16_t u16 = (uint16_t)v.u;
  uint32_t u32 = (uint32_t)v.u;
  switch (t) {
  case KILN_F32: memcpy(p, &v.f, 4); break;
  case KILN_F64: memcpy(p, &v.d, 8); break;
  case KILN_BOOL: *p = v.u != 0; break;
  case KILN_I8:
  case KILN_U8: *p = (unsigned char)v.u; break;
  case KILN_I16:
  case KILN_U16: memcpy(p, &u16, 2); break;
  case KILN_I32:
  case KILN_U32: memcpy(p, &u32, 4); break;
  case KILN_I64:
  case KILN_U64: memcpy(p, &v.u, 8); break;
  default: memcpy(p, v.raw, kiln_dtype_size(t)); break;
  }
}

/* ---- unary ---- */
static float f32_unary(kiln_top op, float x) {
  switch (op) {
  case KILN_TOP_NEG: return -x;
  case KILN_TOP_ABS: return fabsf(x);
  case KILN_TOP_EXP: return expf(x);
  case KILN_TOP_LOG: return logf(x);
  case KILN_TOP_SQRT: return sqrtf(x);
  case KILN_TOP_SIN: return sinf(x);
  case KILN_TOP_COS: return cosf(x);
  case KILN_TOP_TAN: return tanf(x);
  case KILN_TOP_ASIN: return asinf(x);
  case KILN_TOP_ACOS: return acosf(x);
  case KILN_TOP_ATAN: return atanf(x);
  case KILN_TOP_SINH: return sinhf(x);
  case KILN_TOP_COSH: return coshf(x);
  case KILN_TOP_TANH: return tanhf(x);
  case KILN_TOP_ASINH: return asinhf(x);
  case KILN_TOP_ACOSH: return acoshf(x);
  case KILN_TOP_ATANH: return atanhf(x);
  case KILN_TOP_ERF: return erff(x);
  case KILN_TOP_FLOOR: return floorf(x);
  case KILN_TOP_CEIL: return ceilf(x);
  case KILN_TOP_ROUND: return nearbyintf(x);
  default: return NAN;
  }
}

static double f64_unary(kiln_top op, double x) {
  switch (op) {
  case KILN_TOP_NEG: return -x;
  case KILN_TOP_ABS: return fabs(x);
  case KILN_TOP_EXP: return exp(x);
  case KILN_TOP_LOG: return log(x);
  case KILN_TOP_SQRT: return sqrt(x);
  case KILN_TOP_SIN: return sin(x);
  case KILN_TOP_COS: return cos(x);
  case KILN_TOP_TAN: return tan(x);
  case KILN_TOP_ASIN: return asin(x);
  case KILN_TOP_ACOS: return acos(x);
  case KILN_TOP_ATAN: return atan(x);
  case KILN_TOP_SINH: return sinh(x);
  case KILN_TOP_COSH: return cosh(x);
  case KILN_TOP_TANH: return tanh(x);
  case KILN_TOP_ASINH: return asinh(x);
  case KILN_TOP_ACOSH: return acosh(x);
  case KILN_TOP_ATANH: return atanh(x);
  case KILN_TOP_ERF: return erf(x);
  case KILN_TOP_FLOOR: return floor(x);
  case KILN_TOP_CEIL: return ceil(x);
  case KILN_TOP_ROUND: return nearbyint(x);
  default: return NAN;
  }
}

static kiln_status int_unary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                             kiln_tval *out) {
  switch (op) {
  case KILN_TOP_NEG: out->u = norm(t, 0 - a.u); return KILN_OK;
  case KILN_TOP_ABS: out->u = is_signed(t) && a.i < 0 ? norm(t, 0 - a.u) : a.u; return KILN_OK;
  case KILN_TOP_BITNOT: out->u = norm(t, ~a.u); return KILN_OK;
  case KILN_TOP_NOT: out->u = !a.u; return KILN_OK;
  default: return kiln_tinterp_error(in, "%s on %s", kiln_top_name(op), kiln_dtype_name(t));
  }
}

/* ---- F16 and BF16: the F32 operation, rounded to the type ---- */
static kiln_tval half_widen(kiln_dtype t, kiln_tval a) {
  kiln_tval w = {0};
  w.f = (float)kiln_load_f64(t, a.raw, 0); /* exact */
  return w;
}

static void half_round(kiln_dtype t, kiln_tval *v) {
  float f = v->f;
  memset(v, 0, sizeof *v);
  kiln_store_f64(t, v->raw, 0, (double)f);
}

static kiln_status half_unary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                              kiln_tval *out) {
  KILN_TRY(kiln_tscalar_unary(in, op, KILN_F32, half_widen(t, a), out));
  if (kiln_top_class(op) != 'c') half_round(t, out);
  return KILN_OK;
}

kiln_status kiln_tscalar_unary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                               kiln_tval *out) {
  memset(out, 0, sizeof *out);
  if (kiln_tile_half_type(t)) return half_unary(in, op, t, a, out);
  if (t == KILN_F32) {
    if (op == KILN_TOP_ISNAN) out->u = isnan(a.f) != 0;
    else if (op == KILN_TOP_ISINF) out->u = isinf(a.f) != 0;
    else out->f = f32_unary(op, a.f);
    return KILN_OK;
  }
  if (t == KILN_F64) {
    if (op == KILN_TOP_ISNAN) out->u = isnan(a.d) != 0;
    else if (op == KILN_TOP_ISINF) out->u = isinf(a.d) != 0;
    else out->d = f64_unary(op, a.d);
    return KILN_OK;
  }
  return int_unary(in, op, t, a, out);
}

/* ---- binary ---- */
/* The C relational operators on floats: false when either is NaN (except ne). */
#define FLOAT_BINARY(T, a, b, FMOD, POW, ATAN2)                                                    \
  switch (op) {                                                                                    \
  case KILN_TOP_ADD: r = a + b; break;                                                             \
  case KILN_TOP_SUB: r = a - b; break;                                                             \
  case KILN_TOP_MUL: r = a * b; break;                                                             \
  case KILN_TOP_DIV: r = a / b; break;                                                             \
  case KILN_TOP_MOD: r = FMOD(a, b); break;                                                        \
  case KILN_TOP_MIN: r = isnan(a) ? a : isnan(b) ? b : a < b ? a : b; break;                       \
  case KILN_TOP_MAX: r = isnan(a) ? a : isnan(b) ? b : a > b ? a : b; break;                       \
  case KILN_TOP_POW: r = POW(a, b); break;                                                         \
  case KILN_TOP_ATAN2: r = ATAN2(a, b); break;                                                     \
  case KILN_TOP_LT: out->u = a < b; return KILN_OK;                                                \
  case KILN_TOP_LE: out->u = a <= b; return KILN_OK;                                               \
  case KILN_TOP_GT: out->u = a > b; return KILN_OK;                                                \
  case KILN_TOP_GE: out->u = a >= b; return KILN_OK;                                               \
  case KILN_TOP_EQ: out->u = a == b; return KILN_OK;                                               \
  case KILN_TOP_NE: out->u = a != b; return KILN_OK;                                               \
  default: return kiln_tinterp_error(in, "%s on %s", kiln_top_name(op), kiln_dtype_name(t));       \
  }

static kiln_status f32_binary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, float a, float b,
                              kiln_tval *out) {
  float r;
  FLOAT_BINARY(float, a, b, fmodf, powf, atan2f)
  out->f = r;
  return KILN_OK;
}

static kiln_status f64_binary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, double a, double b,
                              kiln_tval *out) {
  double r;
  FLOAT_BINARY(double, a, b, fmod, pow, atan2)
  out->d = r;
  return KILN_OK;
}

/* C leaves x / 0, x % 0 and INT_MIN / -1 undefined (for int and long: narrower types are
 * promoted to int first, where the quotient fits and wraps when converted back). */
static kiln_status int_div(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                           kiln_tval b, kiln_tval *out) {
  if (b.u == 0)
    return kiln_tinterp_error(in, "integer %s by zero",
                              op == KILN_TOP_DIV ? "division" : "remainder");
  if (!is_signed(t)) {
    out->u = op == KILN_TOP_DIV ? a.u / b.u : a.u % b.u;
    return KILN_OK;
  }
  uint64_t min = norm(t, (uint64_t)1 << (width(t) - 1));
  if (b.i == -1 && a.u == min) {
    if (width(t) >= 32)
      return kiln_tinterp_error(in, "%s overflow: the minimum %s divided by -1", kiln_top_name(op),
                                kiln_dtype_name(t));
    out->u = op == KILN_TOP_DIV ? norm(t, 0 - a.u) : 0;
    return KILN_OK;
  }
  out->u = norm(t, (uint64_t)(op == KILN_TOP_DIV ? a.i / b.i : a.i % b.i));
  return KILN_OK;
}

/* Shifts by a negative count or by the width or more give 0; right shifts of signed
 * types are arithmetic. */
static uint64_t int_shift(kiln_top op, kiln_dtype t, kiln_tval a, kiln_tval b) {
  int w = width(t);
  if ((is_signed(t) && b.i < 0) || b.u >= (uint64_t)w) return 0;
  if (op == KILN_TOP_SHL) return norm(t, a.u << b.u);
  if (is_signed(t) && a.i < 0) return ~(~a.u >> b.u);
  return a.u >> b.u;
}

static bool int_less(kiln_dtype t, kiln_tval a, kiln_tval b) {
  return is_signed(t) ? a.i < b.i : a.u < b.u;
}

static kiln_status int_binary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                              kiln_tval b, kiln_tval *out) {
  switch (op) {
  case KILN_TOP_ADD: out->u = norm(t, a.u + b.u); break;
  case KILN_TOP_SUB: out->u = norm(t, a.u - b.u); break;
  case KILN_TOP_MUL: out->u = norm(t, a.u * b.u); break;
  case KILN_TOP_DIV:
  case KILN_TOP_MOD: return int_div(in, op, t, a, b, out);
  case KILN_TOP_MIN: out->u = int_less(t, b, a) ? b.u : a.u; break;
  case KILN_TOP_MAX: out->u = int_less(t, a, b) ? b.u : a.u; break;
  case KILN_TOP_AND: out->u = a.u & b.u; break;
  case KILN_TOP_OR: out->u = a.u | b.u; break;
  case KILN_TOP_XOR: out->u = a.u ^ b.u; break;
  case KILN_TOP_SHL:
  case KILN_TOP_SHR: out->u = int_shift(op, t, a, b); break;
  case KILN_TOP_LT: out->u = int_less(t, a, b); break;
  case KILN_TOP_LE: out->u = !int_less(t, b, a); break;
  case KILN_TOP_GT: out->u = int_less(t, b, a); break;
  case KILN_TOP_GE: out->u = !int_less(t, a, b); break;
  case KILN_TOP_EQ: out->u = a.u == b.u; break;
  case KILN_TOP_NE: out->u = a.u != b.u; break;
  default: return kiln_tinterp_error(in, "%s on %s", kiln_top_name(op), kiln_dtype_name(t));
  }
  return KILN_OK;
}

kiln_status kiln_tscalar_binary(const kiln_tinterp *in, kiln_top op, kiln_dtype t, kiln_tval a,
                                kiln_tval b, kiln_tval *out) {
  memset(out, 0, sizeof *out);
  if (kiln_tile_half_type(t)) {
    KILN_TRY(f32_binary(in, op, t, half_widen(t, a).f, half_widen(t, b).f, out));
    if (kiln_top_class(op) != 'c') half_round(t, out);
    return KILN_OK;
  }
  if (t == KILN_F32) return f32_binary(in, op, t, a.f, b.f, out);
  if (t == KILN_F64) return f64_binary(in, op, t, a.d, b.d, out);
  return int_binary(in, op, t, a, b, out);
}

/* mac(acc, a, b): the product is exact in acc's type; the sum rounds (F32) or wraps (I32). */
kiln_status kiln_tscalar_mac(kiln_dtype ta, kiln_tval acc, kiln_tval a, kiln_tval b,
                             kiln_tval *out) {
  memset(out, 0, sizeof *out);
  if (kiln_tile_half_type(ta)) {
    out->f = acc.f + half_widen(ta, a).f * half_widen(ta, b).f;
    return KILN_OK;
  }
  /* I8/U8 operands are normalized (sign- or zero-extended): the product fits in 17 bits */
  out->u = norm(KILN_I32, acc.u + (uint64_t)(a.i * b.i));
  return KILN_OK;
}

/* ---- casts ---- */
/* A source value: exactly one of an integer (signed or not) or a real number. */
typedef struct source {
  bool is_int, is_unsigned;
  int64_t i;
  uint64_t u;
  double d; /* for F32 sources, the float's exact value */
  float f;  /* F32 sources */
  bool f32;
} source;

static source read_source(kiln_dtype from, kiln_tval a) {
  source s = {0};
  if (from == KILN_F32) {
    s.f32 = true;
    s.f = a.f;
    s.d = a.f;
  } else if (from == KILN_F64) {
    s.d = a.d;
  } else if (kiln_dtype_is_float(from)) {
    s.d = kiln_load_f64(from, a.raw, 0);
  } else if (kiln_tile_arith_type(from)) {
    s.is_int = true;
    s.is_unsigned = !is_signed(from);
    s.i = a.i;
    s.u = a.u;
  } else { /* 4- and 2-bit integers */
    s.is_int = true;
    s.i = kiln_load_i64(from, a.raw, 0);
    s.u = (uint64_t)s.i;
  }
  return s;
}

static void int_limits(kiln_dtype t, double *lo, double *hi) {
  switch (t) {
  case KILN_I4: *lo = -8, *hi = 7; return;
  case KILN_U4: *lo = 0, *hi = 15; return;
  case KILN_I2: *lo = -2, *hi = 1; return;
  case KILN_U2: *lo = 0, *hi = 3; return;
  default: break;
  }
  int w = width(t);
  if (is_signed(t)) {
    *lo = -ldexp(1, w - 1);
    *hi = ldexp(1, w - 1); /* exclusive below */
  } else {
    *lo = 0;
    *hi = ldexp(1, w);
  }
}

/* Float to integer: truncation toward zero; out of range or NaN is an error. */
static kiln_status float_to_int(const kiln_tinterp *in, const source *s, kiln_dtype to,
                                uint64_t *out) {
  double lo, hi, t = trunc(s->d);
  int_limits(to, &lo, &hi);
  bool narrow = to == KILN_I4 || to == KILN_U4 || to == KILN_I2 || to == KILN_U2;
  if (!(t >= lo && (narrow ? t <= hi : t < hi)))
    return kiln_tinterp_error(in, "cast of %.17g to %s: out of range (undefined in C)", s->d,
                              kiln_dtype_name(to));
  *out = t < 0 ? (uint64_t)(int64_t)t : (uint64_t)t;
  return KILN_OK;
}

static double source_real(const source *s) {
  if (!s->is_int) return s->d;
  return s->is_unsigned ? (double)s->u : (double)s->i;
}

kiln_status kiln_tscalar_cast(const kiln_tinterp *in, kiln_dtype from, kiln_tval a, kiln_dtype to,
                              kiln_tval *out) {
  source s = read_source(from, a);
  memset(out, 0, sizeof *out);
  if (to == KILN_BOOL) {
    out->u = s.is_int ? s.u != 0 : s.d != 0;
  } else if (to == KILN_F32) {
    if (s.is_int) out->f = s.is_unsigned ? (float)s.u : (float)s.i;
    else out->f = s.f32 ? s.f : (float)s.d;
  } else if (to == KILN_F64) {
    out->d = source_real(&s);
  } else if (kiln_dtype_is_float(to)) { /* rounds once, to nearest even (an integer through
                                           its double rounded to odd) */
    double v = !s.is_int       ? s.d
               : s.is_unsigned ? kiln_u64_to_f64_odd(s.u)
                               : kiln_i64_to_f64_odd(s.i);
    kiln_store_f64(to, out->raw, 0, v);
  } else {
    uint64_t bits = s.u;
    if (!s.is_int) KILN_TRY(float_to_int(in, &s, to, &bits));
    if (kiln_tile_arith_type(to)) out->u = norm(to, bits);
    else kiln_store_u64(to, out->raw, 0, bits);
  }
  return KILN_OK;
}
