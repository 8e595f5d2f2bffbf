/* Fusion pass: marks groups of nodes that lowering turns into one kernel (kiln_node.group).
 *
 * Rules, applied in this order to nodes not yet grouped:
 *  (a) a contraction (MatMul/Gemm/Conv) with the chain of elementwise nodes after it: each
 *      consumes the previous result (its only use, not a graph output) and otherwise reads
 *      values from outside that broadcast to the anchor's output shape;
 *  (c) a reduction with an elementwise prologue on its data input (each prologue value used
 *      only inside the group, of the reduction input's shape) and an epilogue chain as in (a);
 *  (b) maximal elementwise DAGs whose nodes all have the same output shape; a value used
 *      outside the group becomes one of its outputs;
 *  (d) everything else alone (group 0).
 * Every group is convex: no path leaves it and comes back, so it runs as one kernel between
 * its inputs and its outputs. The op facts come from the lowering (what it can compile);
 * this file has no list of op names.
 *
 * The classes come from kiln_pass_opts.fuse_classify (the tile layer's
 * kiln_lower_fuse_class, the one place that knows which ops have compute definitions for
 * which types); without it every node stays alone. */
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "graph/analysis.h"
#include "passes.h"

typedef enum node_class { NC_OTHER, NC_EW, NC_RED, NC_MM, NC_COUNT } node_class;

typedef struct fuse_ctx {
  kiln_graph *g;
  node_class *cls;
  kiln_uses uses;         /* graph/analysis.h: reads of each value */
  int *succ_start, *succ; /* per node: the nodes reading one of its outputs (CSR, ascending,
                           * a reader once; through a subgraph read too) */
  bool *in_grp;           /* membership of the elementwise group being grown */
  int *members;           /* its members, n_members of them, lo..hi their node range */
  int n_members, lo, hi;
  int *seen, stamp;          /* visit marks of the convexity check */
  int *stack;                /* its work list */
  int *heap, n_heap, cursor; /* members left to grow from in this sweep, the one at hand */
  int n_added;               /* nodes given the group being built */
  int next_id;
} fuse_ctx;

static const kiln_type *vtype(const fuse_ctx *f, int v) {
  return &f->g->values.data[v].type;
}

static int producer(const fuse_ctx *f, int v) {
  if (v < 0) return -1;
  const kiln_value *val = &f->g->values.data[v];
  return val->kind == KILN_VALUE_NODE ? val->node : -1;
}

static bool same_shape(const kiln_type *a, const kiln_type *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d].value != b->dims[d].value || a->dims[d].value < 0) return false;
  return true;
}

/* The node that reads v when that is v's one use (one input slot: no subgraph reads it, it is
 * no graph output); -1 otherwise. A value read by a subgraph counts as used outside any group. */
static int only_reader(const fuse_ctx *f, int v) {
  const kiln_uses *u = &f->uses;
  return v >= 0 && u->count[v] == 1 && !u->pinned[v] && !u->output[v] ? u->last[v] : -1;
}

/* Readers of each node's outputs, by node input or subgraph read, each reader once and in
 * node order (nodes are in topological order, so filling in node order sorts each list). */
static void add_succ(fuse_ctx *f, int reader, int v, bool fill, int *fill_at) {
  int p = producer(f, v);
  if (p < 0) return;
  if (!fill) {
    if (f->seen[p] != reader + 1) f->succ_start[p + 1]++;
  } else if (f->seen[p] != reader + 1) {
    f->succ[f->succ_start[p] + fill_at[p]++] = reader;
  }
  f->seen[p] = reader + 1;
}

static void succ_pass(fuse_ctx *f, bool fill, int *fill_at) {
  kiln_graph *g = f->g;
  for (int i = 0; i < g->nodes.len; i++) f->seen[i] = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_inputs; k++) add_succ(f, i, n->inputs[k], fill, fill_at);
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v);) add_succ(f, i, v, fill, fill_at);
  }
  for (int i = 0; i < g->nodes.len; i++) f->seen[i] = 0;
}

static void build_succ(fuse_ctx *f) {
  int nn = f->g->nodes.len;
  f->succ_start = kiln_xcalloc((size_t)nn + 2, sizeof(int));
  succ_pass(f, false, NULL);
  for (int i = 0; i < nn; i++) f->succ_start[i + 1] += f->succ_start[i];
  f->succ = kiln_xcalloc((size_t)f->succ_start[nn] + 1, sizeof(int));
  int *fill_at = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  succ_pass(f, true, fill_at);
  free(fill_at);
}

static void classify(fuse_ctx *f, kiln_fuse_classify_fn fn) {
  for (int i = 0; i < f->g->nodes.len; i++) {
    kiln_node *n = &f->g->nodes.data[i];
    n->group = 0;
    kiln_fuse_class c = fn ? fn(f->g, n) : KILN_FUSE_OTHER;
    f->cls[i] = c == KILN_FUSE_CONTRACTION   ? NC_MM
                : c == KILN_FUSE_REDUCTION   ? NC_RED
                : c == KILN_FUSE_ELEMENTWISE ? NC_EW
                                             : NC_OTHER;
  }
}

/* Visits y, a neighbour of x on a path from j: true when y is a member reached through a
 * non-member (x != j); a non-member within the bound is pushed. */
static bool visit(fuse_ctx *f, int j, int x, int y, bool forward, int *top) {
  if (y < 0 || y == j || f->seen[y] == f->stamp) return false;
  if (f->in_grp[y]) return x != j;
  if (forward ? y > f->hi : y < f->lo) return false; /* cannot come back into the group */
  f->seen[y] = f->stamp;
  f->stack[(*top)++] = y;
  return false;
}

/* Is there a path from j through non-members into the group (forward), or from the group
 * through non-members into j (backward)? Edges are node inputs and subgraph reads. Nodes are
 * in topological order, so such a path runs below the group's last node (forward) or above
 * its first (backward): the search stays near the group instead of sweeping the graph for
 * every candidate, as it did (quadratic on a 20,000-node graph). */
static bool path_through_outside(fuse_ctx *f, int j, bool forward) {
  int top = 0;
  f->stamp++;
  f->stack[top++] = j;
  while (top > 0) {
    int x = f->stack[--top];
    const kiln_node *n = &f->g->nodes.data[x];
    if (forward) {
      for (int k = f->succ_start[x]; k < f->succ_start[x + 1]; k++)
        if (visit(f, j, x, f->succ[k], true, &top)) return true;
      continue;
    }
    for (int k = 0; k < n->n_inputs; k++)
      if (visit(f, j, x, producer(f, n->inputs[k]), false, &top)) return true;
    kiln_outer_iter it = kiln_outer_reads(f->g, n); /* mutant 406: subgraph reads not followed */
    for (int v; !KILN_MUTANT(406) && kiln_outer_next(&it, &v);)
      if (visit(f, j, x, producer(f, v), false, &top)) return true;
  }
  return false;
}

/* True when the group (f->in_grp, convex) stays convex with j in it: no path leaves the
 * group and comes back into it. A path that did not run through j would break the group
 * as it is, so only paths from or to j need a look. */
static bool convex_with(fuse_ctx *f, int j) {
  return !path_through_outside(f, j, true) &&
         (KILN_MUTANT(62) || !path_through_outside(f, j, false)); /* mutant 62: forward only */
}

/* The node reading v when v's only use is that node, it is elementwise and ungrouped. */
static int sole_ew_user(const fuse_ctx *f, int v) {
  int u = only_reader(f, v);
  if (u < 0) return -1;
  return f->cls[u] == NC_EW && f->g->nodes.data[u].group == 0 ? u : -1;
}

static bool bcast_to(const kiln_type *t, const kiln_type *to) {
  if (t->rank > to->rank) return false;
  for (int d = 0; d < t->rank; d++) {
    int64_t a = t->dims[d].value, b = to->dims[to->rank - t->rank + d].value;
    if (a != 1 && a != b) return false;
  }
  return true;
}

/* Extends a group from value v (the anchor's result) by a chain of elementwise nodes. */
static void add_epilogue(fuse_ctx *f, int id, int v) {
  const kiln_type *shape = vtype(f, v);
  for (int u; (u = sole_ew_user(f, v)) >= 0;) {
    kiln_node *n = &f->g->nodes.data[u];
    if (!same_shape(vtype(f, n->outputs[0]), shape)) return;
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0 && n->inputs[k] != v && !bcast_to(vtype(f, n->inputs[k]), shape))
        return;
    n->group = id;
    f->n_added++;
    v = n->outputs[0];
  }
}

static bool extra_outputs_used(const fuse_ctx *f, const kiln_node *n) {
  for (int k = 1; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && f->uses.count[n->outputs[k]]) return true;
  return false;
}

/* (a) contraction + epilogue */
static void fuse_contractions(fuse_ctx *f, kiln_pass_ctx *ctx) {
  for (int i = 0; i < f->g->nodes.len; i++) {
    kiln_node *n = &f->g->nodes.data[i];
    if (f->cls[i] != NC_MM || n->group || sole_ew_user(f, n->outputs[0]) < 0) continue;
    n->group = f->next_id++;
    add_epilogue(f, n->group, n->outputs[0]);
    ctx->changes++;
  }
}

/* Prologue: elementwise producers of v of the given shape whose outputs are read only in
 * the group (recursively through their own inputs), at most PROLOGUE_DEPTH deep: this walk
 * and the lowering's recurse along the chain (100000 Relus before a ReduceSum overflowed the
 * stack); the producers further up fuse as an elementwise group of their own. */
enum { PROLOGUE_DEPTH = 64 };

static void add_prologue(fuse_ctx *f, int id, int v, const kiln_type *shape, int depth) {
  int p = producer(f, v);
  if (depth >= PROLOGUE_DEPTH || p < 0 || f->cls[p] != NC_EW || f->g->nodes.data[p].group) return;
  if (only_reader(f, v) < 0 && !KILN_MUTANT(17))
    return; /* mutant 17: prologue value used outside */
  kiln_node *n = &f->g->nodes.data[p];
  if (!same_shape(vtype(f, v), shape)) return;
  n->group = id;
  f->n_added++;
  for (int k = 0; k < n->n_inputs; k++) add_prologue(f, id, n->inputs[k], shape, depth + 1);
}

/* (c) reduction + prologue + epilogue */
static void fuse_reductions(fuse_ctx *f, kiln_pass_ctx *ctx) {
  for (int i = 0; i < f->g->nodes.len; i++) {
    kiln_node *n = &f->g->nodes.data[i];
    if (f->cls[i] != NC_RED || n->group) continue;
    int id = f->next_id;
    n->group = id;
    f->n_added = 0;
    add_prologue(f, id, n->inputs[0], vtype(f, n->inputs[0]), 0);
    if (!extra_outputs_used(f, n)) add_epilogue(f, id, n->outputs[0]);
    if (f->n_added == 0) {
      n->group = 0;
      continue;
    }
    f->next_id++;
    ctx->changes++;
  }
}

/* A min-heap of node ids: the members a sweep has still to grow from, smallest first. */
static void heap_push(fuse_ctx *f, int x) {
  int i = f->n_heap++;
  for (; i > 0 && f->heap[(i - 1) / 2] > x; i = (i - 1) / 2) f->heap[i] = f->heap[(i - 1) / 2];
  f->heap[i] = x;
}

static int heap_pop(fuse_ctx *f) {
  int top = f->heap[0], x = f->heap[--f->n_heap], i = 0;
  for (int c; (c = 2 * i + 1) < f->n_heap; i = c) {
    if (c + 1 < f->n_heap && f->heap[c + 1] < f->heap[c]) c++;
    if (f->heap[c] >= x) break;
    f->heap[i] = f->heap[c];
  }
  f->heap[i] = x;
  return top;
}

static void join(fuse_ctx *f, int id, int j) {
  f->in_grp[j] = true;
  f->g->nodes.data[j].group = id;
  f->members[f->n_members++] = j;
  if (j < f->lo) f->lo = j;
  if (j > f->hi && !KILN_MUTANT(401)) f->hi = j; /* mutant 401: the range's end not widened */
  if (j > f->cursor) heap_push(f, j);            /* the sweep has yet to reach it */
}

/* Tries to add node j to group id (members in f->in_grp); keeps it if the group stays
 * convex. */
static bool try_add(fuse_ctx *f, int id, int j, const kiln_type *shape) {
  kiln_node *n = &f->g->nodes.data[j];
  if (f->cls[j] != NC_EW || n->group || !same_shape(vtype(f, n->outputs[0]), shape)) return false;
  if (!KILN_MUTANT(16) && !convex_with(f, j)) return false; /* mutant 16: convexity not checked */
  join(f, id, j);
  return true;
}

/* Neighbours of member m (producers of its inputs, readers of its output) that join. */
static bool grow_from(fuse_ctx *f, int id, int m, const kiln_type *shape) {
  kiln_graph *g = f->g;
  const kiln_node *n = &g->nodes.data[m];
  bool grew = false;
  for (int k = 0; k < n->n_inputs; k++) {
    int p = producer(f, n->inputs[k]);
    if (p >= 0) grew |= try_add(f, id, p, shape);
  }
  int v = n->outputs[0];
  for (int s = f->succ_start[m]; v >= 0 && s < f->succ_start[m + 1]; s++) {
    int j = f->succ[s];
    const kiln_node *c = &g->nodes.data[j];
    bool reads = false;
    for (int k = 0; k < c->n_inputs; k++) reads |= c->inputs[k] == v;
    if (reads) grew |= try_add(f, id, j, shape);
  }
  return grew;
}

/* Grows the group from each member in node order, members that join ahead of the sweep
 * included, until a sweep adds none. */
static void grow_group(fuse_ctx *f, int id, const kiln_type *shape) {
  for (bool grew = true; grew;) {
    grew = false;
    f->cursor = -1;
    for (int i = 0; i < f->n_members; i++) heap_push(f, f->members[i]);
    while (f->n_heap > 0) {
      f->cursor = heap_pop(f);
      grew |= grow_from(f, id, f->cursor, shape);
    }
  }
}

/* (b) maximal elementwise DAGs of one output shape */
static void fuse_elementwise(fuse_ctx *f, kiln_pass_ctx *ctx) {
  kiln_graph *g = f->g;
  for (int i = 0; i < g->nodes.len; i++) {
    kiln_node *n = &g->nodes.data[i];
    if (f->cls[i] != NC_EW || n->group) continue;
    int id = f->next_id;
    const kiln_type *shape = vtype(f, n->outputs[0]);
    f->n_members = 0;
    f->lo = f->hi = f->cursor = i;
    join(f, id, i);
    grow_group(f, id, shape);
    for (int k = 0; k < f->n_members; k++) f->in_grp[f->members[k]] = false;
    if (f->n_members == 1) {
      n->group = 0;
      continue;
    }
    f->next_id++;
    ctx->changes++;
  }
}

kiln_status kiln_pass_fusion(kiln_pass_ctx *ctx, kiln_graph *g) {
  int nn = g->nodes.len;
  fuse_ctx f = {0};
  f.g = g;
  f.cls = kiln_xcalloc((size_t)nn + 1, sizeof(node_class));
  f.in_grp = kiln_xcalloc((size_t)nn + 1, 1);
  f.members = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  f.seen = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  f.stack = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  f.heap = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  f.next_id = 1;
  kiln_uses_compute(g, &f.uses);
  build_succ(&f);
  classify(&f, ctx->opts ? ctx->opts->fuse_classify : NULL);
  fuse_contractions(&f, ctx);
  fuse_reductions(&f, ctx);
  fuse_elementwise(&f, ctx);
  kiln_uses_free(&f.uses);
  free(f.cls);
  free(f.in_grp);
  free(f.members);
  free(f.seen);
  free(f.stack);
  free(f.heap);
  free(f.succ_start);
  free(f.succ);
  return KILN_OK;
}
