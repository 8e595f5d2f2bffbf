/* Ops of the 'reduce' family (see src/graph/ops.def): Reduce* and ArgMax/ArgMin here;
 * Softmax, LogSoftmax, Hardmax, CumSum, CumProd and TopK in reduce_axis.c.
 *
 * Reduce*: the axes are an attribute before opset 18 (ReduceSum: before 13) and an optional
 * int64 input from then on, where noop_with_empty_axes=1 makes an empty axes list return the
 * input unchanged (as the spec and ONNX Runtime say; the ONNX Python reference applies the
 * op's element transform, e.g. the square of ReduceSumSquare, instead). Floats reduce in
 * double; Sum, Prod, SumSquare, L1, Max and Min of integer dtypes are exact (wrapping); the
 * others of integers go through double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "nn_internal.h"

typedef enum red_kind {
  RED_SUM,
  RED_SUMSQ,
  RED_L1,
  RED_L2,
  RED_MEAN,
  RED_PROD,
  RED_MAX,
  RED_MIN,
  RED_LOGSUM,
  RED_LOGSUMEXP,
} red_kind;

static red_kind red_kind_of(kiln_op op) {
  switch (op) {
  case KILN_OP_ReduceSumSquare: return RED_SUMSQ;
  case KILN_OP_ReduceL1: return RED_L1;
  case KILN_OP_ReduceL2: return RED_L2;
  case KILN_OP_ReduceMean: return RED_MEAN;
  case KILN_OP_ReduceProd: return RED_PROD;
  case KILN_OP_ReduceMax: return RED_MAX;
  case KILN_OP_ReduceMin: return RED_MIN;
  case KILN_OP_ReduceLogSum: return RED_LOGSUM;
  case KILN_OP_ReduceLogSumExp: return RED_LOGSUMEXP;
  default: return RED_SUM;
  }
}

/* The reduced axes of a rank-r input as a mask. axes_t: the axes input (NULL if omitted).
 * *noop is set when nothing is reduced because of noop_with_empty_axes. */
typedef struct red_axes {
  bool mask[KILN_MAX_RANK];
  bool keepdims;
  bool noop; /* noop_with_empty_axes with no axes: the output is the input */
} red_axes;

static kiln_status mark_axes(const kiln_node *node, const int64_t *axes, int n, int rank,
                             red_axes *ra) {
  char buf[160];
  for (int i = 0; i < n; i++) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank)
      return kiln_invalid("%s: axis %lld out of range for rank %d",
                          kiln_node_label(node, buf, sizeof buf), (long long)a, rank);
    if (a < 0) a += rank;
    if (ra->mask[a])
      return kiln_invalid("%s: axis %lld repeated", kiln_node_label(node, buf, sizeof buf),
                          (long long)axes[i]);
    ra->mask[a] = true;
  }
  return KILN_OK;
}

/* Fills ra from the node and the axes input (axes_t NULL when omitted; axes_known false when
 * the input exists but its value is unknown, for inference). */
static kiln_status red_axes_get(const kiln_node *node, const kiln_tensor *axes_t, int rank,
                                red_axes *ra) {
  kiln_attrs_reduce at;
  memset(ra, 0, sizeof *ra);
  KILN_TRY(kiln_attrs_reduce_decode(node, &at));
  ra->keepdims = at.keepdims;
  bool noop = at.noop_with_empty_axes;
  const int64_t *axes = NULL;
  int n = -1;
  int64_t *tmp = NULL;
  if (at.axes_input) {
    if (axes_t && axes_t->numel > 0) {
      if (!kiln_dtype_is_int(axes_t->dtype) || axes_t->rank > 1) {
        char buf[160];
        return kiln_invalid("%s: axes must be a 1-D integer tensor",
                            kiln_node_label(node, buf, sizeof buf));
      }
      tmp = kiln_xcalloc((size_t)axes_t->numel, sizeof(int64_t));
      for (int64_t i = 0; i < axes_t->numel; i++)
        tmp[i] = kiln_load_i64(axes_t->dtype, axes_t->data, (size_t)i);
      axes = tmp;
      n = (int)axes_t->numel;
    }
  } else {
    axes = at.axes;
    n = at.n_axes;
  }
  if (n <= 0) {
    for (int d = 0; d < rank; d++) ra->mask[d] = !noop;
    ra->noop = noop;
    return KILN_OK;
  }
  kiln_status st = mark_axes(node, axes, n, rank, ra);
  free(tmp);
  return st;
}

static void red_out_shape(int rank, const int64_t *dims, const red_axes *ra, int *out_rank,
                          int64_t *out_dims) {
  int r = 0;
  for (int d = 0; d < rank; d++) {
    if (!ra->mask[d]) out_dims[r++] = dims[d];
    else if (ra->keepdims) out_dims[r++] = 1;
  }
  *out_rank = r;
}

static double red_init_f64(red_kind k) {
  switch (k) {
  case RED_PROD: return 1.0;
  case RED_MAX: return -INFINITY;
  case RED_MIN: return INFINITY;
  default: return 0.0;
  }
}

static void red_f64(red_kind k, const double *x, const int64_t *map, int64_t n_in, double *acc,
                    int64_t n_out) {
  for (int64_t o = 0; o < n_out; o++) acc[o] = red_init_f64(k);
  if (k == RED_LOGSUMEXP) {
    double *mx = kiln_xcalloc((size_t)(n_out ? n_out : 1), sizeof(double));
    for (int64_t o = 0; o < n_out; o++) mx[o] = -INFINITY;
    for (int64_t i = 0; i < n_in; i++)
      if (x[i] > mx[map[i]]) mx[map[i]] = x[i];
    for (int64_t o = 0; o < n_out; o++)
      if (isinf(mx[o])) mx[o] = 0; /* all -inf, or an inf: sum exp directly */
    for (int64_t i = 0; i < n_in; i++) acc[map[i]] += exp(x[i] - mx[map[i]]);
    for (int64_t o = 0; o < n_out; o++) acc[o] = log(acc[o]) + mx[o];
    free(mx);
    return;
  }
  for (int64_t i = 0; i < n_in; i++) {
    double v = x[i], *a = &acc[map[i]];
    switch (k) {
    case RED_SUM:
    case RED_MEAN:
    case RED_LOGSUM: *a += v; break;
    case RED_SUMSQ:
    case RED_L2: *a += v * v; break;
    case RED_L1: *a += fabs(v); break;
    case RED_PROD: *a *= v; break;
    case RED_MAX:
      if (isnan(v) || v > *a) *a = v;
      break;
    case RED_MIN:
      if (isnan(v) || v < *a) *a = v;
      break;
    case RED_LOGSUMEXP: break;
    }
  }
  double count = n_out ? (double)n_in / (double)n_out : 0;
  for (int64_t o = 0; o < n_out; o++) {
    if (k == RED_L2) acc[o] = sqrt(acc[o]);
    else if (k == RED_LOGSUM) acc[o] = log(acc[o]);
    else if (k == RED_MEAN) acc[o] = acc[o] / count;
  }
}

/* Extreme values of an integer dtype, as int64 bit patterns (unsigned keep their bits). */
static void int_limits(kiln_dtype t, int64_t *lo, int64_t *hi) {
  int bits = t == KILN_BOOL ? 1 : (int)kiln_dtype_size(t) * 8;
  if (t == KILN_U4 || t == KILN_I4) bits = 4;
  if (t == KILN_U2 || t == KILN_I2) bits = 2;
  if (kiln_dtype_class_of(t) == KILN_CLASS_UINT) {
    *lo = 0;
    *hi = bits == 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1);
  } else {
    *hi = bits == 64 ? INT64_MAX : (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
    *lo = -*hi - 1;
  }
}

static bool int_less(bool is_unsigned, int64_t a, int64_t b) {
  return is_unsigned ? (uint64_t)a < (uint64_t)b : a < b;
}

static void red_i64(red_kind k, kiln_dtype t, const int64_t *x, const int64_t *map, int64_t n_in,
                    int64_t *acc, int64_t n_out) {
  int64_t lo, hi;
  int_limits(t, &lo, &hi);
  bool is_unsigned = kiln_dtype_class_of(t) == KILN_CLASS_UINT;
  int64_t init = k == RED_PROD ? 1 : k == RED_MAX ? lo : k == RED_MIN ? hi : 0;
  for (int64_t o = 0; o < n_out; o++) acc[o] = init;
  for (int64_t i = 0; i < n_in; i++) {
    uint64_t v = (uint64_t)x[i];
    int64_t *a = &acc[map[i]];
    switch (k) {
    case RED_SUMSQ: *a = (int64_t)((uint64_t)*a + v * v); break;
    case RED_L1:
      if (!is_unsigned && x[i] < 0) v = (uint64_t)0 - v;
      *a = (int64_t)((uint64_t)*a + v);
      break;
    case RED_PROD: *a = (int64_t)((uint64_t)*a * v); break;
    case RED_MAX:
      if (int_less(is_unsigned, *a, x[i])) *a = x[i];
      break;
    case RED_MIN:
      if (int_less(is_unsigned, x[i], *a)) *a = x[i];
      break;
    default: *a = (int64_t)((uint64_t)*a + v); break;
    }
  }
}

static bool red_exact_int(red_kind k) {
  return k == RED_SUM || k == RED_SUMSQ || k == RED_L1 || k == RED_PROD || k == RED_MAX ||
         k == RED_MIN;
}

static kiln_status red_compute(kiln_eval_ctx *ctx, red_kind k, const kiln_tensor *x,
                               const int64_t *map, kiln_tensor *y) {
  kiln_status st = KILN_OK;
  if (kiln_dtype_is_int(x->dtype) || x->dtype == KILN_BOOL) {
    if (red_exact_int(k)) {
      int64_t *xv = NULL, *acc = NULL;
      st = kiln_nn_load_i64(ctx, x, &xv);
      if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(int64_t), (void **)&acc);
      if (!st) {
        red_i64(k, x->dtype, xv, map, x->numel, acc, y->numel);
        kiln_nn_store_i64(y, acc);
      }
      free(xv);
      free(acc);
      return st;
    }
  } else if (!kiln_dtype_is_float(x->dtype)) {
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %s",
                           kiln_dtype_name(x->dtype));
  }
  double *xv = NULL, *acc = NULL;
  st = kiln_nn_load_f64(ctx, x, &xv);
  if (!st) st = kiln_nn_alloc(ctx, y->numel, sizeof(double), (void **)&acc);
  if (!st) {
    red_f64(k, xv, map, x->numel, acc, y->numel);
    kiln_nn_store_f64(y, acc);
  }
  free(xv);
  free(acc);
  return st;
}

static kiln_status eval_reduce(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  if (!kiln_dtype_is_float(x->dtype) && !kiln_dtype_is_int(x->dtype) && x->dtype != KILN_BOOL)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %s",
                           kiln_dtype_name(x->dtype));
  red_axes ra;
  /* the axes input (read only where the schema's axes are an input) */
  KILN_TRY(red_axes_get(ctx->node, kiln_eval_in(ctx, 1), x->rank, &ra));
  int orank;
  int64_t odims[KILN_MAX_RANK];
  red_out_shape(x->rank, x->dims, &ra, &orank, odims);
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, orank, odims, &y));
  if (ra.noop) {
    memcpy(y->data, x->data, kiln_tensor_nbytes(x));
    return KILN_OK;
  }
  int64_t *map = NULL;
  KILN_TRY(kiln_nn_reduce_map(ctx, x->rank, x->dims, ra.mask, &map));
  kiln_status st = red_compute(ctx, red_kind_of(ctx->node->op), x, map, y);
  free(map);
  return st;
}

static kiln_status infer_reduce(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x) return KILN_OK;
  const kiln_tensor *axes_t = NULL;
  kiln_attrs_reduce at;
  KILN_TRY(kiln_attrs_reduce_decode(ctx->node, &at));
  if (at.axes_input && ctx->n_in > 1 && ctx->in[1]) {
    axes_t = ctx->cin[1];
    if (!axes_t) { /* axes unknown: only the rank is known, with keepdims */
      if (at.keepdims) kiln_nn_infer_out_unknown(ctx, 0, x->dtype, x->rank);
      return KILN_OK;
    }
  }
  red_axes ra;
  KILN_TRY(red_axes_get(ctx->node, axes_t, x->rank, &ra));
  kiln_type t = *x;
  int r = 0;
  for (int d = 0; d < x->rank; d++) {
    if (!ra.mask[d]) {
      t.dims[r++] = x->dims[d];
    } else if (ra.keepdims) {
      t.dims[r].value = 1;
      t.dims[r++].sym = NULL;
    }
  }
  t.rank = r;
  ctx->out[0] = t;
  return KILN_OK;
}

/* ---- ArgMax / ArgMin ---- */

static kiln_status eval_arg(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_attrs_arg aa;
  KILN_TRY(kiln_attrs_arg_decode(ctx->node, x->rank, &aa));
  int axis = (int)aa.axis;
  bool keepdims = aa.keepdims, last = aa.select_last_index;
  if (x->dims[axis] == 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot take the arg of an empty axis");
  int64_t odims[KILN_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->rank; d++)
    if (d != axis) odims[orank++] = x->dims[d];
    else if (keepdims) odims[orank++] = 1;
  kiln_tensor *y;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_I64, orank, odims, &y));
  int64_t outer = kiln_nn_prod(x->dims, 0, axis), n = x->dims[axis];
  int64_t inner = kiln_nn_prod(x->dims, axis + 1, x->rank);
  int sign = ctx->node->op == KILN_OP_ArgMax ? 1 : -1;
  int64_t *out = y->data;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * n * inner + in, best = 0;
      for (int64_t j = 1; j < n; j++) {
        int c = sign * kiln_nn_cmp(x, base + j * inner, base + best * inner);
        if (c > 0 || (c == 0 && last)) best = j;
      }
      out[o * inner + in] = best;
    }
  }
  return KILN_OK;
}

static kiln_status infer_arg(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_nn_infer_in(ctx, 0);
  if (!x) return KILN_OK;
  kiln_attrs_arg aa;
  KILN_TRY(kiln_attrs_arg_decode(ctx->node, x->rank, &aa));
  int64_t axis = aa.axis;
  bool keepdims = aa.keepdims;
  kiln_type t = *x;
  t.dtype = KILN_I64;
  int r = 0;
  for (int d = 0; d < x->rank; d++) {
    if (d != axis) {
      t.dims[r++] = x->dims[d];
    } else if (keepdims) {
      t.dims[r].value = 1;
      t.dims[r++].sym = NULL;
    }
  }
  t.rank = r;
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_ops_register_reduce(kiln_op_impl *table) {
  static const kiln_op reductions[] = {
      KILN_OP_ReduceL1,  KILN_OP_ReduceL2,        KILN_OP_ReduceLogSum, KILN_OP_ReduceLogSumExp,
      KILN_OP_ReduceMax, KILN_OP_ReduceMean,      KILN_OP_ReduceMin,    KILN_OP_ReduceProd,
      KILN_OP_ReduceSum, KILN_OP_ReduceSumSquare,
  };
  for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
    kiln_nn_set(table, reductions[i], eval_reduce, infer_reduce, 1, 2, 1, 1);
  kiln_nn_set(table, KILN_OP_ArgMax, eval_arg, infer_arg, 1, 1, 1, 1);
  kiln_nn_set(table, KILN_OP_ArgMin, eval_arg, infer_arg, 1, 1, 1, 1);
  kiln_nn_register_reduce_axis(table);
}
