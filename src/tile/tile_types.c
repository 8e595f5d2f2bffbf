/* Tile IR structural and type checks: the part of the verifier that the interpreter also
 * runs before executing a kernel (ids in range, no missing operands, the type rules of
 * tile.h). Loop kinds, scopes and bounds are checked in tile_verify.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "tile_text.h"

typedef struct tcheck {
  const kiln_tkernel *k;
  const kiln_tstmt *stmt; /* the statement being checked, NULL for declarations */
} tcheck;

static kiln_status fail(const tcheck *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static kiln_status fail(const tcheck *c, const char *fmt, ...) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "kernel ");
  kiln_ttext_name(&b, '@', c->k->name ? c->k->name : "");
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

static bool scalar_ok(kiln_dtype t) {
  return kiln_dtype_valid((int)t) && t != KILN_STRING;
}

static const char *tname(kiln_dtype t) {
  return scalar_ok(t) ? kiln_dtype_name(t) : "<bad type>";
}

/* Range of an integer or bool constant of type t. */
static bool int_const_fits(kiln_dtype t, int64_t v) {
  switch (t) {
  case KILN_BOOL: return v == 0 || v == 1;
  case KILN_I8: return v >= INT8_MIN && v <= INT8_MAX;
  case KILN_I16: return v >= INT16_MIN && v <= INT16_MAX;
  case KILN_I32: /* mutant 332: the lowest value refused (> for >=) */
    return (KILN_MUTANT(332) ? v > INT32_MIN : v >= INT32_MIN) && v <= INT32_MAX;
  case KILN_U8: return v >= 0 && v <= UINT8_MAX;
  case KILN_U16: return v >= 0 && v <= UINT16_MAX;
  case KILN_U32: /* mutant 273: the I32 line's upper bound */
    return v >= 0 && v <= (KILN_MUTANT(273) ? (int64_t)INT32_MAX : (int64_t)UINT32_MAX);
  case KILN_I64:
  case KILN_U64: return true; /* U64 constants hold their bits */
  default: return false;
  }
}

static bool is_float(kiln_dtype t) {
  return kiln_tile_float_type(t);
}

static bool is_intlike(kiln_dtype t) {
  return kiln_tile_arith_type(t) && !is_float(t);
}

static kiln_status check_expr(const tcheck *c, const kiln_texpr *e, int depth);

/* The operand rules of one operator class on operand type t. */
static kiln_status check_op_operands(const tcheck *c, const kiln_texpr *e, kiln_dtype t) {
  const char *name = kiln_top_name(e->op);
  char cls = kiln_top_class(e->op);
  bool ok = false;
  switch (cls) {
  case 'a': ok = kiln_tile_arith_type(t) && t != KILN_BOOL; break;
  case 'f': ok = is_float(t); break;
  case 'l': ok = t == KILN_BOOL; break;
  case 'i':
    ok = is_intlike(t) && (t != KILN_BOOL || e->op == KILN_TOP_AND || e->op == KILN_TOP_OR ||
                           (e->op == KILN_TOP_XOR && !KILN_MUTANT(255))); /* mutant 255 */
    break;
  case 'c':
    ok = (e->op == KILN_TOP_ISNAN || e->op == KILN_TOP_ISINF)
             ? is_float(t)
             : kiln_tile_arith_type(t) && (t != KILN_BOOL || !KILN_MUTANT(275)); /* mutant 275 */
    break;
  default: break;
  }
  if (!ok) return fail(c, "operator %s does not apply to %s operands", name, tname(t));
  return KILN_OK;
}

static bool mac_int_operand(kiln_dtype t) {
  return t == KILN_I8 || t == KILN_U8;
}

/* mac(acc, a, b): I32 <- I8/U8 x I8/U8, or F32 <- F16 x F16 / BF16 x BF16. */
static kiln_status check_mac(const tcheck *c, const kiln_texpr *e) {
  kiln_dtype acc = e->args[0]->type, a = e->args[1]->type, b = e->args[2]->type;
  bool ok = (acc == KILN_I32 && mac_int_operand(a) && mac_int_operand(b)) ||
            (acc == KILN_F32 && a == b && kiln_tile_half_type(a));
  if (!ok)
    return fail(
        c, "mac: accumulator %s with operands %s and %s (i32 with i8/u8, f32 with f16 or bf16)",
        tname(acc), tname(a), tname(b));
  if (e->type != acc)
    return fail(c, "mac: result typed %s, accumulator %s", tname(e->type), tname(acc));
  return KILN_OK;
}

static kiln_status check_op(const tcheck *c, const kiln_texpr *e, int depth) {
  if (e->op >= KILN_TOP_COUNT) return fail(c, "unknown operator %d", (int)e->op);
  int n = kiln_top_arity(e->op);
  for (int i = 0; i < n; i++) {
    if (!e->args[i]) return fail(c, "%s: operand %d is missing", kiln_top_name(e->op), i);
    KILN_TRY(check_expr(c, e->args[i], depth + 1));
  }
  if (e->op == KILN_TOP_SELECT) {
    if (e->args[0]->type != KILN_BOOL)
      return fail(c, "select: the condition is %s, not bool", tname(e->args[0]->type));
    if (e->args[1]->type != e->args[2]->type)
      return fail(c, "select: operands of different types %s and %s", tname(e->args[1]->type),
                  tname(e->args[2]->type));
    if (e->type != e->args[1]->type)
      return fail(c, "select: result typed %s, operands %s", tname(e->type),
                  tname(e->args[1]->type));
    return KILN_OK;
  }
  if (e->op == KILN_TOP_MAC) return check_mac(c, e);
  kiln_dtype t = e->args[0]->type;
  if (n == 2 && e->args[1]->type != t)
    return fail(c, "%s: operands of different types %s and %s", kiln_top_name(e->op), tname(t),
                tname(e->args[1]->type));
  KILN_TRY(check_op_operands(c, e, t));
  if (e->type != kiln_top_result(e->op, t))
    return fail(c, "%s: result typed %s, expected %s", kiln_top_name(e->op), tname(e->type),
                tname(kiln_top_result(e->op, t)));
  return KILN_OK;
}

static kiln_status check_const(const tcheck *c, const kiln_texpr *e) {
  if (e->kind == KILN_TE_INT) {
    if (!is_intlike(e->type))
      return fail(c, "integer constant of type %s (bool and integer types only)", tname(e->type));
    if (!int_const_fits(e->type, e->i))
      return fail(c, "constant %lld out of the range of %s", (long long)e->i, tname(e->type));
    return KILN_OK;
  }
  if (!is_float(e->type))
    return fail(c, "float constant of type %s (f16, bf16, f32 and f64 only)", tname(e->type));
  /* mutant 302: an F64 constant's exactness checked against F32 (the line above it) */
  if (!kiln_tile_float_exact(KILN_MUTANT(302) && e->type == KILN_F64 ? KILN_F32 : e->type, e->f))
    return fail(c, "%s constant %.17g is not exact in %s", tname(e->type), e->f, tname(e->type));
  return KILN_OK;
}

static kiln_status check_expr(const tcheck *c, const kiln_texpr *e, int depth) {
  if (!e) return fail(c, "missing expression");
  if (depth > KILN_TILE_MAX_DEPTH) return fail(c, "expression nested too deeply");
  const kiln_tkernel *k = c->k;
  switch (e->kind) {
  case KILN_TE_INT:
  case KILN_TE_FLOAT: return check_const(c, e);
  case KILN_TE_VAR:
    if (e->var < 0 || e->var >= k->vars.len) return fail(c, "variable id %d out of range", e->var);
    if (e->type != k->vars.data[e->var].type)
      return fail(c, "use of $%s typed %s, declared %s", k->vars.data[e->var].name, tname(e->type),
                  tname(k->vars.data[e->var].type));
    return KILN_OK;
  case KILN_TE_LOAD:
    if (e->buf < 0 || e->buf >= k->bufs.len) return fail(c, "buffer id %d out of range", e->buf);
    if (e->type != k->bufs.data[e->buf].dtype)
      return fail(c, "load of %%%s typed %s, buffer is %s", k->bufs.data[e->buf].name,
                  tname(e->type), tname(k->bufs.data[e->buf].dtype));
    KILN_TRY(check_expr(c, e->index, depth + 1));
    if (e->index->type != KILN_I64)
      return fail(c, "index of %%%s is %s, not i64", k->bufs.data[e->buf].name,
                  tname(e->index->type));
    return KILN_OK;
  case KILN_TE_OP: return check_op(c, e, depth);
  case KILN_TE_CAST:
    KILN_TRY(check_expr(c, e->args[0], depth + 1));
    if (!scalar_ok(e->type)) return fail(c, "cast to an invalid type");
    return KILN_OK;
  default: return fail(c, "unknown expression kind %d", (int)e->kind);
  }
}

static kiln_status check_typed(const tcheck *c, const kiln_texpr *e, kiln_dtype want,
                               const char *what) {
  KILN_TRY(check_expr(c, e, 0));
  if (e->type != want) return fail(c, "%s is %s, expected %s", what, tname(e->type), tname(want));
  return KILN_OK;
}

static kiln_status check_buf_id(const tcheck *c, int b, bool written) {
  if (b < 0 || b >= c->k->bufs.len) return fail(c, "buffer id %d out of range", b);
  if (written && c->k->bufs.data[b].readonly)
    return fail(c, "store to read-only buffer %%%s", c->k->bufs.data[b].name);
  return KILN_OK;
}

static kiln_status check_mma(const tcheck *c, const kiln_tmma *m) {
  KILN_TRY(check_buf_id(c, m->c_buf, true));
  KILN_TRY(check_buf_id(c, m->a_buf, false));
  KILN_TRY(check_buf_id(c, m->b_buf, false));
  KILN_TRY(check_typed(c, m->c_off, KILN_I64, "mma offset of C"));
  KILN_TRY(check_typed(c, m->a_off, KILN_I64, "mma offset of A"));
  KILN_TRY(check_typed(c, m->b_off, KILN_I64, "mma offset of B"));
  kiln_dtype ct = c->k->bufs.data[m->c_buf].dtype;
  if (!kiln_tile_arith_type(ct) || ct == KILN_BOOL || kiln_tile_half_type(ct) ||
      (KILN_MUTANT(303) && ct == KILN_F64)) /* mutant 303: f64 accumulators refused */
    return fail(c, "mma accumulates in %s (an integer type, f32 or f64 is needed)", tname(ct));
  if (m->m <= 0 || m->n <= 0 || m->k <= 0)
    return fail(c, "mma shape %lldx%lldx%lld is not positive", (long long)m->m, (long long)m->n,
                (long long)m->k);
  return KILN_OK;
}

static kiln_status check_block(tcheck *c, const kiln_tblock *b, int depth);

static kiln_status check_stmt(tcheck *c, const kiln_tstmt *s, int depth) {
  const kiln_tkernel *k = c->k;
  c->stmt = s;
  switch (s->kind) {
  case KILN_TS_FOR:
    if (s->var < 0 || s->var >= k->vars.len) return fail(c, "loop variable id out of range");
    if (k->vars.data[s->var].type != KILN_I64)
      return fail(c, "loop variable $%s is %s, not i64", k->vars.data[s->var].name,
                  tname(k->vars.data[s->var].type));
    if (s->loop >= KILN_LOOP_KIND_COUNT) return fail(c, "unknown loop kind %d", (int)s->loop);
    KILN_TRY(check_typed(c, s->extent, KILN_I64, "loop extent"));
    return check_block(c, &s->body, depth + 1);
  case KILN_TS_IF:
    KILN_TRY(check_typed(c, s->cond, KILN_BOOL, "condition"));
    KILN_TRY(check_block(c, &s->body, depth + 1));
    return check_block(c, &s->orelse, depth + 1);
  case KILN_TS_STORE:
    KILN_TRY(check_buf_id(c, s->buf, true));
    KILN_TRY(check_typed(c, s->index, KILN_I64, "store index"));
    return check_typed(c, s->value, k->bufs.data[s->buf].dtype, "stored value");
  case KILN_TS_ASSIGN:
    if (s->var < 0 || s->var >= k->vars.len) return fail(c, "variable id out of range");
    return check_typed(c, s->value, k->vars.data[s->var].type, "assigned value");
  case KILN_TS_BARRIER: return KILN_OK;
  case KILN_TS_MMA: return check_mma(c, &s->mma);
  default: return fail(c, "unknown statement kind %d", (int)s->kind);
  }
}

static kiln_status check_block(tcheck *c, const kiln_tblock *b, int depth) {
  if (depth > KILN_TILE_MAX_DEPTH) return fail(c, "statements nested too deeply");
  for (int i = 0; i < b->len; i++) {
    if (!b->data[i]) return fail(c, "missing statement");
    KILN_TRY(check_stmt(c, b->data[i], depth));
  }
  c->stmt = NULL;
  return KILN_OK;
}

static kiln_status check_decls(const tcheck *c) {
  const kiln_tkernel *k = c->k;
  if (!k->name) return fail(c, "kernel without a name");
  if (k->n_params < 0 || k->n_params > k->bufs.len) return fail(c, "bad parameter count");
  for (int i = 0; i < k->bufs.len; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    if (!b->name) return fail(c, "buffer %d without a name", i);
    if (!scalar_ok(b->dtype)) return fail(c, "buffer %%%s has an invalid dtype", b->name);
    if (b->size < 0) return fail(c, "buffer %%%s has a negative size", b->name);
    if (b->scope >= KILN_SCOPE_COUNT) return fail(c, "buffer %%%s: bad scope", b->name);
    if ((b->scope == KILN_SCOPE_GLOBAL) != (i < k->n_params))
      return fail(c, "buffer %%%s: parameters are global and only they are", b->name);
    if (b->readonly && b->scope != KILN_SCOPE_GLOBAL)
      return fail(c, "buffer %%%s: only parameters can be read-only", b->name);
  }
  for (int i = 0; i < k->vars.len; i++) {
    if (!k->vars.data[i].name) return fail(c, "variable %d without a name", i);
    if (!scalar_ok(k->vars.data[i].type))
      return fail(c, "variable $%s has an invalid type", k->vars.data[i].name);
  }
  return KILN_OK;
}

kiln_status kiln_tkernel_check_types(const kiln_tkernel *k) {
  tcheck c = {k, NULL};
  KILN_TRY(check_decls(&c));
  return check_block(&c, &k->body, 0);
}
