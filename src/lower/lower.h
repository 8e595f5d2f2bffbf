/* Lowering: from a fused graph to a program of tile kernels.
 *
 * Each fusion group (kiln_node.group) becomes one kernel of the program's module, through
 * the compute definitions of its ops and a schedule for the target. The program lists the
 * steps to run in order; each step binds kernel parameters to graph values (the runtime
 * places those in its memory plan), to prepacked constants, or to scratch space. A node
 * that cannot be lowered yet becomes a fallback step that runs its reference kernel; an
 * op that only reinterprets its input (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
 * Dropout in inference) becomes an alias step that shares the input's storage.
 */
#ifndef KILN_LOWER_H
#define KILN_LOWER_H

#include "graph/graph.h"
#include "passes/passes.h"
#include "precision.h"
#include "tile/tile.h"

/* The registered targets (src/runtime/target.h), by id: the id is the target's index in the
 * runtime's registry and what the lowering records in kiln_program.target. The lowering
 * cannot see the target interface (it is a stage below the runtime): it receives the
 * target's view in kiln_lower_opts (schedule defaults, supported nodes, threads). */
typedef enum kiln_target_id { KILN_TARGET_CPU, KILN_TARGET_CUDA, KILN_TARGET_COUNT } kiln_target_id;

typedef enum kiln_arg_kind {
  KILN_ARG_VALUE,   /* a graph value (input, constant, or node output) by id */
  KILN_ARG_PACKED,  /* program->packed[id]: a constant computed at compile time */
  KILN_ARG_SCRATCH, /* bytes of scratch space, live only during this step */
  KILN_ARG_KIND_COUNT
} kiln_arg_kind;

typedef struct kiln_arg {
  kiln_arg_kind kind;
  int id;        /* VALUE: value id in the root graph; PACKED: index in program->packed */
  int64_t bytes; /* SCRATCH */
} kiln_arg;

typedef enum kiln_step_kind {
  KILN_STEP_KERNEL,   /* run program->module->kernels[kernel] on args */
  KILN_STEP_FALLBACK, /* run the reference kernel of graph node `node` */
  KILN_STEP_ALIAS,    /* value dst is a view of value src (same bytes, same dtype) */
  KILN_STEP_KIND_COUNT
} kiln_step_kind;

typedef struct kiln_step {
  kiln_step_kind kind;
  int kernel; /* KERNEL */
  int n_args;
  kiln_arg *args; /* KERNEL: one per kernel parameter, in order */
  /* KERNEL: in-place candidates: inplace[i] = j >= 0 when output parameter i may share the
   * storage of input parameter j (same size, each element read before it is written by the
   * same iteration); -1 otherwise. NULL when none. */
  int *inplace;
  int node;           /* FALLBACK; also KERNEL: the first node of the group (for messages) */
  const char *reason; /* FALLBACK: why the node was not lowered */
  int src, dst;       /* ALIAS */
  /* KERNEL: input check. When check_msg is set, parameter check_arg is an error flag (an I32
   * buffer of 1 element bound to scratch space): the runner stores 0 into it before the
   * kernel and, when the kernel has stored 1 into it (an index out of range, detected where
   * the kernel guards the access), fails the step with check_msg. Several threads may store
   * 1 into the flag: that store is the only write that threads of one kernel share, and it
   * is idempotent. check_arg is -1 (and check_msg NULL) when the kernel checks nothing. */
  int check_arg;
  const char *check_msg;
} kiln_step;

struct kiln_sched;     /* schedule.h */
struct kiln_sched_set; /* schedule.h */

typedef struct kiln_program {
  kiln_graph *graph; /* borrowed: the fused graph the program was lowered from */
  kiln_tmodule *module;
  KILN_VEC(kiln_step) steps;
  /* the schedule of each kernel of module, by kernel index (schedule.h) */
  KILN_VEC(struct kiln_sched) scheds;
  KILN_VEC(kiln_tensor *) packed; /* owned */
  kiln_target_id target;
  int n_fallback;
} kiln_program;

/* On the CPU, loop nests over fewer elements run on one thread (kiln_tmodule.
 * par_min_elements): starting and joining threads costs about as much as the work, and far
 * more when the cores are shared with other processes. */
#define KILN_LOWER_PAR_MIN_ELEMENTS 32768

struct kiln_sched_facts; /* schedule.h */

typedef struct kiln_lower_opts {
  kiln_target_id target;
  int threads; /* the CPU threads the schedule may plan for (>= 1) */
  /* Every parallel schedule however small the work, when threads > 1 (verification: the
   * parallel forms of small models run; kiln_lower_stress sets it too). */
  bool stress;
  /* Names of ops forced to fall back (comma-separated), for tests; NULL for none. */
  const char *force_fallback;
  /* ---- precision (src/lower/precision.h) ---- */
  /* The types each op class computes and accumulates in; NULL: the default policy (f16,
   * bf16 and float8 values compute in f32; sums of reductions in f64). */
  const kiln_precision_policy *precision;
  /* ---- the target's view (kiln_target.lower_opts fills these; NULL: the defaults) ---- */
  /* The schedule defaults of the target (kiln_sched_defaults_fn of schedule.h); NULL:
   * kiln_sched_defaults_for(target). */
  kiln_status (*sched_defaults)(const struct kiln_sched_facts *f, struct kiln_sched *s);
  /* Whether the target makes a kernel of node n; false: the node runs its reference
   * kernel (a fallback step) and *why (static text) is the fallback's reason. NULL: every
   * node that the lowering can lower. */
  bool (*supports_node)(const kiln_graph *g, const kiln_node *n, const char **why);
} kiln_lower_opts;

/* The lowering table (lower_table.c): true when nodes of op may become kernels or alias
 * steps (each node may still fall back, with the reason its lowering gives). */
bool kiln_lower_has_lowering(kiln_op op);
/* Why op has no lowering (its nodes run their reference kernels); NULL when it has one. */
const char *kiln_lower_op_reason(kiln_op op);

/* The fusion class of node n for this lowering (kiln_pass_opts.fuse_classify). */
kiln_fuse_class kiln_lower_fuse_class(const kiln_graph *g, const kiln_node *n);

/* Lowers g (after the pass pipeline, fusion included; all value types static). */
KILN_MUST_USE kiln_status kiln_lower(kiln_graph *g, const kiln_lower_opts *opts,
                                     kiln_program **out);
/* kiln_lower with schedules set from outside (a file, a tuner: schedule.h), by kernel name;
 * sched NULL: the target's defaults for every kernel. The lowering counts the matches of
 * the set's lines (a line that matches no kernel is an error), so a set serves one lowering
 * at a time. A tuner changes the set and lowers again. */
KILN_MUST_USE kiln_status kiln_lower_scheduled(kiln_graph *g, const kiln_lower_opts *opts,
                                               struct kiln_sched_set *sched, kiln_program **out);
/* kiln_lower for verification: with threads > 1 it plans the parallel schedules whatever
 * the size of the work (GEMM splits, parallel depthwise loops, nests below
 * KILN_LOWER_PAR_MIN_ELEMENTS), so that the tile verifier's race check and the tile
 * interpreter see them on small models. Same results; not what kiln_compile runs. */
KILN_MUST_USE kiln_status kiln_lower_stress(kiln_graph *g, const kiln_lower_opts *opts,
                                            kiln_program **out);
void kiln_program_free(kiln_program *p);
/* Runs the program with the tile IR interpreter (kernels), the reference kernels (fallback
 * steps) and views (alias steps), each value in its own allocation: the tile-level oracle
 * of the compiled code. Inputs are borrowed; outputs (one per graph output) are new. */
KILN_MUST_USE kiln_status kiln_program_interp(const kiln_program *p, int n_in,
                                              kiln_tensor *const *inputs, kiln_tensor **outputs);
/* A step observer (verification): called after step `step` for every tensor value
 * `value_id` of the root graph that the step produces (kernel outputs, fallback node
 * outputs, alias targets), each once. t is borrowed and valid during the call only. */
typedef void (*kiln_step_trace_fn)(void *user, int step, int value_id, const kiln_tensor *t);
/* kiln_program_interp, calling cb (when not NULL) after each step. */
KILN_MUST_USE kiln_status kiln_program_interp_trace(const kiln_program *p, int n_in,
                                                    kiln_tensor *const *inputs,
                                                    kiln_tensor **outputs, kiln_step_trace_fn cb,
                                                    void *user);
/* Checks the dataflow of the steps: each value read is an input, a constant or defined by
 * an earlier step; each value written is a node output defined once; each node output the
 * graph returns is defined. KILN_ERR_INTERNAL (a bug of the lowering) otherwise. Run by
 * kiln_lower on every program it makes and by the memory planner. */
KILN_MUST_USE kiln_status kiln_program_verify(const kiln_program *p);
/* Prints the steps (kernel names, bound values, fallbacks with reasons) and the module. */
void kiln_program_print(const kiln_program *p, kiln_strbuf *out);

#endif
