/* Interval arithmetic for the tile IR verifier: a superset of the values of an i64
 * expression, from the loop variable ranges ([0, extent - 1]) and the facts that the
 * enclosing conditions establish (`a < b`, `a <= b`, `a > b`, `a >= b`, `a == b`, their
 * negations in else branches, `and` of conditions, `not`). Any overflow gives the full
 * range, which is always sound. */
#include <string.h>

#include "base/mutate.h"
#include "tile_verify.h"

static const kiln_tival FULL = {INT64_MIN, INT64_MAX};

static kiln_tival iv(int64_t lo, int64_t hi) {
  return (kiln_tival){lo, hi};
}

static bool empty(kiln_tival a) {
  return a.lo > a.hi;
}

static kiln_tival meet(kiln_tival a, kiln_tival b) {
  return iv(a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
}

static kiln_tival join(kiln_tival a, kiln_tival b) {
  if (empty(a)) return b;
  if (empty(b)) return a;
  return iv(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
}

/* The range of any value of integer type t seen as i64 (u64 wraps, so it is FULL). */
static kiln_tival type_range(kiln_dtype t) {
  switch (t) {
  case KILN_BOOL: return iv(0, 1);
  case KILN_I8: return iv(INT8_MIN, INT8_MAX);
  case KILN_U8: return iv(0, UINT8_MAX);
  case KILN_I16: return iv(INT16_MIN, INT16_MAX);
  case KILN_U16: return iv(0, UINT16_MAX);
  case KILN_I32: return iv(INT32_MIN, INT32_MAX);
  case KILN_U32: return iv(0, UINT32_MAX);
  default: return FULL;
  }
}

/* ---- arithmetic ---- */
static kiln_tival add(kiln_tival a, kiln_tival b) {
  kiln_tival r;
  if (kiln_add_overflow_i64(a.lo, b.lo, &r.lo) || kiln_add_overflow_i64(a.hi, b.hi, &r.hi))
    return FULL;
  return r;
}

static kiln_tival neg(kiln_tival a) {
  if (a.lo == INT64_MIN) return FULL;
  return iv(-a.hi, -a.lo);
}

static kiln_tival mul(kiln_tival a, kiln_tival b) {
  int64_t p[4];
  if (kiln_mul_overflow_i64(a.lo, b.lo, &p[0]) || kiln_mul_overflow_i64(a.lo, b.hi, &p[1]) ||
      kiln_mul_overflow_i64(a.hi, b.lo, &p[2]) || kiln_mul_overflow_i64(a.hi, b.hi, &p[3]))
    return FULL;
  kiln_tival r = iv(p[0], p[0]);
  for (int i = 1; i < 4; i++) r = join(r, iv(p[i], p[i]));
  return r;
}

/* Truncating division; a divisor range containing 0 or -1 with INT64_MIN gives FULL. */
static kiln_tival divide(kiln_tival a, kiln_tival b) {
  if (b.lo <= KILN_MUTANT(334) && b.hi >= 0) return FULL; /* mutant 334: a divisor 1 as 0 */
  if (a.lo == INT64_MIN && b.lo <= -1 && b.hi >= -1) return FULL;
  kiln_tival r = iv(a.lo / b.lo, a.lo / b.lo);
  r = join(r, iv(a.lo / b.hi, a.lo / b.hi));
  r = join(r, iv(a.hi / b.lo, a.hi / b.lo));
  return join(r, iv(a.hi / b.hi, a.hi / b.hi));
}

/* C remainder: |r| < |divisor|, with the sign of the dividend. */
static kiln_tival rem(kiln_tival a, kiln_tival b) {
  if ((b.lo <= 0 && b.hi >= 0) || b.lo == INT64_MIN) return FULL;
  int64_t m = (b.hi > -b.lo ? b.hi : -b.lo) - !KILN_MUTANT(286); /* mutant 286: |r| <= |b| */
  /* a non-negative dividend within one period of a constant divisor: exact */
  if (a.lo >= 0 && b.lo == b.hi && b.lo > 0 && a.lo / b.lo == a.hi / b.lo)
    return iv(a.lo % b.lo, a.hi % b.lo);
  if (a.lo >= 0) return iv(0, a.hi < m ? a.hi : m);
  if (a.hi <= 0) return iv(a.lo > -m ? a.lo : -m, 0);
  return iv(-m, m);
}

static kiln_tival abs_range(kiln_tival a) {
  if (a.lo >= 0) return a;
  if (a.hi <= 0) return neg(a);
  if (a.lo == INT64_MIN) return FULL;
  return iv(0, -a.lo > a.hi ? -a.lo : a.hi);
}

static kiln_tival op_range(kiln_tverify *c, const kiln_texpr *e) {
  kiln_tival a = kiln_tverify_range(c, e->args[0]);
  if (kiln_top_arity(e->op) == 1) {
    if (e->op == KILN_TOP_NEG) return neg(a);
    if (e->op == KILN_TOP_ABS) return abs_range(a);
    return FULL;
  }
  kiln_tival b = kiln_tverify_range(c, e->args[1]);
  if (empty(a) || empty(b)) return iv(1, 0);
  switch (e->op) {
  case KILN_TOP_ADD: return add(a, b);
  case KILN_TOP_SUB: return add(a, neg(b));
  case KILN_TOP_MUL: return mul(a, b);
  case KILN_TOP_DIV: return divide(a, b);
  case KILN_TOP_MOD: return rem(a, b);
  case KILN_TOP_MIN: return iv(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
  case KILN_TOP_MAX: return iv(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
  case KILN_TOP_AND: /* a mask: x & m is in [0, m] when m >= 0 */
    if (b.lo >= 0) return iv(0, a.lo >= 0 && a.hi < b.hi ? a.hi : b.hi);
    if (a.lo >= 0) return iv(0, a.hi);
    return FULL;
  case KILN_TOP_SHR:
    if (a.lo >= 0 && b.lo >= 0 && b.hi < 64) return iv(a.lo >> b.hi, a.hi >> b.lo);
    return a.lo >= 0 ? iv(0, a.hi) : FULL;
  default: return FULL;
  }
}

static kiln_tival select_range(kiln_tverify *c, const kiln_texpr *e) {
  kiln_tverify *m = c; /* the facts of each arm are pushed and popped */
  kiln_tival r = iv(1, 0);
  for (int arm = 1; arm <= 2; arm++) {
    int saved = m->facts.len;
    kiln_tverify_assume(m, e->args[0], arm == 1);
    r = join(r, kiln_tverify_range(m, e->args[arm]));
    m->facts.len = saved;
  }
  return r;
}

static kiln_tival base_range(kiln_tverify *c, const kiln_texpr *e) {
  switch (e->kind) {
  case KILN_TE_INT: return e->type == KILN_U64 && e->i < 0 ? FULL : iv(e->i, e->i);
  case KILN_TE_VAR:
    if (c->in_loop[e->var]) return c->var_range[e->var];
    return type_range(e->type);
  case KILN_TE_CAST: {
    kiln_dtype from = e->args[0]->type;
    if (!kiln_tile_arith_type(from) || kiln_tile_float_type(from) || from == KILN_U64)
      return type_range(e->type);
    kiln_tival r = kiln_tverify_range(c, e->args[0]), t = type_range(e->type);
    return r.lo >= t.lo && r.hi <= t.hi ? r : t; /* a value out of range wraps */
  }
  case KILN_TE_OP:
    if (e->type != KILN_I64) return type_range(e->type);
    if (e->op == KILN_TOP_SELECT) return select_range(c, e);
    return op_range(c, e);
  default: return type_range(e->type);
  }
}

/* ---- facts ---- */
bool kiln_tverify_same_expr(const kiln_texpr *a, const kiln_texpr *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type) return false;
  switch (a->kind) {
  case KILN_TE_INT: return a->i == b->i;
  case KILN_TE_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case KILN_TE_VAR: return a->var == b->var;
  case KILN_TE_LOAD: return a->buf == b->buf && kiln_tverify_same_expr(a->index, b->index);
  case KILN_TE_OP:
    if (a->op != b->op) return false;
    for (int i = 0; i < kiln_top_arity(a->op); i++)
      if (!kiln_tverify_same_expr(a->args[i], b->args[i])) return false;
    return true;
  case KILN_TE_CAST: return kiln_tverify_same_expr(a->args[0], b->args[0]);
  default: return false;
  }
}

kiln_tival kiln_tverify_range(kiln_tverify *c, const kiln_texpr *e) {
  kiln_tival r = base_range(c, e);
  for (int i = 0; i < c->facts.len; i++) {
    const kiln_tfact *f = &c->facts.data[i];
    if (!f->dead && kiln_tverify_same_expr(f->e, e)) r = meet(r, f->r);
  }
  return r;
}

void kiln_tverify_fact(kiln_tverify *c, const kiln_texpr *e, kiln_tival r) {
  if (e->kind == KILN_TE_INT) return;
  kiln_tfact f = {e, r, false};
  kiln_vec_push(&c->facts, f);
}

/* a < b (strict) or a <= b. */
static void assume_le(kiln_tverify *c, const kiln_texpr *a, const kiln_texpr *b, bool strict) {
  kiln_tival ra = kiln_tverify_range(c, a), rb = kiln_tverify_range(c, b);
  int64_t d = strict && !KILN_MUTANT(274) ? 1 : 0; /* mutant 274: a < b taken as a <= b */
  if (rb.hi >= INT64_MIN + d) kiln_tverify_fact(c, a, iv(INT64_MIN, rb.hi - d));
  if (ra.lo <= INT64_MAX - d) kiln_tverify_fact(c, b, iv(ra.lo + d, INT64_MAX));
}

void kiln_tverify_assume(kiln_tverify *c, const kiln_texpr *cond, bool holds) {
  if (cond->kind != KILN_TE_OP) return;
  kiln_top op = cond->op;
  if (op == KILN_TOP_NOT) {
    kiln_tverify_assume(c, cond->args[0], !holds);
    return;
  }
  if ((op == KILN_TOP_AND && holds) || (op == KILN_TOP_OR && !holds)) {
    if (cond->args[0]->type != KILN_BOOL) return;
    kiln_tverify_assume(c, cond->args[0], holds);
    if (!KILN_MUTANT(304)) kiln_tverify_assume(c, cond->args[1], holds); /* mutant 304 */
    return;
  }
  if (kiln_top_class(op) != 'c' || kiln_top_arity(op) != 2) return;
  const kiln_texpr *a = cond->args[0], *b = cond->args[1];
  if (a->type != KILN_I64) return;
  if (!holds) { /* not (a < b) is a >= b, and so on; not (a == b) says nothing */
    static const kiln_top negated[] = {
        [KILN_TOP_LT] = KILN_TOP_GE, [KILN_TOP_LE] = KILN_TOP_GT, [KILN_TOP_GT] = KILN_TOP_LE,
        [KILN_TOP_GE] = KILN_TOP_LT, [KILN_TOP_EQ] = KILN_TOP_NE, [KILN_TOP_NE] = KILN_TOP_EQ};
    op = negated[op];
  }
  switch (op) {
  case KILN_TOP_LT: assume_le(c, a, b, true); break;
  case KILN_TOP_LE: assume_le(c, a, b, false); break;
  case KILN_TOP_GT: assume_le(c, b, a, true); break;
  case KILN_TOP_GE: assume_le(c, b, a, false); break;
  case KILN_TOP_EQ:
    assume_le(c, a, b, false);
    assume_le(c, b, a, false);
    break;
  default: break;
  }
}
