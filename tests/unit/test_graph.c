/* Graph IR builder: values, nodes, attributes, subgraphs, opsets. */
#include <string.h>

#include "graph/graph.h"
#include "harness.h"

static void test_build(void) {
  kiln_graph *g = kiln_graph_new("g");
  kiln_graph_set_opset(g, "", 17);
  kiln_graph_set_opset(g, "ai.onnx", 18); /* the same domain */
  CHECK(kiln_graph_opset(g, "") == 18 && g->opsets.len == 1);
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 2, (int64_t[]){2, 3}));
  int y = -5;
  CHECK_OK(kiln_graph_add_node(g, "Relu", "", "r", 1, &x, 1, (const char *[]){"y"}, &y));
  CHECK(y >= 0 && g->values.data[y].node == 0 && g->nodes.data[0].op == KILN_OP_Relu);
  CHECK(g->nodes.data[0].opset == 18);
  CHECK_ERR(kiln_graph_add_node(g, "Relu", "", "r2", 1, &x, 1, (const char *[]){"y"}, NULL),
            KILN_ERR_INVALID); /* y defined twice */
  int id;
  CHECK_ERR(kiln_graph_add_input2(g, "x", kiln_type_unknown(), &id), KILN_ERR_INVALID);
  CHECK_ERR(kiln_graph_add_node(g, "Relu", "", "r3", 1, (int[]){999}, 1, NULL, NULL),
            KILN_ERR_INVALID);
  int outs[2];
  CHECK_OK(kiln_graph_add_node(g, "Dropout", "", "d", 1, &y, 2, (const char *[]){"z", ""}, outs));
  CHECK(outs[1] == -1 && kiln_graph_find(g, "z") == outs[0]);
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_free(g);
}

static void test_attrs(void) {
  kiln_graph *g = kiln_graph_new("g");
  int x = kiln_graph_add_input(g, "x", kiln_type_unknown());
  CHECK_OK(kiln_graph_add_node(g, "Transpose", "", "t", 1, &x, 1, (const char *[]){"y"}, NULL));
  kiln_attr *a = kiln_node_add_attr(g, 0, "perm", KILN_ATTR_INTS);
  a->n = 2;
  a->ints = kiln_graph_alloc(g, 2 * sizeof(int64_t));
  a->ints[0] = 1;
  kiln_node_add_attr(g, 0, "alpha", KILN_ATTR_FLOAT)->f = 0.5f;
  const kiln_node *n = &g->nodes.data[0];
  const int64_t *perm;
  int np;
  CHECK_OK(kiln_node_ints(n, "perm", &perm, &np));
  CHECK(np == 2 && perm[0] == 1);
  CHECK_OK(kiln_node_ints(n, "absent", &perm, &np));
  CHECK(np == -1 && perm == NULL);
  int64_t i;
  CHECK_ERR(kiln_node_int(n, "alpha", 0, &i), KILN_ERR_INVALID); /* wrong kind */
  kiln_status st = kiln_node_int(n, "perm", 0, &i);
  CHECK(st && strstr(kiln_status_message(st), "node 't' (Transpose)"));
  kiln_status_free(st);
  float f;
  CHECK_OK(kiln_node_float(n, "alpha", 1, &f));
  CHECK(f == 0.5f);
  kiln_graph_free(g);
}

static void test_subgraph(void) {
  kiln_graph *g = kiln_graph_new("g");
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 0, NULL));
  kiln_graph *body = kiln_graph_new_sub(g, "then");
  int ox = kiln_graph_resolve(body, "x");
  CHECK(ox >= 0 && body->values.data[ox].kind == KILN_VALUE_OUTER &&
        body->values.data[ox].outer == x);
  CHECK(kiln_graph_resolve(body, "x") == ox); /* once */
  CHECK(kiln_graph_resolve(body, "nope") == -1);
  kiln_graph *inner = kiln_graph_new_sub(body, "inner");
  int ix = kiln_graph_resolve(inner, "x");
  CHECK(ix >= 0 && inner->values.data[ix].outer == ox);
  CHECK(kiln_graph_root(inner) == g && g->subgraphs.len == 2);
  kiln_graph_free(g);
}

static void test_consts_and_types(void) {
  kiln_graph *g = kiln_graph_new("g");
  kiln_tensor *t;
  CHECK_OK(kiln_tensor_new(KILN_I64, 1, (int64_t[]){4}, &t));
  int c;
  CHECK_OK(kiln_graph_add_const(g, "c", t, &c));
  CHECK(g->values.data[c].type.kind == KILN_TYPE_TENSOR &&
        kiln_type_is_static(&g->values.data[c].type));
  kiln_tensor *t2;
  CHECK_OK(kiln_tensor_new(KILN_I64, 0, NULL, &t2));
  CHECK_ERR(kiln_graph_add_const(g, "c", t2, &c), KILN_ERR_INVALID); /* t2 still owned */
  kiln_type a = kiln_type_tensor(KILN_F32, 2, (int64_t[]){-1, 3});
  a.dims[0].sym = "batch";
  char buf[64];
  CHECK(!strcmp(kiln_type_str(&a, buf, sizeof buf), "f32[batch,3]"));
  kiln_type b = a;
  CHECK(kiln_type_equal(&a, &b) && !kiln_type_is_static(&a));
  b.dims[0].sym = "n";
  CHECK(!kiln_type_equal(&a, &b));
  CHECK(kiln_op_lookup("", "Conv") == KILN_OP_Conv && kiln_op_lookup("com.x", "Conv") == 0);
  CHECK(!strcmp(kiln_op_family(KILN_OP_MatMul), "nn"));
  kiln_graph_free(g);
}

TEST_MAIN(T(test_build), T(test_attrs), T(test_subgraph), T(test_consts_and_types))
