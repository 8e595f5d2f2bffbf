/* Conv lowering (1-D, 2-D, 3-D; groups; pads, strides, dilations, auto_pad), NCHW in and
 * out.
 *
 * Most convolutions are GEMMs per (image, group): out[co][p] = sum_k W[co][k] col[k][p],
 * with k running over (input channel, kernel position) and p over output pixels. The
 * filter is the A operand, prepacked at compile time into [ceil(Cout/MR)][K][MR] blocks
 * when constant. The B operand is the im2col matrix, built panel by panel (NR output
 * pixels at a time) into scratch right before the panel is multiplied, so it is read back
 * from cache: a 1x1 stride-1 unpadded conv packs a plain strided copy of its input, the
 * others compute each pixel's window origin once per panel and gather (out-of-range
 * positions read as zero). Depthwise convs (one input channel per group) run a direct
 * loop: for each output row, kernel positions outside, output pixels inside (vector),
 * accumulated in a local row. */
#include <string.h>

#include "base/mutate.h"
#include "graph/window.h"
#include "lower_mm.h"
#include "ops/attr_decode.h"

#define CONV_MAX_SP 3

typedef struct conv_geom {
  int nsp;
  int64_t N, C, Co, G, Cig, Cog;
  int64_t in[CONV_MAX_SP], k[CONV_MAX_SP], out[CONV_MAX_SP];
  int64_t s[CONV_MAX_SP], dil[CONV_MAX_SP], pb[CONV_MAX_SP];
  int64_t Pin, P, KS, Kdim; /* input pixels, output pixels, kernel positions, Cig*KS */
} conv_geom;

static kiln_status ints_attr(const kiln_node *n, const char *name, int count, int64_t dflt,
                             int64_t *out) {
  const int64_t *v;
  int len;
  KILN_TRY(kiln_node_ints(n, name, &v, &len));
  for (int i = 0; i < count; i++) out[i] = dflt;
  if (len < 0) return KILN_OK;
  if (len != count)
    return kiln_invalid("Conv attribute %s has %d values, want %d", name, len, count);
  memcpy(out, v, (size_t)count * sizeof *out);
  return KILN_OK;
}

/* Begin pad and output size of spatial dim d (graph/window.h, as the reference has them). */
static kiln_status conv_dim(conv_geom *cg, kiln_auto_pad autopad, const int64_t *pads, int d) {
  kiln_window_dim w = {cg->in[d], cg->k[d], cg->s[d], cg->dil[d], pads[d], pads[cg->nsp + d], 0};
  switch (kiln_window_resolve(&w, autopad, false)) {
  case KILN_WINDOW_OK: break;
  case KILN_WINDOW_LARGER: return kiln_invalid("Conv: window larger than the padded input");
  default: return kiln_invalid("Conv: bad kernel, strides, dilations or pads");
  }
  cg->pb[d] = KILN_MUTANT(315) ? pads[cg->nsp + d] : w.pad_begin; /* mutant 315: the end pad */
  cg->out[d] = w.out;
  return KILN_OK;
}

static kiln_status conv_geom_of(const kiln_graph *g, const kiln_node *n, conv_geom *cg) {
  const kiln_type *x = &g->values.data[n->inputs[0]].type;
  const kiln_type *w = &g->values.data[n->inputs[1]].type;
  const kiln_type *y = &g->values.data[n->outputs[0]].type;
  if (x->rank < 3 || x->rank > 2 + CONV_MAX_SP || w->rank != x->rank || y->rank != x->rank)
    return kiln_unsupported("Conv of rank %d", x->rank);
  cg->nsp = x->rank - 2;
  cg->N = x->dims[0].value;
  cg->C = x->dims[1].value;
  cg->Co = w->dims[0].value;
  kiln_attrs_window wa;
  KILN_TRY(kiln_attrs_window_decode(n, &wa));
  cg->G = wa.group;
  if (cg->G <= 0 || cg->C % cg->G || cg->Co % cg->G || w->dims[1].value != cg->C / cg->G)
    return kiln_invalid("Conv: channels and group do not agree");
  cg->Cig = cg->C / cg->G;
  cg->Cog = cg->Co / cg->G;
  int64_t pads[2 * CONV_MAX_SP], ks[CONV_MAX_SP];
  KILN_TRY(ints_attr(n, "strides", cg->nsp, 1, cg->s));
  KILN_TRY(ints_attr(n, "dilations", cg->nsp, 1, cg->dil));
  KILN_TRY(ints_attr(n, "pads", 2 * cg->nsp, 0, pads));
  for (int d = 0; d < cg->nsp; d++) ks[d] = w->dims[2 + d].value;
  KILN_TRY(ints_attr(n, "kernel_shape", cg->nsp, -1, cg->k));
  kiln_auto_pad autopad = wa.auto_pad;
  cg->Pin = cg->P = cg->KS = 1;
  for (int d = 0; d < cg->nsp; d++) {
    if (cg->k[d] < 0) cg->k[d] = ks[d];
    if (cg->k[d] != ks[d]) return kiln_invalid("Conv: kernel_shape differs from the filter");
    cg->in[d] = x->dims[2 + d].value;
    KILN_TRY(conv_dim(cg, autopad, pads, d));
    if (cg->out[d] != y->dims[2 + d].value) return kiln_invalid("Conv: output size mismatch");
    cg->Pin *= cg->in[d];
    cg->P *= cg->out[d];
    cg->KS *= cg->k[d];
  }
  if (y->dims[0].value != cg->N || y->dims[1].value != cg->Co)
    return kiln_invalid("Conv: output shape mismatch");
  cg->Kdim = cg->Cig * cg->KS;
  return KILN_OK;
}

bool kiln_lower_conv_ok(const kiln_graph *g, const kiln_node *n) {
  if (n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1) return false;
  kiln_dtype dt = g->values.data[n->inputs[0]].type.dtype;
  if (!kiln_mm_value_ok(g, n->inputs[0], dt) || !kiln_mm_value_ok(g, n->inputs[1], dt) ||
      !kiln_mm_value_ok(g, n->outputs[0], dt))
    return false;
  if (n->n_inputs == 3 && n->inputs[2] >= 0 &&
      (!kiln_mm_value_ok(g, n->inputs[2], dt) || g->values.data[n->inputs[2]].type.rank != 1))
    return false;
  conv_geom cg;
  kiln_status st = conv_geom_of(g, n, &cg);
  kiln_status_free(st);
  return st == KILN_OK && cg.P > 0 && cg.Kdim > 0 && cg.N > 0 && cg.Co > 0;
}

static bool conv_is_pointwise(const conv_geom *cg) {
  for (int d = 0; d < cg->nsp; d++)
    if (cg->k[d] != 1 || cg->s[d] != 1 || cg->pb[d] != 0 ||
        (cg->out[d] != cg->in[d] && !KILN_MUTANT(349))) /* mutant 349: an end pad not seen */
      return false;
  return true;
}

/* Row-major stride of spatial dim d in a shape. */
static int64_t sp_stride(const int64_t *dims, int nsp, int d) {
  int64_t s = 1;
  for (int i = d + 1; i < nsp; i++) s *= dims[i];
  return s;
}

static kiln_tstmt *loop(kiln_tkernel *k, kiln_tblock *parent, int var, int64_t n,
                        kiln_loop_kind kind) {
  kiln_tstmt *s = kiln_tfor(k, var, kiln_tint(k, n), kind);
  kiln_tblock_push(k, parent, s);
  return s;
}

/* e / d, skipping a division by 1 */
static kiln_texpr *divc(kiln_tkernel *k, kiln_texpr *e, int64_t d) {
  return d == 1 ? e : kiln_tbin(k, KILN_TOP_DIV, e, kiln_tint(k, d));
}

static kiln_texpr *clamp(kiln_tkernel *k, kiln_texpr *e, int64_t hi) {
  kiln_texpr *lo = kiln_tbin(k, KILN_TOP_MAX, e, kiln_tint(k, 0));
  return kiln_tbin(k, KILN_TOP_MIN, lo, kiln_tint(k, hi));
}

/* In-range test and clamped input index of window position (origins o[d] + kd[d]*dil). */
static void window_at(kiln_tkernel *k, const conv_geom *cg, kiln_texpr *const *pos,
                      kiln_texpr **valid, kiln_texpr **index) {
  *valid = NULL;
  *index = kiln_tint(k, 0);
  for (int d = 0; d < cg->nsp; d++) {
    kiln_texpr *ok = kiln_tbin(k, KILN_TOP_AND, kiln_tbin(k, KILN_TOP_GE, pos[d], kiln_tint(k, 0)),
                               kiln_tbin(k, KILN_TOP_LT, pos[d], kiln_tint(k, cg->in[d])));
    *valid = *valid ? kiln_tbin(k, KILN_TOP_AND, *valid, ok) : ok;
    kiln_texpr *c = clamp(k, pos[d], cg->in[d] - 1);
    *index = kiln_tadd(k, *index, kiln_tmul(k, c, sp_stride(cg->in, cg->nsp, d)));
  }
}

/* Kernel coordinate d of flat kernel position kp. */
static kiln_texpr *kernel_coord(kiln_tkernel *k, const conv_geom *cg, kiln_texpr *kp, int d) {
  kiln_texpr *q = divc(k, kp, sp_stride(cg->k, cg->nsp, d));
  /* mutant 351: only the last coordinate wrapped (a 3-D kernel's middle one is not) */
  if (KILN_MUTANT(351) ? d < cg->nsp - 1 : d == 0) return q;
  return kiln_tbin(k, KILN_TOP_MOD, q, kiln_tint(k, cg->k[d]));
}

/* ---- im2col panel packing ---- */

typedef struct im2col {
  const conv_geom *cg;
  int x_buf;
  int tab; /* LOCAL [nsp][NR]: window origin of each pixel of the panel */
} im2col;

static kiln_status pack_im2col(void *ud, kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                               kiln_texpr *b, kiln_texpr *jb, int dst, kiln_texpr *dst_off) {
  const im2col *ic = ud;
  const conv_geom *cg = ic->cg;
  int jv = kiln_tkernel_var(k, "pj", KILN_I64), cv = kiln_tkernel_var(k, "pc", KILN_I64);
  int kv = kiln_tkernel_var(k, "pk", KILN_I64);
  /* window origins; pixels past the end get an origin far outside the input */
  kiln_tstmt *tl = loop(k, blk, jv, g->NR, KILN_LOOP_VECTOR);
  kiln_texpr *p = kiln_tadd(k, kiln_tmul(k, jb, g->NR), kiln_tv(k, jv));
  kiln_texpr *live = kiln_tbin(k, KILN_TOP_LT, p, kiln_tint(k, cg->P));
  for (int d = 0; d < cg->nsp; d++) {
    /* mutant 44: pixel coordinates from the input's strides */
    kiln_texpr *o = divc(k, p, sp_stride(KILN_MUTANT(44) ? cg->in : cg->out, cg->nsp, d));
    if (d > 0) o = kiln_tbin(k, KILN_TOP_MOD, o, kiln_tint(k, cg->out[d]));
    o = kiln_tadd(k, kiln_tmul(k, o, cg->s[d]), kiln_tint(k, -cg->pb[d]));
    o = kiln_tselect(k, live, o, kiln_tint(k, -((int64_t)1 << 40)));
    kiln_tblock_push(
        k, &tl->body,
        kiln_tstore(k, ic->tab, kiln_tadd(k, kiln_tint(k, d * g->NR), kiln_tv(k, jv)), o));
  }
  /* rows of the panel: (input channel, kernel position) */
  kiln_tstmt *cl = loop(k, blk, cv, cg->Cig, KILN_LOOP_SERIAL);
  kiln_tstmt *kl = loop(k, &cl->body, kv, cg->KS, KILN_LOOP_SERIAL);
  kiln_tstmt *jl = loop(k, &kl->body, jv, g->NR, KILN_LOOP_VECTOR);
  kiln_texpr *pos[CONV_MAX_SP];
  for (int d = 0; d < cg->nsp; d++) {
    kiln_texpr *o = kiln_tload(k, ic->tab, kiln_tadd(k, kiln_tint(k, d * g->NR), kiln_tv(k, jv)));
    int64_t dil = KILN_MUTANT(36) ? 1 : cg->dil[d]; /* mutant 36: dilation ignored */
    pos[d] = kiln_tadd(k, o, kiln_tmul(k, kernel_coord(k, cg, kiln_tv(k, kv), d), dil));
  }
  kiln_texpr *valid, *sidx;
  window_at(k, cg, pos, &valid, &sidx);
  kiln_texpr *xoff =
      kiln_tadd(k, kiln_tmul(k, b, cg->Cig * cg->Pin), kiln_tmul(k, kiln_tv(k, cv), cg->Pin));
  kiln_texpr *x = kiln_tcast(k, g->type, kiln_tload(k, ic->x_buf, kiln_tadd(k, xoff, sidx)));
  x = kiln_tselect(k, valid, x, kiln_tfloat(k, x->type, 0));
  kiln_texpr *row = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, cv), cg->KS), kiln_tv(k, kv));
  kiln_texpr *di = kiln_tadd(k, dst_off, kiln_tadd(k, kiln_tmul(k, row, g->NR), kiln_tv(k, jv)));
  kiln_tblock_push(k, &jl->body, kiln_tstore(k, dst, di, x));
  return KILN_OK;
}

/* ---- row-aligned panels over a zero-padded copy of the input (2-D convs) ----
 * Each panel is NR consecutive pixels of one output row (a row takes ppr panels; the
 * columns past the row's end are computed on padding and not stored). The input of each
 * (image, group) is first copied into a zero-padded plane wide enough for every panel, so
 * a panel row is a plain (stride-1: contiguous) copy with no bounds tests. */

typedef struct rowpack {
  const conv_geom *cg;
  int x_buf, pad_buf;
  int64_t ppr, Hp, Wp; /* panels per output row; padded plane */
} rowpack;

static int64_t rp_plane(const rowpack *rp) {
  return rp->cg->Cig * rp->Hp * rp->Wp;
}

static kiln_status prep_padded(void *ud, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *b,
                               bool may_parallel) {
  const rowpack *rp = ud;
  const conv_geom *cg = rp->cg;
  int cv = kiln_tkernel_var(k, "qc", KILN_I64), zv = kiln_tkernel_var(k, "qz", KILN_I64);
  int hv = kiln_tkernel_var(k, "qh", KILN_I64), wv = kiln_tkernel_var(k, "qw", KILN_I64);
  kiln_loop_kind ck = may_parallel ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
  kiln_tstmt *cl = loop(k, blk, cv, cg->Cig, ck);
  kiln_texpr *dbase =
      kiln_tadd(k, kiln_tmul(k, b, rp_plane(rp)), kiln_tmul(k, kiln_tv(k, cv), rp->Hp * rp->Wp));
  kiln_tstmt *zl = loop(k, &cl->body, zv, rp->Hp * rp->Wp, KILN_LOOP_VECTOR);
  kiln_dtype dt = k->bufs.data[rp->pad_buf].dtype;
  kiln_tblock_push(
      k, &zl->body,
      kiln_tstore(k, rp->pad_buf, kiln_tadd(k, dbase, kiln_tv(k, zv)), kiln_tfloat(k, dt, 0)));
  kiln_tstmt *hl = loop(k, &cl->body, hv, cg->in[0], KILN_LOOP_SERIAL);
  kiln_tstmt *wl = loop(k, &hl->body, wv, cg->in[1], KILN_LOOP_VECTOR);
  kiln_texpr *src = kiln_tadd(
      k, kiln_tadd(k, kiln_tmul(k, b, cg->Cig * cg->Pin), kiln_tmul(k, kiln_tv(k, cv), cg->Pin)),
      kiln_tadd(k, kiln_tmul(k, kiln_tv(k, hv), cg->in[1]), kiln_tv(k, wv)));
  int64_t row_pad = cg->pb[KILN_MUTANT(266) ? 1 : 0]; /* mutant 266: the column pad */
  kiln_texpr *drow = kiln_tmul(k, kiln_tadd(k, kiln_tv(k, hv), kiln_tint(k, row_pad)), rp->Wp);
  kiln_texpr *dst = kiln_tadd(
      k, dbase, kiln_tadd(k, drow, kiln_tadd(k, kiln_tv(k, wv), kiln_tint(k, cg->pb[1]))));
  kiln_tblock_push(
      k, &wl->body,
      kiln_tstore(k, rp->pad_buf, dst, kiln_tcast(k, dt, kiln_tload(k, rp->x_buf, src))));
  return KILN_OK;
}

static kiln_status pack_rows(void *ud, kiln_tkernel *k, kiln_tblock *blk, const kiln_mm_gemm *g,
                             kiln_texpr *b, kiln_texpr *jb, int dst, kiln_texpr *dst_off) {
  const rowpack *rp = ud;
  const conv_geom *cg = rp->cg;
  int cv = kiln_tkernel_var(k, "pc", KILN_I64), hv = kiln_tkernel_var(k, "ph", KILN_I64);
  int wv = kiln_tkernel_var(k, "pw", KILN_I64), jv = kiln_tkernel_var(k, "pj", KILN_I64);
  kiln_texpr *oh = kiln_tbin(k, KILN_TOP_DIV, jb, kiln_tint(k, rp->ppr));
  kiln_texpr *ow0 = kiln_tmul(k, kiln_tbin(k, KILN_TOP_MOD, jb, kiln_tint(k, rp->ppr)), g->NR);
  kiln_tstmt *cl = loop(k, blk, cv, cg->Cig, KILN_LOOP_SERIAL);
  kiln_tstmt *hl = loop(k, &cl->body, hv, cg->k[0], KILN_LOOP_SERIAL);
  kiln_tstmt *wl = loop(k, &hl->body, wv, cg->k[1], KILN_LOOP_SERIAL);
  kiln_tstmt *jl = loop(k, &wl->body, jv, g->NR, KILN_LOOP_VECTOR);
  kiln_texpr *ih =
      kiln_tadd(k, kiln_tmul(k, oh, cg->s[0]), kiln_tmul(k, kiln_tv(k, hv), cg->dil[0]));
  kiln_texpr *iw = kiln_tadd(k, kiln_tmul(k, kiln_tadd(k, ow0, kiln_tv(k, jv)), cg->s[1]),
                             kiln_tmul(k, kiln_tv(k, wv), /* mutant 418: the row's dilation */
                                       cg->dil[KILN_MUTANT(418) ? 0 : 1]));
  kiln_texpr *src = kiln_tadd(
      k, kiln_tadd(k, kiln_tmul(k, b, rp_plane(rp)), kiln_tmul(k, kiln_tv(k, cv), rp->Hp * rp->Wp)),
      kiln_tadd(k, kiln_tmul(k, ih, rp->Wp), iw));
  kiln_texpr *row = kiln_tadd(
      k,
      kiln_tmul(k, kiln_tadd(k, kiln_tmul(k, kiln_tv(k, cv), cg->k[0]), kiln_tv(k, hv)), cg->k[1]),
      kiln_tv(k, wv));
  kiln_texpr *di = kiln_tadd(k, dst_off, kiln_tadd(k, kiln_tmul(k, row, g->NR), kiln_tv(k, jv)));
  kiln_tblock_push(k, &jl->body, kiln_tstore(k, dst, di, kiln_tload(k, rp->pad_buf, src)));
  return KILN_OK;
}

static void rowpack_init(rowpack *rp, const conv_geom *cg, int NR) {
  rp->cg = cg;
  rp->ppr = (cg->out[1] + NR - 1) / NR;
  int64_t need_h = (cg->out[0] - 1) * cg->s[0] + (cg->k[0] - 1) * cg->dil[0] + 1;
  int64_t need_w = (rp->ppr * NR - 1) * cg->s[1] + (cg->k[1] - 1) * cg->dil[1] + 1;
  rp->Hp = cg->in[0] + cg->pb[0] > need_h ? cg->in[0] + cg->pb[0] : need_h;
  rp->Wp = cg->in[1] + cg->pb[1] > need_w ? cg->in[1] + cg->pb[1] : need_w;
}

/* ---- epilogue mapping: GEMM (b = image*G + group, m = channel in group, n = pixel) ---- */

typedef struct conv_map {
  const conv_geom *cg;
  kiln_mm_epi *epi;
} conv_map;

static kiln_status conv_epi_cb(void *ud, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *b,
                               kiln_texpr *m, kiln_texpr *n, kiln_texpr *acc) {
  const conv_map *map = ud;
  const conv_geom *cg = map->cg;
  kiln_mm_coord co = {.n = 3, .lo = {0, 1, 2}, .hi = {1, 2, 2 + cg->nsp}};
  co.e[0] = cg->G == 1 ? b : kiln_tbin(k, KILN_TOP_DIV, b, kiln_tint(k, cg->G));
  co.e[1] = m;
  if (cg->G > 1) {
    kiln_texpr *g = kiln_tbin(k, KILN_TOP_MOD, b, kiln_tint(k, cg->G));
    co.e[1] = kiln_tadd(k, kiln_tmul(k, g, KILN_MUTANT(37) ? cg->Cig : cg->Cog), m); /* mutant 37 */
  }
  co.e[2] = n;
  return kiln_mm_epi_emit(map->epi, k, blk, &co, acc);
}

static kiln_mm_head conv_head(const kiln_graph *g, const kiln_node *n) {
  kiln_mm_head h = {.alpha = 1.0, .bias = -1, .beta = 1.0};
  if (n->n_inputs > 2 && n->inputs[2] >= 0) {
    h.bias = n->inputs[2];
    h.bias_strides[1] = 1;
  }
  (void)g;
  return h;
}

static kiln_status bind_filter(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step,
                               const conv_geom *cg, int wval, kiln_mm_gemm *gm) {
  const kiln_tensor *wc = kiln_mm_const(c->g, wval);
  if (wc) {
    kiln_tensor *p;
    KILN_TRY(kiln_mm_pack_a_const(wc, cg->G, cg->Cog * cg->Kdim, cg->Cog, cg->Kdim, cg->Kdim, 1,
                                  gm->MR, gm->type, &p));
    gm->a_buf = kiln_lower_param_packed(c, k, step, "w_packed", p);
    gm->a_packed = true;
    gm->a_bstr[1] = (cg->Cog + gm->MR - 1) / gm->MR * gm->MR * cg->Kdim;
    if (KILN_MUTANT(45)) gm->a_bstr[1] = cg->Cog * cg->Kdim; /* mutant 45: blocks not rounded */
    return KILN_OK;
  }
  gm->a_buf = kiln_lower_param_value(c, k, step, wval);
  gm->a_sm = cg->Kdim;
  gm->a_sk = 1;
  gm->a_bstr[1] = cg->Cog * cg->Kdim;
  return KILN_OK;
}

static kiln_status conv_schedule(kiln_lower_ctx *c, const kiln_step *step, const conv_geom *cg,
                                 kiln_mm_gemm *gm, kiln_sched_micro *micro) {
  kiln_sched_facts f = {.kind = KILN_SCHED_GEMM,
                        .type = gm->type,
                        .M = gm->M,
                        .N = gm->N,
                        .K = gm->K,
                        .batch = cg->N * cg->G,
                        .is_conv = true,
                        .pointwise = conv_is_pointwise(cg),
                        .nsp = cg->nsp};
  if (cg->nsp == 2) {
    f.out_h = cg->out[0];
    f.out_w = cg->out[1];
  }
  const kiln_sched *s;
  KILN_TRY(kiln_lower_schedule(c, step, &f, &s));
  gm->MR = s->mr;
  gm->NR = s->nr;
  gm->par = s->par;
  *micro = s->micro;
  return KILN_OK;
}

static kiln_status lower_conv_gemm(kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n,
                                   const conv_geom *cg) {
  kiln_mm_gemm *gm = kiln_arena_calloc(c->scratch, 1, sizeof *gm);
  conv_map *map = kiln_arena_calloc(c->scratch, 1, sizeof *map);
  im2col *ic = kiln_arena_calloc(c->scratch, 1, sizeof *ic);
  kiln_mm_strided *st = kiln_arena_calloc(c->scratch, 1, sizeof *st);
  gm->type = kiln_precision_accumulate(c->opts->precision, KILN_PREC_CONTRACTION,
                                       c->g->values.data[n->outputs[0]].type.dtype);
  gm->M = cg->Cog;
  gm->N = cg->P;
  gm->K = cg->Kdim;
  gm->nb = 2;
  gm->bdims[0] = cg->N;
  gm->bdims[1] = cg->G;
  kiln_step step = {0};
  kiln_tkernel *k = kiln_lower_kernel(c, grp, "conv", &step);
  kiln_sched_micro micro;
  KILN_TRY(conv_schedule(c, &step, cg, gm, &micro));
  gm->b_kind = KILN_MM_B_SCRATCH;
  rowpack *rp = kiln_arena_calloc(c->scratch, 1, sizeof *rp);
  if (micro == KILN_MICRO_ROWS) {
    rowpack_init(rp, cg, gm->NR);
    gm->N = cg->out[0] * rp->ppr * gm->NR;
    gm->seg = rp->ppr * gm->NR;
    gm->seg_valid = cg->out[1];
  }
  int xbuf = kiln_lower_param_value(c, k, &step, n->inputs[0]);
  KILN_TRY(bind_filter(c, k, &step, cg, n->inputs[1], gm));
  kiln_mm_head head = conv_head(c->g, n);
  KILN_TRY(kiln_mm_epi_prepare(c, grp, k, &step, &head, &map->epi));
  gm->b_buf = kiln_lower_param_scratch(c, k, &step, "col", gm->type, kiln_mm_gemm_scratch(gm));
  if (micro == KILN_MICRO_POINTWISE) {
    *st = (kiln_mm_strided){.buf = xbuf, .sk = cg->Pin, .sn = 1, .nb = 2};
    st->bstr[0] = cg->C * cg->Pin;
    st->bstr[1] = (KILN_MUTANT(388) ? cg->Cog : cg->Cig) * cg->Pin; /* mutant 388: Cog */
    gm->pack = kiln_mm_pack_strided;
    gm->pack_ud = st;
  } else if (micro == KILN_MICRO_ROWS) {
    rp->x_buf = xbuf;
    rp->pad_buf =
        kiln_lower_param_scratch(c, k, &step, "xpad", gm->type, cg->N * cg->G * rp_plane(rp));
    gm->pack = pack_rows;
    gm->prep = prep_padded;
    gm->pack_ud = rp;
  } else {
    ic->cg = cg;
    ic->x_buf = xbuf;
    ic->tab = kiln_tkernel_buf(k, "win", KILN_I64, KILN_SCOPE_LOCAL, cg->nsp * gm->NR);
    gm->pack = pack_im2col;
    gm->pack_ud = ic;
  }
  map->cg = cg;
  gm->epi = conv_epi_cb;
  gm->epi_ud = map;
  KILN_TRY(kiln_mm_gemm_emit(k, gm));
  kiln_lower_add_step(c, &step);
  return KILN_OK;
}

/* ---- depthwise: direct loops ---- */

typedef struct dw_vars {
  int c, r, kp, x, acc, w, xb;
} dw_vars;

/* acc[x] += w[co][kp] * in(row r, pixel x of the last spatial dim) over kernel positions. */
static void dw_accumulate(kiln_tkernel *k, kiln_tblock *blk, const conv_geom *cg,
                          const dw_vars *v) {
  int last = cg->nsp - 1;
  int64_t W = cg->out[last];
  kiln_texpr *cidx = kiln_tv(k, v->c); /* image * Co + co */
  kiln_tstmt *kl = loop(k, blk, v->kp, cg->KS, KILN_LOOP_SERIAL);
  kiln_tstmt *xl = loop(k, &kl->body, v->x, W, KILN_LOOP_VECTOR);
  kiln_texpr *pos[CONV_MAX_SP];
  kiln_texpr *r = kiln_tv(k, v->r); /* flat output row over spatial dims [0, last) */
  for (int d = 0; d < cg->nsp; d++) {
    kiln_texpr *o;
    if (d == last) o = kiln_tv(k, v->x);
    else {
      /* mutant 410: the flat row's strides taken over every spatial dim (the last counted) */
      o = divc(k, r, sp_stride(cg->out, KILN_MUTANT(410) ? cg->nsp : last, d));
      if (d > 0) o = kiln_tbin(k, KILN_TOP_MOD, o, kiln_tint(k, cg->out[d]));
    }
    kiln_texpr *kd = kernel_coord(k, cg, kiln_tv(k, v->kp), d);
    pos[d] = kiln_tadd(k, kiln_tadd(k, kiln_tmul(k, o, cg->s[d]), kiln_tmul(k, kd, cg->dil[d])),
                       kiln_tint(k, -cg->pb[d]));
  }
  kiln_texpr *valid, *sidx;
  window_at(k, cg, pos, &valid, &sidx);
  /* input channel of output channel co: co / Cog (Cig == 1) */
  kiln_texpr *img = kiln_tbin(k, KILN_TOP_DIV, cidx, kiln_tint(k, cg->Co));
  kiln_texpr *co = kiln_tbin(k, KILN_TOP_MOD, cidx, kiln_tint(k, cg->Co));
  kiln_texpr *ci = KILN_MUTANT(71) ? co /* mutant 71: one output channel per input channel */
                                   : kiln_tbin(k, KILN_TOP_DIV, co, kiln_tint(k, cg->Cog));
  kiln_texpr *xoff = kiln_tadd(k, kiln_tmul(k, img, cg->C * cg->Pin), kiln_tmul(k, ci, cg->Pin));
  kiln_texpr *x = kiln_lower_load(k, KILN_PREC_CONTRACTION, v->xb, kiln_tadd(k, xoff, sidx));
  x = kiln_tselect(k, valid, x, kiln_tfloat(k, x->type, 0));
  kiln_texpr *w = kiln_lower_load(k, KILN_PREC_CONTRACTION, v->w,
                                  kiln_tadd(k, kiln_tmul(k, co, cg->KS), kiln_tv(k, v->kp)));
  kiln_texpr *a = kiln_tload(k, v->acc, kiln_tv(k, v->x));
  kiln_texpr *sum = kiln_tbin(k, KILN_TOP_ADD, a, kiln_tbin(k, KILN_TOP_MUL, w, x));
  kiln_tblock_push(k, &xl->body, kiln_tstore(k, v->acc, kiln_tv(k, v->x), sum));
}

/* What both depthwise forms start with: the kernel's input and filter parameters and the
 * epilogue's. */
typedef struct dw_start {
  kiln_tkernel *k;
  kiln_step step;
  kiln_dtype type;
  int xb, wb;
  kiln_mm_epi *epi;
  bool par; /* the channel loop runs on the threads */
} dw_start;

static kiln_status lower_conv_depthwise(kiln_lower_ctx *c, const conv_geom *cg, dw_start *ds) {
  kiln_dtype type = ds->type;
  kiln_tkernel *k = ds->k;
  int last = cg->nsp - 1;
  int64_t W = cg->out[last], rows = cg->P / W;
  dw_vars v;
  v.xb = ds->xb;
  v.w = ds->wb;
  v.c = kiln_tkernel_var(k, "c", KILN_I64);
  v.r = kiln_tkernel_var(k, "r", KILN_I64);
  v.kp = kiln_tkernel_var(k, "kp", KILN_I64);
  v.x = kiln_tkernel_var(k, "x", KILN_I64);
  v.acc = kiln_tkernel_buf(k, "row", type, KILN_SCOPE_LOCAL, W);
  kiln_loop_kind ck = ds->par ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
  kiln_tstmt *cl = loop(k, &k->body, v.c, cg->N * cg->Co, ck);
  kiln_tstmt *rl = loop(k, &cl->body, v.r, rows, KILN_LOOP_SERIAL);
  kiln_tstmt *zl = loop(k, &rl->body, v.x, W, KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &zl->body, kiln_tstore(k, v.acc, kiln_tv(k, v.x), kiln_tfloat(k, type, 0)));
  dw_accumulate(k, &rl->body, cg, &v);
  kiln_tstmt *el = loop(k, &rl->body, v.x, W, KILN_LOOP_VECTOR);
  kiln_texpr *cv = kiln_tv(k, v.c);
  kiln_mm_coord co = {.n = 3, .lo = {0, 1, 2}, .hi = {1, 2, 2 + cg->nsp}};
  co.e[0] = kiln_tbin(k, KILN_TOP_DIV, cv, kiln_tint(k, cg->Co));
  co.e[1] = kiln_tbin(k, KILN_TOP_MOD, cv, kiln_tint(k, cg->Co));
  co.e[2] = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, v.r), W), kiln_tv(k, v.x));
  KILN_TRY(kiln_mm_epi_emit(ds->epi, k, &el->body, &co, kiln_tload(k, v.acc, kiln_tv(k, v.x))));
  kiln_lower_add_step(c, &ds->step);
  return KILN_OK;
}

/* 2-D depthwise over a zero-padded LOCAL copy of the channel's plane: the inner loop
 * reads the plane without bounds tests (contiguously for stride 1). */
typedef struct dw2 {
  int64_t Hp, Wp;
  int plane, row, c, q, h, w, oh, kh, kw, x;
} dw2;

/* The padded plane of a 2-D depthwise conv (false for other ranks). */
static bool dw2_geom(const conv_geom *cg, dw2 *d) {
  if (cg->nsp != 2) return false;
  int64_t need_h = (cg->out[0] - 1) * cg->s[0] + (cg->k[0] - 1) * cg->dil[0] + 1;
  int64_t need_w = (cg->out[1] - 1) * cg->s[1] + (cg->k[1] - 1) * cg->dil[1] + 1;
  d->Hp = cg->in[0] + cg->pb[0] > need_h ? cg->in[0] + cg->pb[0] : need_h;
  d->Wp = cg->in[1] + cg->pb[1] > need_w ? cg->in[1] + cg->pb[1] : need_w;
  return true;
}

static void dw2_fill(kiln_tkernel *k, kiln_tblock *blk, const conv_geom *cg, const dw2 *d, int xb,
                     kiln_texpr *ci_off, kiln_dtype type) {
  kiln_tstmt *zl = loop(k, blk, d->q, d->Hp * d->Wp, KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &zl->body,
                   kiln_tstore(k, d->plane, kiln_tv(k, d->q), kiln_tfloat(k, type, 0)));
  kiln_tstmt *hl = loop(k, blk, d->h, cg->in[0], KILN_LOOP_SERIAL);
  kiln_tstmt *wl = loop(k, &hl->body, d->w, cg->in[1], KILN_LOOP_VECTOR);
  kiln_texpr *src = kiln_tadd(
      k, ci_off, kiln_tadd(k, kiln_tmul(k, kiln_tv(k, d->h), cg->in[1]), kiln_tv(k, d->w)));
  kiln_texpr *dst =
      kiln_tadd(k, kiln_tmul(k, kiln_tadd(k, kiln_tv(k, d->h), kiln_tint(k, cg->pb[0])), d->Wp),
                kiln_tadd(k, kiln_tv(k, d->w), kiln_tint(k, cg->pb[1])));
  kiln_tblock_push(
      k, &wl->body,
      kiln_tstore(k, d->plane, dst, kiln_lower_load(k, KILN_PREC_CONTRACTION, xb, src)));
}

static void dw2_row(kiln_tkernel *k, kiln_tblock *blk, const conv_geom *cg, const dw2 *d, int wb,
                    kiln_texpr *co, kiln_dtype type) {
  kiln_tstmt *zl = loop(k, blk, d->x, cg->out[1], KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &zl->body, kiln_tstore(k, d->row, kiln_tv(k, d->x), kiln_tfloat(k, type, 0)));
  kiln_tstmt *hl = loop(k, blk, d->kh, cg->k[0], KILN_LOOP_SERIAL);
  kiln_tstmt *wl = loop(k, &hl->body, d->kw, cg->k[1], KILN_LOOP_SERIAL);
  kiln_tstmt *xl = loop(k, &wl->body, d->x, cg->out[1], KILN_LOOP_VECTOR);
  kiln_texpr *ih = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, d->oh), cg->s[0]),
                             kiln_tmul(k, kiln_tv(k, d->kh), cg->dil[0]));
  kiln_texpr *iw = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, d->x), cg->s[1]),
                             kiln_tmul(k, kiln_tv(k, d->kw), cg->dil[1]));
  kiln_texpr *px = kiln_tload(k, d->plane, kiln_tadd(k, kiln_tmul(k, ih, d->Wp), iw));
  kiln_texpr *widx =
      kiln_tadd(k, kiln_tmul(k, co, cg->KS),
                kiln_tadd(k,
                          kiln_tmul(k, kiln_tv(k, d->kh), /* mutant 383: rows of k[0] */
                                    KILN_MUTANT(383) ? cg->k[0] : cg->k[1]),
                          kiln_tv(k, d->kw)));
  kiln_texpr *w = kiln_lower_load(k, KILN_PREC_CONTRACTION, wb, widx);
  kiln_texpr *sum = kiln_tbin(k, KILN_TOP_ADD, kiln_tload(k, d->row, kiln_tv(k, d->x)),
                              kiln_tbin(k, KILN_TOP_MUL, w, px));
  kiln_tblock_push(k, &xl->body, kiln_tstore(k, d->row, kiln_tv(k, d->x), sum));
}

static kiln_status lower_dw2(kiln_lower_ctx *c, const conv_geom *cg, dw2 *d, dw_start *ds) {
  kiln_dtype type = ds->type;
  kiln_tkernel *k = ds->k;
  int xb = ds->xb, wb = ds->wb;
  const char *names[] = {"c", "q", "h", "w", "oh", "kh", "kw", "x"};
  int *vars[] = {&d->c, &d->q, &d->h, &d->w, &d->oh, &d->kh, &d->kw, &d->x};
  for (int i = 0; i < 8; i++) *vars[i] = kiln_tkernel_var(k, names[i], KILN_I64);
  d->plane = kiln_tkernel_buf(k, "plane", type, KILN_SCOPE_LOCAL, d->Hp * d->Wp);
  d->row = kiln_tkernel_buf(k, "row", type, KILN_SCOPE_LOCAL, cg->out[1]);
  kiln_loop_kind ck = ds->par ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
  kiln_tstmt *cl = loop(k, &k->body, d->c, cg->N * cg->Co, ck);
  kiln_texpr *cv = kiln_tv(k, d->c);
  kiln_texpr *img = kiln_tbin(k, KILN_TOP_DIV, cv, kiln_tint(k, cg->Co));
  kiln_texpr *co = kiln_tbin(k, KILN_TOP_MOD, cv, kiln_tint(k, cg->Co));
  kiln_texpr *ci = KILN_MUTANT(71) ? co : divc(k, co, cg->Cog); /* mutant 71 */
  dw2_fill(k, &cl->body, cg, d, xb,
           kiln_tadd(k, kiln_tmul(k, img, cg->C * cg->Pin), kiln_tmul(k, ci, cg->Pin)), type);
  kiln_tstmt *ol = loop(k, &cl->body, d->oh, cg->out[0], KILN_LOOP_SERIAL);
  dw2_row(k, &ol->body, cg, d, wb, co, type);
  kiln_tstmt *el = loop(k, &ol->body, d->x, cg->out[1], KILN_LOOP_VECTOR);
  kiln_mm_coord crd = {.n = 3, .lo = {0, 1, 2}, .hi = {1, 2, 4}};
  crd.e[0] = img;
  crd.e[1] = co;
  crd.e[2] = kiln_tadd(k, kiln_tmul(k, kiln_tv(k, d->oh), cg->out[1]), kiln_tv(k, d->x));
  KILN_TRY(kiln_mm_epi_emit(ds->epi, k, &el->body, &crd, kiln_tload(k, d->row, kiln_tv(k, d->x))));
  kiln_lower_add_step(c, &ds->step);
  return KILN_OK;
}

/* Depthwise: the kernel and its parameters, then the schedule's form (plane or direct). */
static kiln_status lower_depthwise(kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n,
                                   const conv_geom *cg) {
  dw2 d;
  bool two = dw2_geom(cg, &d);
  dw_start ds;
  ds.type = kiln_precision_accumulate(c->opts->precision, KILN_PREC_CONTRACTION,
                                      c->g->values.data[n->outputs[0]].type.dtype);
  ds.k = kiln_lower_kernel(c, grp, "dwconv", &ds.step);
  kiln_sched_facts f = {.kind = KILN_SCHED_DWCONV, .type = ds.type, .nsp = cg->nsp};
  f.plane = two ? d.Hp * d.Wp : 0;
  f.flops = 2.0 * (double)cg->N * (double)cg->Co * (double)cg->P * (double)cg->KS;
  const kiln_sched *s;
  KILN_TRY(kiln_lower_schedule(c, &ds.step, &f, &s));
  ds.par = s->par == KILN_PAR_OUTER;
  ds.xb = kiln_lower_param_value(c, ds.k, &ds.step, n->inputs[0]);
  ds.wb = kiln_lower_param_value(c, ds.k, &ds.step, n->inputs[1]);
  kiln_mm_head head = conv_head(c->g, n);
  KILN_TRY(kiln_mm_epi_prepare(c, grp, ds.k, &ds.step, &head, &ds.epi));
  if (s->micro == KILN_MICRO_PLANE) return lower_dw2(c, cg, &d, &ds);
  return lower_conv_depthwise(c, cg, &ds);
}

kiln_status kiln_lower_conv(kiln_lower_ctx *c, const kiln_group *grp) {
  const kiln_node *n = &c->g->nodes.data[grp->anchor];
  conv_geom *cg = kiln_arena_calloc(c->scratch, 1, sizeof *cg);
  KILN_TRY(conv_geom_of(c->g, n, cg));
  KILN_TRY(kiln_mm_epi_check(c->g, grp));
  if (cg->Cig == 1 && cg->G > 1) return lower_depthwise(c, grp, n, cg);
  return lower_conv_gemm(c, grp, n, cg);
}
