/* Ops that give a new view of the same elements: Reshape, Flatten, Squeeze,
 * Unsqueeze, Transpose, Shape, Size, Expand, Tile, DepthToSpace, SpaceToDepth.
 */
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

static void dims_of(const kiln_tensor *t, kiln_dim *out) {
  for (int i = 0; i < t->rank; i++) out[i] = kiln_shape_dim(t->dims[i]);
}

static kiln_status dims_known(const kiln_eval_ctx *ctx, int rank, const kiln_dim *d, int64_t *out) {
  for (int i = 0; i < rank; i++) {
    if (d[i].value < 0)
      return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "output dimension %d is unknown", i);
    out[i] = d[i].value;
  }
  return KILN_OK;
}

/* ---- Reshape ----
 * Reshape-1 takes the target shape as an attribute, Reshape-5+ as an input. A 0
 * copies the input dimension at the same position (a literal 0 with
 * allowzero=1, opset 14+); one -1 is inferred from the element count. */

/* For inference with unknown dims: the -1 can still be computed when the
 * unknown dims on both sides match (by position for copied dims, by symbol
 * otherwise). Returns false when they do not; *left is the one unknown input
 * dim left unmatched when a -1 may stand for it (-1 when none is left). */
static bool cancel_unknowns(int in_rank, const kiln_dim *in, int k, const kiln_dim *out,
                            const bool *copied, int neg, int *left) {
  bool used[KILN_MAX_RANK] = {false};
  for (int i = 0; i < k; i++) {
    if (i == neg || out[i].value >= 0) continue;
    if (copied[i] && i < in_rank) {
      used[i] = true;
      continue;
    }
    int j = 0;
    while (j < in_rank && (used[j] || in[j].value >= 0 || !in[j].sym || !out[i].sym ||
                           strcmp(in[j].sym, out[i].sym)))
      j++;
    if (j == in_rank) return false;
    used[j] = true;
  }
  *left = -1;
  for (int j = 0; j < in_rank; j++) {
    if (in[j].value >= 0 || used[j]) continue;
    if (*left >= 0 || neg < 0) return false;
    *left = j;
  }
  return true;
}

static kiln_status known_prod(const kiln_node *n, int rank, const kiln_dim *d, int skip,
                              int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < rank; i++)
    if (i != skip && d[i].value >= 0 && kiln_mul_overflow_i64(p, d[i].value, &p))
      return kiln_shape_err(n, "the element count overflows");
  *out = p;
  return KILN_OK;
}

static kiln_status reshape_dims(const kiln_node *n, int in_rank, const kiln_dim *in,
                                const int64_t *shape, int k, bool allowzero, kiln_dim *out) {
  if (k > KILN_MAX_RANK)
    return kiln_unsupported("Reshape to rank %d: at most %d is supported", k, KILN_MAX_RANK);
  int neg = -1;
  bool copied[KILN_MAX_RANK] = {false}, has_zero = false;
  for (int i = 0; i < k; i++) {
    int64_t s = shape[i];
    out[i] = kiln_shape_dim(s);
    if (s == 0 && !allowzero) {
      if (in_rank >= 0 && i >= in_rank)
        return kiln_shape_err(n, "shape[%d] is 0 but the input has rank %d", i, in_rank);
      out[i] = in_rank >= 0 ? in[i] : kiln_shape_dim(-1);
      copied[i] = true;
    } else if (s == -1) {
      if (neg >= 0) return kiln_shape_err(n, "the shape has more than one -1");
      neg = i;
    } else if (s < 0) {
      return kiln_shape_err(n, "shape[%d] = %lld is invalid", i, (long long)s);
    }
    has_zero |= s == 0;
  }
  if (neg >= 0 && allowzero && has_zero)
    return kiln_shape_err(n, "the shape has both 0 and -1 with allowzero=1");
  if (in_rank < 0) return KILN_OK;
  int64_t pin, pout;
  KILN_TRY(known_prod(n, in_rank, in, -1, &pin));
  KILN_TRY(known_prod(n, k, out, neg, &pout));
  int left;
  if (!cancel_unknowns(in_rank, in, k, out, copied, neg, &left)) return KILN_OK;
  if (left >= 0) { /* one unknown input dim is left over: -1 is it when the rest
                      match */
    if (pin == pout) out[neg] = in[left];
    return KILN_OK;
  }
  if (neg >= 0) {
    if (pout == 0 || pin % pout)
      return kiln_shape_err(n, "cannot infer -1: %lld elements into groups of %lld", (long long)pin,
                            (long long)pout);
    out[neg] = kiln_shape_dim(pin / pout);
  } else if (pin != pout) {
    return kiln_shape_err(n, "cannot reshape %lld elements into %lld", (long long)pin,
                          (long long)pout);
  }
  return KILN_OK;
}

static kiln_status reshape_allowzero(const kiln_node *n, bool *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  *out = da.allowzero; /* from opset 14 */
  return KILN_OK;
}

static kiln_status eval_reshape(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *st;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  bool allowzero;
  KILN_TRY(reshape_allowzero(ctx->node, &allowzero));
  const int64_t *shape;
  int64_t *tmp = NULL;
  int k;
  if (ctx->node->opset < 5) {
    KILN_TRY(kiln_node_ints(ctx->node, "shape", &shape, &k));
    if (k < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute 'shape' is missing");
  } else {
    KILN_TRY(kiln_eval_in_req(ctx, 1, &st));
    KILN_TRY(kiln_shape_load_ints(ctx, st, "shape", &tmp, &k));
    shape = tmp;
  }
  kiln_dim in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  int64_t dims[KILN_MAX_RANK];
  dims_of(x, in);
  kiln_status s = reshape_dims(ctx->node, x->rank, in, shape, k, allowzero, out);
  free(tmp);
  KILN_TRY(s);
  KILN_TRY(dims_known(ctx, k, out, dims));
  return kiln_shape_reshaped(ctx, 0, x, k, dims);
}

static kiln_status infer_reshape(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  bool allowzero;
  KILN_TRY(reshape_allowzero(ctx->node, &allowzero));
  int64_t buf[KILN_MAX_RANK + 1];
  const int64_t *shape = buf;
  int k;
  if (ctx->node->opset < 5) {
    KILN_TRY(kiln_node_ints(ctx->node, "shape", &shape, &k));
    if (k < 0) return KILN_OK;
  } else if (!kiln_shape_const_ints(ctx, 1, buf, KILN_MAX_RANK + 1, &k)) {
    const kiln_type *s = kiln_shape_in_type(ctx, 1);
    int r = s && s->rank == 1 ? (int)s->dims[0].value : -1;
    kiln_shape_out_type(ctx, 0, x->dtype, r, NULL);
    return KILN_OK;
  }
  kiln_dim out[KILN_MAX_RANK];
  KILN_TRY(reshape_dims(ctx->node, x->rank, x->dims, shape, k, allowzero, out));
  kiln_shape_out_type(ctx, 0, x->dtype, k, out);
  return KILN_OK;
}

/* ---- Flatten: [d0..d(a-1)] x [da..] -> 2-D ---- */
static kiln_status flatten_axis(const kiln_node *n, int rank, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  int64_t axis = da.axis;
  if (axis < -rank || axis > rank)
    return kiln_shape_err(n, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return KILN_OK;
}

static kiln_status eval_flatten(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int a;
  KILN_TRY(flatten_axis(ctx->node, x->rank, &a));
  kiln_dim in[KILN_MAX_RANK];
  dims_of(x, in);
  int64_t dims[2] = {kiln_shape_dim_prod(in, 0, a).value,
                     kiln_shape_dim_prod(in, a, x->rank).value};
  return kiln_shape_reshaped(ctx, 0, x, 2, dims);
}

static kiln_status infer_flatten(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  if (x->rank < 0) {
    kiln_shape_out_type(ctx, 0, x->dtype, 2, NULL);
    return KILN_OK;
  }
  int a;
  KILN_TRY(flatten_axis(ctx->node, x->rank, &a));
  kiln_dim d[2] = {kiln_shape_dim_prod(x->dims, 0, a), kiln_shape_dim_prod(x->dims, a, x->rank)};
  kiln_shape_out_type(ctx, 0, x->dtype, 2, d);
  return KILN_OK;
}

/* ---- Squeeze / Unsqueeze: axes as an attribute before opset 13, an input from
 * then on ---- */

/* Reads the axes list; *n = -1 when absent. *known false when the input exists
 * but its value is not known (inference). */
static kiln_status axes_of(const kiln_node *n, const kiln_tensor *t, int64_t *buf, int *out_n) {
  *out_n = -1;
  if (n->opset < 13) {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, "axes", &a, out_n));
    if (*out_n > KILN_MAX_RANK * 2) return kiln_shape_err(n, "too many axes (%d)", *out_n);
    if (*out_n > 0) memcpy(buf, a, (size_t)*out_n * sizeof *a);
    return KILN_OK;
  }
  if (!t) return KILN_OK;
  if (!kiln_dtype_is_int(t->dtype) || t->rank > 1 || t->numel > KILN_MAX_RANK * 2)
    return kiln_shape_err(n, "axes must be a short 1-D integer tensor");
  for (int64_t i = 0; i < t->numel; i++) buf[i] = kiln_load_i64(t->dtype, t->data, (size_t)i);
  *out_n = (int)t->numel;
  return KILN_OK;
}

static kiln_status norm_axes_node(const kiln_node *n, const int64_t *axes, int k, int rank,
                                  bool *mask) {
  memset(mask, 0, KILN_MAX_RANK * sizeof *mask);
  for (int i = 0; i < k; i++) {
    if (axes[i] < -rank || axes[i] >= rank)
      return kiln_shape_err(n, "axis %lld is out of range for rank %d", (long long)axes[i], rank);
    int a = (int)(axes[i] < 0 ? axes[i] + rank : axes[i]);
    if (mask[a]) return kiln_shape_err(n, "axis %lld is repeated", (long long)axes[i]);
    mask[a] = true;
  }
  return KILN_OK;
}

/* Squeezed dims; axes NULL/k<0: every dim known to be 1 (error-free: unknown
 * dims stay). */
static kiln_status squeeze_dims(const kiln_node *n, int rank, const kiln_dim *in,
                                const int64_t *axes, int k, int *out_rank, kiln_dim *out) {
  bool mask[KILN_MAX_RANK];
  if (k >= 0) {
    KILN_TRY(norm_axes_node(n, axes, k, rank, mask));
  } else {
    for (int i = 0; i < rank; i++) mask[i] = in[i].value == 1;
  }
  int r = 0;
  for (int i = 0; i < rank; i++) {
    if (!mask[i]) out[r++] = in[i];
    else if (in[i].value >= 0 && in[i].value != 1)
      return kiln_shape_err(n, "cannot squeeze axis %d of extent %lld", i, (long long)in[i].value);
  }
  *out_rank = r;
  return KILN_OK;
}

static kiln_status eval_squeeze(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t axes[KILN_MAX_RANK * 2], dims[KILN_MAX_RANK];
  int k, r;
  KILN_TRY(axes_of(ctx->node, kiln_eval_in(ctx, 1), axes, &k));
  kiln_dim in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  dims_of(x, in);
  KILN_TRY(squeeze_dims(ctx->node, x->rank, in, axes, k, &r, out));
  KILN_TRY(dims_known(ctx, r, out, dims));
  return kiln_shape_reshaped(ctx, 0, x, r, dims);
}

static kiln_status infer_squeeze(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  int64_t axes[KILN_MAX_RANK * 2];
  int k = -1, r;
  const kiln_tensor *at = ctx->n_in > 1 ? ctx->cin[1] : NULL;
  bool has_input = ctx->n_in > 1 && ctx->in[1];
  if (x->rank < 0 || (ctx->node->opset >= 13 && has_input && !at)) {
    kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
    return KILN_OK;
  }
  KILN_TRY(axes_of(ctx->node, at, axes, &k));
  for (int i = 0; k < 0 && i < x->rank; i++) {
    if (x->dims[i].value < 0) { /* which dims are 1 is not known */
      kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
      return KILN_OK;
    }
  }
  kiln_dim out[KILN_MAX_RANK];
  KILN_TRY(squeeze_dims(ctx->node, x->rank, x->dims, axes, k, &r, out));
  kiln_shape_out_type(ctx, 0, x->dtype, r, out);
  return KILN_OK;
}

static kiln_status unsqueeze_dims(const kiln_node *n, int rank, const kiln_dim *in,
                                  const int64_t *axes, int k, int *out_rank, kiln_dim *out) {
  if (k < 0) return kiln_shape_err(n, "axes are missing");
  int r = rank + k;
  if (r > KILN_MAX_RANK)
    return kiln_unsupported("Unsqueeze to rank %d: at most %d is supported", r, KILN_MAX_RANK);
  bool mask[KILN_MAX_RANK];
  KILN_TRY(norm_axes_node(n, axes, k, r, mask));
  for (int i = 0, j = 0; i < r; i++) out[i] = mask[i] ? kiln_shape_dim(1) : in[j++];
  *out_rank = r;
  return KILN_OK;
}

static kiln_status eval_unsqueeze(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t axes[KILN_MAX_RANK * 2], dims[KILN_MAX_RANK];
  int k, r;
  KILN_TRY(axes_of(ctx->node, kiln_eval_in(ctx, 1), axes, &k));
  kiln_dim in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  dims_of(x, in);
  KILN_TRY(unsqueeze_dims(ctx->node, x->rank, in, axes, k, &r, out));
  KILN_TRY(dims_known(ctx, r, out, dims));
  return kiln_shape_reshaped(ctx, 0, x, r, dims);
}

static kiln_status infer_unsqueeze(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  int64_t axes[KILN_MAX_RANK * 2];
  int k = -1, r;
  const kiln_tensor *at = ctx->n_in > 1 ? ctx->cin[1] : NULL;
  if (ctx->node->opset >= 13 && !at) {
    const kiln_type *a = kiln_shape_in_type(ctx, 1);
    bool known = x->rank >= 0 && a && a->rank == 1 && a->dims[0].value >= 0;
    kiln_shape_out_type(ctx, 0, x->dtype, known ? x->rank + (int)a->dims[0].value : -1, NULL);
    return KILN_OK;
  }
  KILN_TRY(axes_of(ctx->node, at, axes, &k));
  if (x->rank < 0 || k < 0) return KILN_OK;
  kiln_dim out[KILN_MAX_RANK];
  KILN_TRY(unsqueeze_dims(ctx->node, x->rank, x->dims, axes, k, &r, out));
  kiln_shape_out_type(ctx, 0, x->dtype, r, out);
  return KILN_OK;
}

/* ---- Transpose ---- */
static kiln_status transpose_perm(const kiln_node *n, int rank, int *perm) {
  const int64_t *p;
  int k;
  KILN_TRY(kiln_node_ints(n, "perm", &p, &k));
  if (k < 0) {
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    return KILN_OK;
  }
  if (k != rank) return kiln_shape_err(n, "perm has %d entries for rank %d", k, rank);
  bool seen[KILN_MAX_RANK] = {false};
  for (int i = 0; i < k; i++) {
    int64_t a = p[i]; /* the spec gives no meaning to negative entries: rejected */
    if (a < 0 || a >= rank || seen[a])
      return kiln_shape_err(n, "perm is not a permutation of 0..%d", rank - 1);
    seen[a] = true;
    perm[i] = (int)a;
  }
  return KILN_OK;
}

static kiln_status eval_transpose(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int perm[KILN_MAX_RANK];
  KILN_TRY(transpose_perm(ctx->node, x->rank, perm));
  int64_t st[KILN_MAX_RANK], dims[KILN_MAX_RANK], vst[KILN_MAX_RANK];
  kiln_strides(x->rank, x->dims, st);
  for (int i = 0; i < x->rank; i++) {
    dims[i] = x->dims[perm[i]];
    vst[i] = st[perm[i]];
  }
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &o));
  kiln_shape_copy_view(o, x->rank, dims, x, 0, vst);
  return KILN_OK;
}

static kiln_status infer_transpose(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  if (x->rank < 0) {
    kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
    return KILN_OK;
  }
  int perm[KILN_MAX_RANK];
  KILN_TRY(transpose_perm(ctx->node, x->rank, perm));
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < x->rank; i++) d[i] = x->dims[perm[i]];
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, d);
  return KILN_OK;
}

/* ---- Shape (start/end from opset 15, clamped) and Size ---- */
static kiln_status shape_range(const kiln_node *n, int rank, int *lo, int *hi) {
  int64_t s, e;
  KILN_TRY(kiln_node_int(n, "start", 0, &s));
  KILN_TRY(kiln_node_int(n, "end", INT64_MAX, &e));
  if (s < 0) s += rank;
  if (e < 0) e += rank;
  s = s < 0 ? 0 : s > rank ? rank : s;
  e = e < 0 ? 0 : e > rank ? rank : e;
  *lo = (int)s;
  *hi = (int)(e < s ? s : e);
  return KILN_OK;
}

static kiln_status eval_shape(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int lo, hi;
  KILN_TRY(shape_range(ctx->node, x->rank, &lo, &hi));
  int64_t n = hi - lo;
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_I64, 1, &n, &o));
  for (int i = lo; i < hi; i++) ((int64_t *)o->data)[i - lo] = x->dims[i];
  return KILN_OK;
}

static kiln_status infer_shape(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  int lo = 0, hi = -1;
  if (x && x->rank >= 0) KILN_TRY(shape_range(ctx->node, x->rank, &lo, &hi));
  kiln_dim d = kiln_shape_dim(hi - lo);
  kiln_shape_out_type(ctx, 0, KILN_I64, 1, hi >= 0 ? &d : NULL);
  return KILN_OK;
}

static kiln_status eval_size(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_I64, 0, NULL, &o));
  *(int64_t *)o->data = x->numel;
  return KILN_OK;
}

static kiln_status infer_size(kiln_infer_ctx *ctx) {
  kiln_shape_out_type(ctx, 0, KILN_I64, 0, NULL);
  return KILN_OK;
}

/* ---- Expand: bidirectional broadcast of the input with the given shape ----
 */
static kiln_status expand_dims(const kiln_node *n, int rank, const kiln_dim *in,
                               const int64_t *shape, int k, int *out_rank, kiln_dim *out) {
  int r = rank > k ? rank : k;
  if (r > KILN_MAX_RANK)
    return kiln_unsupported("Expand to rank %d: at most %d is supported", r, KILN_MAX_RANK);
  for (int i = 0; i < r; i++) {
    int a = i - (r - rank), b = i - (r - k);
    kiln_dim d = a >= 0 ? in[a] : kiln_shape_dim(1);
    int64_t s = b >= 0 ? shape[b] : 1;
    if (s < 0) return kiln_shape_err(n, "shape[%d] = %lld is negative", b, (long long)s);
    if (s == 1) out[i] = d;
    else if (d.value >= 0 && d.value != 1 && d.value != s)
      return kiln_shape_err(n, "cannot expand dimension %d of extent %lld to %lld", i,
                            (long long)d.value, (long long)s);
    else out[i] = kiln_shape_dim(s);
  }
  *out_rank = r;
  return KILN_OK;
}

static kiln_status eval_expand(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *st;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &st));
  int64_t *shape, dims[KILN_MAX_RANK], strides[KILN_MAX_RANK];
  int k, r;
  KILN_TRY(kiln_shape_load_ints(ctx, st, "shape", &shape, &k));
  kiln_dim in[KILN_MAX_RANK], out[KILN_MAX_RANK];
  dims_of(x, in);
  kiln_status s = expand_dims(ctx->node, x->rank, in, shape, k, &r, out);
  free(shape);
  KILN_TRY(s);
  KILN_TRY(dims_known(ctx, r, out, dims));
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, r, dims, &o));
  kiln_broadcast_strides(x, r, dims, strides);
  kiln_shape_copy_view(o, r, dims, x, 0, strides);
  return KILN_OK;
}

static kiln_status infer_expand(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  int64_t shape[KILN_MAX_RANK + 1];
  int k, r;
  if (x->rank < 0 || !kiln_shape_const_ints(ctx, 1, shape, KILN_MAX_RANK + 1, &k)) {
    kiln_shape_out_type(ctx, 0, x->dtype, -1, NULL);
    return KILN_OK;
  }
  kiln_dim out[KILN_MAX_RANK];
  KILN_TRY(expand_dims(ctx->node, x->rank, x->dims, shape, k, &r, out));
  kiln_shape_out_type(ctx, 0, x->dtype, r, out);
  return KILN_OK;
}

/* ---- Tile: Tile-6+ takes repeats per axis; Tile-1 takes (tiles, axis) scalars
 * ---- */
static kiln_status tile_repeats(kiln_eval_ctx *ctx, const kiln_tensor *x, int64_t *rep) {
  for (int i = 0; i < x->rank; i++) rep[i] = 1;
  const kiln_tensor *r;
  KILN_TRY(kiln_eval_in_req(ctx, 1, &r));
  if (ctx->node->opset < 6) {
    const kiln_tensor *at;
    int64_t tiles, axis;
    int a;
    KILN_TRY(kiln_eval_in_req(ctx, 2, &at));
    KILN_TRY(kiln_shape_scalar_i64(ctx, r, "tiles", &tiles));
    KILN_TRY(kiln_shape_scalar_i64(ctx, at, "axis", &axis));
    KILN_TRY(kiln_norm_axis(ctx, axis, x->rank, &a));
    rep[a] = tiles;
  } else {
    int64_t *v;
    int k;
    KILN_TRY(kiln_shape_load_ints(ctx, r, "repeats", &v, &k));
    if (k == x->rank) memcpy(rep, v, (size_t)k * sizeof *v);
    free(v);
    if (k != x->rank)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "repeats has %d entries for rank %d", k,
                             x->rank);
  }
  for (int i = 0; i < x->rank; i++)
    if (rep[i] < 0)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "repeat count %lld is negative",
                             (long long)rep[i]);
  return KILN_OK;
}

static kiln_status eval_tile(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t rep[KILN_MAX_RANK], dims[KILN_MAX_RANK], st[KILN_MAX_RANK];
  KILN_TRY(tile_repeats(ctx, x, rep));
  for (int i = 0; i < x->rank; i++)
    if (kiln_mul_overflow_i64(x->dims[i], rep[i], &dims[i]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "output extent overflows");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &o));
  /* view [rep0, d0, rep1, d1, ...] with strides [0, s0, 0, s1, ...] */
  int64_t vd[KILN_MAX_RANK * 2], vs[KILN_MAX_RANK * 2];
  kiln_strides(x->rank, x->dims, st);
  for (int i = 0; i < x->rank; i++) {
    vd[2 * i] = rep[i];
    vd[2 * i + 1] = x->dims[i];
    vs[2 * i] = 0;
    vs[2 * i + 1] = st[i];
  }
  kiln_shape_copy_view(o, 2 * x->rank, vd, x, 0, vs);
  return KILN_OK;
}

static kiln_status infer_tile(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  int64_t rep[KILN_MAX_RANK];
  int k;
  if (x->rank < 0 || ctx->node->opset < 6 ||
      !kiln_shape_const_ints(ctx, 1, rep, KILN_MAX_RANK, &k) || k != x->rank) {
    kiln_shape_out_type(ctx, 0, x->dtype, ctx->node->opset < 6 ? -1 : x->rank, NULL);
    return KILN_OK;
  }
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < k; i++) {
    d[i] = rep[i] == 1 ? x->dims[i] : kiln_shape_dim(-1);
    if (x->dims[i].value >= 0 && rep[i] >= 0 &&
        kiln_mul_overflow_i64(x->dims[i].value, rep[i], &d[i].value)) {
      char lb[200];
      return kiln_invalid("%s: output extent %lld x %lld (dim %d) overflows",
                          kiln_node_label(ctx->node, lb, sizeof lb), (long long)x->dims[i].value,
                          (long long)rep[i], i);
    }
  }
  kiln_shape_out_type(ctx, 0, x->dtype, k, d);
  return KILN_OK;
}

/* ---- DepthToSpace / SpaceToDepth on [N, C, H, W] ---- */
static kiln_status block_size(const kiln_node *n, int64_t *b) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  *b = da.blocksize;
  if (*b <= 0 || *b > (1 << 20)) return kiln_shape_err(n, "blocksize must be positive");
  return KILN_OK;
}

static kiln_status d2s_crd(const kiln_node *n, bool *crd) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  *crd = da.crd;
  return KILN_OK;
}

static kiln_status eval_depth_to_space(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t b;
  bool crd;
  KILN_TRY(block_size(ctx->node, &b));
  KILN_TRY(d2s_crd(ctx->node, &crd));
  if (x->rank != 4 || x->dims[1] % (b * b))
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "input must be 4-D with channels divisible by blocksize^2");
  int64_t N = x->dims[0], C = x->dims[1] / (b * b), H = x->dims[2], W = x->dims[3];
  int64_t dims[4] = {N, C, 0, 0}, HW = H * W;
  if (kiln_mul_overflow_i64(H, b, &dims[2]) || kiln_mul_overflow_i64(W, b, &dims[3]))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output extent overflows");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, 4, dims, &o));
  /* view [N, C, H, b1, W, b2] of the input channel c*b*b + b1*b + b2 (CRD) or
   * b1*b*C + b2*C + c (DCR) */
  int64_t vd[6] = {N, C, H, b, W, b};
  int64_t vs[6] = {x->dims[1] * HW,  crd ? b * b * HW : HW, W, crd ? b * HW : b * C * HW, 1,
                   crd ? HW : C * HW};
  kiln_shape_copy_view(o, 6, vd, x, 0, vs);
  return KILN_OK;
}

static kiln_status eval_space_to_depth(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t b;
  KILN_TRY(block_size(ctx->node, &b));
  if (x->rank != 4 || x->dims[2] % b || x->dims[3] % b)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "input must be 4-D with height and width divisible by blocksize");
  int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
  int64_t dims[4] = {N, 0, H / b, W / b};
  if (kiln_mul_overflow_i64(C, b * b, &dims[1]))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output extent overflows");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, 4, dims, &o));
  /* output channel b1*b*C + b2*C + c reads input (c, h*b + b1, w*b + b2) */
  int64_t vd[6] = {N, b, b, C, H / b, W / b};
  int64_t vs[6] = {C * H * W, W, 1, H * W, b * W, b};
  kiln_shape_copy_view(o, 6, vd, x, 0, vs);
  return KILN_OK;
}

static kiln_status infer_d2s(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  int64_t b;
  KILN_TRY(block_size(ctx->node, &b));
  kiln_dim d[4];
  if (x->rank != 4) {
    kiln_shape_out_type(ctx, 0, x->dtype, 4, NULL);
    return KILN_OK;
  }
  bool d2s = ctx->node->op == KILN_OP_DepthToSpace;
  for (int i = 0; i < 4; i++) d[i] = x->dims[i];
  for (int i = 1; i < 4; i++) {
    int64_t v = x->dims[i].value;
    bool down = (i == 1) == d2s; /* the dim that shrinks */
    int64_t f = i == 1 ? b * b : b;
    if (v < 0) d[i] = kiln_shape_dim(-1);
    else if (down) d[i].value = v / f;
    else if (kiln_mul_overflow_i64(v, f, &d[i].value)) d[i].value = -1;
  }
  kiln_shape_out_type(ctx, 0, x->dtype, 4, d);
  return KILN_OK;
}

void kiln_shape_register_view(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_Reshape, eval_reshape, infer_reshape, 1, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Flatten, eval_flatten, infer_flatten, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Squeeze, eval_squeeze, infer_squeeze, 1, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Unsqueeze, eval_unsqueeze, infer_unsqueeze, 1, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Transpose, eval_transpose, infer_transpose, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Shape, eval_shape, infer_shape, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Size, eval_size, infer_size, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Expand, eval_expand, infer_expand, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_Tile, eval_tile, infer_tile, 2, 3, 1, 1);
  kiln_shape_set(t, KILN_OP_DepthToSpace, eval_depth_to_space, infer_d2s, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_SpaceToDepth, eval_space_to_depth, infer_d2s, 1, 1, 1, 1);
}
