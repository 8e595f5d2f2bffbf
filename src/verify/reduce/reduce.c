/* The reducer: current state, candidates built from views, and the driver that runs the
 * edits to a fixed point (see reduce.h and reduce_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reduce_internal.h"

void kiln_reduce_opts_init(kiln_reduce_opts *o) {
  memset(o, 0, sizeof *o);
  o->max_tests = 2000;
  o->max_seconds = 600;
}

/* ---- sizes ---- */

void kiln_reduce_measure(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                         kiln_reduce_size *out) {
  memset(out, 0, sizeof *out);
  out->nodes = g->nodes.len;
  out->inputs = g->inputs.len;
  out->outputs = g->outputs.len;
  for (int i = 0; i < n_in; i++)
    if (inputs[i] && inputs[i]->kind == KILN_TYPE_TENSOR && inputs[i]->t)
      out->elements += inputs[i]->t->numel;
  for (int v = 0; v < g->values.len; v++)
    if (g->values.data[v].kind == KILN_VALUE_CONST && g->values.data[v].data)
      out->elements += g->values.data[v].data->numel;
}

void kiln_reduce_size_str(const kiln_reduce_size *a, const kiln_reduce_size *b, char *buf,
                          size_t len) {
  snprintf(buf, len, "%d node%s -> %d, %d input%s -> %d, %lld element%s -> %lld", a->nodes,
           a->nodes == 1 ? "" : "s", b->nodes, a->inputs, a->inputs == 1 ? "" : "s", b->inputs,
           (long long)a->elements, a->elements == 1 ? "" : "s", (long long)b->elements);
}

void kiln_reduce_result_free(kiln_reduce_result *r) {
  if (r->g) kiln_graph_free(r->g);
  for (int i = 0; r->inputs && i < r->n_in; i++) kiln_val_free(r->inputs[i]);
  free(r->inputs);
  r->g = NULL;
  r->inputs = NULL;
  r->n_in = 0;
}

/* ---- the current state ---- */

typedef KILN_VEC(int) int_vec;

/* Adds the names of the OUTER values of sub (and of its own subgraphs) resolved in root. */
static void collect_outer(const kiln_graph *root, const kiln_graph *sub, int_vec *ids) {
  for (int v = 0; v < sub->values.len; v++) {
    if (sub->values.data[v].kind != KILN_VALUE_OUTER) continue;
    int id = kiln_graph_find(root, sub->values.data[v].name);
    if (id >= 0) kiln_vec_push(ids, id);
  }
  for (int n = 0; n < sub->nodes.len; n++) {
    const kiln_node *nd = &sub->nodes.data[n];
    for (int a = 0; a < nd->n_attrs; a++) {
      const kiln_attr *at = &nd->attrs[a];
      if (at->kind == KILN_ATTR_GRAPH && at->g) collect_outer(root, at->g, ids);
      for (int k = 0; at->kind == KILN_ATTR_GRAPHS && k < at->n; k++)
        if (at->graphs[k]) collect_outer(root, at->graphs[k], ids);
    }
  }
}

static void state_index(red_state *st) {
  const kiln_graph *g = st->g;
  st->sub_reads = kiln_xcalloc((size_t)g->nodes.len + 1, sizeof *st->sub_reads);
  st->sub_read = kiln_xcalloc((size_t)g->values.len + 1, sizeof *st->sub_read);
  for (int n = 0; n < g->nodes.len; n++) {
    const kiln_node *nd = &g->nodes.data[n];
    int_vec ids = {0};
    for (int a = 0; a < nd->n_attrs; a++) {
      const kiln_attr *at = &nd->attrs[a];
      if (at->kind == KILN_ATTR_GRAPH && at->g) collect_outer(g, at->g, &ids);
      for (int k = 0; at->kind == KILN_ATTR_GRAPHS && k < at->n; k++)
        if (at->graphs[k]) collect_outer(g, at->graphs[k], &ids);
    }
    if (!ids.len) continue;
    kiln_vec_push(&ids, -1);
    st->sub_reads[n] = ids.data;
    for (int k = 0; ids.data[k] >= 0; k++) st->sub_read[ids.data[k]] = true;
  }
}

/* Frees what is derived from the graph (reference values, subgraph reads). */
static void state_drop_index(red_state *st) {
  int nv = st->g ? st->g->values.len : 0, nn = st->g ? st->g->nodes.len : 0;
  for (int v = 0; st->ref && v < nv; v++) kiln_val_free(st->ref[v]);
  for (int n = 0; st->sub_reads && n < nn; n++) free(st->sub_reads[n]);
  free(st->ref);
  free(st->sub_reads);
  free(st->sub_read);
  st->ref = NULL;
  st->sub_reads = NULL;
  st->sub_read = NULL;
}

static void state_free(red_state *st) {
  state_drop_index(st);
  for (int i = 0; st->in && i < st->n_in; i++) kiln_val_free(st->in[i]);
  free(st->in);
  if (st->g) kiln_graph_free(st->g);
  memset(st, 0, sizeof *st);
}

/* A shallow copy of g whose arrays the caller replaces: the printer and the interpreter
 * read only the arrays and the module facts. */
static kiln_graph shallow(const kiln_graph *g) {
  kiln_graph t = *g;
  return t;
}

bool red_refs(reducer *R) {
  red_state *st = &R->cur;
  if (st->ref) return true;
  const kiln_graph *g = st->g;
  KILN_VEC(int) outs = {0};
  for (int v = 0; v < g->values.len; v++)
    if (g->values.data[v].kind == KILN_VALUE_NODE &&
        g->values.data[v].type.kind == KILN_TYPE_TENSOR)
      kiln_vec_push(&outs, v);
  kiln_graph t = shallow(g);
  t.outputs.data = outs.data;
  t.outputs.len = t.outputs.cap = outs.len;
  kiln_val **got = kiln_xcalloc((size_t)outs.len + 1, sizeof *got);
  kiln_status s = kiln_interp_run(&t, NULL, st->n_in, st->in, got);
  st->ref = kiln_xcalloc((size_t)g->values.len + 1, sizeof *st->ref);
  for (int k = 0; !s && k < outs.len; k++) st->ref[outs.data[k]] = got[k];
  free(got);
  kiln_vec_free(&outs);
  if (s) kiln_status_free(s);
  return s == KILN_OK;
}

/* ---- views ---- */

void red_view_init(red_view *v, const red_state *st) {
  memset(v, 0, sizeof *v);
  const kiln_graph *g = st->g;
  v->st = st;
  v->n_values = g->values.len;
  v->n_nodes = g->nodes.len;
  v->values = kiln_xmalloc(((size_t)v->n_values + 1) * sizeof *v->values);
  if (v->n_values) /* an empty vector has no data (NULL): no memcpy from it */
    memcpy(v->values, g->values.data, (size_t)v->n_values * sizeof *v->values);
  v->nodes = kiln_xmalloc(((size_t)v->n_nodes + 1) * sizeof *v->nodes);
  if (v->n_nodes) memcpy(v->nodes, g->nodes.data, (size_t)v->n_nodes * sizeof *v->nodes);
  v->drop = kiln_xcalloc((size_t)v->n_nodes + 1, sizeof *v->drop);
  v->repl = kiln_xmalloc(((size_t)v->n_values + 1) * sizeof *v->repl);
  v->data = kiln_xcalloc((size_t)v->n_values + 1, sizeof *v->data);
  for (int i = 0; i < v->n_values; i++) v->repl[i] = i;
  for (int i = 0; i < g->inputs.len; i++) v->data[g->inputs.data[i]] = st->in[i];
  for (int i = 0; i < g->outputs.len; i++) kiln_vec_push(&v->outputs, g->outputs.data[i]);
}

void red_view_free(red_view *v) {
  free(v->values);
  free(v->nodes);
  free(v->drop);
  free(v->repl);
  free(v->data);
  kiln_vec_free(&v->outputs);
  for (int i = 0; i < v->garbage.len; i++) free(v->garbage.data[i]);
  kiln_vec_free(&v->garbage);
  for (int i = 0; i < v->tensors.len; i++) kiln_tensor_free(v->tensors.data[i]);
  kiln_vec_free(&v->tensors);
  for (int i = 0; i < v->vals.len; i++) kiln_val_free(v->vals.data[i]);
  kiln_vec_free(&v->vals);
  memset(v, 0, sizeof *v);
}

void *red_view_alloc(red_view *v, size_t n) {
  void *p = kiln_xcalloc(1, n ? n : 1);
  kiln_vec_push(&v->garbage, p);
  return p;
}

void red_view_own_tensor(red_view *v, kiln_tensor *t) {
  kiln_vec_push(&v->tensors, t);
}

void red_view_own_val(red_view *v, kiln_val *x) {
  kiln_vec_push(&v->vals, x);
}

/* Follows replacements (they always point to earlier values, so chains end). */
static int resolve(const red_view *v, int id) {
  for (int k = 0; id >= 0 && v->repl[id] != id && k < v->n_values; k++) id = v->repl[id];
  return id;
}

/* Marks what the outputs need: live values and nodes. Redirected node inputs are rewritten
 * in the view's node copies. */
static void mark_live(red_view *v, bool *live_v, bool *live_n) {
  const red_state *st = v->st;
  for (int i = 0; i < v->outputs.len; i++) {
    v->outputs.data[i] = resolve(v, v->outputs.data[i]);
    if (v->outputs.data[i] >= 0) live_v[v->outputs.data[i]] = true;
  }
  for (int n = v->n_nodes - 1; n >= 0; n--) {
    kiln_node *nd = &v->nodes[n];
    bool used = false;
    for (int k = 0; k < nd->n_outputs; k++) used |= nd->outputs[k] >= 0 && live_v[nd->outputs[k]];
    if (!used || v->drop[n]) continue;
    live_n[n] = true;
    int *in = red_view_alloc(v, ((size_t)nd->n_inputs + 1) * sizeof *in);
    for (int k = 0; k < nd->n_inputs; k++) {
      in[k] = resolve(v, nd->inputs[k]);
      if (in[k] >= 0) live_v[in[k]] = true;
    }
    nd->inputs = in;
    for (int k = 0; st->sub_reads[n] && st->sub_reads[n][k] >= 0; k++)
      live_v[st->sub_reads[n][k]] = true;
  }
}

typedef KILN_VEC(kiln_node) node_vec;

/* The view after dead code is dropped: its inputs (kept graph inputs, then cut values) and
 * its live nodes, whose output types are cleared to be inferred again (data, constants and
 * attributes decide shapes; values that subgraphs read keep theirs: their outer references
 * carry it). False when a cut value has no reference value or the outputs are not distinct. */
static bool compact(red_view *v, int_vec *inputs, node_vec *nodes) {
  const red_state *st = v->st;
  bool *live_v = kiln_xcalloc((size_t)v->n_values + 1, 1);
  bool *live_n = kiln_xcalloc((size_t)v->n_nodes + 1, 1);
  bool ok = v->outputs.len > 0;
  mark_live(v, live_v, live_n);
  for (int i = 0; i < v->outputs.len && ok; i++)
    for (int j = 0; j < i; j++) ok &= v->outputs.data[i] != v->outputs.data[j];
  for (int i = 0; i < st->g->inputs.len; i++) {
    int id = st->g->inputs.data[i];
    if (live_v[id] && v->values[id].kind == KILN_VALUE_INPUT) kiln_vec_push(inputs, id);
  }
  for (int id = 0; id < v->n_values && ok; id++) {
    kiln_value *x = &v->values[id];
    if (x->kind == KILN_VALUE_CONST && !live_v[id]) x->kind = KILN_VALUE_NODE; /* not printed */
    if (x->kind != KILN_VALUE_NODE || !live_v[id] || x->node < 0 || !v->drop[x->node]) continue;
    ok = st->ref && st->ref[id]; /* a cut: the value becomes an input holding its reference */
    x->kind = KILN_VALUE_INPUT;
    v->data[id] = ok ? st->ref[id] : NULL;
    kiln_vec_push(inputs, id);
  }
  for (int n = 0; n < v->n_nodes; n++) {
    if (!live_n[n]) continue;
    kiln_vec_push(nodes, v->nodes[n]);
    for (int k = 0; k < v->nodes[n].n_outputs; k++) {
      int o = v->nodes[n].outputs[k];
      if (o >= 0 && !st->sub_read[o]) v->values[o].type = kiln_type_unknown();
    }
  }
  free(live_v);
  free(live_n);
  return ok;
}

/* Prints the compacted view and parses it back as a graph of its own, checked and typed. */
static kiln_status rebuild(const red_view *v, const int_vec *inputs, const node_vec *nodes,
                           kiln_graph **out) {
  kiln_graph t = shallow(v->st->g);
  t.values.data = v->values;
  t.values.len = t.values.cap = v->n_values;
  t.nodes.data = nodes->data;
  t.nodes.len = t.nodes.cap = nodes->len;
  t.inputs.data = inputs->data;
  t.inputs.len = t.inputs.cap = inputs->len;
  t.outputs.data = v->outputs.data;
  t.outputs.len = t.outputs.cap = v->outputs.len;
  kiln_strbuf text = {0};
  kiln_graph_print(&t, &text, -1);
  kiln_status s = kiln_graph_parse(text.data, "reduce", out);
  kiln_strbuf_free(&text);
  KILN_TRY(s);
  KILN_TRY(kiln_graph_verify(*out));
  KILN_TRY(kiln_ops_infer_graph(*out));
  return kiln_ops_validate_model(*out);
}

/* Copies of the inputs' data, and a run of the reference on them. */
static kiln_status candidate_inputs(const red_view *v, const int_vec *inputs, const kiln_graph *g,
                                    kiln_val **cin) {
  for (int i = 0; i < inputs->len; i++) {
    const kiln_val *d = v->data[inputs->data[i]];
    if (!d) return kiln_invalid("no data for input %d", i);
    KILN_TRY(kiln_val_clone(d, &cin[i]));
  }
  kiln_val **outs = kiln_xcalloc((size_t)g->outputs.len + 1, sizeof *outs);
  kiln_status s = kiln_interp_run(g, NULL, inputs->len, cin, outs);
  for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outs[i]);
  free(outs);
  return s;
}

/* The graph and inputs of a view, or false when it is not a valid candidate. */
static bool materialize(red_view *v, kiln_graph **out_g, kiln_val ***out_in, int *out_n) {
  int_vec inputs = {0};
  node_vec nodes = {0};
  kiln_graph *cg = NULL;
  kiln_val **cin = NULL;
  bool ok = compact(v, &inputs, &nodes);
  kiln_status s = ok ? rebuild(v, &inputs, &nodes, &cg) : KILN_OK;
  if (ok && !s) {
    cin = kiln_xcalloc((size_t)inputs.len + 1, sizeof *cin);
    s = candidate_inputs(v, &inputs, cg, cin);
  }
  ok = ok && !s;
  kiln_status_free(s);
  if (ok) {
    *out_g = cg;
    *out_in = cin;
    *out_n = inputs.len;
  } else {
    for (int i = 0; cin && i < inputs.len; i++) kiln_val_free(cin[i]);
    free(cin);
    if (cg) kiln_graph_free(cg);
  }
  kiln_vec_free(&nodes);
  kiln_vec_free(&inputs);
  return ok;
}

/* ---- testing candidates ---- */

bool red_limit(reducer *R) {
  if (R->stop) return true;
  if (R->o.max_tests > 0 && R->res->tests >= R->o.max_tests) R->stop = true;
  if (R->o.max_seconds > 0 && kiln_clock_seconds() - R->t0 > R->o.max_seconds) R->stop = true;
  return R->stop;
}

static void adopt(reducer *R, kiln_graph *g, kiln_val **in, int n) {
  state_free(&R->cur);
  R->cur.g = g;
  R->cur.in = in;
  R->cur.n_in = n;
  state_index(&R->cur);
}

bool red_try(reducer *R, red_view *v) {
  kiln_graph *g = NULL;
  kiln_val **in = NULL;
  int n = 0;
  if (red_limit(R)) {
    red_view_free(v);
    return false;
  }
  bool ok = materialize(v, &g, &in, &n);
  if (!ok) {
    R->res->rejected++;
    red_view_free(v);
    return false;
  }
  R->res->tests++;
  bool holds = R->pred(R->user, g, n, in);
  if (holds) {
    R->res->kept++;
    adopt(R, g, in, n);
    if (R->o.log) {
      kiln_reduce_size s;
      kiln_reduce_measure(g, n, in, &s);
      kiln_verify_log(R->o.log, "reduce: %s -> %d nodes, %d inputs, %lld elements (test %d)",
                      v->what, s.nodes, s.inputs, (long long)s.elements, R->res->tests);
    }
  } else {
    for (int i = 0; i < n; i++) kiln_val_free(in[i]);
    free(in);
    kiln_graph_free(g);
  }
  red_view_free(v);
  return holds;
}

/* ---- the driver ---- */

/* The starting state: a copy of g through the text IR, and copies of the inputs. */
static kiln_status start_state(const kiln_graph *g, kiln_val *const *inputs, int n_in,
                               red_state *st) {
  memset(st, 0, sizeof *st);
  kiln_strbuf text = {0};
  kiln_graph_print(g, &text, -1);
  kiln_status s = kiln_graph_parse(text.data, "reduce", &st->g);
  kiln_strbuf_free(&text);
  if (!s) s = kiln_ops_infer_graph(st->g);
  KILN_TRYF(s, "reduce: the graph does not read back from its text form");
  st->in = kiln_xcalloc((size_t)n_in + 1, sizeof *st->in);
  st->n_in = n_in;
  for (int i = 0; i < n_in; i++) KILN_TRY(kiln_val_clone(inputs[i], &st->in[i]));
  state_index(st);
  return KILN_OK;
}

static void run_edits(reducer *R) {
  bool changed = true;
  red_outputs(R);
  red_nodes_ddmin(R);
  for (int round = 0; changed && !red_limit(R) && round < 100; round++) {
    changed = false;
    changed |= red_outputs(R);
    changed |= red_nodes_one(R);
    changed |= red_inputs(R);
    changed |= red_shapes(R);
    changed |= red_attrs(R);
    changed |= red_data(R);
  }
}

kiln_status kiln_reduce(const kiln_graph *g, kiln_val *const *inputs, int n_in,
                        kiln_reduce_pred pred, void *user, const kiln_reduce_opts *o,
                        kiln_reduce_result *out) {
  memset(out, 0, sizeof *out);
  if (!g || !pred || n_in != g->inputs.len || (n_in > 0 && !inputs))
    return kiln_invalid("reduce: %d inputs given for a graph of %d", n_in, g ? g->inputs.len : 0);
  reducer R;
  memset(&R, 0, sizeof R);
  R.pred = pred;
  R.user = user;
  if (o) R.o = *o;
  else kiln_reduce_opts_init(&R.o);
  R.res = out;
  R.t0 = kiln_clock_seconds();
  kiln_reduce_measure(g, n_in, inputs, &out->before);
  kiln_status s = start_state(g, inputs, n_in, &R.cur);
  if (s) {
    state_free(&R.cur);
    return s;
  }
  out->tests = 1;
  out->reproduced = pred(user, R.cur.g, R.cur.n_in, R.cur.in);
  if (out->reproduced) run_edits(&R);
  out->stopped = R.stop;
  out->seconds = kiln_clock_seconds() - R.t0;
  if (out->reproduced) {
    kiln_reduce_measure(R.cur.g, R.cur.n_in, R.cur.in, &out->after);
    state_drop_index(&R.cur);
    out->g = R.cur.g;
    out->inputs = R.cur.in;
    out->n_in = R.cur.n_in;
    R.cur.g = NULL;
    R.cur.in = NULL;
  } else {
    out->after = out->before;
  }
  state_free(&R.cur);
  return KILN_OK;
}
