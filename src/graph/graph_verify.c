/* The graph IR verifier: structural invariants that every pass must keep.
 *   - ids in range; every value has a name, unique in its graph;
 *   - SSA: a node output value points back to its node and position, and every
 *     node input is defined before the node (graph inputs, constants, outer
 *     values, outputs of earlier nodes): nodes are in topological order;
 *   - graph inputs are INPUT values, listed once; graph outputs are defined;
 *   - an OUTER value refers to a value of the parent graph that is defined
 *     before the node holding the subgraph;
 *   - types are well formed (kind, dtype, rank 0..KILN_MAX_RANK or -1);
 *     constants match their data; attributes are well formed, uniquely named,
 *     and graph-valued attributes are verified recursively.
 * Op schemas (arity, attribute kinds) are checked by the op registry, not here. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

enum { MAX_DEPTH = 64 };

typedef struct vctx {
  const kiln_graph *g;
  const bool *parent_defined; /* values of g->parent defined at the holding node; may be NULL */
  bool *defined;              /* values of g defined so far */
  int depth;
} vctx;

static kiln_status verify_graph(const kiln_graph *g, const bool *parent_defined, int depth);

/* "%name" of value id in g, for messages. */
static const char *vname(const kiln_graph *g, int id) {
  if (id < 0 || id >= g->values.len || !g->values.data[id].name) return "?";
  return g->values.data[id].name;
}

static kiln_status verify_type(const kiln_type *t) {
  if ((unsigned)t->kind >= KILN_TYPE_KIND_COUNT)
    return kiln_invalid("type kind %d is out of range", (int)t->kind);
  if (t->kind == KILN_TYPE_UNKNOWN) return KILN_OK;
  if ((unsigned)t->dtype >= KILN_DTYPE_COUNT)
    return kiln_invalid("element type %d is out of range", (int)t->dtype);
  if (t->rank < -1 || t->rank > KILN_MAX_RANK)
    return kiln_invalid("rank %d is outside -1..%d", t->rank, KILN_MAX_RANK);
  if (t->elem_seq && t->kind != KILN_TYPE_OPTIONAL)
    return kiln_invalid("elem_seq is set on a type that is not optional");
  return KILN_OK; /* dims: >= 0 known, < 0 symbolic (sym) or unknown */
}

static kiln_status verify_tensor(const kiln_tensor *t) {
  int64_t numel;
  if (!t) return kiln_invalid("tensor is NULL");
  if (!kiln_dtype_valid((int)t->dtype))
    return kiln_invalid("tensor element type %d is not valid", (int)t->dtype);
  KILN_TRY(kiln_shape_numel(t->rank, t->dims, &numel));
  if (numel != t->numel)
    return kiln_invalid("tensor numel %lld does not match its shape (%lld)", (long long)t->numel,
                        (long long)numel);
  if (numel > 0 && !t->data) return kiln_invalid("tensor data is NULL");
  return KILN_OK;
}

static kiln_status verify_const(const kiln_value *v) {
  KILN_TRY(verify_tensor(v->data));
  kiln_type want = kiln_type_tensor(v->data->dtype, v->data->rank, v->data->dims);
  if (!kiln_type_equal(&v->type, &want)) {
    char a[128], b[128];
    return kiln_invalid("type %s does not match its data %s", kiln_type_str(&v->type, a, sizeof a),
                        kiln_type_str(&want, b, sizeof b));
  }
  return KILN_OK;
}

static kiln_status verify_value_def(const vctx *c, int id) {
  const kiln_graph *g = c->g;
  const kiln_value *v = &g->values.data[id];
  switch (v->kind) {
  case KILN_VALUE_INPUT: return KILN_OK;
  case KILN_VALUE_CONST: return verify_const(v);
  case KILN_VALUE_NODE: {
    if (v->node < 0 || v->node >= g->nodes.len)
      return kiln_invalid("defining node %d is out of range", v->node);
    const kiln_node *n = &g->nodes.data[v->node];
    if (v->out_index < 0 || v->out_index >= n->n_outputs || !n->outputs ||
        n->outputs[v->out_index] != id)
      return kiln_invalid("node %d does not list it as output %d", v->node, v->out_index);
    return KILN_OK;
  }
  case KILN_VALUE_OUTER:
    if (!g->parent) return kiln_invalid("an outer value in a graph that has no parent");
    if (v->outer < 0 || v->outer >= g->parent->values.len)
      return kiln_invalid("outer id %d is out of range of the parent graph", v->outer);
    if (c->parent_defined && !c->parent_defined[v->outer])
      return kiln_invalid(
          "refers to %%%s of the parent graph, which is not defined before the node "
          "that holds this graph",
          vname(g->parent, v->outer));
    return KILN_OK;
  default: return kiln_invalid("value kind %d is out of range", (int)v->kind);
  }
}

/* Names, types and definitions of all values; marks inputs, constants and outer values defined. */
static kiln_status verify_values(vctx *c) {
  const kiln_graph *g = c->g;
  kiln_strmap seen = {0};
  kiln_status st = KILN_OK;
  for (int id = 0; id < g->values.len && !st; id++) {
    const kiln_value *v = &g->values.data[id];
    if (!v->name || !v->name[0]) {
      st = kiln_invalid("value %d has no name", id);
    } else if (kiln_strmap_get(&seen, v->name, NULL)) {
      st = kiln_invalid("value %%%s: the name is used twice", v->name);
    } else {
      kiln_strmap_put(&seen, v->name, id);
      st = verify_type(&v->type);
      if (!st) st = verify_value_def(c, id);
      if (st) st = kiln_status_annotate(st, "value %%%s", v->name);
    }
    c->defined[id] = v->kind != KILN_VALUE_NODE;
  }
  kiln_strmap_free(&seen);
  return st;
}

static kiln_status verify_io(const vctx *c) {
  const kiln_graph *g = c->g;
  bool *listed = kiln_xcalloc((size_t)g->values.len + 1, 1);
  kiln_status st = KILN_OK;
  for (int i = 0; i < g->inputs.len && !st; i++) {
    int id = g->inputs.data[i];
    if (id < 0 || id >= g->values.len)
      st = kiln_invalid("graph input %d refers to value %d, out of range", i, id);
    else if (g->values.data[id].kind != KILN_VALUE_INPUT)
      st = kiln_invalid("graph input %%%s is not an input value", vname(g, id));
    else if (listed[id]) st = kiln_invalid("graph input %%%s is listed twice", vname(g, id));
    else listed[id] = true;
  }
  for (int id = 0; id < g->values.len && !st; id++)
    if (g->values.data[id].kind == KILN_VALUE_INPUT && !listed[id])
      st = kiln_invalid("input value %%%s is not listed among the graph inputs", vname(g, id));
  free(listed);
  for (int i = 0; i < g->outputs.len && !st; i++) {
    int id = g->outputs.data[i];
    if (id < 0 || id >= g->values.len)
      st = kiln_invalid("graph output %d refers to value %d, out of range", i, id);
  }
  return st;
}

static kiln_status verify_attr_data(const vctx *c, const kiln_attr *a) {
  bool list = a->kind >= KILN_ATTR_FLOATS && a->kind != KILN_ATTR_SPARSE_TENSOR &&
              a->kind != KILN_ATTR_TYPE_PROTO;
  if (list && a->n < 0) return kiln_invalid("negative element count %d", a->n);
  int n = list ? a->n : 0;
  switch (a->kind) {
  case KILN_ATTR_UNDEFINED:
  case KILN_ATTR_FLOAT:
  case KILN_ATTR_INT: return KILN_OK;
  case KILN_ATTR_STRING: return a->s || !a->s_len ? KILN_OK : kiln_invalid("string is NULL");
  case KILN_ATTR_TENSOR:
  case KILN_ATTR_SPARSE_TENSOR: return verify_tensor(a->t);
  case KILN_ATTR_GRAPH:
    if (!a->g) return kiln_invalid("graph is NULL");
    if (a->g->parent != c->g)
      return kiln_invalid("its graph's parent is not the graph of the node");
    return verify_graph(a->g, c->defined, c->depth + 1);
  case KILN_ATTR_TYPE_PROTO: return verify_type(&a->tp);
  case KILN_ATTR_FLOATS: return n && !a->floats ? kiln_invalid("floats is NULL") : KILN_OK;
  case KILN_ATTR_INTS: return n && !a->ints ? kiln_invalid("ints is NULL") : KILN_OK;
  case KILN_ATTR_STRINGS:
    if (n && !a->strings) return kiln_invalid("strings is NULL");
    for (int i = 0; i < n; i++)
      if (!a->strings[i]) return kiln_invalid("string %d is NULL", i);
    return KILN_OK;
  case KILN_ATTR_TENSORS:
  case KILN_ATTR_SPARSE_TENSORS:
    if (n && !a->tensors) return kiln_invalid("tensors is NULL");
    for (int i = 0; i < n; i++) KILN_TRYF(verify_tensor(a->tensors[i]), "tensor %d", i);
    return KILN_OK;
  case KILN_ATTR_GRAPHS:
    if (n && !a->graphs) return kiln_invalid("graphs is NULL");
    for (int i = 0; i < n; i++) {
      if (!a->graphs[i] || a->graphs[i]->parent != c->g)
        return kiln_invalid("graph %d is NULL or not a subgraph of the node's graph", i);
      KILN_TRYF(verify_graph(a->graphs[i], c->defined, c->depth + 1), "graph %d", i);
    }
    return KILN_OK;
  case KILN_ATTR_TYPE_PROTOS:
    if (n && !a->tps) return kiln_invalid("types is NULL");
    for (int i = 0; i < n; i++) KILN_TRYF(verify_type(&a->tps[i]), "type %d", i);
    return KILN_OK;
  default: return kiln_invalid("attribute kind %d is out of range", (int)a->kind);
  }
}

static kiln_status verify_attr(const vctx *c, const kiln_attr *a, int i, kiln_strmap *seen) {
  if (!a->name || !a->name[0]) return kiln_invalid("attribute %d has no name", i);
  if (kiln_strmap_get(seen, a->name, NULL))
    return kiln_invalid("attribute '%s' is given twice", a->name);
  kiln_strmap_put(seen, a->name, i);
  KILN_TRYF(verify_attr_data(c, a), "attribute '%s'", a->name);
  return KILN_OK;
}

static kiln_status verify_attrs(const vctx *c, const kiln_node *n) {
  if (n->n_attrs < 0 || (n->n_attrs && !n->attrs)) return kiln_invalid("bad attribute array");
  kiln_strmap seen = {0};
  kiln_status st = KILN_OK;
  for (int i = 0; i < n->n_attrs && !st; i++) st = verify_attr(c, &n->attrs[i], i, &seen);
  kiln_strmap_free(&seen);
  return st;
}

static kiln_status verify_node_ids(const vctx *c, int nid) {
  const kiln_graph *g = c->g;
  const kiln_node *n = &g->nodes.data[nid];
  if (n->n_inputs < 0 || (n->n_inputs && !n->inputs) || n->n_outputs < 0 ||
      (n->n_outputs && !n->outputs))
    return kiln_invalid("bad input or output array");
  for (int i = 0; i < n->n_inputs; i++) {
    int id = n->inputs[i];
    if (id < -1 || id >= g->values.len)
      return kiln_invalid("input %d refers to value %d, out of range", i, id);
    if (id >= 0 && !c->defined[id])
      return kiln_invalid("input %d (%%%s) is not defined before the node", i, vname(g, id));
  }
  for (int i = 0; i < n->n_outputs; i++) {
    int id = n->outputs[i];
    if (id < -1 || id >= g->values.len)
      return kiln_invalid("output %d refers to value %d, out of range", i, id);
    if (id < 0) continue;
    const kiln_value *v = &g->values.data[id];
    if (v->kind != KILN_VALUE_NODE || v->node != nid || v->out_index != i)
      return kiln_invalid("output %d (%%%s) is not defined by this node at this position (not SSA)",
                          i, vname(g, id));
  }
  return KILN_OK;
}

static kiln_status verify_node(const vctx *c, int nid) {
  const kiln_node *n = &c->g->nodes.data[nid];
  if (!n->op_type || !n->op_type[0]) return kiln_invalid("node %d has no op type", nid);
  char label[200];
  kiln_node_label(n, label, sizeof label);
  if (!n->domain || !n->name) return kiln_invalid("%s: domain or name is NULL", label);
  if ((unsigned)n->op >= KILN_OP_COUNT || n->op != kiln_op_lookup(n->domain, n->op_type))
    return kiln_invalid("%s: op id %d does not match the op type", label, (int)n->op);
  KILN_TRYF(verify_node_ids(c, nid), "%s", label);
  KILN_TRYF(verify_attrs(c, n), "%s", label);
  return KILN_OK;
}

static kiln_status verify_body(vctx *c) {
  const kiln_graph *g = c->g;
  KILN_TRY(verify_values(c));
  KILN_TRY(verify_io(c));
  for (int i = 0; i < g->nodes.len; i++) {
    KILN_TRY(verify_node(c, i));
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; k < n->n_outputs; k++)
      if (n->outputs[k] >= 0) c->defined[n->outputs[k]] = true;
  }
  for (int i = 0; i < g->outputs.len; i++)
    if (!c->defined[g->outputs.data[i]])
      return kiln_invalid("graph output %%%s is never defined", vname(g, g->outputs.data[i]));
  return KILN_OK;
}

static kiln_status verify_graph(const kiln_graph *g, const bool *parent_defined, int depth) {
  if (depth > MAX_DEPTH)
    return kiln_invalid("subgraphs nested more than %d deep (a cycle?)", MAX_DEPTH);
  if (g->values.len < 0 || g->nodes.len < 0 || g->inputs.len < 0 || g->outputs.len < 0)
    return kiln_invalid("graph '%s': negative array length", g->name ? g->name : "");
  vctx c = {g, parent_defined, kiln_xcalloc((size_t)g->values.len + 1, sizeof(bool)), depth};
  kiln_status st = verify_body(&c);
  free(c.defined);
  if (st) st = kiln_status_annotate(st, "graph '%s'", g->name ? g->name : "");
  return st;
}

kiln_status kiln_graph_verify(const kiln_graph *g) {
  if (!g) return kiln_invalid("graph is NULL");
  return verify_graph(g, NULL, 0);
}
