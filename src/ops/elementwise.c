/* Ops of the 'elementwise' family (see src/graph/ops.def): their arity, type
 * and shape inference, and the registration of their reference kernels.
 *
 * Kernels: elementwise_map.c (the broadcasting loop and attribute reading),
 * elementwise_fns.c (the scalar function of each op), elementwise_cast.c (Cast,
 * CastLike, BitCast, Identity, Where). */
#include "attr_decode.h"
#include "ew_internal.h"
#include "op_desc.h"

/* ---- inference ---- */

static bool tensor_in(const kiln_infer_ctx *ctx, int i) {
  return i < ctx->n_in && ctx->in[i] && ctx->in[i]->kind == KILN_TYPE_TENSOR;
}

/* Output 0 has input 0's shape and the given dtype. */
static kiln_status infer_like0(kiln_infer_ctx *ctx, kiln_dtype dtype) {
  kiln_attrs_ew a; /* an attribute out of its range (IsInf detect_negative=-2) is invalid here,
                      not first in a kernel */
  KILN_TRY(kiln_attrs_ew_decode(ctx->node, &a));
  if (!tensor_in(ctx, 0)) return KILN_OK;
  ctx->out[0] = *ctx->in[0];
  ctx->out[0].dtype = dtype;
  return KILN_OK;
}

static bool uses_legacy_bcast(const kiln_infer_ctx *ctx) {
  const kiln_attr *a = kiln_node_attr(ctx->node, "broadcast");
  return ctx->node->opset < 7 && a && a->kind == KILN_ATTR_INT && a->i;
}

/* Output 0 is the broadcast of all inputs, with the given dtype. */
static kiln_status infer_bcast(kiln_infer_ctx *ctx, kiln_dtype dtype) {
  kiln_attrs_ew a;
  KILN_TRY(kiln_attrs_ew_decode(ctx->node, &a));
  for (int i = 0; i < ctx->n_in; i++)
    if (!tensor_in(ctx, i)) return KILN_OK;
  if (uses_legacy_bcast(ctx)) return infer_like0(ctx, dtype);
  kiln_type t;
  KILN_TRY(kiln_infer_broadcast(ctx, ctx->n_in, &t));
  t.kind = KILN_TYPE_TENSOR;
  t.dtype = dtype;
  ctx->out[0] = t;
  return KILN_OK;
}

static kiln_status infer_same(kiln_infer_ctx *ctx) {
  return tensor_in(ctx, 0) ? infer_like0(ctx, ctx->in[0]->dtype) : KILN_OK;
}

/* PRelu: X's type; the slope must broadcast to X one way (a rank above X's, or a known dim
 * that is neither 1 nor X's, is invalid). PRelu-1/6 also take one slope per channel. */
static kiln_status infer_prelu(kiln_infer_ctx *ctx) {
  if (!tensor_in(ctx, 0) || !tensor_in(ctx, 1) || ctx->in[0]->rank < 0 || ctx->in[1]->rank < 0)
    return infer_same(ctx);
  const kiln_type *x = ctx->in[0], *s = ctx->in[1];
  bool channel = ctx->node->opset < 7 && s->rank == 1 && x->rank >= 2;
  bool ok = channel || s->rank <= x->rank;
  for (int d = 0; ok && !channel && d < s->rank; d++) {
    const kiln_dim *sd = &s->dims[s->rank - 1 - d], *xd = &x->dims[x->rank - 1 - d];
    ok = sd->value < 0 || sd->value == 1 || xd->value < 0 || sd->value == xd->value;
  }
  if (!ok) {
    char lb[200];
    return kiln_invalid("%s: the slope does not broadcast to X (unidirectional broadcasting)",
                        kiln_node_label(ctx->node, lb, sizeof lb));
  }
  return infer_same(ctx);
}

static kiln_status infer_bool(kiln_infer_ctx *ctx) {
  return infer_like0(ctx, KILN_BOOL);
}

/* Inputs from..to-1 share one type variable T: a known dtype that differs from input from's
 * is invalid (Sub(f64, f16) had been typed and failed only in the reference kernel). */
static kiln_status same_dtype(const kiln_infer_ctx *ctx, int from, int to) {
  for (int i = from + 1; i < to && i < ctx->n_in; i++) {
    if (!tensor_in(ctx, from) || !tensor_in(ctx, i)) continue;
    kiln_dtype a = ctx->in[from]->dtype, b = ctx->in[i]->dtype;
    if (a && b && a != b) {
      char lb[200];
      return kiln_invalid("%s: input %d has type %s, input %d has %s (they share one type)",
                          kiln_node_label(ctx->node, lb, sizeof lb), i, kiln_dtype_name(b), from,
                          kiln_dtype_name(a));
    }
  }
  return KILN_OK;
}

static kiln_status infer_bcast_same(kiln_infer_ctx *ctx) {
  if (ctx->node->op != KILN_OP_Pow) KILN_TRY(same_dtype(ctx, 0, ctx->n_in)); /* Pow: T, T1 */
  return tensor_in(ctx, 0) ? infer_bcast(ctx, ctx->in[0]->dtype) : KILN_OK;
}

static kiln_status infer_bcast_bool(kiln_infer_ctx *ctx) {
  KILN_TRY(same_dtype(ctx, 0, ctx->n_in));
  return infer_bcast(ctx, KILN_BOOL);
}

static kiln_status infer_where(kiln_infer_ctx *ctx) {
  KILN_TRY(same_dtype(ctx, 1, 3));
  return tensor_in(ctx, 1) ? infer_bcast(ctx, ctx->in[1]->dtype) : KILN_OK;
}

static kiln_status infer_cast(kiln_infer_ctx *ctx) {
  kiln_dtype to;
  kiln_status st = kiln_ew_cast_to(ctx->node, &to);
  if (st) {
    char buf[160];
    return kiln_status_annotate(st, "%s", kiln_node_label(ctx->node, buf, sizeof buf));
  }
  return infer_like0(ctx, to);
}

static kiln_status infer_castlike(kiln_infer_ctx *ctx) {
  return tensor_in(ctx, 1) ? infer_like0(ctx, ctx->in[1]->dtype) : KILN_OK;
}

static kiln_status infer_identity(kiln_infer_ctx *ctx) {
  if (ctx->n_in >= 1 && ctx->in[0] && ctx->in[0]->kind != KILN_TYPE_UNKNOWN)
    ctx->out[0] = *ctx->in[0];
  return KILN_OK;
}

/* ---- registration ---- */

static void set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, kiln_infer_fn infer, int min_in,
                int max_in) {
  table[op] = (kiln_op_impl){eval, infer, min_in, max_in, 1, 1};
}

void kiln_ops_register_elementwise(kiln_op_impl *table) {
  /* the ops of the common forms, by their descriptor (op_desc.c) */
  for (int op = 1; op < KILN_OP_COUNT; op++) {
    switch (kiln_op_desc_of((kiln_op)op)->form) {
    case KILN_EWF_UNARY: set(table, (kiln_op)op, kiln_ew_eval_map, infer_same, 1, 1); break;
    case KILN_EWF_BINARY: set(table, (kiln_op)op, kiln_ew_eval_map, infer_bcast_same, 2, 2); break;
    case KILN_EWF_COMPARE: set(table, (kiln_op)op, kiln_ew_eval_map, infer_bcast_bool, 2, 2); break;
    case KILN_EWF_VARIADIC:
      set(table, (kiln_op)op, kiln_ew_eval_map, infer_bcast_same, 1, -1);
      break;
    default: break;
    }
  }
  set(table, KILN_OP_IsNaN, kiln_ew_eval_map, infer_bool, 1, 1);
  set(table, KILN_OP_IsInf, kiln_ew_eval_map, infer_bool, 1, 1);
  set(table, KILN_OP_Clip, kiln_ew_eval_map, infer_same, 1, 3);
  set(table, KILN_OP_PRelu, kiln_ew_eval_map, infer_prelu, 2, 2); /* slope broadcasts to X */
  set(table, KILN_OP_Where, kiln_ew_eval_where, infer_where, 3, 3);
  set(table, KILN_OP_Cast, kiln_ew_eval_cast, infer_cast, 1, 1);
  set(table, KILN_OP_CastLike, kiln_ew_eval_castlike, infer_castlike, 2, 2);
  set(table, KILN_OP_BitCast, kiln_ew_eval_bitcast, infer_cast, 1, 1);
  set(table, KILN_OP_Identity, kiln_ew_eval_identity, infer_identity, 1, 1);
}
