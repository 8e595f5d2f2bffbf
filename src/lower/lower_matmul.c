/* Contraction lowering: which nodes anchor a contraction group, and MatMul and Gemm.
 *
 * MatMul with a constant B that has no batch dims of its own (linear layers) is one GEMM
 * over all rows of A, with B prepacked into panels. Other MatMuls (attention) are batched
 * GEMMs over the broadcast batch dims with B read in place when it is at most one panel
 * wide, or packed into scratch. Gemm reads A in place (transA through strides), prepacks a
 * constant B (transB folded into the packing) and adds alpha and beta*C in the epilogue. */
#include "base/mutate.h"
#include "lower_mm.h"
#include "ops/attr_decode.h"

bool kiln_mm_value_ok(const kiln_graph *g, int v, kiln_dtype dt) {
  if (v < 0 || v >= g->values.len) return false;
  const kiln_type *t = &g->values.data[v].type;
  return t->kind == KILN_TYPE_TENSOR && kiln_type_is_static(t) && t->dtype == dt &&
         (dt == KILN_F32 || dt == KILN_F64);
}

const kiln_tensor *kiln_mm_const(const kiln_graph *g, int v) {
  const kiln_value *val = &g->values.data[v];
  return val->kind == KILN_VALUE_CONST ? val->data : NULL;
}

static const kiln_type *vtype(const kiln_graph *g, int v) {
  return &g->values.data[v].type;
}

static bool matmul_ok(const kiln_graph *g, const kiln_node *n) {
  if (n->n_inputs != 2 || n->n_outputs != 1) return false;
  kiln_dtype dt = vtype(g, n->inputs[0])->dtype;
  for (int i = 0; i < 2; i++)
    if (!kiln_mm_value_ok(g, n->inputs[i], dt) || vtype(g, n->inputs[i])->rank < 1) return false;
  return kiln_mm_value_ok(g, n->outputs[0], dt);
}

static bool gemm_ok(const kiln_graph *g, const kiln_node *n) {
  if (n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1) return false;
  kiln_dtype dt = vtype(g, n->inputs[0])->dtype;
  for (int i = 0; i < n->n_inputs; i++) {
    if (n->inputs[i] < 0 && i == 2) continue;
    if (!kiln_mm_value_ok(g, n->inputs[i], dt)) return false;
    if (i < 2 && vtype(g, n->inputs[i])->rank != 2) return false;
  }
  return kiln_mm_value_ok(g, n->outputs[0], dt) && vtype(g, n->outputs[0])->rank == 2;
}

bool kiln_lower_is_contraction(const kiln_graph *g, const kiln_node *n) {
  switch (n->op) {
  case KILN_OP_MatMul: return matmul_ok(g, n);
  case KILN_OP_Gemm: return gemm_ok(g, n);
  case KILN_OP_Conv: return kiln_lower_conv_ok(g, n);
  default: return false;
  }
}

/* ---- epilogue callback: (b, m, n) to output coordinates ---- */

typedef struct mm_map {
  kiln_mm_epi *epi;
  int b_lo, b_hi, m_lo, m_hi, n_lo, n_hi; /* output dims each index covers */
} mm_map;

static void coord_add(kiln_mm_coord *co, kiln_texpr *e, int lo, int hi) {
  if (lo >= hi) return;
  co->e[co->n] = e;
  co->lo[co->n] = lo;
  co->hi[co->n++] = hi;
}

static kiln_status mm_epi_cb(void *ud, kiln_tkernel *k, kiln_tblock *blk, kiln_texpr *b,
                             kiln_texpr *m, kiln_texpr *n, kiln_texpr *acc) {
  const mm_map *map = ud;
  kiln_mm_coord co = {0};
  coord_add(&co, b, map->b_lo, map->b_hi);
  coord_add(&co, m, map->m_lo, map->m_hi);
  coord_add(&co, n, map->n_lo, map->n_hi);
  return kiln_mm_epi_emit(map->epi, k, blk, &co, acc);
}

/* ---- MatMul ---- */

typedef struct mm_dims {
  int ra, rb, ro, nb; /* ranks of A, B, output; batch rank of the output */
  int64_t M, N, K;
  int64_t bdims[KILN_MAX_RANK], a_bstr[KILN_MAX_RANK], b_bstr[KILN_MAX_RANK];
  bool b_has_batch;
} mm_dims;

static kiln_status matmul_dims(const kiln_graph *g, const kiln_node *n, mm_dims *d) {
  const kiln_type *a = vtype(g, n->inputs[0]), *b = vtype(g, n->inputs[1]);
  const kiln_type *o = vtype(g, n->outputs[0]);
  d->ra = a->rank;
  d->rb = b->rank;
  d->ro = o->rank;
  d->M = d->ra >= 2 ? a->dims[d->ra - 2].value : 1;
  d->K = a->dims[d->ra - 1].value;
  d->N = d->rb >= 2 ? b->dims[d->rb - 1].value : 1;
  int64_t kb = d->rb >= 2 ? b->dims[d->rb - 2].value : b->dims[0].value;
  if (kb != d->K) return kiln_invalid("MatMul inner dims differ");
  d->nb = d->ro - (d->ra >= 2) - (d->rb >= 2);
  int ba = d->ra > 2 ? d->ra - 2 : 0, bbr = d->rb > 2 ? d->rb - 2 : 0;
  if (d->nb < 0 || d->nb < ba || d->nb < bbr) return kiln_invalid("MatMul output rank");
  int64_t sa = d->M * d->K, sb = d->K * d->N;
  d->b_has_batch = false;
  for (int i = d->nb - 1; i >= 0; i--) {
    int ia = i - (d->nb - ba), ib = KILN_MUTANT(293) ? (i < bbr ? i : -1) /* mutant 293 */
                                                     : i - (d->nb - bbr); /* B's batch left */
    int64_t ea = ia >= 0 ? a->dims[ia].value : 1, eb = ib >= 0 ? b->dims[ib].value : 1;
    d->bdims[i] = o->dims[i].value;
    d->a_bstr[i] = ea == 1 && !KILN_MUTANT(70) ? 0 : sa; /* mutant 70: A's batch 1 strided */
    d->b_bstr[i] = eb == 1 ? 0 : sb;
    if (eb != 1) d->b_has_batch = true;
    sa *= ea;
    sb *= eb;
  }
  return KILN_OK;
}

/* A constant B without batch dims: one GEMM over all rows of A. */
static void matmul_flat(const mm_dims *d, kiln_mm_gemm *gm, mm_map *map) {
  int64_t rows = d->M;
  for (int i = 0; i < d->nb; i++) rows *= d->bdims[i];
  gm->M = rows;
  gm->nb = 0;
  int ncols = d->rb >= 2 || KILN_MUTANT(353); /* mutant 353: a 1-D B taken to leave a column dim */
  map->b_lo = map->b_hi = 0;
  map->m_lo = 0;
  map->m_hi = map->n_lo = d->ro - ncols;
  map->n_hi = d->ro;
}

static void matmul_batched(const mm_dims *d, kiln_mm_gemm *gm, mm_map *map) {
  gm->M = d->M;
  gm->nb = d->nb;
  for (int i = 0; i < d->nb; i++) {
    gm->bdims[i] = d->bdims[i];
    gm->a_bstr[i] = d->a_bstr[i];
    gm->b_bstr[i] = d->b_bstr[i];
  }
  map->b_lo = 0;
  map->b_hi = map->m_lo = d->nb;
  map->m_hi = map->n_lo = d->nb + (d->ra >= 2);
  map->n_hi = d->ro;
}

/* The kernel's schedule from the product's facts: tile, B form and parallel loop. */
static kiln_status gemm_schedule(kiln_lower_ctx *c, const kiln_step *step, kiln_mm_gemm *gm,
                                 bool b_const, bool b_contig, kiln_sched_micro *micro) {
  kiln_sched_facts f = {.kind = KILN_SCHED_GEMM,
                        .type = gm->type,
                        .M = gm->M,
                        .N = gm->N,
                        .K = gm->K,
                        .batch = 1,
                        .b_const = b_const,
                        .b_contig = b_contig};
  for (int i = 0; i < gm->nb; i++) f.batch *= gm->bdims[i];
  const kiln_sched *s;
  KILN_TRY(kiln_lower_schedule(c, step, &f, &s));
  gm->MR = s->mr;
  gm->NR = s->nr;
  gm->par = s->par;
  *micro = s->micro;
  return KILN_OK;
}

/* Binds B as the schedule says: prepacked (a constant), in place (one panel wide) or packed
 * into scratch (the scratch parameter is added by the caller after the epilogue's). */
static kiln_status bind_b(kiln_lower_ctx *c, kiln_tkernel *k, kiln_step *step, kiln_mm_gemm *gm,
                          int bval, int64_t sk, int64_t sn, kiln_mm_strided *st,
                          kiln_sched_micro micro) {
  const kiln_tensor *bc = kiln_mm_const(c->g, bval);
  if (micro == KILN_MICRO_PACKED) {
    if (!bc) return KILN_BUG("a packed B that is not a constant");
    int64_t nbm = 1, bstride = gm->K * gm->N;
    int64_t panel = kiln_mm_gemm_panels(gm) * gm->K * gm->NR;
    for (int i = 0; i < gm->nb; i++) {
      if (gm->b_bstr[i]) nbm *= gm->bdims[i];
      gm->b_bstr[i] = gm->b_bstr[i] / bstride * panel;
    }
    kiln_tensor *p;
    KILN_TRY(kiln_mm_pack_b_const(bc, nbm, bstride, gm->K, gm->N, sk, sn, gm->NR, gm->type, &p));
    gm->b_kind = KILN_MM_B_PACKED;
    gm->b_buf = kiln_lower_param_packed(c, k, step, "b_packed", p);
    return KILN_OK;
  }
  int buf = kiln_lower_param_value(c, k, step, bval);
  if (micro == KILN_MICRO_INPLACE) {
    gm->b_kind = KILN_MM_B_INPLACE;
    gm->NR = (int)gm->N;
    gm->b_buf = buf;
    gm->ldb = sk;
    return KILN_OK;
  }
  gm->b_kind = KILN_MM_B_SCRATCH;
  st->buf = buf;
  st->sk = sk;
  st->sn = sn;
  st->nb = gm->nb;
  for (int i = 0; i < gm->nb; i++) st->bstr[i] = gm->b_bstr[i];
  gm->pack = kiln_mm_pack_strided;
  gm->pack_ud = st;
  return KILN_OK;
}

/* Epilogue, scratch and loop nest: the part MatMul and Gemm share. */
static kiln_status finish(kiln_lower_ctx *c, const kiln_group *grp, kiln_tkernel *k,
                          kiln_step *step, kiln_mm_gemm *gm, mm_map *map,
                          const kiln_mm_head *head) {
  KILN_TRY(kiln_mm_epi_prepare(c, grp, k, step, head, &map->epi));
  if (gm->b_kind == KILN_MM_B_SCRATCH)
    gm->b_buf =
        kiln_lower_param_scratch(c, k, step, "b_panels", gm->type, kiln_mm_gemm_scratch(gm));
  gm->epi = mm_epi_cb;
  gm->epi_ud = map;
  KILN_TRY(kiln_mm_gemm_emit(k, gm));
  kiln_lower_add_step(c, step);
  return KILN_OK;
}

static kiln_status lower_matmul(kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n) {
  mm_dims d;
  KILN_TRY(matmul_dims(c->g, n, &d));
  KILN_TRY(kiln_mm_epi_check(c->g, grp));
  kiln_mm_gemm *gm = kiln_arena_calloc(c->scratch, 1, sizeof *gm);
  mm_map *map = kiln_arena_calloc(c->scratch, 1, sizeof *map);
  kiln_mm_strided *st = kiln_arena_calloc(c->scratch, 1, sizeof *st);
  gm->type = kiln_precision_accumulate(c->opts->precision, KILN_PREC_CONTRACTION,
                                       vtype(c->g, n->outputs[0])->dtype);
  gm->N = d.N;
  gm->K = d.K;
  bool flat = kiln_mm_const(c->g, n->inputs[1]) && !d.b_has_batch;
  if (flat) matmul_flat(&d, gm, map);
  else matmul_batched(&d, gm, map);
  kiln_step step = {0};
  kiln_tkernel *k = kiln_lower_kernel(c, grp, "matmul", &step);
  kiln_sched_micro micro;
  KILN_TRY(gemm_schedule(c, &step, gm, kiln_mm_const(c->g, n->inputs[1]) != NULL, true, &micro));
  gm->a_buf = kiln_lower_param_value(c, k, &step, n->inputs[0]);
  gm->a_sm = d.K;
  gm->a_sk = 1;
  KILN_TRY(bind_b(c, k, &step, gm, n->inputs[1], d.N, 1, st, micro));
  kiln_mm_head head = {.alpha = 1.0, .bias = -1, .beta = 0.0};
  return finish(c, grp, k, &step, gm, map, &head);
}

/* ---- Gemm ---- */

static kiln_status lower_gemm(kiln_lower_ctx *c, const kiln_group *grp, const kiln_node *n) {
  kiln_attrs_gemm ga;
  KILN_TRY(kiln_attrs_gemm_decode(n, &ga));
  bool ta = ga.trans_a, tb = ga.trans_b;
  float alpha = ga.alpha, beta = ga.beta;
  const kiln_type *at = vtype(c->g, n->inputs[0]), *bt = vtype(c->g, n->inputs[1]);
  const kiln_type *ot = vtype(c->g, n->outputs[0]);
  int64_t M = at->dims[ta ? 1 : 0].value, K = at->dims[ta ? 0 : 1].value;
  int64_t N = bt->dims[tb ? 0 : 1].value, kb = bt->dims[tb ? 1 : 0].value;
  if (kb != K || ot->dims[0].value != M || ot->dims[1].value != N)
    return kiln_invalid("Gemm shapes do not agree");
  kiln_mm_head head = {.alpha = alpha, .bias = -1, .beta = beta};
  int cv = n->n_inputs > 2 ? n->inputs[2] : -1;
  if (cv >= 0 && beta != 0.0f) {
    const kiln_type *ct = vtype(c->g, cv);
    if (ct->rank > 2) return kiln_invalid("Gemm C has rank above 2");
    int64_t s = 1;
    for (int d = 1; d >= 0; d--) {
      int cd = KILN_MUTANT(212) ? (d < ct->rank ? d : -1)
                                : d - (2 - ct->rank); /* mutant 212: C aligned to the rows */
      int64_t e = cd >= 0 ? ct->dims[cd].value : 1;
      if (e != 1 && e != ot->dims[d].value) return kiln_invalid("Gemm C does not broadcast");
      head.bias_strides[d] = e == 1 ? 0 : KILN_MUTANT(331) ? (d ? 1 : N) : s; /* mutant 331 */
      s *= e;
    }
    head.bias = cv;
  }
  KILN_TRY(kiln_mm_epi_check(c->g, grp));
  kiln_mm_gemm *gm = kiln_arena_calloc(c->scratch, 1, sizeof *gm);
  mm_map *map = kiln_arena_calloc(c->scratch, 1, sizeof *map);
  kiln_mm_strided *st = kiln_arena_calloc(c->scratch, 1, sizeof *st);
  gm->type = kiln_precision_accumulate(c->opts->precision, KILN_PREC_CONTRACTION, ot->dtype);
  gm->M = M;
  gm->N = N;
  gm->K = K;
  *map = (mm_map){.m_lo = 0, .m_hi = 1, .n_lo = 1, .n_hi = 2};
  kiln_step step = {0};
  kiln_tkernel *k = kiln_lower_kernel(c, grp, "gemm", &step);
  kiln_sched_micro micro;
  bool tcol = KILN_MUTANT(267) ? ta : tb; /* mutant 267: B's contiguity from transA */
  KILN_TRY(gemm_schedule(c, &step, gm, kiln_mm_const(c->g, n->inputs[1]) != NULL,
                         (tcol ? K : 1) == 1, &micro));
  gm->a_buf = kiln_lower_param_value(c, k, &step, n->inputs[0]);
  gm->a_sm = ta ? 1 : K;
  gm->a_sk = ta ? (KILN_MUTANT(38) ? K : M) : 1; /* mutant 38: transA stride K */
  KILN_TRY(bind_b(c, k, &step, gm, n->inputs[1], tb ? 1 : N, tb ? K : 1, st, micro));
  return finish(c, grp, k, &step, gm, map, &head);
}

/* The group's anchor: the one the driver marked, else its first contraction node. */
static int find_anchor(const kiln_graph *g, const kiln_group *grp) {
  if (grp->anchor >= 0) return grp->anchor;
  for (int i = 0; i < grp->n_nodes; i++)
    if (kiln_lower_is_contraction(g, &g->nodes.data[grp->nodes[i]])) return grp->nodes[i];
  return -1;
}

kiln_status kiln_lower_contraction(kiln_lower_ctx *c, const kiln_group *grp) {
  kiln_group with_anchor = *grp;
  with_anchor.anchor = find_anchor(c->g, grp);
  if (with_anchor.anchor < 0) return kiln_unsupported("no supported contraction in the group");
  const kiln_node *n = &c->g->nodes.data[with_anchor.anchor];
  if (!kiln_lower_is_contraction(c->g, n)) return kiln_unsupported("not a supported contraction");
  switch (n->op) {
  case KILN_OP_MatMul: return lower_matmul(c, &with_anchor, n);
  case KILN_OP_Gemm: return lower_gemm(c, &with_anchor, n);
  default: return kiln_lower_conv(c, &with_anchor);
  }
}
