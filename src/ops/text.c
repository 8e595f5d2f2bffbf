/* Ops of the 'text' family (see src/graph/ops.def), strings: StringConcat (20), StringSplit (20),
 * StringNormalizer (10), RegexFullMatch (20, RE2 syntax via text_regex.c) and TfIdfVectorizer (9,
 * text_tfidf.c).
 *
 * Strings are NUL-terminated UTF-8 (embedded NULs are not representable).
 * StringNormalizer treats every locale as en_US: case changes map ASCII, Latin-1,
 * Latin Extended-A, Greek and Cyrillic letters (one code point to one code point);
 * stop words are whole elements, compared after simple case folding when
 * is_case_sensitive is 0. StringSplit without a delimiter splits on runs of ASCII
 * whitespace like Python's str.split() (a maxsplit remainder keeps its trailing
 * whitespace). */
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

static kiln_status need_strings(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what) {
  if (t->dtype != KILN_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be a string tensor", what);
  return KILN_OK;
}

static const char *str_at(const kiln_tensor *t, int64_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

static void str_set(kiln_tensor *t, int64_t i, char *owned) {
  char **d = t->data;
  free(d[i]);
  d[i] = owned;
}

static char *str_ndup(const char *s, size_t n) {
  char *r = kiln_xmalloc(n + 1);
  memcpy(r, s, n);
  r[n] = 0;
  return r;
}

/* ---- StringConcat: elementwise with numpy broadcasting ---- */
static kiln_status eval_string_concat(kiln_eval_ctx *ctx) {
  const kiln_tensor *ts[2];
  KILN_TRY(kiln_eval_in_req(ctx, 0, &ts[0]));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &ts[1]));
  KILN_TRY(need_strings(ctx, ts[0], "X"));
  KILN_TRY(need_strings(ctx, ts[1], "Y"));
  int rank;
  int64_t dims[KILN_MAX_RANK], sa[KILN_MAX_RANK], sb[KILN_MAX_RANK], st[KILN_MAX_RANK];
  KILN_TRY(kiln_broadcast_shape(2, ts, &rank, dims));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_STRING, rank, dims, &y));
  kiln_broadcast_strides(ts[0], rank, dims, sa);
  kiln_broadcast_strides(ts[1], rank, dims, sb);
  kiln_strides(rank, dims, st);
  for (int64_t i = 0; i < y->numel; i++) {
    int64_t ia = 0, ib = 0;
    for (int k = 0; k < rank; k++) {
      int64_t c = (i / st[k]) % dims[k];
      ia += c * sa[k], ib += c * sb[k];
    }
    const char *a = str_at(ts[0], ia), *b = str_at(ts[1], ib);
    size_t la = strlen(a), lb = strlen(b);
    char *r = kiln_xmalloc(la + lb + 1);
    memcpy(r, a, la);
    memcpy(r + la, b, lb + 1);
    str_set(y, i, r);
  }
  return KILN_OK;
}

/* ---- StringSplit ---- */
static bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

typedef struct split_part {
  const char *p;
  size_t n;
} split_part;

/* Splits s into parts (caller frees *out); Python str.split semantics. */
static int64_t split_one(const char *s, const char *delim, int64_t maxsplit, split_part **out) {
  size_t cap = 8, n = 0, dl = strlen(delim);
  split_part *v = kiln_xmalloc(cap * sizeof *v);
  const char *p = s;
  for (;;) {
    if (n + 1 >= cap) v = kiln_xrealloc(v, (cap *= 2) * sizeof *v);
    bool last = maxsplit >= 0 && (int64_t)n >= maxsplit;
    if (dl) {
      const char *q = last ? NULL : strstr(p, delim);
      if (!q) {
        v[n++] = (split_part){p, strlen(p)};
        break;
      }
      v[n++] = (split_part){p, (size_t)(q - p)};
      p = q + dl;
    } else {
      while (*p && is_space(*p)) p++;
      if (!*p) break;
      if (last) {
        v[n++] = (split_part){p, strlen(p)};
        break;
      }
      const char *q = p;
      while (*q && !is_space(*q)) q++;
      v[n++] = (split_part){p, (size_t)(q - p)};
      p = q;
    }
  }
  *out = v;
  return (int64_t)n;
}

static kiln_status eval_string_split(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(need_strings(ctx, x, "X"));
  if (x->rank >= KILN_MAX_RANK)
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "input rank too large");
  const char *delim;
  int64_t maxsplit = -1;
  KILN_TRY(kiln_node_string(ctx->node, "delimiter", "", &delim));
  if (kiln_node_attr(ctx->node, "maxsplit"))
    KILN_TRY(kiln_node_int(ctx->node, "maxsplit", -1, &maxsplit));
  split_part **parts = kiln_xcalloc((size_t)x->numel + 1, sizeof *parts);
  int64_t *counts = kiln_xcalloc((size_t)x->numel + 1, sizeof(int64_t)), width = 0;
  for (int64_t i = 0; i < x->numel; i++) {
    counts[i] = split_one(str_at(x, i), delim, maxsplit, &parts[i]);
    width = counts[i] > width ? counts[i] : width;
  }
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, (size_t)x->rank * sizeof(int64_t));
  dims[x->rank] = width;
  kiln_tensor *y, *z;
  kiln_status st = kiln_eval_out(ctx, 0, KILN_STRING, x->rank + 1, dims, &y);
  if (!st) st = kiln_eval_out(ctx, 1, KILN_I64, x->rank, x->dims, &z);
  for (int64_t i = 0; !st && i < x->numel; i++) {
    for (int64_t k = 0; k < width; k++)
      str_set(y, i * width + k,
              k < counts[i] ? str_ndup(parts[i][k].p, parts[i][k].n) : kiln_xstrdup(""));
    ((int64_t *)z->data)[i] = counts[i];
  }
  for (int64_t i = 0; i < x->numel; i++) free(parts[i]);
  free(parts);
  free(counts);
  return st;
}

/* ---- case mapping of one code point (en_US) ---- */
static uint32_t cp_lower(uint32_t c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if ((c >= 0x391 && c <= 0x3AB && c != 0x3A2)) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && c % 2 == 0) return c + 1;
  if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && c % 2 == 1) return c + 1;
  if (c == 0x178) return 0xFF;
  return c;
}

static uint32_t cp_upper(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (((c >= 0x101 && c <= 0x137) || (c >= 0x14B && c <= 0x177)) && c % 2 == 1) return c - 1;
  if (((c >= 0x13A && c <= 0x148) || (c >= 0x17A && c <= 0x17E)) && c % 2 == 0) return c - 1;
  if (c == 0xFF) return 0x178;
  return c;
}

/* Re-encodes s with every code point mapped by f; invalid UTF-8 bytes pass through. */
static char *map_case(const char *s, uint32_t (*f)(uint32_t)) {
  size_t n = strlen(s), o = 0;
  char *r = kiln_xmalloc(2 * n + 1); /* mapped code points never need more than 2x */
  for (size_t i = 0; i < n;) {
    uint32_t c;
    size_t len = kiln_text_utf8_decode(s + i, n - i, &c);
    if (!len) {
      r[o++] = s[i++];
      continue;
    }
    o += kiln_text_utf8_encode(f(c), r + o);
    i += len;
  }
  r[o] = 0;
  return r;
}

typedef struct norm_args {
  int action; /* 0 none, 1 lower, 2 upper */
  bool case_sensitive;
  const kiln_attr *stops;
  char **folded; /* lowered stopwords when case-insensitive */
} norm_args;

static bool norm_is_stop(const norm_args *a, const char *s) {
  if (!a->stops) return false;
  char *low = a->case_sensitive ? NULL : map_case(s, cp_lower);
  bool hit = false;
  for (int i = 0; i < a->stops->n && !hit; i++)
    hit = !strcmp(a->case_sensitive ? a->stops->strings[i] : a->folded[i], low ? low : s);
  free(low);
  return hit;
}

static kiln_status norm_parse(kiln_eval_ctx *ctx, norm_args *a) {
  const char *act;
  int64_t cs;
  KILN_TRY(kiln_node_string(ctx->node, "case_change_action", "NONE", &act));
  if (!strcmp(act, "NONE")) a->action = 0;
  else if (!strcmp(act, "LOWER")) a->action = 1;
  else if (!strcmp(act, "UPPER")) a->action = 2;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown case_change_action '%s'", act);
  KILN_TRY(kiln_node_int(ctx->node, "is_case_sensitive", 0, &cs));
  a->case_sensitive = cs != 0;
  a->stops = kiln_node_attr(ctx->node, "stopwords");
  if (a->stops && a->stops->kind != KILN_ATTR_STRINGS)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "stopwords must be a list of strings");
  return KILN_OK;
}

static kiln_status eval_string_normalizer(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(need_strings(ctx, x, "X"));
  if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X must be [C] or [1, C]");
  norm_args a;
  memset(&a, 0, sizeof a);
  KILN_TRY(norm_parse(ctx, &a));
  int nstop = a.stops ? a.stops->n : 0;
  if (!a.case_sensitive && nstop) {
    a.folded = kiln_xcalloc((size_t)nstop, sizeof(char *));
    for (int i = 0; i < nstop; i++) a.folded[i] = map_case(a.stops->strings[i], cp_lower);
  }
  int64_t *keep = kiln_xmalloc((size_t)(x->numel + 1) * sizeof(int64_t)), nk = 0;
  for (int64_t i = 0; i < x->numel; i++)
    if (!norm_is_stop(&a, str_at(x, i))) keep[nk++] = i;
  for (int i = 0; a.folded && i < nstop; i++) free(a.folded[i]);
  free(a.folded);
  int64_t dims[2] = {1, nk ? nk : 1};
  kiln_tensor *y;
  kiln_status st = x->rank == 1 ? kiln_eval_out(ctx, 0, KILN_STRING, 1, dims + 1, &y)
                                : kiln_eval_out(ctx, 0, KILN_STRING, 2, dims, &y);
  for (int64_t i = 0; !st && i < y->numel; i++) {
    const char *s = nk ? str_at(x, keep[i]) : "";
    str_set(y, i,
            a.action == 0 ? kiln_xstrdup(s) : map_case(s, a.action == 1 ? cp_lower : cp_upper));
  }
  free(keep);
  return st;
}

/* ---- RegexFullMatch ---- */
static kiln_status eval_regex_full_match(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(need_strings(ctx, x, "X"));
  const char *pat;
  KILN_TRY(kiln_node_string(ctx->node, "pattern", NULL, &pat));
  if (!pat) return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute 'pattern' is required");
  kiln_text_regex *re;
  KILN_TRYF(kiln_text_regex_compile(pat, &re), "node '%s' pattern", ctx->node->name);
  kiln_tensor *y;
  kiln_status st = kiln_eval_out(ctx, 0, KILN_BOOL, x->rank, x->dims, &y);
  for (int64_t i = 0; !st && i < x->numel; i++)
    ((uint8_t *)y->data)[i] = kiln_text_regex_fullmatch(re, str_at(x, i));
  kiln_text_regex_free(re);
  return st;
}

/* ---- strings ---- */
static kiln_status infer_string_concat(kiln_infer_ctx *ctx) {
  kiln_type t;
  if (!tin(ctx, 0) || !tin(ctx, 1)) return KILN_OK;
  kiln_status st = kiln_infer_broadcast(ctx, 2, &t);
  if (st) { /* the kernel reports incompatible shapes with their values */
    kiln_status_free(st);
    return KILN_OK;
  }
  t.dtype = KILN_STRING;
  ctx->out[0] = t;
  return KILN_OK;
}

static kiln_status infer_string_split(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  if (!x || x->rank + 1 > KILN_MAX_RANK) return KILN_OK;
  kiln_dim dims[KILN_MAX_RANK];
  memcpy(dims, x->dims, (size_t)x->rank * sizeof(kiln_dim));
  dims[x->rank] = dunk();
  set_out(ctx, 0, KILN_STRING, x->rank + 1, dims);
  set_like(ctx, 1, KILN_I64, x);
  return KILN_OK;
}

static kiln_status infer_string_normalizer(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  if (!x || x->rank < 1 || x->rank > 2) return KILN_OK;
  kiln_dim dims[2] = {dval(1), dunk()};
  set_out(ctx, 0, KILN_STRING, x->rank, x->rank == 1 ? dims + 1 : dims);
  return KILN_OK;
}

static kiln_status infer_regex(kiln_infer_ctx *ctx) {
  set_like(ctx, 0, KILN_BOOL, tin(ctx, 0));
  return KILN_OK;
}

void kiln_ops_register_text(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_StringConcat, eval_string_concat, 2, 2, 1, 1);
  kiln_kern_set(table, KILN_OP_StringSplit, eval_string_split, 1, 1, 2, 2);
  kiln_kern_set(table, KILN_OP_StringNormalizer, eval_string_normalizer, 1, 1, 1, 1);
  kiln_kern_set(table, KILN_OP_RegexFullMatch, eval_regex_full_match, 1, 1, 1, 1);
  kiln_text_register_tfidf(table);
  table[KILN_OP_StringConcat].infer = infer_string_concat;
  table[KILN_OP_StringSplit].infer = infer_string_split;
  table[KILN_OP_StringNormalizer].infer = infer_string_normalizer;
  table[KILN_OP_RegexFullMatch].infer = infer_regex;
}
