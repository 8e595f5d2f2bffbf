/* Ops of the 'shape' family (see src/graph/ops.def): this file registers them
 * all and holds the helpers they share (shape_internal.h). The ops live in:
 *   shape_view.c    Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Shape,
 * Size, Expand, Tile, DepthToSpace, SpaceToDepth shape_slice.c   Concat, Split,
 * Slice, Pad, CenterCropPad, ReverseSequence, Trilu shape_index.c   Gather,
 * GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter
 *   shape_gen.c     Constant, ConstantOfShape, EyeLike, Range, OneHot
 *   shape_select.c  NonZero, Compress, Unique
 *   shape_resize.c  Resize, Upsample
 *   shape_grid.c    GridSample, AffineGrid */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape_internal.h"

void kiln_ops_register_shape(kiln_op_impl *table) {
  kiln_shape_register_view(table);
  kiln_shape_register_slice(table);
  kiln_shape_register_index(table);
  kiln_shape_register_gen(table);
  kiln_shape_register_select(table);
  kiln_shape_register_resize(table);
  kiln_shape_register_grid(table);
}

/* The infer functions of the family, called through shape_infer. */
static kiln_infer_fn infer_fns[KILN_OP_COUNT];

/* Inside a subgraph (an If branch, a Loop body), a node may see shapes for
 * which it is invalid without being wrong: the branch that is not taken. There
 * an inconsistency leaves the outputs unknown, and the kernel reports it if the
 * node ever runs. In the main graph every node runs, so it is an error of the
 * model. */
static kiln_status shape_infer(kiln_infer_ctx *ctx) {
  kiln_status st = infer_fns[ctx->node->op](ctx);
  if (st && ctx->graph->parent && kiln_status_code(st) == KILN_ERR_INVALID) {
    kiln_status_free(st);
    for (int i = 0; i < ctx->n_out; i++) ctx->out[i] = kiln_type_unknown();
    return KILN_OK;
  }
  return st;
}

void kiln_shape_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, kiln_infer_fn infer,
                    int min_in, int max_in, int min_out, int max_out) {
  table[op].eval = eval;
  infer_fns[op] = infer;
  table[op].infer = infer ? shape_infer : NULL;
  table[op].min_in = min_in;
  table[op].max_in = max_in;
  table[op].min_out = min_out;
  table[op].max_out = max_out;
}

/* ---- element movement ---- */
void kiln_shape_copy(kiln_tensor *dst, int64_t di, const kiln_tensor *src, int64_t si, int64_t n) {
  if (n <= 0) return;
  if (dst->dtype == KILN_STRING) {
    char **d = dst->data;
    char *const *s = src->data;
    for (int64_t k = 0; k < n; k++) {
      char *c = kiln_xstrdup(s[si + k] ? s[si + k] : "");
      free(d[di + k]);
      d[di + k] = c;
    }
    return;
  }
  size_t es = kiln_dtype_size(dst->dtype);
  memcpy((char *)dst->data + (size_t)di * es, (const char *)src->data + (size_t)si * es,
         (size_t)n * es);
}

#define GATHER_LOOP(T)                                                                             \
  do {                                                                                             \
    T *d = out->data;                                                                              \
    const T *s = src->data;                                                                        \
    for (int64_t i = 0; i < out->numel; i++)                                                       \
      if (map[i] >= 0) d[i] = s[map[i]];                                                           \
  } while (0)

void kiln_shape_gather(kiln_tensor *out, const kiln_tensor *src, const int64_t *map) {
  if (out->dtype == KILN_STRING) {
    for (int64_t i = 0; i < out->numel; i++)
      if (map[i] >= 0) kiln_shape_copy(out, i, src, map[i], 1);
    return;
  }
  switch (kiln_dtype_size(out->dtype)) {
  case 1: GATHER_LOOP(uint8_t); break;
  case 2: GATHER_LOOP(uint16_t); break;
  case 4: GATHER_LOOP(uint32_t); break;
  case 8: GATHER_LOOP(uint64_t); break;
  default:
    for (int64_t i = 0; i < out->numel; i++)
      if (map[i] >= 0) kiln_shape_copy(out, i, src, map[i], 1);
  }
}

/* Copies the innermost row of a view: n elements from src offset s with stride
 * st. */
static void copy_row(kiln_tensor *out, int64_t o, const kiln_tensor *src, int64_t s, int64_t st,
                     int64_t n) {
  if (st == 1 || n == 1) {
    kiln_shape_copy(out, o, src, s, n);
    return;
  }
  size_t es = kiln_dtype_size(out->dtype);
  if (out->dtype == KILN_STRING) {
    for (int64_t k = 0; k < n; k++) kiln_shape_copy(out, o + k, src, s + k * st, 1);
    return;
  }
  char *d = (char *)out->data + (size_t)o * es;
  const char *b = src->data;
  for (int64_t k = 0; k < n; k++) memcpy(d + (size_t)k * es, b + (size_t)(s + k * st) * es, es);
}

void kiln_shape_copy_view(kiln_tensor *out, int rank, const int64_t *dims, const kiln_tensor *src,
                          int64_t base, const int64_t *strides) {
  if (out->numel == 0) return;
  if (rank == 0) {
    kiln_shape_copy(out, 0, src, base, 1);
    return;
  }
  int64_t idx[KILN_MAX_RANK * 2] = {0};
  int64_t inner = dims[rank - 1], ist = strides[rank - 1];
  int64_t off = base;
  for (int64_t o = 0; o < out->numel; o += inner) {
    copy_row(out, o, src, off, ist, inner);
    for (int d = rank - 2; d >= 0; d--) { /* odometer over the outer dims */
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

void kiln_shape_axis_maps(int rank, const int64_t *out_dims, int64_t *const *maps,
                          const int64_t *in_strides, int64_t numel, int64_t *out_map) {
  int64_t idx[KILN_MAX_RANK] = {0};
  for (int64_t i = 0; i < numel; i++) {
    int64_t off = 0;
    for (int d = 0; d < rank && off >= 0; d++) {
      int64_t m = maps[d][idx[d]];
      off = m < 0 ? -1 : off + m * in_strides[d];
    }
    out_map[i] = off;
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
}

void kiln_shape_fill(kiln_tensor *t, const kiln_tensor *v, int64_t vi) {
  if (t->numel == 0) return;
  kiln_shape_copy(t, 0, v, vi, 1);
  if (t->dtype == KILN_STRING) {
    for (int64_t i = 1; i < t->numel; i++) kiln_shape_copy(t, i, t, 0, 1);
    return;
  }
  size_t es = kiln_dtype_size(t->dtype);
  char *d = t->data;
  for (int64_t i = 1; i < t->numel; i++) memcpy(d + (size_t)i * es, d, es);
}

void kiln_shape_fix_strings(kiln_tensor *t) {
  if (t->dtype != KILN_STRING) return;
  char **s = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    if (!s[i]) s[i] = kiln_xstrdup("");
}

kiln_status kiln_shape_reshaped(const kiln_eval_ctx *ctx, int i, const kiln_tensor *t, int rank,
                                const int64_t *dims) {
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out((kiln_eval_ctx *)ctx, i, t->dtype, rank, dims, &o));
  if (o->numel != t->numel)
    return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "reshape changes the element count");
  kiln_shape_copy(o, 0, t, 0, t->numel);
  return KILN_OK;
}

/* ---- reading inputs ---- */
kiln_status kiln_shape_alloc(const kiln_eval_ctx *ctx, int64_t count, size_t elem, void **out) {
  *out = NULL;
  if (count < 0 || (uint64_t)count > SIZE_MAX / 2 / (elem ? elem : 1))
    return kiln_eval_error(ctx, KILN_ERR_OOM, "buffer of %lld elements is too large",
                           (long long)count);
  char lb[200];
  KILN_TRY(kiln_mem_check((int64_t)((size_t)count * elem), "%s: a scratch buffer of %lld elements",
                          kiln_node_label(ctx->node, lb, sizeof lb), (long long)count));
  *out = malloc(count ? (size_t)count * elem : 1);
  if (!*out) return kiln_eval_error(ctx, KILN_ERR_OOM, "out of memory");
  return KILN_OK;
}

kiln_status kiln_shape_load_ints(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what,
                                 int64_t **out, int *out_n) {
  *out = NULL;
  *out_n = 0;
  if (!kiln_dtype_is_int(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be an integer tensor, not %s", what,
                           kiln_dtype_name(t->dtype));
  if (t->rank > 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be 1-D, not of rank %d", what, t->rank);
  if (t->numel > (1 << 24))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s has too many elements (%lld)", what,
                           (long long)t->numel);
  int64_t *v = kiln_xcalloc((size_t)t->numel + 1, sizeof *v);
  for (int64_t i = 0; i < t->numel; i++) v[i] = kiln_load_i64(t->dtype, t->data, (size_t)i);
  *out = v;
  *out_n = (int)t->numel;
  return KILN_OK;
}

kiln_status kiln_shape_scalar_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what,
                                  int64_t *out) {
  if (t->numel != 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must hold one element, not %lld", what,
                           (long long)t->numel);
  kiln_dtype_class c = kiln_dtype_class_of(t->dtype);
  if (c == KILN_CLASS_NONE || c == KILN_CLASS_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be numeric", what);
  if (kiln_dtype_is_float(t->dtype)) {
    double v = kiln_load_f64(t->dtype, t->data, 0);
    if (!(v > -9.2e18 && v < 9.2e18))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s is out of range (%g)", what, v);
    *out = (int64_t)v;
  } else {
    *out = kiln_load_i64(t->dtype, t->data, 0);
  }
  return KILN_OK;
}

kiln_status kiln_shape_norm_axes(const kiln_eval_ctx *ctx, const int64_t *axes, int n, int rank,
                                 int *out) {
  bool seen[KILN_MAX_RANK] = {false};
  if (n > rank) return kiln_eval_error(ctx, KILN_ERR_INVALID, "%d axes given for rank %d", n, rank);
  for (int i = 0; i < n; i++) {
    if (axes[i] < -rank || axes[i] >= rank)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis %lld is out of range for rank %d",
                             (long long)axes[i], rank);
    int a = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (seen[a])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis %lld is repeated", (long long)axes[i]);
    seen[a] = true;
    out[i] = a;
  }
  return KILN_OK;
}

bool kiln_shape_want_out(const kiln_eval_ctx *ctx, int i) {
  return i < ctx->n_out && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

/* ---- inference helpers ---- */
const kiln_type *kiln_shape_in_type(const kiln_infer_ctx *ctx, int i) {
  if (i < 0 || i >= ctx->n_in || !ctx->in[i] || ctx->in[i]->kind != KILN_TYPE_TENSOR) return NULL;
  return ctx->in[i];
}

void kiln_shape_out_type(kiln_infer_ctx *ctx, int i, kiln_dtype dt, int rank,
                         const kiln_dim *dims) {
  if (i >= ctx->n_out) return;
  if (rank > KILN_MAX_RANK) rank = -1;
  kiln_type t = kiln_type_tensor(dt, rank, NULL);
  for (int d = 0; dims && d < rank; d++) t.dims[d] = dims[d];
  ctx->out[i] = t;
}

bool kiln_shape_const_ints(const kiln_infer_ctx *ctx, int i, int64_t *out, int max, int *out_n) {
  if (i < 0 || i >= ctx->n_in || !ctx->cin || !ctx->cin[i]) return false;
  const kiln_tensor *t = ctx->cin[i];
  if (!kiln_dtype_is_int(t->dtype) || t->rank > 1 || t->numel > max) return false;
  for (int64_t k = 0; k < t->numel; k++) out[k] = kiln_load_i64(t->dtype, t->data, (size_t)k);
  *out_n = (int)t->numel;
  return true;
}

kiln_dim kiln_shape_dim(int64_t v) {
  kiln_dim d = {v, NULL};
  return d;
}

kiln_dim kiln_shape_dim_prod(const kiln_dim *dims, int lo, int hi) {
  int64_t p = 1;
  int unknown = -1, n_unknown = 0;
  for (int i = lo; i < hi; i++) {
    if (dims[i].value < 0) {
      unknown = i;
      n_unknown++;
    } else if (kiln_mul_overflow_i64(p, dims[i].value, &p)) {
      return kiln_shape_dim(-1);
    }
  }
  if (n_unknown == 0) return kiln_shape_dim(p);
  if (n_unknown == 1 && p == 1) return dims[unknown];
  return p == 0 ? kiln_shape_dim(0) : kiln_shape_dim(-1);
}

kiln_status kiln_shape_err(const kiln_node *n, const char *fmt, ...) {
  char msg[400], lb[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_invalid("%s: %s", kiln_node_label(n, lb, sizeof lb), msg);
}

kiln_status kiln_shape_infer_same(kiln_infer_ctx *ctx) {
  const kiln_type *t = kiln_shape_in_type(ctx, 0);
  if (t) ctx->out[0] = *t;
  return KILN_OK;
}
