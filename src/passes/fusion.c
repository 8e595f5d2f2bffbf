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
#include "passes.h"

typedef enum node_class { NC_OTHER, NC_EW, NC_RED, NC_MM, NC_COUNT } node_class;

typedef struct fuse_ctx {
  kiln_graph *g;
  node_class *cls;
  int *n_uses;  /* per value: reads by root nodes, +2 per graph output or subgraph read */
  int *user;    /* per value: the reading node when n_uses == 1 */
  bool *in_grp; /* membership of the elementwise group being grown */
  bool *taint;  /* scratch for the convexity check */
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

/* Values read by the subgraphs of n count as used outside any group. */
static void mark_sub_reads(fuse_ctx *f, const kiln_node *n) {
  for (int a = 0; a < n->n_attrs; a++) {
    const kiln_attr *at = &n->attrs[a];
    int cnt = at->kind == KILN_ATTR_GRAPH ? 1 : at->kind == KILN_ATTR_GRAPHS ? at->n : 0;
    for (int k = 0; k < cnt; k++) {
      const kiln_graph *sub = at->kind == KILN_ATTR_GRAPH ? at->g : at->graphs[k];
      for (int v = 0; sub && sub->parent == f->g && v < sub->values.len; v++)
        if (sub->values.data[v].kind == KILN_VALUE_OUTER && sub->values.data[v].outer >= 0)
          f->n_uses[sub->values.data[v].outer] += 2;
    }
  }
}

static void count_uses(fuse_ctx *f) {
  kiln_graph *g = f->g;
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0) f->n_uses[n->inputs[k]]++, f->user[n->inputs[k]] = i;
    mark_sub_reads(f, n);
  }
  for (int i = 0; i < g->outputs.len; i++) f->n_uses[g->outputs.data[i]] += 2;
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

/* True when no path leaves the group (f->in_grp) and comes back into it. */
static bool convex(fuse_ctx *f) {
  kiln_graph *g = f->g;
  bool ok = true;
  for (int i = 0; i < g->nodes.len && ok; i++) {
    const kiln_node *n = &g->nodes.data[i];
    bool from_group = false, from_taint = false;
    for (int k = 0; k < n->n_inputs; k++) {
      int p = producer(f, n->inputs[k]);
      if (p < 0) continue;
      from_group |= f->in_grp[p];
      from_taint |= f->taint[p];
    }
    f->taint[i] = !f->in_grp[i] && (from_group || from_taint);
    ok = !(f->in_grp[i] && from_taint);
  }
  if (g->nodes.len > 0) memset(f->taint, 0, (size_t)g->nodes.len);
  return ok;
}

/* The node reading v when v's only use is that node, it is elementwise and ungrouped. */
static int sole_ew_user(const fuse_ctx *f, int v) {
  if (v < 0 || f->n_uses[v] != 1) return -1;
  int u = f->user[v];
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
    v = n->outputs[0];
  }
}

static bool extra_outputs_used(const fuse_ctx *f, const kiln_node *n) {
  for (int k = 1; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && f->n_uses[n->outputs[k]]) return true;
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
  if (f->n_uses[v] != 1 && !KILN_MUTANT(17)) return; /* mutant 17: prologue value used outside */
  kiln_node *n = &f->g->nodes.data[p];
  if (!same_shape(vtype(f, v), shape)) return;
  n->group = id;
  for (int k = 0; k < n->n_inputs; k++) add_prologue(f, id, n->inputs[k], shape, depth + 1);
}

static int count_members(const fuse_ctx *f, int id) {
  int members = 0;
  for (int j = 0; j < f->g->nodes.len; j++) members += f->g->nodes.data[j].group == id;
  return members;
}

/* (c) reduction + prologue + epilogue */
static void fuse_reductions(fuse_ctx *f, kiln_pass_ctx *ctx) {
  for (int i = 0; i < f->g->nodes.len; i++) {
    kiln_node *n = &f->g->nodes.data[i];
    if (f->cls[i] != NC_RED || n->group) continue;
    int id = f->next_id;
    n->group = id;
    add_prologue(f, id, n->inputs[0], vtype(f, n->inputs[0]), 0);
    if (!extra_outputs_used(f, n)) add_epilogue(f, id, n->outputs[0]);
    if (count_members(f, id) == 1) {
      n->group = 0;
      continue;
    }
    f->next_id++;
    ctx->changes++;
  }
}

/* Tries to add node j to group id (members in f->in_grp); keeps it if the group stays
 * convex. */
static bool try_add(fuse_ctx *f, int id, int j, const kiln_type *shape) {
  kiln_node *n = &f->g->nodes.data[j];
  if (f->cls[j] != NC_EW || n->group || !same_shape(vtype(f, n->outputs[0]), shape)) return false;
  f->in_grp[j] = true;
  if (!KILN_MUTANT(16) && !convex(f)) { /* mutant 16: convexity not checked */
    f->in_grp[j] = false;
    return false;
  }
  n->group = id;
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
  for (int j = m + 1; j < g->nodes.len && f->n_uses[v] > 0; j++) {
    const kiln_node *c = &g->nodes.data[j];
    bool reads = false;
    for (int k = 0; k < c->n_inputs; k++) reads |= c->inputs[k] == v;
    if (reads) grew |= try_add(f, id, j, shape);
  }
  return grew;
}

/* (b) maximal elementwise DAGs of one output shape */
static void fuse_elementwise(fuse_ctx *f, kiln_pass_ctx *ctx) {
  kiln_graph *g = f->g;
  for (int i = 0; i < g->nodes.len; i++) {
    kiln_node *n = &g->nodes.data[i];
    if (f->cls[i] != NC_EW || n->group) continue;
    int id = f->next_id;
    const kiln_type *shape = vtype(f, n->outputs[0]);
    memset(f->in_grp, 0, (size_t)g->nodes.len);
    f->in_grp[i] = true;
    n->group = id;
    for (bool grew = true; grew;) {
      grew = false;
      for (int m = 0; m < g->nodes.len; m++)
        if (f->in_grp[m]) grew |= grow_from(f, id, m, shape);
    }
    if (count_members(f, id) == 1) {
      n->group = 0;
      continue;
    }
    f->next_id++;
    ctx->changes++;
  }
}

kiln_status kiln_pass_fusion(kiln_pass_ctx *ctx, kiln_graph *g) {
  int nv = g->values.len, nn = g->nodes.len;
  fuse_ctx f = {g,
                kiln_xcalloc((size_t)nn + 1, sizeof(node_class)),
                kiln_xcalloc((size_t)nv + 1, sizeof(int)),
                kiln_xcalloc((size_t)nv + 1, sizeof(int)),
                kiln_xcalloc((size_t)nn + 1, 1),
                kiln_xcalloc((size_t)nn + 1, 1),
                1};
  count_uses(&f);
  classify(&f, ctx->opts ? ctx->opts->fuse_classify : NULL);
  fuse_contractions(&f, ctx);
  fuse_reductions(&f, ctx);
  fuse_elementwise(&f, ctx);
  free(f.cls);
  free(f.n_uses);
  free(f.user);
  free(f.in_grp);
  free(f.taint);
  return KILN_OK;
}
