/* The graph IR text form, shared part: tokenizer, caret diagnostics, quoting of
 * names and strings, and number text that round-trips bit-exactly per dtype. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_text.h"

/* ---- character classes (locale independent) ---- */
static bool is_digit(int c) {
  return c >= '0' && c <= '9';
}
static bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool is_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool ident_start(int c) {
  return is_alpha(c) || c == '_';
}
static bool ident_char(int c) {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '.';
}
static bool name_char(int c) {
  return ident_char(c) || c == '/';
}
static int hex_val(int c) {
  return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* ---- diagnostics ---- */
kiln_status kiln_gtext_error(const kiln_gtext_src *src, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st = kiln_source_errorv(src->file, src->text, line, col, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- tokenizer ---- */
typedef struct lexer {
  const kiln_gtext_src *src;
  const char *p, *line_start;
  int line;
  KILN_VEC(kiln_gtext_tok) toks;
} lexer;

static int col_at(const lexer *lx, const char *q) {
  return (int)(q - lx->line_start) + 1;
}

static kiln_status lex_error(const lexer *lx, const char *at, const char *fmt, const char *arg) {
  return kiln_gtext_error(lx->src, lx->line, col_at(lx, at), fmt, arg);
}

static void push(lexer *lx, kiln_gtext_tok_kind k, const char *tok_start, const char *p,
                 const char *end, bool quoted) {
  kiln_gtext_tok t = {k, p, (int)(end - p), quoted, lx->line, col_at(lx, tok_start)};
  kiln_vec_push(&lx->toks, t);
  lx->p = end;
}

/* Skips blanks, newlines and '#' comments. */
static void skip_space(lexer *lx) {
  for (;;) {
    char c = *lx->p;
    if (c == '\n') {
      lx->line++;
      lx->line_start = ++lx->p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      lx->p++;
    } else if (c == '#') {
      while (*lx->p && *lx->p != '\n') lx->p++;
    } else {
      return;
    }
  }
}

/* Scans a quoted string starting at q (the opening quote); *end is past the closing quote. */
static kiln_status scan_string(const lexer *lx, const char *q, const char **end) {
  const char *s = q + 1;
  for (;;) {
    char c = *s;
    if (c == 0 || c == '\n') return lex_error(lx, q, "unterminated string%s", "");
    if (c == '"') break;
    if (c != '\\') {
      s++;
      continue;
    }
    char e = s[1];
    if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r') {
      s += 2;
    } else if (e == 'x' && is_hex(s[2]) && is_hex(s[3])) {
      s += 4;
    } else {
      char what[8];
      snprintf(what, sizeof what, (unsigned char)e >= 0x20 ? "%c" : "\\x%02x", (unsigned char)e);
      return lex_error(lx, s, "unknown escape '\\%s' (use \\\" \\\\ \\n \\t \\r or \\xHH)",
                       e == 'x' ? "x" : what);
    }
  }
  *end = s + 1;
  return KILN_OK;
}

/* True if q starts the word w not followed by an identifier byte. */
static bool word_at(const char *q, const char *w) {
  size_t n = strlen(w);
  return strncmp(q, w, n) == 0 && !ident_char((unsigned char)q[n]);
}

/* Length of a special float word at q: [+-]?(inf|nan) or nan:0xHEX; 0 if none. */
static size_t special_float_len(const char *q) {
  const char *s = q + (*q == '+' || *q == '-');
  if (word_at(s, "inf")) return (size_t)(s - q) + 3;
  if (strncmp(s, "nan", 3) != 0) return 0;
  if (s == q && s[3] == ':' && s[4] == '0' && (s[5] | 0x20) == 'x' && is_hex(s[6])) {
    size_t n = 6;
    while (is_hex(s[n])) n++;
    return ident_char((unsigned char)s[n]) ? 0 : n;
  }
  return word_at(s, "nan") ? (size_t)(s - q) + 3 : 0;
}

static bool starts_number(const char *q) {
  const char *s = q + (*q == '+' || *q == '-');
  return is_digit(*s) || (*s == '.' && is_digit(s[1])) || special_float_len(q) > 0;
}

/* Checks that [s, s+n) is a whole C float literal (strtod syntax). */
static bool valid_float_text(const char *s, size_t n) {
  char small[64], *buf = n < sizeof small ? small : kiln_xmalloc(n + 1);
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  (void)strtod(buf, &end);
  bool ok = end == buf + n;
  if (buf != small) free(buf);
  return ok;
}

/* number := [+-]? digits | C float literal | [+-]?inf | [+-]?nan | nan:0xHEX */
static kiln_status lex_number(lexer *lx) {
  const char *q = lx->p, *s = q + (*q == '+' || *q == '-');
  size_t special = special_float_len(q);
  if (special) {
    push(lx, KILN_TOK_FLOAT, q, q, q + special, false);
    return KILN_OK;
  }
  const char *e = s;
  while (ident_char((unsigned char)*e) ||
         ((*e == '+' || *e == '-') && strchr("eEpP", e[-1]) && e[-1]))
    e++;
  bool all_digits = true, has_p = false;
  for (const char *c = s; c < e; c++) {
    all_digits &= is_digit(*c);
    has_p |= (*c | 0x20) == 'p';
  }
  if (all_digits) {
    push(lx, KILN_TOK_INT, q, q, e, false);
    return KILN_OK;
  }
  if (s[0] == '0' && (s[1] | 0x20) == 'x' && !has_p)
    return lex_error(lx, q, "hexadecimal integers are not supported%s (write decimal)", "");
  if (!valid_float_text(q, (size_t)(e - q))) return lex_error(lx, q, "malformed number%s", "");
  push(lx, KILN_TOK_FLOAT, q, q, e, false);
  return KILN_OK;
}

/* A %name or @name: bare [A-Za-z0-9_./]+ or a quoted string right after the sigil. */
static kiln_status lex_sigil(lexer *lx, kiln_gtext_tok_kind kind) {
  const char *q = lx->p, *s = q + 1, *e = s;
  if (*s == '"') {
    KILN_TRY(scan_string(lx, s, &e));
    push(lx, kind, q, s, e, true);
    return KILN_OK;
  }
  while (name_char((unsigned char)*e)) e++;
  if (e == s)
    return lex_error(lx, q, "expected a name or a quoted string after '%s'",
                     kind == KILN_TOK_VALUE ? "%" : "@");
  push(lx, kind, q, s, e, false);
  return KILN_OK;
}

static kiln_status lex_punct(lexer *lx) {
  const char *q = lx->p;
  if ((q[0] == '-' && q[1] == '>') || (q[0] == ':' && q[1] == ':')) {
    push(lx, KILN_TOK_PUNCT, q, q, q + 2, false);
    return KILN_OK;
  }
  if (strchr("()[]{},=:<>?*", *q)) {
    push(lx, KILN_TOK_PUNCT, q, q, q + 1, false);
    return KILN_OK;
  }
  char what[16];
  unsigned char c = (unsigned char)*q;
  snprintf(what, sizeof what, c > 0x20 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
  return lex_error(lx, q, "unexpected character %s", what);
}

static kiln_status lex_one(lexer *lx) {
  const char *q = lx->p;
  if (*q == '%') return lex_sigil(lx, KILN_TOK_VALUE);
  if (*q == '@') return lex_sigil(lx, KILN_TOK_AT);
  if (*q == '"') {
    const char *e;
    KILN_TRY(scan_string(lx, q, &e));
    push(lx, KILN_TOK_STRING, q, q, e, true);
    return KILN_OK;
  }
  if (starts_number(q)) return lex_number(lx);
  if (ident_start((unsigned char)*q)) {
    const char *e = q;
    while (ident_char((unsigned char)*e)) e++;
    push(lx, KILN_TOK_IDENT, q, q, e, false);
    return KILN_OK;
  }
  return lex_punct(lx);
}

kiln_status kiln_gtext_lex(const kiln_gtext_src *src, kiln_gtext_tok **out, int *out_n) {
  lexer lx = {src, src->text, src->text, 1, {0}};
  *out = NULL;
  *out_n = 0;
  if (strlen(src->text) > (size_t)1 << 30)
    return kiln_invalid("%s: the text is larger than 1 GiB", src->file ? src->file : "<input>");
  kiln_status st = KILN_OK;
  for (;;) {
    skip_space(&lx);
    if (!*lx.p) break;
    if ((st = lex_one(&lx)) != KILN_OK) break;
  }
  if (st) {
    kiln_vec_free(&lx.toks);
    return st;
  }
  push(&lx, KILN_TOK_EOF, lx.p, lx.p, lx.p, false);
  *out = lx.toks.data;
  *out_n = lx.toks.len;
  return KILN_OK;
}

bool kiln_gtext_punct(const kiln_gtext_tok *t, const char *s) {
  return t->kind == KILN_TOK_PUNCT && (size_t)t->len == strlen(s) && !memcmp(t->p, s, t->len);
}

bool kiln_gtext_word(const kiln_gtext_tok *t, const char *s) {
  return t->kind == KILN_TOK_IDENT && (size_t)t->len == strlen(s) && !memcmp(t->p, s, t->len);
}

char *kiln_gtext_text(const kiln_gtext_tok *t, kiln_arena *a, size_t *out_len) {
  size_t cap = (size_t)t->len + 1;
  char *o = a ? kiln_arena_alloc(a, cap) : kiln_xmalloc(cap);
  size_t n = 0;
  if (!t->quoted) {
    memcpy(o, t->p, (size_t)t->len);
    n = (size_t)t->len;
  } else {
    const char *s = t->p + 1, *e = t->p + t->len - 1;
    while (s < e) {
      if (*s != '\\') {
        o[n++] = *s++;
        continue;
      }
      char c = s[1];
      if (c == 'x') {
        o[n++] = (char)(hex_val(s[2]) * 16 + hex_val(s[3]));
        s += 4;
        continue;
      }
      o[n++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
      s += 2;
    }
  }
  o[n] = 0;
  if (out_len) *out_len = n;
  return o;
}

/* ---- printing names and strings ---- */
bool kiln_gtext_is_ident(const char *s) {
  if (!s || !ident_start((unsigned char)s[0])) return false;
  for (const char *c = s; *c; c++)
    if (!ident_char((unsigned char)*c)) return false;
  return strcmp(s, "inf") != 0 && strcmp(s, "nan") != 0 && strcmp(s, "_") != 0;
}

void kiln_gtext_quote(kiln_strbuf *b, const char *s, size_t n) {
  kiln_strbuf_append(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = c == '"'    ? "\\\""
                      : c == '\\' ? "\\\\"
                      : c == '\n' ? "\\n"
                      : c == '\t' ? "\\t"
                      : c == '\r' ? "\\r"
                                  : NULL;
    if (esc) kiln_strbuf_append(b, esc, 2);
    else if (c < 0x20 || c >= 0x7f) kiln_strbuf_printf(b, "\\x%02x", c);
    else kiln_strbuf_append(b, (const char *)&s[i], 1);
  }
  kiln_strbuf_append(b, "\"", 1);
}

void kiln_gtext_ident(kiln_strbuf *b, const char *s) {
  if (!s) s = "";
  if (kiln_gtext_is_ident(s)) kiln_strbuf_append(b, s, strlen(s));
  else kiln_gtext_quote(b, s, strlen(s));
}

void kiln_gtext_name(kiln_strbuf *b, char sigil, const char *s) {
  if (!s) s = "";
  bool bare = s[0] != 0;
  for (const char *c = s; *c && bare; c++) bare = name_char((unsigned char)*c);
  kiln_strbuf_append(b, &sigil, 1);
  if (bare) kiln_strbuf_append(b, s, strlen(s));
  else kiln_gtext_quote(b, s, strlen(s));
}

/* ---- exact number text ---- */
static uint64_t raw_bits(kiln_dtype t, const void *p, size_t i) {
  switch (kiln_dtype_size(t)) {
  case 1: return ((const uint8_t *)p)[i];
  case 2: return ((const uint16_t *)p)[i];
  case 4: return ((const uint32_t *)p)[i];
  case 8: return ((const uint64_t *)p)[i];
  default: return 0;
  }
}

static void set_raw_bits(kiln_dtype t, void *p, size_t i, uint64_t v) {
  switch (kiln_dtype_size(t)) {
  case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
  case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case 8: ((uint64_t *)p)[i] = v; break;
  default: break;
  }
}

/* Rounds v once to dtype t (no saturation, so inf stays inf where the format has it). */
static void store_double(kiln_dtype t, void *p, size_t i, double v) {
  switch (t) {
  case KILN_F32: ((float *)p)[i] = (float)v; break;
  case KILN_F64: ((double *)p)[i] = v; break;
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ:
  case KILN_F8E8M0: ((uint8_t *)p)[i] = kiln_f64_to_f8(t, v, false); break;
  case KILN_F4E2M1: ((uint8_t *)p)[i] = kiln_f64_to_f4e2m1(v, false); break;
  default: kiln_store_f64(t, p, i, v); break;
  }
}

static double load_double(kiln_dtype t, const void *p, size_t i) {
  if (t == KILN_F32) return ((const float *)p)[i];
  if (t == KILN_F64) return ((const double *)p)[i];
  return kiln_load_f64(t, p, i);
}

static uint64_t canonical_nan(kiln_dtype t, bool neg) {
  uint64_t tmp = 0;
  store_double(t, &tmp, 0, neg ? -NAN : NAN);
  return raw_bits(t, &tmp, 0);
}

/* Parses a hexadecimal bit pattern (after "nan:0x") that must fit in `bits` bits. */
static bool parse_nan_bits(const char *s, size_t n, int bits, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0) return false;
  for (size_t k = 0; k < n; k++) {
    if (!is_hex(s[k]) || v >> 60) return false;
    v = v * 16 + (uint64_t)hex_val(s[k]);
  }
  if (bits < 64 && v >> bits) return false;
  *out = v;
  return true;
}

bool kiln_gtext_store_float(kiln_dtype t, const char *text, size_t len, void *data, size_t i) {
  if (!kiln_dtype_is_float(t) || len == 0) return false;
  char small[64], *buf = len < sizeof small ? small : kiln_xmalloc(len + 1), *end;
  memcpy(buf, text, len);
  buf[len] = 0;
  const char *s = buf + (buf[0] == '+' || buf[0] == '-');
  bool neg = buf[0] == '-', ok = true;
  uint64_t bits;
  if (!strcmp(s, "inf")) {
    store_double(t, data, i, neg ? -INFINITY : INFINITY);
  } else if (!strcmp(s, "nan")) {
    store_double(t, data, i, neg ? -NAN : NAN);
  } else if (s == buf && !strncmp(s, "nan:0", 5) && (s[5] | 0x20) == 'x') {
    ok = parse_nan_bits(s + 6, strlen(s + 6), kiln_dtype_bits(t), &bits);
    if (ok) set_raw_bits(t, data, i, bits);
  } else if (!(is_digit(*s) || *s == '.')) {
    ok = false; /* strtod also reads "infinity", "nan(...)" and blanks */
  } else if (t == KILN_F32) {
    float f = strtof(buf, &end);
    if ((ok = end == buf + len)) ((float *)data)[i] = f;
  } else {
    double d = strtod(buf, &end);
    if ((ok = end == buf + len)) store_double(t, data, i, d);
  }
  if (buf != small) free(buf);
  return ok;
}

static bool round_trips(kiln_dtype t, const char *text, uint64_t bits) {
  uint64_t tmp = 0;
  return kiln_gtext_store_float(t, text, strlen(text), &tmp, 0) && raw_bits(t, &tmp, 0) == bits;
}

void kiln_gtext_format_float(kiln_strbuf *b, kiln_dtype t, const void *data, size_t i) {
  double v = load_double(t, data, i);
  uint64_t bits = raw_bits(t, data, i);
  if (isnan(v)) {
    if (bits == canonical_nan(t, false)) kiln_strbuf_printf(b, "nan");
    else if (bits == canonical_nan(t, true)) kiln_strbuf_printf(b, "-nan");
    else
      kiln_strbuf_printf(b, "nan:0x%0*llx", (kiln_dtype_bits(t) + 3) / 4, (unsigned long long)bits);
    return;
  }
  if (isinf(v)) {
    kiln_strbuf_printf(b, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[512]; /* the compiler cannot see that %.17g needs at most 24 bytes */
  if (v == floor(v) && fabs(v) < 1e15) { /* integers read better without an exponent */
    snprintf(buf, sizeof buf, "%.0f", v);
    if (round_trips(t, buf, bits)) {
      kiln_strbuf_printf(b, "%s", buf);
      return;
    }
  }
  /* The shortest %.Ng that reads back exactly; more digits never hurt, so bisect on N.
   * 9 digits always suffice for f32 and 17 for anything that converts exactly to double. */
  int lo = 1, hi = t == KILN_F32 ? 9 : 17;
  char best[sizeof buf];
  snprintf(best, sizeof best, "%.*g", hi, v);
  if (t != KILN_F32 && !round_trips(t, best, bits)) {
    /* Only a format whose rounding is not injective on its own values gets here. */
    kiln_strbuf_printf(b, "nan:0x%0*llx", (kiln_dtype_bits(t) + 3) / 4, (unsigned long long)bits);
    return;
  }
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    snprintf(buf, sizeof buf, "%.*g", mid, v);
    if (round_trips(t, buf, bits)) {
      hi = mid;
      strcpy(best, buf);
    } else {
      lo = mid + 1;
    }
  }
  kiln_strbuf_append(b, best, strlen(best));
}

void kiln_gtext_format_int(kiln_strbuf *b, kiln_dtype t, const void *data, size_t i) {
  if (t == KILN_BOOL) {
    uint8_t v = ((const uint8_t *)data)[i];
    if (v <= 1) kiln_strbuf_printf(b, v ? "true" : "false");
    else kiln_strbuf_printf(b, "%u", v);
  } else if (t == KILN_U64) {
    kiln_strbuf_printf(b, "%llu", (unsigned long long)((const uint64_t *)data)[i]);
  } else {
    kiln_strbuf_printf(b, "%lld", (long long)kiln_load_i64(t, data, i));
  }
}

/* Parses [+-]?digits into a magnitude and a sign; false on overflow of uint64. */
static bool parse_mag(const char *s, size_t n, bool *neg, uint64_t *mag) {
  *neg = n && s[0] == '-';
  size_t k = n && (s[0] == '-' || s[0] == '+');
  if (k == n) return false;
  uint64_t v = 0;
  for (; k < n; k++) {
    if (!is_digit(s[k])) return false;
    uint64_t d = (uint64_t)(s[k] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *mag = v;
  return true;
}

bool kiln_gtext_parse_i64(const char *text, size_t len, int64_t *out) {
  bool neg;
  uint64_t m;
  if (!parse_mag(text, len, &neg, &m)) return false;
  if (neg ? m > (uint64_t)INT64_MAX + 1 : m > (uint64_t)INT64_MAX) return false;
  *out = neg ? (int64_t)(0 - m) : (int64_t)m;
  return true;
}

/* Inclusive range of the integer dtypes other than u64. */
static void int_range(kiln_dtype t, int64_t *lo, int64_t *hi) {
  int bits = t == KILN_BOOL ? 8 : kiln_dtype_bits(t);
  bool sgn = kiln_dtype_class_of(t) == KILN_CLASS_SINT;
  if (bits >= 64) {
    *lo = INT64_MIN;
    *hi = INT64_MAX;
  } else if (sgn) {
    *lo = -((int64_t)1 << (bits - 1));
    *hi = ((int64_t)1 << (bits - 1)) - 1;
  } else {
    *lo = 0;
    *hi = ((int64_t)1 << bits) - 1;
  }
}

bool kiln_gtext_store_int(kiln_dtype t, const char *text, size_t len, void *data, size_t i,
                          const char **why) {
  bool neg;
  uint64_t m;
  *why = "malformed integer";
  if (!parse_mag(text, len, &neg, &m)) {
    if (len && is_digit(text[len - 1])) *why = "integer out of range";
    return false;
  }
  *why = "integer out of range for the element type";
  if (t == KILN_U64) {
    if (neg && m) return false;
    ((uint64_t *)data)[i] = m;
    return true;
  }
  int64_t v, lo, hi;
  if (!kiln_gtext_parse_i64(text, len, &v)) return false;
  int_range(t, &lo, &hi);
  if (v < lo || v > hi) return false;
  if (t == KILN_BOOL) ((uint8_t *)data)[i] = (uint8_t)v;
  else kiln_store_i64(t, data, i, v);
  return true;
}
