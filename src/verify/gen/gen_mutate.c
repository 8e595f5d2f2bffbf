/* Mutations of a genome (gen.h): the graph-level mutations of a coverage-guided campaign.
 * Each acts on the list of steps: insert a new node draw, delete one, redraw one node's
 * attribute values, dtypes, new shapes or operands, replace its op, splice in steps of another
 * genome, or redraw the graph-level choices. Steps after a changed one are replayed on the
 * changed graph, so they may pick other operands or be skipped when they no longer fit. */
#include <string.h>

#include "gen_internal.h"
#include "ops/op_attrs.h"

const char *const kiln_gen_mutation_names[KILN_GEN_MUT_COUNT] = {
    [KILN_GEN_MUT_INSERT] = "insert",  [KILN_GEN_MUT_DELETE] = "delete",
    [KILN_GEN_MUT_ATTR] = "attribute", [KILN_GEN_MUT_TYPE] = "dtype",
    [KILN_GEN_MUT_SHAPE] = "shape",    [KILN_GEN_MUT_OPERAND] = "operands",
    [KILN_GEN_MUT_OP] = "op",          [KILN_GEN_MUT_SPLICE] = "splice",
    [KILN_GEN_MUT_GRAPH] = "graph",
};

/* An op row drawn with the table's weights times o->op_weights (any opset: a step whose op is
 * newer than the graph's opset is skipped on replay). */
static int draw_row(const kiln_gen_opts *o, gen_rng *r) {
  double total = 0;
  for (int i = 0; i < kiln_gen_n_ops; i++)
    total += kiln_gen_ops[i].weight * (o->op_weights ? o->op_weights[i] : 1.0);
  double x = gen_unif(r) * total;
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if ((x -= kiln_gen_ops[i].weight * (o->op_weights ? o->op_weights[i] : 1.0)) < 0) return i;
  return 0;
}

static kiln_gen_step new_step(const kiln_gen_opts *o, gen_rng *r) {
  kiln_gen_step s = {.op = draw_row(o, r), .seed = gen_rng_next(r)};
  s.attr = (uint32_t)gen_rng_next(r), s.dt = (uint32_t)gen_rng_next(r);
  s.shape = (uint32_t)gen_rng_next(r);
  return s;
}

static void insert_at(kiln_gen_genome *g, int at, const kiln_gen_step *s) {
  if (g->n >= KILN_GEN_MAX_STEPS) return;
  memmove(g->steps + at + 1, g->steps + at, sizeof g->steps[0] * (size_t)(g->n - at));
  g->steps[at] = *s;
  g->n++;
}

static void splice(kiln_gen_genome *g, const kiln_gen_genome *other, gen_rng *r) {
  if (!other || other->n == 0) return;
  int from = gen_int(r, 0, other->n - 1),
      len = gen_int(r, 1, other->n - from < 4 ? other->n - from : 4);
  int at = gen_int(r, 0, g->n);
  for (int k = len - 1; k >= 0; k--) insert_at(g, at, &other->steps[from + k]);
}

/* True when the op of row i has attributes (or is a pattern of several ops). */
static bool has_attrs(int i) {
  kiln_op op = kiln_gen_ops[i].op;
  if (op == KILN_OP_UNKNOWN) return true;
  const kiln_op_schema_version *sv = kiln_op_schema_at(op, 0);
  return sv && sv->attrs && sv->attrs[0].name;
}

/* The step a mutation of kind k changes: any, or for a re-attribute one whose op has
 * attributes (a few draws; the last one when none has). */
static int pick_step(const kiln_gen_genome *g, gen_rng *r, kiln_gen_mutation k) {
  int at = g->n > 0 ? gen_int(r, 0, g->n - 1) : 0;
  for (int t = 0; k == KILN_GEN_MUT_ATTR && t < 8 && g->n > 0 && !has_attrs(g->steps[at].op); t++)
    at = gen_int(r, 0, g->n - 1);
  return at;
}

/* One mutation of kind k. */
static void mutate_one(const kiln_gen_opts *o, kiln_gen_genome *g, const kiln_gen_genome *other,
                       gen_rng *r, kiln_gen_mutation k) {
  int at = pick_step(g, r, k);
  kiln_gen_step *s = g->n > 0 ? &g->steps[at] : NULL;
  switch (k) {
  case KILN_GEN_MUT_INSERT: {
    kiln_gen_step n = new_step(o, r);
    insert_at(g, gen_int(r, 0, g->n), &n);
    break;
  }
  case KILN_GEN_MUT_DELETE:
    if (g->n > 1) {
      memmove(g->steps + at, g->steps + at + 1, sizeof g->steps[0] * (size_t)(g->n - at - 1));
      g->n--;
    }
    break;
  case KILN_GEN_MUT_ATTR:
    if (s) s->attr = (uint32_t)gen_rng_next(r);
    break;
  case KILN_GEN_MUT_TYPE:
    if (s) s->dt = (uint32_t)gen_rng_next(r);
    break;
  case KILN_GEN_MUT_SHAPE:
    if (s) s->shape = (uint32_t)gen_rng_next(r);
    break;
  case KILN_GEN_MUT_OPERAND:
    if (s) s->seed = gen_rng_next(r);
    break;
  case KILN_GEN_MUT_OP:
    if (s) s->op = draw_row(o, r);
    break;
  case KILN_GEN_MUT_SPLICE: splice(g, other, r); break;
  case KILN_GEN_MUT_GRAPH: { /* a seed whose opset holds every step (an old opset drawn for a
                                 graph of newer ops would skip them all) */
    int need = 0;
    for (int i = 0; i < g->n; i++)
      if (g->steps[i].op >= 0 && g->steps[i].op < kiln_gen_n_ops)
        need =
            kiln_gen_ops[g->steps[i].op].since > need ? kiln_gen_ops[g->steps[i].op].since : need;
    for (int t = 0; t < 16; t++)
      if (gen_seed_opset(o, g->seed = gen_rng_next(r)) >= need) break;
    break;
  }
  default: break;
  }
}

void kiln_gen_mutate(const kiln_gen_opts *o, const kiln_gen_genome *in,
                     const kiln_gen_genome *other, uint64_t seed, int n_mut, kiln_gen_genome *out,
                     int *kinds_out) {
  /* the kinds' weights: node-local changes most, whole-graph ones least */
  static const int weight[KILN_GEN_MUT_COUNT] = {
      [KILN_GEN_MUT_INSERT] = 4, [KILN_GEN_MUT_DELETE] = 2, [KILN_GEN_MUT_ATTR] = 5,
      [KILN_GEN_MUT_TYPE] = 3,   [KILN_GEN_MUT_SHAPE] = 3,  [KILN_GEN_MUT_OPERAND] = 3,
      [KILN_GEN_MUT_OP] = 2,     [KILN_GEN_MUT_SPLICE] = 2, [KILN_GEN_MUT_GRAPH] = 1,
  };
  gen_rng r;
  gen_rng_seed(&r, seed);
  *out = *in;
  for (int m = 0; m < n_mut; m++) {
    int total = 0;
    for (int k = 0; k < KILN_GEN_MUT_COUNT; k++) total += weight[k];
    int x = gen_int(&r, 0, total - 1), k = 0;
    while ((x -= weight[k]) >= 0) k++;
    mutate_one(o, out, other, &r, (kiln_gen_mutation)k);
    if (kinds_out) kinds_out[k]++;
  }
}
