/* The one compile driver, for every target (target.h). It reads top to bottom
 * (kiln_compile):
 *   bind dims -> pass pipeline (fusion last, the target's fusion classes)
 *   -> lower to a program of tile kernels (the target's schedule defaults, supported nodes
 *      and threads; the options' precision policy) -> the target's map (optional)
 *   -> the target's emit (C, CUDA C) -> the target's build (C compiler, NVRTC)
 *   -> for a target that runs: memory plan -> the target's prepare (kernels loaded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "rt_internal.h"

static const char *const STAGE_NAMES[KILN_STAGE_COUNT] = {"passes", "lowering", "codegen",
                                                          "cc",     "load",     "plan"};
const char *kiln_stage_name(kiln_stage s) {
  return s >= 0 && s < KILN_STAGE_COUNT ? STAGE_NAMES[s] : "?";
}

void kiln_compile_opts_init(kiln_compile_opts *o) {
  memset(o, 0, sizeof *o);
  o->passes.pass_limit = -1;
}

/* ---- the driver ---- */
static void count_steps(kiln_compiled *c) {
  const kiln_program *p = c->prog;
  kiln_compile_stats *s = &c->stats;
  s->n_kernels = p->module->kernels.len;
  s->n_steps = p->steps.len;
  for (int i = 0; i < p->steps.len; i++) {
    kiln_step_kind k = p->steps.data[i].kind;
    s->n_kernel_steps += k == KILN_STEP_KERNEL;
    s->n_fallback_steps += k == KILN_STEP_FALLBACK;
    s->n_alias_steps += k == KILN_STEP_ALIAS;
  }
  for (int i = 0; i < p->packed.len; i++)
    s->packed_bytes += (int64_t)kiln_tensor_nbytes(p->packed.data[i]);
}

static void progress(const kiln_compile_opts *o, const char *what, double t0) {
  if (o->verbose) fprintf(stderr, "[kiln] %s: %.2f s\n", what, kiln_clock_seconds() - t0);
}

/* Compiled code has one static shape per tensor input. */
static kiln_status check_static_inputs(const kiln_graph *g) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    char tb[128];
    if (v->type.kind == KILN_TYPE_TENSOR && !kiln_type_is_static(&v->type))
      return kiln_invalid("input '%s' is %s: bind its symbolic dims before compiling (dims of "
                          "the options, or kiln_graph_bind_inputs)",
                          v->name, kiln_type_str(&v->type, tb, sizeof tb));
    if (v->type.kind == KILN_TYPE_UNKNOWN) return kiln_invalid("input '%s' has no type", v->name);
  }
  return KILN_OK;
}

static kiln_status run_passes(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  KILN_TRY(kiln_rt_bind_opts(c->g, o));
  KILN_TRY(check_static_inputs(c->g));
  kiln_pass_opts po = o->passes;
  if (!po.fuse_classify) po.fuse_classify = c->target->fuse_class;
  /* The IR verifier after every pass: a pass that leaves a broken graph (a use of a removed
   * value, a cycle) must stop compilation with an error naming it, never reach the later passes
   * or the lowering, which assume a well-formed graph. It costs little next to the passes. */
  po.verify_each = true;
  KILN_TRY(kiln_passes_run(c->g, &po, &c->pass_stats));
  c->stats.seconds[KILN_STAGE_PASSES] = kiln_clock_seconds() - t0;
  progress(o, "passes", t0);
  return KILN_OK;
}

/* The lowering with the target's view, then the target's map (both in the lowering's time). */
static kiln_status lower(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  const kiln_target *t = c->target;
  kiln_lower_opts lo = {.target = t->id,
                        .threads = 1,
                        .force_fallback = o->force_fallback,
                        .precision = &o->precision};
  lo.sched_defaults = t->sched_defaults;
  lo.supports_node = t->supports_node;
  KILN_TRY(t->lower_opts(o, &lo));
  lo.stress = o->par_stress;
  KILN_TRY(kiln_lower_scheduled(c->g, &lo, o->schedule, &c->prog));
  if (t->map) KILN_TRY(t->map(c, o));
  count_steps(c);
  c->stats.seconds[KILN_STAGE_LOWER] = kiln_clock_seconds() - t0;
  progress(o, "lowering", t0);
  if (o->verbose && c->stats.n_fallback_steps)
    fprintf(stderr, "[kiln] %d fallback steps (reference kernels)\n", c->stats.n_fallback_steps);
  return KILN_OK;
}

/* The target's emit and build, each timed as its stage. */
static kiln_status emit_build(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  KILN_TRY(c->target->emit(c, o));
  c->stats.seconds[KILN_STAGE_CODEGEN] = kiln_clock_seconds() - t0;
  progress(o, "codegen", t0);
  t0 = kiln_clock_seconds();
  KILN_TRY(c->target->build(c, o));
  c->stats.seconds[KILN_STAGE_CC] = kiln_clock_seconds() - t0;
  progress(o, "build", t0);
  return KILN_OK;
}

/* The arena value with the most bytes (named when the plan is over the memory limit). */
static int largest_value(const kiln_plan *p) {
  int best = -1;
  for (int v = 0; v < p->n_values; v++)
    if (p->loc[v].kind == KILN_LOC_ARENA && (best < 0 || p->loc[v].bytes > p->loc[best].bytes))
      best = v;
  return best;
}

static kiln_status plan(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  kiln_plan_opts po = {.heuristic = -1, .search_stress = o->plan_stress};
  KILN_TRY(kiln_plan_program(c->prog, &po, &c->plan));
#ifdef NDEBUG
  if (o->plan_stress)
#endif
    KILN_TRY(kiln_plan_check(c->prog, c->plan));
  /* The arena is made at the first run; it must fit then, next to what is held now (the
   * graph's constants, packed weights). */
  int big = largest_value(c->plan);
  char tb[160] = "", what[400] = "";
  if (big >= 0)
    snprintf(what, sizeof what, " (its largest value: '%.200s', %s, %lld bytes)",
             c->g->values.data[big].name,
             kiln_type_str(&c->g->values.data[big].type, tb, sizeof tb),
             (long long)c->plan->loc[big].bytes);
  KILN_TRY(kiln_mem_check(c->plan->arena_bytes, "the memory plan (arena) of graph '%s'%s",
                          c->g->name, what));
  c->stats.arena_bytes = c->plan->arena_bytes;
  c->stats.lower_bound = c->plan->lower_bound;
  c->stats.seconds[KILN_STAGE_PLAN] = kiln_clock_seconds() - t0;
  progress(o, "memory plan", t0);
  return KILN_OK;
}

/* Marks the root values that the steps read: kernel arguments, fallback inputs and the
 * values their subgraphs read, alias sources, graph outputs. */
static void mark_read(const kiln_compiled *c, bool *used) {
  const kiln_graph *g = c->g;
  for (int s = 0; s < c->prog->steps.len; s++) {
    const kiln_step *st = &c->prog->steps.data[s];
    for (int a = 0; st->kind == KILN_STEP_KERNEL && a < st->n_args; a++)
      if (st->args[a].kind == KILN_ARG_VALUE) used[st->args[a].id] = true;
    if (st->kind == KILN_STEP_ALIAS) used[st->src] = true;
    if (st->kind != KILN_STEP_FALLBACK) continue;
    const kiln_node *n = &g->nodes.data[st->node];
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0) used[n->inputs[k]] = true;
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v);) used[v] = true;
  }
  for (int i = 0; i < g->outputs.len; i++) used[g->outputs.data[i]] = true;
}

static void release_weights(kiln_compiled *c) {
  kiln_graph *g = c->g;
  bool *used = kiln_xcalloc((size_t)g->values.len + 1, sizeof *used);
  mark_read(c, used);
  for (int v = 0; v < g->values.len; v++) {
    kiln_tensor *t = g->values.data[v].data;
    if (used[v] || g->values.data[v].kind != KILN_VALUE_CONST || !t || !t->owns_data ||
        t->dtype == KILN_STRING)
      continue;
    kiln_tensor_drop_data(t);
  }
  free(used);
}

static kiln_status load(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  KILN_TRY(c->target->prepare(c));
  c->stats.seconds[KILN_STAGE_LOAD] = kiln_clock_seconds() - t0;
  progress(o, "load", t0);
  return KILN_OK;
}

kiln_status kiln_compile(kiln_graph *g, const kiln_target *t, const kiln_compile_opts *o,
                         kiln_compiled **out) {
  kiln_compile_opts dflt;
  kiln_compile_opts_init(&dflt);
  if (!o) o = &dflt;
  if (!t) t = kiln_target_default();
  *out = NULL;
  if (g->parent) return kiln_invalid("kiln_compile takes a root graph");
  KILN_TRY(kiln_target_check(t));
  double t0 = kiln_clock_seconds();
  kiln_compiled *c = kiln_xcalloc(1, sizeof *c);
  c->g = g;
  c->target = t;
  c->max_memory = o->max_memory;
  int64_t prev_limit = kiln_mem_push_limit(o->max_memory);
  bool runs = kiln_target_can_run(t);
  kiln_status st = run_passes(c, o);
  if (!st) st = lower(c, o);
  if (!st) st = emit_build(c, o);
  if (!st && runs) st = plan(c, o);
  if (!st && runs) st = load(c, o);
  if (!st && runs && o->release_weights) release_weights(c);
  kiln_mem_pop_limit(prev_limit);
  c->stats.total_seconds = kiln_clock_seconds() - t0;
  if (st) {
    kiln_compiled_free(c);
    if (t == kiln_target_default()) return kiln_status_annotate(st, "compiling '%s'", g->name);
    return kiln_status_annotate(st, "compiling '%s' for %s", g->name, t->name);
  }
  c->own_graph = o->take_graph;
  if (o->verbose) fprintf(stderr, "[kiln] compiled in %.2f s\n", c->stats.total_seconds);
  *out = c;
  return KILN_OK;
}

void kiln_compiled_free(kiln_compiled *c) {
  if (!c) return;
  kiln_exec_free(c);
  if (c->target && c->target->release) c->target->release(c);
  kiln_plan_free(c->plan);
  kiln_module_free(c->mod);
  free(c->symbols);
  kiln_program_free(c->prog);
  if (c->own_graph) kiln_graph_free(c->g);
  free(c);
}

const kiln_compile_stats *kiln_compiled_stats(const kiln_compiled *c) {
  return &c->stats;
}
const kiln_graph *kiln_compiled_graph(const kiln_compiled *c) {
  return c->g;
}
void kiln_compiled_set_fill(kiln_compiled *c, int byte) {
  c->fill_on = byte >= 0 && byte <= 255;
  c->fill = (unsigned char)(byte & 0xff);
}

const kiln_program *kiln_compiled_program(const kiln_compiled *c) {
  return c->prog;
}
const kiln_plan *kiln_compiled_plan(const kiln_compiled *c) {
  return c->plan;
}

const kiln_target *kiln_compiled_target(const kiln_compiled *c) {
  return c->target;
}

void kiln_compiled_report(const kiln_compiled *c, kiln_strbuf *out) {
  c->target->report(c, out);
}
