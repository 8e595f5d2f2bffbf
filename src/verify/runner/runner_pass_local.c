/* Local checks of the pass layers: the nodes a pass application changed, against the graph
 * before it.
 *
 * The end-to-end bound of a deep network's outputs is too loose to judge a rewrite late in
 * it. Here the nodes of the graph after application k that the graph before it lacks (by
 * node key: op, attributes, input names, constants, group) are bounded with
 * kiln_vref_compute_local_stored, reading every other value by name from the double-precision
 * reference of the graph before, and constants from the graph after, each with the rounding
 * to its dtype as its error (a folded constant is stored rounded where the graph before kept
 * the value exact; a Cast after it rounds exactly); each value they produce that the graph before
 * also has (same name) is then compared with the before-graph's reference value, rounded
 * to the value's dtype: a rewrite that changes what a value means fails, wherever it sits.
 * Values a rewrite renames are checked end to end only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner_internal.h"

typedef struct by_name {
  const kiln_graph *cur;
  const kiln_vref *prev_ref;
  kiln_strmap prev_ids; /* value name -> id in prev_ref's graph */
} by_name;

static int prev_id(const by_name *b, int v) {
  int64_t id;
  if (!kiln_strmap_get(&b->prev_ids, b->cur->values.data[v].name, &id)) return -1;
  return id >= 0 && id < b->prev_ref->n_values ? (int)id : -1;
}

static kiln_val *lookup(void *user, int v) {
  by_name *b = user;
  int p = prev_id(b, v);
  return p >= 0 ? b->prev_ref->val[p] : NULL;
}

/* A constant of the graph after that the graph before computed (a folded value) carries the
 * bound the graph before had for it: the fold may have computed it in the value's dtype. */
static const kiln_tensor *folded_err(void *user, int v) {
  by_name *b = user;
  int p = prev_id(b, v);
  if (p < 0 || b->cur->values.data[v].kind != KILN_VALUE_CONST) return NULL;
  if (b->prev_ref->g->values.data[p].kind == KILN_VALUE_CONST) return NULL;
  return b->prev_ref->err[p];
}

/* The before-graph's reference value rounded to dtype (a tensor of doubles in, new out). */
static kiln_val *rounded(const kiln_val *x, kiln_dtype dtype) {
  if (!x || x->kind != KILN_TYPE_TENSOR || !x->t) return NULL;
  if (x->t->dtype != KILN_F64 || !kiln_dtype_is_float(dtype) || dtype == KILN_F64) {
    kiln_tensor *c;
    if (kiln_tensor_clone(x->t, &c)) return NULL;
    return kiln_val_tensor(c);
  }
  kiln_tensor *t;
  kiln_status st = kiln_tensor_new(dtype, x->t->rank, x->t->dims, &t);
  if (st) {
    kiln_status_free(st);
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++)
    kiln_store_f64(dtype, t->data, (size_t)i, ((const double *)x->t->data)[i]);
  return kiln_val_tensor(t);
}

/* The nodes of cur whose key prev lacks. Returns their count. */
static int changed_nodes(const kiln_graph *prev, const kiln_graph *cur, bool *mask) {
  kiln_strmap keys = {0};
  for (int i = 0; i < prev->nodes.len; i++) {
    char *k = kiln_vrun_node_key(prev, &prev->nodes.data[i], false);
    kiln_strmap_put(&keys, k, i);
    free(k);
  }
  int n = 0;
  for (int i = 0; i < cur->nodes.len; i++) {
    char *k = kiln_vrun_node_key(cur, &cur->nodes.data[i], false);
    int64_t dummy;
    mask[i] = !kiln_strmap_get(&keys, k, &dummy);
    n += mask[i];
    free(k);
  }
  kiln_strmap_free(&keys);
  return n;
}

/* Checks the values the masked nodes of cur produce; fills l on the first mismatch. */
static void check_outputs(const by_name *b, const kiln_vref *loc, const bool *mask,
                          kiln_layer_result *l, int *checked) {
  const kiln_graph *cur = b->cur;
  for (int ni = 0; ni < cur->nodes.len; ni++) {
    const kiln_node *n = &cur->nodes.data[ni];
    for (int k = 0; mask[ni] && k < n->n_outputs; k++) {
      int v = n->outputs[k], p = v >= 0 ? prev_id(b, v) : -1;
      if (p < 0 || !loc->val[v] || !b->prev_ref->val[p]) continue;
      const kiln_type *ty = &cur->values.data[v].type;
      kiln_val *got = rounded(b->prev_ref->val[p], ty->kind == KILN_TYPE_TENSOR ? ty->dtype : 0);
      if (!got) continue;
      kiln_vcheck c;
      kiln_vref_check(loc, v, got, &c);
      kiln_val_free(got);
      (*checked)++;
      if (c.ok || loc->n_unstable) {
        if (c.ok && c.max_ratio > l->local_ratio) l->local_ratio = c.max_ratio;
        l->local_unstable += !c.ok;
        continue;
      }
      if (c.max_ratio > l->local_ratio) l->local_ratio = c.max_ratio;
      if (l->local_failed) continue;
      l->local_failed = true;
      if (l->ok)
        snprintf(l->msg, sizeof l->msg, "local check of '%s' (%s) against the graph before: %s",
                 cur->values.data[v].name, n->op_type, c.msg);
      l->ok = false;
    }
  }
}

void kiln_vrun_pass_local(kiln_vrun *r, const kiln_graph *prev, const kiln_vref *prev_ref,
                          const kiln_graph *cur, kiln_layer_result *l) {
  (void)r;
  by_name b = {cur, prev_ref, {0}};
  const kiln_graph *rg = prev_ref->g; /* prev itself, or the caller's graph it copies */
  for (int v = 0; v < rg->values.len; v++) kiln_strmap_put(&b.prev_ids, rg->values.data[v].name, v);
  bool *mask = kiln_xcalloc((size_t)cur->nodes.len + 1, sizeof *mask);
  int n = changed_nodes(prev, cur, mask), checked = 0;
  kiln_vref *loc = NULL;
  kiln_status st =
      n ? kiln_vref_compute_local_stored(cur, mask, lookup, folded_err, &b, &loc) : KILN_OK;
  if (st) {
    kiln_status_free(st);
    l->local_unchecked = 1;
  } else if (loc) {
    check_outputs(&b, loc, mask, l, &checked);
  }
  l->local_steps = checked + l->local_unchecked;
  kiln_vref_free(loc);
  free(mask);
  kiln_strmap_free(&b.prev_ids);
}
