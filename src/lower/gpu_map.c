/* GPU mapping of CPU-shaped kernels: each top-level PARALLEL loop becomes a block loop over
 * a thread loop, its variable replaced by block * T + thread, under a bounds guard when T
 * does not divide the extent (see gpu.h): the split and bind transforms of the tile IR. */
#include <stdio.h>
#include <string.h>

#include "gpu.h"
#include "tile/tile_sched.h"

/* GPU loops or barriers anywhere below b. */
static bool has_gpu(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_BARRIER) return true;
    if (s->kind == KILN_TS_FOR && s->loop >= KILN_LOOP_BLOCK_X) return true;
    if (has_gpu(&s->body) || has_gpu(&s->orelse)) return true;
  }
  return false;
}

static kiln_status check_shape(const kiln_tkernel *k, int threads) {
  if (threads < 1 || threads > 1024)
    return kiln_invalid("gpu map of '%s': %d threads per block", k->name, threads);
  for (int i = 0; i < k->bufs.len; i++)
    if (k->bufs.data[i].scope == KILN_SCOPE_SHARED)
      return kiln_unsupported("gpu map of '%s': it already has shared buffers", k->name);
  if (k->body.len == 0) return kiln_unsupported("gpu map of '%s': empty kernel", k->name);
  for (int i = 0; i < k->body.len; i++) {
    const kiln_tstmt *s = k->body.data[i];
    if (s->kind != KILN_TS_FOR || s->loop != KILN_LOOP_PARALLEL)
      return kiln_unsupported("gpu map of '%s': top-level statement %d is not a parallel loop",
                              k->name, i);
    if (!s->extent || s->extent->kind != KILN_TE_INT || s->extent->i < 1)
      return kiln_unsupported("gpu map of '%s': parallel loop without a constant extent >= 1",
                              k->name);
    if (has_gpu(&s->body))
      return kiln_unsupported("gpu map of '%s': already has GPU loops or barriers", k->name);
  }
  return KILN_OK;
}

/* split by T = min(threads, E) into block.x over thread.x (tile_sched.h): the parallel
 * loop's iterations are independent, so both kinds are promised */
static kiln_status map_loop(kiln_tkernel *k, kiln_tstmt *s, int threads) {
  char outer[96], inner[96];
  const char *base = k->vars.data[s->var].name;
  snprintf(outer, sizeof outer, "%s_blk", base);
  snprintf(inner, sizeof inner, "%s_thr", base);
  KILN_TRY(kiln_tsched_split(k, s, threads, outer, inner, KILN_LOOP_THREAD_X, false, NULL));
  return kiln_tsched_bind(k, s, KILN_LOOP_BLOCK_X);
}

kiln_status kiln_tile_gpu_map(kiln_tkernel *k, int threads) {
  if (!k) return kiln_invalid("gpu map: no kernel");
  KILN_TRY(check_shape(k, threads));
  for (int i = 0; i < k->body.len; i++) KILN_TRY(map_loop(k, k->body.data[i], threads));
  return KILN_OK;
}
