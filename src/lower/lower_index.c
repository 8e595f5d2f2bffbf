/* Index lowerings: GatherElements, GatherND, ScatterElements, ScatterND.
 * Gathers are one parallel nest over the output; each data-dependent coordinate goes to a
 * variable (negative ones count from the end) and the load is guarded by a range check
 * (out of range stores 0). Scatters copy the data into the output in a parallel nest, then
 * apply the updates in a serial nest over the updates (duplicate indices: the last one wins,
 * or the reduction combines them in order); an update whose index is out of range is
 * skipped. Either way an index out of range sets the kernel's error flag
 * (kiln_step.check_arg): the run fails, as with the reference kernels. */
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef struct ix {
  kiln_lower_ctx *c;
  const kiln_node *n;
  kiln_tkernel *k;
  kiln_step step;
  int flag; /* the error flag parameter */
  const kiln_type *x, *idx, *y;
  int64_t xd[KILN_MAX_RANK], id[KILN_MAX_RANK], yd[KILN_MAX_RANK];
} ix;

static void dims_of(const kiln_type *t, int64_t *d) {
  for (int i = 0; i < t->rank; i++) d[i] = t->dims[i].value;
}

static int param(ix *s, int v) {
  return kiln_lower_param_value(s->c, s->k, &s->step, v);
}

static kiln_texpr *v(ix *s, const kiln_nest *nest, int d) {
  return kiln_tv(s->k, nest->vars[d]);
}

/* var = idx (+ extent when negative); returns the range condition 0 <= var < extent. */
static kiln_texpr *fix_index(ix *s, kiln_tblock *b, kiln_texpr *raw, int64_t extent,
                             const char *name) {
  kiln_tkernel *k = s->k;
  int var = kiln_tkernel_var(k, name, KILN_I64);
  raw = kiln_tcast(k, KILN_I64, raw);
  kiln_texpr *fixed =
      kiln_tselect(k, /* mutant 291: index 0 wrapped too (<= for <) */
                   kiln_tbin(k, KILN_MUTANT(291) ? KILN_TOP_LE : KILN_TOP_LT, raw, kiln_tint(k, 0)),
                   kiln_tadd(k, raw, kiln_tint(k, extent)), raw);
  kiln_tblock_push(k, b, kiln_tassign(k, var, fixed));
  kiln_texpr *i = kiln_tv(k, var);
  return kiln_tbin(k, KILN_TOP_AND, kiln_tbin(k, KILN_TOP_GE, i, kiln_tint(k, 0)),
                   kiln_tbin(k, KILN_TOP_LT, kiln_tv(k, var), kiln_tint(k, extent)));
}

static kiln_texpr *var_of(const kiln_texpr *cond) { /* the variable a fix_index tests */
  return cond->args[0]->args[0];
}

static kiln_texpr *and_of(kiln_tkernel *k, kiln_texpr *a, kiln_texpr *b) {
  return a ? kiln_tbin(k, KILN_TOP_AND, a, b) : b;
}

static kiln_status axis_of(ix *s, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  int64_t a = da.axis;
  if (a < 0) a += s->x->rank;
  if (a < 0 || a >= s->x->rank) return kiln_invalid("%s: axis out of range", s->n->op_type);
  *out = (int)a;
  return KILN_OK;
}

/* if cond { y[at] = x[src] } else { y[at] = 0; flag = 1 } */
static void guarded_copy(ix *s, kiln_tblock *b, int yb, kiln_texpr *at, int xb, kiln_texpr *src,
                         kiln_texpr *cond) {
  kiln_tkernel *k = s->k;
  kiln_tstmt *g = kiln_tif(k, cond);
  kiln_tblock_push(k, &g->body, kiln_tstore(k, yb, at, kiln_tload(k, xb, src)));
  kiln_texpr *zero = kiln_tcast(k, s->x->dtype, kiln_tconst_int(k, KILN_I64, 0));
  kiln_tblock_push(k, &g->orelse, kiln_tstore(k, yb, at, zero));
  kiln_tblock_push(k, &g->orelse, kiln_lower_check_fail(k, s->flag));
  kiln_tblock_push(k, b, g);
}

static kiln_nest nest_over(ix *s, kiln_tblock *b, int rank, const int64_t *dims, const char *p,
                           bool serial) {
  kiln_nest nest;
  if (serial) kiln_lower_serial_nest(s->k, b, rank, dims, p, &nest);
  else kiln_lower_nest(s->k, b, rank, dims, p, true, &nest);
  if (rank == 0) nest.body = b;
  return nest;
}

static kiln_texpr *nest_index(ix *s, const kiln_nest *nest) {
  kiln_texpr *o[KILN_MAX_RANK];
  for (int d = 0; d < nest->rank; d++) o[d] = v(s, nest, d);
  return kiln_lower_index(s->k, nest->rank, nest->dims, o);
}

/* The error flag, with what it means: an index out of range along `axis` (-1: of a tuple). */
static void add_flag(ix *s, int axis) {
  if (axis >= 0) {
    s->flag = kiln_lower_param_check(s->c, s->k, &s->step,
                                     "index out of range (axis %d of the data has %lld entries)",
                                     axis, (long long)s->xd[axis]);
    return;
  }
  char shape[160];
  int len = 0;
  for (int d = 0; d < s->x->rank && len < (int)sizeof shape - 24; d++)
    len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%lld", d ? ", " : "",
                    (long long)s->xd[d]);
  shape[len] = 0;
  s->flag = kiln_lower_param_check(s->c, s->k, &s->step,
                                   "index out of range (the data has shape [%s])", shape);
}

/* ---- gathers ---- */
static kiln_status gather_elements(ix *s) {
  int axis;
  KILN_TRY(axis_of(s, &axis));
  int xb = param(s, s->n->inputs[0]), ib = param(s, s->n->inputs[1]);
  int yb = param(s, s->n->outputs[0]);
  add_flag(s, axis);
  kiln_nest nest = nest_over(s, &s->k->body, s->y->rank, s->yd, "o", false);
  kiln_texpr *raw = kiln_tload(s->k, ib, nest_index(s, &nest));
  kiln_texpr *ok = fix_index(s, nest.body, raw, KILN_MUTANT(144) ? s->yd[axis] : s->xd[axis],
                             "gi"); /* mutant 144: wrapped by the indices' extent */
  kiln_texpr *src[KILN_MAX_RANK];
  for (int d = 0; d < s->x->rank; d++) src[d] = d == axis ? var_of(ok) : v(s, &nest, d);
  guarded_copy(s, nest.body, yb, nest_index(s, &nest), xb, /* mutant 415: indices' strides */
               kiln_lower_index(s->k, s->x->rank, KILN_MUTANT(415) ? s->yd : s->xd, src), ok);
  return KILN_OK;
}

/* The data coordinates addressed by indices[j..., 0..kk) with batch dims b: coordinates
 * 0..b from the nest, b..b+kk from the index tuple (each checked), the rest from the nest
 * dims from `rest` on. */
static kiln_texpr *nd_coords(ix *s, kiln_tblock *body, const kiln_nest *nest, int ib, int b, int kk,
                             int rest, kiln_texpr **src) {
  kiln_tkernel *k = s->k;
  int ir = s->idx->rank;
  kiln_texpr *cond = NULL, *ii[KILN_MAX_RANK];
  for (int d = 0; d < ir - 1; d++) ii[d] = v(s, nest, d);
  for (int d = 0; d < s->x->rank; d++) {
    if (d < b) src[d] = v(s, nest, d);
    else if (d >= b + kk) src[d] = v(s, nest, rest + d - b - kk);
    else {
      ii[ir - 1] = kiln_tint(k, d - b);
      char name[16];
      snprintf(name, sizeof name, "nd%d", d);
      kiln_texpr *ok =
          fix_index(s, body, kiln_tload(k, ib, kiln_lower_index(k, ir, s->id, ii)),
                    s->xd[KILN_MUTANT(175) ? d - b : d], name); /* mutant 175: batch dims */
      src[d] = var_of(ok);
      cond = and_of(k, cond, ok);
    }
  }
  return cond;
}

static kiln_status nd_params(ix *s, int *b, int *kk) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  int64_t bd = s->n->op == KILN_OP_GatherND ? da.batch_dims : 0;
  int ir = s->idx->rank;
  if (ir < 1 || bd < 0 || bd >= ir) return kiln_invalid("%s: bad indices rank", s->n->op_type);
  *b = (int)bd;
  *kk = (int)s->id[ir - 1];
  if (*kk < 1 || *b + *kk > s->x->rank)
    return kiln_unsupported("%s with %d-tuples", s->n->op_type, *kk);
  return KILN_OK;
}

static kiln_status gather_nd(ix *s) {
  int b, kk;
  KILN_TRY(nd_params(s, &b, &kk));
  int xb = param(s, s->n->inputs[0]), ib = param(s, s->n->inputs[1]);
  int yb = param(s, s->n->outputs[0]);
  add_flag(s, -1);
  kiln_nest nest = nest_over(s, &s->k->body, s->y->rank, s->yd, "o", false);
  kiln_texpr *src[KILN_MAX_RANK];
  /* mutant 343: the data's trailing dims placed after the batch dims a second time */
  kiln_texpr *ok =
      nd_coords(s, nest.body, &nest, ib, b, kk, s->idx->rank - 1 - (KILN_MUTANT(343) ? b : 0), src);
  guarded_copy(s, nest.body, yb, nest_index(s, &nest), xb,
               kiln_lower_index(s->k, s->x->rank, s->xd, src), ok);
  return KILN_OK;
}

/* ---- scatters ---- */
static kiln_status reduction_of(const kiln_node *n, kiln_top *op) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  static const kiln_top of[KILN_SCATTER_REDUCTION_COUNT] = {
      [KILN_SCATTER_NONE] = KILN_TOP_COUNT, [KILN_SCATTER_ADD] = KILN_TOP_ADD,
      [KILN_SCATTER_MUL] = KILN_TOP_MUL,    [KILN_SCATTER_MAX] = KILN_TOP_MAX,
      [KILN_SCATTER_MIN] = KILN_TOP_MIN,
  };
  *op = of[da.reduction];
  if (KILN_MUTANT(174) && da.reduction == KILN_SCATTER_MAX) *op = KILN_TOP_MIN; /* mutant 174 */
  if (KILN_MUTANT(326) && da.reduction == KILN_SCATTER_MUL) /* mutant 326: "mul" as "none" */
    *op = KILN_TOP_COUNT;
  return KILN_OK;
}

/* y = x (parallel), then the serial nest over the updates; returns its body and buffers.
 * axis: of ScatterElements, -1 for ScatterND (for the error message). */
static kiln_nest scatter_begin(ix *s, int axis, int *yb, int *ub, int *ib) {
  int xb = param(s, s->n->inputs[0]);
  *ib = param(s, s->n->inputs[1]);
  *ub = param(s, s->n->inputs[2]);
  *yb = param(s, s->n->outputs[0]);
  add_flag(s, axis);
  kiln_nest copy = nest_over(s, &s->k->body, s->y->rank, s->yd, "c", false);
  kiln_tblock_push(
      s->k, copy.body,
      kiln_tstore(s->k, *yb, nest_index(s, &copy), kiln_tload(s->k, xb, nest_index(s, &copy))));
  const kiln_type *ut = kiln_lower_static(s->c->g, s->n->inputs[2]);
  int64_t ud[KILN_MAX_RANK];
  dims_of(ut, ud);
  return nest_over(s, &s->k->body, ut->rank, ud, "u", !KILN_MUTANT(109)); /* mutant 109 */
}

/* if cond { y[at] = combine(y[at], u) } else { flag = 1 } */
static void scatter_store(ix *s, kiln_tblock *b, kiln_texpr *cond, int yb, kiln_texpr *at,
                          kiln_texpr *u, kiln_top red) {
  kiln_tkernel *k = s->k;
  kiln_texpr *val = u;
  if (red != KILN_TOP_COUNT) {
    kiln_texpr *old =
        kiln_lower_load(k, KILN_PREC_DATA, KILN_MUTANT(208) ? param(s, s->n->inputs[0]) : yb,
                        at); /* mutant 208: the old value read from the data input */
    kiln_texpr *cu = kiln_tcast(k, kiln_lower_compute_type(k, KILN_PREC_DATA, u->type), u);
    val = kiln_lower_to_storage(k, s->y->dtype, kiln_tbin(k, red, old, cu));
  }
  kiln_tstmt *g = kiln_tif(k, cond);
  kiln_tblock_push(k, &g->body, kiln_tstore(k, yb, at, val));
  kiln_tblock_push(k, &g->orelse, kiln_lower_check_fail(k, s->flag));
  kiln_tblock_push(k, b, g);
}

static kiln_status scatter_elements(ix *s) {
  int axis, yb, ub, ib;
  kiln_top red;
  KILN_TRY(axis_of(s, &axis));
  KILN_TRY(reduction_of(s->n, &red));
  kiln_nest un = scatter_begin(s, axis, &yb, &ub, &ib);
  kiln_texpr *at_u = nest_index(s, &un);
  kiln_texpr *ok = fix_index(s, un.body, kiln_tload(s->k, ib, at_u), s->xd[axis], "si");
  kiln_texpr *dst[KILN_MAX_RANK];
  for (int d = 0; d < s->x->rank; d++) dst[d] = d == axis ? var_of(ok) : v(s, &un, d);
  scatter_store(s, un.body, ok, yb, kiln_lower_index(s->k, s->x->rank, s->xd, dst),
                kiln_tload(s->k, ub, nest_index(s, &un)), red);
  return KILN_OK;
}

static kiln_status scatter_nd(ix *s) {
  int b, kk, yb, ub, ib;
  kiln_top red;
  KILN_TRY(nd_params(s, &b, &kk));
  KILN_TRY(reduction_of(s->n, &red));
  kiln_nest un = scatter_begin(s, -1, &yb, &ub, &ib);
  kiln_texpr *dst[KILN_MAX_RANK];
  kiln_texpr *ok = nd_coords(s, un.body, &un, ib, 0, kk, s->idx->rank - 1, dst);
  scatter_store(s, un.body, ok, yb, kiln_lower_index(s->k, s->x->rank, s->xd, dst),
                kiln_tload(s->k, ub, nest_index(s, &un)), red);
  return KILN_OK;
}

static bool index_op(kiln_op op) {
  return op == KILN_OP_GatherElements || op == KILN_OP_GatherND || op == KILN_OP_ScatterElements ||
         op == KILN_OP_ScatterND || op == KILN_OP_Scatter;
}

kiln_status kiln_lower_index_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  if (!index_op(n->op) || grp->n_nodes != 1 || n->n_inputs < 2)
    return KILN_BUG("the lowering table sent %s to the gather/scatter lowering", n->op_type);
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return kiln_unsupported("%s with its first output omitted", n->op_type);
  ix s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.n = n;
  s.x = kiln_lower_static(c->g, n->inputs[0]);
  s.idx = kiln_lower_static(c->g, n->inputs[1]);
  s.y = kiln_lower_static(c->g, n->outputs[0]);
  if (!kiln_lower_dtype_ok(s.x->dtype) || !kiln_dtype_is_int(s.idx->dtype))
    return kiln_unsupported("%s of %s with %s indices", n->op_type, kiln_dtype_name(s.x->dtype),
                            kiln_dtype_name(s.idx->dtype));
  bool scatter =
      n->op == KILN_OP_ScatterElements || n->op == KILN_OP_ScatterND || n->op == KILN_OP_Scatter;
  if (scatter && (n->n_inputs < 3 || n->inputs[2] < 0))
    return kiln_invalid("%s needs updates", n->op_type);
  dims_of(s.x, s.xd);
  dims_of(s.idx, s.id);
  dims_of(s.y, s.yd);
  s.k = kiln_lower_kernel(c, grp, n->op_type, &s.step);
  kiln_status st;
  switch (n->op) {
  case KILN_OP_GatherElements: st = gather_elements(&s); break;
  case KILN_OP_GatherND: st = gather_nd(&s); break;
  case KILN_OP_ScatterND: st = scatter_nd(&s); break;
  default: st = scatter_elements(&s); break;
  }
  KILN_TRY(st);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}
