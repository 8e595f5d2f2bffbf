/* The double-precision reference with error bounds: the driver.
 *
 * The root graph runs node by node in topological order. Every floating-point tensor is held
 * in F64 (the op kernels of src/ops are dtype-generic: given F64 inputs they compute in
 * double and return F64), integers, bools and strings in their own dtype. Per value we keep
 * the reference (r->val) and an absolute error bound (r->err); the rule of each op
 * (bound_rules.c, bound_norm.c) derives its outputs' bounds from its inputs'. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"
#include "graph/analysis.h"

double kiln_bnd_unit_roundoff(kiln_dtype t) {
  switch (t) {
  case KILN_F64: return 0x1p-53;
  case KILN_F32: return 0x1p-24;
  case KILN_F16: return 0x1p-11;
  case KILN_BF16: return 0x1p-8;
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ: return 0x1p-4;
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ: return 0x1p-3;
  case KILN_F4E2M1: return 0x1p-2;
  case KILN_F8E8M0: return 0.5; /* powers of two only */
  default: return 0;
  }
}

double kiln_bnd_tiny(kiln_dtype t) {
  switch (t) {
  case KILN_F32: return 0x1p-150;
  case KILN_F16: return 0x1p-25;
  case KILN_BF16: return 0x1p-134;
  case KILN_F64: return 0x1p-1074;
  default: return kiln_dtype_is_float(t) ? 0x1p-8 : 0; /* float8 / float4: generous */
  }
}

bool kiln_bnd_is_float_val(const kiln_val *v) {
  return v && (v->kind == KILN_TYPE_TENSOR || v->kind == KILN_TYPE_OPTIONAL) && v->t &&
         kiln_dtype_is_float(v->t->dtype);
}

bool kiln_bnd_has_err(const bnd_node *b, int i) {
  return i < b->n->n_inputs && b->ein[i] && kiln_bnd_is_float_val(b->in[i]);
}

kiln_tensor *kiln_bnd_zeros_like(const kiln_tensor *t) {
  kiln_tensor *z = NULL;
  /* t's shape was already checked when t was made; a companion is not refused by the limit */
  kiln_status st = kiln_tensor_new_companion(KILN_F64, t->rank, t->dims, &z);
  if (st) abort();
  return z;
}

void kiln_bnd_add_rel(kiln_tensor *e, const kiln_tensor *y, double cu) {
  double *ed = e->data;
  const double *yd = y->data;
  for (int64_t i = 0; i < e->numel; i++) ed[i] += cu * fabs(yd[i]);
}

void kiln_bnd_unstable(bnd_node *b, int64_t count, const char *why) {
  if (count <= 0) return;
  b->n_unstable += count;
  if (!b->r->note[0]) {
    char lb[160];
    snprintf(b->r->note, sizeof b->r->note, "%s: %lld unstable element(s) (%s)",
             kiln_node_label(b->n, lb, sizeof lb), (long long)count, why);
  }
}

void kiln_bnd_nonfinite(bnd_node *b, int64_t count, int64_t by_bound) {
  if (count <= 0) return;
  b->n_nonfinite += count;
  if (b->r->note[0]) return;
  char lb[160];
  kiln_node_label(b->n, lb, sizeof lb);
  if (by_bound == count) /* every value is finite: only the bounds say it may overflow */
    snprintf(b->r->note, sizeof b->r->note,
             "%s: %lld element(s) are finite, but their error bound reaches the range of the "
             "dtype (the bounds are unstable: a correct result could overflow)",
             lb, (long long)count);
  else
    snprintf(b->r->note, sizeof b->r->note,
             "%s: %lld NaN/Inf element(s) from finite inputs (%lld more whose error bound "
             "reaches the range of the dtype)",
             lb, (long long)(count - by_bound), (long long)by_bound);
}

/* ---- widening to F64 ---- */

static kiln_tensor *widen_tensor(const kiln_tensor *t) {
  kiln_tensor *w = NULL;
  if (!kiln_dtype_is_float(t->dtype) || t->dtype == KILN_F64) {
    int64_t prev = kiln_mem_push_limit(INT64_MAX); /* a companion (kiln_tensor_new_companion) */
    kiln_status st = kiln_tensor_clone(t, &w);
    kiln_mem_pop_limit(prev);
    if (st) abort();
    return w;
  }
  w = kiln_bnd_zeros_like(t);
  double *d = w->data;
  for (int64_t i = 0; i < t->numel; i++) d[i] = kiln_load_f64(t->dtype, t->data, (size_t)i);
  return w;
}

/* Narrows a F64 tensor to dtype (rounding), or clones. */
static kiln_tensor *narrow_tensor(const kiln_tensor *t, kiln_dtype dtype) {
  if (t->dtype != KILN_F64 || !kiln_dtype_is_float(dtype) || dtype == KILN_F64)
    return widen_tensor(t);
  kiln_tensor *n = NULL;
  if (kiln_tensor_new_companion(dtype, t->rank, t->dims, &n)) abort();
  const double *d = t->data;
  for (int64_t i = 0; i < t->numel; i++) kiln_store_f64(dtype, n->data, (size_t)i, d[i]);
  return n;
}

static kiln_val *map_val(const kiln_val *v, kiln_dtype narrow) {
  if (!v) return NULL;
  kiln_val *w = kiln_val_new(v->kind);
  w->elem_seq = v->elem_seq;
  w->opt_dtype = v->opt_dtype;
  if (v->t) w->t = narrow ? narrow_tensor(v->t, narrow) : widen_tensor(v->t);
  if (v->seq) {
    w->seq = kiln_seq_new(v->seq->elem);
    for (int i = 0; i < v->seq->len; i++)
      kiln_seq_push(w->seq, narrow ? narrow_tensor(v->seq->items[i], narrow)
                                   : widen_tensor(v->seq->items[i]));
    if (!narrow && kiln_dtype_is_float(w->seq->elem)) w->seq->elem = KILN_F64;
  }
  if (!narrow && v->kind == KILN_TYPE_OPTIONAL && kiln_dtype_is_float(w->opt_dtype))
    w->opt_dtype = KILN_F64;
  return w;
}

void kiln_bnd_free_vals(kiln_val **v, int n) {
  if (!v) return;
  for (int i = 0; i < n; i++) kiln_val_free(v[i]);
  free(v);
}

/* ---- running a kernel ---- */

static kiln_status run_kernel(const bnd_node *b, const kiln_node *n, kiln_val *const *ins,
                              kiln_val **outs) {
  const kiln_op_impl *impl = kiln_op_get(n->op);
  if (!impl || !impl->eval) return kiln_unsupported("no reference kernel for %s", n->op_type);
  kiln_eval_ctx ctx = {b->g, n, n->n_inputs, ins, n->n_outputs, outs, NULL};
  for (int k = 0; k < n->n_outputs; k++) outs[k] = NULL;
  kiln_status st = impl->eval(&ctx);
  if (st)
    for (int k = 0; k < n->n_outputs; k++) kiln_val_free(outs[k]), outs[k] = NULL;
  return st;
}

static void widen_outputs(const kiln_node *n, kiln_val **outs) {
  for (int k = 0; k < n->n_outputs; k++) {
    kiln_val *o = outs[k];
    if (!o) continue;
    bool narrow_t = o->t && kiln_dtype_is_float(o->t->dtype) && o->t->dtype != KILN_F64;
    bool narrow_s = o->seq && kiln_dtype_is_float(o->seq->elem) && o->seq->elem != KILN_F64;
    if (!narrow_t && !narrow_s) continue;
    outs[k] = map_val(o, KILN_UNDEFINED);
    kiln_val_free(o);
  }
}

/* Inputs in the graph's dtypes (floats; others as they are): new values. */
static kiln_val **narrow_inputs(const bnd_node *b, const kiln_node *n, kiln_val *const *ins,
                                bool *any) {
  kiln_val **nar = kiln_xcalloc((size_t)n->n_inputs + 1, sizeof *nar);
  for (int i = 0; i < n->n_inputs; i++) {
    int id = n->inputs[i];
    kiln_dtype dt = id >= 0 ? b->r->dtype[id] : KILN_UNDEFINED;
    if (ins[i] && kiln_dtype_is_float(dt) && dt != KILN_F64) *any = true;
    nar[i] = ins[i] ? map_val(ins[i], kiln_dtype_is_float(dt) ? dt : KILN_F64) : NULL;
  }
  return nar;
}

/* A float turned into text (Cast to string) shows the digits of its own dtype: the
 * reference formats the value rounded to the input's dtype, as the model does, not the
 * double (an f32 -0.23590185 is not the text of the double -0.2359018474817276). */
static bool makes_text(const bnd_node *b, const kiln_node *n) {
  return n->n_outputs == 1 && n->outputs[0] >= 0 &&
         b->g->values.data[n->outputs[0]].type.dtype == KILN_STRING;
}

kiln_status kiln_bnd_eval(const bnd_node *b, kiln_op op, kiln_val *const *ins, kiln_val **outs) {
  kiln_node tmp = *b->n;
  if (op != KILN_OP_UNKNOWN) tmp.op = op, tmp.op_type = kiln_op_name(op);
  if (makes_text(b, &tmp)) {
    bool any = false;
    kiln_val **nar = narrow_inputs(b, &tmp, ins, &any);
    kiln_status st = run_kernel(b, &tmp, nar, outs);
    kiln_bnd_free_vals(nar, tmp.n_inputs);
    return st;
  }
  kiln_status st = run_kernel(b, &tmp, ins, outs);
  if (!st) {
    widen_outputs(&tmp, outs);
    return KILN_OK;
  }
  /* A kernel that rejects F64: run it in the graph's dtypes and widen. */
  int ni = tmp.n_inputs;
  bool any = false;
  kiln_val **nar = narrow_inputs(b, &tmp, ins, &any);
  if (any) {
    kiln_status st2 = run_kernel(b, &tmp, nar, outs);
    if (!st2) {
      kiln_status_free(st);
      st = KILN_OK;
      widen_outputs(&tmp, outs);
    } else {
      kiln_status_free(st2);
    }
  }
  kiln_bnd_free_vals(nar, ni);
  return st;
}

/* ---- substituted inputs ---- */

static kiln_tensor *subst_tensor(const kiln_tensor *x, const kiln_tensor *e, bnd_subst how) {
  kiln_tensor *t = kiln_bnd_zeros_like(x);
  double *d = t->data;
  const double *xd = x->data, *ed = e ? e->data : NULL;
  for (int64_t i = 0; i < x->numel; i++) {
    double ev = ed ? ed[i] : 0, xv = xd[i];
    switch (how) {
    case BND_ERR: d[i] = ev; break;
    case BND_ABS: d[i] = fabs(xv); break;
    case BND_ABS_PLUS: d[i] = fabs(xv) + ev; break;
    case BND_PLUS: d[i] = xv + ev; break;
    case BND_MINUS: d[i] = xv - ev; break;
    case BND_ONES: d[i] = 1; break;
    case BND_NEG_ABS: d[i] = -fabs(xv); break;
    case BND_NEAR0: d[i] = fabs(xv) <= ev ? 0 : xv; break;
    case BND_ABS_MAX1: d[i] = fmax(fabs(xv) + ev, 1); break;
    case BND_ABS_FIN: d[i] = isfinite(xv) ? fabs(xv) + ev : 0; break;
    case BND_INF_IND: d[i] = isinf(xv) ? 1 : 0; break;
    case BND_ZERO_IND: d[i] = isfinite(xv) && ev > 0 && fabs(xv) <= ev ? 1 : 0; break;
    case BND_ZEROS:
    case BND_SAME:
    case BND_OMIT: d[i] = how == BND_SAME ? xv : 0; break;
    }
  }
  return t;
}

kiln_val **kiln_bnd_subst(const bnd_node *b, const bnd_subst *how, kiln_val ***owned) {
  int ni = b->n->n_inputs;
  kiln_val **ins = kiln_xcalloc((size_t)ni + 1, sizeof *ins);
  kiln_val **own = kiln_xcalloc((size_t)ni + 1, sizeof *own);
  for (int i = 0; i < ni; i++) {
    ins[i] = how[i] == BND_OMIT ? NULL : b->in[i];
    if (how[i] == BND_SAME || how[i] == BND_OMIT || !kiln_bnd_is_float_val(b->in[i]) ||
        b->in[i]->t->dtype != KILN_F64)
      continue;
    kiln_val *v = kiln_val_new(b->in[i]->kind);
    v->opt_dtype = b->in[i]->opt_dtype;
    v->t = subst_tensor(b->in[i]->t, b->ein[i], how[i]);
    ins[i] = own[i] = v;
  }
  *owned = own;
  return ins;
}

/* ---- the driver ---- */

/* Marks the values the graph outputs depend on: needed[value id]. */
static bool *needed_values(const kiln_graph *g) {
  bool *need = kiln_xcalloc((size_t)g->values.len + 1, 1);
  for (int i = 0; i < g->outputs.len; i++) need[g->outputs.data[i]] = true;
  for (int ni = g->nodes.len - 1; ni >= 0; ni--) {
    const kiln_node *n = &g->nodes.data[ni];
    bool live = false;
    for (int k = 0; k < n->n_outputs; k++) live |= n->outputs[k] >= 0 && need[n->outputs[k]];
    if (!live) continue;
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0) need[n->inputs[k]] = true;
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v);) need[v] = true;
  }
  return need;
}

/* Values in the graph's own dtypes, for nodes with subgraphs (run as in the graph). */
typedef struct narrow_lookup {
  kiln_vref *r;
  int sign; /* -1, 0, +1: reference minus / plus its error */
  kiln_val **made;
} narrow_lookup;

static kiln_val *lookup_narrow(void *user, int id) {
  narrow_lookup *nl = user;
  const kiln_graph *g = nl->r->g;
  if (!nl->made[id] && nl->r->val[id]) {
    kiln_val *v = nl->r->val[id];
    kiln_dtype dt = nl->r->dtype[id] ? nl->r->dtype[id] : g->values.data[id].type.dtype;
    if (nl->sign && nl->r->err[id] && kiln_bnd_is_float_val(v)) {
      kiln_val *p = kiln_val_new(v->kind);
      p->t = subst_tensor(v->t, nl->r->err[id], nl->sign > 0 ? BND_PLUS : BND_MINUS);
      nl->made[id] = map_val(p, kiln_dtype_is_float(dt) ? dt : KILN_F64);
      kiln_val_free(p);
    } else {
      nl->made[id] = map_val(v, kiln_dtype_is_float(dt) ? dt : KILN_F64);
    }
  }
  return nl->made[id];
}

static kiln_status eval_sub_node(bnd_node *b, int sign, kiln_val **outs) {
  narrow_lookup nl = {b->r, sign, kiln_xcalloc((size_t)b->g->values.len + 1, sizeof(kiln_val *))};
  kiln_status st = kiln_interp_eval_node(b->g, b->id, lookup_narrow, &nl, outs);
  kiln_bnd_free_vals(nl.made, b->g->values.len);
  if (!st) widen_outputs(b->n, outs);
  return st;
}

/* Nodes with subgraphs (If, Loop, Scan, SequenceMap) run in the graph's dtypes; their bound
 * is the deviation under a perturbation of all inputs by their errors (both signs), doubled,
 * plus 64 u |y| for the body's own rounding. */
static kiln_status bound_sub_node(bnd_node *b) {
  KILN_TRY(eval_sub_node(b, 0, b->out));
  int no = b->n->n_outputs;
  kiln_val **p = kiln_xcalloc((size_t)no + 1, sizeof *p);
  kiln_val **m = kiln_xcalloc((size_t)no + 1, sizeof *m);
  kiln_status st = eval_sub_node(b, 1, p);
  if (!st) st = eval_sub_node(b, -1, m);
  for (int k = 0; !st && k < no; k++) {
    kiln_val *y = b->out[k];
    if (!kiln_bnd_is_float_val(y) || y->t->dtype != KILN_F64) continue;
    kiln_tensor *e = b->eout[k] = kiln_bnd_zeros_like(y->t);
    double *ed = e->data;
    const double *yd = y->t->data;
    for (int s = 0; s < 2; s++) {
      kiln_val *q = s ? m[k] : p[k];
      if (!kiln_bnd_is_float_val(q) || q->t->numel != y->t->numel) continue;
      const double *qd = q->t->data;
      for (int64_t i = 0; i < e->numel; i++) ed[i] = fmax(ed[i], 2 * fabs(qd[i] - yd[i]));
    }
    kiln_bnd_add_rel(e, y->t, 64 * b->u_out[k]);
    for (int64_t i = 0; i < e->numel; i++) ed[i] += 64 * b->tiny_out[k];
  }
  kiln_bnd_free_vals(p, no);
  kiln_bnd_free_vals(m, no);
  return st;
}

static bool tensor_all_finite(const kiln_tensor *t) {
  if (!t || t->dtype != KILN_F64) return true;
  const double *d = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    if (!isfinite(d[i])) return false;
  return true;
}

double kiln_bnd_overflow_at(kiln_dtype t) {
  switch (t) {
  case KILN_F32: return 0x1.ffffffp127;
  case KILN_F16: return 65520.0;
  case KILN_BF16: return 0x1.ff8p127;
  case KILN_F64: return DBL_MAX; /* the reference is double itself: at DBL_MAX it is blind */
  default: return 0;
  }
}

/* Ops whose every intermediate the rules bound (sums, products and Gemm: kiln_bnd_inter_err),
 * that move or compare values without arithmetic, or that are one correctly rounded operation
 * or one call of a math library function on the inputs (no intermediate larger than the
 * inputs or the result; Mod is fmod, exact and never larger than x in magnitude). */
static bool intermediates_known(kiln_op op) {
  static const kiln_op single[] = {
      KILN_OP_Abs,  KILN_OP_Neg,     KILN_OP_Relu,      KILN_OP_Sqrt,       KILN_OP_Log,
      KILN_OP_Exp,  KILN_OP_Div,     KILN_OP_Pow,       KILN_OP_Reciprocal, KILN_OP_Sin,
      KILN_OP_Cos,  KILN_OP_Atan,    KILN_OP_Tanh,      KILN_OP_Erf,        KILN_OP_Floor,
      KILN_OP_Ceil, KILN_OP_Round,   KILN_OP_Sign,      KILN_OP_Max,        KILN_OP_Min,
      KILN_OP_Clip, KILN_OP_Sigmoid, KILN_OP_LeakyRelu, KILN_OP_Mod};
  for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
    if (op == single[i]) return true;
  switch (kiln_bnd_info(op)->rule) {
  case BND_EXACT:
  case BND_DISCRETE:
  case BND_MOVE:
  case BND_SUM:
  case BND_SUB:
  case BND_MULTILIN:
  case BND_GEMM:
  case BND_CAST:
  case BND_ARGMINMAX:
  case BND_TOPK:
  case BND_HARDMAX:
  case BND_NONZERO:
  case BND_REDUCE_MONO: return true;
  default: return false;
  }
}

/* The headroom below the overflow threshold inside which an op of unknown intermediates may
 * overflow: its internal steps can scale a value by any factor before a later step scales it
 * back (BatchNormalization: (x - mean) / sqrt(var + eps) before * scale; Gelu: x (1 + erf)),
 * so no finite factor is sound for every op; 2^32 (f16: 2^3) keeps every value the ordinary and
 * large draws make (|x| <= 1e4, f16 4096) out of it and every value near the limit in it. */
static double headroom(kiln_dtype t) {
  return t == KILN_F16 ? 0x1p-3 : 0x1p-32;
}

/* An op whose intermediates the rules do not bound, with a float input (within its error)
 * or result inside the headroom of the smallest overflow threshold among its float values:
 * a correct implementation may overflow on the way, so every float output element counts as
 * non-finite by its bound (the input search drops the draw). */
static void count_near_limit(bnd_node *b) {
  if (intermediates_known(b->n->op)) return;
  double lim = INFINITY;
  bool near = false;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < b->n->n_inputs + b->n->n_outputs; i++) {
      bool in = i < b->n->n_inputs;
      int id = in ? b->n->inputs[i] : b->n->outputs[i - b->n->n_inputs];
      kiln_val *v = in ? b->in[i] : b->out[i - b->n->n_inputs];
      kiln_tensor *e = in ? b->ein[i] : b->eout[i - b->n->n_inputs];
      if (id < 0 || !kiln_bnd_is_float_val(v) || v->t->dtype != KILN_F64) continue;
      kiln_dtype t = b->r->dtype[id] ? b->r->dtype[id] : b->g->values.data[id].type.dtype;
      double l = kiln_bnd_overflow_at(t) * headroom(t);
      if (pass == 0 && l > 0) lim = fmin(lim, l);
      const double *d = v->t->data, *ed = e && e->numel == v->t->numel ? e->data : NULL;
      for (int64_t j = 0; pass == 1 && !near && j < v->t->numel; j++)
        near = isfinite(d[j]) && fabs(d[j]) + (ed ? ed[j] : 0) >= lim;
    }
  for (int k = 0; near && k < b->n->n_outputs; k++)
    if (kiln_bnd_is_float_val(b->out[k]) && b->out[k]->t->numel > 0)
      kiln_bnd_nonfinite(b, b->out[k]->t->numel, b->out[k]->t->numel);
}

/* The limit of the type output k is computed in: its dtype's, or f16's when the precision
 * policy computes it in f16 (bf16 has f32's range). The intermediate bound carries the
 * relative rounding of the intermediates themselves (a partial sum of K terms is within
 * gamma_K of the exact one; 2^-8 covers every length the generator makes in bf16 or wider). */
double kiln_bnd_inter_err(const bnd_node *b, int k, double inter, double err) {
  int id = b->n->outputs[k];
  if (id < 0 || !isfinite(inter)) return err;
  kiln_dtype t = kiln_bnd_out_dtype(b->r, b->n, k);
  double lim = kiln_bnd_overflow_at(t);
  if (kiln_bnd_policy_u(b, t) == 0x1p-11) lim = kiln_bnd_overflow_at(KILN_F16);
  return lim > 0 && fabs(inter) * (1 + 0x1p-8) >= lim ? fmax(err, lim) : err;
}

static bool any_posinf(const kiln_val *v) {
  if (!kiln_bnd_is_float_val(v) || v->t->dtype != KILN_F64) return false;
  const double *d = v->t->data;
  for (int64_t i = 0; i < v->t->numel; i++)
    if (d[i] == INFINITY) return true;
  return false;
}

static bool any_nan(const kiln_val *v) {
  if (!kiln_bnd_is_float_val(v) || v->t->dtype != KILN_F64) return false;
  const double *d = v->t->data;
  for (int64_t i = 0; i < v->t->numel; i++)
    if (isnan(d[i])) return true;
  return false;
}

/* Ops whose result on a NaN or an infinity ONNX leaves open or a correct kernel may compute
 * another way: which index a NaN takes in an order (ArgMax, TopK, Hardmax), whether a max over
 * a window or axes skips a NaN (the reference does, a kernel may not; their infinities are
 * ordered numbers, not open), rows whose max or
 * mean is infinite (Softmax with +inf, the row normalizations: inf - inf in one formula, not in
 * another; ReduceLogSumExp is defined on all of them: -inf for a row of -inf, +inf beside +inf),
 * Conv's padding (0 * inf where a kernel multiplies it)
 * and casts to integers. Elementwise arithmetic, Max and Min, comparisons, movement and sums
 * propagate them one way (a NaN stays NaN), and the reference is compared exactly. */
static bool nonfinite_open(const bnd_node *b) {
  switch (b->n->op) {
  case KILN_OP_ArgMax:  /* orders and maxima: infinities are ordered like any number (a  */
  case KILN_OP_ArgMin:  /* window or row of -inf has the max -inf, which a running max   */
  case KILN_OP_Hardmax: /* started from the lowest finite number misses); NaN is open */
  case KILN_OP_TopK:
  case KILN_OP_ReduceMax:
  case KILN_OP_ReduceMin:
  case KILN_OP_MaxPool:
  case KILN_OP_GlobalMaxPool: return any_nan(b->in[0]);
  case KILN_OP_LpNormalization:
  case KILN_OP_LayerNormalization:
  case KILN_OP_InstanceNormalization:
  case KILN_OP_GroupNormalization:
  case KILN_OP_RMSNormalization:
  case KILN_OP_Conv:
    return true;           /* an infinity times a padded zero: NaN in a kernel that
                              multiplies the padding, the window's sum where it skips */
  case KILN_OP_Softmax:    /* a row with +inf: NaN in it (inf - inf) where the kernel shifts by */
  case KILN_OP_LogSoftmax: /* the max, 0 or -inf beside a NaN where it does not; -inf and NaN */
    return any_posinf(b->in[0]); /* give one result either way (exp(-inf) = 0, NaN spreads) */
  case KILN_OP_Cast:             /* to an integer type: NaN and infinities have no value there */
  case KILN_OP_CastLike: {
    int id = b->n->outputs[0];
    return id >= 0 && !kiln_dtype_is_float(b->g->values.data[id].type.dtype);
  }
  default: return false;
  }
}

/* A Cast to f64, f32, f16 or bf16: its result is the input rounded to the target, an
 * infinity past the target's range included (ONNX's meaning; only float8 targets saturate).
 * The cast's own bound (bound_cast.c) already finds the elements whose input error could round
 * them another way unstable, so an exact input past the range, cast to inf, is defined. */
static bool rounds_exactly(const bnd_node *b) {
  if (b->n->op != KILN_OP_Cast && b->n->op != KILN_OP_CastLike) return false;
  int id = b->n->outputs[0];
  kiln_dtype to = id >= 0 ? b->g->values.data[id].type.dtype : KILN_UNDEFINED;
  return to == KILN_F64 || to == KILN_F32 || to == KILN_F16 || to == KILN_BF16;
}

/* NaN or Inf from finite inputs; a result beyond the dtype's range becomes +-Inf (what the
 * dtype stores) and counts too, as does one whose error bound reaches the limit. A node with
 * a NaN or an infinity among its inputs: its non-finite results are propagated, not counted,
 * but a finite result beyond the range still counts; on an op of nonfinite_open every result
 * is unstable. */
static void count_nonfinite(bnd_node *b) {
  if (rounds_exactly(b)) return;
  bool nonfinite_in = false;
  for (int i = 0; i < b->n->n_inputs; i++)
    if (kiln_bnd_is_float_val(b->in[i]) && !tensor_all_finite(b->in[i]->t)) nonfinite_in = true;
  if (nonfinite_in && nonfinite_open(b)) {
    for (int k = 0; k < b->n->n_outputs; k++)
      if (b->out[k] && b->out[k]->kind == KILN_TYPE_TENSOR && b->out[k]->t)
        kiln_bnd_unstable(b, b->out[k]->t->numel > 0 ? b->out[k]->t->numel : 1,
                          "a NaN or an infinity into an op whose result on them is open");
    return;
  }
  for (int k = 0; k < b->n->n_outputs; k++) {
    if (!kiln_bnd_is_float_val(b->out[k]) || b->out[k]->t->dtype != KILN_F64) continue;
    int id = b->n->outputs[k];
    double lim = kiln_bnd_overflow_at(b->g->values.data[id].type.dtype);
    double *d = b->out[k]->t->data, *e = b->eout[k] ? b->eout[k]->data : NULL;
    int64_t c = 0, by_bound = 0;
    for (int64_t i = 0; i < b->out[k]->t->numel; i++) {
      if (!isfinite(d[i])) {
        c += !nonfinite_in; /* from finite inputs only: propagated ones are defined */
      } else if (lim > 0 && fabs(d[i]) + (e && isfinite(e[i]) ? e[i] : 0) >= lim) {
        c++;
        if (fabs(d[i]) >= lim) d[i] = d[i] > 0 ? INFINITY : -INFINITY, e ? e[i] = 0 : 0;
        else by_bound++;
      }
    }
    kiln_bnd_nonfinite(b, c, by_bound);
  }
}

/* The unit roundoff of each output's own rounding: its dtype's, or (bound_prec.c) the
 * coarser one of the type the precision policy computes it in. */
static void node_unit_roundoff(bnd_node *b) {
  double umax = 0;
  for (int k = 0; k < b->n->n_outputs; k++) {
    int id = b->n->outputs[k];
    kiln_dtype dt = id >= 0 ? kiln_bnd_out_dtype(b->r, b->n, k) : KILN_UNDEFINED;
    b->u_out[k] = id >= 0 ? fmax(kiln_bnd_unit_roundoff(dt), kiln_bnd_policy_u(b, dt)) : 0;
    b->tiny_out[k] = id >= 0 ? fmax(kiln_bnd_tiny(dt), kiln_bnd_policy_tiny(b, dt)) : 0;
    umax = fmax(umax, b->u_out[k]);
  }
  for (int i = 0; i < b->n->n_inputs; i++) {
    int id = b->n->inputs[i];
    if (id >= 0) umax = fmax(umax, kiln_bnd_unit_roundoff(b->r->dtype[id]));
  }
  b->u_in = umax;
}

/* An error bound that is zero everywhere is no bound: the value is exact. */
static void drop_if_zero(kiln_tensor **e) {
  if (!*e) return;
  const double *d = (*e)->data;
  for (int64_t i = 0; i < (*e)->numel; i++)
    if (d[i] != 0) return;
  kiln_tensor_free(*e);
  *e = NULL;
}

/* Where values that no bounded node produces come from (kiln_vref_compute_local). */
typedef struct ext_source {
  kiln_val *(*lookup)(void *user, int value_id);
  void *user;
  bool stored; /* outside values and constants carry their dtype's rounding as error */
  const kiln_tensor *(*extra_err)(void *user, int value_id); /* more error (stored mode) */
} ext_source;

/* The rounding of a float value to its dtype: u |x| (1 + 2u) + tiny per element (NULL for
 * other types). */
static kiln_tensor *storage_err(const kiln_val *v, kiln_dtype dtype) {
  if (!v || v->kind != KILN_TYPE_TENSOR || !v->t || v->t->dtype != KILN_F64 ||
      !kiln_dtype_is_float(dtype))
    return NULL;
  double u = kiln_bnd_unit_roundoff(dtype), tiny = kiln_bnd_tiny(dtype);
  kiln_tensor *e = kiln_bnd_zeros_like(v->t);
  const double *x = v->t->data;
  double *ed = e->data;
  for (int64_t i = 0; i < e->numel; i++)
    ed[i] = isfinite(x[i]) ? u * fabs(x[i]) * (1 + 2 * u) + tiny : 0;
  return e;
}

/* The value of a constant, an input or (local references) an outside value, widened, on
 * first use; exact (no error), or with its storage rounding when ext->stored. */
static kiln_status value_of(kiln_vref *r, const ext_source *ext, int id, kiln_val **out) {
  bool fresh = !r->val[id];
  if (!r->val[id] && r->g->values.data[id].kind == KILN_VALUE_CONST) {
    kiln_val v = {KILN_TYPE_TENSOR, r->g->values.data[id].data, NULL, false, KILN_UNDEFINED};
    r->val[id] = map_val(&v, KILN_UNDEFINED);
    r->dtype[id] = v.t ? v.t->dtype : KILN_UNDEFINED;
  }
  if (!r->val[id] && ext && ext->lookup) {
    const kiln_val *x = ext->lookup(ext->user, id);
    r->val[id] = map_val(x, 0);
    kiln_dtype declared = r->g->values.data[id].type.dtype;
    r->dtype[id] = declared ? declared : kiln_bnd_val_dtype(x);
  }
  if (!r->val[id]) return kiln_invalid("value '%s' is not available", r->g->values.data[id].name);
  if (fresh && ext && ext->stored && !r->err[id]) {
    r->err[id] = storage_err(r->val[id], r->g->values.data[id].type.dtype);
    const kiln_tensor *more = ext->extra_err ? ext->extra_err(ext->user, id) : NULL;
    if (more && r->err[id] && more->numel == r->err[id]->numel && more->dtype == KILN_F64)
      for (int64_t i = 0; i < more->numel; i++)
        ((double *)r->err[id]->data)[i] += ((const double *)more->data)[i];
  }
  *out = r->val[id];
  return KILN_OK;
}

/* Binds the values of g that the subgraphs of n read (OUTER values), for local references. */
static void bind_outers(kiln_vref *r, const ext_source *ext, const kiln_node *n) {
  kiln_outer_iter it = kiln_outer_reads(r->g, n);
  for (int o; ext && kiln_outer_next(&it, &o);) {
    kiln_val *tmp;
    if (o < r->n_values) kiln_status_free(value_of(r, ext, o, &tmp));
  }
}

static kiln_status bound_node(kiln_vref *r, const ext_source *ext, int ni) {
  const kiln_node *n = &r->g->nodes.data[ni];
  int nin = n->n_inputs, nout = n->n_outputs;
  bnd_node b = {r, r->g, ni, n, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0};
  b.in = kiln_xcalloc((size_t)nin + 1, sizeof *b.in);
  b.ein = kiln_xcalloc((size_t)nin + 1, sizeof *b.ein);
  b.out = kiln_xcalloc((size_t)nout + 1, sizeof *b.out);
  b.eout = kiln_xcalloc((size_t)nout + 1, sizeof *b.eout);
  b.u_out = kiln_xcalloc((size_t)nout + 1, sizeof *b.u_out);
  b.tiny_out = kiln_xcalloc((size_t)nout + 1, sizeof *b.tiny_out);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < nin; i++) {
    if (n->inputs[i] < 0) continue;
    st = value_of(r, ext, n->inputs[i], &b.in[i]);
    b.ein[i] = r->err[n->inputs[i]];
  }
  node_unit_roundoff(&b);
  kiln_tensor **rounded = st ? NULL : kiln_bnd_policy_inputs(&b);
  if (!st) bind_outers(r, ext, n);
  if (!st) st = kiln_op_check(r->g, n);
  if (!st) st = kiln_node_has_subgraph(n) ? bound_sub_node(&b) : kiln_bnd_apply(&b);
  if (!st && !kiln_node_has_subgraph(n)) kiln_bnd_policy_attrs(&b);
  if (!st) kiln_bnd_note_dtypes(r, n, b.out);
  if (!st) count_nonfinite(&b);
  if (!st) count_near_limit(&b);
  for (int k = 0; !st && k < nout; k++) drop_if_zero(&b.eout[k]);
  for (int k = 0; k < nout; k++) {
    int id = n->outputs[k];
    if (!st && id >= 0 && !r->val[id]) {
      r->zloose[id] = kiln_bnd_zero_loose(&b, k);
      r->val[id] = b.out[k], r->err[id] = b.eout[k];
    } else {
      kiln_val_free(b.out[k]);
      kiln_tensor_free(b.eout[k]);
    }
  }
  for (int i = 0; rounded && i < nin; i++) kiln_tensor_free(rounded[i]);
  free(rounded);
  r->n_unstable += b.n_unstable;
  r->n_nonfinite += b.n_nonfinite;
  free(b.in), free(b.ein), free(b.out), free(b.eout), free(b.u_out), free(b.tiny_out);
  return st;
}

static kiln_vref *vref_new(const kiln_graph *g) {
  kiln_vref *r = kiln_xcalloc(1, sizeof *r);
  r->g = g;
  r->n_values = g->values.len;
  r->val = kiln_xcalloc((size_t)r->n_values + 1, sizeof *r->val);
  r->err = kiln_xcalloc((size_t)r->n_values + 1, sizeof *r->err);
  r->dtype = kiln_xcalloc((size_t)r->n_values + 1, sizeof *r->dtype);
  r->zloose = kiln_xcalloc((size_t)r->n_values + 1, sizeof *r->zloose);
  return r;
}

/* Bounds the nodes with run[node] set, in order. */
static kiln_status run_nodes(kiln_vref *r, const ext_source *ext, const bool *run) {
  kiln_status st = KILN_OK;
  for (int ni = 0; !st && ni < r->g->nodes.len; ni++)
    if (run[ni]) st = bound_node(r, ext, ni);
  return st;
}

kiln_status kiln_vref_compute(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                              kiln_vref **out) {
  return kiln_vref_compute_prec(g, n_in, inputs, NULL, out);
}

kiln_status kiln_vref_compute_prec(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                                   const kiln_precision_policy *p, kiln_vref **out) {
  *out = NULL;
  if (g->parent) return kiln_invalid("kiln_vref_compute: '%s' is not a root graph", g->name);
  if (n_in != g->inputs.len)
    return kiln_invalid("graph '%s' has %d inputs, %d given", g->name, g->inputs.len, n_in);
  kiln_vref *r = vref_new(g);
  r->precision = p;
  kiln_status st = KILN_OK;
  for (int i = 0; i < n_in && !st; i++) {
    if (!inputs[i]) st = kiln_invalid("graph input %d is missing", i);
    else r->val[g->inputs.data[i]] = map_val(inputs[i], KILN_UNDEFINED);
    if (!st) r->dtype[g->inputs.data[i]] = kiln_bnd_val_dtype(inputs[i]);
  }
  bool *need = needed_values(g);
  bool *run = kiln_xcalloc((size_t)g->nodes.len + 1, 1);
  for (int ni = 0; ni < g->nodes.len; ni++) {
    const kiln_node *n = &g->nodes.data[ni];
    for (int k = 0; k < n->n_outputs; k++) run[ni] |= n->outputs[k] >= 0 && need[n->outputs[k]];
  }
  if (!st) st = run_nodes(r, NULL, run);
  for (int i = 0; !st && i < g->outputs.len; i++) {
    kiln_val *v;
    st = value_of(r, NULL, g->outputs.data[i], &v);
  }
  free(need);
  free(run);
  if (st) {
    kiln_vref_free(r);
    return st;
  }
  *out = r;
  return KILN_OK;
}

static kiln_status compute_local(const kiln_graph *g, const bool *nodes,
                                 kiln_val *(*lookup)(void *user, int value_id),
                                 const kiln_tensor *(*extra_err)(void *user, int value_id),
                                 void *user, bool stored, const kiln_precision_policy *p,
                                 kiln_vref **out) {
  *out = NULL;
  if (g->parent) return kiln_invalid("kiln_vref_compute_local: '%s' is not a root graph", g->name);
  kiln_vref *r = vref_new(g);
  r->precision = p;
  ext_source ext = {lookup, user, stored, extra_err};
  kiln_status st = run_nodes(r, &ext, nodes);
  if (st) {
    kiln_vref_free(r);
    return st;
  }
  *out = r;
  return KILN_OK;
}

kiln_status kiln_vref_compute_local(const kiln_graph *g, const bool *nodes,
                                    kiln_val *(*lookup)(void *user, int value_id), void *user,
                                    kiln_vref **out) {
  return compute_local(g, nodes, lookup, NULL, user, false, NULL, out);
}

kiln_status kiln_vref_compute_local_prec(const kiln_graph *g, const bool *nodes,
                                         kiln_val *(*lookup)(void *user, int value_id), void *user,
                                         const kiln_precision_policy *p, kiln_vref **out) {
  return compute_local(g, nodes, lookup, NULL, user, false, p, out);
}

kiln_status kiln_vref_compute_local_stored(
    const kiln_graph *g, const bool *nodes, kiln_val *(*lookup)(void *user, int value_id),
    const kiln_tensor *(*extra_err)(void *user, int value_id), void *user, kiln_vref **out) {
  return compute_local(g, nodes, lookup, extra_err, user, true, NULL, out);
}

void kiln_vref_free(kiln_vref *r) {
  if (!r) return;
  for (int i = 0; i < r->n_values; i++) {
    kiln_val_free(r->val[i]);
    kiln_tensor_free(r->err[i]);
    kiln_tensor_free(r->zloose[i]);
  }
  free(r->val);
  free(r->err);
  free(r->dtype);
  free(r->zloose);
  free(r);
}
