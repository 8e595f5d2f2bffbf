/* Reductions (placeholder while the reduction lowering is written). */
#include "lower_ops.h"

bool kiln_lower_is_reduction(const kiln_graph *g, const kiln_node *n) {
  (void)g;
  (void)n;
  return false;
}

kiln_status kiln_lower_reduce_group(kiln_lower_ctx *c, const kiln_group *grp) {
  (void)c;
  return kiln_unsupported("no lowering for %s yet", c->g->nodes.data[grp->nodes[0]].op_type);
}
