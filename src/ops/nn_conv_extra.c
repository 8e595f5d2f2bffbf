/* DeformConv (N-D: each kernel tap samples the input at its regular position plus a learned
 * offset, with multilinear interpolation and zeros outside the image, times an optional mask)
 * and Col2Im (sums column blocks back into an image, like PyTorch's fold). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

/* ---- DeformConv ---- */

typedef struct deform_geom {
  kiln_nn_window w;
  int64_t N, C, M, G, OG; /* batch, in channels, out channels, groups, offset groups */
  int64_t isz, osz, ksz;
} deform_geom;

/* Multilinear interpolation of plane x (sizes w->in) at point p; zero outside. */
static double sample(const kiln_nn_window *w, const double *x, const double *p) {
  int n = w->nsp;
  int64_t base[KILN_MAX_RANK];
  double frac[KILN_MAX_RANK];
  for (int d = 0; d < n; d++) {
    if (!(p[d] > -1 && p[d] < (double)w->in[d])) return 0; /* also rejects NaN */
    double f = floor(p[d]);
    base[d] = (int64_t)f;
    frac[d] = p[d] - f;
  }
  double acc = 0;
  for (int corner = 0; corner < (1 << n); corner++) {
    double wt = 1;
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < n; d++) {
      int bit = (corner >> d) & 1;
      int64_t i = base[d] + bit;
      wt *= bit ? frac[d] : 1 - frac[d];
      inside = inside && i >= 0 && i < w->in[d];
      off = off * w->in[d] + i;
    }
    if (inside && wt != 0) acc += wt * x[off];
  }
  return acc;
}

typedef struct deform_data {
  const double *x, *wt, *offset, *mask, *bias;
} deform_data;

/* Output value at (n, m, spatial position o with flat index oi). */
static double deform_point(const deform_geom *g, const deform_data *dd, int64_t n, int64_t m,
                           const int64_t *o, int64_t oi) {
  const kiln_nn_window *w = &g->w;
  int nsp = w->nsp;
  int64_t cg = g->C / g->G, grp = m / (g->M / g->G), cpo = g->C / g->OG;
  double acc = dd->bias ? dd->bias[m] : 0;
  for (int64_t cc = 0; cc < cg; cc++) {
    int64_t c = grp * cg + cc, og = c / cpo;
    const double *xp = dd->x + (n * g->C + c) * g->isz;
    const double *wp = dd->wt + (m * cg + cc) * g->ksz;
    int64_t kp[KILN_MAX_RANK] = {0};
    for (int64_t k = 0; k < g->ksz; k++) {
      double p[KILN_MAX_RANK];
      int64_t tap = og * g->ksz + k; /* channel block of this tap in offset and mask */
      for (int d = 0; d < nsp; d++) {
        double off = dd->offset[((n * g->OG * g->ksz + tap) * nsp + d) * g->osz + oi];
        p[d] = (double)(o[d] * w->strides[d] - w->pads[d] + kp[d] * w->dilations[d]) + off;
      }
      double mk = dd->mask ? dd->mask[(n * g->OG * g->ksz + tap) * g->osz + oi] : 1;
      acc += wp[k] * mk * sample(w, xp, p);
      for (int d = nsp - 1; d >= 0; d--) {
        if (++kp[d] < w->kernel[d]) break;
        kp[d] = 0;
      }
    }
  }
  return acc;
}

static kiln_status deform_geom_init(kiln_eval_ctx *ctx, const kiln_tensor *x, const kiln_tensor *w,
                                    deform_geom *g) {
  KILN_TRY(kiln_nn_need_rank(ctx, x, 3, "X"));
  if (w->rank != x->rank) return kiln_eval_error(ctx, KILN_ERR_INVALID, "W and X ranks differ");
  memset(g, 0, sizeof *g);
  int nsp = g->w.nsp = x->rank - 2;
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(ctx->node, &wa));
  g->G = wa.group;
  g->OG = wa.offset_group;
  g->N = x->dims[0], g->C = x->dims[1], g->M = w->dims[0];
  if (g->G <= 0 || g->OG <= 0 || g->C % g->G || g->M % g->G || w->dims[1] * g->G != g->C ||
      g->C % g->OG)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "channels do not match group/offset_group");
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

/* Checks that t has shape [N, ch, out...]. */
static kiln_status deform_check(kiln_eval_ctx *ctx, const kiln_tensor *t, const deform_geom *g,
                                int64_t ch, const char *what) {
  bool ok = t->rank == g->w.nsp + 2 && t->dims[0] == g->N && t->dims[1] == ch;
  for (int d = 0; ok && d < g->w.nsp; d++) ok = t->dims[d + 2] == g->w.out[d];
  return ok ? KILN_OK : kiln_eval_error(ctx, KILN_ERR_INVALID, "%s has the wrong shape", what);
}

static kiln_status eval_deform_conv(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *w, *off, *b = kiln_eval_in(ctx, 3), *mask = kiln_eval_in(ctx, 4);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &off));
  KILN_TRY(kiln_nn_need_float(ctx, x, "X"));
  deform_geom g;
  KILN_TRY(deform_geom_init(ctx, x, w, &g));
  KILN_TRY(deform_check(ctx, off, &g, g.OG * g.ksz * g.w.nsp, "offset"));
  if (mask) KILN_TRY(deform_check(ctx, mask, &g, g.OG * g.ksz, "mask"));
  if (b && b->numel != g.M) return kiln_eval_error(ctx, KILN_ERR_INVALID, "B has the wrong size");
  int64_t dims[KILN_MAX_RANK] = {g.N, g.M};
  for (int d = 0; d < g.w.nsp; d++) dims[d + 2] = g.w.out[d];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &y));
  double *xv = NULL, *wv = NULL, *ov = NULL, *mv = NULL, *bv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_load_f64(ctx, w, &wv);
  if (!st) st = kiln_nn_load_f64(ctx, off, &ov);
  if (!st && mask) st = kiln_nn_load_f64(ctx, mask, &mv);
  if (!st && b) st = kiln_nn_load_f64(ctx, b, &bv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    deform_data dd = {xv, wv, ov, mv, bv};
    for (int64_t n = 0; n < g.N; n++)
      for (int64_t m = 0; m < g.M; m++) {
        int64_t o[KILN_MAX_RANK] = {0};
        for (int64_t oi = 0; oi < g.osz; oi++) {
          yv[(n * g.M + m) * g.osz + oi] = deform_point(&g, &dd, n, m, o, oi);
          for (int d = g.w.nsp - 1; d >= 0; d--) {
            if (++o[d] < g.w.out[d]) break;
            o[d] = 0;
          }
        }
      }
    kiln_nn_store_f64(y, yv);
  }
  free(xv), free(wv), free(ov), free(mv), free(bv), free(yv);
  return st;
}

/* ---- Col2Im ---- */

static kiln_status col2im_shape(kiln_eval_ctx *ctx, const kiln_tensor *x, kiln_nn_window *w,
                                int64_t *C) {
  const kiln_tensor *img, *blk;
  KILN_TRY(kiln_eval_in_req(ctx, 1, &img));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &blk));
  if (x->rank != 3 || img->rank != 1 || blk->numel != img->numel || img->numel < 1 ||
      img->numel > KILN_MAX_RANK - 2 || !kiln_dtype_is_int(img->dtype) ||
      !kiln_dtype_is_int(blk->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "input must be [N, C*prod(block), L], image_shape and block_shape 1-D");
  memset(w, 0, sizeof *w);
  w->nsp = (int)img->numel;
  for (int d = 0; d < w->nsp; d++) {
    w->in[d] = kiln_load_i64(img->dtype, img->data, (size_t)d);
    w->kernel[d] = kiln_load_i64(blk->dtype, blk->data, (size_t)d);
    if (w->in[d] < 0 || w->in[d] > INT32_MAX)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad image_shape");
  }
  KILN_TRY(kiln_nn_window_init(ctx->node, w, false));
  int64_t ksz = kiln_nn_prod(w->kernel, 0, w->nsp), L = kiln_nn_prod(w->out, 0, w->nsp);
  if (ksz <= 0 || x->dims[1] % ksz || x->dims[2] != L)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input shape does not match the blocks");
  *C = x->dims[1] / ksz;
  return KILN_OK;
}

/* Adds the column col (one value per block position) of kernel tap kp into plane y. */
static void col2im_tap(const kiln_nn_window *w, const double *col, const int64_t *kp, double *y) {
  int64_t L = kiln_nn_prod(w->out, 0, w->nsp), bp[KILN_MAX_RANK] = {0};
  for (int64_t l = 0; l < L; l++) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < w->nsp; d++) {
      int64_t i = bp[d] * w->strides[d] + kp[d] * w->dilations[d] - w->pads[d];
      inside = inside && i >= 0 && i < w->in[d];
      off = off * w->in[d] + i;
    }
    if (inside) y[off] += col[l];
    for (int d = w->nsp - 1; d >= 0; d--) {
      if (++bp[d] < w->out[d]) break;
      bp[d] = 0;
    }
  }
}

static kiln_status eval_col2im(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_nn_need_float(ctx, x, "input"));
  kiln_nn_window w;
  int64_t C = 0;
  KILN_TRY(col2im_shape(ctx, x, &w, &C));
  int64_t dims[KILN_MAX_RANK] = {x->dims[0], C};
  for (int d = 0; d < w.nsp; d++) dims[d + 2] = w.in[d];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, w.nsp + 2, dims, &y));
  int64_t ksz = kiln_nn_prod(w.kernel, 0, w.nsp), L = x->dims[2],
          isz = kiln_nn_prod(w.in, 0, w.nsp);
  double *xv = NULL, *yv = NULL;
  kiln_status st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&yv);
  if (!st) {
    for (int64_t i = 0; i < y->numel; i++) yv[i] = 0;
    for (int64_t nc = 0; nc < x->dims[0] * C; nc++) {
      int64_t kp[KILN_MAX_RANK] = {0};
      for (int64_t k = 0; k < ksz; k++) {
        col2im_tap(&w, xv + (nc * ksz + k) * L, kp, yv + nc * isz);
        for (int d = w.nsp - 1; d >= 0; d--) {
          if (++kp[d] < w.kernel[d]) break;
          kp[d] = 0;
        }
      }
    }
    kiln_nn_store_f64(y, yv);
  }
  free(xv), free(yv);
  return st;
}

/* Col2Im: [N, C, image_shape...] when image_shape and block_shape are constants. */
static kiln_status infer_col2im(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  const kiln_tensor *img = ctx->n_in > 1 ? ctx->cin[1] : NULL;
  const kiln_tensor *blk = ctx->n_in > 2 ? ctx->cin[2] : NULL;
  if (!x || !img || !blk || x->rank != 3 || img->rank != 1 || img->numel < 1 ||
      img->numel > KILN_MAX_RANK - 2 || blk->numel != img->numel ||
      !kiln_dtype_is_int(img->dtype) || !kiln_dtype_is_int(blk->dtype))
    return KILN_OK;
  kiln_type t = *x;
  t.rank = (int)img->numel + 2;
  int64_t ksz = 1;
  for (int d = 0; d < t.rank - 2; d++) {
    int64_t k = kiln_load_i64(blk->dtype, blk->data, (size_t)d);
    if (k <= 0 || k > INT32_MAX) return kiln_nn_infer_error(ctx, "bad block_shape");
    ksz = ksz * k > INT32_MAX ? INT32_MAX : ksz * k;
    t.dims[d + 2].value = kiln_load_i64(img->dtype, img->data, (size_t)d);
    t.dims[d + 2].sym = NULL;
  }
  t.dims[1].sym = NULL;
  t.dims[1].value = x->dims[1].value >= 0 ? x->dims[1].value / ksz : -1;
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_nn_register_conv_extra(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_DeformConv, eval_deform_conv, kiln_nn_infer_conv, 3, 5, 1, 1);
  kiln_nn_set(table, KILN_OP_Col2Im, eval_col2im, infer_col2im, 3, 3, 1, 1);
}
