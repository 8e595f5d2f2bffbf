/* The generator's check of the ONNX type constraints: a node whose input or output dtype
 * its op's schema (at the graph's opset) does not allow is dropped, so that generated
 * models pass onnx.checker (Kiln's interpreter accepts more: Relu on ints before opset 14,
 * Celu on f16, IsInf on f16 before 20 ...). The table is gen_types_table.c. */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

static const gen_type_version *version_at(const char *op, int opset) {
  for (int i = 0; i < kiln_gen_n_type_ops; i++) {
    if (strcmp(kiln_gen_type_ops[i].name, op)) continue;
    const gen_type_version *v = kiln_gen_type_ops[i].versions, *at = NULL;
    for (; v->since; v++)
      if (v->since <= opset) at = v;
    return at;
  }
  return NULL;
}

/* The mask of actual parameter k of n formal ones (the last variadic when var). */
static uint32_t param_mask(const uint32_t *m, int n, int var, int k) {
  if (k < n) return m[k];
  return var && n > 0 ? m[n - 1] : 0;
}

static bool dtype_allowed(const kiln_graph *g, int value, uint32_t mask) {
  if (value < 0) return true; /* an absent optional input */
  const kiln_type *t = &g->values.data[value].type;
  if (t->kind != KILN_TYPE_TENSOR || mask == 0) return true; /* not a tensor constraint */
  return t->dtype < 32 && (mask >> t->dtype & 1);
}

bool gen_node_types_ok(const kiln_graph *g, int n, int opset, char *why, size_t why_len) {
  const kiln_node *nd = &g->nodes.data[n];
  const gen_type_version *v = version_at(nd->op_type, opset);
  if (!v) return true;
  for (int k = 0; k < nd->n_inputs + nd->n_outputs; k++) {
    bool in = k < nd->n_inputs;
    int kk = in ? k : k - nd->n_inputs, value = in ? nd->inputs[kk] : nd->outputs[kk];
    uint32_t m = in ? param_mask(v->in, v->n_in, v->var_in, kk)
                    : param_mask(v->out, v->n_out, v->var_out, kk);
    if (dtype_allowed(g, value, m)) continue;
    snprintf(why, why_len, "%s (opset %d) %s %d: %s not allowed", nd->op_type, opset,
             in ? "input" : "output", kk, kiln_dtype_name(g->values.data[value].type.dtype));
    return false;
  }
  return true;
}

bool gen_types_ok(const kiln_graph *g, int opset, char *why, size_t why_len) {
  for (int n = 0; n < g->nodes.len; n++)
    if (!gen_node_types_ok(g, n, opset, why, why_len)) return false;
  return true;
}
