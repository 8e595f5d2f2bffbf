/* Graph IR: construction, types, attribute access. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* ---- op names ---- */
static const char *const op_names[KILN_OP_COUNT] = {
    [KILN_OP_UNKNOWN] = "?",
#define X(name, family) [KILN_OP_##name] = #name,
#include "ops.def"
#undef X
};

static const char *const op_families[KILN_OP_COUNT] = {
    [KILN_OP_UNKNOWN] = "?",
#define X(name, family) [KILN_OP_##name] = #family,
#include "ops.def"
#undef X
};

const char *kiln_op_name(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT ? op_names[op] : "?";
}

const char *kiln_op_family(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT ? op_families[op] : "?";
}

kiln_op kiln_op_lookup(const char *domain, const char *op_type) {
  if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) return KILN_OP_UNKNOWN;
  static kiln_strmap map; /* built once; the table is immutable */
  if (!map.len)
    for (int i = 1; i < KILN_OP_COUNT; i++) kiln_strmap_put(&map, op_names[i], i);
  int64_t id;
  return kiln_strmap_get(&map, op_type, &id) ? (kiln_op)id : KILN_OP_UNKNOWN;
}

/* ---- types ---- */
kiln_type kiln_type_unknown(void) {
  kiln_type t;
  memset(&t, 0, sizeof t);
  t.rank = -1;
  return t;
}

kiln_type kiln_type_tensor(kiln_dtype dtype, int rank, const int64_t *dims) {
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_TENSOR;
  t.dtype = dtype;
  t.rank = rank;
  for (int i = 0; i < rank && i < KILN_MAX_RANK; i++) t.dims[i].value = dims ? dims[i] : -1;
  return t;
}

static bool dim_equal(const kiln_dim *a, const kiln_dim *b) {
  if (a->value >= 0 || b->value >= 0) return a->value == b->value;
  if (!a->sym || !b->sym) return a->sym == b->sym;
  return strcmp(a->sym, b->sym) == 0;
}

bool kiln_type_equal(const kiln_type *a, const kiln_type *b) {
  if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank ||
      a->elem_seq != b->elem_seq)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!dim_equal(&a->dims[i], &b->dims[i])) return false;
  return true;
}

bool kiln_type_is_static(const kiln_type *t) {
  if (t->kind != KILN_TYPE_TENSOR || t->rank < 0) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i].value < 0) return false;
  return true;
}

static void type_dims_str(const kiln_type *t, kiln_strbuf *b) {
  if (t->rank < 0) {
    kiln_strbuf_printf(b, "[*]");
    return;
  }
  kiln_strbuf_printf(b, "[");
  for (int i = 0; i < t->rank; i++) {
    const kiln_dim *d = &t->dims[i];
    if (i) kiln_strbuf_printf(b, ",");
    if (d->value >= 0) kiln_strbuf_printf(b, "%lld", (long long)d->value);
    else kiln_strbuf_printf(b, "%s", d->sym ? d->sym : "?");
  }
  kiln_strbuf_printf(b, "]");
}

const char *kiln_type_str(const kiln_type *t, char *buf, size_t n) {
  kiln_strbuf b = {0};
  const char *dt = kiln_dtype_name(t->dtype);
  switch (t->kind) {
  case KILN_TYPE_TENSOR:
    kiln_strbuf_printf(&b, "%s", dt);
    type_dims_str(t, &b);
    break;
  case KILN_TYPE_SEQUENCE: kiln_strbuf_printf(&b, "seq<%s>", dt); break;
  case KILN_TYPE_OPTIONAL:
    kiln_strbuf_printf(&b, t->elem_seq ? "opt<seq<%s>>" : "opt<%s>", dt);
    break;
  default: kiln_strbuf_printf(&b, "?"); break;
  }
  snprintf(buf, n, "%s", b.data ? b.data : "");
  kiln_strbuf_free(&b);
  return buf;
}

static const char *const attr_kind_names[KILN_ATTR_KIND_COUNT] = {
    "undefined",      "float",      "int",         "string",  "tensor", "graph",
    "floats",         "ints",       "strings",     "tensors", "graphs", "sparse_tensor",
    "sparse_tensors", "type_proto", "type_protos",
};

const char *kiln_attr_kind_name(kiln_attr_kind k) {
  return (unsigned)k < KILN_ATTR_KIND_COUNT ? attr_kind_names[k] : "?";
}

/* ---- graphs ---- */
static kiln_graph *graph_alloc(kiln_arena *a, kiln_graph *parent, const char *name) {
  kiln_graph *g = kiln_arena_alloc(a, sizeof *g);
  g->arena = a;
  g->parent = parent;
  g->name = kiln_arena_strdup(a, name ? name : "");
  return g;
}

kiln_graph *kiln_graph_new(const char *name) {
  return graph_alloc(kiln_arena_new(), NULL, name);
}

kiln_graph *kiln_graph_root(kiln_graph *g) {
  while (g->parent) g = g->parent;
  return g;
}

kiln_graph *kiln_graph_new_sub(kiln_graph *parent, const char *name) {
  kiln_graph *g = graph_alloc(parent->arena, parent, name);
  kiln_graph *root = kiln_graph_root(parent);
  kiln_arena_vec_push(root->arena, &root->subgraphs, g);
  return g;
}

void kiln_graph_free(kiln_graph *g) {
  if (!g) return;
  if (g->parent) return; /* subgraphs die with their root */
  for (int i = 0; i < g->owned.len; i++) kiln_tensor_free(g->owned.data[i]);
  for (int i = 0; i < g->subgraphs.len; i++) kiln_strmap_free(&g->subgraphs.data[i]->names);
  kiln_strmap_free(&g->names);
  kiln_arena_free(g->arena);
}

void *kiln_graph_alloc(kiln_graph *g, size_t n) {
  return kiln_arena_alloc(g->arena, n);
}
char *kiln_graph_strdup(kiln_graph *g, const char *s) {
  return kiln_arena_strdup(g->arena, s);
}

void kiln_graph_own_tensor(kiln_graph *g, kiln_tensor *t) {
  kiln_graph *root = kiln_graph_root(g);
  kiln_arena_vec_push(root->arena, &root->owned, t);
}

void kiln_graph_set_opset(kiln_graph *g, const char *domain, int64_t version) {
  g = kiln_graph_root(g);
  if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
  for (int i = 0; i < g->opsets.len; i++) {
    if (strcmp(g->opsets.data[i].domain, domain) == 0) {
      g->opsets.data[i].version = version;
      return;
    }
  }
  kiln_opset o = {kiln_arena_strdup(g->arena, domain), version};
  kiln_arena_vec_push(g->arena, &g->opsets, o);
}

int64_t kiln_graph_opset(const kiln_graph *g, const char *domain) {
  while (g->parent) g = g->parent;
  if (!domain || strcmp(domain, "ai.onnx") == 0) domain = "";
  for (int i = 0; i < g->opsets.len; i++)
    if (strcmp(g->opsets.data[i].domain, domain) == 0) return g->opsets.data[i].version;
  return 0;
}

/* Adds a value with a unique name (fresh "%N" if name is empty); -1 if taken. */
static int add_value(kiln_graph *g, const char *name, kiln_value_kind kind) {
  char fresh[32];
  if (!name || !name[0]) {
    int k = g->values.len;
    do snprintf(fresh, sizeof fresh, "_v%d", k++);
    while (kiln_strmap_get(&g->names, fresh, NULL));
    name = fresh;
  }
  if (kiln_strmap_get(&g->names, name, NULL)) return -1;
  kiln_value v;
  memset(&v, 0, sizeof v);
  v.name = kiln_arena_strdup(g->arena, name);
  v.kind = kind;
  v.type = kiln_type_unknown();
  v.node = v.outer = -1;
  int id = g->values.len;
  kiln_arena_vec_push(g->arena, &g->values, v);
  kiln_strmap_put(&g->names, name, id);
  return id;
}

kiln_status kiln_graph_add_input2(kiln_graph *g, const char *name, kiln_type type, int *out_id) {
  int id = add_value(g, name, KILN_VALUE_INPUT);
  if (id < 0) return kiln_invalid("graph input '%s' is defined twice", name);
  g->values.data[id].type = type;
  kiln_arena_vec_push(g->arena, &g->inputs, id);
  *out_id = id;
  return KILN_OK;
}

int kiln_graph_add_input(kiln_graph *g, const char *name, kiln_type type) {
  int id = -1;
  kiln_status st = kiln_graph_add_input2(g, name, type, &id);
  if (st) {
    fprintf(stderr, "kiln_graph_add_input: %s\n", kiln_status_message(st));
    abort();
  }
  return id;
}

kiln_status kiln_graph_add_const(kiln_graph *g, const char *name, kiln_tensor *t, int *out_id) {
  kiln_graph_own_tensor(g, t);
  int id = add_value(g, name, KILN_VALUE_CONST);
  if (id < 0) return kiln_invalid("constant '%s': the name is defined twice", name);
  kiln_value *v = &g->values.data[id];
  v->data = t;
  v->type = kiln_type_tensor(t->dtype, t->rank, t->dims);
  *out_id = id;
  return KILN_OK;
}

int kiln_graph_add_outer(kiln_graph *g, int outer_id) {
  const kiln_value *ov = &g->parent->values.data[outer_id];
  int id = add_value(g, ov->name, KILN_VALUE_OUTER);
  if (id < 0) return kiln_graph_find(g, ov->name);
  g->values.data[id].outer = outer_id;
  g->values.data[id].type = ov->type;
  return id;
}

int kiln_graph_find(const kiln_graph *g, const char *name) {
  int64_t id;
  return kiln_strmap_get(&g->names, name, &id) ? (int)id : -1;
}

int kiln_graph_resolve(kiln_graph *g, const char *name) {
  int id = kiln_graph_find(g, name);
  if (id >= 0 || !g->parent) return id;
  int pid = kiln_graph_resolve(g->parent, name);
  return pid < 0 ? -1 : kiln_graph_add_outer(g, pid);
}

kiln_status kiln_graph_add_node(kiln_graph *g, const char *op_type, const char *domain,
                                const char *name, int n_in, const int *inputs, int n_out,
                                const char *const *out_names, int *out_ids) {
  kiln_node n;
  memset(&n, 0, sizeof n);
  domain = domain ? domain : "";
  if (strcmp(domain, "ai.onnx") == 0) domain = "";
  n.op = kiln_op_lookup(domain, op_type);
  n.op_type = kiln_arena_strdup(g->arena, op_type);
  n.domain = kiln_arena_strdup(g->arena, domain);
  n.name = kiln_arena_strdup(g->arena, name ? name : "");
  n.opset = kiln_graph_opset(g, domain);
  n.n_inputs = n_in;
  n.inputs = kiln_arena_calloc(g->arena, (size_t)n_in, sizeof(int));
  for (int i = 0; i < n_in; i++) {
    if (inputs[i] < -1 || inputs[i] >= g->values.len)
      return kiln_invalid("node '%s' (%s): input %d refers to no value", n.name, op_type, i);
    n.inputs[i] = inputs[i];
  }
  n.n_outputs = n_out;
  n.outputs = kiln_arena_calloc(g->arena, (size_t)n_out, sizeof(int));
  int node_id = g->nodes.len;
  for (int i = 0; i < n_out; i++) {
    const char *on = out_names ? out_names[i] : NULL;
    if (out_names && (!on || !on[0])) {
      n.outputs[i] = -1;
      continue;
    }
    int id = add_value(g, on, KILN_VALUE_NODE);
    if (id < 0)
      return kiln_invalid("node '%s' (%s): output '%s' is already defined (not SSA)", n.name,
                          op_type, on);
    g->values.data[id].node = node_id;
    g->values.data[id].out_index = i;
    n.outputs[i] = id;
  }
  kiln_arena_vec_push(g->arena, &g->nodes, n);
  if (out_ids)
    for (int i = 0; i < n_out; i++) out_ids[i] = g->nodes.data[node_id].outputs[i];
  return KILN_OK;
}

int kiln_graph_last_node(const kiln_graph *g) {
  return g->nodes.len - 1;
}

void kiln_graph_add_output(kiln_graph *g, int value_id) {
  kiln_arena_vec_push(g->arena, &g->outputs, value_id);
}

bool kiln_graph_is_output(const kiln_graph *g, int value_id) {
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i] == value_id) return true;
  return false;
}

kiln_attr *kiln_node_add_attr(kiln_graph *g, int node_id, const char *name, kiln_attr_kind kind) {
  kiln_node *n = &g->nodes.data[node_id];
  kiln_attr *a = kiln_arena_calloc(g->arena, (size_t)n->n_attrs + 1, sizeof(kiln_attr));
  if (n->n_attrs) memcpy(a, n->attrs, (size_t)n->n_attrs * sizeof(kiln_attr));
  n->attrs = a;
  kiln_attr *r = &a[n->n_attrs++];
  r->name = kiln_arena_strdup(g->arena, name);
  r->kind = kind;
  return r;
}

/* ---- attribute access ---- */
const kiln_attr *kiln_node_attr(const kiln_node *n, const char *name) {
  for (int i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

const char *kiln_node_label(const kiln_node *n, char *buf, size_t len) {
  if (n->name && n->name[0]) snprintf(buf, len, "node '%s' (%s)", n->name, n->op_type);
  else snprintf(buf, len, "%s node", n->op_type);
  return buf;
}

static kiln_status attr_of(const kiln_node *n, const char *name, kiln_attr_kind kind,
                           const kiln_attr **out) {
  *out = kiln_node_attr(n, name);
  if (*out && (*out)->kind != kind) {
    char lb[160];
    return kiln_invalid("%s: attribute '%s' must be of type %s, not %s",
                        kiln_node_label(n, lb, sizeof lb), name, kiln_attr_kind_name(kind),
                        kiln_attr_kind_name((*out)->kind));
  }
  return KILN_OK;
}

kiln_status kiln_node_int(const kiln_node *n, const char *name, int64_t dflt, int64_t *out) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_INT, &a));
  *out = a ? a->i : dflt;
  return KILN_OK;
}

kiln_status kiln_node_float(const kiln_node *n, const char *name, float dflt, float *out) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_FLOAT, &a));
  *out = a ? a->f : dflt;
  return KILN_OK;
}

kiln_status kiln_node_string(const kiln_node *n, const char *name, const char *dflt,
                             const char **out) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_STRING, &a));
  *out = a ? a->s : dflt;
  return KILN_OK;
}

kiln_status kiln_node_ints(const kiln_node *n, const char *name, const int64_t **out, int *out_n) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_INTS, &a));
  *out = a ? a->ints : NULL;
  *out_n = a ? a->n : -1;
  return KILN_OK;
}

kiln_status kiln_node_floats(const kiln_node *n, const char *name, const float **out, int *out_n) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_FLOATS, &a));
  *out = a ? a->floats : NULL;
  *out_n = a ? a->n : -1;
  return KILN_OK;
}

kiln_status kiln_node_tensor(const kiln_node *n, const char *name, const kiln_tensor **out) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_TENSOR, &a));
  *out = a ? a->t : NULL;
  return KILN_OK;
}

kiln_status kiln_node_graph(const kiln_node *n, const char *name, kiln_graph **out) {
  const kiln_attr *a;
  KILN_TRY(attr_of(n, name, KILN_ATTR_GRAPH, &a));
  *out = a ? a->g : NULL;
  return KILN_OK;
}
