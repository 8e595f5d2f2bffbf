/* Runtime: the compile driver, the kernel module builder and loader, the static memory
 * planner and the executor.
 *
 *   kiln_graph *g;                        // loaded, types inferred (kiln_load_graph)
 *   KILN_TRY(kiln_graph_bind_inputs(g, 1, (const kiln_tensor *[]){x}));  // symbolic dims
 *   kiln_compile_opts o;
 *   kiln_compile_opts_init(&o);           // all cores, default cache dir
 *   kiln_compiled *c;                     // NULL target: cpu (target.h: the registry)
 *   KILN_TRY(kiln_compile(g, NULL, &o, &c));  // passes -> lower -> C -> .so -> memory plan
 *   kiln_tensor *y[1];
 *   KILN_TRY(kiln_compiled_run(c, 1, (kiln_tensor *const[]){x}, y));
 *   kiln_tensor_free(y[0]);
 *   kiln_compiled_free(c);
 *   kiln_graph_free(g);                   // after c, unless o.take_graph
 *
 * kiln_compile rewrites g in place (the pass pipeline, fusion included) and the compiled
 * form borrows it (constants, fallback nodes): g must outlive c, or be handed over with
 * kiln_compile_opts.take_graph. A compiled form runs one call at a time (it owns one
 * planned arena); use one kiln_compiled per thread for concurrent runs.
 *
 * Kernel cache: compiled objects and shared libraries are cached on disk, keyed by a
 * 128-bit hash of (C source, compiler flags, compiler identity), in cache_dir, else
 * $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln. Entries are written
 * atomically (temporary file, then rename) with a checksum; a corrupt entry is rebuilt.
 */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stdio.h>

#include "lower/lower.h"
#include "ops/ops.h"
#include "passes/passes.h"
#include "target.h"

/* ---- binding symbolic dims ---- */
/* Replaces the symbolic dim `sym` by `value` in every value type of g (and subgraphs).
 * Error when value < 0. Binding a symbol that g does not use is not an error. */
KILN_MUST_USE kiln_status kiln_graph_bind_dims(kiln_graph *g, const char *sym, int64_t value);
/* Binds the symbolic dims of g's inputs from concrete tensors (one per graph input, in
 * order; NULL for an input that is a sequence or an optional): each symbol takes the extent
 * of the first input that uses it; a known dim or a symbol bound twice that disagrees with
 * the tensor, a wrong rank or dtype, is an error.
 * Then re-runs type inference so that every value gets a static type where it can. */
KILN_MUST_USE kiln_status kiln_graph_bind_inputs(kiln_graph *g, int n,
                                                 const kiln_tensor *const *inputs);
/* The check kiln_graph_bind_inputs makes first, without changing g: one tensor per graph
 * input (NULL only for an input that is not a tensor), each of the declared dtype and rank
 * with the declared known extents, and each symbolic dim of one extent across the inputs.
 * Error KILN_ERR_INVALID naming the input: "input 'x' is f32[3,2], the model takes f32[2,3]".
 * Every command that takes a user's inputs checks them with it before anything runs. */
KILN_MUST_USE kiln_status kiln_graph_check_inputs(const kiln_graph *g, int n,
                                                  const kiln_tensor *const *inputs);
/* The same for one input v (a graph input's value) and its tensor t. */
KILN_MUST_USE kiln_status kiln_graph_check_input(const kiln_value *v, const kiln_tensor *t);

/* ---- compile options ---- */
typedef struct kiln_dim_binding {
  const char *sym;
  int64_t value;
} kiln_dim_binding;

/* Options of the cuda target (target_cuda.c). */
typedef struct kiln_cuda_opts {
  int threads_per_block; /* for mapped parallel loops; 0: 256 */
  const char *arch;      /* NULL: "compute_90" */
  bool no_nvrtc;         /* do not compile to PTX */
} kiln_cuda_opts;

/* The target is an argument of kiln_compile, not an option: options that a target does not
 * read (threads for cuda, cuda for cpu) are ignored by it. */
typedef struct kiln_compile_opts {
  int threads;                /* CPU threads the kernels use (OpenMP); 0: all cores */
  bool par_stress;            /* every parallel schedule however small the work (verification) */
  bool plan_stress;           /* the memory plan from its local search, checked (verification) */
  int jobs;                   /* compiler processes run in parallel; 0: number of cores */
  kiln_pass_opts passes;      /* the pass pipeline (fusion included unless passes.no_fusion) */
  const char *force_fallback; /* op names forced to run their reference kernel (tests) */
  struct kiln_sched_set *schedule; /* kernel schedules set from outside (lower/schedule.h) */
  int n_dims;                      /* symbolic dims to bind before compiling */
  const kiln_dim_binding *dims;
  const char *cache_dir;    /* NULL: $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln, $HOME/.cache/kiln */
  bool no_cache;            /* build everything, read and write no cache entry */
  const char *cc;           /* the C compiler command (may hold arguments); NULL: $CC or "cc" */
  const char *cflags;       /* extra flags appended to the compiler command, or NULL */
  const char *keep_sources; /* directory to keep the generated C files in, or NULL */
  bool verbose;             /* progress of the stages on stderr */
  /* Free the data of the graph's constants that the compiled program no longer reads
   * (weights that lowering repacked): about half the memory of a convolutional network,
   * but the graph's released constants have no data (numel 0) afterwards, so the graph can
   * no longer be interpreted or exported. */
  bool release_weights;
  bool take_graph; /* on success, kiln_compiled_free frees the graph too (on failure the
                      caller keeps it) */
  /* The memory limit (bytes) while compiling and running the compiled form: constants the
   * passes create, the memory plan's arena (checked when compiling, allocated at the first
   * run), the tensors of fallback steps. 0: the process-wide limit (kiln_mem_limit). */
  int64_t max_memory;
  /* ---- precision ---- */
  /* The compute and accumulate types of each op class (src/lower/precision.h). Zeroed (as
   * kiln_compile_opts_init leaves it): the default policy, today's results bit for bit. */
  kiln_precision_policy precision;
  /* ---- target options ---- */
  kiln_cuda_opts cuda; /* the cuda target's */
} kiln_compile_opts;

void kiln_compile_opts_init(kiln_compile_opts *o);

/* ---- compile statistics (also printed by kiln_compiled_report) ---- */
typedef enum kiln_stage {
  KILN_STAGE_PASSES,
  KILN_STAGE_LOWER,
  KILN_STAGE_CODEGEN,
  KILN_STAGE_CC, /* C compiler and linker (or cache lookups) */
  KILN_STAGE_LOAD,
  KILN_STAGE_PLAN,
  KILN_STAGE_COUNT
} kiln_stage;

const char *kiln_stage_name(kiln_stage s); /* "passes", "lowering", ... */

typedef struct kiln_compile_stats {
  double seconds[KILN_STAGE_COUNT];
  double total_seconds;
  int n_kernels;        /* kernels in the program's module */
  int n_unique_kernels; /* after deduplicating identical kernels */
  int n_units;          /* translation units */
  int n_units_cached;   /* translation units found in the cache */
  bool library_cached;  /* the linked shared object came from the cache */
  int n_steps, n_kernel_steps, n_fallback_steps, n_alias_steps;
  int64_t arena_bytes;  /* planned arena */
  int64_t lower_bound;  /* max over steps of the bytes live at that step */
  int64_t packed_bytes; /* prepacked constants */
} kiln_compile_stats;

/* ---- the compiled form ---- */
typedef struct kiln_compiled kiln_compiled;
typedef struct kiln_plan kiln_plan;

/* The one compile driver: compiles g (static shapes after binding o->dims; see
 * kiln_graph_bind_inputs) for target t (target.h; NULL: kiln_target_default(), cpu). o may
 * be NULL for the defaults. The passes, fusion and lowering run once for every target;
 * then the target's slots (map, emit, build) and, for a target that runs, the memory plan
 * and the loading of its kernels. The compiled form of a target that compiles only (cuda)
 * has no plan and cannot run (kiln_compiled_run: KILN_ERR_UNSUPPORTED). */
KILN_MUST_USE kiln_status kiln_compile(kiln_graph *g, const kiln_target *t,
                                       const kiln_compile_opts *o, kiln_compiled **out);
/* The target it was compiled for. */
const kiln_target *kiln_compiled_target(const kiln_compiled *c);
/* Runs with one tensor per graph input (borrowed; dtypes and shapes must match the
 * compiled types exactly) and returns one new tensor per graph output. */
KILN_MUST_USE kiln_status kiln_compiled_run(kiln_compiled *c, int n_in, kiln_tensor *const *inputs,
                                            kiln_tensor **outputs);
/* The same with values: sequence and optional inputs and outputs too (they run through
 * fallback steps). Inputs are borrowed; outputs[i] are new values. */
KILN_MUST_USE kiln_status kiln_compiled_run_vals(kiln_compiled *c, int n_in,
                                                 kiln_val *const *inputs, kiln_val **outputs);
/* kiln_compiled_run_vals, calling cb (when not NULL) after each step for every tensor value
 * the step produces, while it is still live in the arena (kiln_step_trace_fn, lower.h):
 * how verification finds the first step whose result is wrong. */
KILN_MUST_USE kiln_status kiln_compiled_run_trace(kiln_compiled *c, int n_in,
                                                  kiln_val *const *inputs, kiln_val **outputs,
                                                  kiln_step_trace_fn cb, void *user);
void kiln_compiled_free(kiln_compiled *c);
/* A check for verification: from now on, each run first sets every byte of the arena (the
 * values the plan places there, kernels' scratch space) and of each output's copy to `byte`
 * (0..255), so that a value read before anything wrote it, or an output copied short, gives
 * other bits when the byte changes between two runs (0xff: NaN in every float type). -1: off
 * (the default; the arena is then zeroed once, when it is made). */
void kiln_compiled_set_fill(kiln_compiled *c, int byte);
/* Runs `iters` times (after one warm-up run) timing every step, and prints the total per
 * run, the time by step kind and the slowest steps with their kernels or nodes. */
KILN_MUST_USE kiln_status kiln_compiled_profile(kiln_compiled *c, int n_in,
                                                kiln_tensor *const *inputs, int iters,
                                                kiln_strbuf *out);
/* The target's report (kiln_target.report). cpu: kernels, steps, fallbacks with reasons,
 * planned arena against the lower bound, compile time by stage, cache hits. */
void kiln_compiled_report(const kiln_compiled *c, kiln_strbuf *out);
const kiln_compile_stats *kiln_compiled_stats(const kiln_compiled *c);
const kiln_graph *kiln_compiled_graph(const kiln_compiled *c); /* after the passes */
const kiln_program *kiln_compiled_program(const kiln_compiled *c);
const kiln_plan *kiln_compiled_plan(const kiln_compiled *c); /* NULL: compile only */

/* ---- memory plan (plan.c) ----
 * Every value that a step produces (not a graph input or constant, static tensor type)
 * gets a byte offset in one arena, 64-byte aligned. A value lives from the step that
 * defines it to its last use (an alias extends the life of the value it views; graph
 * outputs live to the end). Scratch arguments live during their step only. A kernel
 * output may take its input's storage in place (kiln_step.inplace) when that input dies
 * at the step and is not a graph input, output or constant. Offsets come from best-fit
 * placement under several orders; the smallest arena is kept. */
typedef enum kiln_loc_kind {
  KILN_LOC_NONE,  /* not used by the program */
  KILN_LOC_ARENA, /* offset in the arena */
  KILN_LOC_INPUT, /* graph input `index` (the caller's tensor, read-only) */
  KILN_LOC_CONST, /* the data of constant value `index` */
  KILN_LOC_HEAP,  /* not static (sequence, optional, data-dependent shape): a heap value
                     of the executor, produced and read by fallback steps only */
  KILN_LOC_KIND_COUNT
} kiln_loc_kind;

typedef struct kiln_loc {
  kiln_loc_kind kind;
  int index;      /* INPUT: input position; CONST: value id */
  int64_t offset; /* ARENA: byte offset (of the viewed value's storage for aliases) */
  int64_t bytes;  /* ARENA: the value's size */
} kiln_loc;

struct kiln_plan {
  int n_values;
  kiln_loc *loc;         /* per value id of the root graph */
  int *arg_base;         /* per step: index of its first argument in arg_offset */
  int64_t *arg_offset;   /* per step argument: SCRATCH: byte offset in the arena; else -1 */
  int64_t arena_bytes;   /* the arena's size */
  int64_t lower_bound;   /* max over steps of the sum of bytes live at that step */
  int n_inplace;         /* in-place reuses taken */
  const char *heuristic; /* the placement order that won */
};

typedef struct kiln_plan_opts {
  bool no_inplace; /* take no in-place reuse */
  int heuristic;   /* -1: try all, keep the best; else only that one (tests) */
  /* Verification: the local search runs on every plan of three blocks or more, from the
   * worst heuristic's order to its whole budget (not stopped at the lower bound), and the
   * plan is what it found: a small model's plan reaches the bound by a heuristic at once,
   * so the search would otherwise never run. */
  bool search_stress;
} kiln_plan_opts;

KILN_MUST_USE kiln_status kiln_plan_program(const kiln_program *p, const kiln_plan_opts *o,
                                            kiln_plan **out);
void kiln_plan_free(kiln_plan *p);
/* Checks that no two values (or scratch blocks) live at the same step overlap in the arena
 * and that each fits in it; used by the tests and debug builds. */
KILN_MUST_USE kiln_status kiln_plan_check(const kiln_program *p, const kiln_plan *plan);
void kiln_plan_print(const kiln_program *p, const kiln_plan *plan, kiln_strbuf *out);

/* ---- kernel modules (module.c): C source -> shared object -> loaded functions ---- */
typedef struct kiln_cc_opts {
  const char *cc;        /* command; NULL: $CC or "cc" */
  const char *cflags;    /* extra flags, or NULL */
  const char *cache_dir; /* NULL: the default (see above) */
  bool no_cache;
  int jobs;                 /* 0: number of cores */
  const char *keep_sources; /* or NULL */
  bool verbose;
} kiln_cc_opts;

typedef struct kiln_cc_stats {
  int n_units, n_units_cached;
  bool library_cached;
} kiln_cc_stats;

typedef struct kiln_module kiln_module;

/* Builds translation units (each a complete C file) into one shared object, compiling
 * them in parallel, and loads it. Compiler errors are KILN_ERR_FAILED with the first lines
 * of the compiler's output. */
KILN_MUST_USE kiln_status kiln_module_build(int n_units, const char *const *sources,
                                            const kiln_cc_opts *o, kiln_module **out,
                                            kiln_cc_stats *stats);
/* Probes the C compiler cc (NULL: $CC or "cc") as a build would: its identity and OpenMP
 * support, kept for the rest of the process and for the processes it forks afterwards, so
 * that a driver forking one child per model probes once. An unusable compiler is
 * KILN_ERR_SYSTEM. */
KILN_MUST_USE kiln_status kiln_cc_probe(const char *cc);
/* The address of a function of the module; error if absent. */
KILN_MUST_USE kiln_status kiln_module_sym(kiln_module *m, const char *name, void **out);
void kiln_module_free(kiln_module *m);
/* The cache directory that o selects (malloc'd), or NULL when no location is known. */
char *kiln_cache_dir(const char *override);

/* ---- CUDA target (target_cuda.c) ----
 * kiln_compile for the cuda target compiles a graph for a GPU as far as this machine can:
 * passes (with the CUDA fusion classes), lowering, the CUDA schedule of
 * src/lower/lower_cuda.h, CUDA C for every kernel (one __global__ function per launch), a
 * launch manifest, and PTX from NVRTC when NVRTC can be loaded (kiln_compile_opts.cuda). Nothing
 * runs on a GPU yet: the kernels are checked by compiling them and by running the mapped program in
 * the tile interpreter (kiln_program_interp). */
#include "lower/lower_cuda.h"

typedef struct kiln_cuda_launch {
  const char *name; /* __global__ function (the kernel's name, or name_l<i> when split) */
  int step;         /* program step that launches it */
  int kernel;       /* program->module kernel */
  int64_t grid[3], block[3];
  int64_t shared_bytes; /* static __shared__ memory */
} kiln_cuda_launch;

typedef struct kiln_cuda_build {
  kiln_program *prog;    /* the mapped program (the compiled form's, borrowed) */
  kiln_cuda_kinfo *info; /* per module kernel: how it was mapped */
  kiln_strbuf source;    /* CUDA C of every emitted launch, one translation unit */
  KILN_VEC(kiln_cuda_launch) launches;
  int n_kernels;                  /* kernels run by some step */
  int n_map[KILN_CUDA_MAP_COUNT]; /* kernels per kind (after codegen: failures UNMAPPED) */
  int n_shared;                   /* kernels that use __shared__ memory */
  int n_fallback_steps, n_alias_steps;
  const char *arch; /* NVRTC architecture ("compute_90") */
  bool nvrtc_found; /* NVRTC could be loaded */
  bool nvrtc_ok;    /* the whole source compiled to PTX */
  char *ptx;        /* malloc'd PTX, or NULL */
  char *nvrtc_log;  /* malloc'd error of NVRTC, or NULL */
  double seconds_passes, seconds_lower, seconds_codegen, seconds_nvrtc;
} kiln_cuda_build;

/* The CUDA build of c (compiled for the cuda target), else NULL. A kernel whose CUDA C
 * cannot be emitted is reported UNMAPPED, not an error; an NVRTC compile error is kept in
 * nvrtc_log (nvrtc_ok false), not returned by kiln_compile. */
const kiln_cuda_build *kiln_compiled_cuda(const kiln_compiled *c);
/* Counts, unmapped kernels and fallbacks with reasons, times. */
void kiln_cuda_build_report(const kiln_cuda_build *b, kiln_strbuf *out);
/* The text of launch.txt (below); model names in it as in the IR text or escaped lines. */
void kiln_cuda_build_manifest(const kiln_cuda_build *b, kiln_strbuf *out);
/* Writes DIR/model.cu, DIR/launch.txt (per step: kernel launches with grid, block, shared
 * bytes and the values bound to each parameter; fallback and alias steps), DIR/report.txt
 * and DIR/model.ptx (when compiled). DIR must exist. */
KILN_MUST_USE kiln_status kiln_cuda_build_write(const kiln_cuda_build *b, const char *dir);

#endif
