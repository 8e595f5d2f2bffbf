/* Pass simplify: algebraic identities and canonical forms that keep the exact result,
 * its dtype and its shape.
 *
 *   x*1, 1*x, x/1, x-(+0), x+(-0), -0+x -> x  only when the constant does not broadcast x
 *                                      to a larger shape. For floats, x + (+0.0) is not x
 *                                      (it turns -0 into +0), so only -0.0 is the identity
 *                                      of Add, and only +0.0 that of Sub (as LLVM does
 *                                      without no-signed-zeros).
 *   Transpose(Transpose(x, p), q)       -> Transpose(x, p∘q), or x when that is the identity
 *   Transpose(x, identity perm)         -> x
 *   Reshape(view(x), s)                 -> Reshape(x, s) when s is a constant without 0
 *                                          (view: Reshape, Flatten, Squeeze, Unsqueeze)
 *   view(x) with the same static type as x -> x
 *   Squeeze(Unsqueeze(x, a), a), Unsqueeze(Squeeze(x, a), a) -> x
 *   Cast(x, to=dtype(x)), CastLike of the same dtype -> x
 *   MatMul(A, B) + bias                 -> Gemm(A, B, bias) for 2-D A and B and a constant
 *                                          bias of shape [N] or [1,N] (floating types)
 *   Neg(Neg(x)) -> x;  x + Neg(y), Neg(y) + x -> x - y;  x - Neg(y) -> x + y;
 *   (-0.0 or integer 0) - x -> Neg(x);  x * -1 -> Neg(x)
 *
 * Sweeps repeat (at most MAX_ROUNDS) until nothing changes. */
#include <string.h>

#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

enum { MAX_ROUNDS = 4 };

/* ---- helpers ---- */
/* True for KILN_OK; frees an error (a malformed attribute just disables a rewrite). */
static bool good(kiln_status st) {
  kiln_status_free(st);
  return st == KILN_OK;
}

static const kiln_type *ttype(const kiln_graph *g, int v) {
  if (v < 0) return NULL;
  const kiln_type *t = &g->values.data[v].type;
  return t->kind == KILN_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

/* Replaces output 0 of node i by value v and drops the node when unused. */
static bool forward(kiln_rw *rw, int i, int v) {
  if (!kiln_rw_replace(rw, rw->g->nodes.data[i].outputs[0], v)) return false;
  if (kiln_rw_node_unused(rw, i)) kiln_rw_kill_node(rw, i);
  return true;
}

/* Node producing v with op `op` (or -1). */
static int producer_op(const kiln_graph *g, int v, kiln_op op) {
  int p = kiln_rw_producer(g, v);
  return p >= 0 && g->nodes.data[p].op == op ? p : -1;
}

/* True if constant c broadcast against x leaves x's shape unchanged. */
static bool no_broadcast_growth(const kiln_tensor *c, const kiln_type *x) {
  if (KILN_MUTANT(2)) return true; /* mutant 2: a broadcasting identity constant is dropped */
  if (!x || (c->rank > x->rank && !KILN_MUTANT(201))) return false;
  for (int i = 0; i < c->rank && i < x->rank; i++) { /* mutant 201: c's extra leading dims */
    int64_t cd = c->dims[c->rank - 1 - i], xd = x->dims[x->rank - 1 - i].value;
    if (cd != 1 && cd != xd && !(KILN_MUTANT(354) && xd == 1)) /* mutant 354: x's 1 grows */
      return false;
  }
  return true;
}

/* Replaces output 0 of node i by a new node op(inputs) of the same type. */
static kiln_status rebuild_as(kiln_rw *rw, int i, const char *op, int n_in, const int *in,
                              bool *done) {
  kiln_graph *g = rw->g;
  int out = g->nodes.data[i].outputs[0], n, v;
  *done = false;
  if (rw->pinned[out]) return KILN_OK;
  KILN_TRY(
      kiln_rw_add_node(rw, op, g->nodes.data[i].opset, n_in, in, g->values.data[out].type, &n, &v));
  bool was_output = rw->is_output[out];
  *done = kiln_rw_replace(rw, out, v);
  if (*done && !was_output) kiln_rw_swap_names(rw, out, v);
  if (*done) kiln_rw_kill_node(rw, i);
  return KILN_OK;
}

/* ---- x op identity ---- */
static bool is_identity_const(kiln_op op, const kiln_tensor *c, bool c_first) {
  bool fl = kiln_dtype_is_float(c->dtype);
  if (!fl && !kiln_dtype_is_int(c->dtype)) return false;
  switch (op) {
  case KILN_OP_Mul: return kiln_rw_const_all(c, 1);
  case KILN_OP_Div: /* mutant 300: 1 / x taken for x (the constant's side not checked) */
    return (!c_first || KILN_MUTANT(300)) && kiln_rw_const_all(c, 1);
  case KILN_OP_Add: /* mutant 59: x + (+0.0) taken for x (turns +0 results into -0) */
    return kiln_rw_const_all(c, fl ? -0.0 : 0) ||
           (KILN_MUTANT(59) && fl && kiln_rw_const_all(c, 0.0));
  case KILN_OP_Sub:
    if (KILN_MUTANT(1)) return kiln_rw_const_all(c, 0.0); /* mutant 1: 0 - x taken for x */
    return !c_first && kiln_rw_const_all(c, 0.0);
  default: return false;
  }
}

static bool simplify_identity_operand(kiln_rw *rw, int i) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return false;
  for (int side = 0; side < 2; side++) {
    const kiln_tensor *c = kiln_rw_const(g, n->inputs[side]);
    int x = n->inputs[1 - side];
    const kiln_type *xt = ttype(g, x);
    if (!c || !xt || xt->dtype != c->dtype || !is_identity_const(n->op, c, side == 0)) continue;
    if (!no_broadcast_growth(c, xt)) continue;
    return forward(rw, i, x);
  }
  return false;
}

/* ---- Transpose ---- */
static bool get_perm(const kiln_graph *g, const kiln_node *n, int64_t *perm, int *rank) {
  const kiln_type *t = ttype(g, n->inputs[0]);
  const int64_t *p;
  int np;
  if (!t || !good(kiln_node_ints(n, "perm", &p, &np))) return false;
  *rank = t->rank;
  if (np >= 0 && np != t->rank) return false;
  for (int k = 0; k < t->rank; k++) {
    perm[k] = np >= 0 ? p[k] : KILN_MUTANT(93) ? k : t->rank - 1 - k; /* mutant 93: identity */
    if (perm[k] < 0 || perm[k] >= t->rank) return false;
  }
  return true;
}

static bool is_iota(const int64_t *p, int n) {
  for (int k = 0; k < n; k++)
    if (p[k] != k) return false;
  return true;
}

static bool simplify_transpose(kiln_rw *rw, int i) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  int64_t p2[KILN_MAX_RANK], p1[KILN_MAX_RANK], q[KILN_MAX_RANK];
  int r, r1;
  if (n->n_inputs != 1 || n->inputs[0] < 0 || !get_perm(g, n, p2, &r)) return false;
  if (is_iota(p2, r)) return forward(rw, i, n->inputs[0]);
  int t1 = producer_op(g, n->inputs[0], KILN_OP_Transpose);
  if (t1 < 0 || !get_perm(g, &g->nodes.data[t1], p1, &r1) || r1 != r) return false;
  for (int k = 0; k < r; k++) q[k] = p1[p2[k]];
  if (KILN_MUTANT(3)) /* mutant 3: the two perms composed in the wrong order */
    for (int k = 0; k < r; k++) q[k] = p2[p1[k]];
  int x = g->nodes.data[t1].inputs[0];
  if (is_iota(q, r)) /* mutant 320: forwarded to the inner Transpose's result, not its input */
    return forward(rw, i, KILN_MUTANT(320) ? n->inputs[0] : x);
  kiln_rw_set_input(rw, i, 0, x);
  kiln_rw_set_ints(rw, i, "perm", r, q);
  return true;
}

/* ---- views: Reshape, Flatten, Squeeze, Unsqueeze ---- */
static bool is_view(kiln_op op) {
  return op == KILN_OP_Reshape || op == KILN_OP_Flatten || op == KILN_OP_Squeeze ||
         op == KILN_OP_Unsqueeze;
}

static bool same_static_type(const kiln_graph *g, int a, int b) {
  const kiln_type *ta = ttype(g, a), *tb = ttype(g, b);
  if (KILN_MUTANT(4)) /* mutant 4: a view is dropped when rank and dtype agree */
    return ta && tb && kiln_type_is_static(ta) && ta->rank == tb->rank && ta->dtype == tb->dtype;
  /* mutant 338: unknown dims taken as equal (two run-time shapes of one rank) */
  return ta && tb && (kiln_type_is_static(ta) || KILN_MUTANT(338)) && kiln_type_equal(ta, tb);
}

static bool simplify_reshape_chain(kiln_rw *rw, int i) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  int64_t shape[KILN_MAX_RANK], allowzero;
  int ns;
  if (n->n_inputs < 2 || n->inputs[0] < 0) return false;
  int p = kiln_rw_producer(g, n->inputs[0]);
  if (p < 0 || g->nodes.data[p].inputs[0] < 0) return false;
  if (!is_view(g->nodes.data[p].op) &&
      !(KILN_MUTANT(167) && g->nodes.data[p].op == KILN_OP_Transpose))
    return false; /* mutant 167: Transpose taken for a view */
  if (!kiln_rw_const_ints(g, n->inputs[1], KILN_MAX_RANK, shape, &ns)) return false;
  if (!good(kiln_node_int(n, "allowzero", 0, &allowzero))) return false;
  for (int k = 0; k < ns; k++)
    if (shape[k] == 0 && !allowzero && !KILN_MUTANT(60))
      return false; /* 0 copies a dim of the input; mutant 60: ignored */
  kiln_rw_set_input(rw, i, 0, g->nodes.data[p].inputs[0]);
  return true;
}

/* Axes of a Squeeze/Unsqueeze (attribute before opset 13, input from 13), normalized to
 * [0, rank) and sorted; false when unknown. */
static bool get_axes(const kiln_graph *g, const kiln_node *n, int rank, int64_t *axes, int *na) {
  const int64_t *a;
  int cnt;
  if (n->opset < 13) {
    if (!good(kiln_node_ints(n, "axes", &a, &cnt)) || cnt < 0 || cnt > KILN_MAX_RANK) return false;
    memcpy(axes, a, (size_t)cnt * sizeof *axes);
  } else if (n->n_inputs < 2 || !kiln_rw_const_ints(g, n->inputs[1], KILN_MAX_RANK, axes, &cnt)) {
    return false;
  }
  for (int k = 0; k < cnt; k++) {
    if (axes[k] < 0) axes[k] += rank;
    if (axes[k] < 0 || axes[k] >= rank) return false;
    for (int j = k; j > 0 && axes[j - 1] > axes[j]; j--) {
      int64_t t = axes[j];
      axes[j] = axes[j - 1], axes[j - 1] = t;
    }
  }
  *na = cnt;
  return true;
}

/* Squeeze(Unsqueeze(x, a), a) and Unsqueeze(Squeeze(x, a), a): both axes sets are taken
 * over the rank of the bigger of the two shapes. */
static bool simplify_squeeze_pair(kiln_rw *rw, int i) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  bool sq = n->op == KILN_OP_Squeeze;
  int p = producer_op(g, n->inputs[0], sq ? KILN_OP_Unsqueeze : KILN_OP_Squeeze);
  if (p < 0) return false;
  const kiln_node *pn = &g->nodes.data[p];
  /* mutant 165: the axes of Unsqueeze(Squeeze(x)) normalized over the smaller rank */
  const kiln_type *big = ttype(g, sq || KILN_MUTANT(165) ? n->inputs[0] : pn->inputs[0]);
  int64_t a1[KILN_MAX_RANK], a2[KILN_MAX_RANK];
  int n1, n2;
  if (!big || !get_axes(g, n, big->rank, a1, &n1) || !get_axes(g, pn, big->rank, a2, &n2))
    return false;
  if ((n1 != n2 && !KILN_MUTANT(229)) || n1 == 0 || n1 > n2 || /* mutant 229: counts not compared */
      memcmp(a1, a2, (size_t)n1 * sizeof *a1) != 0)
    return false;
  return forward(rw, i, pn->inputs[0]);
}

static bool simplify_view(kiln_rw *rw, int i) {
  const kiln_node *n = &rw->g->nodes.data[i];
  if (n->n_inputs < 1 || n->inputs[0] < 0) return false;
  if (same_static_type(rw->g, n->inputs[0], n->outputs[0])) return forward(rw, i, n->inputs[0]);
  if (n->op == KILN_OP_Reshape) return simplify_reshape_chain(rw, i);
  if (n->op == KILN_OP_Squeeze || n->op == KILN_OP_Unsqueeze) return simplify_squeeze_pair(rw, i);
  return false;
}

/* ---- Cast ---- */
static bool simplify_cast(kiln_rw *rw, int i) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  const kiln_type *xt = n->n_inputs >= 1 ? ttype(g, n->inputs[0]) : NULL;
  int64_t to;
  if (!xt || !xt->dtype) return false;
  if (n->op == KILN_OP_Cast) {
    if (!good(kiln_node_int(n, "to", -1, &to))) return false;
    if (KILN_MUTANT(5)) /* mutant 5: a Cast within one class (float to float, int to int) dropped */
      to = kiln_dtype_is_float((kiln_dtype)to) == kiln_dtype_is_float(xt->dtype)
               ? (int64_t)xt->dtype
               : to;
    if (to != (int64_t)xt->dtype) return false;
  } else {
    const kiln_type *lt = n->n_inputs >= 2 ? ttype(g, n->inputs[KILN_MUTANT(254) ? 0 : 1]) : NULL;
    /* mutant 254: the target type read from input 0 (every CastLike dropped) */
    if (!lt || lt->dtype != xt->dtype) return false;
  }
  return forward(rw, i, n->inputs[0]);
}

/* ---- MatMul + bias -> Gemm ---- */
static bool gemm_dtype(kiln_dtype t) {
  return t == KILN_F32 || t == KILN_F64 || t == KILN_F16 || t == KILN_BF16;
}

static kiln_status matmul_bias_to_gemm(kiln_rw *rw, int i, bool *done) {
  kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  *done = false;
  if (n->n_inputs != 2 || n->opset < 11) return KILN_OK;
  for (int side = 0; side < 2 && !*done; side++) {
    int mm = producer_op(g, n->inputs[side], KILN_OP_MatMul);
    const kiln_tensor *bias = kiln_rw_const(g, n->inputs[1 - side]);
    if (mm < 0 || !bias || rw->uses[n->inputs[side]] != 1) continue;
    const kiln_node *m = &g->nodes.data[mm];
    const kiln_type *at = ttype(g, m->inputs[0]), *bt = ttype(g, m->inputs[1]);
    if (!at || !bt || (at->rank != 2 && !KILN_MUTANT(133)) || bt->rank != 2 || /* mutant 133 */
        !gemm_dtype(at->dtype))
      continue; /* mutant 133: a batched A (rank > 2) taken too */
    int64_t nd = bt->dims[1].value;
    bool row = (bias->rank == 1 && bias->dims[0] == nd) ||
               (bias->rank == 2 && (bias->dims[0] == 1 || KILN_MUTANT(257)) &&
                bias->dims[1] == nd); /* mutant 257: a bias [P, N] taken for a row */
    if (!row || nd < 0 || bias->dtype != at->dtype) continue;
    int in[3] = {m->inputs[0], m->inputs[1], n->inputs[1 - side]};
    if (KILN_MUTANT(371)) /* mutant 371: the MatMul's operands indexed by the Add's side */
      in[0] = m->inputs[side], in[1] = m->inputs[1 - side];
    if (KILN_MUTANT(6)) in[2] = n->inputs[side]; /* mutant 6: the MatMul result as the bias */
    KILN_TRY(rebuild_as(rw, i, "Gemm", 3, in, done));
    if (*done && kiln_rw_node_unused(rw, mm)) kiln_rw_kill_node(rw, mm);
  }
  return KILN_OK;
}

/* ---- Neg and Sub canonical forms ---- */
static kiln_status simplify_neg_forms(kiln_rw *rw, int i, bool *done) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  *done = false;
  if (n->op == KILN_OP_Neg) {
    int p = producer_op(g, n->inputs[0], KILN_OP_Neg);
    *done = p >= 0 && forward(rw, i, g->nodes.data[p].inputs[0]);
    return KILN_OK;
  }
  if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0) return KILN_OK;
  int a = n->inputs[0], b = n->inputs[1];
  int na = producer_op(g, a, KILN_OP_Neg), nb = producer_op(g, b, KILN_OP_Neg);
  if (n->op == KILN_OP_Add && nb >= 0) {
    int in[2] = {a, g->nodes.data[nb].inputs[0]};
    return rebuild_as(rw, i, "Sub", 2, in, done);
  }
  if (n->op == KILN_OP_Add && na >= 0) {
    int in[2] = {b, g->nodes.data[na].inputs[0]};
    if (KILN_MUTANT(127)) /* mutant 127: Neg(y) + x rewritten as y - x */
      in[0] = g->nodes.data[na].inputs[0], in[1] = b;
    return rebuild_as(rw, i, "Sub", 2, in, done);
  }
  if (n->op == KILN_OP_Sub && nb >= 0) {
    int in[2] = {a, g->nodes.data[nb].inputs[0]};
    /* mutant 317: the op name of the Add rule copied (x - Neg(y) rebuilt as x - y) */
    return rebuild_as(rw, i, KILN_MUTANT(317) ? "Sub" : "Add", 2, in, done);
  }
  const kiln_tensor *ca = kiln_rw_const(g, a), *cb = kiln_rw_const(g, b);
  const kiln_type *at = ttype(g, a), *bt = ttype(g, b);
  bool fl = bt && kiln_dtype_is_float(bt->dtype);
  if (n->op == KILN_OP_Sub && ca && bt && ca->dtype == bt->dtype &&
      (fl || kiln_dtype_class_of(bt->dtype) == KILN_CLASS_SINT ||
       (KILN_MUTANT(374) && kiln_dtype_is_int(bt->dtype))) && /* mutant 374: unsigned too */
      /* mutant 92: (+0.0) - x taken for Neg(x); mutant 373: a zero that broadcasts x up */
      (kiln_rw_const_all(ca, fl ? -0.0 : 0) || (KILN_MUTANT(92) && kiln_rw_const_all(ca, 0.0))) &&
      (no_broadcast_growth(ca, bt) || KILN_MUTANT(373)))
    return rebuild_as(rw, i, "Neg", 1, &b, done);
  bool afl = at && kiln_dtype_is_float(at->dtype);
  if (n->op == KILN_OP_Mul && cb && at && cb->dtype == at->dtype &&
      (afl || kiln_dtype_class_of(at->dtype) == KILN_CLASS_SINT) && kiln_rw_const_all(cb, -1) &&
      (no_broadcast_growth(cb, at) || KILN_MUTANT(318))) /* mutant 318: -1 broadcasting x */
    return rebuild_as(rw, i, "Neg", 1, &a, done);
  return KILN_OK;
}

/* ---- driver ---- */
/* Add, Sub, Mul and Div before opset 7 with broadcast=1: B is aligned at `axis`, not at the
 * end. Every rewrite above assumes numpy broadcasting (and some swap the operands, which the
 * legacy form does not allow), so such a node is left as it is. */
static bool legacy_broadcast(const kiln_node *n) {
  const kiln_attr *a = kiln_node_attr(n, "broadcast");
  /* mutant 370: the legacy form taken to end with opset 5 (Add-6 read as numpy broadcasting) */
  return n->opset < (KILN_MUTANT(370) ? 6 : 7) && a && a->kind == KILN_ATTR_INT && a->i != 0;
}

static kiln_status simplify_node(kiln_rw *rw, int i, bool *done) {
  const kiln_node *n = &rw->g->nodes.data[i];
  *done = false;
  if (rw->dead_node[i] || n->n_outputs < 1 || n->outputs[0] < 0 || n->n_inputs < 1 ||
      n->inputs[0] < 0)
    return KILN_OK;
  kiln_op op = n->op; /* n may move when nodes are added */
  switch (op) {
  case KILN_OP_Add:
  case KILN_OP_Sub:
  case KILN_OP_Mul:
  case KILN_OP_Div:
    if (legacy_broadcast(n)) return KILN_OK;
    if ((*done = simplify_identity_operand(rw, i))) return KILN_OK;
    if (op == KILN_OP_Add) KILN_TRY(matmul_bias_to_gemm(rw, i, done));
    if (*done || op == KILN_OP_Div) return KILN_OK;
    return simplify_neg_forms(rw, i, done);
  case KILN_OP_Neg: return simplify_neg_forms(rw, i, done);
  case KILN_OP_Transpose: *done = simplify_transpose(rw, i); return KILN_OK;
  case KILN_OP_Cast:
  case KILN_OP_CastLike: *done = simplify_cast(rw, i); return KILN_OK;
  default: *done = is_view(n->op) && simplify_view(rw, i); return KILN_OK;
  }
}

kiln_status kiln_pass_simplify(kiln_pass_ctx *ctx, kiln_graph *g) {
  for (int round = 0; round < MAX_ROUNDS; round++) {
    kiln_rw rw;
    kiln_rw_begin(&rw, g);
    int64_t before = ctx->changes;
    for (int i = 0; i < g->nodes.len; i++) {
      bool done;
      kiln_status st = simplify_node(&rw, i, &done);
      if (st) {
        kiln_rw_abort(&rw);
        return st;
      }
      ctx->changes += done;
    }
    KILN_TRY(kiln_rw_end(&rw));
    if (ctx->changes == before) break;
  }
  return KILN_OK;
}
