/* Attention (23, 24) and RotaryEmbedding (23).
 *
 * Attention, per batch b, query head h and query position i, over the total key
 * positions j < T = past + kv (keys and values concatenated after past_key/value):
 *   s[j] = scale * <Q[b,h,i], K[b,g,j]>   (g = h / (Hq / Hkv): grouped-query heads)
 *   s[j] = softcap * tanh(s[j] / softcap)  when softcap > 0
 *   s[j] += bias[j]: the float mask, or -inf where a bool mask is false or where the
 *          mask (shorter than T) does not reach; -inf where is_causal and
 *          j > i + past; -inf where j >= nonpad_kv_seqlen[b] (24)
 *   Y[b,h,i] = softmax(s) . V[b,g]
 * qk_matmul_output is s after the matmul (mode 0), after softcap (1), after the bias
 * (2) or after the softmax (3). 3-D inputs are [batch, seq, heads * head_size]. All
 * arithmetic is in double; softmax_precision is therefore moot. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

typedef struct attn {
  const kiln_tensor *q, *k, *v, *mask, *pk, *pv, *nonpad;
  bool three_d, causal;
  int64_t B, Hq, Hkv, Sq, Skv, P, T, dq, dv;
  double scale, softcap;
  int64_t mode;
  int64_t mstride[4], mlen; /* mask strides over [B, Hq, Sq, j], mask last dim */
  double *K, *V;            /* present key / value, [B, Hkv, T, d] */
} attn;

static kiln_status attn_heads(kiln_eval_ctx *ctx, attn *a) {
  const kiln_tensor *q = a->q, *k = a->k, *v = a->v;
  if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "Q, K, V must all be 3-D or all 4-D");
  a->three_d = q->rank == 3;
  a->B = q->dims[0];
  if (k->dims[0] != a->B || v->dims[0] != a->B)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "Q, K, V batch sizes differ");
  if (!a->three_d) {
    a->Hq = q->dims[1], a->Sq = q->dims[2], a->dq = q->dims[3];
    a->Hkv = k->dims[1], a->Skv = k->dims[2], a->dv = v->dims[3];
    if (k->dims[3] != a->dq || v->dims[1] != a->Hkv || v->dims[2] != a->Skv)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "K / V shapes do not match Q");
  } else {
    KILN_TRY(kiln_node_int(ctx->node, "q_num_heads", 0, &a->Hq));
    KILN_TRY(kiln_node_int(ctx->node, "kv_num_heads", 0, &a->Hkv));
    if (a->Hq < 1 || a->Hkv < 1 || q->dims[2] % a->Hq || k->dims[2] % a->Hkv || v->dims[2] % a->Hkv)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "3-D inputs need q_num_heads / kv_num_heads dividing hidden sizes");
    a->Sq = q->dims[1], a->dq = q->dims[2] / a->Hq;
    a->Skv = k->dims[1], a->dv = v->dims[2] / a->Hkv;
    if (k->dims[2] / a->Hkv != a->dq || v->dims[1] != a->Skv)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "K / V shapes do not match Q");
  }
  if (a->Hq % a->Hkv)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "q heads %lld not a multiple of kv heads %lld",
                           (long long)a->Hq, (long long)a->Hkv);
  return KILN_OK;
}

static kiln_status attn_past(kiln_eval_ctx *ctx, attn *a) {
  a->P = 0;
  if (!a->pk && !a->pv) return KILN_OK;
  const kiln_tensor *pk = a->pk, *pv = a->pv;
  if (!pk || !pv || pk->rank != 4 || pv->rank != 4 || pk->dims[0] != a->B ||
      pk->dims[1] != a->Hkv || pk->dims[3] != a->dq || pv->dims[0] != a->B ||
      pv->dims[1] != a->Hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != a->dv)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "past_key / past_value must be [B, kv_heads, past, head_size]");
  a->P = pk->dims[2];
  return KILN_OK;
}

/* Mask broadcast (right-aligned) against [B, Hq, Sq, mlen]; mlen <= T. */
static kiln_status attn_mask_strides(kiln_eval_ctx *ctx, attn *a) {
  const kiln_tensor *m = a->mask;
  if (!m) return KILN_OK;
  if (m->rank < 1 || m->rank > 4)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "attn_mask must have rank 1 to 4");
  if (m->dtype != KILN_BOOL && !kiln_dtype_is_float(m->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "attn_mask must be bool or float");
  int64_t want[4] = {a->B, a->Hq, a->Sq, 0}, stride = 1;
  a->mlen = m->dims[m->rank - 1];
  if (a->mlen > a->T)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "attn_mask last dim %lld exceeds %lld",
                           (long long)a->mlen, (long long)a->T);
  a->mstride[3] = 1;
  stride = a->mlen;
  for (int i = 2; i >= 0; i--) {
    int mi = m->rank - 4 + i;
    int64_t d = mi >= 0 ? m->dims[mi] : 1;
    if (d != 1 && d != want[i])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "attn_mask dim %d (%lld) does not broadcast",
                             mi, (long long)d);
    a->mstride[i] = d == 1 ? 0 : stride;
    stride *= d;
  }
  return KILN_OK;
}

static kiln_status attn_attrs(kiln_eval_ctx *ctx, attn *a) {
  int64_t v;
  float f;
  KILN_TRY(kiln_node_int(ctx->node, "is_causal", 0, &v));
  a->causal = v != 0;
  KILN_TRY(kiln_node_float(ctx->node, "softcap", 0, &f));
  a->softcap = f;
  KILN_TRY(kiln_node_int(ctx->node, "qk_matmul_output_mode", 0, &a->mode));
  if (a->mode < 0 || a->mode > 3)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "qk_matmul_output_mode must be 0..3");
  a->scale = 1.0 / sqrt((double)a->dq);
  if (kiln_node_attr(ctx->node, "scale")) {
    KILN_TRY(kiln_node_float(ctx->node, "scale", 1, &f));
    a->scale = f;
  }
  return KILN_OK;
}

/* Element (b, h, s, d) of a Q/K/V input in its own layout (3-D or 4-D). */
static double attn_in(const attn *a, const kiln_tensor *t, int64_t H, int64_t S, int64_t D,
                      int64_t b, int64_t h, int64_t s, int64_t d) {
  int64_t i = a->three_d ? ((b * S + s) * H + h) * D + d : ((b * H + h) * S + s) * D + d;
  return kiln_load_f64(t->dtype, t->data, (size_t)i);
}

/* Present key (or value): past then new, [B, Hkv, T, D]. */
static double *attn_present(const attn *a, const kiln_tensor *past, const kiln_tensor *cur,
                            int64_t D) {
  double *out = kiln_xmalloc((size_t)(a->B * a->Hkv * a->T * D + 1) * sizeof(double));
  for (int64_t b = 0; b < a->B; b++)
    for (int64_t h = 0; h < a->Hkv; h++)
      for (int64_t t = 0; t < a->T; t++)
        for (int64_t d = 0; d < D; d++) {
          double v = t < a->P ? kiln_load_f64(past->dtype, past->data,
                                              (size_t)(((b * a->Hkv + h) * a->P + t) * D + d))
                              : attn_in(a, cur, a->Hkv, a->Skv, D, b, h, t - a->P, d);
          out[((b * a->Hkv + h) * a->T + t) * D + d] = v;
        }
  return out;
}

static double attn_bias(const attn *a, int64_t b, int64_t h, int64_t i, int64_t j) {
  double bias = 0;
  if (a->mask) {
    if (j >= a->mlen) return -INFINITY;
    int64_t off = b * a->mstride[0] + h * a->mstride[1] + i * a->mstride[2] + j;
    double m = kiln_load_f64(a->mask->dtype, a->mask->data, (size_t)off);
    if (a->mask->dtype == KILN_BOOL) bias = m != 0 ? 0 : -INFINITY;
    else bias = m;
  }
  if (a->causal && j > i + a->P) bias = -INFINITY;
  if (a->nonpad && j >= kiln_load_i64(a->nonpad->dtype, a->nonpad->data, (size_t)b))
    bias = -INFINITY;
  return bias;
}

/* Scores of one query row into s[T] and, if qk != NULL, the requested qk output row. */
static void attn_row(const attn *a, int64_t b, int64_t h, int64_t i, double *s, double *qk) {
  int64_t g = h / (a->Hq / a->Hkv);
  for (int64_t j = 0; j < a->T; j++) {
    const double *kr = a->K + ((b * a->Hkv + g) * a->T + j) * a->dq;
    double dot = 0;
    for (int64_t d = 0; d < a->dq; d++)
      dot += attn_in(a, a->q, a->Hq, a->Sq, a->dq, b, h, i, d) * kr[d];
    double v = dot * a->scale;
    if (qk && a->mode == 0) qk[j] = v;
    if (a->softcap > 0) v = a->softcap * tanh(v / a->softcap);
    if (qk && a->mode == 1) qk[j] = v;
    v += attn_bias(a, b, h, i, j);
    if (qk && a->mode == 2) qk[j] = v;
    s[j] = v;
  }
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < a->T; j++) mx = fmax(mx, s[j]);
  for (int64_t j = 0; j < a->T; j++) sum += (s[j] = exp(s[j] - mx));
  for (int64_t j = 0; j < a->T; j++) s[j] /= sum;
  if (qk && a->mode == 3) memcpy(qk, s, (size_t)a->T * sizeof(double));
}

static kiln_status attn_store(kiln_eval_ctx *ctx, int i, kiln_dtype dt, int rank,
                              const int64_t *dims, const double *data) {
  if (!kiln_kern_want_out(ctx, i)) return KILN_OK;
  kiln_tensor *t;
  KILN_TRY(kiln_eval_out(ctx, i, dt, rank, dims, &t));
  for (int64_t k = 0; k < t->numel; k++) kiln_store_f64(dt, t->data, (size_t)k, data[k]);
  return KILN_OK;
}

static kiln_status attn_compute(kiln_eval_ctx *ctx, attn *a) {
  kiln_dtype dt = a->q->dtype;
  int64_t nrows = a->B * a->Hq * a->Sq, n_y, n_qk, bytes; /* nrows: elements of Q */
  bool over = kiln_mul_overflow_i64(nrows, a->dv, &n_y) ||
              kiln_mul_overflow_i64(nrows, a->T, &n_qk) ||
              kiln_add_overflow_i64(n_y, n_qk, &bytes) || kiln_mul_overflow_i64(bytes, 8, &bytes);
  KILN_TRY(kiln_eval_scratch_check(ctx, over ? -1 : bytes, "the attention scores and result"));
  double *y = kiln_xcalloc((size_t)(nrows * a->dv + 1), sizeof(double));
  double *qk = kiln_xcalloc((size_t)(nrows * a->T + 1), sizeof(double));
  double *s = kiln_xmalloc((size_t)(a->T + 1) * sizeof(double));
  for (int64_t b = 0; b < a->B; b++)
    for (int64_t h = 0; h < a->Hq; h++)
      for (int64_t i = 0; i < a->Sq; i++) {
        int64_t row = (b * a->Hq + h) * a->Sq + i, g = h / (a->Hq / a->Hkv);
        attn_row(a, b, h, i, s, qk + row * a->T);
        /* Y in 4-D layout first; 3-D output is [B, Sq, Hq * dv]. */
        double *yr = a->three_d ? y + ((b * a->Sq + i) * a->Hq + h) * a->dv : y + row * a->dv;
        for (int64_t j = 0; j < a->T; j++) {
          const double *vr = a->V + ((b * a->Hkv + g) * a->T + j) * a->dv;
          for (int64_t d = 0; d < a->dv; d++) yr[d] += s[j] * vr[d];
        }
      }
  kiln_status st;
  if (a->three_d) st = attn_store(ctx, 0, dt, 3, (int64_t[]){a->B, a->Sq, a->Hq * a->dv}, y);
  else st = attn_store(ctx, 0, dt, 4, (int64_t[]){a->B, a->Hq, a->Sq, a->dv}, y);
  if (!st) st = attn_store(ctx, 1, dt, 4, (int64_t[]){a->B, a->Hkv, a->T, a->dq}, a->K);
  if (!st) st = attn_store(ctx, 2, dt, 4, (int64_t[]){a->B, a->Hkv, a->T, a->dv}, a->V);
  if (!st) st = attn_store(ctx, 3, dt, 4, (int64_t[]){a->B, a->Hq, a->Sq, a->T}, qk);
  free(y), free(qk), free(s);
  return st;
}

static kiln_status eval_attention(kiln_eval_ctx *ctx) {
  attn a;
  memset(&a, 0, sizeof a);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &a.q));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &a.k));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &a.v));
  a.mask = kiln_eval_in(ctx, 3);
  a.pk = kiln_eval_in(ctx, 4);
  a.pv = kiln_eval_in(ctx, 5);
  a.nonpad = kiln_eval_in(ctx, 6);
  if (a.nonpad && ctx->node->opset < 24)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "nonpad_kv_seqlen needs opset 24");
  KILN_TRY(kiln_kern_need_float(ctx, a.q, "Q"));
  KILN_TRY(attn_heads(ctx, &a));
  KILN_TRY(attn_past(ctx, &a));
  a.T = a.P + a.Skv;
  if (a.nonpad &&
      (a.nonpad->rank != 1 || a.nonpad->dims[0] != a.B || !kiln_dtype_is_int(a.nonpad->dtype)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "nonpad_kv_seqlen must be an int [batch]");
  KILN_TRY(attn_mask_strides(ctx, &a));
  KILN_TRY(attn_attrs(ctx, &a));
  int64_t tot;
  KILN_TRY(kiln_kern_mul(ctx, a.B * a.Hq * a.Sq, a.T + a.dq + a.dv, &tot));
  a.K = attn_present(&a, a.pk, a.k, a.dq);
  a.V = attn_present(&a, a.pv, a.v, a.dv);
  kiln_status st = attn_compute(ctx, &a);
  free(a.K), free(a.V);
  return st;
}

/* ---- RotaryEmbedding ----
 * X is [B, H, S, D] or [B, S, H * D] (num_heads). The first R dims of each head
 * (rotary_embedding_dim, default D) rotate by the angle whose cos / sin come from
 * cos_cache[position_ids[b, s]] ([max_pos, R/2]) or cos_cache[b, s] without
 * position_ids; pairs are (k, k + R/2), or (2k, 2k + 1) when interleaved. */
typedef struct rope {
  const kiln_tensor *x, *cosc, *sinc, *pos;
  int64_t B, H, S, D, R;
  bool three_d, interleaved;
} rope;

static kiln_status rope_parse(kiln_eval_ctx *ctx, rope *r) {
  const kiln_tensor *x = r->x;
  int64_t v;
  KILN_TRY(kiln_node_int(ctx->node, "interleaved", 0, &v));
  r->interleaved = v != 0;
  if (x->rank == 4) {
    r->B = x->dims[0], r->H = x->dims[1], r->S = x->dims[2], r->D = x->dims[3];
  } else if (x->rank == 3) {
    r->three_d = true;
    KILN_TRY(kiln_node_int(ctx->node, "num_heads", 0, &r->H));
    if (r->H < 1 || x->dims[2] % r->H)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "num_heads must divide the hidden size");
    r->B = x->dims[0], r->S = x->dims[1], r->D = x->dims[2] / r->H;
  } else {
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be 3-D or 4-D");
  }
  KILN_TRY(kiln_node_int(ctx->node, "rotary_embedding_dim", 0, &r->R));
  if (r->R == 0) r->R = r->D;
  if (r->R < 0 || r->R > r->D || r->R % 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "rotary_embedding_dim %lld must be even, <= %lld",
                           (long long)r->R, (long long)r->D);
  const kiln_tensor *c = r->cosc, *s = r->sinc;
  bool ok = c->rank == s->rank && c->dims[c->rank - 1] == r->R / 2;
  for (int i = 0; ok && i < c->rank; i++) ok = c->dims[i] == s->dims[i];
  if (r->pos)
    ok = ok && c->rank == 2 && r->pos->rank == 2 && r->pos->dims[0] == r->B &&
         r->pos->dims[1] == r->S && kiln_dtype_is_int(r->pos->dtype);
  else ok = ok && c->rank == 3 && c->dims[0] == r->B && c->dims[1] == r->S;
  if (!ok)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cos/sin cache shapes do not match the input");
  return KILN_OK;
}

static kiln_status rope_row(kiln_eval_ctx *ctx, const rope *r, int64_t b, int64_t s,
                            int64_t *cache_row) {
  if (!r->pos) {
    *cache_row = b * r->S + s;
    return KILN_OK;
  }
  int64_t p = kiln_load_i64(r->pos->dtype, r->pos->data, (size_t)(b * r->S + s));
  if (p < 0 || p >= r->cosc->dims[0])
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "position id %lld out of [0, %lld)", (long long)p,
                           (long long)r->cosc->dims[0]);
  *cache_row = p;
  return KILN_OK;
}

static kiln_status eval_rotary(kiln_eval_ctx *ctx) {
  rope r;
  memset(&r, 0, sizeof r);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &r.x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &r.cosc));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &r.sinc));
  r.pos = kiln_eval_in(ctx, 3);
  KILN_TRY(kiln_kern_need_float(ctx, r.x, "input"));
  KILN_TRY(rope_parse(ctx, &r));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, r.x->dtype, r.x->rank, r.x->dims, &y));
  const kiln_tensor *x = r.x;
  int64_t half = r.R / 2;
  for (int64_t b = 0; b < r.B; b++)
    for (int64_t s = 0; s < r.S; s++) {
      int64_t row;
      KILN_TRY(rope_row(ctx, &r, b, s, &row));
      for (int64_t h = 0; h < r.H; h++) {
        int64_t base =
            r.three_d ? ((b * r.S + s) * r.H + h) * r.D : ((b * r.H + h) * r.S + s) * r.D;
        for (int64_t d = r.R; d < r.D; d++)
          kiln_store_f64(y->dtype, y->data, (size_t)(base + d),
                         kiln_load_f64(x->dtype, x->data, (size_t)(base + d)));
        for (int64_t k = 0; k < half; k++) {
          int64_t i1 = r.interleaved ? 2 * k : k, i2 = r.interleaved ? 2 * k + 1 : k + half;
          double c = kiln_load_f64(r.cosc->dtype, r.cosc->data, (size_t)(row * half + k));
          double sn = kiln_load_f64(r.sinc->dtype, r.sinc->data, (size_t)(row * half + k));
          double x1 = kiln_load_f64(x->dtype, x->data, (size_t)(base + i1));
          double x2 = kiln_load_f64(x->dtype, x->data, (size_t)(base + i2));
          kiln_store_f64(y->dtype, y->data, (size_t)(base + i1), c * x1 - sn * x2);
          kiln_store_f64(y->dtype, y->data, (size_t)(base + i2), sn * x1 + c * x2);
        }
      }
    }
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

void kiln_seqmodel_register_attention(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_Attention, eval_attention, 3, 7, 1, 4);
  kiln_kern_set(table, KILN_OP_RotaryEmbedding, eval_rotary, 3, 4, 1, 1);
  table[KILN_OP_Attention].infer = infer_attention;
  table[KILN_OP_RotaryEmbedding].infer = infer_same0;
}
