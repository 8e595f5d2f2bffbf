/* The reducer's private parts, shared by reduce.c (state, candidates, driver) and
 * reduce_edit.c (the edits). See reduce.h for what the reducer does.
 *
 * A candidate is described by a *view* of the current graph: copies of its value and node
 * arrays that an edit changes (nodes deleted, uses redirected, values turned into inputs or
 * constants, data and types replaced, attributes changed). red_try() turns the view into a
 * graph of its own (dead code dropped, printed in the text IR and parsed back, checked, run in
 * the reference interpreter), asks the predicate, and on success makes it the current state.
 * Ids of values and nodes are those of the current graph; they change after every kept edit,
 * so edits look them up again after each success. */
#ifndef KILN_VERIFY_REDUCE_INTERNAL_H
#define KILN_VERIFY_REDUCE_INTERNAL_H

#include "reduce.h"

typedef struct red_state {
  kiln_graph *g; /* owned, types inferred */
  kiln_val **in; /* owned, one per g->inputs */
  int n_in;
  kiln_val **ref;  /* per value id: its reference value (node outputs that are tensors), owned;
                      NULL until red_refs() */
  int **sub_reads; /* per node: -1-terminated root value ids its subgraphs read, or NULL */
  bool *sub_read;  /* per value: read by some subgraph */
} red_state;

typedef struct reducer {
  red_state cur;
  kiln_reduce_pred pred;
  void *user;
  kiln_reduce_opts o;
  kiln_reduce_result *res;
  double t0;
  bool stop; /* a limit was reached */
} reducer;

typedef struct red_view {
  const red_state *st;
  int n_values, n_nodes;
  kiln_value *values; /* copy of st->g->values (kind, type and data may change) */
  kiln_node *nodes;   /* copy of st->g->nodes (attrs may change) */
  bool *drop;         /* per node: deleted (its live outputs become cut inputs) */
  int *repl;          /* per value: readers read repl[v] instead (v itself by default) */
  kiln_val **data;    /* per value: the data of a graph input (borrowed or in `vals`) */
  KILN_VEC(int) outputs;
  KILN_VEC(void *) garbage;        /* malloc'd blocks freed with the view */
  KILN_VEC(kiln_tensor *) tensors; /* tensors owned by the view */
  KILN_VEC(kiln_val *) vals;       /* values owned by the view */
  char what[160];                  /* the edit, for the progress log */
} red_view;

void red_view_init(red_view *v, const red_state *st);
void red_view_free(red_view *v);
/* Allocations that live as long as the view. */
void *red_view_alloc(red_view *v, size_t n);
void red_view_own_tensor(red_view *v, kiln_tensor *t);
void red_view_own_val(red_view *v, kiln_val *x);

/* Computes the reference value of every tensor node output of the current graph (once per
 * state); false when the graph does not run. */
bool red_refs(reducer *R);
/* Builds, checks and tests the view; keeps it as the new current state when the predicate
 * holds. Frees the view. */
bool red_try(reducer *R, red_view *v);
/* True when a limit is reached (sets R->stop). */
bool red_limit(reducer *R);

/* The edits (reduce_edit.c); each returns true when it kept something. */
bool red_outputs(reducer *R);
bool red_nodes_ddmin(reducer *R);
bool red_nodes_one(reducer *R);
bool red_inputs(reducer *R);
bool red_shapes(reducer *R);
bool red_attrs(reducer *R);
bool red_data(reducer *R);

#endif
