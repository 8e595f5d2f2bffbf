/* Diagnostics pointing into source text: "file:line:col: message", the source line
 * (an excerpt around the column when the line is long) and a caret under the column.
 * Shared by the graph IR and tile IR parsers. */
#include <stdarg.h>
#include <string.h>

#include "base.h"

enum { SHOW_MAX = 160 }; /* longest excerpt of a source line shown under a message */

/* Appends line `line` of text and a caret under column col (1-based). */
static void show_line(kiln_strbuf *b, const char *text, int line, int col) {
  const char *s = text;
  for (int l = 1; l < line && *s; s++)
    if (*s == '\n') l++;
  size_t n = strcspn(s, "\n");
  if (n && s[n - 1] == '\r') n--;
  size_t c = col > 0 ? (size_t)col - 1 : 0, from = 0;
  if (c > n) c = n;
  if (n > SHOW_MAX && c > SHOW_MAX / 2) from = c - SHOW_MAX / 2;
  size_t to = from + SHOW_MAX < n ? from + SHOW_MAX : n;
  kiln_strbuf_printf(b, "\n");
  for (size_t i = from; i < to; i++) {
    unsigned char ch = (unsigned char)s[i];
    char o = ch == '\t' || ch >= 0x20 ? (char)ch : '?';
    kiln_strbuf_append(b, &o, 1);
  }
  kiln_strbuf_printf(b, "\n");
  for (size_t i = from; i < c; i++) kiln_strbuf_append(b, s[i] == '\t' ? "\t" : " ", 1);
  kiln_strbuf_printf(b, "^");
}

kiln_status kiln_source_errorv(const char *file, const char *text, int line, int col,
                               const char *fmt, va_list ap) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s:%d:%d: ", file ? file : "<input>", line, col);
  kiln_strbuf_vprintf(&b, fmt, ap);
  show_line(&b, text, line, col);
  kiln_status st = kiln_invalid("%s", b.data);
  kiln_strbuf_free(&b);
  return st;
}
