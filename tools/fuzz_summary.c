/* The campaign summary as data: JSON writer, a reader for exactly that format, merge, print.
 * See fuzz_summary.h for the format. */
#include "fuzz_summary.h"

#include <stdlib.h>
#include <string.h>

#include "base/edges.h"
#include "cli.h"

/* ---- building ---- */
void kiln_fuzz_summary_add_cell(kiln_fuzz_summary *s, const char *key, int64_t count) {
  int64_t k;
  if (s->cell_index_.len != (size_t)s->cells.len) { /* cells pushed directly: index them */
    kiln_strmap_free(&s->cell_index_);
    for (int i = 0; i < s->cells.len; i++)
      kiln_strmap_put(&s->cell_index_, s->cells.data[i].key, i);
  }
  if (kiln_strmap_get(&s->cell_index_, key, &k)) {
    s->cells.data[k].count += count;
    return;
  }
  kiln_strmap_put(&s->cell_index_, key, s->cells.len);
  kiln_fuzz_cell c = {kiln_xstrdup(key), count};
  kiln_vec_push(&s->cells, c);
}

void kiln_fuzz_summary_add_failure(kiln_fuzz_summary *s, const char *sig, int64_t count,
                                   const char *dir, int64_t first_graph, const char *origin) {
  for (int i = 0; i < s->failures.len; i++) {
    kiln_fuzz_failure *f = &s->failures.data[i];
    if (strcmp(f->signature, sig)) continue;
    f->count += count;
    if (first_graph < f->first_graph) {
      free(f->dir), free(f->origin);
      f->dir = kiln_xstrdup(dir);
      f->origin = origin ? kiln_xstrdup(origin) : NULL;
      f->first_graph = first_graph;
    }
    return;
  }
  kiln_fuzz_failure f = {kiln_xstrdup(sig), count, kiln_xstrdup(dir), first_graph,
                         origin ? kiln_xstrdup(origin) : NULL};
  kiln_vec_push(&s->failures, f);
}

void kiln_fuzz_summary_free(kiln_fuzz_summary *s) {
  for (int i = 0; i < s->failures.len; i++) {
    free(s->failures.data[i].signature);
    free(s->failures.data[i].dir);
    free(s->failures.data[i].origin);
  }
  for (int i = 0; i < s->cells.len; i++) free(s->cells.data[i].key);
  kiln_vec_free(&s->failures);
  kiln_vec_free(&s->cells);
  kiln_vec_free(&s->parts);
  kiln_strmap_free(&s->cell_index_);
  free(s->edges);
  memset(s, 0, sizeof *s);
}

/* ---- writing ---- */
static void put_str(kiln_strbuf *b, const char *s) {
  kiln_strbuf_append(b, "\"", 1);
  kiln_esc_json(b, s);
  kiln_strbuf_append(b, "\"", 1);
}

static void put_edges(kiln_strbuf *b, const uint8_t *e) {
  if (!e) {
    kiln_strbuf_printf(b, "null");
    return;
  }
  kiln_strbuf_append(b, "\"", 1);
  for (int i = 0; i < KILN_EDGE_MAP; i++)
    if (e[i]) kiln_strbuf_printf(b, "%04x%02x", (unsigned)i, (unsigned)e[i]);
  kiln_strbuf_append(b, "\"", 1);
}

static void put_failures(kiln_strbuf *b, const kiln_fuzz_summary *s) {
  kiln_strbuf_printf(b, "  \"failures\": [");
  for (int i = 0; i < s->failures.len; i++) {
    const kiln_fuzz_failure *f = &s->failures.data[i];
    kiln_strbuf_printf(b, "%s\n    {\"signature\": ", i ? "," : "");
    put_str(b, f->signature);
    kiln_strbuf_printf(b, ", \"count\": %lld, \"dir\": ", (long long)f->count);
    put_str(b, f->dir);
    kiln_strbuf_printf(b, ", \"first_graph\": %lld}", (long long)f->first_graph);
  }
  kiln_strbuf_printf(b, "%s],\n", s->failures.len ? "\n  " : "");
}

static void put_cells(kiln_strbuf *b, const kiln_fuzz_summary *s) {
  kiln_strbuf_printf(b, "  \"cells\": {");
  for (int i = 0; i < s->cells.len; i++) {
    kiln_strbuf_printf(b, "%s\n    ", i ? "," : "");
    put_str(b, s->cells.data[i].key);
    kiln_strbuf_printf(b, ": %lld", (long long)s->cells.data[i].count);
  }
  kiln_strbuf_printf(b, "%s},\n", s->cells.len ? "\n  " : "");
}

kiln_status kiln_fuzz_summary_write(const char *path, const kiln_fuzz_summary *s) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b,
                     "{\n  \"format\": \"kiln-fuzz-summary\",\n  \"version\": 1,\n"
                     "  \"seed\": %llu,\n  \"shard\": %lld,\n  \"shards\": %lld,\n  \"parts\": [",
                     (unsigned long long)s->seed, (long long)s->shard, (long long)s->shards);
  for (int i = 0; i < s->parts.len; i++)
    kiln_strbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)s->parts.data[i]);
  kiln_strbuf_printf(&b,
                     "],\n  \"seconds\": %.3f,\n  \"graphs\": {\"tried\": %lld, \"valid\": %lld, "
                     "\"invalid\": %lld, \"no_inputs\": %lld, \"runner_errors\": %lld, "
                     "\"compiled\": %lld},\n",
                     s->seconds, (long long)s->tried, (long long)s->valid, (long long)s->invalid,
                     (long long)s->no_inputs, (long long)s->runner_errors, (long long)s->compiled);
  put_failures(&b, s);
  put_cells(&b, s);
  kiln_strbuf_printf(&b, "  \"edges\": ");
  put_edges(&b, s->edges);
  kiln_strbuf_printf(&b, "\n}\n");
  kiln_status st = kiln_write_file(path, b.data, b.len);
  kiln_strbuf_free(&b);
  return st;
}

/* ---- reading: a small JSON reader for exactly the format above ---- */
typedef struct jreader {
  const char *path, *start, *p, *end;
} jreader;

/* "'PATH': byte N: what (a malformed or truncated kiln fuzz summary)". */
static kiln_status jerr(const jreader *r, const char *what) {
  return kiln_invalid("'%s': byte %zu: %s (a malformed or truncated kiln fuzz summary)", r->path,
                      (size_t)(r->p - r->start), what);
}

static void jws(jreader *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

/* True (and consumed) when the next character is c. */
static bool jeat(jreader *r, char c) {
  jws(r);
  if (r->p < r->end && *r->p == c) return r->p++, true;
  return false;
}

static kiln_status jexpect(jreader *r, char c) {
  char what[32];
  snprintf(what, sizeof what, "expected '%c'", c);
  return jeat(r, c) ? KILN_OK : jerr(r, what);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool jhex4(jreader *r, unsigned *out) {
  if (r->end - r->p < 4) return false;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(r->p[i]);
    if (h < 0) return false;
    v = v * 16 + (unsigned)h;
  }
  r->p += 4;
  *out = v;
  return true;
}

static void put_utf8(kiln_strbuf *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 63)), n = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 63)),
    u[2] = (char)(0x80 | (cp & 63)), n = 3;
  else
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 63)),
    u[2] = (char)(0x80 | ((cp >> 6) & 63)), u[3] = (char)(0x80 | (cp & 63)), n = 4;
  kiln_strbuf_append(b, u, n);
}

/* A \u escape of four hex digits (followed by its low surrogate when the first is a high
 * surrogate) written as UTF-8; the code point 0 is refused (it would cut the C string). */
static kiln_status junicode(jreader *r, kiln_strbuf *b) {
  unsigned cp, lo;
  if (!jhex4(r, &cp)) return jerr(r, "bad \\u escape");
  if (cp >= 0xD800 && cp < 0xDC00) {
    if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') return jerr(r, "lone surrogate");
    r->p += 2;
    if (!jhex4(r, &lo) || lo < 0xDC00 || lo >= 0xE000) return jerr(r, "bad surrogate pair");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (cp >= 0xDC00 && cp < 0xE000) return jerr(r, "lone surrogate");
  if (cp == 0) return jerr(r, "\\u0000 in a string");
  put_utf8(b, cp);
  return KILN_OK;
}

static kiln_status jescape(jreader *r, kiln_strbuf *b) {
  if (r->p >= r->end) return jerr(r, "unterminated string");
  char c = *r->p++;
  const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
  const char *k = c ? strchr(from, c) : NULL;
  if (k) {
    kiln_strbuf_append(b, to + (k - from), 1);
    return KILN_OK;
  }
  if (c == 'u') return junicode(r, b);
  r->p--;
  return jerr(r, "bad escape in a string");
}

/* A string into *out (malloc'd). */
static kiln_status jstring(jreader *r, char **out) {
  KILN_TRY(jexpect(r, '"'));
  kiln_strbuf b = {0};
  kiln_strbuf_append(&b, "", 0);
  kiln_status st = KILN_OK;
  while (!st) {
    if (r->p >= r->end) st = jerr(r, "unterminated string");
    else if (*r->p == '"') break;
    else if ((unsigned char)*r->p < 0x20) st = jerr(r, "control character in a string");
    else if (*r->p == '\\') r->p++, st = jescape(r, &b);
    else kiln_strbuf_append(&b, r->p++, 1);
  }
  if (st) {
    kiln_strbuf_free(&b);
    return st;
  }
  r->p++;
  *out = b.data ? b.data : kiln_xstrdup("");
  return KILN_OK;
}

/* The text of a number (the characters a JSON number may hold) into buf. */
static kiln_status jnumber_text(jreader *r, char *buf, size_t n) {
  jws(r);
  size_t k = 0;
  while (r->p < r->end && strchr("+-.0123456789eE", *r->p) && *r->p) {
    if (k + 1 >= n) return jerr(r, "number too long");
    buf[k++] = *r->p++;
  }
  buf[k] = 0;
  return k ? KILN_OK : jerr(r, "expected a number");
}

static kiln_status jint(jreader *r, int64_t lo, int64_t hi, const char *what, int64_t *out) {
  char buf[40];
  const char *at = r->p;
  KILN_TRY(jnumber_text(r, buf, sizeof buf));
  kiln_status st = kiln_parse_i64(buf, lo, hi, what, out);
  if (!st) return KILN_OK;
  r->p = at;
  kiln_status e = jerr(r, kiln_status_message(st));
  kiln_status_free(st);
  return e;
}

static kiln_status jf64(jreader *r, const char *what, double *out) {
  char buf[64];
  const char *at = r->p;
  KILN_TRY(jnumber_text(r, buf, sizeof buf));
  kiln_status st = kiln_parse_f64(buf, 0, 1e18, what, out);
  if (!st) return KILN_OK;
  r->p = at;
  kiln_status e = jerr(r, kiln_status_message(st));
  kiln_status_free(st);
  return e;
}

static bool jword(jreader *r, const char *w) {
  jws(r);
  size_t n = strlen(w);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n)) return false;
  r->p += n;
  return true;
}

/* Skips any value (an unknown key of a later version), nested at most 32 deep. */
static kiln_status jskip(jreader *r, int depth) {
  if (depth > 32) return jerr(r, "nested too deep");
  jws(r);
  if (r->p >= r->end) return jerr(r, "expected a value");
  char c = *r->p;
  if (c == '"') {
    char *s;
    KILN_TRY(jstring(r, &s));
    free(s);
    return KILN_OK;
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    r->p++;
    if (jeat(r, close)) return KILN_OK;
    do {
      if (c == '{') {
        char *k;
        KILN_TRY(jstring(r, &k));
        free(k);
        KILN_TRY(jexpect(r, ':'));
      }
      KILN_TRY(jskip(r, depth + 1));
    } while (jeat(r, ','));
    return jexpect(r, close);
  }
  if (jword(r, "true") || jword(r, "false") || jword(r, "null")) return KILN_OK;
  char buf[64];
  return jnumber_text(r, buf, sizeof buf);
}

/* { "key": value, ... }: calls field(r, key, ctx) for each key; field consumes the value. */
typedef kiln_status (*jfield_fn)(jreader *r, const char *key, void *ctx);
static kiln_status jobject(jreader *r, jfield_fn field, void *ctx) {
  KILN_TRY(jexpect(r, '{'));
  if (jeat(r, '}')) return KILN_OK;
  do {
    char *key;
    KILN_TRY(jstring(r, &key));
    kiln_status st = jexpect(r, ':');
    if (!st) st = field(r, key, ctx);
    free(key);
    KILN_TRY(st);
  } while (jeat(r, ','));
  return jexpect(r, '}');
}

/* ---- the fields of the format ---- */
typedef struct read_ctx {
  kiln_fuzz_summary *s;
  const char *origin;
  unsigned seen; /* bit per required key */
  kiln_fuzz_failure f;
} read_ctx;

enum {
  SEEN_FORMAT = 1,
  SEEN_VERSION = 2,
  SEEN_SEED = 4,
  SEEN_SHARD = 8,
  SEEN_SHARDS = 16,
  SEEN_GRAPHS = 32,
  SEEN_ALL = 63
};

static kiln_status graphs_field(jreader *r, const char *key, void *ctx) {
  kiln_fuzz_summary *s = ((read_ctx *)ctx)->s;
  static const char *const names[] = {"tried",     "valid",         "invalid",
                                      "no_inputs", "runner_errors", "compiled"};
  int64_t *slots[] = {&s->tried,     &s->valid,         &s->invalid,
                      &s->no_inputs, &s->runner_errors, &s->compiled};
  for (int i = 0; i < 6; i++)
    if (!strcmp(key, names[i])) return jint(r, 0, INT64_MAX / 4, names[i], slots[i]);
  return jskip(r, 1);
}

/* A case folder name: one plain component ([A-Za-z0-9_-.], not starting with '.'), so that a
 * hostile file cannot make the merge copy from or into another folder. */
static bool plain_name(const char *s) {
  if (!*s || *s == '.' || strlen(s) > 200) return false;
  for (; *s; s++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.", *s))
      return false;
  return true;
}

static kiln_status failure_field(jreader *r, const char *key, void *ctx) {
  kiln_fuzz_failure *f = &((read_ctx *)ctx)->f;
  if (!strcmp(key, "signature") && !f->signature) return jstring(r, &f->signature);
  if (!strcmp(key, "dir") && !f->dir) {
    const char *at = r->p;
    KILN_TRY(jstring(r, &f->dir));
    if (!plain_name(f->dir)) return r->p = at, jerr(r, "dir is not a plain folder name");
    return KILN_OK;
  }
  if (!strcmp(key, "count")) return jint(r, 1, INT64_MAX / 4, "count", &f->count);
  if (!strcmp(key, "first_graph")) return jint(r, 0, INT64_MAX / 4, "first_graph", &f->first_graph);
  return jskip(r, 1);
}

static kiln_status read_failures(jreader *r, read_ctx *c) {
  KILN_TRY(jexpect(r, '['));
  if (jeat(r, ']')) return KILN_OK;
  do {
    c->f = (kiln_fuzz_failure){.first_graph = -1};
    kiln_status st = jobject(r, failure_field, c);
    if (!st && (!c->f.signature || !c->f.dir || !c->f.count || c->f.first_graph < 0))
      st = jerr(r, "a failure lacks signature, count, dir or first_graph");
    if (!st)
      kiln_fuzz_summary_add_failure(c->s, c->f.signature, c->f.count, c->f.dir, c->f.first_graph,
                                    c->origin);
    free(c->f.signature), free(c->f.dir);
    KILN_TRY(st);
  } while (jeat(r, ','));
  return jexpect(r, ']');
}

static kiln_status cell_field(jreader *r, const char *key, void *ctx) {
  int64_t n;
  KILN_TRY(jint(r, 0, INT64_MAX / 4, "cell count", &n));
  kiln_fuzz_summary_add_cell(((read_ctx *)ctx)->s, key, n);
  return KILN_OK;
}

static kiln_status read_parts(jreader *r, kiln_fuzz_summary *s) {
  KILN_TRY(jexpect(r, '['));
  if (jeat(r, ']')) return KILN_OK;
  do {
    int64_t i;
    KILN_TRY(jint(r, 0, 1000000, "part", &i));
    if (s->parts.len && i <= s->parts.data[s->parts.len - 1])
      return jerr(r, "parts are not increasing");
    kiln_vec_push(&s->parts, i);
  } while (jeat(r, ','));
  return jexpect(r, ']');
}

/* "IIIIVV..." (see fuzz_summary.h) or null. */
static kiln_status read_edges(jreader *r, kiln_fuzz_summary *s) {
  if (jword(r, "null")) return KILN_OK;
  const char *at = (jws(r), r->p);
  char *text;
  KILN_TRY(jstring(r, &text));
  size_t n = strlen(text);
  kiln_status st = n % 6 ? (r->p = at, jerr(r, "edges: length is not a multiple of 6")) : KILN_OK;
  s->edges = kiln_xcalloc(KILN_EDGE_MAP, 1);
  long last = -1;
  for (size_t k = 0; !st && k < n; k += 6) {
    long v[6];
    bool digits = true;
    for (int d = 0; d < 6; d++) v[d] = hexval(text[k + d]), digits = digits && v[d] >= 0;
    long idx = digits ? v[0] << 12 | v[1] << 8 | v[2] << 4 | v[3] : -1; /* no shift of -1 */
    long cnt = digits ? v[4] << 4 | v[5] : 0;
    if (!digits || idx <= last || cnt == 0)
      r->p = at, st = jerr(r, "edges: bad entry (hex digits, increasing index, count > 0)");
    else s->edges[idx] = (uint8_t)cnt, last = idx;
  }
  free(text);
  return st;
}

static kiln_status top_field(jreader *r, const char *key, void *ctx) {
  read_ctx *c = ctx;
  kiln_fuzz_summary *s = c->s;
  int64_t v;
  if (!strcmp(key, "format")) {
    char *f;
    const char *at = (jws(r), r->p);
    KILN_TRY(jstring(r, &f));
    bool ok = !strcmp(f, "kiln-fuzz-summary");
    free(f);
    c->seen |= SEEN_FORMAT;
    return ok ? KILN_OK : (r->p = at, jerr(r, "format is not kiln-fuzz-summary"));
  }
  if (!strcmp(key, "version")) {
    c->seen |= SEEN_VERSION;
    return jint(r, 1, 1, "version", &v);
  }
  if (!strcmp(key, "seed")) {
    c->seen |= SEEN_SEED;
    KILN_TRY(jint(r, 0, INT64_MAX, "seed", &v));
    s->seed = (uint64_t)v;
    return KILN_OK;
  }
  if (!strcmp(key, "shard")) return c->seen |= SEEN_SHARD, jint(r, -1, 999999, "shard", &s->shard);
  if (!strcmp(key, "shards"))
    return c->seen |= SEEN_SHARDS, jint(r, 1, 1000000, "shards", &s->shards);
  if (!strcmp(key, "parts")) return read_parts(r, s);
  if (!strcmp(key, "seconds")) return jf64(r, "seconds", &s->seconds);
  if (!strcmp(key, "graphs")) return c->seen |= SEEN_GRAPHS, jobject(r, graphs_field, c);
  if (!strcmp(key, "failures")) return read_failures(r, c);
  if (!strcmp(key, "cells")) return jobject(r, cell_field, c);
  if (!strcmp(key, "edges") && !s->edges) return read_edges(r, s);
  return jskip(r, 1);
}

/* The facts no single field shows: shard within shards, parts within shards. */
static kiln_status check_summary(jreader *r, const read_ctx *c) {
  const kiln_fuzz_summary *s = c->s;
  if ((c->seen & SEEN_ALL) != SEEN_ALL)
    return jerr(r, "missing one of format, version, seed, shard, shards, graphs");
  if (s->shard >= s->shards) return jerr(r, "shard is not below shards");
  if (s->shard < 0 && !s->parts.len) return jerr(r, "a merged summary (shard -1) lists no parts");
  for (int i = 0; i < s->parts.len; i++)
    if (s->parts.data[i] >= s->shards) return jerr(r, "a part is not below shards");
  return KILN_OK;
}

static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kiln_xstrdup(".");
  if (slash == path) return kiln_xstrdup("/");
  char *d = kiln_xstrdup(path);
  d[slash - path] = 0;
  return d;
}

kiln_status kiln_fuzz_summary_read(const char *path, kiln_fuzz_summary *s) {
  memset(s, 0, sizeof *s);
  char *data;
  size_t len;
  KILN_TRY(kiln_read_file(path, &data, &len));
  jreader r = {path, data, data, data + len};
  read_ctx c = {.s = s, .origin = folder_of(path)};
  kiln_status st = jobject(&r, top_field, &c);
  if (!st) st = check_summary(&r, &c);
  if (!st && (jws(&r), r.p != r.end)) st = jerr(&r, "text after the summary");
  if (!st && !s->parts.len) kiln_vec_push(&s->parts, s->shard);
  free((char *)c.origin);
  free(data);
  if (st) kiln_fuzz_summary_free(s);
  return st;
}

/* ---- merging ---- */
static kiln_status add_count(int64_t *dst, int64_t v, const char *what) {
  if (kiln_add_overflow_i64(*dst, v, dst))
    return kiln_invalid("merging fuzz summaries: the %s count overflows", what);
  return KILN_OK;
}

/* dst's parts united with src's; a shard in both is refused (it would count twice). */
static kiln_status merge_parts(kiln_fuzz_summary *dst, const kiln_fuzz_summary *src) {
  for (int k = 0; k < src->parts.len; k++) {
    int64_t p = src->parts.data[k];
    int i = 0;
    while (i < dst->parts.len && dst->parts.data[i] < p) i++;
    if (i < dst->parts.len && dst->parts.data[i] == p)
      return kiln_invalid("merging fuzz summaries: shard %lld of %lld appears twice", (long long)p,
                          (long long)dst->shards);
    kiln_vec_push(&dst->parts, 0);
    memmove(&dst->parts.data[i + 1], &dst->parts.data[i],
            (size_t)(dst->parts.len - 1 - i) * sizeof *dst->parts.data);
    dst->parts.data[i] = p;
  }
  dst->shard = dst->parts.len == 1 ? dst->parts.data[0] : -1;
  return KILN_OK;
}

/* Failures in the order the campaign met them (first graph), whatever the order of the shards. */
static int cmp_first_graph(const void *a, const void *b) {
  int64_t x = ((const kiln_fuzz_failure *)a)->first_graph;
  int64_t y = ((const kiln_fuzz_failure *)b)->first_graph;
  return (x > y) - (x < y);
}

kiln_status kiln_fuzz_summary_merge(kiln_fuzz_summary *dst, const kiln_fuzz_summary *src) {
  if (dst->shards == 0) dst->seed = src->seed, dst->shards = src->shards;
  else if (dst->seed != src->seed || dst->shards != src->shards)
    return kiln_invalid("merging fuzz summaries: seed %llu with %lld shards is another campaign "
                        "than seed %llu with %lld shards",
                        (unsigned long long)src->seed, (long long)src->shards,
                        (unsigned long long)dst->seed, (long long)dst->shards);
  KILN_TRY(merge_parts(dst, src));
  dst->seconds += src->seconds;
  KILN_TRY(add_count(&dst->tried, src->tried, "tried"));
  KILN_TRY(add_count(&dst->valid, src->valid, "valid"));
  KILN_TRY(add_count(&dst->invalid, src->invalid, "invalid"));
  KILN_TRY(add_count(&dst->no_inputs, src->no_inputs, "no_inputs"));
  KILN_TRY(add_count(&dst->runner_errors, src->runner_errors, "runner_errors"));
  KILN_TRY(add_count(&dst->compiled, src->compiled, "compiled"));
  for (int i = 0; i < src->failures.len; i++) {
    const kiln_fuzz_failure *f = &src->failures.data[i];
    kiln_fuzz_summary_add_failure(dst, f->signature, f->count, f->dir, f->first_graph, f->origin);
  }
  if (dst->failures.len > 1)
    qsort(dst->failures.data, (size_t)dst->failures.len, sizeof *dst->failures.data,
          cmp_first_graph);
  for (int i = 0; i < src->cells.len; i++)
    kiln_fuzz_summary_add_cell(dst, src->cells.data[i].key, src->cells.data[i].count);
  if (src->edges) {
    if (!dst->edges) dst->edges = kiln_xcalloc(KILN_EDGE_MAP, 1);
    for (int i = 0; i < KILN_EDGE_MAP; i++)
      if (src->edges[i] > dst->edges[i]) dst->edges[i] = src->edges[i];
  }
  return KILN_OK;
}

/* ---- printing ---- */
static void print_shards(FILE *f, const kiln_fuzz_summary *s) {
  if (s->shards == 1) {
    fprintf(f, "fuzz (seed %llu)", (unsigned long long)s->seed);
    return;
  }
  fprintf(f, "fuzz: shard%s", s->parts.len == 1 ? "" : "s");
  for (int i = 0; i < s->parts.len; i++)
    fprintf(f, "%s%lld", i ? "," : " ", (long long)s->parts.data[i]);
  fprintf(f, " of %lld (seed %llu)", (long long)s->shards, (unsigned long long)s->seed);
}

void kiln_fuzz_summary_print(FILE *f, const kiln_fuzz_summary *s) {
  print_shards(f, s);
  fprintf(f,
          ": %lld graphs in %.1f s%s: %lld valid, %lld invalid, %lld dropped (no finite, stable "
          "inputs), %lld runner errors\n",
          (long long)s->tried, s->seconds, s->parts.len > 1 ? " (summed over the shards)" : "",
          (long long)s->valid, (long long)s->invalid, (long long)s->no_inputs,
          (long long)s->runner_errors);
  if (s->parts.len < s->shards)
    fprintf(f, "shards missing: %lld of %lld (the campaign is incomplete)\n",
            (long long)(s->shards - s->parts.len), (long long)s->shards);
  fprintf(f, "cpu layer (compiled C) on %lld graphs\n", (long long)s->compiled);
  int64_t hits = 0;
  for (int i = 0; i < s->cells.len; i++) hits += s->cells.data[i].count;
  fprintf(f, "coverage cells reached: %d (%lld hits)\n", s->cells.len, (long long)hits);
  if (s->edges) {
    int n = 0;
    for (int i = 0; i < KILN_EDGE_MAP; i++) n += s->edges[i] != 0;
    fprintf(f, "compiler edges reached: %d of %d map entries\n", n, KILN_EDGE_MAP);
  } else fprintf(f, "compiler edges: not recorded (not a KILN_COVERAGE build)\n");
  fprintf(f, "failures: %d signatures\n", s->failures.len);
  kiln_strbuf b = {0};
  for (int i = 0; i < s->failures.len; i++) {
    const kiln_fuzz_failure *x = &s->failures.data[i];
    fprintf(f, "  %s  x%lld", kiln_cli_show(&b, x->signature), (long long)x->count);
    fprintf(f, "  %s%s%s (first: graph %lld)\n", x->origin ? kiln_cli_show(&b, x->origin) : "",
            x->origin ? "/" : "", x->dir, (long long)x->first_graph);
  }
  kiln_strbuf_free(&b);
}
