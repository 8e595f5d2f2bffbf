/* CUDA schedule of a lowered program: every kernel step of a program lowered for the CPU
 * shapes is given a GPU form, in place:
 *
 *   - a lone F32 MatMul whose B is a 2-D matrix (A may carry batch dims, folded into M)
 *     becomes the shared-memory tiled kernel of kiln_tile_gpu_matmul, bound to A, B, Y;
 *   - any other kernel whose top level is PARALLEL loops of constant extent is mapped to
 *     blocks and threads by kiln_tile_gpu_map (one CUDA launch per top-level loop, so that
 *     a loop sees everything the loop before it wrote);
 *   - a kernel of another shape (a top-level statement other than a parallel loop) runs
 *     as one GPU thread: its body is wrapped in a 1x1 block/thread loop;
 *   - a kernel that even that cannot express stays unmapped, with the reason.
 *
 * The program stays runnable by kiln_program_interp (the tile interpreter runs GPU loop
 * kinds with lockstep semantics), which is how the mapping is checked against the CPU
 * kernels. The fusion classes of kiln_lower_cuda_fuse_class keep those MatMuls alone so
 * that no epilogue is fused into them. */
#ifndef KILN_LOWER_CUDA_H
#define KILN_LOWER_CUDA_H

#include "lower.h"

typedef enum kiln_cuda_map {
  KILN_CUDA_UNUSED,   /* no step runs this kernel */
  KILN_CUDA_MATMUL,   /* shared-memory tiled matmul (kiln_tile_gpu_matmul) */
  KILN_CUDA_PARALLEL, /* parallel loops mapped to blocks and threads (kiln_tile_gpu_map) */
  KILN_CUDA_SERIAL,   /* one block of one thread */
  KILN_CUDA_UNMAPPED, /* no GPU form */
  KILN_CUDA_MAP_COUNT
} kiln_cuda_map;

const char *kiln_cuda_map_name(kiln_cuda_map m); /* "matmul", "parallel", ... */

typedef struct kiln_cuda_kinfo {
  kiln_cuda_map map;
  const char *reason; /* SERIAL, UNMAPPED: why no better form (module arena) */
} kiln_cuda_kinfo;

/* Fusion classes for the CUDA target: kiln_lower_fuse_class, except that the MatMuls that
 * become tiled GPU matmuls are kernels of their own. */
kiln_fuse_class kiln_lower_cuda_fuse_class(const kiln_graph *g, const kiln_node *n);

/* Maps every kernel of p (lowered from a graph fused with kiln_lower_cuda_fuse_class) as
 * described above, with `threads` GPU threads per block for mapped loops (1..1024).
 * *out_info (malloc'd) has one entry per kernel of p->module after the mapping. */
KILN_MUST_USE kiln_status kiln_lower_cuda_map(kiln_program *p, int threads,
                                              kiln_cuda_kinfo **out_info);

/* The top-level statements of a mapped kernel that are separate launches (each a BLOCK
 * loop, or the 1x1 wrapper): 1 for most kernels. */
int kiln_cuda_launch_count(const kiln_tkernel *k);

#endif
