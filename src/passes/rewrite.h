/* Graph editing for passes (private to src/passes).
 *
 * A pass opens a rewriter on a graph, edits through it and closes it:
 *
 *   kiln_rw rw;
 *   kiln_rw_begin(&rw, g);
 *   ... kiln_rw_replace(&rw, old_value, new_value); kiln_rw_kill_node(&rw, n); ...
 *   KILN_TRY(kiln_rw_end(&rw));   // drops dead nodes and values, restores topological order
 *
 * The rewriter keeps use counts of every value (node inputs, graph outputs and reads from
 * subgraphs count as uses). New nodes are appended at the end of the node list; kiln_rw_end
 * sorts the nodes again (stable: nodes keep their relative order where the data allows it),
 * renumbers the values and rebuilds the name map.
 *
 * Names: a graph output must keep its name. kiln_rw_replace therefore gives the replacement
 * the old value's name when the old value is a graph output (the two values swap names).
 * A value read by a subgraph (through an OUTER value, which holds the name) is pinned: it
 * can be neither renamed nor replaced. */
#ifndef KILN_PASSES_REWRITE_H
#define KILN_PASSES_REWRITE_H

#include "graph/analysis.h"
#include "ops/ops.h"

typedef struct kiln_rw {
  kiln_graph *g;
  int n_values, n_nodes; /* sizes of the arrays below */
  int *uses;             /* per value: reads by nodes, graph outputs and subgraphs */
  bool *pinned;          /* per value: read by a subgraph */
  bool *is_output;       /* per value: a graph output */
  bool *dead_value;      /* per value: removed by kiln_rw_end (constants only) */
  bool *dead_node;       /* per node: removed by kiln_rw_end */
  /* per value: nodes that read it as an input (a superset: entries go stale when an input
   * changes and are checked on use), so that kiln_rw_replace visits the readers only */
  int **readers, *n_readers, *cap_readers;
} kiln_rw;

void kiln_rw_begin(kiln_rw *rw, kiln_graph *g);
/* Compacts the graph (see above) and frees the rewriter. */
KILN_MUST_USE kiln_status kiln_rw_end(kiln_rw *rw);
/* Frees the rewriter without compacting (after an error). */
void kiln_rw_abort(kiln_rw *rw);

/* Grows the per-value and per-node arrays after values or nodes were added. */
void kiln_rw_sync(kiln_rw *rw);

/* True if every use of `from` may read `to` instead (names of graph outputs kept). */
bool kiln_rw_can_replace(const kiln_rw *rw, int from, int to);
/* Makes every reader of `from` read `to`. False (and no change) when not possible. */
bool kiln_rw_replace(kiln_rw *rw, int from, int to);
/* Gives `to` the name of `from` and `from` the name of `to` (neither may be pinned). */
void kiln_rw_swap_names(kiln_rw *rw, int a, int b);
/* Sets input k of node n to value v (-1: omitted), keeping use counts. */
void kiln_rw_set_input(kiln_rw *rw, int n, int k, int v);
/* Appends an input to node n. */
void kiln_rw_append_input(kiln_rw *rw, int n, int v);

/* Marks node n dead and releases its inputs. Its outputs must be unused. */
void kiln_rw_kill_node(kiln_rw *rw, int n);
/* Marks an unused constant dead. */
void kiln_rw_kill_const(kiln_rw *rw, int v);
/* True if no output of node n is used. */
bool kiln_rw_node_unused(const kiln_rw *rw, int n);

/* Adds a constant (takes ownership of t) with a fresh name. */
KILN_MUST_USE kiln_status kiln_rw_add_const(kiln_rw *rw, kiln_tensor *t, int *out_id);
/* Adds a node of the default domain with opset `opset` and one output of type `type`
 * (fresh name); *out_node and *out_value receive the ids. */
KILN_MUST_USE kiln_status kiln_rw_add_node(kiln_rw *rw, const char *op_type, int64_t opset,
                                           int n_in, const int *inputs, kiln_type type,
                                           int *out_node, int *out_value);
/* Replaces the ints attribute `name` of node n (adds it when absent). */
void kiln_rw_set_ints(kiln_rw *rw, int n, const char *name, int n_vals, const int64_t *vals);

/* ---- reading values ---- */
/* The constant data of v, or NULL when v is not a constant. */
const kiln_tensor *kiln_rw_const(const kiln_graph *g, int v);
/* The node defining v (or -1 when v is not a node output). */
int kiln_rw_producer(const kiln_graph *g, int v);
/* Reads an integer constant of at most `max` elements into out; false when v is not one. */
bool kiln_rw_const_ints(const kiln_graph *g, int v, int max, int64_t *out, int *out_n);
/* True when every element of constant t equals `x` (bitwise for -0.0 when `x` is -0.0). */
bool kiln_rw_const_all(const kiln_tensor *t, double x);
/* True for ops whose result is random (never folded nor merged). */
bool kiln_rw_is_random(kiln_op op);

#endif
