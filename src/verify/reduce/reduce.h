/* The test-case reducer: delta debugging of a failing graph (reduce*.c).
 *
 * Given a graph, its inputs and a predicate that says whether a candidate still shows "the
 * same failure", the reducer searches for a smaller graph for which the predicate still holds:
 *
 *   kiln_reduce_opts o; kiln_reduce_opts_init(&o);
 *   kiln_reduce_result r;
 *   KILN_TRY(kiln_reduce(g, inputs, n_in, my_pred, my_state, &o, &r));
 *   if (r.reproduced) ... r.g, r.inputs, r.n_in: the reduced case ...
 *   kiln_reduce_result_free(&r);
 *
 * Edits, tried in this order and then again until none applies (a fixed point):
 *   1. outputs: drop graph outputs (ddmin over the set kept; at least one stays);
 *   2. nodes: delete a set of nodes (ddmin, then one at a time); a deleted node's outputs
 *      that live nodes still read become graph inputs holding their reference values (a cut:
 *      everything upstream goes away), or, one node at a time, its readers read one of its
 *      inputs of the identical type instead (a bypass: no new input);
 *   3. inputs and constants: unused ones disappear with every edit; a graph input becomes a
 *      constant holding its data;
 *   4. shapes: a dim of graph inputs and constants shrinks to 1 or to half (the data is
 *      sliced; a dim shared by several tensors shrinks in all of them, together with the
 *      entries of small integer constants that hold it, such as Reshape's shape);
 *   5. attributes: removed (the op's default), or set to a simpler value (0, 1, 1.0, all 0,
 *      all 1);
 *   6. data: graph inputs become all 0, all 1, or small integers.
 * Every candidate is rebuilt through the text IR (print, parse), so it is a well-formed graph;
 * it must pass kiln_graph_verify and kiln_ops_infer_graph and run in the reference interpreter
 * before the predicate sees it. A candidate that is not valid is simply not kept.
 * Nodes with subgraphs (If/Loop/Scan) are kept or deleted whole; values read by a subgraph
 * are never bypassed.
 *
 * The reducer is deterministic: the same graph, inputs and predicate give the same result. */
#ifndef KILN_VERIFY_REDUCE_H
#define KILN_VERIFY_REDUCE_H

#include <stdio.h>

#include "verify/verify.h"

/* True when the candidate (g, inputs; both borrowed, valid only during the call) still fails
 * the same way. Errors count as false. */
typedef bool (*kiln_reduce_pred)(void *user, const kiln_graph *g, int n_in,
                                 kiln_val *const *inputs);

typedef struct kiln_reduce_opts {
  int max_tests;        /* predicate calls at most (default 2000; <= 0: no limit) */
  double max_seconds;   /* wall-clock limit (default 600; <= 0: no limit) */
  FILE *log;            /* progress: one line per kept edit; NULL: silent */
  bool exact_signature; /* kiln_reduce_case: a candidate must fail with the recorded signature
                           itself; default false: the same layer kind and pass, and op kinds
                           that are a subset of the recorded ones (so that the nodes of a
                           failing fused kernel can go too) */
} kiln_reduce_opts;
void kiln_reduce_opts_init(kiln_reduce_opts *o);

/* The size of a case, for reports. */
typedef struct kiln_reduce_size {
  int nodes;        /* nodes of the root graph */
  int inputs;       /* graph inputs */
  int outputs;      /* graph outputs */
  int64_t elements; /* elements of all tensor inputs and constants */
} kiln_reduce_size;
void kiln_reduce_measure(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                         kiln_reduce_size *out);
/* "12 nodes -> 2 nodes, 3 inputs -> 1, 1540 elements -> 8" */
void kiln_reduce_size_str(const kiln_reduce_size *before, const kiln_reduce_size *after, char *buf,
                          size_t len);

typedef struct kiln_reduce_result {
  bool reproduced;   /* the predicate held on the original; false: nothing was reduced and
                        g/inputs are NULL */
  kiln_graph *g;     /* the reduced graph (types inferred), owned */
  kiln_val **inputs; /* its inputs, owned (n_in of them) */
  int n_in;
  kiln_reduce_size before, after;
  int tests;    /* predicate calls */
  int kept;     /* edits kept */
  int rejected; /* candidates that were not valid graphs (never shown to the predicate) */
  bool stopped; /* stopped by max_tests or max_seconds before the fixed point */
  double seconds;
} kiln_reduce_result;
void kiln_reduce_result_free(kiln_reduce_result *r);

/* Reduces (g, inputs) under pred. g (root graph, types inferred) and inputs (one per graph
 * input) are borrowed and not modified. An error only for bad arguments or when the original
 * graph cannot run in the reference interpreter. */
KILN_MUST_USE kiln_status kiln_reduce(const kiln_graph *g, kiln_val *const *inputs, int n_in,
                                      kiln_reduce_pred pred, void *user, const kiln_reduce_opts *o,
                                      kiln_reduce_result *out);

/* Whether a failure with signature got is "the same" as the recorded one: equal when exact,
 * else the same layer kind and pass, and op kinds (the third field) among the recorded ones
 * ("-" only matches "-"). This is kiln_reduce_case's test. */
bool kiln_reduce_same_failure(const char *recorded, const char *got, bool exact);

/* Reduces the case in case_dir (kiln_verify_load_case): the predicate is "kiln_verify_run
 * fails the way the case recorded" (see exact_signature), with no unstable or non-finite
 * element in the candidate's reference when the original had none (run with the options the failure
 * needs: without the compiled C code when the recorded layer is a graph or tile layer). Writes the
 * reduced case to out_dir (kiln_verify_write_case) and prints the sizes before and after and
 * the command that replays it to o->log. out->reproduced false: the case no longer fails the
 * recorded way (nothing is written). verify: base options of the runner (NULL: defaults; its
 * log and repro_dir are ignored). */
KILN_MUST_USE kiln_status kiln_reduce_case(const char *case_dir, const char *out_dir,
                                           const kiln_verify_opts *verify,
                                           const kiln_reduce_opts *o, kiln_reduce_result *out);

#endif
