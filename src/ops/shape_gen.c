/* Ops that generate tensors from attributes or scalars: Constant,
 * ConstantOfShape, EyeLike, Range, OneHot. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

/* ---- Constant: exactly one of value, sparse_value (imported dense),
 * value_float(s), value_int(s), value_string(s) ---- */
static const char *const const_attrs[] = {"value",        "sparse_value", "value_float",
                                          "value_floats", "value_int",    "value_ints",
                                          "value_string", "value_strings"};

static kiln_status const_attr(const kiln_node *n, const kiln_attr **out) {
  *out = NULL;
  for (size_t i = 0; i < sizeof const_attrs / sizeof *const_attrs; i++) {
    const kiln_attr *a = kiln_node_attr(n, const_attrs[i]);
    if (!a) continue;
    if (*out) return kiln_shape_err(n, "has more than one value attribute");
    *out = a;
  }
  if (!*out) return kiln_shape_err(n, "has no value attribute");
  return KILN_OK;
}

/* The tensor of a Constant attribute (new, owned by the caller). */
static kiln_status const_tensor(const kiln_node *n, const kiln_attr *a, kiln_tensor **out) {
  int64_t len = a->n;
  switch (a->kind) {
  case KILN_ATTR_TENSOR:
  case KILN_ATTR_SPARSE_TENSOR:
    if (!a->t) return kiln_shape_err(n, "attribute '%s' holds no tensor", a->name);
    return kiln_tensor_clone(a->t, out);
  case KILN_ATTR_FLOAT: return kiln_tensor_new_scalar_f64(KILN_F32, a->f, out);
  case KILN_ATTR_INT:
    KILN_TRY(kiln_tensor_new(KILN_I64, 0, NULL, out));
    *(int64_t *)(*out)->data = a->i;
    return KILN_OK;
  case KILN_ATTR_FLOATS:
    KILN_TRY(kiln_tensor_new(KILN_F32, 1, &len, out));
    if (len) memcpy((*out)->data, a->floats, (size_t)len * sizeof(float));
    return KILN_OK;
  case KILN_ATTR_INTS:
    KILN_TRY(kiln_tensor_new(KILN_I64, 1, &len, out));
    if (len) memcpy((*out)->data, a->ints, (size_t)len * sizeof(int64_t));
    return KILN_OK;
  case KILN_ATTR_STRING:
    KILN_TRY(kiln_tensor_new(KILN_STRING, 0, NULL, out));
    *(char **)(*out)->data = kiln_xstrdup(a->s ? a->s : "");
    return KILN_OK;
  case KILN_ATTR_STRINGS:
    KILN_TRY(kiln_tensor_new(KILN_STRING, 1, &len, out));
    for (int64_t i = 0; i < len; i++)
      ((char **)(*out)->data)[i] = kiln_xstrdup(a->strings[i] ? a->strings[i] : "");
    return KILN_OK;
  default: return kiln_shape_err(n, "attribute '%s' has an unexpected kind", a->name);
  }
}

static kiln_status eval_constant(kiln_eval_ctx *ctx) {
  const kiln_attr *a;
  KILN_TRY(const_attr(ctx->node, &a));
  kiln_tensor *t;
  KILN_TRY(const_tensor(ctx->node, a, &t));
  kiln_eval_set_out(ctx, 0, t);
  return KILN_OK;
}

static kiln_status infer_constant(kiln_infer_ctx *ctx) {
  const kiln_attr *a;
  KILN_TRY(const_attr(ctx->node, &a));
  kiln_dim d = kiln_shape_dim(a->n);
  switch (a->kind) {
  case KILN_ATTR_TENSOR:
  case KILN_ATTR_SPARSE_TENSOR:
    if (a->t) ctx->out[0] = kiln_type_tensor(a->t->dtype, a->t->rank, a->t->dims);
    break;
  case KILN_ATTR_FLOAT: kiln_shape_out_type(ctx, 0, KILN_F32, 0, NULL); break;
  case KILN_ATTR_INT: kiln_shape_out_type(ctx, 0, KILN_I64, 0, NULL); break;
  case KILN_ATTR_STRING: kiln_shape_out_type(ctx, 0, KILN_STRING, 0, NULL); break;
  case KILN_ATTR_FLOATS: kiln_shape_out_type(ctx, 0, KILN_F32, 1, &d); break;
  case KILN_ATTR_INTS: kiln_shape_out_type(ctx, 0, KILN_I64, 1, &d); break;
  case KILN_ATTR_STRINGS: kiln_shape_out_type(ctx, 0, KILN_STRING, 1, &d); break;
  default: break;
  }
  return KILN_OK;
}

/* ---- ConstantOfShape: a tensor of the given shape filled with `value` (f32 0
 * default) ---- */
static kiln_status cos_value(const kiln_node *n, const kiln_tensor **v) {
  KILN_TRY(kiln_node_tensor(n, "value", v));
  if (*v && (*v)->numel != 1) return kiln_shape_err(n, "value must hold exactly one element");
  return KILN_OK;
}

static kiln_status eval_constant_of_shape(kiln_eval_ctx *ctx) {
  const kiln_tensor *s, *v;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &s));
  KILN_TRY(cos_value(ctx->node, &v));
  int64_t *dims;
  int k;
  KILN_TRY(kiln_shape_load_ints(ctx, s, "shape", &dims, &k));
  kiln_tensor *o;
  kiln_status st = kiln_eval_out(ctx, 0, v ? v->dtype : KILN_F32, k, dims, &o);
  free(dims);
  KILN_TRY(st);
  if (v) kiln_shape_fill(o, v, 0);
  return KILN_OK;
}

static kiln_status infer_constant_of_shape(kiln_infer_ctx *ctx) {
  const kiln_tensor *v;
  KILN_TRY(cos_value(ctx->node, &v));
  kiln_dtype dt = v ? v->dtype : KILN_F32;
  int64_t dims[KILN_MAX_RANK];
  int k;
  if (kiln_shape_const_ints(ctx, 0, dims, KILN_MAX_RANK, &k)) {
    kiln_dim d[KILN_MAX_RANK];
    for (int i = 0; i < k; i++) d[i] = kiln_shape_dim(dims[i] < 0 ? -1 : dims[i]);
    kiln_shape_out_type(ctx, 0, dt, k, d);
    return KILN_OK;
  }
  const kiln_type *s = kiln_shape_in_type(ctx, 0);
  int r = s && s->rank == 1 && s->dims[0].value <= KILN_MAX_RANK ? (int)s->dims[0].value : -1;
  kiln_shape_out_type(ctx, 0, dt, r, NULL);
  return KILN_OK;
}

/* ---- EyeLike: ones on the diagonal j - i = k of a 2-D tensor ---- */
static kiln_status eyelike_dtype(const kiln_node *n, kiln_dtype in, kiln_dtype *out) {
  int64_t dt;
  KILN_TRY(kiln_node_int(n, "dtype", 0, &dt));
  if (dt == 0) dt = in;
  if (!kiln_dtype_valid((int)dt) || dt == KILN_STRING)
    return kiln_shape_err(n, "dtype %lld is not supported", (long long)dt);
  *out = (kiln_dtype)dt;
  return KILN_OK;
}

static kiln_status eval_eyelike(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_dtype dt;
  int64_t k;
  KILN_TRY(eyelike_dtype(ctx->node, x->dtype, &dt));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  k = da.k;
  if (x->rank != 2) return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be 2-D");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, dt, 2, x->dims, &o));
  int64_t n = x->dims[0], m = x->dims[1];
  for (int64_t i = 0; i < n; i++) {
    if (k > m || k < -n) break;
    int64_t j = i + k;
    if (j >= 0 && j < m) kiln_store_f64(dt, o->data, (size_t)(i * m + j), 1.0);
  }
  return KILN_OK;
}

static kiln_status infer_eyelike(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_dtype dt;
  KILN_TRY(eyelike_dtype(ctx->node, x->dtype, &dt));
  kiln_shape_out_type(ctx, 0, dt, x->rank, x->dims);
  return KILN_OK;
}

/* ---- Range: start + i*delta for i < max(ceil((limit - start) / delta), 0)
 * ---- Integers are exact. Floats are computed in double, as numpy does; from
 * opset 27 the f16 and bf16 types use stash_type (f32 by default) for the
 * computation. */
static kiln_status range_count_int(const kiln_node *n, int64_t s, int64_t l, int64_t d,
                                   int64_t *out) {
  if (d == 0) return kiln_shape_err(n, "delta is 0");
  uint64_t diff, step;
  if (d > 0) {
    if (l <= s) return *out = 0, KILN_OK;
    diff = (uint64_t)l - (uint64_t)s;
    step = (uint64_t)d;
  } else {
    if (l >= s) return *out = 0, KILN_OK;
    diff = (uint64_t)s - (uint64_t)l;
    step = (uint64_t)(-(d + 1)) + 1;
  }
  uint64_t c = (diff - 1) / step + 1;
  if (c > (1ULL << 40)) return kiln_shape_err(n, "the range has too many elements");
  *out = (int64_t)c;
  return KILN_OK;
}

static kiln_status range_count_f64(const kiln_node *n, double s, double l, double d, int64_t *out) {
  if (d == 0) return kiln_shape_err(n, "delta is 0");
  double c = ceil((l - s) / d);
  if (isnan(c) || c > (double)(1LL << 40))
    return kiln_shape_err(n, "the range has too many elements");
  *out = c > 0 ? (int64_t)c : 0;
  return KILN_OK;
}

static kiln_status range_count(const kiln_node *n, const kiln_tensor *const *in, int64_t *out) {
  kiln_dtype dt = in[0]->dtype;
  for (int i = 0; i < 3; i++) {
    if (in[i]->numel != 1 || in[i]->dtype != dt)
      return kiln_shape_err(n, "start, limit and delta must be scalars of one dtype");
  }
  if (kiln_dtype_is_float(dt))
    return range_count_f64(n, kiln_load_f64(dt, in[0]->data, 0), kiln_load_f64(dt, in[1]->data, 0),
                           kiln_load_f64(dt, in[2]->data, 0), out);
  if (!kiln_dtype_is_int(dt)) return kiln_shape_err(n, "unsupported dtype %s", kiln_dtype_name(dt));
  return range_count_int(n, kiln_load_i64(dt, in[0]->data, 0), kiln_load_i64(dt, in[1]->data, 0),
                         kiln_load_i64(dt, in[2]->data, 0), out);
}

static kiln_status eval_range(kiln_eval_ctx *ctx) {
  const kiln_tensor *in[3];
  for (int i = 0; i < 3; i++) KILN_TRY(kiln_eval_in_req(ctx, i, &in[i]));
  int64_t n;
  KILN_TRY(range_count(ctx->node, in, &n));
  kiln_dtype dt = in[0]->dtype;
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, dt, 1, &n, &o));
  int64_t stash;
  KILN_TRY(kiln_node_int(ctx->node, "stash_type", KILN_F32, &stash));
  bool f32 = (dt == KILN_F16 || dt == KILN_BF16) && ctx->node->opset >= 27 && stash == KILN_F32;
  if (kiln_dtype_is_float(dt)) {
    double s = kiln_load_f64(dt, in[0]->data, 0), d = kiln_load_f64(dt, in[2]->data, 0);
    for (int64_t i = 0; i < n; i++) {
      double v = f32 ? (double)((float)s + (float)i * (float)d) : s + (double)i * d;
      kiln_store_f64(dt, o->data, (size_t)i, v);
    }
  } else {
    uint64_t s = (uint64_t)kiln_load_i64(dt, in[0]->data, 0);
    uint64_t d = (uint64_t)kiln_load_i64(dt, in[2]->data, 0);
    for (int64_t i = 0; i < n; i++)
      kiln_store_i64(dt, o->data, (size_t)i, (int64_t)(s + (uint64_t)i * d));
  }
  return KILN_OK;
}

static kiln_status infer_range(kiln_infer_ctx *ctx) {
  const kiln_type *s = kiln_shape_in_type(ctx, 0);
  if (!s) return KILN_OK;
  kiln_shape_out_type(ctx, 0, s->dtype, 1, NULL);
  const kiln_tensor *in[3];
  for (int i = 0; i < 3; i++)
    if (i >= ctx->n_in || !(in[i] = ctx->cin[i])) return KILN_OK;
  int64_t n;
  KILN_TRY(range_count(ctx->node, in, &n));
  kiln_dim d = kiln_shape_dim(n);
  kiln_shape_out_type(ctx, 0, s->dtype, 1, &d);
  return KILN_OK;
}

/* ---- OneHot: depth inserted at axis; on where the (wrapped) index matches
 * ---- */
static kiln_status onehot_axis(const kiln_node *n, int rank, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  int64_t axis = da.axis;
  if (axis < -(rank + 1) || axis > rank)
    return kiln_shape_err(n, "axis %lld is out of range for output rank %d", (long long)axis,
                          rank + 1);
  *out = (int)(axis < 0 ? axis + rank + 1 : axis);
  return KILN_OK;
}

static kiln_status eval_onehot(kiln_eval_ctx *ctx) {
  const kiln_tensor *idx, *dt, *vals;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &idx));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &dt));
  KILN_TRY(kiln_eval_in_req(ctx, 2, &vals));
  int64_t depth;
  int axis;
  KILN_TRY(kiln_shape_scalar_i64(ctx, dt, "depth", &depth));
  KILN_TRY(onehot_axis(ctx->node, idx->rank, &axis));
  kiln_dtype_class c = kiln_dtype_class_of(idx->dtype);
  if (depth < 0 || vals->numel != 2 || c == KILN_CLASS_NONE || c == KILN_CLASS_STRING)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "needs numeric indices, depth >= 0 and two values (off, on)");
  if (idx->rank + 1 > KILN_MAX_RANK)
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "output rank is too large");
  int64_t dims[KILN_MAX_RANK], inner = 1;
  for (int d = 0, k = 0; d <= idx->rank; d++) dims[d] = d == axis ? depth : idx->dims[k++];
  for (int d = axis; d < idx->rank; d++) inner *= idx->dims[d];
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, vals->dtype, idx->rank + 1, dims, &o));
  kiln_shape_fill(o, vals, 0);
  for (int64_t i = 0; i < idx->numel; i++) {
    double f = kiln_load_f64(idx->dtype, idx->data, (size_t)i);
    int64_t v = kiln_dtype_is_float(idx->dtype) ? (fabs(f) < 9e18 ? (int64_t)f : INT64_MAX)
                                                : kiln_load_i64(idx->dtype, idx->data, (size_t)i);
    if (v < 0 && v >= -depth) v += depth;
    if (v < 0 || v >= depth) continue; /* out of range: all off */
    int64_t a = i / inner, b = i % inner;
    kiln_shape_copy(o, (a * depth + v) * inner + b, vals, 1, 1);
  }
  return KILN_OK;
}

static kiln_status infer_onehot(kiln_infer_ctx *ctx) {
  const kiln_type *idx = kiln_shape_in_type(ctx, 0), *vals = kiln_shape_in_type(ctx, 2);
  if (!vals) return KILN_OK;
  if (!idx || idx->rank < 0 || idx->rank + 1 > KILN_MAX_RANK) {
    kiln_shape_out_type(ctx, 0, vals->dtype, -1, NULL);
    return KILN_OK;
  }
  int axis;
  KILN_TRY(onehot_axis(ctx->node, idx->rank, &axis));
  kiln_dim d[KILN_MAX_RANK];
  int64_t depth = -1;
  const kiln_tensor *dt = ctx->cin[1];
  if (dt && dt->numel == 1 && kiln_dtype_class_of(dt->dtype) != KILN_CLASS_STRING) {
    double f = kiln_load_f64(dt->dtype, dt->data, 0);
    if (f >= 0 && f < 9e18) depth = (int64_t)f;
  }
  for (int i = 0, k = 0; i <= idx->rank; i++)
    d[i] = i == axis ? kiln_shape_dim(depth) : idx->dims[k++];
  kiln_shape_out_type(ctx, 0, vals->dtype, idx->rank + 1, d);
  return KILN_OK;
}

void kiln_shape_register_gen(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_Constant, eval_constant, infer_constant, 0, 0, 1, 1);
  kiln_shape_set(t, KILN_OP_ConstantOfShape, eval_constant_of_shape, infer_constant_of_shape, 1, 1,
                 1, 1);
  kiln_shape_set(t, KILN_OP_EyeLike, eval_eyelike, infer_eyelike, 1, 1, 1, 1);
  kiln_shape_set(t, KILN_OP_Range, eval_range, infer_range, 3, 3, 1, 1);
  kiln_shape_set(t, KILN_OP_OneHot, eval_onehot, infer_onehot, 3, 3, 1, 1);
}
