/* Schedule transforms of the tile IR (see tile_sched.h): split, reorder, bind, vectorize,
 * unroll, stage, and the independence check that parallel kinds need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile_sched.h"

/* ---- finding loops and variables ---- */

static void find_in(const kiln_tblock *b, const kiln_tkernel *k, const char *var, kiln_tstmt **hit,
                    int *count) {
  for (int i = 0; i < b->len; i++) {
    kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR && !strcmp(k->vars.data[s->var].name, var)) {
      *hit = s;
      (*count)++;
    }
    find_in(&s->body, k, var, hit, count);
    find_in(&s->orelse, k, var, hit, count);
  }
}

kiln_tstmt *kiln_tsched_find(const kiln_tkernel *k, const char *var) {
  kiln_tstmt *hit = NULL;
  int count = 0;
  find_in(&k->body, k, var, &hit, &count);
  return count == 1 ? hit : NULL;
}

static int var_named(const kiln_tkernel *k, const char *name) {
  for (int i = 0; i < k->vars.len; i++)
    if (!strcmp(k->vars.data[i].name, name)) return i;
  return -1;
}

static int buf_named(const kiln_tkernel *k, const char *name) {
  for (int i = 0; i < k->bufs.len; i++)
    if (!strcmp(k->bufs.data[i].name, name)) return i;
  return -1;
}

static const char *loop_name(const kiln_tkernel *k, const kiln_tstmt *loop) {
  return k->vars.data[loop->var].name;
}

/* ---- substitution ---- */

kiln_texpr *kiln_tsched_subst(kiln_tkernel *k, kiln_texpr *e, int v, kiln_texpr *r) {
  if (!e) return NULL;
  if (e->kind == KILN_TE_VAR) return e->var == v ? r : e;
  kiln_texpr *idx = kiln_tsched_subst(k, e->index, v, r), *args[3];
  bool changed = idx != e->index;
  for (int i = 0; i < 3; i++) {
    args[i] = kiln_tsched_subst(k, e->args[i], v, r);
    changed |= args[i] != e->args[i];
  }
  if (!changed) return e;
  kiln_texpr *c = kiln_arena_alloc(k->module->arena, sizeof *c);
  *c = *e;
  c->index = idx;
  memcpy(c->args, args, sizeof args);
  return c;
}

void kiln_tsched_subst_block(kiln_tkernel *k, kiln_tblock *b, int v, kiln_texpr *r) {
  for (int i = 0; i < b->len; i++) {
    kiln_tstmt *s = b->data[i];
    s->extent = kiln_tsched_subst(k, s->extent, v, r);
    s->cond = kiln_tsched_subst(k, s->cond, v, r);
    s->index = kiln_tsched_subst(k, s->index, v, r);
    s->value = kiln_tsched_subst(k, s->value, v, r);
    s->mma.c_off = kiln_tsched_subst(k, s->mma.c_off, v, r);
    s->mma.a_off = kiln_tsched_subst(k, s->mma.a_off, v, r);
    s->mma.b_off = kiln_tsched_subst(k, s->mma.b_off, v, r);
    kiln_tsched_subst_block(k, &s->body, v, r);
    kiln_tsched_subst_block(k, &s->orelse, v, r);
  }
}

/* ---- independence ---- */

/* Kinds whose loops already promise independent iterations (set by a lowering that knows,
 * or by an earlier checked bind). */
static bool promised(kiln_loop_kind kind) {
  return kind != KILN_LOOP_SERIAL && kind != KILN_LOOP_UNROLL;
}

static bool expr_reads_var(const kiln_texpr *e, int v) {
  if (!e) return false;
  if (e->kind == KILN_TE_VAR) return e->var == v;
  if (expr_reads_var(e->index, v)) return true;
  for (int i = 0; i < 3; i++)
    if (expr_reads_var(e->args[i], v)) return true;
  return false;
}

/* buf -2: any buffer */
static bool expr_reads_buf(const kiln_texpr *e, int buf) {
  if (!e) return false;
  if (e->kind == KILN_TE_LOAD && (e->buf == buf || buf == -2)) return true;
  if (expr_reads_buf(e->index, buf)) return true;
  for (int i = 0; i < 3; i++)
    if (expr_reads_buf(e->args[i], buf)) return true;
  return false;
}

/* Every expression of statement s (not of its blocks). */
static int stmt_exprs(const kiln_tstmt *s, const kiln_texpr **out) {
  const kiln_texpr *all[] = {s->extent,    s->cond,      s->index,    s->value,
                             s->mma.c_off, s->mma.a_off, s->mma.b_off};
  int n = 0;
  for (int i = 0; i < 7; i++)
    if (all[i]) out[n++] = all[i];
  return n;
}

/* Whether variable v (as operand or target) or buffer buf (>= 0) appears in b, skipping the
 * statement `skip`. */
static bool block_uses(const kiln_tblock *b, const kiln_tstmt *skip, int v, int buf) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s == skip) continue;
    const kiln_texpr *es[7];
    int n = stmt_exprs(s, es);
    for (int j = 0; j < n; j++)
      if ((v >= 0 && expr_reads_var(es[j], v)) || (buf >= 0 && expr_reads_buf(es[j], buf)))
        return true;
    if (v >= 0 && (s->kind == KILN_TS_ASSIGN || s->kind == KILN_TS_FOR) && s->var == v) return true;
    if (buf >= 0 && s->kind == KILN_TS_STORE && s->buf == buf) return true;
    if (buf >= 0 && s->kind == KILN_TS_MMA &&
        (s->mma.c_buf == buf || s->mma.a_buf == buf || s->mma.b_buf == buf))
      return true;
    if (block_uses(&s->body, skip, v, buf) || block_uses(&s->orelse, skip, v, buf)) return true;
  }
  return false;
}

typedef struct indep {
  const kiln_tkernel *k;
  const kiln_tstmt *loop;
  kiln_tsched_mode mode;
  int64_t *inner_ext;                  /* per variable: extent of a loop inside, 0 none, -1 not
                                          constant */
  bool *defined;                       /* per variable: set before this point of the iteration */
  bool *assigned;                      /* per variable: an ASSIGN target inside the loop */
  const char *why;                     /* the first reason found */
  KILN_VEC(const kiln_tstmt *) stores; /* STORE and MMA statements inside the loop */
} indep;

static void collect(indep *c, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_ASSIGN) c->assigned[s->var] = true;
    if (s->kind == KILN_TS_FOR)
      c->inner_ext[s->var] =
          s->extent->kind == KILN_TE_INT && !c->inner_ext[s->var] ? s->extent->i : -1;
    if (s->kind == KILN_TS_STORE || s->kind == KILN_TS_MMA) kiln_vec_push(&c->stores, s);
    collect(c, &s->body);
    collect(c, &s->orelse);
  }
}

static void why_var(indep *c, int v, const char *what) {
  if (c->why) return;
  c->why =
      kiln_arena_printf(c->k->module->arena, "variable '%s' %s", c->k->vars.data[v].name, what);
}

static void check_reads(indep *c, const kiln_texpr *e) {
  if (!e) return;
  if (e->kind == KILN_TE_VAR && c->assigned[e->var] && !c->defined[e->var])
    why_var(c, e->var, "is read before it is set in an iteration");
  check_reads(c, e->index);
  for (int i = 0; i < 3; i++) check_reads(c, e->args[i]);
}

/* Variables set inside nested blocks count as set only inside them. */
static void walk_defs(indep *c, const kiln_tblock *b) {
  int nv = c->k->vars.len;
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    const kiln_texpr *es[7];
    int n = stmt_exprs(s, es);
    for (int j = 0; j < n; j++) check_reads(c, es[j]);
    if (s->kind == KILN_TS_ASSIGN) c->defined[s->var] = true;
    if (!s->body.len && !s->orelse.len) continue;
    bool *saved = kiln_arena_alloc(c->k->module->arena, (size_t)nv * sizeof *saved + 1);
    memcpy(saved, c->defined, (size_t)nv * sizeof *saved);
    if (s->kind == KILN_TS_FOR) c->defined[s->var] = true;
    walk_defs(c, &s->body);
    memcpy(c->defined, saved, (size_t)nv * sizeof *saved);
    walk_defs(c, &s->orelse);
    memcpy(c->defined, saved, (size_t)nv * sizeof *saved);
  }
}

static bool expr_equal(const kiln_texpr *a, const kiln_texpr *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type) return false;
  switch (a->kind) {
  case KILN_TE_INT: return a->i == b->i;
  case KILN_TE_FLOAT: return !memcmp(&a->f, &b->f, sizeof a->f);
  case KILN_TE_VAR: return a->var == b->var;
  case KILN_TE_LOAD: return a->buf == b->buf && expr_equal(a->index, b->index);
  default:
    if (a->op != b->op) return false;
    for (int i = 0; i < 3; i++)
      if (!expr_equal(a->args[i], b->args[i])) return false;
    return true;
  }
}

/* Whether a load of buf at index idx reads what this iteration writes there: a STORE to buf
 * with the same index expression. */
static bool stored_alike(const indep *c, int buf, const kiln_texpr *idx) {
  for (int i = 0; i < c->stores.len; i++) {
    const kiln_tstmt *s = c->stores.data[i];
    if (s->kind == KILN_TS_STORE && s->buf == buf && expr_equal(s->index, idx)) return true;
  }
  return false;
}

static void check_loads(indep *c, const kiln_texpr *e, int buf) {
  if (!e || c->why) return;
  if (e->kind == KILN_TE_LOAD && e->buf == buf && !stored_alike(c, buf, e->index))
    c->why = kiln_arena_printf(c->k->module->arena,
                               "buffer '%s' is read at an index it is not written at",
                               c->k->bufs.data[buf].name);
  check_loads(c, e->index, buf);
  for (int i = 0; i < 3; i++) check_loads(c, e->args[i], buf);
}

static void check_loads_block(indep *c, const kiln_tblock *b, int buf) {
  for (int i = 0; i < b->len && !c->why; i++) {
    const kiln_tstmt *s = b->data[i];
    const kiln_texpr *es[7];
    int n = stmt_exprs(s, es);
    for (int j = 0; j < n; j++) check_loads(c, es[j], buf);
    if (s->kind == KILN_TS_MMA &&
        (s->mma.c_buf == buf || s->mma.a_buf == buf || s->mma.b_buf == buf))
      c->why =
          kiln_arena_printf(c->k->module->arena, "buffer '%s' is accumulated by a matrix product",
                            c->k->bufs.data[buf].name);
    check_loads_block(c, &s->body, buf);
    check_loads_block(c, &s->orelse, buf);
  }
}

static bool written(const indep *c, int buf) {
  for (int i = 0; i < c->stores.len; i++) {
    const kiln_tstmt *s = c->stores.data[i];
    if ((s->kind == KILN_TS_STORE && s->buf == buf) ||
        (s->kind == KILN_TS_MMA && s->mma.c_buf == buf))
      return true;
  }
  return false;
}

static void check_vars(indep *c) {
  for (int v = 0; v < c->k->vars.len && !c->why; v++)
    if (c->assigned[v] && block_uses(&c->k->body, c->loop, v, -1))
      why_var(c, v, "is used outside the loop");
  if (!c->why) walk_defs(c, &c->loop->body);
}

/* Whether e reads nothing that changes while the loop runs (its variable, variables set or
 * looped over inside it, any buffer). */
static bool invariant(const indep *c, const kiln_texpr *e) {
  if (expr_reads_var(e, c->loop->var) || expr_reads_buf(e, -2)) return false;
  for (int w = 0; w < c->k->vars.len; w++)
    if ((c->inner_ext[w] || c->assigned[w]) && expr_reads_var(e, w)) return false;
  return true;
}

/* Adds scale * e to the linear form coef[] (per variable); false when e is not a sum of
 * constants multiples of variables and invariant terms, or a coefficient overflows. */
static bool linear(const indep *c, const kiln_texpr *e, int64_t scale, int64_t *coef) {
  if (invariant(c, e)) return true;
  if (e->kind == KILN_TE_VAR) return !__builtin_add_overflow(coef[e->var], scale, &coef[e->var]);
  if (e->kind != KILN_TE_OP) return false;
  if (e->op == KILN_TOP_ADD)
    return linear(c, e->args[0], scale, coef) && linear(c, e->args[1], scale, coef);
  if (e->op == KILN_TOP_MUL && e->args[1]->kind == KILN_TE_INT) {
    int64_t s2;
    return !__builtin_mul_overflow(scale, e->args[1]->i, &s2) && linear(c, e->args[0], s2, coef);
  }
  return false;
}

/* Whether a store at index e writes a different element on each iteration: e is c * v (v the
 * loop's variable, c != 0) plus multiples of the variables of loops inside, spanning less
 * than |c| over their extents, plus terms that do not change while the loop runs. */
static bool injective(indep *c, const kiln_texpr *e) {
  int nv = c->k->vars.len;
  int64_t *coef = kiln_arena_calloc(c->k->module->arena, (size_t)nv + 1, sizeof *coef);
  if (!linear(c, e, 1, coef)) return false;
  int64_t cv = coef[c->loop->var], span = 0;
  if (cv == 0 || cv == INT64_MIN) return false;
  for (int w = 0; w < nv; w++) {
    if (w == c->loop->var || !coef[w]) continue;
    if (c->inner_ext[w] <= 0 || coef[w] == INT64_MIN) return false;
    int64_t a = coef[w] < 0 ? -coef[w] : coef[w], sp;
    if (__builtin_mul_overflow(a, c->inner_ext[w] - 1, &sp) ||
        __builtin_add_overflow(span, sp, &span))
      return false;
  }
  return span < (cv < 0 ? -cv : cv);
}

static void check_stores(indep *c) {
  for (int i = 0; i < c->stores.len && !c->why; i++) {
    const kiln_tstmt *s = c->stores.data[i];
    if (s->kind == KILN_TS_MMA || !injective(c, s->index))
      c->why = kiln_arena_printf(
          c->k->module->arena, "buffer '%s' may be written at one element by two iterations",
          c->k->bufs.data[s->kind == KILN_TS_MMA ? s->mma.c_buf : s->buf].name);
  }
}

static void check_bufs(indep *c) {
  for (int b = 0; b < c->k->bufs.len && !c->why; b++) {
    if (!written(c, b)) continue;
    bool private_ = c->mode == KILN_TSCHED_THREADS &&
                    c->k->bufs.data[b].scope == KILN_SCOPE_LOCAL &&
                    !block_uses(&c->k->body, c->loop, -1, b);
    if (!private_) check_loads_block(c, &c->loop->body, b);
  }
  if (!c->why && c->mode == KILN_TSCHED_LANES) check_stores(c);
}

bool kiln_tsched_independent(const kiln_tkernel *k, const kiln_tstmt *loop, kiln_tsched_mode mode,
                             const char **why) {
  kiln_arena *ar = k->module->arena;
  size_t nv = (size_t)k->vars.len + 1;
  indep c = {k,
             loop,
             mode,
             kiln_arena_calloc(ar, nv, sizeof(int64_t)),
             kiln_arena_calloc(ar, nv, sizeof(bool)),
             kiln_arena_calloc(ar, nv, 1),
             NULL,
             {0}};
  collect(&c, &loop->body);
  check_vars(&c);
  if (!c.why) check_bufs(&c);
  kiln_vec_free(&c.stores);
  if (why) *why = c.why;
  return c.why == NULL;
}

static kiln_status need_independent(const kiln_tkernel *k, const kiln_tstmt *loop,
                                    kiln_tsched_mode mode, const char *what) {
  const char *why;
  if (promised(loop->loop) || kiln_tsched_independent(k, loop, mode, &why)) return KILN_OK;
  return kiln_invalid("%s loop '%s': its iterations are not independent (%s)", what,
                      loop_name(k, loop), why);
}

/* The mode a kind's iterations run in: CPU threads with private scratch (the verifier's race
 * check then proves their writes disjoint), or lanes and GPU threads. */
static kiln_tsched_mode mode_of(kiln_loop_kind kind) {
  return kind == KILN_LOOP_PARALLEL ? KILN_TSCHED_THREADS : KILN_TSCHED_LANES;
}

/* Reorder: the outer loop carries nothing. Its writes are disjoint across iterations when the
 * lanes rule proves it, or the verifier's race check does with the loop made parallel for a
 * moment (not possible inside a parallel loop or a GPU kernel: the lanes rule alone then). */
static kiln_status reorder_ok(kiln_tkernel *k, kiln_tstmt *loop) {
  const char *why;
  if (promised(loop->loop) || kiln_tsched_independent(k, loop, KILN_TSCHED_LANES, &why))
    return KILN_OK;
  const char *why_reads;
  if (!kiln_tsched_independent(k, loop, KILN_TSCHED_SERIAL_WRITES, &why_reads))
    return kiln_invalid("reorder loop '%s': its iterations are not independent (%s)",
                        loop_name(k, loop), why_reads);
  kiln_loop_kind kind = loop->loop;
  loop->loop = KILN_LOOP_PARALLEL;
  kiln_status st = kiln_tkernel_verify(k);
  loop->loop = kind;
  if (!st) return KILN_OK;
  kiln_status_free(st);
  return kiln_invalid("reorder loop '%s': its iterations are not independent (%s)",
                      loop_name(k, loop), why);
}

/* ---- the transforms ---- */

static kiln_status const_extent(const kiln_tkernel *k, const kiln_tstmt *loop, const char *what,
                                int64_t *e) {
  if (!loop || loop->kind != KILN_TS_FOR) return kiln_invalid("%s: not a loop", what);
  if (!loop->extent || loop->extent->kind != KILN_TE_INT || loop->extent->i < 1)
    return kiln_invalid("%s loop '%s': its extent is not a constant >= 1", what,
                        loop_name(k, loop));
  *e = loop->extent->i;
  return KILN_OK;
}

static kiln_status new_var(kiln_tkernel *k, const char *name, int *out) {
  if (!name || !*name || var_named(k, name) >= 0)
    return kiln_invalid("split: variable name '%s' is taken", name ? name : "");
  *out = kiln_tkernel_var(k, name, KILN_I64);
  return KILN_OK;
}

static kiln_texpr *split_index(kiln_tkernel *k, int vo, int vi, int64_t t) {
  return kiln_tadd(k, kiln_tmul(k, kiln_tv(k, vo), t), kiln_tv(k, vi));
}

kiln_status kiln_tsched_split(kiln_tkernel *k, kiln_tstmt *loop, int64_t f, const char *outer,
                              const char *inner, kiln_loop_kind inner_kind, bool clamp,
                              kiln_tstmt **out_inner) {
  int64_t e;
  KILN_TRY(const_extent(k, loop, "split", &e));
  if (f < 1)
    return kiln_invalid("split loop '%s': factor %lld < 1", loop_name(k, loop), (long long)f);
  if (promised(inner_kind)) KILN_TRY(need_independent(k, loop, mode_of(inner_kind), "split"));
  if (!inner || !outer || !strcmp(inner, outer))
    return kiln_invalid("split loop '%s': the two loops need two names", loop_name(k, loop));
  if (var_named(k, outer) >= 0 || var_named(k, inner) >= 0)
    return kiln_invalid("split loop '%s': variable name '%s' or '%s' is taken", loop_name(k, loop),
                        outer, inner);
  int64_t t = e < f ? e : f, nb = (e + t - 1) / t;
  int vo, vi;
  KILN_TRY(new_var(k, outer, &vo));
  KILN_TRY(new_var(k, inner, &vi));
  kiln_texpr *at = split_index(k, vo, vi, t);
  if (clamp && nb * t != e) at = kiln_tbin(k, KILN_TOP_MIN, at, kiln_tint(k, e - 1));
  kiln_tsched_subst_block(k, &loop->body, loop->var, at);
  kiln_tstmt *in = kiln_tfor(k, vi, kiln_tint(k, t), inner_kind);
  if (nb * t == e) {
    in->body = loop->body;
  } else {
    kiln_tstmt *g =
        kiln_tif(k, kiln_tbin(k, KILN_TOP_LT, split_index(k, vo, vi, t), kiln_tint(k, e)));
    g->body = loop->body;
    kiln_tblock_push(k, &in->body, g);
  }
  loop->var = vo;
  loop->extent = kiln_tint(k, nb);
  loop->body = (kiln_tblock){0};
  kiln_tblock_push(k, &loop->body, in);
  if (out_inner) *out_inner = in;
  return KILN_OK;
}

kiln_status kiln_tsched_reorder(kiln_tkernel *k, kiln_tstmt *loop) {
  if (!loop || loop->kind != KILN_TS_FOR) return kiln_invalid("reorder: not a loop");
  if (loop->body.len != 1 || loop->body.data[0]->kind != KILN_TS_FOR)
    return kiln_invalid("reorder loop '%s': its body is not exactly one loop", loop_name(k, loop));
  kiln_tstmt *in = loop->body.data[0];
  if (expr_reads_var(in->extent, loop->var))
    return kiln_invalid("reorder loop '%s': the inner extent depends on it", loop_name(k, loop));
  KILN_TRY(reorder_ok(k, loop));
  int var = loop->var;
  kiln_texpr *ext = loop->extent;
  kiln_loop_kind kind = loop->loop;
  loop->var = in->var;
  loop->extent = in->extent;
  loop->loop = in->loop;
  in->var = var;
  in->extent = ext;
  in->loop = kind;
  return KILN_OK;
}

static bool has_loop(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR || has_loop(&s->body) || has_loop(&s->orelse)) return true;
  }
  return false;
}

kiln_status kiln_tsched_bind(kiln_tkernel *k, kiln_tstmt *loop, kiln_loop_kind kind) {
  if (!loop || loop->kind != KILN_TS_FOR) return kiln_invalid("bind: not a loop");
  if (kind < 0 || kind >= KILN_LOOP_KIND_COUNT) return kiln_invalid("bind: unknown loop kind");
  if (promised(kind) && kind != loop->loop) {
    char what[64];
    snprintf(what, sizeof what, "bind %s:", kiln_loop_kind_name(kind));
    KILN_TRY(need_independent(k, loop, mode_of(kind), what));
  }
  if (kind == KILN_LOOP_UNROLL) {
    int64_t e;
    KILN_TRY(const_extent(k, loop, "unroll", &e));
  }
  loop->loop = kind;
  return KILN_OK;
}

kiln_status kiln_tsched_vectorize(kiln_tkernel *k, kiln_tstmt *loop) {
  if (!loop || loop->kind != KILN_TS_FOR) return kiln_invalid("vectorize: not a loop");
  if (has_loop(&loop->body))
    return kiln_invalid("vectorize loop '%s': it is not innermost", loop_name(k, loop));
  return kiln_tsched_bind(k, loop, KILN_LOOP_VECTOR);
}

kiln_status kiln_tsched_unroll(kiln_tkernel *k, kiln_tstmt *loop) {
  return kiln_tsched_bind(k, loop, KILN_LOOP_UNROLL);
}

/* ---- stage ---- */

static kiln_texpr *rebuf(kiln_tkernel *k, kiln_texpr *e, int from, int to) {
  if (!e) return NULL;
  kiln_texpr *idx = rebuf(k, e->index, from, to), *args[3];
  bool changed = idx != e->index || (e->kind == KILN_TE_LOAD && e->buf == from);
  for (int i = 0; i < 3; i++) {
    args[i] = rebuf(k, e->args[i], from, to);
    changed |= args[i] != e->args[i];
  }
  if (!changed) return e;
  kiln_texpr *c = kiln_arena_alloc(k->module->arena, sizeof *c);
  *c = *e;
  c->index = idx;
  if (c->kind == KILN_TE_LOAD && c->buf == from) c->buf = to;
  memcpy(c->args, args, sizeof args);
  return c;
}

static void rebuf_block(kiln_tkernel *k, kiln_tblock *b, int from, int to) {
  for (int i = 0; i < b->len; i++) {
    kiln_tstmt *s = b->data[i];
    s->extent = rebuf(k, s->extent, from, to);
    s->cond = rebuf(k, s->cond, from, to);
    s->index = rebuf(k, s->index, from, to);
    s->value = rebuf(k, s->value, from, to);
    s->mma.c_off = rebuf(k, s->mma.c_off, from, to);
    s->mma.a_off = rebuf(k, s->mma.a_off, from, to);
    s->mma.b_off = rebuf(k, s->mma.b_off, from, to);
    if (s->kind == KILN_TS_MMA && s->mma.a_buf == from) s->mma.a_buf = to;
    if (s->kind == KILN_TS_MMA && s->mma.b_buf == from) s->mma.b_buf = to;
    rebuf_block(k, &s->body, from, to);
    rebuf_block(k, &s->orelse, from, to);
  }
}

static bool stores_to(const kiln_tblock *b, int buf) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_STORE && s->buf == buf) return true;
    if (s->kind == KILN_TS_MMA && s->mma.c_buf == buf) return true;
    if (stores_to(&s->body, buf) || stores_to(&s->orelse, buf)) return true;
  }
  return false;
}

static kiln_status stage_check(const kiln_tkernel *k, const kiln_tstmt *loop, int buf,
                               kiln_tscope scope) {
  if (!loop || loop->kind != KILN_TS_FOR) return kiln_invalid("stage: not a loop");
  const char *ln = loop_name(k, loop);
  if (buf < 0 || buf >= k->bufs.len) return kiln_invalid("stage loop '%s': no such buffer", ln);
  const kiln_tbuf *b = &k->bufs.data[buf];
  if (scope != KILN_SCOPE_LOCAL && scope != KILN_SCOPE_SHARED)
    return kiln_invalid("stage loop '%s': a buffer is staged into local or shared", ln);
  if (b->scope != KILN_SCOPE_GLOBAL)
    return kiln_invalid("stage loop '%s': buffer '%s' is not a parameter", ln, b->name);
  if (b->size > KILN_TSCHED_STAGE_MAX)
    return kiln_invalid("stage loop '%s': buffer '%s' has %lld elements (at most %d)", ln, b->name,
                        (long long)b->size, KILN_TSCHED_STAGE_MAX);
  if (stores_to(&loop->body, buf))
    return kiln_invalid("stage loop '%s': buffer '%s' is written inside it", ln, b->name);
  if (!block_uses(&loop->body, NULL, -1, buf))
    return kiln_invalid("stage loop '%s': buffer '%s' is not read inside it", ln, b->name);
  return KILN_OK;
}

kiln_status kiln_tsched_stage(kiln_tkernel *k, kiln_tstmt *loop, int buf, kiln_tscope scope,
                              int *out_buf) {
  KILN_TRY(stage_check(k, loop, buf, scope));
  const kiln_tbuf b = k->bufs.data[buf];
  char name[160];
  snprintf(name, sizeof name, "%.120s_%s", b.name, kiln_tscope_name(scope));
  if (buf_named(k, name) >= 0 || var_named(k, name) >= 0)
    return kiln_invalid("stage loop '%s': name '%s' is taken", loop_name(k, loop), name);
  int nb = kiln_tkernel_buf(k, name, b.dtype, scope, b.size);
  int v = kiln_tkernel_var(k, name, KILN_I64);
  rebuf_block(k, &loop->body, buf, nb);
  kiln_tstmt *copy = kiln_tfor(k, v, kiln_tint(k, b.size), KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &copy->body,
                   kiln_tstore(k, nb, kiln_tv(k, v), kiln_tload(k, buf, kiln_tv(k, v))));
  kiln_tblock body = {0};
  kiln_tblock_push(k, &body, copy);
  for (int i = 0; i < loop->body.len; i++) kiln_tblock_push(k, &body, loop->body.data[i]);
  loop->body = body;
  if (out_buf) *out_buf = nb;
  return KILN_OK;
}

/* ---- tensorize ---- */

/* Whether e is affine in variable v with a constant coefficient (*coef); false when v
 * appears under anything but +, -, negation and multiplication by a constant. */
static bool affine_in(const kiln_texpr *e, int v, int64_t *coef) {
  *coef = 0;
  if (!expr_reads_var(e, v)) return true;
  if (e->kind == KILN_TE_VAR) {
    *coef = 1;
    return true;
  }
  if (e->kind != KILN_TE_OP) return false;
  int64_t a, b;
  switch (e->op) {
  case KILN_TOP_ADD:
  case KILN_TOP_SUB:
    if (!affine_in(e->args[0], v, &a) || !affine_in(e->args[1], v, &b)) return false;
    *coef =
        (int64_t)(e->op == KILN_TOP_ADD ? (uint64_t)a + (uint64_t)b : (uint64_t)a - (uint64_t)b);
    return true;
  case KILN_TOP_NEG:
    if (!affine_in(e->args[0], v, &a)) return false;
    *coef = (int64_t)(0 - (uint64_t)a);
    return true;
  case KILN_TOP_MUL:
    for (int i = 0; i < 2; i++) {
      const kiln_texpr *c = e->args[1 - i];
      if (c->kind == KILN_TE_INT && affine_in(e->args[i], v, &a)) {
        *coef = (int64_t)((uint64_t)a * (uint64_t)c->i);
        return true;
      }
    }
    return false;
  default: return false;
  }
}

/* e (an i64 index without loads) with its constant parts folded: an offset read off an
 * index by setting the loop variables to 0 prints as the index's own terms. */
static kiln_texpr *tz_fold(kiln_tkernel *k, kiln_texpr *e) {
  if (e->kind != KILN_TE_OP || e->type != KILN_I64) return e;
  if (e->op == KILN_TOP_ADD) return kiln_tadd(k, tz_fold(k, e->args[0]), tz_fold(k, e->args[1]));
  if (e->op == KILN_TOP_MUL) {
    kiln_texpr *a = tz_fold(k, e->args[0]), *b = tz_fold(k, e->args[1]);
    if (b->kind == KILN_TE_INT) return kiln_tmul(k, a, b->i);
    if (a->kind == KILN_TE_INT) return kiln_tmul(k, b, a->i);
    return kiln_tbin(k, KILN_TOP_MUL, a, b);
  }
  return e;
}

/* One access of the nest: index = off + cm*m + cn*n + ck*k (off free of m, n, k). */
typedef struct tz_access {
  int buf;
  kiln_texpr *off;
  int64_t c[3]; /* coefficients of the three loops, outermost first */
} tz_access;

static kiln_status tz_affine(kiln_tkernel *k, const kiln_tstmt *const loops[3], int buf,
                             kiln_texpr *index, const char *what, tz_access *out) {
  out->buf = buf;
  out->off = index;
  for (int i = 0; i < 3; i++) {
    if (!affine_in(index, loops[i]->var, &out->c[i]))
      return kiln_invalid("tensorize loop '%s': the index of %s (%%%s) is not affine in '%s' "
                          "with a constant stride",
                          loop_name(k, loops[0]), what, k->bufs.data[buf].name,
                          loop_name(k, loops[i]));
    out->off = kiln_tsched_subst(k, out->off, loops[i]->var, kiln_tint(k, 0));
  }
  out->off = tz_fold(k, out->off);
  if (expr_reads_buf(index, -2))
    return kiln_invalid("tensorize loop '%s': the index of %s (%%%s) reads a buffer",
                        loop_name(k, loops[0]), what, k->bufs.data[buf].name);
  return KILN_OK;
}

/* An MMA operand: a load of a buffer, of C's type or cast to it (the MMA casts the same
 * way); with `narrow`, a bare load (the operand of mac, which widens it itself). */
static const kiln_texpr *tz_operand(const kiln_texpr *e, kiln_dtype ct, bool narrow) {
  if (narrow) return e->kind == KILN_TE_LOAD ? e : NULL;
  if (e->kind == KILN_TE_CAST && e->type == ct && e->args[0]->kind == KILN_TE_LOAD)
    return kiln_dtype_is_int(e->args[0]->type) ? e->args[0] : NULL;
  return e->kind == KILN_TE_LOAD && e->type == ct ? e : NULL;
}

kiln_status kiln_tsched_tensorize(kiln_tkernel *k, kiln_tstmt *loop) {
  const kiln_tstmt *loops[3];
  int64_t ext[3];
  const kiln_tstmt *s = loop;
  for (int i = 0; i < 3; i++) {
    KILN_TRY(const_extent(k, s, "tensorize", &ext[i]));
    if (s->loop != KILN_LOOP_SERIAL)
      return kiln_invalid("tensorize loop '%s': loop '%s' is %s, not serial", loop_name(k, loop),
                          loop_name(k, s), kiln_loop_kind_name(s->loop));
    loops[i] = s;
    if (s->body.len != 1)
      return kiln_invalid("tensorize loop '%s': the body of loop '%s' is not one statement",
                          loop_name(k, loop), loop_name(k, s));
    s = s->body.data[0];
    if (i < 2 && s->kind != KILN_TS_FOR)
      return kiln_invalid("tensorize loop '%s': not a nest of three loops", loop_name(k, loop));
  }
  if (s->kind != KILN_TS_STORE)
    return kiln_invalid("tensorize loop '%s': the innermost body is not a store",
                        loop_name(k, loop));
  for (int i = 0; i < 3; i++)
    if (expr_reads_var(loops[i]->extent, loops[0]->var) ||
        expr_reads_var(loops[i]->extent, loops[1]->var))
      return kiln_invalid("tensorize loop '%s': an extent depends on an outer loop of the nest",
                          loop_name(k, loop));
  int cb = s->buf;
  kiln_dtype ct = k->bufs.data[cb].dtype;
  const char *ln = loop_name(k, loop);
  if (kiln_tile_half_type(ct))
    return kiln_invalid("tensorize loop '%s': a %s accumulator has no matrix-product form "
                        "(accumulate in f32 and cast)",
                        ln, kiln_dtype_name(ct));
  if (!kiln_dtype_is_int(ct) && ct != KILN_F32 && ct != KILN_F64)
    return kiln_invalid("tensorize loop '%s': the stored buffer's type %s is not an integer, "
                        "f32 or f64",
                        ln, kiln_dtype_name(ct));
  /* the value: C + A*B (integers), or mac(C, A, B) */
  const kiln_texpr *v = s->value, *acc = NULL, *pa = NULL, *pb = NULL;
  bool mac = v->kind == KILN_TE_OP && v->op == KILN_TOP_MAC;
  if (mac) {
    acc = v->args[0];
    pa = v->args[1];
    pb = v->args[2];
  } else if (v->kind == KILN_TE_OP && v->op == KILN_TOP_ADD) {
    for (int i = 0; i < 2 && !acc; i++) {
      const kiln_texpr *x = v->args[i], *y = v->args[1 - i];
      if (x->kind == KILN_TE_LOAD && x->buf == cb && y->kind == KILN_TE_OP &&
          y->op == KILN_TOP_MUL) {
        acc = x;
        pa = y->args[0];
        pb = y->args[1];
      }
    }
  }
  if (!acc)
    return kiln_invalid("tensorize loop '%s': the stored value is not an accumulation "
                        "C + A*B or mac(C, A, B) into the stored element",
                        ln);
  if (kiln_dtype_is_float(ct) && !mac)
    return kiln_invalid("tensorize loop '%s': a float C + A*B rounds twice (the product, then "
                        "the sum) where the matrix product rounds once (a fused multiply-add); "
                        "write the body as mac(C, A, B)",
                        ln);
  if (acc->kind != KILN_TE_LOAD || acc->buf != cb || !expr_equal(acc->index, s->index))
    return kiln_invalid("tensorize loop '%s': the accumulator is not a load of the stored "
                        "element",
                        ln);
  pa = tz_operand(pa, ct, mac);
  pb = tz_operand(pb, ct, mac);
  if (!pa || !pb)
    return kiln_invalid("tensorize loop '%s': the product's operands are not loads (of the "
                        "accumulator's type or cast to it)",
                        ln);
  if (pa->buf == cb || pb->buf == cb)
    return kiln_invalid("tensorize loop '%s': an operand reads the accumulated buffer", ln);
  tz_access c, a, b;
  KILN_TRY(tz_affine(k, loops, cb, s->index, "C", &c));
  KILN_TRY(tz_affine(k, loops, pa->buf, pa->index, "A", &a));
  KILN_TRY(tz_affine(k, loops, pb->buf, pb->index, "B", &b));
  /* roles: k is the innermost loop, C's index does not read it */
  if (c.c[2] != 0)
    return kiln_invalid("tensorize loop '%s': the stored index depends on the innermost loop "
                        "'%s' (the reduction loop must be innermost)",
                        ln, loop_name(k, loops[2]));
  /* n: the loop A does not read and along which C has stride 1 */
  int mi = -1, ni = -1;
  for (int i = 0; i < 2 && mi < 0; i++) {
    int o = 1 - i;
    for (int swap = 0; swap < 2 && mi < 0; swap++) {
      const tz_access *x = swap ? &b : &a, *y = swap ? &a : &b;
      if (c.c[i] == 1 && x->c[i] == 0 && y->c[o] == 0) {
        ni = i;
        mi = o;
        if (swap) {
          tz_access t = a;
          a = b;
          b = t;
        }
      }
    }
  }
  if (mi < 0)
    return kiln_invalid("tensorize loop '%s': no loop of the nest is a column loop (C's "
                        "stride 1, B's only) with the other a row loop (A's only)",
                        ln);
  int64_t ldc = c.c[mi], M = ext[mi], N = ext[ni];
  /* distinct (m, n) store distinct elements, so the order of m and n does not matter */
  if (M > 1 && (ldc < 0 ? -(uint64_t)ldc : (uint64_t)ldc) < (uint64_t)N)
    return kiln_invalid("tensorize loop '%s': rows of C overlap (stride %lld, %lld columns)", ln,
                        (long long)ldc, (long long)N);
  kiln_tmma mm = {.c_buf = cb,
                  .a_buf = a.buf,
                  .b_buf = b.buf,
                  .c_off = c.off,
                  .a_off = a.off,
                  .b_off = b.off,
                  .ldc = ldc,
                  .a_sm = a.c[mi],
                  .a_sk = a.c[2],
                  .b_sk = b.c[2],
                  .b_sn = b.c[ni],
                  .m = M,
                  .n = N,
                  .k = ext[2]};
  kiln_tstmt *r = kiln_tmma_stmt(k, &mm);
  *loop = *r;
  return KILN_OK;
}
