/* Shared graph analyses: outer reads, use counts, groups and their order. See analysis.h. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "base/mutate.h"

/* ---- outer reads ---- */
kiln_outer_iter kiln_outer_reads(const kiln_graph *g, const kiln_node *n) {
  kiln_outer_iter it = {g, n, 0, 0, 0, NULL};
  return it;
}

static int attr_graph_count(const kiln_attr *at) {
  return at->kind == KILN_ATTR_GRAPH ? 1 : at->kind == KILN_ATTR_GRAPHS ? at->n : 0;
}

static kiln_graph *attr_graph(const kiln_attr *at, int k) {
  return at->kind == KILN_ATTR_GRAPH ? at->g : at->graphs[k];
}

/* Moves to the next subgraph of the node (the next attribute when this one has no more). */
static void next_sub(kiln_outer_iter *it) {
  it->value = 0;
  if (++it->sub >= attr_graph_count(&it->n->attrs[it->attr])) it->sub = 0, it->attr++;
}

bool kiln_outer_next(kiln_outer_iter *it, int *out_value) {
  while (it->attr < it->n->n_attrs) {
    const kiln_attr *at = &it->n->attrs[it->attr];
    if (it->sub >= attr_graph_count(at)) {
      it->attr++, it->sub = 0, it->value = 0;
      continue;
    }
    kiln_graph *sub = attr_graph(at, it->sub);
    if (!sub || sub->parent != it->g || it->value >= sub->values.len) {
      next_sub(it);
      continue;
    }
    kiln_value *sv = &sub->values.data[it->value++];
    if (sv->kind == KILN_VALUE_OUTER && sv->outer >= 0 && sv->outer < it->g->values.len) {
      it->at = sv;
      *out_value = sv->outer;
      return true;
    }
  }
  it->at = NULL;
  return false;
}

bool kiln_node_has_subgraph(const kiln_node *n) {
  for (int a = 0; a < n->n_attrs; a++)
    if (n->attrs[a].kind == KILN_ATTR_GRAPH || n->attrs[a].kind == KILN_ATTR_GRAPHS) return true;
  return false;
}

/* ---- uses ---- */
void kiln_uses_compute(const kiln_graph *g, kiln_uses *out) {
  int nv = g->values.len;
  out->n_values = nv;
  out->count = kiln_xcalloc((size_t)nv + 1, sizeof *out->count);
  out->last = kiln_xcalloc((size_t)nv + 1, sizeof *out->last);
  out->pinned = kiln_xcalloc((size_t)nv + 1, sizeof *out->pinned);
  out->output = kiln_xcalloc((size_t)nv + 1, sizeof *out->output);
  for (int v = 0; v < nv; v++) out->last[v] = -1;
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_inputs; k++) {
      int v = n->inputs[k];
      /* mutant 404: readers counted, not reads (a node reading v twice counts once) */
      if (v < 0 || v >= nv) continue;
      out->count[v] += !(KILN_MUTANT(404) && out->last[v] == i);
      out->last[v] = i;
    }
    kiln_outer_iter it = kiln_outer_reads(g, n);
    for (int v; kiln_outer_next(&it, &v);) /* mutant 376: counted, but not pinned */
      out->count[v]++, out->last[v] = i, out->pinned[v] = !KILN_MUTANT(376);
  }
  for (int i = 0; i < g->outputs.len; i++) {
    int v = g->outputs.data[i];
    if (v < 0 || v >= nv) continue;
    if (!KILN_MUTANT(356) || !out->count[v]) /* mutant 356: not counted when a node reads it */
      out->count[v]++;
    out->last[v] = g->nodes.len;
    out->output[v] = true;
  }
}

void kiln_uses_free(kiln_uses *u) {
  free(u->count);
  free(u->last);
  free(u->pinned);
  free(u->output);
  memset(u, 0, sizeof *u);
}

/* ---- groups ---- */

/* Open addressing from group id (>= 1) to group index. */
typedef struct id_map {
  int cap; /* a power of two */
  int *id, *index;
} id_map;

static int *id_slot(id_map *m, int id) {
  unsigned h = (unsigned)id * 2654435761u;
  for (int i = (int)(h & (unsigned)(m->cap - 1));; i = (i + 1) & (m->cap - 1))
    if (m->id[i] == id || m->id[i] == 0) {
      m->id[i] = id;
      return &m->index[i];
    }
}

static void number_groups(const kiln_graph *g, kiln_groups *s) {
  int nn = g->nodes.len;
  id_map m = {16, NULL, NULL};
  while (m.cap < 2 * nn) m.cap *= 2;
  m.id = kiln_xcalloc((size_t)m.cap, sizeof(int));
  m.index = kiln_xcalloc((size_t)m.cap, sizeof(int));
  for (int i = 0; i < nn; i++) {
    int gid = g->nodes.data[i].group;
    int *slot = gid > 0 ? id_slot(&m, gid) : NULL;
    if (slot && *slot > 0) {
      s->of_node[i] = *slot - 1;
      continue;
    }
    s->of_node[i] = s->n++;
    if (slot) *slot = s->n; /* index + 1: 0 marks a new slot */
  }
  free(m.id);
  free(m.index);
}

void kiln_groups_collect(const kiln_graph *g, kiln_groups *s) {
  int nn = g->nodes.len;
  memset(s, 0, sizeof *s);
  s->of_node = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  number_groups(g, s);
  s->start = kiln_xcalloc((size_t)s->n + 2, sizeof(int));
  s->nodes = kiln_xcalloc((size_t)nn + 1, sizeof(int));
  for (int i = 0; i < nn; i++) s->start[s->of_node[i] + 1]++;
  for (int gi = 0; gi < s->n; gi++) s->start[gi + 1] += s->start[gi];
  int *fill = kiln_xcalloc((size_t)s->n + 1, sizeof(int));
  for (int i = 0; i < nn; i++) s->nodes[s->start[s->of_node[i]] + fill[s->of_node[i]]++] = i;
  free(fill);
}

void kiln_groups_free(kiln_groups *s) {
  free(s->of_node);
  free(s->start);
  free(s->nodes);
  memset(s, 0, sizeof *s);
}

/* Successor lists: for each read of a value defined by another group, an edge from the
 * defining group to the reading one (repeats kept: indegree counts each). */
typedef struct edges {
  int *start, *to, *indeg;
} edges;

static int producer_group(const kiln_graph *g, const kiln_groups *s, int v, int reader) {
  if (v < 0 || v >= g->values.len || g->values.data[v].kind != KILN_VALUE_NODE) return -1;
  int p = s->of_node[g->values.data[v].node];
  return p == s->of_node[reader] ? -1 : p;
}

/* The edges into node i's group from its reads: counted when fill is NULL, else stored. */
static void node_edges(const kiln_graph *g, const kiln_groups *s, int i, edges *e, int *fill) {
  const kiln_node *n = &g->nodes.data[i];
  int to = s->of_node[i];
  kiln_outer_iter it = kiln_outer_reads(g, n);
  for (int k = 0, v;; k++) {
    if (k < n->n_inputs) v = n->inputs[k];
    else if (KILN_MUTANT(403) || !kiln_outer_next(&it, &v)) /* mutant 403: no subgraph edges */
      break;
    int from = producer_group(g, s, v, i);
    if (from < 0) continue;
    if (fill) e->to[e->start[from] + fill[from]++] = to;
    else e->start[from + 1]++, e->indeg[to]++;
  }
}

static void build_edges(const kiln_graph *g, const kiln_groups *s, edges *e) {
  e->start = kiln_xcalloc((size_t)s->n + 2, sizeof(int));
  e->indeg = kiln_xcalloc((size_t)s->n + 1, sizeof(int));
  for (int i = 0; i < g->nodes.len; i++) node_edges(g, s, i, e, NULL);
  for (int gi = 0; gi < s->n; gi++) e->start[gi + 1] += e->start[gi];
  e->to = kiln_xcalloc((size_t)e->start[s->n] + 1, sizeof(int));
  int *fill = kiln_xcalloc((size_t)s->n + 1, sizeof(int));
  for (int i = 0; i < g->nodes.len; i++) node_edges(g, s, i, e, fill);
  free(fill);
}

/* A binary min-heap of group indices. */
typedef struct heap {
  int n, *a;
} heap;

static void heap_push(heap *h, int x) {
  int i = h->n++;
  for (; i > 0 && h->a[(i - 1) / 2] > x; i = (i - 1) / 2) h->a[i] = h->a[(i - 1) / 2];
  h->a[i] = x;
}

static int heap_pop(heap *h) {
  int top = h->a[0], x = h->a[--h->n], i = 0;
  for (int c; (c = 2 * i + 1) < h->n; i = c) {
    if (c + 1 < h->n && h->a[c + 1] < h->a[c]) c++;
    if (h->a[c] >= x) break;
    h->a[i] = h->a[c];
  }
  h->a[i] = x;
  return top;
}

kiln_status kiln_groups_order(const kiln_graph *g, const kiln_groups *s, int *order) {
  edges e;
  build_edges(g, s, &e);
  heap h = {0, kiln_xcalloc((size_t)s->n + 1, sizeof(int))};
  for (int gi = 0; gi < s->n; gi++)
    if (e.indeg[gi] == 0) heap_push(&h, gi);
  int pos = 0;
  while (h.n > 0) {
    int pick = heap_pop(&h);
    order[pos++] = pick;
    for (int j = e.start[pick]; j < e.start[pick + 1]; j++)
      if (--e.indeg[e.to[j]] == 0) heap_push(&h, e.to[j]);
  }
  free(h.a);
  free(e.start);
  free(e.to);
  free(e.indeg);
  if (pos < s->n) return KILN_BUG("fusion groups form a cycle (a group is not convex)");
  return KILN_OK;
}
