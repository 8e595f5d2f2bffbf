/* The renderer's half-precision arithmetic and widening multiply-accumulate (tile.h: F16 and
 * BF16 operators, KILN_TOP_MAC), shared by the C and CUDA emitters.
 *
 * Portable form (C, and CUDA for what has no native instruction): the operands widen exactly
 * to float (kiln_f16_to_f32 / kiln_bf16_to_f32 of the shared prelude), the F32 operation
 * runs, and the result rounds back with the prelude's software rounding (kiln_f32_to_f16 /
 * kiln_f32_to_bf16: nearest even, bit for bit what src/base/dtype.c and so the tile
 * interpreter compute). Comparisons compare the widened values.
 *
 * CUDA: add, sub and mul use the GPU's own half instructions (PTX add.rn.f16 ..., sm_53;
 * add.rn.bf16 ..., sm_90) through helpers emitted once per translation unit before the first
 * kernel that needs them (kiln_render_half_helpers_cuda). A correctly rounded half add of two
 * halves equals the float add rounded to half (float has more than 2p + 2 bits), so the
 * results are the interpreter's; only a NaN's bits may differ. */
#include <stdlib.h>
#include <string.h>

#include "codegen/render.h"

static const char *widen_fn(kiln_dtype t) {
  return t == KILN_F16 ? "kiln_f16_to_f32" : "kiln_bf16_to_f32";
}

static const char *round_fn(kiln_dtype t) {
  return t == KILN_F16 ? "kiln_f32_to_f16" : "kiln_f32_to_bf16";
}

bool kiln_render_is_half_op(const kiln_texpr *e) {
  if (e->kind != KILN_TE_OP || e->op >= KILN_TOP_COUNT) return false;
  if (e->op == KILN_TOP_MAC) return true;
  return e->op != KILN_TOP_SELECT && e->args[0] && kiln_tile_half_type(e->args[0]->type);
}

/* W(x): operand i widened to float */
static kiln_status widened(kiln_render *r, const kiln_texpr *x, kiln_strbuf *b) {
  kiln_strbuf_printf(b, "%s(", widen_fn(x->type));
  KILN_TRY(kiln_render_expr(r, x, false, b));
  kiln_strbuf_printf(b, ")");
  return KILN_OK;
}

static const char *cmp_text(kiln_top op) {
  switch (op) {
  case KILN_TOP_LT: return "<";
  case KILN_TOP_LE: return "<=";
  case KILN_TOP_GT: return ">";
  case KILN_TOP_GE: return ">=";
  case KILN_TOP_EQ: return "==";
  case KILN_TOP_NE: return "!=";
  default: return NULL;
  }
}

/* The float operation on the widened operands, as a call `fn(` or infix ` op `. */
static const char *float_call(kiln_top op) {
  switch (op) {
  case KILN_TOP_ABS: return "fabsf";
  case KILN_TOP_EXP: return "expf";
  case KILN_TOP_LOG: return "logf";
  case KILN_TOP_SQRT: return "sqrtf";
  case KILN_TOP_SIN: return "sinf";
  case KILN_TOP_COS: return "cosf";
  case KILN_TOP_TAN: return "tanf";
  case KILN_TOP_ASIN: return "asinf";
  case KILN_TOP_ACOS: return "acosf";
  case KILN_TOP_ATAN: return "atanf";
  case KILN_TOP_SINH: return "sinhf";
  case KILN_TOP_COSH: return "coshf";
  case KILN_TOP_TANH: return "tanhf";
  case KILN_TOP_ASINH: return "asinhf";
  case KILN_TOP_ACOSH: return "acoshf";
  case KILN_TOP_ATANH: return "atanhf";
  case KILN_TOP_ERF: return "erff";
  case KILN_TOP_FLOOR: return "floorf";
  case KILN_TOP_CEIL: return "ceilf";
  case KILN_TOP_ROUND: return "nearbyintf";
  case KILN_TOP_MOD: return "fmodf";
  case KILN_TOP_MIN: return "kiln_min_f32";
  case KILN_TOP_MAX: return "kiln_max_f32";
  case KILN_TOP_POW: return "powf";
  case KILN_TOP_ATAN2: return "atan2f";
  default: return NULL;
  }
}

static const char *infix_text(kiln_top op) {
  switch (op) {
  case KILN_TOP_ADD: return "+";
  case KILN_TOP_SUB: return "-";
  case KILN_TOP_MUL: return "*";
  case KILN_TOP_DIV: return "/";
  default: return NULL;
  }
}

/* CUDA: the helper of a native half instruction for op on t, NULL when none. */
static const char *native_name(const kiln_render *r, kiln_top op) {
  if (!r->t->cuda) return NULL;
  switch (op) {
  case KILN_TOP_ADD: return "add";
  case KILN_TOP_SUB: return "sub";
  case KILN_TOP_MUL: return "mul";
  default: return NULL;
  }
}

static kiln_status render_native(kiln_render *r, const kiln_texpr *e, const char *name,
                                 kiln_strbuf *b) {
  kiln_strbuf_printf(b, "kiln_h%s_%s(", name, e->type == KILN_F16 ? "f16" : "bf16");
  KILN_TRY(kiln_render_expr(r, e->args[0], false, b));
  kiln_strbuf_printf(b, ", ");
  KILN_TRY(kiln_render_expr(r, e->args[1], false, b));
  kiln_strbuf_printf(b, ")");
  return KILN_OK;
}

/* ISNAN, ISINF and the comparisons: BOOL results of the widened operands. */
static kiln_status render_predicate(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  if (e->op == KILN_TOP_ISNAN || e->op == KILN_TOP_ISINF) {
    kiln_strbuf_printf(b, "(%s(", e->op == KILN_TOP_ISNAN ? "isnan" : "isinf");
    KILN_TRY(widened(r, e->args[0], b));
    kiln_strbuf_printf(b, ") != 0)");
    return KILN_OK;
  }
  kiln_strbuf_printf(b, "(");
  KILN_TRY(widened(r, e->args[0], b));
  kiln_strbuf_printf(b, " %s ", cmp_text(e->op));
  KILN_TRY(widened(r, e->args[1], b));
  kiln_strbuf_printf(b, ")");
  return KILN_OK;
}

/* R(float op (W(a)[, W(b)])) */
static kiln_status render_rounded(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  kiln_dtype t = e->args[0]->type;
  const char *fn = float_call(e->op), *in = infix_text(e->op);
  int n = kiln_top_arity(e->op);
  if (e->op != KILN_TOP_NEG && !fn && !in)
    return kiln_unsupported("operator %s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
  kiln_strbuf_printf(b, "%s(", round_fn(t));
  if (e->op == KILN_TOP_NEG) kiln_strbuf_printf(b, "-");
  kiln_strbuf_printf(b, "%s", fn ? fn : "");
  kiln_strbuf_printf(b, "(");
  KILN_TRY(widened(r, e->args[0], b));
  if (n == 2) {
    kiln_strbuf_printf(b, in ? " %s " : ", ", in ? in : "");
    KILN_TRY(widened(r, e->args[1], b));
  }
  kiln_strbuf_printf(b, "))");
  return KILN_OK;
}

/* mac(acc, a, b): I32 wraps (the product of two 8-bit values is exact in int32_t); F32 adds
 * the exact product of the widened halves, one rounding. */
static kiln_status render_mac(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  bool fl = e->type == KILN_F32;
  kiln_strbuf_printf(b, fl ? "(" : "((int32_t)((uint32_t)");
  KILN_TRY(kiln_render_expr(r, e->args[0], false, b));
  kiln_strbuf_printf(b, fl ? " + " : " + (uint32_t)((int32_t)");
  if (fl) KILN_TRY(widened(r, e->args[1], b));
  else KILN_TRY(kiln_render_expr(r, e->args[1], false, b));
  kiln_strbuf_printf(b, fl ? " * " : " * (int32_t)");
  if (fl) KILN_TRY(widened(r, e->args[2], b));
  else KILN_TRY(kiln_render_expr(r, e->args[2], false, b));
  kiln_strbuf_printf(b, fl ? ")" : ")))");
  return KILN_OK;
}

kiln_status kiln_render_half(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  if (e->op == KILN_TOP_MAC) return render_mac(r, e, b);
  if (kiln_top_class(e->op) == 'c') return render_predicate(r, e, b);
  const char *native = native_name(r, e->op);
  if (native) return render_native(r, e, native, b);
  return render_rounded(r, e, b);
}

/* ---- CUDA: the native half instructions ---- */
static bool expr_native(const kiln_render *r, const kiln_texpr *e) {
  if (!e) return false;
  if (kiln_render_is_half_op(e) && e->op != KILN_TOP_MAC && native_name(r, e->op)) return true;
  if (expr_native(r, e->index)) return true;
  for (int i = 0; i < 3; i++)
    if (expr_native(r, e->args[i])) return true;
  return false;
}

static bool block_native(const kiln_render *r, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (expr_native(r, s->extent) || expr_native(r, s->cond) || expr_native(r, s->index) ||
        expr_native(r, s->value) || block_native(r, &s->body) || block_native(r, &s->orelse))
      return true;
  }
  return false;
}

static const char cuda_half_helpers[] =
    "#ifndef KILN_HALF_NATIVE\n"
    "#define KILN_HALF_NATIVE\n"
    "/* native half arithmetic (PTX; f16: sm_53, bf16: sm_90), round to nearest even */\n"
    "#define KILN_HOP(NAME, INSN) \\\n"
    "  KILN_FN uint16_t NAME(uint16_t a, uint16_t b) { \\\n"
    "    uint16_t r; \\\n"
    "    asm(INSN \" %0, %1, %2;\" : \"=h\"(r) : \"h\"(a), \"h\"(b)); \\\n"
    "    return r; \\\n"
    "  }\n"
    "KILN_HOP(kiln_hadd_f16, \"add.rn.f16\")\n"
    "KILN_HOP(kiln_hsub_f16, \"sub.rn.f16\")\n"
    "KILN_HOP(kiln_hmul_f16, \"mul.rn.f16\")\n"
    "KILN_HOP(kiln_hadd_bf16, \"add.rn.bf16\")\n"
    "KILN_HOP(kiln_hsub_bf16, \"sub.rn.bf16\")\n"
    "KILN_HOP(kiln_hmul_bf16, \"mul.rn.bf16\")\n"
    "#endif\n";

void kiln_render_half_helpers_cuda(const kiln_render *r, kiln_strbuf *out) {
  if (block_native(r, &r->k->body))
    kiln_strbuf_append(out, cuda_half_helpers, sizeof cuda_half_helpers - 1);
}
