/* Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
 * GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization, RMSNormalization.
 * Statistics are computed in double whatever stash_type says (the most precise choice). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

/* Mean and (population) variance of x grouped by map: element i belongs to group map[i]. */
static kiln_status group_stats(const kiln_eval_ctx *ctx, const double *x, const int64_t *map,
                               int64_t n, int64_t groups, double **mean, double **var) {
  double *cnt = NULL;
  kiln_status st = kiln_nn_alloc(ctx, groups, sizeof(double), (void **)mean);
  if (!st) st = kiln_nn_alloc(ctx, groups, sizeof(double), (void **)var);
  if (!st) st = kiln_nn_alloc(ctx, groups, sizeof(double), (void **)&cnt);
  if (st) {
    free(*mean), free(*var), free(cnt);
    *mean = *var = NULL;
    return st;
  }
  for (int64_t g = 0; g < groups; g++) (*mean)[g] = (*var)[g] = cnt[g] = 0;
  for (int64_t i = 0; i < n; i++) (*mean)[map[i]] += x[i], cnt[map[i]] += 1;
  for (int64_t g = 0; g < groups; g++) (*mean)[g] /= cnt[g];
  for (int64_t i = 0; i < n; i++) {
    double d = x[i] - (*mean)[map[i]];
    (*var)[map[i]] += d * d;
  }
  for (int64_t g = 0; g < groups; g++) (*var)[g] /= cnt[g];
  free(cnt);
  return KILN_OK;
}

/* map[i] = i / block (contiguous groups of `block` elements). */
static kiln_status block_map(const kiln_eval_ctx *ctx, int64_t n, int64_t block, int64_t **map) {
  KILN_TRY(kiln_nn_alloc(ctx, n, sizeof(int64_t), (void **)map));
  for (int64_t i = 0; i < n; i++) (*map)[i] = i / block;
  return KILN_OK;
}

/* ---- BatchNormalization ----
 * Inference: y = scale * (x - mean) / sqrt(var + eps) + B per channel (or per activation, when
 * the parameters have C*spatial elements: spatial=0 before opset 9). Training (opset >= 14:
 * training_mode=1; before: when more than Y is requested): batch statistics over all axes but
 * 1 (population variance), running stats mixed with momentum; outputs Y, running_mean,
 * running_var and, before opset 14, saved_mean, saved_var. */

typedef struct bn_params {
  double *scale, *bias, *mean, *var;
  int64_t C, S; /* channels, elements per channel and batch item */
  bool per_activation;
} bn_params;

static kiln_status bn_load(kiln_eval_ctx *ctx, const kiln_tensor *x, bn_params *p) {
  memset(p, 0, sizeof *p);
  KILN_TRY(kiln_nn_need_rank(ctx, x, 2, "X"));
  p->C = x->dims[1];
  p->S = kiln_nn_prod(x->dims, 2, x->rank);
  double **dst[4] = {&p->scale, &p->bias, &p->mean, &p->var};
  for (int i = 0; i < 4; i++) {
    const kiln_tensor *t;
    KILN_TRY(kiln_eval_in_req(ctx, i + 1, &t));
    KILN_TRY(kiln_nn_need_float(ctx, t, "parameter"));
    bool per_act = t->numel == p->C * p->S && p->S != 1;
    if (t->numel != p->C && !per_act)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d has %lld elements, expected %lld",
                             i + 1, (long long)t->numel, (long long)p->C);
    if (i > 0 && per_act != p->per_activation)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "parameters have different shapes");
    p->per_activation = per_act;
    KILN_TRY(kiln_nn_load_f64(ctx, t, dst[i]));
  }
  return KILN_OK;
}

static void bn_free(bn_params *p) {
  free(p->scale), free(p->bias), free(p->mean), free(p->var);
}

static void bn_apply(const bn_params *p, const double *x, int64_t n, const double *mean,
                     const double *var, double eps, double *y) {
  for (int64_t i = 0; i < n; i++) {
    int64_t c = (i / p->S) % p->C, k = p->per_activation ? c * p->S + i % p->S : c;
    y[i] = p->scale[k] * (x[i] - mean[k]) / sqrt(var[k] + eps) + p->bias[k];
  }
}

static bool bn_training(const kiln_eval_ctx *ctx, const kiln_attrs_norm *na) {
  const kiln_node *n = ctx->node;
  if (n->opset >= 14) return na->training_mode;
  if (n->opset < 7 && na->is_test) return false;
  for (int i = 1; i < ctx->n_out; i++)
    if (n->outputs[i] >= 0) return true;
  return false;
}

/* Stores a per-channel vector into output i (if requested) with the dtype of input `like`. */
static kiln_status bn_store_vec(kiln_eval_ctx *ctx, int i, const double *v, int64_t n, int like) {
  if (i >= ctx->n_out || ctx->node->outputs[i] < 0) return KILN_OK;
  const kiln_tensor *lt = kiln_eval_in(ctx, like);
  kiln_tensor *t;
  KILN_TRY(kiln_eval_out(ctx, i, lt->dtype, lt->rank, lt->dims, &t));
  if (t->numel != n) return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "statistics size");
  kiln_nn_store_f64(t, v);
  return KILN_OK;
}

static kiln_status bn_train(kiln_eval_ctx *ctx, const bn_params *p, const double *x,
                            const kiln_tensor *xt, const kiln_attrs_norm *na, double *y) {
  double eps = na->epsilon;
  float momentum = na->momentum;
  int64_t *map = NULL, ns = p->per_activation ? p->C * p->S : p->C;
  double *bm = NULL, *bv = NULL, *rm = NULL, *rv = NULL;
  KILN_TRY(kiln_nn_alloc(ctx, xt->numel, sizeof(int64_t), (void **)&map));
  for (int64_t i = 0; i < xt->numel; i++) {
    int64_t c = (i / p->S) % p->C;
    map[i] = p->per_activation ? c * p->S + i % p->S : c;
  }
  kiln_status st = group_stats(ctx, x, map, xt->numel, ns, &bm, &bv);
  if (!st) st = kiln_nn_alloc(ctx, ns, sizeof(double), (void **)&rm);
  if (!st) st = kiln_nn_alloc(ctx, ns, sizeof(double), (void **)&rv);
  if (!st) {
    for (int64_t k = 0; k < ns; k++) {
      rm[k] = p->mean[k] * momentum + bm[k] * (1.0 - momentum);
      rv[k] = p->var[k] * momentum + bv[k] * (1.0 - momentum);
    }
    bn_apply(p, x, xt->numel, bm, bv, eps, y);
    st = bn_store_vec(ctx, 1, rm, ns, 3);
  }
  if (!st) st = bn_store_vec(ctx, 2, rv, ns, 4);
  if (!st) st = bn_store_vec(ctx, 3, bm, ns, 3);
  if (!st) st = bn_store_vec(ctx, 4, bv, ns, 4);
  free(map), free(bm), free(bv), free(rm), free(rv);
  return st;
}

static kiln_status eval_batch_norm(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  float eps = na.epsilon;
  bn_params p;
  kiln_status st = bn_load(ctx, xt, &p);
  double *x = NULL, *y = NULL;
  kiln_tensor *yt;
  if (!st) st = kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt);
  if (!st) st = kiln_nn_load_f64(ctx, xt, &x);
  if (!st) st = kiln_nn_alloc(ctx, xt->numel, sizeof(double), (void **)&y);
  if (!st) {
    if (bn_training(ctx, &na)) st = bn_train(ctx, &p, x, xt, &na, y);
    else bn_apply(&p, x, xt->numel, p.mean, p.var, eps, y);
    if (!st) kiln_nn_store_f64(yt, y);
  }
  bn_free(&p);
  free(x), free(y);
  return st;
}

/* ---- Instance / Group / Layer / RMS normalization ---- */

/* y[i] = (x[i] - mean[g]) / sqrt(var[g] + eps) for g = i / block. */
static void normalize_blocks(const double *x, int64_t n, int64_t block, const double *mean,
                             const double *var, double eps, double *y) {
  for (int64_t i = 0; i < n; i++) y[i] = (x[i] - mean[i / block]) / sqrt(var[i / block] + eps);
}

/* Loads X, computes the statistics of contiguous blocks of `block` elements and normalizes. */
static kiln_status norm_blocks(kiln_eval_ctx *ctx, const kiln_tensor *xt, int64_t block, double eps,
                               double **y, double **mean, double **var) {
  double *x = NULL;
  int64_t *map = NULL, groups = block ? xt->numel / block : 0;
  *y = *mean = *var = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, xt, &x);
  if (!st) st = block_map(ctx, xt->numel, block, &map);
  if (!st) st = group_stats(ctx, x, map, xt->numel, groups, mean, var);
  if (!st) st = kiln_nn_alloc(ctx, xt->numel, sizeof(double), (void **)y);
  if (!st) normalize_blocks(x, xt->numel, block, *mean, *var, eps, *y);
  free(x), free(map);
  return st;
}

/* Loads a per-channel (or per-group) parameter with n elements. */
static kiln_status load_param(kiln_eval_ctx *ctx, int i, int64_t n, double **out) {
  const kiln_tensor *t;
  KILN_TRY(kiln_eval_in_req(ctx, i, &t));
  if (t->numel != n)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d has %lld elements, expected %lld", i,
                           (long long)t->numel, (long long)n);
  return kiln_nn_load_f64(ctx, t, out);
}

/* Instance (groups = C) and Group normalization of X [N, C, ...]. */
static kiln_status eval_group_norm(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  KILN_TRY(kiln_nn_need_rank(ctx, xt, 2, "X"));
  bool inst = ctx->node->op == KILN_OP_InstanceNormalization;
  int64_t C = xt->dims[1], S = kiln_nn_prod(xt->dims, 2, xt->rank), G = C;
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  float eps = na.epsilon;
  if (!inst) G = na.num_groups;
  if (G <= 0 || C % G)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "num_groups %lld does not divide %lld channels",
                           (long long)G, (long long)C);
  bool per_group = !inst && ctx->node->opset < 21;
  double *scale = NULL, *bias = NULL, *y = NULL, *mean = NULL, *var = NULL;
  kiln_tensor *yt;
  kiln_status st = load_param(ctx, 1, per_group ? G : C, &scale);
  if (!st) st = load_param(ctx, 2, per_group ? G : C, &bias);
  if (!st) st = kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt);
  if (!st) st = norm_blocks(ctx, xt, (C / G) * S, eps, &y, &mean, &var);
  if (!st) {
    for (int64_t i = 0; i < xt->numel; i++) {
      int64_t c = (i / S) % C, k = per_group ? c / (C / G) : c;
      y[i] = y[i] * scale[k] + bias[k];
    }
    kiln_nn_store_f64(yt, y);
  }
  free(scale), free(bias), free(y), free(mean), free(var);
  return st;
}

/* Dtype of LayerNormalization's Mean and InvStdDev: stash_type when it names a float type. */
static kiln_dtype stash_dtype(const kiln_node *n, kiln_dtype dflt) {
  kiln_attrs_norm na;
  kiln_status st = kiln_attrs_norm_decode(n, &na);
  int64_t s = st ? 0 : na.stash_type;
  kiln_status_free(st);
  return kiln_dtype_valid((int)s) && kiln_dtype_is_float((kiln_dtype)s) ? (kiln_dtype)s : dflt;
}

static kiln_status ln_stats_out(kiln_eval_ctx *ctx, const kiln_tensor *xt, int axis,
                                const double *mean, const double *var, double eps) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < xt->rank; d++) dims[d] = d < axis ? xt->dims[d] : 1;
  kiln_dtype dt = stash_dtype(ctx->node, xt->dtype);
  int64_t rows = kiln_nn_prod(xt->dims, 0, axis);
  for (int i = 1; i <= 2 && i < ctx->n_out; i++) {
    if (ctx->node->outputs[i] < 0) continue;
    kiln_tensor *t;
    KILN_TRY(kiln_eval_out(ctx, i, dt, xt->rank, dims, &t));
    for (int64_t r = 0; r < rows; r++)
      kiln_store_f64(dt, t->data, (size_t)r, i == 1 ? mean[r] : 1.0 / sqrt(var[r] + eps));
  }
  return KILN_OK;
}

static kiln_status eval_layer_norm(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt, *st_ = NULL, *bt = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &st_));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  kiln_attrs_norm na;
  int axis;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  float eps = na.epsilon;
  KILN_TRY(kiln_norm_axis(ctx, na.axis, xt->rank, &axis));
  int64_t cols = kiln_nn_prod(xt->dims, axis, xt->rank);
  double *y = NULL, *mean = NULL, *var = NULL, *sv = NULL, *bv = NULL;
  int64_t *smap = NULL, *bmap = NULL;
  kiln_tensor *yt;
  kiln_status st = kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt);
  if (!st) st = kiln_nn_bcast_map(ctx, st_, xt->rank, xt->dims, &smap);
  if (!st && bt) st = kiln_nn_bcast_map(ctx, bt, xt->rank, xt->dims, &bmap);
  if (!st) st = kiln_nn_load_f64(ctx, st_, &sv);
  if (!st && bt) st = kiln_nn_load_f64(ctx, bt, &bv);
  if (!st) st = norm_blocks(ctx, xt, cols, eps, &y, &mean, &var);
  if (!st) {
    for (int64_t i = 0; i < xt->numel; i++) y[i] = y[i] * sv[smap[i]] + (bv ? bv[bmap[i]] : 0);
    kiln_nn_store_f64(yt, y);
    st = ln_stats_out(ctx, xt, axis, mean, var, eps);
  }
  free(y), free(mean), free(var), free(sv), free(bv), free(smap), free(bmap);
  return st;
}

static kiln_status eval_rms_norm(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt, *sc;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &sc));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  KILN_TRY(kiln_nn_need_float(ctx, sc, "scale"));
  kiln_attrs_norm na;
  int axis;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  float eps = na.epsilon;
  KILN_TRY(kiln_norm_axis(ctx, na.axis, xt->rank, &axis));
  int64_t cols = kiln_nn_prod(xt->dims, axis, xt->rank);
  double *x = NULL, *sv = NULL;
  int64_t *smap = NULL;
  kiln_tensor *yt;
  kiln_status st = kiln_eval_out(ctx, 0, sc->dtype, xt->rank, xt->dims, &yt);
  if (!st) st = kiln_nn_bcast_map(ctx, sc, xt->rank, xt->dims, &smap);
  if (!st) st = kiln_nn_load_f64(ctx, sc, &sv);
  if (!st) st = kiln_nn_load_f64(ctx, xt, &x);
  for (int64_t r = 0; !st && cols > 0 && r < xt->numel / cols; r++) {
    double ss = 0;
    for (int64_t j = 0; j < cols; j++) ss += x[r * cols + j] * x[r * cols + j];
    double rms = sqrt(ss / (double)cols + eps);
    for (int64_t j = 0; j < cols; j++) {
      int64_t i = r * cols + j;
      x[i] = x[i] / rms * sv[smap[i]];
    }
  }
  if (!st) kiln_nn_store_f64(yt, x);
  free(x), free(sv), free(smap);
  return st;
}

/* ---- LRN, LpNormalization (a zero norm gives 0, as in the ONNX tests), MVN ---- */

static kiln_status eval_lrn(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  KILN_TRY(kiln_nn_need_rank(ctx, xt, 3, "X"));
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  float alpha = na.alpha, beta = na.beta, bias = na.bias;
  int64_t size = na.size;
  if (size <= 0 || size > INT32_MAX)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "size must be positive");
  int64_t C = xt->dims[1], S = kiln_nn_prod(xt->dims, 2, xt->rank), lo = (size - 1) / 2;
  int64_t hi = size / 2; /* ceil((size-1)/2) */
  kiln_tensor *yt;
  KILN_TRY(kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt));
  double *x = NULL, *y = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, xt, &x);
  if (!st) st = kiln_nn_alloc(ctx, xt->numel, sizeof(double), (void **)&y);
  for (int64_t i = 0; !st && i < xt->numel; i++) {
    int64_t c = (i / S) % C, base = i - c * S;
    double sum = 0;
    for (int64_t k = c - lo < 0 ? 0 : c - lo; k <= c + hi && k < C; k++)
      sum += x[base + k * S] * x[base + k * S];
    y[i] = x[i] / pow(bias + alpha / (double)size * sum, beta);
  }
  if (!st) kiln_nn_store_f64(yt, y);
  free(x), free(y);
  return st;
}

static kiln_status eval_lp_norm(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  kiln_attrs_norm na;
  int axis;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  int64_t p = na.p;
  KILN_TRY(kiln_norm_axis(ctx, na.axis, xt->rank, &axis));
  if (p != 1 && p != 2) return kiln_eval_error(ctx, KILN_ERR_INVALID, "p must be 1 or 2");
  int64_t n = xt->dims[axis], inner = kiln_nn_prod(xt->dims, axis + 1, xt->rank);
  int64_t outer = kiln_nn_prod(xt->dims, 0, axis);
  kiln_tensor *yt;
  KILN_TRY(kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt));
  double *x;
  KILN_TRY(kiln_nn_load_f64(ctx, xt, &x));
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double norm = 0, *v = x + o * n * inner + in;
      for (int64_t j = 0; j < n; j++)
        norm += p == 1 ? fabs(v[j * inner]) : v[j * inner] * v[j * inner];
      if (p == 2) norm = sqrt(norm);
      for (int64_t j = 0; j < n; j++) v[j * inner] = norm == 0 ? 0 : v[j * inner] / norm;
    }
  kiln_nn_store_f64(yt, x);
  free(x);
  return KILN_OK;
}

static kiln_status eval_mvn(kiln_eval_ctx *ctx) {
  const kiln_tensor *xt;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &xt));
  KILN_TRY(kiln_nn_need_float(ctx, xt, "X"));
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  const int64_t *axes = na.axes;
  int n_axes = na.n_axes < 0 ? 0 : na.n_axes;
  bool mask[KILN_MAX_RANK] = {false};
  for (int i = 0; i < n_axes; i++) {
    int a;
    KILN_TRY(kiln_norm_axis(ctx, axes[i], xt->rank, &a));
    mask[a] = true;
  }
  int64_t groups = 1;
  for (int d = 0; d < xt->rank; d++) groups *= mask[d] ? 1 : xt->dims[d];
  kiln_tensor *yt;
  KILN_TRY(kiln_eval_out(ctx, 0, xt->dtype, xt->rank, xt->dims, &yt));
  double *x = NULL, *mean = NULL, *var = NULL;
  int64_t *map = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, xt, &x);
  if (!st) st = kiln_nn_reduce_map(ctx, xt->rank, xt->dims, mask, &map);
  if (!st) st = group_stats(ctx, x, map, xt->numel, groups, &mean, &var);
  if (!st) {
    for (int64_t i = 0; i < xt->numel; i++)
      x[i] = (x[i] - mean[map[i]]) / (sqrt(var[map[i]]) + 1e-9);
    kiln_nn_store_f64(yt, x);
  }
  free(x), free(mean), free(var), free(map);
  return st;
}

/* ---- inference ---- */

static kiln_status infer_batch_norm(kiln_infer_ctx *ctx) {
  KILN_TRY(kiln_nn_infer_same(ctx));
  for (int i = 1; i < ctx->n_out && i < 5; i++) {
    const kiln_type *p = kiln_nn_infer_in(ctx, i == 1 || i == 3 ? 3 : 4);
    if (p) ctx->out[i] = *p;
  }
  return KILN_OK;
}

static kiln_status infer_layer_norm(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x) return KILN_OK;
  ctx->out[0] = *x;
  if (ctx->node->op == KILN_OP_RMSNormalization) {
    const kiln_type *s = kiln_nn_infer_in(ctx, 1);
    if (s) ctx->out[0].dtype = s->dtype;
    return KILN_OK;
  }
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(ctx->node, &na));
  int64_t axis = na.axis;
  if (axis < -x->rank || axis >= x->rank)
    return kiln_nn_infer_error(ctx, "axis %lld out of range", (long long)axis);
  if (axis < 0) axis += x->rank;
  kiln_type t = *x;
  t.dtype = stash_dtype(ctx->node, x->dtype);
  for (int d = (int)axis; d < x->rank; d++) t.dims[d].value = 1, t.dims[d].sym = NULL;
  for (int i = 1; i < ctx->n_out && i <= 2; i++) ctx->out[i] = t;
  return KILN_OK;
}

void kiln_nn_register_norm(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_BatchNormalization, eval_batch_norm, infer_batch_norm, 5, 5, 1, 5);
  kiln_nn_set(table, KILN_OP_InstanceNormalization, eval_group_norm, kiln_nn_infer_same, 3, 3, 1,
              1);
  kiln_nn_set(table, KILN_OP_GroupNormalization, eval_group_norm, kiln_nn_infer_same, 3, 3, 1, 1);
  kiln_nn_set(table, KILN_OP_LayerNormalization, eval_layer_norm, infer_layer_norm, 2, 3, 1, 3);
  kiln_nn_set(table, KILN_OP_RMSNormalization, eval_rms_norm, infer_layer_norm, 2, 2, 1, 1);
  kiln_nn_set(table, KILN_OP_LRN, eval_lrn, kiln_nn_infer_same, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_LpNormalization, eval_lp_norm, kiln_nn_infer_same, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_MeanVarianceNormalization, eval_mvn, kiln_nn_infer_same, 1, 1, 1, 1);
}
