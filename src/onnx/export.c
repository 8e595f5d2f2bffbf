/* ONNX export: kiln_graph -> ModelProto.
 *
 * Everything the importer reads is written: opsets, typed inputs, outputs,
 * constants as initializers (raw_data), attributes of every kind, subgraphs,
 * and the types of node outputs as value_info, so import(export(g)) gives g
 * back. Messages are written by callbacks that the wire writer runs twice
 * (size, then bytes), so a model streams to its file without being buffered. */
#include <string.h>

#include "onnx_internal.h"

static kiln_status put_graph(kiln_wire_writer *w, const void *arg);

/* ---- values ---- */

typedef struct vinfo_arg {
  const char *name;
  const kiln_type *type;
} vinfo_arg;

static kiln_status put_type_msg(kiln_wire_writer *w, const void *arg) {
  return kiln_onnx_put_type(w, arg);
}

static kiln_status put_vinfo(kiln_wire_writer *w, const void *arg) {
  const vinfo_arg *v = arg;
  kiln_wire_put_str(w, 1, v->name);
  if (v->type->kind != KILN_TYPE_UNKNOWN) KILN_TRY(kiln_wire_put_msg(w, 2, put_type_msg, v->type));
  return KILN_OK;
}

static kiln_status put_value_info(kiln_wire_writer *w, uint32_t field, const kiln_value *v) {
  vinfo_arg a = {v->name, &v->type};
  return kiln_wire_put_msg(w, field, put_vinfo, &a);
}

typedef struct named_tensor {
  const kiln_tensor *t;
  const char *name;
} named_tensor;

static kiln_status put_named_tensor(kiln_wire_writer *w, const void *arg) {
  const named_tensor *nt = arg;
  return kiln_onnx_put_tensor(w, nt->t, nt->name);
}

static kiln_status put_tensor_msg(kiln_wire_writer *w, uint32_t field, const kiln_tensor *t,
                                  const char *name) {
  named_tensor nt = {t, name};
  return kiln_wire_put_msg(w, field, put_named_tensor, &nt);
}

static kiln_status put_sparse_msg(kiln_wire_writer *w, const void *arg) {
  return kiln_onnx_put_sparse(w, arg);
}

/* ---- attributes ---- */

static kiln_status put_attr_lists(kiln_wire_writer *w, const kiln_attr *a) {
  for (int i = 0; i < a->n; i++) {
    switch (a->kind) {
    case KILN_ATTR_STRINGS: kiln_wire_put_str(w, 9, a->strings[i]); break;
    case KILN_ATTR_TENSORS: KILN_TRY(put_tensor_msg(w, 10, a->tensors[i], NULL)); break;
    case KILN_ATTR_SPARSE_TENSORS:
      KILN_TRY(kiln_wire_put_msg(w, 23, put_sparse_msg, a->tensors[i]));
      break;
    case KILN_ATTR_GRAPHS: KILN_TRY(kiln_wire_put_msg(w, 11, put_graph, a->graphs[i])); break;
    case KILN_ATTR_TYPE_PROTOS: KILN_TRY(kiln_wire_put_msg(w, 15, put_type_msg, &a->tps[i])); break;
    default: break;
    }
  }
  return KILN_OK;
}

static kiln_status put_attr(kiln_wire_writer *w, const void *arg) {
  const kiln_attr *a = arg;
  kiln_wire_put_str(w, 1, a->name);
  kiln_wire_put_int(w, 20, a->kind);
  switch (a->kind) {
  case KILN_ATTR_FLOAT: kiln_wire_put_f32(w, 2, a->f); return KILN_OK;
  case KILN_ATTR_INT: kiln_wire_put_int(w, 3, a->i); return KILN_OK;
  case KILN_ATTR_STRING:
    kiln_wire_put_bytes(w, 4, a->s ? a->s : "", a->s ? a->s_len : 0);
    return KILN_OK;
  case KILN_ATTR_TENSOR: return put_tensor_msg(w, 5, a->t, NULL);
  case KILN_ATTR_SPARSE_TENSOR: return kiln_wire_put_msg(w, 22, put_sparse_msg, a->t);
  case KILN_ATTR_GRAPH: return kiln_wire_put_msg(w, 6, put_graph, a->g);
  case KILN_ATTR_TYPE_PROTO: return kiln_wire_put_msg(w, 14, put_type_msg, &a->tp);
  case KILN_ATTR_FLOATS: kiln_wire_put_packed_f32(w, 7, a->floats, (size_t)a->n); return KILN_OK;
  case KILN_ATTR_INTS: kiln_wire_put_packed_i64(w, 8, a->ints, (size_t)a->n); return KILN_OK;
  case KILN_ATTR_STRINGS:
  case KILN_ATTR_TENSORS:
  case KILN_ATTR_SPARSE_TENSORS:
  case KILN_ATTR_GRAPHS:
  case KILN_ATTR_TYPE_PROTOS: return put_attr_lists(w, a);
  default: return kiln_unsupported("attribute '%s' of undefined kind", a->name);
  }
}

/* ---- nodes and graphs ---- */

typedef struct node_arg {
  const kiln_graph *g;
  const kiln_node *n;
} node_arg;

static const char *value_name(const kiln_graph *g, int id) {
  return id < 0 ? "" : g->values.data[id].name;
}

static kiln_status put_node(kiln_wire_writer *w, const void *arg) {
  const node_arg *na = arg;
  const kiln_node *n = na->n;
  for (int i = 0; i < n->n_inputs; i++) kiln_wire_put_str(w, 1, value_name(na->g, n->inputs[i]));
  for (int i = 0; i < n->n_outputs; i++) kiln_wire_put_str(w, 2, value_name(na->g, n->outputs[i]));
  if (n->name && n->name[0]) kiln_wire_put_str(w, 3, n->name);
  kiln_wire_put_str(w, 4, n->op_type);
  for (int i = 0; i < n->n_attrs; i++) KILN_TRY(kiln_wire_put_msg(w, 5, put_attr, &n->attrs[i]));
  if (n->domain && n->domain[0]) kiln_wire_put_str(w, 7, n->domain);
  return KILN_OK;
}

static kiln_status put_values(kiln_wire_writer *w, const kiln_graph *g) {
  for (int i = 0; i < g->values.len; i++) {
    const kiln_value *v = &g->values.data[i];
    if (v->kind == KILN_VALUE_CONST) KILN_TRY(put_tensor_msg(w, 5, v->data, v->name));
  }
  for (int i = 0; i < g->inputs.len; i++)
    KILN_TRY(put_value_info(w, 11, &g->values.data[g->inputs.data[i]]));
  for (int i = 0; i < g->outputs.len; i++)
    KILN_TRY(put_value_info(w, 12, &g->values.data[g->outputs.data[i]]));
  for (int i = 0; i < g->values.len; i++) {
    const kiln_value *v = &g->values.data[i];
    if (v->kind == KILN_VALUE_NODE && v->type.kind != KILN_TYPE_UNKNOWN &&
        !kiln_graph_is_output(g, i))
      KILN_TRY(put_value_info(w, 13, v));
  }
  return KILN_OK;
}

static kiln_status put_graph(kiln_wire_writer *w, const void *arg) {
  const kiln_graph *g = arg;
  for (int i = 0; i < g->nodes.len; i++) {
    node_arg na = {g, &g->nodes.data[i]};
    KILN_TRY(kiln_wire_put_msg(w, 1, put_node, &na));
  }
  if (g->name && g->name[0]) kiln_wire_put_str(w, 2, g->name);
  return put_values(w, g);
}

/* ---- the model ---- */

static kiln_status put_opset(kiln_wire_writer *w, const void *arg) {
  const kiln_opset *o = arg;
  if (o->domain && o->domain[0]) kiln_wire_put_str(w, 1, o->domain);
  kiln_wire_put_int(w, 2, o->version);
  return KILN_OK;
}

/* The IR version that goes with the default-domain opset (onnx.helper.VERSION_TABLE),
 * for graphs that have none (ir_version 0): ONNX requires the field. */
static int64_t ir_version_for(const kiln_graph *g) {
  if (g->ir_version > 0) return g->ir_version;
  int64_t v = kiln_graph_opset(g, "");
  return v <= 21 ? 10 : v == 22 ? 10 : v == 23 ? 11 : v == 24 ? 12 : 13;
}

static kiln_status put_model(kiln_wire_writer *w, const void *arg) {
  const kiln_graph *g = arg;
  kiln_wire_put_int(w, 1, ir_version_for(g));
  kiln_wire_put_str(w, 2, g->producer); /* NULL: none */
  KILN_TRY(kiln_wire_put_msg(w, 7, put_graph, g));
  for (int i = 0; i < g->opsets.len; i++)
    KILN_TRY(kiln_wire_put_msg(w, 8, put_opset, &g->opsets.data[i]));
  return KILN_OK;
}

kiln_status kiln_onnx_save_bytes(const kiln_graph *g, kiln_strbuf *out) {
  return kiln_wire_write_buf(out, put_model, g);
}

kiln_status kiln_onnx_save(const kiln_graph *g, const char *path) {
  return kiln_wire_write_file(path, put_model, g);
}
