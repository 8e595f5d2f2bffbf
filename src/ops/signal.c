/* Ops of the 'signal' family (see src/graph/ops.def), signal processing: DFT (17: axis attribute;
 * 20: axis input), STFT (17), the windows HannWindow / HammingWindow / BlackmanWindow (17) and
 * MelWeightMatrix (17).
 *
 * Transforms are direct O(N^2) sums in double with exactly reduced twiddle angles
 * (2*pi*((k*n) mod N)/N): slow but obviously right, which is what an oracle needs.
 * Complex tensors are real tensors whose last dim is 2 (re, im); a last dim of 1
 * means real input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

static const double kPi = 3.14159265358979323846;

/* ---- 1-D transforms on complex double arrays ----
 * Forward: y[k] = sum_n x[n] e^{-2 pi i k n / N}; inverse: (1/N) sum with e^{+...}.
 * `in` holds nin samples (zero-padded or truncated to N); out receives nout bins. */
static void dft_1d(const double *in_re, const double *in_im, int64_t nin, int64_t n, bool inverse,
                   int64_t nout, double *out_re, double *out_im) {
  int64_t m = nin < n ? nin : n;
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < nout; k++) {
    double sr = 0, si = 0;
    for (int64_t t = 0; t < m; t++) {
      double ang = sign * 2.0 * kPi * (double)((k * t) % n) / (double)n;
      double c = cos(ang), s = sin(ang);
      sr += in_re[t] * c - in_im[t] * s;
      si += in_re[t] * s + in_im[t] * c;
    }
    out_re[k] = inverse ? sr / (double)n : sr;
    out_im[k] = inverse ? si / (double)n : si;
  }
}

/* Inverse of a one-sided (Hermitian) spectrum of nin bins into n real samples, as
 * numpy.fft.irfft: bins past n/2 are the conjugates of the first ones and the
 * imaginary parts of the DC and (even n) Nyquist bins are ignored. */
static void irfft_1d(const double *in_re, const double *in_im, int64_t nin, int64_t n,
                     double *out) {
  int64_t half = n / 2;
  for (int64_t t = 0; t < n; t++) {
    double s = nin > 0 ? in_re[0] : 0;
    for (int64_t k = 1; k <= half && k < nin; k++) {
      double ang = 2.0 * kPi * (double)((k * t) % n) / (double)n;
      double term = in_re[k] * cos(ang) - in_im[k] * sin(ang);
      s += (2 * k == n) ? in_re[k] * cos(ang) : 2 * term;
    }
    out[t] = s / (double)n;
  }
}

/* ---- DFT ---- */
typedef struct dft_args {
  int axis;
  int64_t n; /* dft_length */
  bool inverse, onesided;
} dft_args;

static kiln_status dft_parse(kiln_eval_ctx *ctx, const kiln_tensor *x, dft_args *a) {
  int64_t v, axis;
  KILN_TRY(kiln_node_int(ctx->node, "inverse", 0, &v));
  a->inverse = v != 0;
  KILN_TRY(kiln_node_int(ctx->node, "onesided", 0, &v));
  a->onesided = v != 0;
  bool has;
  if (ctx->node->opset >= 20) {
    KILN_TRY(kiln_kern_scalar_i64(ctx, 2, &has, &axis));
    if (!has) axis = -2;
  } else {
    if (kiln_eval_in(ctx, 2))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "the axis input needs opset 20");
    KILN_TRY(kiln_node_int(ctx->node, "axis", 1, &axis));
  }
  int r = x->rank;
  if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must have rank >= 2 and last dim 1 or 2");
  if (axis < -r || axis > r - 2 || axis == -1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis %lld out of range for rank %d",
                           (long long)axis, r);
  a->axis = (int)(axis < 0 ? axis + r : axis);
  int64_t len = x->dims[a->axis];
  KILN_TRY(kiln_kern_scalar_i64(ctx, 1, &has, &a->n));
  if (!has) a->n = (a->inverse && a->onesided) ? 2 * (len - 1) : len;
  if (a->n < 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "dft_length must be >= 1, is %lld",
                           (long long)a->n);
  return KILN_OK;
}

static kiln_status eval_dft(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_kern_need_float(ctx, x, "input"));
  dft_args a;
  KILN_TRY(dft_parse(ctx, x, &a));
  int r = x->rank;
  bool cin = x->dims[r - 1] == 2, real_out = a.inverse && a.onesided;
  int64_t len = x->dims[a.axis];
  int64_t nout = real_out ? a.n : (a.onesided ? a.n / 2 + 1 : a.n);
  int64_t dims[KILN_MAX_RANK], outer = 1, inner = 1;
  memcpy(dims, x->dims, sizeof dims);
  dims[a.axis] = nout;
  dims[r - 1] = real_out ? 1 : 2;
  for (int i = 0; i < a.axis; i++) outer *= x->dims[i];
  for (int i = a.axis + 1; i < r - 1; i++) inner *= x->dims[i];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, r, dims, &y));
  size_t cap = (size_t)(len > nout ? len : nout) + 1;
  double *ire = kiln_xcalloc(cap, sizeof(double)), *iim = kiln_xcalloc(cap, sizeof(double));
  double *ore = kiln_xcalloc(cap, sizeof(double)), *oim = kiln_xcalloc(cap, sizeof(double));
  int64_t cw = x->dims[r - 1], ow = dims[r - 1];
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      for (int64_t t = 0; t < len; t++) {
        size_t base = (size_t)(((o * len + t) * inner + i) * cw);
        ire[t] = kiln_load_f64(x->dtype, x->data, base);
        iim[t] = cin ? kiln_load_f64(x->dtype, x->data, base + 1) : 0.0;
      }
      if (real_out) irfft_1d(ire, iim, len, a.n, ore);
      else dft_1d(ire, iim, len, a.n, a.inverse, nout, ore, oim);
      for (int64_t k = 0; k < nout; k++) {
        size_t base = (size_t)(((o * nout + k) * inner + i) * ow);
        kiln_store_f64(y->dtype, y->data, base, ore[k]);
        if (!real_out) kiln_store_f64(y->dtype, y->data, base + 1, oim[k]);
      }
    }
  }
  free(ire), free(iim), free(ore), free(oim);
  return KILN_OK;
}

/* ---- STFT: signal [B, L, 1|2], frame_step, window [W]?, frame_length? ->
 * [B, frames, bins, 2], frames = 1 + (L - frame_length) / frame_step ---- */
typedef struct stft_args {
  int64_t batch, len, step, flen, frames, bins;
  bool cin, onesided;
  double *win; /* [flen], NULL = rectangular */
} stft_args;

static kiln_status stft_parse(kiln_eval_ctx *ctx, const kiln_tensor *x, stft_args *a) {
  memset(a, 0, sizeof *a);
  if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "signal must be [batch, length, 1 or 2]");
  a->batch = x->dims[0];
  a->len = x->dims[1];
  a->cin = x->dims[2] == 2;
  bool has;
  KILN_TRY(kiln_kern_scalar_i64(ctx, 1, &has, &a->step));
  if (!has || a->step < 1) return kiln_eval_error(ctx, KILN_ERR_INVALID, "frame_step must be >= 1");
  const kiln_tensor *w = kiln_eval_in(ctx, 2);
  KILN_TRY(kiln_kern_scalar_i64(ctx, 3, &has, &a->flen));
  if (w && w->rank != 1) return kiln_eval_error(ctx, KILN_ERR_INVALID, "window must be 1-D");
  if (!has) a->flen = w ? w->dims[0] : a->len;
  if (w && w->dims[0] != a->flen)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "window length %lld != frame_length %lld",
                           (long long)w->dims[0], (long long)a->flen);
  if (a->flen < 1 || a->flen > a->len)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "frame_length %lld not in [1, %lld]",
                           (long long)a->flen, (long long)a->len);
  int64_t v;
  KILN_TRY(kiln_node_int(ctx->node, "onesided", 1, &v));
  a->onesided = v != 0;
  if (a->onesided && a->cin)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "onesided STFT needs a real signal");
  a->frames = 1 + (a->len - a->flen) / a->step;
  a->bins = a->onesided ? a->flen / 2 + 1 : a->flen;
  if (w) KILN_TRY(kiln_kern_load_all_f64(ctx, w, &a->win));
  return KILN_OK;
}

static kiln_status eval_stft(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_kern_need_float(ctx, x, "signal"));
  stft_args a;
  KILN_TRY(stft_parse(ctx, x, &a));
  kiln_tensor *y;
  kiln_status st =
      kiln_eval_out(ctx, 0, x->dtype, 4, (int64_t[]){a.batch, a.frames, a.bins, 2}, &y);
  if (st) {
    free(a.win);
    return st;
  }
  size_t cap = (size_t)a.flen + 1;
  double *ire = kiln_xcalloc(cap, sizeof(double)), *iim = kiln_xcalloc(cap, sizeof(double));
  double *ore = kiln_xcalloc(cap, sizeof(double)), *oim = kiln_xcalloc(cap, sizeof(double));
  int64_t cw = x->dims[2];
  for (int64_t b = 0; b < a.batch; b++) {
    for (int64_t f = 0; f < a.frames; f++) {
      for (int64_t t = 0; t < a.flen; t++) {
        size_t at = (size_t)((b * a.len + f * a.step + t) * cw);
        double w = a.win ? a.win[t] : 1.0;
        ire[t] = w * kiln_load_f64(x->dtype, x->data, at);
        iim[t] = a.cin ? w * kiln_load_f64(x->dtype, x->data, at + 1) : 0.0;
      }
      dft_1d(ire, iim, a.flen, a.flen, false, a.bins, ore, oim);
      for (int64_t k = 0; k < a.bins; k++) {
        size_t at = (size_t)(((b * a.frames + f) * a.bins + k) * 2);
        kiln_store_f64(y->dtype, y->data, at, ore[k]);
        kiln_store_f64(y->dtype, y->data, at + 1, oim[k]);
      }
    }
  }
  free(ire), free(iim), free(ore), free(oim), free(a.win);
  return KILN_OK;
}

/* ---- windows: w[n] for n in [0, size), N = size (periodic) or size - 1 ---- */
typedef enum { WIN_HANN, WIN_HAMMING, WIN_BLACKMAN } win_kind;

static double window_value(win_kind k, int64_t n, int64_t N) {
  double x = 2.0 * kPi * (double)n / (double)N;
  switch (k) {
  case WIN_HANN: {
    double s = sin(kPi * (double)n / (double)N);
    return s * s;
  }
  case WIN_HAMMING: return 25.0 / 46.0 - (21.0 / 46.0) * cos(x);
  case WIN_BLACKMAN: return 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
  }
  return 0;
}

static kiln_status output_datatype(const kiln_eval_ctx *ctx, kiln_dtype *out) {
  int64_t dt;
  KILN_TRY(kiln_node_int(ctx->node, "output_datatype", KILN_F32, &dt));
  if (!kiln_dtype_valid((int)dt) || dt == KILN_STRING || dt == KILN_BOOL)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad output_datatype %lld", (long long)dt);
  *out = (kiln_dtype)dt;
  return KILN_OK;
}

/* A symmetric window of size 1 would divide by zero; it is [1] (as in PyTorch). */
static kiln_status window_run(kiln_eval_ctx *ctx, win_kind kind) {
  int64_t size, periodic;
  bool has;
  KILN_TRY(kiln_kern_scalar_i64(ctx, 0, &has, &size));
  if (!has || size < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "size must be >= 0");
  KILN_TRY(kiln_node_int(ctx->node, "periodic", 1, &periodic));
  kiln_dtype dt;
  KILN_TRY(output_datatype(ctx, &dt));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, dt, 1, &size, &y));
  int64_t N = periodic ? size : size - 1;
  for (int64_t n = 0; n < size; n++)
    kiln_store_f64(dt, y->data, (size_t)n, N == 0 ? 1.0 : window_value(kind, n, N));
  return KILN_OK;
}

static kiln_status eval_hann(kiln_eval_ctx *ctx) {
  return window_run(ctx, WIN_HANN);
}
static kiln_status eval_hamming(kiln_eval_ctx *ctx) {
  return window_run(ctx, WIN_HAMMING);
}
static kiln_status eval_blackman(kiln_eval_ctx *ctx) {
  return window_run(ctx, WIN_BLACKMAN);
}

/* ---- MelWeightMatrix: [dft_length/2 + 1, num_mel_bins] triangular filters ----
 * Follows the ONNX reference: num_mel_bins + 2 band edges equally spaced in mel
 * (step = mel range / (num_mel_bins + 2)), mapped to bins floor((dft_length + 1) *
 * hz / sample_rate). */
static kiln_status mel_args(kiln_eval_ctx *ctx, int64_t *nmel, int64_t *ndft, int64_t *rate,
                            double *lo, double *hi) {
  bool h[5];
  KILN_TRY(kiln_kern_scalar_i64(ctx, 0, &h[0], nmel));
  KILN_TRY(kiln_kern_scalar_i64(ctx, 1, &h[1], ndft));
  KILN_TRY(kiln_kern_scalar_i64(ctx, 2, &h[2], rate));
  KILN_TRY(kiln_kern_scalar_f64(ctx, 3, &h[3], lo));
  KILN_TRY(kiln_kern_scalar_f64(ctx, 4, &h[4], hi));
  for (int i = 0; i < 5; i++)
    if (!h[i]) return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d is required", i);
  if (*nmel < 1 || *ndft < 1 || *rate < 1 || *lo < 0 || *hi < *lo)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad MelWeightMatrix arguments");
  return KILN_OK;
}

static kiln_status eval_mel(kiln_eval_ctx *ctx) {
  int64_t nmel, ndft, rate;
  double lo, hi;
  KILN_TRY(mel_args(ctx, &nmel, &ndft, &rate, &lo, &hi));
  kiln_dtype dt;
  KILN_TRY(output_datatype(ctx, &dt));
  int64_t nspec = ndft / 2 + 1;
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, dt, 2, (int64_t[]){nspec, nmel}, &y));
  int64_t *edge = kiln_xmalloc((size_t)(nmel + 2) * sizeof(int64_t));
  double mlo = 2595.0 * log10(1.0 + lo / 700.0), mhi = 2595.0 * log10(1.0 + hi / 700.0);
  double step = (mhi - mlo) / (double)(nmel + 2);
  for (int64_t i = 0; i < nmel + 2; i++) {
    double hz = 700.0 * (pow(10.0, ((double)i * step + mlo) / 2595.0) - 1.0);
    edge[i] = (int64_t)floor((double)(ndft + 1) * hz / (double)rate);
  }
  kiln_status st = KILN_OK;
  double *w = kiln_xcalloc((size_t)(nspec * nmel + 1), sizeof(double));
  for (int64_t i = 0; i < nmel && !st; i++) {
    int64_t l = edge[i], c = edge[i + 1], r = edge[i + 2];
    if (l < 0 || l > c || c > r || c >= nspec || r > nspec) {
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "mel band %lld falls outside the spectrum",
                           (long long)i);
      break;
    }
    if (c == l) w[c * nmel + i] = 1;
    for (int64_t j = l; c > l && j <= c; j++) w[j * nmel + i] = (double)(j - l) / (double)(c - l);
    for (int64_t j = c; j < r; j++) w[j * nmel + i] = (double)(r - j) / (double)(r - c);
  }
  for (int64_t k = 0; !st && k < nspec * nmel; k++) kiln_store_f64(dt, y->data, (size_t)k, w[k]);
  free(w);
  free(edge);
  return st;
}

/* ---- signal ---- */
static kiln_status infer_dft(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  if (!x || x->rank < 2) return KILN_OK;
  int r = x->rank;
  int64_t axis = 1, n;
  bool inverse = attr_int(ctx, "inverse", 0), onesided = attr_int(ctx, "onesided", 0);
  if (ctx->node->opset >= 20) {
    axis = -2;
    if (ctx->n_in > 2 && ctx->in[2] && !const_i64(ctx, 2, &axis)) {
      set_out(ctx, 0, x->dtype, r, NULL); /* axis not constant */
      return KILN_OK;
    }
  } else {
    axis = attr_int(ctx, "axis", 1);
  }
  if (axis < -r || axis > r - 2) return KILN_OK;
  int ax = (int)(axis < 0 ? axis + r : axis);
  kiln_dim dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, (size_t)r * sizeof(kiln_dim));
  bool has_n = ctx->n_in > 1 && ctx->in[1];
  kiln_dim len = x->dims[ax];
  if (has_n && const_i64(ctx, 1, &n)) len = dval(n);
  else if (has_n) len = dunk();
  else if (inverse && onesided) len = dknown(len) ? dval(2 * (len.value - 1)) : dunk();
  dims[ax] = (!inverse && onesided) ? (dknown(len) ? dval(len.value / 2 + 1) : dunk()) : len;
  dims[r - 1] = dval(inverse && onesided ? 1 : 2);
  set_out(ctx, 0, x->dtype, r, dims);
  return KILN_OK;
}

static kiln_status infer_stft(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *w = tin_ranked(ctx, 2);
  if (!x || x->rank != 3) return KILN_OK;
  int64_t step, flen = -1;
  if (!const_i64(ctx, 3, &flen) && w && w->rank == 1 && dknown(w->dims[0])) flen = w->dims[0].value;
  kiln_dim frames = dunk(), bins = dunk();
  if (flen > 0 && const_i64(ctx, 1, &step) && step > 0 && dknown(x->dims[1]) &&
      x->dims[1].value >= flen)
    frames = dval(1 + (x->dims[1].value - flen) / step);
  if (flen > 0) bins = dval(attr_int(ctx, "onesided", 1) ? flen / 2 + 1 : flen);
  kiln_dim dims[4] = {x->dims[0], frames, bins, dval(2)};
  set_out(ctx, 0, x->dtype, 4, dims);
  return KILN_OK;
}

static kiln_status infer_window(kiln_infer_ctx *ctx) {
  int64_t size;
  kiln_dim d = const_i64(ctx, 0, &size) && size >= 0 ? dval(size) : dunk();
  set_out(ctx, 0, valid_dtype(attr_int(ctx, "output_datatype", KILN_F32), KILN_F32), 1, &d);
  return KILN_OK;
}

static kiln_status infer_mel(kiln_infer_ctx *ctx) {
  int64_t nmel, ndft;
  kiln_dim dims[2] = {dunk(), dunk()};
  if (const_i64(ctx, 1, &ndft) && ndft > 0) dims[0] = dval(ndft / 2 + 1);
  if (const_i64(ctx, 0, &nmel) && nmel > 0) dims[1] = dval(nmel);
  set_out(ctx, 0, valid_dtype(attr_int(ctx, "output_datatype", KILN_F32), KILN_F32), 2, dims);
  return KILN_OK;
}

void kiln_ops_register_signal(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_DFT, eval_dft, 1, 3, 1, 1);
  kiln_kern_set(table, KILN_OP_STFT, eval_stft, 2, 4, 1, 1);
  kiln_kern_set(table, KILN_OP_HannWindow, eval_hann, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_HammingWindow, eval_hamming, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_BlackmanWindow, eval_blackman, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_MelWeightMatrix, eval_mel, 5, 5, 1, 1);
  table[KILN_OP_DFT].infer = infer_dft;
  table[KILN_OP_STFT].infer = infer_stft;
  table[KILN_OP_HannWindow].infer = infer_window;
  table[KILN_OP_HammingWindow].infer = infer_window;
  table[KILN_OP_BlackmanWindow].infer = infer_window;
  table[KILN_OP_MelWeightMatrix].infer = infer_mel;
}
