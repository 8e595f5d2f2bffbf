/* Pooling lowering: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool over 1 to 3
 * spatial dimensions (NC...). One kernel: loops over N, C (parallel) and the output's
 * spatial positions, then serial loops over the window with a bounds guard; padded positions
 * are skipped (max) or counted only with count_include_pad and only within the explicit
 * padding (as the reference does with ceil_mode). Sums accumulate in F64. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "graph/window.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef struct pool {
  bool max, global, count_pad;
  int sp; /* spatial dims */
  int64_t in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  int64_t kernel[3], stride[3], dil[3], pad_lo[3], pad_hi[3];
} pool;

static kiln_status ints_attr(const kiln_node *n, const char *name, int sp, int64_t dflt,
                             int64_t *out, int want) {
  const int64_t *v;
  int len;
  KILN_TRY(kiln_node_ints(n, name, &v, &len));
  for (int i = 0; i < want; i++) out[i] = len < 0 ? dflt : (i < len ? v[i] : dflt);
  if (len >= 0 && len != want)
    return kiln_invalid("%s: %s has %d values, not %d", n->op_type, name, len, want);
  (void)sp;
  return KILN_OK;
}

/* Padding (graph/window.h): the pads attribute, or what auto_pad makes of it. The output
 * extents are inference's, which resolved the same windows. */
static kiln_status pads(const kiln_node *n, pool *p) {
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(n, &wa));
  kiln_auto_pad autopad = wa.auto_pad;
  int64_t pv[6];
  if (autopad == KILN_AUTO_PAD_NOTSET) KILN_TRY(ints_attr(n, "pads", p->sp, 0, pv, 2 * p->sp));
  else memset(pv, 0, sizeof pv);
  for (int d = 0; d < p->sp; d++) {
    int64_t pb = pv[d], pe = pv[p->sp + d];
    if (KILN_MUTANT(108)) pb = pv[2 * d], pe = pv[2 * d + 1]; /* mutant 108: [b0, e0, b1, e1] */
    kiln_window_dim w = {p->in[2 + d], p->kernel[d], p->stride[d], p->dil[d], pb, pe, 0};
    kiln_auto_pad ap = autopad; /* mutant 66: SAME_LOWER padded as SAME_UPPER */
    if (KILN_MUTANT(66) && ap == KILN_AUTO_PAD_SAME_LOWER) ap = KILN_AUTO_PAD_SAME_UPPER;
    if (kiln_window_resolve(&w, ap, false) != KILN_WINDOW_OK)
      return kiln_invalid("%s: bad window", n->op_type);
    p->pad_lo[d] = w.pad_begin;
    p->pad_hi[d] = w.pad_end;
  }
  return KILN_OK;
}

static kiln_status pool_geometry(const kiln_graph *g, const kiln_node *n, pool *p) {
  const kiln_type *x = kiln_lower_static(g, n->inputs[0]), *y = kiln_lower_static(g, n->outputs[0]);
  if (!x || !y || x->rank < 3 || x->rank > 5 || y->rank != x->rank)
    return kiln_unsupported("%s: needs 1 to 3 spatial dimensions", n->op_type);
  if (!kiln_dtype_is_float(x->dtype) || !kiln_lower_dtype_ok(x->dtype))
    return kiln_unsupported("%s: %s data", n->op_type, kiln_dtype_name(x->dtype));
  if (n->n_outputs > 1 && n->outputs[1] >= 0) return kiln_unsupported("MaxPool with Indices");
  memset(p, 0, sizeof *p);
  p->sp = x->rank - 2;
  for (int d = 0; d < x->rank; d++) p->in[d] = x->dims[d].value, p->out[d] = y->dims[d].value;
  p->max = n->op == KILN_OP_MaxPool || n->op == KILN_OP_GlobalMaxPool;
  p->global = n->op == KILN_OP_GlobalMaxPool || n->op == KILN_OP_GlobalAveragePool;
  for (int d = 0; d < p->sp; d++) p->stride[d] = p->dil[d] = 1;
  if (p->global) {
    for (int d = 0; d < p->sp; d++) /* mutant 176: every kernel dim from the first */
      p->kernel[d] = p->in[KILN_MUTANT(176) ? 2 : 2 + d];
    return KILN_OK;
  }
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(n, &wa));
  p->count_pad = wa.count_include_pad;
  KILN_TRY(ints_attr(n, "kernel_shape", p->sp, 1, p->kernel, p->sp));
  KILN_TRY(ints_attr(n, "strides", p->sp, KILN_MUTANT(67) ? p->kernel[0] : 1, p->stride,
                     p->sp)); /* mutant 67: absent strides default to the kernel size */
  KILN_TRY(ints_attr(n, "dilations", p->sp, 1, p->dil, p->sp));
  return pads(n, p);
}

static bool is_pool(kiln_op op) {
  return op == KILN_OP_MaxPool || op == KILN_OP_AveragePool || op == KILN_OP_GlobalMaxPool ||
         op == KILN_OP_GlobalAveragePool;
}

static kiln_texpr *and_(kiln_tkernel *k, kiln_texpr *a, kiln_texpr *b) {
  return a ? kiln_tbin(k, KILN_TOP_AND, a, b) : b;
}

kiln_status kiln_lower_pool_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_graph *g = c->g;
  const kiln_node *n = &g->nodes.data[grp->nodes[0]];
  if (!is_pool(n->op) || grp->n_nodes != 1)
    return KILN_BUG("the lowering table sent %s to the pooling lowering", n->op_type);
  pool p;
  KILN_TRY(pool_geometry(g, n, &p));
  kiln_step step;
  kiln_tkernel *k = kiln_lower_kernel(c, grp, n->op_type, &step);
  int xb = kiln_lower_param_value(c, k, &step, n->inputs[0]);
  int yb = kiln_lower_param_value(c, k, &step, n->outputs[0]);
  kiln_dtype xt = g->values.data[n->inputs[0]].type.dtype;
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_REDUCTION, xt);
  kiln_dtype at = p.max                     ? ct
                  : kiln_dtype_is_float(xt) ? kiln_lower_acc_type(k, KILN_PREC_REDUCTION, xt)
                                            : KILN_F64;
  int rank = p.sp + 2;
  kiln_nest nest;
  kiln_lower_nest(k, &k->body, rank, p.out, "o", false, &nest);
  int acc = kiln_tkernel_var(k, "acc", at), cnt = kiln_tkernel_var(k, "cnt", KILN_I64);
  kiln_tblock *b = nest.body;
  kiln_tblock_push(k, b,
                   kiln_tassign(k, acc, /* mutant 330: the max starts from the lowest finite f32 */
                                p.max ? kiln_tfloat(k, at, KILN_MUTANT(330) ? -FLT_MAX : -INFINITY)
                                      : kiln_tfloat(k, at, 0)));
  kiln_tblock_push(k, b, kiln_tassign(k, cnt, kiln_tint(k, 0)));
  kiln_texpr *idx[KILN_MAX_RANK], *inside = NULL, *padded = NULL;
  idx[0] = kiln_tv(k, nest.vars[0]);
  idx[1] = kiln_tv(k, nest.vars[1]);
  kiln_tblock *w = b;
  for (int d = 0; d < p.sp; d++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", d);
    int wv = kiln_tkernel_var(k, name, KILN_I64);
    kiln_tstmt *loop = kiln_tfor(k, wv, kiln_tint(k, p.kernel[d]), KILN_LOOP_SERIAL);
    kiln_tblock_push(k, w, loop);
    w = &loop->body;
    /* mutant 211: dilations ignored in the window position */
    /* mutant 411: every spatial dim stepped by the first dim's stride */
    kiln_texpr *pos = kiln_tadd(
        k,
        kiln_tadd(k, kiln_tmul(k, kiln_tv(k, nest.vars[2 + d]), p.stride[KILN_MUTANT(411) ? 0 : d]),
                  kiln_tmul(k, kiln_tv(k, wv), KILN_MUTANT(211) ? 1 : p.dil[d])),
        kiln_tint(k, -p.pad_lo[d]));
    idx[2 + d] = pos;
    inside = and_(k, inside,
                  and_(k, kiln_tbin(k, KILN_TOP_GE, pos, kiln_tint(k, 0)),
                       kiln_tbin(k, KILN_MUTANT(294) ? KILN_TOP_LE : KILN_TOP_LT, pos,
                                 kiln_tint(k, p.in[2 + d])))); /* mutant 294: pos <= in */
    padded =
        and_(k, padded,
             kiln_tbin(k, KILN_MUTANT(290) ? KILN_TOP_LE : KILN_TOP_LT, pos, /* mutant 143, 290 */
                       kiln_tint(k, p.in[2 + d] + (KILN_MUTANT(143) ? p.pad_lo[d] : p.pad_hi[d]))));
  }
  kiln_tstmt *guard = kiln_tif(k, inside);
  kiln_tblock_push(k, w, guard);
  kiln_texpr *x = kiln_tcast(
      k, at, kiln_lower_load(k, KILN_PREC_REDUCTION, xb, kiln_lower_index(k, rank, p.in, idx)));
  kiln_texpr *upd = kiln_tbin(k, p.max ? KILN_TOP_MAX : KILN_TOP_ADD, kiln_tv(k, acc), x);
  kiln_tblock_push(k, &guard->body, kiln_tassign(k, acc, upd));
  kiln_texpr *counted = p.count_pad || KILN_MUTANT(35) ? padded : inside; /* mutant 35 */
  kiln_tblock_push(
      k, w,
      kiln_tassign(k, cnt,
                   kiln_tadd(k, kiln_tv(k, cnt),
                             kiln_tselect(k, counted, kiln_tint(k, 1), kiln_tint(k, 0)))));
  kiln_texpr *r = kiln_tv(k, acc);
  if (!p.max) r = kiln_tbin(k, KILN_TOP_DIV, r, kiln_tcast(k, at, kiln_tv(k, cnt)));
  kiln_texpr *oi[KILN_MAX_RANK];
  for (int d = 0; d < rank; d++) oi[d] = kiln_tv(k, nest.vars[d]);
  kiln_dtype ot = g->values.data[n->outputs[0]].type.dtype;
  kiln_tblock_push(k, b,
                   kiln_tstore(k, yb, kiln_lower_index(k, rank, p.out, oi),
                               kiln_lower_to_storage(k, ot, kiln_tcast(k, ct, r))));
  kiln_lower_add_step(c, &step);
  return KILN_OK;
}
