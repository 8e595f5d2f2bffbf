/* Error rules of composite ops, derived through their decomposition: Softmax and LogSoftmax
 * (max shift, exp, row sum, division or log) and the row normalizations (LayerNormalization,
 * RMSNormalization, InstanceNormalization, GroupNormalization: mean, variance, 1/sqrt,
 * scale and bias; LpNormalization: the norm and a division).
 *
 * Rows are addressed as (outer, n, inner): element j of row (o, i) is at
 * o n inner + j inner + i. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

typedef struct rows {
  int64_t outer, n, inner;
  int64_t bs; /* > 0: a BatchNormalization's channel rows: row c holds x[b, c, s] for every
                 batch entry b and s < bs, j = b bs + s (outer = C rows, inner 1) */
} rows;

static int64_t at(const rows *rw, int64_t row, int64_t j) {
  if (rw->bs > 0) return (j / rw->bs) * rw->outer * rw->bs + row * rw->bs + j % rw->bs;
  return (row / rw->inner) * rw->n * rw->inner + j * rw->inner + row % rw->inner;
}

static int64_t prod(const kiln_tensor *t, int lo, int hi) {
  int64_t p = 1;
  for (int d = lo; d < hi; d++) p *= t->dims[d];
  return p;
}

static kiln_status axis_attr(const bnd_node *b, int64_t dflt, const kiln_tensor *x, int *out) {
  int64_t a;
  KILN_TRY(kiln_node_int(b->n, "axis", dflt, &a));
  if (a < 0) a += x->rank;
  if (a < 0 || a > x->rank) return kiln_invalid("axis %lld out of range", (long long)a);
  *out = (int)a;
  return KILN_OK;
}

/* ---- Softmax / LogSoftmax ----
 * With d = x - max(x), s = sum exp(d), each exp carries a relative error
 * r_j = u |d_j| (the rounded shift) + 4u, the sum gamma_n + max r, the division u:
 *   Softmax:    own_j = y_j (r_j + max r + gamma_n + 3u),
 *               propagated: y_j expm1(e_j + max e) (y_j' / y_j lies in exp(+-(e_j + max e))),
 *               and exp(d_j + e_j + max e) where y_j underflowed;
 *   LogSoftmax: own_j = u |d_j| + (gamma_n + max r) / (1 - ...) + 4u |log s| + u |y_j|,
 *               propagated: e_j + max e (log-sum-exp is 1-Lipschitz in the max norm). */
static void softmax_row(const rows *rw, int64_t row, const double *x, const double *e,
                        const double *y, double u, bool log_sm, double *out) {
  int64_t n = rw->n;
  double m = -INFINITY, emax = 0, rmax = 0;
  for (int64_t j = 0; j < n; j++) {
    m = fmax(m, x[at(rw, row, j)]);
    if (e) emax = fmax(emax, e[at(rw, row, j)]);
  }
  for (int64_t j = 0; j < n; j++) {
    double d = x[at(rw, row, j)] - m;
    if (isfinite(d)) rmax = fmax(rmax, u * fabs(d) + 4 * u);
  }
  double srel = kiln_bnd_gamma((double)n, u) + rmax;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = at(rw, row, j);
    double yj = y[k], d = x[k] - m, ej = e ? e[k] : 0;
    if (!isfinite(yj) || !isfinite(d)) {
      out[k] = 0;
      continue;
    }
    double rj = u * fabs(d) + 4 * u;
    if (!log_sm) {
      double v = yj == 0 ? 0 : fabs(yj) * (rj + rmax + srel + 3 * u + expm1(ej + emax));
      /* y_j expm1(..) is relative to y_j, which underflows (to 0 or a subnormal) where d_j is
       * far below 0; y_j' <= exp(d_j + e_j + max e) holds whatever y_j is. */
      if (ej + emax > 0 && fabs(yj) < 0x1p-960) v = fmax(v, exp(d + ej + emax));
      out[k] = fmin(v, fmax(yj, 1 - yj) + 2 * u); /* y and y' lie in [0, 1] */
    } else {
      double lse = d - yj; /* log s */
      double lrel = srel < 0.5 ? srel / (1 - srel) : INFINITY;
      out[k] = u * fabs(d) + lrel + 4 * u * fabs(lse) + u * fabs(yj) + ej + emax;
    }
  }
}

kiln_status kiln_bnd_softmax(bnd_node *b) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y || !kiln_bnd_is_float_val(b->in[0])) return kiln_bnd_perturb(b, 32);
  const kiln_tensor *x = b->in[0]->t;
  if (x->numel != y->numel || x->rank == 0) return kiln_bnd_perturb(b, 32);
  int axis;
  KILN_TRY(axis_attr(b, b->n->opset < 13 ? 1 : -1, x, &axis));
  if (axis >= x->rank) return kiln_bnd_perturb(b, 32);
  rows rw = {prod(x, 0, axis), x->dims[axis], prod(x, axis + 1, x->rank), 0};
  if (b->n->opset < 13) rw.n = prod(x, axis, x->rank), rw.inner = 1; /* 2-D coercion */
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  const double *ed = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  bool log_sm = b->n->op == KILN_OP_LogSoftmax;
  for (int64_t row = 0; rw.n > 0 && row < rw.outer * rw.inner; row++)
    softmax_row(&rw, row, x->data, ed, y->data, b->u_out[0], log_sm, e->data);
  for (int64_t i = 0; i < e->numel; i++) ((double *)e->data)[i] += (rw.n + 4) * b->tiny_out[0];
  b->eout[0] = e;
  return KILN_OK;
}

/* ---- row normalizations ---- */

typedef struct row_stats {
  double mu, r, rel_r, dmu, me, mze;
} row_stats;

/* z = (x - mu) r with mu the row mean (0 when !sub: RMS), r = 1 / sqrt(mean((x-mu)^2) + eps).
 * Own rounding: dmu = gamma_{n+1} mean|x|; the variance, in one pass (E x^2 - mu^2) or
 * two, within gamma_{n+3} (mean x^2 + mu^2) + 2 |mu| dmu + dmu^2; r relative
 * dvar / (var + eps) + 3u. Fills ez (the error of z) and z for the row. */
static void norm_row(const rows *rw, int64_t row, const double *x, const double *e, double eps,
                     bool sub, double u, double *z, double *ez, row_stats *s) {
  int64_t n = rw->n;
  double sum = 0, sabs = 0, q = 0, emax = 0, me = 0;
  for (int64_t j = 0; j < n; j++) {
    double v = x[at(rw, row, j)];
    sum += v, sabs += fabs(v), q += v * v;
    if (e) emax = fmax(emax, e[at(rw, row, j)]), me += e[at(rw, row, j)];
  }
  double dn = (double)n, mu = sub ? sum / dn : 0, var = 0;
  for (int64_t j = 0; j < n; j++) var += (x[at(rw, row, j)] - mu) * (x[at(rw, row, j)] - mu);
  var /= dn, q /= dn, me = sub ? me / dn : 0;
  double dmu = sub ? kiln_bnd_gamma(dn + 1, u) * sabs / dn : 0;
  double dvar = kiln_bnd_gamma(dn + 3, u) * (q + mu * mu) + 2 * fabs(mu) * dmu + dmu * dmu;
  double v = var + eps, r = 1 / sqrt(v), relv = dvar / v;
  double rel_r = relv <= 0.5 ? relv + 3 * u : INFINITY;
  double mze = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = at(rw, row, j);
    z[k] = (x[k] - mu) * r;
    if (e) mze += fabs(z[k]) * e[k];
  }
  mze /= dn;
  double safety = r * emax <= 0.25 ? 1 + 4 * r * emax : INFINITY;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = at(rw, row, j);
    double prop = e ? (r * (e[k] + me) + fabs(z[k]) * r * mze) * safety : 0;
    /* |z'| <= sqrt(n) for any row: a cap when the errors are too large for the model */
    ez[k] = fmin(prop + fabs(z[k]) * (rel_r + 2 * u) + r * dmu, fabs(z[k]) + 1.001 * sqrt(dn));
  }
  *s = (row_stats){mu, r, rel_r, dmu, me, mze};
}

/* LpNormalization: z = x / N, N = sqrt(sum x^2) (p = 2) or sum |x| (p = 1). */
static void lp_row(const rows *rw, int64_t row, const double *x, const double *e, int p, double u,
                   double *z, double *ez) {
  int64_t n = rw->n;
  double N = 0;
  for (int64_t j = 0; j < n; j++) {
    double v = x[at(rw, row, j)];
    N += p == 1 ? fabs(v) : v * v;
  }
  if (p == 2) N = sqrt(N);
  double sze = 0, se = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = at(rw, row, j);
    z[k] = N == 0 ? 0 : x[k] / N;
    if (e) sze += fabs(z[k]) * e[k], se += e[k];
  }
  for (int64_t j = 0; j < n; j++) {
    int64_t k = at(rw, row, j);
    double ek = e ? e[k] : 0;
    if (N == 0) {
      ez[k] = ek > 0 ? 1 : 0; /* |z'| <= 1 */
      continue;
    }
    double prop = (ek + fabs(z[k]) * (p == 1 ? se : sze)) / N;
    double safety = se / N <= 0.25 ? 1 + 4 * se / N : INFINITY;
    ez[k] = fmin(prop * safety + fabs(z[k]) * (kiln_bnd_gamma((double)n + 2, u) + 3 * u),
                 fabs(z[k]) + 1.001); /* |z'| <= 1 */
  }
}

/* Index of the scale/bias element of each element of x. */
static int64_t *param_index(const bnd_node *b, const kiln_tensor *x, const kiln_tensor *s) {
  kiln_op op = b->n->op;
  if (op != KILN_OP_InstanceNormalization && op != KILN_OP_GroupNormalization &&
      op != KILN_OP_BatchNormalization)
    return kiln_bnd_bcast_index(s, x);
  int64_t C = x->rank > 1 ? x->dims[1] : 1, S = prod(x, 2, x->rank);
  int64_t per = C > 0 && s->numel > 0 && s->numel < C ? C / s->numel : 1; /* GroupNorm 18 */
  int64_t *idx = kiln_xcalloc((size_t)x->numel + 1, sizeof *idx);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t c = S > 0 && C > 0 ? (i / S) % C : 0;
    idx[i] = per > 0 ? c / per : c;
    if (idx[i] >= s->numel) idx[i] = 0;
  }
  return idx;
}

/* y = z s + bias: e_y = e_z |s| + |z| e_s + e_b + u |z s| + u |y| */
static void affine(bnd_node *b, const kiln_tensor *x, const double *z, const double *ez,
                   kiln_tensor *e) {
  const kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  double u = b->u_out[0], *ed = e->data;
  const kiln_val *sv = b->n->n_inputs > 1 ? b->in[1] : NULL;
  const kiln_val *bv = b->n->n_inputs > 2 ? b->in[2] : NULL;
  bool has_s = kiln_bnd_is_float_val(sv), has_b = kiln_bnd_is_float_val(bv);
  int64_t *si = has_s ? param_index(b, x, sv->t) : NULL;
  int64_t *bi = has_b ? param_index(b, x, bv->t) : NULL;
  const double *es = has_s && kiln_bnd_has_err(b, 1) ? b->ein[1]->data : NULL;
  const double *eb = has_b && kiln_bnd_has_err(b, 2) ? b->ein[2]->data : NULL;
  for (int64_t i = 0; i < e->numel; i++) {
    double s = has_s ? ((double *)sv->t->data)[si[i]] : 1;
    double v = ez[i] * fabs(s) + u * fabs(z[i] * s) + u * fabs(((double *)y->data)[i]);
    if (es) v += fabs(z[i]) * es[si[i]];
    if (eb) v += eb[bi[i]];
    ed[i] = v;
  }
  free(si), free(bi);
}

/* LayerNormalization's Mean and InvStdDev outputs (one element per row). */
static void ln_stats_err(bnd_node *b, const row_stats *st, int64_t nrows) {
  for (int k = 1; k <= 2 && k < b->n->n_outputs; k++) {
    kiln_tensor *t = kiln_bnd_out_t(b, b->out, k);
    if (!t || t->numel != nrows) continue;
    kiln_tensor *e = b->eout[k] = kiln_bnd_zeros_like(t);
    double u = b->u_out[k];
    for (int64_t r = 0; r < nrows; r++) {
      const row_stats *s = &st[r];
      ((double *)e->data)[r] =
          k == 1 ? s->dmu + s->me + u * fabs(s->mu) : s->r * (s->rel_r + s->r * s->mze * 1.5 + u);
    }
  }
}

kiln_status kiln_bnd_norm(bnd_node *b) {
  kiln_op op = b->n->op;
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y || !kiln_bnd_is_float_val(b->in[0]) || op == KILN_OP_MeanVarianceNormalization)
    return kiln_bnd_perturb(b, 32);
  const kiln_tensor *x = b->in[0]->t;
  if (x->numel != y->numel || x->rank == 0) return kiln_bnd_perturb(b, 32);
  float epsf = 1e-5f;
  int64_t p = 2, G = 1;
  int axis = 0;
  rows rw = {1, 1, 1, 0};
  if (op == KILN_OP_LayerNormalization || op == KILN_OP_RMSNormalization ||
      op == KILN_OP_LpNormalization) {
    KILN_TRY(axis_attr(b, -1, x, &axis));
    if (axis >= x->rank) return kiln_bnd_perturb(b, 32);
    rw = (rows){prod(x, 0, axis), prod(x, axis, x->rank), 1, 0};
    if (op == KILN_OP_LpNormalization) {
      rw = (rows){prod(x, 0, axis), x->dims[axis], prod(x, axis + 1, x->rank), 0};
      KILN_TRY(kiln_node_int(b->n, "p", 2, &p));
    }
  } else if (op == KILN_OP_InstanceNormalization) {
    rw = (rows){prod(x, 0, x->rank > 1 ? 2 : 1), prod(x, x->rank > 1 ? 2 : 1, x->rank), 1, 0};
  } else if (op == KILN_OP_BatchNormalization) { /* training: statistics of the batch */
    int64_t C = x->rank > 1 ? x->dims[1] : 1, S = prod(x, 2, x->rank);
    if (x->rank < 2 || C <= 0 || S <= 0) return kiln_bnd_perturb(b, 32);
    rw = (rows){C, x->dims[0] * S, 1, S};
  } else { /* GroupNormalization */
    KILN_TRY(kiln_node_int(b->n, "num_groups", 1, &G));
    int64_t C = x->rank > 1 ? x->dims[1] : 1;
    if (G <= 0 || C % G) return kiln_bnd_perturb(b, 32);
    rw = (rows){x->dims[0] * G, C / G * prod(x, 2, x->rank), 1, 0};
  }
  if (op != KILN_OP_LpNormalization) KILN_TRY(kiln_node_float(b->n, "epsilon", 1e-5f, &epsf));
  int64_t nrows = rw.outer * rw.inner;
  double *z = kiln_xcalloc((size_t)x->numel + 1, sizeof *z);
  double *ez = kiln_xcalloc((size_t)x->numel + 1, sizeof *ez);
  row_stats *st = kiln_xcalloc((size_t)nrows + 1, sizeof *st);
  const double *ed = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  double u = fmax(b->u_out[0], b->u_in); /* the row statistics round in the input's dtype too */
  for (int64_t r = 0; rw.n > 0 && r < nrows; r++) {
    if (op == KILN_OP_LpNormalization) lp_row(&rw, r, x->data, ed, (int)p, u, z, ez);
    else norm_row(&rw, r, x->data, ed, epsf, op != KILN_OP_RMSNormalization, u, z, ez, &st[r]);
  }
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  if (op == KILN_OP_LpNormalization) {
    for (int64_t i = 0; i < e->numel; i++)
      ((double *)e->data)[i] = ez[i] + b->u_out[0] * fabs(((double *)y->data)[i]);
  } else {
    affine(b, x, z, ez, e);
  }
  for (int64_t i = 0; i < e->numel; i++) ((double *)e->data)[i] += (rw.n + 4) * b->tiny_out[0];
  b->eout[0] = e;
  if (op == KILN_OP_LayerNormalization) ln_stats_err(b, st, nrows);
  free(z), free(ez), free(st);
  return KILN_OK;
}

/* ---- LRN: y = x / d^beta, d = bias + alpha / size * (sum of x^2 over the channel window).
 * Propagated (first order, x 1.25): e_x / d^beta + |y| |beta| (alpha / size) 2 sum |x_k| e_k / d;
 * own: |y| (|beta| rel_d + (6 + |beta log d|) u), rel_d the rounding of the window sum
 * (gamma_{size+2}) and of d. ---- */
kiln_status kiln_bnd_lrn(bnd_node *b) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y || !kiln_bnd_is_float_val(b->in[0]) || b->in[0]->t->rank < 3)
    return kiln_bnd_perturb(b, 32);
  const kiln_tensor *x = b->in[0]->t;
  float alpha, beta, bias;
  int64_t size;
  KILN_TRY(kiln_node_float(b->n, "alpha", 1e-4f, &alpha));
  KILN_TRY(kiln_node_float(b->n, "beta", 0.75f, &beta));
  KILN_TRY(kiln_node_float(b->n, "bias", 1.0f, &bias));
  KILN_TRY(kiln_node_int(b->n, "size", 1, &size));
  int64_t C = x->dims[1], S = prod(x, 2, x->rank), lo = (size - 1) / 2, hi = size / 2;
  double a = (double)alpha / (double)size, u = b->u_out[0], g = kiln_bnd_gamma((double)size + 2, u);
  const double *xd = x->data, *yd = y->data;
  const double *ed = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  for (int64_t i = 0; C > 0 && S > 0 && i < x->numel; i++) {
    int64_t c = (i / S) % C, base = i - c * S;
    double sum = 0, sxe = 0;
    for (int64_t k = c - lo < 0 ? 0 : c - lo; k <= c + hi && k < C; k++) {
      double v = xd[base + k * S];
      sum += v * v;
      if (ed) sxe += fabs(v) * ed[base + k * S];
    }
    double d = bias + a * sum, ay = fabs(yd[i]), p = pow(fabs(d), beta);
    if (!(d > 0) || !isfinite(p) || p == 0) {
      ((double *)e->data)[i] = INFINITY;
      continue;
    }
    double rel_d = (a * g * sum + 2 * u * d) / d;
    double own = ay * (fabs(beta) * rel_d + (6 + fabs(beta * log(d))) * u) + b->tiny_out[0];
    double prop = ed ? 1.25 * (ed[i] / p + ay * fabs(beta) * a * 2 * sxe / d) : 0;
    ((double *)e->data)[i] = own + prop;
  }
  b->eout[0] = e;
  return KILN_OK;
}
