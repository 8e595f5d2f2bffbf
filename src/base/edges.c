/* Edge coverage map (see edges.h). CMake defines KILN_EDGES for this file only in a
 * KILN_COVERAGE or KILN_EDGE_FEEDBACK build and compiles it without instrumentation (no trace-pc,
 * no gcov counters): the callback must not call itself, and a counter per block of the callback
 * would only slow every block of the compiler down.
 *
 * An edge is AFL's: each block gets a 16-bit id from its address, and the edge into block cur
 * from block prev counts at map[cur ^ prev]; prev is stored shifted right by one so that A->B
 * and B->A, and A->A and B->B, stay apart. Block ids come from the address relative to a
 * function of this program (kiln_edges_reset), not the absolute one, so that the same binary
 * gives the same ids in every process despite address-space randomisation: the maps of the
 * shards of one campaign can be merged.
 *
 * Threads: the previous block is thread-local (the edges of two threads do not mix). The map
 * is shared; a counter is read and written with relaxed atomic loads and stores, not an atomic
 * increment, so two threads that bump one counter at once may lose one of the increments. That
 * race is benign and accepted (it is what AFL and libFuzzer do): a lost increment changes a
 * count, never whether an edge is marked, unless both threads were the edge's first and only
 * visitors, and a lock or an atomic add per basic block would cost more than the map is worth. */
#include "edges.h"

#include <stdlib.h>
#include <string.h>
#ifdef KILN_EDGES
#include <sys/mman.h>
#endif

#ifdef KILN_EDGES

/* Shared anonymous memory: a child forked to verify one graph writes the map its parent reads.
 * Set up before main; blocks that run earlier (none of the compiler's) are not counted. */
static uint8_t *edge_map;
static _Thread_local uint32_t prev_block;

__attribute__((constructor)) static void edges_init(void) {
  void *p = mmap(NULL, KILN_EDGE_MAP, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  edge_map = p == MAP_FAILED ? calloc(KILN_EDGE_MAP, 1) : p;
}

bool kiln_edges_enabled(void) {
  return edge_map != NULL;
}

bool kiln_edges_gcov(void) {
#ifdef KILN_EDGES_GCOV
  return true;
#else
  return false;
#endif
}

const uint8_t *kiln_edges_map(void) {
  return edge_map;
}

void kiln_edges_reset(void) {
  if (edge_map) memset(edge_map, 0, KILN_EDGE_MAP);
  prev_block = 0;
}

/* 16 well-mixed bits of a block's offset from a fixed point of the program (Fibonacci
 * hashing: the high bits of the product depend on every bit of the offset). */
static uint32_t block_id(uintptr_t pc) {
  uint64_t off = (uint64_t)(pc - (uintptr_t)&kiln_edges_reset);
  return (uint32_t)((off * 0x9E3779B97F4A7C15ull) >> 48);
}

/* Called by the compiler at the start of every basic block of instrumented code. Not declared
 * in a header: it is the compiler's name (hence no "kiln_" prefix). */
void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void) {
  if (!edge_map) return;
  uint32_t cur = block_id((uintptr_t)__builtin_return_address(0));
  uint8_t *slot = &edge_map[(cur ^ prev_block) & (KILN_EDGE_MAP - 1)];
  uint8_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (v != 255) __atomic_store_n(slot, (uint8_t)(v + 1), __ATOMIC_RELAXED);
  prev_block = cur >> 1;
}

#else

bool kiln_edges_enabled(void) {
  return false;
}

bool kiln_edges_gcov(void) {
  return false;
}

const uint8_t *kiln_edges_map(void) {
  return NULL;
}

void kiln_edges_reset(void) {}

#endif
