/* Private helpers shared by the 'reduce' and 'nn' family files (reduce*.c, nn*.c).
 *
 * Float kernels convert whole tensors to double arrays once (kiln_nn_load_f64),
 * compute in double and round once into the output dtype (kiln_nn_store_f64).
 * Integer kernels work on int64 values with wrap-around (uint64) arithmetic. */
#ifndef KILN_OPS_NN_INTERNAL_H
#define KILN_OPS_NN_INTERNAL_H

#include "graph/window.h"
#include "ops.h"

/* ---- registration of the family files (called from reduce.c / nn.c) ---- */
void kiln_nn_register_reduce_axis(kiln_op_impl *table); /* reduce_axis.c */
void kiln_nn_register_conv(kiln_op_impl *table);        /* nn_conv.c */
void kiln_nn_register_conv_extra(kiln_op_impl *table);  /* nn_conv_extra.c */
void kiln_nn_register_pool(kiln_op_impl *table);        /* nn_pool.c */
void kiln_nn_register_norm(kiln_op_impl *table);        /* nn_norm.c */
void kiln_nn_register_matmul(kiln_op_impl *table);      /* nn_matmul.c */
void kiln_nn_register_einsum(kiln_op_impl *table);      /* nn_einsum.c */

/* Sets the arity and functions of one op. */
void kiln_nn_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, kiln_infer_fn infer,
                 int min_in, int max_in, int min_out, int max_out);

/* ---- buffers ---- */
/* malloc of count*elem bytes with overflow check; *out may be NULL for count 0. */
KILN_MUST_USE kiln_status kiln_nn_alloc(const kiln_eval_ctx *ctx, int64_t count, size_t elem,
                                        void **out);
/* The elements of t as a new double array (caller frees). */
KILN_MUST_USE kiln_status kiln_nn_load_f64(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                           double **out);
/* The elements of t as a new int64 array (caller frees); unsigned 64-bit values keep their bits. */
KILN_MUST_USE kiln_status kiln_nn_load_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                           int64_t **out);
/* Stores v[0..t->numel) into t, rounding (floats) or wrapping (integers). */
void kiln_nn_store_f64(kiln_tensor *t, const double *v);
void kiln_nn_store_i64(kiln_tensor *t, const int64_t *v);
/* Compares elements i and j of t in their own dtype (<0, 0, >0); NaN sorts above everything. */
int kiln_nn_cmp(const kiln_tensor *t, int64_t i, int64_t j);

/* map[i] = the offset, in the reduced tensor, of element i of a tensor of shape dims, where
 * the dims with mask[d] are reduced (the reduced tensor's shape is dims with those dims 1). */
KILN_MUST_USE kiln_status kiln_nn_reduce_map(const kiln_eval_ctx *ctx, int rank,
                                             const int64_t *dims, const bool *mask,
                                             int64_t **out_map);
/* map[i] = the offset in t of element i of the shape dims that t broadcasts to
 * (unidirectionally); error when it does not. */
KILN_MUST_USE kiln_status kiln_nn_bcast_map(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                            int rank, const int64_t *dims, int64_t **out_map);

/* ---- checks ---- */
/* Error unless t's dtype is a float type. */
KILN_MUST_USE kiln_status kiln_nn_need_float(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                             const char *what);
/* Error unless the rank of t is at least min_rank. */
KILN_MUST_USE kiln_status kiln_nn_need_rank(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                            int min_rank, const char *what);
/* Product of dims [lo, hi) of a shape (no overflow: the tensor exists). */
int64_t kiln_nn_prod(const int64_t *dims, int lo, int hi);

/* ---- attributes ---- */
/* Reads an ints attribute that, when present, must have n elements; otherwise fills dflt. */
KILN_MUST_USE kiln_status kiln_nn_ints_n(const kiln_node *node, const char *name, int n,
                                         int64_t dflt, int64_t *out, bool *present);
/* Reads an int64 scalar from a 0-D or 1-element tensor (any integer dtype). */
KILN_MUST_USE kiln_status kiln_nn_scalar_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                             const char *what, int64_t *out);

/* ---- convolution and pooling windows ---- */

typedef struct kiln_nn_window {
  int nsp;                /* spatial rank */
  kiln_auto_pad auto_pad; /* graph/window.h */
  bool ceil_mode;
  int64_t in[KILN_MAX_RANK];
  int64_t kernel[KILN_MAX_RANK];
  int64_t strides[KILN_MAX_RANK];
  int64_t dilations[KILN_MAX_RANK];
  int64_t pads[2 * KILN_MAX_RANK]; /* begins, then ends */
  int64_t out[KILN_MAX_RANK];
} kiln_nn_window;

/* Reads strides, dilations, pads, auto_pad and (if ceil_ok) ceil_mode of node for a window of
 * nsp spatial dims whose kernel is already in w->kernel and input sizes in w->in (an input
 * size < 0 means unknown: its output size is then -1). Computes w->pads (auto_pad resolved)
 * and w->out. */
KILN_MUST_USE kiln_status kiln_nn_window_init(const kiln_node *node, kiln_nn_window *w,
                                              bool ceil_ok);

/* ---- inference helpers ---- */
/* Error naming the node of an inference context. */
KILN_MUST_USE kiln_status kiln_nn_infer_error(const kiln_infer_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Error naming the value (and its type) when input i has a known dtype that is not a float
 * one: a model input declared with the wrong type shows before anything runs. */
KILN_MUST_USE kiln_status kiln_nn_infer_need_float(const kiln_infer_ctx *ctx, int i,
                                                   const char *what);
/* Input i's type when it is a tensor of known rank; NULL otherwise. */
const kiln_type *kiln_nn_infer_in(const kiln_infer_ctx *ctx, int i);
/* Sets output i to a tensor type of the given dtype and rank, dims unknown. */
void kiln_nn_infer_out_unknown(kiln_infer_ctx *ctx, int i, kiln_dtype dtype, int rank);
/* Conv-like output type: X [N, C, in...], W [M, ..., k...] -> [N, M, out...] (Conv,
 * ConvInteger, DeformConv). */
KILN_MUST_USE kiln_status kiln_nn_infer_conv(kiln_infer_ctx *ctx);
/* Output 0 is input 0's type (same dtype and shape): for elementwise-shaped ops. */
KILN_MUST_USE kiln_status kiln_nn_infer_same(kiln_infer_ctx *ctx);

#endif
