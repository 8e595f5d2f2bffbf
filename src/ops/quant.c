/* Ops of the 'quant' family (see src/graph/ops.def), quantization: QuantizeLinear (10..25),
 * DequantizeLinear (10..25), DynamicQuantizeLinear (11), QLinearMatMul (10, 21), QLinearConv (10).
 *
 * Scale and zero point are per tensor (one element), per axis (1-D of the axis
 * length) or, from opset 21, blocked (same rank as x, the axis dim being
 * ceil(D / block_size)). Integer results round half to even and saturate to the
 * range of the output type; float8 results saturate when `saturate` is 1 (else
 * overflow gives inf or NaN); float4e2m1 always saturates (it has no inf/NaN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "infer_internal.h"

/* ---- integer ranges of quantized types ---- */
static bool quant_int_range(kiln_dtype t, int64_t *lo, int64_t *hi) {
  switch (t) {
  case KILN_U8: *lo = 0, *hi = 255; return true;
  case KILN_I8: *lo = -128, *hi = 127; return true;
  case KILN_U16: *lo = 0, *hi = 65535; return true;
  case KILN_I16: *lo = -32768, *hi = 32767; return true;
  case KILN_U4: *lo = 0, *hi = 15; return true;
  case KILN_I4: *lo = -8, *hi = 7; return true;
  case KILN_U2: *lo = 0, *hi = 3; return true;
  case KILN_I2: *lo = -2, *hi = 1; return true;
  case KILN_I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
  default: return false;
  }
}

static bool quant_is_f8(kiln_dtype t) {
  return t == KILN_F8E4M3FN || t == KILN_F8E4M3FNUZ || t == KILN_F8E5M2 || t == KILN_F8E5M2FNUZ;
}

/* Rounds half to even and saturates to [lo, hi]; NaN gives 0 (ONNX leaves it undefined). */
static int64_t quant_round_sat(double v, int64_t lo, int64_t hi) {
  if (isnan(v)) return 0 < lo ? lo : (0 > hi ? hi : 0);
  v = nearbyint(v);
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)v;
}

/* ---- mapping an element of x to its scale / zero-point element ----
 * x is viewed as [outer, axis_len, inner]; the scale as [outer, nblocks, inner]
 * (blocked), [axis_len] (per axis) or [1] (per tensor). */
typedef struct qmap {
  int mode; /* 0 per tensor, 1 per axis, 2 blocked */
  int64_t outer, axis_len, inner, block, nblocks;
} qmap;

static kiln_status qmap_init(const kiln_eval_ctx *ctx, const kiln_tensor *x,
                             const kiln_tensor *scale, qmap *m) {
  memset(m, 0, sizeof *m);
  int64_t axis = 1, block = 0;
  KILN_TRY(kiln_node_int(ctx->node, "axis", 1, &axis));
  if (ctx->node->opset >= 21) KILN_TRY(kiln_node_int(ctx->node, "block_size", 0, &block));
  if (block < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "block_size must be >= 0");
  if (scale->numel == 1 && block == 0) return KILN_OK; /* per tensor */
  if (x->rank == 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "scale must be a scalar");
  int ax;
  KILN_TRY(kiln_norm_axis(ctx, axis, x->rank, &ax));
  m->outer = 1;
  m->inner = 1;
  for (int i = 0; i < ax; i++) m->outer *= x->dims[i];
  for (int i = ax + 1; i < x->rank; i++) m->inner *= x->dims[i];
  m->axis_len = x->dims[ax];
  if (block == 0) {
    if (scale->rank != 1 || scale->dims[0] != m->axis_len)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "per-axis scale must be 1-D of length %lld (axis %d)",
                             (long long)m->axis_len, ax);
    m->mode = 1;
    return KILN_OK;
  }
  m->mode = 2;
  m->block = block;
  m->nblocks = (m->axis_len + block - 1) / block;
  bool ok = scale->rank == x->rank;
  for (int i = 0; ok && i < x->rank; i++)
    ok = scale->dims[i] == (i == ax ? m->nblocks : x->dims[i]);
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "blocked scale must have the shape of x with dim %d = %lld", ax,
                           (long long)m->nblocks);
  return KILN_OK;
}

static int64_t qmap_index(const qmap *m, int64_t i) {
  if (m->mode == 0) return 0;
  int64_t r = i % m->inner, a = (i / m->inner) % m->axis_len;
  if (m->mode == 1) return a;
  int64_t o = i / (m->inner * m->axis_len);
  return (o * m->nblocks + a / m->block) * m->inner + r;
}

static kiln_status check_zp_shape(const kiln_eval_ctx *ctx, const kiln_tensor *scale,
                                  const kiln_tensor *zp) {
  if (zp && zp->numel != scale->numel)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "zero point has %lld elements, scale %lld",
                           (long long)zp->numel, (long long)scale->numel);
  return KILN_OK;
}

/* ---- QuantizeLinear ---- */
static kiln_status quantize_out_type(const kiln_eval_ctx *ctx, const kiln_tensor *zp,
                                     kiln_dtype *out) {
  int64_t odt = 0;
  if (ctx->node->opset >= 21) KILN_TRY(kiln_node_int(ctx->node, "output_dtype", 0, &odt));
  if (zp && odt && odt != (int64_t)zp->dtype)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output_dtype %lld differs from zero point %s",
                           (long long)odt, kiln_dtype_name(zp->dtype));
  *out = zp ? zp->dtype : odt ? (kiln_dtype)odt : KILN_U8;
  int64_t lo, hi;
  if ((quant_int_range(*out, &lo, &hi) && *out != KILN_I32) || quant_is_f8(*out) ||
      *out == KILN_F4E2M1)
    return KILN_OK;
  return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s is not a quantized type",
                         kiln_dtype_name(*out));
}

/* Precision of x / scale: the `precision` attribute (23+), else the scale's type. */
static kiln_status quantize_precision(const kiln_eval_ctx *ctx, const kiln_tensor *scale,
                                      kiln_dtype *out) {
  int64_t p = 0;
  if (ctx->node->opset >= 23) KILN_TRY(kiln_node_int(ctx->node, "precision", 0, &p));
  if (p && (!kiln_dtype_valid((int)p) || !kiln_dtype_is_float((kiln_dtype)p)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "precision %lld is not a float type",
                           (long long)p);
  *out = p ? (kiln_dtype)p : scale->dtype;
  return KILN_OK;
}

static void quantize_store(kiln_tensor *y, int64_t i, double q, double zpv, bool saturate) {
  int64_t lo, hi;
  if (quant_int_range(y->dtype, &lo, &hi)) {
    /* nearbyint(q) + zp, then saturate: exact in double for these ranges. */
    double r = isnan(q) ? NAN : nearbyint(q) + zpv;
    kiln_store_i64(y->dtype, y->data, (size_t)i, quant_round_sat(r, lo, hi));
  } else if (quant_is_f8(y->dtype)) {
    ((uint8_t *)y->data)[i] = kiln_f64_to_f8(y->dtype, q + zpv, saturate);
  } else { /* float4e2m1 */
    ((uint8_t *)y->data)[i] = kiln_f64_to_f4e2m1(q + zpv, saturate);
  }
}

static kiln_status eval_quantize(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *scale, *zp = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &scale));
  KILN_TRY(kiln_kern_need_float(ctx, x, "x"));
  KILN_TRY(kiln_kern_need_float(ctx, scale, "y_scale"));
  KILN_TRY(check_zp_shape(ctx, scale, zp));
  kiln_dtype yt, prec;
  KILN_TRY(quantize_out_type(ctx, zp, &yt));
  KILN_TRY(quantize_precision(ctx, scale, &prec));
  kiln_attrs_cast ca;
  KILN_TRY(kiln_attrs_cast_decode(ctx->node, &ca));
  bool sat = ca.saturate;
  qmap m;
  KILN_TRY(qmap_init(ctx, x, scale, &m));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, yt, x->rank, x->dims, &y));
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t k = qmap_index(&m, i);
    double xv = kiln_kern_round_to(prec, kiln_load_f64(x->dtype, x->data, (size_t)i));
    double s = kiln_kern_round_to(prec, kiln_load_f64(scale->dtype, scale->data, (size_t)k));
    double q = kiln_kern_round_to(prec, xv / s);
    double zpv = zp ? kiln_load_f64(zp->dtype, zp->data, (size_t)k) : 0.0;
    quantize_store(y, i, q, zpv, sat);
  }
  return KILN_OK;
}

/* ---- DequantizeLinear ---- */
static kiln_status dequantize_out_type(const kiln_eval_ctx *ctx, const kiln_tensor *scale,
                                       kiln_dtype *out) {
  int64_t odt = 0;
  if (ctx->node->opset >= 23) KILN_TRY(kiln_node_int(ctx->node, "output_dtype", 0, &odt));
  if (odt && (!kiln_dtype_valid((int)odt) || !kiln_dtype_is_float((kiln_dtype)odt)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output_dtype %lld is not a float type",
                           (long long)odt);
  *out = odt ? (kiln_dtype)odt : scale->dtype;
  return KILN_OK;
}

static kiln_status eval_dequantize(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *scale, *zp = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &scale));
  KILN_TRY(kiln_kern_need_float(ctx, scale, "x_scale"));
  KILN_TRY(check_zp_shape(ctx, scale, zp));
  int64_t lo, hi;
  bool is_int = quant_int_range(x->dtype, &lo, &hi);
  if (!is_int && !quant_is_f8(x->dtype) && x->dtype != KILN_F4E2M1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "x of type %s cannot be dequantized",
                           kiln_dtype_name(x->dtype));
  if (zp && zp->dtype != x->dtype)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "zero point type %s differs from x type %s",
                           kiln_dtype_name(zp->dtype), kiln_dtype_name(x->dtype));
  kiln_dtype yt;
  KILN_TRY(dequantize_out_type(ctx, scale, &yt));
  qmap m;
  KILN_TRY(qmap_init(ctx, x, scale, &m));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, yt, x->rank, x->dims, &y));
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t k = qmap_index(&m, i);
    double d;
    if (is_int) { /* exact integer difference */
      int64_t zv = zp ? kiln_load_i64(zp->dtype, zp->data, (size_t)k) : 0;
      d = (double)(kiln_load_i64(x->dtype, x->data, (size_t)i) - zv);
    } else {
      double zv = zp ? kiln_load_f64(zp->dtype, zp->data, (size_t)k) : 0.0;
      d = kiln_load_f64(x->dtype, x->data, (size_t)i) - zv;
    }
    double s = kiln_load_f64(scale->dtype, scale->data, (size_t)k);
    kiln_store_f64(yt, y->data, (size_t)i, d * s);
  }
  return KILN_OK;
}

/* ---- DynamicQuantizeLinear ----
 * Defined on float32 input; computed in float32 like the ONNX reference so that the
 * scale and zero point match bit for bit:
 *   scale = (max(0, max x) - min(0, min x)) / 255  (1/255 when both are 0)
 *   zp = rint(clamp(-min / scale, 0, 255)), y = clamp(rint(x / scale) + zp, 0, 255) */
static kiln_status eval_dynamic_quantize(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_kern_need_float(ctx, x, "x"));
  float mx = 0, mn = 0;
  for (int64_t i = 0; i < x->numel; i++) {
    float v = (float)kiln_load_f64(x->dtype, x->data, (size_t)i);
    if (isnan(v)) continue;
    mx = v > mx ? v : mx;
    mn = v < mn ? v : mn;
  }
  float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
  float zpf = 0.0f - mn / scale;
  zpf = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
  float zp = nearbyintf(zpf);
  kiln_tensor *y, *ys, *yz;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_U8, x->rank, x->dims, &y));
  for (int64_t i = 0; i < x->numel; i++) {
    float q = (float)kiln_load_f64(x->dtype, x->data, (size_t)i) / scale;
    ((uint8_t *)y->data)[i] = (uint8_t)quant_round_sat((double)nearbyintf(q) + zp, 0, 255);
  }
  KILN_TRY(kiln_eval_out(ctx, 1, x->dtype, 0, NULL, &ys));
  kiln_store_f64(ys->dtype, ys->data, 0, scale);
  KILN_TRY(kiln_eval_out(ctx, 2, KILN_U8, 0, NULL, &yz));
  ((uint8_t *)yz->data)[0] = (uint8_t)zp;
  return KILN_OK;
}

/* ---- quantization ---- */
static kiln_status infer_quantize(kiln_infer_ctx *ctx) {
  const kiln_type *zp = tin(ctx, 2);
  kiln_dtype dt = zp ? zp->dtype : valid_dtype(attr_int(ctx, "output_dtype", 0), KILN_U8);
  set_like(ctx, 0, dt, tin(ctx, 0));
  return KILN_OK;
}

static kiln_status infer_dequantize(kiln_infer_ctx *ctx) {
  const kiln_type *s = tin(ctx, 1);
  if (!s) return KILN_OK;
  set_like(ctx, 0, valid_dtype(attr_int(ctx, "output_dtype", 0), s->dtype), tin(ctx, 0));
  return KILN_OK;
}

static kiln_status infer_dynamic_quantize(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin(ctx, 0);
  if (!x) return KILN_OK;
  set_like(ctx, 0, KILN_U8, x);
  set_out(ctx, 1, x->dtype, 0, NULL);
  set_out(ctx, 2, KILN_U8, 0, NULL);
  return KILN_OK;
}

/* numpy matmul shape of a (input ia) and b (input ib); output dtype dt. */
static void matmul_shape(kiln_infer_ctx *ctx, int ia, int ib, kiln_dtype dt) {
  const kiln_type *a = tin_ranked(ctx, ia), *b = tin_ranked(ctx, ib);
  if (!a || !b || a->rank < 1 || b->rank < 1) return;
  int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
  int br = ra > rb ? ra : rb, r = 0;
  kiln_dim dims[KILN_MAX_RANK];
  if (br + 2 > KILN_MAX_RANK) return;
  for (int i = 0; i < br; i++) {
    kiln_dim da = dim_of(a, i - (br - ra)), db = dim_of(b, i - (br - rb));
    if (i - (br - ra) < 0) da = dval(1);
    if (i - (br - rb) < 0) db = dval(1);
    dims[r++] = da.value == 1 ? db : db.value == 1 ? da : dknown(da) ? da : db;
  }
  if (a->rank > 1) dims[r++] = a->dims[a->rank - 2];
  if (b->rank > 1) dims[r++] = b->dims[b->rank - 1];
  set_out(ctx, 0, dt, r, dims);
}

static kiln_status infer_qlinear_matmul(kiln_infer_ctx *ctx) {
  const kiln_type *yz = tin(ctx, 7);
  if (yz) matmul_shape(ctx, 0, 3, yz->dtype);
  return KILN_OK;
}

static kiln_status infer_qlinear_conv(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *w = tin_ranked(ctx, 3), *yz = tin(ctx, 7);
  if (!x || !w || !yz || x->rank < 3) return KILN_OK;
  kiln_dim dims[KILN_MAX_RANK];
  dims[0] = x->dims[0];
  dims[1] = w->dims[0];
  for (int i = 2; i < x->rank; i++) dims[i] = dunk(); /* spatial: see the kernel */
  set_out(ctx, 0, yz->dtype, x->rank, dims);
  return KILN_OK;
}

void kiln_ops_register_quant(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_QuantizeLinear, eval_quantize, 2, 3, 1, 1);
  kiln_kern_set(table, KILN_OP_DequantizeLinear, eval_dequantize, 2, 3, 1, 1);
  kiln_kern_set(table, KILN_OP_DynamicQuantizeLinear, eval_dynamic_quantize, 1, 1, 3, 3);
  kiln_quant_register_qlinear(table);
  table[KILN_OP_QuantizeLinear].infer = infer_quantize;
  table[KILN_OP_DequantizeLinear].infer = infer_dequantize;
  table[KILN_OP_DynamicQuantizeLinear].infer = infer_dynamic_quantize;
  table[KILN_OP_QLinearMatMul].infer = infer_qlinear_matmul;
  table[KILN_OP_QLinearConv].infer = infer_qlinear_conv;
}
