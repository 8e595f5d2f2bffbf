/* The generator's structures aimed at the runtime (gen_ops_rt.c) and its near-copies of free
 * strings (gen_dup.c): shapes known only at run time hold the values the builder chose (the
 * reference runs the graphs), one storage read through a value and a view of it in one
 * elementwise node, and Einsum copies whose equation differs. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "verify/gen/gen.h"

enum { N = 120 };

static bool is_view(kiln_op op) {
  return op == KILN_OP_Reshape || op == KILN_OP_Unsqueeze || op == KILN_OP_Squeeze ||
         op == KILN_OP_Flatten || op == KILN_OP_Identity || op == KILN_OP_Expand;
}

/* The node defining value v, NULL for a graph input or constant. */
static const kiln_node *producer(const kiln_graph *g, int v) {
  for (int i = 0; i < g->nodes.len; i++)
    for (int k = 0; k < g->nodes.data[i].n_outputs; k++)
      if (g->nodes.data[i].outputs[k] == v) return &g->nodes.data[i];
  return NULL;
}

/* Whether v is computed from a graph input with no constant or node in between other than
 * Cast and Concat (a shape operand known only at run time). */
static bool from_input(const kiln_graph *g, int v) {
  if (g->values.data[v].kind == KILN_VALUE_INPUT) return true;
  const kiln_node *p = producer(g, v);
  if (!p || (p->op != KILN_OP_Cast && p->op != KILN_OP_Concat)) return false;
  for (int k = 0; k < p->n_inputs; k++)
    if (p->inputs[k] >= 0 && from_input(g, p->inputs[k])) return true;
  return false;
}

static void test_runtime_shapes(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = "(run-time shapes)";
  int usable = 0, runtime = 0;
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(11, s), &c));
    if (c.status != KILN_GEN_OK)
      fprintf(stderr, "seed %llu: status %d %s\n", (unsigned long long)s, c.status, c.note);
    usable += c.status == KILN_GEN_OK;
    bool rt = false;
    for (int i = 0; c.g && i < c.g->nodes.len; i++) {
      const kiln_node *n = &c.g->nodes.data[i];
      bool shaped = n->op == KILN_OP_Reshape || n->op == KILN_OP_Expand || n->op == KILN_OP_Tile ||
                    n->op == KILN_OP_Slice;
      if (shaped && n->n_inputs >= 2 && from_input(c.g, n->inputs[1])) rt = true;
    }
    runtime += rt;
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "run-time shapes: %d of %d graphs usable, %d with a run-time shape operand\n",
          usable, N, runtime);
  CHECK(usable * 100 >= N * 95); /* the fixed inputs hold shapes the reference accepts */
  CHECK(runtime * 10 >= N * 8);  /* the others: NonZero indices reshaped by their own Shape */
}

/* Whether v is computed from a Shape node through Gather, Slice, Concat and Shape only. */
static bool from_shape(const kiln_graph *g, int v) {
  const kiln_node *p = producer(g, v);
  if (!p) return false;
  if (p->op == KILN_OP_Shape) return true;
  if (p->op != KILN_OP_Gather && p->op != KILN_OP_Slice && p->op != KILN_OP_Concat) return false;
  for (int k = 0; k < (p->op == KILN_OP_Concat ? p->n_inputs : 1); k++)
    if (p->inputs[k] < 0 || !from_shape(g, p->inputs[k])) return false;
  return true;
}

/* A run-time shape read back: Reshape(y, Concat(Gather/Slice of Shape(y))) with a Slice
 * (or Shape with start) and a Gather among the pieces now and then; the reference runs them. */
static void test_shape_arith(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = "(run-time shapes)";
  int usable = 0, arith = 0, sliced = 0, gathered = 0;
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(14, s), &c));
    usable += c.status == KILN_GEN_OK;
    bool found = false, sl = false, ga = false;
    for (int i = 0; c.g && i < c.g->nodes.len; i++) {
      const kiln_node *n = &c.g->nodes.data[i];
      if (n->op == KILN_OP_Reshape && n->n_inputs == 2 && from_shape(c.g, n->inputs[1]))
        found = true;
      if (n->op == KILN_OP_Slice && n->inputs[0] >= 0 && producer(c.g, n->inputs[0]) &&
          producer(c.g, n->inputs[0])->op == KILN_OP_Shape)
        sl = true;
      if (n->op == KILN_OP_Gather && n->inputs[0] >= 0 && producer(c.g, n->inputs[0]) &&
          producer(c.g, n->inputs[0])->op == KILN_OP_Shape)
        ga = true;
      if (n->op == KILN_OP_Shape && n->n_attrs > 0) sl = true;
    }
    if (getenv("SHOW_ARITH") && found && c.g) {
      kiln_strbuf t = {0};
      kiln_graph_print(c.g, &t, 8);
      fprintf(stderr, "%s\n", t.data);
      kiln_strbuf_free(&t);
    }
    arith += found, sliced += found && sl, gathered += found && ga;
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "shape arithmetic: %d of %d graphs (%d usable), %d with a slice, %d a gather\n",
          arith, N, usable, sliced, gathered);
  CHECK(usable * 100 >= N * 95);
  CHECK(arith * 10 >= N);
  CHECK(sliced >= 3 && gathered >= 3);
}

static void test_aliases(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = "(aliases)";
  int both = 0;
  for (uint64_t s = 0; s < N; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(12, s), &c));
    bool found = false;
    for (int i = 0; c.g && i < c.g->nodes.len && !found; i++) {
      const kiln_node *n = &c.g->nodes.data[i];
      if (n->n_inputs != 2 || n->inputs[0] == n->inputs[1]) continue;
      for (int k = 0; k < 2 && !found; k++) {
        const kiln_node *p = producer(c.g, n->inputs[k]);
        found = p && is_view(p->op) && p->inputs[0] == n->inputs[1 - k];
      }
    }
    both += found;
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "aliases: %d of %d graphs read a value and a view of it in one node\n", both, N);
  CHECK(both * 10 >= N * 8);
}

static void test_einsum_near_copies(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = "Einsum,(duplicate)";
  o.check_inputs = false;
  int pairs = 0, prefix = 0;
  for (uint64_t s = 0; s < 400; s++) {
    kiln_gen_case c;
    kiln_status st = kiln_gen_model(&o, kiln_gen_seed(13, s), &c);
    if (st) { /* an opset before Einsum's (12) leaves no op to draw */
      kiln_status_free(st);
      continue;
    }
    for (int i = 0; c.g && i < c.g->nodes.len; i++)
      for (int j = 0; j < i; j++) {
        const kiln_node *a = &c.g->nodes.data[j], *b = &c.g->nodes.data[i];
        if (a->op != KILN_OP_Einsum || b->op != KILN_OP_Einsum || a->n_inputs != b->n_inputs ||
            memcmp(a->inputs, b->inputs, sizeof(int) * (size_t)a->n_inputs))
          continue;
        const char *ea = a->attrs[0].s, *eb = b->attrs[0].s;
        if (!strcmp(ea, eb)) continue;
        pairs++;
        prefix += !strncmp(ea, eb, strlen(ea)) || !strncmp(ea, eb, strlen(eb));
      }
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "Einsum near-copies: %d pairs, %d where one equation extends the other\n", pairs,
          prefix);
  CHECK(pairs >= 10);
  CHECK(prefix >= 3);
}

/* The direction of a recurrent op in a near-copy: forward and reverse swapped, never to or from
 * bidirectional (whose weights have another shape, which inference does not check). */
static const char *direction_of(const kiln_node *n) {
  const kiln_attr *a = kiln_node_attr(n, "direction");
  return a ? a->s : "forward";
}

static void test_rnn_near_copies(void) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = "RNN,GRU,LSTM,(duplicate)";
  o.check_inputs = false;
  int pairs = 0, turned = 0;
  for (uint64_t s = 0; s < 400; s++) {
    kiln_gen_case c;
    kiln_status st = kiln_gen_model(&o, kiln_gen_seed(14, s), &c);
    if (st) {
      kiln_status_free(st);
      continue;
    }
    for (int i = 0; c.g && i < c.g->nodes.len; i++)
      for (int j = 0; j < i; j++) {
        const kiln_node *a = &c.g->nodes.data[j], *b = &c.g->nodes.data[i];
        if (a->op != b->op || a->n_inputs != b->n_inputs ||
            memcmp(a->inputs, b->inputs, sizeof(int) * (size_t)a->n_inputs))
          continue;
        pairs++;
        const char *da = direction_of(a), *db = direction_of(b);
        if (strcmp(da, db)) turned++;
        CHECK((strcmp(da, "bidirectional") == 0) == (strcmp(db, "bidirectional") == 0));
      }
    kiln_gen_case_free(&c);
  }
  fprintf(stderr, "recurrent near-copies: %d pairs, %d with the direction turned\n", pairs, turned);
  CHECK(turned >= 2);
}

/* Forms drawn since the set M measurement, each at a rate a campaign reaches within seconds:
 * Slice ranges that are empty on an axis, ReduceL1 and ReduceSumSquare of integers, Convs
 * with wide rows, MatMul epilogues that read a residual, casts to float8. */
static int count_forms(const char *ops, uint64_t seed,
                       bool (*hit)(const kiln_graph *, const kiln_node *)) {
  kiln_gen_opts o;
  kiln_gen_opts_init(&o);
  o.ops = ops;
  o.check_inputs = false;
  int n = 0;
  for (uint64_t s = 0; s < 300; s++) {
    kiln_gen_case c;
    kiln_status st = kiln_gen_model(&o, kiln_gen_seed(seed, s), &c);
    if (st) {
      kiln_status_free(st);
      continue;
    }
    for (int i = 0; c.g && i < c.g->nodes.len; i++) n += hit(c.g, &c.g->nodes.data[i]);
    kiln_gen_case_free(&c);
  }
  return n;
}

static const kiln_type *vtype(const kiln_graph *g, int v) {
  return v >= 0 ? &g->values.data[v].type : NULL;
}

static bool empty_slice(const kiln_graph *g, const kiln_node *n) {
  if (n->op != KILN_OP_Slice) return false;
  const kiln_type *x = vtype(g, n->inputs[0]), *y = vtype(g, n->outputs[0]);
  bool in_empty = false, out_empty = false;
  for (int d = 0; d < x->rank; d++) in_empty |= x->dims[d].value == 0;
  for (int d = 0; y && d < y->rank; d++) out_empty |= y->dims[d].value == 0;
  return !in_empty && out_empty;
}

static bool int_l1(const kiln_graph *g, const kiln_node *n) {
  return (n->op == KILN_OP_ReduceL1 || n->op == KILN_OP_ReduceSumSquare) &&
         kiln_dtype_is_int(vtype(g, n->inputs[0])->dtype);
}

static bool wide_conv(const kiln_graph *g, const kiln_node *n) {
  const kiln_type *x = n->op == KILN_OP_Conv ? vtype(g, n->inputs[0]) : NULL;
  return x && x->rank >= 3 && x->dims[x->rank - 1].value >= 16;
}

static bool residual(const kiln_graph *g, const kiln_node *n) {
  if (n->op != KILN_OP_Add) return false;
  for (int k = 0; k < 2; k++) {
    const kiln_value *v = &g->values.data[n->inputs[k]], *o = &g->values.data[n->inputs[1 - k]];
    if (v->kind == KILN_VALUE_NODE && g->nodes.data[v->node].op == KILN_OP_MatMul &&
        o->kind != KILN_VALUE_CONST && vtype(g, n->inputs[1 - k])->rank == 2)
      return true;
  }
  return false;
}

/* A cast to a float8 type (cast8_island), and of those the ones that saturate (the compiled
 * ones: the others fall back). */
static bool f8_cast(const kiln_graph *g, const kiln_node *n) {
  if (n->op != KILN_OP_Cast) return false;
  kiln_dtype t = vtype(g, n->outputs[0])->dtype;
  return t == KILN_F8E4M3FN || t == KILN_F8E4M3FNUZ || t == KILN_F8E5M2 || t == KILN_F8E5M2FNUZ;
}

static bool f8_cast_sat(const kiln_graph *g, const kiln_node *n) {
  const kiln_attr *a = kiln_node_attr(n, "saturate");
  return f8_cast(g, n) && (!a || a->i != 0);
}

/* The structures added after set N: BatchNormalization of a Gemm; an If's result joined
 * elementwise with a value of the same type; an empty Slice of a shape; a diamond's path back
 * (an elementwise node reading a join of a Transpose or ReduceSum and an elementwise member);
 * the value an If reads joined, after it, with a Softmax computed after it. */
static bool gemm_bn(const kiln_graph *g, const kiln_node *n) {
  const kiln_node *p = n->op == KILN_OP_BatchNormalization ? producer(g, n->inputs[0]) : NULL;
  return p && p->op == KILN_OP_Gemm;
}

static bool if_join(const kiln_graph *g, const kiln_node *n) {
  if ((n->op != KILN_OP_Add && n->op != KILN_OP_Or) || n->n_inputs != 2) return false;
  for (int k = 0; k < 2; k++) {
    const kiln_node *p = producer(g, n->inputs[k]);
    if (p && p->op == KILN_OP_If) return true;
  }
  return false;
}

static bool max_of_softmax(const kiln_graph *g, const kiln_node *n) {
  if (n->op != KILN_OP_Max || n->n_inputs != 2) return false;
  const kiln_node *p = producer(g, n->inputs[1]);
  return p && p->op == KILN_OP_Softmax;
}

static bool empty_shape_slice(const kiln_graph *g, const kiln_node *n) {
  const kiln_node *p = n->op == KILN_OP_Slice ? producer(g, n->inputs[0]) : NULL;
  const kiln_type *y = p && p->op == KILN_OP_Shape ? vtype(g, n->outputs[0]) : NULL;
  return y && y->rank == 1 && y->dims[0].value == 0;
}

static bool binary_ew(const kiln_node *n) {
  return n && n->n_inputs == 2 &&
         (n->op == KILN_OP_Add || n->op == KILN_OP_Mul || n->op == KILN_OP_Sub ||
          n->op == KILN_OP_Max);
}

static bool diamond_back(const kiln_graph *g, const kiln_node *n) {
  if (!binary_ew(n)) return false;
  for (int k = 0; k < 2; k++) {
    const kiln_node *c = producer(g, n->inputs[k]);
    if (!binary_ew(c)) continue;
    for (int j = 0; j < 2; j++) {
      const kiln_node *t = producer(g, c->inputs[j]);
      if (t && (t->op == KILN_OP_Transpose || t->op == KILN_OP_ReduceSum)) return true;
    }
  }
  return false;
}

static void test_set_n_forms(void) {
  int bn = count_forms("Gemm", 20, gemm_bn), ij = count_forms("If", 21, if_join),
      ms = count_forms("If", 24, max_of_softmax),
      es = count_forms("(pattern)", 22, empty_shape_slice),
      db = count_forms("(diamond)", 23, diamond_back);
  fprintf(stderr,
          "in 300 graphs each: %d Gemm -> BatchNormalization, %d If results joined, %d empty "
          "Slices of shapes, %d diamond paths back, %d Max of a Softmax after an If\n",
          bn, ij, es, db, ms);
  CHECK(bn >= 20);
  CHECK(ij >= 20);
  CHECK(es >= 2);
  CHECK(db >= 30);
  CHECK(ms >= 20);
}

static void test_widened_forms(void) {
  int e = count_forms("Slice", 15, empty_slice),
      l1 = count_forms("ReduceL1,ReduceSumSquare", 16, int_l1),
      w = count_forms("Conv", 17, wide_conv), r = count_forms("MatMul", 18, residual),
      f8 = count_forms("Cast,Add", 19, f8_cast), f8s = count_forms("Cast,Add", 19, f8_cast_sat);
  fprintf(stderr,
          "in 300 graphs each: %d empty Slices, %d integer L1/SumSquare, %d wide Convs, "
          "%d MatMul residuals, %d float8 casts (%d saturating)\n",
          e, l1, w, r, f8, f8s);
  CHECK(e >= 10);
  CHECK(l1 >= 20);
  CHECK(w >= 20);
  CHECK(r >= 10);
  CHECK(f8s >= 8 && f8 >= f8s);
}

TEST_MAIN(T(test_runtime_shapes), T(test_shape_arith), T(test_aliases), T(test_einsum_near_copies),
          T(test_rnn_near_copies), T(test_widened_forms), T(test_set_n_forms))
