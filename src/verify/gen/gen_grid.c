/* The edge grid: small graphs enumerated, not drawn. Each cell holds every conversion from one
 * dtype (Cast to each other generated dtype), or every NaN-, sign- and range-sensitive
 * elementwise op of one dtype (Min and Max in both operand orders, Mod in both modes, Div,
 * Clip, Abs, Neg, Sign, Relu, the roundings, the comparisons and Where, a Pad of -0; the shifts
 * and bitwise ops of integers; the math and activations of floats), on inputs that hold every
 * edge value of their dtype at once:
 * - floats: signed zeros, NaNs of several payloads and both signs, the infinities, and for each
 *   narrower float type its largest value, the tie above it (which rounds to inf), the value
 *   just below that tie, the ties of its rounding near 1, its subnormals, the ties at its
 *   smallest subnormal and at its smallest normal, and values past its range;
 * - into integer types: each target's extremes as far as the source holds them, the top bit
 *   alone, and fractions that truncate toward zero;
 * - integers: the extremes and their neighbours, the first integers past each float's
 *   significand (ties of the integer-to-float rounding), and integers just above a tie of a
 *   narrow float that a conversion through a wider float rounds twice (to the tie, then to
 *   even).
 * Binary ops read a column a[E,1] and a row b[1,E], so every ordered pair of edge values
 * meets. The float math reads a tamer set (NaN, the infinities, signed zeros, a tiny normal
 * whose reciprocal is finite, a value whose exp is just finite): the reference counts a finite
 * input whose result leaves the dtype's range as undefined. Nothing is drawn at random: a cell is
 * the same graph and inputs in every campaign, and `kiln fuzz` runs all of them, compiled, before
 * its random graphs. Values whose result ONNX leaves open (NaN or a value out of range cast to an
 * integer, a zero divisor of an integer) are left out by construction, and a node the schema does
 * not allow for the dtype at the cell's opset is dropped (gen_node_types_ok); the reference must
 * then find every result defined and stable, else the cell is reported invalid (a generator bug).
 */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

enum { GRID_OPSET = 21, GRID_MAX_IN = 24, GRID_MAX_LINES = 64, GRID_MAX_VALS = 192 };

/* the source dtypes of the cast cells, then the dtypes of the arithmetic cells */
static const kiln_dtype cast_src[] = {KILN_F64, KILN_F32, KILN_F16, KILN_BF16, KILN_I64,
                                      KILN_I32, KILN_I16, KILN_I8,  KILN_U64,  KILN_U32,
                                      KILN_U16, KILN_U8,  KILN_BOOL};
static const kiln_dtype arith_dt[] = {KILN_F64, KILN_F32, KILN_F16, KILN_BF16, KILN_I64, KILN_I32,
                                      KILN_I16, KILN_I8,  KILN_U64, KILN_U32,  KILN_U16, KILN_U8};
#define N_CAST ((int)(sizeof cast_src / sizeof cast_src[0]))
#define N_ARITH ((int)(sizeof arith_dt / sizeof arith_dt[0]))

int kiln_gen_grid_count(void) {
  return N_CAST + N_ARITH;
}

/* ---- edge values ---- */
typedef struct vlist {
  int n;
  double v[GRID_MAX_VALS];
  int64_t i[GRID_MAX_VALS]; /* integer lists: exact values (u64 above 2^63 as their bits) */
} vlist;

static void vl_add(vlist *l, double x) {
  if (l->n < GRID_MAX_VALS) l->v[l->n++] = x;
}

static void vl_pm(vlist *l, double x) {
  vl_add(l, x), vl_add(l, -x);
}

static void vl_int(vlist *l, int64_t x) {
  if (l->n < GRID_MAX_VALS) l->i[l->n++] = x;
}

static bool is_float(kiln_dtype t) {
  return t == KILN_F64 || t == KILN_F32 || t == KILN_F16 || t == KILN_BF16;
}

static bool is_unsigned(kiln_dtype t) {
  return t == KILN_U8 || t == KILN_U16 || t == KILN_U32 || t == KILN_U64;
}

/* significand bits (with the implicit one), largest exponent, smallest normal exponent */
static void float_params(kiln_dtype t, int *p, int *emax, int *emin) {
  if (t == KILN_F16) *p = 11, *emax = 15, *emin = -14;
  else if (t == KILN_BF16) *p = 8, *emax = 127, *emin = -126;
  else if (t == KILN_F32) *p = 24, *emax = 127, *emin = -126;
  else *p = 53, *emax = 1023, *emin = -1022;
}

static double largest(kiln_dtype t) {
  int p, emax, emin;
  float_params(t, &p, &emax, &emin);
  return t == KILN_F64 ? DBL_MAX : (2 - ldexp(1, 1 - p)) * ldexp(1, emax);
}

/* x as dtype t holds it */
static double held(kiln_dtype t, double x) {
  uint64_t tmp = 0;
  kiln_store_f64(t, &tmp, 0, x);
  return kiln_load_f64(t, &tmp, 0);
}

/* The edges of float type t as a target, both signs: its largest value, the tie above it and
 * just below that tie, ties of its rounding near 1 and 1024 (and just past one: rounded twice
 * through a wider float it becomes a tie), its smallest normal, its subnormals and their ties. */
static void target_edges(vlist *l, kiln_dtype t) {
  int p, emax, emin;
  float_params(t, &p, &emax, &emin);
  double big = largest(t), over = (big + ldexp(1, emax + 1)) / 2, u = ldexp(1, -p);
  double norm = ldexp(1, emin), s = ldexp(1, emin - p + 1);
  const double m[] = {big,
                      over,
                      nextafter(over, 0),
                      1 + u,
                      1 + 3 * u,
                      1 + u + ldexp(u, -20),
                      1024 * (1 + u),
                      norm,
                      s,
                      s / 2,
                      0.75 * s,
                      1.5 * s,
                      norm - s,
                      norm - s / 2};
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) vl_pm(l, m[k]);
}

/* Values of float source S for its casts to float types (and the arithmetic cells' rows). */
static void float_sources(vlist *l, kiln_dtype S) {
  const double m[] = {0, 1, 0.5, 1.5, 2.5, 1e5, 7e4, 65519, 3e38, 1e300, 0x1p-1074, 0x1p-1022};
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) vl_pm(l, m[k]);
  vl_pm(l, INFINITY);
  const kiln_dtype narrow[] = {KILN_F16, KILN_BF16, KILN_F32};
  for (int k = 0; k < 3; k++)
    if (narrow[k] != S) target_edges(l, narrow[k]);
  target_edges(l, S);
}

/* Values of float source S whose truncation lies in integer type T's range (bool: any finite
 * value, tiny ones too): the extremes S holds, the top bit, fractions toward zero. */
static void float_to_int(vlist *l, kiln_dtype S, kiln_dtype T) {
  int p, emax, emin;
  float_params(S, &p, &emax, &emin);
  if (T == KILN_BOOL) {
    const double m[] = {0, 0.5, 1, ldexp(1, emin - p + 1), largest(S)};
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) vl_pm(l, m[k]);
    return;
  }
  bool u = is_unsigned(T);
  int b = (int)kiln_dtype_size(T) * 8 - (u ? 0 : 1);
  double ext = b <= p ? ldexp(1, b) - 1 : ldexp(1, b) - ldexp(1, b - p);
  ext = fmin(ext, largest(S));
  double lo = u ? 0 : -ldexp(1, b), hi = u ? ldexp(1, b) - 1 : ldexp(1, b) - 1;
  const double m[] = {0,   0.5,       0.75,  1.5,  2.5, 40.5, ext, ext - 1, ldexp(1, b - 1),
                      -lo, -lo + 0.5, 127.5, 255.5};
  int n0 = l->n;
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
    vl_add(l, m[k]);
    if (!u || m[k] < 1) vl_add(l, -m[k]); /* unsigned: -0, -0.5, -0.75 truncate to 0 */
  }
  /* keep what S holds exactly and what truncates into [lo, hi] (64-bit targets: lo - 1 and
   * hi + 1 round to the ends, which are left out) */
  int w = n0;
  for (int k = n0; k < l->n; k++) {
    double x = l->v[k];
    if (held(S, x) == x && x > lo - 1 && x < hi + 1) l->v[w++] = x; /* as the bound judges */
  }
  l->n = w;
}

/* 64-bit integers no double holds (from 2^53 on) one above and one below a tie of bf16 or
 * f32, in the binades a conversion through a double rounds twice: 2^53, 2^54, 2^55 and 2^62
 * (2^63 too for unsigned), both signs for signed types. */
static void wide_ties(vlist *l, bool uns) {
  static const int q[] = {53, 54, 55, 62, 63}, p[] = {8, 24};
  for (int i = 0; i < 5 - !uns; i++)
    for (int j = 0; j < 2; j++)
      for (int d = -1; d <= 1; d += 2) {
        uint64_t v = (1ull << q[i]) + (1ull << (q[i] - p[j])) + (uint64_t)(int64_t)d;
        vl_int(l, (int64_t)v);
        if (!uns) vl_int(l, -(int64_t)v);
      }
}

/* Integers of type S: extremes and neighbours, small values, the first integers past each
 * float's significand (2^p + 1 and 2^p + 3 are ties) and f16's overflow edges. */
static void int_values(vlist *l, kiln_dtype S) {
  int bits = (int)kiln_dtype_size(S) * 8;
  if (S == KILN_BOOL) {
    vl_int(l, 0), vl_int(l, 1);
    return;
  }
  if (S == KILN_U64) {
    const uint64_t m[] = {0,
                          1,
                          2,
                          3,
                          7,
                          UINT64_MAX,
                          UINT64_MAX - 1,
                          1ull << 63,
                          (1ull << 63) + 1,
                          UINT64_MAX - 1024,
                          UINT64_MAX - 2048,
                          (1ull << 53) + 1,
                          (1ull << 24) + 1,
                          65519,
                          65520,
                          (1ull << 24) + (1ull << 16) + 1,
                          (1ull << 60) + (1ull << 36) + 1,
                          (1ull << 60) + (1ull << 52) + 1};
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) vl_int(l, (int64_t)m[k]);
    wide_ties(l, true);
    return;
  }
  bool u = is_unsigned(S);
  int64_t hi = u ? (int64_t)((1ull << bits) - 1) : (int64_t)((1ull << (bits - 1)) - 1);
  int64_t lo = u ? 0 : -hi - 1;
  const int64_t m[] = {0,
                       1,
                       2,
                       3,
                       7,
                       hi,
                       hi - 1,
                       hi / 2 + 1,
                       (1ll << 8) + 1,
                       (1ll << 11) + 1,
                       (1ll << 11) + 3,
                       (1ll << 24) + 1,
                       (1ll << 24) + 3,
                       (1ll << 53) + 1,
                       65504,
                       65519,
                       65520,
                       65535,
                       (1ll << 24) + (1ll << 16) + 1,  /* through f32 to bf16: rounded twice */
                       (1ll << 60) + (1ll << 36) + 1,  /* through f64 to f32 */
                       (1ll << 60) + (1ll << 52) + 1}; /* through f64 to bf16 */
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
    if (m[k] > hi) continue;
    vl_int(l, m[k]);
    if (!u && m[k] > 0) vl_int(l, -m[k]);
  }
  if (!u) vl_int(l, lo), vl_int(l, lo + 1);
  if (bits == 64) wide_ties(l, u);
}

/* ---- a cell under construction ---- */
typedef struct grid {
  kiln_strbuf sig;
  int n_in;
  kiln_tensor *in[GRID_MAX_IN];
  int n_lines, n_out;
  char *lines[GRID_MAX_LINES]; /* constants and nodes, in order */
  char out[GRID_MAX_LINES][8]; /* the output of each node line ("" for constants) */
  bool drop[GRID_MAX_LINES];   /* a node the schema does not allow */
  kiln_status err;             /* a failure of the builder itself */
} grid;

static void g_line(grid *G, const char *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void g_line(grid *G, const char *out, const char *fmt, ...) {
  if (G->n_lines >= GRID_MAX_LINES) return;
  kiln_strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  snprintf(G->out[G->n_lines], sizeof G->out[0], "%s", out ? out : "");
  G->lines[G->n_lines++] = b.data;
}

/* A node: "%yK = op(args) {attrs}" */
static void g_node(grid *G, const char *op, const char *args, const char *attrs) {
  char out[8];
  snprintf(out, sizeof out, "y%d", G->n_out++);
  if (attrs && attrs[0]) g_line(G, out, "%%%s = %s(%s) {%s}", out, op, args, attrs);
  else g_line(G, out, "%%%s = %s(%s)", out, op, args);
}

/* A graph input of dtype dt, shape [rows, cols] (cols 0: rank 1, rows 0 too: rank 0), holding
 * the values of l (floats from v, integers from i), repeated to fill it. */
static void g_input(grid *G, const char *name, kiln_dtype dt, int64_t rows, int64_t cols,
                    const vlist *l, bool ints) {
  if (G->n_in >= GRID_MAX_IN || G->err) return;
  int64_t dims[2] = {rows, cols};
  int rank = rows == 0 ? 0 : cols == 0 ? 1 : 2;
  kiln_tensor *t;
  G->err = kiln_tensor_new(dt, rank, dims, &t);
  if (G->err) return;
  for (int64_t k = 0; k < t->numel && l->n > 0; k++) {
    int j = (int)(k % l->n);
    if (!ints) kiln_store_f64(dt, t->data, (size_t)k, l->v[j]);
    else if (dt == KILN_U64) kiln_store_u64(dt, t->data, (size_t)k, (uint64_t)l->i[j]);
    else kiln_store_i64(dt, t->data, (size_t)k, l->i[j]);
  }
  G->in[G->n_in++] = t;
  char shape[48];
  if (rank == 0) snprintf(shape, sizeof shape, "[]");
  else if (rank == 1) snprintf(shape, sizeof shape, "[%lld]", (long long)rows);
  else snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)rows, (long long)cols);
  kiln_strbuf_printf(&G->sig, "%s%%%s: %s%s", G->n_in > 1 ? ", " : "", name, kiln_dtype_name(dt),
                     shape);
}

/* NaNs of three payloads and both signs in the first elements of float input k (after its
 * other values): a quiet NaN, one with only the lowest payload bit, a negative one. */
static void g_nans(grid *G, int k, int64_t at) {
  kiln_tensor *t = G->in[k];
  if (!t || at + 3 > t->numel) return;
  uint8_t *p = t->data;
  size_t sz = kiln_dtype_size(t->dtype);
  for (int j = 0; j < 3; j++) {
    uint64_t bits = 0;
    if (t->dtype == KILN_F64)
      bits = j == 0   ? 0x7ff8000000000000ull
             : j == 1 ? 0x7ff0000000000001ull
                      : 0xfff8000000000000ull;
    else if (t->dtype == KILN_F32) bits = j == 0 ? 0x7fc00000u : j == 1 ? 0x7f800001u : 0xffc00000u;
    else if (t->dtype == KILN_F16) bits = j == 0 ? 0x7e00u : j == 1 ? 0x7c01u : 0xfe00u;
    else bits = j == 0 ? 0x7fc0u : j == 1 ? 0x7f81u : 0xffc0u;
    memcpy(p + (size_t)(at + j) * sz, &bits, sz); /* little-endian: the low bytes */
  }
}

/* ---- the cells ---- */
static void cast_cell(grid *G, kiln_dtype S) {
  vlist l = {0};
  char args[16];
  bool f = is_float(S);
  if (f) float_sources(&l, S);
  else int_values(&l, S);
  int nx = l.n + (f ? 3 : 0);
  g_input(G, "x", S, nx, 0, &l, !f);
  if (f) g_nans(G, 0, l.n);
  for (int k = 0; k < N_CAST; k++) {
    kiln_dtype T = cast_src[k];
    if (T == S) continue;
    char to[16];
    snprintf(to, sizeof to, "to=%d", (int)T);
    if (!f || is_float(T)) {
      g_node(G, "Cast", "%x", to);
      continue;
    }
    vlist li = {0}; /* a float into an integer type: defined values only */
    float_to_int(&li, S, T);
    char name[8];
    snprintf(name, sizeof name, "x%d", k);
    g_input(G, name, S, li.n, 0, &li, false);
    snprintf(args, sizeof args, "%%%s", name);
    g_node(G, "Cast", args, to);
  }
  /* through a wider or narrower float and back: what a pass that drops a cast pair changes */
  if (f) {
    const kiln_dtype mid[] = {KILN_F16, KILN_BF16, KILN_F32};
    for (int k = 0; k < 3; k++) {
      if (mid[k] == S) continue;
      char to[16];
      snprintf(to, sizeof to, "to=%d", (int)mid[k]);
      g_node(G, "Cast", "%x", to);
      char back[16], in[8];
      snprintf(back, sizeof back, "to=%d", (int)S);
      snprintf(in, sizeof in, "%%y%d", G->n_out - 1);
      g_node(G, "Cast", in, back);
    }
    g_node(G, "CastLike", "%x, %x0l", NULL);
    vlist one = {0};
    vl_add(&one, 1);
    g_input(G, "x0l", KILN_F16, 1, 0, &one, false);
  }
}

/* The comparisons of the column a and the row b (every ordered pair), and a select by one. */
static void compare_select(grid *G) {
  const char *cmp[] = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) g_node(G, cmp[k], "%a, %b", NULL);
  g_line(G, "", "%%lt = Less(%%a, %%b)");
  g_node(G, "Where", "%lt, %a, %b", NULL);
}

static void float_arith(grid *G, kiln_dtype D) {
  vlist e = {0}, nz = {0}, c = {0};
  /* f64's largest is where the reference, itself double, is blind: the binade below it */
  double big = D == KILN_F64 ? 0x1p1023 : largest(D), s = ldexp(1, (D == KILN_F64   ? -1074
                                                                    : D == KILN_F16 ? -24
                                                                                    : -149));
  if (D == KILN_BF16) s = 0x1p-133;
  const double m[] = {0, 1, 0.5, 1.5, 2.5, 3, big, s, INFINITY};
  for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) vl_pm(&e, m[k]);
  const double d[] = {1, 0.5, 1.5, 2.5, 3, big, s, INFINITY};
  for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) vl_pm(&nz, d[k]);
  int ne = e.n + 3, nn = nz.n + 3;
  g_input(G, "a", D, ne, 1, &e, false); /* a column and a row: every ordered pair */
  g_nans(G, 0, e.n);
  g_input(G, "b", D, 1, ne, &e, false);
  g_nans(G, 1, e.n);
  g_input(G, "d", D, 1, nn, &nz, false); /* divisors: no zero */
  g_nans(G, 2, nz.n);
  vl_add(&c, -1), vl_add(&c, -0.0);
  vlist lo = {0}, hi = {0}, z = {0};
  vl_add(&lo, -1.5), vl_add(&hi, -0.0), vl_add(&z, 0.0);
  g_input(G, "lo", D, 0, 0, &lo, false);
  g_input(G, "hi", D, 0, 0, &hi, false);
  g_input(G, "z", D, 0, 0, &z, false);
  g_node(G, "Min", "%a, %b", NULL);
  g_node(G, "Min", "%b, %a", NULL);
  g_node(G, "Max", "%a, %b", NULL);
  g_node(G, "Max", "%b, %a", NULL);
  g_node(G, "Min", "%a, %b, %lo", NULL);
  g_node(G, "Mod", "%a, %d", "fmod=1");
  g_node(G, "Clip", "%a, %lo, %hi", NULL);
  g_node(G, "Clip", "%a, %z", NULL);
  g_node(G, "Clip", "%a, _, %lo", NULL);
  /* math on edge values that keep every result in range (m: NaN, the infinities, signed zeros,
   * a tiny normal whose reciprocal is finite, and a value whose exp is just finite); where a
   * result is NaN or infinite the input holds NaN and infinities too, so the reference takes
   * them as propagated and compares them exactly */
  vlist mv = {0};
  double hi_exp = D == KILN_F16 ? 10 : D == KILN_F64 ? 700 : 80;
  double tiny = D == KILN_F16 ? 0x1p-10 : D == KILN_F64 ? 0x1p-1000 : 0x1p-100;
  const double mm[] = {0, 1, 0.5, 2.5, 3, hi_exp, tiny, INFINITY};
  for (size_t k = 0; k < sizeof mm / sizeof mm[0]; k++) vl_pm(&mv, mm[k]);
  g_input(G, "m", D, mv.n + 3, 1, &mv, false);
  g_nans(G, G->n_in - 1, mv.n);
  g_input(G, "mb", D, 1, mv.n + 3, &mv, false);
  g_nans(G, G->n_in - 1, mv.n);
  mv.n -= 2; /* the infinities last: mf holds the finite ones (bounds that scale with |x|) */
  g_input(G, "mf", D, mv.n, 0, &mv, false);
  const char *un[] = {"Abs",        "Neg",  "Relu",    "Sign",      "Round",
                      "Floor",      "Ceil", "Exp",     "Log",       "Sqrt",
                      "Reciprocal", "Tanh", "Sigmoid", "Erf",       "Softsign",
                      "Atan",       "Elu",  "Selu",    "LeakyRelu", "ThresholdedRelu",
                      "Shrink",     "Celu", "IsNaN",   "IsInf",     "Softplus",
                      "Sin",        "Cos"};
  for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) g_node(G, un[k], k < 7 ? "%a" : "%m", NULL);
  g_node(G, "HardSigmoid", "%mf", NULL);
  g_node(G, "HardSwish", "%mf", NULL);
  g_node(G, "IsInf", "%a", "detect_negative=0");
  g_node(G, "IsInf", "%a", "detect_positive=0");
  compare_select(G); /* NaN unordered, -0 equal to 0 */
  g_node(G, "Div", "%m, %mb", NULL);
  /* a constant Pad whose value is -0, and one of the default 0, on a row with signed zeros */
  g_line(G, "", "%%pads = const i64[2] [2, 1]");
  g_line(G, "", "%%nz = const %s[] [-0]", kiln_dtype_name(D));
  g_node(G, "Pad", "%c, %pads, %nz", NULL);
  g_node(G, "Pad", "%c, %pads", NULL);
  g_input(G, "c", D, 2, 0, &c, false);
}

static void int_arith(grid *G, kiln_dtype D) {
  vlist e = {0}, nz = {0}, dv = {0}, sh = {0};
  int_values(&e, D);
  bool u = is_unsigned(D);
  int bits = (int)kiln_dtype_size(D) * 8;
  for (int k = 0; k < e.n; k++) {
    int64_t x = e.i[k];
    if (x != 0) vl_int(&nz, x);
    if (x != 0 && (u || x != -1)) vl_int(&dv, x); /* min / -1 overflows */
  }
  g_input(G, "a", D, e.n, 1, &e, true);
  g_input(G, "b", D, 1, e.n, &e, true);
  g_input(G, "d", D, 1, nz.n, &nz, true);
  g_input(G, "q", D, 1, dv.n, &dv, true);
  g_node(G, "Min", "%a, %b", NULL);
  g_node(G, "Max", "%b, %a", NULL);
  /* reductions whose rows hold one extreme throughout (the row of a's minimum in Min(a, b)):
   * their result is the reduction's identity element unless it is the type's own extreme */
  g_line(G, "", "%%ax1 = const i64[1] [1]");
  g_line(G, "", "%%mn = Min(%%a, %%b)");
  g_line(G, "", "%%mx = Max(%%a, %%b)");
  g_node(G, "ReduceMax", "%mn, %ax1", "keepdims=0");
  g_node(G, "ReduceMin", "%mx, %ax1", "keepdims=0");
  g_node(G, "ArgMax", "%mn", "axis=1");
  g_node(G, "ArgMin", "%mx", "axis=1, select_last_index=1");
  g_node(G, "Mod", "%a, %d", NULL);
  g_node(G, "Mod", "%a, %d", "fmod=1");
  g_node(G, "Div", "%a, %q", NULL);
  vlist lo = {0}, hi = {0};
  vl_int(&lo, u ? 2 : -3), vl_int(&hi, 7);
  g_input(G, "lo", D, 0, 0, &lo, true);
  g_input(G, "hi", D, 0, 0, &hi, true);
  g_node(G, "Clip", "%a, %lo, %hi", NULL);
  g_node(G, "Clip", "%a, _, %lo", NULL);
  g_node(G, "Sign", "%a", NULL);
  g_node(G, "Abs", "%a", NULL);
  g_node(G, "Relu", "%a", NULL);
  if (!u) g_node(G, "Neg", "%a", NULL);
  compare_select(G); /* u64 above 2^63 against small values */
  /* the bitwise ops on the extremes */
  const char *bw[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
  for (size_t k = 0; k < sizeof bw / sizeof bw[0]; k++) g_node(G, bw[k], "%a, %b", NULL);
  g_node(G, "BitwiseNot", "%a", NULL);
  if (u) {
    const int64_t s[] = {0, 1, 3, bits / 2, bits - 1};
    for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) vl_int(&sh, s[k]);
    g_input(G, "s", D, 1, sh.n, &sh, true);
    g_node(G, "BitShift", "%a, %s", "direction=\"LEFT\"");
    g_node(G, "BitShift", "%a, %s", "direction=\"RIGHT\"");
  }
}

const char *kiln_gen_grid_name(int k, char *buf, size_t len) {
  if (k >= 0 && k < N_CAST) snprintf(buf, len, "casts from %s", kiln_dtype_name(cast_src[k]));
  else if (k >= N_CAST && k < N_CAST + N_ARITH)
    snprintf(buf, len, "elementwise ops of %s", kiln_dtype_name(arith_dt[k - N_CAST]));
  else snprintf(buf, len, "?");
  return buf;
}

/* The graph text without the dropped nodes; every kept node's output is a graph output. */
static char *grid_text(const grid *G) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "graph @grid(%s) -> (", G->sig.data ? G->sig.data : "");
  int n = 0;
  for (int k = 0; k < G->n_lines; k++)
    if (G->out[k][0] && !G->drop[k])
      kiln_strbuf_printf(&b, "%s%%%s: ?", n++ ? ", " : "", G->out[k]);
  kiln_strbuf_printf(&b, ") {\n  opset \"\" %d\n", GRID_OPSET);
  for (int k = 0; k < G->n_lines; k++)
    if (!G->drop[k]) kiln_strbuf_printf(&b, "  %s\n", G->lines[k]);
  kiln_strbuf_printf(&b, "  return");
  n = 0;
  for (int k = 0; k < G->n_lines; k++)
    if (G->out[k][0] && !G->drop[k]) kiln_strbuf_printf(&b, "%s %%%s", n++ ? "," : "", G->out[k]);
  kiln_strbuf_printf(&b, "\n}\n");
  return b.data;
}

static kiln_status parse_grid(const grid *G, kiln_graph **out) {
  char *text = grid_text(G);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "grid.kiln", &g);
  if (!st) st = kiln_ops_infer_graph(g);
  free(text);
  if (st) kiln_graph_free(g), g = NULL;
  *out = g;
  return st;
}

/* Marks the node lines whose node the schema does not allow; true when any was marked. */
static bool drop_disallowed(grid *G, const kiln_graph *g) {
  bool any = false;
  char why[160];
  for (int n = 0; n < g->nodes.len; n++) {
    const kiln_node *nd = &g->nodes.data[n];
    if (nd->n_outputs < 1 || nd->outputs[0] < 0 ||
        gen_node_types_ok(g, n, GRID_OPSET, why, sizeof why))
      continue;
    const char *name = g->values.data[nd->outputs[0]].name;
    for (int k = 0; k < G->n_lines; k++)
      if (!strcmp(G->out[k], name)) G->drop[k] = any = true;
  }
  return any;
}

kiln_status kiln_gen_grid(int k, kiln_gen_case *out) {
  memset(out, 0, sizeof *out);
  if (k < 0 || k >= kiln_gen_grid_count()) return KILN_BUG("generator: no grid cell %d", k);
  grid G = {0};
  if (k < N_CAST) cast_cell(&G, cast_src[k]);
  else if (is_float(arith_dt[k - N_CAST])) float_arith(&G, arith_dt[k - N_CAST]);
  else int_arith(&G, arith_dt[k - N_CAST]);
  kiln_graph *g = NULL;
  kiln_status st = G.err ? G.err : parse_grid(&G, &g);
  if (!st && drop_disallowed(&G, g)) {
    kiln_graph_free(g);
    st = parse_grid(&G, &g);
  }
  if (!st && G.n_in != g->inputs.len)
    st = KILN_BUG("generator: grid cell %d has %d inputs, its graph %d", k, G.n_in, g->inputs.len);
  out->opset = GRID_OPSET;
  out->genome.seed = (uint64_t)k;
  if (!st) {
    out->g = g;
    out->n_in = G.n_in;
    out->inputs = kiln_xcalloc((size_t)G.n_in + 1, sizeof *out->inputs);
    for (int i = 0; i < G.n_in; i++) out->inputs[i] = kiln_val_tensor(G.in[i]), G.in[i] = NULL;
    out->input_draws = 1;
    kiln_vref *r = NULL;
    kiln_status rs = kiln_vref_compute(g, out->n_in, out->inputs, &r);
    char name[48];
    kiln_gen_grid_name(k, name, sizeof name);
    if (rs) {
      snprintf(out->note, sizeof out->note, "grid cell %d (%s): %s", k, name,
               kiln_status_message(rs));
      out->status = KILN_GEN_INVALID;
    } else if (r->n_nonfinite || r->n_unstable) {
      snprintf(out->note, sizeof out->note, "grid cell %d (%s): %lld non-finite, %lld unstable: %s",
               k, name, (long long)r->n_nonfinite, (long long)r->n_unstable, r->note);
      out->status = KILN_GEN_INVALID;
    } else out->status = KILN_GEN_OK;
    kiln_status_free(rs);
    kiln_vref_free(r);
  }
  for (int i = 0; i < G.n_in; i++) kiln_tensor_free(G.in[i]);
  for (int i = 0; i < G.n_lines; i++) free(G.lines[i]);
  kiln_strbuf_free(&G.sig);
  if (st && out->g == NULL) return st;
  return KILN_OK;
}
