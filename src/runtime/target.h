/* Targets: what a machine Kiln compiles for provides, behind one interface.
 *
 *   const kiln_target *t;
 *   KILN_TRY(kiln_target_lookup("cpu", &t));   // or kiln_target_at(id), kiln_target_default()
 *   kiln_compiled *c;
 *   KILN_TRY(kiln_compile(g, t, &opts, &c));  // the one driver (runtime.h)
 *   if (kiln_target_can_run(t)) KILN_TRY(kiln_compiled_run(c, n_in, inputs, outputs));
 *
 * The compile driver (compile.c) runs the steps every target shares once: bind the dims,
 * the pass pipeline with the target's fusion classes, the lowering with the target's view
 * (schedule defaults, supported nodes, threads, the precision policy of the options), then
 * calls the target's slots in order: map (optional), emit, build, and, for a target that
 * runs, the memory plan and prepare. The executor (exec.c) runs the steps through the
 * runtime slots: the arena, copies between the host and the arena, one kernel step.
 *
 * A slot marked optional may be NULL (not provided); every other slot is required
 * (kiln_target_check). The runtime slots are all present or all NULL: a target without them
 * compiles only (kiln_target_can_run false), as CUDA does until its runtime exists.
 *
 * Adding a target: docs/DESIGN.md, "Targets". */
#ifndef KILN_RUNTIME_TARGET_H
#define KILN_RUNTIME_TARGET_H

#include "lower/lower.h"
#include "lower/schedule.h"
#include "passes/passes.h"

typedef struct kiln_compiled kiln_compiled;
typedef struct kiln_compile_opts kiln_compile_opts;

typedef struct kiln_target {
  /* Its id: the index in the registry and what the lowering records (lower.h). */
  kiln_target_id id;
  /* Its name: `kiln compile --target NAME`, `--backend NAME`, the verifier's layer name. */
  const char *name;
  /* One line for the help texts: what compiling (and running) for it gives. */
  const char *summary;

  /* ---- what the lowering sees (required) ---- */
  /* The fusion class of node n (kiln_pass_opts.fuse_classify): which nodes may share a
   * kernel on this target. Options that set their own classifier take precedence. */
  kiln_fuse_classify_fn fuse_class;
  /* The schedule defaults of this target (schedule.h): every kernel's record starts from
   * them; a schedule set from outside overrides fields. */
  kiln_sched_defaults_fn sched_defaults;
  /* Optional. Whether the target makes a kernel of node n; false: the node runs its
   * reference kernel on the host, *why (static text) being the reason. NULL: every node the
   * lowering can lower. */
  bool (*supports_node)(const kiln_graph *g, const kiln_node *n, const char **why);
  /* Fills the lowering options that depend on the target (threads the schedule plans for;
   * the defaults and supports_node above are filled by the driver) from the compile
   * options; an option out of the target's range is KILN_ERR_INVALID. */
  kiln_status (*lower_opts)(const kiln_compile_opts *o, kiln_lower_opts *lo);

  /* ---- compiling ---- */
  /* Optional. Rewrites the lowered program c->prog into the target's form, counted in the
   * lowering's time (CUDA: parallel loops to blocks and threads, tiled GPU matmuls). NULL:
   * the program as lowered. */
  kiln_status (*map)(kiln_compiled *c, const kiln_compile_opts *o);
  /* Emits the kernels of c->prog as source text for the target's compiler (C, CUDA C),
   * kept in c (c->impl or the compiled form's fields) for build. */
  kiln_status (*emit)(kiln_compiled *c, const kiln_compile_opts *o);
  /* Compiles what emit made (the C compiler to a shared object and loads it; NVRTC to PTX).
   * A compiler that is absent is an error for a target that runs, a note in the report for
   * one that compiles only. */
  kiln_status (*build)(kiln_compiled *c, const kiln_compile_opts *o);
  /* The lines of `kiln compile --report` (kernels, schedules, fallbacks, times). */
  void (*report)(const kiln_compiled *c, kiln_strbuf *out);
  /* Optional. Frees the target's state c->impl. NULL: the target keeps none. */
  void (*release)(kiln_compiled *c);

  /* ---- running (optional, all or none: NULL for a target that compiles only) ---- */
  /* After the memory plan: resolves what runs (the kernels' entry points). */
  kiln_status (*prepare)(kiln_compiled *c);
  /* Allocates the device arena of `bytes` bytes (zeroed, 64-byte aligned), counted against
   * the memory limit; at the first run. */
  kiln_status (*arena_alloc)(kiln_compiled *c, int64_t bytes, void **out);
  void (*arena_free)(kiln_compiled *c, void *arena, int64_t bytes);
  /* Copies bytes from host memory into device memory (a fallback's result into its planned
   * buffer) and from device memory to the host (the outputs). */
  void (*copy_in)(kiln_compiled *c, void *dst, const void *src, size_t bytes);
  void (*copy_out)(kiln_compiled *c, void *dst, const void *src, size_t bytes);
  /* Runs kernel step `step` of c->prog (its arguments bound by prepare and the run). */
  void (*run_kernel)(kiln_compiled *c, int step);
} kiln_target;

/* ---- the registry ---- */
/* The registered targets, by id (0 .. KILN_TARGET_COUNT-1). */
int kiln_target_count(void);
const kiln_target *kiln_target_at(int id); /* NULL when out of range */
/* The target named `name`, or NULL. */
const kiln_target *kiln_target_find(const char *name);
/* The same; an unknown name is KILN_ERR_INVALID listing the known ones:
 * "unknown target 'tpu' (cpu, cuda)". */
KILN_MUST_USE kiln_status kiln_target_lookup(const char *name, const kiln_target **out);
/* The target of kiln_compile when none is given: cpu. */
const kiln_target *kiln_target_default(void);
/* Whether the target's runtime slots are present (kiln_compiled_run works). */
bool kiln_target_can_run(const kiln_target *t);
/* The registered names joined by sep ("cpu, cuda"); runnable_only: the targets that run.
 * Into b (appended). */
void kiln_target_names(kiln_strbuf *b, const char *sep, bool runnable_only);
/* KILN_ERR_INTERNAL naming the first required slot that is NULL, or a runtime slot missing
 * while another is present; OK for a complete target. */
KILN_MUST_USE kiln_status kiln_target_check(const kiln_target *t);

/* The implementations (target_cpu.c, target_cuda.c). */
extern const kiln_target kiln_target_cpu;
extern const kiln_target kiln_target_cuda;

#endif
