/* Private interface of the 'shape' op family (shape*.c): the register function
 * of each file and the helpers they share. Not for use outside
 * src/ops/shape*.c.
 *
 * These ops move elements of any dtype. Data movement goes by element size
 * (memcpy), except for strings, whose char* elements are owned by their tensor
 * and are duplicated on copy. */
#ifndef KILN_OPS_SHAPE_INTERNAL_H
#define KILN_OPS_SHAPE_INTERNAL_H

#include "ops.h"

/* ---- registration (called from shape.c) ---- */
void kiln_shape_register_view(kiln_op_impl *table);   /* shape_view.c: Reshape, Transpose, ... */
void kiln_shape_register_slice(kiln_op_impl *table);  /* shape_slice.c: Concat, Split, Slice, Pad */
void kiln_shape_register_index(kiln_op_impl *table);  /* shape_index.c: Gather*, Scatter* */
void kiln_shape_register_gen(kiln_op_impl *table);    /* shape_gen.c: Constant, Range, ... */
void kiln_shape_register_select(kiln_op_impl *table); /* shape_select.c: NonZero, Unique, ... */
void kiln_shape_register_resize(kiln_op_impl *table); /* shape_resize.c: Resize, Upsample */
void kiln_shape_register_grid(kiln_op_impl *table);   /* shape_grid.c: GridSample, AffineGrid */

/* Sets the arity and functions of one op. */
void kiln_shape_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, kiln_infer_fn infer,
                    int min_in, int max_in, int min_out, int max_out);

/* ---- element movement ---- */
/* Copies n elements src[si..] to dst[di..] (same dtype); strings are duplicated
 * and the strings they replace are freed. */
void kiln_shape_copy(kiln_tensor *dst, int64_t di, const kiln_tensor *src, int64_t si, int64_t n);
/* out[i] = src[map[i]] for i < out->numel; map[i] < 0 leaves out[i] as it is.
 */
void kiln_shape_gather(kiln_tensor *out, const kiln_tensor *src, const int64_t *map);
/* Copies a strided view of src into out, whose elements are taken in the
 * row-major order of the view shape (rank, dims; same element count as out):
 * the element at view index v is src[base + sum_d v[d] * strides[d]]. Strides
 * may be zero or negative. */
void kiln_shape_copy_view(kiln_tensor *out, int rank, const int64_t *dims, const kiln_tensor *src,
                          int64_t base, const int64_t *strides);
/* Composes per-axis index maps: out_map[i] for output index (o_0..o_r-1)
 * (row-major over out_dims) is sum_d maps[d][o_d] * in_strides[d], or -1 when
 * any maps[d][o_d] is -1. */
void kiln_shape_axis_maps(int rank, const int64_t *out_dims, int64_t *const *maps,
                          const int64_t *in_strides, int64_t numel, int64_t *out_map);
/* Sets every element of t to element vi of v (same dtype). */
void kiln_shape_fill(kiln_tensor *t, const kiln_tensor *v, int64_t vi);
/* Replaces NULL strings of a string tensor by "" (no-op for other dtypes). */
void kiln_shape_fix_strings(kiln_tensor *t);
/* New tensor with t's data and a new shape of the same element count (data
 * copied). */
KILN_MUST_USE kiln_status kiln_shape_reshaped(const kiln_eval_ctx *ctx, int i, const kiln_tensor *t,
                                              int rank, const int64_t *dims);

/* ---- reading inputs ---- */
/* The values of an integer tensor of rank 0 or 1 as a malloc'd int64 array
 * (caller frees; never NULL). `what` names the input in errors. */
KILN_MUST_USE kiln_status kiln_shape_load_ints(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                               const char *what, int64_t **out, int *out_n);
/* The only element of a 0-D or 1-element tensor, as int64 (floats truncate). */
KILN_MUST_USE kiln_status kiln_shape_scalar_i64(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                                const char *what, int64_t *out);
/* Reads a list of axes for a tensor of the given rank: normalized to [0, rank),
 * no repeats. */
KILN_MUST_USE kiln_status kiln_shape_norm_axes(const kiln_eval_ctx *ctx, const int64_t *axes, int n,
                                               int rank, int *out);
/* malloc of count*elem bytes with overflow check (at least 1 byte). */
KILN_MUST_USE kiln_status kiln_shape_alloc(const kiln_eval_ctx *ctx, int64_t count, size_t elem,
                                           void **out);
/* Whether the node asks for output i (present and not omitted). */
bool kiln_shape_want_out(const kiln_eval_ctx *ctx, int i);

/* ---- inference helpers ---- */
/* The type of input i when it is a tensor type; NULL otherwise. */
const kiln_type *kiln_shape_in_type(const kiln_infer_ctx *ctx, int i);
/* Sets output i to a tensor of dtype dt with the given rank (-1 unknown) and
 * dims (NULL: all unknown). */
void kiln_shape_out_type(kiln_infer_ctx *ctx, int i, kiln_dtype dt, int rank, const kiln_dim *dims);
/* Whether the value of input i is a known constant; then loads up to max int
 * values. */
bool kiln_shape_const_ints(const kiln_infer_ctx *ctx, int i, int64_t *out, int max, int *out_n);
/* A known dim of extent v. */
kiln_dim kiln_shape_dim(int64_t v);
/* Product of dims [lo, hi): known when all are known; a lone unknown dim among
 * 1s is kept (with its symbol); unknown otherwise. */
kiln_dim kiln_shape_dim_prod(const kiln_dim *dims, int lo, int hi);
/* An invalid-input error prefixed with the node label (for code shared by eval
 * and infer). */
KILN_MUST_USE kiln_status kiln_shape_err(const kiln_node *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Infer function for ops whose output 0 has the type of input 0. */
KILN_MUST_USE kiln_status kiln_shape_infer_same(kiln_infer_ctx *ctx);

#endif
