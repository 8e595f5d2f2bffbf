/* The input search of the generator: draws every graph input from its domain and keeps the
 * first draw on which the reference is finite and stable (kiln_vref_compute reports no
 * non-finite and no unstable element). Each retry halves the range of the inputs whose
 * domain allows it (exp, pow and products overflow less; near-ties move). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_internal.h"

static const gen_val *find_val(const gen *G, const char *name) {
  for (int i = 0; i < G->vals.len; i++)
    if (G->vals.data[i].is_input && !strcmp(G->vals.data[i].name, name)) return &G->vals.data[i];
  return NULL;
}

static kiln_status draw_input(gen *G, const kiln_value *in, double scale, kiln_val **out) {
  const gen_val *gv = find_val(G, in->name);
  gen_dom dom = gv ? gv->dom : DOM_ANY;
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < in->type.rank; d++)
    dims[d] = in->type.dims[d].value >= 0 ? in->type.dims[d].value : G->sym_n;
  kiln_tensor *t;
  KILN_TRY(kiln_tensor_new(in->type.dtype, in->type.rank, dims, &t));
  for (int64_t i = 0; i < t->numel; i++)
    kiln_store_f64(t->dtype, t->data, (size_t)i, kiln_gen_draw(&G->rng, t->dtype, dom, scale));
  *out = kiln_val_tensor(t);
  return KILN_OK;
}

static void free_inputs(kiln_gen_case *c) {
  if (!c->inputs) return;
  for (int i = 0; i < c->n_in; i++) kiln_val_free(c->inputs[i]);
  free(c->inputs);
  c->inputs = NULL;
}

static kiln_status draw_all(gen *G, kiln_gen_case *c, double scale) {
  const kiln_graph *g = c->g;
  c->n_in = g->inputs.len;
  c->inputs = kiln_xcalloc((size_t)c->n_in + 1, sizeof *c->inputs);
  for (int i = 0; i < c->n_in; i++) {
    kiln_status st = draw_input(G, &g->values.data[g->inputs.data[i]], scale, &c->inputs[i]);
    if (st) {
      free_inputs(c);
      return st;
    }
  }
  return KILN_OK;
}

kiln_status kiln_gen_inputs(gen *G, kiln_gen_case *c) {
  int tries = G->o->input_tries < 1 ? 1 : G->o->input_tries;
  double scale = 1;
  for (int t = 0; t < tries; t++, scale *= t % 2 ? 1 : 0.5) {
    KILN_TRY(draw_all(G, c, scale));
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
