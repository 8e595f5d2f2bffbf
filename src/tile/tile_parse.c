/* Tile IR parser: the text form of docs/TILE_IR.md. Each parse function starts with its
 * grammar rule. The parser builds what the text says (no folding) and leaves the type
 * rules to the verifier, so that print -> parse -> print is the identity. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tile_parse.h"

typedef struct parser {
  kiln_ttext_src src;
  kiln_ttok *toks;
  int n, pos;
  kiln_tmodule *m;
  kiln_tkernel *k;
  int depth;
} parser;

/* ---- tokens ---- */
static const kiln_ttok *peek(const parser *p) {
  return &p->toks[p->pos];
}

static const kiln_ttok *next(parser *p) {
  const kiln_ttok *t = &p->toks[p->pos];
  if (t->kind != KILN_TT_EOF) p->pos++;
  return t;
}

static kiln_status err_at(const parser *p, const kiln_ttok *t, const char *fmt, const char *arg) {
  return kiln_ttext_error(&p->src, t->line, t->col, fmt, arg);
}

static bool is_punct(const kiln_ttok *t, const char *s) {
  return t->kind == KILN_TT_PUNCT && (size_t)t->len == strlen(s) && !strncmp(t->p, s, t->len);
}

static bool is_word(const kiln_ttok *t, const char *s) {
  return t->kind == KILN_TT_IDENT && (size_t)t->len == strlen(s) && !strncmp(t->p, s, t->len);
}

static kiln_status expect(parser *p, const char *punct) {
  const kiln_ttok *t = peek(p);
  if (!is_punct(t, punct)) return err_at(p, t, "expected '%s'", punct);
  next(p);
  return KILN_OK;
}

static kiln_status expect_word(parser *p, const char *word) {
  const kiln_ttok *t = peek(p);
  if (!is_word(t, word)) return err_at(p, t, "expected '%s'", word);
  next(p);
  return KILN_OK;
}

static bool accept(parser *p, const char *punct) {
  if (!is_punct(peek(p), punct)) return false;
  next(p);
  return true;
}

static char *tok_text(parser *p, const kiln_ttok *t) {
  return kiln_ttok_text(t, p->m->arena);
}

/* ---- numbers and types ---- */
static bool parse_i64_text(const char *s, int64_t *out, bool allow_u64) {
  bool neg = *s == '-';
  if (*s == '-' || *s == '+') s++;
  if (!*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1) return false;
    *out = (int64_t)(0 - v);
  } else {
    if (v > (uint64_t)INT64_MAX && !allow_u64) return false;
    *out = (int64_t)v;
  }
  return true;
}

/* INT */
static kiln_status parse_int(parser *p, int64_t *out) {
  const kiln_ttok *t = next(p);
  char *s = t->kind == KILN_TT_NUMBER ? tok_text(p, t) : NULL;
  if (!s || !parse_i64_text(s, out, false)) return err_at(p, t, "expected an integer%s", "");
  return KILN_OK;
}

/* TYPE := f32 | i64 | bool | ... (the dtype names) */
static kiln_status parse_type(parser *p, kiln_dtype *out) {
  const kiln_ttok *t = next(p);
  if (t->kind != KILN_TT_IDENT || !kiln_dtype_from_name(tok_text(p, t), out) ||
      *out == KILN_STRING || !kiln_dtype_valid((int)*out))
    return err_at(p, t, "expected a scalar type%s", "");
  return KILN_OK;
}

static bool parse_float_text(const char *s, kiln_dtype t, double *out) {
  const char *q = *s == '-' || *s == '+' ? s + 1 : s;
  if (!strcmp(q, "inf") || !strcmp(q, "nan")) {
    *out = !strcmp(q, "inf") ? INFINITY : NAN;
    if (*s == '-') *out = -*out;
    return true;
  }
  char *end;
  errno = 0;
  *out = t == KILN_F32 ? (double)strtof(s, &end) : strtod(s, &end);
  return *s && *end == 0; /* overflow to inf and underflow are the correct rounding */
}

/* ---- names ---- */
static kiln_status find_buf(parser *p, const kiln_ttok *t, int *out) {
  char *name = tok_text(p, t);
  for (int i = 0; i < p->k->bufs.len; i++)
    if (!strcmp(p->k->bufs.data[i].name, name)) return *out = i, KILN_OK;
  return err_at(p, t, "unknown buffer %%%s", name);
}

static kiln_status find_var(parser *p, const kiln_ttok *t, int *out) {
  char *name = tok_text(p, t);
  for (int i = 0; i < p->k->vars.len; i++)
    if (!strcmp(p->k->vars.data[i].name, name)) return *out = i, KILN_OK;
  return err_at(p, t, "unknown variable $%s", name);
}

/* ---- expressions ---- */
static kiln_texpr *node(parser *p, kiln_texpr_kind kind, kiln_dtype type) {
  kiln_texpr *e = kiln_arena_calloc(p->m->arena, 1, sizeof *e);
  e->kind = kind;
  e->type = type;
  return e;
}

static kiln_status parse_expr(parser *p, kiln_texpr **out);

/* const := NUMBER [':' TYPE] | ('inf' | 'nan') ':' TYPE | 'true' | 'false' */
static kiln_status parse_const(parser *p, const kiln_ttok *t, kiln_texpr **out) {
  char *text = tok_text(p, t);
  kiln_dtype type = KILN_I64;
  bool typed = accept(p, ":");
  if (typed) KILN_TRY(parse_type(p, &type));
  if (kiln_tile_float_type(type)) {
    kiln_texpr *e = node(p, KILN_TE_FLOAT, type);
    if (!parse_float_text(text, type, &e->f)) return err_at(p, t, "bad number '%s'", text);
    *out = e;
    return KILN_OK;
  }
  if (!typed && t->kind != KILN_TT_NUMBER) return err_at(p, t, "'%s' needs a type", text);
  kiln_texpr *e = node(p, KILN_TE_INT, type);
  if (!parse_i64_text(text, &e->i, type == KILN_U64))
    return err_at(p, t, "bad integer '%s' (floats need :f32, :f64, :f16 or :bf16)", text);
  *out = e;
  return KILN_OK;
}

/* args := '(' expr (',' expr)* ')' with exactly n operands */
static kiln_status parse_args(parser *p, kiln_texpr *e, int n, const char *name) {
  KILN_TRY(expect(p, "("));
  for (int i = 0; i < n; i++) {
    if (i) KILN_TRY(expect(p, ","));
    KILN_TRY(parse_expr(p, &e->args[i]));
  }
  if (!is_punct(peek(p), ")")) return err_at(p, peek(p), "%s: wrong number of operands", name);
  next(p);
  return KILN_OK;
}

/* call := OPNAME args | TYPE '(' expr ')' */
static kiln_status parse_call(parser *p, const kiln_ttok *t, kiln_texpr **out) {
  char *name = tok_text(p, t);
  kiln_top op = kiln_top_lookup(name);
  kiln_dtype type;
  kiln_texpr *e;
  if (op != KILN_TOP_COUNT) {
    e = node(p, KILN_TE_OP, KILN_UNDEFINED);
    e->op = op;
    KILN_TRY(parse_args(p, e, kiln_top_arity(op), name));
    e->type = op == KILN_TOP_SELECT ? e->args[1]->type : kiln_top_result(op, e->args[0]->type);
  } else if (kiln_dtype_from_name(name, &type) && kiln_dtype_valid((int)type) &&
             type != KILN_STRING) {
    e = node(p, KILN_TE_CAST, type);
    KILN_TRY(parse_args(p, e, 1, name));
  } else {
    return err_at(p, t, "unknown operator or type '%s'", name);
  }
  *out = e;
  return KILN_OK;
}

/* load := BUF '[' expr ']' */
static kiln_status parse_load(parser *p, const kiln_ttok *t, kiln_texpr **out) {
  int b;
  KILN_TRY(find_buf(p, t, &b));
  kiln_texpr *e = node(p, KILN_TE_LOAD, p->k->bufs.data[b].dtype);
  e->buf = b;
  KILN_TRY(expect(p, "["));
  KILN_TRY(parse_expr(p, &e->index));
  KILN_TRY(expect(p, "]"));
  *out = e;
  return KILN_OK;
}

/* expr := const | VAR | load | call */
static kiln_status parse_expr(parser *p, kiln_texpr **out) {
  const kiln_ttok *t = next(p);
  if (++p->depth > KILN_TILE_MAX_DEPTH) return err_at(p, t, "expression nested too deeply%s", "");
  kiln_status st = KILN_OK;
  int v;
  if (t->kind == KILN_TT_NUMBER || is_word(t, "inf") || is_word(t, "nan")) {
    st = parse_const(p, t, out);
  } else if (is_word(t, "true") || is_word(t, "false")) {
    *out = node(p, KILN_TE_INT, KILN_BOOL);
    (*out)->i = is_word(t, "true");
  } else if (t->kind == KILN_TT_VAR) {
    if (!(st = find_var(p, t, &v))) {
      *out = node(p, KILN_TE_VAR, p->k->vars.data[v].type);
      (*out)->var = v;
    }
  } else if (t->kind == KILN_TT_BUF) {
    st = parse_load(p, t, out);
  } else if (t->kind == KILN_TT_IDENT && is_punct(peek(p), "(")) {
    st = parse_call(p, t, out);
  } else {
    st = err_at(p, t, "expected an expression%s", "");
  }
  p->depth--;
  return st;
}

/* ---- statements ---- */
static kiln_status parse_block(parser *p, kiln_tblock *b);

static kiln_tstmt *stmt_node(parser *p, kiln_tstmt_kind kind) {
  kiln_tstmt *s = kiln_arena_calloc(p->m->arena, 1, sizeof *s);
  s->kind = kind;
  s->var = -1;
  s->buf = -1;
  return s;
}

/* for := 'for' VAR 'in' '0' '..' expr KIND block */
static kiln_status parse_for(parser *p, kiln_tstmt *s) {
  const kiln_ttok *t = next(p);
  if (t->kind != KILN_TT_VAR) return err_at(p, t, "expected a loop variable%s", "");
  KILN_TRY(find_var(p, t, &s->var));
  KILN_TRY(expect_word(p, "in"));
  t = next(p);
  if (t->kind != KILN_TT_NUMBER || t->len != 1 || t->p[0] != '0')
    return err_at(p, t, "loops start at 0: expected '0..'%s", "");
  KILN_TRY(expect(p, ".."));
  KILN_TRY(parse_expr(p, &s->extent));
  t = next(p);
  char *kind = tok_text(p, t);
  for (s->loop = 0; s->loop < KILN_LOOP_KIND_COUNT; s->loop++)
    if (t->kind == KILN_TT_IDENT && !strcmp(kind, kiln_loop_kind_name(s->loop))) break;
  if (s->loop == KILN_LOOP_KIND_COUNT) return err_at(p, t, "unknown loop kind '%s'", kind);
  return parse_block(p, &s->body);
}

/* if := 'if' expr block ['else' block] */
static kiln_status parse_if(parser *p, kiln_tstmt *s) {
  KILN_TRY(parse_expr(p, &s->cond));
  KILN_TRY(parse_block(p, &s->body));
  if (!is_word(peek(p), "else")) return KILN_OK;
  next(p);
  return parse_block(p, &s->orelse);
}

/* access := BUF '[' expr ']' */
static kiln_status parse_access(parser *p, int *buf, kiln_texpr **index) {
  const kiln_ttok *t = next(p);
  if (t->kind != KILN_TT_BUF) return err_at(p, t, "expected a buffer%s", "");
  KILN_TRY(find_buf(p, t, buf));
  KILN_TRY(expect(p, "["));
  KILN_TRY(parse_expr(p, index));
  return expect(p, "]");
}

/* mma := 'mma' access '+=' access '*' access '{' 'm' '=' INT ',' 'n' '=' INT ',' 'k' '=' INT
 *        ',' 'ldc' '=' INT ',' 'a_sm' '=' INT ',' 'a_sk' '=' INT ',' 'b_sk' '=' INT ','
 *        'b_sn' '=' INT '}' */
static kiln_status parse_mma(parser *p, kiln_tmma *m) {
  KILN_TRY(parse_access(p, &m->c_buf, &m->c_off));
  KILN_TRY(expect(p, "+="));
  KILN_TRY(parse_access(p, &m->a_buf, &m->a_off));
  KILN_TRY(expect(p, "*"));
  KILN_TRY(parse_access(p, &m->b_buf, &m->b_off));
  static const char *names[] = {"m", "n", "k", "ldc", "a_sm", "a_sk", "b_sk", "b_sn"};
  int64_t *fields[] = {&m->m, &m->n, &m->k, &m->ldc, &m->a_sm, &m->a_sk, &m->b_sk, &m->b_sn};
  KILN_TRY(expect(p, "{"));
  for (int i = 0; i < 8; i++) {
    if (i) KILN_TRY(expect(p, ","));
    KILN_TRY(expect_word(p, names[i]));
    KILN_TRY(expect(p, "="));
    KILN_TRY(parse_int(p, fields[i]));
  }
  return expect(p, "}");
}

/* stmt := for | if | 'barrier' | mma | access '=' expr | VAR '=' expr */
static kiln_status parse_stmt(parser *p, kiln_tstmt **out) {
  const kiln_ttok *t = peek(p);
  kiln_tstmt *s;
  if (is_word(t, "for") || is_word(t, "if") || is_word(t, "barrier") || is_word(t, "mma")) {
    next(p);
    s = stmt_node(p, is_word(t, "for")   ? KILN_TS_FOR
                     : is_word(t, "if")  ? KILN_TS_IF
                     : is_word(t, "mma") ? KILN_TS_MMA
                                         : KILN_TS_BARRIER);
    if (s->kind == KILN_TS_FOR) KILN_TRY(parse_for(p, s));
    if (s->kind == KILN_TS_IF) KILN_TRY(parse_if(p, s));
    if (s->kind == KILN_TS_MMA) KILN_TRY(parse_mma(p, &s->mma));
  } else if (t->kind == KILN_TT_BUF) {
    s = stmt_node(p, KILN_TS_STORE);
    KILN_TRY(parse_access(p, &s->buf, &s->index));
    KILN_TRY(expect(p, "="));
    KILN_TRY(parse_expr(p, &s->value));
  } else if (t->kind == KILN_TT_VAR) {
    next(p);
    s = stmt_node(p, KILN_TS_ASSIGN);
    KILN_TRY(find_var(p, t, &s->var));
    KILN_TRY(expect(p, "="));
    KILN_TRY(parse_expr(p, &s->value));
  } else {
    return err_at(p, t, "expected a statement%s", "");
  }
  *out = s;
  return KILN_OK;
}

/* block := '{' stmt* '}' */
static kiln_status parse_block(parser *p, kiln_tblock *b) {
  const kiln_ttok *open = peek(p);
  KILN_TRY(expect(p, "{"));
  if (++p->depth > KILN_TILE_MAX_DEPTH) return err_at(p, open, "blocks nested too deeply%s", "");
  while (!accept(p, "}")) {
    if (peek(p)->kind == KILN_TT_EOF) return err_at(p, open, "unclosed '{'%s", "");
    kiln_tstmt *s;
    KILN_TRY(parse_stmt(p, &s));
    kiln_tblock_push(p->k, b, s);
  }
  p->depth--;
  return KILN_OK;
}

/* ---- kernels ---- */
static kiln_status check_new_name(parser *p, const kiln_ttok *t, bool is_var) {
  char *name = tok_text(p, t);
  int dummy;
  if (!name[0]) return err_at(p, t, "empty name%s", "");
  if (is_var) {
    for (dummy = 0; dummy < p->k->vars.len; dummy++)
      if (!strcmp(p->k->vars.data[dummy].name, name))
        return err_at(p, t, "$%s declared twice", name);
  } else {
    for (dummy = 0; dummy < p->k->bufs.len; dummy++)
      if (!strcmp(p->k->bufs.data[dummy].name, name))
        return err_at(p, t, "%%%s declared twice", name);
  }
  return KILN_OK;
}

/* bufdecl := BUF ':' TYPE '[' INT ']' ['readonly'] */
static kiln_status parse_bufdecl(parser *p, kiln_tscope scope, bool param) {
  const kiln_ttok *t = next(p);
  if (t->kind != KILN_TT_BUF) return err_at(p, t, "expected a buffer name%s", "");
  KILN_TRY(check_new_name(p, t, false));
  kiln_dtype type;
  int64_t size;
  KILN_TRY(expect(p, ":"));
  KILN_TRY(parse_type(p, &type));
  KILN_TRY(expect(p, "["));
  const kiln_ttok *st = peek(p);
  KILN_TRY(parse_int(p, &size));
  if (size < 0) return err_at(p, st, "negative size%s", "");
  KILN_TRY(expect(p, "]"));
  kiln_tbuf b = {tok_text(p, t), type, scope, size, false};
  if (is_word(peek(p), "readonly")) b.readonly = (next(p), true);
  kiln_arena_vec_push(p->m->arena, &p->k->bufs, b);
  if (param) p->k->n_params++;
  return KILN_OK;
}

/* decl := ('shared' | 'local' | 'global') bufdecl | 'var' VAR ':' TYPE */
static kiln_status parse_decls(parser *p) {
  for (;;) {
    const kiln_ttok *t = peek(p);
    kiln_tscope scope;
    if (is_word(t, "var")) {
      next(p);
      const kiln_ttok *v = next(p);
      if (v->kind != KILN_TT_VAR) return err_at(p, v, "expected a variable name%s", "");
      KILN_TRY(check_new_name(p, v, true));
      kiln_dtype type;
      KILN_TRY(expect(p, ":"));
      KILN_TRY(parse_type(p, &type));
      kiln_tvar var = {tok_text(p, v), type};
      kiln_arena_vec_push(p->m->arena, &p->k->vars, var);
      continue;
    }
    for (scope = 0; scope < KILN_SCOPE_COUNT; scope++)
      if (is_word(t, kiln_tscope_name(scope))) break;
    if (scope == KILN_SCOPE_COUNT) return KILN_OK;
    next(p);
    KILN_TRY(parse_bufdecl(p, scope, false));
  }
}

/* kernel := 'kernel' AT '(' [bufdecl (',' bufdecl)*] ')' ['origin' STRING] '{' decl* stmt* '}' */
static kiln_status parse_kernel(parser *p) {
  KILN_TRY(expect_word(p, "kernel"));
  const kiln_ttok *t = next(p);
  if (t->kind != KILN_TT_AT) return err_at(p, t, "expected a kernel name%s", "");
  char *name = tok_text(p, t);
  if (kiln_tmodule_find(p->m, name)) return err_at(p, t, "kernel @%s defined twice", name);
  p->k = kiln_tkernel_new(p->m, name);
  KILN_TRY(expect(p, "("));
  for (bool first = true; !accept(p, ")"); first = false) {
    if (!first) KILN_TRY(expect(p, ","));
    KILN_TRY(parse_bufdecl(p, KILN_SCOPE_GLOBAL, true));
  }
  if (is_word(peek(p), "origin")) {
    next(p);
    const kiln_ttok *o = next(p);
    if (o->kind != KILN_TT_STRING) return err_at(p, o, "expected a string%s", "");
    p->k->origin = tok_text(p, o);
  }
  const kiln_ttok *open = peek(p);
  KILN_TRY(expect(p, "{"));
  KILN_TRY(parse_decls(p));
  while (!accept(p, "}")) {
    if (peek(p)->kind == KILN_TT_EOF) return err_at(p, open, "unclosed '{'%s", "");
    kiln_tstmt *s;
    KILN_TRY(parse_stmt(p, &s));
    kiln_tblock_push(p->k, &p->k->body, s);
  }
  return KILN_OK;
}

kiln_status kiln_tmodule_parse(const char *text, const char *filename, kiln_tmodule **out) {
  parser p = {{text, filename ? filename : "<text>"}, NULL, 0, 0, NULL, NULL, 0};
  KILN_TRY(kiln_ttext_lex(&p.src, &p.toks, &p.n));
  p.m = kiln_tmodule_new();
  kiln_status st = KILN_OK;
  while (!st && peek(&p)->kind != KILN_TT_EOF) st = parse_kernel(&p);
  free(p.toks);
  if (st) {
    kiln_tmodule_free(p.m);
    return st;
  }
  *out = p.m;
  return KILN_OK;
}
