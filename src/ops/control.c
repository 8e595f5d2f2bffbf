/* Ops of the 'control' family (see src/graph/ops.def): If, Optional, OptionalHasElement,
 * OptionalGetElement here; Loop, Scan and SequenceMap in control_loop.c; the sequence ops
 * in control_seq.c. Also the helpers the three files share (control_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "control_internal.h"

/* ---- shared helpers ---- */
kiln_status kiln_ctl_int_scalar(const kiln_eval_ctx *ctx, int i, const char *what, int64_t *out) {
  const kiln_tensor *t = kiln_eval_in(ctx, i);
  if (!t) return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s (input %d) is missing", what, i);
  if (t->numel != 1 || !kiln_dtype_is_int(t->dtype)) {
    char b[64];
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be an integer scalar, got %s", what,
                           kiln_tensor_type_str(t, b, sizeof b));
  }
  *out = kiln_load_i64(t->dtype, t->data, 0);
  return KILN_OK;
}

kiln_status kiln_ctl_bool_scalar(const kiln_eval_ctx *ctx, int i, const char *what, bool *out) {
  const kiln_tensor *t = kiln_eval_in(ctx, i);
  if (!t) return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s (input %d) is missing", what, i);
  kiln_dtype_class c = kiln_dtype_class_of(t->dtype);
  if (t->numel != 1 || c == KILN_CLASS_NONE || c == KILN_CLASS_STRING) {
    char b[64];
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must be a boolean scalar, got %s", what,
                           kiln_tensor_type_str(t, b, sizeof b));
  }
  *out = kiln_load_f64(t->dtype, t->data, 0) != 0;
  return KILN_OK;
}

void kiln_ctl_copy(kiln_dtype dt, void *dst, int64_t doff, const void *src, int64_t soff,
                   int64_t n) {
  if (n <= 0) return;
  if (dt == KILN_STRING) {
    char **d = (char **)dst + doff;
    char *const *s = (char *const *)src + soff;
    for (int64_t i = 0; i < n; i++) d[i] = kiln_xstrdup(s[i] ? s[i] : "");
    return;
  }
  size_t es = kiln_dtype_size(dt);
  memcpy((char *)dst + (size_t)doff * es, (const char *)src + (size_t)soff * es, (size_t)n * es);
}

/* outer = product of dims before axis, inner = product after. */
static void split_dims(const kiln_tensor *t, int axis, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; i++) *outer *= t->dims[i];
  for (int i = axis + 1; i < t->rank; i++) *inner *= t->dims[i];
}

kiln_status kiln_ctl_slice(const kiln_tensor *x, int axis, int64_t idx, kiln_tensor **out) {
  int64_t dims[KILN_MAX_RANK], outer, inner;
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (i != axis) dims[r++] = x->dims[i];
  KILN_TRY(kiln_tensor_new(x->dtype, r, dims, out));
  split_dims(x, axis, &outer, &inner);
  int64_t n = x->dims[axis];
  for (int64_t o = 0; o < outer; o++)
    kiln_ctl_copy(x->dtype, (*out)->data, o * inner, x->data, (o * n + idx) * inner, inner);
  return KILN_OK;
}

bool kiln_ctl_fits(const kiln_tensor *dst, int axis, const kiln_tensor *src) {
  if (src->dtype != dst->dtype || src->rank + 1 != dst->rank) return false;
  for (int i = 0, k = 0; i < dst->rank; i++)
    if (i != axis && dst->dims[i] != src->dims[k++]) return false;
  return true;
}

void kiln_ctl_place(kiln_tensor *dst, int axis, int64_t idx, const kiln_tensor *src) {
  int64_t outer, inner, n = dst->dims[axis];
  split_dims(dst, axis, &outer, &inner);
  for (int64_t o = 0; o < outer; o++)
    kiln_ctl_copy(dst->dtype, dst->data, (o * n + idx) * inner, src->data, o * inner, inner);
}

void kiln_ctl_free_vals(kiln_val **v, int n) {
  for (int i = 0; i < n; i++) {
    kiln_val_free(v[i]);
    v[i] = NULL;
  }
}

kiln_status kiln_ctl_empty_stack(const kiln_type *t, kiln_dtype fallback, int axis,
                                 kiln_tensor **out) {
  int64_t dims[KILN_MAX_RANK] = {0};
  int rank = 1;
  kiln_dtype dt = t && t->kind == KILN_TYPE_TENSOR && t->dtype ? t->dtype : fallback;
  if (t && kiln_type_is_static(t) && t->rank < KILN_MAX_RANK && axis <= t->rank) {
    rank = t->rank + 1;
    for (int i = 0, k = 0; i < rank; i++) dims[i] = i == axis ? 0 : t->dims[k++].value;
  }
  return kiln_tensor_new(dt ? dt : KILN_F32, rank, dims, out);
}

const char *kiln_ctl_kind_name(const kiln_val *v) {
  if (!v) return "missing";
  switch (v->kind) {
  case KILN_TYPE_TENSOR: return "a tensor";
  case KILN_TYPE_SEQUENCE: return "a sequence";
  case KILN_TYPE_OPTIONAL: return "an optional";
  default: return "a value of unknown kind";
  }
}

void kiln_ctl_type_join(const kiln_type *a, const kiln_type *b, kiln_type *out) {
  if (a->kind != b->kind || a->elem_seq != b->elem_seq) {
    *out = kiln_type_unknown();
    return;
  }
  *out = *a;
  if (a->dtype != b->dtype) out->dtype = KILN_UNDEFINED;
  if (a->rank != b->rank) {
    out->rank = -1;
    return;
  }
  for (int i = 0; i < a->rank; i++) {
    const kiln_dim *x = &a->dims[i], *y = &b->dims[i];
    bool same = x->value >= 0 ? x->value == y->value
                              : (x->sym && y->sym && y->value < 0 && !strcmp(x->sym, y->sym));
    if (!same) out->dims[i] = (kiln_dim){-1, NULL};
  }
}

const kiln_graph *kiln_ctl_infer_graph(const kiln_infer_ctx *ctx, const char *name) {
  const kiln_attr *a = kiln_node_attr(ctx->node, name);
  return a && a->kind == KILN_ATTR_GRAPH ? a->g : NULL;
}

/* ---- If ---- */
/* If(cond) {then_branch, else_branch}: runs one branch; its outputs are the node's. */
static kiln_status if_eval(kiln_eval_ctx *ctx) {
  bool cond;
  KILN_TRY(kiln_ctl_bool_scalar(ctx, 0, "the condition", &cond));
  const char *which = cond ? "then_branch" : "else_branch";
  kiln_graph *br;
  KILN_TRY(kiln_node_graph(ctx->node, which, &br));
  if (!br) return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute '%s' is missing", which);
  if (br->outputs.len != ctx->n_out)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s has %d outputs, the node has %d", which,
                           br->outputs.len, ctx->n_out);
  if (br->inputs.len != 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "%s must take no inputs, it takes %d", which,
                           br->inputs.len);
  kiln_val **outs = kiln_xcalloc((size_t)ctx->n_out + 1, sizeof *outs);
  kiln_status st = kiln_interp_run_sub(ctx, br, 0, NULL, outs);
  for (int i = 0; !st && i < ctx->n_out; i++) {
    ctx->out[i] = outs[i];
    outs[i] = NULL;
  }
  kiln_ctl_free_vals(outs, ctx->n_out);
  free(outs);
  return st;
}

static kiln_status if_infer(kiln_infer_ctx *ctx) {
  const kiln_graph *t = kiln_ctl_infer_graph(ctx, "then_branch");
  const kiln_graph *e = kiln_ctl_infer_graph(ctx, "else_branch");
  if (!t || !e || t->outputs.len != ctx->n_out || e->outputs.len != ctx->n_out) return KILN_OK;
  for (int i = 0; i < ctx->n_out; i++) {
    int a = t->outputs.data[i], b = e->outputs.data[i];
    if (a < 0 || b < 0) continue;
    kiln_ctl_type_join(&t->values.data[a].type, &e->values.data[b].type, &ctx->out[i]);
  }
  return KILN_OK;
}

/* ---- Optional ---- */
/* Wraps a tensor or sequence value in a new optional (copying it). */
static kiln_status wrap_optional(kiln_eval_ctx *ctx, const kiln_val *x, kiln_val **out) {
  kiln_val *o = kiln_val_new(KILN_TYPE_OPTIONAL);
  kiln_status st = KILN_OK;
  if (x->kind == KILN_TYPE_TENSOR && x->t) {
    o->opt_dtype = x->t->dtype;
    st = kiln_tensor_clone(x->t, &o->t);
  } else if (x->kind == KILN_TYPE_SEQUENCE && x->seq) {
    kiln_val *c = NULL;
    st = kiln_val_clone(x, &c);
    if (!st) {
      o->seq = c->seq;
      o->elem_seq = true;
      o->opt_dtype = c->seq->elem;
      c->seq = NULL;
      kiln_val_free(c);
    }
  } else {
    st = kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be a tensor or a sequence, got %s",
                         kiln_ctl_kind_name(x));
  }
  if (st) {
    kiln_val_free(o);
    return st;
  }
  *out = o;
  return KILN_OK;
}

/* Optional(input?) {type}: an optional holding input, or an empty optional of `type`. */
static kiln_status optional_eval(kiln_eval_ctx *ctx) {
  const kiln_attr *ta = kiln_node_attr(ctx->node, "type");
  if (ta && ta->kind != KILN_ATTR_TYPE_PROTO)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute 'type' must be a type");
  const kiln_val *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  if (x) {
    kiln_dtype dt = x->kind == KILN_TYPE_TENSOR && x->t       ? x->t->dtype
                    : x->kind == KILN_TYPE_SEQUENCE && x->seq ? x->seq->elem
                                                              : KILN_UNDEFINED;
    if (ta && ta->tp.dtype && dt && ta->tp.dtype != dt)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "input type %s disagrees with attribute 'type' (%s)",
                             kiln_dtype_name(dt), kiln_dtype_name(ta->tp.dtype));
    return wrap_optional(ctx, x, &ctx->out[0]);
  }
  if (!ta)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "an Optional without input needs the attribute 'type'");
  if (ta->tp.kind != KILN_TYPE_TENSOR && ta->tp.kind != KILN_TYPE_SEQUENCE)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "attribute 'type' must be a tensor or sequence type");
  kiln_val *o = kiln_val_new(KILN_TYPE_OPTIONAL);
  o->elem_seq = ta->tp.kind == KILN_TYPE_SEQUENCE;
  o->opt_dtype = ta->tp.dtype;
  ctx->out[0] = o;
  return KILN_OK;
}

static kiln_status optional_infer(kiln_infer_ctx *ctx) {
  const kiln_type *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  const kiln_attr *ta = kiln_node_attr(ctx->node, "type");
  kiln_type t = x ? *x : ta && ta->kind == KILN_ATTR_TYPE_PROTO ? ta->tp : kiln_type_unknown();
  if (t.kind != KILN_TYPE_TENSOR && t.kind != KILN_TYPE_SEQUENCE) return KILN_OK;
  t.elem_seq = t.kind == KILN_TYPE_SEQUENCE;
  t.kind = KILN_TYPE_OPTIONAL;
  ctx->out[0] = t;
  return KILN_OK;
}

/* Opset < 18 takes only optionals in OptionalHasElement/OptionalGetElement. */
static kiln_status require_optional(kiln_eval_ctx *ctx, const kiln_val *x) {
  if (ctx->node->opset >= 18 || (x && x->kind == KILN_TYPE_OPTIONAL)) return KILN_OK;
  return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be an optional before opset 18, got %s",
                         kiln_ctl_kind_name(x));
}

/* OptionalHasElement(input?): whether input is present and, for an optional, non-empty. */
static kiln_status has_element_eval(kiln_eval_ctx *ctx) {
  const kiln_val *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  KILN_TRY(require_optional(ctx, x));
  bool has = x && (x->kind != KILN_TYPE_OPTIONAL || x->t || x->seq);
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, KILN_BOOL, 0, NULL, &o));
  *(uint8_t *)o->data = has;
  return KILN_OK;
}

static kiln_status has_element_infer(kiln_infer_ctx *ctx) {
  ctx->out[0] = kiln_type_tensor(KILN_BOOL, 0, NULL);
  return KILN_OK;
}

/* OptionalGetElement(input): the element of a non-empty optional (a tensor or sequence
 * passes through from opset 18). */
static kiln_status get_element_eval(kiln_eval_ctx *ctx) {
  const kiln_val *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  KILN_TRY(require_optional(ctx, x));
  if (!x) return kiln_eval_error(ctx, KILN_ERR_INVALID, "the input is missing");
  kiln_val tmp = *x;
  if (x->kind == KILN_TYPE_OPTIONAL) {
    if (!x->t && !x->seq)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "the optional input is empty");
    tmp.kind = x->t ? KILN_TYPE_TENSOR : KILN_TYPE_SEQUENCE;
    tmp.elem_seq = false;
    tmp.opt_dtype = KILN_UNDEFINED;
  } else if (x->kind != KILN_TYPE_TENSOR && x->kind != KILN_TYPE_SEQUENCE) {
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must be an optional, got %s",
                           kiln_ctl_kind_name(x));
  }
  return kiln_val_clone(&tmp, &ctx->out[0]);
}

static kiln_status get_element_infer(kiln_infer_ctx *ctx) {
  const kiln_type *x = ctx->n_in > 0 ? ctx->in[0] : NULL;
  if (!x || x->kind == KILN_TYPE_UNKNOWN) return KILN_OK;
  kiln_type t = *x;
  if (t.kind == KILN_TYPE_OPTIONAL) t.kind = t.elem_seq ? KILN_TYPE_SEQUENCE : KILN_TYPE_TENSOR;
  t.elem_seq = false;
  ctx->out[0] = t;
  return KILN_OK;
}

void kiln_ops_register_control(kiln_op_impl *table) {
  table[KILN_OP_If] = (kiln_op_impl){if_eval, if_infer, 1, 1, 1, -1};
  table[KILN_OP_Optional] = (kiln_op_impl){optional_eval, optional_infer, 0, 1, 1, 1};
  table[KILN_OP_OptionalHasElement] =
      (kiln_op_impl){has_element_eval, has_element_infer, 0, 1, 1, 1};
  table[KILN_OP_OptionalGetElement] =
      (kiln_op_impl){get_element_eval, get_element_infer, 1, 1, 1, 1};
  kiln_ctl_register_loops(table);
  kiln_ctl_register_seq(table);
}
