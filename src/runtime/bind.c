/* Binding symbolic dims to concrete extents before compiling. */
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "rt_internal.h"

static void bind_in_graph(kiln_graph *g, const char *sym, int64_t value) {
  for (int v = 0; v < g->values.len; v++) {
    kiln_type *t = &g->values.data[v].type;
    for (int d = 0; d < t->rank && d < KILN_MAX_RANK; d++)
      if (t->dims[d].sym && /* mutant 160: compared as a prefix ("N" binds "NB") */
          !(KILN_MUTANT(160) ? strncmp(t->dims[d].sym, sym, strlen(sym))
                             : strcmp(t->dims[d].sym, sym)))
        t->dims[d] = (kiln_dim){value, NULL};
  }
}

kiln_status kiln_graph_bind_dims(kiln_graph *g, const char *sym, int64_t value) {
  if (!sym || !*sym) return kiln_invalid("binding a dim: empty symbol");
  if (value < 0)
    return kiln_invalid("binding dim '%s': negative extent %lld", sym, (long long)value);
  kiln_graph *root = kiln_graph_root(g);
  bind_in_graph(root, sym, value);
  for (int i = 0; i < root->subgraphs.len; i++) bind_in_graph(root->subgraphs.data[i], sym, value);
  return KILN_OK;
}

/* Node outputs of the root graph forget the symbols left after binding (names the exporter
 * gave to computed dims) so that inference can recompute them from the bound inputs. */
static kiln_status refresh_types(kiln_graph *g) {
  for (int v = 0; v < g->values.len; v++) {
    kiln_value *val = &g->values.data[v];
    if (val->kind != KILN_VALUE_NODE) continue;
    for (int d = 0; d < val->type.rank && d < KILN_MAX_RANK; d++)
      if (val->type.dims[d].sym) val->type.dims[d] = (kiln_dim){-1, NULL};
  }
  return kiln_ops_infer_graph(g);
}

kiln_status kiln_graph_check_input(const kiln_value *v, const kiln_tensor *t) {
  char b1[128], b2[128];
  const kiln_type *ty = &v->type;
  if (ty->kind != KILN_TYPE_TENSOR) return KILN_OK; /* sequences, optionals: not checked here */
  if (!t)
    return kiln_invalid("input '%s' is missing (the model takes %s)", v->name,
                        kiln_type_str(ty, b2, sizeof b2));
  bool ok = ty->dtype == t->dtype && (ty->rank < 0 || ty->rank == t->rank);
  for (int d = 0; ok && ty->rank >= 0 && d < t->rank; d++)
    ok = ty->dims[d].value < 0 || ty->dims[d].value == t->dims[d];
  if (!ok)
    return kiln_invalid("input '%s' is %s, the model takes %s", v->name,
                        kiln_tensor_type_str(t, b1, sizeof b1), kiln_type_str(ty, b2, sizeof b2));
  return KILN_OK;
}

/* The extent of symbol sym at its first use before dim d of input i (inputs in order, dims
 * in order); -1 when none. *at: the input that has it. */
static int64_t first_extent(const kiln_graph *g, int i, int d, const kiln_tensor *const *inputs,
                            const char *sym, int *at) {
  for (int k = 0; k <= i; k++) {
    const kiln_type *ty = &g->values.data[g->inputs.data[k]].type;
    for (int e = 0; inputs[k] && ty->kind == KILN_TYPE_TENSOR && e < ty->rank; e++) {
      if (k == i && e == d) return -1;
      if (ty->dims[e].sym && !strcmp(ty->dims[e].sym, sym)) return *at = k, inputs[k]->dims[e];
    }
  }
  return -1;
}

/* A symbolic dim has one extent: every input that uses it agrees with the first one. */
static kiln_status check_symbols(const kiln_graph *g, int n, const kiln_tensor *const *inputs) {
  for (int i = 0; i < n; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    for (int d = 0; inputs[i] && v->type.kind == KILN_TYPE_TENSOR && d < v->type.rank; d++) {
      const char *sym = v->type.dims[d].sym;
      int at = -1;
      int64_t e = sym ? first_extent(g, i, d, inputs, sym, &at) : -1;
      if (e < 0 || e == inputs[i]->dims[d]) continue;
      return kiln_invalid("input '%s' has %s = %lld (dim %d), input '%s' has %s = %lld: one "
                          "symbol, one extent",
                          v->name, sym, (long long)inputs[i]->dims[d], d,
                          g->values.data[g->inputs.data[at]].name, sym, (long long)e);
    }
  }
  return KILN_OK;
}

kiln_status kiln_graph_check_inputs(const kiln_graph *g, int n, const kiln_tensor *const *inputs) {
  if (n != g->inputs.len)
    return kiln_invalid("the model takes %d input%s, %d given", g->inputs.len,
                        g->inputs.len == 1 ? "" : "s", n);
  for (int i = 0; i < n; i++)
    KILN_TRY(kiln_graph_check_input(&g->values.data[g->inputs.data[i]], inputs[i]));
  return check_symbols(g, n, inputs);
}

static kiln_status bind_one_input(kiln_graph *g, const kiln_value *v, const kiln_tensor *t) {
  for (int d = 0; d < v->type.rank && d < t->rank; d++) {
    const char *sym = v->type.dims[d].sym;
    if (sym) KILN_TRY(kiln_graph_bind_dims(g, sym, t->dims[d])); /* later uses now check */
  }
  return KILN_OK;
}

kiln_status kiln_graph_bind_inputs(kiln_graph *g, int n, const kiln_tensor *const *inputs) {
  KILN_TRY(kiln_graph_check_inputs(g, n, inputs));
  for (int i = 0; i < n; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    if (v->type.kind == KILN_TYPE_TENSOR) KILN_TRY(bind_one_input(g, v, inputs[i]));
  }
  /* unnamed unknown dims of inputs take the tensor's extent */
  for (int i = 0; i < (KILN_MUTANT(124) && n > 1 ? 1 : n); i++) { /* mutant 124: the first only */
    kiln_type *ty = &g->values.data[g->inputs.data[i]].type;
    for (int d = 0; inputs[i] && ty->kind == KILN_TYPE_TENSOR && d < ty->rank; d++)
      if (ty->dims[d].value < 0) /* mutant 224: every unknown dim bound to the extent of dim 0 */
        ty->dims[d] = (kiln_dim){inputs[i]->dims[KILN_MUTANT(224) ? 0 : d], NULL};
  }
  return refresh_types(g);
}

kiln_status kiln_rt_bind_opts(kiln_graph *g, const kiln_compile_opts *o) {
  for (int i = 0; i < o->n_dims; i++)
    KILN_TRY(kiln_graph_bind_dims(g, o->dims[i].sym, o->dims[i].value));
  return o->n_dims ? refresh_types(g) : KILN_OK;
}
