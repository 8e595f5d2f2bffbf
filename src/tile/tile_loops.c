/* Loop kinds and barriers in the tile IR verifier.
 * - block loops: only inside block loops (the grid), each dimension once, constant extent;
 * - thread loops: not inside parallel or vector loops nor a thread loop of the same
 *   dimension, constant extent;
 * - parallel loops: not inside parallel loops, and not in GPU kernels;
 * - vector loops: contain no loops except unrolled ones, and no barriers;
 * - barriers: inside thread loops that form a perfect nest (each one's body is only the
 *   next), with only serial or unrolled loops and conditionals between the innermost
 *   thread loop and the barrier. */
#include "tile_verify.h"

#define FAIL(...) kiln_tverify_fail(c, __VA_ARGS__)

static bool is_block(kiln_loop_kind k) {
  return k == KILN_LOOP_BLOCK_X || k == KILN_LOOP_BLOCK_Y || k == KILN_LOOP_BLOCK_Z;
}

static bool is_thread(kiln_loop_kind k) {
  return k == KILN_LOOP_THREAD_X || k == KILN_LOOP_THREAD_Y || k == KILN_LOOP_THREAD_Z;
}

static bool only_unrolled_loops(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_BARRIER) return false;
    if (s->kind == KILN_TS_FOR && s->loop != KILN_LOOP_UNROLL) return false;
    if ((s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) && !only_unrolled_loops(&s->body))
      return false;
    if (s->kind == KILN_TS_IF && !only_unrolled_loops(&s->orelse)) return false;
  }
  return true;
}

/* The enclosing loop of kind k, or NULL. */
static const kiln_tstmt *enclosing(const kiln_tverify *c, kiln_loop_kind k) {
  for (int i = 0; i < c->depth; i++)
    if (c->stack[i]->kind == KILN_TS_FOR && c->stack[i]->loop == k) return c->stack[i];
  return NULL;
}

static kiln_status check_block_loop(kiln_tverify *c, const kiln_tstmt *s) {
  for (int i = 0; i < c->depth; i++)
    if (c->stack[i]->kind != KILN_TS_FOR || !is_block(c->stack[i]->loop))
      return FAIL("a block loop may only be nested in block loops");
  if (enclosing(c, s->loop)) return FAIL("nested %s loops", kiln_loop_kind_name(s->loop));
  return KILN_OK;
}

static kiln_status check_thread_loop(kiln_tverify *c, const kiln_tstmt *s) {
  if (enclosing(c, s->loop)) return FAIL("nested %s loops", kiln_loop_kind_name(s->loop));
  if (enclosing(c, KILN_LOOP_PARALLEL) || enclosing(c, KILN_LOOP_VECTOR))
    return FAIL("a thread loop inside a parallel or vector loop");
  return KILN_OK;
}

kiln_status kiln_tverify_loop_kind(kiln_tverify *c, const kiln_tstmt *s) {
  if (s->extent->kind == KILN_TE_INT && s->extent->i < 0) return FAIL("negative loop extent");
  if ((is_block(s->loop) || is_thread(s->loop)) && s->extent->kind != KILN_TE_INT)
    return FAIL("the extent of a %s loop must be a constant", kiln_loop_kind_name(s->loop));
  switch (s->loop) {
  case KILN_LOOP_PARALLEL:
    if (c->gpu) return FAIL("a parallel loop in a GPU kernel");
    if (enclosing(c, KILN_LOOP_PARALLEL)) return FAIL("a parallel loop inside a parallel loop");
    return KILN_OK;
  case KILN_LOOP_VECTOR:
    if (!only_unrolled_loops(&s->body))
      return FAIL("a vector loop may contain only unrolled loops and no barrier");
    return KILN_OK;
  case KILN_LOOP_BLOCK_X:
  case KILN_LOOP_BLOCK_Y:
  case KILN_LOOP_BLOCK_Z: return check_block_loop(c, s);
  case KILN_LOOP_THREAD_X:
  case KILN_LOOP_THREAD_Y:
  case KILN_LOOP_THREAD_Z: return check_thread_loop(c, s);
  default: return KILN_OK;
  }
}

kiln_status kiln_tverify_barrier(kiln_tverify *c) {
  int first = -1, last = -1;
  for (int i = 0; i < c->depth; i++) {
    const kiln_tstmt *s = c->stack[i];
    if (s->kind != KILN_TS_FOR || !is_thread(s->loop)) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return FAIL("a barrier outside thread loops");
  for (int i = first; i < last; i++) {
    const kiln_tstmt *s = c->stack[i];
    if (s->kind != KILN_TS_FOR || !is_thread(s->loop) || s->body.len != 1 ||
        s->body.data[0] != c->stack[i + 1])
      return FAIL("a barrier in thread loops that are not perfectly nested");
  }
  for (int i = last + 1; i < c->depth; i++) {
    const kiln_tstmt *s = c->stack[i];
    if (s->kind == KILN_TS_FOR && s->loop != KILN_LOOP_SERIAL && s->loop != KILN_LOOP_UNROLL)
      return FAIL("a barrier inside a %s loop within a thread loop", kiln_loop_kind_name(s->loop));
  }
  return KILN_OK;
}
