/* Shape and type inference over a graph, with each op's infer function. */
#include <stdlib.h>
#include <string.h>

#include "ops.h"

/* Merging a type that inference computes (`got`) into the type a value already has
 * (`have`: declared by the model, or computed before). Inferred static facts win: a known
 * extent replaces a symbolic or unknown dim (an exporter's name for a computed dim, such as
 * 'unk__123', must not make a static value look dynamic); a symbol from inference replaces
 * an unknown dim or a symbol that inference does not know; what inference leaves unknown
 * keeps what `have` says. A known fact of `have` that inference contradicts (element type,
 * rank, a known extent) is an error naming the value: one of the two is wrong. */
static bool dims_conflict(const kiln_type *have, const kiln_type *got) {
  for (int i = 0; i < have->rank; i++)
    if (have->dims[i].value >= 0 && got->dims[i].value >= 0 &&
        have->dims[i].value != got->dims[i].value)
      return true;
  return false;
}

static bool types_conflict(const kiln_type *have, const kiln_type *got) {
  if (have->kind != got->kind) return true;
  if (have->kind == KILN_TYPE_OPTIONAL && have->elem_seq != got->elem_seq) return true;
  if (have->dtype && got->dtype && have->dtype != got->dtype) return true;
  if (have->rank < 0 || got->rank < 0) return false;
  return have->rank != got->rank || dims_conflict(have, got);
}

static void merge_dims(kiln_type *have, const kiln_type *got) {
  for (int i = 0; i < have->rank; i++) {
    kiln_dim *h = &have->dims[i];
    const kiln_dim *g = &got->dims[i];
    if (g->value >= 0 || (h->value < 0 && g->sym)) *h = *g;
  }
}

/* "from 'x' (i64[1,3,8,8]), 'w' (f32[4,3,3,3])": the inputs a wrong result comes from (a
 * model input of the wrong type shows here rather than only the node). */
static void inputs_str(const kiln_graph *g, const kiln_node *n, kiln_strbuf *b) {
  char tb[160];
  for (int i = 0, k = 0; i < n->n_inputs && i < 8; i++) {
    if (n->inputs[i] < 0) continue;
    const kiln_value *in = &g->values.data[n->inputs[i]];
    kiln_strbuf_printf(b, "%s'%s' (%s)", k++ ? ", " : " from ", in->name,
                       kiln_type_str(&in->type, tb, sizeof tb));
  }
}

static kiln_status merge_type(const kiln_graph *g, const kiln_node *n, const kiln_value *v,
                              kiln_type *have, const kiln_type *got) {
  if (got->kind == KILN_TYPE_UNKNOWN) return KILN_OK;
  if (have->kind != KILN_TYPE_UNKNOWN && types_conflict(have, got)) {
    char b1[160], b2[160];
    kiln_strbuf from = {0};
    inputs_str(g, n, &from);
    kiln_status st = kiln_invalid("value '%s' is declared %s, but the node computes %s%s", v->name,
                                  kiln_type_str(have, b1, sizeof b1),
                                  kiln_type_str(got, b2, sizeof b2), from.data ? from.data : "");
    kiln_strbuf_free(&from);
    return st;
  }
  if (have->kind == KILN_TYPE_UNKNOWN || have->rank < 0) {
    kiln_dtype keep = have->dtype;
    *have = *got;
    if (!have->dtype) have->dtype = keep;
    return KILN_OK;
  }
  if (!have->dtype) have->dtype = got->dtype;
  if (got->rank >= 0) merge_dims(have, got);
  return KILN_OK;
}

static kiln_status infer_nodes(kiln_graph *g);

static kiln_status infer_node(kiln_graph *g, const kiln_node *n) {
  const kiln_op_impl *impl = kiln_op_get(n->op);
  if (impl->eval) KILN_TRY(kiln_op_check_values(g, n));
  if (!impl->infer) return KILN_OK;
  const kiln_type *in[64];
  const kiln_tensor *cin[64];
  kiln_type out[64];
  if (n->n_inputs > 64 || n->n_outputs > 64) return KILN_OK;
  for (int i = 0; i < n->n_inputs; i++) {
    int id = n->inputs[i];
    in[i] = id >= 0 ? &g->values.data[id].type : NULL;
    cin[i] =
        id >= 0 && g->values.data[id].kind == KILN_VALUE_CONST ? g->values.data[id].data : NULL;
  }
  for (int i = 0; i < n->n_outputs; i++) out[i] = kiln_type_unknown();
  kiln_infer_ctx ctx = {g, n, n->n_inputs, in, cin, n->n_outputs, out};
  KILN_TRY(impl->infer(&ctx));
  for (int i = 0; i < n->n_outputs; i++) {
    if (n->outputs[i] < 0) continue;
    kiln_value *v = &g->values.data[n->outputs[i]];
    char lb[256];
    KILN_TRYF(merge_type(g, n, v, &v->type, &out[i]), "%s", kiln_node_label(n, lb, sizeof lb));
  }
  return KILN_OK;
}

/* ---- sizes: checked once, here, for every tensor type that inference leaves ----
 * No later stage (folding, lowering, the memory plan, the executor) sees a tensor type
 * whose element count or byte size overflows int64 or exceeds KILN_MAX_TENSOR_BYTES: the
 * product of the known dims is already a lower bound. */
static kiln_status check_type_size(const kiln_value *v) {
  const kiln_type *t = &v->type;
  if (t->kind != KILN_TYPE_TENSOR || t->rank <= 0) return KILN_OK;
  /* The product of the non-zero dims: the element count, or for an empty tensor the
   * largest stride, which lowering computes too (f32[0,2^62,2^62] overflows there). */
  int64_t numel = 1, bytes;
  bool over = false, empty = false;
  for (int d = 0; d < t->rank && !over; d++) {
    empty |= t->dims[d].value == 0;
    if (t->dims[d].value > 0) over = kiln_mul_overflow_i64(numel, t->dims[d].value, &numel);
  }
  int64_t elem = kiln_dtype_valid((int)t->dtype) ? (int64_t)kiln_dtype_size(t->dtype) : 1;
  over = over || kiln_mul_overflow_i64(numel, elem ? elem : 1, &bytes);
  if (!over && (empty || bytes <= KILN_MAX_TENSOR_BYTES)) return KILN_OK;
  char tb[200];
  kiln_type_str(t, tb, sizeof tb);
  if (over)
    return kiln_invalid("'%s' is %s: its element count or byte size overflows 64 bits", v->name,
                        tb);
  return kiln_invalid("'%s' is %s: %lld bytes, more than the %lld bytes a tensor may hold", v->name,
                      tb, (long long)bytes, (long long)KILN_MAX_TENSOR_BYTES);
}

static kiln_status check_outputs(const kiln_graph *g, const kiln_node *n) {
  for (int k = 0; k < n->n_outputs; k++) {
    if (n->outputs[k] < 0) continue;
    char lb[200];
    KILN_TRYF(check_type_size(&g->values.data[n->outputs[k]]), "%s: output %d",
              kiln_node_label(n, lb, sizeof lb), k);
  }
  return KILN_OK;
}

/* Before the nodes: inputs (with the dims bound to them), constants, outer values. */
static kiln_status check_sources(const kiln_graph *g) {
  for (int v = 0; v < g->values.len; v++)
    if (g->values.data[v].kind != KILN_VALUE_NODE)
      KILN_TRYF(check_type_size(&g->values.data[v]), "graph '%s'", g->name);
  return KILN_OK;
}

kiln_status kiln_ops_infer_graph(kiln_graph *g) {
  KILN_TRY(check_sources(g));
  return infer_nodes(g);
}

static kiln_status infer_nodes(kiln_graph *g) {
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    if (kiln_op_get(n->op)->eval) KILN_TRY(kiln_op_check(g, n)); /* arity */
    for (int a = 0; a < n->n_attrs; a++) {
      const kiln_attr *at = &n->attrs[a];
      if (at->kind == KILN_ATTR_GRAPH && at->g) KILN_TRY(kiln_ops_infer_graph(at->g));
      for (int k = 0; at->kind == KILN_ATTR_GRAPHS && k < at->n; k++)
        KILN_TRY(kiln_ops_infer_graph(at->graphs[k]));
    }
    KILN_TRY(infer_node(g, n));
    KILN_TRY(check_outputs(g, n)); /* before a later node computes with them */
  }
  return KILN_OK;
}

static kiln_status validate_input(const kiln_graph *g, int id) {
  const kiln_value *v = &g->values.data[id];
  if (v->type.kind == KILN_TYPE_UNKNOWN)
    return kiln_invalid("graph input '%s' has no type", v->name);
  if (!kiln_dtype_valid((int)v->type.dtype))
    return kiln_invalid("graph input '%s' has an invalid element type (%d)", v->name,
                        (int)v->type.dtype);
  if (v->type.kind != KILN_TYPE_TENSOR || !kiln_type_is_static(&v->type)) return KILN_OK;
  int64_t dims[KILN_MAX_RANK], numel, bytes;
  for (int i = 0; i < v->type.rank; i++) dims[i] = v->type.dims[i].value;
  KILN_TRYF(kiln_shape_numel(v->type.rank, dims, &numel), "graph input '%s'", v->name);
  if (kiln_mul_overflow_i64(numel, (int64_t)kiln_dtype_size(v->type.dtype), &bytes))
    return kiln_invalid("graph input '%s': its byte size overflows 64 bits", v->name);
  return KILN_OK;
}

kiln_status kiln_ops_validate_model(const kiln_graph *g) {
  int64_t opset = kiln_graph_opset(g, "");
  if (g->opsets.len && (opset < 0 || opset > KILN_MAX_OPSET))
    return kiln_unsupported("the model imports opset %lld of the default domain; Kiln knows "
                            "opsets 1 to %d",
                            (long long)opset, KILN_MAX_OPSET);
  if (g->outputs.len == 0) return kiln_invalid("graph '%s' has no outputs", g->name);
  for (int i = 0; i < g->inputs.len; i++) KILN_TRY(validate_input(g, g->inputs.data[i]));
  return KILN_OK;
}
