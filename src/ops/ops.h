/* The operator set: per-op schema (arity), shape/type inference and reference
 * kernels, and the reference interpreter that runs a graph with them.
 *
 * Reference kernels are the oracle of the project: plain loops, obviously
 * right, accumulating floats in double and integers exactly, faithful to the
 * ONNX specification of the opset version the model imports (node->opset).
 *
 * Each family file (elementwise.c, reduce.c, nn.c, shape.c, control.c, quant.c,
 * seqmodel.c, signal.c, text.c, random.c, loss.c, vision.c) defines
 * kiln_ops_register_<family>(), which fills the table entries of its ops (see ops.def for
 * which op belongs to which family); a family's other files are <family>_<part>.c. */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "graph/graph.h"

/* ---- runtime values ---- */
typedef struct kiln_seq {
  kiln_dtype elem;
  int len, cap;
  kiln_tensor **items; /* owned */
} kiln_seq;

typedef struct kiln_val {
  kiln_type_kind kind;  /* TENSOR, SEQUENCE or OPTIONAL */
  kiln_tensor *t;       /* TENSOR; OPTIONAL of a tensor (NULL = empty optional) */
  kiln_seq *seq;        /* SEQUENCE; OPTIONAL of a sequence (NULL = empty) */
  bool elem_seq;        /* OPTIONAL: whether the element type is a sequence */
  kiln_dtype opt_dtype; /* OPTIONAL: element dtype (for empty optionals) */
} kiln_val;

kiln_val *kiln_val_tensor(kiln_tensor *t); /* takes ownership */
kiln_val *kiln_val_new(kiln_type_kind kind);
KILN_MUST_USE kiln_status kiln_val_clone(const kiln_val *v, kiln_val **out);
void kiln_val_free(kiln_val *v);
kiln_seq *kiln_seq_new(kiln_dtype elem);
void kiln_seq_push(kiln_seq *s, kiln_tensor *t); /* takes ownership */
void kiln_seq_free(kiln_seq *s);

/* ---- kernels ---- */
typedef struct kiln_interp kiln_interp;

typedef struct kiln_eval_ctx {
  const kiln_graph *graph;
  const kiln_node *node;
  int n_in;
  kiln_val *const *in; /* in[i] NULL for an omitted optional input */
  int n_out;
  kiln_val **out; /* the kernel sets out[i] (NULL allowed for omitted outputs) */
  kiln_interp *interp;
} kiln_eval_ctx;

typedef kiln_status (*kiln_eval_fn)(kiln_eval_ctx *ctx);

/* Input i as a tensor; NULL when omitted (or i >= n_in). */
const kiln_tensor *kiln_eval_in(const kiln_eval_ctx *ctx, int i);
/* Same, but an error naming the node when input i is missing or not a tensor. */
KILN_MUST_USE kiln_status kiln_eval_in_req(const kiln_eval_ctx *ctx, int i,
                                           const kiln_tensor **out);
/* Checks `bytes` of scratch (a buffer a kernel mallocs beside its outputs) against the memory
 * limit: an INVALID error naming the node and `what`; a negative `bytes` (an overflowed
 * product) is over any limit. Nothing is reserved: the kernel frees it before returning. */
KILN_MUST_USE kiln_status kiln_eval_scratch_check(const kiln_eval_ctx *ctx, int64_t bytes,
                                                  const char *what);
/* Allocates output i as a tensor of the given shape (checked) and stores it in ctx->out[i]. */
KILN_MUST_USE kiln_status kiln_eval_out(kiln_eval_ctx *ctx, int i, kiln_dtype dtype, int rank,
                                        const int64_t *dims, kiln_tensor **out);
/* Sets output i to an existing tensor (takes ownership). */
void kiln_eval_set_out(kiln_eval_ctx *ctx, int i, kiln_tensor *t);
/* Error helper: prefixes the node label. */
KILN_MUST_USE kiln_status kiln_eval_error(const kiln_eval_ctx *ctx, kiln_code code, const char *fmt,
                                          ...) __attribute__((format(printf, 3, 4)));

/* Runs a subgraph (body of If/Loop/Scan) of ctx->node with the given inputs; values
 * of enclosing graphs are taken from the running frames. outputs[k] (k <
 * sub->outputs.len) receive new values owned by the caller. Inputs are borrowed. */
KILN_MUST_USE kiln_status kiln_interp_run_sub(kiln_eval_ctx *ctx, const kiln_graph *sub, int n_in,
                                              kiln_val *const *inputs, kiln_val **outputs);

/* ---- shape and type inference ---- */
typedef struct kiln_infer_ctx {
  const kiln_graph *graph;
  const kiln_node *node;
  int n_in;
  const kiln_type *const *in;    /* in[i] NULL when omitted */
  const kiln_tensor *const *cin; /* constant value of input i when known, else NULL */
  int n_out;
  kiln_type *out; /* to fill; preset to KILN_TYPE_UNKNOWN */
} kiln_infer_ctx;

typedef kiln_status (*kiln_infer_fn)(kiln_infer_ctx *ctx);

/* Multidirectional (numpy) broadcasting of the types of inputs [0, n); symbolic dims equal
 * by name; an unknown dim against >1 gives that; error when incompatible. */
KILN_MUST_USE kiln_status kiln_infer_broadcast(const kiln_infer_ctx *ctx, int n, kiln_type *out);

/* ---- the op table ---- */
typedef struct kiln_op_impl {
  kiln_eval_fn eval;   /* NULL: not implemented (the interpreter reports unsupported) */
  kiln_infer_fn infer; /* NULL: output types are left as imported */
  int min_in, max_in;  /* schema arity; max -1 = variadic */
  int min_out, max_out;
} kiln_op_impl;

const kiln_op_impl *kiln_op_get(kiln_op op);
/* Opset version of the default domain that introduced op, and that removed it (0: never). */
int kiln_op_since(kiln_op op);
int kiln_op_removed(kiln_op op);
#define KILN_MAX_OPSET 27 /* newest opset of the default domain Kiln knows (onnx 1.22) */
/* Checks arity and that the op is implemented for node->opset; error names the node. */
KILN_MUST_USE kiln_status kiln_op_check(const kiln_graph *g, const kiln_node *n);
/* Inference's checks of attribute values (infer_check.c): the axes, block sizes and group
 * counts the reference kernel would reject at run time, rejected as bad input (INVALID,
 * naming the node) from the input ranks, static extents and constant inputs known now. */
KILN_MUST_USE kiln_status kiln_op_check_values(const kiln_graph *g, const kiln_node *n);

#define X(name, family) void kiln_ops_register_##family(kiln_op_impl *table);
X(_, elementwise)
X(_, reduce)
X(_, nn)
X(_, shape)
X(_, control)
X(_, quant)
X(_, seqmodel)
X(_, signal)
X(_, text)
X(_, random)
X(_, loss)
X(_, vision)
#undef X

/* Runs shape/type inference over g (and subgraphs), filling unknown value types. Ops
 * without an infer function leave their outputs' types as they were. */
KILN_MUST_USE kiln_status kiln_ops_infer_graph(kiln_graph *g);
/* Model-level checks beyond the IR verifier: a known opset of the default domain, at
 * least one output, graph inputs with a type whose size does not overflow. */
KILN_MUST_USE kiln_status kiln_ops_validate_model(const kiln_graph *g);

/* ---- broadcasting helpers for kernels ---- */
/* Computes the broadcast shape of n tensors. */
KILN_MUST_USE kiln_status kiln_broadcast_shape(int n, const kiln_tensor *const *ts, int *out_rank,
                                               int64_t *out_dims);
/* For an output of shape (rank, dims), the strides (in elements) to index a tensor t
 * broadcast to it: 0 along broadcast dims. */
void kiln_broadcast_strides(const kiln_tensor *t, int rank, const int64_t *dims, int64_t *strides);
/* Row-major strides of a shape. */
void kiln_strides(int rank, const int64_t *dims, int64_t *strides);
/* Normalizes an axis in [-rank, rank) to [0, rank); error otherwise. */
KILN_MUST_USE kiln_status kiln_norm_axis(const kiln_eval_ctx *ctx, int64_t axis, int rank,
                                         int *out);

/* ---- interpreter ---- */
typedef struct kiln_interp_opts {
  bool trace; /* print each node as it runs, to stderr */
} kiln_interp_opts;

/* Runs g on inputs (one per g->inputs, borrowed) and returns g->outputs.len new values
 * in outputs (owned by the caller). */
KILN_MUST_USE kiln_status kiln_interp_run(const kiln_graph *g, const kiln_interp_opts *opts,
                                          int n_in, kiln_val *const *inputs, kiln_val **outputs);

/* Evaluates node `node` of the root graph g with its reference kernel, outside a run of
 * the whole graph: this is how compiled programs run their fallback steps.
 * - The node's inputs, and the values of g that its subgraphs (If/Loop/Scan bodies) read,
 *   come from lookup(user, value_id) (borrowed: the callback keeps ownership; it may return
 *   views whose data it does not own). Constants of g are taken from the graph without
 *   calling lookup. A NULL from lookup is an error naming the value.
 * - outputs[k] (one per node output) receives a new value owned by the caller, NULL for
 *   an omitted output. On error every outputs[k] is NULL.
 * The op check (kiln_op_check) runs first, as in kiln_interp_run. */
KILN_MUST_USE kiln_status kiln_interp_eval_node(const kiln_graph *g, int node,
                                                kiln_val *(*lookup)(void *user, int value_id),
                                                void *user, kiln_val **outputs);

#endif
