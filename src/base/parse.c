/* Checked parsing of numbers that come from a user or a file (base.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

/* Shown text of s, cut so that a huge argument does not make a huge message. */
#define SHOWN(s) (int)(strlen(s) > 40 ? 40 : strlen(s)), (s), strlen(s) > 40 ? "..." : ""

static bool starts_clean(const char *s) {
  return s && *s && !isspace((unsigned char)*s);
}

kiln_status kiln_parse_i64(const char *s, int64_t lo, int64_t hi, const char *what, int64_t *out) {
  if (!starts_clean(s))
    return kiln_invalid("%s: '%s' is not an integer in %lld..%lld", what, s ? s : "", (long long)lo,
                        (long long)hi);
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*end || end == s)
    return kiln_invalid("%s: '%.*s%s' is not an integer in %lld..%lld", what, SHOWN(s),
                        (long long)lo, (long long)hi);
  if (errno == ERANGE || v < lo || v > hi)
    return kiln_invalid("%s: %.*s%s is out of range %lld..%lld", what, SHOWN(s), (long long)lo,
                        (long long)hi);
  *out = v;
  return KILN_OK;
}

kiln_status kiln_parse_int(const char *s, int lo, int hi, const char *what, int *out) {
  int64_t v;
  KILN_TRY(kiln_parse_i64(s, lo, hi, what, &v));
  *out = (int)v;
  return KILN_OK;
}

kiln_status kiln_parse_f64(const char *s, double lo, double hi, const char *what, double *out) {
  if (!starts_clean(s)) return kiln_invalid("%s: '%s' is not a number", what, s ? s : "");
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || end == s) return kiln_invalid("%s: '%.*s%s' is not a number", what, SHOWN(s));
  if (isnan(v) || isinf(v) || (errno == ERANGE && fabs(v) > 1))
    return kiln_invalid("%s: %.*s%s is not a finite number", what, SHOWN(s));
  if (v < lo || v > hi)
    return kiln_invalid("%s: %.*s%s is out of range %g..%g", what, SHOWN(s), lo, hi);
  *out = v;
  return KILN_OK;
}

/* The multiplier of a unit suffix ("", K, M, G, T, each optionally with B or iB), or 0. */
static int64_t unit_scale(const char *u) {
  static const char units[] = "KMGT";
  if (!*u || !strcmp(u, "B")) return 1;
  const char *p = strchr(units, toupper((unsigned char)u[0]));
  if (!p || !*p) return 0;
  const char *rest = u + 1;
  if (*rest && strcmp(rest, "B") && strcmp(rest, "iB")) return 0;
  return (int64_t)1 << (10 * (p - units + 1));
}

kiln_status kiln_parse_bytes(const char *s, int64_t lo, int64_t hi, const char *what,
                             int64_t *out) {
  const char *p = s;
  while (p && isdigit((unsigned char)*p)) p++;
  int64_t scale = p && p != s ? unit_scale(p) : 0;
  if (!scale)
    return kiln_invalid("%s: '%.*s%s' is not a byte count (a number, optionally with K, M, G "
                        "or T)",
                        what, SHOWN(s ? s : ""));
  char digits[32];
  size_t n = (size_t)(p - s);
  if (n >= sizeof digits)
    return kiln_invalid("%s: %.*s%s is out of range %lld..%lld", what, SHOWN(s), (long long)lo,
                        (long long)hi);
  memcpy(digits, s, n);
  digits[n] = 0;
  int64_t v, bytes;
  KILN_TRY(kiln_parse_i64(digits, 0, INT64_MAX, what, &v));
  if (kiln_mul_overflow_i64(v, scale, &bytes) || bytes < lo || bytes > hi)
    return kiln_invalid("%s: %.*s%s is out of range %lld..%lld bytes", what, SHOWN(s),
                        (long long)lo, (long long)hi);
  *out = bytes;
  return KILN_OK;
}
