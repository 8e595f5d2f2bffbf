/* Lowering driver: collects the fusion groups of a graph, orders them, and turns each into
 * kernel steps (through the per-class lowerings), an alias step, or a fallback step that
 * runs the reference kernel. Also builds steps for the lowerings and prints programs.
 *
 * The driver reads top to bottom in kiln_lower: groups -> order -> one lowering per group. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "graph/analysis.h"
#include "graph/graph_text.h"
#include "lower_ops.h"

/* ---- building steps ---- */
static void sanitize(char *s) {
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') *s = '_';
}

/* ---- schedules ---- */

/* The target's schedule defaults (kiln_lower_opts.sched_defaults), else its id's. */
static kiln_sched_defaults_fn sched_defaults(const kiln_lower_ctx *c) {
  return c->opts->sched_defaults ? c->opts->sched_defaults
                                 : kiln_sched_defaults_for(c->opts->target);
}

static kiln_sched_facts base_facts(const kiln_lower_ctx *c, kiln_sched_kind kind) {
  kiln_sched_facts f = {.kind = kind, .threads = c->opts->threads, .stress = c->stress};
  return f;
}

/* A new kernel's record: the overrides set for its name, then the defaults of a loop nest
 * (a GEMM or a depthwise conv fills the rest later). Nests read par_min_elements from the
 * module while they are built. A defaults error is reported when the kernel is complete. */
static void start_schedule(kiln_lower_ctx *c, const kiln_tkernel *k) {
  kiln_sched s;
  kiln_sched_set_resolve(c->sched, k->name, c->prog->module->arena, &s);
  kiln_sched_facts f = base_facts(c, KILN_SCHED_NEST);
  kiln_status_free(sched_defaults(c)(&f, &s));
  c->prog->module->par_min_elements = s.par_min_elements;
  kiln_vec_push(&c->prog->scheds, s);
}

kiln_status kiln_lower_schedule(kiln_lower_ctx *c, const kiln_step *step, kiln_sched_facts *f,
                                const kiln_sched **out) {
  kiln_sched *s = &c->prog->scheds.data[step->kernel];
  f->threads = c->opts->threads;
  f->stress = c->stress;
  KILN_TRY(sched_defaults(c)(f, s));
  *out = s;
  return KILN_OK;
}

/* The group's kernels are complete: the fields set from outside must apply to each, and
 * the directives run (tile_sched.h) and leave a kernel that verifies. */
static kiln_status finish_schedules(kiln_lower_ctx *c, int first) {
  kiln_tmodule *m = c->prog->module;
  for (int i = first; i < m->kernels.len; i++) {
    kiln_sched *s = &c->prog->scheds.data[i];
    if (s->kind == KILN_SCHED_NEST) {
      kiln_sched_facts f = base_facts(c, KILN_SCHED_NEST);
      KILN_TRY(sched_defaults(c)(&f, s));
    }
    KILN_TRY(kiln_sched_check_fields(s, m->kernels.data[i]));
    KILN_TRY(kiln_sched_apply(s, m->kernels.data[i]));
  }
  return KILN_OK;
}

kiln_tkernel *kiln_lower_kernel(kiln_lower_ctx *c, const kiln_group *grp, const char *base,
                                kiln_step *step) {
  kiln_tmodule *m = c->prog->module;
  char *name = kiln_arena_printf(m->arena, "k%d_%s", m->kernels.len, base);
  sanitize(name);
  kiln_tkernel *k = kiln_tkernel_new(m, name);
  kiln_strbuf origin = {0};
  for (int i = 0; i < grp->n_nodes; i++) {
    const kiln_node *n = &c->g->nodes.data[grp->nodes[i]];
    kiln_strbuf_printf(&origin, "%s%s", i ? ", " : "", n->name[0] ? n->name : n->op_type);
  }
  k->origin = kiln_arena_strdup(m->arena, origin.data ? origin.data : "");
  kiln_strbuf_free(&origin);
  memset(step, 0, sizeof *step);
  step->kind = KILN_STEP_KERNEL;
  step->kernel = m->kernels.len - 1;
  start_schedule(c, k);
  step->node = grp->nodes[0];
  step->src = step->dst = -1;
  step->check_arg = -1;
  return k;
}

static void step_push_arg(kiln_lower_ctx *c, kiln_step *step, kiln_arg a) {
  kiln_arena *ar = c->prog->module->arena;
  kiln_arg *args = kiln_arena_calloc(ar, (size_t)step->n_args + 1, sizeof *args);
  if (step->n_args) memcpy(args, step->args, (size_t)step->n_args * sizeof *args);
  args[step->n_args++] = a;
  step->args = args;
}

int kiln_lower_param_value(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, int v) {
  for (int i = 0; i < step->n_args; i++) /* mutant 395: the kind not compared (a packed id) */
    if ((step->args[i].kind == KILN_ARG_VALUE || KILN_MUTANT(395)) && step->args[i].id == v)
      return i;
  const kiln_value *val = &c->g->values.data[v];
  char name[64];
  snprintf(name, sizeof name, "v%d", v);
  int b = kiln_tkernel_param(k, name, val->type.dtype, kiln_lower_numel(&val->type));
  step_push_arg(c, step, (kiln_arg){KILN_ARG_VALUE, v, 0});
  return b;
}

int kiln_lower_param_packed(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *name,
                            kiln_tensor *t) {
  kiln_vec_push(&c->prog->packed, t);
  int b = kiln_tkernel_param(k, name, t->dtype, t->numel);
  step_push_arg(c, step, (kiln_arg){KILN_ARG_PACKED, c->prog->packed.len - 1, 0});
  return b;
}

int kiln_lower_param_scratch(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *name,
                             kiln_dtype dtype, int64_t size) {
  int b = kiln_tkernel_param(k, name, dtype, size);
  int64_t bytes = size * (int64_t)kiln_dtype_size(dtype);
  step_push_arg(c, step, (kiln_arg){KILN_ARG_SCRATCH, -1, bytes});
  return b;
}

int kiln_lower_param_check(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *fmt,
                           ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int b = kiln_lower_param_scratch(c, k, step, "err", KILN_I32, 1);
  step->check_arg = step->n_args - 1;
  step->check_msg = kiln_arena_strdup(c->prog->module->arena, msg);
  return b;
}

kiln_tstmt *kiln_lower_check_fail(kiln_tkernel *k, int flag) {
  return kiln_tstore(k, flag, kiln_tint(k, 0), kiln_tconst_int(k, KILN_I32, 1));
}

/* Marks the parameters that the kernel never stores to as read-only. */
static void stores_in(const kiln_tblock *b, bool *stored) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_STORE) stored[s->buf] = true;
    if (s->kind == KILN_TS_MMA) stored[s->mma.c_buf] = true;
    if (s->kind == KILN_TS_IF && KILN_MUTANT(364)) continue; /* mutant 364: guarded stores */
    stores_in(&s->body, stored);
    stores_in(&s->orelse, stored);
  }
}

static void mark_readonly(kiln_tkernel *k) {
  bool *stored = kiln_xcalloc((size_t)k->bufs.len + 1, 1);
  stores_in(&k->body, stored);
  for (int i = 0; i < k->n_params; i++) k->bufs.data[i].readonly = !stored[i];
  free(stored);
}

void kiln_lower_add_step(kiln_lower_ctx *c, const kiln_step *step) {
  if (step->kind == KILN_STEP_KERNEL) mark_readonly(c->prog->module->kernels.data[step->kernel]);
  kiln_vec_push(&c->prog->steps, *step);
}

/* ---- groups ---- */
typedef struct group_set {
  int n;
  kiln_group *groups;
  kiln_groups parts; /* graph/analysis.h: node -> group, each group's nodes */
} group_set;

static bool in_group(const int *of_node, int gi, const kiln_graph *g, int v) {
  if (v < 0) return false;
  const kiln_value *val = &g->values.data[v];
  return val->kind == KILN_VALUE_NODE && of_node[val->node] == gi;
}

/* Inputs (values read from outside, each once, in the order first read) and outputs (values
 * used outside or graph outputs). seen[v] == gi + 1 marks an input already taken: one array
 * for all groups keeps this linear in the group's reads. */
static void group_io(kiln_lower_ctx *c, group_set *s, int gi, const int *uses_outside, int *seen) {
  kiln_group *grp = &s->groups[gi];
  const kiln_graph *g = c->g;
  int n_in = 0, n_out = 0;
  for (int i = 0; i < grp->n_nodes; i++) {
    n_in += g->nodes.data[grp->nodes[i]].n_inputs;
    n_out += g->nodes.data[grp->nodes[i]].n_outputs;
  }
  int *in = kiln_arena_calloc(c->scratch, (size_t)n_in + 1, sizeof(int));
  int *out = kiln_arena_calloc(c->scratch, (size_t)n_out + 1, sizeof(int));
  for (int i = 0; i < grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[grp->nodes[i]];
    for (int k = 0; k < n->n_inputs; k++) {
      int v = n->inputs[k];
      if (v < 0 || in_group(s->parts.of_node, gi, g, v) || seen[v] == gi + 1) continue;
      seen[v] = gi + 1;
      in[grp->n_inputs++] = v;
    }
    for (int k = 0; k < n->n_outputs; k++) {
      int v = n->outputs[k];
      if (v >= 0 && (uses_outside[v] || grp->n_nodes == 1)) out[grp->n_outputs++] = v;
    }
  }
  grp->inputs = in;
  grp->outputs = out;
}

/* uses_outside[v]: value v is a graph output or read by a node of another group (or by a
 * subgraph of a node, which counts as a read by that node). */
static int *outside_uses(kiln_lower_ctx *c, const group_set *s) {
  const kiln_graph *g = c->g;
  const int *of_node = s->parts.of_node;
  int *u = kiln_arena_calloc(c->scratch, (size_t)g->values.len + 1, sizeof(int));
  for (int i = 0; i < g->outputs.len && !KILN_MUTANT(359); i++) /* mutant 359: graph */
    u[g->outputs.data[i]] = 1; /* outputs count only when another group reads them */
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_inputs; k++) {
      int v = n->inputs[k];
      if (v >= 0 && g->values.data[v].kind == KILN_VALUE_NODE &&
          of_node[g->values.data[v].node] != of_node[i])
        u[v] = 1;
    }
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v) && !KILN_MUTANT(271);) u[v] = 1; /* mutant 271 */
  }
  return u;
}

/* The groups of the graph in node order; scratch is O(N + V) in all (each group's arrays
 * are sized by its own nodes: a 20,000-node graph once took O(N * (N + V)) here). */
static void collect_groups(kiln_lower_ctx *c, group_set *s) {
  kiln_groups_collect(c->g, &s->parts);
  s->n = s->parts.n;
  s->groups = kiln_arena_calloc(c->scratch, (size_t)s->n + 1, sizeof(kiln_group));
  for (int gi = 0; gi < s->n; gi++) {
    kiln_group *grp = &s->groups[gi];
    grp->nodes = &s->parts.nodes[s->parts.start[gi]];
    grp->n_nodes = s->parts.start[gi + 1] - s->parts.start[gi];
    grp->id = c->g->nodes.data[grp->nodes[0]].group;
    grp->anchor = -1;
  }
  int *u = outside_uses(c, s);
  int *seen = kiln_arena_calloc(c->scratch, (size_t)c->g->values.len + 1, sizeof(int));
  for (int gi = 0; gi < s->n; gi++) group_io(c, s, gi, u, seen);
}

/* ---- per-node decisions ---- */
static bool forced(const kiln_lower_opts *o, const kiln_node *n) {
  if (!o->force_fallback) return false;
  size_t len = strlen(n->op_type);
  for (const char *p = o->force_fallback; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == len && strncmp(p, n->op_type, l) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

static void add_fallback(kiln_lower_ctx *c, int node, const char *reason) {
  kiln_step s;
  memset(&s, 0, sizeof s);
  s.kind = KILN_STEP_FALLBACK;
  s.node = node;
  s.kernel = s.src = s.dst = s.check_arg = -1;
  s.reason = kiln_arena_strdup(c->prog->module->arena, reason);
  kiln_vec_push(&c->prog->steps, s);
  c->prog->n_fallback++;
}

/* An alias step when n only reinterprets input 0 (static types, same dtype and count). */
static bool try_alias(kiln_lower_ctx *c, const kiln_node *n) {
  if (!kiln_lower_row_of(n->op)->view || n->n_inputs < 1 || n->n_outputs < 1) return false;
  if (n->op == KILN_OP_Dropout) { /* inference only: no mask, no training_mode input */
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && !KILN_MUTANT(237)) return false; /* mutant 237 */
    if (n->n_inputs > 2 && n->inputs[2] >= 0) return false;
  }
  const kiln_type *a = kiln_lower_static(c->g, n->inputs[0]);
  const kiln_type *b = n->outputs[0] >= 0 ? kiln_lower_static(c->g, n->outputs[0]) : NULL;
  if (!a || !b || a->dtype != b->dtype || kiln_lower_numel(a) != kiln_lower_numel(b)) return false;
  kiln_step s;
  memset(&s, 0, sizeof s);
  s.kind = KILN_STEP_ALIAS;
  s.kernel = s.check_arg = -1;
  s.node = (int)(n - c->g->nodes.data);
  s.src = n->inputs[0];
  s.dst = n->outputs[0];
  kiln_vec_push(&c->prog->steps, s);
  return true;
}

/* Drops the kernels, steps and packed constants made after a mark (arena memory stays). */
typedef struct prog_mark {
  int steps, kernels, packed;
} prog_mark;

static prog_mark mark_now(const kiln_lower_ctx *c) {
  return (prog_mark){c->prog->steps.len, c->prog->module->kernels.len, c->prog->packed.len};
}

static void rollback(kiln_lower_ctx *c, prog_mark m) {
  c->prog->steps.len = m.steps;
  c->prog->module->kernels.len = m.kernels;
  c->prog->scheds.len = m.kernels;
  while (c->prog->packed.len > m.packed)
    kiln_tensor_free(c->prog->packed.data[--c->prog->packed.len]);
}

/* A group of one node: the lowering of its op's row (lower_table.c), or a fallback with the
 * row's reason. */
static kiln_status lower_single(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  const kiln_lower_row *row = kiln_lower_row_of(n->op);
  if (!row->lower) return kiln_unsupported("no lowering for %s: %s", n->op_type, row->reason);
  return row->lower(c, grp);
}

/* Lowers a group of one or more nodes into kernel steps; UNSUPPORTED when it cannot. */
static kiln_status lower_kernels(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_graph *g = c->g;
  for (int i = 0; i < grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[grp->nodes[i]];
    if (!kiln_lower_node_static(g, n))
      return kiln_unsupported("a value of %s is not a static tensor", n->op_type);
    if (forced(c->opts, n)) return kiln_unsupported("forced to fall back");
    const char *why = "not supported by the target";
    if (c->opts->supports_node && !c->opts->supports_node(g, n, &why))
      return kiln_unsupported("%s", why);
  }
  if (grp->n_nodes == 1) return lower_single(c, grp);
  /* a fused group: the lowering of its class (the fusion pass grouped by the same classes) */
  const kiln_node *first = &g->nodes.data[grp->nodes[0]];
  if (kiln_lower_is_contraction(g, first)) return kiln_lower_contraction(c, grp);
  bool all_ew = true, any_red = false;
  for (int i = 0; i < grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[grp->nodes[i]];
    all_ew &= kiln_lower_is_elementwise(g, n);
    any_red |= kiln_lower_is_reduction(g, n);
  }
  if (all_ew) return kiln_lower_ew_group(c, grp);
  if (any_red) return kiln_lower_reduce_group(c, grp);
  return kiln_unsupported("a group of ops from different classes");
}

/* Lowers a group; on UNSUPPORTED, drops the kernels and steps it made and tries its nodes
 * one by one (a multi-node group) or falls back (a single node). */
static kiln_status lower_group(kiln_lower_ctx *c, const kiln_group *grp);

static kiln_status lower_singletons(kiln_lower_ctx *c, const kiln_group *grp) {
  for (int i = 0; i < grp->n_nodes; i++) {
    kiln_group one = {0};
    one.id = 0;
    one.n_nodes = 1;
    one.nodes = &grp->nodes[i];
    one.anchor = -1;
    /* inputs/outputs of a single node: its own inputs and outputs */
    const kiln_node *n = &c->g->nodes.data[grp->nodes[i]];
    one.n_inputs = 0;
    one.inputs = kiln_arena_calloc(c->scratch, (size_t)n->n_inputs + 1, sizeof(int));
    for (int k = 0; k < n->n_inputs; k++) {
      bool seen = false;
      for (int j = 0; j < one.n_inputs; j++) seen |= one.inputs[j] == n->inputs[k];
      if (n->inputs[k] >= 0 && !seen) one.inputs[one.n_inputs++] = n->inputs[k];
    }
    one.outputs = kiln_arena_calloc(c->scratch, (size_t)n->n_outputs + 1, sizeof(int));
    for (int k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0) one.outputs[one.n_outputs++] = n->outputs[k];
    KILN_TRY(lower_group(c, &one));
  }
  return KILN_OK;
}

/* A group whose every output is an empty tensor (a zero extent, as from --dim N=0) has
 * nothing to compute: one kernel with no body defines its outputs. */
static bool lower_empty(kiln_lower_ctx *c, const kiln_group *grp) {
  if (grp->n_outputs == 0) return false;
  for (int i = 0; i < (KILN_MUTANT(272) ? 1 : grp->n_outputs); i++) { /* mutant 272: the first */
    /* mutant 340: the group's first input tested, not its outputs */
    const kiln_type *t = kiln_lower_static(
        c->g, KILN_MUTANT(340) && grp->n_inputs > 0 ? grp->inputs[0] : grp->outputs[i]);
    if (!t || kiln_lower_numel(t) != 0) return false;
  }
  kiln_step step;
  kiln_tkernel *k = kiln_lower_kernel(c, grp, "empty", &step);
  for (int i = 0; i < grp->n_outputs; i++) kiln_lower_param_value(c, k, &step, grp->outputs[i]);
  kiln_vec_push(&c->prog->steps, step); /* the outputs stay written (not read-only) */
  return true;
}

static kiln_status lower_group(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  for (int i = 0; i < grp->n_nodes; i++)
    KILN_TRY(kiln_op_check(c->g, &c->g->nodes.data[grp->nodes[i]]));
  prog_mark m = mark_now(c);
  if (!forced(c->opts, n) && lower_empty(c, grp)) return finish_schedules(c, m.kernels);
  if (grp->n_nodes == 1 && !forced(c->opts, n) && try_alias(c, n)) return KILN_OK;
  kiln_status st = lower_kernels(c, grp);
  if (!st) return finish_schedules(c, m.kernels);
  if (kiln_status_code(st) != KILN_ERR_UNSUPPORTED) return st;
  rollback(c, m);
  if (grp->n_nodes > 1) {
    kiln_status_free(st);
    return lower_singletons(c, grp);
  }
  char reason[256];
  snprintf(reason, sizeof reason, "%s", kiln_status_message(st));
  kiln_status_free(st);
  add_fallback(c, grp->nodes[0], reason);
  return KILN_OK;
}

/* ---- the driver ---- */
static kiln_status check_opts(const kiln_lower_opts *o) {
  if (o->target < 0 || o->target >= KILN_TARGET_COUNT)
    return kiln_invalid("unknown lowering target %d", (int)o->target);
  if (o->threads < 1) return kiln_invalid("lowering needs threads >= 1 (got %d)", o->threads);
  return KILN_OK;
}

/* Each group's scratch is freed after it (a group's lowering may size arrays by the graph's
 * value count: kept for the whole graph, they grew as O(groups * values)). */
static kiln_status lower_all(kiln_lower_ctx *c) {
  group_set s;
  collect_groups(c, &s);
  int *order = kiln_arena_calloc(c->scratch, (size_t)s.n + 1, sizeof(int));
  kiln_status st = kiln_groups_order(c->g, &s.parts, order);
  kiln_arena *whole = c->scratch;
  c->ew_val = kiln_xcalloc((size_t)c->g->values.len + 1, sizeof *c->ew_val);
  c->ew_uses = kiln_xcalloc((size_t)c->g->values.len + 1, sizeof *c->ew_uses);
  for (int i = 0; !st && i < s.n; i++) {
    c->scratch = kiln_arena_new();
    st = lower_group(c, &s.groups[KILN_MUTANT(396) ? i : order[i]]); /* mutant 396: by id */
    kiln_arena_free(c->scratch);
  }
  c->scratch = whole;
  free(c->ew_val);
  free(c->ew_uses);
  c->ew_val = NULL, c->ew_uses = NULL;
  kiln_groups_free(&s.parts);
  return st;
}

static kiln_status lower_program(kiln_graph *g, const kiln_lower_opts *opts, bool stress,
                                 kiln_sched_set *sched, kiln_program **out) {
  *out = NULL;
  kiln_lower_opts dflt = {.target = KILN_TARGET_CPU, .threads = 1};
  if (!opts) opts = &dflt;
  KILN_TRY(check_opts(opts));
  if (g->parent) return kiln_invalid("kiln_lower takes a root graph");
  kiln_program *p = kiln_xcalloc(1, sizeof *p);
  p->graph = g;
  p->module = kiln_tmodule_new();
  stress = (stress || opts->stress) && opts->threads > 1;
  p->module->lower_precision = opts->precision;
  p->target = opts->target;
  kiln_lower_ctx c = {g, opts, p, kiln_arena_new(), stress, sched, NULL, NULL};
  kiln_sched_set_reset_counts(sched);
  kiln_status st = lower_all(&c);
  if (!st) st = kiln_sched_set_check_used(sched);
  if (!st) st = kiln_program_verify(p);
  kiln_arena_free(c.scratch);
  if (st) {
    kiln_program_free(p);
    return kiln_status_annotate(st, "lowering graph '%s'", g->name);
  }
  *out = p;
  return KILN_OK;
}

kiln_status kiln_lower(kiln_graph *g, const kiln_lower_opts *opts, kiln_program **out) {
  return lower_program(g, opts, false, NULL, out);
}

kiln_status kiln_lower_scheduled(kiln_graph *g, const kiln_lower_opts *opts, kiln_sched_set *sched,
                                 kiln_program **out) {
  return lower_program(g, opts, false, sched, out);
}

kiln_status kiln_lower_stress(kiln_graph *g, const kiln_lower_opts *opts, kiln_program **out) {
  return lower_program(g, opts, true, NULL, out);
}

void kiln_program_free(kiln_program *p) {
  if (!p) return;
  for (int i = 0; i < p->packed.len; i++) kiln_tensor_free(p->packed.data[i]);
  kiln_vec_free(&p->packed);
  kiln_vec_free(&p->steps);
  kiln_vec_free(&p->scheds);
  kiln_tmodule_free(p->module);
  free(p);
}

/* ---- printing ---- */
static void print_arg(const kiln_program *p, const kiln_arg *a, kiln_strbuf *out) {
  switch (a->kind) {
  case KILN_ARG_VALUE: kiln_gtext_name(out, '%', p->graph->values.data[a->id].name); break;
  case KILN_ARG_PACKED: kiln_strbuf_printf(out, "packed[%d]", a->id); break;
  default: kiln_strbuf_printf(out, "scratch(%lld bytes)", (long long)a->bytes); break;
  }
}

static void print_step(const kiln_program *p, int i, const kiln_step *s, kiln_strbuf *out) {
  const kiln_graph *g = p->graph;
  char lb[200];
  kiln_strbuf_printf(out, "  %d: ", i);
  if (s->kind == KILN_STEP_KERNEL) {
    kiln_strbuf_printf(out, "kernel %s(", p->module->kernels.data[s->kernel]->name);
    for (int a = 0; a < s->n_args; a++) {
      if (a) kiln_strbuf_printf(out, ", ");
      print_arg(p, &s->args[a], out);
      if (s->inplace && s->inplace[a] >= 0) kiln_strbuf_printf(out, " inplace %d", s->inplace[a]);
    }
    kiln_strbuf_printf(out, ")\n");
  } else if (s->kind == KILN_STEP_ALIAS) {
    kiln_strbuf_printf(out, "alias ");
    kiln_gtext_name(out, '%', g->values.data[s->dst].name);
    kiln_strbuf_printf(out, " = ");
    kiln_gtext_name(out, '%', g->values.data[s->src].name);
    kiln_strbuf_printf(out, "\n");
  } else {
    kiln_strbuf_printf(out, "fallback ");
    kiln_esc_line(out, kiln_node_label(&g->nodes.data[s->node], lb, sizeof lb));
    kiln_strbuf_printf(out, ": ");
    kiln_esc_line(out, s->reason ? s->reason : "");
    kiln_strbuf_printf(out, "\n");
  }
}

/* Names from the model as in the graph IR text (quoted when not bare), labels and reasons as
 * escaped lines: one line per step whatever the names hold. */
void kiln_program_print(const kiln_program *p, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "program ");
  kiln_gtext_name(out, '@', p->graph->name);
  kiln_strbuf_printf(out, ": %d steps, %d kernels, %d fallbacks\n", p->steps.len,
                     p->module->kernels.len, p->n_fallback);
  for (int i = 0; i < p->steps.len; i++) print_step(p, i, &p->steps.data[i], out);
  kiln_tmodule_print(p->module, out);
}

kiln_fuse_class kiln_lower_fuse_class(const kiln_graph *g, const kiln_node *n) {
  if (kiln_lower_is_contraction(g, n)) return KILN_FUSE_CONTRACTION;
  if (kiln_lower_is_reduction(g, n)) return KILN_FUSE_REDUCTION;
  if (kiln_lower_is_elementwise(g, n)) return KILN_FUSE_ELEMENTWISE;
  return KILN_FUSE_OTHER;
}
