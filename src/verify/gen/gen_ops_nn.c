/* Generator builders of contractions (MatMul, Gemm, Conv with their bias and BatchNorm
 * patterns), pooling, normalizations, and two ops that fall back (TopK, Einsum). */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

#define ATTR(...) (snprintf(a, sizeof a, __VA_ARGS__), a)

static const char *op_name(int op) {
  return kiln_gen_ops[op].name;
}

static int new_value(gen *G, kiln_dtype dt, int rank, const int64_t *dims, gen_dom dom,
                     double p_const) {
  kiln_type t = gen_tensor_type(dt, rank, dims);
  bool sym = !kiln_type_is_static(&t);
  return !sym && gen_chance(&G->rng, p_const) ? gen_new_const(G, &t, dom)
                                              : gen_new_input(G, &t, dom);
}

static int pick_float(gen *G, int rmin, int rmax, bool static_shape) {
  gen_want w = {DT_FLOAT, rmin, rmax, DOM_ANY, static_shape, false, 0, false, false};
  return gen_pick(G, &w);
}

static const char *ints_text(char *buf, size_t n, int k, const int64_t *v) {
  int len = snprintf(buf, n, "[");
  for (int i = 0; i < k; i++)
    len += snprintf(buf + len, n - (size_t)len, "%s%lld", i ? "," : "", (long long)v[i]);
  snprintf(buf + len, n - (size_t)len, "]");
  return buf;
}

/* The auto_pad choice of a window op: 0 explicit pads, then SAME_UPPER, SAME_LOWER, VALID and
 * NOTSET written out without pads. */
static const char *const auto_pads[] = {NULL, "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"};

/* The window attributes kernel_shape (unless omit_kernel), strides, pads or auto_pad, and
 * dilations (when dl), each list left out now and then where it holds its default. */
static void window_attrs(gen *G, char *a, size_t n, int sd, const int64_t *k, const int64_t *s,
                         const int64_t *pads, const int64_t *dl, int ap, bool omit_kernel) {
  char b[64];
  int len = 0;
  bool ones_s = true, ones_d = true, zero_p = true;
  for (int d = 0; d < sd; d++) ones_s = ones_s && s[d] == 1, ones_d = ones_d && (!dl || dl[d] == 1);
  for (int d = 0; d < 2 * sd; d++) zero_p = zero_p && pads[d] == 0;
  a[0] = 0;
  if (!omit_kernel)
    len += snprintf(a + len, n - (size_t)len, "kernel_shape=%s", ints_text(b, sizeof b, sd, k));
  if (!ones_s || !gen_attr_chance(G, 0.4))
    len += snprintf(a + len, n - (size_t)len, "%sstrides=%s", len ? ", " : "",
                    ints_text(b, sizeof b, sd, s));
  if (ap > 0)
    len += snprintf(a + len, n - (size_t)len, "%sauto_pad=\"%s\"", len ? ", " : "", auto_pads[ap]);
  else if (!zero_p || !gen_attr_chance(G, 0.4))
    len += snprintf(a + len, n - (size_t)len, "%spads=%s", len ? ", " : "",
                    ints_text(b, sizeof b, 2 * sd, pads));
  if (dl && (!ones_d || !gen_attr_chance(G, 0.4)))
    snprintf(a + len, n - (size_t)len, "%sdilations=%s", len ? ", " : "",
             ints_text(b, sizeof b, sd, dl));
}

/* Batch dims for B of a MatMul A x B (A's batch dims are all but its last two): each of A's
 * taken as it is, or as 1 (broadcast against A's), or where A's is 1 as a larger extent (A's
 * broadcast against B's), and now and then one more leading dim, or fewer than A's but some
 * (B's aligned with A's last ones). Returns their count. */
static int batch_dims(gen *G, int a, int64_t *bd) {
  int ra = gen_rank(G, a), na = ra > 2 ? ra - 2 : 0, nb = 0;
  int from = na >= 2 && gen_chance(&G->rng, 0.3) ? gen_int(&G->rng, 1, na - 1) : 0;
  if (na < 2 && gen_chance(&G->rng, na == 0 ? 0.7 : 0.3)) bd[nb++] = gen_int(&G->rng, 1, 3);
  for (int d = from; d < na; d++) {
    const kiln_dim *x = &gen_v(G, a)->type.dims[d];
    int form = gen_int(&G->rng, 0, 2);
    if (x->value == 1) bd[nb++] = form == 0 ? 1 : gen_int(&G->rng, 2, 3);
    else bd[nb++] = form == 0 && x->value >= 0 ? 1 : gen_dim_code(x);
  }
  return nb;
}

/* MatMul: sometimes a long contraction (K up to 512), sometimes followed by a bias Add
 * (simplify makes a Gemm of it). */
bool gen_b_matmul(gen *G, int op) {
  (void)op;
  int a, mode = gen_int(&G->rng, 0, 9);
  if (mode < 5) {
    a = pick_float(G, 1, 4, false);
  } else { /* a long contraction, or more rows than one register tile (tails) */
    int64_t k = mode < 8 ? gen_int(&G->rng, 32, 512) : gen_int(&G->rng, 1, 64);
    int64_t m = mode < 8 ? gen_int(&G->rng, 1, (int)(2048 / k) + 1) : gen_int(&G->rng, 8, 33);
    kiln_dtype dt = gen_pick_dt(G, DT_FLOAT);
    int64_t dims[3] = {m, k};
    a = new_value(G, dt, 2, dims, DOM_ANY, 0);
  }
  if (a < 0) return false;
  kiln_dtype dt = gen_dtype(G, a);
  int r = gen_rank(G, a);
  int64_t k = gen_dim(G, a, r - 1),
          n = gen_chance(&G->rng, 0.3) ? gen_int(&G->rng, 8, 40) : gen_int(&G->rng, 1, 8);
  int64_t bd[KILN_MAX_RANK];
  int br = 2;
  if (gen_chance(&G->rng, 0.15)) br = 1, bd[0] = k;
  else if (gen_chance(&G->rng, 0.4)) br = batch_dims(G, a, bd), bd[br] = k, bd[br + 1] = n, br += 2;
  else bd[0] = k, bd[1] = n;
  int b = new_value(G, dt, br, bd, DOM_ANY, 0.6);
  double mag = gen_mag(G, a) * gen_mag(G, b) * (double)k;
  int in[2] = {a, b};
  int y = gen_emit(G, "MatMul", 2, in, 1, "", DOM_ANY, mag);
  if (br == 2 && gen_chance(&G->rng, 0.4)) {
    int64_t nd[1] = {n};
    int bias[2] = {y, new_value(G, dt, 1, nd, DOM_ANY, 0.9)};
    y = gen_emit(G, "Add", 2, bias, 1, G->opset < 7 ? "broadcast=1" : "", DOM_ANY, mag + 2);
  }
  if (y >= 0 && r == 2 && br == 2 && G->opset >= 7 && gen_chance(&G->rng, 0.25)) {
    /* a residual the product's epilogue reads: A itself (k == n), a graph input, or an
     * elementwise result of one, which a group after the product's computes */
    int res = a;
    if (k != n || gen_chance(&G->rng, 0.5)) {
      int64_t od[2] = {gen_dim(G, a, 0), n};
      if (gen_v(G, a)->type.dims[0].value < 0) return true;
      res = new_value(G, dt, 2, od, DOM_ANY, 0);
      if (gen_chance(&G->rng, 0.5))
        res = gen_emit(G, gen_chance(&G->rng, 0.5) ? "Relu" : "Neg", 1, &res, 1, "", DOM_ANY,
                       gen_mag(G, res));
    }
    if (res < 0) return true;
    int sum[2] = {y, res};
    if (gen_chance(&G->rng, 0.5)) sum[0] = res, sum[1] = y;
    gen_emit(G, "Add", 2, sum, 1, "", DOM_ANY, mag + gen_mag(G, res) + 2);
  }
  return true;
}

/* The type of a Gemm's C: any form that broadcasts to [m, n] one way: [n], [1], a scalar,
 * [1, n], [m, 1], [m, n] (the forms with m only where m is known). */
kiln_type gen_gemm_c_type(gen *G, kiln_dtype dt, int64_t m, int64_t n, bool m_known) {
  int form = gen_int(&G->rng, 0, m_known ? 5 : 3);
  int64_t d[2] = {n, 1};
  switch (form) {
  case 0: return kiln_type_tensor(dt, 1, d);
  case 1: d[0] = 1; return kiln_type_tensor(dt, 1, d);
  case 2: return kiln_type_tensor(dt, 0, d);
  case 3: d[0] = 1, d[1] = n; return kiln_type_tensor(dt, 2, d);
  case 4: d[0] = m, d[1] = 1; return kiln_type_tensor(dt, 2, d);
  default: d[0] = m, d[1] = n; return kiln_type_tensor(dt, 2, d);
  }
}

static void batchnorm_after(gen *G, int y, kiln_dtype dt, int64_t c);

bool gen_b_gemm(gen *G, int op) {
  (void)op;
  int x = pick_float(G, 2, 2, false);
  if (x < 0) return false;
  kiln_dtype dt = gen_dtype(G, x);
  bool ta = gen_chance(&G->rng, 0.2) && gen_is_static(G, x), tb = gen_chance(&G->rng, 0.5);
  int64_t m = gen_dim(G, x, ta ? 1 : 0), k = gen_dim(G, x, ta ? 0 : 1), n = gen_int(&G->rng, 1, 8);
  int64_t bd[2] = {tb ? n : k, tb ? k : n};
  int in[3] = {x, new_value(G, dt, 2, bd, DOM_ANY, 0.7), -1};
  if (gen_chance(&G->rng, 0.75)) {
    kiln_type ct = gen_gemm_c_type(G, dt, m, n, gen_v(G, x)->type.dims[ta ? 1 : 0].value >= 0);
    int64_t cd[2] = {ct.rank > 0 ? ct.dims[0].value : 1, ct.rank > 1 ? ct.dims[1].value : 1};
    in[2] = new_value(G, dt, ct.rank, cd, DOM_ANY, ct.rank == 2 && cd[0] > 1 ? 0.5 : 0.9);
  }
  char a[96];
  ATTR("alpha=%.3g, beta=%.3g, transA=%d, transB=%d",
       gen_attr_chance(G, 0.5) ? 1.0 : 0.5 + gen_attr_unif(G),
       gen_attr_chance(G, 0.5) ? 1.0 : gen_attr_unif(G), ta, tb);
  int y =
      gen_emit(G, "Gemm", in[2] >= 0 ? 3 : 2, in, 1, a, DOM_ANY, gen_mag(G, x) * 6 * (double)k + 6);
  /* sometimes BatchNormalization of its columns, which bnfold folds into op(B) and C */
  if (y >= 0 && gen_chance(&G->rng, 0.2)) batchnorm_after(G, y, dt, n);
  return true;
}

/* BatchNormalization's training_mode (opset 14 on): absent (inference) most of the time,
 * written 0 now and then, and 1 (statistics of the batch, Y only) in one of seven. */
static const char *bn_mode(gen *G) {
  if (G->opset < 14 || !gen_attr_chance(G, 0.3)) return "";
  return gen_attr_chance(G, 0.5) ? "training_mode=1" : "training_mode=0";
}

/* BatchNormalization of y (channels c, dtype dt), constant statistics, in inference
 * mostly (bn_mode). */
static void batchnorm_after(gen *G, int y, kiln_dtype dt, int64_t c) {
  int in[5] = {y};
  int64_t d[1] = {c};
  kiln_type t = kiln_type_tensor(dt, 1, d);
  in[1] = gen_new_const(G, &t, DOM_POS), in[2] = gen_new_const(G, &t, DOM_ANY);
  in[3] = gen_new_const(G, &t, DOM_ANY), in[4] = gen_new_const(G, &t, DOM_POS);
  gen_emit(G, "BatchNormalization", 5, in, 1, bn_mode(G), DOM_ANY, INFINITY);
}

/* Conv 1-3 d: groups (depthwise too), pads, strides, dilations; kernel within the padded
 * input. Sometimes followed by BatchNormalization (bnfold). */
bool gen_b_conv(gen *G, int op) {
  (void)op;
  int sd = gen_int(&G->rng, 1, 3);
  int64_t n = gen_int(&G->rng, 1, 2), c = gen_int(&G->rng, 1, 6),
          sp = sd == 1   ? 12
               : sd == 2 ? 8
                         : 4;
  int x = -1;
  gen_want w = {DT_FLOAT, 3, 5, DOM_ANY, false, false, 0, false, false};
  if (gen_chance(&G->rng, 0.5)) x = gen_pick(G, &w);
  if (x < 0 || gen_rank(G, x) < 3) {
    int64_t dims[5] = {n, c};
    for (int d = 0; d < sd; d++) dims[2 + d] = gen_int(&G->rng, 1, (int)sp);
    /* wide rows now and then (a 1-d signal, an image row): the convolution schedules that
     * tile an output row in segments need more columns than the small extents give */
    if (sd <= 2 && gen_chance(&G->rng, 0.15)) dims[1 + sd] = gen_int(&G->rng, 16, 40);
    if (G->o->symbolic && gen_chance(&G->rng, 0.2)) dims[0] = -1;
    x = new_value(G, gen_pick_dt(G, DT_FLOAT), 2 + sd, dims, DOM_ANY, 0);
  }
  kiln_dtype dt = gen_dtype(G, x);
  sd = gen_rank(G, x) - 2, c = gen_dim(G, x, 1);
  int64_t group = 1, m = gen_int(&G->rng, 1, 6);
  int gsel = gen_int(&G->rng, 0, 3);
  if (gsel == 1) group = c, m = c * gen_int(&G->rng, 1, 2); /* depthwise */
  else if (gsel == 2) { /* grouped: any divisor > 1, 1..3 output channels per group */
    int64_t divs[16];
    int nd = 0;
    for (int64_t g = 2; g <= c && nd < 16; g++)
      if (c % g == 0) divs[nd++] = g;
    if (nd > 0) group = divs[gen_int(&G->rng, 0, nd - 1)], m = group * gen_int(&G->rng, 1, 3);
  }
  int64_t k[3], s[3], dl[3], pads[6], wd[5] = {m, c / group};
  int ap = gen_attr_int(G, 0, 4);
  /* a pointwise (1x1) Conv a quarter of the time, as networks have them: with pads (one
     side only now and then, so the output outgrows the input) it is no longer pointwise */
  bool pointwise = gen_chance(&G->rng, 0.25);
  for (int d = 0; d < sd; d++) {
    int64_t in = gen_dim(G, x, 2 + d);
    pads[d] = ap ? 0 : gen_attr_int(G, 0, 1), pads[sd + d] = ap ? 0 : gen_attr_int(G, 0, 1);
    dl[d] = gen_attr_chance(G, 0.2) ? 2 : 1, s[d] = gen_attr_int(G, 1, 2);
    int64_t room = ap == 1 || ap == 2 ? in + 2 : in + pads[d] + pads[sd + d]; /* SAME pads */
    k[d] = pointwise ? 1 : gen_attr_int(G, 1, 4);
    while (k[d] > 1 && (k[d] - 1) * dl[d] + 1 > room) k[d]--;
    if ((k[d] - 1) * dl[d] + 1 > room) dl[d] = 1;
    wd[2 + d] = k[d];
  }
  int in[3] = {x, new_value(G, dt, 2 + sd, wd, DOM_ANY, 0.85), -1};
  int64_t md[1] = {m};
  if (gen_chance(&G->rng, 0.5)) in[2] = new_value(G, dt, 1, md, DOM_ANY, 0.9);
  char a[256], wa[224];
  window_attrs(G, wa, sizeof wa, sd, k, s, pads, dl, ap, gen_attr_chance(G, 0.25));
  snprintf(a, sizeof a, "group=%lld%s%s", (long long)group, wa[0] ? ", " : "", wa);
  double kk = (double)(c / group);
  for (int d = 0; d < sd; d++) kk *= (double)k[d];
  int y = gen_emit(G, "Conv", in[2] >= 0 ? 3 : 2, in, 1, a, DOM_ANY, gen_mag(G, x) * 2 * kk + 2);
  if (gen_chance(&G->rng, 0.3)) {
    batchnorm_after(G, y, dt, m);
    /* the filter (and bias) shared with a second Conv that no BatchNormalization follows: a
     * fold must not change what the other reader sees */
    if (gen_chance(&G->rng, 0.3))
      gen_emit(G, "Conv", in[2] >= 0 ? 3 : 2, in, 1, a, DOM_ANY, gen_mag(G, x) * 2 * kk + 2);
  }
  return true;
}

/* ConvTranspose 1-2 d: group 1 or one per channel, strides, pads, dilations, output_padding
 * below the stride; sometimes followed by BatchNormalization, which bnfold must leave alone
 * (the weights are [C, M/group, k...], not Conv's [M, C/group, k...]). */
bool gen_b_conv_transpose(gen *G, int op) {
  (void)op;
  int sd = gen_int(&G->rng, 1, 2);
  int x = -1;
  gen_want w = {DT_FLOAT, 3, 4, DOM_ANY, false, false, 0, false, false};
  if (gen_chance(&G->rng, 0.5)) x = gen_pick(G, &w);
  if (x < 0 || gen_rank(G, x) < 3 || gen_dim(G, x, 1) > 8) {
    int64_t dims[4] = {gen_int(&G->rng, 1, 2), gen_int(&G->rng, 1, 4)};
    for (int d = 0; d < sd; d++) dims[2 + d] = gen_int(&G->rng, 1, sd == 1 ? 9 : 5);
    x = new_value(G, gen_pick_dt(G, DT_FLOAT), 2 + sd, dims, DOM_ANY, 0);
  }
  kiln_dtype dt = gen_dtype(G, x);
  sd = gen_rank(G, x) - 2;
  int64_t c = gen_dim(G, x, 1), group = gen_chance(&G->rng, 0.3) ? c : 1,
          mg = gen_int(&G->rng, 1, 3), m = mg * group;
  int64_t k[2], s[2], dl[2], pads[4], op_[2], wd[4] = {c, mg};
  bool any_op = false;
  for (int d = 0; d < sd; d++) {
    int64_t in = gen_dim(G, x, 2 + d);
    k[d] = gen_attr_int(G, 1, 3), s[d] = gen_attr_int(G, 1, 2);
    dl[d] = gen_attr_chance(G, 0.2) ? 2 : 1;
    op_[d] = s[d] > 1 ? gen_attr_int(G, 0, (int)s[d] - 1) : 0;
    any_op = any_op || op_[d];
    int64_t full = s[d] * (in - 1) + op_[d] + (k[d] - 1) * dl[d] + 1; /* before the pads */
    pads[d] = gen_attr_int(G, 0, 1), pads[sd + d] = gen_attr_int(G, 0, 1);
    if (full - pads[d] - pads[sd + d] < 1) pads[d] = pads[sd + d] = 0;
    wd[2 + d] = k[d];
  }
  int in[3] = {x, new_value(G, dt, 2 + sd, wd, DOM_ANY, 0.85), -1};
  int64_t md[1] = {m};
  if (gen_chance(&G->rng, 0.5)) in[2] = new_value(G, dt, 1, md, DOM_ANY, 0.9);
  char a[320], wa[224], b[64];
  /* now and then auto_pad in place of the pads (VALID: none; SAME: output = input * stride,
   * drawn only where its total padding is not negative), or output_shape (the size the pads
   * would give; the pads are then derived and left out) */
  int ap = gen_attr_chance(G, 0.2) ? gen_attr_int(G, 1, 3) : 0;
  bool oshape = !ap && gen_attr_chance(G, 0.15);
  int64_t os[2];
  for (int d = 0; d < sd; d++) {
    os[d] = s[d] * (gen_dim(G, x, 2 + d) - 1) + op_[d] + (k[d] - 1) * dl[d] + 1 - pads[d] -
            pads[sd + d];
    if (ap < 3 && op_[d] + (k[d] - 1) * dl[d] + 1 - s[d] < 0) ap = ap ? 3 : 0;
  }
  for (int d = 0; d < 2 * sd; d++) pads[d] = ap || oshape ? 0 : pads[d];
  window_attrs(G, wa, sizeof wa, sd, k, s, pads, dl, ap, gen_attr_chance(G, 0.25));
  char *pp = oshape ? strstr(wa, "pads=[") : NULL;
  if (pp) { /* the item and one separator removed */
    char *e = strchr(pp, ']') + 1;
    if (*e == ',') e += 2;
    else if (pp > wa) pp -= 2;
    memmove(pp, e, strlen(e) + 1);
  }
  int len = snprintf(a, sizeof a, "group=%lld%s%s", (long long)group, wa[0] ? ", " : "", wa);
  if (any_op || gen_attr_chance(G, 0.2))
    len += snprintf(a + len, sizeof a - (size_t)len, ", output_padding=%s",
                    ints_text(b, sizeof b, sd, op_));
  if (oshape)
    snprintf(a + len, sizeof a - (size_t)len, ", output_shape=%s", ints_text(b, sizeof b, sd, os));
  double kk = (double)(c / group);
  for (int d = 0; d < sd; d++) kk *= (double)k[d];
  int y = gen_emit(G, "ConvTranspose", in[2] >= 0 ? 3 : 2, in, 1, a, DOM_ANY,
                   gen_mag(G, x) * 2 * kk + 2);
  if (gen_chance(&G->rng, 0.3)) batchnorm_after(G, y, dt, m);
  return true;
}

bool gen_b_pool(gen *G, int op) {
  bool max = !strcmp(op_name(op), "MaxPool");
  int x = pick_float(G, 3, 5, false);
  if (x < 0) return false;
  int sd = gen_rank(G, x) - 2;
  int64_t k[3], s[3], pads[6], dl[3];
  int ap = gen_attr_int(G, 0, 4);
  for (int d = 0; d < sd; d++) {
    int64_t in = gen_dim(G, x, 2 + d);
    k[d] = gen_attr_int(G, 1, 4);
    pads[d] = ap ? 0 : gen_attr_int(G, 0, 1), pads[sd + d] = ap ? 0 : gen_attr_int(G, 0, 1);
    dl[d] = (max || G->opset >= 19) && gen_attr_chance(G, 0.2) ? 2 : 1; /* AveragePool: 19 */
    while (k[d] > 1 && (k[d] - 1) * dl[d] + 1 > in + pads[d] + pads[sd + d]) k[d]--;
    if ((k[d] - 1) * dl[d] + 1 > in + pads[d] + pads[sd + d]) dl[d] = 1;
    if (pads[d] >= k[d]) pads[d] = k[d] - 1;
    if (pads[sd + d] >= k[d]) pads[sd + d] = k[d] - 1;
    s[d] = gen_attr_int(G, 1, 2);
    if (ap == 1 || ap == 2) /* SAME: a window of at most the input + 1 on each side */
      while (k[d] > 1 && (k[d] - 1) * dl[d] >= in + 1) k[d]--;
  }
  int ceil_mode = ap ? 0 : gen_attr_chance(G, 0.2);
  if (ceil_mode && sd > 0 && gen_chance(&G->rng, 0.7)) { /* make it matter in one dim: */
    int d = gen_int(&G->rng, 0, sd - 1);                 /* a last window past the end, which */
    int64_t in = gen_dim(G, x, 2 + d);                   /* starts inside the input */
    for (int t = 0; t < 8; t++) {
      int64_t kk = gen_int(&G->rng, 1, in < 4 ? (int)in : 4), ss = gen_int(&G->rng, 2, 3);
      int64_t pb = gen_int(&G->rng, 0, 1), pe = gen_int(&G->rng, 0, 1);
      if (pb >= kk) pb = kk - 1;
      if (pe >= kk) pe = kk - 1;
      int64_t span = in + pb + pe - kk;
      if (span < 0 || span % ss == 0 || (span + ss - 1) / ss * ss >= in + pb) continue;
      k[d] = kk, s[d] = ss, pads[d] = pb, pads[sd + d] = pe, dl[d] = 1;
      break;
    }
  }
  for (int d = 0; d < sd && ceil_mode; d++) { /* a last window that starts in the end padding: */
    int64_t in = gen_dim(G, x, 2 + d),
            span = in + pads[d] + pads[sd + d] - ((k[d] - 1) * dl[d] + 1);
    if ((span + s[d] - 1) / s[d] * s[d] >= in + pads[d]) ceil_mode = 0; /* ONNX and ORT disagree */
  }
  char a[256], w[224];
  window_attrs(G, w, sizeof w, sd, k, s, pads, max || G->opset >= 19 ? dl : NULL, ap, false);
  int len = snprintf(a, sizeof a, "%s, ceil_mode=%d", w, ceil_mode);
  if (!max)
    snprintf(a + len, sizeof a - (size_t)len, ", count_include_pad=%d", gen_attr_int(G, 0, 1));
  gen_emit(G, op_name(op), 1, &x, 1, a, max ? gen_v(G, x)->dom : DOM_ANY, gen_mag(G, x));
  return true;
}

bool gen_b_global_pool(gen *G, int op) {
  int x = pick_float(G, 3, 5, false);
  if (x < 0) return false;
  gen_emit(G, op_name(op), 1, &x, 1, "", DOM_ANY, gen_mag(G, x));
  return true;
}

/* Per-channel (c) or trailing-shape parameters of the normalizations. */
static int param(gen *G, kiln_dtype dt, int rank, const int64_t *dims, gen_dom dom) {
  kiln_type t = kiln_type_tensor(dt, rank, dims);
  return gen_chance(&G->rng, 0.85) ? gen_new_const(G, &t, dom) : gen_new_input(G, &t, dom);
}

bool gen_b_norm(gen *G, int op) {
  const char *name = op_name(op);
  bool chan = !strcmp(name, "BatchNormalization") || !strcmp(name, "InstanceNormalization") ||
              !strcmp(name, "GroupNormalization") || !strcmp(name, "LRN");
  int x = pick_float(G, chan ? (strcmp(name, "BatchNormalization") ? 3 : 2) : 1, 4, false);
  if (x < 0) return false;
  kiln_dtype dt = gen_dtype(G, x);
  int r = gen_rank(G, x);
  char a[128];
  a[0] = 0;
  int in[5] = {x, -1, -1, -1, -1}, n_in = 1;
  int64_t c = r >= 2 ? gen_dim(G, x, 1) : 1;
  if (chan && gen_v(G, x)->type.dims[1].value < 0) return false;
  if (!strcmp(name, "BatchNormalization")) {
    in[1] = param(G, dt, 1, &c, DOM_POS), in[2] = param(G, dt, 1, &c, DOM_ANY);
    in[3] = param(G, dt, 1, &c, DOM_ANY), in[4] = param(G, dt, 1, &c, DOM_POS), n_in = 5;
    const char *mode = bn_mode(G);
    ATTR("epsilon=%.3g%s%s", gen_attr_chance(G, 0.5) ? 1e-5 : 0.01, mode[0] ? ", " : "", mode);
  } else if (!strcmp(name, "InstanceNormalization")) {
    in[1] = param(G, dt, 1, &c, DOM_ANY), in[2] = param(G, dt, 1, &c, DOM_ANY), n_in = 3;
  } else if (!strcmp(name, "GroupNormalization")) {
    int64_t g = c;
    while (g > 1 && (c % g || gen_chance(&G->rng, 0.4))) g--;
    in[1] = param(G, dt, 1, &c, DOM_ANY), in[2] = param(G, dt, 1, &c, DOM_ANY), n_in = 3;
    ATTR("num_groups=%lld, epsilon=%s", (long long)g, gen_attr_chance(G, 0.4) ? "1e-05" : "0.001");
  } else if (!strcmp(name, "LRN")) {
    /* alpha and bias at their defaults (1e-4, 1) now and then: left out by the emit layer */
    ATTR("size=%d, alpha=%.3g, beta=%.3g, bias=%.3g", 2 * gen_attr_int(G, 0, 2) + 1,
         gen_attr_chance(G, 0.3) ? 1e-4 : 1e-4 + gen_attr_unif(G) * 0.1,
         gen_attr_chance(G, 0.5) ? 0.75 : 0.5,
         gen_attr_chance(G, 0.3) ? 1.0 : 1.0 + gen_attr_unif(G));
  } else if (!strcmp(name, "LpNormalization")) {
    ATTR("axis=%d, p=%d", gen_attr_int(G, -r, r - 1), gen_attr_int(G, 1, 2));
  } else { /* LayerNormalization, RMSNormalization: scale over dims [axis, r) */
    int axis = gen_int(&G->rng, 0, r - 1);
    int64_t pd[KILN_MAX_RANK];
    for (int d = axis; d < r; d++) {
      if (gen_v(G, x)->type.dims[d].value < 0) return false;
      pd[d - axis] = gen_dim(G, x, d);
    }
    int pr = r - axis;
    in[1] = param(G, dt, pr, pd, DOM_ANY), n_in = 2;
    if (!strcmp(name, "LayerNormalization") && gen_chance(&G->rng, 0.6))
      in[2] = param(G, dt, pr, pd, DOM_ANY), n_in = 3;
    if (axis == r - 1 && gen_attr_chance(G, 0.3)) /* axis left out: -1 */
      ATTR("epsilon=%.3g", gen_attr_chance(G, 0.5) ? 1e-5 : 1e-3);
    else
      ATTR("axis=%d, epsilon=%.3g", gen_axis_form(G, axis, r),
           gen_attr_chance(G, 0.5) ? 1e-5 : 1e-3);
  }
  /* LayerNormalization's optional outputs Mean and InvStdDev, one or both now and then (the
     graph outputs them, or a later node reads them) */
  int n_out =
      !strcmp(name, "LayerNormalization") && gen_chance(&G->rng, 0.3) ? gen_int(&G->rng, 2, 3) : 1;
  int y = gen_emit(G, name, n_in, in, n_out, a, DOM_ANY, INFINITY);
  for (int k = 1; y >= 0 && k < n_out; k++) G->vals.data[y + k].dom = k == 2 ? DOM_POS : DOM_ANY;
  return true;
}

bool gen_b_topk(gen *G, int op) {
  (void)op;
  int x = pick_float(G, 1, 4, true);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  int64_t k = gen_int(&G->rng, 1, (int)gen_dim(G, x, axis));
  int in[2] = {x, gen_const_i64(G, 1, &k, false)};
  char a[64];
  ATTR("axis=%d, largest=%d, sorted=1", gen_axis_form(G, axis, r), gen_attr_int(G, 0, 1));
  int y = gen_emit(G, "TopK", 2, in, 2, a, gen_v(G, x)->dom, gen_mag(G, x) + 8);
  if (y >= 0) G->vals.data[y + 1].dom = DOM_NONNEG; /* indices: 0 is one (never a divisor) */
  return true;
}

/* Einsum with a drawn equation: one to three operands of rank 0-3 over a few shared labels
 * (a label repeated within a term now and then: a diagonal), an ellipsis over leading batch
 * dims now and then, and the output written out (any subset of the labels in any order, the
 * empty output of a full sum) or left implicit. The first operand is an existing value when
 * one fits. */
bool gen_b_einsum(gen *G, int op) {
  (void)op;
  int x = pick_float(G, 1, 3, true);
  if (x < 0) return false;
  kiln_dtype dt = gen_dtype(G, x);
  int n_ops = gen_chance(&G->rng, 0.3) ? 1 : gen_chance(&G->rng, 0.8) ? 2 : 3;
  int64_t size[8]; /* the labels 'a'.. and their extents: x's dims first */
  int n_lab = 0, ell = gen_chance(&G->rng, 0.2) ? gen_int(&G->rng, 1, 2) : 0;
  int64_t ell_dims[2] = {gen_int(&G->rng, 1, 3), gen_int(&G->rng, 1, 2)};
  char eq[96], term[3][16];
  int len = 0, rank[3], in[3];
  int64_t dims[3][6];
  double mag = 1;
  for (int k = 0; k < n_ops; k++) {
    int tl = 0, r = k == 0 ? gen_rank(G, x) : gen_int(&G->rng, 0, 3);
    if (ell) term[k][tl++] = '.', term[k][tl++] = '.', term[k][tl++] = '.';
    rank[k] = 0; /* the batch dims of "...": the first operand has none (they broadcast) */
    for (int e = 0; e < ell && k > 0; e++) dims[k][rank[k]++] = ell_dims[e];
    for (int i = 0; i < r; i++) {
      int l;
      int64_t ext = k == 0 ? gen_dim(G, x, i) : 0;
      if (k == 0) { /* a repeat of an earlier label of the same extent, or a new one */
        for (l = 0; l < n_lab && !(size[l] == ext && gen_chance(&G->rng, 0.15)); l++) {
        }
        if (l == n_lab) size[n_lab++] = ext;
      } else {
        l = n_lab < 6 && (n_lab == 0 || gen_chance(&G->rng, 0.3)) ? n_lab
                                                                  : gen_int(&G->rng, 0, n_lab - 1);
        if (l == n_lab) size[n_lab++] = gen_int(&G->rng, 1, 4);
      }
      term[k][tl++] = (char)('a' + l);
      dims[k][rank[k]++] = size[l];
    }
    term[k][tl] = 0;
    len += snprintf(eq + len, sizeof eq - (size_t)len, "%s%s", k ? "," : "", term[k]);
  }
  in[0] = x;
  for (int k = 1; k < n_ops; k++) in[k] = new_value(G, dt, rank[k], dims[k], DOM_ANY, 0.5);
  for (int k = 0; k < n_ops; k++) mag *= k ? 2 : gen_mag(G, x);
  for (int l = 0; l < n_lab; l++) mag *= (double)size[l];
  for (int e = 0; e < ell; e++) mag *= (double)ell_dims[e];
  if (gen_chance(&G->rng, 0.7)) { /* explicit: a subset of the labels, in any order */
    int order[8], n = 0;
    for (int l = 0; l < n_lab; l++)
      if (gen_chance(&G->rng, 0.6)) order[n++] = l;
    for (int i = n - 1; i > 0; i--) {
      int j = gen_int(&G->rng, 0, i), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    len += snprintf(eq + len, sizeof eq - (size_t)len, "->%s", ell ? "..." : "");
    for (int i = 0; i < n; i++) eq[len++] = (char)('a' + order[i]);
    eq[len] = 0;
  }
  char a[128];
  gen_emit(G, "Einsum", n_ops, in, 1, ATTR("equation=\"%s\"", eq), DOM_ANY, mag);
  return true;
}

/* The activations ONNX lists for the recurrent ops, with how many of alpha, beta each reads. */
static const struct {
  const char *name;
  int n_params;
} rnn_acts[] = {{"Tanh", 0},      {"Sigmoid", 0},         {"Relu", 0},       {"Affine", 2},
                {"LeakyRelu", 1}, {"ThresholdedRelu", 1}, {"ScaledTanh", 2}, {"HardSigmoid", 2},
                {"Elu", 1},       {"Softsign", 0},        {"Softplus", 0}};

const char *gen_list_string(gen *G, const char *op, const char *name) {
  bool rnn = !strcmp(op, "RNN") || !strcmp(op, "GRU") || !strcmp(op, "LSTM");
  if (!rnn || strcmp(name, "activations")) return NULL;
  /* those without alpha or beta: a changed name never leaves a parameter unread */
  static const int plain[] = {0, 1, 2, 9, 10};
  return rnn_acts[plain[gen_attr_int(G, 0, 4)]].name;
}

/* activations (and activation_alpha/beta where one takes them) for nd directions of nact
 * functions each; appended to a. */
static void rnn_activations(gen *G, int n, int nd, char *a, size_t cap) {
  char names[256] = "", alpha[160] = "", beta[160] = "";
  size_t ln = 0, la = 0, lb = 0;
  bool params = false;
  for (int k = 0; k < n * nd; k++) {
    int i = gen_attr_chance(G, 0.5) ? gen_attr_int(G, 0, 1) : gen_attr_int(G, 0, 10);
    ln += (size_t)snprintf(names + ln, sizeof names - ln, "%s\"%s\"", k ? ", " : "",
                           rnn_acts[i].name);
    /* alpha and beta are read in order by the functions that take them */
    for (int p = 0; p < rnn_acts[i].n_params; p++) {
      double v = 0.25 * gen_attr_int(G, 1, 6);
      char *dst = p == 0 ? alpha : beta;
      size_t *len = p == 0 ? &la : &lb;
      *len += (size_t)snprintf(dst + *len, 160 - *len, "%s%g", *len ? ", " : "", v);
      params = true;
    }
  }
  size_t l = strlen(a);
  l += (size_t)snprintf(a + l, cap - l, "%sactivations=[%s]", l ? ", " : "", names);
  if (params && la && gen_attr_chance(G, 0.8))
    l += (size_t)snprintf(a + l, cap - l, ", activation_alpha=[%s]", alpha);
  if (params && lb && gen_attr_chance(G, 0.8))
    snprintf(a + l, cap - l, ", activation_beta=[%s]", beta);
}

/* RNN, GRU and LSTM: X [seq, batch, in] ([batch, seq, in] with layout=1, opset 14 on); W, R
 * (and B) constants most of the time; sequence_lens, initial_h (initial_c and the peepholes P
 * of an LSTM) present or absent; direction absent, forward, reverse or bidirectional;
 * activations absent or drawn from ONNX's list with their alpha and beta; clip;
 * linear_before_reset (GRU) and input_forget (LSTM). Outputs Y, Y_h (Y_c). */
bool gen_b_rnn(gen *G, int op) {
  const char *name = op_name(op);
  bool lstm = !strcmp(name, "LSTM"), gru = !strcmp(name, "GRU");
  int gates = lstm ? 4 : gru ? 3 : 1, nact = lstm ? 3 : gru ? 2 : 1;
  int x = pick_float(G, 3, 3, true);
  if (x < 0) return false;
  kiln_dtype dt = gen_dtype(G, x);
  bool layout1 = G->opset >= 14 && gen_attr_chance(G, 0.25);
  int64_t seq = gen_dim(G, x, layout1 ? 1 : 0), batch = gen_dim(G, x, layout1 ? 0 : 1);
  int64_t in_sz = gen_dim(G, x, 2), hid = gen_attr_int(G, 1, 5);
  if (seq < 1 || batch < 1 || in_sz < 1 || seq * batch * in_sz > 256) return false;
  int dir = gen_attr_int(G, 0, 3); /* absent, forward, reverse, bidirectional */
  int64_t nd = dir == 3 ? 2 : 1;
  static const char *const dirs[] = {"", "forward", "reverse", "bidirectional"};
  char a[768] = "";
  size_t l = (size_t)snprintf(a, sizeof a, "hidden_size=%lld", (long long)hid);
  if (dir) l += (size_t)snprintf(a + l, sizeof a - l, ", direction=\"%s\"", dirs[dir]);
  if (layout1) l += (size_t)snprintf(a + l, sizeof a - l, ", layout=1");
  else if (G->opset >= 14 && gen_attr_chance(G, 0.1))
    l += (size_t)snprintf(a + l, sizeof a - l, ", layout=0");
  if (gen_attr_chance(G, 0.2))
    l += (size_t)snprintf(a + l, sizeof a - l, ", clip=%g", 0.5 * gen_attr_int(G, 1, 6));
  if (gru && gen_attr_chance(G, 0.4))
    l += (size_t)snprintf(a + l, sizeof a - l, ", linear_before_reset=%d", gen_attr_int(G, 0, 1));
  if (lstm && gen_attr_chance(G, 0.3))
    l += (size_t)snprintf(a + l, sizeof a - l, ", input_forget=%d", gen_attr_int(G, 0, 1));
  if (gen_attr_chance(G, 0.5)) rnn_activations(G, nact, (int)nd, a, sizeof a);
  if (gen_attr_chance(G, 0.1)) { /* hidden_size absent: R's shape gives it */
    const char *rest = strchr(a, ',');
    memmove(a, rest ? rest + 2 : "", strlen(rest ? rest + 2 : "") + 1);
  }
  int64_t wd[3] = {nd, gates * hid, in_sz}, rd[3] = {nd, gates * hid, hid};
  int64_t bd[2] = {nd, 2 * gates * hid}, hd[3] = {nd, batch, hid}, pd[2] = {nd, 3 * hid};
  if (layout1) hd[0] = batch, hd[1] = nd;
  int in[8] = {x, -1, -1, -1, -1, -1, -1, -1}, n_in = 3;
  in[1] = param(G, dt, 3, wd, DOM_UNIT); /* one draw after the other: an initializer's order */
  in[2] = param(G, dt, 3, rd, DOM_UNIT); /* of evaluation is unspecified */
  if (gen_chance(&G->rng, 0.6)) in[3] = param(G, dt, 2, bd, DOM_UNIT), n_in = 4;
  if (gen_chance(&G->rng, 0.3)) { /* lengths 1..seq per batch entry */
    kiln_type lt = kiln_type_tensor(KILN_I32, 1, &batch);
    in[4] = gen_new_ranged_input(G, &lt, 1, seq), n_in = 5;
  }
  if (gen_chance(&G->rng, 0.4)) in[5] = param(G, dt, 3, hd, DOM_UNIT), n_in = 6;
  if (lstm && gen_chance(&G->rng, 0.3)) in[6] = param(G, dt, 3, hd, DOM_UNIT), n_in = 7;
  if (lstm && gen_chance(&G->rng, 0.3)) in[7] = param(G, dt, 2, pd, DOM_UNIT), n_in = 8;
  int y = gen_emit(G, name, n_in, in, lstm ? 3 : 2, a, DOM_ANY, INFINITY);
  if (y >= 0) /* Y_h and Y_c hold the last step's h, c: one of them often left unused */
    for (int k = 1; k < (lstm ? 3 : 2); k++) G->vals.data[y + k].dead = gen_chance(&G->rng, 0.3);
  return true;
}
