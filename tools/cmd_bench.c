/* kiln bench MODEL: times repeated runs of a model on a backend. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char *const bench_help =
    "usage: kiln bench MODEL [options]\n\n"
    "Times MODEL on a backend. MODEL is a .onnx file or a folder holding model.onnx; the\n"
    "inputs come from test_data_set_0/input_K.pb next to the model when present, else they\n"
    "are random (floats uniform in [-1, 1), integers in [0, 2), symbolic dims 1 unless\n"
    "given with --dim). Prints the preparation (compile) time, then\n"
    "  latency: min X ms, median X ms, p90 X ms\n"
    "  throughput: X inferences/s\n\n"
    "options:\n"
    "  --backend B       {BACKENDS} (default cpu)\n"
    "  --warmup N        untimed runs first (default 3)\n"
    "  --iters N         timed runs (default 20)\n"
    "  --threads N       kernel threads of the cpu backend (default: all cores)\n"
    "  --dim SYM=N       extent of a symbolic dim for random inputs (repeatable)\n"
    "  --seed N          seed of the random inputs (default 1)\n"
    "  --json            print one JSON object instead of text\n"
    "  --verbose         compile progress on stderr\n";

typedef struct bench_opts {
  const char *model;
  long warmup, iters, seed;
  bool json;
  kiln_cli_engine_opts engine;
  KILN_VEC(kiln_dim_binding) dims;
} bench_opts;

static int parse_count(const char *v, long *out, long min, const char *what) {
  return kiln_cli_long("bench", what, v, min, 1000000, out) ? 2 : -1;
}

static int parse_dim(const char *v, bench_opts *o) {
  kiln_dim_binding b;
  if (kiln_cli_dim("bench", v, (char **)&b.sym, &b.value)) return 2;
  for (int i = 0; i < o->dims.len; i++)
    if (!strcmp(o->dims.data[i].sym, b.sym)) {
      free((char *)b.sym);
      return kiln_cli_usage("bench", "--dim '%s' is given twice", o->dims.data[i].sym);
    }
  kiln_vec_push(&o->dims, b);
  return -1;
}

static int parse_one(int argc, char **argv, int *i, bench_opts *o) {
  const char *v = NULL;
  int mrc;
  if (kiln_cli_opt(argc, argv, i, "--backend", &v)) {
    if (kiln_cli_backend_parse(v, &o->engine.backend)) return kiln_cli_unknown_backend("bench", v);
  } else if (kiln_cli_opt(argc, argv, i, "--warmup", &v))
    return parse_count(v, &o->warmup, 0, "--warmup");
  else if (kiln_cli_opt(argc, argv, i, "--iters", &v))
    return parse_count(v, &o->iters, 1, "--iters");
  else if (kiln_cli_opt(argc, argv, i, "--seed", &v))
    return kiln_cli_long("bench", "--seed", v, 0, LONG_MAX, &o->seed) ? 2 : -1;
  else if (kiln_cli_opt(argc, argv, i, "--threads", &v))
    return kiln_cli_threads("bench", v, &o->engine.threads) ? 2 : -1;
  else if (kiln_cli_opt(argc, argv, i, "--dim", &v)) return parse_dim(v, o);
  else if (!strcmp(argv[*i], "--json")) o->json = true;
  else if (!strcmp(argv[*i], "--verbose")) o->engine.verbose = true;
  else if (kiln_cli_max_memory("bench", argc, argv, i, &mrc)) return mrc;
  else if (argv[*i][0] == '-') return kiln_cli_usage("bench", "unknown option '%s'", argv[*i]);
  else if (o->model) return kiln_cli_usage("bench", "more than one model given");
  else o->model = argv[*i];
  return -1;
}

static int parse_args(int argc, char **argv, bench_opts *o) {
  o->warmup = 3;
  o->iters = 20;
  o->seed = 1;
  o->engine.backend = kiln_cli_compiled(NULL);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      kiln_cli_put_help(bench_help);
      fputs(kiln_cli_memory_help, stdout);
      return 0;
    }
    int rc = parse_one(argc, argv, &i, o);
    if (rc >= 0) return rc;
  }
  if (!o->model) return kiln_cli_usage("bench", "no model given");
  return -1;
}

/* ---- inputs ---- */
/* The model file (kiln_cli_model_file) and the folder that holds it (where test_data_set_0
 * would be). */
static kiln_status model_paths(const char *model, char *file, char *dir, size_t n) {
  KILN_TRY(kiln_cli_model_file(model, file, n));
  const char *slash = strrchr(file, '/');
  if (slash) snprintf(dir, n, "%.*s", (int)(slash - file), file);
  else snprintf(dir, n, ".");
  return KILN_OK;
}

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t dim_extent(const bench_opts *o, const kiln_dim *d) {
  if (d->value >= 0) return d->value;
  for (int i = 0; d->sym && i < o->dims.len; i++)
    if (!strcmp(o->dims.data[i].sym, d->sym)) return o->dims.data[i].value;
  return 1;
}

static kiln_status random_input(const bench_opts *o, const kiln_value *v, uint64_t *rng,
                                kiln_val **out) {
  const kiln_type *ty = &v->type;
  if (ty->kind != KILN_TYPE_TENSOR || ty->rank < 0 || ty->dtype == KILN_STRING)
    return kiln_unsupported("input '%s': random values only for numeric tensors of known rank; "
                            "put input files in test_data_set_0 next to the model",
                            v->name);
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < ty->rank; d++) dims[d] = dim_extent(o, &ty->dims[d]);
  kiln_tensor *t;
  KILN_TRYF(kiln_tensor_new(ty->dtype, ty->rank, dims, &t), "input '%s'", v->name);
  for (int64_t i = 0; i < t->numel; i++) {
    uint64_t r = rng_next(rng);
    double x = kiln_dtype_is_float(ty->dtype) ? (double)(r >> 11) / 4503599627370496.0 - 1.0
                                              : (double)(r & 1);
    kiln_store_f64(ty->dtype, t->data, (size_t)i, x);
  }
  *out = kiln_val_tensor(t);
  return KILN_OK;
}

static kiln_status load_inputs(const bench_opts *o, const kiln_graph *g, const char *dir,
                               kiln_val **ins, bool *from_files) {
  char path[4200];
  uint64_t rng = (uint64_t)o->seed;
  snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
  struct stat sb;
  *from_files = g->inputs.len > 0 && stat(path, &sb) == 0;
  for (int k = 0; k < g->inputs.len; k++) {
    const kiln_value *v = &g->values.data[g->inputs.data[k]];
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
    if (*from_files) KILN_TRY(kiln_pb_read_value(path, &v->type, &ins[k]));
    else KILN_TRY(random_input(o, v, &rng, &ins[k]));
  }
  return KILN_OK;
}

/* ---- timing ---- */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static kiln_status run_once(kiln_cli_engine *e, kiln_val **ins, kiln_val **outs, int n_out) {
  kiln_status st = kiln_cli_engine_run(e, ins, outs);
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]), outs[i] = NULL;
  return st;
}

static kiln_status time_runs(const bench_opts *o, kiln_cli_engine *e, kiln_val **ins, double *ms,
                             double *total_s) {
  int n_out = kiln_cli_engine_graph(e)->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st = KILN_OK;
  for (long i = 0; i < o->warmup && !st; i++) st = run_once(e, ins, outs, n_out);
  double start = kiln_clock_seconds();
  for (long i = 0; i < o->iters && !st; i++) {
    double t0 = kiln_clock_seconds();
    st = run_once(e, ins, outs, n_out);
    ms[i] = (kiln_clock_seconds() - t0) * 1e3;
  }
  *total_s = kiln_clock_seconds() - start;
  free(outs);
  return st;
}

static void print_result(const bench_opts *o, const kiln_cli_engine *e, bool from_files, double *ms,
                         double total_s) {
  long n = o->iters;
  qsort(ms, (size_t)n, sizeof *ms, cmp_double);
  double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  double p90 = ms[(long)(0.9 * (double)(n - 1) + 0.5)];
  double tput = (double)n / total_s, prep = kiln_cli_engine_prepare_seconds(e) * 1e3;
  const char *backend = kiln_cli_backend_name(o->engine.backend);
  if (o->json) {
    kiln_strbuf path = {0}; /* a path is any bytes: JSON-escaped */
    kiln_esc_json(&path, o->model);
    printf("{\"model\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"inputs\": \"%s\", "
           "\"compile_ms\": %.3f, \"iters\": %ld, \"min_ms\": %.4f, \"median_ms\": %.4f, "
           "\"p90_ms\": %.4f, \"throughput\": %.3f}\n",
           path.data, backend, o->engine.threads, from_files ? "test_data_set_0" : "random", prep,
           n, ms[0], median, p90, tput);
    kiln_strbuf_free(&path);
    return;
  }
  printf("model: %s (backend %s, inputs %s)\n", o->model, backend,
         from_files ? "from test_data_set_0" : "random");
  printf("compile: %.1f ms\n", prep);
  printf("latency: min %.3f ms, median %.3f ms, p90 %.3f ms (%ld runs after %ld warmup)\n", ms[0],
         median, p90, n, o->warmup);
  printf("throughput: %.2f inferences/s\n", tput);
}

static kiln_status bench(const bench_opts *o) {
  char file[4096], dir[4096];
  KILN_TRY(model_paths(o->model, file, dir, sizeof file));
  kiln_graph *g;
  KILN_TRY(kiln_cli_load(file, &g));
  kiln_status dst = kiln_cli_check_dim_names(g, o->dims.data, o->dims.len);
  if (dst) {
    kiln_graph_free(g);
    return dst;
  }
  int n_in = g->inputs.len;
  kiln_val **ins = kiln_xcalloc((size_t)n_in + 1, sizeof *ins);
  bool from_files = false;
  kiln_cli_engine *e = NULL;
  kiln_status st = load_inputs(o, g, dir, ins, &from_files);
  if (st) kiln_graph_free(g);
  else st = kiln_cli_engine_new(g, &o->engine, ins, &e);
  if (!st) {
    kiln_strbuf fb = {0};
    kiln_cli_engine_fallbacks(e, &fb);
    if (fb.len) fprintf(stderr, "%s", fb.data); /* what is not compiled */
    kiln_strbuf_free(&fb);
  }
  double *ms = kiln_xcalloc((size_t)o->iters, sizeof *ms), total_s = 0;
  if (!st) st = time_runs(o, e, ins, ms, &total_s);
  if (!st) print_result(o, e, from_files, ms, total_s);
  free(ms);
  kiln_cli_engine_free(e);
  for (int i = 0; i < n_in; i++) kiln_val_free(ins[i]);
  free(ins);
  return st;
}

int kiln_cmd_bench(int argc, char **argv) {
  bench_opts o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  if (rc < 0) {
    kiln_status st = bench(&o);
    rc = st ? kiln_cli_fail("bench", st) : 0;
  }
  for (int i = 0; i < o.dims.len; i++) free((char *)o.dims.data[i].sym);
  kiln_vec_free(&o.dims);
  return rc;
}
