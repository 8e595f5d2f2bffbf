/* RE2-syntax regular expressions for RegexFullMatch, matched by a Thompson NFA
 * (Pike VM without captures): linear in the input, like RE2, and independent of the
 * platform's regex library (POSIX regcomp differs from RE2 on \w inside brackets,
 * \d, \s, non-capturing groups, ...).
 *
 * Supported: literals (UTF-8), . [..] [^..] with ranges, escapes and [:name:] POSIX
 * classes; \d \D \s \S \w \W (ASCII, as in RE2); \b \B \A \z ^ $; groups (..),
 * (?:..), (?P<name>..), (?<name>..); flags (?i) (?m) (?s) (?U) and (?flags:..);
 * alternation; * + ? {n} {n,} {n,m} (lazy forms match the same strings); escapes
 * \n \t \r \f \v \a \xHH \x{H..} \Q..\E and escaped punctuation.
 * Not supported (compile error): Unicode classes \p \P, \C, octal escapes. */
#include <stdlib.h>
#include <string.h>

#include "kernel_internal.h"

/* ---- UTF-8 ---- */
size_t kiln_text_utf8_decode(const char *str, size_t n, uint32_t *out) {
  const unsigned char *s = (const unsigned char *)str;
  if (n == 0) return 0;
  if (s[0] < 0x80) return *out = s[0], 1;
  int len = s[0] >= 0xF0 && s[0] < 0xF5 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
  if (!len || (size_t)len > n || (len == 4 && s[0] >= 0xF8)) return 0;
  uint32_t c = s[0] & (0x7F >> len);
  for (int i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    c = (c << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
      (c >= 0xD800 && c <= 0xDFFF))
    return 0;
  *out = c;
  return (size_t)len;
}

size_t kiln_text_utf8_encode(uint32_t c, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (c < 0x80) return o[0] = (unsigned char)c, 1;
  if (c < 0x800) {
    o[0] = (unsigned char)(0xC0 | (c >> 6)), o[1] = (unsigned char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (c >> 12)), o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (c >> 18)), o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (unsigned char)(0x80 | (c & 0x3F));
  return 4;
}

/* ---- program ---- */
typedef enum { I_CLASS, I_SPLIT, I_JMP, I_ASSERT, I_MATCH } inst_op;
typedef enum { A_BOT, A_EOT, A_BOL, A_EOL, A_WORD, A_NOTWORD } assert_kind;

typedef struct cls {
  int n, cap;
  uint32_t *r; /* pairs lo, hi */
  bool neg, fold;
} cls;

typedef struct inst {
  inst_op op;
  int x, y; /* SPLIT / JMP targets; ASSERT kind in x */
  cls *c;   /* CLASS */
} inst;

struct kiln_text_regex {
  inst *prog;
  int n, cap;
  KILN_VEC(cls *) classes;
};

#define MAX_INSTS 200000
#define MAX_REPEAT 1000
#define MAX_DEPTH 1000

/* ---- AST ---- */
typedef enum { N_CLASS, N_EMPTY, N_CAT, N_ALT, N_REP, N_ASSERT } node_kind;

typedef struct rnode {
  node_kind kind;
  cls *c;
  int min, max; /* REP; max -1 = unbounded */
  int akind;
  KILN_VEC(struct rnode *) kids;
} rnode;

typedef struct parser {
  const char *start, *p, *end;
  bool fold, multiline, dotnl;
  int depth, nrep; /* group nesting and repetition count, bounded to keep recursion shallow */
  kiln_text_regex *re;
  KILN_VEC(rnode *) all; /* every node, freed at the end */
  kiln_status err;
} parser;

static rnode *new_node(parser *ps, node_kind k) {
  rnode *n = kiln_xcalloc(1, sizeof *n);
  n->kind = k;
  kiln_vec_push(&ps->all, n);
  return n;
}

static cls *new_cls(parser *ps) {
  cls *c = kiln_xcalloc(1, sizeof *c);
  c->fold = ps->fold;
  kiln_vec_push(&ps->re->classes, c);
  return c;
}

static void cls_add(cls *c, uint32_t lo, uint32_t hi) {
  if (c->n + 2 > c->cap) {
    c->cap = c->cap ? 2 * c->cap : 8;
    c->r = kiln_xrealloc(c->r, (size_t)c->cap * sizeof(uint32_t));
  }
  c->r[c->n++] = lo;
  c->r[c->n++] = hi;
}

static bool cls_has(const cls *c, uint32_t ch) {
  for (int i = 0; i < c->n; i += 2)
    if (ch >= c->r[i] && ch <= c->r[i + 1]) return true;
  return false;
}

static uint32_t ascii_swapcase(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c >= 'A' && c <= 'Z') return c + 32;
  return c;
}

static bool cls_match(const cls *c, uint32_t ch) {
  bool in = cls_has(c, ch) || (c->fold && cls_has(c, ascii_swapcase(ch)));
  return in != c->neg;
}

static kiln_status perr(parser *ps, const char *what) {
  if (!ps->err) ps->err = kiln_invalid("regex: %s at offset %ld", what, (long)(ps->p - ps->start));
  return ps->err;
}

/* Adds the ranges of a Perl class letter (d s w, upper case = complement). */
static bool perl_class(cls *c, char k) {
  static const uint32_t d[] = {'0', '9'}, s[] = {'\t', '\n', '\f', '\r', ' ', ' '},
                        w[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
  const uint32_t *r;
  int n;
  switch (k | 0x20) {
  case 'd': r = d, n = 2; break;
  case 's': r = s, n = 6; break;
  case 'w': r = w, n = 8; break;
  default: return false;
  }
  if (k & 0x20) {
    for (int i = 0; i < n; i += 2) cls_add(c, r[i], r[i + 1]);
    return true;
  }
  uint32_t lo = 0; /* complement of sorted ranges */
  for (int i = 0; i < n; i += 2) {
    if (r[i] > lo) cls_add(c, lo, r[i] - 1);
    lo = r[i + 1] + 1;
  }
  cls_add(c, lo, 0x10FFFF);
  return true;
}

static uint32_t next_cp(parser *ps) {
  uint32_t c;
  size_t n = kiln_text_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &c);
  if (!n) c = (unsigned char)*ps->p, n = 1;
  ps->p += n;
  return c;
}

static int hexval(char h) {
  if (h >= '0' && h <= '9') return h - '0';
  if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') return (h | 0x20) - 'a' + 10;
  return -1;
}

/* Parses \xHH or \x{H...} (after "\x"). */
static bool parse_hex(parser *ps, uint32_t *out) {
  uint32_t v = 0;
  if (ps->p < ps->end && *ps->p == '{') {
    ps->p++;
    int nd = 0;
    while (ps->p < ps->end && *ps->p != '}') {
      int h = hexval(*ps->p++);
      if (h < 0 || ++nd > 8) return false;
      v = v * 16 + (uint32_t)h;
    }
    if (ps->p >= ps->end || !nd) return false;
    ps->p++;
  } else {
    for (int i = 0; i < 2; i++) {
      if (ps->p >= ps->end || hexval(*ps->p) < 0) return false;
      v = v * 16 + (uint32_t)hexval(*ps->p++);
    }
  }
  *out = v;
  return v <= 0x10FFFF;
}

/* A single-character escape (after '\'): sets *cp and returns true, or false with
 * ps->err set when the escape is not a literal. */
static bool literal_escape(parser *ps, char e, uint32_t *cp) {
  switch (e) {
  case 'n': *cp = '\n'; return true;
  case 't': *cp = '\t'; return true;
  case 'r': *cp = '\r'; return true;
  case 'f': *cp = '\f'; return true;
  case 'v': *cp = '\v'; return true;
  case 'a': *cp = '\a'; return true;
  case 'x':
    if (parse_hex(ps, cp)) return true;
    perr(ps, "bad \\x escape");
    return false;
  default: break;
  }
  if ((e >= 0x21 && e <= 0x2F) || (e >= 0x3A && e <= 0x40) || (e >= 0x5B && e <= 0x60) ||
      (e >= 0x7B && e <= 0x7E)) {
    *cp = (uint32_t)e; /* escaped punctuation */
    return true;
  }
  perr(ps, "unsupported escape");
  return false;
}

static const struct {
  const char *name;
  const char *ranges; /* pairs of chars */
} posix_classes[] = {
    {"alnum", "09AZaz"},
    {"alpha", "AZaz"},
    {"ascii", "\x01\x7f"},
    {"blank", "\t\t  "},
    {"cntrl", "\x01\x1f\x7f\x7f"},
    {"digit", "09"},
    {"graph", "!~"},
    {"lower", "az"},
    {"print", " ~"},
    {"punct", "!/:@[`{~"},
    {"space", "\t\r  "},
    {"upper", "AZ"},
    {"word", "09AZ__az"},
    {"xdigit", "09AFaf"},
};

/* [:name:] inside a bracket (ps->p at '['). */
static bool bracket_posix(parser *ps, cls *c) {
  const char *close = ps->p + 2;
  if (ps->end - ps->p < 4 || ps->p[1] != ':') return false;
  bool neg = *close == '^';
  if (neg) close++;
  const char *nm = close;
  while (close < ps->end && *close != ':') close++;
  if (close + 1 >= ps->end || close[1] != ']') return false;
  for (size_t i = 0; i < sizeof posix_classes / sizeof posix_classes[0]; i++) {
    const char *n = posix_classes[i].name, *r = posix_classes[i].ranges;
    if (strlen(n) != (size_t)(close - nm) || strncmp(n, nm, (size_t)(close - nm))) continue;
    cls tmp = {0};
    for (; *r; r += 2) cls_add(neg ? &tmp : c, (unsigned char)r[0], (unsigned char)r[1]);
    if (r[0] == 0 && !strcmp(n, "ascii")) { /* "\x01\x7f" starts at 1; add NUL */
      cls_add(neg ? &tmp : c, 0, 0);
    }
    if (neg) { /* complement (tmp ranges are sorted and disjoint) */
      uint32_t lo = 0;
      for (int k = 0; k < tmp.n; k += 2) {
        if (tmp.r[k] > lo) cls_add(c, lo, tmp.r[k] - 1);
        lo = tmp.r[k + 1] + 1;
      }
      cls_add(c, lo, 0x10FFFF);
      free(tmp.r);
    }
    ps->p = close + 2;
    return true;
  }
  perr(ps, "unknown POSIX class");
  return true;
}

/* One bracket item's code point (literal or escape); false on a class escape. */
static bool bracket_char(parser *ps, cls *c, uint32_t *cp, bool *is_cp) {
  *is_cp = false;
  if (*ps->p != '\\') {
    *cp = next_cp(ps);
    *is_cp = true;
    return true;
  }
  if (ps->p + 1 >= ps->end) return perr(ps, "trailing backslash"), false;
  char e = ps->p[1];
  ps->p += 2;
  if (perl_class(c, e)) return true;
  if (e == 'p' || e == 'P') return perr(ps, "Unicode classes are not supported"), false;
  if (!literal_escape(ps, e, cp)) return false;
  *is_cp = true;
  return true;
}

static rnode *parse_bracket(parser *ps) {
  cls *c = new_cls(ps);
  ps->p++; /* '[' */
  if (ps->p < ps->end && *ps->p == '^') c->neg = true, ps->p++;
  bool first = true;
  while (ps->p < ps->end && (*ps->p != ']' || first)) {
    first = false;
    if (*ps->p == '[' && bracket_posix(ps, c)) {
      if (ps->err) return NULL;
      continue;
    }
    uint32_t lo, hi;
    bool is_cp;
    if (!bracket_char(ps, c, &lo, &is_cp)) return NULL;
    if (!is_cp) continue;
    hi = lo;
    if (ps->end - ps->p >= 2 && *ps->p == '-' && ps->p[1] != ']') {
      ps->p++;
      if (!bracket_char(ps, c, &hi, &is_cp)) return NULL;
      if (!is_cp || hi < lo) return perr(ps, "bad character range"), NULL;
    }
    cls_add(c, lo, hi);
  }
  if (ps->p >= ps->end) return perr(ps, "missing ]"), NULL;
  ps->p++;
  rnode *n = new_node(ps, N_CLASS);
  n->c = c;
  return n;
}

static rnode *class_node(parser *ps, uint32_t lo, uint32_t hi, bool neg) {
  rnode *n = new_node(ps, N_CLASS);
  n->c = new_cls(ps);
  cls_add(n->c, lo, hi);
  n->c->neg = neg;
  return n;
}

static rnode *assert_node(parser *ps, int kind) {
  rnode *n = new_node(ps, N_ASSERT);
  n->akind = kind;
  return n;
}

static rnode *parse_alt(parser *ps);

/* \Q...\E: a literal sequence. */
static rnode *parse_quoted(parser *ps) {
  rnode *cat = new_node(ps, N_CAT);
  while (ps->p < ps->end && !(ps->end - ps->p >= 2 && ps->p[0] == '\\' && ps->p[1] == 'E')) {
    uint32_t c = next_cp(ps);
    rnode *k = class_node(ps, c, c, false);
    kiln_vec_push(&cat->kids, k);
  }
  if (ps->p < ps->end) ps->p += 2;
  return cat;
}

static rnode *parse_escape(parser *ps) {
  if (ps->p + 1 >= ps->end) return perr(ps, "trailing backslash"), NULL;
  char e = ps->p[1];
  ps->p += 2;
  switch (e) {
  case 'b': return assert_node(ps, A_WORD);
  case 'B': return assert_node(ps, A_NOTWORD);
  case 'A': return assert_node(ps, A_BOT);
  case 'z': return assert_node(ps, A_EOT);
  case 'Q': return parse_quoted(ps);
  case 'p':
  case 'P': return perr(ps, "Unicode classes are not supported"), NULL;
  case 'C': return perr(ps, "\\C is not supported"), NULL;
  default: break;
  }
  rnode *n = new_node(ps, N_CLASS);
  n->c = new_cls(ps);
  if (perl_class(n->c, e)) return n;
  uint32_t cp;
  if (!literal_escape(ps, e, &cp)) return NULL;
  cls_add(n->c, cp, cp);
  return n;
}

/* Flags "imsU-" up to ')' or ':'; returns true for a scoped group (?flags:...). */
static bool parse_flags(parser *ps, bool *scoped) {
  bool neg = false;
  while (ps->p < ps->end && *ps->p != ')' && *ps->p != ':') {
    char f = *ps->p++;
    if (f == '-' && !neg) neg = true;
    else if (f == 'i') ps->fold = !neg;
    else if (f == 'm') ps->multiline = !neg;
    else if (f == 's') ps->dotnl = !neg;
    else if (f != 'U') return perr(ps, "unknown flag"), false;
  }
  if (ps->p >= ps->end) return perr(ps, "missing )"), false;
  *scoped = *ps->p == ':';
  ps->p++;
  return true;
}

static rnode *parse_group(parser *ps) {
  ps->p++; /* '(' */
  if (++ps->depth > MAX_DEPTH) return perr(ps, "nesting too deep"), NULL;
  bool sf = ps->fold, sm = ps->multiline, ss = ps->dotnl;
  if (ps->p < ps->end && *ps->p == '?') {
    ps->p++;
    if (ps->p < ps->end && (*ps->p == 'P' || *ps->p == '<')) { /* named group */
      if (*ps->p == 'P') ps->p++;
      while (ps->p < ps->end && *ps->p != '>') ps->p++;
      if (ps->p >= ps->end) return perr(ps, "bad group name"), NULL;
      ps->p++;
    } else {
      bool scoped;
      if (!parse_flags(ps, &scoped)) return NULL;
      if (!scoped) return new_node(ps, N_EMPTY); /* (?i): flags stay for the rest */
    }
  }
  rnode *n = parse_alt(ps);
  if (!n) return NULL;
  if (ps->p >= ps->end || *ps->p != ')') return perr(ps, "missing )"), NULL;
  ps->p++;
  ps->fold = sf, ps->multiline = sm, ps->dotnl = ss;
  ps->depth--;
  return n;
}

static rnode *parse_atom(parser *ps) {
  char c = *ps->p;
  switch (c) {
  case '(': return parse_group(ps);
  case '[': return parse_bracket(ps);
  case '\\': return parse_escape(ps);
  case '.':
    ps->p++;
    return ps->dotnl ? class_node(ps, 0, 0x10FFFF, false) : class_node(ps, '\n', '\n', true);
  case '^': ps->p++; return assert_node(ps, ps->multiline ? A_BOL : A_BOT);
  case '$': ps->p++; return assert_node(ps, ps->multiline ? A_EOL : A_EOT);
  case '*':
  case '+':
  case '?': return perr(ps, "missing argument to repetition operator"), NULL;
  default: {
    uint32_t cp = next_cp(ps);
    rnode *n = class_node(ps, cp, cp, false);
    return n;
  }
  }
}

/* {n}, {n,}, {n,m} at ps->p; false (and p unchanged) if it is not a repeat. */
static bool parse_counted(parser *ps, int *mn, int *mx) {
  const char *p = ps->p + 1;
  long a = 0, b;
  if (p >= ps->end || *p < '0' || *p > '9') return false;
  while (p < ps->end && *p >= '0' && *p <= '9' && a <= MAX_REPEAT) a = a * 10 + (*p++ - '0');
  b = a;
  if (p < ps->end && *p == ',') {
    p++;
    b = -1;
    if (p < ps->end && *p >= '0' && *p <= '9') {
      b = 0;
      while (p < ps->end && *p >= '0' && *p <= '9' && b <= MAX_REPEAT) b = b * 10 + (*p++ - '0');
    }
  }
  if (p >= ps->end || *p != '}') return false;
  ps->p = p + 1;
  *mn = (int)a, *mx = (int)b;
  return true;
}

static rnode *parse_repeat(parser *ps) {
  rnode *atom = parse_atom(ps);
  while (atom && ps->p < ps->end) {
    int mn, mx;
    char c = *ps->p;
    if (c == '*') mn = 0, mx = -1, ps->p++;
    else if (c == '+') mn = 1, mx = -1, ps->p++;
    else if (c == '?') mn = 0, mx = 1, ps->p++;
    else if (c == '{' && parse_counted(ps, &mn, &mx)) {
      if (mn > MAX_REPEAT || mx > MAX_REPEAT || (mx >= 0 && mx < mn))
        return perr(ps, "bad repetition count"), NULL;
    } else break;
    if (ps->p < ps->end && *ps->p == '?') ps->p++; /* lazy: same language */
    if (ps->p < ps->end && (*ps->p == '*' || *ps->p == '+' || *ps->p == '?'))
      return perr(ps, "bad repetition operator"), NULL;
    if (++ps->nrep > MAX_DEPTH) return perr(ps, "too many repetition operators"), NULL;
    rnode *r = new_node(ps, N_REP);
    r->min = mn, r->max = mx;
    kiln_vec_push(&r->kids, atom);
    atom = r;
  }
  return atom;
}

static rnode *parse_concat(parser *ps) {
  rnode *cat = new_node(ps, N_CAT);
  while (ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
    rnode *k = parse_repeat(ps);
    if (!k) return NULL;
    kiln_vec_push(&cat->kids, k);
  }
  return cat;
}

static rnode *parse_alt(parser *ps) {
  rnode *alt = new_node(ps, N_ALT);
  for (;;) {
    rnode *k = parse_concat(ps);
    if (!k) return NULL;
    kiln_vec_push(&alt->kids, k);
    if (ps->p >= ps->end || *ps->p != '|') break;
    ps->p++;
  }
  return alt;
}

/* ---- compiler ---- */
static int emit(kiln_text_regex *re, inst_op op) {
  if (re->n + 1 > re->cap) {
    re->cap = re->cap ? 2 * re->cap : 64;
    re->prog = kiln_xrealloc(re->prog, (size_t)re->cap * sizeof(inst));
  }
  re->prog[re->n] = (inst){op, 0, 0, NULL};
  return re->n++;
}

static bool compile(kiln_text_regex *re, const rnode *n);

static bool compile_rep(kiln_text_regex *re, const rnode *n) {
  const rnode *k = n->kids.data[0];
  for (int i = 0; i < n->min; i++)
    if (!compile(re, k)) return false;
  if (n->max < 0) { /* L: split body, out; body; jmp L */
    int l = emit(re, I_SPLIT);
    re->prog[l].x = l + 1;
    if (!compile(re, k)) return false;
    int j = emit(re, I_JMP);
    re->prog[j].x = l;
    re->prog[l].y = re->n;
    return true;
  }
  int *holes = kiln_xmalloc((size_t)(n->max - n->min + 1) * sizeof(int)), nh = 0;
  for (int i = n->min; i < n->max; i++) { /* nested optionals */
    int s = emit(re, I_SPLIT);
    re->prog[s].x = s + 1;
    holes[nh++] = s;
    if (!compile(re, k)) return free(holes), false;
  }
  for (int i = 0; i < nh; i++) re->prog[holes[i]].y = re->n;
  free(holes);
  return true;
}

static bool compile(kiln_text_regex *re, const rnode *n) {
  if (re->n > MAX_INSTS) return false;
  switch (n->kind) {
  case N_CLASS: {
    int k = emit(re, I_CLASS); /* emit may move re->prog */
    re->prog[k].c = n->c;
    return true;
  }
  case N_EMPTY: return true;
  case N_ASSERT: {
    int k = emit(re, I_ASSERT);
    re->prog[k].x = n->akind;
    return true;
  }
  case N_CAT:
    for (int i = 0; i < n->kids.len; i++)
      if (!compile(re, n->kids.data[i])) return false;
    return true;
  case N_REP: return compile_rep(re, n);
  case N_ALT: {
    if (n->kids.len == 1) return compile(re, n->kids.data[0]);
    int *jmps = kiln_xmalloc((size_t)n->kids.len * sizeof(int));
    for (int i = 0; i < n->kids.len; i++) {
      int s = -1;
      if (i + 1 < n->kids.len) s = emit(re, I_SPLIT), re->prog[s].x = s + 1;
      if (!compile(re, n->kids.data[i])) return free(jmps), false;
      jmps[i] = i + 1 < n->kids.len ? emit(re, I_JMP) : -1;
      if (s >= 0) re->prog[s].y = re->n;
    }
    for (int i = 0; i + 1 < n->kids.len; i++) re->prog[jmps[i]].x = re->n;
    free(jmps);
    return true;
  }
  }
  return false;
}

void kiln_text_regex_free(kiln_text_regex *re) {
  if (!re) return;
  for (int i = 0; i < re->classes.len; i++) {
    free(re->classes.data[i]->r);
    free(re->classes.data[i]);
  }
  kiln_vec_free(&re->classes);
  free(re->prog);
  free(re);
}

kiln_status kiln_text_regex_compile(const char *pattern, kiln_text_regex **out) {
  *out = NULL;
  kiln_text_regex *re = kiln_xcalloc(1, sizeof *re);
  parser ps = {.start = pattern, .p = pattern, .end = pattern + strlen(pattern), .re = re};
  rnode *root = parse_alt(&ps);
  if (root && ps.p < ps.end) perr(&ps, "unmatched )");
  if (root && !ps.err && !compile(re, root)) perr(&ps, "pattern too large");
  if (!ps.err) emit(re, I_MATCH);
  for (int i = 0; i < ps.all.len; i++) {
    kiln_vec_free(&ps.all.data[i]->kids);
    free(ps.all.data[i]);
  }
  kiln_vec_free(&ps.all);
  if (ps.err) {
    kiln_text_regex_free(re);
    return ps.err;
  }
  *out = re;
  return KILN_OK;
}

/* ---- matcher (Pike VM, no captures) ---- */
typedef struct thread_list {
  int *pc, n;
} thread_list;

static bool is_word(uint32_t c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* prev / next: code points around the position, or -1 at the text ends. */
static bool assert_ok(int kind, int64_t prev, int64_t next) {
  switch (kind) {
  case A_BOT: return prev < 0;
  case A_EOT: return next < 0;
  case A_BOL: return prev < 0 || prev == '\n';
  case A_EOL: return next < 0 || next == '\n';
  case A_WORD:
  case A_NOTWORD: {
    bool b = (prev >= 0 && is_word((uint32_t)prev)) != (next >= 0 && is_word((uint32_t)next));
    return kind == A_WORD ? b : !b;
  }
  }
  return false;
}

/* Adds pc and everything reachable from it by empty transitions (an explicit stack:
 * counted repeats can chain thousands of splits). */
static void add_thread(const kiln_text_regex *re, thread_list *l, int *mark, int gen, int *stack,
                       int pc, int64_t prev, int64_t next) {
  int sp = 0;
  stack[sp++] = pc;
  while (sp) {
    pc = stack[--sp];
    if (mark[pc] == gen) continue;
    mark[pc] = gen;
    const inst *in = &re->prog[pc];
    switch (in->op) {
    case I_JMP: stack[sp++] = in->x; break;
    case I_SPLIT:
      stack[sp++] = in->y;
      stack[sp++] = in->x;
      break;
    case I_ASSERT:
      if (assert_ok(in->x, prev, next)) stack[sp++] = pc + 1;
      break;
    default: l->pc[l->n++] = pc; break;
    }
  }
}

bool kiln_text_regex_fullmatch(const kiln_text_regex *re, const char *s) {
  size_t len = strlen(s);
  /* decode once so that lookahead for assertions is cheap */
  uint32_t *cps = kiln_xmalloc((len + 1) * sizeof(uint32_t));
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    size_t k = kiln_text_utf8_decode(s + i, len - i, &cps[n]);
    if (!k) cps[n] = 0xFFFD, k = 1;
    i += k, n++;
  }
  thread_list a = {kiln_xmalloc((size_t)re->n * sizeof(int)), 0};
  thread_list b = {kiln_xmalloc((size_t)re->n * sizeof(int)), 0};
  int *mark = kiln_xcalloc((size_t)re->n, sizeof(int)), gen = 1;
  int *stack = kiln_xmalloc((size_t)(2 * re->n + 2) * sizeof(int));
  thread_list *cur = &a, *nxt = &b;
  add_thread(re, cur, mark, gen, stack, 0, -1, n ? (int64_t)cps[0] : -1);
  for (size_t i = 0; i < n && cur->n; i++) {
    nxt->n = 0;
    gen++;
    int64_t prev = cps[i], next = i + 1 < n ? (int64_t)cps[i + 1] : -1;
    for (int t = 0; t < cur->n; t++) {
      const inst *in = &re->prog[cur->pc[t]];
      if (in->op == I_CLASS && cls_match(in->c, cps[i]))
        add_thread(re, nxt, mark, gen, stack, cur->pc[t] + 1, prev, next);
    }
    thread_list *tmp = cur;
    cur = nxt, nxt = tmp;
  }
  bool matched = false;
  for (int t = 0; t < cur->n && !matched; t++) matched = re->prog[cur->pc[t]].op == I_MATCH;
  free(cps), free(a.pc), free(b.pc), free(mark), free(stack);
  return matched;
}
