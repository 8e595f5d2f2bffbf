/* The reference interpreter: runs a graph node by node with the reference
 * kernels. Values are freed after their last use; values of enclosing graphs
 * are reached through the chain of running frames (for If/Loop/Scan bodies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/analysis.h"
#include "ops.h"

typedef struct frame {
  const kiln_graph *g;
  kiln_val **env; /* per value id */
  bool *borrowed; /* env[i] is not owned by this frame (input, const, outer) */
  struct frame *up;
} frame;

struct kiln_interp {
  const kiln_interp_opts *opts;
  frame *top;
};

static kiln_val *lookup_outer(frame *f, const kiln_graph *g, int id) {
  const kiln_value *v = &g->values.data[id];
  for (frame *p = f->up; p; p = p->up) {
    if (p->g == g->parent) {
      if (p->g->values.data[v->outer].kind == KILN_VALUE_OUTER && !p->env[v->outer])
        return lookup_outer(p, p->g, v->outer);
      return p->env[v->outer];
    }
  }
  return NULL;
}

/* last_use[id] = index of the last node of g that reads value id (directly or
 * from a subgraph body); nodes.len for graph outputs (never freed early). */
static int *compute_last_use(const kiln_graph *g) {
  kiln_uses u;
  kiln_uses_compute(g, &u);
  int *last = u.last;
  u.last = NULL;
  kiln_uses_free(&u);
  return last;
}

static void frame_release(frame *f, int id) {
  if (!f->env[id]) return;
  if (f->borrowed[id]) {
    if (f->g->values.data[id].kind == KILN_VALUE_CONST) {
      f->env[id]->t = NULL; /* the shell only: the graph owns the data */
      kiln_val_free(f->env[id]);
    }
  } else {
    kiln_val_free(f->env[id]);
  }
  f->env[id] = NULL;
}

static kiln_status run_node(kiln_interp *ip, frame *f, int idx) {
  const kiln_graph *g = f->g;
  const kiln_node *n = &g->nodes.data[idx];
  KILN_TRY(kiln_op_check(g, n));
  kiln_val *in_small[16], *out_small[16];
  kiln_val **in = n->n_inputs <= 16 ? in_small : kiln_xcalloc((size_t)n->n_inputs, sizeof *in);
  kiln_val **out = n->n_outputs <= 16 ? out_small : kiln_xcalloc((size_t)n->n_outputs, sizeof *out);
  for (int k = 0; k < n->n_inputs; k++) in[k] = n->inputs[k] >= 0 ? f->env[n->inputs[k]] : NULL;
  for (int k = 0; k < n->n_outputs; k++) out[k] = NULL;
  if (ip->opts && ip->opts->trace) {
    char lb[200];
    kiln_strbuf line = {0}, shown = {0}; /* a name: one line, no terminal escapes */
    kiln_esc_line(&line, kiln_node_label(n, lb, sizeof lb));
    kiln_esc_terminal(&shown, line.data ? line.data : "");
    fprintf(stderr, "[interp] %s\n", shown.data ? shown.data : "");
    kiln_strbuf_free(&line), kiln_strbuf_free(&shown);
  }
  kiln_eval_ctx ctx = {g, n, n->n_inputs, in, n->n_outputs, out, ip};
  kiln_status st = kiln_op_get(n->op)->eval(&ctx);
  for (int k = 0; k < n->n_outputs; k++) {
    int id = n->outputs[k];
    if (!st && id >= 0 && !out[k]) {
      char lb[200];
      st = KILN_BUG("%s: the kernel produced no output %d", kiln_node_label(n, lb, sizeof lb), k);
    }
    if (!st && id >= 0) f->env[id] = out[k];
    else kiln_val_free(out[k]);
  }
  if (in != in_small) free(in);
  if (out != out_small) free(out);
  return st;
}

static kiln_status bind_inputs(frame *f, int n_in, kiln_val *const *inputs) {
  const kiln_graph *g = f->g;
  if (n_in != g->inputs.len)
    return kiln_invalid("graph '%s' takes %d inputs, %d given", g->name, g->inputs.len, n_in);
  for (int i = 0; i < n_in; i++) {
    int id = g->inputs.data[i];
    f->env[id] = inputs[i];
    f->borrowed[id] = true;
  }
  for (int id = 0; id < g->values.len; id++) {
    const kiln_value *v = &g->values.data[id];
    if (v->kind == KILN_VALUE_CONST) {
      f->env[id] = kiln_val_tensor(v->data);
      f->borrowed[id] = true;
    } else if (v->kind == KILN_VALUE_OUTER) {
      f->env[id] = lookup_outer(f, g, id);
      f->borrowed[id] = true;
      if (!f->env[id])
        return kiln_invalid("graph '%s': outer value '%s' is not available", g->name, v->name);
    }
  }
  return KILN_OK;
}

static kiln_status take_outputs(frame *f, kiln_val **outputs) {
  const kiln_graph *g = f->g;
  for (int i = 0; i < g->outputs.len; i++) outputs[i] = NULL;
  for (int i = 0; i < g->outputs.len; i++) {
    int id = g->outputs.data[i];
    kiln_val *v = id >= 0 ? f->env[id] : NULL;
    if (!v) return kiln_invalid("graph '%s': output %d was not computed", g->name, i);
    bool dup = false; /* the same value listed twice as an output */
    for (int j = 0; j < i; j++) dup |= g->outputs.data[j] == id;
    if (f->borrowed[id] || dup) {
      KILN_TRY(kiln_val_clone(v, &outputs[i]));
    } else {
      outputs[i] = v;
      f->borrowed[id] = true; /* moved out: do not free */
      f->env[id] = NULL;
      if (g->values.data[id].kind == KILN_VALUE_CONST) f->borrowed[id] = true;
    }
    if (!outputs[i]) continue;
    /* a moved value may be listed again later: keep a pointer for the clone */
    for (int j = i + 1; j < g->outputs.len; j++)
      if (g->outputs.data[j] == id) f->env[id] = outputs[i], f->borrowed[id] = true;
  }
  return KILN_OK;
}

static kiln_status run_frame(kiln_interp *ip, frame *f, int n_in, kiln_val *const *inputs,
                             kiln_val **outputs) {
  const kiln_graph *g = f->g;
  int nv = g->values.len;
  f->env = kiln_xcalloc((size_t)nv + 1, sizeof *f->env);
  f->borrowed = kiln_xcalloc((size_t)nv + 1, sizeof *f->borrowed);
  int *last = compute_last_use(g);
  frame *saved = ip->top;
  ip->top = f;
  kiln_status st = bind_inputs(f, n_in, inputs);
  for (int i = 0; !st && i < g->nodes.len; i++) {
    st = run_node(ip, f, i);
    const kiln_node *n = &g->nodes.data[i];
    for (int k = 0; !st && k < n->n_inputs; k++) {
      int id = n->inputs[k];
      if (id >= 0 && last[id] == i && g->values.data[id].kind == KILN_VALUE_NODE)
        frame_release(f, id);
    }
    for (int k = 0; !st && k < n->n_outputs; k++) /* outputs no one reads */
      if (n->outputs[k] >= 0 && last[n->outputs[k]] < 0) frame_release(f, n->outputs[k]);
  }
  if (!st) st = take_outputs(f, outputs);
  for (int id = 0; id < nv; id++) frame_release(f, id);
  ip->top = saved;
  free(last);
  free(f->env);
  free(f->borrowed);
  return st;
}

/* A declared element type of a graph output must be the computed one. */
static kiln_status check_output_types(const kiln_graph *g, kiln_val **outputs) {
  for (int i = 0; i < g->outputs.len; i++) {
    const kiln_value *v = &g->values.data[g->outputs.data[i]];
    const kiln_val *o = outputs[i];
    if (v->type.kind != KILN_TYPE_TENSOR || !v->type.dtype || o->kind != KILN_TYPE_TENSOR ||
        !o->t || o->t->dtype == v->type.dtype)
      continue;
    return kiln_invalid("graph output '%s' is declared %s but the graph computes %s", v->name,
                        kiln_dtype_name(v->type.dtype), kiln_dtype_name(o->t->dtype));
  }
  return KILN_OK;
}

kiln_status kiln_interp_run(const kiln_graph *g, const kiln_interp_opts *opts, int n_in,
                            kiln_val *const *inputs, kiln_val **outputs) {
  kiln_interp ip = {opts, NULL};
  frame f = {g, NULL, NULL, NULL};
  KILN_TRY(run_frame(&ip, &f, n_in, inputs, outputs));
  kiln_status st = check_output_types(g, outputs);
  if (st)
    for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outputs[i]), outputs[i] = NULL;
  return st;
}

kiln_status kiln_interp_run_sub(kiln_eval_ctx *ctx, const kiln_graph *sub, int n_in,
                                kiln_val *const *inputs, kiln_val **outputs) {
  kiln_interp *ip = ctx->interp;
  frame f = {sub, NULL, NULL, ip->top};
  kiln_status st = run_frame(ip, &f, n_in, inputs, outputs);
  if (st) {
    char lb[200];
    return kiln_status_annotate(st, "in a subgraph of %s",
                                kiln_node_label(ctx->node, lb, sizeof lb));
  }
  return KILN_OK;
}

/* Fills env with the values of g that the subgraphs of node n read (their OUTER values):
 * constants directly, everything else through lookup. */
static kiln_status bind_sub_outers(frame *f, const kiln_node *n,
                                   kiln_val *(*lookup)(void *user, int value_id), void *user) {
  const kiln_graph *g = f->g;
  kiln_outer_iter it = kiln_outer_reads(g, n);
  for (int v; kiln_outer_next(&it, &v);) {
    if (f->env[v]) continue;
    if (g->values.data[v].kind == KILN_VALUE_CONST) {
      f->env[v] = kiln_val_tensor(g->values.data[v].data);
      continue;
    }
    f->env[v] = lookup(user, v);
    f->borrowed[v] = true;
    if (!f->env[v])
      return kiln_invalid("value '%s' read by a subgraph is not available", g->values.data[v].name);
  }
  return KILN_OK;
}

static kiln_status bind_node_inputs(frame *f, const kiln_node *n,
                                    kiln_val *(*lookup)(void *user, int value_id), void *user) {
  const kiln_graph *g = f->g;
  for (int k = 0; k < n->n_inputs; k++) {
    int id = n->inputs[k];
    if (id < 0 || f->env[id]) continue;
    if (g->values.data[id].kind == KILN_VALUE_CONST) {
      f->env[id] = kiln_val_tensor(g->values.data[id].data);
      continue;
    }
    f->env[id] = lookup(user, id);
    f->borrowed[id] = true;
    if (!f->env[id]) return kiln_invalid("input '%s' is not available", g->values.data[id].name);
  }
  return bind_sub_outers(f, n, lookup, user);
}

kiln_status kiln_interp_eval_node(const kiln_graph *g, int node,
                                  kiln_val *(*lookup)(void *user, int value_id), void *user,
                                  kiln_val **outputs) {
  if (g->parent) return kiln_invalid("kiln_interp_eval_node: '%s' is not a root graph", g->name);
  if (node < 0 || node >= g->nodes.len)
    return kiln_invalid("kiln_interp_eval_node: no node %d in '%s'", node, g->name);
  const kiln_node *n = &g->nodes.data[node];
  for (int k = 0; k < n->n_outputs; k++) outputs[k] = NULL;
  int nv = g->values.len;
  kiln_interp ip = {NULL, NULL};
  frame f = {g, kiln_xcalloc((size_t)nv + 1, sizeof *f.env),
             kiln_xcalloc((size_t)nv + 1, sizeof *f.borrowed), NULL};
  ip.top = &f;
  /* constants wrapped here are shells over the graph's data (released below) */
  kiln_status st = bind_node_inputs(&f, n, lookup, user);
  if (!st) st = run_node(&ip, &f, node);
  for (int k = 0; !st && k < n->n_outputs; k++) {
    int id = n->outputs[k];
    if (id < 0) continue;
    outputs[k] = f.env[id];
    f.env[id] = NULL;
  }
  for (int id = 0; id < nv; id++) {
    if (f.env[id] && !f.borrowed[id] && g->values.data[id].kind == KILN_VALUE_CONST) {
      f.env[id]->t = NULL;
      kiln_val_free(f.env[id]);
    } else if (f.env[id] && !f.borrowed[id]) {
      kiln_val_free(f.env[id]); /* an output left behind by a failed kernel */
    }
  }
  free(f.env);
  free(f.borrowed);
  return st; /* kernel and check errors already name the node */
}
