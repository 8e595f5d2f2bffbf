/* GPU thread loops in the tile IR interpreter.
 *
 * Every thread of a thread loop starts from the same private state (variables and local
 * buffers as they were when the loop began) and works on its own copy; after the loop, the
 * variables and local buffers written in it read as never written (each thread had its
 * own). A thread loop without barriers runs its threads one after another. A thread loop
 * nest whose body contains barriers (a perfect nest: each loop's body is the next loop,
 * only the innermost has other statements) runs phase by phase: each thread runs until it
 * reaches a barrier or ends, then the next thread; all threads must wait at the same
 * barrier or all end, otherwise the kernel diverges and the call fails. Between the
 * innermost thread loop and a barrier there may be serial (or other non-GPU) loops and
 * conditionals, whose trip counts and conditions must then agree between threads. */
#include <stdlib.h>
#include <string.h>

#include "tile_interp.h"

bool kiln_tinterp_is_thread_loop(kiln_loop_kind k) {
  return k == KILN_LOOP_THREAD_X || k == KILN_LOOP_THREAD_Y || k == KILN_LOOP_THREAD_Z;
}

static bool block_has_barrier(const kiln_tblock *b);

static bool stmt_has_barrier(const kiln_tstmt *s) {
  switch (s->kind) {
  case KILN_TS_BARRIER: return true;
  case KILN_TS_FOR: return block_has_barrier(&s->body);
  case KILN_TS_IF: return block_has_barrier(&s->body) || block_has_barrier(&s->orelse);
  default: return false;
  }
}

static bool block_has_barrier(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++)
    if (stmt_has_barrier(b->data[i])) return true;
  return false;
}

/* After a thread loop: what its threads wrote to private state is per thread. */
static void forget_writes(kiln_tinterp *in, const kiln_tblock *b) {
  const kiln_tkernel *k = in->k;
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    int buf = s->kind == KILN_TS_STORE ? s->buf : s->kind == KILN_TS_MMA ? s->mma.c_buf : -1;
    if (buf >= 0 && k->bufs.data[buf].scope == KILN_SCOPE_LOCAL)
      memset(in->bufs[buf].init, 0, (size_t)k->bufs.data[buf].size);
    if (s->kind == KILN_TS_ASSIGN || s->kind == KILN_TS_FOR) in->vinit[s->var] = 0;
    if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) forget_writes(in, &s->body);
    if (s->kind == KILN_TS_IF) forget_writes(in, &s->orelse);
  }
}

static unsigned char *snapshot(const kiln_tinterp *in) {
  unsigned char *snap = kiln_xmalloc(in->priv_bytes + 1);
  memcpy(snap, in->priv, in->priv_bytes);
  return snap;
}

static void end_thread_loop(kiln_tinterp *in, const kiln_tstmt *s, unsigned char *snap) {
  memcpy(in->priv, snap, in->priv_bytes);
  in->vinit[s->var] = 0;
  forget_writes(in, &s->body);
  free(snap);
}

static kiln_status run_one_by_one(kiln_tinterp *in, const kiln_tstmt *s, int64_t n) {
  unsigned char *snap = snapshot(in);
  kiln_status st = KILN_OK;
  for (int64_t i = 0; i < n && !st; i++) {
    memcpy(in->priv, snap, in->priv_bytes);
    in->vars[s->var].i = i;
    in->vinit[s->var] = 1;
    st = kiln_tinterp_block(in, &s->body);
  }
  end_thread_loop(in, s, snap);
  return st;
}

/* ---- lockstep execution ---- */
typedef struct frame {
  const kiln_tblock *blk;
  int pc;
  const kiln_tstmt *loop; /* the FOR whose body blk is, or NULL */
  int64_t n;              /* its trip count */
} frame;

typedef struct thread {
  unsigned char *state; /* private state while another thread runs */
  KILN_VEC(frame) stack;
  bool done;
  const kiln_tstmt *at; /* the barrier it waits at */
} thread;

static void push(thread *th, const kiln_tblock *blk, const kiln_tstmt *loop, int64_t n) {
  frame f = {blk, 0, loop, n};
  kiln_vec_push(&th->stack, f);
}

/* Enters a loop or conditional that contains a barrier. */
static kiln_status enter(kiln_tinterp *in, thread *th, const kiln_tstmt *s) {
  kiln_tval v;
  if (s->kind == KILN_TS_IF) {
    KILN_TRY(kiln_tinterp_eval(in, s->cond, &v));
    push(th, v.u ? &s->body : &s->orelse, NULL, 0);
    return KILN_OK;
  }
  if (s->loop != KILN_LOOP_SERIAL && s->loop != KILN_LOOP_UNROLL)
    return kiln_tinterp_error(in, "barrier inside a %s loop within a thread loop",
                              kiln_loop_kind_name(s->loop));
  KILN_TRY(kiln_tinterp_eval(in, s->extent, &v));
  if (v.i <= 0) return KILN_OK;
  in->vars[s->var].i = 0;
  in->vinit[s->var] = 1;
  push(th, &s->body, s, v.i);
  return KILN_OK;
}

/* Runs the current thread (its state is in in->priv) to its next barrier or its end. */
static kiln_status run_to_barrier(kiln_tinterp *in, thread *th) {
  th->at = NULL;
  while (th->stack.len > 0) {
    frame *f = &th->stack.data[th->stack.len - 1];
    if (f->pc >= f->blk->len) {
      if (f->loop && in->vars[f->loop->var].i + 1 < f->n) {
        in->vars[f->loop->var].i++;
        f->pc = 0;
      } else {
        th->stack.len--;
      }
      continue;
    }
    const kiln_tstmt *s = f->blk->data[f->pc++];
    if (!stmt_has_barrier(s)) {
      KILN_TRY(kiln_tinterp_stmt(in, s));
      continue;
    }
    in->stmt = s;
    if (s->kind == KILN_TS_BARRIER) {
      th->at = s;
      return KILN_OK;
    }
    KILN_TRY(enter(in, th, s));
  }
  th->done = true;
  return KILN_OK;
}

typedef struct nest {
  const kiln_tstmt *loops[3];
  int64_t ext[3];
  int depth;
  int64_t threads;
} nest;

static kiln_status find_nest(kiln_tinterp *in, const kiln_tstmt *s, int64_t n, nest *out) {
  memset(out, 0, sizeof *out);
  out->loops[0] = s;
  out->ext[0] = n < 0 ? 0 : n;
  out->depth = 1;
  out->threads = out->ext[0];
  const kiln_tstmt *cur = s;
  while (cur->body.len == 1 && cur->body.data[0]->kind == KILN_TS_FOR &&
         kiln_tinterp_is_thread_loop(cur->body.data[0]->loop)) {
    cur = cur->body.data[0];
    if (out->depth == 3) return kiln_tinterp_error(in, "more than three nested thread loops");
    kiln_tval v;
    in->stmt = cur;
    KILN_TRY(kiln_tinterp_eval(in, cur->extent, &v));
    out->loops[out->depth] = cur;
    out->ext[out->depth] = v.i < 0 ? 0 : v.i;
    if (kiln_mul_overflow_i64(out->threads, out->ext[out->depth], &out->threads) ||
        out->threads > 65536)
      return kiln_tinterp_error(in, "more than 65536 threads in a block");
    out->depth++;
  }
  if (out->threads > 65536) return kiln_tinterp_error(in, "more than 65536 threads in a block");
  return KILN_OK;
}

/* One phase: every thread that has not ended runs to its next barrier. */
static kiln_status run_phase(kiln_tinterp *in, thread *ths, int64_t n, bool *all_done) {
  const kiln_tstmt *barrier = NULL;
  int64_t waiting = 0, done = 0;
  for (int64_t t = 0; t < n; t++) {
    thread *th = &ths[t];
    if (th->done) {
      done++;
      continue;
    }
    memcpy(in->priv, th->state, in->priv_bytes);
    KILN_TRY(run_to_barrier(in, th));
    memcpy(th->state, in->priv, in->priv_bytes);
    if (th->done) {
      done++;
    } else {
      if (barrier && th->at != barrier) {
        in->stmt = th->at;
        return kiln_tinterp_error(in, "threads wait at different barriers");
      }
      barrier = th->at;
      waiting++;
    }
  }
  if (waiting && done) {
    in->stmt = barrier;
    return kiln_tinterp_error(in, "%lld threads wait at a barrier that %lld others never reach",
                              (long long)waiting, (long long)done);
  }
  *all_done = waiting == 0;
  return KILN_OK;
}

static kiln_status run_lockstep(kiln_tinterp *in, const nest *ns, unsigned char *snap) {
  if (ns->threads > 0 && in->priv_bytes > ((size_t)1 << 30) / (size_t)ns->threads)
    return kiln_tinterp_error(in, "private state of the threads too large");
  thread *ths = kiln_xcalloc((size_t)ns->threads + 1, sizeof *ths);
  const kiln_tstmt *inner = ns->loops[ns->depth - 1];
  for (int64_t t = 0; t < ns->threads; t++) {
    memcpy(in->priv, snap, in->priv_bytes);
    for (int64_t d = ns->depth - 1, rest = t; d >= 0; d--) {
      in->vars[ns->loops[d]->var].i = rest % ns->ext[d];
      in->vinit[ns->loops[d]->var] = 1;
      rest /= ns->ext[d];
    }
    ths[t].state = kiln_xmalloc(in->priv_bytes + 1);
    memcpy(ths[t].state, in->priv, in->priv_bytes);
    push(&ths[t], &inner->body, NULL, 0);
  }
  kiln_status st = KILN_OK;
  for (bool done = ns->threads == 0; !done && !st;) st = run_phase(in, ths, ns->threads, &done);
  for (int64_t t = 0; t < ns->threads; t++) {
    free(ths[t].state);
    kiln_vec_free(&ths[t].stack);
  }
  free(ths);
  return st;
}

kiln_status kiln_tinterp_threads(kiln_tinterp *in, const kiln_tstmt *s, int64_t n) {
  if (!block_has_barrier(&s->body)) return run_one_by_one(in, s, n);
  nest ns;
  KILN_TRY(find_nest(in, s, n, &ns));
  unsigned char *snap = snapshot(in);
  kiln_status st = run_lockstep(in, &ns, snap);
  end_thread_loop(in, s, snap);
  return st;
}
