/* Edge coverage of the compiler, for feedback (a campaign keeps what reaches new edges).
 *
 * In a KILN_COVERAGE or KILN_EDGE_FEEDBACK build the compiler stages (src/passes, src/lower,
 * src/tile, src/codegen, src/runtime) are compiled with -fsanitize-coverage=trace-pc: every basic
 * block calls
 * __sanitizer_cov_trace_pc (edges.c), which counts the edge (previous block, this block) in
 * one map of KILN_EDGE_MAP saturating 8-bit counters, AFL style:
 *
 *     kiln_edges_reset();
 *     run_passes(g);                        // instrumented code runs
 *     const uint8_t *m = kiln_edges_map();  // m[e] > 0: edge e was taken (255: 255 or more)
 *
 * In every other build nothing is instrumented: kiln_edges_enabled() is false, the map is NULL
 * and reset does nothing. The map is one per process, shared by its threads and by the
 * children it forks (see edges.c). */
#ifndef KILN_EDGES_H
#define KILN_EDGES_H

#include <stdbool.h>
#include <stdint.h>

enum { KILN_EDGE_MAP = 1 << 16 };

bool kiln_edges_enabled(void);       /* true only in a build with edge feedback */
bool kiln_edges_gcov(void);          /* true in a KILN_COVERAGE build (gcov counters too) */
const uint8_t *kiln_edges_map(void); /* KILN_EDGE_MAP counters, NULL when not enabled */
void kiln_edges_reset(void);         /* zero the map */

#endif
