/* kiln compile MODEL -o DIR: compiles a model for the CPU and writes an artifact;
 * kiln compile MODEL --target cuda --emit-cuda DIR: CUDA C, launch manifest and PTX. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lower/schedule.h"
#include "pass_flags.h"
#include "runtime/standalone.h"

static const char *const compile_help =
    "usage: kiln compile MODEL [-o DIR] [options]\n\n"
    "Compiles MODEL (.onnx or .kiln, or a folder holding model.onnx): graph passes, fusion,\n"
    "lowering to tile kernels, C, the system C compiler (kernels cached in $KILN_CACHE_DIR,\n"
    "else ~/.cache/kiln) and a static memory plan. Nodes that could not be lowered run their\n"
    "reference kernel; each such fallback is listed on stderr with its reason. Symbolic dims\n"
    "of the inputs must be bound with --dim.\n\n"
    "options:\n"
    "  -o DIR            write the artifact: DIR/model.onnx (the model as imported), DIR/\n"
    "                    manifest.txt (target, threads, dims), DIR/src/*.c (the generated C)\n"
    "                    and DIR/report.txt. `kiln run DIR` runs it: the kernels come back\n"
    "                    from the cache, so running needs the C compiler only on a cache miss.\n"
    "                    DIR must be new, empty or an earlier artifact (never the model's own\n"
    "                    folder); the artifact is built in a hidden folder next to DIR and\n"
    "                    renamed into place when complete, so a failed compile leaves none\n"
    "  --target {TARGETS} the target (default cpu). cuda: the kernels are scheduled for a\n"
    "                    GPU (tiled shared-memory matmuls, parallel loops mapped to blocks\n"
    "                    and threads, other kernels as one thread), emitted as CUDA C and\n"
    "                    compiled to PTX with NVRTC when NVRTC can be loaded (CUDA_HOME,\n"
    "                    /usr/local/cuda, the loader path); nothing runs on a GPU yet, and\n"
    "                    -o and --emit-c are CPU only. Prints the counts of kernels by\n"
    "                    mapping, the kernels that are not mappable with reasons, the\n"
    "                    fallbacks, and the NVRTC time\n"
    "  --emit-cuda DIR   (implies --target cuda) write DIR/model.cu (one __global__\n"
    "                    function per launch), DIR/launch.txt (per step: kernel, grid,\n"
    "                    block, shared bytes, the value bound to each parameter),\n"
    "                    DIR/report.txt and DIR/model.ptx (when NVRTC compiled it)\n"
    "  --cuda-arch ARCH  NVRTC architecture (default compute_90)\n"
    "  --block-threads N GPU threads per block of mapped loops (default 256)\n"
    "  --threads N       threads of the kernels (default: all cores)\n"
    "  --dim SYM=N       bind a symbolic dim (repeatable)\n"
    "  --report          print the report: kernels, their schedules (one line each, the form\n"
    "                    --schedule reads), fallbacks with reasons, memory plan\n"
    "                    (planned arena against the lower bound), compile time by stage\n"
    "  --emit-c DIR      also write a standalone C program: DIR/model.c, model.h, model.bin\n"
    "                    (weights) and main.c, which build with `cc main.c model.c -lm`\n"
    "                    (needs every node lowered: no fallback)\n"
    "  --force-fallback OPS  run these ops (comma-separated) with their reference kernel\n"
    "  --schedule FILE   set kernel schedules, in the form of the report's \"schedules:\" lines:\n"
    "                    a kernel name or pattern (* any run, ? one character), then FIELD=VALUE\n"
    "                    items; '#' starts a comment. For example:\n"
    "                      k3_conv micro=rows nr=16 par=rows\n"
    "                      k*_Add  split=i1:8 vector=i1_i\n"
    "                    micro=packed|inplace|scratch (MatMul, Gemm), im2col|rows|pointwise\n"
    "                    (Conv), plane|direct (depthwise Conv); mr=1..32 nr=1..128 (GEMM\n"
    "                    register tile); par=none|batch|panels|rows (GEMM), none|outer\n"
    "                    (depthwise Conv); par_min_elements=N (loop nests under N elements run\n"
    "                    on one thread); gpu_threads=1..1024 (cuda). Directives, in order:\n"
    "                    split=LOOP:F (into LOOP_o and LOOP_i), reorder=LOOP, parallel=LOOP,\n"
    "                    vector=LOOP, unroll=LOOP, serial=LOOP, bind=LOOP:KIND,\n"
    "                    stage=LOOP:BUFFER:local|shared (the report lists the loops and buffers).\n"
    "                    A bad file (FILE:LINE), a field or directive that cannot apply to the\n"
    "                    kernel, or a line matching no kernel is an error (exit 2); a schedule\n"
    "                    changes how kernels run, never their results. -o keeps it for kiln run\n"
    "  --verbose         progress of the stages on stderr\n"
    "pass flags:\n";

typedef struct compile_args {
  const char *model, *out_dir, *emit_dir, *cuda_dir;
  char *sched_text; /* --schedule: the file, kept for the artifact */
  bool report;
  const kiln_target *target; /* --target (NULL: the default) */
  kiln_compile_opts co;
  KILN_VEC(kiln_dim_binding) dims;
  KILN_VEC(const char *) pass_args; /* kept for the manifest */
  kiln_dir_writer art;              /* -o: the folder being built */
} compile_args;

static int parse_dim(const char *v, compile_args *a) {
  char *sym;
  int64_t n;
  if (kiln_cli_dim("compile", v, &sym, &n)) return 2;
  for (int i = 0; i < a->dims.len; i++)
    if (!strcmp(a->dims.data[i].sym, sym)) {
      free(sym);
      return kiln_cli_usage("compile", "--dim '%s' is given twice", a->dims.data[i].sym);
    }
  kiln_dim_binding b = {sym, n};
  kiln_vec_push(&a->dims, b);
  return -1;
}

static int usage_status(kiln_status st) {
  int rc = kiln_cli_usage("compile", "%s", kiln_status_message(st));
  kiln_status_free(st);
  return rc;
}

/* --schedule FILE: read and checked whole now, before anything long runs. */
static kiln_status read_schedule(const char *file, compile_args *a) {
  if (a->co.schedule) return kiln_invalid("--schedule is given twice");
  size_t len;
  KILN_TRY(kiln_read_file(file, &a->sched_text, &len));
  if (strlen(a->sched_text) != len) return kiln_invalid("%s: holds a NUL byte", file);
  return kiln_sched_set_parse(a->sched_text, file, &a->co.schedule);
}

static int parse_one(int argc, char **argv, int *i, compile_args *a) {
  const char *v = NULL;
  int mrc;
  kiln_status st = KILN_OK;
  if (kiln_cli_opt(argc, argv, i, "-o", &v) || kiln_cli_opt(argc, argv, i, "--output", &v)) {
    if (!v) return kiln_cli_usage("compile", "-o needs a folder");
    a->out_dir = v;
  } else if (kiln_cli_opt(argc, argv, i, "--emit-c", &v)) {
    if (!v) return kiln_cli_usage("compile", "--emit-c needs a folder");
    a->emit_dir = v;
  } else if (kiln_cli_opt(argc, argv, i, "--target", &v)) {
    if ((st = kiln_target_lookup(v, &a->target))) return usage_status(st);
  } else if (kiln_cli_opt(argc, argv, i, "--emit-cuda", &v)) {
    if (!v) return kiln_cli_usage("compile", "--emit-cuda needs a folder");
    a->cuda_dir = v;
    a->target = &kiln_target_cuda;
  } else if (kiln_cli_opt(argc, argv, i, "--cuda-arch", &v)) {
    if (!v || strncmp(v, "compute_", 8))
      return kiln_cli_usage("compile", "--cuda-arch needs compute_XX");
    a->co.cuda.arch = v;
  } else if (kiln_cli_opt(argc, argv, i, "--block-threads", &v)) {
    if (kiln_cli_int("compile", "--block-threads", v, 1, 1024, &a->co.cuda.threads_per_block))
      return 2;
  } else if (kiln_cli_opt(argc, argv, i, "--threads", &v)) {
    if (kiln_cli_threads("compile", v, &a->co.threads)) return 2;
  } else if (kiln_cli_opt(argc, argv, i, "--force-fallback", &v)) {
    if (!v) return kiln_cli_usage("compile", "--force-fallback needs op names");
    if ((st = kiln_cli_check_ops("--force-fallback", v))) return usage_status(st);
    a->co.force_fallback = v;
  } else if (kiln_cli_opt(argc, argv, i, "--schedule", &v)) {
    if (!v) return kiln_cli_usage("compile", "--schedule needs a file");
    if ((st = read_schedule(v, a))) return usage_status(st);
  } else if (kiln_cli_opt(argc, argv, i, "--dim", &v)) return parse_dim(v, a);
  else if (!strcmp(argv[*i], "--report")) a->report = true;
  else if (!strcmp(argv[*i], "--verbose")) a->co.verbose = true;
  else if (kiln_cli_pass_flag(argv[*i], &a->co.passes, &st)) {
    if (st) return usage_status(st);
    kiln_vec_push(&a->pass_args, argv[*i]);
  } else if (kiln_cli_max_memory("compile", argc, argv, i, &mrc)) return mrc;
  else if (argv[*i][0] == '-') return kiln_cli_usage("compile", "unknown option '%s'", argv[*i]);
  else if (a->model) return kiln_cli_usage("compile", "more than one model given");
  else a->model = argv[*i];
  return -1;
}

/* path made absolute through its parent folder (which exists when the folder is new), with
 * trailing slashes dropped; a copy of path when the parent cannot be resolved. */
static char *abs_name(const char *path) {
  char *p = kiln_xstrdup(path);
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = 0;
  char *slash = strrchr(p, '/');
  const char *base = slash ? slash + 1 : p;
  if (slash == p) return p; /* "/name": already absolute */
  if (slash) *slash = 0;
  char *parent = realpath(slash ? p : ".", NULL);
  if (!parent || !strcmp(base, ".") || !strcmp(base, "..")) {
    free(parent);
    if (slash) *slash = '/';
    return p;
  }
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s/%s", parent, base);
  free(parent);
  free(p);
  return b.data;
}

/* Whether two folder names are one folder: by device and inode when both exist, else by their
 * absolute, normalized names (-o builds its folder aside and renames it over the other). */
static bool same_folder(const char *x, const char *y) {
  struct stat sx, sy;
  if (stat(x, &sx) == 0 && stat(y, &sy) == 0)
    return sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
  char *rx = abs_name(x), *ry = abs_name(y);
  bool same = rx && ry && !strcmp(rx, ry);
  free(rx);
  free(ry);
  return same;
}

static int parse_args(int argc, char **argv, compile_args *a) {
  kiln_compile_opts_init(&a->co);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      kiln_cli_put_help(compile_help);
      fputs(kiln_cli_memory_help, stdout);
      fputs(kiln_cli_pass_flags_help, stdout);
      return 0;
    }
    int rc = parse_one(argc, argv, &i, a);
    if (rc >= 0) return rc;
  }
  if (!a->model) return kiln_cli_usage("compile", "no model given");
  if (!a->target) a->target = kiln_target_default();
  if (a->cuda_dir && a->target != &kiln_target_cuda)
    return kiln_cli_usage("compile", "--emit-cuda is for the cuda target");
  if (a->target != &kiln_target_cpu && (a->out_dir || a->emit_dir))
    return kiln_cli_usage("compile", "-o and --emit-c are for the cpu target");
  if (a->out_dir && a->emit_dir && same_folder(a->out_dir, a->emit_dir))
    return kiln_cli_usage("compile", "-o and --emit-c need two folders ('%s' is both)",
                          a->emit_dir);
  a->co.dims = a->dims.data;
  a->co.n_dims = a->dims.len;
  return -1;
}

/* ---- the artifact: written whole (kiln_dir_begin), the manifest last ---- */
static kiln_status write_manifest(const compile_args *a, const char *path) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "# Kiln compiled artifact: `kiln run ");
  kiln_esc_line(&b, a->out_dir);
  kiln_strbuf_printf(&b,
                     " --input NAME=FILE ...`\n"
                     "format kiln-artifact 1\nmodel model.onnx\ntarget %s\n",
                     a->target->name);
  if (a->co.threads > 0) kiln_strbuf_printf(&b, "threads %d\n", a->co.threads);
  for (int i = 0; i < a->dims.len; i++) {
    kiln_strbuf_printf(&b, "dim ");
    kiln_esc_line(&b, a->dims.data[i].sym);
    kiln_strbuf_printf(&b, " %lld\n", (long long)a->dims.data[i].value);
  }
  if (a->co.force_fallback) kiln_strbuf_printf(&b, "force-fallback %s\n", a->co.force_fallback);
  for (int i = 0; i < a->pass_args.len; i++)
    kiln_strbuf_printf(&b, "pass-flag %s\n", a->pass_args.data[i]);
  if (a->sched_text) kiln_strbuf_printf(&b, "schedule schedule.txt\n");
  kiln_status st = kiln_write_file(path, b.data, b.len);
  kiln_strbuf_free(&b);
  return st;
}

/* Saves the model as imported (before the passes rewrite it) and prepares TMP/src. The model
 * is model.onnx.part until the end: an interrupted compile's folder is not a model folder. */
static kiln_status start_artifact(compile_args *a, const kiln_graph *g, char *src, size_t n) {
  char path[4200];
  KILN_TRY(kiln_dir_begin(a->out_dir, &a->art));
  snprintf(path, sizeof path, "%s/model.onnx.part", a->art.tmp);
  KILN_TRY(kiln_onnx_save(g, path));
  snprintf(src, n, "%s/src", a->art.tmp);
  KILN_TRY(kiln_make_dirs(src));
  a->co.keep_sources = src;
  return KILN_OK;
}

/* The model under its name, the report, then the manifest (what makes the folder an
 * artifact), then the rename of the folder. */
static kiln_status finish_artifact(compile_args *a, const kiln_strbuf *rep) {
  char path[4200], part[4200];
  snprintf(part, sizeof part, "%s/model.onnx.part", a->art.tmp);
  snprintf(path, sizeof path, "%s/model.onnx", a->art.tmp);
  if (rename(part, path) != 0) return kiln_system_error("cannot rename '%s'", part);
  snprintf(path, sizeof path, "%s/report.txt", a->art.tmp);
  KILN_TRY(kiln_write_file(path, rep->data ? rep->data : "", rep->len));
  if (a->sched_text) {
    snprintf(path, sizeof path, "%s/schedule.txt", a->art.tmp);
    KILN_TRY(kiln_write_file(path, a->sched_text, strlen(a->sched_text)));
  }
  snprintf(path, sizeof path, "%s/manifest.txt", a->art.tmp);
  KILN_TRY(write_manifest(a, path));
  return kiln_dir_commit(&a->art);
}

/* Output folders must not replace the input model: DIR/model.onnx of -o, or a file of
 * --emit-c / --emit-cuda, being the model itself (any link to it) is refused up front. */
static kiln_status check_outputs(const compile_args *a, const char *model_file) {
  static const char *const emitted[] = {"model.c",  "model.h",    "model.bin",  "main.c",
                                        "model.cu", "launch.txt", "report.txt", "model.ptx"};
  if (a->out_dir) KILN_TRY(kiln_cli_artifact_check_dest(a->out_dir, model_file));
  const char *dirs[] = {a->emit_dir, a->cuda_dir};
  for (int d = 0; d < 2; d++) {
    struct stat sb;
    if (dirs[d] && stat(dirs[d], &sb) == 0 && !S_ISDIR(sb.st_mode))
      return kiln_invalid("'%s' exists and is not a folder", dirs[d]);
    for (size_t i = 0; dirs[d] && i < sizeof emitted / sizeof emitted[0]; i++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", dirs[d], emitted[i]);
      if (kiln_same_file(path, model_file))
        return kiln_invalid("'%s' would replace the input model '%s'", path, model_file);
    }
  }
  return KILN_OK;
}

/* --emit-c / --emit-cuda: a new folder is written whole (kiln_dir_begin), so a failure
 * leaves none; into an existing folder (the user's own) file by file, each atomically. */
static kiln_status emit_folder(const char *dir, kiln_status (*emit)(const void *, const char *),
                               const void *arg) {
  struct stat sb;
  if (stat(dir, &sb) == 0) return emit(arg, dir);
  kiln_dir_writer w;
  KILN_TRY(kiln_dir_begin(dir, &w));
  kiln_status st = emit(arg, w.tmp);
  if (st) {
    kiln_dir_abort(&w);
    return st;
  }
  return kiln_dir_commit(&w);
}

static kiln_status emit_c(const void *compiled, const char *dir) {
  return kiln_emit_standalone(compiled, dir, "model");
}

static kiln_status emit_cuda(const void *compiled, const char *dir) {
  return kiln_cuda_build_write(kiln_compiled_cuda(compiled), dir);
}

static void print_summary(const compile_args *a, const kiln_cli_engine *e) {
  const kiln_compile_stats *s = kiln_compiled_stats(kiln_cli_engine_compiled(e));
  printf("compiled %s for %s in %.2f s: %d kernels (%d unique), %d fallback steps, "
         "arena %lld bytes (lower bound %lld)\n",
         a->model, a->target->name, s->total_seconds, s->n_kernels, s->n_unique_kernels,
         s->n_fallback_steps, (long long)s->arena_bytes, (long long)s->lower_bound);
}

static kiln_status finish(compile_args *a, kiln_cli_engine *e) {
  kiln_strbuf fb = {0}, rep = {0};
  kiln_cli_engine_fallbacks(e, &fb);
  /* what did not compile, always: on stderr, or in the report that lists each step once */
  if (fb.len && !a->report) fprintf(stderr, "%s", fb.data);
  kiln_cli_engine_report(e, &rep);
  if (a->report) kiln_cli_put_block(stdout, rep.data);
  print_summary(a, e);
  kiln_status st = KILN_OK;
  if (a->out_dir) {
    st = finish_artifact(a, &rep);
    if (!st)
      printf("artifact: %s (run it with `kiln run %s --input NAME=FILE ...`)\n", a->out_dir,
             a->out_dir);
  }
  if (!st && a->emit_dir) {
    st = emit_folder(a->emit_dir, emit_c, kiln_cli_engine_compiled(e));
    if (!st)
      printf("standalone C: %s (build: cd %s && cc -O2 main.c model.c -lm)\n", a->emit_dir,
             a->emit_dir);
  }
  kiln_strbuf_free(&fb);
  kiln_strbuf_free(&rep);
  return st;
}

/* ---- a target that compiles only (cuda) ---- */
static kiln_status compile_only(compile_args *a, kiln_graph *g) {
  kiln_compiled *c;
  KILN_TRY(kiln_cli_check_dims(g, &a->co));
  KILN_TRY(kiln_compile(g, a->target, &a->co, &c));
  kiln_strbuf rep = {0};
  kiln_compiled_report(c, &rep);
  kiln_cli_put_block(stdout, rep.data); /* fallback node names in it */
  const kiln_cuda_build *b = kiln_compiled_cuda(c);
  kiln_status st = KILN_OK;
  if (a->cuda_dir) st = emit_folder(a->cuda_dir, emit_cuda, c);
  if (!st && a->cuda_dir)
    printf("CUDA: %s (model.cu, launch.txt, report.txt%s)\n", a->cuda_dir,
           b->ptx ? ", model.ptx" : "");
  if (!st && b && b->nvrtc_found && !b->nvrtc_ok)
    st = kiln_error(KILN_ERR_FAILED, "NVRTC could not compile the CUDA C (see the report)");
  kiln_strbuf_free(&rep);
  kiln_compiled_free(c);
  return st;
}

static kiln_status compile_model(compile_args *a) {
  kiln_graph *g;
  char src[4200], file[4200];
  KILN_TRY(kiln_cli_model_file(a->model, file, sizeof file));
  KILN_TRY(check_outputs(a, file));
  KILN_TRY(kiln_cli_load(file, &g));
  kiln_status st = kiln_cli_check_dim_names(g, a->dims.data, a->dims.len);
  bool runs = kiln_target_can_run(a->target);
  if (!st && !runs) st = compile_only(a, g);
  if (st || !runs) {
    kiln_graph_free(g);
    return st;
  }
  st = a->out_dir ? start_artifact(a, g, src, sizeof src) : KILN_OK;
  if (st) {
    kiln_graph_free(g);
    return st;
  }
  kiln_cli_engine_opts eo = {.backend = kiln_cli_compiled(a->target), .compile = &a->co};
  kiln_cli_engine *e;
  KILN_TRY(kiln_cli_engine_new(g, &eo, NULL, &e));
  st = finish(a, e);
  kiln_cli_engine_free(e);
  return st;
}

int kiln_cmd_compile(int argc, char **argv) {
  compile_args a;
  memset(&a, 0, sizeof a);
  int rc = parse_args(argc, argv, &a);
  if (rc < 0) {
    kiln_status st = compile_model(&a);
    kiln_dir_abort(&a.art); /* a failed compile leaves no artifact behind */
    rc = st ? kiln_cli_fail("compile", st) : 0;
  }
  for (int i = 0; i < a.dims.len; i++) free((char *)a.dims.data[i].sym);
  kiln_vec_free(&a.dims);
  kiln_vec_free(&a.pass_args);
  kiln_sched_set_free(a.co.schedule);
  free(a.sched_text);
  return rc;
}
