/* Private to the contraction lowering (lower_matmul.c, lower_conv.c, lower_mm_*.c): the
 * epilogue of a contraction group and the CPU GEMM loop nest that MatMul, Gemm and Conv
 * share. Its tile, B form and parallel loop come from the kernel's schedule (schedule.h).
 *
 * A contraction kernel is built in this order, because tile parameters come before any
 * other buffer: the anchor's operands (values or prepacked constants), the epilogue's
 * operands and outputs (kiln_mm_epi_prepare), scratch space, then the loop nest
 * (kiln_mm_gemm_emit or a direct kernel), which adds its local buffers. */
#ifndef KILN_LOWER_MM_H
#define KILN_LOWER_MM_H

#include "lower_internal.h"

/* ---- epilogue (lower_mm_epi.c) ---- */

/* Where one accumulated element lands: `n` pieces, piece i an expression e[i] that is the
 * row-major index of the element over output dims [lo[i], hi[i]). The pieces cover the
 * output dims in order. */
typedef struct kiln_mm_coord {
  int n;
  kiln_texpr *e[KILN_MAX_RANK];
  int lo[KILN_MAX_RANK], hi[KILN_MAX_RANK];
} kiln_mm_coord;

/* An operand broadcast to the output shape: element index = sum_d coord_d * strides[d]. */
typedef struct kiln_mm_operand {
  int buf;
  int64_t strides[KILN_MAX_RANK];
} kiln_mm_operand;

typedef struct kiln_mm_epi kiln_mm_epi;

/* What the anchor adds before the epilogue chain: y = alpha * acc + beta * bias. */
typedef struct kiln_mm_head {
  double alpha; /* 1: no scaling */
  int bias;     /* value id broadcast to the output with bias_strides, or -1 */
  int64_t bias_strides[KILN_MAX_RANK];
  double beta;
} kiln_mm_head;

/* Collects the epilogue chain of grp (the nodes after the anchor), checks each one
 * (elementwise, takes the previous result, other operands from outside the group that
 * broadcast to the anchor's output shape without changing it) and adds the kernel
 * parameters of the extra operands and of the group outputs. */
KILN_MUST_USE kiln_status kiln_mm_epi_prepare(kiln_lower_ctx *c, const kiln_group *grp,
                                              kiln_tkernel *k, kiln_step *step,
                                              const kiln_mm_head *head, kiln_mm_epi **out);
/* Appends to blk the statements that finish one element: head, chain, stores. `acc` is
 * the accumulated value in the compute type of the anchor's output. */
KILN_MUST_USE kiln_status kiln_mm_epi_emit(kiln_mm_epi *e, kiln_tkernel *k, kiln_tblock *blk,
                                           const kiln_mm_coord *co, kiln_texpr *acc);
/* The anchor's output shape. */
int kiln_mm_epi_rank(const kiln_mm_epi *e);
const int64_t *kiln_mm_epi_dims(const kiln_mm_epi *e);

/* Checks that grp's non-anchor nodes form an epilogue chain the emitter can take
 * (without building anything): used by kiln_lower_is_contraction's callers indirectly and
 * by the lowering before it creates a kernel. */
KILN_MUST_USE kiln_status kiln_mm_epi_check(const kiln_graph *g, const kiln_group *grp);

/* ---- GEMM schedule (lower_mm_gemm.c) ----
 * batch independent products C_b[M][N] = A_b[M][K] B_b[K][N], each element handed to the
 * epilogue callback. The register tile is MR x NR (MMA intrinsic on a LOCAL tile). */
typedef enum kiln_mm_bkind {
  KILN_MM_B_PACKED,  /* b_buf holds panels [batch_b][ceil(N/NR)][K][NR], zero padded */
  KILN_MM_B_INPLACE, /* b_buf[b_off + k*ldb + n], N <= NR (one panel) */
  KILN_MM_B_SCRATCH, /* the pack callback fills scratch panels before use */
  KILN_MM_BKIND_COUNT
} kiln_mm_bkind;

typedef struct kiln_mm_gemm kiln_mm_gemm;

/* Fills panel jb ([K][NR], zero padded past N) of batch b at dst[dst_off ...]. */
typedef kiln_status (*kiln_mm_pack_fn)(void *ud, kiln_tkernel *k, kiln_tblock *blk,
                                       const kiln_mm_gemm *g, kiln_texpr *b, kiln_texpr *jb,
                                       int dst, kiln_texpr *dst_off);
/* Emits what batch b needs before its panels are packed (may_parallel: the caller is not
 * inside a parallel loop). */
typedef kiln_status (*kiln_mm_prep_fn)(void *ud, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *b,
                                       bool may_parallel);
/* Finishes element (b, m, n) whose accumulated value is acc. */
typedef kiln_status (*kiln_mm_epi_fn)(void *ud, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *b,
                                      kiln_texpr *m, kiln_texpr *n, kiln_texpr *acc);

struct kiln_mm_gemm {
  kiln_dtype type; /* accumulation type: F32 or F64 */
  int64_t M, N, K;
  int MR, NR;
  /* batch: an index space of nb dims; operand offsets are sum_d coord_d * stride_d */
  int nb;
  int64_t bdims[KILN_MAX_RANK];
  int64_t a_bstr[KILN_MAX_RANK], b_bstr[KILN_MAX_RANK];
  /* A: a_packed: [ceil(M/MR)][K][MR] at a batch offset; else a[off + m*a_sm + k*a_sk] */
  int a_buf;
  bool a_packed;
  int64_t a_sm, a_sk;
  kiln_mm_bkind b_kind;
  int b_buf; /* PACKED, INPLACE: the operand; SCRATCH: the scratch buffer */
  int64_t ldb;
  kiln_mm_pack_fn pack;
  kiln_mm_prep_fn prep; /* or NULL */
  void *pack_ud;        /* for pack and prep */
  /* seg > 0: the N columns are rows of seg (a multiple of NR) of which the first
   * seg_valid exist; the epilogue gets the column among the existing ones */
  int64_t seg, seg_valid;
  kiln_mm_epi_fn epi;
  void *epi_ud;
  kiln_sched_par par; /* the loop on the threads (NONE, BATCH, PANELS, ROWS): schedule.h */
};

/* Elements of scratch the SCRATCH kind needs (all batches' panels). */
int64_t kiln_mm_gemm_scratch(const kiln_mm_gemm *g);
/* Number of B panels, ceil(N/NR). */
int64_t kiln_mm_gemm_panels(const kiln_mm_gemm *g);
/* Appends the loop nest to k's body. */
KILN_MUST_USE kiln_status kiln_mm_gemm_emit(kiln_tkernel *k, const kiln_mm_gemm *g);

/* Packs a constant matrix for the B operand: src[boff + k*sk + n*sn] for each of
 * `batch` matrices (offset bstride apart) into [batch][ceil(N/NR)][K][NR] of dtype dt. */
KILN_MUST_USE kiln_status kiln_mm_pack_b_const(const kiln_tensor *src, int64_t batch,
                                               int64_t bstride, int64_t K, int64_t N, int64_t sk,
                                               int64_t sn, int NR, kiln_dtype dt,
                                               kiln_tensor **out);
/* Packs a constant matrix for the A operand: src[aoff + m*sm + k*sk] into
 * [batch][ceil(M/MR)][K][MR], zero padded. */
KILN_MUST_USE kiln_status kiln_mm_pack_a_const(const kiln_tensor *src, int64_t batch,
                                               int64_t bstride, int64_t M, int64_t K, int64_t sm,
                                               int64_t sk, int MR, kiln_dtype dt,
                                               kiln_tensor **out);

/* Emits the generic pack of a strided source: panel of src[off(b) + k*sk + n*sn]. */
typedef struct kiln_mm_strided {
  int buf;
  int64_t sk, sn;
  int nb;
  int64_t bstr[KILN_MAX_RANK];
} kiln_mm_strided;
KILN_MUST_USE kiln_status kiln_mm_pack_strided(void *ud, kiln_tkernel *k, kiln_tblock *blk,
                                               const kiln_mm_gemm *g, kiln_texpr *b, kiln_texpr *jb,
                                               int dst, kiln_texpr *dst_off);

/* Offset sum_d coord_d(b) * str[d] of batch index b over dims bdims[0..nb). */
kiln_texpr *kiln_mm_batch_offset(kiln_tkernel *k, kiln_texpr *b, int nb, const int64_t *bdims,
                                 const int64_t *str);

/* ---- the anchors ---- */
/* Shared checks: a static tensor value of a supported accumulation dtype (F32, F64). */
bool kiln_mm_value_ok(const kiln_graph *g, int v, kiln_dtype dt);
/* True when v is a constant with data. */
const kiln_tensor *kiln_mm_const(const kiln_graph *g, int v);
/* Conv (lower_conv.c) */
bool kiln_lower_conv_ok(const kiln_graph *g, const kiln_node *n);
KILN_MUST_USE kiln_status kiln_lower_conv(kiln_lower_ctx *c, const kiln_group *grp);

#endif
