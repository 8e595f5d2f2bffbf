/* Pass infer: shape and type inference with the op table (kiln_ops_infer_graph). The
 * number of changes is the number of values whose type became more precise. */
#include <stdlib.h>

#include "passes.h"
#include "rewrite.h"

kiln_status kiln_pass_infer(kiln_pass_ctx *ctx, kiln_graph *g) {
  int nv = g->values.len;
  kiln_type *before = kiln_xcalloc((size_t)nv + 1, sizeof *before);
  for (int v = 0; v < nv; v++) before[v] = g->values.data[v].type;
  kiln_status st = kiln_ops_infer_graph(g);
  for (int v = 0; !st && v < nv; v++)
    if (!kiln_type_equal(&before[v], &g->values.data[v].type)) ctx->changes++;
  free(before);
  return st;
}
