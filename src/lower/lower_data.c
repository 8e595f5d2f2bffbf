/* Data-movement lowering: Transpose, Expand, Tile, Slice, Concat, Split, Gather, Pad
 * (constant, reflect, edge), DepthToSpace, SpaceToDepth. Each is one kernel of copies: a
 * loop nest over an output (or, for Concat, over each input), whose element index in the
 * source is computed from the loop variables. Computed indices that the verifier cannot
 * bound by themselves (data-dependent Gather indices, reflected Pad positions) are guarded
 * by an explicit range check; a Gather index out of range also sets the kernel's error flag
 * (kiln_step.check_arg), so that the run fails as the reference does. The static output type
 * gives every extent. */
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"
#include "ops/attr_decode.h"

typedef struct dm {
  kiln_lower_ctx *c;
  const kiln_node *n;
  kiln_tkernel *k;
  kiln_step step;
  const kiln_type *x, *y; /* input 0, output 0 */
  int64_t xd[KILN_MAX_RANK], yd[KILN_MAX_RANK];
} dm;

static void dims_of(const kiln_type *t, int64_t *d) {
  for (int i = 0; i < t->rank; i++) d[i] = t->dims[i].value;
}

static kiln_texpr *var(dm *s, const kiln_nest *nest, int d) {
  return kiln_tv(s->k, nest->vars[d]);
}

static kiln_texpr *in_range(kiln_tkernel *k, kiln_texpr *i, int64_t n) {
  return kiln_tbin(k, KILN_TOP_AND, kiln_tbin(k, KILN_TOP_GE, i, kiln_tint(k, 0)),
                   kiln_tbin(k, KILN_TOP_LT, i, kiln_tint(k, n)));
}

/* out[o] = in[idx(o)] over the output nest; `cond` (NULL: none) guards the load, else dflt
 * is stored and, when flag >= 0, the error flag set. */
static void emit_store(dm *s, kiln_tblock *b, int yb, const kiln_nest *nest, int xb,
                       kiln_texpr *const *idx, kiln_texpr *cond, kiln_texpr *dflt, int flag) {
  kiln_tkernel *k = s->k;
  kiln_texpr *o[KILN_MAX_RANK];
  for (int d = 0; d < nest->rank; d++) o[d] = var(s, nest, d);
  kiln_texpr *dst = kiln_lower_index(k, nest->rank, nest->dims, o);
  kiln_texpr *src = kiln_lower_index(k, s->x->rank, s->xd, idx);
  kiln_tstmt *st = kiln_tstore(k, yb, dst, kiln_tload(k, xb, src));
  if (!cond) return kiln_tblock_push(k, b, st);
  kiln_tstmt *g = kiln_tif(k, cond);
  kiln_tblock_push(k, &g->body, st);
  bool zero = dflt && ((dflt->kind == KILN_TE_FLOAT && dflt->f == 0) ||
                       (dflt->kind == KILN_TE_INT && dflt->i == 0));
  if (!(KILN_MUTANT(256) && zero)) /* mutant 256: zeros not stored, the output taken as zeroed */
    kiln_tblock_push(k, &g->orelse,
                     kiln_tstore(k, yb, dst, dflt ? dflt : kiln_tload(k, xb, kiln_tint(k, 0))));
  if (flag >= 0) kiln_tblock_push(k, &g->orelse, kiln_lower_check_fail(k, flag));
  kiln_tblock_push(k, b, g);
}

static void begin(dm *s, kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n) {
  s->c = c;
  s->n = n;
  s->x = kiln_lower_static(c->g, n->inputs[0]);
  s->y = kiln_lower_static(c->g, n->outputs[0]);
  dims_of(s->x, s->xd);
  dims_of(s->y, s->yd);
  s->k = kiln_lower_kernel(c, grp, n->op_type, &s->step);
}

/* A nest over output 0; returns the buffers of input 0 and output 0. */
static kiln_nest out_nest(dm *s, int *xb, int *yb) {
  *xb = kiln_lower_param_value(s->c, s->k, &s->step, s->n->inputs[0]);
  *yb = kiln_lower_param_value(s->c, s->k, &s->step, s->n->outputs[0]);
  kiln_nest nest;
  kiln_lower_nest(s->k, &s->k->body, s->y->rank, s->yd, "o", true, &nest);
  if (s->y->rank == 0) nest.body = &s->k->body;
  return nest;
}

static kiln_status transpose(dm *s) {
  int64_t perm[KILN_MAX_RANK];
  const int64_t *p;
  int np;
  KILN_TRY(kiln_node_ints(s->n, "perm", &p, &np));
  int r = s->x->rank;
  for (int d = 0; d < r; d++) /* mutant 382: an absent perm taken as the identity */
    perm[d] = np < 0 ? (KILN_MUTANT(382) ? d : r - 1 - d) : p[d];
  if (np >= 0 && np != r) return kiln_invalid("Transpose: perm has %d entries for rank %d", np, r);
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  kiln_texpr *idx[KILN_MAX_RANK];
  for (int d = 0; d < r; d++) {
    if (perm[d] < 0 || perm[d] >= r) return kiln_invalid("Transpose: bad perm");
    idx[perm[d]] = var(s, &nest, d);
  }
  if (KILN_MUTANT(29)) /* mutant 29: the inverse permutation */
    for (int d = 0; d < r; d++) idx[d] = var(s, &nest, (int)perm[d]);
  emit_store(s, nest.body, yb, &nest, xb, idx, NULL, NULL, -1);
  return KILN_OK;
}

/* Expand (broadcast) and Tile (repeat): index = o (dims of 1: 0) or o % extent. */
static kiln_status expand_tile(dm *s, bool tile) {
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  kiln_texpr *idx[KILN_MAX_RANK];
  int off = KILN_MUTANT(207) && !tile ? 0 : s->y->rank - s->x->rank; /* mutant 207: left-aligned */
  for (int d = 0; d < s->x->rank; d++) {
    kiln_texpr *o = var(s, &nest, off + d);
    idx[d] = s->xd[d] == 1 ? kiln_tint(s->k, 0)
             : tile && KILN_MUTANT(235) /* mutant 235: each element repeated (np.repeat) */
                 ? kiln_tbin(s->k, KILN_TOP_DIV, o, kiln_tint(s->k, s->yd[off + d] / s->xd[d]))
                 : tile ? kiln_tbin(s->k, KILN_TOP_MOD, o, kiln_tint(s->k, s->xd[d])) : o;
  }
  emit_store(s, nest.body, yb, &nest, xb, idx, NULL, NULL, -1);
  return KILN_OK;
}

/* Slice: start and step per axis from constant inputs (opset >= 10) or attributes. */
static kiln_status slice_params(dm *s, int64_t *start, int64_t *step) {
  const kiln_graph *g = s->c->g;
  int r = s->x->rank, ns = 0, na = -1, nt = -1;
  int64_t st[KILN_MAX_RANK], ax[KILN_MAX_RANK], sp[KILN_MAX_RANK];
  for (int d = 0; d < r; d++) start[d] = 0, step[d] = 1;
  const kiln_node *n = s->n;
  if (n->opset >= 10) {
    if (!kiln_lower_const_ints(g, n->inputs[1], st, KILN_MAX_RANK, &ns) ||
        (n->n_inputs > 3 && n->inputs[3] >= 0 &&
         !kiln_lower_const_ints(g, n->inputs[3], ax, KILN_MAX_RANK, &na)) ||
        (n->n_inputs > 4 && n->inputs[4] >= 0 &&
         !kiln_lower_const_ints(g, n->inputs[4], sp, KILN_MAX_RANK, &nt)))
      return kiln_unsupported("Slice with non-constant parameters");
  } else {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, "starts", &a, &ns));
    for (int i = 0; i < ns && i < KILN_MAX_RANK; i++) st[i] = a[i];
    KILN_TRY(kiln_node_ints(n, "axes", &a, &na));
    if (KILN_MUTANT(327)) na = -1; /* mutant 327: Slice-1's axes attribute taken as absent */
    for (int i = 0; i < na && i < KILN_MAX_RANK; i++) ax[i] = a[i];
  }
  for (int i = 0; i < ns; i++) {
    int64_t a = na >= 0 ? ax[i] : i;
    if (a < 0 && !KILN_MUTANT(264)) a += r; /* mutant 264: a negative axis not wrapped */
    if (a < 0 || a >= r) return kiln_invalid("Slice: axis out of range");
    int64_t dim = s->xd[a], stp = nt >= 0 ? sp[KILN_MUTANT(134) && a < nt ? a : i] : 1, b = st[i];
    /* mutant 134: the step read at the axis, not at the position in axes */
    if (stp == 0) return kiln_invalid("Slice: step 0");
    if (b < 0 && !KILN_MUTANT(30)) b += dim; /* mutant 30: negative start not wrapped */
    b = stp > 0 ? (b < 0 ? 0 : b > dim ? dim : b) : (b < 0 ? -1 : b > dim - 1 ? dim - 1 : b);
    if (KILN_MUTANT(68) && stp < 0 && st[i] >= dim) b = dim; /* mutant 68: clamped to dim */
    start[a] = b;
    step[a] = stp;
  }
  return KILN_OK;
}

static kiln_status slice(dm *s) {
  int64_t start[KILN_MAX_RANK], step[KILN_MAX_RANK];
  KILN_TRY(slice_params(s, start, step));
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  kiln_texpr *idx[KILN_MAX_RANK];
  for (int d = 0; d < s->x->rank; d++)
    idx[d] = kiln_tadd(s->k, kiln_tint(s->k, start[d]), kiln_tmul(s->k, var(s, &nest, d), step[d]));
  emit_store(s, nest.body, yb, &nest, xb, idx, NULL, NULL, -1);
  return KILN_OK;
}

static kiln_status axis_attr(const kiln_node *n, int rank, int *out) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  int64_t a = da.axis;
  if (a < 0) a += rank;
  if (a < 0 || a >= rank) return kiln_invalid("%s: axis out of range", n->op_type);
  *out = (int)a;
  return KILN_OK;
}

/* Concat: one nest per input over its shape, stored at its offset along the axis. Split: one
 * nest per output, loaded from its offset. */
static kiln_status concat_split(dm *s, bool split) {
  const kiln_graph *g = s->c->g;
  const kiln_node *n = s->n;
  int axis;
  KILN_TRY(axis_attr(n, s->x->rank, &axis));
  int big = kiln_lower_param_value(s->c, s->k, &s->step, split ? n->inputs[0] : n->outputs[0]);
  const kiln_type *bt = split ? s->x : s->y;
  int64_t bd[KILN_MAX_RANK], off = 0;
  dims_of(bt, bd);
  int parts = split ? n->n_outputs : n->n_inputs;
  for (int i = 0; i < parts; i++) {
    int v = split ? n->outputs[i] : n->inputs[i];
    if (v < 0) return kiln_unsupported("%s with an omitted part", n->op_type);
    const kiln_type *t = kiln_lower_static(g, v);
    int64_t td[KILN_MAX_RANK];
    dims_of(t, td);
    int pb = kiln_lower_param_value(s->c, s->k, &s->step, v);
    kiln_nest nest;
    char prefix[16];
    snprintf(prefix, sizeof prefix, "p%d_", i);
    kiln_lower_nest(s->k, &s->k->body, t->rank, td, prefix, true, &nest);
    kiln_texpr *o[KILN_MAX_RANK], *b[KILN_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
      o[d] = var(s, &nest, d);
      b[d] = d == axis ? kiln_tadd(s->k, o[d], kiln_tint(s->k, off)) : o[d];
    }
    kiln_texpr *small = kiln_lower_index(s->k, t->rank, td, o);
    kiln_texpr *large = kiln_lower_index(s->k, t->rank, bd, b);
    kiln_tblock_push(s->k, nest.body,
                     split ? kiln_tstore(s->k, pb, small, kiln_tload(s->k, big, large))
                           : kiln_tstore(s->k, big, large, kiln_tload(s->k, pb, small)));
    off += KILN_MUTANT(31) ? bd[axis] / parts : td[axis]; /* mutant 31: equal parts */
  }
  return KILN_OK;
}

/* Gather: out[pre, j..., post] = data[pre, idx[j...] (negative from the end), post]; an
 * index out of range stores 0 and sets the error flag. */
static kiln_status gather(dm *s) {
  const kiln_graph *g = s->c->g;
  int axis; /* mutant 289: a negative axis wrapped by the output's rank, not the data's */
  KILN_TRY(axis_attr(s->n, KILN_MUTANT(289) ? s->y->rank : s->x->rank, &axis));
  const kiln_type *it = kiln_lower_static(g, s->n->inputs[1]);
  if (!kiln_dtype_is_int(it->dtype))
    return kiln_unsupported("Gather indices of %s", kiln_dtype_name(it->dtype));
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  int ib = kiln_lower_param_value(s->c, s->k, &s->step, s->n->inputs[1]);
  int flag = kiln_lower_param_check(s->c, s->k, &s->step,
                                    "index out of range (axis %d of the data has %lld entries)",
                                    axis, (long long)s->xd[axis]);
  kiln_texpr *ii[KILN_MAX_RANK], *idx[KILN_MAX_RANK];
  int64_t id[KILN_MAX_RANK];
  dims_of(it, id);
  for (int d = 0; d < it->rank; d++) /* mutant 387: from the output's first dims (axis 0) */
    ii[d] = var(s, &nest, KILN_MUTANT(387) ? d : axis + d);
  kiln_texpr *raw =
      kiln_tcast(s->k, KILN_I64, kiln_tload(s->k, ib, kiln_lower_index(s->k, it->rank, id, ii)));
  int iv = kiln_tkernel_var(s->k, "gi", KILN_I64);
  kiln_texpr *fixed =
      kiln_tselect(s->k, kiln_tbin(s->k, KILN_TOP_LT, raw, kiln_tint(s->k, 0)),
                   kiln_tadd(s->k, raw, kiln_tint(s->k, s->xd[KILN_MUTANT(32) ? 0 : axis])),
                   raw); /* mutant 32: wraps by the extent of axis 0 */
  kiln_tblock_push(s->k, nest.body, kiln_tassign(s->k, iv, fixed));
  for (int d = 0; d < s->x->rank; d++)
    idx[d] = d < axis    ? var(s, &nest, d)
             : d == axis ? kiln_tv(s->k, iv)
                         : var(s, &nest, KILN_MUTANT(170) ? d : d - 1 + it->rank); /* mutant 170 */
  kiln_texpr *zero = kiln_tcast(s->k, s->x->dtype, kiln_tconst_int(s->k, KILN_I64, 0));
  emit_store(s, nest.body, yb, &nest, xb, idx, in_range(s->k, kiln_tv(s->k, iv), s->xd[axis]), zero,
             flag);
  return KILN_OK;
}

/* Pad-11+ (constant pads input, no axes input) and Pad-2 (attributes). */
static kiln_status pad_params(dm *s, int64_t *lo, int *mode, kiln_texpr **val) {
  const kiln_graph *g = s->c->g;
  const kiln_node *n = s->n;
  int r = s->x->rank, np = 0;
  int64_t p[2 * KILN_MAX_RANK];
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(n, &da));
  *mode = da.pad_mode == KILN_PAD_CONSTANT  ? 0
          : da.pad_mode == KILN_PAD_REFLECT ? 1
          : da.pad_mode == KILN_PAD_EDGE    ? 2
                                            : -1;
  if (*mode < 0) return kiln_unsupported("Pad mode '%s'", kiln_pad_mode_name(da.pad_mode));
  double cv = 0;
  if (n->opset >= 11) {
    if (!kiln_lower_const_ints(g, n->inputs[1], p, 2 * KILN_MAX_RANK, &np) ||
        (n->n_inputs > 3 && n->inputs[3] >= 0))
      return kiln_unsupported("Pad with non-constant pads or axes");
    if (n->n_inputs > 2 && n->inputs[2] >= 0) {
      const kiln_value *v = &g->values.data[n->inputs[2]];
      if (v->kind != KILN_VALUE_CONST || v->data->numel != 1)
        return kiln_unsupported("Pad value not a constant");
      if (!KILN_MUTANT(34)) cv = kiln_load_f64(v->data->dtype, v->data->data, 0); /* mutant 34 */
    }
  } else {
    const int64_t *a;
    KILN_TRY(kiln_node_ints(n, "pads", &a, &np));
    for (int i = 0; i < np && i < 2 * KILN_MAX_RANK; i++) p[i] = a[i];
    cv = da.pad_value; /* Pad before opset 11 */
  }
  if (np != 2 * r) return kiln_invalid("Pad: %d pads for rank %d", np, r);
  for (int d = 0; d < r; d++)
    lo[d] = p[KILN_MUTANT(311) ? 2 * d : d]; /* mutant 311: [b0, e0, ...] */
  kiln_dtype ct = kiln_lower_compute_type(s->k, KILN_PREC_DATA, s->x->dtype);
  *val = kiln_lower_to_storage(s->k, s->x->dtype,
                               kiln_dtype_is_float(ct) ? kiln_tfloat(s->k, ct, cv)
                                                       : kiln_tconst_int(s->k, ct, (int64_t)cv));
  return KILN_OK;
}

/* Reflect along one axis of x (extent xd) padded by b before and e after (negative:
 * cropped first, as the reference does), for output position o: the source index. The
 * cropped extent n >= 1; n == 1 repeats its element. Pads of at most n - 1 reflect once
 * (-i below the start, 2(n-1)-i past the end); larger pads reflect repeatedly, with
 * period 2(n-1): y = (x mod p), mirrored when y >= n. */
static kiln_texpr *pad_reflect(kiln_tkernel *k, kiln_texpr *o, int64_t xd, int64_t b, int64_t e) {
  int64_t c0 = b < 0 ? -b : 0, n = xd - c0 - (e < 0 ? -e : 0), pb = b > 0 ? b : 0;
  if (n == 1) return kiln_tint(k, c0);
  kiln_texpr *i = kiln_tadd(k, o, kiln_tint(k, -b));
  int64_t once = n - 1 + KILN_MUTANT(169); /* mutant 169: pads of n taken as one reflection */
  if (pb <= once && (e <= once || KILN_MUTANT(417))) { /* mutant 417: the end pad not checked */
    i = kiln_tselect(k, kiln_tbin(k, KILN_TOP_LT, i, kiln_tint(k, 0)), kiln_tun(k, KILN_TOP_NEG, i),
                     i);
    return kiln_tselect(
        k, kiln_tbin(k, KILN_TOP_GE, i, kiln_tint(k, xd)),
        kiln_tadd(k, kiln_tint(k, 2 * (xd - 1) + KILN_MUTANT(33)), /* mutant 33: 2n-1-i */
                  kiln_tun(k, KILN_TOP_NEG, i)),
        i);
  }
  int64_t p = 2 * (n - 1), lift = (pb + p - 1) / p * p; /* x + lift >= 0 */
  if (KILN_MUTANT(263)) lift = pb / p * p;              /* mutant 263: the lift rounded down */
  kiln_texpr *x = kiln_tadd(k, o, kiln_tint(k, lift - pb));
  kiln_texpr *y = kiln_tbin(k, KILN_TOP_MOD, x, kiln_tint(k, p));
  y = kiln_tselect(k, kiln_tbin(k, KILN_TOP_GE, y, kiln_tint(k, n)),
                   kiln_tadd(k, kiln_tint(k, p), kiln_tun(k, KILN_TOP_NEG, y)), y);
  return kiln_tadd(k, y, kiln_tint(k, c0));
}

static kiln_status pad(dm *s) {
  int64_t lo[KILN_MAX_RANK];
  int mode;
  kiln_texpr *val;
  KILN_TRY(pad_params(s, lo, &mode, &val));
  for (int d = 0; d < s->x->rank; d++) {
    int64_t e = s->yd[d] - s->xd[d] - lo[d];
    int64_t n = s->xd[d] - (lo[d] < 0 ? -lo[d] : 0) - (e < 0 ? -e : 0);
    if (s->xd[d] == 0 || (mode != 0 && n <= 0 && s->yd[d] > 0))
      return kiln_unsupported("Pad of an empty axis");
  }
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  kiln_tkernel *k = s->k;
  kiln_texpr *idx[KILN_MAX_RANK], *cond = NULL;
  for (int d = 0; d < s->x->rank; d++) {
    kiln_texpr *i = kiln_tadd(k, var(s, &nest, d), kiln_tint(k, -lo[d]));
    int64_t n = s->xd[d];
    if (mode == 1) {
      i = pad_reflect(k, var(s, &nest, d), n, lo[d], s->yd[d] - n - lo[d]);
    } else if (mode == 2) { /* edge: clamp */
      i = kiln_tbin(k, KILN_TOP_MIN, kiln_tbin(k, KILN_TOP_MAX, i, kiln_tint(k, 0)),
                    kiln_tint(k, n - !KILN_MUTANT(135))); /* mutant 135: clamped to n */
    }
    idx[d] = i;
    kiln_texpr *ok = in_range(k, i, n);
    cond = cond ? kiln_tbin(k, KILN_TOP_AND, cond, ok) : ok;
  }
  emit_store(s, nest.body, yb, &nest, xb, idx, cond, mode == 0 ? val : NULL, -1);
  return KILN_OK;
}

/* DepthToSpace (DCR or CRD) and SpaceToDepth, from output coordinates. */
static kiln_status depth_space(dm *s, bool to_space) {
  kiln_attrs_data da;
  KILN_TRY(kiln_attrs_data_decode(s->n, &da));
  int64_t b = da.blocksize;
  if (s->x->rank != 4 || b <= 0)
    return kiln_unsupported("%s of rank %d", s->n->op_type, s->x->rank);
  int xb, yb;
  kiln_nest nest = out_nest(s, &xb, &yb);
  kiln_tkernel *k = s->k;
  kiln_texpr *c = var(s, &nest, 1), *h = var(s, &nest, 2), *w = var(s, &nest, 3), *idx[4];
  kiln_texpr *B = kiln_tint(k, b);
  idx[0] = var(s, &nest, 0);
  if (to_space) {
    kiln_texpr *i = kiln_tbin(k, KILN_TOP_MOD, h, B), *j = kiln_tbin(k, KILN_TOP_MOD, w, B);
    kiln_texpr *blk = kiln_tadd(k, kiln_tmul(k, i, b), j);
    idx[1] = da.crd && !KILN_MUTANT(65) /* mutant 65: CRD read as DCR */
                 ? kiln_tadd(k, kiln_tmul(k, c, b * b), blk)
                 : kiln_tadd(k, kiln_tmul(k, blk, s->yd[1]), c);
    idx[2] = kiln_tbin(k, KILN_TOP_DIV, h, B);
    idx[3] = kiln_tbin(k, KILN_TOP_DIV, w, B);
  } else {
    kiln_texpr *C = kiln_tint(k, s->xd[1]), *blk = kiln_tbin(k, KILN_TOP_DIV, c, C);
    idx[1] = kiln_tbin(k, KILN_TOP_MOD, c, C);
    kiln_top row = KILN_MUTANT(171) ? KILN_TOP_MOD : KILN_TOP_DIV; /* mutant 171: swapped */
    idx[2] = kiln_tadd(k, kiln_tmul(k, h, b), kiln_tbin(k, row, blk, B));
    idx[3] = kiln_tadd(k, kiln_tmul(k, w, b),
                       kiln_tbin(k, KILN_MUTANT(171) ? KILN_TOP_DIV : KILN_TOP_MOD, blk, B));
  }
  emit_store(s, nest.body, yb, &nest, xb, idx, NULL, NULL, -1);
  return KILN_OK;
}

kiln_status kiln_lower_data_node(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->nodes[0]];
  kiln_op op = n->op;
  bool known = op == KILN_OP_Transpose || op == KILN_OP_Expand || op == KILN_OP_Tile ||
               op == KILN_OP_Slice || op == KILN_OP_Concat || op == KILN_OP_Split ||
               op == KILN_OP_Gather || op == KILN_OP_Pad || op == KILN_OP_DepthToSpace ||
               op == KILN_OP_SpaceToDepth;
  if (!known || grp->n_nodes != 1)
    return KILN_BUG("the lowering table sent %s to the data-movement lowering", n->op_type);
  if (n->n_outputs < 1 || n->outputs[0] < 0)
    return kiln_unsupported("%s with its first output omitted", n->op_type);
  if (!kiln_lower_dtype_ok(kiln_lower_static(c->g, n->inputs[0])->dtype))
    return kiln_unsupported("%s of %s", n->op_type,
                            kiln_dtype_name(kiln_lower_static(c->g, n->inputs[0])->dtype));
  dm s;
  memset(&s, 0, sizeof s);
  begin(&s, c, grp, n);
  kiln_status st;
  switch (op) {
  case KILN_OP_Transpose: st = transpose(&s); break;
  case KILN_OP_Expand: st = expand_tile(&s, false); break;
  case KILN_OP_Tile: st = expand_tile(&s, true); break;
  case KILN_OP_Slice: st = slice(&s); break;
  case KILN_OP_Concat: st = concat_split(&s, false); break;
  case KILN_OP_Split: st = concat_split(&s, true); break;
  case KILN_OP_Gather: st = gather(&s); break;
  case KILN_OP_Pad: st = pad(&s); break;
  case KILN_OP_DepthToSpace: st = depth_space(&s, true); break;
  default: st = depth_space(&s, false); break;
  }
  KILN_TRY(st);
  kiln_lower_add_step(c, &s.step);
  return KILN_OK;
}
