/* The C-like renderer core shared by the C and CUDA emitters: names, types, expressions
 * with the tile interpreter's semantics, statements, and the shared helper prelude. */
#include "render.h"

#include "base/mutate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---- */
static const char *const reserved[] = {
    "auto",     "break",    "case",     "char",      "const",    "continue", "default",
    "do",       "double",   "else",     "enum",      "extern",   "float",    "for",
    "goto",     "if",       "inline",   "int",       "long",     "register", "restrict",
    "return",   "short",    "signed",   "sizeof",    "static",   "struct",   "switch",
    "typedef",  "union",    "unsigned", "void",      "volatile", "while",    "args",
    "bool",     "true",     "false",    "new",       "delete",   "this",     "class",
    "template", "private",  "public",   "namespace", "operator", "main",     "threadIdx",
    "blockIdx", "blockDim", "gridDim",  "NAN",       "INFINITY", "asm",      "typename",
};

static bool name_taken(const char *s, char **names, int n) {
  if (!strncmp(s, "kiln_", 5) || !strncmp(s, "KILN_", 5) || !strncmp(s, "__", 2)) return true;
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (!strcmp(s, reserved[i])) return true;
  for (int i = 0; i < n; i++)
    if (names[i] && !strcmp(s, names[i])) return true;
  return false;
}

/* A C identifier from an IR name: other characters become '_'; taken names get a suffix. */
static char *make_name(const char *src, char prefix, int id, char **taken, int n_taken) {
  size_t len = strlen(src);
  char *s = kiln_xmalloc(len + 32);
  size_t j = 0;
  if (len == 0 || (src[0] >= '0' && src[0] <= '9')) s[j++] = prefix;
  for (size_t i = 0; i < len; i++) {
    char c = src[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    s[j++] = ok ? c : '_';
  }
  s[j] = 0;
  if (name_taken(s, taken, n_taken)) snprintf(s + j, 32, "_%c%d", prefix, id);
  return s;
}

void kiln_render_init(kiln_render *r, const kiln_tkernel *k, const kiln_codegen_opts *o,
                      const kiln_render_target *t, kiln_strbuf *out) {
  memset(r, 0, sizeof *r);
  r->k = k;
  r->o = o;
  r->t = t;
  r->out = out;
  int nb = k->bufs.len, nv = k->vars.len;
  char **all = kiln_xcalloc((size_t)(nb + nv) + 1, sizeof(char *));
  for (int i = 0; i < nb; i++) all[i] = make_name(k->bufs.data[i].name, 'b', i, all, i);
  for (int i = 0; i < nv; i++) all[nb + i] = make_name(k->vars.data[i].name, 'v', i, all, nb + i);
  r->buf_names = kiln_xcalloc((size_t)nb + 1, sizeof(char *));
  r->var_names = kiln_xcalloc((size_t)nv + 1, sizeof(char *));
  memcpy(r->buf_names, all, (size_t)nb * sizeof(char *));
  memcpy(r->var_names, all + nb, (size_t)nv * sizeof(char *));
  free(all);
  r->loop_var = kiln_xcalloc((size_t)nv + 1, sizeof(bool));
}

void kiln_render_free(kiln_render *r) {
  for (int i = 0; i < r->k->bufs.len; i++) free(r->buf_names[i]);
  for (int i = 0; i < r->k->vars.len; i++) free(r->var_names[i]);
  free(r->buf_names);
  free(r->var_names);
  free(r->loop_var);
}

/* ---- types ---- */
const char *kiln_render_ctype(kiln_dtype t) {
  switch (t) {
  case KILN_BOOL:
  case KILN_U8:
  case KILN_U4:
  case KILN_I4:
  case KILN_U2:
  case KILN_I2:
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ: return "uint8_t";
  case KILN_I8: return "int8_t";
  case KILN_I16: return KILN_MUTANT(220) ? "uint16_t" : "int16_t"; /* mutant 220: unsigned */
  case KILN_U16:
  case KILN_F16:
  case KILN_BF16: return "uint16_t";
  case KILN_I32: return "int32_t";
  case KILN_U32: return "uint32_t";
  case KILN_I64: return "int64_t";
  case KILN_U64: return "uint64_t";
  case KILN_F32: return "float";
  case KILN_F64: return "double";
  default: return NULL;
  }
}

/* The kernel's name becomes a C symbol as it is: it must be an identifier (the lowering makes
 * it one; a tile IR text may hold any quoted name). */
static kiln_status check_symbol(const kiln_tkernel *k) {
  const char *s = k->name;
  bool ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_';
  for (; ok && *s; s++)
    ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
         *s == '_';
  if (ok && strlen(k->name) < 256) return KILN_OK;
  kiln_strbuf b = {0};
  kiln_esc_line(&b, k->name);
  kiln_status st = kiln_invalid("kernel '%.200s': the name is not a C identifier", b.data);
  kiln_strbuf_free(&b);
  return st;
}

kiln_status kiln_render_check_types(const kiln_tkernel *k) {
  KILN_TRY(check_symbol(k));
  for (int i = 0; i < k->bufs.len; i++)
    if (!kiln_render_ctype(k->bufs.data[i].dtype))
      return kiln_unsupported("kernel '%s': buffer '%s' of type %s has no code generation", k->name,
                              k->bufs.data[i].name, kiln_dtype_name(k->bufs.data[i].dtype));
  for (int i = 0; i < k->vars.len; i++)
    if (!kiln_render_ctype(k->vars.data[i].type))
      return kiln_unsupported("kernel '%s': variable '%s' of type %s has no code generation",
                              k->name, k->vars.data[i].name, kiln_dtype_name(k->vars.data[i].type));
  return KILN_OK;
}

/* Suffix of the per-type helpers (kiln_div_i32, kiln_min_f32). */
static const char *suffix(kiln_dtype t) {
  switch (t) {
  case KILN_I8: return "i8";
  case KILN_I16: return "i16";
  case KILN_I32: return "i32";
  case KILN_I64: return "i64";
  case KILN_BOOL:
  case KILN_U8: return "u8";
  case KILN_U16: return "u16";
  case KILN_U32: return KILN_MUTANT(114) ? "i32" : "u32"; /* mutant 114: u32 helpers signed */
  case KILN_U64: return "u64";
  case KILN_F32: return "f32";
  case KILN_F64: return "f64";
  default: return NULL;
  }
}

static bool is_fp(kiln_dtype t) {
  return t == KILN_F32 || t == KILN_F64;
}

static bool is_f8(kiln_dtype t) {
  return t == KILN_F8E4M3FN || t == KILN_F8E4M3FNUZ || t == KILN_F8E5M2 || t == KILN_F8E5M2FNUZ;
}

static bool is_sub_byte(kiln_dtype t) {
  return t == KILN_I4 || t == KILN_U4 || t == KILN_I2 || t == KILN_U2;
}

/* The unsigned type integer arithmetic of t wraps in (at least 32 bits: no promotion). */
static const char *wrap_type(kiln_dtype t) {
  if (KILN_MUTANT(77)) return t == KILN_U64 ? "uint64_t" : "uint32_t"; /* mutant 77: I64 too */
  return kiln_dtype_size(t) == 8 ? "uint64_t" : "uint32_t";
}

/* ---- output ---- */
void kiln_render_line(kiln_render *r, const char *fmt, ...) {
  for (int i = 0; i < r->indent; i++) kiln_strbuf_append(r->out, "  ", 2);
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(r->out, fmt, ap);
  va_end(ap);
  kiln_strbuf_append(r->out, "\n", 1);
}

void kiln_render_origin(kiln_render *r) {
  const char *o = r->k->origin && *r->k->origin ? r->k->origin : "(no graph node)";
  kiln_strbuf_printf(r->out, "/* kernel %s from: ", r->k->name);
  if (KILN_MUTANT(276)) /* mutant 276: the node names written into the comment as they are */
    kiln_strbuf_printf(r->out, "%.*s", (int)KILN_RENDER_ORIGIN_MAX, o);
  else kiln_esc_c_comment(r->out, o, KILN_RENDER_ORIGIN_MAX); /* names are data, never code */
  kiln_strbuf_printf(r->out, " */\n");
}

/* ---- constants ---- */
static void render_float(double v, kiln_dtype t, kiln_strbuf *b) {
  bool f32 = t == KILN_F32;
  if (isnan(v)) kiln_strbuf_printf(b, f32 ? "KILN_NANF" : "KILN_NAN");
  else if (isinf(v)) /* mutant 181: the sign of an infinite constant dropped */
    kiln_strbuf_printf(b, "(%sKILN_INF%s)", v < 0 && !KILN_MUTANT(181) ? "-" : "", f32 ? "F" : "");
  else if (v == 0 && signbit(v) && !KILN_MUTANT(180)) /* mutant 180: -0 printed as 0 */
    kiln_strbuf_printf(b, f32 ? "(-0.0f)" : "(-0.0)");
  else if (v == 0) kiln_strbuf_printf(b, f32 ? "0.0f" : "0.0");
  else if (f32 && KILN_MUTANT(148)) /* mutant 148: f32 constants printed with six decimals */
    kiln_strbuf_printf(b, v < 0 ? "(%ff)" : "%ff", (double)(float)v);
  else if (f32) /* mutant 393: an f32 constant printed without its suffix (a double) */
    kiln_strbuf_printf(b,
                       KILN_MUTANT(393) ? (v < 0 ? "(%a)" : "%a")
                       : v < 0          ? "(%af)"
                                        : "%af",
                       (double)(float)v);
  else /* mutant 218: an f64 constant printed through float */
    kiln_strbuf_printf(b, v < 0 ? "(%a)" : "%a", KILN_MUTANT(218) ? (double)(float)v : v);
}

static void render_int(int64_t v, kiln_dtype t, kiln_strbuf *b) {
  if (t == KILN_U64) kiln_strbuf_printf(b, "UINT64_C(%llu)", (unsigned long long)v);
  else if (t == KILN_I64 && v == INT64_MIN) kiln_strbuf_printf(b, "INT64_MIN");
  else if (t == KILN_I64 && (v > INT32_MAX || v < -INT32_MAX))
    kiln_strbuf_printf(b, "INT64_C(%lld)", (long long)v);
  else if (t == KILN_I64 || t == KILN_I32 || t == KILN_BOOL)
    kiln_strbuf_printf(b, v < 0 ? "(%lld)" : "%lld", (long long)v);
  else if (t == KILN_U32) kiln_strbuf_printf(b, "%lluu", (unsigned long long)(uint32_t)v);
  else kiln_strbuf_printf(b, "((%s)%lld)", kiln_render_ctype(t), (long long)v);
}

static kiln_status render_const(const kiln_texpr *e, kiln_strbuf *b) {
  if (e->kind == KILN_TE_INT) {
    if (!suffix(e->type) && !is_sub_byte(e->type))
      return kiln_unsupported("integer constant of type %s", kiln_dtype_name(e->type));
    render_int(e->i, e->type, b);
    return KILN_OK;
  }
  switch (e->type) {
  case KILN_F32:
  case KILN_F64: render_float(e->f, e->type, b); return KILN_OK;
  case KILN_F16: kiln_strbuf_printf(b, "((uint16_t)0x%04x)", kiln_f64_to_f16(e->f)); return KILN_OK;
  case KILN_BF16: { /* rounded once, from the double (through float it could round twice) */
    uint16_t bits = 0;
    kiln_store_f64(KILN_BF16, &bits, 0, e->f);
    kiln_strbuf_printf(b, "((uint16_t)0x%04x)", bits);
    return KILN_OK;
  }
  default:
    if (is_f8(e->type)) {
      kiln_strbuf_printf(b, "((uint8_t)0x%02x)", kiln_f64_to_f8(e->type, e->f, true));
      return KILN_OK;
    }
    return kiln_unsupported("float constant of type %s", kiln_dtype_name(e->type));
  }
}

/* ---- operators ---- */
static const char *float_fn(kiln_top op) {
  switch (op) {
  case KILN_TOP_EXP: return "exp";
  case KILN_TOP_LOG: return "log";
  case KILN_TOP_SQRT: return "sqrt";
  case KILN_TOP_SIN: return "sin";
  case KILN_TOP_COS: return "cos";
  case KILN_TOP_TAN: return "tan";
  case KILN_TOP_ASIN: return "asin";
  case KILN_TOP_ACOS: return "acos";
  case KILN_TOP_ATAN: return "atan";
  case KILN_TOP_SINH: return "sinh";
  case KILN_TOP_COSH: return "cosh";
  case KILN_TOP_TANH: return "tanh";
  case KILN_TOP_ASINH: return "asinh";
  case KILN_TOP_ACOSH: return "acosh";
  case KILN_TOP_ATANH: return "atanh";
  case KILN_TOP_ERF: return "erf";
  case KILN_TOP_FLOOR: return KILN_MUTANT(186) ? "trunc" : "floor"; /* mutant 186: toward 0 */
  case KILN_TOP_CEIL: return "ceil";
  case KILN_TOP_ROUND: return KILN_MUTANT(112) ? "round" : "nearbyint"; /* mutant 112: ties away */
  case KILN_TOP_ABS: return "fabs";
  case KILN_TOP_POW: return "pow";
  case KILN_TOP_ATAN2: return "atan2";
  case KILN_TOP_MOD: return KILN_MUTANT(244) ? "remainder" : "fmod"; /* mutant 244 */
  default: return NULL;
  }
}

static const char *infix(kiln_top op) {
  switch (op) {
  case KILN_TOP_ADD: return "+";
  case KILN_TOP_SUB: return "-";
  case KILN_TOP_MUL: return "*";
  case KILN_TOP_DIV: return "/";
  case KILN_TOP_AND: return "&";
  case KILN_TOP_OR: return "|";
  case KILN_TOP_XOR: return "^";
  case KILN_TOP_LT: return "<";
  case KILN_TOP_LE: return "<=";
  case KILN_TOP_GT: return ">";
  case KILN_TOP_GE: return ">=";
  case KILN_TOP_EQ: return "==";
  case KILN_TOP_NE: return "!=";
  default: return NULL;
  }
}

/* Helper-call operators: name prefix of kiln_<name>_<suffix>(a[, b]). */
static const char *helper_op(kiln_top op, kiln_dtype t) {
  switch (op) {
  case KILN_TOP_MIN: return "min";
  case KILN_TOP_MAX: return "max";
  case KILN_TOP_DIV: return is_fp(t) ? NULL : "div";
  case KILN_TOP_MOD: return is_fp(t) ? NULL : "mod";
  case KILN_TOP_SHL: return "shl";
  case KILN_TOP_SHR: return "shr";
  case KILN_TOP_ABS: return is_fp(t) ? NULL : "abs";
  default: return NULL;
  }
}

static kiln_status sub(kiln_render *r, const kiln_texpr *e, bool index, kiln_strbuf *b) {
  if (!e) return kiln_invalid("kernel '%s': missing operand", r->k->name);
  return kiln_render_expr(r, e, index, b);
}

/* Index arithmetic: plain C on I64 (ADD, SUB, MUL; DIV and MOD by a positive constant). */
static bool plain_index_op(const kiln_texpr *e) {
  if (e->type != KILN_I64 || e->args[0]->type != KILN_I64) return false;
  switch (e->op) {
  case KILN_TOP_ADD:
  case KILN_TOP_SUB:
  case KILN_TOP_MUL: return true;
  case KILN_TOP_DIV:
  case KILN_TOP_MOD: return e->args[1]->kind == KILN_TE_INT && e->args[1]->i > 0;
  default: return false;
  }
}

/* An I64 expression of loop variables and constants only (ADD, SUB, MUL; DIV, MOD by
 * positive constants): bounded by the loop extents, it is emitted as plain C even outside
 * indices (conditions such as `b * 32 + t < n`). */
static bool affine(const kiln_render *r, const kiln_texpr *e) {
  if (!e || e->type != KILN_I64) return false;
  if (e->kind == KILN_TE_INT) return true;
  if (e->kind == KILN_TE_VAR) return e->var >= 0 && e->var < r->k->vars.len && r->loop_var[e->var];
  if (e->kind != KILN_TE_OP || !e->args[0] || !e->args[1] || !plain_index_op(e)) return false;
  return affine(r, e->args[0]) && affine(r, e->args[1]);
}

static kiln_status render_binary(kiln_render *r, const kiln_texpr *e, bool index, kiln_strbuf *b) {
  kiln_dtype t = e->args[0]->type;
  const char *h = helper_op(e->op, t), *fn = float_fn(e->op), *in = infix(e->op);
  bool cls_c = kiln_top_class(e->op) == 'c';
  bool wrap = !is_fp(t) && !cls_c &&
              (e->op == KILN_TOP_ADD || e->op == KILN_TOP_SUB || e->op == KILN_TOP_MUL);
  if (KILN_MUTANT(75) && (t == KILN_U8 || t == KILN_U16))
    wrap = false; /* mutant 75: narrow unsigned arithmetic left to C (promoted to int) */
  if (cls_c && affine(r, e->args[0]) && affine(r, e->args[1])) index = true;
  if ((index && plain_index_op(e)) || affine(r, e))
    h = NULL, fn = NULL, wrap = false, in = e->op == KILN_TOP_MOD ? "%" : in;
  if (KILN_MUTANT(48) && h && e->op == KILN_TOP_MIN && t == KILN_F32) h = "max"; /* mutant 48 */
  if (KILN_MUTANT(280) && h && t == KILN_F64 && (e->op == KILN_TOP_MIN || e->op == KILN_TOP_MAX))
    h = NULL, fn = e->op == KILN_TOP_MIN ? "fmin" : "fmax"; /* mutant 280: libm (NaN dropped) */
  if (KILN_MUTANT(49) && h && e->op == KILN_TOP_DIV && t == KILN_I32) { /* mutant 49: floors */
    kiln_strbuf_printf(b, "((int32_t)floor((double)");
    KILN_TRY(sub(r, e->args[0], index, b));
    kiln_strbuf_printf(b, " / (double)");
    KILN_TRY(sub(r, e->args[1], index, b));
    kiln_strbuf_printf(b, "))");
    return KILN_OK;
  }
  if (KILN_MUTANT(51) && in && e->op == KILN_TOP_GT && t == KILN_I32) in = ">=";   /* mutant 51 */
  bool bare = KILN_MUTANT(50) && !h && !wrap && e->op == KILN_TOP_SUB && is_fp(t); /* mutant 50 */
  if (h) {
    if (!suffix(t)) return kiln_unsupported("%s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
    kiln_strbuf_printf(b, "kiln_%s_%s(", h, suffix(t));
  } else if (fn && is_fp(t)) { /* mutant 366: pow of doubles through powf */
    kiln_strbuf_printf(b, "%s%s(", fn,
                       t == KILN_F32 || (KILN_MUTANT(366) && e->op == KILN_TOP_POW) ? "f" : "");
  } else if (wrap) {
    /* BOOL arithmetic keeps one bit, as the interpreter's */
    kiln_strbuf_printf(b, "((%s)(%s(%s)", kiln_render_ctype(t), t == KILN_BOOL ? "(" : "",
                       wrap_type(t));
  } else if (in) {
    if (!bare) kiln_strbuf_printf(b, "(");
  } else {
    return kiln_unsupported("operator %s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
  }
  KILN_TRY(sub(r, e->args[0], index, b));
  if (h || (fn && is_fp(t))) kiln_strbuf_printf(b, ", ");
  else if (wrap) kiln_strbuf_printf(b, " %s (%s)", in, wrap_type(t));
  else kiln_strbuf_printf(b, " %s ", in);
  KILN_TRY(sub(r, e->args[1], index, b));
  kiln_strbuf_printf(b, bare ? "" : !wrap ? ")" : t == KILN_BOOL ? ") & 1u))" : "))");
  return KILN_OK;
}

static kiln_status render_unary(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  kiln_dtype t = e->args[0]->type;
  const char *h = helper_op(e->op, t), *fn = float_fn(e->op);
  if (e->op == KILN_TOP_NOT || (e->op == KILN_TOP_BITNOT && (t == KILN_BOOL || KILN_MUTANT(184)))) {
    /* mutant 184: integer BitwiseNot rendered as the logical ! */
    kiln_strbuf_printf(b, "(!");
  } else if (e->op == KILN_TOP_ISNAN || e->op == KILN_TOP_ISINF) {
    if (!is_fp(t)) return kiln_unsupported("%s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
    kiln_strbuf_printf(b, "(%s(", e->op == KILN_TOP_ISNAN ? "isnan" : "isinf");
  } else if (e->op == KILN_TOP_NEG && is_fp(t)) { /* mutant 151: 0 - x (+0 for x = 0) */
    kiln_strbuf_printf(b, KILN_MUTANT(151) ? "(0 - " : "(-");
  } else if (e->op == KILN_TOP_NEG || e->op == KILN_TOP_BITNOT) {
    if (!suffix(t)) return kiln_unsupported("%s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
    kiln_strbuf_printf(b, "((%s)(%s(%s)", kiln_render_ctype(t),
                       e->op == KILN_TOP_NEG ? "0u - " : "~", wrap_type(t));
  } else if (KILN_MUTANT(147) && e->op == KILN_TOP_ABS && suffix(t)) { /* mutant 147: fabs */
    kiln_strbuf_printf(b, "((%s)fabs((double)", kiln_render_ctype(t));
  } else if (h && suffix(t)) {
    kiln_strbuf_printf(b, "kiln_%s_%s(", h, suffix(t));
  } else if (fn && is_fp(t)) { /* mutant 76: the float function on doubles (expf) */
    kiln_strbuf_printf(b, "%s%s(", fn, t == KILN_F32 || KILN_MUTANT(76) ? "f" : "");
  } else {
    return kiln_unsupported("operator %s on %s", kiln_top_name(e->op), kiln_dtype_name(t));
  }
  KILN_TRY(sub(r, e->args[0], false, b));
  if (e->op == KILN_TOP_ISNAN || e->op == KILN_TOP_ISINF) /* mutant 392: compared with 1 */
    kiln_strbuf_printf(b, KILN_MUTANT(392) ? ") == 1)" : ") != 0)");
  else if ((e->op == KILN_TOP_NEG || (e->op == KILN_TOP_BITNOT && !KILN_MUTANT(184))) &&
           !is_fp(t) && t != KILN_BOOL)
    kiln_strbuf_printf(b, "))");
  else if (KILN_MUTANT(147) && e->op == KILN_TOP_ABS && suffix(t) && !is_fp(t))
    kiln_strbuf_printf(b, "))");
  else kiln_strbuf_printf(b, ")");
  return KILN_OK;
}

/* ---- casts ----
 * Storage formats decode to float first (exactly), sub-byte integers widen to 8 bits; then
 * the value converts to the target with the semantics documented in codegen.h. */
static const char *f8_name(kiln_dtype t) {
  switch (t) {
  case KILN_F8E4M3FN: return "f8e4m3fn";
  case KILN_F8E4M3FNUZ: return "f8e4m3fnuz";
  case KILN_F8E5M2: return "f8e5m2";
  case KILN_F8E5M2FNUZ: return "f8e5m2fnuz";
  default: return NULL;
  }
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...) {
  kiln_strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  return b.data;
}

/* Decodes x of storage type *t (consumed) to an arithmetic type, which *t becomes. */
static char *decode_text(kiln_dtype *t, char *x) {
  char *s = NULL;
  if (*t == KILN_F16) s = str_printf("kiln_f16_to_f32(%s)", x), *t = KILN_F32;
  else if (*t == KILN_BF16) /* mutant 78: bf16 decoded as f16 */
    s = str_printf(KILN_MUTANT(78) ? "kiln_f16_to_f32(%s)" : "kiln_bf16_to_f32(%s)", x),
    *t = KILN_F32;
  else if (is_f8(*t)) s = str_printf("kiln_%s_to_f32(%s)", f8_name(*t), x), *t = KILN_F32;
  else if (*t == KILN_I4 || *t == KILN_I2)
    s = str_printf("kiln_sext%d(%s)", *t == KILN_I4 ? 4 : 2, x), *t = KILN_I8;
  else if (*t == KILN_U4 || *t == KILN_U2)
    s = str_printf("((uint8_t)(%s & %s))", x, *t == KILN_U4 ? "0xF" : "0x3"), *t = KILN_U8;
  else return x;
  free(x);
  return s;
}

/* Converts x (consumed) of arithmetic type `from` to `to`. */
static char *convert_text(kiln_dtype from, kiln_dtype to, char *x) {
  char *s;
  const char *dbl = from == KILN_F64 ? "" : "(double)";
  if (from == to) return x;
  /* mutant 391: only the unsigned 64-bit source rounded to odd (int64 rounds twice) */
  if (((from == KILN_I64 && !KILN_MUTANT(391)) || from == KILN_U64) && to != KILN_F32 &&
      to != KILN_F64 && kiln_dtype_is_float(to)) { /* through the double rounded to odd */
    s = str_printf("kiln_%s_odd(%s)", from == KILN_I64 ? "i64" : "u64", x);
    free(x);
    x = s, dbl = "";
  }
  if (to == KILN_BOOL) s = str_printf("(%s != 0)", x);
  else if ((to == KILN_F32 || to == KILN_F64) && from == KILN_U64 && KILN_MUTANT(421))
    s = str_printf("((%s)(int64_t)%s)", kiln_render_ctype(to), x); /* mutant 421: u64 signed */
  else if (to == KILN_F32 && from == KILN_I64 && KILN_MUTANT(425))
    s = str_printf("((float)(double)%s)", x); /* mutant 425: int64 to f32 through double */
  else if (to == KILN_F32 || to == KILN_F64) s = str_printf("((%s)%s)", kiln_render_ctype(to), x);
  else if (to == KILN_F16 && (from == KILN_F32 || (KILN_MUTANT(310) && from == KILN_F64)))
    s = str_printf("kiln_f32_to_f16(%s)", x); /* mutant 310: f64 through the f32 helper */
  else if (to == KILN_F16) s = str_printf("kiln_f64_to_f16(%s%s)", dbl, x);
  else if (to == KILN_BF16 && /* mutant 279: sources of 4 bytes or less through float */
           (from == KILN_F32 || (KILN_MUTANT(279) && kiln_dtype_size(from) <= 4)))
    s = str_printf("kiln_f32_to_bf16(%s)", x);
  else if (to == KILN_BF16) s = str_printf("kiln_f64_to_bf16(%s%s)", dbl, x);
  else if (is_f8(to)) s = str_printf("kiln_f64_to_%s(%s%s)", f8_name(to), dbl, x);
  else if (is_sub_byte(to))
    s = str_printf(is_fp(from) ? "((uint8_t)(kiln_f64_to_bits(%s%s) & %s))"
                               : "((uint8_t)((uint64_t)%s%s & %s))",
                   is_fp(from) ? dbl : "", x, to == KILN_I4 || to == KILN_U4 ? "0xF" : "0x3");
  /* mutant 420: a float to an integer of 4 bytes or less through (int32_t) (u32 from 2^31) */
  else if (is_fp(from) && KILN_MUTANT(420) && kiln_dtype_size(to) <= 4)
    s = str_printf("((%s)(int32_t)%s)", kiln_render_ctype(to), x);
  else if (is_fp(from)) /* mutant 146: the value passed through float (f64 loses its low bits) */
    s = str_printf("((%s)kiln_f64_to_bits(%s%s))", kiln_render_ctype(to),
                   KILN_MUTANT(146) ? "(float)" : dbl, x);
  else s = str_printf("((%s)%s)", kiln_render_ctype(to), x);
  free(x);
  return s;
}

/* x (consumed) of any type `from` as a value of type `to`. */
static char *cast_text(kiln_dtype from, kiln_dtype to, char *x) {
  if (from == to) return x;
  x = decode_text(&from, x);
  return convert_text(from, to, x);
}

static kiln_status render_cast(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b) {
  kiln_dtype to = e->type, from = e->args[0]->type;
  if (!kiln_render_ctype(to) || !kiln_render_ctype(from))
    return kiln_unsupported("cast from %s to %s", kiln_dtype_name(from), kiln_dtype_name(to));
  char *x = NULL;
  KILN_TRY(kiln_render_expr_str(r, e->args[0], false, &x));
  x = cast_text(from, to, x);
  kiln_strbuf_printf(b, "%s", x);
  free(x);
  return KILN_OK;
}

/* ---- expressions ---- */
kiln_status kiln_render_expr(kiln_render *r, const kiln_texpr *e, bool index, kiln_strbuf *b) {
  switch (e->kind) {
  case KILN_TE_INT:
  case KILN_TE_FLOAT: return render_const(e, b);
  case KILN_TE_VAR:
    if (e->var < 0 || e->var >= r->k->vars.len)
      return kiln_invalid("kernel '%s': variable %d out of range", r->k->name, e->var);
    kiln_strbuf_printf(b, "%s", r->var_names[e->var]);
    return KILN_OK;
  case KILN_TE_LOAD:
    if (e->buf < 0 || e->buf >= r->k->bufs.len)
      return kiln_invalid("kernel '%s': buffer %d out of range", r->k->name, e->buf);
    kiln_strbuf_printf(b, "%s[", r->buf_names[e->buf]);
    KILN_TRY(sub(r, e->index, true, b));
    kiln_strbuf_printf(b, "]");
    return KILN_OK;
  case KILN_TE_CAST: return render_cast(r, e, b);
  case KILN_TE_OP: break;
  default: return kiln_invalid("kernel '%s': bad expression kind %d", r->k->name, e->kind);
  }
  if (e->op >= KILN_TOP_COUNT) return kiln_invalid("kernel '%s': bad operator", r->k->name);
  int arity = kiln_top_arity(e->op);
  for (int i = 0; i < arity; i++)
    if (!e->args[i]) return kiln_invalid("kernel '%s': missing operand", r->k->name);
  if (kiln_render_is_half_op(e)) return kiln_render_half(r, e, b);
  if (e->op == KILN_TOP_SELECT) {
    kiln_strbuf_printf(b, "(");
    KILN_TRY(sub(r, e->args[0], false, b));
    kiln_strbuf_printf(b, " ? ");
    KILN_TRY(sub(r, e->args[1], index, b));
    kiln_strbuf_printf(b, " : ");
    KILN_TRY(sub(r, e->args[2], index, b));
    kiln_strbuf_printf(b, ")");
    return KILN_OK;
  }
  return arity == 1 ? render_unary(r, e, b) : render_binary(r, e, index, b);
}

kiln_status kiln_render_expr_str(kiln_render *r, const kiln_texpr *e, bool index, char **out) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s", "");
  kiln_status st = kiln_render_expr(r, e, index, &b);
  if (st) {
    kiln_strbuf_free(&b);
    return st;
  }
  *out = b.data;
  return KILN_OK;
}

/* ---- statements ---- */
kiln_status kiln_render_for_header(kiln_render *r, const kiln_tstmt *s) {
  char *ext = NULL;
  KILN_TRY(kiln_render_expr_str(r, s->extent, true, &ext));
  const char *v = r->var_names[s->var];
  kiln_render_line(r, "for (int64_t %s = 0; %s < %s; %s++) {", v, v, ext, v);
  free(ext);
  return KILN_OK;
}

static kiln_status render_line_expr(kiln_render *r, const char *pre, const kiln_texpr *idx,
                                    const char *mid, const kiln_texpr *val, const char *post) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s", pre);
  kiln_status st = KILN_OK;
  if (idx) st = kiln_render_expr(r, idx, true, &b);
  kiln_strbuf_printf(&b, "%s", mid);
  if (!st && val) st = kiln_render_expr(r, val, false, &b);
  kiln_strbuf_printf(&b, "%s", post);
  if (!st) kiln_render_line(r, "%s", b.data);
  kiln_strbuf_free(&b);
  return st;
}

static kiln_status render_if(kiln_render *r, const kiln_tstmt *s) {
  KILN_TRY(render_line_expr(r, "if (", NULL, "", s->cond, ") {"));
  r->indent++;
  KILN_TRY(kiln_render_block(r, &s->body));
  r->indent--;
  if (s->orelse.len > KILN_MUTANT(307)) { /* mutant 307: an else of one statement dropped */
    kiln_render_line(r, "} else {");
    r->indent++;
    KILN_TRY(kiln_render_block(r, &s->orelse));
    r->indent--;
  }
  kiln_render_line(r, "}");
  return KILN_OK;
}

kiln_status kiln_render_stmt(kiln_render *r, const kiln_tstmt *s) {
  const kiln_tkernel *k = r->k;
  switch (s->kind) {
  case KILN_TS_FOR:
    if (s->var < 0 || s->var >= k->vars.len || !s->extent)
      return kiln_invalid("kernel '%s': malformed loop", k->name);
    return r->t->loop(r, s);
  case KILN_TS_IF:
    if (!s->cond) return kiln_invalid("kernel '%s': if without condition", k->name);
    return render_if(r, s);
  case KILN_TS_STORE: {
    if (s->buf < 0 || s->buf >= k->bufs.len || !s->index || !s->value)
      return kiln_invalid("kernel '%s': malformed store", k->name);
    char pre[256];
    snprintf(pre, sizeof pre, "%s[", r->buf_names[s->buf]);
    return render_line_expr(r, pre, s->index, "] = ", s->value, ";");
  }
  case KILN_TS_ASSIGN: {
    if (s->var < 0 || s->var >= k->vars.len || !s->value)
      return kiln_invalid("kernel '%s': malformed assignment", k->name);
    char pre[256];
    snprintf(pre, sizeof pre, "%s = ", r->var_names[s->var]);
    return render_line_expr(r, pre, NULL, "", s->value, ";");
  }
  case KILN_TS_BARRIER: return r->t->barrier(r, s);
  case KILN_TS_MMA: return r->t->mma(r, s);
  default: return kiln_invalid("kernel '%s': bad statement kind %d", k->name, s->kind);
  }
}

kiln_status kiln_render_block(kiln_render *r, const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) KILN_TRY(kiln_render_stmt(r, b->data[i]));
  return KILN_OK;
}

/* ---- MMA as loops ---- */
static kiln_status mma_check(kiln_render *r, const kiln_tmma *m) {
  const kiln_tkernel *k = r->k;
  int bufs[3] = {m->c_buf, m->a_buf, m->b_buf};
  for (int i = 0; i < 3; i++)
    if (bufs[i] < 0 || bufs[i] >= k->bufs.len)
      return kiln_invalid("kernel '%s': mma buffer out of range", k->name);
  if (!m->c_off || !m->a_off || !m->b_off || m->m <= 0 || m->n <= 0 || m->k <= 0)
    return kiln_invalid("kernel '%s': malformed mma", k->name);
  kiln_dtype ct = k->bufs.data[m->c_buf].dtype;
  if (!suffix(ct)) return kiln_unsupported("mma accumulating in %s", kiln_dtype_name(ct));
  return KILN_OK;
}

/* buf[idx] converted to type `to` */
static void mma_operand(kiln_render *r, int buf, kiln_dtype to, const char *idx, kiln_strbuf *b) {
  char *x = str_printf("%s[%s]", r->buf_names[buf], idx);
  x = cast_text(r->k->bufs.data[buf].dtype, to, x);
  kiln_strbuf_printf(b, "%s", x);
  free(x);
}

kiln_status kiln_render_mma_loops(kiln_render *r, const kiln_tstmt *s) {
  const kiln_tmma *m = &s->mma;
  KILN_TRY(mma_check(r, m));
  char *co = NULL, *ao = NULL, *bo = NULL;
  kiln_status st = kiln_render_expr_str(r, m->c_off, true, &co);
  if (!st) st = kiln_render_expr_str(r, m->a_off, true, &ao);
  if (!st) st = kiln_render_expr_str(r, m->b_off, true, &bo);
  if (st) {
    free(co), free(ao), free(bo);
    return st;
  }
  kiln_dtype ct = r->k->bufs.data[m->c_buf].dtype;
  const char *cty = kiln_render_ctype(ct);
  kiln_render_line(r, "{ /* mma %lldx%lldx%lld (loops) */", (long long)m->m, (long long)m->n,
                   (long long)m->k);
  r->indent++;
  kiln_render_line(r, "for (int64_t kiln_i = 0; kiln_i < %lld; kiln_i++) {", (long long)m->m);
  kiln_render_line(r, "  for (int64_t kiln_j = 0; kiln_j < %lld; kiln_j++) {", (long long)m->n);
  char cidx[512], aidx[512], bidx[512];
  snprintf(cidx, sizeof cidx, "(%s) + kiln_i * %lld + kiln_j", co, (long long)m->ldc);
  snprintf(aidx, sizeof aidx, "(%s) + kiln_i * %lld + kiln_p * %lld", ao, (long long)m->a_sm,
           (long long)m->a_sk);
  snprintf(bidx, sizeof bidx, "(%s) + kiln_p * %lld + kiln_j * %lld", bo, /* mutant 242 */
           (long long)(KILN_MUTANT(242) ? m->b_sn : m->b_sk), /* B's two strides swapped */
           (long long)(KILN_MUTANT(242) ? m->b_sk : m->b_sn));
  kiln_render_line(r, "    %s kiln_acc = %s[%s];", cty, r->buf_names[m->c_buf], cidx);
  kiln_render_line(r, "    for (int64_t kiln_p = 0; kiln_p < %lld; kiln_p++) {", (long long)m->k);
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "      kiln_acc = ");
  /* mutant 423: the float accumulation as acc + a * b (two roundings, no fma) */
  bool fused = is_fp(ct) && !KILN_MUTANT(423);
  if (fused) /* mutant 149: the float fma for every float type */
    kiln_strbuf_printf(&b, "%s(", ct == KILN_F32 || KILN_MUTANT(149) ? "fmaf" : "fma");
  else if (is_fp(ct)) kiln_strbuf_printf(&b, "(kiln_acc + ");
  else kiln_strbuf_printf(&b, "(%s)(kiln_acc + (%s)", cty, wrap_type(ct));
  mma_operand(r, m->a_buf, ct, aidx, &b);
  if (is_fp(ct)) kiln_strbuf_printf(&b, fused ? ", " : " * ");
  else kiln_strbuf_printf(&b, " * (%s)", wrap_type(ct));
  mma_operand(r, m->b_buf, ct, bidx, &b);
  kiln_strbuf_printf(&b, fused ? ", kiln_acc);" : ");");
  kiln_render_line(r, "%s", b.data);
  kiln_strbuf_free(&b);
  kiln_render_line(r, "    }");
  kiln_render_line(r, "    %s[%s] = kiln_acc;", r->buf_names[m->c_buf], cidx);
  kiln_render_line(r, "  }");
  kiln_render_line(r, "}");
  r->indent--;
  kiln_render_line(r, "}");
  free(co), free(ao), free(bo);
  return KILN_OK;
}

/* ---- the shared helper prelude ----
 * Integer helpers give the wrap-around semantics without undefined behaviour; the narrow
 * float conversions give the results of src/base/dtype.c bit for bit (round to nearest
 * even; the generic routine covers every (sign, E, M, bias) format). */
static const char helpers[] =
    "/* ---- integers: wrap-around, no undefined behaviour ---- */\n"
    "#define KILN_SINT_OPS(S, T, U, BITS, MIN)                                          \\\n"
    "  KILN_FN T kiln_div_##S(T a, T b) {                                               \\\n"
    "    return b == 0 ? (T)0 : (a == MIN && b == -1) ? a : (T)(a / b);                 \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_mod_##S(T a, T b) {                                               \\\n"
    "    return (b == 0 || (a == MIN && b == -1)) ? (T)0 : (T)(a % b);                  \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_shl_##S(T a, T b) {                                               \\\n"
    "    return (uint64_t)b >= BITS ? (T)0 : (T)((U)a << b);                            \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_shr_##S(T a, T b) {                                               \\\n"
    "    return (uint64_t)b >= BITS ? (T)0 : (T)(a >> b);                               \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_abs_##S(T a) { return a < 0 ? (T)(0u - (U)a) : a; }               \\\n"
    "  KILN_FN T kiln_min_##S(T a, T b) { return a < b ? a : b; }                       \\\n"
    "  KILN_FN T kiln_max_##S(T a, T b) { return a < b ? b : a; }\n"
    "#define KILN_UINT_OPS(S, T, U, BITS)                                               \\\n"
    "  KILN_FN T kiln_div_##S(T a, T b) { return b == 0 ? (T)0 : (T)(a / b); }          \\\n"
    "  KILN_FN T kiln_mod_##S(T a, T b) { return b == 0 ? (T)0 : (T)(a % b); }          \\\n"
    "  KILN_FN T kiln_shl_##S(T a, T b) {                                               \\\n"
    "    return (uint64_t)b >= BITS ? (T)0 : (T)((U)a << b);                            \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_shr_##S(T a, T b) {                                               \\\n"
    "    return (uint64_t)b >= BITS ? (T)0 : (T)(a >> b);                               \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN T kiln_abs_##S(T a) { return a; }                                        \\\n"
    "  KILN_FN T kiln_min_##S(T a, T b) { return a < b ? a : b; }                       \\\n"
    "  KILN_FN T kiln_max_##S(T a, T b) { return a < b ? b : a; }\n"
    "KILN_SINT_OPS(i8, int8_t, uint32_t, 8, -128)\n"
    "KILN_SINT_OPS(i16, int16_t, uint32_t, 16, -32768)\n"
    "KILN_SINT_OPS(i32, int32_t, uint32_t, 32, (-2147483647 - 1))\n"
    "KILN_SINT_OPS(i64, int64_t, uint64_t, 64, (-9223372036854775807ll - 1))\n"
    "KILN_UINT_OPS(u8, uint8_t, uint32_t, 8)\n"
    "KILN_UINT_OPS(u16, uint16_t, uint32_t, 16)\n"
    "KILN_UINT_OPS(u32, uint32_t, uint32_t, 32)\n"
    "KILN_UINT_OPS(u64, uint64_t, uint64_t, 64)\n"
    "KILN_FN int8_t kiln_sext4(uint8_t v) { return (int8_t)((v & 0xF) ^ 0x8) - 8; }\n"
    "KILN_FN int8_t kiln_sext2(uint8_t v) { return (int8_t)((v & 0x3) ^ 0x2) - 2; }\n"
    "\n"
    "/* ---- floats: MIN/MAX propagate NaN ---- */\n"
    "KILN_FN float kiln_min_f32(float a, float b) { return a != a ? a : b != b ? b : a < b ? a : "
    "b; }\n"
    "KILN_FN float kiln_max_f32(float a, float b) { return a != a ? a : b != b ? b : a > b ? a : "
    "b; }\n"
    "KILN_FN double kiln_min_f64(double a, double b) { return a != a ? a : b != b ? b : a < b ? a "
    ": b; }\n"
    "KILN_FN double kiln_max_f64(double a, double b) { return a != a ? a : b != b ? b : a > b ? a "
    ": b; }\n"
    "/* float -> integer bits: truncate toward zero, wrap modulo 2^64; NaN -> 0; beyond the\n"
    "   64-bit range saturate */\n"
    "KILN_FN uint64_t kiln_f64_to_bits(double v) {\n"
    "  if (v != v) return 0;\n"
    "  v = trunc(v);\n"
    "  if (v >= -0x1p63 && v < 0x1p63) return (uint64_t)(int64_t)v;\n"
    "  if (v >= 0 && v < 0x1p64) return (uint64_t)v;\n"
    "  return v < 0 ? 0x8000000000000000ull : 0xFFFFFFFFFFFFFFFFull;\n"
    "}\n"
    "\n"
    "/* a 64-bit integer as a double rounded to odd: rounding that to a narrower float rounds\n"
    "   the integer once (kiln_u64_to_f64_odd of src/base/dtype.c) */\n"
    "KILN_FN double kiln_u64_odd(uint64_t v) {\n"
    "  int drop = 0;\n"
    "  if (v < (1ull << 53)) return (double)v;\n"
    "  while (drop < 11 && v >> (53 + drop)) drop++;\n"
    "  return (double)(((v >> drop) | ((v & ((1ull << drop) - 1)) != 0)) << drop);\n"
    "}\n"
    "KILN_FN double kiln_i64_odd(int64_t v) {\n"
    "  return v < 0 ? -kiln_u64_odd(0 - (uint64_t)v) : kiln_u64_odd((uint64_t)v);\n"
    "}\n"
    "\n"
    "/* ---- narrow floats (round to nearest even), as src/base/dtype.c ---- */\n"
    "KILN_FN double kiln_ff_decode(uint32_t code, int e, int m, int bias, int ieee, int uz,\n"
    "                              uint32_t nan_code) {\n"
    "  uint32_t sign_bit = 1u << (e + m), mag = code & (sign_bit - 1);\n"
    "  uint32_t ex = mag >> m, mant = mag & ((1u << m) - 1);\n"
    "  int neg = (code & sign_bit) != 0;\n"
    "  if (uz && code == nan_code) return KILN_NAN;\n"
    "  if (ieee && ex == (1u << e) - 1) return mant ? KILN_NAN : neg ? -KILN_INF : KILN_INF;\n"
    "  if (!ieee && !uz && nan_code && mag == nan_code) return KILN_NAN;\n"
    "  double v = ex == 0 ? ldexp((double)mant, 1 - bias - m)\n"
    "                     : ldexp((double)(mant | (1u << m)), (int)ex - bias - m);\n"
    "  return neg ? -v : v;\n"
    "}\n"
    "KILN_FN uint32_t kiln_ff_mag(double a, int m, int bias) {\n"
    "  int x;\n"
    "  if (a == 0) return 0;\n"
    "  frexp(a, &x);\n"
    "  x -= 1;\n"
    "  if (x < 1 - bias) return (uint32_t)nearbyint(ldexp(a, m - (1 - bias)));\n"
    "  double q = nearbyint(ldexp(a, m - x));\n"
    "  if (q >= ldexp(1.0, m + 1)) q /= 2, x += 1;\n"
    "  double c = ldexp((double)(x + bias), m) + (q - ldexp(1.0, m));\n"
    "  return c > 268435455.0 ? 268435455u : (uint32_t)c;\n"
    "}\n"
    "KILN_FN uint32_t kiln_ff_encode(double v, int e, int m, int bias, uint32_t max_code,\n"
    "                                uint32_t nan_code, int ieee, int uz, int saturate) {\n"
    "  uint32_t sign_bit = 1u << (e + m), sign = signbit(v) ? sign_bit : 0;\n"
    "  uint32_t over = saturate || !nan_code ? max_code : ieee ? ((1u << e) - 1) << m : nan_code;\n"
    "  uint32_t mag;\n"
    "  if (v != v) return uz ? nan_code : (nan_code | sign);\n"
    "  mag = isinf(v) ? over : kiln_ff_mag(fabs(v), m, bias);\n"
    "  if (mag > max_code && !isinf(v)) mag = over;\n"
    "  if (uz && (mag == nan_code || mag == 0)) return mag;\n"
    "  return sign | mag;\n"
    "}\n"
    "KILN_FN float kiln_f16_to_f32(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;\n"
    "  if (e == 0x1f) return m ? KILN_NANF : sign ? -KILN_INFF : KILN_INFF;\n"
    "  if (e == 0) return sign ? -((float)m * 0x1p-24f) : (float)m * 0x1p-24f;\n"
    "  return kiln_bits_f32(sign | ((e + 112) << 23) | (m << 13));\n"
    "}\n"
    "KILN_FN uint16_t kiln_f32_to_f16(float f) {\n"
    "  uint32_t u = kiln_f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;\n"
    "  if (a > 0x7f800000) return (uint16_t)(sign | 0x7e00);\n"
    "  if (a >= 0x47800000) return (uint16_t)(sign | 0x7c00);\n"
    "  if (a >= 0x38800000)\n"
    "    return (uint16_t)(sign | ((a + 0xfff + ((a >> 13) & 1) - 0x38000000) >> 13));\n"
    "  return (uint16_t)(sign | (uint32_t)nearbyintf(kiln_bits_f32(a) * 0x1p24f));\n"
    "}\n"
    "KILN_FN uint16_t kiln_f64_to_f16(double v) {\n"
    "  return (uint16_t)kiln_ff_encode(v, 5, 10, 15, 0x7BFF, 0x7E00, 1, 0, 0);\n"
    "}\n"
    "KILN_FN float kiln_bf16_to_f32(uint16_t h) { return kiln_bits_f32((uint32_t)h << 16); }\n"
    "KILN_FN uint16_t kiln_f32_to_bf16(float f) {\n"
    "  uint32_t u = kiln_f32_bits(f);\n"
    "  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)(((u >> 16) & 0x8000) | 0x7fc0);\n"
    "  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);\n"
    "}\n"
    "KILN_FN uint16_t kiln_f64_to_bf16(double v) {\n"
    "  return (uint16_t)kiln_ff_encode(v, 8, 7, 127, 0x7F7F, 0x7FC0, 1, 0, 0);\n"
    "}\n"
    "#define KILN_F8(S, E, M, B, MAXC, NANC, IEEE, UZ)                                  \\\n"
    "  KILN_FN float kiln_##S##_to_f32(uint8_t c) {                                     \\\n"
    "    return (float)kiln_ff_decode(c, E, M, B, IEEE, UZ, NANC);                        \\\n"
    "  }                                                                                \\\n"
    "  KILN_FN uint8_t kiln_f64_to_##S(double v) {                                      \\\n"
    "    return (uint8_t)kiln_ff_encode(v, E, M, B, MAXC, NANC, IEEE, UZ, 1);             \\\n"
    "  }\n"
    "KILN_F8(f8e4m3fn, 4, 3, 7, 0x7E, 0x7F, 0, 0)\n"
    "KILN_F8(f8e4m3fnuz, 4, 3, 8, 0x7F, 0x80, 0, 1)\n"
    "KILN_F8(f8e5m2, 5, 2, 15, 0x7B, 0x7F, 1, 0)\n"
    "KILN_F8(f8e5m2fnuz, 5, 2, 16, 0x7F, 0x80, 0, 1)\n";

/* The helpers with the first `from` replaced by `to` (seeded bugs only). */
static void helpers_replaced(kiln_strbuf *out, const char *from, const char *to) {
  const char *p = strstr(helpers, from);
  if (!p) p = helpers + sizeof helpers - 1, from = "", to = "";
  kiln_strbuf_append(out, helpers, (size_t)(p - helpers));
  kiln_strbuf_append(out, to, strlen(to));
  p += strlen(from);
  kiln_strbuf_append(out, p, strlen(p));
}

void kiln_render_helpers(kiln_strbuf *out) {
  if (KILN_MUTANT(214)) /* mutant 214: the int64 helpers wrap in uint32_t (the i32 line copied) */
    helpers_replaced(out, "KILN_SINT_OPS(i64, int64_t, uint64_t",
                     "KILN_SINT_OPS(i64, int64_t, uint32_t");
  /* mutant 215: f32 -> f16 rounds ties up (the tie-to-even term dropped) */
  else if (KILN_MUTANT(215))
    helpers_replaced(out, "(a + 0xfff + ((a >> 13) & 1) - 0x38000000)",
                     "(a + 0x1000 - 0x38000000)");
  else if (KILN_MUTANT(216)) /* mutant 216: float -> integer bits without the NaN test */
    helpers_replaced(out, "  if (v != v) return 0;\n  v = trunc(v);", "  v = trunc(v);");
  else if (KILN_MUTANT(217)) /* mutant 217: f32 -> bf16 rounds a NaN's payload like a number */
    helpers_replaced(
        out,
        "  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)(((u >> 16) & 0x8000) | 0x7fc0);\n",
        "");
  else if (KILN_MUTANT(219)) /* mutant 219: min_f64 keeps NaN only as its second operand */
    helpers_replaced(out, "kiln_min_f64(double a, double b) { return a != a ? a : b != b ? b : ",
                     "kiln_min_f64(double a, double b) { return b != b ? b : ");
  /* mutant 73: f32 -> bf16 truncates instead of rounding to nearest even */
  else if (KILN_MUTANT(73))
    helpers_replaced(out, "(u + 0x7fff + ((u >> 16) & 1)) >> 16", "u >> 16");
  else if (KILN_MUTANT(74)) /* mutant 74: f16 subnormals decode as zero */
    helpers_replaced(out, "-((float)m * 0x1p-24f) : (float)m * 0x1p-24f", "-0.0f : 0.0f");
  else if (KILN_MUTANT(110)) /* mutant 110: max_f32 keeps NaN only as its second operand */
    helpers_replaced(out, "kiln_max_f32(float a, float b) { return a != a ? a : b != b ? b : ",
                     "kiln_max_f32(float a, float b) { return ");
  else if (KILN_MUTANT(111)) /* mutant 111: f32 -> f16 overflows to inf from 65504 on */
    helpers_replaced(out, "if (a >= 0x47800000) return", "if (a > 0x477fe000) return");
  else if (KILN_MUTANT(116)) /* mutant 116: f32 -> f16 turns the infinities into NaN */
    helpers_replaced(out, "if (a > 0x7f800000) return (uint16_t)(sign | 0x7e00);",
                     "if (a >= 0x7f800000) return (uint16_t)(sign | 0x7e00);");
  else if (KILN_MUTANT(113)) /* mutant 113: float -> integer bits saturate from 2^63 (u64) */
    helpers_replaced(out, "  if (v >= 0 && v < 0x1p64) return (uint64_t)v;\n", "");
  else if (KILN_MUTANT(145)) /* mutant 145: top binade of narrow subnormals encoded as normal */
    helpers_replaced(out, "if (x < 1 - bias)", "if (x < -bias)");
  else if (KILN_MUTANT(150)) /* mutant 150: f32 -> f16 subnormals truncated (not rounded) */
    helpers_replaced(out, "(uint32_t)nearbyintf(kiln_bits_f32(a) * 0x1p24f)",
                     "(uint32_t)(kiln_bits_f32(a) * 0x1p24f)");
  else if (KILN_MUTANT(182)) /* mutant 182: f16 -inf decodes as +inf */
    helpers_replaced(out, "m ? KILN_NANF : sign ? -KILN_INFF : KILN_INFF;",
                     "m ? KILN_NANF : KILN_INFF;");
  else if (KILN_MUTANT(185)) /* mutant 185: a finite narrow-float overflow saturates (not inf) */
    helpers_replaced(out, "uint32_t over = saturate || !nan_code ? max_code",
                     "uint32_t over = !isinf(v) ? max_code");
  else if (KILN_MUTANT(243)) /* mutant 243: narrow-float encoding takes the sign as v < 0 */
    helpers_replaced(out, "sign = signbit(v) ? sign_bit : 0", "sign = v < 0 ? sign_bit : 0");
  else if (KILN_MUTANT(245)) /* mutant 245: narrow-float encoding rounds ties away from zero */
    helpers_replaced(out, "double q = nearbyint(ldexp(a, m - x));",
                     "double q = round(ldexp(a, m - x));");
  else if (KILN_MUTANT(277)) /* mutant 277: float -> integer rounds down (floor, not trunc) */
    helpers_replaced(out, "  v = trunc(v);\n", "  v = floor(v);\n");
  else if (KILN_MUTANT(305)) /* mutant 305: an f16 NaN decodes as an infinity */
    helpers_replaced(out, "if (e == 0x1f) return m ? KILN_NANF : sign",
                     "if (e == 0x1f) return sign");
  else if (KILN_MUTANT(306)) /* mutant 306: the sticky bit of the odd rounding dropped */
    helpers_replaced(out, "(((v >> drop) | ((v & ((1ull << drop) - 1)) != 0)) << drop)",
                     "((v >> drop) << drop)");
  else if (KILN_MUTANT(308)) /* mutant 308: the largest finite code taken for an overflow */
    helpers_replaced(out, "if (mag > max_code && !isinf(v))", "if (mag >= max_code && !isinf(v))");
  else if (KILN_MUTANT(335)) /* mutant 335: integers below 2^54 converted directly (2^53 on) */
    helpers_replaced(out, "if (v < (1ull << 53)) return (double)v;",
                     "if (v < (1ull << 54)) return (double)v;");
  else if (KILN_MUTANT(336)) /* mutant 336: f32 -> f16 takes [2^-15, 2^-14) for normal */
    helpers_replaced(out, "if (a >= 0x38800000)\n", "if (a >= 0x38000000)\n");
  else if (KILN_MUTANT(323)) /* mutant 323: negative f16 subnormals decode positive */
    helpers_replaced(out, "-((float)m * 0x1p-24f) : (float)m", "(float)m * 0x1p-24f : (float)m");
  else if (KILN_MUTANT(397)) /* mutant 397: at most 10 bits dropped (64 - 53 - 1) */
    helpers_replaced(out, "while (drop < 11 && v >> (53 + drop))",
                     "while (drop < 10 && v >> (53 + drop))");
  else if (KILN_MUTANT(115)) /* mutant 115: signed min compares the unsigned bit patterns */
    helpers_replaced(out, "kiln_min_##S(T a, T b) { return a < b ? a : b; }",
                     "kiln_min_##S(T a, T b) { return (U)a < (U)b ? a : b; }");
  else kiln_strbuf_append(out, helpers, sizeof helpers - 1);
}
