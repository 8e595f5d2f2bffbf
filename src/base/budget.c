/* The memory limit: one count of the bytes held by tensors, arenas and large scratch
 * buffers, checked against a limit before each allocation (see base.h). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base.h"

static _Atomic int64_t g_in_use;
static _Atomic int64_t g_limit;          /* 0: the default */
static _Thread_local int64_t t_override; /* 0: none (kiln_mem_push_limit) */

int64_t kiln_mem_default_limit(void) {
  static _Atomic int64_t cached;
  int64_t d = atomic_load(&cached);
  if (d > 0) return d;
  d = KILN_MEM_DEFAULT_CAP;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && (int64_t)pages <= INT64_MAX / 4 / (int64_t)page) {
    int64_t phys = (int64_t)pages * (int64_t)page / 4 * 3;
    if (phys > 0 && phys < d) d = phys;
  }
  atomic_store(&cached, d);
  return d;
}

int64_t kiln_mem_limit(void) {
  if (t_override > 0) return t_override;
  int64_t l = atomic_load(&g_limit);
  return l > 0 ? l : kiln_mem_default_limit();
}

void kiln_mem_set_limit(int64_t bytes) {
  atomic_store(&g_limit, bytes > 0 ? bytes : 0);
}

int64_t kiln_mem_push_limit(int64_t bytes) {
  int64_t prev = t_override;
  if (bytes > 0) t_override = bytes;
  return prev;
}

void kiln_mem_pop_limit(int64_t prev) {
  t_override = prev;
}

int64_t kiln_mem_in_use(void) {
  return atomic_load(&g_in_use);
}

/* "784000000 bytes (748 MiB)" */
static const char *human(int64_t n, char *buf, size_t len) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)n;
  int u = -1;
  while (v >= 1024 && u < 5) v /= 1024, u++;
  if (u < 0) snprintf(buf, len, "%lld bytes", (long long)n);
  else snprintf(buf, len, "%lld bytes (%.3g %s)", (long long)n, v, units[u]);
  return buf;
}

static kiln_status over_limit(int64_t bytes, int64_t in_use, int64_t limit, const char *fmt,
                              va_list ap) {
  char what[400], b1[64], b2[64], b3[64];
  vsnprintf(what, sizeof what, fmt, ap);
  if (in_use <= 0 || bytes > limit)
    return kiln_invalid("%s needs %s, above the limit of %s (--max-memory)", what,
                        human(bytes, b1, sizeof b1), human(limit, b2, sizeof b2));
  return kiln_invalid("%s needs %s; with the %s already in use that is above the limit of %s "
                      "(--max-memory)",
                      what, human(bytes, b1, sizeof b1), human(in_use, b3, sizeof b3),
                      human(limit, b2, sizeof b2));
}

kiln_status kiln_mem_check(int64_t bytes, const char *fmt, ...) {
  int64_t limit = kiln_mem_limit(), in_use = kiln_mem_in_use(), total;
  if (bytes >= 0 && !kiln_add_overflow_i64(in_use, bytes, &total) && total <= limit) return KILN_OK;
  va_list ap;
  va_start(ap, fmt);
  kiln_status st = over_limit(bytes < 0 ? INT64_MAX : bytes, in_use, limit, fmt, ap);
  va_end(ap);
  return st;
}

bool kiln_mem_try_reserve(int64_t bytes) {
  int64_t limit = kiln_mem_limit();
  int64_t cur = atomic_load(&g_in_use), next;
  do {
    if (bytes < 0 || kiln_add_overflow_i64(cur, bytes, &next) || next > limit) return false;
  } while (!atomic_compare_exchange_weak(&g_in_use, &cur, next));
  return true;
}

kiln_status kiln_mem_reserve(int64_t bytes, const char *fmt, ...) {
  int64_t limit = kiln_mem_limit();
  int64_t cur = atomic_load(&g_in_use), next;
  for (;;) {
    if (bytes < 0 || kiln_add_overflow_i64(cur, bytes, &next) || next > limit) {
      va_list ap;
      va_start(ap, fmt);
      kiln_status st = over_limit(bytes < 0 ? INT64_MAX : bytes, cur, limit, fmt, ap);
      va_end(ap);
      return st;
    }
    if (atomic_compare_exchange_weak(&g_in_use, &cur, next)) return KILN_OK;
  }
}

void kiln_mem_release(int64_t bytes) {
  if (bytes > 0) atomic_fetch_sub(&g_in_use, bytes);
}

bool kiln_mem_limit_error(kiln_status st) {
  return st && kiln_status_code(st) == KILN_ERR_INVALID &&
         strstr(kiln_status_where(st), "budget.c:") != NULL;
}
