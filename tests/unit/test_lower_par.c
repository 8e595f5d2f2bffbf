/* Which loops the lowering runs on threads: small elementwise and reduction kernels stay on
 * one thread (starting threads would cost more than the work), large ones split. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"

static int count_parallel(const kiln_tblock *b) {
  int n = 0;
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    n += s->kind == KILN_TS_FOR && s->loop == KILN_LOOP_PARALLEL;
    n += count_parallel(&s->body) + count_parallel(&s->orelse);
  }
  return n;
}

/* Parallel loops in the kernels of `y = OP(x)` (plus `, x` for binary ops) on f32[R,C]
 * lowered for two threads, or -1 on an error. */
static int parallel_loops(const char *op, bool binary, int rows, int cols) {
  char text[256];
  snprintf(text, sizeof text,
           "graph @m(%%x: f32[%d,%d]) -> (%%y: f32[%d,%d]) {\n opset \"\" 17\n"
           " %%y = %s(%%x%s) : f32[%d,%d]\n return %%y\n}\n",
           rows, cols, rows, cols, op, binary ? ", %x" : "", rows, cols);
  kiln_graph *g = NULL;
  kiln_program *p = NULL;
  int n = -1;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2};
  if (!kiln_graph_parse(text, "test", &g) && !kiln_ops_infer_graph(g) && !kiln_lower(g, &lo, &p) &&
      p->n_fallback == 0) {
    n = 0;
    for (int i = 0; i < p->module->kernels.len; i++)
      n += count_parallel(&p->module->kernels.data[i]->body);
  }
  kiln_program_free(p);
  kiln_graph_free(g);
  return n;
}

static void test_elementwise_threads(void) {
  CHECK(parallel_loops("Add", true, 32, 128) == 0);   /* 4096 elements */
  CHECK(parallel_loops("Erf", false, 1, 16384) == 0); /* rank-2 with one row */
  CHECK(parallel_loops("Add", true, 256, 256) == 1);
  CHECK(parallel_loops("Tanh", false, 64, 1024) == 1);
}

static void test_reduction_threads(void) {
  CHECK(parallel_loops("Softmax", false, 32, 16) == 0);
  CHECK(parallel_loops("Softmax", false, 512, 128) == 1);
}

TEST_MAIN(T(test_elementwise_threads), T(test_reduction_threads))
