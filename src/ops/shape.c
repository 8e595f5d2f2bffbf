/* Ops of the 'shape' family (see src/graph/ops.def). */
#include "ops.h"

void kiln_ops_register_shape(kiln_op_impl *table) {
  (void)table;
}
