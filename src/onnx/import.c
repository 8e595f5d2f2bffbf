/* ONNX import, step 3: ox_* structures -> kiln_graph; and the entry points.
 *
 * Each graph is built in order: initializers (decoded now, one copy of the
 * weights, straight from the file buffer), inputs that are not initializers,
 * nodes in topological order (ONNX requires it, but producers are not trusted
 * to follow it), outputs, and types from value_info. The file is mapped with
 * mmap, and the pages of each initializer are dropped once it is copied, so
 * loading peaks at about one copy of the weights. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_internal.h"

#define S(c) (&(c)->src.w)

static kiln_status build_graph(ox_ctx *c, kiln_graph *g, ox_graph *og);

/* ---- free variables: names a subgraph takes from enclosing scopes ---- */

static void compute_free_vars(ox_ctx *c, ox_graph *og);

typedef KILN_VEC(const char *) name_vec;

static void use_name(ox_ctx *c, const kiln_strmap *defined, kiln_strmap *seen, name_vec *out,
                     const char *name) {
  if (!name[0] || kiln_strmap_get(defined, name, NULL) || kiln_strmap_get(seen, name, NULL)) return;
  kiln_strmap_put(seen, name, 1);
  kiln_arena_vec_push(c->scratch, out, name);
}

static void node_subgraphs_free(ox_ctx *c, const ox_node *n) {
  for (int i = 0; i < n->n_attrs; i++) {
    if (n->attrs[i].g) compute_free_vars(c, n->attrs[i].g);
    for (int k = 0; n->attrs[i].gs && k < n->attrs[i].a.n; k++)
      compute_free_vars(c, n->attrs[i].gs[k]);
  }
}

static void compute_free_vars(ox_ctx *c, ox_graph *og) {
  if (og->free_done) return;
  og->free_done = true;
  kiln_strmap defined = {0}, seen = {0};
  name_vec out = {0};
  for (int i = 0; i < og->inputs.len; i++) kiln_strmap_put(&defined, og->inputs.data[i].name, 1);
  for (int i = 0; i < og->nodes.len; i++)
    for (int k = 0; k < og->nodes.data[i].n_out; k++)
      if (og->nodes.data[i].out[k][0]) kiln_strmap_put(&defined, og->nodes.data[i].out[k], 1);
  /* initializer names are only known once decoded; an initializer shadowing an
   * outer name at worst adds a harmless ordering edge */
  for (int i = 0; i < og->nodes.len; i++) {
    const ox_node *n = &og->nodes.data[i];
    for (int k = 0; k < n->n_in; k++) use_name(c, &defined, &seen, &out, n->in[k]);
    node_subgraphs_free(c, n);
    for (int a = 0; a < n->n_attrs; a++) {
      const ox_attr *at = &n->attrs[a];
      int ng = at->g ? 1 : at->gs ? at->a.n : 0;
      for (int k = 0; k < ng; k++) {
        const ox_graph *sub = at->g ? at->g : at->gs[k];
        for (int v = 0; v < sub->n_free; v++) use_name(c, &defined, &seen, &out, sub->free_vars[v]);
      }
    }
  }
  for (int i = 0; i < og->outputs.len; i++)
    use_name(c, &defined, &seen, &out, og->outputs.data[i].name);
  og->n_free = out.len;
  og->free_vars = out.data;
  kiln_strmap_free(&defined);
  kiln_strmap_free(&seen);
}

/* ---- topological order (Kahn's algorithm; a min-heap keeps the file order when valid) ---- */

typedef struct heap {
  int *a, n;
} heap;

static void heap_push(heap *h, int v) {
  int i = h->n++;
  h->a[i] = v;
  while (i && h->a[(i - 1) / 2] > h->a[i]) {
    int p = (i - 1) / 2, t = h->a[p];
    h->a[p] = h->a[i], h->a[i] = t, i = p;
  }
}

static int heap_pop(heap *h) {
  int top = h->a[0], i = 0;
  h->a[0] = h->a[--h->n];
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && h->a[l] < h->a[m]) m = l;
    if (r < h->n && h->a[r] < h->a[m]) m = r;
    if (m == i) return top;
    int t = h->a[m];
    h->a[m] = h->a[i], h->a[i] = t, i = m;
  }
}

typedef struct topo {
  int n;
  int *indeg, *edge_start, *edges, *order;
  kiln_strmap producer; /* value name -> node index */
} topo;

/* Calls fn(name) for every name node n reads: inputs and its subgraphs' free variables. */
#define FOR_EACH_USE(n, name, body)                                                                \
  do {                                                                                             \
    for (int k_ = 0; k_ < (n)->n_in; k_++) {                                                       \
      const char *name = (n)->in[k_];                                                              \
      body;                                                                                        \
    }                                                                                              \
    for (int a_ = 0; a_ < (n)->n_attrs; a_++) {                                                    \
      const ox_attr *at_ = &(n)->attrs[a_];                                                        \
      int ng_ = at_->g ? 1 : at_->gs ? at_->a.n : 0;                                               \
      for (int g_ = 0; g_ < ng_; g_++) {                                                           \
        const ox_graph *sub_ = at_->g ? at_->g : at_->gs[g_];                                      \
        for (int v_ = 0; v_ < sub_->n_free; v_++) {                                                \
          const char *name = sub_->free_vars[v_];                                                  \
          body;                                                                                    \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static kiln_status map_producers(const ox_graph *og, topo *t) {
  for (int i = 0; i < og->nodes.len; i++) {
    const ox_node *n = &og->nodes.data[i];
    for (int k = 0; k < n->n_out; k++) {
      int64_t prev;
      if (!n->out[k][0]) continue;
      if (kiln_strmap_get(&t->producer, n->out[k], &prev)) {
        char l1[256], l2[256];
        return kiln_invalid("value '%s' is produced twice: by %s and by %s", n->out[k],
                            kiln_ox_node_label(&og->nodes.data[prev], l1, sizeof l1),
                            kiln_ox_node_label(n, l2, sizeof l2));
      }
      kiln_strmap_put(&t->producer, n->out[k], i);
    }
  }
  return KILN_OK;
}

static void build_edges(const ox_graph *og, topo *t) {
  int total = 0;
  for (int pass = 0; pass < 2; pass++) {
    int e = 0;
    for (int i = 0; i < og->nodes.len; i++) {
      const ox_node *n = &og->nodes.data[i];
      FOR_EACH_USE(n, name, {
        int64_t p;
        if (name[0] && kiln_strmap_get(&t->producer, name, &p)) {
          if (pass) t->edges[t->edge_start[p] + t->indeg[p]++] = i; /* indeg: fill cursor */
          else t->edge_start[p + 1]++;
          e++;
        }
      });
    }
    if (!pass) {
      for (int i = 0; i < t->n; i++) t->edge_start[i + 1] += t->edge_start[i];
      total = e;
      t->edges = kiln_xmalloc(sizeof(int) * (size_t)(total ? total : 1));
    }
  }
  memset(t->indeg, 0, sizeof(int) * (size_t)t->n);
  for (int i = 0; i < total; i++) t->indeg[t->edges[i]]++;
}

static kiln_status cycle_error(const ox_graph *og, topo *t, const bool *done) {
  for (int i = 0; i < og->nodes.len; i++) {
    if (done[i]) continue;
    const ox_node *n = &og->nodes.data[i];
    FOR_EACH_USE(n, name, {
      int64_t p;
      if (name[0] && kiln_strmap_get(&t->producer, name, &p) && !done[p]) {
        char lb[256];
        return kiln_invalid("%s: input '%s' depends on the node itself (the graph has a cycle)",
                            kiln_ox_node_label(n, lb, sizeof lb), name);
      }
    });
  }
  return kiln_invalid("the graph has a cycle");
}

static kiln_status kahn(const ox_graph *og, topo *t) {
  heap h = {kiln_xmalloc(sizeof(int) * (size_t)(t->n ? t->n : 1)), 0};
  bool *done = kiln_xcalloc((size_t)(t->n ? t->n : 1), 1);
  int k = 0;
  for (int i = 0; i < t->n; i++)
    if (!t->indeg[i]) heap_push(&h, i);
  while (h.n) {
    int v = heap_pop(&h);
    done[v] = true;
    t->order[k++] = v;
    for (int e = t->edge_start[v]; e < t->edge_start[v + 1]; e++)
      if (--t->indeg[t->edges[e]] == 0) heap_push(&h, t->edges[e]);
  }
  kiln_status st = k == t->n ? KILN_OK : cycle_error(og, t, done);
  free(h.a);
  free(done);
  return st;
}

/* *out: node indices in an order where every producer comes first (malloc'd). */
static kiln_status topo_sort(ox_ctx *c, ox_graph *og, int **out) {
  for (int i = 0; i < og->nodes.len; i++) node_subgraphs_free(c, &og->nodes.data[i]);
  topo t = {0};
  t.n = og->nodes.len;
  size_t n1 = (size_t)t.n + 1;
  t.indeg = kiln_xcalloc(n1, sizeof(int));
  t.edge_start = kiln_xcalloc(n1, sizeof(int));
  t.order = kiln_xcalloc(n1, sizeof(int));
  kiln_status st = map_producers(og, &t);
  if (!st) build_edges(og, &t);
  if (!st) st = kahn(og, &t);
  free(t.indeg);
  free(t.edge_start);
  free(t.edges);
  kiln_strmap_free(&t.producer);
  if (st) {
    free(t.order);
    return st;
  }
  *out = t.order;
  return KILN_OK;
}

/* ---- nodes ---- */

static kiln_status build_attr(ox_ctx *c, kiln_graph *g, const ox_node *n, const ox_attr *oa,
                              kiln_attr *out) {
  char lb[256];
  if (oa->ref)
    return kiln_invalid("%s: attribute '%s' refers to '%s' outside a function",
                        kiln_ox_node_label(n, lb, sizeof lb), oa->a.name, oa->ref);
  *out = oa->a;
  if (oa->g) {
    out->g = kiln_graph_new_sub(g, oa->g->name);
    KILN_TRY(build_graph(c, out->g, oa->g));
  }
  if (oa->gs) {
    out->graphs = kiln_graph_alloc(g, sizeof(kiln_graph *) * (size_t)(oa->a.n + 1));
    for (int k = 0; k < oa->a.n; k++) {
      out->graphs[k] = kiln_graph_new_sub(g, oa->gs[k]->name);
      KILN_TRY(build_graph(c, out->graphs[k], oa->gs[k]));
    }
  }
  return KILN_OK;
}

static kiln_status check_op(const kiln_graph *g, const ox_node *n) {
  char lb[256];
  if (n->domain[0])
    return kiln_unsupported("%s: operators of domain '%s' are not supported",
                            kiln_ox_node_label(n, lb, sizeof lb), n->domain);
  if (!kiln_graph_opset(g, ""))
    return kiln_invalid("%s: the model has no opset_import for the default ONNX domain",
                        kiln_ox_node_label(n, lb, sizeof lb));
  if (kiln_op_lookup("", n->op_type) == KILN_OP_UNKNOWN)
    return kiln_unsupported("%s: unknown operator '%s'", kiln_ox_node_label(n, lb, sizeof lb),
                            n->op_type);
  return KILN_OK;
}

static kiln_status resolve_inputs(kiln_graph *g, const ox_node *n, int *ids) {
  for (int k = 0; k < n->n_in; k++) {
    ids[k] = n->in[k][0] ? kiln_graph_resolve(g, n->in[k]) : -1;
    if (n->in[k][0] && ids[k] < 0) {
      char lb[256];
      return kiln_invalid("%s: input '%s' is not defined", kiln_ox_node_label(n, lb, sizeof lb),
                          n->in[k]);
    }
  }
  return KILN_OK;
}

static kiln_status check_attr_names(const ox_node *n) {
  kiln_strmap seen = {0};
  kiln_status st = KILN_OK;
  for (int i = 0; i < n->n_attrs && !st; i++) {
    if (kiln_strmap_get(&seen, n->attrs[i].a.name, NULL)) {
      char lb[256];
      st = kiln_invalid("%s: attribute '%s' is given twice", kiln_ox_node_label(n, lb, sizeof lb),
                        n->attrs[i].a.name);
    }
    kiln_strmap_put(&seen, n->attrs[i].a.name, i);
  }
  kiln_strmap_free(&seen);
  return st;
}

static kiln_status add_node(ox_ctx *c, kiln_graph *g, const ox_node *n) {
  KILN_TRY(check_op(g, n));
  KILN_TRY(check_attr_names(n));
  int *ids = kiln_arena_calloc(c->scratch, (size_t)n->n_in + 1, sizeof(int));
  KILN_TRY(resolve_inputs(g, n, ids));
  /* the attribute array is set whole: kiln_node_add_attr copies it per attribute */
  kiln_attr *attrs = kiln_graph_alloc(g, sizeof(kiln_attr) * ((size_t)n->n_attrs + 1));
  for (int i = 0; i < n->n_attrs; i++) {
    KILN_TRY(build_attr(c, g, n, &n->attrs[i], &attrs[i]));
    attrs[i].name = kiln_graph_strdup(g, n->attrs[i].a.name);
  }
  char lb[256];
  kiln_ox_node_label(n, lb, sizeof lb);
  KILN_TRYF(
      kiln_graph_add_node(g, n->op_type, n->domain, n->name, n->n_in, ids, n->n_out, n->out, NULL),
      "%s", lb);
  kiln_node *node = &g->nodes.data[kiln_graph_last_node(g)];
  node->n_attrs = n->n_attrs;
  node->attrs = attrs;
  return KILN_OK;
}

/* ---- graphs ---- */

static void set_path(ox_ctx *c, const char *path) {
  kiln_wire_pop(S(c), 0);
  kiln_wire_push(S(c), "%s", path);
}

static kiln_status add_initializer(ox_ctx *c, kiln_graph *g, const ox_init *in) {
  set_path(c, in->path);
  const char *name = "";
  kiln_tensor *t;
  KILN_TRY(in->sparse ? kiln_onnx_read_sparse(&c->src, in->data, in->len, c->scratch, &name, &t)
                      : kiln_onnx_read_tensor(&c->src, in->data, in->len, c->scratch, &name, &t));
  if (!name[0]) {
    kiln_tensor_free(t);
    return kiln_invalid("%s: initializer has no name", in->path);
  }
  int id;
  KILN_TRYF(kiln_graph_add_const(g, name, t, &id), "%s", in->path);
  return KILN_OK;
}

static kiln_status add_inputs(kiln_graph *g, const ox_graph *og) {
  for (int i = 0; i < og->inputs.len; i++) {
    const ox_vinfo *v = &og->inputs.data[i];
    if (!v->name[0]) return kiln_invalid("%s.input[%d]: input has no name", og->path, i);
    int id = kiln_graph_find(g, v->name);
    if (id >= 0 && g->values.data[id].kind == KILN_VALUE_CONST) continue; /* initializer */
    KILN_TRYF(kiln_graph_add_input2(g, v->name, v->type, &id), "%s.input[%d]", og->path, i);
  }
  return KILN_OK;
}

static void apply_type(kiln_graph *g, int id, const kiln_type *t) {
  kiln_value *v = &g->values.data[id];
  if (v->kind == KILN_VALUE_NODE && v->type.kind == KILN_TYPE_UNKNOWN) v->type = *t;
}

static kiln_status add_outputs(kiln_graph *g, const ox_graph *og) {
  for (int i = 0; i < og->outputs.len; i++) {
    const ox_vinfo *v = &og->outputs.data[i];
    int id = v->name[0] ? kiln_graph_resolve(g, v->name) : -1;
    if (id < 0)
      return kiln_invalid("%s.output[%d]: graph output '%s' is not defined", og->path, i, v->name);
    kiln_graph_add_output(g, id);
    apply_type(g, id, &v->type);
  }
  for (int i = 0; i < og->vinfos.len; i++) {
    int id = kiln_graph_find(g, og->vinfos.data[i].name);
    if (id >= 0) apply_type(g, id, &og->vinfos.data[i].type);
  }
  return KILN_OK;
}

static kiln_status build_graph(ox_ctx *c, kiln_graph *g, ox_graph *og) {
  for (int i = 0; i < og->inits.len; i++) KILN_TRY(add_initializer(c, g, &og->inits.data[i]));
  KILN_TRY(add_inputs(g, og));
  int *order;
  KILN_TRY(topo_sort(c, og, &order));
  kiln_status st = KILN_OK;
  for (int i = 0; i < og->nodes.len && !st; i++) st = add_node(c, g, &og->nodes.data[order[i]]);
  free(order);
  KILN_TRY(st);
  return add_outputs(g, og);
}

/* ---- the model ---- */

/* Before IR 3 there was no opset_import: such models use opset 1. A default-domain
 * node with no opset at all is an error in check_op. */
static void set_opsets(ox_ctx *c, const ox_model *m) {
  bool has_default = false;
  for (int i = 0; i < m->opsets.len; i++) {
    kiln_graph_set_opset(c->root, m->opsets.data[i].domain, m->opsets.data[i].version);
    has_default |= !m->opsets.data[i].domain[0];
  }
  if (!has_default && m->ir_version < 3) kiln_graph_set_opset(c->root, "", 1);
  for (int f = 0; f < m->functions.len; f++) { /* domains only functions import */
    const ox_function *fn = &m->functions.data[f];
    for (int i = 0; i < fn->opsets.len; i++)
      if (!kiln_graph_opset(c->root, fn->opsets.data[i].domain))
        kiln_graph_set_opset(c->root, fn->opsets.data[i].domain, fn->opsets.data[i].version);
  }
}

static kiln_status import_model(ox_ctx *c, const uint8_t *data, size_t len) {
  ox_model m;
  KILN_TRY(kiln_ox_parse_model(c, data, len, &m));
  KILN_TRY(kiln_ox_inline_functions(c, &m));
  set_opsets(c, &m);
  c->root->name = kiln_graph_strdup(c->root, m.graph->name);
  c->root->ir_version = m.ir_version;
  if (m.producer) c->root->producer = kiln_graph_strdup(c->root, m.producer);
  KILN_TRY(build_graph(c, c->root, m.graph));
  KILN_TRYF(kiln_graph_verify(c->root), "model failed verification after import");
  return KILN_OK;
}

static kiln_status import_src(kiln_onnx_src *src, const uint8_t *data, size_t len,
                              kiln_graph **out) {
  ox_ctx *c = kiln_xcalloc(1, sizeof *c);
  c->src = *src;
  c->scratch = kiln_arena_new();
  c->root = kiln_graph_new("");
  kiln_status st = import_model(c, data, len);
  if (st) kiln_graph_free(c->root);
  else *out = c->root;
  kiln_arena_free(c->scratch);
  free(c);
  return st;
}

kiln_status kiln_onnx_load_bytes(const void *data, size_t len, const char *base_dir,
                                 kiln_graph **out) {
  kiln_onnx_src src;
  memset(&src, 0, sizeof src);
  kiln_wire_ctx_init(&src.w, data, len, "model");
  src.base_dir = base_dir;
  return import_src(&src, data, len, out);
}

char *kiln_onnx_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kiln_xstrdup(".");
  if (slash == path) return kiln_xstrdup("/");
  char *d = kiln_xstrdup(path);
  d[slash - path] = '\0';
  return d;
}

/* Maps the file read-only; falls back to reading it when it cannot be mapped. */
kiln_status kiln_onnx_map_file(const char *path, uint8_t **out, size_t *out_len, bool *mapped) {
  int fd;
  struct stat sb;
  *mapped = false;
  KILN_TRY(kiln_open_read(path, &fd)); /* a folder or a FIFO: a clear error, never a wait */
  if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      close(fd);
      *out = p, *out_len = (size_t)sb.st_size, *mapped = true;
      return KILN_OK;
    }
  }
  close(fd);
  return kiln_read_file(path, (char **)out, out_len);
}

void kiln_onnx_unmap(uint8_t *data, size_t len, bool mapped) {
  if (mapped) munmap(data, len);
  else free(data);
}

kiln_status kiln_onnx_load(const char *path, kiln_graph **out) {
  uint8_t *data;
  size_t len;
  bool mapped;
  KILN_TRY(kiln_onnx_map_file(path, &data, &len, &mapped));
  if (len == 0) {
    kiln_onnx_unmap(data, len, mapped);
    return kiln_invalid("%s: the file is empty (an ONNX model is a serialized ModelProto)", path);
  }
  kiln_onnx_src src;
  memset(&src, 0, sizeof src);
  kiln_wire_ctx_init(&src.w, data, len, "model");
  char *dir = kiln_onnx_dir_of(path);
  src.base_dir = dir;
  src.mapped = mapped;
  kiln_status st = import_src(&src, data, len, out);
  kiln_onnx_unmap(data, len, mapped);
  free(dir);
  if (st) return kiln_status_annotate(st, "%s", path);
  return KILN_OK;
}
