/* Contraction lowering (placeholder until MatMul/Gemm/Conv lowering lands). */
#include "lower_internal.h"

bool kiln_lower_is_contraction(const kiln_graph *g, const kiln_node *n) {
  (void)g;
  (void)n;
  return false;
}

kiln_status kiln_lower_contraction(kiln_lower_ctx *c, const kiln_group *grp) {
  (void)c;
  (void)grp;
  return kiln_unsupported("contraction lowering is not available");
}
