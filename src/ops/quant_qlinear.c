/* Quantized linear algebra: QLinearMatMul (10, 21) and QLinearConv (10).
 *
 * Both compute an exact integer product of the zero-point-shifted inputs (int64
 * accumulators), then requantize:
 *   y = saturate(rint(acc * (a_scale * b_scale / y_scale)) + y_zero_point)
 * The multiplier is formed in the scales' float type, one rounding per operation,
 * as the ONNX reference does; the product acc * multiplier is exact in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"

static bool qint_range(kiln_dtype t, int64_t *lo, int64_t *hi) {
  switch (t) {
  case KILN_U8: *lo = 0, *hi = 255; return true;
  case KILN_I8: *lo = -128, *hi = 127; return true;
  case KILN_U16: *lo = 0, *hi = 65535; return true;
  case KILN_I16: *lo = -32768, *hi = 32767; return true;
  default: return false;
  }
}

static int64_t requantize(double acc, double mult, int64_t zp, int64_t lo, int64_t hi) {
  double v = nearbyint(acc * mult) + (double)zp;
  if (isnan(v)) return zp;
  return v <= (double)lo ? lo : v >= (double)hi ? hi : (int64_t)v;
}

/* A scale / zero-point vector: one element (per tensor) or `len` elements. */
static kiln_status qvec_check(const kiln_eval_ctx *ctx, const kiln_tensor *t, int64_t len,
                              const char *what) {
  if (t && t->numel != 1 && !(t->rank == 1 && t->dims[0] == len))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must have 1 or %lld elements", what,
                           (long long)len);
  return KILN_OK;
}

static double qvec_f(const kiln_tensor *t, int64_t i) {
  return kiln_load_f64(t->dtype, t->data, (size_t)(t->numel == 1 ? 0 : i));
}

static int64_t qvec_i(const kiln_tensor *t, int64_t i) {
  if (!t) return 0;
  return kiln_load_i64(t->dtype, t->data, (size_t)(t->numel == 1 ? 0 : i));
}

static double qmult(kiln_dtype st, double s1, double s2, double sy) {
  return kiln_kern_round_to(st, kiln_kern_round_to(st, s1 * s2) / sy);
}

/* ---- QLinearMatMul: numpy matmul semantics (1-D promotion, batch broadcasting) ---- */
typedef struct qmm {
  const kiln_tensor *a, *as, *az, *b, *bs, *bz, *ys, *yz;
  int64_t m, k, n;
  int brank; /* batch rank of the output */
  int64_t bdims[KILN_MAX_RANK], astr[KILN_MAX_RANK], bstr[KILN_MAX_RANK];
} qmm;

static kiln_status qmm_shapes(kiln_eval_ctx *ctx, qmm *q) {
  const kiln_tensor *a = q->a, *b = q->b;
  if (a->rank < 1 || b->rank < 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "matmul inputs must have rank >= 1");
  q->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
  q->k = a->dims[a->rank - 1];
  int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
  q->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
  if (kb != q->k)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "matmul inner dims differ: %lld vs %lld",
                           (long long)q->k, (long long)kb);
  int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
  q->brank = ra > rb ? ra : rb;
  int64_t sa = q->m * q->k, sb = q->k * q->n;
  for (int i = q->brank - 1; i >= 0; i--) {
    int ia = i - (q->brank - ra), ib = i - (q->brank - rb);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "matmul batch dims %lld and %lld differ",
                             (long long)da, (long long)db);
    q->bdims[i] = da == 1 ? db : da;
    q->astr[i] = da == 1 ? 0 : sa;
    q->bstr[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return KILN_OK;
}

static kiln_status qmm_out(kiln_eval_ctx *ctx, const qmm *q, kiln_tensor **y) {
  int64_t dims[KILN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < q->brank; i++) dims[r++] = q->bdims[i];
  if (q->a->rank > 1) dims[r++] = q->m;
  if (q->b->rank > 1) dims[r++] = q->n;
  return kiln_eval_out(ctx, 0, q->yz->dtype, r, dims, y);
}

static void qmm_compute(const qmm *q, kiln_tensor *y, int64_t lo, int64_t hi) {
  kiln_dtype st = q->as->dtype;
  int64_t mn = q->m * q->n, nbatch = mn > 0 ? y->numel / mn : 0;
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t offa = 0, offb = 0, rem = bi;
    for (int i = q->brank - 1; i >= 0; i--) {
      int64_t c = rem % q->bdims[i];
      rem /= q->bdims[i];
      offa += c * q->astr[i];
      offb += c * q->bstr[i];
    }
    for (int64_t i = 0; i < q->m; i++) {
      for (int64_t j = 0; j < q->n; j++) {
        int64_t acc = 0, za = qvec_i(q->az, i), zb = qvec_i(q->bz, j);
        for (int64_t kk = 0; kk < q->k; kk++) {
          int64_t av = kiln_load_i64(q->a->dtype, q->a->data, (size_t)(offa + i * q->k + kk));
          int64_t bv = kiln_load_i64(q->b->dtype, q->b->data, (size_t)(offb + kk * q->n + j));
          acc += (av - za) * (bv - zb);
        }
        double mult = qmult(st, qvec_f(q->as, i), qvec_f(q->bs, j), qvec_f(q->ys, i));
        int64_t v = requantize((double)acc, mult, qvec_i(q->yz, i), lo, hi);
        kiln_store_i64(y->dtype, y->data, (size_t)((bi * q->m + i) * q->n + j), v);
      }
    }
  }
}

static kiln_status eval_qlinear_matmul(kiln_eval_ctx *ctx) {
  qmm q;
  memset(&q, 0, sizeof q);
  const kiln_tensor **ins[8] = {&q.a, &q.as, &q.az, &q.b, &q.bs, &q.bz, &q.ys, &q.yz};
  for (int i = 0; i < 8; i++) KILN_TRY(kiln_eval_in_req(ctx, i, ins[i]));
  int64_t lo, hi, l2, h2;
  if (!qint_range(q.a->dtype, &lo, &hi) || !qint_range(q.b->dtype, &l2, &h2) ||
      !qint_range(q.yz->dtype, &lo, &hi))
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED,
                           "QLinearMatMul supports 8/16-bit integer types only");
  KILN_TRY(kiln_kern_need_float(ctx, q.as, "a_scale"));
  KILN_TRY(kiln_kern_need_float(ctx, q.bs, "b_scale"));
  KILN_TRY(kiln_kern_need_float(ctx, q.ys, "y_scale"));
  KILN_TRY(qmm_shapes(ctx, &q));
  KILN_TRY(qvec_check(ctx, q.as, q.m, "a_scale"));
  KILN_TRY(qvec_check(ctx, q.az, q.m, "a_zero_point"));
  KILN_TRY(qvec_check(ctx, q.bs, q.n, "b_scale"));
  KILN_TRY(qvec_check(ctx, q.bz, q.n, "b_zero_point"));
  KILN_TRY(qvec_check(ctx, q.ys, q.m, "y_scale"));
  KILN_TRY(qvec_check(ctx, q.yz, q.m, "y_zero_point"));
  kiln_tensor *y;
  KILN_TRY(qmm_out(ctx, &q, &y));
  qmm_compute(&q, y, lo, hi);
  return KILN_OK;
}

/* ---- QLinearConv ---- */
typedef struct qconv {
  int sr; /* spatial rank */
  int64_t n, c, m, group, cg, mg;
  int64_t in[KILN_MAX_RANK], k[KILN_MAX_RANK], out[KILN_MAX_RANK];
  int64_t stride[KILN_MAX_RANK], dil[KILN_MAX_RANK], pad[KILN_MAX_RANK];
} qconv;

static kiln_status qconv_ints(const kiln_eval_ctx *ctx, const char *name, int n, int64_t dflt,
                              int64_t *out) {
  const int64_t *v;
  int len;
  KILN_TRY(kiln_node_ints(ctx->node, name, &v, &len));
  if (len >= 0 && len != n)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must have %d values, has %d", name, n, len);
  for (int i = 0; i < n; i++) out[i] = len >= 0 ? v[i] : dflt;
  return KILN_OK;
}

/* Output extents and begin pads from auto_pad / pads / strides / dilations. */
static kiln_status qconv_geometry(const kiln_eval_ctx *ctx, qconv *g) {
  int64_t pads[2 * KILN_MAX_RANK];
  KILN_TRY(qconv_ints(ctx, "strides", g->sr, 1, g->stride));
  KILN_TRY(qconv_ints(ctx, "dilations", g->sr, 1, g->dil));
  KILN_TRY(qconv_ints(ctx, "pads", 2 * g->sr, 0, pads));
  const char *ap;
  KILN_TRY(kiln_node_string(ctx->node, "auto_pad", "NOTSET", &ap));
  for (int i = 0; i < g->sr; i++) {
    if (g->stride[i] < 1 || g->dil[i] < 1)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "strides and dilations must be >= 1");
    int64_t ek = (g->k[i] - 1) * g->dil[i] + 1, pb = pads[i], pe = pads[i + g->sr];
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
      int64_t o = (g->in[i] + g->stride[i] - 1) / g->stride[i];
      int64_t tot = (o - 1) * g->stride[i] + ek - g->in[i];
      tot = tot < 0 ? 0 : tot;
      pb = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
      pe = tot - pb;
    } else if (!strcmp(ap, "VALID")) {
      pb = pe = 0;
    } else if (strcmp(ap, "NOTSET")) {
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown auto_pad '%s'", ap);
    }
    int64_t span = g->in[i] + pb + pe - ek;
    if (pb < 0 || pe < 0 || span < 0)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel larger than padded input");
    g->pad[i] = pb;
    g->out[i] = span / g->stride[i] + 1;
  }
  return KILN_OK;
}

static kiln_status qconv_shapes(const kiln_eval_ctx *ctx, const kiln_tensor *x,
                                const kiln_tensor *w, qconv *g) {
  memset(g, 0, sizeof *g);
  if (x->rank < 3 || w->rank != x->rank)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "x and w must have the same rank >= 3");
  g->sr = x->rank - 2;
  g->n = x->dims[0];
  g->c = x->dims[1];
  g->m = w->dims[0];
  KILN_TRY(kiln_node_int(ctx->node, "group", 1, &g->group));
  if (g->group < 1 || g->c % g->group || g->m % g->group || w->dims[1] * g->group != g->c)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "channels %lld / group %lld / w dim %lld",
                           (long long)g->c, (long long)g->group, (long long)w->dims[1]);
  g->cg = g->c / g->group;
  g->mg = g->m / g->group;
  const int64_t *ks;
  int nks;
  KILN_TRY(kiln_node_ints(ctx->node, "kernel_shape", &ks, &nks));
  for (int i = 0; i < g->sr; i++) {
    g->in[i] = x->dims[i + 2];
    g->k[i] = w->dims[i + 2];
    if (nks >= 0 && (nks != g->sr || ks[i] != g->k[i]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "kernel_shape does not match w");
  }
  return qconv_geometry(ctx, g);
}

/* Accumulates one output element (batch b, channel oc, position opos[]). */
static int64_t qconv_point(const qconv *g, const kiln_tensor *x, int64_t xz, const kiln_tensor *w,
                           int64_t wz, int64_t b, int64_t oc, const int64_t *opos) {
  int64_t ksz = 1, acc = 0;
  for (int i = 0; i < g->sr; i++) ksz *= g->k[i];
  int64_t c0 = (oc / g->mg) * g->cg;
  for (int64_t ci = 0; ci < g->cg; ci++) {
    for (int64_t kk = 0; kk < ksz; kk++) {
      int64_t rem = kk, xoff = 0, xstride = 1;
      bool inside = true;
      for (int i = g->sr - 1; i >= 0; i--) {
        int64_t kc = rem % g->k[i];
        rem /= g->k[i];
        int64_t p = opos[i] * g->stride[i] - g->pad[i] + kc * g->dil[i];
        if (p < 0 || p >= g->in[i]) inside = false;
        xoff += p * xstride;
        xstride *= g->in[i];
      }
      if (!inside) continue; /* padding holds the zero point: contributes 0 */
      int64_t xi = (b * g->c + c0 + ci) * xstride + xoff;
      int64_t wi = (oc * g->cg + ci) * ksz + kk;
      acc += (kiln_load_i64(x->dtype, x->data, (size_t)xi) - xz) *
             (kiln_load_i64(w->dtype, w->data, (size_t)wi) - wz);
    }
  }
  return acc;
}

typedef struct qconv_io {
  const kiln_tensor *x, *xs, *xz, *w, *ws, *wz, *ys, *yz, *bias;
} qconv_io;

static void qconv_compute(const qconv *g, const qconv_io *io, kiln_tensor *y, int64_t lo,
                          int64_t hi) {
  int64_t osz = 1;
  for (int i = 0; i < g->sr; i++) osz *= g->out[i];
  int64_t xz = qvec_i(io->xz, 0), yz = qvec_i(io->yz, 0);
  for (int64_t b = 0; b < g->n; b++) {
    for (int64_t oc = 0; oc < g->m; oc++) {
      double mult = qmult(io->xs->dtype, qvec_f(io->xs, 0), qvec_f(io->ws, oc), qvec_f(io->ys, 0));
      int64_t bias = io->bias ? kiln_load_i64(io->bias->dtype, io->bias->data, (size_t)oc) : 0;
      for (int64_t o = 0; o < osz; o++) {
        int64_t opos[KILN_MAX_RANK], rem = o;
        for (int i = g->sr - 1; i >= 0; i--) {
          opos[i] = rem % g->out[i];
          rem /= g->out[i];
        }
        int64_t acc = qconv_point(g, io->x, xz, io->w, qvec_i(io->wz, oc), b, oc, opos) + bias;
        kiln_store_i64(y->dtype, y->data, (size_t)((b * g->m + oc) * osz + o),
                       requantize((double)acc, mult, yz, lo, hi));
      }
    }
  }
}

static kiln_status eval_qlinear_conv(kiln_eval_ctx *ctx) {
  qconv_io io;
  const kiln_tensor **ins[8] = {&io.x, &io.xs, &io.xz, &io.w, &io.ws, &io.wz, &io.ys, &io.yz};
  for (int i = 0; i < 8; i++) KILN_TRY(kiln_eval_in_req(ctx, i, ins[i]));
  io.bias = kiln_eval_in(ctx, 8);
  int64_t lo, hi;
  if (!qint_range(io.x->dtype, &lo, &hi) || !qint_range(io.w->dtype, &lo, &hi) ||
      !qint_range(io.yz->dtype, &lo, &hi))
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "QLinearConv supports 8-bit types only");
  qconv g;
  KILN_TRY(qconv_shapes(ctx, io.x, io.w, &g));
  KILN_TRY(qvec_check(ctx, io.xs, 1, "x_scale"));
  KILN_TRY(qvec_check(ctx, io.xz, 1, "x_zero_point"));
  KILN_TRY(qvec_check(ctx, io.ys, 1, "y_scale"));
  KILN_TRY(qvec_check(ctx, io.yz, 1, "y_zero_point"));
  KILN_TRY(qvec_check(ctx, io.ws, g.m, "w_scale"));
  KILN_TRY(qvec_check(ctx, io.wz, g.m, "w_zero_point"));
  if (io.bias && (io.bias->rank != 1 || io.bias->dims[0] != g.m))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "B must be 1-D of length %lld", (long long)g.m);
  int64_t dims[KILN_MAX_RANK] = {g.n, g.m};
  for (int i = 0; i < g.sr; i++) dims[i + 2] = g.out[i];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, io.yz->dtype, g.sr + 2, dims, &y));
  qconv_compute(&g, &io, y, lo, hi);
  return KILN_OK;
}

void kiln_quant_register_qlinear(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_QLinearMatMul, eval_qlinear_matmul, 8, 8, 1, 1);
  kiln_kern_set(table, KILN_OP_QLinearConv, eval_qlinear_conv, 8, 9, 1, 1);
}
