/* Base layer: status, arena, containers, dtype conversions, tensors. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/tensor.h"
#include "harness.h"

static void test_status(void) {
  kiln_status st = kiln_invalid("bad %s", "thing");
  st = kiln_status_annotate(st, "node '%s'", "n1");
  CHECK(kiln_status_code(st) == KILN_ERR_INVALID);
  CHECK(!strcmp(kiln_status_message(st), "node 'n1': bad thing"));
  CHECK(strstr(kiln_status_where(st), "test_base.c:") != NULL);
  CHECK(kiln_status_exit_code(st) == 2);
  kiln_status_free(st);
  CHECK(kiln_status_exit_code(KILN_OK) == 0);
  st = kiln_error(KILN_ERR_INTERNAL, "x");
  CHECK(kiln_status_exit_code(st) == 1);
  kiln_status_free(st);
}

static void test_arena(void) {
  kiln_arena *a = kiln_arena_new();
  char *s = kiln_arena_strdup(a, "hello");
  void *big = kiln_arena_alloc(a, 1 << 20);
  CHECK(!strcmp(s, "hello"));
  CHECK(((uintptr_t)big & 15) == 0);
  CHECK(((unsigned char *)big)[12345] == 0);
  CHECK(kiln_arena_calloc(a, SIZE_MAX / 2, 4) == NULL);
  KILN_VEC(int) v = {0};
  for (int i = 0; i < 1000; i++) kiln_arena_vec_push(a, &v, i);
  CHECK(v.len == 1000 && v.data[999] == 999 && v.data[0] == 0);
  kiln_arena_free(a);
}

static void test_strmap(void) {
  kiln_strmap m = {0};
  char key[32];
  for (int i = 0; i < 500; i++) {
    snprintf(key, sizeof key, "k%d", i);
    kiln_strmap_put(&m, key, i * 3);
  }
  int64_t v = -1;
  CHECK(kiln_strmap_get(&m, "k321", &v) && v == 963);
  CHECK(!kiln_strmap_get(&m, "k500", &v));
  kiln_strmap_free(&m);
}

static void test_f16(void) {
  CHECK(kiln_f32_to_f16(1.0f) == 0x3C00);
  CHECK(kiln_f32_to_f16(-2.0f) == 0xC000);
  CHECK(kiln_f32_to_f16(65504.0f) == 0x7BFF);
  CHECK(kiln_f32_to_f16(65519.0f) == 0x7BFF); /* below the midpoint to 65536 */
  CHECK(kiln_f32_to_f16(65520.0f) == 0x7C00); /* the tie rounds to even: infinity */
  CHECK(kiln_f32_to_f16(0.1f) == 0x2E66);
  CHECK(kiln_f32_to_f16(5.9604644775390625e-08f) == 0x0001);  /* smallest subnormal */
  CHECK(kiln_f32_to_f16(2.98023223876953125e-08f) == 0x0000); /* tie to even: zero */
  CHECK(kiln_f32_to_f16(INFINITY) == 0x7C00);
  CHECK((kiln_f32_to_f16(NAN) & 0x7C00) == 0x7C00 && (kiln_f32_to_f16(NAN) & 0x3FF));
  CHECK(kiln_f16_to_f32(0x3555) == 0.333251953125f);
  CHECK(kiln_f16_to_f32(0x8000) == 0.0f && signbit(kiln_f16_to_f32(0x8000)));
  for (uint32_t h = 0; h < 0x10000; h++) { /* every finite half round-trips */
    float f = kiln_f16_to_f32((uint16_t)h);
    if (!isnan(f)) CHECK(kiln_f32_to_f16(f) == h);
  }
  /* double rounding: 1 + 2^-11 + 2^-40 must round up from double directly */
  CHECK(kiln_f64_to_f16(1.0 + ldexp(1, -11) + ldexp(1, -40)) == 0x3C01);
}

static void test_bf16(void) {
  CHECK(kiln_f32_to_bf16(1.0f) == 0x3F80);
  CHECK(kiln_f32_to_bf16(1.0f + 0x1p-8f) == 0x3F80);     /* tie to even */
  CHECK(kiln_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82); /* tie to even, upward */
  CHECK(kiln_bf16_to_f32(0xC040) == -3.0f);
  CHECK(kiln_f32_to_bf16(3.0e38f) == 0x7F62);
}

static void test_f8(void) {
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, 448, false) == 0x7E);
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, 464, false) == 0x7E); /* tie to even stays at max */
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, 465, false) == 0x7F); /* overflow: NaN */
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, 1e9, true) == 0x7E);  /* saturate */
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, -1e9, true) == 0xFE);
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FN, INFINITY, false) == 0x7F);
  CHECK(kiln_f8_to_f64(KILN_F8E4M3FN, 0x01) == ldexp(1, -9));
  CHECK(kiln_f64_to_f8(KILN_F8E5M2, 57344, false) == 0x7B);
  CHECK(kiln_f64_to_f8(KILN_F8E5M2, 1e6, false) == 0x7C); /* inf */
  CHECK(kiln_f64_to_f8(KILN_F8E5M2, -1e6, true) == 0xFB);
  CHECK(kiln_f64_to_f8(KILN_F8E4M3FNUZ, -0.0, false) == 0x00);
  CHECK(isnan(kiln_f8_to_f64(KILN_F8E4M3FNUZ, 0x80)));
  CHECK(kiln_f8_to_f64(KILN_F8E4M3FNUZ, 0x7F) == 240);
  CHECK(kiln_f8_to_f64(KILN_F8E5M2FNUZ, 0x7F) == 57344);
  CHECK(kiln_f64_to_f8(KILN_F8E5M2FNUZ, NAN, false) == 0x80);
  static const kiln_dtype f8[] = {KILN_F8E4M3FN, KILN_F8E4M3FNUZ, KILN_F8E5M2, KILN_F8E5M2FNUZ};
  for (int k = 0; k < 4; k++)
    for (int c = 0; c < 256; c++) {
      double d = kiln_f8_to_f64(f8[k], (uint8_t)c);
      if (!isnan(d) && !isinf(d) && !(d == 0 && c != 0))
        CHECK(kiln_f64_to_f8(f8[k], d, false) == c);
    }
  CHECK(kiln_f4e2m1_to_f64(0x7) == 6 && kiln_f4e2m1_to_f64(0xF) == -6);
  CHECK(kiln_f64_to_f4e2m1(2.5, true) == 0x4); /* tie to even: 2 */
  CHECK(kiln_f64_to_f4e2m1(100, true) == 0x7);
}

static void test_load_store(void) {
  int8_t i8[2];
  kiln_store_f64(KILN_I8, i8, 0, -3.7); /* truncates toward zero */
  kiln_store_i64(KILN_I8, i8, 1, 300);  /* wraps */
  CHECK(i8[0] == -3 && i8[1] == 44);
  uint8_t i4 = 0;
  kiln_store_i64(KILN_I4, &i4, 0, -2);
  CHECK(kiln_load_i64(KILN_I4, &i4, 0) == -2);
  uint64_t u = UINT64_MAX;
  CHECK(kiln_load_u64(KILN_U64, &u, 0) == UINT64_MAX);
  uint8_t b = 0;
  kiln_store_f64(KILN_BOOL, &b, 0, 0.5);
  CHECK(b == 1);
}

static void test_tensor(void) {
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, 2, (int64_t[]){2, 3}, &t));
  CHECK(t && t->numel == 6 && kiln_tensor_nbytes(t) == 24);
  kiln_tensor_free(t);
  CHECK_ERR(kiln_tensor_new(KILN_F32, 2, (int64_t[]){INT64_MAX / 2, 3}, &t), KILN_ERR_INVALID);
  CHECK_ERR(kiln_tensor_new(KILN_F32, 1, (int64_t[]){-1}, &t), KILN_ERR_INVALID);
  CHECK_ERR(kiln_tensor_new(KILN_C64, 0, NULL, &t), KILN_ERR_UNSUPPORTED);
  CHECK_OK(kiln_tensor_new(KILN_STRING, 1, (int64_t[]){2}, &t));
  ((char **)t->data)[0] = kiln_xstrdup("a");
  kiln_tensor *c = NULL;
  CHECK_OK(kiln_tensor_clone(t, &c));
  CHECK(c && !strcmp(((char **)c->data)[0], "a") && !strcmp(((char **)c->data)[1], ""));
  kiln_tensor_free(t);
  kiln_tensor_free(c);
}

static void test_dtype_names(void) {
  for (int t = 1; t < KILN_DTYPE_COUNT; t++) {
    kiln_dtype back;
    CHECK(kiln_dtype_from_name(kiln_dtype_name((kiln_dtype)t), &back) && back == (kiln_dtype)t);
  }
  CHECK(!kiln_dtype_valid(0) && !kiln_dtype_valid(KILN_DTYPE_COUNT) && kiln_dtype_valid(KILN_I2));
}

/* The monotonic clock: never goes back, and a 20 ms sleep shows as at least that. */
static void test_clock(void) {
  double t0 = kiln_clock_seconds();
  struct timespec nap = {0, 20 * 1000 * 1000};
  nanosleep(&nap, NULL);
  double t1 = kiln_clock_seconds(), t2 = kiln_clock_seconds();
  CHECK(t1 - t0 >= 0.019 && t1 - t0 < 60.0);
  CHECK(t2 >= t1);
}

/* 64-bit integers into narrow floats round once: through the double rounded to odd. */
static double to_bf16(double v) {
  uint16_t h = 0;
  kiln_store_f64(KILN_BF16, &h, 0, v);
  return kiln_load_f64(KILN_BF16, &h, 0);
}
static void test_int_odd(void) {
  CHECK(kiln_u64_to_f64_odd(12345) == 12345 && kiln_i64_to_f64_odd(-7) == -7);
  CHECK(kiln_u64_to_f64_odd(1ull << 53) == 0x1p53);
  uint64_t v = (1ull << 60) + (1ull << 52) + 1; /* above the bf16 tie 2^60 + 2^52 */
  CHECK(to_bf16((double)v) == 0x1p60);          /* rounded twice */
  CHECK(to_bf16(kiln_u64_to_f64_odd(v)) == 0x1p60 + 0x1p53);
  CHECK(to_bf16(kiln_i64_to_f64_odd(-(int64_t)v)) == -(0x1p60 + 0x1p53));
  CHECK(to_bf16(kiln_u64_to_f64_odd((1ull << 60) + (1ull << 52))) == 0x1p60); /* the tie: even */
  CHECK(kiln_u64_to_f64_odd(UINT64_MAX) == 0x1p64 - 0x1p11); /* 53 ones, the last sticky */
  CHECK(kiln_i64_to_f64_odd(INT64_MIN) == -0x1p63);
  CHECK((float)kiln_u64_to_f64_odd((1ull << 60) + (1ull << 36) + 1) == 0x1p60f + 0x1p37f);
}

TEST_MAIN(T(test_status), T(test_arena), T(test_strmap), T(test_f16), T(test_bf16), T(test_f8),
          T(test_load_store), T(test_tensor), T(test_dtype_names), T(test_clock), T(test_int_odd))
