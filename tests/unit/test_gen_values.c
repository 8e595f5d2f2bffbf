/* Edge draws of the generator's input search (src/verify/gen/gen_values.c, gen_inputs.c):
 * every edge kind (ties included) stays inside the input's domain and has the property its name
 * promises; over many seeds every kind is drawn and kept; kept edge inputs leave the reference
 * finite and stable; edge_share 0 draws none. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "verify/gen/gen.h"
#include "verify/gen/gen_internal.h"

static const kiln_dtype dtypes[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64, KILN_I8,  KILN_I16,
                                    KILN_I32, KILN_I64,  KILN_U8,  KILN_U16, KILN_U32, KILN_U64};
enum { N_DT = sizeof dtypes / sizeof dtypes[0], N_DRAW = 400 };

static double dt_max(kiln_dtype t) {
  return t == KILN_F16    ? 65504.0
         : t == KILN_BF16 ? 0x1.fep127
         : t == KILN_F32  ? (double)FLT_MAX
                          : DBL_MAX;
}
static double dt_min_normal(kiln_dtype t) {
  return t == KILN_F16 ? 0x1p-14 : t == KILN_F32 || t == KILN_BF16 ? 0x1p-126 : 0x1p-1022;
}
static double dt_u(kiln_dtype t) {
  return t == KILN_F16 ? 0x1p-11 : t == KILN_BF16 ? 0x1p-8 : t == KILN_F32 ? 0x1p-24 : 0x1p-53;
}
/* The range of an integer dtype, as uint64 bits for the unsigned ones. */
static void int_range(kiln_dtype t, int64_t *lo, int64_t *hi) {
  int bits = (int)kiln_dtype_size(t) * 8;
  bool u = kiln_dtype_class_of(t) == KILN_CLASS_UINT;
  *hi = u ? (bits >= 64 ? -1 : (int64_t)((1ull << bits) - 1))
          : (bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1));
  *lo = u ? 0 : -*hi - 1;
}

/* Whether element i equals (bit for bit) an earlier element. */
static bool copies_earlier(const kiln_tensor *t, int64_t i) {
  size_t sz = kiln_dtype_size(t->dtype);
  for (int64_t j = 0; j < i; j++)
    if (!memcmp((char *)t->data + (size_t)j * sz, (char *)t->data + (size_t)i * sz, sz))
      return true;
  return false;
}

/* The property kind k promises for element i of t (domain dom). */
static bool has_kind(const kiln_tensor *t, int64_t i, gen_dom dom, int k) {
  if (k == KILN_GEN_EDGE_TIE) return i == 0 || copies_earlier(t, i);
  if (!kiln_dtype_is_float(t->dtype)) {
    int64_t x = kiln_load_i64(t->dtype, t->data, (size_t)i), lo, hi;
    int_range(t->dtype, &lo, &hi);
    uint64_t ux = (uint64_t)x, umax = (uint64_t)hi, top = umax / 2 + 1;
    switch (k) { /* large: a quarter of the range at least, for i8 and i16 */
    case KILN_GEN_EDGE_LARGE:
      return x >= lo && x <= hi && llabs((long long)x) >= (hi < 1000 ? hi / 4 : 100);
    case KILN_GEN_EDGE_INT_EXTREME: return x <= lo + 1 || x >= hi - 1;
    case KILN_GEN_EDGE_UINT_WRAP: {
      uint64_t bits = kiln_dtype_size(t->dtype) * 8;
      return ux == 0 || ux == 1 || ux == top || ux >= umax - 1 || ux == bits / 2 + 1 ||
             ux == bits - 1 || ux == bits;
    }
    case KILN_GEN_EDGE_ZERO: return x == 0;
    default: return false;
    }
  }
  double x = kiln_load_f64(t->dtype, t->data, (size_t)i), ax = fabs(x);
  switch (k) {
  case KILN_GEN_EDGE_LARGE: return ax >= 10;
  case KILN_GEN_EDGE_EXP_OVER: return isinf(exp(ax)) || ax > log(dt_max(t->dtype));
  case KILN_GEN_EDGE_LIMIT:
    if (dom == DOM_UNIT) return ax >= 1 - 8 * dt_u(t->dtype);
    if (dom == DOM_GE1) return x <= 1 + 8 * dt_u(t->dtype);
    return ax >= dt_max(t->dtype) / 2.1;
  case KILN_GEN_EDGE_DENORMAL: return ax > 0 && ax < dt_min_normal(t->dtype);
  case KILN_GEN_EDGE_NEGZERO: return x == 0 && signbit(x);
  case KILN_GEN_EDGE_NONFINITE: return !isfinite(x);
  case KILN_GEN_EDGE_HALF: return ax - floor(ax) == 0.5;
  case KILN_GEN_EDGE_NARROW: return ax >= 126.5 || (ax > 0 && ax < 0x1p-14);
  case KILN_GEN_EDGE_ZERO: return x == 0 && !signbit(x);
  default: return false;
  }
}

/* Every (dtype, domain, kind) the table admits: N_DRAW values, all inside the domain and
 * of the kind, stored exactly (a subnormal of f16 stays one). */
static void test_kinds_in_domain(void) {
  gen_rng r;
  gen_rng_seed(&r, 42);
  int cells = 0;
  for (int d = 0; d < N_DT; d++)
    for (int dom = 0; dom < DOM_COUNT; dom++) {
      unsigned kinds = gen_edge_kinds(dtypes[d], (gen_dom)dom);
      for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++) {
        if (!(kinds & (1u << k))) continue;
        cells++;
        int64_t dims[1] = {N_DRAW};
        kiln_tensor *t = NULL;
        CHECK_OK(kiln_tensor_new(dtypes[d], 1, dims, &t));
        int bad = 0;
        for (int64_t i = 0; t && i < t->numel; i++) {
          /* the ordinary draw first, as the search does (a tie copies one) */
          kiln_store_f64(t->dtype, t->data, (size_t)i,
                         kiln_gen_draw(&r, t->dtype, (gen_dom)dom, 1));
          gen_edge_store(&r, t, i, (gen_dom)dom, k);
          bad += !gen_edge_in_dom(t, i, (gen_dom)dom) || !has_kind(t, i, (gen_dom)dom, k);
        }
        if (bad)
          fprintf(stderr, "%s dom %d kind %s: %d bad\n", kiln_dtype_name(dtypes[d]), dom,
                  kiln_gen_edge_name(k), bad);
        CHECK(bad == 0);
        kiln_tensor_free(t);
      }
    }
  /* every kind has a dtype; the domains exclude what they must */
  CHECK(!(gen_edge_kinds(KILN_F32, DOM_POS) & (1u << KILN_GEN_EDGE_NEGZERO)));
  CHECK(!(gen_edge_kinds(KILN_F32, DOM_NONZERO) & (1u << KILN_GEN_EDGE_NEGZERO)));
  CHECK(!(gen_edge_kinds(KILN_F32, DOM_UNIT) & (1u << KILN_GEN_EDGE_LARGE)));
  CHECK(gen_edge_kinds(KILN_BOOL, DOM_ANY) == 0);
  CHECK(!(gen_edge_kinds(KILN_U16, DOM_ANY) & (1u << KILN_GEN_EDGE_INT_EXTREME)));
  CHECK(gen_edge_kinds(KILN_U64, DOM_ANY) & (1u << KILN_GEN_EDGE_UINT_WRAP));
  CHECK(gen_edge_kinds(KILN_BF16, DOM_ANY) & (1u << KILN_GEN_EDGE_DENORMAL));
  CHECK(cells >= 60);
  CHECK(!strcmp(kiln_gen_edge_name(KILN_GEN_EDGE_DENORMAL), "denormal"));
}

/* Over many seeds with edge_share 1 each kind is drawn and kept, on usable inputs (the
 * reference finite and stable); the same seed gives the same kinds; edge_share 0 draws none
 * and no graph is lost to the edge draws (as many usable graphs with them as without). */
static void test_draws_happen(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.max_nodes = 8;
  o.edge_share = 1;
  int seen[KILN_GEN_EDGE_COUNT] = {0}, with = 0, ok_edges = 0, ok_plain = 0;
  enum { N = 400 };
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c, c2;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(11, s), &c));
    ok_edges += c.status == KILN_GEN_OK;
    with += c.edges != 0;
    for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++) seen[k] += (c.edges >> k) & 1;
    if (c.edges) {
      kiln_vref *r = NULL;
      CHECK(c.status == KILN_GEN_OK);
      CHECK_OK(kiln_vref_compute(c.g, c.n_in, c.inputs, &r));
      CHECK(r && r->n_nonfinite == 0 && r->n_unstable == 0);
      kiln_vref_free(r);
    }
    if (s < 40) { /* deterministic */
      CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(11, s), &c2));
      CHECK(c2.edges == c.edges);
      kiln_gen_case_free(&c2);
    }
    kiln_gen_case_free(&c);
    o.edge_share = 0;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(11, s), &c));
    CHECK(c.edges == 0);
    ok_plain += c.status == KILN_GEN_OK;
    kiln_gen_case_free(&c);
    o.edge_share = 1;
  }
  fprintf(stderr, "graphs with edge inputs: %d of %d;", with, N);
  for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++)
    fprintf(stderr, " %s %d", kiln_gen_edge_name(k), seen[k]);
  fprintf(stderr, "; usable %d (without edges %d)\n", ok_edges, ok_plain);
  for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++) CHECK(seen[k] > 0);
  CHECK(with * 3 >= N); /* most edge draws are kept */
  CHECK(ok_edges >= ok_plain);
}

/* The default share: some graphs get edge inputs, most do not. */
static void test_default_share(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  CHECK(o.edge_share > 0 && o.edge_share < 1);
  o.max_nodes = 6;
  int with = 0;
  enum { N = 200 };
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(5, s), &c));
    with += c.edges != 0;
    kiln_gen_case_free(&c);
  }
  CHECK(with > 0 && with < N / 2);
}

TEST_MAIN(T(test_kinds_in_domain), T(test_draws_happen), T(test_default_share))
