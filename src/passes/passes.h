/* Graph passes and the pass manager.
 *
 * A pass rewrites a graph in place: `kiln_status pass(kiln_pass_ctx *ctx, kiln_graph *g)`.
 * The manager runs the pipeline in order (kiln_passes_pipeline) with the options of
 * kiln_pass_opts: dumps after chosen passes, per-pass timing, disabled passes, a limit on
 * the number of pass applications (for bisection, like LLVM's opt-bisect-limit) and the
 * verifier after every pass (always in debug builds, on request in release builds).
 */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include <stdio.h>

#include "graph/graph.h"

/* What the fusion pass may put together. The classes come from the layer that knows what
 * compiles (the tile layer's lowering, kiln_lower_fuse_class), passed in the options so that
 * this layer does not depend on a higher one. */
typedef enum kiln_fuse_class {
  KILN_FUSE_OTHER,       /* a kernel of its own */
  KILN_FUSE_ELEMENTWISE, /* fusable into elementwise groups, prologues and epilogues */
  KILN_FUSE_REDUCTION,   /* anchor of a reduction group */
  KILN_FUSE_CONTRACTION, /* anchor of a MatMul/Gemm/Conv group */
  KILN_FUSE_CLASS_COUNT
} kiln_fuse_class;

typedef kiln_fuse_class (*kiln_fuse_classify_fn)(const kiln_graph *g, const kiln_node *n);

typedef struct kiln_pass_opts {
  const char *print_after; /* NULL, "all", or comma-separated pass names */
  const char *disable;     /* comma-separated pass names, or NULL */
  int64_t pass_limit;      /* < 0: no limit; else apply only the first N pass applications */
  bool time_passes;        /* print a timing table to `log` at the end */
  bool verify_each;        /* run kiln_graph_verify after every pass (forced on in debug) */
  bool no_fusion;          /* stop before the fusion pass */
  FILE *log;               /* dumps and timings; NULL: stderr */
  kiln_fuse_classify_fn fuse_classify; /* NULL: the fusion pass forms no group */
  const char *stop_after;              /* NULL, or stop after the first application of this pass
                                        * (run, disabled or cut by the limit): `kiln print --after` */
} kiln_pass_opts;

typedef struct kiln_pass_ctx {
  const kiln_pass_opts *opts;
  const char *pass_name;
  int64_t changes; /* a pass adds the number of rewrites it made (for statistics) */
} kiln_pass_ctx;

typedef kiln_status (*kiln_pass_fn)(kiln_pass_ctx *ctx, kiln_graph *g);

typedef struct kiln_pass_info {
  const char *name; /* "constfold" */
  kiln_pass_fn run;
  const char *summary;
} kiln_pass_info;

/* The pipeline in order; *n receives its length. */
const kiln_pass_info *kiln_passes_pipeline(int *n);
const kiln_pass_info *kiln_pass_find(const char *name); /* NULL if unknown */

typedef struct kiln_pass_stats {
  int applied; /* pass applications run */
  int skipped; /* applications skipped by the pass limit or --disable-pass */
  int64_t changes;
} kiln_pass_stats;

/* Runs the pipeline on g. Unknown names in print_after/disable are errors (exit 2). */
KILN_MUST_USE kiln_status kiln_passes_run(kiln_graph *g, const kiln_pass_opts *opts,
                                          kiln_pass_stats *out);

/* The passes (one file each in src/passes). */
KILN_MUST_USE kiln_status kiln_pass_infer(kiln_pass_ctx *ctx, kiln_graph *g); /* shapes and types */
KILN_MUST_USE kiln_status kiln_pass_constfold(kiln_pass_ctx *ctx,
                                              kiln_graph *g); /* via reference kernels */
KILN_MUST_USE kiln_status kiln_pass_shapefold(kiln_pass_ctx *ctx,
                                              kiln_graph *g); /* Shape/Gather/... chains */
KILN_MUST_USE kiln_status kiln_pass_dce(kiln_pass_ctx *ctx, kiln_graph *g);
KILN_MUST_USE kiln_status kiln_pass_cse(kiln_pass_ctx *ctx, kiln_graph *g);
KILN_MUST_USE kiln_status kiln_pass_simplify(kiln_pass_ctx *ctx,
                                             kiln_graph *g); /* algebra, canonical forms */
KILN_MUST_USE kiln_status kiln_pass_bnfold(kiln_pass_ctx *ctx,
                                           kiln_graph *g); /* BatchNorm into Conv/Gemm */
KILN_MUST_USE kiln_status kiln_pass_identity(kiln_pass_ctx *ctx,
                                             kiln_graph *g); /* Identity, Dropout */
KILN_MUST_USE kiln_status kiln_pass_fusion(kiln_pass_ctx *ctx,
                                           kiln_graph *g); /* sets kiln_node.group */

#endif
