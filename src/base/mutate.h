/* Seeded bugs for the mutation score (`make mutation`, docs/DESIGN.md "Verification").
 *
 * A seeded bug is a line such as
 *     if (KILN_MUTANT(12)) k = k - 1;  // mutant 12: off-by-one in the loop bound
 * in the code that it breaks. Builds without -DKILN_MUTATION=ON compile every KILN_MUTANT(n) to
 * 0, so the bugs do not exist there. A mutation build carries all of them, and
 * $KILN_MUTANT=n switches on bug n alone (one build, one bug per run). The list of bugs, with
 * where they are and what they break, is docs/MUTANTS.md. */
#ifndef KILN_MUTATE_H
#define KILN_MUTATE_H

#include <stdbool.h>

#ifdef KILN_MUTATION
/* True when $KILN_MUTANT is the decimal number id (read once per process). */
bool kiln_mutant_on(int id);
#define KILN_MUTANT(id) (kiln_mutant_on(id))
#else
#define KILN_MUTANT(id) 0
#endif

#endif
