/* Names are data, never code: the class-level check shared by tests/fuzz/fuzz_emit.c (libFuzzer)
 * and tests/unit/test_emit_names.c (a fixed set of inputs). Both include this file.
 *
 * emit_check(data, size) derives hostile names from the bytes (comment closers, quotes,
 * backslashes, newlines, control bytes, '..', '/', very long, non-ASCII, raw bytes), puts them on
 * every name of a small fixed graph (the graph, its producer, every value and node), runs every
 * emitter that needs no C compiler, and compares with the same graph under plain names:
 *   - C and CUDA C (the standalone model.h, model.c and main.c, the CUDA translation unit):
 *     the token streams, comments dropped and string literals as one token each, after the
 *     translation phases that could let a name out (trigraphs, line splices), are equal;
 *   - line-based text (launch manifest, CUDA report, program print): one record per line, so
 *     the same number of lines;
 *   - the graph IR text and the tile IR text read back to the same text, with the same names.
 * It returns NULL, or a message naming the first broken invariant (static storage). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/graph_text.h"
#include "lower/lower.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "runtime/standalone.h"
#include "tile/tile.h"

/* ---- hostile names ---- */
enum {
  EC_GRAPH,
  EC_PRODUCER,
  EC_NODE0 = 2,
  EC_NODES = 5,
  EC_VALUE0 = EC_NODE0 + EC_NODES,
  EC_VALUES = 10,
  EC_NAMES = EC_VALUE0 + EC_VALUES
};

static const char *const ec_hostile[] = {
    "r */ system(\"touch PWNED\"); /* ",
    "g\n__attribute__((constructor)) static void pwn(void){system(\"touch PWNED\");}\n//",
    "a\\\"b'c`d$(touch PWNED)",
    "../../escape",
    "/abs/path",
    "..",
    "ctl\x01\x02\x1b[31m\x7f\r\t\v\f",
    "\xc3\xbcn\xc3\xaf\xe2\x9c\x93 \xe2\x80\xae",
    "%s%n%d%x",
    "?\?/ trigraph ?\?= ?\?' ?\?(", /* trigraphs, spelled so that this file holds none */
    "#define X 1",
    "*/",
    "/*",
    "//",
    "}\n}\nint main(){return 0;}\n{",
    "\\\n*/ x",
    "*\\\n/",
    "\"",
    "'",
    "\\",
    " ",
    "\xff\xfe",
};
enum { EC_NHOSTILE = sizeof ec_hostile / sizeof ec_hostile[0] };

/* Name i from piece [p, p+n) of the input: a hostile string followed by the raw bytes, the raw
 * bytes alone, or the bytes repeated past 4 KiB; never empty, never NUL (the pieces are split
 * at NUL bytes). */
static char *ec_name(int i, const uint8_t *p, size_t n) {
  kiln_strbuf b = {0};
  int mode = n ? p[0] % 4 : 0;
  const char *h = ec_hostile[(n ? p[0] / 4 : (size_t)i) % EC_NHOSTILE];
  if (mode == 0) kiln_strbuf_append(&b, h, strlen(h));
  if (n > 1 && mode != 1) kiln_strbuf_append(&b, (const char *)p + 1, n - 1);
  while (mode == 1 && b.len < 4096) {
    if (n > 1) kiln_strbuf_append(&b, (const char *)p + 1, n - 1);
    else kiln_strbuf_append(&b, h, strlen(h));
  }
  if (!b.len) kiln_strbuf_append(&b, h, strlen(h));
  return b.data;
}

/* Every name from the input; value names are made distinct (and non-empty). */
static void ec_names(const uint8_t *data, size_t size, char **names) {
  size_t at = 0;
  for (int i = 0; i < EC_NAMES; i++) {
    size_t end = at;
    while (end < size && data[end]) end++;
    names[i] = ec_name(i, at < size ? data + at : NULL, at < size ? end - at : 0);
    at = end + 1;
  }
  for (int i = EC_VALUE0; i < EC_NAMES; i++) {
    bool clash = !names[i][0];
    for (int j = EC_VALUE0; j < i; j++) clash = clash || !strcmp(names[i], names[j]);
    if (!clash) continue;
    kiln_strbuf b = {0};
    kiln_strbuf_printf(&b, "%s#%d", names[i], i);
    free(names[i]);
    names[i] = b.data;
  }
}

/* ---- the fixed graph ---- */
/* text with $N (N: one or two digits) replaced by name N in IR syntax. */
static void ec_put(kiln_strbuf *b, const char *text, char *const *names) {
  for (const char *s = text; *s; s++) {
    if (*s != '$') {
      kiln_strbuf_append(b, s, 1);
      continue;
    }
    int n = 0;
    while (s[1] >= '0' && s[1] <= '9') n = n * 10 + (*++s - '0');
    const char *name = names[n];
    if (n == EC_PRODUCER) kiln_gtext_quote(b, name, strlen(name));
    else kiln_gtext_name(b, n >= EC_VALUE0 ? '%' : '@', name);
  }
}

/* Values: 7 x, 8 i, 9 w, 10 b, 11 s, 12 h, 13 y, 14 z, 15 q, 16 t; nodes 2..6. */
static const char *const ec_text =
    "graph $0($7: f32[2,4], $8: i64[2]) -> ($13: f32[2,3], $15: f32[3,2], $16: f32[2,4]) {\n"
    "  opset \"\" 17\n"
    "  producer $1\n"
    "  $9 = const f32[3,4] [0.5, -1, 2, 0.25, 1, 1.5, -0.5, 3, 0.125, -2, 1, 0.75]\n"
    "  $10 = const f32[3] [0.1, -0.2, 0.3]\n"
    "  $11 = const i64[2] [3, 2]\n"
    "  $12 = Gemm($7, $9, $10) {transB=1} : f32[2,3] $2\n"
    "  $13 = Relu($12) : f32[2,3] $3\n"
    "  $14 = Neg($12) : f32[2,3] $4\n"
    "  $15 = Reshape($14, $11) : f32[3,2] $5\n"
    "  $16 = Gather($9, $8) {axis=0} : f32[2,4] $6\n"
    "  return $13, $15, $16\n"
    "}\n";

static char *ec_graph_text(char *const *names) {
  kiln_strbuf b = {0};
  ec_put(&b, ec_text, names);
  return b.data;
}

/* ---- every emitter ---- */
typedef struct ec_out {
  kiln_strbuf ir;                   /* graph IR text as printed after parsing */
  kiln_standalone_files sa;         /* model.h, model.c, main.c */
  kiln_strbuf prog, tile;           /* program print, tile IR text */
  kiln_strbuf cu, manifest, report; /* CUDA C, launch.txt, CUDA report */
} ec_out;

static void ec_out_free(ec_out *o) {
  kiln_strbuf_free(&o->ir);
  kiln_standalone_files_free(&o->sa);
  kiln_strbuf_free(&o->prog);
  kiln_strbuf_free(&o->tile);
  kiln_strbuf_free(&o->cu);
  kiln_strbuf_free(&o->manifest);
  kiln_strbuf_free(&o->report);
}

static const char *ec_fail(kiln_status st, const char *what) {
  static char msg[600];
  snprintf(msg, sizeof msg, "%s: %.500s", what, st ? kiln_status_message(st) : "");
  kiln_status_free(st);
  return msg;
}

/* The CPU path without a C compiler: passes, lowering, memory plan, standalone text. */
static const char *ec_cpu(const char *text, ec_out *o) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "emit", &g);
  if (st) return ec_fail(st, "parsing the graph");
  kiln_graph_print(g, &o->ir, -1);
  kiln_compile_opts co;
  kiln_compile_opts_init(&co);
  kiln_pass_opts po = co.passes;
  po.fuse_classify = kiln_lower_fuse_class;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2};
  kiln_program *p = NULL;
  kiln_plan *plan = NULL;
  st = kiln_passes_run(g, &po, NULL);
  if (!st) st = kiln_lower(g, &lo, &p);
  if (!st) st = kiln_plan_program(p, NULL, &plan);
  if (!st) st = kiln_standalone_text(p, plan, "model", &o->sa);
  if (!st) kiln_program_print(p, &o->prog);
  if (!st) kiln_tmodule_print(p->module, &o->tile);
  if (!st) kiln_plan_print(p, plan, &o->prog);
  kiln_plan_free(plan);
  kiln_program_free(p);
  kiln_graph_free(g);
  return st ? ec_fail(st, "the CPU emitters") : NULL;
}

static const char *ec_cuda(const char *text, ec_out *o) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "emit", &g);
  if (st) return ec_fail(st, "parsing the graph");
  kiln_compile_opts co;
  kiln_compile_opts_init(&co);
  co.cuda.no_nvrtc = true;
  kiln_compiled *c = NULL;
  st = kiln_compile(g, &kiln_target_cuda, &co, &c);
  const kiln_cuda_build *b = kiln_compiled_cuda(c);
  if (!st) {
    kiln_strbuf_append(&o->cu, b->source.data ? b->source.data : "", b->source.len);
    kiln_cuda_build_manifest(b, &o->manifest);
    kiln_cuda_build_report(b, &o->report);
  }
  kiln_compiled_free(c);
  kiln_graph_free(g);
  return st ? ec_fail(st, "the CUDA emitters") : NULL;
}

/* ---- a C lexer that keeps only what can change code ----
 * Phases 1-2 (trigraphs, backslash-newline splices) first, as a C11 compiler does them; then
 * tokens: comments dropped, a string or character literal as one token "S" (its content is
 * data), identifiers and numbers whole, anything else one byte. Tokens are joined by '\n'. */
static char *ec_phases(const char *s) {
  static const char tri_from[] = "=/'()!<>-", tri_to[] = "#\\^[]|{}~";
  size_t n = strlen(s), j = 0;
  char *o = malloc(n + 1);
  for (size_t i = 0; i < n; i++) {
    const char *t = s[i] == '?' && s[i + 1] == '?' && s[i + 2] ? strchr(tri_from, s[i + 2]) : NULL;
    if (t) o[j++] = tri_to[t - tri_from], i += 2;
    else o[j++] = s[i];
  }
  o[j] = 0;
  n = j, j = 0;
  for (size_t i = 0; i < n; i++) {
    if (o[i] == '\\' && o[i + 1] == '\n') i++;
    else if (o[i] == '\\' && o[i + 1] == '\r' && o[i + 2] == '\n') i += 2;
    else o[j++] = o[i];
  }
  o[j] = 0;
  return o;
}

static bool ec_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

static char *ec_tokens(const char *src) {
  char *s = ec_phases(src);
  kiln_strbuf b = {0};
  for (const char *p = s; *p;) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') {
      p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      p = e ? e + 2 : p + strlen(p);
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (*p == '"' || *p == '\'') {
      char q = *p++;
      while (*p && *p != q && *p != '\n') p += p[0] == '\\' && p[1] ? 2 : 1;
      kiln_strbuf_append(&b, *p == q ? "S\n" : "UNTERMINATED\n", *p == q ? 2 : 13);
      if (*p == q) p++;
    } else if (ec_word(*p)) {
      const char *e = p;
      while (ec_word(*e)) e++;
      kiln_strbuf_append(&b, p, (size_t)(e - p));
      kiln_strbuf_append(&b, "\n", 1);
      p = e;
    } else {
      kiln_strbuf_append(&b, p++, 1);
      kiln_strbuf_append(&b, "\n", 1);
    }
  }
  free(s);
  if (!b.data) kiln_strbuf_append(&b, "", 0);
  return b.data;
}

static int ec_lines(const kiln_strbuf *b) {
  int n = 0;
  for (size_t i = 0; i < b->len; i++) n += b->data[i] == '\n';
  return n;
}

/* ---- the invariants ---- */
static const char *ec_same_code(const char *what, const kiln_strbuf *plain,
                                const kiln_strbuf *hostile) {
  static char msg[300];
  char *a = ec_tokens(plain->data ? plain->data : ""),
       *b = ec_tokens(hostile->data ? hostile->data : "");
  size_t i = 0;
  while (a[i] && a[i] == b[i]) i++;
  bool same = a[i] == b[i];
  if (!same)
    snprintf(msg, sizeof msg, "%s: a name changed the code: tokens differ at '%.40s' / '%.40s'",
             what, a + i, b + i);
  free(a);
  free(b);
  return same ? NULL : msg;
}

static const char *ec_same_lines(const char *what, const kiln_strbuf *plain,
                                 const kiln_strbuf *hostile) {
  static char msg[200];
  if (ec_lines(plain) == ec_lines(hostile)) return NULL;
  snprintf(msg, sizeof msg, "%s: %d lines with plain names, %d with these", what, ec_lines(plain),
           ec_lines(hostile));
  return msg;
}

/* The printed graph reads back to the same text and the same names. */
static const char *ec_round_trip(const ec_out *o, char *const *names) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(o->ir.data, "printed", &g);
  if (st) return ec_fail(st, "the printed graph does not parse");
  kiln_strbuf again = {0};
  kiln_graph_print(g, &again, -1);
  bool same = again.len == o->ir.len && !memcmp(again.data, o->ir.data, again.len);
  bool names_kept = !strcmp(g->name, names[EC_GRAPH]) && g->producer &&
                    !strcmp(g->producer, names[EC_PRODUCER]) &&
                    !strcmp(g->values.data[g->inputs.data[0]].name, names[EC_VALUE0]);
  kiln_strbuf_free(&again);
  kiln_graph_free(g);
  if (!same) return "graph IR: print -> parse -> print is not the identity";
  return names_kept ? NULL : "graph IR: a name did not survive print -> parse";
}

static const char *ec_tile_round_trip(const ec_out *o) {
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse(o->tile.data, "tile", &m);
  if (st) return ec_fail(st, "the printed tile IR does not parse");
  kiln_strbuf again = {0};
  kiln_tmodule_print(m, &again);
  bool same = again.len == o->tile.len && !memcmp(again.data, o->tile.data, again.len);
  kiln_strbuf_free(&again);
  kiln_tmodule_free(m);
  return same ? NULL : "tile IR: print -> parse -> print is not the identity";
}

static const char *ec_compare(const ec_out *p, const ec_out *h, char *const *names) {
  const char *e = NULL;
  if (!e) e = ec_same_code("model.h", &p->sa.h, &h->sa.h);
  if (!e) e = ec_same_code("model.c", &p->sa.c, &h->sa.c);
  if (!e) e = ec_same_code("main.c", &p->sa.main, &h->sa.main);
  if (!e) e = ec_same_code("model.cu", &p->cu, &h->cu);
  if (!e) e = ec_same_lines("launch.txt", &p->manifest, &h->manifest);
  if (!e) e = ec_same_lines("CUDA report", &p->report, &h->report);
  if (!e) e = ec_same_lines("program print", &p->prog, &h->prog);
  if (!e) e = ec_same_lines("graph IR", &p->ir, &h->ir);
  if (!e) e = ec_round_trip(h, names);
  if (!e) e = ec_tile_round_trip(h);
  return e;
}

static const char *ec_emit(char *const *names, ec_out *o) {
  char *text = ec_graph_text(names);
  const char *e = ec_cpu(text, o);
  if (!e) e = ec_cuda(text, o);
  free(text);
  return e;
}

static const char *emit_check(const uint8_t *data, size_t size) {
  static char msg[800];
  char *names[EC_NAMES], *plain[EC_NAMES];
  ec_names(data, size, names);
  for (int i = 0; i < EC_NAMES; i++) {
    plain[i] = malloc(8);
    snprintf(plain[i], 8, "n%d", i);
  }
  ec_out p = {0}, h = {0};
  const char *e = ec_emit(plain, &p);
  if (e) snprintf(msg, sizeof msg, "plain names: %s", e), e = msg;
  if (!e) e = ec_emit(names, &h);
  if (!e) e = ec_compare(&p, &h, names);
  ec_out_free(&p);
  ec_out_free(&h);
  for (int i = 0; i < EC_NAMES; i++) free(names[i]), free(plain[i]);
  return e;
}
