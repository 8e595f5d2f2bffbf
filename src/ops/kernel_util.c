/* Helpers shared by the kernels of the quant, seqmodel, signal, text, random, loss and
 * vision families (kernel_internal.h): table entries, optional outputs, scalar inputs,
 * rounding to a float dtype, checked sizes. */
#include <math.h>
#include <stdlib.h>

#include "kernel_internal.h"

void kiln_kern_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, int min_in, int max_in,
                   int min_out, int max_out) {
  table[op].eval = eval;
  table[op].min_in = min_in;
  table[op].max_in = max_in;
  table[op].min_out = min_out;
  table[op].max_out = max_out;
}

bool kiln_kern_want_out(const kiln_eval_ctx *ctx, int i) {
  if (i >= ctx->n_out) return false;
  return i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

double kiln_kern_round_to(kiln_dtype t, double v) {
  switch (t) {
  case KILN_F32: return (double)(float)v;
  case KILN_F16: {
    uint16_t h = kiln_f64_to_f16(v);
    return (double)kiln_f16_to_f32(h);
  }
  case KILN_BF16: {
    /* double -> float -> bf16 could round twice; go through the store helper instead. */
    uint16_t b;
    kiln_store_f64(KILN_BF16, &b, 0, v);
    return kiln_load_f64(KILN_BF16, &b, 0);
  }
  default: return v;
  }
}

kiln_status kiln_kern_need_float(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what) {
  if (!kiln_dtype_is_float(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be a float tensor, got %s", what,
                           kiln_dtype_name(t->dtype));
  return KILN_OK;
}

kiln_status kiln_kern_load_all_f64(const kiln_eval_ctx *ctx, const kiln_tensor *t, double **out) {
  *out = NULL;
  kiln_dtype_class c = kiln_dtype_class_of(t->dtype);
  if (c == KILN_CLASS_NONE || c == KILN_CLASS_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "expected a numeric tensor, got %s",
                           kiln_dtype_name(t->dtype));
  if (t->numel < 0 || (uint64_t)t->numel > SIZE_MAX / sizeof(double))
    return kiln_eval_error(ctx, KILN_ERR_OOM, "tensor too large");
  double *d = kiln_xmalloc((size_t)(t->numel ? t->numel : 1) * sizeof(double));
  for (int64_t i = 0; i < t->numel; i++) d[i] = kiln_load_f64(t->dtype, t->data, (size_t)i);
  *out = d;
  return KILN_OK;
}

static kiln_status scalar_tensor(const kiln_eval_ctx *ctx, int i, bool *present,
                                 const kiln_tensor **out) {
  *out = kiln_eval_in(ctx, i);
  *present = *out != NULL;
  if (!*present) return KILN_OK;
  if ((*out)->numel != 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d must hold one element, has %lld", i,
                           (long long)(*out)->numel);
  kiln_dtype_class c = kiln_dtype_class_of((*out)->dtype);
  if (c == KILN_CLASS_NONE || c == KILN_CLASS_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d must be numeric", i);
  return KILN_OK;
}

kiln_status kiln_kern_scalar_i64(const kiln_eval_ctx *ctx, int i, bool *present, int64_t *out) {
  const kiln_tensor *t;
  KILN_TRY(scalar_tensor(ctx, i, present, &t));
  if (*present) *out = kiln_load_i64(t->dtype, t->data, 0);
  return KILN_OK;
}

kiln_status kiln_kern_scalar_f64(const kiln_eval_ctx *ctx, int i, bool *present, double *out) {
  const kiln_tensor *t;
  KILN_TRY(scalar_tensor(ctx, i, present, &t));
  if (*present) *out = kiln_load_f64(t->dtype, t->data, 0);
  return KILN_OK;
}

kiln_status kiln_kern_mul(const kiln_eval_ctx *ctx, int64_t n, int64_t m, int64_t *out) {
  if (n < 0 || m < 0 || kiln_mul_overflow_i64(n, m, out))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "size %lld x %lld overflows", (long long)n,
                           (long long)m);
  return KILN_OK;
}
