/* Pass cse: common subexpression elimination.
 *   - Constants with the same dtype, shape and bytes become one (the first in value order).
 *   - Nodes with the same op, domain, opset, inputs and attributes become one (the first in
 *     topological order). Nodes are visited in order, so once the inputs of two nodes have
 *     been merged the nodes themselves compare equal: one sweep merges whole chains.
 * Not merged: random ops, nodes with subgraphs, ops of other domains (they may have
 * effects), nodes without outputs. A node whose output is used where the first node has
 * omitted that output stays. Graph outputs keep their names (kiln_rw_replace). */
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

enum { HASH_PREFIX = 4096 }; /* bytes of constant data hashed; equal hashes compare fully */

typedef struct table {
  int *slots; /* ids + 1; 0 = empty */
  uint64_t *hashes;
  size_t cap;
} table;

static void table_init(table *t, int n) {
  t->cap = 16;
  while (t->cap < (size_t)n * 2) t->cap *= 2;
  t->slots = kiln_xcalloc(t->cap, sizeof *t->slots);
  t->hashes = kiln_xcalloc(t->cap, sizeof *t->hashes);
}

static void table_free(table *t) {
  free(t->slots);
  free(t->hashes);
}

/* Returns an equal earlier id, or inserts id and returns -1. */
static int table_find_or_add(table *t, uint64_t h, int id, const void *ctx,
                             bool (*eq)(const void *ctx, int a, int b)) {
  for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    if (!t->slots[i]) {
      t->slots[i] = id + 1;
      t->hashes[i] = h;
      return -1;
    }
    if (t->hashes[i] == h && eq(ctx, t->slots[i] - 1, id)) return t->slots[i] - 1;
  }
}

/* ---- constants ---- */
static bool tensor_equal(const kiln_tensor *a, const kiln_tensor *b) {
  if ((a->dtype != b->dtype && !KILN_MUTANT(199)) || a->rank != b->rank || a->numel != b->numel)
    return false; /* mutant 199: constants of one shape and bytes merged whatever their dtype */
  if (KILN_MUTANT(377) && a->numel == 0) return true; /* mutant 377: empties equal (no data) */
  if (memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0 && !KILN_MUTANT(96))
    return false; /* mutant 96: constants of one size and bytes merged whatever their shape */
  if (a->dtype == KILN_STRING) {
    for (int64_t i = 0; i < a->numel; i++)
      if (strcmp(((char **)a->data)[i], ((char **)b->data)[i]) != 0) return false;
    return true;
  }
  if (KILN_MUTANT(261) && kiln_dtype_is_float(a->dtype)) { /* mutant 261: by value (-0 == +0) */
    for (int64_t i = 0; i < a->numel; i++)
      if (kiln_load_f64(a->dtype, a->data, (size_t)i) !=
          kiln_load_f64(b->dtype, b->data, (size_t)i))
        return false;
    return true;
  }
  size_t n = kiln_tensor_nbytes(a); /* mutant 89: only the hashed prefix compared */
  return memcmp(a->data, b->data, KILN_MUTANT(89) && n > HASH_PREFIX ? HASH_PREFIX : n) == 0;
}

static uint64_t tensor_hash(const kiln_tensor *t) {
  uint64_t h = kiln_hash_bytes(&t->dtype, KILN_MUTANT(199) ? 0 : sizeof t->dtype, /* mutant 199 */
                               14695981039346656037ull);
  /* mutant 96: the shape left out of the hash; mutant 377: an empty tensor's too */
  if (!KILN_MUTANT(96) && !(KILN_MUTANT(377) && t->numel == 0))
    h = kiln_hash_bytes(t->dims, (size_t)t->rank * sizeof t->dims[0], h ^ (uint64_t)t->rank);
  if (t->dtype == KILN_STRING) return h;
  if (KILN_MUTANT(261) && kiln_dtype_is_float(t->dtype)) { /* mutant 261: values hashed */
    for (int64_t i = 0; i < t->numel && i < HASH_PREFIX; i++) {
      double v = kiln_load_f64(t->dtype, t->data, (size_t)i);
      v = v == 0 ? 0.0 : v; /* +0 for either zero */
      h = kiln_hash_bytes(&v, sizeof v, h);
    }
    return h;
  }
  size_t n = kiln_tensor_nbytes(t);
  return kiln_hash_bytes(t->data, n < HASH_PREFIX ? n : HASH_PREFIX, h);
}

static bool const_eq(const void *ctx, int a, int b) {
  const kiln_graph *g = ctx;
  return tensor_equal(g->values.data[a].data, g->values.data[b].data);
}

static int64_t merge_constants(kiln_rw *rw) {
  kiln_graph *g = rw->g;
  table t;
  int64_t merged = 0;
  table_init(&t, g->values.len);
  for (int v = 0; v < g->values.len; v++) {
    if (g->values.data[v].kind != KILN_VALUE_CONST || rw->pinned[v]) continue;
    int first = table_find_or_add(&t, tensor_hash(g->values.data[v].data), v, g, const_eq);
    if (first < 0 || !kiln_rw_replace(rw, v, first)) continue;
    kiln_rw_kill_const(rw, v);
    merged++;
  }
  table_free(&t);
  return merged;
}

/* ---- nodes ---- */
static bool attr_equal(const kiln_attr *a, const kiln_attr *b) {
  if (strcmp(a->name, b->name) != 0 || a->kind != b->kind) return false;
  switch (a->kind) {
  case KILN_ATTR_FLOAT:
    if (KILN_MUTANT(7)) return true;           /* mutant 7: float attributes not compared */
    if (KILN_MUTANT(161)) return a->f == b->f; /* mutant 161: compared as numbers (-0 == +0) */
    return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case KILN_ATTR_INT: return a->i == b->i;
  case KILN_ATTR_STRING:
    if (KILN_MUTANT(56)) return true; /* mutant 56: string attributes (modes) not compared */
    return (a->s_len == b->s_len || (KILN_MUTANT(339) && a->s_len < b->s_len)) &&
           !memcmp(a->s, b->s, a->s_len); /* mutant 339: over the first one's length */
  case KILN_ATTR_TENSOR: /* mutant 168: tensor attributes compared by dtype and size only */
    if (KILN_MUTANT(168)) return a->t->dtype == b->t->dtype && a->t->numel == b->t->numel;
    return tensor_equal(a->t, b->t);
  case KILN_ATTR_TYPE_PROTO: return kiln_type_equal(&a->tp, &b->tp);
  case KILN_ATTR_FLOATS:
    return a->n == b->n && /* mutant 228: n bytes compared (sizeof(float) dropped) */
           !memcmp(a->floats, b->floats, (size_t)a->n * (KILN_MUTANT(228) ? 1 : sizeof(float)));
  case KILN_ATTR_INTS:
    return a->n == b->n && /* mutant 126: n * 4 bytes compared (half of the int64s) */
           !memcmp(a->ints, b->ints, (size_t)a->n * (KILN_MUTANT(126) ? 4 : sizeof(int64_t)));
  case KILN_ATTR_STRINGS:
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n && !KILN_MUTANT(198); i++) /* mutant 198: the count only */
      if (strcmp(a->strings[i], b->strings[i]) != 0) return false;
    return true;
  default: return false; /* lists of tensors, graphs, types: not compared */
  }
}

static bool node_eq(const void *ctx, int ia, int ib) {
  const kiln_graph *g = ctx;
  const kiln_node *a = &g->nodes.data[ia], *b = &g->nodes.data[ib];
  if (a->op != b->op || strcmp(a->op_type, b->op_type) != 0 || a->opset != b->opset ||
      a->n_inputs != b->n_inputs || (a->n_outputs != b->n_outputs && !KILN_MUTANT(297)) ||
      a->n_attrs != b->n_attrs) /* mutant 297: output counts not compared */
    return false;
  if (KILN_MUTANT(61) && a->n_inputs == 2 && a->inputs[0] == b->inputs[1] &&
      a->inputs[1] == b->inputs[0]) /* mutant 61: every binary op taken as commutative */
    return true;
  if (memcmp(a->inputs, b->inputs, (size_t)a->n_inputs * sizeof(int)) != 0) return false;
  for (int k = 0; k < a->n_attrs - KILN_MUTANT(341); k++) { /* mutant 341: the last not compared */
    const kiln_attr *other = kiln_node_attr(b, a->attrs[k].name);
    if (!other || !attr_equal(&a->attrs[k], other)) return false;
  }
  return true;
}

static uint64_t node_hash(const kiln_node *n) {
  uint64_t h = kiln_hash_bytes(n->op_type, strlen(n->op_type), 14695981039346656037ull);
  if (KILN_MUTANT(61) && n->n_inputs == 2) /* mutant 61: operand order left out of the hash */
    return h + (uint64_t)n->inputs[0] + (uint64_t)n->inputs[1];
  h = kiln_hash_bytes(n->inputs, (size_t)n->n_inputs * sizeof(int), h ^ (uint64_t)n->opset);
  for (int k = 0; k < n->n_attrs; k++) { /* order-independent over attributes */
    const kiln_attr *a = &n->attrs[k];
    uint64_t ha = kiln_hash_bytes(a->name, strlen(a->name), (uint64_t)a->kind);
    if (a->kind == KILN_ATTR_INT) ha = kiln_hash_bytes(&a->i, sizeof a->i, ha);
    if (a->kind == KILN_ATTR_INTS) /* mutant 126: n * 4 bytes hashed */
      ha = kiln_hash_bytes(a->ints, (size_t)a->n * (KILN_MUTANT(126) ? 4 : 8), ha);
    h += ha;
  }
  return h;
}

static bool mergeable(const kiln_node *n) {
  return n->op != KILN_OP_UNKNOWN && !kiln_rw_is_random(n->op) && !kiln_node_has_subgraph(n) &&
         n->n_outputs > 0;
}

/* Makes the readers of node `dup`'s outputs read node `first`'s; true when all moved. */
static bool merge_node(kiln_rw *rw, int first, int dup) {
  const kiln_node *a = &rw->g->nodes.data[first], *b = &rw->g->nodes.data[dup];
  for (int k = 0; k < b->n_outputs; k++) {
    int vb = b->outputs[k], va = a->outputs[k];
    if (vb >= 0 && rw->uses[vb] > 0 && !kiln_rw_can_replace(rw, vb, va) && !KILN_MUTANT(91))
      return false; /* mutant 91: merged although an output cannot move */
  }
  for (int k = 0; k < (KILN_MUTANT(405) ? 1 : b->n_outputs); k++) /* mutant 405: output 0 only */
    if (b->outputs[k] >= 0 && rw->uses[b->outputs[k]] > 0)
      kiln_rw_replace(rw, b->outputs[k], a->outputs[KILN_MUTANT(260) ? 0 : k]); /* mutant 260 */
  kiln_rw_kill_node(rw, dup);
  return true;
}

static int64_t merge_nodes(kiln_rw *rw) {
  kiln_graph *g = rw->g;
  table t;
  int64_t merged = 0;
  table_init(&t, g->nodes.len);
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    if (!mergeable(n)) continue;
    int first = table_find_or_add(&t, node_hash(n), i, g, node_eq);
    if (first >= 0 && merge_node(rw, first, i)) merged++;
  }
  table_free(&t);
  return merged;
}

kiln_status kiln_pass_cse(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  ctx->changes += merge_constants(&rw);
  ctx->changes += merge_nodes(&rw);
  return kiln_rw_end(&rw);
}
