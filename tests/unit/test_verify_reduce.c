/* The reducer (src/verify/reduce/reduce*.c) against synthetic predicates: the result is a valid
 * graph on which the predicate still holds, small, and the same on every run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "verify/reduce/reduce.h"

/* Twenty nodes over x, y: f32[4,8] and a constant; three outputs. One Mul. */
static const char *const big_graph =
    "graph @big(%x: f32[4,8], %y: f32[4,8]) -> (%o1: ?, %o2: ?, %o3: ?) {\n"
    "  opset \"\" 17\n"
    "  %c = const f32[8] [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4]\n"
    "  %a1 = Add(%x, %c)\n"
    "  %a2 = Relu(%a1)\n"
    "  %a3 = Sigmoid(%y)\n"
    "  %a4 = Sub(%a2, %a3)\n"
    "  %a5 = Tanh(%a4)\n"
    "  %a6 = Abs(%a5)\n"
    "  %a7 = Neg(%a6)\n"
    "  %a8 = Add(%a7, %x)\n"
    "  %a9 = LeakyRelu(%a8) {alpha=0.25}\n"
    "  %a10 = Exp(%a3)\n"
    "  %a11 = Mul(%a9, %a10)\n"
    "  %a12 = Sqrt(%a10)\n"
    "  %a13 = Add(%a11, %a12)\n"
    "  %a14 = Relu(%a13)\n"
    "  %a15 = Sub(%a14, %y)\n"
    "  %o1 = Identity(%a15)\n"
    "  %a16 = Tanh(%a12)\n"
    "  %o2 = Add(%a16, %a2)\n"
    "  %a17 = ReduceMax(%a5) {axes=[1], keepdims=1}\n"
    "  %o3 = Abs(%a17)\n"
    "  return %o1, %o2, %o3\n"
    "}\n";

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

/* Deterministic data in [-2, 2] for every graph input. */
static kiln_val **make_inputs(const kiln_graph *g) {
  kiln_val **in = calloc((size_t)g->inputs.len + 1, sizeof *in);
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    int64_t dims[KILN_MAX_RANK];
    for (int a = 0; a < t->rank; a++) dims[a] = t->dims[a].value;
    kiln_tensor *x = NULL;
    CHECK_OK(kiln_tensor_new(t->dtype, t->rank, dims, &x));
    for (int64_t k = 0; x && k < x->numel; k++)
      kiln_store_f64(x->dtype, x->data, (size_t)k, ((k * 7 + i * 3) % 9) * 0.5 - 2 + 0.125);
    in[i] = kiln_val_tensor(x);
  }
  return in;
}

static void free_inputs(kiln_val **in, int n) {
  for (int i = 0; i < n; i++) kiln_val_free(in[i]);
  free(in);
}

static int64_t type_numel(const kiln_type *t) {
  int64_t n = 1;
  for (int a = 0; a < t->rank; a++) n *= t->dims[a].value;
  return t->kind == KILN_TYPE_TENSOR && kiln_type_is_static(t) ? n : -1;
}

static int count_op(const kiln_graph *g, const char *op) {
  int k = 0;
  for (int n = 0; n < g->nodes.len; n++) k += strcmp(g->nodes.data[n].op_type, op) == 0;
  return k;
}

/* "the graph holds a Mul whose first input has more than 4 elements" */
static bool has_big_mul(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)n_in, (void)in;
  for (int n = 0; n < g->nodes.len; n++) {
    const kiln_node *nd = &g->nodes.data[n];
    if (nd->op == KILN_OP_Mul && type_numel(&g->values.data[nd->inputs[0]].type) > 4) return true;
  }
  return false;
}

static void check_valid(const kiln_reduce_result *r, kiln_reduce_pred pred, void *user) {
  CHECK(r->reproduced);
  if (!r->g) return;
  CHECK_OK(kiln_graph_verify(r->g));
  CHECK(r->n_in == r->g->inputs.len);
  CHECK(pred(user, r->g, r->n_in, r->inputs));
  kiln_val *outs[8] = {0};
  CHECK(r->g->outputs.len <= 8);
  CHECK_OK(kiln_interp_run(r->g, NULL, r->n_in, r->inputs, outs));
  for (int i = 0; i < r->g->outputs.len && i < 8; i++) kiln_val_free(outs[i]);
}

static kiln_status reduce_text(const char *text, kiln_reduce_pred pred, void *user,
                               const kiln_reduce_opts *o, kiln_reduce_result *r) {
  memset(r, 0, sizeof *r);
  kiln_reduce_opts dflt;
  kiln_reduce_opts_init(&dflt);
  if (!o) o = &dflt;
  kiln_reduce_opts lo = *o;
  if (getenv("KILN_TEST_REDUCE_LOG")) lo.log = stderr; /* to watch the edits */
  o = &lo;
  kiln_graph *g = parse(text);
  if (!g) return kiln_invalid("no graph");
  kiln_val **in = make_inputs(g);
  int n = g->inputs.len;
  kiln_status s = kiln_reduce(g, in, n, pred, user, o, r);
  free_inputs(in, n);
  kiln_graph_free(g);
  return s;
}

static void test_needle_mul(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, has_big_mul, NULL, NULL, &r));
  check_valid(&r, has_big_mul, NULL);
  CHECK(r.before.nodes == 20 && r.before.inputs == 2);
  CHECK(r.after.nodes == 1);
  CHECK(r.after.outputs == 1);
  CHECK(r.after.elements <= 16); /* two inputs of 8 elements at most (4 is too few) */
  CHECK(r.g && count_op(r.g, "Mul") == 1);
  CHECK(!r.stopped);
  CHECK(r.kept > 0 && r.tests > r.kept);
  kiln_reduce_result_free(&r);
}

/* A "miscompile": the candidate's output differs from the reference when every Sub node is
 * computed as Add (as a compiler with a wrong Sub would). */
static bool sub_as_add_differs(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user;
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  for (char *p = b.data; (p = strstr(p, "= Sub(")); p += 6) memcpy(p + 2, "Add", 3);
  kiln_graph *m = NULL;
  kiln_status s = kiln_graph_parse(b.data, "mutant", &m);
  kiln_strbuf_free(&b);
  kiln_val *want[8] = {0}, *got[8] = {0};
  bool differs = false;
  if (!s && g->outputs.len <= 8) s = kiln_interp_run(g, NULL, n_in, in, want);
  if (!s) s = kiln_interp_run(m, NULL, n_in, in, got);
  for (int i = 0; !s && i < g->outputs.len; i++) {
    const kiln_tensor *a = want[i] ? want[i]->t : NULL, *c = got[i] ? got[i]->t : NULL;
    if (!a || !c || a->numel != c->numel) continue;
    for (int64_t k = 0; k < a->numel; k++)
      differs |= fabs(kiln_load_f64(a->dtype, a->data, (size_t)k) -
                      kiln_load_f64(c->dtype, c->data, (size_t)k)) > 1e-6;
  }
  for (int i = 0; i < 8; i++) kiln_val_free(want[i]), kiln_val_free(got[i]);
  if (m) kiln_graph_free(m);
  kiln_status_free(s);
  return differs;
}

static void test_miscompiled_sub(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, sub_as_add_differs, NULL, NULL, &r));
  check_valid(&r, sub_as_add_differs, NULL);
  CHECK(r.after.nodes == 1);
  CHECK(r.g && count_op(r.g, "Sub") == 1);
  CHECK(r.after.elements <= 2); /* two scalars-worth: every extent shrinks to 1 */
  /* the data is as simple as the failure allows: zeros and ones */
  for (int i = 0; i < r.n_in; i++) {
    const kiln_tensor *t = r.inputs[i]->t;
    for (int64_t k = 0; k < t->numel; k++) {
      double x = kiln_load_f64(t->dtype, t->data, (size_t)k);
      CHECK(x == 0 || x == 1);
    }
  }
  kiln_reduce_result_free(&r);
}

static void test_deterministic(void) {
  kiln_reduce_result a, b;
  CHECK_OK(reduce_text(big_graph, sub_as_add_differs, NULL, NULL, &a));
  CHECK_OK(reduce_text(big_graph, sub_as_add_differs, NULL, NULL, &b));
  CHECK(a.g && b.g);
  if (a.g && b.g) {
    kiln_strbuf ta = {0}, tb = {0};
    kiln_graph_print(a.g, &ta, -1);
    kiln_graph_print(b.g, &tb, -1);
    CHECK(strcmp(ta.data, tb.data) == 0);
    CHECK(a.tests == b.tests && a.kept == b.kept);
    kiln_strbuf_free(&ta);
    kiln_strbuf_free(&tb);
  }
  kiln_reduce_result_free(&a);
  kiln_reduce_result_free(&b);
}

static bool never(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)g, (void)n_in, (void)in;
  return false;
}

static void test_not_reproduced(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, never, NULL, NULL, &r));
  CHECK(!r.reproduced && !r.g && !r.inputs && r.tests == 1);
  CHECK(r.after.nodes == 20);
  kiln_reduce_result_free(&r);
}

static int calls;
static bool counting(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  calls++;
  return has_big_mul(user, g, n_in, in);
}

static void test_limits(void) {
  kiln_reduce_opts o;
  kiln_reduce_opts_init(&o);
  o.max_tests = 5;
  kiln_reduce_result r;
  calls = 0;
  CHECK_OK(reduce_text(big_graph, counting, NULL, &o, &r));
  CHECK(r.reproduced && r.stopped);
  CHECK(r.tests <= 5 && calls == r.tests);
  check_valid(&r, has_big_mul, NULL);
  kiln_reduce_result_free(&r);
}

/* "a LeakyRelu is present": its alpha goes (default), the other nodes go. */
static bool has_leaky(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)n_in, (void)in;
  return count_op(g, "LeakyRelu") > 0;
}

static void test_attributes(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, has_leaky, NULL, NULL, &r));
  check_valid(&r, has_leaky, NULL);
  CHECK(r.after.nodes == 1 && r.after.inputs <= 1);
  CHECK(r.after.elements == 1);
  CHECK(r.g && r.g->nodes.len == 1 && r.g->nodes.data[0].n_attrs == 0);
  kiln_reduce_result_free(&r);
}

/* An attribute that the failure needs stays: "a ReduceMax keeps its dims". */
static bool keepdims_sum(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)n_in, (void)in;
  for (int n = 0; n < g->nodes.len; n++) {
    int64_t k = 0;
    kiln_status s = kiln_node_int(&g->nodes.data[n], "keepdims", 1, &k);
    kiln_status_free(s);
    if (g->nodes.data[n].op == KILN_OP_ReduceMax && kiln_node_attr(&g->nodes.data[n], "axes") &&
        !s && k == 1)
      return true;
  }
  return false;
}

static void test_required_attribute_kept(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, keepdims_sum, NULL, NULL, &r));
  check_valid(&r, keepdims_sum, NULL);
  CHECK(r.after.nodes == 1);
  CHECK(r.g && r.g->nodes.len == 1 && kiln_node_attr(&r.g->nodes.data[0], "axes"));
  CHECK(r.g && !kiln_node_attr(&r.g->nodes.data[0], "keepdims")); /* default 1 */
  kiln_reduce_result_free(&r);
}

/* A Reshape whose shape constant holds an extent: the extent shrinks in the data and the
 * shape together. */
static const char *const reshape_graph = "graph @rs(%x: f32[6,8]) -> (%y: ?) {\n"
                                         "  opset \"\" 17\n"
                                         "  %s = const i64[2] [8, 6]\n"
                                         "  %r = Reshape(%x, %s)\n"
                                         "  %y = Softmax(%r) {axis=1}\n"
                                         "  return %y\n"
                                         "}\n";

static bool has_softmax(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)n_in, (void)in;
  return count_op(g, "Softmax") > 0 && count_op(g, "Reshape") > 0;
}

static void test_shape_constants(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(reshape_graph, has_softmax, NULL, NULL, &r));
  check_valid(&r, has_softmax, NULL);
  CHECK(r.after.nodes == 2);
  CHECK(r.after.elements < 10); /* x: 1 element, the shape: 2 */
  kiln_reduce_result_free(&r);
}

/* An If with subgraphs that read outer values: kept or deleted whole. */
static const char *const if_graph =
    "graph @main(%c: bool[], %x: f32[2], %z: f32[2]) -> (%r: f32[2], %w: f32[2]) {\n"
    "  opset \"\" 17\n"
    "  %k = const f32[2] [1, 2]\n"
    "  %y = Neg(%x) : f32[2]\n"
    "  %u = Exp(%z) : f32[2]\n"
    "  %w = Sigmoid(%u) : f32[2]\n"
    "  %r = If(%c) {else_branch=graph @else() -> (%y: f32[2]) {\n"
    "    outer %y\n"
    "    return %y\n"
    "  }, then_branch=graph @then() -> (%t: f32[2]) {\n"
    "    outer %x, %k\n"
    "    %t = Add(%x, %k) : f32[2]\n"
    "    return %t\n"
    "  }} : f32[2]\n"
    "  return %r, %w\n"
    "}\n";

static bool has_if(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)n_in, (void)in;
  return count_op(g, "If") > 0;
}

static void test_subgraphs(void) {
  kiln_graph *g = parse(if_graph);
  if (!g) return;
  kiln_val **in = make_inputs(g);
  kiln_reduce_result r;
  CHECK_OK(kiln_reduce(g, in, g->inputs.len, has_if, NULL, NULL, &r));
  check_valid(&r, has_if, NULL);
  CHECK(r.after.outputs == 1);
  CHECK(r.g && count_op(r.g, "If") == 1 && count_op(r.g, "Sigmoid") == 0);
  CHECK(r.g && r.g->nodes.len <= 2); /* the If, and Neg feeding the else branch (read outside) */
  kiln_reduce_result_free(&r);
  free_inputs(in, g->inputs.len);
  kiln_graph_free(g);
}

static void test_bad_arguments(void) {
  kiln_graph *g = parse(big_graph);
  kiln_reduce_result r;
  CHECK_ERR(kiln_reduce(g, NULL, 1, has_big_mul, NULL, NULL, &r), KILN_ERR_INVALID);
  CHECK_ERR(kiln_reduce(g, NULL, 0, NULL, NULL, NULL, &r), KILN_ERR_INVALID);
  kiln_graph_free(g);
}

static void test_size_str(void) {
  kiln_reduce_size a = {12, 3, 2, 1540}, b = {2, 1, 1, 8};
  char buf[128];
  kiln_reduce_size_str(&a, &b, buf, sizeof buf);
  CHECK(strcmp(buf, "12 nodes -> 2, 3 inputs -> 1, 1540 elements -> 8") == 0);
}

static void test_same_failure(void) {
  const char *rec = "cpu|-|Add,Erf,Mul";
  CHECK(kiln_reduce_same_failure(rec, rec, true));
  CHECK(kiln_reduce_same_failure(rec, rec, false));
  CHECK(kiln_reduce_same_failure(rec, "cpu|-|Erf", false));
  CHECK(kiln_reduce_same_failure(rec, "cpu|-|Add,Mul", false));
  CHECK(!kiln_reduce_same_failure(rec, "cpu|-|Erf", true));
  CHECK(!kiln_reduce_same_failure(rec, "cpu|-|Er", false));      /* names, not prefixes */
  CHECK(!kiln_reduce_same_failure(rec, "cpu|-|Erf,Sub", false)); /* an op not recorded */
  CHECK(!kiln_reduce_same_failure(rec, "tile|-|Erf", false));    /* another layer */
  CHECK(!kiln_reduce_same_failure(rec, "cpu|-|-", false));
  CHECK(!kiln_reduce_same_failure(rec, "", false));
  CHECK(kiln_reduce_same_failure("pass|dce|-", "pass|dce|-", false));
  CHECK(!kiln_reduce_same_failure("pass|dce|-", "pass|cse|-", false));
  CHECK(!kiln_reduce_same_failure("pass|simplify|Sub", "pass|simplify|-", false));
  CHECK(!kiln_reduce_same_failure("pass|simplify|Sub", "pass|simplify2|Sub", false));
  CHECK(!kiln_reduce_same_failure("pass|simplify|Sub", "pass|simplifySub", false));
}

/* With the runner: a case that does not fail is not reduced and nothing is written; a folder
 * without a case is an error. */
static void test_case_that_passes(void) {
  kiln_graph *g = parse(reshape_graph);
  if (!g) return;
  kiln_val **in = make_inputs(g);
  const char *tmp = getenv("TMPDIR");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kiln-reduce-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  CHECK(mkdtemp(dir) != NULL);
  char case_dir[600], out_dir[600];
  snprintf(case_dir, sizeof case_dir, "%s/case", dir);
  snprintf(out_dir, sizeof out_dir, "%s/reduced", dir);
  CHECK_OK(kiln_verify_write_case(case_dir, g, g->inputs.len, in, NULL));
  kiln_verify_opts vo;
  kiln_verify_opts_init(&vo);
  vo.targets[KILN_TARGET_CPU] = false; /* the graph and tile layers are enough here */
  kiln_reduce_result r;
  CHECK_OK(kiln_reduce_case(case_dir, out_dir, &vo, NULL, &r));
  CHECK(!r.reproduced && !r.g);
  CHECK(r.before.nodes == 2 && r.after.nodes == 2);
  struct stat sb;
  CHECK(stat(out_dir, &sb) != 0);
  kiln_reduce_result_free(&r);
  kiln_status st = kiln_reduce_case(out_dir, case_dir, &vo, NULL, &r); /* no case there */
  CHECK(st != KILN_OK && !r.reproduced);
  kiln_status_free(st);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  free_inputs(in, g->inputs.len);
  kiln_graph_free(g);
}

/* A predicate that always holds reduces the graph to no node at all: the views of a graph
 * without nodes copy nothing (was a memcpy from NULL, a UBSan report). */
static bool always(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  (void)user, (void)g, (void)n_in, (void)in;
  return true;
}

static void test_zero_nodes(void) {
  kiln_reduce_result r;
  CHECK_OK(reduce_text(big_graph, always, NULL, NULL, &r));
  CHECK(r.reproduced && r.g && r.after.nodes == 0 && r.after.outputs >= 1);
  CHECK(r.g && r.g->nodes.len == 0);
  kiln_reduce_result_free(&r);
}

TEST_MAIN(T(test_needle_mul), T(test_miscompiled_sub), T(test_deterministic),
          T(test_not_reproduced), T(test_limits), T(test_attributes),
          T(test_required_attribute_kept), T(test_shape_constants), T(test_subgraphs),
          T(test_bad_arguments), T(test_size_str), T(test_same_failure), T(test_case_that_passes),
          T(test_zero_nodes))
