/* The CPU GEMM schedule shared by MatMul, Gemm and Conv.
 *
 * For each batch index b, C_b = A_b B_b with B in panels of NR columns ([K][NR], contiguous,
 * zero padded past N): prepacked at compile time, packed into scratch right before use, or
 * read in place when N fits one panel. The register tile is MR x NR: a LOCAL C tile is
 * cleared, accumulated by the MMA intrinsic over the whole K (the C backend maps it to an
 * AVX-512 microkernel: NR/16 vectors per row of C kept in registers, A broadcast), then each
 * element goes through the epilogue and is stored. Rows past the last full MR block use the
 * same intrinsic with fewer rows; columns past N in the last panel are computed on the
 * zero padding and not stored.
 *
 * One loop runs on the threads, as the kernel's schedule says (kiln_sched_gemm_par picks
 * the one that splits evenly; tiny products run serially): the batch loop, the panel loop
 * (each thread packs the panels it multiplies, so a panel is used while it is in L2) or the
 * row-block loop (B packed first by all threads, then each thread takes row blocks and
 * streams its share of A once). Every parallel loop owns
 * its register tile: the row tail that runs after the row-block loop has a tile of its own. */
#include "base/mutate.h"
#include "lower_mm.h"

int64_t kiln_mm_gemm_panels(const kiln_mm_gemm *g) {
  return (g->N + g->NR - 1) / g->NR;
}

static int64_t batch_count(const kiln_mm_gemm *g) {
  int64_t n = 1;
  for (int d = 0; d < g->nb; d++) n *= g->bdims[d];
  return n;
}

int64_t kiln_mm_gemm_scratch(const kiln_mm_gemm *g) {
  if (g->b_kind != KILN_MM_B_SCRATCH) return 0;
  return batch_count(g) * kiln_mm_gemm_panels(g) * g->K * g->NR;
}

/* Row-major product of dims (d, hi). */
static int64_t inner(const int64_t *dims, int d, int hi) {
  int64_t s = 1;
  for (int i = d + 1; i < hi; i++) s *= dims[i];
  return s;
}

kiln_texpr *kiln_mm_batch_offset(kiln_tkernel *k, kiln_texpr *b, int nb, const int64_t *bdims,
                                 const int64_t *str) {
  /* When the strides of the non-unit dims are a scaled row-major layout, b times the
   * innermost stride is the offset; otherwise each coordinate is taken apart. */
  int last = -1;
  for (int d = nb - 1; d >= 0 && last < 0; d--)
    if (bdims[d] != 1) last = d;
  if (last < 0) return kiln_tint(k, 0);
  bool linear = true, zero = true;
  for (int d = 0; d <= last; d++) {
    if (bdims[d] == 1) continue;
    if (str[d] != 0) zero = false;
    if (str[d] != str[last] * inner(bdims, d, last + 1)) linear = false;
  }
  if (zero) return kiln_tint(k, 0);
  if (linear) return kiln_tmul(k, b, str[last]);
  kiln_texpr *sum = kiln_tint(k, 0);
  bool outer = true;
  for (int d = 0; d <= last; d++) {
    if (bdims[d] == 1) continue;
    if (str[d] != 0) {
      kiln_texpr *q = kiln_tbin(k, KILN_TOP_DIV, b, kiln_tint(k, inner(bdims, d, nb)));
      if (!outer) q = kiln_tbin(k, KILN_TOP_MOD, q, kiln_tint(k, bdims[d]));
      sum = kiln_tadd(k, sum, kiln_tmul(k, q, str[d]));
    }
    /* mutant 380: a broadcast (stride 0) dim not counted as the outer one: the next dim's
     * coordinate taken without its modulo */
    if (str[d] != 0 || !KILN_MUTANT(380)) outer = false;
  }
  return sum;
}

/* ---- the loop nest ---- */

typedef enum par_mode { PAR_NONE, PAR_BATCH, PAR_PANELS, PAR_ROWS } par_mode;

typedef struct gemm_vars {
  int b, jb, ib, i, j, z;
  int cbuf; /* the LOCAL MR x NR tile */
} gemm_vars;

/* The schedule's parallel loop (KILN_PAR_NONE, BATCH, PANELS or ROWS). */
static par_mode pick_mode(const kiln_mm_gemm *g) {
  switch (g->par) {
  case KILN_PAR_BATCH: return PAR_BATCH;
  case KILN_PAR_PANELS: return PAR_PANELS;
  case KILN_PAR_ROWS: return PAR_ROWS;
  default: return PAR_NONE;
  }
}

static kiln_tstmt *loop(kiln_tkernel *k, kiln_tblock *parent, int var, int64_t n,
                        kiln_loop_kind kind) {
  kiln_tstmt *s = kiln_tfor(k, var, kiln_tint(k, n), kind);
  kiln_tblock_push(k, parent, s);
  return s;
}

static kiln_texpr *b_panel_offset(kiln_tkernel *k, const kiln_mm_gemm *g, const gemm_vars *v,
                                  kiln_texpr *jb) {
  kiln_texpr *b = kiln_tv(k, v->b);
  int64_t panel = g->K * g->NR;
  switch (g->b_kind) {
  case KILN_MM_B_PACKED:
    return kiln_tadd(k, kiln_mm_batch_offset(k, b, g->nb, g->bdims, g->b_bstr),
                     kiln_tmul(k, jb, panel));
  case KILN_MM_B_INPLACE: return kiln_mm_batch_offset(k, b, g->nb, g->bdims, g->b_bstr);
  default: return kiln_tmul(k, kiln_tadd(k, kiln_tmul(k, b, kiln_mm_gemm_panels(g)), jb), panel);
  }
}

static void emit_mma(kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g, const gemm_vars *v,
                     kiln_texpr *ib, int64_t rows, kiln_texpr *jb) {
  kiln_tmma m = {0};
  m.c_buf = v->cbuf;
  m.c_off = kiln_tint(k, 0);
  m.ldc = g->NR;
  m.a_buf = g->a_buf;
  kiln_texpr *aoff = kiln_mm_batch_offset(k, kiln_tv(k, v->b), g->nb, g->bdims, g->a_bstr);
  if (g->a_packed) {
    m.a_off = kiln_tadd(k, aoff, kiln_tmul(k, ib, g->K * g->MR));
    m.a_sm = 1;
    m.a_sk = g->MR;
  } else {
    m.a_off = kiln_tadd(k, aoff, kiln_tmul(k, ib, g->MR * g->a_sm));
    m.a_sm = g->a_sm;
    m.a_sk = g->a_sk;
  }
  m.b_buf = g->b_buf;
  m.b_off = b_panel_offset(k, g, v, jb);
  m.b_sn = 1;
  m.b_sk = g->b_kind == KILN_MM_B_INPLACE ? g->ldb : g->NR;
  m.m = rows;
  m.n = g->b_kind == KILN_MM_B_INPLACE ? g->N : g->NR;
  m.k = g->K;
  kiln_tblock_push(k, blk, kiln_tmma_stmt(k, &m));
}

/* One register tile: rows [ib*MR, ib*MR + rows) of panel jb. */
static kiln_status emit_tile(kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                             const gemm_vars *v, kiln_texpr *ib, int64_t rows, kiln_texpr *jb) {
  kiln_tstmt *zl = loop(k, blk, v->z, (int64_t)g->MR * g->NR, KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &zl->body,
                   kiln_tstore(k, v->cbuf, kiln_tv(k, v->z), kiln_tfloat(k, g->type, 0)));
  emit_mma(k, blk, g, v, ib, rows, jb);
  bool inplace = g->b_kind == KILN_MM_B_INPLACE;
  int64_t width = inplace ? g->N : g->NR;
  kiln_tstmt *il = loop(k, blk, v->i, rows, KILN_LOOP_SERIAL);
  kiln_tstmt *jl = loop(k, &il->body, v->j, width, KILN_LOOP_VECTOR);
  kiln_tblock *body = &jl->body;
  kiln_texpr *col = kiln_tadd(k, kiln_tmul(k, jb, g->NR), kiln_tv(k, v->j));
  if (g->seg > 0) {
    /* columns past the end of each segment are padding: not stored; the clamp keeps the
     * index provably in bounds for the verifier */
    /* jb*NR + j = (jb / ppr)*seg + (jb % ppr)*NR + j with ppr = seg/NR panels a segment:
     * only the panel index is divided, outside the vector loop */
    int64_t ppr = g->seg / g->NR;
    kiln_texpr *in_seg =
        kiln_tadd(k, kiln_tmul(k, kiln_tbin(k, KILN_TOP_MOD, jb, kiln_tint(k, ppr)), g->NR),
                  kiln_tv(k, v->j));
    kiln_tstmt *guard = kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, in_seg, kiln_tint(k, g->seg_valid)));
    kiln_tblock_push(k, body, guard);
    body = &guard->body;
    kiln_texpr *segs = kiln_tbin(k, KILN_TOP_DIV, jb, kiln_tint(k, ppr));
    /* mutant 386: a segment's first column at the padded width (seg), not seg_valid */
    col = kiln_tadd(k, kiln_tmul(k, segs, KILN_MUTANT(386) ? g->seg : g->seg_valid),
                    kiln_tbin(k, KILN_TOP_MIN, in_seg, kiln_tint(k, g->seg_valid - 1)));
  } else if (!inplace && g->N % g->NR != 0) {
    /* the last panel's padding columns are not stored (clamped for the verifier too) */
    kiln_tstmt *guard = kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, col, kiln_tint(k, g->N)));
    if (!KILN_MUTANT(42)) { /* mutant 42: padding columns stored (onto column N-1) */
      kiln_tblock_push(k, body, guard);
      body = &guard->body;
    }
    col = kiln_tbin(k, KILN_TOP_MIN, col, kiln_tint(k, g->N - 1));
  }
  kiln_texpr *row = kiln_tadd(k, kiln_tmul(k, ib, g->MR), kiln_tv(k, v->i));
  kiln_texpr *cidx = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, v->i), g->NR), kiln_tv(k, v->j));
  return g->epi(g->epi_ud, k, body, kiln_tv(k, v->b), row, col, kiln_tload(k, v->cbuf, cidx));
}

/* All row blocks of panel jb (full blocks, then the tail). */
static kiln_status emit_rows(kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                             const gemm_vars *v, kiln_texpr *jb, kiln_loop_kind kind) {
  int64_t full = g->M / g->MR, tail = g->M % g->MR;
  if (full > 0) {
    kiln_tstmt *il = loop(k, blk, v->ib, full, kind);
    KILN_TRY(emit_tile(k, &il->body, g, v, kiln_tv(k, v->ib), g->MR, jb));
  }
  if (tail > (KILN_MUTANT(41) ? 1 : 0)) /* mutant 41: a tail of one row is dropped */
    KILN_TRY(emit_tile(k, blk, g, v, kiln_tint(k, full), tail, jb));
  return KILN_OK;
}

static kiln_status emit_pack(kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                             const gemm_vars *v, kiln_texpr *jb) {
  if (g->b_kind != KILN_MM_B_SCRATCH) return KILN_OK;
  return g->pack(g->pack_ud, k, blk, g, kiln_tv(k, v->b), jb, g->b_buf,
                 b_panel_offset(k, g, v, jb));
}

static kiln_status emit_batch_body(kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                                   const gemm_vars *v, par_mode mode) {
  int64_t np = kiln_mm_gemm_panels(g);
  if (g->b_kind == KILN_MM_B_INPLACE) np = 1;
  if (g->prep) KILN_TRY(g->prep(g->pack_ud, k, blk, kiln_tv(k, v->b), mode != PAR_NONE));
  if (mode != PAR_ROWS) {
    kiln_loop_kind pk = mode == PAR_PANELS ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
    kiln_tstmt *pl = loop(k, blk, v->jb, np, pk);
    KILN_TRY(emit_pack(k, &pl->body, g, v, kiln_tv(k, v->jb)));
    return emit_rows(k, &pl->body, g, v, kiln_tv(k, v->jb), KILN_LOOP_SERIAL);
  }
  if (g->b_kind == KILN_MM_B_SCRATCH) {
    kiln_tstmt *pl = loop(k, blk, v->jb, np, KILN_LOOP_PARALLEL);
    KILN_TRY(emit_pack(k, &pl->body, g, v, kiln_tv(k, v->jb)));
  }
  int64_t full = g->M / g->MR, tail = g->M % g->MR;
  kiln_tstmt *il = loop(k, blk, v->ib, full, KILN_LOOP_PARALLEL);
  kiln_tstmt *pl = loop(k, &il->body, v->jb, np, KILN_LOOP_SERIAL);
  KILN_TRY(emit_tile(k, &pl->body, g, v, kiln_tv(k, v->ib), g->MR, kiln_tv(k, v->jb)));
  if (tail > 0) {
    /* The tail runs after the parallel loop, on one thread: it gets a tile of its own, so
     * that the parallel loop's tile is used only inside it and each thread has its own (a
     * buffer used outside a parallel loop is one object shared by its iterations). */
    gemm_vars tv = *v;
    if (!KILN_MUTANT(55)) /* mutant 55: the tail shares the parallel loop's tile (a race) */
      tv.cbuf = kiln_tkernel_buf(k, "acc_tail", g->type, KILN_SCOPE_LOCAL, (int64_t)g->MR * g->NR);
    kiln_tstmt *tl = loop(k, blk, v->jb, np, KILN_LOOP_SERIAL);
    KILN_TRY(emit_tile(k, &tl->body, g, &tv, kiln_tint(k, full), tail, kiln_tv(k, v->jb)));
  }
  return KILN_OK;
}

kiln_status kiln_mm_gemm_emit(kiln_tkernel *k, const kiln_mm_gemm *g) {
  if (g->M <= 0 || g->N <= 0 || g->K <= 0 || g->MR <= 0 || g->NR <= 0)
    return kiln_unsupported("empty matrix product");
  if (g->b_kind == KILN_MM_B_INPLACE && g->N > g->NR)
    return kiln_invalid("in-place B wider than one panel");
  gemm_vars v;
  v.b = kiln_tkernel_var(k, "b", KILN_I64);
  v.jb = kiln_tkernel_var(k, "jb", KILN_I64);
  v.ib = kiln_tkernel_var(k, "ib", KILN_I64);
  v.i = kiln_tkernel_var(k, "i", KILN_I64);
  v.j = kiln_tkernel_var(k, "j", KILN_I64);
  v.z = kiln_tkernel_var(k, "z", KILN_I64);
  v.cbuf = kiln_tkernel_buf(k, "acc", g->type, KILN_SCOPE_LOCAL, (int64_t)g->MR * g->NR);
  par_mode mode = pick_mode(g);
  kiln_loop_kind bk = mode == PAR_BATCH ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
  kiln_tstmt *bl = loop(k, &k->body, v.b, batch_count(g), bk);
  return emit_batch_body(k, &bl->body, g, &v, mode == PAR_BATCH ? PAR_NONE : mode);
}

/* ---- packing ---- */

kiln_status kiln_mm_pack_b_const(const kiln_tensor *src, int64_t batch, int64_t bstride, int64_t K,
                                 int64_t N, int64_t sk, int64_t sn, int NR, kiln_dtype dt,
                                 kiln_tensor **out) {
  int64_t np = (N + NR - 1) / NR, total;
  if (kiln_mul_overflow_i64(batch * np, K * NR, &total)) return kiln_invalid("packed B too large");
  KILN_TRY(kiln_tensor_new(dt, 1, &total, out));
  for (int64_t b = 0; b < batch; b++)
    for (int64_t p = 0; p < np; p++)
      for (int64_t kk = 0; kk < K; kk++)
        for (int64_t j = 0; j < NR; j++) {
          int64_t n = p * NR + j;
          if (n >= N) continue;
          double x = kiln_load_f64(src->dtype, src->data, (size_t)(b * bstride + kk * sk + n * sn));
          int64_t at = ((b * np + p) * K + kk) * NR + j;
          if (KILN_MUTANT(43)) at = ((b * np + p) * NR + j) * K + kk; /* mutant 43: column-major */
          kiln_store_f64(dt, (*out)->data, (size_t)at, x);
        }
  return KILN_OK;
}

kiln_status kiln_mm_pack_a_const(const kiln_tensor *src, int64_t batch, int64_t bstride, int64_t M,
                                 int64_t K, int64_t sm, int64_t sk, int MR, kiln_dtype dt,
                                 kiln_tensor **out) {
  int64_t nm = (M + MR - 1) / MR, total;
  if (kiln_mul_overflow_i64(batch * nm, K * MR, &total)) return kiln_invalid("packed A too large");
  KILN_TRY(kiln_tensor_new(dt, 1, &total, out));
  for (int64_t b = 0; b < batch; b++)
    for (int64_t blk = 0; blk < nm; blk++)
      for (int64_t kk = 0; kk < K; kk++)
        for (int64_t i = 0; i < MR; i++) {
          int64_t m = blk * MR + i;
          if (m >= M) continue;
          double x = kiln_load_f64(src->dtype, src->data, (size_t)(b * bstride + m * sm + kk * sk));
          kiln_store_f64(dt, (*out)->data, (size_t)(((b * nm + blk) * K + kk) * MR + i), x);
        }
  return KILN_OK;
}

/* dst[off + kk*NR + j] = src[boff + kk*sk + (jb*NR + j)*sn], or 0 past N. */
kiln_status kiln_mm_pack_strided(void *ud, kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                                 kiln_texpr *b, kiln_texpr *jb, int dst, kiln_texpr *dst_off) {
  const kiln_mm_strided *s = ud;
  int kv = kiln_tkernel_var(k, "pk", KILN_I64), jv = kiln_tkernel_var(k, "pj", KILN_I64);
  /* the inner loop runs along the contiguous side of the source */
  bool n_inner = s->sn == 1 || s->sk != 1;
  int outer = n_inner ? kv : jv, inn = n_inner ? jv : kv;
  kiln_tstmt *ol = loop(k, blk, outer, n_inner ? g->K : g->NR, KILN_LOOP_SERIAL);
  kiln_tstmt *il = loop(k, &ol->body, inn, n_inner ? g->NR : g->K, KILN_LOOP_VECTOR);
  kiln_texpr *col = kiln_tadd(k, kiln_tmul(k, jb, g->NR), kiln_tv(k, jv));
  kiln_texpr *valid = kiln_tbin(k, KILN_TOP_LT, col, kiln_tint(k, g->N));
  bool tail = g->N % g->NR != 0;
  kiln_texpr *ccol = tail ? kiln_tbin(k, KILN_TOP_MIN, col, kiln_tint(k, g->N - 1)) : col;
  kiln_texpr *src =
      kiln_tadd(k, kiln_mm_batch_offset(k, b, s->nb, g->bdims, s->bstr),
                kiln_tadd(k, kiln_tmul(k, kiln_tv(k, kv), s->sk), kiln_tmul(k, ccol, s->sn)));
  kiln_texpr *x = kiln_tcast(k, g->type, kiln_tload(k, s->buf, src)); /* a wider policy type */
  if (tail) x = kiln_tselect(k, valid, x, kiln_tfloat(k, x->type, 0));
  kiln_texpr *di =
      kiln_tadd(k, dst_off, kiln_tadd(k, kiln_tmul(k, kiln_tv(k, kv), g->NR), kiln_tv(k, jv)));
  kiln_tblock_push(k, &il->body, kiln_tstore(k, dst, di, x));
  return KILN_OK;
}
