/* Ops of the 'elementwise' family (see src/graph/ops.def). */
#include "ops.h"

void kiln_ops_register_elementwise(kiln_op_impl *table) {
  (void)table;
}
