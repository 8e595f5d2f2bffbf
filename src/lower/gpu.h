/* GPU schedules in tile IR: mapping CPU-shaped kernels to blocks and threads, and a
 * shared-memory tiled matmul. The CUDA backend (src/codegen) emits what they produce. */
#ifndef KILN_TILE_GPU_H
#define KILN_TILE_GPU_H

#include "tile/tile.h"

/* Turns each top-level PARALLEL loop `for i in 0..E parallel { body }` (E constant) of k
 * into `for b in 0..ceil(E/T) block.x { for t in 0..T thread.x { if (b*T + t < E) {
 * body[i := b*T + t] } } }` with T = min(threads, E) (no guard when T divides E).
 * Fails with KILN_ERR_UNSUPPORTED (and leaves k unchanged) when k is not CPU-shaped: a
 * top-level statement other than a PARALLEL loop, a non-constant extent, GPU loops,
 * barriers or SHARED buffers already present. */
KILN_MUST_USE kiln_status kiln_tile_gpu_map(kiln_tkernel *k, int threads);

/* Adds to m a kernel `name` computing C[M x N] = A[M x K] * B[K x N] (F32, row-major,
 * parameters a, b, c in that order): each block computes a 32x32 tile of C with 16x16
 * threads (2x2 outputs each), staging 32x16 panels of A and 16x32 panels of B through
 * SHARED buffers with barriers; edges are guarded (any M, N, K >= 1). */
KILN_MUST_USE kiln_status kiln_tile_gpu_matmul(kiln_tmodule *m, const char *name, int64_t M,
                                               int64_t N, int64_t K, kiln_tkernel **out);
/* Its schedule in words, for the schedule record (kiln_sched.gpu) and the report. */
#define KILN_TILE_GPU_MATMUL_SCHEDULE                                                              \
  "matmul tile 32x32 k 16, block 16x16 threads of 2x2 outputs, a and b staged in shared"

#endif
