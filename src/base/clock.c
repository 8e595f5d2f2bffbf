/* The monotonic clock every stage times itself with. See base.h. */
#include <time.h>

#include "base.h"

double kiln_clock_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
