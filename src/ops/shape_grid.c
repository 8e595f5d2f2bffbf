/* GridSample (16, 20, 22) and AffineGrid (20), in double.
 *
 * GridSample: the last grid axis holds normalized coordinates in [-1, 1], x
 * first (the innermost spatial axis). They are mapped to pixel coordinates
 * (align_corners: -1 and 1 are the centers of the corner pixels; else their
 * outer edges), then, out of the borders, clamped (border) or reflected
 * (reflection) as PyTorch does. Nearest rounds half to even; linear and cubic
 * (Keys, a = -0.75) combine 2 or 4 taps per axis, where a tap outside the input
 * reads 0 (zeros), the edge (border) or its reflection (reflection). Opset 16
 * names the modes bilinear/bicubic, 20+ linear/cubic: both are accepted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

typedef enum gs_mode { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

typedef struct gs_params {
  gs_mode mode;
  gs_pad pad;
  bool align;
  int r; /* spatial rank */
  int64_t dims[KILN_MAX_RANK];
  double lo[KILN_MAX_RANK], hi[KILN_MAX_RANK]; /* borders per spatial axis */
} gs_params;

static kiln_status gs_attrs(const kiln_eval_ctx *ctx, gs_params *p) {
  const char *m, *pd;
  int64_t a;
  /* defaults from the schema: mode "bilinear" before opset 20, "linear" from it */
  KILN_TRY(kiln_attr_s(ctx->node, "mode", &m));
  KILN_TRY(kiln_attr_s(ctx->node, "padding_mode", &pd));
  KILN_TRY(kiln_attr_i(ctx->node, "align_corners", &a));
  if (!strcmp(m, "nearest")) p->mode = GS_NEAREST;
  else if (!strcmp(m, "linear") || !strcmp(m, "bilinear")) p->mode = GS_LINEAR;
  else if (!strcmp(m, "cubic") || !strcmp(m, "bicubic")) p->mode = GS_CUBIC;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown mode '%s'", m);
  if (!strcmp(pd, "zeros")) p->pad = GS_ZEROS;
  else if (!strcmp(pd, "border")) p->pad = GS_BORDER;
  else if (!strcmp(pd, "reflection")) p->pad = GS_REFLECTION;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown padding_mode '%s'", pd);
  p->align = a != 0;
  return KILN_OK;
}

/* Reflects x into [lo, hi] by the nearer border, repeatedly. */
static double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  double dx = x < lo ? lo - x : x - hi, n = floor(dx / rng), r = dx - n * rng;
  bool even = fmod(n, 2.0) == 0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

/* The input index that tap index i of axis k reads; -1 for a zero. */
static int64_t tap_index(const gs_params *p, int k, int64_t i) {
  int64_t D = p->dims[k];
  if (p->pad == GS_ZEROS) return i >= 0 && i < D ? i : -1;
  if (p->pad == GS_REFLECTION) i = (int64_t)reflect((double)i, p->lo[k], p->hi[k]);
  return i < 0 ? 0 : i >= D ? D - 1 : i;
}

static void cubic_coeffs(double t, double *c) {
  const double A = -0.75;
  double u = t + 1, v = 1 - t, w = 2 - t;
  c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
  c[3] = ((A * w - 5 * A) * w + 8 * A) * w - 4 * A;
}

/* Pixel coordinate of axis k for normalized v, with border/reflection applied.
 */
static double gs_coord(const gs_params *p, int k, double v) {
  double D = (double)p->dims[k];
  double x = p->align ? (v + 1) / 2 * (D - 1) : ((v + 1) * D - 1) / 2;
  if (!isfinite(x)) x = -1e9;
  x = fmax(fmin(x, 1e9), -1e9);
  if (p->mode == GS_NEAREST) x = nearbyint(x);
  if (x < p->lo[k] || x > p->hi[k]) {
    if (p->pad == GS_BORDER) x = fmax(0, fmin(x, D - 1));
    else if (p->pad == GS_REFLECTION) x = reflect(x, p->lo[k], p->hi[k]);
  }
  return x;
}

/* One output value: the interpolation at pixel coordinates x[0..r) of the plane
 * img. */
static double gs_sample(const gs_params *p, const double *img, const int64_t *st, const double *x) {
  int n = p->mode == GS_NEAREST ? 1 : p->mode == GS_LINEAR ? 2 : 4;
  int64_t base[KILN_MAX_RANK];
  double w[KILN_MAX_RANK][4];
  for (int k = 0; k < p->r; k++) {
    double f = p->mode == GS_NEAREST ? x[k] : floor(x[k]), t = x[k] - f;
    base[k] = (int64_t)f - (p->mode == GS_CUBIC);
    if (p->mode == GS_NEAREST) w[k][0] = 1;
    else if (p->mode == GS_LINEAR) w[k][0] = 1 - t, w[k][1] = t;
    else cubic_coeffs(t, w[k]);
  }
  int j[KILN_MAX_RANK] = {0};
  double acc = 0;
  for (;;) {
    double wt = 1;
    int64_t off = 0;
    for (int k = 0; k < p->r && off >= 0; k++) {
      int64_t i = tap_index(p, k, base[k] + j[k]);
      off = i < 0 ? -1 : off + i * st[k];
      wt *= w[k][j[k]];
    }
    if (off >= 0) acc += wt * img[off];
    int k = p->r - 1;
    while (k >= 0 && ++j[k] == n) j[k--] = 0;
    if (k < 0) break;
  }
  return acc;
}

static kiln_status eval_grid_sample(kiln_eval_ctx *ctx) {
  const kiln_tensor *X, *G;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &X));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &G));
  gs_params p;
  memset(&p, 0, sizeof p);
  KILN_TRY(gs_attrs(ctx, &p));
  p.r = X->rank - 2;
  bool ok = p.r >= 1 && G->rank == X->rank && G->dims[0] == X->dims[0] &&
            G->dims[G->rank - 1] == p.r && kiln_dtype_is_float(X->dtype) &&
            kiln_dtype_is_float(G->dtype);
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "needs float X [N,C,D1..Dr] and grid [N,O1..Or,r] (r >= 1)");
  int64_t dims[KILN_MAX_RANK], st[KILN_MAX_RANK];
  dims[0] = X->dims[0];
  dims[1] = X->dims[1];
  for (int k = 0; k < p.r; k++) {
    p.dims[k] = X->dims[2 + k];
    p.lo[k] = p.align ? 0 : -0.5;
    p.hi[k] = p.align ? (double)p.dims[k] - 1 : (double)p.dims[k] - 0.5;
    dims[2 + k] = G->dims[1 + k];
  }
  kiln_strides(p.r, p.dims, st);
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, X->dtype, X->rank, dims, &o));
  double *img;
  KILN_TRY(kiln_shape_alloc(ctx, X->numel, sizeof *img, (void **)&img));
  for (int64_t i = 0; i < X->numel; i++) img[i] = kiln_load_f64(X->dtype, X->data, (size_t)i);
  int64_t N = X->dims[0], C = X->dims[1], plane = 1, pts = 1;
  for (int k = 0; k < p.r; k++) plane *= p.dims[k], pts *= dims[2 + k];
  for (int64_t n = 0; n < N; n++)
    for (int64_t q = 0; q < pts; q++) {
      double x[KILN_MAX_RANK];
      int64_t g = (n * pts + q) * p.r;
      for (int k = 0; k < p.r; k++)
        x[k] = gs_coord(&p, k, kiln_load_f64(G->dtype, G->data, (size_t)(g + p.r - 1 - k)));
      for (int64_t c = 0; c < C; c++) {
        double v = plane ? gs_sample(&p, img + (n * C + c) * plane, st, x) : 0;
        kiln_store_f64(X->dtype, o->data, (size_t)((n * C + c) * pts + q), v);
      }
    }
  free(img);
  return KILN_OK;
}

static kiln_status infer_grid_sample(kiln_infer_ctx *ctx) {
  const kiln_type *X = kiln_shape_in_type(ctx, 0), *G = kiln_shape_in_type(ctx, 1);
  if (!X) return KILN_OK;
  int r = X->rank >= 0 ? X->rank : G ? G->rank : -1;
  kiln_shape_out_type(ctx, 0, X->dtype, r, NULL);
  if (r < 3) return KILN_OK;
  kiln_type *o = &ctx->out[0];
  if (X->rank == r) o->dims[0] = X->dims[0], o->dims[1] = X->dims[1];
  if (G && G->rank == r)
    for (int k = 1; k < r - 1; k++) o->dims[k + 1] = G->dims[k];
  if (G && G->rank == r && o->dims[0].value < 0) o->dims[0] = G->dims[0];
  return KILN_OK;
}

/* ---- AffineGrid: grid[n, ..., :] = theta[n] @ [x, y, (z,) 1] over the base
 * grid ---- */
static double base_coord(int64_t i, int64_t S, bool align) {
  if (S <= 1) return 0.0;
  if (align) return -1.0 + 2.0 * (double)i / (double)(S - 1);
  double step = 2.0 / (double)S;
  return -1.0 + step / 2 + (double)i * step;
}

static kiln_status eval_affine_grid(kiln_eval_ctx *ctx) {
  const kiln_tensor *th, *sz;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &th));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &sz));
  int64_t align, *size;
  int k;
  KILN_TRY(kiln_attr_i(ctx->node, "align_corners", &align));
  KILN_TRY(kiln_shape_load_ints(ctx, sz, "size", &size, &k));
  int r = k - 2; /* spatial rank: 2 or 3 */
  bool ok = (r == 2 || r == 3) && kiln_dtype_is_float(th->dtype) && th->rank == 3 &&
            th->dims[0] == size[0] && th->dims[1] == r && th->dims[2] == r + 1;
  int64_t dims[5] = {size[0]};
  for (int i = 0; ok && i < r; i++) dims[1 + i] = size[2 + i];
  dims[r + 1] = r;
  free(size);
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "needs theta [N,2,3] with size [N,C,H,W] or [N,3,4] with [N,C,D,H,W]");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, th->dtype, r + 2, dims, &o));
  int64_t pts = 1;
  for (int i = 0; i < r; i++) pts *= dims[1 + i];
  for (int64_t n = 0; n < dims[0]; n++)
    for (int64_t q = 0; q < pts; q++) {
      double v[4] = {0, 0, 0, 1}; /* x (innermost axis), y, z, 1 */
      int64_t rem = q;
      for (int i = r - 1; i >= 0; i--) {
        int64_t S = dims[1 + i];
        v[r - 1 - i] = base_coord(rem % S, S, align != 0);
        rem /= S;
      }
      v[r] = 1;
      for (int a = 0; a < r; a++) {
        double acc = 0;
        for (int b = 0; b <= r; b++)
          acc += kiln_load_f64(th->dtype, th->data, (size_t)((n * r + a) * (r + 1) + b)) * v[b];
        kiln_store_f64(th->dtype, o->data, (size_t)((n * pts + q) * r + a), acc);
      }
    }
  return KILN_OK;
}

static kiln_status infer_affine_grid(kiln_infer_ctx *ctx) {
  const kiln_type *th = kiln_shape_in_type(ctx, 0);
  if (!th) return KILN_OK;
  int64_t size[8];
  int k;
  if (!kiln_shape_const_ints(ctx, 1, size, 8, &k) || (k != 4 && k != 5)) {
    const kiln_type *s = kiln_shape_in_type(ctx, 1);
    int r = s && s->rank == 1 && s->dims[0].value >= 4 ? (int)s->dims[0].value : -1;
    kiln_shape_out_type(ctx, 0, th->dtype, r, NULL);
    return KILN_OK;
  }
  kiln_dim d[5];
  d[0] = kiln_shape_dim(size[0]);
  for (int i = 2; i < k; i++) d[i - 1] = kiln_shape_dim(size[i]);
  d[k - 1] = kiln_shape_dim(k - 2);
  kiln_shape_out_type(ctx, 0, th->dtype, k, d);
  return KILN_OK;
}

void kiln_shape_register_grid(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_GridSample, eval_grid_sample, infer_grid_sample, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_AffineGrid, eval_affine_grid, infer_affine_grid, 2, 2, 1, 1);
}
