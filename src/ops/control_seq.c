/* The sequence ops: SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert,
 * SequenceErase, SequenceLength, SplitToSequence and ConcatFromSequence.
 *
 * A sequence type (kiln_type of kind SEQUENCE) carries the element dtype and, where all
 * elements share it, the element shape in rank/dims (rank -1 when unknown). */
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "control_internal.h"

/* Input i as a sequence; error naming the node otherwise. */
static kiln_status seq_in(const kiln_eval_ctx *ctx, int i, const kiln_seq **out) {
  const kiln_val *v = i < ctx->n_in ? ctx->in[i] : NULL;
  if (!v || v->kind != KILN_TYPE_SEQUENCE || !v->seq)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d must be a sequence, got %s", i,
                           kiln_ctl_kind_name(v));
  *out = v->seq;
  return KILN_OK;
}

/* Sets output 0 to a sequence (takes ownership). */
static void seq_out(kiln_eval_ctx *ctx, kiln_seq *s) {
  kiln_val *v = kiln_val_new(KILN_TYPE_SEQUENCE);
  v->seq = s;
  kiln_val_free(ctx->out[0]);
  ctx->out[0] = v;
}

/* A copy of s with room for changes (elements cloned). */
static kiln_status seq_copy(const kiln_seq *s, kiln_seq **out) {
  kiln_seq *c = kiln_seq_new(s->elem);
  for (int i = 0; i < s->len; i++) {
    kiln_tensor *t;
    kiln_status st = kiln_tensor_clone(s->items[i], &t);
    if (st) {
      kiln_seq_free(c);
      return st;
    }
    kiln_seq_push(c, t);
  }
  *out = c;
  return KILN_OK;
}

/* Reads the optional position input i, normalized against [-n, hi] (hi is n - 1 or n);
 * dflt when absent. */
static kiln_status seq_pos(const kiln_eval_ctx *ctx, int i, int n, int hi, int dflt, int *out) {
  if (!kiln_eval_in(ctx, i)) {
    if (i < ctx->n_in && ctx->in[i])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "the position must be a tensor, got %s",
                             kiln_ctl_kind_name(ctx->in[i]));
    *out = dflt;
    return KILN_OK;
  }
  int64_t p;
  KILN_TRY(kiln_ctl_int_scalar(ctx, i, "the position", &p));
  if (p < -(int64_t)n || p > hi)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "position %lld is out of range [%d, %d] for a sequence of %d",
                           (long long)p, -n, hi, n);
  *out = (int)(p < 0 ? p + n : p);
  return KILN_OK;
}

/* ---- SequenceEmpty, SequenceConstruct, SequenceLength ---- */
/* SequenceEmpty() {dtype = float}: an empty sequence. */
static kiln_status seq_empty_eval(kiln_eval_ctx *ctx) {
  int64_t dt;
  KILN_TRY(kiln_node_int(ctx->node, "dtype", KILN_F32, &dt));
  if (!kiln_dtype_valid((int)dt) || dt != (int)dt)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "dtype %lld is not a supported element type",
                           (long long)dt);
  seq_out(ctx, kiln_seq_new((kiln_dtype)dt));
  return KILN_OK;
}

static kiln_status seq_empty_infer(kiln_infer_ctx *ctx) {
  const kiln_attr *a = kiln_node_attr(ctx->node, "dtype");
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_SEQUENCE;
  t.dtype =
      a && a->kind == KILN_ATTR_INT && kiln_dtype_valid((int)a->i) ? (kiln_dtype)a->i : KILN_F32;
  ctx->out[0] = t;
  return KILN_OK;
}

/* SequenceConstruct(t...): a sequence of copies of the inputs (all of one dtype). */
static kiln_status seq_construct_eval(kiln_eval_ctx *ctx) {
  const kiln_tensor *t0;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &t0));
  kiln_seq *s = kiln_seq_new(t0->dtype);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < ctx->n_in; i++) {
    const kiln_tensor *t;
    st = kiln_eval_in_req(ctx, i, &t);
    if (!st && t->dtype != t0->dtype)
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d is %s, input 0 is %s", i,
                           kiln_dtype_name(t->dtype), kiln_dtype_name(t0->dtype));
    kiln_tensor *c = NULL;
    if (!st) st = kiln_tensor_clone(t, &c);
    if (!st) kiln_seq_push(s, c);
  }
  if (st) {
    kiln_seq_free(s);
    return st;
  }
  seq_out(ctx, s);
  return KILN_OK;
}

static kiln_status seq_construct_infer(kiln_infer_ctx *ctx) {
  if (!ctx->in[0] || ctx->in[0]->kind != KILN_TYPE_TENSOR) return KILN_OK;
  kiln_type t = *ctx->in[0];
  for (int i = 1; i < ctx->n_in; i++) {
    if (!ctx->in[i] || ctx->in[i]->kind != KILN_TYPE_TENSOR) return KILN_OK;
    kiln_type j;
    kiln_ctl_type_join(&t, ctx->in[i], &j);
    t = j;
  }
  t.kind = KILN_TYPE_SEQUENCE;
  ctx->out[0] = t;
  return KILN_OK;
}

/* SequenceLength(seq): the number of elements, an int64 scalar. */
static kiln_status seq_length_eval(kiln_eval_ctx *ctx) {
  const kiln_seq *s;
  KILN_TRY(seq_in(ctx, 0, &s));
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_I64, 0, NULL, &o));
  *(int64_t *)o->data = s->len;
  return KILN_OK;
}

static kiln_status seq_length_infer(kiln_infer_ctx *ctx) {
  ctx->out[0] = kiln_type_tensor(KILN_I64, 0, NULL);
  return KILN_OK;
}

/* ---- SequenceAt, SequenceInsert, SequenceErase ---- */
/* SequenceAt(seq, position): a copy of element position (negative counts from the back). */
static kiln_status seq_at_eval(kiln_eval_ctx *ctx) {
  const kiln_seq *s;
  KILN_TRY(seq_in(ctx, 0, &s));
  if (!kiln_eval_in(ctx, 1))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "the position (input 1) is missing");
  int p;
  KILN_TRY(seq_pos(ctx, 1, s->len, s->len - 1, 0, &p));
  kiln_tensor *t;
  KILN_TRY(kiln_tensor_clone(s->items[p], &t));
  kiln_eval_set_out(ctx, 0, t);
  return KILN_OK;
}

static kiln_status seq_at_infer(kiln_infer_ctx *ctx) {
  if (!ctx->in[0] || ctx->in[0]->kind != KILN_TYPE_SEQUENCE) return KILN_OK;
  ctx->out[0] = *ctx->in[0];
  ctx->out[0].kind = KILN_TYPE_TENSOR;
  return KILN_OK;
}

/* SequenceInsert(seq, tensor, position?): a copy of seq with tensor inserted before
 * position (in [-n, n]; default: at the end). */
static kiln_status seq_insert_eval(kiln_eval_ctx *ctx) {
  const kiln_seq *s;
  const kiln_tensor *t;
  KILN_TRY(seq_in(ctx, 0, &s));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &t));
  if (s->elem && t->dtype != s->elem)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot insert a %s tensor into a sequence of %s",
                           kiln_dtype_name(t->dtype), kiln_dtype_name(s->elem));
  int p;
  KILN_TRY(seq_pos(ctx, 2, s->len, s->len, s->len, &p));
  kiln_seq *c;
  kiln_tensor *x;
  KILN_TRY(kiln_tensor_clone(t, &x));
  kiln_status st = seq_copy(s, &c);
  if (st) {
    kiln_tensor_free(x);
    return st;
  }
  c->elem = t->dtype;
  kiln_seq_push(c, x); /* grow by one, then shift into place */
  memmove(&c->items[p + 1], &c->items[p], (size_t)(c->len - 1 - p) * sizeof *c->items);
  c->items[p] = x;
  seq_out(ctx, c);
  return KILN_OK;
}

static kiln_status seq_insert_infer(kiln_infer_ctx *ctx) {
  const kiln_type *s = ctx->in[0], *t = ctx->n_in > 1 ? ctx->in[1] : NULL;
  if (!s || !t || s->kind != KILN_TYPE_SEQUENCE || t->kind != KILN_TYPE_TENSOR) return KILN_OK;
  kiln_type e = *s;
  e.kind = KILN_TYPE_TENSOR;
  kiln_ctl_type_join(&e, t, &ctx->out[0]);
  ctx->out[0].kind = KILN_TYPE_SEQUENCE;
  ctx->out[0].dtype = t->dtype;
  return KILN_OK;
}

/* SequenceErase(seq, position?): a copy of seq without element position (default: last). */
static kiln_status seq_erase_eval(kiln_eval_ctx *ctx) {
  const kiln_seq *s;
  KILN_TRY(seq_in(ctx, 0, &s));
  if (s->len == 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot erase from an empty sequence");
  int p;
  KILN_TRY(seq_pos(ctx, 1, s->len, s->len - 1, s->len - 1, &p));
  kiln_seq *c;
  KILN_TRY(seq_copy(s, &c));
  kiln_tensor_free(c->items[p]);
  memmove(&c->items[p], &c->items[p + 1], (size_t)(c->len - 1 - p) * sizeof *c->items);
  c->len--;
  seq_out(ctx, c);
  return KILN_OK;
}

static kiln_status seq_same_infer(kiln_infer_ctx *ctx) {
  if (ctx->in[0] && ctx->in[0]->kind == KILN_TYPE_SEQUENCE) ctx->out[0] = *ctx->in[0];
  return KILN_OK;
}

/* ---- SplitToSequence ---- */
/* The lengths of the pieces along the axis (dim long): from split (scalar: pieces of that
 * size, the last one shorter; 1-D: the lengths) or ones when split is absent. */
static kiln_status split_lengths(kiln_eval_ctx *ctx, int64_t dim, int64_t **lens, int64_t *n) {
  const kiln_tensor *sp = kiln_eval_in(ctx, 1);
  if (!sp) {
    *n = dim;
    *lens = kiln_xcalloc((size_t)dim + 1, sizeof **lens);
    for (int64_t i = 0; i < dim; i++) (*lens)[i] = 1;
    return KILN_OK;
  }
  if (!kiln_dtype_is_int(sp->dtype) || sp->rank > 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "split must be an integer scalar or 1-D tensor");
  if (sp->rank == 0) {
    int64_t c = kiln_load_i64(sp->dtype, sp->data, 0);
    if (c <= 0)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "split must be positive, got %lld",
                             (long long)c);
    *n = dim / c + (dim % c != 0);
    *lens = kiln_xcalloc((size_t)*n + 1, sizeof **lens);
    for (int64_t i = 0; i < *n; i++) (*lens)[i] = i + 1 < *n || dim % c == 0 ? c : dim % c;
    return KILN_OK;
  }
  int64_t sum = 0;
  *n = sp->numel;
  *lens = kiln_xcalloc((size_t)*n + 1, sizeof **lens);
  for (int64_t i = 0; i < *n; i++) {
    (*lens)[i] = kiln_load_i64(sp->dtype, sp->data, (size_t)i);
    if ((*lens)[i] < 0 || kiln_add_overflow_i64(sum, (*lens)[i], &sum))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "split[%lld] = %lld is negative", (long long)i,
                             (long long)(*lens)[i]);
  }
  if (sum != dim)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "the split lengths add up to %lld, the axis has %lld", (long long)sum,
                           (long long)dim);
  return KILN_OK;
}

/* Copies x[..., off:off+len, ...] (along axis) into a new tensor; drops the axis if squeeze. */
static kiln_status split_piece(const kiln_tensor *x, int axis, int64_t off, int64_t len,
                               bool squeeze, kiln_tensor **out) {
  int64_t dims[KILN_MAX_RANK], outer = 1, inner = 1;
  int r = 0;
  for (int i = 0; i < x->rank; i++) {
    if (i < axis) outer *= x->dims[i];
    if (i > axis) inner *= x->dims[i];
    if (i != axis || !squeeze) dims[r++] = i == axis ? len : x->dims[i];
  }
  KILN_TRY(kiln_tensor_new(x->dtype, r, dims, out));
  int64_t n = x->dims[axis];
  for (int64_t o = 0; o < outer; o++)
    kiln_ctl_copy(x->dtype, (*out)->data, o * len * inner, x->data, (o * n + off) * inner,
                  len * inner);
  return KILN_OK;
}

/* SplitToSequence(input, split?) {axis = 0, keepdims = 1}: the pieces of input along axis;
 * without split, pieces of length 1, with the axis dropped when keepdims is 0. */
static kiln_status split_to_seq_eval(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t axis64 = da.axis;
  bool keep = da.keepdims;
  if (x->rank == 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot split a scalar");
  int axis;
  KILN_TRY(kiln_norm_axis(ctx, axis64, x->rank, &axis));
  int64_t *lens = NULL, n = 0;
  kiln_status st = split_lengths(ctx, x->dims[axis], &lens, &n);
  bool squeeze = !kiln_eval_in(ctx, 1) && !keep;
  kiln_seq *s = kiln_seq_new(x->dtype);
  for (int64_t i = 0, off = 0; !st && i < n; off += lens[i], i++) {
    kiln_tensor *p;
    st = split_piece(x, axis, off, lens[i], squeeze, &p);
    if (!st) kiln_seq_push(s, p);
  }
  free(lens);
  if (st) {
    kiln_seq_free(s);
    return st;
  }
  seq_out(ctx, s);
  return KILN_OK;
}

static kiln_status split_to_seq_infer(kiln_infer_ctx *ctx) {
  const kiln_type *x = ctx->in[0];
  if (!x || x->kind != KILN_TYPE_TENSOR) return KILN_OK;
  kiln_type t = *x;
  t.kind = KILN_TYPE_SEQUENCE;
  const kiln_attr *a = kiln_node_attr(ctx->node, "axis");
  const kiln_attr *k = kiln_node_attr(ctx->node, "keepdims");
  int64_t axis = a && a->kind == KILN_ATTR_INT ? a->i : 0;
  bool has_split = ctx->n_in > 1 && ctx->in[1];
  bool squeeze = !has_split && k && k->kind == KILN_ATTR_INT && k->i == 0;
  if (t.rank > 0 && axis < 0) axis += t.rank;
  if (t.rank <= 0 || axis < 0 || axis >= t.rank) {
    t.rank = -1;
  } else if (squeeze) {
    for (int i = (int)axis; i + 1 < t.rank; i++) t.dims[i] = t.dims[i + 1];
    t.rank--;
  } else {
    t.dims[axis] = has_split ? (kiln_dim){-1, NULL} : (kiln_dim){1, NULL};
  }
  ctx->out[0] = t;
  return KILN_OK;
}

/* ---- ConcatFromSequence ---- */
/* Checks the elements agree (dtype, rank, dims other than the axis; all dims if new_axis)
 * and computes the output shape. */
static kiln_status concat_shape(kiln_eval_ctx *ctx, const kiln_seq *s, int axis, bool new_axis,
                                int64_t *dims) {
  const kiln_tensor *e0 = s->items[0];
  int r = e0->rank + new_axis;
  for (int i = 0, k = 0; i < r; i++) dims[i] = new_axis && i == axis ? 0 : e0->dims[k++];
  for (int j = 0; j < s->len; j++) {
    const kiln_tensor *e = s->items[j];
    bool ok = e->rank == e0->rank && e->dtype == e0->dtype;
    for (int i = 0, k = 0; ok && i < r; i++) {
      if (new_axis && i == axis) continue;
      ok = (i == axis && !new_axis) || e->dims[k] == dims[i];
      k++;
    }
    if (!ok) {
      char b1[96], b2[96];
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "element %d (%s) does not match element 0 (%s)",
                             j, kiln_tensor_type_str(e, b1, sizeof b1),
                             kiln_tensor_type_str(e0, b2, sizeof b2));
    }
    int64_t add = new_axis ? 1 : e->dims[axis];
    if (j > 0 || new_axis)
      if (kiln_add_overflow_i64(dims[axis], add, &dims[axis]))
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "the output is too large");
  }
  return KILN_OK;
}

/* ConcatFromSequence(seq) {axis, new_axis = 0}: the elements concatenated along axis, or
 * stacked along a new axis. */
static kiln_status concat_from_seq_eval(kiln_eval_ctx *ctx) {
  const kiln_seq *s;
  KILN_TRY(seq_in(ctx, 0, &s));
  const kiln_attr *aa = kiln_node_attr(ctx->node, "axis");
  if (!aa || aa->kind != KILN_ATTR_INT)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "the int attribute 'axis' is required");
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t new_axis = da.new_axis;
  if (s->len == 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot concatenate an empty sequence");
  int r = s->items[0]->rank + (int)new_axis, axis;
  if (r > KILN_MAX_RANK) return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "rank too large");
  if (r == 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot concatenate scalars");
  KILN_TRY(kiln_norm_axis(ctx, aa->i, r, &axis));
  int64_t dims[KILN_MAX_RANK], outer = 1;
  KILN_TRY(concat_shape(ctx, s, axis, new_axis, dims));
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, s->items[0]->dtype, r, dims, &o));
  for (int i = 0; i < axis; i++) outer *= dims[i];
  int64_t row = outer ? o->numel / outer : 0, off = 0; /* output elements per outer index */
  for (int j = 0; j < s->len; j++) {
    const kiln_tensor *e = s->items[j];
    int64_t chunk = outer ? e->numel / outer : 0;
    for (int64_t q = 0; q < outer; q++)
      kiln_ctl_copy(e->dtype, o->data, q * row + off, e->data, q * chunk, chunk);
    off += chunk;
  }
  return KILN_OK;
}

static kiln_status concat_from_seq_infer(kiln_infer_ctx *ctx) {
  const kiln_type *s = ctx->in[0];
  if (!s || s->kind != KILN_TYPE_SEQUENCE) return KILN_OK;
  const kiln_attr *a = kiln_node_attr(ctx->node, "axis");
  const kiln_attr *na = kiln_node_attr(ctx->node, "new_axis");
  bool new_axis = na && na->kind == KILN_ATTR_INT && na->i == 1;
  kiln_type t = kiln_type_tensor(s->dtype, -1, NULL);
  int r = s->rank < 0 ? -1 : s->rank + new_axis;
  int64_t axis = a && a->kind == KILN_ATTR_INT ? a->i : 0;
  if (r > 0 && r <= KILN_MAX_RANK && axis < 0) axis += r;
  if (r > 0 && r <= KILN_MAX_RANK && axis >= 0 && axis < r) {
    t.rank = r;
    for (int i = 0, k = 0; i < r; i++) {
      if (new_axis && i == axis) {
        t.dims[i] = (kiln_dim){-1, NULL};
        continue;
      }
      t.dims[i] = i == axis ? (kiln_dim){-1, NULL} : s->dims[k];
      k++;
    }
  }
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_ctl_register_seq(kiln_op_impl *table) {
  table[KILN_OP_SequenceEmpty] = (kiln_op_impl){seq_empty_eval, seq_empty_infer, 0, 0, 1, 1};
  table[KILN_OP_SequenceConstruct] =
      (kiln_op_impl){seq_construct_eval, seq_construct_infer, 1, -1, 1, 1};
  table[KILN_OP_SequenceLength] = (kiln_op_impl){seq_length_eval, seq_length_infer, 1, 1, 1, 1};
  table[KILN_OP_SequenceAt] = (kiln_op_impl){seq_at_eval, seq_at_infer, 2, 2, 1, 1};
  table[KILN_OP_SequenceInsert] = (kiln_op_impl){seq_insert_eval, seq_insert_infer, 2, 3, 1, 1};
  table[KILN_OP_SequenceErase] = (kiln_op_impl){seq_erase_eval, seq_same_infer, 1, 2, 1, 1};
  table[KILN_OP_SplitToSequence] =
      (kiln_op_impl){split_to_seq_eval, split_to_seq_infer, 1, 2, 1, 1};
  table[KILN_OP_ConcatFromSequence] =
      (kiln_op_impl){concat_from_seq_eval, concat_from_seq_infer, 1, 1, 1, 1};
}
