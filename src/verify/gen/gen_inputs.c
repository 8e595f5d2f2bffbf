/* The input search of the generator: draws every graph input from its domain and keeps the
 * first draw on which the reference is finite and stable (kiln_vref_compute reports no
 * non-finite and no unstable element). Each retry halves the range of the inputs whose
 * domain allows it (exp, pow and products overflow less; near-ties move).
 *
 * Edge draws: for a share of the graphs (kiln_gen_opts.edge_share) the search first tries a
 * few draws where some inputs, whole or some of their elements, take values at the edge of
 * their domain (gen_values.c). Such a draw is kept on the same terms; one that the reference
 * cannot run, or finds non-finite or unstable, is dropped, and the ordinary search follows.
 * The edge draws use their own generator, seeded from the graph's without advancing it, so
 * a graph whose edge draws are all dropped gets the inputs it gets without them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

static const gen_val *find_val(const gen *G, const char *name) {
  for (int i = 0; i < G->vals.len; i++)
    if (G->vals.data[i].is_input && !strcmp(G->vals.data[i].name, name)) return &G->vals.data[i];
  return NULL;
}

/* How one draw picks edge values: none (ordinary draws from G->rng), or, from er, each
 * input with chance p_input gets one edge kind, on every element or on some. */
typedef struct edge_plan {
  gen_rng *er;     /* NULL: an ordinary draw */
  double p_input;  /* chance that an input takes edge values */
  unsigned *drawn; /* bits of the kinds written */
} edge_plan;

/* One of the kinds (kinds is not 0), NaN and the infinities with twice the weight of each other
 * kind: every op must propagate them as ONNX defines, and a kernel that tests for them in one place
 * and not another differs only there. */
static int pick_kind(gen_rng *r, unsigned kinds) {
  int n = 0, k[2 * KILN_GEN_EDGE_COUNT];
  for (int i = 0; i < KILN_GEN_EDGE_COUNT; i++)
    for (int w = 0; (kinds & (1u << i)) && w < (i == KILN_GEN_EDGE_NONFINITE ? 2 : 1); w++)
      k[n++] = i;
  return k[gen_int(r, 0, n - 1)];
}

/* The dtype a Cast or CastLike that reads graph input v converts it to (the first such
 * reader of another dtype), or KILN_UNDEFINED. */
static kiln_dtype cast_target(const kiln_graph *g, int v) {
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *n = &g->nodes.data[i];
    if ((n->op != KILN_OP_Cast && n->op != KILN_OP_CastLike) || n->n_inputs < 1 ||
        n->inputs[0] != v || n->n_outputs < 1 || n->outputs[0] < 0)
      continue;
    kiln_dtype to = g->values.data[n->outputs[0]].type.dtype;
    if (to && to != g->values.data[v].type.dtype) return to;
  }
  return KILN_UNDEFINED;
}

/* Writes edge values of one kind into t: every element (a third of the time: a row of
 * values near 100 for a Softmax; of those, three in ten one value everywhere) or each with
 * chance 1/4, at least one. An input a Cast
 * reads takes, most of the time, values at the edge of that Cast (gen_cast_edge), counted as
 * the narrow kind. Of the draws not on every element, about a third put one edge value on
 * whole rows instead of scattered elements. */
static void edge_fill(edge_plan *e, kiln_tensor *t, gen_dom dom, kiln_dtype cast_to) {
  unsigned kinds = gen_edge_kinds(t->dtype, dom);
  if (!kinds || t->numel == 0 || !gen_chance(e->er, e->p_input)) return;
  if (cast_to && kiln_dtype_is_int(t->dtype) && kiln_dtype_size(t->dtype) == 8 &&
      kiln_dtype_is_float(cast_to) && gen_chance(e->er, 0.3)) {
    /* 64-bit integers past 2^53 at a tie of the float type: the rounding a double loses */
    for (int64_t i = 0; i < t->numel; i++)
      if (i == 0 || gen_chance(e->er, 0.5)) gen_cast_edge_wide(e->er, t, i, cast_to, dom);
    *e->drawn |= 1u << KILN_GEN_EDGE_NARROW;
    return;
  }
  if (cast_to && t->dtype != KILN_BOOL && gen_chance(e->er, 0.7)) {
    bool all = gen_chance(e->er, 0.5);
    /* NaNs of any payload now and then where the Cast keeps them (to a float type) */
    bool nan = dom == DOM_ANY && kiln_dtype_is_float(t->dtype) && kiln_dtype_is_float(cast_to) &&
               gen_chance(e->er, 0.3);
    for (int64_t i = 0; i < t->numel; i++)
      if (nan && gen_chance(e->er, 0.3)) gen_edge_nan(e->er, t, i);
      else if (all || i == 0 || gen_chance(e->er, 0.5))
        kiln_store_f64(t->dtype, t->data, (size_t)i, gen_cast_edge(e->er, t->dtype, cast_to, dom));
    *e->drawn |= 1u << KILN_GEN_EDGE_NARROW;
    return;
  }
  int kind = pick_kind(e->er, kinds);
  bool all = gen_chance(e->er, 1.0 / 3);
  int64_t one = gen_int(e->er, 0, (int)(t->numel - 1 < 1 << 20 ? t->numel - 1 : 1 << 20));
  size_t sz = kiln_dtype_size(t->dtype);
  if (all && gen_chance(e->er, 0.3)) { /* one edge value everywhere: a row of minima into a max,
                                          where a reduction's identity shows */
    gen_edge_store(e->er, t, 0, dom, kind);
    for (int64_t i = 1; i < t->numel; i++) memcpy((char *)t->data + (size_t)i * sz, t->data, sz);
  } else if (!all && t->rank >= 1 && gen_chance(e->er, 0.35)) {
    /* one edge value over whole rows (1 to 3 of the last dim, from a row's start): a window
     * of a pool, a row of a reduction or a softmax that holds nothing else (-inf throughout) */
    int64_t row = t->dims[t->rank - 1] > 0 ? t->dims[t->rank - 1] : 1;
    int64_t start = one / row * row, len = row * gen_int(e->er, 1, 3);
    gen_edge_store(e->er, t, start, dom, kind);
    for (int64_t i = start + 1; i < start + len && i < t->numel; i++)
      memcpy((char *)t->data + (size_t)i * sz, (char *)t->data + (size_t)start * sz, sz);
  } else
    for (int64_t i = 0; i < t->numel; i++)
      if (all || i == one || gen_chance(e->er, 0.25)) gen_edge_store(e->er, t, i, dom, kind);
  *e->drawn |= 1u << kind;
}

static kiln_status draw_input(gen *G, const kiln_graph *g, int id, double scale, edge_plan *e,
                              kiln_val **out) {
  const kiln_value *in = &g->values.data[id];
  const gen_val *gv = find_val(G, in->name);
  gen_dom dom = gv ? gv->dom : DOM_ANY;
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < in->type.rank; d++)
    dims[d] = gv && gv->ext[d] > 0 ? gv->ext[d] : gen_dim_extent(G, &in->type.dims[d]);
  kiln_tensor *t;
  KILN_TRY(kiln_tensor_new(in->type.dtype, in->type.rank, dims, &t));
  gen_rng *r = e->er ? e->er : &G->rng;
  if (gv && gv->n_fix > 0) { /* a run-time shape or count: the values the builder chose */
    for (int64_t i = 0; i < t->numel; i++)
      kiln_store_i64(t->dtype, t->data, (size_t)i, gv->fix[i % gv->n_fix]);
    *out = kiln_val_tensor(t);
    return KILN_OK;
  }
  if (gv && gv->ranged) { /* indices or an axis: uniform in their range, never edge values */
    for (int64_t i = 0; i < t->numel; i++)
      kiln_store_i64(t->dtype, t->data, (size_t)i,
                     gv->ilo + (int64_t)(gen_unif(r) * (double)(gv->ihi - gv->ilo + 1)));
    *out = kiln_val_tensor(t);
    return KILN_OK;
  }
  for (int64_t i = 0; i < t->numel; i++)
    kiln_store_f64(t->dtype, t->data, (size_t)i, kiln_gen_draw(r, t->dtype, dom, scale));
  if (e->er) edge_fill(e, t, dom, cast_target(g, id));
  *out = kiln_val_tensor(t);
  return KILN_OK;
}

static void free_inputs(kiln_gen_case *c) {
  if (!c->inputs) return;
  for (int i = 0; i < c->n_in; i++) kiln_val_free(c->inputs[i]);
  free(c->inputs);
  c->inputs = NULL;
}

static kiln_status draw_all(gen *G, kiln_gen_case *c, double scale, edge_plan *e) {
  const kiln_graph *g = c->g;
  c->n_in = g->inputs.len;
  c->inputs = kiln_xcalloc((size_t)c->n_in + 1, sizeof *c->inputs);
  for (int i = 0; i < c->n_in; i++) {
    kiln_status st = draw_input(G, g, g->inputs.data[i], scale, e, &c->inputs[i]);
    if (st) {
      free_inputs(c);
      return st;
    }
  }
  return KILN_OK;
}

/* Edge draws: EDGE_TRIES draws, each with fewer inputs at their edges; the first usable one
 * is kept (c->status OK, c->edges its kinds), else c is left without inputs. */
enum { EDGE_TRIES = 3 };
static kiln_status edge_search(gen *G, kiln_gen_case *c) {
  gen_rng er;
  gen_rng_seed(&er, G->rng.s[0] ^ (G->rng.s[3] << 1) ^ 0x6564676573ull); /* "edges" */
  if (!gen_chance(&er, G->o->edge_share)) return KILN_OK;
  double p = 0.7;
  for (int t = 0; t < EDGE_TRIES; t++, p *= 0.5) {
    unsigned drawn = 0;
    edge_plan e = {&er, p, &drawn};
    KILN_TRY(draw_all(G, c, 1, &e));
    c->input_draws++;
    kiln_vref *r = NULL;
    kiln_status st = kiln_vref_compute(c->g, c->n_in, c->inputs, &r);
    bool usable = !st && r->n_nonfinite == 0 && r->n_unstable == 0;
    kiln_status_free(st);
    kiln_vref_free(r);
    if (usable && drawn) {
      c->status = KILN_GEN_OK;
      c->edges = drawn;
      return KILN_OK;
    }
    free_inputs(c);
  }
  return KILN_OK;
}

static bool has_symbols(const kiln_graph *g) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    for (int d = 0; t->kind == KILN_TYPE_TENSOR && d < t->rank; d++)
      if (t->dims[d].value < 0) return true;
  }
  return false;
}

/* The graph with its symbolic dims bound to the inputs' extents, as the verifier and the
 * compiler see it: inference with symbols accepts a node whose shapes agree only for some
 * extent ([N,16] + [16,N] is [16,16] when N is 16 or 1), and the reference never runs a
 * node no output needs, so such a dead node fails only there. Then the case is invalid. */
void kiln_gen_check_bound(kiln_gen_case *c) {
  if (c->status != KILN_GEN_OK || !has_symbols(c->g)) return;
  kiln_strbuf b = {0};
  kiln_graph_print(c->g, &b, -1);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(b.data, "fuzz.kiln", &g);
  kiln_strbuf_free(&b);
  if (!st) st = kiln_ops_infer_graph(g);
  if (st) { /* not this check's business: the verifier copies graphs through ONNX */
    kiln_status_free(st);
    kiln_graph_free(g);
    return;
  }
  const kiln_tensor **t = kiln_xcalloc((size_t)c->n_in + 1, sizeof *t);
  for (int i = 0; i < c->n_in; i++)
    t[i] = c->inputs[i] && c->inputs[i]->kind == KILN_TYPE_TENSOR ? c->inputs[i]->t : NULL;
  st = kiln_graph_bind_inputs(g, c->n_in, t);
  free(t);
  kiln_graph_free(g);
  if (!st) return;
  snprintf(c->note, sizeof c->note, "with the inputs' extents bound: %s", kiln_status_message(st));
  kiln_status_free(st);
  free_inputs(c);
  c->status = KILN_GEN_INVALID;
}

static kiln_status search_inputs(gen *G, kiln_gen_case *c);

/* The reference interpreter on every node: the bounded reference (kiln_vref_compute) runs
 * only the nodes an output needs, and a dead node that the inputs make invalid (a Reshape
 * whose -1 meets 0 elements after a NonZero found none) passes it, while the verifier's
 * reference layer runs the whole graph and refuses it (a false report of a 600-s campaign).
 * Then the case is invalid. */
void kiln_gen_check_whole(kiln_gen_case *c) {
  if (c->status != KILN_GEN_OK) return;
  kiln_val **outs = kiln_xcalloc((size_t)c->g->outputs.len + 1, sizeof *outs);
  kiln_status st = kiln_interp_run(c->g, NULL, c->n_in, c->inputs, outs);
  for (int i = 0; i < c->g->outputs.len; i++) kiln_val_free(outs[i]);
  free(outs);
  if (!st) return;
  snprintf(c->note, sizeof c->note, "the whole graph in the reference: %s",
           kiln_status_message(st));
  kiln_status_free(st);
  free_inputs(c);
  c->status = KILN_GEN_INVALID;
}

kiln_status kiln_gen_inputs(gen *G, kiln_gen_case *c) {
  KILN_TRY(search_inputs(G, c));
  if (G->o->check_inputs) kiln_gen_check_bound(c);
  if (G->o->check_inputs) kiln_gen_check_whole(c);
  return KILN_OK;
}

static kiln_status search_inputs(gen *G, kiln_gen_case *c) {
  int tries = G->o->input_tries < 1 ? 1 : G->o->input_tries;
  double scale = 1;
  if (G->o->check_inputs && G->o->edge_share > 0) {
    KILN_TRY(edge_search(G, c));
    if (c->inputs) return KILN_OK; /* an edge draw was kept */
  }
  edge_plan none = {NULL, 0, NULL};
  for (int t = 0; t < tries; t++, scale *= t % 2 ? 1 : 0.5) {
    KILN_TRY(draw_all(G, c, scale, &none));
    c->input_draws++;
    if (!G->o->check_inputs) {
      c->status = KILN_GEN_OK;
      return KILN_OK;
    }
    kiln_vref *r = NULL;
    kiln_status st = kiln_vref_compute(c->g, c->n_in, c->inputs, &r);
    if (st) {
      snprintf(c->note, sizeof c->note, "%s", kiln_status_message(st));
      kiln_status_free(st);
      free_inputs(c);
      c->status = KILN_GEN_INVALID;
      return KILN_OK;
    }
    bool usable = r->n_nonfinite == 0 && r->n_unstable == 0;
    if (!usable)
      snprintf(c->note, sizeof c->note, "%lld non-finite, %lld unstable: %s",
               (long long)r->n_nonfinite, (long long)r->n_unstable, r->note);
    kiln_vref_free(r);
    if (usable) {
      c->status = KILN_GEN_OK;
      c->note[0] = 0;
      return KILN_OK;
    }
    free_inputs(c);
  }
  c->status = KILN_GEN_NO_INPUTS;
  return KILN_OK;
}
