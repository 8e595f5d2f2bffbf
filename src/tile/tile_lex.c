/* Tokenizer of the tile IR text form, and caret diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile_parse.h"

static bool is_digit(int c) {
  return c >= '0' && c <= '9';
}
static bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool ident_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool ident_char(int c) {
  return ident_start(c) || is_digit(c) || c == '.';
}

kiln_status kiln_ttext_error(const kiln_ttext_src *src, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st = kiln_source_errorv(src->file, src->text, line, col, fmt, ap);
  va_end(ap);
  return st;
}

typedef struct lexer {
  const kiln_ttext_src *src;
  const char *p, *line_start;
  int line;
  KILN_VEC(kiln_ttok) toks;
} lexer;

static int col_of(const lexer *lx, const char *q) {
  return (int)(q - lx->line_start) + 1;
}

static kiln_status lex_error(const lexer *lx, const char *at, const char *msg) {
  return kiln_ttext_error(lx->src, lx->line, col_of(lx, at), "%s", msg);
}

static void push(lexer *lx, kiln_ttok_kind kind, const char *start, const char *end,
                 const char *tok_start) {
  kiln_ttok t = {kind, start, (int)(end - start), lx->line, col_of(lx, tok_start)};
  kiln_vec_push(&lx->toks, t);
}

static void skip_space(lexer *lx) {
  for (;;) {
    char c = *lx->p;
    if (c == '\n') {
      lx->line++;
      lx->line_start = ++lx->p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      lx->p++;
    } else if (c == '/' && lx->p[1] == '/') {
      while (*lx->p && *lx->p != '\n') lx->p++;
    } else {
      return;
    }
  }
}

/* A quoted string starting at q (the opening quote); *end is after the closing quote. */
static kiln_status scan_string(const lexer *lx, const char *q, const char **end) {
  const char *p = q + 1;
  for (; *p != '"'; p++) {
    if (!*p || *p == '\n') return lex_error(lx, q, "unterminated string");
    if (*p != '\\') continue;
    p++;
    if (*p == 'x') {
      if (!is_hex(p[1]) || !is_hex(p[2])) return lex_error(lx, p - 1, "bad \\x escape");
      if (p[1] == '0' && p[2] == '0') return lex_error(lx, p - 1, "NUL byte in a string");
      p += 2;
    } else if (!strchr("\"\\ntr", *p) || !*p) {
      return lex_error(lx, p - 1, "unknown escape");
    }
  }
  *end = p + 1;
  return KILN_OK;
}

/* Numbers: [+-]? then a decimal or hex integer or float, or inf / nan after a sign.
 * The parser checks the text; the lexer only finds where it ends ("0..4" is 0, .., 4). */
static const char *scan_number(const char *p) {
  if (*p == '+' || *p == '-') p++;
  if (!strncmp(p, "inf", 3) || !strncmp(p, "nan", 3)) return p + 3;
  bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  if (hex) p += 2;
  for (;;) {
    char c = *p;
    if ((hex ? is_hex(c) : is_digit(c))) p++;
    else if (c == '.' && p[1] != '.') p++;
    else if ((hex ? (c == 'p' || c == 'P') : (c == 'e' || c == 'E')) &&
             (is_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && is_digit(p[2]))))
      p += 2;
    else break;
  }
  return p;
}

static bool starts_number(const char *p) {
  if (is_digit(*p)) return true;
  if (*p != '+' && *p != '-') return false;
  return is_digit(p[1]) || !strncmp(p + 1, "inf", 3) || !strncmp(p + 1, "nan", 3);
}

static kiln_status lex_name(lexer *lx, kiln_ttok_kind kind) {
  const char *start = lx->p++;
  const char *q = lx->p, *end;
  if (*q == '"') {
    KILN_TRY(scan_string(lx, q, &end));
  } else {
    if (!ident_start(*q)) return lex_error(lx, start, "expected a name after the sigil");
    for (end = q; ident_char(*end); end++) {
    }
  }
  push(lx, kind, q, end, start);
  lx->p = end;
  return KILN_OK;
}

static kiln_status lex_one(lexer *lx) {
  const char *p = lx->p, *end;
  static const char *puncts[] = {"..", "+=", "(", ")", "[", "]", "{", "}", ",", ":", "=", "*"};
  if (*p == '%') return lex_name(lx, KILN_TT_BUF);
  if (*p == '$') return lex_name(lx, KILN_TT_VAR);
  if (*p == '@') return lex_name(lx, KILN_TT_AT);
  if (*p == '"') {
    KILN_TRY(scan_string(lx, p, &end));
    push(lx, KILN_TT_STRING, p, end, p);
  } else if (starts_number(p)) {
    end = scan_number(p);
    push(lx, KILN_TT_NUMBER, p, end, p);
  } else if (ident_start(*p)) {
    for (end = p; ident_char(*end); end++) {
    }
    push(lx, KILN_TT_IDENT, p, end, p);
  } else {
    size_t i = 0, n = sizeof puncts / sizeof puncts[0];
    while (i < n && strncmp(p, puncts[i], strlen(puncts[i])) != 0) i++;
    if (i == n) return lex_error(lx, p, "unexpected character");
    end = p + strlen(puncts[i]);
    push(lx, KILN_TT_PUNCT, p, end, p);
  }
  lx->p = end;
  return KILN_OK;
}

kiln_status kiln_ttext_lex(const kiln_ttext_src *src, kiln_ttok **out, int *out_n) {
  lexer lx = {src, src->text, src->text, 1, {0}};
  kiln_status st = KILN_OK;
  for (skip_space(&lx); *lx.p && !st; skip_space(&lx)) st = lex_one(&lx);
  if (st) {
    kiln_vec_free(&lx.toks);
    return st;
  }
  push(&lx, KILN_TT_EOF, lx.p, lx.p, lx.p);
  *out = lx.toks.data;
  *out_n = lx.toks.len;
  return KILN_OK;
}

char *kiln_ttok_text(const kiln_ttok *t, kiln_arena *a) {
  if (t->len == 0 || t->p[0] != '"') return kiln_arena_strndup(a, t->p, (size_t)t->len);
  char *s = kiln_arena_alloc(a, (size_t)t->len), *o = s;
  for (const char *p = t->p + 1; p < t->p + t->len - 1; p++) {
    if (*p != '\\') {
      *o++ = *p;
      continue;
    }
    p++;
    switch (*p) {
    case 'n': *o++ = '\n'; break;
    case 't': *o++ = '\t'; break;
    case 'r': *o++ = '\r'; break;
    case 'x': *o++ = (char)strtol((char[]){p[1], p[2], 0}, NULL, 16), p += 2; break;
    default: *o++ = *p; break;
    }
  }
  *o = 0;
  return s;
}
