/* The features of a lowered program: what its compiled code is made of, as hashed tuples
 * (kiln_verify_result.features), for a fuzzer that compiles the graphs whose code holds
 * something it has rarely compiled (kiln_verify_opts.gate).
 *
 * A feature is a small tuple of what C generation, the memory plan and the executor branch
 * on: each expression's operation with its result type, each cast's pair of
 * types, each load and store by element type and scope, each constant's type, each loop
 * kind by depth, the MMA statements by types and by the shape classes a register tile cares
 * about (one row or column, a multiple of the tile, a tail), each kernel's schedule, the
 * steps that are not kernels (fallbacks by op, views by type), in-place candidates and
 * checked accesses, the values of the program's graph by type and rank 0 or not, and how
 * they are bound (graph input or output, read once or more, an output that is also read).
 * Operand types, loop depths, values and sizes beyond those classes are not features: a
 * campaign of a minute meets each feature early, and then compiles for the base rate. */
#include <string.h>

#include "lower/lower.h"
#include "lower/schedule.h"
#include "runner_internal.h"

enum {
  F_OP = 1,
  F_CAST,
  F_LOAD,
  F_CONST,
  F_LOOP,
  F_STORE,
  F_MMA,
  F_IF,
  F_SCHED,
  F_FALLBACK,
  F_ALIAS,
  F_INPLACE,
  F_CHECK,
  F_VALUE,
  F_BIND
};

static void add(kiln_verify_result *res, int tag, int a, int b, int c, int d) {
  int32_t t[5] = {tag, a, b, c, d};
  uint32_t h = (uint32_t)kiln_hash_bytes(t, sizeof t, 0x6b696c6eu);
  for (int i = 0; i < res->n_features; i++)
    if (res->features[i] == h) return;
  if (res->n_features < KILN_VERIFY_FEATURES) res->features[res->n_features++] = h;
}

static void expr_features(kiln_verify_result *res, const kiln_tkernel *k, const kiln_texpr *e) {
  if (!e) return;
  switch (e->kind) {
  case KILN_TE_OP: {
    add(res, F_OP, (int)e->op, (int)e->type, 0, 0);
    break;
  }
  case KILN_TE_CAST: add(res, F_CAST, (int)e->args[0]->type, (int)e->type, 0, 0); break;
  case KILN_TE_LOAD:
    add(res, F_LOAD, (int)k->bufs.data[e->buf].dtype, (int)k->bufs.data[e->buf].scope, 0, 0);
    break;
  case KILN_TE_FLOAT: add(res, F_CONST, (int)e->type, 0, 0, 0); break;
  default: break;
  }
  expr_features(res, k, e->index);
  for (int i = 0; i < 3; i++) expr_features(res, k, e->args[i]);
}

/* A register tile's view of an extent: one, a multiple of `tile`, less than it, a tail. */
static int extent_class(int64_t x, int64_t tile) {
  return x == 1 ? 0 : x % tile == 0 ? 1 : x < tile ? 2 : 3;
}

static void block_features(kiln_verify_result *res, const kiln_tkernel *k, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    switch (s->kind) {
    case KILN_TS_FOR:
      add(res, F_LOOP, (int)s->loop, 0, 0, 0);
      expr_features(res, k, s->extent);
      block_features(res, k, &s->body);
      break;
    case KILN_TS_IF:
      add(res, F_IF, s->orelse.len > 0, 0, 0, 0);
      expr_features(res, k, s->cond);
      block_features(res, k, &s->body);
      block_features(res, k, &s->orelse);
      break;
    case KILN_TS_STORE:
      add(res, F_STORE, (int)k->bufs.data[s->buf].dtype, (int)k->bufs.data[s->buf].scope, 0, 0);
      expr_features(res, k, s->index);
      expr_features(res, k, s->value);
      break;
    case KILN_TS_ASSIGN: expr_features(res, k, s->value); break;
    case KILN_TS_MMA: {
      const kiln_tmma *m = &s->mma;
      add(res, F_MMA, (int)k->bufs.data[m->c_buf].dtype, (int)k->bufs.data[m->a_buf].dtype,
          extent_class(m->m, 8), extent_class(m->n, 16));
      break;
    }
    default: break;
    }
  }
}

/* How often value v of g is read (0, 1, more), counting graph outputs as reads. */
static int reads(const kiln_graph *g, int v) {
  int n = 0;
  for (int i = 0; i < g->nodes.len && n < 2; i++)
    for (int j = 0; j < g->nodes.data[i].n_inputs; j++) n += g->nodes.data[i].inputs[j] == v;
  return n < 2 ? n : 2;
}

static void value_features(kiln_verify_result *res, const kiln_graph *g) {
  for (int v = 0; v < g->values.len; v++) {
    const kiln_value *x = &g->values.data[v];
    if (x->kind != KILN_VALUE_NODE && x->kind != KILN_VALUE_INPUT) continue;
    int shape = x->type.rank == 0 ? 0 : x->type.rank < 0 ? 2 : 1;
    add(res, F_VALUE, (int)x->type.dtype, shape, 0, 0);
    add(res, F_BIND, x->kind == KILN_VALUE_INPUT, kiln_graph_is_output(g, v), reads(g, v), 0);
  }
}

void kiln_vrun_features(kiln_verify_result *res, const kiln_program *p) {
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind == KILN_STEP_FALLBACK)
      add(res, F_FALLBACK, (int)p->graph->nodes.data[s->node].op, 0, 0, 0);
    else if (s->kind == KILN_STEP_ALIAS)
      add(res, F_ALIAS, (int)p->graph->values.data[s->dst].type.dtype, 0, 0, 0);
    if (s->kind != KILN_STEP_KERNEL) continue;
    const kiln_tkernel *k = p->module->kernels.data[s->kernel];
    if (s->kernel < p->scheds.len) {
      const kiln_sched *sc = &p->scheds.data[s->kernel];
      add(res, F_SCHED, (int)sc->kind, (int)sc->micro, (int)sc->par, 0);
    }
    for (int a = 0; s->inplace && a < s->n_args; a++)
      if (s->inplace[a] >= 0) add(res, F_INPLACE, (int)k->bufs.data[a].dtype, 0, 0, 0);
    if (s->check_arg >= 0) add(res, F_CHECK, 0, 0, 0, 0);
    block_features(res, k, &k->body);
  }
  value_features(res, p->graph);
}
