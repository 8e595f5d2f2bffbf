/* Attribute schemas of the ONNX ops (generated table, src/ops/op_attrs.c, written by
 * scripts/gen_op_attrs.py from the pinned onnx package) and the lookup of their defaults.
 *
 * For every op of ops.def and every version of its schema: the attributes the version
 * accepts, their kinds, whether each is required, and the default value the schema gives
 * (LeakyRelu's alpha 0.01, Softmax's axis 1 before opset 13 and -1 from it, ...). The
 * defaults are read here and nowhere else: the typed decoders (attr_decode.h) take them from
 * this table, so a default is written once, by the ONNX schema. */
#ifndef KILN_OP_ATTRS_H
#define KILN_OP_ATTRS_H

#include "ops.h"

typedef struct kiln_attr_schema {
  const char *name; /* NULL ends a list */
  int kind;         /* kiln_attr_kind */
  int required;
  int has_default; /* the schema gives a default (the fields below of the kind hold it) */
  float f;         /* FLOAT (a binary32 value, as ONNX stores it) */
  int64_t i;       /* INT */
  const char *s;   /* STRING */
  int n;           /* element count of a FLOATS / INTS / STRINGS default */
  const float *floats;
  const int64_t *ints;
  const char *const *strings;
} kiln_attr_schema;

typedef struct kiln_op_schema_version {
  int since; /* 0 ends a list */
  const kiln_attr_schema *attrs;
  int max_in; /* inputs the version defines (its last ones may be optional); -1: variadic */
} kiln_op_schema_version;

/* Per op, its schema versions in increasing order (NULL for ops ONNX does not define). */
extern const kiln_op_schema_version *const kiln_op_attr_versions[KILN_OP_COUNT];

/* Per op, the opset that introduced it and the one that removed it (0: still present);
 * {0, 0} for an op ONNX does not define. kiln_op_since / kiln_op_removed (ops.h) read it. */
typedef struct kiln_op_version_range {
  int since, removed;
} kiln_op_version_range;
extern const kiln_op_version_range kiln_op_version_ranges[KILN_OP_COUNT];

/* The schema version of op in force at `opset`: the last one introduced at or before it.
 * opset <= 0 (a graph that imports no default-domain opset, as graphs built in code) takes the
 * newest version; an opset older than the op's first version takes the first (kiln_op_check
 * rejects such a node; this lookup stays total). NULL for ops ONNX does not define. */
const kiln_op_schema_version *kiln_op_schema_at(kiln_op op, int64_t opset);
/* The schema of attribute `name` of op at opset; NULL when that version has no such attribute. */
const kiln_attr_schema *kiln_attr_schema_at(kiln_op op, int64_t opset, const char *name);

/* The default value the schema of op at opset gives attribute `name`. Each returns false (and
 * leaves *out alone) when the version has no such attribute, gives no default, or gives one of
 * another kind. */
bool kiln_attr_default_f(kiln_op op, int64_t opset, const char *name, float *out);
bool kiln_attr_default_i(kiln_op op, int64_t opset, const char *name, int64_t *out);
bool kiln_attr_default_s(kiln_op op, int64_t opset, const char *name, const char **out);
bool kiln_attr_default_floats(kiln_op op, int64_t opset, const char *name, const float **out,
                              int *out_n);
bool kiln_attr_default_ints(kiln_op op, int64_t opset, const char *name, const int64_t **out,
                            int *out_n);
bool kiln_attr_default_strings(kiln_op op, int64_t opset, const char *name, const char *const **out,
                               int *out_n);

#endif
