/* Comparison of results against expected values (test-onnx, run --expect). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static bool tensor_match(const kiln_tensor *g, const kiln_tensor *w, double rtol, double atol,
                         char *msg, size_t n) {
  char a[128], b[128];
  if (g->dtype != w->dtype || !kiln_tensor_same_shape(g, w)) {
    snprintf(msg, n, "got %s, expected %s", kiln_tensor_type_str(g, a, sizeof a),
             kiln_tensor_type_str(w, b, sizeof b));
    return false;
  }
  kiln_dtype dt = g->dtype;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < g->numel; i++) {
    bool ok;
    if (dt == KILN_STRING) {
      const char *x = ((char *const *)g->data)[i], *y = ((char *const *)w->data)[i];
      ok = !strcmp(x ? x : "", y ? y : "");
    } else if (kiln_dtype_is_float(dt)) {
      double x = kiln_load_f64(dt, g->data, (size_t)i), y = kiln_load_f64(dt, w->data, (size_t)i);
      if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
      else if (isinf(x) || isinf(y)) ok = x == y;
      else {
        double err = fabs(x - y);
        ok = err <= atol + rtol * fabs(y);
        if (!ok && err > worst) worst = err;
      }
    } else {
      ok = kiln_load_u64(dt, g->data, (size_t)i) == kiln_load_u64(dt, w->data, (size_t)i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return true;
  if (dt == KILN_STRING) {
    snprintf(msg, n, "%lld of %lld strings differ (first at %lld)", (long long)bad,
             (long long)g->numel, (long long)first);
  } else {
    double x = kiln_load_f64(dt, g->data, (size_t)first);
    double y = kiln_load_f64(dt, w->data, (size_t)first);
    int k = snprintf(msg, n, "%lld of %lld elements differ (first at %lld: got %.9g, expected %.9g",
                     (long long)bad, (long long)g->numel, (long long)first, x, y);
    if (k > 0 && (size_t)k < n)
      snprintf(msg + k, n - (size_t)k, worst > 0 ? "; max abs error %.3g)" : ")", worst);
  }
  return false;
}

bool kiln_cli_compare(const kiln_val *got, const kiln_val *want, double rtol, double atol,
                      char *msg, size_t n) {
  if (want->kind == KILN_TYPE_TENSOR && got->kind == KILN_TYPE_OPTIONAL && got->t)
    return tensor_match(got->t, want->t, rtol, atol, msg, n);
  if (got->kind != want->kind) {
    snprintf(msg, n, "got a value of kind %d, expected kind %d", got->kind, want->kind);
    return false;
  }
  if (got->kind == KILN_TYPE_TENSOR || (got->kind == KILN_TYPE_OPTIONAL && !want->elem_seq)) {
    if (!got->t || !want->t) {
      if (got->t || want->t || got->seq || want->seq) {
        snprintf(msg, n, "optional presence differs");
        return false;
      }
      return true;
    }
    return tensor_match(got->t, want->t, rtol, atol, msg, n);
  }
  const kiln_seq *a = got->seq, *b = want->seq;
  if (!a || !b) {
    if (a || b) snprintf(msg, n, "optional presence differs");
    return !a && !b;
  }
  if (a->len != b->len) {
    snprintf(msg, n, "sequence of %d tensors, expected %d", a->len, b->len);
    return false;
  }
  for (int i = 0; i < a->len; i++) {
    char sub[256];
    if (!tensor_match(a->items[i], b->items[i], rtol, atol, sub, sizeof sub)) {
      snprintf(msg, n, "sequence item %d: %s", i, sub);
      return false;
    }
  }
  return true;
}
