/* The compiled code against the tile interpreter, bit for bit (kiln_verify_opts.exact).
 *
 * The cpu layer's compiled C and the tile interpreter run one tile program, and every
 * operator of the tile IR has one meaning in its operand type (tile.h): f32 arithmetic in
 * float, f64 in double, narrow floats through their rounding helpers, integers wrapping.
 * Where a kernel holds only correctly rounded operations (+, -, *, /, sqrt, comparisons,
 * min, max, selects, casts, floor, ceil, round, integer and bit operations), IEEE arithmetic
 * leaves the C compiler no freedom: the compiled kernel must give the interpreter's bits.
 *
 * The error bounds against the double reference cannot see a kernel that computes more
 * precisely than its program says: an f32 expression evaluated in double (a literal without
 * its f suffix), a product and a sum fused into one fma by the C compiler (the flags that
 * forbid it lost), excess precision kept in a register. Each gives a result closer to the
 * reference, never farther, so every bound holds; yet the model then computes otherwise on
 * another machine or compiler, and the cancellations the bounds judge (x + 1e8 - 1e8) come
 * out differently. This check sees them.
 *
 * The steps are compared in order, each value a step produces, bit for bit (NaNs of any
 * payload are equal: which operand's payload an operation passes on is the machine's). At
 * the first step whose values differ, a kernel step whose kernel is exact fails the layer
 * (every value before it agreed, so it read the same bits); any other step (a kernel with a
 * transcendental operator, whose libm result C may compute otherwise) ends the comparison,
 * as every later step may read the value that differs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

/* Values larger than this in all are not compared (the copies would double the memory). */
#define EXACT_MAX_BYTES ((size_t)64 << 20)

typedef struct rec {
  int n_values;
  kiln_tensor **copy; /* per value id: what the run produced, or NULL */
  int *step;          /* per value id: the step that produced it, -1 */
  size_t bytes;
  bool over;                 /* EXACT_MAX_BYTES passed: no judgment */
  kiln_step_trace_fn inject; /* the options' fault injector in this layer, runs first */
  void *inject_user;
} rec;

static void rec_init(rec *x, int n_values) {
  memset(x, 0, sizeof *x);
  x->n_values = n_values;
  x->copy = kiln_xcalloc((size_t)n_values + 1, sizeof *x->copy);
  x->step = kiln_xmalloc(sizeof(int) * ((size_t)n_values + 1));
  for (int i = 0; i < n_values; i++) x->step[i] = -1;
}

static void rec_free(rec *x) {
  for (int i = 0; i < x->n_values; i++) kiln_tensor_free(x->copy[i]);
  free(x->copy);
  free(x->step);
}

static void record(void *user, int step, int value, const kiln_tensor *t) {
  rec *x = user;
  if (x->inject) x->inject(x->inject_user, step, value, t);
  if (value < 0 || value >= x->n_values || x->copy[value] || x->over || !t) return;
  size_t n = kiln_tensor_nbytes(t);
  if (x->bytes + n > EXACT_MAX_BYTES) {
    x->over = true;
    return;
  }
  kiln_status st = kiln_tensor_clone(t, &x->copy[value]);
  if (st) { /* out of memory here is no finding: the comparison is left out */
    kiln_status_free(st);
    x->over = true;
    return;
  }
  x->bytes += n, x->step[value] = step;
}

/* ---- exact kernels ---- */
static bool expr_exact(const kiln_texpr *e) {
  if (!e) return true;
  if (e->kind == KILN_TE_OP) {
    if (kiln_top_class(e->op) == 'f' && e->op != KILN_TOP_SQRT && e->op != KILN_TOP_FLOOR &&
        e->op != KILN_TOP_CEIL && e->op != KILN_TOP_ROUND && e->op != KILN_TOP_ISNAN &&
        e->op != KILN_TOP_ISINF)
      return false; /* exp, log, sin, tanh, erf, pow, atan2, ...: libm's, not IEEE's */
    for (int i = 0; i < kiln_top_arity(e->op); i++)
      if (!expr_exact(e->args[i])) return false;
    return true;
  }
  if (e->kind == KILN_TE_LOAD) return expr_exact(e->index);
  if (e->kind == KILN_TE_CAST) return expr_exact(e->args[0]);
  return true;
}

static bool block_exact(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (!expr_exact(s->extent) || !expr_exact(s->cond) || !expr_exact(s->index) ||
        !expr_exact(s->value) || !block_exact(&s->body) || !block_exact(&s->orelse))
      return false;
  }
  return true;
}

/* ---- comparing two copies ---- */
static bool is_nan_at(kiln_dtype t, const void *p, int64_t i) {
  return kiln_dtype_is_float(t) && isnan(kiln_load_f64(t, p, (size_t)i));
}

/* The first element at which a and b differ (-1: none; -2: shapes or dtypes differ). */
static int64_t first_diff(const kiln_tensor *a, const kiln_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel) return -2;
  if (a->dtype == KILN_STRING) return -1; /* no kernel makes strings */
  size_t es = kiln_dtype_size(a->dtype);
  const unsigned char *pa = a->data, *pb = b->data;
  if (es == 0 || !pa || !pb) return -1;
  if (!memcmp(pa, pb, es * (size_t)a->numel)) return -1;
  for (int64_t i = 0; i < a->numel; i++) {
    if (!memcmp(pa + es * (size_t)i, pb + es * (size_t)i, es)) continue;
    if (is_nan_at(a->dtype, pa, i) && is_nan_at(b->dtype, pb, i)) continue;
    return i;
  }
  return -1;
}

static double static_bytes(const kiln_graph *g) {
  double total = 0;
  for (int v = 0; v < g->values.len; v++) {
    const kiln_type *t = &g->values.data[v].type;
    if (t->kind != KILN_TYPE_TENSOR || t->rank < 0) continue;
    double n = (double)kiln_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) n *= t->dims[d].value > 0 ? (double)t->dims[d].value : 1;
    total += n;
  }
  return total;
}

bool kiln_vrun_exact(kiln_vrun *r, kiln_compiled *c, kiln_step_trace_fn inject, void *inject_user,
                     kiln_layer_result *l, int *fail_step, int *fail_value) {
  *fail_step = *fail_value = -1;
  const kiln_program *p = kiln_compiled_program(c);
  if (!r->o->exact || !r->all_tensors || !p || !p->graph) return false;
  if (static_bytes(p->graph) > (double)EXACT_MAX_BYTES) return false;
  int nv = p->graph->values.len;
  rec ci, ti;
  rec_init(&ci, nv), rec_init(&ti, nv);
  ci.inject = inject, ci.inject_user = inject_user;
  kiln_status st = kiln_vrun_trace_compiled(r, c, record, &ci);
  if (!st) st = kiln_vrun_trace_interp(r, p, record, &ti);
  bool failed = false;
  if (st) { /* the layer's own runs succeeded: a run that fails now is no bit-for-bit finding */
    kiln_status_free(st);
  } else if (!ci.over && !ti.over) {
    for (int s = 0; s < p->steps.len && !failed; s++) {
      int v_bad = -1;
      int64_t at = -1;
      for (int v = 0; v < nv && v_bad < 0; v++) {
        if (ci.step[v] != s || ti.step[v] != s) continue;
        int64_t d = first_diff(ci.copy[v], ti.copy[v]);
        if (d != -1) v_bad = v, at = d;
      }
      if (v_bad < 0) continue;
      const kiln_step *ps = &p->steps.data[s];
      if (ps->kind != KILN_STEP_KERNEL || !block_exact(&p->module->kernels.data[ps->kernel]->body))
        break; /* a value that may differ: nothing after it is judged */
      const kiln_tensor *a = ci.copy[v_bad], *b = ti.copy[v_bad];
      char ta[64], tb[64];
      if (at >= 0)
        snprintf(l->msg, sizeof l->msg,
                 "value '%.60s' of an exactly rounded kernel differs from the tile interpreter's "
                 "at element %lld: %.9g, interpreter %.9g (every earlier value agreed bit for bit)",
                 p->graph->values.data[v_bad].name, (long long)at,
                 kiln_load_f64(a->dtype, a->data, (size_t)at),
                 kiln_load_f64(b->dtype, b->data, (size_t)at));
      else
        snprintf(l->msg, sizeof l->msg,
                 "value '%.60s' of an exactly rounded kernel is %s, the tile interpreter's %s",
                 p->graph->values.data[v_bad].name, kiln_tensor_type_str(a, ta, sizeof ta),
                 kiln_tensor_type_str(b, tb, sizeof tb));
      l->ok = false, l->max_ratio = INFINITY;
      *fail_step = s, *fail_value = v_bad, failed = true;
    }
  }
  rec_free(&ci), rec_free(&ti);
  return failed;
}
