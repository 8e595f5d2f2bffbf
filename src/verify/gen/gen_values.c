/* Input values at the edges of a domain: large magnitudes, values where exp overflows,
 * values near a dtype's largest finite value (or the domain's own edge), subnormals, -0.0,
 * integer extremes, unsigned values that wrap, and exact ties (copies of another element). Every
 * value stays inside the input's domain (gen_dom): POS stays > 0, UNIT in (-1, 1), NONZERO away
 * from 0, NONNEG >= 0 (-0.0 included: it compares equal to 0), GE1 >= 1. Whether the graph's result
 * stays defined on them is not decided here but by the reference (gen_inputs.c drops draws it finds
 * non-finite or unstable). */
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "gen_internal.h"

static const char *const edge_names[KILN_GEN_EDGE_COUNT] = {
    "large",     "exp_over", "limit",     "denormal", "negzero", "int_extreme",
    "uint_wrap", "tie",      "nonfinite", "half",     "zero",    "narrow",
};

const char *kiln_gen_edge_name(int kind) {
  return kind >= 0 && kind < KILN_GEN_EDGE_COUNT ? edge_names[kind] : "?";
}

#define EB(k) (1u << KILN_GEN_EDGE_##k)

static bool is_gen_float(kiln_dtype dt) {
  return dt == KILN_F16 || dt == KILN_BF16 || dt == KILN_F32 || dt == KILN_F64;
}

static bool is_signed_int(kiln_dtype dt) {
  return dt == KILN_I8 || dt == KILN_I16 || dt == KILN_I32 || dt == KILN_I64;
}

static bool is_unsigned_int(kiln_dtype dt) {
  return dt == KILN_U8 || dt == KILN_U16 || dt == KILN_U32 || dt == KILN_U64;
}

/* Floats: which kinds each domain admits. UNIT has no large values (its edge is +-1, drawn as
 * LIMIT); NONZERO and POS have no zero; GE1's edge is 1 itself. */
static unsigned float_kinds(gen_dom dom) {
  switch (dom) {
  case DOM_ANY:
    return EB(LARGE) | EB(EXP_OVER) | EB(LIMIT) | EB(DENORMAL) | EB(NEGZERO) | EB(NONFINITE) |
           EB(HALF) | EB(NARROW) | EB(ZERO);
  case DOM_NONNEG:
    return EB(LARGE) | EB(EXP_OVER) | EB(LIMIT) | EB(DENORMAL) | EB(NEGZERO) | EB(HALF) |
           EB(NARROW) | EB(ZERO);
  case DOM_POS:
  case DOM_NONZERO:
    return EB(LARGE) | EB(EXP_OVER) | EB(LIMIT) | EB(DENORMAL) | EB(HALF) | EB(NARROW);
  case DOM_UNIT: return EB(LIMIT) | EB(DENORMAL) | EB(NEGZERO) | EB(ZERO);
  case DOM_GE1: return EB(LARGE) | EB(EXP_OVER) | EB(LIMIT);
  case DOM_COUNT: break;
  }
  return 0;
}

unsigned gen_edge_kinds(kiln_dtype dt, gen_dom dom) {
  if (is_gen_float(dt)) return float_kinds(dom) | EB(TIE);
  bool z = dom == DOM_ANY || dom == DOM_NONNEG; /* domains that hold 0 */
  if (is_signed_int(dt)) return EB(LARGE) | EB(INT_EXTREME) | EB(TIE) | (z ? EB(ZERO) : 0);
  if (is_unsigned_int(dt)) return EB(UINT_WRAP) | EB(TIE) | (z ? EB(ZERO) : 0);
  return 0; /* bool, and dtypes the generator does not make */
}

/* log-uniform in [lo, hi] (0 < lo <= hi) */
static double log_unif(gen_rng *r, double lo, double hi) {
  return lo * pow(hi / lo, gen_unif(r));
}

/* The smallest positive subnormal and the smallest normal of dt. */
static void subnormal_range(kiln_dtype dt, double *lo, double *hi) {
  if (dt == KILN_F16) *lo = 0x1p-24, *hi = 0x1p-14;
  else if (dt == KILN_BF16) *lo = 0x1p-133, *hi = 0x1p-126;
  else if (dt == KILN_F32) *lo = 0x1p-149, *hi = 0x1p-126;
  else *lo = 0x1p-1074, *hi = 0x1p-1022;
}

/* A subnormal of dt: a random multiple of the smallest one (exact in dt). */
static double subnormal(gen_rng *r, kiln_dtype dt) {
  double lo, hi;
  subnormal_range(dt, &lo, &hi);
  double k = floor(log_unif(r, 1, hi / lo - 1));
  return k * lo;
}

static double largest(kiln_dtype dt) {
  return dt == KILN_F16    ? 65504.0
         : dt == KILN_BF16 ? 0x1.fep127
         : dt == KILN_F32  ? (double)FLT_MAX
                           : DBL_MAX;
}

/* A magnitude above where exp overflows dt, and well inside dt's range. */
static double exp_over(gen_rng *r, kiln_dtype dt) {
  if (dt == KILN_F16) return 11.25 + 50 * gen_unif(r);
  if (dt == KILN_F32 || dt == KILN_BF16) return 89 + 200 * gen_unif(r);
  return 710 + 1000 * gen_unif(r);
}

/* The unit roundoff of dt (half an ulp of 1). */
static double unit(kiln_dtype dt) {
  return dt == KILN_F16 ? 0x1p-11 : dt == KILN_BF16 ? 0x1p-8 : dt == KILN_F32 ? 0x1p-24 : 0x1p-53;
}

/* A limit of a narrower dtype that dt holds (f16: the integer ones up to 65504), moved by
 * 0.5 now and then (the large ones by a small integer in f64: exact there, not in f32), or, for
 * f32 and f64, a value in f16's or bf16's subnormal range: what a Cast to that dtype must
 * saturate, wrap or round. */
static double narrow_limit(gen_rng *r, kiln_dtype dt) {
  if ((dt == KILN_F32 || dt == KILN_F64) && gen_chance(r, 0.3)) {
    /* f16's subnormals (the top binade half the time) or bf16's: random mantissas */
    double lo = gen_chance(r, 0.7) ? (gen_chance(r, 0.5) ? 0x1p-15 : 0x1p-24) : 0x1p-133;
    double hi = lo == 0x1p-133 ? 0x1p-126 : 0x1p-14;
    return lo + (hi - lo) * gen_unif(r);
  }
  static const double lim[] = {
      127,   128,    255,    256,    32767, 32768, 65504, 65535, 65519.99609375,
      65520, 0x1p31, 0x1p32, 0x1p63, 0x1p64};
  int n = dt == KILN_F16 ? 7 : (int)(sizeof lim / sizeof lim[0]); /* f16: up to 65504 */
  double m = lim[gen_int(r, 0, n - 1)];
  if (m < 65504 && gen_chance(r, 0.3)) m += gen_chance(r, 0.5) ? 0.5 : -0.5;
  else if (m >= 0x1p31 && dt == KILN_F64 && gen_chance(r, 0.5)) m += gen_int(r, -3, 3);
  return m;
}

/* The largest value of integer dtype to. */
static double int_top(kiln_dtype to) {
  int bits = (int)kiln_dtype_size(to) * 8;
  return is_unsigned_int(to) ? ldexp(1, bits) - 1 : ldexp(1, bits - 1) - 1;
}

void gen_cast_edge_wide(gen_rng *r, kiln_tensor *t, int64_t i, kiln_dtype to, gen_dom dom) {
  bool uns = is_unsigned_int(t->dtype);
  int p = to == KILN_F16 ? 11 : to == KILN_BF16 ? 8 : to == KILN_F32 ? 24 : 53;
  /* half the time at 2^53, the first binade no double holds exactly, or the next */
  int q = gen_chance(r, 0.5) ? gen_int(r, 53, 54) : gen_int(r, 55, uns ? 63 : 62);
  uint64_t v =
      (1ull << q) + (1ull << (q - p)) + (gen_chance(r, 0.7) ? (uint64_t)gen_int(r, 1, 3) : 0);
  bool neg = !uns && (dom == DOM_ANY || dom == DOM_NONZERO) && gen_chance(r, 0.5);
  if (uns) kiln_store_u64(t->dtype, t->data, (size_t)i, v);
  else kiln_store_i64(t->dtype, t->data, (size_t)i, neg ? -(int64_t)v : (int64_t)v);
}

double gen_cast_edge(gen_rng *r, kiln_dtype from, kiln_dtype to, gen_dom dom) {
  bool neg = (dom == DOM_ANY || dom == DOM_NONZERO || dom == DOM_UNIT) && !is_unsigned_int(to) &&
             gen_chance(r, 0.5);
  double m, lo, hi, u = unit(to);
  if (!is_gen_float(from)) {
    /* an integer into a float (or bool): the first integers past to's significand, or the
     * source's largest; never a value the integer type cannot hold */
    int p = to == KILN_F16 ? 11 : to == KILN_BF16 ? 8 : to == KILN_F32 ? 24 : 53;
    double top = kiln_dtype_size(from) < 8 ? int_top(from)
                 : is_unsigned_int(from)   ? 0x1p64 - 2048 /* the largest doubles below 2^64, */
                                           : 0x1p63 - 1024;  /* 2^63: exact integers */
    m = gen_chance(r, 0.3) ? top : fmin(ldexp(1, p) + gen_int(r, 1, 3), top);
    if (is_unsigned_int(from)) neg = false;
    return neg ? -m : m;
  }
  if (is_gen_float(to)) {
    bool zero_ok = dom == DOM_ANY || dom == DOM_UNIT || dom == DOM_NONNEG;
    if (zero_ok && gen_chance(r, 0.12)) { /* a signed zero, or a value that rounds to one */
      subnormal_range(to, &lo, &hi);
      m = gen_chance(r, 0.5) ? 0.0 : lo * (0.05 + 0.4 * gen_unif(r));
      if (from == KILN_F16 && m > 0) m = 0; /* f16 holds nothing below f16's own subnormals */
      return neg || (dom != DOM_NONNEG && gen_chance(r, 0.3)) ? -m : m;
    }
    int w = gen_int(r, 0, dom == DOM_ANY ? 5 : 3);
    if (w == 4) return gen_chance(r, 0.5) ? -INFINITY : INFINITY; /* kept by every cast */
    if (w == 5 && largest(from) > largest(to)) {
      /* finite in from, past to's range: the tie 2^(emax+1) (1 - u/2) that rounds to inf, or
       * up to 4 times past it (to's overflow is inf, never its largest) */
      double top = largest(to) / (1 - u);
      m = gen_chance(r, 0.5) ? top * (1 - u / 2) : top * (1 + 3 * gen_unif(r));
      return neg ? -m : m;
    }
    if (w == 5) w = 2;
    subnormal_range(to, &lo, &hi);
    if (w == 0) /* to's subnormals, the top binade half the time: random mantissas */
      m = (gen_chance(r, 0.5) ? hi / 2 : lo) +
          (hi - (gen_chance(r, 0.5) ? hi / 2 : lo)) * gen_unif(r);
    else if (w == 1) /* a tie of to's rounding between two of its numbers near 1 or 1000 */
      m = (gen_chance(r, 0.5) ? 1 : 1024) * (1 + (2 * gen_int(r, 1, 64) + 1) * u);
    else if (w == 2) /* to's largest finite value, or within half an ulp above or below it */
      m = largest(to) * (gen_chance(r, 0.3) ? 1 : 1 + u * 0.999 * (gen_unif(r) - 0.5));
    else m = log_unif(r, hi, 1); /* a normal of to's smallest binades */
    if (from == KILN_F16 && m > 65504) m = 65504;
  } else if (to == KILN_BOOL) {
    double v[3] = {0, 0x1p-20, 0.5};
    m = v[gen_int(r, 0, 2)];
  } else {
    /* top = 2^b - 1; from keeps p significant bits: the largest of its numbers up to top */
    double top = int_top(to);
    int b = (int)kiln_dtype_size(to) * 8 - (is_unsigned_int(to) ? 0 : 1);
    int p = from == KILN_F64 ? 53 : from == KILN_F32 ? 24 : from == KILN_F16 ? 11 : 8;
    double ext = b <= p ? top : ldexp(1, b) - ldexp(1, b - p);
    if (from == KILN_F16) ext = fmin(ext, 65504);
    int w = gen_int(r, 0, 3);
    if (w == 0) m = ext - (b <= p ? gen_int(r, 0, 2) : 0); /* the extreme the source holds */
    else if (w == 1) m = fmin(ldexp(1, b - 1), ext);       /* the top bit alone */
    else if (w == 2) m = gen_int(r, 0, 40) + 0.5;          /* truncation toward zero */
    else
      m = top > 0x1p30 && from == KILN_F64 ? ldexp(1, gen_int(r, 31, 52)) + gen_int(r, 1, 7)
                                           : floor(log_unif(r, 2, ext));
  }
  if (dom == DOM_POS || dom == DOM_NONZERO || dom == DOM_GE1) m = fmax(m, 0x1p-20);
  if (dom == DOM_GE1) m = fmax(m, 1);
  if (dom == DOM_UNIT) m = fmin(m, 0.75);
  return neg ? -m : m;
}

/* A float edge value of kind k in dom, before the rounding to dt (magnitudes only where the
 * domain fixes the sign). */
static double float_edge(gen_rng *r, kiln_dtype dt, gen_dom dom, int k) {
  bool neg = (dom == DOM_ANY || dom == DOM_NONZERO || dom == DOM_UNIT) && gen_chance(r, 0.5);
  double m;
  switch (k) {
  case KILN_GEN_EDGE_LARGE: m = log_unif(r, 10, dt == KILN_F16 ? 4096 : 1e4); break;
  case KILN_GEN_EDGE_EXP_OVER: m = exp_over(r, dt); break;
  case KILN_GEN_EDGE_LIMIT:
    if (dom == DOM_UNIT) m = 1 - 2 * unit(dt) * gen_int(r, 1, 4); /* the largest below 1 */
    else if (dom == DOM_GE1) m = 1 + 2 * unit(dt) * gen_int(r, 0, 3);
    else m = largest(dt) * (1 - gen_unif(r) * 0.5);
    break;
  case KILN_GEN_EDGE_DENORMAL: m = subnormal(r, dt); break;
  case KILN_GEN_EDGE_NONFINITE: {
    int w = gen_int(r, 0, 2);
    return w == 0 ? NAN : w == 1 ? INFINITY : -INFINITY;
  }
  case KILN_GEN_EDGE_HALF: m = gen_int(r, 0, 6) + 0.5; break;
  case KILN_GEN_EDGE_ZERO: return 0.0;
  case KILN_GEN_EDGE_NARROW: m = narrow_limit(r, dt); break;
  default: return -0.0; /* NEGZERO */
  }
  return neg ? -m : m;
}

/* The range of a signed integer dtype. */
static void int_range(kiln_dtype dt, int64_t *lo, int64_t *hi) {
  int bits = (int)kiln_dtype_size(dt) * 8;
  *hi = bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
  *lo = -*hi - 1;
}

static int64_t int_extreme(gen_rng *r, kiln_dtype dt, gen_dom dom) {
  int64_t lo, hi;
  int_range(dt, &lo, &hi);
  int64_t v[4] = {lo, lo + 1, hi - 1, hi};
  bool pos_only = dom == DOM_POS || dom == DOM_NONNEG;
  return v[pos_only ? gen_int(r, 2, 3) : gen_int(r, 0, 3)];
}

static int64_t int_edge(gen_rng *r, kiln_dtype dt, gen_dom dom, int k) {
  if (k == KILN_GEN_EDGE_UINT_WRAP) {
    /* 0, 1, the top bit alone, max - 1, max, and the widths a shift or a bit count meets:
     * half the bits (a 64-bit shift taken for a 32-bit one), the bits - 1, the bits */
    int bits = (int)kiln_dtype_size(dt) * 8;
    uint64_t max = bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
    uint64_t u[8] = {0,
                     1,
                     1ull << (bits - 1),
                     max - 1,
                     max,
                     (uint64_t)bits / 2 + 1,
                     (uint64_t)bits - 1,
                     (uint64_t)bits};
    return (int64_t)u[gen_int(r, dom == DOM_POS || dom == DOM_NONZERO ? 1 : 0, 7)];
  }
  if (k == KILN_GEN_EDGE_INT_EXTREME) return int_extreme(r, dt, dom);
  if (k == KILN_GEN_EDGE_ZERO) return 0;
  int64_t lo, hi;
  int_range(dt, &lo, &hi);
  int64_t m = (int64_t)log_unif(r, hi < 1000 ? hi / 4 : 100, hi < 1e6 ? (double)hi : 1e6);
  bool neg = (dom == DOM_ANY || dom == DOM_NONZERO || dom == DOM_UNIT) && gen_chance(r, 0.5);
  return neg ? -m : m;
}

/* A tie: element i becomes a copy of an earlier element (in the domain as that one is);
 * element 0 keeps its ordinary value. */
static void tie(gen_rng *r, kiln_tensor *t, int64_t i) {
  if (i == 0) return;
  int64_t j = gen_int(r, 0, (int)(i - 1 < 1 << 20 ? i - 1 : 1 << 20));
  size_t sz = kiln_dtype_size(t->dtype);
  memcpy((char *)t->data + (size_t)i * sz, (char *)t->data + (size_t)j * sz, sz);
}

/* A NaN of either sign with a random payload, written as bits: the quiet bit set or not (a
 * signalling NaN), the payload in the low bits only half the time (0x7f800001: a conversion
 * that rounds or truncates the significand without testing for NaN makes it an infinity). */
void gen_edge_nan(gen_rng *r, kiln_tensor *t, int64_t i) {
  int sig = t->dtype == KILN_F16 ? 10 : t->dtype == KILN_BF16 ? 7 : t->dtype == KILN_F32 ? 23 : 52;
  int ebits = t->dtype == KILN_F16 ? 5 : t->dtype == KILN_BF16 || t->dtype == KILN_F32 ? 8 : 11;
  uint64_t quiet = 1ull << (sig - 1), low = (1ull << (sig - 1)) - 1;
  int w = gen_int(r, 0, 2); /* low bits alone (signalling), with the quiet bit, or random */
  uint64_t pay = w < 2 ? (uint64_t)gen_int(r, 1, 7)
                       : ((uint64_t)gen_int(r, 1, 1 << 30) * 0x9e3779b97f4a7c15ull);
  pay &= low;
  if (w == 1 || (w == 2 && gen_chance(r, 0.5))) pay |= quiet;
  if (!pay) pay = 1;
  uint64_t bits = (((1ull << ebits) - 1) << sig) | pay;
  if (gen_chance(r, 0.5)) bits |= 1ull << (sig + ebits); /* the sign */
  size_t sz = kiln_dtype_size(t->dtype);
  char *dst = (char *)t->data + (size_t)i * sz;
  if (sz == 2) {
    uint16_t b = (uint16_t)bits;
    memcpy(dst, &b, 2);
  } else if (sz == 4) {
    uint32_t b = (uint32_t)bits;
    memcpy(dst, &b, 4);
  } else {
    memcpy(dst, &bits, 8);
  }
}

void gen_edge_store(gen_rng *r, kiln_tensor *t, int64_t i, gen_dom dom, int kind) {
  if (kind == KILN_GEN_EDGE_TIE) tie(r, t, i);
  else if (is_gen_float(t->dtype) && kind == KILN_GEN_EDGE_NONFINITE && gen_chance(r, 0.2))
    gen_edge_nan(r, t, i);
  else if (is_gen_float(t->dtype))
    kiln_store_f64(t->dtype, t->data, (size_t)i, float_edge(r, t->dtype, dom, kind));
  else kiln_store_i64(t->dtype, t->data, (size_t)i, int_edge(r, t->dtype, dom, kind));
}

bool gen_edge_in_dom(const kiln_tensor *t, int64_t i, gen_dom dom) {
  if (t->dtype == KILN_BOOL) return true;
  if (is_unsigned_int(t->dtype)) { /* as uint64: u64 values past INT64_MAX stay positive */
    uint64_t u = kiln_load_u64(t->dtype, t->data, (size_t)i);
    return dom == DOM_POS || dom == DOM_NONZERO ? u != 0 : true;
  }
  if (!is_gen_float(t->dtype)) {
    int64_t x = kiln_load_i64(t->dtype, t->data, (size_t)i);
    return dom == DOM_POS       ? x >= 1
           : dom == DOM_NONZERO ? x != 0
           : dom == DOM_NONNEG  ? x >= 0
                                : true;
  }
  double x = kiln_load_f64(t->dtype, t->data, (size_t)i);
  switch (dom) {
  case DOM_POS: return x > 0 && isfinite(x);
  case DOM_UNIT: return x > -1 && x < 1;
  case DOM_GE1: return x >= 1 && isfinite(x);
  case DOM_NONZERO: return x != 0 && isfinite(x);
  case DOM_NONNEG: return x >= 0 && isfinite(x);
  default: return true; /* ANY: NaN and infinities too (the nonfinite kind) */
  }
}
