/* The broadcasting loop shared by all elementwise ops, and the eval function of
 * the ops that are a scalar function over it (attributes read here). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "ew_internal.h"

/* ---- broadcasting loop ---- */

kiln_status kiln_ew_bcast_begin(const kiln_eval_ctx *ctx, int n, const kiln_tensor *const *ts,
                                kiln_ew_bcast *b) {
  memset(b, 0, sizeof *b);
  kiln_status st = kiln_broadcast_shape(n, ts, &b->rank, b->dims);
  if (st) {
    char buf[160];
    return kiln_status_annotate(st, "%s", kiln_node_label(ctx->node, buf, sizeof buf));
  }
  KILN_TRY(kiln_shape_numel(b->rank, b->dims, &b->numel));
  b->n = n;
  b->strides = kiln_xcalloc((size_t)n * (size_t)(b->rank ? b->rank : 1), sizeof(int64_t));
  b->off = kiln_xcalloc((size_t)n, sizeof(int64_t));
  for (int k = 0; k < n; k++)
    kiln_broadcast_strides(ts[k], b->rank, b->dims, b->strides + (size_t)k * (size_t)b->rank);
  return KILN_OK;
}

void kiln_ew_bcast_next(kiln_ew_bcast *b) {
  for (int d = b->rank - 1; d >= 0; d--) {
    for (int k = 0; k < b->n; k++) b->off[k] += b->strides[k * b->rank + d];
    if (++b->idx[d] < b->dims[d]) return;
    for (int k = 0; k < b->n; k++) b->off[k] -= b->strides[k * b->rank + d] * b->dims[d];
    b->idx[d] = 0;
  }
}

void kiln_ew_bcast_end(kiln_ew_bcast *b) {
  free(b->strides);
  free(b->off);
  b->strides = b->off = NULL;
}

/* ---- the generic map ---- */

static bool has_class_fn(const kiln_ew_fns *fns, kiln_dtype_class cls) {
  switch (cls) {
  case KILN_CLASS_FLOAT: return fns->f != NULL;
  case KILN_CLASS_SINT: return fns->i != NULL;
  case KILN_CLASS_UINT: return fns->u != NULL;
  case KILN_CLASS_STRING: return fns->s != NULL;
  default: return false;
  }
}

/* Computes output element j from the current offsets of b. */
static void map_one(const kiln_ew_fns *fns, kiln_ew_params *p, const kiln_tensor *const *ts,
                    const kiln_ew_bcast *b, kiln_ew_arg *x, kiln_dtype_class cls, kiln_tensor *out,
                    int64_t j) {
  size_t jj = (size_t)j;
  for (int k = 0; k < b->n; k++) {
    size_t o = (size_t)b->off[k];
    switch (cls) {
    case KILN_CLASS_FLOAT: x[k].f = kiln_load_f64(ts[k]->dtype, ts[k]->data, o); break;
    case KILN_CLASS_SINT: x[k].i = kiln_load_i64(ts[k]->dtype, ts[k]->data, o); break;
    case KILN_CLASS_UINT: x[k].u = kiln_load_u64(ts[k]->dtype, ts[k]->data, o); break;
    default: {
      const char *s = ((char *const *)ts[k]->data)[o];
      x[k].s = s ? s : "";
    }
    }
  }
  switch (cls) {
  case KILN_CLASS_FLOAT: kiln_store_f64(out->dtype, out->data, jj, fns->f(x, p)); break;
  case KILN_CLASS_SINT: kiln_store_i64(out->dtype, out->data, jj, fns->i(x, p)); break;
  case KILN_CLASS_UINT: kiln_store_u64(out->dtype, out->data, jj, fns->u(x, p)); break;
  default: kiln_store_u64(out->dtype, out->data, jj, fns->s(x, p)); break;
  }
}

kiln_status kiln_ew_map(kiln_eval_ctx *ctx, const kiln_ew_fns *fns, kiln_ew_params *p, int n,
                        const kiln_tensor *const *ts, kiln_dtype_class cls, kiln_dtype out_dt) {
  if (!has_class_fn(fns, cls))
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "input type %s is not supported",
                           kiln_dtype_name(ts[0]->dtype));
  kiln_ew_bcast b;
  KILN_TRY(kiln_ew_bcast_begin(ctx, n, ts, &b));
  kiln_tensor *out;
  kiln_status st = kiln_eval_out(ctx, 0, out_dt, b.rank, b.dims, &out);
  if (st) {
    kiln_ew_bcast_end(&b);
    return st;
  }
  kiln_ew_arg *x = kiln_xcalloc((size_t)n, sizeof *x);
  p->n = n;
  for (int64_t j = 0; j < b.numel; j++) {
    map_one(fns, p, ts, &b, x, cls, out, j);
    kiln_ew_bcast_next(&b);
  }
  free(x);
  kiln_ew_bcast_end(&b);
  if (p->div_zero) return kiln_eval_error(ctx, KILN_ERR_INVALID, "integer division by zero");
  return KILN_OK;
}

/* ---- attributes ---- */

/* Reads the attributes of the node into p (kiln_attrs_ew_decode: the schema's defaults at the
 * node's opset). */
static kiln_status read_params(const kiln_eval_ctx *ctx, kiln_ew_params *p) {
  kiln_attrs_ew a;
  memset(p, 0, sizeof *p);
  KILN_TRY(kiln_attrs_ew_decode(ctx->node, &a));
  p->alpha = a.alpha;
  p->beta = a.beta;
  p->gamma = a.gamma;
  p->lambd = a.lambd;
  p->bias = a.bias;
  p->gelu_c = a.gelu_c;
  p->gelu_k = a.gelu_k;
  p->lo_f = a.min; /* Clip before opset 11 */
  p->hi_f = a.max;
  switch (ctx->node->op) {
  case KILN_OP_Mod: p->mode = a.fmod; break;
  case KILN_OP_BitShift: p->mode = a.shift_right; break;
  case KILN_OP_Gelu: p->mode = a.gelu == KILN_GELU_TANH; break;
  case KILN_OP_IsInf: p->mode = (a.detect_negative ? 1 : 0) | (a.detect_positive ? 2 : 0); break;
  default: break;
  }
  return KILN_OK;
}

/* ---- Clip bounds ---- */

/* Reads an optional scalar bound (input i of Clip-11+) in the class of x. */
static kiln_status clip_bound(const kiln_eval_ctx *ctx, int i, const kiln_tensor *x, double *f,
                              int64_t *s, uint64_t *u) {
  const kiln_tensor *t = kiln_eval_in(ctx, i);
  if (!t) return KILN_OK;
  if (t->numel != 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bound %s must be a scalar, has %lld elements",
                           i == 1 ? "min" : "max", (long long)t->numel);
  if (t->dtype != x->dtype)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bound type %s differs from input type %s",
                           kiln_dtype_name(t->dtype), kiln_dtype_name(x->dtype));
  *f = kiln_load_f64(t->dtype, t->data, 0);
  *s = kiln_load_i64(t->dtype, t->data, 0);
  *u = kiln_load_u64(t->dtype, t->data, 0);
  return KILN_OK;
}

static kiln_status clip_params(const kiln_eval_ctx *ctx, const kiln_tensor *x, kiln_ew_params *p) {
  p->lo_i = INT64_MIN;
  p->hi_i = INT64_MAX;
  p->lo_u = 0;
  p->hi_u = UINT64_MAX;
  if (ctx->node->opset < 11) return KILN_OK; /* Clip-1/6: float attributes, read_params */
  p->lo_f = -INFINITY;
  p->hi_f = INFINITY;
  KILN_TRY(clip_bound(ctx, 1, x, &p->lo_f, &p->lo_i, &p->lo_u));
  return clip_bound(ctx, 2, x, &p->hi_f, &p->hi_i, &p->hi_u);
}

/* ---- legacy broadcasting (opset < 7: attributes broadcast and axis) ---- */

kiln_status kiln_ew_legacy_bcast(const kiln_eval_ctx *ctx, const kiln_tensor *a,
                                 const kiln_tensor *b, kiln_tensor *view, bool *used) {
  *used = false;
  int64_t bc, axis;
  KILN_TRY(kiln_node_int(ctx->node, "broadcast", 0, &bc));
  if (ctx->node->opset >= 7 || !bc) return KILN_OK;
  KILN_TRY(kiln_node_int(ctx->node, "axis", a->rank - b->rank, &axis));
  if (axis < 0) axis += a->rank;
  if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "cannot broadcast rank %d at axis %lld of rank %d", b->rank,
                           (long long)axis, a->rank);
  *view = *b;
  view->owns_data = false;
  view->rank = a->rank;
  for (int d = 0; d < a->rank; d++)
    view->dims[d] = d >= axis && d < axis + b->rank ? b->dims[d - axis] : 1;
  *used = true;
  return KILN_OK;
}

/* ---- the eval of scalar-function ops ---- */

static kiln_dtype_class compute_class(const kiln_ew_fns *fns, int n, const kiln_tensor *const *ts) {
  kiln_dtype_class c = kiln_dtype_class_of(ts[0]->dtype);
  if ((fns->flags & KILN_EW_VIA_FLOAT) && (c == KILN_CLASS_SINT || c == KILN_CLASS_UINT))
    return ts[0]->dtype == KILN_BOOL ? c : KILN_CLASS_FLOAT;
  if (!(fns->flags & KILN_EW_MIXED)) return c;
  for (int k = 0; k < n; k++)
    if (kiln_dtype_is_float(ts[k]->dtype)) return KILN_CLASS_FLOAT;
  return kiln_dtype_class_of(ts[0]->dtype) == KILN_CLASS_NONE ? KILN_CLASS_NONE : KILN_CLASS_SINT;
}

static kiln_status check_same_dtype(const kiln_eval_ctx *ctx, int n, const kiln_tensor *const *ts) {
  for (int k = 1; k < n; k++)
    if (ts[k]->dtype != ts[0]->dtype)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d has type %s, input 0 has %s", k,
                             kiln_dtype_name(ts[k]->dtype), kiln_dtype_name(ts[0]->dtype));
  return KILN_OK;
}

/* PRelu's slope broadcasts to X one way; PRelu-1/6 also takes one slope per
 * channel (dim 1) as a 1-D tensor. */
static kiln_status prelu_slope(const kiln_eval_ctx *ctx, const kiln_tensor **ts,
                               kiln_tensor *view) {
  const kiln_tensor *x = ts[0], *s = ts[1];
  if (ctx->node->opset < 7 && s->rank == 1 && x->rank >= 2 && s->dims[0] == x->dims[1] &&
      s->dims[0] != 1) {
    *view = *s;
    view->owns_data = false;
    view->rank = x->rank - 1;
    for (int d = 1; d < view->rank; d++) view->dims[d] = 1;
    ts[1] = s = view;
  }
  bool ok = s->rank <= x->rank;
  for (int d = 0; ok && d < s->rank; d++) {
    int64_t sd = s->dims[s->rank - 1 - d], xd = x->dims[x->rank - 1 - d];
    ok = sd == 1 || sd == xd;
  }
  if (!ok) return kiln_eval_error(ctx, KILN_ERR_INVALID, "slope does not broadcast to X");
  return KILN_OK;
}

/* Collects the inputs the map reads (Clip-11+: only x; bounds become params).
 */
static kiln_status gather_inputs(kiln_eval_ctx *ctx, const kiln_tensor **ts, int *n,
                                 kiln_tensor *view) {
  *n = ctx->node->op == KILN_OP_Clip ? 1 : ctx->n_in;
  for (int k = 0; k < *n; k++) KILN_TRY(kiln_eval_in_req(ctx, k, &ts[k]));
  if (ctx->node->op == KILN_OP_PRelu) return prelu_slope(ctx, ts, view);
  if (*n == 2) {
    bool used;
    KILN_TRY(kiln_ew_legacy_bcast(ctx, ts[0], ts[1], view, &used));
    if (used) ts[1] = view;
  }
  return KILN_OK;
}

kiln_status kiln_ew_eval_map(kiln_eval_ctx *ctx) {
  const kiln_ew_fns *fns = kiln_ew_fns_of(ctx->node->op);
  if (!fns) return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "no scalar function");
  if (ctx->n_in < 1) return kiln_eval_error(ctx, KILN_ERR_INVALID, "needs at least one input");
  kiln_ew_params p;
  KILN_TRY(read_params(ctx, &p));
  const kiln_tensor **ts = kiln_xcalloc((size_t)ctx->n_in, sizeof *ts);
  kiln_tensor view;
  int n;
  kiln_status st = gather_inputs(ctx, ts, &n, &view);
  if (!st && !(fns->flags & KILN_EW_MIXED)) st = check_same_dtype(ctx, n, ts);
  if (!st && ctx->node->op == KILN_OP_Clip) st = clip_params(ctx, ts[0], &p);
  if (!st) {
    kiln_dtype out_dt = fns->flags & KILN_EW_BOOL_OUT ? KILN_BOOL : ts[0]->dtype;
    st = kiln_ew_map(ctx, fns, &p, n, ts, compute_class(fns, n, ts), out_dt);
  }
  free(ts);
  return st;
}
