/* Private helpers of the 'control' family: control.c (If, Optional*, registration),
 * control_loop.c (Loop, Scan, SequenceMap) and control_seq.c (the Sequence* ops,
 * SplitToSequence, ConcatFromSequence). */
#ifndef KILN_CONTROL_INTERNAL_H
#define KILN_CONTROL_INTERNAL_H

#include "ops.h"

void kiln_ctl_register_loops(kiln_op_impl *table);
void kiln_ctl_register_seq(kiln_op_impl *table);

/* Reads input i as an integer scalar (a tensor of one element and integer type). */
KILN_MUST_USE kiln_status kiln_ctl_int_scalar(const kiln_eval_ctx *ctx, int i, const char *what,
                                              int64_t *out);
/* Reads input i as a boolean scalar (one element, any numeric type; nonzero is true). */
KILN_MUST_USE kiln_status kiln_ctl_bool_scalar(const kiln_eval_ctx *ctx, int i, const char *what,
                                               bool *out);

/* Copies n elements (strings are duplicated; the destination slots must be empty). */
void kiln_ctl_copy(kiln_dtype dt, void *dst, int64_t doff, const void *src, int64_t soff,
                   int64_t n);
/* The sub-tensor of x at position idx along axis, with that axis removed. */
KILN_MUST_USE kiln_status kiln_ctl_slice(const kiln_tensor *x, int axis, int64_t idx,
                                         kiln_tensor **out);
/* Copies src into dst at position idx along axis; src has dst's shape without that axis
 * (checked by the caller). */
void kiln_ctl_place(kiln_tensor *dst, int axis, int64_t idx, const kiln_tensor *src);
/* Whether src has the shape of dst with axis removed (and the same dtype). */
bool kiln_ctl_fits(const kiln_tensor *dst, int axis, const kiln_tensor *src);

/* Frees n values and clears the array. */
void kiln_ctl_free_vals(kiln_val **v, int n);
/* A new tensor of shape [0, dims of t...] (t: a static tensor type), or [0] when the
 * shape is not known; dtype from t, else fallback. For a body output that never ran. */
KILN_MUST_USE kiln_status kiln_ctl_empty_stack(const kiln_type *t, kiln_dtype fallback, int axis,
                                               kiln_tensor **out);
/* "tensor", "sequence", "optional" or "missing" for messages. */
const char *kiln_ctl_kind_name(const kiln_val *v);

/* Type inference helpers. Sets out to the type both a and b fit (unknown dims where they
 * disagree). */
void kiln_ctl_type_join(const kiln_type *a, const kiln_type *b, kiln_type *out);
/* The graph attribute name of ctx's node (NULL when absent). */
const kiln_graph *kiln_ctl_infer_graph(const kiln_infer_ctx *ctx, const char *name);

#endif
