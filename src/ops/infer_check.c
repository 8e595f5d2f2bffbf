/* Attribute checks of inference: the attribute values (axes, block sizes, group counts) that
 * the reference kernel would reject when it runs, rejected before anything is compiled.
 *
 * Without them an invalid node looked like a node without a lowering: a Softmax with axis 9
 * on a rank-2 input compiled "successfully" into a reference fallback (the compute
 * definition declined it) and failed only when run, and a DepthToSpace whose blocksize does
 * not divide the channels compiled into a kernel that read the wrong elements. Each check
 * states the same condition as the op's reference kernel, with the facts inference has (the
 * input ranks and static extents, constant inputs); a check whose facts are not known yet
 * (an unknown rank, a symbolic extent, a computed input) passes, and the reference kernel
 * still checks the values when it runs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attr_decode.h"
#include "ops.h"

typedef struct check_ctx {
  const kiln_graph *g;
  const kiln_node *n;
} check_ctx;

static kiln_status bad(const check_ctx *c, const char *fmt, ...) {
  char label[160], msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_invalid("%s: %s", kiln_node_label(c->n, label, sizeof label), msg);
}

/* The type of input i when it is a tensor of known rank, else NULL. */
static const kiln_type *in_type(const check_ctx *c, int i) {
  if (i >= c->n->n_inputs || c->n->inputs[i] < 0) return NULL;
  const kiln_type *t = &c->g->values.data[c->n->inputs[i]].type;
  return t->kind == KILN_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

/* The extent of dimension d of t, or -1 when it is not known. */
static int64_t extent(const kiln_type *t, int d) {
  return d < t->rank && !t->dims[d].sym ? t->dims[d].value : -1;
}

/* The value of input i when it is a constant integer scalar (or one-element tensor). */
static bool const_scalar(const check_ctx *c, int i, int64_t *out) {
  if (i >= c->n->n_inputs || c->n->inputs[i] < 0) return false;
  const kiln_value *v = &c->g->values.data[c->n->inputs[i]];
  const kiln_tensor *t = v->kind == KILN_VALUE_CONST ? v->data : NULL;
  if (!t || t->numel != 1 || t->rank > 1 || !kiln_dtype_is_int(t->dtype)) return false;
  *out = kiln_load_i64(t->dtype, t->data, 0);
  return true;
}

static kiln_status axis_in(const check_ctx *c, const char *what, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    return bad(c, "%s %lld is out of range for rank %d", what, (long long)axis, rank);
  return KILN_OK;
}

/* An int attribute `name` (default dflt) that must be an axis of input 0. */
static kiln_status attr_axis(const check_ctx *c, const char *name, int64_t dflt) {
  const kiln_type *x = in_type(c, 0);
  if (!x) return KILN_OK;
  int64_t a;
  KILN_TRY(kiln_node_int(c->n, name, dflt, &a));
  return axis_in(c, name, a, x->rank);
}

/* Softmax, LogSoftmax, Hardmax: axis (default 1 before opset 13, -1 after); a scalar input
 * takes axis 0 or -1. */
static kiln_status check_softmax(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0);
  if (!x) return KILN_OK;
  int64_t a;
  KILN_TRY(kiln_node_int(c->n, "axis", c->n->opset < 13 ? 1 : -1, &a));
  if (x->rank == 0 && (a == 0 || a == -1)) return KILN_OK;
  return axis_in(c, "axis", a, x->rank);
}

static kiln_status check_axis0(const check_ctx *c) {
  return attr_axis(c, "axis", 0);
}

static kiln_status check_axis_last(const check_ctx *c) {
  return attr_axis(c, "axis", -1);
}

/* CumSum, CumProd: the axis is input 1. */
static kiln_status check_cum(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0);
  int64_t a;
  if (!x || !const_scalar(c, 1, &a)) return KILN_OK;
  return axis_in(c, "axis", a, x->rank);
}

static kiln_status check_lp_norm(const check_ctx *c) {
  int64_t p;
  KILN_TRY(kiln_node_int(c->n, "p", 2, &p));
  if (p != 1 && p != 2) return bad(c, "p must be 1 or 2 (it is %lld)", (long long)p);
  return attr_axis(c, "axis", -1);
}

/* MeanVarianceNormalization: axes (default 0, 2, 3). */
static kiln_status check_mvn(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0);
  if (!x) return KILN_OK;
  static const int64_t dflt[3] = {0, 2, 3};
  const int64_t *axes;
  int n;
  KILN_TRY(kiln_node_ints(c->n, "axes", &axes, &n));
  if (n < 0) axes = dflt, n = 3;
  for (int i = 0; i < n; i++) KILN_TRY(axis_in(c, "axis", axes[i], x->rank));
  return KILN_OK;
}

/* DepthToSpace, SpaceToDepth: a positive blocksize that divides the channels (DepthToSpace,
 * by its square) or the height and width (SpaceToDepth) of a 4-D input. */
static kiln_status check_depth_space(const check_ctx *c) {
  int64_t b;
  KILN_TRY(kiln_node_int(c->n, "blocksize", 0, &b));
  if (b <= 0 || b > (int64_t)1 << 20) return bad(c, "blocksize %lld is not positive", (long long)b);
  const kiln_type *x = in_type(c, 0);
  if (!x) return KILN_OK;
  if (x->rank != 4) return bad(c, "the input must be 4-D (it has rank %d)", x->rank);
  if (c->n->op == KILN_OP_DepthToSpace) {
    if (extent(x, 1) >= 0 && extent(x, 1) % (b * b))
      return bad(c, "blocksize %lld: blocksize^2 does not divide the %lld channels", (long long)b,
                 (long long)extent(x, 1));
    return KILN_OK;
  }
  for (int d = 2; d < 4; d++)
    if (extent(x, d) >= 0 && extent(x, d) % b)
      return bad(c, "blocksize %lld does not divide the extent %lld of dimension %d", (long long)b,
                 (long long)extent(x, d), d);
  return KILN_OK;
}

static kiln_status check_lrn(const check_ctx *c) {
  int64_t size;
  KILN_TRY(kiln_node_int(c->n, "size", 0, &size));
  if (size <= 0 || size > INT32_MAX) return bad(c, "size must be positive");
  return KILN_OK;
}

static kiln_status check_group_norm(const check_ctx *c) {
  int64_t G;
  KILN_TRY(kiln_node_int(c->n, "num_groups", 0, &G));
  if (G <= 0) return bad(c, "num_groups %lld is not positive", (long long)G);
  const kiln_type *x = in_type(c, 0);
  int64_t C = x ? extent(x, 1) : -1;
  if (C >= 0 && C % G)
    return bad(c, "num_groups %lld does not divide %lld channels", (long long)G, (long long)C);
  return KILN_OK;
}

/* GatherND: 0 <= batch_dims < min(rank of data, rank of indices). */
static kiln_status check_gather_nd(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0), *idx = in_type(c, 1);
  if (!x || !idx) return KILN_OK;
  int64_t b;
  KILN_TRY(kiln_node_int(c->n, "batch_dims", 0, &b));
  int r = x->rank, q = idx->rank;
  if (q < 1 || b < 0 || b >= (q < r ? q : r))
    return bad(c, "batch_dims %lld is invalid for ranks %d and %d", (long long)b, r, q);
  return KILN_OK;
}

/* ScatterND: updates of shape indices.shape[:-1] + data.shape[m:] (m the index depth), each
 * extent compared where both are known. */
static kiln_status check_scatter_nd(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0), *idx = in_type(c, 1), *u = in_type(c, 2);
  if (!x || !idx || !u || idx->rank < 1) return KILN_OK;
  int64_t m = extent(idx, idx->rank - 1);
  if (m < 0) return KILN_OK;
  if (m > x->rank)
    return bad(c, "index depth %lld exceeds the data rank %d", (long long)m, x->rank);
  int want = idx->rank - 1 + x->rank - (int)m;
  if (u->rank != want)
    return bad(c, "updates have rank %d, indices and data need %d", u->rank, want);
  for (int d = 0; d < want; d++) {
    int64_t e = d < idx->rank - 1 ? extent(idx, d) : extent(x, (int)m + d - (idx->rank - 1));
    int64_t have = extent(u, d);
    if (e >= 0 && have >= 0 && e != have)
      return bad(c, "updates dim %d is %lld, indices and data need %lld", d, (long long)have,
                 (long long)e);
  }
  return KILN_OK;
}

/* LayerNormalization: Scale and B broadcast to the normalized dims X.shape[axis:]. */
static kiln_status check_layer_norm(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0);
  if (!x) return KILN_OK;
  int64_t axis;
  KILN_TRY(kiln_node_int(c->n, "axis", -1, &axis));
  KILN_TRY(axis_in(c, "axis", axis, x->rank));
  int a = (int)(axis < 0 ? axis + x->rank : axis), n = x->rank - a;
  for (int i = 1; i <= 2; i++) {
    const kiln_type *p = in_type(c, i);
    if (!p) continue;
    if (p->rank > n) return bad(c, "input %d has rank %d, the normalized dims %d", i, p->rank, n);
    for (int d = 0; d < p->rank; d++) {
      int64_t e = extent(p, d), want = extent(x, x->rank - p->rank + d);
      if (e >= 0 && e != 1 && want >= 0 && e != want)
        return bad(c, "input %d does not broadcast to the normalized dims", i);
    }
  }
  return KILN_OK;
}

/* TopK: a constant k in [0, extent of the axis]. */
static kiln_status check_topk(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0);
  int64_t k, axis;
  if (!x || !const_scalar(c, 1, &k)) return KILN_OK;
  KILN_TRY(kiln_node_int(c->n, "axis", -1, &axis));
  KILN_TRY(axis_in(c, "axis", axis, x->rank));
  int64_t n = extent(x, (int)(axis < 0 ? axis + x->rank : axis));
  if (k < 0 || (n >= 0 && k > n))
    return bad(c, "k=%lld out of range [0, %lld]", (long long)k, (long long)n);
  return KILN_OK;
}

/* ReverseSequence: rank >= 2, batch_axis and time_axis 0 and 1 in either order. */
static kiln_status check_reverse_sequence(const check_ctx *c) {
  int64_t ba, ta;
  KILN_TRY(kiln_node_int(c->n, "batch_axis", 1, &ba));
  KILN_TRY(kiln_node_int(c->n, "time_axis", 0, &ta));
  const kiln_type *x = in_type(c, 0);
  if ((x && x->rank < 2) || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return bad(c, "needs rank >= 2 and batch_axis/time_axis 0 and 1 (in any order)");
  return KILN_OK;
}

/* Tile: constant repeats are not negative. */
static kiln_status check_tile(const check_ctx *c) {
  if (c->n->n_inputs < 2 || c->n->inputs[1] < 0) return KILN_OK;
  const kiln_value *v = &c->g->values.data[c->n->inputs[1]];
  const kiln_tensor *t = v->kind == KILN_VALUE_CONST ? v->data : NULL;
  if (!t || !kiln_dtype_is_int(t->dtype)) return KILN_OK;
  for (int64_t i = 0; i < t->numel; i++)
    if (kiln_load_i64(t->dtype, t->data, (size_t)i) < 0)
      return bad(c, "repeat count %lld is negative",
                 (long long)kiln_load_i64(t->dtype, t->data, (size_t)i));
  return KILN_OK;
}

/* Conv: a positive group that divides the channels of X and the filters of W, with W's
 * channels per group times group equal to X's channels (known extents only). */
static kiln_status check_conv(const check_ctx *c) {
  int64_t G;
  KILN_TRY(kiln_node_int(c->n, "group", 1, &G));
  if (G <= 0) return bad(c, "group %lld is not positive", (long long)G);
  const kiln_type *x = in_type(c, 0), *w = in_type(c, 1);
  if (!x || !w || x->rank < 2 || w->rank < 2) return KILN_OK;
  int64_t C = extent(x, 1), M = extent(w, 0), Cg = extent(w, 1);
  if ((C >= 0 && C % G) || (M >= 0 && M % G) || (C >= 0 && Cg >= 0 && Cg * G != C))
    return bad(c, "channels do not match: X has %lld, W %lld per group, group=%lld", (long long)C,
               (long long)Cg, (long long)G);
  const kiln_attr *ks = kiln_node_attr(c->n, "kernel_shape");
  if (ks && ks->kind == KILN_ATTR_INTS) { /* the kernel's spatial extents, as W has them */
    if (ks->n != w->rank - 2)
      return bad(c, "kernel_shape has %d dims, W has %d spatial dims", ks->n, w->rank - 2);
    for (int d = 0; d < ks->n; d++)
      if (extent(w, 2 + d) >= 0 && ks->ints[d] != extent(w, 2 + d))
        return bad(c, "kernel_shape[%d] is %lld, W has %lld", d, (long long)ks->ints[d],
                   (long long)extent(w, 2 + d));
  }
  const kiln_type *b = in_type(c, 2); /* the bias: one value per output channel */
  if (b && (b->rank != 1 || (M >= 0 && extent(b, 0) >= 0 && extent(b, 0) != M)))
    return bad(c, "B must have shape [%lld]", (long long)M);
  return KILN_OK;
}

/* QuantizeLinear, DequantizeLinear: per-axis scales (more than one element, or blocked)
 * need an axis of a non-scalar input. */
static kiln_status check_quant_axis(const check_ctx *c) {
  const kiln_type *x = in_type(c, 0), *s = in_type(c, 1);
  if (!x || !s || !kiln_type_is_static(s)) return KILN_OK;
  int64_t numel = 1, block = 0, a;
  for (int d = 0; d < s->rank; d++) numel *= s->dims[d].value;
  if (c->n->opset >= 21) KILN_TRY(kiln_node_int(c->n, "block_size", 0, &block));
  if (numel == 1 && block == 0) return KILN_OK; /* per tensor */
  if (x->rank == 0) return KILN_OK;             /* the reference kernel says why */
  KILN_TRY(kiln_node_int(c->n, "axis", 1, &a));
  return axis_in(c, "axis", a, x->rank);
}

/* Cast and CastLike: round_mode one of its three names, saturate a flag (a near-copy moved
 * round_mode "up" to "u": only the reference kernel refused it). */
static kiln_status check_cast(const check_ctx *c) {
  kiln_attrs_cast a;
  return kiln_attrs_cast_decode(c->n, &a);
}

typedef kiln_status (*check_fn)(const check_ctx *c);

static const check_fn checks[KILN_OP_COUNT] = {
    [KILN_OP_Softmax] = check_softmax,
    [KILN_OP_LogSoftmax] = check_softmax,
    [KILN_OP_Hardmax] = check_softmax,
    [KILN_OP_GatherElements] = check_axis0,
    [KILN_OP_ScatterElements] = check_axis0,
    [KILN_OP_Scatter] = check_axis0,
    [KILN_OP_CumSum] = check_cum,
    [KILN_OP_CumProd] = check_cum,
    [KILN_OP_LpNormalization] = check_lp_norm,
    [KILN_OP_RMSNormalization] = check_axis_last,
    [KILN_OP_MeanVarianceNormalization] = check_mvn,
    [KILN_OP_DepthToSpace] = check_depth_space,
    [KILN_OP_SpaceToDepth] = check_depth_space,
    [KILN_OP_LRN] = check_lrn,
    [KILN_OP_GroupNormalization] = check_group_norm,
    [KILN_OP_GatherND] = check_gather_nd,
    [KILN_OP_ScatterND] = check_scatter_nd,
    [KILN_OP_TopK] = check_topk,
    [KILN_OP_LayerNormalization] = check_layer_norm,
    [KILN_OP_ReverseSequence] = check_reverse_sequence,
    [KILN_OP_Tile] = check_tile,
    [KILN_OP_Conv] = check_conv,
    [KILN_OP_QuantizeLinear] = check_quant_axis,
    [KILN_OP_DequantizeLinear] = check_quant_axis,
    [KILN_OP_Cast] = check_cast,
    [KILN_OP_CastLike] = check_cast,
};

/* Attributes that are flags wherever an op has them: the decoders (attr_decode.c, attr_flag)
 * take 0 or 1 and nothing else. Checked for every op, so that a flag of any value other than
 * 0 and 1 is rejected before anything is compiled, whichever op carries it (a
 * BatchNormalization with training_mode=-1 was accepted and failed only in the reference). */
static const char *const flag_attrs[] = {"allowzero",
                                         "ceil_mode",
                                         "count_include_pad",
                                         "detect_negative",
                                         "detect_positive",
                                         "exclusive",
                                         "fmod",
                                         "is_test",
                                         "keepdims",
                                         "new_axis",
                                         "noop_with_empty_axes",
                                         "reverse",
                                         "select_last_index",
                                         "storage_order",
                                         "training_mode",
                                         "transA",
                                         "transB",
                                         "upper"};

static kiln_status check_flags(const check_ctx *c) {
  for (int a = 0; a < c->n->n_attrs; a++) {
    const kiln_attr *at = &c->n->attrs[a];
    if (at->kind != KILN_ATTR_INT || at->i == 0 || at->i == 1) continue;
    for (size_t f = 0; f < sizeof flag_attrs / sizeof flag_attrs[0]; f++)
      if (!strcmp(at->name, flag_attrs[f]))
        return bad(c, "attribute '%s' must be 0 or 1, not %lld", at->name, (long long)at->i);
  }
  return KILN_OK;
}

kiln_status kiln_op_check_values(const kiln_graph *g, const kiln_node *n) {
  check_ctx c = {g, n};
  KILN_TRY(check_flags(&c));
  if ((unsigned)n->op >= KILN_OP_COUNT || !checks[n->op]) return KILN_OK;
  return checks[n->op](&c);
}
