/* Private to lowering (src/lower/lower*.c): groups, the lowering context and the
 * interfaces between the driver (lower.c), the elementwise/reduction/data-movement
 * compute definitions and the contraction lowering (lower_matmul.c, lower_conv.c). */
#ifndef KILN_LOWER_INTERNAL_H
#define KILN_LOWER_INTERNAL_H

#include "lower.h"
#include "ops/ops.h"
#include "schedule.h"

/* One fusion group of the graph, as the driver collects it. */
typedef struct kiln_group {
  int id; /* kiln_node.group, or 0 for an ungrouped node (a group of its own) */
  int n_nodes;
  int *nodes; /* node ids in topological order */
  int anchor; /* the contraction or reduction node of the group, or -1 */
  int n_inputs;
  int *inputs; /* value ids read by the group and defined outside it */
  int n_outputs;
  int *outputs; /* value ids defined in the group and used outside it (or graph outputs) */
} kiln_group;

typedef struct kiln_lower_ctx {
  kiln_graph *g;
  const kiln_lower_opts *opts;
  kiln_program *prog;
  kiln_arena *scratch; /* freed after lowering */
  bool stress;         /* kiln_lower_stress: every parallel schedule, however small the work */
  struct kiln_sched_set *sched; /* schedules set from outside, or NULL */
  /* Per value id, for the elementwise lowering (lower_ew.c): all zero between groups, since
   * a group clears the entries it set (arrays per group would cost O(groups * values)). */
  struct kiln_texpr **ew_val;
  int *ew_uses;
} kiln_lower_ctx;

/* ---- building steps (lower.c) ----
 * A kernel step is built by creating the kernel, adding its parameters (each bound to a
 * value, a packed constant or scratch space: the binding is appended to the step's args in
 * parameter order) and finally appending the step to the program. */
kiln_tkernel *kiln_lower_kernel(kiln_lower_ctx *c, const kiln_group *grp, const char *base,
                                kiln_step *step);
/* Parameter for graph value v, of the value's dtype and element count (deduplicated: the
 * same value bound twice gives the same buffer). */
int kiln_lower_param_value(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, int v);
/* Parameter for a constant computed now (prepacked weights); takes ownership of t. */
int kiln_lower_param_packed(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *name,
                            kiln_tensor *t);
/* Parameter for scratch space of `size` elements of dtype, live during the step only. */
int kiln_lower_param_scratch(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *name,
                             kiln_dtype dtype, int64_t size);
/* The error flag of a kernel that checks its input (kiln_step.check_arg): an I32 scratch
 * parameter of 1 element; the message (printf-style) says what a set flag means. */
int kiln_lower_param_check(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));
/* flag[0] = 1: the statement that reports a failed check. */
kiln_tstmt *kiln_lower_check_fail(kiln_tkernel *k, int flag);
void kiln_lower_add_step(kiln_lower_ctx *c, const kiln_step *step);
/* The schedule of step's kernel, its unset fields filled by the target's defaults from f
 * (f->threads and f->stress are filled here). The compute definition reads it; its
 * directives run when the group's kernels are complete. */
KILN_MUST_USE kiln_status kiln_lower_schedule(kiln_lower_ctx *c, const kiln_step *step,
                                              kiln_sched_facts *f, const kiln_sched **out);

/* ---- elementwise compute definitions (lower_ew.c) ----
 * True when node n is an elementwise op (with numpy broadcasting) that has a compute
 * definition for its dtypes. */
bool kiln_lower_is_elementwise(const kiln_graph *g, const kiln_node *n);
/* The value of one element of n's output 0 given one element of each input (operands[i],
 * NULL for an omitted input), already of the compute type of that input's dtype
 * (kiln_lower_compute_type). The result has the compute type of the output dtype. */
KILN_MUST_USE kiln_status kiln_lower_ew_expr(kiln_lower_ctx *c, kiln_tkernel *k, const kiln_node *n,
                                             kiln_texpr *const *operands, kiln_texpr **out);
/* Whether e is too large to inline into the next node's expression: an op may read an operand
 * twice (Relu is a select on a compare of x), so a chain of inlined nodes shares subtrees and
 * grows as 2^n when printed or walked. Callers that chain kiln_lower_ew_expr bind such a value
 * to a variable; every expression then stays small and shallow whatever the chain's length. */
bool kiln_lower_expr_large(const kiln_texpr *e);
/* The type arithmetic of op class cls runs in for values of dtype t, and the type its sums
 * accumulate in, as the precision policy of k's module says (precision.h; by default F32 for
 * F16/BF16/float8 and F32, the type itself otherwise; reductions sum floats in F64). */
kiln_dtype kiln_lower_compute_type(const kiln_tkernel *k, kiln_prec_class cls, kiln_dtype t);
kiln_dtype kiln_lower_acc_type(const kiln_tkernel *k, kiln_prec_class cls, kiln_dtype t);
/* load buf[index] converted to the compute type of cls / value converted to buffer dtype */
kiln_texpr *kiln_lower_load(kiln_tkernel *k, kiln_prec_class cls, int buf, kiln_texpr *index);
kiln_texpr *kiln_lower_to_storage(kiln_tkernel *k, kiln_dtype dtype, kiln_texpr *v);

/* ---- contractions (lower_matmul.c, lower_conv.c) ----
 * True when node n is a MatMul, Gemm or Conv that kiln_lower_contraction can take as a
 * group anchor (static shapes, supported dtypes and attributes). */
bool kiln_lower_is_contraction(const kiln_graph *g, const kiln_node *n);
/* Lowers a group whose anchor is a contraction and whose other nodes are an elementwise
 * epilogue applied to the anchor's output (a chain: each node takes the previous result
 * and, optionally, other values from outside the group broadcast to the output's shape).
 * Appends one or more steps. */
KILN_MUST_USE kiln_status kiln_lower_contraction(kiln_lower_ctx *c, const kiln_group *grp);

#endif
