/* Unit tests of the memory planner (src/runtime/plan.c) on hand-made programs: exact
 * arenas for chains, in-place reuse, aliases extending lives, scratch, random programs
 * checked exhaustively for overlaps (kiln_plan_check) and against the lower bound, and
 * the checker itself catching a broken plan. */
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "api/api.h"
#include "graph/graph.h"
#include "harness.h"
#include "lower/lower.h"

/* ---- building programs by hand ---- */
typedef struct fixture {
  kiln_graph *g;
  kiln_program p;
} fixture;

static void fx_init(fixture *f, int64_t in_elems) {
  memset(f, 0, sizeof *f);
  f->g = kiln_graph_new("plan");
  kiln_graph_add_input(f->g, "x", kiln_type_tensor(KILN_F32, 1, (int64_t[]){in_elems}));
  f->p.graph = f->g;
  f->p.module = kiln_tmodule_new();
  f->p.target = KILN_TARGET_CPU;
}

static void fx_free(fixture *f) {
  for (int s = 0; s < f->p.steps.len; s++) {
    free(f->p.steps.data[s].args);
    free(f->p.steps.data[s].inplace);
  }
  kiln_vec_free(&f->p.steps);
  kiln_tmodule_free(f->p.module);
  kiln_graph_free(f->g);
}

/* A node value of `elems` f32 elements computed from the given values (op Sum). */
static int fx_value(fixture *f, int n_in, const int *in, int64_t elems) {
  int id;
  char name[32];
  snprintf(name, sizeof name, "v%d", f->g->values.len);
  kiln_status st =
      kiln_graph_add_node(f->g, "Sum", "", name, n_in, in, 1, (const char *const[]){name}, &id);
  if (st) abort();
  f->g->values.data[id].type = kiln_type_tensor(KILN_F32, 1, (int64_t[]){elems});
  return id;
}

/* Kernel step reading in[0..n_in) and writing out; inplace_from: index of the input the
 * output may overwrite, or -1. Extra scratch bytes when > 0. */
static int fx_kernel(fixture *f, int n_in, const int *in, int out, int inplace_from,
                     int64_t scratch) {
  kiln_step s = {0};
  s.kind = KILN_STEP_KERNEL;
  s.node = f->g->values.data[out].node;
  /* a kernel whose parameters say which arguments it writes */
  char name[32];
  snprintf(name, sizeof name, "k%d", f->p.module->kernels.len);
  kiln_tkernel *k = kiln_tkernel_new(f->p.module, name);
  s.kernel = f->p.module->kernels.len - 1;
  for (int i = 0; i < n_in; i++) kiln_tkernel_param(k, "in", KILN_F32, 1);
  kiln_tkernel_param(k, "out", KILN_F32, 1);
  if (scratch > 0) kiln_tkernel_param(k, "scratch", KILN_U8, scratch);
  for (int i = 0; i < n_in; i++) k->bufs.data[i].readonly = true;
  s.n_args = n_in + 1 + (scratch > 0);
  s.args = kiln_xcalloc((size_t)s.n_args, sizeof *s.args);
  for (int i = 0; i < n_in; i++) s.args[i] = (kiln_arg){KILN_ARG_VALUE, in[i], 0};
  s.args[n_in] = (kiln_arg){KILN_ARG_VALUE, out, 0};
  if (scratch > 0) s.args[n_in + 1] = (kiln_arg){KILN_ARG_SCRATCH, -1, scratch};
  if (inplace_from >= 0) {
    s.inplace = kiln_xcalloc((size_t)s.n_args, sizeof *s.inplace);
    for (int i = 0; i < s.n_args; i++) s.inplace[i] = -1;
    s.inplace[n_in] = inplace_from;
  }
  kiln_vec_push(&f->p.steps, s);
  return f->p.steps.len - 1;
}

static int fx_compute(fixture *f, int n_in, const int *in, int64_t elems, int inplace_from) {
  int v = fx_value(f, n_in, in, elems);
  fx_kernel(f, n_in, in, v, inplace_from, 0);
  return v;
}

static int fx_alias(fixture *f, int src) {
  int v = fx_value(f, 1, &src, f->g->values.data[src].type.dims[0].value);
  kiln_step s = {0};
  s.kind = KILN_STEP_ALIAS;
  s.node = f->g->values.data[v].node;
  s.src = src, s.dst = v;
  kiln_vec_push(&f->p.steps, s);
  return v;
}

static kiln_plan *fx_plan(fixture *f, bool inplace) {
  kiln_plan *plan = NULL;
  kiln_plan_opts o = {!inplace, -1, false};
  CHECK_OK(kiln_plan_program(&f->p, &o, &plan));
  if (plan) CHECK_OK(kiln_plan_check(&f->p, plan));
  return plan;
}

/* ---- tests ---- */
static void test_chain_reuses_two_buffers(void) {
  fixture f;
  fx_init(&f, 256);
  int v = 0; /* x */
  for (int i = 0; i < 6; i++) v = fx_compute(&f, 1, &v, 256, -1);
  kiln_graph_add_output(f.g, v);
  kiln_plan *plan = fx_plan(&f, false);
  CHECK(plan && plan->arena_bytes == 2 * 1024);
  CHECK(plan && plan->lower_bound == 2 * 1024);
  CHECK(plan && plan->loc[0].kind == KILN_LOC_INPUT && plan->loc[0].index == 0);
  CHECK(plan && plan->loc[v].kind == KILN_LOC_ARENA && plan->loc[v].bytes == 1024);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_inplace_chain_uses_one_buffer(void) {
  fixture f;
  fx_init(&f, 100);
  int v = fx_compute(&f, 1, (int[]){0}, 100, 0); /* from the input: never in place */
  for (int i = 0; i < 5; i++) v = fx_compute(&f, 1, &v, 100, 0);
  kiln_graph_add_output(f.g, v);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->arena_bytes == 448); /* 400 bytes aligned to 64 */
  CHECK(plan && plan->n_inplace == 5);
  kiln_plan_free(plan);
  plan = fx_plan(&f, false);
  CHECK(plan && plan->arena_bytes == 2 * 448 && plan->n_inplace == 0);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_inplace_refused_when_input_lives_on(void) {
  fixture f;
  fx_init(&f, 64);
  int a = fx_compute(&f, 1, (int[]){0}, 64, -1);
  int b = fx_compute(&f, 1, &a, 64, 0); /* a is read again below: not in place */
  int c = fx_compute(&f, 2, (int[]){a, b}, 64, 0);
  int d = fx_compute(&f, 2, (int[]){c, c}, 64, 0); /* c bound twice: not in place */
  kiln_graph_add_output(f.g, d);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->n_inplace == 1); /* only c over a, at the step where a dies */
  CHECK(plan && plan->loc[c].offset == plan->loc[a].offset);
  CHECK(plan && plan->loc[b].offset != plan->loc[a].offset);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_graph_output_not_overwritten_in_place(void) {
  fixture f;
  fx_init(&f, 64);
  int a = fx_compute(&f, 1, (int[]){0}, 64, -1);
  int b = fx_compute(&f, 1, &a, 64, 0);
  kiln_graph_add_output(f.g, a);
  kiln_graph_add_output(f.g, b);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->n_inplace == 0 && plan->loc[a].offset != plan->loc[b].offset);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_alias_extends_life(void) {
  fixture f;
  fx_init(&f, 64);
  int a = fx_compute(&f, 1, (int[]){0}, 64, -1);
  int va = fx_alias(&f, a);                      /* a view of a */
  int b = fx_compute(&f, 1, (int[]){0}, 64, -1); /* a no longer read directly... */
  int c = fx_compute(&f, 1, (int[]){0}, 64, -1);
  int d = fx_compute(&f, 3, (int[]){va, b, c}, 64, -1); /* ...but its view is */
  kiln_graph_add_output(f.g, d);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->loc[va].kind == KILN_LOC_ARENA &&
        plan->loc[va].offset == plan->loc[a].offset);
  CHECK(plan && plan->arena_bytes == 4 * 256 && plan->lower_bound == 4 * 256);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_alias_of_input_points_at_input(void) {
  fixture f;
  fx_init(&f, 64);
  int va = fx_alias(&f, 0);
  int b = fx_compute(&f, 1, &va, 64, 0); /* never in place over an input */
  kiln_graph_add_output(f.g, b);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->loc[va].kind == KILN_LOC_INPUT && plan->loc[va].index == 0);
  CHECK(plan && plan->n_inplace == 0 && plan->arena_bytes == 256);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_scratch_lives_one_step(void) {
  fixture f;
  fx_init(&f, 16);
  int a = fx_value(&f, 1, (int[]){0}, 16);
  int s0 = fx_kernel(&f, 1, (int[]){0}, a, -1, 1000);
  int b = fx_value(&f, 1, &a, 16);
  int s1 = fx_kernel(&f, 1, &a, b, -1, 1000);
  kiln_graph_add_output(f.g, b);
  kiln_plan *plan = fx_plan(&f, true);
  if (plan) {
    int64_t o0 = plan->arg_offset[plan->arg_base[s0] + 2];
    int64_t o1 = plan->arg_offset[plan->arg_base[s1] + 2];
    CHECK(o0 >= 0 && o1 >= 0 && o0 % 64 == 0);
    CHECK(o0 == o1); /* the second step's scratch reuses the first's */
    CHECK(plan->arena_bytes == 1024 + 64 + 64);
    CHECK(plan->arg_offset[plan->arg_base[s0]] == -1);
  }
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_heap_for_unknown_shapes(void) {
  fixture f;
  fx_init(&f, 16);
  int a = fx_value(&f, 1, (int[]){0}, 16);
  f.g->values.data[a].type.dims[0] = (kiln_dim){-1, NULL};
  kiln_step s = {0};
  s.kind = KILN_STEP_FALLBACK;
  s.node = f.g->values.data[a].node;
  s.reason = "test";
  kiln_vec_push(&f.p.steps, s);
  kiln_graph_add_output(f.g, a);
  kiln_plan *plan = fx_plan(&f, true);
  CHECK(plan && plan->loc[a].kind == KILN_LOC_HEAP && plan->arena_bytes == 0);
  kiln_plan_free(plan);
  fx_free(&f);
}

static void test_bad_programs_are_errors(void) {
  fixture f;
  fx_init(&f, 16);
  int a = fx_value(&f, 1, (int[]){0}, 16);
  int b = fx_value(&f, 1, &a, 16);
  fx_kernel(&f, 1, &a, b, -1, 0); /* reads a before anything computes it */
  kiln_graph_add_output(f.g, b);
  kiln_plan *plan = NULL;
  CHECK_ERR(kiln_plan_program(&f.p, NULL, &plan), KILN_ERR_INTERNAL);
  fx_free(&f);
  fx_init(&f, 16);
  a = fx_value(&f, 1, (int[]){0}, 16);
  kiln_graph_add_output(f.g, a); /* no step computes it */
  CHECK_ERR(kiln_plan_program(&f.p, NULL, &plan), KILN_ERR_INTERNAL);
  fx_free(&f);
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* A random DAG of kernel steps (reading 1-3 earlier values), with aliases, in-place
 * candidates, scratch and several graph outputs. */
static void random_program(fixture *f, int n) {
  fx_init(f, 1 + (int64_t)(rnd() % 4096));
  int *vals = kiln_xcalloc((size_t)n + 1, sizeof *vals);
  int nv = 1;
  vals[0] = 0;
  for (int i = 0; i < n; i++) {
    int in[3], n_in = 1 + (int)(rnd() % 3);
    for (int k = 0; k < n_in; k++) { /* mostly recent values, sometimes old ones */
      int back = rnd() % 4 ? (int)(rnd() % 4) : (int)(rnd() % (uint64_t)nv);
      in[k] = vals[nv - 1 - (back < nv ? back : nv - 1)];
    }
    int r = (int)(rnd() % 10);
    if (r == 0 && f->g->values.data[in[0]].kind == KILN_VALUE_NODE) {
      vals[nv++] = fx_alias(f, in[0]);
      continue;
    }
    int64_t elems =
        r < 5 ? f->g->values.data[in[0]].type.dims[0].value : 1 + (int64_t)(rnd() % 20000);
    int v = fx_value(f, n_in, in, elems);
    fx_kernel(f, n_in, in, v, r < 5 ? 0 : -1, r == 9 ? (int64_t)(rnd() % 5000) : 0);
    vals[nv++] = v;
  }
  kiln_graph_add_output(f->g, vals[nv - 1]);
  for (int i = 0; i < 3; i++) {
    int v = vals[1 + rnd() % (uint64_t)(nv - 1)];
    if (v > 0) kiln_graph_add_output(f->g, v);
  }
  free(vals);
}

static void test_random_programs(void) {
  double worst = 0;
  for (int t = 0; t < 60; t++) {
    fixture f;
    random_program(&f, 10 + t * 3);
    for (int inplace = 0; inplace < 2; inplace++) {
      kiln_plan *plan = fx_plan(&f, inplace);
      if (!plan) continue;
      CHECK(plan->arena_bytes >= plan->lower_bound);
      double ratio = plan->lower_bound ? (double)plan->arena_bytes / (double)plan->lower_bound : 1;
      if (ratio > worst) worst = ratio;
      kiln_plan_free(plan);
    }
    fx_free(&f);
  }
  printf("random programs: worst arena / lower bound = %.3f\n", worst);
  CHECK(worst < 1.15);
}

static void test_each_heuristic_is_valid(void) {
  for (int t = 0; t < 10; t++) {
    fixture f;
    random_program(&f, 40);
    for (int h = 0; h < 5; h++) {
      kiln_plan *plan = NULL;
      kiln_plan_opts o = {false, h, false};
      CHECK_OK(kiln_plan_program(&f.p, &o, &plan));
      if (plan) CHECK_OK(kiln_plan_check(&f.p, plan));
      kiln_plan_free(plan);
    }
    kiln_plan *plan = NULL;
    kiln_plan_opts o = {false, 99, false};
    CHECK_ERR(kiln_plan_program(&f.p, &o, &plan), KILN_ERR_INVALID);
    fx_free(&f);
  }
}

/* search_stress: the local search from the worst heuristic's order, to its budget; its plan
 * is valid, named "local search" when it improved on that order, and on random programs it
 * improves at least once. */
static void test_search_stress(void) {
  int improved = 0;
  for (int t = 0; t < 10; t++) {
    fixture f;
    random_program(&f, 12 + 3 * t);
    kiln_plan *plan = NULL;
    kiln_plan_opts o = {false, -1, true};
    CHECK_OK(kiln_plan_program(&f.p, &o, &plan));
    if (plan) {
      CHECK_OK(kiln_plan_check(&f.p, plan));
      CHECK(plan->arena_bytes >= plan->lower_bound);
      improved += !strcmp(plan->heuristic, "local search");
    }
    kiln_plan_free(plan);
    fx_free(&f);
  }
  printf("search stress: the local search improved %d of 10 plans\n", improved);
  CHECK(improved >= 1);
}

static void test_check_catches_overlap(void) {
  fixture f;
  fx_init(&f, 64);
  int a = fx_compute(&f, 1, (int[]){0}, 64, -1);
  int b = fx_compute(&f, 1, &a, 64, -1);
  int c = fx_compute(&f, 2, (int[]){a, b}, 64, -1);
  kiln_graph_add_output(f.g, c);
  kiln_plan *plan = fx_plan(&f, true);
  if (plan) {
    plan->loc[b].offset = plan->loc[a].offset; /* a and b live together */
    CHECK_ERR(kiln_plan_check(&f.p, plan), KILN_ERR_INTERNAL);
    plan->loc[b].offset = plan->arena_bytes; /* past the arena */
    CHECK_ERR(kiln_plan_check(&f.p, plan), KILN_ERR_INTERNAL);
  }
  kiln_plan_free(plan);
  fx_free(&f);
}

/* The exported real models (when `make check` has exported them): passes and lowering,
 * then the plan must be valid and within 10% of the lower bound. */
static void plan_model(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "build/models/%s/model.onnx", name);
  if (access(path, R_OK)) {
    printf("%s: not exported, skipped\n", name);
    return;
  }
  kiln_graph *g = NULL;
  CHECK_OK(kiln_load_graph(path, &g));
  if (!g) return;
  kiln_tensor *in[8] = {0};
  int n = g->inputs.len < 8 ? g->inputs.len : 8;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "build/models/%s/test_data_set_0/input_%d.pb", name, i);
    CHECK_OK(kiln_pb_read_tensor(path, &in[i]));
  }
  CHECK_OK(kiln_graph_bind_inputs(g, n, (const kiln_tensor *const *)in));
  kiln_pass_opts po = {0};
  po.pass_limit = -1;
  kiln_program *p = NULL;
  CHECK_OK(kiln_passes_run(g, &po, NULL));
  CHECK_OK(kiln_lower(g, NULL, &p));
  kiln_plan *plan = NULL;
  if (p) CHECK_OK(kiln_plan_program(p, NULL, &plan));
  if (plan) {
    CHECK_OK(kiln_plan_check(p, plan));
    double ratio = plan->lower_bound ? (double)plan->arena_bytes / (double)plan->lower_bound : 1;
    printf("%s: %d steps, arena %lld bytes, lower bound %lld (%.3fx), order %s\n", name,
           p->steps.len, (long long)plan->arena_bytes, (long long)plan->lower_bound, ratio,
           plan->heuristic);
    CHECK(ratio <= 1.10);
  }
  kiln_plan_free(plan);
  kiln_program_free(p);
  for (int i = 0; i < n; i++) kiln_tensor_free(in[i]);
  kiln_graph_free(g);
}

static void test_exported_models(void) {
#ifdef __SANITIZE_ADDRESS__
  printf("exported models: skipped under AddressSanitizer (slow; the planner runs above)\n");
  return;
#endif
  const char *models[] = {"resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "bert_tiny"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) plan_model(models[i]);
}

/* ---- the program verifier ---- */
static bool message_has(kiln_status st, const char *what) {
  bool ok = st && strstr(kiln_status_message(st), what) != NULL;
  if (!ok) fprintf(stderr, "  message: %s\n", st ? kiln_status_message(st) : "OK");
  kiln_status_free(st);
  return ok;
}

/* A kernel bound to an output it never stores (a lowering that dropped a store): the
 * verifier names the kernel's step and the value, as a bug of Kiln, before planning. */
static void test_verifier_catches_unwritten_output(void) {
  fixture f;
  fx_init(&f, 16);
  int a = fx_compute(&f, 1, (int[]){0}, 16, -1);
  int b = fx_compute(&f, 1, &a, 16, -1);
  kiln_graph_add_output(f.g, b);
  CHECK_OK(kiln_program_verify(&f.p));
  kiln_tkernel *k0 = f.p.module->kernels.data[0];
  k0->bufs.data[1].readonly = true; /* seeded: the first kernel never writes a */
  CHECK(message_has(kiln_program_verify(&f.p), "reads 'v1' before any step defines it"));
  CHECK(message_has(kiln_program_verify(&f.p), "bug in Kiln"));
  kiln_plan *plan = NULL;
  CHECK_ERR(kiln_plan_program(&f.p, NULL, &plan), KILN_ERR_INTERNAL);
  k0->bufs.data[1].readonly = false;
  fx_kernel(&f, 1, (int[]){0}, a, -1, 0); /* a second definition of a */
  CHECK(message_has(kiln_program_verify(&f.p), "defined by step 0 and by step 2"));
  fx_free(&f);
}

/* Lowers a graph in text IR (groups as written, no passes). */
/* The program passes the planner (and so its dataflow verifier). */
static void check_plans(const kiln_program *p) {
  kiln_plan *plan = NULL;
  CHECK_OK(kiln_plan_program(p, NULL, &plan));
  kiln_plan_free(plan);
}

static kiln_program *lower_text(const char *text, kiln_graph **g) {
  kiln_program *p = NULL;
  CHECK_OK(kiln_graph_parse(text, "lowered", g));
  if (!*g) return NULL;
  CHECK_OK(kiln_ops_infer_graph(*g));
  CHECK_OK(kiln_lower(*g, NULL, &p));
  return p;
}

/* Runs the program and the reference interpreter on input x; true when they agree. */
static bool program_matches_reference(const kiln_program *p, kiln_graph *g, kiln_tensor *x) {
  int n_out = g->outputs.len;
  kiln_tensor *got[4] = {0};
  kiln_val *in = kiln_val_tensor(x), *ref[4] = {0};
  bool ok = n_out <= 4;
  CHECK_OK(kiln_program_interp(p, 1, &x, got));
  CHECK_OK(kiln_interp_run(g, NULL, 1, &in, ref));
  for (int i = 0; ok && i < n_out; i++) {
    ok = got[i] && ref[i] && ref[i]->t && got[i]->numel == ref[i]->t->numel;
    for (int64_t e = 0; ok && e < got[i]->numel; e++) {
      double a = kiln_load_f64(got[i]->dtype, got[i]->data, (size_t)e);
      double b = kiln_load_f64(ref[i]->t->dtype, ref[i]->t->data, (size_t)e);
      ok = a - b <= 1e-5 && b - a <= 1e-5;
    }
  }
  for (int i = 0; i < n_out && i < 4; i++) {
    kiln_tensor_free(got[i]);
    kiln_val_free(ref[i]);
  }
  in->t = NULL;
  kiln_val_free(in);
  return ok;
}

static kiln_tensor *ramp(int rank, const int64_t *dims) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(KILN_F32, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)((i * 7) % 11) - 4.5f;
  return t;
}

/* A reduction group whose result is also read outside the group: the kernel stores it
 * (it used to store only the end of the epilogue chain, and the plan found a read of a
 * value no step defines: 'memory plan, step 20 reads ... before any step defines it'). */
static void test_reduction_group_stores_values_read_outside(void) {
  kiln_graph *g = NULL;
  kiln_program *p = lower_text("graph @g(%x: f32[2,3,4]) -> (%y: f32[2,1,4], %o: f32[2,1,4]) {\n"
                               "  opset \"\" 17\n"
                               "  %h = const f32[] [0.5]\n"
                               "  %n = ReduceL2(%x) {axes=[1], keepdims=1} : f32[2,1,4] group 1\n"
                               "  %m = Add(%n, %h) : f32[2,1,4] group 1\n"
                               "  %y = Mul(%m, %n) : f32[2,1,4] group 1\n"
                               "  %o = Neg(%m) : f32[2,1,4]\n"
                               "  return %y, %o\n"
                               "}\n",
                               &g);
  if (p) {
    CHECK(p->module->kernels.len == 2); /* the group stays one kernel */
    check_plans(p);
    kiln_tensor *x = ramp(3, (int64_t[]){2, 3, 4});
    CHECK(program_matches_reference(p, g, x));
    kiln_tensor_free(x);
  }
  kiln_program_free(p);
  kiln_graph_free(g);
}

/* An If whose branches read a value of a group that comes later in node order than the
 * If: the group runs first (reads of subgraphs order the groups like inputs do). */
static void test_subgraph_reads_order_groups(void) {
  kiln_graph *g = NULL;
  kiln_program *p = lower_text("graph @g(%x: f32[4], %c: bool[]) -> (%z: f32[4], %d: f32[4]) {\n"
                               "  opset \"\" 17\n"
                               "  %a = Exp(%x) : f32[4] group 1\n"
                               "  %z = If(%c) {else_branch=graph @e() -> (%a: f32[4]) {\n"
                               "    outer %a\n"
                               "    return %a\n"
                               "  }, then_branch=graph @t() -> (%u: f32[4]) {\n"
                               "    outer %a\n"
                               "    %u = Neg(%a) : f32[4]\n"
                               "    return %u\n"
                               "  }} : f32[4]\n"
                               "  %b = Sin(%z) : f32[4]\n"
                               "  %s = Sqrt(%x) : f32[4]\n"
                               "  %d = Add(%a, %s) : f32[4] group 1\n"
                               "  return %z, %d\n"
                               "}\n",
                               &g);
  if (p) {
    check_plans(p);
  }
  kiln_program_free(p);
  kiln_graph_free(g);
}

/* Empty tensors (a zero extent, as from --dim N=0): each group is a kernel with no body
 * that defines its outputs (a Conv used to fall back with "no lowering for Conv"). */
static void test_empty_tensors_lower_to_empty_kernels(void) {
  kiln_graph *g = NULL;
  kiln_program *p = lower_text("graph @g(%x: f32[0,3,4,4]) -> (%y: f32[0,2,4,4]) {\n"
                               "  opset \"\" 17\n"
                               "  %w = const f32[2,3,1,1] [1, 2, 3, 4, 5, 6]\n"
                               "  %c = Conv(%x, %w) : f32[0,2,4,4]\n"
                               "  %y = Relu(%c) : f32[0,2,4,4]\n"
                               "  return %y\n"
                               "}\n",
                               &g);
  if (p) {
    CHECK(p->n_fallback == 0 && p->steps.len == 2);
    for (int i = 0; i < p->module->kernels.len; i++)
      CHECK(p->module->kernels.data[i]->body.len == 0);
    kiln_plan *plan = NULL;
    CHECK_OK(kiln_plan_program(p, NULL, &plan));
    CHECK(plan && plan->arena_bytes == 0);
    kiln_plan_free(plan);
    kiln_tensor *x = NULL;
    CHECK_OK(kiln_tensor_new(KILN_F32, 4, (int64_t[]){0, 3, 4, 4}, &x));
    kiln_tensor *y = NULL;
    CHECK_OK(kiln_program_interp(p, 1, &x, &y));
    CHECK(y && y->numel == 0 && y->rank == 4 && y->dims[1] == 2);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
  }
  kiln_program_free(p);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_chain_reuses_two_buffers), T(test_inplace_chain_uses_one_buffer),
          T(test_inplace_refused_when_input_lives_on),
          T(test_graph_output_not_overwritten_in_place), T(test_alias_extends_life),
          T(test_alias_of_input_points_at_input), T(test_scratch_lives_one_step),
          T(test_heap_for_unknown_shapes), T(test_bad_programs_are_errors), T(test_random_programs),
          T(test_each_heuristic_is_valid), T(test_search_stress), T(test_check_catches_overlap),
          T(test_exported_models), T(test_verifier_catches_unwritten_output),
          T(test_reduction_group_stores_values_read_outside), T(test_subgraph_reads_order_groups),
          T(test_empty_tensors_lower_to_empty_kernels))
