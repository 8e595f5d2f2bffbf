/* The program verifier: the dataflow of a lowered program's steps is consistent.
 *
 * Walking the steps in order, every value a step reads (a kernel's read-only parameter, a
 * fallback node's input or a value its subgraphs read, an alias source) is a graph input,
 * a constant or a value an earlier step defined; every value a step writes (a parameter the
 * kernel stores to, a fallback node's output, an alias target) is a node output that no
 * step defined before; every node output the graph returns is defined. A program that
 * breaks this is a bug of the lowering (a kernel bound to a value it never writes, groups
 * ordered against their data), reported as KILN_ERR_INTERNAL naming the step, its kernel
 * or node, and the value, before the memory planner or a run meets it. */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "lower_internal.h"

#define BUG "internal error (a bug in Kiln's lowering): "

typedef struct pv {
  const kiln_program *p;
  const kiln_graph *g;
  int *def; /* per value: defining step, or -1 */
} pv;

/* What step s is, for messages: "kernel k3_fused_ew (Div, Mul)" or "node 'x' (If)". */
static const char *step_label(const pv *v, int s, char *buf, size_t n) {
  const kiln_step *st = &v->p->steps.data[s];
  const kiln_tmodule *m = v->p->module;
  if (st->kind == KILN_STEP_KERNEL && m && st->kernel >= 0 && st->kernel < m->kernels.len) {
    const kiln_tkernel *k = m->kernels.data[st->kernel];
    snprintf(buf, n, "kernel %s (%s)", k->name, k->origin ? k->origin : "");
    return buf;
  }
  if (st->node >= 0 && st->node < v->g->nodes.len)
    return kiln_node_label(&v->g->nodes.data[st->node], buf, n);
  snprintf(buf, n, "step of kind %d", (int)st->kind);
  return buf;
}

static kiln_status bad_value(const pv *v, int s, int id) {
  char lb[256];
  return KILN_BUG(BUG "step %d (%s) refers to value %d of %d", s, step_label(v, s, lb, sizeof lb),
                  id, v->g->values.len);
}

static kiln_status read_value(const pv *v, int s, int id) {
  if (id < 0) return KILN_OK;
  if (id >= v->g->values.len) return bad_value(v, s, id);
  const kiln_value *val = &v->g->values.data[id];
  if (val->kind != KILN_VALUE_NODE || v->def[id] >= 0) return KILN_OK;
  char lb[256];
  return KILN_BUG(BUG "step %d (%s) reads '%s' before any step defines it", s,
                  step_label(v, s, lb, sizeof lb), val->name);
}

static kiln_status write_value(const pv *v, int s, int id) {
  if (id < 0 || id >= v->g->values.len) return bad_value(v, s, id);
  const kiln_value *val = &v->g->values.data[id];
  char lb[256];
  if (val->kind != KILN_VALUE_NODE)
    return KILN_BUG(BUG "step %d (%s) writes '%s', which no node computes", s,
                    step_label(v, s, lb, sizeof lb), val->name);
  if (v->def[id] >= 0)
    return KILN_BUG(BUG "'%s' is defined by step %d and by step %d (%s)", val->name, v->def[id], s,
                    step_label(v, s, lb, sizeof lb));
  v->def[id] = s;
  return KILN_OK;
}

/* A kernel's parameter is written when the kernel stores to it (not read-only). A value
 * bound to several parameters is read by all of them before the kernel writes it. */
static kiln_status check_kernel(const pv *v, const kiln_step *st, int s) {
  const kiln_tmodule *m = v->p->module;
  if (!m || st->kernel < 0 || st->kernel >= m->kernels.len)
    return KILN_BUG(BUG "step %d runs kernel %d of %d", s, st->kernel, m ? m->kernels.len : 0);
  const kiln_tkernel *k = m->kernels.data[st->kernel];
  for (int pass = 0; pass < 2; pass++) /* reads first, then writes */
    for (int a = 0; a < st->n_args; a++) {
      const kiln_arg *arg = &st->args[a];
      if (arg->kind != KILN_ARG_VALUE) continue;
      bool written = a < k->n_params && !k->bufs.data[a].readonly;
      if (!pass && !written) KILN_TRY(read_value(v, s, arg->id));
      if (pass && written) KILN_TRY(write_value(v, s, arg->id));
    }
  return KILN_OK;
}

/* Values of g that the subgraphs of node n read (OUTER values of its direct subgraphs). */
static kiln_status read_subgraph_outers(const pv *v, const kiln_node *n, int s) {
  kiln_outer_iter it = kiln_outer_reads(v->g, n);
  for (int id; kiln_outer_next(&it, &id);) KILN_TRY(read_value(v, s, id));
  return KILN_OK;
}

static kiln_status check_fallback(const pv *v, const kiln_step *st, int s) {
  if (st->node < 0 || st->node >= v->g->nodes.len)
    return KILN_BUG(BUG "fallback step %d runs node %d of %d", s, st->node, v->g->nodes.len);
  const kiln_node *n = &v->g->nodes.data[st->node];
  for (int i = 0; i < n->n_inputs; i++) KILN_TRY(read_value(v, s, n->inputs[i]));
  KILN_TRY(read_subgraph_outers(v, n, s));
  for (int i = 0; i < n->n_outputs; i++)
    if (n->outputs[i] >= 0) KILN_TRY(write_value(v, s, n->outputs[i]));
  return KILN_OK;
}

static kiln_status check_step(const pv *v, int s) {
  const kiln_step *st = &v->p->steps.data[s];
  switch (st->kind) {
  case KILN_STEP_KERNEL: return check_kernel(v, st, s);
  case KILN_STEP_FALLBACK: return check_fallback(v, st, s);
  case KILN_STEP_ALIAS:
    if (st->src < 0) return bad_value(v, s, st->src);
    KILN_TRY(read_value(v, s, st->src));
    return write_value(v, s, st->dst);
  default: return KILN_BUG(BUG "step %d has kind %d", s, (int)st->kind);
  }
}

kiln_status kiln_program_verify(const kiln_program *p) {
  const kiln_graph *g = p->graph;
  pv v = {p, g, kiln_xmalloc(sizeof(int) * ((size_t)g->values.len + 1))};
  for (int i = 0; i < g->values.len; i++) v.def[i] = -1;
  kiln_status st = KILN_OK;
  for (int s = 0; s < p->steps.len && !st; s++) st = check_step(&v, s);
  for (int i = 0; i < g->outputs.len && !st; i++) {
    int id = g->outputs.data[i];
    if (id >= 0 && id < g->values.len && g->values.data[id].kind == KILN_VALUE_NODE &&
        v.def[id] < 0)
      st = KILN_BUG(BUG "no step computes graph output '%s'", g->values.data[id].name);
  }
  free(v.def);
  return st;
}
