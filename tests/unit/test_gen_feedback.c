/* The generator's genomes, mutations and coverage cells: a genome replays to the same graph;
 * each mutation gives a valid, related graph; the cells name what a graph reached; the
 * schema-driven choices reach every enumerated attribute value and absent attribute of the
 * universe (but the ones excluded on purpose). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops.h"
#include "verify/gen/gen.h"

static char *graph_text(const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  return b.data;
}

static void opts(kiln_gen_opts *o) {
  kiln_gen_opts_init(o);
  o->max_nodes = 14;
  o->check_inputs = false;
}

/* A fresh case and the replay of its genome are the same graph with the same inputs. */
static void test_replay(void) {
  kiln_gen_opts o;
  opts(&o);
  for (uint64_t s = 0; s < 60; s++) {
    kiln_gen_case a, b;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(21, s), &a));
    CHECK(a.genome.n >= 1);
    CHECK_OK(kiln_gen_from_genome(&o, &a.genome, &b));
    char *ta = graph_text(a.g), *tb = b.g ? graph_text(b.g) : NULL;
    CHECK(tb && !strcmp(ta, tb));
    CHECK(a.n_in == b.n_in);
    for (int i = 0; i < a.n_in && i < b.n_in; i++)
      CHECK(
          kiln_tensor_nbytes(a.inputs[i]->t) == kiln_tensor_nbytes(b.inputs[i]->t) &&
          !memcmp(a.inputs[i]->t->data, b.inputs[i]->t->data, kiln_tensor_nbytes(a.inputs[i]->t)));
    free(ta), free(tb);
    kiln_gen_case_free(&a), kiln_gen_case_free(&b);
  }
}

/* Each kind of mutation applied alone: the mutated genome builds a valid graph (the reference
 * runs it) that differs from the original in most draws. */
static void test_mutations(void) {
  kiln_gen_opts o;
  opts(&o);
  for (int kind = 0; kind < KILN_GEN_MUT_COUNT; kind++) {
    int valid = 0, differ = 0, tried = 0;
    for (uint64_t s = 0; s < 100; s++) { /* (the share that differs needs a sample this large) */
      kiln_gen_case a, b;
      CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(5, s), &a));
      kiln_gen_genome m;
      int kinds[KILN_GEN_MUT_COUNT] = {0};
      /* draw until the mutation of this kind comes up (mutate picks kinds at random) */
      for (uint64_t t = 0; t < 200; t++) {
        memset(kinds, 0, sizeof kinds);
        kiln_gen_mutate(&o, &a.genome, &a.genome, s * 1000 + t, 1, &m, kinds);
        if (kinds[kind]) break;
      }
      if (!kinds[kind]) {
        kiln_gen_case_free(&a);
        continue;
      }
      tried++;
      CHECK_OK(kiln_gen_from_genome(&o, &m, &b));
      if (b.g) {
        kiln_status st = kiln_ops_validate_model(b.g);
        valid += !st;
        kiln_status_free(st);
        char *ta = graph_text(a.g), *tb = graph_text(b.g);
        differ += strcmp(ta, tb) != 0;
        free(ta), free(tb);
      }
      kiln_gen_case_free(&a), kiln_gen_case_free(&b);
    }
    fprintf(stderr, "mutation %s: %d tried, %d valid, %d differ\n", kiln_gen_mutation_names[kind],
            tried, valid, differ);
    CHECK(tried >= 75 && valid * 100 >= tried * 95);
    /* most change the graph; a redraw of one aspect of a node (its attributes, dtypes or new
     * shapes) may give the same node, or touch a node without that aspect; an inserted step is
     * dropped when its builder finds no operand or inference refuses it (about a third of
     * the draws, as for any new step) */
    bool aspect =
        kind == KILN_GEN_MUT_ATTR || kind == KILN_GEN_MUT_TYPE || kind == KILN_GEN_MUT_SHAPE;
    CHECK(aspect                        ? differ * 4 >= tried
          : kind == KILN_GEN_MUT_INSERT ? differ * 5 >= tried * 3
                                        : differ * 3 >= tried * 2);
  }
}

typedef struct cells {
  KILN_VEC(char *) keys;
} cells;

static void collect(void *user, const char *key) {
  cells *c = user;
  for (int i = 0; i < c->keys.len; i++)
    if (!strcmp(c->keys.data[i], key)) return;
  kiln_vec_push(&c->keys, kiln_xstrdup(key));
}

static bool has(const cells *c, const char *key) {
  for (int i = 0; i < c->keys.len; i++)
    if (!strcmp(c->keys.data[i], key)) return true;
  return false;
}

static void cells_free(cells *c) {
  for (int i = 0; i < c->keys.len; i++) free(c->keys.data[i]);
  kiln_vec_free(&c->keys);
}

/* The cells of a written graph: op, attribute classes (enumerated value, absent, negative
 * axis), dtype, rank, broadcast form. */
static void test_cells(void) {
  const char *text =
      "graph @g(%x: f16[1,2,5,5], %w: f16[3,2,2,2], %b: f16[5]) -> (%y: ?, %z: ?) {\n"
      "  opset \"\" 18\n"
      "  %y = Conv(%x, %w) {auto_pad=\"SAME_LOWER\", group=1}\n"
      "  %z = Add(%x, %b)\n"
      "  %s = Softmax(%x) {axis=-1}\n"
      "  return %y, %z\n}\n";
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "t", &g));
  CHECK_OK(kiln_ops_infer_graph(g));
  cells c = {0};
  kiln_gen_cells(g, 18, collect, &c);
  CHECK(has(&c, "op:Conv"));
  CHECK(has(&c, "attr:Conv.auto_pad=SAME_LOWER"));
  CHECK(has(&c, "attr:Conv.strides=absent"));
  CHECK(has(&c, "attr:Conv.group=1"));
  CHECK(has(&c, "dtype:Conv=f16"));
  CHECK(has(&c, "rank:Conv=4"));
  CHECK(has(&c, "bcast:Add=lower-rank"));
  CHECK(has(&c, "attr:Softmax.axis=-1"));
  CHECK(!has(&c, "attr:Conv.auto_pad=absent"));
  cells_free(&c);
  kiln_graph_free(g);
}

/* Over a few thousand graphs (builders only, no input search), the schema-driven choices reach
 * nearly every cell of the universe: every auto_pad value of Conv and the pools, every Pad
 * mode, every scatter reduction, absent attributes. */
static void test_universe_reached(void) {
  cells u = {0}, got = {0};
  kiln_gen_cell_universe(collect, &u);
  CHECK(has(&u, "attr:Conv.auto_pad=VALID"));
  CHECK(has(&u, "attr:Pad.mode=wrap"));
  CHECK(kiln_gen_cell_excluded("attr:TopK.sorted=0") != NULL);
  kiln_gen_opts o;
  opts(&o);
  o.max_nodes = 20;
  for (uint64_t s = 0; s < 3000; s++) {
    kiln_gen_case c;
    CHECK_OK(kiln_gen_model(&o, kiln_gen_seed(77, s), &c));
    if (c.g) kiln_gen_cells(c.g, c.opset, collect, &got);
    kiln_gen_case_free(&c);
  }
  int total = 0, reached = 0;
  for (int i = 0; i < u.keys.len; i++) {
    if (kiln_gen_cell_excluded(u.keys.data[i])) continue;
    total++;
    if (has(&got, u.keys.data[i])) reached++;
    else fprintf(stderr, "not reached: %s\n", u.keys.data[i]);
  }
  fprintf(stderr, "universe: %d of %d cells reached in 3000 graphs\n", reached, total);
  CHECK(reached * 100 >= total * 90);
  static const char *const must[] = {
      "attr:Conv.auto_pad=SAME_LOWER",
      "attr:Conv.auto_pad=VALID",
      "attr:MaxPool.auto_pad=SAME_UPPER",
      "attr:AveragePool.auto_pad=NOTSET",
      "attr:Pad.mode=reflect",
      "attr:Pad.mode=edge",
      "attr:ScatterElements.reduction=mul",
      "attr:ScatterND.reduction=min",
      "attr:ReduceSum.keepdims=absent",
      "attr:Gelu.approximate=tanh",
      "attr:LSTM.direction=bidirectional",
      "attr:GRU.direction=reverse",
      "attr:RNN.direction=forward",
  };
  for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
    if (!has(&got, must[i])) fprintf(stderr, "missing: %s\n", must[i]);
    CHECK(has(&got, must[i]));
  }
  cells_free(&u), cells_free(&got);
}

TEST_MAIN(T(test_replay), T(test_mutations), T(test_cells), T(test_universe_reached))
