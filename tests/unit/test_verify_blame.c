/* What the verification system blames (src/verify/runner/runner_check.c, case.c, bound_dtype.c):
 * inputs that do not fit the model are bad input before anything runs, never a failing
 * layer; a C compiler that cannot run or a full disk is the environment's failure
 * (KILN_ERR_SYSTEM), never a finding, while C that a working compiler rejects stays one; a
 * case that cannot be written whole leaves nothing that replays; outer values read inside
 * subgraphs keep the graph's dtypes in the reference even where inference gave them none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "onnx/onnx.h"
#include "verify/verify.h"

static char g_tmp[1024];

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static kiln_val *tensor(kiln_dtype dt, int rank, const int64_t *dims, double v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++)
    kiln_store_f64(dt, t->data, (size_t)i, v + 0.125 * (double)i);
  return kiln_val_tensor(t);
}

static void free_vals(kiln_val **v, int n) {
  for (int i = 0; i < n; i++) kiln_val_free(v[i]);
}

/* The status's message contains what; frees it. False when st is OK. */
static bool err_says(kiln_status st, kiln_code code, const char *what) {
  bool ok = st && kiln_status_code(st) == code && strstr(kiln_status_message(st), what);
  if (!ok) fprintf(stderr, "  got: %s\n", st ? kiln_status_message(st) : "OK");
  kiln_status_free(st);
  return ok;
}

static void opts(kiln_verify_opts *o, bool cpu) {
  kiln_verify_opts_init(o);
  o->targets[KILN_TARGET_CPU] = cpu;
  o->compile.cache_dir = g_tmp;
}

/* ---- the user's inputs ---- */
static const char *const two_inputs =
    "graph @g(%x: f32[2,3], %y: f32[N,3], %z: f32[N]) -> (%o: ?, %s: ?) {\n"
    "  opset \"\" 17\n"
    "  %a = Add(%x, %x)\n"
    "  %r = ReduceMax(%y) {axes=[1], keepdims=0}\n"
    "  %s = Add(%r, %z)\n"
    "  %o = Relu(%a)\n"
    "  return %o, %s\n"
    "}\n";

/* Runs the runner (no compiled layer) on x, y, z; returns its status (a result is freed). */
static kiln_status run3(const kiln_graph *g, kiln_val *x, kiln_val *y, kiln_val *z, int n) {
  kiln_val *in[3] = {x, y, z};
  kiln_verify_opts o;
  opts(&o, false);
  kiln_verify_result res;
  kiln_status st = kiln_verify_run(g, n, in, &o, &res);
  if (!st) kiln_verify_result_free(&res);
  free_vals(in, 3);
  return st;
}

/* The verifier run on g with x as given (y, z well formed, or z missing) refuses it as bad
 * input before anything runs, with a message holding want. */
static bool x_refused(kiln_graph *g, kiln_dtype dt, int rank, const int64_t *dims,
                      const char *want) {
  const int64_t d23[] = {2, 3}, d2[] = {2};
  return err_says(run3(g, tensor(dt, rank, dims, 1), tensor(KILN_F32, 2, d23, 1),
                       tensor(KILN_F32, 1, d2, 1), 3),
                  KILN_ERR_INVALID, want);
}

static void test_inputs_checked_first(void) {
  kiln_graph *g = parse(two_inputs);
  const int64_t d23[] = {2, 3}, d32[] = {3, 2}, d6[] = {6}, d2[] = {2}, d3[] = {3};
  CHECK_OK(run3(g, tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1),
                tensor(KILN_F32, 1, d2, 1), 3));
  CHECK(x_refused(g, KILN_F32, 2, d32, "input 'x' is f32[3,2], the model takes f32[2,3]"));
  CHECK(x_refused(g, KILN_F64, 2, d23, "input 'x' is f64[2,3]"));
  CHECK(x_refused(g, KILN_F32, 1, d6, "input 'x' is f32[6]"));
  CHECK(x_refused(g, KILN_I64, 2, d23, "input 'x' is i64[2,3]"));
  /* one symbol, one extent: N = 2 from y, 3 from z */
  CHECK(err_says(run3(g, tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1),
                      tensor(KILN_F32, 1, d3, 1), 3),
                 KILN_ERR_INVALID, "input 'z' has N = 3"));
  CHECK(err_says(run3(g, tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1), NULL, 3),
                 KILN_ERR_INVALID, "input 'z' is missing"));
  CHECK(err_says(run3(g, tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1), NULL, 2),
                 KILN_ERR_INVALID, "takes 3 inputs, 2 given"));
  kiln_graph_free(g);
}

/* The same check stands behind kiln_graph_bind_inputs, and a symbol used twice in one input
 * must agree with itself. */
static void test_shared_check(void) {
  kiln_graph *g = parse("graph @sq(%x: f32[N,N]) -> (%y: ?) {\n  opset \"\" 17\n"
                        "  %y = Relu(%x)\n  return %y\n}\n");
  const int64_t d23[] = {2, 3}, d22[] = {2, 2};
  kiln_val *bad = tensor(KILN_F32, 2, d23, 0), *good = tensor(KILN_F32, 2, d22, 0);
  CHECK(err_says(kiln_graph_check_inputs(g, 1, (const kiln_tensor *const[]){bad->t}),
                 KILN_ERR_INVALID, "has N = 3 (dim 1)"));
  CHECK_OK(kiln_graph_check_inputs(g, 1, (const kiln_tensor *const[]){good->t}));
  CHECK(err_says(kiln_graph_bind_inputs(g, 1, (const kiln_tensor *const[]){bad->t}),
                 KILN_ERR_INVALID, "input 'x'"));
  CHECK_OK(kiln_graph_bind_inputs(g, 1, (const kiln_tensor *const[]){good->t}));
  kiln_val_free(bad), kiln_val_free(good);
  kiln_graph_free(g);
}

/* ---- cases ---- */
static bool exists(const char *dir, const char *name) {
  char p[2048];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return stat(p, &sb) == 0;
}

static void test_case_inputs_checked(void) {
  kiln_graph *g = parse(two_inputs);
  const int64_t d23[] = {2, 3}, d2[] = {2}, d32[] = {3, 2};
  kiln_val *in[3] = {tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1),
                     tensor(KILN_F32, 1, d2, 1)};
  char dir[1200], p[1300];
  snprintf(dir, sizeof dir, "%s/case", g_tmp);
  CHECK_OK(kiln_verify_write_case(dir, g, 3, in, NULL));
  kiln_graph *lg = NULL;
  kiln_val **lv = NULL;
  int n = 0;
  CHECK_OK(kiln_verify_load_case(dir, &lg, &lv, &n, NULL, 0));
  if (lv) free_vals(lv, n), free(lv);
  kiln_graph_free(lg);
  kiln_val *wrong = tensor(KILN_F32, 2, d32, 1); /* input_0.pb of another shape */
  snprintf(p, sizeof p, "%s/input_0.pb", dir);
  CHECK_OK(kiln_pb_write_tensor(p, wrong->t, "x"));
  CHECK(err_says(kiln_verify_load_case(dir, &lg, &lv, &n, NULL, 0), KILN_ERR_INVALID,
                 "input_0.pb: input 'x' is f32[3,2]"));
  CHECK_OK(kiln_pb_write_tensor(p, in[0]->t, "x"));
  snprintf(p, sizeof p, "%s/input_3.pb", dir); /* one file too many */
  CHECK_OK(kiln_pb_write_tensor(p, in[0]->t, "w"));
  CHECK(err_says(kiln_verify_load_case(dir, &lg, &lv, &n, NULL, 0), KILN_ERR_INVALID,
                 "input_3.pb is one input too many"));
  CHECK(lg == NULL && lv == NULL);
  kiln_val_free(wrong);
  free_vals(in, 3);
  kiln_graph_free(g);
}

/* A case is written whole next to its folder and renamed into place: an earlier case there is
 * replaced whole; a folder that holds anything else (here a folder named model.kiln, a file of
 * the user) is refused and left as it was. */
static void test_half_case_removed(void) {
  kiln_graph *g = parse(two_inputs);
  const int64_t d23[] = {2, 3}, d2[] = {2};
  kiln_val *in[3] = {tensor(KILN_F32, 2, d23, 1), tensor(KILN_F32, 2, d23, 1),
                     tensor(KILN_F32, 1, d2, 1)};
  char dir[1200], p[1300];
  snprintf(dir, sizeof dir, "%s/half", g_tmp);
  snprintf(p, sizeof p, "%s/model.kiln", dir);
  CHECK_OK(kiln_make_dirs(p));
  CHECK(err_says(kiln_verify_write_case(dir, g, 3, in, NULL), KILN_ERR_INVALID,
                 "not a case folder (it holds 'model.kiln')"));
  CHECK(!exists(dir, "model.onnx") && !exists(dir, "input_0.pb") && !exists(dir, "case.txt"));
  snprintf(dir, sizeof dir, "%s/mine", g_tmp);
  snprintf(p, sizeof p, "%s/notes", dir);
  CHECK_OK(kiln_make_dirs(dir));
  CHECK_OK(kiln_write_file(p, "mine", 4));
  CHECK(err_says(kiln_verify_write_case(dir, g, 3, in, NULL), KILN_ERR_INVALID,
                 "not a case folder (it holds 'notes')"));
  CHECK(!exists(dir, "model.onnx") && exists(dir, "notes"));
  snprintf(dir, sizeof dir, "%s/again", g_tmp);
  CHECK_OK(kiln_verify_write_case(dir, g, 3, in, NULL));
  snprintf(p, sizeof p, "%s/input_9.pb", dir);
  CHECK_OK(kiln_write_file(p, "x", 1));
  CHECK_OK(kiln_verify_write_case(dir, g, 3, in, NULL)); /* an earlier case: replaced whole */
  CHECK(exists(dir, "model.onnx") && exists(dir, "input_2.pb") && !exists(dir, "input_9.pb"));
  free_vals(in, 3);
  kiln_graph_free(g);
}

/* ---- the environment ---- */
static const char *const small = "graph @s(%x: f32[2,3]) -> (%y: ?) {\n  opset \"\" 17\n"
                                 "  %a = Mul(%x, %x)\n  %y = Add(%a, %x)\n  return %y\n}\n";

/* Writes an executable shell script as a fake C compiler; returns its path in buf. */
static const char *fake_cc(char *buf, size_t n, const char *name, const char *body) {
  snprintf(buf, n, "%s/%s", g_tmp, name);
  FILE *f = fopen(buf, "w");
  if (!f) abort();
  fprintf(f, "#!/bin/sh\n%s\n", body);
  fclose(f);
  chmod(buf, 0755);
  return buf;
}

/* Runs the runner with the cpu layer built by cc; *failed: the result's verdict. */
static kiln_status run_with_cc(const char *cc, const char *repro, bool *failed,
                               kiln_layer_kind *kind) {
  kiln_graph *g = parse(small);
  const int64_t d23[] = {2, 3};
  kiln_val *in[1] = {tensor(KILN_F32, 2, d23, 1)};
  kiln_verify_opts o;
  opts(&o, true);
  o.compile.cc = cc;
  o.repro_dir = repro;
  kiln_verify_result res;
  kiln_status st = kiln_verify_run(g, 1, in, &o, &res);
  *failed = !st && res.failed;
  if (!st) *kind = res.fail_kind, kiln_verify_result_free(&res);
  free_vals(in, 1);
  kiln_graph_free(g);
  return st;
}

static void test_environment_is_no_finding(void) {
  char repro[1200], cc[1200];
  snprintf(repro, sizeof repro, "%s/repro_env", g_tmp);
  bool failed = false;
  kiln_layer_kind kind = KILN_LAYER_KIND_COUNT;
  /* no such compiler */
  CHECK(err_says(run_with_cc("/nonexistent/cc", repro, &failed, &kind), KILN_ERR_SYSTEM,
                 "the environment failed"));
  CHECK(!exists(repro, "model.onnx"));
  /* a compiler that answers --version but cannot be executed for the units (exit 126) */
  fake_cc(cc, sizeof cc, "cc126", "[ \"$1\" = --version ] && exec cc --version\nexit 126");
  CHECK(err_says(run_with_cc(cc, repro, &failed, &kind), KILN_ERR_SYSTEM, "exit 126"));
  /* a compiler that runs out of disk space */
  fake_cc(cc, sizeof cc, "ccfull",
          "[ \"$1\" = --version ] && exec cc --version\n"
          "echo 'fatal error: cannot write unit0.o: No space left on device' >&2\nexit 1");
  CHECK(err_says(run_with_cc(cc, repro, &failed, &kind), KILN_ERR_SYSTEM, "No space left"));
  CHECK(!exists(repro, "model.onnx"));
  /* a working compiler that rejects the code: a finding (the C Kiln generated is wrong) */
  fake_cc(cc, sizeof cc, "ccreject",
          "[ \"$1\" = --version ] && exec cc --version\necho 'error: expected ;' >&2\nexit 1");
  CHECK_OK(run_with_cc(cc, repro, &failed, &kind));
  CHECK(failed && kind == KILN_LAYER_CPU);
  CHECK(exists(repro, "model.onnx")); /* the finding is a case */
  /* the compiler of the environment: no finding */
  CHECK_OK(run_with_cc(NULL, NULL, &failed, &kind));
  CHECK(!failed);
}

/* Corrupts every f32 [2,3] value a step of the tile layer produces: a wrong kernel. */
static void corrupt(void *user, int step, int value, const kiln_tensor *t) {
  (void)user, (void)step, (void)value;
  if (t->dtype == KILN_F32 && t->numel == 6) ((float *)t->data)[5] += 1.0f;
}

/* A finding before the layer the environment broke stands: the tile layer fails, the cpu
 * layer cannot compile; the result is the tile finding, not the environment's error. */
static void test_finding_before_environment(void) {
  kiln_graph *g = parse(small);
  const int64_t d23[] = {2, 3};
  kiln_val *in[1] = {tensor(KILN_F32, 2, d23, 1)};
  kiln_verify_opts o;
  opts(&o, true);
  o.compile.cc = "/nonexistent/cc";
  o.inject = corrupt;
  o.inject_layers = 1u << KILN_LAYER_TILE;
  kiln_verify_result res;
  CHECK_OK(kiln_verify_run(g, 1, in, &o, &res));
  CHECK(res.failed && res.fail_kind == KILN_LAYER_TILE);
  kiln_verify_result_free(&res);
  o.inject_layers = 1u << KILN_LAYER_CPU; /* nothing fails before the cpu layer */
  CHECK(err_says(kiln_verify_run(g, 1, in, &o, &res), KILN_ERR_SYSTEM, "environment"));
  free_vals(in, 1);
  kiln_graph_free(g);
}

/* ---- the reference: outer values read in subgraphs ---- */
/* b has no dtype after inference (ReduceSum with computed axes, keepdims=0): read inside a
 * subgraph next to a subgraph's own f32 constant, it must keep f32. */
#define OUTER_B                                                                                    \
  "  opset \"\" 17\n"                                                                              \
  "  %ax = Constant() {value=i64[1] [0]} : i64[1]\n"                                               \
  "  %b = ReduceSum(%x, %ax) {keepdims=0}\n"

static const char *const sub_if =
    "graph @sub_if(%x: f32[2,3], %c: bool[]) -> (%y: f32[3]) {\n" OUTER_B
    "  %y = If(%c) {else_branch=graph @else() -> (%else_o: f32[3]) {\n"
    "    outer %b\n"
    "    %else_k = Constant() {value=f32[3] [-0.5, -0.5, -0.5]} : f32[3]\n"
    "    %else_o = Add(%b, %else_k) : f32[3]\n"
    "    return %else_o\n"
    "  }, then_branch=graph @then() -> (%then_o: f32[3]) {\n"
    "    outer %b\n"
    "    %then_k = Constant() {value=f32[3] [0.5, 0.5, 0.5]} : f32[3]\n"
    "    %then_o = Add(%then_k, %b) : f32[3]\n"
    "    return %then_o\n"
    "  }} : f32[3]\n"
    "  return %y\n"
    "}\n";

static const char *const sub_loop =
    "graph @sub_loop(%x: f32[2,3]) -> (%y: f32[3]) {\n" OUTER_B
    "  %trip = Constant() {value=i64[] [3]} : i64[]\n"
    "  %t0 = Constant() {value=bool[] [true]} : bool[]\n"
    "  %z = Constant() {value=f32[3] [0, 0, 0]} : f32[3]\n"
    "  %y = Loop(%trip, %t0, %z) {body=graph @body(%i: i64[], %cin: bool[], %acc: f32[3]) -> "
    "(%cout: bool[], %acc_o: f32[3]) {\n"
    "    outer %b\n"
    "    %k = Constant() {value=f32[3] [0.25, 0.25, 0.25]} : f32[3]\n"
    "    %t = Add(%b, %k)\n"
    "    %acc_o = Add(%acc, %t) : f32[3]\n"
    "    %cout = Identity(%cin) : bool[]\n"
    "    return %cout, %acc_o\n"
    "  }} : f32[3]\n"
    "  return %y\n"
    "}\n";

static const char *const sub_scan =
    "graph @sub_scan(%x: f32[2,3]) -> (%ys: f32[3], %y2: f32[2,3]) {\n" OUTER_B
    "  %s0 = Constant() {value=f32[3] [0, 0, 0]} : f32[3]\n"
    "  %ys, %y2 = Scan(%s0, %x) {body=graph @sbody(%s: f32[3], %row: f32[3]) -> (%s_o: f32[3], "
    "%out: f32[3]) {\n"
    "    outer %b\n"
    "    %k = Constant() {value=f32[3] [0.125, 0.125, 0.125]} : f32[3]\n"
    "    %t = Add(%row, %b)\n"
    "    %t2 = Add(%t, %k)\n"
    "    %s_o = Add(%s, %t2) : f32[3]\n"
    "    %out = Identity(%t2) : f32[3]\n"
    "    return %s_o, %out\n"
    "  }, num_scan_inputs=1} : f32[3], f32[2,3]\n"
    "  return %ys, %y2\n"
    "}\n";

static void check_subgraph_model(const char *text) {
  kiln_graph *g = parse(text);
  if (!g) return;
  const int64_t d23[] = {2, 3};
  kiln_val *in[2] = {tensor(KILN_F32, 2, d23, -0.25), NULL};
  if (g->inputs.len > 1) {
    kiln_tensor *c = NULL;
    CHECK_OK(kiln_tensor_new(KILN_BOOL, 0, NULL, &c));
    kiln_store_i64(KILN_BOOL, c->data, 0, 1);
    in[1] = kiln_val_tensor(c);
  }
  kiln_vref *r = NULL;
  CHECK_OK(kiln_vref_compute(g, g->inputs.len, in, &r));
  int b = kiln_graph_find(g, "b");
  CHECK(r && b >= 0 && r->dtype[b] == KILN_F32 && r->val[b] && r->err[b]);
  kiln_vref_free(r);
  kiln_verify_opts o;
  opts(&o, true);
  kiln_verify_result res;
  CHECK_OK(kiln_verify_run(g, g->inputs.len, in, &o, &res));
  CHECK(!res.failed);
  if (res.failed) {
    kiln_strbuf out = {0};
    kiln_verify_print(&res, &out);
    fprintf(stderr, "%s", out.data);
    kiln_strbuf_free(&out);
  }
  kiln_verify_result_free(&res);
  free_vals(in, 2);
  kiln_graph_free(g);
}

static void test_outer_values_in_subgraphs(void) {
  check_subgraph_model(sub_if);
  check_subgraph_model(sub_loop);
  check_subgraph_model(sub_scan);
}

/* A finite value whose bound reaches the range of f32 is not called NaN/Inf. */
static void test_overflow_note(void) {
  kiln_graph *g = parse("graph @sq(%x: f32[1]) -> (%y: ?) {\n  opset \"\" 17\n"
                        "  %y = Mul(%x, %x)\n  return %y\n}\n");
  const int64_t d1[] = {1};
  kiln_val *x = tensor(KILN_F32, 1, d1, 0);
  ((float *)x->t->data)[0] = nextafterf(0x1p64f, 0); /* x * x = 2^128 (1 - 2^-23): finite */
  kiln_vref *r = NULL;
  CHECK_OK(kiln_vref_compute(g, 1, &x, &r));
  CHECK(r && r->n_nonfinite == 1 && strstr(r->note, "are finite, but their error bound"));
  CHECK(r && !strstr(r->note, "NaN/Inf"));
  kiln_vref_free(r);
  ((float *)x->t->data)[0] = 0x1p64f; /* 2^128: beyond f32 */
  CHECK_OK(kiln_vref_compute(g, 1, &x, &r));
  CHECK(r && r->n_nonfinite == 1 && strstr(r->note, "1 NaN/Inf element(s)"));
  kiln_vref_free(r);
  kiln_val_free(x);
  kiln_graph_free(g);
}

static void setup(void) {
  kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_vblame");
}
static void teardown(void) {
  kiln_test_remove_dir(g_tmp);
}

TEST_MAIN(T(setup), T(test_inputs_checked_first), T(test_shared_check), T(test_case_inputs_checked),
          T(test_half_case_removed), T(test_environment_is_no_finding),
          T(test_finding_before_environment), T(test_outer_values_in_subgraphs),
          T(test_overflow_note), T(teardown))
