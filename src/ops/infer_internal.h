/* Helpers of the best-effort shape and type inference of the quant, seqmodel, signal, text,
 * random, loss and vision families (each family file holds the infer functions of its ops).
 * Inference there fills the dtype and whatever dims follow from the input types, attributes
 * and constant inputs, leaves data-dependent dims unknown, and never rejects a node (the
 * kernel reports bad inputs with the actual values). Symbolic dims of inputs are carried
 * over. Private to src/ops. */
#ifndef KILN_OPS_INFER_INTERNAL_H
#define KILN_OPS_INFER_INTERNAL_H

#include <string.h>

#include "kernel_internal.h"

static inline const kiln_type *tin(const kiln_infer_ctx *ctx, int i) {
  if (i >= ctx->n_in || !ctx->in[i] || ctx->in[i]->kind != KILN_TYPE_TENSOR) return NULL;
  return ctx->in[i];
}

static inline const kiln_type *tin_ranked(const kiln_infer_ctx *ctx, int i) {
  const kiln_type *t = tin(ctx, i);
  return t && t->rank >= 0 ? t : NULL;
}

static inline kiln_dim dunk(void) {
  return (kiln_dim){-1, NULL};
}
static inline kiln_dim dval(int64_t v) {
  return (kiln_dim){v, NULL};
}
static inline bool dknown(kiln_dim d) {
  return d.value >= 0;
}

static inline kiln_dim dim_of(const kiln_type *t, int i) {
  return t && t->rank > i && i >= 0 ? t->dims[i] : dunk();
}

/* Output i: a tensor of dtype and rank whose dims are dims[] (NULL = all unknown). */
static inline void set_out(kiln_infer_ctx *ctx, int i, kiln_dtype dt, int rank,
                           const kiln_dim *dims) {
  if (i >= ctx->n_out || rank > KILN_MAX_RANK) return;
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_TENSOR;
  t.dtype = dt;
  t.rank = rank;
  for (int d = 0; d < rank; d++) t.dims[d] = dims ? dims[d] : dunk();
  ctx->out[i] = t;
}

static inline void set_like(kiln_infer_ctx *ctx, int i, kiln_dtype dt, const kiln_type *like) {
  if (!like || i >= ctx->n_out) return;
  kiln_type t = *like;
  t.dtype = dt;
  ctx->out[i] = t;
}

static inline int64_t attr_int(const kiln_infer_ctx *ctx, const char *name, int64_t dflt) {
  int64_t v = dflt;
  kiln_status st = kiln_node_int(ctx->node, name, dflt, &v);
  if (st) kiln_status_free(st), v = dflt;
  return v;
}

static inline const char *attr_str(const kiln_infer_ctx *ctx, const char *name, const char *dflt) {
  const char *v = dflt;
  kiln_status st = kiln_node_string(ctx->node, name, dflt, &v);
  if (st) kiln_status_free(st), v = dflt;
  return v;
}

/* The single value of constant input i, if known. */
static inline bool const_i64(const kiln_infer_ctx *ctx, int i, int64_t *out) {
  if (i >= ctx->n_in || !ctx->cin[i] || ctx->cin[i]->numel != 1) return false;
  const kiln_tensor *t = ctx->cin[i];
  if (kiln_dtype_class_of(t->dtype) == KILN_CLASS_NONE || t->dtype == KILN_STRING) return false;
  *out = kiln_load_i64(t->dtype, t->data, 0);
  return true;
}

static inline kiln_dtype valid_dtype(int64_t dt, kiln_dtype dflt) {
  return kiln_dtype_valid((int)dt) ? (kiln_dtype)dt : dflt;
}

#endif
