/* Private to the non-contraction lowering (lower.c, lower_nest.c, lower_ew.c,
 * lower_reduce.c, lower_data.c, lower_pool.c, lower_index.c, lower_norm.c, lower_misc.c):
 * the op classes the fusion pass asks about, the per-class group lowerings and the
 * loop-nest helpers they share. */
#ifndef KILN_LOWER_OPS_H
#define KILN_LOWER_OPS_H

#include "lower_internal.h"

/* ---- op classes (what the fusion pass may group) ---- */
/* True when n is a reduction with a compute definition (Reduce*, ArgMax/ArgMin, Softmax,
 * LogSoftmax, LayerNormalization) for its dtypes and static shapes; its data input is
 * input 0 and its main result is output 0. */
bool kiln_lower_is_reduction(const kiln_graph *g, const kiln_node *n);

/* ---- group lowerings; each returns KILN_ERR_UNSUPPORTED (the reason of the fallback)
 * when it cannot take the group ---- */
KILN_MUST_USE kiln_status kiln_lower_ew_group(kiln_lower_ctx *c, const kiln_group *grp);
KILN_MUST_USE kiln_status kiln_lower_reduce_group(kiln_lower_ctx *c, const kiln_group *grp);
KILN_MUST_USE kiln_status kiln_lower_data_node(kiln_lower_ctx *c, const kiln_group *grp);
KILN_MUST_USE kiln_status kiln_lower_pool_node(kiln_lower_ctx *c, const kiln_group *grp);

/* ---- shared helpers (lower_nest.c) ---- */
/* The static tensor type of value v, or NULL when it is not a static tensor. */
const kiln_type *kiln_lower_static(const kiln_graph *g, int v);
/* True when every input and output of n is a static tensor (omitted ones excepted). */
bool kiln_lower_node_static(const kiln_graph *g, const kiln_node *n);
/* Element count of a static type. */
int64_t kiln_lower_numel(const kiln_type *t);
/* True when dtype t can be loaded into a compute type and stored back. */
bool kiln_lower_dtype_ok(kiln_dtype t);

/* A loop nest over a shape: one I64 variable per dimension; the outermost loop with an
 * extent above 1 is parallel, the innermost vectorized (contiguous), others serial.
 * `body` is the block to push the innermost statements to. */
typedef struct kiln_nest {
  int rank;
  int64_t dims[KILN_MAX_RANK];
  int vars[KILN_MAX_RANK];
  kiln_tblock *body;
} kiln_nest;
void kiln_lower_nest(kiln_tkernel *k, kiln_tblock *parent, int rank, const int64_t *dims,
                     const char *prefix, bool vector_inner, kiln_nest *out);
/* Row-major element index of the nest's position in a tensor of type t broadcast (numpy
 * rules, aligned on the right) to the nest's shape. */
kiln_texpr *kiln_lower_bcast_index(kiln_tkernel *k, const kiln_nest *n, const kiln_type *t);
/* Row-major index from per-dimension index expressions. */
kiln_texpr *kiln_lower_index(kiln_tkernel *k, int rank, const int64_t *dims,
                             kiln_texpr *const *idx);
/* Reads an int attribute or a constant input into a small int64 array; false if neither. */
bool kiln_lower_const_ints(const kiln_graph *g, int v, int64_t *out, int max, int *n);

/* ---- single-node lowerings: lower_index.c (GatherElements, GatherND, ScatterElements,
 * ScatterND), lower_norm.c (BatchNormalization in inference, Instance/Group/Lp/
 * MeanVariance/RMS normalization, LRN) and lower_misc.c (Shape, Constant, Trilu, CumSum,
 * CumProd, EyeLike, OneHot, Hardmax, Dropout's mask). Each takes a group of one node of an
 * op its row in the lowering table names it for, and returns KILN_ERR_UNSUPPORTED (the
 * reason of the fallback) when it has no compute definition for the node's types, shapes or
 * attribute values. ---- */
KILN_MUST_USE kiln_status kiln_lower_index_node(kiln_lower_ctx *c, const kiln_group *grp);
KILN_MUST_USE kiln_status kiln_lower_norm_node(kiln_lower_ctx *c, const kiln_group *grp);
KILN_MUST_USE kiln_status kiln_lower_misc_node(kiln_lower_ctx *c, const kiln_group *grp);

/* ---- the lowering table (lower_table.c) ----
 * One row per op: the lowering that takes a group of one node of the op, or NULL and the
 * reason it has none (the node runs its reference kernel). The dispatch (lower.c) calls the
 * row's lowering and nothing else; a lowering declines a node it cannot take with
 * kiln_unsupported("reason"), which becomes the fallback's reason. */
typedef kiln_status (*kiln_lower_fn)(kiln_lower_ctx *c, const kiln_group *grp);
typedef struct kiln_lower_row {
  kiln_lower_fn lower; /* NULL: no kernel lowering */
  bool view;           /* the node becomes an alias step when it only reinterprets input 0 */
  const char *reason;  /* lower NULL: why (the fallback's reason, after "no lowering for Op: ") */
} kiln_lower_row;
/* The row of op (the KILN_OP_UNKNOWN row for an op out of range). */
const kiln_lower_row *kiln_lower_row_of(kiln_op op);

/* A loop nest over dims in which every loop is serial (for scatters and running sums,
 * whose iterations depend on each other). */
void kiln_lower_serial_nest(kiln_tkernel *k, kiln_tblock *parent, int rank, const int64_t *dims,
                            const char *prefix, kiln_nest *out);

#endif
