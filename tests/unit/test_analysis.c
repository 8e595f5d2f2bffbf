/* Shared graph analyses (graph/analysis.h): outer reads, use counts, groups and their order. */
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "harness.h"

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "input", &g));
  return g;
}

// clang-format off
/* %x read by both branches (twice in all), %k by the nested If through the then branch's
 * own OUTER value; %y by the else branch. */
static const char *IF_GRAPH =
    "graph @main(%c: bool[], %x: f32[2]) -> (%r: f32[2], %y: f32[2]) {\n"
    "  opset \"\" 17\n"
    "  %k = const f32[2] [1, 2]\n"
    "  %y = Neg(%x) : f32[2]\n"
    "  %r = If(%c) {else_branch=graph @else() -> (%y: f32[2]) {\n"
    "    outer %y\n"
    "    return %y\n"
    "  }, then_branch=graph @then() -> (%t: f32[2]) {\n"
    "    outer %x, %k, %c\n"
    "    %t = If(%c) {else_branch=graph @e2() -> (%x: f32[2]) {\n"
    "      outer %x\n"
    "      return %x\n"
    "    }, then_branch=graph @t2() -> (%s: f32[2]) {\n"
    "      outer %x, %k\n"
    "      %s = Add(%x, %k) : f32[2]\n"
    "      return %s\n"
    "    }} : f32[2]\n"
    "    return %t\n"
    "  }} : f32[2]\n"
    "  return %r, %y\n"
    "}\n";
// clang-format on

static void test_outer_reads(void) {
  kiln_graph *g = parse(IF_GRAPH);
  if (!g) return;
  int c = kiln_graph_find(g, "c"), x = kiln_graph_find(g, "x"), k = kiln_graph_find(g, "k");
  int y = kiln_graph_find(g, "y");
  const kiln_node *n_if = &g->nodes.data[1];
  int got[8], n = 0;
  kiln_outer_iter it = kiln_outer_reads(g, n_if);
  for (int v; n < 8 && kiln_outer_next(&it, &v);) {
    CHECK(it.at && it.at->kind == KILN_VALUE_OUTER && it.at->outer == v);
    got[n++] = v;
  }
  /* attributes in their order (else_branch, then_branch), values in theirs */
  CHECK(n == 4 && got[0] == y && got[1] == x && got[2] == k && got[3] == c);
  CHECK(kiln_node_has_subgraph(n_if) && !kiln_node_has_subgraph(&g->nodes.data[0]));
  it = kiln_outer_reads(g, &g->nodes.data[0]); /* Neg: no subgraph */
  int v;
  CHECK(!kiln_outer_next(&it, &v));
  /* a subgraph whose parent is another graph is not read from g */
  kiln_graph *sub = n_if->attrs[0].g;
  kiln_graph *saved = sub->parent;
  sub->parent = NULL;
  it = kiln_outer_reads(g, n_if);
  n = 0;
  while (kiln_outer_next(&it, &v)) n++;
  CHECK(n == 3);
  sub->parent = saved;
  kiln_graph_free(g);
}

static void test_uses(void) {
  kiln_graph *g = parse(IF_GRAPH);
  if (!g) return;
  int c = kiln_graph_find(g, "c"), x = kiln_graph_find(g, "x"), k = kiln_graph_find(g, "k");
  int y = kiln_graph_find(g, "y"), r = kiln_graph_find(g, "r");
  kiln_uses u;
  kiln_uses_compute(g, &u);
  CHECK(u.n_values == g->values.len);
  CHECK(u.count[x] == 2 && u.last[x] == 1 && u.pinned[x] && !u.output[x]); /* Neg, If */
  CHECK(u.count[c] == 2 && u.pinned[c]); /* If's input and the then branch */
  CHECK(u.count[k] == 1 && u.pinned[k] && u.last[k] == 1);
  CHECK(u.count[y] == 2 && u.pinned[y] && u.output[y] && u.last[y] == g->nodes.len);
  CHECK(u.count[r] == 1 && !u.pinned[r] && u.output[r]);
  kiln_uses_free(&u);
  CHECK(u.count == NULL);
  kiln_graph_free(g);
}

/* Group A = {n0, n3} reads n2 (group C), which reads n1 (group B): the order is B, C, A
 * although A's first node comes first; the independent D (n4) comes right after A. */
static void test_group_order(void) {
  const char *text = "graph @g(%x: f32[2]) -> (%d: f32[2], %e: f32[2]) {\n"
                     "  opset \"\" 17\n"
                     "  %a = Neg(%x) : f32[2] group 7\n"
                     "  %b = Exp(%x) : f32[2]\n"
                     "  %c = Relu(%b) : f32[2]\n"
                     "  %d = Add(%a, %c) : f32[2] group 7\n"
                     "  %e = Neg(%x) : f32[2]\n"
                     "  return %d, %e\n"
                     "}\n";
  kiln_graph *g = parse(text);
  if (!g) return;
  kiln_groups s;
  kiln_groups_collect(g, &s);
  CHECK(s.n == 4);
  CHECK(s.of_node[0] == 0 && s.of_node[3] == 0 && s.of_node[1] == 1 && s.of_node[2] == 2);
  CHECK(s.start[1] - s.start[0] == 2 && s.nodes[0] == 0 && s.nodes[1] == 3);
  int order[4];
  CHECK_OK(kiln_groups_order(g, &s, order));
  CHECK(order[0] == 1 && order[1] == 2 && order[2] == 0 && order[3] == 3);
  /* Exp reading %a: group 7 -> Exp -> Relu -> group 7, a group that is not convex */
  kiln_groups_free(&s);
  g->nodes.data[1].inputs[0] = kiln_graph_find(g, "a");
  kiln_groups_collect(g, &s);
  CHECK_ERR(kiln_groups_order(g, &s, order), KILN_ERR_INTERNAL);
  kiln_groups_free(&s);
  kiln_graph_free(g);
}

/* A chain of 200,000 nodes in pairs (100,000 groups): ordered in a blink (the quadratic
 * ordering it replaces took minutes at this size). */
static void test_group_order_large(void) {
  enum { N = 200000 };
  kiln_graph *g = kiln_graph_new("chain");
  int v = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 1, (int64_t[]){2}));
  for (int i = 0; i < N; i++) {
    CHECK_OK(kiln_graph_add_node(g, "Neg", "", "", 1, &v, 1, NULL, &v));
    g->nodes.data[i].group = 1 + i / 2;
  }
  kiln_graph_add_output(g, v);
  kiln_groups s;
  kiln_groups_collect(g, &s);
  CHECK(s.n == N / 2);
  int *order = calloc((size_t)s.n, sizeof *order);
  double t0 = kiln_clock_seconds();
  CHECK_OK(kiln_groups_order(g, &s, order));
  CHECK(kiln_clock_seconds() - t0 < 10.0);
  bool in_order = true;
  for (int i = 0; i < s.n; i++) in_order &= order[i] == i;
  CHECK(in_order);
  free(order);
  kiln_groups_free(&s);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_outer_reads), T(test_uses), T(test_group_order), T(test_group_order_large))
