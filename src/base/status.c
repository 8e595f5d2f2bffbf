/* Status objects: an error code, a message that accumulates context, and the
 * file:line where the error was made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

struct kiln_error {
  kiln_code code;
  char *message;
  char where[96];
};

static const char *const code_names[KILN_CODE_COUNT] = {
    [KILN_OK_CODE] = "ok",
    [KILN_ERR_INVALID] = "invalid input",
    [KILN_ERR_UNSUPPORTED] = "unsupported",
    [KILN_ERR_IO] = "i/o error",
    [KILN_ERR_OOM] = "out of memory",
    [KILN_ERR_FAILED] = "failed",
    [KILN_ERR_INTERNAL] = "internal error",
    [KILN_ERR_SYSTEM] = "system error",
};

static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  char *s = kiln_xmalloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

kiln_status kiln_status_make(kiln_code code, const char *file, int line, const char *fmt, ...) {
  struct kiln_error *e = kiln_xcalloc(1, sizeof *e);
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  e->message = vformat(fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  snprintf(e->where, sizeof e->where, "%s:%d", base ? base + 1 : file, line);
  return e;
}

kiln_status kiln_status_errno(const char *file, int line, const char *fmt, ...) {
  int err = errno;
  va_list ap;
  va_start(ap, fmt);
  char *msg = vformat(fmt, ap);
  va_end(ap);
  kiln_status st = kiln_status_make(KILN_ERR_SYSTEM, file, line, "%s: %s", msg,
                                    err ? strerror(err) : "unknown error");
  free(msg);
  return st;
}

kiln_status kiln_status_annotate(kiln_status st, const char *fmt, ...) {
  if (!st) return st;
  va_list ap;
  va_start(ap, fmt);
  char *ctx = vformat(fmt, ap);
  va_end(ap);
  size_t n = strlen(ctx) + strlen(st->message) + 3;
  char *msg = kiln_xmalloc(n);
  snprintf(msg, n, "%s: %s", ctx, st->message);
  free(ctx);
  free(st->message);
  st->message = msg;
  return st;
}

kiln_status kiln_status_recode(kiln_status st, kiln_code c) {
  if (st) st->code = c;
  return st;
}

kiln_code kiln_status_code(kiln_status st) {
  return st ? st->code : KILN_OK_CODE;
}
const char *kiln_status_message(kiln_status st) {
  return st ? st->message : "";
}
const char *kiln_status_where(kiln_status st) {
  return st ? st->where : "";
}

const char *kiln_code_name(kiln_code code) {
  return (unsigned)code < KILN_CODE_COUNT ? code_names[code] : "?";
}

void kiln_status_free(kiln_status st) {
  if (!st) return;
  free(st->message);
  free(st);
}

int kiln_status_exit_code(kiln_status st) {
  switch (kiln_status_code(st)) {
  case KILN_OK_CODE: return 0;
  case KILN_ERR_INVALID:
  case KILN_ERR_UNSUPPORTED:
  case KILN_ERR_IO: return 2;
  default: return 1;
  }
}

bool kiln_mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

bool kiln_add_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}
