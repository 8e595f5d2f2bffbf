/* Reductions along one axis that keep the axis: Softmax, LogSoftmax, Hardmax (opset < 13: the
 * input is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])], axis default 1; opset 13: one
 * axis, default -1), CumSum, CumProd (exclusive, reverse) and TopK (k an attribute before opset
 * 10; largest and sorted from opset 11; ties go to the lower index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

/* A tensor seen as [outer, n, inner] around one axis. */
typedef struct axis_view {
  int64_t outer, n, inner;
} axis_view;

static axis_view view_of(const int64_t *dims, int rank, int axis, bool flatten) {
  axis_view v;
  v.outer = kiln_nn_prod(dims, 0, axis);
  v.n = flatten ? kiln_nn_prod(dims, axis, rank) : (rank ? dims[axis] : 1);
  v.inner = flatten ? 1 : kiln_nn_prod(dims, axis + 1, rank);
  return v;
}

/* ---- Softmax family ---- */

static void softmax_line(kiln_op op, const double *x, double *y, int64_t n, int64_t step) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; j++)
    if (x[j * step] > mx || isnan(x[j * step])) mx = x[j * step];
  if (op == KILN_OP_Hardmax) {
    int64_t best = -1;
    for (int64_t j = 0; j < n; j++) {
      if (best < 0 && (x[j * step] == mx || (isnan(mx) && isnan(x[j * step])))) best = j;
      y[j * step] = 0;
    }
    if (best >= 0) y[best * step] = 1;
    return;
  }
  if (isinf(mx)) mx = 0;
  double sum = 0;
  for (int64_t j = 0; j < n; j++) sum += exp(x[j * step] - mx);
  for (int64_t j = 0; j < n; j++) {
    double d = x[j * step] - mx;
    y[j * step] = op == KILN_OP_LogSoftmax ? d - log(sum) : exp(d) / sum;
  }
}

static kiln_status eval_softmax(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_nn_need_float(ctx, x, "input"));
  kiln_attrs_softmax sa;
  KILN_TRY(kiln_attrs_softmax_decode(ctx->node, x->rank, &sa));
  bool flatten = sa.coerce_2d;
  int axis = (int)sa.axis;
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, &y));
  axis_view v = view_of(x->dims, x->rank, axis, flatten);
  double *xv, *yv;
  KILN_TRY(kiln_nn_load_f64(ctx, x, &xv));
  kiln_status st = kiln_nn_alloc(ctx, x->numel, sizeof(double), (void **)&yv);
  if (!st) {
    for (int64_t o = 0; o < v.outer; o++)
      for (int64_t i = 0; i < v.inner; i++) {
        int64_t base = o * v.n * v.inner + i;
        softmax_line(ctx->node->op, xv + base, yv + base, v.n, v.inner);
      }
    kiln_nn_store_f64(y, yv);
  }
  free(xv);
  free(yv);
  return st;
}

/* ---- CumSum / CumProd ---- */

static kiln_status cum_axis(kiln_eval_ctx *ctx, const kiln_tensor *x, int *axis) {
  const kiln_tensor *a;
  int64_t axis_a;
  KILN_TRY(kiln_eval_in_req(ctx, 1, &a));
  KILN_TRY(kiln_nn_scalar_i64(ctx, a, "axis", &axis_a));
  return kiln_norm_axis(ctx, axis_a, x->rank, axis);
}

typedef struct cum_opts {
  bool prod, exclusive, reverse;
} cum_opts;

static void cum_f64(const double *x, double *y, axis_view v, cum_opts c) {
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t i = 0; i < v.inner; i++) {
      double run = c.prod ? 1 : 0;
      for (int64_t jj = 0; jj < v.n; jj++) {
        int64_t j = c.reverse ? v.n - 1 - jj : jj, at = (o * v.n + j) * v.inner + i;
        if (c.exclusive) y[at] = run;
        run = c.prod ? run * x[at] : run + x[at];
        if (!c.exclusive) y[at] = run;
      }
    }
}

static void cum_i64(const int64_t *x, int64_t *y, axis_view v, cum_opts c) {
  for (int64_t o = 0; o < v.outer; o++)
    for (int64_t i = 0; i < v.inner; i++) {
      uint64_t run = c.prod ? 1 : 0;
      for (int64_t jj = 0; jj < v.n; jj++) {
        int64_t j = c.reverse ? v.n - 1 - jj : jj, at = (o * v.n + j) * v.inner + i;
        if (c.exclusive) y[at] = (int64_t)run;
        run = c.prod ? run * (uint64_t)x[at] : run + (uint64_t)x[at];
        if (!c.exclusive) y[at] = (int64_t)run;
      }
    }
}

static kiln_status eval_cum(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int axis;
  KILN_TRY(cum_axis(ctx, x, &axis));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  cum_opts c = {ctx->node->op == KILN_OP_CumProd, da.exclusive, da.reverse};
  axis_view v = view_of(x->dims, x->rank, axis, false);
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, &y));
  kiln_status st;
  if (kiln_dtype_is_int(x->dtype)) {
    int64_t *xv, *yv = NULL;
    KILN_TRY(kiln_nn_load_i64(ctx, x, &xv));
    st = kiln_nn_alloc(ctx, x->numel, sizeof(int64_t), (void **)&yv);
    if (!st) cum_i64(xv, yv, v, c), kiln_nn_store_i64(y, yv);
    free(xv);
    free(yv);
    return st;
  }
  KILN_TRY(kiln_nn_need_float(ctx, x, "input"));
  double *xv, *yv = NULL;
  KILN_TRY(kiln_nn_load_f64(ctx, x, &xv));
  st = kiln_nn_alloc(ctx, x->numel, sizeof(double), (void **)&yv);
  if (!st) cum_f64(xv, yv, v, c), kiln_nn_store_f64(y, yv);
  free(xv);
  free(yv);
  return st;
}

/* ---- TopK ---- */

/* Sort keys: floats as double (NaN above everything), integers as int64 with unsigned values
 * shifted so that signed comparison orders them. */
typedef struct topk_key {
  double f;
  int64_t i;
} topk_key;

static int key_cmp(bool is_float, const topk_key *a, const topk_key *b) {
  if (is_float) {
    if (isnan(a->f) || isnan(b->f)) return isnan(a->f) - isnan(b->f);
    return (a->f > b->f) - (a->f < b->f);
  }
  return (a->i > b->i) - (a->i < b->i);
}

typedef struct topk_sort {
  const topk_key *keys;
  bool is_float, largest;
  int64_t *tmp;
} topk_sort;

/* Stable merge sort of idx[lo, hi) by key (descending when largest). */
static void topk_msort(const topk_sort *s, int64_t *idx, int64_t lo, int64_t hi) {
  if (hi - lo < 2) return;
  int64_t mid = lo + (hi - lo) / 2, i = lo, j = mid, k = lo;
  topk_msort(s, idx, lo, mid);
  topk_msort(s, idx, mid, hi);
  while (i < mid && j < hi) {
    int c = key_cmp(s->is_float, &s->keys[idx[j]], &s->keys[idx[i]]);
    bool take_j = s->largest ? c > 0 : c < 0;
    s->tmp[k++] = take_j ? idx[j++] : idx[i++];
  }
  while (i < mid) s->tmp[k++] = idx[i++];
  while (j < hi) s->tmp[k++] = idx[j++];
  memcpy(idx + lo, s->tmp + lo, (size_t)(hi - lo) * sizeof(int64_t));
}

static kiln_status topk_k(kiln_eval_ctx *ctx, int64_t *k) {
  if (ctx->node->opset < 10) return kiln_node_int(ctx->node, "k", -1, k);
  const kiln_tensor *kt;
  KILN_TRY(kiln_eval_in_req(ctx, 1, &kt));
  return kiln_nn_scalar_i64(ctx, kt, "K", k);
}

static void topk_load_keys(const kiln_tensor *x, int64_t base, axis_view v, topk_key *keys) {
  bool is_unsigned = kiln_dtype_class_of(x->dtype) == KILN_CLASS_UINT;
  for (int64_t j = 0; j < v.n; j++) {
    size_t at = (size_t)(base + j * v.inner);
    if (kiln_dtype_is_float(x->dtype)) keys[j].f = kiln_load_f64(x->dtype, x->data, at);
    else if (is_unsigned)
      keys[j].i = (int64_t)(kiln_load_u64(x->dtype, x->data, at) ^ (UINT64_C(1) << 63));
    else keys[j].i = kiln_load_i64(x->dtype, x->data, at);
  }
}

static kiln_status topk_run(kiln_eval_ctx *ctx, const kiln_tensor *x, int axis, int64_t k,
                            bool largest, kiln_tensor *vals, kiln_tensor *inds) {
  axis_view v = view_of(x->dims, x->rank, axis, false);
  size_t es = kiln_dtype_size(x->dtype);
  topk_key *keys;
  int64_t *idx = NULL, *tmp = NULL;
  KILN_TRY(kiln_nn_alloc(ctx, v.n, sizeof(topk_key), (void **)&keys));
  kiln_status st = kiln_nn_alloc(ctx, v.n, sizeof(int64_t), (void **)&idx);
  if (!st) st = kiln_nn_alloc(ctx, v.n, sizeof(int64_t), (void **)&tmp);
  topk_sort s = {keys, kiln_dtype_is_float(x->dtype), largest, tmp};
  for (int64_t o = 0; !st && o < v.outer; o++)
    for (int64_t i = 0; i < v.inner; i++) {
      int64_t base = o * v.n * v.inner + i, obase = o * k * v.inner + i;
      topk_load_keys(x, base, v, keys);
      for (int64_t j = 0; j < v.n; j++) idx[j] = j;
      topk_msort(&s, idx, 0, v.n);
      for (int64_t j = 0; j < k; j++) {
        int64_t src = base + idx[j] * v.inner, dst = obase + j * v.inner;
        memcpy((char *)vals->data + dst * es, (const char *)x->data + src * es, es);
        ((int64_t *)inds->data)[dst] = idx[j];
      }
    }
  free(keys);
  free(idx);
  free(tmp);
  return st;
}

static kiln_status eval_topk(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  if (x->dtype == KILN_STRING || kiln_dtype_size(x->dtype) == 0 || x->dtype == KILN_BOOL)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %s",
                           kiln_dtype_name(x->dtype));
  int64_t axis_a, k;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  axis_a = da.axis;
  bool largest = da.largest;
  KILN_TRY(topk_k(ctx, &k));
  int axis;
  KILN_TRY(kiln_norm_axis(ctx, axis_a, x->rank, &axis));
  if (k < 0 || k > x->dims[axis])
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "k=%lld out of range [0, %lld]", (long long)k,
                           (long long)x->dims[axis]);
  int64_t odims[KILN_MAX_RANK];
  memcpy(odims, x->dims, sizeof odims);
  odims[axis] = k;
  kiln_tensor *vals, *inds;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, odims, &vals));
  KILN_TRY(kiln_eval_out(ctx, 1, KILN_I64, x->rank, odims, &inds));
  return topk_run(ctx, x, axis, k, largest != 0, vals, inds);
}

static kiln_status infer_topk(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x || x->rank < 1) return KILN_OK;
  int64_t axis, k = -1;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  axis = da.axis;
  if (axis < -x->rank || axis >= x->rank)
    return kiln_nn_infer_error(ctx, "axis %lld out of range", (long long)axis);
  if (axis < 0) axis += x->rank;
  if (ctx->node->opset < 10) {
    KILN_TRY(kiln_node_int(ctx->node, "k", -1, &k));
  } else if (ctx->n_in > 1 && ctx->cin[1] && ctx->cin[1]->numel == 1 &&
             kiln_dtype_is_int(ctx->cin[1]->dtype)) {
    k = kiln_load_i64(ctx->cin[1]->dtype, ctx->cin[1]->data, 0);
  }
  kiln_type t = *x;
  t.dims[axis].value = k;
  t.dims[axis].sym = NULL;
  ctx->out[0] = t;
  if (ctx->n_out > 1) {
    t.dtype = KILN_I64;
    ctx->out[1] = t;
  }
  return KILN_OK;
}

void kiln_nn_register_reduce_axis(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_Softmax, eval_softmax, kiln_nn_infer_same, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_LogSoftmax, eval_softmax, kiln_nn_infer_same, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_Hardmax, eval_softmax, kiln_nn_infer_same, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_CumSum, eval_cum, kiln_nn_infer_same, 2, 2, 1, 1);
  kiln_nn_set(table, KILN_OP_CumProd, eval_cum, kiln_nn_infer_same, 2, 2, 1, 1);
  kiln_nn_set(table, KILN_OP_TopK, eval_topk, infer_topk, 1, 2, 2, 2);
}
