/* The executor: runs the steps of a compiled program over its planned arena.
 *
 * Everything that does not change between runs is computed once (kiln_exec_prepare): the
 * argument array of every kernel step (pointers into the arena, constants, packed
 * constants, scratch), and tensor views of arena values for fallback steps. A run patches
 * the argument slots that point at graph inputs, calls the kernels, evaluates fallback
 * steps with the reference kernels (copying their results into the planned buffers; values
 * without a static type live on the heap), and copies the outputs out.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mutate.h"
#include "graph/analysis.h"
#include "rt_internal.h"

static kiln_tensor *view_tensor(const kiln_type *t, void *data) {
  kiln_tensor *v = kiln_xcalloc(1, sizeof *v);
  v->dtype = t->dtype;
  v->rank = t->rank;
  v->numel = KILN_MUTANT(345) && t->rank == 0 ? 0 : 1; /* mutant 345: a scalar view as empty */
  for (int d = 0; d < t->rank; d++) v->dims[d] = t->dims[d].value, v->numel *= v->dims[d];
  v->data = data;
  v->owns_data = false;
  return v;
}

static void *value_ptr(const kiln_compiled *c, int v) {
  const kiln_loc *l = &c->plan->loc[v];
  if (l->kind == KILN_LOC_ARENA) return c->arena + l->offset;
  if (l->kind == KILN_LOC_CONST) return c->g->values.data[l->index].data->data;
  return NULL;
}

static kiln_status prepare_arg(kiln_compiled *c, int s, int a, void **slot) {
  const kiln_step *st = &c->prog->steps.data[s];
  const kiln_arg *arg = &st->args[a];
  if (arg->kind == KILN_ARG_PACKED) {
    *slot = c->prog->packed.data[arg->id]->data;
  } else if (arg->kind == KILN_ARG_SCRATCH) {
    *slot = c->arena + c->plan->arg_offset[c->plan->arg_base[s] + (KILN_MUTANT(313) ? 0 : a)];
    /* mutant 313: the offset of the step's first argument */
  } else {
    const kiln_loc *l = &c->plan->loc[arg->id];
    if (l->kind == KILN_LOC_INPUT) {
      for (int i = 0; KILN_MUTANT(247) && i < c->patches.len; i++) /* mutant 247: patched once */
        if (c->patches.data[i].input == l->index) return KILN_OK;
      kiln_patch p = {slot, l->index};
      kiln_vec_push(&c->patches, p);
    } else if (l->kind == KILN_LOC_ARENA || l->kind == KILN_LOC_CONST) {
      *slot = value_ptr(c, arg->id);
    } else {
      return KILN_BUG("kernel step %d: value '%s' has no storage", s,
                      c->g->values.data[arg->id].name);
    }
  }
  return KILN_OK;
}

/* Every kernel's function: looked up when the program is compiled. */
static kiln_status find_kernels(kiln_compiled *c) {
  const kiln_program *p = c->prog;
  c->xsteps = kiln_xcalloc((size_t)p->steps.len + 1, sizeof *c->xsteps);
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    /* mutant 368: the symbol of the kernel whose index is the step's */
    int kn = KILN_MUTANT(368) && s < c->prog->module->kernels.len ? s : st->kernel;
    KILN_TRY(kiln_module_sym(c->mod, c->symbols[kn], (void **)&c->xsteps[s].fn));
    if (st->check_msg && st->check_arg >= 0 &&
        (st->check_arg >= st->n_args || st->args[st->check_arg].kind != KILN_ARG_SCRATCH ||
         st->args[st->check_arg].bytes < (int64_t)sizeof(int32_t)))
      return KILN_BUG("kernel step %d: its error flag is not scratch space", s);
  }
  return KILN_OK;
}

/* Every kernel's argument array: pointers into the arena, so made with the arena. */
static kiln_status prepare_kernels(kiln_compiled *c) {
  const kiln_program *p = c->prog;
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    kiln_xstep *x = &c->xsteps[s];
    x->args = kiln_xcalloc((size_t)st->n_args + 1, sizeof *x->args);
    for (int a = 0; a < st->n_args; a++) KILN_TRY(prepare_arg(c, s, a, &x->args[a]));
  }
  return KILN_OK;
}

/* ---- heap values are freed after their last reader ---- */
static void read_at(const kiln_compiled *c, int *last, int v, int s) {
  if (v >= 0 && c->plan->loc[v].kind == KILN_LOC_HEAP && last[v] < s && /* mutant 193 */
      (!KILN_MUTANT(193) || last[v] < 0 || s == c->prog->steps.len))
    last[v] = s; /* mutant 193: the first reader taken for the last */
}

static void fallback_reads(const kiln_compiled *c, int *last, const kiln_node *n, int s) {
  for (int k = 0; k < n->n_inputs; k++) read_at(c, last, n->inputs[k], s);
  for (int k = 0; k < n->n_outputs; k++) read_at(c, last, n->outputs[k], s); /* unread ones */
  kiln_outer_iter it = kiln_outer_reads(c->g, n);
  for (int v; kiln_outer_next(&it, &v) && !KILN_MUTANT(159);) /* mutant 159: not kept */
    read_at(c, last, v, s);
}

static void prepare_heap_frees(kiln_compiled *c) {
  const kiln_program *p = c->prog;
  int nv = c->g->values.len, ns = p->steps.len;
  int *last = kiln_xcalloc((size_t)nv + 1, sizeof *last);
  for (int v = 0; v < nv; v++) last[v] = -1;
  for (int s = 0; s < ns; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind == KILN_STEP_FALLBACK) fallback_reads(c, last, &c->g->nodes.data[st->node], s);
    if (st->kind == KILN_STEP_ALIAS) read_at(c, last, st->src, s), read_at(c, last, st->dst, s);
  }
  for (int i = 0; i < c->g->outputs.len && !KILN_MUTANT(85); i++) /* mutant 85: not kept */
    read_at(c, last, c->g->outputs.data[i], ns);
  for (int s = ns - 1; s >= 0; s--) { /* a view keeps its source */
    const kiln_step *st = &p->steps.data[s];
    if (st->kind == KILN_STEP_ALIAS && last[st->dst] > last[st->src])
      read_at(c, last, st->src, last[st->dst]);
  }
  c->free_start = kiln_xcalloc((size_t)ns + 2, sizeof *c->free_start);
  c->free_list = kiln_xcalloc((size_t)nv + 1, sizeof *c->free_list);
  for (int v = 0; v < nv; v++)
    if (last[v] >= 0 && last[v] < ns) c->free_start[last[v] + 1]++;
  for (int s = 0; s < ns; s++) c->free_start[s + 1] += c->free_start[s];
  int *fill = kiln_xcalloc((size_t)ns + 1, sizeof *fill);
  for (int v = 0; v < nv; v++)
    if (last[v] >= 0 && last[v] < ns) c->free_list[c->free_start[last[v]] + fill[last[v]]++] = v;
  free(fill);
  free(last);
}

static void free_dead(kiln_compiled *c, int s) {
  for (int i = c->free_start[s]; i < c->free_start[s + 1]; i++) {
    int v = c->free_list[i];
    kiln_val_free(c->heap[v]);
    c->heap[v] = NULL;
  }
}

/* Compiling prepares what needs no memory of the size of the model: the kernels' functions.
 * The arena (and what points into it) is made at the first run (exec_ready): a compile
 * that runs nothing allocates nothing of the plan's size. */
kiln_status kiln_exec_prepare(kiln_compiled *c) {
  return find_kernels(c);
}

/* The target's arena (kiln_target.arena_alloc: zeroed, 64-byte aligned). */
static kiln_status alloc_arena(kiln_compiled *c) {
  int64_t bytes = (c->plan->arena_bytes + 64 + 63) / 64 * 64;
  void *arena;
  KILN_TRY(c->target->arena_alloc(c, bytes, &arena));
  c->arena = arena;
  c->arena_reserved = bytes;
  return KILN_OK;
}

static kiln_status exec_ready(kiln_compiled *c) {
  if (c->ready) return KILN_OK;
  if (!c->arena) KILN_TRY(alloc_arena(c));
  if (c->views) return KILN_BUG("the executor was left half prepared");
  int nv = c->g->values.len;
  c->views = kiln_xcalloc((size_t)nv + 1, sizeof *c->views);
  c->heap = kiln_xcalloc((size_t)nv + 1, sizeof *c->heap);
  for (int v = 0; v < nv; v++) {
    const kiln_loc *l = &c->plan->loc[v];
    const kiln_value *val = &c->g->values.data[v];
    bool is_static = val->type.kind == KILN_TYPE_TENSOR && kiln_type_is_static(&val->type);
    if (l->kind == KILN_LOC_ARENA)
      c->views[v] = kiln_val_tensor(view_tensor(&val->type, c->arena + l->offset));
    else if (l->kind == KILN_LOC_INPUT && is_static) /* data set per run */
      c->views[v] = kiln_val_tensor(view_tensor(&val->type, NULL));
    else if (l->kind == KILN_LOC_CONST && val->kind != KILN_VALUE_CONST && is_static)
      c->views[v] = kiln_val_tensor(view_tensor(&val->type, value_ptr(c, v))); /* a view */
  }
  for (int s = 0; KILN_MUTANT(195) && s < c->prog->steps.len; s++) { /* mutant 195 */
    const kiln_step *st = &c->prog->steps.data[s]; /* a view made with its source's shape */
    if (st->kind != KILN_STEP_ALIAS || c->plan->loc[st->dst].kind != KILN_LOC_ARENA) continue;
    kiln_val_free(c->views[st->dst]);
    c->views[st->dst] = kiln_val_tensor(
        view_tensor(&c->g->values.data[st->src].type, c->arena + c->plan->loc[st->dst].offset));
  }
  prepare_heap_frees(c);
  KILN_TRY(prepare_kernels(c));
  c->ready = true;
  return KILN_OK;
}

static void clear_heap(kiln_compiled *c) {
  for (int v = 0; v < c->g->values.len; v++) kiln_val_free(c->heap[v]), c->heap[v] = NULL;
}

void kiln_exec_free(kiln_compiled *c) {
  int nv = c->g ? c->g->values.len : 0;
  for (int s = 0; c->xsteps && s < c->prog->steps.len; s++) free(c->xsteps[s].args);
  free(c->xsteps);
  kiln_vec_free(&c->patches);
  for (int v = 0; c->views && v < nv; v++) kiln_val_free(c->views[v]); /* views: no data owned */
  free(c->views);
  if (c->heap) clear_heap(c);
  free(c->heap);
  free(c->free_start);
  free(c->free_list);
  if (c->arena) c->target->arena_free(c, c->arena, c->arena_reserved);
  c->arena = NULL;
}

/* ---- one run ---- */
static kiln_status check_input(const kiln_value *v, const kiln_val *in) {
  char b1[128], b2[128];
  if (!in) return kiln_invalid("input '%s' is missing", v->name);
  if (v->type.kind != KILN_TYPE_TENSOR) {
    if (in->kind != v->type.kind)
      return kiln_invalid("input '%s' must be a %s", v->name,
                          kiln_type_str(&v->type, b1, sizeof b1));
    return KILN_OK;
  }
  const kiln_tensor *t = in->kind == KILN_TYPE_TENSOR ? in->t : NULL;
  if (!t) return kiln_invalid("input '%s' must be a tensor", v->name);
  bool ok = v->type.dtype == t->dtype && v->type.rank == t->rank;
  for (int d = 0; ok && d < t->rank; d++) ok = v->type.dims[d].value == t->dims[d];
  if (!ok)
    return kiln_invalid("input '%s' is %s, the compiled model takes %s", v->name,
                        kiln_tensor_type_str(t, b1, sizeof b1),
                        kiln_type_str(&v->type, b2, sizeof b2));
  return KILN_OK;
}

static kiln_status check_inputs(const kiln_compiled *c, int n_in, kiln_val *const *inputs) {
  const kiln_graph *g = c->g;
  if (n_in != g->inputs.len)
    return kiln_invalid("the compiled model takes %d inputs, %d given", g->inputs.len, n_in);
  for (int i = 0; i < n_in; i++)
    KILN_TRY(check_input(&g->values.data[g->inputs.data[i]], inputs[i]));
  return KILN_OK;
}

/* mutant 225: the views of the inputs left as prepared (no data): only kernel slots patched */
static void bind_inputs(kiln_compiled *c, kiln_val *const *inputs) {
  c->cur_inputs = inputs;
  for (int i = 0; i < c->patches.len; i++)
    *c->patches.data[i].slot = /* mutant 314: the patch's position taken for its input */
        inputs[KILN_MUTANT(314) && i < c->g->inputs.len ? i : c->patches.data[i].input]->t->data;
  for (int v = 0; v < c->g->values.len && !KILN_MUTANT(225); v++) /* inputs and views of them */
    if (c->plan->loc[v].kind == KILN_LOC_INPUT && c->views[v])
      c->views[v]->t->data = inputs[c->plan->loc[v].index]->t->data;
}

static kiln_val *lookup(void *user, int v) {
  kiln_compiled *c = user;
  if (KILN_MUTANT(284) && c->plan->loc[v].kind == KILN_LOC_INPUT) /* mutant 284: the input */
    return c->cur_inputs[c->plan->loc[v].index];                  /* itself for its views too */
  if (c->views[v]) return c->views[v];
  if (c->plan->loc[v].kind == KILN_LOC_INPUT) return c->cur_inputs[c->plan->loc[v].index];
  return c->heap[v];
}

/* A fallback result goes to its planned buffer (ARENA) or stays on the heap. */
static kiln_status store_result(kiln_compiled *c, int v, kiln_val *val) {
  const kiln_loc *l = &c->plan->loc[v];
  if (l->kind != KILN_LOC_ARENA || KILN_MUTANT(120)) { /* mutant 120: kept on the heap */
    kiln_val_free(c->heap[v]);
    c->heap[v] = val;
    return KILN_OK;
  }
  const kiln_tensor *want = c->views[v]->t;
  kiln_status st = KILN_OK;
  char b1[128], b2[128];
  if (val->kind != KILN_TYPE_TENSOR || !val->t || val->t->dtype != want->dtype ||
      val->t->numel != want->numel)
    st = kiln_error(KILN_ERR_FAILED, "'%s' was computed as %s, the plan holds %s",
                    c->g->values.data[v].name,
                    val->t ? kiln_tensor_type_str(val->t, b1, sizeof b1) : "a non-tensor",
                    kiln_tensor_type_str(want, b2, sizeof b2));
  else /* mutant 84: the element count copied as bytes */
    c->target->copy_in(c, want->data, val->t->data,
                       KILN_MUTANT(84) ? (size_t)want->numel : (size_t)l->bytes);
  kiln_val_free(val);
  return st;
}

static kiln_status run_fallback(kiln_compiled *c, const kiln_step *st) {
  const kiln_node *n = &c->g->nodes.data[st->node];
  kiln_val *small[8];
  kiln_val **outs = n->n_outputs <= 8 ? small : kiln_xcalloc((size_t)n->n_outputs, sizeof *outs);
  kiln_status e = kiln_interp_eval_node(c->g, st->node, lookup, c, outs);
  for (int k = 0; k < n->n_outputs; k++) {
    kiln_status e2 = KILN_OK; /* mutant 122: only the first output stored */
    if (!e && n->outputs[k] >= 0 && outs[k] && (k == 0 || !KILN_MUTANT(122)))
      e2 = store_result(c, n->outputs[k], outs[k]);
    else kiln_val_free(outs[k]);
    if (!e) e = e2;
    else kiln_status_free(e2);
  }
  if (outs != small) free(outs);
  return e;
}

/* An alias of a heap value (e.g. a string tensor) is a view of it with the target's shape. */
static kiln_status run_alias(kiln_compiled *c, const kiln_step *st) {
  if (c->plan->loc[st->dst].kind != KILN_LOC_HEAP) return KILN_OK;
  const kiln_type *t = &c->g->values.data[st->dst].type;
  kiln_val *src = c->heap[st->src];
  if (!src || src->kind != KILN_TYPE_TENSOR || !src->t || !kiln_type_is_static(t))
    return kiln_unsupported("view '%s' of a value without a static shape",
                            c->g->values.data[st->dst].name);
  kiln_tensor *v = view_tensor(t, src->t->data);
  v->dtype = src->t->dtype;
  kiln_val_free(c->heap[st->dst]);
  c->heap[st->dst] = kiln_val_tensor(v);
  return KILN_OK;
}

/* A kernel that checks its input: its error flag is cleared before and read after. */
static kiln_status run_checked(kiln_compiled *c, int s, const kiln_step *st) {
  int32_t *flag = c->xsteps[s].args[st->check_arg];
  if (!KILN_MUTANT(121)) *flag = 0; /* mutant 121: the flag taken as zeroed with the arena */
  c->target->run_kernel(c, s);
  if (!*flag) return KILN_OK;
  char lb[200];
  return kiln_status_annotate(
      kiln_invalid("%s: %s", kiln_node_label(&c->g->nodes.data[st->node], lb, sizeof lb),
                   st->check_msg),
      "step %d", s);
}

static kiln_status run_step(kiln_compiled *c, int s) {
  const kiln_step *st = &c->prog->steps.data[s];
  if (st->kind == KILN_STEP_KERNEL) {
    if (st->check_msg && st->check_arg >= 0) return run_checked(c, s, st);
    c->target->run_kernel(c, s);
    return KILN_OK;
  }
  kiln_status e = st->kind == KILN_STEP_FALLBACK ? run_fallback(c, st) : run_alias(c, st);
  return e ? kiln_status_annotate(e, "step %d", s) : KILN_OK;
}

/* ---- tracing (verification): the node outputs a step produced, each reported once ---- */
typedef struct trace {
  kiln_step_trace_fn cb;
  void *user;
  bool *done; /* per value id */
} trace;

static void trace_value(kiln_compiled *c, trace *t, int s, int v) {
  if (v < 0 || t->done[v] || c->g->values.data[v].kind != KILN_VALUE_NODE) return;
  const kiln_val *val = c->views[v] ? c->views[v] : c->heap[v];
  if (!val || val->kind != KILN_TYPE_TENSOR || !val->t || !val->t->data) return;
  t->done[v] = true;
  t->cb(t->user, s, v, val->t);
}

static void trace_step(kiln_compiled *c, trace *t, int s) {
  const kiln_step *st = &c->prog->steps.data[s];
  if (st->kind == KILN_STEP_KERNEL) {
    for (int a = 0; a < st->n_args; a++)
      if (st->args[a].kind == KILN_ARG_VALUE) trace_value(c, t, s, st->args[a].id);
  } else if (st->kind == KILN_STEP_ALIAS) {
    trace_value(c, t, s, st->dst);
  } else {
    const kiln_node *n = &c->g->nodes.data[st->node];
    for (int k = 0; k < n->n_outputs; k++) trace_value(c, t, s, n->outputs[k]);
  }
}

static kiln_status run_steps_traced(kiln_compiled *c, trace *t) {
  for (int s = 0; s < c->prog->steps.len; s++) {
    if (KILN_MUTANT(158)) free_dead(c, s); /* mutant 158: the step's dead values freed first */
    KILN_TRY(run_step(c, s));
    trace_step(c, t, s); /* before free_dead: the step's heap values are still there */
    free_dead(c, s);
  }
  return KILN_OK;
}

static kiln_status run_steps(kiln_compiled *c, trace *t) {
  int n = c->prog->steps.len;
  if (t) return run_steps_traced(c, t);
  if (!c->step_seconds) {
    for (int s = 0; s < n; s++) {
      if (KILN_MUTANT(158)) free_dead(c, s); /* mutant 158: the step's dead values freed first */
      KILN_TRY(run_step(c, s));
      free_dead(c, s);
    }
    return KILN_OK;
  }
  for (int s = 0; s < n; s++) { /* profiling: time each step */
    double t0 = kiln_clock_seconds();
    KILN_TRY(run_step(c, s));
    free_dead(c, s);
    c->step_seconds[s] += kiln_clock_seconds() - t0;
  }
  return KILN_OK;
}

/* An output is a copy of its view (its own shape), else of the constant, the heap value or
 * the (non-tensor) input. */
static kiln_status copy_output(kiln_compiled *c, int v, kiln_val **out) {
  const kiln_loc *l = &c->plan->loc[v];
  if (l->kind == KILN_LOC_ARENA && c->views[v] && c->views[v]->t->dtype != KILN_STRING) {
    const kiln_tensor *d = c->views[v]->t; /* in the target's arena */
    kiln_tensor *copy;
    static const int64_t one[1] = {1}; /* mutant 333: a scalar output copied as a [1] tensor */
    if (KILN_MUTANT(333) && d->rank == 0) KILN_TRY(kiln_tensor_new(d->dtype, 1, one, &copy));
    else KILN_TRY(kiln_tensor_new(d->dtype, d->rank, d->dims, &copy));
    if (c->fill_on) memset(copy->data, c->fill, kiln_tensor_nbytes(copy));
    c->target->copy_out(c, copy->data, d->data, /* mutant 246: the element count as bytes */
                        KILN_MUTANT(246) ? (size_t)d->numel : kiln_tensor_nbytes(d));
    *out = kiln_val_tensor(copy);
    return KILN_OK;
  }
  if (KILN_MUTANT(285) && l->kind == KILN_LOC_INPUT)     /* mutant 285: a view of an input */
    return kiln_val_clone(c->cur_inputs[l->index], out); /* copied as the input itself */
  const kiln_tensor *t = c->views[v]                 ? c->views[v]->t
                         : l->kind == KILN_LOC_CONST ? c->g->values.data[l->index].data
                                                     : NULL;
  if (t) {
    kiln_tensor *copy;
    KILN_TRY(kiln_tensor_clone(t, &copy));
    *out = kiln_val_tensor(copy);
    return KILN_OK;
  }
  const kiln_val *val = l->kind == KILN_LOC_HEAP    ? c->heap[v]
                        : l->kind == KILN_LOC_INPUT ? c->cur_inputs[l->index]
                                                    : NULL;
  if (!val) return KILN_BUG("output '%s' was not computed", c->g->values.data[v].name);
  return kiln_val_clone(val, out);
}

/* kiln_compiled_set_fill: the arena set to the fill byte through the target's copy (its
 * memory may be a device's), in pieces of at most 16 KiB. */
static void fill_arena(kiln_compiled *c) {
  enum { PIECE = 16384 };
  unsigned char piece[PIECE];
  memset(piece, c->fill, PIECE);
  for (int64_t at = 0; at < c->arena_reserved; at += PIECE) {
    int64_t n = c->arena_reserved - at < PIECE ? c->arena_reserved - at : PIECE;
    c->target->copy_in(c, c->arena + at, piece, (size_t)n);
  }
}

static kiln_status run_vals(kiln_compiled *c, int n_in, kiln_val *const *inputs, kiln_val **outputs,
                            trace *t) {
  const kiln_graph *g = c->g;
  for (int i = 0; i < g->outputs.len; i++) outputs[i] = NULL;
  if (!kiln_target_can_run(c->target))
    return kiln_unsupported("the %s target compiles only: its runtime is not built yet",
                            c->target->name);
  KILN_TRY(check_inputs(c, n_in, inputs));
  int64_t prev = kiln_mem_push_limit(c->max_memory);
  kiln_status st = exec_ready(c);
  if (st) {
    kiln_mem_pop_limit(prev);
    return st;
  }
  if (c->fill_on) fill_arena(c);
  bind_inputs(c, inputs);
  st = run_steps(c, t);
  if (KILN_MUTANT(192)) clear_heap(c); /* mutant 192: the heap cleared before the outputs */
  for (int i = 0; !st && i < g->outputs.len; i++)
    st = copy_output(c, g->outputs.data[i], &outputs[i]);
  clear_heap(c);
  c->cur_inputs = NULL;
  kiln_mem_pop_limit(prev);
  if (st)
    for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outputs[i]), outputs[i] = NULL;
  return st;
}

kiln_status kiln_compiled_run_vals(kiln_compiled *c, int n_in, kiln_val *const *inputs,
                                   kiln_val **outputs) {
  return run_vals(c, n_in, inputs, outputs, NULL);
}

kiln_status kiln_compiled_run_trace(kiln_compiled *c, int n_in, kiln_val *const *inputs,
                                    kiln_val **outputs, kiln_step_trace_fn cb, void *user) {
  if (!cb) return run_vals(c, n_in, inputs, outputs, NULL);
  trace t = {cb, user, kiln_xcalloc((size_t)c->g->values.len + 1, sizeof(bool))};
  kiln_status st = run_vals(c, n_in, inputs, outputs, &t);
  free(t.done);
  return st;
}

kiln_status kiln_compiled_run(kiln_compiled *c, int n_in, kiln_tensor *const *inputs,
                              kiln_tensor **outputs) {
  const kiln_graph *g = c->g;
  kiln_val *in_small[8], *out_small[8];
  kiln_val **in = n_in <= 8 ? in_small : kiln_xcalloc((size_t)n_in, sizeof *in);
  kiln_val **out =
      g->outputs.len <= 8 ? out_small : kiln_xcalloc((size_t)g->outputs.len, sizeof *out);
  for (int i = 0; i < n_in; i++) in[i] = inputs[i] ? kiln_val_tensor(inputs[i]) : NULL; /* shells */
  kiln_status st = kiln_compiled_run_vals(c, n_in, in, out);
  for (int i = 0; i < g->outputs.len; i++) {
    outputs[i] = NULL;
    if (!st && (out[i]->kind != KILN_TYPE_TENSOR || !out[i]->t))
      st = kiln_unsupported("output '%s' is not a tensor (use kiln_compiled_run_vals)",
                            g->values.data[g->outputs.data[i]].name);
  }
  for (int i = 0; i < g->outputs.len; i++) {
    if (!st) outputs[i] = out[i]->t, out[i]->t = NULL;
    kiln_val_free(out[i]);
  }
  for (int i = 0; i < n_in; i++)
    if (in[i]) in[i]->t = NULL, kiln_val_free(in[i]);
  if (in != in_small) free(in);
  if (out != out_small) free(out);
  return st;
}
