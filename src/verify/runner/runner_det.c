/* The determinism check of a cpu layer compiled for several threads: the compiled code runs
 * a second time on the same inputs and must give the same bits, step by step. A data race
 * in a kernel (two threads writing one element, a scratch buffer shared by the iterations
 * of a parallel loop) shows as a difference; the first step whose values differ is where.
 *
 * The first run records a hash of every value each step produces (through the step
 * observer, after the observer it wraps, which may inject faults); the second compares the
 * same sequence. String tensors are skipped (their data are pointers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

typedef struct det_entry {
  int step, value;
  uint64_t hash;
} det_entry;

struct kiln_vdet {
  kiln_step_trace_fn inner; /* the wrapped observer (or NULL) */
  void *inner_user;
  KILN_VEC(det_entry) seen; /* the first run's values, in the order they came */
  bool second;              /* comparing */
  int at;                   /* next entry of the second run */
  bool differs;
  int step, value; /* the first difference */
};

kiln_vdet *kiln_vdet_new(kiln_step_trace_fn inner, void *inner_user) {
  kiln_vdet *d = kiln_xcalloc(1, sizeof *d);
  d->inner = inner, d->inner_user = inner_user;
  d->step = d->value = -1;
  return d;
}

void kiln_vdet_free(kiln_vdet *d) {
  if (!d) return;
  kiln_vec_free(&d->seen);
  free(d);
}

static uint64_t tensor_hash(const kiln_tensor *t) {
  if (!t || t->dtype == KILN_STRING) return 0;
  uint64_t h = kiln_hash_bytes(t->data, kiln_tensor_nbytes(t), (uint64_t)t->numel);
  return h ^ (uint64_t)t->dtype;
}

void kiln_vdet_observe(void *user, int step, int value, const kiln_tensor *t) {
  kiln_vdet *d = user;
  if (d->inner) d->inner(d->inner_user, step, value, t);
  det_entry e = {step, value, tensor_hash(t)};
  if (!d->second) {
    kiln_vec_push(&d->seen, e);
    return;
  }
  if (d->differs) return;
  const det_entry *f = d->at < d->seen.len ? &d->seen.data[d->at] : NULL;
  d->at++;
  if (f && f->step == e.step && f->value == e.value && f->hash == e.hash) return;
  d->differs = true, d->step = step, d->value = value;
}

/* The first element where two tensor outputs differ in their bits, or -1. */
static int64_t first_diff(const kiln_val *a, const kiln_val *b) {
  if (!a || !b || a->kind != KILN_TYPE_TENSOR || b->kind != KILN_TYPE_TENSOR || !a->t || !b->t)
    return -1;
  const kiln_tensor *x = a->t, *y = b->t;
  if (x->dtype == KILN_STRING) return -1;
  if (x->dtype != y->dtype || x->numel != y->numel) return 0;
  size_t es = kiln_dtype_size(x->dtype);
  for (int64_t i = 0; es && i < x->numel; i++)
    if (memcmp((const char *)x->data + (size_t)i * es, (const char *)y->data + (size_t)i * es, es))
      return i;
  return -1;
}

/* What two runs that differ tell: at several threads a data race; with the arena filled
 * with other bytes (kiln_compiled_set_fill) a value read before it is written. */
static const char *cause(int threads, bool refilled) {
  if (!refilled) return "a data race in a kernel?";
  return threads > 1 ? "a value read before it is written (the second run's arena was filled "
                       "with other bytes), or a data race?"
                     : "a value read before it is written (the second run's arena was filled "
                       "with other bytes)?";
}

static void describe_diff(kiln_vrun *r, kiln_layer_result *l, int threads, bool refilled, int out,
                          const kiln_val *a, const kiln_val *b, int64_t i) {
  const char *name = r->g->values.data[r->g->outputs.data[out]].name;
  double x = kiln_load_f64(a->t->dtype, a->t->data, (size_t)i);
  double y = i < b->t->numel ? kiln_load_f64(b->t->dtype, b->t->data, (size_t)i) : NAN;
  snprintf(l->msg, sizeof l->msg,
           "not deterministic at %d threads: a second run gives other bits (output '%s' element "
           "%lld: %.9g, then %.9g); %s",
           threads, name, (long long)i, x, y, cause(threads, refilled));
}

bool kiln_vdet_rerun(kiln_vdet *d, kiln_vrun *r, kiln_compiled *c, int threads, bool refilled,
                     kiln_step_trace_fn inject, kiln_val *const *first, kiln_layer_result *l) {
  int n_out = kiln_compiled_graph(c)->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  d->second = true, d->at = 0;
  d->inner = inject, d->inner_user = r->o->inject_user;
  kiln_status st = kiln_compiled_run_trace(c, r->n_in, r->inputs, outs, kiln_vdet_observe, d);
  bool bad = false;
  if (st) { /* the first run worked: failing now is a difference too */
    snprintf(l->msg, sizeof l->msg, "not deterministic at %d threads: a second run failed: %s",
             threads, kiln_status_message(st));
    kiln_status_free(st);
    bad = true;
  }
  for (int i = 0; !bad && i < n_out && i < r->g->outputs.len; i++) {
    int64_t at = first_diff(first[i], outs[i]);
    if (at >= 0) describe_diff(r, l, threads, refilled, i, first[i], outs[i], at), bad = true;
  }
  if (!bad && d->differs) {
    snprintf(l->msg, sizeof l->msg,
             "not deterministic at %d threads: a second run gives other bits in step %d (the "
             "outputs agree); %s",
             threads, d->step, cause(threads, refilled));
    bad = true;
  }
  if (bad) l->ok = false, l->max_ratio = INFINITY;
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]);
  free(outs);
  return bad;
}

/* Every input a tensor and every graph output a tensor: the run can go through
 * kiln_compiled_run, the C API's entry. */
static bool tensors_only(const kiln_vrun *r, const kiln_compiled *c) {
  const kiln_graph *g = kiln_compiled_graph(c);
  for (int i = 0; i < r->n_in; i++)
    if (r->inputs[i] && (r->inputs[i]->kind != KILN_TYPE_TENSOR || !r->inputs[i]->t)) return false;
  for (int i = 0; i < g->outputs.len; i++)
    if (g->values.data[g->outputs.data[i]].type.kind != KILN_TYPE_TENSOR) return false;
  return true;
}

bool kiln_vdet_untraced(kiln_vrun *r, kiln_compiled *c, int threads, kiln_val *const *first,
                        kiln_layer_result *l) {
  int n_out = kiln_compiled_graph(c)->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st;
  if (tensors_only(r, c)) {
    kiln_tensor **in = kiln_xcalloc((size_t)r->n_in + 1, sizeof *in);
    kiln_tensor **ot = kiln_xcalloc((size_t)n_out + 1, sizeof *ot);
    for (int i = 0; i < r->n_in; i++) in[i] = r->inputs[i] ? r->inputs[i]->t : NULL;
    st = kiln_compiled_run(c, r->n_in, in, ot);
    for (int i = 0; i < n_out; i++) outs[i] = ot[i] ? kiln_val_tensor(ot[i]) : NULL;
    free(in), free(ot);
  } else {
    st = kiln_compiled_run_vals(c, r->n_in, r->inputs, outs);
  }
  bool bad = false;
  if (st) {
    snprintf(l->msg, sizeof l->msg,
             "the untraced run (as kiln run and the C API execute) failed where the traced one "
             "worked: %s",
             kiln_status_message(st));
    kiln_status_free(st);
    bad = true;
  }
  for (int i = 0; !bad && i < n_out && i < r->g->outputs.len; i++) {
    int64_t at = first_diff(first[i], outs[i]);
    if (at < 0) continue;
    const kiln_val *a = first[i], *b = outs[i];
    double x = kiln_load_f64(a->t->dtype, a->t->data, (size_t)at);
    double y =
        b && b->t && at < b->t->numel ? kiln_load_f64(b->t->dtype, b->t->data, (size_t)at) : NAN;
    snprintf(l->msg, sizeof l->msg,
             "the untraced run (as kiln run and the C API execute, %d threads) gives other bits "
             "than the traced one: output '%s' element %lld: %.9g, then %.9g (a value the "
             "trace keeps alive, or a step loop that differs from the traced one?)",
             threads, r->g->values.data[r->g->outputs.data[i]].name, (long long)at, x, y);
    bad = true;
  }
  if (bad) l->ok = false, l->max_ratio = INFINITY;
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]);
  free(outs);
  return bad;
}

bool kiln_vdet_where(const kiln_vdet *d, int *step, int *value) {
  *step = d->step, *value = d->value;
  return d->differs;
}
