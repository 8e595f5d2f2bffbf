/* ONNX import, step 2: inlining calls of model-local functions (ModelProto.functions).
 *
 * A node whose (domain, op_type) names a FunctionProto is replaced by the
 * function's body: formal inputs and outputs become the call's actual names,
 * every other value gets a fresh name ("<function>__<k>__<name>"), attributes
 * that refer to the call's attributes (ref_attr_name) take the call's value or
 * the function's default. Bodies whose nodes carry subgraphs, and functions that
 * import another version of a domain than the model, are not inlined (unsupported). */
#include <stdio.h>
#include <string.h>

#include "import_internal.h"

#define MAX_INLINE_DEPTH 32
#define MAX_INLINED_NODES (1 << 20) /* functions calling functions can grow exponentially */

static kiln_status inline_nodes(ox_ctx *c, ox_model *m, ox_node_vec *nodes, int depth);

static const ox_function *find_function(const ox_model *m, const char *domain, const char *name) {
  for (int i = 0; i < m->functions.len; i++) {
    const ox_function *f = &m->functions.data[i];
    if (strcmp(f->name, name) == 0 && strcmp(f->domain, domain) == 0) return f;
  }
  return NULL;
}

typedef struct rename_ctx {
  const ox_function *fn;
  const ox_node *call;
  int k;
  kiln_arena *a;
} rename_ctx;

static const char *map_name(const rename_ctx *r, const char *name) {
  if (!name[0]) return name;
  for (int i = 0; i < r->fn->n_in; i++)
    if (strcmp(r->fn->in[i], name) == 0) return i < r->call->n_in ? r->call->in[i] : "";
  for (int i = 0; i < r->fn->n_out; i++)
    if (strcmp(r->fn->out[i], name) == 0 && i < r->call->n_out && r->call->out[i][0])
      return r->call->out[i];
  return kiln_arena_printf(r->a, "%s__%d__%s", r->fn->name, r->k, name);
}

static const ox_attr *find_attr(const ox_attr *attrs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (attrs[i].a.name && strcmp(attrs[i].a.name, name) == 0) return &attrs[i];
  return NULL;
}

/* Attributes of a body node, with references resolved; unresolved ones are dropped. */
static kiln_status body_attrs(const rename_ctx *r, const ox_node *b, ox_node *out) {
  out->attrs = kiln_arena_calloc(r->a, (size_t)b->n_attrs + 1, sizeof(ox_attr));
  out->n_attrs = 0;
  for (int i = 0; i < b->n_attrs; i++) {
    const ox_attr *src = &b->attrs[i];
    if (src->g || src->gs) {
      char lb[256];
      return kiln_unsupported("%s: function '%s' has a node with a subgraph attribute; it cannot "
                              "be inlined",
                              kiln_ox_node_label(r->call, lb, sizeof lb), r->fn->name);
    }
    if (src->ref) {
      const ox_attr *v = find_attr(r->call->attrs, r->call->n_attrs, src->ref);
      if (!v) v = find_attr(r->fn->defaults, r->fn->n_defaults, src->ref);
      if (!v) continue;
      if (v->g || v->gs) return kiln_unsupported("graph-valued function attribute '%s'", src->ref);
      out->attrs[out->n_attrs] = *v;
      out->attrs[out->n_attrs].a.name = src->a.name;
      out->attrs[out->n_attrs++].ref = NULL;
      continue;
    }
    out->attrs[out->n_attrs++] = *src;
  }
  return KILN_OK;
}

/* Kiln keeps one opset version per domain (ONNX export has no per-node opset), so
 * a function must import the versions the model imports (set_opsets adds the
 * domains only functions import). */
static kiln_status check_function_opsets(const ox_model *m, const ox_function *fn,
                                         const ox_node *call) {
  for (int i = 0; i < fn->opsets.len; i++) {
    const kiln_opset *fo = &fn->opsets.data[i];
    for (int k = 0; k < m->opsets.len; k++) {
      const kiln_opset *mo = &m->opsets.data[k];
      if (strcmp(mo->domain, fo->domain) != 0 || mo->version == fo->version) continue;
      char lb[256];
      return kiln_unsupported("%s: function '%s' imports version %lld of domain '%s', the model "
                              "version %lld (Kiln keeps one version per domain)",
                              kiln_ox_node_label(call, lb, sizeof lb), fn->name,
                              (long long)fo->version, fo->domain, (long long)mo->version);
    }
  }
  return KILN_OK;
}

static kiln_status expand_call(ox_ctx *c, const ox_model *m, const ox_function *fn,
                               const ox_node *call, ox_node_vec *body) {
  KILN_TRY(check_function_opsets(m, fn, call));
  rename_ctx r = {fn, call, c->inline_count++, c->scratch};
  c->inlined_nodes += fn->nodes.len;
  if (c->inlined_nodes > MAX_INLINED_NODES)
    return kiln_unsupported("inlining model-local functions gives more than %d nodes",
                            MAX_INLINED_NODES);
  for (int i = 0; i < fn->nodes.len; i++) {
    const ox_node *b = &fn->nodes.data[i];
    ox_node n = *b;
    n.path = kiln_arena_printf(c->scratch, "%s(%s).node[%d]", call->path, fn->name, i);
    n.in = kiln_arena_calloc(c->scratch, (size_t)b->n_in + 1, sizeof(char *));
    n.out = kiln_arena_calloc(c->scratch, (size_t)b->n_out + 1, sizeof(char *));
    for (int k = 0; k < b->n_in; k++) n.in[k] = map_name(&r, b->in[k]);
    for (int k = 0; k < b->n_out; k++) n.out[k] = map_name(&r, b->out[k]);
    KILN_TRY(body_attrs(&r, b, &n));
    kiln_arena_vec_push(c->scratch, body, n);
  }
  return KILN_OK;
}

static kiln_status inline_subgraphs(ox_ctx *c, ox_model *m, ox_node *n, int depth) {
  for (int i = 0; i < n->n_attrs; i++) {
    ox_attr *a = &n->attrs[i];
    if (a->g) KILN_TRY(inline_nodes(c, m, &a->g->nodes, depth));
    for (int k = 0; a->gs && k < a->a.n; k++) KILN_TRY(inline_nodes(c, m, &a->gs[k]->nodes, depth));
  }
  return KILN_OK;
}

static kiln_status inline_nodes(ox_ctx *c, ox_model *m, ox_node_vec *nodes, int depth) {
  if (depth > MAX_INLINE_DEPTH)
    return kiln_unsupported("function calls nested deeper than %d (recursive functions?)",
                            MAX_INLINE_DEPTH);
  ox_node_vec out = {0};
  bool changed = false;
  for (int i = 0; i < nodes->len; i++) {
    ox_node *n = &nodes->data[i];
    KILN_TRY(inline_subgraphs(c, m, n, depth + 1));
    const ox_function *fn = find_function(m, n->domain, n->op_type);
    if (!fn) {
      kiln_arena_vec_push(c->scratch, &out, *n);
      continue;
    }
    ox_node_vec body = {0};
    KILN_TRY(expand_call(c, m, fn, n, &body));
    KILN_TRY(inline_nodes(c, m, &body, depth + 1));
    for (int k = 0; k < body.len; k++) kiln_arena_vec_push(c->scratch, &out, body.data[k]);
    changed = true;
  }
  if (changed) *nodes = out;
  return KILN_OK;
}

kiln_status kiln_ox_inline_functions(ox_ctx *c, ox_model *m) {
  if (!m->functions.len) return KILN_OK;
  return inline_nodes(c, m, &m->graph->nodes, 0);
}
