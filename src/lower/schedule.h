/* Schedules: how a kernel runs, kept apart from what it computes.
 *
 * Every kernel of a program has a schedule record (kiln_sched): the microkernel, the
 * register tile, which loop runs on the threads, the size below which nests stay on one
 * thread, the GPU threads per block, and a list of loop directives (split, reorder, bind,
 * vectorize, unroll, stage) that the tile-IR transforms of src/tile/tile_sched.h apply to
 * the kernel after its compute loop nest is built.
 *
 * Who decides what:
 * - The target's defaults (kiln_sched_defaults_cpu, kiln_sched_defaults_cuda) fill every
 *   field not set from outside, from facts about the kernel (kiln_sched_facts: sizes,
 *   threads, which forms apply). Each threshold they use is named in schedule.c with its
 *   reason. The defaults have no directives: a default schedule gives today's kernels.
 * - A schedule set (kiln_sched_set, parsed from a file or built by a tuner) overrides fields
 *   and adds directives for the kernels whose names match a pattern.
 * - The compute definitions read the record (the GEMM reads mr, nr, par and micro; the
 *   depthwise conv micro and par; loop nests par_min_elements); the directives run after.
 *
 * The text form, one line per kernel (`kiln compile --report` prints it; `kiln compile
 * --schedule FILE` reads it):
 *
 *   # comment
 *   k3_conv   micro=rows nr=16 par=rows      # a kernel by name
 *   k*_add    split=i1:8 vector=i1_i        # a pattern: * any run of characters, ? one
 *
 * Fields (each at most once a line; a later matching line overrides an earlier one):
 *   micro=NAME           the form of the kernel: GEMM B operand packed|inplace|scratch
 *                        (MatMul, Gemm), im2col|rows|pointwise (Conv), plane|direct
 *                        (depthwise Conv)
 *   mr=N nr=N            register tile of a GEMM (mr 1..32, nr 1..128; inplace: nr = N)
 *   par=WHAT             loop on the threads: none|batch|panels|rows (GEMM), none|outer
 *                        (depthwise Conv)
 *   par_min_elements=N   loop nests over fewer elements run on one thread
 *   gpu_threads=N        CUDA: threads per block of a mapped parallel loop (1..1024)
 * Directives (repeatable, applied in order after the lowering):
 *   split=LOOP:F         LOOP becomes LOOP_o over LOOP_i (factor F); a vector or unrolled
 *                        loop's kind goes to LOOP_i, any other kind stays on LOOP_o
 *   reorder=LOOP         LOOP swaps with the one loop inside it
 *   parallel=LOOP vector=LOOP unroll=LOOP serial=LOOP   the loop's kind
 *   bind=LOOP:KIND       any kind of tile.h (block.x, thread.x, ...)
 *   stage=LOOP:BUF:local|shared   BUF read through a copy made in each iteration of LOOP
 *   tensorize=LOOP       the matrix-product nest rooted at LOOP becomes one MMA statement
 *                        (only where the bits stay the same: kiln_tsched_tensorize)
 * LOOP is a loop variable of the kernel (the report lists them), BUF a buffer name.
 *
 * A field that does not apply to a kernel (mr on an elementwise kernel, micro=rows on a
 * 1-D conv), a directive that a transform refuses, a kernel that no longer verifies, or a
 * line that matches no kernel is an error naming the kernel and the line: never a silent
 * change of meaning. */
#ifndef KILN_LOWER_SCHEDULE_H
#define KILN_LOWER_SCHEDULE_H

#include "lower.h"
#include "tile/tile.h"

typedef enum kiln_sched_kind {
  KILN_SCHED_NEST,   /* loop nests (elementwise, reductions, data movement, ...) */
  KILN_SCHED_GEMM,   /* MatMul, Gemm and Conv through the GEMM of lower_mm_gemm.c */
  KILN_SCHED_DWCONV, /* depthwise Conv, direct loops */
  KILN_SCHED_KIND_COUNT
} kiln_sched_kind;

typedef enum kiln_sched_micro {
  KILN_MICRO_AUTO, /* not decided yet */
  KILN_MICRO_PACKED,
  KILN_MICRO_INPLACE,
  KILN_MICRO_SCRATCH,
  KILN_MICRO_IM2COL,
  KILN_MICRO_ROWS,
  KILN_MICRO_POINTWISE,
  KILN_MICRO_PLANE,
  KILN_MICRO_DIRECT,
  KILN_MICRO_COUNT
} kiln_sched_micro;

typedef enum kiln_sched_par {
  KILN_PAR_AUTO,
  KILN_PAR_NONE,
  KILN_PAR_BATCH,
  KILN_PAR_PANELS,
  KILN_PAR_ROWS,
  KILN_PAR_OUTER,
  KILN_PAR_COUNT
} kiln_sched_par;

typedef enum kiln_sched_field {
  KILN_SF_MICRO,
  KILN_SF_MR,
  KILN_SF_NR,
  KILN_SF_PAR,
  KILN_SF_PAR_MIN_ELEMENTS,
  KILN_SF_GPU_THREADS,
  KILN_SF_COUNT
} kiln_sched_field;

typedef enum kiln_sched_op {
  KILN_SD_SPLIT,
  KILN_SD_REORDER,
  KILN_SD_BIND,
  KILN_SD_VECTORIZE,
  KILN_SD_UNROLL,
  KILN_SD_STAGE,
  KILN_SD_TENSORIZE,
  KILN_SD_COUNT
} kiln_sched_op;

/* One directive: op on loop `loop` (factor for SPLIT, kind for BIND, buf and scope for
 * STAGE); line: where it was written (0: set by a program). */
typedef struct kiln_sched_dir {
  kiln_sched_op op;
  const char *loop;
  int64_t factor;
  kiln_loop_kind kind;
  const char *buf;
  kiln_tscope scope;
  int line;
} kiln_sched_dir;

typedef struct kiln_sched {
  kiln_sched_kind kind;
  kiln_sched_micro micro;
  int mr, nr;
  kiln_sched_par par;
  int64_t par_min_elements;
  int gpu_threads;         /* 0: not a mapped GPU kernel */
  unsigned set;            /* bit f: field f set from outside */
  int line[KILN_SF_COUNT]; /* the line that set it (for messages) */
  int n_dirs;
  kiln_sched_dir *dirs; /* in the program's arena */
  const char *gpu;      /* CUDA mapping, for the report: "matmul 32x32x16 ...", or NULL */
} kiln_sched;

/* What the defaults decide from. */
typedef struct kiln_sched_facts {
  kiln_sched_kind kind;
  int threads; /* the threads the schedule plans for */
  bool stress; /* kiln_lower_stress: every parallel form, however small the work */
  kiln_dtype type;
  /* GEMM: C_b[M][N] = A_b[M][K] B_b[K][N] for batch products */
  int64_t M, N, K, batch;
  bool is_conv;         /* Conv as GEMM (B is an im2col matrix) */
  bool b_const;         /* MatMul/Gemm: B is a constant (prepacked) */
  bool b_contig;        /* MatMul/Gemm: B's columns are contiguous (may be read in place) */
  bool pointwise;       /* Conv: 1x1, stride 1, no padding */
  int nsp;              /* Conv: spatial dims */
  int64_t out_h, out_w; /* Conv: the two output extents of a 2-D conv */
  int64_t plane;        /* depthwise Conv: elements of the zero-padded 2-D input plane */
  double flops;         /* depthwise Conv: multiply-adds * 2 */
} kiln_sched_facts;

/* The defaults of a target: fill every field of s that is not set from outside and that
 * applies to f->kind; check the ones that are set against the facts (an error names the
 * field). The slot of a target interface points at one of these. */
typedef kiln_status (*kiln_sched_defaults_fn)(const kiln_sched_facts *f, kiln_sched *s);
KILN_MUST_USE kiln_status kiln_sched_defaults_cpu(const kiln_sched_facts *f, kiln_sched *s);
KILN_MUST_USE kiln_status kiln_sched_defaults_cuda(const kiln_sched_facts *f, kiln_sched *s);
kiln_sched_defaults_fn kiln_sched_defaults_for(kiln_target_id t);

/* The GEMM's default loop on the threads (the rule kiln_sched_defaults_cpu uses), from the
 * final tile and B form. */
kiln_sched_par kiln_sched_gemm_par(const kiln_sched_facts *f, const kiln_sched *s);

/* The loop of a nest that runs on the threads (the default of every loop nest, read with the
 * kernel's par_min_elements): the first of exts[0..n) with more than one iteration when the
 * nest covers at least par_min_elements elements (total), else -1: one parallel loop, the
 * outermost that splits, so each thread runs whole inner loops. */
int kiln_sched_nest_parallel(int64_t total, int64_t par_min_elements, int n, const int64_t *exts);

/* ---- names ---- */
const char *kiln_sched_micro_name(kiln_sched_micro m); /* "im2col"; "auto" */
const char *kiln_sched_par_name(kiln_sched_par p);
const char *kiln_sched_kind_name(kiln_sched_kind k); /* "nest", "gemm", "dwconv" */
const char *kiln_sched_field_name(kiln_sched_field f);

/* ---- schedule sets: overrides by kernel name ---- */
typedef struct kiln_sched_set kiln_sched_set;
kiln_sched_set *kiln_sched_set_new(void);
void kiln_sched_set_free(kiln_sched_set *s);
/* Parses the text form (see above); errors are KILN_ERR_INVALID "FILE:LINE: ...". */
KILN_MUST_USE kiln_status kiln_sched_set_parse(const char *text, const char *filename,
                                               kiln_sched_set **out);
/* Adds one line (a tuner's API): pattern and fields as in the text form. */
KILN_MUST_USE kiln_status kiln_sched_set_add(kiln_sched_set *s, const char *pattern,
                                             const char *fields);
int kiln_sched_set_len(const kiln_sched_set *s);
/* Starts kernel `name`'s record: the set fields and directives of every matching line in
 * order (s may be NULL), the rest left to the defaults. Counts the matches. */
void kiln_sched_set_resolve(kiln_sched_set *s, const char *name, kiln_arena *arena,
                            kiln_sched *out);
/* KILN_ERR_INVALID naming the first line that matched no kernel, else OK. */
KILN_MUST_USE kiln_status kiln_sched_set_check_used(const kiln_sched_set *s);
void kiln_sched_set_reset_counts(kiln_sched_set *s);

/* ---- applying and printing ---- */
/* Applies s's directives to k (tile_sched.h transforms), then verifies k; errors name k and
 * the directive's line. */
KILN_MUST_USE kiln_status kiln_sched_apply(const kiln_sched *s, kiln_tkernel *k);
/* Checks that every field set from outside applies to s->kind. */
KILN_MUST_USE kiln_status kiln_sched_check_fields(const kiln_sched *s, const kiln_tkernel *k);
/* One line: "NAME field=value ...  # kind; loops VAR:KIND ..." (no newline). */
void kiln_sched_print(const kiln_sched *s, const kiln_tkernel *k, kiln_strbuf *out);
/* "schedules:" then one indented line per kernel of p. */
void kiln_program_print_schedules(const kiln_program *p, kiln_strbuf *out);

#endif
