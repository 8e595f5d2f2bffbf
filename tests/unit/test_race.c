/* Data races of parallel loops: the tile verifier's race check on programs in the text form
 * (what it accepts and what it rejects), and the contractions whose row tail once shared the
 * parallel loop's accumulator tile (a Conv with 546 = 68*8 + 2 output channels, a MatMul
 * with 37 = 4*8 + 5 rows): lowered for two threads they verify, and compiled they give the
 * same bits as the tile interpreter on every one of 100 runs at 2, 3 and 4 threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"
#include "tile/tile.h"

/* ---- the race check on the text form ---- */

static kiln_status verify_text(const char *text) {
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse(text, "race", &m);
  if (!st) st = kiln_tmodule_verify(m);
  kiln_tmodule_free(m);
  return st;
}

static void accepts(const char *text) {
  kiln_status st = verify_text(text);
  if (st) fprintf(stderr, "rejected:\n%s\n%s\n", text, kiln_status_message(st));
  CHECK(st == KILN_OK);
  kiln_status_free(st);
}

static void rejects(const char *text, const char *want) {
  kiln_status st = verify_text(text);
  const char *msg = st ? kiln_status_message(st) : "";
  if (!st || !strstr(msg, want))
    fprintf(stderr, "want an error with '%s' on:\n%s\ngot: %s\n", want, text, st ? msg : "OK");
  CHECK(st && strstr(msg, want));
  kiln_status_free(st);
}

static void test_race_accepted(void) {
  /* one element per iteration */
  accepts("kernel @a(%x: f32[64] readonly, %y: f32[64]) {\n var $i: i64\n"
          " for $i in 0..64 parallel {\n  %y[$i] = %x[$i]\n }\n}\n");
  /* a row per iteration (stride 8 >= the 8 columns), under an outer serial loop (the batch
   * offset is the same on every iteration of one run of the parallel loop) */
  accepts("kernel @a(%y: f32[128]) {\n var $b: i64\n var $p: i64\n var $j: i64\n"
          " for $b in 0..2 serial {\n  for $p in 0..8 parallel {\n"
          "   for $j in 0..8 vector {\n    %y[add(mul($b, 64), add(mul($p, 8), $j))] = 1:f32\n"
          "   }\n  }\n }\n}\n");
  /* a local tile used only inside the parallel loop: each thread has its own */
  accepts("kernel @a(%y: f32[64]) {\n local %acc: f32[8]\n var $p: i64\n var $z: i64\n"
          " for $p in 0..8 parallel {\n  for $z in 0..8 vector {\n   %acc[$z] = 0:f32\n  }\n"
          "  for $z in 0..8 vector {\n   %y[add(mul($p, 8), $z)] = %acc[$z]\n  }\n }\n}\n");
  /* a private accumulator variable */
  accepts("kernel @a(%x: f32[64] readonly, %y: f32[8]) {\n var $p: i64\n var $k: i64\n"
          " var $s: f32\n for $p in 0..8 parallel {\n  $s = 0:f32\n"
          "  for $k in 0..8 serial {\n   $s = add($s, %x[add(mul($p, 8), $k)])\n  }\n"
          "  %y[$p] = $s\n }\n}\n");
  /* (image, channel) = (c / 3, c % 3): taken apart per iteration */
  accepts("kernel @a(%y: f32[24]) {\n var $c: i64\n var $x: i64\n"
          " for $c in 0..6 parallel {\n  for $x in 0..4 vector {\n"
          "   %y[add(add(mul(div($c, 3), 12), mul(mod($c, 3), 4)), $x)] = 1:f32\n  }\n }\n}\n");
  /* the last panel's padding columns: a guard that depends on the parallel variable makes
   * the clamp idle */
  accepts("kernel @a(%y: f32[74]) {\n var $p: i64\n var $j: i64\n"
          " for $p in 0..3 parallel {\n  for $j in 0..16 vector {\n"
          "   if lt(add(mul($p, 16), $j), 37) {\n"
          "    %y[add(mul($p, 16), $j)] = 1:f32\n"
          "    %y[add(37, min(add(mul($p, 16), $j), 36))] = 2:f32\n   }\n  }\n }\n}\n");
  /* an MMA tile per iteration of a parameter */
  accepts("kernel @a(%c: f32[64], %a: f32[16] readonly, %b: f32[32] readonly) {\n var $p: i64\n"
          " for $p in 0..4 parallel {\n"
          "  mma %c[mul($p, 16)] += %a[0] * %b[0] {m=2, n=8, k=2, ldc=8, a_sm=2, a_sk=1, b_sk=8, "
          "b_sn=1}\n }\n}\n");
  /* an error flag: every iteration that finds a bad index stores the same 1 at one place */
  accepts("kernel @a(%i: i64[8] readonly, %y: f32[8], %f: i32[1]) {\n var $p: i64\n"
          " for $p in 0..8 parallel {\n  if lt(%i[$p], 8) {\n   %y[$p] = 1:f32\n  } else {\n"
          "   %y[$p] = 0:f32\n   %f[0] = 1:i32\n  }\n }\n}\n");
  /* one iteration: nothing runs concurrently */
  accepts("kernel @a(%y: f32[4]) {\n var $p: i64\n"
          " for $p in 0..1 parallel {\n  %y[0] = 1:f32\n }\n}\n");
}

static void test_race_rejected(void) {
  /* the shape of the bug: the tile is also used by the serial tail after the loop, so it is
   * declared once for the kernel and every thread clears and accumulates into it */
  rejects("kernel @a(%y: f32[80]) {\n local %acc: f32[8]\n var $p: i64\n var $z: i64\n"
          " for $p in 0..9 parallel {\n  for $z in 0..8 vector {\n   %acc[$z] = 0:f32\n  }\n"
          "  for $z in 0..8 vector {\n   %y[add(mul($p, 8), $z)] = %acc[$z]\n  }\n }\n"
          " for $z in 0..8 vector {\n  %acc[$z] = 1:f32\n }\n"
          " for $z in 0..8 vector {\n  %y[add(72, $z)] = %acc[$z]\n }\n}\n",
          "race: every iteration of parallel loop $p writes %acc (a local buffer also used "
          "outside parallel loops)");
  /* shared scratch at a fixed place */
  rejects("kernel @a(%y: f32[64]) {\n shared %t: f32[8]\n var $p: i64\n var $z: i64\n"
          " for $p in 0..8 parallel {\n  for $z in 0..8 vector {\n   %t[$z] = 0:f32\n  }\n"
          " }\n}\n",
          "writes %t (shared scratch) at indices that do not depend on $p");
  /* a scalar accumulator declared outside the loop */
  rejects("kernel @a(%x: f32[64] readonly, %y: f32[1]) {\n var $p: i64\n var $s: f32\n"
          " $s = 0:f32\n for $p in 0..64 parallel {\n  $s = add($s, %x[$p])\n }\n"
          " %y[0] = $s\n}\n",
          "race: $s is assigned by the iterations of parallel loop $p");
  /* rows that overlap: stride 4, 8 columns each */
  rejects("kernel @a(%y: f32[64]) {\n var $p: i64\n var $j: i64\n"
          " for $p in 0..8 parallel {\n  for $j in 0..8 vector {\n"
          "   %y[add(mul($p, 4), $j)] = 1:f32\n  }\n }\n}\n",
          "write disjoint elements of %y (a parameter): $p = 0 and $p = 1 may meet");
  /* a many-to-one map of the parallel variable */
  rejects("kernel @a(%y: f32[4]) {\n var $p: i64\n"
          " for $p in 0..8 parallel {\n  %y[mod($p, 4)] = 1:f32\n }\n}\n",
          "write disjoint elements of %y (a parameter): $p = 0 and $p = 4 may meet");
  /* an index the loop computes from data */
  rejects("kernel @a(%i: i64[8] readonly, %y: f32[8]) {\n var $p: i64\n"
          " for $p in 0..8 parallel {\n  %y[min(max(%i[$p], 0), 7)] = 1:f32\n }\n}\n",
          "cannot prove that the iterations of parallel loop $p write disjoint elements of %y");
  /* a counter is no flag: it reads what other iterations write */
  rejects("kernel @a(%f: i32[1]) {\n var $p: i64\n"
          " for $p in 0..8 parallel {\n  %f[0] = add(%f[0], 1:i32)\n }\n}\n",
          "writes %f (a parameter) at indices that do not depend on $p");
  /* nor are two different constants */
  rejects("kernel @a(%f: i32[1]) {\n var $p: i64\n"
          " for $p in 0..8 parallel {\n  if lt($p, 4) {\n   %f[0] = 1:i32\n  } else {\n"
          "   %f[0] = 2:i32\n  }\n }\n}\n",
          "writes %f (a parameter) at indices that do not depend on $p");
  /* MMA tiles that overlap: 16 apart, 2 rows of 16 */
  rejects("kernel @a(%c: f32[80], %a: f32[16] readonly, %b: f32[32] readonly) {\n var $p: i64\n"
          " for $p in 0..4 parallel {\n"
          "  mma %c[mul($p, 16)] += %a[0] * %b[0] {m=2, n=16, k=1, ldc=16, a_sm=1, a_sk=1, "
          "b_sk=16, b_sn=1}\n }\n}\n",
          "write disjoint elements of %c (a parameter)");
}

/* ---- contractions with a row tail, lowered and compiled for threads ---- */

static uint64_t rng_state = 0x853c49e6748fea9bull;
static double rnd(void) { /* [-1, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static void random_const(kiln_strbuf *b, const char *decl, int64_t n) {
  kiln_strbuf_printf(b, " %s [", decl);
  for (int64_t i = 0; i < n; i++) kiln_strbuf_printf(b, "%s%.6g", i ? ", " : "", rnd() * 0.1);
  kiln_strbuf_printf(b, "]\n");
}

/* Conv 256 -> 546 (1x1) on 1x256x3x3: 68 row blocks of 8 output channels and a tail of 2. */
static char *conv546_text(void) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b,
                     "graph @c(%%x: f32[1,256,3,3]) -> (%%y: f32[1,546,3,3]) {\n opset \"\" 17\n");
  random_const(&b, "%w = const f32[546,256,1,1]", 546 * 256);
  kiln_strbuf_printf(&b, " %%y = Conv(%%x, %%w) : f32[1,546,3,3]\n return %%y\n}\n");
  return b.data;
}

/* MatMul 37x512 by 512x96: 4 row blocks and a tail of 5 (3 panels split worse). */
static char *matmul37_text(void) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "graph @m(%%x: f32[37,512]) -> (%%y: f32[37,96]) {\n opset \"\" 17\n");
  random_const(&b, "%w = const f32[512,96]", 512 * 96);
  kiln_strbuf_printf(&b, " %%y = MatMul(%%x, %%w) : f32[37,96]\n return %%y\n}\n");
  return b.data;
}

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "race", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static bool has_parallel(const kiln_tblock *b) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR && s->loop == KILN_LOOP_PARALLEL) return true;
    if (has_parallel(&s->body) || has_parallel(&s->orelse)) return true;
  }
  return false;
}

/* Lowered for two threads: a parallel loop (the row blocks), and every kernel verifies. */
static void check_lowered(const char *text) {
  kiln_graph *g = parse(text);
  if (!g) return;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  bool par = false;
  for (int i = 0; p && i < p->module->kernels.len; i++) {
    CHECK_OK(kiln_tkernel_verify(p->module->kernels.data[i]));
    par |= has_parallel(&p->module->kernels.data[i]->body);
  }
  CHECK(par);
  kiln_program_free(p);
  kiln_graph_free(g);
}

static void test_row_tail_lowered(void) {
  char *conv = conv546_text(), *mm = matmul37_text();
  check_lowered(conv);
  check_lowered(mm);
  free(conv);
  free(mm);
}

static char g_cache[1024];

/* Compiled for `threads`, `runs` runs give the bits of the tile interpreter. */
static void check_compiled(const char *text, int threads, int runs) {
  kiln_graph *g = parse(text);
  if (!g) return;
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_cache;
  o.threads = threads;
  o.take_graph = true;
  kiln_compiled *c = NULL;
  kiln_status st = kiln_compile(g, NULL, &o, &c);
  CHECK_OK(st);
  if (st) return;
  const kiln_type *t =
      &kiln_compiled_graph(c)->values.data[kiln_compiled_graph(c)->inputs.data[0]].type;
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL, *want = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, t->rank, dims, &x));
  for (int64_t i = 0; x && i < x->numel; i++) ((float *)x->data)[i] = (float)rnd();
  CHECK_OK(kiln_program_interp(kiln_compiled_program(c), 1, &x, &want));
  for (int r = 0; want && r < runs; r++) {
    kiln_tensor *got = NULL;
    CHECK_OK(kiln_compiled_run(c, 1, &x, &got));
    bool same = got && got->numel == want->numel &&
                memcmp(got->data, want->data, (size_t)want->numel * sizeof(float)) == 0;
    if (!same)
      fprintf(stderr, "run %d at %d threads differs from the tile interpreter\n", r, threads);
    CHECK(same);
    kiln_tensor_free(got);
  }
  kiln_tensor_free(x);
  kiln_tensor_free(want);
  kiln_compiled_free(c);
}

static void test_row_tail_compiled(void) {
  kiln_test_make_tmp(g_cache, sizeof g_cache, "kiln_race_test");
  char *conv = conv546_text(), *mm = matmul37_text();
  for (int threads = 2; threads <= 4; threads++) { /* a race shows in a few runs of 100 */
    check_compiled(conv, threads, 100);
    check_compiled(mm, threads, 100);
  }
  free(conv);
  free(mm);
  kiln_test_remove_dir(g_cache);
}

TEST_MAIN(T(test_race_accepted), T(test_race_rejected), T(test_row_tail_lowered),
          T(test_row_tail_compiled))
