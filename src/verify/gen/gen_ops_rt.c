/* Generator builders of what the runtime and the memory plan see rather than the graph passes:
 * shapes known only at run time (a Reshape, Expand, Tile or Slice whose shape-like operand is
 * a graph input, a Range of run-time scalars, a ConstantOfShape of a run-time shape: values
 * kept on the heap, reference kernels, views the runtime must resolve late), and several
 * aliases of one storage read by one group of elementwise ops (a value and views of it read
 * side by side, so that an output written in place over one alias is wrong while another is
 * still to be read). */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

#define ATTR(...) (snprintf(a, sizeof a, __VA_ARGS__), a)

static int64_t count(const int64_t *d, int r) {
  int64_t n = 1;
  for (int i = 0; i < r; i++) n *= d[i];
  return n;
}

/* A shape-like operand of n int64 entries vals that the compiler sees only at run time: one
 * run-time input; a Concat of run-time pieces and constant ones (as exporters build a shape
 * from a batch dim and fixed dims); or a run-time int32 input cast to int64. */
static int rt_operand(gen *G, int n, const int64_t *vals) {
  int form = n >= 2 ? gen_int(&G->rng, 0, 2) : gen_chance(&G->rng, 0.7) ? 0 : 2;
  for (int i = 0; i < n && form == 2; i++) /* (an INT64_MAX end has no int32 form) */
    if (vals[i] != (int32_t)vals[i]) form = 0;
  if (form == 0) return gen_new_fixed_input(G, KILN_I64, n, vals, false);
  if (form == 2) {
    int x = gen_new_fixed_input(G, KILN_I32, n, vals, false);
    char a[16];
    return gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d", (int)KILN_I64), DOM_ANY, 1e6);
  }
  int parts[16], np = 0, i = 0;
  bool any_rt = false;
  while (i < n && np < 16) {
    int len = gen_int(&G->rng, 1, n - i);
    bool rt = gen_chance(&G->rng, 0.5) || (!any_rt && i + len == n);
    parts[np++] = rt ? gen_new_fixed_input(G, KILN_I64, len, vals + i, false)
                     : gen_const_i64(G, len, vals + i, false);
    any_rt = any_rt || rt, i += len;
  }
  return gen_emit(G, "Concat", np, parts, 1, "axis=0", DOM_ANY, 1e6);
}

/* One run-time shape step on y of true extents d[0..*r): a Reshape to another factorization
 * (a -1, or 0 for a kept dim, now and then), an Expand (1s grown, a leading dim added), a Tile
 * or a Slice of run-time starts and ends; d and *r updated. The result is marked as of
 * unknown extents (dyn): only this builder reads it. -1 when nothing fits. */
static int rt_step(gen *G, int y, int64_t *d, int *r, double mag, int *last) {
  /* half the time the step before's kind again: two run-time Reshapes in a row are a view of
     a view, whose types say nothing of their extents */
  int kind = *last >= 0 && gen_chance(&G->rng, 0.5) ? *last : gen_int(&G->rng, 0, 3), n = 0;
  *last = kind;
  int64_t s[KILN_MAX_RANK * 2], nd[KILN_MAX_RANK], total = count(d, *r);
  int nr = 0, z = -1;
  if (kind == 0 || *r == 0) { /* Reshape */
    int64_t left = total;
    int want = gen_int(&G->rng, 1, 4);
    while (nr < want - 1 && left > 1) {
      int64_t f = 1;
      for (int64_t c = gen_int(&G->rng, 1, 6); c >= 2; c--)
        if (left % c == 0) {
          f = c;
          break;
        }
      nd[nr++] = f, left /= f;
    }
    nd[nr++] = left;
    memcpy(s, nd, sizeof(int64_t) * (size_t)nr);
    if (gen_chance(&G->rng, 0.3)) s[gen_int(&G->rng, 0, nr - 1)] = -1;
    for (int i = 0; i < nr && i < *r; i++)
      if (s[i] == d[i] && gen_chance(&G->rng, 0.3)) s[i] = 0; /* copy the input's dim */
    int in[2] = {y, rt_operand(G, nr, s)};
    z = gen_emit(G, "Reshape", 2, in, 1, "", gen_v(G, y)->dom, mag);
  } else if (kind == 1) { /* Expand */
    int lead = *r < 4 ? gen_int(&G->rng, 0, 1) : 0;
    for (int i = 0; i < lead; i++) nd[nr++] = gen_int(&G->rng, 1, 3);
    for (int i = 0; i < *r; i++) nd[nr++] = d[i] == 1 && gen_chance(&G->rng, 0.5) ? 3 : d[i];
    if (count(nd, nr) > 512) return -1;
    memcpy(s, nd, sizeof(int64_t) * (size_t)nr);
    for (int i = lead; i < nr; i++) /* a 1 where the input's extent stays: Expand keeps it */
      if (nd[i] == d[i - lead] && gen_chance(&G->rng, 0.2)) s[i] = 1;
    int in[2] = {y, rt_operand(G, nr, s)};
    z = gen_emit(G, "Expand", 2, in, 1, "", gen_v(G, y)->dom, mag);
  } else if (kind == 2) { /* Tile */
    for (int i = 0; i < *r; i++) s[i] = gen_chance(&G->rng, 0.6) ? 1 : 2, nd[nr++] = d[i] * s[i];
    if (count(nd, nr) > 512) return -1;
    int in[2] = {y, rt_operand(G, *r, s)};
    z = gen_emit(G, "Tile", 2, in, 1, "", gen_v(G, y)->dom, mag);
  } else { /* Slice: starts and ends at run time, axes and steps constant or absent */
    int64_t st[KILN_MAX_RANK], en[KILN_MAX_RANK], ax[KILN_MAX_RANK], sp[KILN_MAX_RANK];
    if (*r < 1 || *r > KILN_MAX_RANK) return -1;
    memcpy(nd, d, sizeof(int64_t) * (size_t)*r), nr = *r;
    bool all = gen_chance(&G->rng, 0.3); /* every axis in order: axes may be left out */
    for (int i = 0; i < *r; i++) {
      if (!all && !gen_chance(&G->rng, 0.5)) continue;
      int64_t stp = all ? 1 : gen_chance(&G->rng, 0.7) ? 1 : gen_chance(&G->rng, 0.5) ? 2 : -1;
      int64_t b = gen_int(&G->rng, 0, (int)d[i] - 1), e;
      e = stp > 0 ? gen_int(&G->rng, (int)b + 1, (int)d[i]) : gen_int(&G->rng, -1, (int)b - 1);
      st[n] = gen_slice_bound(G, b, d[i]), en[n] = gen_slice_bound(G, e, d[i]);
      if (gen_slice_clamp(st[n], d[i], stp) != b) st[n] = b; /* a written form off its place */
      if (gen_slice_clamp(en[n], d[i], stp) != e) en[n] = e < 0 ? INT64_MIN : e;
      ax[n] = gen_chance(&G->rng, 0.3) ? i - *r : i, sp[n++] = stp;
      nd[i] = stp > 0 ? (e - b + stp - 1) / stp : (b - e - stp - 1) / -stp;
    }
    if (n == 0) return -1;
    int in[5] = {y, rt_operand(G, n, st), rt_operand(G, n, en), -1, -1}, n_in = 3;
    bool ones = true;
    for (int i = 0; i < n; i++) ones = ones && sp[i] == 1;
    if (!all || !ones || gen_chance(&G->rng, 0.5)) in[3] = gen_const_i64(G, n, ax, false), n_in = 4;
    if (!ones || (n_in == 4 && gen_chance(&G->rng, 0.3)))
      in[4] = gen_const_i64(G, n, sp, false), n_in = 5;
    if (n_in == 5 && in[3] < 0) return -1;
    z = gen_emit(G, "Slice", n_in, in, 1, "", gen_v(G, y)->dom, mag);
  }
  if (z < 0) return -1;
  G->vals.data[z].dyn = true;
  memcpy(d, nd, sizeof(int64_t) * (size_t)nr), *r = nr;
  return z;
}

/* One piece of a shape built from y's (s = Shape(y), r entries): entries p[0..n) of y's
 * shape as a 1-D int64 value, written as exporters write such arithmetic: a Gather of s (an
 * index of one entry, negative now and then), a Slice of s (an ascending run, or a descending
 * one with step -1, bounds in their negative or past-the-end forms, axes and steps left out
 * now and then), or Shape(y) with start and end (opset 15) for an ascending run. */
static int shape_piece(gen *G, int y, int s, int r, const int64_t *p, int n) {
  bool up = true, down = n > 1;
  for (int i = 1; i < n; i++) up = up && p[i] == p[i - 1] + 1, down = down && p[i] == p[i - 1] - 1;
  char a[64];
  if (up && G->opset >= 15 && gen_chance(&G->rng, 0.3)) {
    int64_t st = gen_chance(&G->rng, 0.5) ? p[0] - r : p[0], en = p[n - 1] + 1;
    if (en == r && gen_chance(&G->rng, 0.5))
      return gen_emit(G, "Shape", 1, &y, 1, ATTR("start=%lld", (long long)st), DOM_ANY, 1e6);
    return gen_emit(G, "Shape", 1, &y, 1,
                    ATTR("start=%lld end=%lld", (long long)st,
                         (long long)(en < r && gen_chance(&G->rng, 0.5) ? en - r : en)),
                    DOM_ANY, 1e6);
  }
  if (n == 1 || (!up && !down)) { /* a Gather of the entries, in any order */
    int64_t idx[KILN_MAX_RANK];
    for (int i = 0; i < n; i++) idx[i] = gen_chance(&G->rng, 0.3) ? p[i] - r : p[i];
    int in[2] = {s, gen_const_i64(G, n, idx, false)};
    return gen_emit(G, "Gather", 2, in, 1, gen_chance(&G->rng, 0.5) ? "axis=0" : "", DOM_ANY, 1e6);
  }
  int64_t step = up ? 1 : -1, b = p[0], e = p[n - 1] + step; /* e may be -1 or r */
  int64_t st = gen_slice_bound(G, b, r), en = gen_slice_bound(G, e, r);
  if (gen_slice_clamp(st, r, step) != b) st = b;
  if (gen_slice_clamp(en, r, step) != e) en = e < 0 ? INT64_MIN : e;
  int64_t ax = gen_chance(&G->rng, 0.5) ? 0 : -1;
  int in[5] = {s, gen_const_i64(G, 1, &st, false), gen_const_i64(G, 1, &en, false), -1, -1};
  int n_in = 3;
  if (step < 0 || gen_chance(&G->rng, 0.5)) in[3] = gen_const_i64(G, 1, &ax, false), n_in = 4;
  if (step < 0 || (n_in == 4 && gen_chance(&G->rng, 0.3)))
    in[4] = gen_const_i64(G, 1, &step, false), n_in = 5;
  return gen_emit(G, "Slice", n_in, in, 1, "", DOM_ANY, 1e6);
}

/* y (extents d[0..r) known only at run time) reshaped to a permutation of its own extents,
 * the shape computed from Shape(y) by pieces (shape_piece) joined by a Concat; d permuted.
 * -1 when it does not fit. The graph passes fold what of it they know (shapefold). */
static int shape_arith(gen *G, int y, int64_t *d, int r, double mag) {
  if (r < 1 || r > KILN_MAX_RANK) return -1;
  int64_t p[KILN_MAX_RANK], nd[KILN_MAX_RANK];
  for (int i = 0; i < r; i++) p[i] = i;
  /* kept, reversed, shuffled; an extent that may be 0 (d NULL) is kept in place unless
     allowzero says that a 0 is an extent, not "copy the input's" */
  bool zero = !d, allowzero = zero && G->opset >= 14;
  int kind = zero && !allowzero ? 0 : gen_int(&G->rng, 0, 2);
  for (int i = 0; kind == 1 && i < r / 2; i++) {
    int64_t t = p[i];
    p[i] = p[r - 1 - i], p[r - 1 - i] = t;
  }
  for (int i = r - 1; kind == 2 && i > 0; i--) {
    int j = gen_int(&G->rng, 0, i);
    int64_t t = p[i];
    p[i] = p[j], p[j] = t;
  }
  int s = gen_emit(G, "Shape", 1, &y, 1, "", DOM_ANY, 1e6);
  if (s < 0) return -1;
  G->vals.data[s].dyn = true;
  int parts[KILN_MAX_RANK + 1], np = 0;
  for (int i = 0; i < r;) {
    int len = gen_int(&G->rng, 1, r - i);
    int q = shape_piece(G, y, s, r, p + i, len);
    if (q < 0) return -1;
    G->vals.data[q].dyn = true;
    parts[np++] = q, i += len;
  }
  if (gen_chance(&G->rng, 0.15)) { /* an empty piece: a Slice of s from its end (s[r:]) */
    int64_t st = gen_chance(&G->rng, 0.5) ? r : r + gen_int(&G->rng, 1, 3), en = INT64_MAX;
    int in[3] = {s, gen_const_i64(G, 1, &st, false), gen_const_i64(G, 1, &en, false)};
    int q = gen_emit(G, "Slice", 3, in, 1, "", DOM_ANY, 1e6);
    if (q < 0) return -1;
    G->vals.data[q].dyn = true;
    int at = gen_int(&G->rng, 0, np);
    memmove(parts + at + 1, parts + at, sizeof parts[0] * (size_t)(np - at));
    parts[at] = q, np++;
  }
  int sh = np == 1 ? parts[0] : gen_emit(G, "Concat", np, parts, 1, "axis=0", DOM_ANY, 1e6);
  if (sh < 0) return -1;
  G->vals.data[sh].dyn = true;
  int in[2] = {y, sh};
  int z = gen_emit(G, "Reshape", 2, in, 1, allowzero ? "allowzero=1" : "", gen_v(G, y)->dom, mag);
  if (z < 0) return -1;
  for (int i = 0; d && i < r; i++) nd[i] = d[p[i]];
  if (d) memcpy(d, nd, sizeof(int64_t) * (size_t)r);
  G->vals.data[z].dyn = true;
  return z;
}

/* x (any dtype, static) through one to three run-time shape steps; then either back to a
 * static shape (a Reshape to a constant shape, so the rest of the graph reads it as any
 * value), or read at its run-time shape by an elementwise op: a unary op, an Add of a
 * ConstantOfShape of the same run-time shape, or a Range of run-time scalars broadcast
 * against it. */
bool gen_b_rtshape(gen *G, int op) {
  (void)op;
  if (G->opset < 11) return false;
  gen_want w = {DT_ALL, 0, 4, DOM_ANY, true, false, 0, false, false};
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  int r = gen_rank(G, x);
  if (r >= 1 && gen_chance(&G->rng, 0.15)) {
    /* the indices of NonZero(x) ([rank, count], the count known at run time only, perhaps
       0), transposed now and then, reshaped by a shape computed from their own Shape: the
       rank is a known entry of that Shape, which the graph passes fold */
    int64_t n = 1; /* the largest index is below every extent */
    for (int i = 0; i < r; i++) n *= gen_dim(G, x, i);
    int nz = gen_emit(G, "NonZero", 1, &x, 1, "", DOM_POS, (double)n);
    if (nz < 0) return false;
    G->vals.data[nz].dyn = true;
    if (gen_chance(&G->rng, 0.5)) {
      nz = gen_emit(G, "Transpose", 1, &nz, 1, "perm=[1, 0]", DOM_POS, gen_mag(G, nz));
      if (nz < 0) return false;
      G->vals.data[nz].dyn = true;
    }
    int z = shape_arith(G, nz, NULL, 2, gen_mag(G, nz));
    if (z < 0) return false;
    z = gen_emit(G, "Neg", 1, &z, 1, "", DOM_ANY, gen_mag(G, nz));
    if (z < 0) return false;
    G->vals.data[z].dyn = true;
    G->vals.data[z].keep = true;
    return true;
  }
  int64_t d[KILN_MAX_RANK * 2];
  for (int i = 0; i < r; i++) d[i] = gen_dim(G, x, i);
  double mag = gen_mag(G, x);
  int y = x, steps = gen_int(&G->rng, 1, 3), last = -1;
  for (int k = 0; k < steps; k++) {
    int z = rt_step(G, y, d, &r, mag, &last);
    if (z >= 0) y = z;
  }
  if (y == x) return false;
  if (gen_chance(&G->rng, 0.35)) { /* a shape computed from the run-time shape itself */
    int z = shape_arith(G, y, d, r, mag);
    if (z >= 0) y = z;
  }
  kiln_dtype dt = gen_dtype(G, x);
  int end = gen_chance(&G->rng, 0.25) ? 0 : gen_int(&G->rng, 1, 3);
  if (end == 0) {                                   /* static again */
    int in[2] = {y, gen_const_i64(G, r, d, false)}; /* a scalar: the empty shape */
    gen_emit(G, "Reshape", 2, in, 1, "", gen_v(G, x)->dom, mag);
    return true;
  }
  int z;
  char a[64];
  if (end == 1 || dt == KILN_BOOL) {
    static const char *const un[] = {"Identity", "Neg", "Abs"};
    const char *u = dt == KILN_BOOL ? "Not" : un[gen_int(&G->rng, 0, 2)];
    if (kiln_dtype_class_of(dt) == KILN_CLASS_UINT) u = "Identity";
    z = gen_emit(G, u, 1, &y, 1, "", gen_v(G, x)->dom, mag);
  } else if (end == 2) { /* + ConstantOfShape(the same run-time shape) */
    int c =
        gen_emit(G, "ConstantOfShape", 1, (int[]){rt_operand(G, r, d)}, 1,
                 ATTR("value=%s[1] [%d]", kiln_dtype_name(dt), gen_int(&G->rng, 1, 2)), DOM_POS, 2);
    G->vals.data[c].dyn = true;
    int in[2] = {y, c};
    z = gen_emit(G, gen_chance(&G->rng, 0.5) ? "Add" : "Mul", 2, in, 1, "", DOM_ANY, 2 * mag + 2);
  } else { /* + Range(start, start + n * delta, delta) over the last axis, all at run time */
    if (r == 0 || !kiln_dtype_is_float(dt)) return false;
    int64_t n = d[r - 1], st = gen_int(&G->rng, -3, 3), dl = gen_chance(&G->rng, 0.5) ? 1 : -2;
    int64_t lim = st + n * dl;
    int ri[3] = {gen_new_fixed_input(G, KILN_I64, 1, &st, true),
                 gen_new_fixed_input(G, KILN_I64, 1, &lim, true),
                 gen_new_fixed_input(G, KILN_I64, 1, &dl, true)};
    int rg = gen_emit(G, "Range", 3, ri, 1, "", DOM_ANY, 3.0 + 2.0 * (double)n);
    G->vals.data[rg].dyn = true;
    int cf = gen_emit(G, "Cast", 1, &rg, 1, ATTR("to=%d", (int)dt), DOM_ANY, 3.0 + 2.0 * (double)n);
    G->vals.data[cf].dyn = true;
    int in[2] = {gen_chance(&G->rng, 0.5) ? y : cf, 0};
    in[1] = in[0] == y ? cf : y;
    z = gen_emit(G, "Add", 2, in, 1, "", DOM_ANY, mag + 3.0 + 2.0 * (double)n);
  }
  G->vals.data[z].dyn = true;
  G->vals.data[z].keep = true;
  return true;
}

/* A view of t whose shape broadcasts with t's both ways: Identity, Unsqueeze of a leading
 * axis, a Reshape to t's own dims (or with a 1 in front), Flatten where it keeps the dims,
 * Squeeze of t's unit dims, an Expand to t's own shape. -1 when none fits. */
static int view_of(gen *G, int t) {
  int r = gen_rank(G, t), kind = gen_int(&G->rng, 0, 5);
  int64_t d[KILN_MAX_RANK + 1], ax = 0, unit[KILN_MAX_RANK];
  int nu = 0;
  for (int i = 0; i < r; i++) {
    d[i + 1] = gen_dim(G, t, i);
    if (d[i + 1] == 1) unit[nu++] = i;
  }
  d[0] = 1;
  gen_dom dom = gen_v(G, t)->dom;
  double m = gen_mag(G, t);
  if (kind == 1 && r < 5) return gen_emit_axes(G, "Unsqueeze", t, 1, &ax);
  if (kind == 2) {
    bool lead = r < 5 && gen_chance(&G->rng, 0.5);
    int in[2] = {t, gen_const_i64(G, r + lead, d + !lead, r + lead == 0)};
    if (r + lead == 0) in[1] = gen_const_i64(G, 0, d, false);
    return gen_emit(G, "Reshape", 2, in, 1, "", dom, m);
  }
  if (kind == 3 && r == 2) return gen_emit(G, "Flatten", 1, &t, 1, "axis=1", dom, m);
  if (kind == 3 && r == 1) return gen_emit(G, "Flatten", 1, &t, 1, "axis=0", dom, m);
  if (kind == 4 && nu > 0) {
    int n = gen_int(&G->rng, 1, nu);
    return gen_emit_axes(G, "Squeeze", t, n, unit + nu - n);
  }
  if (kind == 5 && r > 0) {
    int in[2] = {t, gen_const_i64(G, r, d + 1, false)};
    return gen_emit(G, "Expand", 2, in, 1, "", dom, m);
  }
  return gen_emit(G, "Identity", 1, &t, 1, "", dom, m);
}

/* t (an inner value) and one or two views of it read by a chain of two or three elementwise
 * ops, in either operand order: y1 = f(view, t), y2 = g(y1, t or a view), ...; t is read by
 * nothing else, so the plan may give an output t's storage while a view of it is still to
 * be read (the memory plan's in-place choice, fusion's view handling). Now and then one of
 * the aliases is also a graph output. */
bool gen_b_alias(gen *G, int op) {
  (void)op;
  gen_want w = {DT_FLOAT | DT_INT, 0, 4, DOM_ANY, true, false, 0, false, false};
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  kiln_dtype dt = gen_dtype(G, x);
  static const char *const pre[] = {"Relu", "Neg", "Abs", "Tanh", "Sigmoid"};
  const char *p = kiln_dtype_is_float(dt) ? pre[gen_int(&G->rng, 0, 4)] : "Neg";
  bool bounded = !strcmp(p, "Tanh") || !strcmp(p, "Sigmoid");
  int t = gen_emit(G, p, 1, &x, 1, "", DOM_ANY, bounded ? 1 : gen_mag(G, x));
  if (!gen_settle(G)) return false;
  int al[3] = {t, view_of(G, t), -1};
  if (al[1] < 0 || !gen_settle(G)) return false;
  int n_al = 2;
  if (gen_chance(&G->rng, 0.4)) {
    al[2] = view_of(G, t);
    if (al[2] >= 0 && gen_settle(G)) n_al = 3;
  }
  /* now and then a view, or t itself, is a graph output too: an output that shares its
     storage with another value the chain reads */
  if (gen_chance(&G->rng, 0.25)) G->vals.data[al[gen_int(&G->rng, 0, n_al - 1)]].keep = true;
  static const char *const fo[] = {"Add", "Sub", "Mul", "Max", "Min"};
  int y = -1, links = gen_int(&G->rng, 2, 3);
  double m = gen_mag(G, t);
  for (int k = 0; k < links; k++) {
    int a0 = k == 0 ? al[gen_int(&G->rng, 1, n_al - 1)] : y;
    int a1 = al[k == 0 ? 0 : gen_int(&G->rng, 0, n_al - 1)];
    const char *f = fo[gen_int(&G->rng, 0, 4)];
    if (!kiln_dtype_is_float(dt) && !strcmp(f, "Mul") && m > 100) f = "Add";
    double mm = !strcmp(f, "Mul") ? m * m + 1 : 2 * m + 1;
    int in[2] = {gen_chance(&G->rng, 0.5) ? a0 : a1, 0};
    in[1] = in[0] == a0 ? a1 : a0;
    y = gen_emit(G, f, 2, in, 1, "", DOM_ANY, mm);
    m = mm;
    if (y < 0 || !gen_settle(G)) return false;
  }
  return true;
}
