/* Lowerings of lower_index.c, lower_norm.c and lower_misc.c: each graph (text IR) is
 * lowered with no fallback, every kernel passes the tile IR verifier, and the program
 * interpreter matches the reference interpreter on random inputs. Index inputs (and other
 * inputs whose values matter) are constants of the graph or bounded random integers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"
#include "passes/passes.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double uniform(void) { /* [0, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* floats in [-2, 2); integers in [0, int_hi) (index inputs stay in range when int_hi is
 * the indexed extent; 0 keeps them in [-2, 2]) */
static kiln_tensor *random_input(const kiln_type *t, int int_hi) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL;
  if (kiln_tensor_new(t->dtype, t->rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++) {
    if (kiln_dtype_is_float(t->dtype))
      kiln_store_f64(t->dtype, x->data, (size_t)i, uniform() * 4 - 2);
    else if (t->dtype == KILN_BOOL) kiln_store_i64(t->dtype, x->data, (size_t)i, uniform() < 0.5);
    else if (int_hi > 0)
      kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(uniform() * int_hi));
    else kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(uniform() * 5) - 2);
  }
  return x;
}

static bool close_to(kiln_dtype dt, double a, double ref) {
  if (isnan(a) || isnan(ref)) return isnan(a) && isnan(ref);
  double rtol = dt == KILN_F16 ? 1e-2 : dt == KILN_F64 ? 1e-9 : 1e-4;
  return fabs(a - ref) <= 1e-5 + rtol * fabs(ref);
}

static bool same(const kiln_tensor *a, const kiln_tensor *ref) {
  if (a->dtype != ref->dtype || a->numel != ref->numel) {
    fprintf(stderr, "  dtype or size differs\n");
    return false;
  }
  for (int64_t i = 0; i < a->numel; i++) {
    double x = kiln_load_f64(a->dtype, a->data, (size_t)i);
    double y = kiln_load_f64(ref->dtype, ref->data, (size_t)i);
    if (!close_to(a->dtype, x, y)) {
      fprintf(stderr, "  element %lld: got %.9g, reference %.9g\n", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

static bool run_both(const kiln_graph *g, const kiln_program *p, int int_hi) {
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_tensor *in[8], *out[8] = {0};
  kiln_val *vin[8], *ref[8] = {0};
  for (int i = 0; i < n_in; i++) {
    in[i] = random_input(&g->values.data[g->inputs.data[i]].type, int_hi);
    vin[i] = kiln_val_tensor(in[i]);
  }
  kiln_status st = kiln_interp_run(g, NULL, n_in, vin, ref);
  bool ok = !st;
  if (st) fprintf(stderr, "reference: %s\n", kiln_status_message(st));
  kiln_status_free(st);
  st = kiln_program_interp(p, n_in, in, out);
  if (st) fprintf(stderr, "program: %s\n", kiln_status_message(st)), ok = false;
  kiln_status_free(st);
  for (int i = 0; ok && i < n_out; i++) ok = same(out[i], ref[i]->t);
  for (int i = 0; i < n_out; i++) kiln_tensor_free(out[i]), kiln_val_free(ref[i]);
  for (int i = 0; i < n_in; i++) kiln_val_free(vin[i]);
  return ok;
}

static bool verify_all(const kiln_program *p) {
  bool ok = true;
  for (int i = 0; i < p->module->kernels.len; i++) {
    kiln_status st = kiln_tkernel_verify(p->module->kernels.data[i]);
    if (st) fprintf(stderr, "verify: %s\n", kiln_status_message(st)), ok = false;
    kiln_status_free(st);
  }
  return ok;
}

/* Lowers `text` (no fusion), expects `kernels` kernels and no fallback, and compares. */
static void check_lowered(const char *text, int kernels, int int_hi) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (st) fprintf(stderr, "parse: %s\n", kiln_status_message(st));
  kiln_status_free(st);
  CHECK(g != NULL);
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 4};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  if (!p) return kiln_graph_free(g);
  bool ok = verify_all(p) && p->n_fallback == 0 && p->module->kernels.len == kernels;
  for (int rep = 0; ok && rep < 2; rep++) ok = run_both(g, p, int_hi);
  if (!ok) {
    kiln_strbuf b = {0};
    kiln_program_print(p, &b);
    fprintf(stderr, "failed on:\n%s%s", text, b.data ? b.data : "");
    kiln_strbuf_free(&b);
  }
  CHECK(ok);
  kiln_program_free(p);
  kiln_graph_free(g);
}

/* A graph of one node: `sig` is the parameter list and results, `body` the node lines. */
static void check_node(const char *sig, int opset, const char *body, int int_hi) {
  char text[2048];
  snprintf(text, sizeof text, "graph @t(%s {\n  opset \"\" %d\n%s}\n", sig, opset, body);
  check_lowered(text, 1, int_hi);
}

/* ---- lower_misc.c ---- */
static void test_shape_constant(void) {
  check_node("%x: f32[2,3,4]) -> (%y: i64[3])", 19, "  %y = Shape(%x) : i64[3]\n  return %y\n", 0);
  check_node("%x: f32[2,3,4]) -> (%y: i64[2])", 19,
             "  %y = Shape(%x) {start=-2} : i64[2]\n  return %y\n", 0);
  check_node("%x: f32[2,3,4]) -> (%y: i64[])", 19, "  %y = Size(%x) : i64[]\n  return %y\n", 0);
  check_node(") -> (%y: f32[2])", 19,
             "  %y = Constant() {value_floats=[1.5, -2]} : f32[2]\n  return %y\n", 0);
}

static void test_trilu_eyelike_onehot(void) {
  check_node("%x: f32[2,4,5]) -> (%y: f32[2,4,5])", 14,
             "  %y = Trilu(%x) : f32[2,4,5]\n  return %y\n", 0);
  check_node("%x: i32[4,5]) -> (%y: i32[4,5])", 14,
             "  %k = const i64[] [-1]\n  %y = Trilu(%x, %k) {upper=0} : i32[4,5]\n  return %y\n",
             0);
  /* k known only at run time (random in [-2, 2]) */
  check_node("%x: f32[5,4], %k: i64[]) -> (%y: f32[5,4])", 14,
             "  %y = Trilu(%x, %k) : f32[5,4]\n  return %y\n", 0);
  check_node("%x: f32[3,5]) -> (%y: f32[3,5])", 9,
             "  %y = EyeLike(%x) {k=1} : f32[3,5]\n  return %y\n", 0);
  check_node("%x: i32[4,4]) -> (%y: f64[4,4])", 9,
             "  %y = EyeLike(%x) {k=-2, dtype=11} : f64[4,4]\n  return %y\n", 0);
  /* indices random in [-2, 2]: negative ones count from the end */
  check_node("%i: i64[2,3]) -> (%y: f32[2,4,3])", 11,
             "  %d = const i64[] [4]\n  %v = const f32[2] [0.5, 3]\n"
             "  %y = OneHot(%i, %d, %v) {axis=1} : f32[2,4,3]\n  return %y\n",
             0);
  check_node("%i: f32[5]) -> (%y: i32[5,3])", 11,
             "  %d = const f32[] [3]\n  %v = const i32[2] [0, 7]\n"
             "  %y = OneHot(%i, %d, %v) : i32[5,3]\n  return %y\n",
             0);
}

static void test_cumsum_hardmax_dropout(void) {
  check_node("%x: f32[3,4]) -> (%y: f32[3,4])", 14,
             "  %a = const i64[] [1]\n  %y = CumSum(%x, %a) : f32[3,4]\n  return %y\n", 0);
  check_node("%x: f64[3,4]) -> (%y: f64[3,4])", 14,
             "  %a = const i32[] [0]\n"
             "  %y = CumSum(%x, %a) {exclusive=1, reverse=1} : f64[3,4]\n  return %y\n",
             0);
  /* the axis known only at run time: random in [0, 2) */
  check_node("%x: i32[3,4], %a: i64[]) -> (%y: i32[3,4])", 14,
             "  %y = CumSum(%x, %a) : i32[3,4]\n  return %y\n", 2);
  check_node("%x: f32[5]) -> (%y: f32[5])", 26,
             "  %a = const i64[] [0]\n  %y = CumProd(%x, %a) {exclusive=1} : f32[5]\n  return %y\n",
             0);
  check_node("%x: f32[3,4,5]) -> (%y: f32[3,4,5])", 13,
             "  %y = Hardmax(%x) {axis=1} : f32[3,4,5]\n  return %y\n", 0);
  check_node("%x: f32[3,4,5]) -> (%y: f32[3,4,5])", 11,
             "  %y = Hardmax(%x) : f32[3,4,5]\n  return %y\n", 0);
  check_node("%x: f32[3,4]) -> (%y: f32[3,4], %m: bool[3,4])", 13,
             "  %y, %m = Dropout(%x) : f32[3,4], bool[3,4]\n  return %y, %m\n", 0);
}

/* ---- lower_index.c ---- */
static void test_gathers(void) {
  /* indices random in [-2, 2]: negative ones count from the end */
  check_node("%x: f32[3,4], %i: i64[2,4]) -> (%y: f32[2,4])", 13,
             "  %y = GatherElements(%x, %i) : f32[2,4]\n  return %y\n", 0);
  check_node("%x: i32[3,5], %i: i32[3,2]) -> (%y: i32[3,2])", 13,
             "  %y = GatherElements(%x, %i) {axis=-1} : i32[3,2]\n  return %y\n", 0);
  check_node("%x: f32[4,4,3]) -> (%y: f32[2,3])", 13,
             "  %i = const i64[2,2] [0, 1, 3, -1]\n"
             "  %y = GatherND(%x, %i) : f32[2,3]\n  return %y\n",
             0);
  check_node("%x: f32[2,4,3], %i: i64[2,1]) -> (%y: f32[2,3])", 13,
             "  %y = GatherND(%x, %i) {batch_dims=1} : f32[2,3]\n  return %y\n", 0);
}

static void test_scatters(void) {
  static const char *const reds[] = {"none", "add", "mul", "max", "min"};
  for (int r = 0; r < 5; r++) {
    char body[512];
    /* duplicate indices: the reduction combines them in order */
    snprintf(body, sizeof body,
             "  %%i = const i64[2,3] [1, 0, 2, -1, 0, 2]\n"
             "  %%y = ScatterElements(%%x, %%i, %%u) {axis=0, reduction=\"%s\"} : f32[3,3]\n"
             "  return %%y\n",
             reds[r]);
    check_node("%x: f32[3,3], %u: f32[2,3]) -> (%y: f32[3,3])", 18, body, 0);
    snprintf(body, sizeof body,
             "  %%i = const i64[3,1] [0, 2, 0]\n"
             "  %%y = ScatterND(%%x, %%i, %%u) {reduction=\"%s\"} : f32[4,2]\n  return %%y\n",
             reds[r]);
    check_node("%x: f32[4,2], %u: f32[3,2]) -> (%y: f32[4,2])", 18, body, 0);
  }
  check_node("%x: i64[2,3,2], %u: i64[2]) -> (%y: i64[2,3,2])", 16,
             "  %i = const i64[2,3] [1, 2, 0, 0, 0, 1]\n"
             "  %y = ScatterND(%x, %i, %u) {reduction=\"add\"} : i64[2,3,2]\n  return %y\n",
             0);
}

/* ---- lower_norm.c ---- */
static void test_norms(void) {
  check_node("%x: f32[2,3,8], %s: f32[8]) -> (%y: f32[2,3,8])", 23,
             "  %y = RMSNormalization(%x, %s) : f32[2,3,8]\n  return %y\n", 0);
  check_node("%x: f32[2,3,4], %s: f32[3,4]) -> (%y: f32[2,3,4])", 23,
             "  %y = RMSNormalization(%x, %s) {axis=1, epsilon=0.01} : f32[2,3,4]\n  return %y\n",
             0);
  check_node("%x: f32[3,4,5]) -> (%y: f32[3,4,5])", 1,
             "  %y = LpNormalization(%x) {axis=1, p=1} : f32[3,4,5]\n  return %y\n", 0);
  check_node("%x: f64[3,4]) -> (%y: f64[3,4])", 1,
             "  %y = LpNormalization(%x) : f64[3,4]\n  return %y\n", 0);
  check_node("%x: f32[2,3,4,5], %s: f32[3], %b: f32[3]) -> (%y: f32[2,3,4,5])", 6,
             "  %y = InstanceNormalization(%x, %s, %b) : f32[2,3,4,5]\n  return %y\n", 0);
  check_node("%x: f32[2,4,3], %s: f32[4], %b: f32[4]) -> (%y: f32[2,4,3])", 21,
             "  %y = GroupNormalization(%x, %s, %b) {num_groups=2} : f32[2,4,3]\n  return %y\n", 0);
  check_node("%x: f32[2,4,3], %s: f32[2], %b: f32[2]) -> (%y: f32[2,4,3])", 18,
             "  %y = GroupNormalization(%x, %s, %b) {num_groups=2, epsilon=0.1} : f32[2,4,3]\n"
             "  return %y\n",
             0);
  check_node("%x: f32[2,3,4], %s: f32[3], %b: f32[3], %m: f32[3]) -> (%y: f32[2,3,4])", 15,
             "  %v = const f32[3] [0.5, 1, 2]\n"
             "  %y = BatchNormalization(%x, %s, %b, %m, %v) : f32[2,3,4]\n  return %y\n",
             0);
  check_node(
      "%x: f32[2,5,3,2]) -> (%y: f32[2,5,3,2])", 13,
      "  %y = LRN(%x) {size=3, alpha=0.01, beta=0.5, bias=2.0} : f32[2,5,3,2]\n  return %y\n", 0);
  check_node("%x: f16[1,4,6]) -> (%y: f16[1,4,6])", 13,
             "  %y = LRN(%x) {size=2} : f16[1,4,6]\n  return %y\n", 0);
}

TEST_MAIN(T(test_norms), T(test_gathers), T(test_scatters), T(test_shape_constant),
          T(test_trilu_eyelike_onehot), T(test_cumsum_hardmax_dropout))
