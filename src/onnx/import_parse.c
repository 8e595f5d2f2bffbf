/* ONNX import, step 1: ModelProto bytes -> ox_* structures.
 *
 * Field numbers are those of onnx.proto (ONNX 1.22); unknown fields of every
 * message are skipped. Each message reader pushes its component on the path
 * so errors read "model.graph.node[12].attribute[3]: ... at byte 1234". */
#include <stdio.h>
#include <string.h>

#include "import_internal.h"

#define S(c) (&(c)->src.w)

static kiln_status parse_graph(ox_ctx *c, const uint8_t *data, size_t len, ox_graph *g);

const char *kiln_ox_node_label(const ox_node *n, char *buf, size_t len) {
  if (n->name && n->name[0]) snprintf(buf, len, "%s '%s' (%s)", n->path, n->name, n->op_type);
  else snprintf(buf, len, "%s (%s)", n->path, n->op_type);
  return buf;
}

/* Runs fn on the payload of a LEN field with a path component and a depth check. */
#define NESTED(c, f, call, ...)                                                                    \
  do {                                                                                             \
    KILN_TRY(kiln_wire_bytes(&r, (f)));                                                            \
    KILN_TRY(kiln_wire_enter(S(c), (f)->offset));                                                  \
    size_t mark_ = kiln_wire_push(S(c), __VA_ARGS__);                                              \
    kiln_status st_ = (call);                                                                      \
    kiln_wire_pop(S(c), mark_);                                                                    \
    kiln_wire_leave(S(c));                                                                         \
    KILN_TRY(st_);                                                                                 \
  } while (0)

static char *path_copy(ox_ctx *c) {
  return kiln_arena_strndup(c->scratch, S(c)->path, S(c)->path_len);
}

/* ---- small messages ---- */

static kiln_status parse_opset(ox_ctx *c, const uint8_t *data, size_t len, kiln_opset *o) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  o->domain = "";
  o->version = 0;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    if (f.num == 1) KILN_TRY(kiln_wire_name(&r, &f, c->scratch, &o->domain));
    if (f.num == 2) KILN_TRY(kiln_wire_i64(&r, &f, &o->version));
  }
  if (strcmp(o->domain, "ai.onnx") == 0) o->domain = "";
  return KILN_OK;
}

static kiln_status parse_vinfo(ox_ctx *c, const uint8_t *data, size_t len, ox_vinfo *v) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  v->name = "";
  v->type = kiln_type_unknown();
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num == 1) KILN_TRY(kiln_wire_name(&r, &f, c->scratch, &v->name));
    if (f.num == 2) {
      KILN_TRY(kiln_wire_bytes(&r, &f));
      KILN_TRY(kiln_onnx_read_type(&c->src, f.data, f.len, c->root->arena, &v->type));
    }
  }
}

/* ---- attributes ---- */

typedef struct attr_acc { /* repeated fields gathered across occurrences */
  KILN_VEC(float) floats;
  KILN_VEC(int64_t) ints;
  KILN_VEC(const char *) strings;
  KILN_VEC(kiln_tensor *) tensors;
  KILN_VEC(ox_graph *) graphs;
  KILN_VEC(kiln_type) tps;
  int32_t type;
  uint32_t seen; /* bit per single-valued field present */
} attr_acc;

static kiln_status read_floats(ox_ctx *c, const kiln_wire *r, const kiln_wire_field *f,
                               attr_acc *acc) {
  size_t n;
  KILN_TRY(kiln_wire_count(r, f, KILN_WIRE_I32, &n));
  for (size_t i = 0; i < n; i++) {
    float v;
    uint32_t bits = 0;
    if (f->type == KILN_WIRE_I32) bits = (uint32_t)f->v;
    else memcpy(&bits, f->data + 4 * i, 4);
    memcpy(&v, &bits, 4);
    kiln_arena_vec_push(c->scratch, &acc->floats, v);
  }
  return KILN_OK;
}

static kiln_status read_ints(ox_ctx *c, const kiln_wire *r, const kiln_wire_field *f,
                             attr_acc *acc) {
  if (f->type == KILN_WIRE_VARINT) {
    kiln_arena_vec_push(c->scratch, &acc->ints, (int64_t)f->v);
    return KILN_OK;
  }
  KILN_TRY(kiln_wire_bytes(r, f));
  const uint8_t *p = f->data, *end = f->data + f->len;
  while (p < end) {
    uint64_t v;
    if (!kiln_wire_varint(&p, end, &v))
      return kiln_wire_error(S(c), KILN_ERR_INVALID, f->offset, "malformed packed ints");
    kiln_arena_vec_push(c->scratch, &acc->ints, (int64_t)v);
  }
  return KILN_OK;
}

static kiln_status own_tensor(ox_ctx *c, const kiln_wire_field *f, bool sparse, kiln_tensor **out) {
  kiln_status st = sparse ? kiln_onnx_read_sparse(&c->src, f->data, f->len, NULL, NULL, out)
                          : kiln_onnx_read_tensor(&c->src, f->data, f->len, NULL, NULL, out);
  if (!st) kiln_graph_own_tensor(c->root, *out);
  return st;
}

static kiln_status new_graph(ox_ctx *c, const uint8_t *data, size_t len, ox_graph **out) {
  *out = kiln_arena_alloc(c->scratch, sizeof **out);
  return parse_graph(c, data, len, *out);
}

static kiln_status attr_field(ox_ctx *c, const kiln_wire *rp, const kiln_wire_field *f, ox_attr *a,
                              attr_acc *acc) {
  kiln_wire r = *rp;
  kiln_tensor *t;
  ox_graph *g;
  kiln_type tp;
  const char *s;
  if (f->num < 32) acc->seen |= 1u << f->num;
  switch (f->num) {
  case 1: return kiln_wire_name(&r, f, c->scratch, &a->a.name);
  case 21: return kiln_wire_name(&r, f, c->scratch, &a->ref);
  case 20: return kiln_wire_i32(&r, f, &acc->type);
  case 2: return kiln_wire_f32(&r, f, &a->a.f);
  case 3: return kiln_wire_i64(&r, f, &a->a.i);
  case 4:
    KILN_TRY(kiln_wire_str(&r, f, c->root->arena, &a->a.s));
    a->a.s_len = f->len;
    return KILN_OK;
  case 5: NESTED(c, f, own_tensor(c, f, false, &a->a.t), ".t"); return KILN_OK;
  case 22: NESTED(c, f, own_tensor(c, f, true, &a->a.t), ".sparse_tensor"); return KILN_OK;
  case 6: NESTED(c, f, new_graph(c, f->data, f->len, &a->g), ".g"); return KILN_OK;
  case 14:
    NESTED(c, f, kiln_onnx_read_type(&c->src, f->data, f->len, c->root->arena, &a->a.tp), ".tp");
    return KILN_OK;
  case 7: return read_floats(c, &r, f, acc);
  case 8: return read_ints(c, &r, f, acc);
  case 9:
    KILN_TRY(kiln_wire_str(&r, f, c->root->arena, &s));
    kiln_arena_vec_push(c->scratch, &acc->strings, s);
    return KILN_OK;
  case 10:
  case 23:
    NESTED(c, f, own_tensor(c, f, f->num == 23, &t), ".tensors[%d]", acc->tensors.len);
    kiln_arena_vec_push(c->scratch, &acc->tensors, t);
    return KILN_OK;
  case 11:
    NESTED(c, f, new_graph(c, f->data, f->len, &g), ".graphs[%d]", acc->graphs.len);
    kiln_arena_vec_push(c->scratch, &acc->graphs, g);
    return KILN_OK;
  case 15:
    NESTED(c, f, kiln_onnx_read_type(&c->src, f->data, f->len, c->root->arena, &tp),
           ".type_protos[%d]", acc->tps.len);
    kiln_arena_vec_push(c->scratch, &acc->tps, tp);
    return KILN_OK;
  default: return KILN_OK;
  }
}

/* The kind from the fields present, for models that omit AttributeProto.type. */
static kiln_attr_kind infer_kind(const attr_acc *acc) {
  static const struct {
    int field;
    kiln_attr_kind kind;
  } single[] = {
      {2, KILN_ATTR_FLOAT},           {3, KILN_ATTR_INT},         {4, KILN_ATTR_STRING},
      {5, KILN_ATTR_TENSOR},          {6, KILN_ATTR_GRAPH},       {22, KILN_ATTR_SPARSE_TENSOR},
      {14, KILN_ATTR_TYPE_PROTO},     {7, KILN_ATTR_FLOATS},      {8, KILN_ATTR_INTS},
      {9, KILN_ATTR_STRINGS},         {10, KILN_ATTR_TENSORS},    {11, KILN_ATTR_GRAPHS},
      {23, KILN_ATTR_SPARSE_TENSORS}, {15, KILN_ATTR_TYPE_PROTOS}};
  for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
    if (acc->seen & (1u << single[i].field)) return single[i].kind;
  return KILN_ATTR_UNDEFINED;
}

#define COPY_LIST(c, dst, vec)                                                                     \
  do {                                                                                             \
    size_t bytes_ = (size_t)(vec).len * sizeof(*(vec).data);                                       \
    (dst) = kiln_arena_alloc((c)->root->arena, bytes_ ? bytes_ : 1);                               \
    if (bytes_) memcpy((dst), (vec).data, bytes_);                                                 \
  } while (0)

static void finish_attr(ox_ctx *c, ox_attr *a, const attr_acc *acc) {
  kiln_attr *k = &a->a;
  switch (k->kind) {
  case KILN_ATTR_FLOATS:
    k->n = acc->floats.len;
    COPY_LIST(c, k->floats, acc->floats);
    break;
  case KILN_ATTR_INTS:
    k->n = acc->ints.len;
    COPY_LIST(c, k->ints, acc->ints);
    break;
  case KILN_ATTR_STRINGS:
    k->n = acc->strings.len;
    COPY_LIST(c, k->strings, acc->strings);
    break;
  case KILN_ATTR_TENSORS:
  case KILN_ATTR_SPARSE_TENSORS:
    k->n = acc->tensors.len;
    COPY_LIST(c, k->tensors, acc->tensors);
    break;
  case KILN_ATTR_GRAPHS:
    k->n = acc->graphs.len;
    a->gs = acc->graphs.data;
    break;
  case KILN_ATTR_TYPE_PROTOS:
    k->n = acc->tps.len;
    COPY_LIST(c, k->tps, acc->tps);
    break;
  case KILN_ATTR_STRING:
    if (!k->s) k->s = "";
    break;
  default: break;
  }
}

static kiln_status check_attr(ox_ctx *c, size_t off, ox_attr *a, const attr_acc *acc) {
  kiln_attr *k = &a->a;
  if (!k->name || !k->name[0])
    return kiln_wire_error(S(c), KILN_ERR_INVALID, off, "attribute has no name");
  if (acc->type < 0 || acc->type >= KILN_ATTR_KIND_COUNT)
    return kiln_wire_error(S(c), KILN_ERR_INVALID, off, "attribute '%s' has invalid type %d",
                           k->name, (int)acc->type);
  k->kind = acc->type ? (kiln_attr_kind)acc->type : infer_kind(acc);
  if (k->kind == KILN_ATTR_UNDEFINED && !a->ref)
    return kiln_wire_error(S(c), KILN_ERR_INVALID, off, "attribute '%s' has no value", k->name);
  if ((k->kind == KILN_ATTR_TENSOR || k->kind == KILN_ATTR_SPARSE_TENSOR) && !k->t && !a->ref)
    return kiln_wire_error(S(c), KILN_ERR_INVALID, off, "attribute '%s' has no tensor", k->name);
  if (k->kind == KILN_ATTR_GRAPH && !a->g && !a->ref)
    return kiln_wire_error(S(c), KILN_ERR_INVALID, off, "attribute '%s' has no graph", k->name);
  finish_attr(c, a, acc);
  return KILN_OK;
}

static kiln_status parse_attr(ox_ctx *c, const uint8_t *data, size_t len, ox_attr *a) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  attr_acc acc;
  memset(&acc, 0, sizeof acc);
  memset(a, 0, sizeof *a);
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    KILN_TRY(attr_field(c, &r, &f, a, &acc));
  }
  return check_attr(c, (size_t)(data - S(c)->base), a, &acc);
}

/* ---- nodes ---- */

typedef KILN_VEC(const char *) str_vec;
typedef KILN_VEC(ox_attr) attr_vec;

static kiln_status node_field(ox_ctx *c, kiln_wire *rp, const kiln_wire_field *f, ox_node *n,
                              str_vec *in, str_vec *out, attr_vec *attrs) {
  kiln_wire r = *rp;
  const char *s;
  ox_attr a;
  switch (f->num) {
  case 1:
  case 2:
    KILN_TRY(kiln_wire_name(&r, f, c->scratch, &s));
    if (f->num == 1) kiln_arena_vec_push(c->scratch, in, s);
    else kiln_arena_vec_push(c->scratch, out, s);
    return KILN_OK;
  case 3: return kiln_wire_name(&r, f, c->scratch, &n->name);
  case 4: return kiln_wire_name(&r, f, c->scratch, &n->op_type);
  case 7: return kiln_wire_name(&r, f, c->scratch, &n->domain);
  case 5:
    NESTED(c, f, parse_attr(c, f->data, f->len, &a), ".attribute[%d]", attrs->len);
    kiln_arena_vec_push(c->scratch, attrs, a);
    return KILN_OK;
  default: return KILN_OK;
  }
}

static kiln_status parse_node(ox_ctx *c, const uint8_t *data, size_t len, ox_node *n) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  str_vec in = {0}, out = {0};
  attr_vec attrs = {0};
  memset(n, 0, sizeof *n);
  n->name = n->domain = n->op_type = "";
  n->path = path_copy(c);
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    KILN_TRY(node_field(c, &r, &f, n, &in, &out, &attrs));
  }
  if (!n->op_type[0])
    return kiln_wire_error(S(c), KILN_ERR_INVALID, (size_t)(data - S(c)->base),
                           "node '%s' has no op_type", n->name);
  if (strcmp(n->domain, "ai.onnx") == 0) n->domain = "";
  n->n_in = in.len, n->in = in.data;
  n->n_out = out.len, n->out = out.data;
  n->n_attrs = attrs.len, n->attrs = attrs.data;
  return KILN_OK;
}

/* ---- graphs ---- */

static kiln_status graph_field(ox_ctx *c, kiln_wire *rp, const kiln_wire_field *f, ox_graph *g) {
  kiln_wire r = *rp;
  ox_node n;
  ox_vinfo v;
  switch (f->num) {
  case 1:
    NESTED(c, f, parse_node(c, f->data, f->len, &n), ".node[%d]", g->nodes.len);
    kiln_arena_vec_push(c->scratch, &g->nodes, n);
    return KILN_OK;
  case 2: return kiln_wire_name(&r, f, c->scratch, &g->name);
  case 5:
  case 15: {
    KILN_TRY(kiln_wire_bytes(&r, f));
    size_t mark = kiln_wire_push(S(c), ".%s[%d]",
                                 f->num == 5 ? "initializer" : "sparse_initializer", g->inits.len);
    ox_init in = {f->data, f->len, f->num == 15, path_copy(c)};
    kiln_wire_pop(S(c), mark);
    kiln_arena_vec_push(c->scratch, &g->inits, in);
    return KILN_OK;
  }
  case 11:
    NESTED(c, f, parse_vinfo(c, f->data, f->len, &v), ".input[%d]", g->inputs.len);
    kiln_arena_vec_push(c->scratch, &g->inputs, v);
    return KILN_OK;
  case 12:
    NESTED(c, f, parse_vinfo(c, f->data, f->len, &v), ".output[%d]", g->outputs.len);
    kiln_arena_vec_push(c->scratch, &g->outputs, v);
    return KILN_OK;
  case 13:
    NESTED(c, f, parse_vinfo(c, f->data, f->len, &v), ".value_info[%d]", g->vinfos.len);
    kiln_arena_vec_push(c->scratch, &g->vinfos, v);
    return KILN_OK;
  default: return KILN_OK;
  }
}

static kiln_status parse_graph(ox_ctx *c, const uint8_t *data, size_t len, ox_graph *g) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  memset(g, 0, sizeof *g);
  g->name = "";
  g->path = path_copy(c);
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    KILN_TRY(graph_field(c, &r, &f, g));
  }
}

/* ---- functions ---- */

static kiln_status function_field(ox_ctx *c, kiln_wire *rp, const kiln_wire_field *f,
                                  ox_function *fn, str_vec *in, str_vec *out, attr_vec *defs) {
  kiln_wire r = *rp;
  const char *s;
  ox_node n;
  ox_attr a;
  kiln_opset o;
  switch (f->num) {
  case 1: return kiln_wire_name(&r, f, c->scratch, &fn->name);
  case 10: return kiln_wire_name(&r, f, c->scratch, &fn->domain);
  case 4:
  case 5:
    KILN_TRY(kiln_wire_name(&r, f, c->scratch, &s));
    kiln_arena_vec_push(c->scratch, f->num == 4 ? in : out, s);
    return KILN_OK;
  case 11:
    NESTED(c, f, parse_attr(c, f->data, f->len, &a), ".attribute_proto[%d]", defs->len);
    kiln_arena_vec_push(c->scratch, defs, a);
    return KILN_OK;
  case 7:
    NESTED(c, f, parse_node(c, f->data, f->len, &n), ".node[%d]", fn->nodes.len);
    kiln_arena_vec_push(c->scratch, &fn->nodes, n);
    return KILN_OK;
  case 9:
    NESTED(c, f, parse_opset(c, f->data, f->len, &o), ".opset_import[%d]", fn->opsets.len);
    kiln_arena_vec_push(c->scratch, &fn->opsets, o);
    return KILN_OK;
  default: return KILN_OK;
  }
}

static kiln_status parse_function(ox_ctx *c, const uint8_t *data, size_t len, ox_function *fn) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  str_vec in = {0}, out = {0};
  attr_vec defs = {0};
  memset(fn, 0, sizeof *fn);
  fn->name = fn->domain = "";
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    KILN_TRY(function_field(c, &r, &f, fn, &in, &out, &defs));
  }
  if (strcmp(fn->domain, "ai.onnx") == 0) fn->domain = "";
  fn->n_in = in.len, fn->in = in.data;
  fn->n_out = out.len, fn->out = out.data;
  fn->n_defaults = defs.len, fn->defaults = defs.data;
  return KILN_OK;
}

/* ---- model ---- */

static kiln_status model_field(ox_ctx *c, kiln_wire *rp, const kiln_wire_field *f, ox_model *m) {
  kiln_wire r = *rp;
  kiln_opset o;
  ox_function fn;
  switch (f->num) {
  case 1: return kiln_wire_i64(&r, f, &m->ir_version);
  case 2: return kiln_wire_str(&r, f, c->scratch, &m->producer);
  case 7: NESTED(c, f, new_graph(c, f->data, f->len, &m->graph), ".graph"); return KILN_OK;
  case 8:
    NESTED(c, f, parse_opset(c, f->data, f->len, &o), ".opset_import[%d]", m->opsets.len);
    kiln_arena_vec_push(c->scratch, &m->opsets, o);
    return KILN_OK;
  case 25:
    NESTED(c, f, parse_function(c, f->data, f->len, &fn), ".functions[%d]", m->functions.len);
    kiln_arena_vec_push(c->scratch, &m->functions, fn);
    return KILN_OK;
  case 20: return kiln_wire_error(S(c), KILN_ERR_UNSUPPORTED, f->offset, "training_info");
  default: return KILN_OK;
  }
}

kiln_status kiln_ox_parse_model(ox_ctx *c, const uint8_t *data, size_t len, ox_model *m) {
  kiln_wire r = kiln_wire_sub(S(c), data, len);
  kiln_wire_field f;
  memset(m, 0, sizeof *m);
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    KILN_TRY(model_field(c, &r, &f, m));
  }
  if (!m->graph) return kiln_wire_error(S(c), KILN_ERR_INVALID, len, "the model has no graph");
  return KILN_OK;
}
