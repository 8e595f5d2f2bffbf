/* The error bounds on inputs at the edges of the domain (src/verify/bound/): regressions of
 * the false alarms that edge draws found. Each input below was once judged finite and stable
 * by the reference, kept by the input search, and then failed a correct layer:
 * - a float Cast to an integer type out of the target's range (undefined in ONNX and C; the
 *   tile interpreter refused it, the reference wrapped): now unstable;
 * - Mean / ReduceMean / ReduceL2 / Gemm / ReduceProd whose result fits f32 but whose
 *   intermediate (the sum before the division, the sum of squares, A B before alpha, a
 *   partial product) does not: a correct f32 kernel returned Inf. Now non-finite by bound.
 * The same ops on values whose intermediates fit stay usable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "harness.h"
#include "verify/verify.h"

/* The reference of `op` (text of one node reading %a [and %b]) on a: f32[n], b: f32[m]. */
static kiln_vref *run(const char *node, const char *a_type, const double *a, int na,
                      const char *b_type, const double *b, int nb) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @t(%%a: %s%s%s) -> (%%y: ?) {\n  opset \"\" 18\n  %%y = %s\n  return %%y\n}\n",
           a_type, b_type ? ", %b: " : "", b_type ? b_type : "", node);
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "t.kiln", &g));
  if (!g) return NULL;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_val *in[2] = {NULL, NULL};
  const double *src[2] = {a, b};
  int n[2] = {na, nb};
  for (int i = 0; i < g->inputs.len && i < 2; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    int64_t dims[KILN_MAX_RANK];
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
    kiln_tensor *x = NULL;
    CHECK_OK(kiln_tensor_new(t->dtype, t->rank, dims, &x));
    CHECK(x && x->numel == n[i]);
    for (int64_t k = 0; x && k < x->numel && k < n[i]; k++)
      kiln_store_f64(t->dtype, x->data, (size_t)k, src[i][k]);
    in[i] = kiln_val_tensor(x);
  }
  kiln_vref *r = NULL;
  CHECK_OK(kiln_vref_compute(g, g->inputs.len, in, &r));
  for (int i = 0; i < 2; i++) kiln_val_free(in[i]);
  return r;
}

static bool usable(kiln_vref *r) {
  CHECK(r != NULL); /* the graph ran: a failed run is no verdict */
  bool ok = r && r->n_nonfinite == 0 && r->n_unstable == 0;
  if (r && !ok) printf("    %s\n", r->note);
  if (r) kiln_graph_free((kiln_graph *)r->g);
  kiln_vref_free(r);
  return ok;
}

static void test_cast_range(void) {
  double big[1] = {3e9}, fits[1] = {2e9}, neg[1] = {-1.5}, negfrac[1] = {-0.75};
  double huge[1] = {-2.6e38};
  CHECK(!usable(run("Cast(%a) {to=6}", "f32[1]", big, 1, NULL, NULL, 0))); /* i32 */
  CHECK(usable(run("Cast(%a) {to=6}", "f32[1]", fits, 1, NULL, NULL, 0)));
  CHECK(!usable(run("Cast(%a) {to=7}", "f32[1]", huge, 1, NULL, NULL, 0)));   /* i64 */
  CHECK(!usable(run("Cast(%a) {to=2}", "f32[1]", neg, 1, NULL, NULL, 0)));    /* u8 */
  CHECK(usable(run("Cast(%a) {to=2}", "f32[1]", negfrac, 1, NULL, NULL, 0))); /* -0.75 -> 0 */
  CHECK(!usable(run("CastLike(%a, %b)", "f32[1]", big, 1, "i32[1]", (double[]){1}, 1)));
  /* float -> float and int -> int casts are unchanged */
  CHECK(usable(run("Cast(%a) {to=1}", "f64[1]", huge, 1, NULL, NULL, 0)));
}

static void test_intermediate_overflow(void) {
  double a[2] = {2.5e38, 2.5e38}, small[2] = {1e38, 1e38};
  CHECK(!usable(run("Mean(%a, %b)", "f32[1]", a, 1, "f32[1]", a + 1, 1)));
  CHECK(usable(run("Mean(%a, %b)", "f32[1]", small, 1, "f32[1]", small + 1, 1)));
  CHECK(!usable(run("ReduceMean(%a) {keepdims=0}", "f32[2]", a, 2, NULL, NULL, 0)));
  CHECK(usable(run("ReduceMean(%a) {keepdims=0}", "f32[2]", small, 2, NULL, NULL, 0)));
  double l2[2] = {2e19, 2e19}, l2ok[2] = {1e18, 1e18};
  CHECK(!usable(run("ReduceL2(%a) {keepdims=0}", "f32[2]", l2, 2, NULL, NULL, 0)));
  CHECK(usable(run("ReduceL2(%a) {keepdims=0}", "f32[2]", l2ok, 2, NULL, NULL, 0)));
  double p[3] = {1e30, 1e30, 1e-30}, pok[3] = {1e15, 1e15, 1e-30};
  CHECK(!usable(run("ReduceProd(%a) {keepdims=0}", "f32[3]", p, 3, NULL, NULL, 0)));
  CHECK(usable(run("ReduceProd(%a) {keepdims=0}", "f32[3]", pok, 3, NULL, NULL, 0)));
  double g[1] = {2e19}, gok[1] = {1e19};
  CHECK(!usable(run("Gemm(%a, %b) {alpha=0.5}", "f32[1,1]", g, 1, "f32[1,1]", g, 1)));
  CHECK(usable(run("Gemm(%a, %b) {alpha=0.5}", "f32[1,1]", gok, 1, "f32[1,1]", gok, 1)));
  /* one addition has no intermediate: 2e38 - 1.9e38 is exact in any order */
  double d[2] = {2e38, -1.9e38};
  CHECK(usable(run("Add(%a, %b)", "f32[1]", d, 1, "f32[1]", d + 1, 1)));
  CHECK(usable(run("Sub(%a, %b)", "f32[1]", d, 1, "f32[1]", (double[]){1.9e38}, 1)));
  double three[3] = {2e38, 2e38, -1.9e38};
  CHECK(!usable(run("Sum(%a, %a, %b)", "f32[1]", three, 1, "f32[1]", three + 2, 1)));
  /* a plain sum whose result fits has no larger intermediate */
  CHECK(usable(run("ReduceSum(%a) {keepdims=0}", "f32[2]", small, 2, NULL, NULL, 0)));
  /* f64 is not tracked (its reference is the same double) */
  CHECK(usable(run("Mean(%a, %b)", "f64[1]", a, 1, "f64[1]", a + 1, 1)));
}

/* Subnormals survive compiled code: no flush to zero (FTZ/DAZ, -ffast-math) in the C target
 * or its runtime. Checked bit for bit against the interpreter, since the comparison's dtype
 * floor (atol 1e-5) cannot see a flushed subnormal: a campaign would miss it. (Compiling the
 * kernels with a constructor that sets MXCSR's FTZ and DAZ bits makes this test fail.) */
static void test_subnormals_kept(void) {
  static const char text[] =
      "graph @d(%a: f32[4], %b: f32[4], %h: f16[4], %k: f16[4], %p: f64[2], %q: f64[2]) -> "
      "(%s: ?, %m: ?, %t: ?, %u: ?) {\n  opset \"\" 18\n"
      "  %s = Add(%a, %b)\n  %m = Mul(%a, %b)\n  %t = Sub(%h, %k)\n  %u = Add(%p, %q)\n"
      "  return %s, %m, %t, %u\n}\n";
  double a[4] = {0x1p-140, -0x1p-130, 0x1p-149, 0x3p-128}, b[4] = {0x1p-141, 0x1p-131, 1, -1};
  double h[4] = {0x3p-24, 0x1p-15, -0x1p-24, 0x1p-14}, k[4] = {0x1p-24, 0x1p-24, 0x1p-24, 0x1p-24};
  double p[2] = {0x1p-1070, 0x1p-1060}, q[2] = {0x1p-1071, -0x1p-1061};
  const double *src[6] = {a, b, h, k, p, q};
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "d.kiln", &g));
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_val *in[6];
  for (int i = 0; i < 6; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    int64_t dims[1] = {t->dims[0].value};
    kiln_tensor *x = NULL;
    CHECK_OK(kiln_tensor_new(t->dtype, 1, dims, &x));
    for (int64_t e = 0; e < dims[0]; e++) kiln_store_f64(t->dtype, x->data, (size_t)e, src[i][e]);
    in[i] = kiln_val_tensor(x);
  }
  kiln_val *want[4] = {0}, *got[4] = {0};
  CHECK_OK(kiln_interp_run(g, NULL, 6, in, want));
  char cache[1024];
  kiln_test_make_tmp(cache, sizeof cache, "kiln_subnormal");
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = cache;
  o.threads = 1;
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (c) CHECK_OK(kiln_compiled_run_vals(c, 6, in, got));
  int subnormal = 0;
  for (int i = 0; i < 4; i++) {
    if (!want[i] || !got[i]) {
      CHECK(false);
      continue;
    }
    const kiln_tensor *w = want[i]->t, *y = got[i]->t;
    CHECK(w->dtype == y->dtype && w->numel == y->numel);
    CHECK(!memcmp(w->data, y->data, kiln_tensor_nbytes(w)));
    for (int64_t e = 0; e < w->numel; e++) {
      double v = fabs(kiln_load_f64(w->dtype, w->data, (size_t)e));
      subnormal += v > 0 && v < (w->dtype == KILN_F16   ? 0x1p-14
                                 : w->dtype == KILN_F32 ? 0x1p-126
                                                        : 0x1p-1022);
    }
  }
  CHECK(subnormal >= 8); /* the expected results are subnormal themselves */
  for (int i = 0; i < 4; i++) kiln_val_free(want[i]), kiln_val_free(got[i]);
  for (int i = 0; i < 6; i++) kiln_val_free(in[i]);
  kiln_compiled_free(c);
  kiln_graph_free(g);
  kiln_test_remove_dir(cache);
}

/* An op whose internal steps the rules do not bound, on values near the limit: BatchNorm in f64
 * of x near 1.7e308 with var < 1 (the spec's (x - mean) / sqrt(var + eps) overflows before
 * the scale brings it back; the compiled kernel returned Inf where the reference had 5e307),
 * and Mish in f32 (not one step: x tanh(softplus(x))). Single-step ops (Sqrt, Log)
 * and ordinary large values stay usable. */
static void test_near_limit(void) {
  double x[1] = {1.7e308}, b[1] = {0.858};
  /* scale = bias = mean = var = b: one second input for all four */
  const char *node = "BatchNormalization(%a, %b, %b, %b, %b) {epsilon=1e-05}";
  CHECK(!usable(run(node, "f64[1,1,1]", x, 1, "f64[1]", b, 1)));
  double ok[1] = {1e4};
  CHECK(usable(run(node, "f64[1,1,1]", ok, 1, "f64[1]", b, 1)));
  double big[1] = {2e38}, large[2] = {1e4, -3e3};
  CHECK(!usable(run("Mish(%a)", "f32[1]", big, 1, NULL, NULL, 0)));
  CHECK(usable(run("Mish(%a)", "f32[2]", large, 2, NULL, NULL, 0)));
  CHECK(usable(run("Sqrt(%a)", "f32[1]", big, 1, NULL, NULL, 0)));
  CHECK(usable(run("Log(%a)", "f32[1]", big, 1, NULL, NULL, 0)));
}

/* NaN and infinities in the inputs: where they propagate one way (elementwise arithmetic, Max,
 * sums, casts between floats) the draw is usable and the reference is compared exactly; where
 * ONNX leaves the result open (which index a NaN takes, a max that may skip it, a row whose max
 * is infinite, a cast to an integer) it is unstable; a finite result that overflows next to a
 * NaN elsewhere in the node still counts as non-finite. */
static void test_nonfinite_inputs(void) {
  double a[3] = {NAN, 1, INFINITY}, b[3] = {2, -INFINITY, 3};
  CHECK(usable(run("Add(%a, %b)", "f32[3]", a, 3, "f32[3]", b, 3)));
  CHECK(usable(run("Max(%a, %b)", "f32[3]", a, 3, "f32[3]", b, 3)));
  CHECK(usable(run("ReduceSum(%a)", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(usable(run("Cast(%a) {to=10}", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(usable(run("IsInf(%a) {detect_negative=0}", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(!usable(run("ArgMax(%a)", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(!usable(run("Softmax(%a)", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(!usable(run("ReduceMax(%a)", "f32[3]", a, 3, NULL, NULL, 0)));
  CHECK(!usable(run("Cast(%a) {to=6}", "f32[3]", a, 3, NULL, NULL, 0)));
  /* [3e38 * 2, NaN * 1]: the first element overflows f32 from finite operands */
  double big[2] = {3e38, NAN}, two[2] = {2, 1};
  CHECK(!usable(run("Mul(%a, %b)", "f32[2]", big, 2, "f32[2]", two, 2)));
  double fine[2] = {3e3, NAN};
  CHECK(usable(run("Mul(%a, %b)", "f32[2]", fine, 2, "f32[2]", two, 2)));
}

TEST_MAIN(T(test_cast_range), T(test_intermediate_overflow), T(test_subnormals_kept),
          T(test_near_limit), T(test_nonfinite_inputs))
