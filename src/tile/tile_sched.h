/* Schedule transforms of the tile IR: loop rewrites that change how a kernel runs, never what
 * it computes.
 *
 * A lowering builds a kernel's compute loop nest; a schedule (src/lower/schedule.h) then
 * rewrites it with these transforms. Each works on the tile IR alone, names loops by their
 * variable, and either keeps the kernel's meaning (same results, bit for bit, for every
 * input) or fails with KILN_ERR_INVALID, leaving the kernel unchanged:
 *
 *   split     for i in 0..E { B }  ->  for io in 0..ceil(E/f) { for ii in 0..f {
 *             if (io*f + ii < E) { B[i := io*f + ii] } } }   (no guard when f divides E;
 *             optionally i := min(io*f + ii, E - 1) under the guard)
 *   reorder   two perfectly nested loops swap places (the outer one must carry no
 *             dependence: see "independent" below)
 *   bind      a loop's kind becomes parallel, vector, a GPU block or thread dimension, or
 *             serial again; every kind but serial and unroll needs independent iterations
 *   vectorize bind to vector, for an innermost loop (no loop inside it)
 *   unroll    bind to unroll (a hint to the compiler: the order of iterations is kept)
 *   stage     a read-only buffer read inside a loop is copied, at the start of each of the
 *             loop's iterations, into a new LOCAL or SHARED buffer that the loop then reads
 *   tensorize a matrix-product loop nest becomes one MMA statement
 *
 * Independent iterations (what parallel, vector and GPU kinds promise): no iteration reads
 * what another writes, and no two write one element. The check is conservative: a variable
 * assigned in the loop is set before any use in each iteration and used nowhere outside the
 * loop; a buffer written in the loop is read in it only at an index written the same way
 * (an accumulation y[e] = y[e] + ...), or, for a parallel loop, is LOCAL and used only
 * inside the loop (each thread's own scratch, as the verifier's privacy rule has it, which
 * assumes an iteration writes its scratch before reading it: the lowering's scratch does).
 * Writes: for a parallel loop the verifier's race check proves them apart (callers verify
 * the kernel after transforming it, as the lowering does for every schedule it applies);
 * for vector and GPU kinds each store's index must be c * v plus terms spanning less than
 * |c| (kiln_tsched_mode); reorder uses that rule or the race check. A loop whose kind
 * already promises independence (set by a lowering that knows) is trusted. */
#ifndef KILN_TILE_SCHED_H
#define KILN_TILE_SCHED_H

#include "tile.h"

/* The FOR statement whose variable is named `var` (NULL when none or when several loops
 * use that variable). */
kiln_tstmt *kiln_tsched_find(const kiln_tkernel *k, const char *var);

/* Splits `loop` (constant extent E >= 1) by factor f >= 1 (taken as E when larger): the
 * loop becomes the outer loop over variable `outer` (same kind), with an inner loop of
 * inner_kind over `inner` (new variables; their names must be unused; an inner kind that
 * promises independence needs it of `loop`). out_inner (may be NULL) gets the inner loop.
 * clamp: under the guard, i is min(io*f + ii, E - 1), the same value (the guard makes the
 * min idle) in a form the race check can bound, for a split inside a parallel loop. */
KILN_MUST_USE kiln_status kiln_tsched_split(kiln_tkernel *k, kiln_tstmt *loop, int64_t f,
                                            const char *outer, const char *inner,
                                            kiln_loop_kind inner_kind, bool clamp,
                                            kiln_tstmt **out_inner);
/* Swaps `loop` with the one loop its body holds (the inner extent must not read the outer
 * variable; `loop` must have independent iterations). */
KILN_MUST_USE kiln_status kiln_tsched_reorder(kiln_tkernel *k, kiln_tstmt *loop);
/* Sets the kind of `loop` (see above for what each kind needs). */
KILN_MUST_USE kiln_status kiln_tsched_bind(kiln_tkernel *k, kiln_tstmt *loop, kiln_loop_kind kind);
KILN_MUST_USE kiln_status kiln_tsched_vectorize(kiln_tkernel *k, kiln_tstmt *loop);
KILN_MUST_USE kiln_status kiln_tsched_unroll(kiln_tkernel *k, kiln_tstmt *loop);
/* Stages buffer `buf` (GLOBAL, never written inside `loop`, at most KILN_TSCHED_STAGE_MAX
 * elements) into a new buffer of `scope` (LOCAL or SHARED) named "<buf>_<scope>" for the
 * body of `loop`. out_buf (may be NULL) gets the new buffer's id. */
#define KILN_TSCHED_STAGE_MAX 65536 /* elements: a LOCAL copy lives on a thread's stack */
KILN_MUST_USE kiln_status kiln_tsched_stage(kiln_tkernel *k, kiln_tstmt *loop, int buf,
                                            kiln_tscope scope, int *out_buf);

/* Replaces `loop`, a nest of three serial loops (constant extents; the innermost is the
 * reduction loop k) whose one statement is C[ic] = C[ic] + A[ia] * B[ib] (integer C, the
 * operands loads of C's type or cast to it) or C[ic] = mac(C[ic], A[ia], B[ib]), with the
 * indices affine in the three loop variables (constant strides, offsets free of them; C's
 * free of k, with stride 1 along the column loop n and rows apart), by one MMA statement
 * that computes the same bits. A float C + A*B is refused: it rounds twice where the MMA's
 * fused multiply-add rounds once; mac rounds once. */
KILN_MUST_USE kiln_status kiln_tsched_tensorize(kiln_tkernel *k, kiln_tstmt *loop);

/* How the iterations would run: THREADS as CPU threads (a LOCAL buffer used only inside the
 * loop is each iteration's own; that writes are disjoint is left to the verifier's race
 * check); LANES as vector lanes or GPU threads (no private buffers; each store must write a
 * different element on each iteration: its index is c * v plus terms that span less than
 * |c|); SERIAL_WRITES: as LANES without the store check (the caller proves writes apart). */
typedef enum kiln_tsched_mode {
  KILN_TSCHED_THREADS,
  KILN_TSCHED_LANES,
  KILN_TSCHED_SERIAL_WRITES,
  KILN_TSCHED_MODE_COUNT
} kiln_tsched_mode;

/* Whether the iterations of `loop` are independent (see above); when not, *why says which
 * variable or buffer carries a value from one iteration to another (why may be NULL). */
bool kiln_tsched_independent(const kiln_tkernel *k, const kiln_tstmt *loop, kiln_tsched_mode mode,
                             const char **why);

/* e with variable v replaced by r (unchanged subtrees shared, changed ones copied into the
 * module's arena); the same over every expression of a block. */
kiln_texpr *kiln_tsched_subst(kiln_tkernel *k, kiln_texpr *e, int v, kiln_texpr *r);
void kiln_tsched_subst_block(kiln_tkernel *k, kiln_tblock *b, int v, kiln_texpr *r);

#endif
