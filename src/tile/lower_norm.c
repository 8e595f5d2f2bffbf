#include "lower_more.h"

kiln_status kiln_lower_norm_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  return kiln_unsupported("no lowering for %s", n->op_type);
}
