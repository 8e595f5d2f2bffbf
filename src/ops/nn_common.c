/* Helpers shared by the 'reduce' and 'nn' family files (see nn_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "graph/window.h"
#include "nn_internal.h"

void kiln_nn_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, kiln_infer_fn infer,
                 int min_in, int max_in, int min_out, int max_out) {
  table[op].eval = eval;
  table[op].infer = infer;
  table[op].min_in = min_in;
  table[op].max_in = max_in;
  table[op].min_out = min_out;
  table[op].max_out = max_out;
}

/* ---- buffers ---- */

kiln_status kiln_nn_alloc(const kiln_eval_ctx *ctx, int64_t count, size_t elem, void **out) {
  int64_t bytes;
  *out = NULL;
  if (count < 0 || kiln_mul_overflow_i64(count, (int64_t)elem, &bytes) ||
      (uint64_t)bytes > SIZE_MAX)
    return kiln_eval_error(ctx, KILN_ERR_OOM, "buffer of %lld elements is too large",
                           (long long)count);
  if (bytes == 0) return KILN_OK;
  *out = malloc((size_t)bytes);
  if (!*out)
    return kiln_eval_error(ctx, KILN_ERR_OOM, "out of memory (%lld bytes)", (long long)bytes);
  return KILN_OK;
}

kiln_status kiln_nn_load_f64(const kiln_eval_ctx *ctx, const kiln_tensor *t, double **out) {
  KILN_TRY(kiln_nn_alloc(ctx, t->numel, sizeof(double), (void **)out));
  double *v = *out;
  if (t->dtype == KILN_F32) {
    const float *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) v[i] = p[i];
  } else if (t->dtype == KILN_F64) {
    if (t->numel) memcpy(v, t->data, (size_t)t->numel * sizeof(double));
  } else {
    for (int64_t i = 0; i < t->numel; i++) v[i] = kiln_load_f64(t->dtype, t->data, (size_t)i);
  }
  return KILN_OK;
}

kiln_status kiln_nn_load_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t, int64_t **out) {
  KILN_TRY(kiln_nn_alloc(ctx, t->numel, sizeof(int64_t), (void **)out));
  int64_t *v = *out;
  bool is_unsigned = kiln_dtype_class_of(t->dtype) == KILN_CLASS_UINT;
  for (int64_t i = 0; i < t->numel; i++)
    v[i] = is_unsigned ? (int64_t)kiln_load_u64(t->dtype, t->data, (size_t)i)
                       : kiln_load_i64(t->dtype, t->data, (size_t)i);
  return KILN_OK;
}

void kiln_nn_store_f64(kiln_tensor *t, const double *v) {
  if (t->dtype == KILN_F32) {
    float *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) p[i] = (float)v[i];
  } else if (t->dtype == KILN_F64) {
    if (t->numel) memcpy(t->data, v, (size_t)t->numel * sizeof(double));
  } else {
    for (int64_t i = 0; i < t->numel; i++) kiln_store_f64(t->dtype, t->data, (size_t)i, v[i]);
  }
}

void kiln_nn_store_i64(kiln_tensor *t, const int64_t *v) {
  bool is_unsigned = kiln_dtype_class_of(t->dtype) == KILN_CLASS_UINT;
  for (int64_t i = 0; i < t->numel; i++) {
    if (is_unsigned) kiln_store_u64(t->dtype, t->data, (size_t)i, (uint64_t)v[i]);
    else kiln_store_i64(t->dtype, t->data, (size_t)i, v[i]);
  }
}

int kiln_nn_cmp(const kiln_tensor *t, int64_t i, int64_t j) {
  switch (kiln_dtype_class_of(t->dtype)) {
  case KILN_CLASS_FLOAT: {
    double a = kiln_load_f64(t->dtype, t->data, (size_t)i);
    double b = kiln_load_f64(t->dtype, t->data, (size_t)j);
    if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
    return (a > b) - (a < b);
  }
  case KILN_CLASS_UINT: {
    uint64_t a = kiln_load_u64(t->dtype, t->data, (size_t)i);
    uint64_t b = kiln_load_u64(t->dtype, t->data, (size_t)j);
    return (a > b) - (a < b);
  }
  default: {
    int64_t a = kiln_load_i64(t->dtype, t->data, (size_t)i);
    int64_t b = kiln_load_i64(t->dtype, t->data, (size_t)j);
    return (a > b) - (a < b);
  }
  }
}

kiln_status kiln_nn_reduce_map(const kiln_eval_ctx *ctx, int rank, const int64_t *dims,
                               const bool *mask, int64_t **out_map) {
  int64_t ostr[KILN_MAX_RANK], idx[KILN_MAX_RANK] = {0}, s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    ostr[d] = mask[d] ? 0 : s;
    if (!mask[d]) s *= dims[d];
  }
  int64_t numel = kiln_nn_prod(dims, 0, rank);
  KILN_TRY(kiln_nn_alloc(ctx, numel, sizeof(int64_t), (void **)out_map));
  int64_t *map = *out_map, off = 0;
  for (int64_t i = 0; i < numel; i++) {
    map[i] = off;
    for (int d = rank - 1; d >= 0; d--) {
      off += ostr[d];
      if (++idx[d] < dims[d]) break;
      off -= ostr[d] * idx[d];
      idx[d] = 0;
    }
  }
  return KILN_OK;
}

kiln_status kiln_nn_bcast_map(const kiln_eval_ctx *ctx, const kiln_tensor *t, int rank,
                              const int64_t *dims, int64_t **out_map) {
  if (t->rank > rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "a tensor of rank %d does not broadcast to rank %d", t->rank, rank);
  bool mask[KILN_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    int td = d - (rank - t->rank);
    int64_t e = td >= 0 ? t->dims[td] : 1;
    if (e != 1 && e != dims[d])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "a dim of %lld does not broadcast to %lld",
                             (long long)e, (long long)dims[d]);
    mask[d] = e == 1;
  }
  return kiln_nn_reduce_map(ctx, rank, dims, mask, out_map);
}

/* ---- checks ---- */

/* The value bound to the input of ctx's node that holds t, or NULL. */
static const kiln_value *input_value(const kiln_eval_ctx *ctx, const kiln_tensor *t) {
  for (int i = 0; ctx->node && ctx->graph && i < ctx->n_in && i < ctx->node->n_inputs; i++)
    if (kiln_eval_in(ctx, i) == t && ctx->node->inputs[i] >= 0)
      return &ctx->graph->values.data[ctx->node->inputs[i]];
  return NULL;
}

/* A wrong dtype names the value that has it (often a model input declared with the wrong
 * type), not only the node. */
kiln_status kiln_nn_need_float(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what) {
  if (kiln_dtype_is_float(t->dtype)) return KILN_OK;
  const kiln_value *v = input_value(ctx, t);
  if (v)
    return kiln_eval_error(
        ctx, KILN_ERR_INVALID, "%s must have a float dtype, but it is %s'%s', of dtype %s", what,
        v->kind == KILN_VALUE_INPUT ? "the graph input " : "", v->name, kiln_dtype_name(t->dtype));
  return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must have a float dtype, not %s", what,
                         kiln_dtype_name(t->dtype));
}

kiln_status kiln_nn_need_rank(const kiln_eval_ctx *ctx, const kiln_tensor *t, int min_rank,
                              const char *what) {
  if (t->rank < min_rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must have rank >= %d, not %d", what, min_rank,
                           t->rank);
  return KILN_OK;
}

int64_t kiln_nn_prod(const int64_t *dims, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= dims[i];
  return p;
}

/* ---- attributes ---- */

kiln_status kiln_nn_ints_n(const kiln_node *node, const char *name, int n, int64_t dflt,
                           int64_t *out, bool *present) {
  const int64_t *v;
  int len;
  KILN_TRY(kiln_node_ints(node, name, &v, &len));
  if (present) *present = len >= 0;
  if (len < 0) {
    for (int i = 0; i < n; i++) out[i] = dflt;
    return KILN_OK;
  }
  if (len != n) {
    char buf[160];
    return kiln_invalid("%s: attribute '%s' has %d values, expected %d",
                        kiln_node_label(node, buf, sizeof buf), name, len, n);
  }
  for (int i = 0; i < n; i++) out[i] = v[i];
  return KILN_OK;
}

kiln_status kiln_nn_scalar_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what,
                               int64_t *out) {
  if (t->numel != 1 || t->rank > 1 || !kiln_dtype_is_int(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be an integer scalar", what);
  *out = kiln_load_i64(t->dtype, t->data, 0);
  return KILN_OK;
}

/* ---- windows ---- */

/* Output size and pads of spatial dim d (graph/window.h). */
static kiln_status window_dim(const kiln_node *node, kiln_nn_window *w, int d) {
  char buf[160];
  kiln_window_dim wd = {
      w->in[d], w->kernel[d], w->strides[d], w->dilations[d], w->pads[d], w->pads[w->nsp + d], 0};
  switch (kiln_window_resolve(&wd, w->auto_pad, w->ceil_mode)) {
  case KILN_WINDOW_OK: break;
  case KILN_WINDOW_BAD:
    return kiln_invalid("%s: kernel, strides and dilations must be positive, pads non-negative",
                        kiln_node_label(node, buf, sizeof buf));
  case KILN_WINDOW_TOO_LARGE:
    return kiln_invalid("%s: window attributes too large", kiln_node_label(node, buf, sizeof buf));
  default:
    return kiln_invalid("%s: window of %lld is larger than padded input %lld",
                        kiln_node_label(node, buf, sizeof buf),
                        (long long)((wd.kernel - 1) * wd.dilation + 1),
                        (long long)(wd.in + wd.pad_begin + wd.pad_end));
  }
  w->pads[d] = wd.pad_begin;
  w->pads[w->nsp + d] = wd.pad_end;
  w->out[d] = wd.out;
  return KILN_OK;
}

kiln_status kiln_nn_window_init(const kiln_node *node, kiln_nn_window *w, bool ceil_ok) {
  int n = w->nsp;
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(node, &wa));
  KILN_TRY(kiln_nn_ints_n(node, "strides", n, 1, w->strides, NULL));
  KILN_TRY(kiln_nn_ints_n(node, "dilations", n, 1, w->dilations, NULL));
  KILN_TRY(kiln_nn_ints_n(node, "pads", 2 * n, 0, w->pads, NULL));
  w->auto_pad = wa.auto_pad;
  w->ceil_mode = ceil_ok && wa.ceil_mode;
  for (int d = 0; d < n; d++) KILN_TRY(window_dim(node, w, d));
  return KILN_OK;
}

/* ---- inference helpers ---- */

kiln_status kiln_nn_infer_error(const kiln_infer_ctx *ctx, const char *fmt, ...) {
  char label[160], msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_invalid("%s: %s", kiln_node_label(ctx->node, label, sizeof label), msg);
}

kiln_status kiln_nn_infer_need_float(const kiln_infer_ctx *ctx, int i, const char *what) {
  if (i >= ctx->n_in || !ctx->in[i] || !ctx->in[i]->dtype || kiln_dtype_is_float(ctx->in[i]->dtype))
    return KILN_OK;
  char tb[160];
  const kiln_value *v = &ctx->graph->values.data[ctx->node->inputs[i]];
  return kiln_nn_infer_error(ctx, "%s must be a float tensor, but it is %s'%s' (%s)", what,
                             v->kind == KILN_VALUE_INPUT ? "the graph input " : "", v->name,
                             kiln_type_str(ctx->in[i], tb, sizeof tb));
}

const kiln_type *kiln_nn_infer_in(const kiln_infer_ctx *ctx, int i) {
  if (i >= ctx->n_in || !ctx->in[i]) return NULL;
  const kiln_type *t = ctx->in[i];
  if (t->kind != KILN_TYPE_TENSOR || t->rank < 0) return NULL;
  return t;
}

void kiln_nn_infer_out_unknown(kiln_infer_ctx *ctx, int i, kiln_dtype dtype, int rank) {
  if (i >= ctx->n_out) return;
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_TENSOR;
  t.dtype = dtype;
  t.rank = rank;
  for (int d = 0; d < rank && d < KILN_MAX_RANK; d++) {
    t.dims[d].value = -1;
    t.dims[d].sym = NULL;
  }
  ctx->out[i] = t;
}

kiln_status kiln_nn_infer_same(kiln_infer_ctx *ctx) {
  if (ctx->n_in < 1 || !ctx->in[0] || ctx->in[0]->kind != KILN_TYPE_TENSOR) return KILN_OK;
  ctx->out[0] = *ctx->in[0];
  return KILN_OK;
}
