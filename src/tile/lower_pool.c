/* Pooling (placeholder while the pooling lowering is written). */
#include "lower_ops.h"

kiln_status kiln_lower_pool_node(kiln_lower_ctx *c, const kiln_group *grp) {
  return kiln_unsupported("no lowering for %s yet", c->g->nodes.data[grp->nodes[0]].op_type);
}
