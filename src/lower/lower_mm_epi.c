/* The epilogue of a contraction group: what happens to one accumulated element before it
 * is stored. The anchor's own head (Gemm's alpha and beta*C, Conv's bias) comes first, then
 * the chain of elementwise nodes that fusion put after the anchor, each taking the previous
 * result and, optionally, operands from outside the group broadcast to the output shape.
 * Every value of the chain that is a group output is stored. */
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_mm.h"

struct kiln_mm_epi {
  kiln_lower_ctx *c;
  int rank;
  int64_t dims[KILN_MAX_RANK];
  kiln_dtype acc_type;
  int anchor_out;
  kiln_mm_head head;
  kiln_mm_operand bias;
  int n_chain;
  const kiln_node **chain;
  int **slot; /* slot[i][j]: operand index of input j of chain node i; -1 previous; -2 none */
  int n_ops;
  kiln_mm_operand *ops;
  int n_out;
  int *out_val, *out_buf;
  int n_tmp; /* temporaries made so far (for their names) */
};

int kiln_mm_epi_rank(const kiln_mm_epi *e) {
  return e->rank;
}

const int64_t *kiln_mm_epi_dims(const kiln_mm_epi *e) {
  return e->dims;
}

static const kiln_type *static_type(const kiln_graph *g, int v) {
  if (v < 0 || v >= g->values.len) return NULL;
  const kiln_type *t = &g->values.data[v].type;
  if (t->kind != KILN_TYPE_TENSOR || !kiln_type_is_static(t)) return NULL;
  return t;
}

/* Strides of a value of type t broadcast (numpy, right-aligned) to dims; false when t
 * does not broadcast to dims without changing them. */
static bool bcast_strides(const kiln_type *t, int rank, const int64_t *dims, int64_t *str) {
  if (t->rank > rank) return false;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    int td = d - (rank - t->rank);
    int64_t e = td >= 0 ? t->dims[td].value : 1;
    if (e != 1 && e != dims[d]) return false;
    str[d] = e == 1 ? 0 : s;
    s *= KILN_MUTANT(270) ? dims[d] : e; /* mutant 270: the output's extent, not the operand's */
  }
  return true;
}

static bool in_group(const kiln_group *grp, int node) {
  for (int i = 0; i < grp->n_nodes; i++)
    if (grp->nodes[i] == node) return true;
  return false;
}

static bool same_shape(const kiln_type *t, int rank, const int64_t *dims) {
  if (t->rank != rank) return false;
  for (int d = 0; d < rank; d++)
    if (t->dims[d].value != dims[d]) return false;
  return true;
}

/* Checks chain node n, whose previous result is value prev. */
static kiln_status check_link(const kiln_graph *g, const kiln_group *grp, const kiln_node *n,
                              int prev, int rank, const int64_t *dims) {
  char lb[128];
  kiln_node_label(n, lb, sizeof lb);
  if (!kiln_lower_is_elementwise(g, n))
    return kiln_unsupported("%s: not an elementwise epilogue", lb);
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return kiln_unsupported("%s: epilogue node without a result", lb);
  for (int j = 1; j < n->n_outputs; j++)
    if (n->outputs[j] >= 0) return kiln_unsupported("%s: epilogue node with two results", lb);
  const kiln_type *ot = static_type(g, n->outputs[0]);
  if (!ot || !same_shape(ot, rank, dims))
    return kiln_unsupported("%s: epilogue changes the output shape", lb);
  bool uses_prev = false;
  for (int j = 0; j < n->n_inputs; j++) {
    int v = n->inputs[j];
    if (v < 0) continue;
    if (v == prev) {
      uses_prev = true;
      continue;
    }
    const kiln_value *val = &g->values.data[v];
    if (val->kind == KILN_VALUE_NODE && in_group(grp, val->node))
      return kiln_unsupported("%s: epilogue operand computed inside the group", lb);
    int64_t str[KILN_MAX_RANK];
    const kiln_type *t = static_type(g, v);
    if (!t || !bcast_strides(t, rank, dims, str))
      return kiln_unsupported("%s: epilogue operand does not broadcast to the output", lb);
  }
  if (!uses_prev) return kiln_unsupported("%s: epilogue does not take the previous result", lb);
  return KILN_OK;
}

kiln_status kiln_mm_epi_check(const kiln_graph *g, const kiln_group *grp) {
  if (grp->anchor < 0) return kiln_invalid("contraction group without an anchor");
  const kiln_node *a = &g->nodes.data[grp->anchor];
  const kiln_type *t = static_type(g, a->outputs[0]);
  if (!t) return kiln_unsupported("contraction output is not static");
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  int prev = a->outputs[0];
  for (int i = 0; i < grp->n_nodes; i++) {
    if (grp->nodes[i] == grp->anchor) continue;
    const kiln_node *n = &g->nodes.data[grp->nodes[i]];
    KILN_TRY(check_link(g, grp, n, prev, t->rank, dims));
    prev = n->outputs[0];
  }
  return KILN_OK;
}

static bool is_group_output(const kiln_group *grp, int v) {
  for (int i = 0; i < grp->n_outputs; i++)
    if (grp->outputs[i] == v) return true;
  return false;
}

/* The operand index of value v (adding a parameter the first time). */
static int operand_of(kiln_mm_epi *e, kiln_tkernel *k, kiln_step *step, int v) {
  kiln_graph *g = e->c->g;
  int buf = kiln_lower_param_value(e->c, k, step, v);
  for (int i = 0; i < e->n_ops; i++)
    if (e->ops[i].buf == buf) return i;
  kiln_mm_operand *op = &e->ops[e->n_ops];
  op->buf = buf;
  bcast_strides(&g->values.data[v].type, e->rank, e->dims, op->strides);
  return e->n_ops++;
}

static kiln_status prepare_chain(kiln_mm_epi *e, const kiln_group *grp, kiln_tkernel *k,
                                 kiln_step *step) {
  kiln_graph *g = e->c->g;
  kiln_arena *a = e->c->scratch;
  e->chain = kiln_arena_calloc(a, (size_t)grp->n_nodes, sizeof *e->chain);
  e->slot = kiln_arena_calloc(a, (size_t)grp->n_nodes, sizeof *e->slot);
  int max_ops = 0;
  for (int i = 0; i < grp->n_nodes; i++) max_ops += g->nodes.data[grp->nodes[i]].n_inputs;
  e->ops = kiln_arena_calloc(a, (size_t)max_ops + 1, sizeof *e->ops);
  int prev = e->anchor_out;
  for (int i = 0; i < grp->n_nodes; i++) {
    if (grp->nodes[i] == grp->anchor) continue;
    const kiln_node *n = &g->nodes.data[grp->nodes[i]];
    int *slot = kiln_arena_calloc(a, (size_t)n->n_inputs + 1, sizeof *slot);
    for (int j = 0; j < n->n_inputs; j++) {
      int v = n->inputs[j];
      slot[j] = v < 0 ? -2 : v == prev ? -1 : operand_of(e, k, step, v);
    }
    e->slot[e->n_chain] = slot;
    e->chain[e->n_chain++] = n;
    prev = n->outputs[0];
  }
  return KILN_OK;
}

static void prepare_outputs(kiln_mm_epi *e, const kiln_group *grp, kiln_tkernel *k,
                            kiln_step *step) {
  kiln_arena *a = e->c->scratch;
  e->out_val = kiln_arena_calloc(a, (size_t)e->n_chain + 1, sizeof *e->out_val);
  e->out_buf = kiln_arena_calloc(a, (size_t)e->n_chain + 1, sizeof *e->out_buf);
  for (int i = -1; i < e->n_chain; i++) {
    int v = i < 0 ? e->anchor_out : e->chain[i]->outputs[0];
    bool last = i == e->n_chain - 1;
    if (!last && !is_group_output(grp, v)) continue;
    e->out_val[e->n_out] = v;
    e->out_buf[e->n_out++] = kiln_lower_param_value(e->c, k, step, v);
  }
}

kiln_status kiln_mm_epi_prepare(kiln_lower_ctx *c, const kiln_group *grp, kiln_tkernel *k,
                                kiln_step *step, const kiln_mm_head *head, kiln_mm_epi **out) {
  KILN_TRY(kiln_mm_epi_check(c->g, grp));
  kiln_mm_epi *e = kiln_arena_calloc(c->scratch, 1, sizeof *e);
  e->c = c;
  const kiln_node *a = &c->g->nodes.data[grp->anchor];
  e->anchor_out = a->outputs[0];
  const kiln_type *t = &c->g->values.data[e->anchor_out].type;
  e->rank = t->rank;
  for (int d = 0; d < t->rank; d++) e->dims[d] = t->dims[d].value;
  e->acc_type = kiln_precision_accumulate(c->opts->precision, KILN_PREC_CONTRACTION, t->dtype);
  e->head = *head;
  if (head->bias >= 0) {
    e->bias.buf = kiln_lower_param_value(c, k, step, head->bias);
    memcpy(e->bias.strides, head->bias_strides, sizeof e->bias.strides);
  }
  KILN_TRY(prepare_chain(e, grp, k, step));
  prepare_outputs(e, grp, k, step);
  *out = e;
  return KILN_OK;
}

/* ---- emitting ---- */

static kiln_texpr *operand_index(kiln_tkernel *k, const kiln_mm_epi *e, const int64_t *str,
                                 const kiln_mm_coord *co) {
  kiln_texpr *idx = kiln_tint(k, 0);
  for (int i = 0; i < co->n; i++)
    idx = kiln_tadd(k, idx,
                    kiln_mm_batch_offset(k, co->e[i], co->hi[i] - co->lo[i], e->dims + co->lo[i],
                                         str + co->lo[i]));
  return idx;
}

static kiln_texpr *output_index(kiln_tkernel *k, const kiln_mm_epi *e, const kiln_mm_coord *co) {
  int64_t str[KILN_MAX_RANK], s = 1;
  for (int d = e->rank - 1; d >= 0; d--) {
    str[d] = s;
    s *= e->dims[d];
  }
  return operand_index(k, e, str, co);
}

static void store_if_output(kiln_mm_epi *e, kiln_tkernel *k, kiln_tblock *blk, int v,
                            kiln_texpr *val, kiln_texpr *oidx) {
  for (int i = 0; i < e->n_out; i++) {
    if (e->out_val[i] != v) continue;
    kiln_dtype dt = e->c->g->values.data[v].type.dtype;
    kiln_tblock_push(k, blk,
                     kiln_tstore(k, e->out_buf[i], oidx, kiln_lower_to_storage(k, dt, val)));
  }
}

static kiln_texpr *emit_head(kiln_mm_epi *e, kiln_tkernel *k, const kiln_mm_coord *co,
                             kiln_texpr *v) {
  /* mutant 355: alpha applied only together with C (a Gemm without C left unscaled) */
  bool late = KILN_MUTANT(416); /* mutant 416: alpha applied after beta*C is added */
  if (e->head.alpha != 1.0 && (!KILN_MUTANT(355) || e->head.bias >= 0) && !late)
    v = kiln_tbin(k, KILN_TOP_MUL, v, kiln_tfloat(k, e->acc_type, e->head.alpha));
  if (e->head.bias >= 0 && e->head.beta != 0.0) {
    kiln_texpr *b = kiln_lower_load(k, KILN_PREC_ELEMENTWISE, e->bias.buf,
                                    operand_index(k, e, e->bias.strides, co));
    b = kiln_tcast(k, e->acc_type, b);
    if (e->head.beta != 1.0)
      b = kiln_tbin(k, KILN_TOP_MUL, b, /* mutant 39: C scaled by alpha */
                    kiln_tfloat(k, e->acc_type, KILN_MUTANT(39) ? e->head.alpha : e->head.beta));
    v = kiln_tbin(k, KILN_TOP_ADD, v, b);
  }
  if (late && e->head.alpha != 1.0)
    v = kiln_tbin(k, KILN_TOP_MUL, v, kiln_tfloat(k, e->acc_type, e->head.alpha));
  return v;
}

/* Holds v in a fresh variable so later uses do not copy its expression tree. */
static kiln_texpr *materialize(kiln_mm_epi *e, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *v) {
  if (v->kind == KILN_TE_VAR || v->kind == KILN_TE_LOAD) return v;
  char name[32];
  snprintf(name, sizeof name, "ep%d", e->n_tmp++);
  int var = kiln_tkernel_var(k, name, v->type);
  kiln_tblock_push(k, blk, kiln_tassign(k, var, v));
  return kiln_tv(k, var);
}

kiln_status kiln_mm_epi_emit(kiln_mm_epi *e, kiln_tkernel *k, kiln_tblock *blk,
                             const kiln_mm_coord *co, kiln_texpr *acc) {
  kiln_texpr *oidx = output_index(k, e, co);
  kiln_texpr *v = emit_head(e, k, co, acc);
  if (e->n_chain > 0) v = materialize(e, k, blk, v);
  store_if_output(e, k, blk, e->anchor_out, v, oidx);
  for (int i = 0; i < e->n_chain; i++) {
    const kiln_node *n = e->chain[i];
    kiln_texpr *operands[16] = {0};
    if (n->n_inputs > 16) return kiln_unsupported("epilogue node with more than 16 inputs");
    for (int j = 0; j < n->n_inputs; j++) {
      int s = e->slot[i][j];
      if (s == -1) operands[j] = v;
      else if (s >= 0)
        operands[j] = kiln_lower_load(k, KILN_PREC_ELEMENTWISE, e->ops[s].buf,
                                      operand_index(k, e, e->ops[s].strides, co));
    }
    KILN_TRY(kiln_lower_ew_expr(e->c, k, n, operands, &v));
    if (i + 1 < e->n_chain) v = materialize(e, k, blk, v);
    store_if_output(e, k, blk, n->outputs[0], v, oidx);
  }
  return KILN_OK;
}
