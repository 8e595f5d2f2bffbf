/* A minimal unit-test harness: CHECK records failures, TEST_MAIN runs the listed
 * tests and prints "N passed, N failed" (exit 1 on any failure). */
#ifndef KILN_TEST_HARNESS_H
#define KILN_TEST_HARNESS_H

#include <stdio.h>

#include "base/base.h"

extern int kiln_test_failed_checks;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
      kiln_test_failed_checks++;                                                                   \
    }                                                                                              \
  } while (0)

/* Checks a status is OK; prints and frees it otherwise. */
#define CHECK_OK(expr)                                                                             \
  do {                                                                                             \
    kiln_status st_ = (expr);                                                                      \
    if (st_ != KILN_OK) {                                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,                         \
              kiln_status_message(st_));                                                           \
      kiln_status_free(st_);                                                                       \
      kiln_test_failed_checks++;                                                                   \
    }                                                                                              \
  } while (0)

/* Checks a status is an error of the given code; frees it. */
#define CHECK_ERR(expr, code)                                                                      \
  do {                                                                                             \
    kiln_status st_ = (expr);                                                                      \
    if (st_ == KILN_OK || kiln_status_code(st_) != (code)) {                                       \
      fprintf(stderr, "%s:%d: %s: expected %s, got %s\n", __FILE__, __LINE__, #expr,               \
              kiln_code_name(code), st_ ? kiln_status_message(st_) : "OK");                        \
      kiln_test_failed_checks++;                                                                   \
    }                                                                                              \
    kiln_status_free(st_);                                                                         \
  } while (0)

typedef struct kiln_test_case {
  const char *name;
  void (*fn)(void);
} kiln_test_case;

int kiln_test_run(const kiln_test_case *cases, int n);

/* Removes a folder the test made (its files and subfolders), ignoring errors. */
void kiln_test_remove_dir(const char *dir);
/* Makes a fresh folder $TMPDIR/<prefix>_<random> (or under /tmp) into buf; aborts when it
 * cannot (a test without its folder cannot run). */
void kiln_test_make_tmp(char *buf, size_t n, const char *prefix);

#define TEST_MAIN(...)                                                                             \
  int main(void) {                                                                                 \
    static const kiln_test_case cases_[] = {__VA_ARGS__};                                          \
    return kiln_test_run(cases_, (int)(sizeof cases_ / sizeof cases_[0]));                         \
  }
#define T(fn)                                                                                      \
  { #fn, fn }

#endif
