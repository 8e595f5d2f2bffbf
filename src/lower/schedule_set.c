/* Schedule sets: the text form of schedule.h (one line per kernel pattern), parsed with
 * every field checked, and the overrides a kernel's record starts from. */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

typedef struct sched_line {
  char *pattern;
  int line;
  kiln_sched fields; /* set, line[] and the values of the set fields; dirs */
  int matches;
} sched_line;

struct kiln_sched_set {
  kiln_arena *arena;
  const char *file;
  KILN_VEC(sched_line) lines;
};

kiln_sched_set *kiln_sched_set_new(void) {
  kiln_sched_set *s = kiln_xcalloc(1, sizeof *s);
  s->arena = kiln_arena_new();
  s->file = "schedule";
  return s;
}

void kiln_sched_set_free(kiln_sched_set *s) {
  if (!s) return;
  kiln_vec_free(&s->lines);
  kiln_arena_free(s->arena);
  free(s);
}

int kiln_sched_set_len(const kiln_sched_set *s) {
  return s ? s->lines.len : 0;
}

/* ---- one line ---- */

typedef struct line_ctx {
  kiln_sched_set *set;
  sched_line *ln;
  KILN_VEC(kiln_sched_dir) dirs;
} line_ctx;

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

static bool is_name(const char *s, bool glob) {
  if (!*s) return false;
  for (; *s; s++)
    if (!name_char(*s) && !(glob && (*s == '*' || *s == '?'))) return false;
  return true;
}

static int lookup(const char *v, const char *(*name)(int), int n, int from) {
  for (int i = from; i < n; i++)
    if (!strcmp(v, name(i))) return i;
  return -1;
}

static const char *micro_name(int i) {
  return kiln_sched_micro_name((kiln_sched_micro)i);
}
static const char *par_name(int i) {
  return kiln_sched_par_name((kiln_sched_par)i);
}
static const char *kind_name(int i) {
  return kiln_loop_kind_name((kiln_loop_kind)i);
}

static kiln_status set_field(sched_line *ln, kiln_sched_field f) {
  if (ln->fields.set & (1u << f))
    return kiln_invalid("field '%s' is given twice", kiln_sched_field_name(f));
  ln->fields.set |= 1u << f;
  ln->fields.line[f] = ln->line;
  return KILN_OK;
}

static kiln_status parse_field(sched_line *ln, const char *key, const char *v, bool *known) {
  kiln_sched *s = &ln->fields;
  *known = true;
  int x;
  if (!strcmp(key, "micro")) {
    if ((x = lookup(v, micro_name, KILN_MICRO_COUNT, 1)) < 0)
      return kiln_invalid("micro=%s: not one of packed, inplace, scratch, im2col, rows, "
                          "pointwise, plane, direct",
                          v);
    s->micro = (kiln_sched_micro)x;
    return set_field(ln, KILN_SF_MICRO);
  }
  if (!strcmp(key, "par")) {
    if ((x = lookup(v, par_name, KILN_PAR_COUNT, 1)) < 0)
      return kiln_invalid("par=%s: not one of none, batch, panels, rows, outer", v);
    s->par = (kiln_sched_par)x;
    return set_field(ln, KILN_SF_PAR);
  }
  if (!strcmp(key, "mr")) {
    KILN_TRY(kiln_parse_int(v, 1, 32, "mr", &s->mr));
    return set_field(ln, KILN_SF_MR);
  }
  if (!strcmp(key, "nr")) {
    KILN_TRY(kiln_parse_int(v, 1, 128, "nr", &s->nr));
    return set_field(ln, KILN_SF_NR);
  }
  if (!strcmp(key, "par_min_elements")) {
    KILN_TRY(kiln_parse_i64(v, 0, (int64_t)1 << 62, "par_min_elements", &s->par_min_elements));
    return set_field(ln, KILN_SF_PAR_MIN_ELEMENTS);
  }
  if (!strcmp(key, "gpu_threads")) {
    KILN_TRY(kiln_parse_int(v, 1, 1024, "gpu_threads", &s->gpu_threads));
    return set_field(ln, KILN_SF_GPU_THREADS);
  }
  *known = false;
  return KILN_OK;
}

/* Splits "a:b:c" in place into at most n parts; returns the count. */
static int split_colons(char *v, char **parts, int n) {
  int k = 0;
  parts[k++] = v;
  for (char *p = v; *p && k < n + 1; p++)
    if (*p == ':') {
      *p = 0;
      if (k == n) return n + 1;
      parts[k++] = p + 1;
    }
  return k;
}

static kiln_status loop_arg(line_ctx *c, const char *loop, kiln_sched_dir *d) {
  if (!is_name(loop, false)) return kiln_invalid("'%s' is not a loop variable name", loop);
  d->loop = kiln_arena_strdup(c->set->arena, loop);
  return KILN_OK;
}

static kiln_status parse_dir(line_ctx *c, const char *key, char *v, bool *known) {
  static const char *const simple[] = {"reorder", "parallel", "vector",
                                       "unroll",  "serial",   "tensorize"};
  kiln_sched_dir d = {.line = c->ln->line, .kind = KILN_LOOP_SERIAL};
  char *parts[4];
  *known = true;
  if (!strcmp(key, "split")) {
    if (split_colons(v, parts, 2) != 2) return kiln_invalid("split=%s: want split=LOOP:FACTOR", v);
    KILN_TRY(loop_arg(c, parts[0], &d));
    KILN_TRY(kiln_parse_i64(parts[1], 1, (int64_t)1 << 30, "split factor", &d.factor));
    d.op = KILN_SD_SPLIT;
  } else if (!strcmp(key, "bind")) {
    if (split_colons(v, parts, 2) != 2) return kiln_invalid("bind=%s: want bind=LOOP:KIND", v);
    KILN_TRY(loop_arg(c, parts[0], &d));
    int x = lookup(parts[1], kind_name, KILN_LOOP_KIND_COUNT, 0);
    if (x < 0) return kiln_invalid("bind: '%s' is not a loop kind", parts[1]);
    d.op = KILN_SD_BIND;
    d.kind = (kiln_loop_kind)x;
  } else if (!strcmp(key, "stage")) {
    if (split_colons(v, parts, 3) != 3)
      return kiln_invalid("stage=%s: want stage=LOOP:BUFFER:local|shared", v);
    KILN_TRY(loop_arg(c, parts[0], &d));
    if (!is_name(parts[1], false)) return kiln_invalid("'%s' is not a buffer name", parts[1]);
    d.buf = kiln_arena_strdup(c->set->arena, parts[1]);
    if (strcmp(parts[2], "local") && strcmp(parts[2], "shared"))
      return kiln_invalid("stage: scope '%s' is not local or shared", parts[2]);
    d.scope = strcmp(parts[2], "local") ? KILN_SCOPE_SHARED : KILN_SCOPE_LOCAL;
    d.op = KILN_SD_STAGE;
  } else {
    int i = 0;
    while (i < 6 && strcmp(key, simple[i])) i++;
    if (i == 6) {
      *known = false;
      return KILN_OK;
    }
    KILN_TRY(loop_arg(c, v, &d));
    static const kiln_sched_op ops[] = {KILN_SD_REORDER, KILN_SD_BIND, KILN_SD_VECTORIZE,
                                        KILN_SD_UNROLL,  KILN_SD_BIND, KILN_SD_TENSORIZE};
    static const kiln_loop_kind kinds[] = {KILN_LOOP_SERIAL, KILN_LOOP_PARALLEL, KILN_LOOP_VECTOR,
                                           KILN_LOOP_UNROLL, KILN_LOOP_SERIAL,   KILN_LOOP_SERIAL};
    d.op = ops[i];
    d.kind = kinds[i];
  }
  kiln_vec_push(&c->dirs, d);
  return KILN_OK;
}

static kiln_status parse_token(line_ctx *c, char *tok) {
  char *eq = strchr(tok, '=');
  if (!eq || eq == tok || !eq[1]) return kiln_invalid("'%s' is not FIELD=VALUE", tok);
  *eq = 0;
  bool known;
  KILN_TRY(parse_field(c->ln, tok, eq + 1, &known));
  if (!known) KILN_TRY(parse_dir(c, tok, eq + 1, &known));
  if (!known) return kiln_invalid("unknown field '%s'", tok);
  return KILN_OK;
}

/* line := PATTERN (FIELD '=' VALUE)+ ; text is modified */
static kiln_status parse_line(kiln_sched_set *s, char *text, int lineno) {
  const char *ws = " \t\r";
  char *save = NULL, *pat = strtok_r(text, ws, &save);
  if (!pat) return KILN_OK;
  if (!is_name(pat, true))
    return kiln_invalid("'%s' is not a kernel name or pattern ([A-Za-z0-9_.] and * ?)", pat);
  sched_line ln = {.pattern = kiln_arena_strdup(s->arena, pat), .line = lineno};
  line_ctx c = {s, &ln, {0}};
  kiln_status st = KILN_OK;
  int n = 0;
  for (char *tok; !st && (tok = strtok_r(NULL, ws, &save)); n++) st = parse_token(&c, tok);
  if (!st && n == 0) st = kiln_invalid("kernel pattern '%s' without fields", pat);
  if (!st && c.dirs.len) {
    ln.fields.dirs = kiln_arena_calloc(s->arena, (size_t)c.dirs.len, sizeof *ln.fields.dirs);
    memcpy(ln.fields.dirs, c.dirs.data, (size_t)c.dirs.len * sizeof *c.dirs.data);
    ln.fields.n_dirs = c.dirs.len;
  }
  kiln_vec_free(&c.dirs);
  if (!st) kiln_vec_push(&s->lines, ln);
  return st;
}

static kiln_status parse_text(kiln_sched_set *s, const char *text) {
  int lineno = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    lineno++;
    char *buf = kiln_xcalloc(len + 1, 1);
    memcpy(buf, p, len);
    char *hash = strchr(buf, '#');
    if (hash) *hash = 0;
    kiln_status st = strlen(buf) != len && !hash ? kiln_invalid("a NUL byte in the line")
                                                 : parse_line(s, buf, lineno);
    free(buf);
    if (st) {
      kiln_status e = kiln_invalid("%s:%d: %s", s->file, lineno, kiln_status_message(st));
      kiln_status_free(st);
      return e;
    }
    p += len + (nl != NULL);
  }
  return KILN_OK;
}

kiln_status kiln_sched_set_parse(const char *text, const char *filename, kiln_sched_set **out) {
  *out = NULL;
  kiln_sched_set *s = kiln_sched_set_new();
  if (filename) s->file = kiln_arena_strdup(s->arena, filename);
  kiln_status st = parse_text(s, text ? text : "");
  if (st) {
    kiln_sched_set_free(s);
    return st;
  }
  *out = s;
  return KILN_OK;
}

kiln_status kiln_sched_set_add(kiln_sched_set *s, const char *pattern, const char *fields) {
  if (!s || !pattern || !fields) return kiln_invalid("schedule: no set, pattern or fields");
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s %s", pattern, fields);
  if (strchr(b.data, '\n') || strchr(b.data, '#')) {
    kiln_strbuf_free(&b);
    return kiln_invalid("schedule: one line of fields, without '#'");
  }
  kiln_status st = parse_line(s, b.data, s->lines.len + 1);
  kiln_strbuf_free(&b);
  return st;
}

/* ---- resolving a kernel's overrides ---- */

static bool glob(const char *p, const char *s) {
  if (!*p) return !*s;
  if (*p == '*') return glob(p + 1, s) || (*s && glob(p, s + 1));
  return *s && (*p == '?' || *p == *s) && glob(p + 1, s + 1);
}

static void merge(kiln_sched *dst, const kiln_sched *src, kiln_arena *arena) {
  for (int f = 0; f < KILN_SF_COUNT; f++)
    if (src->set & (1u << f)) dst->line[f] = src->line[f];
  if (src->set & (1u << KILN_SF_MICRO)) dst->micro = src->micro;
  if (src->set & (1u << KILN_SF_MR)) dst->mr = src->mr;
  if (src->set & (1u << KILN_SF_NR)) dst->nr = src->nr;
  if (src->set & (1u << KILN_SF_PAR)) dst->par = src->par;
  if (src->set & (1u << KILN_SF_PAR_MIN_ELEMENTS)) dst->par_min_elements = src->par_min_elements;
  if (src->set & (1u << KILN_SF_GPU_THREADS)) dst->gpu_threads = src->gpu_threads;
  dst->set |= src->set;
  if (!src->n_dirs) return;
  kiln_sched_dir *d = kiln_arena_calloc(arena, (size_t)(dst->n_dirs + src->n_dirs), sizeof *d);
  if (dst->n_dirs) memcpy(d, dst->dirs, (size_t)dst->n_dirs * sizeof *d);
  memcpy(d + dst->n_dirs, src->dirs, (size_t)src->n_dirs * sizeof *d);
  for (int i = dst->n_dirs; i < dst->n_dirs + src->n_dirs; i++) { /* the program owns them */
    d[i].loop = kiln_arena_strdup(arena, d[i].loop);
    if (d[i].buf) d[i].buf = kiln_arena_strdup(arena, d[i].buf);
  }
  dst->dirs = d;
  dst->n_dirs += src->n_dirs;
}

void kiln_sched_set_resolve(kiln_sched_set *s, const char *name, kiln_arena *arena,
                            kiln_sched *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; s && i < s->lines.len; i++) {
    sched_line *ln = &s->lines.data[i];
    if (!glob(ln->pattern, name)) continue;
    ln->matches++;
    merge(out, &ln->fields, arena);
  }
}

kiln_status kiln_sched_set_check_used(const kiln_sched_set *s) {
  for (int i = 0; s && i < s->lines.len; i++)
    if (!s->lines.data[i].matches)
      return kiln_invalid("%s:%d: '%s' matches no kernel of the program", s->file,
                          s->lines.data[i].line, s->lines.data[i].pattern);
  return KILN_OK;
}

void kiln_sched_set_reset_counts(kiln_sched_set *s) {
  for (int i = 0; s && i < s->lines.len; i++) s->lines.data[i].matches = 0;
}
