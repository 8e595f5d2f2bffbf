/* GPU mapping of CPU-shaped kernels: each top-level PARALLEL loop becomes a block loop over
 * a thread loop, its variable replaced by block * T + thread, under a bounds guard when T
 * does not divide the extent (see gpu.h). */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

/* e with variable v replaced by r; unchanged subtrees are shared, changed ones copied. */
static kiln_texpr *subst(kiln_tkernel *k, kiln_texpr *e, int v, kiln_texpr *r) {
  if (!e) return NULL;
  if (e->kind == KILN_TE_VAR) return e->var == v ? r : e;
  kiln_texpr *idx = subst(k, e->index, v, r), *args[3];
  bool changed = idx != e->index;
  for (int i = 0; i < 3; i++) {
    args[i] = subst(k, e->args[i], v, r);
    changed |= args[i] != e->args[i];
  }
  if (!changed) return e;
  kiln_texpr *c = kiln_arena_alloc(k->module->arena, sizeof *c);
  *c = *e;
  c->index = idx;
  memcpy(c->args, args, sizeof args);
  return c;
}

static void subst_block(kiln_tkernel *k, kiln_tblock *b, int v, kiln_texpr *r) {
  for (int i = 0; i < b->len; i++) {
    kiln_tstmt *s = b->data[i];
    s->extent = subst(k, s->extent, v, r);
    s->cond = subst(k, s->cond, v, r);
    s->index = subst(k, s->index, v, r);
    s->value = subst(k, s->value, v, r);
    s->mma.c_off = subst(k, s->mma.c_off, v, r);
    s->mma.a_off = subst(k, s->mma.a_off, v, r);
    s->mma.b_off = subst(k, s->mma.b_off, v, r);
    subst_block(k, &s->body, v, r);
    subst_block(k, &s->orelse, v, r);
  }
}

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

static kiln_texpr *global_index(kiln_tkernel *k, int vb, int vt, int64_t t) {
  return kiln_tadd(k, kiln_tmul(k, kiln_tv(k, vb), t), kiln_tv(k, vt));
}

static kiln_tstmt *map_loop(kiln_tkernel *k, kiln_tstmt *s, int threads) {
  int64_t e = s->extent->i, t = e < threads ? e : threads, nb = (e + t - 1) / t;
  char name[96];
  const char *base = k->vars.data[s->var].name;
  snprintf(name, sizeof name, "%s_blk", base);
  int vb = kiln_tkernel_var(k, name, KILN_I64);
  snprintf(name, sizeof name, "%s_thr", base);
  int vt = kiln_tkernel_var(k, name, KILN_I64);
  subst_block(k, &s->body, s->var, global_index(k, vb, vt, t));
  kiln_tstmt *blk = kiln_tfor(k, vb, kiln_tint(k, nb), KILN_LOOP_BLOCK_X);
  kiln_tstmt *thr = kiln_tfor(k, vt, kiln_tint(k, t), KILN_LOOP_THREAD_X);
  if (nb * t == e) {
    thr->body = s->body;
  } else {
    kiln_tstmt *g =
        kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, global_index(k, vb, vt, t), kiln_tint(k, e)));
    g->body = s->body;
    kiln_tblock_push(k, &thr->body, g);
  }
  kiln_tblock_push(k, &blk->body, thr);
  return blk;
}

kiln_status kiln_tile_gpu_map(kiln_tkernel *k, int threads) {
  if (!k) return kiln_invalid("gpu map: no kernel");
  KILN_TRY(check_shape(k, threads));
  for (int i = 0; i < k->body.len; i++) k->body.data[i] = map_loop(k, k->body.data[i], threads);
  return KILN_OK;
}
