/* The precision policy (precision.h): default rules, checks, lookups and the text form. */
#include "precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"

static const char *const class_names[KILN_PREC_CLASS_COUNT] = {"elementwise", "reduction",
                                                               "contraction", "data"};

const char *kiln_prec_class_name(kiln_prec_class c) {
  return c < KILN_PREC_CLASS_COUNT ? class_names[c] : "?";
}

kiln_prec_class kiln_precision_class_of(kiln_op op) {
  switch (op) {
  case KILN_OP_MatMul:
  case KILN_OP_Gemm:
  case KILN_OP_Conv: return KILN_PREC_CONTRACTION;
  case KILN_OP_ReduceSum:
  case KILN_OP_ReduceMean:
  case KILN_OP_ReduceSumSquare:
  case KILN_OP_ReduceL1:
  case KILN_OP_ReduceL2:
  case KILN_OP_ReduceLogSum:
  case KILN_OP_ReduceLogSumExp:
  case KILN_OP_ReduceProd:
  case KILN_OP_ReduceMax:
  case KILN_OP_ReduceMin:
  case KILN_OP_ArgMax:
  case KILN_OP_ArgMin:
  case KILN_OP_Softmax:
  case KILN_OP_LogSoftmax:
  case KILN_OP_Hardmax:
  case KILN_OP_CumSum:
  case KILN_OP_CumProd:
  case KILN_OP_LayerNormalization:
  case KILN_OP_InstanceNormalization:
  case KILN_OP_LpNormalization:
  case KILN_OP_RMSNormalization:
  case KILN_OP_GroupNormalization:
  case KILN_OP_BatchNormalization:
  case KILN_OP_LRN:
  case KILN_OP_MaxPool:
  case KILN_OP_AveragePool:
  case KILN_OP_GlobalMaxPool:
  case KILN_OP_GlobalAveragePool: return KILN_PREC_REDUCTION;
  case KILN_OP_Pad:
  case KILN_OP_Gather:
  case KILN_OP_GatherElements:
  case KILN_OP_GatherND:
  case KILN_OP_Scatter:
  case KILN_OP_ScatterElements:
  case KILN_OP_ScatterND:
  case KILN_OP_ConstantOfShape:
  case KILN_OP_Trilu:
  case KILN_OP_EyeLike:
  case KILN_OP_OneHot: return KILN_PREC_DATA;
  default: return KILN_PREC_ELEMENTWISE;
  }
}

/* ---- defaults: the rules Kiln has always applied ---- */
static kiln_dtype default_compute(kiln_dtype t) {
  switch (t) {
  case KILN_F16:
  case KILN_BF16:
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ:
  case KILN_F32: return KILN_F32;
  default: return t;
  }
}

static kiln_dtype default_accumulate(kiln_prec_class c, kiln_dtype t) {
  kiln_dtype ct = default_compute(t);
  if (c != KILN_PREC_REDUCTION) return ct;
  if (kiln_dtype_is_float(ct)) return KILN_F64;
  /* mutant 378: the class test inverted (signed sums accumulate in u64) */
  return (kiln_dtype_class_of(ct) == KILN_CLASS_SINT) != KILN_MUTANT(378) ? KILN_I64 : KILN_U64;
}

void kiln_precision_default(kiln_precision_policy *p) {
  memset(p, 0, sizeof *p);
}

static bool in_range(kiln_prec_class c, kiln_dtype t) {
  return c < KILN_PREC_CLASS_COUNT && t > KILN_UNDEFINED && t < KILN_DTYPE_COUNT;
}

kiln_dtype kiln_precision_compute(const kiln_precision_policy *p, kiln_prec_class c,
                                  kiln_dtype storage) {
  if (p && in_range(c, storage) && p->rule[c][storage].compute) return p->rule[c][storage].compute;
  return default_compute(storage);
}

kiln_dtype kiln_precision_accumulate(const kiln_precision_policy *p, kiln_prec_class c,
                                     kiln_dtype storage) {
  if (p && in_range(c, storage) && p->rule[c][storage].accumulate)
    return p->rule[c][storage].accumulate;
  return default_accumulate(c, storage);
}

bool kiln_precision_is_default(const kiln_precision_policy *p) {
  for (int c = 0; p && c < KILN_PREC_CLASS_COUNT; c++)
    for (int t = 1; t < KILN_DTYPE_COUNT; t++)
      if (kiln_precision_compute(p, (kiln_prec_class)c, (kiln_dtype)t) !=
              default_compute((kiln_dtype)t) ||
          kiln_precision_accumulate(p, (kiln_prec_class)c, (kiln_dtype)t) !=
              default_accumulate((kiln_prec_class)c, (kiln_dtype)t))
        return false;
  return true;
}

/* ---- checks ---- */
static bool arith_float(kiln_dtype t) {
  return t == KILN_F16 || t == KILN_BF16 || t == KILN_F32 || t == KILN_F64;
}

/* Significand bits, then exponent range: "at least as wide" for the float rules. */
static int float_rank(kiln_dtype t) {
  return t == KILN_F64 ? 3 : t == KILN_F32 ? 2 : 1; /* f16 and bf16 do not contain each other */
}

static bool int_wide_enough(kiln_dtype from, kiln_dtype to) {
  kiln_dtype_class a = kiln_dtype_class_of(from), b = kiln_dtype_class_of(to);
  if (b != KILN_CLASS_SINT && b != KILN_CLASS_UINT) return false;
  if (from == to) return true;
  return kiln_dtype_bits(to) > kiln_dtype_bits(from) ||
         (a == b && kiln_dtype_bits(to) >= kiln_dtype_bits(from));
}

static kiln_status check_float_rule(kiln_prec_class c, kiln_dtype compute, kiln_dtype acc) {
  if (!arith_float(compute) || !arith_float(acc))
    return kiln_invalid("precision: float values compute and accumulate in f16, bf16, f32 or f64");
  if (acc != compute && float_rank(acc) <= float_rank(compute))
    return kiln_invalid("precision: accumulate type %s is narrower than compute type %s",
                        kiln_dtype_name(acc), kiln_dtype_name(compute));
  if (c == KILN_PREC_CONTRACTION && float_rank(acc) < 2)
    return kiln_invalid("precision: contractions accumulate in f32 or f64, not %s",
                        kiln_dtype_name(acc));
  return KILN_OK;
}

kiln_status kiln_precision_set(kiln_precision_policy *p, kiln_prec_class c, kiln_dtype storage,
                               kiln_dtype compute, kiln_dtype accumulate) {
  if (!in_range(c, storage) || !kiln_dtype_valid((int)compute) ||
      !kiln_dtype_valid((int)accumulate))
    return kiln_invalid("precision: bad class or dtype");
  if (kiln_dtype_is_float(storage)) {
    KILN_TRY(check_float_rule(c, compute, accumulate));
  } else {
    kiln_dtype_class sc = kiln_dtype_class_of(storage);
    if ((sc != KILN_CLASS_SINT && sc != KILN_CLASS_UINT) || compute != storage ||
        !int_wide_enough(storage, accumulate))
      return kiln_invalid("precision: %s values compute in %s and accumulate in an integer type "
                          "at least as wide",
                          kiln_dtype_name(storage), kiln_dtype_name(storage));
  }
  p->rule[c][storage].compute = compute;
  p->rule[c][storage].accumulate = accumulate;
  return KILN_OK;
}

/* ---- text: CLASS:STORAGE=COMPUTE[/ACCUMULATE] items, comma-separated ---- */
static bool class_from_name(const char *s, size_t n, kiln_prec_class *out) {
  for (int c = 0; c < KILN_PREC_CLASS_COUNT; c++)
    if (strlen(class_names[c]) == n && !strncmp(s, class_names[c], n))
      return *out = (kiln_prec_class)c, true;
  return false;
}

static bool dtype_from(const char *s, size_t n, kiln_dtype *out) {
  char buf[32];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  return kiln_dtype_from_name(buf, out) && kiln_dtype_valid((int)*out) && *out != KILN_STRING;
}

static kiln_status parse_item(kiln_precision_policy *p, const char *s, size_t n) {
  const char *colon = memchr(s, ':', n), *eq = memchr(s, '=', n);
  kiln_prec_class c;
  kiln_dtype st, ct, at;
  if (!colon || !eq || eq < colon || !class_from_name(s, (size_t)(colon - s), &c) ||
      !dtype_from(colon + 1, (size_t)(eq - colon - 1), &st))
    return kiln_invalid("precision: '%.*s' is not CLASS:STORAGE=COMPUTE[/ACCUMULATE]", (int)n, s);
  const char *rhs = eq + 1, *end = s + n, *slash = memchr(rhs, '/', (size_t)(end - rhs));
  if (!dtype_from(rhs, (size_t)((slash ? slash : end) - rhs), &ct) ||
      (slash && !dtype_from(slash + 1, (size_t)(end - slash - 1), &at)))
    return kiln_invalid("precision: '%.*s': unknown dtype", (int)n, s);
  if (!slash)
    at = c == KILN_PREC_ELEMENTWISE || c == KILN_PREC_DATA ? ct
                                                           : kiln_precision_accumulate(p, c, st);
  kiln_status e = kiln_precision_set(p, c, st, ct, at);
  return e ? kiln_status_annotate(e, "in '%.*s'", (int)n, s) : KILN_OK;
}

kiln_status kiln_precision_parse(kiln_precision_policy *p, const char *text) {
  const char *s = text ? text : "";
  while (*s) {
    size_t n = strcspn(s, ",");
    KILN_TRY(parse_item(p, s, n));
    s += n + (s[n] == ',');
  }
  return KILN_OK;
}

void kiln_precision_format(const kiln_precision_policy *p, char *buf, size_t len) {
  size_t at = 0;
  if (len) buf[0] = 0;
  for (int c = 0; p && c < KILN_PREC_CLASS_COUNT; c++)
    for (int t = 1; t < KILN_DTYPE_COUNT; t++) {
      kiln_prec_class pc = (kiln_prec_class)c;
      kiln_dtype st = (kiln_dtype)t, ct = kiln_precision_compute(p, pc, st),
                 acc = kiln_precision_accumulate(p, pc, st);
      if (ct == default_compute(st) && acc == default_accumulate(pc, st)) continue;
      int n =
          snprintf(buf + at, at < len ? len - at : 0, "%s%s:%s=%s/%s", at ? "," : "",
                   class_names[c], kiln_dtype_name(st), kiln_dtype_name(ct), kiln_dtype_name(acc));
      if (n > 0) at += (size_t)n;
    }
  if (at >= len && len > 0) buf[0] = 0; /* cut short: nothing rather than a part */
}
