/* Loop, Scan and SequenceMap: ops that run a body graph repeatedly. */
#include <stdlib.h>
#include <string.h>

#include "control_internal.h"

/* ---- accumulating per-iteration tensors ---- */
/* The tensors one body output produced, one per iteration, to be stacked. */
typedef struct stack_acc {
  KILN_VEC(kiln_tensor *) items;
} stack_acc;

static void acc_free(stack_acc *a, int n) {
  for (int k = 0; k < n; k++) {
    for (int i = 0; i < a[k].items.len; i++) kiln_tensor_free(a[k].items.data[i]);
    kiln_vec_free(&a[k].items);
  }
  free(a);
}

/* Takes the tensor out of v (freeing v) and appends it; each must have the shape of the first. */
static kiln_status acc_push(kiln_eval_ctx *ctx, stack_acc *a, kiln_val *v, int k) {
  if (!v || v->kind != KILN_TYPE_TENSOR || !v->t) {
    kiln_status st = kiln_eval_error(
        ctx, KILN_ERR_INVALID, "scan output %d must be a tensor, got %s", k, kiln_ctl_kind_name(v));
    kiln_val_free(v);
    return st;
  }
  kiln_tensor *t = v->t;
  v->t = NULL;
  kiln_val_free(v);
  if (a->items.len > 0 &&
      (!kiln_tensor_same_shape(t, a->items.data[0]) || t->dtype != a->items.data[0]->dtype)) {
    char b1[96], b2[96];
    kiln_status st = kiln_eval_error(ctx, KILN_ERR_INVALID,
                                     "scan output %d changes type between iterations: %s, then %s",
                                     k, kiln_tensor_type_str(a->items.data[0], b1, sizeof b1),
                                     kiln_tensor_type_str(t, b2, sizeof b2));
    kiln_tensor_free(t);
    return st;
  }
  kiln_vec_push(&a->items, t);
  return KILN_OK;
}

/* Stacks the items of a along a new axis; item i goes to position reverse ? n-1-i : i. */
static kiln_status acc_stack(const stack_acc *a, int axis, bool reverse, kiln_tensor **out) {
  const kiln_tensor *first = a->items.data[0];
  if (first->rank + 1 > KILN_MAX_RANK)
    return kiln_unsupported("stacked scan output rank too large");
  int64_t dims[KILN_MAX_RANK], n = a->items.len;
  for (int i = 0, k = 0; i <= first->rank; i++) dims[i] = i == axis ? n : first->dims[k++];
  KILN_TRY(kiln_tensor_new(first->dtype, first->rank + 1, dims, out));
  for (int64_t i = 0; i < n; i++)
    kiln_ctl_place(*out, axis, reverse ? n - 1 - i : i, a->items.data[i]);
  return KILN_OK;
}

/* The declared type of body output k (NULL if none). */
static const kiln_type *body_out_type(const kiln_graph *body, int k) {
  int id = k < body->outputs.len ? body->outputs.data[k] : -1;
  return id >= 0 ? &body->values.data[id].type : NULL;
}

/* The declared dtype of node output k (undefined if not known). */
static kiln_dtype node_out_dtype(const kiln_eval_ctx *ctx, int k) {
  int id = k < ctx->node->n_outputs ? ctx->node->outputs[k] : -1;
  return id >= 0 ? ctx->graph->values.data[id].type.dtype : KILN_UNDEFINED;
}

static kiln_status get_body(kiln_eval_ctx *ctx, kiln_graph **body) {
  KILN_TRY(kiln_node_graph(ctx->node, "body", body));
  if (!*body) return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute 'body' is missing");
  return KILN_OK;
}

/* ---- Loop ---- */
typedef struct loop_state {
  kiln_eval_ctx *ctx;
  const kiln_graph *body;
  int n_carried, n_scan;
  kiln_val **carried; /* current loop-carried values */
  bool *owned;        /* carried[i] is ours (else borrowed from the node's inputs) */
  stack_acc *acc;     /* per scan output */
} loop_state;

/* Checks a new loop-carried value against the one it replaces. */
static kiln_status check_carried(loop_state *s, int i, const kiln_val *nv) {
  const kiln_val *ov = s->carried[i];
  if (!nv)
    return kiln_eval_error(s->ctx, KILN_ERR_INVALID, "the body gave no loop-carried value %d", i);
  if (ov && ov->kind == KILN_TYPE_TENSOR && nv->kind == KILN_TYPE_TENSOR && ov->t && nv->t &&
      ov->t->dtype != nv->t->dtype)
    return kiln_eval_error(s->ctx, KILN_ERR_INVALID,
                           "loop-carried value %d changes element type from %s to %s", i,
                           kiln_dtype_name(ov->t->dtype), kiln_dtype_name(nv->t->dtype));
  return KILN_OK;
}

/* Loop-carried value i as the body takes it: a tensor or sequence bound to a body input
 * declared optional becomes a present optional (the carried value of Loop-16 may start as
 * an optional and continue as the sequence the body returns). The wrapper is shallow: it
 * borrows the data, as the body borrows its inputs. */
static kiln_val *as_body_input(const loop_state *s, int i, kiln_val *wrap) {
  kiln_val *v = s->carried[i];
  int id = s->body->inputs.data[2 + i];
  if (!v || v->kind == KILN_TYPE_OPTIONAL ||
      s->body->values.data[id].type.kind != KILN_TYPE_OPTIONAL)
    return v;
  wrap->kind = KILN_TYPE_OPTIONAL;
  wrap->t = v->kind == KILN_TYPE_TENSOR ? v->t : NULL;
  wrap->seq = v->kind == KILN_TYPE_SEQUENCE ? v->seq : NULL;
  wrap->elem_seq = v->kind == KILN_TYPE_SEQUENCE;
  wrap->opt_dtype = v->t ? v->t->dtype : v->seq ? v->seq->elem : KILN_UNDEFINED;
  return wrap;
}

/* Runs one iteration: consumes outs of the body; returns the new condition. */
static kiln_status loop_iter(loop_state *s, int64_t it, bool cond, bool *out_cond) {
  int nb = 2 + s->n_carried, no = 1 + s->n_carried + s->n_scan;
  kiln_val **in = kiln_xcalloc((size_t)nb, sizeof *in);
  kiln_val **outs = kiln_xcalloc((size_t)no, sizeof *outs);
  kiln_tensor *ti = NULL, *tc = NULL;
  kiln_status st = kiln_tensor_new(KILN_I64, 0, NULL, &ti);
  if (!st) st = kiln_tensor_new(KILN_BOOL, 0, NULL, &tc);
  if (!st) {
    *(int64_t *)ti->data = it;
    *(uint8_t *)tc->data = cond;
    in[0] = kiln_val_tensor(ti);
    in[1] = kiln_val_tensor(tc);
    ti = tc = NULL;
    kiln_val *wrap = kiln_xcalloc((size_t)s->n_carried + 1, sizeof *wrap);
    for (int i = 0; i < s->n_carried; i++) in[2 + i] = as_body_input(s, i, &wrap[i]);
    st = kiln_interp_run_sub(s->ctx, s->body, nb, in, outs);
    free(wrap);
  }
  const kiln_tensor *c = !st && outs[0] && outs[0]->kind == KILN_TYPE_TENSOR ? outs[0]->t : NULL;
  if (!st && (!c || c->numel != 1 || kiln_dtype_class_of(c->dtype) == KILN_CLASS_STRING))
    st = kiln_eval_error(s->ctx, KILN_ERR_INVALID,
                         "the body's condition output must be a "
                         "boolean scalar");
  if (!st) *out_cond = kiln_load_f64(c->dtype, c->data, 0) != 0;
  for (int i = 0; !st && i < s->n_carried; i++) st = check_carried(s, i, outs[1 + i]);
  for (int i = 0; !st && i < s->n_carried; i++) {
    if (s->owned[i]) kiln_val_free(s->carried[i]);
    s->carried[i] = outs[1 + i];
    s->owned[i] = true;
    outs[1 + i] = NULL;
  }
  for (int k = 0; !st && k < s->n_scan; k++) {
    st = acc_push(s->ctx, &s->acc[k], outs[1 + s->n_carried + k], k);
    outs[1 + s->n_carried + k] = NULL;
  }
  kiln_tensor_free(ti);
  kiln_tensor_free(tc);
  kiln_ctl_free_vals(in, 2);
  kiln_ctl_free_vals(outs, no);
  free(in);
  free(outs);
  return st;
}

/* Moves the final values to the node's outputs. */
static kiln_status loop_finish(loop_state *s) {
  kiln_eval_ctx *ctx = s->ctx;
  for (int i = 0; i < s->n_carried && i < ctx->n_out; i++) {
    if (!s->carried[i]) {
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "loop-carried value %d is missing", i);
    } else if (s->owned[i]) {
      ctx->out[i] = s->carried[i];
      s->carried[i] = NULL;
    } else {
      KILN_TRY(kiln_val_clone(s->carried[i], &ctx->out[i]));
    }
  }
  for (int k = 0; k < s->n_scan && s->n_carried + k < ctx->n_out; k++) {
    kiln_tensor *t;
    if (s->acc[k].items.len) KILN_TRY(acc_stack(&s->acc[k], 0, false, &t));
    else
      KILN_TRY(kiln_ctl_empty_stack(body_out_type(s->body, 1 + s->n_carried + k),
                                    node_out_dtype(ctx, s->n_carried + k), 0, &t));
    kiln_eval_set_out(ctx, s->n_carried + k, t);
  }
  return KILN_OK;
}

static kiln_status loop_run(loop_state *s, bool has_m, int64_t m, bool cond) {
  for (int64_t it = 0; cond && (!has_m || it < m); it++) KILN_TRY(loop_iter(s, it, cond, &cond));
  return loop_finish(s);
}

/* Loop(M?, cond?, v_initial...) {body}: body(iter, cond, v...) -> (cond, v..., scan...);
 * runs while iter < M and cond; returns the final v and the stacked scan outputs. */
static kiln_status loop_eval(kiln_eval_ctx *ctx) {
  kiln_graph *body;
  KILN_TRY(get_body(ctx, &body));
  int n_carried = ctx->n_in > 2 ? ctx->n_in - 2 : 0;
  int n_scan = body->outputs.len - 1 - n_carried;
  if (body->inputs.len != 2 + n_carried || n_scan < 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "the body takes %d inputs and gives %d outputs; with %d loop-carried "
                           "values it must take %d and give at least %d",
                           body->inputs.len, body->outputs.len, n_carried, 2 + n_carried,
                           1 + n_carried);
  if (ctx->n_out > n_carried + n_scan)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "the node has %d outputs, the body gives %d",
                           ctx->n_out, n_carried + n_scan);
  int64_t m = 0;
  bool has_m = kiln_eval_in(ctx, 0) != NULL, cond = true;
  if (has_m) KILN_TRY(kiln_ctl_int_scalar(ctx, 0, "the trip count M", &m));
  if (ctx->n_in > 1 && ctx->in[1]) KILN_TRY(kiln_ctl_bool_scalar(ctx, 1, "the condition", &cond));
  loop_state s = {ctx, body, n_carried, n_scan, NULL, NULL, NULL};
  s.carried = kiln_xcalloc((size_t)n_carried + 1, sizeof *s.carried);
  s.owned = kiln_xcalloc((size_t)n_carried + 1, sizeof *s.owned);
  s.acc = kiln_xcalloc((size_t)n_scan + 1, sizeof *s.acc);
  for (int i = 0; i < n_carried; i++) s.carried[i] = ctx->in[2 + i];
  kiln_status st = loop_run(&s, has_m, m, cond);
  for (int i = 0; i < n_carried; i++)
    if (s.owned[i]) kiln_val_free(s.carried[i]);
  free(s.carried);
  free(s.owned);
  acc_free(s.acc, n_scan);
  return st;
}

static void stacked_type(const kiln_type *elem, int axis, kiln_dim n, kiln_type *out) {
  if (!elem || elem->kind != KILN_TYPE_TENSOR) return;
  *out = *elem;
  if (elem->rank < 0 || elem->rank + 1 > KILN_MAX_RANK || axis > elem->rank) {
    out->rank = -1;
    return;
  }
  out->rank = elem->rank + 1;
  for (int i = 0, k = 0; i < out->rank; i++) out->dims[i] = i == axis ? n : elem->dims[k++];
}

static kiln_status loop_infer(kiln_infer_ctx *ctx) {
  const kiln_graph *body = kiln_ctl_infer_graph(ctx, "body");
  int n_carried = ctx->n_in > 2 ? ctx->n_in - 2 : 0;
  if (!body || body->outputs.len < 1 + n_carried) return KILN_OK;
  for (int i = 0; i < n_carried && i < ctx->n_out; i++) {
    const kiln_type *b = body_out_type(body, 1 + i);
    if (ctx->in[2 + i] && b) kiln_ctl_type_join(ctx->in[2 + i], b, &ctx->out[i]);
  }
  for (int k = n_carried; k < ctx->n_out; k++)
    stacked_type(body_out_type(body, 1 + k), 0, (kiln_dim){-1, NULL}, &ctx->out[k]);
  return KILN_OK;
}

/* ---- Scan ---- */
typedef struct scan_cfg {
  kiln_eval_ctx *ctx;
  const kiln_graph *body;
  int n_state, n_scan, n_sout;
  int in_axis[KILN_MAX_RANK * 4];
  bool in_rev[KILN_MAX_RANK * 4];
  int out_axis[KILN_MAX_RANK * 4];
  bool out_rev[KILN_MAX_RANK * 4];
} scan_cfg;

/* One run over a sequence: state[] (owned or borrowed per own[]) are updated in place;
 * scans[j] are the scan inputs (sliced along in_axis); scan outputs are appended to acc. */
static kiln_status scan_seq(scan_cfg *c, kiln_val **state, bool *own,
                            const kiln_tensor *const *scans, int64_t len, stack_acc *acc) {
  int nb = c->n_state + c->n_scan, no = c->n_state + c->n_sout;
  kiln_val **in = kiln_xcalloc((size_t)nb + 1, sizeof *in);
  kiln_val **outs = kiln_xcalloc((size_t)no + 1, sizeof *outs);
  kiln_status st = KILN_OK;
  for (int64_t t = 0; !st && t < len; t++) {
    for (int i = 0; i < c->n_state; i++) in[i] = state[i];
    for (int j = 0; !st && j < c->n_scan; j++) {
      kiln_tensor *sl;
      st = kiln_ctl_slice(scans[j], c->in_axis[j], c->in_rev[j] ? len - 1 - t : t, &sl);
      if (!st) in[c->n_state + j] = kiln_val_tensor(sl);
    }
    if (!st) st = kiln_interp_run_sub(c->ctx, c->body, nb, in, outs);
    for (int i = 0; !st && i < c->n_state; i++) {
      const kiln_val *ov = state[i], *nv = outs[i];
      if (!nv || nv->kind != KILN_TYPE_TENSOR || !nv->t || nv->t->dtype != ov->t->dtype ||
          !kiln_tensor_same_shape(nv->t, ov->t)) {
        char b1[96], b2[96];
        st = kiln_eval_error(
            c->ctx, KILN_ERR_INVALID, "state variable %d must keep its type %s, the body gave %s",
            i, kiln_tensor_type_str(ov->t, b1, sizeof b1),
            nv && nv->t ? kiln_tensor_type_str(nv->t, b2, sizeof b2) : kiln_ctl_kind_name(nv));
      }
    }
    for (int i = 0; !st && i < c->n_state; i++) {
      if (own[i]) kiln_val_free(state[i]);
      state[i] = outs[i];
      own[i] = true;
      outs[i] = NULL;
    }
    for (int k = 0; !st && k < c->n_sout; k++) {
      st = acc_push(c->ctx, &acc[k], outs[c->n_state + k], k);
      outs[c->n_state + k] = NULL;
    }
    kiln_ctl_free_vals(in + c->n_state, c->n_scan);
    kiln_ctl_free_vals(outs, no);
  }
  free(in);
  free(outs);
  return st;
}

/* Reads num_scan_inputs, the body and the per-input/per-output axes and directions. */
static kiln_status scan_config(kiln_eval_ctx *ctx, int n_vars, scan_cfg *c) {
  kiln_graph *body;
  KILN_TRY(get_body(ctx, &body));
  int64_t m;
  KILN_TRY(kiln_node_int(ctx->node, "num_scan_inputs", 0, &m));
  if (m < 1 || m > n_vars || m > KILN_MAX_RANK * 4)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "num_scan_inputs is %lld, it must be in [1, %d] (the inputs)",
                           (long long)m, n_vars);
  c->ctx = ctx;
  c->body = body;
  c->n_scan = (int)m;
  c->n_state = n_vars - c->n_scan;
  c->n_sout = body->outputs.len - c->n_state;
  if (body->inputs.len != n_vars || c->n_sout < 0 || c->n_sout > KILN_MAX_RANK * 4)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "the body takes %d inputs and gives %d outputs; with %d state "
                           "variables and %d scan inputs it must take %d",
                           body->inputs.len, body->outputs.len, c->n_state, c->n_scan, n_vars);
  if (ctx->n_out > c->n_state + c->n_sout)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "the node has %d outputs, the body gives %d",
                           ctx->n_out, c->n_state + c->n_sout);
  return KILN_OK;
}

/* Reads an ints attribute of per-item flags or axes (default 0), checking its length. */
static kiln_status scan_ints(kiln_eval_ctx *ctx, const char *name, int n, int64_t *vals) {
  const int64_t *v;
  int len;
  KILN_TRY(kiln_node_ints(ctx->node, name, &v, &len));
  if (len > n)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute '%s' has %d values, expected %d", name,
                           len, n);
  for (int i = 0; i < n; i++) vals[i] = i < len ? v[i] : 0;
  return KILN_OK;
}

static kiln_status scan_dirs(kiln_eval_ctx *ctx, const char *name, int n, bool *rev) {
  int64_t v[KILN_MAX_RANK * 4];
  KILN_TRY(scan_ints(ctx, name, n, v));
  for (int i = 0; i < n; i++) {
    if (v[i] != 0 && v[i] != 1)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "attribute '%s' must hold 0 or 1, got %lld",
                             name, (long long)v[i]);
    rev[i] = v[i] == 1;
  }
  return KILN_OK;
}

/* Checks the initial states are tensors. */
static kiln_status scan_check_states(const scan_cfg *c, kiln_val *const *st) {
  for (int i = 0; i < c->n_state; i++)
    if (!st[i] || st[i]->kind != KILN_TYPE_TENSOR || !st[i]->t)
      return kiln_eval_error(c->ctx, KILN_ERR_INVALID, "initial state %d must be a tensor, got %s",
                             i, kiln_ctl_kind_name(st[i]));
  return KILN_OK;
}

/* The scan inputs as tensors; the common sequence length along their axes. */
static kiln_status scan_inputs(scan_cfg *c, int first, const kiln_tensor **scans, int64_t *len) {
  for (int j = 0; j < c->n_scan; j++) {
    KILN_TRY(kiln_eval_in_req(c->ctx, first + j, &scans[j]));
    int r = scans[j]->rank;
    if (r < 1)
      return kiln_eval_error(c->ctx, KILN_ERR_INVALID, "scan input %d must have rank >= 1", j);
    KILN_TRY(kiln_norm_axis(c->ctx, c->in_axis[j], r, &c->in_axis[j]));
    int64_t n = scans[j]->dims[c->in_axis[j]];
    if (j == 0) *len = n;
    else if (n != *len)
      return kiln_eval_error(c->ctx, KILN_ERR_INVALID,
                             "scan input %d has length %lld along its axis, input 0 has %lld", j,
                             (long long)n, (long long)*len);
  }
  return KILN_OK;
}

/* Moves the final states and stacked scan outputs (opset 9+) to the node's outputs. */
static kiln_status scan9_finish(scan_cfg *c, kiln_val **state, bool *own, stack_acc *acc) {
  kiln_eval_ctx *ctx = c->ctx;
  for (int i = 0; i < c->n_state && i < ctx->n_out; i++) {
    if (own[i]) {
      ctx->out[i] = state[i];
      state[i] = NULL;
    } else {
      KILN_TRY(kiln_val_clone(state[i], &ctx->out[i]));
    }
  }
  for (int k = 0; k < c->n_sout && c->n_state + k < ctx->n_out; k++) {
    const kiln_type *bt = body_out_type(c->body, c->n_state + k);
    int r = acc[k].items.len ? acc[k].items.data[0]->rank : bt && bt->rank >= 0 ? bt->rank : 0;
    int ax;
    KILN_TRY(kiln_norm_axis(ctx, c->out_axis[k], r + 1, &ax));
    kiln_tensor *t;
    if (acc[k].items.len) KILN_TRY(acc_stack(&acc[k], ax, c->out_rev[k], &t));
    else KILN_TRY(kiln_ctl_empty_stack(bt, node_out_dtype(ctx, c->n_state + k), ax, &t));
    kiln_eval_set_out(ctx, c->n_state + k, t);
  }
  return KILN_OK;
}

/* Scan-9+(states..., scan_inputs...) {body, num_scan_inputs, scan_input_axes,
 * scan_input_directions, scan_output_axes, scan_output_directions}. */
static kiln_status scan9_eval(kiln_eval_ctx *ctx) {
  scan_cfg c;
  memset(&c, 0, sizeof c);
  KILN_TRY(scan_config(ctx, ctx->n_in, &c));
  int64_t v[KILN_MAX_RANK * 4];
  KILN_TRY(scan_ints(ctx, "scan_input_axes", c.n_scan, v));
  for (int j = 0; j < c.n_scan; j++)
    c.in_axis[j] = v[j] < -KILN_MAX_RANK || v[j] > KILN_MAX_RANK ? KILN_MAX_RANK + 1 : (int)v[j];
  KILN_TRY(scan_ints(ctx, "scan_output_axes", c.n_sout, v));
  for (int k = 0; k < c.n_sout; k++)
    c.out_axis[k] = v[k] < -KILN_MAX_RANK || v[k] > KILN_MAX_RANK ? KILN_MAX_RANK + 1 : (int)v[k];
  KILN_TRY(scan_dirs(ctx, "scan_input_directions", c.n_scan, c.in_rev));
  KILN_TRY(scan_dirs(ctx, "scan_output_directions", c.n_sout, c.out_rev));
  KILN_TRY(scan_check_states(&c, ctx->in));
  const kiln_tensor *scans[KILN_MAX_RANK * 4];
  int64_t len = 0;
  KILN_TRY(scan_inputs(&c, c.n_state, scans, &len));
  kiln_val **state = kiln_xcalloc((size_t)c.n_state + 1, sizeof *state);
  bool *own = kiln_xcalloc((size_t)c.n_state + 1, sizeof *own);
  stack_acc *acc = kiln_xcalloc((size_t)c.n_sout + 1, sizeof *acc);
  for (int i = 0; i < c.n_state; i++) state[i] = ctx->in[i];
  kiln_status st = scan_seq(&c, state, own, scans, len, acc);
  if (!st) st = scan9_finish(&c, state, own, acc);
  for (int i = 0; i < c.n_state; i++)
    if (own[i]) kiln_val_free(state[i]);
  free(state);
  free(own);
  acc_free(acc, c.n_sout);
  return st;
}

/* ---- Scan-8: batched, with sequence_lens ---- */
typedef struct scan8_run {
  scan_cfg c;
  int64_t batch, max_len;
  const kiln_tensor *lens;                     /* NULL: every entry has max_len steps */
  kiln_val *const *init;                       /* the initial states, [batch, ...] */
  const kiln_tensor *scans[KILN_MAX_RANK * 4]; /* [batch, max_len, ...] */
  kiln_tensor **res; /* the node's outputs: states, then scan outputs (NULL until known) */
} scan8_run;

/* Copies batch entry b's scan outputs into res (allocated at the first entry with one). */
static kiln_status scan8_store(scan8_run *r, int64_t b, const stack_acc *acc) {
  for (int k = 0; k < r->c.n_sout; k++) {
    if (!acc[k].items.len) continue;
    const kiln_tensor *e = acc[k].items.data[0];
    kiln_tensor **o = &r->res[r->c.n_state + k];
    if (!*o) {
      if (e->rank + 2 > KILN_MAX_RANK)
        return kiln_eval_error(r->c.ctx, KILN_ERR_UNSUPPORTED, "scan output %d: rank too large", k);
      int64_t dims[KILN_MAX_RANK] = {r->batch, r->max_len};
      for (int i = 0; i < e->rank; i++) dims[2 + i] = e->dims[i];
      KILN_TRY(kiln_tensor_new(e->dtype, e->rank + 2, dims, o));
    }
    bool ok = e->rank + 2 == (*o)->rank && e->dtype == (*o)->dtype;
    for (int i = 0; ok && i < e->rank; i++) ok = e->dims[i] == (*o)->dims[2 + i];
    if (!ok)
      return kiln_eval_error(r->c.ctx, KILN_ERR_INVALID,
                             "scan output %d changes shape between batch entries", k);
    for (int64_t t = 0; t < acc[k].items.len; t++)
      kiln_ctl_copy(e->dtype, (*o)->data, (b * r->max_len + t) * e->numel,
                    acc[k].items.data[t]->data, 0, e->numel);
  }
  return KILN_OK;
}

/* Runs batch entry b. */
static kiln_status scan8_batch(scan8_run *r, int64_t b) {
  int ns = r->c.n_state, nj = r->c.n_scan;
  kiln_val **state = kiln_xcalloc((size_t)ns + 1, sizeof *state);
  bool *own = kiln_xcalloc((size_t)ns + 1, sizeof *own);
  kiln_tensor **sl = kiln_xcalloc((size_t)nj + 1, sizeof *sl);
  stack_acc *acc = kiln_xcalloc((size_t)r->c.n_sout + 1, sizeof *acc);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < ns; i++) {
    kiln_tensor *t;
    st = kiln_ctl_slice(r->init[i]->t, 0, b, &t);
    if (!st) state[i] = kiln_val_tensor(t), own[i] = true;
  }
  for (int j = 0; !st && j < nj; j++) st = kiln_ctl_slice(r->scans[j], 0, b, &sl[j]);
  int64_t len = r->lens ? kiln_load_i64(r->lens->dtype, r->lens->data, (size_t)b) : r->max_len;
  if (!st) st = scan_seq(&r->c, state, own, (const kiln_tensor *const *)sl, len, acc);
  for (int i = 0; !st && i < ns; i++) kiln_ctl_place(r->res[i], 0, b, state[i]->t);
  if (!st) st = scan8_store(r, b, acc);
  for (int i = 0; i < ns; i++)
    if (own[i]) kiln_val_free(state[i]);
  for (int j = 0; j < nj; j++) kiln_tensor_free(sl[j]);
  free(state);
  free(own);
  free(sl);
  acc_free(acc, r->c.n_sout);
  return st;
}

/* Checks the shapes of the batched inputs and sequence_lens; allocates the state outputs. */
static kiln_status scan8_prepare(scan8_run *r) {
  kiln_eval_ctx *ctx = r->c.ctx;
  for (int j = 0; j < r->c.n_scan; j++) {
    KILN_TRY(kiln_eval_in_req(ctx, 1 + r->c.n_state + j, &r->scans[j]));
    const kiln_tensor *x = r->scans[j];
    if (x->rank < 2)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "scan input %d must have rank >= 2", j);
    if (j == 0) r->batch = x->dims[0], r->max_len = x->dims[1];
    else if (x->dims[0] != r->batch || x->dims[1] != r->max_len)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "scan input %d has batch and length %lldx%lld, input 0 %lldx%lld", j,
                             (long long)x->dims[0], (long long)x->dims[1], (long long)r->batch,
                             (long long)r->max_len);
  }
  for (int i = 0; i < r->c.n_state; i++) {
    const kiln_tensor *s = r->init[i]->t;
    if (s->rank < 1 || s->dims[0] != r->batch)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "initial state %d must have the batch size %lld as first dimension", i,
                             (long long)r->batch);
    KILN_TRY(kiln_tensor_new(s->dtype, s->rank, s->dims, &r->res[i]));
  }
  r->lens = kiln_eval_in(ctx, 0);
  if (!r->lens) return KILN_OK;
  if (!kiln_dtype_is_int(r->lens->dtype) || r->lens->numel != r->batch)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "sequence_lens must hold %lld integers (one per batch entry)",
                           (long long)r->batch);
  for (int64_t b = 0; b < r->batch; b++) {
    int64_t n = kiln_load_i64(r->lens->dtype, r->lens->data, (size_t)b);
    if (n < 0 || n > r->max_len)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                             (long long)n, (long long)r->max_len);
  }
  return KILN_OK;
}

/* Scan output k when no batch entry ran the body: [batch, max_len, body output dims]. */
static kiln_status scan8_empty(scan8_run *r, int k, kiln_tensor **out) {
  const kiln_type *bt = body_out_type(r->c.body, r->c.n_state + k);
  int64_t dims[KILN_MAX_RANK] = {r->batch, r->max_len};
  int rank = 2;
  if (bt && kiln_type_is_static(bt) && bt->rank + 2 <= KILN_MAX_RANK) {
    for (int i = 0; i < bt->rank; i++) dims[2 + i] = bt->dims[i].value;
    rank += bt->rank;
  }
  kiln_dtype dt = bt && bt->kind == KILN_TYPE_TENSOR && bt->dtype
                      ? bt->dtype
                      : node_out_dtype(r->c.ctx, r->c.n_state + k);
  return kiln_tensor_new(dt ? dt : KILN_F32, rank, dims, out);
}

static kiln_status scan8_run_all(scan8_run *r) {
  KILN_TRY(scan8_prepare(r));
  for (int64_t b = 0; b < r->batch; b++) KILN_TRY(scan8_batch(r, b));
  kiln_eval_ctx *ctx = r->c.ctx;
  for (int k = 0; k < r->c.n_sout; k++)
    if (!r->res[r->c.n_state + k]) KILN_TRY(scan8_empty(r, k, &r->res[r->c.n_state + k]));
  for (int i = 0; i < r->c.n_state + r->c.n_sout && i < ctx->n_out; i++) {
    kiln_eval_set_out(ctx, i, r->res[i]);
    r->res[i] = NULL;
  }
  return KILN_OK;
}

/* Scan-8(sequence_lens?, states..., scan_inputs...) {body, num_scan_inputs, directions}:
 * axis 0 is the batch, axis 1 the sequence; each batch entry is scanned on its own. */
static kiln_status scan8_eval(kiln_eval_ctx *ctx) {
  scan8_run r;
  memset(&r, 0, sizeof r);
  if (ctx->n_in < 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "needs sequence_lens and at least one input");
  KILN_TRY(scan_config(ctx, ctx->n_in - 1, &r.c));
  KILN_TRY(scan_dirs(ctx, "directions", r.c.n_scan, r.c.in_rev));
  r.init = ctx->in + 1;
  KILN_TRY(scan_check_states(&r.c, r.init));
  int nres = r.c.n_state + r.c.n_sout;
  r.res = kiln_xcalloc((size_t)nres + 1, sizeof *r.res);
  kiln_status st = scan8_run_all(&r);
  for (int i = 0; i < nres; i++) kiln_tensor_free(r.res[i]);
  free(r.res);
  return st;
}

static kiln_status scan_eval(kiln_eval_ctx *ctx) {
  return ctx->node->opset > 0 && ctx->node->opset < 9 ? scan8_eval(ctx) : scan9_eval(ctx);
}

static kiln_status scan_infer(kiln_infer_ctx *ctx) {
  const kiln_graph *body = kiln_ctl_infer_graph(ctx, "body");
  const kiln_attr *na = kiln_node_attr(ctx->node, "num_scan_inputs");
  bool v8 = ctx->node->opset > 0 && ctx->node->opset < 9;
  int first = v8 ? 1 : 0, n_vars = ctx->n_in - first;
  if (!body || !na || na->kind != KILN_ATTR_INT || na->i < 1 || na->i > n_vars) return KILN_OK;
  int n_state = n_vars - (int)na->i;
  for (int i = 0; i < n_state && i < ctx->n_out; i++)
    if (ctx->in[first + i]) ctx->out[i] = *ctx->in[first + i];
  const kiln_type *x = ctx->in[first + n_state];
  const kiln_attr *ia = kiln_node_attr(ctx->node, "scan_input_axes");
  const kiln_attr *oa = kiln_node_attr(ctx->node, "scan_output_axes");
  kiln_dim len = {-1, NULL}, batch = {-1, NULL};
  int64_t in_ax = !v8 && ia && ia->kind == KILN_ATTR_INTS && ia->n > 0 ? ia->ints[0] : 0;
  if (x && x->kind == KILN_TYPE_TENSOR && x->rank > 0) {
    if (in_ax < 0) in_ax += x->rank;
    if (v8 && x->rank >= 2) batch = x->dims[0], len = x->dims[1];
    else if (!v8 && in_ax >= 0 && in_ax < x->rank) len = x->dims[in_ax];
  }
  for (int k = n_state; k < ctx->n_out; k++) {
    const kiln_type *bt = body_out_type(body, k);
    if (!bt || bt->kind != KILN_TYPE_TENSOR) continue;
    if (v8) {
      kiln_type tmp = kiln_type_unknown();
      stacked_type(bt, 0, len, &tmp);
      stacked_type(&tmp, 0, batch, &ctx->out[k]);
      continue;
    }
    int64_t ax =
        oa && oa->kind == KILN_ATTR_INTS && k - n_state < oa->n ? oa->ints[k - n_state] : 0;
    if (ax < 0 && bt->rank >= 0) ax += bt->rank + 1;
    if (ax >= 0 && ax <= KILN_MAX_RANK) stacked_type(bt, (int)ax, len, &ctx->out[k]);
  }
  return KILN_OK;
}

/* ---- SequenceMap ---- */
/* The element type of output k of a SequenceMap for an empty input sequence. */
static kiln_dtype seqmap_dtype(const kiln_eval_ctx *ctx, const kiln_graph *body, int k) {
  const kiln_type *bt = body_out_type(body, k);
  if (bt && bt->dtype) return bt->dtype;
  kiln_dtype dt = node_out_dtype(ctx, k);
  return dt ? dt : KILN_F32;
}

/* Checks the inputs: a sequence first, then tensors or sequences of the same length. */
static kiln_status seqmap_check(kiln_eval_ctx *ctx, const kiln_graph *body, int *len) {
  if (body->inputs.len != ctx->n_in || body->outputs.len != ctx->n_out)
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "the body takes %d inputs and gives %d outputs, the node has %d and %d",
                           body->inputs.len, body->outputs.len, ctx->n_in, ctx->n_out);
  for (int j = 0; j < ctx->n_in; j++) {
    const kiln_val *v = ctx->in[j];
    bool seq = v && v->kind == KILN_TYPE_SEQUENCE && v->seq;
    if (j == 0 && !seq)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "input 0 must be a sequence, got %s",
                             kiln_ctl_kind_name(v));
    if (j == 0) *len = v->seq->len;
    else if (seq && v->seq->len != *len)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "input sequence %d has %d elements, input 0 has %d", j, v->seq->len,
                             *len);
    else if (!seq && (!v || v->kind != KILN_TYPE_TENSOR || !v->t))
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "input %d must be a tensor or a sequence, got %s", j,
                             kiln_ctl_kind_name(v));
  }
  return KILN_OK;
}

/* Runs the body on element i; appends its outputs to res. */
static kiln_status seqmap_step(kiln_eval_ctx *ctx, const kiln_graph *body, int i, kiln_seq **res,
                               kiln_val *tmp, kiln_val **in, kiln_val **outs) {
  for (int j = 0; j < ctx->n_in; j++) {
    kiln_val *v = ctx->in[j];
    if (v->kind == KILN_TYPE_SEQUENCE) {
      memset(&tmp[j], 0, sizeof tmp[j]);
      tmp[j].kind = KILN_TYPE_TENSOR;
      tmp[j].t = v->seq->items[i]; /* borrowed by the body */
      in[j] = &tmp[j];
    } else {
      in[j] = v;
    }
  }
  KILN_TRY(kiln_interp_run_sub(ctx, body, ctx->n_in, in, outs));
  kiln_status st = KILN_OK;
  for (int k = 0; !st && k < ctx->n_out; k++) {
    kiln_val *o = outs[k];
    if (!o || o->kind != KILN_TYPE_TENSOR || !o->t)
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "body output %d must be a tensor, got %s", k,
                           kiln_ctl_kind_name(o));
    else if (res[k]->len > 0 && res[k]->elem != o->t->dtype)
      st = kiln_eval_error(ctx, KILN_ERR_INVALID, "body output %d changes type from %s to %s", k,
                           kiln_dtype_name(res[k]->elem), kiln_dtype_name(o->t->dtype));
    if (st) break;
    res[k]->elem = o->t->dtype;
    kiln_seq_push(res[k], o->t);
    o->t = NULL;
  }
  kiln_ctl_free_vals(outs, ctx->n_out);
  return st;
}

/* SequenceMap(seq, extra...) {body}: runs body on each element (and the matching element of
 * each extra sequence, or each extra tensor as is); its outputs form the output sequences. */
static kiln_status seqmap_eval(kiln_eval_ctx *ctx) {
  kiln_graph *body;
  KILN_TRY(get_body(ctx, &body));
  int len = 0;
  KILN_TRY(seqmap_check(ctx, body, &len));
  kiln_seq **res = kiln_xcalloc((size_t)ctx->n_out + 1, sizeof *res);
  kiln_val *tmp = kiln_xcalloc((size_t)ctx->n_in + 1, sizeof *tmp);
  kiln_val **in = kiln_xcalloc((size_t)ctx->n_in + 1, sizeof *in);
  kiln_val **outs = kiln_xcalloc((size_t)ctx->n_out + 1, sizeof *outs);
  for (int k = 0; k < ctx->n_out; k++) res[k] = kiln_seq_new(seqmap_dtype(ctx, body, k));
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < len; i++) st = seqmap_step(ctx, body, i, res, tmp, in, outs);
  for (int k = 0; k < ctx->n_out; k++) {
    if (st) {
      kiln_seq_free(res[k]);
      continue;
    }
    kiln_val *v = kiln_val_new(KILN_TYPE_SEQUENCE);
    v->seq = res[k];
    kiln_val_free(ctx->out[k]);
    ctx->out[k] = v;
  }
  free(res);
  free(tmp);
  free(in);
  free(outs);
  return st;
}

static kiln_status seqmap_infer(kiln_infer_ctx *ctx) {
  const kiln_graph *body = kiln_ctl_infer_graph(ctx, "body");
  if (!body) return KILN_OK;
  for (int k = 0; k < ctx->n_out; k++) {
    const kiln_type *bt = body_out_type(body, k);
    if (!bt || bt->kind != KILN_TYPE_TENSOR) continue;
    ctx->out[k] = *bt;
    ctx->out[k].kind = KILN_TYPE_SEQUENCE;
  }
  return KILN_OK;
}

void kiln_ctl_register_loops(kiln_op_impl *table) {
  table[KILN_OP_Loop] = (kiln_op_impl){loop_eval, loop_infer, 0, -1, 0, -1};
  table[KILN_OP_Scan] = (kiln_op_impl){scan_eval, scan_infer, 0, -1, 1, -1};
  table[KILN_OP_SequenceMap] = (kiln_op_impl){seqmap_eval, seqmap_infer, 1, -1, 1, -1};
}
