/* The random model generator: state, random numbers, operands, the text of the graph and
 * its acceptance by inference, outputs (see gen.h). The op builders are in gen_ops*.c,
 * the input search in gen_inputs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

enum {
  MAX_ELEMS = 4096,  /* elements of a value (symbol bound) */
  MAX_ATTEMPTS = 10, /* op draws per requested node */
  INT_MAG_LIMIT = 1 << 20,
};

/* ---- random numbers ---- */
static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void gen_rng_seed(gen_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

uint64_t gen_rng_next(gen_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
  return out;
}

int gen_int(gen_rng *r, int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + (int)(gen_rng_next(r) % (uint64_t)(hi - lo + 1));
}

double gen_unif(gen_rng *r) {
  return (double)(gen_rng_next(r) >> 11) * 0x1p-53;
}

bool gen_chance(gen_rng *r, double p) {
  return gen_unif(r) < p;
}

int gen_attr_int(gen *G, int lo, int hi) {
  if (hi <= lo) return lo;
  if (gen_chance(&G->arng, 0.34)) { /* a boundary value inside the range */
    int cand[5] = {lo, hi, 0, 1, -1}, n = 0;
    for (int i = 0; i < 5; i++)
      if (cand[i] >= lo && cand[i] <= hi) cand[n++] = cand[i];
    return cand[gen_int(&G->arng, 0, n - 1)];
  }
  return gen_int(&G->arng, lo, hi);
}

bool gen_attr_chance(gen *G, double p) {
  return gen_chance(&G->arng, p);
}

int gen_axis_form(gen *G, int axis, int rank) {
  return gen_attr_chance(G, 0.35) ? axis - rank : axis;
}

double gen_attr_unif(gen *G) {
  return gen_unif(&G->arng);
}

uint64_t kiln_gen_seed(uint64_t s, uint64_t j) {
  uint64_t x = s ^ (j * 0xd1b54a32d192ed03ull);
  (void)splitmix64(&x);
  return splitmix64(&x);
}

bool kiln_gen_in_shard(uint64_t j, int i, int n) {
  return n <= 1 || j % (uint64_t)n == (uint64_t)i;
}

/* ---- dtypes ---- */
int gen_dt_bit(kiln_dtype t) {
  switch (t) {
  case KILN_F32: return DT_F32;
  case KILN_F16: return DT_F16;
  case KILN_F64: return DT_F64;
  case KILN_I32: return DT_I32;
  case KILN_I64: return DT_I64;
  case KILN_BOOL: return DT_BOOL;
  case KILN_U8: return DT_U8;
  case KILN_I8: return DT_I8;
  case KILN_I16: return DT_I16;
  case KILN_U16: return DT_U16;
  case KILN_U32: return DT_U32;
  case KILN_U64: return DT_U64;
  case KILN_BF16: return DT_BF16;
  default: return 0;
  }
}

kiln_dtype gen_pick_dt(gen *G, int dts) {
  if (G->theme && (dts & gen_dt_bit(G->theme)) && gen_chance(&G->drng, 0.75)) return G->theme;
  /* f32 most often; the narrow and unsigned integers and bf16 least */
  static const kiln_dtype order[] = {KILN_F32,  KILN_F16, KILN_F64, KILN_I32, KILN_I64,
                                     KILN_BOOL, KILN_U8,  KILN_I8,  KILN_I16, KILN_U16,
                                     KILN_U32,  KILN_U64, KILN_BF16};
  static const int weight[] = {20, 4, 4, 4, 4, 4, 3, 2, 1, 1, 2, 1, 2};
  enum { N_ORDER = sizeof order / sizeof order[0] };
  int w[N_ORDER], total = 0;
  for (int i = 0; i < N_ORDER; i++) total += w[i] = (dts & gen_dt_bit(order[i])) ? weight[i] : 0;
  if (total == 0) return KILN_F32;
  int x = gen_int(&G->drng, 0, total - 1);
  for (int i = 0; i < N_ORDER; i++)
    if ((x -= w[i]) < 0) return order[i];
  return KILN_F32;
}

/* ---- values ---- */
const gen_val *gen_v(const gen *G, int i) {
  return &G->vals.data[i];
}
kiln_dtype gen_dtype(const gen *G, int i) {
  return G->vals.data[i].type.dtype;
}
int gen_rank(const gen *G, int i) {
  return G->vals.data[i].type.rank;
}
int64_t gen_dim(const gen *G, int i, int d) {
  const kiln_dim *x = &G->vals.data[i].type.dims[d];
  return gen_dim_extent(G, x);
}
bool gen_is_static(const gen *G, int i) {
  return kiln_type_is_static(&G->vals.data[i].type);
}
double gen_mag(const gen *G, int i) {
  return G->vals.data[i].mag;
}

int64_t gen_dim_extent(const gen *G, const kiln_dim *x) {
  if (x->value >= 0) return x->value;
  return x->sym && !strcmp(x->sym, GEN_SYM2) ? G->sym_m : G->sym_n;
}

int64_t gen_dim_code(const kiln_dim *x) {
  return x->value >= 0 ? x->value : !x->sym ? -3 : !strcmp(x->sym, GEN_SYM2) ? -2 : -1;
}

kiln_type gen_tensor_type(kiln_dtype dt, int rank, const int64_t *dims) {
  kiln_type t = kiln_type_tensor(dt, rank, dims);
  for (int d = 0; d < rank; d++)
    if (dims[d] < 0)
      t.dims[d].value = -1, t.dims[d].sym = dims[d] == -3 ? NULL : dims[d] == -2 ? GEN_SYM2 : "N";
  return t;
}

void gen_shape(gen *G, int r, int64_t max_elems, int64_t *dims) {
  int64_t n = 1;
  bool wide = gen_chance(&G->srng, 0.3); /* a longer last dim: vector loops with tails */
  for (int d = 0; d < r; d++) {
    int64_t left = max_elems / n, cap = (wide && d == r - 1 ? 24 : 7) * (G->scale > 1 ? 6 : 1),
            hi = left < cap ? left : cap;
    dims[d] = hi < 1 ? 1 : gen_int(&G->srng, wide && d == r - 1 && hi > 8 ? 8 : 1, (int)hi);
    n *= dims[d];
  }
}

static double dom_mag(gen_dom dom, kiln_dtype dt) {
  if (kiln_dtype_is_int(dt)) return 6;
  if (dt == KILN_BOOL) return 1;
  return dom == DOM_POS || dom == DOM_GE1 ? 3 : 2;
}

static int add_val(gen *G, const char *prefix, const kiln_type *t, gen_dom dom, double mag) {
  gen_val v = {0};
  snprintf(v.name, sizeof v.name, "%s%d", prefix, G->next_name++);
  if (t) v.type = *t;
  v.dom = dom;
  v.mag = mag;
  kiln_vec_push(&G->vals, v);
  return G->vals.len - 1;
}

static void type_text(const kiln_type *t, kiln_strbuf *b) {
  char buf[160];
  kiln_strbuf_printf(b, "%s", kiln_type_str(t, buf, sizeof buf));
}

int gen_new_input(gen *G, const kiln_type *t, gen_dom dom) {
  int v = add_val(G, "in", t, dom, dom_mag(dom, t->dtype));
  G->vals.data[v].is_input = true;
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%%%s: ", G->vals.data[v].name);
  type_text(t, &b);
  kiln_vec_push(&G->inputs, b.data);
  return v;
}

int gen_new_ranged_input(gen *G, const kiln_type *t, int64_t lo, int64_t hi) {
  int v = gen_new_input(G, t, DOM_ANY);
  gen_val *x = &G->vals.data[v];
  x->ranged = true, x->ilo = lo, x->ihi = hi;
  x->mag = fmax(fabs((double)lo), fabs((double)hi));
  return v;
}

int gen_new_fixed_input(gen *G, kiln_dtype dt, int n, const int64_t *vals, bool scalar) {
  int64_t d = n, lo = 0, hi = 0;
  kiln_type t = gen_tensor_type(dt, scalar ? 0 : 1, &d);
  for (int i = 0; i < n; i++) lo = vals[i] < lo ? vals[i] : lo, hi = vals[i] > hi ? vals[i] : hi;
  int v = gen_new_ranged_input(G, &t, lo, hi);
  gen_val *x = &G->vals.data[v];
  x->n_fix = n < 16 ? n : 16;
  memcpy(x->fix, vals, sizeof(int64_t) * (size_t)x->n_fix);
  return v;
}

/* One random element of domain dom for dtype dt, scaled by s (ANY and UNIT only). */
double kiln_gen_draw(gen_rng *r, kiln_dtype dt, gen_dom dom, double s) {
  if (dt == KILN_BOOL) return (double)gen_int(r, 0, 1);
  if (kiln_dtype_is_int(dt)) {
    int x = dom == DOM_POS ? gen_int(r, 1, 6) : gen_int(r, -6, 6);
    if (dom == DOM_NONZERO && x == 0) x = 1;
    if ((dom == DOM_NONNEG || kiln_dtype_class_of(dt) == KILN_CLASS_UINT) && x < 0) x = -x;
    return x;
  }
  double u = gen_unif(r), x;
  switch (dom) {
  case DOM_POS: x = 0.25 + 2.75 * u; break;
  case DOM_UNIT: x = (-0.9 + 1.8 * u) * s; break;
  case DOM_GE1: x = 1.1 + 1.9 * u; break;
  case DOM_NONZERO: x = (0.5 + 1.5 * u) * (gen_chance(r, 0.5) ? -1 : 1); break;
  case DOM_NONNEG: x = 2 * u; break;
  default: x = (-2 + 4 * u) * s; break;
  }
  if (dt == KILN_F16) x = nearbyint(x * 256) / 256; /* exact in f16 */
  if (dt == KILN_BF16) x = nearbyint(x * 32) / 32;  /* exact in bf16 (8 significant bits) */
  return x;
}

/* A special element of dom for dtype dt: the values an implementation treats apart (0 and -0,
 * +-1, 2, 0.5, a subnormal of dt; 0, +-1 and 6 for integers), inside the domain. */
static double special_value(gen_rng *r, kiln_dtype dt, gen_dom dom) {
  if (kiln_dtype_is_int(dt) || kiln_dtype_class_of(dt) == KILN_CLASS_UINT) {
    bool u = kiln_dtype_class_of(dt) == KILN_CLASS_UINT;
    static const double any[] = {0, 1, -1, 6, -6}, pos[] = {1, 6}, nz[] = {1, -1};
    if (dom == DOM_POS || dom == DOM_GE1 || (u && dom == DOM_NONZERO)) return pos[gen_int(r, 0, 1)];
    if (dom == DOM_NONZERO) return nz[gen_int(r, 0, 1)];
    return u || dom == DOM_NONNEG ? any[gen_int(r, 0, 1)] : any[gen_int(r, 0, 4)];
  }
  double sub = dt == KILN_F16 ? 0x1p-20 : dt == KILN_F64 ? 0x1p-1030 : 0x1p-130;
  double any[] = {0, -0.0, 1, -1, 2, 0.5, sub, -sub}, unit[] = {0, -0.0, 0.5, -0.5, sub, -sub},
         nonneg[] = {0, 1, 2, 0.5, sub}, pos[] = {1, 2, 0.5}, nz[] = {1, -1, 2, -2, 0.5, -0.5},
         ge1[] = {1.5, 2};
  switch (dom) {
  case DOM_UNIT: return unit[gen_int(r, 0, 5)];
  case DOM_NONNEG: return nonneg[gen_int(r, 0, 4)];
  case DOM_POS: return pos[gen_int(r, 0, 2)];
  case DOM_NONZERO: return nz[gen_int(r, 0, 5)];
  case DOM_GE1: return ge1[gen_int(r, 0, 1)];
  default: return any[gen_int(r, 0, 7)];
  }
}

/* The data of a constant: ordinary draws of its domain, or for one constant in ten about half
 * of its elements special values (special_value). */
static void const_text(gen *G, const kiln_type *t, gen_dom dom, kiln_strbuf *b) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) n *= t->dims[d].value;
  kiln_strbuf_printf(b, " [");
  bool special = t->dtype != KILN_BOOL && gen_chance(&G->rng, 0.1);
  for (int64_t i = 0; i < n; i++) {
    double x = special && gen_chance(&G->rng, 0.5) ? special_value(&G->rng, t->dtype, dom)
                                                   : kiln_gen_draw(&G->rng, t->dtype, dom, 1);
    const char *sep = i ? ", " : "";
    if (t->dtype == KILN_BOOL) kiln_strbuf_printf(b, "%s%s", sep, x != 0 ? "true" : "false");
    else if (kiln_dtype_is_int(t->dtype)) kiln_strbuf_printf(b, "%s%lld", sep, (long long)x);
    else if (t->dtype == KILN_F64) kiln_strbuf_printf(b, "%s%.17g", sep, x);
    else kiln_strbuf_printf(b, "%s%.9g", sep, (double)(float)x);
  }
  kiln_strbuf_printf(b, "]");
}

int gen_new_const(gen *G, const kiln_type *t, gen_dom dom) {
  int v = add_val(G, "c", t, dom, dom_mag(dom, t->dtype));
  G->vals.data[v].is_const = true;
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%%%s = const ", G->vals.data[v].name);
  type_text(t, &b);
  const_text(G, t, dom, &b);
  kiln_vec_push(&G->lines, b.data);
  return v;
}

/* Replaces the data of the last constant line (of type t) by elements drawn from vals (the
 * one value when n_vals is 1: no draw). */
static void set_const_data(gen *G, const kiln_type *t, int n_vals, const double *vals) {
  char *line = G->lines.data[G->lines.len - 1];
  *strrchr(line, '[') = 0; /* the drawn data */
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s[", line);
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) n *= t->dims[d].value;
  for (int64_t i = 0; i < n; i++) {
    double x = vals[n_vals > 1 ? gen_int(&G->rng, 0, n_vals - 1) : 0];
    if (t->dtype == KILN_BOOL)
      kiln_strbuf_printf(&b, "%s%s", i ? ", " : "", x != 0 ? "true" : "false");
    else kiln_strbuf_printf(&b, "%s%.17g", i ? ", " : "", x);
  }
  kiln_strbuf_printf(&b, "]");
  free(line);
  G->lines.data[G->lines.len - 1] = b.data;
}

int gen_const_fill(gen *G, const kiln_type *t, double x) {
  int v = gen_new_const(G, t, x > 0 ? DOM_POS : x < 0 ? DOM_NONZERO : DOM_ANY);
  set_const_data(G, t, 1, &x);
  G->vals.data[v].mag = fabs(x);
  if (x == 1 || x == 2) G->vals.data[v].dom = DOM_POS;
  return v;
}

int gen_const_pick(gen *G, const kiln_type *t, int n_vals, const double *vals) {
  double mag = 0;
  for (int i = 0; i < n_vals; i++) mag = fmax(mag, fabs(vals[i]));
  int v = gen_new_const(G, t, mag > 0 ? DOM_POS : DOM_ANY); /* the draws it replaces */
  set_const_data(G, t, n_vals, vals);
  G->vals.data[v].mag = mag, G->vals.data[v].dom = DOM_ANY;
  return v;
}

int gen_const_i64(gen *G, int n, const int64_t *vals, bool scalar) {
  int64_t dims[1] = {n};
  kiln_type t = kiln_type_tensor(KILN_I64, scalar ? 0 : 1, dims);
  double mag = 0;
  for (int i = 0; i < n; i++) mag = fmax(mag, fabs((double)vals[i]));
  int v = add_val(G, "c", &t, DOM_ANY, mag);
  G->vals.data[v].is_const = true;
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%%%s = const i64[", G->vals.data[v].name);
  if (!scalar) kiln_strbuf_printf(&b, "%d", n);
  kiln_strbuf_printf(&b, "] [");
  for (int i = 0; i < n; i++) kiln_strbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)vals[i]);
  kiln_strbuf_printf(&b, "]");
  kiln_vec_push(&G->lines, b.data);
  return v;
}

int gen_emit(gen *G, const char *op, int n_in, const int *in, int n_out, const char *attrs,
             gen_dom dom, double mag) {
  kiln_strbuf b = {0};
  int first = G->vals.len;
  for (int k = 0; k < n_out; k++) {
    int v = add_val(G, "v", NULL, dom, mag);
    kiln_strbuf_printf(&b, "%s%%%s", k ? ", " : "", G->vals.data[v].name);
  }
  kiln_strbuf_printf(&b, " = %s(", op);
  for (int k = 0; k < n_in; k++)
    kiln_strbuf_printf(&b, "%s%s%s", k ? ", " : "", in[k] < 0 ? "_" : "%",
                       in[k] < 0 ? "" : G->vals.data[in[k]].name);
  kiln_strbuf_printf(&b, ")");
  char *varied = gen_attrs_vary(G, op, attrs);
  if (varied[0]) kiln_strbuf_printf(&b, " {%s}", varied);
  free(varied);
  kiln_vec_push(&G->lines, b.data);
  return first;
}

/* ---- operand picking ---- */
static bool dom_ok(gen_dom have, gen_dom want) {
  if (want == DOM_ANY || have == want) return true;
  switch (want) {
  case DOM_POS: return have == DOM_GE1;
  case DOM_NONZERO: return have == DOM_POS || have == DOM_GE1;
  case DOM_NONNEG: return have == DOM_POS || have == DOM_GE1;
  default: return false;
  }
}

static bool val_matches(const gen *G, int i, const gen_want *w) {
  const gen_val *v = &G->vals.data[i];
  if (v->type.kind != KILN_TYPE_TENSOR || v->type.rank < 0 || v->ranged) return false;
  if (v->dyn && !w->dyn_ok) return false;
  if (!(gen_dt_bit(v->type.dtype) & w->dts)) return false;
  if (v->type.rank < w->rank_min || v->type.rank > w->rank_max) return false;
  if (!dom_ok(v->dom, w->dom)) return false;
  if (w->static_shape && !gen_is_static(G, i)) return false;
  if (w->no_const && v->is_const) return false;
  if (w->max_mag > 0 && !(v->mag <= w->max_mag)) return false;
  if (!w->empty_ok)
    for (int d = 0; d < v->type.rank; d++)
      if (v->type.dims[d].value == 0) return false;
  return true;
}

/* Index of one of the n candidates: the most recent half the time, else uniform. */
static int choose(gen *G, const int *cand, int n) {
  if (gen_chance(&G->rng, 0.45)) return cand[n - 1];
  return cand[gen_int(&G->rng, 0, n - 1)];
}

int gen_pick(gen *G, const gen_want *w) {
  if (G->prefer >= 0 && G->prefer < G->vals.len && val_matches(G, G->prefer, w)) return G->prefer;
  int *cand = kiln_xmalloc(sizeof(int) * (size_t)(G->vals.len + 1)), n = 0;
  for (int i = 0; i < G->vals.len; i++)
    if (val_matches(G, i, w)) cand[n++] = i;
  int got = -1;
  if (n > 0 && gen_chance(&G->rng, 0.8)) got = choose(G, cand, n);
  free(cand);
  if (got >= 0) return got;
  kiln_dtype dt = gen_pick_dt(G, w->dts);
  int rmax = w->rank_max < 4 ? w->rank_max : 4, rmin = w->rank_min;
  if (rmin > rmax) return -1;
  /* ranks 5 and 6 now and then, where the request allows them */
  int r = w->rank_max > 4 && gen_chance(&G->srng, 0.08) ? gen_int(&G->srng, 5, w->rank_max)
                                                        : gen_int(&G->srng, rmin, rmax);
  int64_t dims[KILN_MAX_RANK];
  gen_shape(G, r, 512 * G->scale, dims);
  if (w->empty_ok && r >= 1 && gen_chance(&G->srng, 0.04)) dims[gen_int(&G->srng, 0, r - 1)] = 0;
  bool want_const = !w->no_const && gen_chance(&G->rng, 0.15);
  if (!want_const && !w->static_shape && G->o->symbolic && r >= 1 && gen_chance(&G->srng, 0.3))
    dims[0] = gen_chance(&G->srng, 0.25) ? -2 : -1; /* N2 now and then, else N */
  bool unnamed = r >= 1 && dims[0] < 0 && w->dyn_ok && gen_chance(&G->srng, 0.3);
  if (unnamed) dims[0] = -3; /* an input dim with no name: bound from the input alone */
  /* a second unnamed dim half the time, of its own extent: the extents of unnamed dims are
   * bound one by one from the input, never from one another */
  int second = unnamed && r >= 2 && gen_chance(&G->srng, 0.5) ? gen_int(&G->srng, 1, r - 1) : 0;
  if (second && dims[second] <= 0) second = 0;
  int64_t keep = second ? dims[second] : 0;
  if (second) dims[second] = -3;
  kiln_type t = gen_tensor_type(dt, r, dims);
  int v = want_const ? gen_new_const(G, &t, w->dom) : gen_new_input(G, &t, w->dom);
  G->vals.data[v].dyn = unnamed;
  if (second) {
    for (int d = 0; d < r; d++) G->vals.data[v].ext[d] = gen_dim_extent(G, &t.dims[d]);
    G->vals.data[v].ext[second] = keep;
  }
  return v;
}

static bool dims_bcast(const kiln_dim *a, const kiln_dim *b) { /* a broadcasts into b */
  if (a->value == 1) return true;
  if (a->value >= 0) return a->value == b->value;
  return a->sym && b->sym && !strcmp(a->sym, b->sym);
}

static bool bcasts_to(const kiln_type *a, const kiln_type *b) {
  if (a->kind != KILN_TYPE_TENSOR || a->rank < 0 || a->rank > b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (!dims_bcast(&a->dims[d], &b->dims[b->rank - a->rank + d])) return false;
  return true;
}

int gen_pick_bcast(gen *G, int like, gen_dom dom, kiln_dtype dt) {
  kiln_type lt = G->vals.data[like].type;
  int *cand = kiln_xmalloc(sizeof(int) * (size_t)(G->vals.len + 1)), n = 0;
  for (int i = 0; i < G->vals.len; i++) {
    const gen_val *v = &G->vals.data[i];
    if (v->type.dtype == dt && !v->dyn && !v->ranged && bcasts_to(&v->type, &lt) &&
        dom_ok(v->dom, dom))
      cand[n++] = i;
  }
  int got = -1;
  if (n > 0 && gen_chance(&G->rng, 0.6)) got = choose(G, cand, n);
  free(cand);
  if (got >= 0) return got;
  int64_t dims[KILN_MAX_RANK];
  int drop = gen_chance(&G->rng, 0.3) ? gen_int(&G->rng, 0, lt.rank) : 0;
  int r = lt.rank - drop;
  bool sym = false;
  for (int d = 0; d < r; d++) {
    const kiln_dim *x = &lt.dims[drop + d];
    dims[d] = gen_chance(&G->rng, 0.3) ? 1 : gen_dim_code(x);
    sym = sym || dims[d] < 0;
  }
  kiln_type t = gen_tensor_type(dt, r, dims);
  bool as_const = !sym && gen_chance(&G->rng, 0.4);
  return as_const ? gen_new_const(G, &t, dom) : gen_new_input(G, &t, dom);
}

int gen_pick_mutual(gen *G, int like, gen_dom dom, kiln_dtype dt) {
  const kiln_type *lt = &G->vals.data[like].type;
  int64_t dims[KILN_MAX_RANK], out = 1;
  int lead = lt->rank < 4 && gen_chance(&G->rng, 0.3) ? 1 : 0, r = lt->rank + lead;
  if (lead) dims[0] = gen_int(&G->rng, 2, 3), out *= dims[0];
  for (int d = 0; d < lt->rank; d++) {
    const kiln_dim *x = &lt->dims[d];
    int64_t e = gen_dim_extent(G, x), other = gen_dim(G, like, gen_int(&G->rng, 0, lt->rank - 1));
    if (x->value == 1) /* where like is 1: an extent of its own, often one of like's other dims */
      dims[lead + d] = gen_chance(&G->rng, 0.3)                ? 1
                       : other > 1 && gen_chance(&G->rng, 0.5) ? other
                                                               : gen_int(&G->rng, 2, 4);
    else dims[lead + d] = gen_chance(&G->rng, 0.5) ? 1 : gen_dim_code(x);
    out *= dims[lead + d] > 1 ? dims[lead + d] : e;
  }
  if (out > MAX_ELEMS * G->scale) return gen_pick_bcast(G, like, dom, dt);
  bool sym = false;
  for (int d = 0; d < r; d++) sym = sym || dims[d] < 0;
  kiln_type t = gen_tensor_type(dt, r, dims);
  return !sym && gen_chance(&G->rng, 0.4) ? gen_new_const(G, &t, dom) : gen_new_input(G, &t, dom);
}

int gen_pick_type(gen *G, const kiln_type *t, gen_dom dom) {
  int *cand = kiln_xmalloc(sizeof(int) * (size_t)(G->vals.len + 1)), n = 0;
  for (int i = 0; i < G->vals.len; i++)
    if (kiln_type_equal(&G->vals.data[i].type, t) && !G->vals.data[i].dyn &&
        !G->vals.data[i].ranged && dom_ok(G->vals.data[i].dom, dom))
      cand[n++] = i;
  int got = -1;
  if (n > 0 && gen_chance(&G->rng, 0.6)) got = choose(G, cand, n);
  free(cand);
  if (got >= 0) return got;
  bool sym = !kiln_type_is_static(t);
  return !sym && gen_chance(&G->rng, 0.3) ? gen_new_const(G, t, dom) : gen_new_input(G, t, dom);
}

/* ---- text, parsing and acceptance ---- */
static void graph_text(const gen *G, const int *outs, int n_outs, kiln_strbuf *b) {
  kiln_strbuf_printf(b, "graph @fuzz(");
  for (int i = 0; i < G->inputs.len; i++)
    kiln_strbuf_printf(b, "%s%s", i ? ", " : "", G->inputs.data[i]);
  kiln_strbuf_printf(b, ") -> (");
  for (int i = 0; i < n_outs; i++) {
    const gen_val *v = &G->vals.data[outs[i]];
    kiln_strbuf_printf(b, "%s%%%s: ", i ? ", " : "", v->name);
    if (v->is_input || v->is_const) type_text(&v->type, b); /* declared where it is defined */
    else kiln_strbuf_printf(b, "?");
  }
  kiln_strbuf_printf(b, ") {\n  opset \"\" %d\n", G->opset);
  for (int i = 0; i < G->lines.len; i++) kiln_strbuf_printf(b, "  %s\n", G->lines.data[i]);
  kiln_strbuf_printf(b, "  return");
  for (int i = 0; i < n_outs; i++)
    kiln_strbuf_printf(b, "%s %%%s", i ? "," : "", G->vals.data[outs[i]].name);
  kiln_strbuf_printf(b, "\n}\n");
}

/* True when every dim is known or the symbol N (any unknown dim for a value of data-dependent
 * dims, which stands for at most the symbol's bound here), and the value is small enough. */
static bool type_usable(const gen *G, const kiln_type *t, bool dyn) {
  /* cast4_island's and cast8_island's, never picked */
  bool nibble = t->dtype == KILN_I4 || t->dtype == KILN_U4 || t->dtype == KILN_F8E4M3FN ||
                t->dtype == KILN_F8E4M3FNUZ || t->dtype == KILN_F8E5M2 ||
                t->dtype == KILN_F8E5M2FNUZ;
  if (t->kind != KILN_TYPE_TENSOR || t->rank < 0 || (!gen_dt_bit(t->dtype) && !nibble))
    return false;
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) {
    const kiln_dim *x = &t->dims[d];
    bool named = x->sym && (!strcmp(x->sym, "N") || !strcmp(x->sym, GEN_SYM2));
    if (x->value < 0 && !dyn && !named) return false;
    n *= gen_dim_extent(G, x);
  }
  return n <= MAX_ELEMS * G->scale;
}

/* Parses the text with outputs outs, infers types; *out the graph. */
static kiln_status build_graph(const gen *G, const int *outs, int n_outs, kiln_graph **out) {
  kiln_strbuf b = {0};
  graph_text(G, outs, n_outs, &b);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(b.data, "fuzz.kiln", &g);
  kiln_strbuf_free(&b);
  if (!st) st = kiln_ops_infer_graph(g);
  if (st) {
    kiln_graph_free(g);
    return st;
  }
  *out = g;
  return KILN_OK;
}

/* Accepts the values from `from` on: parses, infers, takes their types; the graph becomes
 * G->g unless `settle` (a pattern's step: the draw may still be dropped). */
static bool accept_from(gen *G, int from, bool settle) {
  int last = G->vals.len - 1;
  kiln_graph *g = NULL;
  kiln_status st = build_graph(G, &last, 1, &g);
  if (st) {
    snprintf(G->why, sizeof G->why, "%s", kiln_status_message(st));
    kiln_status_free(st);
    return false;
  }
  if (g->nodes.len > G->max_nodes || /* a pattern of several nodes that does not fit */
      !gen_types_ok(g, G->opset, G->why, sizeof G->why)) { /* not valid ONNX at the opset */
    kiln_graph_free(g);
    return false;
  }
  for (int i = from; i < G->vals.len; i++) {
    gen_val *v = &G->vals.data[i];
    int id = kiln_graph_find(g, v->name);
    if (id < 0 || !type_usable(G, &g->values.data[id].type, v->dyn)) {
      snprintf(G->why, sizeof G->why, "unusable type of %s", v->name);
      kiln_graph_free(g);
      return false;
    }
    v->type = g->values.data[id].type;
    for (int d = 0; d < v->type.rank; d++) /* the symbol outlives this parse of the graph */
      if (v->type.dims[d].sym)
        v->type.dims[d].sym = v->dyn                                   ? NULL
                              : !strcmp(v->type.dims[d].sym, GEN_SYM2) ? GEN_SYM2
                                                                       : "N";
    /* (a run-time shape's end may be INT64_MAX: it is read as a bound only, never added) */
    if (kiln_dtype_is_int(v->type.dtype) && !(v->mag <= INT_MAG_LIMIT) && !v->n_fix) {
      kiln_graph_free(g);
      return false;
    }
    if (v->type.dtype == KILN_BOOL) v->mag = 1, v->dom = DOM_ANY;
  }
  if (settle) {
    kiln_graph_free(g);
    return true;
  }
  kiln_graph_free(G->g);
  G->g = g;
  return true;
}

bool gen_settle(gen *G) {
  int from = G->vals.len;
  while (from > 0 && G->vals.data[from - 1].type.kind != KILN_TYPE_TENSOR) from--;
  return from == G->vals.len || accept_from(G, from, true);
}

static void truncate_to(gen *G, int vals, int inputs, int lines) {
  for (int i = inputs; i < G->inputs.len; i++) free(G->inputs.data[i]);
  for (int i = lines; i < G->lines.len; i++) free(G->lines.data[i]);
  G->vals.len = vals, G->inputs.len = inputs, G->lines.len = lines;
}

/* An op row: table weight times the policy's (o->op_weights) over the allowed ops of the
 * opset. */
static int draw_op(gen *G, gen_rng *r, const bool *allowed) {
  double total = 0;
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if (allowed[i] && kiln_gen_ops[i].since <= G->opset)
      total += kiln_gen_ops[i].weight * (G->o->op_weights ? G->o->op_weights[i] : 1.0);
  if (!(total > 0)) return -1;
  double x = gen_unif(r) * total;
  int last = -1;
  for (int i = 0; i < kiln_gen_n_ops; i++) {
    if (!allowed[i] || kiln_gen_ops[i].since > G->opset) continue;
    double w = kiln_gen_ops[i].weight * (G->o->op_weights ? G->o->op_weights[i] : 1.0);
    if (w > 0) last = i;
    if ((x -= w) < 0 && w > 0) return i;
  }
  return last;
}

/* Seeds the streams of one step (splitmix of the step seed and each salt). */
static void seed_step(gen *G, const kiln_gen_step *s) {
  gen_rng_seed(&G->rng, s->seed);
  gen_rng_seed(&G->arng, s->seed ^ (0x9e3779b97f4a7c15ull * (s->attr + 1ull)));
  gen_rng_seed(&G->drng, s->seed ^ (0xc2b2ae3d27d4eb4full * (s->dt + 1ull)));
  gen_rng_seed(&G->srng, s->seed ^ (0x165667b19e3779f9ull * (s->shape + 1ull)));
}

/* One step: its builder; kept (and appended to the genome) when inference accepts it. */
static bool grow(gen *G, const kiln_gen_step *s, int *rejected) {
  if (s->op < 0 || s->op >= kiln_gen_n_ops || kiln_gen_ops[s->op].since > G->opset) return false;
  int nv = G->vals.len, ni = G->inputs.len, nl = G->lines.len, names = G->next_name;
  G->why[0] = 0;
  seed_step(G, s);
  if (kiln_gen_ops[s->op].build(G, s->op) && G->vals.len > nv && accept_from(G, nv, false)) {
    if (G->genome->n < KILN_GEN_MAX_STEPS) G->genome->steps[G->genome->n++] = *s;
    return true;
  }
  truncate_to(G, nv, ni, nl);
  G->next_name = names; /* names do not depend on rejected draws: a replay gives the same */
  ++*rejected;
  return false;
}

static kiln_gen_step random_step(gen_rng *r, int op) {
  kiln_gen_step s = {.op = op, .seed = gen_rng_next(r)};
  s.attr = (uint32_t)gen_rng_next(r), s.dt = (uint32_t)gen_rng_next(r);
  s.shape = (uint32_t)gen_rng_next(r);
  return s;
}

/* Outputs: values no node reads (each dropped with some chance while others remain: dead
 * branches), a few values that are read too, and now and then a graph input or constant. */
static int choose_outputs(gen *G, int *outs) {
  const kiln_graph *g = G->g;
  bool *read = kiln_xcalloc((size_t)g->values.len + 1, 1);
  for (int n = 0; n < g->nodes.len; n++)
    for (int k = 0; k < g->nodes.data[n].n_inputs; k++)
      if (g->nodes.data[n].inputs[k] >= 0) read[g->nodes.data[n].inputs[k]] = true;
  int n_out = 0;
  for (int i = 0; i < G->vals.len; i++) {
    const gen_val *v = &G->vals.data[i];
    if (v->is_input || v->is_const) { /* now and then an input or constant returned as it is */
      if (gen_chance(&G->frng, v->is_input ? 0.03 : 0.015)) outs[n_out++] = i;
      continue;
    }
    if (v->dead) continue;
    int id = kiln_graph_find(g, v->name);
    bool sink = id >= 0 && !read[id] && !v->sub_read;
    if (v->keep || (sink ? !gen_chance(&G->frng, 0.2) : gen_chance(&G->frng, 0.08)))
      outs[n_out++] = i;
  }
  if (n_out == 0) outs[n_out++] = G->vals.len - 1;
  free(read);
  return n_out;
}

static bool *allowed_ops(const kiln_gen_opts *o, kiln_status *st) {
  bool *ok = kiln_xcalloc((size_t)kiln_gen_n_ops, 1);
  *st = KILN_OK;
  if (!o->ops || !o->ops[0]) {
    for (int i = 0; i < kiln_gen_n_ops; i++) ok[i] = true;
    return ok;
  }
  char *list = kiln_xstrdup(o->ops), *save = NULL;
  for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    bool found = false;
    for (int i = 0; i < kiln_gen_n_ops; i++)
      if (!strcmp(kiln_gen_ops[i].name, w)) ok[i] = found = true;
    if (!found && !*st)
      *st = kiln_invalid("unknown op '%s' (the generator's ops: kiln fuzz --list-ops)", w);
  }
  free(list);
  return ok;
}

/* Every opset from 6 on (an op's behaviour changes at its versions: each version and the one
 * before it must be drawn; below 11 only the ops whose rows start there, in their old forms:
 * before 7 the binary ops' broadcast and axis attributes), with 13, 17 and 18, the ones most
 * models use, and 26, the first of the newest ops (CumProd), more often. */
static const int opsets[] = {6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18,
                             19, 20, 21, 22, 23, 24, 25, 26, 13, 17, 18, 26};

/* The opset of the graph: one of `opsets`, at least the first version of some allowed op. */
static void pick_opset(gen *G, gen_rng *r, const bool *allowed) {
  int lo = 1000, n = (int)(sizeof opsets / sizeof opsets[0]), cand[32], k = 0;
  for (int i = 0; i < kiln_gen_n_ops; i++) /* (a duplicate needs a node of another row) */
    if (allowed[i] && kiln_gen_ops[i].since < lo && kiln_gen_ops[i].build != gen_b_duplicate)
      lo = kiln_gen_ops[i].since;
  for (int i = 0; i < n; i++)
    if (opsets[i] >= lo) cand[k++] = opsets[i];
  G->opset = k ? cand[gen_int(r, 0, k - 1)] : lo;
}

int gen_seed_opset(const kiln_gen_opts *o, uint64_t seed) {
  kiln_status st;
  bool *allowed = allowed_ops(o, &st);
  kiln_status_free(st);
  gen G = {0};
  G.o = o;
  gen_rng r;
  gen_rng_seed(&r, seed);
  pick_opset(&G, &r, allowed);
  free(allowed);
  return G.opset;
}

/* The graph-level choices of the genome seed: opset, symbol extent, node count; the finishing
 * stream (outputs, input search). The count is returned. */
static int graph_choices(gen *G, uint64_t seed, const bool *allowed) {
  gen_rng r;
  gen_rng_seed(&r, seed);
  pick_opset(G, &r, allowed);
  G->sym_n = gen_int(&r, 2, 4);
  G->sym_m = gen_int(&r, 1, 5); /* a second symbol; 1 too: a dynamic dim that broadcasts */
  int target = gen_int(&r, 1, G->max_nodes);
  gen_rng_seed(&G->frng, gen_rng_next(&r));
  /* half the graphs have a theme dtype, each generated dtype alike (f32 would otherwise
     dominate, and the code paths of bf16, f16, uint8 ... would be reached rarely) */
  static const kiln_dtype themes[] = {KILN_F32, KILN_F16, KILN_F64, KILN_BF16, KILN_I32,
                                      KILN_I64, KILN_I8,  KILN_I16, KILN_U8,   KILN_U16,
                                      KILN_U32, KILN_U64, KILN_BOOL};
  int n_themes = (int)(sizeof themes / sizeof themes[0]);
  G->theme = gen_chance(&r, 0.5) ? themes[gen_int(&r, 0, n_themes - 1)] : KILN_UNDEFINED;
  G->scale = gen_chance(&r, 0.04) ? 64 : 1;
  /* a third of the graphs have a focus op (the weights of the table and the policy): a form
     of one op that is rare in a campaign over every op is then drawn many times per graph */
  G->focus = gen_chance(&r, 0.35) ? draw_op(G, &r, allowed) : -1;
  return target;
}

/* Fresh steps: ops drawn until `target` nodes are accepted (a rejected draw is redrawn). */
static void grow_fresh(gen *G, uint64_t seed, const bool *allowed, int target, int *rejected) {
  gen_rng r;
  gen_rng_seed(&r, seed ^ 0x5851f42d4c957f2dull);
  for (int a = 0; a < target * MAX_ATTEMPTS + 100 && (G->g ? G->g->nodes.len : 0) < target; a++) {
    if (a >= target * MAX_ATTEMPTS && G->g) break; /* the extra draws only for a first node */
    int op = G->focus >= 0 && gen_chance(&r, 0.5) ? G->focus : draw_op(G, &r, allowed);
    if (op < 0) break;
    kiln_gen_step s = random_step(&r, op);
    grow(G, &s, rejected);
  }
}

/* One graph in 16 gets a graph input that no node reads, at any position of the input
 * list (models keep inputs they no longer use): inputs are bound by position, and nothing
 * may assume that every input is read or that the read ones come first. */
static void unread_input(gen *G) {
  if (G->inputs.len == 0 || !gen_chance(&G->frng, 1.0 / 16)) return;
  static const kiln_dtype dts[] = {KILN_F32, KILN_F16, KILN_I64, KILN_BOOL, KILN_U8};
  int64_t d[2] = {gen_int(&G->frng, 1, 4), gen_int(&G->frng, 1, 3)};
  kiln_type t = gen_tensor_type(dts[gen_int(&G->frng, 0, 4)], gen_int(&G->frng, 0, 2), d);
  gen_new_input(G, &t, DOM_ANY);
  int at = gen_int(&G->frng, 0, G->inputs.len - 1);
  char *last = G->inputs.data[G->inputs.len - 1];
  memmove(G->inputs.data + at + 1, G->inputs.data + at,
          sizeof(char *) * (size_t)(G->inputs.len - 1 - at));
  G->inputs.data[at] = last;
}

/* Builds the graph of the case (no inputs yet): fresh steps, or those of `replay`. */
static kiln_status build(gen *G, uint64_t seed, const kiln_gen_genome *replay, kiln_gen_case *out) {
  kiln_status st;
  bool *allowed = allowed_ops(G->o, &st);
  if (st) {
    free(allowed);
    return st;
  }
  int target = graph_choices(G, seed, allowed);
  out->genome.seed = seed;
  G->genome = &out->genome;
  if (!replay) grow_fresh(G, seed, allowed, target, &out->rejected);
  else
    for (int i = 0; i < replay->n && (G->g ? G->g->nodes.len : 0) < G->max_nodes; i++)
      if (replay->steps[i].op >= 0 && replay->steps[i].op < kiln_gen_n_ops &&
          allowed[replay->steps[i].op])
        grow(G, &replay->steps[i], &out->rejected);
  free(allowed);
  out->opset = G->opset;
  if (!G->g && replay) { /* every step of a mutated genome was skipped: an empty case */
    out->status = KILN_GEN_INVALID;
    snprintf(out->note, sizeof out->note, "no step of the genome fits");
    return KILN_OK;
  }
  if (!G->g) return KILN_BUG("generator: no node accepted (%s)", G->why);
  unread_input(G);
  int *outs = kiln_xmalloc(sizeof(int) * (size_t)(G->vals.len + 1));
  int n_out = choose_outputs(G, outs);
  st = build_graph(G, outs, n_out, &out->g);
  free(outs);
  return st;
}

void kiln_gen_opts_init(kiln_gen_opts *o) {
  memset(o, 0, sizeof *o);
  o->max_nodes = 12;
  o->symbolic = true;
  o->input_tries = 8;
  o->check_inputs = true;
  o->edge_share = 0.3;
}

/* Node names are data, never code, wherever Kiln writes them (generated C comments and
 * strings, messages, case files): one graph in ten gets node names with comment ends, quotes,
 * backslashes, format directives, line breaks and non-ASCII bytes (each made unique by its
 * index), the others none. */
static void name_nodes(kiln_graph *g, uint64_t seed) {
  static const char *const names[] = {"relu */ x",   "/* open",     "back\\slash\\", "\"quoted\"",
                                      "%s%n%d",      "line\nbreak", "?\?/ tri",      "#define N",
                                      "caf\xc3\xa9", "tab\there",   "x; int y",      "<b>&amp;"};
  gen_rng r;
  gen_rng_seed(&r, seed ^ 0x6e616d6573ull); /* "names" */
  if (!g || !gen_chance(&r, 0.1)) return;
  int n_names = (int)(sizeof names / sizeof names[0]);
  for (int i = 0; i < g->nodes.len; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s %d", names[gen_int(&r, 0, n_names - 1)], i);
    g->nodes.data[i].name = kiln_graph_strdup(g, buf);
  }
}

static kiln_status make_case(const kiln_gen_opts *o, uint64_t seed, const kiln_gen_genome *replay,
                             kiln_gen_case *out) {
  memset(out, 0, sizeof *out);
  gen G = {0};
  G.o = o;
  G.prefer = -1;
  G.max_nodes = o->max_nodes < 1 ? 1 : o->max_nodes > 30 ? 30 : o->max_nodes;
  kiln_status st = build(&G, seed, replay, out);
  if (!st && out->g) name_nodes(out->g, seed);
  if (!st && out->g) {
    G.rng = G.frng; /* the input search draws from the finishing stream */
    st = kiln_gen_inputs(&G, out);
  }
  truncate_to(&G, 0, 0, 0);
  kiln_vec_free(&G.vals);
  kiln_vec_free(&G.inputs);
  kiln_vec_free(&G.lines);
  kiln_graph_free(G.g);
  if (st) kiln_gen_case_free(out);
  return st;
}

kiln_status kiln_gen_model(const kiln_gen_opts *o, uint64_t seed, kiln_gen_case *out) {
  return make_case(o, seed, NULL, out);
}

kiln_status kiln_gen_from_genome(const kiln_gen_opts *o, const kiln_gen_genome *gn,
                                 kiln_gen_case *out) {
  return make_case(o, gn->seed, gn, out);
}

void kiln_gen_case_free(kiln_gen_case *c) {
  if (c->inputs)
    for (int i = 0; i < c->n_in; i++) kiln_val_free(c->inputs[i]);
  free(c->inputs);
  kiln_graph_free(c->g);
  c->inputs = NULL, c->g = NULL, c->n_in = 0;
}

int kiln_gen_op_count(void) {
  return kiln_gen_n_ops;
}

const char *kiln_gen_op_name(int i) {
  return i >= 0 && i < kiln_gen_n_ops ? kiln_gen_ops[i].name : NULL;
}
