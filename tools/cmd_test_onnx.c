/* kiln test-onnx DIR...: runs ONNX test cases (model.onnx + test_data_set_N/
 * {input,output}_K.pb) and compares outputs. Each case runs in a child process
 * so that a crash or a hang is reported as that case's failure. */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char *const test_help =
    "usage: kiln test-onnx DIR... [options]\n\n"
    "Runs ONNX test cases. DIR is a case folder (model.onnx and test_data_set_*/ with\n"
    "input_K.pb and output_K.pb) or a folder of such folders. Prints one line per case\n"
    "and a last line 'N passed, N failed, N skipped'.\n\n"
    "options:\n"
    "  --backend B         interp (default): reference interpreter; opt: the interpreter\n"
    "                      after the graph passes (no fusion); tile: lowered kernels in the\n"
    "                      tile IR interpreter; {COMPILED} (one compile per case)\n"
    "                      Symbolic dims are bound to the extents of each set's inputs.\n"
    "  --rtol R --atol A   tolerance |got-expected| <= atol + rtol*|expected|\n"
    "                      (default 1e-3 and 1e-7, as ONNX's own runner)\n"
    "  --expect FILE       expected outcomes: lines 'CASE fail REASON' or 'CASE skip REASON'\n"
    "                      ('#' starts a comment). Listed failures do not fail the run; a\n"
    "                      listed case that passes does (the list must stay honest).\n"
    "                      Repeatable: the lists add up (e.g. the interp list and a list of\n"
    "                      the cases that fail only on one backend).\n"
    "  --json FILE         also write the results as JSON\n"
    "  --timeout S         seconds per case before it counts as failed (default 300)\n"
    "  --jobs N, -j N      run N cases at a time (default 1); results print in order\n"
    "  --quiet             print only cases that did not pass\n"
    "  --no-fork           run cases in this process (for debugging)\n\n"
    "Exit status: 0 when every case passed or matched FILE, 1 otherwise, 2 on bad usage.\n";

typedef struct expect_entry {
  char *name, *status, *reason;
} expect_entry;

typedef struct test_opts {
  double rtol, atol;
  long timeout, jobs;
  bool quiet, no_fork;
  const char *json_path;
  KILN_VEC(const char *) expect_paths;
  kiln_cli_engine_opts engine;
  KILN_VEC(expect_entry) expects;
  KILN_VEC(char *) cases;
} test_opts;

/* ---- finding cases ---- */
static bool is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of the entries of dir whose names start with prefix. */
static int list_dir(const char *dir, const char *prefix, char ***out) {
  DIR *d = opendir(dir);
  KILN_VEC(char *) names = {0};
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix)) && e->d_name[0] != '.')
      kiln_vec_push(&names, kiln_xstrdup(e->d_name));
  closedir(d);
  if (names.len) qsort(names.data, (size_t)names.len, sizeof(char *), cmp_str);
  *out = names.data;
  return names.len;
}

static void free_list(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}

static kiln_status collect_cases(test_opts *o, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (is_file(path)) {
    kiln_vec_push(&o->cases, kiln_xstrdup(dir));
    return KILN_OK;
  }
  char **names;
  int n = list_dir(dir, "", &names);
  if (n < 0) return kiln_error(KILN_ERR_IO, "cannot read folder '%s'", dir);
  int found = 0;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
    if (!is_file(path)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    kiln_vec_push(&o->cases, kiln_xstrdup(path));
    found++;
  }
  free_list(names, n);
  if (!found) return kiln_invalid("'%s' holds no test case (no model.onnx)", dir);
  return KILN_OK;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  while (s && s[1] == 0 && s > path) { /* trailing slash */
    const char *p = s - 1;
    while (p > path && *p != '/') p--;
    return *p == '/' ? p + 1 : p;
  }
  return s ? s + 1 : path;
}

/* ---- expect file ---- */
static kiln_status load_expect(test_opts *o, const char *path) {
  char *text;
  size_t len;
  KILN_TRY(kiln_read_file(path, &text, &len));
  int line_no = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    line_no++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char name[512], status[32];
    int used = 0;
    if (sscanf(line, " %511s %31s %n", name, status, &used) < 2) {
      if (strspn(line, " \t\r") == strlen(line)) continue;
      free(text);
      return kiln_invalid("%s: line %d: expected 'CASE fail|skip REASON'", path, line_no);
    }
    if (strcmp(status, "fail") && strcmp(status, "skip")) {
      free(text);
      return kiln_invalid("%s: line %d: status must be 'fail' or 'skip', not '%s'", path, line_no,
                          status);
    }
    expect_entry e = {kiln_xstrdup(name), kiln_xstrdup(status), kiln_xstrdup(line + used)};
    kiln_vec_push(&o->expects, e);
  }
  free(text);
  return KILN_OK;
}

static const expect_entry *find_expect(const test_opts *o, const char *name) {
  for (int i = 0; i < o->expects.len; i++)
    if (!strcmp(o->expects.data[i].name, name)) return &o->expects.data[i];
  return NULL;
}

/* ---- running one case ---- */
static kiln_status read_set_inputs(const kiln_graph *g, const char *set, kiln_val **ins) {
  char path[4096];
  for (int k = 0; k < g->inputs.len; k++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", set, k);
    if (!is_file(path))
      return kiln_invalid("%s: missing (the model has %d inputs)", path, g->inputs.len);
    KILN_TRY(kiln_pb_read_value(path, &g->values.data[g->inputs.data[k]].type, &ins[k]));
  }
  snprintf(path, sizeof path, "%s/input_%d.pb", set, g->inputs.len);
  if (is_file(path))
    return kiln_invalid("%s: more input files than the model's %d inputs", set, g->inputs.len);
  return KILN_OK;
}

/* A set compares at least one output (ONNX cases may omit some, never all: a set without
 * expected outputs would pass having checked nothing), and holds no more than the model's. */
static kiln_status check_set_has_outputs(const kiln_graph *g, const char *set) {
  char path[4096];
  int found = 0;
  for (int k = 0; k < g->outputs.len; k++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", set, k);
    found += is_file(path);
  }
  snprintf(path, sizeof path, "%s/output_%d.pb", set, g->outputs.len);
  if (is_file(path))
    return kiln_invalid("%s: more output files than the model's %d outputs", set, g->outputs.len);
  if (!found && g->outputs.len)
    return kiln_invalid("%s: no expected output (no output_<k>.pb for any of the model's %d "
                        "output%s): nothing to compare",
                        set, g->outputs.len, g->outputs.len == 1 ? "" : "s");
  return KILN_OK;
}

static kiln_status check_set_outputs(const kiln_graph *g, const char *set, kiln_val **outs,
                                     const test_opts *o) {
  char path[4096], msg[600];
  for (int k = 0; k < g->outputs.len; k++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", set, k);
    if (!is_file(path)) continue; /* ONNX cases may omit some outputs */
    const kiln_value *v = &g->values.data[g->outputs.data[k]];
    kiln_val *want;
    KILN_TRY(kiln_pb_read_value(path, &v->type, &want));
    bool ok = kiln_cli_compare(outs[k], want, o->rtol, o->atol, msg, sizeof msg);
    kiln_val_free(want);
    if (!ok) return kiln_error(KILN_ERR_FAILED, "output %d '%s': %s", k, v->name, msg);
  }
  return KILN_OK;
}

/* Loads the model afresh for each set: the backends rewrite the graph, and bind its
 * symbolic dims to the extents of the set's inputs. */
static kiln_status run_set(const char *model, const char *set, const test_opts *o) {
  kiln_graph *g;
  KILN_TRY(kiln_cli_load(model, &g));
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_val **ins = kiln_xcalloc((size_t)n_in + 1, sizeof *ins);
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_cli_engine *e = NULL;
  kiln_status st = read_set_inputs(g, set, ins);
  if (!st) st = check_set_has_outputs(g, set); /* before anything runs */
  if (st) kiln_graph_free(g);
  else st = kiln_cli_engine_new(g, &o->engine, ins, &e);
  if (!st) st = kiln_cli_engine_run(e, ins, outs);
  if (!st) st = check_set_outputs(kiln_cli_engine_graph(e), set, outs, o);
  for (int i = 0; i < n_in; i++) kiln_val_free(ins[i]);
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]);
  free(ins);
  free(outs);
  kiln_cli_engine_free(e);
  return st;
}

static kiln_status run_case(const char *dir, const test_opts *o) {
  char model[4096], path[4096];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  char **sets;
  int n = list_dir(dir, "test_data_set_", &sets);
  kiln_status st = KILN_OK;
  if (n <= 0) st = kiln_invalid("%s: no test_data_set_* folder", dir);
  for (int i = 0; i < n && !st; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, sets[i]);
    st = run_set(model, path, o);
    if (st && n > 1) st = kiln_status_annotate(st, "%s", sets[i]);
  }
  if (n > 0) free_list(sets, n);
  return st;
}

/* ---- running cases in child processes ---- */
typedef struct child {
  pid_t pid;
  int fd, index;
  double t0;
} child;

static double ms_since(double t0) {
  return 1e3 * (kiln_clock_seconds() - t0);
}

/* In the child: runs the case and writes 'P' or 'F' and the message (at most cap-1 bytes,
 * so that the pipe never fills before the parent reaps the child). */
static void child_main(const char *dir, const test_opts *o, int fd, size_t cap) {
  alarm((unsigned)o->timeout);
  kiln_status st = run_case(dir, o);
  const char *m = st ? kiln_status_message(st) : "";
  char tag = st ? 'F' : 'P';
  size_t len = strlen(m) < cap - 1 ? strlen(m) : cap - 1;
  ssize_t w = write(fd, &tag, 1);
  if (w == 1) w = write(fd, m, len);
  (void)w;
  kiln_status_free(st);
  close(fd);
  _exit(0);
}

static bool child_start(const char *dir, const test_opts *o, int index, child *c, char *msg,
                        size_t n) {
  int fds[2];
  fflush(stdout);
  fflush(stderr);
  if (pipe(fds) != 0) {
    snprintf(msg, n, "cannot create a pipe");
    return false;
  }
  c->t0 = kiln_clock_seconds();
  c->pid = fork();
  if (c->pid == 0) {
    close(fds[0]);
    child_main(dir, o, fds[1], n);
  }
  close(fds[1]);
  if (c->pid < 0) {
    close(fds[0]);
    snprintf(msg, n, "cannot fork");
    return false;
  }
  c->fd = fds[0];
  c->index = index;
  return true;
}

/* After the child exited with `status`: reads its message; true when the case passed. */
static bool child_finish(child *c, int status, const test_opts *o, char *msg, size_t n) {
  size_t got = 0;
  char tag = 0;
  ssize_t r = read(c->fd, &tag, 1);
  if (r == 1)
    while (got + 1 < n && (r = read(c->fd, msg + got, n - 1 - got)) > 0) got += (size_t)r;
  msg[got] = 0;
  close(c->fd);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) snprintf(msg, n, "timed out after %ld s", o->timeout);
    else snprintf(msg, n, "crashed with signal %d (%s)", sig, strsignal(sig));
    return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !tag) {
    snprintf(msg, n, "crashed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return false;
  }
  return tag == 'P';
}

/* ---- driver ---- */
static int parse_args(int argc, char **argv, test_opts *o) {
  o->rtol = 1e-3;
  o->atol = 1e-7;
  o->timeout = 300;
  o->jobs = 1;
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      kiln_cli_put_help(test_help);
      fputs(kiln_cli_memory_help, stdout);
      return 0;
    }
    if (kiln_cli_opt(argc, argv, &i, "--rtol", &v)) {
      if (kiln_cli_f64("test-onnx", "--rtol", v, 0, 1e9, &o->rtol)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--atol", &v)) {
      if (kiln_cli_f64("test-onnx", "--atol", v, 0, 1e9, &o->atol)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--timeout", &v)) {
      if (kiln_cli_long("test-onnx", "--timeout", v, 1, 1000000, &o->timeout)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--jobs", &v) ||
               kiln_cli_opt(argc, argv, &i, "-j", &v)) {
      if (kiln_cli_long("test-onnx", "--jobs", v, 1, 256, &o->jobs)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--expect", &v)) {
      if (!v) return kiln_cli_usage("test-onnx", "--expect needs a file");
      kiln_vec_push(&o->expect_paths, v);
    } else if (kiln_cli_opt(argc, argv, &i, "--json", &v)) {
      if (!v) return kiln_cli_usage("test-onnx", "--json needs a file");
      o->json_path = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--backend", &v)) {
      if (kiln_cli_backend_parse(v, &o->engine.backend))
        return kiln_cli_unknown_backend("test-onnx", v);
    } else if (!strcmp(argv[i], "--quiet")) {
      o->quiet = true;
    } else if (!strcmp(argv[i], "--no-fork")) {
      o->no_fork = true;
    } else if (kiln_cli_max_memory("test-onnx", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-') {
      return kiln_cli_usage("test-onnx", "unknown option '%s'", argv[i]);
    } else {
      kiln_status st = collect_cases(o, argv[i]);
      if (st) return kiln_cli_fail("test-onnx", st);
    }
  }
  if (!o->cases.len) return kiln_cli_usage("test-onnx", "no test case folder given");
  for (int k = 0; k < o->expect_paths.len; k++) {
    kiln_status st = load_expect(o, o->expect_paths.data[k]);
    if (st) return kiln_cli_fail("test-onnx", st);
  }
  return -1;
}

static void json_str(FILE *f, const char *s) {
  kiln_strbuf b = {0};
  kiln_esc_json(&b, s); /* names and messages from models: always valid JSON */
  fprintf(f, "\"%s\"", b.data ? b.data : "");
  kiln_strbuf_free(&b);
}

typedef struct tally {
  int passed, failed, skipped, xfail, unexpected, xpass;
} tally;

typedef struct outcome {
  bool done, ok, skipped;
  double ms;
  char msg[1024];
} outcome;

/* One line per case on the terminal: case names, reasons and messages escaped. */
static void print_case(const char *tag, const char *name, const char *fmt, const char *text,
                       double ms) {
  kiln_strbuf nb = {0}, tb = {0};
  printf("%s %s", tag, kiln_cli_show(&nb, name));
  if (text) printf(fmt, kiln_cli_show(&tb, text));
  else printf(fmt, ms);
  printf("\n");
  kiln_strbuf_free(&nb), kiln_strbuf_free(&tb);
}

static void report_case(const test_opts *o, int i, const outcome *r, tally *t, FILE *json) {
  const char *name = base_name(o->cases.data[i]);
  const expect_entry *e = find_expect(o, name);
  const char *status;
  if (r->skipped) {
    t->skipped++;
    status = "skip";
    if (!o->quiet) print_case("SKIP ", name, ": %s", r->msg, 0);
  } else if (r->ok) {
    t->passed++;
    status = e ? "xpass" : "pass";
    t->xpass += e != NULL;
    if (e) print_case("XPASS", name, ": passes but is listed as failing (%s)", e->reason, 0);
    else if (!o->quiet) print_case("PASS ", name, " (%.0f ms)", NULL, r->ms);
  } else {
    t->failed++;
    status = e ? "xfail" : "fail";
    if (e) t->xfail++;
    else t->unexpected++;
    if (!e || !o->quiet) print_case(e ? "XFAIL" : "FAIL ", name, ": %s", r->msg, 0);
  }
  fflush(stdout);
  if (json) {
    fprintf(json, "%s\n  {\"name\": ", i ? "," : "");
    json_str(json, name);
    fprintf(json, ", \"status\": \"%s\", \"ms\": %.1f, \"message\": ", status, r->ms);
    json_str(json, r->msg);
    fprintf(json, "}");
  }
}

/* Starts case i: in a child (true, *c filled), or settles it at once (skip, --no-fork, or
 * a failure to start: false, r->done). */
static bool launch_case(const test_opts *o, int i, outcome *r, child *c) {
  const expect_entry *e = find_expect(o, base_name(o->cases.data[i]));
  r->done = true;
  if (e && !strcmp(e->status, "skip")) {
    r->skipped = true;
    snprintf(r->msg, sizeof r->msg, "%s", e->reason);
    return false;
  }
  if (o->no_fork) {
    double t0 = kiln_clock_seconds();
    kiln_status st = run_case(o->cases.data[i], o);
    r->ms = ms_since(t0);
    r->ok = st == KILN_OK;
    snprintf(r->msg, sizeof r->msg, "%s", kiln_status_message(st));
    kiln_status_free(st);
    return false;
  }
  if (!child_start(o->cases.data[i], o, i, c, r->msg, sizeof r->msg)) return false;
  r->done = false;
  return true;
}

/* Waits for one running child and settles its case. */
static void reap_one(const test_opts *o, child *slots, int *running, outcome *res) {
  int status;
  pid_t pid = waitpid(-1, &status, 0);
  for (int k = 0; pid > 0 && k < *running; k++) {
    if (slots[k].pid != pid) continue;
    outcome *r = &res[slots[k].index];
    r->ms = ms_since(slots[k].t0);
    r->ok = child_finish(&slots[k], status, o, r->msg, sizeof r->msg);
    r->done = true;
    slots[k] = slots[--*running];
    return;
  }
}

/* A compiled backend (cpu) probes the C compiler (its identity, OpenMP) once per process: doing it
 * here, before the cases fork, saves each case that work (about half a second). Errors
 * are left for the cases to report. */
static void warm_compiler(const test_opts *o) {
  static const char *const tiny = "graph @warm(%x: f32[4]) -> (%y: f32[4]) {\n"
                                  "  opset \"\" 17\n  %y = Relu(%x) : f32[4]\n  return %y\n}\n";
  kiln_graph *g;
  kiln_cli_engine *e = NULL;
  if (o->engine.backend.kind != KILN_CLI_COMPILED || o->no_fork) return;
  kiln_status st = kiln_graph_parse(tiny, "warm", &g);
  if (!st) st = kiln_cli_engine_new(g, &o->engine, NULL, &e);
  kiln_status_free(st);
  kiln_cli_engine_free(e);
}

/* Runs up to o->jobs cases at a time; prints results in case order as they complete. */
static void run_all(test_opts *o, FILE *json) {
  int n = o->cases.len, next = 0, printed = 0, running = 0;
  outcome *res = kiln_xcalloc((size_t)n, sizeof *res);
  child *slots = kiln_xcalloc((size_t)o->jobs, sizeof *slots);
  tally t = {0};
  warm_compiler(o);
  while (printed < n) {
    while (running < o->jobs && next < n) {
      if (launch_case(o, next, &res[next], &slots[running])) running++;
      next++;
      if (res[printed].done) break; /* print settled cases early */
    }
    while (printed < n && res[printed].done)
      report_case(o, printed, &res[printed], &t, json), printed++;
    if (running && printed < n) reap_one(o, slots, &running, res);
  }
  free(res);
  free(slots);
  if (o->expect_paths.len)
    printf("expected failures: %d matched, %d unexpected failures, %d unexpected passes\n", t.xfail,
           t.unexpected, t.xpass);
  printf("%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped);
  o->timeout = (t.unexpected || t.xpass) ? 1 : 0; /* reuse as the exit status */
}

/* Whether folder path (resolved) is dir (resolved) or inside it. */
static bool inside(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return !strncmp(path, dir, n) && (path[n] == 0 || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

/* --json never replaces a file the run reads: an --expect list, or a file of a case folder (its
 * model or test data: `--json CASE/model.onnx CASE` is a slip, --json being a flag elsewhere). */
static kiln_status check_json_dest(const test_opts *o) {
  const char *j = o->json_path;
  for (int i = 0; i < o->expect_paths.len; i++)
    if (kiln_same_file(j, o->expect_paths.data[i]))
      return kiln_invalid("--json '%s' would replace the --expect list '%s'", j,
                          o->expect_paths.data[i]);
  char *parent = kiln_xstrdup(j), *slash = strrchr(parent, '/');
  if (slash) slash == parent ? (void)(slash[1] = 0) : (void)(*slash = 0);
  char *real = realpath(slash ? parent : ".", NULL);
  free(parent);
  kiln_status st = KILN_OK;
  for (int i = 0; real && !st && i < o->cases.len; i++) {
    char *c = realpath(o->cases.data[i], NULL);
    if (c && inside(real, c))
      st = kiln_invalid("--json '%s' is inside the test case folder '%s', whose files the run "
                        "reads: write it elsewhere",
                        j, o->cases.data[i]);
    free(c);
  }
  free(real);
  return st;
}

int kiln_cmd_test_onnx(int argc, char **argv) {
  test_opts o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) {
    /* --json: the file is opened (a folder or FIFO refused) before the run, the text kept in
     * memory and written through the file writer at the end */
    kiln_file_writer *jf = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *json = NULL;
    kiln_status st = o.json_path ? check_json_dest(&o) : KILN_OK;
    if (!st && o.json_path) st = kiln_file_open(o.json_path, &jf);
    if (!st && jf && !(json = open_memstream(&text, &len)))
      st = kiln_system_error("cannot write '%s'", o.json_path);
    if (st) {
      kiln_file_abort(jf);
      rc = kiln_cli_fail("test-onnx", st);
    } else {
      if (json) fprintf(json, "[");
      run_all(&o, json);
      rc = (int)o.timeout;
      if (json) fprintf(json, "\n]\n"), fclose(json);
      if (jf) kiln_file_write(jf, text, len), st = kiln_file_commit(jf);
      if (st) rc = kiln_cli_fail("test-onnx", st);
      free(text);
    }
  }
  for (int i = 0; i < o.cases.len; i++) free(o.cases.data[i]);
  for (int i = 0; i < o.expects.len; i++) {
    free(o.expects.data[i].name);
    free(o.expects.data[i].status);
    free(o.expects.data[i].reason);
  }
  kiln_vec_free(&o.cases);
  kiln_vec_free(&o.expect_paths);
  kiln_vec_free(&o.expects);
  return rc;
}
