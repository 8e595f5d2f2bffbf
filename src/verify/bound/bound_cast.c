/* Error rules with discrete results: elementwise comparisons and roundings (DISCRETE),
 * Cast/CastLike (CAST) and ArgMax/ArgMin (ARGMINMAX).
 *
 * A discrete result is exact when it cannot change within the input intervals; an element
 * whose result could change is "unstable" (the reference cannot say which value a correct
 * implementation gives). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_internal.h"

/* Whether element i of two outputs differs (NaN equals NaN). */
static bool elem_differs(const kiln_tensor *a, const kiln_tensor *c, int64_t i) {
  if (kiln_dtype_is_float(a->dtype)) {
    double x = kiln_load_f64(a->dtype, a->data, (size_t)i);
    double y = kiln_load_f64(c->dtype, c->data, (size_t)i);
    return !(x == y || (isnan(x) && isnan(y)));
  }
  if (a->dtype == KILN_STRING) return strcmp(((char **)a->data)[i], ((char **)c->data)[i]) != 0;
  size_t sz = kiln_dtype_size(a->dtype);
  return memcmp((char *)a->data + i * sz, (char *)c->data + i * sz, sz) != 0;
}

/* Equal of floats: unstable where |a - b| <= e_a + e_b (an equality no corner reaches). */
static int64_t equal_unstable(const bnd_node *b, kiln_tensor *const *wide, const kiln_tensor *y,
                              bool *bad) {
  if (b->n->op != KILN_OP_Equal || b->n->n_inputs != 2 || !y || b->n->inputs[0] == b->n->inputs[1])
    return 0;
  const kiln_val *a = b->in[0], *c = b->in[1];
  if (!kiln_bnd_is_float_val(a) || !kiln_bnd_is_float_val(c) || a->t->dtype != KILN_F64 ||
      c->t->dtype != KILN_F64 || (!wide[0] && !wide[1]))
    return 0;
  int64_t *ia = kiln_bnd_bcast_index(a->t, y), *ic = kiln_bnd_bcast_index(c->t, y), n = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    double ea = wide[0] ? ((double *)wide[0]->data)[ia[i]] : 0;
    double ec = wide[1] ? ((double *)wide[1]->data)[ic[i]] : 0;
    double d = fabs(((double *)a->t->data)[ia[i]] - ((double *)c->t->data)[ic[i]]);
    if (ea + ec > 0 && d <= ea + ec && !bad[i]) bad[i] = true, n++;
  }
  free(ia), free(ic);
  return n;
}

/* ---- DISCRETE: elementwise; the corners (3^k: each input at x - e', x, x + e' with
 * e' = e + ulps u |x|, the op's own rounding before the discrete step) decide, and one more
 * point with the inputs at 0 where their interval holds 0 (Cast to bool, x != 0); Equal
 * by the distance of its operands. A float output (Floor, Round, Sign ...) gets as error
 * the largest jump over the corners. ---- */
kiln_status kiln_bnd_discrete(bnd_node *b, double ulps) {
  int ni = b->n->n_inputs, nf = 0;
  int *fi = kiln_xcalloc((size_t)ni + 1, sizeof *fi);
  kiln_tensor **wide = kiln_xcalloc((size_t)ni + 1, sizeof *wide);
  for (int i = 0; i < ni; i++) {
    if (!kiln_bnd_is_float_val(b->in[i]) || b->in[i]->t->dtype != KILN_F64) continue;
    if (!b->ein[i] && ulps == 0) continue;
    const kiln_tensor *x = b->in[i]->t;
    kiln_tensor *w = wide[i] = kiln_bnd_zeros_like(x);
    for (int64_t j = 0; j < x->numel; j++)
      ((double *)w->data)[j] = (b->ein[i] ? ((double *)b->ein[i]->data)[j] : 0) +
                               ulps * b->u_in * fabs(((double *)x->data)[j]);
    fi[nf++] = i;
  }
  /* an input repeated (Less(x, x)) moves with its first occurrence: one variable */
  int *var = kiln_xcalloc((size_t)ni + 1, sizeof *var), nv = 0;
  for (int j = 0; j < nf; j++) {
    var[j] = nv;
    for (int q = 0; q < j; q++)
      if (b->n->inputs[fi[q]] == b->n->inputs[fi[j]]) var[j] = var[q];
    if (var[j] == nv) nv++;
  }
  int ncorner = 1;
  for (int j = 0; j < nv && ncorner < 81; j++) ncorner *= 3;
  bool joint = nv > 4; /* many inputs: only all-minus and all-plus */
  if (joint) ncorner = 2;
  bnd_node wb = *b;
  wb.ein = wide;
  kiln_tensor *y = b->out[0] && b->out[0]->t ? b->out[0]->t : NULL;
  bool *bad = y ? kiln_xcalloc((size_t)y->numel + 1, 1) : NULL;
  kiln_tensor *jump = y && kiln_dtype_is_float(y->dtype) ? kiln_bnd_zeros_like(y) : NULL;
  kiln_status st = KILN_OK;
  bnd_subst *how = kiln_xcalloc((size_t)ni + 1, sizeof *how);
  for (int c = 0; y && nf && c <= ncorner && !st; c++) {
    for (int i = 0; i < ni; i++) how[i] = BND_SAME;
    for (int j = 0; c == ncorner && j < nf; j++) how[fi[j]] = BND_NEAR0; /* the zero point */
    for (int j = 0; c < ncorner && j < nf; j++) {
      int cc = c;
      for (int q = 0; q < var[j]; q++) cc /= 3;
      how[fi[j]] = joint ? (c ? BND_PLUS : BND_MINUS)
                         : (cc % 3 == 0   ? BND_SAME
                            : cc % 3 == 1 ? BND_PLUS
                                          : BND_MINUS);
    }
    kiln_val **o = NULL;
    kiln_status es = kiln_bnd_eval_how(&wb, KILN_OP_UNKNOWN, how, &o);
    if (es) {
      kiln_status_free(es);
      kiln_bnd_unstable(b, 1, "the op fails on perturbed inputs");
      continue;
    }
    const kiln_tensor *ct = o[0] ? o[0]->t : NULL;
    if (!ct || ct->numel != y->numel || ct->dtype != y->dtype) {
      memset(bad, 1, (size_t)y->numel);
    } else {
      for (int64_t i = 0; i < y->numel; i++) {
        if (!elem_differs(y, ct, i)) continue;
        bad[i] = true;
        if (jump)
          ((double *)jump->data)[i] = fmax(((double *)jump->data)[i],
                                           fabs(((double *)ct->data)[i] - ((double *)y->data)[i]));
      }
    }
    kiln_bnd_free_outs(b, o);
  }
  if (y) equal_unstable(b, wide, y, bad);
  int64_t nbad = 0;
  for (int64_t i = 0; y && i < y->numel; i++) nbad += bad[i];
  kiln_bnd_unstable(b, nbad, "a discrete result can change within the input error");
  b->eout[0] = jump;
  free(how), free(bad), free(fi), free(var);
  for (int i = 0; i < ni; i++) kiln_tensor_free(wide[i]);
  free(wide);
  return st;
}

/* ---- CAST to a float type. The rounding to the target is the op's meaning, not a freedom: a
 * correct kernel rounds its input x' (|x' - x| <= e) to the target, and rounding is monotonic,
 * so its result lies between round(x - e) and round(x + e). The reference is round(x) and the
 * bound the larger distance to those corners: 0 for an exact input, so a Cast that a pass drops
 * or a kernel skips is caught. The input itself is held in its own dtype (x' is round_from of
 * a value within e of x), so a Cast to a type that holds every value of the source (f16 -> f16,
 * f16 -> f32, f32 -> f64) is exact: y = x with error e; a narrowing Cast takes the corners
 * round_to(round_from(x +- e)). From f64 to f16 or bf16 the rounding is once, from the double:
 * through f32 it can round twice (1 + 2^-11 + 2^-40 becomes 1 + 2^-11 in f32, a tie that rounds
 * to 1 in f16, where the direct rounding gives 1 + 2^-10). A corner that leaves the target's
 * range while x does not is unstable. f8/f4 targets (saturation modes) keep the looser model: the
 * reference stays x and the error grows by the rounding, e (1 + u) + u |x| + tiny; a float8 cast
 * with saturate=0 rounds out-of-range values to NaN (or an infinity), and is unstable where a
 * corner of the input's interval would. To other types: DISCRETE. ---- */
static double round_to(kiln_dtype to, double v) {
  uint64_t tmp = 0;
  kiln_store_f64(to, &tmp, 0, v);
  return kiln_load_f64(to, &tmp, 0);
}

/* A float8 cast with saturate=0: out of range is NaN (or an infinity), not the largest
 * finite value that round_to's encoding saturates to. */
static double round_f8_nosat(kiln_dtype to, double v) {
  uint8_t c = kiln_f64_to_f8(to, v, false);
  return kiln_load_f64(to, &c, 0);
}

static bool is_f8(kiln_dtype t) {
  return t == KILN_F8E4M3FN || t == KILN_F8E4M3FNUZ || t == KILN_F8E5M2 || t == KILN_F8E5M2FNUZ;
}

static bool exact_rounding(kiln_dtype to) {
  return to == KILN_F64 || to == KILN_F32 || to == KILN_F16 || to == KILN_BF16;
}

/* True when every value of the float type from is a value of to. */
static bool holds(kiln_dtype to, kiln_dtype from) {
  bool narrow16 = from == KILN_F16 || from == KILN_BF16;
  return from == to || (to == KILN_F64 && (from == KILN_F32 || narrow16)) ||
         (to == KILN_F32 && narrow16);
}

/* Element i of x; a 64-bit integer as a double rounded to odd (kiln_u64_to_f64_odd), so that
 * its rounding to a narrower float is one rounding. */
static double load_odd(const kiln_tensor *x, int64_t i) {
  if (x->dtype == KILN_U64) return kiln_u64_to_f64_odd(kiln_load_u64(x->dtype, x->data, (size_t)i));
  if (x->dtype == KILN_I64) return kiln_i64_to_f64_odd(kiln_load_i64(x->dtype, x->data, (size_t)i));
  return kiln_load_f64(x->dtype, x->data, (size_t)i);
}

/* x held in the float type from (unchanged for other types). */
static double held(kiln_dtype from, double v) {
  return kiln_dtype_is_float(from) && from != KILN_F64 ? round_to(from, v) : v;
}

/* The bound of one element rounded exactly: r = round(x); INFINITY when a corner leaves the
 * range (or NaN) while r does not. */
static double rounded_err(kiln_dtype from, kiln_dtype to, double xv, double ev, double r) {
  if (ev == 0) return 0; /* an exact input rounds once, to r (load_odd for 64-bit integers) */
  double lo = held(from, xv - ev), hi = held(from, xv + ev);
  double c[2] = {round_to(to, lo), round_to(to, hi)};
  double err = 0;
  for (int k = 0; k < 2; k++) {
    if (c[k] == r) continue;
    if (!isfinite(c[k]) || !isfinite(r)) return INFINITY;
    err = fmax(err, fabs(c[k] - r));
  }
  return err;
}

/* [lo, hi] of an integer dtype as doubles (false for other types). */
static bool int_range(kiln_dtype t, double *lo, double *hi) {
  switch (t) {
  case KILN_I8: *lo = -0x1p7, *hi = 0x1p7 - 1; return true;
  case KILN_I16: *lo = -0x1p15, *hi = 0x1p15 - 1; return true;
  case KILN_I32: *lo = -0x1p31, *hi = 0x1p31 - 1; return true;
  case KILN_I64: *lo = -0x1p63, *hi = 0x1p63; return true; /* hi: 2^63 - 1 rounds up */
  case KILN_U8: *lo = 0, *hi = 0x1p8 - 1; return true;
  case KILN_U16: *lo = 0, *hi = 0x1p16 - 1; return true;
  case KILN_U32: *lo = 0, *hi = 0x1p32 - 1; return true;
  case KILN_U64: *lo = 0, *hi = 0x1p64; return true;
  default: return false;
  }
}

/* A float cast to an integer type is undefined in ONNX (and in C) where the value, truncated,
 * leaves the target's range: the reference's wrap is one choice among many, so an element
 * whose interval [x - e, x + e] reaches past the range (or is NaN / Inf) is unstable. Its
 * interval truncates to values in [lo, hi] exactly when lo - 1 < x - e and x + e < hi + 1
 * (for 64-bit targets lo - 1 and hi + 1 round to the range's own ends: stricter, never
 * looser). */
void kiln_bnd_cast_range(bnd_node *b) {
  int oid = b->n->outputs[0];
  kiln_dtype to = oid >= 0 ? b->g->values.data[oid].type.dtype : KILN_UNDEFINED;
  if (b->n->op == KILN_OP_CastLike && b->n->n_inputs > 1 && b->n->inputs[1] >= 0)
    to = b->g->values.data[b->n->inputs[1]].type.dtype;
  const kiln_tensor *x = b->in[0] && b->in[0]->t ? b->in[0]->t : NULL;
  double lo, hi;
  if (!x || !kiln_dtype_is_float(x->dtype) || !int_range(to, &lo, &hi)) return;
  const double *ex = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  int64_t bad = 0;
  for (int64_t i = 0; i < x->numel; i++) {
    double xv = kiln_load_f64(x->dtype, x->data, (size_t)i), ev = ex ? ex[i] : 0;
    bad += !(xv - ev > lo - 1 && xv + ev < hi + 1);
  }
  if (bad) kiln_bnd_unstable(b, bad, "a cast to an integer type leaves its range (undefined)");
}

kiln_status kiln_bnd_cast(bnd_node *b) {
  int oid = b->n->outputs[0];
  kiln_dtype to = oid >= 0 ? b->g->values.data[oid].type.dtype : KILN_UNDEFINED;
  if (b->n->op == KILN_OP_CastLike && b->n->n_inputs > 1 && b->n->inputs[1] >= 0)
    to = b->g->values.data[b->n->inputs[1]].type.dtype;
  if (!kiln_dtype_is_float(to)) return kiln_bnd_discrete(b, 0);
  const kiln_tensor *x = b->in[0] && b->in[0]->t ? b->in[0]->t : NULL;
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!x || !y || x->numel != y->numel || x->dtype == KILN_STRING) return KILN_OK;
  double u = kiln_bnd_unit_roundoff(to), tiny = kiln_bnd_tiny(to);
  bool exact = exact_rounding(to);
  int xid = b->n->inputs[0];
  kiln_dtype from = xid >= 0 ? b->g->values.data[xid].type.dtype : KILN_F64;
  bool widening = exact && kiln_dtype_is_float(from) && holds(to, from);
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  double *yd = y->data, *ed = e->data;
  const double *ex = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  int64_t unstable = 0;
  const kiln_attr *sa = kiln_node_attr(b->n, "saturate");
  bool nosat = is_f8(to) && sa && sa->kind == KILN_ATTR_INT && sa->i == 0;
  for (int64_t i = 0; i < y->numel; i++) {
    double xv = kiln_load_f64(x->dtype, x->data, (size_t)i), ev = ex ? ex[i] : 0;
    /* the reference kernels keep floats in double: round to the target here (a 64-bit
     * integer into a narrower float through its value rounded to odd: rounded once) */
    double r = to == KILN_F64 ? round_to(to, xv)
               : nosat        ? round_f8_nosat(to, load_odd(x, i))
                              : round_to(to, load_odd(x, i));
    /* without saturation a corner of the input's interval may leave the range (NaN) */
    if (nosat && isfinite(r) && ev > 0 &&
        !(isfinite(round_f8_nosat(to, xv - ev)) && isfinite(round_f8_nosat(to, xv + ev))))
      unstable++;
    if (isnan(xv)) {
      yd[i] = r, ed[i] = 0;
      continue;
    }
    if (widening) { /* the held input converts exactly */
      yd[i] = xv, ed[i] = ev;
      continue;
    }
    if (exact) {
      yd[i] = r, ed[i] = rounded_err(from, to, xv, ev, r);
      unstable += isinf(ed[i]);
      continue;
    }
    bool normal = isfinite(xv) && isfinite(r) && fabs(r - xv) <= u * fabs(xv) + tiny;
    yd[i] = normal && xv != 0 ? xv : r; /* a zero is exact, with the target's sign (the
                                            float8 "uz" types have no -0) */
    bool same = ev == 0 && r == xv;     /* an exact input that converts exactly */
    ed[i] = isfinite(yd[i]) && !same ? ev * (1 + u) + u * fabs(xv) + tiny : 0;
    if (!normal && isfinite(xv) && ev > 0) unstable++;
  }
  if (unstable) kiln_bnd_unstable(b, unstable, "a cast leaves the target's range within the error");
  b->eout[0] = e;
  return KILN_OK;
}

/* ---- ARGMINMAX: the index of the max (min) of each slice; unstable where another element
 * of the slice could reach it within the errors. ---- */
kiln_status kiln_bnd_argminmax(bnd_node *b) {
  if (!kiln_bnd_has_err(b, 0) || !b->out[0] || !b->out[0]->t) return KILN_OK;
  const kiln_tensor *x = b->in[0]->t, *idx = b->out[0]->t;
  int64_t axis_a;
  int axis;
  KILN_TRY(kiln_node_int(b->n, "axis", 0, &axis_a));
  if (x->rank == 0) return KILN_OK;
  axis = (int)(axis_a < 0 ? axis_a + x->rank : axis_a);
  if (axis < 0 || axis >= x->rank) return KILN_OK; /* the kernel already accepted it */
  int64_t n = x->dims[axis], inner = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  bool is_max = b->n->op == KILN_OP_ArgMax;
  const double *xd = x->data, *ed = b->ein[0]->data;
  int64_t bad = 0;
  for (int64_t o = 0; o < idx->numel; o++) {
    int64_t base = (o / inner) * n * inner + o % inner;
    int64_t k = kiln_load_i64(idx->dtype, idx->data, (size_t)o);
    if (k < 0 || k >= n) continue;
    double xk = xd[base + k * inner], ek = ed[base + k * inner];
    for (int64_t j = 0; j < n; j++) {
      double xj = xd[base + j * inner], ej = ed[base + j * inner];
      if (j == k || ek + ej == 0 || isnan(xj)) continue;
      if (is_max ? xj + ej >= xk - ek : xj - ej <= xk + ek) {
        bad++;
        break;
      }
    }
  }
  kiln_bnd_unstable(b, bad, "another element is within the error of the arg max/min");
  return KILN_OK;
}

/* ---- MOD of floats (fmod=1): y = x - q d with q = trunc(x / d), exact in IEEE arithmetic.
 * While q stays the same over the input intervals, y moves as x - q d: err = e_x + |q| e_d.
 * Where q could change (x / d crosses an integer within the intervals, or d's interval holds
 * 0) y jumps by up to |d|: unstable. Exact inputs give an exact result (no error); NaN and
 * infinities propagate as fmod defines them (fmod(inf, d) = NaN, fmod(x, inf) = x). Integer
 * Mod is exact. ---- */
static bool quotient_moves(double x, double ex, double d, double ed) {
  if (d - ed <= 0 && d + ed >= 0) return true;
  double q0 = trunc(x / d), c[4] = {(x - ex) / (d - ed), (x - ex) / (d + ed), (x + ex) / (d - ed),
                                    (x + ex) / (d + ed)};
  for (int k = 0; k < 4; k++) { /* a margin for the rounding of the divisions here */
    double lo = c[k] - fabs(c[k]) * 0x1p-50, hi = c[k] + fabs(c[k]) * 0x1p-50;
    if (trunc(lo) != q0 || trunc(hi) != q0) return true;
  }
  return false;
}

kiln_status kiln_bnd_mod(bnd_node *b) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, 0);
  if (!y || b->n->n_inputs < 2 || !kiln_bnd_is_float_val(b->in[0]) ||
      !kiln_bnd_is_float_val(b->in[1]))
    return kiln_bnd_exact(b, kiln_bnd_info(b->n->op)); /* integers */
  const kiln_tensor *x = b->in[0]->t, *d = b->in[1]->t;
  const double *ex = kiln_bnd_has_err(b, 0) ? b->ein[0]->data : NULL;
  const double *ed = kiln_bnd_has_err(b, 1) ? b->ein[1]->data : NULL;
  if (!ex && !ed) return KILN_OK; /* exact, in any float type (graph inputs keep theirs) */
  int64_t *ix = kiln_bnd_bcast_index(x, y), *id = kiln_bnd_bcast_index(d, y), bad = 0;
  kiln_tensor *e = kiln_bnd_zeros_like(y);
  for (int64_t i = 0; i < y->numel; i++) {
    double xv = kiln_load_f64(x->dtype, x->data, (size_t)ix[i]);
    double dv = kiln_load_f64(d->dtype, d->data, (size_t)id[i]);
    double exv = ex ? ex[ix[i]] : 0, edv = ed ? ed[id[i]] : 0;
    double *ei = (double *)e->data + i;
    if (isnan(((double *)y->data)[i]) || isnan(xv) || isnan(dv)) continue;
    if (isinf(xv) || isinf(dv)) { /* NaN, or x itself (d infinite) */
      *ei = isinf(dv) ? exv : 0;
      continue;
    }
    if (quotient_moves(xv, exv, dv, edv)) {
      bad++;
      *ei = fabs(dv) + edv;
      continue;
    }
    *ei = exv + fabs(trunc(xv / dv)) * edv;
  }
  free(ix), free(id);
  b->eout[0] = e;
  kiln_bnd_unstable(b, bad, "Mod's quotient may truncate to another integer within the errors");
  return KILN_OK;
}
