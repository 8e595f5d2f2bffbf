/* The schedule transforms of the tile IR (src/tile/tile_sched.h): each one applied to small
 * kernels in the text form keeps their meaning (the tile interpreter gives the same bits
 * before and after, and the result verifies), and the ones that would change it are
 * refused, leaving the kernel as it was. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tile/tile.h"
#include "tile/tile_sched.h"

/* y[i][j] = x[i][j] * 2 + b[j] over a 6 x 10 nest */
static const char *const NEST =
    "kernel @nest(%x: f32[60] readonly, %b: f32[10] readonly, %y: f32[60]) {\n"
    " var $i: i64\n var $j: i64\n"
    " for $i in 0..6 serial {\n  for $j in 0..10 serial {\n"
    "   %y[add(mul($i, 10), $j)] = add(mul(%x[add(mul($i, 10), $j)], 2:f32), %b[$j])\n"
    "  }\n }\n}\n";

/* y[i] = sum_k x[i][k] with a scalar accumulator (the order of the sum matters) */
static const char *const RED =
    "kernel @red(%x: f32[60] readonly, %y: f32[6]) {\n"
    " var $i: i64\n var $k: i64\n var $s: f32\n"
    " for $i in 0..6 serial {\n  $s = 0:f32\n  for $k in 0..10 serial {\n"
    "   $s = add($s, %x[add(mul($i, 10), $k)])\n  }\n  %y[$i] = $s\n }\n}\n";

/* a prefix: y[i+1] = y[i] + x[i] (each iteration reads the previous one's result) */
static const char *const SCAN =
    "kernel @scan(%x: f32[9] readonly, %y: f32[10]) {\n var $i: i64\n"
    " for $i in 0..9 serial {\n  %y[add($i, 1)] = add(%y[$i], %x[$i])\n }\n}\n";

/* y[i][j] += x[i][j] (an accumulation at the index it writes) */
static const char *const ACC =
    "kernel @acc(%x: f32[24] readonly, %y: f32[24]) {\n var $i: i64\n var $j: i64\n"
    " for $i in 0..4 serial {\n  for $j in 0..6 serial {\n"
    "   %y[add(mul($i, 6), $j)] = add(%y[add(mul($i, 6), $j)], %x[add(mul($i, 6), $j)])\n"
    "  }\n }\n}\n";

/* a 4x8 register tile of a 4x8x5 matrix product per batch b, cleared then read back */
static const char *const MMA =
    "kernel @mm(%a: f32[40] readonly, %w: f32[40] readonly, %y: f32[64]) {\n"
    " local %t: f32[32]\n var $b: i64\n var $z: i64\n var $i: i64\n"
    " for $b in 0..2 serial {\n"
    "  for $z in 0..32 vector {\n   %t[$z] = 0:f32\n  }\n"
    "  mma %t[0] += %a[mul($b, 20)] * %w[0] { m = 4, n = 8, k = 5, ldc = 8, a_sm = 5, a_sk = 1,"
    " b_sk = 8, b_sn = 1 }\n"
    "  for $i in 0..32 vector {\n   %y[add(mul($b, 32), $i)] = %t[$i]\n  }\n }\n}\n";

typedef kiln_status (*transform_fn)(kiln_tkernel *k);

static kiln_tmodule *parse(const char *text) {
  kiln_tmodule *m = NULL;
  CHECK_OK(kiln_tmodule_parse(text, "sched", &m));
  return m;
}

/* Runs kernel 0 of text on deterministic data; returns the parameters' bytes, one block. */
static unsigned char *run(const kiln_tkernel *k, size_t *total) {
  size_t sz[16], off = 0;
  for (int p = 0; p < k->n_params; p++) {
    sz[p] = (size_t)k->bufs.data[p].size * kiln_dtype_size(k->bufs.data[p].dtype);
    off += sz[p];
  }
  unsigned char *mem = calloc(off + 1, 1);
  void *args[16];
  off = 0;
  for (int p = 0; p < k->n_params; p++) {
    args[p] = mem + off;
    kiln_dtype t = k->bufs.data[p].dtype;
    uint32_t seed = 12345u + (uint32_t)p * 977u;
    for (int64_t e = 0; e < k->bufs.data[p].size; e++) {
      seed = seed * 1664525u + 1013904223u;
      uint32_t r = seed >> 8;
      if (t == KILN_F32) ((float *)args[p])[e] = (float)((e * 7 + p * 3) % 11) * 0.37f - 1.5f;
      else if (t == KILN_F16) /* finite halves of magnitude 2^-5 .. 2^6 */
        ((uint16_t *)args[p])[e] =
            (uint16_t)((r & 0x8000u) | ((10u + (r >> 16) % 12u) << 10) | (r & 0x3ffu));
      else /* integers: random bytes */
        for (size_t b = 0; b < kiln_dtype_size(t); b++)
          ((unsigned char *)args[p])[(size_t)e * kiln_dtype_size(t) + b] =
              (unsigned char)(r >> (b % 3 * 8));
    }
    off += sz[p];
  }
  CHECK_OK(kiln_tkernel_interp(k, args));
  *total = off;
  return mem;
}

/* The transform keeps the kernel's results and it still verifies. Returns the new text. */
static char *keeps(const char *text, transform_fn fn) {
  kiln_tmodule *a = parse(text), *b = parse(text);
  if (!a || !b) return NULL;
  kiln_tkernel *kb = b->kernels.data[0];
  CHECK_OK(fn(kb));
  CHECK_OK(kiln_tkernel_verify(kb));
  size_t na, nb;
  unsigned char *ra = run(a->kernels.data[0], &na), *rb = run(kb, &nb);
  CHECK(na == nb && !memcmp(ra, rb, na));
  kiln_strbuf out = {0};
  kiln_tkernel_print(kb, &out);
  /* the printed form parses back and runs the same */
  kiln_tmodule *c = parse(out.data);
  if (c) {
    size_t nc;
    unsigned char *rc = run(c->kernels.data[0], &nc);
    CHECK(nc == na && !memcmp(ra, rc, na));
    free(rc);
  }
  free(ra);
  free(rb);
  kiln_tmodule_free(a);
  kiln_tmodule_free(b);
  kiln_tmodule_free(c);
  return out.data;
}

/* The transform is refused with a message holding `want`, and the kernel is unchanged. */
static void refuses(const char *text, transform_fn fn, const char *want) {
  kiln_tmodule *m = parse(text);
  if (!m) return;
  kiln_strbuf before = {0}, after = {0};
  kiln_tkernel_print(m->kernels.data[0], &before);
  kiln_status st = fn(m->kernels.data[0]);
  const char *msg = st ? kiln_status_message(st) : "OK";
  if (!st || !strstr(msg, want)) fprintf(stderr, "want '%s', got '%s'\n", want, msg);
  CHECK(st && strstr(msg, want));
  kiln_status_free(st);
  kiln_tkernel_print(m->kernels.data[0], &after);
  CHECK(!strcmp(before.data, after.data));
  kiln_strbuf_free(&before);
  kiln_strbuf_free(&after);
  kiln_tmodule_free(m);
}

static kiln_tstmt *L(kiln_tkernel *k, const char *v) {
  kiln_tstmt *s = kiln_tsched_find(k, v);
  CHECK(s != NULL);
  return s;
}

/* ---- the transforms that apply ---- */

static kiln_status split_j4(kiln_tkernel *k) { /* 10 = 3*4 - 2: guarded */
  return kiln_tsched_split(k, L(k, "j"), 4, "jo", "ji", KILN_LOOP_SERIAL, false, NULL);
}
static kiln_status split_i3(kiln_tkernel *k) { /* 6 = 2*3: no guard */
  return kiln_tsched_split(k, L(k, "i"), 3, "io", "ii", KILN_LOOP_SERIAL, false, NULL);
}
static kiln_status split_j_vector(kiln_tkernel *k) {
  return kiln_tsched_split(k, L(k, "j"), 8, "jo", "ji", KILN_LOOP_VECTOR, true, NULL);
}
static kiln_status reorder_ij(kiln_tkernel *k) {
  return kiln_tsched_reorder(k, L(k, "i"));
}
static kiln_status par_i(kiln_tkernel *k) {
  return kiln_tsched_bind(k, L(k, "i"), KILN_LOOP_PARALLEL);
}
static kiln_status vec_j(kiln_tkernel *k) {
  return kiln_tsched_vectorize(k, L(k, "j"));
}
static kiln_status unroll_j(kiln_tkernel *k) {
  return kiln_tsched_unroll(k, L(k, "j"));
}
static kiln_status stage_b(kiln_tkernel *k) {
  return kiln_tsched_stage(k, L(k, "i"), 1, KILN_SCOPE_LOCAL, NULL);
}
static kiln_status stage_b_shared(kiln_tkernel *k) {
  return kiln_tsched_stage(k, L(k, "i"), 1, KILN_SCOPE_SHARED, NULL);
}
/* split, then the pieces bound, as the GPU mapping does */
static kiln_status gpu_i(kiln_tkernel *k) {
  kiln_tstmt *i = L(k, "i"), *in;
  KILN_TRY(kiln_tsched_split(k, i, 4, "ib", "it", KILN_LOOP_THREAD_X, false, &in));
  return kiln_tsched_bind(k, i, KILN_LOOP_BLOCK_X);
}
static kiln_status par_b_stage_a(kiln_tkernel *k) {
  KILN_TRY(kiln_tsched_bind(k, L(k, "b"), KILN_LOOP_PARALLEL));
  return kiln_tsched_stage(k, L(k, "b"), 0, KILN_SCOPE_LOCAL, NULL);
}
static kiln_status split_b(kiln_tkernel *k) {
  return kiln_tsched_split(k, L(k, "b"), 1, "bo", "bi", KILN_LOOP_SERIAL, false, NULL);
}

/* a split inside a parallel loop: the clamp lets the race check bound the guarded index */
static kiln_status par_i_split_j(kiln_tkernel *k, bool clamp) {
  KILN_TRY(kiln_tsched_bind(k, L(k, "i"), KILN_LOOP_PARALLEL));
  return kiln_tsched_split(k, L(k, "j"), 4, "jo", "ji", KILN_LOOP_SERIAL, clamp, NULL);
}
static kiln_status par_i_split_j_clamped(kiln_tkernel *k) {
  return par_i_split_j(k, true);
}

static void test_split_clamp(void) {
  char *t = keeps(NEST, par_i_split_j_clamped);
  CHECK(t && strstr(t, "min(add(mul($jo, 4), $ji), 9)"));
  free(t);
  kiln_tmodule *m = parse(NEST);
  if (!m) return;
  CHECK_OK(par_i_split_j(m->kernels.data[0], false));
  kiln_status st = kiln_tkernel_verify(m->kernels.data[0]);
  CHECK(st && strstr(kiln_status_message(st), "race"));
  kiln_status_free(st);
  kiln_tmodule_free(m);
}

static void test_transforms_keep_results(void) {
  char *t = keeps(NEST, split_j4);
  CHECK(t && strstr(t, "if lt(add(mul($jo, 4), $ji), 10)"));
  free(t);
  t = keeps(NEST, split_i3);
  CHECK(t && !strstr(t, "if "));
  free(t);
  free(keeps(NEST, split_j_vector));
  t = keeps(NEST, reorder_ij);
  CHECK(t && strstr(t, "for $j in 0..10 serial {\n    for $i in 0..6 serial"));
  free(t);
  free(keeps(NEST, par_i));
  free(keeps(NEST, vec_j));
  t = keeps(NEST, unroll_j);
  CHECK(t && strstr(t, "unroll"));
  free(t);
  t = keeps(NEST, stage_b);
  CHECK(t && strstr(t, "local %b_local: f32[10]"));
  free(t);
  free(keeps(NEST, stage_b_shared));
  free(keeps(NEST, gpu_i));
  free(keeps(RED, par_i));
  free(keeps(RED, split_i3));
  free(keeps(ACC, par_i));
  free(keeps(ACC, reorder_ij));
  free(keeps(MMA, par_b_stage_a));
  free(keeps(MMA, split_b));
}

/* ---- the ones that would change the meaning, or cannot apply ---- */

static kiln_status par_k(kiln_tkernel *k) {
  return kiln_tsched_bind(k, L(k, "k"), KILN_LOOP_PARALLEL);
}
static kiln_status reorder_i(kiln_tkernel *k) {
  return kiln_tsched_reorder(k, L(k, "i"));
}
static kiln_status vec_i(kiln_tkernel *k) {
  return kiln_tsched_vectorize(k, L(k, "i"));
}
static kiln_status gpu_scan(kiln_tkernel *k) {
  return kiln_tsched_split(k, L(k, "i"), 4, "ib", "it", KILN_LOOP_THREAD_X, false, NULL);
}
static kiln_status split_0(kiln_tkernel *k) {
  return kiln_tsched_split(k, L(k, "j"), 0, "jo", "ji", KILN_LOOP_SERIAL, false, NULL);
}
static kiln_status split_taken(kiln_tkernel *k) {
  return kiln_tsched_split(k, L(k, "j"), 2, "i", "ji", KILN_LOOP_SERIAL, false, NULL);
}
static kiln_status stage_y(kiln_tkernel *k) {
  return kiln_tsched_stage(k, L(k, "i"), 2, KILN_SCOPE_LOCAL, NULL);
}
static kiln_status par_b(kiln_tkernel *k) {
  return kiln_tsched_bind(k, L(k, "b"), KILN_LOOP_PARALLEL);
}

static void test_transforms_refused(void) {
  /* the accumulator carries the sum from one k to the next */
  refuses(RED, par_k, "variable 's'");
  /* the body of i is not one loop */
  refuses(RED, reorder_i, "not exactly one loop");
  /* each iteration reads what the one before wrote */
  refuses(SCAN, par_i, "buffer 'y' is read at an index it is not written at");
  refuses(SCAN, gpu_scan, "not independent");
  refuses(NEST, vec_i, "not innermost");
  refuses(NEST, split_0, "factor 0");
  refuses(NEST, split_taken, "is taken");
  refuses(NEST, stage_y, "written inside it");
}

/* lanes (vector, GPU threads) and reorder: no two iterations may write one element */
static const char *const LAST =
    "kernel @last(%x: f32[4] readonly, %y: f32[1]) {\n var $i: i64\n var $j: i64\n"
    " for $i in 0..2 serial {\n  for $j in 0..2 serial {\n"
    "   %y[0] = %x[add(mul($i, 2), $j)]\n  }\n }\n}\n";
static const char *const SCRATCH =
    "kernel @scr(%x: f32[8] readonly, %y: f32[8]) {\n local %t: f32[1]\n var $j: i64\n"
    " for $j in 0..8 serial {\n  %t[0] = mul(%x[$j], 3:f32)\n  %y[$j] = %t[0]\n }\n}\n";

static kiln_status vec_jj(kiln_tkernel *k) {
  return kiln_tsched_vectorize(k, L(k, "j"));
}
static kiln_status par_j(kiln_tkernel *k) {
  return kiln_tsched_bind(k, L(k, "j"), KILN_LOOP_PARALLEL);
}
static kiln_status thread_j(kiln_tkernel *k) {
  return kiln_tsched_bind(k, L(k, "j"), KILN_LOOP_THREAD_X);
}

static void test_lanes(void) {
  refuses(LAST, vec_jj, "'y' may be written at one element by two iterations");
  refuses(LAST, reorder_ij, "not independent");
  /* a scratch element: each CPU thread has its own, vector lanes and GPU threads share it */
  free(keeps(SCRATCH, par_j));
  refuses(SCRATCH, vec_jj, "'t'");
  refuses(SCRATCH, thread_j, "'t'");
}

/* A local tile that the loop uses only inside is each iteration's own; the MMA's tile is
 * one shared object when something outside the loop uses it. */
static void test_private_tiles(void) {
  free(keeps(MMA, par_b));
  const char *shared_tile =
      "kernel @mm2(%a: f32[40] readonly, %w: f32[40] readonly, %y: f32[64]) {\n"
      " local %t: f32[32]\n var $b: i64\n var $z: i64\n var $i: i64\n"
      " for $z in 0..32 vector {\n  %t[$z] = 0:f32\n }\n"
      " for $b in 0..2 serial {\n"
      "  mma %t[0] += %a[mul($b, 20)] * %w[0] { m = 4, n = 8, k = 5, ldc = 8, a_sm = 5,"
      " a_sk = 1, b_sk = 8, b_sn = 1 }\n"
      "  for $i in 0..32 vector {\n   %y[add(mul($b, 32), $i)] = %t[$i]\n  }\n }\n}\n";
  refuses(shared_tile, par_b, "accumulated by a matrix product");
}

/* ---- tensorize: matrix-product nests into one MMA ---- */

/* C (4 x 6) += A (4 x 5) * B (5 x 6), C row-major with rows 6 apart; BODY is the store. */
#define TZ_NEST(NAME, AT, BT, CT, LOOPS, BODY)                                                     \
  "kernel @" NAME "(%a: " AT "[20] readonly, %b: " BT "[30] readonly, %c: " CT "[24]) {\n"         \
  " var $m: i64\n var $n: i64\n var $k: i64\n" LOOPS "    " BODY "\n   }\n  }\n }\n}\n"
#define TZ_MNK " for $m in 0..4 serial {\n  for $n in 0..6 serial {\n   for $k in 0..5 serial {\n"
#define TZ_NMK " for $n in 0..6 serial {\n  for $m in 0..4 serial {\n   for $k in 0..5 serial {\n"
#define TZ_C "%c[add(mul($m, 6), $n)]"
#define TZ_A "%a[add(mul($m, 5), $k)]"
#define TZ_B "%b[add(mul($k, 6), $n)]"

static kiln_status tz_m(kiln_tkernel *k) {
  return kiln_tsched_tensorize(k, L(k, "m"));
}
static kiln_status tz_n(kiln_tkernel *k) {
  return kiln_tsched_tensorize(k, L(k, "n"));
}

static void test_tensorize(void) {
  /* int8 dot products into i32: mac, and the same as casts, n outermost, B first */
  char *t = keeps(
      TZ_NEST("i8mac", "i8", "i8", "i32", TZ_MNK, TZ_C " = mac(" TZ_C ", " TZ_A ", " TZ_B ")"),
      tz_m);
  CHECK(t &&
        strstr(t, "mma %c[0] += %a[0] * %b[0] {m=4, n=6, k=5, ldc=6, a_sm=5, a_sk=1, "
                  "b_sk=6, b_sn=1}") &&
        !strstr(t, "for "));
  free(t);
  t = keeps(TZ_NEST("i8cast", "i8", "u8", "i32", TZ_NMK,
                    TZ_C " = add(" TZ_C ", mul(i32(" TZ_B "), i32(" TZ_A ")))"),
            tz_n);
  CHECK(t && strstr(t, "mma %c[0] += %a[0] * %b[0]"));
  free(t);
  /* i32 wrapping arithmetic, the product first */
  t = keeps(
      TZ_NEST("i32", "i32", "i32", "i32", TZ_MNK, TZ_C " = add(mul(" TZ_A ", " TZ_B "), " TZ_C ")"),
      tz_m);
  CHECK(t && strstr(t, "mma "));
  free(t);
  /* f32 accumulation of f16 products with mac: one rounding per k, as the MMA's fma */
  t = keeps(
      TZ_NEST("f16mac", "f16", "f16", "f32", TZ_MNK, TZ_C " = mac(" TZ_C ", " TZ_A ", " TZ_B ")"),
      tz_m);
  CHECK(t && strstr(t, "mma "));
  free(t);
  /* C stored transposed (C[n][m]): the MMA computes C^T += B^T A^T, B as its row operand */
  t = keeps(TZ_NEST("ct", "i32", "i32", "i32", TZ_MNK,
                    "%c[add($m, mul($n, 4))] = add(%c[add($m, mul($n, 4))], mul(" TZ_A ", " TZ_B
                    "))"),
            tz_m);
  CHECK(t && strstr(t, "mma %c[0] += %b[0] * %a[0] {m=6, n=4, k=5, ldc=4, a_sm=1, a_sk=6, "
                       "b_sk=1, b_sn=5}"));
  free(t);
  /* offsets that depend on an outer batch loop */
  const char *batch =
      "kernel @bmm(%a: i32[40] readonly, %b: i32[60] readonly, %c: i32[48]) {\n"
      " var $t: i64\n var $m: i64\n var $n: i64\n var $k: i64\n"
      " for $t in 0..2 serial {\n"
      "  for $m in 0..4 serial {\n   for $n in 0..6 serial {\n    for $k in 0..5 serial {\n"
      "     %c[add(add(mul($t, 24), mul($m, 6)), $n)] = add(%c[add(add(mul($t, 24), mul($m, 6)),"
      " $n)], mul(%a[add(add(mul($t, 20), mul($m, 5)), $k)], %b[add(add(mul($t, 30), mul($k,"
      " 6)), $n)]))\n    }\n   }\n  }\n }\n}\n";
  t = keeps(batch, tz_m);
  CHECK(t && strstr(t, "mma %c[mul($t, 24)] += %a[mul($t, 20)] * %b[mul($t, 30)]"));
  free(t);
}

static void test_tensorize_refused(void) {
  /* a float C + A*B rounds the product, then the sum; the MMA rounds once */
  refuses(TZ_NEST("fadd", "f32", "f32", "f32", TZ_MNK,
                  TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))"),
          tz_m, "rounds twice");
  refuses(
      TZ_NEST("f64", "f64", "f64", "f64", TZ_MNK, TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))"),
      tz_m, "rounds twice");
  /* an index that is not affine in the loops */
  refuses(TZ_NEST("nonaff", "i32", "i32", "i32", TZ_MNK,
                  TZ_C " = add(" TZ_C ", mul(%a[add(mul($m, $k), $k)], " TZ_B "))"),
          tz_m, "is not affine in");
  /* k not innermost: the stored index reads the innermost loop */
  refuses("kernel @kmid(%a: i32[20] readonly, %b: i32[30] readonly, %c: i32[24]) {\n"
          " var $m: i64\n var $n: i64\n var $k: i64\n"
          " for $m in 0..4 serial {\n  for $k in 0..5 serial {\n   for $n in 0..6 serial {\n"
          "    " TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))\n   }\n  }\n }\n}\n",
          tz_m, "reduction loop must be innermost");
  /* the store writes another element than the one it accumulates */
  refuses(TZ_NEST("wrong", "i32", "i32", "i32", TZ_MNK,
                  "%c[add(mul($m, 6), $n)] = add(%c[add(mul($n, 4), $m)], mul(" TZ_A ", " TZ_B
                  "))"),
          tz_m, "not a load of the stored element");
  /* C's stride along the column loop must be 1 */
  refuses(TZ_NEST("cstride", "i32", "i32", "i32", TZ_MNK,
                  "%c[add(mul($m, 3), mul($n, 2))] = add(%c[add(mul($m, 3), mul($n, 2))], mul(" TZ_A
                  ", " TZ_B "))"),
          tz_m, "column loop");
  /* a loop of another kind, a body of two statements */
  refuses(
      TZ_NEST("par", "i32", "i32", "i32",
              " for $m in 0..4 parallel {\n  for $n in 0..6 serial {\n   for $k in 0..5 serial {\n",
              TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))"),
      tz_m, "not serial");
  refuses(TZ_NEST("two", "i32", "i32", "i32", TZ_MNK,
                  TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))\n    " TZ_C " = " TZ_C),
          tz_m, "not one statement");
  /* a half accumulator has no agreed rounding */
  refuses(TZ_NEST("half", "f16", "f16", "f16", TZ_MNK,
                  TZ_C " = add(" TZ_C ", mul(" TZ_A ", " TZ_B "))"),
          tz_m, "f16 accumulator");
}

TEST_MAIN(T(test_transforms_keep_results), T(test_split_clamp), T(test_transforms_refused),
          T(test_private_tiles), T(test_lanes), T(test_tensorize), T(test_tensorize_refused))
