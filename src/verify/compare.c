/* Comparison of a computed value against the reference with error bounds (verify.h):
 * element i passes when |got_i - val_i| <= max(floor_i, KILN_VERIFY_SAFETY err_i) (no floor
 * where err_i is exactly 0: a result every correct implementation computes exactly), NaN and
 * Inf match exactly, integers, bools and strings are exact, and a zero with no error bound
 * has the reference's sign unless the value passed an op that may choose it
 * (kiln_vref.zloose). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "verify/bound/bound_internal.h"

/* The dtype floor atol + rtol |v|. */
void kiln_bnd_floor(kiln_dtype t, double *atol, double *rtol) {
  switch (t) {
  case KILN_F32: *atol = 1e-5, *rtol = 1.3e-6; return;
  case KILN_F16: *atol = 1e-5, *rtol = 1e-3; return;
  case KILN_BF16: *atol = 1e-5, *rtol = 1.6e-2; return;
  case KILN_F64: *atol = 1e-12, *rtol = 1e-12; return;
  default: *atol = 1e-3, *rtol = kiln_bnd_unit_roundoff(t); return; /* float8, float4 */
  }
}

static void fail(kiln_vcheck *c, const char *fmt, const char *a, const char *b) {
  c->ok = false;
  c->max_ratio = INFINITY;
  if (c->n_bad == 0) c->n_bad = 1;
  snprintf(c->msg, sizeof c->msg, fmt, a, b);
}

static void fmt_index(const kiln_tensor *t, int64_t i, char *buf, size_t n) {
  int64_t idx[KILN_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->dims[d] > 0 ? i % t->dims[d] : 0;
    i = t->dims[d] > 0 ? i / t->dims[d] : 0;
  }
  size_t len = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < t->rank && len < n; d++)
    len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (len < n) snprintf(buf + len, n - len, "]");
}

static void fmt_elem(const kiln_tensor *t, int64_t i, char *buf, size_t n) {
  if (kiln_dtype_is_float(t->dtype))
    snprintf(buf, n, "%.9g", kiln_load_f64(t->dtype, t->data, (size_t)i));
  else if (t->dtype == KILN_STRING) snprintf(buf, n, "\"%.40s\"", ((char **)t->data)[i]);
  else if (kiln_dtype_class_of(t->dtype) == KILN_CLASS_UINT)
    snprintf(buf, n, "%llu", (unsigned long long)kiln_load_u64(t->dtype, t->data, (size_t)i));
  else snprintf(buf, n, "%lld", (long long)kiln_load_i64(t->dtype, t->data, (size_t)i));
}

/* Compares one element; returns |got - val| / bound (INFINITY on a NaN/Inf or discrete
 * mismatch) and sets *err to |got - val| (0 when not finite). */
static double elem_ratio(const kiln_tensor *g, const kiln_tensor *v, const kiln_tensor *e,
                         int64_t i, double atol, double rtol, bool exact, bool zsign,
                         const double *zl, double *err, double *bound) {
  *err = 0, *bound = 0;
  if (!kiln_dtype_is_float(v->dtype)) {
    bool same;
    if (v->dtype == KILN_STRING) same = strcmp(((char **)g->data)[i], ((char **)v->data)[i]) == 0;
    else if (kiln_dtype_class_of(v->dtype) == KILN_CLASS_UINT)
      same = kiln_load_u64(g->dtype, g->data, (size_t)i) ==
             kiln_load_u64(v->dtype, v->data, (size_t)i);
    else
      same = kiln_load_i64(g->dtype, g->data, (size_t)i) ==
             kiln_load_i64(v->dtype, v->data, (size_t)i);
    return same ? 0 : INFINITY;
  }
  double gv = kiln_load_f64(g->dtype, g->data, (size_t)i);
  double rv = kiln_load_f64(v->dtype, v->data, (size_t)i);
  if (!isfinite(rv)) return (isnan(rv) && isnan(gv)) || rv == gv ? 0 : INFINITY;
  if (!isfinite(gv)) return INFINITY;
  double ev = e ? ((const double *)e->data)[i] : 0;
  /* an element with a bound of exactly 0 (no error tensor: all zero) is one every correct
   * implementation computes exactly (data movement, comparisons, casts of exact values): no
   * floor */
  *bound = ev == 0 && exact ? 0 : fmax(atol + rtol * fabs(rv), KILN_VERIFY_SAFETY * ev);
  *err = fabs(gv - rv);
  if (zsign && rv == 0 && gv == 0 && (!zl || zl[i] == 0) && signbit(rv) != signbit(gv))
    return INFINITY;
  return *err == 0 ? 0 : *err / *bound;
}

/* bounded: e is the reference's error bound (NULL: zero everywhere); else there is none and
 * the floor alone judges. */
static void compare_tensors(const char *name, kiln_dtype want, const kiln_tensor *g,
                            const kiln_tensor *v, const kiln_tensor *e, bool bounded, bool zsign,
                            const kiln_tensor *zl, kiln_vcheck *c) {
  char b1[64], b2[64];
  if (g->dtype != want) {
    fail(c, "dtype differs: got %s, expected %s", kiln_dtype_name(g->dtype), kiln_dtype_name(want));
    return;
  }
  bool same_shape = g->rank == v->rank;
  for (int d = 0; same_shape && d < g->rank; d++) same_shape = g->dims[d] == v->dims[d];
  if (!same_shape) {
    fail(c, "shape differs: got %s, expected %s", kiln_tensor_type_str(g, b1, sizeof b1),
         kiln_tensor_type_str(v, b2, sizeof b2));
    return;
  }
  if (e && e->numel != v->numel) e = NULL, bounded = false;
  if (zl && zl->numel != v->numel) zsign = false;
  const double *zd = zl ? zl->data : NULL;
  double atol = 0, rtol = 0, fb = 0, fe = 0;
  if (kiln_dtype_is_float(want)) kiln_bnd_floor(want, &atol, &rtol);
  for (int64_t i = 0; i < v->numel; i++) {
    double err, bound, ratio = elem_ratio(g, v, e, i, atol, rtol, bounded, zsign, zd, &err, &bound);
    c->max_err = fmax(c->max_err, err);
    c->max_ratio = fmax(c->max_ratio, ratio);
    if (ratio <= 1) continue;
    if (c->n_bad++ == 0) c->first_bad = i, fb = bound, fe = err;
  }
  if (c->n_bad == 0) return;
  c->ok = false;
  int64_t i = c->first_bad;
  char idx[96], gs[48], vs[48];
  fmt_index(v, i, idx, sizeof idx);
  fmt_elem(g, i, gs, sizeof gs);
  fmt_elem(v, i, vs, sizeof vs);
  double gz = kiln_dtype_is_float(want) ? kiln_load_f64(g->dtype, g->data, (size_t)i) : 1;
  if (gz == 0 && kiln_load_f64(v->dtype, v->data, (size_t)i) == 0)
    snprintf(c->msg, sizeof c->msg,
             "'%.60s' element %s: got %s, expected %s (the sign of a zero); %lld of %lld "
             "elements differ",
             name, idx, gs, vs, (long long)c->n_bad, (long long)v->numel);
  else if (kiln_dtype_is_float(want) && isfinite(fe) && fb > 0 &&
           isfinite(kiln_load_f64(g->dtype, g->data, (size_t)i)))
    snprintf(c->msg, sizeof c->msg,
             "'%.60s' element %s: got %s, expected %s (bound %.2g, error %.2g); %lld of %lld "
             "elements over the bound",
             name, idx, gs, vs, fb, fe, (long long)c->n_bad, (long long)v->numel);
  else
    snprintf(c->msg, sizeof c->msg,
             "'%.60s' element %s: got %s, expected %s; %lld of %lld elements differ", name, idx, gs,
             vs, (long long)c->n_bad, (long long)v->numel);
}

void kiln_vref_check(const kiln_vref *r, int value_id, const kiln_val *got, kiln_vcheck *out) {
  memset(out, 0, sizeof *out);
  out->ok = true;
  out->first_bad = -1;
  if (!r || value_id < 0 || value_id >= r->n_values || !r->val[value_id]) {
    fail(out, "value %s%s has no reference", "", "");
    snprintf(out->msg, sizeof out->msg, "value %d has no reference", value_id);
    return;
  }
  const kiln_value *gv = &r->g->values.data[value_id];
  const kiln_val *v = r->val[value_id];
  const kiln_tensor *vt = v->kind != KILN_TYPE_SEQUENCE ? v->t : NULL;
  const kiln_tensor *gt = got && got->kind != KILN_TYPE_SEQUENCE ? got->t : NULL;
  if (!got) {
    fail(out, "'%s': no value computed%s", gv->name, "");
    return;
  }
  if (v->kind == KILN_TYPE_SEQUENCE || got->kind == KILN_TYPE_SEQUENCE) {
    if (!v->seq || !got->seq || v->seq->len != got->seq->len) {
      fail(out, "'%s': sequences differ in kind or length%s", gv->name, "");
      return;
    }
    for (int k = 0; k < v->seq->len && out->ok; k++) {
      const kiln_tensor *a = v->seq->items[k], *b = got->seq->items[k];
      compare_tensors(gv->name, a->dtype == KILN_F64 ? b->dtype : a->dtype, b, a, NULL, false,
                      false, NULL, out);
    }
    return;
  }
  if (!vt || !gt) {
    if (vt || gt)
      fail(out, "'%s': %s", gv->name, vt ? "got an empty optional" : "expected an empty optional");
    return;
  }
  kiln_dtype want = vt->dtype;
  if (want == KILN_F64 && kiln_dtype_is_float(gv->type.dtype)) want = gv->type.dtype;
  else if (want == KILN_F64 && !gv->type.dtype && kiln_dtype_is_float(gt->dtype)) want = gt->dtype;
  compare_tensors(gv->name, want, gt, vt, r->err[value_id], true, true, r->zloose[value_id], out);
}
