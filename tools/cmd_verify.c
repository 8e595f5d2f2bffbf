/* kiln verify MODEL|CASE_DIR: every layer of the compiler against the reference with error
 * bounds (src/verify). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "onnx/onnx.h"
#include "verify/verify.h"

static const char *const verify_help =
    "usage: kiln verify MODEL|CASE_DIR [options]\n\n"
    "Runs MODEL (.onnx or .kiln) through every layer of the compiler and compares each with\n"
    "a double-precision reference that carries a rigorous error bound per element:\n"
    "  reference   the reference interpreter on the model\n"
    "  pass K NAME the interpreter on the graph after pass application K (each application\n"
    "              that changed the graph)\n"
    "  tile        the lowered program in the tile IR interpreter\n"
    "  cpu         the compiled C code, on 1 thread, then on --threads (default all cores,\n"
    "              as kiln run): each runs twice, its memory filled with 0xff bytes then\n"
    "              zeros, and must give the same bits (a value read before it is written or\n"
    "              a data race shows as a difference), then once untraced through the C\n"
    "              API's entry, as kiln run executes, with the same bits; no run may change\n"
    "              an input; and against the tile interpreter on its own program, bit for\n"
    "              bit, up to the first step that differs: a kernel of exactly rounded\n"
    "              operations only (no exp, log, tanh, ...) must agree (f32 arithmetic\n"
    "              done in double or an fma the C compiler fused stays within every bound)\n"
    "  cuda        the CUDA-mapped program in the tile interpreter (--backend cuda), then\n"
    "              its CUDA C compiled by NVRTC where NVRTC can be loaded (row 'cuda\n"
    "              (NVRTC)': fails when NVRTC rejects it); nothing runs on a GPU: that\n"
    "              row says so\n"
    "The tile, cpu and cuda layers are also checked kernel by kernel: each kernel step's\n"
    "values against a reference of its own fusion group computed from the values the layer\n"
    "gave the step (column 'local': worst error/bound), since the end-to-end bounds of a\n"
    "deep network grow too loose to judge a late kernel. A row whose end-to-end bound is\n"
    "too loose (relative bound > 0.1) and that has no local checks says 'bound too loose,\n"
    "not judged' instead of ok.\n"
    "It prints one row per layer (max error, max error/bound: above 1 fails) and, on a\n"
    "failure, the first failing layer, the pass application that broke the graph, the node or\n"
    "kernel, and a signature (layer|pass|op kinds).\n"
    "CASE_DIR is a folder written by --repro (or by kiln fuzz / kiln reduce): model.onnx and\n"
    "input_<i>.pb; its recorded signature is compared with the new one. A model folder\n"
    "(model.onnx, and test_data_set_0/input_<i>.pb as in ONNX's tests) runs on those inputs.\n\n"
    "options:\n"
    "  --input NAME=FILE   an input (.npy or .pb); inputs not given are drawn from --seed:\n"
    "                      floats uniform in [-1, 1], integers in [0, 2], booleans\n"
    "  --seed S            seed of the drawn inputs (default 1)\n"
    "  --dim SYM=N         extent of a symbolic input dim (default: drawn in 2..4)\n"
    "  --backend LIST      targets ({TARGETS}, comma-separated) or none: whose layers run\n"
    "                      after the tile layer (default cpu)\n"
    "  --bisect-only       interpret only the graph after all passes; bisect the passes with\n"
    "                      the pass limit when it fails (faster on large models)\n"
    "  --threads N         kernel threads of the second cpu layer (default: all cores; 1:\n"
    "                      only the one-thread layer); the tile layer lowers for N too\n"
    "  --sched-seed S      also lower under a schedule set drawn from S (other microkernels,\n"
    "                      register tiles, parallel forms, loop splits) and interpret it: the\n"
    "                      layer 'tile (drawn schedule)' (kiln fuzz draws these; its cases\n"
    "                      replay with the seed)\n"
    "  --precision-policy RULES\n"
    "                      the types each op class computes in, as CLASS:STORAGE=COMPUTE\n"
    "                      [/ACCUMULATE] items, comma-separated (classes elementwise,\n"
    "                      reduction, contraction, data; e.g. elementwise:f16=f16,\n"
    "                      reduction:bf16=bf16/f32): the tile and cpu layers compute so and\n"
    "                      the bounds allow for it (kiln fuzz draws these; its cases replay\n"
    "                      with them). Default: f16, bf16 and the float8 types compute in f32\n"
    "  --force-fallback OPS\n"
    "                      run these ops (comma-separated) with their reference kernel in\n"
    "                      the compiled layers (kiln fuzz draws one now and then: the\n"
    "                      executor's host steps and the views around them)\n"
    "  --standalone        also the layer 'cpu (standalone C)': the program kiln compile\n"
    "                      --emit-c writes, built with cc -O2 main.c model.c -lm and run on\n"
    "                      the inputs (skipped where a step runs a reference kernel or an\n"
    "                      input or output has no .npy dtype)\n"
    "  --no-local          no kernel-by-kernel checks (end-to-end comparisons only)\n"
    "  --repro DIR         on a failure, write the case to DIR\n"
    "  -q                  no progress lines on stderr\n\n"
    "Exit status: 0 every layer agrees, 1 a layer failed, 2 bad usage or an invalid model.\n";

typedef struct verify_args {
  const char *model;
  KILN_VEC(const char *) inputs;
  KILN_VEC(kiln_dim_binding) dims;
  unsigned long long seed;
  kiln_verify_opts o;
  int n_cli_dims; /* dims[0..n_cli_dims) come from --dim; the rest from inputs or drawn */
} verify_args;

/* --backend LIST: registered target names ("cpu,cuda") or "none". */
static int parse_backend(const char *v, kiln_verify_opts *o) {
  kiln_status st = kiln_verify_parse_targets(v, o->targets);
  if (!st) return 0;
  kiln_cli_usage("verify", "--backend: %s", kiln_status_message(st));
  kiln_status_free(st);
  return -1;
}

/* --precision-policy RULES: the types each op class computes in (kiln_precision_parse). */
static int parse_policy(const char *v, kiln_verify_opts *o) {
  if (!v) return kiln_cli_usage("verify", "--precision-policy needs CLASS:STORAGE=COMPUTE,...");
  kiln_status st = kiln_precision_parse(&o->compile.precision, v);
  if (!st) return 0;
  kiln_cli_usage("verify", "--precision-policy: %s", kiln_status_message(st));
  kiln_status_free(st);
  return -1;
}

static int parse_dim(const char *v, verify_args *a) {
  const char *eq = v ? strchr(v, '=') : NULL;
  int64_t n;
  if (!eq || eq == v) return kiln_cli_usage("verify", "--dim needs SYM=N (N >= 0)");
  if (kiln_cli_i64("verify", "--dim", eq + 1, 0, KILN_CLI_MAX_DIM, &n)) return 2;
  kiln_dim_binding b = {v, n};
  kiln_vec_push(&a->dims, b);
  return 0;
}

/* 1: done (help), 0: go on, 2: usage error. */
static int parse_args(int argc, char **argv, verify_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      kiln_cli_put_help(verify_help);
      fputs(kiln_cli_memory_help, stdout);
      return 1;
    }
    if (!strcmp(argv[i], "-q")) a->o.log = NULL;
    else if (!strcmp(argv[i], "--bisect-only")) a->o.each_pass = false;
    else if (!strcmp(argv[i], "--no-local")) a->o.local = false;
    else if (!strcmp(argv[i], "--standalone")) a->o.standalone = true;
    else if (kiln_cli_opt(argc, argv, &i, "--input", &v)) {
      if (kiln_cli_named_arg("verify", "--input", a->inputs.data, a->inputs.len, v)) return 2;
      kiln_vec_push(&a->inputs, v);
    } else if (kiln_cli_opt(argc, argv, &i, "--seed", &v)) {
      int64_t seed;
      if (kiln_cli_i64("verify", "--seed", v, 0, INT64_MAX, &seed)) return 2;
      a->seed = (unsigned long long)seed;
    } else if (kiln_cli_opt(argc, argv, &i, "--dim", &v)) {
      if (parse_dim(v, a)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--backend", &v)) {
      if (!v) return kiln_cli_usage("verify", "--backend needs a list of targets or none");
      if (parse_backend(v, &a->o)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--threads", &v)) {
      if (kiln_cli_threads("verify", v, &a->o.par_threads)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--sched-seed", &v)) {
      if (kiln_cli_u64("verify", "--sched-seed", v, 1, &a->o.sched_seed)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--force-fallback", &v)) {
      if (!v || !*v) return kiln_cli_usage("verify", "--force-fallback needs op names");
      a->o.compile.force_fallback = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--precision-policy", &v)) {
      if (parse_policy(v, &a->o)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--repro", &v)) {
      if (!v || !*v) return kiln_cli_usage("verify", "--repro needs a folder");
      a->o.repro_dir = v;
    } else if (kiln_cli_max_memory("verify", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kiln_cli_usage("verify", "unknown option '%s'", argv[i]);
    } else if (a->model) {
      return kiln_cli_usage("verify", "one model only ('%s' and '%s')", a->model, argv[i]);
    } else {
      a->model = argv[i];
    }
  }
  if (!a->model) return kiln_cli_usage("verify", "no model given");
  return 0;
}

/* ---- inputs ---- */
static uint64_t next_rand(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int64_t dim_extent(const verify_args *a, const kiln_dim *d, uint64_t *rng) {
  if (d->value >= 0) return d->value;
  for (int i = 0; d->sym && i < a->dims.len; i++) {
    const char *s = a->dims.data[i].sym;
    size_t n = strlen(d->sym);
    if (!strncmp(s, d->sym, n) && s[n] == '=') return a->dims.data[i].value;
  }
  return 2 + (int64_t)(next_rand(rng) % 3);
}

/* Draws the symbolic dims once per symbol (the same symbol gets the same extent). */
static void draw_dims(verify_args *a, const kiln_graph *g, uint64_t *rng) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    for (int d = 0; t->kind == KILN_TYPE_TENSOR && d < t->rank; d++) {
      const kiln_dim *dm = &t->dims[d];
      if (dm->value >= 0 || !dm->sym) continue;
      bool known = false;
      for (int k = 0; k < a->dims.len && !known; k++) {
        size_t n = strlen(dm->sym);
        known = !strncmp(a->dims.data[k].sym, dm->sym, n) && a->dims.data[k].sym[n] == '=';
      }
      if (known) continue;
      char *spec = kiln_xmalloc(strlen(dm->sym) + 2);
      sprintf(spec, "%s=", dm->sym);
      kiln_dim_binding b = {spec, 2 + (int64_t)(next_rand(rng) % 3)};
      kiln_vec_push(&a->dims, b);
    }
  }
}

static kiln_status draw_input(const verify_args *a, const kiln_value *v, uint64_t *rng,
                              kiln_val **out) {
  const kiln_type *t = &v->type;
  if (t->kind != KILN_TYPE_TENSOR || t->rank < 0)
    return kiln_unsupported("input '%s' is not a tensor of known rank: give it with --input",
                            v->name);
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = dim_extent(a, &t->dims[d], rng);
  kiln_tensor *x;
  KILN_TRYF(kiln_tensor_new(t->dtype, t->rank, dims, &x), "input '%s'", v->name);
  for (int64_t i = 0; i < x->numel; i++) {
    uint64_t r = next_rand(rng);
    if (kiln_dtype_is_float(t->dtype))
      kiln_store_f64(t->dtype, x->data, (size_t)i, (double)(r >> 11) * 0x1p-52 - 1.0);
    else if (t->dtype == KILN_STRING) ((char **)x->data)[i] = kiln_xstrdup(r & 1 ? "a" : "b");
    else if (t->dtype == KILN_BOOL) kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(r & 1));
    else kiln_store_i64(t->dtype, x->data, (size_t)i, (int64_t)(r % 3));
  }
  *out = kiln_val_tensor(x);
  return KILN_OK;
}

static const char *given_input(const verify_args *a, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < a->inputs.len; i++)
    if (!strncmp(a->inputs.data[i], name, n) && a->inputs.data[i][n] == '=')
      return a->inputs.data[i] + n + 1;
  return NULL;
}

static kiln_status check_input_names(const verify_args *a, const kiln_graph *g) {
  for (int i = 0; i < a->inputs.len; i++) {
    const char *spec = a->inputs.data[i];
    bool found = false; /* NAME=FILE where NAME may hold '=': any input name, then '=' */
    for (int k = 0; k < g->inputs.len && !found; k++) {
      const char *name = g->values.data[g->inputs.data[k]].name;
      size_t n = strlen(name);
      found = !strncmp(name, spec, n) && spec[n] == '=';
    }
    if (!found) return kiln_invalid("--input %s: the model has no input of that name", spec);
  }
  return KILN_OK;
}

/* Fills the inputs that are still NULL: from --input files, else drawn. */
/* The binding of sym (from --dim, or from an earlier given input), -1 when none. */
static int binding_of(const verify_args *a, const char *sym) {
  size_t n = strlen(sym);
  for (int k = 0; k < a->dims.len; k++)
    if (!strncmp(a->dims.data[k].sym, sym, n) && a->dims.data[k].sym[n] == '=') return k;
  return -1;
}

/* The symbolic dims of the inputs that are given (files, a case) take the given extents, so
 * that the inputs drawn next agree with them; one that --dim set otherwise is bad input. */
static kiln_status bind_given_dims(verify_args *a, const kiln_graph *g, kiln_val **vals) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    const kiln_tensor *t = vals[i] && vals[i]->kind == KILN_TYPE_TENSOR ? vals[i]->t : NULL;
    for (int d = 0; t && v->type.kind == KILN_TYPE_TENSOR && d < v->type.rank && d < t->rank; d++) {
      const char *sym = v->type.dims[d].sym;
      if (!sym || v->type.dims[d].value >= 0) continue;
      int k = binding_of(a, sym);
      int64_t e = k >= 0 ? a->dims.data[k].value : -1;
      if (k >= a->n_cli_dims && e >= 0) continue; /* two inputs disagree: the runner says so */
      if (e == t->dims[d]) continue;
      if (e >= 0)
        return kiln_invalid("input '%s' has %s = %lld (dim %d), but --dim %s=%lld", v->name, sym,
                            (long long)t->dims[d], d, sym, (long long)e);
      char *spec = kiln_xmalloc(strlen(sym) + 2);
      sprintf(spec, "%s=", sym);
      kiln_dim_binding b = {spec, t->dims[d]};
      kiln_vec_push(&a->dims, b);
    }
  }
  return KILN_OK;
}

/* Every --dim names a symbolic dim of the model's inputs (a misspelt one is not ignored). */
static kiln_status check_dim_names(const verify_args *a, const kiln_graph *g) {
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < a->n_cli_dims; i++) { /* sym holds "SYM=N" */
    const char *spec = a->dims.data[i].sym;
    char *sym = kiln_xstrdup(spec);
    sym[strchr(spec, '=') - spec] = 0;
    kiln_dim_binding b = {sym, a->dims.data[i].value};
    st = kiln_cli_check_dim_names(g, &b, 1);
    free(sym);
  }
  return st;
}

static kiln_status make_inputs(verify_args *a, const kiln_graph *g, kiln_val **vals) {
  KILN_TRY(check_input_names(a, g));
  KILN_TRY(check_dim_names(a, g));
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    const char *file = given_input(a, v->name);
    if (!file) continue;
    kiln_val_free(vals[i]), vals[i] = NULL;
    KILN_TRYF(kiln_tensor_file_read(file, &v->type, &vals[i]), "input '%s'", v->name);
    const kiln_tensor *t = vals[i]->kind == KILN_TYPE_TENSOR ? vals[i]->t : NULL;
    KILN_TRYF(kiln_graph_check_input(v, t), "--input %s=%s", v->name, file);
  }
  KILN_TRY(bind_given_dims(a, g, vals));
  uint64_t rng = a->seed * 0x2545f4914f6cdd1dULL + 1;
  draw_dims(a, g, &rng);
  for (int i = 0; i < g->inputs.len; i++)
    if (!vals[i]) KILN_TRY(draw_input(a, &g->values.data[g->inputs.data[i]], &rng, &vals[i]));
  return KILN_OK;
}

/* ---- the command ---- */
static bool is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool exists_in(const char *dir, const char *name) {
  char path[4400];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return stat(path, &sb) == 0;
}

/* A folder written by --repro, kiln fuzz or kiln reduce (inputs next to the model). */
static bool is_case_dir(const char *path) {
  return is_dir(path) && (exists_in(path, "case.txt") || exists_in(path, "input_0.pb"));
}

/* A model folder as the other commands take it: DIR/model.onnx, and the inputs of
 * DIR/test_data_set_0 when that exists (ONNX's test layout), else drawn. */
static kiln_status load_model_dir(const char *dir, kiln_graph **g, kiln_val ***vals) {
  char path[4400];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  if (!exists_in(dir, "model.onnx"))
    return kiln_invalid("'%s' is a folder without model.onnx (nor a case folder: no input_0.pb)",
                        dir);
  KILN_TRY(kiln_cli_load(path, g));
  *vals = kiln_xcalloc((size_t)(*g)->inputs.len + 1, sizeof **vals);
  if (!exists_in(dir, "test_data_set_0")) return KILN_OK;
  snprintf(path, sizeof path, "%s/test_data_set_0", dir);
  return kiln_verify_load_inputs(path, *g, *vals);
}

static kiln_status load(verify_args *a, kiln_graph **g, kiln_val ***vals, char *sig, size_t n) {
  sig[0] = 0;
  if (is_case_dir(a->model)) {
    int n_in;
    KILN_TRY(kiln_verify_load_case(a->model, g, vals, &n_in, sig, n));
  } else if (is_dir(a->model)) {
    kiln_status st = load_model_dir(a->model, g, vals);
    if (st) return kiln_status_annotate(st, "model folder '%s'", a->model);
  } else {
    KILN_TRY(kiln_cli_load(a->model, g));
  }
  if (!*vals) *vals = kiln_xcalloc((size_t)(*g)->inputs.len + 1, sizeof **vals);
  return make_inputs(a, *g, *vals);
}

static int report(const verify_args *a, const kiln_verify_result *res, const char *recorded) {
  kiln_strbuf out = {0};
  kiln_verify_print(res, &out);
  if (recorded[0])
    kiln_strbuf_printf(&out, "recorded signature: %s (%s)\n", recorded,
                       !strcmp(recorded, res->failed ? res->signature : "-") ? "same"
                                                                             : "different");
  if (res->failed && !res->case_dir[0] && !is_case_dir(a->model))
    kiln_strbuf_printf(&out, "(write a replayable case with --repro DIR)\n");
  if (out.data) kiln_cli_put_block(stdout, out.data); /* names in it: escaped lines */
  kiln_strbuf_free(&out);
  return res->failed ? 1 : 0;
}

int kiln_cmd_verify(int argc, char **argv) {
  kiln_cli_omp_passive();
  verify_args a;
  memset(&a, 0, sizeof a);
  a.seed = 1;
  kiln_verify_opts_init(&a.o);
  a.o.log = stderr;
  long cores = sysconf(_SC_NPROCESSORS_ONLN); /* what kiln run uses without --threads */
  a.o.par_threads = cores > 1 ? (int)(cores < 1024 ? cores : 1024) : 1;
  int rc = parse_args(argc, argv, &a);
  if (rc) {
    kiln_vec_free(&a.inputs);
    kiln_vec_free(&a.dims);
    return rc == 1 ? 0 : rc;
  }
  int n_given_dims = a.n_cli_dims = a.dims.len;
  kiln_graph *g = NULL;
  kiln_val **vals = NULL;
  char recorded[256];
  /* --repro is checked before anything runs: never the input's folder, nor one of other files */
  kiln_status st = a.o.repro_dir ? kiln_verify_check_case_dest(a.o.repro_dir, a.model) : KILN_OK;
  if (!st) st = load(&a, &g, &vals, recorded, sizeof recorded);
  kiln_verify_result res;
  if (!st) st = kiln_verify_run(g, g->inputs.len, vals, &a.o, &res);
  rc = st ? kiln_cli_fail("verify", st) : report(&a, &res, recorded);
  if (!st) kiln_verify_result_free(&res);
  for (int i = 0; g && vals && i < g->inputs.len; i++) kiln_val_free(vals[i]);
  free(vals);
  kiln_graph_free(g);
  for (int i = n_given_dims; i < a.dims.len; i++) free((char *)a.dims.data[i].sym);
  kiln_vec_free(&a.dims);
  kiln_vec_free(&a.inputs);
  return rc;
}
