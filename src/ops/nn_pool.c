/* Pooling: AveragePool (count_include_pad from opset 7, ceil_mode from 10, dilations from 19),
 * MaxPool (storage_order and the Indices output from 8, ceil_mode and dilations from 10),
 * LpPool (p a float attribute in opset 1, an int from 2), their Global forms, MaxUnpool and
 * MaxRoiPool. Windows are visited directly (no padded copy). With ceil_mode, a window may
 * reach past the explicit padding; those positions count for nothing, not even with
 * count_include_pad (as in the ONNX reference). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

typedef enum pool_kind { POOL_AVG, POOL_MAX, POOL_LP } pool_kind;

typedef struct pool_geom {
  kiln_nn_window w;
  pool_kind kind;
  bool count_pad;
  int storage_order;
  double p;
  int64_t planes, isz, osz, ksz;
} pool_geom;

static pool_kind kind_of(kiln_op op) {
  switch (op) {
  case KILN_OP_MaxPool:
  case KILN_OP_GlobalMaxPool: return POOL_MAX;
  case KILN_OP_LpPool:
  case KILN_OP_GlobalLpPool: return POOL_LP;
  default: return POOL_AVG;
  }
}

static kiln_status pool_attrs(const kiln_node *node, pool_geom *g) {
  kiln_attrs_window wa;
  g->kind = kind_of(node->op);
  KILN_TRY(kiln_attrs_window_decode(node, &wa));
  g->count_pad = wa.count_include_pad;
  g->storage_order = (int)wa.storage_order;
  g->p = g->kind == POOL_LP ? wa.p : 2; /* p: LpPool's (a float in opset 1, an int later) */
  return KILN_OK;
}

/* Fills g for input dims (rank >= 3). global: kernel = whole input, no padding. */
static kiln_status pool_geom_init(const kiln_node *node, int rank, const int64_t *dims, bool global,
                                  pool_geom *g) {
  char buf[160];
  memset(g, 0, sizeof *g);
  if (rank < 3)
    return kiln_invalid("%s: input must have rank >= 3", kiln_node_label(node, buf, sizeof buf));
  int nsp = g->w.nsp = rank - 2;
  KILN_TRY(pool_attrs(node, g));
  for (int d = 0; d < nsp; d++) g->w.in[d] = dims[d + 2];
  if (global) {
    for (int d = 0; d < nsp; d++) {
      g->w.kernel[d] = dims[d + 2] < 0 ? 1 : dims[d + 2];
      g->w.strides[d] = g->w.dilations[d] = 1;
      g->w.out[d] = dims[d + 2] < 0 ? 1 : (dims[d + 2] > 0 ? 1 : 0);
    }
  } else {
    bool has_k;
    KILN_TRY(kiln_nn_ints_n(node, "kernel_shape", nsp, 1, g->w.kernel, &has_k));
    if (!has_k)
      return kiln_invalid("%s: kernel_shape is required", kiln_node_label(node, buf, sizeof buf));
    KILN_TRY(kiln_nn_window_init(node, &g->w, node->op != KILN_OP_LpPool || node->opset >= 18));
  }
  g->isz = kiln_nn_prod(g->w.in, 0, nsp);
  g->osz = kiln_nn_prod(g->w.out, 0, nsp);
  g->ksz = kiln_nn_prod(g->w.kernel, 0, nsp);
  return KILN_OK;
}

/* Index of an input position within its plane, row-major or (storage_order 1) column-major. */
static int64_t plane_index(const kiln_nn_window *w, const int64_t *ip, int storage_order) {
  int64_t idx = 0;
  if (storage_order) {
    for (int d = w->nsp - 1; d >= 0; d--) idx = idx * w->in[d] + ip[d];
  } else {
    for (int d = 0; d < w->nsp; d++) idx = idx * w->in[d] + ip[d];
  }
  return idx;
}

/* Pools one output position op of plane x; *arg receives the plane index of the max. */
static double pool_window(const pool_geom *g, const double *x, const int64_t *op, int64_t *arg) {
  const kiln_nn_window *w = &g->w;
  int64_t kp[KILN_MAX_RANK] = {0}, ip[KILN_MAX_RANK];
  double acc = g->kind == POOL_MAX ? -INFINITY : 0;
  int64_t count = 0, best = -1;
  for (int64_t k = 0; k < g->ksz; k++) {
    bool inside = true, in_pads = true;
    int64_t off = 0;
    for (int d = 0; d < w->nsp; d++) {
      ip[d] = op[d] * w->strides[d] + kp[d] * w->dilations[d] - w->pads[d];
      inside = inside && ip[d] >= 0 && ip[d] < w->in[d];
      in_pads = in_pads && ip[d] >= -w->pads[d] && ip[d] < w->in[d] + w->pads[w->nsp + d];
      off = off * w->in[d] + ip[d];
    }
    if (inside) {
      double v = x[off];
      if (g->kind == POOL_MAX) {
        if (v > acc || best < 0) acc = v, best = plane_index(w, ip, g->storage_order);
      } else {
        acc += g->kind == POOL_LP ? pow(fabs(v), g->p) : v;
      }
    }
    count += g->count_pad ? in_pads : inside;
    for (int d = w->nsp - 1; d >= 0; d--) {
      if (++kp[d] < w->kernel[d]) break;
      kp[d] = 0;
    }
  }
  if (arg) *arg = best < 0 ? 0 : best;
  if (g->kind == POOL_AVG) return acc / (double)count;
  if (g->kind == POOL_LP) return pow(acc, 1.0 / g->p);
  return acc;
}

static void pool_run(const pool_geom *g, const double *x, double *y, int64_t *ind) {
  for (int64_t pl = 0; pl < g->planes; pl++) {
    int64_t op[KILN_MAX_RANK] = {0};
    for (int64_t o = 0; o < g->osz; o++) {
      int64_t arg;
      y[pl * g->osz + o] = pool_window(g, x + pl * g->isz, op, &arg);
      if (ind) ind[pl * g->osz + o] = pl * g->isz + arg;
      for (int d = g->w.nsp - 1; d >= 0; d--) {
        if (++op[d] < g->w.out[d]) break;
        op[d] = 0;
      }
    }
  }
}

static kiln_status eval_pool(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_op op = ctx->node->op;
  bool global =
      op == KILN_OP_GlobalAveragePool || op == KILN_OP_GlobalMaxPool || op == KILN_OP_GlobalLpPool;
  if (!kiln_dtype_is_float(x->dtype) && !(op == KILN_OP_MaxPool && kiln_dtype_is_int(x->dtype)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %s",
                           kiln_dtype_name(x->dtype));
  pool_geom g;
  KILN_TRY(pool_geom_init(ctx->node, x->rank, x->dims, global, &g));
  g.planes = x->dims[0] * x->dims[1];
  int64_t dims[KILN_MAX_RANK] = {x->dims[0], x->dims[1]};
  for (int d = 0; d < g.w.nsp; d++) dims[d + 2] = g.w.out[d];
  kiln_tensor *y, *ind = NULL;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &y));
  if (ctx->n_out > 1 && ctx->node->outputs[1] >= 0)
    KILN_TRY(kiln_eval_out(ctx, 1, KILN_I64, x->rank, dims, &ind));
  double *xv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    pool_run(&g, xv, yv, ind ? ind->data : NULL);
    if (kiln_dtype_is_int(y->dtype))
      for (int64_t i = 0; i < y->numel; i++) yv[i] = isinf(yv[i]) ? 0 : yv[i];
    kiln_nn_store_f64(y, yv);
  }
  free(xv);
  free(yv);
  return st;
}

static kiln_status infer_pool(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x) return KILN_OK;
  kiln_op op = ctx->node->op;
  bool global =
      op == KILN_OP_GlobalAveragePool || op == KILN_OP_GlobalMaxPool || op == KILN_OP_GlobalLpPool;
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < x->rank; d++) dims[d] = x->dims[d].value;
  pool_geom g;
  KILN_TRY(pool_geom_init(ctx->node, x->rank, dims, global, &g));
  kiln_type t = *x;
  for (int d = 0; d < g.w.nsp; d++) {
    t.dims[d + 2].value = global ? 1 : g.w.out[d];
    t.dims[d + 2].sym = NULL;
  }
  ctx->out[0] = t;
  if (ctx->n_out > 1) {
    t.dtype = KILN_I64;
    ctx->out[1] = t;
  }
  return KILN_OK;
}

/* ---- MaxUnpool ----
 * The indices address the unpooled tensor of the inferred shape ((in-1)*s - pads + k); an
 * output_shape input, if larger, pads that tensor with zeros at the end of each dim (as in the
 * ONNX reference and its tests). */

static kiln_status unpool_shape(kiln_eval_ctx *ctx, const kiln_tensor *x, int64_t *inferred,
                                int64_t *dims) {
  int nsp = x->rank - 2;
  int64_t k[KILN_MAX_RANK], s[KILN_MAX_RANK], p[2 * KILN_MAX_RANK];
  bool has_k;
  KILN_TRY(kiln_nn_ints_n(ctx->node, "kernel_shape", nsp, 1, k, &has_k));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "strides", nsp, 1, s, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "pads", 2 * nsp, 0, p, NULL));
  if (!has_k) return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel_shape is required");
  inferred[0] = dims[0] = x->dims[0];
  inferred[1] = dims[1] = x->dims[1];
  for (int d = 0; d < nsp; d++) {
    if (k[d] <= 0 || s[d] <= 0 || k[d] > INT32_MAX || s[d] > INT32_MAX || p[d] < 0 ||
        p[nsp + d] < 0 || p[d] > INT32_MAX || p[nsp + d] > INT32_MAX)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad kernel_shape, strides or pads");
    inferred[d + 2] = dims[d + 2] = (x->dims[d + 2] - 1) * s[d] - p[d] - p[nsp + d] + k[d];
    if (inferred[d + 2] < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "negative output size");
  }
  const kiln_tensor *os = kiln_eval_in(ctx, 2);
  if (!os) return KILN_OK;
  if (os->numel != x->rank || !kiln_dtype_is_int(os->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output_shape must have %d integers", x->rank);
  for (int d = 0; d < x->rank; d++) {
    dims[d] = kiln_load_i64(os->dtype, os->data, (size_t)d);
    if (dims[d] < inferred[d])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "output_shape is smaller than the input's");
  }
  return KILN_OK;
}

static kiln_status eval_max_unpool(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *ind;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &ind));
  KILN_TRY(kiln_nn_need_rank(ctx, x, 3, "X"));
  if (ind->rank != x->rank || memcmp(ind->dims, x->dims, sizeof(int64_t) * (size_t)x->rank))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "I must have the shape of X");
  if (!kiln_dtype_is_int(ind->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "I must be an integer tensor");
  int64_t inferred[KILN_MAX_RANK], dims[KILN_MAX_RANK], numel;
  KILN_TRY(unpool_shape(ctx, x, inferred, dims));
  KILN_TRY(kiln_shape_numel(x->rank, inferred, &numel));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &y));
  size_t es = kiln_dtype_size(x->dtype);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t at = kiln_load_i64(ind->dtype, ind->data, (size_t)i);
    if (at < 0 || at >= numel)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "index %lld out of range", (long long)at);
    int64_t o = 0, rest = at; /* position of `at` (in the inferred shape) in the output */
    int64_t mult = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
      o += (rest % inferred[d]) * mult;
      rest /= inferred[d];
      mult *= dims[d];
    }
    memcpy((char *)y->data + o * (int64_t)es, (const char *)x->data + i * (int64_t)es, es);
  }
  return KILN_OK;
}

/* MaxUnpool: output_shape when it is a constant, else the shape inferred from the attributes. */
static kiln_status infer_max_unpool(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x || x->rank < 3) return KILN_OK;
  kiln_type t = *x;
  const kiln_tensor *os = ctx->n_in > 2 ? ctx->cin[2] : NULL;
  if (ctx->n_in > 2 && ctx->in[2]) {
    for (int d = 0; d < x->rank; d++) t.dims[d].value = -1, t.dims[d].sym = NULL;
    if (os && os->numel == x->rank && kiln_dtype_is_int(os->dtype))
      for (int d = 0; d < x->rank; d++)
        t.dims[d].value = kiln_load_i64(os->dtype, os->data, (size_t)d);
    ctx->out[0] = t;
    return KILN_OK;
  }
  int nsp = x->rank - 2;
  int64_t k[KILN_MAX_RANK], s[KILN_MAX_RANK], p[2 * KILN_MAX_RANK];
  KILN_TRY(kiln_nn_ints_n(ctx->node, "kernel_shape", nsp, 1, k, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "strides", nsp, 1, s, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "pads", 2 * nsp, 0, p, NULL));
  for (int d = 0; d < nsp; d++) {
    int64_t in = x->dims[d + 2].value;
    bool ok = in >= 0 && in <= INT32_MAX && k[d] > 0 && k[d] <= INT32_MAX && s[d] > 0 &&
              s[d] <= INT32_MAX && p[d] >= 0 && p[d] <= INT32_MAX && p[nsp + d] >= 0 &&
              p[nsp + d] <= INT32_MAX;
    t.dims[d + 2].value = ok ? (in - 1) * s[d] - p[d] - p[nsp + d] + k[d] : -1;
    t.dims[d + 2].sym = NULL;
  }
  ctx->out[0] = t;
  return KILN_OK;
}

/* ---- MaxRoiPool (Caffe's ROI pooling: rounded ROI, bins floor/ceil, empty bins give 0) ---- */

typedef struct roi_geom {
  int64_t C, H, W, ph, pw;
  double scale;
} roi_geom;

/* round(v) as an integer, clamped far outside any image (and NaN to 0) to stay defined. */
static int64_t round_clamped(double v) {
  v = round(v);
  return v != v ? 0 : v > 1e15 ? (int64_t)1e15 : v < -1e15 ? (int64_t)-1e15 : (int64_t)v;
}

static void roi_bin(const roi_geom *g, const double *plane, const double *roi, double *out) {
  int64_t x1 = round_clamped(roi[1] * g->scale), y1 = round_clamped(roi[2] * g->scale);
  int64_t x2 = round_clamped(roi[3] * g->scale), y2 = round_clamped(roi[4] * g->scale);
  int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
  double bh = (double)rh / (double)g->ph, bw = (double)rw / (double)g->pw;
  for (int64_t i = 0; i < g->ph; i++)
    for (int64_t j = 0; j < g->pw; j++) {
      int64_t hs = (int64_t)floor((double)i * bh) + y1,
              he = (int64_t)ceil((double)(i + 1) * bh) + y1;
      int64_t ws = (int64_t)floor((double)j * bw) + x1,
              we = (int64_t)ceil((double)(j + 1) * bw) + x1;
      hs = hs < 0 ? 0 : hs > g->H ? g->H : hs;
      he = he < 0 ? 0 : he > g->H ? g->H : he;
      ws = ws < 0 ? 0 : ws > g->W ? g->W : ws;
      we = we < 0 ? 0 : we > g->W ? g->W : we;
      double m = (he <= hs || we <= ws) ? 0 : -INFINITY;
      for (int64_t h = hs; h < he; h++)
        for (int64_t w = ws; w < we; w++)
          if (plane[h * g->W + w] > m) m = plane[h * g->W + w];
      out[i * g->pw + j] = m;
    }
}

static kiln_status eval_max_roi_pool(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *rois;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &rois));
  KILN_TRY(kiln_nn_need_float(ctx, x, "X"));
  if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 5)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X must be 4-D and rois [num_rois, 5]");
  int64_t ps[2];
  float scale;
  bool has;
  KILN_TRY(kiln_nn_ints_n(ctx->node, "pooled_shape", 2, 1, ps, &has));
  KILN_TRY(kiln_attr_f(ctx->node, "spatial_scale", &scale));
  if (!has || ps[0] <= 0 || ps[1] <= 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "pooled_shape must be 2 positive values");
  roi_geom g = {x->dims[1], x->dims[2], x->dims[3], ps[0], ps[1], scale};
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, 4, (int64_t[]){rois->dims[0], g.C, g.ph, g.pw}, &y));
  double *xv = NULL, *rv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_load_f64(ctx, rois, &rv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  for (int64_t r = 0; !st && r < rois->dims[0]; r++) {
    double b = rv[r * 5];
    if (!(b >= 0 && b < (double)x->dims[0])) {
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "roi %lld has batch index %g", (long long)r, b);
      break;
    }
    for (int64_t c = 0; c < g.C; c++)
      roi_bin(&g, xv + ((int64_t)b * g.C + c) * g.H * g.W, rv + r * 5,
              yv + (r * g.C + c) * g.ph * g.pw);
  }
  if (!st) kiln_nn_store_f64(y, yv);
  free(xv), free(rv), free(yv);
  return st;
}

/* Y: [num_rois, C, pooled_h, pooled_w] in X's dtype; unknown dims stay unknown (the kernel
 * checks the values). */
static kiln_status infer_max_roi_pool(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0), *rois = kiln_nn_infer_in(ctx, 1);
  if (!x || x->rank != 4) return KILN_OK;
  const int64_t *ps = NULL;
  int n = 0;
  kiln_status st = kiln_node_ints(ctx->node, "pooled_shape", &ps, &n);
  if (st) kiln_status_free(st), n = 0;
  kiln_type t = *x;
  t.dims[0] = rois && rois->rank == 2 ? rois->dims[0] : (kiln_dim){-1, NULL};
  for (int d = 0; d < 2; d++) t.dims[d + 2] = (kiln_dim){n == 2 && ps[d] > 0 ? ps[d] : -1, NULL};
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_nn_register_pool(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_AveragePool, eval_pool, infer_pool, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_MaxPool, eval_pool, infer_pool, 1, 1, 1, 2);
  kiln_nn_set(table, KILN_OP_LpPool, eval_pool, infer_pool, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_GlobalAveragePool, eval_pool, infer_pool, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_GlobalMaxPool, eval_pool, infer_pool, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_GlobalLpPool, eval_pool, infer_pool, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_MaxUnpool, eval_max_unpool, infer_max_unpool, 2, 3, 1, 1);
  kiln_nn_set(table, KILN_OP_MaxRoiPool, eval_max_roi_pool, infer_max_roi_pool, 2, 2, 1, 1);
}
