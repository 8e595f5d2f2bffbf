/* A shared-memory tiled F32 matmul in tile IR (see gpu.h):
 *
 *   for by block.y, bx block.x { for ty thread.y { for tx thread.x {
 *     acc[0..4) = 0
 *     for kb in 0..ceil(K/16) serial {
 *       As[32x16] <- A panel, Bs[16x32] <- B panel (2 elements per thread, 0 outside)
 *       barrier
 *       for kk in 0..16 unroll: acc[i][j] += As[ty+16i][kk] * Bs[kk][tx+16j]
 *       barrier
 *     }
 *     C[by*32 + ty+16i][bx*32 + tx+16j] = acc[i][j]   (guarded)
 *   } } }
 * Each thread computes a 2x2 set of outputs 16 apart, so that neighbouring threads touch
 * neighbouring elements of B, C and Bs. */
#include "gpu.h"

/* The schedule (KILN_TILE_GPU_MATMUL_SCHEDULE in gpu.h):
 * TILE: a 32x32 tile of C per block, so a block's two staged panels (32x16 of A, 16x32 of
 *   B: 4 KiB) leave shared memory for several blocks per multiprocessor;
 * KT: 16 columns of A (rows of B) staged per step: 512 elements a panel, two per thread;
 * THREADS: 16x16 = 256 threads a block, each with 2x2 outputs 16 apart (neighbouring
 *   threads read neighbouring elements, so the loads of a warp coalesce). */
enum { TILE = 32, KT = 16, THREADS = 16 };

typedef struct mm {
  kiln_tkernel *k;
  int64_t M, N, K;
  int a, b, c, as, bs, acc;
  int by, bx, ty, tx, kb, kk, q, i, j;
} mm;

static kiln_texpr *v(mm *s, int var) {
  return kiln_tv(s->k, var);
}

static kiln_texpr *add(mm *s, kiln_texpr *x, kiln_texpr *y) {
  return kiln_tadd(s->k, x, y);
}

static kiln_texpr *mul(mm *s, kiln_texpr *x, int64_t c) {
  return kiln_tmul(s->k, x, c);
}

static kiln_texpr *lt(mm *s, kiln_texpr *x, int64_t bound) {
  return kiln_tbin(s->k, KILN_TOP_LT, x, kiln_tint(s->k, bound));
}

static kiln_texpr *and2(mm *s, kiln_texpr *x, kiln_texpr *y) {
  return kiln_tbin(s->k, KILN_TOP_AND, x, y);
}

static void push(mm *s, kiln_tblock *b, kiln_tstmt *st) {
  kiln_tblock_push(s->k, b, st);
}

/* the linear index of this thread's q-th element of a 512-element panel */
static kiln_texpr *lin(mm *s) {
  return add(s, mul(s, v(s, s->q), THREADS * THREADS),
             add(s, mul(s, v(s, s->ty), THREADS), v(s, s->tx)));
}

static kiln_texpr *divc(mm *s, kiln_texpr *x, int64_t c) {
  return kiln_tbin(s->k, KILN_TOP_DIV, x, kiln_tint(s->k, c));
}

static kiln_texpr *modc(mm *s, kiln_texpr *x, int64_t c) {
  return kiln_tbin(s->k, KILN_TOP_MOD, x, kiln_tint(s->k, c));
}

/* dst[lin] = src[row * ld + col] if row < rows and col < cols, else 0 */
static kiln_tstmt *stage(mm *s, int dst, int src, kiln_texpr *(*row)(mm *),
                         kiln_texpr *(*col)(mm *), int64_t rows, int64_t cols, int64_t ld) {
  kiln_tstmt *g = kiln_tif(s->k, and2(s, lt(s, row(s), rows), lt(s, col(s), cols)));
  push(s, &g->body,
       kiln_tstore(s->k, dst, lin(s), kiln_tload(s->k, src, add(s, mul(s, row(s), ld), col(s)))));
  push(s, &g->orelse, kiln_tstore(s->k, dst, lin(s), kiln_tfloat(s->k, KILN_F32, 0)));
  return g;
}

static kiln_texpr *a_row(mm *s) {
  return add(s, mul(s, v(s, s->by), TILE), divc(s, lin(s), KT));
}
static kiln_texpr *a_col(mm *s) {
  return add(s, mul(s, v(s, s->kb), KT), modc(s, lin(s), KT));
}
static kiln_texpr *b_row(mm *s) {
  return add(s, mul(s, v(s, s->kb), KT), divc(s, lin(s), TILE));
}
static kiln_texpr *b_col(mm *s) {
  return add(s, mul(s, v(s, s->bx), TILE), modc(s, lin(s), TILE));
}

/* acc[i*2+j] += As[(ty + 16i) * 16 + kk] * Bs[kk * 32 + tx + 16j] */
static kiln_tstmt *fma_step(mm *s) {
  kiln_tkernel *k = s->k;
  kiln_texpr *ai =
      add(s, mul(s, add(s, v(s, s->ty), mul(s, v(s, s->i), THREADS)), KT), v(s, s->kk));
  kiln_texpr *bi =
      add(s, mul(s, v(s, s->kk), TILE), add(s, v(s, s->tx), mul(s, v(s, s->j), THREADS)));
  kiln_texpr *ci = add(s, mul(s, v(s, s->i), 2), v(s, s->j));
  kiln_texpr *p = kiln_tbin(k, KILN_TOP_MUL, kiln_tload(k, s->as, ai), kiln_tload(k, s->bs, bi));
  return kiln_tstore(k, s->acc, ci, kiln_tbin(k, KILN_TOP_ADD, kiln_tload(k, s->acc, ci), p));
}

/* for i in 0..2 unroll { for j in 0..2 unroll { inner } } */
static kiln_tstmt *ij_loops(mm *s, kiln_tstmt *inner) {
  kiln_tstmt *li = kiln_tfor(s->k, s->i, kiln_tint(s->k, 2), KILN_LOOP_UNROLL);
  kiln_tstmt *lj = kiln_tfor(s->k, s->j, kiln_tint(s->k, 2), KILN_LOOP_UNROLL);
  push(s, &lj->body, inner);
  push(s, &li->body, lj);
  return li;
}

static kiln_tstmt *k_loop(mm *s) {
  kiln_tkernel *k = s->k;
  kiln_tstmt *lk = kiln_tfor(k, s->kb, kiln_tint(k, (s->K + KT - 1) / KT), KILN_LOOP_SERIAL);
  kiln_tstmt *lq =
      kiln_tfor(k, s->q, kiln_tint(k, TILE * KT / (THREADS * THREADS)), KILN_LOOP_UNROLL);
  push(s, &lq->body, stage(s, s->as, s->a, a_row, a_col, s->M, s->K, s->K));
  push(s, &lq->body, stage(s, s->bs, s->b, b_row, b_col, s->K, s->N, s->N));
  push(s, &lk->body, lq);
  push(s, &lk->body, kiln_tbarrier(k));
  kiln_tstmt *lkk = kiln_tfor(k, s->kk, kiln_tint(k, KT), KILN_LOOP_UNROLL);
  push(s, &lkk->body, ij_loops(s, fma_step(s)));
  push(s, &lk->body, lkk);
  push(s, &lk->body, kiln_tbarrier(k));
  return lk;
}

static kiln_texpr *out_row(mm *s) {
  return add(s, mul(s, v(s, s->by), TILE), add(s, v(s, s->ty), mul(s, v(s, s->i), THREADS)));
}
static kiln_texpr *out_col(mm *s) {
  return add(s, mul(s, v(s, s->bx), TILE), add(s, v(s, s->tx), mul(s, v(s, s->j), THREADS)));
}

static void thread_body(mm *s, kiln_tblock *b) {
  kiln_tkernel *k = s->k;
  kiln_texpr *ci = add(s, mul(s, v(s, s->i), 2), v(s, s->j));
  push(s, b, ij_loops(s, kiln_tstore(k, s->acc, ci, kiln_tfloat(k, KILN_F32, 0))));
  push(s, b, k_loop(s));
  kiln_tstmt *g = kiln_tif(k, and2(s, lt(s, out_row(s), s->M), lt(s, out_col(s), s->N)));
  push(s, &g->body,
       kiln_tstore(k, s->c, add(s, mul(s, out_row(s), s->N), out_col(s)),
                   kiln_tload(k, s->acc, add(s, mul(s, v(s, s->i), 2), v(s, s->j)))));
  push(s, b, ij_loops(s, g));
}

kiln_status kiln_tile_gpu_matmul(kiln_tmodule *m, const char *name, int64_t M, int64_t N, int64_t K,
                                 kiln_tkernel **out) {
  int64_t t;
  if (!m || !name || M < 1 || N < 1 || K < 1 || kiln_mul_overflow_i64(M, K, &t) ||
      kiln_mul_overflow_i64(K, N, &t) || kiln_mul_overflow_i64(M, N, &t))
    return kiln_invalid("gpu matmul '%s': bad sizes %lldx%lldx%lld", name ? name : "?",
                        (long long)M, (long long)N, (long long)K);
  if ((M + TILE - 1) / TILE > 65535) return kiln_unsupported("gpu matmul: M too large");
  if (kiln_tmodule_find(m, name)) return kiln_invalid("gpu matmul: kernel '%s' exists", name);
  mm s = {.k = kiln_tkernel_new(m, name), .M = M, .N = N, .K = K};
  kiln_tkernel *k = s.k;
  k->origin = "gpu matmul";
  s.a = kiln_tkernel_param(k, "a", KILN_F32, M * K);
  s.b = kiln_tkernel_param(k, "b", KILN_F32, K * N);
  s.c = kiln_tkernel_param(k, "c", KILN_F32, M * N);
  k->bufs.data[s.a].readonly = k->bufs.data[s.b].readonly = true;
  s.as = kiln_tkernel_buf(k, "As", KILN_F32, KILN_SCOPE_SHARED, TILE * KT);
  s.bs = kiln_tkernel_buf(k, "Bs", KILN_F32, KILN_SCOPE_SHARED, KT * TILE);
  s.acc = kiln_tkernel_buf(k, "acc", KILN_F32, KILN_SCOPE_LOCAL, 4);
  static const char *const names[] = {"by", "bx", "ty", "tx", "kb", "kk", "q", "i", "j"};
  int *vars[] = {&s.by, &s.bx, &s.ty, &s.tx, &s.kb, &s.kk, &s.q, &s.i, &s.j};
  for (int i = 0; i < 9; i++) *vars[i] = kiln_tkernel_var(k, names[i], KILN_I64);
  kiln_tstmt *lby = kiln_tfor(k, s.by, kiln_tint(k, (M + TILE - 1) / TILE), KILN_LOOP_BLOCK_Y);
  kiln_tstmt *lbx = kiln_tfor(k, s.bx, kiln_tint(k, (N + TILE - 1) / TILE), KILN_LOOP_BLOCK_X);
  kiln_tstmt *lty = kiln_tfor(k, s.ty, kiln_tint(k, THREADS), KILN_LOOP_THREAD_Y);
  kiln_tstmt *ltx = kiln_tfor(k, s.tx, kiln_tint(k, THREADS), KILN_LOOP_THREAD_X);
  thread_body(&s, &ltx->body);
  push(&s, &lty->body, ltx);
  push(&s, &lbx->body, lty);
  push(&s, &lby->body, lbx);
  push(&s, &k->body, lby);
  *out = k;
  return KILN_OK;
}
