/* The opset versions in which each op of the default domain exists: introduced in `since`,
 * removed (deprecated) in `removed` (0 = still present). Generated with the attribute
 * schemas from the ONNX operator schemas of the release Kiln is tested against
 * (op_attrs.c, scripts/gen_op_attrs.py). */
#include "op_attrs.h"

int kiln_op_since(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT ? kiln_op_version_ranges[op].since : 0;
}
int kiln_op_removed(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT ? kiln_op_version_ranges[op].removed : 0;
}
