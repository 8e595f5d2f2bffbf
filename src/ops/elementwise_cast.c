/* Elementwise ops with their own loops: Cast, CastLike, BitCast, Identity,
 * Where.
 *
 * Cast follows the ONNX rules: float -> int truncates toward zero and wraps
 * (out of range is undefined in the spec; the wrap is deterministic), int ->
 * int wraps, anything -> bool is "nonzero", float8 targets saturate unless
 * saturate=0, float8e8m0 rounds as round_mode says. Strings parse as numbers
 * ("1e-5", "INF", "-inf", "NaN") and numbers print as numpy's str does (the
 * ONNX reference): shortest digits that read back to the same value. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attr_decode.h"
#include "ew_internal.h"

/* ---- float targets ---- */

/* float8e8m0 from the bits of v as float32, as the ONNX reference does. */
static uint8_t to_e8m0(double v, const kiln_ew_cast_opts *o) {
  float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, 4);
  uint32_t e = (bits >> 23) & 0xFF;
  if (e == 0xFF) return 0xFF;
  bool up = false;
  if (o->round_mode == 0) { /* up */
    up = (bits & 0x7FFFFF) != 0;
  } else if (o->round_mode == 2) { /* nearest, ties up */
    bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1FFFFF;
    up = g && (r || s || e > 0);
  }
  if (up && o->saturate && e == 0xFE) up = false;
  return (uint8_t)(e + up);
}

/* float4e2m1 has no NaN and the spec leaves NaN's cast unspecified; ONNX's test
 * data (made with ml_dtypes) gives 0x8 (-0) for NaN and 0x0 for -NaN. */
static uint8_t to_f4e2m1(double v, const kiln_ew_cast_opts *o) {
  if (isnan(v)) return signbit(v) ? 0x0 : 0x8;
  return kiln_f64_to_f4e2m1(v, o->saturate);
}

static void store_float(kiln_dtype d, void *p, size_t j, double v, const kiln_ew_cast_opts *o) {
  switch (d) {
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ: ((uint8_t *)p)[j] = kiln_f64_to_f8(d, v, o->saturate); break;
  case KILN_F8E8M0: ((uint8_t *)p)[j] = to_e8m0(v, o); break;
  case KILN_F4E2M1: ((uint8_t *)p)[j] = to_f4e2m1(v, o); break;
  default: kiln_store_f64(d, p, j, v); break;
  }
}

/* ---- numbers -> numbers ---- */

static void cast_num(const kiln_tensor *src, size_t i, kiln_tensor *dst, size_t j,
                     const kiln_ew_cast_opts *o) {
  kiln_dtype s = src->dtype, d = dst->dtype;
  bool dfloat = kiln_dtype_is_float(d);
  switch (kiln_dtype_class_of(s)) {
  case KILN_CLASS_FLOAT: {
    double v = kiln_load_f64(s, src->data, i);
    if (dfloat) store_float(d, dst->data, j, v, o);
    else kiln_store_f64(d, dst->data, j, v);
    break;
  }
  case KILN_CLASS_SINT: {
    int64_t v = kiln_load_i64(s, src->data, i);
    if (d == KILN_F32) ((float *)dst->data)[j] = (float)v; /* one rounding */
    else if (d == KILN_F64) ((double *)dst->data)[j] = (double)v;
    else if (dfloat) store_float(d, dst->data, j, kiln_i64_to_f64_odd(v), o); /* one rounding */
    else kiln_store_i64(d, dst->data, j, v);
    break;
  }
  default: {
    uint64_t v = kiln_load_u64(s, src->data, i);
    if (d == KILN_F32) ((float *)dst->data)[j] = (float)v;
    else if (d == KILN_F64) ((double *)dst->data)[j] = (double)v;
    else if (dfloat) store_float(d, dst->data, j, kiln_u64_to_f64_odd(v), o); /* one rounding */
    else kiln_store_u64(d, dst->data, j, v);
    break;
  }
  }
}

/* ---- numbers -> strings ---- */

/* Whether the decimal text reads back as v in dtype t. */
static bool reads_back(const char *text, double v, kiln_dtype t) {
  uint64_t tmp = 0;
  kiln_store_f64(t, &tmp, 0, strtod(text, NULL));
  double back = kiln_load_f64(t, &tmp, 0);
  return back == v;
}

/* Positional printing holds below 10^digits of the type (numpy 2's str). */
static double positional_limit(kiln_dtype t) {
  return t == KILN_F64 ? 1e16 : (t == KILN_F16 ? 1e3 : 1e7);
}

/* A float of dtype t as numpy's str prints it: the shortest digits that read
 * back as the same value, positional ("0.1", "65504.0") for 1e-4 <= |v| <
 * 10^digits, else scientific with a two-digit exponent ("1e-05", "6.55e+04").
 */
static void format_float(double v, kiln_dtype t, char *out, size_t n) {
  if (isnan(v) || isinf(v)) {
    snprintf(out, n, "%s", isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf"));
    return;
  }
  char e[48];
  int p = 1;
  for (; p < 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    if (reads_back(e, v, t)) break;
  }
  snprintf(e, sizeof e, "%.*e", p - 1, v);
  char *ep = strchr(e, 'e');
  int x = atoi(ep + 1);
  if (v == 0 || (fabs(v) >= 1e-4 && fabs(v) < positional_limit(t))) {
    snprintf(out, n, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
    if (!strchr(out, '.')) strncat(out, ".0", n - strlen(out) - 1);
  } else {
    *ep = 0;
    snprintf(out, n, "%se%c%02d", e, x < 0 ? '-' : '+', abs(x));
  }
}

static void num_to_string(const kiln_tensor *src, size_t i, char *out, size_t n) {
  kiln_dtype s = src->dtype;
  if (s == KILN_BOOL) snprintf(out, n, "%s", kiln_load_u64(s, src->data, i) ? "True" : "False");
  else if (kiln_dtype_is_float(s)) format_float(kiln_load_f64(s, src->data, i), s, out, n);
  else if (kiln_dtype_class_of(s) == KILN_CLASS_UINT)
    snprintf(out, n, "%llu", (unsigned long long)kiln_load_u64(s, src->data, i));
  else snprintf(out, n, "%lld", (long long)kiln_load_i64(s, src->data, i));
}

/* ---- strings -> numbers ---- */

static bool only_space(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return *s == 0;
}

/* Parses s into element j of dst; false when s is not a number. */
static bool parse_number(const char *s, kiln_tensor *dst, size_t j, const kiln_ew_cast_opts *o) {
  kiln_dtype d = dst->dtype;
  char *end;
  if (kiln_dtype_is_int(d)) { /* exact for integer text, else through double (truncates) */
    errno = 0;
    bool neg = strchr(s, '-') != NULL;
    if (neg || d != KILN_U64) {
      long long v = strtoll(s, &end, 10);
      if (end != s && only_space(end) && !errno) return kiln_store_i64(d, dst->data, j, v), true;
    } else {
      unsigned long long v = strtoull(s, &end, 10);
      if (end != s && only_space(end) && !errno) return kiln_store_u64(d, dst->data, j, v), true;
    }
  }
  if (d == KILN_F32) {
    float f = strtof(s, &end);
    ((float *)dst->data)[j] = f;
    return end != s && only_space(end);
  }
  double v = strtod(s, &end);
  if (end == s || !only_space(end)) {
    if (d != KILN_BOOL) return false;
    kiln_store_u64(d, dst->data, j, strcasecmp(s, "true") == 0); /* "True"/"False" */
    return strcasecmp(s, "true") == 0 || strcasecmp(s, "false") == 0;
  }
  if (kiln_dtype_is_float(d)) store_float(d, dst->data, j, v, o);
  else kiln_store_f64(d, dst->data, j, v);
  return true;
}

kiln_status kiln_ew_cast_tensor(const kiln_eval_ctx *ctx, const kiln_tensor *src, kiln_tensor *dst,
                                const kiln_ew_cast_opts *o) {
  bool from_str = src->dtype == KILN_STRING, to_str = dst->dtype == KILN_STRING;
  char buf[64];
  for (int64_t k = 0; k < src->numel; k++) {
    size_t i = (size_t)k;
    const char *s = from_str ? ((char *const *)src->data)[i] : NULL;
    if (from_str && !s) s = "";
    if (to_str) {
      if (!from_str) num_to_string(src, i, buf, sizeof buf);
      ((char **)dst->data)[i] = kiln_xstrdup(from_str ? s : buf);
    } else if (from_str) {
      if (!parse_number(s, dst, i, o))
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot convert string '%.40s' to %s", s,
                               kiln_dtype_name(dst->dtype));
    } else {
      cast_num(src, i, dst, i, o);
    }
  }
  return KILN_OK;
}

/* ---- Cast, CastLike ---- */

kiln_status kiln_ew_cast_to(const kiln_node *node, kiln_dtype *out) {
  const kiln_attr *a = kiln_node_attr(node, "to");
  if (!a) return kiln_invalid("attribute 'to' is missing");
  if (a->kind == KILN_ATTR_STRING) { /* Cast-1: a type name such as "FLOAT" */
    for (int t = 1; t < KILN_DTYPE_COUNT; t++)
      if (kiln_dtype_valid(t) && strcasecmp(a->s, kiln_dtype_onnx_name((kiln_dtype)t)) == 0)
        return *out = (kiln_dtype)t, KILN_OK;
    return kiln_invalid("attribute 'to' names an unknown type '%s'", a->s);
  }
  if (a->kind != KILN_ATTR_INT || !kiln_dtype_valid((int)a->i))
    return kiln_invalid("attribute 'to' is not a supported type");
  *out = (kiln_dtype)a->i;
  return KILN_OK;
}

static kiln_status eval_cast_to(const kiln_eval_ctx *ctx, kiln_dtype *to) {
  kiln_status st = kiln_ew_cast_to(ctx->node, to);
  if (st) {
    char buf[160];
    return kiln_status_annotate(st, "%s", kiln_node_label(ctx->node, buf, sizeof buf));
  }
  return KILN_OK;
}

static kiln_status cast_opts(const kiln_eval_ctx *ctx, kiln_ew_cast_opts *o) {
  kiln_attrs_cast ca;
  KILN_TRY(kiln_attrs_cast_decode(ctx->node, &ca));
  o->saturate = ca.saturate;
  o->round_mode = ca.round_mode == KILN_ROUND_UP ? 0 : ca.round_mode == KILN_ROUND_DOWN ? 1 : 2;
  return KILN_OK;
}

static kiln_status cast_run(kiln_eval_ctx *ctx, const kiln_tensor *x, kiln_dtype to) {
  kiln_ew_cast_opts o;
  KILN_TRY(cast_opts(ctx, &o));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, to, x->rank, x->dims, &y));
  return kiln_ew_cast_tensor(ctx, x, y, &o);
}

kiln_status kiln_ew_eval_cast(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_dtype to;
  KILN_TRY(eval_cast_to(ctx, &to));
  return cast_run(ctx, x, to);
}

kiln_status kiln_ew_eval_castlike(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *like;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &like));
  return cast_run(ctx, x, like->dtype);
}

/* ---- BitCast: the same bits read as another type of the same width ---- */

kiln_status kiln_ew_eval_bitcast(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_dtype to;
  KILN_TRY(eval_cast_to(ctx, &to));
  if (x->dtype == KILN_STRING || to == KILN_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "BitCast does not take strings");
  if (kiln_dtype_bits(x->dtype) != kiln_dtype_bits(to) ||
      kiln_dtype_size(x->dtype) != kiln_dtype_size(to))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "BitCast from %s to %s changes the bit width",
                           kiln_dtype_name(x->dtype), kiln_dtype_name(to));
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, to, x->rank, x->dims, &y));
  memcpy(y->data, x->data, kiln_tensor_nbytes(x));
  return KILN_OK;
}

/* ---- Identity (tensors, sequences, optionals) ---- */

kiln_status kiln_ew_eval_identity(kiln_eval_ctx *ctx) {
  if (ctx->n_in < 1 || !ctx->in[0])
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input 0 is missing");
  kiln_val *v;
  KILN_TRY(kiln_val_clone(ctx->in[0], &v));
  ctx->out[0] = v;
  return KILN_OK;
}

/* ---- Where(cond, x, y) with multidirectional broadcasting ---- */

static void where_copy(const kiln_tensor *src, size_t i, kiln_tensor *dst, size_t j) {
  if (dst->dtype == KILN_STRING) {
    const char *s = ((char *const *)src->data)[i];
    ((char **)dst->data)[j] = kiln_xstrdup(s ? s : "");
    return;
  }
  size_t es = kiln_dtype_size(dst->dtype);
  memcpy((char *)dst->data + j * es, (const char *)src->data + i * es, es);
}

kiln_status kiln_ew_eval_where(kiln_eval_ctx *ctx) {
  const kiln_tensor *ts[3];
  for (int k = 0; k < 3; k++) KILN_TRY(kiln_eval_in_req(ctx, k, &ts[k]));
  if (ts[0]->dtype != KILN_BOOL)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "condition has type %s, not bool",
                           kiln_dtype_name(ts[0]->dtype));
  if (ts[1]->dtype != ts[2]->dtype)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X has type %s and Y %s",
                           kiln_dtype_name(ts[1]->dtype), kiln_dtype_name(ts[2]->dtype));
  kiln_ew_bcast b;
  KILN_TRY(kiln_ew_bcast_begin(ctx, 3, ts, &b));
  kiln_tensor *out;
  kiln_status st = kiln_eval_out(ctx, 0, ts[1]->dtype, b.rank, b.dims, &out);
  for (int64_t j = 0; !st && j < b.numel; j++) {
    bool c = ((const uint8_t *)ts[0]->data)[b.off[0]] != 0;
    where_copy(c ? ts[1] : ts[2], (size_t)b.off[c ? 1 : 2], out, (size_t)j);
    kiln_ew_bcast_next(&b);
  }
  kiln_ew_bcast_end(&b);
  return st;
}
