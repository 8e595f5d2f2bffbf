/* The graph IR printer: writes the text form that graph_parse.c reads back
 * (print -> parse -> print is the identity). docs/IR.md is the reference.
 * The printer never fails: ids or kinds out of range print as <invalid ...>
 * markers (which do not parse), so a broken graph can still be dumped. */
#include <string.h>

#include "graph_text.h"

typedef struct printer {
  kiln_strbuf *b;
  int64_t elide_above; /* < 0: print all constant data */
} printer;

static void print_graph(printer *pr, const kiln_graph *g, int indent);

static void put(printer *pr, const char *s) {
  kiln_strbuf_append(pr->b, s, strlen(s));
}

static void put_indent(printer *pr, int n) {
  for (int i = 0; i < n; i++) kiln_strbuf_append(pr->b, " ", 1);
}

/* A value reference: %name, or _ for an omitted optional value (id -1). */
static void print_ref(printer *pr, const kiln_graph *g, int id) {
  if (id == -1) put(pr, "_");
  else if (id < -1 || id >= g->values.len) kiln_strbuf_printf(pr->b, "<invalid value %d>", id);
  else kiln_gtext_name(pr->b, '%', g->values.data[id].name);
}

static void print_dim(printer *pr, const kiln_dim *d) {
  if (d->value >= 0) kiln_strbuf_printf(pr->b, "%lld", (long long)d->value);
  else if (d->sym) kiln_gtext_ident(pr->b, d->sym);
  else put(pr, "?");
}

/* dtype '[' dims ']', or dtype '[*]' for an unknown rank */
static void print_tensor_type(printer *pr, const kiln_type *t) {
  put(pr, kiln_dtype_name(t->dtype));
  if (t->rank < 0) {
    put(pr, "[*]");
    return;
  }
  put(pr, "[");
  for (int i = 0; i < t->rank && i < KILN_MAX_RANK; i++) {
    if (i) put(pr, ",");
    print_dim(pr, &t->dims[i]);
  }
  put(pr, "]");
}

static void print_type(printer *pr, const kiln_type *t) {
  switch (t->kind) {
  case KILN_TYPE_TENSOR: print_tensor_type(pr, t); break;
  case KILN_TYPE_SEQUENCE:
    put(pr, "seq<");
    print_tensor_type(pr, t);
    put(pr, ">");
    break;
  case KILN_TYPE_OPTIONAL:
    put(pr, t->elem_seq ? "opt<seq<" : "opt<");
    print_tensor_type(pr, t);
    put(pr, t->elem_seq ? ">>" : ">");
    break;
  default: put(pr, "?"); break;
  }
}

static void print_element(printer *pr, const kiln_tensor *t, size_t i) {
  if (t->dtype == KILN_STRING) {
    const char *s = ((char *const *)t->data)[i];
    kiln_gtext_quote(pr->b, s ? s : "", s ? strlen(s) : 0);
  } else if (kiln_dtype_is_float(t->dtype)) {
    kiln_gtext_format_float(pr->b, t->dtype, t->data, i);
  } else {
    kiln_gtext_format_int(pr->b, t->dtype, t->data, i);
  }
}

/* tensor_lit: dtype '[' dims ']' ' ' ('[' elements ']' | '<N elements>') */
static void print_tensor(printer *pr, const kiln_tensor *t) {
  if (!t) {
    put(pr, "<invalid tensor>");
    return;
  }
  if (!kiln_dtype_valid((int)t->dtype) || t->rank < 0 || t->rank > KILN_MAX_RANK) {
    kiln_strbuf_printf(pr->b, "<invalid tensor of dtype %d, rank %d>", (int)t->dtype, t->rank);
    return;
  }
  kiln_strbuf_printf(pr->b, "%s[", kiln_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++)
    kiln_strbuf_printf(pr->b, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  put(pr, "] ");
  if ((pr->elide_above >= 0 && t->numel > pr->elide_above) || (t->numel > 0 && !t->data)) {
    kiln_strbuf_printf(pr->b, "<%lld elements>", (long long)t->numel);
    return;
  }
  put(pr, "[");
  for (int64_t i = 0; i < t->numel; i++) {
    if (i) put(pr, ", ");
    print_element(pr, t, (size_t)i);
  }
  put(pr, "]");
}

/* Appends a float attribute so that it reads back as a float, not an int ("1.0"). */
static void print_float_attr(printer *pr, float f) {
  size_t at = pr->b->len;
  kiln_gtext_format_float(pr->b, KILN_F32, &f, 0);
  if (strspn(pr->b->data + at, "-0123456789") == pr->b->len - at) put(pr, ".0");
}

/* Prints element i of a list attribute in its scalar form. */
static void print_list_elem(printer *pr, const kiln_attr *a, int i, int indent) {
  switch (a->kind) {
  case KILN_ATTR_FLOATS: print_float_attr(pr, a->floats[i]); break;
  case KILN_ATTR_INTS: kiln_strbuf_printf(pr->b, "%lld", (long long)a->ints[i]); break;
  case KILN_ATTR_STRINGS: {
    const char *s = a->strings[i] ? a->strings[i] : "";
    kiln_gtext_quote(pr->b, s, strlen(s));
    break;
  }
  case KILN_ATTR_TENSORS: print_tensor(pr, a->tensors[i]); break;
  case KILN_ATTR_SPARSE_TENSORS:
    put(pr, "sparse ");
    print_tensor(pr, a->tensors[i]);
    break;
  case KILN_ATTR_GRAPHS:
    if (a->graphs[i]) print_graph(pr, a->graphs[i], indent);
    else put(pr, "<invalid graph>");
    break;
  case KILN_ATTR_TYPE_PROTOS:
    put(pr, "type ");
    print_type(pr, &a->tps[i]);
    break;
  default: break;
  }
}

static bool list_data_present(const kiln_attr *a) {
  switch (a->kind) {
  case KILN_ATTR_FLOATS: return a->floats != NULL;
  case KILN_ATTR_INTS: return a->ints != NULL;
  case KILN_ATTR_STRINGS: return a->strings != NULL;
  case KILN_ATTR_TENSORS:
  case KILN_ATTR_SPARSE_TENSORS: return a->tensors != NULL;
  case KILN_ATTR_GRAPHS: return a->graphs != NULL;
  case KILN_ATTR_TYPE_PROTOS: return a->tps != NULL;
  default: return false;
  }
}

/* list := '[' elem {', ' elem} ']' | kind '[]' (an empty list names its kind); ints and floats
 * are listed without blanks, like the dims of a shape. */
static void print_list(printer *pr, const kiln_attr *a, int indent) {
  int n = list_data_present(a) && a->n > 0 ? a->n : 0;
  if (n == 0) {
    kiln_strbuf_printf(pr->b, "%s[]",
                       a->kind == KILN_ATTR_TYPE_PROTOS ? "types" : kiln_attr_kind_name(a->kind));
    return;
  }
  put(pr, "[");
  bool compact = a->kind == KILN_ATTR_INTS || a->kind == KILN_ATTR_FLOATS;
  for (int i = 0; i < n; i++) {
    if (i) put(pr, compact ? "," : ", ");
    print_list_elem(pr, a, i, indent);
  }
  put(pr, "]");
}

static void print_attr_value(printer *pr, const kiln_attr *a, int indent) {
  switch (a->kind) {
  case KILN_ATTR_UNDEFINED: put(pr, "undefined"); break;
  case KILN_ATTR_FLOAT: print_float_attr(pr, a->f); break;
  case KILN_ATTR_INT: kiln_strbuf_printf(pr->b, "%lld", (long long)a->i); break;
  case KILN_ATTR_STRING: kiln_gtext_quote(pr->b, a->s ? a->s : "", a->s ? a->s_len : 0); break;
  case KILN_ATTR_TENSOR: print_tensor(pr, a->t); break;
  case KILN_ATTR_SPARSE_TENSOR:
    put(pr, "sparse ");
    print_tensor(pr, a->t);
    break;
  case KILN_ATTR_GRAPH:
    if (a->g) print_graph(pr, a->g, indent);
    else put(pr, "<invalid graph>");
    break;
  case KILN_ATTR_TYPE_PROTO:
    put(pr, "type ");
    print_type(pr, &a->tp);
    break;
  case KILN_ATTR_FLOATS:
  case KILN_ATTR_INTS:
  case KILN_ATTR_STRINGS:
  case KILN_ATTR_TENSORS:
  case KILN_ATTR_GRAPHS:
  case KILN_ATTR_SPARSE_TENSORS:
  case KILN_ATTR_TYPE_PROTOS: print_list(pr, a, indent); break;
  default: kiln_strbuf_printf(pr->b, "<invalid attribute kind %d>", (int)a->kind); break;
  }
}

static void print_attrs(printer *pr, const kiln_node *n, int indent) {
  if (n->n_attrs <= 0 || !n->attrs) return;
  put(pr, " {");
  for (int i = 0; i < n->n_attrs; i++) {
    if (i) put(pr, ", ");
    kiln_gtext_ident(pr->b, n->attrs[i].name);
    put(pr, "=");
    print_attr_value(pr, &n->attrs[i], indent);
  }
  put(pr, "}");
}

static bool is_stmt_keyword(const char *s) {
  static const char *const kw[] = {"opset", "ir_version", "producer", "outer", "return", "const"};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (!strcmp(s, kw[i])) return true;
  return false;
}

/* An op type or domain: bare if an identifier that cannot start another statement. */
static void print_op_word(printer *pr, const char *s) {
  if (!s) s = "";
  if (kiln_gtext_is_ident(s) && !is_stmt_keyword(s)) put(pr, s);
  else kiln_gtext_quote(pr->b, s, strlen(s));
}

static bool valid_value(const kiln_graph *g, int id) {
  return id >= 0 && id < g->values.len;
}

/* node := [results ' = '] [domain '::'] op ['<' opset '>'] '(' args ')' [attrs] [' : ' types]
 *         [' @' name] [' group ' int] */
static void print_node(printer *pr, const kiln_graph *g, const kiln_node *n, int indent) {
  put_indent(pr, indent);
  int n_out = n->outputs ? n->n_outputs : 0, n_in = n->inputs ? n->n_inputs : 0;
  bool typed = false;
  for (int i = 0; i < n_out; i++) {
    if (i) put(pr, ", ");
    print_ref(pr, g, n->outputs[i]);
    typed |= valid_value(g, n->outputs[i]) && g->values.data[n->outputs[i]].type.kind != 0;
  }
  if (n_out > 0) put(pr, " = ");
  const char *domain = n->domain ? n->domain : "";
  if (domain[0]) {
    print_op_word(pr, domain);
    put(pr, "::");
  }
  print_op_word(pr, n->op_type);
  if (n->opset != kiln_graph_opset(g, domain))
    kiln_strbuf_printf(pr->b, "<%lld>", (long long)n->opset);
  put(pr, "(");
  for (int i = 0; i < n_in; i++) {
    if (i) put(pr, ", ");
    print_ref(pr, g, n->inputs[i]);
  }
  put(pr, ")");
  print_attrs(pr, n, indent);
  const char *sep = " : ";
  for (int i = 0; typed && i < n_out; i++) {
    if (n->outputs[i] == -1) continue;
    put(pr, sep);
    sep = ", ";
    if (valid_value(g, n->outputs[i])) print_type(pr, &g->values.data[n->outputs[i]].type);
    else put(pr, "?");
  }
  if (n->name && n->name[0]) {
    put(pr, " ");
    kiln_gtext_name(pr->b, '@', n->name);
  }
  if (n->group > 0) kiln_strbuf_printf(pr->b, " group %d", n->group);
  put(pr, "\n");
}

/* param := %name ': ' type */
static void print_params(printer *pr, const kiln_graph *g, const int *ids, int n) {
  put(pr, "(");
  for (int i = 0; i < n; i++) {
    if (i) put(pr, ", ");
    print_ref(pr, g, ids[i]);
    put(pr, ": ");
    if (valid_value(g, ids[i])) print_type(pr, &g->values.data[ids[i]].type);
    else put(pr, "?");
  }
  put(pr, ")");
}

/* The statements that precede the nodes: module facts (root), outer references, constants. */
static void print_prologue(printer *pr, const kiln_graph *g, int indent) {
  if (!g->parent) {
    for (int i = 0; i < g->opsets.len; i++) {
      put_indent(pr, indent);
      put(pr, "opset ");
      const char *d = g->opsets.data[i].domain ? g->opsets.data[i].domain : "";
      kiln_gtext_quote(pr->b, d, strlen(d));
      kiln_strbuf_printf(pr->b, " %lld\n", (long long)g->opsets.data[i].version);
    }
    if (g->ir_version) {
      put_indent(pr, indent);
      kiln_strbuf_printf(pr->b, "ir_version %lld\n", (long long)g->ir_version);
    }
    if (g->producer) {
      put_indent(pr, indent);
      put(pr, "producer ");
      kiln_gtext_quote(pr->b, g->producer, strlen(g->producer));
      put(pr, "\n");
    }
  }
  const char *sep = NULL;
  for (int i = 0; i < g->values.len; i++) {
    if (g->values.data[i].kind != KILN_VALUE_OUTER) continue;
    if (!sep) put_indent(pr, indent);
    put(pr, sep ? sep : "outer ");
    sep = ", ";
    print_ref(pr, g, i);
  }
  if (sep) put(pr, "\n");
  for (int i = 0; i < g->values.len; i++) {
    if (g->values.data[i].kind != KILN_VALUE_CONST) continue;
    put_indent(pr, indent);
    print_ref(pr, g, i);
    put(pr, " = const ");
    print_tensor(pr, g->values.data[i].data);
    put(pr, "\n");
  }
}

/* graph := 'graph' @name params ' -> ' params ' {' stmts 'return' refs '}' */
static void print_graph(printer *pr, const kiln_graph *g, int indent) {
  put(pr, "graph ");
  kiln_gtext_name(pr->b, '@', g->name);
  print_params(pr, g, g->inputs.data, g->inputs.len);
  put(pr, " -> ");
  print_params(pr, g, g->outputs.data, g->outputs.len);
  put(pr, " {\n");
  print_prologue(pr, g, indent + 2);
  for (int i = 0; i < g->nodes.len; i++) print_node(pr, g, &g->nodes.data[i], indent + 2);
  put_indent(pr, indent + 2);
  put(pr, "return");
  for (int i = 0; i < g->outputs.len; i++) {
    put(pr, i ? ", " : " ");
    print_ref(pr, g, g->outputs.data[i]);
  }
  put(pr, "\n");
  put_indent(pr, indent);
  put(pr, "}");
}

void kiln_graph_print(const kiln_graph *g, kiln_strbuf *out, int64_t elide_above) {
  printer pr = {out, elide_above};
  print_graph(&pr, g, 0);
  put(&pr, "\n");
}
