/* Tile IR verifier: the type rules (tile_types.c), then names, loop kinds, the scope of
 * loop variables, barriers, the bounds of every buffer access, proved by interval
 * arithmetic (tile_bounds.c) from the loop extents and the enclosing conditions, and the
 * writes of parallel loops (tile_race.c: no two iterations write one element). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile_verify.h"

kiln_status kiln_tverify_fail(const kiln_tverify *c, const char *fmt, ...) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "kernel ");
  kiln_ttext_name(&b, '@', c->k->name);
  kiln_strbuf_printf(&b, ": ");
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (c->stmt) {
    kiln_strbuf_printf(&b, "\n  in: ");
    kiln_ttext_stmt_line(c->k, c->stmt, &b);
  }
  kiln_status st = kiln_invalid("%s", b.data);
  kiln_strbuf_free(&b);
  return st;
}

#define FAIL(...) kiln_tverify_fail(c, __VA_ARGS__)

static bool is_block(kiln_loop_kind k) {
  return k == KILN_LOOP_BLOCK_X || k == KILN_LOOP_BLOCK_Y || k == KILN_LOOP_BLOCK_Z;
}

static bool is_thread(kiln_loop_kind k) {
  return k == KILN_LOOP_THREAD_X || k == KILN_LOOP_THREAD_Y || k == KILN_LOOP_THREAD_Z;
}

/* ---- what a block writes (for the invalidation of facts) ---- */
static void collect_writes(const kiln_tblock *b, uint8_t *vars, uint8_t *bufs) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_ASSIGN) vars[s->var] = 1;
    if (s->kind == KILN_TS_STORE) bufs[s->buf] = 1;
    if (s->kind == KILN_TS_MMA) bufs[s->mma.c_buf] = 1;
    if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) collect_writes(&s->body, vars, bufs);
    if (s->kind == KILN_TS_IF) collect_writes(&s->orelse, vars, bufs);
  }
}

static bool expr_uses(const kiln_texpr *e, const uint8_t *vars, const uint8_t *bufs) {
  if (!e) return false;
  if (e->kind == KILN_TE_VAR) return vars && vars[e->var];
  if (e->kind == KILN_TE_LOAD) return (bufs && bufs[e->buf]) || expr_uses(e->index, vars, bufs);
  for (int i = 0; i < 3; i++)
    if (expr_uses(e->args[i], vars, bufs)) return true;
  return false;
}

/* Drops the facts that read what a statement or loop body may change. */
static void forget(kiln_tverify *c, const uint8_t *vars, const uint8_t *bufs) {
  for (int i = 0; i < c->facts.len; i++)
    if (expr_uses(c->facts.data[i].e, vars, bufs)) c->facts.data[i].dead = true;
}

static void forget_block_writes(kiln_tverify *c, const kiln_tblock *b) {
  memset(c->scratch_vars, 0, (size_t)c->k->vars.len + 1);
  memset(c->scratch_bufs, 0, (size_t)c->k->bufs.len + 1);
  collect_writes(b, c->scratch_vars, c->scratch_bufs);
  forget(c, c->scratch_vars, c->scratch_bufs);
}

/* ---- expressions: loop variable scope and the bounds of loads ---- */
static kiln_status check_index(kiln_tverify *c, int buf, const kiln_texpr *index) {
  const kiln_tbuf *b = &c->k->bufs.data[buf];
  kiln_tival r = kiln_tverify_range(c, index);
  if (c->unreachable || r.lo > r.hi || (r.lo >= 0 && r.hi < b->size)) return KILN_OK;
  kiln_strbuf t = {0};
  kiln_ttext_name(&t, '%', b->name);
  kiln_strbuf_append(&t, "[", 1);
  kiln_ttext_expr(c->k, index, &t);
  kiln_strbuf_append(&t, "]", 1);
  kiln_status st = FAIL("cannot prove %s in bounds: index in [%lld, %lld], size %lld", t.data,
                        (long long)r.lo, (long long)r.hi, (long long)b->size);
  kiln_strbuf_free(&t);
  return st;
}

static kiln_status check_expr(kiln_tverify *c, const kiln_texpr *e) {
  switch (e->kind) {
  case KILN_TE_VAR:
    if (c->is_loop_var[e->var] && !c->in_loop[e->var])
      return FAIL("$%s is read outside the loop that defines it", c->k->vars.data[e->var].name);
    return KILN_OK;
  case KILN_TE_LOAD: KILN_TRY(check_expr(c, e->index)); return check_index(c, e->buf, e->index);
  case KILN_TE_CAST: return check_expr(c, e->args[0]);
  case KILN_TE_OP:
    if (e->op == KILN_TOP_SELECT) { /* each operand under the condition that selects it */
      KILN_TRY(check_expr(c, e->args[0]));
      for (int arm = 1; arm <= 2; arm++) {
        int saved = c->facts.len;
        kiln_tverify_assume(c, e->args[0], arm == 1);
        kiln_status st = check_expr(c, e->args[arm]);
        c->facts.len = saved;
        KILN_TRY(st);
      }
      return KILN_OK;
    }
    for (int i = 0; i < kiln_top_arity(e->op); i++) KILN_TRY(check_expr(c, e->args[i]));
    return KILN_OK;
  default: return KILN_OK;
  }
}

/* ---- MMA footprint ---- */
static kiln_status check_span(kiln_tverify *c, int buf, const kiln_texpr *off, int64_t n1,
                              int64_t s1, int64_t n2, int64_t s2, const char *what) {
  KILN_TRY(check_expr(c, off));
  kiln_tival r = kiln_tverify_range(c, off);
  if (c->unreachable || r.lo > r.hi) return KILN_OK;
  int64_t t1, t2, lo = r.lo, hi = r.hi;
  bool ovf = kiln_mul_overflow_i64(n1 - 1, s1, &t1) || kiln_mul_overflow_i64(n2 - 1, s2, &t2);
  ovf = ovf || kiln_add_overflow_i64(lo, (t1 < 0 ? t1 : 0) + (t2 < 0 ? t2 : 0), &lo);
  ovf = ovf || kiln_add_overflow_i64(hi, (t1 > 0 ? t1 : 0) + (t2 > 0 ? t2 : 0), &hi);
  int64_t size = c->k->bufs.data[buf].size;
  if (!ovf && lo >= 0 && hi < size) return KILN_OK;
  return FAIL("cannot prove the mma footprint of %s (%%%s) in bounds: [%lld, %lld], size %lld",
              what, c->k->bufs.data[buf].name, (long long)lo, (long long)hi, (long long)size);
}

static kiln_status check_mma(kiln_tverify *c, const kiln_tmma *m) {
  KILN_TRY(check_span(c, m->c_buf, m->c_off, m->m, m->ldc, m->n, 1, "C"));
  /* the footprint around c_off (check_span proved that these products do not overflow) */
  int64_t rows = (m->m - 1) * m->ldc, cols = m->n - 1;
  kiln_tival span = {(rows < 0 ? rows : 0) + (cols < 0 ? cols : 0),
                     (rows > 0 ? rows : 0) + (cols > 0 ? cols : 0)};
  KILN_TRY(kiln_tverify_race_store(c, m->c_buf, m->c_off, span));
  KILN_TRY(check_span(c, m->a_buf, m->a_off, m->m, m->a_sm, m->k, m->a_sk, "A"));
  KILN_TRY(check_span(c, m->b_buf, m->b_off, m->k, m->b_sk, m->n, m->b_sn, "B"));
  memset(c->scratch_bufs, 0, (size_t)c->k->bufs.len + 1);
  c->scratch_bufs[m->c_buf] = 1;
  forget(c, NULL, c->scratch_bufs);
  return KILN_OK;
}

/* ---- statements ---- */
static kiln_status check_block(kiln_tverify *c, const kiln_tblock *b);

static kiln_status check_assign(kiln_tverify *c, const kiln_tstmt *s) {
  if (c->is_loop_var[s->var])
    return FAIL("assignment to the loop variable $%s", c->k->vars.data[s->var].name);
  KILN_TRY(check_expr(c, s->value));
  KILN_TRY(kiln_tverify_race_assign(c, s->var));
  kiln_tival r = c->k->vars.data[s->var].type == KILN_I64 ? kiln_tverify_range(c, s->value)
                                                          : (kiln_tival){INT64_MIN, INT64_MAX};
  memset(c->scratch_vars, 0, (size_t)c->k->vars.len + 1);
  c->scratch_vars[s->var] = 1;
  forget(c, c->scratch_vars, NULL);
  /* What the variable holds now (until it is assigned again). */
  if (r.lo != INT64_MIN || r.hi != INT64_MAX) kiln_tverify_fact(c, &c->var_exprs[s->var], r);
  return KILN_OK;
}

static kiln_status check_store(kiln_tverify *c, const kiln_tstmt *s) {
  KILN_TRY(check_expr(c, s->index));
  KILN_TRY(check_expr(c, s->value));
  KILN_TRY(check_index(c, s->buf, s->index));
  KILN_TRY(kiln_tverify_race_store(c, s->buf, s->index, (kiln_tival){0, 0}));
  memset(c->scratch_bufs, 0, (size_t)c->k->bufs.len + 1);
  c->scratch_bufs[s->buf] = 1;
  forget(c, NULL, c->scratch_bufs);
  return KILN_OK;
}

static kiln_status check_if(kiln_tverify *c, const kiln_tstmt *s) {
  KILN_TRY(check_expr(c, s->cond));
  for (int arm = 0; arm < 2; arm++) {
    const kiln_tblock *b = arm == 0 ? &s->body : &s->orelse;
    int saved = c->facts.len;
    kiln_tverify_assume(c, s->cond, arm == 0);
    c->stack[c->depth++] = s;
    kiln_status st = check_block(c, b);
    c->depth--;
    c->facts.len = saved;
    KILN_TRY(st);
    c->stmt = s;
  }
  forget_block_writes(c, &s->body); /* what the branches changed */
  forget_block_writes(c, &s->orelse);
  return KILN_OK;
}

static kiln_status check_for(kiln_tverify *c, const kiln_tstmt *s) {
  const kiln_tvar *v = &c->k->vars.data[s->var];
  if (c->in_loop[s->var]) return FAIL("$%s is the variable of an enclosing loop", v->name);
  KILN_TRY(check_expr(c, s->extent));
  KILN_TRY(kiln_tverify_loop_kind(c, s));
  memset(c->scratch_vars, 0, (size_t)c->k->vars.len + 1);
  memset(c->scratch_bufs, 0, (size_t)c->k->bufs.len + 1);
  collect_writes(&s->body, c->scratch_vars, c->scratch_bufs);
  if (expr_uses(s->extent, c->scratch_vars, NULL))
    return FAIL("the extent reads a variable that the loop body assigns");
  forget(c, c->scratch_vars, c->scratch_bufs); /* facts must hold on every iteration */
  kiln_tival ext = kiln_tverify_range(c, s->extent);
  kiln_tival saved_range = c->var_range[s->var];
  c->var_range[s->var] = (kiln_tival){0, ext.hi > 0 ? ext.hi - 1 : -1};
  const kiln_tstmt *saved_par = c->par;
  kiln_tverify_race_enter(c, s, ext);
  c->in_loop[s->var] = 1;
  c->stack[c->depth++] = s;
  int never = ext.hi <= 0; /* the body never runs: its accesses need no proof */
  c->unreachable += never;
  int saved_facts = c->facts.len; /* facts of the body may not hold if it never runs */
  kiln_status st = check_block(c, &s->body);
  c->facts.len = saved_facts;
  c->par = saved_par;
  c->unreachable -= never;
  c->depth--;
  c->in_loop[s->var] = 0;
  c->var_range[s->var] = saved_range;
  return st;
}

static kiln_status check_stmt(kiln_tverify *c, const kiln_tstmt *s) {
  c->stmt = s;
  switch (s->kind) {
  case KILN_TS_FOR: return check_for(c, s);
  case KILN_TS_IF: return check_if(c, s);
  case KILN_TS_STORE: return check_store(c, s);
  case KILN_TS_ASSIGN: return check_assign(c, s);
  case KILN_TS_BARRIER: /* other threads may have written shared memory */
    memset(c->scratch_bufs, 0, (size_t)c->k->bufs.len + 1);
    for (int b = 0; b < c->k->bufs.len; b++)
      c->scratch_bufs[b] = c->k->bufs.data[b].scope == KILN_SCOPE_SHARED;
    forget(c, NULL, c->scratch_bufs);
    return kiln_tverify_barrier(c);
  case KILN_TS_MMA: return check_mma(c, &s->mma);
  default: return KILN_OK;
  }
}

static kiln_status check_block(kiln_tverify *c, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) KILN_TRY(check_stmt(c, b->data[i]));
  return KILN_OK;
}

/* ---- declarations ---- */
static bool c_ident(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return false;
  return true;
}

static kiln_status check_names(kiln_tverify *c) {
  const kiln_tkernel *k = c->k;
  if (!c_ident(k->name)) return FAIL("the kernel name is not a C identifier");
  for (int i = 0; i < k->bufs.len; i++) {
    if (!k->bufs.data[i].name[0]) return FAIL("buffer %d has an empty name", i);
    for (int j = 0; j < i; j++)
      if (strcmp(k->bufs.data[i].name, k->bufs.data[j].name) == 0)
        return FAIL("two buffers named %%%s", k->bufs.data[i].name);
  }
  for (int i = 0; i < k->vars.len; i++) {
    if (!k->vars.data[i].name[0]) return FAIL("variable %d has an empty name", i);
    for (int j = 0; j < i; j++)
      if (strcmp(k->vars.data[i].name, k->vars.data[j].name) == 0)
        return FAIL("two variables named $%s", k->vars.data[i].name);
  }
  return KILN_OK;
}

static void mark_loops(kiln_tverify *c, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR) {
      c->is_loop_var[s->var] = 1;
      if (is_block(s->loop) || is_thread(s->loop)) c->gpu = true;
    }
    if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_IF) mark_loops(c, &s->body);
    if (s->kind == KILN_TS_IF) mark_loops(c, &s->orelse);
  }
}

kiln_status kiln_tkernel_verify(const kiln_tkernel *k) {
  KILN_TRY(kiln_tkernel_check_types(k));
  kiln_tverify c = {.k = k};
  KILN_TRY(check_names(&c));
  size_t nv = (size_t)k->vars.len + 1, nb = (size_t)k->bufs.len + 1;
  c.var_range = kiln_xcalloc(nv, sizeof *c.var_range);
  c.in_loop = kiln_xcalloc(nv, 1);
  c.is_loop_var = kiln_xcalloc(nv, 1);
  c.scratch_vars = kiln_xcalloc(nv, 1);
  c.scratch_bufs = kiln_xcalloc(nb, 1);
  c.var_exprs = kiln_xcalloc(nv, sizeof *c.var_exprs);
  for (int v = 0; v < k->vars.len; v++)
    c.var_exprs[v] = (kiln_texpr){.kind = KILN_TE_VAR, .type = k->vars.data[v].type, .var = v};
  mark_loops(&c, &k->body);
  kiln_tverify_race_init(&c);
  kiln_status st = check_block(&c, &k->body);
  free(c.var_range);
  free(c.in_loop);
  free(c.is_loop_var);
  free(c.scratch_vars);
  free(c.scratch_bufs);
  free(c.var_exprs);
  kiln_tverify_race_free(&c);
  kiln_vec_free(&c.facts);
  return st;
}

kiln_status kiln_tmodule_verify(const kiln_tmodule *m) {
  for (int i = 0; i < m->kernels.len; i++) {
    KILN_TRY(kiln_tkernel_verify(m->kernels.data[i]));
    for (int j = 0; j < i; j++)
      if (strcmp(m->kernels.data[i]->name, m->kernels.data[j]->name) == 0)
        return kiln_invalid("two kernels named @%s", m->kernels.data[i]->name);
  }
  return KILN_OK;
}
