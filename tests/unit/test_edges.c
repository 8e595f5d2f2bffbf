/* Edge coverage (src/base/edges.h). In a KILN_COVERAGE build the map must stay empty while
 * uninstrumented code runs (the graph parser), fill when a compiler stage runs (the pass
 * pipeline on a small graph, also in a forked child), and empty again on reset. In any other
 * build (neither KILN_COVERAGE nor KILN_EDGE_FEEDBACK) the interface must
 * say it is off: enabled() false, map NULL. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

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
  printf("SKIPPED edge map checks: neither a KILN_COVERAGE nor a KILN_EDGE_FEEDBACK build (the "
         "compiler stages are not instrumented)\n");
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

/* kiln fuzz verifies each graph in a forked child: the edges the child takes must reach the
 * parent's map (shared memory), or the feedback of an isolated campaign sees none. */
static void test_child_edges_reach_parent(void) {
  if (!kiln_edges_enabled()) return;
  kiln_edges_reset();
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    kiln_graph *g = NULL;
    kiln_pass_opts o = {.pass_limit = -1, .no_fusion = true, .verify_each = true};
    int ok = kiln_graph_parse(small_graph, "edges", &g) == KILN_OK && g &&
             kiln_passes_run(g, &o, NULL) == KILN_OK;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int seen = edges_hit();
  printf("edges of the child seen by the parent: %d\n", seen);
  CHECK(seen > 20);
  kiln_edges_reset();
}

TEST_MAIN({"disabled_build", test_disabled_build},
          {"map_follows_the_passes", test_map_follows_the_passes},
          {"child_edges_reach_parent", test_child_edges_reach_parent})
