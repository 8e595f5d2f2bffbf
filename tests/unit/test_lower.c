/* Lowering tests: small graphs in text IR -> inference + fusion -> kiln_lower ->
 * kiln_program_interp, compared with the reference interpreter on random inputs (ONNX
 * tolerances), with every kernel checked by the tile IR verifier. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"
#include "passes/passes.h"

#ifndef VERIFY_KERNELS
#define VERIFY_KERNELS 1
#endif

/* ---- random inputs ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) { /* [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static int64_t nonzero(int64_t v) {
  return v ? v : 5;
}

static kiln_tensor *random_tensor(const kiln_type *t) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL;
  if (kiln_tensor_new(t->dtype, t->rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++) {
    if (kiln_dtype_is_float(t->dtype)) kiln_store_f64(t->dtype, x->data, (size_t)i, rnd() * 4 - 2);
    else if (t->dtype == KILN_BOOL) kiln_store_i64(t->dtype, x->data, (size_t)i, rnd() < 0.5);
    else if (kiln_dtype_class_of(t->dtype) == KILN_CLASS_SINT) /* nonzero: Div, Mod */
      kiln_store_i64(t->dtype, x->data, (size_t)i, nonzero((int64_t)(rnd() * 10) - 5));
    else kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(rnd() * 10) + 1);
  }
  return x;
}

/* ---- comparison ---- */
static bool close_enough(kiln_dtype dt, double a, double ref) {
  if (isnan(a) || isnan(ref)) return isnan(a) && isnan(ref);
  if (isinf(ref)) return a == ref;
  double rtol = dt == KILN_F16 || dt == KILN_BF16 ? 1e-2 : 1e-3, atol = 1e-5;
  if (dt == KILN_F64) rtol = 1e-7, atol = 1e-7;
  return fabs(a - ref) <= atol + rtol * fabs(ref);
}

static bool same_tensor(const kiln_tensor *a, const kiln_tensor *ref) {
  if (a->dtype != ref->dtype || a->numel != ref->numel || a->rank != ref->rank) {
    fprintf(stderr, "  shape or dtype differs\n");
    return false;
  }
  for (int64_t i = 0; i < a->numel; i++) {
    bool ok;
    double x, y;
    if (kiln_dtype_is_float(a->dtype)) {
      x = kiln_load_f64(a->dtype, a->data, (size_t)i);
      y = kiln_load_f64(ref->dtype, ref->data, (size_t)i);
      ok = close_enough(a->dtype, x, y);
    } else {
      x = (double)kiln_load_i64(a->dtype, a->data, (size_t)i);
      y = (double)kiln_load_i64(ref->dtype, ref->data, (size_t)i);
      ok = x == y;
    }
    if (!ok) {
      fprintf(stderr, "  element %lld: got %.9g, reference %.9g\n", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

/* ---- the check ---- */
typedef struct expect {
  int kernels;   /* -1: any */
  int fallbacks; /* -1: any */
  bool fuse;
  const char *force_fallback;
} expect;

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (st) {
    fprintf(stderr, "parse: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    return NULL;
  }
  CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static void print_program(const kiln_program *p) {
  kiln_strbuf b = {0};
  kiln_program_print(p, &b);
  fprintf(stderr, "%s", b.data ? b.data : "");
  kiln_strbuf_free(&b);
}

static bool compare_run(const kiln_graph *g, const kiln_program *p) {
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_tensor *in[16];
  kiln_val *vin[16], *ref[16] = {0};
  kiln_tensor *out[16] = {0};
  for (int i = 0; i < n_in; i++) {
    in[i] = random_tensor(&g->values.data[g->inputs.data[i]].type);
    vin[i] = kiln_val_tensor(in[i]);
  }
  bool ok = true;
  kiln_status st = kiln_interp_run(g, NULL, n_in, vin, ref);
  if (st) fprintf(stderr, "reference: %s\n", kiln_status_message(st)), ok = false;
  kiln_status_free(st);
  st = kiln_program_interp(p, n_in, in, out);
  if (st) fprintf(stderr, "program: %s\n", kiln_status_message(st)), ok = false;
  kiln_status_free(st);
  for (int i = 0; ok && i < n_out; i++) ok = same_tensor(out[i], ref[i]->t);
  for (int i = 0; i < n_out; i++) kiln_tensor_free(out[i]), kiln_val_free(ref[i]);
  for (int i = 0; i < n_in; i++) kiln_val_free(vin[i]); /* frees in[i] too */
  return ok;
}

static void check_graph(const char *text, expect e) {
  kiln_graph *g = parse(text);
  CHECK(g != NULL);
  if (!g) return;
  if (e.fuse) {
    kiln_pass_opts po = {.fuse_classify = kiln_lower_fuse_class};
    kiln_pass_ctx ctx = {&po, "fusion", 0};
    CHECK_OK(kiln_pass_fusion(&ctx, g));
  }
  kiln_lower_opts lo = {
      .target = KILN_TARGET_CPU, .threads = 4, .force_fallback = e.force_fallback};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  if (!p) return kiln_graph_free(g);
  bool ok = true;
#if VERIFY_KERNELS
  for (int i = 0; i < p->module->kernels.len; i++) {
    kiln_status st = kiln_tkernel_verify(p->module->kernels.data[i]);
    if (st) fprintf(stderr, "verify: %s\n", kiln_status_message(st)), ok = false;
    kiln_status_free(st);
  }
#endif
  if (e.kernels >= 0 && p->module->kernels.len != e.kernels) ok = false;
  if (e.fallbacks >= 0 && p->n_fallback != e.fallbacks) ok = false;
  for (int rep = 0; ok && rep < 2; rep++) ok = compare_run(g, p);
  if (!ok) {
    fprintf(stderr, "failed on:\n%s", text);
    print_program(p);
  }
  CHECK(ok);
  kiln_program_free(p);
  kiln_graph_free(g);
}

#define LOWERED(k) ((expect){k, 0, false, NULL})
#define FUSED(k) ((expect){k, 0, true, NULL})

/* One unary op over f32[3,5] (and f64, f16 when dtypes says so). */
static void check_unary(const char *op, const char *attrs, const char *dt) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @u(%%x: %s[3,5]) -> (%%y: %s[3,5]) {\n  opset \"\" 20\n"
           "  %%y = %s(%%x)%s%s : %s[3,5]\n  return %%y\n}\n",
           dt, dt, op, attrs[0] ? " " : "", attrs, dt);
  check_graph(text, LOWERED(1));
}

/* ---- tests ---- */
static void test_alias_and_fallback(void) {
  check_graph("graph @a(%x: f32[2,3,4]) -> (%y: f32[6,4]) {\n  opset \"\" 17\n"
              "  %s = const i64[2] [6, 4]\n"
              "  %y = Reshape(%x, %s) : f32[6,4]\n  return %y\n}\n",
              (expect){0, 0, false, NULL});
  /* NonZero has a data-dependent shape: a fallback */
  check_graph("graph @f(%x: f32[2,3]) -> (%y: i64[2,?]) {\n  opset \"\" 17\n"
              "  %y = NonZero(%x) : i64[2,?]\n  return %y\n}\n",
              (expect){0, 1, false, NULL});
}

static void test_forced_fallback(void) {
  check_graph("graph @f(%x: f32[4,5], %z: f32[5]) -> (%y: f32[4,5]) {\n  opset \"\" 17\n"
              "  %a = Add(%x, %z) : f32[4,5]\n  %y = Relu(%a) : f32[4,5]\n  return %y\n}\n",
              (expect){1, 1, false, "Add"});
}

static const char *const float_unary[] = {"Abs",         "Neg",       "Relu",
                                          "Sigmoid",     "Tanh",      "Erf",
                                          "Exp",         "Sqrt",      "Log",
                                          "Ceil",        "Floor",     "Round",
                                          "Sign",        "Softplus",  "Softsign",
                                          "Mish",        "HardSwish", "Sin",
                                          "Cos",         "Atan",      "Reciprocal",
                                          "Elu",         "Selu",      "Celu",
                                          "HardSigmoid", "LeakyRelu", "ThresholdedRelu",
                                          "Asinh",       "Sinh",      "Cosh",
                                          "Tan"};

static void test_unary_f32(void) {
  for (size_t i = 0; i < sizeof float_unary / sizeof float_unary[0]; i++)
    check_unary(float_unary[i], "", "f32");
  check_unary("LeakyRelu", "{alpha=0.3}", "f32");
  check_unary("Elu", "{alpha=0.5}", "f32");
  check_unary("Gelu", "", "f32");
  check_unary("Gelu", "{approximate=\"tanh\"}", "f32");
  check_unary("HardSigmoid", "{alpha=0.3, beta=0.4}", "f32");
  check_unary("Shrink", "{lambd=0.7, bias=0.2}", "f32");
  check_graph("graph @s(%x: f32[3,5]) -> (%y: f32[3,5]) {\n  opset \"\" 24\n"
              "  %y = Swish(%x) {alpha=1.5} : f32[3,5]\n  return %y\n}\n",
              LOWERED(1));
  check_graph("graph @n(%x: f32[3,5]) -> (%y: bool[3,5], %z: bool[3,5]) {\n  opset \"\" 20\n"
              "  %l = Log(%x) : f32[3,5]\n  %y = IsNaN(%l) : bool[3,5]\n"
              "  %r = Reciprocal(%x) : f32[3,5]\n  %z = IsInf(%r) {detect_negative=0} : bool[3,5]\n"
              "  return %y, %z\n}\n",
              LOWERED(4));
}

static void test_unary_other_dtypes(void) {
  const char *ops[] = {"Abs", "Neg", "Relu", "Exp", "Sigmoid", "Softplus", "Tanh"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    check_unary(ops[i], "", "f64");
    check_unary(ops[i], "", "f16");
  }
  check_unary("Abs", "", "i32");
  check_unary("Neg", "", "i64");
  check_unary("Sign", "", "i8");
  check_unary("Relu", "", "i32");
  check_unary("BitwiseNot", "", "u8");
  check_unary("Not", "", "bool");
}

static void check_binary(const char *op, const char *ta, const char *sa, const char *tb,
                         const char *sb, const char *to, const char *so, const char *attrs) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @b(%%a: %s%s, %%b: %s%s) -> (%%y: %s%s) {\n  opset \"\" 20\n"
           "  %%y = %s(%%a, %%b)%s%s : %s%s\n  return %%y\n}\n",
           ta, sa, tb, sb, to, so, op, attrs[0] ? " " : "", attrs, to, so);
  check_graph(text, LOWERED(1));
}

static void test_binary_broadcast(void) {
  const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    check_binary(ops[i], "f32", "[2,3,7]", "f32", "[3,1]", "f32", "[2,3,7]", "");
    check_binary(ops[i], "f32", "[5]", "f32", "[]", "f32", "[5]", "");
  }
  check_binary("Add", "f32", "[2,1,5]", "f32", "[3,1]", "f32", "[2,3,5]", "");
  check_binary("Add", "i32", "[4,3]", "i32", "[3]", "i32", "[4,3]", "");
  check_binary("Mul", "i64", "[4,3]", "i64", "[4,1]", "i64", "[4,3]", "");
  check_binary("Sub", "u8", "[9]", "u8", "[9]", "u8", "[9]", "");
  check_binary("Div", "i32", "[4,3]", "i32", "[1]", "i32", "[4,3]", "");
  check_binary("Mod", "i32", "[4,3]", "i32", "[3]", "i32", "[4,3]", "");
  check_binary("Mod", "i64", "[4,3]", "i64", "[3]", "i64", "[4,3]", "{fmod=1}");
  check_binary("Mod", "f32", "[4,3]", "f32", "[3]", "f32", "[4,3]", "{fmod=1}");
  check_binary("Add", "f16", "[4,3]", "f16", "[3]", "f16", "[4,3]", "");
  check_binary("Mul", "f64", "[4,3]", "f64", "[3]", "f64", "[4,3]", "");
  check_binary("Pow", "f32", "[4,3]", "i32", "[3]", "f32", "[4,3]", "");
  const char *cmp[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) {
    check_binary(cmp[i], "f32", "[4,3]", "f32", "[3]", "bool", "[4,3]", "");
    check_binary(cmp[i], "i64", "[4,3]", "i64", "[4,1]", "bool", "[4,3]", "");
  }
  check_binary("And", "bool", "[4,3]", "bool", "[3]", "bool", "[4,3]", "");
  check_binary("Or", "bool", "[4,3]", "bool", "[3]", "bool", "[4,3]", "");
  check_binary("Xor", "bool", "[4,3]", "bool", "[3]", "bool", "[4,3]", "");
  check_binary("BitwiseAnd", "i32", "[4,3]", "i32", "[3]", "i32", "[4,3]", "");
  check_binary("BitwiseXor", "u16", "[4,3]", "u16", "[3]", "u16", "[4,3]", "");
  check_binary("BitShift", "u8", "[4,3]", "u8", "[3]", "u8", "[4,3]", "{direction=\"LEFT\"}");
  check_binary("BitShift", "u32", "[4,3]", "u32", "[3]", "u32", "[4,3]", "{direction=\"RIGHT\"}");
}

static void test_variadic_where_clip_cast(void) {
  check_graph("graph @v(%a: f32[2,3], %b: f32[3], %c: f32[2,1]) -> (%y: f32[2,3], %z: f32[2,3], "
              "%w: f32[2,3], %m: f32[2,3]) {\n  opset \"\" 20\n"
              "  %y = Sum(%a, %b, %c) : f32[2,3]\n  %z = Max(%a, %b, %c) : f32[2,3]\n"
              "  %w = Mean(%a, %b, %c) : f32[2,3]\n  %m = Min(%a, %b) : f32[2,3]\n"
              "  return %y, %z, %w, %m\n}\n",
              LOWERED(4));
  check_graph("graph @w(%c: bool[2,3], %a: f32[3], %b: f32[2,1]) -> (%y: f32[2,3]) {\n"
              "  opset \"\" 20\n  %y = Where(%c, %a, %b) : f32[2,3]\n  return %y\n}\n",
              LOWERED(1));
  check_graph("graph @c(%x: f32[4,5]) -> (%y: f32[4,5], %z: f32[4,5]) {\n  opset \"\" 20\n"
              "  %lo = const f32[] [-0.5]\n  %hi = const f32[] [0.75]\n"
              "  %y = Clip(%x, %lo, %hi) : f32[4,5]\n  %z = Clip(%x, _, %hi) : f32[4,5]\n"
              "  return %y, %z\n}\n",
              LOWERED(2));
  check_graph("graph @c6(%x: f32[4,5]) -> (%y: f32[4,5]) {\n  opset \"\" 6\n"
              "  %y = Clip(%x) {min=-0.5, max=0.5} : f32[4,5]\n  return %y\n}\n",
              LOWERED(1));
  const char *casts[][2] = {{"f32", "i32"},  {"f32", "f16"}, {"i64", "f32"}, {"f32", "bool"},
                            {"bool", "f32"}, {"i32", "i8"},  {"f16", "f64"}, {"u8", "i64"}};
  for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++) {
    char text[512];
    int to = 0;
    kiln_dtype dt;
    if (kiln_dtype_from_name(casts[i][1], &dt)) to = (int)dt;
    snprintf(text, sizeof text,
             "graph @cast(%%x: %s[3,4]) -> (%%y: %s[3,4]) {\n  opset \"\" 20\n"
             "  %%y = Cast(%%x) {to=%d} : %s[3,4]\n  return %%y\n}\n",
             casts[i][0], casts[i][1], to, casts[i][1]);
    check_graph(text, LOWERED(1));
  }
}

static void test_fused_elementwise(void) {
  /* a DAG: x used twice, an intermediate used twice, one intermediate also an output */
  check_graph("graph @e(%x: f32[3,1,6], %b: f32[6]) -> (%y: f32[3,1,6], %t: f32[3,1,6]) {\n"
              "  opset \"\" 20\n"
              "  %a = Add(%x, %b) : f32[3,1,6]\n  %s = Sigmoid(%a) : f32[3,1,6]\n"
              "  %t = Mul(%a, %s) : f32[3,1,6]\n  %u = Mul(%t, %x) : f32[3,1,6]\n"
              "  %y = Add(%u, %a) : f32[3,1,6]\n  return %y, %t\n}\n",
              FUSED(1));
  /* cast chain with a rounding through f16 */
  check_graph("graph @r(%x: f32[17]) -> (%y: f32[17]) {\n  opset \"\" 20\n"
              "  %h = Cast(%x) {to=10} : f16[17]\n  %y = Cast(%h) {to=1} : f32[17]\n"
              "  return %y\n}\n",
              FUSED(1));
}

static void check_reduce(const char *op, const char *dt, const char *attrs, const char *axes,
                         const char *out) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @r(%%x: %s[3,4,5]) -> (%%y: %s) {\n  opset \"\" 18\n%s%s"
           "  %%y = %s(%%x%s)%s%s : %s\n  return %%y\n}\n",
           dt, out, axes ? "  %ax = const i64" : "", axes ? axes : "", op, axes ? ", %ax" : "",
           attrs[0] ? " " : "", attrs, out);
  check_graph(text, LOWERED(1));
}

static void test_reductions(void) {
  const char *ops[] = {"ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",      "ReduceProd",
                       "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSumExp"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    check_reduce(ops[i], "f32", "", "[1] [1]\n", "f32[3,1,5]");
    check_reduce(ops[i], "f32", "{keepdims=0}", "[2] [0, -1]\n", "f32[4]");
    check_reduce(ops[i], "f32", "", NULL, "f32[1,1,1]");
  }
  check_reduce("ReduceLogSum", "f32", "", "[1] [2]\n", "f32[3,4,1]");
  check_reduce("ReduceSum", "i32", "{keepdims=0}", "[1] [1]\n", "i32[3,5]");
  check_reduce("ReduceMax", "i64", "", "[1] [2]\n", "i64[3,4,1]");
  check_reduce("ReduceSum", "f16", "", "[1] [2]\n", "f16[3,4,1]");
  check_reduce("ReduceMean", "f64", "", "[1] [0]\n", "f64[1,4,5]");
  check_reduce("ArgMax", "f32", "{axis=1}", NULL, "i64[3,1,5]");
  check_reduce("ArgMin", "f32", "{axis=-1, keepdims=0}", NULL, "i64[3,4]");
  check_reduce("ArgMax", "i32", "{axis=0, select_last_index=1}", NULL, "i64[1,4,5]");
  check_reduce("Softmax", "f32", "", NULL, "f32[3,4,5]");
  check_reduce("Softmax", "f32", "{axis=1}", NULL, "f32[3,4,5]");
  check_reduce("LogSoftmax", "f32", "{axis=0}", NULL, "f32[3,4,5]");
  check_reduce("Softmax", "f16", "", NULL, "f16[3,4,5]");
  /* Softmax-11 normalizes over all dims from axis on */
  check_graph("graph @s(%x: f32[3,4,5]) -> (%y: f32[3,4,5]) {\n  opset \"\" 11\n"
              "  %y = Softmax(%x) : f32[3,4,5]\n  return %y\n}\n",
              LOWERED(1));
  check_graph("graph @ln(%x: f32[2,3,8], %s: f32[8], %b: f32[8]) -> (%y: f32[2,3,8], %m: "
              "f32[2,3,1], %i: f32[2,3,1]) {\n  opset \"\" 18\n"
              "  %y, %m, %i = LayerNormalization(%x, %s, %b) {epsilon=0.001} : f32[2,3,8], "
              "f32[2,3,1], f32[2,3,1]\n  return %y, %m, %i\n}\n",
              LOWERED(1));
  check_graph("graph @ln2(%x: f32[2,3,8], %s: f32[3,8]) -> (%y: f32[2,3,8]) {\n  opset \"\" 18\n"
              "  %y = LayerNormalization(%x, %s) {axis=1} : f32[2,3,8]\n  return %y\n}\n",
              LOWERED(1));
}

static void test_fused_reductions(void) {
  /* prologue (scaled and masked scores), softmax, epilogue */
  check_graph("graph @att(%x: f32[2,4,6], %m: f32[6]) -> (%y: f32[2,4,6]) {\n  opset \"\" 18\n"
              "  %c = const f32[] [0.5]\n  %s = Mul(%x, %c) : f32[2,4,6]\n"
              "  %a = Add(%s, %m) : f32[2,4,6]\n  %p = Softmax(%a) : f32[2,4,6]\n"
              "  %y = Mul(%p, %c) : f32[2,4,6]\n  return %y\n}\n",
              FUSED(1));
  check_graph("graph @gap(%x: f32[2,3,4,4], %b: f32[3,1,1]) -> (%y: f32[2,3,1,1]) {\n"
              "  opset \"\" 18\n  %ax = const i64[2] [2, 3]\n  %r = Relu(%x) : f32[2,3,4,4]\n"
              "  %m = ReduceMean(%r, %ax) : f32[2,3,1,1]\n  %y = Add(%m, %b) : f32[2,3,1,1]\n"
              "  return %y\n}\n",
              FUSED(1));
  /* LayerNorm whose mean output is used: no epilogue, the Add stays apart */
  check_graph("graph @ln(%x: f32[2,8], %s: f32[8]) -> (%y: f32[2,8], %m: f32[2,1]) {\n"
              "  opset \"\" 18\n  %e = Exp(%x) : f32[2,8]\n"
              "  %n, %m = LayerNormalization(%e, %s) : f32[2,8], f32[2,1]\n"
              "  %y = Add(%n, %m) : f32[2,8]\n  return %y, %m\n}\n",
              FUSED(2));
}

static void check_pool(const char *op, const char *attrs, const char *in, const char *out) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @p(%%x: f32%s) -> (%%y: f32%s) {\n  opset \"\" 19\n"
           "  %%y = %s(%%x)%s%s : f32%s\n  return %%y\n}\n",
           in, out, op, attrs[0] ? " " : "", attrs, out);
  check_graph(text, LOWERED(1));
}

static void test_pooling(void) {
  check_pool("MaxPool", "{kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}", "[2,3,9,8]",
             "[2,3,5,4]");
  check_pool("AveragePool", "{kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2]}", "[2,3,9,8]",
             "[2,3,5,4]");
  check_pool("AveragePool",
             "{kernel_shape=[3,3], pads=[1,1,1,1], strides=[2,2], count_include_pad=1}",
             "[2,3,9,8]", "[2,3,5,4]");
  check_pool("MaxPool", "{kernel_shape=[2,2], strides=[2,2], ceil_mode=1}", "[1,2,7,7]",
             "[1,2,4,4]");
  check_pool("MaxPool", "{kernel_shape=[3], auto_pad=\"SAME_UPPER\", dilations=[2]}", "[1,2,10]",
             "[1,2,10]");
  check_pool("AveragePool", "{kernel_shape=[2,2], auto_pad=\"SAME_LOWER\"}", "[1,2,5,5]",
             "[1,2,5,5]");
  check_pool("GlobalAveragePool", "", "[2,5,7,7]", "[2,5,1,1]");
  check_pool("GlobalMaxPool", "", "[2,5,3,4]", "[2,5,1,1]");
}

static void check_one(const char *ins, const char *consts, const char *node, const char *out) {
  char text[1536];
  snprintf(text, sizeof text,
           "graph @d(%s) -> (%%y: %s) {\n  opset \"\" 18\n%s  %%y = %s : %s\n  return %%y\n}\n",
           ins, out, consts, node, out);
  check_graph(text, LOWERED(1));
}

static void test_data_movement(void) {
  check_one("%x: f32[2,3,4]", "", "Transpose(%x) {perm=[2,0,1]}", "f32[4,2,3]");
  check_one("%x: i64[2,3,4]", "", "Transpose(%x)", "i64[4,3,2]");
  check_one("%x: f32[3,1]", "  %s = const i64[3] [2, 3, 4]\n", "Expand(%x, %s)", "f32[2,3,4]");
  check_one("%x: f16[2,3]", "  %s = const i64[2] [2, 3]\n", "Tile(%x, %s)", "f16[4,9]");
  check_one("%x: f32[5,7]",
            "  %a = const i64[2] [1, -1]\n  %b = const i64[2] [4, -8]\n"
            "  %c = const i64[2] [0, 1]\n  %d = const i64[2] [2, -2]\n",
            "Slice(%x, %a, %b, %c, %d)", "f32[2,4]");
  check_one("%x: f32[2,3], %z: f32[2,5]", "", "Concat(%x, %z) {axis=1}", "f32[2,8]");
  check_one("%x: u8[4,3], %z: u8[1,3]", "", "Concat(%x, %z, %x) {axis=0}", "u8[9,3]");
  check_one("%x: f32[5,4]", "  %i = const i64[2,2] [0, -1, 4, 2]\n", "Gather(%x, %i)",
            "f32[2,2,4]");
  check_one("%x: f32[5,4]", "  %i = const i32[3] [3, 0, -4]\n", "Gather(%x, %i) {axis=1}",
            "f32[5,3]");
  check_one("%x: f32[3,4]", "  %p = const i64[4] [1, 2, 0, 1]\n  %v = const f32[] [1.5]\n",
            "Pad(%x, %p, %v)", "f32[4,7]");
  check_one("%x: f32[3,4]", "  %p = const i64[4] [2, 1, 1, 2]\n", "Pad(%x, %p) {mode=\"reflect\"}",
            "f32[6,7]");
  check_one("%x: i32[3,4]", "  %p = const i64[4] [2, 1, 1, 3]\n", "Pad(%x, %p) {mode=\"edge\"}",
            "i32[6,8]");
  check_one("%x: f32[1,8,2,3]", "", "DepthToSpace(%x) {blocksize=2}", "f32[1,2,4,6]");
  check_one("%x: f32[1,8,2,3]", "", "DepthToSpace(%x) {blocksize=2, mode=\"CRD\"}", "f32[1,2,4,6]");
  check_one("%x: f32[2,2,4,6]", "", "SpaceToDepth(%x) {blocksize=2}", "f32[2,8,2,3]");
  check_graph("graph @sp(%x: f32[7,4]) -> (%a: f32[3,4], %b: f32[4,4]) {\n  opset \"\" 18\n"
              "  %s = const i64[2] [3, 4]\n  %a, %b = Split(%x, %s) : f32[3,4], f32[4,4]\n"
              "  return %a, %b\n}\n",
              LOWERED(1));
}

TEST_MAIN(T(test_data_movement), T(test_pooling), T(test_reductions), T(test_fused_reductions),
          T(test_alias_and_fallback), T(test_forced_fallback), T(test_unary_f32),
          T(test_unary_other_dtypes), T(test_binary_broadcast), T(test_variadic_where_clip_cast),
          T(test_fused_elementwise))
