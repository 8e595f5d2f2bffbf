/* Fusion pass (placeholder until the fusion rules land: every node stays a group of its own). */
#include "passes.h"

kiln_status kiln_pass_fusion(kiln_pass_ctx *ctx, kiln_graph *g) {
  (void)ctx;
  (void)g;
  return KILN_OK;
}
