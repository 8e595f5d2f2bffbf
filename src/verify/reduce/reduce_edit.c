/* The reducer's edits (see reduce.h for the list and their order). Each edit builds a view of
 * the current graph and hands it to red_try(); ids are looked up again after every success,
 * since the kept candidate is a new graph. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce_internal.h"

/* ---- delta debugging over a list that shrinks (outputs, nodes) ----
 * Tries to delete chunks [lo, hi) of the current list: the list is cut into k chunks, k = 2
 * at first; after a success k drops by one (at least 2), after a round without one it
 * doubles, up to one item per chunk. */
typedef int (*count_fn)(const reducer *R);
typedef bool (*drop_fn)(reducer *R, int lo, int hi);

static bool ddmin(reducer *R, count_fn count, drop_fn drop, int keep_at_least) {
  bool any = false;
  int k = 2;
  while (!red_limit(R)) {
    int n = count(R);
    if (n <= keep_at_least) break;
    if (k > n) k = n;
    bool hit = false;
    for (int c = 0; c < k && !hit && !R->stop; c++) {
      int lo = (int)((int64_t)c * n / k), hi = (int)((int64_t)(c + 1) * n / k);
      if (hi > lo && n - (hi - lo) >= keep_at_least) hit = drop(R, lo, hi);
    }
    if (hit) {
      any = true;
      k = k > 2 ? k - 1 : 2;
    } else if (k >= n) {
      break;
    } else {
      k = 2 * k < n ? 2 * k : n;
    }
  }
  return any;
}

/* ---- outputs ---- */

static int count_outputs(const reducer *R) {
  return R->cur.g->outputs.len;
}

static bool drop_outputs(reducer *R, int lo, int hi) {
  red_view v;
  red_view_init(&v, &R->cur);
  memmove(v.outputs.data + lo, v.outputs.data + hi, (size_t)(v.outputs.len - hi) * sizeof(int));
  v.outputs.len -= hi - lo;
  snprintf(v.what, sizeof v.what, "drop outputs %d..%d", lo, hi - 1);
  return red_try(R, &v);
}

bool red_outputs(reducer *R) {
  return ddmin(R, count_outputs, drop_outputs, 1);
}

/* ---- nodes ---- */

static int count_nodes(const reducer *R) {
  return R->cur.g->nodes.len;
}

/* Deletes nodes [lo, hi): what live nodes read of them becomes inputs (cuts). */
static bool cut_nodes(reducer *R, int lo, int hi) {
  if (!red_refs(R)) return false;
  red_view v;
  red_view_init(&v, &R->cur);
  for (int n = lo; n < hi; n++) v.drop[n] = true;
  const kiln_node *nd = &R->cur.g->nodes.data[lo];
  if (hi - lo == 1)
    snprintf(v.what, sizeof v.what, "cut node %d (%s)", lo, nd->op_type ? nd->op_type : "?");
  else snprintf(v.what, sizeof v.what, "cut nodes %d..%d", lo, hi - 1);
  return red_try(R, &v);
}

bool red_nodes_ddmin(reducer *R) {
  return ddmin(R, count_nodes, cut_nodes, 0);
}

/* Readers of every output of node n read input `in` of n instead (all of identical type).
 * False when some used output cannot be bypassed. */
static bool bypass_node(reducer *R, int n, int in_k) {
  const kiln_graph *g = R->cur.g;
  const kiln_node *nd = &g->nodes.data[n];
  int in = nd->inputs[in_k];
  if (in < 0 || g->values.data[in].type.kind != KILN_TYPE_TENSOR) return false;
  for (int k = 0; k < nd->n_outputs; k++) {
    int o = nd->outputs[k];
    if (o < 0) continue;
    if (R->cur.sub_read[o] || !kiln_type_equal(&g->values.data[o].type, &g->values.data[in].type))
      return false;
  }
  red_view v;
  red_view_init(&v, &R->cur);
  for (int k = 0; k < nd->n_outputs; k++)
    if (nd->outputs[k] >= 0) v.repl[nd->outputs[k]] = in;
  snprintf(v.what, sizeof v.what, "bypass node %d (%s) by its input %d", n,
           nd->op_type ? nd->op_type : "?", in_k);
  return red_try(R, &v);
}

/* One node at a time: a bypass through each input of the same type, else a cut. */
bool red_nodes_one(reducer *R) {
  bool any = false;
  for (int n = 0; n < R->cur.g->nodes.len && !red_limit(R); n++) {
    bool done = false;
    int n_in = R->cur.g->nodes.data[n].n_inputs;
    for (int k = 0; k < n_in && !done && !R->stop; k++) {
      bool seen = false; /* the same value twice (Mul(x, x)) is tried once */
      for (int j = 0; j < k; j++)
        seen |= R->cur.g->nodes.data[n].inputs[j] == R->cur.g->nodes.data[n].inputs[k];
      if (!seen) done = bypass_node(R, n, k);
    }
    if (!done && !R->stop) done = cut_nodes(R, n, n + 1);
    if (done) {
      any = true;
      n--; /* the next node now has this index (or an earlier one was removed with it) */
      if (n < -1) n = -1;
    }
  }
  return any;
}

/* ---- inputs ---- */

/* A graph input becomes a constant holding its data. */
bool red_inputs(reducer *R) {
  bool any = false;
  for (int i = 0; i < R->cur.g->inputs.len && !red_limit(R); i++) {
    const kiln_val *d = R->cur.in[i];
    if (!d || d->kind != KILN_TYPE_TENSOR || !d->t) continue;
    red_view v;
    red_view_init(&v, &R->cur);
    int id = R->cur.g->inputs.data[i];
    v.values[id].kind = KILN_VALUE_CONST;
    v.values[id].data = d->t; /* read by the printer only */
    snprintf(v.what, sizeof v.what, "input %d '%s' becomes a constant", i, v.values[id].name);
    if (red_try(R, &v)) any = true, i--;
  }
  return any;
}

/* ---- shapes ---- */

/* The first m entries of t along axis (a new tensor), or NULL for strings. */
static kiln_tensor *slice_head(const kiln_tensor *t, int axis, int64_t m) {
  if (t->dtype == KILN_STRING || axis >= t->rank || m > t->dims[axis]) return NULL;
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, t->dims, sizeof dims);
  dims[axis] = m;
  kiln_tensor *o = NULL;
  kiln_status s = kiln_tensor_new(t->dtype, t->rank, dims, &o);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  size_t es = kiln_dtype_size(t->dtype);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; a++) outer *= t->dims[a];
  for (int a = axis + 1; a < t->rank; a++) inner *= t->dims[a];
  size_t row_in = (size_t)(t->dims[axis] * inner) * es, row_out = (size_t)(m * inner) * es;
  for (int64_t r = 0; r < outer && row_out; r++)
    memcpy((char *)o->data + (size_t)r * row_out, (const char *)t->data + (size_t)r * row_in,
           row_out);
  return o;
}

/* The tensor of value id in the view (input data or constant), or NULL. */
static const kiln_tensor *view_tensor(const red_view *v, int id) {
  const kiln_value *x = &v->values[id];
  if (x->kind == KILN_VALUE_CONST) return x->data;
  if (x->kind == KILN_VALUE_INPUT && v->data[id] && v->data[id]->kind == KILN_TYPE_TENSOR)
    return v->data[id]->t;
  return NULL;
}

/* Shrinks axis of value id to m entries in the view. */
static bool shrink_value(red_view *v, int id, int axis, int64_t m) {
  const kiln_tensor *t = view_tensor(v, id);
  kiln_tensor *o = t ? slice_head(t, axis, m) : NULL;
  if (!o) return false;
  kiln_value *x = &v->values[id];
  if (x->kind == KILN_VALUE_CONST) {
    red_view_own_tensor(v, o);
    x->data = o;
  } else {
    kiln_val *d = kiln_val_tensor(o);
    red_view_own_val(v, d);
    v->data[id] = d;
  }
  if (x->type.kind == KILN_TYPE_TENSOR && axis < x->type.rank && x->type.dims[axis].value >= 0)
    x->type.dims[axis].value = m;
  return true;
}

/* Small integer constants (shape-like: rank <= 1, at most 8 entries) hold extents. */
static bool shape_like(const kiln_tensor *t) {
  return t && (t->dtype == KILN_I64 || t->dtype == KILN_I32) && t->rank <= 1 && t->numel <= 8;
}

/* Every extent d of inputs and constants becomes m; shape-like constants' entries too. */
static bool shrink_extent(reducer *R, int64_t d, int64_t m) {
  red_view v;
  red_view_init(&v, &R->cur);
  bool any = false;
  for (int id = 0; id < v.n_values; id++) {
    const kiln_tensor *t = view_tensor(&v, id);
    if (!t) continue;
    if (v.values[id].kind == KILN_VALUE_CONST && shape_like(t)) {
      kiln_tensor *c = NULL;
      kiln_status s = kiln_tensor_clone(t, &c);
      if (s) {
        kiln_status_free(s);
        continue;
      }
      for (int64_t i = 0; i < c->numel; i++)
        if (kiln_load_i64(c->dtype, c->data, (size_t)i) == d)
          kiln_store_i64(c->dtype, c->data, (size_t)i, m), any = true;
      red_view_own_tensor(&v, c);
      v.values[id].data = c;
      continue;
    }
    for (int a = 0; a < t->rank; a++)
      if (view_tensor(&v, id)->dims[a] == d) any |= shrink_value(&v, id, a, m);
  }
  snprintf(v.what, sizeof v.what, "extent %lld -> %lld everywhere", (long long)d, (long long)m);
  if (!any) {
    red_view_free(&v);
    return false;
  }
  return red_try(R, &v);
}

static bool shrink_one(reducer *R, int id, int axis, int64_t m) {
  red_view v;
  red_view_init(&v, &R->cur);
  if (!shrink_value(&v, id, axis, m)) {
    red_view_free(&v);
    return false;
  }
  snprintf(v.what, sizeof v.what, "'%s' axis %d -> %lld", v.values[id].name, axis, (long long)m);
  return red_try(R, &v);
}

/* The largest extent > 1 below `below` among inputs and constants; 0 when none. */
static int64_t next_extent(reducer *R, int64_t below) {
  red_view v;
  red_view_init(&v, &R->cur);
  int64_t best = 0;
  for (int id = 0; id < v.n_values; id++) {
    const kiln_tensor *t = view_tensor(&v, id);
    if (!t || (v.values[id].kind == KILN_VALUE_CONST && shape_like(t))) continue;
    for (int a = 0; a < t->rank; a++)
      if (t->dims[a] > 1 && t->dims[a] < below && t->dims[a] > best) best = t->dims[a];
  }
  red_view_free(&v);
  return best;
}

bool red_shapes(reducer *R) {
  bool any = false;
  for (int64_t d = next_extent(R, INT64_MAX); d > 1 && !red_limit(R); d = next_extent(R, d)) {
    if (shrink_extent(R, d, 1)) any = true;
    else if (d / 2 > 1 && shrink_extent(R, d, d / 2)) any = true, d++; /* again from d/2 */
  }
  for (int id = 0; id < R->cur.g->values.len && !red_limit(R); id++) {
    red_view v;
    red_view_init(&v, &R->cur);
    const kiln_tensor *t = view_tensor(&v, id);
    int rank = t ? t->rank : 0;
    int64_t dims[KILN_MAX_RANK] = {0};
    for (int a = 0; a < rank; a++) dims[a] = t->dims[a];
    red_view_free(&v);
    for (int a = 0; a < rank && !R->stop; a++) {
      if (dims[a] <= 1) continue;
      bool hit = shrink_one(R, id, a, 1) || (dims[a] / 2 > 1 && shrink_one(R, id, a, dims[a] / 2));
      if (hit) {
        any = true;
        id--; /* ids changed: look at the graph again from the same place */
        break;
      }
    }
  }
  return any;
}

/* ---- attributes ---- */

/* How simple an attribute value is: 0 absent, then 0/1 (or 1.0/0.0) values, 3 anything. */
static int attr_rank(const kiln_attr *a) {
  bool all0 = true, all1 = true;
  switch (a->kind) {
  case KILN_ATTR_INT: return a->i == 0 ? 1 : a->i == 1 ? 2 : 3;
  case KILN_ATTR_FLOAT: return a->f == 1.0f ? 1 : a->f == 0.0f ? 2 : 3;
  case KILN_ATTR_INTS:
    for (int i = 0; i < a->n; i++) all0 &= a->ints[i] == 0, all1 &= a->ints[i] == 1;
    return all0 ? 1 : all1 ? 2 : 3;
  case KILN_ATTR_FLOATS:
    for (int i = 0; i < a->n; i++) all1 &= a->floats[i] == 1.0f, all0 &= a->floats[i] == 0.0f;
    return all1 ? 1 : all0 ? 2 : 3;
  default: return 3;
  }
}

/* Sets attribute a of the view's node n to the value of rank r (0: removes it). */
static void attr_set(red_view *v, int n, int a, int r) {
  kiln_node *nd = &v->nodes[n];
  kiln_attr *attrs = red_view_alloc(v, (size_t)nd->n_attrs * sizeof *attrs);
  memcpy(attrs, nd->attrs, (size_t)nd->n_attrs * sizeof *attrs);
  nd->attrs = attrs;
  kiln_attr *at = &attrs[a];
  if (r == 0) {
    memmove(at, at + 1, (size_t)(nd->n_attrs - a - 1) * sizeof *at);
    nd->n_attrs--;
    return;
  }
  if (at->kind == KILN_ATTR_INT) at->i = r == 1 ? 0 : 1;
  if (at->kind == KILN_ATTR_FLOAT) at->f = r == 1 ? 1.0f : 0.0f;
  if (at->kind == KILN_ATTR_INTS) {
    int64_t *x = red_view_alloc(v, (size_t)at->n * sizeof *x);
    for (int i = 0; i < at->n; i++) x[i] = r == 1 ? 0 : 1;
    at->ints = x;
  }
  if (at->kind == KILN_ATTR_FLOATS) {
    float *x = red_view_alloc(v, (size_t)at->n * sizeof *x);
    for (int i = 0; i < at->n; i++) x[i] = r == 1 ? 1.0f : 0.0f;
    at->floats = x;
  }
}

static bool attr_try(reducer *R, int n, int a, int r) {
  red_view v;
  red_view_init(&v, &R->cur);
  const kiln_node *nd = &v.nodes[n];
  snprintf(v.what, sizeof v.what, "node %d (%s) attribute %s %s", n,
           nd->op_type ? nd->op_type : "?", nd->attrs[a].name,
           r == 0   ? "removed"
           : r == 1 ? "simplified"
                    : "set to 1");
  attr_set(&v, n, a, r);
  return red_try(R, &v);
}

bool red_attrs(reducer *R) {
  bool any = false;
  for (int n = 0; n < R->cur.g->nodes.len && !red_limit(R); n++) {
    for (int a = 0; n < R->cur.g->nodes.len && a < R->cur.g->nodes.data[n].n_attrs; a++) {
      const kiln_attr *at = &R->cur.g->nodes.data[n].attrs[a];
      if (at->kind == KILN_ATTR_GRAPH || at->kind == KILN_ATTR_GRAPHS) continue;
      int rank = attr_rank(at);
      bool simple = at->kind == KILN_ATTR_INT || at->kind == KILN_ATTR_FLOAT ||
                    at->kind == KILN_ATTR_INTS || at->kind == KILN_ATTR_FLOATS;
      for (int r = 0; r < rank && !R->stop; r++) {
        if (r > 0 && !simple) break;
        if (!attr_try(R, n, a, r)) continue;
        any = true;
        if (r == 0) a--; /* the next attribute moved into this slot */
        break;
      }
      if (R->stop) break;
    }
  }
  return any;
}

/* ---- data ---- */

/* 0: all zeros, 1: all ones, 2: small integers (|x| <= 4), 3: anything else. */
static int data_rank(const kiln_tensor *t) {
  bool all0 = true, all1 = true, small = true;
  for (int64_t i = 0; i < t->numel && small; i++) {
    double x = kiln_load_f64(t->dtype, t->data, (size_t)i);
    all0 &= x == 0;
    all1 &= x == 1;
    small &= x == nearbyint(x) && fabs(x) <= 4;
  }
  return all0 ? 0 : all1 ? 1 : small ? 2 : 3;
}

static kiln_tensor *data_simplified(const kiln_tensor *t, int r) {
  kiln_tensor *o = NULL;
  kiln_status s = kiln_tensor_clone(t, &o);
  if (s) {
    kiln_status_free(s);
    return NULL;
  }
  bool is_uint = kiln_dtype_class_of(t->dtype) == KILN_CLASS_UINT;
  for (int64_t i = 0; i < t->numel; i++) {
    double x = kiln_load_f64(t->dtype, t->data, (size_t)i), y = r;
    if (r == 2) y = isnan(x) ? 0 : fmin(fmax(nearbyint(x), is_uint ? 0 : -4), 4);
    if (kiln_dtype_is_float(t->dtype)) kiln_store_f64(o->dtype, o->data, (size_t)i, y);
    else kiln_store_i64(o->dtype, o->data, (size_t)i, (int64_t)y);
  }
  return o;
}

static bool data_try(reducer *R, int id, int r) {
  red_view v;
  red_view_init(&v, &R->cur);
  const kiln_tensor *t = view_tensor(&v, id);
  kiln_tensor *o = t ? data_simplified(t, r) : NULL;
  if (!o) {
    red_view_free(&v);
    return false;
  }
  if (v.values[id].kind == KILN_VALUE_CONST) {
    red_view_own_tensor(&v, o);
    v.values[id].data = o;
  } else {
    kiln_val *d = kiln_val_tensor(o);
    red_view_own_val(&v, d);
    v.data[id] = d;
  }
  static const char *const what[] = {"zeros", "ones", "small integers"};
  snprintf(v.what, sizeof v.what, "'%s' data -> %s", v.values[id].name, what[r]);
  return red_try(R, &v);
}

/* Inputs, then constants: data becomes zeros, ones or small integers. Ids are stable across
 * these edits (no value appears or disappears), so one sweep suffices. */
bool red_data(reducer *R) {
  bool any = false;
  for (int id = 0; id < R->cur.g->values.len && !red_limit(R); id++) {
    red_view v;
    red_view_init(&v, &R->cur);
    const kiln_tensor *t = view_tensor(&v, id);
    bool numeric = t && t->dtype != KILN_STRING && kiln_dtype_class_of(t->dtype) != KILN_CLASS_NONE;
    int rank = numeric ? data_rank(t) : 0;
    bool is_bool = numeric && t->dtype == KILN_BOOL;
    red_view_free(&v);
    for (int r = 0; r < rank && !R->stop; r++) {
      if (is_bool && r == 2) break;
      if (data_try(R, id, r)) {
        any = true;
        break;
      }
    }
  }
  return any;
}
