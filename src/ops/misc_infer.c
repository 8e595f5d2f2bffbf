/* Shape and type inference of the 'misc' ops. Inference is best effort: it fills the
 * dtype and whatever dims follow from the input types, attributes and constant inputs,
 * leaves data-dependent dims unknown, and never rejects a node (the kernel reports bad
 * inputs with the actual values). Symbolic dims of inputs are carried over. */
#include <string.h>

#include "misc_internal.h"

/* ---- helpers ---- */
static const kiln_type *tin(const kiln_infer_ctx *ctx, int i) {
  if (i >= ctx->n_in || !ctx->in[i] || ctx->in[i]->kind != KILN_TYPE_TENSOR) return NULL;
  return ctx->in[i];
}

static const kiln_type *tin_ranked(const kiln_infer_ctx *ctx, int i) {
  const kiln_type *t = tin(ctx, i);
  return t && t->rank >= 0 ? t : NULL;
}

static kiln_dim dunk(void) {
  return (kiln_dim){-1, NULL};
}
static kiln_dim dval(int64_t v) {
  return (kiln_dim){v, NULL};
}
static bool dknown(kiln_dim d) {
  return d.value >= 0;
}

static kiln_dim dim_of(const kiln_type *t, int i) {
  return t && t->rank > i && i >= 0 ? t->dims[i] : dunk();
}

/* Output i: a tensor of dtype and rank whose dims are dims[] (NULL = all unknown). */
static void set_out(kiln_infer_ctx *ctx, int i, kiln_dtype dt, int rank, const kiln_dim *dims) {
  if (i >= ctx->n_out || rank > KILN_MAX_RANK) return;
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_TENSOR;
  t.dtype = dt;
  t.rank = rank;
  for (int d = 0; d < rank; d++) t.dims[d] = dims ? dims[d] : dunk();
  ctx->out[i] = t;
}

static void set_like(kiln_infer_ctx *ctx, int i, kiln_dtype dt, const kiln_type *like) {
  if (!like || i >= ctx->n_out) return;
  kiln_type t = *like;
  t.dtype = dt;
  ctx->out[i] = t;
}

static int64_t attr_int(const kiln_infer_ctx *ctx, const char *name, int64_t dflt) {
  int64_t v = dflt;
  kiln_status st = kiln_node_int(ctx->node, name, dflt, &v);
  if (st) kiln_status_free(st), v = dflt;
  return v;
}

static const char *attr_str(const kiln_infer_ctx *ctx, const char *name, const char *dflt) {
  const char *v = dflt;
  kiln_status st = kiln_node_string(ctx->node, name, dflt, &v);
  if (st) kiln_status_free(st), v = dflt;
  return v;
}

/* The single value of constant input i, if known. */
static bool const_i64(const kiln_infer_ctx *ctx, int i, int64_t *out) {
  if (i >= ctx->n_in || !ctx->cin[i] || ctx->cin[i]->numel != 1) return false;
  const kiln_tensor *t = ctx->cin[i];
  if (kiln_dtype_class_of(t->dtype) == KILN_CLASS_NONE || t->dtype == KILN_STRING) return false;
  *out = kiln_load_i64(t->dtype, t->data, 0);
  return true;
}

static kiln_dtype valid_dtype(int64_t dt, kiln_dtype dflt) {
  return kiln_dtype_valid((int)dt) ? (kiln_dtype)dt : dflt;
}

/* ---- losses ---- */
static kiln_status infer_loss(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin(ctx, 0), *t = tin(ctx, 1);
  if (!x) return KILN_OK;
  if (!strcmp(attr_str(ctx, "reduction", "mean"), "none")) set_like(ctx, 0, x->dtype, t);
  else set_out(ctx, 0, x->dtype, 0, NULL);
  set_like(ctx, 1, x->dtype, x);
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

/* ---- recurrent ---- */
static kiln_status infer_rnn(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *r = tin_ranked(ctx, 2);
  if (!x || x->rank != 3) return KILN_OK;
  bool l1 = attr_int(ctx, "layout", 0) != 0;
  int64_t ndir = !strcmp(attr_str(ctx, "direction", "forward"), "bidirectional") ? 2 : 1;
  int64_t hs = attr_int(ctx, "hidden_size", -1);
  kiln_dim hid = hs > 0 ? dval(hs) : r && r->rank == 3 ? r->dims[2] : dunk();
  kiln_dim seq = x->dims[l1 ? 1 : 0], batch = x->dims[l1 ? 0 : 1], nd = dval(ndir);
  kiln_dim y[4] = {seq, nd, batch, hid}, ys[3] = {nd, batch, hid};
  if (l1) y[0] = batch, y[1] = seq, y[2] = nd, ys[0] = batch, ys[1] = nd;
  set_out(ctx, 0, x->dtype, 4, y);
  set_out(ctx, 1, x->dtype, 3, ys);
  set_out(ctx, 2, x->dtype, 3, ys);
  return KILN_OK;
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

/* ---- attention ---- */
static kiln_status infer_attention(kiln_infer_ctx *ctx) {
  const kiln_type *q = tin_ranked(ctx, 0), *k = tin_ranked(ctx, 1), *v = tin_ranked(ctx, 2);
  const kiln_type *pk = tin_ranked(ctx, 4);
  if (!q || !k || !v || q->rank != k->rank || q->rank != v->rank) return KILN_OK;
  kiln_dtype dt = q->dtype;
  kiln_dim B = q->dims[0], Hq, Hkv, Sq, Skv, dq, dv;
  if (q->rank == 4) {
    Hq = q->dims[1], Sq = q->dims[2], dq = q->dims[3];
    Hkv = k->dims[1], Skv = k->dims[2], dv = v->dims[3];
  } else if (q->rank == 3) {
    int64_t hq = attr_int(ctx, "q_num_heads", 0), hk = attr_int(ctx, "kv_num_heads", 0);
    if (hq < 1 || hk < 1) return KILN_OK;
    Hq = dval(hq), Hkv = dval(hk), Sq = q->dims[1], Skv = k->dims[1];
    dq = dknown(q->dims[2]) ? dval(q->dims[2].value / hq) : dunk();
    dv = dknown(v->dims[2]) ? dval(v->dims[2].value / hk) : dunk();
    kiln_dim y[3] = {B, Sq, dknown(dv) ? dval(dv.value * hq) : dunk()};
    set_out(ctx, 0, dt, 3, y);
  } else {
    return KILN_OK;
  }
  if (q->rank == 4) set_out(ctx, 0, dt, 4, (kiln_dim[]){B, Hq, Sq, dv});
  kiln_dim T = Skv;
  if (pk && pk->rank == 4) {
    kiln_dim P = pk->dims[2];
    T = dknown(P) && dknown(Skv) ? dval(P.value + Skv.value) : dunk();
  }
  set_out(ctx, 1, dt, 4, (kiln_dim[]){B, Hkv, T, dq});
  set_out(ctx, 2, dt, 4, (kiln_dim[]){B, Hkv, T, dv});
  set_out(ctx, 3, dt, 4, (kiln_dim[]){B, Hq, Sq, T});
  return KILN_OK;
}

static kiln_status infer_same0(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin(ctx, 0);
  if (x) set_like(ctx, 0, x->dtype, x);
  return KILN_OK;
}

static kiln_status infer_linear_attention(kiln_infer_ctx *ctx) {
  const kiln_type *q = tin_ranked(ctx, 0), *v = tin_ranked(ctx, 2), *past = tin(ctx, 3);
  if (!q || !v || q->rank != 3 || v->rank != 3) return KILN_OK;
  int64_t hq = attr_int(ctx, "q_num_heads", 0), hk = attr_int(ctx, "kv_num_heads", 0);
  if (hq < 1 || hk < 1) return KILN_OK;
  kiln_dim dk = dknown(q->dims[2]) ? dval(q->dims[2].value / hq) : dunk();
  kiln_dim dv = dknown(v->dims[2]) ? dval(v->dims[2].value / hk) : dunk();
  set_out(ctx, 0, q->dtype, 3,
          (kiln_dim[]){q->dims[0], q->dims[1], dknown(dv) ? dval(dv.value * hq) : dunk()});
  set_out(ctx, 1, past ? past->dtype : q->dtype, 4, (kiln_dim[]){q->dims[0], dval(hk), dk, dv});
  return KILN_OK;
}

static kiln_status infer_causal_conv(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *w = tin_ranked(ctx, 1), *past = tin(ctx, 3);
  if (!x || x->rank != 3) return KILN_OK;
  set_like(ctx, 0, x->dtype, x);
  kiln_dim k = w && w->rank == 3 && dknown(w->dims[2]) ? dval(w->dims[2].value - 1) : dunk();
  set_out(ctx, 1, past ? past->dtype : x->dtype, 3, (kiln_dim[]){x->dims[0], x->dims[1], k});
  return KILN_OK;
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

/* ---- strings ---- */
static kiln_status infer_string_concat(kiln_infer_ctx *ctx) {
  kiln_type t;
  if (!tin(ctx, 0) || !tin(ctx, 1)) return KILN_OK;
  kiln_status st = kiln_infer_broadcast(ctx, 2, &t);
  if (st) { /* the kernel reports incompatible shapes with their values */
    kiln_status_free(st);
    return KILN_OK;
  }
  t.dtype = KILN_STRING;
  ctx->out[0] = t;
  return KILN_OK;
}

static kiln_status infer_string_split(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  if (!x || x->rank + 1 > KILN_MAX_RANK) return KILN_OK;
  kiln_dim dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, (size_t)x->rank * sizeof(kiln_dim));
  dims[x->rank] = dunk();
  set_out(ctx, 0, KILN_STRING, x->rank + 1, dims);
  set_like(ctx, 1, KILN_I64, x);
  return KILN_OK;
}

static kiln_status infer_string_normalizer(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  if (!x || x->rank < 1 || x->rank > 2) return KILN_OK;
  kiln_dim dims[2] = {dval(1), dunk()};
  set_out(ctx, 0, KILN_STRING, x->rank, x->rank == 1 ? dims + 1 : dims);
  return KILN_OK;
}

static kiln_status infer_regex(kiln_infer_ctx *ctx) {
  set_like(ctx, 0, KILN_BOOL, tin(ctx, 0));
  return KILN_OK;
}

static kiln_status infer_tfidf(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  const int64_t *idx;
  int n;
  kiln_status st = kiln_node_ints(ctx->node, "ngram_indexes", &idx, &n);
  if (st) kiln_status_free(st), n = -1;
  int64_t size = -1;
  for (int i = 0; i < n; i++) size = idx[i] + 1 > size ? idx[i] + 1 : size;
  kiln_dim d = size > 0 ? dval(size) : dunk();
  if (x && x->rank == 2) set_out(ctx, 0, KILN_F32, 2, (kiln_dim[]){x->dims[0], d});
  else set_out(ctx, 0, KILN_F32, 1, &d);
  return KILN_OK;
}

static kiln_status infer_image_decoder(kiln_infer_ctx *ctx) {
  const char *fmt = attr_str(ctx, "pixel_format", "RGB");
  set_out(ctx, 0, KILN_U8, 3,
          (kiln_dim[]){dunk(), dunk(), dval(!strcmp(fmt, "Grayscale") ? 1 : 3)});
  return KILN_OK;
}

/* ---- random ---- */
static kiln_status infer_random(kiln_infer_ctx *ctx) {
  const int64_t *shape;
  int n;
  kiln_status st = kiln_node_ints(ctx->node, "shape", &shape, &n);
  if (st) kiln_status_free(st), n = -1;
  if (n < 0 || n > KILN_MAX_RANK) return KILN_OK;
  kiln_dim dims[KILN_MAX_RANK];
  for (int i = 0; i < n; i++) dims[i] = shape[i] >= 0 ? dval(shape[i]) : dunk();
  set_out(ctx, 0, valid_dtype(attr_int(ctx, "dtype", KILN_F32), KILN_F32), n, dims);
  return KILN_OK;
}

static kiln_status infer_random_like(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin(ctx, 0);
  if (x) set_like(ctx, 0, valid_dtype(attr_int(ctx, "dtype", x->dtype), x->dtype), x);
  return KILN_OK;
}

static kiln_status infer_multinomial(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  kiln_dim dims[2] = {dim_of(x, 0), dval(attr_int(ctx, "sample_size", 1))};
  set_out(ctx, 0, valid_dtype(attr_int(ctx, "dtype", KILN_I32), KILN_I32), 2, dims);
  return KILN_OK;
}

void kiln_misc_register_infer(kiln_op_impl *table) {
  static const struct {
    kiln_op op;
    kiln_infer_fn fn;
  } fns[] = {
      {KILN_OP_NegativeLogLikelihoodLoss, infer_loss},
      {KILN_OP_SoftmaxCrossEntropyLoss, infer_loss},
      {KILN_OP_QuantizeLinear, infer_quantize},
      {KILN_OP_DequantizeLinear, infer_dequantize},
      {KILN_OP_DynamicQuantizeLinear, infer_dynamic_quantize},
      {KILN_OP_QLinearMatMul, infer_qlinear_matmul},
      {KILN_OP_QLinearConv, infer_qlinear_conv},
      {KILN_OP_RNN, infer_rnn},
      {KILN_OP_GRU, infer_rnn},
      {KILN_OP_LSTM, infer_rnn},
      {KILN_OP_DFT, infer_dft},
      {KILN_OP_STFT, infer_stft},
      {KILN_OP_HannWindow, infer_window},
      {KILN_OP_HammingWindow, infer_window},
      {KILN_OP_BlackmanWindow, infer_window},
      {KILN_OP_MelWeightMatrix, infer_mel},
      {KILN_OP_Attention, infer_attention},
      {KILN_OP_RotaryEmbedding, infer_same0},
      {KILN_OP_LinearAttention, infer_linear_attention},
      {KILN_OP_CausalConvWithState, infer_causal_conv},
      {KILN_OP_NonMaxSuppression, infer_nms},
      {KILN_OP_RoiAlign, infer_roi_align},
      {KILN_OP_StringConcat, infer_string_concat},
      {KILN_OP_StringSplit, infer_string_split},
      {KILN_OP_StringNormalizer, infer_string_normalizer},
      {KILN_OP_RegexFullMatch, infer_regex},
      {KILN_OP_TfIdfVectorizer, infer_tfidf},
      {KILN_OP_ImageDecoder, infer_image_decoder},
      {KILN_OP_RandomUniform, infer_random},
      {KILN_OP_RandomNormal, infer_random},
      {KILN_OP_RandomUniformLike, infer_random_like},
      {KILN_OP_RandomNormalLike, infer_random_like},
      {KILN_OP_Bernoulli, infer_random_like},
      {KILN_OP_Multinomial, infer_multinomial},
  };
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) table[fns[i].op].infer = fns[i].fn;
}
