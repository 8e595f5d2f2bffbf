/* The generic error rules: data movement, positive sums, differences, multilinear
 * contractions, Gemm, elementwise functions by corners, Lipschitz functions, monotone
 * reductions, exact ops and the perturbation fallback; and the dispatch (kiln_bnd_apply).
 *
 * Every rule adds the op's own rounding to the propagated error of its inputs. A reduction
 * or contraction of length K with magnitude M (the op on |x|) rounds by at most gamma_K(u) M
 * in any summation order, fused or not, plus u |y| when the result is stored (rounded) once
 * more in the output dtype. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

/* ---- helpers ---- */

double kiln_bnd_gamma(double k, double u) {
  double ku = k * u;
  return ku < 0.5 ? ku / (1 - ku) : 2 * ku; /* no finite bound past K u = 1: linear, documented */
}

kiln_status kiln_bnd_eval_how(const bnd_node *b, kiln_op op, const bnd_subst *how,
                              kiln_val ***outs) {
  kiln_val **own = NULL;
  kiln_val **ins = kiln_bnd_subst(b, how, &own);
  kiln_val **o = kiln_xcalloc((size_t)b->n->n_outputs + 1, sizeof *o);
  kiln_status st = kiln_bnd_eval(b, op, ins, o);
  free(ins);
  kiln_bnd_free_vals(own, b->n->n_inputs);
  if (st) {
    free(o);
    *outs = NULL;
    return st;
  }
  *outs = o;
  return KILN_OK;
}

kiln_tensor *kiln_bnd_out_t(const bnd_node *b, kiln_val **vals, int k) {
  if (!vals || k >= b->n->n_outputs || !kiln_bnd_is_float_val(vals[k])) return NULL;
  return vals[k]->t->dtype == KILN_F64 ? vals[k]->t : NULL;
}

kiln_tensor *kiln_bnd_take_t(const bnd_node *b, kiln_val **vals, int k) {
  kiln_tensor *t = kiln_bnd_out_t(b, vals, k);
  if (t) vals[k]->t = NULL;
  return t;
}

void kiln_bnd_free_outs(const bnd_node *b, kiln_val **vals) {
  kiln_bnd_free_vals(vals, b->n->n_outputs);
}

bool kiln_bnd_any_err(const bnd_node *b) {
  for (int i = 0; i < b->n->n_inputs; i++)
    if (kiln_bnd_has_err(b, i)) return true;
  return false;
}

static bool is_data(const bnd_opinfo *info, int i) {
  return info->mask ? (info->mask >> (i & 31)) & 1 : i == 0;
}

static bool any_data_err(const bnd_node *b, const bnd_opinfo *info) {
  for (int i = 0; i < b->n->n_inputs; i++)
    if (is_data(info, i) && kiln_bnd_has_err(b, i)) return true;
  return false;
}

/* how[i] = data input ? d : o */
static bnd_subst *how_data(const bnd_node *b, const bnd_opinfo *info, bnd_subst d, bnd_subst o) {
  bnd_subst *how = kiln_xcalloc((size_t)b->n->n_inputs + 1, sizeof *how);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? d : o;
  return how;
}

static int64_t numel_in0(const bnd_node *b) {
  return b->n->n_inputs > 0 && b->in[0] && b->in[0]->t ? b->in[0]->t->numel : 1;
}

/* Elements of input 0 per element of output 0 (the reduction length of a reduce). */
double kiln_bnd_ratio(const bnd_node *b) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  int64_t no = y && y->numel > 0 ? y->numel : 1;
  double r = (double)numel_in0(b) / (double)no;
  return r < 1 ? 1 : ceil(r);
}

static double kernel_size(const bnd_node *b) {
  const int64_t *ks;
  int nk;
  kiln_status st = kiln_node_ints(b->n, "kernel_shape", &ks, &nk);
  kiln_status_free(st);
  if (st || nk <= 0) return kiln_bnd_ratio(b);
  double k = 1;
  for (int i = 0; i < nk; i++) k *= (double)(ks[i] > 0 ? ks[i] : 1);
  return k;
}

static kiln_tensor *err_or_zeros(const bnd_node *b, kiln_tensor *e, int k) {
  return e ? e : kiln_bnd_zeros_like(kiln_bnd_out_t(b, b->out, k));
}

/* ---- MOVE: err = op(err); no rounding ---- */
static kiln_status rule_move(bnd_node *b, const bnd_opinfo *info) {
  if (!any_data_err(b, info)) return KILN_OK;
  bnd_subst *how = how_data(b, info, BND_ERR, BND_SAME);
  kiln_val **e;
  kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &e);
  free(how);
  KILN_TRY(st);
  for (int k = 0; k < b->n->n_outputs; k++) b->eout[k] = kiln_bnd_take_t(b, e, k);
  kiln_bnd_free_outs(b, e);
  return KILN_OK;
}

/* The largest extent of input 0 (bounds the length of a scan along any axis). */
static double max_dim(const bnd_node *b) {
  double m = 1;
  for (int d = 0; b->in[0] && b->in[0]->t && d < b->in[0]->t->rank; d++)
    m = fmax(m, (double)b->in[0]->t->dims[d]);
  return m;
}

/* The reduction length K of a SUM op. */
static double sum_len(const bnd_node *b) {
  double r = kiln_bnd_ratio(b);
  switch (b->n->op) {
  case KILN_OP_Add: return 1;
  case KILN_OP_Sum: return b->n->n_inputs > 1 ? b->n->n_inputs - 1 : 1;
  case KILN_OP_Mean: return b->n->n_inputs;
  case KILN_OP_ReduceSum:
  case KILN_OP_ReduceL1: return r;
  case KILN_OP_ReduceMean:
  case KILN_OP_GlobalAveragePool: return r + 1;
  case KILN_OP_ReduceL2: return r + 2;
  case KILN_OP_AveragePool: return kernel_size(b) + 1;
  case KILN_OP_LpPool: return kernel_size(b) + 4;
  case KILN_OP_GlobalLpPool: return r + 4;
  case KILN_OP_CumSum: return max_dim(b);
  default: return 2.0 * 8 + 2; /* Resize linear: up to 2^3 taps */
  }
}

/* The largest intermediate of a SUM op whose result on |x| (+ e) is m: partial sums are at
 * most the sum of the |terms|, which is m itself for a plain sum, count * m for a mean (the
 * sum before the division: Mean of n inputs, ReduceMean and the average pools over at most
 * ratio or kernel_size terms), and the sum of the p-th powers, m^p, for the p-norms. One
 * addition or subtraction has none (its result is checked as a value). */
static double sum_inter(const bnd_node *b, double m) {
  int64_t p = 2;
  switch (b->n->op) {
  case KILN_OP_Add:
  case KILN_OP_Sub: return 0; /* one correctly rounded operation: no intermediate */
  case KILN_OP_Sum:
    if (b->n->n_inputs <= 2) return 0;
    return m;
  case KILN_OP_Mean: return m * b->n->n_inputs;
  case KILN_OP_ReduceMean:
  case KILN_OP_GlobalAveragePool: return m * kiln_bnd_ratio(b);
  case KILN_OP_AveragePool: return m * kernel_size(b);
  case KILN_OP_ReduceL2: return m * m;
  case KILN_OP_LpPool:
  case KILN_OP_GlobalLpPool:
    kiln_status_free(kiln_node_int(b->n, "p", 2, &p));
    return pow(m, (double)(p > 0 ? p : 2));
  default: return m;
  }
}

static bool any_nonfinite(const bnd_node *b, const bnd_subst *how) {
  for (int i = 0; i < b->n->n_inputs; i++) {
    if (how[i] != BND_ABS_FIN || !kiln_bnd_is_float_val(b->in[i])) continue;
    const kiln_tensor *t = b->in[i]->t;
    if (t->dtype != KILN_F64) continue;
    for (int64_t j = 0; j < t->numel; j++)
      if (!isfinite(((const double *)t->data)[j])) return true;
  }
  return false;
}

/* An infinity among the terms of a sum or contraction next to finite terms that may overflow
 * on their own (a product, a partial sum): the order of the sum and fused multiply-adds decide
 * between NaN and an infinity. 1.1e308 * 1.92 + -inf is NaN where the product rounds to +inf
 * first and -inf where an FMA keeps it exact; 1e308 + 1e308 + -inf is NaN in one order and
 * -inf in another. Such non-finite results are open (unstable). The finite terms alone, the
 * op on |x| + e with NaN and infinities as 0, give each element's largest intermediate
 * (inter scales it as the rule does); how is BND_ABS_FIN for the terms. */
static kiln_status open_overflow_beside_inf(bnd_node *b, kiln_op op, const bnd_subst *how,
                                            double (*inter)(const bnd_node *, double)) {
  if (!any_nonfinite(b, how)) return KILN_OK;
  kiln_val **f = NULL;
  KILN_TRY(kiln_bnd_eval_how(b, op, how, &f));
  for (int k = 0; k < b->n->n_outputs; k++) {
    kiln_tensor *ft = kiln_bnd_out_t(b, f, k), *y = kiln_bnd_out_t(b, b->out, k);
    if (!ft || !y || ft->numel != y->numel) continue;
    int64_t open = 0;
    for (int64_t i = 0; i < y->numel; i++) {
      double yi = ((double *)y->data)[i], m = inter(b, fabs(((double *)ft->data)[i]));
      open += !isfinite(yi) && (!isfinite(m) || kiln_bnd_inter_err(b, k, m, 0) > 0);
    }
    kiln_bnd_unstable(b, open,
                      "finite terms that may overflow beside an infinity: NaN or an "
                      "infinity by the order of the sum");
  }
  kiln_bnd_free_outs(b, f);
  return KILN_OK;
}

/* An infinity times a value whose interval holds 0 (an underflow, a cancellation): inf in the
 * reference, NaN in a kernel whose value is 0 (1e-44 * 1e-41 is 1e-85 in the reference's
 * doubles, 0 in f32; times -inf: -inf or NaN). The elements of a product of two data inputs
 * (Mul, MatMul, Gemm's A B, Einsum of two) with such a term are open: the op on the indicators
 * of infinities and of uncertain zeros, both ways, is nonzero there. a and c are the two
 * factors' input positions; how has BND_OMIT or BND_SAME elsewhere. */
static kiln_status open_inf_times_zero(bnd_node *b, bnd_subst *how, int a, int c) {
  bool inf = false;
  for (int i = 0; i < b->n->n_inputs; i++) {
    if ((i != a && i != c) || !kiln_bnd_is_float_val(b->in[i])) continue;
    const kiln_tensor *t = b->in[i]->t;
    for (int64_t j = 0; t->dtype == KILN_F64 && j < t->numel && !inf; j++)
      inf = isinf(((const double *)t->data)[j]);
  }
  if (!inf || !kiln_bnd_any_err(b)) return KILN_OK;
  kiln_val **p = NULL, **q = NULL;
  how[a] = BND_INF_IND, how[c] = BND_ZERO_IND;
  kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &p);
  how[a] = BND_ZERO_IND, how[c] = BND_INF_IND;
  if (!st) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &q);
  kiln_tensor *pt = kiln_bnd_out_t(b, p, 0), *qt = kiln_bnd_out_t(b, q, 0);
  if (!st && pt && qt && pt->numel == qt->numel) {
    int64_t open = 0;
    for (int64_t i = 0; i < pt->numel; i++)
      open += ((double *)pt->data)[i] != 0 || ((double *)qt->data)[i] != 0;
    kiln_bnd_unstable(b, open,
                      "an infinity times a value whose interval holds 0 (NaN or an "
                      "infinity)");
  }
  kiln_bnd_free_outs(b, p), kiln_bnd_free_outs(b, q);
  return st;
}

/* ---- SUM / SUB: err = op(err) + gamma_K op(|x|) + u |y| ---- */
static kiln_status rule_sum(bnd_node *b, const bnd_opinfo *info, kiln_op op, double K) {
  kiln_val **e = NULL, **m = NULL;
  bnd_subst *how = how_data(b, info, BND_ERR, BND_SAME);
  kiln_status st = any_data_err(b, info) ? kiln_bnd_eval_how(b, op, how, &e) : KILN_OK;
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ABS_FIN : BND_SAME;
  if (!st) st = open_overflow_beside_inf(b, op, how, sum_inter);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ABS : BND_SAME;
  if (!st) st = kiln_bnd_eval_how(b, op, how, &m);
  free(how);
  for (int k = 0; !st && k < b->n->n_outputs; k++) {
    kiln_tensor *mt = kiln_bnd_out_t(b, m, k), *y = kiln_bnd_out_t(b, b->out, k);
    if (!mt || !y || mt->numel != y->numel) continue;
    kiln_tensor *et = err_or_zeros(b, kiln_bnd_take_t(b, e, k), k);
    double g = kiln_bnd_gamma(K, b->u_out[k]);
    double *ed = et->data;
    const double *md = mt->data, *yd = y->data;
    for (int64_t i = 0; i < et->numel; i++) {
      ed[i] += g * fabs(md[i]) + b->u_out[k] * fabs(yd[i]) + (K + 1) * b->tiny_out[k];
      ed[i] = kiln_bnd_inter_err(b, k, sum_inter(b, fabs(md[i]) + ed[i]), ed[i]);
    }
    b->eout[k] = et;
  }
  kiln_bnd_free_outs(b, e);
  kiln_bnd_free_outs(b, m);
  return st;
}

/* Products of a varying number of factors (ReduceProd, CumProd): a partial product can
 * exceed the result (1e30 * 1e30 * 1e-30); every partial product is at most the product of
 * max(|x| + e, 1) over all factors, the op on those. */
static bool partial_products(const bnd_node *b) {
  return b->n->op == KILN_OP_ReduceProd || b->n->op == KILN_OP_CumProd;
}

/* The largest intermediate of a MULTILIN op: for a contraction (MatMul, Conv, Einsum,
 * ReduceSumSquare, Mul) each product and partial sum is at most the op on |x| + e, m; for
 * a product of many factors the op on max(|x| + e, 1) (pp). */
static double multilin_inter(const bnd_node *b, kiln_val **pp, int k, int64_t i, double m) {
  kiln_tensor *t = pp ? kiln_bnd_out_t(b, pp, k) : NULL;
  return t && i < t->numel ? fmax(m, fabs(((double *)t->data)[i])) : m;
}

static double plain_inter(const bnd_node *b, double m) {
  (void)b;
  return m;
}

/* ---- MULTILIN: op(|x| + e) - op(|x|) + gamma_K op(|x|) + u |y| ----
 * Exact for multilinear ops (each term a product of one element of each data input):
 * Mul, MatMul, Conv, ConvTranspose, Einsum, ReduceProd, ReduceSumSquare. K per output
 * element: the op on ones counts the terms. */
static kiln_status rule_multilin(bnd_node *b, const bnd_opinfo *info) {
  kiln_op op = b->n->op;
  bool count = op == KILN_OP_MatMul || op == KILN_OP_Conv || op == KILN_OP_ConvTranspose ||
               op == KILN_OP_Einsum;
  int nf = 0;
  for (int i = 0; i < b->n->n_inputs; i++)
    nf += is_data(info, i) && kiln_bnd_is_float_val(b->in[i]);
  double Kfix = op == KILN_OP_ReduceProd        ? kiln_bnd_ratio(b)
                : op == KILN_OP_CumProd         ? max_dim(b)
                : op == KILN_OP_ReduceSumSquare ? kiln_bnd_ratio(b) + 1
                                                : 1;
  kiln_val **p = NULL, **m = NULL, **ones = NULL, **pp = NULL;
  bnd_subst *how = how_data(b, info, BND_ABS_PLUS, BND_SAME);
  kiln_status st = any_data_err(b, info) ? kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &p) : KILN_OK;
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ABS : BND_SAME;
  if (!st) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &m);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ONES : BND_SAME;
  if (!st && count) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &ones);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ABS_MAX1 : BND_SAME;
  if (!st && partial_products(b)) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &pp);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = is_data(info, i) ? BND_ABS_FIN : BND_SAME;
  if (!st && !partial_products(b))
    st = open_overflow_beside_inf(b, KILN_OP_UNKNOWN, how, plain_inter);
  int fa = -1, fc = -1, nd = 0; /* the two data inputs of a product of two */
  for (int i = 0; i < b->n->n_inputs; i++)
    if (is_data(info, i) && b->in[i]) nd++, fa < 0 ? (fa = i) : (fc = i);
  for (int i = 0; i < b->n->n_inputs; i++) how[i] = BND_SAME;
  if (!st && nd == 2 && fc >= 0 && !partial_products(b)) st = open_inf_times_zero(b, how, fa, fc);
  free(how);
  for (int k = 0; !st && k < b->n->n_outputs; k++) {
    kiln_tensor *mt = kiln_bnd_out_t(b, m, k), *y = kiln_bnd_out_t(b, b->out, k);
    kiln_tensor *pt = kiln_bnd_out_t(b, p, k), *ot = kiln_bnd_out_t(b, ones, k);
    if (!mt || !y || mt->numel != y->numel) continue;
    kiln_tensor *et = kiln_bnd_zeros_like(y);
    double *ed = et->data, u = b->u_out[k];
    const double *md = mt->data, *yd = y->data;
    for (int64_t i = 0; i < et->numel; i++) {
      double K = ot ? ((double *)ot->data)[i] + (nf > 2 ? nf - 2 : 0) : Kfix;
      double prop = pt ? fabs(((double *)pt->data)[i] - md[i]) + 0x1p-50 * fabs(md[i]) : 0;
      ed[i] =
          prop + kiln_bnd_gamma(K, u) * fabs(md[i]) + u * fabs(yd[i]) + (K + 1) * b->tiny_out[k];
      ed[i] = kiln_bnd_inter_err(b, k, multilin_inter(b, pp, k, i, fabs(md[i]) + prop), ed[i]);
    }
    b->eout[k] = et;
  }
  kiln_bnd_free_outs(b, p);
  kiln_bnd_free_outs(b, m);
  kiln_bnd_free_outs(b, ones);
  kiln_bnd_free_outs(b, pp);
  return st;
}

/* ---- GEMM: Y = alpha op(A) op(B) + beta C. The product part as MULTILIN (|alpha| by the
 * absolute value of the result), C's part |beta| (|C| + eC); K = inner length + 2. ---- */
/* Gemm's finite terms on |x| + e are |alpha| |A B| + |beta| |C|: the product before the
 * scaling is larger where |alpha| < 1. */
static double gemm_inter(const bnd_node *b, double m) {
  float alpha;
  kiln_status st = kiln_node_float(b->n, "alpha", 1.0f, &alpha);
  if (st) return kiln_status_free(st), INFINITY;
  double a = fabs((double)alpha);
  return a > 0 && a < 1 ? m / a : m;
}

static kiln_status rule_gemm(bnd_node *b) {
  float alpha;
  KILN_TRY(kiln_node_float(b->n, "alpha", 1.0f, &alpha));
  bool has_c = b->n->n_inputs > 2 && b->in[2];
  bnd_subst hp[3] = {BND_ABS_PLUS, BND_ABS_PLUS, BND_OMIT}, hm[3] = {BND_ABS, BND_ABS, BND_OMIT};
  bnd_subst h1[3] = {BND_ONES, BND_ONES, BND_OMIT}, hce[3] = {BND_ZEROS, BND_ZEROS, BND_ERR};
  bnd_subst hcm[3] = {BND_ZEROS, BND_ZEROS, BND_ABS};
  kiln_val **p = NULL, **m = NULL, **o = NULL, **ce = NULL, **cm = NULL;
  bool err_ab = kiln_bnd_has_err(b, 0) || kiln_bnd_has_err(b, 1);
  bnd_subst hf[3] = {BND_ABS_FIN, BND_ABS_FIN, has_c ? BND_ABS_FIN : BND_OMIT};
  kiln_status st = err_ab ? kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, hp, &p) : KILN_OK;
  if (!st) st = open_overflow_beside_inf(b, KILN_OP_UNKNOWN, hf, gemm_inter);
  bnd_subst hz[3] = {BND_SAME, BND_SAME, BND_OMIT};
  if (!st) st = open_inf_times_zero(b, hz, 0, 1);
  if (!st) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, hm, &m);
  if (!st) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, h1, &o);
  if (!st && has_c && kiln_bnd_has_err(b, 2)) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, hce, &ce);
  if (!st && has_c) st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, hcm, &cm);
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0), *mt = kiln_bnd_out_t(b, m, 0);
  kiln_tensor *ot = kiln_bnd_out_t(b, o, 0), *pt = kiln_bnd_out_t(b, p, 0);
  kiln_tensor *cet = kiln_bnd_out_t(b, ce, 0), *cmt = kiln_bnd_out_t(b, cm, 0);
  if (!st && y && mt && ot && mt->numel == y->numel) {
    kiln_tensor *et = b->eout[0] = kiln_bnd_zeros_like(y);
    double *ed = et->data, u = b->u_out[0], a = fabs((double)alpha);
    for (int64_t i = 0; i < et->numel; i++) {
      double mm = fabs(((double *)mt->data)[i]);
      double K = (a > 0 ? fabs(((double *)ot->data)[i]) / a : 0) + 2;
      double prop = pt ? fabs(fabs(((double *)pt->data)[i]) - mm) + 0x1p-50 * mm : 0;
      if (cet) prop += fabs(((double *)cet->data)[i]);
      if (cmt) mm += fabs(((double *)cmt->data)[i]);
      ed[i] = prop + kiln_bnd_gamma(K, u) * mm + u * fabs(((double *)y->data)[i]) +
              (K + 1) * b->tiny_out[0];
      /* intermediates: A B before the scaling by alpha (|alpha| < 1 makes it larger), then
       * the sum with beta C; each at most mm + prop (scaled back by 1 / |alpha|) */
      double ab = fabs(((double *)mt->data)[i]);
      double inter = mm + prop + (a > 0 && a < 1 ? (ab + prop) / a : 0);
      ed[i] = kiln_bnd_inter_err(b, 0, inter, ed[i]);
    }
  }
  kiln_bnd_free_outs(b, p), kiln_bnd_free_outs(b, m), kiln_bnd_free_outs(b, o);
  kiln_bnd_free_outs(b, ce), kiln_bnd_free_outs(b, cm);
  return st;
}

/* Resize/Upsample: nearest moves data, linear interpolates with positive weights (a SUM),
 * cubic has negative weights (PERTURB). Scatter ops with a reduction are not movements. */
static bnd_rule refine_rule(const bnd_node *b, bnd_rule rule) {
  const char *s = NULL;
  kiln_op op = b->n->op;
  if (op == KILN_OP_Resize || op == KILN_OP_Upsample) {
    kiln_status st = kiln_node_string(b->n, "mode", "nearest", &s);
    if (st) return kiln_status_free(st), BND_PERTURB;
    if (strstr(s, "cubic")) return BND_PERTURB;
    return strstr(s, "linear") ? BND_SUM : BND_MOVE;
  }
  if (op == KILN_OP_ScatterElements || op == KILN_OP_ScatterND) {
    kiln_status st = kiln_node_string(b->n, "reduction", "none", &s);
    if (st) return kiln_status_free(st), BND_PERTURB;
    return strcmp(s, "none") == 0 ? rule : BND_PERTURB;
  }
  if (op == KILN_OP_BatchNormalization || op == KILN_OP_Dropout) {
    int64_t tm = 0;
    kiln_status st = kiln_node_int(b->n, "training_mode", 0, &tm);
    if (st) return kiln_status_free(st), BND_PERTURB;
    /* BatchNormalization in training normalizes by the batch's statistics: a row
     * normalization per channel (bound_norm.c), where a perturbation of all inputs together
     * would leave x - mean unchanged; its running statistics (more outputs) by perturbation */
    bool more = false;
    for (int k = 1; k < b->n->n_outputs; k++) more |= b->n->outputs[k] >= 0;
    if (tm && op == KILN_OP_BatchNormalization && b->n->opset >= 14 && !more) return BND_NORM;
    if (tm || (op == KILN_OP_Dropout && b->n->n_inputs > 2 && b->in[2])) return BND_PERTURB;
  }
  return rule;
}

/* Basic operations are correctly rounded in IEEE arithmetic (also when a fused kernel
 * keeps them in a wider type and rounds once): on exact inputs, a result representable in
 * the output dtype is exact. Div and Sqrt are left out (x / c may run as x * (1 / c)). */
static void exact_if_representable(bnd_node *b) {
  static const kiln_op ops[] = {KILN_OP_Add,  KILN_OP_Sub, KILN_OP_Mul, KILN_OP_Neg, KILN_OP_Abs,
                                KILN_OP_Relu, KILN_OP_Max, KILN_OP_Min, KILN_OP_Clip};
  bool hit = false;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) hit |= b->n->op == ops[i];
  if (!hit || kiln_bnd_any_err(b) || b->n->n_inputs > 3 || !b->eout[0]) return;
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0), *e = b->eout[0];
  kiln_dtype t = b->g->values.data[b->n->outputs[0]].type.dtype;
  if (!y || !kiln_dtype_is_float(t)) return;
  for (int64_t i = 0; i < y->numel; i++) {
    double v = ((double *)y->data)[i];
    uint64_t tmp = 0;
    kiln_store_f64(t, &tmp, 0, v);
    if (kiln_load_f64(t, &tmp, 0) == v) ((double *)e->data)[i] = 0;
  }
}

static kiln_status apply_rule(bnd_node *b);

kiln_status kiln_bnd_apply(bnd_node *b) {
  KILN_TRY(apply_rule(b));
  exact_if_representable(b);
  /* x - x is 0 for every finite x, whatever the error of x */
  if (b->n->op == KILN_OP_Sub && b->n->n_inputs == 2 && b->n->inputs[0] == b->n->inputs[1] &&
      b->eout[0])
    memset(b->eout[0]->data, 0, (size_t)b->eout[0]->numel * sizeof(double));
  return KILN_OK;
}

static kiln_status apply_rule(bnd_node *b) {
  const bnd_opinfo *info = kiln_bnd_info(b->n->op);
  KILN_TRY(kiln_bnd_eval(b, KILN_OP_UNKNOWN, b->in, b->out));
  bool float_out = false;
  for (int k = 0; k < b->n->n_outputs; k++) float_out |= kiln_bnd_is_float_val(b->out[k]);
  if (info->rule == BND_CAST) kiln_bnd_cast_range(b);
  if (!float_out && !kiln_bnd_any_err(b) && info->ulps == 0) return KILN_OK; /* exact */
  switch (refine_rule(b, info->rule)) {
  case BND_EXACT: return kiln_bnd_exact(b, info);
  case BND_DISCRETE: return kiln_bnd_discrete(b, info->ulps);
  case BND_MOVE: return rule_move(b, info);
  case BND_SUM: return rule_sum(b, info, KILN_OP_UNKNOWN, sum_len(b));
  case BND_SUB: return rule_sum(b, &(bnd_opinfo){.mask = 3}, KILN_OP_Add, 1);
  case BND_MULTILIN: return rule_multilin(b, info);
  case BND_GEMM: return rule_gemm(b);
  case BND_CORNER: return kiln_bnd_corner(b, info);
  case BND_LIPSCHITZ: return kiln_bnd_lipschitz(b, info);
  case BND_MOD: return kiln_bnd_mod(b);
  case BND_CAST: return kiln_bnd_cast(b);
  case BND_ARGMINMAX: return kiln_bnd_argminmax(b);
  case BND_TOPK: return kiln_bnd_topk(b);
  case BND_HARDMAX: return kiln_bnd_hardmax(b);
  case BND_NONZERO: return kiln_bnd_nonzero(b);
  case BND_SOFTMAX: return kiln_bnd_softmax(b);
  case BND_NORM: return kiln_bnd_norm(b);
  case BND_LRN: return kiln_bnd_lrn(b);
  case BND_REDUCE_MONO: return kiln_bnd_reduce_mono(b, info);
  case BND_PERTURB:
  case BND_RULE_COUNT: break;
  }
  return kiln_bnd_perturb(b, info->ulps > 0 ? info->ulps : 32);
}
