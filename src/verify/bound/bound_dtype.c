/* The dtype each value of the reference is stored in by the graph (kiln_vref.dtype): the
 * reference holds every float value in F64, but a node with a subgraph runs in the graph's own
 * dtypes, and so do the outer values its subgraphs read. Type inference leaves some values
 * without a dtype (a ReduceSum whose axes are computed, shapes only known at run time); taking
 * F64 for them would mix dtypes inside a subgraph (an Add of the outer f64 value and a
 * branch-local f32 constant), so their dtype follows from the node that computes them. */
#include "bound_internal.h"

/* The dtype a value v holds (its tensor's, or its sequence's or optional's element dtype). */
kiln_dtype kiln_bnd_val_dtype(const kiln_val *v) {
  if (!v) return KILN_UNDEFINED;
  if (v->t) return v->t->dtype;
  if (v->seq) return v->seq->elem;
  return v->kind == KILN_TYPE_OPTIONAL ? v->opt_dtype : KILN_UNDEFINED;
}

/* Output k of n, when inference gave it no dtype: Cast's target, CastLike's second input,
 * ConstantOfShape's value, else the dtype of the first floating-point input (elementwise ops,
 * reductions, data movement keep it), else f32 (ONNX's default of ops that make tensors). */
static kiln_dtype derived_dtype(const kiln_vref *r, const kiln_node *n) {
  const kiln_attr *a;
  if (n->op == KILN_OP_Cast && (a = kiln_node_attr(n, "to")) && a->kind == KILN_ATTR_INT &&
      kiln_dtype_valid((int)a->i))
    return (kiln_dtype)a->i;
  if (n->op == KILN_OP_CastLike && n->n_inputs > 1 && n->inputs[1] >= 0)
    return r->dtype[n->inputs[1]];
  if (n->op == KILN_OP_ConstantOfShape) {
    a = kiln_node_attr(n, "value");
    return a && a->kind == KILN_ATTR_TENSOR && a->t ? a->t->dtype : KILN_F32;
  }
  for (int i = 0; i < n->n_inputs; i++)
    if (n->inputs[i] >= 0 && kiln_dtype_is_float(r->dtype[n->inputs[i]]))
      return r->dtype[n->inputs[i]];
  return KILN_F32;
}

kiln_dtype kiln_bnd_out_dtype(const kiln_vref *r, const kiln_node *n, int k) {
  int id = n->outputs[k];
  kiln_dtype declared = id >= 0 ? r->g->values.data[id].type.dtype : KILN_UNDEFINED;
  return declared ? declared : derived_dtype(r, n);
}

void kiln_bnd_note_dtypes(kiln_vref *r, const kiln_node *n, kiln_val *const *outs) {
  for (int k = 0; k < n->n_outputs; k++) {
    int id = n->outputs[k];
    if (id < 0 || r->dtype[id]) continue;
    kiln_dtype held = kiln_bnd_val_dtype(outs[k]);
    r->dtype[id] = kiln_bnd_out_dtype(r, n, k);
    if (held && !kiln_dtype_is_float(held)) r->dtype[id] = held; /* exact values: their own */
  }
}
