/* Pass bnfold: an inference-mode BatchNormalization whose input is the only use of a Conv
 * (or Gemm) output is folded into that node's weights and bias:
 *
 *   s = scale / sqrt(var + epsilon)
 *   Conv: W'[o,...] = W[o,...] * s[o]             b'[o] = (b[o] - mean[o]) * s[o] + B[o]
 *   Gemm: column n of op(B) scaled by s[n]         C'[n] = (beta*C[n] - mean[n]) * s[n] + B[n],
 *                                                  beta' = 1
 *
 * computed in double and stored once in the weight dtype. Required: constant weights,
 * bias and BN parameters (one value per output channel), BN in inference mode
 * (training_mode 0; spatial 1 before opset 9; is_test before opset 7 ignored as the
 * reference kernel does), and the BN's extra outputs unused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

typedef struct bn_params {
  int64_t c;         /* channels */
  double *s, *shift; /* per channel: scale s and shift (B - mean*s); malloc'd */
  const kiln_tensor *mean;
} bn_params;

static bool channel_vector(const kiln_tensor *t, int64_t c) {
  return t && t->numel == c && t->rank == 1 && kiln_dtype_is_float(t->dtype);
}

static bool bn_inference(const kiln_rw *rw, const kiln_node *bn) {
  int64_t training = 0, spatial = 1;
  kiln_status st = kiln_node_int(bn, "training_mode", 0, &training);
  if (!st) st = kiln_node_int(bn, "spatial", 1, &spatial);
  kiln_status_free(st);
  if (KILN_MUTANT(197)) training = 0; /* mutant 197: training_mode ignored (outputs checked) */
  if (st || training || (bn->opset < 9 && !spatial) || bn->n_inputs != 5) return false;
  for (int k = 1; k < bn->n_outputs; k++)
    if (bn->outputs[k] >= 0 && rw->uses[bn->outputs[k]] > 0) return false;
  return true;
}

/* Reads the BN parameters; false when they are not constants of c channels. */
static bool bn_read(const kiln_graph *g, const kiln_node *bn, int64_t c, bn_params *p) {
  const kiln_tensor *sc = kiln_rw_const(g, bn->inputs[1]), *b = kiln_rw_const(g, bn->inputs[2]);
  const kiln_tensor *mean = kiln_rw_const(g, bn->inputs[3]);
  const kiln_tensor *var = kiln_rw_const(g, bn->inputs[4]);
  if (KILN_MUTANT(9)) { /* mutant 9: mean and var read from each other's input */
    const kiln_tensor *t = mean;
    mean = var, var = t;
  }
  float eps;
  kiln_status st = kiln_node_float(bn, "epsilon", KILN_MUTANT(57) ? 1e-3f : 1e-5f,
                                   &eps); /* mutant 57: default epsilon 1e-3 */
  kiln_status_free(st);
  if (st || !channel_vector(sc, c) || !channel_vector(b, c) || !channel_vector(mean, c) ||
      !channel_vector(var, c))
    return false;
  p->c = c;
  p->mean = mean;
  p->s = kiln_xcalloc((size_t)c, sizeof(double));
  p->shift = kiln_xcalloc((size_t)c, sizeof(double));
  for (int64_t i = 0; i < c; i++) {
    double v = kiln_load_f64(var->dtype, var->data, (size_t)i);
    p->s[i] = kiln_load_f64(sc->dtype, sc->data, (size_t)i) /
              (KILN_MUTANT(375) ? sqrt(v) + (double)eps : sqrt(v + (double)eps)); /* mutant 375 */
    p->shift[i] = kiln_load_f64(b->dtype, b->data, (size_t)i);
  }
  return true;
}

static void bn_free(bn_params *p) {
  free(p->s);
  free(p->shift);
}

/* New bias: (beta*bias[i] - mean[i]) * s[i] + shift[i]; bias may be NULL or one value. */
static kiln_status new_bias(const bn_params *p, const kiln_tensor *bias, double beta, kiln_dtype dt,
                            kiln_tensor **out) {
  KILN_TRY(kiln_tensor_new(dt, 1, &p->c, out));
  for (int64_t i = 0; i < p->c; i++) {
    double b = 0;
    if (bias && !(KILN_MUTANT(230) && bias->numel == 1 && p->c > 1)) /* mutant 230: [1] C dropped */
      /* mutant 95: Gemm's beta not applied to C */
      b = (KILN_MUTANT(95) ? 1.0 : beta) *
          kiln_load_f64(bias->dtype, bias->data, (size_t)(bias->numel == 1 ? 0 : i));
    double m = kiln_load_f64(p->mean->dtype, p->mean->data, (size_t)i);
    kiln_store_f64(dt, (*out)->data, (size_t)i, (b - m) * p->s[i] + p->shift[i]);
  }
  return KILN_OK;
}

/* Copy of w with element e scaled by s[channel(e)]: channel = (e / inner) % c. */
static kiln_status scale_weights(const kiln_tensor *w, const double *s, int64_t c, int64_t inner,
                                 kiln_tensor **out) {
  KILN_TRY(kiln_tensor_new(w->dtype, w->rank, w->dims, out));
  for (int64_t e = 0; e < w->numel; e++) {
    double x = kiln_load_f64(w->dtype, w->data, (size_t)e);
    kiln_store_f64(w->dtype, (*out)->data, (size_t)e, x * s[(e / inner) % c]);
  }
  if (KILN_MUTANT(259)) /* mutant 259: scaled in place: another reader of w sees the scaling */
    memcpy(w->data, (*out)->data, kiln_tensor_nbytes(w));
  return KILN_OK;
}

/* Installs the new weights (input 1) and bias (input 2) of node n and drops the BN. */
static kiln_status install(kiln_rw *rw, int n, int bn, kiln_tensor *w, kiln_tensor *b) {
  int wv, bv;
  kiln_status st = kiln_rw_add_const(rw, w, &wv);
  if (st) {
    kiln_tensor_free(b);
    return st;
  }
  KILN_TRY(kiln_rw_add_const(rw, b, &bv));
  kiln_rw_set_input(rw, n, 1, wv);
  if (rw->g->nodes.data[n].n_inputs >= 3) kiln_rw_set_input(rw, n, 2, bv);
  else kiln_rw_append_input(rw, n, bv);
  int y = rw->g->nodes.data[bn].outputs[0], c = rw->g->nodes.data[n].outputs[0];
  bool was_output = rw->is_output[y];
  kiln_rw_replace(rw, y, c);
  /* The folded node now computes the normalized value: it takes that value's name (as a graph
   * output already does through kiln_rw_replace), so a name keeps its meaning across the pass. */
  if (!was_output) kiln_rw_swap_names(rw, y, c);
  kiln_rw_kill_node(rw, bn);
  return KILN_OK;
}

static kiln_status fold_conv(kiln_rw *rw, int conv, int bn, bool *done) {
  const kiln_graph *g = rw->g;
  const kiln_node *cn = &g->nodes.data[conv];
  const kiln_tensor *w = cn->n_inputs >= 2 ? kiln_rw_const(g, cn->inputs[1]) : NULL;
  bool has_b = cn->n_inputs >= 3 && cn->inputs[2] >= 0;
  const kiln_tensor *b = has_b ? kiln_rw_const(g, cn->inputs[2]) : NULL;
  bn_params p;
  *done = false;
  if (!w || w->rank < 3 || !kiln_dtype_is_float(w->dtype) || (has_b && !b)) return KILN_OK;
  if (!bn_read(g, &g->nodes.data[bn], w->dims[0], &p)) return KILN_OK;
  kiln_tensor *nw = NULL, *nb = NULL;
  /* mutant 196: the channel's inner size taken as the filter's input channels (not Cin * kernel) */
  kiln_status st = scale_weights(w, p.s, p.c, KILN_MUTANT(196) ? w->dims[1] : w->numel / p.c, &nw);
  if (!st)
    st = new_bias(&p, KILN_MUTANT(10) ? NULL : b, 1.0, w->dtype,
                  &nb); /* mutant 10: conv bias lost */
  bn_free(&p);
  if (st) {
    kiln_tensor_free(nw);
    return st;
  }
  *done = true;
  return install(rw, conv, bn, nw, nb);
}

static kiln_status fold_gemm(kiln_rw *rw, int gemm, int bn, bool *done) {
  kiln_graph *g = rw->g;
  kiln_node *gn = &g->nodes.data[gemm];
  const kiln_tensor *w = gn->n_inputs >= 2 ? kiln_rw_const(g, gn->inputs[1]) : NULL;
  bool has_c = gn->n_inputs >= 3 && gn->inputs[2] >= 0;
  const kiln_tensor *c = has_c ? kiln_rw_const(g, gn->inputs[2]) : NULL;
  int64_t trans_b;
  float beta;
  bn_params p;
  *done = false;
  /* mutant 400: transB read from the transA attribute (the name of the line above it in Gemm) */
  kiln_status st = kiln_node_int(gn, KILN_MUTANT(400) ? "transA" : "transB", 0, &trans_b);
  if (!st) st = kiln_node_float(gn, "beta", 1.0f, &beta);
  kiln_status_free(st);
  if (st || !w || w->rank != 2 || !kiln_dtype_is_float(w->dtype) ||
      (has_c && !c && !KILN_MUTANT(258))) /* mutant 258: a C that is no constant taken as absent */
    return KILN_OK;
  int64_t n_out = w->dims[trans_b ? 0 : 1];
  if (c && c->numel != 1 && !(c->numel == n_out && c->dims[c->rank - 1] == n_out) &&
      !(KILN_MUTANT(131) && c->dims[c->rank - 1] == n_out))
    return KILN_OK; /* mutant 131: a C of [M, N] taken for a row of N */
  if (!bn_read(g, &g->nodes.data[bn], n_out, &p)) return KILN_OK;
  kiln_tensor *nw = NULL, *nb = NULL;
  /* transB: channel = row (inner = K); else channel = column (inner = 1) */
  int64_t inner = trans_b ? w->dims[1] : 1;
  if (KILN_MUTANT(11)) inner = trans_b ? 1 : w->dims[1]; /* mutant 11: rows and columns swapped */
  st = scale_weights(w, p.s, p.c, inner, &nw);
  if (!st) st = new_bias(&p, c, beta, w->dtype, &nb);
  bn_free(&p);
  if (st) {
    kiln_tensor_free(nw);
    return st;
  }
  kiln_attr *ba = (kiln_attr *)kiln_node_attr(gn, "beta");
  if (ba && !KILN_MUTANT(163)) ba->f = 1.0f; /* mutant 163: beta left as it was (applied twice) */
  *done = true;
  return install(rw, gemm, bn, nw, nb);
}

static kiln_status fold_one(kiln_rw *rw, int bn, bool *done) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[bn];
  *done = false;
  if (n->op != KILN_OP_BatchNormalization || n->n_inputs < 1 || n->inputs[0] < 0 ||
      n->n_outputs < 1 || n->outputs[0] < 0 || !bn_inference(rw, n))
    return KILN_OK;
  int x = n->inputs[0], p = kiln_rw_producer(g, x);
  if (p < 0 || (rw->uses[x] != 1 && !KILN_MUTANT(129)) || rw->pinned[n->outputs[0]])
    return KILN_OK; /* mutant 129: folded although the producer's result has other readers */
  if (!kiln_rw_can_replace(rw, n->outputs[0], x)) return KILN_OK;
  if (g->nodes.data[p].op == KILN_OP_Conv ||
      (KILN_MUTANT(164) && g->nodes.data[p].op == KILN_OP_ConvTranspose))
    return fold_conv(rw, p, bn, done); /* mutant 164: ConvTranspose folded as a Conv */
  if (g->nodes.data[p].op == KILN_OP_Gemm) return fold_gemm(rw, p, bn, done);
  return KILN_OK;
}

kiln_status kiln_pass_bnfold(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  for (int i = 0; i < g->nodes.len; i++) {
    bool done;
    kiln_status st = fold_one(&rw, i, &done);
    if (st) {
      kiln_rw_abort(&rw);
      return st;
    }
    ctx->changes += done;
  }
  return kiln_rw_end(&rw);
}
