/* Private interface of the 'elementwise' family (elementwise*.c).
 *
 * Most elementwise ops are one scalar function applied over the
 * multidirectional broadcast of their inputs: kiln_ew_map runs that loop once
 * for every op. An op supplies one scalar function per compute class (float in
 * double, signed integers exactly in int64, unsigned integers and bool exactly
 * in uint64, strings); the result is rounded or wrapped once into the output
 * dtype. */
#ifndef KILN_OPS_EW_INTERNAL_H
#define KILN_OPS_EW_INTERNAL_H

#include "ops.h"

/* One argument of a scalar function; the member read is the compute class's. */
typedef union kiln_ew_arg {
  double f;      /* KILN_CLASS_FLOAT */
  int64_t i;     /* KILN_CLASS_SINT */
  uint64_t u;    /* KILN_CLASS_UINT (bool included) */
  const char *s; /* KILN_CLASS_STRING (never NULL) */
} kiln_ew_arg;

/* Attribute values of the node, read once before the loop. */
typedef struct kiln_ew_params {
  int n;                                  /* argument count (variadic ops) */
  double alpha, beta, gamma, lambd, bias; /* from kiln_attrs_ew */
  double gelu_c, gelu_k;                  /* Gelu tanh: its function body's constants */
  double lo_f, hi_f;                      /* Clip bounds per class */
  int64_t lo_i, hi_i;
  uint64_t lo_u, hi_u;
  int64_t mode;  /* Mod: fmod; BitShift: 1 = right; Gelu: 1 = tanh; IsInf: bit 0
                    neg, 1 pos */
  bool div_zero; /* set by an integer Div/Mod that met a zero divisor */
} kiln_ew_params;

typedef double (*kiln_ew_f64_fn)(const kiln_ew_arg *x, kiln_ew_params *p);
typedef int64_t (*kiln_ew_i64_fn)(const kiln_ew_arg *x, kiln_ew_params *p);
typedef uint64_t (*kiln_ew_u64_fn)(const kiln_ew_arg *x, kiln_ew_params *p);

enum {
  KILN_EW_BOOL_OUT = 1,  /* the output is bool (comparisons, IsNaN, ...) */
  KILN_EW_MIXED = 2,     /* inputs may have different dtypes (Pow) */
  KILN_EW_VIA_FLOAT = 4, /* integer inputs are computed in double too (float attributes) */
};

/* The scalar functions of one op; NULL where the op does not take that class.
 */
typedef struct kiln_ew_fns {
  kiln_ew_f64_fn f;
  kiln_ew_i64_fn i;
  kiln_ew_u64_fn u;
  kiln_ew_u64_fn s; /* strings in, result stored as an integer (Equal) */
  int flags;
} kiln_ew_fns;

/* The scalar functions of op, or NULL for ops with their own kernel
 * (elementwise_fns.c). */
const kiln_ew_fns *kiln_ew_fns_of(kiln_op op);

/* ---- broadcasting loop (elementwise_map.c) ---- */
typedef struct kiln_ew_bcast {
  int n, rank;
  int64_t dims[KILN_MAX_RANK];
  int64_t numel;
  int64_t *strides; /* n * rank: element strides of input k along output dim d */
  int64_t *off;     /* n: element index in input k of the current output element */
  int64_t idx[KILN_MAX_RANK];
} kiln_ew_bcast;

/* Starts a loop over the broadcast shape of ts[0..n); error names the node. */
KILN_MUST_USE kiln_status kiln_ew_bcast_begin(const kiln_eval_ctx *ctx, int n,
                                              const kiln_tensor *const *ts, kiln_ew_bcast *b);
/* Advances to the next output element (row-major). */
void kiln_ew_bcast_next(kiln_ew_bcast *b);
void kiln_ew_bcast_end(kiln_ew_bcast *b);

/* Output 0 = fns applied to ts[0..n) broadcast, computed in class cls, stored
 * as out_dt. */
KILN_MUST_USE kiln_status kiln_ew_map(kiln_eval_ctx *ctx, const kiln_ew_fns *fns, kiln_ew_params *p,
                                      int n, const kiln_tensor *const *ts, kiln_dtype_class cls,
                                      kiln_dtype out_dt);

/* The eval function of every op that has kiln_ew_fns. */
KILN_MUST_USE kiln_status kiln_ew_eval_map(kiln_eval_ctx *ctx);

/* ---- kernels with their own loops (elementwise_cast.c) ---- */
KILN_MUST_USE kiln_status kiln_ew_eval_cast(kiln_eval_ctx *ctx);
KILN_MUST_USE kiln_status kiln_ew_eval_castlike(kiln_eval_ctx *ctx);
KILN_MUST_USE kiln_status kiln_ew_eval_bitcast(kiln_eval_ctx *ctx);
KILN_MUST_USE kiln_status kiln_ew_eval_identity(kiln_eval_ctx *ctx);
KILN_MUST_USE kiln_status kiln_ew_eval_where(kiln_eval_ctx *ctx);

/* Cast of one element: src[i] (dtype of src) into dst[j]. Strings are copied.
 */
typedef struct kiln_ew_cast_opts {
  bool saturate;  /* float8 targets: clamp to the largest finite value */
  int round_mode; /* float8e8m0 target: 0 up, 1 down, 2 nearest */
} kiln_ew_cast_opts;
/* Converts every element of src into dst (same numel); error on an unparsable
 * string. */
KILN_MUST_USE kiln_status kiln_ew_cast_tensor(const kiln_eval_ctx *ctx, const kiln_tensor *src,
                                              kiln_tensor *dst, const kiln_ew_cast_opts *o);
/* Reads Cast's `to` attribute (an int, or in Cast-1 a type name string). */
KILN_MUST_USE kiln_status kiln_ew_cast_to(const kiln_node *node, kiln_dtype *out);

/* Whether op uses the legacy (opset < 7) broadcast attribute, and the view of
 * input 1 it gives (rank of a, dims placed at `axis`). */
KILN_MUST_USE kiln_status kiln_ew_legacy_bcast(const kiln_eval_ctx *ctx, const kiln_tensor *a,
                                               const kiln_tensor *b, kiln_tensor *view, bool *used);

#endif
