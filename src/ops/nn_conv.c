/* Conv, ConvInteger and ConvTranspose: direct convolution in double, no im2col.
 *
 * The loop nest is batch, output channel, input channel (of the group), kernel position, output
 * row (all spatial dims but the last), and innermost the last spatial dim, over the range of
 * output positions whose input position is inside the image (so padding costs nothing and the
 * inner loop has no branch). ConvInteger subtracts the zero points and sums exactly in double
 * (products of 8-bit values are exact and so are their sums below 2^53); the int32 store wraps
 * as an int32 accumulator would. */
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

typedef struct conv_geom {
  kiln_nn_window w;
  int64_t N, C, M, G;    /* batch, input channels, output channels, groups */
  int64_t isz, osz, ksz; /* elements of one input plane, output plane, kernel */
} conv_geom;

static int64_t ceil_div_pos(int64_t a, int64_t b) { /* b > 0 */
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* [lo, hi) of positions o in [0, n_o) with 0 <= o*s + off < n_i. */
static void valid_range(int64_t n_o, int64_t n_i, int64_t s, int64_t off, int64_t *lo,
                        int64_t *hi) {
  int64_t l = ceil_div_pos(-off, s), h = n_i - off > 0 ? (n_i - off - 1) / s + 1 : 0;
  *lo = l < 0 ? 0 : l;
  *hi = h > n_o ? n_o : h;
  if (*hi < *lo) *hi = *lo;
}

/* Output channels computed together, so that each input row is read once for all of them. Each
 * output element still sums its products in the same order (input channel, then tap). */
#define CONV_MB 4

typedef struct conv_block {
  int nm;             /* channels in the block, 1..CONV_MB */
  double wv[CONV_MB]; /* their weights at the current tap */
  double *o[CONV_MB]; /* their output planes */
} conv_block;

/* o_q[ob + j] += wv_q * xp[j * s] for j < n and each channel q of the block. */
static void conv_row(const conv_block *b, int64_t ob, const double *xp, int64_t s, int64_t n) {
  if (b->nm == CONV_MB && s == 1) {
    double *restrict o0 = b->o[0] + ob, *restrict o1 = b->o[1] + ob;
    double *restrict o2 = b->o[2] + ob, *restrict o3 = b->o[3] + ob;
    double w0 = b->wv[0], w1 = b->wv[1], w2 = b->wv[2], w3 = b->wv[3];
    for (int64_t j = 0; j < n; j++) {
      double xv = xp[j];
      o0[j] += w0 * xv;
      o1[j] += w1 * xv;
      o2[j] += w2 * xv;
      o3[j] += w3 * xv;
    }
    return;
  }
  for (int q = 0; q < b->nm; q++) {
    double *restrict op = b->o[q] + ob, wv = b->wv[q];
    for (int64_t j = 0; j < n; j++) op[j] += wv * xp[j * s];
  }
}

/* Adds the contribution of input plane x at kernel position kpos to the block's outputs. */
static void conv_accumulate(const kiln_nn_window *w, const double *x, const conv_block *b,
                            const int64_t *kpos) {
  int last = w->nsp - 1;
  int64_t off_l = kpos[last] * w->dilations[last] - w->pads[last], lo, hi;
  valid_range(w->out[last], w->in[last], w->strides[last], off_l, &lo, &hi);
  if (lo >= hi) return;
  int64_t rows = kiln_nn_prod(w->out, 0, last), opos[KILN_MAX_RANK] = {0};
  int64_t s = w->strides[last];
  for (int64_t r = 0; r < rows; r++) {
    int64_t xrow = 0;
    bool inside = true;
    for (int d = 0; d < last; d++) {
      int64_t ip = opos[d] * w->strides[d] + kpos[d] * w->dilations[d] - w->pads[d];
      inside = inside && ip >= 0 && ip < w->in[d];
      xrow = xrow * w->in[d] + ip;
    }
    if (inside)
      conv_row(b, r * w->out[last] + lo, x + xrow * w->in[last] + off_l + lo * s, s, hi - lo);
    for (int d = last - 1; d >= 0; d--) {
      if (++opos[d] < w->out[d]) break;
      opos[d] = 0;
    }
  }
}

static void next_pos(int64_t *pos, const int64_t *dims, int n) {
  for (int d = n - 1; d >= 0; d--) {
    if (++pos[d] < dims[d]) return;
    pos[d] = 0;
  }
}

/* y = conv(x, w) + bias, all double, shapes from g. bias may be NULL. */
static void conv_run(const conv_geom *g, const double *x, const double *wt, const double *bias,
                     double *y) {
  int64_t cg = g->C / g->G, mg = g->M / g->G;
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t m0 = 0; m0 < g->M;) {
      conv_block b;
      int64_t left = mg - m0 % mg; /* a block stays inside one group */
      b.nm = left < CONV_MB ? (int)left : CONV_MB;
      for (int q = 0; q < b.nm; q++) {
        b.o[q] = y + (n * g->M + m0 + q) * g->osz;
        for (int64_t i = 0; i < g->osz; i++) b.o[q][i] = bias ? bias[m0 + q] : 0;
      }
      int64_t grp = m0 / mg;
      for (int64_t cc = 0; cc < cg; cc++) {
        const double *xp = x + (n * g->C + grp * cg + cc) * g->isz;
        int64_t kpos[KILN_MAX_RANK] = {0};
        for (int64_t k = 0; k < g->ksz; k++) {
          for (int q = 0; q < b.nm; q++) b.wv[q] = wt[((m0 + q) * cg + cc) * g->ksz + k];
          conv_accumulate(&g->w, xp, &b, kpos);
          next_pos(kpos, g->w.kernel, g->w.nsp);
        }
      }
      m0 += b.nm;
    }
}

/* Checks shapes and reads attributes of Conv/ConvInteger (x [N,C,...], w [M,C/G,k...]). */
static kiln_status conv_geom_init(kiln_eval_ctx *ctx, const kiln_tensor *x, const kiln_tensor *w,
                                  conv_geom *g) {
  KILN_TRY(kiln_nn_need_rank(ctx, x, 3, "X"));
  if (w->rank != x->rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "W has rank %d, X has rank %d", w->rank, x->rank);
  memset(g, 0, sizeof *g);
  int nsp = x->rank - 2;
  g->w.nsp = nsp;
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(ctx->node, &wa));
  g->G = wa.group;
  g->N = x->dims[0], g->C = x->dims[1], g->M = w->dims[0];
  if (g->G <= 0 || g->C % g->G || g->M % g->G || w->dims[1] * g->G != g->C)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "channels do not match: X has %lld, W %lld per group, group=%lld",
                           (long long)g->C, (long long)w->dims[1], (long long)g->G);
  bool has_k;
  KILN_TRY(kiln_nn_ints_n(ctx->node, "kernel_shape", nsp, 0, g->w.kernel, &has_k));
  for (int d = 0; d < nsp; d++) {
    if (has_k && g->w.kernel[d] != w->dims[d + 2])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel_shape does not match W");
    g->w.kernel[d] = w->dims[d + 2];
    g->w.in[d] = x->dims[d + 2];
  }
  KILN_TRY(kiln_nn_window_init(ctx->node, &g->w, false));
  g->isz = kiln_nn_prod(g->w.in, 0, nsp);
  g->osz = kiln_nn_prod(g->w.out, 0, nsp);
  g->ksz = kiln_nn_prod(g->w.kernel, 0, nsp);
  return KILN_OK;
}

static kiln_status conv_out(kiln_eval_ctx *ctx, const conv_geom *g, kiln_dtype dt,
                            kiln_tensor **y) {
  int64_t dims[KILN_MAX_RANK] = {g->N, g->M};
  for (int d = 0; d < g->w.nsp; d++) dims[d + 2] = g->w.out[d];
  return kiln_eval_out(ctx, 0, dt, g->w.nsp + 2, dims, y);
}

static kiln_status eval_conv(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *w, *b = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  KILN_TRY(kiln_nn_need_float(ctx, x, "X"));
  conv_geom g;
  KILN_TRY(conv_geom_init(ctx, x, w, &g));
  if (b && (b->rank != 1 || b->dims[0] != g.M))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "B must have shape [%lld]", (long long)g.M);
  kiln_tensor *y;
  KILN_TRY(conv_out(ctx, &g, x->dtype, &y));
  double *xv = NULL, *wv = NULL, *bv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_load_f64(ctx, w, &wv);
  if (!st && b) st = kiln_nn_load_f64(ctx, b, &bv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    conv_run(&g, xv, wv, bv, yv);
    kiln_nn_store_f64(y, yv);
  }
  free(xv), free(wv), free(bv), free(yv);
  return st;
}

/* Loads t as double minus its zero point zp (scalar, or one per `per` block of `block`
 * elements when zp has `per` elements). */
static kiln_status load_minus_zp(kiln_eval_ctx *ctx, const kiln_tensor *t, const kiln_tensor *zp,
                                 int64_t per, int64_t block, double **out) {
  if (!kiln_dtype_is_int(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "operands must be integer tensors");
  KILN_TRY(kiln_nn_load_f64(ctx, t, out));
  if (!zp) return KILN_OK;
  if (!kiln_dtype_is_int(zp->dtype) || (zp->numel != 1 && zp->numel != per)) {
    free(*out);
    *out = NULL;
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "zero point has %lld elements",
                           (long long)zp->numel);
  }
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t at = zp->numel == 1 ? 0 : (i / block) % per;
    (*out)[i] -= (double)kiln_load_i64(zp->dtype, zp->data, (size_t)at);
  }
  return KILN_OK;
}

static kiln_status eval_conv_integer(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *w;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  conv_geom g;
  KILN_TRY(conv_geom_init(ctx, x, w, &g));
  kiln_tensor *y;
  KILN_TRY(conv_out(ctx, &g, KILN_I32, &y));
  double *xv = NULL, *wv = NULL, *yv = NULL;
  kiln_status st = load_minus_zp(ctx, x, kiln_eval_in(ctx, 2), 1, 1, &xv);
  if (!st) st = load_minus_zp(ctx, w, kiln_eval_in(ctx, 3), g.M, w->numel / (g.M ? g.M : 1), &wv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    conv_run(&g, xv, wv, NULL, yv);
    kiln_nn_store_f64(y, yv);
  }
  free(xv), free(wv), free(yv);
  return st;
}

/* ---- ConvTranspose ----
 * y[n, m, i*s + k*d - pad] += x[n, c, i] * w[c, m % (M/G), k]: the same loop nest with the
 * roles of input and output exchanged. Output size: s*(in-1) + output_padding + (k-1)*d + 1
 * - pads, or output_shape (then pads are derived from it, per auto_pad, as the spec says).
 * An output_shape (or SAME's in*stride) larger than the full result is not negative padding
 * (pads are >= 0): the full result is placed at the start and the rest is zero, as in the
 * ONNX reference and ONNX Runtime. */

typedef struct convt_geom {
  kiln_nn_window w; /* w.in: input sizes; w.out: output sizes */
  int64_t N, C, M, G, isz, osz, ksz;
  int64_t out_pad[KILN_MAX_RANK];
} convt_geom;

static kiln_status convt_pads(kiln_eval_ctx *ctx, convt_geom *g) {
  int nsp = g->w.nsp;
  const int64_t *os;
  int n_os;
  KILN_TRY(kiln_node_ints(ctx->node, "output_shape", &os, &n_os));
  if (n_os >= 0 && n_os != nsp && n_os != nsp + 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "output_shape has %d values", n_os);
  bool same =
      g->w.auto_pad == KILN_AUTO_PAD_SAME_UPPER || g->w.auto_pad == KILN_AUTO_PAD_SAME_LOWER;
  for (int d = 0; d < nsp; d++) {
    int64_t s = g->w.strides[d], dk = (g->w.kernel[d] - 1) * g->w.dilations[d] + 1;
    int64_t full;
    if (kiln_mul_overflow_i64(s, g->w.in[d] > 0 ? g->w.in[d] - 1 : 0, &full) ||
        full > INT64_MAX / 4)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "output size overflows");
    full += g->out_pad[d] + dk;
    if (g->w.auto_pad == KILN_AUTO_PAD_VALID) g->w.pads[d] = g->w.pads[nsp + d] = 0;
    g->w.out[d] = full - g->w.pads[d] - g->w.pads[nsp + d];
    if (n_os >= 0 || same) {
      int64_t want = n_os >= 0 ? os[n_os - nsp + d] : g->w.in[d] * s;
      if (want < 0 || want > full + INT32_MAX)
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad output_shape %lld", (long long)want);
      int64_t total = full - want > 0 ? full - want : 0, half = total / 2;
      bool upper = g->w.auto_pad == KILN_AUTO_PAD_SAME_UPPER;
      g->w.pads[d] = upper ? half : total - half;
      g->w.pads[nsp + d] = total - g->w.pads[d];
      g->w.out[d] = want; /* beyond the full result (total < 0): zeros (plus bias) */
    }
    if (g->w.out[d] < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "negative output size");
  }
  return KILN_OK;
}

static bool small(int64_t v) {
  return v >= -INT32_MAX && v <= INT32_MAX;
}

/* Shapes from x dims [N, C, in...] and w dims [C, M/G, k...], both of the given rank. */
static kiln_status convt_geom_init(kiln_eval_ctx *ctx, int rank, const int64_t *xd,
                                   const int64_t *wd, convt_geom *g) {
  if (rank < 3) return kiln_eval_error(ctx, KILN_ERR_INVALID, "X must have rank >= 3");
  memset(g, 0, sizeof *g);
  int nsp = g->w.nsp = rank - 2;
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(ctx->node, &wa));
  g->G = wa.group;
  g->N = xd[0], g->C = xd[1];
  if (g->G <= 0 || g->G > INT32_MAX || wd[0] != g->C || g->C % g->G)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "channels do not match: X has %lld, W %lld",
                           (long long)g->C, (long long)wd[0]);
  g->M = wd[1] * g->G;
  bool has_k;
  KILN_TRY(kiln_nn_ints_n(ctx->node, "kernel_shape", nsp, 0, g->w.kernel, &has_k));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "output_padding", nsp, 0, g->out_pad, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "strides", nsp, 1, g->w.strides, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "dilations", nsp, 1, g->w.dilations, NULL));
  KILN_TRY(kiln_nn_ints_n(ctx->node, "pads", 2 * nsp, 0, g->w.pads, NULL));
  g->w.auto_pad = wa.auto_pad;
  for (int d = 0; d < nsp; d++) {
    if (has_k && g->w.kernel[d] != wd[d + 2])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel_shape does not match W");
    g->w.kernel[d] = wd[d + 2];
    g->w.in[d] = xd[d + 2];
    if (g->w.strides[d] <= 0 || g->w.dilations[d] <= 0 || g->w.strides[d] > INT32_MAX ||
        g->w.dilations[d] > INT32_MAX || !small(g->w.pads[d]) || !small(g->w.pads[nsp + d]) ||
        !small(g->out_pad[d]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad strides, dilations or pads");
  }
  KILN_TRY(convt_pads(ctx, g));
  g->isz = kiln_nn_prod(g->w.in, 0, nsp);
  g->osz = kiln_nn_prod(g->w.out, 0, nsp);
  g->ksz = kiln_nn_prod(g->w.kernel, 0, nsp);
  return KILN_OK;
}

/* o[...] += wv * x[...] over the input plane for one kernel position (scatter form). */
static void convt_accumulate(const kiln_nn_window *w, const double *x, double wv,
                             const int64_t *kpos, double *o) {
  int last = w->nsp - 1;
  int64_t off_l = kpos[last] * w->dilations[last] - w->pads[last], lo, hi;
  valid_range(w->in[last], w->out[last], w->strides[last], off_l, &lo, &hi);
  if (lo >= hi) return;
  int64_t rows = kiln_nn_prod(w->in, 0, last), ipos[KILN_MAX_RANK] = {0};
  int64_t s = w->strides[last];
  for (int64_t r = 0; r < rows; r++) {
    int64_t orow = 0;
    bool inside = true;
    for (int d = 0; d < last; d++) {
      int64_t op = ipos[d] * w->strides[d] + kpos[d] * w->dilations[d] - w->pads[d];
      inside = inside && op >= 0 && op < w->out[d];
      orow = orow * w->out[d] + op;
    }
    if (inside) {
      double *op = o + orow * w->out[last] + off_l + lo * s;
      const double *xp = x + r * w->in[last] + lo;
      int64_t n = hi - lo;
      for (int64_t j = 0; j < n; j++) op[j * s] += wv * xp[j];
    }
    for (int d = last - 1; d >= 0; d--) {
      if (++ipos[d] < w->in[d]) break;
      ipos[d] = 0;
    }
  }
}

static void convt_run(const convt_geom *g, const double *x, const double *wt, const double *bias,
                      double *y) {
  int64_t cg = g->C / g->G, mg = g->M / g->G;
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t m = 0; m < g->M; m++) {
      double *o = y + (n * g->M + m) * g->osz;
      for (int64_t i = 0; i < g->osz; i++) o[i] = bias ? bias[m] : 0;
      int64_t grp = m / mg;
      for (int64_t cc = 0; cc < cg; cc++) {
        int64_t c = grp * cg + cc;
        const double *xp = x + (n * g->C + c) * g->isz;
        const double *wp = wt + (c * mg + m % mg) * g->ksz;
        int64_t kpos[KILN_MAX_RANK] = {0};
        for (int64_t k = 0; k < g->ksz; k++) {
          convt_accumulate(&g->w, xp, wp[k], kpos, o);
          next_pos(kpos, g->w.kernel, g->w.nsp);
        }
      }
    }
}

static kiln_status eval_conv_transpose(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *w, *b = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  KILN_TRY(kiln_nn_need_float(ctx, x, "X"));
  convt_geom g;
  if (w->rank != x->rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "W has rank %d, X has rank %d", w->rank, x->rank);
  KILN_TRY(convt_geom_init(ctx, x->rank, x->dims, w->dims, &g));
  if (b && (b->rank != 1 || b->dims[0] != g.M))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "B must have shape [%lld]", (long long)g.M);
  int64_t dims[KILN_MAX_RANK] = {g.N, g.M};
  for (int d = 0; d < g.w.nsp; d++) dims[d + 2] = g.w.out[d];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &y));
  double *xv = NULL, *wv = NULL, *bv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_load_f64(ctx, w, &wv);
  if (!st && b) st = kiln_nn_load_f64(ctx, b, &bv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    convt_run(&g, xv, wv, bv, yv);
    kiln_nn_store_f64(y, yv);
  }
  free(xv), free(wv), free(bv), free(yv);
  return st;
}

/* ---- inference ---- */

kiln_status kiln_nn_infer_conv(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0), *w = kiln_nn_infer_in(ctx, 1);
  if (ctx->node->op != KILN_OP_ConvInteger) { /* Conv, DeformConv */
    KILN_TRY(kiln_nn_infer_need_float(ctx, 0, "X"));
    KILN_TRY(kiln_nn_infer_need_float(ctx, 1, "W"));
  }
  if (!x || !w) return KILN_OK;
  if (x->rank < 3 || w->rank != x->rank)
    return kiln_nn_infer_error(ctx, "X and W must have the same rank >= 3");
  kiln_nn_window win;
  memset(&win, 0, sizeof win);
  win.nsp = x->rank - 2;
  bool has_k;
  KILN_TRY(kiln_nn_ints_n(ctx->node, "kernel_shape", win.nsp, 0, win.kernel, &has_k));
  for (int d = 0; d < win.nsp; d++) {
    if (!has_k) win.kernel[d] = w->dims[d + 2].value;
    if (win.kernel[d] < 0) win.kernel[d] = 1, win.in[d] = -1; /* unknown kernel */
    else win.in[d] = x->dims[d + 2].value;
  }
  KILN_TRY(kiln_nn_window_init(ctx->node, &win, false));
  kiln_type t = *x;
  if (ctx->node->op == KILN_OP_ConvInteger) t.dtype = KILN_I32;
  t.dims[1] = w->dims[0];
  for (int d = 0; d < win.nsp; d++) {
    t.dims[d + 2].value = win.out[d];
    t.dims[d + 2].sym = NULL;
  }
  ctx->out[0] = t;
  return KILN_OK;
}

/* ConvTranspose: the output's spatial dims are computed when X's channels and spatial dims and
 * all of W's dims are known; otherwise only the rank (and the batch dim) is. */
static kiln_status infer_conv_transpose(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0), *w = kiln_nn_infer_in(ctx, 1);
  KILN_TRY(kiln_nn_infer_need_float(ctx, 0, "X"));
  KILN_TRY(kiln_nn_infer_need_float(ctx, 1, "W"));
  if (!x || !w) return KILN_OK;
  if (x->rank < 3 || w->rank != x->rank)
    return kiln_nn_infer_error(ctx, "X and W must have the same rank >= 3");
  kiln_type t = *x;
  for (int d = 1; d < x->rank; d++) t.dims[d].value = -1, t.dims[d].sym = NULL;
  int64_t xd[KILN_MAX_RANK], wd[KILN_MAX_RANK];
  bool known = true;
  for (int d = 0; d < x->rank; d++) {
    xd[d] = d == 0 ? 1 : x->dims[d].value;
    wd[d] = w->dims[d].value;
    known = known && xd[d] >= 0 && wd[d] >= 0;
  }
  if (known) {
    kiln_eval_ctx ec = {.graph = ctx->graph, .node = ctx->node, .n_in = ctx->n_in};
    convt_geom g;
    KILN_TRY(convt_geom_init(&ec, x->rank, xd, wd, &g));
    t.dims[1].value = g.M;
    for (int d = 0; d < g.w.nsp; d++) t.dims[d + 2].value = g.w.out[d];
  }
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_nn_register_conv(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_Conv, eval_conv, kiln_nn_infer_conv, 2, 3, 1, 1);
  kiln_nn_set(table, KILN_OP_ConvInteger, eval_conv_integer, kiln_nn_infer_conv, 2, 4, 1, 1);
  kiln_nn_set(table, KILN_OP_ConvTranspose, eval_conv_transpose, infer_conv_transpose, 2, 3, 1, 1);
}
