/* Normalization lowerings: RMSNormalization, LpNormalization, InstanceNormalization,
 * GroupNormalization (a parallel nest over rows; per row serial sums in f64, as the
 * reference accumulates in double, then the row written), BatchNormalization in inference
 * and LRN (one nest over the input; LRN sums its channel window in a serial loop).
 *
 * A row is n elements at stride `inner` from base = outer_index * n * inner + inner_index:
 * the (outer, n, inner) view of the input around the normalized axes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef struct nm {
  kiln_lower_ctx *c;
  const kiln_node *n;
  kiln_tkernel *k;
  kiln_step step;
  const kiln_type *x, *y;
  int64_t xd[KILN_MAX_RANK];
  int xb, yb;
} nm;

static int64_t prod(const int64_t *d, int a, int b) {
  int64_t p = 1;
  for (int i = a; i < b; i++) p *= d[i];
  return p;
}

static kiln_texpr *f64(kiln_tkernel *k, double v) {
  return kiln_tfloat(k, KILN_F64, v);
}

static kiln_texpr *load64(nm *s, int buf, kiln_texpr *at) {
  return kiln_tcast(s->k, KILN_F64, kiln_lower_load(s->k, KILN_PREC_REDUCTION, buf, at));
}

static void store64(nm *s, kiln_tblock *b, kiln_texpr *at, kiln_texpr *v) {
  kiln_dtype ct = kiln_lower_compute_type(s->k, KILN_PREC_REDUCTION, s->y->dtype);
  kiln_tblock_push(s->k, b,
                   kiln_tstore(s->k, s->yb, at,
                               kiln_lower_to_storage(s->k, s->y->dtype, kiln_tcast(s->k, ct, v))));
}

/* The rows of an (outer, n, inner) view: a parallel nest over (outer, inner); *row is the
 * flat row number (outer_index * inner + inner_index), *base the first element. */
typedef struct rows {
  kiln_tblock *body;
  kiln_texpr *row, *base;
  int64_t n, inner;
} rows;

static rows row_nest(nm *s, int64_t outer, int64_t n, int64_t inner) {
  kiln_tkernel *k = s->k;
  int64_t d[2] = {outer, inner};
  kiln_nest nest;
  kiln_lower_nest(k, &k->body, 2, d, "r", false, &nest);
  kiln_texpr *o = kiln_tv(k, nest.vars[0]), *i = kiln_tv(k, nest.vars[1]);
  rows r = {nest.body, kiln_tadd(k, kiln_tmul(k, o, inner), i),
            kiln_tadd(k, kiln_tmul(k, o, n * inner), i), n, inner};
  return r;
}

/* acc = sum over j of f(x[base + j*inner]) where f is x (sq=0), x*x (1), |x| (2), or
 * (x - mean)^2 (mean != NULL). Returns the accumulator variable. */
static int row_sum(nm *s, const rows *r, int mode, kiln_texpr *mean, const char *name) {
  kiln_tkernel *k = s->k;
  int acc = kiln_tkernel_var(k, name, KILN_F64);
  char jn[32];
  snprintf(jn, sizeof jn, "%s_j", name);
  int j = kiln_tkernel_var(k, jn, KILN_I64);
  kiln_tblock_push(k, r->body, kiln_tassign(k, acc, f64(k, 0)));
  kiln_tstmt *loop = kiln_tfor(k, j, kiln_tint(k, r->n), KILN_LOOP_SERIAL);
  kiln_texpr *x = load64(s, s->xb, kiln_tadd(k, r->base, kiln_tmul(k, kiln_tv(k, j), r->inner)));
  if (mean) x = kiln_tbin(k, KILN_TOP_SUB, x, mean);
  kiln_texpr *term = mode == 2      ? kiln_tun(k, KILN_TOP_ABS, x)
                     : mode || mean ? kiln_tbin(k, KILN_TOP_MUL, x, x)
                                    : x;
  kiln_tblock_push(k, &loop->body,
                   kiln_tassign(k, acc, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, acc), term)));
  kiln_tblock_push(k, r->body, loop);
  return acc;
}

/* for j: y[at] = f(x[at], j) */
typedef kiln_texpr *(*row_fn)(nm *s, const rows *r, kiln_texpr *x, kiln_texpr *j, void *user);

static void row_write(nm *s, const rows *r, row_fn f, void *user) {
  kiln_tkernel *k = s->k;
  int j = kiln_tkernel_var(k, "wj", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, j, kiln_tint(k, r->n), KILN_LOOP_SERIAL);
  kiln_texpr *at = kiln_tadd(k, r->base, kiln_tmul(k, kiln_tv(k, j), r->inner));
  store64(s, &loop->body, at, f(s, r, load64(s, s->xb, at), kiln_tv(k, j), user));
  kiln_tblock_push(k, r->body, loop);
}

/* The node's axis (kiln_attrs_norm_decode), normalized. */
static kiln_status axis_attr(nm *s, int *out) {
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(s->n, &na));
  int64_t a = na.axis;
  if (a < 0 && !KILN_MUTANT(348)) a += s->x->rank; /* mutant 348: a negative axis not wrapped */
  if (a < 0 || a >= s->x->rank) return kiln_invalid("%s: axis out of range", s->n->op_type);
  *out = (int)a;
  return KILN_OK;
}

/* ---- LpNormalization ---- */
typedef struct lp_user {
  int norm;
} lp_user;

static kiln_texpr *lp_fn(nm *s, const rows *r, kiln_texpr *x, kiln_texpr *j, void *user) {
  (void)r, (void)j;
  kiln_tkernel *k = s->k;
  kiln_texpr *nv = kiln_tv(k, ((lp_user *)user)->norm);
  if (KILN_MUTANT(142)) return kiln_tbin(k, KILN_TOP_DIV, x, nv); /* mutant 142: 0 / 0 */
  return kiln_tselect(k, kiln_tbin(k, KILN_TOP_EQ, nv, f64(k, 0)), f64(k, 0),
                      kiln_tbin(k, KILN_TOP_DIV, x, nv));
}

static kiln_status lp_norm(nm *s) {
  int axis;
  kiln_attrs_norm na;
  KILN_TRY(axis_attr(s, &axis));
  KILN_TRY(kiln_attrs_norm_decode(s->n, &na));
  int64_t p = na.p;
  if (p != 1 && p != 2) return kiln_invalid("LpNormalization: p must be 1 or 2");
  int r = s->x->rank;
  int64_t inner = prod(s->xd, axis + 1, r);
  /* mutant 413: the rows taken as contiguous (a non-last axis's stride lost) */
  rows rw = KILN_MUTANT(413) ? row_nest(s, prod(s->xd, 0, axis) * inner, s->xd[axis], 1)
                             : row_nest(s, prod(s->xd, 0, axis), s->xd[axis], inner);
  lp_user u = {row_sum(s, &rw, p == 1 && !KILN_MUTANT(328) ? 2 : 1, NULL, "norm")};
  /* mutant 328: p = 1 summed as squares (the p = 2 term, without its root) */
  if (p == 2)
    kiln_tblock_push(
        s->k, rw.body,
        kiln_tassign(s->k, u.norm, kiln_tun(s->k, KILN_TOP_SQRT, kiln_tv(s->k, u.norm))));
  row_write(s, &rw, lp_fn, &u);
  return KILN_OK;
}

/* ---- RMSNormalization, InstanceNormalization, GroupNormalization ---- */
typedef struct affine_user {
  int mean, inv;   /* variables (mean -1: none) */
  int sb, bb;      /* scale and bias buffers (-1: none) */
  int64_t C, G, S; /* channel index: RMS: j; else ((row % G) * (C/G) + j / S), per group: row % G */
  int mode;        /* 0 RMS, 1 per channel, 2 per group */
} affine_user;

static kiln_texpr *param_index(nm *s, const rows *r, kiln_texpr *j, const affine_user *u) {
  kiln_tkernel *k = s->k;
  if (u->mode == 0) return j;
  kiln_texpr *g = kiln_tbin(k, KILN_TOP_MOD, r->row, kiln_tint(k, u->G));
  if (u->mode == 2) return g;
  return kiln_tadd(k, kiln_tmul(k, g, u->C / u->G),
                   KILN_MUTANT(239) /* mutant 239: the channel taken as j % (C/G) */
                       ? kiln_tbin(k, KILN_TOP_MOD, j, kiln_tint(k, u->C / u->G))
                       : kiln_tbin(k, KILN_TOP_DIV, j, kiln_tint(k, u->S)));
}

static kiln_texpr *affine_fn(nm *s, const rows *r, kiln_texpr *x, kiln_texpr *j, void *user) {
  kiln_tkernel *k = s->k;
  affine_user *u = user;
  if (u->mean >= 0) x = kiln_tbin(k, KILN_TOP_SUB, x, kiln_tv(k, u->mean));
  x = kiln_tbin(k, KILN_TOP_MUL, x, kiln_tv(k, u->inv));
  kiln_texpr *pi = param_index(s, r, j, u);
  x = kiln_tbin(k, KILN_TOP_MUL, x, load64(s, u->sb, pi));
  if (u->bb >= 0) x = kiln_tbin(k, KILN_TOP_ADD, x, load64(s, u->bb, param_index(s, r, j, u)));
  return x;
}

/* mean and 1/sqrt(var + eps) of each row (RMS: no mean, 1/sqrt(mean of squares + eps)) */
static void row_stats(nm *s, const rows *rw, bool center, double eps, affine_user *u) {
  kiln_tkernel *k = s->k;
  double inv_n = rw->n ? 1.0 / (double)rw->n : 0;
  u->mean = -1;
  kiln_texpr *mean = NULL;
  if (center) {
    u->mean = row_sum(s, rw, 0, NULL, "mean");
    kiln_tblock_push(
        k, rw->body,
        kiln_tassign(k, u->mean, kiln_tbin(k, KILN_TOP_MUL, kiln_tv(k, u->mean), f64(k, inv_n))));
    mean = kiln_tv(k, u->mean);
  }
  u->inv = row_sum(s, rw, 1, mean, "var");
  kiln_texpr *var =
      kiln_tadd(k, kiln_tbin(k, KILN_TOP_MUL, kiln_tv(k, u->inv), f64(k, inv_n)), f64(k, eps));
  kiln_tblock_push(
      k, rw->body,
      kiln_tassign(k, u->inv,
                   kiln_tbin(k, KILN_TOP_DIV, f64(k, 1), kiln_tun(k, KILN_TOP_SQRT, var))));
}

static int opt_param(nm *s, int i) {
  const kiln_node *n = s->n;
  return i < n->n_inputs && n->inputs[i] >= 0
             ? kiln_lower_param_value(s->c, s->k, &s->step, n->inputs[i])
             : -1;
}

static kiln_status rms_norm(nm *s) {
  int axis;
  kiln_attrs_norm na;
  KILN_TRY(axis_attr(s, &axis));
  KILN_TRY(kiln_attrs_norm_decode(s->n, &na));
  float eps = na.epsilon;
  int r = s->x->rank;
  int64_t n = prod(s->xd, axis, r);
  const kiln_type *st = kiln_lower_static(s->c->g, s->n->inputs[1]);
  /* the scale must cover the normalized dims exactly (index j) */
  bool exact = kiln_lower_numel(st) == n && st->rank <= r - axis;
  for (int d = 0; exact && d < st->rank; d++) exact = st->dims[d].value == s->xd[r - st->rank + d];
  if (!exact || !kiln_lower_dtype_ok(st->dtype))
    return kiln_unsupported("RMSNormalization with a broadcast scale");
  affine_user u = {.sb = opt_param(s, 1), .bb = -1, .mode = 0};
  rows rw = row_nest(s, prod(s->xd, 0, axis), n, 1);
  row_stats(s, &rw, KILN_MUTANT(106), eps, &u); /* mutant 106: the mean subtracted (centred) */
  row_write(s, &rw, affine_fn, &u);
  return KILN_OK;
}

static kiln_status group_norm(nm *s) {
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(s->n, &na));
  float eps = na.epsilon;
  if (s->x->rank < 2) return kiln_invalid("%s of rank %d", s->n->op_type, s->x->rank);
  int64_t C = s->xd[1], S = prod(s->xd, 2, s->x->rank), G = C;
  bool inst = s->n->op == KILN_OP_InstanceNormalization;
  if (!inst) G = na.num_groups;
  if (G <= 0 || C % G) return kiln_invalid("%s: groups do not divide the channels", s->n->op_type);
  for (int i = 1; i <= 2; i++)
    if (!kiln_lower_dtype_ok(kiln_lower_static(s->c->g, s->n->inputs[i])->dtype))
      return kiln_unsupported("%s parameters of this dtype", s->n->op_type);
  affine_user u = {.sb = opt_param(s, 1), .bb = opt_param(s, 2), .C = C, .G = G, .S = S};
  u.mode = !inst && s->n->opset < 21 && !KILN_MUTANT(105) ? 2 : 1; /* mutant 105: per channel */
  rows rw = row_nest(s, s->xd[0] * G, (C / G) * S, 1);
  row_stats(s, &rw, true, eps, &u);
  row_write(s, &rw, affine_fn, &u);
  return KILN_OK;
}

/* ---- BatchNormalization (inference) and LRN: one nest over x ---- */
static kiln_status batch_norm(nm *s) {
  const kiln_node *n = s->n;
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(n, &na));
  float eps = na.epsilon;
  if (na.training_mode || n->opset < 7)
    return kiln_unsupported("BatchNormalization in training mode");
  for (int i = 1; i < n->n_outputs; i++)
    if (n->outputs[i] >= 0) return kiln_unsupported("BatchNormalization with running statistics");
  if (s->x->rank < 2 || n->n_inputs < 5) return kiln_invalid("BatchNormalization of rank < 2");
  for (int i = 1; i < 5; i++)
    if (!kiln_lower_dtype_ok(kiln_lower_static(s->c->g, n->inputs[i])->dtype))
      return kiln_unsupported("BatchNormalization parameters of this dtype");
  int pb[5];
  for (int i = 1; i < 5; i++) pb[i] = opt_param(s, i);
  kiln_tkernel *k = s->k;
  kiln_nest nest;
  kiln_lower_nest(k, &k->body, s->x->rank, s->xd, "o", true, &nest);
  kiln_texpr *o[KILN_MAX_RANK];
  for (int d = 0; d < s->x->rank; d++) o[d] = kiln_tv(k, nest.vars[d]);
  kiln_texpr *at = kiln_lower_index(k, s->x->rank, s->xd, o);
  kiln_texpr *c = o[KILN_MUTANT(141) ? s->x->rank - 1 : 1]; /* mutant 141: channel last */
  kiln_texpr *var = kiln_tadd(k, load64(s, pb[4], c), f64(k, eps));
  kiln_texpr *sd = kiln_tun(k, KILN_TOP_SQRT, var);
  if (KILN_MUTANT(269)) /* mutant 269: epsilon added to the square root, not under it */
    sd = kiln_tadd(k, kiln_tun(k, KILN_TOP_SQRT, load64(s, pb[4], c)), f64(k, eps));
  kiln_texpr *y = kiln_tbin(
      k, KILN_TOP_DIV, kiln_tbin(k, KILN_TOP_SUB, load64(s, s->xb, at), load64(s, pb[3], c)), sd);
  y = kiln_tbin(k, KILN_TOP_ADD, kiln_tbin(k, KILN_TOP_MUL, y, load64(s, pb[1], c)),
                load64(s, pb[2], c));
  store64(s, nest.body, kiln_lower_index(k, s->x->rank, s->xd, o), y);
  return KILN_OK;
}

static kiln_status lrn(nm *s) {
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(s->n, &na));
  float alpha = na.alpha, beta = na.beta, bias = na.bias;
  int64_t size = na.size;
  if (size <= 0 || s->x->rank < 3) return kiln_invalid("LRN needs size > 0 and rank >= 3");
  kiln_tkernel *k = s->k;
  int r = s->x->rank;
  int64_t C = s->xd[1], S = prod(s->xd, 2, r),
          lo = (size - !KILN_MUTANT(104)) / 2; /* mutant 104: size / 2 */
  int64_t d3[3] = {s->xd[0], C, S};
  kiln_nest nest;
  kiln_lower_nest(k, &k->body, 3, d3, "o", false, &nest);
  kiln_texpr *nn = kiln_tv(k, nest.vars[0]), *c = kiln_tv(k, nest.vars[1]),
             *sp = kiln_tv(k, nest.vars[2]);
  int acc = kiln_tkernel_var(k, "sum", KILN_F64), w = kiln_tkernel_var(k, "w", KILN_I64);
  int cc = kiln_tkernel_var(k, "cc", KILN_I64);
  kiln_tblock_push(k, nest.body, kiln_tassign(k, acc, f64(k, 0)));
  kiln_tstmt *loop = kiln_tfor(k, w, kiln_tint(k, size), KILN_LOOP_SERIAL);
  kiln_tblock_push(
      k, &loop->body,
      kiln_tassign(k, cc, kiln_tadd(k, c, kiln_tadd(k, kiln_tv(k, w), kiln_tint(k, -lo)))));
  kiln_texpr *ccv = kiln_tv(k, cc);
  kiln_tstmt *in =
      kiln_tif(k, kiln_tbin(k, KILN_TOP_AND, kiln_tbin(k, KILN_TOP_GE, ccv, kiln_tint(k, 0)),
                            kiln_tbin(k, KILN_MUTANT(384) ? KILN_TOP_LE : KILN_TOP_LT,
                                      kiln_tv(k, cc), kiln_tint(k, C)))); /* mutant 384: cc <= C */
  kiln_texpr *xv = load64(
      s, s->xb,
      kiln_tadd(k, kiln_tadd(k, kiln_tmul(k, nn, C * S), kiln_tmul(k, kiln_tv(k, cc), S)), sp));
  kiln_tblock_push(
      k, &in->body,
      kiln_tassign(
          k, acc, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, acc), kiln_tbin(k, KILN_TOP_MUL, xv, xv))));
  kiln_tblock_push(k, &loop->body, in);
  kiln_tblock_push(k, nest.body, loop);
  kiln_texpr *at = kiln_tadd(k, kiln_tadd(k, kiln_tmul(k, nn, C * S), kiln_tmul(k, c, S)), sp);
  kiln_texpr *den = kiln_tbin(
      k, KILN_TOP_POW,
      kiln_tadd(k, f64(k, bias),
                kiln_tbin(k, KILN_TOP_MUL, /* mutant 179: alpha not divided by size */
                          f64(k, KILN_MUTANT(179) ? (double)alpha : (double)alpha / (double)size),
                          kiln_tv(k, acc))),
      f64(k, beta));
  store64(s, nest.body, at, kiln_tbin(k, KILN_TOP_DIV, load64(s, s->xb, at), den));
  return KILN_OK;
}

static bool norm_op(kiln_op op) {
  return op == KILN_OP_RMSNormalization || op == KILN_OP_LpNormalization ||
         op == KILN_OP_InstanceNormalization || op == KILN_OP_GroupNormalization ||
         op == KILN_OP_BatchNormalization || op == KILN_OP_LRN;
}

kiln_status kiln_lower_norm_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  if (!norm_op(n->op) || grp->n_nodes != 1 || n->n_inputs < 1)
    return KILN_BUG("the lowering table sent %s to the normalization lowering", n->op_type);
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return kiln_unsupported("%s with its first output omitted", n->op_type);
  nm s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.n = n;
  s.x = kiln_lower_static(c->g, n->inputs[0]);
  s.y = kiln_lower_static(c->g, n->outputs[0]);
  if (!kiln_dtype_is_float(s.x->dtype) || !kiln_lower_dtype_ok(s.x->dtype) ||
      !kiln_lower_dtype_ok(s.y->dtype))
    return kiln_unsupported("%s of %s", n->op_type, kiln_dtype_name(s.x->dtype));
  for (int d = 0; d < s.x->rank; d++) s.xd[d] = s.x->dims[d].value;
  s.k = kiln_lower_kernel(c, grp, n->op_type, &s.step);
  s.xb = kiln_lower_param_value(c, s.k, &s.step, n->inputs[0]);
  s.yb = kiln_lower_param_value(c, s.k, &s.step, n->outputs[0]);
  kiln_status st;
  switch (n->op) {
  case KILN_OP_RMSNormalization: st = rms_norm(&s); break;
  case KILN_OP_LpNormalization: st = lp_norm(&s); break;
  case KILN_OP_BatchNormalization: st = batch_norm(&s); break;
  case KILN_OP_LRN: st = lrn(&s); break;
  default: st = group_norm(&s); break;
  }
  KILN_TRY(st);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}
