/* Local checks of the backend layers: every kernel step against a reference of its own
 * fusion group, computed from the values the layer itself gave the step.
 *
 * The end-to-end bound of a value deep in a network propagates the worst case of every
 * earlier node and grows past any use (resnet50: non-finite from layer4 on), so a wrong
 * kernel late in the graph hides below it. Here the observer of the layer's own traced run
 * keeps a copy of each value a step produces (until the last kernel step that reads it);
 * when a kernel step reports its first value, the group nodes that compute what the step
 * produces are bounded with kiln_vref_compute_local, reading every other value from those
 * copies (graph inputs and constants as they are) as exact. Each value the step produces is
 * then checked against that local reference: the bound holds only the group's own rounding.
 *
 * A mismatch in a step whose local reference has unstable elements (a comparison or a
 * rounding to an integer that could flip within the rounding of its inputs) is counted as
 * unstable, not as a failure. Fallback steps run the reference kernels and alias steps only
 * view bytes: they are compared end to end only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

struct kiln_vlocal {
  const kiln_program *p;
  const kiln_graph *g;       /* p->graph */
  kiln_val *const *inputs;   /* one per graph input of g */
  kiln_step_trace_fn inject; /* runs first (or NULL) */
  void *inject_user;
  kiln_val **copy;    /* per value id: this layer's value, while a later kernel step reads it */
  bool *produced;     /* per value id: reported by an earlier or the current step */
  int *last_use;      /* per value id: the last kernel step whose group reads it, -1 none */
  int *input_index;   /* per value id: index in g->inputs, -1 */
  bool *mask;         /* per node: bounded for the current step */
  int step;           /* the step whose values are being reported, -1 before the first */
  kiln_vref *ref;     /* local reference of the current kernel step, NULL when none */
  bool step_unstable; /* the current step already counted as unstable */
  /* results */
  int n_steps, n_unchecked, n_unstable;
  double worst;
  bool failed;
  int fail_step, fail_value;
  char msg[320];
};

/* ---- the group of a kernel step ---- */
static bool in_group(const kiln_graph *g, const kiln_step *s, int node) {
  const kiln_node *first = &g->nodes.data[s->node];
  return node == s->node || (first->group > 0 && g->nodes.data[node].group == first->group);
}

/* last_use: for each kernel step, every input of every node of its group. */
static void compute_last_use(kiln_vlocal *lc) {
  const kiln_graph *g = lc->g;
  for (int v = 0; v < g->values.len; v++) lc->last_use[v] = -1;
  for (int s = 0; s < lc->p->steps.len; s++) {
    const kiln_step *st = &lc->p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL || st->node < 0) continue;
    for (int ni = 0; ni < g->nodes.len; ni++) {
      if (!in_group(g, st, ni)) continue;
      const kiln_node *n = &g->nodes.data[ni];
      for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) lc->last_use[n->inputs[i]] = s;
    }
  }
}

kiln_vlocal *kiln_vlocal_new(const kiln_program *p, kiln_val *const *inputs,
                             kiln_step_trace_fn inject, void *inject_user) {
  kiln_vlocal *lc = kiln_xcalloc(1, sizeof *lc);
  const kiln_graph *g = p->graph;
  size_t nv = (size_t)g->values.len + 1;
  lc->p = p, lc->g = g, lc->inputs = inputs;
  lc->inject = inject, lc->inject_user = inject_user;
  lc->copy = kiln_xcalloc(nv, sizeof *lc->copy);
  lc->produced = kiln_xcalloc(nv, sizeof *lc->produced);
  lc->last_use = kiln_xcalloc(nv, sizeof *lc->last_use);
  lc->input_index = kiln_xcalloc(nv, sizeof *lc->input_index);
  lc->mask = kiln_xcalloc((size_t)g->nodes.len + 1, sizeof *lc->mask);
  for (int v = 0; v < g->values.len; v++) lc->input_index[v] = -1;
  for (int i = 0; i < g->inputs.len; i++) lc->input_index[g->inputs.data[i]] = i;
  compute_last_use(lc);
  lc->step = -1;
  lc->fail_step = lc->fail_value = -1;
  return lc;
}

void kiln_vlocal_free(kiln_vlocal *lc) {
  if (!lc) return;
  for (int v = 0; v < lc->g->values.len; v++) kiln_val_free(lc->copy[v]);
  kiln_vref_free(lc->ref);
  free(lc->copy), free(lc->produced), free(lc->last_use), free(lc->input_index), free(lc->mask);
  free(lc);
}

static kiln_val *lookup(void *user, int v) {
  kiln_vlocal *lc = user;
  if (v < 0 || v >= lc->g->values.len) return NULL;
  if (lc->input_index[v] >= 0) return lc->inputs[lc->input_index[v]];
  return lc->copy[v];
}

/* The node of g that produces v within the step's group, or -1. */
static int group_producer(const kiln_vlocal *lc, const kiln_step *s, int v) {
  const kiln_value *val = &lc->g->values.data[v];
  return val->kind == KILN_VALUE_NODE && in_group(lc->g, s, val->node) ? val->node : -1;
}

/* mask: the group nodes that compute the step's values not produced before it, and,
 * backwards within the group, the nodes computing their inputs that no step produced. */
static void step_mask(kiln_vlocal *lc, const kiln_step *s) {
  const kiln_graph *g = lc->g;
  memset(lc->mask, 0, (size_t)g->nodes.len * sizeof *lc->mask);
  for (int a = 0; a < s->n_args; a++) {
    int v = s->args[a].kind == KILN_ARG_VALUE ? s->args[a].id : -1;
    int n = v >= 0 && !lc->produced[v] ? group_producer(lc, s, v) : -1;
    if (n >= 0) lc->mask[n] = true;
  }
  /* nodes are in topological order: one backward sweep closes the set */
  for (int ni = g->nodes.len - 1; ni >= 0; ni--) {
    if (!lc->mask[ni]) continue;
    const kiln_node *n = &g->nodes.data[ni];
    for (int i = 0; i < n->n_inputs; i++) {
      int v = n->inputs[i];
      int p = v >= 0 && !lc->produced[v] && lc->input_index[v] < 0 ? group_producer(lc, s, v) : -1;
      if (p >= 0) lc->mask[p] = true;
    }
  }
}

/* ---- step boundaries ---- */
static void release_dead(kiln_vlocal *lc, int step) {
  for (int v = 0; v < lc->g->values.len; v++)
    if (lc->copy[v] && lc->last_use[v] <= step) kiln_val_free(lc->copy[v]), lc->copy[v] = NULL;
}

static void begin_step(kiln_vlocal *lc, int step) {
  kiln_vref_free(lc->ref), lc->ref = NULL;
  if (lc->step >= 0) release_dead(lc, lc->step);
  lc->step = step;
  lc->step_unstable = false;
  const kiln_step *s = &lc->p->steps.data[step];
  if (s->kind != KILN_STEP_KERNEL || s->node < 0) return;
  step_mask(lc, s);
  kiln_status st = kiln_vref_compute_local_prec(lc->g, lc->mask, lookup, lc,
                                                lc->p->module->lower_precision, &lc->ref);
  lc->n_steps++;
  if (st) { /* an input the trace did not report (a sequence), an op without bounds */
    kiln_status_free(st);
    lc->n_unchecked++;
  }
}

static void check_value(kiln_vlocal *lc, int step, int v, const kiln_tensor *t) {
  if (!lc->ref || v >= lc->ref->n_values || !lc->ref->val[v]) return;
  kiln_val shell = {.kind = KILN_TYPE_TENSOR, .t = (kiln_tensor *)t};
  kiln_vcheck c;
  kiln_vref_check(lc->ref, v, &shell, &c);
  if (c.ok) {
    if (c.max_ratio > lc->worst) lc->worst = c.max_ratio;
    return;
  }
  if (lc->ref->n_unstable > 0) { /* a discrete result within rounding of its threshold */
    if (!lc->step_unstable) lc->n_unstable++;
    lc->step_unstable = true;
    return;
  }
  if (c.max_ratio > lc->worst) lc->worst = c.max_ratio;
  if (lc->failed) return;
  lc->failed = true, lc->fail_step = step, lc->fail_value = v;
  snprintf(lc->msg, sizeof lc->msg, "%s", c.msg);
}

void kiln_vlocal_observe(void *user, int step, int value, const kiln_tensor *t) {
  kiln_vlocal *lc = user;
  if (lc->inject) lc->inject(lc->inject_user, step, value, t);
  if (step < 0 || step >= lc->p->steps.len || value < 0 || value >= lc->g->values.len) return;
  if (step != lc->step) begin_step(lc, step);
  check_value(lc, step, value, t);
  lc->produced[value] = true;
  if (lc->last_use[value] > step && !lc->copy[value]) {
    kiln_tensor *c;
    kiln_status st = kiln_tensor_clone(t, &c);
    if (st) kiln_status_free(st); /* the reader's local check will say "unchecked" */
    else lc->copy[value] = kiln_val_tensor(c);
  }
}

/* ---- results ---- */
void kiln_vlocal_finish(kiln_vlocal *lc, kiln_layer_result *l) {
  kiln_vref_free(lc->ref), lc->ref = NULL;
  l->local_steps = lc->n_steps;
  l->local_unchecked = lc->n_unchecked;
  l->local_unstable = lc->n_unstable;
  l->local_ratio = lc->worst;
  if (!lc->failed || l->errored) return;
  l->local_failed = true;
  if (l->ok || !l->msg[0])
    snprintf(l->msg, sizeof l->msg, "local check of step %d: %s", lc->fail_step, lc->msg);
  l->ok = false;
}

bool kiln_vlocal_failure(const kiln_vlocal *lc, int *step, int *value) {
  *step = lc->fail_step, *value = lc->fail_value;
  return lc->failed;
}
