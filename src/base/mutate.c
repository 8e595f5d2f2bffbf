/* $KILN_MUTANT: which seeded bug of a mutation build is on (see mutate.h). */
#include "mutate.h"

#ifdef KILN_MUTATION
#include <stdlib.h>

static int g_mutant = -2; /* -2: not read yet; -1: none */

bool kiln_mutant_on(int id) {
  int m = __atomic_load_n(&g_mutant, __ATOMIC_RELAXED);
  if (m == -2) {
    const char *s = getenv("KILN_MUTANT");
    char *end = NULL;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    m = (s && *s && end && *end == 0 && v >= 0 && v < 100000) ? (int)v : -1;
    __atomic_store_n(&g_mutant, m, __ATOMIC_RELAXED);
  }
  return m == id;
}
#else
typedef int kiln_mutate_unused; /* ISO C wants a declaration in every translation unit */
#endif
