/* Internals of the reference with error bounds (bound*.c): the state of one node being
 * bounded, F64 tensor helpers and the op -> rule table.
 *
 * A rule fills the error tensor of each floating-point output of a node from the reference
 * values of its inputs (val), their error bounds (err) and the outputs (computed in double by
 * the op's reference kernel). err = propagated input error + the op's own rounding. */
#ifndef KILN_VERIFY_BOUND_INTERNAL_H
#define KILN_VERIFY_BOUND_INTERNAL_H

#include "verify/verify.h"

/* How a node's error bound is derived (bound_rules.c has the table and docs/DESIGN.md the
 * model). */
typedef enum bnd_rule {
  BND_PERTURB,     /* no rule (the default): perturbation of all inputs with a safety factor */
  BND_EXACT,       /* no float output from float inputs with errors (integer ops, Shape ...) */
  BND_DISCRETE,    /* elementwise discrete result of float inputs: corners decide instability */
  BND_MOVE,        /* data movement: err = op(err of the float inputs) */
  BND_SUM,         /* positive linear combination: err = op(err) + gamma_K * op(|x|) */
  BND_SUB,         /* Sub: err = eA + eB (the op applied as Add) */
  BND_MULTILIN,    /* multilinear contraction: op(|x|+e) - op(|x|) + gamma_K * op(|x|) */
  BND_GEMM,        /* Gemm: MULTILIN on A, B with |alpha|, and |beta| * C */
  BND_CORNER,      /* elementwise, monotone or convex per input: corners of the input boxes */
  BND_LIPSCHITZ,   /* elementwise with |f'| <= 1 (Sin, Cos): err = min(e, range) */
  BND_MOD,         /* Mod of floats (fmod): exact, jumps where the quotient's truncation moves */
  BND_CAST,        /* Cast/CastLike: rounding to the target float type, or DISCRETE */
  BND_ARGMINMAX,   /* ArgMax/ArgMin: exact indices, unstable where a rival is within error */
  BND_TOPK,        /* TopK: values move, indices unstable where candidates overlap */
  BND_HARDMAX,     /* Hardmax: exact one-hot, unstable where a rival is within error */
  BND_NONZERO,     /* NonZero: exact indices, unstable where an element is within error of 0 */
  BND_SOFTMAX,     /* Softmax, LogSoftmax (bound_norm.c) */
  BND_NORM,        /* LayerNormalization, RMSNormalization, InstanceNormalization, GroupNorm */
  BND_LRN,         /* LRN (bound_norm.c) */
  BND_REDUCE_MONO, /* ReduceMax/Min, MaxPool, GlobalMaxPool: monotone: corners of all inputs */
  BND_RULE_COUNT
} bnd_rule;

typedef struct bnd_opinfo {
  bnd_rule rule;
  double ulps;   /* own error of the op's computation, in units u of the output dtype */
  double absmag; /* own error also counts ulps * u * absmag * |x0| (cancellation, e.g. Gelu) */
  double absc;   /* ... and ulps * u * absc (an absolute term, e.g. Elu's alpha (exp(x) - 1)) */
  int pole1;     /* CORNER: 1 + the input whose interval must not contain 0 (Div ...); 0 none */
  bool mono_all; /* monotone increasing in every input: only the two all-equal corners */
  unsigned mask; /* MOVE, SUM, MULTILIN: bit i set for data input i; 0 means input 0 only */
  const char *perturb_why; /* PERTURB: why the op has no rule (every op without one says) */
} bnd_opinfo;

/* The table's row of op: NULL when the op has none (it then falls back to PERTURB as
 * well; test_op_registry requires a row, a rule or a reason, for every op). */
const bnd_opinfo *kiln_bnd_row(kiln_op op);

const bnd_opinfo *kiln_bnd_info(kiln_op op);

/* One node being bounded. Arrays have n->n_inputs / n->n_outputs entries. */
typedef struct bnd_node {
  kiln_vref *r;
  const kiln_graph *g;
  int id;
  const kiln_node *n;
  kiln_val **in;      /* reference input values (borrowed; NULL for omitted) */
  kiln_tensor **ein;  /* their error bounds (borrowed; NULL when exact) */
  kiln_val **out;     /* reference outputs (owned until stored in r) */
  kiln_tensor **eout; /* error bounds to fill (owned until stored in r) */
  double *u_out;      /* unit roundoff of output k's dtype, 0 for non-float */
  double *tiny_out;   /* half its smallest subnormal: the absolute error of one rounding
                         (underflow), 0 for non-float */
  double u_in;        /* the largest unit roundoff among the float inputs and outputs */
  int64_t n_unstable, n_nonfinite;
} bnd_node;

/* bound_zsign.c: the looseness of the sign of output k's zeros (kiln_vref.zloose), from the
 * node's reference output, its error bound (b->eout[k], filled) and its inputs' looseness;
 * NULL when every element's sign is determined (or output k is not a float tensor). */
kiln_tensor *kiln_bnd_zero_loose(bnd_node *b, int k);

/* compare.c: the floor of the comparison, atol + rtol |v|, for float dtype t. */
void kiln_bnd_floor(kiln_dtype t, double *atol, double *rtol);

/* ---- bound.c ---- */
double kiln_bnd_unit_roundoff(kiln_dtype t); /* 0 for non-float types */
double kiln_bnd_tiny(kiln_dtype t);          /* half the smallest subnormal; 0 non-float */
/* Runs the node's kernel on ins (one per input, NULL omitted), in double; float outputs are
 * widened to F64. op overrides the node's op when not KILN_OP_UNKNOWN (a node with the same
 * attributes and another op, e.g. Sub run as Add). */
KILN_MUST_USE kiln_status kiln_bnd_eval(const bnd_node *b, kiln_op op, kiln_val *const *ins,
                                        kiln_val **outs);
/* Inputs with every float tensor input i replaced by f(in[i], ein[i]) (new tensors,
 * collected in *owned for kiln_bnd_free_vals); others borrowed. */
typedef enum bnd_subst {
  BND_ERR,      /* e (zeros when exact) */
  BND_ABS,      /* |x| */
  BND_ABS_PLUS, /* |x| + e */
  BND_PLUS,     /* x + e */
  BND_MINUS,    /* x - e */
  BND_ONES,     /* 1 */
  BND_ZEROS,    /* 0 */
  BND_NEG_ABS,  /* -|x| */
  BND_NEAR0,    /* 0 where the interval [x - e, x + e] holds 0, else x */
  BND_ABS_MAX1, /* max(|x| + e, 1): products of any subset of these bound partial products */
  BND_ABS_FIN,  /* |x| + e where x is finite, 0 at NaN and infinities (the finite terms) */
  BND_INF_IND,  /* 1 where x is infinite, else 0 */
  BND_ZERO_IND, /* 1 where x is finite and its interval [x - e, x + e] holds 0 (e > 0), else 0 */
  BND_SAME,     /* x itself (borrowed) */
  BND_OMIT,     /* the input left out (NULL), e.g. Gemm's C */
} bnd_subst;
kiln_val **kiln_bnd_subst(const bnd_node *b, const bnd_subst *how, kiln_val ***owned);
void kiln_bnd_free_vals(kiln_val **v, int n);
bool kiln_bnd_is_float_val(const kiln_val *v);
/* Whether input i is a float tensor that carries an error. */
bool kiln_bnd_has_err(const bnd_node *b, int i);
/* bound_dtype.c: the dtype a value is stored in by the graph (kiln_vref.dtype). */
kiln_dtype kiln_bnd_val_dtype(const kiln_val *v);
/* Output k of n: its declared dtype, or (inference gave none) the one its op makes. */
kiln_dtype kiln_bnd_out_dtype(const kiln_vref *r, const kiln_node *n, int k);
/* Records r->dtype of n's outputs once n has run (outs: its outputs as the reference holds
 * them). */
void kiln_bnd_note_dtypes(kiln_vref *r, const kiln_node *n, kiln_val *const *outs);
/* Notes an unstable / non-finite element count of the node (first note wins). by_bound: of
 * the non-finite ones, those whose value is finite but whose error bound reaches the range of
 * the dtype (unstable bounds, not NaN/Inf values: the note says which). */
void kiln_bnd_unstable(bnd_node *b, int64_t count, const char *why);
void kiln_bnd_nonfinite(bnd_node *b, int64_t count, int64_t by_bound);
/* The magnitude from which a value rounds to Inf in dtype t (round to nearest), 0 when not
 * tracked (f64, non-float). */
double kiln_bnd_overflow_at(kiln_dtype t);
/* Intermediate overflow: where an intermediate result of output k that a correct
 * implementation may form (a partial sum, the sum of a mean before the division, a partial
 * product) can reach |inter| >= the overflow limit of the type output k is computed in, the
 * output may be Inf: its error becomes at least that limit, so count_nonfinite (bound.c)
 * counts the element as non-finite by its bound and the input search drops the draw. Returns
 * err, raised where needed. */
double kiln_bnd_inter_err(const bnd_node *b, int k, double inter, double err);
/* A new F64 tensor of the shape of t, zero. */
kiln_tensor *kiln_bnd_zeros_like(const kiln_tensor *t);
/* Adds own rounding c * u * |y| to e (e has y's shape), and returns e. */
void kiln_bnd_add_rel(kiln_tensor *e, const kiln_tensor *y, double cu);

/* ---- the precision policy (bound_prec.c; r->precision) ---- */
/* The unit roundoff (half its smallest subnormal) of the types n's class computes and
 * accumulates values of dtype t in, when that is coarser than t's own; 0 otherwise. */
double kiln_bnd_policy_u(const bnd_node *b, kiln_dtype t);
double kiln_bnd_policy_tiny(const bnd_node *b, kiln_dtype t);
/* Float inputs enter the node rounded to its compute type: where that type is coarser than
 * the input's dtype, b->ein[i] becomes ein + u_c |x| + tiny_c. Returns the new tensors
 * (one slot per input, NULL where unchanged; the caller frees them), or NULL when none. */
kiln_tensor **kiln_bnd_policy_inputs(bnd_node *b);
/* Float attributes enter the node rounded to its compute type (a kernel holds Shrink's bias
 * and lambd, HardSigmoid's alpha and beta there), or without a policy to the storage type (a
 * result that is an attribute, Clip-6's min or max, is stored rounded): where that type is
 * coarser than f32, the node runs again with them rounded and |y' - y| joins each float
 * output's error. Call after the rule filled b->eout. */
void kiln_bnd_policy_attrs(bnd_node *b);

/* ---- helpers of the rules (bound_generic.c) ---- */
double kiln_bnd_gamma(double k, double u); /* gamma_K(u), continued linearly past K u = 1/2 */
/* Runs the op on inputs substituted as how[i] says; *outs: n_outputs new values. */
KILN_MUST_USE kiln_status kiln_bnd_eval_how(const bnd_node *b, kiln_op op, const bnd_subst *how,
                                            kiln_val ***outs);
/* The F64 tensor of output k of vals, or NULL. */
kiln_tensor *kiln_bnd_out_t(const bnd_node *b, kiln_val **vals, int k);
/* Takes output k's tensor out of vals (NULL when not a F64 tensor). */
kiln_tensor *kiln_bnd_take_t(const bnd_node *b, kiln_val **vals, int k);
void kiln_bnd_free_outs(const bnd_node *b, kiln_val **vals);
/* Whether any float input carries an error. */
bool kiln_bnd_any_err(const bnd_node *b);
/* Elements of input tensor t (broadcast to y's shape) for each element of y: idx[i]. */
int64_t *kiln_bnd_bcast_index(const kiln_tensor *t, const kiln_tensor *y);
/* Elements of input 0 per element of output 0, at least 1. */
double kiln_bnd_ratio(const bnd_node *b);

/* ---- rule implementations (bound_generic.c, bound_cast.c, bound_norm.c) ---- */
KILN_MUST_USE kiln_status kiln_bnd_apply(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_discrete(bnd_node *b, double ulps);
KILN_MUST_USE kiln_status kiln_bnd_exact(bnd_node *b, const bnd_opinfo *info);
KILN_MUST_USE kiln_status kiln_bnd_corner(bnd_node *b, const bnd_opinfo *info);
KILN_MUST_USE kiln_status kiln_bnd_lipschitz(bnd_node *b, const bnd_opinfo *info);
KILN_MUST_USE kiln_status kiln_bnd_reduce_mono(bnd_node *b, const bnd_opinfo *info);
KILN_MUST_USE kiln_status kiln_bnd_perturb(bnd_node *b, double ulps);
KILN_MUST_USE kiln_status kiln_bnd_cast(bnd_node *b);
/* Cast/CastLike from a float type to an integer type: elements whose value (within its
 * error) truncates outside the target's range are unstable (undefined in ONNX). Runs on
 * exact inputs too. */
void kiln_bnd_cast_range(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_argminmax(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_topk(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_hardmax(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_nonzero(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_softmax(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_norm(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_mod(bnd_node *b);
KILN_MUST_USE kiln_status kiln_bnd_lrn(bnd_node *b);

#endif
