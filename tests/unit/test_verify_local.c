/* Unit tests of the runner's local checks (src/verify/runner/runner_backend_local.c) and of what
 * the table says when the end-to-end bounds cannot judge a layer: a kernel whose error hides below
 * a loose end-to-end bound fails its local check, in the tile and the cpu layer, named by kernel;
 * without local checks the same fault passes; the "bound too loose" rows; the unstable warning; the
 * local check of a pass layer against the graph before it. Cache entries go to a fresh folder under
 * $TMPDIR. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "verify/runner/runner_internal.h"
#include "verify/verify.h"

static char g_tmp[1024];

static void make_tmp(void) {
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_verify_local");
}

/* b = (x + 1e4) - 1e4 loses x's low bits: its end-to-end bound is about 2e-3, and the
 * MatMul after it inherits that bound. The MatMul kernel itself, fed its actual input b,
 * is exact to about 1e-6: a fault of 2e-3 in y hides end to end and shows locally. */
static const char *MODEL = "graph @cancel(%x: f32[2,8]) -> (%b: f32[2,8], %y: f32[2,4]) {\n"
                           "  opset \"\" 17\n"
                           "  %c = const f32[1] [10000]\n"
                           "  %w = const f32[8,4] [0.5, -1, 0.25, 2, 1.5, 0.75, -0.5, 1, -2, "
                           "0.125, 1, -0.25, 0.5, -1, 0.25, 2, 1.5, 0.75, -0.5, 1, -2, 0.125, "
                           "1, -0.25, 0.5, -1, 0.25, 2, 1.5, 0.75, -0.5, 1]\n"
                           "  %a = Add(%x, %c) : f32[2,8] @add\n"
                           "  %b = Sub(%a, %c) : f32[2,8] @sub\n"
                           "  %y = MatMul(%b, %w) : f32[2,4] @mm\n"
                           "  return %b, %y\n"
                           "}\n";

static kiln_graph *model(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(MODEL, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static kiln_val *input(void) {
  kiln_tensor *t;
  int64_t dims[2] = {2, 8};
  if (kiln_tensor_new(KILN_F32, 2, dims, &t)) abort();
  float *p = t->data;
  for (int64_t i = 0; i < t->numel; i++) p[i] = (float)((i * 7 % 11) - 5) / 8.0f + 0.01f;
  return kiln_val_tensor(t);
}

static void opts(kiln_verify_opts *o) {
  make_tmp();
  kiln_verify_opts_init(o);
  o->compile.cache_dir = g_tmp;
  o->fill = false; /* one run of the compiled code (the filled second run: test_verify_det) */
}

static const kiln_layer_result *find_layer(const kiln_verify_result *r, kiln_layer_kind k) {
  for (int i = 0; i < r->layers.len; i++)
    if (r->layers.data[i].kind == k) return &r->layers.data[i];
  return NULL;
}

/* Adds 2e-3 to the first element of the [2,4] value (y). */
static void nudge_y(void *user, int step, int value, const kiln_tensor *t) {
  int *hits = user;
  (void)step, (void)value;
  if (t->dtype != KILN_F32 || t->rank != 2 || t->dims[1] != 4) return;
  ((float *)t->data)[0] += 2e-3f;
  (*hits)++;
}

static void run(kiln_layer_kind kind, bool local, bool inject, kiln_verify_result *r, int *hits) {
  kiln_graph *g = model();
  kiln_val *in = input();
  kiln_verify_opts o;
  opts(&o);
  o.local = local;
  /* the bit-for-bit check would see the nudge of an exactly rounded kernel (and run the
   * injector once more): these tests are about the bounds, end to end and local */
  o.exact = false;
  if (inject) o.inject = nudge_y, o.inject_user = hits, o.inject_layers = 1u << kind;
  memset(r, 0, sizeof *r);
  if (g) CHECK_OK(kiln_verify_run(g, 1, &in, &o, r));
  kiln_val_free(in);
  kiln_graph_free(g);
}

static void test_clean_model_checked_locally(void) {
  kiln_verify_result r;
  int hits = 0;
  run(KILN_LAYER_TILE, true, false, &r, &hits);
  CHECK(!r.failed);
  for (kiln_layer_kind k = KILN_LAYER_TILE; k <= KILN_LAYER_CPU; k++) {
    const kiln_layer_result *l = find_layer(&r, k);
    CHECK(l && l->ran && l->ok && !l->local_failed);
    if (!l) continue;
    CHECK(l->local_steps >= 1 && l->local_unchecked == 0 && l->local_unstable == 0);
    CHECK(l->local_ratio > 0 && l->local_ratio <= 1);
  }
  kiln_strbuf t = {0};
  kiln_verify_print(&r, &t);
  CHECK(t.data && strstr(t.data, "kernels checked locally"));
  CHECK(t.data && strstr(t.data, "every layer agrees"));
  kiln_strbuf_free(&t);
  kiln_verify_result_free(&r);
}

static void check_hidden_fault(kiln_layer_kind kind) {
  kiln_verify_result r;
  int hits = 0;
  run(kind, false, true, &r, &hits); /* end to end only: the fault hides */
  CHECK(hits >= 1 && !r.failed);
  const kiln_layer_result *l = find_layer(&r, kind);
  CHECK(l && l->ok && l->max_ratio < 1 && l->local_steps == 0);
  kiln_verify_result_free(&r);
  hits = 0;
  run(kind, true, true, &r, &hits);
  CHECK(hits == 1); /* the layer's own run: no second run to localize */
  CHECK(r.failed && r.fail_kind == kind);
  l = find_layer(&r, kind);
  CHECK(l && !l->ok && l->local_failed && l->local_ratio > 1 && l->max_ratio < 1);
  char want[64];
  snprintf(want, sizeof want, "%s|-|MatMul", kiln_layer_kind_name(kind));
  CHECK(strstr(r.signature, want) == r.signature);
  if (!strstr(r.signature, want)) fprintf(stderr, "signature %s, where %s\n", r.signature, r.where);
  CHECK(strstr(r.where, "kernel") && strstr(r.where, "value 'y'"));
  CHECK(l && strstr(l->msg, "local check"));
  kiln_verify_result_free(&r);
}

static void test_tile_hidden_fault(void) {
  check_hidden_fault(KILN_LAYER_TILE);
}

static void test_cpu_hidden_fault(void) {
  check_hidden_fault(KILN_LAYER_CPU);
}

/* ---- what the table says ---- */
static void test_looseness(void) {
  kiln_graph *g = model();
  kiln_val *in = input();
  kiln_vref *ref = NULL;
  if (g) CHECK_OK(kiln_vref_compute(g, 1, &in, &ref));
  if (ref) {
    double lb = kiln_verify_looseness(ref, g->outputs.data[0]);
    CHECK(lb > 1e-4 && lb < KILN_VERIFY_LOOSE);                /* b: about 2e-3 / 0.6 */
    CHECK(kiln_verify_looseness(ref, g->inputs.data[0]) == 0); /* exact */
  }
  kiln_vref_free(ref);
  kiln_val_free(in);
  kiln_graph_free(g);
}

static kiln_layer_result row(kiln_layer_kind k, const char *name, double loose, int local) {
  kiln_layer_result l;
  memset(&l, 0, sizeof l);
  l.kind = k, l.ran = true, l.ok = true, l.worst_output = 0, l.looseness = loose;
  l.local_steps = local, l.local_ratio = local ? 0.25 : 0;
  snprintf(l.name, sizeof l.name, "%s", name);
  return l;
}

static void test_loose_rows_and_warning(void) {
  kiln_verify_result r;
  memset(&r, 0, sizeof r);
  r.first_failing = -1;
  kiln_vec_push(&r.layers, row(KILN_LAYER_REFERENCE, "reference", 1e13, 0));
  kiln_vec_push(&r.layers, row(KILN_LAYER_CPU, "cpu", 1e13, 5));
  r.n_unstable = 3;
  snprintf(r.unstable_note, sizeof r.unstable_note, "node 'gt' (Greater)");
  kiln_strbuf t = {0};
  kiln_verify_print(&r, &t);
  const char *s = t.data ? t.data : "";
  CHECK(strstr(s, "bound too loose, not judged"));
  CHECK(strstr(s, "5 kernels checked locally, end-to-end bound too loose"));
  CHECK(!strstr(s, "every layer agrees") && strstr(s, "too loose to judge 1 layer"));
  CHECK(strstr(s, "warning: 3 elements") && strstr(s, "node 'gt' (Greater)"));
  kiln_strbuf_free(&t);
  r.layers.data[1].looseness = INFINITY; /* non-finite bounds: still too loose */
  r.layers.data[0].looseness = 0.01;
  r.layers.data[1].local_steps = 0;
  kiln_verify_print(&r, &t);
  CHECK(t.data && strstr(t.data, "cpu") && strstr(t.data, "not judged"));
  kiln_strbuf_free(&t);
  kiln_verify_result_free(&r);
}

/* ---- pass layers ---- */
static const char *BEFORE = "graph @p(%x: f32[2,8]) -> (%y: f32[2,8]) {\n"
                            "  opset \"\" 17\n"
                            "  %c = const f32[1] [0.5]\n"
                            "  %i = Identity(%x) : f32[2,8] @id\n"
                            "  %m = Mul(%i, %c) : f32[2,8] @mul\n"
                            "  %y = Tanh(%m) : f32[2,8] @tanh\n"
                            "  return %y\n"
                            "}\n";

/* AFTER with %m = OP(%x, %c): Mul is a correct rewrite (Identity removed), Add is not. */
static kiln_graph *after(const char *op) {
  char text[512];
  snprintf(text, sizeof text,
           "graph @p(%%x: f32[2,8]) -> (%%y: f32[2,8]) {\n  opset \"\" 17\n"
           "  %%c = const f32[1] [0.5]\n  %%m = %s(%%x, %%c) : f32[2,8] @mul\n"
           "  %%y = Tanh(%%m) : f32[2,8] @tanh\n  return %%y\n}\n",
           op);
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "after", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static void test_pass_local(void) {
  kiln_graph *prev = NULL;
  CHECK_OK(kiln_graph_parse(BEFORE, "before", &prev));
  if (prev) CHECK_OK(kiln_ops_infer_graph(prev));
  kiln_val *in = input();
  kiln_vref *ref = NULL;
  if (prev) CHECK_OK(kiln_vref_compute(prev, 1, &in, &ref));
  const char *ops[2] = {"Mul", "Add"};
  for (int i = 0; ref && i < 2; i++) {
    kiln_graph *cur = after(ops[i]);
    kiln_layer_result l;
    memset(&l, 0, sizeof l);
    l.ran = l.ok = true;
    if (cur) kiln_vrun_pass_local(NULL, prev, ref, cur, &l);
    CHECK(l.local_steps == 1 && l.local_unchecked == 0); /* m (Tanh reads m by name: same) */
    CHECK(l.ok == (i == 0) && l.local_failed == (i == 1));
    if (i == 1) CHECK(strstr(l.msg, "'m' (Add)") != NULL);
    kiln_graph_free(cur);
  }
  kiln_vref_free(ref);
  kiln_val_free(in);
  kiln_graph_free(prev);
}

static void cleanup(void) {
  if (g_tmp[0]) kiln_test_remove_dir(g_tmp);
}

TEST_MAIN(T(test_looseness), T(test_loose_rows_and_warning), T(test_clean_model_checked_locally),
          T(test_tile_hidden_fault), T(test_cpu_hidden_fault), T(test_pass_local), T(cleanup))
