/* The pass layers of the runner: the graph after pass applications, interpreted.
 *
 * One survey run of the pipeline (bisection log and a dump after every pass) gives the
 * applications in order and which of them changed the graph. With each_pass, the graph
 * after every application that changed it is rebuilt with the pass limit and interpreted;
 * without, only the graph after the whole pipeline is, and a failure is bisected over the
 * applications with the pass limit. The failing application is localized by diffing the
 * graph before and after it: the nodes it created, rewrote or removed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

typedef struct survey {
  int n;             /* pass applications */
  char (*name)[32];  /* per application (1-based: name[k]) */
  bool *changed;     /* per application: the graph changed */
  int *changed_list; /* the applications that changed it, in order */
  int n_changed;
} survey;

static void survey_free(survey *s) {
  free(s->name);
  free(s->changed);
  free(s->changed_list);
}

static kiln_pass_opts pass_opts(const kiln_vrun *r, int64_t limit, FILE *log) {
  kiln_pass_opts po = r->o->compile.passes;
  if (!po.fuse_classify) po.fuse_classify = kiln_lower_fuse_class;
  po.pass_limit = limit;
  po.log = log;
  po.print_after = NULL;
  po.time_passes = false;
  po.stop_after = NULL;
  po.verify_each = true; /* a pass that breaks the IR's invariants is caught where it does */
  return po;
}

/* ---- the survey ---- */
static void dump_text(const kiln_graph *g, kiln_strbuf *out) {
  kiln_graph_print(g, out, 16);
}

/* Hash of text, line by line (the way parse_log hashes a dump). */
static uint64_t hash_lines(const char *text, uint64_t h) {
  for (const char *p = text; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    h = kiln_hash_bytes(p, n, h) * 31 + 1;
    p += n + (e ? 1 : 0);
  }
  return h;
}

/* The log holds "BISECT: running pass (k) NAME" before each application and, after it,
 * "// after NAME" and the graph. Fills s->name[1..] and hash[k] (of the dump after k; 0
 * when the application left no dump: it failed). Returns the applications seen. */
static int parse_log(const char *log, survey *s, uint64_t *hash) {
  int k = 0;
  bool in_dump = false;
  for (const char *p = log; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    long long idx;
    char name[32];
    if (!strncmp(p, "BISECT: ", 8)) {
      in_dump = false;
      if (sscanf(p, "BISECT: running pass (%lld) %31s", &idx, name) == 2 && k < s->n) {
        k++;
        snprintf(s->name[k], sizeof s->name[k], "%s", name);
      }
    } else if (!strncmp(p, "// after ", 9) && k > 0 && !in_dump) {
      in_dump = true;
      hash[k] = 1;
    } else if (in_dump) {
      hash[k] = kiln_hash_bytes(p, n, hash[k]) * 31 + 1;
    }
    p += n + (e ? 1 : 0);
  }
  return k;
}

/* Runs the whole pipeline on g once, logging; error when a pass fails (the last
 * application of the survey). */
static kiln_status survey_run(kiln_vrun *r, kiln_graph *g, survey *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *log = open_memstream(&buf, &len);
  if (!log) return kiln_error(KILN_ERR_FAILED, "cannot open a memory stream");
  kiln_strbuf before = {0};
  dump_text(g, &before);
  kiln_pass_opts po = pass_opts(r, INT64_MAX, log);
  po.print_after = "all";
  kiln_status st = kiln_passes_run(g, &po, NULL);
  fclose(log);
  int lines = 1;
  for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
  s->name = kiln_xcalloc((size_t)lines + 1, sizeof *s->name);
  s->changed = kiln_xcalloc((size_t)lines + 1, sizeof *s->changed);
  s->changed_list = kiln_xcalloc((size_t)lines + 1, sizeof *s->changed_list);
  uint64_t *hash = kiln_xcalloc((size_t)lines + 1, sizeof *hash);
  s->n = lines;
  s->n = parse_log(buf ? buf : "", s, hash);
  uint64_t prev = hash_lines(before.data, 1);
  for (int k = 1; k <= s->n; k++) {
    if (!hash[k]) continue; /* failed before its dump */
    s->changed[k] = hash[k] != prev;
    if (s->changed[k]) s->changed_list[s->n_changed++] = k;
    prev = hash[k];
  }
  free(hash);
  free(buf);
  kiln_strbuf_free(&before);
  return st;
}

static void record_fired(kiln_vrun *r, const survey *s) {
  char *f = r->res->fired;
  size_t cap = sizeof r->res->fired;
  for (int j = 0; j < s->n_changed; j++) {
    const char *name = s->name[s->changed_list[j]];
    bool seen = false;
    for (int i = 0; i < j && !seen; i++) seen = !strcmp(s->name[s->changed_list[i]], name);
    size_t used = strlen(f);
    if (!seen && used + strlen(name) + 2 < cap)
      snprintf(f + used, cap - used, "%s%s", used ? "," : "", name);
  }
}

/* ---- the graph after k applications ---- */
static kiln_status graph_after(kiln_vrun *r, int k, kiln_graph **out) {
  KILN_TRY(kiln_vrun_copy(r, out));
  char *buf = NULL;
  size_t len = 0;
  FILE *log = open_memstream(&buf, &len);
  if (!log) {
    kiln_graph_free(*out), *out = NULL;
    return kiln_error(KILN_ERR_FAILED, "cannot open a memory stream");
  }
  kiln_pass_opts po = pass_opts(r, k, log);
  kiln_status st = kiln_passes_run(*out, &po, NULL);
  fclose(log);
  free(buf);
  if (st) kiln_graph_free(*out), *out = NULL;
  return st;
}

/* Interprets g (outputs in the order of the caller's graph) into layer l. */
static void interpret(kiln_vrun *r, const kiln_graph *g, kiln_layer_result *l) {
  kiln_val **outs = kiln_xcalloc((size_t)g->outputs.len + 1, sizeof *outs);
  kiln_status st = g->outputs.len == r->g->outputs.len
                       ? kiln_interp_run(g, NULL, r->n_in, r->inputs, outs)
                       : kiln_invalid("the graph has %d outputs, the model %d", g->outputs.len,
                                      r->g->outputs.len);
  if (st) kiln_vrun_errored(r, l, st);
  else kiln_vrun_compare(r, l, outs);
  for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outs[i]);
  free(outs);
}

/* ---- localization: the nodes an application created, rewrote or removed ---- */
static void key_tensor(kiln_strbuf *b, const kiln_tensor *t) {
  char tb[128];
  uint64_t h = 0;
  if (t->dtype == KILN_STRING)
    for (int64_t i = 0; i < t->numel; i++) {
      const char *e = ((char **)t->data)[i];
      h = kiln_hash_bytes(e ? e : "", e ? strlen(e) : 0, h);
    }
  else if (t->data) h = kiln_hash_bytes(t->data, kiln_tensor_nbytes(t), 0);
  kiln_strbuf_printf(b, "=%s#%llx", kiln_tensor_type_str(t, tb, sizeof tb), (unsigned long long)h);
}

static void key_attr(kiln_strbuf *b, const kiln_attr *a) {
  kiln_strbuf_printf(b, " %s:%d:%lld:%a", a->name, (int)a->kind, (long long)a->i, (double)a->f);
  if (a->s) kiln_strbuf_printf(b, ":%llx", (unsigned long long)kiln_hash_bytes(a->s, a->s_len, 0));
  if (a->ints)
    kiln_strbuf_printf(b, ":%llx",
                       (unsigned long long)kiln_hash_bytes(a->ints, (size_t)a->n * 8, 0));
  if (a->floats)
    kiln_strbuf_printf(b, ":%llx",
                       (unsigned long long)kiln_hash_bytes(a->floats, (size_t)a->n * 4, 0));
  for (int i = 0; a->strings && i < a->n; i++) kiln_strbuf_printf(b, ":%s", a->strings[i]);
  if (a->t) key_tensor(b, a->t);
  if (a->g) kiln_strbuf_printf(b, ":g%d", a->g->nodes.len);
}

/* What a node computes, by names: op, attributes, inputs (constants by content), group;
 * with_types adds the output types. */
char *kiln_vrun_node_key(const kiln_graph *g, const kiln_node *n, bool with_types) {
  kiln_strbuf b = {0};
  char tb[128];
  kiln_strbuf_printf(&b, "%s::%s @%s g%d (", n->domain, n->op_type, n->name, n->group);
  for (int i = 0; i < n->n_inputs; i++) {
    int v = n->inputs[i];
    kiln_strbuf_printf(&b, "%s%s", i ? "," : "", v < 0 ? "_" : g->values.data[v].name);
    if (v >= 0 && g->values.data[v].kind == KILN_VALUE_CONST && g->values.data[v].data)
      key_tensor(&b, g->values.data[v].data);
  }
  kiln_strbuf_printf(&b, ") ->");
  for (int i = 0; i < n->n_outputs; i++) {
    int v = n->outputs[i];
    kiln_strbuf_printf(&b, " %s", v < 0 ? "_" : g->values.data[v].name);
    if (with_types && v >= 0)
      kiln_strbuf_printf(&b, ":%s", kiln_type_str(&g->values.data[v].type, tb, sizeof tb));
  }
  for (int a = 0; a < n->n_attrs; a++) key_attr(&b, &n->attrs[a]);
  return b.data ? b.data : kiln_xstrdup("");
}

static void key_set(const kiln_graph *g, bool with_types, kiln_strmap *m) {
  for (int i = 0; i < g->nodes.len; i++) {
    char *k = kiln_vrun_node_key(g, &g->nodes.data[i], with_types);
    kiln_strmap_put(m, k, i);
    free(k);
  }
}

/* Appends the nodes of a whose key is not in b's set to where/ops; returns their count. */
static int diff_nodes(const kiln_graph *a, const kiln_graph *b, bool with_types, const char *what,
                      kiln_strbuf *where, kiln_strbuf *ops) {
  kiln_strmap set = {0};
  key_set(b, with_types, &set);
  int n = 0;
  for (int i = 0; i < a->nodes.len; i++) {
    const kiln_node *nd = &a->nodes.data[i];
    char *k = kiln_vrun_node_key(a, nd, with_types);
    int64_t dummy;
    bool found = kiln_strmap_get(&set, k, &dummy);
    free(k);
    if (found) continue;
    const char *label = nd->name[0]                            ? nd->name
                        : nd->n_outputs && nd->outputs[0] >= 0 ? a->values.data[nd->outputs[0]].name
                                                               : "?";
    if (n < 4)
      kiln_strbuf_printf(where, "%s%s%s (%s)",
                         n            ? ", "
                         : where->len ? "; "
                                      : "",
                         n ? "" : what, label, nd->op_type);
    kiln_strbuf_printf(ops, "%s,", nd->op_type);
    n++;
  }
  if (n > 4) kiln_strbuf_printf(where, " and %d more", n - 4);
  kiln_strmap_free(&set);
  return n;
}

static void localize(kiln_vrun *r, const kiln_graph *before, const kiln_graph *after, int k,
                     const char *pass) {
  kiln_verify_result *res = r->res;
  snprintf(res->pass, sizeof res->pass, "%s", pass);
  res->pass_application = k;
  kiln_strbuf where = {0}, ops = {0};
  int n = before && after ? diff_nodes(after, before, false, "changed ", &where, &ops) : 0;
  if (before && after) n += diff_nodes(before, after, false, "removed ", &where, &ops);
  if (!n && before && after) n = diff_nodes(after, before, true, "retyped ", &where, &ops);
  kiln_strbuf_printf(&where, "%sby %s (application %d)", where.len ? ", " : "graph changed ", pass,
                     k);
  kiln_vrun_set_where(r, where.data, ops.data ? ops.data : "");
  kiln_strbuf_free(&where);
  kiln_strbuf_free(&ops);
}

/* ---- each application ---- */
static kiln_status each_pass(kiln_vrun *r, const survey *s) {
  kiln_graph *prev = NULL;
  KILN_TRY(kiln_vrun_copy(r, &prev));
  kiln_vref *prev_ref = NULL; /* of prev; NULL: r->ref (prev is a copy of r->g) */
  for (int j = 0; j < s->n_changed; j++) {
    int k = s->changed_list[j];
    kiln_graph *cur = NULL;
    kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_PASS, "pass %d %s", k, s->name[k]);
    kiln_status e = graph_after(r, k, &cur);
    if (e) kiln_vrun_errored(r, l, e);
    else interpret(r, cur, l);
    if (cur && r->o->local) kiln_vrun_pass_local(r, prev, prev_ref ? prev_ref : r->ref, cur, l);
    if (kiln_vrun_done(r, l)) localize(r, prev, cur, k, s->name[k]);
    if (!cur) continue;
    kiln_graph_free(prev), prev = cur;
    kiln_vref_free(prev_ref), prev_ref = NULL;
    if (r->o->local && j + 1 < s->n_changed) { /* the next application's graph before */
      e = kiln_vref_compute(prev, r->n_in, r->inputs, &prev_ref);
      if (e) kiln_status_free(e), prev_ref = NULL; /* it falls back on r->ref by name */
    }
  }
  kiln_vref_free(prev_ref);
  kiln_graph_free(prev);
  return KILN_OK;
}

/* ---- bisection (without each_pass) ---- */
typedef struct bisect_ctx {
  kiln_vrun *r;
  const survey *s;
} bisect_ctx;

static bool fails_after(void *user, int j) {
  bisect_ctx *c = user;
  kiln_graph *g = NULL;
  kiln_status st = graph_after(c->r, c->s->changed_list[j], &g);
  if (st) {
    kiln_status_free(st);
    return true;
  }
  kiln_layer_result l;
  memset(&l, 0, sizeof l);
  l.ok = true;
  l.worst_output = -1;
  interpret(c->r, g, &l);
  kiln_graph_free(g);
  return !l.ok;
}

static kiln_status bisect(kiln_vrun *r, const survey *s) {
  bisect_ctx c = {r, s};
  int last = s->n_changed - 1;
  if (last < 0) return KILN_OK;
  /* position -1 is the graph before the passes (the reference layer checked it) */
  int j = kiln_verify_bisect(-1, last, fails_after, &c);
  int k = s->changed_list[j];
  kiln_graph *before = NULL, *after = NULL;
  kiln_status st =
      j > 0 ? graph_after(r, s->changed_list[j - 1], &before) : kiln_vrun_copy(r, &before);
  if (!st) st = graph_after(r, k, &after);
  kiln_status_free(st); /* localization is best effort */
  localize(r, before, after, k, s->name[k]);
  kiln_graph_free(before);
  kiln_graph_free(after);
  if (r->o->log) fprintf(r->o->log, "[verify] bisected to pass %d %s\n", k, s->name[k]);
  return KILN_OK;
}

static void pass_failed(kiln_vrun *r, const survey *s, int k, kiln_status st) {
  kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_PASS, "pass %d %s", k, s->name[k]);
  kiln_vrun_errored(r, l, st);
  if (kiln_vrun_done(r, l)) {
    snprintf(r->res->pass, sizeof r->res->pass, "%s", s->name[k]);
    r->res->pass_application = k;
    char where[160];
    snprintf(where, sizeof where, "pass %s (application %d) returned an error", s->name[k], k);
    kiln_vrun_set_where(r, where, "");
  }
}

kiln_status kiln_vrun_passes(kiln_vrun *r, kiln_graph **final) {
  *final = NULL;
  kiln_graph *g = NULL;
  KILN_TRY(kiln_vrun_copy(r, &g));
  survey s = {0};
  kiln_status pst = survey_run(r, g, &s);
  record_fired(r, &s);
  kiln_status st = r->o->each_pass ? each_pass(r, &s) : KILN_OK;
  if (pst) { /* a pass returned an error: no final graph */
    if (!st) pass_failed(r, &s, s.n, pst);
    else kiln_status_free(pst);
    kiln_graph_free(g), g = NULL;
  } else if (!st && !r->o->each_pass) {
    kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_PASS, "passes (%d applications)", s.n);
    interpret(r, g, l);
    if (kiln_vrun_done(r, l)) st = bisect(r, &s);
  }
  survey_free(&s);
  if (st) kiln_graph_free(g), g = NULL;
  *final = g;
  return st;
}
