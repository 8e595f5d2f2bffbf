/* Error rules of elementwise functions and monotone reductions, by evaluation at the corners
 * of the input boxes [x - e, x + e]; the perturbation fallback; exact ops.
 *
 * For a function monotone in each input separately (or convex/concave in it) on the box,
 * the largest deviation |f(x') - f(x)| over the box is attained at a corner, so the corners
 * give the propagated error exactly. Each corner is one evaluation of the op on whole
 * tensors (elementwise ops and monotone reductions map corners to corners). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

int64_t *kiln_bnd_bcast_index(const kiln_tensor *t, const kiln_tensor *y) {
  int64_t *idx = kiln_xcalloc((size_t)y->numel + 1, sizeof *idx);
  int64_t str[KILN_MAX_RANK] = {0}, pos[KILN_MAX_RANK] = {0};
  kiln_broadcast_strides(t, y->rank, y->dims, str);
  int64_t off = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    idx[i] = off < t->numel ? off : 0;
    for (int d = y->rank - 1; d >= 0; d--) { /* odometer */
      pos[d]++, off += str[d];
      if (pos[d] < y->dims[d]) break;
      off -= str[d] * pos[d], pos[d] = 0;
    }
  }
  return idx;
}

/* own rounding: u |y| (the store) + ulps u (|y| + absmag |x0| + absc) */
static void add_own(const bnd_node *b, const bnd_opinfo *info, int k, kiln_tensor *e) {
  const kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
  if (!y) return;
  double u = b->u_out[k], c = info->ulps * u, tiny = (info->ulps + 1) * b->tiny_out[k];
  double *ed = e->data;
  const double *yd = y->data;
  const kiln_tensor *x0 = info->absmag > 0 && kiln_bnd_is_float_val(b->in[0]) ? b->in[0]->t : NULL;
  int64_t *xi = x0 ? kiln_bnd_bcast_index(x0, y) : NULL;
  bool pw = b->n->op == KILN_OP_Pow;
  kiln_op op = b->n->op; /* selections return an input (or its negation): no rounding */
  if (op == KILN_OP_Abs || op == KILN_OP_Neg || op == KILN_OP_Relu || op == KILN_OP_Max ||
      op == KILN_OP_Min || op == KILN_OP_Clip || op == KILN_OP_ThresholdedRelu)
    u = 0, c = 0, tiny = 0;
  for (int64_t i = 0; i < e->numel; i++) {
    double ay = fabs(yd[i]), m = ay + info->absc;
    if (xi) m += info->absmag * fabs(((const double *)x0->data)[xi[i]]);
    if (pw && ay > 0 && isfinite(ay)) m += 2 * ay * fabs(log(ay)); /* exp(y log x) */
    ed[i] += c * m + u * ay + tiny;
  }
  free(xi);
}

/* e[i] = max(e[i], |c[i] - y[i]|); a corner leaving the finite numbers makes the element
 * unstable (err INF). */
static int64_t fold_corner(const kiln_tensor *y, const kiln_tensor *c, kiln_tensor *e,
                           double factor) {
  int64_t unstable = 0;
  double *ed = e->data;
  const double *yd = y->data;
  if (!c || c->numel != y->numel) {
    for (int64_t i = 0; i < e->numel; i++) ed[i] = INFINITY;
    return y->numel;
  }
  const double *cd = c->data;
  for (int64_t i = 0; i < e->numel; i++) {
    if (!isfinite(yd[i])) {
      if (cd[i] != yd[i] && !(isnan(cd[i]) && isnan(yd[i]))) unstable++;
      continue;
    }
    if (!isfinite(cd[i])) {
      unstable++, ed[i] = INFINITY;
      continue;
    }
    ed[i] = fmax(ed[i], factor * fabs(cd[i] - yd[i]));
  }
  return unstable;
}

/* Inputs whose interval contains 0 at a pole (Div's divisor, Reciprocal, Log): unstable. */
static void pole_check(bnd_node *b, int p, kiln_tensor *e) {
  if (p < 0 || !kiln_bnd_has_err(b, p)) return;
  const kiln_tensor *x = b->in[p]->t, *ex = b->ein[p], *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y || x->dtype != KILN_F64) return;
  int64_t *xi = kiln_bnd_bcast_index(x, y), n = 0;
  double *ed = e->data;
  for (int64_t i = 0; i < y->numel; i++) {
    double xv = ((double *)x->data)[xi[i]], ev = ((double *)ex->data)[xi[i]];
    if (ev > 0 && fabs(xv) <= ev) n++, ed[i] = INFINITY;
  }
  free(xi);
  kiln_bnd_unstable(b, n, "an interval contains a pole at 0");
}

/* Evaluates the corner `mask` (bit j: + for the j-th input with an error) and folds it. */
static kiln_status corner(bnd_node *b, const int *fi, int nf, unsigned mask, bool all_same,
                          double factor, kiln_tensor **e) {
  bnd_subst *how = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *how);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = BND_SAME;
  for (int j = 0; j < nf; j++)
    how[fi[j]] = (all_same ? mask & 1 : (mask >> j) & 1) ? BND_PLUS : BND_MINUS;
  kiln_val **c = NULL;
  kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &c);
  free(how);
  if (st) { /* the op rejects the perturbed inputs (e.g. a domain check): unstable */
    kiln_status_free(st);
    kiln_bnd_unstable(b, 1, "the op fails on perturbed inputs");
    return KILN_OK;
  }
  for (int k = 0; k < b->n->n_outputs; k++) {
    kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
    if (!y) continue;
    int64_t un = fold_corner(y, kiln_bnd_out_t(b, c, k), e[k], factor);
    kiln_bnd_unstable(b, un, "a perturbed input gives NaN/Inf");
  }
  kiln_bnd_free_outs(b, c);
  return KILN_OK;
}

static kiln_tensor **zero_errs(const bnd_node *b) {
  kiln_tensor **e = kiln_xcalloc((size_t)b->n->n_outputs + 1, sizeof *e);
  for (int k = 0; k < b->n->n_outputs; k++) {
    kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
    if (y) e[k] = kiln_bnd_zeros_like(y);
  }
  return e;
}

static int err_inputs(const bnd_node *b, int *fi) {
  int nf = 0;
  for (int i = 0; i < b->n->n_inputs; i++)
    if (kiln_bnd_has_err(b, i)) fi[nf++] = i;
  return nf;
}

/* ---- CORNER ---- */
kiln_status kiln_bnd_corner(bnd_node *b, const bnd_opinfo *info) {
  int *fi = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *fi);
  int nf = err_inputs(b, fi);
  kiln_tensor **e = zero_errs(b);
  bool few = !info->mono_all && nf <= 5;
  unsigned ncorner = nf == 0 ? 0 : few ? 1u << nf : 2;
  double factor = few || info->mono_all ? 1 : 2;
  kiln_status st = KILN_OK;
  for (unsigned c = 0; !st && c < ncorner; c++) st = corner(b, fi, nf, c, !few, factor, e);
  if (!st && e[0]) pole_check(b, info->pole1 - 1, e[0]);
  if (!st && b->n->op == KILN_OP_BatchNormalization && e[0]) {
    /* own: 6 u (|x| + |mean|) |scale| / sqrt(var + eps) + |B| */
    bnd_subst how[5] = {BND_ABS, BND_ABS, BND_ABS, BND_NEG_ABS, BND_SAME};
    kiln_val **m = NULL;
    if (b->n->n_inputs == 5) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &m);
    kiln_tensor *mt = kiln_bnd_out_t(b, m, 0);
    if (mt && mt->numel == e[0]->numel) kiln_bnd_add_rel(e[0], mt, 6 * b->u_out[0]);
    kiln_bnd_free_outs(b, m);
  }
  for (int k = 0; k < b->n->n_outputs; k++) {
    if (e[k] && !st) add_own(b, info, k, e[k]);
    if (st) kiln_tensor_free(e[k]);
    else b->eout[k] = e[k];
  }
  free(e);
  free(fi);
  return st;
}

/* ---- LIPSCHITZ (Sin, Cos): |f(x') - f(x)| <= min(|x' - x|, 2) ---- */
kiln_status kiln_bnd_lipschitz(bnd_node *b, const bnd_opinfo *info) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y) return KILN_OK;
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  if (kiln_bnd_has_err(b, 0) && b->ein[0]->numel == e->numel) {
    double *ed = e->data;
    const double *xd = b->ein[0]->data;
    for (int64_t i = 0; i < e->numel; i++) ed[i] = fmin(xd[i], 2);
  }
  add_own(b, info, 0, e);
  b->eout[0] = e;
  return KILN_OK;
}

/* ---- REDUCE_MONO: increasing in every element: the two corners all-minus, all-plus ---- */
static void logsum_own(bnd_node *b, kiln_tensor *e, kiln_val **m) {
  const kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0), *mt = kiln_bnd_out_t(b, m, 0);
  double K = kiln_bnd_ratio(b), u = b->u_out[0];
  double *ed = e->data;
  for (int64_t i = 0; i < e->numel; i++) {
    double yv = ((double *)y->data)[i];
    if (b->n->op == KILN_OP_ReduceLogSumExp) {
      ed[i] += 2 * kiln_bnd_gamma(K + 4, u) * (1 + fabs(yv));
    } else if (mt && mt->numel == e->numel) { /* log S: relative error of S is gamma M / S */
      double lm = ((double *)mt->data)[i];
      ed[i] += kiln_bnd_gamma(K + 2, u) * exp(lm - yv) + 4 * u * fabs(yv);
      /* M = sum |x| is a running sum a kernel holds (in f32 under a policy's f32
       * accumulator): past the range, log M is finite and the kernel's is not */
      ed[i] = kiln_bnd_inter_err(b, 0, exp(lm), ed[i]);
    }
  }
}

kiln_status kiln_bnd_reduce_mono(bnd_node *b, const bnd_opinfo *info) {
  int *fi = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *fi);
  int nf = err_inputs(b, fi);
  kiln_tensor **e = zero_errs(b);
  kiln_status st = KILN_OK;
  for (unsigned c = 0; !st && nf && c < 2; c++) st = corner(b, fi, nf, c, true, 1, e);
  kiln_op op = b->n->op;
  if (!st && e[0] && (op == KILN_OP_ReduceLogSumExp || op == KILN_OP_ReduceLogSum)) {
    bnd_subst *how = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *how);
    for (int i = 1; i < b->n->n_inputs; i++) how[i] = BND_SAME;
    how[0] = BND_ABS;
    kiln_val **m = NULL;
    if (op == KILN_OP_ReduceLogSum) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &m);
    if (!st) logsum_own(b, e[0], m);
    kiln_bnd_free_outs(b, m);
    free(how);
  }
  for (int k = 0; k < b->n->n_outputs; k++) {
    if (e[k] && !st) add_own(b, info, k, e[k]);
    if (st) kiln_tensor_free(e[k]);
    else b->eout[k] = e[k];
  }
  free(e);
  free(fi);
  return st;
}

/* ---- EXACT: the result does not depend on float input values; float outputs (windows)
 * round once per ulps ---- */
kiln_status kiln_bnd_exact(bnd_node *b, const bnd_opinfo *info) {
  for (int k = 0; info->ulps > 0 && k < b->n->n_outputs; k++) {
    kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
    if (!y) continue;
    b->eout[k] = kiln_bnd_zeros_like(y);
    add_own(b, info, k, b->eout[k]);
  }
  return KILN_OK;
}

/* Elements of a non-float output that differ between two evaluations. */
static int64_t count_diff(const kiln_val *a, const kiln_val *c) {
  if (!a || !c || !a->t || !c->t) return a == c || (a && c && !a->t && !c->t) ? 0 : 1;
  if (a->t->dtype != c->t->dtype || a->t->numel != c->t->numel || a->t->rank != c->t->rank)
    return a->t->numel > 0 ? a->t->numel : 1;
  if (a->t->dtype == KILN_STRING) return 0;
  size_t sz = kiln_dtype_size(a->t->dtype);
  int64_t n = 0;
  for (int64_t i = 0; i < a->t->numel; i++)
    n += memcmp((char *)a->t->data + i * sz, (char *)c->t->data + i * sz, sz) != 0;
  return n;
}

/* ---- PERTURB: an op without a rule. err = 2 max over the all-plus and all-minus
 * perturbations of the deviation + (ulps + 2 K) u max(|y|, |op(|x|)|), K the elements of
 * the largest input per output element. Non-float outputs that change are unstable. ---- */
kiln_status kiln_bnd_perturb(bnd_node *b, double ulps) {
  int *fi = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *fi);
  int nf = err_inputs(b, fi);
  kiln_tensor **e = zero_errs(b);
  for (unsigned c = 0; nf && c < 2; c++) {
    bnd_subst *how = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *how);
    for (int i = 0; i < b->n->n_inputs; i++) how[i] = BND_SAME;
    for (int j = 0; j < nf; j++) how[fi[j]] = c ? BND_PLUS : BND_MINUS;
    kiln_val **p = NULL;
    kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &p);
    free(how);
    if (st) {
      kiln_status_free(st);
      kiln_bnd_unstable(b, 1, "the op fails on perturbed inputs");
      continue;
    }
    for (int k = 0; k < b->n->n_outputs; k++) {
      kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
      if (y) kiln_bnd_unstable(b, fold_corner(y, kiln_bnd_out_t(b, p, k), e[k], 2), "perturbed");
      else kiln_bnd_unstable(b, count_diff(b->out[k], p[k]), "a discrete output changes");
    }
    kiln_bnd_free_outs(b, p);
  }
  /* magnitude */
  bnd_subst *how = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *how);
  double big = 1;
  for (int i = 0; i < b->n->n_inputs; i++) {
    how[i] = kiln_bnd_is_float_val(b->in[i]) ? BND_ABS : BND_SAME;
    if (kiln_bnd_is_float_val(b->in[i])) big = fmax(big, (double)b->in[i]->t->numel);
  }
  kiln_val **m = NULL;
  kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &m);
  kiln_status_free(st);
  free(how);
  for (int k = 0; k < b->n->n_outputs; k++) {
    kiln_tensor *y = kiln_bnd_out_t(b, b->out, k), *mt = kiln_bnd_out_t(b, m, k);
    if (!y) continue;
    double K = fmin(1e6, fmax(1, ceil(big / (y->numel > 0 ? (double)y->numel : 1))));
    double c = (ulps + 2 * K) * b->u_out[k];
    double *ed = e[k]->data;
    const double *yd = y->data;
    bool mok = mt && mt->numel == y->numel;
    for (int64_t i = 0; i < y->numel; i++) {
      double mag = fmax(fabs(yd[i]), mok ? fabs(((double *)mt->data)[i]) : 0);
      ed[i] += c * (isfinite(mag) ? mag : fabs(yd[i])) + (ulps + 2 * K) * b->tiny_out[k];
    }
    b->eout[k] = e[k];
  }
  kiln_bnd_free_outs(b, m);
  free(e);
  free(fi);
  return KILN_OK;
}
