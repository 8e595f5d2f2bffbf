/* kiln run MODEL --input NAME=FILE ... [--output-dir DIR]: run on a backend. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

static const char *const run_help =
    "usage: kiln run MODEL --input NAME=FILE ... [--output-dir DIR] [options]\n\n"
    "MODEL is a .onnx or .kiln file, a folder holding model.onnx, or a folder written by\n"
    "`kiln compile -o` (then the backend is cpu, with the threads, dims and pass flags it was\n"
    "compiled with).\n"
    "Runs MODEL on a backend (default: the reference interpreter). Each graph input needs\n"
    "--input NAME=FILE (.npy or .pb TensorProto); symbolic dims take the extents of the\n"
    "inputs (each given once). Outputs are written to DIR/NAME.npy (or .pb with --format pb),\n"
    "NAME with every byte other than letters, digits, '_', '-' and a non-leading '.' written\n"
    "as %XX (\"a/b\" -> a%2Fb.npy), and the file of each output is printed; without\n"
    "--output-dir they are only summarized.\n\n"
    "options:\n"
    "  --backend B              interp: reference interpreter; opt: the interpreter after the\n"
    "                           graph passes (no fusion); tile: lowered kernels in the tile IR\n"
    "                           interpreter; {COMPILED} (default interp)\n"
    "  --threads N              kernel threads of the cpu backend (default: all cores)\n"
    "  --report                 print the backend's report (kernels, fallbacks, memory plan)\n"
    "  --expect NAME=FILE       compare output NAME with FILE (exit 1 on mismatch)\n"
    "  --rtol R --atol A        tolerances of --expect (default 1e-3, 1e-7)\n"
    "  --format npy|pb          file format of written outputs (default npy)\n"
    "  --trace                  print each node as it runs\n";

typedef KILN_VEC(const char *) name_list;

typedef struct run_opts {
  const char *model, *out_dir, *format;
  name_list inputs, expects;
  double rtol, atol;
  bool report, backend_set;
  kiln_cli_engine_opts engine;
} run_opts;

static int add_named(name_list *list, const char *opt, const char *v) {
  if (kiln_cli_named_arg("run", opt, list->data, list->len, v)) return 2;
  kiln_vec_push(list, v);
  return 0;
}

/* --output-dir, or the nearest of its parents that exists, must be a folder: a file there is
 * found before anything runs. */
static int check_out_dir(const char *v) {
  struct stat sb;
  if (!v || !*v) return kiln_cli_usage("run", "--output-dir needs a folder");
  char *p = kiln_xstrdup(v);
  int rc = 0;
  for (;;) {
    if (stat(p, &sb) == 0) {
      if (!S_ISDIR(sb.st_mode))
        rc = kiln_cli_usage("run", "--output-dir '%s': '%s' exists and is not a folder", v, p);
      break;
    }
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) break;
    *slash = 0;
  }
  free(p);
  return rc;
}

static int parse_args(int argc, char **argv, run_opts *o) {
  o->rtol = 1e-3;
  o->atol = 1e-7;
  o->format = "npy";
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      kiln_cli_put_help(run_help);
      fputs(kiln_cli_memory_help, stdout);
      return 0;
    }
    if (kiln_cli_opt(argc, argv, &i, "--input", &v)) {
      if (add_named(&o->inputs, "--input", v)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--expect", &v)) {
      if (add_named(&o->expects, "--expect", v)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--output-dir", &v)) {
      if (check_out_dir(v)) return 2;
      o->out_dir = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--format", &v)) {
      if (!v || (strcmp(v, "npy") && strcmp(v, "pb")))
        return kiln_cli_usage("run", "--format is npy or pb");
      o->format = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--backend", &v)) {
      if (kiln_cli_backend_parse(v, &o->engine.backend)) return kiln_cli_unknown_backend("run", v);
      o->backend_set = true;
    } else if (kiln_cli_opt(argc, argv, &i, "--threads", &v)) {
      if (kiln_cli_threads("run", v, &o->engine.threads)) return 2;
    } else if (!strcmp(argv[i], "--report")) {
      o->report = true;
    } else if (kiln_cli_opt(argc, argv, &i, "--rtol", &v)) {
      if (kiln_cli_f64("run", "--rtol", v, 0, 1e9, &o->rtol)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--atol", &v)) {
      if (kiln_cli_f64("run", "--atol", v, 0, 1e9, &o->atol)) return 2;
    } else if (!strcmp(argv[i], "--trace")) {
      o->engine.trace = true;
    } else if (kiln_cli_max_memory("run", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-') {
      return kiln_cli_usage("run", "unknown option '%s'", argv[i]);
    } else if (o->model) {
      return kiln_cli_usage("run", "more than one model given");
    } else {
      o->model = argv[i];
    }
  }
  if (!o->model) return kiln_cli_usage("run", "no model given");
  return -1; /* go on */
}

/* Finds "NAME=FILE" for name in list; returns FILE or NULL. */
static const char *find_arg(const char *const *list, int n, const char *name) {
  size_t k = strlen(name);
  for (int i = 0; i < n; i++)
    if (!strncmp(list[i], name, k) && list[i][k] == '=') return list[i] + k + 1;
  return NULL;
}

/* Every NAME=FILE names a value of ids: NAME is the longest model name that the text starts
 * with, followed by '=' (a name may itself hold '='; a file name too). */
static kiln_status check_arg_names(const kiln_graph *g, const char *const *list, int n,
                                   const int *ids, int n_ids, const char *what) {
  for (int i = 0; i < n; i++) {
    bool found = false;
    for (int k = 0; k < n_ids && !found; k++) {
      const char *name = g->values.data[ids[k]].name;
      size_t len = strlen(name);
      found = !strncmp(name, list[i], len) && list[i][len] == '=';
    }
    if (!found) {
      const char *eq = strchr(list[i], '=');
      return kiln_invalid("the model has no %s named '%.*s'", what, (int)(eq - list[i]), list[i]);
    }
  }
  return KILN_OK;
}

static kiln_status load_inputs(const kiln_graph *g, const run_opts *o, kiln_val **vals) {
  KILN_TRY(
      check_arg_names(g, o->inputs.data, o->inputs.len, g->inputs.data, g->inputs.len, "input"));
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    const char *file = find_arg(o->inputs.data, o->inputs.len, v->name);
    if (!file)
      return kiln_invalid("input '%s' is not given (use --input %s=FILE)", v->name, v->name);
    KILN_TRYF(kiln_tensor_file_read(file, &v->type, &vals[i]), "input '%s'", v->name);
    if (vals[i]->kind == KILN_TYPE_TENSOR) /* the check every command makes (runtime.h) */
      KILN_TRYF(kiln_graph_check_input(v, vals[i]->t), "--input %s=%s", v->name, file);
  }
  const kiln_tensor **ts = kiln_xcalloc((size_t)g->inputs.len + 1, sizeof *ts);
  for (int i = 0; i < g->inputs.len; i++)
    ts[i] = vals[i]->kind == KILN_TYPE_TENSOR ? vals[i]->t : NULL;
  kiln_status st = kiln_graph_check_inputs(g, g->inputs.len, ts); /* one extent per symbol */
  free(ts);
  return st;
}

/* A file that the run reads (the model, an --input or --expect file) is never replaced by an
 * output: an output named like it (a model may name its outputs anything) is refused. */
static kiln_status check_not_read(const kiln_graph *g, const run_opts *o, const char *path) {
  if (kiln_same_file(path, o->model))
    return kiln_invalid("an output would be written to '%s', the model", path);
  for (int k = 0; k < 2; k++) {
    const name_list *l = k ? &o->expects : &o->inputs;
    const int *ids = k ? g->outputs.data : g->inputs.data;
    for (int i = 0; i < (k ? g->outputs.len : g->inputs.len); i++) {
      const char *name = g->values.data[ids[i]].name;
      const char *file = find_arg(l->data, l->len, name);
      if (file && kiln_same_file(path, file))
        return kiln_invalid("an output would be written to '%s', the %s file of '%s': give "
                            "another --output-dir",
                            path, k ? "--expect" : "--input", name);
    }
  }
  return KILN_OK;
}

/* DIR/<output name, escaped>.FORMAT: kiln_esc_file_name is injective ("a/b" -> "a%2Fb",
 * "a_b" stays), and equal paths are refused all the same (a name cut to 200 bytes ends in a
 * hash, which could collide), so no output ever overwrites another. */
static kiln_status output_paths(const kiln_graph *g, const run_opts *o, char **paths) {
  for (int i = 0; i < g->outputs.len; i++) {
    kiln_strbuf b = {0};
    kiln_strbuf_printf(&b, "%s/", o->out_dir);
    kiln_esc_file_name(&b, g->values.data[g->outputs.data[i]].name);
    kiln_strbuf_printf(&b, ".%s", o->format);
    paths[i] = b.data;
    struct stat sb; /* a folder or FIFO in the way is found before the run */
    if (stat(paths[i], &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode))
      return kiln_invalid("output %d would be written to '%s', which is not a file", i, paths[i]);
    KILN_TRY(check_not_read(g, o, paths[i]));
    const kiln_type *t = &g->values.data[g->outputs.data[i]].type;
    if (!strcmp(o->format, "npy") && t->kind == KILN_TYPE_TENSOR && t->dtype != KILN_UNDEFINED &&
        !kiln_npy_has_dtype(t->dtype)) /* found before the run, not after it wrote the others */
      return kiln_invalid("output %d is a %s tensor, which .npy cannot hold: use --format pb", i,
                          kiln_dtype_onnx_name(t->dtype));
    for (int k = 0; k < i; k++)
      if (!strcmp(paths[k], paths[i]))
        return kiln_invalid("outputs %d and %d would both be written to '%s'", k, i, paths[i]);
  }
  return KILN_OK;
}

static kiln_status write_outputs(const kiln_graph *g, const run_opts *o, kiln_val **outs,
                                 char **paths) {
  int n = g->outputs.len;
  kiln_status st = o->out_dir ? kiln_make_dirs(o->out_dir) : KILN_OK;
  for (int i = 0; !st && i < n; i++) {
    kiln_strbuf nb = {0};
    const char *name = kiln_cli_show(&nb, g->values.data[g->outputs.data[i]].name);
    char tb[128];
    if (outs[i]->kind != KILN_TYPE_TENSOR || !outs[i]->t) {
      printf("output %s: (non-tensor value)\n", name);
      kiln_strbuf_free(&nb);
      continue;
    }
    printf("output %-20s %s", name, kiln_tensor_type_str(outs[i]->t, tb, sizeof tb));
    if (paths[i] && !strcmp(o->format, "pb")) st = kiln_pb_write_tensor(paths[i], outs[i]->t, name);
    else if (paths[i]) st = kiln_npy_write(paths[i], outs[i]->t);
    if (!st && paths[i]) printf("  -> %s", paths[i]);
    printf("\n");
    kiln_strbuf_free(&nb);
  }
  return st;
}

/* The expected outputs, read before the run: a wrong name or an unreadable file is bad
 * input, reported before anything long runs. */
static kiln_status load_expects(const kiln_graph *g, const run_opts *o, kiln_val **wants) {
  KILN_TRY(check_arg_names(g, o->expects.data, o->expects.len, g->outputs.data, g->outputs.len,
                           "output"));
  for (int i = 0; i < g->outputs.len; i++) {
    const kiln_value *v = &g->values.data[g->outputs.data[i]];
    const char *file = find_arg(o->expects.data, o->expects.len, v->name);
    if (file)
      KILN_TRYF(kiln_tensor_file_read(file, &v->type, &wants[i]), "expected output '%s'", v->name);
  }
  return KILN_OK;
}

static void check_expects(const kiln_graph *g, const run_opts *o, kiln_val **outs, kiln_val **wants,
                          int *mismatches) {
  for (int i = 0; i < g->outputs.len; i++) {
    if (!wants[i]) continue;
    kiln_strbuf nb = {0}, mb = {0};
    const char *name = kiln_cli_show(&nb, g->values.data[g->outputs.data[i]].name);
    char msg[512];
    bool ok = kiln_cli_compare(outs[i], wants[i], o->rtol, o->atol, msg, sizeof msg);
    printf("check %-20s %s%s%s\n", name, ok ? "ok" : "MISMATCH", ok ? "" : ": ",
           ok ? "" : kiln_cli_show(&mb, msg));
    kiln_strbuf_free(&nb), kiln_strbuf_free(&mb);
    *mismatches += !ok;
  }
}

/* MODEL may be an artifact folder of `kiln compile -o`: its model, on the cpu backend with
 * the options it was compiled with. */
static kiln_status open_model(run_opts *o, kiln_cli_artifact *art, kiln_graph **g) {
  char path[4200];
  struct stat sb;
  snprintf(path, sizeof path, "%s/manifest.txt", o->model);
  if (stat(o->model, &sb) == 0 && S_ISDIR(sb.st_mode) && stat(path, &sb) == 0) {
    KILN_TRY(kiln_cli_artifact_load(o->model, art));
    if (!o->backend_set) o->engine.backend = kiln_cli_compiled(art->target);
    if (o->engine.threads > 0) art->co.threads = o->engine.threads;
    o->engine.compile = &art->co;
    KILN_TRY(kiln_cli_load(art->model, g));
    kiln_status st = kiln_cli_check_dim_names(*g, art->dims.data, art->dims.len);
    if (st) kiln_graph_free(*g);
    return st ? kiln_status_annotate(st, "%s/manifest.txt", o->model) : KILN_OK;
  }
  return kiln_cli_load(o->model, g);
}

static kiln_status run_model(run_opts *o, int *mismatches) {
  kiln_graph *g;
  kiln_cli_artifact art;
  memset(&art, 0, sizeof art);
  kiln_status lst = open_model(o, &art, &g);
  if (lst) {
    kiln_cli_artifact_free(&art);
    return lst;
  }
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_val **ins = kiln_xcalloc((size_t)n_in + 1, sizeof *ins);
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_val **wants = kiln_xcalloc((size_t)n_out + 1, sizeof *wants);
  char **paths = kiln_xcalloc((size_t)n_out + 1, sizeof *paths);
  kiln_cli_engine *e = NULL;
  kiln_status st = load_inputs(g, o, ins);
  if (!st) st = load_expects(g, o, wants);
  if (!st && o->out_dir) st = output_paths(g, o, paths);
  if (st) kiln_graph_free(g);
  else st = kiln_cli_engine_new(g, &o->engine, ins, &e);
  double t0 = kiln_clock_seconds();
  if (!st) st = kiln_cli_engine_run(e, ins, outs);
  double ms = (kiln_clock_seconds() - t0) * 1e3;
  if (!st && o->report) {
    kiln_strbuf b = {0};
    kiln_cli_engine_report(e, &b);
    kiln_cli_put_block(stdout, b.data);
    kiln_strbuf_free(&b);
  }
  if (!st) {
    const kiln_graph *rg = kiln_cli_engine_graph(e);
    printf("ran %s on backend %s in %.3f ms (prepared in %.1f ms)\n", o->model,
           kiln_cli_backend_name(o->engine.backend), ms, kiln_cli_engine_prepare_seconds(e) * 1e3);
    st = write_outputs(rg, o, outs, paths);
    if (!st) check_expects(rg, o, outs, wants, mismatches);
  }
  for (int i = 0; i < n_in; i++) kiln_val_free(ins[i]);
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]), kiln_val_free(wants[i]), free(paths[i]);
  free(paths);
  free(ins);
  free(outs);
  free(wants);
  kiln_cli_engine_free(e);
  kiln_cli_artifact_free(&art);
  return st;
}

int kiln_cmd_run(int argc, char **argv) {
  run_opts o;
  memset(&o, 0, sizeof o);
  int rc = parse_args(argc, argv, &o);
  int mismatches = 0;
  if (rc < 0) {
    kiln_status st = run_model(&o, &mismatches);
    rc = st ? kiln_cli_fail("run", st) : mismatches ? 1 : 0;
  }
  kiln_vec_free(&o.inputs);
  kiln_vec_free(&o.expects);
  return rc;
}
