/* Graph editing for passes: use counts, replacing values, dead nodes, compaction with a
 * stable topological sort. See rewrite.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "graph/analysis.h"
#include "ops/op_desc.h"
#include "rewrite.h"

static void add_reader(kiln_rw *rw, int v, int node) {
  if (v < 0) return;
  if (rw->n_readers[v] == rw->cap_readers[v]) {
    rw->cap_readers[v] = rw->cap_readers[v] ? 2 * rw->cap_readers[v] : 2;
    rw->readers[v] =
        kiln_xrealloc(rw->readers[v], (size_t)rw->cap_readers[v] * sizeof *rw->readers[v]);
  }
  rw->readers[v][rw->n_readers[v]++] = node;
}

static void grow(void **p, int old_n, int new_n, size_t elem) {
  *p = kiln_xrealloc(*p, (size_t)(new_n + 1) * elem);
  memset((char *)*p + (size_t)old_n * elem, 0, (size_t)(new_n + 1 - old_n) * elem);
}

void kiln_rw_sync(kiln_rw *rw) {
  kiln_graph *g = rw->g;
  if (g->values.len > rw->n_values) {
    int nv = g->values.len;
    grow((void **)&rw->readers, rw->n_values, nv, sizeof *rw->readers);
    grow((void **)&rw->n_readers, rw->n_values, nv, sizeof *rw->n_readers);
    grow((void **)&rw->cap_readers, rw->n_values, nv, sizeof *rw->cap_readers);
    grow((void **)&rw->uses, rw->n_values, nv, sizeof *rw->uses);
    grow((void **)&rw->pinned, rw->n_values, nv, sizeof *rw->pinned);
    grow((void **)&rw->is_output, rw->n_values, nv, sizeof *rw->is_output);
    grow((void **)&rw->dead_value, rw->n_values, nv, sizeof *rw->dead_value);
    rw->n_values = nv;
  }
  if (g->nodes.len > rw->n_nodes) {
    grow((void **)&rw->dead_node, rw->n_nodes, g->nodes.len, sizeof *rw->dead_node);
    for (int i = rw->n_nodes; i < g->nodes.len; i++) /* new nodes' inputs */
      for (int k = 0; k < g->nodes.data[i].n_inputs; k++)
        add_reader(rw, g->nodes.data[i].inputs[k], i);
    rw->n_nodes = g->nodes.len;
  }
}

void kiln_rw_begin(kiln_rw *rw, kiln_graph *g) {
  memset(rw, 0, sizeof *rw);
  rw->g = g;
  kiln_rw_sync(rw);
  kiln_uses u;
  kiln_uses_compute(g, &u);
  memcpy(rw->uses, u.count, (size_t)g->values.len * sizeof *rw->uses);
  memcpy(rw->pinned, u.pinned, (size_t)g->values.len * sizeof *rw->pinned);
  memcpy(rw->is_output, u.output, (size_t)g->values.len * sizeof *rw->is_output);
  kiln_uses_free(&u);
}

void kiln_rw_abort(kiln_rw *rw) {
  for (int v = 0; v < rw->n_values; v++) free(rw->readers[v]);
  free(rw->readers);
  free(rw->n_readers);
  free(rw->cap_readers);
  free(rw->uses);
  free(rw->pinned);
  free(rw->is_output);
  free(rw->dead_value);
  free(rw->dead_node);
  memset(rw, 0, sizeof *rw);
}

/* ---- replacing ---- */
bool kiln_rw_can_replace(const kiln_rw *rw, int from, int to) {
  if (from == to || from < 0 || to < 0 || rw->pinned[from]) return false;
  if (!rw->is_output[from]) return true;
  /* the graph output keeps its name: `to` takes it, so `to` must be free to rename */
  const kiln_value *tv = &rw->g->values.data[to];
  return !rw->pinned[to] && !rw->is_output[to] &&
         (tv->kind == KILN_VALUE_NODE || tv->kind == KILN_VALUE_CONST);
}

void kiln_rw_swap_names(kiln_rw *rw, int a, int b) {
  kiln_graph *g = rw->g;
  const char *na = g->values.data[a].name;
  g->values.data[a].name = g->values.data[b].name;
  g->values.data[b].name = na;
  kiln_strmap_put(&g->names, g->values.data[a].name, a);
  kiln_strmap_put(&g->names, g->values.data[b].name, b);
}

bool kiln_rw_replace(kiln_rw *rw, int from, int to) {
  if (!kiln_rw_can_replace(rw, from, to)) return false;
  kiln_graph *g = rw->g;
  for (int r = 0; r < rw->n_readers[from]; r++) {
    int i = rw->readers[from][r];
    if (rw->dead_node[i]) continue;
    kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] == from) n->inputs[k] = to, rw->uses[to]++, add_reader(rw, to, i);
    if (KILN_MUTANT(296) && rw->n_readers[from] > 1) break; /* mutant 296: the first reader only */
  }
  rw->n_readers[from] = 0; /* dead readers keep reading it; nothing else does */
  if (rw->is_output[from]) {
    for (int i = 0; i < g->outputs.len; i++)
      if (g->outputs.data[i] == from) g->outputs.data[i] = to, rw->uses[to]++;
    kiln_rw_swap_names(rw, from, to);
    rw->is_output[to] = true;
    rw->is_output[from] = false;
  }
  rw->uses[from] = 0;
  return true;
}

void kiln_rw_set_input(kiln_rw *rw, int n, int k, int v) {
  kiln_node *node = &rw->g->nodes.data[n];
  if (node->inputs[k] >= 0) rw->uses[node->inputs[k]]--;
  node->inputs[k] = v;
  if (v >= 0) rw->uses[v]++;
  add_reader(rw, v, n);
}

void kiln_rw_append_input(kiln_rw *rw, int n, int v) {
  kiln_node *node = &rw->g->nodes.data[n];
  int *in = kiln_graph_alloc(rw->g, (size_t)(node->n_inputs + 1) * sizeof(int));
  if (node->n_inputs) memcpy(in, node->inputs, (size_t)node->n_inputs * sizeof(int));
  in[node->n_inputs] = -1;
  node->inputs = in;
  node->n_inputs++;
  kiln_rw_set_input(rw, n, node->n_inputs - 1, v);
}

void kiln_rw_kill_node(kiln_rw *rw, int n) {
  if (rw->dead_node[n]) return;
  kiln_node *node = &rw->g->nodes.data[n];
  rw->dead_node[n] = true;
  for (int k = 0; k < node->n_inputs; k++)
    if (node->inputs[k] >= 0) rw->uses[node->inputs[k]]--;
  kiln_outer_iter it = kiln_outer_reads(rw->g, node);
  for (int v; kiln_outer_next(&it, &v);) rw->uses[v]--;
}

void kiln_rw_kill_const(kiln_rw *rw, int v) {
  rw->dead_value[v] = true;
}

bool kiln_rw_node_unused(const kiln_rw *rw, int n) {
  const kiln_node *node = &rw->g->nodes.data[n];
  for (int k = 0; k < node->n_outputs; k++)
    if (node->outputs[k] >= 0 && rw->uses[node->outputs[k]] > 0) return false;
  return true;
}

/* ---- building ---- */
kiln_status kiln_rw_add_const(kiln_rw *rw, kiln_tensor *t, int *out_id) {
  KILN_TRY(kiln_graph_add_const(rw->g, "", t, out_id));
  kiln_rw_sync(rw);
  return KILN_OK;
}

kiln_status kiln_rw_add_node(kiln_rw *rw, const char *op_type, int64_t opset, int n_in,
                             const int *inputs, kiln_type type, int *out_node, int *out_value) {
  kiln_graph *g = rw->g;
  int v;
  KILN_TRY(kiln_graph_add_node(g, op_type, "", "", n_in, inputs, 1, NULL, &v));
  int n = g->nodes.len - 1;
  g->nodes.data[n].opset = opset;
  g->values.data[v].type = type;
  kiln_rw_sync(rw);
  for (int k = 0; k < n_in; k++)
    if (inputs[k] >= 0) rw->uses[inputs[k]]++;
  *out_node = n;
  *out_value = v;
  return KILN_OK;
}

void kiln_rw_set_ints(kiln_rw *rw, int n, const char *name, int n_vals, const int64_t *vals) {
  kiln_node *node = &rw->g->nodes.data[n];
  kiln_attr *a = (kiln_attr *)kiln_node_attr(node, name);
  if (!a) a = kiln_node_add_attr(rw->g, n, name, KILN_ATTR_INTS);
  a->kind = KILN_ATTR_INTS;
  a->n = n_vals;
  a->ints = kiln_graph_alloc(rw->g, (size_t)(n_vals + 1) * sizeof(int64_t));
  if (n_vals) memcpy(a->ints, vals, (size_t)n_vals * sizeof(int64_t));
}

/* ---- reading ---- */
const kiln_tensor *kiln_rw_const(const kiln_graph *g, int v) {
  if (v < 0 || g->values.data[v].kind != KILN_VALUE_CONST) return NULL;
  return g->values.data[v].data;
}

int kiln_rw_producer(const kiln_graph *g, int v) {
  if (v < 0 || g->values.data[v].kind != KILN_VALUE_NODE) return -1;
  return g->values.data[v].node;
}

bool kiln_rw_const_ints(const kiln_graph *g, int v, int max, int64_t *out, int *out_n) {
  const kiln_tensor *t = kiln_rw_const(g, v);
  if (!t || !kiln_dtype_is_int(t->dtype) || t->numel > max || t->rank > 1) return false;
  for (int64_t i = 0; i < t->numel; i++) out[i] = kiln_load_i64(t->dtype, t->data, (size_t)i);
  *out_n = (int)t->numel;
  return true;
}

bool kiln_rw_const_all(const kiln_tensor *t, double x) {
  if (t->dtype == KILN_STRING || kiln_dtype_class_of(t->dtype) == KILN_CLASS_NONE) return false;
  bool want_neg_zero = x == 0 && signbit(x);
  for (int64_t i = 0; i < (KILN_MUTANT(97) && t->numel > 1 ? 1 : t->numel); i++) {
    double e = kiln_load_f64(t->dtype, t->data, (size_t)i); /* mutant 97: the first only */
    if (e != x) return false;
    if (x == 0 && kiln_dtype_is_float(t->dtype) && (signbit(e) != 0) != want_neg_zero &&
        (want_neg_zero || !KILN_MUTANT(202))) /* mutant 202: the sign checked for -0 only */
      return false;
  }
  return true;
}

bool kiln_rw_is_random(kiln_op op) {
  return kiln_op_has(op, KILN_OPF_RANDOM);
}

/* ---- compaction ---- */
typedef struct topo {
  const kiln_graph *g;
  const kiln_rw *rw;
  int *deps_start, *deps; /* CSR: producer node ids of each node */
  int n_deps, cap_deps;
  int *order, n_order;
  unsigned char *state; /* 0 new, 1 on the stack, 2 emitted */
} topo;

static void add_dep(topo *t, int value_id) {
  int p = kiln_rw_producer(t->g, value_id);
  if (p < 0) return;
  if (t->n_deps == t->cap_deps) {
    t->cap_deps = t->cap_deps ? 2 * t->cap_deps : 64;
    t->deps = kiln_xrealloc(t->deps, (size_t)t->cap_deps * sizeof(int));
  }
  t->deps[t->n_deps++] = p;
}

static void collect_deps(topo *t) {
  const kiln_graph *g = t->g;
  t->deps_start = kiln_xcalloc((size_t)g->nodes.len + 1, sizeof(int));
  for (int i = 0; i < g->nodes.len; i++) {
    t->deps_start[i] = t->n_deps;
    const kiln_node *n = &g->nodes.data[i];
    if (t->rw->dead_node[i]) continue;
    for (int k = 0; k < n->n_inputs; k++)
      if (n->inputs[k] >= 0) add_dep(t, n->inputs[k]);
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v);) add_dep(t, v);
  }
  t->deps_start[g->nodes.len] = t->n_deps;
}

/* Depth-first post-order from node `root`, visiting producers in input order. */
static kiln_status visit(topo *t, int root, int *stack, int *next) {
  int sp = 0;
  stack[sp] = root, next[sp] = t->deps_start[root], sp++;
  t->state[root] = 1;
  while (sp) {
    int n = stack[sp - 1];
    if (next[sp - 1] < t->deps_start[n + 1]) {
      int d = t->deps[next[sp - 1]++];
      if (t->rw->dead_node[d]) return KILN_BUG("a live node reads an output of a removed node");
      if (t->state[d] == 1) return KILN_BUG("the graph has a cycle");
      if (t->state[d] == 0) {
        t->state[d] = 1;
        stack[sp] = d, next[sp] = t->deps_start[d], sp++;
      }
      continue;
    }
    t->state[n] = 2;
    t->order[t->n_order++] = n;
    sp--;
  }
  return KILN_OK;
}

static kiln_status topo_sort(topo *t) {
  int nn = t->g->nodes.len;
  collect_deps(t);
  t->order = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  t->state = kiln_xcalloc((size_t)nn + 1, 1);
  int *stack = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  int *next = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  kiln_status st = KILN_OK;
  for (int i = 0; i < nn && !st; i++)
    if (!t->rw->dead_node[i] && t->state[i] == 0) st = visit(t, i, stack, next);
  free(stack);
  free(next);
  return st;
}

static void topo_free(topo *t) {
  free(t->deps_start);
  free(t->deps);
  free(t->order);
  free(t->state);
}

/* Values that stay, in their old order; vmap[old] = new id or -1. */
static int map_values(const kiln_rw *rw, int *vmap) {
  const kiln_graph *g = rw->g;
  int nv = 0;
  for (int v = 0; v < g->values.len; v++) {
    const kiln_value *val = &g->values.data[v];
    bool dead = rw->dead_value[v] || (val->kind == KILN_VALUE_NODE && rw->dead_node[val->node]);
    vmap[v] = dead ? -1 : nv++;
  }
  return nv;
}

static void remap_ids(int *ids, int n, const int *vmap) {
  for (int i = 0; i < n; i++)
    if (ids[i] >= 0) ids[i] = vmap[ids[i]];
}

static void remap_subgraphs(kiln_graph *g, kiln_node *n, const int *vmap) {
  kiln_outer_iter it = kiln_outer_reads(g, n);
  for (int v; kiln_outer_next(&it, &v);) it.at->outer = vmap[v];
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
  return x < y ? -1 : x > y;
}

/* Frees the data of removed constants (the root graph owns every tensor). */
static void free_dead_tensors(kiln_rw *rw) {
  kiln_graph *g = rw->g, *root = kiln_graph_root(g);
  int n_dead = 0;
  void **dead = kiln_xcalloc((size_t)g->values.len + 1, sizeof *dead);
  for (int v = 0; v < g->values.len; v++)
    if (rw->dead_value[v]) dead[n_dead++] = g->values.data[v].data;
  qsort(dead, (size_t)n_dead, sizeof *dead, cmp_ptr);
  int w = 0;
  for (int i = 0; n_dead && i < root->owned.len; i++) {
    kiln_tensor *t = root->owned.data[i];
    void *key = t;
    if (bsearch(&key, dead, (size_t)n_dead, sizeof *dead, cmp_ptr)) kiln_tensor_free(t);
    else root->owned.data[w++] = t;
  }
  if (n_dead) root->owned.len = w;
  free(dead);
}

static void rebuild(kiln_rw *rw, const topo *t, const int *vmap, int nv) {
  kiln_graph *g = rw->g;
  kiln_node *nodes = kiln_xcalloc((size_t)t->n_order + 1, sizeof *nodes);
  int *nmap = kiln_xcalloc((size_t)g->nodes.len + 1, sizeof(int));
  for (int i = 0; i < t->n_order; i++) {
    nodes[i] = g->nodes.data[t->order[i]];
    nmap[t->order[i]] = i;
    remap_ids(nodes[i].inputs, nodes[i].n_inputs, vmap);
    remap_ids(nodes[i].outputs, nodes[i].n_outputs, vmap);
    if (!KILN_MUTANT(249)) remap_subgraphs(g, &nodes[i], vmap); /* mutant 249: not renumbered */
  }
  if (t->n_order)
    memcpy(g->nodes.data, nodes, (size_t)t->n_order * sizeof *nodes); /* none: data may be NULL */
  g->nodes.len = t->n_order;
  kiln_strmap_free(&g->names);
  for (int v = 0; v < g->values.len; v++) {
    if (vmap[v] < 0) continue;
    kiln_value val = g->values.data[v];
    if (val.kind == KILN_VALUE_NODE) val.node = nmap[val.node];
    g->values.data[vmap[v]] = val;
    kiln_strmap_put(&g->names, val.name, vmap[v]);
  }
  g->values.len = nv;
  remap_ids(g->inputs.data, g->inputs.len, vmap);
  remap_ids(g->outputs.data, g->outputs.len, vmap);
  free(nodes);
  free(nmap);
}

kiln_status kiln_rw_end(kiln_rw *rw) {
  kiln_rw_sync(rw);
  topo t = {.g = rw->g, .rw = rw};
  kiln_status st = topo_sort(&t);
  if (!st) {
    int *vmap = kiln_xcalloc((size_t)rw->g->values.len + 1, sizeof(int));
    int nv = map_values(rw, vmap);
    free_dead_tensors(rw);
    rebuild(rw, &t, vmap, nv);
    free(vmap);
  }
  topo_free(&t);
  kiln_rw_abort(rw);
  return st;
}
