/* Escaping of text that comes from a model, one function per context it reaches (base.h). */
#include <stdio.h>
#include <string.h>

#include "base.h"

static void put(kiln_strbuf *b, char c) {
  kiln_strbuf_append(b, &c, 1);
}

static void put_hex(kiln_strbuf *b, const char *prefix, unsigned char c) {
  static const char digits[] = "0123456789ABCDEF";
  kiln_strbuf_append(b, prefix, strlen(prefix));
  put(b, digits[c >> 4]);
  put(b, digits[c & 15]);
}

static bool printable(unsigned char c) {
  return c >= 0x20 && c < 0x7f;
}

void kiln_esc_c_comment(kiln_strbuf *b, const char *s, size_t max_len) {
  size_t i = 0;
  for (; s[i] && i < max_len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (printable(c) && c != '*' && c != '\\' && c != '?') put(b, (char)c);
    else put_hex(b, "\\x", c);
  }
  if (s[i]) kiln_strbuf_append(b, "...", 3);
}

void kiln_esc_c_string(kiln_strbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\' || c == '?') {
      put(b, '\\');
      put(b, (char)c);
    } else if (printable(c)) {
      put(b, (char)c);
    } else {
      char oct[5];
      snprintf(oct, sizeof oct, "\\%03o", c);
      kiln_strbuf_append(b, oct, 4);
    }
  }
}

void kiln_esc_line(kiln_strbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '\\') kiln_strbuf_append(b, "\\\\", 2);
    else if (c < 0x20 || c == 0x7f) put_hex(b, "\\x", c);
    else put(b, (char)c);
  }
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

kiln_status kiln_unesc_line(char *s) {
  char *o = s;
  for (char *p = s; *p; p++) {
    if (*p != '\\') {
      *o++ = *p;
    } else if (p[1] == '\\') {
      *o++ = '\\', p++;
    } else if (p[1] == 'x' && hex_value(p[2]) >= 0 && hex_value(p[3]) >= 0 &&
               (hex_value(p[2]) || hex_value(p[3]))) {
      *o++ = (char)(hex_value(p[2]) << 4 | hex_value(p[3])), p += 3;
    } else {
      return kiln_invalid("bad escape at '%.8s'", p);
    }
  }
  *o = 0;
  return KILN_OK;
}

static bool name_char(unsigned char c, bool first) {
  return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_' || c == '-' ||
         (c == '.' && !first);
}

enum { FILE_NAME_MAX = 200 };

void kiln_esc_file_name(kiln_strbuf *b, const char *s) {
  size_t start = b->len;
  if (!*s) kiln_strbuf_append(b, "%00", 3);
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (name_char(c, p == s)) put(b, (char)c);
    else put_hex(b, "%", c);
  }
  if (b->len - start <= FILE_NAME_MAX) return;
  size_t cut = start + FILE_NAME_MAX - 18; /* never inside a %XX: back up over it */
  if (b->data[cut - 1] == '%') cut -= 1;
  else if (b->data[cut - 2] == '%') cut -= 2;
  b->len = cut;
  char tail[20];
  snprintf(tail, sizeof tail, "~%016llx",
           (unsigned long long)kiln_hash_bytes(s, strlen(s), 0x6b696c6e));
  kiln_strbuf_append(b, tail, strlen(tail));
  b->data[b->len] = 0;
}

void kiln_esc_html(kiln_strbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '&': kiln_strbuf_append(b, "&amp;", 5); break;
    case '<': kiln_strbuf_append(b, "&lt;", 4); break;
    case '>': kiln_strbuf_append(b, "&gt;", 4); break;
    case '"': kiln_strbuf_append(b, "&quot;", 6); break;
    case '\'': kiln_strbuf_append(b, "&#39;", 5); break;
    default:
      if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
        kiln_strbuf_append(b, "\xEF\xBF\xBD", 3);
      else put(b, (char)c);
    }
  }
}

/* Length of a UTF-8 sequence at s that a terminal must not see raw (C1 control, bidi
 * override or isolate), or 0. */
static int hidden_utf8(const unsigned char *s) {
  if (s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) return 2;
  if (s[0] == 0xE2 && s[1] == 0x80 && s[2] >= 0xAA && s[2] <= 0xAE) return 3;
  if (s[0] == 0xE2 && s[1] == 0x81 && s[2] >= 0xA6 && s[2] <= 0xA9) return 3;
  return 0;
}

void kiln_esc_terminal(kiln_strbuf *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = hidden_utf8(p);
    for (int i = 0; i < n; i++) put_hex(b, "\\x", p[i]);
    if (n) {
      p += n;
      continue;
    }
    if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) put_hex(b, "\\x", *p);
    else put(b, (char)*p);
    p++;
  }
}

/* Length of the valid UTF-8 sequence at s (2-4, no overlong forms or surrogates), or 0. */
static int utf8_len(const unsigned char *s) {
  int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0))) return 0;
  if (n == 4 && ((s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))) return 0;
  return n;
}

void kiln_esc_json(kiln_strbuf *b, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    if (*p == '"' || *p == '\\') {
      put(b, '\\');
      put(b, (char)*p++);
    } else if (*p < 0x20 || *p == 0x7f) {
      put_hex(b, "\\u00", *p++);
    } else if (*p < 0x80) {
      put(b, (char)*p++);
    } else if (hidden_utf8(p)) { /* C1 control, bidi override: valid JSON, but not raw */
      int n = hidden_utf8(p);
      unsigned cp = n == 2 ? (p[0] & 0x1Fu) << 6 | (p[1] & 0x3Fu)
                           : (p[0] & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
      char u[8];
      snprintf(u, sizeof u, "\\u%04X", cp);
      kiln_strbuf_append(b, u, 6), p += n;
    } else {
      int n = utf8_len(p);
      if (n) kiln_strbuf_append(b, (const char *)p, (size_t)n), p += n;
      else kiln_strbuf_append(b, "\\uFFFD", 6), p++;
    }
  }
}
