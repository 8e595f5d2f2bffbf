/* Tile IR interpreter: runs one kernel sequentially, with the semantics of the C code a
 * backend emits for it (see docs/TILE_IR.md, "Semantics"):
 * - F32 arithmetic in float (rounded after every operation, float libm functions), F64 in
 *   double; integers in their width, wrapping (computed in uint64, then truncated);
 * - every load and store is bounds-checked, and reads of shared or local memory and of
 *   variables that were never written are errors;
 * - loops of every kind run serially; GPU thread loops give each thread its own copy of
 *   the variables and local buffers, and a thread loop nest whose body contains barriers
 *   runs phase by phase (every thread runs up to the barrier before any goes on).
 * Scalar operations live in tile_scalar.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile_interp.h"

/* ---- diagnostics ---- */
kiln_status kiln_tinterp_error(const kiln_tinterp *in, const char *fmt, ...) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "kernel ");
  kiln_ttext_name(&b, '@', in->k->name);
  kiln_strbuf_printf(&b, ": ");
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (in->stmt) {
    kiln_strbuf_printf(&b, "\n  in: ");
    kiln_ttext_stmt_line(in->k, in->stmt, &b);
  }
  /* The loop variables in scope tell which iteration failed. */
  int shown = 0;
  for (int v = 0; v < in->k->vars.len && shown < 8; v++) {
    if (!in->vinit[v] || !in->is_loop_var[v]) continue;
    kiln_strbuf_printf(&b, shown ? ", " : "\n  at: ");
    kiln_ttext_name(&b, '$', in->k->vars.data[v].name);
    kiln_strbuf_printf(&b, "=%lld", (long long)in->vars[v].i);
    shown++;
  }
  kiln_status st = kiln_error(KILN_ERR_FAILED, "%s", b.data);
  kiln_strbuf_free(&b);
  return st;
}

/* ---- memory ---- */
static kiln_status check_index(const kiln_tinterp *in, int buf, int64_t idx, const char *what) {
  const kiln_tbuf *b = &in->k->bufs.data[buf];
  if (idx < 0 || idx >= b->size) {
    kiln_strbuf n = {0};
    kiln_ttext_name(&n, '%', b->name);
    kiln_status st = kiln_tinterp_error(in, "%s %s[%lld] out of bounds (size %lld)", what, n.data,
                                        (long long)idx, (long long)b->size);
    kiln_strbuf_free(&n);
    return st;
  }
  return KILN_OK;
}

kiln_status kiln_tinterp_load(kiln_tinterp *in, int buf, int64_t idx, kiln_tval *out) {
  KILN_TRY(check_index(in, buf, idx, "load"));
  const kiln_trtbuf *r = &in->bufs[buf];
  if (r->init && !r->init[idx]) {
    kiln_strbuf n = {0};
    kiln_ttext_name(&n, '%', in->k->bufs.data[buf].name);
    kiln_status st =
        kiln_tinterp_error(in, "load of %s[%lld], never written", n.data, (long long)idx);
    kiln_strbuf_free(&n);
    return st;
  }
  kiln_tscalar_read(in->k->bufs.data[buf].dtype, r->data + (size_t)idx * r->esize, out);
  return KILN_OK;
}

kiln_status kiln_tinterp_store(kiln_tinterp *in, int buf, int64_t idx, kiln_tval v) {
  KILN_TRY(check_index(in, buf, idx, "store to"));
  kiln_trtbuf *r = &in->bufs[buf];
  kiln_tscalar_write(in->k->bufs.data[buf].dtype, r->data + (size_t)idx * r->esize, v);
  if (r->init) r->init[idx] = 1;
  return KILN_OK;
}

/* ---- expressions ---- */
static kiln_status eval_op(kiln_tinterp *in, const kiln_texpr *e, kiln_tval *out) {
  kiln_tval a, b;
  if (e->op == KILN_TOP_SELECT) { /* only the chosen operand is evaluated, as C's ?: */
    KILN_TRY(kiln_tinterp_eval(in, e->args[0], &a));
    return kiln_tinterp_eval(in, e->args[a.u ? 1 : 2], out);
  }
  KILN_TRY(kiln_tinterp_eval(in, e->args[0], &a));
  if (e->op == KILN_TOP_MAC) {
    kiln_tval c;
    KILN_TRY(kiln_tinterp_eval(in, e->args[1], &b));
    KILN_TRY(kiln_tinterp_eval(in, e->args[2], &c));
    return kiln_tscalar_mac(e->args[1]->type, a, b, c, out);
  }
  if (kiln_top_arity(e->op) == 1) return kiln_tscalar_unary(in, e->op, e->args[0]->type, a, out);
  KILN_TRY(kiln_tinterp_eval(in, e->args[1], &b));
  return kiln_tscalar_binary(in, e->op, e->args[0]->type, a, b, out);
}

kiln_status kiln_tinterp_eval(kiln_tinterp *in, const kiln_texpr *e, kiln_tval *out) {
  kiln_tval idx;
  switch (e->kind) {
  case KILN_TE_INT: out->u = (uint64_t)e->i; return KILN_OK;
  case KILN_TE_FLOAT:
    memset(out, 0, sizeof *out);
    if (e->type == KILN_F32) out->f = (float)e->f;
    else if (e->type == KILN_F64) out->d = e->f;
    else kiln_store_f64(e->type, out->raw, 0, e->f); /* F16, BF16: exact (verified) */
    return KILN_OK;
  case KILN_TE_VAR:
    if (!in->vinit[e->var]) {
      kiln_strbuf n = {0};
      kiln_ttext_name(&n, '$', in->k->vars.data[e->var].name);
      kiln_status st = kiln_tinterp_error(in, "read of %s, never assigned", n.data);
      kiln_strbuf_free(&n);
      return st;
    }
    *out = in->vars[e->var];
    return KILN_OK;
  case KILN_TE_LOAD:
    KILN_TRY(kiln_tinterp_eval(in, e->index, &idx));
    return kiln_tinterp_load(in, e->buf, idx.i, out);
  case KILN_TE_OP: return eval_op(in, e, out);
  case KILN_TE_CAST: {
    kiln_tval a;
    KILN_TRY(kiln_tinterp_eval(in, e->args[0], &a));
    return kiln_tscalar_cast(in, e->args[0]->type, a, e->type, out);
  }
  default: return kiln_tinterp_error(in, "unknown expression kind");
  }
}

/* ---- statements ---- */
/* True when buf[off + i*s1 + j*s2] for i < n1, j < n2 is in bounds and initialized. */
static bool span_ready(const kiln_tinterp *in, int buf, int64_t off, int64_t n1, int64_t s1,
                       int64_t n2, int64_t s2) {
  int64_t t1, t2, lo = off, hi = off, size = in->k->bufs.data[buf].size;
  if (kiln_mul_overflow_i64(n1 - 1, s1, &t1) || kiln_mul_overflow_i64(n2 - 1, s2, &t2) ||
      kiln_add_overflow_i64(lo, (t1 < 0 ? t1 : 0) + (t2 < 0 ? t2 : 0), &lo) ||
      kiln_add_overflow_i64(hi, (t1 > 0 ? t1 : 0) + (t2 > 0 ? t2 : 0), &hi) || lo < 0 || hi >= size)
    return false;
  const uint8_t *init = in->bufs[buf].init;
  for (int64_t i = 0; init && i < n1; i++)
    for (int64_t j = 0; j < n2; j++)
      if (!init[off + i * s1 + j * s2]) return false;
  return true;
}

/* All-f32 MMA whose footprints are in bounds and initialized: the same operations as the
 * general path (one fused multiply-add per k, as the backends' microkernels do), without
 * the per-element dispatch. */
static bool mma_f32(kiln_tinterp *in, const kiln_tmma *m, int64_t co, int64_t ao, int64_t bo) {
  const kiln_tkernel *k = in->k;
  if (k->bufs.data[m->c_buf].dtype != KILN_F32 || k->bufs.data[m->a_buf].dtype != KILN_F32 ||
      k->bufs.data[m->b_buf].dtype != KILN_F32 ||
      !span_ready(in, m->c_buf, co, m->m, m->ldc, m->n, 1) ||
      !span_ready(in, m->a_buf, ao, m->m, m->a_sm, m->k, m->a_sk) ||
      !span_ready(in, m->b_buf, bo, m->k, m->b_sk, m->n, m->b_sn))
    return false;
  float *c = (float *)in->bufs[m->c_buf].data + co;
  const float *a = (const float *)in->bufs[m->a_buf].data + ao;
  const float *b = (const float *)in->bufs[m->b_buf].data + bo;
  for (int64_t i = 0; i < m->m; i++)
    for (int64_t j = 0; j < m->n; j++) {
      float acc = c[i * m->ldc + j];
      for (int64_t q = 0; q < m->k; q++) {
        acc = fmaf(a[i * m->a_sm + q * m->a_sk], b[q * m->b_sk + j * m->b_sn], acc);
      }
      c[i * m->ldc + j] = acc;
    }
  return true;
}

static kiln_status exec_mma(kiln_tinterp *in, const kiln_tmma *m) {
  kiln_tval co, ao, bo;
  KILN_TRY(kiln_tinterp_eval(in, m->c_off, &co));
  KILN_TRY(kiln_tinterp_eval(in, m->a_off, &ao));
  KILN_TRY(kiln_tinterp_eval(in, m->b_off, &bo));
  if (mma_f32(in, m, co.i, ao.i, bo.i)) return KILN_OK;
  const kiln_tkernel *k = in->k;
  kiln_dtype ct = k->bufs.data[m->c_buf].dtype, at = k->bufs.data[m->a_buf].dtype,
             bt = k->bufs.data[m->b_buf].dtype;
  for (int64_t i = 0; i < m->m; i++) {
    for (int64_t j = 0; j < m->n; j++) {
      /* Indices wrap like the i64 arithmetic of the emitted code; bounds catch the rest. */
      int64_t ci = (int64_t)((uint64_t)co.i + (uint64_t)i * (uint64_t)m->ldc + (uint64_t)j);
      kiln_tval acc, a, b, prod;
      KILN_TRY(kiln_tinterp_load(in, m->c_buf, ci, &acc));
      for (int64_t kk = 0; kk < m->k; kk++) {
        int64_t ai = (int64_t)((uint64_t)ao.i + (uint64_t)i * (uint64_t)m->a_sm +
                               (uint64_t)kk * (uint64_t)m->a_sk);
        int64_t bi = (int64_t)((uint64_t)bo.i + (uint64_t)kk * (uint64_t)m->b_sk +
                               (uint64_t)j * (uint64_t)m->b_sn);
        KILN_TRY(kiln_tinterp_load(in, m->a_buf, ai, &a));
        KILN_TRY(kiln_tinterp_load(in, m->b_buf, bi, &b));
        KILN_TRY(kiln_tscalar_cast(in, at, a, ct, &a));
        KILN_TRY(kiln_tscalar_cast(in, bt, b, ct, &b));
        if (ct == KILN_F32) {
          acc.f = fmaf(a.f, b.f, acc.f);
        } else if (ct == KILN_F64) {
          acc.d = fma(a.d, b.d, acc.d);
        } else {
          KILN_TRY(kiln_tscalar_binary(in, KILN_TOP_MUL, ct, a, b, &prod));
          KILN_TRY(kiln_tscalar_binary(in, KILN_TOP_ADD, ct, acc, prod, &acc));
        }
      }
      KILN_TRY(kiln_tinterp_store(in, m->c_buf, ci, acc));
    }
  }
  return KILN_OK;
}

static bool is_block_loop(kiln_loop_kind k) {
  return k == KILN_LOOP_BLOCK_X || k == KILN_LOOP_BLOCK_Y || k == KILN_LOOP_BLOCK_Z;
}

static bool block_has_block_loop(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR && (is_block_loop(s->loop) || block_has_block_loop(&s->body)))
      return true;
    if (s->kind == KILN_TS_IF &&
        (block_has_block_loop(&s->body) || block_has_block_loop(&s->orelse)))
      return true;
  }
  return false;
}

/* Shared memory of a new GPU block holds garbage: forget what earlier blocks wrote. */
static void reset_shared(kiln_tinterp *in) {
  for (int b = 0; b < in->k->bufs.len; b++)
    if (in->k->bufs.data[b].scope == KILN_SCOPE_SHARED && in->k->bufs.data[b].size > 0)
      memset(in->bufs[b].init, 0, (size_t)in->k->bufs.data[b].size);
}

/* A new iteration of a parallel loop (a thread of its own in C) starts with its private
 * local buffers and variables undefined: reading one before the iteration writes it fails. */
static void forget_private(kiln_tinterp *in) {
  const kiln_tkernel *k = in->k;
  for (int v = 0; v < k->vars.len; v++)
    if (!in->outside_var[v] && !in->is_loop_var[v]) in->vinit[v] = 0;
  for (int b = k->n_params; b < k->bufs.len; b++)
    if (!in->outside_buf[b] && k->bufs.data[b].scope == KILN_SCOPE_LOCAL &&
        k->bufs.data[b].size > 0)
      memset(in->bufs[b].init, 0, (size_t)k->bufs.data[b].size);
}

static kiln_status exec_for(kiln_tinterp *in, const kiln_tstmt *s) {
  kiln_tval n;
  KILN_TRY(kiln_tinterp_eval(in, s->extent, &n));
  if (kiln_tinterp_is_thread_loop(s->loop)) return kiln_tinterp_threads(in, s, n.i);
  bool new_block = is_block_loop(s->loop) && !block_has_block_loop(&s->body);
  for (int64_t i = 0; i < n.i; i++) {
    if (s->loop == KILN_LOOP_PARALLEL) forget_private(in);
    in->vars[s->var].i = i;
    in->vinit[s->var] = 1;
    if (new_block) reset_shared(in);
    KILN_TRY(kiln_tinterp_block(in, &s->body));
  }
  return KILN_OK;
}

kiln_status kiln_tinterp_stmt(kiln_tinterp *in, const kiln_tstmt *s) {
  kiln_tval a, b;
  in->stmt = s;
  switch (s->kind) {
  case KILN_TS_FOR: return exec_for(in, s);
  case KILN_TS_IF:
    KILN_TRY(kiln_tinterp_eval(in, s->cond, &a));
    return kiln_tinterp_block(in, a.u ? &s->body : &s->orelse);
  case KILN_TS_STORE:
    KILN_TRY(kiln_tinterp_eval(in, s->index, &a));
    KILN_TRY(kiln_tinterp_eval(in, s->value, &b));
    return kiln_tinterp_store(in, s->buf, a.i, b);
  case KILN_TS_ASSIGN:
    KILN_TRY(kiln_tinterp_eval(in, s->value, &a));
    in->vars[s->var] = a;
    in->vinit[s->var] = 1;
    return KILN_OK;
  case KILN_TS_BARRIER:
    return kiln_tinterp_error(in, "barrier outside the body of a GPU thread loop nest");
  case KILN_TS_MMA: return exec_mma(in, &s->mma);
  default: return kiln_tinterp_error(in, "unknown statement kind");
  }
}

kiln_status kiln_tinterp_block(kiln_tinterp *in, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) KILN_TRY(kiln_tinterp_stmt(in, b->data[i]));
  return KILN_OK;
}

/* ---- kernel calls ---- */
static void mark_loop_vars(kiln_tinterp *in, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR) in->is_loop_var[s->var] = 1;
    if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) mark_loop_vars(in, &s->body);
    if (s->kind == KILN_TS_IF) mark_loop_vars(in, &s->orelse);
  }
}

/* Lays out the private state (variables, their flags, local buffers and their flags) in
 * one block so that a thread's copy is one memcpy; shared buffers get their own. */
static kiln_status alloc_state(kiln_tinterp *in, void *const *args, const uint8_t *track) {
  const kiln_tkernel *k = in->k;
  size_t nv = (size_t)k->vars.len, total = nv * sizeof(kiln_tval) + nv, shared = 0;
  in->bufs = kiln_xcalloc((size_t)k->bufs.len + 1, sizeof *in->bufs);
  in->is_loop_var = kiln_xcalloc(nv + 1, 1);
  for (int i = 0; i < k->bufs.len; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    in->bufs[i].esize = kiln_dtype_size(b->dtype);
    if (i < k->n_params) {
      if (!args[i] && b->size > 0)
        return kiln_invalid("kernel %s: argument %d is NULL", k->name, i);
      in->bufs[i].data = args[i];
      if (track && (track[i] == KILN_TRACK_READS || track[i] == KILN_TRACK_OUTPUT) && b->size > 0) {
        in->bufs[i].init = calloc((size_t)b->size, 1);
        if (!in->bufs[i].init)
          return kiln_error(KILN_ERR_OOM, "kernel %s: out of memory for flags", k->name);
      }
      continue;
    }
    int64_t bytes;
    if (kiln_mul_overflow_i64(b->size, (int64_t)in->bufs[i].esize + 1, &bytes) ||
        bytes > ((int64_t)1 << 40))
      return kiln_error(KILN_ERR_OOM, "kernel %s: buffer %s too large", k->name, b->name);
    size_t *acc = b->scope == KILN_SCOPE_LOCAL ? &total : &shared;
    *acc = (*acc + 15) & ~(size_t)15;
    in->bufs[i].data = (unsigned char *)(uintptr_t)*acc; /* offset for now */
    *acc += (size_t)bytes;
  }
  in->priv_bytes = total;
  in->priv = calloc(total + 16, 1);
  in->shared = calloc(shared + 16, 1);
  if (!in->priv || !in->shared)
    return kiln_error(KILN_ERR_OOM, "kernel %s: out of memory for scratch buffers", k->name);
  in->vars = (kiln_tval *)in->priv;
  in->vinit = in->priv + nv * sizeof(kiln_tval);
  for (int i = k->n_params; i < k->bufs.len; i++) {
    unsigned char *base = k->bufs.data[i].scope == KILN_SCOPE_LOCAL ? in->priv : in->shared;
    in->bufs[i].data = base + (size_t)(uintptr_t)in->bufs[i].data;
    in->bufs[i].init = in->bufs[i].data + (size_t)k->bufs.data[i].size * in->bufs[i].esize;
  }
  mark_loop_vars(in, &k->body);
  in->outside_var = kiln_xcalloc(nv + 1, 1);
  in->outside_buf = kiln_xcalloc((size_t)k->bufs.len + 1, 1);
  kiln_tile_mark_outside_parallel(&k->body, in->outside_var, in->outside_buf);
  return KILN_OK;
}

static void free_state(kiln_tinterp *in) {
  for (int i = 0; in->bufs && i < in->k->n_params; i++) free(in->bufs[i].init);
  free(in->bufs);
  free(in->is_loop_var);
  free(in->outside_var);
  free(in->outside_buf);
  free(in->priv);
  free(in->shared);
}

/* After the kernel: every element of each KILN_TRACK_OUTPUT parameter was stored. */
static kiln_status check_outputs_written(const kiln_tinterp *in, const uint8_t *track) {
  const kiln_tkernel *k = in->k;
  for (int i = 0; track && i < k->n_params; i++) /* a raised error flag: outputs unused */
    if (track[i] == KILN_TRACK_FLAG && k->bufs.data[i].dtype == KILN_I32 &&
        k->bufs.data[i].size >= 1 && *(const int32_t *)in->bufs[i].data)
      return KILN_OK;
  for (int i = 0; track && i < k->n_params; i++) {
    if (track[i] != KILN_TRACK_OUTPUT || !in->bufs[i].init) continue;
    int64_t n = k->bufs.data[i].size, missing = 0, first = -1;
    for (int64_t j = 0; j < n; j++)
      if (!in->bufs[i].init[j]) missing++, first = first < 0 ? j : first;
    if (!missing) continue;
    kiln_strbuf b = {0};
    kiln_ttext_name(&b, '%', k->bufs.data[i].name);
    kiln_status st = kiln_invalid("%lld of the %lld elements of %s never written (the first: "
                                  "%lld)",
                                  (long long)missing, (long long)n, b.data, (long long)first);
    kiln_strbuf_free(&b);
    return st;
  }
  return KILN_OK;
}

kiln_status kiln_tkernel_interp_tracked(const kiln_tkernel *k, void *const *args,
                                        const uint8_t *track) {
  KILN_TRY(kiln_tkernel_check_types(k));
  kiln_tinterp in = {.k = k};
  kiln_status st = alloc_state(&in, args, track);
  if (!st) st = kiln_tinterp_block(&in, &k->body);
  if (!st) st = check_outputs_written(&in, track);
  free_state(&in);
  return st;
}

kiln_status kiln_tkernel_interp(const kiln_tkernel *k, void *const *args) {
  return kiln_tkernel_interp_tracked(k, args, NULL);
}
