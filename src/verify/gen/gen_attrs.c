/* The attribute layer of gen_emit: what the op schemas say about a node's attributes, applied
 * to the text a builder wrote. Both rewrites keep the node's meaning:
 *   - an attribute written with its schema default is left out now and then (absent: the
 *     default applies; an importer or a pass that reads a wrong default shows);
 *   - an attribute the builder left out that has a default is written with it now and then.
 * Both draw from the step's attribute stream. */
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"
#include "ops/op_attrs.h"

enum { MAX_ITEMS = 16 };

/* Splits "a=1, b=[1,2], c=\"x\"" at the top-level commas; item i is text[start[i]..end[i]). */
static int split_items(const char *t, int *start, int *end) {
  int n = 0, depth = 0;
  bool quote = false;
  int s = 0;
  for (int i = 0;; i++) {
    char c = t[i];
    if (c == '"' && (i == 0 || t[i - 1] != '\\')) quote = !quote;
    else if (!quote && (c == '[' || c == '{')) depth++;
    else if (!quote && (c == ']' || c == '}')) depth--;
    if (c == 0 || (!quote && depth == 0 && c == ',')) {
      while (t[s] == ' ') s++;
      if (i > s && n < MAX_ITEMS) start[n] = s, end[n++] = i;
      if (c == 0) break;
      s = i + 1;
    }
  }
  return n;
}

/* True when the item's value text equals the schema default d. */
static bool is_default(const char *v, int len, const kiln_attr_schema *d) {
  char buf[128];
  if (!d->has_default || len <= 0 || len >= (int)sizeof buf) return false;
  memcpy(buf, v, (size_t)len), buf[len] = 0;
  char *endp;
  switch (d->kind) {
  case KILN_ATTR_INT: {
    long long x = strtoll(buf, &endp, 10);
    return *endp == 0 && x == d->i;
  }
  case KILN_ATTR_FLOAT: {
    double x = strtod(buf, &endp);
    return *endp == 0 && (float)x == d->f;
  }
  case KILN_ATTR_STRING:
    return len >= 2 && buf[0] == '"' && d->s && strlen(d->s) == (size_t)len - 2 &&
           !strncmp(buf + 1, d->s, (size_t)len - 2);
  default: return false;
  }
}

static void write_default(kiln_strbuf *b, const kiln_attr_schema *d) {
  switch (d->kind) {
  case KILN_ATTR_INT: kiln_strbuf_printf(b, "%s=%lld", d->name, (long long)d->i); break;
  case KILN_ATTR_FLOAT: kiln_strbuf_printf(b, "%s=%.9g", d->name, (double)d->f); break;
  case KILN_ATTR_STRING: kiln_strbuf_printf(b, "%s=\"%s\"", d->name, d->s ? d->s : ""); break;
  default: break;
  }
}

static bool scalar_kind(int kind) {
  return kind == KILN_ATTR_INT || kind == KILN_ATTR_FLOAT || kind == KILN_ATTR_STRING;
}

char *gen_attrs_vary(gen *G, const char *op_name, const char *attrs) {
  kiln_op op = kiln_op_lookup("", op_name);
  const kiln_op_schema_version *sv = kiln_op_schema_at(op, G->opset);
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s", "");
  const char *t = attrs ? attrs : "";
  int st[MAX_ITEMS], en[MAX_ITEMS], n = split_items(t, st, en);
  bool written[64] = {0};
  for (int k = 0; k < n; k++) {
    const char *eq = memchr(t + st[k], '=', (size_t)(en[k] - st[k]));
    const kiln_attr_schema *d = NULL;
    for (int a = 0; sv && eq && sv->attrs[a].name && a < 64; a++)
      if ((int)strlen(sv->attrs[a].name) == eq - (t + st[k]) &&
          !strncmp(sv->attrs[a].name, t + st[k], (size_t)(eq - (t + st[k]))))
        d = &sv->attrs[a], written[a] = true;
    if (d && is_default(eq + 1, (int)(t + en[k] - eq - 1), d) && gen_attr_chance(G, 0.35))
      continue; /* left out: the default applies */
    kiln_strbuf_printf(&b, "%s%.*s", b.len ? ", " : "", en[k] - st[k], t + st[k]);
  }
  for (int a = 0; sv && sv->attrs[a].name && a < 64; a++) {
    const kiln_attr_schema *d = &sv->attrs[a];
    if (written[a] || !d->has_default || !scalar_kind(d->kind) || !gen_attr_chance(G, 0.15))
      continue;
    if (b.len) kiln_strbuf_printf(&b, ", ");
    write_default(&b, d);
  }
  return b.data;
}
