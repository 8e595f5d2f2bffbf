/* Pass identity: removes Identity nodes and Dropout nodes that are the identity at
 * inference. Dropout is the identity before opset 12, and from opset 12 when its
 * training_mode input is absent or a constant false (the reference kernel agrees). A
 * Dropout whose mask output is used stays: the mask is data. A node whose output is a graph
 * output is removed only when the input can take the output's name (not a graph input). */
#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

static bool dropout_is_identity(const kiln_rw *rw, const kiln_node *n) {
  if (n->n_outputs > 1 && n->outputs[1] >= 0 && rw->uses[n->outputs[1]] > 0 && !KILN_MUTANT(12))
    return false; /* mutant 12: removed although its mask is used */
  if (n->opset < 12 || n->n_inputs < 3 || n->inputs[2] < 0) return true;
  const kiln_tensor *t = kiln_rw_const(rw->g, n->inputs[2]);
  return t && t->numel == 1 && t->dtype == KILN_BOOL && !((const uint8_t *)t->data)[0];
}

kiln_status kiln_pass_identity(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    bool id =
        n->op == KILN_OP_Identity || (n->op == KILN_OP_Dropout && dropout_is_identity(&rw, n));
    if (!id || n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
      continue;
    if (!kiln_rw_replace(&rw, n->outputs[0], n->inputs[0])) continue;
    kiln_rw_kill_node(&rw, i);
    ctx->changes++;
  }
  return kiln_rw_end(&rw);
}
