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
