/* The runner's determinism check (src/verify/runner/runner_det.c): a cpu layer compiled for several
 * threads runs twice and must give the same bits. A value that changes between the two runs
 * (the fault injector, standing in for a data race) fails that layer, names the step whose
 * values first differ, and keeps the signature format; at one thread there is no second
 * run unless the arena is filled (opts.fill: 0xff, then zeros), when a difference names a
 * value read before it is written; correct code gives the same bits under both fills; with
 * par_threads the runner adds a cpu layer at that many threads. A run that writes into the
 * caller's input fails its layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "runtime/runtime.h"
#include "verify/runner/runner_internal.h"
#include "verify/verify.h"

static char g_tmp[1024];

/* MatMul + bias + Relu, and Exp then Neg of the MatMul result. */
static const char *MODEL = "graph @mlp(%x: f32[5,3]) -> (%y: f32[5,4], %s: f32[5,4]) {\n"
                           "  opset \"\" 17\n"
                           "  %w = const f32[3,4] [0.5, -1, 0.25, 2, 1.5, 0.75, -0.5, 1, -2, "
                           "0.125, 1, -0.25]\n"
                           "  %b = const f32[4] [0.1, -0.2, 0.3, -0.4]\n"
                           "  %m = MatMul(%x, %w) : f32[5,4] @mm\n"
                           "  %a = Add(%m, %b) : f32[5,4] @add\n"
                           "  %y = Relu(%a) : f32[5,4] @relu\n"
                           "  %e = Exp(%m) : f32[5,4] @exp\n"
                           "  %s = Neg(%e) : f32[5,4] @neg\n"
                           "  return %y, %s\n"
                           "}\n";

/* Changes the Neg result (the [5,4] value whose elements are all < 0) on call `on`. */
typedef struct flaky {
  int calls, on;
} flaky;

static void flip_once(void *user, int step, int value, const kiln_tensor *t) {
  flaky *f = user;
  (void)step, (void)value;
  if (t->dtype != KILN_F32 || t->rank != 2 || t->dims[1] != 4) return;
  float *p = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    if (!(p[i] < 0)) return;
  if (++f->calls == f->on) p[3] = -p[3] * 0.5f; /* still negative: found by the bits only */
}

/* The injector for test_inputs_kept: writes into the caller's input tensor (as a kernel whose
 * output took an input's storage would). */
static kiln_tensor *g_input;
static void write_input(void *user, int step, int value, const kiln_tensor *t) {
  (void)user, (void)step, (void)value, (void)t;
  ((float *)g_input->data)[2] += 1.0f;
}

static kiln_verify_result run_fill(int threads, int par_threads, flaky *f, bool fill) {
  kiln_graph *g = NULL;
  kiln_verify_result r;
  memset(&r, 0, sizeof r);
  CHECK_OK(kiln_graph_parse(MODEL, "test", &g));
  if (!g) return r;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_tensor *t;
  if (kiln_tensor_new(KILN_F32, 2, (int64_t[]){5, 3}, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)(i % 7 - 3) / 4.0f;
  kiln_val *in = kiln_val_tensor(t);
  kiln_verify_opts o;
  kiln_verify_opts_init(&o);
  o.compile.cache_dir = g_tmp;
  o.threads = threads;
  o.par_threads = par_threads;
  o.inject = f ? flip_once : write_input;
  o.inject_user = f;
  g_input = t;
  o.inject_layers = 1u << KILN_LAYER_CPU;
  o.local = false; /* the changed value stays within the bounds only by luck: not needed */
  o.fill = fill;
  o.exact = false; /* its own traced run would call the injector once more: counts below */
  CHECK_OK(kiln_verify_run(g, 1, &in, &o, &r));
  kiln_val_free(in);
  kiln_graph_free(g);
  return r;
}

static kiln_verify_result run(int threads, int par_threads, flaky *f) {
  return run_fill(threads, par_threads, f, false);
}

static const kiln_layer_result *failing(const kiln_verify_result *r) {
  return r->failed && r->first_failing >= 0 ? &r->layers.data[r->first_failing] : NULL;
}

static void test_second_run_differs(void) {
  flaky f = {0, 2}; /* the first run is right, the second differs */
  kiln_verify_result r = run(2, 0, &f);
  const kiln_layer_result *l = failing(&r);
  CHECK(f.calls == 2);
  CHECK(l && l->kind == KILN_LAYER_CPU && strstr(l->msg, "not deterministic at 2 threads"));
  CHECK(l && strstr(l->msg, "output 's' element 3"));
  CHECK(!strcmp(r.signature, "cpu|-|Exp,Neg"));
  CHECK(strstr(r.where, "kernel") && strstr(r.where, "Exp") && strstr(r.where, "value 's'"));
  if (!l || !strstr(r.where, "value 's'"))
    fprintf(stderr, "msg: %s\nwhere: %s\n", l ? l->msg : "-", r.where);
  CHECK(r.threads == 2);
  kiln_verify_result_free(&r);
}

static void test_one_thread_runs_once(void) {
  flaky f = {0, 2};
  kiln_verify_result r = run(1, 0, &f);
  CHECK(f.calls == 1 && !r.failed);
  kiln_verify_result_free(&r);
}

static void test_same_bits_pass(void) {
  flaky f = {0, 0}; /* never changes anything */
  kiln_verify_result r = run(2, 0, &f);
  CHECK(f.calls == 2 && !r.failed);
  kiln_verify_result_free(&r);
}

static void test_par_threads_layer(void) {
  /* one-thread layer (call 1), then 3 threads: first run (call 2) and second run (call 3) */
  flaky f = {0, 3};
  kiln_verify_result r = run(1, 3, &f);
  int cpu_layers = 0;
  for (int i = 0; i < r.layers.len; i++) cpu_layers += r.layers.data[i].kind == KILN_LAYER_CPU;
  CHECK(cpu_layers == 2 && f.calls == 3);
  const kiln_layer_result *l = failing(&r);
  CHECK(l && !strcmp(l->name, "cpu (3 threads)") && strstr(l->msg, "not deterministic"));
  CHECK(r.threads == 3);
  char cmd[1200];
  CHECK(strstr(kiln_verify_replay_command("case", &r, cmd, sizeof cmd), "--threads 3"));
  kiln_verify_result_free(&r);
}

/* With the arena filled, one thread runs twice too; a second run that differs is named as a
 * value read before it is written. */
static void test_fill_one_thread(void) {
  flaky f = {0, 2};
  kiln_verify_result r = run_fill(1, 0, &f, true);
  const kiln_layer_result *l = failing(&r);
  CHECK(f.calls == 2);
  CHECK(l && l->kind == KILN_LAYER_CPU && strstr(l->msg, "read before it is written"));
  CHECK(l && !strstr(l->msg, "data race"));
  CHECK(!strcmp(r.signature, "cpu|-|Exp,Neg"));
  kiln_verify_result_free(&r);
  flaky g = {0, 0}; /* the compiled code reads nothing it did not write: the same bits */
  r = run_fill(1, 0, &g, true);
  CHECK(g.calls == 2 && !r.failed);
  kiln_verify_result_free(&r);
  flaky h = {0, 3}; /* at 2 threads with the fill: still two runs, a race named too */
  r = run_fill(2, 0, &h, true);
  CHECK(h.calls == 2 && !r.failed);
  kiln_verify_result_free(&r);
}

/* A run that changes the caller's input fails its layer, naming the input. */
static void test_inputs_kept(void) {
  kiln_verify_result r = run_fill(1, 0, NULL, false);
  const kiln_layer_result *l = failing(&r);
  CHECK(l && l->kind == KILN_LAYER_CPU && strstr(l->msg, "changed graph input 'x'"));
  if (l && !strstr(l->msg, "changed graph input")) fprintf(stderr, "msg: %s\n", l->msg);
  kiln_verify_result_free(&r);
}

/* The untraced run (kiln_vdet_untraced: kiln_compiled_run, as kiln run and the C API
 * execute): the outputs of a traced run pass it; one bit changed in them is caught and named
 * by output and element. */
static void test_untraced_run(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(MODEL, "test", &g));
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_tensor *t;
  if (kiln_tensor_new(KILN_F32, 2, (int64_t[]){5, 3}, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)(i % 5 - 2) / 3.0f;
  kiln_val *in = kiln_val_tensor(t);
  kiln_compile_opts co;
  kiln_compile_opts_init(&co);
  co.cache_dir = g_tmp;
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, NULL, &co, &c));
  kiln_val *first[2] = {NULL, NULL};
  if (c) CHECK_OK(kiln_compiled_run_vals(c, 1, &in, first));
  if (c && first[0] && first[1]) {
    kiln_vrun r;
    memset(&r, 0, sizeof r);
    r.g = g, r.n_in = 1, r.inputs = &in;
    kiln_layer_result l;
    memset(&l, 0, sizeof l);
    l.ok = true;
    CHECK(!kiln_vdet_untraced(&r, c, 1, first, &l) && l.ok);
    ((uint32_t *)first[1]->t->data)[7] ^= 1u; /* one ulp */
    CHECK(kiln_vdet_untraced(&r, c, 1, first, &l) && !l.ok);
    CHECK(strstr(l.msg, "untraced run") && strstr(l.msg, "output 's' element 7"));
  }
  kiln_val_free(first[0]), kiln_val_free(first[1]);
  kiln_compiled_free(c);
  kiln_val_free(in);
  kiln_graph_free(g);
}

static void setup(void) {
  kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_verify_det");
}

static void cleanup(void) {
  kiln_test_remove_dir(g_tmp);
}

TEST_MAIN(T(setup), T(test_second_run_differs), T(test_one_thread_runs_once),
          T(test_same_bits_pass), T(test_par_threads_layer), T(test_fill_one_thread),
          T(test_inputs_kept), T(test_untraced_run), T(cleanup))
