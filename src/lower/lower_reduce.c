/* Reduction lowering: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax and LayerNormalization,
 * each as one kernel with the elementwise prologue on its data input and the elementwise
 * epilogue on its result (the fusion group).
 *
 * Schedule (CPU): a loop nest over the kept dimensions (the outermost parallel), inside it
 * serial loops over the reduced dimensions accumulating into a scalar. Softmax runs three
 * passes over its axis (max, sum of exp, normalize), LayerNormalization three (mean,
 * variance, normalize). Float sums accumulate in F64 (a serial F32 sum of n terms loses up
 * to n ulps: over 10^4 terms that exceeds the 1e-3 tolerance); Max/Min/Prod and the
 * arguments of ArgMax/ArgMin stay in the compute type. Integer sums are exact in I64/U64. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef enum red_kind {
  RK_SUM,
  RK_MEAN,
  RK_SUMSQ,
  RK_L1,
  RK_L2,
  RK_LOGSUM,
  RK_LOGSUMEXP,
  RK_PROD,
  RK_MAX,
  RK_MIN,
  RK_ARGMAX,
  RK_ARGMIN,
  RK_SOFTMAX,
  RK_LOGSOFTMAX,
  RK_LAYERNORM,
  RK_NONE,
  RK_COUNT
} red_kind;

static red_kind kind_of(kiln_op op) {
  switch (op) {
  case KILN_OP_ReduceSum: return RK_SUM;
  case KILN_OP_ReduceMean: return RK_MEAN;
  case KILN_OP_ReduceSumSquare: return RK_SUMSQ;
  case KILN_OP_ReduceL1: return RK_L1;
  case KILN_OP_ReduceL2: return RK_L2;
  case KILN_OP_ReduceLogSum: return RK_LOGSUM;
  case KILN_OP_ReduceLogSumExp: return RK_LOGSUMEXP;
  case KILN_OP_ReduceProd: return RK_PROD;
  case KILN_OP_ReduceMax: return RK_MAX;
  case KILN_OP_ReduceMin: return RK_MIN;
  case KILN_OP_ArgMax: return RK_ARGMAX;
  case KILN_OP_ArgMin: return RK_ARGMIN;
  case KILN_OP_Softmax: return RK_SOFTMAX;
  case KILN_OP_LogSoftmax: return RK_LOGSOFTMAX;
  case KILN_OP_LayerNormalization: return RK_LAYERNORM;
  default: return RK_NONE;
  }
}

/* The axis of Softmax, LogSoftmax (with the axes after it before opset 13), LayerNormalization
 * (with the axes after it), ArgMax and ArgMin as a mask; whether it is kept. */
static kiln_status one_axis(const kiln_node *n, red_kind rk, int rank, bool *mask, bool *keep) {
  int64_t axis;
  bool to_end = rk == RK_LAYERNORM && !KILN_MUTANT(107); /* mutant 107: only the axis itself */
  *keep = true;
  if (rank == 0) return kiln_invalid("%s: axis out of range", n->op_type);
  if (rk == RK_SOFTMAX || rk == RK_LOGSOFTMAX) {
    kiln_attrs_softmax sa;
    KILN_TRY(kiln_attrs_softmax_decode(n, rank, &sa));
    axis = sa.axis;
    to_end = sa.coerce_2d && !KILN_MUTANT(292); /* mutant 292: pre-13 flattening ignored */
  } else if (rk == RK_LAYERNORM) {
    kiln_attrs_norm na;
    KILN_TRY(kiln_attrs_norm_decode(n, &na));
    axis = na.axis;
    if (axis < -rank || axis >= rank) return kiln_invalid("%s: axis out of range", n->op_type);
    if (axis < 0) axis += rank;
  } else {
    kiln_attrs_arg aa;
    KILN_TRY(kiln_attrs_arg_decode(n, rank, &aa));
    axis = aa.axis;
    *keep = aa.keepdims;
  }
  for (int d = (int)axis; d < (to_end ? rank : axis + 1); d++) mask[d] = true;
  return KILN_OK;
}

/* The reduced dimensions of n's input (mask), and whether they are kept (size 1). */
static kiln_status reduced_axes(const kiln_graph *g, const kiln_node *n, int rank, bool *mask,
                                bool *keep) {
  red_kind rk = kind_of(n->op);
  int64_t axes[KILN_MAX_RANK];
  int na = -1;
  memset(mask, 0, (size_t)rank);
  if (rk == RK_SOFTMAX || rk == RK_LOGSOFTMAX || rk == RK_LAYERNORM || rk == RK_ARGMAX ||
      rk == RK_ARGMIN)
    return one_axis(n, rk, rank, mask, keep);
  kiln_attrs_reduce ra;
  KILN_TRY(kiln_attrs_reduce_decode(n, &ra));
  *keep = ra.keepdims;
  if (n->n_inputs > 1 && n->inputs[1] >= 0) {
    if (!kiln_lower_const_ints(g, n->inputs[1], axes, KILN_MAX_RANK, &na))
      return kiln_unsupported("%s: axes are not a constant", n->op_type);
  } else if (!ra.axes_input && (n->opset < 13 || !KILN_MUTANT(325))) {
    /* mutant 325: the axes attribute read only before opset 13 (ReduceSum's boundary) */
    na = ra.n_axes;
    for (int i = 0; i < na && i < KILN_MAX_RANK; i++) axes[i] = ra.axes[i];
    if (na > KILN_MAX_RANK) return kiln_invalid("%s: too many axes", n->op_type);
  }
  if (na <= -KILN_MUTANT(347) && ra.noop_with_empty_axes) /* mutant 347: an empty axes input */
    return kiln_unsupported("%s: noop_with_empty_axes", n->op_type);
  for (int d = 0; d < rank; d++) mask[d] = KILN_MUTANT(139) ? na < 0 : na <= 0; /* mutant 139 */
  for (int i = 0; i < na; i++) {
    /* mutant 352: a negative axis wrapped by the output's rank when the dims are not kept */
    int64_t a = axes[i] < 0 ? axes[i] + (KILN_MUTANT(352) && !*keep ? rank - na : rank) : axes[i];
    if (a < 0 || a >= rank) return kiln_invalid("%s: axis out of range", n->op_type);
    mask[a] = true;
  }
  return KILN_OK;
}

bool kiln_lower_is_reduction(const kiln_graph *g, const kiln_node *n) {
  red_kind rk = kind_of(n->op);
  if (rk == RK_NONE || !kiln_lower_node_static(g, n) || n->n_inputs < 1 || n->inputs[0] < 0)
    return false;
  const kiln_type *x = kiln_lower_static(g, n->inputs[0]);
  if (!kiln_lower_dtype_ok(x->dtype) || x->dtype == KILN_BOOL) return false;
  if (rk >= RK_SOFTMAX && !kiln_dtype_is_float(x->dtype)) return false;
  if (rk == RK_LAYERNORM)
    for (int k = 1; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0 && !kiln_lower_dtype_ok(kiln_lower_static(g, n->outputs[k])->dtype))
        return false;
  if ((rk == RK_LOGSUM || rk == RK_LOGSUMEXP || rk == RK_L2 || rk == RK_MEAN) &&
      !kiln_dtype_is_float(x->dtype))
    return false;
  if (kiln_lower_numel(x) == 0) return false;
  bool mask[KILN_MAX_RANK], keep;
  kiln_status st = reduced_axes(g, n, x->rank, mask, &keep);
  if (st) kiln_status_free(st);
  return !st;
}

/* ---- kernel state ---- */
typedef struct red {
  kiln_lower_ctx *c;
  const kiln_group *grp;
  const kiln_node *r;
  int r_pos; /* index of r in grp->nodes */
  red_kind rk;
  kiln_tkernel *k;
  kiln_step step;
  const kiln_type *xt;
  bool mask[KILN_MAX_RANK], keep;
  kiln_texpr *pos[KILN_MAX_RANK]; /* index of the current element of x, per dimension */
  kiln_tblock *outer;             /* body of the loops over kept dimensions */
  kiln_tblock *inner;             /* body of the last reduce_loops: where x is read */
  int n_pass;
} red;

static bool member(const kiln_group *grp, int node) {
  for (int i = 0; i < grp->n_nodes; i++)
    if (grp->nodes[i] == node) return true;
  return false;
}

static int param_of(const red *s, int v) {
  for (int i = 0; i < s->step.n_args; i++)
    if (s->step.args[i].kind == KILN_ARG_VALUE && s->step.args[i].id == v) return i;
  return -1;
}

static kiln_texpr *bcast_at(red *s, const kiln_type *t, int rank, kiln_texpr *const *pos) {
  kiln_texpr *idx = kiln_tint(s->k, 0);
  int64_t stride = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    if (t->dims[d].value != 1 || KILN_MUTANT(385)) /* mutant 385: size-1 (broadcast) dims indexed */
      idx = kiln_tadd(s->k, kiln_tmul(s->k, pos[rank - t->rank + d], stride), idx);
    stride *= t->dims[d].value;
  }
  return idx;
}

/* A variable assigned e in block b (see kiln_lower_expr_large). */
static kiln_texpr *bind(red *s, kiln_tblock *b, kiln_texpr *e) {
  char name[32];
  snprintf(name, sizeof name, "e%d", s->k->vars.len);
  int var = kiln_tkernel_var(s->k, name, e->type);
  kiln_tblock_push(s->k, b, kiln_tassign(s->k, var, e));
  return kiln_tv(s->k, var);
}

/* Value v at x's position, in the compute type of class cls for its dtype: a prologue
 * node's expression (its operands in the elementwise compute type), or a load of an input. */
static kiln_status value_in(red *s, int v, kiln_prec_class cls, kiln_texpr **out) {
  const kiln_graph *g = s->c->g;
  const kiln_value *val = &g->values.data[v];
  if (val->kind == KILN_VALUE_NODE && member(s->grp, val->node)) {
    const kiln_node *n = &g->nodes.data[val->node];
    kiln_texpr *ops[8] = {0};
    if (n->n_inputs > 8) return kiln_unsupported("prologue node with many inputs");
    for (int i = 0; i < n->n_inputs; i++)
      if (n->inputs[i] >= 0) KILN_TRY(value_in(s, n->inputs[i], KILN_PREC_ELEMENTWISE, &ops[i]));
    KILN_TRY(kiln_lower_ew_expr(s->c, s->k, n, ops, out));
    if (val->type.dtype != (*out)->type) /* rounded to its storage type */
      *out = kiln_tcast(s->k, (*out)->type, kiln_tcast(s->k, val->type.dtype, *out));
    /* a no-op unless the policy computes the classes in different types */
    *out = kiln_tcast(s->k, kiln_lower_compute_type(s->k, cls, val->type.dtype), *out);
    if (kiln_lower_expr_large(*out)) *out = bind(s, s->inner, *out); /* a long prologue */
    return KILN_OK;
  }
  /* mutant 414: an input of lower rank broadcast from the left (its own rank taken as x's) */
  int xr = KILN_MUTANT(414) ? val->type.rank : s->xt->rank;
  *out = kiln_lower_load(s->k, cls, param_of(s, v), bcast_at(s, &val->type, xr, s->pos));
  return KILN_OK;
}

static kiln_status value_at(red *s, int v, kiln_texpr **out) {
  return value_in(s, v, KILN_PREC_REDUCTION, out);
}

/* Loops over the reduced dimensions (serial) inside the kept ones; returns the body. */
static kiln_tblock *reduce_loops(red *s, kiln_tblock *b) {
  int pass = s->n_pass++;
  for (int d = 0; d < s->xt->rank; d++) {
    if (!s->mask[d]) continue;
    char name[32];
    snprintf(name, sizeof name, "r%d_%d", pass, d);
    int v = kiln_tkernel_var(s->k, name, KILN_I64);
    kiln_tstmt *loop = kiln_tfor(s->k, v, kiln_tint(s->k, s->xt->dims[d].value), KILN_LOOP_SERIAL);
    kiln_tblock_push(s->k, b, loop);
    b = &loop->body;
    s->pos[d] = kiln_tv(s->k, v);
  }
  s->inner = b;
  return b;
}

/* Loops over kept dimensions; the schedule's parallel one (kiln_sched_nest_parallel: the
 * first with more than one iteration, when the input is large enough). */
static void outer_loops(red *s) {
  kiln_tblock *b = &s->k->body;
  int64_t kept[KILN_MAX_RANK];
  int n = 0;
  for (int d = 0; d < s->xt->rank; d++)
    if (!s->mask[d]) kept[n++] = s->xt->dims[d].value;
  int par =
      kiln_sched_nest_parallel(kiln_lower_numel(s->xt), s->k->module->par_min_elements, n, kept);
  for (int d = 0, i = 0; d < s->xt->rank; d++) {
    if (s->mask[d]) continue;
    char name[32];
    snprintf(name, sizeof name, "o%d", d);
    int v = kiln_tkernel_var(s->k, name, KILN_I64);
    int64_t ext = s->xt->dims[d].value;
    kiln_loop_kind kind = i++ == par ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
    kiln_tstmt *loop = kiln_tfor(s->k, v, kiln_tint(s->k, ext), kind);
    kiln_tblock_push(s->k, b, loop);
    b = &loop->body;
    s->pos[d] = kiln_tv(s->k, v);
  }
  s->outer = b;
}

static kiln_texpr *num(kiln_tkernel *k, kiln_dtype t, double v) {
  return kiln_dtype_is_float(t) ? kiln_tfloat(k, t, v) : kiln_tconst_int(k, t, (int64_t)v);
}

static int new_var(red *s, const char *base, kiln_dtype t) {
  char name[32];
  snprintf(name, sizeof name, "%s%d", base, s->k->vars.len);
  return kiln_tkernel_var(s->k, name, t);
}

static void push(red *s, kiln_tblock *b, int var, kiln_texpr *e) {
  kiln_tblock_push(s->k, b, kiln_tassign(s->k, var, e));
}

static void store_value(red *s, kiln_tblock *b, int v, kiln_texpr *e, kiln_texpr *const *pos,
                        int rank) {
  const kiln_type *ot = &s->c->g->values.data[v].type;
  kiln_tblock_push(s->k, b,
                   kiln_tstore(s->k, param_of(s, v), bcast_at(s, ot, rank, pos),
                               kiln_lower_to_storage(s->k, ot->dtype, e)));
}

/* The expression of chain value u (the reduction's result or an epilogue node's output
 * computed so far), or NULL when u is not one. */
static kiln_texpr *chain_expr(const int *vals, kiln_texpr *const *exprs, int n, int u) {
  for (int i = 0; i < n; i++)
    if (vals[i] == u) return exprs[i];
  return NULL;
}

/* Whether no node reads value v and it is no graph output. */
static bool value_unread(const kiln_graph *g, int v) {
  if (kiln_graph_is_output(g, v)) return false;
  for (int i = 0; i < g->nodes.len; i++)
    for (int j = 0; j < g->nodes.data[i].n_inputs; j++)
      if (g->nodes.data[i].inputs[j] == v) return false;
  return true;
}

/* Applies the epilogue nodes (after the reduction in the group) to value e of value v and
 * stores the result; pos (of length rank) indexes the result's shape, dims of 1 ignored.
 * A value of the chain that is read outside the group (a group output) is stored too. */
static kiln_status epilogue(red *s, kiln_tblock *b, int v, kiln_texpr *e, kiln_texpr *const *pos,
                            int rank) {
  const kiln_graph *g = s->c->g;
  int n_chain = 0, cap = s->grp->n_nodes - s->r_pos;
  int *vals = kiln_arena_calloc(s->c->scratch, (size_t)cap + 1, sizeof *vals);
  kiln_texpr **exprs = kiln_arena_calloc(s->c->scratch, (size_t)cap + 1, sizeof *exprs);
  vals[n_chain] = v, exprs[n_chain++] = e;
  for (int i = s->r_pos + 1; i < s->grp->n_nodes; i++) {
    if (param_of(s, v) >= 0) store_value(s, b, v, e, pos, rank);
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    kiln_texpr *ops[8] = {0};
    if (n->n_inputs > 8) return kiln_unsupported("epilogue node with many inputs");
    for (int j = 0; j < n->n_inputs; j++) {
      int u = n->inputs[j];
      if (u < 0) continue;
      ops[j] = chain_expr(vals, exprs, n_chain, u);
      if (!ops[j])
        ops[j] = kiln_lower_load(s->k, KILN_PREC_ELEMENTWISE, param_of(s, u),
                                 bcast_at(s, &g->values.data[u].type, rank, pos));
    }
    KILN_TRY(kiln_lower_ew_expr(s->c, s->k, n, ops, &e));
    v = n->outputs[0];
    if (kiln_lower_expr_large(e)) e = bind(s, b, e); /* a long chain: 2^n subtrees inlined */
    vals[n_chain] = v, exprs[n_chain++] = e;
  }
  if (param_of(s, v) < 0) { /* unread (LayerNormalization read for its Mean alone): no store */
    if (!value_unread(g, v)) return KILN_BUG("reduction result is not bound");
    return KILN_OK;
  }
  store_value(s, b, v, e, pos, rank);
  return KILN_OK;
}

/* The kept position: reduced dims at 0 (keepdims) or dropped. */
static int kept_pos(red *s, kiln_texpr **pos) {
  int r = 0;
  for (int d = 0; d < s->xt->rank; d++) {
    if (!s->mask[d]) pos[r++] = s->pos[d];
    else if (s->keep) pos[r++] = kiln_tint(s->k, 0);
  }
  return r;
}

static int64_t reduced_count(const red *s) {
  int64_t n = 1;
  for (int d = 0; d < s->xt->rank; d++)
    if (s->mask[d]) /* mutant 381: only the last reduced dim counted (= for *=) */
      n = KILN_MUTANT(381) ? s->xt->dims[d].value : n * s->xt->dims[d].value;
  return n;
}

/* Smallest / largest value of an integer type (as int64; unsigned max of u64 wraps). */
static int64_t int_limit(kiln_dtype t, bool hi) {
  int bits = (int)kiln_dtype_size(t) * 8;
  bool sgn = kiln_dtype_class_of(t) == KILN_CLASS_SINT;
  if (sgn && KILN_MUTANT(265) && !hi) /* mutant 265: the lowest value taken as -max */
    return -(int64_t)((1ull << (bits - 1)) - 1);
  if (sgn) return hi ? (int64_t)((1ull << (bits - 1)) - 1) : (int64_t)(~0ull << (bits - 1));
  if (KILN_MUTANT(138) && hi) return (int64_t)((1ull << (bits - 1)) - 1); /* mutant 138 */
  return hi ? (int64_t)(bits == 64 ? ~0ull : (1ull << bits) - 1) : 0;
}

static kiln_texpr *extreme(kiln_tkernel *k, kiln_dtype t, bool hi) {
  if (kiln_dtype_is_float(t)) return kiln_tfloat(k, t, hi ? INFINITY : -INFINITY);
  return kiln_tconst_int(k, t, int_limit(t, hi));
}

/* Max and min keep the compute type (no rounding); sums accumulate as the policy says. */
static kiln_dtype acc_type(const red *s, kiln_dtype ct) {
  red_kind rk = s->rk;
  if (rk == RK_MAX || rk == RK_MIN || rk == RK_ARGMAX || rk == RK_ARGMIN) return ct;
  return kiln_lower_acc_type(s->k, KILN_PREC_REDUCTION, s->xt->dtype);
}

/* Reduce*: acc = init; for reduced: acc = acc (op) f(x); result = g(acc). */
static kiln_status lower_reduce(red *s) {
  kiln_tkernel *k = s->k;
  kiln_dtype ct = kiln_lower_compute_type(s->k, KILN_PREC_REDUCTION, s->xt->dtype),
             at = acc_type(s, ct);
  int acc = new_var(s, "acc", at);
  kiln_texpr *init = s->rk == RK_PROD ? num(k, at, 1)
                     : s->rk == RK_MAX
                         ? (KILN_MUTANT(24) ? num(k, at, 0) /* mutant 24: max from 0 */
                                            : extreme(k, at, false))
                     : s->rk == RK_MIN ? extreme(k, at, true)
                                       : num(k, at, 0);
  push(s, s->outer, acc, init);
  kiln_tblock *b = reduce_loops(s, s->outer);
  kiln_texpr *x;
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  x = kiln_tcast(k, at, x);
  kiln_texpr *a = kiln_tv(k, acc), *e;
  switch (s->rk) {
  case RK_SUMSQ:
  case RK_L2: e = kiln_tbin(k, KILN_TOP_ADD, a, kiln_tbin(k, KILN_TOP_MUL, x, x)); break;
  case RK_L1:
    e = kiln_tbin(k, KILN_TOP_ADD, a,
                  kiln_dtype_class_of(at) == KILN_CLASS_UINT ||
                          KILN_MUTANT(26) /* mutant 26: no abs */
                      ? x
                      : kiln_tun(k, KILN_TOP_ABS, x));
    break;
  case RK_PROD: e = kiln_tbin(k, KILN_TOP_MUL, a, x); break;
  case RK_MAX: e = kiln_tbin(k, KILN_TOP_MAX, a, x); break;
  case RK_MIN: e = kiln_tbin(k, KILN_TOP_MIN, a, x); break;
  default: e = kiln_tbin(k, KILN_TOP_ADD, a, x); break;
  }
  push(s, b, acc, e);
  kiln_texpr *r = kiln_tv(k, acc);
  if (s->rk == RK_MEAN && !KILN_MUTANT(25))
    r = /* mutant 25: Mean not divided */ kiln_tbin(k, KILN_TOP_DIV, r,
                                                    num(k, at, (double)reduced_count(s)));
  if (s->rk == RK_L2 || (KILN_MUTANT(236) && s->rk == RK_SUMSQ)) /* mutant 236: SumSquare too */
    r = kiln_tun(k, KILN_TOP_SQRT, r);
  if (s->rk == RK_LOGSUM) r = kiln_tun(k, KILN_TOP_LOG, r);
  kiln_dtype ot = s->c->g->values.data[s->r->outputs[0]].type.dtype;
  r = kiln_tcast(k, kiln_lower_compute_type(k, KILN_PREC_REDUCTION, ot), r);
  kiln_texpr *pos[KILN_MAX_RANK];
  int rank = kept_pos(s, pos);
  return epilogue(s, s->outer, s->r->outputs[0], r, pos, rank);
}

/* ReduceLogSumExp: log(sum exp(x - max)) + max, in F64 like the reference: a pass for the
 * max, then the shifted sum (exp cannot overflow). A max that is infinite (every element
 * -inf, or some +inf) shifts by 0 instead, so a row of -inf gives log(0) = -inf and a +inf
 * gives +inf rather than NaN from inf - inf. */
static kiln_status lower_logsumexp(red *s) {
  kiln_tkernel *k = s->k;
  int mx = new_var(s, "max", KILN_F64), acc = new_var(s, "acc", KILN_F64);
  push(s, s->outer, mx, extreme(k, KILN_F64, false));
  kiln_tblock *b = reduce_loops(s, s->outer);
  kiln_texpr *x;
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  push(s, b, mx, kiln_tbin(k, KILN_TOP_MAX, kiln_tv(k, mx), kiln_tcast(k, KILN_F64, x)));
  kiln_texpr *inf = kiln_tun(k, KILN_TOP_ISINF, kiln_tv(k, mx));
  push(s, s->outer, mx,
       KILN_MUTANT(63) /* mutant 63: the max not subtracted (shift 0) */
           ? kiln_tfloat(k, KILN_F64, 0)
           : KILN_MUTANT(210) ? kiln_tv(k, mx) /* mutant 210: an infinite max subtracted too */
                              : kiln_tselect(k, inf, kiln_tfloat(k, KILN_F64, 0), kiln_tv(k, mx)));
  push(s, s->outer, acc, kiln_tfloat(k, KILN_F64, 0));
  b = reduce_loops(s, s->outer);
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  kiln_texpr *d = kiln_tbin(k, KILN_TOP_SUB, kiln_tcast(k, KILN_F64, x), kiln_tv(k, mx));
  push(s, b, acc, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, acc), kiln_tun(k, KILN_TOP_EXP, d)));
  kiln_texpr *r =
      kiln_tbin(k, KILN_TOP_ADD, kiln_tun(k, KILN_TOP_LOG, kiln_tv(k, acc)), kiln_tv(k, mx));
  kiln_dtype ot = s->c->g->values.data[s->r->outputs[0]].type.dtype;
  r = kiln_tcast(k, kiln_lower_compute_type(k, KILN_PREC_REDUCTION, ot), r);
  kiln_texpr *pos[KILN_MAX_RANK];
  int rank = kept_pos(s, pos);
  return epilogue(s, s->outer, s->r->outputs[0], r, pos, rank);
}

/* ArgMax/ArgMin: the first (or last, select_last_index) position of the extreme. */
static kiln_status lower_arg(red *s) {
  kiln_tkernel *k = s->k;
  kiln_attrs_arg aa;
  KILN_TRY(kiln_attrs_arg_decode(s->r, -1, &aa));
  bool last = aa.select_last_index;
  kiln_dtype ct = kiln_lower_compute_type(s->k, KILN_PREC_REDUCTION, s->xt->dtype);
  int best = new_var(s, "best", ct), arg = new_var(s, "arg", KILN_I64);
  push(s, s->outer, best, extreme(k, ct, s->rk == RK_ARGMIN));
  push(s, s->outer, arg, kiln_tint(k, 0));
  kiln_tblock *b = reduce_loops(s, s->outer);
  kiln_texpr *x;
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  kiln_top cmp = s->rk == RK_ARGMAX
                     ? (last ? KILN_TOP_GE : KILN_TOP_GT)
                     : (last && !KILN_MUTANT(140) ? KILN_TOP_LE : KILN_TOP_LT); /* mutant 140 */
  int xv = new_var(s, "x", ct);
  push(s, b, xv, x);
  kiln_texpr *better = kiln_tbin(k, cmp, kiln_tv(k, xv), kiln_tv(k, best));
  int axis = 0;
  for (int d = 0; d < s->xt->rank; d++)
    if (s->mask[d]) axis = d;
  push(s, b, arg, kiln_tselect(k, better, s->pos[axis], kiln_tv(k, arg)));
  push(s, b, best, kiln_tselect(k, better, kiln_tv(k, xv), kiln_tv(k, best)));
  kiln_texpr *pos[KILN_MAX_RANK];
  int rank = kept_pos(s, pos);
  return epilogue(s, s->outer, s->r->outputs[0], kiln_tv(k, arg), pos, rank);
}

/* Softmax / LogSoftmax: max, sum of exp(x - max) (exp in the compute type, the sum in
 * F64), then normalize: Softmax multiplies exp(x - max) by 1 / sum (one division a row),
 * LogSoftmax subtracts log(sum). F32 exp is within an ulp and needs no F64 library call. */
static kiln_status lower_softmax(red *s) {
  kiln_tkernel *k = s->k;
  kiln_dtype ct = kiln_lower_compute_type(s->k, KILN_PREC_REDUCTION, s->xt->dtype);
  int mx = new_var(s, "max", ct), sum = new_var(s, "sum", KILN_F64), nv = new_var(s, "nrm", ct);
  push(s, s->outer, mx, KILN_MUTANT(309) ? num(k, ct, 0) : extreme(k, ct, false)); /* mutant 309 */
  kiln_texpr *x;
  kiln_tblock *b = reduce_loops(s, s->outer);
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  push(s, b, mx, kiln_tbin(k, KILN_TOP_MAX, kiln_tv(k, mx), x));
  push(s, s->outer, sum, kiln_tfloat(k, KILN_F64, 0));
  b = reduce_loops(s, s->outer);
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  kiln_texpr *d = kiln_tbin(k, KILN_TOP_SUB, x, kiln_tv(k, mx));
  kiln_texpr *e = kiln_tcast(k, KILN_F64, kiln_tun(k, KILN_TOP_EXP, d));
  push(s, b, sum, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, sum), e));
  kiln_texpr *nrm = s->rk == RK_SOFTMAX
                        ? kiln_tbin(k, KILN_TOP_DIV, kiln_tfloat(k, KILN_F64, 1), kiln_tv(k, sum))
                        : kiln_tun(k, KILN_TOP_LOG, kiln_tv(k, sum));
  push(s, s->outer, nv, kiln_tcast(k, ct, nrm));
  b = reduce_loops(s, s->outer);
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  d = kiln_tbin(k, KILN_TOP_SUB, x, kiln_tv(k, mx));
  kiln_texpr *y =
      s->rk == RK_SOFTMAX
          ? kiln_tbin(k, KILN_TOP_MUL, kiln_tun(k, KILN_TOP_EXP, d), kiln_tv(k, nv))
          : kiln_tbin(k, KILN_TOP_SUB, KILN_MUTANT(27) ? x : d, kiln_tv(k, nv)); /* mutant 27 */
  return epilogue(s, b, s->r->outputs[0], y, s->pos, s->xt->rank);
}

/* LayerNormalization: mean, variance (two passes, F64), then (x - mean) * inv * scale + b. */
static kiln_status layernorm_stats(red *s, int mean, int inv) {
  kiln_tkernel *k = s->k;
  kiln_attrs_norm na;
  KILN_TRY(kiln_attrs_norm_decode(s->r, &na));
  float eps = na.epsilon;
  double n = (double)reduced_count(s);
  push(s, s->outer, mean, kiln_tfloat(k, KILN_F64, 0));
  kiln_tblock *b = reduce_loops(s, s->outer);
  kiln_texpr *x;
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  push(s, b, mean, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, mean), kiln_tcast(k, KILN_F64, x)));
  push(s, s->outer, mean,
       kiln_tbin(k, KILN_TOP_DIV, kiln_tv(k, mean), kiln_tfloat(k, KILN_F64, n)));
  push(s, s->outer, inv, kiln_tfloat(k, KILN_F64, 0));
  b = reduce_loops(s, s->outer);
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  kiln_texpr *dx = kiln_tbin(k, KILN_TOP_SUB, kiln_tcast(k, KILN_F64, x), kiln_tv(k, mean));
  if (KILN_MUTANT(64)) dx = kiln_tcast(k, KILN_F64, x); /* mutant 64: E[x^2] - E[x]^2 */
  push(s, b, inv, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, inv), kiln_tbin(k, KILN_TOP_MUL, dx, dx)));
  double nvar = KILN_MUTANT(28) ? n - 1 : n; /* mutant 28: unbiased variance (n - 1) */
  kiln_texpr *var = kiln_tbin(k, KILN_TOP_DIV, kiln_tv(k, inv), kiln_tfloat(k, KILN_F64, nvar));
  if (KILN_MUTANT(64))
    var = kiln_tbin(k, KILN_TOP_SUB, var,
                    kiln_tbin(k, KILN_TOP_MUL, kiln_tv(k, mean), kiln_tv(k, mean)));
  kiln_texpr *sd =
      kiln_tun(k, KILN_TOP_SQRT, kiln_tbin(k, KILN_TOP_ADD, var, kiln_tfloat(k, KILN_F64, eps)));
  push(s, s->outer, inv, kiln_tbin(k, KILN_TOP_DIV, kiln_tfloat(k, KILN_F64, 1), sd));
  return KILN_OK;
}

static void store_stat(red *s, int out, int var) {
  const kiln_graph *g = s->c->g;
  int v = out < s->r->n_outputs ? s->r->outputs[out] : -1;
  int p = v >= 0 ? param_of(s, v) : -1;
  if (p < 0) return;
  kiln_texpr *pos[KILN_MAX_RANK];
  bool keep = s->keep;
  s->keep = true;
  int rank = kept_pos(s, pos);
  s->keep = keep;
  const kiln_type *t = &g->values.data[v].type;
  kiln_tblock_push(
      s->k, s->outer,
      kiln_tstore(s->k, p, bcast_at(s, t, rank, pos),
                  kiln_lower_to_storage(
                      s->k, t->dtype,
                      kiln_tcast(s->k, kiln_lower_compute_type(s->k, KILN_PREC_REDUCTION, t->dtype),
                                 kiln_tv(s->k, var)))));
}

static kiln_status lower_layernorm(red *s) {
  kiln_tkernel *k = s->k;
  int mean = new_var(s, "mean", KILN_F64), inv = new_var(s, "inv", KILN_F64);
  KILN_TRY(layernorm_stats(s, mean, inv));
  store_stat(s, 1, mean);
  store_stat(s, 2, inv);
  kiln_tblock *b = reduce_loops(s, s->outer);
  kiln_texpr *x, *scale, *bias = NULL;
  KILN_TRY(value_at(s, s->r->inputs[0], &x));
  KILN_TRY(value_at(s, s->r->inputs[1], &scale));
  if (s->r->n_inputs > 2 && s->r->inputs[2] >= 0) KILN_TRY(value_at(s, s->r->inputs[2], &bias));
  kiln_texpr *y = kiln_tbin(
      k, KILN_TOP_MUL, kiln_tbin(k, KILN_TOP_SUB, kiln_tcast(k, KILN_F64, x), kiln_tv(k, mean)),
      kiln_tv(k, inv));
  y = kiln_tbin(k, KILN_TOP_MUL, y, kiln_tcast(k, KILN_F64, scale));
  if (bias) y = kiln_tbin(k, KILN_TOP_ADD, y, kiln_tcast(k, KILN_F64, bias));
  kiln_dtype ct = kiln_lower_compute_type(k, KILN_PREC_REDUCTION,
                                          s->c->g->values.data[s->r->outputs[0]].type.dtype);
  return epilogue(s, b, s->r->outputs[0], kiln_tcast(k, ct, y), s->pos, s->xt->rank);
}

/* ---- the group ---- */
static bool is_group_output(const kiln_group *grp, int v) {
  for (int i = 0; i < grp->n_outputs; i++)
    if (grp->outputs[i] == v) return true;
  return false;
}

static bool is_group_input(const kiln_group *grp, int v) {
  for (int i = 0; i < grp->n_inputs; i++)
    if (grp->inputs[i] == v) return true;
  return false;
}

/* Whether u is the reduction's output 0 or an output of an epilogue node before node i. */
static bool in_chain(const red *s, int i, int u) {
  if (u == s->r->outputs[0]) return true;
  for (int j = s->r_pos + 1; j < i; j++)
    if (s->c->g->nodes.data[s->grp->nodes[j]].outputs[0] == u) return true;
  return false;
}

static kiln_status check_group(red *s) {
  const kiln_graph *g = s->c->g;
  s->r_pos = -1;
  for (int i = 0; i < s->grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    if (kiln_lower_is_reduction(g, n)) {
      if (s->r_pos >= 0) return kiln_unsupported("a group with two reductions");
      s->r_pos = i;
      s->r = n;
    } else if (!kiln_lower_is_elementwise(g, n)) {
      return kiln_unsupported("%s in a reduction group", n->op_type);
    }
  }
  if (s->r_pos < 0) return kiln_unsupported("no reduction in the group");
  /* a prologue value is computed inside the reduced loops: one read outside the group
   * would need its own store there */
  for (int i = 0; i < s->r_pos; i++)
    if (is_group_output(s->grp, g->nodes.data[s->grp->nodes[i]].outputs[0]))
      return kiln_unsupported("a value of the reduction's prologue is read outside the group");
  /* the epilogue is a chain on output 0; its nodes read only the chain and group inputs */
  int v = s->r->outputs[0];
  for (int i = s->r_pos + 1; i < s->grp->n_nodes; i++) {
    const kiln_node *n = &g->nodes.data[s->grp->nodes[i]];
    bool reads = false;
    for (int j = 0; j < n->n_inputs; j++) {
      reads |= n->inputs[j] == v;
      if (!in_chain(s, i, n->inputs[j]) && !is_group_input(s->grp, n->inputs[j]) &&
          n->inputs[j] >= 0)
        return kiln_unsupported("reduction epilogue reads a value of the prologue");
    }
    if (!reads) return kiln_unsupported("reduction epilogue is not a chain");
    v = n->outputs[0];
  }
  return KILN_OK;
}

kiln_status kiln_lower_reduce_group(kiln_lower_ctx *c, const kiln_group *grp) {
  red s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.grp = grp;
  KILN_TRY(check_group(&s));
  s.rk = kind_of(s.r->op);
  s.xt = kiln_lower_static(c->g, s.r->inputs[0]);
  KILN_TRY(reduced_axes(c->g, s.r, s.xt->rank, s.mask, &s.keep));
  s.k = kiln_lower_kernel(c, grp, s.r->op_type, &s.step);
  for (int i = 0; i < grp->n_inputs; i++) kiln_lower_param_value(c, s.k, &s.step, grp->inputs[i]);
  for (int i = 0; i < grp->n_outputs; i++) kiln_lower_param_value(c, s.k, &s.step, grp->outputs[i]);
  outer_loops(&s);
  kiln_status st;
  switch (s.rk) {
  case RK_ARGMAX:
  case RK_ARGMIN: st = lower_arg(&s); break;
  case RK_SOFTMAX:
  case RK_LOGSOFTMAX: st = lower_softmax(&s); break;
  case RK_LAYERNORM: st = lower_layernorm(&s); break;
  case RK_LOGSUMEXP: st = lower_logsumexp(&s); break;
  default: st = lower_reduce(&s); break;
  }
  KILN_TRY(st);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}
