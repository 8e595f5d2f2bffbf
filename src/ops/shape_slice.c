/* Ops that cut, join or pad along axes: Concat, Split, Slice, Pad,
 * CenterCropPad, ReverseSequence, Trilu. */
#include <stdlib.h>
#include <string.h>

#include "attr_decode.h"
#include "shape_internal.h"

/* Reads at most max ints of a rank-0/1 integer tensor into buf. */
static kiln_status read_ints(const kiln_node *n, const kiln_tensor *t, const char *what,
                             int64_t *buf, int max, int *k) {
  if (!kiln_dtype_is_int(t->dtype) || t->rank > 1)
    return kiln_shape_err(n, "%s must be a 1-D integer tensor", what);
  if (t->numel > max)
    return kiln_shape_err(n, "%s has %lld entries, at most %d expected", what, (long long)t->numel,
                          max);
  for (int64_t i = 0; i < t->numel; i++) buf[i] = kiln_load_i64(t->dtype, t->data, (size_t)i);
  *k = (int)t->numel;
  return KILN_OK;
}

/* ---- Concat ---- */
static kiln_status concat_axis(const kiln_node *n, int rank, int *out) {
  const kiln_attr *a = kiln_node_attr(n, "axis");
  if (!a && n->opset >= 4) return kiln_shape_err(n, "attribute 'axis' is missing");
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  int64_t axis = da.axis;
  if (axis < -rank || axis >= rank)
    return kiln_shape_err(n, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return KILN_OK;
}

static kiln_status eval_concat(kiln_eval_ctx *ctx) {
  const kiln_tensor *x0;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x0));
  int axis;
  KILN_TRY(concat_axis(ctx->node, x0->rank, &axis));
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, x0->dims, sizeof dims);
  dims[axis] = 0;
  for (int k = 0; k < ctx->n_in; k++) {
    const kiln_tensor *x;
    KILN_TRY(kiln_eval_in_req(ctx, k, &x));
    if (x->rank != x0->rank || x->dtype != x0->dtype)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "input %d has another rank or dtype", k);
    for (int d = 0; d < x->rank; d++)
      if (d != axis && x->dims[d] != x0->dims[d])
        return kiln_eval_error(ctx, KILN_ERR_INVALID,
                               "input %d has extent %lld on axis %d, input 0 has %lld", k,
                               (long long)x->dims[d], d, (long long)x0->dims[d]);
    if (kiln_add_overflow_i64(dims[axis], x->dims[axis], &dims[axis]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "output extent overflows");
  }
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x0->dtype, x0->rank, dims, &o));
  int64_t outer = 1, inner = 1, pos = 0;
  for (int d = 0; d < axis; d++) outer *= dims[d];
  for (int d = axis + 1; d < x0->rank; d++) inner *= dims[d];
  for (int64_t i = 0; i < outer; i++) {
    for (int k = 0; k < ctx->n_in; k++) {
      const kiln_tensor *x = kiln_eval_in(ctx, k);
      int64_t chunk = x->dims[axis] * inner;
      kiln_shape_copy(o, pos, x, i * chunk, chunk);
      pos += chunk;
    }
  }
  return KILN_OK;
}

static kiln_status infer_concat(kiln_infer_ctx *ctx) {
  const kiln_type *x0 = kiln_shape_in_type(ctx, 0);
  if (!x0) return KILN_OK;
  int rank = -1;
  for (int k = 0; k < ctx->n_in && rank < 0; k++) {
    const kiln_type *x = kiln_shape_in_type(ctx, k);
    if (x && x->rank >= 0) rank = x->rank;
  }
  if (rank < 0) {
    kiln_shape_out_type(ctx, 0, x0->dtype, -1, NULL);
    return KILN_OK;
  }
  int axis;
  KILN_TRY(concat_axis(ctx->node, rank, &axis));
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = kiln_shape_dim(-1);
  d[axis].value = 0;
  for (int k = 0; k < ctx->n_in; k++) {
    const kiln_type *x = kiln_shape_in_type(ctx, k);
    if (!x || x->rank < 0) {
      d[axis].value = -1;
      continue;
    }
    if (x->rank != rank) return kiln_shape_err(ctx->node, "inputs have different ranks");
    for (int i = 0; i < rank; i++) {
      if (i != axis && d[i].value >= 0 && x->dims[i].value >= 0 && d[i].value != x->dims[i].value)
        return kiln_shape_err(ctx->node, "input %d has extent %lld on axis %d, an earlier one %lld",
                              k, (long long)x->dims[i].value, i, (long long)d[i].value);
      if (i != axis && d[i].value < 0 && !d[i].sym) d[i] = x->dims[i];
    }
    int64_t e = x->dims[axis].value;
    if (d[axis].value >= 0 && (e < 0 || kiln_add_overflow_i64(d[axis].value, e, &d[axis].value)))
      d[axis].value = -1;
  }
  kiln_shape_out_type(ctx, 0, x0->dtype, rank, d);
  return KILN_OK;
}

/* ---- Split ----
 * The sizes come from the 'split' attribute (opsets 1-12; opset 1 also as input
 * 1) or input 1 (13+). Without sizes: equal parts over the outputs, or
 * num_outputs (18+) parts of ceil(d/n), the last smaller. */
static kiln_status split_sizes(const kiln_node *n, const kiln_tensor *split_in, bool split_known,
                               int64_t dim, int n_out, int64_t *sizes) {
  int k = -1;
  if (n->opset < 13) {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, "split", &a, &k));
    if (k > 0 && k != n_out)
      return kiln_shape_err(n, "split has %d entries for %d outputs", k, n_out);
    if (k > 0) memcpy(sizes, a, (size_t)k * sizeof *a);
  }
  if (k <= 0 && split_in) {
    KILN_TRY(read_ints(n, split_in, "split", sizes, n_out, &k));
    if (k != n_out) return kiln_shape_err(n, "split has %d entries for %d outputs", k, n_out);
  } else if (k <= 0 && !split_known) {
    return kiln_unsupported("split sizes unknown");
  }
  if (k <= 0) {
    int64_t num;
    KILN_TRY(kiln_node_int(n, "num_outputs", 0, &num));
    if (kiln_node_attr(n, "num_outputs") && num < 1)
      return kiln_shape_err(n, "num_outputs must be at least 1, not %lld", (long long)num);
    if (num && num != n_out)
      return kiln_shape_err(n, "num_outputs is %lld but the node has %d outputs", (long long)num,
                            n_out);
    if (dim < 0) return kiln_unsupported("split dimension unknown");
    if (!num && dim % n_out)
      return kiln_shape_err(n, "extent %lld cannot be split into %d equal parts", (long long)dim,
                            n_out);
    int64_t part = dim % n_out ? dim / n_out + 1 : dim / n_out;
    for (int i = 0; i < n_out; i++) sizes[i] = part;
    sizes[n_out - 1] = dim - part * (n_out - 1);
  }
  int64_t sum = 0;
  for (int i = 0; i < n_out; i++) {
    if (sizes[i] < 0 || kiln_add_overflow_i64(sum, sizes[i], &sum))
      return kiln_shape_err(n, "split size %lld is invalid", (long long)sizes[i]);
  }
  if (dim >= 0 && sum != dim)
    return kiln_shape_err(n, "split sizes sum to %lld, the axis has extent %lld", (long long)sum,
                          (long long)dim);
  return KILN_OK;
}

static kiln_status split_axis(const kiln_node *n, int rank, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  int64_t axis = da.axis;
  if (axis < -rank || axis >= rank)
    return kiln_shape_err(n, "axis %lld is out of range for rank %d", (long long)axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return KILN_OK;
}

static kiln_status eval_split(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int axis, n_out = ctx->n_out;
  KILN_TRY(split_axis(ctx->node, x->rank, &axis));
  int64_t *sizes = kiln_xcalloc((size_t)n_out + 1, sizeof *sizes);
  kiln_status st = split_sizes(ctx->node, kiln_eval_in(ctx, 1), true, x->dims[axis], n_out, sizes);
  int64_t outer = 1, inner = 1, start = 0;
  for (int d = 0; d < axis; d++) outer *= x->dims[d];
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  for (int k = 0; k < n_out && !st; k++) {
    int64_t dims[KILN_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = sizes[k];
    kiln_tensor *o;
    st = kiln_eval_out(ctx, k, x->dtype, x->rank, dims, &o);
    for (int64_t i = 0; i < outer && !st; i++)
      kiln_shape_copy(o, i * sizes[k] * inner, x, (i * x->dims[axis] + start) * inner,
                      sizes[k] * inner);
    start += sizes[k];
  }
  free(sizes);
  return st;
}

static kiln_status infer_split(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  for (int k = 0; k < ctx->n_out; k++) kiln_shape_out_type(ctx, k, x->dtype, x->rank, NULL);
  if (x->rank < 0) return KILN_OK;
  int axis;
  KILN_TRY(split_axis(ctx->node, x->rank, &axis));
  bool has_in = ctx->n_in > 1 && ctx->in[1];
  const kiln_tensor *sp = has_in ? ctx->cin[1] : NULL;
  int64_t *sizes = kiln_xcalloc((size_t)ctx->n_out + 1, sizeof *sizes);
  kiln_status st = split_sizes(ctx->node, sp, !has_in, x->dims[axis].value, ctx->n_out, sizes);
  if (st && kiln_status_code(st) == KILN_ERR_UNSUPPORTED) { /* sizes not known */
    kiln_status_free(st);
    st = KILN_OK;
    for (int k = 0; k < ctx->n_out; k++) {
      ctx->out[k].dims[axis] = kiln_shape_dim(-1);
      for (int d = 0; d < x->rank; d++)
        if (d != axis) ctx->out[k].dims[d] = x->dims[d];
    }
  } else if (!st) {
    for (int k = 0; k < ctx->n_out; k++) {
      kiln_shape_out_type(ctx, k, x->dtype, x->rank, x->dims);
      ctx->out[k].dims[axis] = kiln_shape_dim(sizes[k]);
    }
  }
  free(sizes);
  return st;
}

/* ---- Slice ----
 * Slice-1 takes starts/ends/axes as attributes, Slice-10+ as inputs with steps.
 * Negative starts/ends count from the end; both are clamped ([0, d] for
 * positive steps, [-1, d-1] for negative ones). */
typedef struct slice_spec {
  bool sliced[KILN_MAX_RANK];
  int64_t start[KILN_MAX_RANK], end[KILN_MAX_RANK], step[KILN_MAX_RANK];
} slice_spec;

/* ins[1..4]: starts, ends, axes, steps tensors (NULL: omitted); used from
 * opset 10. */
static kiln_status slice_spec_get(const kiln_node *n, int rank, const kiln_tensor *const *ins,
                                  slice_spec *sp) {
  int64_t st[KILN_MAX_RANK], en[KILN_MAX_RANK], ax[KILN_MAX_RANK], stp[KILN_MAX_RANK];
  int ns, ne, na = -1, nst = -1;
  memset(sp, 0, sizeof *sp);
  if (n->opset < 10) {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, "starts", &a, &ns));
    if (ns < 0 || ns > rank) return kiln_shape_err(n, "attribute 'starts' is missing or too long");
    memcpy(st, a, (size_t)ns * sizeof *a);
    KILN_TRY(kiln_node_ints(n, "ends", &a, &ne));
    if (ne < 0 || ne > rank) return kiln_shape_err(n, "attribute 'ends' is missing or too long");
    memcpy(en, a, (size_t)ne * sizeof *a);
    KILN_TRY(kiln_node_ints(n, "axes", &a, &na));
    if (na > rank) return kiln_shape_err(n, "attribute 'axes' is too long");
    if (na > 0) memcpy(ax, a, (size_t)na * sizeof *a);
  } else {
    KILN_TRY(read_ints(n, ins[1], "starts", st, rank, &ns));
    KILN_TRY(read_ints(n, ins[2], "ends", en, rank, &ne));
    if (ins[3]) KILN_TRY(read_ints(n, ins[3], "axes", ax, rank, &na));
    if (ins[4]) KILN_TRY(read_ints(n, ins[4], "steps", stp, rank, &nst));
  }
  if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return kiln_shape_err(n, "starts, ends, axes and steps have different lengths");
  for (int i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? ax[i] : i;
    if (a < -rank || a >= rank)
      return kiln_shape_err(n, "axis %lld is out of range for rank %d", (long long)a, rank);
    if (a < 0) a += rank;
    if (sp->sliced[a]) return kiln_shape_err(n, "axis %lld is repeated", (long long)a);
    sp->sliced[a] = true;
    sp->start[a] = st[i];
    sp->end[a] = en[i];
    sp->step[a] = nst >= 0 ? stp[i] : 1;
    if (!sp->step[a]) return kiln_shape_err(n, "step of axis %lld is 0", (long long)a);
    if (sp->step[a] < -INT64_MAX) sp->step[a] = -INT64_MAX; /* same slice, negatable */
  }
  return KILN_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* First index and count of the slice (start, end, step) of an axis of extent d.
 */
static void slice_axis(int64_t d, int64_t s, int64_t e, int64_t step, int64_t *first,
                       int64_t *count) {
  if (s < 0) s += d;
  if (e < 0) e += d;
  if (step > 0) {
    s = clamp64(s, 0, d);
    e = clamp64(e, 0, d);
    *count = e > s ? (e - s - 1) / step + 1 : 0;
  } else {
    s = clamp64(s, -1, d - 1);
    e = clamp64(e, -1, d - 1);
    *count = s > e ? (s - e - 1) / -step + 1 : 0;
  }
  *first = s;
}

static kiln_status eval_slice(kiln_eval_ctx *ctx) {
  const kiln_tensor *x;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  const kiln_tensor *ins[5] = {x, NULL, NULL, NULL, NULL};
  if (ctx->node->opset >= 10) {
    KILN_TRY(kiln_eval_in_req(ctx, 1, &ins[1]));
    KILN_TRY(kiln_eval_in_req(ctx, 2, &ins[2]));
    ins[3] = kiln_eval_in(ctx, 3);
    ins[4] = kiln_eval_in(ctx, 4);
  }
  slice_spec sp;
  KILN_TRY(slice_spec_get(ctx->node, x->rank, ins, &sp));
  int64_t dims[KILN_MAX_RANK], st[KILN_MAX_RANK], vs[KILN_MAX_RANK], base = 0;
  kiln_strides(x->rank, x->dims, st);
  for (int d = 0; d < x->rank; d++) {
    int64_t first = 0, step = 1;
    dims[d] = x->dims[d];
    if (sp.sliced[d]) {
      slice_axis(x->dims[d], sp.start[d], sp.end[d], sp.step[d], &first, &dims[d]);
      step = dims[d] > 1 ? sp.step[d] : 1; /* |step| < d here: no overflow below */
    }
    if (dims[d] > 0) base += first * st[d];
    vs[d] = step * st[d];
  }
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &o));
  if (o->numel == 0) return KILN_OK; /* no maps to build (their extents may be huge) */
  kiln_shape_copy_view(o, x->rank, dims, x, base, vs);
  return KILN_OK;
}

static kiln_status infer_slice(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, NULL);
  if (x->rank < 0) return KILN_OK;
  const kiln_tensor *ins[5] = {NULL, NULL, NULL, NULL, NULL};
  if (ctx->node->opset >= 10) {
    for (int i = 1; i < 5 && i < ctx->n_in; i++) {
      if (ctx->in[i] && !ctx->cin[i]) return KILN_OK; /* an input of unknown value */
      ins[i] = ctx->cin[i];
    }
    if (!ins[1] || !ins[2]) return KILN_OK;
  }
  slice_spec sp;
  KILN_TRY(slice_spec_get(ctx->node, x->rank, ins, &sp));
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    d[i] = x->dims[i];
    if (!sp.sliced[i]) continue;
    int64_t first, cnt = -1;
    if (x->dims[i].value >= 0)
      slice_axis(x->dims[i].value, sp.start[i], sp.end[i], sp.step[i], &first, &cnt);
    else if (sp.start[i] == 0 && sp.step[i] == 1 && sp.end[i] == INT64_MAX)
      continue; /* the whole axis */
    d[i] = kiln_shape_dim(cnt);
  }
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, d);
  return KILN_OK;
}

/* ---- Pad ----
 * Pad-1: 'paddings' attribute; Pad-2: 'pads' attribute and float 'value';
 * Pad-11+: pads and constant_value inputs; Pad-18+: axes input; modes constant,
 * reflect, edge, wrap (19). Negative pads crop first; the non-constant modes
 * then pad from the cropped data. */
typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static kiln_status pad_mode_get(const kiln_node *n, pad_mode *m) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  static const pad_mode of[KILN_PAD_MODE_COUNT] = {
      [KILN_PAD_CONSTANT] = PAD_CONSTANT,
      [KILN_PAD_REFLECT] = PAD_REFLECT,
      [KILN_PAD_EDGE] = PAD_EDGE,
      [KILN_PAD_WRAP] = PAD_WRAP,
  };
  *m = of[da.pad_mode];
  return KILN_OK;
}

/* Fills begin/end pads per axis of a rank-r input from the node (pads_t/axes_t:
 * inputs). */
static kiln_status pad_amounts(const kiln_node *n, int rank, const kiln_tensor *pads_t,
                               const kiln_tensor *axes_t, int64_t *b, int64_t *e) {
  int64_t pads[2 * KILN_MAX_RANK], axes[KILN_MAX_RANK];
  int np, na = -1;
  if (n->opset < 11) {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, n->opset < 2 ? "paddings" : "pads", &a, &np));
    if (np < 0 || np > 2 * rank)
      return kiln_shape_err(n, "the pads attribute is missing or too long");
    memcpy(pads, a, (size_t)np * sizeof *a);
  } else {
    KILN_TRY(read_ints(n, pads_t, "pads", pads, 2 * rank, &np));
    if (axes_t && n->opset >= 18) KILN_TRY(read_ints(n, axes_t, "axes", axes, rank, &na));
  }
  for (int i = 0; i < rank; i++) b[i] = e[i] = 0;
  int k = na >= 0 ? na : rank;
  if (np != 2 * k) return kiln_shape_err(n, "pads has %d entries, expected %d", np, 2 * k);
  bool seen[KILN_MAX_RANK] = {false};
  for (int i = 0; i < k; i++) {
    int64_t a = na >= 0 ? axes[i] : i;
    if (a < -rank || a >= rank) return kiln_shape_err(n, "axis %lld is out of range", (long long)a);
    if (a < 0) a += rank;
    if (seen[a]) return kiln_shape_err(n, "axis %lld is repeated", (long long)a);
    seen[a] = true;
    b[a] = pads[i];
    e[a] = pads[k + i];
    if (b[a] < -(1LL << 40) || b[a] > (1LL << 40) || e[a] < -(1LL << 40) || e[a] > (1LL << 40))
      return kiln_shape_err(n, "pad amount is too large");
  }
  return KILN_OK;
}

/* Source index along one axis for each output index (-1: the constant). */
static kiln_status pad_axis_map(const kiln_eval_ctx *ctx, int64_t d, int64_t b, int64_t e,
                                pad_mode m, int64_t out, int64_t *map) {
  int64_t lo = b < 0 ? -b : 0, n = d - lo - (e < 0 ? -e : 0), pb = b > 0 ? b : 0;
  if (n <= 0 && m != PAD_CONSTANT && out > 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "cannot pad an empty axis in this mode");
  for (int64_t o = 0; o < out; o++) {
    int64_t x = o - pb, y;
    if (x >= 0 && x < n) y = x;
    else if (m == PAD_CONSTANT) y = -1;
    else if (m == PAD_EDGE) y = x < 0 ? 0 : n - 1;
    else if (m == PAD_WRAP) y = ((x % n) + n) % n;
    else if (n == 1) y = 0;
    else {
      int64_t p = 2 * (n - 1);
      y = ((x % p) + p) % p;
      if (y >= n) y = p - y;
    }
    map[o] = y < 0 ? -1 : lo + y;
  }
  return KILN_OK;
}

/* Pads x into output 0 with the given amounts; val (1 element of x's dtype) for
 * the constant mode. */
static kiln_status pad_run(kiln_eval_ctx *ctx, const kiln_tensor *x, const int64_t *b,
                           const int64_t *e, pad_mode m, const kiln_tensor *val) {
  int64_t dims[KILN_MAX_RANK], st[KILN_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    dims[d] = x->dims[d] + b[d] + e[d];
    if (dims[d] < 0) return kiln_eval_error(ctx, KILN_ERR_INVALID, "pads make axis %d negative", d);
  }
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, dims, &o));
  int64_t *maps[KILN_MAX_RANK] = {NULL}, *map = NULL;
  kiln_status st_ = kiln_shape_alloc(ctx, o->numel, sizeof *map, (void **)&map);
  for (int d = 0; d < x->rank && !st_; d++) {
    maps[d] = kiln_xcalloc((size_t)dims[d] + 1, sizeof **maps);
    st_ = pad_axis_map(ctx, x->dims[d], b[d], e[d], m, dims[d], maps[d]);
  }
  if (!st_) {
    kiln_strides(x->rank, x->dims, st);
    kiln_shape_axis_maps(x->rank, dims, maps, st, o->numel, map);
    kiln_shape_fill(o, val, 0);
    kiln_shape_gather(o, x, map);
  }
  for (int d = 0; d < x->rank; d++) free(maps[d]);
  free(map);
  return st_;
}

/* A one-element tensor of dtype dt holding the pad value. */
static kiln_status pad_value(kiln_eval_ctx *ctx, kiln_dtype dt, kiln_tensor **out) {
  KILN_TRY(kiln_tensor_new(dt, 0, NULL, out));
  const kiln_tensor *v = ctx->node->opset >= 11 ? kiln_eval_in(ctx, 2) : NULL;
  if (v && v->numel > 0) {
    if (v->dtype == dt) kiln_shape_copy(*out, 0, v, 0, 1);
    else if (dt != KILN_STRING && v->dtype != KILN_STRING)
      kiln_store_f64(dt, (*out)->data, 0, kiln_load_f64(v->dtype, v->data, 0));
  } else if (ctx->node->opset < 11 && dt != KILN_STRING) {
    kiln_attrs_data da;
    kiln_status st = kiln_attrs_data_decode(ctx->node, &da);
    if (st) {
      kiln_tensor_free(*out);
      return st;
    }
    kiln_store_f64(dt, (*out)->data, 0, da.pad_value);
  }
  kiln_shape_fix_strings(*out);
  return KILN_OK;
}

static kiln_status eval_pad(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *pads = NULL;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  if (ctx->node->opset >= 11) KILN_TRY(kiln_eval_in_req(ctx, 1, &pads));
  pad_mode m;
  int64_t b[KILN_MAX_RANK], e[KILN_MAX_RANK];
  KILN_TRY(pad_mode_get(ctx->node, &m));
  KILN_TRY(pad_amounts(ctx->node, x->rank, pads, kiln_eval_in(ctx, 3), b, e));
  kiln_tensor *val;
  KILN_TRY(pad_value(ctx, x->dtype, &val));
  kiln_status st = pad_run(ctx, x, b, e, m, val);
  kiln_tensor_free(val);
  return st;
}

static kiln_status infer_pad(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, NULL);
  if (x->rank < 0) return KILN_OK;
  const kiln_tensor *pads = NULL, *axes = NULL;
  if (ctx->node->opset >= 11) {
    pads = ctx->cin[1];
    axes = ctx->n_in > 3 ? ctx->cin[3] : NULL;
    if (!pads || (ctx->n_in > 3 && ctx->in[3] && !axes)) return KILN_OK;
  }
  int64_t b[KILN_MAX_RANK], e[KILN_MAX_RANK];
  KILN_TRY(pad_amounts(ctx->node, x->rank, pads, axes, b, e));
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    d[i] = x->dims[i];
    if (b[i] || e[i]) d[i] = kiln_shape_dim(d[i].value < 0 ? -1 : d[i].value + b[i] + e[i]);
    if (d[i].value < -1) return kiln_shape_err(ctx->node, "pads make axis %d negative", i);
  }
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, d);
  return KILN_OK;
}

/* ---- CenterCropPad: crop or zero-pad each listed axis around its center ----
 */
static kiln_status ccp_targets(const kiln_node *n, int rank, const kiln_tensor *shape,
                               int64_t *target, bool *listed) {
  int64_t sh[KILN_MAX_RANK];
  int k;
  KILN_TRY(read_ints(n, shape, "shape", sh, rank, &k));
  const int64_t *axes;
  int na;
  KILN_TRY(kiln_node_ints(n, "axes", &axes, &na));
  if ((na >= 0 ? na : rank) != k)
    return kiln_shape_err(n, "shape has %d entries for %d axes", k, na >= 0 ? na : rank);
  memset(listed, 0, KILN_MAX_RANK * sizeof *listed);
  for (int i = 0; i < k; i++) {
    int64_t a = na >= 0 ? axes[i] : i;
    if (a < -rank || a >= rank) return kiln_shape_err(n, "axis %lld is out of range", (long long)a);
    if (a < 0) a += rank;
    if (listed[a]) return kiln_shape_err(n, "axis %lld is repeated", (long long)a);
    if (sh[i] < 0) return kiln_shape_err(n, "shape[%d] is negative", i);
    listed[a] = true;
    target[a] = sh[i];
  }
  return KILN_OK;
}

static kiln_status eval_center_crop_pad(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *shape;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &shape));
  int64_t target[KILN_MAX_RANK], b[KILN_MAX_RANK], e[KILN_MAX_RANK];
  bool listed[KILN_MAX_RANK];
  KILN_TRY(ccp_targets(ctx->node, x->rank, shape, target, listed));
  for (int d = 0; d < x->rank; d++) {
    int64_t dim = x->dims[d], t = listed[d] ? target[d] : dim;
    b[d] = t < dim ? -((dim - t) / 2) : (t - dim) / 2;
    e[d] = t - dim - b[d];
  }
  kiln_tensor *zero;
  KILN_TRY(kiln_tensor_new(x->dtype, 0, NULL, &zero));
  kiln_shape_fix_strings(zero);
  kiln_status st = pad_run(ctx, x, b, e, PAD_CONSTANT, zero);
  kiln_tensor_free(zero);
  return st;
}

static kiln_status infer_center_crop_pad(kiln_infer_ctx *ctx) {
  const kiln_type *x = kiln_shape_in_type(ctx, 0);
  if (!x) return KILN_OK;
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, NULL);
  if (x->rank < 0 || !ctx->cin[1]) return KILN_OK;
  int64_t target[KILN_MAX_RANK];
  bool listed[KILN_MAX_RANK];
  KILN_TRY(ccp_targets(ctx->node, x->rank, ctx->cin[1], target, listed));
  kiln_dim d[KILN_MAX_RANK];
  for (int i = 0; i < x->rank; i++) d[i] = listed[i] ? kiln_shape_dim(target[i]) : x->dims[i];
  kiln_shape_out_type(ctx, 0, x->dtype, x->rank, d);
  return KILN_OK;
}

/* ---- ReverseSequence: reverses the first seq_lens[b] steps along time_axis
 * per batch ---- */
static kiln_status eval_reverse_sequence(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *lens;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &lens));
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  int64_t ba = da.batch_axis, ta = da.time_axis;
  if (x->rank < 2 || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
    return kiln_eval_error(ctx, KILN_ERR_INVALID,
                           "needs rank >= 2 and batch_axis/time_axis 0 and 1 (in any order)");
  int64_t B = x->dims[ba], T = x->dims[ta], inner = 1;
  if (!kiln_dtype_is_int(lens->dtype) || lens->rank != 1 || lens->numel != B)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "sequence_lens must be 1-D of length %lld",
                           (long long)B);
  for (int d = 2; d < x->rank; d++) inner *= x->dims[d];
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, &o));
  kiln_shape_copy(o, 0, x, 0, x->numel);
  for (int64_t b = 0; b < B; b++) {
    int64_t len = kiln_load_i64(lens->dtype, lens->data, (size_t)b);
    if (len < 0 || len > T)
      return kiln_eval_error(ctx, KILN_ERR_INVALID,
                             "sequence_lens[%lld] = %lld is out of [0, %lld]", (long long)b,
                             (long long)len, (long long)T);
    for (int64_t t = 0; t < len; t++) {
      int64_t src = ta == 0 ? (len - 1 - t) * B + b : b * T + (len - 1 - t);
      int64_t dst = ta == 0 ? t * B + b : b * T + t;
      kiln_shape_copy(o, dst * inner, x, src * inner, inner);
    }
  }
  return KILN_OK;
}

/* ---- Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of
 * each matrix ---- */
static kiln_status eval_trilu(kiln_eval_ctx *ctx) {
  const kiln_tensor *x, *kt = kiln_eval_in(ctx, 1);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  int64_t k = 0;
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(ctx->node, &da));
  bool upper = da.upper;
  if (kt) KILN_TRY(kiln_shape_scalar_i64(ctx, kt, "k", &k));
  if (x->rank < 2) return kiln_eval_error(ctx, KILN_ERR_INVALID, "input must have rank >= 2");
  kiln_tensor *o;
  KILN_TRY(kiln_eval_out(ctx, 0, x->dtype, x->rank, x->dims, &o));
  int64_t N = x->dims[x->rank - 2], M = x->dims[x->rank - 1];
  size_t es = kiln_dtype_size(x->dtype);
  for (int64_t i = 0; i < x->numel; i++) {
    int64_t c = i % M, r = (i / M) % N;
    bool keep = upper ? c - r >= k : c - r <= k;
    if (keep) kiln_shape_copy(o, i, x, i, 1);
    else if (x->dtype != KILN_STRING) memset((char *)o->data + (size_t)i * es, 0, es);
  }
  kiln_shape_fix_strings(o);
  return KILN_OK;
}

void kiln_shape_register_slice(kiln_op_impl *t) {
  kiln_shape_set(t, KILN_OP_Concat, eval_concat, infer_concat, 1, -1, 1, 1);
  kiln_shape_set(t, KILN_OP_Split, eval_split, infer_split, 1, 2, 1, -1);
  kiln_shape_set(t, KILN_OP_Slice, eval_slice, infer_slice, 1, 5, 1, 1);
  kiln_shape_set(t, KILN_OP_Pad, eval_pad, infer_pad, 1, 4, 1, 1);
  kiln_shape_set(t, KILN_OP_CenterCropPad, eval_center_crop_pad, infer_center_crop_pad, 2, 2, 1, 1);
  kiln_shape_set(t, KILN_OP_ReverseSequence, eval_reverse_sequence, kiln_shape_infer_same, 2, 2, 1,
                 1);
  kiln_shape_set(t, KILN_OP_Trilu, eval_trilu, kiln_shape_infer_same, 1, 2, 1, 1);
}
