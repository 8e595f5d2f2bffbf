/* The random model generator: determinism, validity rate, op coverage, shards, inputs. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "verify/gen/gen.h"
#include "verify/gen/gen_internal.h"

enum { N_SEEDS = 1000 };

static char *case_text(const kiln_gen_case *c) {
  kiln_strbuf b = {0};
  kiln_graph_print(c->g, &b, -1);
  for (int i = 0; c->inputs && i < c->n_in; i++) {
    const kiln_tensor *t = c->inputs[i]->t;
    const unsigned char *p = t->data;
    for (size_t k = 0; k < kiln_tensor_nbytes(t); k++) kiln_strbuf_printf(&b, "%02x", p[k]);
    kiln_strbuf_printf(&b, "\n");
  }
  return b.data;
}

static void builder_opts(kiln_gen_opts *o) {
  kiln_gen_opts_init(o);
  o->max_nodes = 20;
  o->check_inputs = false;
}

static void test_deterministic(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  for (uint64_t s = 0; s < 20; s++) {
    kiln_gen_case a, b;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(7, s), &a));
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(7, s), &b));
    char *ta = case_text(&a), *tb = case_text(&b);
    CHECK(ta && tb && !strcmp(ta, tb));
    free(ta), free(tb);
    kiln_gen_case_free(&a), kiln_gen_case_free(&b);
  }
  /* neighbouring seeds give different graphs */
  kiln_gen_case a, b;
  CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(7, 0), &a));
  CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(7, 1), &b));
  char *ta = case_text(&a), *tb = case_text(&b);
  CHECK(strcmp(ta, tb) != 0);
  free(ta), free(tb);
  kiln_gen_case_free(&a), kiln_gen_case_free(&b);
}

/* >= 99% of the graphs run in the reference interpreter; every op of the table appears. */
static void test_valid_and_covering(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  int valid = 0, n_ops = kiln_gen_op_count();
  bool *seen = calloc((size_t)n_ops, 1);
  for (uint64_t s = 0; s < N_SEEDS; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(1, s), &c));
    if (!c.g) continue;
    CHECK(c.g->nodes.len >= 1 && c.g->nodes.len <= o.max_nodes);
    kiln_val **outs = calloc((size_t)c.g->outputs.len + 1, sizeof *outs);
    kiln_status st = kiln_ops_validate_model(c.g);
    if (!st) st = kiln_interp_run(c.g, NULL, c.n_in, c.inputs, outs);
    if (!st) valid++;
    else fprintf(stderr, "seed %llu: %s\n", (unsigned long long)s, kiln_status_message(st));
    kiln_status_free(st);
    for (int i = 0; i < c.g->outputs.len; i++) kiln_val_free(outs[i]);
    free(outs);
    for (int n = 0; n < c.g->nodes.len; n++)
      for (int k = 0; k < n_ops; k++)
        if (!strcmp(kiln_gen_op_name(k), c.g->nodes.data[n].op_type)) seen[k] = true;
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "valid: %d of %d\n", valid, N_SEEDS);
  CHECK(valid * 100 >= N_SEEDS * 99);
  for (int k = 0; k < n_ops; k++) {
    const char *name = kiln_gen_op_name(k);
    if (name[0] == '(') continue; /* patterns, not ops */
    if (!seen[k]) fprintf(stderr, "op never generated: %s\n", name);
    CHECK(seen[k]);
  }
  free(seen);
}

/* Shards i/N of a campaign run the graph indices j with j % N == i: together exactly the
 * indices of one run, each once, with the same seeds. */
static void test_shards(void) {
  enum { J = 100, N = 3 };
  int count[J] = {0};
  for (int i = 0; i < N; i++)
    for (uint64_t j = 0; j < J; j++)
      if (kiln_gen_in_shard(j, i, N)) count[j]++;
  for (int j = 0; j < J; j++) CHECK(count[j] == 1);
  CHECK(kiln_gen_seed(5, 3) == kiln_gen_seed(5, 3));
  CHECK(kiln_gen_seed(5, 3) != kiln_gen_seed(5, 4));
  CHECK(kiln_gen_seed(5, 3) != kiln_gen_seed(6, 3));
}

/* With the input search, usable cases have a finite, stable reference. */
static void test_inputs(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.max_nodes = 10;
  int ok = 0, total = 40;
  for (uint64_t s = 0; s < (uint64_t)total; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(3, s), &c));
    CHECK(c.status != KILN_GEN_INVALID);
    if (c.status == KILN_GEN_INVALID)
      fprintf(stderr, "seed %llu invalid: %s\n", (unsigned long long)s, c.note);
    if (c.status == KILN_GEN_OK) {
      ok++;
      kiln_vref *r = NULL;
      CHECK_OK(kiln_vref_compute(c.g, c.n_in, c.inputs, &r));
      CHECK(r && r->n_nonfinite == 0 && r->n_unstable == 0);
      kiln_vref_free(r);
    }
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "usable inputs: %d of %d\n", ok, total);
  CHECK(ok * 10 >= total * 9);
}

/* The ONNX type constraints per op and opset (Relu on ints from opset 14 only, Celu f32
 * only, Sum without ints), and every generated graph keeps them. */
static bool types_ok_text(const char *op, const char *dt, int opset) {
  char text[512], why[160];
  snprintf(
      text, sizeof text,
      "graph @t(%%x: %s[3]) -> (%%y: ?) {\n  opset \"\" %d\n  %%y = %s(%%x)\n  return %%y\n}\n", dt,
      opset, op);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "t.kiln", &g);
  if (!st) st = kiln_ops_infer_graph(g);
  CHECK_OK(st);
  bool ok = g && gen_types_ok(g, opset, why, sizeof why);
  kiln_graph_free(g);
  return ok;
}

static void test_type_constraints(void) {
  CHECK(!types_ok_text("Relu", "i64", 13));
  CHECK(types_ok_text("Relu", "i64", 14));
  CHECK(types_ok_text("Relu", "f16", 13));
  CHECK(!types_ok_text("Celu", "f16", 18));
  CHECK(types_ok_text("Celu", "f32", 18));
  CHECK(!types_ok_text("Sum", "i64", 21));
  CHECK(!types_ok_text("IsInf", "f16", 18));
  CHECK(types_ok_text("IsInf", "f16", 21));
  kiln_gen_opts o;
  builder_opts(&o);
  int bad = 0;
  for (uint64_t s = 0; s < 400; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(11, s), &c));
    char why[160] = "";
    int opset = c.g ? (int)kiln_graph_opset(c.g, "") : 0;
    if (c.g && !gen_types_ok(c.g, opset, why, sizeof why))
      bad++, fprintf(stderr, "seed %llu: %s\n", (unsigned long long)s, why);
    kiln_gen_case_free(&c);
  }
  CHECK(bad == 0);
}

/* The producer node of value v with op `op`, or NULL. */
static const kiln_node *made_by(const kiln_graph *g, int v, kiln_op op) {
  if (v < 0 || g->values.data[v].kind != KILN_VALUE_NODE) return NULL;
  const kiln_node *p = &g->nodes.data[g->values.data[v].node];
  return p->op == op ? p : NULL;
}

static bool is_graph_output(const kiln_graph *g, int v) {
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i] == v) return true;
  return false;
}

/* Pass patterns sit where passes rewrite them: Transpose of an inner Transpose (rank >= 3),
 * MatMul + constant bias, two nodes of one op on one input with other attributes. */
/* Two attributes alike (kind and value). */
static bool attr_same(const kiln_attr *a, const kiln_attr *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind) return false;
  switch (a->kind) {
  case KILN_ATTR_INT: return a->i == b->i;
  case KILN_ATTR_FLOAT: return a->f == b->f;
  case KILN_ATTR_STRING: return !strcmp(a->s, b->s);
  case KILN_ATTR_INTS:
    return a->n == b->n && !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n);
  default: return true;
  }
}

/* A near-copy for cse: one op, the same operands in another order or the same order with
 * attributes that differ (in any attribute of any kind, or one left out). */
static bool near_copy(const kiln_node *e, const kiln_node *n) {
  if (e->op != n->op || e->n_inputs != n->n_inputs || e->n_inputs == 0) return false;
  bool same_order = true, same_set = true;
  for (int k = 0; k < n->n_inputs; k++) {
    same_order = same_order && e->inputs[k] == n->inputs[k];
    bool found = false;
    for (int m = 0; m < n->n_inputs; m++) found = found || e->inputs[m] == n->inputs[k];
    same_set = same_set && found;
  }
  if (!same_set) return false;
  if (!same_order) return true;
  if (e->n_attrs != n->n_attrs) return true;
  for (int k = 0; k < e->n_attrs; k++)
    if (!attr_same(&e->attrs[k], &n->attrs[k])) return true;
  return false;
}

static void test_patterns(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  int tt = 0, mm_bias = 0, near = 0, n = 300;
  for (uint64_t s = 0; s < (uint64_t)n; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(5, s), &c));
    const kiln_graph *g = c.g;
    bool has_tt = false, has_mm = false, has_near = false;
    for (int i = 0; g && i < g->nodes.len; i++) {
      const kiln_node *nd = &g->nodes.data[i];
      int x = nd->n_inputs > 0 ? nd->inputs[0] : -1;
      if (nd->op == KILN_OP_Transpose && made_by(g, x, KILN_OP_Transpose) &&
          !is_graph_output(g, x) && g->values.data[x].type.rank >= 3)
        has_tt = true;
      if (nd->op == KILN_OP_Add && nd->n_inputs == 2)
        for (int k = 0; k < 2; k++)
          if (made_by(g, nd->inputs[k], KILN_OP_MatMul) &&
              g->values.data[nd->inputs[1 - k]].kind == KILN_VALUE_CONST)
            has_mm = true;
      for (int j = 0; j < i; j++) has_near = has_near || near_copy(&g->nodes.data[j], nd);
    }
    tt += has_tt, mm_bias += has_mm, near += has_near;
    kiln_gen_case_free(&c);
  }
  fprintf(stderr,
          "patterns in %d graphs: Transpose chains %d, MatMul + bias %d, near-duplicates %d\n", n,
          tt, mm_bias, near);
  CHECK(tt * 30 >= n); /* >= 3% of the graphs */
  CHECK(mm_bias * 30 >= n);
  CHECK(near * 30 >= n);
}

static void test_bad_ops(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  o.ops = "Relu,NoSuchOp";
  kiln_gen_case c;
  CHECK_ERR(kiln_gen_model(&o, 1, &c), KILN_ERR_INVALID);
  o.ops = "MatMul";
  CHECK_OK(kiln_gen_model(&o, 1, &c));
  bool only = c.g != NULL;
  for (int n = 0; c.g && n < c.g->nodes.len; n++)
    only = only && (!strcmp(c.g->nodes.data[n].op_type, "MatMul") ||
                    !strcmp(c.g->nodes.data[n].op_type, "Add"));
  CHECK(only);
  kiln_gen_case_free(&c);
}

/* About one graph in ten names its nodes with hostile text (comment ends, quotes, line breaks),
 * each name unique; the others leave node names empty. Split draws an empty part now and then. */
static void test_hostile_names_and_empty_parts(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  int named = 0, empty = 0;
  enum { N = 400 };
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(3, s), &c));
    if (!c.g) continue;
    bool any = false, all = true;
    for (int n = 0; n < c.g->nodes.len; n++) {
      const char *name = c.g->nodes.data[n].name;
      bool h = name && name[0];
      any |= h, all &= h;
      for (int m = 0; h && m < n; m++) CHECK(strcmp(name, c.g->nodes.data[m].name) != 0);
    }
    CHECK(any == all);
    named += any;
    for (int v = 0; v < c.g->values.len; v++) {
      const kiln_type *t = &c.g->values.data[v].type;
      for (int d = 0; t->kind == KILN_TYPE_TENSOR && d < t->rank; d++)
        empty += t->dims[d].value == 0;
    }
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "hostile node names: %d of %d graphs; zero dims: %d\n", named, N, empty);
  CHECK(named >= N / 40 && named <= N / 4);
  CHECK(empty > 0);
}

/* If: most draws are kept (a branch whose nodes were untyped, or that returned a node's value,
 * failed the text parser's check of its declared output: 1 If in 16 draws survived); a third
 * of them read a fresh elementwise value that an op after the If reads too. */
static void test_if_kept(void) {
  kiln_gen_opts o;
  builder_opts(&o);
  o.ops = "If,Relu";
  int ifs = 0, graphs = 0, fused = 0;
  for (uint64_t s = 0; s < 200; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(5, s), &c));
    if (!c.g) continue;
    graphs++;
    for (int n = 0; n < c.g->nodes.len; n++) {
      const kiln_node *nd = &c.g->nodes.data[n];
      if (strcmp(nd->op_type, "If")) continue;
      ifs++;
      /* a branch-read value with an elementwise reader in the outer graph after the If */
      const kiln_attr *e = kiln_node_attr(nd, "else_branch");
      const kiln_graph *b = e && e->kind == KILN_ATTR_GRAPH ? e->g : NULL;
      for (int v = 0; b && v < b->values.len; v++) {
        if (b->values.data[v].kind != KILN_VALUE_OUTER) continue;
        int ov = kiln_graph_find(c.g, b->values.data[v].name);
        for (int m = n + 1; ov >= 0 && m < c.g->nodes.len; m++)
          fused += c.g->nodes.data[m].n_inputs == 1 && c.g->nodes.data[m].inputs[0] == ov;
      }
    }
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "If: %d nodes in %d graphs (%d outer values read after it)\n", ifs, graphs,
          fused);
  CHECK(ifs >= graphs / 2);
  CHECK(fused >= ifs / 8);
}

/* Runs `check` on the case of graph `text` (one f32 input of the given dims, status OK) and
 * expects `want`; an INVALID case's note must hold `note`. */
static void check_case(const char *text, int rank, const int64_t *dims,
                       void (*check)(kiln_gen_case *), kiln_gen_status want, const char *note) {
  kiln_gen_case c;
  memset(&c, 0, sizeof c);
  CHECK_OK(kiln_graph_parse(text, "test", &c.g));
  if (!c.g) return;
  CHECK_OK(kiln_ops_infer_graph(c.g));
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, rank, dims, &t));
  c.n_in = 1;
  c.inputs = kiln_xcalloc(1, sizeof *c.inputs);
  c.inputs[0] = kiln_val_tensor(t);
  c.status = KILN_GEN_OK;
  check(&c);
  CHECK(c.status == want);
  if (want == KILN_GEN_INVALID) CHECK(strstr(c.note, note) != NULL);
  kiln_gen_case_free(&c);
}

/* A dead node whose shapes agree only for one extent of N: valid with N symbolic, not with
 * the inputs' N bound (the verifier's reference layer reported such a graph as a failure). */
static void test_bound_check(void) {
  const int64_t dims[2] = {2, 16};
  check_case("graph @b(%x: f32[N,16]) -> (%y: ?) {\n  opset \"\" 17\n"
             "  %y = Relu(%x)\n  %t = Transpose(%x) {perm=[1,0]}\n  %d = Add(%x, %t)\n"
             "  return %y\n}\n",
             2, dims, kiln_gen_check_bound, KILN_GEN_INVALID, "extents bound");
  check_case("graph @b(%x: f32[N,16]) -> (%y: ?) {\n  opset \"\" 17\n"
             "  %y = Relu(%x)\n  %t = Transpose(%x) {perm=[1,0]}\n  return %y\n}\n",
             2, dims, kiln_gen_check_bound, KILN_GEN_OK, NULL);
}

/* A dead Reshape whose -1 meets 0 elements (NonZero of a zero constant finds none): the
 * bounded reference never runs it, the verifier's reference layer refuses it (a false report
 * of a 600-s campaign); the whole-graph check calls the case invalid. */
static void test_whole_graph_check(void) {
  const int64_t dims[1] = {3};
  for (int k = 0; k < 2; k++) {
    char text[512];
    snprintf(text, sizeof text,
             "graph @w(%%x: f32[3]) -> (%%y: ?) {\n  opset \"\" 17\n"
             "  %%z = const i64[1] [%d]\n  %%s = const i64[2] [0, -1]\n  %%y = Relu(%%x)\n"
             "  %%n = NonZero(%%z)\n  %%t = Transpose(%%n)\n  %%d = Reshape(%%t, %%s)\n"
             "  return %%y\n}\n",
             k);
    check_case(text, 1, dims, kiln_gen_check_whole, k == 0 ? KILN_GEN_INVALID : KILN_GEN_OK,
               "cannot infer -1");
  }
}

TEST_MAIN(T(test_deterministic), T(test_valid_and_covering), T(test_shards), T(test_inputs),
          T(test_type_constraints), T(test_patterns), T(test_bad_ops),
          T(test_hostile_names_and_empty_parts), T(test_if_kept), T(test_bound_check),
          T(test_whole_graph_check))
