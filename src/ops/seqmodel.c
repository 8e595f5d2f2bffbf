/* Ops of the 'seqmodel' family (see src/graph/ops.def): sequence models. This file
 * registers the family (seqmodel_rnn.c: RNN, GRU, LSTM; seqmodel_attention.c: Attention,
 * RotaryEmbedding) and holds the state-space ops of opset 27: LinearAttention and
 * CausalConvWithState. Both run their recurrence sequentially, in double.
 *
 * LinearAttention, per batch b and kv head g with state S[d_k, d_v] (past_state or 0),
 * for each step t:
 *   gated rules:  S *= exp(decay_t)           (per head scalar or per key dim)
 *   delta rules:  v_t = beta_t * (v_t - S^T k_t)
 *   S += k_t (x) v_t
 *   o_t[h] = scale * q_t[h]^T S   for the query heads h of group g
 * CausalConvWithState: depthwise causal conv1d of [past_state | input] (past_state or
 * zeros of length k-1) with per-channel bias and optional SiLU; present_state is the
 * last k-1 positions of that padded sequence. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

typedef struct linattn {
  const kiln_tensor *q, *k, *v, *past, *decay, *beta;
  int64_t B, T, Hq, Hkv, dk, dv;
  bool gated, delta, decay_per_dim;
  double scale;
} linattn;

static double ld(const kiln_tensor *t, int64_t i) {
  return kiln_load_f64(t->dtype, t->data, (size_t)i);
}

static kiln_status linattn_rule(kiln_eval_ctx *ctx, linattn *a) {
  const char *rule;
  KILN_TRY(kiln_node_string(ctx->node, "update_rule", "gated_delta", &rule));
  if (!strcmp(rule, "linear")) a->gated = false, a->delta = false;
  else if (!strcmp(rule, "gated")) a->gated = true, a->delta = false;
  else if (!strcmp(rule, "delta")) a->gated = false, a->delta = true;
  else if (!strcmp(rule, "gated_delta")) a->gated = true, a->delta = true;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown update_rule '%s'", rule);
  if (a->gated != (a->decay != NULL))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "update_rule '%s' %s the decay input", rule,
                           a->gated ? "requires" : "forbids");
  if (a->delta != (a->beta != NULL))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "update_rule '%s' %s the beta input", rule,
                           a->delta ? "requires" : "forbids");
  return KILN_OK;
}

static kiln_status linattn_shapes(kiln_eval_ctx *ctx, linattn *a) {
  KILN_TRY(kiln_node_int(ctx->node, "q_num_heads", 0, &a->Hq));
  KILN_TRY(kiln_node_int(ctx->node, "kv_num_heads", 0, &a->Hkv));
  const kiln_tensor *q = a->q, *k = a->k, *v = a->v;
  if (a->Hq < 1 || a->Hkv < 1 || a->Hq % a->Hkv)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "q_num_heads must be a multiple of kv_num_heads");
  if (q->rank != 3 || k->rank != 3 || v->rank != 3)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "query, key, value must be rank 3");
  a->B = q->dims[0], a->T = q->dims[1];
  if (q->dims[2] % a->Hq || v->dims[2] % a->Hkv)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "hidden sizes not divisible by head counts");
  a->dk = q->dims[2] / a->Hq, a->dv = v->dims[2] / a->Hkv;
  for (int i = 0; i < 2; i++)
    if (k->dims[i] != q->dims[i] || v->dims[i] != q->dims[i])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "query, key, value batch/time differ");
  if (k->dims[2] != a->Hkv * a->dk)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "key last dim must be kv_num_heads * d_k");
  const kiln_tensor *p = a->past;
  if (p && (p->rank != 4 || p->dims[0] != a->B || p->dims[1] != a->Hkv || p->dims[2] != a->dk ||
            p->dims[3] != a->dv))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "past_state must be [B, kv_heads, d_k, d_v]");
  const kiln_tensor *d = a->decay, *be = a->beta;
  if (d) {
    a->decay_per_dim = d->rank == 3 && d->dims[2] == a->Hkv * a->dk && a->dk != 1;
    if (d->rank != 3 || d->dims[0] != a->B || d->dims[1] != a->T ||
        (d->dims[2] != a->Hkv && d->dims[2] != a->Hkv * a->dk))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "decay must be [B, T, kv_heads (* d_k)]");
  }
  if (be && (be->rank != 3 || be->dims[0] != a->B || be->dims[1] != a->T ||
             (be->dims[2] != a->Hkv && be->dims[2] != 1)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "beta must be [B, T, kv_heads or 1]");
  float sc;
  KILN_TRY(kiln_node_float(ctx->node, "scale", 0, &sc));
  a->scale = sc != 0 ? sc : 1.0 / sqrt((double)a->dk);
  return KILN_OK;
}

/* One time step of one (b, kv head g) state. */
static void linattn_step(const linattn *a, int64_t b, int64_t t, int64_t g, double *S, double *vt,
                         double *out) {
  int64_t dk = a->dk, dv = a->dv, kb = ((b * a->T + t) * a->Hkv + g) * dk;
  if (a->gated) {
    int64_t db = (b * a->T + t) * a->decay->dims[2];
    for (int64_t i = 0; i < dk; i++) {
      double e = exp(ld(a->decay, db + (a->decay_per_dim ? g * dk + i : g)));
      for (int64_t m = 0; m < dv; m++) S[i * dv + m] *= e;
    }
  }
  for (int64_t m = 0; m < dv; m++) vt[m] = ld(a->v, ((b * a->T + t) * a->Hkv + g) * dv + m);
  if (a->delta) {
    int64_t nb = a->beta->dims[2];
    double be = ld(a->beta, (b * a->T + t) * nb + (nb == 1 ? 0 : g));
    for (int64_t m = 0; m < dv; m++) {
      double r = 0;
      for (int64_t i = 0; i < dk; i++) r += S[i * dv + m] * ld(a->k, kb + i);
      vt[m] = be * (vt[m] - r);
    }
  }
  for (int64_t i = 0; i < dk; i++) {
    double ki = ld(a->k, kb + i);
    for (int64_t m = 0; m < dv; m++) S[i * dv + m] += ki * vt[m];
  }
  int64_t grp = a->Hq / a->Hkv;
  for (int64_t h = g * grp; h < (g + 1) * grp; h++) {
    int64_t qb = ((b * a->T + t) * a->Hq + h) * dk;
    double *o = out + ((b * a->T + t) * a->Hq + h) * dv;
    for (int64_t m = 0; m < dv; m++) {
      double s = 0;
      for (int64_t i = 0; i < dk; i++) s += ld(a->q, qb + i) * S[i * dv + m];
      o[m] = a->scale * s;
    }
  }
}

static kiln_status eval_linear_attention(kiln_eval_ctx *ctx) {
  linattn a;
  memset(&a, 0, sizeof a);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &a.q));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &a.k));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &a.v));
  a.past = kiln_eval_in(ctx, 3);
  a.decay = kiln_eval_in(ctx, 4);
  a.beta = kiln_eval_in(ctx, 5);
  KILN_TRY(kiln_kern_need_float(ctx, a.q, "query"));
  KILN_TRY(linattn_rule(ctx, &a));
  KILN_TRY(linattn_shapes(ctx, &a));
  kiln_tensor *y, *ps = NULL;
  KILN_TRY(kiln_eval_out(ctx, 0, a.q->dtype, 3, (int64_t[]){a.B, a.T, a.Hq * a.dv}, &y));
  kiln_dtype sdt = a.past ? a.past->dtype : a.q->dtype;
  if (kiln_kern_want_out(ctx, 1))
    KILN_TRY(kiln_eval_out(ctx, 1, sdt, 4, (int64_t[]){a.B, a.Hkv, a.dk, a.dv}, &ps));
  int64_t ssz = a.dk * a.dv;
  double *S = kiln_xcalloc((size_t)(ssz + 1), sizeof(double));
  double *vt = kiln_xcalloc((size_t)(a.dv + 1), sizeof(double));
  double *out = kiln_xcalloc((size_t)(y->numel + 1), sizeof(double));
  for (int64_t b = 0; b < a.B; b++)
    for (int64_t g = 0; g < a.Hkv; g++) {
      int64_t sb = (b * a.Hkv + g) * ssz;
      for (int64_t i = 0; i < ssz; i++) S[i] = a.past ? ld(a.past, sb + i) : 0.0;
      for (int64_t t = 0; t < a.T; t++) linattn_step(&a, b, t, g, S, vt, out);
      for (int64_t i = 0; ps && i < ssz; i++) kiln_store_f64(sdt, ps->data, (size_t)(sb + i), S[i]);
    }
  for (int64_t i = 0; i < y->numel; i++) kiln_store_f64(y->dtype, y->data, (size_t)i, out[i]);
  free(S), free(vt), free(out);
  return KILN_OK;
}

/* ---- CausalConvWithState ---- */
static kiln_status eval_causal_conv(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *w, *bias = kiln_eval_in(ctx, 2), *past = kiln_eval_in(ctx, 3);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  KILN_TRY(kiln_kern_need_float(ctx, x, "input"));
  const char *act;
  KILN_TRY(kiln_node_string(ctx->node, "activation", "none", &act));
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none"))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown activation '%s'", act);
  if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dims[2] < 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input [B, C, L] and weight [C, 1, k] expected");
  int64_t B = x->dims[0], C = x->dims[1], L = x->dims[2], K = w->dims[2], np = K - 1;
  if (bias && (bias->rank != 1 || bias->dims[0] != C))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bias must be [C]");
  if (past && (past->rank != 3 || past->dims[0] != B || past->dims[1] != C || past->dims[2] != np))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "past_state must be [B, C, k - 1]");
  kiln_tensor *y, *ps = NULL;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, 3, x->dims, &y));
  if (kiln_kern_want_out(ctx, 1))
    KILN_TRY(kiln_eval_out(ctx, 1, past ? past->dtype : x->dtype, 3, (int64_t[]){B, C, np}, &ps));
  double *pad = kiln_xmalloc((size_t)(np + L + 1) * sizeof(double));
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      for (int64_t i = 0; i < np; i++) pad[i] = past ? ld(past, (b * C + c) * np + i) : 0.0;
      for (int64_t i = 0; i < L; i++) pad[np + i] = ld(x, (b * C + c) * L + i);
      for (int64_t t = 0; t < L; t++) {
        double s = bias ? ld(bias, c) : 0.0;
        for (int64_t j = 0; j < K; j++) s += pad[t + j] * ld(w, c * K + j);
        if (silu) s = s / (1.0 + exp(-s));
        kiln_store_f64(y->dtype, y->data, (size_t)((b * C + c) * L + t), s);
      }
      for (int64_t i = 0; ps && i < np; i++)
        kiln_store_f64(ps->dtype, ps->data, (size_t)((b * C + c) * np + i), pad[L + i]);
    }
  free(pad);
  return KILN_OK;
}

/* ---- inference ---- */
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

void kiln_ops_register_seqmodel(kiln_op_impl *table) {
  kiln_seqmodel_register_rnn(table);
  kiln_seqmodel_register_attention(table);
  kiln_kern_set(table, KILN_OP_LinearAttention, eval_linear_attention, 3, 6, 1, 2);
  kiln_kern_set(table, KILN_OP_CausalConvWithState, eval_causal_conv, 2, 4, 1, 2);
  table[KILN_OP_LinearAttention].infer = infer_linear_attention;
  table[KILN_OP_CausalConvWithState].infer = infer_causal_conv;
}
