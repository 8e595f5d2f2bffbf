/* Elementwise (placeholder while the elementwise lowering is written). */
#include "lower_ops.h"

bool kiln_lower_is_elementwise(const kiln_graph *g, const kiln_node *n) {
  (void)g;
  (void)n;
  return false;
}

kiln_status kiln_lower_ew_expr(kiln_lower_ctx *c, kiln_tkernel *k, const kiln_node *n,
                               kiln_texpr *const *operands, kiln_texpr **out) {
  (void)c;
  (void)k;
  (void)operands;
  *out = NULL;
  return kiln_unsupported("no lowering for %s yet", n->op_type);
}

kiln_status kiln_lower_ew_group(kiln_lower_ctx *c, const kiln_group *grp) {
  return kiln_unsupported("no lowering for %s yet", c->g->nodes.data[grp->nodes[0]].op_type);
}
