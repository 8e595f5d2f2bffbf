/* Private to the runtime (compile.c, target_*.c, exec.c, bind.c): the compiled form and the
 * executor. */
#ifndef KILN_RT_INTERNAL_H
#define KILN_RT_INTERNAL_H

#include "ops/ops.h"
#include "runtime.h"
#include "target.h"

typedef void (*kiln_kernel_fn)(void *const *args);

/* An argument slot that points at a graph input: patched at the start of each run. */
typedef struct kiln_patch {
  void **slot;
  int input;
} kiln_patch;

typedef struct kiln_xstep {
  kiln_kernel_fn fn; /* KERNEL */
  void **args;       /* KERNEL: one pointer per parameter */
} kiln_xstep;

struct kiln_compiled {
  const kiln_target *target;
  void *impl; /* the target's own state (kiln_target.release frees it) */
  kiln_graph *g;
  bool own_graph;
  kiln_program *prog;
  kiln_plan *plan;      /* a target that runs */
  kiln_module *mod;     /* cpu: the loaded shared object */
  const char **symbols; /* per kernel of the module: its function's name (deduplicated) */
  kiln_compile_stats stats;
  kiln_pass_stats pass_stats;
  /* executor state (exec.c) */
  bool ready;             /* exec_ready ran: arena, views and kernel arguments made */
  unsigned char *arena;   /* made at the first run */
  int64_t arena_reserved; /* its bytes, counted against the memory limit */
  int64_t max_memory;     /* kiln_compile_opts.max_memory, in force during runs */
  kiln_xstep *xsteps;
  KILN_VEC(kiln_patch) patches;
  kiln_val **views;            /* per value: a tensor view for fallback steps (ARENA, INPUT) */
  kiln_val **heap;             /* per value: HEAP values of the current run */
  kiln_val *const *cur_inputs; /* during a run */
  int *free_start, *free_list; /* heap values to free after step s: free_list[free_start[s]..] */
  double *step_seconds;        /* while profiling: time spent in each step */
  bool fill_on;                /* kiln_compiled_set_fill: before each run ... */
  unsigned char fill;          /* ... the arena and output copies are set to this byte */
};

/* Prepares the executor once the module is loaded and the plan made (the arena and the
 * kernels' arguments are made at the first run). */
KILN_MUST_USE kiln_status kiln_exec_prepare(kiln_compiled *c);
void kiln_exec_free(kiln_compiled *c);
/* Binds the dims listed in the options, then refreshes the types (bind.c). */
KILN_MUST_USE kiln_status kiln_rt_bind_opts(kiln_graph *g, const kiln_compile_opts *o);

#endif
