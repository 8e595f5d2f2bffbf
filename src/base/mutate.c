/* $KILN_MUTANT: which seeded bug of a mutation build is on (see mutate.h). */
#include "mutate.h"

#ifdef KILN_MUTATION
#include <stdio.h>
#include <stdlib.h>

#include "base.h"

static int g_mutant = -2; /* -2: not read yet; -1: none */

bool kiln_mutant_on(int id) {
  int m = __atomic_load_n(&g_mutant, __ATOMIC_RELAXED);
  if (m == -2) {
    const char *s = getenv("KILN_MUTANT");
    kiln_status st = s && *s ? kiln_parse_int(s, 0, 99999, "KILN_MUTANT", &m) : KILN_OK;
    if (st || !s || !*s) m = -1; /* not a mutant id: no seeded bug is on */
    if (st) fprintf(stderr, "kiln: warning: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    __atomic_store_n(&g_mutant, m, __ATOMIC_RELAXED);
  }
  return m == id;
}
#else
typedef int kiln_mutate_unused; /* ISO C wants a declaration in every translation unit */
#endif
