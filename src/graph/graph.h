/* Graph IR: an SSA graph of typed values and operator nodes.
 *
 * Every value has exactly one definition: a graph input, a constant, a node
 * output, or (in a subgraph) a reference to a value of an enclosing graph.
 * Values and nodes are addressed by int ids (indices into g->values and
 * g->nodes). Nodes are kept in topological order. One arena owns a graph and
 * all its subgraphs; constant tensors are owned by the graph and freed with it.
 *
 *   kiln_graph *g = kiln_graph_new("tiny");
 *   kiln_type t = kiln_type_tensor(KILN_F32, 2, (int64_t[]){2, 3});
 *   int x = kiln_graph_add_input(g, "x", t);
 *   int y;
 *   KILN_TRY(kiln_graph_add_node(g, "Relu", "", "relu0", 1, &x, 1,
 *                                (const char *[]){"y"}, &y));
 *   kiln_graph_add_output(g, y);
 *   ...
 *   kiln_graph_free(g);
 */
#ifndef KILN_GRAPH_H
#define KILN_GRAPH_H

#include "base/base.h"
#include "base/tensor.h"

/* ---- operators (names only; semantics live in src/ops) ---- */
typedef enum kiln_op {
  KILN_OP_UNKNOWN = 0,
#define X(name, family) KILN_OP_##name,
#include "ops.def"
#undef X
  KILN_OP_COUNT
} kiln_op;

const char *kiln_op_name(kiln_op op);
const char *kiln_op_family(kiln_op op);
/* Resolves an op_type of the ONNX default domain ("" or "ai.onnx"); KILN_OP_UNKNOWN if none. */
kiln_op kiln_op_lookup(const char *domain, const char *op_type);

/* ---- types ---- */
typedef struct kiln_dim {
  int64_t value;   /* >= 0: known extent; < 0: symbolic (sym != NULL) or unknown */
  const char *sym; /* symbol name ("batch"), arena-owned, or NULL */
} kiln_dim;

typedef enum kiln_type_kind {
  KILN_TYPE_UNKNOWN = 0, /* type not known (yet) */
  KILN_TYPE_TENSOR,
  KILN_TYPE_SEQUENCE, /* sequence of tensors of elem dtype */
  KILN_TYPE_OPTIONAL, /* optional tensor (or optional sequence if elem_seq) */
  KILN_TYPE_KIND_COUNT
} kiln_type_kind;

typedef struct kiln_type {
  kiln_type_kind kind;
  kiln_dtype dtype; /* element dtype (of the tensor, or of the sequence/optional element) */
  int rank;         /* -1: unknown rank */
  kiln_dim dims[KILN_MAX_RANK];
  bool elem_seq; /* OPTIONAL of a SEQUENCE */
} kiln_type;

kiln_type kiln_type_unknown(void);
kiln_type kiln_type_tensor(kiln_dtype dtype, int rank, const int64_t *dims);
bool kiln_type_equal(const kiln_type *a, const kiln_type *b);
/* True if all dims are known integers (rank known). */
bool kiln_type_is_static(const kiln_type *t);
/* Formats "f32[batch,3,?]" / "seq<f32>" / "?" into buf. */
const char *kiln_type_str(const kiln_type *t, char *buf, size_t n);

/* ---- attributes (kinds numbered as ONNX AttributeProto.AttributeType) ---- */
typedef enum kiln_attr_kind {
  KILN_ATTR_UNDEFINED = 0,
  KILN_ATTR_FLOAT = 1,
  KILN_ATTR_INT = 2,
  KILN_ATTR_STRING = 3,
  KILN_ATTR_TENSOR = 4,
  KILN_ATTR_GRAPH = 5,
  KILN_ATTR_FLOATS = 6,
  KILN_ATTR_INTS = 7,
  KILN_ATTR_STRINGS = 8,
  KILN_ATTR_TENSORS = 9,
  KILN_ATTR_GRAPHS = 10,
  KILN_ATTR_SPARSE_TENSOR = 11, /* imported as dense tensor data */
  KILN_ATTR_SPARSE_TENSORS = 12,
  KILN_ATTR_TYPE_PROTO = 13,
  KILN_ATTR_TYPE_PROTOS = 14,
  KILN_ATTR_KIND_COUNT
} kiln_attr_kind;

struct kiln_graph;

typedef struct kiln_attr {
  const char *name;
  kiln_attr_kind kind;
  float f;
  int64_t i;
  const char *s; /* STRING: bytes, NUL-terminated, length s_len */
  size_t s_len;
  kiln_tensor *t; /* TENSOR / SPARSE_TENSOR (owned by the graph) */
  struct kiln_graph *g;
  kiln_type tp;               /* TYPE_PROTO */
  int n;                      /* element count of the list kinds */
  float *floats;              /* FLOATS */
  int64_t *ints;              /* INTS */
  const char **strings;       /* STRINGS */
  kiln_tensor **tensors;      /* TENSORS */
  struct kiln_graph **graphs; /* GRAPHS */
  kiln_type *tps;             /* TYPE_PROTOS */
} kiln_attr;

const char *kiln_attr_kind_name(kiln_attr_kind k); /* "int", "floats", ... */

/* ---- values and nodes ---- */
typedef enum kiln_value_kind {
  KILN_VALUE_INPUT,
  KILN_VALUE_CONST,
  KILN_VALUE_NODE,
  KILN_VALUE_OUTER, /* a value of an enclosing graph, used in a subgraph */
  KILN_VALUE_KIND_COUNT
} kiln_value_kind;

typedef struct kiln_value {
  const char *name;
  kiln_value_kind kind;
  kiln_type type;
  int node;          /* NODE: defining node id */
  int out_index;     /* NODE: position among that node's outputs */
  kiln_tensor *data; /* CONST: the data (owned by the graph) */
  int outer;         /* OUTER: value id in g->parent */
} kiln_value;

typedef struct kiln_node {
  kiln_op op;
  const char *op_type;
  const char *domain; /* "" for the default ONNX domain */
  const char *name;   /* may be "" */
  int64_t opset;      /* the version of domain imported by the model */
  int n_inputs;
  int *inputs; /* value ids; -1 for an omitted optional input */
  int n_outputs;
  int *outputs; /* value ids; -1 for an omitted optional output */
  int n_attrs;
  kiln_attr *attrs;
  int group; /* fusion group (set by the fusion pass): 0 = none, else a group id >= 1.
              * Nodes of one group are lowered into one kernel. Text form: `group N`. */
} kiln_node;

typedef struct kiln_opset {
  const char *domain;
  int64_t version;
} kiln_opset;

typedef struct kiln_graph {
  kiln_arena *arena; /* shared with subgraphs; owned by the root */
  struct kiln_graph *parent;
  const char *name;
  KILN_VEC(kiln_value) values;
  KILN_VEC(kiln_node) nodes;
  KILN_VEC(int) inputs;
  KILN_VEC(int) outputs;
  KILN_VEC(kiln_opset) opsets;             /* root only */
  KILN_VEC(kiln_tensor *) owned;           /* tensors freed with the graph (root keeps all) */
  KILN_VEC(struct kiln_graph *) subgraphs; /* every subgraph, freed with the root */
  kiln_strmap names;                       /* value name -> id */
  int64_t ir_version;
  const char *producer;
} kiln_graph;

kiln_graph *kiln_graph_new(const char *name);
/* A subgraph (body of If/Loop/Scan) sharing the parent's arena. */
kiln_graph *kiln_graph_new_sub(kiln_graph *parent, const char *name);
void kiln_graph_free(kiln_graph *g); /* root only: frees subgraphs too */
kiln_graph *kiln_graph_root(kiln_graph *g);

void kiln_graph_set_opset(kiln_graph *g, const char *domain, int64_t version);
/* Version of domain in effect ("" and "ai.onnx" are the same); 0 if not imported. */
int64_t kiln_graph_opset(const kiln_graph *g, const char *domain);

/* Builders return the new value id. Names must be unique in a graph (error otherwise
 * for the status-returning forms). An empty name gets a fresh one ("%12"). */
KILN_MUST_USE kiln_status kiln_graph_add_input2(kiln_graph *g, const char *name, kiln_type type,
                                                int *out_id);
int kiln_graph_add_input(kiln_graph *g, const char *name, kiln_type type); /* asserts unique */
/* Takes ownership of t (also on error). */
KILN_MUST_USE kiln_status kiln_graph_add_const(kiln_graph *g, const char *name, kiln_tensor *t,
                                               int *out_id);
/* References value `outer_id` of g->parent under the same name. */
int kiln_graph_add_outer(kiln_graph *g, int outer_id);
/* Finds a value by name in g, then in enclosing graphs; in a subgraph, a hit in an
 * enclosing graph adds an OUTER value to g (recursively). -1 if none. */
int kiln_graph_resolve(kiln_graph *g, const char *name);
int kiln_graph_find(const kiln_graph *g, const char *name); /* this graph only */
/* Adds a node; its outputs become new values named out_names[i] (NULL or "" gives an
 * omitted output, id -1). out_ids may be NULL. Returns the node id in *out_node if non-NULL. */
KILN_MUST_USE kiln_status kiln_graph_add_node(kiln_graph *g, const char *op_type,
                                              const char *domain, const char *name, int n_in,
                                              const int *inputs, int n_out,
                                              const char *const *out_names, int *out_ids);
int kiln_graph_last_node(const kiln_graph *g);
void kiln_graph_add_output(kiln_graph *g, int value_id);
/* Whether value_id is one of g's outputs. */
bool kiln_graph_is_output(const kiln_graph *g, int value_id);
/* Adds an attribute to node `node_id` and returns it for the caller to fill
 * (arrays must be arena-allocated: use kiln_graph_alloc). */
kiln_attr *kiln_node_add_attr(kiln_graph *g, int node_id, const char *name, kiln_attr_kind kind);
void *kiln_graph_alloc(kiln_graph *g, size_t n);
char *kiln_graph_strdup(kiln_graph *g, const char *s);
void kiln_graph_own_tensor(kiln_graph *g, kiln_tensor *t);

/* ---- attribute access (for kernels and passes) ----
 * Each getter fails with KILN_ERR_INVALID when the attribute exists with another kind. */
const kiln_attr *kiln_node_attr(const kiln_node *n, const char *name);
KILN_MUST_USE kiln_status kiln_node_int(const kiln_node *n, const char *name, int64_t dflt,
                                        int64_t *out);
KILN_MUST_USE kiln_status kiln_node_float(const kiln_node *n, const char *name, float dflt,
                                          float *out);
KILN_MUST_USE kiln_status kiln_node_string(const kiln_node *n, const char *name, const char *dflt,
                                           const char **out);
/* *out_n = -1 and *out = NULL when absent. */
KILN_MUST_USE kiln_status kiln_node_ints(const kiln_node *n, const char *name, const int64_t **out,
                                         int *out_n);
KILN_MUST_USE kiln_status kiln_node_floats(const kiln_node *n, const char *name, const float **out,
                                           int *out_n);
KILN_MUST_USE kiln_status kiln_node_tensor(const kiln_node *n, const char *name,
                                           const kiln_tensor **out);
KILN_MUST_USE kiln_status kiln_node_graph(const kiln_node *n, const char *name, kiln_graph **out);
/* "node 'conv1' (Conv)" for messages */
const char *kiln_node_label(const kiln_node *n, char *buf, size_t len);

/* ---- verifier, printer, parser (graph_verify.c, graph_print.c, graph_parse.c) ---- */
/* Checks SSA, ids in range, topological order, outer references, types well formed. */
KILN_MUST_USE kiln_status kiln_graph_verify(const kiln_graph *g);
/* Appends the text form. Constants with more than elide_above elements are printed as
 * "<N elements>" (not parseable) when elide_above >= 0; -1 prints all data. */
void kiln_graph_print(const kiln_graph *g, kiln_strbuf *out, int64_t elide_above);
KILN_MUST_USE kiln_status kiln_graph_parse(const char *text, const char *filename,
                                           kiln_graph **out);

#endif
