/* Ops of the 'elementwise' family (see src/graph/ops.def): their arity, type
 * and shape inference, and the registration of their reference kernels.
 *
 * Kernels: elementwise_map.c (the broadcasting loop and attribute reading),
 * elementwise_fns.c (the scalar function of each op), elementwise_cast.c (Cast,
 * CastLike, BitCast, Identity, Where). */
#include "ew_internal.h"

/* ---- inference ---- */

static bool tensor_in(const kiln_infer_ctx *ctx, int i) {
  return i < ctx->n_in && ctx->in[i] && ctx->in[i]->kind == KILN_TYPE_TENSOR;
}

/* Output 0 has input 0's shape and the given dtype. */
static kiln_status infer_like0(kiln_infer_ctx *ctx, kiln_dtype dtype) {
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

static kiln_status infer_bool(kiln_infer_ctx *ctx) {
  return infer_like0(ctx, KILN_BOOL);
}

static kiln_status infer_bcast_same(kiln_infer_ctx *ctx) {
  return tensor_in(ctx, 0) ? infer_bcast(ctx, ctx->in[0]->dtype) : KILN_OK;
}

static kiln_status infer_bcast_bool(kiln_infer_ctx *ctx) {
  return infer_bcast(ctx, KILN_BOOL);
}

static kiln_status infer_where(kiln_infer_ctx *ctx) {
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

static const kiln_op unary_same[] = {
    KILN_OP_Abs,   KILN_OP_Acos,  KILN_OP_Acosh,       KILN_OP_Asin,      KILN_OP_Asinh,
    KILN_OP_Atan,  KILN_OP_Atanh, KILN_OP_BitwiseNot,  KILN_OP_Ceil,      KILN_OP_Celu,
    KILN_OP_Cos,   KILN_OP_Cosh,  KILN_OP_Elu,         KILN_OP_Erf,       KILN_OP_Exp,
    KILN_OP_Floor, KILN_OP_Gelu,  KILN_OP_HardSigmoid, KILN_OP_HardSwish, KILN_OP_LeakyRelu,
    KILN_OP_Log,   KILN_OP_Mish,  KILN_OP_Neg,         KILN_OP_Not,       KILN_OP_Reciprocal,
    KILN_OP_Relu,  KILN_OP_Round, KILN_OP_Selu,        KILN_OP_Shrink,    KILN_OP_Sigmoid,
    KILN_OP_Sign,  KILN_OP_Sin,   KILN_OP_Sinh,        KILN_OP_Softplus,  KILN_OP_Softsign,
    KILN_OP_Sqrt,  KILN_OP_Swish, KILN_OP_Tan,         KILN_OP_Tanh,      KILN_OP_ThresholdedRelu,
};

static const kiln_op binary_same[] = {
    KILN_OP_Add, KILN_OP_BitShift, KILN_OP_BitwiseAnd, KILN_OP_BitwiseOr, KILN_OP_BitwiseXor,
    KILN_OP_Div, KILN_OP_Mod,      KILN_OP_Mul,        KILN_OP_Pow,       KILN_OP_Sub,
};

static const kiln_op binary_bool[] = {
    KILN_OP_And,  KILN_OP_Equal,       KILN_OP_Greater, KILN_OP_GreaterOrEqual,
    KILN_OP_Less, KILN_OP_LessOrEqual, KILN_OP_Or,      KILN_OP_Xor,
};

static const kiln_op variadic[] = {KILN_OP_Max, KILN_OP_Mean, KILN_OP_Min, KILN_OP_Sum};

#define EACH(arr, ...)                                                                             \
  for (size_t i_ = 0; i_ < sizeof(arr) / sizeof(arr[0]); i_++) set(table, arr[i_], __VA_ARGS__)

void kiln_ops_register_elementwise(kiln_op_impl *table) {
  EACH(unary_same, kiln_ew_eval_map, infer_same, 1, 1);
  EACH(binary_same, kiln_ew_eval_map, infer_bcast_same, 2, 2);
  EACH(binary_bool, kiln_ew_eval_map, infer_bcast_bool, 2, 2);
  EACH(variadic, kiln_ew_eval_map, infer_bcast_same, 1, -1);
  set(table, KILN_OP_IsNaN, kiln_ew_eval_map, infer_bool, 1, 1);
  set(table, KILN_OP_IsInf, kiln_ew_eval_map, infer_bool, 1, 1);
  set(table, KILN_OP_Clip, kiln_ew_eval_map, infer_same, 1, 3);
  set(table, KILN_OP_PRelu, kiln_ew_eval_map, infer_same, 2, 2); /* slope broadcasts to X */
  set(table, KILN_OP_Where, kiln_ew_eval_where, infer_where, 3, 3);
  set(table, KILN_OP_Cast, kiln_ew_eval_cast, infer_cast, 1, 1);
  set(table, KILN_OP_CastLike, kiln_ew_eval_castlike, infer_castlike, 2, 2);
  set(table, KILN_OP_BitCast, kiln_ew_eval_bitcast, infer_cast, 1, 1);
  set(table, KILN_OP_Identity, kiln_ew_eval_identity, infer_identity, 1, 1);
}
