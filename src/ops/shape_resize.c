/* Resize (10, 11, 13, 18, 19) and Upsample (1, 7, 9, 10).
 *
 * Follows the ONNX reference implementation: interpolation is separable, one
 * axis at a time (in the order of `axes`, else 0..r-1, skipping axes left
 * unchanged), in double, and the result is cast back with saturation (integers
 * round half to even). For each output coordinate y of an axis of input extent
 * W and scale s, the source coordinate x is given by
 * coordinate_transformation_mode, where the "output width" is s*W as a real
 * number. With b = floor(x) (x-1 when x is an integer) and r = x - b in (0, 1],
 * an n-tap kernel reads the samples b+1-n/2 .. b+n/2, clamped to the edges:
 *   linear: (1-r, r); cubic: Keys with cubic_coeff_a; with antialias
 * (downscaling), the linear or cubic kernel is stretched by 1/s and normalized.
 * exclude_outside drops the taps outside [0, W) and renormalizes. Nearest picks
 * b or b+1 by nearest_mode. Resize-10 and Upsample use the legacy rules:
 * asymmetric coordinates, nearest = floor when upsampling and ceil when
 * downsampling (as ONNX Runtime). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

typedef enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;
typedef enum rs_coord {
  CT_HALF_PIXEL,
  CT_HALF_PIXEL_SYMMETRIC,
  CT_PYTORCH_HALF_PIXEL,
  CT_ALIGN_CORNERS,
  CT_ASYMMETRIC,
  CT_TF_CROP_AND_RESIZE,
  CT_TF_HALF_PIXEL_FOR_NN,
} rs_coord;
typedef enum rs_nearest {
  NM_PREFER_FLOOR,
  NM_PREFER_CEIL,
  NM_FLOOR,
  NM_CEIL,
  NM_LEGACY
} rs_nearest;

typedef struct rs_params {
  rs_mode mode;
  rs_coord coord;
  rs_nearest nearest;
  double cubic_a, extrapolation;
  bool exclude_outside, antialias;
  int rank, n_order;
  int order[KILN_MAX_RANK]; /* axes to resize, in processing order */
  double scale[KILN_MAX_RANK];
  int64_t out[KILN_MAX_RANK]; /* -1 when unknown (inference) */
  double roi_lo[KILN_MAX_RANK], roi_hi[KILN_MAX_RANK];
} rs_params;

static bool legacy(const kiln_node *n) {
  return n->op == KILN_OP_Upsample || n->opset < 11;
}

/* A string attribute (absent: the schema's default at the node's opset) among names[]. */
static kiln_status str_choice(const kiln_node *n, const char *attr, const char *const *names,
                              int count, int *out) {
  const char *s;
  KILN_TRY(kiln_attr_s(n, attr, &s));
  for (int i = 0; i < count; i++)
    if (!strcmp(s, names[i])) return *out = i, KILN_OK;
  return kiln_shape_err(n, "unknown %s '%s'", attr, s);
}

static kiln_status rs_attrs(const kiln_node *n, rs_params *p) {
  static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear", "bicubic"};
  static const char *const coords[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",  "align_corners",
      "asymmetric", "tf_crop_and_resize",   "tf_half_pixel_for_nn"};
  static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  int m, c = CT_ASYMMETRIC, nm = NM_LEGACY;
  int64_t ex = 0, aa = 0;
  float a = 0, ev = 0; /* Resize-11+ only (from the schema, below) */
  KILN_TRY(str_choice(n, "mode", modes, 5, &m));
  p->mode = m == 3 ? RS_LINEAR : m == 4 ? RS_CUBIC : (rs_mode)m;
  if (!legacy(n)) {
    KILN_TRY(str_choice(n, "coordinate_transformation_mode", coords, 7, &c));
    KILN_TRY(str_choice(n, "nearest_mode", nearests, 4, &nm));
    KILN_TRY(kiln_attr_f(n, "cubic_coeff_a", &a));
    KILN_TRY(kiln_attr_i(n, "exclude_outside", &ex));
    KILN_TRY(kiln_attr_f(n, "extrapolation_value", &ev));
    if (n->opset >= 18) KILN_TRY(kiln_attr_i(n, "antialias", &aa));
  }
  p->coord = (rs_coord)c;
  p->nearest = (rs_nearest)nm;
  p->cubic_a = a;
  p->extrapolation = ev;
  p->exclude_outside = ex != 0;
  p->antialias = aa != 0 && p->mode != RS_NEAREST;
  return KILN_OK;
}

/* The axes the scales/sizes/roi refer to (opset 18+ 'axes'); all axes
 * otherwise. */
static kiln_status rs_axes(const kiln_node *n, int rank, rs_params *p) {
  const int64_t *axes = NULL;
  int k = -1;
  if (!legacy(n) && n->opset >= 18) KILN_TRY(kiln_node_ints(n, "axes", &axes, &k));
  if (k < 0) {
    p->n_order = rank;
    for (int i = 0; i < rank; i++) p->order[i] = i;
    return KILN_OK;
  }
  bool seen[KILN_MAX_RANK] = {false};
  if (k > rank) return kiln_shape_err(n, "too many axes");
  for (int i = 0; i < k; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || seen[a])
      return kiln_shape_err(n, "axis %lld is out of range or repeated", (long long)axes[i]);
    seen[a] = true;
    p->order[i] = (int)a;
  }
  p->n_order = k;
  return KILN_OK;
}

static kiln_status load_f64s(const kiln_node *n, const kiln_tensor *t, const char *what, int want,
                             double *out) {
  kiln_dtype_class c = kiln_dtype_class_of(t->dtype);
  if (c == KILN_CLASS_NONE || c == KILN_CLASS_STRING || t->rank > 1 || t->numel != want)
    return kiln_shape_err(n, "%s must be a 1-D numeric tensor of %d elements", what, want);
  for (int i = 0; i < want; i++) out[i] = kiln_load_f64(t->dtype, t->data, (size_t)i);
  return KILN_OK;
}

/* Scales of the legacy forms: Upsample-1 height/width_scale, Upsample-7
 * 'scales', else the scales input. */
static kiln_status legacy_scales(const kiln_node *n, int rank, const kiln_tensor *st, double *s) {
  if (n->op == KILN_OP_Upsample && n->opset < 7) {
    float h, w; /* required in Upsample-1 */
    KILN_TRY(kiln_attr_f(n, "height_scale", &h));
    KILN_TRY(kiln_attr_f(n, "width_scale", &w));
    if (rank != 4) return kiln_shape_err(n, "input must be 4-D");
    s[0] = s[1] = 1.0;
    s[2] = h;
    s[3] = w;
    return KILN_OK;
  }
  if (n->op == KILN_OP_Upsample && n->opset < 9) {
    const float *f;
    int k;
    KILN_TRY(kiln_node_floats(n, "scales", &f, &k));
    if (k != rank) return kiln_shape_err(n, "scales has %d entries for rank %d", k, rank);
    for (int i = 0; i < k; i++) s[i] = f[i];
    return KILN_OK;
  }
  if (!st) return kiln_unsupported("scales unknown");
  return load_f64s(n, st, "scales", rank, s);
}

static kiln_status out_from_scale(const kiln_node *n, double s, int64_t in, int64_t *out) {
  if (!(s > 0) || s > 1e12) return kiln_shape_err(n, "scale %g is invalid", s);
  if (in < 0) return *out = -1, KILN_OK;
  double v = floor(s * (double)in);
  if (v > (double)(1LL << 40)) return kiln_shape_err(n, "output extent is too large");
  *out = (int64_t)v;
  return KILN_OK;
}

/* Output sizes from the sizes input, with keep_aspect_ratio_policy (opset 18+).
 */
static kiln_status from_sizes(const kiln_node *n, const int64_t *in, const kiln_tensor *sz,
                              rs_params *p) {
  int k = p->n_order;
  if (!kiln_dtype_is_int(sz->dtype) || sz->rank > 1 || sz->numel != k)
    return kiln_shape_err(n, "sizes must be a 1-D integer tensor of %d elements", k);
  const char *pol = "stretch"; /* before opset 18: no policy */
  if (n->opset >= 18) KILN_TRY(kiln_attr_s(n, "keep_aspect_ratio_policy", &pol));
  bool lo = !strcmp(pol, "not_larger"), hi = !strcmp(pol, "not_smaller");
  if (!lo && !hi && strcmp(pol, "stretch"))
    return kiln_shape_err(n, "unknown keep_aspect_ratio_policy '%s'", pol);
  double agg = lo ? INFINITY : 0;
  for (int i = 0; i < k; i++) {
    int d = p->order[i];
    int64_t v = kiln_load_i64(sz->dtype, sz->data, (size_t)i);
    if (v < 0 || v > (1LL << 40))
      return kiln_shape_err(n, "sizes[%d] = %lld is invalid", i, (long long)v);
    p->out[d] = v;
    p->scale[d] = in[d] > 0 ? (double)v / (double)in[d] : 1.0;
    if (in[d] < 0 && (lo || hi)) return kiln_unsupported("input extent unknown");
    agg = lo ? fmin(agg, p->scale[d]) : fmax(agg, p->scale[d]);
  }
  for (int i = 0; (lo || hi) && i < k; i++) {
    int d = p->order[i];
    p->scale[d] = agg;
    p->out[d] = (int64_t)(agg * (double)in[d] + 0.5);
  }
  return KILN_OK;
}

/* Fills p from the node and its inputs. in: input dims (-1 unknown, for
 * inference); roi/scales/sizes: the inputs (NULL or empty: absent; scales is
 * input 1 in the legacy forms). */
static kiln_status rs_params_get(const kiln_node *n, int rank, const int64_t *in,
                                 const kiln_tensor *roi, const kiln_tensor *scales,
                                 const kiln_tensor *sizes, rs_params *p) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  KILN_TRY(rs_attrs(n, p));
  KILN_TRY(rs_axes(n, rank, p));
  for (int d = 0; d < rank; d++) {
    p->scale[d] = 1.0;
    p->out[d] = in[d];
    p->roi_lo[d] = 0.0;
    p->roi_hi[d] = 1.0;
  }
  double s[KILN_MAX_RANK];
  if (legacy(n)) {
    KILN_TRY(legacy_scales(n, rank, scales, s));
  } else if (sizes && sizes->numel > 0) {
    if (scales && scales->numel > 0) return kiln_shape_err(n, "both scales and sizes are given");
    KILN_TRY(from_sizes(n, in, sizes, p));
  } else if (scales && scales->numel > 0) {
    KILN_TRY(load_f64s(n, scales, "scales", p->n_order, s));
  } else {
    return kiln_shape_err(n, "needs scales or sizes");
  }
  if (legacy(n) || !(sizes && sizes->numel > 0)) {
    for (int i = 0; i < p->n_order; i++) {
      int d = p->order[i];
      p->scale[d] = s[i];
      KILN_TRY(out_from_scale(n, s[i], in[d], &p->out[d]));
    }
  }
  if (p->coord == CT_TF_CROP_AND_RESIZE) {
    double r[2 * KILN_MAX_RANK];
    if (!roi || roi->numel == 0) return kiln_shape_err(n, "tf_crop_and_resize needs roi");
    KILN_TRY(load_f64s(n, roi, "roi", 2 * p->n_order, r));
    for (int i = 0; i < p->n_order; i++) {
      p->roi_lo[p->order[i]] = r[i];
      p->roi_hi[p->order[i]] = r[p->n_order + i];
    }
  }
  return KILN_OK;
}

/* ---- per-axis source coordinates and kernels ---- */
static double src_coord(const rs_params *p, int d, int64_t W, int64_t out_n, double y,
                        bool *extrap) {
  double s = p->scale[d], ow = s * (double)W, x;
  *extrap = false;
  switch (p->coord) {
  case CT_ALIGN_CORNERS: return ow == 1 ? 0.0 : y * (double)(W - 1) / (ow - 1);
  case CT_ASYMMETRIC: return y / s;
  case CT_PYTORCH_HALF_PIXEL: return ow == 1 ? -0.5 : (y + 0.5) / s - 0.5;
  case CT_TF_HALF_PIXEL_FOR_NN: return (y + 0.5) / s;
  case CT_HALF_PIXEL_SYMMETRIC: {
    double adj = (double)out_n / ow, off = (double)W / 2 * (1 - adj);
    return off + (y + 0.5) / s - 0.5;
  }
  case CT_TF_CROP_AND_RESIZE: {
    double lo = p->roi_lo[d], hi = p->roi_hi[d];
    x = ow == 1 ? (hi - lo) * (double)(W - 1) / 2 : y * (hi - lo) * (double)(W - 1) / (ow - 1);
    x += lo * (double)(W - 1);
    *extrap = x < 0 || x > (double)(W - 1);
    return x;
  }
  default: return (y + 0.5) / s - 0.5;
  }
}

static int64_t clamp_idx(int64_t i, int64_t W) {
  return i < 0 ? 0 : i >= W ? W - 1 : i;
}

/* Nearest source index of x (-1 when extrapolated). */
static int64_t nearest_index(const rs_params *p, int d, double x, int64_t W) {
  if (p->nearest == NM_LEGACY) {
    double v = p->scale[d] < 1 ? ceil(x) : trunc(x);
    return clamp_idx(v < -1e15 ? -1 : v > 1e15 ? W : (int64_t)v, W);
  }
  double fl = floor(x);
  if (!(fabs(fl) < 1e15)) return fl < 0 ? 0 : W - 1;
  int64_t b = (int64_t)fl;
  double r = x - fl;
  bool up = r == 0                          ? false
            : p->nearest == NM_PREFER_FLOOR ? r > 0.5
            : p->nearest == NM_PREFER_CEIL  ? r >= 0.5
                                            : p->nearest == NM_CEIL;
  return clamp_idx(b + up, W);
}

static double cubic_w(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

/* Number of taps of the linear/cubic kernel of axis d. */
static int tap_count(const rs_params *p, int d) {
  if (!p->antialias) return p->mode == RS_CUBIC ? 4 : 2;
  double s = fmin(p->scale[d], 1.0);
  double start = floor((p->mode == RS_CUBIC ? -2.0 : -1.0) / s) + 1;
  return (int)(2 - 2 * start);
}

/* Weights w[0..n) for ratio r; sample j is at b + 1 - n/2 + j. */
static void tap_weights(const rs_params *p, int d, double r, int n, double *w) {
  double A = p->cubic_a;
  if (!p->antialias && p->mode == RS_LINEAR) {
    w[0] = 1 - r;
    w[1] = r;
    return;
  }
  if (!p->antialias) { /* the reference's expanded forms, for identical rounding
                        */
    w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
    w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
    w[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
    w[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
    return;
  }
  double s = fmin(p->scale[d], 1.0), sum = 0;
  int start = 1 - n / 2;
  for (int j = 0; j < n; j++) {
    double a = (start + j - r) * s;
    w[j] = p->mode == RS_CUBIC ? cubic_w(a, A) : fmin(fmax(1 - fabs(a), 0), 1);
    sum += w[j];
  }
  for (int j = 0; j < n; j++) w[j] /= sum;
}

typedef struct rs_taps {
  int n;
  int64_t *idx; /* out_n * n source indices (clamped) */
  double *w;    /* out_n * n weights */
  bool *extrap; /* out_n */
} rs_taps;

static kiln_status taps_make(const kiln_eval_ctx *ctx, const rs_params *p, int d, int64_t W,
                             int64_t out_n, rs_taps *t) {
  memset(t, 0, sizeof *t);
  t->n = tap_count(p, d);
  if (t->n < 1 || t->n > 1 << 20)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "scale %g gives too large a kernel", p->scale[d]);
  int64_t cnt;
  if (kiln_mul_overflow_i64(out_n, t->n, &cnt))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel too large");
  KILN_TRY(kiln_shape_alloc(ctx, cnt, sizeof *t->idx, (void **)&t->idx));
  KILN_TRY(kiln_shape_alloc(ctx, cnt, sizeof *t->w, (void **)&t->w));
  KILN_TRY(kiln_shape_alloc(ctx, out_n, sizeof *t->extrap, (void **)&t->extrap));
  for (int64_t y = 0; y < out_n; y++) {
    double x = src_coord(p, d, W, out_n, (double)y, &t->extrap[y]), fl = floor(x);
    if (!(fabs(x) < 1e15)) fl = x = 0, t->extrap[y] = true;
    double b = x == fl ? x - 1 : fl, r = x - b, sum = 0;
    int64_t *ix = t->idx + y * t->n;
    double *w = t->w + y * t->n;
    tap_weights(p, d, r, t->n, w);
    for (int j = 0; j < t->n; j++) {
      ix[j] = (int64_t)b + 1 - t->n / 2 + j;
      if (p->exclude_outside && (ix[j] < 0 || ix[j] >= W)) w[j] = 0;
      sum += w[j];
      ix[j] = clamp_idx(ix[j], W);
    }
    if (p->exclude_outside)
      for (int j = 0; j < t->n; j++) w[j] /= sum == 0 ? 1 : sum;
  }
  return KILN_OK;
}

static void taps_free(rs_taps *t) {
  free(t->idx);
  free(t->w);
  free(t->extrap);
}

/* Resizes axis d of the double array *buf (dims cur) to out_n; replaces *buf.
 */
static kiln_status resize_axis(const kiln_eval_ctx *ctx, const rs_params *p, int d, int64_t *cur,
                               double **buf) {
  int64_t W = cur[d], out_n = p->out[d], outer = 1, inner = 1, total;
  for (int i = 0; i < d; i++) outer *= cur[i];
  for (int i = d + 1; i < p->rank; i++) inner *= cur[i];
  if (kiln_mul_overflow_i64(outer * inner, out_n, &total))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output too large");
  double *dst;
  rs_taps t;
  KILN_TRY(kiln_shape_alloc(ctx, total, sizeof *dst, (void **)&dst));
  kiln_status st = taps_make(ctx, p, d, W, out_n, &t);
  for (int64_t o = 0; !st && o < outer; o++)
    for (int64_t y = 0; y < out_n; y++) {
      const int64_t *ix = t.idx + y * t.n;
      const double *w = t.w + y * t.n, *src = *buf + o * W * inner;
      double *q = dst + (o * out_n + y) * inner;
      for (int64_t i = 0; i < inner; i++) {
        double acc = 0;
        for (int j = 0; j < t.n; j++) acc += w[j] * src[ix[j] * inner + i];
        q[i] = t.extrap[y] ? p->extrapolation : acc;
      }
    }
  taps_free(&t);
  if (st) {
    free(dst);
    return st;
  }
  free(*buf);
  *buf = dst;
  cur[d] = out_n;
  return KILN_OK;
}

static bool axis_is_identity(const rs_params *p, int d, int64_t W) {
  bool roi_id = p->coord != CT_TF_CROP_AND_RESIZE ||
                (fabs(p->roi_lo[d]) <= 1e-9 && fabs(p->roi_hi[d] - 1) <= 1e-9);
  return fabs(p->scale[d] - 1.0) <= 1e-9 && p->out[d] == W && roi_id;
}

/* The saturating cast of the reference: integers round half to even and clamp;
 * floats clamp to the finite range. */
static double saturate(kiln_dtype dt, double v) {
  if (isnan(v)) return v;
  double lo, hi;
  switch (dt) {
  case KILN_F32: lo = -3.4028234663852886e38, hi = -lo; break;
  case KILN_F16: lo = -65504, hi = 65504; break;
  case KILN_BF16: lo = -3.3895313892515355e38, hi = -lo; break;
  case KILN_I8: lo = -128, hi = 127; break;
  case KILN_U8: lo = 0, hi = 255; break;
  case KILN_I16: lo = -32768, hi = 32767; break;
  case KILN_U16: lo = 0, hi = 65535; break;
  case KILN_I32: lo = -2147483648.0, hi = 2147483647.0; break;
  case KILN_U32: lo = 0, hi = 4294967295.0; break;
  case KILN_I64: lo = -9223372036854775808.0, hi = 9223372036854774784.0; break;
  case KILN_U64: lo = 0, hi = 18446744073709549568.0; break;
  case KILN_I4: lo = -8, hi = 7; break;
  case KILN_U4: lo = 0, hi = 15; break;
  default: return v;
  }
  if (kiln_dtype_is_int(dt)) v = nearbyint(v);
  return v < lo ? lo : v > hi ? hi : v;
}

static kiln_status resize_linear(kiln_eval_ctx *ctx, const kiln_tensor *x, const rs_params *p) {
  int64_t out_numel;
  KILN_TRY(kiln_shape_numel(x->rank, p->out, &out_numel));
  if (out_numel == 0) return kiln_eval_out(ctx, 0, x->dtype, x->rank, p->out, NULL);
  double *buf;
  int64_t cur[KILN_MAX_RANK];
  memcpy(cur, x->dims, sizeof cur);
  KILN_TRY(kiln_shape_alloc(ctx, x->numel, sizeof *buf, (void **)&buf));
  for (int64_t i = 0; i < x->numel; i++) buf[i] = kiln_load_f64(x->dtype, x->data, (size_t)i);
  kiln_status st = KILN_OK;
  for (int k = 0; k < p->n_order && !st; k++) {
    int d = p->order[k];
    if (axis_is_identity(p, d, cur[d])) continue;
    if (cur[d] == 0 && p->out[d] > 0)
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot resize the empty axis %d", d);
    else st = resize_axis(ctx, p, d, cur, &buf);
  }
  kiln_tensor *o;
  if (!st) st = kiln_eval_out(ctx, 0, x->dtype, x->rank, p->out, &o);
  for (int64_t i = 0; !st && i < o->numel; i++)
    kiln_store_f64(x->dtype, o->data, (size_t)i, saturate(x->dtype, buf[i]));
  free(buf);
  return st;
}

/* Nearest: exact copies through per-axis index maps; extrapolated points get
 * the value. */
static kiln_status resize_nearest(kiln_eval_ctx *ctx, const kiln_tensor *x, const rs_params *p) {
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, p->out, &o));
  if (o->numel == 0) return KILN_OK;
  int64_t *maps[KILN_MAX_RANK] = {NULL}, *map = NULL, st[KILN_MAX_RANK];
  kiln_status s = kiln_shape_alloc(ctx, o->numel, sizeof *map, (void **)&map);
  for (int d = 0; d < x->rank && !s; d++) {
    int64_t W = x->dims[d];
    s = kiln_shape_alloc(ctx, p->out[d], sizeof **maps, (void **)&maps[d]);
    if (!s && W == 0 && p->out[d] > 0)
      s = kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot resize the empty axis %d", d);
    for (int64_t y = 0; !s && y < p->out[d]; y++) {
      bool ex;
      double xo =
          axis_is_identity(p, d, W) ? (double)y : src_coord(p, d, W, p->out[d], (double)y, &ex);
      if (axis_is_identity(p, d, W)) ex = false;
      maps[d][y] = ex ? -1 : nearest_index(p, d, xo, W);
    }
  }
  if (!s) {
    kiln_strides(x->rank, x->dims, st);
    kiln_shape_axis_maps(x->rank, p->out, maps, st, o->numel, map);
    if (x->dtype != KILN_STRING)
      for (int64_t i = 0; i < o->numel; i++)
        kiln_store_f64(x->dtype, o->data, (size_t)i, saturate(x->dtype, p->extrapolation));
    kiln_shape_gather(o, x, map);
    kiln_shape_fix_strings(o);
  }
  for (int d = 0; d < x->rank; d++) free(maps[d]);
  free(map);
  return s;
}

static void rs_inputs(const kiln_node *n, const kiln_tensor *const *in, int n_in,
                      const kiln_tensor **roi, const kiln_tensor **scales,
                      const kiln_tensor **sizes) {
  *roi = *scales = *sizes = NULL;
  if (legacy(n)) {
    *scales = n_in > 1 ? in[1] : NULL;
    return;
  }
  *roi = n_in > 1 ? in[1] : NULL;
  *scales = n_in > 2 ? in[2] : NULL;
  *sizes = n_in > 3 ? in[3] : NULL;
}

static kiln_status eval_resize(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *in[4] = {NULL, NULL, NULL, NULL}, *roi, *scales, *sizes;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  for (int i = 1; i < 4 && i < ctx->n_in; i++) in[i] = kiln_eval_in(ctx, i);
  rs_inputs(ctx->node, in, ctx->n_in, &roi, &scales, &sizes);
  kiln_dtype_class c = kiln_dtype_class_of(x->dtype);
  rs_params p;
  KILN_TRY(rs_params_get(ctx->node, x->rank, x->dims, roi, scales, sizes, &p));
  if (p.mode == RS_NEAREST) return resize_nearest(ctx, x, &p);
  if (c == KILN_CLASS_NONE || c == KILN_CLASS_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "linear and cubic modes need numeric data");
  return resize_linear(ctx, x, &p);
}

static kiln_status infer_resize(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, NULL);
  if (x->rank < 0) return KILN_OK;
  const kiln_tensor *roi, *scales, *sizes;
  for (int i = 1; i < ctx->n_in; i++)
    if (ctx->in[i] && !ctx->cin[i]) return KILN_OK; /* a parameter of unknown value */
  rs_inputs(ctx->node, ctx->cin, ctx->n_in, &roi, &scales, &sizes);
  int64_t in[KILN_MAX_RANK];
  for (int d = 0; d < x->rank; d++) in[d] = x->dims[d].value;
  rs_params p;
  kiln_status st = rs_params_get(ctx->node, x->rank, in, roi, scales, sizes, &p);
  if (st && kiln_status_code(st) == KILN_ERR_UNSUPPORTED) {
    kiln_status_free(st);
    return KILN_OK;
  }
  KILN_TRY(st);
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    d[i] = p.out[i] == in[i] ? x->dims[i] : kiln_shape_dim(p.out[i]);
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, d);
  return KILN_OK;
}

void kiln_shape_register_resize(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_Resize, eval_resize, infer_resize, 1, 4, 1, 1);
  kiln_shape_set(t, KILN_OP_Upsample, eval_resize, infer_resize, 1, 2, 1, 1);
}
