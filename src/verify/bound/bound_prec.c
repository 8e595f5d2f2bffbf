/* The error bounds of a non-default precision policy (kiln_vref.precision): a node computes
 * in the types its op class's rule names (src/lower/precision.h). Where such a type is
 * coarser than the dtype a value is stored in, two things change: the node's own rounding
 * counts in that type's unit roundoff (node_unit_roundoff in bound.c takes the larger), and
 * each float input is rounded to the compute type when it is loaded, which adds that
 * rounding to the input's error before the rule propagates it. With the default policy
 * every compute type is at least as precise as the storage dtype, so nothing changes. */
#include <math.h>
#include <stdlib.h>

#include "bound_internal.h"

static double coarser_u(const bnd_node *b, kiln_dtype t, kiln_dtype *which) {
  if (!b->r->precision || !kiln_dtype_is_float(t)) return 0;
  kiln_prec_class c = kiln_precision_class_of(b->n->op);
  kiln_dtype ct = kiln_precision_compute(b->r->precision, c, t);
  kiln_dtype at = kiln_precision_accumulate(b->r->precision, c, t);
  double uc = kiln_bnd_unit_roundoff(ct), ua = kiln_bnd_unit_roundoff(at);
  double u = fmax(uc, ua);
  *which = uc >= ua ? ct : at;
  return u > kiln_bnd_unit_roundoff(t) ? u : 0;
}

double kiln_bnd_policy_u(const bnd_node *b, kiln_dtype t) {
  kiln_dtype w;
  return coarser_u(b, t, &w);
}

double kiln_bnd_policy_tiny(const bnd_node *b, kiln_dtype t) {
  kiln_dtype w = KILN_UNDEFINED;
  return coarser_u(b, t, &w) > 0 ? kiln_bnd_tiny(w) : 0;
}

/* ein + u |x| (1 + 2u) + tiny for every finite element of x (F64) */
static kiln_tensor *rounded_err(const kiln_tensor *x, const kiln_tensor *ein, double u,
                                double tiny) {
  kiln_tensor *e = kiln_bnd_zeros_like(x);
  const double *xd = x->data, *ed = ein && ein->numel == x->numel ? ein->data : NULL;
  double *od = e->data;
  for (int64_t i = 0; i < e->numel; i++)
    od[i] = (ed ? ed[i] : 0) + (isfinite(xd[i]) ? u * fabs(xd[i]) * (1 + 2 * u) + tiny : 0);
  return e;
}

kiln_tensor **kiln_bnd_policy_inputs(bnd_node *b) {
  if (!b->r->precision) return NULL;
  int nin = b->n->n_inputs;
  kiln_tensor **owned = NULL;
  for (int i = 0; i < nin; i++) {
    int id = b->n->inputs[i];
    if (id < 0 || !kiln_bnd_is_float_val(b->in[i]) || b->in[i]->t->dtype != KILN_F64) continue;
    kiln_dtype t = b->r->dtype[id], ct = KILN_UNDEFINED;
    kiln_prec_class c = kiln_precision_class_of(b->n->op);
    if (!kiln_dtype_is_float(t)) continue;
    ct = kiln_precision_compute(b->r->precision, c, t);
    double u = kiln_bnd_unit_roundoff(ct);
    if (u <= kiln_bnd_unit_roundoff(t)) continue;
    if (!owned) owned = kiln_xcalloc((size_t)nin + 1, sizeof *owned);
    owned[i] = rounded_err(b->in[i]->t, b->ein[i], u, kiln_bnd_tiny(ct));
    b->ein[i] = owned[i];
  }
  return owned;
}

/* f rounded to the float type t when t is coarser than f32 (f16, bf16); f otherwise */
static float round_to(kiln_dtype t, float f) {
  if (t == KILN_F16) return kiln_f16_to_f32(kiln_f32_to_f16(f));
  if (t == KILN_BF16) return kiln_bf16_to_f32(kiln_f32_to_bf16(f));
  return f;
}

/* The node's float attributes rounded to ct into a copy of its attribute array (the FLOATS
 * lists copied too); NULL when rounding changes none of them. */
static kiln_attr *rounded_attrs(const kiln_node *n, kiln_dtype ct, float ***lists) {
  kiln_attr *a = kiln_xcalloc((size_t)n->n_attrs + 1, sizeof *a);
  *lists = kiln_xcalloc((size_t)n->n_attrs + 1, sizeof **lists);
  bool changed = false;
  for (int i = 0; i < n->n_attrs; i++) {
    a[i] = n->attrs[i];
    if (a[i].kind == KILN_ATTR_FLOAT) {
      a[i].f = round_to(ct, a[i].f);
      changed |= a[i].f != n->attrs[i].f;
    } else if (a[i].kind == KILN_ATTR_FLOATS && a[i].n > 0) {
      float *l = (*lists)[i] = kiln_xcalloc((size_t)a[i].n, sizeof *l);
      for (int j = 0; j < a[i].n; j++) {
        l[j] = round_to(ct, n->attrs[i].floats[j]);
        changed |= l[j] != n->attrs[i].floats[j];
      }
      a[i].floats = l;
    }
  }
  if (changed) return a;
  for (int i = 0; i < n->n_attrs; i++) free((*lists)[i]);
  free(*lists), free(a);
  *lists = NULL;
  return NULL;
}

/* Folds |y' - y| into e (y' the output with rounded attributes); a y' that is not finite
 * where y is, or the other way round, makes the element unstable. Returns that count. */
static int64_t fold_attr_diff(const kiln_tensor *y, const kiln_tensor *y2, kiln_tensor *e) {
  const double *yd = y->data, *zd = y2->data;
  double *ed = e->data;
  int64_t unstable = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    if (isfinite(yd[i]) && isfinite(zd[i])) ed[i] += fabs(zd[i] - yd[i]);
    else if (isfinite(yd[i]) || isfinite(zd[i])) unstable++, ed[i] = INFINITY;
  }
  return unstable;
}

void kiln_bnd_policy_attrs(bnd_node *b) {
  const kiln_node *n = b->n;
  if (n->n_attrs == 0 || n->n_inputs == 0 || n->inputs[0] < 0) return;
  kiln_dtype t = b->r->dtype[n->inputs[0]];
  if (!kiln_dtype_is_float(t)) return;
  /* the coarser of the compute type and the storage type: a result that is an attribute
   * (Clip-6's min and max) is stored rounded to the latter */
  kiln_dtype ct = b->r->precision
                      ? kiln_precision_compute(b->r->precision, kiln_precision_class_of(n->op), t)
                      : t;
  if (kiln_bnd_unit_roundoff(t) > kiln_bnd_unit_roundoff(ct)) ct = t;
  if (kiln_bnd_unit_roundoff(ct) <= kiln_bnd_unit_roundoff(KILN_F32)) return;
  float **lists = NULL;
  kiln_attr *attrs = rounded_attrs(n, ct, &lists);
  if (!attrs) return;
  kiln_node tmp = *n;
  tmp.attrs = attrs;
  bnd_node wb = *b;
  wb.n = &tmp;
  bnd_subst *how = kiln_xcalloc((size_t)n->n_inputs + 1, sizeof *how);
  for (int i = 0; i < n->n_inputs; i++) how[i] = BND_SAME;
  kiln_val **o = NULL;
  kiln_status st = kiln_bnd_eval_how(&wb, KILN_OP_UNKNOWN, how, &o);
  free(how);
  if (st) { /* the rounded attributes are refused (a domain check): unstable */
    kiln_status_free(st);
    kiln_bnd_unstable(b, 1, "the op fails with its attributes in the compute type");
  }
  for (int k = 0; !st && k < n->n_outputs; k++) {
    kiln_tensor *y = kiln_bnd_out_t(b, b->out, k), *y2 = kiln_bnd_out_t(b, o, k);
    if (!y || !y2 || y2->numel != y->numel) continue;
    if (!b->eout[k]) b->eout[k] = kiln_bnd_zeros_like(y);
    if (b->eout[k]->numel != y->numel) continue;
    kiln_bnd_unstable(b, fold_attr_diff(y, y2, b->eout[k]),
                      "the output with its attributes in the compute type is not finite");
  }
  if (!st) kiln_bnd_free_outs(b, o);
  for (int i = 0; i < n->n_attrs; i++) free(lists[i]);
  free(lists), free(attrs);
}
