/* Regression tests of compiler bugs that `kiln verify` and `kiln fuzz` found: each model
 * here failed a layer before its fix. They run the whole differential check
 * (kiln_verify_run: reference, passes, tile interpreter, compiled C) on the reduced case.
 *   1. in-place reuse: a fused elementwise kernel stored an output into the storage of an
 *      input that a later node of the same kernel read again;
 *   2. ReduceLogSumExp without a max shift overflowed exp (Inf for a finite result);
 *   3. an input that the op's opset does not define (ReduceMean's axes at opset 17) was
 *      ignored by the interpreter and used by the compiled code: now an error;
 *   4. Pad reflect with pads >= the extent read past the reflected range;
 *   5. a Cast to f16 inside a fused kernel (not stored) did not round: f16 is computed in f32
 *      registers, and the cast went straight to the compute type;
 *   6. Softplus of x < -37 was log(1 + exp(x)) = 0 even in f64 (a Pow after it gave Inf): it
 *      is now an accurate log1p of exp(x).
 * Cache entries go to a fresh folder under $TMPDIR. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "ops/ops.h"
#include "runtime/runtime.h"
#include "verify/verify.h"

static char g_tmp[1024];

static void make_tmp(void) {
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_verify_bugs");
}

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

/* One input tensor of type t, element i = lo + (hi - lo) * frac(i * 0.618...). */
static kiln_val *input_of(const kiln_type *t, double lo, double hi) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x;
  if (kiln_tensor_new(t->dtype, t->rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++) {
    double f = fmod((double)(i + 1) * 0.6180339887498949, 1.0);
    kiln_store_f64(t->dtype, x->data, (size_t)i, lo + (hi - lo) * f);
  }
  return kiln_val_tensor(x);
}

/* Runs every layer on the model with inputs drawn in [lo, hi]; true when all agree. */
static bool verify_ok(const char *text, double lo, double hi) {
  kiln_graph *g = parse(text);
  if (!g) return false;
  make_tmp();
  int n = g->inputs.len;
  kiln_val **in = kiln_xcalloc((size_t)n + 1, sizeof *in);
  for (int i = 0; i < n; i++) in[i] = input_of(&g->values.data[g->inputs.data[i]].type, lo, hi);
  kiln_verify_opts o;
  kiln_verify_opts_init(&o);
  o.compile.cache_dir = g_tmp;
  kiln_verify_result r;
  kiln_status st = kiln_verify_run(g, n, in, &o, &r);
  bool ok = st == KILN_OK && !r.failed;
  if (st) {
    fprintf(stderr, "  verify: %s\n", kiln_status_message(st));
    kiln_status_free(st);
  } else {
    if (r.failed) {
      kiln_strbuf table = {0};
      kiln_verify_print(&r, &table);
      fprintf(stderr, "%s", table.data ? table.data : "");
      kiln_strbuf_free(&table);
    }
    kiln_verify_result_free(&r);
  }
  for (int i = 0; i < n; i++) kiln_val_free(in[i]);
  free(in);
  kiln_graph_free(g);
  return ok;
}

/* Compiles the model; *fallbacks and *inplace from the compiled form. */
static bool compile_stats(const char *text, int *fallbacks, int *inplace) {
  kiln_graph *g = parse(text);
  if (!g) return false;
  make_tmp();
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_tmp;
  o.threads = 1;
  kiln_compiled *c = NULL;
  kiln_status st = kiln_compile(g, NULL, &o, &c);
  CHECK_OK(st);
  if (c) {
    *fallbacks = kiln_compiled_stats(c)->n_fallback_steps;
    *inplace = kiln_compiled_plan(c)->n_inplace;
    kiln_compiled_free(c);
  }
  kiln_graph_free(g);
  return c != NULL;
}

/* ---- 1. in-place reuse in fused elementwise kernels ---- */
/* Mul(v, v) is an output stored before Greater reads v again: v may not give its storage. */
static const char *REREAD =
    "graph @reread(%x: f32[4,4]) -> (%g: bool[4,4], %m: f32[4,4]) {\n"
    "  opset \"\" 17\n"
    "  %c = const f32[4,4] [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]\n"
    "  %v = MatMul(%x, %c) : f32[4,4]\n"
    "  %m = Mul(%v, %v) : f32[4,4]\n"
    "  %g = Greater(%m, %v) : bool[4,4]\n"
    "  return %g, %m\n"
    "}\n";

/* Atan(w) is stored first, then Max(Atan(w), w) reads w (f16, two outputs). */
static const char *REREAD_F16 = "graph @reread16(%x: f16[3,5]) -> (%a: f16[3,5], %y: f16[3,5]) {\n"
                                "  opset \"\" 18\n"
                                "  %v = Neg(%x) : f16[3,5]\n"
                                "  %w = Einsum(%v, %v) {equation=\"ij,ij->ij\"} : f16[3,5]\n"
                                "  %a = Atan(%w) : f16[3,5]\n"
                                "  %b = Atan(%w) : f16[3,5]\n"
                                "  %y = Max(%b, %w) : f16[3,5]\n"
                                "  return %a, %y\n"
                                "}\n";

/* A chain that reads its input once: the in-place reuse stays. */
static const char *CHAIN = "graph @chain(%x: f32[8,8]) -> (%y: f32[8,8]) {\n"
                           "  opset \"\" 17\n"
                           "  %v = Transpose(%x) {perm=[1,0]} : f32[8,8]\n"
                           "  %e = Exp(%v) : f32[8,8]\n"
                           "  %y = Neg(%e) : f32[8,8]\n"
                           "  return %y\n"
                           "}\n";

static void test_inplace_reread(void) {
  CHECK(verify_ok(REREAD, 1.5, 3));
  CHECK(verify_ok(REREAD_F16, -1.5, 1.5));
  int fb = -1, ip = -1;
  CHECK(compile_stats(CHAIN, &fb, &ip));
  CHECK(fb == 0 && ip >= 1);
}

/* ---- 2. ReduceLogSumExp of large values ---- */
/* Row 0 near 1.5e4 (exp overflows without the shift), row 1 all -inf (result -inf). */
static const char *LSE = "graph @lse(%x: f64[2,3]) -> (%y: f64[2,1]) {\n"
                         "  opset \"\" 17\n"
                         "  %s = const f64[2,3] [15000, 15001, 14999.5, -1e308, -1e308, -1e308]\n"
                         "  %t = const f64[2,3] [1, 1, 1, 1e10, 1e10, 1e10]\n"
                         "  %a = Mul(%x, %s) : f64[2,3]\n"
                         "  %b = Mul(%a, %t) : f64[2,3]\n"
                         "  %y = ReduceLogSumExp(%b) {axes=[1]} : f64[2,1]\n"
                         "  return %y\n"
                         "}\n";

static const char *LSE_F32 = "graph @lse32(%x: f32[3,40]) -> (%y: f32[3]) {\n"
                             "  opset \"\" 18\n"
                             "  %k = const f32[1] [2000]\n"
                             "  %ax = const i64[1] [1]\n"
                             "  %a = Mul(%x, %k) : f32[3,40]\n"
                             "  %y = ReduceLogSumExp(%a, %ax) {keepdims=0} : f32[3]\n"
                             "  return %y\n"
                             "}\n";

static void test_logsumexp_shift(void) {
  CHECK(verify_ok(LSE, 1, 1));
  CHECK(verify_ok(LSE_F32, 0.5, 1));
  int fb = -1, ip = -1;
  CHECK(compile_stats(LSE_F32, &fb, &ip));
  CHECK(fb == 0);
}

/* ---- 3. inputs that the node's opset does not define ---- */
static const char *AXES_AT = "graph @ax(%%x: f32[2,3]) -> (%%y: f32[2,1]) {\n"
                             "  opset \"\" %d\n"
                             "  %%a = const i64[1] [1]\n"
                             "  %%y = %s(%%x, %%a) : f32[2,1]\n"
                             "  return %%y\n"
                             "}\n";

/* The status of parsing and inferring op(x, axes) at opset `opset` (freed). */
static kiln_code axes_input_code(const char *op, int opset, bool *names_opset) {
  char text[512];
  snprintf(text, sizeof text, AXES_AT, opset, op);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (!st) st = kiln_ops_infer_graph(g);
  kiln_code code = st ? kiln_status_code(st) : KILN_OK_CODE;
  *names_opset = st && strstr(kiln_status_message(st), op) != NULL;
  kiln_status_free(st);
  kiln_graph_free(g);
  return code;
}

static void test_input_not_in_opset(void) {
  static const struct {
    const char *op;
    int from; /* the opset that added the axes input */
  } cases[] = {{"ReduceMean", 18},   {"ReduceMax", 18},       {"ReduceMin", 18},
               {"ReduceProd", 18},   {"ReduceL1", 18},        {"ReduceL2", 18},
               {"ReduceLogSum", 18}, {"ReduceLogSumExp", 18}, {"ReduceSumSquare", 18},
               {"ReduceSum", 13},    {"Squeeze", 13}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bool named = false;
    CHECK(axes_input_code(cases[i].op, cases[i].from - 1, &named) == KILN_ERR_INVALID);
    CHECK(named);
    kiln_code ok = axes_input_code(cases[i].op, cases[i].from, &named);
    if (strcmp(cases[i].op, "Squeeze") != 0)
      CHECK(ok == KILN_OK_CODE); /* [2,3] has no 1 on axis 1 */
  }
  /* Split: the split input exists at 1, not 2..12, again from 13 */
  const char *split = "graph @sp(%%x: f32[4]) -> (%%a: f32[1], %%b: f32[3]) {\n"
                      "  opset \"\" %d\n"
                      "  %%s = const i64[2] [1, 3]\n"
                      "  %%a, %%b = Split(%%x, %%s) : f32[1], f32[3]\n"
                      "  return %%a, %%b\n"
                      "}\n";
  int opsets[] = {11, 13};
  for (int i = 0; i < 2; i++) {
    char text[512];
    snprintf(text, sizeof text, split, opsets[i]);
    kiln_graph *g = NULL;
    kiln_status st = kiln_graph_parse(text, "test", &g);
    if (!st) st = kiln_ops_infer_graph(g);
    CHECK((st != KILN_OK) == (opsets[i] == 11));
    if (st) CHECK(kiln_status_code(st) == KILN_ERR_INVALID);
    kiln_status_free(st);
    kiln_graph_free(g);
  }
  /* the compiler refuses the node too (it checks before lowering) */
  char text[512];
  snprintf(text, sizeof text, AXES_AT, 17, "ReduceMean");
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) {
    make_tmp();
    kiln_compile_opts o;
    kiln_compile_opts_init(&o);
    o.cache_dir = g_tmp;
    kiln_compiled *c = NULL;
    CHECK_ERR(kiln_compile(g, NULL, &o, &c), KILN_ERR_INVALID);
    kiln_compiled_free(c);
    kiln_graph_free(g);
  }
}

/* ---- 4. Pad reflect/edge with large and negative pads ---- */
static const char *PAD = "graph @pad(%%x: f32[%d,%d]) -> (%%y: f32[%d,%d]) {\n"
                         "  opset \"\" 13\n"
                         "  %%p = const i64[4] [%d, %d, %d, %d]\n"
                         "  %%y = Pad(%%x, %%p) {mode=\"%s\"} : f32[%d,%d]\n"
                         "  return %%y\n"
                         "}\n";

static bool pad_ok(const char *mode, int r, int c, int b0, int b1, int e0, int e1) {
  char text[1024];
  int yr = r + b0 + e0, yc = c + b1 + e1;
  snprintf(text, sizeof text, PAD, r, c, yr, yc, b0, b1, e0, e1, mode, yr, yc);
  int fb = -1, ip = -1;
  bool lowered = compile_stats(text, &fb, &ip) && fb == 0;
  bool ok = verify_ok(text, -1, 1);
  if (!ok || !lowered)
    fprintf(stderr, "  Pad %s x[%d,%d] pads [%d,%d,%d,%d]: %s\n", mode, r, c, b0, b1, e0, e1,
            !ok ? "mismatch" : "not lowered");
  return ok && lowered;
}

static void test_pad_large(void) {
  CHECK(pad_ok("reflect", 1, 2, 0, 2, 0, 2)); /* [0,1] -> [0,1,0,1,0,1] */
  CHECK(pad_ok("reflect", 2, 3, 1, 7, 3, 9));
  CHECK(pad_ok("reflect", 3, 4, 0, -1, 0, 6));  /* cropped to 3, then reflected twice */
  CHECK(pad_ok("reflect", 3, 5, -2, 4, 2, -1)); /* rows cropped to 1: repeated */
  CHECK(pad_ok("reflect", 2, 4, 1, 2, 1, 3));   /* pads of n - 1: one reflection */
  CHECK(pad_ok("edge", 2, 3, 4, 5, 6, 7));
  CHECK(pad_ok("edge", 3, 4, -1, 5, 2, -2));
  CHECK(pad_ok("constant", 2, 3, 4, -1, 1, 5));
}

/* x -> f16 -> f32 (and -> f64 after a reduction) inside one kernel: the f16 rounding must
 * happen although the f16 value is never stored. */
static const char *CAST_CHAIN =
    "graph @cc(%x: f32[2,6], %s: f32[3,5]) -> (%y: f32[2,6], %z: f64[1,1]) {\n"
    "  opset \"\" 17\n"
    "  %h = Cast(%x) {to=10} : f16[2,6]\n"
    "  %y = Cast(%h) {to=1} : f32[2,6]\n"
    "  %m = ReduceMax(%s) {keepdims=1} : f32[1,1]\n"
    "  %mh = Cast(%m) {to=10} : f16[1,1]\n"
    "  %z = Cast(%mh) {to=11} : f64[1,1]\n"
    "  return %y, %z\n}\n";

static void test_cast_in_register(void) {
  CHECK(verify_ok(CAST_CHAIN, -1.7, 1.3));
}

static const char *SOFTPLUS_TAIL =
    "graph @sp(%x: f32[3,5], %y64: f64[4]) -> (%y: f32[3,5], %z: f64[4]) {\n"
    "  opset \"\" 17\n"
    "  %e = const f32[1] [-0.5]\n"
    "  %s = Softplus(%x) : f32[3,5]\n"
    "  %y = Pow(%s, %e) : f32[3,5]\n"
    "  %z = Softplus(%y64) : f64[4]\n"
    "  return %y, %z\n}\n";

static void test_softplus_tail(void) {
  CHECK(verify_ok(SOFTPLUS_TAIL, -60, -30));
  CHECK(verify_ok(SOFTPLUS_TAIL, -3, 3));
}

int main(void) {
  static const kiln_test_case cases[] = {
      {"inplace_reread", test_inplace_reread},         {"logsumexp_shift", test_logsumexp_shift},
      {"input_not_in_opset", test_input_not_in_opset}, {"pad_large", test_pad_large},
      {"cast_in_register", test_cast_in_register},     {"softplus_tail", test_softplus_tail},
  };
  int rc = kiln_test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  if (g_tmp[0]) kiln_test_remove_dir(g_tmp);
  return rc;
}
