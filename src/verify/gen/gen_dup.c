/* Duplicates and near-duplicates of an earlier node, for the passes that merge nodes (cse):
 * an exact copy (must be merged), the copy with its attributes written differently but meaning
 * the same (a default written out or left out: may be merged), or a near-copy that must stay
 * apart: one attribute of any kind changed (an int moved, a float, another value of an
 * enumerated attribute, one element of a list), two operands swapped, a constant operand
 * replaced by one that differs in a single element, or a Split into another number of parts.
 * Inference decides whether the variant is valid; a rejected draw is redrawn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

/* The attribute text of line ("... {a=1, b=2}") split around item k of n: the bounds of the
 * braces' content and of each top-level item. */
typedef struct attr_items {
  const char *open, *close; /* '{' and '}' of the line, NULL when it has none */
  int n;
  const char *start[16], *end[16];
} attr_items;

static void find_items(const char *line, attr_items *it) {
  memset(it, 0, sizeof *it);
  it->open = strstr(line, ") {");
  if (!it->open) return;
  it->open += 2, it->close = strrchr(line, '}');
  const char *s = it->open + 1;
  int depth = 0;
  bool quote = false;
  for (const char *p = s; p <= it->close; p++) {
    if (*p == '"') quote = !quote;
    else if (!quote && *p == '[') depth++;
    else if (!quote && *p == ']') depth--;
    if ((p == it->close || (!quote && !depth && *p == ',')) && it->n < 16) {
      while (*s == ' ') s++;
      if (p > s) it->start[it->n] = s, it->end[it->n++] = p;
      s = p + 1;
    }
  }
}

static void changed_element(const char *x, size_t len, gen_dom dom, bool fl, kiln_strbuf *b);

/* Writes item's name=value with the value changed (a new string in b); false when the item
 * has no change the generator knows. */
static bool change_value(gen *G, const char *op, const char *s, const char *e, kiln_strbuf *b) {
  const char *eq = memchr(s, '=', (size_t)(e - s));
  if (!eq) return false;
  char name[64], val[512];
  snprintf(name, sizeof name, "%.*s", (int)(eq - s), s);
  snprintf(val, sizeof val, "%.*s", (int)(e - eq - 1), eq + 1);
  const char *const *ev = gen_enum_values(op, name);
  if (ev && !strcmp(name, "direction") && strcmp(op, "BitShift")) {
    /* a recurrent op's direction: forward and reverse alone, whose weights have the same
     * shape (bidirectional doubles their first extent, and inference of the seqmodel family
     * does not check it: only the reference would refuse the node) */
    if (strstr(val, "bidirectional")) return false;
    kiln_strbuf_printf(b, "%s=\"%s\"", name, strstr(val, "reverse") ? "forward" : "reverse");
    return true;
  }
  if (ev) { /* another value of the enumeration, written as the original was */
    int n = 0;
    while (n < 6 && ev[n]) n++;
    const char *to = ev[gen_attr_int(G, 0, n - 1)];
    bool quoted = val[0] == '"';
    if (quoted ? !strncmp(val + 1, to, strlen(to)) && val[1 + strlen(to)] == '"' : !strcmp(val, to))
      return false;
    kiln_strbuf_printf(b, quoted ? "%s=\"%s\"" : "%s=%s", name, to);
    return true;
  }
  size_t vl = strlen(val);
  if (val[0] == '"' && vl >= 3 && val[vl - 1] == '"') { /* a free string: an Einsum equation */
    char t[512];
    int n = (int)vl - 2, kind = gen_attr_int(G, 0, 3), i = gen_attr_int(G, 0, n - 1);
    memcpy(t, val + 1, (size_t)n), t[n] = 0;
    if (kind == 0 && n >= 2) t[gen_attr_int(G, 1, n - 1)] = 0; /* a prefix of it */
    else if (kind == 1 && n < 200) { /* extended: an output written out, or one more label */
      size_t l = strlen(t);
      if (!strstr(t, "->")) t[l++] = '-', t[l++] = '>', t[l] = 0;
      const char *out = strstr(t, "->") + 2;
      for (int k = gen_attr_int(G, 1, 2); k > 0; k--) {
        int j = gen_attr_int(G, 0, n - 1);
        if (t[j] >= 'a' && t[j] <= 'z' && !strchr(out, t[j])) t[l++] = t[j], t[l] = 0;
      }
    } else if (kind == 2 && n >= 2 && i + 1 < n && t[i] != t[i + 1]) { /* two neighbours swapped */
      char c = t[i];
      t[i] = t[i + 1], t[i + 1] = c;
    } else if (n >= 2) memmove(t + i, t + i + 1, (size_t)(n - i)); /* one character dropped */
    else return false;
    if (strlen(t) == (size_t)n && !strncmp(t, val + 1, (size_t)n)) return false; /* unchanged */
    kiln_strbuf_printf(b, "%s=\"%s\"", name, t);
    return true;
  }
  char *endp;
  const char *lb = strstr(val, "] [");
  if (lb && val[0] != '[' && vl > 0 && val[vl - 1] == ']') {
    /* a tensor attribute "dt[dims] [e0, e1, ...]" (ConstantOfShape's value): one element
     * changed */
    int n = 1;
    for (const char *p = lb + 3; *p; p++) n += *p == ',';
    int pick = gen_attr_int(G, 0, n - 1), i = 0;
    kiln_strbuf_printf(b, "%s=%.*s", name, (int)(lb + 3 - val), val);
    for (const char *p = lb + 3; *p && *p != ']'; i++) {
      while (*p == ' ') p++;
      const char *q = p;
      while (*q && *q != ',' && *q != ']') q++;
      if (i) kiln_strbuf_printf(b, ", ");
      if (i == pick) /* the dtype is the value's first word: f16, bf16, f32, f64 are floats */
        changed_element(p, (size_t)(q - p), DOM_ANY, val[0] == 'f' || !strncmp(val, "bf16", 4), b);
      else kiln_strbuf_printf(b, "%.*s", (int)(q - p), p);
      p = q + (*q == ',');
    }
    kiln_strbuf_printf(b, "]");
    return true;
  }
  if (val[0] == '[' && !strcmp(name, "perm")) { /* a permutation: two entries swapped */
    long long v[KILN_MAX_RANK];
    int n = 0;
    for (char *p = val + 1; *p && *p != ']' && n < KILN_MAX_RANK; n++) {
      v[n] = strtoll(p, &endp, 10);
      if (endp == p) return false;
      p = endp + (*endp == ',');
    }
    if (n < 2) return false;
    int i = gen_attr_int(G, 0, n - 1), j = gen_attr_int(G, 0, n - 2);
    j += j >= i;
    long long t = v[i];
    v[i] = v[j], v[j] = t;
    kiln_strbuf_printf(b, "%s=[", name);
    for (int k = 0; k < n; k++) kiln_strbuf_printf(b, "%s%lld", k ? "," : "", v[k]);
    kiln_strbuf_printf(b, "]");
    return true;
  }
  if (val[0] == '[' && val[1] == '"') { /* strings: one replaced by another the op takes */
    int n = 1, pick;
    for (char *p = val; *p; p++) n += *p == ',';
    pick = gen_attr_int(G, 0, n - 1);
    const char *to = gen_list_string(G, op, name);
    if (!to) return false;
    kiln_strbuf_printf(b, "%s=[", name);
    int i = 0;
    for (const char *p = val + 1; *p == '"'; i++) {
      const char *q = strchr(p + 1, '"');
      if (!q) return false;
      if (i == pick && (size_t)(q - p - 1) == strlen(to) && !strncmp(p + 1, to, strlen(to)))
        return false; /* the same string drawn: no change */
      if (i == pick) kiln_strbuf_printf(b, "%s\"%s\"", i ? ", " : "", to);
      else kiln_strbuf_printf(b, "%s%.*s", i ? ", " : "", (int)(q - p + 1), p);
      p = q + 1;
      while (*p == ',' || *p == ' ') p++;
    }
    kiln_strbuf_printf(b, "]");
    return true;
  }
  if (val[0] == '[' && strpbrk(val, ".eE")) { /* floats: one scaled */
    int n = 1;
    for (char *p = val; *p; p++) n += *p == ',';
    int pick = gen_attr_int(G, 0, n - 1), i = 0;
    kiln_strbuf_printf(b, "%s=[", name);
    for (char *p = val + 1; *p && *p != ']'; i++) {
      double x = strtod(p, &endp);
      if (endp == p) return false;
      if (i == pick) x = x * (0.5 + gen_attr_unif(G)) + 0.01;
      kiln_strbuf_printf(b, "%s%.4g", i ? ", " : "", x);
      p = endp;
      while (*p == ',' || *p == ' ') p++;
    }
    kiln_strbuf_printf(b, "]");
    return true;
  }
  if (val[0] == '[') { /* a list: one element moved by one */
    int n = 1;
    for (char *p = val; *p; p++) n += *p == ',';
    int pick = gen_attr_int(G, 0, n - 1), i = 0;
    kiln_strbuf_printf(b, "%s=[", name);
    for (char *p = val + 1; *p && *p != ']'; i++) {
      long long x = strtoll(p, &endp, 10);
      if (endp == p) return false;
      kiln_strbuf_printf(b, "%s%lld", i ? "," : "",
                         i == pick ? x + (gen_attr_chance(G, 0.5) ? 1 : -1) : x);
      p = endp + (*endp == ',');
    }
    kiln_strbuf_printf(b, "]");
    return true;
  }
  long long xi = strtoll(val, &endp, 10);
  if (*endp == 0) {
    long long to = gen_attr_chance(G, 0.3) ? -xi - 1 : xi + (gen_attr_chance(G, 0.5) ? 1 : -1);
    kiln_strbuf_printf(b, "%s=%lld", name, to);
    return true;
  }
  double xf = strtod(val, &endp);
  if (*endp == 0) { /* a zero half the time becomes the other zero: equal, yet not the same */
    if (xf == 0 && gen_attr_chance(G, 0.5))
      kiln_strbuf_printf(b, "%s=%s", name, signbit(xf) ? "0" : "-0");
    else kiln_strbuf_printf(b, "%s=%.4g", name, xf * (0.5 + gen_attr_unif(G)) + 0.01);
    return true;
  }
  return false;
}

/* The line with attribute item k changed; NULL when it cannot be. */
static char *with_changed_attr(gen *G, const char *line, const char *op) {
  attr_items it;
  find_items(line, &it);
  if (it.n == 0) return NULL;
  int k = gen_attr_int(G, 0, it.n - 1);
  /* the axis or batch_dims of a Gather or Scatter op says which extent its index data counts
   * in: changed, valid indices may leave it (GatherND batch_dims 1 -> 0 moved index 4 of an
   * extent of 5 onto one of 4; found by a control campaign), which inference cannot check */
  if ((!strncmp(op, "Gather", 6) || !strncmp(op, "Scatter", 7)) &&
      (!strncmp(it.start[k], "axis=", 5) || !strncmp(it.start[k], "batch_dims=", 11)))
    return NULL;
  /* the hidden_size of a recurrent op must match its weights' shape, which inference of the
   * seqmodel family does not check (it never rejects): changed, only the reference refuses
   * the node (a false report of a 60-s campaign) */
  if ((!strcmp(op, "RNN") || !strcmp(op, "GRU") || !strcmp(op, "LSTM")) &&
      !strncmp(it.start[k], "hidden_size=", 12))
    return NULL;
  kiln_strbuf v = {0};
  if (!change_value(G, op, it.start[k], it.end[k], &v)) {
    kiln_strbuf_free(&v);
    return NULL;
  }
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%.*s%s%s", (int)(it.start[k] - line), line, v.data, it.end[k]);
  kiln_strbuf_free(&v);
  return b.data;
}

/* The line with its attribute text varied through the schema defaults (same meaning). */
static char *with_defaults_varied(gen *G, const char *line, const char *op) {
  attr_items it;
  find_items(line, &it);
  char *inner = NULL;
  if (it.open) {
    size_t n = (size_t)(it.close - it.open - 1);
    inner = kiln_xmalloc(n + 1);
    memcpy(inner, it.open + 1, n), inner[n] = 0;
  }
  char *varied = gen_attrs_vary(G, op, inner ? inner : "");
  free(inner);
  kiln_strbuf b = {0};
  int head = it.open ? (int)(it.open - 1 - line) : (int)strlen(line);
  kiln_strbuf_printf(&b, "%.*s%s%s%s", head, line, varied[0] ? " {" : "", varied,
                     varied[0] ? "}" : "");
  free(varied);
  return b.data;
}

/* The value an operand text "%name" names, -1 for "_" or an unknown name. */
static int operand_val(const gen *G, const char *s, const char *e) {
  if (*s != '%') return -1;
  for (int v = 0; v < G->vals.len; v++)
    if ((size_t)(e - s - 1) == strlen(G->vals.data[v].name) &&
        !strncmp(s + 1, G->vals.data[v].name, (size_t)(e - s - 1)))
      return v;
  return -1;
}

/* The line with operands i and j swapped (of "= Op(%a, %b, ...)"); NULL with fewer than two. */
static char *with_swapped_operands(gen *G, const char *line) {
  const char *lp = strchr(strstr(line, " = "), '('), *rp = lp ? strchr(lp, ')') : NULL;
  if (!rp) return NULL;
  const char *s[8], *e[8];
  int n = 0;
  for (const char *p = lp + 1; p < rp && n < 8;) {
    while (*p == ' ') p++;
    const char *q = p;
    while (q < rp && *q != ',') q++;
    s[n] = p, e[n++] = q;
    p = q + 1;
  }
  if (n < 2) return NULL;
  int i = gen_int(&G->rng, 0, n - 1), j = gen_int(&G->rng, 0, n - 2);
  if (j >= i) j++;
  /* only operands of one type and domain trade places: the node stays valid (a divisor stays
   * nonzero, a Clip bound a scalar) and the variant differs by the order alone */
  int vi = operand_val(G, s[i], e[i]), vj = operand_val(G, s[j], e[j]);
  if (vi < 0 || vj < 0 || vi == vj ||
      !kiln_type_equal(&G->vals.data[vi].type, &G->vals.data[vj].type) ||
      G->vals.data[vi].dom != G->vals.data[vj].dom)
    return NULL;
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%.*s", (int)(lp + 1 - line), line);
  for (int k = 0; k < n; k++) {
    int from = k == i ? j : k == j ? i : k;
    kiln_strbuf_printf(&b, "%s%.*s", k ? ", " : "", (int)(e[from] - s[from]), s[from]);
  }
  kiln_strbuf_printf(&b, "%s", rp);
  return b.data;
}

/* Element text x of a constant changed so that it stays in domain dom: a float halved, a zero
 * made the other signed zero (GE1 moved up by 0.25), an integer moved by one away from 0, a
 * boolean flipped. A pass that compares or hashes constants by value merges the two zeros. */
static void changed_element(const char *x, size_t len, gen_dom dom, bool fl, kiln_strbuf *b) {
  char t[64], *endp;
  snprintf(t, sizeof t, "%.*s", (int)(len < 63 ? len : 63), x);
  if (!strcmp(t, "true") || !strcmp(t, "false")) {
    kiln_strbuf_printf(b, "%s", t[0] == 't' ? "false" : "true");
    return;
  }
  double f = strtod(t, &endp);
  if (fl && f == 0 && dom != DOM_POS && dom != DOM_NONZERO && dom != DOM_GE1) {
    kiln_strbuf_printf(b, "%s", t[0] == '-' ? "0" : "-0"); /* the other signed zero */
    return;
  }
  long long i = strtoll(t, &endp, 10);
  if (*endp == 0) {
    kiln_strbuf_printf(b, "%lld", i + 1 != 0 ? i + 1 : i + 2);
    return;
  }
  f = strtod(t, &endp);
  kiln_strbuf_printf(b, "%.9g", dom == DOM_GE1 ? f + 0.25 : f != 0 ? f * 0.5 : 0.5);
}

/* The line with one constant operand replaced by a new constant that differs from it in one
 * element (the last one half the time: a comparison of a prefix, or of a hash, must not merge
 * them); NULL when the node reads no constant. The new constant's line is written first. */
static char *with_near_const(gen *G, const char *line) {
  const char *lp = strchr(strstr(line, " = "), '('), *rp = lp ? strchr(lp, ')') : NULL;
  if (!rp) return NULL;
  const char *s[8], *e[8];
  int n = 0, cand[8], nc = 0;
  /* the integer operands of Gather and Scatter ops are indices, valid only within the data's
   * extents, which inference cannot check: moved by one, they may leave it (ScatterND index 1
   * into an extent of 1, from the 30-minute control) */
  const char *op = strstr(line, " = ") + 3;
  bool indexed = !strncmp(op, "Gather", 6) || !strncmp(op, "Scatter", 7);
  for (const char *p = lp + 1; p < rp && n < 8;) {
    while (*p == ' ') p++;
    const char *q = p;
    while (q < rp && *q != ',') q++;
    s[n] = p, e[n] = q;
    int v = operand_val(G, p, q);
    if (v >= 0 && G->vals.data[v].is_const &&
        !(indexed && !kiln_dtype_is_float(G->vals.data[v].type.dtype)))
      cand[nc++] = n;
    n++;
    p = q + 1;
  }
  if (nc == 0) return NULL;
  int k = cand[gen_int(&G->rng, 0, nc - 1)], v = operand_val(G, s[k], e[k]);
  char head[40];
  int hn = snprintf(head, sizeof head, "%%%s = const ", G->vals.data[v].name);
  const char *cl = NULL;
  for (int i = 0; i < G->lines.len && !cl; i++)
    if (!strncmp(G->lines.data[i], head, (size_t)hn)) cl = G->lines.data[i];
  const char *data = cl ? strrchr(cl, '[') : NULL;
  if (!data || data[1] == ']') return NULL;
  int count = 1;
  for (const char *p = data; *p; p++) count += *p == ',';
  int pick = gen_chance(&G->rng, 0.5) ? count - 1 : gen_int(&G->rng, 0, count - 1);
  if (kiln_dtype_is_float(G->vals.data[v].type.dtype) && gen_chance(&G->rng, 0.5)) {
    const char *p = data + 1; /* a zero element when there is one: its twin of the other sign */
    for (int i = 0; i < count; i++) {
      const char *q = p + strcspn(p, ",]");
      if (strtod(p, NULL) == 0) pick = i;
      p = *q ? q + 1 : q;
      while (*p == ' ') p++;
    }
  }
  gen_val nv = G->vals.data[v];
  snprintf(nv.name, sizeof nv.name, "c%d", G->next_name++);
  nv.mag = nv.mag * 2 + 1;
  kiln_strbuf c = {0};
  kiln_strbuf_printf(&c, "%%%s = const %.*s[", nv.name, (int)(data - cl - hn), cl + hn);
  const char *p = data + 1;
  for (int i = 0; i < count; i++) {
    const char *q = p + strcspn(p, ",]");
    if (i == pick) {
      kiln_strbuf_printf(&c, "%s", i ? ", " : "");
      changed_element(p, (size_t)(q - p), nv.dom, kiln_dtype_is_float(nv.type.dtype), &c);
    } else kiln_strbuf_printf(&c, "%s%.*s", i ? ", " : "", (int)(q - p), p);
    p = q + 1;
    while (*p == ' ') p++;
  }
  kiln_strbuf_printf(&c, "]");
  kiln_vec_push(&G->vals, nv);
  kiln_vec_push(&G->lines, c.data);
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%.*s%%%s%s", (int)(s[k] - line), line, nv.name, e[k]);
  return b.data;
}

/* A Split's line with its output count n written into num_outputs where it has one (opset
 * 18); without it the count alone sets the parts (opset 13-17) or the split input does (the
 * other count is then invalid and redrawn). */
static char *with_output_count(const char *line, int n) {
  const char *a = strstr(line, "num_outputs=");
  kiln_strbuf b = {0};
  if (!a) kiln_strbuf_printf(&b, "%s", line);
  else {
    const char *e = a + strlen("num_outputs=");
    e += strspn(e, "0123456789");
    kiln_strbuf_printf(&b, "%.*snum_outputs=%d%s", (int)(a - line), line, n, e);
  }
  return b.data;
}

/* A copy of node line `line` of kind 0 exact, 1 same meaning, 2 an attribute changed, 3 two
 * operands swapped, 4 a constant operand replaced by one that differs in one element, 5 (Split)
 * another number of outputs, so other parts of the same input; the index of its first output,
 * -1 when that variant does not exist. */
static int copy_line(gen *G, const char *line, int kind) {
  const char *eq = strstr(line, " = ");
  char opname[64];
  snprintf(opname, sizeof opname, "%.*s", (int)strcspn(eq + 3, "("), eq + 3);
  int n_out = 1;
  for (const char *p = line; p < eq; p++) n_out += *p == ',';
  if (kind == 5 && strcmp(opname, "Split")) return -1;
  int n_copy = kind != 5 ? n_out : n_out == 1 || gen_chance(&G->rng, 0.5) ? n_out + 1 : n_out - 1;
  char *body = kind == 2   ? with_changed_attr(G, line, opname)
               : kind == 3 ? with_swapped_operands(G, line)
               : kind == 4 ? with_near_const(G, line)
               : kind == 1 ? with_defaults_varied(G, line, opname)
               : kind == 5 ? with_output_count(line, n_copy)
                           : NULL;
  if (kind >= 2 && !body) return -1;
  gen_val src = G->vals.data[0];
  for (int i = 0; i < G->vals.len; i++) /* the domain of the copied node's first output */
    if (!strncmp(line + 1, G->vals.data[i].name, strlen(G->vals.data[i].name)) &&
        (line[1 + strlen(G->vals.data[i].name)] == ' ' ||
         line[1 + strlen(G->vals.data[i].name)] == ','))
      src = G->vals.data[i];
  if (kind >= 2) src.dom = DOM_ANY, src.mag = src.mag * 4 + 4; /* another value: what is known */
  kiln_strbuf b = {0};
  int first = G->vals.len;
  for (int k = 0; k < n_copy; k++) {
    gen_val v = src;
    snprintf(v.name, sizeof v.name, "v%d", G->next_name++);
    v.is_input = v.is_const = false;
    if (kind == 5) memset(&v.type, 0, sizeof v.type); /* other parts: inference types them */
    kiln_vec_push(&G->vals, v);
    kiln_strbuf_printf(&b, "%s%%%s", k ? ", " : "", v.name);
  }
  const char *from = body ? body : line;
  kiln_strbuf_printf(&b, "%s", strstr(from, " = "));
  free(body);
  kiln_vec_push(&G->lines, b.data);
  return first;
}

/* Whether a node line defines several outputs ("%a, %b = Split(...)"). */
static bool several_outputs(const char *line) {
  const char *eq = strstr(line, " = ");
  return eq && memchr(line, ',', (size_t)(eq - line)) != NULL;
}

bool gen_b_duplicate(gen *G, int op) {
  (void)op;
  int n = 0, idx[64], nm = 0, multi[64];
  for (int i = 0; i < G->lines.len && n < 64; i++)
    if (!strstr(G->lines.data[i], "= const ")) {
      idx[n++] = i;
      if (several_outputs(G->lines.data[i])) multi[nm++] = i;
    }
  if (n == 0) return false;
  /* half the time a node of several outputs where there is one: a merge must map each
   * output of the copy to the same output of the original */
  const char *line = nm > 0 && gen_chance(&G->rng, 0.5)
                         ? G->lines.data[multi[gen_int(&G->rng, 0, nm - 1)]]
                         : G->lines.data[idx[gen_int(&G->rng, 0, n - 1)]];
  /* a Split: now and then another number of parts of the same input (its outputs are not
   * those of the original: a merge must compare the output counts) */
  int kind = strstr(line, " = Split(") && gen_chance(&G->rng, 0.3) ? 5 : gen_attr_int(G, 0, 4);
  int first = copy_line(G, line, kind);
  if (first < 0 || (kind == 5 && !gen_settle(G))) return false;
  /* now and then a reader of a later output of the copy: a merge must move every output's
   * readers to the original, not the first output's alone */
  int n_copy = G->vals.len - first;
  if (n_copy > 1 && gen_chance(&G->rng, 0.5) && gen_settle(G)) {
    int v = first + gen_int(&G->rng, 1, n_copy - 1);
    kiln_dtype dt = gen_dtype(G, v);
    if (gen_dt_bit(dt))
      gen_emit(G,
               dt == KILN_BOOL                              ? "Not"
               : kiln_dtype_class_of(dt) == KILN_CLASS_UINT ? "Abs"
                                                            : "Neg",
               1, &v, 1, "", DOM_ANY, gen_mag(G, v));
  }
  return true;
}

int gen_copy_last_node(gen *G, int kind) {
  for (int i = G->lines.len - 1; i >= 0; i--)
    if (!strstr(G->lines.data[i], "= const ")) return copy_line(G, G->lines.data[i], kind);
  return -1;
}
