/* Pass shapefold: shape computations on values of known extents become constants.
 *   Shape(x)            -> i64[r] when the selected dims of x are known (start/end of
 *                          Shape-15 honoured), even if other dims are symbolic;
 *   Size(x)             -> i64 scalar when x is static;
 *   Gather(Shape(x), i) -> the selected dims, when those are known (i a constant);
 *   Slice(Shape(x), ..) -> the selected dims, when those are known (constant parameters).
 * The rest of a shape chain (Concat, Unsqueeze, Cast, Mul ...) then folds in constfold.
 * Exported models compute Reshape targets this way from a symbolic batch dimension, so the
 * Gather/Slice forms matter even when Shape(x) itself is not constant. */
#include <string.h>

#include "base/mutate.h"
#include "passes.h"
#include "rewrite.h"

/* The dims of value v, or NULL when v is not a tensor of known rank. */
static const kiln_type *tensor_type(const kiln_graph *g, int v) {
  if (v < 0) return NULL;
  const kiln_type *t = &g->values.data[v].type;
  return t->kind == KILN_TYPE_TENSOR && t->rank >= 0 ? t : NULL;
}

static int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* [*lo, *hi) of Shape's start/end attributes (opset 15) over rank r. */
static kiln_status shape_range(const kiln_node *n, int r, int *lo, int *hi) {
  int64_t s = 0, e = r;
  if (n->opset > (KILN_MUTANT(407) ? 15 : 14)) { /* Shape-15; mutant 407: read from opset 16 */
    KILN_TRY(kiln_node_int(n, "start", 0, &s));
    KILN_TRY(kiln_node_int(n, "end", r, &e));
  }
  if (s < 0 && !KILN_MUTANT(58)) s += r;  /* mutant 58: a negative start clamped to 0 */
  if (e < 0 && !KILN_MUTANT(226)) e += r; /* mutant 226: a negative end clamped to 0 */
  if (KILN_MUTANT(94) && kiln_node_attr(n, "end")) e += 1; /* mutant 94: end taken as inclusive */
  *lo = (int)clamp_i64(s, 0, r);
  *hi = (int)clamp_i64(e, 0, r);
  if (*hi < *lo) *hi = *lo;
  return KILN_OK;
}

/* Replaces value `v` by a constant i64 tensor of shape (rank, dims) holding vals. */
static kiln_status to_const(kiln_rw *rw, int v, int rank, const int64_t *dims, const int64_t *vals,
                            bool *done) {
  *done = false;
  if (rw->pinned[v]) return KILN_OK;
  kiln_tensor *t;
  KILN_TRY(kiln_tensor_new(KILN_I64, rank, dims, &t));
  memcpy(t->data, vals, (size_t)t->numel * sizeof(int64_t));
  int c;
  KILN_TRY(kiln_rw_add_const(rw, t, &c));
  bool was_output = rw->is_output[v];
  *done = kiln_rw_replace(rw, v, c);
  if (*done && !was_output) kiln_rw_swap_names(rw, v, c);
  return KILN_OK;
}

/* The dims that Shape node s produces: *known[i] false where symbolic. */
static kiln_status shape_dims(const kiln_graph *g, const kiln_node *s, int64_t *vals, bool *known,
                              int *len) {
  *len = -1;
  const kiln_type *t = tensor_type(g, s->inputs[0]);
  if (!t) return KILN_OK;
  int lo, hi;
  KILN_TRY(shape_range(s, t->rank, &lo, &hi));
  *len = hi - lo;
  for (int i = lo; i < hi; i++) {
    int src = KILN_MUTANT(15) ? i - lo : i; /* mutant 15: Shape's start not applied */
    vals[i - lo] = t->dims[src].value;
    known[i - lo] = t->dims[src].value >= 0;
  }
  return KILN_OK;
}

static kiln_status fold_shape(kiln_rw *rw, int i, bool *done) {
  const kiln_node *n = &rw->g->nodes.data[i];
  int64_t vals[KILN_MAX_RANK];
  bool known[KILN_MAX_RANK];
  int len;
  *done = false;
  KILN_TRY(shape_dims(rw->g, n, vals, known, &len));
  for (int k = 0; k < len - KILN_MUTANT(130); k++) /* mutant 130: the last dim not checked */
    if (!known[k]) return KILN_OK;
  if (len < 0) return KILN_OK;
  int64_t dim = len;
  return to_const(rw, n->outputs[0], 1, &dim, vals, done);
}

static kiln_status fold_size(kiln_rw *rw, int i, bool *done) {
  const kiln_node *n = &rw->g->nodes.data[i];
  const kiln_type *t = tensor_type(rw->g, n->inputs[0]);
  *done = false;
  if (!t || (!kiln_type_is_static(t) && !KILN_MUTANT(301))) return KILN_OK; /* mutant 301 */
  int64_t numel = 1;
  for (int k = 0; k < t->rank - (KILN_MUTANT(14) && t->rank > 0); k++) /* mutant 14: last dim */
    if (kiln_mul_overflow_i64(numel, t->dims[k].value, &numel)) return KILN_OK;
  return to_const(rw, n->outputs[0], 0, NULL, &numel, done);
}

/* The Shape node that defines value v, or NULL. */
static const kiln_node *shape_producer(const kiln_graph *g, int v) {
  int p = kiln_rw_producer(g, v);
  return p >= 0 && g->nodes.data[p].op == KILN_OP_Shape ? &g->nodes.data[p] : NULL;
}

static kiln_status fold_gather(kiln_rw *rw, int i, bool *done) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  const kiln_node *s = n->n_inputs == 2 ? shape_producer(g, n->inputs[0]) : NULL;
  const kiln_tensor *idx = n->n_inputs == 2 ? kiln_rw_const(g, n->inputs[1]) : NULL;
  int64_t axis, vals[KILN_MAX_RANK], out[KILN_MAX_RANK];
  bool known[KILN_MAX_RANK];
  int len;
  *done = false;
  if (!s || !idx || idx->rank > 1 || idx->numel > KILN_MAX_RANK || !kiln_dtype_is_int(idx->dtype))
    return KILN_OK;
  KILN_TRY(kiln_node_int(n, "axis", 0, &axis));
  KILN_TRY(shape_dims(g, s, vals, known, &len));
  if ((axis != 0 && axis != -1) || len < 0) return KILN_OK;
  for (int64_t k = 0; k < idx->numel; k++) {
    int64_t j = kiln_load_i64(idx->dtype, idx->data, (size_t)k);
    if (j < 0) j += KILN_MUTANT(200) ? tensor_type(g, s->inputs[0])->rank : len; /* mutant 200 */
    if (j < 0 || j >= len || (!known[j] && !KILN_MUTANT(299))) return KILN_OK;   /* mutant 299 */
    out[k] = vals[j];
  }
  if (KILN_MUTANT(128) && idx->rank == 0) /* mutant 128: a scalar index folds to a [1] vector */
    return to_const(rw, n->outputs[0], 1, &idx->numel, out, done);
  return to_const(rw, n->outputs[0], idx->rank, idx->dims, out, done);
}

/* Slice parameter input k (one element), or dflt when omitted; false if not constant. */
static bool slice_param(const kiln_graph *g, const kiln_node *n, int k, int64_t dflt,
                        int64_t *out) {
  int cnt;
  if (k >= n->n_inputs || n->inputs[k] < 0) return *out = dflt, true;
  return kiln_rw_const_ints(g, n->inputs[k], 1, out, &cnt) && cnt == 1;
}

/* Indices that Slice selects along one axis of extent len (ONNX semantics). */
static int slice_indices(int64_t len, int64_t start, int64_t end, int64_t step, int64_t *idx) {
  if (start < 0) start += len;
  if (end < 0) end += len;
  int cnt = 0;
  if (step > 0) {
    start = clamp_i64(start, 0, len - KILN_MUTANT(372)); /* mutant 372: start clamped to len - 1 */
    end = clamp_i64(end, 0, len - KILN_MUTANT(132));     /* mutant 132: end clamped to len - 1 */
    for (int64_t j = start; j < end && cnt < KILN_MAX_RANK; j += step) idx[cnt++] = j;
  } else {
    /* mutant 402: a start before the first element clamped to 0 (as for a positive step) */
    start = clamp_i64(start, KILN_MUTANT(402) ? 0 : -1, len - 1);
    end = clamp_i64(end, KILN_MUTANT(162) ? 0 : -1, len - 1); /* mutant 162: end clamped to 0 */
    for (int64_t j = start; j > end && cnt < KILN_MAX_RANK; j += step) idx[cnt++] = j;
  }
  return cnt;
}

static kiln_status fold_slice(kiln_rw *rw, int i, bool *done) {
  const kiln_graph *g = rw->g;
  const kiln_node *n = &g->nodes.data[i];
  const kiln_node *s = n->opset >= 10 && n->n_inputs >= 3 ? shape_producer(g, n->inputs[0]) : NULL;
  int64_t start, end, axis, step, vals[KILN_MAX_RANK], idx[KILN_MAX_RANK], out[KILN_MAX_RANK];
  bool known[KILN_MAX_RANK];
  int len;
  *done = false;
  if (!s || !slice_param(g, n, 1, 0, &start) || !slice_param(g, n, 2, 0, &end) ||
      !slice_param(g, n, 3, 0, &axis) || !slice_param(g, n, 4, 1, &step))
    return KILN_OK;
  if (KILN_MUTANT(227)) step = 1; /* mutant 227: the steps input ignored */
  KILN_TRY(shape_dims(g, s, vals, known, &len));
  if ((axis != 0 && axis != -1) || step == 0 || len < 0) return KILN_OK;
  int cnt = slice_indices(len, start, end, step, idx);
  for (int k = 0; k < cnt; k++) {
    if (!known[idx[k]]) return KILN_OK;
    out[k] = vals[idx[k]];
  }
  int64_t dim = cnt;
  return to_const(rw, n->outputs[0], 1, &dim, out, done);
}

static kiln_status fold_node(kiln_rw *rw, int i, bool *done) {
  const kiln_node *n = &rw->g->nodes.data[i];
  *done = false;
  if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0) return KILN_OK;
  switch (n->op) {
  case KILN_OP_Shape: return fold_shape(rw, i, done);
  case KILN_OP_Size: return fold_size(rw, i, done);
  case KILN_OP_Gather: return fold_gather(rw, i, done);
  case KILN_OP_Slice: return fold_slice(rw, i, done);
  default: return KILN_OK;
  }
}

kiln_status kiln_pass_shapefold(kiln_pass_ctx *ctx, kiln_graph *g) {
  kiln_rw rw;
  kiln_rw_begin(&rw, g);
  int n_nodes = g->nodes.len;
  for (int i = 0; i < n_nodes; i++) {
    bool done;
    kiln_status st = fold_node(&rw, i, &done);
    if (st) {
      kiln_rw_abort(&rw);
      return st;
    }
    if (!done) continue;
    ctx->changes++;
    if (kiln_rw_node_unused(&rw, i)) kiln_rw_kill_node(&rw, i);
  }
  return kiln_rw_end(&rw);
}
