/* Private to the ONNX importer: the decoded model before it becomes a graph.
 *
 * Import runs in three steps:
 *   1. import_parse.c decodes the protobuf into the ox_* structures below
 *      (names, node lists, attributes; initializers are only located, not
 *      decoded, so weights are copied once, in step 3);
 *   2. import_inline.c replaces calls of model-local functions by their bodies;
 *   3. import.c sorts each graph's nodes and builds the kiln_graph. */
#ifndef KILN_ONNX_IMPORT_INTERNAL_H
#define KILN_ONNX_IMPORT_INTERNAL_H

#include "onnx_internal.h"

typedef struct ox_graph ox_graph;

typedef struct ox_attr {
  kiln_attr a;     /* payload in the graph arena; a.g / a.graphs are set when built */
  ox_graph *g;     /* GRAPH */
  ox_graph **gs;   /* GRAPHS (a.n of them) */
  const char *ref; /* ref_attr_name (function bodies only), or NULL */
} ox_attr;

typedef struct ox_node {
  const char *name, *op_type, *domain;
  int n_in, n_out, n_attrs;
  const char **in, **out; /* "" for an omitted optional input/output */
  ox_attr *attrs;
  const char *path; /* "model.graph.node[3]", for messages */
} ox_node;

typedef struct ox_vinfo {
  const char *name;
  kiln_type type;
} ox_vinfo;

typedef struct ox_init { /* located, decoded when the graph is built */
  const uint8_t *data;
  size_t len;
  bool sparse;
  const char *path;
} ox_init;

typedef KILN_VEC(ox_node) ox_node_vec;

struct ox_graph {
  const char *name, *path;
  ox_node_vec nodes;
  KILN_VEC(ox_init) inits;
  KILN_VEC(ox_vinfo) inputs;
  KILN_VEC(ox_vinfo) outputs;
  KILN_VEC(ox_vinfo) vinfos;
  bool free_done; /* free variables computed */
  int n_free;
  const char **free_vars; /* names used but not defined here (from enclosing scopes) */
};

typedef struct ox_function {
  const char *name, *domain;
  int n_in, n_out, n_defaults;
  const char **in, **out;
  ox_attr *defaults; /* attribute_proto: default values */
  ox_node_vec nodes;
  KILN_VEC(kiln_opset) opsets;
} ox_function;

typedef struct ox_model {
  int64_t ir_version;
  const char *producer;
  KILN_VEC(kiln_opset) opsets;
  ox_graph *graph;
  KILN_VEC(ox_function) functions;
} ox_model;

typedef struct ox_ctx {
  kiln_onnx_src src;
  kiln_arena *scratch; /* the ox_* structures; freed after import */
  kiln_graph *root;    /* its arena holds attribute payloads, type symbols */
  int inline_count;    /* for unique names of inlined function values */
  int64_t inlined_nodes;
} ox_ctx;

/* import_parse.c */
KILN_MUST_USE kiln_status kiln_ox_parse_model(ox_ctx *c, const uint8_t *data, size_t len,
                                              ox_model *out);
/* Formats "<path> 'name' (Op)" for node messages. */
const char *kiln_ox_node_label(const ox_node *n, char *buf, size_t len);

/* import_inline.c */
KILN_MUST_USE kiln_status kiln_ox_inline_functions(ox_ctx *c, ox_model *m);

#endif
