/* Pass identity (not written yet: leaves the graph as it is). */
#include "passes.h"

kiln_status kiln_pass_identity(kiln_pass_ctx *ctx, kiln_graph *g) {
  (void)ctx;
  (void)g;
  return KILN_OK;
}
