/* Graph passes: golden text-IR tests (every .txt file in tests/passes) and the pass manager.
 *
 * Golden file format. A file holds one or more cases; each case is
 *
 *   passes: NAME[, NAME...]      the passes to run, in order ("pipeline": the whole
 *                                pipeline without fusion, through kiln_passes_run)
 *   <input graph in text IR>
 *   ----
 *   <expected graph in text IR, exactly as kiln_graph_print writes it with all data>
 *
 * Lines starting with '#' outside the graphs are comments. After the passes the graph
 * must verify and print exactly as expected; when every graph input has a static type,
 * the input and the output graphs are also run by the reference interpreter on the same
 * deterministic inputs and their outputs must agree (rtol 1e-4, atol 1e-5), so a golden
 * file cannot bless a rewrite that changes the result. Set KILN_GOLDEN_UPDATE=1 to
 * rewrite the expected parts with what the passes produce (then read the diff). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops.h"
#include "passes/passes.h"

#define GOLDEN_DIR "tests/passes"

static int n_golden_cases;

/* ---- running passes ---- */
static kiln_status run_named(kiln_graph *g, const char *list) {
  while (*list == ' ') list++;
  if (!strcmp(list, "pipeline")) {
    kiln_pass_opts o = {.pass_limit = -1, .no_fusion = true, .verify_each = true};
    return kiln_passes_run(g, &o, NULL);
  }
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
    const kiln_pass_info *p = kiln_pass_find(tok);
    if (!p) return kiln_invalid("unknown pass '%s'", tok);
    kiln_pass_opts o = {.pass_limit = -1};
    kiln_pass_ctx ctx = {&o, p->name, 0};
    KILN_TRYF(p->run(&ctx, g), "pass %s", tok);
    KILN_TRYF(kiln_graph_verify(g), "after pass %s", tok);
  }
  return KILN_OK;
}

/* ---- deterministic inputs and comparison ---- */
static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static bool make_input(const kiln_type *t, uint64_t *seed, kiln_val **out) {
  if (!kiln_type_is_static(t) || t->dtype == KILN_STRING) return false;
  int64_t dims[KILN_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i].value;
  kiln_tensor *x;
  if (kiln_tensor_new(t->dtype, t->rank, dims, &x)) return false;
  for (int64_t i = 0; i < x->numel; i++) {
    uint64_t r = rng_next(seed);
    if (kiln_dtype_is_float(t->dtype))
      kiln_store_f64(t->dtype, x->data, (size_t)i, (double)(r % 4001) / 1000.0 - 2.0);
    else
      kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(r % (t->dtype == KILN_BOOL ? 2 : 4)));
  }
  *out = kiln_val_tensor(x);
  return true;
}

static bool close_enough(const kiln_tensor *a, const kiln_tensor *b, char *msg, size_t n) {
  if (a->dtype != b->dtype || !kiln_tensor_same_shape(a, b)) {
    snprintf(msg, n, "dtype or shape differ");
    return false;
  }
  for (int64_t i = 0; i < a->numel; i++) {
    double x = kiln_load_f64(a->dtype, a->data, (size_t)i);
    double y = kiln_load_f64(b->dtype, b->data, (size_t)i);
    if ((isnan(x) && isnan(y)) || x == y) continue;
    if (fabs(x - y) <= 1e-5 + 1e-4 * fabs(y)) continue;
    snprintf(msg, n, "element %lld: %g vs %g", (long long)i, x, y);
    return false;
  }
  return true;
}

static kiln_status run_graph(const kiln_graph *g, kiln_val **in, kiln_val **out) {
  return kiln_interp_run(g, NULL, g->inputs.len, in, out);
}

/* Runs both graphs on the same inputs (when all inputs are static) and compares. */
static void check_same_results(const kiln_graph *before, const kiln_graph *after,
                               const char *where) {
  int ni = before->inputs.len, no = before->outputs.len;
  kiln_val **in = calloc((size_t)ni + 1, sizeof *in);
  kiln_val **o1 = calloc((size_t)no + 1, sizeof *o1), **o2 = calloc((size_t)no + 1, sizeof *o2);
  uint64_t seed = 12345;
  bool ok = true;
  for (int i = 0; i < ni && ok; i++)
    ok = make_input(&before->values.data[before->inputs.data[i]].type, &seed, &in[i]);
  kiln_status st = ok ? run_graph(before, in, o1) : KILN_OK;
  if (st) { /* a graph that fails at run time (a negative case): nothing to compare */
    kiln_status_free(st);
    ok = false;
  }
  if (ok && after->outputs.len == no) {
    CHECK_OK(run_graph(after, in, o2));
    for (int i = 0; i < no; i++) {
      char msg[200];
      if (!o1[i] || !o2[i] || !o1[i]->t || !o2[i]->t) continue;
      if (!close_enough(o2[i]->t, o1[i]->t, msg, sizeof msg)) {
        fprintf(stderr, "%s: output %d differs after the passes: %s\n", where, i, msg);
        CHECK(0);
      }
    }
  }
  for (int i = 0; i < ni; i++) kiln_val_free(in[i]);
  for (int i = 0; i < no; i++) kiln_val_free(o1[i]), kiln_val_free(o2[i]);
  free(in), free(o1), free(o2);
}

/* ---- golden files ---- */
typedef struct golden_case {
  char passes[256];
  char *input, *expected;          /* malloc'd */
  const char *exp_begin, *exp_end; /* the expected part inside the file text */
} golden_case;

/* Text of [b, e) without comment lines and trailing blank lines. */
static char *strip_comments(const char *b, const char *e) {
  kiln_strbuf out = {0};
  while (b < e) {
    const char *nl = memchr(b, '\n', (size_t)(e - b));
    const char *end = nl ? nl + 1 : e;
    if (*b != '#') kiln_strbuf_append(&out, b, (size_t)(end - b));
    b = end;
  }
  while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == ' ')) out.len--;
  kiln_strbuf_append(&out, "\n", 1);
  return out.data;
}

/* Parses the case starting at *p (at a "passes:" line); advances *p past it. */
static bool next_case(const char **p, golden_case *c) {
  const char *s = strstr(*p, "passes:");
  while (s && s != *p && s[-1] != '\n') s = strstr(s + 1, "passes:");
  if (!s) return false;
  const char *nl = strchr(s, '\n');
  if (!nl) return false;
  snprintf(c->passes, sizeof c->passes, "%.*s", (int)(nl - s - 7), s + 7);
  const char *sep = strstr(nl, "\n----\n");
  if (!sep) return false;
  const char *next = strstr(sep, "\npasses:");
  const char *end = next ? next + 1 : sep + strlen(sep);
  c->input = strip_comments(nl + 1, sep + 1);
  c->exp_begin = sep + 6;
  c->exp_end = c->exp_begin; /* after the last line that is not a comment or blank */
  for (const char *l = c->exp_begin; l < end;) {
    const char *e = memchr(l, '\n', (size_t)(end - l));
    e = e ? e + 1 : end;
    if (*l != '#' && *l != '\n') c->exp_end = e;
    l = e;
  }
  c->expected = strip_comments(c->exp_begin, c->exp_end);
  *p = end;
  return true;
}

static char *print_full(const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  return b.data ? b.data : strdup("");
}

/* Runs one case; returns the printed result (malloc'd) or NULL. */
static char *run_case(const golden_case *c, const char *where) {
  kiln_graph *g = NULL, *orig = NULL;
  kiln_status st = kiln_graph_parse(c->input, where, &g);
  if (!st) st = kiln_graph_parse(c->input, where, &orig);
  if (!st) st = run_named(g, c->passes);
  char *got = NULL;
  if (st) {
    fprintf(stderr, "%s: %s\n", where, kiln_status_message(st));
    kiln_status_free(st);
    CHECK(0);
  } else {
    got = print_full(g);
    check_same_results(orig, g, where);
  }
  kiln_graph_free(g);
  kiln_graph_free(orig);
  return got;
}

static void run_golden_file(const char *path, bool update) {
  char *text;
  size_t len;
  CHECK_OK(kiln_read_file(path, &text, &len));
  if (!text) return;
  kiln_strbuf updated = {0};
  const char *p = text, *copied = text;
  golden_case c;
  int idx = 0;
  while (next_case(&p, &c)) {
    char where[300];
    snprintf(where, sizeof where, "%s case %d (%s)", path, ++idx, c.passes);
    char *got = run_case(&c, where);
    n_golden_cases++;
    if (got && strcmp(got, c.expected) != 0 && !update) {
      fprintf(stderr, "%s: result differs\n--- expected\n%s--- got\n%s", where, c.expected, got);
      CHECK(0);
    }
    if (update && got) {
      kiln_strbuf_append(&updated, copied, (size_t)(c.exp_begin - copied));
      kiln_strbuf_append(&updated, got, strlen(got));
      copied = c.exp_end;
    }
    free(got), free(c.input), free(c.expected);
  }
  CHECK(idx > 0);
  if (update && updated.data) {
    kiln_strbuf_append(&updated, copied, strlen(copied));
    CHECK_OK(kiln_write_file(path, updated.data, updated.len));
  }
  kiln_strbuf_free(&updated);
  free(text);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden(void) {
  DIR *d = opendir(GOLDEN_DIR);
  CHECK(d != NULL);
  if (!d) return;
  char *names[512];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 512;) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".txt")) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  const char *upd = getenv("KILN_GOLDEN_UPDATE");
  for (int i = 0; i < n; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, names[i]);
    run_golden_file(path, upd && upd[0] == '1');
    free(names[i]);
  }
  fprintf(stderr, "golden cases: %d in %d files\n", n_golden_cases, n);
  CHECK(n_golden_cases >= 3);
}

/* ---- the pass manager ---- */
static const char *const small_graph = "graph @m(%x: f32[2,3]) -> (%y: f32[2,3]) {\n"
                                       "  opset \"\" 17\n"
                                       "  %c = const f32[] [1]\n"
                                       "  %a = Relu(%x) : f32[2,3]\n"
                                       "  %dead = Neg(%x) : f32[2,3]\n"
                                       "  %y = Add(%a, %c) : f32[2,3]\n"
                                       "  return %y\n"
                                       "}\n";

static kiln_graph *parse_small(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(small_graph, "small", &g));
  return g;
}

/* Runs the pipeline with opts on the small graph; returns the log text (malloc'd). */
static char *run_logged(kiln_pass_opts *o, kiln_status *st, kiln_pass_stats *stats, int *n_nodes) {
  kiln_graph *g = parse_small();
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  o->log = f;
  *st = kiln_passes_run(g, o, stats);
  fclose(f);
  *n_nodes = g->nodes.len;
  kiln_graph_free(g);
  return buf;
}

static void test_manager_pipeline(void) {
  int n;
  const kiln_pass_info *p = kiln_passes_pipeline(&n);
  CHECK(n >= 9);
  CHECK(!strcmp(p[0].name, "infer"));
  CHECK(!strcmp(p[n - 1].name, "fusion"));
  CHECK(kiln_pass_find("dce") != NULL);
  CHECK(kiln_pass_find("nosuchpass") == NULL);
}

static void test_manager_unknown_names(void) {
  kiln_graph *g = parse_small();
  kiln_pass_opts o = {.pass_limit = -1, .disable = "dce,bogus"};
  CHECK_ERR(kiln_passes_run(g, &o, NULL), KILN_ERR_INVALID);
  kiln_pass_opts o2 = {.pass_limit = -1, .print_after = "nope"};
  CHECK_ERR(kiln_passes_run(g, &o2, NULL), KILN_ERR_INVALID);
  CHECK(g->nodes.len == 3); /* nothing ran */
  kiln_graph_free(g);
}

static void test_manager_limit(void) {
  kiln_status st;
  kiln_pass_stats s;
  int nodes;
  kiln_pass_opts o = {.pass_limit = 2, .no_fusion = true};
  char *log = run_logged(&o, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(s.applied == 2);
  int n;
  kiln_passes_pipeline(&n);
  CHECK(s.skipped == n - 1 - 2);
  CHECK(log && strstr(log, "BISECT: running pass (2) identity"));
  CHECK(log && strstr(log, "BISECT: NOT running pass (4) shapefold"));
  CHECK(nodes == 3); /* dce did not run */
  free(log);
  kiln_pass_opts all = {.pass_limit = -1, .no_fusion = true};
  log = run_logged(&all, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(nodes == 2 && s.skipped == 0 && s.applied == n - 1);
  CHECK(log && !strstr(log, "BISECT"));
  free(log);
}

static void test_manager_disable_print_time(void) {
  kiln_status st;
  kiln_pass_stats s;
  int nodes;
  kiln_pass_opts o = {.pass_limit = -1,
                      .disable = "dce",
                      .print_after = "identity,cse",
                      .time_passes = true,
                      .no_fusion = true};
  char *log = run_logged(&o, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(nodes == 3 && s.skipped == 1);
  CHECK(log && strstr(log, "// after identity\ngraph @m"));
  CHECK(log && strstr(log, "// after cse\n"));
  CHECK(log && !strstr(log, "// after constfold"));
  CHECK(log && strstr(log, "// pass timings") && strstr(log, "skipped"));
  free(log);
  kiln_pass_opts a = {.pass_limit = 0, .print_after = "all", .no_fusion = true};
  log = run_logged(&a, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(s.applied == 0 && log && !strstr(log, "// after"));
  free(log);
}

static void test_manager_stop_after(void) {
  kiln_status st;
  kiln_pass_stats s;
  int nodes;
  kiln_pass_opts o = {.pass_limit = -1, .stop_after = "shapefold", .print_after = "all"};
  char *log = run_logged(&o, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(s.applied == 4 && s.skipped == 0 && nodes == 3);
  CHECK(log && strstr(log, "// after shapefold") && !strstr(log, "// after constfold"));
  free(log);
  kiln_pass_opts first = {.pass_limit = -1, .stop_after = "infer"}; /* first application */
  log = run_logged(&first, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(s.applied == 1);
  free(log);
  kiln_pass_opts dis = {.pass_limit = -1, .stop_after = "dce", .disable = "dce"};
  log = run_logged(&dis, &st, &s, &nodes);
  CHECK_OK(st);
  CHECK(nodes == 3 && s.skipped == 1 && s.applied == 8);
  free(log);
  kiln_pass_opts bad = {.pass_limit = -1, .stop_after = "dce,cse"};
  log = run_logged(&bad, &st, &s, &nodes);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID);
  kiln_status_free(st);
  free(log);
}

static void test_manager_rejects_bad_graph(void) {
  kiln_graph *g = parse_small();
  g->nodes.data[0].inputs[0] = g->values.len - 1; /* reads a value defined later */
  kiln_pass_opts o = {.pass_limit = -1};
  CHECK_ERR(kiln_passes_run(g, &o, NULL), KILN_ERR_INVALID);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_manager_pipeline), T(test_manager_unknown_names), T(test_manager_limit),
          T(test_manager_disable_print_time), T(test_manager_stop_after),
          T(test_manager_rejects_bad_graph), T(test_golden))
