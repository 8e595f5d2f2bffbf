/* Checked number parsing and the escaping of model text (src/base/parse.c, text.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const hostile[] = {"r */ system(\"touch PWNED\"); /* ",
                                      "g\n__attribute__((constructor)) static void f(void){}\n//",
                                      "a\\\"b'c`d$(x)",
                                      "../../x",
                                      "/abs",
                                      "a/b",
                                      "a_b",
                                      "..",
                                      ".",
                                      "",
                                      "ctl\x01\x02\x1b[31m\x7f\r\t",
                                      "\xc3\xbc\xe2\x9c\x93 \xe2\x80\xae",
                                      "%s%n",
                                      "?\?/",
                                      "*/",
                                      "/*",
                                      "line\\",
                                      "?\?=",
                                      "-o",
                                      "%00",
                                      "%2E."};
#define N_HOSTILE (int)(sizeof hostile / sizeof hostile[0])

static void test_parse_int(void) {
  int64_t v = 0;
  int i = 0;
  double d = 0;
  CHECK_OK(kiln_parse_i64("-7", -10, 10, "x", &v));
  CHECK(v == -7);
  CHECK_ERR(kiln_parse_i64("99999999999999999999999", 0, INT64_MAX, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_i64("", 0, 1, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_i64(NULL, 0, 1, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_i64(" 1", 0, 1, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_i64("1 ", 0, 1, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_i64("0x10", 0, 100, "x", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_int("100000", 1, 1024, "--threads", &i), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_int("abc", 1, 1024, "--threads", &i), KILN_ERR_INVALID);
  CHECK_OK(kiln_parse_int("1024", 1, 1024, "--threads", &i));
  CHECK(i == 1024);
  kiln_status st = kiln_parse_int("100000", 1, 1024, "--threads", &i);
  CHECK(st && strstr(kiln_status_message(st), "--threads") &&
        strstr(kiln_status_message(st), "1..1024"));
  kiln_status_free(st);
  CHECK_OK(kiln_parse_f64("1e-3", 0, 1e300, "--rtol", &d));
  CHECK(d == 1e-3);
  CHECK_ERR(kiln_parse_f64("nan", 0, 1e300, "--rtol", &d), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_f64("-1", 0, 1e300, "--rtol", &d), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_f64("inf", 0, 1e300, "--rtol", &d), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_f64("1e999", 0, 1e300, "--rtol", &d), KILN_ERR_INVALID);
  CHECK_OK(kiln_parse_f64("1e-320", 0, 1, "--atol", &d)); /* a subnormal is a number */
}

static void test_parse_bytes(void) {
  int64_t v = 0;
  CHECK_OK(kiln_parse_bytes("8G", 0, INT64_MAX, "--max-memory", &v));
  CHECK(v == 8ll << 30);
  CHECK_OK(kiln_parse_bytes("512MiB", 0, INT64_MAX, "m", &v));
  CHECK(v == 512ll << 20);
  CHECK_OK(kiln_parse_bytes("4096", 0, INT64_MAX, "m", &v));
  CHECK(v == 4096);
  CHECK_ERR(kiln_parse_bytes("99999999999T", 0, INT64_MAX, "m", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_bytes("-1G", 0, INT64_MAX, "m", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_bytes("1X", 0, INT64_MAX, "m", &v), KILN_ERR_INVALID);
  CHECK_ERR(kiln_parse_bytes("G", 0, INT64_MAX, "m", &v), KILN_ERR_INVALID);
}

static void test_esc_comment_and_line(void) {
  for (int i = 0; i < N_HOSTILE; i++) {
    kiln_strbuf b = {0}, l = {0};
    kiln_esc_c_comment(&b, hostile[i], 64);
    const char *s = b.data ? b.data : "";
    CHECK(!strstr(s, "*/") && !strstr(s, "/*") && !strchr(s, '\n') && !strstr(s, "??"));
    for (const char *p = s; *p; p++) CHECK(*p >= 0x20 && *p < 0x7f);
    kiln_esc_line(&l, hostile[i]);
    char *back = kiln_xstrdup(l.data ? l.data : "");
    CHECK(!strchr(back, '\n') && !strchr(back, '\r'));
    CHECK_OK(kiln_unesc_line(back));
    CHECK(!strcmp(back, hostile[i]));
    free(back);
    kiln_strbuf_free(&b);
    kiln_strbuf_free(&l);
  }
  char bad[] = "a\\q";
  CHECK_ERR(kiln_unesc_line(bad), KILN_ERR_INVALID);
  char nul[] = "a\\x00";
  CHECK_ERR(kiln_unesc_line(nul), KILN_ERR_INVALID);
}

static void test_esc_file_name(void) {
  kiln_strbuf names[N_HOSTILE];
  memset(names, 0, sizeof names);
  for (int i = 0; i < N_HOSTILE; i++) {
    kiln_esc_file_name(&names[i], hostile[i]);
    const char *s = names[i].data;
    CHECK(s && *s && s[0] != '.' && !strchr(s, '/') && strlen(s) <= 200);
    for (int j = 0; j < i; j++) CHECK(strcmp(s, names[j].data) != 0); /* injective */
  }
  char *long_a = calloc(1, 5001), *long_b = calloc(1, 5001);
  memset(long_a, 'a', 5000);
  memset(long_b, 'a', 5000);
  long_b[4999] = 'b';
  kiln_strbuf a = {0}, b = {0};
  kiln_esc_file_name(&a, long_a);
  kiln_esc_file_name(&b, long_b);
  CHECK(a.len <= 200 && b.len <= 200 && strcmp(a.data, b.data) != 0);
  kiln_strbuf_free(&a);
  kiln_strbuf_free(&b);
  free(long_a);
  free(long_b);
  for (int i = 0; i < N_HOSTILE; i++) kiln_strbuf_free(&names[i]);
}

/* The escaped text, compiled by the C compiler inside a comment and as a string literal,
 * must stay a comment and give back exactly the original bytes. */
static void test_esc_c_compiles(void) {
  char dir[512], path[600], cmd[1400];
  kiln_test_make_tmp(dir, sizeof dir, "esc");
  kiln_strbuf src = {0};
  kiln_strbuf_printf(&src, "#include <stdio.h>\n#include <string.h>\nstatic const char *s[] = {\n");
  for (int i = 0; i < N_HOSTILE; i++) {
    kiln_strbuf_printf(&src, "  /* ");
    kiln_esc_c_comment(&src, hostile[i], 1000);
    kiln_strbuf_printf(&src, " */ \"");
    kiln_esc_c_string(&src, hostile[i]);
    kiln_strbuf_printf(&src, "\",\n");
  }
  kiln_strbuf_printf(&src,
                     "};\nint main(void) {\n  for (int i = 0; i < %d; i++) "
                     "fwrite(s[i], 1, strlen(s[i]) + 1, stdout);\n  return 0;\n}\n",
                     N_HOSTILE);
  snprintf(path, sizeof path, "%s/esc.c", dir);
  CHECK_OK(kiln_write_file(path, src.data, src.len));
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -Wall -Werror -o '%s/esc' '%s' 2>&1 && '%s/esc' > '%s/out'", dir, path, dir,
           dir);
  CHECK(system(cmd) == 0);
  snprintf(path, sizeof path, "%s/out", dir);
  char *out = NULL;
  size_t len = 0, at = 0;
  CHECK_OK(kiln_read_file(path, &out, &len));
  for (int i = 0; out && i < N_HOSTILE; i++) {
    CHECK(at < len && !strcmp(out + at, hostile[i]));
    at += strlen(hostile[i]) + 1;
  }
  free(out);
  kiln_strbuf_free(&src);
  kiln_test_remove_dir(dir);
}

static void test_esc_html(void) {
  kiln_strbuf b = {0};
  kiln_esc_html(&b, "<script>alert('x')</script>&\"\x01");
  CHECK(!strchr(b.data, '<') && !strchr(b.data, '>') && !strchr(b.data, '\'') &&
        !strchr(b.data, '"') && !strchr(b.data, '\x01'));
  kiln_strbuf_free(&b);
}

static void test_esc_terminal_json(void) {
  kiln_strbuf t = {0}, j = {0};
  kiln_esc_terminal(&t, "a\x1b[31mred\n\tok \xe2\x80\xae\xc2\x9b\xc3\xbc");
  CHECK(!strchr(t.data, 0x1b) && strstr(t.data, "\n\t") && !strstr(t.data, "\xe2\x80\xae") &&
        !strstr(t.data, "\xc2\x9b") && strstr(t.data, "\xc3\xbc"));
  kiln_esc_json(&j, "q\"b\\\n\x01\xff\xc3\xbc\xed\xa0\x80");
  CHECK(!strcmp(j.data, "q\\\"b\\\\\\u000A\\u0001\\uFFFD\xc3\xbc\\uFFFD\\uFFFD\\uFFFD"));
  j.len = 0; /* C1 controls and bidi overrides: escaped, not raw (JSON is printed too) */
  kiln_esc_json(&j, "a\xc2\x9b\xe2\x80\xae\xe2\x81\xa6\xc2\xa0");
  CHECK(!strcmp(j.data, "a\\u009B\\u202E\\u2066\xc2\xa0"));
  kiln_strbuf_free(&t);
  kiln_strbuf_free(&j);
}

static void test_system_error(void) {
  errno = ENOSPC;
  kiln_status st = kiln_system_error("cannot write '%s'", "f");
  CHECK(kiln_status_code(st) == KILN_ERR_SYSTEM && kiln_status_exit_code(st) == 1);
  CHECK(strstr(kiln_status_message(st), "No space left on device") != NULL);
  kiln_status_free(st);
  st = kiln_status_recode(kiln_invalid("kernel k0: write out of bounds"), KILN_ERR_INTERNAL);
  CHECK(kiln_status_code(st) == KILN_ERR_INTERNAL && kiln_status_exit_code(st) == 1 &&
        !strcmp(kiln_status_message(st), "kernel k0: write out of bounds"));
  kiln_status_free(st);
  CHECK(kiln_status_recode(KILN_OK, KILN_ERR_INTERNAL) == KILN_OK);
}

TEST_MAIN(T(test_parse_int), T(test_parse_bytes), T(test_esc_comment_and_line),
          T(test_esc_file_name), T(test_esc_c_compiles), T(test_esc_html),
          T(test_esc_terminal_json), T(test_system_error))
