/* What the differential runner blames: a user's inputs that do not fit the model are bad
 * input (KILN_ERR_INVALID, before anything runs), and a layer that cannot run because the
 * environment failed (no C compiler, a full disk) is a runner error (KILN_ERR_SYSTEM), never a
 * finding: only a layer that ran in a working environment and disagreed, or that Kiln itself
 * rejected, is a failure of the compiler. */
#include <stdlib.h>

#include "runner_internal.h"

kiln_status kiln_vrun_check_inputs(const kiln_graph *g, int n_in, kiln_val *const *inputs) {
  char tb[128];
  if (g->parent) return kiln_invalid("verification takes a root graph");
  if (n_in != g->inputs.len)
    return kiln_invalid("the model takes %d input%s, %d given", g->inputs.len,
                        g->inputs.len == 1 ? "" : "s", n_in);
  const kiln_tensor **t = kiln_xcalloc((size_t)n_in + 1, sizeof *t);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < n_in; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    const kiln_val *x = inputs[i];
    if (!x) st = kiln_invalid("input '%s' is missing", v->name);
    else if (v->type.kind != KILN_TYPE_UNKNOWN && x->kind != v->type.kind)
      st = kiln_invalid("input '%s' is not a %s", v->name, kiln_type_str(&v->type, tb, sizeof tb));
    else t[i] = x->kind == KILN_TYPE_TENSOR ? x->t : NULL;
  }
  if (!st) st = kiln_graph_check_inputs(g, n_in, t);
  free(t);
  return st;
}

/* A layer reads no file of the user's: a file that cannot be read or written there, or a tool
 * that cannot run (KILN_ERR_IO, KILN_ERR_SYSTEM), is the environment's failure. */
static bool is_environment(kiln_status st) {
  kiln_code c = kiln_status_code(st);
  return c == KILN_ERR_SYSTEM || c == KILN_ERR_IO;
}

kiln_status kiln_vrun_take_environment(kiln_vrun *r) {
  kiln_status env = r->env;
  r->env = NULL;
  if (env && r->res->first_failing != r->env_layer) { /* a finding came first: keep it */
    kiln_status_free(env);
    env = KILN_OK;
  }
  return env;
}

bool kiln_vrun_environment(kiln_vrun *r, const kiln_layer_result *l, kiln_status st) {
  if (kiln_mem_limit_error(st)) { /* the user's --max-memory: bad input, not a finding */
    if (!r->env) r->env_layer = (int)(l - r->res->layers.data);
    if (!r->env)
      r->env = kiln_invalid("the %s layer could not run within the memory limit: %s", l->name,
                            kiln_status_message(st));
    return true;
  }
  if (!is_environment(st)) return false;
  if (!r->env) r->env_layer = (int)(l - r->res->layers.data);
  if (!r->env)
    r->env = kiln_error(KILN_ERR_SYSTEM,
                        "the %s layer could not run, the environment failed (a runner error, "
                        "not a failure of the compiler): %s",
                        l->name, kiln_status_message(st));
  return true;
}
