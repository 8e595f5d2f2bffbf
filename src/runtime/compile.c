/* The compile driver. It reads top to bottom (kiln_compile):
 *   bind dims -> pass pipeline (fusion last) -> lower to a program of tile kernels
 *   -> C source (identical kernels emitted once, split into translation units)
 *   -> shared object (parallel compiler processes, disk cache) -> load
 *   -> memory plan -> executor ready.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "graph/analysis.h"
#include "lower/schedule.h"
#include "rt_internal.h"

static const char *const STAGE_NAMES[KILN_STAGE_COUNT] = {"passes", "lowering", "codegen",
                                                          "cc",     "load",     "plan"};
const char *kiln_stage_name(kiln_stage s) {
  return s >= 0 && s < KILN_STAGE_COUNT ? STAGE_NAMES[s] : "?";
}

void kiln_compile_opts_init(kiln_compile_opts *o) {
  memset(o, 0, sizeof *o);
  o->target = KILN_TARGET_CPU;
  o->passes.pass_limit = -1;
}

/* ---- C source: deduplicated kernels in translation units ---- */
typedef struct csrc {
  int n_unique;
  char **text; /* per unique kernel: its C function */
  int n_units;
  char **units; /* per unit: prelude + kernels */
} csrc;

static void csrc_free(csrc *s) {
  for (int i = 0; i < s->n_unique; i++) free(s->text[i]);
  for (int i = 0; i < s->n_units; i++) free(s->units[i]);
  free(s->text);
  free(s->units);
}

/* k with neutral names: the function "kiln_kernel", buffers b0, b1, ... and variables
 * v0, v1, ... (the lowering names them after graph values), no origin comment. Equal C
 * texts of two such copies compute the same function. */
typedef struct neutral_names {
  kiln_tbuf *bufs;
  kiln_tvar *vars;
  char (*names)[24];
} neutral_names;

static kiln_tkernel neutral(const kiln_tkernel *k, neutral_names *nn) {
  kiln_tkernel anon = *k;
  anon.name = "kiln_kernel";
  anon.origin = "";
  int nb = k->bufs.len, nv = k->vars.len;
  nn->bufs = kiln_xcalloc((size_t)nb + 1, sizeof *nn->bufs);
  nn->vars = kiln_xcalloc((size_t)nv + 1, sizeof *nn->vars);
  nn->names = kiln_xcalloc((size_t)(nb + nv) + 1, sizeof *nn->names);
  for (int i = 0; i < nb; i++) {
    nn->bufs[i] = k->bufs.data[i];
    snprintf(nn->names[i], sizeof nn->names[i], "b%d", i);
    nn->bufs[i].name = nn->names[i];
  }
  for (int i = 0; i < nv; i++) {
    nn->vars[i] = k->vars.data[i];
    snprintf(nn->names[nb + i], sizeof nn->names[nb + i], "v%d", i);
    nn->vars[i].name = nn->names[nb + i];
  }
  anon.bufs.data = nn->bufs;
  anon.vars.data = nn->vars;
  return anon;
}

/* C of the kernel with neutral names, as symbol `name` (NULL: "kiln_kernel", no origin). */
static kiln_status emit_neutral(const kiln_tkernel *k, const kiln_codegen_opts *co,
                                const char *name, kiln_strbuf *out) {
  neutral_names nn;
  kiln_tkernel anon = neutral(k, &nn);
  if (name) anon.name = name, anon.origin = k->origin;
  kiln_status st = kiln_codegen_c_kernel(&anon, co, out);
  free(nn.bufs);
  free(nn.vars);
  free(nn.names);
  return st;
}

/* Index of an earlier kernel with the same neutral text, or -1; on a hash collision with a
 * different text the key moves on, so that symbols stay distinct. */
static int find_same(uint64_t *keys, char **texts, int i) {
  for (int j = 0; j < i; j++) {
    if (keys[j] != keys[i]) continue;
    if (!strcmp(texts[j], texts[i])) return j;
    keys[i]++;
    j = -1; /* rescan with the new key */
  }
  return -1;
}

static kiln_status emit_unique(kiln_compiled *c, const kiln_codegen_opts *co, csrc *s) {
  const kiln_tmodule *m = c->prog->module;
  int n = m->kernels.len;
  uint64_t *keys = kiln_xcalloc((size_t)n + 1, sizeof *keys);
  char **texts = kiln_xcalloc((size_t)n + 1, sizeof *texts); /* neutral C per kernel */
  s->text = kiln_xcalloc((size_t)n + 1, sizeof *s->text);
  c->symbols = kiln_xcalloc((size_t)n + 1, sizeof *c->symbols);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < n; i++) {
    const kiln_tkernel *k = m->kernels.data[i];
    kiln_strbuf b = {0};
    st = kiln_tkernel_verify(k); /* the lowering made k: a rejection is Kiln's bug */
    if (st)
      st = kiln_status_annotate(kiln_status_recode(st, KILN_ERR_INTERNAL),
                                "internal error (a bug in Kiln's lowering): kernel %s", k->name);
    if (!st) st = emit_neutral(k, co, NULL, &b);
    texts[i] = b.data ? b.data : kiln_xstrdup("");
    if (st) break;
    keys[i] = kiln_hash_bytes(texts[i], b.len, 0) ^ ((uint64_t)b.len << 40);
    int same = find_same(keys, texts, i);
    if (same >= 0) {
      c->symbols[i] = c->symbols[same];
      continue;
    }
    c->symbols[i] = kiln_arena_printf(m->arena, "kiln_%016llx", (unsigned long long)keys[i]);
    kiln_strbuf named = {0};
    st = emit_neutral(k, co, c->symbols[i], &named);
    s->text[s->n_unique++] = named.data ? named.data : kiln_xstrdup("");
  }
  for (int i = 0; i < n; i++) free(texts[i]);
  free(texts);
  free(keys);
  return st;
}

/* Units of about equal size, in kernel order: a few per compiler job, so that they
 * compile in parallel and a changed kernel recompiles only its unit. */
static kiln_status split_units(const kiln_codegen_opts *co, int jobs, csrc *s) {
  kiln_strbuf prelude = {0};
  KILN_TRY(kiln_codegen_c_prelude(co, &prelude));
  size_t total = 0;
  for (int i = 0; i < s->n_unique; i++) total += strlen(s->text[i]);
  int want = (s->n_unique + 3) / 4;
  if (want > 4 * jobs) want = 4 * jobs;
  if (want < 1) want = 1;
  size_t per = total / (size_t)want + 1;
  s->units = kiln_xcalloc((size_t)want + s->n_unique + 1, sizeof *s->units);
  kiln_strbuf u = {0};
  for (int i = 0; i <= s->n_unique; i++) {
    bool flush = i == s->n_unique ? u.len > 0 || s->n_units == 0 : u.len >= per + prelude.len;
    if (flush) {
      s->units[s->n_units++] = u.data ? u.data : kiln_xstrdup(prelude.data ? prelude.data : "");
      memset(&u, 0, sizeof u);
    }
    if (i == s->n_unique) break;
    if (!u.len) kiln_strbuf_append(&u, prelude.data ? prelude.data : "", prelude.len);
    kiln_strbuf_printf(&u, "\n%s", s->text[i]);
  }
  kiln_strbuf_free(&prelude);
  return KILN_OK;
}

static int n_jobs(const kiln_compile_opts *o) {
  long n = o->jobs > 0 ? o->jobs : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

static kiln_status build_module(kiln_compiled *c, const kiln_compile_opts *o) {
  kiln_codegen_opts co = kiln_codegen_opts_default();
  co.threads = o->threads;
  csrc s = {0};
  double t0 = kiln_clock_seconds();
  kiln_status st = emit_unique(c, &co, &s);
  if (!st) st = split_units(&co, n_jobs(o), &s);
  c->stats.seconds[KILN_STAGE_CODEGEN] = kiln_clock_seconds() - t0;
  c->stats.n_unique_kernels = s.n_unique;
  c->stats.n_units = s.n_units;
  if (o->verbose && !st)
    fprintf(stderr, "[kiln] codegen: %d kernels (%d unique) in %d units, %.2f s\n",
            c->prog->module->kernels.len, s.n_unique, s.n_units, kiln_clock_seconds() - t0);
  if (!st) {
    kiln_strbuf flags = {0};
    kiln_strbuf_printf(&flags, "%s%s%s", KILN_CODEGEN_C_FLAGS, o->cflags ? " " : "",
                       o->cflags ? o->cflags : "");
    kiln_cc_opts cc = {o->cc,     flags.data,      o->cache_dir, o->no_cache,
                       n_jobs(o), o->keep_sources, o->verbose};
    kiln_cc_stats cs = {0};
    t0 = kiln_clock_seconds();
    st = kiln_module_build(s.n_units, (const char *const *)s.units, &cc, &c->mod, &cs);
    c->stats.seconds[KILN_STAGE_CC] = kiln_clock_seconds() - t0;
    c->stats.n_units_cached = cs.n_units_cached;
    c->stats.library_cached = cs.library_cached;
    kiln_strbuf_free(&flags);
  }
  csrc_free(&s);
  return st;
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
  if (!po.fuse_classify) po.fuse_classify = kiln_lower_fuse_class;
  /* The IR verifier after every pass: a pass that leaves a broken graph (a use of a removed
   * value, a cycle) must stop compilation with an error naming it, never reach the later passes
   * or the lowering, which assume a well-formed graph. It costs little next to the passes. */
  po.verify_each = true;
  KILN_TRY(kiln_passes_run(c->g, &po, &c->pass_stats));
  c->stats.seconds[KILN_STAGE_PASSES] = kiln_clock_seconds() - t0;
  progress(o, "passes", t0);
  return KILN_OK;
}

static kiln_status lower(kiln_compiled *c, const kiln_compile_opts *o) {
  double t0 = kiln_clock_seconds();
  if (o->target != KILN_TARGET_CPU)
    return kiln_unsupported("only the CPU target is compiled so far");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = o->threads > 0 ? o->threads : cores > 0 ? (int)cores : 1;
  kiln_lower_opts lo = {o->target, threads, o->force_fallback, &o->precision};
  KILN_TRY(kiln_lower_scheduled(c->g, &lo, o->schedule, &c->prog));
  count_steps(c);
  c->stats.seconds[KILN_STAGE_LOWER] = kiln_clock_seconds() - t0;
  progress(o, "lowering", t0);
  if (o->verbose && c->stats.n_fallback_steps)
    fprintf(stderr, "[kiln] %d fallback steps (reference kernels)\n", c->stats.n_fallback_steps);
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
  KILN_TRY(kiln_plan_program(c->prog, NULL, &c->plan));
#ifndef NDEBUG
  KILN_TRY(kiln_plan_check(c->prog, c->plan));
#endif
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
  KILN_TRY(kiln_exec_prepare(c));
  c->stats.seconds[KILN_STAGE_LOAD] = kiln_clock_seconds() - t0;
  progress(o, "load", t0);
  return KILN_OK;
}

kiln_status kiln_compile(kiln_graph *g, const kiln_compile_opts *o, kiln_compiled **out) {
  kiln_compile_opts dflt;
  kiln_compile_opts_init(&dflt);
  if (!o) o = &dflt;
  *out = NULL;
  if (g->parent) return kiln_invalid("kiln_compile takes a root graph");
  double t0 = kiln_clock_seconds();
  kiln_compiled *c = kiln_xcalloc(1, sizeof *c);
  c->g = g;
  c->max_memory = o->max_memory;
  int64_t prev_limit = kiln_mem_push_limit(o->max_memory);
  kiln_status st = run_passes(c, o);
  if (!st) st = lower(c, o);
  if (!st) st = build_module(c, o);
  if (!st) st = plan(c, o);
  if (!st) st = load(c, o);
  if (!st && o->release_weights) release_weights(c);
  kiln_mem_pop_limit(prev_limit);
  c->stats.total_seconds = kiln_clock_seconds() - t0;
  if (st) {
    kiln_compiled_free(c);
    return kiln_status_annotate(st, "compiling '%s'", g->name);
  }
  c->own_graph = o->take_graph;
  if (o->verbose) fprintf(stderr, "[kiln] compiled in %.2f s\n", c->stats.total_seconds);
  *out = c;
  return KILN_OK;
}

void kiln_compiled_free(kiln_compiled *c) {
  if (!c) return;
  kiln_exec_free(c);
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
const kiln_program *kiln_compiled_program(const kiln_compiled *c) {
  return c->prog;
}
const kiln_plan *kiln_compiled_plan(const kiln_compiled *c) {
  return c->plan;
}

/* ---- report ---- */
/* Names from the model (graph, origins, node labels, reasons naming values) are data: each
 * goes through kiln_esc_line, so every record of the report stays one line. */
static void report_steps(const kiln_compiled *c, kiln_strbuf *out) {
  const kiln_program *p = c->prog;
  char lb[200];
  for (int i = 0; i < p->module->kernels.len; i++) {
    const kiln_tkernel *k = p->module->kernels.data[i];
    kiln_strbuf_printf(out, "  kernel %s -> %s  (", k->name, c->symbols[i]);
    kiln_esc_line(out, k->origin ? k->origin : "");
    kiln_strbuf_printf(out, ")\n");
  }
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind != KILN_STEP_FALLBACK) continue;
    kiln_strbuf_printf(out, "  fallback ");
    kiln_esc_line(out, kiln_node_label(&c->g->nodes.data[s->node], lb, sizeof lb));
    kiln_strbuf_printf(out, ": ");
    kiln_esc_line(out, s->reason ? s->reason : "");
    kiln_strbuf_printf(out, "\n");
  }
}

void kiln_compiled_report(const kiln_compiled *c, kiln_strbuf *out) {
  const kiln_compile_stats *s = &c->stats;
  kiln_strbuf_printf(out, "graph '");
  kiln_esc_line(out, c->g->name);
  kiln_strbuf_printf(out, "': %d steps (%d kernel, %d fallback, %d alias)\n", s->n_steps,
                     s->n_kernel_steps, s->n_fallback_steps, s->n_alias_steps);
  kiln_strbuf_printf(out, "kernels: %d (%d unique) in %d translation units, %d from the cache%s\n",
                     s->n_kernels, s->n_unique_kernels, s->n_units, s->n_units_cached,
                     s->library_cached ? ", library from the cache" : "");
  report_steps(c, out);
  kiln_program_print_schedules(c->prog, out);
  double ratio = s->lower_bound ? (double)s->arena_bytes / (double)s->lower_bound : 1.0;
  kiln_strbuf_printf(out,
                     "memory: arena %lld bytes, lower bound %lld bytes (%.3fx), %d in place, "
                     "order %s; packed constants %lld bytes\n",
                     (long long)s->arena_bytes, (long long)s->lower_bound, ratio,
                     c->plan->n_inplace, c->plan->heuristic, (long long)s->packed_bytes);
  kiln_strbuf_printf(out, "compile time: %.3f s (", s->total_seconds);
  for (int i = 0; i < KILN_STAGE_COUNT; i++)
    kiln_strbuf_printf(out, "%s%s %.3f", i ? ", " : "", kiln_stage_name((kiln_stage)i),
                       s->seconds[i]);
  kiln_strbuf_printf(out, ")\n");
}
