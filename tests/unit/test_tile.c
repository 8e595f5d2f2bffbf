/* Tile IR core: interpreter semantics (every op class and dtype class, GPU lockstep with
 * barriers and shared memory, MMA, bounds errors), printer and parser round trips, verifier
 * accepts and rejects, and the golden files of tests/tile. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "harness.h"
#include "tile/tile.h"

/* ---- helpers ---- */
static char *print_kernel(const kiln_tkernel *k) {
  kiln_strbuf b = {0};
  kiln_tkernel_print(k, &b);
  return b.data ? b.data : strdup("");
}

static bool msg_has(kiln_status st, const char *needle) {
  bool ok = st && strstr(kiln_status_message(st), needle) != NULL;
  if (!ok) fprintf(stderr, "expected \"%s\" in: %s\n", needle, st ? kiln_status_message(st) : "OK");
  return ok;
}

/* Checks that st is an error whose message contains every needle (NULL-terminated). */
static void check_err_has(kiln_status st, const char *n1, const char *n2) {
  CHECK(st != KILN_OK);
  CHECK(msg_has(st, n1));
  if (n2) CHECK(msg_has(st, n2));
  kiln_status_free(st);
}

/* y[i] = op(x[i]) for a unary op, or op(x[i], z[i]) for a binary one, on type t. */
typedef struct ewk {
  kiln_tmodule *m;
  kiln_tkernel *k;
  int x, z, y, i;
} ewk;

static ewk ew_kernel(kiln_dtype in, kiln_dtype out, int64_t n) {
  ewk e;
  e.m = kiln_tmodule_new();
  e.k = kiln_tkernel_new(e.m, "ew");
  e.x = kiln_tkernel_param(e.k, "x", in, n);
  e.z = kiln_tkernel_param(e.k, "z", in, n);
  e.y = kiln_tkernel_param(e.k, "y", out, n);
  e.i = kiln_tkernel_var(e.k, "i", KILN_I64);
  return e;
}

static void ew_body(ewk *e, kiln_texpr *value, int64_t n) {
  kiln_tstmt *loop = kiln_tfor(e->k, e->i, kiln_tint(e->k, n), KILN_LOOP_SERIAL);
  kiln_tblock_push(e->k, &loop->body, kiln_tstore(e->k, e->y, kiln_tv(e->k, e->i), value));
  kiln_tblock_push(e->k, &e->k->body, loop);
}

static kiln_texpr *X(ewk *e) {
  return kiln_tload(e->k, e->x, kiln_tv(e->k, e->i));
}
static kiln_texpr *Z(ewk *e) {
  return kiln_tload(e->k, e->z, kiln_tv(e->k, e->i));
}

/* Runs y = op(x[, z]) over n elements of type t and returns the status. */
static kiln_status run_ew(kiln_top op, kiln_dtype t, const void *x, const void *z, void *y,
                          int64_t n) {
  kiln_dtype rt = kiln_top_result(op, t);
  ewk e = ew_kernel(t, rt, n);
  kiln_texpr *v =
      kiln_top_arity(op) == 1 ? kiln_tun(e.k, op, X(&e)) : kiln_tbin(e.k, op, X(&e), Z(&e));
  ew_body(&e, v, n);
  void *args[3] = {(void *)x, (void *)(z ? z : x), y};
  kiln_status st = kiln_tkernel_interp(e.k, args);
  kiln_tmodule_free(e.m);
  return st;
}

/* ---- interpreter: floats ---- */
static void test_interp_add1(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "add1");
  int x = kiln_tkernel_param(k, "x", KILN_F32, 1024);
  int y = kiln_tkernel_param(k, "y", KILN_F32, 1024);
  int i = kiln_tkernel_var(k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, 1024), KILN_LOOP_PARALLEL);
  kiln_tblock_push(k, &loop->body,
                   kiln_tstore(k, y, kiln_tv(k, i),
                               kiln_tbin(k, KILN_TOP_ADD, kiln_tload(k, x, kiln_tv(k, i)),
                                         kiln_tfloat(k, KILN_F32, 1.0))));
  kiln_tblock_push(k, &k->body, loop);
  float xs[1024], ys[1024];
  for (int j = 0; j < 1024; j++) xs[j] = (float)j * 0.5f;
  void *args[2] = {xs, ys};
  CHECK_OK(kiln_tkernel_interp(k, args));
  bool ok = true;
  for (int j = 0; j < 1024; j++) ok &= ys[j] == xs[j] + 1.0f;
  CHECK(ok);
  kiln_tmodule_free(m);
}

static void test_interp_f32_rounding(void) {
  /* Each operation rounds to float: (1e8 + 1) - 1e8 is 0 in float, 1 in double. */
  float x[3] = {1e8f, 0.1f, 3.0f}, z[3] = {1.0f, 0.2f, 7.0f}, y[3], w[3];
  CHECK_OK(run_ew(KILN_TOP_ADD, KILN_F32, x, z, y, 3));
  CHECK_OK(run_ew(KILN_TOP_SUB, KILN_F32, y, x, w, 3));
  CHECK(w[0] == 0.0f);
  CHECK(y[1] == 0.1f + 0.2f);
  CHECK_OK(run_ew(KILN_TOP_DIV, KILN_F32, x, z, y, 3));
  CHECK(y[2] == 3.0f / 7.0f);
  double dx[1] = {1e16}, dz[1] = {1.0}, dy[1];
  CHECK_OK(run_ew(KILN_TOP_ADD, KILN_F64, dx, dz, dy, 1));
  CHECK(dy[0] == 1e16 + 1.0);
}

static void test_interp_float_unary(void) {
  static const kiln_top ops[] = {
      KILN_TOP_NEG,   KILN_TOP_ABS,  KILN_TOP_EXP,   KILN_TOP_LOG,   KILN_TOP_SQRT,  KILN_TOP_SIN,
      KILN_TOP_COS,   KILN_TOP_TAN,  KILN_TOP_ASIN,  KILN_TOP_ACOS,  KILN_TOP_ATAN,  KILN_TOP_SINH,
      KILN_TOP_COSH,  KILN_TOP_TANH, KILN_TOP_ASINH, KILN_TOP_ACOSH, KILN_TOP_ATANH, KILN_TOP_ERF,
      KILN_TOP_FLOOR, KILN_TOP_CEIL, KILN_TOP_ROUND};
  float x[4] = {0.3f, -0.7f, 2.5f, 1.5f}, y[4];
  float (*ref[])(float) = {NULL,   fabsf,  expf,   logf,  sqrtf,  sinf,  cosf,
                           tanf,   asinf,  acosf,  atanf, sinhf,  coshf, tanhf,
                           asinhf, acoshf, atanhf, erff,  floorf, ceilf, nearbyintf};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
    CHECK_OK(run_ew(ops[o], KILN_F32, x, NULL, y, 4));
    for (int j = 0; j < 4; j++) {
      float want = ref[o] ? ref[o](x[j]) : -x[j];
      bool same = (isnan(want) && isnan(y[j])) || want == y[j];
      if (!same) fprintf(stderr, "%s(%g) = %g, want %g\n", kiln_top_name(ops[o]), x[j], y[j], want);
      CHECK(same);
    }
  }
  CHECK_OK(run_ew(KILN_TOP_ROUND, KILN_F32, x, NULL, y, 4)); /* ties to even */
  CHECK(y[2] == 2.0f && y[3] == 2.0f);
  double dx[2] = {0.5, -2.5}, dy[2];
  CHECK_OK(run_ew(KILN_TOP_ROUND, KILN_F64, dx, NULL, dy, 2));
  CHECK(dy[0] == 0.0 && dy[1] == -2.0);
  CHECK_OK(run_ew(KILN_TOP_EXP, KILN_F64, dx, NULL, dy, 2));
  CHECK(dy[0] == exp(0.5));
}

static void test_interp_float_binary(void) {
  float x[4] = {NAN, 1.0f, 2.0f, 5.5f}, z[4] = {1.0f, NAN, 3.0f, 2.0f}, y[4];
  CHECK_OK(run_ew(KILN_TOP_MIN, KILN_F32, x, z, y, 4));
  CHECK(isnan(y[0]) && isnan(y[1]) && y[2] == 2.0f && y[3] == 2.0f);
  CHECK_OK(run_ew(KILN_TOP_MAX, KILN_F32, x, z, y, 4));
  CHECK(isnan(y[0]) && isnan(y[1]) && y[2] == 3.0f && y[3] == 5.5f);
  CHECK_OK(run_ew(KILN_TOP_MOD, KILN_F32, x, z, y, 4));
  CHECK(y[3] == fmodf(5.5f, 2.0f));
  CHECK_OK(run_ew(KILN_TOP_POW, KILN_F32, x, z, y, 4));
  CHECK(y[2] == powf(2.0f, 3.0f));
  CHECK_OK(run_ew(KILN_TOP_ATAN2, KILN_F32, x, z, y, 4));
  CHECK(y[3] == atan2f(5.5f, 2.0f));
  uint8_t b[4];
  CHECK_OK(run_ew(KILN_TOP_LT, KILN_F32, x, z, b, 4));
  CHECK(b[0] == 0 && b[1] == 0 && b[2] == 1 && b[3] == 0);
  CHECK_OK(run_ew(KILN_TOP_NE, KILN_F32, x, z, b, 4));
  CHECK(b[0] == 1 && b[1] == 1 && b[2] == 1);
  CHECK_OK(run_ew(KILN_TOP_ISNAN, KILN_F32, x, NULL, b, 4));
  CHECK(b[0] == 1 && b[1] == 0);
  float inf[2] = {INFINITY, -1.0f};
  CHECK_OK(run_ew(KILN_TOP_ISINF, KILN_F32, inf, NULL, b, 2));
  CHECK(b[0] == 1 && b[1] == 0);
}

/* ---- interpreter: integers ---- */
static void test_interp_int_wrap(void) {
  int8_t a[3] = {127, -128, 100}, b[3] = {1, 1, 3}, r[3];
  CHECK_OK(run_ew(KILN_TOP_ADD, KILN_I8, a, b, r, 3));
  CHECK(r[0] == -128 && r[1] == -127 && r[2] == 103);
  CHECK_OK(run_ew(KILN_TOP_MUL, KILN_I8, a, b, r, 3));
  CHECK(r[2] == 44); /* 300 mod 256 */
  CHECK_OK(run_ew(KILN_TOP_NEG, KILN_I8, a, NULL, r, 3));
  CHECK(r[1] == -128);
  CHECK_OK(run_ew(KILN_TOP_ABS, KILN_I8, a, NULL, r, 3));
  CHECK(r[1] == -128 && r[0] == 127);
  uint16_t u[2] = {0, 65535}, v[2] = {1, 2}, w[2];
  CHECK_OK(run_ew(KILN_TOP_SUB, KILN_U16, u, v, w, 2));
  CHECK(w[0] == 65535 && w[1] == 65533);
  CHECK_OK(run_ew(KILN_TOP_BITNOT, KILN_U16, u, NULL, w, 2));
  CHECK(w[0] == 65535 && w[1] == 0);
  int64_t big[1] = {INT64_MAX}, one[1] = {1}, out[1];
  CHECK_OK(run_ew(KILN_TOP_ADD, KILN_I64, big, one, out, 1));
  CHECK(out[0] == INT64_MIN);
  uint32_t ua[2] = {7, 0xFFFFFFFFu}, ub[2] = {2, 0}, uo[2];
  CHECK_OK(run_ew(KILN_TOP_MAX, KILN_U32, ua, ub, uo, 2));
  CHECK(uo[0] == 7 && uo[1] == 0xFFFFFFFFu);
}

static void test_interp_int_div(void) {
  int32_t a[2] = {-7, 7}, b[2] = {2, -2}, r[2];
  CHECK_OK(run_ew(KILN_TOP_DIV, KILN_I32, a, b, r, 2));
  CHECK(r[0] == -3 && r[1] == -3);
  CHECK_OK(run_ew(KILN_TOP_MOD, KILN_I32, a, b, r, 2));
  CHECK(r[0] == -1 && r[1] == 1);
  int32_t zero[2] = {1, 0};
  check_err_has(run_ew(KILN_TOP_DIV, KILN_I32, a, zero, r, 2), "division by zero", "@ew");
  check_err_has(run_ew(KILN_TOP_MOD, KILN_I32, a, zero, r, 2), "remainder by zero", NULL);
  int32_t mn[1] = {INT32_MIN}, m1[1] = {-1};
  check_err_has(run_ew(KILN_TOP_DIV, KILN_I32, mn, m1, r, 1), "overflow", NULL);
  int8_t a8[1] = {-128}, b8[1] = {-1}, r8[1];
  CHECK_OK(run_ew(KILN_TOP_DIV, KILN_I8, a8, b8, r8, 1)); /* promoted to int in C: wraps */
  CHECK(r8[0] == -128);
}

static void test_interp_shifts_bits(void) {
  int32_t a[4] = {-16, 1, 5, 3}, s[4] = {2, 31, 32, -1}, r[4];
  CHECK_OK(run_ew(KILN_TOP_SHR, KILN_I32, a, s, r, 4));
  CHECK(r[0] == -4 && r[1] == 0 && r[2] == 0 && r[3] == 0);
  CHECK_OK(run_ew(KILN_TOP_SHL, KILN_I32, a, s, r, 4));
  CHECK(r[0] == -64 && r[1] == INT32_MIN && r[2] == 0 && r[3] == 0);
  uint8_t u[2] = {0x80, 0xF0}, us[2] = {1, 8}, ur[2];
  CHECK_OK(run_ew(KILN_TOP_SHR, KILN_U8, u, us, ur, 2));
  CHECK(ur[0] == 0x40 && ur[1] == 0);
  CHECK_OK(run_ew(KILN_TOP_XOR, KILN_U8, u, us, ur, 2));
  CHECK(ur[0] == 0x81 && ur[1] == 0xF8);
  uint8_t p[2] = {1, 0}, q[2] = {1, 1}, o[2];
  CHECK_OK(run_ew(KILN_TOP_AND, KILN_BOOL, p, q, o, 2));
  CHECK(o[0] == 1 && o[1] == 0);
  CHECK_OK(run_ew(KILN_TOP_NOT, KILN_BOOL, p, NULL, o, 2));
  CHECK(o[0] == 0 && o[1] == 1);
  int16_t c[2] = {-1, 2}, d[2] = {1, 2};
  CHECK_OK(run_ew(KILN_TOP_LE, KILN_I16, c, d, o, 2));
  CHECK(o[0] == 1 && o[1] == 1);
  uint64_t e[1] = {UINT64_MAX}, f[1] = {1};
  CHECK_OK(run_ew(KILN_TOP_GT, KILN_U64, e, f, o, 1));
  CHECK(o[0] == 1);
}

/* ---- interpreter: casts ---- */
static kiln_status run_cast(kiln_dtype from, kiln_dtype to, const void *x, void *y, int64_t n) {
  ewk e = ew_kernel(from, to, n);
  ew_body(&e, kiln_tcast(e.k, to, X(&e)), n);
  void *args[3] = {(void *)x, (void *)x, y};
  kiln_status st = kiln_tkernel_interp(e.k, args);
  kiln_tmodule_free(e.m);
  return st;
}

static void test_interp_casts(void) {
  float f[4] = {-2.7f, 2.7f, 0.5f, 65504.0f}, g[4];
  int32_t i[4];
  CHECK_OK(run_cast(KILN_F32, KILN_I32, f, i, 4));
  CHECK(i[0] == -2 && i[1] == 2 && i[2] == 0);
  float big[1] = {3e9f}, nan1[1] = {NAN};
  check_err_has(run_cast(KILN_F32, KILN_I32, big, i, 1), "out of range", "i32");
  check_err_has(run_cast(KILN_F32, KILN_I32, nan1, i, 1), "out of range", NULL);
  float neg[1] = {-1.0f};
  uint8_t u8[4];
  check_err_has(run_cast(KILN_F32, KILN_U8, neg, u8, 1), "out of range", NULL);
  uint16_t h[4];
  CHECK_OK(run_cast(KILN_F32, KILN_F16, f, h, 4));
  for (int j = 0; j < 4; j++) CHECK(h[j] == kiln_f32_to_f16(f[j]));
  CHECK_OK(run_cast(KILN_F16, KILN_F32, h, g, 4));
  for (int j = 0; j < 4; j++) CHECK(g[j] == kiln_f16_to_f32(h[j]));
  uint16_t bf[4];
  CHECK_OK(run_cast(KILN_F32, KILN_BF16, f, bf, 4));
  for (int j = 0; j < 4; j++) CHECK(bf[j] == kiln_f32_to_bf16(f[j]));
  uint8_t f8[4];
  CHECK_OK(run_cast(KILN_F32, KILN_F8E4M3FN, f, f8, 4));
  for (int j = 0; j < 4; j++) CHECK(f8[j] == kiln_f64_to_f8(KILN_F8E4M3FN, f[j], true));
  int64_t l[3] = {0, -5, 300};
  CHECK_OK(run_cast(KILN_I64, KILN_BOOL, l, u8, 3));
  CHECK(u8[0] == 0 && u8[1] == 1 && u8[2] == 1);
  CHECK_OK(run_cast(KILN_I64, KILN_U8, l, u8, 3));
  CHECK(u8[1] == 251 && u8[2] == 44);
  int8_t s8[1] = {-1};
  uint32_t u32[1];
  CHECK_OK(run_cast(KILN_I8, KILN_U32, s8, u32, 1));
  CHECK(u32[0] == 0xFFFFFFFFu);
  int64_t p2[1] = {((int64_t)1 << 53) + 1};
  float pf[1];
  CHECK_OK(run_cast(KILN_I64, KILN_F32, p2, pf, 1));
  CHECK(pf[0] == (float)(((int64_t)1 << 53) + 1));
  double d[1] = {0.1};
  CHECK_OK(run_cast(KILN_F64, KILN_F32, d, pf, 1));
  CHECK(pf[0] == 0.1f);
}

/* ---- interpreter: memory, GPU threads, MMA ---- */
/* A kernel that reverses each 64-element block of x through shared memory:
 *   for b in 0..nb block.x { for t in 0..64 thread.x {
 *     sh[t] = x[b*64+t]; barrier; y[b*64+t] = sh[63-t] } } */
static kiln_tkernel *reverse_kernel(kiln_tmodule *m, int64_t nb, bool with_barrier) {
  kiln_tkernel *k = kiln_tkernel_new(m, "rev");
  int x = kiln_tkernel_param(k, "x", KILN_F32, nb * 64);
  int y = kiln_tkernel_param(k, "y", KILN_F32, nb * 64);
  int sh = kiln_tkernel_buf(k, "sh", KILN_F32, KILN_SCOPE_SHARED, 64);
  int b = kiln_tkernel_var(k, "b", KILN_I64), t = kiln_tkernel_var(k, "t", KILN_I64);
  kiln_tstmt *lb = kiln_tfor(k, b, kiln_tint(k, nb), KILN_LOOP_BLOCK_X);
  kiln_tstmt *lt = kiln_tfor(k, t, kiln_tint(k, 64), KILN_LOOP_THREAD_X);
  kiln_texpr *gi = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, b), 64), kiln_tv(k, t));
  kiln_tblock_push(k, &lt->body, kiln_tstore(k, sh, kiln_tv(k, t), kiln_tload(k, x, gi)));
  if (with_barrier) kiln_tblock_push(k, &lt->body, kiln_tbarrier(k));
  kiln_texpr *ri = kiln_tbin(k, KILN_TOP_SUB, kiln_tint(k, 63), kiln_tv(k, t));
  kiln_tblock_push(k, &lt->body, kiln_tstore(k, y, gi, kiln_tload(k, sh, ri)));
  kiln_tblock_push(k, &lb->body, lt);
  kiln_tblock_push(k, &k->body, lb);
  return k;
}

static void test_interp_gpu_lockstep(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = reverse_kernel(m, 3, true);
  float x[192], y[192];
  for (int j = 0; j < 192; j++) x[j] = (float)j;
  void *args[2] = {x, y};
  CHECK_OK(kiln_tkernel_interp(k, args));
  bool ok = true;
  for (int j = 0; j < 192; j++) ok &= y[j] == x[(j / 64) * 64 + 63 - j % 64];
  CHECK(ok);
  /* Without the barrier, thread 0 reads sh[63] before thread 63 wrote it. */
  kiln_tkernel *k2 = reverse_kernel(m, 1, false);
  check_err_has(kiln_tkernel_interp(k2, args), "%sh[63], never written", "$t=0");
  kiln_tmodule_free(m);
}

/* Tree reduction in shared memory: the barrier sits in a serial loop in the thread loop,
 * and the threads that do not add still reach it. */
static void test_interp_gpu_reduce(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "sum");
  int x = kiln_tkernel_param(k, "x", KILN_I32, 32);
  int y = kiln_tkernel_param(k, "y", KILN_I32, 1);
  int sh = kiln_tkernel_buf(k, "sh", KILN_I32, KILN_SCOPE_SHARED, 32);
  int t = kiln_tkernel_var(k, "t", KILN_I64), s = kiln_tkernel_var(k, "s", KILN_I64);
  int w = kiln_tkernel_var(k, "w", KILN_I64);
  kiln_tstmt *lt = kiln_tfor(k, t, kiln_tint(k, 32), KILN_LOOP_THREAD_X);
  kiln_tblock_push(k, &lt->body,
                   kiln_tstore(k, sh, kiln_tv(k, t), kiln_tload(k, x, kiln_tv(k, t))));
  kiln_tblock_push(k, &lt->body, kiln_tbarrier(k));
  kiln_tstmt *ls = kiln_tfor(k, s, kiln_tint(k, 5), KILN_LOOP_SERIAL);
  /* w = 16 >> s; if t < w { sh[t] = sh[t] + sh[t + w] }; barrier */
  kiln_tblock_push(k, &ls->body,
                   kiln_tassign(k, w, kiln_tbin(k, KILN_TOP_SHR, kiln_tint(k, 16), kiln_tv(k, s))));
  kiln_tstmt *iff = kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, kiln_tv(k, t), kiln_tv(k, w)));
  kiln_texpr *sum = kiln_tbin(k, KILN_TOP_ADD, kiln_tload(k, sh, kiln_tv(k, t)),
                              kiln_tload(k, sh, kiln_tadd(k, kiln_tv(k, t), kiln_tv(k, w))));
  kiln_tblock_push(k, &iff->body, kiln_tstore(k, sh, kiln_tv(k, t), sum));
  kiln_tblock_push(k, &ls->body, iff);
  kiln_tblock_push(k, &ls->body, kiln_tbarrier(k));
  kiln_tblock_push(k, &lt->body, ls);
  kiln_tstmt *i0 = kiln_tif(k, kiln_tbin(k, KILN_TOP_EQ, kiln_tv(k, t), kiln_tint(k, 0)));
  kiln_tblock_push(k, &i0->body,
                   kiln_tstore(k, y, kiln_tint(k, 0), kiln_tload(k, sh, kiln_tint(k, 0))));
  kiln_tblock_push(k, &lt->body, i0);
  kiln_tblock_push(k, &k->body, lt);
  int32_t xs[32], ys[1] = {0};
  for (int j = 0; j < 32; j++) xs[j] = j * j;
  void *args[2] = {xs, ys};
  CHECK_OK(kiln_tkernel_interp(k, args));
  CHECK(ys[0] == 10416); /* sum of squares 0..31 */
  /* A barrier that only some threads reach diverges. */
  kiln_tstmt *bad = kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, kiln_tv(k, t), kiln_tint(k, 4)));
  kiln_tblock_push(k, &bad->body, kiln_tbarrier(k));
  kiln_tblock_push(k, &lt->body, bad);
  check_err_has(kiln_tkernel_interp(k, args), "4 threads wait at a barrier that 28 others",
                "barrier");
  kiln_tmodule_free(m);
}

/* Variables and local buffers are private to each thread. */
static void test_interp_thread_private(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "priv");
  int y = kiln_tkernel_param(k, "y", KILN_I64, 8);
  int loc = kiln_tkernel_buf(k, "loc", KILN_I64, KILN_SCOPE_LOCAL, 1);
  int t = kiln_tkernel_var(k, "t", KILN_I64), a = kiln_tkernel_var(k, "a", KILN_I64);
  kiln_tblock_push(k, &k->body, kiln_tassign(k, a, kiln_tint(k, 100)));
  kiln_tstmt *lt = kiln_tfor(k, t, kiln_tint(k, 8), KILN_LOOP_THREAD_X);
  /* a = a + t; loc[0] = a; y[t] = loc[0] : each thread starts from a = 100 */
  kiln_tblock_push(k, &lt->body,
                   kiln_tassign(k, a, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, a), kiln_tv(k, t))));
  kiln_tblock_push(k, &lt->body, kiln_tstore(k, loc, kiln_tint(k, 0), kiln_tv(k, a)));
  kiln_tblock_push(k, &lt->body,
                   kiln_tstore(k, y, kiln_tv(k, t), kiln_tload(k, loc, kiln_tint(k, 0))));
  kiln_tblock_push(k, &k->body, lt);
  int64_t ys[8];
  void *args[1] = {ys};
  CHECK_OK(kiln_tkernel_interp(k, args));
  for (int j = 0; j < 8; j++) CHECK(ys[j] == 100 + j);
  /* After the loop, $a is per thread: reading it is an error. */
  kiln_tblock_push(k, &k->body, kiln_tstore(k, y, kiln_tint(k, 0), kiln_tv(k, a)));
  check_err_has(kiln_tkernel_interp(k, args), "read of $a, never assigned", NULL);
  kiln_tmodule_free(m);
}

static void test_interp_bounds(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "oob");
  int x = kiln_tkernel_param(k, "x", KILN_F32, 4);
  int y = kiln_tkernel_param(k, "y", KILN_F32, 4);
  int i = kiln_tkernel_var(k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, 4), KILN_LOOP_SERIAL);
  kiln_tblock_push(k, &loop->body,
                   kiln_tstore(k, y, kiln_tv(k, i),
                               kiln_tload(k, x, kiln_tadd(k, kiln_tv(k, i), kiln_tint(k, 1)))));
  kiln_tblock_push(k, &k->body, loop);
  float xs[4] = {0}, ys[4];
  void *args[2] = {xs, ys};
  kiln_status st = kiln_tkernel_interp(k, args);
  CHECK(st && kiln_status_code(st) == KILN_ERR_FAILED);
  CHECK(msg_has(st, "kernel @oob: load %x[4] out of bounds (size 4)"));
  CHECK(msg_has(st, "in: %y[$i] = %x[add($i, 1)]"));
  CHECK(msg_has(st, "at: $i=3"));
  kiln_status_free(st);
  /* A store out of bounds, and a type error found before running. */
  loop->body.data[0]->index = kiln_tint(k, -1);
  loop->body.data[0]->value = kiln_tfloat(k, KILN_F32, 0);
  check_err_has(kiln_tkernel_interp(k, args), "store to %y[-1] out of bounds", NULL);
  loop->body.data[0]->value = kiln_tfloat(k, KILN_F64, 0);
  kiln_status st2 = kiln_tkernel_interp(k, args);
  CHECK(st2 && kiln_status_code(st2) == KILN_ERR_INVALID);
  CHECK(msg_has(st2, "stored value is f64, expected f32"));
  kiln_status_free(st2);
  kiln_tmodule_free(m);
}

static void test_interp_mma(void) {
  /* C[2x3] (ldc 4) += A[2x5] (row major) * B[5x3] (column major: b_sk 1, b_sn 5) */
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "mm");
  int a = kiln_tkernel_param(k, "a", KILN_F16, 10);
  int b = kiln_tkernel_param(k, "b", KILN_F32, 15);
  int c = kiln_tkernel_param(k, "c", KILN_F32, 8);
  kiln_tmma mm = {.c_buf = c,
                  .a_buf = a,
                  .b_buf = b,
                  .c_off = kiln_tint(k, 0),
                  .a_off = kiln_tint(k, 0),
                  .b_off = kiln_tint(k, 0),
                  .ldc = 4,
                  .a_sm = 5,
                  .a_sk = 1,
                  .b_sk = 1,
                  .b_sn = 5,
                  .m = 2,
                  .n = 3,
                  .k = 5};
  kiln_tblock_push(k, &k->body, kiln_tmma_stmt(k, &mm));
  uint16_t as[10];
  float bs[15], cs[8], want[8];
  for (int j = 0; j < 10; j++) as[j] = kiln_f32_to_f16((float)(j - 3) * 0.25f);
  for (int j = 0; j < 15; j++) bs[j] = (float)j * 0.1f;
  for (int j = 0; j < 8; j++) cs[j] = want[j] = (float)j;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      float acc = want[i * 4 + j];
      for (int q = 0; q < 5; q++) {
        float p = kiln_f16_to_f32(as[i * 5 + q]) * bs[q + j * 5];
        acc = acc + p;
      }
      want[i * 4 + j] = acc;
    }
  void *args[3] = {as, bs, cs};
  CHECK_OK(kiln_tkernel_interp(k, args));
  CHECK(memcmp(cs, want, sizeof cs) == 0);
  /* The same with all-f32 operands (the direct path) gives the same bits. */
  kiln_tmodule *m2 = kiln_tmodule_new();
  kiln_tkernel *k2 = kiln_tkernel_new(m2, "mm32");
  int a2 = kiln_tkernel_param(k2, "a", KILN_F32, 10);
  int b2 = kiln_tkernel_param(k2, "b", KILN_F32, 15);
  int c2 = kiln_tkernel_param(k2, "c", KILN_F32, 8);
  kiln_tmma mm2 = mm;
  mm2.c_buf = c2, mm2.a_buf = a2, mm2.b_buf = b2;
  mm2.c_off = mm2.a_off = mm2.b_off = kiln_tint(k2, 0);
  kiln_tblock_push(k2, &k2->body, kiln_tmma_stmt(k2, &mm2));
  float af[10], cs2[8];
  for (int j = 0; j < 10; j++) af[j] = kiln_f16_to_f32(as[j]);
  for (int j = 0; j < 8; j++) cs2[j] = (float)j;
  void *args2[3] = {af, bs, cs2};
  CHECK_OK(kiln_tkernel_interp(k2, args2));
  CHECK(memcmp(cs2, want, sizeof cs2) == 0);
  k2->body.data[0]->mma.n = 4; /* out of bounds: the general path reports it */
  check_err_has(kiln_tkernel_interp(k2, args2), "load %b[15] out of bounds", NULL);
  kiln_tmodule_free(m2);
  k->body.data[0]->mma.ldc = 5; /* B column 3 starts at 15 */
  k->body.data[0]->mma.n = 4;
  check_err_has(kiln_tkernel_interp(k, args), "load %b[15] out of bounds", "mma %c[0] += %a[0]");
  kiln_tmodule_free(m);
}

static void test_interp_uninit_local(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "acc");
  int y = kiln_tkernel_param(k, "y", KILN_F32, 1);
  int acc = kiln_tkernel_buf(k, "acc", KILN_F32, KILN_SCOPE_LOCAL, 2);
  kiln_tblock_push(k, &k->body, kiln_tstore(k, acc, kiln_tint(k, 0), kiln_tfloat(k, KILN_F32, 2)));
  kiln_tblock_push(k, &k->body,
                   kiln_tstore(k, y, kiln_tint(k, 0), kiln_tload(k, acc, kiln_tint(k, 0))));
  float ys[1];
  void *args[1] = {ys};
  CHECK_OK(kiln_tkernel_interp(k, args));
  CHECK(ys[0] == 2.0f);
  k->body.data[1]->value->index = kiln_tint(k, 1);
  check_err_has(kiln_tkernel_interp(k, args), "load of %acc[1], never written", NULL);
  kiln_tmodule_free(m);
}

static kiln_tmodule *parse_ok(const char *text);

/* Tracked parameters: a kernel must store every element of a value it defines before the
 * end, and may not load one it has not stored (its memory holds what the last user left). */
static void test_interp_tracked_params(void) {
  kiln_tmodule *m = parse_ok("kernel @half(%x: f32[4] readonly, %y: f32[4], %s: f32[2]) {\n"
                             "  var $i: i64\n"
                             "  for $i in 0..3 serial {\n"
                             "    %y[$i] = add(%x[$i], 1:f32)\n"
                             "  }\n"
                             "  %s[0] = %y[0]\n"
                             "}\n");
  if (!m) return;
  kiln_tkernel *k = m->kernels.data[0];
  float x[4] = {1, 2, 3, 4}, y[4] = {0}, sc[2] = {0};
  void *args[3] = {x, y, sc};
  CHECK_OK(kiln_tkernel_interp(k, args)); /* untracked: y[3] left as it was */
  const uint8_t out[3] = {KILN_TRACK_NONE, KILN_TRACK_OUTPUT, KILN_TRACK_READS};
  check_err_has(kiln_tkernel_interp_tracked(k, args, out),
                "1 of the 4 elements of %y never written (the first: 3)", NULL);
  const uint8_t reads[3] = {KILN_TRACK_NONE, KILN_TRACK_READS, KILN_TRACK_READS};
  CHECK_OK(kiln_tkernel_interp_tracked(k, args, reads)); /* scratch need not be covered */
  k->body.data[1]->value->index = kiln_tint(k, 3);       /* %s[0] = %y[3]: never stored */
  check_err_has(kiln_tkernel_interp_tracked(k, args, reads), "load of %y[3], never written", NULL);
  kiln_tmodule_free(m);
  /* a raised error flag: the step fails on it, its outputs unused and not required */
  m = parse_ok("kernel @flagged(%y: f32[2], %f: i32[1]) {\n"
               "  %y[0] = 1:f32\n"
               "  %f[0] = 1:i32\n"
               "}\n");
  if (!m) return;
  int32_t flag = 0;
  void *fargs[2] = {y, &flag};
  const uint8_t ft[2] = {KILN_TRACK_OUTPUT, KILN_TRACK_FLAG};
  CHECK_OK(kiln_tkernel_interp_tracked(m->kernels.data[0], fargs, ft));
  CHECK(flag == 1);
  const uint8_t nf[2] = {KILN_TRACK_OUTPUT, KILN_TRACK_NONE};
  check_err_has(kiln_tkernel_interp_tracked(m->kernels.data[0], fargs, nf),
                "1 of the 2 elements of %y never written", NULL);
  kiln_tmodule_free(m);
}

/* ---- printer ---- */
static void test_print(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = reverse_kernel(m, 2, true);
  k->origin = "relu1, \"add\"";
  kiln_tkernel_buf(k, "tmp 1", KILN_I8, KILN_SCOPE_LOCAL, 3);
  kiln_tkernel_var(k, "v", KILN_F32);
  kiln_tblock_push(k, &k->body, kiln_tassign(k, 2, kiln_tfloat(k, KILN_F32, 0.1)));
  kiln_tblock_push(k, &k->body,
                   kiln_tstore(k, 3, kiln_tint(k, 2),
                               kiln_tcast(k, KILN_I8,
                                          kiln_tselect(k, kiln_tconst_int(k, KILN_BOOL, 1),
                                                       kiln_tconst_int(k, KILN_I32, -3),
                                                       kiln_tconst_int(k, KILN_I32, 4)))));
  char *text = print_kernel(k);
  const char *want = "kernel @rev(%x: f32[128], %y: f32[128]) origin \"relu1, \\\"add\\\"\" {\n"
                     "  shared %sh: f32[64]\n"
                     "  local %\"tmp 1\": i8[3]\n"
                     "  var $b: i64\n"
                     "  var $t: i64\n"
                     "  var $v: f32\n"
                     "  for $b in 0..2 block.x {\n"
                     "    for $t in 0..64 thread.x {\n"
                     "      %sh[$t] = %x[add(mul($b, 64), $t)]\n"
                     "      barrier\n"
                     "      %y[add(mul($b, 64), $t)] = %sh[sub(63, $t)]\n"
                     "    }\n"
                     "  }\n"
                     "  $v = 0.1:f32\n"
                     "  %\"tmp 1\"[2] = i8(select(true, -3:i32, 4:i32))\n"
                     "}\n";
  if (strcmp(text, want) != 0) fprintf(stderr, "got:\n%s", text);
  CHECK(strcmp(text, want) == 0);
  free(text);
  kiln_tmodule_free(m);
}

/* ---- text form ---- */
static kiln_tmodule *parse_ok(const char *text) {
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse(text, "snippet", &m);
  if (st) {
    fprintf(stderr, "parse failed: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    CHECK(0);
    return NULL;
  }
  return m;
}

static char *print_module(const kiln_tmodule *m) {
  kiln_strbuf b = {0};
  kiln_tmodule_print(m, &b);
  return b.data ? b.data : strdup("");
}

/* text parses, verifies and prints back identically */
static void check_canonical(const char *text) {
  kiln_tmodule *m = parse_ok(text);
  if (!m) return;
  CHECK_OK(kiln_tmodule_verify(m));
  char *out = print_module(m);
  if (strcmp(out, text) != 0)
    fprintf(stderr, "round trip differs:\n--- in\n%s--- out\n%s", text, out);
  CHECK(strcmp(out, text) == 0);
  free(out);
  kiln_tmodule_free(m);
}

static const char *canonical_text =
    "kernel @k1(%x: f32[1024] readonly, %\"y/0\": f16[1024], %i: i32[4] readonly) origin "
    "\"relu1, add2\" {\n"
    "  shared %sh: f32[256]\n"
    "  local %acc: f64[16]\n"
    "  var $i: i64\n"
    "  var $j: i64\n"
    "  var $s: f32\n"
    "  var $u: u64\n"
    "  for $i in 0..1024 serial {\n"
    "    $s = add(%x[$i], 1.5:f32)\n"
    "    $s = select(lt($s, -inf:f32), 3.4028235e+38:f32, max($s, nan:f32))\n"
    "    %\"y/0\"[$i] = f16($s)\n"
    "    $u = 18446744073709551615:u64\n"
    "    if and(ge($i, 4), not(isnan($s))) {\n"
    "      %acc[mod($i, 16)] = f64(exp(neg($s)))\n"
    "    } else {\n"
    "      %acc[0] = 0.1:f64\n"
    "    }\n"
    "    for $j in 0..4 vector {\n"
    "      %sh[add(mul($j, 64), shr(and($i, 255), 2))] = f32(%i[$j])\n"
    "    }\n"
    "  }\n"
    "  for $j in 0..256 parallel {\n"
    "    %sh[$j] = 0:f32\n"
    "  }\n"
    "}\n"
    "\n"
    "kernel @k2(%c: f32[64], %a: i8[32] readonly, %b: i8[32] readonly) {\n"
    "  var $bx: i64\n"
    "  var $t: i64\n"
    "  for $bx in 0..2 block.x {\n"
    "    for $t in 0..4 thread.x {\n"
    "      mma %c[mul($bx, 32)] += %a[mul($bx, 16)] * %b[0] {m=4, n=8, k=4, ldc=8, a_sm=4, "
    "a_sk=1, b_sk=8, b_sn=1}\n"
    "      barrier\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_round_trip(void) {
  check_canonical(canonical_text);
  check_canonical("kernel @e() {\n}\n");
  /* native half arithmetic, half constants (exact, shortest text), mac */
  check_canonical("kernel @h(%a: f16[4] readonly, %b: bf16[4] readonly, %q: i8[4] readonly, "
                  "%c: i32[4], %w: f32[4]) {\n"
                  "  var $i: i64\n"
                  "  var $s: f16\n"
                  "  for $i in 0..4 serial {\n"
                  "    $s = add(mul(%a[$i], 0.0999755859375:f16), neg(inf:f16))\n"
                  "    %c[$i] = mac(%c[$i], %q[$i], %q[$i])\n"
                  "    %w[$i] = mac(f32($s), %b[$i], -1.5:bf16)\n"
                  "  }\n"
                  "}\n");
  /* Whitespace, comments and non-canonical numbers are accepted. */
  kiln_tmodule *m = parse_ok("// c\nkernel @e(%x:f32[2]){var $v:f32 $v=0x1p-1:f32 // half\n"
                             "$v = 1e400:f64 %x[+1]=-0:f32}");
  if (!m) return;
  char *out = print_module(m);
  CHECK(strcmp(out, "kernel @e(%x: f32[2]) {\n  var $v: f32\n  $v = 0.5:f32\n  $v = inf:f64\n"
                    "  %x[1] = -0:f32\n}\n") == 0);
  free(out);
  kiln_tmodule_free(m);
}

static void check_parse_error(const char *text, const char *where, const char *msg) {
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse(text, "t.tile", &m);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID);
  if (!st) {
    fprintf(stderr, "parsed: %s\n", text);
    kiln_tmodule_free(m);
    return;
  }
  CHECK(msg_has(st, where));
  CHECK(msg_has(st, msg));
  kiln_status_free(st);
}

static void test_parse_errors(void) {
  check_parse_error("kernel @k() {\n  $x = 1\n}", "t.tile:2:3:", "unknown variable $x");
  check_parse_error("kernel @k() { var $v: i64 $v = %y[0] }", ":1:32:", "unknown buffer %y");
  check_parse_error("kernel @k() {", ":1:13:", "unclosed '{'");
  check_parse_error("kernel k() {}", ":1:8:", "expected a kernel name");
  check_parse_error("kernel @k(%x: f99[4]) {}", ":1:15:", "expected a scalar type");
  check_parse_error("kernel @k(%x: f32[-4]) {}", ":1:19:", "negative size");
  check_parse_error("kernel @k(%x: f32[4], %x: f32[4]) {}", ":1:23:", "%x declared twice");
  check_parse_error("kernel @k() { var $a: i64 var $a: f32 }", ":1:31:", "$a declared twice");
  check_parse_error("kernel @k() {}\nkernel @k() {}", ":2:8:", "kernel @k defined twice");
  check_parse_error("kernel @k() { var $a: i64 $a = 1.5 }", ":1:32:", "floats need :f32");
  check_parse_error("kernel @k() { var $a: i64 $a = inf }", ":1:32:", "'inf' needs a type");
  check_parse_error("kernel @k() { var $a: i64 $a = 99999999999999999999 }",
                    ":1:32:", "bad integer");
  check_parse_error("kernel @k() { var $a: i64 $a = foo(1) }", ":1:32:", "unknown operator");
  check_parse_error("kernel @k() { var $a: i64 $a = add(1) }", ":1:37:", "expected ','");
  check_parse_error("kernel @k() { var $a: i64 $a = add(1, 2, 3) }", ":1:40:", "wrong number");
  check_parse_error("kernel @k() { var $a: i64 for $a in 1..4 serial {} }",
                    ":1:37:", "loops start at 0");
  check_parse_error("kernel @k() { var $a: i64 for $a in 0..4 warp {} }",
                    ":1:42:", "unknown loop kind 'warp'");
  check_parse_error("kernel @k() { var $a: i64 for a in 0..4 serial {} }",
                    ":1:31:", "expected a loop variable");
  check_parse_error("kernel @k() { ; }", ":1:15:", "unexpected character");
  check_parse_error("kernel @k() { 5 }", ":1:15:", "expected a statement");
  check_parse_error("kernel @k() origin \"x {}", ":1:20:", "unterminated string");
  check_parse_error("kernel @k() origin \"\\q\" {}", ":1:21:", "unknown escape");
  check_parse_error("kernel @k() origin \"\\x00\" {}", ":1:21:", "NUL byte");
  check_parse_error("kernel @k() origin 5 {}", ":1:20:", "expected a string");
  check_parse_error("kernel @k(%a: f32[4]) { mma %a[0] += %a[0] * %a[0] {m=1, n=1} }",
                    ":1:61:", "expected ','");
  check_parse_error("kernel @k(%a: f32[4]) { mma %a[0] += %a[0] * %a[0] {m=1, q=1} }",
                    ":1:58:", "expected 'n'");
  check_parse_error("kernel @k(%a: f32[4]) { mma 5 }", ":1:29:", "expected a buffer");
  check_parse_error("kernel @k(%a: f32[4]) { %a[0] = $ }", ":1:33:", "expected a name");
  check_parse_error("kernel @k() { var $a: i64 $a = }", ":1:32:", "expected an expression");
  check_parse_error("kernel @k() { var 5 }", ":1:19:", "expected a variable name");
  check_parse_error("kernel @k() { local 5 }", ":1:21:", "expected a buffer name");
  check_parse_error("kernel @k(%x: f32[1.5]) {}", ":1:19:", "expected an integer");
  check_parse_error("kernel @k() { var %\"\": f32 }", ":1:19:", "expected a variable name");
  check_parse_error("kernel @k() { local %\"\": f32[1] }", ":1:21:", "empty name");
  check_parse_error("kernel @k() { if true { } else 5 }", ":1:32:", "expected '{'");
  check_parse_error("kernel @k(%x: f32[2]) { %x[0 = 1:f32 }", ":1:30:", "expected ']'");
  check_parse_error("kernel @k() { var $a: i64 for $a on 0..4 serial {} }",
                    ":1:34:", "expected 'in'");
  /* the caret line */
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse("kernel @k() {\n  barrier ?\n}", "f", &m);
  CHECK(msg_has(st, "f:2:11: unexpected character\n  barrier ?\n          ^"));
  kiln_status_free(st);
  /* nesting limits */
  kiln_strbuf deep = {0};
  kiln_strbuf_printf(&deep, "kernel @k() { var $a: i64 $a = ");
  for (int i = 0; i < 300; i++) kiln_strbuf_printf(&deep, "neg(");
  check_parse_error(deep.data, ":1:", "nested too deeply");
  kiln_strbuf_free(&deep);
}

/* ---- verifier ---- */
typedef struct vcase {
  const char *body;  /* statements of a kernel with %x: f32[16], %r: f32[16] readonly,
                        %n: i64[4] readonly, shared %sh: f32[8], local %l: f32[4] and
                        variables $i $j $t $u $b (i64), $f (f32), $c (bool) */
  const char *error; /* NULL: accepted */
} vcase;

static const vcase verify_cases[] = {
    /* bounds from loop extents */
    {"for $i in 0..16 serial { %x[$i] = %r[$i] }", NULL},
    {"for $i in 0..17 serial { %x[$i] = 0:f32 }",
     "cannot prove %x[$i] in bounds: index in [0, 16]"},
    {"for $i in 0..16 serial { %x[$i] = %r[add($i, 1)] }", "cannot prove %r[add($i, 1)]"},
    {"for $i in 0..4 serial { for $j in 0..4 serial { %x[add(mul($i, 4), $j)] = 0:f32 } }", NULL},
    {"for $i in 0..4 serial { for $j in 0..5 serial { %x[add(mul($i, 4), $j)] = 0:f32 } }",
     "index in [0, 16]"},
    {"for $i in 0..32 serial { %x[div($i, 2)] = 0:f32 %x[mod($i, 16)] = 0:f32 }", NULL},
    {"for $i in 0..32 serial { %x[sub(31, $i)] = 0:f32 }", "index in [0, 31]"},
    {"for $i in 0..32 serial { %x[min($i, 15)] = 0:f32 %x[max(0, sub($i, 16))] = 0:f32 }", NULL},
    {"for $i in 0..64 serial { %x[shr($i, 2)] = 0:f32 %x[and($i, 15)] = 0:f32 }", NULL},
    {"for $i in 0..0 serial { %x[100] = 0:f32 }", NULL}, /* never runs */
    {"%x[-1] = 0:f32", "index in [-1, -1]"},
    {"%x[%n[0]] = 0:f32", "index in [-9223372036854775808, 9223372036854775807]"},
    {"%x[i64(%n8[0])] = 0:f32", "index in [0, 255]"},
    {"for $i in 0..16 serial { %x[i64(i32($i))] = 0:f32 }", NULL},
    {"for $i in 0..16 serial { %x[i64(i32(add($i, 4294967296)))] = 0:f32 }",
     "index in [-2147483648, 2147483647]"},
    /* guards */
    {"for $i in 0..20 serial { if lt($i, 16) { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..20 serial { if le($i, 15) { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..20 serial { if gt(16, $i) { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..20 serial { if ge($i, 16) { } else { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..20 serial { if lt($i, 17) { %x[$i] = 0:f32 } }", "index in [0, 16]"},
    {"for $i in 0..20 serial { if not(ge($i, 16)) { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..4 serial { for $j in 0..8 serial { if and(lt(add(mul($i, 5), $j), 16), "
     "lt($j, 5)) { %x[add(mul($i, 5), $j)] = 0:f32 } } }",
     NULL},
    {"for $i in 0..20 serial { if or(lt($i, 16), lt($i, 3)) { %x[$i] = 0:f32 } }", "cannot prove"},
    {"for $i in 0..20 serial { %x[select(lt($i, 16), $i, 0)] = 0:f32 }", NULL},
    {"for $i in 0..20 serial { $f = select(lt($i, 16), %r[$i], 0:f32) }", NULL},
    {"for $i in 0..20 serial { $f = select(lt($i, 16), 0:f32, %r[$i]) }", "cannot prove %r[$i]"},
    {"$u = %n[0] if lt($u, 16) { if ge($u, 0) { %x[$u] = 0:f32 } }", NULL},
    {"$u = %n[0] if and(lt($u, 16), ge($u, 0)) { $u = add($u, 1) %x[$u] = 0:f32 }",
     "cannot prove %x[$u]"},
    {"$u = 0 for $i in 0..4 serial { if lt($u, 16) { %x[$u] = 0:f32 } $u = add($u, 1) }",
     "cannot prove %x[$u]"},
    {"$u = 4 if lt(%n[$u], 16) { if ge(%n[$u], 0) { %x[%n[$u]] = 0:f32 } }",
     "cannot prove %n[$u] in bounds: index in [4, 4]"},
    {"$u = 3 if lt(%n[$u], 16) { if ge(%n[$u], 0) { %x[%n[$u]] = 0:f32 } }", NULL},
    {"$u = 0 for $i in 0..20 serial { %x[$u] = 0:f32 $u = add($u, 1) }", "cannot prove %x[$u]"},
    {"for $i in 0..4 serial { $u = mul($i, 4) %x[add($u, 3)] = 0:f32 }", NULL},
    {"$u = 100 for $i in 0..4 serial { $u = 1 } %x[$u] = 0:f32", "cannot prove %x[$u]"},
    {"$u = 100 if $c { $u = 1 } %x[$u] = 0:f32", "cannot prove %x[$u]"},
    {"for $t in 0..4 thread.x { if and(ge(i64(%sh[0]), 0), lt(i64(%sh[0]), 16)) { "
     "%x[i64(%sh[0])] = 0:f32 barrier %x[i64(%sh[0])] = 0:f32 } }",
     "cannot prove %x[i64(%sh[0])] in bounds: index in [-9223372036854775808"},
    {"for $i in 0..4 serial { if and(lt(%n[$i], 16), ge(%n[$i], 0)) { %x[%n[$i]] = 0:f32 } }",
     NULL},
    {"for $i in 0..4 serial { if and(lt(i64(%l[$i]), 16), ge(i64(%l[$i]), 0)) { %l[$i] = 1:f32 "
     "%x[i64(%l[$i])] = 0:f32 } }",
     "cannot prove %x[i64(%l[$i])]"},
    {"%x[div(16, %n[0])] = 0:f32", "cannot prove"},
    /* MMA footprints */
    {"mma %x[0] += %r[0] * %r[0] {m=4, n=4, k=4, ldc=4, a_sm=4, a_sk=1, b_sk=4, b_sn=1}", NULL},
    {"mma %x[1] += %r[0] * %r[0] {m=4, n=4, k=4, ldc=4, a_sm=4, a_sk=1, b_sk=4, b_sn=1}",
     "footprint of C (%x) in bounds: [1, 16]"},
    {"mma %x[0] += %r[0] * %r[0] {m=4, n=4, k=5, ldc=4, a_sm=4, a_sk=1, b_sk=4, b_sn=1}",
     "footprint of A (%r) in bounds: [0, 16]"},
    {"mma %x[0] += %r[0] * %r[0] {m=4, n=4, k=0, ldc=4, a_sm=4, a_sk=1, b_sk=4, b_sn=1}",
     "mma shape 4x4x0 is not positive"},
    {"mma %r[0] += %x[0] * %x[0] {m=1, n=1, k=1, ldc=1, a_sm=1, a_sk=1, b_sk=1, b_sn=1}",
     "store to read-only buffer %r"},
    {"mma %c8[0] += %x[0] * %x[0] {m=1, n=1, k=1, ldc=1, a_sm=1, a_sk=1, b_sk=1, b_sn=1}",
     "mma accumulates in bool"},
    /* types */
    {"%x[0] = 1:f64", "stored value is f64, expected f32"},
    {"%x[0] = add(1:f32, 1:f64)", "add: operands of different types f32 and f64"},
    {"$f = exp(1)", "operator exp does not apply to i64"},
    {"$u = neg(true)", "operator neg does not apply to bool"},
    {"$c = not(1)", "operator not does not apply to i64"},
    {"$u = shl(true, false)", "operator shl does not apply to bool"},
    {"$c = isnan(1)", "operator isnan does not apply to i64"},
    {"$c = lt(1:i32, 2:i32)", NULL},
    {"$u = select(1, 2, 3)", "select: the condition is i64, not bool"},
    {"$u = select(true, 2, 3:i32)", "select: operands of different types"},
    {"$f = f32(%h[0])", NULL},
    {"$f = add(%h[0], 1:f32)", "operands of different types f16 and f32"},
    {"$f = f32(neg(%h[0]))", NULL}, /* f16 arithmetic is native */
    {"$f = f32(and(%h[0], %h[0]))", "operator and does not apply to f16"},
    {"$f = f32(add(%h[0], 0.5:f16))", NULL},
    {"$f = f32(add(%h[0], 0.1:f16))", "f16 constant 0.10000000000000001 is not exact in f16"},
    {"$f = mac(0:f32, %h[0], %h[0])", NULL},
    {"$f = mac(0:f32, %h[0], 1:f32)", "mac: accumulator f32 with operands f16 and f32"},
    {"$u = 300:u8", "constant 300 out of the range of u8"},
    {"$u = 2:bool", "constant 2 out of the range of bool"},
    {"$f = 1:f16", "assigned value is f16, expected f32"},
    {"$f = 1:f8e4m3fn", "integer constant of type f8e4m3fn"},
    {"$f = 1:f32", NULL},
    {"$f = 1", "assigned value is i64, expected f32"},
    {"if 1 { }", "condition is i64, expected bool"},
    {"%x[0:i32] = 0:f32", "store index is i32, expected i64"},
    {"%r[0] = 0:f32", "store to read-only buffer %r"},
    /* loops and variables */
    {"for $f in 0..4 serial { }", "loop variable $f is f32"},
    {"for $i in 0..4 serial { $i = 1 }", "assignment to the loop variable $i"},
    {"for $i in 0..4 serial { for $i in 0..4 serial { } }", "$i is the variable of an enclosing"},
    {"for $i in 0..4 serial { } $u = $i", "$i is read outside the loop"},
    {"for $i in 0..-1 serial { }", "negative loop extent"},
    {"$u = 4 for $i in 0..$u serial { $u = 3 }", "the extent reads a variable that the loop"},
    {"$u = 4 for $i in 0..$u serial { if lt($i, 16) { %x[$i] = 0:f32 } }", NULL},
    {"for $i in 0..4 parallel { for $j in 0..4 parallel { } }", "parallel loop inside a parallel"},
    {"for $i in 0..4 parallel { for $j in 0..4 vector { } }", NULL},
    {"for $i in 0..4 vector { for $j in 0..4 serial { } }", "vector loop may contain only"},
    {"for $i in 0..4 vector { for $j in 0..4 unroll { if true { } } }", NULL},
    {"for $b in 0..4 block.x { for $t in 0..8 thread.x { %sh[$t] = 0:f32 barrier } }", NULL},
    {"for $b in 0..4 block.x { for $t in 0..8 thread.x { } } for $i in 0..4 parallel { }",
     "parallel loop in a GPU kernel"},
    {"for $i in 0..4 serial { for $b in 0..4 block.x { } }", "only be nested in block loops"},
    {"for $b in 0..4 block.x { for $u in 0..4 block.x { } }", "nested block.x loops"},
    {"for $b in 0..4 block.x { for $u in 0..4 block.y { for $t in 0..4 thread.x { for $j in 0..2 "
     "thread.y { barrier } } } }",
     NULL},
    {"for $t in 0..4 thread.x { for $j in 0..4 block.x { } }", "only be nested in block loops"},
    {"for $t in 0..4 thread.x { for $j in 0..4 thread.x { } }", "nested thread.x loops"},
    {"for $i in 0..4 parallel { for $t in 0..4 thread.x { } }", "parallel loop in a GPU kernel"},
    {"for $i in 0..4 vector { for $t in 0..4 thread.x { } }", "vector loop may contain only"},
    {"$u = 4 for $t in 0..$u thread.x { }", "extent of a thread.x loop must be a constant"},
    {"barrier", "a barrier outside thread loops"},
    {"for $t in 0..4 thread.x { for $i in 0..4 serial { if lt($t, 2) { barrier } } }", NULL},
    {"for $t in 0..4 thread.x { for $i in 0..4 vector { barrier } }", "vector loop may contain"},
    {"for $t in 0..4 thread.x { for $i in 0..4 parallel { barrier } }",
     "parallel loop in a GPU kernel"},
    {"for $t in 0..4 thread.x { $u = 1 for $j in 0..4 thread.y { barrier } }",
     "not perfectly nested"},
    {"for $t in 0..4 thread.x { for $i in 0..2 serial { for $j in 0..4 thread.y { barrier } } }",
     "not perfectly nested"},
};

static void test_verify_cases(void) {
  for (size_t i = 0; i < sizeof verify_cases / sizeof verify_cases[0]; i++) {
    const vcase *vc = &verify_cases[i];
    kiln_strbuf t = {0};
    kiln_strbuf_printf(&t,
                       "kernel @v(%%x: f32[16], %%r: f32[16] readonly, %%n: i64[4] readonly, "
                       "%%n8: u8[4] readonly, %%h: f16[4] readonly, %%c8: bool[4]) {\n"
                       "  shared %%sh: f32[8]\n  local %%l: f32[4]\n  var $i: i64\n"
                       "  var $j: i64\n  var $t: i64\n  var $u: i64\n  var $b: i64\n"
                       "  var $f: f32\n  var $c: bool\n  %s\n}\n",
                       vc->body);
    kiln_tmodule *m = parse_ok(t.data);
    if (!m) {
      fprintf(stderr, "case %zu: %s\n", i, vc->body);
      kiln_strbuf_free(&t);
      continue;
    }
    kiln_status st = kiln_tmodule_verify(m);
    bool ok = vc->error ? st && kiln_status_code(st) == KILN_ERR_INVALID &&
                              strstr(kiln_status_message(st), vc->error)
                        : st == KILN_OK;
    if (!ok)
      fprintf(stderr, "case %zu: %s\n  expected %s\n  got %s\n", i, vc->body,
              vc->error ? vc->error : "OK", st ? kiln_status_message(st) : "OK");
    CHECK(ok);
    kiln_status_free(st);
    kiln_tmodule_free(m);
    kiln_strbuf_free(&t);
  }
}

static void test_verify_messages(void) {
  kiln_tmodule *m = parse_ok("kernel @bad(%x: f32[4]) {\n  var $i: i64\n"
                             "  for $i in 0..5 serial {\n    %x[$i] = 1:f32\n  }\n}\n");
  if (!m) return;
  kiln_status st = kiln_tmodule_verify(m);
  CHECK(msg_has(st, "kernel @bad: cannot prove %x[$i] in bounds: index in [0, 4], size 4\n"
                    "  in: %x[$i] = 1:f32"));
  kiln_status_free(st);
  kiln_tmodule_free(m);
  m = parse_ok("kernel @a() {\n}\nkernel @b() {\n}\n");
  if (!m) return;
  m->kernels.data[1]->name = "a";
  check_err_has(kiln_tmodule_verify(m), "two kernels named @a", NULL);
  m->kernels.data[1]->name = "a-b";
  check_err_has(kiln_tmodule_verify(m), "not a C identifier", NULL);
  kiln_tmodule_free(m);
}

/* ---- golden files: the .tile files of tests/tile ----
 * A golden file is a module in the text form whose comments carry the expectations:
 *   // verify-error: TEXT     the verifier rejects the module with TEXT in the message
 *                             (otherwise it must accept it)
 *   // in %buf: V V ...        initial values of a parameter (or `iota`: 0, 1, 2, ...);
 *                             parameters not listed start as zeros
 *   // out %buf: V V ...       expected values after running the first kernel (exact;
 *                             nan matches any NaN)
 *   // error: TEXT             running the first kernel fails with TEXT in the message
 * Every golden file also prints back to the same module (print -> parse -> print). */
#define GOLDEN_DIR "tests/tile"

typedef struct golden {
  const char *path;
  char *text;
  kiln_tmodule *m;
  kiln_tkernel *k;
  unsigned char **data;
} golden;

/* The text after "// key" on the line that has it, up to the end of the line. */
/* A malloc'd copy of s up to the end of its line. */
static char *line_dup(const char *s) {
  size_t n = strcspn(s, "\n");
  char *d = malloc(n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

static bool directive(const char *line, const char *key, const char **rest) {
  size_t n = strlen(key);
  if (strncmp(line, "// ", 3) != 0 || strncmp(line + 3, key, n) != 0) return false;
  *rest = line + 3 + n;
  return true;
}

static int find_param(const kiln_tkernel *k, const char *name, size_t n) {
  for (int i = 0; i < k->n_params; i++)
    if (strlen(k->bufs.data[i].name) == n && !strncmp(k->bufs.data[i].name, name, n)) return i;
  return -1;
}

/* "%name: v v v" applied to the data (fill) or compared with it (!fill). */
static bool golden_values(golden *g, const char *spec, bool fill) {
  const char *colon = strchr(spec, ':');
  int b = colon && spec[0] == '%' ? find_param(g->k, spec + 1, (size_t)(colon - spec - 1)) : -1;
  if (b < 0) {
    fprintf(stderr, "%s: bad values line: %s\n", g->path, spec);
    return false;
  }
  const kiln_tbuf *buf = &g->k->bufs.data[b];
  const char *p = colon + 1;
  bool iota = strncmp(p, " iota", 5) == 0, ok = true;
  for (int64_t j = 0; j < buf->size && ok; j++) {
    char *end;
    double v = iota ? (double)j : strtod(p, &end);
    if (!iota && end == p) {
      if (!fill) fprintf(stderr, "%s: %%%s: only %lld values\n", g->path, buf->name, (long long)j);
      return fill;
    }
    if (!iota) p = end;
    if (fill) {
      kiln_store_f64(buf->dtype, g->data[b], (size_t)j, v);
    } else {
      double got = kiln_load_f64(buf->dtype, g->data[b], (size_t)j);
      ok = got == v || (isnan(got) && isnan(v));
      if (!ok)
        fprintf(stderr, "%s: %%%s[%lld] = %.17g, expected %.17g\n", g->path, buf->name,
                (long long)j, got, v);
    }
  }
  return ok;
}

static void golden_run(golden *g) {
  const char *rest, *expect_error = NULL;
  bool any = false;
  g->data = calloc((size_t)g->k->n_params + 1, sizeof *g->data);
  for (int i = 0; i < g->k->n_params; i++)
    g->data[i] =
        calloc((size_t)g->k->bufs.data[i].size + 1, kiln_dtype_size(g->k->bufs.data[i].dtype));
  for (const char *line = g->text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    if (directive(line, "in ", &rest)) {
      CHECK(golden_values(g, rest, true));
      any = true;
    }
    if (directive(line, "error: ", &rest)) expect_error = rest;
    if (directive(line, "out ", &rest)) any = true;
  }
  if (any || expect_error) {
    kiln_status st = kiln_tkernel_interp(g->k, (void *const *)g->data);
    if (expect_error) {
      char *want = line_dup(expect_error);
      bool ok = st && strstr(kiln_status_message(st), want) != NULL;
      if (!ok)
        fprintf(stderr, "%s: expected error '%s', got %s\n", g->path, want,
                st ? kiln_status_message(st) : "OK");
      CHECK(ok);
      free(want);
      kiln_status_free(st);
    } else {
      if (st) fprintf(stderr, "%s: %s\n", g->path, kiln_status_message(st));
      CHECK(st == KILN_OK);
      kiln_status_free(st);
      for (const char *line = g->text; line;
           line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (directive(line, "out ", &rest)) CHECK(golden_values(g, rest, false));
    }
  }
  for (int i = 0; i < g->k->n_params; i++) free(g->data[i]);
  free(g->data);
}

static void golden_verify(golden *g) {
  const char *rest = NULL;
  for (const char *line = g->text; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
    if (directive(line, "verify-error: ", &rest)) break;
  kiln_status st = kiln_tmodule_verify(g->m);
  if (!rest) {
    if (st) fprintf(stderr, "%s: %s\n", g->path, kiln_status_message(st));
    CHECK(st == KILN_OK);
  } else {
    char *want = line_dup(rest);
    bool ok = st && strstr(kiln_status_message(st), want);
    if (!ok)
      fprintf(stderr, "%s: expected verifier error '%s', got %s\n", g->path, want,
              st ? kiln_status_message(st) : "OK");
    CHECK(ok);
    free(want);
  }
  kiln_status_free(st);
}

static void golden_file(const char *path) {
  golden g = {path, NULL, NULL, NULL, NULL};
  size_t len;
  CHECK_OK(kiln_read_file(path, &g.text, &len));
  if (!g.text) return;
  kiln_status st = kiln_tmodule_parse(g.text, path, &g.m);
  if (st) fprintf(stderr, "%s\n", kiln_status_message(st));
  CHECK(st == KILN_OK);
  kiln_status_free(st);
  if (g.m && g.m->kernels.len > 0) {
    char *t1 = print_module(g.m);
    kiln_tmodule *m2 = parse_ok(t1);
    char *t2 = m2 ? print_module(m2) : strdup("");
    CHECK(strcmp(t1, t2) == 0);
    free(t1);
    free(t2);
    kiln_tmodule_free(m2);
    g.k = g.m->kernels.data[0];
    golden_verify(&g);
    golden_run(&g);
  }
  kiln_tmodule_free(g.m);
  free(g.text);
}

static void test_golden(void) {
  DIR *d = opendir(GOLDEN_DIR);
  CHECK(d != NULL);
  if (!d) return;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".tile") != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, e->d_name);
    int before = kiln_test_failed_checks;
    golden_file(path);
    if (kiln_test_failed_checks != before) fprintf(stderr, "golden file %s failed\n", path);
    n++;
  }
  closedir(d);
  CHECK(n >= 10);
}

TEST_MAIN(T(test_interp_add1), T(test_interp_f32_rounding), T(test_interp_float_unary),
          T(test_interp_float_binary), T(test_interp_int_wrap), T(test_interp_int_div),
          T(test_interp_shifts_bits), T(test_interp_casts), T(test_interp_gpu_lockstep),
          T(test_interp_gpu_reduce), T(test_interp_thread_private), T(test_interp_bounds),
          T(test_interp_mma), T(test_interp_uninit_local), T(test_interp_tracked_params),
          T(test_print), T(test_round_trip), T(test_parse_errors), T(test_verify_cases),
          T(test_verify_messages), T(test_golden))
