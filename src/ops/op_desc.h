/* The op descriptor: the facts about an op that layers other than its reference kernel ask
 * about, one row per op in op_desc.c, so that a pass, the lowering or the verifier asks the
 * table instead of keeping its own list of op names.
 *
 *   const kiln_op_desc *d = kiln_op_desc_of(n->op);
 *   if (d->flags & KILN_OPF_RANDOM) return false;          // never folded nor merged
 *   if (kiln_ew_dtypes_take(d->ew, dtype)) ...             // an elementwise compute applies
 *
 * The descriptor holds facts, never semantics: how an op computes lives twice, on purpose,
 * in its reference kernel (src/ops) and its compute definition (src/lower), and the two are
 * checked against each other. What the schema says (opsets, attributes and their defaults)
 * is generated into op_attrs.c / op_versions.c; the descriptor holds what a schema does not.
 * tests/unit/test_op_registry.c walks every op and checks that each has what every layer
 * needs (kernel, inference, version, bound rule, generator entry, lowering). */
#ifndef KILN_OP_DESC_H
#define KILN_OP_DESC_H

#include "graph/graph.h"

/* What an op does to its elements. */
typedef enum kiln_op_class {
  KILN_OPC_NONE,        /* KILN_OP_UNKNOWN only */
  KILN_OPC_ELEMENTWISE, /* output element i is a function of input elements i (broadcast) */
  KILN_OPC_REDUCTION,   /* an output element combines many elements of one input (axes, windows) */
  KILN_OPC_CONTRACTION, /* sums of products of two operands (MatMul, Conv, recurrences, DFT) */
  KILN_OPC_DATA,        /* moves, selects or makes elements without arithmetic on them */
  KILN_OPC_CONTROL,     /* subgraphs, sequences and optionals */
  KILN_OPC_COUNT
} kiln_op_class;

/* Flags of kiln_op_desc.flags. */
enum {
  KILN_OPF_RANDOM = 1 << 0,      /* the result is random (Dropout too): never folded nor merged */
  KILN_OPF_COMMUTATIVE = 1 << 1, /* the result does not depend on the order of the inputs */
  KILN_OPF_SUBGRAPH = 1 << 2,    /* has graph attributes (bodies run by the interpreter) */
};

/* The dtypes an elementwise compute definition takes for its data inputs (lower_ew.c). */
typedef enum kiln_ew_dtypes {
  KILN_EWD_NONE,   /* no elementwise compute definition */
  KILN_EWD_FLOAT,  /* float inputs only */
  KILN_EWD_NUM,    /* floats and ints (not bool) */
  KILN_EWD_SIGNED, /* floats and signed ints */
  KILN_EWD_INT,    /* ints only */
  KILN_EWD_UINT,   /* unsigned ints only */
  KILN_EWD_BOOL,   /* bool only */
  KILN_EWD_ANY,    /* any dtype (Identity, Cast, Where, comparisons) */
  KILN_EWD_COUNT
} kiln_ew_dtypes;

/* The common shapes of elementwise ops in the reference interpreter: elementwise.c gives
 * every op of a form its arity and its inference (the result's type) from this field, so a
 * new op of one of these forms needs no list entry there. */
typedef enum kiln_ew_form {
  KILN_EWF_NONE,     /* the op's family registers it by itself */
  KILN_EWF_UNARY,    /* one input; the result has its type */
  KILN_EWF_BINARY,   /* two inputs, broadcast; the result has their dtype */
  KILN_EWF_COMPARE,  /* two inputs, broadcast; a bool result */
  KILN_EWF_VARIADIC, /* one or more inputs, broadcast; the result has their dtype */
  KILN_EWF_COUNT
} kiln_ew_form;

/* An op's row. Its name and family (the file of src/ops that implements it) are in
 * src/graph/ops.def: kiln_op_name(), kiln_op_family(). */
typedef struct kiln_op_desc {
  kiln_op_class cls;
  unsigned flags;    /* KILN_OPF_* */
  kiln_ew_dtypes ew; /* KILN_EWD_NONE unless the op has an elementwise compute definition */
  int compute_bits;  /* 0: computes in the policy's type; 64: f32 data computes in f64
                        (the f32 formula cancels: Elu, Selu, Celu, Softplus, Mish, Gelu,
                        Swish) and rounds once */
  kiln_ew_form form; /* KILN_EWF_NONE unless the op has one of the common elementwise forms */
} kiln_op_desc;

/* The descriptor of op; KILN_OP_UNKNOWN (and out-of-range values) give a row of class NONE. */
const kiln_op_desc *kiln_op_desc_of(kiln_op op);
/* Whether op has every flag of `flags`. */
bool kiln_op_has(kiln_op op, unsigned flags);
/* Whether a data input of dtype t is one an elementwise compute of class c takes. */
bool kiln_ew_dtypes_take(kiln_ew_dtypes c, kiln_dtype t);
const char *kiln_op_class_name(kiln_op_class c);
const char *kiln_ew_dtypes_name(kiln_ew_dtypes c);

#endif
