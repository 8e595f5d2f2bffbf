/* Ops of the 'random' family (see src/graph/ops.def): RandomUniform, RandomNormal,
 * RandomUniformLike, RandomNormalLike (1, 22), Bernoulli (15, 22), Multinomial (7, 22).
 *
 * Generator (documented, deterministic): MT19937 seeded and consumed exactly like
 * numpy's legacy numpy.random.RandomState(seed), so a node with seed s produces
 *   RandomUniform*: RandomState(s).rand(*shape) * (high - low) + low
 *   RandomNormal*:  RandomState(s).randn(*shape) * scale + mean   (legacy polar method)
 *   Bernoulli:      RandomState(s).binomial(1, p=x)               (legacy inversion)
 * in the output type, which is what the ONNX Python reference runtime computes. The
 * seed attribute is truncated to an integer and taken modulo 2^32. A node without a
 * seed uses the FNV-1a hash of its first output's name, so runs are reproducible.
 * Multinomial draws, per batch row, sample_size indices from softmax(input row) by
 * inverting the cumulative distribution with one uniform double per sample.
 *
 * Conformance tests of random ops store one draw of an unseeded global generator;
 * no implementation can reproduce them (they are expected failures). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

/* ---- MT19937 as in numpy's legacy RandomState ---- */
typedef struct mt_state {
  uint32_t key[624];
  int pos;
  bool has_gauss;
  double gauss;
} mt_state;

static void mt_seed(mt_state *s, uint32_t seed) {
  for (int i = 0; i < 624; i++) {
    s->key[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)i + 1u;
  }
  s->pos = 624;
  s->has_gauss = false;
}

static void mt_refill(mt_state *s) {
  static const uint32_t mag[2] = {0, 0x9908b0dfu};
  int i;
  uint32_t y;
  for (i = 0; i < 624 - 397; i++) {
    y = (s->key[i] & 0x80000000u) | (s->key[i + 1] & 0x7fffffffu);
    s->key[i] = s->key[i + 397] ^ (y >> 1) ^ mag[y & 1];
  }
  for (; i < 623; i++) {
    y = (s->key[i] & 0x80000000u) | (s->key[i + 1] & 0x7fffffffu);
    s->key[i] = s->key[i + 397 - 624] ^ (y >> 1) ^ mag[y & 1];
  }
  y = (s->key[623] & 0x80000000u) | (s->key[0] & 0x7fffffffu);
  s->key[623] = s->key[396] ^ (y >> 1) ^ mag[y & 1];
  s->pos = 0;
}

static uint32_t mt_next32(mt_state *s) {
  if (s->pos == 624) mt_refill(s);
  uint32_t y = s->key[s->pos++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

/* Uniform double in [0, 1) with 53 random bits. */
static double mt_double(mt_state *s) {
  uint32_t a = mt_next32(s) >> 5, b = mt_next32(s) >> 6;
  return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

static double mt_gauss(mt_state *s) {
  if (s->has_gauss) {
    s->has_gauss = false;
    return s->gauss;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * mt_double(s) - 1.0;
    x2 = 2.0 * mt_double(s) - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = sqrt(-2.0 * log(r2) / r2);
  s->gauss = f * x1;
  s->has_gauss = true;
  return f * x2;
}

/* numpy's legacy binomial(1, p) (inversion; p > 0.5 uses 1 - inversion(1 - p)). */
static int mt_bernoulli(mt_state *s, double p) {
  if (!(p > 0)) return 0;
  bool flip = p > 0.5;
  double pp = flip ? 1.0 - p : p, q = 1.0 - pp;
  int x = 0;
  double px = q, u = mt_double(s);
  while (u > px) {
    x++;
    if (x > 1) {
      x = 0;
      px = q;
      u = mt_double(s);
    } else {
      u -= px;
      px = (1.0 * pp * px) / q;
    }
  }
  return flip ? 1 - x : x;
}

static kiln_status rng_init(const kiln_eval_ctx *ctx, mt_state *s) {
  const kiln_attr *a = kiln_node_attr(ctx->node, "seed");
  uint32_t seed;
  if (a) {
    float f;
    KILN_TRY(kiln_node_float(ctx->node, "seed", 0, &f));
    if (!isfinite(f)) return kiln_eval_error(ctx, KILN_ERR_INVALID, "seed must be finite");
    seed = (uint32_t)(uint64_t)(int64_t)truncf(f);
  } else {
    const kiln_graph *g = ctx->graph;
    int out = ctx->node->n_outputs ? ctx->node->outputs[0] : -1;
    const char *name = out >= 0 && g ? g->values.data[out].name : ctx->node->name;
    name = name ? name : "";
    seed = (uint32_t)kiln_hash_bytes(name, strlen(name), 0);
  }
  mt_seed(s, seed);
  return KILN_OK;
}

/* ---- shapes and types ---- */
static kiln_status rand_dtype(const kiln_eval_ctx *ctx, kiln_dtype dflt, bool float_only,
                              kiln_dtype *out) {
  int64_t dt;
  KILN_TRY(kiln_node_int(ctx->node, "dtype", dflt, &dt));
  if (!kiln_dtype_valid((int)dt) || dt == KILN_STRING ||
      (float_only && !kiln_dtype_is_float((kiln_dtype)dt)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %lld", (long long)dt);
  *out = (kiln_dtype)dt;
  return KILN_OK;
}

/* Output 0 with the shape attribute (no input) or the shape of input 0 (Like ops). */
static kiln_status rand_out(kiln_eval_ctx *ctx, bool like, kiln_tensor **y) {
  kiln_dtype dt;
  if (like) {
    const kiln_tensor *x;
    KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
    KILN_TRY(rand_dtype(ctx, x->dtype, true, &dt));
    return kiln_eval_out(ctx, 0, dt, x->rank, x->dims, y);
  }
  KILN_TRY(rand_dtype(ctx, KILN_F32, true, &dt));
  const int64_t *shape;
  int n;
  KILN_TRY(kiln_node_ints(ctx->node, "shape", &shape, &n));
  if (n < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute 'shape' is required");
  if (n > KILN_MAX_RANK) return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "rank %d too large", n);
  return kiln_eval_out(ctx, 0, dt, n, shape, y);
}

/* v = round(round(u) * round(a)) + round(b), each step rounded to the output type. */
static double affine_in(kiln_dtype t, double u, double a, double b) {
  double r = kiln_kern_round_to(t, u);
  r = kiln_kern_round_to(t, r * kiln_kern_round_to(t, a));
  return kiln_kern_round_to(t, r + kiln_kern_round_to(t, b));
}

static kiln_status uniform_run(kiln_eval_ctx *ctx, bool like) {
  float lo, hi;
  KILN_TRY(kiln_node_float(ctx->node, "low", 0.0f, &lo));
  KILN_TRY(kiln_node_float(ctx->node, "high", 1.0f, &hi));
  mt_state s;
  KILN_TRY(rng_init(ctx, &s));
  kiln_tensor *y;
  KILN_TRY(rand_out(ctx, like, &y));
  for (int64_t i = 0; i < y->numel; i++)
    kiln_store_f64(y->dtype, y->data, (size_t)i,
                   affine_in(y->dtype, mt_double(&s), (double)hi - (double)lo, lo));
  return KILN_OK;
}

static kiln_status normal_run(kiln_eval_ctx *ctx, bool like) {
  float mean, scale;
  KILN_TRY(kiln_node_float(ctx->node, "mean", 0.0f, &mean));
  KILN_TRY(kiln_node_float(ctx->node, "scale", 1.0f, &scale));
  mt_state s;
  KILN_TRY(rng_init(ctx, &s));
  kiln_tensor *y;
  KILN_TRY(rand_out(ctx, like, &y));
  for (int64_t i = 0; i < y->numel; i++)
    kiln_store_f64(y->dtype, y->data, (size_t)i, affine_in(y->dtype, mt_gauss(&s), scale, mean));
  return KILN_OK;
}

static kiln_status eval_random_uniform(kiln_eval_ctx *ctx) {
  return uniform_run(ctx, false);
}
static kiln_status eval_random_uniform_like(kiln_eval_ctx *ctx) {
  return uniform_run(ctx, true);
}
static kiln_status eval_random_normal(kiln_eval_ctx *ctx) {
  return normal_run(ctx, false);
}
static kiln_status eval_random_normal_like(kiln_eval_ctx *ctx) {
  return normal_run(ctx, true);
}

static kiln_status eval_bernoulli(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_kern_need_float(ctx, x, "input"));
  kiln_dtype dt;
  KILN_TRY(rand_dtype(ctx, x->dtype, false, &dt));
  mt_state s;
  KILN_TRY(rng_init(ctx, &s));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, dt, x->rank, x->dims, &y));
  for (int64_t i = 0; i < x->numel; i++) {
    double p = kiln_load_f64(x->dtype, x->data, (size_t)i);
    if (!(p >= 0 && p <= 1))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "probability %g outside [0, 1]", p);
    kiln_store_f64(dt, y->data, (size_t)i, mt_bernoulli(&s, p));
  }
  return KILN_OK;
}

static kiln_status eval_multinomial(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_kern_need_float(ctx, x, "input"));
  if (x->rank != 2 || x->dims[1] < 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be [batch, classes >= 1]");
  int64_t n, dt;
  KILN_TRY(kiln_node_int(ctx->node, "sample_size", 1, &n));
  KILN_TRY(kiln_node_int(ctx->node, "dtype", KILN_I32, &dt));
  if (n < 0 || (dt != KILN_I32 && dt != KILN_I64))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad sample_size or dtype");
  mt_state s;
  KILN_TRY(rng_init(ctx, &s));
  int64_t B = x->dims[0], C = x->dims[1];
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, (kiln_dtype)dt, 2, (int64_t[]){B, n}, &y));
  double *cum = kiln_xmalloc((size_t)C * sizeof(double));
  for (int64_t b = 0; b < B; b++) {
    double mx = -INFINITY, tot = 0;
    for (int64_t c = 0; c < C; c++)
      mx = fmax(mx, kiln_load_f64(x->dtype, x->data, (size_t)(b * C + c)));
    for (int64_t c = 0; c < C; c++) {
      double v = kiln_load_f64(x->dtype, x->data, (size_t)(b * C + c));
      tot += isfinite(mx) ? exp(v - mx) : 0.0;
      cum[c] = tot;
    }
    for (int64_t k = 0; k < n; k++) {
      double u = mt_double(&s) * tot;
      int64_t c = 0;
      while (c < C - 1 && cum[c] <= u) c++;
      kiln_store_i64(y->dtype, y->data, (size_t)(b * n + k), c);
    }
  }
  free(cum);
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

void kiln_ops_register_random(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_RandomUniform, eval_random_uniform, 0, 0, 1, 1);
  kiln_kern_set(table, KILN_OP_RandomNormal, eval_random_normal, 0, 0, 1, 1);
  kiln_kern_set(table, KILN_OP_RandomUniformLike, eval_random_uniform_like, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_RandomNormalLike, eval_random_normal_like, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_Bernoulli, eval_bernoulli, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_Multinomial, eval_multinomial, 1, 1, 1, 1);
  table[KILN_OP_RandomUniform].infer = infer_random;
  table[KILN_OP_RandomNormal].infer = infer_random;
  table[KILN_OP_RandomUniformLike].infer = infer_random_like;
  table[KILN_OP_RandomNormalLike].infer = infer_random_like;
  table[KILN_OP_Bernoulli].infer = infer_random_like;
  table[KILN_OP_Multinomial].infer = infer_multinomial;
}
