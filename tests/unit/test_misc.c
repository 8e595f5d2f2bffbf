/* Unit tests of the 'misc' op family (src/ops/misc*.c): losses, quantization, recurrent
 * nets, signal ops, attention, detection, strings, regexes and random ops. Each test
 * builds a one-node graph over constant inputs, runs the reference interpreter and
 * compares with values computed by hand or by numpy (noted where so). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/kernel_internal.h"
#include "ops/ops.h"

/* ---- helpers ---- */
typedef struct tcase {
  kiln_graph *g;
  int node;
  int n_out;
  kiln_val *out[4];
} tcase;

static kiln_tensor *mk(kiln_dtype dt, int rank, const int64_t *dims, const double *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; v && i < t->numel; i++) kiln_store_f64(dt, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *mks(int rank, const int64_t *dims, const char *const *v) {
  kiln_tensor *t = mk(KILN_STRING, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) ((char **)t->data)[i] = kiln_xstrdup(v[i]);
  return t;
}

static kiln_tensor *sc_i64(int64_t v) {
  return mk(KILN_I64, 0, NULL, (double[]){(double)v});
}
static kiln_tensor *sc_f32(double v) {
  return mk(KILN_F32, 0, NULL, &v);
}

/* A graph with one node `op` over constant inputs (NULL = omitted) and n_out outputs
 * (all graph outputs; a NULL name in outs omits that output). */
static tcase make(int64_t opset, const char *op, int n_in, kiln_tensor *const *in, int n_out,
                  const char *const *outs) {
  tcase c;
  memset(&c, 0, sizeof c);
  c.g = kiln_graph_new("t");
  kiln_graph_set_opset(c.g, "", opset);
  int ids[16];
  for (int i = 0; i < n_in; i++) {
    ids[i] = -1;
    if (!in[i]) continue;
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    if (kiln_graph_add_const(c.g, name, in[i], &ids[i])) abort();
  }
  int oids[4];
  if (kiln_graph_add_node(c.g, op, "", "n0", n_in, ids, n_out, outs, oids)) abort();
  c.node = kiln_graph_last_node(c.g);
  c.n_out = n_out;
  for (int i = 0; i < n_out; i++)
    if (oids[i] >= 0) kiln_graph_add_output(c.g, oids[i]);
  return c;
}

static void a_int(tcase *c, const char *name, int64_t v) {
  kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_INT)->i = v;
}
static void a_float(tcase *c, const char *name, float v) {
  kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_FLOAT)->f = v;
}
static void a_str(tcase *c, const char *name, const char *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_STRING);
  a->s = kiln_graph_strdup(c->g, v);
  a->s_len = strlen(v);
}
static void a_ints(tcase *c, const char *name, int n, const int64_t *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_INTS);
  a->n = n;
  a->ints = kiln_graph_alloc(c->g, (size_t)n * sizeof(int64_t) + 1);
  memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}
static void a_strs(tcase *c, const char *name, int n, const char *const *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_STRINGS);
  a->n = n;
  a->strings = kiln_graph_alloc(c->g, (size_t)n * sizeof(char *) + 1);
  for (int i = 0; i < n; i++) a->strings[i] = kiln_graph_strdup(c->g, v[i]);
}

static kiln_status run(tcase *c) {
  return kiln_interp_run(c->g, NULL, 0, NULL, c->out);
}

static void done(tcase *c) {
  for (int i = 0; i < c->g->outputs.len; i++) kiln_val_free(c->out[i]);
  kiln_graph_free(c->g);
}

static const kiln_tensor *out_t(const tcase *c, int i) {
  return c->out[i] && c->out[i]->kind == KILN_TYPE_TENSOR ? c->out[i]->t : NULL;
}

/* Checks output i: dtype, shape and values within tol (relative + absolute). */
static bool near(const tcase *c, int i, kiln_dtype dt, int rank, const int64_t *dims,
                 const double *v, double tol) {
  const kiln_tensor *t = out_t(c, i);
  if (!t || t->dtype != dt || t->rank != rank) {
    fprintf(stderr, "  output %d: wrong dtype/rank\n", i);
    return false;
  }
  for (int k = 0; k < rank; k++)
    if (t->dims[k] != dims[k]) return fprintf(stderr, "  output %d: dim %d\n", i, k), false;
  for (int64_t k = 0; k < t->numel; k++) {
    double got = kiln_load_f64(dt, t->data, (size_t)k);
    if (got != v[k] && !(fabs(got - v[k]) <= tol * (1 + fabs(v[k]))) &&
        !(isnan(got) && isnan(v[k]))) {
      fprintf(stderr, "  output %d element %lld: %.9g, expected %.9g\n", i, (long long)k, got,
              v[k]);
      return false;
    }
  }
  return true;
}

static bool strs_eq(const tcase *c, int i, int64_t n, const char *const *v) {
  const kiln_tensor *t = out_t(c, i);
  if (!t || t->dtype != KILN_STRING || t->numel != n) return false;
  for (int64_t k = 0; k < n; k++)
    if (strcmp(((char *const *)t->data)[k], v[k])) {
      fprintf(stderr, "  string %lld: '%s', expected '%s'\n", (long long)k,
              ((char *const *)t->data)[k], v[k]);
      return false;
    }
  return true;
}

#define Y1 ((const char *const[]){"y"})
#define Y2 ((const char *const[]){"y", "z"})

/* ---- losses ---- */
/* input [2, 3]: loss = -w[t] * x[n, t]; target 1 is ignored. */
static void test_nll_weight_ignore(void) {
  kiln_tensor *in[3] = {mk(KILN_F32, 2, (int64_t[]){2, 3}, (double[]){-1, -2, -3, -4, -5, -6}),
                        mk(KILN_I64, 1, (int64_t[]){2}, (double[]){2, 1}),
                        mk(KILN_F32, 1, (int64_t[]){3}, (double[]){0.5, 1, 2})};
  tcase c = make(22, "NegativeLogLikelihoodLoss", 3, in, 1, Y1);
  a_int(&c, "ignore_index", 1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F32, 0, NULL, (double[]){(2 * 3.0) / 2.0}, 1e-6));
  done(&c);
}

static void test_nll_target_out_of_range(void) {
  kiln_tensor *in[2] = {mk(KILN_F32, 2, (int64_t[]){1, 3}, (double[]){1, 2, 3}),
                        mk(KILN_I64, 1, (int64_t[]){1}, (double[]){3})};
  tcase c = make(22, "NegativeLogLikelihoodLoss", 2, in, 1, Y1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
}

/* SCE over [1, 2] logits {0, ln 3}: log-softmax = {ln .25, ln .75}. */
static void test_sce_log_prob(void) {
  kiln_tensor *in[2] = {mk(KILN_F64, 2, (int64_t[]){1, 2}, (double[]){0, log(3.0)}),
                        mk(KILN_I32, 1, (int64_t[]){1}, (double[]){1})};
  tcase c = make(13, "SoftmaxCrossEntropyLoss", 2, in, 2, Y2);
  a_str(&c, "reduction", "none");
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F64, 1, (int64_t[]){1}, (double[]){-log(0.75)}, 1e-12));
  CHECK(near(&c, 1, KILN_F64, 2, (int64_t[]){1, 2}, (double[]){log(0.25), log(0.75)}, 1e-12));
  done(&c);
}

/* ---- quantization ---- */
static void test_quantize_per_axis_int4(void) {
  kiln_tensor *in[3] = {mk(KILN_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2.5, -100, 3, 4.5, 5}),
                        mk(KILN_F32, 1, (int64_t[]){2}, (double[]){1, 0.5}),
                        mk(KILN_I4, 1, (int64_t[]){2}, (double[]){0, 1})};
  tcase c = make(21, "QuantizeLinear", 3, in, 1, Y1);
  a_int(&c, "axis", 0);
  CHECK_OK(run(&c));
  /* row 0: rint(1)=1, rint(2.5)=2 (even), -100 -> -8; row 1: 6+1 -> 7, 9+1 -> 7, 10+1 -> 7 */
  CHECK(near(&c, 0, KILN_I4, 2, (int64_t[]){2, 3}, (double[]){1, 2, -8, 7, 7, 7}, 0));
  done(&c);
}

static void test_quantize_blocked_and_dequantize(void) {
  /* x [1, 4], axis 1, block 2: scales {1, 2}, output_dtype int16 */
  kiln_tensor *in[2] = {mk(KILN_F32, 2, (int64_t[]){1, 4}, (double[]){1, 2, 3, 5}),
                        mk(KILN_F32, 2, (int64_t[]){1, 2}, (double[]){1, 2})};
  tcase c = make(21, "QuantizeLinear", 2, in, 1, Y1);
  a_int(&c, "axis", 1);
  a_int(&c, "block_size", 2);
  a_int(&c, "output_dtype", KILN_I16);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_I16, 2, (int64_t[]){1, 4}, (double[]){1, 2, 2, 2}, 0));
  done(&c);
  kiln_tensor *d[3] = {mk(KILN_U8, 1, (int64_t[]){3}, (double[]){0, 128, 255}), sc_f32(0.5),
                       mk(KILN_U8, 0, NULL, (double[]){128})};
  tcase e = make(19, "DequantizeLinear", 3, d, 1, Y1);
  CHECK_OK(run(&e));
  CHECK(near(&e, 0, KILN_F32, 1, (int64_t[]){3}, (double[]){-64, 0, 63.5}, 0));
  done(&e);
}

static void test_quantize_f8_saturate(void) {
  kiln_tensor *in[3] = {mk(KILN_F32, 1, (int64_t[]){2}, (double[]){1000, -1}), sc_f32(1),
                        mk(KILN_F8E4M3FN, 1, (int64_t[]){1}, (double[]){0})};
  tcase c = make(19, "QuantizeLinear", 3, in, 1, Y1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F8E4M3FN, 1, (int64_t[]){2}, (double[]){448, -1}, 0));
  done(&c);
}

/* numpy reference values of DynamicQuantizeLinear on {0, 2, -3, -2.5, 1.34, 0.5}. */
static void test_dynamic_quantize(void) {
  kiln_tensor *in[1] = {mk(KILN_F32, 1, (int64_t[]){6}, (double[]){0, 2, -3, -2.5, 1.34, 0.5})};
  tcase c = make(11, "DynamicQuantizeLinear", 1, in, 3, (const char *const[]){"y", "s", "z"});
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_U8, 1, (int64_t[]){6}, (double[]){153, 255, 0, 26, 221, 179}, 0));
  CHECK(near(&c, 1, KILN_F32, 0, NULL, (double[]){(double)(5.0f / 255.0f)}, 0));
  CHECK(near(&c, 2, KILN_U8, 0, NULL, (double[]){153}, 0));
  done(&c);
}

static void test_qlinear_matmul(void) {
  /* a = [[2, 3]] zp 1 -> [1, 2]; b = [[1], [2]] zp 0; mult 0.5 * 1 / 0.25 = 2 -> 2*5 + 3 */
  kiln_tensor *in[8] = {mk(KILN_U8, 2, (int64_t[]){1, 2}, (double[]){2, 3}),
                        sc_f32(0.5),
                        mk(KILN_U8, 0, NULL, (double[]){1}),
                        mk(KILN_U8, 2, (int64_t[]){2, 1}, (double[]){1, 2}),
                        sc_f32(1),
                        mk(KILN_U8, 0, NULL, (double[]){0}),
                        sc_f32(0.25),
                        mk(KILN_U8, 0, NULL, (double[]){3})};
  tcase c = make(10, "QLinearMatMul", 8, in, 1, Y1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_U8, 2, (int64_t[]){1, 1}, (double[]){13}, 0));
  done(&c);
}

/* ---- recurrent ---- */
/* RNN, hidden 1, Tanh: h1 = tanh(0.5*1 + 0.1), h2 = tanh(0.5*2 + 2*h1 + 0.1). */
static void test_rnn_forward(void) {
  kiln_tensor *in[4] = {mk(KILN_F32, 3, (int64_t[]){2, 1, 1}, (double[]){1, 2}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){0.5}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){2}),
                        mk(KILN_F32, 2, (int64_t[]){1, 2}, (double[]){0.1, 0})};
  tcase c = make(14, "RNN", 4, in, 2, Y2);
  a_int(&c, "hidden_size", 1);
  CHECK_OK(run(&c));
  double h1 = tanh(0.6), h2 = tanh(1.1 + 2 * h1);
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){2, 1, 1, 1}, (double[]){h1, h2}, 1e-6));
  CHECK(near(&c, 1, KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){h2}, 1e-6));
  done(&c);
}

/* The reverse half of a bidirectional GRU equals a reverse GRU; sequence_lens cut. */
static void test_gru_bidirectional_matches_reverse(void) {
  double x[6] = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6}; /* [3, 1, 2] */
  double w[12], r[12], b[12], w2[24], r2[24], b2[24];
  for (int i = 0; i < 12; i++) {
    w[i] = 0.1 * (i % 5) - 0.2, b[i] = 0.05 * i, r[i] = 0.3 - 0.05 * i;
    w2[i] = 0.7 - 0.1 * i, r2[i] = 0.1 * (i % 3), b2[i] = 0;
    w2[12 + i] = w[i], r2[12 + i] = r[i], b2[12 + i] = b[i];
  }
  kiln_tensor *bi[4] = {
      mk(KILN_F32, 3, (int64_t[]){3, 1, 2}, x), mk(KILN_F32, 3, (int64_t[]){2, 6, 2}, w2),
      mk(KILN_F32, 3, (int64_t[]){2, 6, 2}, r2), mk(KILN_F32, 2, (int64_t[]){2, 12}, b2)};
  tcase c = make(14, "GRU", 4, bi, 2, Y2);
  a_int(&c, "hidden_size", 2);
  a_int(&c, "linear_before_reset", 1);
  a_str(&c, "direction", "bidirectional");
  CHECK_OK(run(&c));
  kiln_tensor *rv[4] = {
      mk(KILN_F32, 3, (int64_t[]){3, 1, 2}, x), mk(KILN_F32, 3, (int64_t[]){1, 6, 2}, w),
      mk(KILN_F32, 3, (int64_t[]){1, 6, 2}, r), mk(KILN_F32, 2, (int64_t[]){1, 12}, b)};
  tcase d = make(14, "GRU", 4, rv, 2, Y2);
  a_int(&d, "hidden_size", 2);
  a_int(&d, "linear_before_reset", 1);
  a_str(&d, "direction", "reverse");
  CHECK_OK(run(&d));
  const kiln_tensor *yb = out_t(&c, 1), *yr = out_t(&d, 1);
  CHECK(yb && yr && yb->numel == 4 && yr->numel == 2);
  if (yb && yr)
    for (int k = 0; k < 2; k++) CHECK(((float *)yb->data)[2 + k] == ((float *)yr->data)[k]);
  done(&c);
  done(&d);
}

/* LSTM with zero weights: gates are sigmoid(0) = 0.5, c = 0.5*c0 + 0.5*tanh(0). */
static void test_lstm_zero_weights(void) {
  kiln_tensor *in[7] = {mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){3}),
                        mk(KILN_F32, 3, (int64_t[]){1, 4, 1}, NULL),
                        mk(KILN_F32, 3, (int64_t[]){1, 4, 1}, NULL),
                        NULL,
                        NULL,
                        NULL,
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){2})};
  tcase c = make(14, "LSTM", 7, in, 3, (const char *const[]){NULL, "h", "c"});
  CHECK_OK(run(&c));
  double cc = 0.5 * 2, h = 0.5 * tanh(cc);
  CHECK(near(&c, 0, KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){h}, 1e-6));
  CHECK(near(&c, 1, KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){cc}, 1e-6));
  done(&c);
}

/* RNN with a LeakyRelu activation (alpha from activation_alpha), clip 1, and a batch
 * entry of length 0 (zeros in Y and Y_h). */
static void test_rnn_activation_clip_seqlen(void) {
  kiln_tensor *in[5] = {mk(KILN_F32, 3, (int64_t[]){2, 2, 1}, (double[]){-4, 1, 3, 1}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){1}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){0}), NULL,
                        mk(KILN_I32, 1, (int64_t[]){2}, (double[]){2, 0})};
  tcase c = make(14, "RNN", 5, in, 2, Y2);
  a_strs(&c, "activations", 1, (const char *const[]){"LeakyRelu"});
  kiln_attr *al = kiln_node_add_attr(c.g, c.node, "activation_alpha", KILN_ATTR_FLOATS);
  al->n = 1;
  al->floats = kiln_graph_alloc(c.g, sizeof(float));
  al->floats[0] = 0.5f;
  a_float(&c, "clip", 1);
  CHECK_OK(run(&c));
  /* batch 0: clip(-4) = -1 -> -0.5; clip(3) = 1 -> 1 */
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){2, 1, 2, 1}, (double[]){-0.5, 0, 1, 0}, 0));
  CHECK(near(&c, 1, KILN_F32, 3, (int64_t[]){1, 2, 1}, (double[]){1, 0}, 0));
  done(&c);
}

/* LSTM input_forget couples f = 1 - i; layout 1 swaps batch and sequence axes. */
static void test_lstm_input_forget_layout(void) {
  double w[4] = {0, 0, 5, 0}; /* forget-gate weight is ignored with input_forget */
  kiln_tensor *in[6] = {mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){1}),
                        mk(KILN_F32, 3, (int64_t[]){1, 4, 1}, w),
                        mk(KILN_F32, 3, (int64_t[]){1, 4, 1}, NULL),
                        NULL,
                        NULL,
                        NULL};
  kiln_tensor *c0 = mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){2});
  kiln_tensor *all[7] = {in[0], in[1], in[2], NULL, NULL, NULL, c0};
  tcase c = make(14, "LSTM", 7, all, 3, (const char *const[]){"y", "h", "c"});
  a_int(&c, "input_forget", 1);
  a_int(&c, "layout", 1);
  CHECK_OK(run(&c));
  double cc = 0.5 * 2 + 0.5 * 0, h = 0.5 * tanh(cc);
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){1, 1, 1, 1}, (double[]){h}, 1e-6));
  CHECK(near(&c, 2, KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){cc}, 1e-6));
  done(&c);
}

static void test_quantize_f8_no_saturate(void) {
  kiln_tensor *in[3] = {mk(KILN_F32, 1, (int64_t[]){2}, (double[]){1e6, 2}), sc_f32(1),
                        mk(KILN_F8E5M2, 1, (int64_t[]){1}, (double[]){0})};
  tcase c = make(21, "QuantizeLinear", 3, in, 1, Y1);
  a_int(&c, "saturate", 0);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F8E5M2, 1, (int64_t[]){2}, (double[]){INFINITY, 2}, 0));
  done(&c);
}

/* DFT-17 takes its axis from the attribute; a complex input along axis 2. */
static void test_dft_opset17_axis_attr(void) {
  kiln_tensor *in[1] = {
      mk(KILN_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 1, 2, -1})}; /* 1+i, 2-i */
  tcase c = make(17, "DFT", 1, in, 1, Y1);
  a_int(&c, "axis", 2);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){3, 0, -1, 2}, 1e-6));
  done(&c);
  kiln_tensor *bad[3] = {mk(KILN_F32, 3, (int64_t[]){1, 2, 1}, NULL), NULL, sc_i64(1)};
  tcase d = make(17, "DFT", 3, bad, 1, Y1);
  CHECK_ERR(run(&d), KILN_ERR_INVALID);
  done(&d);
}

static void test_multinomial_deterministic(void) {
  kiln_tensor *in[1] = {mk(KILN_F32, 2, (int64_t[]){2, 3},
                           (double[]){0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0})};
  tcase c = make(7, "Multinomial", 1, in, 1, Y1);
  a_int(&c, "sample_size", 4);
  a_float(&c, "seed", 3);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_I32, 2, (int64_t[]){2, 4}, (double[]){0, 0, 0, 0, 2, 2, 2, 2}, 0));
  done(&c);
}

static void test_attention_gqa_3d_past(void) {
  /* Q 3-D with 2 heads of size 1, one kv head; past key/value of length 1. */
  kiln_tensor *in[6] = {mk(KILN_F32, 3, (int64_t[]){1, 1, 2}, (double[]){1, -1}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){1}),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 1}, (double[]){4}),
                        NULL,
                        mk(KILN_F32, 4, (int64_t[]){1, 1, 1, 1}, (double[]){0}),
                        mk(KILN_F32, 4, (int64_t[]){1, 1, 1, 1}, (double[]){2})};
  tcase c = make(23, "Attention", 6, in, 2, Y2);
  a_int(&c, "q_num_heads", 2);
  a_int(&c, "kv_num_heads", 1);
  CHECK_OK(run(&c));
  /* head 0 scores {0, 1}, head 1 scores {0, -1}; values {2, 4} */
  double p0 = 1 / (1 + exp(1.0)), p1 = 1 / (1 + exp(-1.0));
  CHECK(near(&c, 0, KILN_F32, 3, (int64_t[]){1, 1, 2},
             (double[]){2 * p0 + 4 * (1 - p0), 2 * p1 + 4 * (1 - p1)}, 1e-6));
  CHECK(near(&c, 1, KILN_F32, 4, (int64_t[]){1, 1, 2, 1}, (double[]){0, 1}, 0));
  done(&c);
}

/* ---- signal ---- */
static void test_dft_roundtrip(void) {
  double x[4] = {1, 2, 3, 4};
  kiln_tensor *in[1] = {mk(KILN_F64, 3, (int64_t[]){1, 4, 1}, x)};
  tcase c = make(17, "DFT", 1, in, 1, Y1);
  a_int(&c, "onesided", 1);
  CHECK_OK(run(&c));
  /* rfft([1,2,3,4]) = [10, -2+2i, -2] */
  CHECK(near(&c, 0, KILN_F64, 3, (int64_t[]){1, 3, 2}, (double[]){10, 0, -2, 2, -2, 0}, 1e-12));
  kiln_tensor *spec = NULL;
  if (out_t(&c, 0)) CHECK_OK(kiln_tensor_clone(out_t(&c, 0), &spec));
  done(&c);
  if (!spec) return;
  kiln_tensor *in2[3] = {spec, NULL, sc_i64(1)};
  tcase d = make(20, "DFT", 3, in2, 1, Y1);
  a_int(&d, "onesided", 1);
  a_int(&d, "inverse", 1);
  CHECK_OK(run(&d));
  CHECK(near(&d, 0, KILN_F64, 3, (int64_t[]){1, 4, 1}, x, 1e-12));
  done(&d);
}

static void test_windows(void) {
  kiln_tensor *in[1] = {mk(KILN_I32, 0, NULL, (double[]){4})};
  tcase c = make(17, "HannWindow", 1, in, 1, Y1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F32, 1, (int64_t[]){4}, (double[]){0, 0.5, 1, 0.5}, 1e-7));
  done(&c);
  kiln_tensor *in2[1] = {mk(KILN_I32, 0, NULL, (double[]){3})};
  tcase d = make(17, "HammingWindow", 1, in2, 1, Y1);
  a_int(&d, "periodic", 0);
  a_int(&d, "output_datatype", KILN_F64);
  CHECK_OK(run(&d));
  CHECK(near(&d, 0, KILN_F64, 1, (int64_t[]){3}, (double[]){4.0 / 46, 1, 4.0 / 46}, 1e-12));
  done(&d);
}

/* ---- attention ---- */
/* One head, 2 queries / 2 keys, causal: query 0 sees only key 0. */
static void test_attention_causal(void) {
  kiln_tensor *in[3] = {mk(KILN_F32, 4, (int64_t[]){1, 1, 2, 1}, (double[]){1, 1}),
                        mk(KILN_F32, 4, (int64_t[]){1, 1, 2, 1}, (double[]){1, 0}),
                        mk(KILN_F32, 4, (int64_t[]){1, 1, 2, 1}, (double[]){10, 20})};
  tcase c = make(23, "Attention", 3, in, 4, (const char *const[]){"y", NULL, NULL, "qk"});
  a_int(&c, "is_causal", 1);
  a_int(&c, "qk_matmul_output_mode", 3);
  CHECK_OK(run(&c));
  double p = 1 / (1 + exp(-1.0)); /* softmax of scores {1, 0} */
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){1, 1, 2, 1}, (double[]){10, 10 * p + 20 * (1 - p)},
             1e-6));
  CHECK(near(&c, 1, KILN_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 0, p, 1 - p}, 1e-6));
  done(&c);
}

static void test_rotary_interleaved(void) {
  /* one head of size 2, angle 90 degrees: (x1, x2) -> (-x2, x1) */
  kiln_tensor *in[4] = {mk(KILN_F32, 4, (int64_t[]){1, 1, 1, 2}, (double[]){3, 4}),
                        mk(KILN_F32, 2, (int64_t[]){2, 1}, (double[]){1, 0}),
                        mk(KILN_F32, 2, (int64_t[]){2, 1}, (double[]){0, 1}),
                        mk(KILN_I64, 2, (int64_t[]){1, 1}, (double[]){1})};
  tcase c = make(23, "RotaryEmbedding", 4, in, 1, Y1);
  a_int(&c, "interleaved", 1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F32, 4, (int64_t[]){1, 1, 1, 2}, (double[]){-4, 3}, 0));
  done(&c);
}

/* ---- detection ---- */
static void test_nms(void) {
  double boxes[12] = {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 10, 1, 11};
  kiln_tensor *in[5] = {mk(KILN_F32, 3, (int64_t[]){1, 3, 4}, boxes),
                        mk(KILN_F32, 3, (int64_t[]){1, 1, 3}, (double[]){0.9, 0.95, 0.3}),
                        sc_i64(3), sc_f32(0.5), sc_f32(0.0)};
  tcase c = make(11, "NonMaxSuppression", 5, in, 1, Y1);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_I64, 2, (int64_t[]){2, 3}, (double[]){0, 0, 1, 0, 0, 2}, 0));
  done(&c);
}

/* ---- strings ---- */
static void test_string_ops(void) {
  kiln_tensor *in[2] = {mks(1, (int64_t[]){2}, (const char *const[]){"a", "b"}),
                        mks(0, NULL, (const char *const[]){"!"})};
  tcase c = make(20, "StringConcat", 2, in, 1, Y1);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 2, (const char *const[]){"a!", "b!"}));
  done(&c);
  kiln_tensor *s[1] = {mks(1, (int64_t[]){2}, (const char *const[]){" a  b c ", "d"})};
  tcase d = make(20, "StringSplit", 1, s, 2, Y2);
  a_int(&d, "maxsplit", 1);
  CHECK_OK(run(&d));
  CHECK(strs_eq(&d, 0, 4, (const char *const[]){"a", "b c ", "d", ""}));
  CHECK(near(&d, 1, KILN_I64, 1, (int64_t[]){2}, (double[]){2, 1}, 0));
  done(&d);
  kiln_tensor *n[1] = {mks(2, (int64_t[]){1, 3}, (const char *const[]){"MONDAY", "Été", "x"})};
  tcase e = make(10, "StringNormalizer", 1, n, 1, Y1);
  a_strs(&e, "stopwords", 1, (const char *const[]){"monday"});
  a_str(&e, "case_change_action", "UPPER");
  CHECK_OK(run(&e));
  CHECK(strs_eq(&e, 0, 2, (const char *const[]){"ÉTÉ", "X"}));
  done(&e);
}

static bool re_match(const char *pat, const char *s) {
  kiln_text_regex *re;
  kiln_status st = kiln_text_regex_compile(pat, &re);
  if (st) {
    fprintf(stderr, "  regex '%s': %s\n", pat, kiln_status_message(st));
    kiln_status_free(st);
    return false;
  }
  bool m = kiln_text_regex_fullmatch(re, s);
  kiln_text_regex_free(re);
  return m;
}

static void test_regex(void) {
  CHECK(re_match("www\\.[\\w.-]+\\.\\bcom\\b", "www.google.com"));
  CHECK(!re_match("www\\.[\\w.-]+\\.\\bcom\\b", "www.bbc.co.uk"));
  CHECK(re_match("(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account@gmail.com"));
  CHECK(!re_match("(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account@hotmail.com"));
  CHECK(re_match("(?i)ab+c", "ABBBC"));
  CHECK(re_match("a{2,3}", "aaa") && !re_match("a{2,3}", "aaaa"));
  CHECK(re_match("[^[:digit:]]*\\d", "ab7"));
  CHECK(re_match("(?:x|y)*z?", ""));
  CHECK(re_match(".", "é") && !re_match("..", "é"));
  CHECK(re_match("(a*)*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab")); /* no backtracking blow-up */
  kiln_text_regex *re;
  CHECK_ERR(kiln_text_regex_compile("a(b", &re), KILN_ERR_INVALID);
  CHECK_ERR(kiln_text_regex_compile("\\pL", &re), KILN_ERR_INVALID);
}

static void test_tfidf(void) {
  /* pool: unigrams {2, 3}, bigram {3, 2}; x = 2 3 2 3 */
  kiln_tensor *in[1] = {mk(KILN_I64, 1, (int64_t[]){4}, (double[]){2, 3, 2, 3})};
  tcase c = make(9, "TfIdfVectorizer", 1, in, 1, Y1);
  a_int(&c, "min_gram_length", 1);
  a_int(&c, "max_gram_length", 2);
  a_int(&c, "max_skip_count", 1);
  a_str(&c, "mode", "TF");
  a_ints(&c, "ngram_counts", 2, (int64_t[]){0, 2});
  a_ints(&c, "ngram_indexes", 3, (int64_t[]){0, 1, 2});
  a_ints(&c, "pool_int64s", 4, (int64_t[]){2, 3, 3, 2});
  CHECK_OK(run(&c));
  /* bigram (3,2): stride 1 at pos 1; stride 2: (x0,x2)=(2,2), (x1,x3)=(3,3): none */
  CHECK(near(&c, 0, KILN_F32, 1, (int64_t[]){3}, (double[]){2, 2, 1}, 0));
  done(&c);
}

/* ---- random: values from numpy.random.RandomState(0) ---- */
static void test_random_matches_numpy(void) {
  tcase c = make(22, "RandomUniform", 0, NULL, 1, Y1);
  a_ints(&c, "shape", 1, (int64_t[]){3});
  a_float(&c, "seed", 0);
  a_int(&c, "dtype", KILN_F64);
  CHECK_OK(run(&c));
  CHECK(near(&c, 0, KILN_F64, 1, (int64_t[]){3},
             (double[]){0.5488135039273248, 0.7151893663724195, 0.6027633760716439}, 1e-15));
  done(&c);
  tcase d = make(22, "RandomNormal", 0, NULL, 1, Y1);
  a_ints(&d, "shape", 1, (int64_t[]){3});
  a_float(&d, "seed", 0);
  a_int(&d, "dtype", KILN_F64);
  CHECK_OK(run(&d));
  CHECK(near(&d, 0, KILN_F64, 1, (int64_t[]){3},
             (double[]){1.764052345967664, 0.4001572083672233, 0.9787379841057392}, 1e-14));
  done(&d);
  double p[10] = {0.3, 0.9, 0.5, 0.1, 0.7, 0.2, 0.6, 0.8, 0.4, 0.95};
  kiln_tensor *in[1] = {mk(KILN_F64, 1, (int64_t[]){10}, p)};
  tcase e = make(22, "Bernoulli", 1, in, 1, Y1);
  a_float(&e, "seed", 7);
  CHECK_OK(run(&e));
  CHECK(near(&e, 0, KILN_F64, 1, (int64_t[]){10}, (double[]){0, 1, 0, 0, 0, 0, 1, 1, 0, 1}, 0));
  done(&e);
}

static void test_image_decoder_unsupported(void) {
  kiln_tensor *in[1] = {mk(KILN_U8, 1, (int64_t[]){2}, (double[]){1, 2})};
  tcase c = make(20, "ImageDecoder", 1, in, 1, Y1);
  CHECK_ERR(run(&c), KILN_ERR_UNSUPPORTED);
  done(&c);
}

TEST_MAIN(T(test_nll_weight_ignore), T(test_nll_target_out_of_range), T(test_sce_log_prob),
          T(test_quantize_per_axis_int4), T(test_quantize_blocked_and_dequantize),
          T(test_quantize_f8_saturate), T(test_dynamic_quantize), T(test_qlinear_matmul),
          T(test_rnn_forward), T(test_gru_bidirectional_matches_reverse), T(test_lstm_zero_weights),
          T(test_dft_roundtrip), T(test_windows), T(test_attention_causal),
          T(test_rotary_interleaved), T(test_nms), T(test_string_ops), T(test_regex), T(test_tfidf),
          T(test_random_matches_numpy), T(test_image_decoder_unsupported),
          T(test_rnn_activation_clip_seqlen), T(test_lstm_input_forget_layout),
          T(test_quantize_f8_no_saturate), T(test_dft_opset17_axis_attr),
          T(test_multinomial_deterministic), T(test_attention_gqa_3d_past))
