/* Private to the tile IR parser (tile_lex.c, tile_parse.c). */
#ifndef KILN_TILE_PARSE_H
#define KILN_TILE_PARSE_H

#include "tile_text.h"

typedef enum kiln_ttok_kind {
  KILN_TT_EOF,
  KILN_TT_IDENT,  /* [A-Za-z_][A-Za-z0-9_.]* */
  KILN_TT_BUF,    /* %name or %"quoted" (p is after the sigil) */
  KILN_TT_VAR,    /* $name */
  KILN_TT_AT,     /* @name */
  KILN_TT_STRING, /* "..." */
  KILN_TT_NUMBER, /* [+-]? digits, decimal or hex float text, [+-]inf, [+-]nan */
  KILN_TT_PUNCT,  /* .. += ( ) [ ] { } , : = * */
  KILN_TT_KIND_COUNT
} kiln_ttok_kind;

typedef struct kiln_ttok {
  kiln_ttok_kind kind;
  const char *p; /* text (quoted names and strings: from the opening quote) */
  int len;
  int line, col; /* of the first byte, sigil included */
} kiln_ttok;

typedef struct kiln_ttext_src {
  const char *text;
  const char *file;
} kiln_ttext_src;

/* "file:line:col: message", the source line and a caret under col (KILN_ERR_INVALID). */
KILN_MUST_USE kiln_status kiln_ttext_error(const kiln_ttext_src *src, int line, int col,
                                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Splits the text into tokens ending with EOF; *out is malloc'd. */
KILN_MUST_USE kiln_status kiln_ttext_lex(const kiln_ttext_src *src, kiln_ttok **out, int *out_n);
/* The token's text, unquoted and unescaped, in the arena. */
char *kiln_ttok_text(const kiln_ttok *t, kiln_arena *a);

#endif
