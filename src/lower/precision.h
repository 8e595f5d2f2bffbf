/* Precision policy: which types an op's arithmetic runs in.
 *
 * For each op class and each storage dtype (the dtype a graph value is stored in), the
 * policy names a compute type (the type loads are converted to and the op's arithmetic runs
 * in) and an accumulate type (the type of running sums: reduction accumulators, the C of a
 * contraction's MMA). Lowering asks it at every place where it used to hard-code "f16, bf16
 * and float8 compute in f32"; the error-bound model of src/verify/bound asks it for the
 * unit roundoff of a node's own arithmetic. The tile IR carries the chosen types, so code
 * generation needs nothing more from it.
 *
 *   kiln_precision_policy p;
 *   kiln_precision_default(&p);                       // today's results, bit for bit
 *   KILN_TRY(kiln_precision_set(&p, KILN_PREC_ELEMENTWISE, KILN_F32, KILN_F16, KILN_F16));
 *   lower_opts.precision = &p;   // or kiln_compile_opts.precision = p
 *
 * A rule left at KILN_UNDEFINED means the default rule (so a zeroed policy is the default):
 * compute: F32 for F16, BF16, the float8 types and F32; the dtype itself otherwise (F64,
 * integers, bool); accumulate: for reductions F64 for floats and I64/U64 for integers (sums
 * are carried wide), for other classes the compute type.
 *
 * The op classes are a local enum until the op registry carries them; kiln_precision_class_of
 * is the one place that maps ops to them. */
#ifndef KILN_LOWER_PRECISION_H
#define KILN_LOWER_PRECISION_H

#include "ops/ops.h"

typedef enum kiln_prec_class {
  KILN_PREC_ELEMENTWISE, /* Add, Relu, Cast, ... and the epilogues fused into contractions */
  KILN_PREC_REDUCTION,   /* Reduce*, ArgMax, Softmax, norms, pools, CumSum, Hardmax */
  KILN_PREC_CONTRACTION, /* MatMul, Gemm, Conv */
  KILN_PREC_DATA,        /* data movement and generators: Pad, Gather, Scatter, OneHot, ... */
  KILN_PREC_CLASS_COUNT
} kiln_prec_class;

const char *kiln_prec_class_name(kiln_prec_class c); /* "elementwise", ... */
kiln_prec_class kiln_precision_class_of(kiln_op op);

typedef struct kiln_precision_rule {
  kiln_dtype compute, accumulate; /* KILN_UNDEFINED: the default */
} kiln_precision_rule;

typedef struct kiln_precision_policy {
  kiln_precision_rule rule[KILN_PREC_CLASS_COUNT][KILN_DTYPE_COUNT]; /* [class][storage] */
} kiln_precision_policy;

void kiln_precision_default(kiln_precision_policy *p);
/* True when every rule gives the default's types. */
bool kiln_precision_is_default(const kiln_precision_policy *p);
/* Sets the rule of (class, storage). Bad input unless storage is a float dtype and compute
 * and accumulate are F16, BF16, F32 or F64 with accumulate at least as wide as compute
 * (contraction accumulators: F32 or F64, the MMA's accumulator types), or storage is an
 * integer dtype, compute is storage and accumulate is an integer type at least as wide
 * (I8/U8 contractions may accumulate in I32: the int8 dot product). */
KILN_MUST_USE kiln_status kiln_precision_set(kiln_precision_policy *p, kiln_prec_class c,
                                             kiln_dtype storage, kiln_dtype compute,
                                             kiln_dtype accumulate);
/* Parses "CLASS:STORAGE=COMPUTE[/ACCUMULATE],..." (e.g. "elementwise:f32=f16") into p, on
 * top of what p holds; bad input names the faulty item. */
KILN_MUST_USE kiln_status kiln_precision_parse(kiln_precision_policy *p, const char *text);
/* The rules of p that differ from the default, in the form kiln_precision_parse reads
 * ("elementwise:f16=f16/f16,..."), each with its accumulate type; "" for the default (p NULL
 * too) and when len cannot hold them all. */
void kiln_precision_format(const kiln_precision_policy *p, char *buf, size_t len);

/* The types for values of dtype storage in ops of class c (p NULL: the default). */
kiln_dtype kiln_precision_compute(const kiln_precision_policy *p, kiln_prec_class c,
                                  kiln_dtype storage);
kiln_dtype kiln_precision_accumulate(const kiln_precision_policy *p, kiln_prec_class c,
                                     kiln_dtype storage);

#endif
