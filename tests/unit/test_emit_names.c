/* Names are data, never code, in every emitter: the check of tests/fuzz/emit_check.c (the
 * libFuzzer target fuzz_emit runs it on generated inputs) on a fixed set of hostile names, and
 * proof that the check sees an injection when there is one. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../fuzz/emit_check.c"
#include "codegen/codegen.h"
#include "harness.h"

static void check_input(const uint8_t *data, size_t size, const char *what) {
  const char *e = emit_check(data, size);
  if (e) fprintf(stderr, "%s: %s\n", what, e);
  CHECK(e == NULL);
}

/* No input: name i is hostile string i (mod their count). */
static void test_default_names(void) {
  check_input(NULL, 0, "no input");
}

/* Every hostile string on every name, one string per run (selector byte 4*k, then a NUL). */
static void test_each_hostile_everywhere(void) {
  for (int k = 0; k < EC_NHOSTILE; k++) {
    uint8_t data[2 * EC_NAMES];
    for (int i = 0; i < EC_NAMES; i++) data[2 * i] = (uint8_t)(4 * k), data[2 * i + 1] = 0;
    char what[64];
    snprintf(what, sizeof what, "hostile string %d everywhere", k);
    check_input(data, sizeof data, what);
  }
}

/* Raw bytes: every non-NUL byte value appears in some name; long repeated names. */
static void test_raw_and_long(void) {
  uint8_t data[600];
  size_t n = 0;
  for (int c = 1; c < 256 && n + 20 < sizeof data; c += 13) {
    data[n++] = 2; /* raw */
    for (int j = 0; j < 13 && c + j < 256; j++) data[n++] = (uint8_t)(c + j);
    data[n++] = 0;
  }
  check_input(data, n, "raw bytes");
  const uint8_t lng[] = {1, '*', '/', 0, 1, '\\', 0, 5, '?', '?', '/', 0, 1, '\n', '#', 0};
  check_input(lng, sizeof lng, "long names");
}

/* Pseudo-random inputs. */
static void test_random(void) {
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int it = 0; it < 40; it++) {
    uint8_t data[300];
    size_t n = 40 + (size_t)(x % 260);
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      data[i] = (uint8_t)(x % 7 == 0 ? 0 : x >> 24);
    }
    check_input(data, n, "random input");
  }
}

/* The check itself: an escaped comment, a closed comment, a spliced line or a trigraph that
 * reaches code are all seen. */
static void test_check_sees_injection(void) {
  kiln_strbuf a = {0}, b = {0};
  kiln_strbuf_printf(&a, "/* step 1: x */ int f(void) { return 0; }\n");
  kiln_strbuf_printf(&b, "/* step 1: r */ system(\"x\"); /* */ int f(void) { return 0; }\n");
  CHECK(ec_same_code("t", &a, &b) != NULL);
  kiln_strbuf_free(&b);
  kiln_strbuf_printf(&b, "// step 1: a ?\?/\nint g; int f(void) { return 0; }\n");
  CHECK(ec_same_code("t", &a, &b) != NULL); /* the trigraph splices the next line in */
  kiln_strbuf_free(&b);
  kiln_strbuf_printf(&b, "/* step 1: \\x2A/ \" ' // */ int f(void) { return 0; }\n");
  CHECK(ec_same_code("t", &a, &b) == NULL); /* escaped text stays in the comment */
  kiln_strbuf_free(&b);
  kiln_strbuf_printf(&b, "/* step 1: x */ int f(void) { return 0; }\n\"a\\\" \"; x\n");
  kiln_strbuf_printf(&a, "\"b\"; x\n");
  CHECK(ec_same_code("t", &a, &b) == NULL); /* a string literal is one token */
  kiln_strbuf_free(&a);
  kiln_strbuf_free(&b);
}

/* A kernel's name becomes a C symbol as it is: both backends refuse one that is not an
 * identifier (the lowering makes identifiers; a tile IR text may quote anything). */
static void test_kernel_name_is_identifier(void) {
  const char *bad[] = {"a(b", "k */ x", "k\nint", "", "9k", "k-1", "k.x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kiln_tmodule *m = kiln_tmodule_new();
    kiln_tkernel *k = kiln_tkernel_new(m, bad[i]);
    kiln_tkernel_param(k, "x", KILN_F32, 4);
    kiln_codegen_opts o = kiln_codegen_opts_default();
    kiln_strbuf out = {0};
    CHECK_ERR(kiln_codegen_c_kernel(k, &o, &out), KILN_ERR_INVALID);
    CHECK_ERR(kiln_codegen_cuda_kernel(k, &o, &out), KILN_ERR_INVALID);
    CHECK(out.len == 0);
    kiln_strbuf_free(&out);
    kiln_tmodule_free(m);
  }
}

TEST_MAIN(T(test_default_names), T(test_each_hostile_everywhere), T(test_raw_and_long),
          T(test_random), T(test_check_sees_injection), T(test_kernel_name_is_identifier))
