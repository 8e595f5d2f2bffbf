/* Generator builders of data movement, indexing and shape ops. Index inputs are constants
 * drawn in range (and without duplicates where the result would depend on the write order);
 * shape-like inputs (Reshape, Slice, Pad, Tile, Expand, axes) are constants as the compiler
 * needs them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

#define ATTR(...) (snprintf(a, sizeof a, __VA_ARGS__), a)

static const char *op_name(int op) {
  return kiln_gen_ops[op].name;
}

static int pick_any(gen *G, int rmin, int rmax, bool static_shape) {
  gen_want w = {DT_ALL, rmin, rmax, DOM_ANY, static_shape, false, 0, false, false};
  return gen_pick(G, &w);
}

/* pick_any where the op takes a zero extent (Transpose, Tile, Concat): an empty tensor may come */
static int pick_any_empty(gen *G, int rmin, int rmax) {
  gen_want w = {DT_ALL, rmin, rmax, DOM_ANY, false, false, 0, true, false};
  return gen_pick(G, &w);
}

static int64_t numel(const gen *G, int x) {
  int64_t n = 1;
  for (int d = 0; d < gen_rank(G, x); d++) n *= gen_dim(G, x, d);
  return n;
}

static void shuffle(gen *G, int64_t *v, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = gen_int(&G->rng, 0, i);
    int64_t t = v[i];
    v[i] = v[j], v[j] = t;
  }
}

/* An I64 constant of the given shape holding vals. */
static int const_idx(gen *G, int rank, const int64_t *dims, const int64_t *vals) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  int c = gen_const_i64(G, (int)n, vals, false);
  gen_val *v = &G->vals.data[c];
  char *line = G->lines.data[G->lines.len - 1];
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%%%s = const i64[", v->name);
  for (int d = 0; d < rank; d++) kiln_strbuf_printf(&b, "%s%lld", d ? "," : "", (long long)dims[d]);
  kiln_strbuf_printf(&b, "] %s", strstr(line, "] [") + 2);
  free(line);
  G->lines.data[G->lines.len - 1] = b.data;
  v->type = kiln_type_tensor(KILN_I64, rank, dims);
  return c;
}

static void emit_like(gen *G, const char *op, int n_in, const int *in, const char *a, int x) {
  gen_emit(G, op, n_in, in, 1, a, gen_v(G, x)->dom, gen_mag(G, x));
}

bool gen_b_transpose(gen *G, int op) {
  int x = pick_any_empty(G, 2, 6);
  if (x < 0) return false;
  int r = gen_rank(G, x);
  int64_t p[KILN_MAX_RANK];
  for (int d = 0; d < r; d++) p[d] = d;
  shuffle(G, p, r);
  char a[64] = "";
  if (gen_chance(&G->rng, 0.85)) {
    int len = snprintf(a, sizeof a, "perm=[");
    for (int d = 0; d < r; d++)
      len += snprintf(a + len, sizeof a - (size_t)len, "%s%lld", d ? "," : "", (long long)p[d]);
    snprintf(a + len, sizeof a - (size_t)len, "]");
  }
  emit_like(G, op_name(op), 1, &x, a, x);
  return true;
}

/* Reshape to a random factorization of the element count, now and then keeping a prefix of
 * the input's dims; 0 (copy the input's dim) for a symbolic leading dim and, now and then,
 * where a kept dim sits at its input position; -1 for one inferred dim; allowzero written
 * (0, or 1 where the shape holds no 0) from opset 14. */
bool gen_b_reshape(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 0, 4, false);
  if (x < 0) return false;
  bool sym = !gen_is_static(G, x);
  if (sym && gen_v(G, x)->type.dims[0].value >= 0) return false;
  int rx = gen_rank(G, x);
  int64_t n = numel(G, x) / (sym ? gen_dim(G, x, 0) : 1), s[KILN_MAX_RANK];
  int r = 0;
  if (sym) s[r++] = 0;
  if (rx > 1 && gen_chance(&G->rng, 0.35)) /* a prefix of the input's dims kept */
    for (int keep = gen_int(&G->rng, 1, rx - 1); r < keep; r++) {
      s[r] = gen_dim(G, x, r);
      n /= s[r];
    }
  int want = r + gen_int(&G->rng, 1, 3);
  while (r < want && r < KILN_MAX_RANK - 1 && n > 1) {
    int64_t f = 1;
    for (int64_t c = gen_int(&G->rng, 2, 6); c >= 2; c--)
      if (n % c == 0) {
        f = c;
        break;
      }
    if (f == 1) break;
    s[r++] = f, n /= f;
  }
  s[r++] = n;
  bool zero = sym;
  for (int d = sym ? 1 : 0; d < r && d < rx; d++) /* 0: the input's dim d, where it is kept */
    if (s[d] == gen_dim(G, x, d) && gen_chance(&G->rng, 0.4)) s[d] = 0, zero = true;
  if (gen_chance(&G->rng, 0.4)) {
    int d = gen_int(&G->rng, sym ? 1 : 0, r - 1);
    if (s[d] != 0 || gen_chance(&G->rng, 0.3)) s[d] = -1; /* a kept 0 made -1 now and then */
  }
  int in[2] = {x, gen_const_i64(G, r, s, false)};
  char a[32] = "";
  if (G->opset >= 14 && gen_attr_chance(G, 0.25))
    snprintf(a, sizeof a, "allowzero=%d", zero ? 0 : gen_attr_int(G, 0, 1));
  emit_like(G, "Reshape", 2, in, a, x);
  return true;
}

bool gen_b_flatten(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, false);
  if (x < 0) return false;
  int r = gen_rank(G, x);
  char a[32];
  emit_like(G, "Flatten", 1, &x, ATTR("axis=%d", gen_attr_int(G, -r, r)), x);
  return true;
}

/* Squeeze or Unsqueeze of x over the n axes ax: an axes input from opset 13, an attribute
 * before; n = 0: no axes (Squeeze: every unit dim). The new value's index. */
int gen_emit_axes(gen *G, const char *op, int x, int n, const int64_t *ax) {
  int in[2] = {x, -1};
  char a[96] = "";
  if (G->opset >= 13 && n > 0) in[1] = gen_const_i64(G, n, ax, false);
  else if (n > 0) {
    int len = snprintf(a, sizeof a, "axes=[");
    for (int i = 0; i < n; i++)
      len += snprintf(a + len, sizeof a - (size_t)len, "%s%lld", i ? "," : "", (long long)ax[i]);
    snprintf(a + len, sizeof a - (size_t)len, "]");
  }
  return gen_emit(G, op, in[1] >= 0 ? 2 : 1, in, 1, a, gen_v(G, x)->dom, gen_mag(G, x));
}

bool gen_b_squeeze(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, false);
  if (x < 0) return false;
  int64_t ax[KILN_MAX_RANK];
  int n = 0, r = gen_rank(G, x);
  for (int d = 0; d < r; d++)
    if (gen_v(G, x)->type.dims[d].value == 1 && gen_chance(&G->rng, 0.7))
      ax[n++] = gen_chance(&G->rng, 0.3) ? d - r : d;
  if (n == 0) return false;
  gen_emit_axes(G, "Squeeze", x, gen_chance(&G->rng, 0.85) ? n : 0, ax);
  return true;
}

bool gen_b_unsqueeze(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 0, 3, false);
  if (x < 0) return false;
  int k = gen_int(&G->rng, 1, 2), out_r = gen_rank(G, x) + k;
  int64_t ax[2] = {gen_int(&G->rng, 0, out_r - 1), 0};
  if (k == 2) {
    ax[1] = gen_int(&G->rng, 0, out_r - 2);
    if (ax[1] >= ax[0]) ax[1]++;
  }
  for (int i = 0; i < k; i++) /* either form of an axis: d or d - rank */
    if (gen_chance(&G->rng, 0.3)) ax[i] -= out_r;
  gen_emit_axes(G, "Unsqueeze", x, k, ax);
  return true;
}

bool gen_b_concat(gen *G, int op) {
  (void)op;
  int x = pick_any_empty(G, 1, 6);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  int in[3] = {x, x, -1}, n = 2;
  if (!gen_chance(&G->rng, 0.2)) {
    kiln_type t = gen_v(G, x)->type;
    /* an operand empty along the axis now and then: it adds nothing */
    t.dims[axis].value = gen_chance(&G->rng, 0.06) ? 0 : gen_int(&G->rng, 1, 4);
    t.dims[axis].sym = NULL;
    in[1] = gen_pick_type(G, &t, DOM_ANY);
    if (gen_chance(&G->rng, 0.5)) in[0] = in[1], in[1] = x;
    if (gen_chance(&G->rng, 0.2)) in[2] = gen_pick_type(G, &t, DOM_ANY), n = 3;
  }
  char a[32];
  gen_emit(G, "Concat", n, in, 1, ATTR("axis=%d", gen_chance(&G->rng, 0.3) ? axis - r : axis),
           DOM_ANY, gen_mag(G, x) > gen_mag(G, in[1]) ? gen_mag(G, x) : gen_mag(G, in[1]));
  return true;
}

bool gen_b_split(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, false);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  if (gen_v(G, x)->type.dims[axis].value < 2) return false;
  int64_t d = gen_dim(G, x, axis), parts[3];
  int k = gen_int(&G->rng, 2, d >= 3 ? 3 : 2);
  char a[64];
  int in[2] = {x, -1};
  if (G->opset >= 18 && gen_chance(&G->rng, 0.4)) {
    ATTR("axis=%d, num_outputs=%d", gen_axis_form(G, axis, r), k);
  } else {
    int64_t left = d;
    for (int i = 0; i < k - 1; i++)
      parts[i] = gen_int(&G->rng, 1, (int)(left - (k - 1 - i))), left -= parts[i];
    parts[k - 1] = left;
    if (G->opset >= 13 && gen_chance(&G->rng, 0.15)) { /* an empty part (sizes may be 0) */
      int z = gen_int(&G->rng, 0, k - 1), o = (z + 1) % k;
      parts[o] += parts[z], parts[z] = 0;
    }
    if (G->opset >= 13) {
      in[1] = gen_const_i64(G, k, parts, false);
      ATTR("axis=%d", gen_axis_form(G, axis, r));
    } else if (d % k == 0 && gen_attr_chance(G, 0.3)) /* equal parts: split left out */
      ATTR("axis=%d", gen_axis_form(G, axis, r));
    else if (k == 2) /* before 13 the sizes are an attribute */
      ATTR("axis=%d, split=[%lld,%lld]", gen_axis_form(G, axis, r), (long long)parts[0],
           (long long)parts[1]);
    else
      ATTR("axis=%d, split=[%lld,%lld,%lld]", gen_axis_form(G, axis, r), (long long)parts[0],
           (long long)parts[1], (long long)parts[2]);
  }
  gen_emit(G, "Split", in[1] >= 0 ? 2 : 1, in, k, a, gen_v(G, x)->dom, gen_mag(G, x));
  return true;
}

/* Where a Slice bound v lands on an axis of extent dim (ONNX: negative values count from the
 * end, then clamped to [0, dim] for a positive step, [-1, dim - 1] for a negative one). */
int64_t gen_slice_clamp(int64_t v, int64_t dim, int64_t step) {
  if (v < 0) v = v < -dim ? (step > 0 ? 0 : -1) : v + dim;
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

/* A written Slice bound for position p (-1 <= p <= dim) of an axis: itself, its negative form,
 * or for a position at or past either end a value further out (clamped back by the op):
 * dim + k, INT64_MAX, -dim - 1 - k, INT64_MIN. */
int64_t gen_slice_bound(gen *G, int64_t p, int64_t dim) {
  int form = gen_int(&G->rng, 0, 3);
  if (p >= dim) return form == 0 ? dim + gen_int(&G->rng, 0, 3) : form == 1 ? INT64_MAX : p;
  if (p < 0) return form == 0 ? -dim - 1 - gen_int(&G->rng, 0, 3) : INT64_MIN;
  if (p == 0 && form == 0) return -dim - gen_int(&G->rng, 0, 3); /* clamps up to 0 */
  return form == 1 ? p - dim : p;
}

/* Slice on a random subset of the static axes: steps 1, 2, 3 and -1, -2, -3, bounds in range
 * or past either end, in positive or negative form; now and then an empty range on an axis
 * (a start at or past the end, or an end at or before the start: ONNX gives an extent of 0,
 * and a fold of the Slice of a Shape must too). */
bool gen_b_slice(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, false);
  if (x < 0) return false;
  int r = gen_rank(G, x), n = 0;
  int64_t st[KILN_MAX_RANK], en[KILN_MAX_RANK], ax[KILN_MAX_RANK], sp[KILN_MAX_RANK];
  int64_t axw[KILN_MAX_RANK]; /* the axes as written: d or d - r */
  for (int d = 0; d < r; d++) {
    if (gen_v(G, x)->type.dims[d].value < 0 || !gen_chance(&G->rng, 0.6)) continue;
    int64_t dim = gen_dim(G, x, d);
    static const int64_t steps[] = {1, 1, 1, 1, 2, 3, -1, -1, -2, -3};
    int64_t stp = steps[gen_int(&G->rng, 0, 9)];
    /* positions: start b and end e with b < e (step > 0) or b > e (step < 0) */
    int64_t b = gen_int(&G->rng, 0, (int)dim - 1), e;
    bool empty = gen_chance(&G->rng, 0.06);
    if (empty && stp > 0) b = gen_int(&G->rng, 0, (int)dim), e = gen_int(&G->rng, 0, (int)b);
    else if (empty)
      b = gen_int(&G->rng, -1, (int)dim - 1), e = gen_int(&G->rng, (int)b, (int)dim - 1);
    else if (stp > 0) e = gen_int(&G->rng, (int)b + 1, (int)dim);
    else e = gen_int(&G->rng, -1, (int)b - 1);
    /* a start at the last element of a reversal is written as past the end now and then */
    int64_t bp = stp < 0 && b == dim - 1 && gen_chance(&G->rng, 0.5) ? dim : b;
    ax[n] = d, sp[n] = stp, axw[n] = gen_attr_chance(G, 0.3) ? d - r : d;
    st[n] = gen_slice_bound(G, bp, dim), en[n] = gen_slice_bound(G, e, dim);
    if (gen_slice_clamp(st[n], dim, stp) != b || gen_slice_clamp(en[n], dim, stp) != e)
      return false; /* a written form that does not land where meant (a bug here) */
    n++;
  }
  if (n == 0) return false;
  if (G->opset < 10) { /* Slice-1: starts, ends and axes (non-negative) are attributes; no steps */
    char a[512];       /* 3 lists of at most 4 small integers */
    int len = 0;
    const char *names[3] = {"starts", "ends", "axes"};
    const int64_t *lists[3] = {st, en, ax};
    bool axes = gen_attr_chance(G, 0.8);
    for (int i = 0; i < n; i++)
      if (sp[i] != 1 || (!axes && ax[i] != i)) return false;
    for (int l = 0; l < (axes ? 3 : 2); l++) {
      len += snprintf(a + len, sizeof a - (size_t)len, "%s%s=[", l ? ", " : "", names[l]);
      for (int i = 0; i < n; i++)
        len += snprintf(a + len, sizeof a - (size_t)len, "%s%lld", i ? "," : "",
                        (long long)lists[l][i]);
      len += snprintf(a + len, sizeof a - (size_t)len, "]");
    }
    emit_like(G, "Slice", 1, &x, a, x);
    return true;
  }
  int in[5] = {x, gen_const_i64(G, n, st, false), gen_const_i64(G, n, en, false), -1, -1};
  int n_in = 3;
  if (gen_chance(&G->rng, 0.8)) in[3] = gen_const_i64(G, n, axw, false), n_in = 4;
  if (n_in == 4) {
    bool ones = true;
    for (int i = 0; i < n; i++) ones = ones && sp[i] == 1;
    if (!ones || gen_chance(&G->rng, 0.6)) in[4] = gen_const_i64(G, n, sp, false), n_in = 5;
  }
  if (n_in < 5)
    for (int i = 0; i < n; i++)
      if (sp[i] != 1 || (n_in == 3 && ax[i] != i)) return false;
  emit_like(G, "Slice", n_in, in, "", x);
  return true;
}

bool gen_b_pad(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, true);
  if (x < 0 || gen_dtype(G, x) == KILN_BOOL) return false;
  int r = gen_rank(G, x), mode = gen_attr_int(G, 0, G->opset >= 19 ? 3 : 2);
  int64_t p[2 * KILN_MAX_RANK];
  for (int d = 0; d < 2 * r; d++) {
    int64_t dim = gen_dim(G, x, d % r), hi = mode == 1 || mode == 3 ? dim - 1 : 2;
    p[d] = gen_int(&G->rng, 0, (int)(hi < 2 ? hi : 2));
    /* the boundary now and then: a reflection of all it may (dim - 1), a pad of the extent */
    if (dim > 0 && gen_chance(&G->rng, 0.25)) p[d] = mode == 1 || mode == 3 ? dim - 1 : dim;
    /* past it: a reflection or wrap that goes round more than once, an edge pad of 2 dims */
    if (dim > 1 && mode > 0 && gen_chance(&G->rng, 0.1))
      p[d] = gen_int(&G->rng, (int)dim, 2 * (int)dim + 1);
  }
  static const char *modes[] = {"constant", "reflect", "edge", "wrap"};
  int in[3] = {x, gen_const_i64(G, 2 * r, p, false), -1};
  if (mode == 0 && gen_chance(&G->rng, 0.5)) {
    kiln_type t = kiln_type_tensor(gen_dtype(G, x), 0, NULL);
    static const double sv[] = {-0.0, 1, -1};
    in[2] = kiln_dtype_is_float(t.dtype) && gen_chance(&G->rng, 0.3)
                ? gen_const_fill(G, &t, sv[gen_int(&G->rng, 0, 2)]) /* -0 pads with a sign */
                : gen_new_const(G, &t, DOM_ANY);
  }
  char a[32];
  gen_emit(G, "Pad", in[2] >= 0 ? 3 : 2, in, 1,
           mode == 0 && gen_attr_chance(G, 0.3) ? "" : ATTR("mode=\"%s\"", modes[mode]),
           mode ? gen_v(G, x)->dom : DOM_ANY, gen_mag(G, x) + 2);
  return true;
}

bool gen_b_tile(gen *G, int op) {
  (void)op;
  int x = pick_any_empty(G, 1, 4);
  if (x < 0) return false;
  int r = gen_rank(G, x);
  int64_t rep[KILN_MAX_RANK];
  for (int d = 0; d < r; d++) rep[d] = gen_chance(&G->rng, 0.6) ? 1 : gen_int(&G->rng, 2, 3);
  int in[2] = {x, gen_const_i64(G, r, rep, false)};
  emit_like(G, "Tile", 2, in, "", x);
  return true;
}

bool gen_b_expand(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 0, 3, true);
  if (x < 0) return false;
  int r = gen_rank(G, x), lead = gen_int(&G->rng, 0, 2);
  int64_t s[KILN_MAX_RANK];
  for (int d = 0; d < lead; d++) s[d] = gen_int(&G->rng, 1, 3);
  for (int d = 0; d < r; d++) {
    int64_t dim = gen_dim(G, x, d);
    s[lead + d] = dim == 1 && gen_chance(&G->rng, 0.5) ? gen_int(&G->rng, 2, 4)
                  : gen_chance(&G->rng, 0.2)           ? 1
                                                       : dim;
  }
  int in[2] = {x, gen_const_i64(G, lead + r, s, false)};
  emit_like(G, "Expand", 2, in, "", x);
  return true;
}

bool gen_b_d2s(gen *G, int op) {
  bool d2s = !strcmp(op_name(op), "DepthToSpace");
  int x = pick_any(G, 4, 4, true);
  if (x < 0) return false;
  int64_t b = 2, c = gen_dim(G, x, 1), h = gen_dim(G, x, 2), w = gen_dim(G, x, 3);
  if (d2s ? c % (b * b) != 0 : (h % b != 0 || w % b != 0)) { /* a new input that fits */
    int64_t d[4] = {gen_int(&G->rng, 1, 2), b * b * gen_int(&G->rng, 1, 2),
                    b * gen_int(&G->rng, 1, 3), b * gen_int(&G->rng, 1, 3)};
    if (!d2s) d[1] = gen_int(&G->rng, 1, 3);
    kiln_type t = gen_tensor_type(gen_pick_dt(G, DT_ALL), 4, d);
    x = gen_new_input(G, &t, DOM_ANY);
  }
  char a[48];
  if (d2s)
    ATTR("blocksize=%lld, mode=\"%s\"", (long long)b, gen_chance(&G->rng, 0.5) ? "DCR" : "CRD");
  else ATTR("blocksize=%lld", (long long)b);
  emit_like(G, op_name(op), 1, &x, a, x);
  return true;
}

bool gen_b_gather(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 3, false);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  if (gen_v(G, x)->type.dims[axis].value < 0) return false;
  int64_t dim = gen_dim(G, x, axis), id[2] = {gen_int(&G->rng, 1, 4), gen_int(&G->rng, 1, 3)},
          v[12];
  int ir = gen_int(&G->rng, 0, 2);
  int64_t n = ir == 0 ? 1 : ir == 1 ? id[0] : id[0] * id[1];
  for (int64_t i = 0; i < n; i++) v[i] = gen_int(&G->rng, (int)-dim, (int)dim - 1);
  int in[2] = {x, ir == 0 ? gen_const_i64(G, 1, v, true) : const_idx(G, ir, id, v)};
  if (gen_chance(&G->rng, 0.3)) { /* indices known only at run time, i32 or i64 */
    kiln_type it = kiln_type_tensor(gen_chance(&G->rng, 0.5) ? KILN_I64 : KILN_I32, ir, id);
    in[1] = gen_new_ranged_input(G, &it, -dim, dim - 1);
  }
  char a[32];
  emit_like(G, "Gather", 2, in, ATTR("axis=%d", gen_axis_form(G, axis, r)), x);
  return true;
}

bool gen_b_gather_el(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 3, true);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  int64_t d[KILN_MAX_RANK], v[512], n = 1;
  for (int k = 0; k < r; k++)
    d[k] = k == axis ? gen_int(&G->rng, 1, 4) : gen_int(&G->rng, 1, (int)gen_dim(G, x, k)),
    n *= d[k];
  if (n > 512) return false;
  int64_t dim = gen_dim(G, x, axis);
  for (int64_t i = 0; i < n; i++) v[i] = gen_int(&G->rng, (int)-dim, (int)dim - 1);
  int in[2] = {x, const_idx(G, r, d, v)};
  if (gen_chance(&G->rng, 0.3)) { /* indices known only at run time */
    kiln_type it = kiln_type_tensor(gen_chance(&G->rng, 0.5) ? KILN_I64 : KILN_I32, r, d);
    in[1] = gen_new_ranged_input(G, &it, -dim, dim - 1);
  }
  char a[32];
  emit_like(G, "GatherElements", 2, in, ATTR("axis=%d", gen_axis_form(G, axis, r)), x);
  return true;
}

bool gen_b_gather_nd(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 4, true);
  if (x < 0) return false;
  /* batch_dims b: the first b dims of data and indices correspond (static extents here) */
  int r = gen_rank(G, x),
      b = G->opset >= 12 && r >= 2 && gen_attr_chance(G, 0.35) ? gen_attr_int(G, 1, r - 1) : 0;
  for (int d = 0; d < b; d++)
    if (gen_v(G, x)->type.dims[d].value < 0) b = 0;
  int k = gen_int(&G->rng, 1, r - b), q = 0;
  int64_t d[KILN_MAX_RANK], v[256], tuples = 1;
  for (int i = 0; i < b; i++) d[q++] = gen_dim(G, x, i), tuples *= d[i];
  if (b == 0 || gen_chance(&G->rng, 0.5)) d[q] = gen_int(&G->rng, 1, 4), tuples *= d[q++];
  d[q++] = k;
  if (tuples * k > 256) return false;
  for (int64_t t = 0; t < tuples; t++) /* an index in either form: i or i - extent */
    for (int j = 0; j < k; j++) {
      int64_t dim = gen_dim(G, x, b + j), i = gen_int(&G->rng, 0, (int)dim - 1);
      v[t * k + j] = gen_chance(&G->rng, 0.3) ? i - dim : i;
    }
  int in[2] = {x, const_idx(G, q, d, v)};
  char a[32] = "";
  if (b > 0 || (G->opset >= 12 && gen_attr_chance(G, 0.2))) ATTR("batch_dims=%d", b);
  emit_like(G, "GatherND", 2, in, a, x);
  return true;
}

/* The reduction attribute of a scatter (distinct targets: every kind is order-independent):
 * absent, or one of the values of the opset (mul from 16, max and min from 18). */
static const char *scatter_reduction(gen *G, kiln_dtype dt) {
  static const char *const kinds[] = {"",
                                      ", reduction=\"none\"",
                                      ", reduction=\"add\"",
                                      ", reduction=\"mul\"",
                                      ", reduction=\"max\"",
                                      ", reduction=\"min\""};
  int top = G->opset >= 18 ? 5 : G->opset >= 16 ? 3 : 2;
  if (dt == KILN_BOOL) top = 1;
  return kinds[gen_attr_int(G, 0, top)];
}

/* Repeated targets where the order in which they combine cannot matter: max and min, and add
 * and mul on integers (exact, wrapping); half the time there. Float add and mul round in the
 * order taken, and "none" keeps whichever write comes last: ONNX leaves both open. */
static bool scatter_repeats(gen *G, const char *red, kiln_dtype dt) {
  bool ok = strstr(red, "max") || strstr(red, "min") ||
            ((strstr(red, "add") || strstr(red, "mul")) && !kiln_dtype_is_float(dt));
  return ok && gen_chance(&G->rng, 0.5);
}

/* An index in either form: i, or i - extent (negative, counted from the end) now and then. */
static int64_t index_form(gen *G, int64_t i, int64_t dim) {
  return gen_chance(&G->rng, 0.25) ? i - dim : i;
}

static double scatter_mag(gen *G, int x, int u, const char *red) {
  double a = gen_mag(G, x), b = gen_mag(G, u);
  return strstr(red, "mul") ? a * b : a + b;
}

/* ScatterElements: along the axis, distinct targets per line (a prefix of a permutation). */
bool gen_b_scatter_el(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 3, true);
  if (x < 0) return false;
  int r = gen_rank(G, x), axis = gen_int(&G->rng, 0, r - 1);
  int64_t d[KILN_MAX_RANK], n = 1, dim = gen_dim(G, x, axis);
  if (dim > 64) return false;
  for (int k = 0; k < r; k++)
    d[k] = k == axis ? gen_int(&G->rng, 1, (int)dim) : gen_dim(G, x, k), n *= d[k];
  if (n > 512) return false;
  int64_t v[512], perm[64], inner = 1;
  const char *red = scatter_reduction(G, gen_dtype(G, x));
  bool rep = scatter_repeats(G, red, gen_dtype(G, x));
  for (int k = axis + 1; k < r; k++) inner *= d[k];
  for (int64_t outer = 0; outer < n / (d[axis] * inner); outer++)
    for (int64_t j = 0; j < inner; j++) {
      for (int64_t i = 0; i < dim; i++) perm[i] = i;
      shuffle(G, perm, (int)dim);
      for (int64_t i = 0; i < d[axis]; i++)
        v[(outer * d[axis] + i) * inner + j] =
            index_form(G, rep ? gen_int(&G->rng, 0, (int)dim - 1) : perm[i], dim);
    }
  kiln_type ut = gen_tensor_type(gen_dtype(G, x), r, d);
  int in[3] = {x, const_idx(G, r, d, v), gen_pick_type(G, &ut, DOM_ANY)};
  char a[64];
  gen_emit(G, "ScatterElements", 3, in, 1, ATTR("axis=%d%s", gen_axis_form(G, axis, r), red),
           DOM_ANY, scatter_mag(G, x, in[2], red));
  return true;
}

bool gen_b_scatter_nd(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 3, true);
  if (x < 0) return false;
  int r = gen_rank(G, x);
  int64_t dim0 = gen_dim(G, x, 0) < 64 ? gen_dim(G, x, 0) : 64, v[64];
  int64_t n = gen_int(&G->rng, 1, (int)dim0), d[2] = {n, 1};
  const char *red = scatter_reduction(G, gen_dtype(G, x));
  bool rep = scatter_repeats(G, red, gen_dtype(G, x));
  for (int64_t i = 0; i < dim0; i++) v[i] = i;
  shuffle(G, v, (int)dim0);
  for (int64_t i = 0; rep && i < n; i++) v[i] = gen_int(&G->rng, 0, (int)dim0 - 1);
  int64_t ud[KILN_MAX_RANK] = {n};
  for (int k = 1; k < r; k++) ud[k] = gen_dim(G, x, k);
  kiln_type ut = gen_tensor_type(gen_dtype(G, x), r, ud);
  int in[3] = {x, const_idx(G, 2, d, v), gen_pick_type(G, &ut, DOM_ANY)};
  gen_emit(G, "ScatterND", 3, in, 1, red[0] ? red + 2 : "", DOM_ANY, scatter_mag(G, x, in[2], red));
  return true;
}

bool gen_b_trilu(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 2, 4, false);
  if (x < 0) return false;
  int in[2] = {x, -1};
  if (gen_chance(&G->rng, 0.6)) {
    int64_t k = gen_int(&G->rng, -2, 2);
    in[1] = gen_const_i64(G, 1, &k, true);
  }
  char a[16];
  gen_emit(G, "Trilu", in[1] >= 0 ? 2 : 1, in, 1, ATTR("upper=%d", gen_int(&G->rng, 0, 1)), DOM_ANY,
           gen_mag(G, x));
  return true;
}

bool gen_b_onehot(gen *G, int op) {
  (void)op;
  int64_t depth = gen_int(&G->rng, 2, 6), d[2] = {gen_int(&G->rng, 1, 4), gen_int(&G->rng, 1, 3)},
          v[12];
  int ir = gen_int(&G->rng, 1, 2);
  for (int i = 0; i < 12; i++) v[i] = gen_int(&G->rng, (int)-depth, (int)depth - 1);
  kiln_dtype dt = gen_pick_dt(G, DT_NUM);
  int64_t two = 2;
  kiln_type vt = kiln_type_tensor(dt, 1, &two);
  int in[3] = {const_idx(G, ir, d, v), gen_const_i64(G, 1, &depth, true),
               gen_new_const(G, &vt, DOM_ANY)};
  if (gen_chance(&G->rng, 0.6)) { /* indices known only at run time, some out of range */
    kiln_type it = kiln_type_tensor(gen_chance(&G->rng, 0.5) ? KILN_I64 : KILN_I32, ir, d);
    in[0] = gen_new_ranged_input(G, &it, -depth - 1, depth);
  }
  if (gen_chance(&G->rng, 0.3)) in[2] = gen_new_input(G, &vt, DOM_ANY); /* off/on values too */
  char a[16];
  gen_emit(G, "OneHot", 3, in, 1, ATTR("axis=%d", gen_attr_int(G, -ir - 1, ir)), DOM_ANY, 6);
  return true;
}

bool gen_b_eyelike(gen *G, int op) {
  (void)op;
  gen_want w = {DT_NUM, 2, 2, DOM_ANY, true, false, 0, false, false};
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  char a[48];
  int len = snprintf(a, sizeof a, "k=%d", gen_int(&G->rng, -2, 2));
  if (gen_chance(&G->rng, 0.4))
    snprintf(a + len, sizeof a - (size_t)len, ", dtype=%d", (int)gen_pick_dt(G, DT_NUM));
  gen_emit(G, "EyeLike", 1, &x, 1, a, DOM_NONNEG, 1);
  return true;
}

bool gen_b_shape(gen *G, int op) {
  gen_want w = {DT_ALL, 0, 4, DOM_ANY, false, false, 0, false, true}; /* extents unknown too */
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  char a[32] = "";
  int r = gen_rank(G, x);
  if (!strcmp(op_name(op), "Shape") && G->opset >= 15 && r > 0 && gen_chance(&G->rng, 0.3))
    ATTR("start=%d", gen_attr_int(G, -r, r - 1));
  double mag = gen_v(G, x)->dyn ? 4096.0 * 64 * G->scale : (double)numel(G, x);
  gen_emit(G, op_name(op), 1, &x, 1, a, DOM_NONNEG, mag);
  return true;
}

bool gen_b_cos(gen *G, int op) {
  (void)op;
  int r = gen_int(&G->rng, 1, 3);
  int64_t s[3];
  gen_shape(G, r, 64, s);
  int in[1] = {gen_const_i64(G, r, s, false)};
  kiln_dtype dt = gen_pick_dt(G, DT_NUM);
  char a[64];
  int v = gen_attr_int(G, -3, 3);
  if (gen_attr_chance(G, 0.25)) /* absent: a float32 zero */
    gen_emit(G, "ConstantOfShape", 1, in, 1, "", DOM_ANY, 1);
  else
    gen_emit(G, "ConstantOfShape", 1, in, 1, ATTR("value=%s[1] [%d]", kiln_dtype_name(dt), v),
             DOM_ANY, 3);
  return true;
}

/* Shape -> Gather or Slice -> Concat -> Reshape: the chain exporters write for a symbolic batch
 * (shapefold, constfold), on any value, one of unknown extents too (whose Shape cannot fold
 * whole). The dims kept are one dim (Gather of index i or i - length of a Shape, with start and
 * end or without: as a scalar then Unsqueezed, or as a vector) or the first k + 1 (Slice of
 * the shape), then -1. */
bool gen_b_shapechain(gen *G, int op) {
  (void)op;
  gen_want w = {DT_ALL, 2, 4, DOM_ANY, false, false, 0, false, true};
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  int r = gen_rank(G, x), form = gen_int(&G->rng, 0, 2);
  double m = 4096.0 * 64 * G->scale; /* an extent bound */
  /* the gathered forms read any one dim, through a Shape with start (and end) now and then
   * (opset 15 on), the index counted from either end of that shape */
  int st = 0, len = r;
  char a[40] = "";
  if (form < 2 && G->opset >= 15 && gen_chance(&G->rng, 0.4)) {
    st = gen_int(&G->rng, 0, r - 1);
    int en = gen_chance(&G->rng, 0.5) ? r : gen_int(&G->rng, st + 1, r);
    if (en < r) ATTR("start=%d, end=%d", gen_chance(&G->rng, 0.3) ? st - r : st, en - r);
    else ATTR("start=%d", gen_chance(&G->rng, 0.3) ? st - r : st);
    len = en - st;
  }
  int s = gen_emit(G, "Shape", 1, &x, 1, a, DOM_NONNEG, m), g;
  int64_t j = form < 2 && gen_chance(&G->rng, 0.5) ? gen_int(&G->rng, 0, len - 1) : 0;
  int64_t first = gen_chance(&G->rng, 0.5) ? j : j - len, minus1 = -1, zero = 0;
  if (form == 0) { /* a scalar index, Unsqueezed back to a vector */
    int gi[2] = {s, gen_const_i64(G, 1, &first, true)};
    int sc = gen_emit(G, "Gather", 2, gi, 1, "axis=0", DOM_NONNEG, m);
    int ui[2] = {sc, gen_const_i64(G, 1, &zero, false)};
    g = gen_emit(G, "Unsqueeze", 2, ui, 1, "", DOM_NONNEG, m);
  } else if (form == 1) {
    int gi[2] = {s, gen_const_i64(G, 1, &first, false)};
    g = gen_emit(G, "Gather", 2, gi, 1, "axis=0", DOM_NONNEG, m);
  } else { /* the first k + 1 dims; the end in either form */
    int64_t k = gen_int(&G->rng, 0, r - 2), end = gen_chance(&G->rng, 0.5) ? k + 1 : k + 1 - r;
    int si[3] = {s, gen_const_i64(G, 1, &zero, false), gen_const_i64(G, 1, &end, false)};
    g = gen_emit(G, "Slice", 3, si, 1, "", DOM_NONNEG, m);
  }
  int ci[2] = {g, gen_const_i64(G, 1, &minus1, false)};
  int c = gen_emit(G, "Concat", 2, ci, 1, "axis=0", DOM_ANY, m);
  int ri[2] = {x, c};
  emit_like(G, "Reshape", 2, ri, "", x);
  G->vals.data[G->vals.len - 1].dyn = gen_v(G, x)->dyn;
  return true;
}

/* NonZero: a result whose extent depends on the data (kept on the heap by the runtime). Its
 * input is an integer or boolean value, or a float graph input or constant (a computed float
 * near 0 would make the count unstable). Half the time the result is a graph output that a
 * node also reads; the reader is one of Cast, Add, Transpose (results of data-dependent
 * extent again) or ReduceSum over the count (a static result). */
bool gen_b_nonzero(gen *G, int op) {
  (void)op;
  int x = pick_any(G, 1, 3, true);
  if (x < 0) return false;
  if (kiln_dtype_is_float(gen_dtype(G, x)) && !gen_v(G, x)->is_input && !gen_v(G, x)->is_const)
    return false;
  int r = gen_rank(G, x);
  double m = 1, cnt = (double)numel(G, x); /* m: an index bound; cnt: the count's */
  for (int d = 0; d < r; d++) m = fmax(m, (double)gen_dim(G, x, d));
  int y = gen_emit(G, "NonZero", 1, &x, 1, "", DOM_NONNEG, m);
  G->vals.data[y].dyn = true;
  int reader = gen_int(&G->rng, 0, 4);
  if (reader == 0) return true;
  G->vals.data[y].keep = gen_chance(&G->rng, 0.5);
  int z, in[2] = {y, y};
  char a[32];
  if (reader == 1) z = gen_emit(G, "Cast", 1, in, 1, ATTR("to=%d", (int)KILN_F32), DOM_NONNEG, m);
  else if (reader == 2) z = gen_emit(G, "Add", 2, in, 1, "", DOM_NONNEG, 2 * m);
  else if (reader == 3) z = gen_emit(G, "Transpose", 1, in, 1, "", DOM_NONNEG, m);
  else {
    int64_t ax[1] = {1};
    in[1] = gen_const_i64(G, 1, ax, false);
    z = gen_emit(G, "ReduceSum", 2, in, 1, "keepdims=0", DOM_NONNEG, m * cnt);
    return true; /* [r]: static */
  }
  G->vals.data[z].dyn = true;
  return true;
}
