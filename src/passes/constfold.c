/* Pass constfold: a node all of whose inputs are constants is evaluated now with its
 * reference kernel, and its outputs become constants (named as the outputs were). Nodes are
 * visited in topological order, so whole chains of constant arithmetic fold in one sweep.
 *
 * Not folded: random ops (and Dropout), ops of other domains, nodes with subgraphs, nodes
 * with sequence or optional results, and results that would grow the model: an output of
 * more than max(total input elements, FOLD_GROWTH) elements stays a node (ConstantOfShape
 * or Expand of a scalar into a big tensor is cheaper computed than stored). A kernel that
 * fails, or computes a type other than the inferred one, leaves the node as it is.
 *
 * Nothing large is computed to be thrown away: an output whose inferred type is already
 * over that size is not evaluated, and the kernel runs under a memory limit narrowed to
 * what a kept result and its scratch could need (a ConstantOfShape whose shape is computed
 * by the graph fails its allocation instead of materializing the tensor the model only
 * describes). */
#include <stdlib.h>

#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

enum { FOLD_GROWTH = 1 << 16, FOLD_MAX_IO = 16 };

static bool foldable(const kiln_rw *rw, const kiln_node *n, int64_t *in_elems) {
  if (n->op == KILN_OP_UNKNOWN || kiln_rw_is_random(n->op) || kiln_node_has_subgraph(n))
    return false;
  if (!kiln_op_get(n->op)->eval || n->n_outputs < 1 || n->n_outputs > FOLD_MAX_IO ||
      n->n_inputs > FOLD_MAX_IO)
    return false;
  *in_elems = 0;
  for (int k = 0; k < n->n_inputs; k++) {
    const kiln_tensor *t = kiln_rw_const(rw->g, n->inputs[k]);
    if (n->inputs[k] >= 0 && !t) return false;
    if (t) *in_elems += t->numel;
  }
  bool used = false;
  for (int k = 0; k < n->n_outputs; k++) {
    int v = n->outputs[k];
    if (v < 0) continue;
    if (rw->pinned[v]) return false;
    used |= rw->uses[v] > 0;
  }
  return used;
}

/* The computed tensor must agree with the inferred type where that is known. */
static bool agrees(const kiln_type *t, const kiln_val *v) {
  if (!v || v->kind != KILN_TYPE_TENSOR || !v->t) return false;
  if (t->kind == KILN_TYPE_UNKNOWN) return true;
  if (t->kind != KILN_TYPE_TENSOR || (t->dtype && t->dtype != v->t->dtype)) return false;
  if (t->rank < 0) return true;
  if (t->rank != v->t->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i].value >= 0 && t->dims[i].value != v->t->dims[i]) return false;
  return true;
}

/* False when an output's inferred (static) type already has more than `limit` elements. */
static bool outputs_small(const kiln_graph *g, const kiln_node *n, int64_t limit) {
  for (int k = 0; k < n->n_outputs; k++) {
    if (n->outputs[k] < 0) continue;
    const kiln_type *t = &g->values.data[n->outputs[k]].type;
    if (t->kind != KILN_TYPE_TENSOR || t->rank < 0) continue;
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++)
      if (t->dims[d].value >= 0 && kiln_mul_overflow_i64(numel, t->dims[d].value, &numel))
        return false;
    if (numel > limit) return false;
  }
  return true;
}

/* Bytes a fold may allocate: its largest kept result (16-byte elements) four times over. */
static int64_t fold_budget(int64_t in_elems) {
  int64_t keep = in_elems > FOLD_GROWTH ? in_elems : FOLD_GROWTH, b;
  return kiln_mul_overflow_i64(keep, 64, &b) ? INT64_MAX : b + ((int64_t)1 << 20);
}

/* Evaluates node i; out[k] receives its results (NULL when it cannot be folded). */
static bool evaluate(kiln_graph *g, int i, int64_t in_elems, kiln_val **out) {
  const kiln_node *n = &g->nodes.data[i];
  kiln_val *in[FOLD_MAX_IO] = {0};
  for (int k = 0; k < n->n_outputs; k++) out[k] = NULL;
  for (int k = 0, j = 0; k < n->n_inputs; k++)
    if (n->inputs[k] >= 0)            /* mutant 13: every operand read from input 0 */
      in[KILN_MUTANT(98) ? j++ : k] = /* mutant 98: omitted inputs closed up */
          kiln_val_tensor(g->values.data[n->inputs[KILN_MUTANT(13) ? 0 : k]].data);
  kiln_status st = kiln_op_check(g, n);
  int64_t limit = kiln_mem_limit(), cap = kiln_mem_in_use(), prev = 0;
  bool narrow = n->op != KILN_OP_Constant &&
                !kiln_add_overflow_i64(cap, fold_budget(in_elems), &cap) && cap < limit;
  if (narrow) prev = kiln_mem_push_limit(cap);
  if (!st) {
    kiln_eval_ctx ec = {g, n, n->n_inputs, in, n->n_outputs, out, NULL};
    st = kiln_op_get(n->op)->eval(&ec);
  }
  if (narrow) kiln_mem_pop_limit(prev);
  for (int k = 0; k < n->n_inputs; k++)
    if (in[k]) in[k]->t = NULL, kiln_val_free(in[k]); /* shells over the graph's data */
  bool ok = !st;
  kiln_status_free(st);
  for (int k = 0; ok && k < n->n_outputs; k++)
    if (n->outputs[k] >= 0) ok = agrees(&g->values.data[n->outputs[k]].type, out[k]);
  return ok;
}

static void free_vals(kiln_val **v, int n) {
  for (int k = 0; k < n; k++) kiln_val_free(v[k]), v[k] = NULL;
}

/* Replaces the used outputs of node i by constants made of out[]; takes the tensors. */
static kiln_status install(kiln_rw *rw, int i, kiln_val **out) {
  int n_out = rw->g->nodes.data[i].n_outputs;
  for (int k = 0; k < n_out; k++) {
    int v = rw->g->nodes.data[i].outputs[k];
    if (v < 0 || rw->uses[v] == 0 || !out[k]) continue;
    kiln_tensor *t = out[k]->t;
    if (KILN_MUTANT(298) && out[0] && out[0]->t) /* mutant 298: every output from result 0 */
      KILN_TRY(kiln_tensor_clone(out[0]->t, &t));
    else out[k]->t = NULL;
    int c;
    KILN_TRY(kiln_rw_add_const(rw, t, &c));
    bool was_output = rw->is_output[v];
    kiln_rw_replace(rw, v, c); /* cannot fail: v is not pinned, c is a fresh constant */
    if (!was_output) kiln_rw_swap_names(rw, v, c); /* the constant keeps the name */
  }
  if (kiln_rw_node_unused(rw, i)) kiln_rw_kill_node(rw, i);
  return KILN_OK;
}

static int64_t fold_limit(int64_t in_elems) {
  return in_elems > FOLD_GROWTH ? in_elems : FOLD_GROWTH;
}

static bool small_enough(kiln_val **out, int n_out, int64_t in_elems) {
  int64_t limit = fold_limit(in_elems);
  for (int k = 0; k < n_out; k++)
    if (out[k] && out[k]->t && out[k]->t->numel > limit) return false;
  return true;
}

kiln_status kiln_pass_constfold(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  kiln_status st = KILN_OK;
  int n_nodes = g->nodes.len; /* nodes added on the way are constants' consumers: none */
  for (int i = 0; i < n_nodes && !st; i++) {
    int64_t in_elems;
    if (rw.dead_node[i] || !foldable(&rw, &g->nodes.data[i], &in_elems)) continue;
    kiln_val *out[FOLD_MAX_IO];
    int n_out = g->nodes.data[i].n_outputs;
    bool is_const_op = g->nodes.data[i].op == KILN_OP_Constant;
    if (!is_const_op && !outputs_small(g, &g->nodes.data[i], fold_limit(in_elems))) continue;
    if (evaluate(g, i, in_elems, out) && (is_const_op || small_enough(out, n_out, in_elems))) {
      st = install(&rw, i, out);
      ctx->changes++;
    }
    free_vals(out, n_out);
  }
  if (st) {
    kiln_rw_abort(&rw);
    return st;
  }
  return kiln_rw_end(&rw);
}
