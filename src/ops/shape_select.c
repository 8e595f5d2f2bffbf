/* Ops whose output shape depends on the data: NonZero, Compress, Unique. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

static bool is_nonzero(const kiln_tensor *t, int64_t i) {
  if (t->dtype == KILN_STRING) {
    const char *s = ((char *const *)t->data)[i];
    return s && s[0];
  }
  if (kiln_dtype_is_float(t->dtype)) return kiln_load_f64(t->dtype, t->data, (size_t)i) != 0.0;
  return kiln_load_u64(t->dtype, t->data, (size_t)i) != 0;
}

/* ---- NonZero: [rank, nnz] coordinates in row-major order (a scalar counts as
 * rank 1) ---- */
static kiln_status eval_nonzero(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t nnz = 0;
  for (int64_t i = 0; i < x->numel; i++) nnz += is_nonzero(x, i);
  int r = x->rank ? x->rank : 1;
  int64_t dims[2] = {r, nnz}, pos[KILN_MAX_RANK] = {0}, k = 0;
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_I64, 2, dims, &o));
  int64_t *out = o->data;
  for (int64_t i = 0; i < x->numel; i++) {
    if (is_nonzero(x, i)) {
      for (int d = 0; d < r; d++) out[d * nnz + k] = x->rank ? pos[d] : 0;
      k++;
    }
    for (int d = x->rank - 1; d >= 0; d--) {
      if (++pos[d] < x->dims[d]) break;
      pos[d] = 0;
    }
  }
  return KILN_OK;
}

static kiln_status infer_nonzero(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  kiln_dim d[2] = {kiln_shape_dim(x && x->rank >= 0 ? (x->rank ? x->rank : 1) : -1),
                   kiln_shape_dim(-1)};
  kiln_shape_out_type(ctx, 0, KILN_I64, 2, d);
  return KILN_OK;
}

/* ---- Compress: the slices along axis (or the flattened elements) where
 * condition holds ---- */
static kiln_status eval_compress(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *c;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &c));
  if (c->rank != 1 || c->dtype == KILN_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "condition must be a 1-D boolean tensor");
  const kiln_attr *aa = kiln_node_attr(ctx->node, "axis");
  int axis = 0, rank = 1;
  int64_t dims[KILN_MAX_RANK] = {x->numel}, outer = 1, inner = 1;
  if (aa) {
    kiln_attrs_data da;
    KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
    int64_t a = da.axis;
    KILN_TRY(kiln_norm_axis(ctx, a, x->rank, &axis));
    if (x->rank == 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must have rank >= 1");
    rank = x->rank;
    memcpy(dims, x->dims, sizeof dims);
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  }
  int64_t D = dims[axis], cnt = 0;
  for (int64_t i = 0; i < c->numel; i++) {
    if (!is_nonzero(c, i)) continue;
    if (i >= D)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "condition selects index %lld of %lld",
                             (long long)i, (long long)D);
    cnt++;
  }
  dims[axis] = cnt;
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, rank, dims, &o));
  int64_t k = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t i = 0; i < c->numel && i < D; i++)
      if (is_nonzero(c, i)) kiln_shape_copy(o, (k++) * inner, x, (a * D + i) * inner, inner);
  return KILN_OK;
}

static kiln_status infer_compress(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  const kiln_attr *aa = kiln_node_attr(ctx->node, "axis");
  if (!aa) {
    kiln_shape_out_type(ctx, 0, x->dtype, 1, NULL);
    return KILN_OK;
  }
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, x->dims);
  if (x->rank <= 0) return KILN_OK;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t a = da.axis;
  if (a < -x->rank || a >= x->rank) return kiln_shape_err(ctx->node, "axis is out of range");
  ctx->out[0].dims[a < 0 ? a + x->rank : a] = kiln_shape_dim(-1);
  return KILN_OK;
}

/* ---- Unique ----
 * Items are the slices along axis (the elements, without axis); item k holds
 * the elements (o, k, i) for o < outer, i < inner, compared lexicographically.
 * NaNs are equal and sort last (numpy's equal_nan). Sorted: Y in ascending
 * order; else in order of first occurrence. indices: first occurrence;
 * inverse_indices: item -> Y position; counts. */
typedef struct uniq {
  const kiln_tensor *x;
  int64_t outer, n, inner;
} uniq;

static int cmp_elem(const kiln_tensor *x, int64_t a, int64_t b) {
  kiln_dtype dt = x->dtype;
  if (dt == KILN_STRING) {
    const char *s = ((char *const *)x->data)[a], *t = ((char *const *)x->data)[b];
    int c = strcmp(s ? s : "", t ? t : "");
    return (c > 0) - (c < 0);
  }
  if (kiln_dtype_is_float(dt)) {
    double u = kiln_load_f64(dt, x->data, (size_t)a), v = kiln_load_f64(dt, x->data, (size_t)b);
    if (isnan(u) || isnan(v)) return isnan(u) - isnan(v);
    return (u > v) - (u < v);
  }
  if (kiln_dtype_class_of(dt) == KILN_CLASS_SINT) {
    int64_t u = kiln_load_i64(dt, x->data, (size_t)a), v = kiln_load_i64(dt, x->data, (size_t)b);
    return (u > v) - (u < v);
  }
  uint64_t u = kiln_load_u64(dt, x->data, (size_t)a), v = kiln_load_u64(dt, x->data, (size_t)b);
  return (u > v) - (u < v);
}

static int cmp_item(const uniq *q, int64_t a, int64_t b) {
  for (int64_t o = 0; o < q->outer; o++)
    for (int64_t i = 0; i < q->inner; i++) {
      int c = cmp_elem(q->x, (o * q->n + a) * q->inner + i, (o * q->n + b) * q->inner + i);
      if (c) return c;
    }
  return 0;
}

/* Stable merge sort of idx[0..n) by item order. */
static void sort_items(const uniq *q, int64_t *idx, int64_t *tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  sort_items(q, idx, tmp, h);
  sort_items(q, idx + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_item(q, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

/* Groups the sorted items: first[g] (first occurrence), count[g], group[item];
 * returns the number of groups. With `by_first`, groups are renumbered in order
 * of first occurrence. */
static int64_t group_items(const uniq *q, const int64_t *sorted, bool by_first, int64_t *first,
                           int64_t *count, int64_t *group) {
  int64_t g = -1;
  for (int64_t k = 0; k < q->n; k++) {
    if (k == 0 || cmp_item(q, sorted[k - 1], sorted[k])) {
      first[++g] = sorted[k];
      count[g] = 0;
    }
    count[g]++;
    group[sorted[k]] = g;
  }
  int64_t ng = g + 1;
  if (!by_first) return ng;
  /* rank groups by first occurrence: walk items in order, numbering new groups
   */
  int64_t *renum = kiln_xcalloc((size_t)ng + 1, sizeof *renum),
          *f2 = kiln_xcalloc((size_t)ng + 1, sizeof *f2),
          *c2 = kiln_xcalloc((size_t)ng + 1, sizeof *c2), next = 0;
  for (int64_t k = 0; k < ng; k++) renum[k] = -1;
  for (int64_t i = 0; i < q->n; i++) {
    int64_t gi = group[i];
    if (renum[gi] < 0) {
      renum[gi] = next;
      f2[next] = first[gi];
      c2[next++] = count[gi];
    }
    group[i] = renum[gi];
  }
  memcpy(first, f2, (size_t)ng * sizeof *f2);
  memcpy(count, c2, (size_t)ng * sizeof *c2);
  free(renum);
  free(f2);
  free(c2);
  return ng;
}

static kiln_status unique_outputs(kiln_eval_ctx *ctx, const uniq *q, int axis, int64_t ng,
                                  const int64_t *first, const int64_t *count,
                                  const int64_t *group) {
  const kiln_tensor *x = q->x;
  int64_t dims[KILN_MAX_RANK] = {ng};
  int rank = 1;
  if (axis >= 0) {
    rank = x->rank;
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = ng;
  }
  kiln_tensor *y, *t;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, rank, dims, &y));
  for (int64_t o = 0; o < q->outer; o++)
    for (int64_t g = 0; g < ng; g++)
      kiln_shape_copy(y, (o * ng + g) * q->inner, x, (o * q->n + first[g]) * q->inner, q->inner);
  const int64_t *src[3] = {first, group, count};
  int64_t len[3] = {ng, q->n, ng};
  for (int k = 0; k < 3; k++) {
    if (!kiln_shape_want_out(ctx, k + 1)) continue;
    KILN_TRY(kiln_eval_out(ctx, k + 1, KILN_I64, 1, &len[k], &t));
    if (len[k]) memcpy(t->data, src[k], (size_t)len[k] * sizeof(int64_t));
  }
  return KILN_OK;
}

static kiln_status eval_unique(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  bool sorted_attr = da.sorted;
  uniq q = {x, 1, x->numel, 1};
  int axis = -1;
  if (da.has_axis) {
    int64_t a = da.axis;
    if (x->rank == 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must have rank >= 1");
    KILN_TRY(kiln_norm_axis(ctx, a, x->rank, &axis));
    q.n = x->dims[axis];
    for (int d = 0; d < axis; d++) q.outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) q.inner *= x->dims[d];
  }
  int64_t *buf;
  KILN_TRY(kiln_shape_alloc(ctx, 5 * q.n, sizeof *buf, (void **)&buf));
  int64_t *idx = buf, *tmp = buf + q.n, *first = buf + 2 * q.n, *count = buf + 3 * q.n,
          *group = buf + 4 * q.n;
  for (int64_t i = 0; i < q.n; i++) idx[i] = i;
  sort_items(&q, idx, tmp, q.n);
  int64_t ng = group_items(&q, idx, !sorted_attr, first, count, group);
  kiln_status st = unique_outputs(ctx, &q, axis, ng, first, count, group);
  free(buf);
  return st;
}

static kiln_status infer_unique(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  if (da.has_axis && x->rank > 0) {
    int64_t a = da.axis;
    if (a < -x->rank || a >= x->rank) return kiln_shape_err(ctx->node, "axis is out of range");
    if (a < 0) a += x->rank;
    kiln_shape_out_type(ctx, 0, x->dtype, x->rank, x->dims);
    ctx->out[0].dims[a] = kiln_shape_dim(-1);
    kiln_dim n = x->dims[a];
    if (ctx->n_out > 2) kiln_shape_out_type(ctx, 2, KILN_I64, 1, &n);
  } else {
    kiln_shape_out_type(ctx, 0, x->dtype, 1, NULL);
    kiln_dim n = x->rank >= 0 ? kiln_shape_dim_prod(x->dims, 0, x->rank) : kiln_shape_dim(-1);
    if (ctx->n_out > 2) kiln_shape_out_type(ctx, 2, KILN_I64, 1, &n);
  }
  kiln_shape_out_type(ctx, 1, KILN_I64, 1, NULL);
  kiln_shape_out_type(ctx, 3, KILN_I64, 1, NULL);
  return KILN_OK;
}

void kiln_shape_register_select(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_NonZero, eval_nonzero, infer_nonzero, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Compress, eval_compress, infer_compress, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Unique, eval_unique, infer_unique, 1, 1, 1, 4);
}
