/* kiln_compiled_set_fill: before each run the arena (planned values, kernels' scratch) is set
 * to the fill byte, and so is each output's copy before it is copied. Correct compiled code
 * reads nothing it did not write, so any fill gives the same bits as none (a GEMM with
 * packed panels and register-tile tails, a row reduction, a fallback, a view, in place);
 * the bytes of the arena no value covers hold the byte after a run; -1 turns it off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "harness.h"
#include "runtime/rt_internal.h"

static char g_cache[1024];

static const char *const MODEL =
    "graph @fill(%a: f32[13,24], %b: f32[24,37], %x: f32[3,8]) -> (%y: f32[13,37], %s: f32[13,1], "
    "%t: f32[8,3], %k: f32[3,2]) {\n"
    "  opset \"\" 17\n"
    "  %two = const i64[1] [2]\n"
    "  %one = const i64[1] [1]\n"
    "  %m = MatMul(%a, %b) : f32[13,37]\n"
    "  %y = Softmax(%m) {axis=1} : f32[13,37]\n"
    "  %s = ReduceSum(%m, %one) {keepdims=1} : f32[13,1]\n"
    "  %r = Relu(%x) : f32[3,8]\n"
    "  %t = Transpose(%r) {perm=[1,0]} : f32[8,3]\n"
    "  %k, %i = TopK(%x, %two) {axis=1} : f32[3,2], i64[3,2]\n"
    "  return %y, %s, %t, %k\n}\n";

static kiln_tensor *ramp(int rank, const int64_t *dims, int salt) {
  kiln_tensor *x = NULL;
  if (kiln_tensor_new(KILN_F32, rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++)
    ((float *)x->data)[i] = (float)((i * 7 + salt) % 23 - 11) / 8.0f;
  return x;
}

/* Runs c on the inputs; *outs (4) new. */
static void run(kiln_compiled *c, kiln_tensor **in, kiln_tensor **outs) {
  CHECK_OK(kiln_compiled_run(c, 3, in, outs));
}

static bool same_bits(kiln_tensor *const *a, kiln_tensor *const *b) {
  for (int i = 0; i < 4; i++)
    if (!a[i] || !b[i] || a[i]->numel != b[i]->numel ||
        memcmp(a[i]->data, b[i]->data, kiln_tensor_nbytes(a[i])))
      return false;
  return true;
}

static void test_fill(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(MODEL, "test", &g));
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_cache;
  o.threads = 2;
  o.take_graph = true;
  o.force_fallback = "TopK";
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (!c) return;
  kiln_tensor *in[3] = {ramp(2, (int64_t[]){13, 24}, 1), ramp(2, (int64_t[]){24, 37}, 5),
                        ramp(2, (int64_t[]){3, 8}, 9)};
  kiln_tensor *base[4] = {0}, *got[4] = {0};
  run(c, in, base);
  const int bytes[3] = {0xff, 0x00, 0x5a};
  for (int f = 0; f < 3; f++) {
    kiln_compiled_set_fill(c, bytes[f]);
    run(c, in, got);
    CHECK(same_bits(base, got));
    /* the arena's bytes past every planned block hold the fill */
    bool filled = c->arena_reserved > c->plan->arena_bytes;
    for (int64_t i = c->plan->arena_bytes; i < c->arena_reserved; i++)
      filled = filled && c->arena[i] == bytes[f];
    CHECK(filled);
    for (int i = 0; i < 4; i++) kiln_tensor_free(got[i]), got[i] = NULL;
  }
  kiln_compiled_set_fill(c, -1); /* off: the arena keeps what the last run left */
  c->arena[c->arena_reserved - 1] = 0x33;
  run(c, in, got);
  CHECK(same_bits(base, got) && c->arena[c->arena_reserved - 1] == 0x33);
  for (int i = 0; i < 4; i++) kiln_tensor_free(got[i]), kiln_tensor_free(base[i]);
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_compiled_free(c);
}

static void setup(void) {
  kiln_test_make_tmp(g_cache, sizeof g_cache, "kiln_rt_fill");
}

static void cleanup(void) {
  kiln_test_remove_dir(g_cache);
}

TEST_MAIN(T(setup), T(test_fill), T(cleanup))
