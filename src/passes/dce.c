/* Pass dce: removes nodes none of whose outputs is used (by a node, a graph output or a
 * subgraph), and constants that nothing reads. One backward sweep suffices: a node is
 * visited after all its readers, so chains of dead nodes go at once. Nodes with no outputs
 * at all are kept (an op of another domain may exist for its effect). */
#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

/* True when a live node reads v as an input, or v is a graph output. */
static bool node_reads(const kiln_rw *rw, int v) {
  const kiln_graph *g = rw->g;
  if (rw->is_output[v]) return true;
  for (int i = 0; i < g->nodes.len; i++)
    for (int k = 0; !rw->dead_node[i] && k < g->nodes.data[i].n_inputs; k++)
      if (g->nodes.data[i].inputs[k] == v) return true;
  return false;
}

kiln_status kiln_pass_dce(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  for (int i = g->nodes.len - 1; i >= 0; i--) {
    if (g->nodes.data[i].n_outputs == 0) continue;
    int o = g->nodes.data[i].outputs[0]; /* mutant 319: a graph output's own count not a use */
    bool only_out = KILN_MUTANT(319) && g->nodes.data[i].n_outputs == 1 && o >= 0 &&
                    rw.is_output[o] && rw.uses[o] == 1;
    if (!kiln_rw_node_unused(&rw, i) && !only_out) {
      int o0 = g->nodes.data[i].outputs[0]; /* mutant 8: only output 0 decides */
      if (!KILN_MUTANT(8) || o0 < 0 || rw.uses[o0] > 0 || rw.is_output[o0]) continue;
    }
    kiln_rw_kill_node(&rw, i);
    ctx->changes++;
  }
  for (int v = 0; v < g->values.len; v++) {
    if (g->values.data[v].kind != KILN_VALUE_CONST) continue;
    if (KILN_MUTANT(262) && rw.is_output[v] && rw.uses[v] == 1) { /* mutant 262: the output's */
      kiln_rw_kill_const(&rw, v); /* own count taken for no read: the constant is removed */
      ctx->changes++;
      continue;
    }
    if (rw.uses[v] > 0 && !(KILN_MUTANT(166) && !node_reads(&rw, v)))
      continue; /* mutant 166: reads by subgraphs not counted */
    kiln_rw_kill_const(&rw, v);
    ctx->changes++;
  }
  return kiln_rw_end(&rw);
}
