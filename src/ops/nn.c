/* Ops of the 'nn' family (see src/graph/ops.def). This file registers the family and holds
 * Dropout and Det; the others live in nn_matmul.c, nn_conv.c, nn_conv_extra.c, nn_pool.c,
 * nn_norm.c and nn_einsum.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

/* ---- Dropout ----
 * Before opset 12 Dropout is the identity at inference (its mask is all ones, of the input's
 * dtype before opset 10, bool from then on). From opset 12, ratio and training_mode are
 * inputs; in training mode the mask comes from Kiln's deterministic generator: MT19937 seeded
 * with the `seed` attribute (default 0) exactly as numpy's legacy np.random.seed(seed), one
 * uniform double u per element in row-major order, kept when u >= ratio (so the ONNX tests,
 * made with numpy, are reproduced). */

typedef struct mt19937 {
  uint32_t mt[624];
  int pos;
} mt19937;

static void mt_seed(mt19937 *r, uint32_t seed) {
  r->mt[0] = seed;
  for (int i = 1; i < 624; i++)
    r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
  r->pos = 624;
}

static uint32_t mt_next(mt19937 *r) {
  if (r->pos >= 624) {
    for (int i = 0; i < 624; i++) {
      uint32_t y = (r->mt[i] & 0x80000000u) | (r->mt[(i + 1) % 624] & 0x7fffffffu);
      r->mt[i] = r->mt[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    r->pos = 0;
  }
  uint32_t y = r->mt[r->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

/* A double in [0, 1) with 53 random bits (numpy's random_sample). */
static double mt_uniform(mt19937 *r) {
  uint32_t a = mt_next(r) >> 5, b = mt_next(r) >> 6;
  return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

typedef struct dropout_opts {
  double ratio;
  bool training;
  int64_t seed;
} dropout_opts;

static kiln_status dropout_opts_get(kiln_eval_ctx *ctx, dropout_opts *o) {
  o->ratio = 0.5;
  o->training = false;
  KILN_TRY(kiln_node_int(ctx->node, "seed", 0, &o->seed));
  if (ctx->node->opset < 12) return KILN_OK;
  const kiln_tensor *r = kiln_eval_in(ctx, 1), *t = kiln_eval_in(ctx, 2);
  if (r) {
    if (r->numel != 1 || !kiln_dtype_is_float(r->dtype))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "ratio must be a float scalar");
    o->ratio = kiln_load_f64(r->dtype, r->data, 0);
  }
  if (t) {
    if (t->numel != 1 || t->dtype != KILN_BOOL)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "training_mode must be a bool scalar");
    o->training = ((const uint8_t *)t->data)[0] != 0;
  }
  if (o->training && !(o->ratio >= 0 && o->ratio < 1))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "ratio %g not in [0, 1)", o->ratio);
  return KILN_OK;
}

static kiln_status eval_dropout(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  if (x->dtype == KILN_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype string");
  dropout_opts o;
  KILN_TRY(dropout_opts_get(ctx, &o));
  kiln_tensor *y, *mask = NULL;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, &y));
  bool want_mask = ctx->n_out > 1 && ctx->node->outputs[1] >= 0;
  kiln_dtype mdt = ctx->node->opset >= 10 ? KILN_BOOL : x->dtype;
  if (want_mask) KILN_TRY(kiln_eval_out(ctx, 1, mdt, x->rank, x->dims, &mask));
  bool drop = o.training && o.ratio > 0;
  if (!drop) {
    memcpy(y->data, x->data, kiln_tensor_nbytes(x));
    for (int64_t i = 0; mask && i < x->numel; i++) kiln_store_f64(mdt, mask->data, (size_t)i, 1);
    return KILN_OK;
  }
  KILN_TRY(kiln_nn_need_float(ctx, x, "input"));
  mt19937 *rng = kiln_xmalloc(sizeof *rng);
  mt_seed(rng, (uint32_t)o.seed);
  double scale = 1.0 / (1.0 - o.ratio);
  for (int64_t i = 0; i < x->numel; i++) {
    bool keep = mt_uniform(rng) >= o.ratio;
    double v = keep ? kiln_load_f64(x->dtype, x->data, (size_t)i) * scale : 0.0;
    kiln_store_f64(x->dtype, y->data, (size_t)i, v);
    if (mask) kiln_store_f64(mdt, mask->data, (size_t)i, keep);
  }
  free(rng);
  return KILN_OK;
}

static kiln_status infer_dropout(kiln_infer_ctx *ctx) {
  KILN_TRY(kiln_nn_infer_same(ctx));
  if (ctx->n_out > 1 && ctx->out[0].kind == KILN_TYPE_TENSOR) {
    ctx->out[1] = ctx->out[0];
    if (ctx->node->opset >= 10) ctx->out[1].dtype = KILN_BOOL;
  }
  return KILN_OK;
}

/* ---- Det: LU decomposition with partial pivoting, in double ---- */

static double det_lu(double *a, int64_t n) {
  double det = 1;
  for (int64_t c = 0; c < n; c++) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; r++)
      if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
    if (a[p * n + c] == 0) return 0;
    if (p != c) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[c * n + j];
        a[c * n + j] = a[p * n + j];
        a[p * n + j] = t;
      }
      det = -det;
    }
    double piv = a[c * n + c];
    det *= piv;
    for (int64_t r = c + 1; r < n; r++) {
      double f = a[r * n + c] / piv;
      for (int64_t j = c + 1; j < n; j++) a[r * n + j] -= f * a[c * n + j];
    }
  }
  return det;
}

static kiln_status eval_det(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_nn_need_float(ctx, x, "input"));
  KILN_TRY(kiln_nn_need_rank(ctx, x, 2, "input"));
  int64_t n = x->dims[x->rank - 1];
  if (x->dims[x->rank - 2] != n)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "matrices must be square");
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank - 2, x->dims, &y));
  double *xv;
  KILN_TRY(kiln_nn_load_f64(ctx, x, &xv));
  double *dv;
  kiln_status st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&dv);
  if (st) {
    free(xv);
    return st;
  }
  for (int64_t b = 0; b < y->numel; b++) dv[b] = det_lu(xv + b * n * n, n);
  kiln_nn_store_f64(y, dv);
  free(xv);
  free(dv);
  return KILN_OK;
}

static kiln_status infer_det(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x) return KILN_OK;
  if (x->rank < 2) return kiln_nn_infer_error(ctx, "input must have rank >= 2");
  ctx->out[0] = *x;
  ctx->out[0].rank = x->rank - 2;
  return KILN_OK;
}

void kiln_ops_register_nn(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_Dropout, eval_dropout, infer_dropout, 1, 3, 1, 2);
  kiln_nn_set(table, KILN_OP_Det, eval_det, infer_det, 1, 1, 1, 1);
  kiln_nn_register_matmul(table);
  kiln_nn_register_conv(table);
  kiln_nn_register_conv_extra(table);
  kiln_nn_register_pool(table);
  kiln_nn_register_norm(table);
  kiln_nn_register_einsum(table);
}
