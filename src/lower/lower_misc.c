/* Miscellaneous single-node lowerings:
 * - values known at compile time (Shape, Size, Constant, ConstantOfShape of a constant):
 *   the reference kernel runs once now, on zeros of the static input types where it only
 *   reads shapes, and the kernel copies the packed result;
 * - Trilu, EyeLike, OneHot: one nest over the output with a select per element;
 * - CumSum, CumProd: a nest over the other axes, a serial running sum along the axis;
 * - Hardmax: per row a serial search for the first maximum, then a row of 0/1;
 * - Dropout in inference with its mask output (the mask is all true). */
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef struct one {
  kiln_lower_ctx *c;
  const kiln_node *n;
  const kiln_type *x, *y; /* input 0 (NULL when none) and output 0 */
  int64_t xd[KILN_MAX_RANK], yd[KILN_MAX_RANK];
  kiln_tkernel *k;
  kiln_step step;
} one;

static void dims_of(const kiln_type *t, int64_t *d) {
  for (int i = 0; t && i < t->rank; i++) d[i] = t->dims[i].value;
}

static void begin(one *s, kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n) {
  memset(s, 0, sizeof *s);
  s->c = c;
  s->n = n;
  s->x = n->n_inputs > 0 ? kiln_lower_static(c->g, n->inputs[0]) : NULL;
  s->y = kiln_lower_static(c->g, n->outputs[0]);
  dims_of(s->x, s->xd);
  dims_of(s->y, s->yd);
  s->k = kiln_lower_kernel(c, grp, n->op_type, &s->step);
}

static int param(one *s, int v) {
  return kiln_lower_param_value(s->c, s->k, &s->step, v);
}

void kiln_lower_serial_nest(kiln_tkernel *k, kiln_tblock *parent, int rank, const int64_t *dims,
                            const char *prefix, kiln_nest *out) {
  out->rank = rank;
  kiln_tblock *b = parent;
  for (int d = 0; d < rank; d++) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, d);
    out->dims[d] = dims[d];
    out->vars[d] = kiln_tkernel_var(k, name, KILN_I64);
    kiln_tstmt *loop = kiln_tfor(k, out->vars[d], kiln_tint(k, dims[d]), KILN_LOOP_SERIAL);
    kiln_tblock_push(k, b, loop);
    b = &loop->body;
  }
  out->body = b;
}

/* A parallel nest over the output (rank 0: the kernel body itself). */
static kiln_nest out_nest(one *s) {
  kiln_nest nest;
  kiln_lower_nest(s->k, &s->k->body, s->y->rank, s->yd, "o", true, &nest);
  if (s->y->rank == 0) nest.body = &s->k->body;
  return nest;
}

static kiln_texpr *ov(one *s, const kiln_nest *nest, int d) {
  return kiln_tv(s->k, nest->vars[d]);
}

static kiln_texpr *out_index(one *s, const kiln_nest *nest) {
  kiln_texpr *o[KILN_MAX_RANK];
  for (int d = 0; d < nest->rank; d++) o[d] = ov(s, nest, d);
  return kiln_lower_index(s->k, nest->rank, nest->dims, o);
}

/* A constant of compute type ct (for values of dtype dt) converted to storage. */
static kiln_texpr *stored_const(kiln_tkernel *k, kiln_dtype dt, double v) {
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_DATA, dt);
  kiln_texpr *e =
      kiln_dtype_is_float(ct) ? kiln_tfloat(k, ct, v) : kiln_tconst_int(k, ct, (int64_t)v);
  return kiln_lower_to_storage(k, dt, e);
}

/* ---- values known at compile time ---- */
typedef struct fold_inputs {
  const kiln_graph *g;
  kiln_val **vals; /* by input position */
  const kiln_node *n;
} fold_inputs;

static kiln_val *fold_lookup(void *user, int v) {
  fold_inputs *f = user;
  for (int i = 0; i < f->n->n_inputs; i++)
    if (f->n->inputs[i] == v) return f->vals[i];
  return NULL;
}

/* True when the op's result depends on the shapes of its inputs only (or on constants). */
static bool shape_only(const kiln_graph *g, const kiln_node *n) {
  if (n->op == KILN_OP_Shape || n->op == KILN_OP_Size || n->op == KILN_OP_Constant) return true;
  return n->op == KILN_OP_ConstantOfShape && n->n_inputs > 0 && n->inputs[0] >= 0 &&
         g->values.data[n->inputs[0]].kind == KILN_VALUE_CONST;
}

/* Zero tensors of the inputs' static types (their data is never read). */
static kiln_status zero_inputs(const kiln_graph *g, const kiln_node *n, kiln_val **vals) {
  for (int i = 0; i < n->n_inputs; i++) {
    if (n->inputs[i] < 0 || g->values.data[n->inputs[i]].kind == KILN_VALUE_CONST) continue;
    const kiln_type *t = kiln_lower_static(g, n->inputs[i]);
    if (kiln_lower_numel(t) > (1 << 24)) return kiln_unsupported("%s of a large input", n->op_type);
    int64_t d[KILN_MAX_RANK];
    dims_of(t, d);
    kiln_tensor *z;
    KILN_TRY(kiln_tensor_new(t->dtype, t->rank, d, &z));
    vals[i] = kiln_val_tensor(z);
  }
  return KILN_OK;
}

static kiln_status eval_now(kiln_lower_ctx *c, const kiln_node *n, kiln_tensor **out) {
  kiln_val *vals[16] = {0}, *outs[8] = {0};
  if (n->n_inputs > 16 || n->n_outputs != 1) return kiln_unsupported("%s arity", n->op_type);
  fold_inputs f = {c->g, vals, n};
  kiln_status st = zero_inputs(c->g, n, vals);
  if (!st) st = kiln_interp_eval_node(c->g, (int)(n - c->g->nodes.data), fold_lookup, &f, outs);
  for (int i = 0; i < n->n_inputs && i < 16; i++) kiln_val_free(vals[i]);
  if (!st && (!outs[0] || outs[0]->kind != KILN_TYPE_TENSOR || !outs[0]->t))
    st = kiln_unsupported("%s gave no tensor", n->op_type);
  if (!st) {
    *out = outs[0]->t;
    outs[0]->t = NULL;
  }
  kiln_val_free(outs[0]);
  return st;
}

/* The fill value of a ConstantOfShape (its "value" attribute, else a zero of the output's
 * type): the kernel stores it everywhere, so the result is never materialized now. */
static kiln_status fill_value(const kiln_node *n, const kiln_type *y, kiln_tensor **out) {
  const kiln_attr *a = kiln_node_attr(n, "value");
  if (!a || a->kind != KILN_ATTR_TENSOR || !a->t)
    return kiln_tensor_new(y->dtype, 1, (const int64_t[]){1}, out);
  if (a->t->numel != 1 || a->t->dtype != y->dtype)
    return kiln_unsupported("ConstantOfShape value of %lld elements", (long long)a->t->numel);
  return kiln_tensor_clone(a->t, out);
}

static kiln_status fold(one *s) {
  kiln_tensor *t;
  bool fill = s->n->op == KILN_OP_ConstantOfShape;
  if (fill) {
    KILN_TRY(fill_value(s->n, s->y, &t));
  } else {
    KILN_TRY(eval_now(s->c, s->n, &t));
  }
  if (t->dtype != s->y->dtype || (!fill && t->numel != kiln_lower_numel(s->y))) {
    kiln_tensor_free(t);
    return kiln_unsupported("%s result differs from its static type", s->n->op_type);
  }
  int pb = kiln_lower_param_packed(s->c, s->k, &s->step, "folded", t);
  int yb = param(s, s->n->outputs[0]);
  int64_t total = kiln_lower_numel(s->y);
  int i = kiln_tkernel_var(s->k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(s->k, i, kiln_tint(s->k, total), KILN_LOOP_PARALLEL);
  kiln_tblock_push(s->k, &loop->body,
                   kiln_tstore(s->k, yb, kiln_tv(s->k, i),
                               kiln_tload(s->k, pb, fill ? kiln_tint(s->k, 0) : kiln_tv(s->k, i))));
  kiln_tblock_push(s->k, &s->k->body, loop);
  return KILN_OK;
}

/* ---- Trilu, EyeLike, OneHot ---- */
/* The diagonal offset k: constant, or loaded from its (scalar) input at run time. */
static kiln_texpr *trilu_k(one *s) {
  const kiln_node *n = s->n;
  int64_t kv[1];
  int nk;
  if (n->n_inputs < 2 || n->inputs[1] < 0 || KILN_MUTANT(329)) /* mutant 329: k read as 0 */
    return kiln_tint(s->k, 0);
  if (kiln_lower_const_ints(s->c->g, n->inputs[1], kv, 1, &nk) && nk == 1)
    return kiln_tint(s->k, kv[0]);
  return kiln_tcast(s->k, KILN_I64, kiln_tload(s->k, param(s, n->inputs[1]), kiln_tint(s->k, 0)));
}

static kiln_status trilu(one *s) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  bool upper = da.upper;
  if (s->x->rank < 2) return kiln_invalid("Trilu of rank %d", s->x->rank);
  int xb = param(s, s->n->inputs[0]), yb = param(s, s->n->outputs[0]);
  kiln_texpr *kk = trilu_k(s);
  kiln_nest nest = out_nest(s);
  kiln_tkernel *k = s->k;
  int r = s->y->rank;
  int rd = KILN_MUTANT(194) ? 1 : r - 1; /* mutant 194: dims 0 and 1 (right for rank 2 only) */
  kiln_texpr *diff = kiln_tbin(k, KILN_TOP_SUB, ov(s, &nest, rd), ov(s, &nest, rd - 1));
  kiln_texpr *keep = kiln_tbin(k,
                               upper             ? KILN_TOP_GE
                               : KILN_MUTANT(88) ? KILN_TOP_LT
                                                 : KILN_TOP_LE,
                               diff, kk); /* mutant 88: the lower triangle without its diagonal */
  kiln_texpr *at = out_index(s, &nest);
  kiln_tblock_push(k, nest.body,
                   kiln_tstore(k, yb, at,
                               kiln_tselect(k, keep, kiln_tload(k, xb, out_index(s, &nest)),
                                            stored_const(k, s->y->dtype, 0))));
  return KILN_OK;
}

static kiln_status eyelike(one *s) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  int64_t kv = da.k;
  if (s->y->rank != 2) return kiln_invalid("EyeLike of rank %d", s->y->rank);
  int yb = param(s, s->n->outputs[0]);
  kiln_nest nest = out_nest(s);
  kiln_tkernel *k = s->k;
  kiln_texpr *diag =
      kiln_tbin(k, KILN_TOP_EQ, kiln_tbin(k, KILN_TOP_SUB, ov(s, &nest, 1), ov(s, &nest, 0)),
                kiln_tint(k, KILN_MUTANT(102) ? -kv : kv)); /* mutant 102: k counted as i - j */
  kiln_tblock_push(k, nest.body,
                   kiln_tstore(k, yb, out_index(s, &nest),
                               kiln_tselect(k, diag, stored_const(k, s->y->dtype, 1),
                                            stored_const(k, s->y->dtype, 0))));
  return KILN_OK;
}

static kiln_status onehot(one *s) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  int64_t axis = da.axis;
  int r = s->y->rank;
  if (axis < 0) axis += KILN_MUTANT(173) ? s->x->rank : r; /* mutant 173: the indices' rank */
  if (axis < 0 || axis >= r) return kiln_invalid("OneHot: axis out of range");
  const kiln_type *vt = kiln_lower_static(s->c->g, s->n->inputs[2]);
  if (kiln_lower_numel(vt) != 2) return kiln_invalid("OneHot needs two values");
  int ib = param(s, s->n->inputs[0]), vb = param(s, s->n->inputs[2]);
  int yb = param(s, s->n->outputs[0]);
  kiln_nest nest = out_nest(s);
  kiln_tkernel *k = s->k;
  kiln_texpr *ii[KILN_MAX_RANK];
  for (int d = 0, j = 0; d < r; d++)
    if (d != axis) ii[j++] = ov(s, &nest, d);
  kiln_texpr *raw =
      kiln_tcast(k, KILN_I64, kiln_tload(k, ib, kiln_lower_index(k, s->x->rank, s->xd, ii)));
  int iv = kiln_tkernel_var(k, "hot", KILN_I64);
  int64_t depth = s->yd[axis];
  kiln_tblock_push(
      k, nest.body,
      kiln_tassign(k, iv,
                   KILN_MUTANT(101) /* mutant 101: negative indices not wrapped */
                       ? raw
                       : kiln_tselect(k, kiln_tbin(k, KILN_TOP_LT, raw, kiln_tint(k, 0)),
                                      kiln_tadd(k, raw, kiln_tint(k, depth)), raw)));
  kiln_texpr *on = kiln_tbin(k, KILN_TOP_EQ, kiln_tv(k, iv), ov(s, &nest, (int)axis));
  kiln_tblock_push(
      k, nest.body,
      kiln_tstore(k, yb, out_index(s, &nest),
                  kiln_tselect(k, on, kiln_tload(k, vb, kiln_tint(k, !KILN_MUTANT(205))),
                               kiln_tload(k, vb, kiln_tint(k, KILN_MUTANT(205))))));
  /* mutant 205: values read as [on, off] (ONNX: [off_value, on_value]) */
  return KILN_OK;
}

/* ---- CumSum, CumProd ---- */
/* The running sums along `axis`, under `parent`. */
static void cum_along(one *s, kiln_tblock *parent, int axis, int xb, int yb, bool prod, bool excl,
                      bool rev) {
  kiln_tkernel *k = s->k;
  int r = s->x->rank;
  int64_t od[KILN_MAX_RANK];
  for (int d = 0, j = 0; d < r; d++)
    if (d != axis) od[j++] = s->xd[d];
  kiln_nest nest;
  char pre[3][16]; /* names unique per axis: a kernel may hold one nest per axis */
  snprintf(pre[0], sizeof pre[0], "a%d_o", axis);
  snprintf(pre[1], sizeof pre[1], "a%d_acc", axis);
  snprintf(pre[2], sizeof pre[2], "a%d_t", axis);
  kiln_lower_nest(k, parent, r - 1, od, pre[0], false, &nest);
  if (r == 1) nest.body = parent;
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_REDUCTION, s->x->dtype);
  int acc = kiln_tkernel_var(k, pre[1], ct), t = kiln_tkernel_var(k, pre[2], KILN_I64);
  bool unit = prod && !KILN_MUTANT(268); /* mutant 268: CumProd starts from CumSum's 0 */
  kiln_texpr *init =
      kiln_dtype_is_float(ct) ? kiln_tfloat(k, ct, unit) : kiln_tconst_int(k, ct, unit);
  kiln_tblock_push(k, nest.body, kiln_tassign(k, acc, init));
  kiln_tstmt *loop = kiln_tfor(k, t, kiln_tint(k, s->xd[axis]), KILN_LOOP_SERIAL);
  kiln_tblock_push(k, nest.body, loop);
  kiln_texpr *pos = kiln_tv(k, t);
  if (rev) /* mutant 238: reversed from the extent, not extent - 1 */
    pos =
        kiln_tadd(k, kiln_tint(k, s->xd[axis] - !KILN_MUTANT(238)), kiln_tun(k, KILN_TOP_NEG, pos));
  kiln_texpr *idx[KILN_MAX_RANK];
  for (int d = 0, j = 0; d < r; d++) idx[d] = d == axis ? pos : kiln_tv(k, nest.vars[j++]);
  kiln_texpr *at = kiln_lower_index(k, r, s->xd, idx);
  kiln_texpr *next = kiln_tbin(k, prod ? KILN_TOP_MUL : KILN_TOP_ADD, kiln_tv(k, acc),
                               kiln_lower_load(k, KILN_PREC_REDUCTION, xb, at));
  kiln_tstmt *upd = kiln_tassign(k, acc, next);
  kiln_tstmt *st = kiln_tstore(k, yb, at, kiln_lower_to_storage(k, s->y->dtype, kiln_tv(k, acc)));
  kiln_tblock_push(k, &loop->body, excl ? st : upd);
  kiln_tblock_push(k, &loop->body, excl ? upd : st);
}

/* A constant axis gives one nest; an axis known only at run time one nest per candidate,
 * each under a test of the axis (an axis out of range sets the error flag, so that the run
 * fails as with the reference kernel). */
static kiln_status cum(one *s, bool prod) {
  int64_t av[1];
  int na, r = s->x->rank;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  bool excl = da.exclusive, rev = da.reverse;
  if (KILN_MUTANT(40)) excl = 0; /* mutant 40: exclusive ignored */
  if (r < 1) return kiln_invalid("%s of a scalar", s->n->op_type);
  int xb = param(s, s->n->inputs[0]), yb = param(s, s->n->outputs[0]);
  kiln_tkernel *k = s->k;
  if (kiln_lower_const_ints(s->c->g, s->n->inputs[1], av, 1, &na) && na == 1) {
    int64_t axis = av[0] < 0 ? av[0] + r : av[0];
    if (axis < 0 || axis >= r) return kiln_invalid("%s: axis out of range", s->n->op_type);
    cum_along(s, &k->body, (int)axis, xb, yb, prod, excl, rev);
    return KILN_OK;
  }
  const kiln_type *at = kiln_lower_static(s->c->g, s->n->inputs[1]);
  if (!kiln_dtype_is_int(at->dtype) || kiln_lower_numel(at) != 1)
    return kiln_invalid("%s: axis must be one integer", s->n->op_type);
  int ab = param(s, s->n->inputs[1]);
  int flag =
      kiln_lower_param_check(s->c, k, &s->step, "axis out of range (the input has rank %d)", r);
  int av_var = kiln_tkernel_var(k, "axis", KILN_I64);
  kiln_texpr *raw = kiln_tcast(k, KILN_I64, kiln_tload(k, ab, kiln_tint(k, 0)));
  kiln_tblock_push(k, &k->body, kiln_tassign(k, av_var, raw));
  kiln_tstmt *bad = kiln_tif(
      k, kiln_tbin(k, KILN_TOP_OR, kiln_tbin(k, KILN_TOP_LT, kiln_tv(k, av_var), kiln_tint(k, -r)),
                   kiln_tbin(k, KILN_TOP_GE, kiln_tv(k, av_var), kiln_tint(k, r))));
  kiln_tblock_push(k, &bad->body, kiln_lower_check_fail(k, flag));
  kiln_tblock_push(k, &k->body, bad);
  for (int a = 0; a < r; a++) {
    kiln_texpr *is_a =
        kiln_tbin(k, KILN_TOP_OR, kiln_tbin(k, KILN_TOP_EQ, kiln_tv(k, av_var), kiln_tint(k, a)),
                  kiln_tbin(k, KILN_TOP_EQ, kiln_tv(k, av_var),
                            kiln_tint(k, KILN_MUTANT(209) ? a : a - r))); /* mutant 209 */
    kiln_tstmt *branch = kiln_tif(k, is_a);
    kiln_tblock_push(k, &k->body, branch);
    cum_along(s, &branch->body, a, xb, yb, prod, excl, rev);
  }
  return KILN_OK;
}

/* ---- Hardmax: rows of n elements at stride `inner` ---- */
static kiln_status hardmax(one *s) {
  int r = s->x->rank;
  if (r == 0) return kiln_invalid("Hardmax: axis out of range");
  kiln_attrs_softmax sa;
  KILN_TRY(kiln_attrs_softmax_decode(s->n, r, &sa));
  int64_t a = sa.axis;
  int64_t outer = 1, n = 1, inner = 1;
  for (int d = 0; d < r; d++) {
    if (d < a) outer *= s->xd[d];
    else if (d == a || (sa.coerce_2d && !KILN_MUTANT(172))) n *= s->xd[d]; /* mutant 172 */
    else inner *= s->xd[d];
  }
  if (n == 0) return kiln_unsupported("Hardmax of an empty axis");
  int xb = param(s, s->n->inputs[0]), yb = param(s, s->n->outputs[0]);
  kiln_tkernel *k = s->k;
  int64_t rows[2] = {outer, inner};
  kiln_nest nest;
  kiln_lower_nest(k, &k->body, 2, rows, "r", false, &nest);
  kiln_texpr *base =
      kiln_tadd(k, kiln_tmul(k, kiln_tv(k, nest.vars[0]), n * inner), kiln_tv(k, nest.vars[1]));
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_REDUCTION, s->x->dtype);
  int best = kiln_tkernel_var(k, "best", ct), bi = kiln_tkernel_var(k, "bi", KILN_I64);
  int j = kiln_tkernel_var(k, "j", KILN_I64);
  kiln_tblock_push(k, nest.body,
                   kiln_tassign(k, best, kiln_lower_load(k, KILN_PREC_REDUCTION, xb, base)));
  kiln_tblock_push(k, nest.body, kiln_tassign(k, bi, kiln_tint(k, 0)));
  kiln_tstmt *find = kiln_tfor(k, j, kiln_tint(k, n), KILN_LOOP_SERIAL);
  kiln_texpr *at = kiln_tadd(k, base, kiln_tmul(k, kiln_tv(k, j), inner));
  kiln_tstmt *better =
      kiln_tif(k, kiln_tbin(k, KILN_MUTANT(103) ? KILN_TOP_GE : KILN_TOP_GT, /* mutant 103 */
                            kiln_lower_load(k, KILN_PREC_REDUCTION, xb, at), kiln_tv(k, best)));
  kiln_tblock_push(k, &better->body,
                   kiln_tassign(k, best, kiln_lower_load(k, KILN_PREC_REDUCTION, xb, at)));
  kiln_tblock_push(k, &better->body, kiln_tassign(k, bi, kiln_tv(k, j)));
  kiln_tblock_push(k, &find->body, better);
  kiln_tblock_push(k, nest.body, find);
  kiln_tstmt *write = kiln_tfor(k, j, kiln_tint(k, n), KILN_LOOP_SERIAL);
  kiln_texpr *hit = kiln_tbin(k, KILN_TOP_EQ, kiln_tv(k, j), kiln_tv(k, bi));
  kiln_tblock_push(k, &write->body,
                   kiln_tstore(k, yb, kiln_tadd(k, base, kiln_tmul(k, kiln_tv(k, j), inner)),
                               kiln_tselect(k, hit, stored_const(k, s->y->dtype, 1),
                                            stored_const(k, s->y->dtype, 0))));
  kiln_tblock_push(k, nest.body, write);
  return KILN_OK;
}

/* ---- Dropout in inference (no training_mode, or a constant false one; or ratio 0) ---- */
static bool const_scalar(const kiln_graph *g, int v, double *out) {
  if (v < 0 || g->values.data[v].kind != KILN_VALUE_CONST) return false;
  const kiln_tensor *t = g->values.data[v].data;
  if (!t || t->numel != 1) return false;
  *out = kiln_load_f64(t->dtype, t->data, 0);
  return true;
}

static kiln_status dropout(one *s) {
  const kiln_node *n = s->n;
  const kiln_graph *g = s->c->g;
  double ratio = 0.5, train = 0;
  if (n->n_inputs > 1 && n->inputs[1] >= 0 && !const_scalar(g, n->inputs[1], &ratio))
    return kiln_unsupported("Dropout with a non-constant ratio");
  if (n->n_inputs > 2 && n->inputs[2] >= 0 && !const_scalar(g, n->inputs[2], &train))
    return kiln_unsupported("Dropout with a non-constant training_mode");
  if (n->opset < 7) return kiln_unsupported("Dropout before opset 7 (is_test)");
  if (train != 0 && ratio != 0) return kiln_unsupported("Dropout in training mode (random)");
  int xb = param(s, n->inputs[0]), yb = param(s, n->outputs[0]);
  int mb = n->n_outputs > 1 && n->outputs[1] >= 0 ? param(s, n->outputs[1]) : -1;
  const kiln_type *mt = mb >= 0 ? kiln_lower_static(g, n->outputs[1]) : NULL;
  kiln_nest nest = out_nest(s);
  kiln_tkernel *k = s->k;
  kiln_tblock_push(k, nest.body,
                   kiln_tstore(k, yb, out_index(s, &nest), kiln_tload(k, xb, out_index(s, &nest))));
  if (mb >= 0)
    kiln_tblock_push(k, nest.body,
                     kiln_tstore(k, mb, out_index(s, &nest), stored_const(k, mt->dtype, 1)));
  return KILN_OK;
}

static bool known_op(kiln_op op) {
  switch (op) {
  case KILN_OP_Shape:
  case KILN_OP_Size:
  case KILN_OP_Constant:
  case KILN_OP_ConstantOfShape:
  case KILN_OP_Trilu:
  case KILN_OP_EyeLike:
  case KILN_OP_OneHot:
  case KILN_OP_CumSum:
  case KILN_OP_CumProd:
  case KILN_OP_Hardmax:
  case KILN_OP_Dropout: return true;
  default: return false;
  }
}

/* Input dtypes the kernels read (as data) must load into a compute type. */
static bool dtypes_ok(const kiln_graph *g, const kiln_node *n) {
  if (shape_only(g, n)) return true;
  for (int i = 0; i < n->n_inputs; i++)
    if (n->inputs[i] >= 0 && !kiln_lower_dtype_ok(kiln_lower_static(g, n->inputs[i])->dtype))
      return false;
  for (int i = 0; i < n->n_outputs; i++)
    if (n->outputs[i] >= 0 && !kiln_lower_dtype_ok(kiln_lower_static(g, n->outputs[i])->dtype))
      return false;
  return true;
}

kiln_status kiln_lower_misc_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  if (!known_op(n->op) || grp->n_nodes != 1)
    return KILN_BUG("the lowering table sent %s to the single-node lowering", n->op_type);
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return kiln_unsupported("%s with its first output omitted", n->op_type);
  if (!kiln_lower_node_static(c->g, n))
    return kiln_unsupported("a value of %s is not a static tensor", n->op_type);
  if (n->op == KILN_OP_ConstantOfShape && !shape_only(c->g, n))
    return kiln_unsupported("ConstantOfShape of a computed shape");
  if (!dtypes_ok(c->g, n)) return kiln_unsupported("%s of an unsupported dtype", n->op_type);
  one s;
  begin(&s, c, grp, n);
  kiln_status st;
  switch (n->op) {
  case KILN_OP_Trilu: st = trilu(&s); break;
  case KILN_OP_EyeLike: st = eyelike(&s); break;
  case KILN_OP_OneHot: st = onehot(&s); break;
  case KILN_OP_CumSum: st = cum(&s, false); break;
  case KILN_OP_CumProd: st = cum(&s, true); break;
  case KILN_OP_Hardmax: st = hardmax(&s); break;
  case KILN_OP_Dropout: st = dropout(&s); break;
  default: st = fold(&s); break;
  }
  KILN_TRY(st);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}
