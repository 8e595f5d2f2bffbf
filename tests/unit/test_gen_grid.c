/* The edge grid of the generator (src/verify/gen/gen_grid.c): every cell builds, the
 * reference finds every result defined and stable, each cell is the same graph and inputs on
 * every call, the inputs hold the edge values they promise (NaN payloads, signed zeros,
 * infinities, f16's overflow tie), and the unmutated compiler passes every layer of
 * `kiln verify` on every cell, compiled C included. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "verify/gen/gen.h"

static char g_tmp[512];

static void test_cells_valid(void) {
  int n = kiln_gen_grid_count();
  CHECK(n >= 20);
  for (int k = 0; k < n; k++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_grid(k, &c));
    char name[48];
    if (c.status != KILN_GEN_OK) fprintf(stderr, "%s\n", c.note);
    CHECK(c.status == KILN_GEN_OK);
    CHECK(c.g && c.g->nodes.len >= 5 && c.n_in == c.g->inputs.len);
    CHECK(strlen(kiln_gen_grid_name(k, name, sizeof name)) > 4);
    kiln_gen_case_free(&c);
  }
  kiln_gen_case c;
  kiln_status st = kiln_gen_grid(n, &c);
  CHECK(st != KILN_OK);
  kiln_status_free(st);
}

/* Two builds of one cell: the same inputs, bit for bit. */
static void test_cells_fixed(void) {
  for (int k = 0; k < kiln_gen_grid_count(); k += 5) {
    kiln_gen_case a, b;
    CHECK_OK(kiln_gen_grid(k, &a));
    CHECK_OK(kiln_gen_grid(k, &b));
    CHECK(a.n_in == b.n_in && a.g->nodes.len == b.g->nodes.len);
    for (int i = 0; i < a.n_in && i < b.n_in; i++) {
      const kiln_tensor *x = a.inputs[i]->t, *y = b.inputs[i]->t;
      CHECK(x->numel == y->numel && x->dtype == y->dtype &&
            !memcmp(x->data, y->data, (size_t)x->numel * kiln_dtype_size(x->dtype)));
    }
    kiln_gen_case_free(&a), kiln_gen_case_free(&b);
  }
}

/* The cast cell of f64 (cell 0): its first input holds -0, +-inf, NaNs with a negative one,
 * f16's overflow tie 65520 and f16's smallest subnormal; the cells of u8 hold 255. */
static void test_edge_values(void) {
  kiln_gen_case c;
  CHECK_OK(kiln_gen_grid(0, &c));
  if (c.status != KILN_GEN_OK) return;
  const kiln_tensor *x = c.inputs[0]->t;
  CHECK(x->dtype == KILN_F64);
  bool negzero = false, pinf = false, ninf = false, nan = false, negnan = false, tie = false,
       sub = false;
  for (int64_t i = 0; i < x->numel; i++) {
    double v = ((const double *)x->data)[i];
    negzero |= v == 0 && signbit(v), pinf |= v == INFINITY, ninf |= v == -INFINITY;
    nan |= isnan(v), negnan |= isnan(v) && signbit(v), tie |= v == 65520;
    sub |= v == 0x1p-24;
  }
  CHECK(negzero && pinf && ninf && nan && negnan && tie && sub);
  kiln_gen_case_free(&c);
  bool found = false;
  for (int k = 0; k < kiln_gen_grid_count(); k++) {
    char name[48];
    if (strcmp(kiln_gen_grid_name(k, name, sizeof name), "elementwise ops of u8")) continue;
    CHECK_OK(kiln_gen_grid(k, &c));
    const kiln_tensor *a = c.inputs[0]->t;
    for (int64_t i = 0; i < a->numel; i++) found |= ((const uint8_t *)a->data)[i] == 255;
    kiln_gen_case_free(&c);
  }
  CHECK(found);
}

/* Every cell through every layer of the verifier, compiled C included: no failure. */
static void test_cells_verify(void) {
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_grid");
  for (int k = 0; k < kiln_gen_grid_count(); k++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_grid(k, &c));
    if (c.status != KILN_GEN_OK) continue;
    kiln_verify_opts o;
    kiln_verify_opts_init(&o);
    o.compile.cache_dir = g_tmp;
    kiln_verify_result r;
    CHECK_OK(kiln_verify_run(c.g, c.n_in, c.inputs, &o, &r));
    bool cpu = false;
    for (int i = 0; i < r.layers.len; i++)
      cpu |= r.layers.data[i].kind == KILN_LAYER_CPU && r.layers.data[i].ran;
    char name[48];
    if (r.failed || !cpu) {
      kiln_strbuf t = {0};
      kiln_verify_print(&r, &t);
      fprintf(stderr, "cell %d (%s):\n%s\n", k, kiln_gen_grid_name(k, name, sizeof name), t.data);
      kiln_strbuf_free(&t);
    }
    CHECK(!r.failed && cpu);
    kiln_verify_result_free(&r);
    kiln_gen_case_free(&c);
  }
}

TEST_MAIN(T(test_cells_valid), T(test_cells_fixed), T(test_edge_values), T(test_cells_verify))
