/* Tile IR printer: the text form of docs/TILE_IR.md. Print -> parse -> print is the
 * identity; float constants print as the shortest decimal that reads back exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile_text.h"

/* ---- names and numbers ---- */
static bool ident_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(int c) {
  return ident_start(c) || (c >= '0' && c <= '9') || c == '.';
}

static bool is_bare(const char *s) {
  if (!ident_start((unsigned char)s[0])) return false;
  for (const char *p = s + 1; *p; p++)
    if (!ident_char((unsigned char)*p)) return false;
  return true;
}

void kiln_ttext_quote(kiln_strbuf *out, const char *s) {
  kiln_strbuf_append(out, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': kiln_strbuf_append(out, "\\\"", 2); break;
    case '\\': kiln_strbuf_append(out, "\\\\", 2); break;
    case '\n': kiln_strbuf_append(out, "\\n", 2); break;
    case '\t': kiln_strbuf_append(out, "\\t", 2); break;
    case '\r': kiln_strbuf_append(out, "\\r", 2); break;
    default:
      if (*p < 0x20 || *p == 0x7f) kiln_strbuf_printf(out, "\\x%02x", *p);
      else kiln_strbuf_append(out, (const char *)p, 1);
    }
  }
  kiln_strbuf_append(out, "\"", 1);
}

void kiln_ttext_name(kiln_strbuf *out, char sigil, const char *name) {
  kiln_strbuf_append(out, &sigil, 1);
  if (name && is_bare(name)) kiln_strbuf_append(out, name, strlen(name));
  else kiln_ttext_quote(out, name ? name : "");
}

static bool reads_back(kiln_dtype t, const char *text, double v) {
  if (t == KILN_F32) return strtof(text, NULL) == (float)v;
  return strtod(text, NULL) == v;
}

void kiln_ttext_float(kiln_strbuf *out, kiln_dtype t, double v) {
  if (t == KILN_F32) v = (float)v;
  if (isnan(v)) {
    kiln_strbuf_printf(out, "nan");
    return;
  }
  if (isinf(v)) {
    kiln_strbuf_printf(out, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  int max = t == KILN_F32 ? 9 : 17;
  for (int digits = 1; digits <= max; digits++) {
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (reads_back(t, buf, v)) break;
  }
  /* -0 prints as "-0", which reads back as -0: the sign survives. */
  kiln_strbuf_append(out, buf, strlen(buf));
}

/* ---- expressions ---- */
static const char *buf_name(const kiln_tkernel *k, int b) {
  return b >= 0 && b < k->bufs.len ? k->bufs.data[b].name : NULL;
}

static void print_buf(const kiln_tkernel *k, int b, kiln_strbuf *out) {
  const char *n = buf_name(k, b);
  if (n) kiln_ttext_name(out, '%', n);
  else kiln_strbuf_printf(out, "%%?%d", b);
}

static void print_var(const kiln_tkernel *k, int v, kiln_strbuf *out) {
  if (v >= 0 && v < k->vars.len) kiln_ttext_name(out, '$', k->vars.data[v].name);
  else kiln_strbuf_printf(out, "$?%d", v);
}

static void print_int_const(const kiln_texpr *e, kiln_strbuf *out) {
  if (e->type == KILN_BOOL && (e->i == 0 || e->i == 1)) {
    kiln_strbuf_printf(out, e->i ? "true" : "false");
    return;
  }
  if (e->type == KILN_U64) kiln_strbuf_printf(out, "%llu", (unsigned long long)e->i);
  else kiln_strbuf_printf(out, "%lld", (long long)e->i);
  if (e->type != KILN_I64) kiln_strbuf_printf(out, ":%s", kiln_dtype_name(e->type));
}

static void print_args(const kiln_tkernel *k, const kiln_texpr *e, int n, kiln_strbuf *out) {
  kiln_strbuf_append(out, "(", 1);
  for (int i = 0; i < n; i++) {
    if (i) kiln_strbuf_append(out, ", ", 2);
    kiln_ttext_expr(k, e->args[i], out);
  }
  kiln_strbuf_append(out, ")", 1);
}

void kiln_ttext_expr(const kiln_tkernel *k, const kiln_texpr *e, kiln_strbuf *out) {
  if (!e) {
    kiln_strbuf_printf(out, "<null>");
    return;
  }
  switch (e->kind) {
  case KILN_TE_INT: print_int_const(e, out); break;
  case KILN_TE_FLOAT:
    kiln_ttext_float(out, e->type, e->f);
    kiln_strbuf_printf(out, ":%s", kiln_dtype_name(e->type));
    break;
  case KILN_TE_VAR: print_var(k, e->var, out); break;
  case KILN_TE_LOAD:
    print_buf(k, e->buf, out);
    kiln_strbuf_append(out, "[", 1);
    kiln_ttext_expr(k, e->index, out);
    kiln_strbuf_append(out, "]", 1);
    break;
  case KILN_TE_OP:
    kiln_strbuf_printf(out, "%s", kiln_top_name(e->op));
    print_args(k, e, e->op < KILN_TOP_COUNT ? kiln_top_arity(e->op) : 0, out);
    break;
  case KILN_TE_CAST:
    kiln_strbuf_printf(out, "%s", kiln_dtype_name(e->type));
    print_args(k, e, 1, out);
    break;
  default: kiln_strbuf_printf(out, "<expr kind %d>", (int)e->kind); break;
  }
}

/* ---- statements ---- */
static void print_mma(const kiln_tkernel *k, const kiln_tmma *m, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "mma ");
  print_buf(k, m->c_buf, out);
  kiln_strbuf_append(out, "[", 1);
  kiln_ttext_expr(k, m->c_off, out);
  kiln_strbuf_printf(out, "] += ");
  print_buf(k, m->a_buf, out);
  kiln_strbuf_append(out, "[", 1);
  kiln_ttext_expr(k, m->a_off, out);
  kiln_strbuf_printf(out, "] * ");
  print_buf(k, m->b_buf, out);
  kiln_strbuf_append(out, "[", 1);
  kiln_ttext_expr(k, m->b_off, out);
  kiln_strbuf_printf(out,
                     "] {m=%lld, n=%lld, k=%lld, ldc=%lld, a_sm=%lld, a_sk=%lld, b_sk=%lld, "
                     "b_sn=%lld}",
                     (long long)m->m, (long long)m->n, (long long)m->k, (long long)m->ldc,
                     (long long)m->a_sm, (long long)m->a_sk, (long long)m->b_sk,
                     (long long)m->b_sn);
}

/* The statement without its nested blocks (loops and ifs end with " {"). */
static void print_head(const kiln_tkernel *k, const kiln_tstmt *s, kiln_strbuf *out) {
  switch (s->kind) {
  case KILN_TS_FOR:
    kiln_strbuf_printf(out, "for ");
    print_var(k, s->var, out);
    kiln_strbuf_printf(out, " in 0..");
    kiln_ttext_expr(k, s->extent, out);
    kiln_strbuf_printf(out, " %s {", kiln_loop_kind_name(s->loop));
    break;
  case KILN_TS_IF:
    kiln_strbuf_printf(out, "if ");
    kiln_ttext_expr(k, s->cond, out);
    kiln_strbuf_printf(out, " {");
    break;
  case KILN_TS_STORE:
    print_buf(k, s->buf, out);
    kiln_strbuf_append(out, "[", 1);
    kiln_ttext_expr(k, s->index, out);
    kiln_strbuf_printf(out, "] = ");
    kiln_ttext_expr(k, s->value, out);
    break;
  case KILN_TS_ASSIGN:
    print_var(k, s->var, out);
    kiln_strbuf_printf(out, " = ");
    kiln_ttext_expr(k, s->value, out);
    break;
  case KILN_TS_BARRIER: kiln_strbuf_printf(out, "barrier"); break;
  case KILN_TS_MMA: print_mma(k, &s->mma, out); break;
  default: kiln_strbuf_printf(out, "<statement kind %d>", (int)s->kind); break;
  }
}

void kiln_ttext_stmt_line(const kiln_tkernel *k, const kiln_tstmt *s, kiln_strbuf *out) {
  if (!s) {
    kiln_strbuf_printf(out, "<null>");
    return;
  }
  print_head(k, s, out);
  if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) kiln_strbuf_printf(out, " ... }");
}

static void indent(kiln_strbuf *out, int depth) {
  for (int i = 0; i < depth; i++) kiln_strbuf_append(out, "  ", 2);
}

static void print_block(const kiln_tkernel *k, const kiln_tblock *b, int depth, kiln_strbuf *out);

static void print_stmt(const kiln_tkernel *k, const kiln_tstmt *s, int depth, kiln_strbuf *out) {
  indent(out, depth);
  if (!s) {
    kiln_strbuf_printf(out, "<null>\n");
    return;
  }
  print_head(k, s, out);
  kiln_strbuf_append(out, "\n", 1);
  if (s->kind != KILN_TS_FOR && s->kind != KILN_TS_IF) return;
  print_block(k, &s->body, depth + 1, out);
  if (s->kind == KILN_TS_IF && s->orelse.len > 0) {
    indent(out, depth);
    kiln_strbuf_printf(out, "} else {\n");
    print_block(k, &s->orelse, depth + 1, out);
  }
  indent(out, depth);
  kiln_strbuf_printf(out, "}\n");
}

static void print_block(const kiln_tkernel *k, const kiln_tblock *b, int depth, kiln_strbuf *out) {
  for (int i = 0; i < b->len; i++) print_stmt(k, b->data[i], depth, out);
}

/* ---- kernels ---- */
static void print_params(const kiln_tkernel *k, kiln_strbuf *out) {
  kiln_strbuf_append(out, "(", 1);
  for (int i = 0; i < k->n_params && i < k->bufs.len; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    if (i) kiln_strbuf_append(out, ", ", 2);
    kiln_ttext_name(out, '%', b->name);
    kiln_strbuf_printf(out, ": %s[%lld]%s", kiln_dtype_name(b->dtype), (long long)b->size,
                       b->readonly ? " readonly" : "");
  }
  kiln_strbuf_append(out, ")", 1);
}

static void print_decls(const kiln_tkernel *k, kiln_strbuf *out) {
  for (int i = k->n_params; i < k->bufs.len; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    kiln_strbuf_printf(out, "  %s ", kiln_tscope_name(b->scope));
    kiln_ttext_name(out, '%', b->name);
    kiln_strbuf_printf(out, ": %s[%lld]%s\n", kiln_dtype_name(b->dtype), (long long)b->size,
                       b->readonly ? " readonly" : "");
  }
  for (int i = 0; i < k->vars.len; i++) {
    kiln_strbuf_printf(out, "  var ");
    kiln_ttext_name(out, '$', k->vars.data[i].name);
    kiln_strbuf_printf(out, ": %s\n", kiln_dtype_name(k->vars.data[i].type));
  }
}

void kiln_tkernel_print(const kiln_tkernel *k, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "kernel ");
  kiln_ttext_name(out, '@', k->name);
  print_params(k, out);
  if (k->origin && k->origin[0]) {
    kiln_strbuf_printf(out, " origin ");
    kiln_ttext_quote(out, k->origin);
  }
  kiln_strbuf_printf(out, " {\n");
  print_decls(k, out);
  print_block(k, &k->body, 1, out);
  kiln_strbuf_printf(out, "}\n");
}

void kiln_tmodule_print(const kiln_tmodule *m, kiln_strbuf *out) {
  for (int i = 0; i < m->kernels.len; i++) {
    if (i) kiln_strbuf_append(out, "\n", 1);
    kiln_tkernel_print(m->kernels.data[i], out);
  }
}
