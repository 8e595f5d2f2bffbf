/* Ops that read or write elements at positions given by an index tensor:
 * Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND,
 * TensorScatter. Negative indices count from the end of their axis; an index
 * out of range is an error naming the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

static kiln_status need_int(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what) {
  if (!kiln_dtype_is_int(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be an integer tensor, not %s", what,
                           kiln_dtype_name(t->dtype));
  return KILN_OK;
}

/* Index i of t, normalized into [0, d); error when out of range. */
static kiln_status index_at(const kiln_eval_ctx *ctx, const kiln_tensor *t, int64_t i, int64_t d,
                            int64_t *out) {
  int64_t v = kiln_load_i64(t->dtype, t->data, (size_t)i);
  if (t->dtype == KILN_U64 && v < 0) v = INT64_MAX;
  int64_t w = v < 0 ? v + d : v;
  if (w < 0 || w >= d)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "index %lld is out of range [-%lld, %lld)",
                           (long long)v, (long long)d, (long long)d);
  *out = w;
  return KILN_OK;
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= d[i];
  return p;
}

static kiln_status axis_attr(const kiln_eval_ctx *ctx, int rank, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t axis = da.axis;
  if (axis < -rank || axis >= rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis %lld is out of range for rank %d",
                           (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return KILN_OK;
}

/* ---- Gather: out[a.., j.., b..] = data[a.., idx[j..], b..] ---- */
static kiln_status eval_gather(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *idx;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &idx));
  KILN_TRY(need_int(ctx, idx, "indices"));
  if (x->rank < 1) return kiln_eval_error(ctx, KILN_ERR_INVALID, "data must have rank >= 1");
  int axis, r = x->rank - 1 + idx->rank;
  KILN_TRY(axis_attr(ctx, x->rank, &axis));
  if (r > KILN_MAX_RANK)
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "output rank %d is too large", r);
  int64_t dims[KILN_MAX_RANK];
  int k = 0;
  for (int d = 0; d < axis; d++) dims[k++] = x->dims[d];
  for (int d = 0; d < idx->rank; d++) dims[k++] = idx->dims[d];
  for (int d = axis + 1; d < x->rank; d++) dims[k++] = x->dims[d];
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, r, dims, &o));
  int64_t outer = prod(x->dims, 0, axis), inner = prod(x->dims, axis + 1, x->rank);
  int64_t D = x->dims[axis], n = idx->numel;
  for (int64_t j = 0; j < n; j++) {
    int64_t v;
    KILN_TRY(index_at(ctx, idx, j, D, &v));
    for (int64_t a = 0; a < outer; a++)
      kiln_shape_copy(o, (a * n + j) * inner, x, (a * D + v) * inner, inner);
  }
  return KILN_OK;
}

static kiln_status infer_gather(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0), *idx = kiln_shape_in_type(ctx, 1);
  if (!x) return KILN_OK;
  if (x->rank < 1 || !idx || idx->rank < 0 || x->rank - 1 + idx->rank > KILN_MAX_RANK) {
    kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
    return KILN_OK;
  }
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t axis = da.axis;
  if (axis < -x->rank || axis >= x->rank)
    return kiln_shape_err(ctx->node, "axis %lld is out of range", (long long)axis);
  if (axis < 0) axis += x->rank;
  kiln_dim d[KILN_MAX_RANK];
  int k = 0;
  for (int i = 0; i < axis; i++) d[k++] = x->dims[i];
  for (int i = 0; i < idx->rank; i++) d[k++] = idx->dims[i];
  for (int i = (int)axis + 1; i < x->rank; i++) d[k++] = x->dims[i];
  kiln_shape_out_type(ctx, 0, x->dtype, k, d);
  return KILN_OK;
}

/* Checks that idx has x's rank and fits in x on every axis but `axis`. */
static kiln_status check_elements_shape(const kiln_eval_ctx *ctx, const kiln_tensor *x,
                                        const kiln_tensor *idx, int axis) {
  if (idx->rank != x->rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "indices must have the rank of data (%d)",
                           x->rank);
  for (int d = 0; d < x->rank; d++)
    if (d != axis && idx->dims[d] > x->dims[d])
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "indices extent %lld exceeds data extent %lld on axis %d",
                             (long long)idx->dims[d], (long long)x->dims[d], d);
  return KILN_OK;
}

/* map[i] = offset in x of the element that index position i (of idx's shape)
 * designates. */
static kiln_status elements_map(const kiln_eval_ctx *ctx, const kiln_tensor *x,
                                const kiln_tensor *idx, int axis, int64_t *map) {
  int64_t st[KILN_MAX_RANK], pos[KILN_MAX_RANK] = {0};
  kiln_strides(x->rank, x->dims, st);
  for (int64_t i = 0; i < idx->numel; i++) {
    int64_t v, off = 0;
    KILN_TRY(index_at(ctx, idx, i, x->dims[axis], &v));
    for (int d = 0; d < x->rank; d++) off += (d == axis ? v : pos[d]) * st[d];
    map[i] = off;
    for (int d = x->rank - 1; d >= 0; d--) {
      if (++pos[d] < idx->dims[d]) break;
      pos[d] = 0;
    }
  }
  return KILN_OK;
}

/* ---- GatherElements: out[p] = data[p with p[axis] = idx[p]] ---- */
static kiln_status eval_gather_elements(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *idx;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &idx));
  KILN_TRY(need_int(ctx, idx, "indices"));
  int axis;
  KILN_TRY(axis_attr(ctx, x->rank, &axis));
  KILN_TRY(check_elements_shape(ctx, x, idx, axis));
  int64_t *map;
  KILN_TRY(kiln_shape_alloc(ctx, idx->numel, sizeof *map, (void **)&map));
  kiln_status st = elements_map(ctx, x, idx, axis, map);
  kiln_tensor *o;
  if (!st) st = kiln_eval_out(ctx, 0, x->dtype, idx->rank, idx->dims, &o);
  if (!st) kiln_shape_gather(o, x, map);
  free(map);
  return st;
}

static kiln_status infer_gather_elements(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0), *idx = kiln_shape_in_type(ctx, 1);
  if (x) kiln_shape_out_type(ctx, 0, x->dtype, idx ? idx->rank : -1, idx ? idx->dims : NULL);
  return KILN_OK;
}

/* ---- GatherND ---- */
typedef struct nd_geom {
  int b, m;           /* batch dims, index tuple length */
  int64_t batches;    /* product of the batch dims */
  int64_t tuples;     /* index tuples per batch */
  int64_t inner;      /* elements per tuple: product of data dims [b+m, r) */
  int64_t data_batch; /* elements of data per batch */
  int64_t st[KILN_MAX_RANK];
} nd_geom;

static kiln_status nd_geometry(const kiln_eval_ctx *ctx, const kiln_tensor *x,
                               const kiln_tensor *idx, int64_t batch_dims, nd_geom *g) {
  KILN_TRY(need_int(ctx, idx, "indices"));
  int r = x->rank, q = idx->rank;
  if (q < 1 || batch_dims < 0 || batch_dims >= (q < r ? q : r))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "batch_dims %lld is invalid for ranks %d and %d",
                           (long long)batch_dims, r, q);
  g->b = (int)batch_dims;
  int64_t m = idx->dims[q - 1];
  if (m < 1 || m > r - g->b)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "index tuples of length %lld for data rank %d",
                           (long long)m, r);
  g->m = (int)m;
  for (int d = 0; d < g->b; d++)
    if (x->dims[d] != idx->dims[d])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "batch dimension %d differs", d);
  g->batches = prod(x->dims, 0, g->b);
  g->tuples = prod(idx->dims, g->b, q - 1);
  g->inner = prod(x->dims, g->b + g->m, r);
  g->data_batch = prod(x->dims, g->b, r);
  kiln_strides(r, x->dims, g->st);
  return KILN_OK;
}

/* Offset in data of tuple t (global tuple number) of batch bi. */
static kiln_status nd_offset(const kiln_eval_ctx *ctx, const kiln_tensor *x, const kiln_tensor *idx,
                             const nd_geom *g, int64_t bi, int64_t t, int64_t *out) {
  int64_t off = bi * g->data_batch;
  for (int j = 0; j < g->m; j++) {
    int64_t v;
    KILN_TRY(index_at(ctx, idx, t * g->m + j, x->dims[g->b + j], &v));
    off += v * g->st[g->b + j];
  }
  *out = off;
  return KILN_OK;
}

static kiln_status eval_gather_nd(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *idx;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &idx));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t bd = da.batch_dims;
  nd_geom g;
  KILN_TRY(nd_geometry(ctx, x, idx, bd, &g));
  int64_t dims[2 * KILN_MAX_RANK];
  int k = 0;
  for (int d = 0; d < idx->rank - 1; d++) dims[k++] = idx->dims[d];
  for (int d = g.b + g.m; d < x->rank; d++) dims[k++] = x->dims[d];
  if (k > KILN_MAX_RANK)
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "output rank %d is too large", k);
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, k, dims, &o));
  for (int64_t bi = 0; bi < g.batches; bi++)
    for (int64_t t = 0; t < g.tuples; t++) {
      int64_t tt = bi * g.tuples + t, off;
      KILN_TRY(nd_offset(ctx, x, idx, &g, bi, tt, &off));
      kiln_shape_copy(o, tt * g.inner, x, off, g.inner);
    }
  return KILN_OK;
}

static kiln_status infer_gather_nd(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0), *idx = kiln_shape_in_type(ctx, 1);
  if (!x) return KILN_OK;
  kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t b = da.batch_dims;
  if (!idx || idx->rank < 1 || x->rank < 0 || idx->dims[idx->rank - 1].value < 0) return KILN_OK;
  int64_t m = idx->dims[idx->rank - 1].value;
  if (b < 0 || m > x->rank - b) return KILN_OK; /* the kernel reports it */
  kiln_dim d[2 * KILN_MAX_RANK];
  int k = 0;
  for (int i = 0; i < idx->rank - 1; i++) d[k++] = idx->dims[i];
  for (int i = (int)(b + m); i < x->rank; i++) d[k++] = x->dims[i];
  if (k <= KILN_MAX_RANK) kiln_shape_out_type(ctx, 0, x->dtype, k, d);
  return KILN_OK;
}

/* ---- Scatter reductions ---- */
typedef enum red_kind { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } red_kind;

static kiln_status reduction_of(kiln_eval_ctx *ctx, kiln_dtype dt, red_kind *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  static const red_kind of[KILN_SCATTER_REDUCTION_COUNT] = {
      [KILN_SCATTER_NONE] = RED_NONE, [KILN_SCATTER_ADD] = RED_ADD, [KILN_SCATTER_MUL] = RED_MUL,
      [KILN_SCATTER_MAX] = RED_MAX,   [KILN_SCATTER_MIN] = RED_MIN,
  };
  const char *s = kiln_scatter_reduction_name(da.reduction);
  *out = of[da.reduction];
  if (*out != RED_NONE && dt == KILN_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "reduction '%s' on strings", s);
  return KILN_OK;
}

static double red_f64(red_kind r, double a, double b) {
  if (r == RED_ADD) return a + b;
  if (r == RED_MUL) return a * b;
  if (isnan(a) || isnan(b)) return NAN;
  return r == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
}

/* o[di] = reduce(o[di], u[ui]); integers wrap, bool uses or/and. */
static void red_apply(red_kind r, kiln_tensor *o, int64_t di, const kiln_tensor *u, int64_t ui) {
  kiln_dtype dt = o->dtype;
  if (r == RED_NONE) {
    kiln_shape_copy(o, di, u, ui, 1);
  } else if (kiln_dtype_is_float(dt)) {
    double v =
        red_f64(r, kiln_load_f64(dt, o->data, (size_t)di), kiln_load_f64(dt, u->data, (size_t)ui));
    kiln_store_f64(dt, o->data, (size_t)di, v);
  } else if (dt == KILN_BOOL) {
    uint8_t *p = o->data, b = ((const uint8_t *)u->data)[ui];
    p[di] = (r == RED_ADD || r == RED_MAX) ? (p[di] || b) : (p[di] && b);
  } else if (kiln_dtype_class_of(dt) == KILN_CLASS_UINT) {
    uint64_t a = kiln_load_u64(dt, o->data, (size_t)di), b = kiln_load_u64(dt, u->data, (size_t)ui);
    uint64_t v = r == RED_ADD   ? a + b
                 : r == RED_MUL ? a * b
                 : r == RED_MAX ? (a > b ? a : b)
                                : (a < b ? a : b);
    kiln_store_u64(dt, o->data, (size_t)di, v);
  } else {
    int64_t a = kiln_load_i64(dt, o->data, (size_t)di), b = kiln_load_i64(dt, u->data, (size_t)ui);
    int64_t v = r == RED_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
                : r == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
                : r == RED_MAX ? (a > b ? a : b)
                               : (a < b ? a : b);
    kiln_store_i64(dt, o->data, (size_t)di, v);
  }
}

/* Output 0 as a copy of data. */
static kiln_status copy_data(kiln_eval_ctx *ctx, const kiln_tensor *x, kiln_tensor **o) {
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, o));
  kiln_shape_copy(*o, 0, x, 0, x->numel);
  return KILN_OK;
}

/* ---- Scatter (9-10) and ScatterElements: out[p with p[axis] = idx[p]] =
 * updates[p] ---- */
static kiln_status eval_scatter_elements(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *idx, *u;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &idx));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &u));
  KILN_TRY(need_int(ctx, idx, "indices"));
  int axis;
  red_kind r = RED_NONE;
  KILN_TRY(axis_attr(ctx, x->rank, &axis));
  if (ctx->node->op == KILN_OP_ScatterElements) KILN_TRY(reduction_of(ctx, x->dtype, &r));
  KILN_TRY(check_elements_shape(ctx, x, idx, axis));
  if (u->dtype != x->dtype || !kiln_tensor_same_shape(u, idx))
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "updates must have the dtype of data and the shape of indices");
  int64_t *map;
  KILN_TRY(kiln_shape_alloc(ctx, idx->numel, sizeof *map, (void **)&map));
  kiln_status st = elements_map(ctx, x, idx, axis, map);
  kiln_tensor *o;
  if (!st) st = copy_data(ctx, x, &o);
  for (int64_t i = 0; !st && i < idx->numel; i++) red_apply(r, o, map[i], u, i);
  free(map);
  return st;
}

/* ---- ScatterND: out[idx[t]] (a slice) = updates[t] ---- */
static kiln_status eval_scatter_nd(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *idx, *u;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &idx));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &u));
  red_kind r;
  KILN_TRY(reduction_of(ctx, x->dtype, &r));
  nd_geom g;
  if (x->rank < 1) return kiln_eval_error(ctx, KILN_ERR_INVALID, "data must have rank >= 1");
  KILN_TRY(nd_geometry(ctx, x, idx, 0, &g));
  /* updates shape: indices.shape[:-1] + data.shape[m:] */
  int k = 0;
  bool ok = u->dtype == x->dtype && u->rank == idx->rank - 1 + x->rank - g.m;
  for (int d = 0; ok && d < idx->rank - 1; d++) ok = u->dims[k++] == idx->dims[d];
  for (int d = g.m; ok && d < x->rank; d++) ok = u->dims[k++] == x->dims[d];
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "updates must have shape indices.shape[:-1] + data.shape[%d:]", g.m);
  kiln_tensor *o;
  KILN_TRY(copy_data(ctx, x, &o));
  for (int64_t t = 0; t < g.tuples; t++) {
    int64_t off;
    KILN_TRY(nd_offset(ctx, x, idx, &g, 0, t, &off));
    if (r == RED_NONE) kiln_shape_copy(o, off, u, t * g.inner, g.inner);
    else
      for (int64_t e = 0; e < g.inner; e++) red_apply(r, o, off + e, u, t * g.inner + e);
  }
  return KILN_OK;
}

/* ---- TensorScatter: writes update into the cache at write_indices[batch]
 * along axis ---- */
static kiln_status eval_tensor_scatter(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *u, *w = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &u));
  int64_t axis;
  const char *mode;
  KILN_TRY(kiln_node_int(ctx->node, "axis", -2, &axis));
  KILN_TRY(kiln_node_string(ctx->node, "mode", "linear", &mode));
  bool circular = !strcmp(mode, "circular");
  if (!circular && strcmp(mode, "linear"))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown mode '%s'", mode);
  int a;
  KILN_TRY(kiln_norm_axis(ctx, axis, x->rank, &a));
  if (a == 0 || x->rank < 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis must not be the batch axis");
  bool ok = u->dtype == x->dtype && u->rank == x->rank && u->dims[a] <= x->dims[a];
  for (int d = 0; ok && d < x->rank; d++) ok = d == a || u->dims[d] == x->dims[d];
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "update must match past_cache except for a shorter sequence axis");
  int64_t B = x->dims[0];
  if (w && (!kiln_dtype_is_int(w->dtype) || w->numel != B))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "write_indices must hold %lld integers",
                           (long long)B);
  kiln_tensor *o;
  KILN_TRY(copy_data(ctx, x, &o));
  int64_t outer = prod(x->dims, 0, a), per_batch = outer / (B ? B : 1);
  int64_t inner = prod(x->dims, a + 1, x->rank), S = u->dims[a], M = x->dims[a];
  for (int64_t p = 0; p < outer; p++) {
    int64_t wi = w ? kiln_load_i64(w->dtype, w->data, (size_t)(p / per_batch)) : 0;
    for (int64_t s = 0; s < S; s++) {
      int64_t pos = wi + s;
      if (circular && M > 0) pos = ((pos % M) + M) % M;
      if (pos < 0 || pos >= M)
        return kiln_eval_error(ctx, KILN_ERR_INVALID,
                               "write position %lld is out of the cache (length %lld)",
                               (long long)pos, (long long)M);
      kiln_shape_copy(o, (p * M + pos) * inner, u, (p * S + s) * inner, inner);
    }
  }
  return KILN_OK;
}

void kiln_shape_register_index(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_Gather, eval_gather, infer_gather, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_GatherElements, eval_gather_elements, infer_gather_elements, 2, 2, 1,
                 1);
  kiln_shape_set(t, KILN_OP_GatherND, eval_gather_nd, infer_gather_nd, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Scatter, eval_scatter_elements, kiln_shape_infer_same, 3, 3, 1, 1);
  kiln_shape_set(t, KILN_OP_ScatterElements, eval_scatter_elements, kiln_shape_infer_same, 3, 3, 1,
                 1);
  kiln_shape_set(t, KILN_OP_ScatterND, eval_scatter_nd, kiln_shape_infer_same, 3, 3, 1, 1);
  kiln_shape_set(t, KILN_OP_TensorScatter, eval_tensor_scatter, kiln_shape_infer_same, 2, 3, 1, 1);
}
