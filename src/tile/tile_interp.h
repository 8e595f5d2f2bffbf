/* Private to the tile IR interpreter (tile_interp.c, tile_scalar.c, tile_threads.c). */
#ifndef KILN_TILE_INTERP_H
#define KILN_TILE_INTERP_H

#include "tile_text.h"

/* One scalar value. Integers are held in u/i, normalized to their type (sign-extended for
 * signed types, zero-extended for unsigned ones, 0 or 1 for bool); F32 in f, F64 in d;
 * storage types (f16, bf16, float8, 4- and 2-bit types) as their bytes in raw. */
typedef union kiln_tval {
  uint64_t u;
  int64_t i;
  float f;
  double d;
  unsigned char raw[8];
} kiln_tval;

/* A buffer during a call. */
typedef struct kiln_trtbuf {
  unsigned char *data;
  uint8_t *init; /* one flag per element for shared and local buffers and tracked parameters
                    (kiln_tkernel_interp_tracked); NULL for other parameters */
  size_t esize;
} kiln_trtbuf;

typedef struct kiln_tinterp {
  const kiln_tkernel *k;
  kiln_trtbuf *bufs;    /* one per buffer */
  kiln_tval *vars;      /* inside priv */
  uint8_t *vinit;       /* inside priv: the variable was assigned */
  uint8_t *is_loop_var; /* for diagnostics */
  unsigned char *priv;  /* per-thread state: variables, flags, local buffers and flags */
  size_t priv_bytes;
  unsigned char *shared;  /* shared buffers and their flags */
  const kiln_tstmt *stmt; /* the statement executing, for diagnostics */
  /* used outside parallel loops (kiln_tile_mark_outside_parallel): the rest of the local
   * buffers and variables is private to each iteration of a parallel loop */
  uint8_t *outside_var, *outside_buf;
} kiln_tinterp;

KILN_MUST_USE kiln_status kiln_tinterp_error(const kiln_tinterp *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
KILN_MUST_USE kiln_status kiln_tinterp_eval(kiln_tinterp *in, const kiln_texpr *e, kiln_tval *out);
KILN_MUST_USE kiln_status kiln_tinterp_stmt(kiln_tinterp *in, const kiln_tstmt *s);
KILN_MUST_USE kiln_status kiln_tinterp_block(kiln_tinterp *in, const kiln_tblock *b);
KILN_MUST_USE kiln_status kiln_tinterp_load(kiln_tinterp *in, int buf, int64_t idx, kiln_tval *out);
KILN_MUST_USE kiln_status kiln_tinterp_store(kiln_tinterp *in, int buf, int64_t idx, kiln_tval v);

/* ---- tile_threads.c ---- */
bool kiln_tinterp_is_thread_loop(kiln_loop_kind k);
/* Runs the thread loop s (extent n) and the thread loops perfectly nested in it. */
KILN_MUST_USE kiln_status kiln_tinterp_threads(kiln_tinterp *in, const kiln_tstmt *s, int64_t n);

/* ---- tile_scalar.c: the operations on one scalar type t ---- */
void kiln_tscalar_read(kiln_dtype t, const unsigned char *p, kiln_tval *out);
void kiln_tscalar_write(kiln_dtype t, unsigned char *p, kiln_tval v);
KILN_MUST_USE kiln_status kiln_tscalar_unary(const kiln_tinterp *in, kiln_top op, kiln_dtype t,
                                             kiln_tval a, kiln_tval *out);
KILN_MUST_USE kiln_status kiln_tscalar_binary(const kiln_tinterp *in, kiln_top op, kiln_dtype t,
                                              kiln_tval a, kiln_tval b, kiln_tval *out);
/* mac(acc, a, b) with operands a, b of type ta (tile.h, KILN_TOP_MAC) */
KILN_MUST_USE kiln_status kiln_tscalar_mac(kiln_dtype ta, kiln_tval acc, kiln_tval a, kiln_tval b,
                                           kiln_tval *out);
KILN_MUST_USE kiln_status kiln_tscalar_cast(const kiln_tinterp *in, kiln_dtype from, kiln_tval a,
                                            kiln_dtype to, kiln_tval *out);

#endif
