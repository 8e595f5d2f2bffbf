/* The graph IR parser: reads the text form written by graph_print.c.
 * A recursive-descent parser over the token array of graph_text.c; each parse
 * function opens with its grammar rule (docs/IR.md collects them). Errors carry
 * "file:line:col: message" and the source line with a caret under the column.
 * Everything allocated while parsing belongs to the graph under construction,
 * so an error frees it all with the root graph. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_text.h"

enum { MAX_GRAPH_DEPTH = 64 }; /* nesting of graph-valued attributes */

typedef struct parser {
  kiln_gtext_src src;
  kiln_gtext_tok *toks;
  int pos;
  kiln_graph *root; /* freed by kiln_graph_parse on error */
  int depth;
} parser;

static kiln_status parse_graph(parser *p, kiln_graph *parent, kiln_graph **out);
static kiln_status parse_type(parser *p, kiln_graph *g, kiln_type *out);

/* ---- token helpers ---- */
static const kiln_gtext_tok *peek(const parser *p) {
  return &p->toks[p->pos];
}

static const kiln_gtext_tok *peek2(const parser *p) {
  return p->toks[p->pos].kind == KILN_TOK_EOF ? &p->toks[p->pos] : &p->toks[p->pos + 1];
}

static const kiln_gtext_tok *next(parser *p) {
  const kiln_gtext_tok *t = &p->toks[p->pos];
  if (t->kind != KILN_TOK_EOF) p->pos++;
  return t;
}

static kiln_status err_at(const parser *p, const kiln_gtext_tok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static kiln_status err_at(const parser *p, const kiln_gtext_tok *t, const char *fmt, ...) {
  kiln_strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  kiln_status st = kiln_gtext_error(&p->src, t->line, t->col, "%s", b.data ? b.data : "");
  kiln_strbuf_free(&b);
  return st;
}

/* A short description of a token for messages: 'text' or "end of input". */
static const char *describe(const kiln_gtext_tok *t, char *buf, size_t n) {
  if (t->kind == KILN_TOK_EOF) return "end of input";
  const char *sig = t->kind == KILN_TOK_VALUE ? "%" : t->kind == KILN_TOK_AT ? "@" : "";
  int len = t->len > 40 ? 40 : t->len;
  snprintf(buf, n, "'%s%.*s%s'", sig, len, t->p, t->len > 40 ? "..." : "");
  return buf;
}

static kiln_status expected(const parser *p, const char *what) {
  char buf[64];
  return err_at(p, peek(p), "expected %s, found %s", what, describe(peek(p), buf, sizeof buf));
}

static bool accept(parser *p, const char *punct) {
  if (!kiln_gtext_punct(peek(p), punct)) return false;
  next(p);
  return true;
}

static kiln_status expect(parser *p, const char *punct) {
  if (accept(p, punct)) return KILN_OK;
  char what[16];
  snprintf(what, sizeof what, "'%s'", punct);
  return expected(p, what);
}

static kiln_status expect_word(parser *p, const char *w) {
  if (kiln_gtext_word(peek(p), w)) {
    next(p);
    return KILN_OK;
  }
  char what[32];
  snprintf(what, sizeof what, "'%s'", w);
  return expected(p, what);
}

/* The text of a name or string token in g's arena; an embedded NUL byte is an error. */
static kiln_status tok_cstr(const parser *p, kiln_graph *g, const kiln_gtext_tok *t,
                            const char **out) {
  size_t n = 0;
  char *s = kiln_gtext_text(t, g->arena, &n);
  if (strlen(s) != n) return err_at(p, t, "a NUL byte (\\x00) is not allowed in this string");
  *out = s;
  return KILN_OK;
}

static kiln_status parse_int(parser *p, int64_t *out) {
  const kiln_gtext_tok *t = peek(p);
  if (t->kind != KILN_TOK_INT) return expected(p, "an integer");
  if (!kiln_gtext_parse_i64(t->p, (size_t)t->len, out))
    return err_at(p, t, "integer out of the range of int64");
  next(p);
  return KILN_OK;
}

/* Turns an error of the builder into one located at token t. */
static kiln_status relocate(const parser *p, const kiln_gtext_tok *t, kiln_status st) {
  if (!st) return st;
  kiln_status r = err_at(p, t, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return r;
}

/* ---- types ---- */

/* dtype := 'undef' | f32 | f16 | bf16 | f64 | i8 ... (the names of kiln_dtype_name) */
static kiln_status parse_dtype(parser *p, kiln_dtype *out) {
  const kiln_gtext_tok *t = peek(p);
  char name[32];
  if (t->kind != KILN_TOK_IDENT || t->len >= (int)sizeof name)
    return expected(p, "an element type");
  snprintf(name, sizeof name, "%.*s", t->len, t->p);
  if (!strcmp(name, "undef")) *out = KILN_UNDEFINED;
  else if (!kiln_dtype_from_name(name, out)) return err_at(p, t, "unknown element type '%s'", name);
  next(p);
  return KILN_OK;
}

/* dim := INT | IDENT | STRING | '?' */
static kiln_status parse_dim(parser *p, kiln_graph *g, kiln_dim *d) {
  const kiln_gtext_tok *t = peek(p);
  d->value = -1;
  d->sym = NULL;
  if (accept(p, "?")) return KILN_OK;
  if (t->kind == KILN_TOK_IDENT || t->kind == KILN_TOK_STRING) {
    KILN_TRY(tok_cstr(p, g, t, &d->sym));
    next(p);
    return KILN_OK;
  }
  KILN_TRY(parse_int(p, &d->value));
  if (d->value < 0) return err_at(p, t, "a dimension cannot be negative (write ? if unknown)");
  return KILN_OK;
}

/* tensor_type := dtype '[' ('*' | [dim {',' dim}]) ']' */
static kiln_status parse_tensor_type(parser *p, kiln_graph *g, kiln_type *out) {
  KILN_TRY(parse_dtype(p, &out->dtype));
  if (!kiln_gtext_punct(peek(p), "["))
    return expected(p, "'[' after the element type ([] for a scalar, [*] for an unknown rank)");
  next(p);
  out->rank = 0;
  if (accept(p, "*")) {
    out->rank = -1;
    return expect(p, "]");
  }
  if (accept(p, "]")) return KILN_OK;
  do {
    if (out->rank == KILN_MAX_RANK)
      return err_at(p, peek(p), "more than %d dimensions", KILN_MAX_RANK);
    KILN_TRY(parse_dim(p, g, &out->dims[out->rank++]));
  } while (accept(p, ","));
  return expect(p, "]");
}

/* type := '?' | tensor_type | 'seq' '<' tensor_type '>'
 *       | 'opt' '<' (tensor_type | 'seq' '<' tensor_type '>') '>' */
static kiln_status parse_type(parser *p, kiln_graph *g, kiln_type *out) {
  *out = kiln_type_unknown();
  if (accept(p, "?")) return KILN_OK;
  if (kiln_gtext_word(peek(p), "opt")) {
    next(p);
    KILN_TRY(expect(p, "<"));
    out->elem_seq = kiln_gtext_word(peek(p), "seq");
    if (out->elem_seq) {
      next(p);
      KILN_TRY(expect(p, "<"));
    }
    KILN_TRY(parse_tensor_type(p, g, out));
    if (out->elem_seq) KILN_TRY(expect(p, ">"));
    out->kind = KILN_TYPE_OPTIONAL;
    return expect(p, ">");
  }
  if (kiln_gtext_word(peek(p), "seq")) {
    next(p);
    KILN_TRY(expect(p, "<"));
    KILN_TRY(parse_tensor_type(p, g, out));
    out->kind = KILN_TYPE_SEQUENCE;
    return expect(p, ">");
  }
  out->kind = KILN_TYPE_TENSOR;
  return parse_tensor_type(p, g, out);
}

/* ---- tensor literals ---- */

/* Stores one element token into element i of t; message located at the token. */
static kiln_status store_element(parser *p, const kiln_gtext_tok *e, kiln_tensor *t, size_t i) {
  const char *why = NULL;
  kiln_dtype dt = t->dtype;
  if (dt == KILN_STRING) {
    if (e->kind != KILN_TOK_STRING) return err_at(p, e, "expected a string element");
    size_t n = 0;
    char *s = kiln_gtext_text(e, NULL, &n);
    ((char **)t->data)[i] = s;
    if (strlen(s) != n) return err_at(p, e, "a string element cannot contain a NUL byte");
  } else if (kiln_dtype_is_float(dt)) {
    if (e->kind != KILN_TOK_FLOAT && e->kind != KILN_TOK_INT)
      return err_at(p, e, "expected a number");
    if (!kiln_gtext_store_float(dt, e->p, (size_t)e->len, t->data, i))
      return err_at(p, e, "cannot read this number as %s", kiln_dtype_name(dt));
  } else if (dt == KILN_BOOL && (kiln_gtext_word(e, "true") || kiln_gtext_word(e, "false"))) {
    ((uint8_t *)t->data)[i] = kiln_gtext_word(e, "true");
  } else {
    if (e->kind != KILN_TOK_INT) return err_at(p, e, "expected an integer");
    if (!kiln_gtext_store_int(dt, e->p, (size_t)e->len, t->data, i, &why))
      return err_at(p, e, "%s %s", why, kiln_dtype_name(dt));
  }
  return KILN_OK;
}

/* Checks the shape of an element list '[' [elem {',' elem}] ']' starting at the current
 * token and counts its elements, without consuming anything. */
static kiln_status count_elements(parser *p, int64_t *out) {
  int i = p->pos + 1;
  int64_t n = 0;
  if (kiln_gtext_punct(&p->toks[i], "]")) {
    *out = 0;
    return KILN_OK;
  }
  for (;; n++) {
    const kiln_gtext_tok *e = &p->toks[i];
    char buf[64];
    if (e->kind != KILN_TOK_INT && e->kind != KILN_TOK_FLOAT && e->kind != KILN_TOK_STRING &&
        e->kind != KILN_TOK_IDENT)
      return err_at(p, e, "expected a tensor element, found %s", describe(e, buf, sizeof buf));
    const kiln_gtext_tok *s = &p->toks[++i];
    if (kiln_gtext_punct(s, "]")) break;
    if (!kiln_gtext_punct(s, ","))
      return err_at(p, s, "expected ',' or ']' in tensor data, found %s",
                    describe(s, buf, sizeof buf));
    i++;
  }
  *out = n + 1;
  return KILN_OK;
}

/* Parses the element list into a new tensor of the given shape (which it checks). */
static kiln_status parse_tensor_data(parser *p, kiln_dtype dt, int rank, const int64_t *dims,
                                     const kiln_gtext_tok *at, kiln_tensor **out) {
  int64_t numel = 0, count = 0;
  kiln_status st = kiln_shape_numel(rank, dims, &numel);
  if (st) return relocate(p, at, st);
  if (kiln_gtext_punct(peek(p), "<"))
    return err_at(p, peek(p), "elided constant data cannot be parsed (print with all data)");
  if (!kiln_gtext_punct(peek(p), "[")) return expected(p, "'[' to open the tensor data");
  KILN_TRY(count_elements(p, &count));
  if (count != numel)
    return err_at(p, peek(p), "%lld values for a tensor of %lld elements", (long long)count,
                  (long long)numel);
  kiln_tensor *t = NULL;
  KILN_TRY(relocate(p, at, kiln_tensor_new(dt, rank, dims, &t)));
  next(p);
  for (int64_t i = 0; i < numel; i++) {
    if ((st = store_element(p, next(p), t, (size_t)i)) != KILN_OK) {
      kiln_tensor_free(t);
      return st;
    }
    next(p); /* ',' or ']' (checked by count_elements) */
  }
  if (numel == 0) next(p);
  *out = t;
  return KILN_OK;
}

/* tensor_lit := dtype '[' [INT {',' INT}] ']' '[' [elem {',' elem}] ']'
 * The tensor is not yet owned by any graph. */
static kiln_status parse_tensor_lit(parser *p, kiln_tensor **out) {
  const kiln_gtext_tok *at = peek(p);
  kiln_dtype dt = KILN_UNDEFINED;
  int64_t dims[KILN_MAX_RANK];
  int rank = 0;
  KILN_TRY(parse_dtype(p, &dt));
  if (!kiln_dtype_valid((int)dt))
    return err_at(p, at, "a tensor cannot hold %s data", kiln_dtype_name(dt));
  KILN_TRY(expect(p, "["));
  if (!accept(p, "]")) {
    do {
      const kiln_gtext_tok *d = peek(p);
      if (rank == KILN_MAX_RANK) return err_at(p, d, "more than %d dimensions", KILN_MAX_RANK);
      KILN_TRY(parse_int(p, &dims[rank]));
      if (dims[rank++] < 0) return err_at(p, d, "a tensor dimension cannot be negative");
    } while (accept(p, ","));
    KILN_TRY(expect(p, "]"));
  }
  return parse_tensor_data(p, dt, rank, dims, at, out);
}

/* ---- attributes ---- */
static kiln_status parse_attr_value(parser *p, kiln_graph *g, kiln_attr *a);

/* The list kind holding elements of scalar kind k (KILN_ATTR_UNDEFINED if none). */
static kiln_attr_kind list_kind_of(kiln_attr_kind k) {
  switch (k) {
  case KILN_ATTR_FLOAT: return KILN_ATTR_FLOATS;
  case KILN_ATTR_INT: return KILN_ATTR_INTS;
  case KILN_ATTR_STRING: return KILN_ATTR_STRINGS;
  case KILN_ATTR_TENSOR: return KILN_ATTR_TENSORS;
  case KILN_ATTR_GRAPH: return KILN_ATTR_GRAPHS;
  case KILN_ATTR_SPARSE_TENSOR: return KILN_ATTR_SPARSE_TENSORS;
  case KILN_ATTR_TYPE_PROTO: return KILN_ATTR_TYPE_PROTOS;
  default: return KILN_ATTR_UNDEFINED;
  }
}

/* The list kind named by a list keyword token (KILN_ATTR_UNDEFINED if it is none). */
static kiln_attr_kind list_keyword(const kiln_gtext_tok *t) {
  static const struct {
    const char *w;
    kiln_attr_kind k;
  } kw[] = {{"floats", KILN_ATTR_FLOATS},    {"ints", KILN_ATTR_INTS},
            {"strings", KILN_ATTR_STRINGS},  {"tensors", KILN_ATTR_TENSORS},
            {"graphs", KILN_ATTR_GRAPHS},    {"sparse_tensors", KILN_ATTR_SPARSE_TENSORS},
            {"types", KILN_ATTR_TYPE_PROTOS}};
  for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
    if (kiln_gtext_word(t, kw[i].w)) return kw[i].k;
  return KILN_ATTR_UNDEFINED;
}

/* Moves the scalar elements into the arrays of list attribute a (kind already set). */
static kiln_status fill_list(parser *p, kiln_graph *g, kiln_attr *a, const kiln_attr *el,
                             const kiln_gtext_tok *const *at, int n) {
  a->n = n;
  size_t sz = a->kind == KILN_ATTR_FLOATS        ? sizeof(float)
              : a->kind == KILN_ATTR_INTS        ? sizeof(int64_t)
              : a->kind == KILN_ATTR_TYPE_PROTOS ? sizeof(kiln_type)
                                                 : sizeof(void *);
  void *arr = kiln_arena_calloc(g->arena, (size_t)(n ? n : 1), sz);
  for (int i = 0; i < n; i++) {
    const kiln_attr *e = &el[i];
    switch (a->kind) {
    case KILN_ATTR_FLOATS: ((float *)arr)[i] = e->kind == KILN_ATTR_INT ? (float)e->i : e->f; break;
    case KILN_ATTR_INTS: ((int64_t *)arr)[i] = e->i; break;
    case KILN_ATTR_STRINGS:
      if (strlen(e->s) != e->s_len)
        return err_at(p, at[i], "a list string cannot contain a NUL byte");
      ((const char **)arr)[i] = e->s;
      break;
    case KILN_ATTR_TENSORS:
    case KILN_ATTR_SPARSE_TENSORS: ((kiln_tensor **)arr)[i] = e->t; break;
    case KILN_ATTR_GRAPHS: ((kiln_graph **)arr)[i] = e->g; break;
    default: ((kiln_type *)arr)[i] = e->tp; break;
    }
  }
  a->floats = a->kind == KILN_ATTR_FLOATS ? arr : NULL;
  a->ints = a->kind == KILN_ATTR_INTS ? arr : NULL;
  a->strings = a->kind == KILN_ATTR_STRINGS ? arr : NULL;
  a->tensors = a->kind == KILN_ATTR_TENSORS || a->kind == KILN_ATTR_SPARSE_TENSORS ? arr : NULL;
  a->graphs = a->kind == KILN_ATTR_GRAPHS ? arr : NULL;
  a->tps = a->kind == KILN_ATTR_TYPE_PROTOS ? arr : NULL;
  return KILN_OK;
}

/* list := [list_kw] '[' [attr_value {',' attr_value}] ']'
 * list_kw := 'floats' | 'ints' | 'strings' | 'tensors' | 'graphs' | 'sparse_tensors' | 'types'
 * The elements are scalar attribute values of one kind (ints mix into floats); an empty
 * list needs its keyword. */
static kiln_status parse_list(parser *p, kiln_graph *g, kiln_attr_kind kind, kiln_attr *a) {
  const kiln_gtext_tok *open = peek(p);
  KILN_TRY(expect(p, "["));
  KILN_VEC(kiln_attr) el = {0};
  KILN_VEC(const kiln_gtext_tok *) at = {0};
  bool fixed = kind != KILN_ATTR_UNDEFINED; /* named by a keyword */
  if (!kiln_gtext_punct(peek(p), "]")) {
    do {
      kiln_attr e;
      const kiln_gtext_tok *t = peek(p);
      if (kiln_gtext_punct(t, "[") || list_keyword(t))
        return err_at(p, t, "attribute lists cannot be nested");
      KILN_TRY(parse_attr_value(p, g, &e));
      kiln_attr_kind lk = list_kind_of(e.kind);
      if (!lk) return err_at(p, t, "an attribute list cannot hold this value");
      if (!kind || (!fixed && kind == KILN_ATTR_INTS && lk == KILN_ATTR_FLOATS)) kind = lk;
      if (kind != lk && !(kind == KILN_ATTR_FLOATS && lk == KILN_ATTR_INTS))
        return err_at(p, t, "a list of %s cannot hold a %s", kiln_attr_kind_name(kind),
                      kiln_attr_kind_name(e.kind));
      kiln_arena_vec_push(g->arena, &el, e);
      kiln_arena_vec_push(g->arena, &at, t);
    } while (accept(p, ","));
  }
  KILN_TRY(expect(p, "]"));
  if (!kind)
    return err_at(p, open, "an empty list must name its kind: ints[], floats[], strings[], ...");
  memset(a, 0, sizeof *a);
  a->kind = kind;
  return fill_list(p, g, a, el.data, at.data, el.len);
}

/* A tensor literal owned by graph g from now on. */
static kiln_status parse_owned_tensor(parser *p, kiln_graph *g, kiln_tensor **out) {
  KILN_TRY(parse_tensor_lit(p, out));
  kiln_graph_own_tensor(g, *out);
  return KILN_OK;
}

/* Scalar values that start with a word: keyword forms, a list keyword, or a tensor literal. */
static kiln_status parse_word_value(parser *p, kiln_graph *g, kiln_attr *a) {
  const kiln_gtext_tok *t = peek(p);
  kiln_attr_kind lk = list_keyword(t);
  if (lk && kiln_gtext_punct(peek2(p), "[")) {
    next(p);
    return parse_list(p, g, lk, a);
  }
  if (kiln_gtext_word(t, "graph")) {
    a->kind = KILN_ATTR_GRAPH;
    return parse_graph(p, g, &a->g);
  }
  if (kiln_gtext_word(t, "undefined")) {
    next(p);
    a->kind = KILN_ATTR_UNDEFINED;
    return KILN_OK;
  }
  if (kiln_gtext_word(t, "type")) {
    next(p);
    a->kind = KILN_ATTR_TYPE_PROTO;
    return parse_type(p, g, &a->tp);
  }
  a->kind = KILN_ATTR_TENSOR;
  if (kiln_gtext_word(t, "sparse")) {
    next(p);
    a->kind = KILN_ATTR_SPARSE_TENSOR;
  }
  return parse_owned_tensor(p, g, &a->t);
}

/* attr_value := INT | FLOAT | STRING | list | tensor_lit | 'sparse' tensor_lit | graph
 *             | 'type' type | 'undefined' */
static kiln_status parse_attr_value(parser *p, kiln_graph *g, kiln_attr *a) {
  const kiln_gtext_tok *t = peek(p);
  memset(a, 0, sizeof *a);
  switch (t->kind) {
  case KILN_TOK_INT: a->kind = KILN_ATTR_INT; return parse_int(p, &a->i);
  case KILN_TOK_FLOAT:
    a->kind = KILN_ATTR_FLOAT;
    if (!kiln_gtext_store_float(KILN_F32, t->p, (size_t)t->len, &a->f, 0))
      return err_at(p, t, "cannot read this number as f32");
    next(p);
    return KILN_OK;
  case KILN_TOK_STRING:
    a->kind = KILN_ATTR_STRING;
    a->s = kiln_gtext_text(next(p), g->arena, &a->s_len);
    return KILN_OK;
  case KILN_TOK_IDENT: return parse_word_value(p, g, a);
  default:
    if (kiln_gtext_punct(t, "[")) return parse_list(p, g, KILN_ATTR_UNDEFINED, a);
    return expected(p, "an attribute value");
  }
}

/* attr := (IDENT | STRING) '=' attr_value    (names unique within the node: seen) */
static kiln_status parse_attr(parser *p, kiln_graph *g, kiln_strmap *seen, kiln_attr *a) {
  const kiln_gtext_tok *nt = peek(p);
  const char *name = NULL;
  if (nt->kind != KILN_TOK_IDENT && nt->kind != KILN_TOK_STRING)
    return expected(p, "an attribute name");
  KILN_TRY(tok_cstr(p, g, next(p), &name));
  if (!name[0]) return err_at(p, nt, "an attribute name cannot be empty");
  if (kiln_strmap_get(seen, name, NULL))
    return err_at(p, nt, "attribute '%s' is given twice", name);
  kiln_strmap_put(seen, name, 0);
  KILN_TRY(expect(p, "="));
  KILN_TRY(parse_attr_value(p, g, a));
  a->name = name;
  return KILN_OK;
}

/* attrs := '{' [attr {',' attr}] '}' */
static kiln_status parse_attrs(parser *p, kiln_graph *g, kiln_attr **out, int *out_n) {
  KILN_VEC(kiln_attr) v = {0};
  kiln_strmap seen = {0};
  kiln_status st = expect(p, "{");
  if (!st && !kiln_gtext_punct(peek(p), "}")) {
    do {
      kiln_attr a;
      if ((st = parse_attr(p, g, &seen, &a)) != KILN_OK) break;
      kiln_arena_vec_push(g->arena, &v, a);
    } while (accept(p, ","));
  }
  kiln_strmap_free(&seen);
  KILN_TRY(st);
  KILN_TRY(expect(p, "}"));
  *out = v.data;
  *out_n = v.len;
  return KILN_OK;
}

/* ---- statements ---- */

/* Checks that the name of a VALUE token can be defined in g; returns it. */
static kiln_status new_value_name(parser *p, kiln_graph *g, const kiln_gtext_tok *t,
                                  const char **out) {
  KILN_TRY(tok_cstr(p, g, t, out));
  if (!(*out)[0]) return err_at(p, t, "a value name cannot be empty");
  if (kiln_graph_find(g, *out) >= 0) return err_at(p, t, "value %%%s is already defined", *out);
  return KILN_OK;
}

/* ref := VALUE   (a value of this graph or, through an implicit outer reference, of an
 *                 enclosing one) */
static kiln_status parse_ref(parser *p, kiln_graph *g, int *out) {
  const kiln_gtext_tok *t = peek(p);
  const char *name = NULL;
  if (t->kind != KILN_TOK_VALUE) return expected(p, "a value (%name)");
  KILN_TRY(tok_cstr(p, g, next(p), &name));
  *out = kiln_graph_resolve(g, name);
  if (*out < 0) return err_at(p, t, "undefined value %%%s", name);
  return KILN_OK;
}

/* arg := ref | '_' */
static kiln_status parse_arg(parser *p, kiln_graph *g, int *out) {
  if (kiln_gtext_word(peek(p), "_")) {
    next(p);
    *out = -1;
    return KILN_OK;
  }
  return parse_ref(p, g, out);
}

/* opset_stmt := 'opset' STRING INT    (root graph, before the first node) */
static kiln_status parse_opset(parser *p, kiln_graph *g) {
  const kiln_gtext_tok *kw = next(p);
  const char *domain = NULL;
  int64_t version = 0;
  if (g->parent) return err_at(p, kw, "opset is declared in the root graph only");
  if (g->nodes.len) return err_at(p, kw, "opset must come before the first node");
  if (peek(p)->kind != KILN_TOK_STRING) return expected(p, "a domain string (\"\" for ONNX)");
  KILN_TRY(tok_cstr(p, g, next(p), &domain));
  KILN_TRY(parse_int(p, &version));
  kiln_graph_set_opset(g, domain, version);
  return KILN_OK;
}

/* ir_version_stmt := 'ir_version' INT    producer_stmt := 'producer' STRING   (root only) */
static kiln_status parse_module_fact(parser *p, kiln_graph *g) {
  const kiln_gtext_tok *kw = next(p);
  if (g->parent) return err_at(p, kw, "%.*s is declared in the root graph only", kw->len, kw->p);
  if (kiln_gtext_word(kw, "ir_version")) return parse_int(p, &g->ir_version);
  if (peek(p)->kind != KILN_TOK_STRING) return expected(p, "a string");
  return tok_cstr(p, g, next(p), &g->producer);
}

/* outer_stmt := 'outer' VALUE {',' VALUE}    (subgraphs: values of enclosing graphs) */
static kiln_status parse_outer(parser *p, kiln_graph *g) {
  const kiln_gtext_tok *kw = next(p);
  if (!g->parent) return err_at(p, kw, "outer is only allowed in a subgraph");
  do {
    const kiln_gtext_tok *t = peek(p);
    const char *name = NULL;
    if (t->kind != KILN_TOK_VALUE) return expected(p, "a value (%name)");
    KILN_TRY(new_value_name(p, g, next(p), &name));
    int pid = kiln_graph_resolve(g->parent, name);
    if (pid < 0) return err_at(p, t, "no value %%%s in the enclosing graphs", name);
    kiln_graph_add_outer(g, pid);
  } while (accept(p, ","));
  return KILN_OK;
}

/* const_stmt := VALUE '=' 'const' tensor_lit */
static kiln_status parse_const(parser *p, kiln_graph *g) {
  const kiln_gtext_tok *t = next(p);
  const char *name = NULL;
  kiln_tensor *data = NULL;
  int id = -1;
  KILN_TRY(new_value_name(p, g, t, &name));
  next(p); /* '=' */
  next(p); /* 'const' */
  KILN_TRY(parse_tensor_lit(p, &data));
  return relocate(p, t, kiln_graph_add_const(g, name, data, &id));
}

/* A node's output list and types while it is parsed. */
typedef struct results {
  KILN_VEC(const char *) names; /* NULL for an omitted output */
  KILN_VEC(const kiln_gtext_tok *) toks;
  int present;
} results;

/* results := (VALUE | '_') {',' (VALUE | '_')} '=' */
static kiln_status parse_results(parser *p, kiln_graph *g, results *r) {
  do {
    const kiln_gtext_tok *t = peek(p);
    const char *name = NULL;
    if (t->kind == KILN_TOK_VALUE) {
      KILN_TRY(new_value_name(p, g, t, &name));
      for (int i = 0; i < r->names.len; i++)
        if (r->names.data[i] && !strcmp(r->names.data[i], name))
          return err_at(p, t, "value %%%s is defined twice by this node", name);
      r->present++;
    } else if (!kiln_gtext_word(t, "_")) {
      return expected(p, "an output (%name or _)");
    }
    next(p);
    kiln_arena_vec_push(g->arena, &r->names, name);
    kiln_arena_vec_push(g->arena, &r->toks, t);
  } while (accept(p, ","));
  return expect(p, "=");
}

/* op_ref := [(IDENT | STRING) '::'] (IDENT | STRING) ['<' INT '>'] */
static kiln_status parse_op_ref(parser *p, kiln_graph *g, const char **domain, const char **op,
                                bool *has_opset, int64_t *opset) {
  const kiln_gtext_tok *t = peek(p);
  *domain = "";
  if (t->kind != KILN_TOK_IDENT && t->kind != KILN_TOK_STRING) return expected(p, "an op");
  KILN_TRY(tok_cstr(p, g, next(p), op));
  if (accept(p, "::")) {
    *domain = *op;
    t = peek(p);
    if (t->kind != KILN_TOK_IDENT && t->kind != KILN_TOK_STRING) return expected(p, "an op");
    KILN_TRY(tok_cstr(p, g, next(p), op));
  }
  if (!(*op)[0]) return err_at(p, t, "an op type cannot be empty");
  bool onnx = !(*domain)[0] || !strcmp(*domain, "ai.onnx");
  if (onnx && kiln_op_lookup(*domain, *op) == KILN_OP_UNKNOWN)
    return err_at(p, t, "unknown op '%s'", *op);
  if ((*has_opset = accept(p, "<"))) {
    KILN_TRY(parse_int(p, opset));
    KILN_TRY(expect(p, ">"));
  }
  return KILN_OK;
}

/* args := '(' [arg {',' arg}] ')' */
static kiln_status parse_args(parser *p, kiln_graph *g, int **out, int *out_n) {
  KILN_VEC(int) v = {0};
  KILN_TRY(expect(p, "("));
  if (!kiln_gtext_punct(peek(p), ")")) {
    do {
      int id = -1;
      KILN_TRY(parse_arg(p, g, &id));
      kiln_arena_vec_push(g->arena, &v, id);
    } while (accept(p, ","));
  }
  KILN_TRY(expect(p, ")"));
  *out = v.data;
  *out_n = v.len;
  return KILN_OK;
}

/* types := ':' type {',' type}   (one per present output; absent: all unknown) */
static kiln_status parse_out_types(parser *p, kiln_graph *g, const results *r, kiln_type **out) {
  *out = kiln_arena_calloc(g->arena, (size_t)r->present + 1, sizeof(kiln_type));
  for (int i = 0; i < r->present; i++) (*out)[i] = kiln_type_unknown();
  const kiln_gtext_tok *colon = peek(p);
  if (!accept(p, ":")) return KILN_OK;
  int n = 0;
  do {
    if (n == r->present)
      return err_at(p, colon, "more types than the %d outputs of the node", r->present);
    KILN_TRY(parse_type(p, g, &(*out)[n++]));
  } while (accept(p, ","));
  if (n != r->present)
    return err_at(p, colon, "%d types for the %d outputs of the node", n, r->present);
  return KILN_OK;
}

/* group := 'group' INT, an id in 1 .. INT_MAX */
static kiln_status parse_group(parser *p, int *out) {
  next(p);
  const kiln_gtext_tok *t = peek(p);
  int64_t v;
  KILN_TRY(parse_int(p, &v));
  if (v < 1 || v > INT_MAX) return err_at(p, t, "group id must be in 1..%d", INT_MAX);
  *out = (int)v;
  return KILN_OK;
}

/* node := [results] op_ref args [attrs] [types] [AT] ['group' INT] */
static kiln_status parse_node(parser *p, kiln_graph *g) {
  results r = {0};
  const kiln_gtext_tok *t = peek(p);
  if (t->kind == KILN_TOK_VALUE || kiln_gtext_word(t, "_")) KILN_TRY(parse_results(p, g, &r));
  const kiln_gtext_tok *op_tok = peek(p);
  const char *domain = "", *op = NULL, *name = "";
  bool has_opset = false;
  int64_t opset = 0;
  int *ins, n_in, n_attrs = 0;
  kiln_attr *attrs = NULL;
  kiln_type *types = NULL;
  KILN_TRY(parse_op_ref(p, g, &domain, &op, &has_opset, &opset));
  KILN_TRY(parse_args(p, g, &ins, &n_in));
  if (kiln_gtext_punct(peek(p), "{")) KILN_TRY(parse_attrs(p, g, &attrs, &n_attrs));
  KILN_TRY(parse_out_types(p, g, &r, &types));
  if (peek(p)->kind == KILN_TOK_AT) KILN_TRY(tok_cstr(p, g, next(p), &name));
  int group = 0;
  if (kiln_gtext_word(peek(p), "group") && peek2(p)->kind == KILN_TOK_INT)
    KILN_TRY(parse_group(p, &group));
  int *outs = kiln_arena_calloc(g->arena, (size_t)r.names.len + 1, sizeof(int));
  KILN_TRY(relocate(
      p, op_tok,
      kiln_graph_add_node(g, op, domain, name, n_in, ins, r.names.len, r.names.data, outs)));
  kiln_node *n = &g->nodes.data[g->nodes.len - 1];
  if (has_opset) n->opset = opset;
  n->group = group;
  for (int i = 0, k = 0; i < r.names.len; i++)
    if (outs[i] >= 0) g->values.data[outs[i]].type = types[k++];
  /* The parsed array (arena-owned) becomes the node's: kiln_node_add_attr copies the array
   * on every call, which is quadratic in time and arena memory for a long attribute list. */
  n->attrs = attrs;
  n->n_attrs = n_attrs;
  return KILN_OK;
}

/* stmt := opset_stmt | ir_version_stmt | producer_stmt | outer_stmt | const_stmt | node */
static kiln_status parse_stmt(parser *p, kiln_graph *g) {
  const kiln_gtext_tok *t = peek(p);
  if (kiln_gtext_word(t, "opset")) return parse_opset(p, g);
  if (kiln_gtext_word(t, "ir_version") || kiln_gtext_word(t, "producer"))
    return parse_module_fact(p, g);
  if (kiln_gtext_word(t, "outer")) return parse_outer(p, g);
  if (t->kind == KILN_TOK_VALUE && kiln_gtext_punct(peek2(p), "=") &&
      kiln_gtext_word(&p->toks[p->pos + 2], "const"))
    return parse_const(p, g);
  return parse_node(p, g);
}

/* ---- graphs ---- */

/* A declared graph output: its token, name and type, checked against 'return'. */
typedef struct declared {
  const kiln_gtext_tok *tok;
  const char *name;
  kiln_type type;
} declared;

/* params := '(' [VALUE ':' type {',' VALUE ':' type}] ')'
 * Inputs (decl == NULL) are added to g; outputs are collected into *decl. */
static kiln_status parse_params(parser *p, kiln_graph *g, declared **decl, int *n_decl) {
  KILN_VEC(declared) v = {0};
  KILN_TRY(expect(p, "("));
  if (!kiln_gtext_punct(peek(p), ")")) {
    do {
      declared d;
      d.tok = peek(p);
      if (d.tok->kind != KILN_TOK_VALUE) return expected(p, "a value (%name)");
      if (decl) KILN_TRY(tok_cstr(p, g, next(p), &d.name));
      else KILN_TRY(new_value_name(p, g, next(p), &d.name));
      KILN_TRY(expect(p, ":"));
      KILN_TRY(parse_type(p, g, &d.type));
      int id = -1;
      if (decl) kiln_arena_vec_push(g->arena, &v, d);
      else KILN_TRY(relocate(p, d.tok, kiln_graph_add_input2(g, d.name, d.type, &id)));
    } while (accept(p, ","));
  }
  KILN_TRY(expect(p, ")"));
  if (decl) {
    *decl = v.data;
    *n_decl = v.len;
  }
  return KILN_OK;
}

/* return_stmt := 'return' [VALUE {',' VALUE}]   (must match the declared outputs) */
static kiln_status parse_return(parser *p, kiln_graph *g, const declared *decl, int n_decl) {
  const kiln_gtext_tok *kw = next(p);
  int n = 0;
  if (!kiln_gtext_punct(peek(p), "}")) {
    do {
      const kiln_gtext_tok *t = peek(p);
      int id = -1;
      char b1[128], b2[128];
      KILN_TRY(parse_ref(p, g, &id));
      if (n >= n_decl)
        return err_at(p, t, "more return values than the %d declared outputs", n_decl);
      const kiln_value *v = &g->values.data[id];
      if (strcmp(v->name, decl[n].name) != 0)
        return err_at(p, t, "return value %%%s does not match the declared output %%%s", v->name,
                      decl[n].name);
      if (!kiln_type_equal(&v->type, &decl[n].type))
        return err_at(p, t, "%%%s has type %s but the output is declared %s", v->name,
                      kiln_type_str(&v->type, b1, sizeof b1),
                      kiln_type_str(&decl[n].type, b2, sizeof b2));
      kiln_graph_add_output(g, id);
      n++;
    } while (accept(p, ","));
  }
  if (n != n_decl) return err_at(p, kw, "%d return values for %d declared outputs", n, n_decl);
  return KILN_OK;
}

/* graph := 'graph' AT params '->' params '{' {stmt} return_stmt '}' */
static kiln_status parse_graph(parser *p, kiln_graph *parent, kiln_graph **out) {
  const kiln_gtext_tok *kw = peek(p);
  KILN_TRY(expect_word(p, "graph"));
  if (p->depth >= MAX_GRAPH_DEPTH)
    return err_at(p, kw, "graphs nested more than %d deep", MAX_GRAPH_DEPTH);
  if (peek(p)->kind != KILN_TOK_AT) return expected(p, "a graph name (@name)");
  kiln_graph *g = parent ? kiln_graph_new_sub(parent, "") : kiln_graph_new("");
  if (!parent) p->root = g;
  KILN_TRY(tok_cstr(p, g, next(p), &g->name));
  declared *decl = NULL;
  int n_decl = 0;
  p->depth++;
  KILN_TRY(parse_params(p, g, NULL, NULL));
  KILN_TRY(expect(p, "->"));
  KILN_TRY(parse_params(p, g, &decl, &n_decl));
  KILN_TRY(expect(p, "{"));
  while (!kiln_gtext_word(peek(p), "return")) {
    if (peek(p)->kind == KILN_TOK_EOF || kiln_gtext_punct(peek(p), "}"))
      return expected(p, "a statement or 'return'");
    KILN_TRY(parse_stmt(p, g));
  }
  KILN_TRY(parse_return(p, g, decl, n_decl));
  KILN_TRY(expect(p, "}"));
  p->depth--;
  *out = g;
  return KILN_OK;
}

kiln_status kiln_graph_parse(const char *text, const char *filename, kiln_graph **out) {
  parser p = {{text, filename}, NULL, 0, NULL, 0};
  int ntoks = 0;
  *out = NULL;
  KILN_TRY(kiln_gtext_lex(&p.src, &p.toks, &ntoks));
  kiln_graph *g = NULL;
  kiln_status st = parse_graph(&p, NULL, &g);
  if (!st && peek(&p)->kind != KILN_TOK_EOF) st = expected(&p, "end of input after the graph");
  free(p.toks);
  if (st) {
    kiln_graph_free(p.root);
    return st;
  }
  *out = g;
  return KILN_OK;
}
