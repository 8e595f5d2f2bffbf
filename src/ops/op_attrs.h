/* Attribute schemas of the ONNX ops (generated table, src/ops/op_attrs.c). */
#ifndef KILN_OP_ATTRS_H
#define KILN_OP_ATTRS_H

#include "ops.h"

typedef struct kiln_attr_schema {
  const char *name; /* NULL ends a list */
  int kind;         /* kiln_attr_kind */
  int required;
} kiln_attr_schema;

typedef struct kiln_op_schema_version {
  int since; /* 0 ends a list */
  const kiln_attr_schema *attrs;
  int max_in; /* inputs the version defines (its last ones may be optional); -1: variadic */
} kiln_op_schema_version;

/* Per op, its schema versions in increasing order (NULL for ops ONNX does not define). */
extern const kiln_op_schema_version *const kiln_op_attr_versions[KILN_OP_COUNT];

#endif
