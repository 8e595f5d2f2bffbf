/* Pass patterns placed where the passes may rewrite them: the pattern's operand is an inner
 * value (a node's output, not a graph input: a graph input cannot take a graph output's
 * place) and, most of the time, another node reads the pattern's result (so it is not a
 * graph output either). The patterns cover the families the graph passes rewrite:
 * identity operands (0, -0, 1, -1 on either side, scalars or constants of a larger,
 * broadcasting shape), Transpose and view chains followed by an op that depends on the
 * layout, inverse Squeeze/Unsqueeze pairs, casts within and across classes, Neg forms, MatMul +
 * constant bias, Gemm + BatchNormalization, near-duplicates (one attribute or the operand order
 * differs: cse), multi-output nodes whose first output is unused (dce), Dropout with its mask,
 * constant subgraphs (constfold), Shape/Size (shapefold). */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

#define ATTR(...) (snprintf(a, sizeof a, __VA_ARGS__), a)

int gen_op_index(const char *name) {
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if (!strcmp(kiln_gen_ops[i].name, name)) return i;
  return -1;
}

/* Runs the table's builder of `name` with v as its preferred operand; the new value's
 * index, or -1 when the builder gave up. */
static int build_on(gen *G, const char *name, int v) {
  if (!gen_settle(G)) return -1;
  int k = gen_op_index(name), before = G->vals.len;
  G->prefer = v;
  bool ok = k >= 0 && kiln_gen_ops[k].build(G, k);
  G->prefer = -1;
  return ok && G->vals.len > before ? G->vals.len - 1 : -1;
}

static bool is_float(const gen *G, int v) {
  return kiln_dtype_is_float(gen_dtype(G, v));
}

/* An inner value of the set dts and rank range: an existing node output, or a cheap unary
 * op of a picked value. */
static int source(gen *G, int dts, int rmin, int rmax) {
  gen_want w = {dts, rmin, rmax, DOM_ANY, false, true, 0, false, false};
  int x = gen_pick(G, &w);
  if (x < 0 || !(gen_v(G, x)->is_input || gen_v(G, x)->is_const) || gen_chance(&G->rng, 0.15))
    return x;
  static const char *const fl[] = {"Neg", "Tanh", "Sigmoid", "Relu", "Abs", "Sin"};
  const char *op = is_float(G, x)             ? fl[gen_int(&G->rng, 0, 5)]
                   : gen_chance(&G->rng, 0.5) ? "Neg"
                                              : "Abs";
  if (gen_dtype(G, x) == KILN_BOOL) op = "Not";
  double m = gen_mag(G, x);
  int y = gen_emit(G, op, 1, &x, 1, "",
                   !strcmp(op, "Sigmoid") || !strcmp(op, "Abs") ? DOM_NONNEG : DOM_ANY,
                   !strcmp(op, "Neg") || !strcmp(op, "Relu") || !strcmp(op, "Abs") ? m : 1);
  return gen_settle(G) ? y : -1; /* the pattern needs its type */
}

/* A node reading r: an elementwise op, or one whose result depends on r's layout. */
static void consume(gen *G, int r) {
  static const char *const ops[] = {
      "Neg",       "Relu",      "Add",    "Mul",    "Transpose", "Slice",  "Gather", "Softmax",
      "ReduceSum", "ReduceMax", "MatMul", "Concat", "Flatten",   "CumSum", "Split",  "Sub"};
  if (r < 0 || gen_chance(&G->rng, 0.3)) return;
  build_on(G, ops[gen_int(&G->rng, 0, (int)(sizeof ops / sizeof ops[0]) - 1)], r);
}

/* A static type that x broadcasts to (larger: one that makes x's result larger: a leading dim
 * more or a 1 of x grown), or that broadcasts to x (the same or lower rank, 1s). Symbolic dims
 * become 1. */
static kiln_type bcast_type(gen *G, int x, bool larger) {
  kiln_type t = gen_v(G, x)->type;
  for (int d = 0; d < t.rank; d++)
    if (t.dims[d].value < 0 || (!larger && gen_chance(&G->rng, 0.3)))
      t.dims[d].value = 1, t.dims[d].sym = NULL;
  bool has_one = false; /* a static 1 of x: growing it is the harder case (a dim, not a rank) */
  for (int d = 0; d < t.rank; d++) has_one = has_one || gen_v(G, x)->type.dims[d].value == 1;
  if (larger && t.rank < 4 && gen_chance(&G->rng, has_one ? 0.25 : 0.6)) {
    memmove(t.dims + 1, t.dims, sizeof t.dims[0] * (size_t)t.rank);
    t.rank++, t.dims[0].value = gen_int(&G->rng, 2, 3), t.dims[0].sym = NULL;
  } else if (larger) { /* a static 1 of x grown (a symbolic dim may be bound to anything) */
    bool grown = false;
    for (int d = 0; d < t.rank; d++)
      if (gen_v(G, x)->type.dims[d].value == 1 && gen_chance(&G->rng, 0.7))
        t.dims[d].value = gen_int(&G->rng, 2, 3), grown = true;
    if (!grown && t.rank < 6) { /* none to grow: a leading dim more, so x does broadcast */
      memmove(t.dims + 1, t.dims, sizeof t.dims[0] * (size_t)t.rank);
      t.rank++, t.dims[0].value = gen_int(&G->rng, 2, 3), t.dims[0].sym = NULL;
    }
  } else if (gen_chance(&G->rng, 0.4)) {
    int drop = gen_int(&G->rng, 0, t.rank);
    memmove(t.dims, t.dims + drop, sizeof t.dims[0] * (size_t)(t.rank - drop));
    t.rank -= drop;
  }
  return t;
}

/* x op c, c op x with c all 0, -0, 1, -1 or 2 (identities, Neg forms, near-identities; c / x
 * of an x away from 0, which is no identity for any c).
 * A float x is often first multiplied by a mask of 0, -0, 1 and -1, so that it holds zeros of
 * both signs: an identity that holds for every number may not for -0 (x + 0 is +0). */
static int p_identity(gen *G) {
  int x = source(G, DT_FLOAT | DT_INT, 0, 4);
  if (x < 0) return -1;
  bool masked = is_float(G, x) && gen_chance(&G->rng, 0.4);
  if (masked) {
    static const double mask[] = {0, -0.0, 1, -1};
    kiln_type mt = bcast_type(G, x, false);
    int in[2] = {x, gen_const_pick(G, &mt, 4, mask)};
    x = gen_emit(G, "Mul", 2, in, 1, "", DOM_ANY, gen_mag(G, x));
    if (!gen_settle(G)) return -1;
  }
  static const char *const ops[] = {"Add", "Sub", "Mul", "Div"};
  static const double vals[] = {0, -0.0, 1, -1, 2, 1};
  /* with signed zeros in x, mostly the identities whose zeros' signs differ: x + 0, 0 - x */
  const char *op = masked && gen_chance(&G->rng, 0.7) ? ops[gen_int(&G->rng, 0, 1)]
                                                      : ops[gen_int(&G->rng, 0, 3)];
  double c = masked && gen_chance(&G->rng, 0.7) ? vals[gen_int(&G->rng, 0, 1)]
                                                : vals[gen_int(&G->rng, 0, 5)];
  if (!strcmp(op, "Div") && c == 0) c = 1;
  bool c_first = gen_chance(&G->rng, 0.5);
  if (c_first && !strcmp(op, "Div")) { /* c / x: x away from 0 (Exp of it), float only */
    gen_dom d = is_float(G, x) ? gen_v(G, x)->dom : DOM_ANY;
    if (is_float(G, x) && d != DOM_POS && d != DOM_GE1 && d != DOM_NONZERO)
      x = build_on(G, "Exp", x);
    if (x < 0 || !is_float(G, x) || !gen_settle(G)) return -1;
  }
  /* a constant that grows the result two times in three: each rewrite of an identity must
   * check that dropping the constant keeps the shape */
  kiln_type t = bcast_type(G, x, gen_chance(&G->rng, 0.65));
  int k = gen_const_fill(G, &t, c);
  int in[2] = {c_first ? k : x, c_first ? x : k};
  int y = gen_emit(G, op, 2, in, 1, "", DOM_ANY, 2 * gen_mag(G, x) + 2);
  if (masked && y >= 0) G->vals.data[y].keep = true; /* its zeros are seen */
  return y;
}

/* Two or three Transposes (rank 2..4), sometimes a view between them. */
static int p_transposes(gen *G) {
  int x = source(G, DT_ALL, gen_chance(&G->rng, 0.8) ? 3 : 2, 4);
  int n = gen_int(&G->rng, 2, 3);
  for (int i = 0; i < n && x >= 0; i++)
    x = build_on(G, i == 1 && gen_chance(&G->rng, 0.1) ? "Unsqueeze" : "Transpose", x);
  return x;
}

/* Views: a Reshape to the same rank with other dims (or another view), then more views. */
static int p_views(gen *G) {
  int x = source(G, DT_ALL, 1, 4);
  if (x < 0) return -1;
  int r = gen_rank(G, x);
  if (r >= 2 && gen_is_static(G, x) && gen_chance(&G->rng, 0.6)) {
    int64_t s[KILN_MAX_RANK];
    for (int d = 0; d < r; d++) s[d] = gen_dim(G, x, r - 1 - d); /* reversed dims */
    int in[2] = {x, gen_const_i64(G, r, s, false)};
    x = gen_emit(G, "Reshape", 2, in, 1, "", gen_v(G, x)->dom, gen_mag(G, x));
  }
  static const char *const views[] = {"Reshape", "Flatten", "Unsqueeze", "Squeeze", "Reshape"};
  int n = gen_int(&G->rng, 1, 2);
  for (int i = 0; i < n && x >= 0; i++) {
    int y = build_on(G, views[gen_int(&G->rng, 0, 4)], x);
    if (y >= 0) x = y;
  }
  return x;
}

/* Squeeze or Unsqueeze of x over the n axes ax of rank r, each in either form (d or d - r). */
static int axes_op(gen *G, const char *op, int x, int n, const int64_t *ax, int r) {
  int64_t w[KILN_MAX_RANK];
  for (int i = 0; i < n; i++) w[i] = ax[i] - (gen_chance(&G->rng, 0.4) ? r : 0);
  return gen_emit_axes(G, op, x, n, w);
}

/* Inverse view pairs (simplify): Unsqueeze then Squeeze of the same axes, or Squeeze of unit
 * dims then Unsqueeze of the same, each axis list written in either form (normalized over
 * the larger rank); now and then the second axis differs, or the second op takes one of two
 * axes only (no inverse: nothing to fold, or a part). */
static int p_view_pairs(gen *G) {
  int x = source(G, DT_ALL, 0, 4);
  if (x < 0) return -1;
  int r = gen_rank(G, x);
  int64_t ax[2];
  int n = 0;
  bool sq_first = false;
  for (int d = 0; d < r && n < 2; d++)
    if (gen_v(G, x)->type.dims[d].value == 1 && gen_chance(&G->rng, 0.6)) ax[n++] = d;
  if (n > 0 && gen_chance(&G->rng, 0.6)) sq_first = true; /* x's unit dims, then back */
  else {
    n = r < 4 && gen_chance(&G->rng, 0.4) ? 2 : 1;
    ax[0] = gen_int(&G->rng, 0, r + n - 1);
    if (n == 2) ax[1] = ax[0] + gen_int(&G->rng, 1, r + 1 - ax[0]); /* ascending, < r + 2 */
  }
  int big = sq_first ? r : r + n; /* the rank the axes refer to */
  int y = axes_op(G, sq_first ? "Squeeze" : "Unsqueeze", x, n, ax, big);
  if (!gen_settle(G)) return -1;
  int64_t bx[2] = {ax[0], n > 1 ? ax[1] : 0};
  if (n == 1 && gen_chance(&G->rng, 0.15)) { /* a different axis: not an inverse */
    int64_t other = gen_int(&G->rng, 0, big - 1);
    if (sq_first || gen_v(G, y)->type.dims[other].value == 1) bx[0] = other;
  }
  if (n == 2 && gen_chance(&G->rng, 0.25)) { /* one of the two axes only: half an inverse */
    bx[0] = ax[gen_int(&G->rng, 0, 1)];
    int out = sq_first ? r - 1 : r + 2; /* the rank the second op's axes refer to */
    if (!sq_first || bx[0] < out)
      return axes_op(G, sq_first ? "Unsqueeze" : "Squeeze", y, 1, bx, out);
  }
  return axes_op(G, sq_first ? "Unsqueeze" : "Squeeze", y, n, bx, big);
}

/* Casts: within a class (f32 -> f16 -> f32, i32 -> i64), across, or to the same dtype. */
static int p_casts(gen *G) {
  int x = source(G, DT_FLOAT | DT_INT, 0, 4);
  if (x < 0) return -1;
  int n = gen_int(&G->rng, 1, 2);
  for (int i = 0; i < n; i++) {
    kiln_dtype from = gen_dtype(G, x),
               to = gen_pick_dt(G, kiln_dtype_is_float(from) ? DT_FLOAT : DT_INT);
    if (gen_chance(&G->rng, 0.2)) to = from;
    if (gen_chance(&G->rng, 0.15)) to = gen_pick_dt(G, DT_NUM);
    if (kiln_dtype_is_float(from) && kiln_dtype_is_int(to) && gen_mag(G, x) > 100) to = from;
    char a[16];
    x = gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d", (int)to), DOM_ANY, gen_mag(G, x) + 1);
  }
  return x;
}

/* Neg(Neg(x)), a + Neg(b), a - Neg(b), Neg(b) + a. */
static int p_neg(gen *G) {
  int x = source(G, DT_FLOAT | DT_INT, 0, 4);
  if (x < 0) return -1;
  int nx = gen_emit(G, "Neg", 1, &x, 1, "", DOM_ANY, gen_mag(G, x));
  int form = gen_int(&G->rng, 0, 3);
  if (form == 0) return gen_emit(G, "Neg", 1, &nx, 1, "", gen_v(G, x)->dom, gen_mag(G, x));
  int b = gen_pick_bcast(G, x, DOM_ANY, gen_dtype(G, x));
  int in[2] = {form == 3 ? nx : b, form == 3 ? b : nx};
  return gen_emit(G, form == 2 ? "Sub" : "Add", 2, in, 1, "", DOM_ANY,
                  gen_mag(G, x) + gen_mag(G, b));
}

/* Rows M with remainders of the 8-row register tile, N with remainders of 16/32 columns. */
static int64_t rows(gen *G) {
  static const int64_t m[] = {1, 2, 3, 7, 9, 17, 25, 33};
  return gen_chance(&G->rng, 0.5) ? m[gen_int(&G->rng, 0, 7)] : gen_int(&G->rng, 1, 40);
}
static int64_t cols(gen *G) {
  static const int64_t n[] = {1, 5, 8, 15, 17, 24, 31, 33, 40};
  return gen_chance(&G->rng, 0.5) ? n[gen_int(&G->rng, 0, 8)] : gen_int(&G->rng, 1, 48);
}

/* A 2-D inner float value [M, K]: an existing one or Relu of a new input. */
static int matrix(gen *G, int64_t *m, int64_t *k) {
  int x = source(G, DT_FLOAT, 2, 2);
  if (x >= 0 && gen_chance(&G->rng, 0.6)) {
    *m = gen_dim(G, x, 0), *k = gen_dim(G, x, 1);
    return x;
  }
  int64_t d[2] = {rows(G), gen_int(&G->rng, 1, 24)};
  kiln_type t = gen_tensor_type(gen_pick_dt(G, DT_FLOAT), 2, d);
  int in = gen_new_input(G, &t, DOM_ANY);
  *m = d[0], *k = d[1];
  int y = gen_emit(G, gen_chance(&G->rng, 0.5) ? "Relu" : "Tanh", 1, &in, 1, "", DOM_ANY, 2);
  return gen_settle(G) ? y : -1;
}

/* MatMul(A, constant B) + constant bias, the bias on either side, in each form that broadcasts:
 * [N], [1, N], [M, N], a scalar, [P, N] over a result of one row or [P, 1, N] (the sum grows
 * to P rows or a third dim, which a Gemm's C may not do). */
static int p_matmul_bias(gen *G) {
  int64_t m, k, n = cols(G);
  int form = gen_int(&G->rng, 0, 6), rank = 1;
  int a = -1;
  if (form == 4 && gen_chance(&G->rng, 0.5)) { /* a result of one row, which [P, N] grows */
    int64_t d[2] = {1, gen_int(&G->rng, 1, 24)};
    kiln_type t = gen_tensor_type(gen_pick_dt(G, DT_FLOAT), 2, d);
    int in = gen_new_input(G, &t, DOM_ANY);
    m = 1, k = d[1];
    a = gen_emit(G, "Relu", 1, &in, 1, "", DOM_ANY, 2);
    if (!gen_settle(G)) return -1;
  } else a = matrix(G, &m, &k);
  if (a < 0) return -1;
  kiln_dtype dt = gen_dtype(G, a);
  int64_t bd[2] = {k, n}, cd[2] = {1, n};
  kiln_type bt = kiln_type_tensor(dt, 2, bd);
  int in[2] = {a, gen_chance(&G->rng, 0.8) ? gen_new_const(G, &bt, DOM_ANY)
                                           : gen_new_input(G, &bt, DOM_ANY)};
  int y = gen_emit(G, "MatMul", 2, in, 1, "", DOM_ANY, gen_mag(G, a) * 2 * (double)k);
  int64_t c3[3] = {gen_int(&G->rng, 2, 3), 1, n};
  if (form == 1) rank = 2;                                                      /* [1, N] */
  else if (form == 2 && gen_is_static(G, a)) rank = 2, cd[0] = m;               /* [M, N] */
  else if (form == 3) rank = 0;                                                 /* a scalar */
  else if (form == 4 && m == 1 && gen_is_static(G, a)) rank = 2, cd[0] = c3[0]; /* grows the rows */
  else if (form == 4) rank = 3; /* [P, 1, N]: grows the rank */
  kiln_type ct = kiln_type_tensor(dt, rank, rank == 3 ? c3 : rank == 2 ? cd : cd + 1);
  int c =
      gen_chance(&G->rng, 0.85) ? gen_new_const(G, &ct, DOM_ANY) : gen_new_input(G, &ct, DOM_ANY);
  int add[2] = {gen_chance(&G->rng, 0.7) ? y : c, 0};
  add[1] = add[0] == y ? c : y;
  return gen_emit(G, "Add", 2, add, 1, "", DOM_ANY, gen_mag(G, y) + 2);
}

/* Gemm (B constant or not, transB, sometimes C, constant or not, alpha, beta) +
 * BatchNormalization over N. */
static int p_gemm_bn(gen *G) {
  int64_t m, k, n = cols(G);
  int a = matrix(G, &m, &k);
  if (a < 0) return -1;
  kiln_dtype dt = gen_dtype(G, a);
  bool tb = gen_chance(&G->rng, 0.5);
  int64_t bd[2] = {tb ? n : k, tb ? k : n};
  kiln_type bt = kiln_type_tensor(dt, 2, bd), ct = kiln_type_tensor(dt, 1, &n);
  kiln_type cc = gen_gemm_c_type(G, dt, m, n, gen_is_static(G, a)); /* C: any form */
  /* B and C constants mostly; now and then a graph input, which bnfold must leave alone (B)
   * or keep as a term of its own (C) */
  int in[3] = {a,
               gen_chance(&G->rng, 0.85) ? gen_new_const(G, &bt, DOM_ANY)
                                         : gen_new_input(G, &bt, DOM_ANY),
               !gen_chance(&G->rng, 0.6)  ? -1
               : gen_chance(&G->rng, 0.7) ? gen_new_const(G, &cc, DOM_ANY)
                                          : gen_new_input(G, &cc, DOM_ANY)};
  char at[96];
  snprintf(at, sizeof at, "alpha=%.3g, beta=%.3g, transB=%d", gen_chance(&G->rng, 0.5) ? 1.0 : 0.75,
           gen_chance(&G->rng, 0.5) ? 1.0 : 0.5, tb);
  int y = gen_emit(G, "Gemm", in[2] >= 0 ? 3 : 2, in, 1, at, DOM_ANY,
                   gen_mag(G, in[0]) * 2 * (double)k + 2);
  int bn[5] = {y, gen_new_const(G, &ct, DOM_POS), gen_new_const(G, &ct, DOM_ANY),
               gen_new_const(G, &ct, DOM_ANY), gen_new_const(G, &ct, DOM_POS)};
  return gen_emit(G, "BatchNormalization", 5, bn, 1, "epsilon=0.001", DOM_ANY, INFINITY);
}

/* cse: a node on an inner value and its copy (exact, written differently, one attribute of any
 * kind changed, or two operands swapped), combined by a Sub or an Add so that a wrong merge or
 * a missed one changes the result. The node is one of a list of ops with attributes. */
/* Two Splits of x along one axis into different numbers of equal parts (each count divides
 * the extent; at opset 18 written as num_outputs): equal in op, operands and (before opset 18)
 * attributes, apart in their output counts. Each Split's first and last parts meet in a Sub,
 * a graph output; returns the first of those. */
static int split_counts(gen *G, int x) {
  int r = gen_rank(G, x);
  if (r < 1) return -1;
  int axis = gen_int(&G->rng, 0, r - 1);
  int64_t d = gen_dim(G, x, axis), div[8];
  int nd = 0;
  for (int64_t c = 1; c <= d && c <= 6 && nd < 8; c++)
    if (d % c == 0 && gen_v(G, x)->type.dims[axis].value == d) div[nd++] = c;
  if (nd < 2) return -1;
  int i = gen_int(&G->rng, 0, nd - 1), j = gen_int(&G->rng, 0, nd - 2);
  int64_t counts[2] = {div[i], div[j >= i ? j + 1 : j]};
  int first = -1;
  for (int k = 0; k < 2; k++) {
    char a[64];
    int len = snprintf(a, sizeof a, "axis=%d", gen_chance(&G->rng, 0.3) ? axis - r : axis);
    if (G->opset >= 18)
      snprintf(a + len, sizeof a - (size_t)len, ", num_outputs=%lld", (long long)counts[k]);
    int y = gen_emit(G, "Split", 1, &x, (int)counts[k], a, gen_v(G, x)->dom, gen_mag(G, x));
    if (y < 0) return -1;
    /* its first and last parts read by a node (a graph output that is a part would keep cse
     * from merging the Splits at all) */
    int in[2] = {y, y + (int)counts[k] - 1};
    int z = gen_emit(G, counts[k] > 1 ? "Sub" : "Neg", counts[k] > 1 ? 2 : 1, in, 1, "", DOM_ANY,
                     2 * gen_mag(G, x));
    G->vals.data[z].keep = true;
    if (first < 0) first = z;
  }
  return gen_settle(G) ? first : -1;
}

static int p_near_duplicates(gen *G) {
  static const char *const ops[] = {"LeakyRelu",
                                    "Elu",
                                    "HardSigmoid",
                                    "Softmax",
                                    "ReduceSum",
                                    "Transpose",
                                    "Gather",
                                    "Cast",
                                    "Clip",
                                    "Conv",
                                    "MaxPool",
                                    "Pad",
                                    "CumSum",
                                    "ArgMax",
                                    "Concat",
                                    "Flatten",
                                    "Gemm",
                                    "Trilu",
                                    "Shrink",
                                    "Celu",
                                    "Selu",
                                    "LpNormalization",
                                    "DepthToSpace",
                                    "Sub",
                                    "ConstantOfShape",
                                    "Split",
                                    "TopK",
                                    "Einsum"};
  int x = source(G, DT_FLOAT, 0, 4);
  if (x < 0) return -1;
  const char *op = ops[gen_int(&G->rng, 0, (int)(sizeof ops / sizeof ops[0]) - 1)];
  int y0;
  if (!strcmp(op, "ConstantOfShape")) { /* of x's Shape: constfold leaves it to cse */
    int s = gen_emit(G, "Shape", 1, &x, 1, "", DOM_POS, 64);
    kiln_dtype dt = gen_pick_dt(G, DT_NUM);
    char a[64];
    y0 = gen_emit(G, op, 1, &s, 1,
                  ATTR("value=%s[1] [%d]", kiln_dtype_name(dt), gen_int(&G->rng, -3, 3)), DOM_ANY,
                  4);
  } else if (!strcmp(op, "Split") && gen_chance(&G->rng, 0.4)) {
    return split_counts(G, x); /* the same input into two numbers of parts */
  } else y0 = build_on(G, op, x);
  if (y0 < 0 || !gen_settle(G)) return -1;
  int y1 = gen_copy_last_node(G, gen_attr_int(G, 0, 4));
  if (y1 < 0 || !gen_settle(G)) return -1;
  /* a node of several outputs: any output of the copy against any of the original (a merge
   * that maps every output to output 0 shows where they differ) */
  int n_out = 1;
  const char *cl = G->lines.data[G->lines.len - 1];
  for (const char *p = cl; p < strstr(cl, " = "); p++) n_out += *p == ',';
  if (n_out > 1) {
    int k1 = gen_int(&G->rng, 0, n_out - 1), k0 = gen_int(&G->rng, 0, n_out - 1);
    y0 += k0, y1 += k1;
  }
  if (!kiln_type_equal(&gen_v(G, y0)->type, &gen_v(G, y1)->type) || gen_chance(&G->rng, 0.3)) {
    G->vals.data[y0].keep = G->vals.data[y1].keep = true;
    return -1;
  }
  int y[2] = {y0, y1};
  double m = gen_mag(G, y0) + gen_mag(G, y1);
  return gen_emit(G, gen_chance(&G->rng, 0.7) ? "Sub" : "Add", 2, y, 1, "", DOM_ANY, m);
}

/* Sub(a, b) and Sub(b, a), or Softmax over two axes, or ReduceSum with two keepdims: nodes
 * that differ in operand order or an integer attribute, both graph outputs. */
static int p_order_duplicates(gen *G) {
  int x = source(G, DT_FLOAT, 1, 4);
  if (x < 0) return -1;
  int y[2], r = gen_rank(G, x), kind = gen_int(&G->rng, 0, 2);
  char a[48];
  if (kind == 0) {
    int b = gen_pick_bcast(G, x, DOM_ANY, gen_dtype(G, x)), in[2] = {x, b}, ni[2] = {b, x};
    y[0] = gen_emit(G, "Sub", 2, in, 1, "", DOM_ANY, gen_mag(G, x) + gen_mag(G, b));
    y[1] = gen_emit(G, "Sub", 2, ni, 1, "", DOM_ANY, gen_mag(G, x) + gen_mag(G, b));
  } else if (kind == 1 && r >= 2) {
    int ax = gen_int(&G->rng, 0, r - 2);
    y[0] = gen_emit(G, "Softmax", 1, &x, 1, ATTR("axis=%d", ax), DOM_NONNEG, 1);
    y[1] = gen_emit(G, "Softmax", 1, &x, 1, ATTR("axis=%d", ax + 1), DOM_NONNEG, 1);
  } else {
    int64_t axis = gen_int(&G->rng, 0, r - 1);
    double mag = gen_mag(G, x) * (double)gen_dim(G, x, (int)axis);
    int in[2] = {x, gen_const_i64(G, 1, &axis, false)};
    y[0] = gen_emit(G, "ReduceSum", 2, in, 1, "keepdims=1", DOM_ANY, mag);
    in[1] = gen_const_i64(G, 1, &axis, false); /* an equal constant of its own: cse merges both */
    y[1] = gen_emit(G, "ReduceSum", 2, in, 1, "keepdims=0", DOM_ANY, mag);
  }
  G->vals.data[y[0]].keep = G->vals.data[y[1]].keep = true;
  return gen_chance(&G->rng, 0.5) ? y[0] : -1;
}

/* Split, TopK or Dropout whose first output is unused and a later one read. */
static int p_first_unused(gen *G) {
  int x = source(G, DT_FLOAT, 1, 4);
  if (x < 0) return -1;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1), kind = gen_int(&G->rng, 0, 2), y;
  int64_t d = gen_dim(G, x, axis);
  char a[48];
  if (kind == 0 && gen_v(G, x)->type.dims[axis].value >= 2) {
    int64_t parts[2] = {gen_int(&G->rng, 1, (int)d - 1), 0};
    parts[1] = d - parts[0];
    int in[2] = {x, gen_const_i64(G, 2, parts, false)};
    y = gen_emit(G, "Split", 2, in, 2, ATTR("axis=%d", axis), gen_v(G, x)->dom, gen_mag(G, x));
  } else if (kind == 1 && gen_v(G, x)->type.dims[axis].value >= 1) {
    int64_t k = gen_int(&G->rng, 1, (int)d);
    int in[2] = {x, gen_const_i64(G, 1, &k, false)};
    y = gen_emit(G, "TopK", 2, in, 2, ATTR("axis=%d, largest=%d", axis, gen_int(&G->rng, 0, 1)),
                 gen_v(G, x)->dom, gen_mag(G, x) + 8);
  } else {
    y = gen_emit(G, "Dropout", 1, &x, 2, "", gen_v(G, x)->dom, gen_mag(G, x));
    if (gen_chance(&G->rng, 0.5)) { /* the mask used with the data: Where(mask, y, -y) */
      int ny = gen_emit(G, "Neg", 1, &y, 1, "", DOM_ANY, gen_mag(G, x)), in[3] = {y + 1, y, ny};
      return gen_emit(G, "Where", 3, in, 1, "", DOM_ANY, gen_mag(G, x));
    }
  }
  G->vals.data[y].dead = true;
  G->vals.data[y + 1].keep = true;
  return kind == 2 ? -1 : y + 1;
}

/* c1 op c2 of two different constants, then combined with an inner value (constfold). */
static int p_const_fold(gen *G) {
  int x = source(G, DT_FLOAT | DT_INT, 0, 4);
  if (x < 0) return -1;
  kiln_type t = bcast_type(G, x, false);
  int c1 = gen_new_const(G, &t, DOM_ANY), c2 = gen_new_const(G, &t, DOM_NONZERO);
  static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max"};
  const char *op = ops[gen_int(&G->rng, 0, 4)];
  int in[2] = {c1, c2};
  int c = gen_emit(G, op, 2, in, 1, "", DOM_ANY, !strcmp(op, "Div") ? 4 : 4 + 2);
  int xin[2] = {x, c};
  return gen_emit(G, gen_chance(&G->rng, 0.5) ? "Add" : "Mul", 2, xin, 1, "", DOM_ANY,
                  gen_mag(G, x) * 6 + 6);
}

/* Shape(x) with start (and end) or Size(x), cast to a float and used in arithmetic; x now
 * and then of unknown extents (a NonZero's result: the shape folds in part); the shape now
 * and then sliced, forwards or backwards, its bounds past either end (shapefold folds a Slice
 * of the known part), now and then empty (a start past the end the step walks away from). */
static int p_shape(gen *G) {
  gen_want w = {DT_ALL, 1, 4, DOM_ANY, false, false, 0, false, true};
  int x = gen_chance(&G->rng, 0.3) ? gen_pick(G, &w) : source(G, DT_ALL, 1, 4);
  bool part = false;                        /* x's shape known in part */
  if (x >= 0 && gen_chance(&G->rng, 0.3)) { /* NonZero: [rank, ?], or a reader of it */
    int before = G->vals.len, nz = build_on(G, "NonZero", x);
    if (nz >= 0 && gen_chance(&G->rng, 0.6))
      while (nz > before && !(G->vals.data[before].dyn && gen_rank(G, before) == 2)) before++;
    if (nz >= 0 && gen_settle(G)) x = gen_chance(&G->rng, 0.6) ? before : nz, part = true;
  }
  if (x < 0) return -1;
  int r = gen_rank(G, x), s;
  char a[48] = "";
  if (gen_chance(&G->rng, part ? 0.3 : 0.4)) /* of a known shape or of one known in part */
    s = gen_emit(G, "Size", 1, &x, 1, "", DOM_POS, 4096);
  else {
    int len = r; /* entries of the shape */
    if (G->opset >= 15 && r >= 2 && gen_chance(&G->rng, part ? 0.4 : 0.6)) {
      int st = gen_int(&G->rng, 1, r - 1), en = r;
      if (gen_chance(&G->rng, 0.3)) ATTR("start=%d, end=%d", st, en = gen_int(&G->rng, st + 1, r));
      else ATTR("start=%d", gen_chance(&G->rng, 0.3) ? st - r : st);
      len = en - st;
    }
    s = gen_emit(G, "Shape", 1, &x, 1, a, DOM_POS, 64);
    if (len >= 1 && gen_chance(&G->rng, 0.3)) { /* entries gathered, counted from either end */
      int64_t k = gen_int(&G->rng, 0, len - 1), idx[4], d[1] = {gen_int(&G->rng, 1, 3)};
      for (int i = 0; i < d[0]; i++)
        idx[i] = gen_chance(&G->rng, 0.5) ? k - len : k, k = gen_int(&G->rng, 0, len - 1);
      bool scalar = gen_chance(&G->rng, 0.4);
      int in[2] = {s, gen_const_i64(G, scalar ? 1 : (int)d[0], idx, scalar)};
      s = gen_emit(G, "Gather", 2, in, 1, "axis=0", DOM_POS, 64);
    } else if (!a[0] && gen_chance(&G->rng, part ? 0.8 : 0.4)) { /* a slice of the r entries */
      int64_t stp = gen_chance(&G->rng, 0.5) ? -1 : gen_chance(&G->rng, 0.5) ? 1 : -2, b, e;
      b = gen_int(&G->rng, 0, r - 1);
      e = stp > 0 ? gen_int(&G->rng, (int)b + 1, r) : gen_int(&G->rng, -1, (int)b - 1);
      int64_t st = gen_slice_bound(G, b, r), en = gen_slice_bound(G, e, r), ax = 0;
      if (gen_chance(&G->rng, 0.3)) { /* empty: starts past the end it walks away from */
        st = stp > 0 ? gen_int(&G->rng, r, r + 3) : gen_int(&G->rng, -r - 4, -r - 1);
        en = gen_int(&G->rng, -r - 4, r + 3);
      }
      int in[5] = {s, gen_const_i64(G, 1, &st, false), gen_const_i64(G, 1, &en, false),
                   gen_const_i64(G, 1, &ax, false), gen_const_i64(G, 1, &stp, false)};
      s = gen_emit(G, "Slice", 5, in, 1, "", DOM_POS, 64);
    }
  }
  kiln_dtype to = gen_pick_dt(G, DT_FLOAT);
  int f = gen_emit(G, "Cast", 1, &s, 1, ATTR("to=%d", (int)to), DOM_POS, 4096);
  G->vals.data[f].keep = true;
  return f;
}

typedef int (*pattern_fn)(gen *G);
static const struct {
  pattern_fn fn;
  int weight;
} patterns[] = {
    {p_identity, 4},        {p_transposes, 3},
    {p_views, 3},           {p_view_pairs, 2},
    {p_casts, 3},           {p_neg, 2},
    {p_matmul_bias, 2},     {p_gemm_bn, 3},
    {p_near_duplicates, 3}, {p_order_duplicates, 2},
    {p_first_unused, 2},    {p_const_fold, 2},
    {p_shape, 3},
};

bool gen_b_pattern(gen *G, int op) {
  (void)op;
  int total = 0, n = (int)(sizeof patterns / sizeof patterns[0]);
  for (int i = 0; i < n; i++) total += patterns[i].weight;
  int x = gen_int(&G->rng, 0, total - 1), i = 0;
  while ((x -= patterns[i].weight) >= 0) i++;
  int before = G->vals.len;
  int r = patterns[i].fn(G);
  if (G->vals.len == before) return false;
  consume(G, r);
  return true;
}
