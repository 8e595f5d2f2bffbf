/* Ops of the 'vision' family (see src/graph/ops.def): the detection ops
 * NonMaxSuppression (10, 11) and RoiAlign (10, 16, 22), and ImageDecoder (20), which is
 * unsupported (it needs image codecs).
 *
 * NonMaxSuppression, per batch and class: candidates with score > score_threshold
 * (when given) are visited by decreasing score (ties: lower box index first); a box
 * is kept unless its IoU with an already kept box exceeds iou_threshold; at most
 * max_output_boxes_per_class (default 0) are kept. Output rows are
 * [batch, class, box]. Boxes are [y1, x1, y2, x2] (corners in any order) or, with
 * center_point_box = 1, [x_center, y_center, width, height].
 *
 * RoiAlign follows the ONNX / ONNX Runtime algorithm: each output bin averages (or,
 * in max mode, takes the max of the four weighted corner values of) a grid of
 * bilinear samples; coordinates are shifted by -0.5 with
 * coordinate_transformation_mode = half_pixel (the default from opset 16). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

/* ---- NonMaxSuppression ---- */
typedef struct nms_box {
  double score;
  int64_t idx;
} nms_box;

static int nms_cmp(const void *pa, const void *pb) {
  const nms_box *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Box as (xmin, ymin, xmax, ymax). */
static void nms_corners(const double *b, bool center, double *o) {
  if (center) {
    o[0] = b[0] - b[2] / 2, o[2] = b[0] + b[2] / 2;
    o[1] = b[1] - b[3] / 2, o[3] = b[1] + b[3] / 2;
  } else {
    o[0] = fmin(b[1], b[3]), o[2] = fmax(b[1], b[3]);
    o[1] = fmin(b[0], b[2]), o[3] = fmax(b[0], b[2]);
  }
}

static bool nms_suppress(const double *b1, const double *b2, bool center, double thr) {
  double a[4], b[4];
  nms_corners(b1, center, a);
  nms_corners(b2, center, b);
  double ix0 = fmax(a[0], b[0]), ix1 = fmin(a[2], b[2]);
  double iy0 = fmax(a[1], b[1]), iy1 = fmin(a[3], b[3]);
  if (ix1 <= ix0 || iy1 <= iy0) return false;
  double inter = (ix1 - ix0) * (iy1 - iy0);
  double a1 = (a[2] - a[0]) * (a[3] - a[1]), a2 = (b[2] - b[0]) * (b[3] - b[1]);
  double uni = a1 + a2 - inter;
  if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0) return false;
  return inter / uni > thr;
}

typedef struct nms_args {
  double *boxes, *scores;
  int64_t nb, nc, nbox, max_out;
  bool has_thr, center;
  double iou, score_thr;
} nms_args;

static kiln_status nms_parse(kiln_eval_ctx *ctx, nms_args *a) {
  const kiln_tensor *boxes, *scores;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &boxes));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &scores));
  if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
      scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "boxes must be [B, N, 4] and scores [B, C, N]");
  a->nb = boxes->dims[0], a->nbox = boxes->dims[1], a->nc = scores->dims[1];
  bool has;
  KILN_TRY(kiln_kern_scalar_i64(ctx, 2, &has, &a->max_out));
  if (!has || a->max_out < 0) a->max_out = 0;
  KILN_TRY(kiln_kern_scalar_f64(ctx, 3, &has, &a->iou));
  if (!has) a->iou = 0;
  KILN_TRY(kiln_kern_scalar_f64(ctx, 4, &a->has_thr, &a->score_thr));
  int64_t c;
  KILN_TRY(kiln_node_int(ctx->node, "center_point_box", 0, &c));
  if (c != 0 && c != 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "center_point_box must be 0 or 1");
  a->center = c == 1;
  KILN_TRY(kiln_kern_load_all_f64(ctx, boxes, &a->boxes));
  return kiln_kern_load_all_f64(ctx, scores, &a->scores);
}

/* Appends the kept boxes of one (batch, class) to sel (triples). */
static void nms_class(const nms_args *a, int64_t b, int64_t c, nms_box *cand, int64_t *kept,
                      int64_t *sel, int64_t *nsel) {
  const double *sc = a->scores + (b * a->nc + c) * a->nbox, *bx = a->boxes + b * a->nbox * 4;
  int64_t n = 0, nk = 0;
  for (int64_t i = 0; i < a->nbox; i++)
    if (!a->has_thr || sc[i] > a->score_thr) cand[n++] = (nms_box){sc[i], i};
  qsort(cand, (size_t)n, sizeof *cand, nms_cmp);
  for (int64_t i = 0; i < n && nk < a->max_out; i++) {
    bool keep = true;
    for (int64_t j = 0; j < nk && keep; j++)
      keep = !nms_suppress(bx + cand[i].idx * 4, bx + kept[j] * 4, a->center, a->iou);
    if (!keep) continue;
    kept[nk++] = cand[i].idx;
    int64_t *row = sel + 3 * (*nsel)++;
    row[0] = b, row[1] = c, row[2] = cand[i].idx;
  }
}

static kiln_status eval_nms(kiln_eval_ctx *ctx) {
  nms_args a;
  memset(&a, 0, sizeof a);
  kiln_status st = nms_parse(ctx, &a);
  int64_t cap = 0;
  if (!st) st = kiln_kern_mul(ctx, a.nb * a.nc, a.nbox < a.max_out ? a.nbox : a.max_out, &cap);
  if (st) {
    free(a.boxes), free(a.scores);
    return st;
  }
  nms_box *cand = kiln_xmalloc((size_t)(a.nbox + 1) * sizeof *cand);
  int64_t *kept = kiln_xmalloc((size_t)(a.nbox + 1) * sizeof(int64_t));
  int64_t *sel = kiln_xmalloc((size_t)(3 * cap + 1) * sizeof(int64_t)), nsel = 0;
  for (int64_t b = 0; b < a.nb; b++)
    for (int64_t c = 0; c < a.nc; c++) nms_class(&a, b, c, cand, kept, sel, &nsel);
  kiln_tensor *y;
  st = kiln_eval_out(ctx, 0, KILN_I64, 2, (int64_t[]){nsel, 3}, &y);
  if (!st && nsel) memcpy(y->data, sel, (size_t)(3 * nsel) * sizeof(int64_t));
  free(cand), free(kept), free(sel), free(a.boxes), free(a.scores);
  return st;
}

/* ---- RoiAlign ---- */
typedef struct roi_args {
  const kiln_tensor *x, *rois, *bidx;
  int64_t n, c, h, w, nroi, oh, ow, sampling;
  double scale;
  bool half_pixel, max_mode;
} roi_args;

static kiln_status roi_parse(kiln_eval_ctx *ctx, roi_args *a) {
  KILN_TRY(kiln_eval_in_req(ctx, 0, &a->x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &a->rois));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &a->bidx));
  KILN_TRY(kiln_kern_need_float(ctx, a->x, "X"));
  const kiln_tensor *x = a->x;
  if (x->rank != 4 || a->rois->rank != 2 || a->rois->dims[1] != 4 || a->bidx->rank != 1 ||
      a->bidx->dims[0] != a->rois->dims[0] || !kiln_dtype_is_int(a->bidx->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "X must be [N, C, H, W], rois [R, 4], batch_indices int [R]");
  a->n = x->dims[0], a->c = x->dims[1], a->h = x->dims[2], a->w = x->dims[3];
  a->nroi = a->rois->dims[0];
  const char *mode, *ctm;
  KILN_TRY(kiln_node_string(ctx->node, "mode", "avg", &mode));
  if (strcmp(mode, "avg") && strcmp(mode, "max"))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown mode '%s'", mode);
  a->max_mode = !strcmp(mode, "max");
  KILN_TRY(kiln_node_string(ctx->node, "coordinate_transformation_mode",
                            ctx->node->opset >= 16 ? "half_pixel" : "output_half_pixel", &ctm));
  if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown coordinate_transformation_mode '%s'",
                           ctm);
  a->half_pixel = !strcmp(ctm, "half_pixel");
  KILN_TRY(kiln_node_int(ctx->node, "output_height", 1, &a->oh));
  KILN_TRY(kiln_node_int(ctx->node, "output_width", 1, &a->ow));
  KILN_TRY(kiln_node_int(ctx->node, "sampling_ratio", 0, &a->sampling));
  float sc;
  KILN_TRY(kiln_node_float(ctx->node, "spatial_scale", 1.0f, &sc));
  a->scale = sc;
  if (a->oh < 1 || a->ow < 1 || a->sampling < 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad output size or sampling_ratio");
  return KILN_OK;
}

/* Bilinear sample weights and flat positions (ONNX Runtime's pre_calc). */
typedef struct roi_sample {
  int64_t pos[4];
  double wt[4];
} roi_sample;

static roi_sample roi_bilinear(int64_t h, int64_t w, double y, double x) {
  roi_sample s;
  memset(&s, 0, sizeof s);
  if (y < -1.0 || y > (double)h || x < -1.0 || x > (double)w) return s;
  y = fmax(y, 0), x = fmax(x, 0);
  int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
  if (yl >= h - 1) yh = yl = h - 1, y = (double)yl;
  else yh = yl + 1;
  if (xl >= w - 1) xh = xl = w - 1, x = (double)xl;
  else xh = xl + 1;
  double ly = y - (double)yl, lx = x - (double)xl, hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = yl * w + xl, s.pos[1] = yl * w + xh, s.pos[2] = yh * w + xl, s.pos[3] = yh * w + xh;
  s.wt[0] = hy * hx, s.wt[1] = hy * lx, s.wt[2] = ly * hx, s.wt[3] = ly * lx;
  return s;
}

static double roi_bin(const roi_args *a, const kiln_tensor *x, int64_t off, const double *geo,
                      int64_t ph, int64_t pw, int64_t gh, int64_t gw) {
  double acc = 0;
  bool first = true;
  for (int64_t iy = 0; iy < gh; iy++) {
    double yy = geo[0] + (double)ph * geo[2] + ((double)iy + 0.5) * geo[2] / (double)gh;
    for (int64_t ix = 0; ix < gw; ix++) {
      double xx = geo[1] + (double)pw * geo[3] + ((double)ix + 0.5) * geo[3] / (double)gw;
      roi_sample s = roi_bilinear(a->h, a->w, yy, xx);
      double v[4];
      for (int k = 0; k < 4; k++)
        v[k] = s.wt[k] * kiln_load_f64(x->dtype, x->data, (size_t)(off + s.pos[k]));
      if (!a->max_mode) {
        acc += v[0] + v[1] + v[2] + v[3];
      } else {
        double m = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
        acc = first ? m : fmax(acc, m);
        first = false;
      }
    }
  }
  if (!a->max_mode) acc /= (double)(gh * gw > 1 ? gh * gw : 1);
  return acc;
}

static kiln_status roi_one(kiln_eval_ctx *ctx, const roi_args *a, int64_t r, kiln_tensor *y) {
  int64_t b = kiln_load_i64(a->bidx->dtype, a->bidx->data, (size_t)r);
  if (b < 0 || b >= a->n)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "batch index %lld out of [0, %lld)", (long long)b,
                           (long long)a->n);
  double off = a->half_pixel ? 0.5 : 0.0, rc[4];
  for (int k = 0; k < 4; k++)
    rc[k] = kiln_load_f64(a->rois->dtype, a->rois->data, (size_t)(r * 4 + k)) * a->scale - off;
  double rw = rc[2] - rc[0], rh = rc[3] - rc[1];
  if (!a->half_pixel) rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
  double geo[4] = {rc[1], rc[0], rh / (double)a->oh, rw / (double)a->ow};
  if (!isfinite(rw) || !isfinite(rh) || rw / (double)a->ow > 1e6 || rh / (double)a->oh > 1e6)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "roi %lld has a bad or huge extent",
                           (long long)r);
  int64_t gh = a->sampling > 0 ? a->sampling : (int64_t)ceil(rh / (double)a->oh);
  int64_t gw = a->sampling > 0 ? a->sampling : (int64_t)ceil(rw / (double)a->ow);
  for (int64_t c = 0; c < a->c; c++) {
    int64_t xoff = (b * a->c + c) * a->h * a->w;
    for (int64_t ph = 0; ph < a->oh; ph++)
      for (int64_t pw = 0; pw < a->ow; pw++) {
        double v = roi_bin(a, a->x, xoff, geo, ph, pw, gh, gw);
        size_t yi = (size_t)(((r * a->c + c) * a->oh + ph) * a->ow + pw);
        kiln_store_f64(y->dtype, y->data, yi, v);
      }
  }
  return KILN_OK;
}

static kiln_status eval_roi_align(kiln_eval_ctx *ctx) {
  roi_args a;
  memset(&a, 0, sizeof a);
  KILN_TRY(roi_parse(ctx, &a));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, a.x->dtype, 4, (int64_t[]){a.nroi, a.c, a.oh, a.ow}, &y));
  for (int64_t r = 0; r < a.nroi; r++) KILN_TRY(roi_one(ctx, &a, r, y));
  return KILN_OK;
}

static kiln_status eval_image_decoder(kiln_eval_ctx *ctx) {
  return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED,
                         "ImageDecoder needs image codecs (JPEG, PNG, ...), which Kiln does not "
                         "include; decode images before the model");
}

/* ---- detection ---- */
static kiln_status infer_nms(kiln_infer_ctx *ctx) {
  set_out(ctx, 0, KILN_I64, 2, (kiln_dim[]){dunk(), dval(3)});
  return KILN_OK;
}

static kiln_status infer_roi_align(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *rois = tin_ranked(ctx, 1);
  if (!x || x->rank != 4) return KILN_OK;
  kiln_dim dims[4] = {dim_of(rois, 0), x->dims[1], dval(attr_int(ctx, "output_height", 1)),
                      dval(attr_int(ctx, "output_width", 1))};
  set_out(ctx, 0, x->dtype, 4, dims);
  return KILN_OK;
}

static kiln_status infer_image_decoder(kiln_infer_ctx *ctx) {
  const char *fmt = attr_str(ctx, "pixel_format", "RGB");
  set_out(ctx, 0, KILN_U8, 3,
          (kiln_dim[]){dunk(), dunk(), dval(!strcmp(fmt, "Grayscale") ? 1 : 3)});
  return KILN_OK;
}

void kiln_ops_register_vision(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_NonMaxSuppression, eval_nms, 2, 5, 1, 1);
  kiln_kern_set(table, KILN_OP_RoiAlign, eval_roi_align, 3, 3, 1, 1);
  kiln_kern_set(table, KILN_OP_ImageDecoder, eval_image_decoder, 1, 1, 1, 1);
  table[KILN_OP_NonMaxSuppression].infer = infer_nms;
  table[KILN_OP_RoiAlign].infer = infer_roi_align;
  table[KILN_OP_ImageDecoder].infer = infer_image_decoder;
}
