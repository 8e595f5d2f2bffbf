/* The race check of the tile IR verifier: the iterations of a parallel loop run on
 * different CPU threads, so whatever they write must be private to an iteration or written
 * at elements that no other iteration writes.
 *
 * Private and shared objects follow the C backend's declarations: a LOCAL buffer or a
 * variable used only inside parallel loops is declared in the body of each (every thread
 * has its own copy); one used anywhere outside a parallel loop is declared once for the
 * kernel and is one object shared by the iterations, like every parameter (GLOBAL) and
 * SHARED buffer. So:
 * - an assignment, under a parallel loop, to a variable used outside parallel loops is a
 *   race (a scalar accumulator declared outside);
 * - a store (or an MMA accumulator footprint) to a shared buffer must be proved disjoint
 *   across iterations. The index is taken apart as a sum of terms c_i * t_i; constants and
 *   terms that read nothing the iterations change cancel between two iterations (a clamp
 *   min/max that the enclosing guards make idle is looked through). If no term reads the
 *   loop variable p, every iteration writes the same place: rejected (scratch at a fixed
 *   place, a scalar in a buffer). Otherwise one of these proofs must hold:
 *   linear: the only term that reads p is c * p and the others span less than |c|;
 *   digits: with the terms sorted by |c_i|, a split where the higher coefficients are all
 *   multiples of S (the smallest of them) and the lower terms span less than S: the index
 *   then determines both parts, so one part written disjointly is enough (rows of a tile
 *   with the columns below, a panel of columns under the rows above);
 *   expansion: a sum kept whole (under a constant factor or an idle clamp) taken apart;
 *   per iteration (loops of at most 2^16 iterations): with p fixed to each value, interval
 *   arithmetic bounds what the iteration writes, and these footprints must not overlap
 *   (this takes p / C and p % C apart, and guards that depend on p).
 *   The search is bounded (RACE_MAX_PROOFS, RACE_MAX_SWEEPS); past it nothing is proved.
 * One exception: a buffer of one element that the loop only sets to one constant and never
 * reads (the error flag of a kernel that checks its indices, lower.h) may be written by
 * several iterations: every writer stores the same bits.
 * Reads are not checked: a parallel loop that reads what another iteration writes is not
 * caught here. */
#include <stdlib.h>
#include <string.h>

#include "tile_verify.h"

#define FAIL(...) kiln_tverify_fail(c, __VA_ARGS__)

enum {
  RACE_MAX_TERMS = 32,
  RACE_MAX_EVAL = 1 << 16, /* iterations of a per-iteration proof */
  RACE_MAX_WORK = 1 << 18, /* iterations times terms of one per-iteration proof */
  RACE_MAX_PROOFS = 256,   /* proof attempts for one store */
  RACE_MAX_SWEEPS = 16     /* per-iteration proofs for one store */
};

static bool sub_overflow(int64_t a, int64_t b, int64_t *out) {
  return b == INT64_MIN ? (a >= 0 || (*out = a - b, false)) : kiln_add_overflow_i64(a, -b, out);
}

/* ---- what is shared: used outside every parallel loop ---- */
static void mark_expr(const kiln_texpr *e, uint8_t *vars, uint8_t *bufs) {
  if (!e) return;
  if (e->kind == KILN_TE_VAR) vars[e->var] = 1;
  if (e->kind == KILN_TE_LOAD) bufs[e->buf] = 1;
  mark_expr(e->index, vars, bufs);
  for (int i = 0; i < 3; i++) mark_expr(e->args[i], vars, bufs);
}

void kiln_tile_mark_outside_parallel(const kiln_tblock *b, uint8_t *vars, uint8_t *bufs) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    mark_expr(s->extent, vars, bufs);
    if (s->kind == KILN_TS_FOR && s->loop == KILN_LOOP_PARALLEL) continue;
    mark_expr(s->cond, vars, bufs);
    mark_expr(s->index, vars, bufs);
    mark_expr(s->value, vars, bufs);
    if (s->kind == KILN_TS_ASSIGN) vars[s->var] = 1;
    if (s->kind == KILN_TS_STORE) bufs[s->buf] = 1;
    if (s->kind == KILN_TS_MMA) {
      bufs[s->mma.a_buf] = bufs[s->mma.b_buf] = bufs[s->mma.c_buf] = 1;
      mark_expr(s->mma.a_off, vars, bufs);
      mark_expr(s->mma.b_off, vars, bufs);
      mark_expr(s->mma.c_off, vars, bufs);
    }
    kiln_tile_mark_outside_parallel(&s->body, vars, bufs);
    kiln_tile_mark_outside_parallel(&s->orelse, vars, bufs);
  }
}

void kiln_tverify_race_init(kiln_tverify *c) {
  const kiln_tkernel *k = c->k;
  size_t nv = (size_t)k->vars.len + 1, nb = (size_t)k->bufs.len + 1;
  c->shared_var = kiln_xcalloc(nv, 1);
  c->shared_buf = kiln_xcalloc(nb, 1);
  c->par_var = kiln_xcalloc(nv, 1);
  c->par_buf = kiln_xcalloc(nb, 1);
  c->par_flag = kiln_xcalloc(nb, 1);
  kiln_tile_mark_outside_parallel(&k->body, c->shared_var, c->shared_buf);
  for (int b = 0; b < k->bufs.len; b++)
    if (k->bufs.data[b].scope != KILN_SCOPE_LOCAL) c->shared_buf[b] = 1;
}

void kiln_tverify_race_free(kiln_tverify *c) {
  free(c->shared_var), free(c->shared_buf), free(c->par_var), free(c->par_buf);
  free(c->par_flag);
}

/* ---- what differs between iterations: written or looped over in the body ---- */
static void mark_body(const kiln_tblock *b, uint8_t *vars, uint8_t *bufs) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR || s->kind == KILN_TS_ASSIGN) vars[s->var] = 1;
    if (s->kind == KILN_TS_STORE) bufs[s->buf] = 1;
    if (s->kind == KILN_TS_MMA) bufs[s->mma.c_buf] = 1;
    mark_body(&s->body, vars, bufs);
    mark_body(&s->orelse, vars, bufs);
  }
}

/* ---- flags: buffers that the body only sets to one constant ----
 * flag[b]: 0 not seen, 1 every store so far writes the constant *val[b], 2 anything else
 * (another value, an MMA, a load in the body). */
static void mark_reads(const kiln_texpr *e, uint8_t *flag) {
  if (!e) return;
  if (e->kind == KILN_TE_LOAD) flag[e->buf] = 2;
  mark_reads(e->index, flag);
  for (int i = 0; i < 3; i++) mark_reads(e->args[i], flag);
}

static void mark_flags(const kiln_tblock *b, uint8_t *flag, const kiln_texpr **val) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    mark_reads(s->extent, flag), mark_reads(s->cond, flag), mark_reads(s->index, flag);
    mark_reads(s->value, flag);
    if (s->kind == KILN_TS_MMA) {
      flag[s->mma.c_buf] = 2;
      mark_reads(s->mma.a_off, flag), mark_reads(s->mma.b_off, flag);
      mark_reads(s->mma.c_off, flag);
    }
    if (s->kind == KILN_TS_STORE && flag[s->buf] != 2) {
      bool k = s->value->kind == KILN_TE_INT || s->value->kind == KILN_TE_FLOAT;
      if (k && (!flag[s->buf] || kiln_tverify_same_expr(val[s->buf], s->value)))
        flag[s->buf] = 1, val[s->buf] = s->value;
      else flag[s->buf] = 2;
    }
    mark_flags(&s->body, flag, val);
    mark_flags(&s->orelse, flag, val);
  }
}

void kiln_tverify_race_enter(kiln_tverify *c, const kiln_tstmt *s, kiln_tival ext) {
  if (s->loop != KILN_LOOP_PARALLEL || ext.hi <= 1) return;
  c->par = s;
  c->par_n = ext.hi;
  memset(c->par_var, 0, (size_t)c->k->vars.len + 1);
  memset(c->par_buf, 0, (size_t)c->k->bufs.len + 1);
  c->par_var[s->var] = 1;
  mark_body(&s->body, c->par_var, c->par_buf);
  size_t nb = (size_t)c->k->bufs.len + 1;
  const kiln_texpr **val = kiln_xcalloc(nb, sizeof *val);
  memset(c->par_flag, 0, nb);
  mark_flags(&s->body, c->par_flag, val);
  free(val);
}

/* ---- the index as a sum of terms ----
 * A term is coef * e; e is a variable, a unit that is not a sum (div, mod, a load, ...), or a
 * sum kept whole because it stands under a constant factor or an idle clamp (its range then
 * benefits from the facts about it, such as a guard col < N). A term with e == NULL is the
 * footprint of an MMA around its offset, of range `fixed`. */
typedef struct term {
  const kiln_texpr *e;
  int64_t coef;
  kiln_tival fixed; /* e == NULL */
  bool p;           /* reads the parallel loop's variable */
} term;

typedef struct terms {
  int n;
  term t[RACE_MAX_TERMS];
  bool bad; /* too many terms or an overflow: nothing proved */
} terms;

/* What e reads: the loop variable p, something else that differs between iterations (a
 * variable or a buffer the body writes), or neither: then it is the same on every
 * iteration and cancels between two of them. */
static void term_reads(const kiln_tverify *c, const kiln_texpr *e, bool *p, bool *varying) {
  if (!e) return;
  if (e->kind == KILN_TE_VAR) {
    if (e->var == c->par->var) *p = true;
    else *varying |= c->par_var[e->var] != 0;
  }
  if (e->kind == KILN_TE_LOAD) *varying |= c->par_buf[e->buf] != 0;
  term_reads(c, e->index, p, varying);
  for (int i = 0; i < 3; i++) term_reads(c, e->args[i], p, varying);
}

static void add_term(const kiln_tverify *c, terms *l, const kiln_texpr *e, int64_t coef) {
  bool p = false, varying = false;
  term_reads(c, e, &p, &varying);
  if (!p && !varying) return;
  for (int i = 0; i < l->n; i++)
    if (l->t[i].e && kiln_tverify_same_expr(l->t[i].e, e)) {
      l->bad |= kiln_add_overflow_i64(l->t[i].coef, coef, &l->t[i].coef);
      return;
    }
  if (l->n == RACE_MAX_TERMS) {
    l->bad = true;
    return;
  }
  l->t[l->n++] = (term){e, coef, {0, 0}, p};
}

/* min(a, b) or max(a, b) that is always one operand (by the ranges and the facts), or NULL:
 * a clamp that an enclosing guard makes idle (min(col, N - 1) under col < N). */
static const kiln_texpr *idle_clamp(kiln_tverify *c, const kiln_texpr *e) {
  kiln_tival a = kiln_tverify_range(c, e->args[0]), b = kiln_tverify_range(c, e->args[1]);
  bool is_min = e->op == KILN_TOP_MIN;
  if (is_min ? a.hi <= b.lo : a.lo >= b.hi) return e->args[0];
  if (is_min ? b.hi <= a.lo : b.lo >= a.hi) return e->args[1];
  return NULL;
}

static bool is_sum(const kiln_texpr *e) {
  return e->kind == KILN_TE_OP && e->type == KILN_I64 &&
         (e->op == KILN_TOP_ADD || e->op == KILN_TOP_SUB || e->op == KILN_TOP_NEG);
}

/* Adds coef * e: sums at the top are taken apart, constants dropped; under a constant
 * factor (top false) a sum stays one term. */
static void split(kiln_tverify *c, terms *l, const kiln_texpr *e, int64_t coef, bool top) {
  if (l->bad || e->kind == KILN_TE_INT) return;
  if (e->kind == KILN_TE_OP && e->type == KILN_I64) {
    const kiln_texpr *a = e->args[0], *b = e->args[1], *x;
    if (is_sum(e) && top) {
      if (coef == INT64_MIN) l->bad = true;
      else if (e->op == KILN_TOP_NEG) split(c, l, a, -coef, top);
      else split(c, l, a, coef, top), split(c, l, b, e->op == KILN_TOP_SUB ? -coef : coef, top);
      return;
    }
    if (e->op == KILN_TOP_MUL && (b->kind == KILN_TE_INT || a->kind == KILN_TE_INT)) {
      const kiln_texpr *k = b->kind == KILN_TE_INT ? b : a;
      int64_t c2;
      if (kiln_mul_overflow_i64(coef, k->i, &c2)) l->bad = true;
      else split(c, l, k == b ? a : b, c2, false);
      return;
    }
    bool p = false, varying = false;
    term_reads(c, e, &p, &varying);
    if ((e->op == KILN_TOP_MIN || e->op == KILN_TOP_MAX) && p && (x = idle_clamp(c, e))) {
      split(c, l, x, coef, false);
      return;
    }
  }
  add_term(c, l, e, coef);
}

/* coef * range(e), or false when unbounded or on an overflow. */
static bool term_range(kiln_tverify *c, const term *t, kiln_tival *out) {
  kiln_tival r = t->e ? kiln_tverify_range(c, t->e) : t->fixed;
  int64_t a, b;
  if (r.lo > r.hi) r = (kiln_tival){0, 0}; /* no value: unreachable */
  if (r.lo == INT64_MIN || r.hi == INT64_MAX || kiln_mul_overflow_i64(r.lo, t->coef, &a) ||
      kiln_mul_overflow_i64(r.hi, t->coef, &b))
    return false;
  *out = a <= b ? (kiln_tival){a, b} : (kiln_tival){b, a};
  return true;
}

static bool sum_range(kiln_tverify *c, const terms *l, kiln_tival *out) {
  kiln_tival acc = {0, 0}, r;
  for (int i = 0; i < l->n; i++)
    if (!term_range(c, &l->t[i], &r) || kiln_add_overflow_i64(acc.lo, r.lo, &acc.lo) ||
        kiln_add_overflow_i64(acc.hi, r.hi, &acc.hi))
      return false;
  *out = acc;
  return true;
}

static bool width_below(kiln_tverify *c, const terms *l, int64_t limit) {
  kiln_tival r;
  int64_t w;
  return sum_range(c, l, &r) && !sub_overflow(r.hi, r.lo, &w) && w < limit;
}

/* The only term that reads p is c * p and the others span less than |c|. */
static bool linear_proof(kiln_tverify *c, const terms *l) {
  int at = -1;
  for (int i = 0; i < l->n; i++) {
    if (!l->t[i].p) continue;
    if (at >= 0 || l->t[i].e->kind != KILN_TE_VAR) return false;
    at = i;
  }
  if (at < 0 || l->t[at].coef == INT64_MIN) return false;
  terms rest = *l;
  rest.t[at] = rest.t[--rest.n];
  return width_below(c, &rest, l->t[at].coef < 0 ? -l->t[at].coef : l->t[at].coef);
}

typedef struct footprint {
  kiln_tival r;
  int64_t p;
} footprint;

static int cmp_lo(const void *a, const void *b) {
  const footprint *x = a, *y = b;
  return (x->r.lo > y->r.lo) - (x->r.lo < y->r.lo);
}

/* The footprint of each iteration (the terms' ranges with p fixed), sorted: they must not
 * overlap. On an overlap, c->race_p1 and c->race_p2 are two iterations that may meet. */
static bool each_iteration_proof(kiln_tverify *c, const terms *l, bool top) {
  if (c->par_n > RACE_MAX_EVAL || c->par_n * (l->n + 1) > RACE_MAX_WORK || c->race_sweeps-- <= 0)
    return false;
  int64_t n = c->par_n;
  footprint *fp = kiln_xmalloc((size_t)n * sizeof *fp);
  kiln_tival saved = c->var_range[c->par->var];
  bool ok = true;
  for (int64_t p = 0; p < n && ok; p++) {
    c->var_range[c->par->var] = (kiln_tival){p, p};
    fp[p].p = p;
    ok = sum_range(c, l, &fp[p].r);
  }
  c->var_range[c->par->var] = saved;
  if (ok) qsort(fp, (size_t)n, sizeof *fp, cmp_lo);
  for (int64_t i = 1; i < n && ok; i++)
    if (fp[i].r.lo <= fp[i - 1].r.hi) {
      ok = false;
      if (top) c->race_p1 = fp[i - 1].p, c->race_p2 = fp[i].p;
    }
  free(fp);
  return ok;
}

static bool any_p(const terms *l) {
  for (int i = 0; i < l->n; i++)
    if (l->t[i].p) return true;
  return false;
}

static int64_t mag(int64_t x) {
  return x < 0 ? -x : x; /* coefficients are never INT64_MIN here (checked by split) */
}

static int cmp_mag(const void *a, const void *b) {
  int64_t x = mag(((const term *)a)->coef), y = mag(((const term *)b)->coef);
  return (x > y) - (x < y);
}

static bool prove(kiln_tverify *c, const terms *l, int depth);

/* Digits: with the terms sorted by |coef|, a split where every coefficient above is a
 * multiple of S (the smallest of them) and the terms below span less than S. Then the
 * index determines both parts, and it is enough that one part is disjoint. */
static bool radix_proof(kiln_tverify *c, const terms *l, int depth) {
  terms s = *l;
  qsort(s.t, (size_t)s.n, sizeof s.t[0], cmp_mag);
  for (int k = 1; k < s.n; k++) {
    int64_t S = mag(s.t[k].coef);
    bool multiple = S > 0;
    for (int i = k; i < s.n && multiple; i++) multiple = s.t[i].coef % S == 0;
    terms lo = s, hi = s;
    lo.n = k;
    hi.n = s.n - k;
    memmove(hi.t, s.t + k, (size_t)hi.n * sizeof s.t[0]);
    if (!multiple || !width_below(c, &lo, S)) continue;
    if (any_p(&lo) && prove(c, &lo, depth + 1)) return true;
    if (any_p(&hi) && prove(c, &hi, depth + 1)) return true;
  }
  return false;
}

/* A term that reads p and is a sum kept whole, taken apart. */
static bool expand_proof(kiln_tverify *c, const terms *l, int depth) {
  for (int i = 0; i < l->n; i++) {
    if (!l->t[i].p || !l->t[i].e || !is_sum(l->t[i].e)) continue;
    terms x = *l;
    x.t[i] = x.t[--x.n];
    split(c, &x, l->t[i].e, l->t[i].coef, true);
    if (!x.bad && prove(c, &x, depth + 1)) return true;
  }
  return false;
}

/* The iterations of c->par write disjoint values of sum(l) (plus what cancels). */
static bool prove(kiln_tverify *c, const terms *l, int depth) {
  if (!any_p(l) || depth > 6 || c->race_budget-- <= 0) return false;
  return linear_proof(c, l) || radix_proof(c, l, depth) || expand_proof(c, l, depth) ||
         each_iteration_proof(c, l, depth == 0);
}

static const char *shared_why(const kiln_tverify *c, int buf) {
  switch (c->k->bufs.data[buf].scope) {
  case KILN_SCOPE_GLOBAL: return "a parameter";
  case KILN_SCOPE_SHARED: return "shared scratch";
  default: return "a local buffer also used outside parallel loops";
  }
}

kiln_status kiln_tverify_race_store(kiln_tverify *c, int buf, const kiln_texpr *index,
                                    kiln_tival span) {
  if (!c->par || c->unreachable || !c->shared_buf[buf]) return KILN_OK;
  if (c->par_flag[buf] == 1 && c->k->bufs.data[buf].size == 1)
    return KILN_OK; /* an error flag: every writer stores one value */
  terms l = {0};
  split(c, &l, index, 1, true);
  if (!l.bad && (span.lo != 0 || span.hi != 0) && l.n < RACE_MAX_TERMS)
    l.t[l.n++] = (term){NULL, 1, span, false};
  const char *pv = c->k->vars.data[c->par->var].name, *bn = c->k->bufs.data[buf].name;
  if (!l.bad && !any_p(&l))
    return FAIL("race: every iteration of parallel loop $%s writes %%%s (%s) at indices that do "
                "not depend on $%s",
                pv, bn, shared_why(c, buf), pv);
  c->race_p1 = c->race_p2 = -1;
  c->race_budget = RACE_MAX_PROOFS, c->race_sweeps = RACE_MAX_SWEEPS;
  if (!l.bad && prove(c, &l, 0)) return KILN_OK;
  if (c->race_p1 >= 0)
    return FAIL("race: cannot prove that the iterations of parallel loop $%s write disjoint "
                "elements of %%%s (%s): $%s = %lld and $%s = %lld may meet",
                pv, bn, shared_why(c, buf), pv, (long long)c->race_p1, pv, (long long)c->race_p2);
  return FAIL("race: cannot prove that the iterations of parallel loop $%s write disjoint "
              "elements of %%%s (%s)",
              pv, bn, shared_why(c, buf));
}

kiln_status kiln_tverify_race_assign(kiln_tverify *c, int var) {
  if (!c->par || c->unreachable || !c->shared_var[var]) return KILN_OK;
  return FAIL("race: $%s is assigned by the iterations of parallel loop $%s but also used "
              "outside parallel loops (one variable shared by all threads)",
              c->k->vars.data[var].name, c->k->vars.data[c->par->var].name);
}
