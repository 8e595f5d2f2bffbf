/* The target interface: the registry (names, required slots, lookup by name, an unknown
 * name's error listing the known ones), the one compile driver on a small model for every
 * registered target (a target that runs: its results against the reference interpreter; a
 * target that compiles only: its emitted code and its NVRTC part, skipped with a SKIP line
 * when NVRTC cannot be loaded), the slots that reach the lowering (schedule defaults,
 * supported nodes) and the runtime slots that the executor goes through (arena, copies,
 * kernel steps), through targets made for the test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "runtime/runtime.h"
#include "verify/verify.h"

static char g_tmp[4096];

static const char model_text[] =
    "graph @small(%a: f32[6,40], %w: f32[40,8]) -> (%y: f32[6,8], %e: f32[6,40]) {\n"
    "  opset \"\" 17\n"
    "  %m = MatMul(%a, %w) : f32[6,8]\n"
    "  %y = Relu(%m) : f32[6,8]\n"
    "  %x = Exp(%a) : f32[6,40]\n"
    "  %e = Mul(%x, %a) : f32[6,40]\n"
    "  return %y, %e\n"
    "}\n";

static kiln_graph *parse(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(model_text, "small", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static void setup(void) {
  kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_target_test");
}

static void cleanup(void) {
  kiln_test_remove_dir(g_tmp);
}

static kiln_compile_opts options(void) {
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_tmp;
  o.threads = 1;
  return o;
}

/* ---- the registry ---- */
static void test_registry(void) {
  CHECK(kiln_target_count() == KILN_TARGET_COUNT && KILN_TARGET_COUNT >= 2);
  for (int i = 0; i < kiln_target_count(); i++) {
    const kiln_target *t = kiln_target_at(i);
    CHECK(t != NULL);
    if (!t) continue;
    CHECK(t->id == (kiln_target_id)i); /* the table is indexed by id */
    CHECK(t->name && t->name[0] && t->summary && t->summary[0]);
    CHECK_OK(kiln_target_check(t)); /* the required slots, runtime slots all or none */
    CHECK(kiln_target_find(t->name) == t);
    const kiln_target *found = NULL;
    CHECK_OK(kiln_target_lookup(t->name, &found));
    CHECK(found == t);
    for (int j = 0; j < i; j++) CHECK(strcmp(kiln_target_at(j)->name, t->name) != 0);
    /* one verifier layer kind per target, named after it */
    CHECK(!strcmp(kiln_layer_kind_name(kiln_layer_of_target(t->id)), t->name));
    CHECK(kiln_layer_target(kiln_layer_of_target(t->id)) == t);
  }
  CHECK(kiln_target_at(-1) == NULL && kiln_target_at(KILN_TARGET_COUNT) == NULL);
  CHECK(kiln_target_default() == &kiln_target_cpu);
  CHECK(kiln_target_can_run(&kiln_target_cpu));
  CHECK(!kiln_target_can_run(&kiln_target_cuda)); /* its runtime is the next step */
  CHECK(kiln_layer_target(KILN_LAYER_TILE) == NULL);
}

static void test_unknown_name(void) {
  const kiln_target *t = &kiln_target_cpu;
  kiln_status st = kiln_target_lookup("tpu", &t);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID && t == NULL);
  const char *msg = st ? kiln_status_message(st) : "";
  CHECK(strstr(msg, "'tpu'") != NULL);
  for (int i = 0; i < kiln_target_count(); i++) CHECK(strstr(msg, kiln_target_at(i)->name));
  kiln_status_free(st);
  CHECK(kiln_target_find(NULL) == NULL && kiln_target_find("") == NULL);
  CHECK_ERR(kiln_target_lookup(NULL, &t), KILN_ERR_INVALID);
}

/* kiln_target_check names the slot that is missing. */
static void check_broken(kiln_target t, const char *slot) {
  kiln_status st = kiln_target_check(&t);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INTERNAL);
  if (st && !strstr(kiln_status_message(st), slot))
    fprintf(stderr, "broken target: '%s' does not name %s\n", kiln_status_message(st), slot);
  CHECK(st && strstr(kiln_status_message(st), slot));
  kiln_status_free(st);
}

static void test_check_slots(void) {
  kiln_target t = kiln_target_cpu;
  t.emit = NULL;
  check_broken(t, "emit");
  t = kiln_target_cpu, t.sched_defaults = NULL;
  check_broken(t, "sched_defaults");
  t = kiln_target_cpu, t.fuse_class = NULL;
  check_broken(t, "fuse_class");
  t = kiln_target_cpu, t.copy_in = NULL; /* half a runtime */
  check_broken(t, "runtime slots");
  t = kiln_target_cuda, t.run_kernel = kiln_target_cpu.run_kernel;
  check_broken(t, "runtime slots");
  /* a target without a runtime is complete, and the driver refuses a broken one */
  t = kiln_target_cpu, t.build = NULL;
  kiln_graph *g = parse();
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  if (g) CHECK_ERR(kiln_compile(g, &t, &o, &c), KILN_ERR_INTERNAL);
  CHECK(c == NULL);
  kiln_graph_free(g);
}

/* ---- the one driver, every target ---- */
static kiln_tensor *input(int rank, const int64_t *dims, uint64_t seed) {
  kiln_tensor *x = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, rank, dims, &x));
  float *f = x ? (float *)x->data : NULL;
  for (int64_t i = 0; f && i < x->numel; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    f[i] = (float)((double)(seed >> 40) / (double)(1ull << 24) - 0.5);
  }
  return x;
}

static int far(const kiln_tensor *a, const kiln_tensor *b) {
  if (!a || !b || a->numel != b->numel) return 1;
  const float *x = a->data, *y = b->data;
  int bad = 0;
  for (int64_t i = 0; i < a->numel; i++)
    bad += !(fabsf(x[i] - y[i]) <= 1e-5f + 1e-5f * fabsf(y[i]));
  return bad;
}

/* Runs c and the reference interpreter on the same inputs: the same outputs. */
static void check_runs(kiln_compiled *c) {
  kiln_graph *ref = parse();
  if (!ref) return;
  kiln_tensor *in[2] = {input(2, (int64_t[]){6, 40}, 1), input(2, (int64_t[]){40, 8}, 2)};
  kiln_tensor *got[2] = {NULL, NULL};
  kiln_val *vin[2] = {kiln_val_tensor(in[0]), kiln_val_tensor(in[1])}, *want[2] = {NULL, NULL};
  CHECK_OK(kiln_compiled_run(c, 2, in, got));
  CHECK_OK(kiln_interp_run(ref, NULL, 2, vin, want));
  for (int i = 0; i < 2; i++) {
    CHECK(want[i] && far(got[i], want[i]->t) == 0);
    kiln_tensor_free(got[i]), kiln_val_free(want[i]);
  }
  kiln_val_free(vin[0]), kiln_val_free(vin[1]); /* and the inputs */
  kiln_graph_free(ref);
}

/* A compile-only target: emitted code and the report; running is refused; NVRTC (CUDA)
 * compiles the code when it can be loaded, else SKIP. */
static void check_compile_only(const kiln_target *t, kiln_compiled *c) {
  kiln_tensor *in[2] = {input(2, (int64_t[]){6, 40}, 1), input(2, (int64_t[]){40, 8}, 2)};
  kiln_tensor *out[2] = {NULL, NULL};
  CHECK_ERR(kiln_compiled_run(c, 2, in, out), KILN_ERR_UNSUPPORTED);
  kiln_tensor_free(in[0]), kiln_tensor_free(in[1]);
  CHECK(kiln_compiled_plan(c) == NULL);
  if (t != &kiln_target_cuda) return;
  const kiln_cuda_build *b = kiln_compiled_cuda(c);
  CHECK(b && b->prog == kiln_compiled_program(c));
  if (!b) return;
  CHECK(b->source.data && strstr(b->source.data, "__global__") != NULL);
  CHECK(b->launches.len >= 2 && b->n_map[KILN_CUDA_UNMAPPED] == 0);
  if (!b->nvrtc_found) {
    printf("SKIP: NVRTC not found: the %s target's code was emitted, not compiled to PTX\n",
           t->name);
    return;
  }
  CHECK(b->nvrtc_ok && b->ptx && strstr(b->ptx, ".entry"));
}

static void compile_with(const kiln_target *t) {
  kiln_graph *g = parse();
  if (!g) return;
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, t, &o, &c));
  if (c) {
    CHECK(kiln_compiled_target(c) == t);
    CHECK(kiln_compiled_program(c)->target == t->id);
    kiln_strbuf rep = {0};
    kiln_compiled_report(c, &rep);
    CHECK(rep.len > 0 && strstr(rep.data, "schedules:")); /* a schedule per kernel */
    kiln_strbuf_free(&rep);
    if (kiln_target_can_run(t)) check_runs(c);
    else check_compile_only(t, c);
  }
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

static void test_every_target(void) {
  for (int i = 0; i < kiln_target_count(); i++) compile_with(kiln_target_at(i));
  /* NULL: the default target */
  kiln_graph *g = parse();
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  if (g) CHECK_OK(kiln_compile(g, NULL, &o, &c));
  CHECK(c && kiln_compiled_target(c) == kiln_target_default());
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

/* ---- the lowering's view of a target ---- */
#define TEST_PAR_MIN 12345

/* The cpu defaults, but loop nests go parallel from TEST_PAR_MIN elements. */
static kiln_status test_defaults(const kiln_sched_facts *f, kiln_sched *s) {
  KILN_TRY(kiln_sched_defaults_cpu(f, s));
  if (!(s->set & (1u << KILN_SF_PAR_MIN_ELEMENTS))) s->par_min_elements = TEST_PAR_MIN;
  return KILN_OK;
}

static void test_schedule_slot(void) {
  kiln_target t = kiln_target_cpu;
  t.name = "cpu-test";
  t.sched_defaults = test_defaults;
  kiln_graph *g = parse();
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  if (g) CHECK_OK(kiln_compile(g, &t, &o, &c));
  const kiln_program *p = c ? kiln_compiled_program(c) : NULL;
  int nests = 0;
  for (int i = 0; p && i < p->scheds.len; i++)
    if (p->scheds.data[i].kind == KILN_SCHED_NEST) {
      CHECK(p->scheds.data[i].par_min_elements == TEST_PAR_MIN);
      nests++;
    }
  CHECK(nests >= 1);
  if (c) check_runs(c);
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

/* A target that makes no kernel of Exp: Exp falls back with the target's reason. */
static bool no_exp(const kiln_graph *g, const kiln_node *n, const char **why) {
  (void)g;
  if (strcmp(n->op_type, "Exp")) return true;
  *why = "the test target has no Exp";
  return false;
}

static void test_supports_node(void) {
  kiln_target t = kiln_target_cpu;
  t.name = "cpu-no-exp";
  t.supports_node = no_exp;
  kiln_graph *g = parse();
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  if (g) CHECK_OK(kiln_compile(g, &t, &o, &c));
  const kiln_program *p = c ? kiln_compiled_program(c) : NULL;
  int exp_fallbacks = 0, other_fallbacks = 0;
  for (int i = 0; p && i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind != KILN_STEP_FALLBACK) continue;
    bool is_exp = !strcmp(p->graph->nodes.data[s->node].op_type, "Exp");
    exp_fallbacks += is_exp && s->reason && !strcmp(s->reason, "the test target has no Exp");
    other_fallbacks += !is_exp;
  }
  CHECK(exp_fallbacks == 1 && other_fallbacks == 0);
  if (c) check_runs(c); /* the fallback runs the reference kernel */
  kiln_compiled_free(c);
  kiln_graph_free(g);
  /* the cpu target itself lowers Exp */
  g = parse();
  c = NULL;
  if (g) CHECK_OK(kiln_compile(g, NULL, &o, &c));
  CHECK(c && kiln_compiled_stats(c)->n_fallback_steps == 0);
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

/* ---- the runtime slots: the executor reaches the device only through them ---- */
static int n_alloc, n_free, n_copy_out, n_kernels;

static kiln_status counting_alloc(kiln_compiled *c, int64_t bytes, void **out) {
  n_alloc++;
  return kiln_target_cpu.arena_alloc(c, bytes, out);
}
static void counting_free(kiln_compiled *c, void *arena, int64_t bytes) {
  n_free++;
  kiln_target_cpu.arena_free(c, arena, bytes);
}
static void counting_copy_out(kiln_compiled *c, void *dst, const void *src, size_t bytes) {
  n_copy_out++;
  kiln_target_cpu.copy_out(c, dst, src, bytes);
}
static void counting_run(kiln_compiled *c, int step) {
  n_kernels++;
  kiln_target_cpu.run_kernel(c, step);
}

static void test_runtime_slots(void) {
  kiln_target t = kiln_target_cpu;
  t.name = "cpu-counting";
  t.arena_alloc = counting_alloc, t.arena_free = counting_free;
  t.copy_out = counting_copy_out, t.run_kernel = counting_run;
  kiln_graph *g = parse();
  kiln_compile_opts o = options();
  kiln_compiled *c = NULL;
  if (g) CHECK_OK(kiln_compile(g, &t, &o, &c));
  CHECK(n_alloc == 0); /* the arena is made at the first run */
  if (c) {
    check_runs(c);
    check_runs(c);
  }
  const kiln_compile_stats *s = c ? kiln_compiled_stats(c) : NULL;
  CHECK(s && n_alloc == 1 && n_kernels == 2 * s->n_kernel_steps && n_kernels > 0);
  CHECK(n_copy_out == 2 * 2); /* two outputs in the arena, two runs */
  kiln_compiled_free(c);
  CHECK(n_free == 1);
  kiln_graph_free(g);
}

/* ---- the verifier's target lists ---- */
static void test_verify_targets(void) {
  bool on[KILN_TARGET_COUNT];
  CHECK_OK(kiln_verify_parse_targets("cuda,cpu", on));
  CHECK(on[KILN_TARGET_CPU] && on[KILN_TARGET_CUDA]);
  kiln_strbuf b = {0};
  kiln_verify_targets_str(on, &b);
  CHECK(b.data && !strcmp(b.data, "cpu,cuda")); /* registry order */
  kiln_strbuf_free(&b);
  CHECK_OK(kiln_verify_parse_targets("none", on));
  for (int i = 0; i < KILN_TARGET_COUNT; i++) CHECK(!on[i]);
  kiln_verify_targets_str(on, &b);
  CHECK(b.data && !strcmp(b.data, "none"));
  kiln_strbuf_free(&b);
  CHECK_ERR(kiln_verify_parse_targets("cpu,tpu", on), KILN_ERR_INVALID);
  CHECK_ERR(kiln_verify_parse_targets("cpu,cpu", on), KILN_ERR_INVALID);
  CHECK_ERR(kiln_verify_parse_targets("cpu,", on), KILN_ERR_INVALID);
  CHECK_ERR(kiln_verify_parse_targets("", on), KILN_ERR_INVALID);
}

TEST_MAIN({"setup", setup}, {"registry", test_registry}, {"unknown_name", test_unknown_name},
          {"check_slots", test_check_slots}, {"every_target", test_every_target},
          {"schedule_slot", test_schedule_slot}, {"supports_node", test_supports_node},
          {"runtime_slots", test_runtime_slots}, {"verify_targets", test_verify_targets},
          {"cleanup", cleanup})
