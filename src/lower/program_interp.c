/* The program interpreter: runs a lowered program step by step, kernels with the tile IR
 * interpreter, fallback steps with the reference kernels and alias steps as views, each
 * value in its own allocation. It is the tile-level oracle of the compiled code. */
#include <stdlib.h>
#include <string.h>

#include "lower.h"
#include "ops/ops.h"

typedef struct penv {
  const kiln_program *p;
  kiln_val **vals;       /* per root value id */
  bool *owned;           /* vals[i] (and its tensor) is owned here */
  kiln_step_trace_fn cb; /* or NULL */
  void *user;
  bool *traced; /* with cb: per value id, already reported */
} penv;

/* A tensor of value v's static type, or an error when v is not a static tensor. */
static kiln_status new_value_tensor(const kiln_graph *g, int v, kiln_tensor **out) {
  const kiln_type *t = &g->values.data[v].type;
  if (t->kind != KILN_TYPE_TENSOR || !kiln_type_is_static(t))
    return KILN_BUG("value '%s' of a kernel has no static type", g->values.data[v].name);
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  return kiln_tensor_new(t->dtype, t->rank, dims, out);
}

/* A borrowed tensor wrapped in a value shell (the shell's tensor is detached on release). */
static void set_borrowed(penv *e, int v, kiln_tensor *t) {
  e->vals[v] = kiln_val_tensor(t);
  e->owned[v] = false;
}

static void set_owned(penv *e, int v, kiln_val *val) {
  e->vals[v] = val;
  e->owned[v] = true;
}

static kiln_status check_input(const kiln_graph *g, int i, const kiln_tensor *t) {
  const kiln_value *v = &g->values.data[g->inputs.data[i]];
  if (!t) return kiln_invalid("input '%s' is missing", v->name);
  if (v->type.kind != KILN_TYPE_TENSOR) return KILN_OK;
  bool ok = v->type.dtype == t->dtype && (v->type.rank < 0 || v->type.rank == t->rank);
  for (int d = 0; ok && v->type.rank >= 0 && d < t->rank; d++)
    ok = v->type.dims[d].value < 0 || v->type.dims[d].value == t->dims[d];
  char b1[128], b2[128];
  if (!ok)
    return kiln_invalid("input '%s' is %s, the program takes %s", v->name,
                        kiln_tensor_type_str(t, b1, sizeof b1),
                        kiln_type_str(&v->type, b2, sizeof b2));
  return KILN_OK;
}

static kiln_status bind(penv *e, int n_in, kiln_tensor *const *inputs) {
  const kiln_graph *g = e->p->graph;
  if (n_in != g->inputs.len)
    return kiln_invalid("the program takes %d inputs, %d given", g->inputs.len, n_in);
  for (int i = 0; i < n_in; i++) {
    KILN_TRY(check_input(g, i, inputs[i]));
    set_borrowed(e, g->inputs.data[i], inputs[i]);
  }
  for (int v = 0; v < g->values.len; v++)
    if (g->values.data[v].kind == KILN_VALUE_CONST) set_borrowed(e, v, g->values.data[v].data);
  return KILN_OK;
}

/* ---- steps ---- */
static kiln_status run_alias(penv *e, const kiln_step *s) {
  const kiln_graph *g = e->p->graph;
  kiln_val *src = e->vals[s->src];
  if (!src || src->kind != KILN_TYPE_TENSOR || !src->t)
    return KILN_BUG("alias of '%s': source not computed", g->values.data[s->src].name);
  const kiln_type *t = &g->values.data[s->dst].type;
  kiln_tensor *view = kiln_xcalloc(1, sizeof *view);
  view->dtype = src->t->dtype;
  view->rank = t->rank;
  for (int d = 0; d < t->rank; d++) view->dims[d] = t->dims[d].value;
  view->numel = src->t->numel;
  view->data = src->t->data; /* the source stays alive until the end of the run */
  view->owns_data = false;
  set_owned(e, s->dst, kiln_val_tensor(view));
  return KILN_OK;
}

/* Binds argument a; *track: how the tile interpreter watches it (scratch: reads of what the
 * kernel did not store; a value this kernel defines: that, and every element stored). */
static kiln_status kernel_arg(penv *e, const kiln_arg *a, void **out, void **scratch,
                              uint8_t *track) {
  const kiln_graph *g = e->p->graph;
  if (a->kind == KILN_ARG_PACKED) {
    *out = e->p->packed.data[a->id]->data;
  } else if (a->kind == KILN_ARG_SCRATCH) {
    KILN_TRY(kiln_mem_check(a->bytes, "scratch of a kernel (%lld bytes)", (long long)a->bytes));
    *scratch = calloc(1, (size_t)a->bytes + 16);
    if (!*scratch)
      return kiln_error(KILN_ERR_OOM, "cannot allocate %lld bytes", (long long)a->bytes);
    *out = *scratch;
    *track = KILN_TRACK_READS;
  } else {
    if (!e->vals[a->id]) { /* an output of this kernel */
      *track = KILN_TRACK_OUTPUT;
      kiln_tensor *t;
      KILN_TRY(new_value_tensor(g, a->id, &t));
      set_owned(e, a->id, kiln_val_tensor(t));
    }
    kiln_val *v = e->vals[a->id];
    if (v->kind != KILN_TYPE_TENSOR || !v->t)
      return kiln_invalid("value '%s' is not a tensor", g->values.data[a->id].name);
    *out = v->t->data;
  }
  return KILN_OK;
}

static kiln_status run_kernel(penv *e, const kiln_step *s) {
  const kiln_tkernel *k = e->p->module->kernels.data[s->kernel];
  if (s->n_args != k->n_params)
    return KILN_BUG("kernel %s takes %d parameters, step binds %d", k->name, k->n_params,
                    s->n_args);
  void **args = kiln_xcalloc((size_t)s->n_args + 1, sizeof *args);
  void **scratch = kiln_xcalloc((size_t)s->n_args + 1, sizeof *scratch);
  uint8_t *track = kiln_xcalloc((size_t)s->n_args + 1, 1);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < s->n_args; i++)
    st = kernel_arg(e, &s->args[i], &args[i], &scratch[i], &track[i]);
  bool checked = !st && s->check_msg && s->check_arg >= 0 && s->check_arg < s->n_args &&
                 s->args[s->check_arg].kind == KILN_ARG_SCRATCH;
  if (checked) *(int32_t *)args[s->check_arg] = 0, track[s->check_arg] = KILN_TRACK_FLAG;
  if (!st) st = kiln_tkernel_interp_tracked(k, args, track);
  if (!st && checked && *(int32_t *)args[s->check_arg]) {
    char lb[200];
    st = kiln_invalid("%s: %s", kiln_node_label(&e->p->graph->nodes.data[s->node], lb, sizeof lb),
                      s->check_msg);
  }
  for (int i = 0; i < s->n_args; i++) free(scratch[i]);
  free(args);
  free(scratch);
  free(track);
  if (st) return kiln_status_annotate(st, "kernel %s", k->name);
  return KILN_OK;
}

static kiln_val *value_of(void *user, int v) {
  penv *e = user;
  return e->vals[v];
}

/* A fallback result must have its value's static type: the kernels after it were lowered
 * for that shape (a data-dependent value the model declares static, and computes larger,
 * would otherwise be read in part, silently). */
static kiln_status check_static(const kiln_graph *g, int v, const kiln_val *val) {
  const kiln_type *t = &g->values.data[v].type;
  if (!kiln_type_is_static(t)) return KILN_OK;
  bool ok = val->kind == KILN_TYPE_TENSOR && val->t && val->t->dtype == t->dtype &&
            val->t->rank == t->rank;
  for (int d = 0; ok && d < t->rank; d++) ok = val->t->dims[d] == t->dims[d].value;
  if (ok) return KILN_OK;
  char b1[128], b2[128];
  return kiln_error(
      KILN_ERR_FAILED, "'%s' was computed as %s, the program holds %s", g->values.data[v].name,
      val->kind == KILN_TYPE_TENSOR && val->t ? kiln_tensor_type_str(val->t, b1, sizeof b1)
                                              : "not a tensor",
      kiln_type_str(t, b2, sizeof b2));
}

static kiln_status run_fallback(penv *e, const kiln_step *s) {
  const kiln_graph *g = e->p->graph;
  const kiln_node *n = &g->nodes.data[s->node];
  kiln_val *outs_small[8];
  kiln_val **outs =
      n->n_outputs <= 8 ? outs_small : kiln_xcalloc((size_t)n->n_outputs, sizeof *outs);
  for (int k = 0; k < n->n_outputs; k++) outs[k] = NULL;
  kiln_status st = kiln_interp_eval_node(g, s->node, value_of, e, outs);
  for (int k = 0; k < n->n_outputs; k++) {
    int v = n->outputs[k];
    if (!st && v >= 0 && outs[k]) st = check_static(g, v, outs[k]);
    if (!st && v >= 0 && outs[k]) set_owned(e, v, outs[k]);
    else kiln_val_free(outs[k]);
  }
  if (outs != outs_small) free(outs);
  return st;
}

/* ---- tracing: the node outputs a step produced, each reported once ---- */
static void trace_value(penv *e, int step, int v) {
  const kiln_graph *g = e->p->graph;
  if (v < 0 || e->traced[v] || g->values.data[v].kind != KILN_VALUE_NODE) return;
  const kiln_val *val = e->vals[v];
  if (!val || val->kind != KILN_TYPE_TENSOR || !val->t) return;
  e->traced[v] = true;
  e->cb(e->user, step, v, val->t);
}

static void trace_step(penv *e, int i, const kiln_step *s) {
  if (s->kind == KILN_STEP_KERNEL) {
    for (int a = 0; a < s->n_args; a++)
      if (s->args[a].kind == KILN_ARG_VALUE) trace_value(e, i, s->args[a].id);
  } else if (s->kind == KILN_STEP_ALIAS) {
    trace_value(e, i, s->dst);
  } else {
    const kiln_node *n = &e->p->graph->nodes.data[s->node];
    for (int k = 0; k < n->n_outputs; k++) trace_value(e, i, n->outputs[k]);
  }
}

static kiln_status run_steps(penv *e) {
  const kiln_program *p = e->p;
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    kiln_status st = s->kind == KILN_STEP_KERNEL  ? run_kernel(e, s)
                     : s->kind == KILN_STEP_ALIAS ? run_alias(e, s)
                                                  : run_fallback(e, s);
    if (st) return kiln_status_annotate(st, "step %d", i);
    if (e->cb) trace_step(e, i, s);
  }
  return KILN_OK;
}

static kiln_status take_outputs(penv *e, kiln_tensor **outputs) {
  const kiln_graph *g = e->p->graph;
  for (int i = 0; i < g->outputs.len; i++) {
    int v = g->outputs.data[i];
    kiln_val *val = e->vals[v];
    if (!val || val->kind != KILN_TYPE_TENSOR || !val->t)
      return kiln_unsupported("graph output '%s' is not a computed tensor", g->values.data[v].name);
    KILN_TRY(kiln_tensor_clone(val->t, &outputs[i]));
  }
  return KILN_OK;
}

static void release(penv *e) {
  const kiln_graph *g = e->p->graph;
  for (int v = 0; v < g->values.len; v++) {
    if (!e->vals[v]) continue;
    if (!e->owned[v]) e->vals[v]->t = NULL; /* a shell around a borrowed tensor */
    kiln_val_free(e->vals[v]);
  }
}

kiln_status kiln_program_interp(const kiln_program *p, int n_in, kiln_tensor *const *inputs,
                                kiln_tensor **outputs) {
  return kiln_program_interp_trace(p, n_in, inputs, outputs, NULL, NULL);
}

kiln_status kiln_program_interp_trace(const kiln_program *p, int n_in, kiln_tensor *const *inputs,
                                      kiln_tensor **outputs, kiln_step_trace_fn cb, void *user) {
  const kiln_graph *g = p->graph;
  for (int i = 0; i < g->outputs.len; i++) outputs[i] = NULL;
  size_t nv = (size_t)g->values.len + 1;
  penv e = {p,    kiln_xcalloc(nv, sizeof(kiln_val *)),      kiln_xcalloc(nv, sizeof(bool)), cb,
            user, cb ? kiln_xcalloc(nv, sizeof(bool)) : NULL};
  kiln_status st = bind(&e, n_in, inputs);
  if (!st) st = run_steps(&e);
  if (!st) st = take_outputs(&e, outputs);
  if (st)
    for (int i = 0; i < g->outputs.len; i++) kiln_tensor_free(outputs[i]), outputs[i] = NULL;
  release(&e);
  free(e.vals);
  free(e.owned);
  free(e.traced);
  return st;
}
