/* Private to the tile IR verifier (tile_verify.c, tile_bounds.c, tile_loops.c). */
#ifndef KILN_TILE_VERIFY_H
#define KILN_TILE_VERIFY_H

#include "tile_text.h"

/* An interval of i64 values; empty when lo > hi. */
typedef struct kiln_tival {
  int64_t lo, hi;
} kiln_tival;

/* What an enclosing condition says about an expression: its value lies in r. */
typedef struct kiln_tfact {
  const kiln_texpr *e;
  kiln_tival r;
  bool dead; /* something the expression reads was written since */
} kiln_tfact;

typedef struct kiln_tverify {
  const kiln_tkernel *k;
  const kiln_tstmt *stmt;                           /* the statement being checked */
  const kiln_tstmt *stack[KILN_TILE_MAX_DEPTH + 2]; /* enclosing loops and conditionals */
  int depth;
  kiln_tival *var_range;          /* loop variables inside their loop */
  uint8_t *in_loop, *is_loop_var; /* per variable */
  uint8_t *scratch_vars, *scratch_bufs;
  KILN_VEC(kiln_tfact) facts;
  kiln_texpr *var_exprs; /* one VAR expression per variable, for facts about assignments */
  bool gpu;              /* the kernel has block or thread loops */
  /* race check (tile_race.c) */
  const kiln_tstmt *par;            /* the enclosing parallel loop (of 2+ iterations) or NULL */
  int64_t par_n;                    /* its iterations (at most) */
  int64_t race_p1, race_p2;         /* two iterations whose writes may meet, or -1 */
  int race_budget, race_sweeps;     /* proof attempts and per-iteration proofs left */
  uint8_t *shared_var, *shared_buf; /* one object for all iterations of a parallel loop */
  uint8_t *par_var, *par_buf;       /* what may differ between par's iterations */
  uint8_t *par_flag;                /* 1: a buffer par's body only sets to one constant */
  int unreachable;                  /* inside loops that never run */
} kiln_tverify;

KILN_MUST_USE kiln_status kiln_tverify_fail(const kiln_tverify *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- tile_bounds.c ---- */
/* The values an i64 expression can take (a superset), given the loop ranges and facts. */
kiln_tival kiln_tverify_range(kiln_tverify *c, const kiln_texpr *e);
/* Records that e lies in r (until something e reads is written). */
void kiln_tverify_fact(kiln_tverify *c, const kiln_texpr *e, kiln_tival r);
/* Adds the facts that cond (a bool expression) being `holds` implies. */
void kiln_tverify_assume(kiln_tverify *c, const kiln_texpr *cond, bool holds);

/* Structural equality of expressions. */
bool kiln_tverify_same_expr(const kiln_texpr *a, const kiln_texpr *b);

/* ---- tile_race.c ---- */
/* Finds the variables and buffers that are one object shared by the iterations of every
 * parallel loop (see tile_race.c); kiln_tverify_race_free releases what it allocated. */
void kiln_tverify_race_init(kiln_tverify *c);
void kiln_tverify_race_free(kiln_tverify *c);
/* Entering loop s (whose extent lies in ext): sets c->par when s is a parallel loop of more
 * than one iteration. The caller restores c->par after the body. */
void kiln_tverify_race_enter(kiln_tverify *c, const kiln_tstmt *s, kiln_tival ext);
/* A store (span [0, 0]) or an MMA accumulator footprint (index + span) to buf under c->par:
 * the iterations of c->par must write disjoint elements of a shared buffer. */
KILN_MUST_USE kiln_status kiln_tverify_race_store(kiln_tverify *c, int buf, const kiln_texpr *index,
                                                  kiln_tival span);
/* An assignment to var under c->par: var must be private to each iteration. */
KILN_MUST_USE kiln_status kiln_tverify_race_assign(kiln_tverify *c, int var);

/* ---- tile_loops.c ---- */
/* The rules of loop kinds for the loop s, given the enclosing statements in c->stack. */
KILN_MUST_USE kiln_status kiln_tverify_loop_kind(kiln_tverify *c, const kiln_tstmt *s);
/* Where a barrier may stand (c->stmt is the barrier). */
KILN_MUST_USE kiln_status kiln_tverify_barrier(kiln_tverify *c);

#endif
