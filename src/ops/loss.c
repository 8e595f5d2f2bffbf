/* Ops of the 'loss' family (see src/graph/ops.def): NegativeLogLikelihoodLoss (12, 13, 22) and
 * SoftmaxCrossEntropyLoss (12, 13).
 *
 * Both view the input as [N, C, D] (D = product of the trailing dims, 1 when the
 * input is 2-D) and the target as [N, D]. For each (n, d) with class t = target[n, d]:
 *   loss[n, d] = -w[t] * logp[n, t, d]    (0 when t == ignore_index)
 * where logp is the input itself (NLL) or its log-softmax over C (SCE) and w is the
 * optional weight (1 when absent). Reductions: none (shape of target), sum, and mean,
 * which divides by the sum of the applied weights (weight given or ignore_index set)
 * or by N*D otherwise. Everything accumulates in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

typedef enum { RED_NONE, RED_SUM, RED_MEAN } loss_reduction;

typedef struct loss_args {
  const kiln_tensor *x, *target, *weight;
  int64_t n, c, d; /* input viewed as [n, c, d] */
  bool has_ii;
  int64_t ii; /* ignore_index */
  loss_reduction red;
} loss_args;

static kiln_status loss_parse(kiln_eval_ctx *ctx, loss_args *a) {
  memset(a, 0, sizeof *a);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &a->x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &a->target));
  a->weight = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_kern_need_float(ctx, a->x, "input"));
  const kiln_tensor *x = a->x, *t = a->target;
  if (x->rank < 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must have rank >= 2, has %d", x->rank);
  if (!kiln_dtype_is_int(t->dtype) || t->rank != x->rank - 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "target must be an integer tensor of rank %d",
                           x->rank - 1);
  if (t->dims[0] != x->dims[0])
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "target batch %lld != input batch %lld",
                           (long long)t->dims[0], (long long)x->dims[0]);
  a->n = x->dims[0];
  a->c = x->dims[1];
  a->d = 1;
  for (int i = 2; i < x->rank; i++) {
    if (t->dims[i - 1] != x->dims[i])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "target dim %d is %lld, input dim %d is %lld",
                             i - 1, (long long)t->dims[i - 1], i, (long long)x->dims[i]);
    a->d *= x->dims[i];
  }
  if (a->weight && (a->weight->rank != 1 || a->weight->dims[0] != a->c ||
                    !kiln_dtype_is_float(a->weight->dtype)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "weight must be a float vector of length %lld",
                           (long long)a->c);
  const kiln_attr *ii = kiln_node_attr(ctx->node, "ignore_index");
  if (ii) {
    a->has_ii = true;
    KILN_TRY(kiln_node_int(ctx->node, "ignore_index", 0, &a->ii));
  }
  const char *red;
  KILN_TRY(kiln_node_string(ctx->node, "reduction", "mean", &red));
  if (!strcmp(red, "none")) a->red = RED_NONE;
  else if (!strcmp(red, "sum")) a->red = RED_SUM;
  else if (!strcmp(red, "mean")) a->red = RED_MEAN;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown reduction '%s'", red);
  return KILN_OK;
}

/* Log-softmax over the class axis of x viewed as [n, c, d], in double. */
static void loss_log_softmax(const loss_args *a, const double *x, double *out) {
  for (int64_t i = 0; i < a->n; i++) {
    for (int64_t k = 0; k < a->d; k++) {
      const double *xi = x + i * a->c * a->d + k;
      double *oi = out + i * a->c * a->d + k;
      double mx = -INFINITY;
      for (int64_t j = 0; j < a->c; j++) mx = fmax(mx, xi[j * a->d]);
      double s = 0;
      for (int64_t j = 0; j < a->c; j++) s += exp(xi[j * a->d] - mx);
      double ls = log(s);
      for (int64_t j = 0; j < a->c; j++) oi[j * a->d] = xi[j * a->d] - mx - ls;
    }
  }
}

/* Computes the per-element losses and their weights; errors on a target out of range. */
static kiln_status loss_elements(kiln_eval_ctx *ctx, const loss_args *a, const double *logp,
                                 double *loss, double *wsum) {
  *wsum = 0;
  for (int64_t i = 0; i < a->n; i++) {
    for (int64_t k = 0; k < a->d; k++) {
      int64_t idx = i * a->d + k;
      int64_t t = kiln_load_i64(a->target->dtype, a->target->data, (size_t)idx);
      if (a->has_ii && t == a->ii) {
        loss[idx] = 0;
        continue;
      }
      if (t < 0 || t >= a->c)
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "target value %lld out of range [0, %lld)",
                               (long long)t, (long long)a->c);
      double w = a->weight ? kiln_load_f64(a->weight->dtype, a->weight->data, (size_t)t) : 1.0;
      loss[idx] = -w * logp[(i * a->c + t) * a->d + k];
      *wsum += w;
    }
  }
  return KILN_OK;
}

static kiln_status loss_output(kiln_eval_ctx *ctx, const loss_args *a, const double *loss,
                               double wsum) {
  kiln_tensor *out;
  int64_t nd = a->n * a->d;
  if (a->red == RED_NONE) {
    KILN_TRY(kiln_eval_out(ctx, 0, a->x->dtype, a->target->rank, a->target->dims, &out));
    for (int64_t i = 0; i < nd; i++) kiln_store_f64(out->dtype, out->data, (size_t)i, loss[i]);
    return KILN_OK;
  }
  double s = 0;
  for (int64_t i = 0; i < nd; i++) s += loss[i];
  if (a->red == RED_MEAN) s = (a->weight || a->has_ii) ? s / wsum : s / (double)nd;
  KILN_TRY(kiln_eval_out(ctx, 0, a->x->dtype, 0, NULL, &out));
  kiln_store_f64(out->dtype, out->data, 0, s);
  return KILN_OK;
}

static kiln_status loss_run(kiln_eval_ctx *ctx, bool softmax) {
  loss_args a;
  KILN_TRY(loss_parse(ctx, &a));
  double *x = NULL, *loss = NULL;
  KILN_TRY(kiln_kern_load_all_f64(ctx, a.x, &x));
  if (softmax) loss_log_softmax(&a, x, x);
  loss = kiln_xmalloc((size_t)(a.n * a.d + 1) * sizeof(double));
  double wsum;
  kiln_status st = loss_elements(ctx, &a, x, loss, &wsum);
  if (!st) st = loss_output(ctx, &a, loss, wsum);
  if (!st && softmax && kiln_kern_want_out(ctx, 1)) {
    kiln_tensor *lp;
    st = kiln_eval_out(ctx, 1, a.x->dtype, a.x->rank, a.x->dims, &lp);
    for (int64_t i = 0; !st && i < lp->numel; i++)
      kiln_store_f64(lp->dtype, lp->data, (size_t)i, x[i]);
  }
  free(x);
  free(loss);
  return st;
}

static kiln_status eval_nll(kiln_eval_ctx *ctx) {
  return loss_run(ctx, false);
}
static kiln_status eval_sce(kiln_eval_ctx *ctx) {
  return loss_run(ctx, true);
}

/* ---- losses ---- */
static kiln_status infer_loss(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin(ctx, 0), *t = tin(ctx, 1);
  if (!x) return KILN_OK;
  if (!strcmp(attr_str(ctx, "reduction", "mean"), "none")) set_like(ctx, 0, x->dtype, t);
  else set_out(ctx, 0, x->dtype, 0, NULL);
  set_like(ctx, 1, x->dtype, x);
  return KILN_OK;
}

void kiln_ops_register_loss(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_NegativeLogLikelihoodLoss, eval_nll, 2, 3, 1, 1);
  kiln_kern_set(table, KILN_OP_SoftmaxCrossEntropyLoss, eval_sce, 2, 3, 1, 2);
  table[KILN_OP_NegativeLogLikelihoodLoss].infer = infer_loss;
  table[KILN_OP_SoftmaxCrossEntropyLoss].infer = infer_loss;
}
