/* Contraction lowering tests: MatMul, Gemm and Conv groups with epilogues, written in text
 * IR (groups marked explicitly, and through the fusion pass), lowered with kiln_lower and
 * run with the program interpreter against the reference interpreter. Constants written
 * `RANDOM` in the text get random data of their shape. */
#include <ctype.h>
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

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rnd(void) { /* [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

/* Replaces each `RANDOM` that follows a tensor type `dt[d0,d1,...]` by random elements. */
static char *expand(const char *text) {
  kiln_strbuf out = {0};
  const char *p = text;
  for (const char *r; (r = strstr(p, "RANDOM"));) {
    kiln_strbuf_append(&out, p, (size_t)(r - p));
    const char *lb = r;
    while (lb > text && *lb != '[') lb--;
    int64_t n = 1;
    for (const char *q = lb + 1; *q && *q != ']';) {
      n *= strtoll(q, (char **)&q, 10);
      while (*q == ',' || isspace((unsigned char)*q)) q++;
    }
    kiln_strbuf_append(&out, "[", 1);
    for (int64_t i = 0; i < n; i++) kiln_strbuf_printf(&out, "%s%.6g", i ? ", " : "", rnd());
    kiln_strbuf_append(&out, "]", 1);
    p = r + 6;
  }
  kiln_strbuf_append(&out, p, strlen(p));
  return out.data;
}

static kiln_tensor *random_tensor(const kiln_type *t) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL;
  if (kiln_tensor_new(t->dtype, t->rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++) kiln_store_f64(t->dtype, x->data, (size_t)i, rnd());
  return x;
}

/* f32 sums of a few hundred products of numbers in [-1, 1): absolute 1e-4 covers them. */
static bool same_tensor(const kiln_tensor *a, const kiln_tensor *ref) {
  if (a->dtype != ref->dtype || a->numel != ref->numel) {
    fprintf(stderr, "  shape or dtype differs\n");
    return false;
  }
  double atol = a->dtype == KILN_F64 ? 1e-10 : 2e-4, rtol = a->dtype == KILN_F64 ? 1e-9 : 1e-4;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = kiln_load_f64(a->dtype, a->data, (size_t)i);
    double y = kiln_load_f64(ref->dtype, ref->data, (size_t)i);
    if (!(fabs(x - y) <= atol + rtol * fabs(y))) {
      fprintf(stderr, "  element %lld: got %.9g, reference %.9g\n", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

static bool compare_run(const kiln_graph *g, const kiln_program *p) {
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_tensor *in[8];
  kiln_val *vin[8], *ref[8] = {0};
  kiln_tensor *out[8] = {0};
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
  for (int i = 0; i < n_in; i++) kiln_val_free(vin[i]);
  return ok;
}

typedef struct expect {
  int kernels;   /* kernels in the module; -1: any */
  int fallbacks; /* fallback steps */
  bool fuse;     /* run the fusion pass instead of trusting the groups in the text */
  int threads;
} expect;

static bool verify_all(const kiln_program *p) {
  bool ok = true;
#if VERIFY_KERNELS
  for (int i = 0; i < p->module->kernels.len; i++) {
    kiln_status st = kiln_tkernel_verify(p->module->kernels.data[i]);
    if (st) fprintf(stderr, "verify: %s\n", kiln_status_message(st)), ok = false;
    kiln_status_free(st);
  }
#else
  (void)p;
#endif
  return ok;
}

static void dump(const char *text, const kiln_program *p) {
  kiln_strbuf b = {0};
  kiln_program_print(p, &b);
  fprintf(stderr, "failed on:\n%s%s", text, b.data ? b.data : "");
  kiln_strbuf_free(&b);
}

static void check(const char *tmpl, expect e) {
  char *text = expand(tmpl);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (st) fprintf(stderr, "parse: %s\n%s", kiln_status_message(st), text);
  CHECK(st == KILN_OK);
  kiln_status_free(st);
  if (!g) return free(text);
  CHECK_OK(kiln_ops_infer_graph(g));
  if (e.fuse) {
    kiln_pass_opts po = {.fuse_classify = kiln_lower_fuse_class};
    kiln_pass_ctx ctx = {&po, "fusion", 0};
    CHECK_OK(kiln_pass_fusion(&ctx, g));
  }
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = e.threads ? e.threads : 2};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  if (p) {
    bool ok = verify_all(p);
    if (e.kernels >= 0 && p->module->kernels.len != e.kernels) {
      fprintf(stderr, "kernels: %d, want %d\n", p->module->kernels.len, e.kernels);
      ok = false;
    }
    if (p->n_fallback != e.fallbacks) {
      fprintf(stderr, "fallbacks: %d, want %d\n", p->n_fallback, e.fallbacks);
      ok = false;
    }
    ok = ok && compare_run(g, p);
    if (!ok) dump(text, p);
    CHECK(ok);
    kiln_program_free(p);
  }
  kiln_graph_free(g);
  free(text);
}

#define ONE ((expect){1, 0, false, 0})

/* ---- MatMul ---- */

static void test_matmul_const_2d(void) {
  /* 5 rows (an MR tail), 9 columns (one padded panel), bias and Relu */
  check("graph @m(%a: f32[5,7]) -> (%y: f32[5,9]) {\n opset \"\" 17\n"
        " %b = const f32[7,9] RANDOM\n %c = const f32[9] RANDOM\n"
        " %m = MatMul(%a, %b) : f32[5,9] group 1\n %s = Add(%m, %c) : f32[5,9] group 1\n"
        " %y = Relu(%s) : f32[5,9] group 1\n return %y\n}\n",
        ONE);
}

static void test_matmul_const_3d(void) {
  /* rows of all batches in one GEMM; 33 columns: a full panel and a padded one; a residual
   * operand and a per-column scale, the MatMul's result on the left of Add */
  check("graph @m(%a: f32[2,9,40], %r: f32[2,9,33]) -> (%y: f32[2,9,33]) {\n opset \"\" 17\n"
        " %b = const f32[40,33] RANDOM\n %s = const f32[33] RANDOM\n"
        " %m = MatMul(%a, %b) : f32[2,9,33] group 1\n %t = Mul(%s, %m) : f32[2,9,33] group 1\n"
        " %y = Add(%r, %t) : f32[2,9,33] group 1\n return %y\n}\n",
        ONE);
}

static void test_matmul_batched(void) {
  /* attention-like: both operands computed, B one panel wide (read in place) */
  check("graph @m(%a: f32[2,3,17,8], %b: f32[2,3,8,16]) -> (%y: f32[2,3,17,16]) {\n"
        " opset \"\" 17\n %m = MatMul(%a, %b) : f32[2,3,17,16] group 1\n"
        " %k = const f32[1] [0.125]\n %y = Mul(%m, %k) : f32[2,3,17,16] group 1\n return %y\n}\n",
        ONE);
  /* 13 columns in place (not a microkernel width) */
  check("graph @m(%a: f32[4,6,9], %b: f32[4,9,13]) -> (%y: f32[4,6,13]) {\n opset \"\" 17\n"
        " %y = MatMul(%a, %b) : f32[4,6,13]\n return %y\n}\n",
        ONE);
}

static void test_matmul_broadcast(void) {
  /* batch dims broadcast both ways; B 70 wide: packed into scratch */
  check("graph @m(%a: f32[3,1,6,5], %b: f32[4,5,70]) -> (%y: f32[3,4,6,70]) {\n"
        " opset \"\" 17\n %y = MatMul(%a, %b) : f32[3,4,6,70]\n return %y\n}\n",
        ONE);
  /* a constant B with batch dims: prepacked per batch */
  check("graph @m(%a: f32[2,4,6]) -> (%y: f32[3,2,4,5]) {\n opset \"\" 17\n"
        " %b = const f32[3,1,6,5] RANDOM\n %y = MatMul(%a, %b) : f32[3,2,4,5]\n return %y\n}\n",
        ONE);
}

static void test_matmul_1d(void) {
  check("graph @m(%a: f32[7]) -> (%y: f32[9]) {\n opset \"\" 17\n"
        " %b = const f32[7,9] RANDOM\n %y = MatMul(%a, %b) : f32[9]\n return %y\n}\n",
        ONE);
  check("graph @m(%a: f32[2,3,7], %b: f32[7]) -> (%y: f32[2,3]) {\n opset \"\" 17\n"
        " %y = MatMul(%a, %b) : f32[2,3]\n return %y\n}\n",
        ONE);
  check("graph @m(%a: f32[7], %b: f32[2,7,3]) -> (%y: f32[2,3]) {\n opset \"\" 17\n"
        " %y = MatMul(%a, %b) : f32[2,3]\n return %y\n}\n",
        ONE);
}

static void test_matmul_f64(void) {
  check("graph @m(%a: f64[10,12]) -> (%y: f64[10,20]) {\n opset \"\" 17\n"
        " %b = const f64[12,20] RANDOM\n %m = MatMul(%a, %b) : f64[10,20] group 1\n"
        " %y = Tanh(%m) : f64[10,20] group 1\n return %y\n}\n",
        ONE);
}

static void test_matmul_int_falls_back(void) {
  check("graph @m(%a: i32[3,4], %b: i32[4,5]) -> (%y: i32[3,5]) {\n opset \"\" 17\n"
        " %y = MatMul(%a, %b) : i32[3,5]\n return %y\n}\n",
        (expect){0, 1, false, 0});
}

static void test_matmul_parallel(void) {
  /* large enough to run on threads: rows, panels, and batches split */
  check("graph @m(%a: f32[70,64]) -> (%y: f32[70,100]) {\n opset \"\" 17\n"
        " %b = const f32[64,100] RANDOM\n %y = MatMul(%a, %b) : f32[70,100]\n return %y\n}\n",
        ONE);
  check("graph @m(%a: f32[6,40,64], %b: f32[6,64,32]) -> (%y: f32[6,40,32]) {\n opset \"\" 17\n"
        " %y = MatMul(%a, %b) : f32[6,40,32]\n return %y\n}\n",
        ONE);
  check("graph @m(%a: f32[200,64]) -> (%y: f32[200,40]) {\n opset \"\" 17\n"
        " %b = const f32[64,40] RANDOM\n %y = MatMul(%a, %b) : f32[200,40]\n return %y\n}\n",
        ONE);
}

/* ---- Gemm ---- */

static void gemm_case(int ta, int tb, const char *alpha, const char *beta, const char *cshape,
                      bool bconst) {
  char text[2048], cdecl[128] = "", cin[16] = "";
  const char *ashape = ta ? "[6,5]" : "[5,6]", *bshape = tb ? "[19,6]" : "[6,19]";
  if (cshape) {
    snprintf(cdecl, sizeof cdecl, " %%c = const f32%s RANDOM\n", cshape);
    snprintf(cin, sizeof cin, ", %%c");
  }
  snprintf(text, sizeof text,
           "graph @g(%%a: f32%s%s%s) -> (%%y: f32[5,19]) {\n opset \"\" 13\n%s%s"
           " %%m = Gemm(%%a, %%b%s) {alpha=%s, beta=%s, transA=%d, transB=%d} : f32[5,19] group 1\n"
           " %%y = Sigmoid(%%m) : f32[5,19] group 1\n return %%y\n}\n",
           ashape, bconst ? "" : ", %b: f32", bconst ? "" : bshape, cdecl, bconst ? "" : "", cin,
           alpha, beta, ta, tb);
  if (bconst) {
    char with_b[2300];
    char *at = strstr(text, " %m = Gemm");
    snprintf(with_b, sizeof with_b, "%.*s %%b = const f32%s RANDOM\n%s", (int)(at - text), text,
             bshape, at);
    check(with_b, ONE);
  } else {
    check(text, ONE);
  }
}

static void test_gemm_flags(void) {
  static const char *const cshapes[] = {NULL, "[19]", "[5,1]", "[5,19]", "[1]"};
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int bc = 0; bc < 2; bc++) gemm_case(ta, tb, "1.0", "1.0", "[19]", bc);
  for (int i = 0; i < 5; i++) gemm_case(0, 1, "0.5", "-2.0", cshapes[i], true);
  gemm_case(1, 0, "1.5", "0.0", "[5,19]", false);
}

/* ---- Conv ---- */

static void test_conv_basic(void) {
  check("graph @c(%x: f32[1,3,9,11]) -> (%y: f32[1,8,9,11]) {\n opset \"\" 17\n"
        " %w = const f32[8,3,3,3] RANDOM\n %b = const f32[8] RANDOM\n"
        " %c = Conv(%x, %w, %b) {pads=[1,1,1,1]} : f32[1,8,9,11] group 1\n"
        " %y = Relu(%c) : f32[1,8,9,11] group 1\n return %y\n}\n",
        ONE);
}

static void test_conv_strides_dilations(void) {
  /* asymmetric pads, stride 2, dilation 2, 10 output channels (an MR tail), batch 2 */
  check("graph @c(%x: f32[2,3,13,10]) -> (%y: f32[2,10,6,5]) {\n opset \"\" 17\n"
        " %w = const f32[10,3,3,2] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[0,1,2,1], strides=[2,2], dilations=[2,2]} : f32[2,10,6,5]\n"
        " return %y\n}\n",
        ONE);
}

static void test_conv_groups(void) {
  check("graph @c(%x: f32[2,4,7,7]) -> (%y: f32[2,6,7,7]) {\n opset \"\" 17\n"
        " %w = const f32[6,2,3,3] RANDOM\n %b = const f32[6] RANDOM\n"
        " %k = const f32[6,1,1] RANDOM\n"
        " %c = Conv(%x, %w, %b) {group=2, pads=[1,1,1,1]} : f32[2,6,7,7] group 1\n"
        " %y = Mul(%c, %k) : f32[2,6,7,7] group 1\n return %y\n}\n",
        ONE);
}

static void test_conv_depthwise(void) {
  check("graph @c(%x: f32[1,6,10,10]) -> (%y: f32[1,6,5,5]) {\n opset \"\" 17\n"
        " %w = const f32[6,1,3,3] RANDOM\n %b = const f32[6] RANDOM\n"
        " %lo = const f32[] [0]\n %hi = const f32[] [0.5]\n"
        " %c = Conv(%x, %w, %b) {group=6, pads=[1,1,1,1], strides=[2,2]} : f32[1,6,5,5] group 1\n"
        " %y = Clip(%c, %lo, %hi) : f32[1,6,5,5] group 1\n return %y\n}\n",
        ONE);
  /* 1-D: the direct loop with bounds tests instead of a padded plane */
  check("graph @c(%x: f32[2,4,20]) -> (%y: f32[2,4,20]) {\n opset \"\" 17\n"
        " %w = const f32[4,1,3] RANDOM\n"
        " %y = Conv(%x, %w) {group=4, pads=[1,1]} : f32[2,4,20]\n return %y\n}\n",
        ONE);
  /* channel multiplier 2, batch 2, dilation */
  check("graph @c(%x: f32[2,3,8,9], %w: f32[6,1,3,3]) -> (%y: f32[2,6,4,5]) {\n opset \"\" 17\n"
        " %y = Conv(%x, %w) {group=3, dilations=[2,2]} : f32[2,6,4,5]\n return %y\n}\n",
        ONE);
}

static void test_conv_pointwise_residual(void) {
  /* the end of a ResNet block: 1x1 conv, bias, residual add, Relu */
  check("graph @c(%x: f32[1,16,6,7], %r: f32[1,20,6,7]) -> (%y: f32[1,20,6,7]) {\n"
        " opset \"\" 17\n %w = const f32[20,16,1,1] RANDOM\n %b = const f32[20] RANDOM\n"
        " %c = Conv(%x, %w, %b) : f32[1,20,6,7] group 1\n"
        " %s = Add(%c, %r) : f32[1,20,6,7] group 1\n %y = Relu(%s) : f32[1,20,6,7] group 1\n"
        " return %y\n}\n",
        ONE);
}

static void test_conv_1d_3d(void) {
  check("graph @c(%x: f32[2,3,17]) -> (%y: f32[2,5,9]) {\n opset \"\" 17\n"
        " %w = const f32[5,3,4] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[1,2], strides=[2]} : f32[2,5,9]\n return %y\n}\n",
        ONE);
  check("graph @c(%x: f32[1,2,5,6,4]) -> (%y: f32[1,4,5,6,4]) {\n opset \"\" 17\n"
        " %w = const f32[4,2,3,3,3] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[1,1,1,1,1,1]} : f32[1,4,5,6,4]\n return %y\n}\n",
        ONE);
}

static void test_conv_auto_pad(void) {
  static const char *const modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
  static const char *const outs[] = {"[1,4,4,5]", "[1,4,4,5]", "[1,4,4,4]"};
  for (int i = 0; i < 3; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "graph @c(%%x: f32[1,3,8,9]) -> (%%y: f32%s) {\n opset \"\" 17\n"
             " %%w = const f32[4,3,2,3] RANDOM\n"
             " %%y = Conv(%%x, %%w) {auto_pad=\"%s\", strides=[2,2]} : f32%s\n return %%y\n}\n",
             outs[i], modes[i], outs[i]);
    check(text, ONE);
  }
}

static void test_conv_weights_input(void) {
  check("graph @c(%x: f32[1,4,6,6], %w: f32[6,2,3,3], %b: f32[6]) -> (%y: f32[1,6,4,4]) {\n"
        " opset \"\" 17\n %y = Conv(%x, %w, %b) {group=2} : f32[1,6,4,4]\n return %y\n}\n",
        ONE);
}

static void test_conv_f64(void) {
  check("graph @c(%x: f64[1,2,5,5]) -> (%y: f64[1,3,5,5]) {\n opset \"\" 17\n"
        " %w = const f64[3,2,3,3] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[1,1,1,1]} : f64[1,3,5,5]\n return %y\n}\n",
        ONE);
}

static void test_conv_parallel(void) {
  /* 72 output channels over 81 pixels: rows split across threads */
  check("graph @c(%x: f32[1,32,9,9]) -> (%y: f32[1,72,9,9]) {\n opset \"\" 17\n"
        " %w = const f32[72,32,3,3] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[1,1,1,1]} : f32[1,72,9,9]\n return %y\n}\n",
        ONE);
  /* many pixels: panels split across threads */
  check("graph @c(%x: f32[1,8,24,24]) -> (%y: f32[1,16,24,24]) {\n opset \"\" 17\n"
        " %w = const f32[16,8,3,3] RANDOM\n %b = const f32[16] RANDOM\n"
        " %y = Conv(%x, %w, %b) {pads=[1,1,1,1]} : f32[1,16,24,24]\n return %y\n}\n",
        ONE);
}

static void test_conv_wide_rows(void) {
  /* rows of 30, 26 (stride 2) and 56 (two panels per row) pixels: row-aligned panels over
   * a zero-padded copy of the input */
  check("graph @c(%x: f32[1,4,6,30]) -> (%y: f32[1,8,6,30]) {\n opset \"\" 17\n"
        " %w = const f32[8,4,3,3] RANDOM\n %b = const f32[8] RANDOM\n"
        " %c = Conv(%x, %w, %b) {pads=[1,1,1,1]} : f32[1,8,6,30] group 1\n"
        " %y = Relu(%c) : f32[1,8,6,30] group 1\n return %y\n}\n",
        ONE);
  check("graph @c(%x: f32[2,3,9,52]) -> (%y: f32[2,5,5,26]) {\n opset \"\" 17\n"
        " %w = const f32[5,3,3,3] RANDOM\n"
        " %y = Conv(%x, %w) {pads=[1,1,1,1], strides=[2,2]} : f32[2,5,5,26]\n return %y\n}\n",
        ONE);
  check("graph @c(%x: f32[1,4,4,58]) -> (%y: f32[1,8,2,56]) {\n opset \"\" 17\n"
        " %w = const f32[8,2,3,3] RANDOM\n"
        " %y = Conv(%x, %w) {group=2} : f32[1,8,2,56]\n return %y\n}\n",
        (expect){-1, 0, false, 0});
}

/* ---- epilogue shapes the lowering must refuse (the nodes then lower on their own) ---- */

static void test_epilogue_rejected(void) {
  /* an operand that would widen the output cannot join the MatMul's group */
  check("graph @m(%a: f32[1,4,6], %r: f32[3,4,5]) -> (%y: f32[3,4,5]) {\n opset \"\" 17\n"
        " %b = const f32[6,5] RANDOM\n %m = MatMul(%a, %b) : f32[1,4,5] group 1\n"
        " %y = Add(%m, %r) : f32[3,4,5] group 1\n return %y\n}\n",
        (expect){-1, 0, false, 0});
}

TEST_MAIN(T(test_matmul_const_2d), T(test_matmul_const_3d), T(test_matmul_batched),
          T(test_matmul_broadcast), T(test_matmul_1d), T(test_matmul_f64),
          T(test_matmul_int_falls_back), T(test_matmul_parallel), T(test_gemm_flags),
          T(test_conv_basic), T(test_conv_strides_dilations), T(test_conv_groups),
          T(test_conv_depthwise), T(test_conv_pointwise_residual), T(test_conv_1d_3d),
          T(test_conv_auto_pad), T(test_conv_weights_input), T(test_conv_f64),
          T(test_conv_parallel), T(test_conv_wide_rows), T(test_epilogue_rejected))
