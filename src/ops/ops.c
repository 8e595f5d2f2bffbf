/* The op table, runtime values and helpers shared by the reference kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_attrs.h"
#include "ops.h"

static kiln_op_impl table[KILN_OP_COUNT];
static bool table_ready;

static void build_table(void) {
  kiln_ops_register_elementwise(table);
  kiln_ops_register_reduce(table);
  kiln_ops_register_nn(table);
  kiln_ops_register_shape(table);
  kiln_ops_register_control(table);
  kiln_ops_register_quant(table);
  kiln_ops_register_seqmodel(table);
  kiln_ops_register_signal(table);
  kiln_ops_register_text(table);
  kiln_ops_register_random(table);
  kiln_ops_register_loss(table);
  kiln_ops_register_vision(table);
  table_ready = true;
}

const kiln_op_impl *kiln_op_get(kiln_op op) {
  if (!table_ready) build_table();
  return (unsigned)op < KILN_OP_COUNT ? &table[op] : &table[KILN_OP_UNKNOWN];
}

/* The op's schema version at the node's opset (NULL: no schema). */
static const kiln_op_schema_version *schema_at(const kiln_node *n) {
  const kiln_op_schema_version *v = kiln_op_attr_versions[n->op], *use = NULL;
  for (; v && v->since; v++)
    if (v->since <= n->opset) use = v;
  return use;
}

/* The first later version of the schema that defines input i (0: none). */
static int input_since(const kiln_node *n, int i) {
  for (const kiln_op_schema_version *v = kiln_op_attr_versions[n->op]; v && v->since; v++)
    if (v->since > n->opset && (v->max_in < 0 || v->max_in > i)) return v->since;
  return 0;
}

/* Every input must be one the op's schema at the node's opset defines: an input that only
 * later versions define (ReduceMean's axes before opset 18, Squeeze's before 13) would be
 * ignored by one reading and used by another. n_in excludes trailing omitted inputs. */
static kiln_status check_inputs(const kiln_node *n, const char *lb, int n_in) {
  const kiln_op_schema_version *use = schema_at(n);
  if (!use || use->max_in < 0 || n_in <= use->max_in) return KILN_OK;
  int since = input_since(n, use->max_in);
  if (since)
    return kiln_invalid("%s: %s-%d (opset %lld) takes at most %d input(s), the node has %d "
                        "(input %d exists from opset %d)",
                        lb, n->op_type, use->since, (long long)n->opset, use->max_in, n_in,
                        use->max_in, since);
  return kiln_invalid("%s: %s-%d (opset %lld) takes at most %d input(s), the node has %d", lb,
                      n->op_type, use->since, (long long)n->opset, use->max_in, n_in);
}

/* Every attribute must be one the op's schema (at the node's opset) names, of its kind. */
static kiln_status check_attrs(const kiln_node *n, const char *lb) {
  const kiln_op_schema_version *use = schema_at(n);
  if (!use) return KILN_OK;
  for (int i = 0; i < n->n_attrs; i++) {
    const kiln_attr *a = &n->attrs[i];
    const kiln_attr_schema *s = use->attrs;
    while (s->name && strcmp(s->name, a->name)) s++;
    if (!s->name)
      return kiln_invalid("%s: %s-%d has no attribute '%s'", lb, n->op_type, use->since, a->name);
    if (s->kind != (int)a->kind)
      return kiln_invalid("%s: attribute '%s' must be of type %s, not %s", lb, a->name,
                          kiln_attr_kind_name((kiln_attr_kind)s->kind),
                          kiln_attr_kind_name(a->kind));
  }
  for (const kiln_attr_schema *s = use->attrs; s->name; s++)
    if (s->required && !kiln_node_attr(n, s->name))
      return kiln_invalid("%s: required attribute '%s' is missing", lb, s->name);
  return KILN_OK;
}

kiln_status kiln_op_check(const kiln_graph *g, const kiln_node *n) {
  (void)g;
  char lb[200];
  kiln_node_label(n, lb, sizeof lb);
  if (n->op == KILN_OP_UNKNOWN) {
    if (n->domain[0]) return kiln_unsupported("%s: op domain '%s' is not supported", lb, n->domain);
    return kiln_unsupported("%s: unknown operator '%s'", lb, n->op_type);
  }
  const kiln_op_impl *impl = kiln_op_get(n->op);
  if (!impl->eval) return kiln_unsupported("%s: operator %s is not implemented", lb, n->op_type);
  if (n->opset < kiln_op_since(n->op))
    return kiln_invalid("%s: %s does not exist in opset %lld (it was introduced in opset %d)", lb,
                        n->op_type, (long long)n->opset, kiln_op_since(n->op));
  if (kiln_op_removed(n->op) && n->opset >= kiln_op_removed(n->op))
    return kiln_invalid("%s: %s was removed from the default domain in opset %d (the model "
                        "imports opset %lld)",
                        lb, n->op_type, kiln_op_removed(n->op), (long long)n->opset);
  KILN_TRY(check_attrs(n, lb));
  int n_in = n->n_inputs;
  while (n_in > 0 && n->inputs[n_in - 1] < 0) n_in--; /* trailing omitted inputs */
  KILN_TRY(check_inputs(n, lb, n_in));
  if (n_in < impl->min_in || (impl->max_in >= 0 && n->n_inputs > impl->max_in))
    return kiln_invalid("%s: has %d inputs, expected %d to %d", lb, n->n_inputs, impl->min_in,
                        impl->max_in);
  for (int i = 0; i < impl->min_in; i++)
    if (n->inputs[i] < 0) return kiln_invalid("%s: required input %d is missing", lb, i);
  for (int i = 0; i < impl->min_out && i < n->n_outputs; i++)
    if (n->outputs[i] < 0) return kiln_invalid("%s: required output %d has no name", lb, i);
  if (n->n_outputs < impl->min_out || (impl->max_out >= 0 && n->n_outputs > impl->max_out))
    return kiln_invalid("%s: has %d outputs, expected %d to %d", lb, n->n_outputs, impl->min_out,
                        impl->max_out);
  return KILN_OK;
}

/* ---- runtime values ---- */
kiln_val *kiln_val_new(kiln_type_kind kind) {
  kiln_val *v = kiln_xcalloc(1, sizeof *v);
  v->kind = kind;
  return v;
}

kiln_val *kiln_val_tensor(kiln_tensor *t) {
  kiln_val *v = kiln_val_new(KILN_TYPE_TENSOR);
  v->t = t;
  return v;
}

kiln_seq *kiln_seq_new(kiln_dtype elem) {
  kiln_seq *s = kiln_xcalloc(1, sizeof *s);
  s->elem = elem;
  return s;
}

void kiln_seq_push(kiln_seq *s, kiln_tensor *t) {
  if (s->len == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 4;
    s->items = kiln_xrealloc(s->items, (size_t)s->cap * sizeof *s->items);
  }
  s->items[s->len++] = t;
}

void kiln_seq_free(kiln_seq *s) {
  if (!s) return;
  for (int i = 0; i < s->len; i++) kiln_tensor_free(s->items[i]);
  free(s->items);
  free(s);
}

void kiln_val_free(kiln_val *v) {
  if (!v) return;
  kiln_tensor_free(v->t);
  kiln_seq_free(v->seq);
  free(v);
}

kiln_status kiln_val_clone(const kiln_val *v, kiln_val **out) {
  kiln_val *c = kiln_val_new(v->kind);
  c->elem_seq = v->elem_seq;
  c->opt_dtype = v->opt_dtype;
  kiln_status st = KILN_OK;
  if (v->t) st = kiln_tensor_clone(v->t, &c->t);
  if (!st && v->seq) {
    c->seq = kiln_seq_new(v->seq->elem);
    for (int i = 0; i < v->seq->len && !st; i++) {
      kiln_tensor *t = NULL;
      st = kiln_tensor_clone(v->seq->items[i], &t);
      if (!st) kiln_seq_push(c->seq, t);
    }
  }
  if (st) {
    kiln_val_free(c);
    return st;
  }
  *out = c;
  return KILN_OK;
}

/* ---- kernel context helpers ---- */
const kiln_tensor *kiln_eval_in(const kiln_eval_ctx *ctx, int i) {
  if (i < 0 || i >= ctx->n_in || !ctx->in[i]) return NULL;
  return ctx->in[i]->kind == KILN_TYPE_TENSOR ? ctx->in[i]->t : NULL;
}

kiln_status kiln_eval_in_req(const kiln_eval_ctx *ctx, int i, const kiln_tensor **out) {
  *out = kiln_eval_in(ctx, i);
  if (!*out)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d is missing or not a tensor", i);
  return KILN_OK;
}

kiln_status kiln_eval_out(kiln_eval_ctx *ctx, int i, kiln_dtype dtype, int rank,
                          const int64_t *dims, kiln_tensor **out) {
  if (i < 0 || i >= ctx->n_out)
    return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "output %d out of range", i);
  kiln_tensor *t;
  kiln_status st = kiln_tensor_new(dtype, rank, dims, &t);
  if (st) {
    char lb[200];
    int v = i < ctx->node->n_outputs ? ctx->node->outputs[i] : -1;
    return kiln_status_annotate(st, "%s: output %d ('%s')",
                                kiln_node_label(ctx->node, lb, sizeof lb), i,
                                v >= 0 ? ctx->graph->values.data[v].name : "");
  }
  kiln_eval_set_out(ctx, i, t);
  if (out) *out = t;
  return KILN_OK;
}

kiln_status kiln_eval_scratch_check(const kiln_eval_ctx *ctx, int64_t bytes, const char *what) {
  char lb[200];
  return kiln_mem_check(bytes, "%s: %s", kiln_node_label(ctx->node, lb, sizeof lb), what);
}

void kiln_eval_set_out(kiln_eval_ctx *ctx, int i, kiln_tensor *t) {
  kiln_val_free(ctx->out[i]);
  ctx->out[i] = kiln_val_tensor(t);
}

kiln_status kiln_eval_error(const kiln_eval_ctx *ctx, kiln_code code, const char *fmt, ...) {
  char msg[512], lb[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kiln_error(code, "%s: %s", kiln_node_label(ctx->node, lb, sizeof lb), msg);
}

kiln_status kiln_norm_axis(const kiln_eval_ctx *ctx, int64_t axis, int rank, int *out) {
  int64_t r = rank ? rank : 1; /* a scalar accepts axis 0 / -1 where ops allow it */
  if (axis < -r || axis >= r)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "axis %lld is out of range for rank %d",
                           (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + r : axis);
  return KILN_OK;
}

/* ---- broadcasting ---- */
kiln_status kiln_broadcast_shape(int n, const kiln_tensor *const *ts, int *out_rank,
                                 int64_t *out_dims) {
  int rank = 0;
  for (int k = 0; k < n; k++)
    if (ts[k] && ts[k]->rank > rank) rank = ts[k]->rank;
  for (int i = 0; i < rank; i++) out_dims[i] = 1;
  for (int k = 0; k < n; k++) {
    if (!ts[k]) continue;
    int off = rank - ts[k]->rank;
    for (int i = 0; i < ts[k]->rank; i++) {
      int64_t d = ts[k]->dims[i], *o = &out_dims[off + i];
      if (d == *o || d == 1) continue;
      if (*o == 1) *o = d;
      else
        return kiln_invalid("shapes cannot be broadcast: dimension %d is %lld and %lld", off + i,
                            (long long)*o, (long long)d);
    }
  }
  *out_rank = rank;
  return KILN_OK;
}

void kiln_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
}

void kiln_broadcast_strides(const kiln_tensor *t, int rank, const int64_t *dims, int64_t *strides) {
  int64_t own[KILN_MAX_RANK];
  kiln_strides(t->rank, t->dims, own);
  int off = rank - t->rank;
  for (int i = 0; i < rank; i++) {
    int k = i - off;
    strides[i] = (k < 0 || t->dims[k] == 1) ? 0 : own[k];
  }
  (void)dims;
}

kiln_status kiln_infer_broadcast(const kiln_infer_ctx *ctx, int n, kiln_type *out) {
  int rank = 0;
  kiln_dtype dt = KILN_UNDEFINED;
  for (int k = 0; k < n && k < ctx->n_in; k++) {
    const kiln_type *t = ctx->in[k];
    if (!t) continue;
    if (t->kind != KILN_TYPE_TENSOR || t->rank < 0) {
      *out = kiln_type_unknown();
      out->kind = KILN_TYPE_TENSOR;
      out->dtype = t->dtype;
      return KILN_OK;
    }
    if (!dt) dt = t->dtype;
    if (t->rank > rank) rank = t->rank;
  }
  kiln_type r = kiln_type_tensor(dt, rank, NULL);
  for (int i = 0; i < rank; i++) r.dims[i].value = 1;
  for (int k = 0; k < n && k < ctx->n_in; k++) {
    const kiln_type *t = ctx->in[k];
    if (!t) continue;
    int off = rank - t->rank;
    for (int i = 0; i < t->rank; i++) {
      const kiln_dim *d = &t->dims[i];
      kiln_dim *o = &r.dims[off + i];
      if (d->value == 1) continue;
      if (o->value == 1) {
        *o = *d;
        continue;
      }
      if (d->value >= 0 && o->value >= 0 && d->value != o->value) {
        char lb[200];
        return kiln_invalid("%s: input shapes cannot be broadcast (dimension %d: %lld vs %lld)",
                            kiln_node_label(ctx->node, lb, sizeof lb), off + i, (long long)o->value,
                            (long long)d->value);
      }
      if (o->value < 0 && d->value >= 0) *o = *d; /* the known extent wins */
      else if (o->value < 0 && d->value < 0 && (!o->sym || !d->sym || strcmp(o->sym, d->sym)))
        o->sym = NULL, o->value = -1;
    }
  }
  *out = r;
  return KILN_OK;
}
