/* Error rules of selections by order: TopK (values move, indices are discrete) and Hardmax
 * (a one-hot of the arg max). A selection is unstable where two candidates whose order
 * decides the result have overlapping intervals [x - e, x + e]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

static bool overlap(double xa, double ea, double xb, double eb) {
  return ea + eb > 0 && fabs(xa - xb) <= ea + eb;
}

typedef struct sort_ctx {
  const double *x;
  int64_t base, inner;
  bool largest;
} sort_ctx;

/* Slice positions sorted by value (descending when largest), ties to the lower index. */
static void sort_slice(const sort_ctx *s, int64_t n, int64_t *pos) {
  for (int64_t j = 0; j < n; j++) pos[j] = j;
  for (int64_t j = 1; j < n; j++) { /* insertion sort: slices are short in practice */
    int64_t p = pos[j], q = j;
    double v = s->x[s->base + p * s->inner];
    while (q > 0) {
      double w = s->x[s->base + pos[q - 1] * s->inner];
      bool before = s->largest ? v > w : v < w;
      if (!before) break;
      pos[q] = pos[q - 1], q--;
    }
    pos[q] = p;
  }
}

/* ---- TopK(X, K) {axis, largest, sorted} -> Values, Indices ---- */
kiln_status kiln_bnd_topk(bnd_node *b) {
  kiln_tensor *vals = kiln_bnd_out_t(b, b->out, 0);
  const kiln_val *iv = b->n->n_outputs > 1 ? b->out[1] : NULL;
  if (!vals || !kiln_bnd_has_err(b, 0) || !iv || !iv->t) return KILN_OK;
  const kiln_tensor *x = b->in[0]->t, *idx = iv->t;
  int64_t axis_a, largest = 1;
  KILN_TRY(kiln_node_int(b->n, "axis", -1, &axis_a));
  if (b->n->opset >= 11) KILN_TRY(kiln_node_int(b->n, "largest", 1, &largest));
  int axis = (int)(axis_a < 0 ? axis_a + x->rank : axis_a);
  if (axis < 0 || axis >= x->rank || idx->rank != x->rank) return kiln_bnd_perturb(b, 32);
  int64_t n = x->dims[axis], k = idx->dims[axis], inner = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  const double *xd = x->data, *ed = b->ein[0]->data;
  kiln_tensor *e = b->eout[0] = kiln_bnd_zeros_like(vals);
  int64_t *pos = kiln_xcalloc((size_t)n + 1, sizeof *pos), bad = 0;
  int64_t slices = k > 0 ? idx->numel / k : 0;
  for (int64_t sl = 0; sl < slices; sl++) {
    int64_t o = sl / inner, i = sl % inner, base = o * n * inner + i;
    for (int64_t j = 0; j < k; j++) { /* values: the errors of the selected elements */
      int64_t at = o * k * inner + j * inner + i;
      int64_t src = kiln_load_i64(idx->dtype, idx->data, (size_t)at);
      if (src >= 0 && src < n) ((double *)e->data)[at] = ed[base + src * inner];
    }
    sort_ctx s = {xd, base, inner, largest != 0};
    sort_slice(&s, n, pos);
    for (int64_t j = 0; j + 1 < n && j < k; j++) {
      int64_t a = base + pos[j] * inner, c = base + pos[j + 1] * inner;
      if (!isnan(xd[a]) && !isnan(xd[c]) && overlap(xd[a], ed[a], xd[c], ed[c])) {
        bad++;
        break;
      }
    }
  }
  free(pos);
  kiln_bnd_unstable(b, bad, "TopK candidates within the error of each other");
  return KILN_OK;
}

/* ---- Hardmax {axis}: 1 at the first max of each row (opset < 13: the rows of the 2-D
 * coercion at axis); the result is exact unless a rival is within the error ---- */
kiln_status kiln_bnd_hardmax(bnd_node *b) {
  if (!kiln_bnd_has_err(b, 0)) return KILN_OK;
  const kiln_tensor *x = b->in[0]->t;
  int64_t axis_a;
  KILN_TRY(kiln_node_int(b->n, "axis", b->n->opset < 13 ? 1 : -1, &axis_a));
  int axis = (int)(axis_a < 0 ? axis_a + x->rank : axis_a);
  if (axis < 0 || axis >= x->rank) return KILN_OK;
  int64_t n = x->dims[axis], inner = 1, outer = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  for (int d = 0; d < axis; d++) outer *= x->dims[d];
  if (b->n->opset < 13) n *= inner, inner = 1;
  const double *xd = x->data, *ed = b->ein[0]->data;
  int64_t bad = 0;
  for (int64_t r = 0; n > 0 && r < outer * inner; r++) {
    int64_t base = (r / inner) * n * inner + r % inner, best = base;
    for (int64_t j = 1; j < n; j++)
      if (xd[base + j * inner] > xd[best]) best = base + j * inner;
    for (int64_t j = 0; j < n; j++) {
      int64_t c = base + j * inner;
      if (c != best && overlap(xd[best], ed[best], xd[c], ed[c])) {
        bad++;
        break;
      }
    }
  }
  kiln_bnd_unstable(b, bad, "Hardmax: a rival within the error of the max");
  return KILN_OK;
}

/* ---- NONZERO: the indices are exact; an element whose interval [x - e, x + e] holds 0 (and
 * that is not an exact 0) may land on either side, which changes the count. The perturbation
 * fallback's two corners missed such an interval with neither end at 0: an LSTM cell state of
 * 1e-64 with a bound of 0.06 that f32 computes as exactly 0 (a false report of a 30-minute
 * campaign). ---- */
kiln_status kiln_bnd_nonzero(bnd_node *b) {
  if (!kiln_bnd_has_err(b, 0)) return KILN_OK;
  const kiln_tensor *x = b->in[0]->t;
  const double *xd = x->data, *ed = b->ein[0]->data;
  int64_t bad = 0;
  for (int64_t i = 0; i < x->numel; i++) bad += ed[i] > 0 && fabs(xd[i]) <= ed[i];
  kiln_bnd_unstable(b, bad, "NonZero: an element within its error of 0");
  return KILN_OK;
}
