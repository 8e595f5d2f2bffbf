/* Graph analyses that every layer asks for: which values a node's subgraphs read from it,
 * how often each value is read, and the order of node groups. One walk each, linear in
 * the graph (the group order adds a log factor for its tie rule).
 *
 *   kiln_outer_iter it = kiln_outer_reads(g, n);
 *   for (int v; kiln_outer_next(&it, &v);)
 *     ... v is a value of g that a subgraph of n (If branch, Loop/Scan body) reads ...
 *
 *   kiln_uses u;
 *   kiln_uses_compute(g, &u);
 *   if (u.count[v] == 1 && !u.pinned[v] && !u.output[v]) ... one node reads v, once ...
 *   kiln_uses_free(&u);
 */
#ifndef KILN_GRAPH_ANALYSIS_H
#define KILN_GRAPH_ANALYSIS_H

#include "graph.h"

/* ---- outer reads ----
 * The values of g that the subgraphs of node n read: the OUTER values of n's direct
 * subgraphs (GRAPH and GRAPHS attributes, in attribute order, then value order). A nested
 * subgraph reads through an OUTER value of the subgraph between, so direct ones suffice.
 * Skipped: a NULL subgraph, a subgraph whose parent is not g, an OUTER id that is not a
 * value of g (the verifier rejects the last two; walks that run before it stay in range).
 * A value read twice (two branches, two OUTER values) is reported twice. */
typedef struct kiln_outer_iter {
  const kiln_graph *g;
  const kiln_node *n;
  int attr, sub, value; /* position of the next candidate */
  kiln_value *at;       /* after kiln_outer_next: the subgraph's OUTER value just reported */
} kiln_outer_iter;

kiln_outer_iter kiln_outer_reads(const kiln_graph *g, const kiln_node *n);
/* The next read's value id in g; false when there is none. */
bool kiln_outer_next(kiln_outer_iter *it, int *out_value);
/* True when n holds a subgraph (a GRAPH or GRAPHS attribute), read from or not. */
bool kiln_node_has_subgraph(const kiln_node *n);

/* ---- uses ----
 * Per value of g (arrays of g->values.len + 1 entries, owned by the struct):
 *   count:  reads by nodes (one per input slot), by subgraphs (one per OUTER value that
 *           names it) and by graph outputs (one per output slot);
 *   last:   the last node that reads it (input or subgraph), g->nodes.len when it is a
 *           graph output (it lives to the end), -1 when nothing reads it;
 *   pinned: read by a subgraph (by name: it cannot be renamed or replaced);
 *   output: a graph output.
 * So "read by exactly one node input and nothing else" is
 * count == 1 && !pinned && !output, and that node is last. */
typedef struct kiln_uses {
  int n_values;
  int *count;
  int *last;
  bool *pinned;
  bool *output;
} kiln_uses;

void kiln_uses_compute(const kiln_graph *g, kiln_uses *out);
void kiln_uses_free(kiln_uses *u);

/* ---- groups ----
 * Nodes grouped by kiln_node.group: group 0 is a group of its own per node; nodes with the
 * same id >= 1 form one group. Groups are numbered 0..n-1 by their first node; a group's
 * nodes are nodes[start[i] .. start[i + 1]) in node (topological) order. O(N) expected. */
typedef struct kiln_groups {
  int n;
  int *of_node; /* node id -> group index */
  int *start;   /* n + 1 offsets into nodes */
  int *nodes;   /* node ids, grouped */
} kiln_groups;

void kiln_groups_collect(const kiln_graph *g, kiln_groups *out);
void kiln_groups_free(kiln_groups *s);
/* Orders the groups so that each comes after every group that defines a value it reads (as
 * a node input or through a subgraph): Kahn's algorithm taking the ready group of smallest
 * index first, O((N + E) log G) for E reads. order gets s->n entries. KILN_BUG when the
 * groups form a cycle (a group that is not convex). */
KILN_MUST_USE kiln_status kiln_groups_order(const kiln_graph *g, const kiln_groups *s, int *order);

#endif
