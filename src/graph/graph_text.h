/* Private to the graph IR text form (graph_text.c, graph_print.c, graph_parse.c):
 * the tokenizer, caret diagnostics, name quoting and exact number text.
 * The grammar is documented in docs/IR.md and in the first comment of each
 * parser function in graph_parse.c. */
#ifndef KILN_GRAPH_TEXT_H
#define KILN_GRAPH_TEXT_H

#include "graph.h"

/* ---- tokens ---- */
typedef enum kiln_gtext_tok_kind {
  KILN_TOK_EOF,
  KILN_TOK_IDENT,  /* [A-Za-z_][A-Za-z0-9_.]* */
  KILN_TOK_VALUE,  /* %name or %"quoted" */
  KILN_TOK_AT,     /* @name or @"quoted" */
  KILN_TOK_STRING, /* "..." with escapes */
  KILN_TOK_INT,    /* [+-]?[0-9]+ */
  KILN_TOK_FLOAT,  /* any other number, inf, nan, nan:0xBITS */
  KILN_TOK_PUNCT,  /* ( ) [ ] { } , = : < > ? * -> :: */
  KILN_TOK_KIND_COUNT
} kiln_gtext_tok_kind;

typedef struct kiln_gtext_tok {
  kiln_gtext_tok_kind kind;
  const char *p; /* start in the source (after the sigil for VALUE and AT) */
  int len;       /* bytes from p */
  bool quoted;   /* VALUE/AT/STRING: p points at the opening quote */
  int line, col; /* 1-based position of the token's first byte (sigil included) */
} kiln_gtext_tok;

typedef struct kiln_gtext_src {
  const char *text;
  const char *file;
} kiln_gtext_src;

/* Splits src->text into tokens (ending with one EOF token); *out is malloc'd. */
KILN_MUST_USE kiln_status kiln_gtext_lex(const kiln_gtext_src *src, kiln_gtext_tok **out,
                                         int *out_n);
/* "file:line:col: message" followed by the source line and a caret under col. */
KILN_MUST_USE kiln_status kiln_gtext_error(const kiln_gtext_src *src, int line, int col,
                                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool kiln_gtext_punct(const kiln_gtext_tok *t, const char *s); /* a PUNCT token spelled s */
bool kiln_gtext_word(const kiln_gtext_tok *t, const char *s);  /* an IDENT token spelled s */
/* Decodes a quoted token (or copies a bare one) into the arena, NUL-terminated.
 * The lexer already checked the escapes, so this cannot fail. */
char *kiln_gtext_text(const kiln_gtext_tok *t, kiln_arena *a, size_t *out_len);

/* ---- printing names and strings ---- */
/* True if s prints bare as an identifier (attribute names, op types, domains, dim symbols). */
bool kiln_gtext_is_ident(const char *s);
/* Appends s (n bytes) in double quotes with escapes: \" \\ \n \t \r \xHH. */
void kiln_gtext_quote(kiln_strbuf *b, const char *s, size_t n);
/* Appends s bare if it is an identifier, quoted otherwise. */
void kiln_gtext_ident(kiln_strbuf *b, const char *s);
/* Appends sigil ('%' or '@') and the name, quoted when it has other bytes than [A-Za-z0-9_./]. */
void kiln_gtext_name(kiln_strbuf *b, char sigil, const char *s);

/* ---- exact number text ---- */
/* Appends element i of a floating-point buffer of dtype t as the shortest decimal
 * that kiln_gtext_store_float turns back into the same bits; NaNs print as "nan" or
 * "-nan" when they are the dtype's canonical NaN, and as "nan:0xBITS" otherwise. */
void kiln_gtext_format_float(kiln_strbuf *b, kiln_dtype t, const void *data, size_t i);
/* Parses number text (decimal, C99 hex float, [+-]inf, [+-]nan, nan:0xBITS) into element i
 * of a floating-point buffer of dtype t (rounding once, to nearest even). False if malformed
 * or if the NaN bits do not fit the dtype. */
bool kiln_gtext_store_float(kiln_dtype t, const char *text, size_t len, void *data, size_t i);
/* Integer element i as decimal text ("true"/"false" for bool bytes 0 and 1). */
void kiln_gtext_format_int(kiln_strbuf *b, kiln_dtype t, const void *data, size_t i);
/* Parses a decimal integer token into element i of an integer or bool buffer; false with a
 * reason in *why when it is out of the dtype's range. */
bool kiln_gtext_store_int(kiln_dtype t, const char *text, size_t len, void *data, size_t i,
                          const char **why);
/* Decimal text to int64; false on overflow. */
bool kiln_gtext_parse_i64(const char *text, size_t len, int64_t *out);

#endif
