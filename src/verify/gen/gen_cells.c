/* The coverage cells of a generated graph: what of the space of valid models it reached.
 *
 *   op:Conv                      the op
 *   attr:Conv.auto_pad=SAME_LOWER  an attribute's value class: an enumerated value, "absent"
 *                                (the schema's default applies), for integers -1, neg, 0, 1,
 *                                last (rank-1 for axes), even, odd; for floats 0, neg, default,
 *                                other; for lists their length and whether they hold 0 or a
 *                                negative value
 *   dtype:Conv=f16               the dtype of the node's first input (its output for sources)
 *   rank:Conv=3                  the rank of the first input
 *   bcast:Add=both               how the operands of a multi-input elementwise node broadcast
 *                                (same, scalar, lower-rank, ones, both)
 *   empty:Concat                 an input holds no element (an extent of 0)
 *
 * The universe (kiln_gen_cell_universe) is the set of enumerated attribute values and absent
 * attributes of the ops the generator draws, from the op schemas (op_attrs.h) and the table of
 * enumerated values below: `kiln fuzz --report` lists the cells of it a campaign never reached. */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"
#include "ops/op_attrs.h"

/* Enumerated attributes: the values ONNX defines (op NULL: the attribute of that name in every
 * op that has one). */
typedef struct enum_attr {
  const char *op, *name;
  const char *values[6];
} enum_attr;
static const enum_attr enums[] = {
    {NULL, "auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}},
    {"Pad", "mode", {"constant", "reflect", "edge", "wrap"}},
    {"DepthToSpace", "mode", {"DCR", "CRD"}},
    {NULL, "reduction", {"none", "add", "mul", "max", "min"}},
    {"Gelu", "approximate", {"none", "tanh"}},
    {"BitShift", "direction", {"LEFT", "RIGHT"}},
    {NULL, "direction", {"forward", "reverse", "bidirectional"}}, /* RNN, GRU, LSTM */
    {"LpNormalization", "p", {"1", "2"}},
    {NULL, "keepdims", {"0", "1"}},
    {NULL, "noop_with_empty_axes", {"0", "1"}},
    {NULL, "select_last_index", {"0", "1"}},
    {NULL, "exclusive", {"0", "1"}},
    {NULL, "reverse", {"0", "1"}},
    {NULL, "ceil_mode", {"0", "1"}},
    {NULL, "count_include_pad", {"0", "1"}},
    {NULL, "transA", {"0", "1"}},
    {NULL, "transB", {"0", "1"}},
    {NULL, "upper", {"0", "1"}},
    {NULL, "largest", {"0", "1"}},
    {NULL, "saturate", {"0", "1"}}, /* a near-duplicate moved it to 2: no valid Cast */
};

/* Cells of the universe the generator does not produce, with the reason (listed apart by
 * --report, never as gaps). */
typedef struct cell_excl {
  const char *cell, *why;
} cell_excl;
static const cell_excl excluded[] = {
    {"attr:TopK.sorted=0", "the order of an unsorted TopK is unspecified: no oracle"},
    {"attr:Dropout.seed=absent", "Dropout runs in inference mode: the seed is never read"},
};

static const enum_attr *find_enum(const char *op, const char *name) {
  for (size_t i = 0; i < sizeof enums / sizeof enums[0]; i++)
    if (!strcmp(enums[i].name, name) && (!enums[i].op || !strcmp(enums[i].op, op)))
      return &enums[i];
  return NULL;
}

const char *const *gen_enum_values(const char *op, const char *name) {
  const enum_attr *e = find_enum(op, name);
  return e ? e->values : NULL;
}

const char *kiln_gen_cell_excluded(const char *cell) {
  for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++)
    if (!strcmp(excluded[i].cell, cell)) return excluded[i].why;
  return NULL;
}

static void int_class(int64_t v, int rank, bool axis, char *out, size_t n) {
  if (v == -1) snprintf(out, n, "-1");
  else if (v < 0) snprintf(out, n, "neg");
  else if (v <= 1) snprintf(out, n, "%lld", (long long)v);
  else if (axis && v == rank - 1) snprintf(out, n, "last");
  else snprintf(out, n, v % 2 ? "odd" : "even");
}

static void ints_class(const kiln_attr *a, char *out, size_t n) {
  bool zero = false, neg = false;
  for (int i = 0; i < a->n; i++) zero = zero || a->ints[i] == 0, neg = neg || a->ints[i] < 0;
  snprintf(out, n, "[%d]%s%s", a->n, zero ? "+0" : "", neg ? "+neg" : "");
}

/* The value class of attribute a of node nd (op schema default d, may be NULL). */
static void value_class(const kiln_node *nd, const kiln_attr *a, const kiln_attr_schema *d,
                        int rank, char *out, size_t n) {
  const enum_attr *e = find_enum(nd->op_type, a->name);
  bool axis = strstr(a->name, "axis") || strstr(a->name, "axes");
  switch (a->kind) {
  case KILN_ATTR_INT:
    if (e) snprintf(out, n, "%lld", (long long)a->i);
    else int_class(a->i, rank, axis, out, n);
    break;
  case KILN_ATTR_FLOAT:
    snprintf(out, n, "%s",
             a->f == 0                             ? "0"
             : a->f < 0                            ? "neg"
             : d && d->has_default && d->f == a->f ? "default"
                                                   : "other");
    break;
  case KILN_ATTR_STRING: snprintf(out, n, "%s", e ? a->s : "set"); break;
  case KILN_ATTR_INTS: ints_class(a, out, n); break;
  case KILN_ATTR_FLOATS: snprintf(out, n, "[%d]", a->n); break;
  default: snprintf(out, n, "%s", kiln_attr_kind_name(a->kind)); break;
  }
}

static const kiln_type *value_type(const kiln_graph *g, int v) {
  return v >= 0 ? &g->values.data[v].type : NULL;
}

/* How the operands of an elementwise node with several inputs broadcast. */
static const char *bcast_form(const kiln_graph *g, const kiln_node *nd) {
  const kiln_type *o = value_type(g, nd->outputs[0]);
  if (!o || o->kind != KILN_TYPE_TENSOR || o->rank < 0) return NULL;
  int n_diff = 0;
  const char *form = "same";
  for (int k = 0; k < nd->n_inputs; k++) {
    const kiln_type *t = value_type(g, nd->inputs[k]);
    if (!t || t->kind != KILN_TYPE_TENSOR || t->rank < 0) return NULL;
    bool diff = t->rank != o->rank;
    for (int d = 0; d < t->rank && !diff; d++)
      diff = t->dims[d].value != o->dims[d].value || (t->dims[d].value < 0 && !t->dims[d].sym);
    if (!diff) continue;
    n_diff++;
    form = t->rank == 0 ? "scalar" : t->rank < o->rank ? "lower-rank" : "ones";
  }
  return n_diff > 1 ? "both" : form;
}

static bool is_elementwise(const kiln_node *nd) {
  static const char *const ops[] = {
      "Add",        "Sub",       "Mul",       "Div",   "Pow",      "Max",         "Min",
      "Sum",        "Mean",      "Where",     "Equal", "Less",     "Greater",     "And",
      "Or",         "Xor",       "Mod",       "PRelu", "BitShift", "LessOrEqual", "GreaterOrEqual",
      "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i], nd->op_type)) return true;
  return false;
}

static void node_cells(const kiln_graph *g, const kiln_node *nd, int64_t opset,
                       void (*cb)(void *, const char *), void *user) {
  char key[256], cls[64];
  snprintf(key, sizeof key, "op:%s", nd->op_type);
  cb(user, key);
  const kiln_type *t0 = nd->n_inputs > 0 ? value_type(g, nd->inputs[0]) : NULL;
  if (!t0 && nd->n_outputs > 0) t0 = value_type(g, nd->outputs[0]);
  int rank = t0 && t0->kind == KILN_TYPE_TENSOR ? t0->rank : -1;
  if (t0 && t0->kind == KILN_TYPE_TENSOR) {
    snprintf(key, sizeof key, "dtype:%s=%s", nd->op_type, kiln_dtype_name(t0->dtype));
    cb(user, key);
    snprintf(key, sizeof key, "rank:%s=%d", nd->op_type, rank);
    cb(user, key);
  }
  for (int k = 0; k < nd->n_inputs; k++) {
    const kiln_type *t = nd->inputs[k] >= 0 ? value_type(g, nd->inputs[k]) : NULL;
    bool empty = false;
    for (int d = 0; t && t->kind == KILN_TYPE_TENSOR && d < t->rank; d++)
      empty |= t->dims[d].value == 0;
    if (!empty) continue;
    snprintf(key, sizeof key, "empty:%s", nd->op_type);
    cb(user, key);
    break;
  }
  if (is_elementwise(nd) && nd->n_inputs > 1) {
    const char *f = bcast_form(g, nd);
    if (f) snprintf(key, sizeof key, "bcast:%s=%s", nd->op_type, f), cb(user, key);
  }
  const kiln_op_schema_version *sv = kiln_op_schema_at(nd->op, opset);
  for (const kiln_attr_schema *s = sv ? sv->attrs : NULL; s && s->name; s++) {
    const kiln_attr *a = kiln_node_attr(nd, s->name);
    if (a) value_class(nd, a, s, rank, cls, sizeof cls);
    else snprintf(cls, sizeof cls, "absent");
    snprintf(key, sizeof key, "attr:%s.%s=%s", nd->op_type, s->name, cls);
    cb(user, key);
    if (a) /* written at all, whatever its value (the universe holds one per attribute) */
      snprintf(key, sizeof key, "attr:%s.%s=written", nd->op_type, s->name), cb(user, key);
  }
}

void kiln_gen_cells(const kiln_graph *g, int64_t opset, void (*cb)(void *, const char *),
                    void *user) {
  for (int n = 0; n < g->nodes.len; n++) node_cells(g, &g->nodes.data[n], opset, cb, user);
}

/* The universe of one op: its enumerated values, its attributes left out and each attribute
 * written (any value) over the opsets the generator uses (an attribute counts from the first
 * of them that has it). */
static void op_universe(kiln_op op, const char *name, void (*cb)(void *, const char *),
                        void *user) {
  static const int opsets[] = {11, 12, 13, 17, 18, 21, 23, 26};
  char key[256];
  for (size_t v = 0; v < sizeof opsets / sizeof opsets[0]; v++) {
    const kiln_op_schema_version *sv = kiln_op_schema_at(op, opsets[v]);
    for (const kiln_attr_schema *s = sv ? sv->attrs : NULL; s && s->name; s++) {
      const enum_attr *e = find_enum(name, s->name);
      if (!s->required)
        snprintf(key, sizeof key, "attr:%s.%s=absent", name, s->name), cb(user, key);
      snprintf(key, sizeof key, "attr:%s.%s=written", name, s->name), cb(user, key);
      for (int k = 0; e && k < 6 && e->values[k]; k++)
        snprintf(key, sizeof key, "attr:%s.%s=%s", name, s->name, e->values[k]), cb(user, key);
    }
  }
}

void kiln_gen_cell_universe(void (*cb)(void *, const char *), void *user) {
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if (kiln_gen_ops[i].op != KILN_OP_UNKNOWN && kiln_gen_ops[i].name[0] != '(')
      op_universe(kiln_gen_ops[i].op, kiln_gen_ops[i].name, cb, user);
}
