/* Edge coverage (src/base/edges.h). In a KILN_COVERAGE build the map must stay empty while
 * uninstrumented code runs (the graph parser), fill when a compiler stage runs (the pass
 * pipeline on a small graph), and empty again on reset. In any other build the interface must
 * say it is off: enabled() false, map NULL. */
#include <stdio.h>

#include "base/edges.h"
#include "graph/graph.h"
#include "harness.h"
#include "passes/passes.h"

static const char *const small_graph = "graph @g(%x: f32[2,3]) -> (%y: f32[2,3]) {\n"
                                       "  opset \"\" 17\n"
                                       "  %a = Relu(%x) : f32[2,3]\n"
                                       "  %b = Relu(%x) : f32[2,3]\n"
                                       "  %c = Add(%a, %b) : f32[2,3]\n"
                                       "  %y = Identity(%c) : f32[2,3]\n"
                                       "  return %y\n"
                                       "}\n";

static int edges_hit(void) {
  const uint8_t *m = kiln_edges_map();
  int n = 0;
  for (int i = 0; i < KILN_EDGE_MAP; i++) n += m[i] != 0;
  return n;
}

static void test_disabled_build(void) {
  if (kiln_edges_enabled()) return; /* the coverage build: test_map_follows_the_passes */
  CHECK(kiln_edges_map() == NULL);
  kiln_edges_reset(); /* does nothing, must not crash */
  CHECK(kiln_edges_map() == NULL);
  printf("SKIPPED edge map checks: not a KILN_COVERAGE build (the compiler stages are not "
         "instrumented)\n");
}

static void test_map_follows_the_passes(void) {
  if (!kiln_edges_enabled()) return;
  CHECK(kiln_edges_map() != NULL);
  kiln_edges_reset();
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(small_graph, "edges", &g));
  CHECK(edges_hit() == 0); /* src/graph is not instrumented */
  kiln_pass_opts o = {.pass_limit = -1, .no_fusion = true, .verify_each = true};
  if (g) CHECK_OK(kiln_passes_run(g, &o, NULL));
  int after = edges_hit();
  printf("edges after the pass pipeline: %d of %d\n", after, KILN_EDGE_MAP);
  CHECK(after > 20);
  kiln_edges_reset();
  CHECK(edges_hit() == 0);
  kiln_graph_free(g);
}

TEST_MAIN({"disabled_build", test_disabled_build},
          {"map_follows_the_passes", test_map_follows_the_passes})
