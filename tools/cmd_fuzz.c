/* kiln fuzz: random models (src/verify/gen.h) through the differential runner
 * (kiln_verify_run), failures deduplicated by signature and written as cases. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/edges.h"
#include "cli.h"
#include "fuzz_child.h"
#include "fuzz_feedback.h"
#include "fuzz_summary.h"
#include "verify/gen/gen.h"
#include "verify/oracle/ort.h"
#include "verify/reduce/reduce.h"

static const char *const fuzz_help =
    "usage: kiln fuzz [--seed S] [--time T | --count N] [--shard i/N|env] [--backend LIST|none]\n"
    "                 [--oracle kiln|onnxruntime] [--out DIR] [--max-nodes N] [--ops A,B]\n"
    "                 [--threads N] [--cpu-every N] [--cpu-novel K] [--sweep N] [--no-grid]\n"
    "                 [--policy uniform|bandit] [--reduce] [--report] [--no-isolate]\n"
    "                 [--graph-timeout S] [-q] [--list-ops]\n"
    "       kiln fuzz --merge DIR... [--out MERGED] [--report] [-q]   (kiln fuzz --merge "
    "--help)\n\n"
    "Generates random valid models (1..max-nodes nodes over most ops Kiln compiles, 13\n"
    "dtypes, concrete, symbolic and data-dependent shapes) with inputs on which the reference\n"
    "is defined and stable (a share of them at the edges of their domain: large, subnormal,\n"
    "-0, NaN and infinities where ONNX defines what they give, the limits of narrower types),\n"
    "and verifies each one like 'kiln verify': the graph after every pass, the tile\n"
    "program and the compiled code against the double-precision reference and its error\n"
    "bounds. The first case of each new failure signature is written to DIR/<hash>/ (replay it\n"
    "with 'kiln verify DIR/<hash>'). The summary ends with the coverage map: the cells the graphs\n"
    "reached (ops, attribute value classes, dtypes, ranks, broadcast forms, passes that fired,\n"
    "lowering paths; compiler edges in a KILN_COVERAGE build) and how many of the enumerated\n"
    "and absent attribute cells of the op schemas were reached. It is also written to\n"
    "DIR/fuzz.json; 'kiln fuzz --merge' unites those of the shards of one campaign.\n\n"
    "  --seed S         campaign seed (default 1); graph j uses a seed mixed from S and j\n"
    "  --count N        graphs to try (default 100 when --time is not given)\n"
    "  --time T         stop starting graphs after T seconds\n"
    "  --shard i/N      run only the graphs j with j % N == i (with --policy uniform, N shards\n"
    "                   repeat the unsharded campaign; with bandit each steers its own corpus)\n"
    "  --shard env      i/N from KILN_SHARD, else a Slurm job array (SLURM_ARRAY_TASK_ID -\n"
    "                   SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT), else a Kubernetes\n"
    "                   Indexed Job (JOB_COMPLETION_INDEX of KILN_SHARDS)\n"
    "  --backend LIST   the targets whose layers run ({TARGETS}, comma-separated; default\n"
    "                   cpu), or none (graph and tile layers only). cuda: its mapped\n"
    "                   program in the tile interpreter on every graph, and its CUDA C\n"
    "                   through NVRTC (where it can be loaded) on the graphs --cpu-every\n"
    "                   draws\n"
    "  --oracle O       kiln (default): verify Kiln's layers; onnxruntime: also run each model\n"
    "                   in ONNX Runtime and compare it with Kiln's reference\n"
    "  --out DIR        where failure cases go (default fuzz-out); DIR/cache is the kernel\n"
    "                   cache of the campaign\n"
    "  --max-nodes N    nodes per graph at most, 1..30 (default 12)\n"
    "  --threads N      kernel threads the cpu layer compiles for (default: drawn per graph,\n"
    "                   1, 2, 4 or all cores, so that the parallel schedules are checked\n"
    "                   too; the compiled code runs twice, its memory filled with other bytes,\n"
    "                   then once untraced as kiln run executes it, and must give the same\n"
    "                   bits)\n"
    "  --cpu-every N    compile and run the cpu layer on one graph in N, drawn by seed\n"
    "                   (default 5; 1: every graph), on a third of the others whose inputs\n"
    "                   lie at the edges of their domains (NaN, infinities, limits: they reach\n"
    "                   the C helpers), and on those --cpu-novel picks. The graph and tile\n"
    "                   layers run on every graph: they take a tenth of the time of the C\n"
    "                   compiler, so a campaign checks the passes and the lowering on more\n"
    "                   graphs (about 30% of them compile by default)\n"
    "  --cpu-novel K    also compile a graph whose lowered program holds a feature that fewer\n"
    "                   than K compiled graphs held (default 0: off): an operation\n"
    "                   or a load or store by type, a cast by its two types, a loop kind, an\n"
    "                   MMA by types and shape class, a schedule, a fallback or view, a\n"
    "                   value's type and how it is bound. The C compiler's time goes to code\n"
    "                   the campaign has rarely compiled. Which graphs compile then depends\n"
    "                   on those compiled before (each case records the layers it ran)\n"
    "  --no-grid        leave out the edge grid: the campaign's first graphs (25, each about\n"
    "                   0.2 s) are otherwise cells enumerated, not drawn, every one compiled:\n"
    "                   the casts from each dtype to every other, and Min, Max (both operand\n"
    "                   orders), Mod, Div, Clip, Abs, Neg, Sign, Relu, the roundings, the\n"
    "                   comparisons, Where, a Pad of -0, the shifts and bitwise ops of\n"
    "                   integers and the float math on each dtype, on inputs that hold every\n"
    "                   edge value of their dtype at once (signed zeros, NaN payloads,\n"
    "                   infinities, the limits, ties and subnormals of each narrower float,\n"
    "                   integer extremes); every pair of values meets in the binary ops. None\n"
    "                   with --ops or without the cpu layer\n"
    "  --sweep N        the N graphs after the grid (default 24; 0: none; none with --ops\n"
    "                   or without the cpu layer) are a helper sweep: up to 6 nodes of Cast,\n"
    "                   CastLike, Min, Max, Clip, Mod, Div, BitShift, Abs, Neg, Round, Sign\n"
    "                   and Relu, inputs drawn at the edges of their domains first, every one\n"
    "                   compiled: the C helpers of narrow floats, NaN and remainders, which\n"
    "                   differ by type and value, reached in the first seconds\n"
    "  --ops A,B        draw only these ops (names as in --list-ops)\n"
    "  --precision-policy drawn|default|RULES\n"
    "                   the types the lowering computes in (as kiln verify\n"
    "                   --precision-policy). drawn (default): about one graph in four\n"
    "                   (not the grid's nor the sweep's) gets some rules for the f16, bf16\n"
    "                   and f32 values it holds: compute in the storage type or f64,\n"
    "                   accumulate in f32 or f64 (the half-precision arithmetic of the\n"
    "                   C code and the bounds of a policy); default: none; RULES: these on\n"
    "                   every graph\n"
    "  --policy P       what to draw next. bandit (default): a multi-armed bandit over the\n"
    "                   ops, rewarded by new coverage, and a corpus of the graphs that reached\n"
    "                   something new, mutated (nodes inserted, deleted, re-attributed,\n"
    "                   re-typed, re-shaped); uniform: every graph fresh from its own seed\n"
    "                   with the op table's weights (graph j is the same whatever came before)\n"
    "  --report         also list the cells of the coverage map never reached\n"
    "  --no-isolate     verify each graph in this process (default: in a child process, so\n"
    "                   that compiled code that crashes or a verification that hangs is a\n"
    "                   finding, 'crash|-|SIGSEGV' or 'hang|-|-', not the end of the campaign;\n"
    "                   a KILN_COVERAGE build runs in-process: its counters live there)\n"
    "  --isolate        the child process even in a coverage build\n"
    "  --graph-timeout S  seconds one graph's verification may take when isolated (default\n"
    "                   120); past it the graph is a 'hang' finding\n"
    "  --reduce         reduce each new failure (DIR/<hash>/reduced)\n"
    "  -q               no progress lines\n"
    "  --list-ops       print the generator's ops and exit\n\n"
    "One compiled graph in six (not the grid's nor the sweep's) also runs one of its ops by\n"
    "the reference kernel (as kiln verify --force-fallback): the executor's host steps and the\n"
    "views around them. One in 64 (not the grid's nor the sweep's) is also written as the\n"
    "standalone C program of kiln compile --emit-c, built and run (as kiln verify\n"
    "--standalone): its own step loop, weights file and main.c.\n\n"
    "A layer that cannot run because the environment failed (no C compiler, a full disk) is a\n"
    "runner error, never a finding; after 3 of them in a row the campaign stops (exit 1).\n\n"
    "Exit status: 0 nothing found, 1 failures found or the environment failed, 2 bad usage.\n";

typedef struct fuzz_args {
  uint64_t seed;
  long count;
  double time;
  long shard, shards;
  bool targets[KILN_TARGET_COUNT]; /* --backend */
  bool ort, reduce, quiet, report;
  bool isolate; /* each graph verified in a child process (default, not in a coverage build) */
  long graph_timeout; /* seconds a graph's verification may take when isolated */
  fuzz_policy policy;
  const char *out;
  long max_nodes;
  long threads;   /* 0: drawn per graph */
  long cpu_every; /* the layers of targets that run on one graph in cpu_every */
  long cpu_novel; /* and on a graph with a feature compiled fewer times than this */
  long sweep;     /* graphs j < sweep (after the grid) are helper sweeps (FUZZ_SWEEP_OPS, edges,
                     compiled) */
  bool grid;      /* graphs j < kiln_gen_grid_count() are the edge grid's cells (compiled) */
  const char *ops;
  /* --precision-policy: NULL drawn per graph (kiln_gen_policy), "default", or rules (fixed) */
  const char *precision;
  kiln_precision_policy fixed; /* the rules (precision neither NULL nor "default") */
} fuzz_args;

typedef struct finding {
  char sig[256];
  char dir[1100];
  int count;
  uint64_t first_j;
} finding;

/* Where an isolated child's verification is, in memory it shares with the parent: a child
 * that dies leaves the layer it died in (record_death names it). */
typedef struct fuzz_progress {
  int kind; /* kiln_layer_kind; -1: no layer started */
  char name[48];
} fuzz_progress;

static void note_layer(void *user, kiln_layer_kind kind, const char *name) {
  fuzz_progress *p = user;
  p->kind = (int)kind;
  snprintf(p->name, sizeof p->name, "%s", name);
}

typedef struct campaign {
  fuzz_args a;
  kiln_gen_opts go;
  kiln_gen_opts sweep_go; /* the helper sweep's (--sweep) */
  kiln_verify_opts vo;
  kiln_ort *ort;
  int64_t tried, valid, invalid, no_inputs, verify_errors, ort_refused, compiled;
  int64_t n_ops, *op_seen;                  /* per generator op */
  bool pairs[KILN_OP_COUNT][KILN_OP_COUNT]; /* producer -> consumer */
  KILN_VEC(finding) found;
  fuzz_feedback fb;
  KILN_VEC(char *) pass_names;
  KILN_VEC(int64_t) pass_fired;
  int64_t files;
  char cache[1100];
  int64_t env_errors;   /* runner errors caused by the environment (KILN_ERR_SYSTEM) */
  int env_streak;       /* of those, in a row since the last run that got through */
  int64_t env_ok;       /* runs that needed the environment (the compiled layers) and got it */
  kiln_status env_last; /* the last of those errors */
  bool env_stop;        /* the campaign stopped: the environment failed on every graph */
  int64_t edge_graphs, edge_seen[KILN_GEN_EDGE_COUNT]; /* valid graphs with edge inputs */
  uint8_t *fcount;    /* compiled graphs per feature (hash mod FUZZ_FEATURE_SLOTS), saturating */
  bool drawn;         /* the graph at hand compiles whatever its features (drawn by its seed) */
  int64_t novel;      /* graphs compiled for a feature, not drawn */
  int64_t swept;      /* graphs of the helper sweep (--sweep) */
  int64_t gridded;    /* cells of the edge grid run */
  long n_grid;        /* cells of the edge grid (0: off) */
  int64_t policied;   /* valid graphs verified under a precision policy other than the default */
  int64_t fell_back;  /* valid graphs with an op forced to its reference kernel */
  int64_t standalone; /* compiled graphs whose standalone C program ran too */
  fuzz_progress *progress; /* shared with the children (NULL: not isolated or no mapping) */
  char fallback_op[64];    /* the op forced on the graph at hand (vo.compile.force_fallback) */
} campaign;

#define FUZZ_FEATURE_SLOTS 65536

/* The helper sweep: ops whose compiled code calls the C helpers that differ from one type or
 * edge value to the next (narrow-float and float-to-integer conversions, NaN-aware min and
 * max, float and integer remainders and divisions, shifts, rounding), in small graphs whose
 * inputs are drawn at the edges of their domains first, every one compiled. */
#define FUZZ_SWEEP_OPS "Cast,CastLike,Min,Max,Clip,Mod,Div,BitShift,Abs,Neg,Round,Sign,Relu"
#define FUZZ_SWEEP_NODES 6

/* Invalid graphs whose text a campaign writes (keep_invalid) */
#define FUZZ_INVALID_KEPT 20

/* The environment fails for every graph (no C compiler, a full disk): after this many runner
 * errors in a row with KILN_ERR_SYSTEM, the campaign stops with that error. */
#define FUZZ_ENV_STREAK 3

/* ---- arguments ---- */
/* i/N with 0 <= i < N <= 1000000; 0 or the exit status of a usage error. */
static int parse_shard(const char *v, fuzz_args *a) {
  char env[64];
  if (v && !strcmp(v, "env")) {
    if (kiln_fuzz_shard_from_env(env, sizeof env)) return 2;
    v = env;
  }
  const char *slash = v ? strchr(v, '/') : NULL;
  if (!slash) return kiln_cli_usage("fuzz", "--shard needs i/N with 0 <= i < N");
  char i_text[32];
  snprintf(i_text, sizeof i_text, "%.*s", (int)(slash - v < 31 ? slash - v : 31), v);
  if (kiln_cli_long("fuzz", "--shard N", slash + 1, 1, 1000000, &a->shards)) return 2;
  return kiln_cli_long("fuzz", "--shard i", i_text, 0, a->shards - 1, &a->shard);
}

/* --backend LIST: registered target names ("cpu,cuda") or "none". */
static int parse_backend(const char *v, fuzz_args *a) {
  kiln_status st = kiln_verify_parse_targets(v, a->targets);
  if (!st) return 0;
  kiln_cli_usage("fuzz", "--backend: %s", kiln_status_message(st));
  kiln_status_free(st);
  return 1;
}

static void list_ops(void) {
  for (int i = 0; i < kiln_gen_op_count(); i++) printf("%s\n", kiln_gen_op_name(i));
}

/* --precision-policy drawn|default|RULES */
static int parse_precision(const char *v, fuzz_args *a) {
  if (!v || !*v) return kiln_cli_usage("fuzz", "--precision-policy needs drawn, default or rules");
  a->precision = strcmp(v, "drawn") ? v : NULL;
  kiln_precision_default(&a->fixed);
  if (!a->precision || !strcmp(v, "default")) return 0;
  kiln_status st = kiln_precision_parse(&a->fixed, v);
  if (!st) return 0;
  kiln_cli_usage("fuzz", "--precision-policy: %s", kiln_status_message(st));
  kiln_status_free(st);
  return -1;
}

/* -1 when the arguments are fine, else the exit status. */
static int parse_args(int argc, char **argv, fuzz_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return kiln_cli_put_help(fuzz_help), fputs(kiln_cli_memory_help, stdout), 0;
    if (!strcmp(argv[i], "--list-ops")) return list_ops(), 0;
    if (!strcmp(argv[i], "--reduce")) a->reduce = true;
    else if (!strcmp(argv[i], "--report")) a->report = true;
    else if (!strcmp(argv[i], "--isolate")) a->isolate = true;
    else if (!strcmp(argv[i], "--no-isolate")) a->isolate = false;
    else if (!strcmp(argv[i], "--no-grid")) a->grid = false;
    else if (kiln_cli_opt(argc, argv, &i, "--graph-timeout", &v)) {
      if (kiln_cli_long("fuzz", "--graph-timeout", v, 1, 86400, &a->graph_timeout)) return 2;
    } else if (!strcmp(argv[i], "-q")) a->quiet = true;
    else if (kiln_cli_opt(argc, argv, &i, "--seed", &v)) {
      int64_t seed;
      if (kiln_cli_i64("fuzz", "--seed", v, 0, INT64_MAX, &seed)) return 2;
      a->seed = (uint64_t)seed;
    } else if (kiln_cli_opt(argc, argv, &i, "--count", &v)) {
      if (kiln_cli_long("fuzz", "--count", v, 1, LONG_MAX, &a->count)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--time", &v)) {
      if (kiln_cli_f64("fuzz", "--time", v, 1e-3, 1e9, &a->time)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--shard", &v)) {
      if (parse_shard(v, a)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--backend", &v)) {
      if (!v) return kiln_cli_usage("fuzz", "--backend needs a list of targets or none");
      if (parse_backend(v, a)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--oracle", &v)) {
      if (!v || (strcmp(v, "kiln") && strcmp(v, "onnxruntime")))
        return kiln_cli_usage("fuzz", "--oracle needs kiln or onnxruntime");
      a->ort = !strcmp(v, "onnxruntime");
    } else if (kiln_cli_max_memory("fuzz", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (kiln_cli_opt(argc, argv, &i, "--out", &v)) {
      if (!v || !*v) return kiln_cli_usage("fuzz", "--out needs a folder");
      a->out = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--max-nodes", &v)) {
      if (kiln_cli_long("fuzz", "--max-nodes", v, 1, 30, &a->max_nodes)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--threads", &v)) {
      if (kiln_cli_long("fuzz", "--threads", v, 1, KILN_CLI_MAX_THREADS, &a->threads)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--cpu-every", &v)) {
      if (kiln_cli_long("fuzz", "--cpu-every", v, 1, 1000000, &a->cpu_every)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--cpu-novel", &v)) {
      if (kiln_cli_long("fuzz", "--cpu-novel", v, 0, 255, &a->cpu_novel)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--sweep", &v)) {
      if (kiln_cli_long("fuzz", "--sweep", v, 0, 1000000, &a->sweep)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--policy", &v)) {
      int p = 0;
      while (p < FUZZ_POLICY_COUNT && (!v || strcmp(v, fuzz_policy_names[p]))) p++;
      if (p == FUZZ_POLICY_COUNT) return kiln_cli_usage("fuzz", "--policy needs uniform or bandit");
      a->policy = (fuzz_policy)p;
    } else if (kiln_cli_opt(argc, argv, &i, "--precision-policy", &v)) {
      if (parse_precision(v, a)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--ops", &v)) {
      if (!v || !*v) return kiln_cli_usage("fuzz", "--ops needs op names");
      a->ops = v;
    } else return kiln_cli_usage("fuzz", "unexpected argument '%s'", argv[i]);
  }
  if (a->count == 0 && a->time == 0) a->count = 100;
  return -1;
}

/* ---- statistics ---- */
static void note_graph(campaign *c, const kiln_graph *g) {
  for (int n = 0; n < g->nodes.len; n++) {
    const kiln_node *nd = &g->nodes.data[n];
    for (int k = 0; k < c->n_ops; k++)
      if (!strcmp(kiln_gen_op_name((int)k), nd->op_type)) c->op_seen[k]++;
    for (int i = 0; i < nd->n_inputs; i++) {
      int v = nd->inputs[i];
      if (v < 0 || g->values.data[v].kind != KILN_VALUE_NODE) continue;
      kiln_op p = g->nodes.data[g->values.data[v].node].op;
      c->pairs[p][nd->op] = true;
    }
  }
}

static void note_fired(campaign *c, const char *fired) {
  char *list = kiln_xstrdup(fired), *save = NULL;
  for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < c->pass_names.len && strcmp(c->pass_names.data[k], w)) k++;
    if (k == c->pass_names.len) {
      kiln_vec_push(&c->pass_names, kiln_xstrdup(w));
      kiln_vec_push(&c->pass_fired, 0);
    }
    c->pass_fired.data[k]++;
  }
  free(list);
}

/* ---- findings ---- */
/* A folder or file of the campaign that cannot be written: the environment failed (a full
 * disk), a failed run (exit 1), not bad input. */
static kiln_status as_system(kiln_status st) {
  if (!st || kiln_status_code(st) != KILN_ERR_IO) return st;
  kiln_status sys = kiln_error(KILN_ERR_SYSTEM, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return sys;
}

static kiln_status env_failed(campaign *c);

/* A runner error: counted; an error of the environment on every graph stops the campaign. */
static kiln_status runner_error(campaign *c, uint64_t j, kiln_status st) {
  c->verify_errors++;
  if (!c->a.quiet)
    fprintf(stderr, "fuzz: graph %llu: runner error: %s\n", (unsigned long long)j,
            kiln_status_message(st));
  if (kiln_status_code(st) != KILN_ERR_SYSTEM) {
    kiln_status_free(st);
    return KILN_OK;
  }
  c->env_errors++;
  kiln_status_free(c->env_last);
  c->env_last = st;
  if (++c->env_streak < FUZZ_ENV_STREAK) return KILN_OK;
  return env_failed(c);
}

/* Stops the campaign with the last environment error: it failed on every graph that needed it
 * (FUZZ_ENV_STREAK in a row, or all of them when the campaign ends first). */
static kiln_status env_failed(campaign *c) {
  kiln_status st = c->env_last;
  c->env_last = NULL;
  c->env_stop = true;
  return kiln_status_annotate(st,
                              "the environment failed on every graph that needed it (%d of "
                              "%lld), stopping",
                              c->env_streak, (long long)(c->env_streak + c->env_ok));
}

/* Records a failure; the first of its signature is written (and reduced with --reduce). */
static kiln_status record(campaign *c, uint64_t j, const kiln_gen_case *gc,
                          kiln_verify_result *res) {
  for (int i = 0; i < c->found.len; i++)
    if (!strcmp(c->found.data[i].sig, res->signature)) {
      c->found.data[i].count++;
      return KILN_OK;
    }
  finding f = {.count = 1, .first_j = j};
  snprintf(f.sig, sizeof f.sig, "%s", res->signature);
  uint64_t h = kiln_hash_bytes(f.sig, strlen(f.sig), 0);
  snprintf(f.dir, sizeof f.dir, "%s/%012llx", c->a.out, (unsigned long long)(h >> 16));
  KILN_TRY(as_system(kiln_make_dirs(c->a.out)));
  KILN_TRY(as_system(kiln_verify_write_case(f.dir, gc->g, gc->n_in, gc->inputs, res)));
  c->files++;
  kiln_vec_push(&c->found, f);
  if (!c->a.quiet)
    fprintf(stderr, "fuzz: graph %llu: new failure %s -> %s\n", (unsigned long long)j, f.sig,
            f.dir);
  if (!c->a.reduce) return KILN_OK;
  char rdir[1200];
  snprintf(rdir, sizeof rdir, "%s/reduced", f.dir);
  kiln_reduce_opts ro;
  kiln_reduce_opts_init(&ro);
  ro.max_seconds = 120;
  ro.log = c->a.quiet ? NULL : stderr;
  kiln_reduce_result rr;
  kiln_status st = kiln_reduce_case(f.dir, rdir, &c->vo, &ro, &rr);
  if (st) return st;
  if (rr.reproduced) c->files++;
  kiln_reduce_result_free(&rr);
  return KILN_OK;
}

/* ONNX Runtime against Kiln's reference: a finding is recorded like a compiler failure. */
static kiln_status check_ort(campaign *c, uint64_t j, const kiln_gen_case *gc) {
  kiln_vref *ref;
  KILN_TRY(kiln_vref_compute(gc->g, gc->n_in, gc->inputs, &ref));
  kiln_layer_result layer;
  kiln_status st = kiln_ort_check(c->ort, gc->g, gc->n_in, gc->inputs, ref, &layer);
  if (!st && !layer.ran) c->ort_refused++;
  if (!st && layer.ran && !layer.ok) {
    kiln_verify_result res = {
        .failed = true, .first_failing = -1, .fail_kind = KILN_LAYER_REFERENCE};
    st = kiln_ort_locate(c->ort, gc->g, gc->n_in, gc->inputs, ref, res.where, sizeof res.where,
                         res.signature, sizeof res.signature);
    if (!st && !res.signature[0]) snprintf(res.signature, sizeof res.signature, "onnxruntime|-|");
    if (!st) st = record(c, j, gc, &res);
    kiln_verify_result_free(&res);
  }
  kiln_vref_free(ref);
  return st;
}

/* Kernel threads for graph j: --threads, else from j's seed 1 (half the graphs), 2, 4 or all
 * cores (what kiln run uses by default; a quarter): the lowering picks parallel loops and GEMM
 * splits by the thread count. */
static int graph_threads(const campaign *c, uint64_t seed) {
  if (c->a.threads > 0) return (int)c->a.threads;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int all = cores > 1 ? (int)(cores < 1024 ? cores : 1024) : 1;
  const int pick[8] = {1, 1, 1, 1, 2, 4, all, all};
  return pick[(seed >> 61) & 7];
}

/* ---- the verification of one case, in a child process ---- */
typedef struct verify_report {
  int runner_error, err_code; /* kiln_verify_run failed (the environment, or the runner) */
  int failed, wrote;          /* a layer failed; its case folder was written (a new signature) */
  int64_t files;              /* case folders written (with --reduce, the reduced one too) */
  char err_msg[512], signature[256], fired[256], paths[512];
  int compiled, n_features; /* the compiled layers ran; the program's features */
  int standalone;           /* the standalone C layer ran */
  uint32_t features[KILN_VERIFY_FEATURES];
} verify_report;

typedef struct verify_job {
  campaign *c;
  uint64_t j;
  const kiln_gen_case *gc;
} verify_job;

/* Verifies the case and records a failure (writing its folder when the signature is new). In
 * a child, the campaign is the child's copy: the parent mirrors the report (mirror_report). */
static void verify_work(void *user, void *report) {
  verify_job *v = user;
  verify_report *r = report;
  memset(r, 0, sizeof *r);
  kiln_verify_result res;
  kiln_status st = kiln_verify_run(v->gc->g, v->gc->n_in, v->gc->inputs, &v->c->vo, &res);
  if (!st) {
    snprintf(r->fired, sizeof r->fired, "%s", res.fired);
    snprintf(r->paths, sizeof r->paths, "%s", res.paths);
    r->compiled = res.compiled_ran, r->n_features = res.n_features;
    r->standalone = res.standalone;
    memcpy(r->features, res.features, sizeof r->features);
    snprintf(r->signature, sizeof r->signature, "%s", res.signature);
    r->failed = res.failed;
    int known = v->c->found.len;
    int64_t files = v->c->files;
    if (res.failed) st = record(v->c, v->j, v->gc, &res);
    r->wrote = v->c->found.len > known, r->files = v->c->files - files;
    kiln_verify_result_free(&res);
  }
  if (st) {
    r->runner_error = 1, r->err_code = (int)kiln_status_code(st);
    snprintf(r->err_msg, sizeof r->err_msg, "%s", kiln_status_message(st));
    kiln_status_free(st);
  }
}

/* The parent's record of a failure the child recorded (same list, same folder name). */
static void mirror_failure(campaign *c, uint64_t j, const char *sig, int64_t files) {
  c->files += files;
  for (int i = 0; i < c->found.len; i++)
    if (!strcmp(c->found.data[i].sig, sig)) {
      c->found.data[i].count++;
      return;
    }
  finding f = {.count = 1, .first_j = j};
  snprintf(f.sig, sizeof f.sig, "%s", sig);
  uint64_t h = kiln_hash_bytes(f.sig, strlen(f.sig), 0);
  snprintf(f.dir, sizeof f.dir, "%s/%012llx", c->a.out, (unsigned long long)(h >> 16));
  kiln_vec_push(&c->found, f);
}

/* The child died (a signal: compiled code that faulted, a compiler bug that aborted) or ran
 * past --graph-timeout: a failure of its own, "crash|-|SIGSEGV" or "hang|-|-", whose case folder
 * the parent writes (the graph, its inputs, and a layer "crash"/"hang" naming what happened).
 * Replaying it runs the same layers again. */
static kiln_status record_death(campaign *c, uint64_t j, const kiln_gen_case *gc,
                                const fuzz_child *ch) {
  char sname[32], msg[256];
  const char *sig = fuzz_child_signal_name(ch->signal, sname, sizeof sname);
  bool hang = ch->how == FUZZ_CHILD_TIMEOUT;
  if (hang)
    snprintf(msg, sizeof msg, "the verification ran past %lld s", (long long)c->a.graph_timeout);
  else if (ch->signal) snprintf(msg, sizeof msg, "the verification died: %s", sig);
  else snprintf(msg, sizeof msg, "the verification exited with status %d", ch->status);
  kiln_verify_result res = {.failed = true,
                            .threads = c->vo.threads,
                            .sched_seed = c->vo.sched_seed,
                            .standalone = c->vo.standalone};
  kiln_precision_format(&c->vo.compile.precision, res.precision, sizeof res.precision);
  if (c->vo.compile.force_fallback)
    snprintf(res.fallback, sizeof res.fallback, "%s", c->vo.compile.force_fallback);
  for (int t = 0; t < KILN_TARGET_COUNT; t++) /* the layers it ran: the replay's --backend */
    if (c->vo.targets[t]) {
      kiln_layer_result l = {.kind = kiln_layer_of_target((kiln_target_id)t), .ran = false};
      snprintf(l.name, sizeof l.name, "%s", kiln_layer_kind_name(l.kind));
      kiln_vec_push(&res.layers, l);
    }
  kiln_layer_result d = {.kind = KILN_LAYER_REFERENCE, .ran = true, .ok = false};
  snprintf(d.name, sizeof d.name, "%s", hang ? "hang" : "crash");
  const fuzz_progress *p = c->progress;
  if (p && p->kind >= 0 && p->name[0]) { /* the layer it was in: "cpu (2 threads), crash" */
    d.kind = (kiln_layer_kind)p->kind;
    snprintf(d.name, sizeof d.name, "%s, %s", p->name, hang ? "hang" : "crash");
    size_t n = strlen(msg);
    snprintf(msg + n, sizeof msg - n, " in the layer '%s'", p->name);
  }
  snprintf(d.msg, sizeof d.msg, "%s", msg);
  kiln_vec_push(&res.layers, d);
  res.first_failing = res.layers.len - 1;
  snprintf(res.signature, sizeof res.signature, "%s|-|%s", hang ? "hang" : "crash",
           hang         ? "-"
           : ch->signal ? sig
                        : "exit");
  snprintf(res.where, sizeof res.where, "%s", msg);
  kiln_status st = record(c, j, gc, &res);
  kiln_vec_free(&res.layers);
  return st;
}

/* Verifies gc (isolated in a child unless --no-isolate) and counts what it found. */
static kiln_status verify_case(campaign *c, uint64_t j, const kiln_gen_case *gc, bool any) {
  verify_job job = {c, j, gc};
  verify_report r;
  if (c->a.isolate) {
    fuzz_child ch;
    if (c->progress) c->progress->kind = -1, c->progress->name[0] = 0;
    KILN_TRY(fuzz_child_run(verify_work, &job, &r, sizeof r, (int)c->a.graph_timeout, &ch));
    if (ch.how != FUZZ_CHILD_DONE) {
      if (any) c->env_streak = 0, c->env_ok++;
      return record_death(c, j, gc, &ch);
    }
    if (!r.runner_error && r.failed) mirror_failure(c, j, r.signature, r.files);
  } else verify_work(&job, &r);
  if (r.runner_error) return runner_error(c, j, kiln_error((kiln_code)r.err_code, "%s", r.err_msg));
  if (any && r.compiled) c->env_streak = 0, c->env_ok++;
  note_fired(c, r.fired);
  fuzz_feedback_note(&c->fb, gc, r.fired, r.paths);
  if (r.compiled) {
    c->compiled++, c->novel += !c->drawn, c->standalone += r.standalone;
    for (int i = 0; i < r.n_features; i++) {
      uint8_t *n = &c->fcount[r.features[i] % FUZZ_FEATURE_SLOTS];
      if (*n < 255) ++*n;
    }
  }
  return KILN_OK;
}

/* The verifier's gate before the compiled layers (kiln_verify_opts.gate): the graph was
 * drawn to compile, or its program holds a feature that fewer than --cpu-novel compiled
 * graphs held (what C generation, the plan or the executor has rarely been given). In a
 * child, the counts are the parent's at the fork. */
static bool fuzz_gate(void *user, const kiln_verify_result *res) {
  const campaign *c = user;
  if (c->drawn) return true;
  for (int i = 0; i < res->n_features; i++)
    if (c->fcount[res->features[i] % FUZZ_FEATURE_SLOTS] < c->a.cpu_novel) return true;
  return false;
}

/* A graph the reference cannot run is a gap of the generator: its text goes to
 * OUT/invalid-J.kiln (the first FUZZ_INVALID_KEPT of a campaign), named in where. */
static kiln_status keep_invalid(campaign *c, uint64_t j, const kiln_graph *g, char *where,
                                size_t len) {
  kiln_strbuf text = {0}, path = {0};
  kiln_graph_print(g, &text, 4096);
  kiln_strbuf_printf(&path, "%s/invalid-%llu.kiln", c->a.out, (unsigned long long)j);
  kiln_status st = as_system(kiln_make_dirs(c->a.out));
  if (!st) st = as_system(kiln_write_file(path.data, text.data, text.len));
  if (!st) snprintf(where, len, " (its graph: %s)", path.data);
  kiln_strbuf_free(&text), kiln_strbuf_free(&path);
  return st;
}

static kiln_status run_one(campaign *c, uint64_t j) {
  kiln_gen_case gc;
  uint64_t seed = kiln_gen_seed(c->a.seed, j);
  c->vo.threads = graph_threads(c, seed);
  /* half the graphs are also lowered under a drawn schedule set (runner_sched.c) */
  c->vo.sched_seed = (seed >> 20) & 1 ? (seed * 0x9e3779b97f4a7c15ull) | 1 : 0;
  bool compile = (seed >> 32) % (uint64_t)c->a.cpu_every == 0; /* code that runs: costly */
  /* by j: N shards together run the grid and the sweep as one campaign */
  bool grid = j < (uint64_t)c->n_grid, sweep = !grid && j < (uint64_t)(c->n_grid + c->a.sweep);
  if (grid) { /* an enumerated cell of edge values, compiled */
    c->fb.last_entry = -1;
    memset(c->fb.last_kinds, 0, sizeof c->fb.last_kinds);
    KILN_TRY(kiln_gen_grid((int)j, &gc));
    compile = true;
    c->gridded++;
  } else if (sweep) { /* a fresh graph of the sweep's ops, compiled: no corpus entry to credit */
    c->fb.last_entry = -1;
    memset(c->fb.last_kinds, 0, sizeof c->fb.last_kinds);
    KILN_TRY(kiln_gen_model(&c->sweep_go, seed, &gc));
    compile = true;
    c->swept++;
  } else KILN_TRY(fuzz_feedback_next(&c->fb, &c->go, seed, &gc));
  /* inputs at the edges of their domains (NaN, infinities, limits of narrower types) reach
   * the C helpers of the generated code: a third of those graphs not drawn above run it too */
  if (gc.status == KILN_GEN_OK && gc.edges && c->a.cpu_every > 1) compile |= (seed >> 40) % 3 == 0;
  c->drawn = compile;       /* the others compile when the gate finds a rare feature (fuzz_gate) */
  c->vo.cuda_ptx = compile; /* NVRTC on the CUDA C (--backend cuda): as costly as cc */
  /* the types the lowering computes in: drawn for the graphs drawn (not the grid's cells nor
   * the sweep's, which check the default arithmetic at the edges) */
  kiln_precision_policy *prec = &c->vo.compile.precision;
  if (c->a.precision) *prec = c->a.fixed;
  else if (grid || sweep || gc.status != KILN_GEN_OK) kiln_precision_default(prec);
  else kiln_gen_policy(gc.g, seed, prec);
  /* one compiled graph in six runs one of its ops by the reference kernel: the executor's
   * host steps, their copies and the views around them (generated graphs rarely hold an op
   * without a lowering) */
  c->vo.compile.force_fallback = NULL;
  if (compile && !grid && !sweep && gc.status == KILN_GEN_OK && gc.g->nodes.len > 0 &&
      (seed >> 48) % 6 == 0) {
    const kiln_node *n = &gc.g->nodes.data[(seed >> 24) % (uint64_t)gc.g->nodes.len];
    snprintf(c->fallback_op, sizeof c->fallback_op, "%s", n->op_type);
    c->vo.compile.force_fallback = c->fallback_op;
  }
  /* one drawn compiled graph in 64 is also written as the standalone C program, built and
   * run (its own step loop and weights file: what kiln compile --emit-c gives users); its
   * build (main.c and the whole model in one unit, about 0.5 s) costs several cpu layers */
  c->vo.standalone = compile && !grid && !sweep && (seed >> 52) % 64 == 0;
  bool any = false;
  for (int t = 0; t < KILN_TARGET_COUNT; t++) {
    c->vo.targets[t] = c->a.targets[t];
    any = any || (c->vo.targets[t] && kiln_target_can_run(kiln_target_at(t)));
  }
  c->tried++;
  kiln_edges_reset();
  if (gc.status == KILN_GEN_INVALID) {
    c->invalid++;
    char where[1200] = "";
    if (c->invalid <= FUZZ_INVALID_KEPT && gc.g)
      KILN_TRY(keep_invalid(c, j, gc.g, where, sizeof where));
    if (!c->a.quiet)
      fprintf(stderr, "fuzz: graph %llu is not valid: %s%s\n", (unsigned long long)j, gc.note,
              where);
  } else if (gc.status == KILN_GEN_NO_INPUTS) c->no_inputs++;
  kiln_status st = KILN_OK;
  if (gc.status == KILN_GEN_OK) {
    c->valid++;
    c->policied += !kiln_precision_is_default(&c->vo.compile.precision);
    c->fell_back += c->vo.compile.force_fallback != NULL;
    note_graph(c, gc.g);
    c->edge_graphs += gc.edges != 0;
    for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++) c->edge_seen[k] += (gc.edges >> k) & 1;
    st = verify_case(c, j, &gc, any);
    if (!st && c->ort) st = check_ort(c, j, &gc);
  }
  kiln_gen_case_free(&gc);
  return st;
}

/* ---- summary ---- */
/* True when name is in the comma-separated list (NULL: every op is). */
static bool op_listed(const char *list, const char *name) {
  if (!list) return true;
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)); p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return true;
  return false;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Nodes drawn per op: the five ops drawn least, and the median, over the ops in play. */
static void print_depth(const campaign *c) {
  int64_t *n = kiln_xcalloc((size_t)c->n_ops + 1, sizeof *n);
  int m = 0;
  for (int k = 0; k < c->n_ops; k++) {
    const char *name = kiln_gen_op_name(k);
    if (name[0] != '(' && op_listed(c->a.ops, name)) n[m++] = c->op_seen[k] * 4096 + k;
  }
  if (m > 0) {
    qsort(n, (size_t)m, sizeof *n, cmp_i64);
    printf("nodes per op: fewest");
    for (int i = 0; i < m && i < 5; i++)
      printf("%s %s %lld", i ? "," : "", kiln_gen_op_name((int)(n[i] % 4096)),
             (long long)(n[i] / 4096));
    printf("; median %lld\n", (long long)(n[m / 2] / 4096));
  }
  free(n);
}

static void summary(const campaign *c, double secs) {
  printf("fuzz: %lld graphs in %.1f s (%.2f/s): %lld valid, %lld invalid, %lld dropped (no finite, "
         "stable inputs), %lld runner errors (%lld from the environment)\n",
         (long long)c->tried, secs, secs > 0 ? (double)c->tried / secs : 0.0, (long long)c->valid,
         (long long)c->invalid, (long long)c->no_inputs, (long long)c->verify_errors,
         (long long)c->env_errors);
  if (c->a.targets[KILN_TARGET_CPU])
    printf("cpu layer (compiled C) on %lld graphs (%lld of them for a rare feature); %lld cells of "
           "the edge grid, %lld graphs of the helper sweep\n",
           (long long)c->compiled, (long long)c->novel, (long long)c->gridded, (long long)c->swept);
  printf("precision policies: %lld graphs computed in other types than the default's "
         "(--precision-policy); %lld with an op forced to its reference kernel; %lld also "
         "run as the standalone C program\n",
         (long long)c->policied, (long long)c->fell_back, (long long)c->standalone);
  int covered = 0, total = 0;
  kiln_strbuf miss = {0};
  for (int k = 0; k < c->n_ops; k++) {
    const char *name = kiln_gen_op_name(k);
    if (name[0] == '(' || !op_listed(c->a.ops, name)) continue;
    total++;
    if (c->op_seen[k]) covered++;
    else kiln_strbuf_printf(&miss, " %s", name);
  }
  printf("ops covered: %d of %d%s%s\n", covered, total, miss.data ? "; not covered:" : "",
         miss.data ? miss.data : "");
  kiln_strbuf_free(&miss);
  print_depth(c);
  int pairs = 0;
  for (int p = 0; p < KILN_OP_COUNT; p++)
    for (int q = 0; q < KILN_OP_COUNT; q++) pairs += c->pairs[p][q];
  printf("op pairs covered (producer -> consumer): %d\n", pairs);
  printf("edge inputs (graphs): %lld;", (long long)c->edge_graphs);
  for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++)
    printf(" value:%s %lld", kiln_gen_edge_name(k), (long long)c->edge_seen[k]);
  printf("\n");
  printf("passes fired (graphs):");
  for (int k = 0; k < c->pass_names.len; k++)
    printf(" %s %lld", c->pass_names.data[k], (long long)c->pass_fired.data[k]);
  printf("%s\n", c->pass_names.len ? "" : " none");
  if (c->ort) printf("onnxruntime: %lld models refused\n", (long long)c->ort_refused);
  fuzz_feedback_print_map(&c->fb, stdout, c->a.report);
  printf("failures: %d signatures\n", c->found.len);
  for (int i = 0; i < c->found.len; i++)
    printf("  %s  x%d  %s (first: graph %llu)\n", c->found.data[i].sig, c->found.data[i].count,
           c->found.data[i].dir, (unsigned long long)c->found.data[i].first_j);
  printf("files written: %lld case folders%s%s\n", (long long)c->files, c->files ? " under " : "",
         c->files ? c->a.out : "");
}

/* ---- fuzz.json (fuzz_summary.h) ---- */
/* The campaign's summary as data: counts and failures. */
static void fill_summary(const campaign *c, double secs, kiln_fuzz_summary *s) {
  s->seed = c->a.seed, s->shard = c->a.shard, s->shards = c->a.shards, s->seconds = secs;
  kiln_vec_push(&s->parts, c->a.shard);
  s->tried = c->tried, s->valid = c->valid, s->invalid = c->invalid;
  s->no_inputs = c->no_inputs, s->runner_errors = c->verify_errors, s->compiled = c->compiled;
  for (int i = 0; i < c->found.len; i++) {
    const finding *f = &c->found.data[i];
    const char *slash = strrchr(f->dir, '/');
    kiln_fuzz_summary_add_failure(s, f->sig, f->count, slash ? slash + 1 : f->dir,
                                  (int64_t)f->first_j, NULL);
  }
}

/* The campaign's coverage: every cell its graphs reached with the number of graphs, and in a
 * coverage build the compiler edges as the highest hit-count bucket any graph reached (1, 2,
 * 4, ... 128: AFL's buckets; the map is reset per graph, the feedback keeps the union). */
static void fill_coverage(const campaign *c, kiln_fuzz_summary *s) {
  const kiln_strmap *m = &c->fb.cells;
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) kiln_fuzz_summary_add_cell(s, m->keys[i], m->vals[i]);
  if (!c->fb.edges) return;
  s->edges = kiln_xcalloc(KILN_EDGE_MAP, 1);
  for (int i = 0; i < KILN_EDGE_MAP; i++)
    for (int bit = 7; bit >= 0 && c->fb.edges[i]; bit--)
      if (c->fb.edges[i] & (1 << bit)) {
        s->edges[i] = (uint8_t)(1 << bit);
        break;
      }
}

static kiln_status write_summary(const campaign *c, double secs) {
  kiln_fuzz_summary s = {0};
  fill_summary(c, secs, &s);
  fill_coverage(c, &s);
  kiln_strbuf path = {0};
  kiln_strbuf_printf(&path, "%s/fuzz.json", c->a.out);
  kiln_status st = as_system(kiln_fuzz_summary_write(path.data, &s));
  kiln_strbuf_free(&path);
  kiln_fuzz_summary_free(&s);
  return st;
}

static kiln_status setup(campaign *c) {
  kiln_gen_opts_init(&c->go);
  c->go.max_nodes = (int)c->a.max_nodes;
  c->go.ops = c->a.ops;
  kiln_gen_case probe; /* an unknown op name is bad usage: find it before the campaign */
  KILN_TRY(kiln_gen_model(&c->go, 0, &probe));
  kiln_gen_case_free(&probe);
  c->sweep_go = c->go;
  c->sweep_go.ops = FUZZ_SWEEP_OPS, c->sweep_go.edge_share = 1.0;
  c->sweep_go.max_nodes = c->go.max_nodes < FUZZ_SWEEP_NODES ? c->go.max_nodes : FUZZ_SWEEP_NODES;
  if (c->a.ops || !c->a.targets[KILN_TARGET_CPU]) c->a.sweep = 0, c->a.grid = false; /* --ops */
  c->n_grid = c->a.grid ? kiln_gen_grid_count() : 0;
  kiln_verify_opts_init(&c->vo);
  memcpy(c->vo.targets, c->a.targets, sizeof c->vo.targets);
  c->vo.each_pass = true, c->vo.threads = 1;
  c->vo.gate = fuzz_gate, c->vo.gate_user = c; /* which graphs compile */
  if (c->a.isolate) {
    void *m =
        mmap(NULL, sizeof *c->progress, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    c->progress = m == MAP_FAILED ? NULL : m; /* without it a death names no layer */
    if (c->progress) c->vo.layer_started = note_layer, c->vo.layer_started_user = c->progress;
  }
  c->fcount = kiln_xcalloc(FUZZ_FEATURE_SLOTS, 1);
  KILN_TRY(kiln_make_dirs(c->a.out));
  snprintf(c->cache, sizeof c->cache, "%s/cache", c->a.out);
  c->vo.compile.cache_dir = c->cache;
  c->n_ops = kiln_gen_op_count();
  c->op_seen = kiln_xcalloc((size_t)c->n_ops, sizeof *c->op_seen);
  fuzz_feedback_init(&c->fb, c->a.policy);
  if (c->a.targets[KILN_TARGET_CPU]) /* once here, not in every child; a failure shows there */
    kiln_status_free(kiln_cc_probe(c->vo.compile.cc));
  if (c->a.ort) {
    kiln_ort_opts oo;
    kiln_ort_opts_init(&oo);
    KILN_TRY(kiln_ort_open(&oo, &c->ort));
  }
  return KILN_OK;
}

static void teardown(campaign *c) {
  if (c->progress) munmap(c->progress, sizeof *c->progress);
  kiln_status_free(c->env_last);
  kiln_ort_close(c->ort);
  free(c->op_seen);
  free(c->fcount);
  fuzz_feedback_free(&c->fb);
  for (int k = 0; k < c->pass_names.len; k++) free(c->pass_names.data[k]);
  kiln_vec_free(&c->pass_names);
  kiln_vec_free(&c->pass_fired);
  kiln_vec_free(&c->found);
}

int kiln_cmd_fuzz(int argc, char **argv) {
  kiln_cli_omp_passive();
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--merge")) return kiln_fuzz_merge_main(argc, argv);
  campaign *c = kiln_xcalloc(1, sizeof *c);
  c->a = (fuzz_args){.seed = 1,
                     .shards = 1,
                     .targets = {[KILN_TARGET_CPU] = true},
                     .out = "fuzz-out",
                     .max_nodes = 12,
                     .cpu_every = 5,
                     .cpu_novel = 0, /* measured no better on 37 cpu-layer bugs: VERIFY.md */
                     .sweep = 24,
                     .grid = true,
                     .policy = FUZZ_POLICY_BANDIT,
                     .isolate = !kiln_edges_gcov(), /* gcov loses a dead child's counts */
                     .graph_timeout = 120};
  int rc = parse_args(argc, argv, &c->a);
  kiln_status st = rc < 0 ? setup(c) : KILN_OK;
  double t0 = kiln_clock_seconds(), last = t0;
  for (uint64_t j = 0; rc < 0 && !st; j++) {
    double now = kiln_clock_seconds();
    if ((c->a.count && c->tried >= c->a.count) || (c->a.time > 0 && now - t0 >= c->a.time)) break;
    if (!kiln_gen_in_shard(j, (int)c->a.shard, (int)c->a.shards)) continue;
    st = run_one(c, j);
    if (!c->a.quiet && now - last >= 5) {
      last = now;
      fprintf(stderr, "fuzz: %lld graphs, %.1f/s, %d failures", (long long)c->tried,
              (double)c->tried / (now - t0), c->found.len);
      if (c->a.time > 0) fprintf(stderr, ", %.0f s left", c->a.time - (now - t0));
      fprintf(stderr, "\n");
    }
  }
  if (!st && rc < 0 && c->env_errors && !c->env_ok) st = env_failed(c);
  double secs = kiln_clock_seconds() - t0;
  kiln_status ws = rc < 0 && (!st || c->env_stop) ? write_summary(c, secs) : KILN_OK;
  if (st && c->env_stop) summary(c, secs);
  if (st) rc = kiln_cli_fail("fuzz", st), kiln_status_free(ws);
  else if (rc < 0) {
    summary(c, secs);
    rc = ws ? kiln_cli_fail("fuzz", ws) : c->found.len ? 1 : 0;
  }
  teardown(c);
  free(c);
  return rc;
}
