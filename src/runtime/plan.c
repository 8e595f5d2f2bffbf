/* Static memory planning over the steps of a program.
 *
 * 1. Liveness: each value a step defines (kernel output, fallback output, alias target)
 *    lives from that step to its last reader; an alias step makes its target a view of the
 *    source, so both share one storage whose life covers every reader of either. Graph
 *    outputs live to the end. Scratch arguments are storages of one step.
 * 2. In-place: a kernel output may take the storage of an input parameter that dies at the
 *    step (kiln_step.inplace), when no other argument of the step reads that storage.
 * 3. Placement: each storage is an interval of steps with a byte size; offsets come from a
 *    greedy placement (each block at the best-fitting gap among the blocks already placed
 *    that overlap it in time) under several block orders; the smallest arena wins.
 * The lower bound is the largest sum of bytes of storages live at one step.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mutate.h"
#include "graph/analysis.h"
#include "graph/graph_text.h"
#include "ops/ops.h"
#include "runtime.h"

#define PLAN_ALIGN 64

typedef struct block {
  int first, last; /* steps */
  int64_t bytes;   /* aligned */
  int64_t offset;
  int rank; /* position in the placer's live index (by first step) */
} block;

typedef struct liveness {
  int n_steps, n_values;
  kiln_loc *loc; /* per value: kind and (for INPUT/CONST) index */
  int *storage;  /* per value: its storage block (ARENA values), else -1 */
  int *def;      /* per value: defining step, -1 if not defined by a step */
  KILN_VEC(block) blocks;
  int *arg_block; /* per flat step argument: SCRATCH: its block, else -1 */
  int *arg_base;  /* per step */
  int n_inplace;
} liveness;

static int64_t align_up(int64_t n) {
  if (KILN_MUTANT(79)) return n / PLAN_ALIGN * PLAN_ALIGN; /* mutant 79: rounded down */
  return (n + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

static void liveness_free(liveness *L) {
  free(L->loc);
  free(L->storage);
  free(L->def);
  kiln_vec_free(&L->blocks);
  free(L->arg_block);
  free(L->arg_base);
}

/* Bytes of a value placed in the arena; false when it cannot live there (HEAP). */
static bool value_static_bytes(const kiln_value *v, int64_t *out) {
  const kiln_type *t = &v->type;
  if (t->kind != KILN_TYPE_TENSOR || !kiln_type_is_static(t) || t->dtype == KILN_STRING ||
      !kiln_dtype_valid(t->dtype))
    return false;
  int64_t dims[KILN_MAX_RANK], n;
  for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i].value;
  kiln_status st = kiln_shape_numel(t->rank, dims, &n);
  if (st) {
    kiln_status_free(st);
    return false;
  }
  if (KILN_MUTANT(250) && t->rank == 0) n = 0;  /* mutant 250: a scalar counted as no element */
  if (KILN_MUTANT(123) && n == 0) return false; /* mutant 123: an empty tensor has no block */
  int64_t bytes;
  int64_t esize = KILN_MUTANT(82) ? 4 : (int64_t)kiln_dtype_size(t->dtype); /* mutant 82 */
  if (kiln_mul_overflow_i64(n, esize, &bytes)) return false;
  if (KILN_MUTANT(248) && (t->dtype == KILN_I4 || t->dtype == KILN_U4))
    bytes = (n + 1) / 2; /* mutant 248: 4-bit elements packed two a byte (as ONNX stores them) */
  *out = bytes;
  return true;
}

static int new_block(liveness *L, int step, int64_t bytes) {
  block b = {step, step, align_up(bytes), -1, 0};
  kiln_vec_push(&L->blocks, b);
  return L->blocks.len - 1;
}

/* Marks value v read (or written) at step s: extends its storage's life. */
static void touch(liveness *L, int v, int s) {
  if (v < 0 || L->storage[v] < 0) return;
  block *b = &L->blocks.data[L->storage[v]];
  if (s > b->last) b->last = s;
}

static kiln_status define(liveness *L, const kiln_graph *g, int v, int s) {
  const kiln_value *val = &g->values.data[v];
  if (val->kind != KILN_VALUE_NODE)
    return KILN_BUG("step %d writes '%s', which is not a node output", s, val->name);
  if (L->def[v] >= 0)
    return KILN_BUG("value '%s' defined by steps %d and %d", val->name, L->def[v], s);
  L->def[v] = s;
  int64_t bytes;
  if (!value_static_bytes(val, &bytes)) {
    L->loc[v].kind = KILN_LOC_HEAP;
    return KILN_OK;
  }
  L->loc[v].kind = KILN_LOC_ARENA;
  L->loc[v].bytes = bytes;
  L->storage[v] = new_block(L, s, bytes);
  if (KILN_MUTANT(191)) /* mutant 191: the life begins after the defining step */
    L->blocks.data[L->storage[v]].first = L->blocks.data[L->storage[v]].last = s + 1;
  return KILN_OK;
}

static kiln_status use(liveness *L, const kiln_graph *g, int v, int s) {
  if (v < 0) return KILN_OK;
  if (v >= L->n_values) return KILN_BUG("step %d: no value %d", s, v);
  kiln_value_kind k = g->values.data[v].kind;
  if (k == KILN_VALUE_NODE && L->def[v] < 0)
    return KILN_BUG("step %d reads '%s' before any step defines it", s, g->values.data[v].name);
  touch(L, v, s);
  return KILN_OK;
}

/* Values of g read by the subgraphs of node n (their OUTER values). */
static kiln_status use_sub_outers(liveness *L, const kiln_graph *g, const kiln_node *n, int s) {
  kiln_outer_iter it = kiln_outer_reads(g, n);
  for (int v; kiln_outer_next(&it, &v);) KILN_TRY(use(L, g, v, s));
  return KILN_OK;
}

static kiln_status scan_fallback(liveness *L, const kiln_graph *g, const kiln_step *st, int s) {
  if (st->node < 0 || st->node >= g->nodes.len)
    return KILN_BUG("fallback step %d: no node %d", s, st->node);
  const kiln_node *n = &g->nodes.data[st->node];
  for (int k = 0; k < n->n_inputs && !KILN_MUTANT(252); k++) /* mutant 252: inputs not read */
    KILN_TRY(use(L, g, n->inputs[k], s));
  if (!KILN_MUTANT(118)) KILN_TRY(use_sub_outers(L, g, n, s)); /* mutant 118: subgraph reads */
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0) KILN_TRY(define(L, g, n->outputs[k], s));
  return KILN_OK;
}

static kiln_status scan_alias(liveness *L, const kiln_graph *g, const kiln_step *st, int s) {
  if (st->src < 0 || st->src >= L->n_values || st->dst < 0 || st->dst >= L->n_values)
    return KILN_BUG("alias step %d: bad values", s);
  KILN_TRY(use(L, g, st->src, s));
  if (L->def[st->dst] >= 0 || g->values.data[st->dst].kind != KILN_VALUE_NODE)
    return KILN_BUG("alias step %d redefines '%s'", s, g->values.data[st->dst].name);
  L->def[st->dst] = s;
  L->loc[st->dst] = L->loc[st->src];
  L->storage[st->dst] = L->storage[st->src]; /* mutant 153: the view given a block of its own */
  if (KILN_MUTANT(153) && L->loc[st->src].kind == KILN_LOC_ARENA)
    L->storage[st->dst] = new_block(L, s, L->loc[st->src].bytes);
  int64_t bytes;
  if (L->loc[st->src].kind == KILN_LOC_ARENA &&
      (!value_static_bytes(&g->values.data[st->dst], &bytes) || bytes != L->loc[st->src].bytes))
    return KILN_BUG("alias step %d: '%s' and '%s' differ in size", s, g->values.data[st->src].name,
                    g->values.data[st->dst].name);
  return KILN_OK;
}

/* Whether kernel parameter a is written: from the kernel's buffers when the program has a
 * module, else a value's first appearance is its definition. */
static bool arg_written(const liveness *L, const kiln_program *p, const kiln_step *st, int a) {
  const kiln_tmodule *m = p->module;
  if (m && st->kernel >= 0 && st->kernel < m->kernels.len &&
      a < m->kernels.data[st->kernel]->n_params)
    return !m->kernels.data[st->kernel]->bufs.data[a].readonly;
  return p->graph->values.data[st->args[a].id].kind == KILN_VALUE_NODE &&
         L->def[st->args[a].id] < 0;
}

static kiln_status scan_kernel(liveness *L, const kiln_program *p, const kiln_step *st, int s) {
  const kiln_graph *g = p->graph;
  for (int a = 0; a < st->n_args; a++) {
    const kiln_arg *arg = &st->args[a];
    if (arg->kind == KILN_ARG_SCRATCH) {
      L->arg_block[L->arg_base[s] +
                   a] = /* mutant 223: the scratch's size taken as 4-byte elements */
          new_block(L, s, KILN_MUTANT(223) ? arg->bytes / 4 : arg->bytes);
    } else if (arg->kind == KILN_ARG_PACKED) {
      if (arg->id < 0 || arg->id >= p->packed.len)
        return KILN_BUG("step %d: no packed constant %d", s, arg->id);
    } else if (arg->id < 0 || arg->id >= L->n_values) {
      return KILN_BUG("step %d: no value %d", s, arg->id);
    } else if (arg_written(L, p, st, a)) {
      KILN_TRY(define(L, g, arg->id, s));
      if (L->loc[arg->id].kind != KILN_LOC_ARENA)
        return KILN_BUG("kernel step %d writes '%s', whose type is not static", s,
                        g->values.data[arg->id].name);
    } else {
      KILN_TRY(use(L, g, arg->id, s));
      if (L->loc[arg->id].kind == KILN_LOC_HEAP)
        return KILN_BUG("kernel step %d reads '%s', whose type is not static", s,
                        g->values.data[arg->id].name);
    }
  }
  return KILN_OK;
}

/* True when storage blk is bound to an argument of step st other than argument `except`. */
static bool storage_read_elsewhere(const liveness *L, const kiln_step *st, int blk, int except) {
  for (int a = 0; a < st->n_args; a++)
    if (a != except && st->args[a].kind == KILN_ARG_VALUE &&
        (KILN_MUTANT(337) ? st->args[a].id == st->args[except].id /* mutant 337: by value */
                          : L->storage[st->args[a].id] == blk))
      return true;
  return false;
}

/* Output argument o takes the storage of input argument i at step s, when allowed. */
static void try_inplace(liveness *L, const kiln_graph *g, const kiln_step *st, int s, int o,
                        int i) {
  const kiln_arg *ao = &st->args[o], *ai = &st->args[i];
  if (ao->kind != KILN_ARG_VALUE || ai->kind != KILN_ARG_VALUE || ao->id == ai->id) return;
  int vo = ao->id, vi = ai->id;
  if (L->def[vo] != s || L->storage[vo] < 0 || L->storage[vi] < 0) return;
  int bo = L->storage[vo], bi = L->storage[vi];
  if (bo == bi || (L->blocks.data[bi].last != s && !KILN_MUTANT(46)) || /* mutant 46 */
      L->blocks.data[bo].bytes != L->blocks.data[bi].bytes)
    return;
  if (storage_read_elsewhere(L, st, bi, i) || storage_read_elsewhere(L, st, bo, o)) return;
  (void)g;
  /* every value of storage bo (vo and any later alias: none yet) moves to bi */
  for (int v = 0; v < L->n_values; v++) /* mutant 190: only vo moves (its views stay on bo) */
    if (L->storage[v] == bo && (!KILN_MUTANT(190) || v == vo)) L->storage[v] = bi;
  L->blocks.data[bi].last = L->blocks.data[bo].last > s && !KILN_MUTANT(83)
                                ? L->blocks.data[bo].last
                                : s; /* mutant 83: the merged life ends at the in-place step */
  L->blocks.data[bo].bytes = 0;      /* dead block */
  L->blocks.data[bo].last = -1;
  L->n_inplace++;
}

static void extend_outputs(liveness *L, const kiln_graph *g) {
  if (KILN_MUTANT(80)) return; /* mutant 80: graph outputs live only to their last reader */
  for (int i = 0; i < g->outputs.len; i++) /* mutant 283: to the last step, not past it */
    touch(L, g->outputs.data[i], L->n_steps - KILN_MUTANT(283));
}

static void init_locs(liveness *L, const kiln_graph *g) {
  for (int v = 0; v < L->n_values; v++) {
    L->storage[v] = -1;
    L->def[v] = -1;
    if (g->values.data[v].kind == KILN_VALUE_CONST) L->loc[v] = (kiln_loc){KILN_LOC_CONST, v, 0, 0};
  }
  for (int i = 0; i < g->inputs.len; i++)
    L->loc[g->inputs.data[i]] = (kiln_loc){KILN_LOC_INPUT, i, 0, 0};
}

/* Pass 1 defines and reads; in-place decisions need the final last uses, so they are taken
 * in pass 2, step by step (a merge at step s only extends lives past s). */
static kiln_status compute_liveness(const kiln_program *p, bool inplace, liveness *L) {
  const kiln_graph *g = p->graph;
  memset(L, 0, sizeof *L);
  L->n_steps = p->steps.len;
  L->n_values = g->values.len;
  L->loc = kiln_xcalloc((size_t)L->n_values + 1, sizeof *L->loc);
  L->storage = kiln_xcalloc((size_t)L->n_values + 1, sizeof *L->storage);
  L->def = kiln_xcalloc((size_t)L->n_values + 1, sizeof *L->def);
  L->arg_base = kiln_xcalloc((size_t)L->n_steps + 1, sizeof *L->arg_base);
  int n_args = 0;
  for (int s = 0; s < L->n_steps; s++) L->arg_base[s] = n_args, n_args += p->steps.data[s].n_args;
  L->arg_block = kiln_xcalloc((size_t)n_args + 1, sizeof *L->arg_block);
  for (int a = 0; a < n_args; a++) L->arg_block[a] = -1;
  init_locs(L, g);
  for (int s = 0; s < L->n_steps; s++) {
    const kiln_step *st = &p->steps.data[s];
    kiln_status e = st->kind == KILN_STEP_KERNEL     ? scan_kernel(L, p, st, s)
                    : st->kind == KILN_STEP_FALLBACK ? scan_fallback(L, g, st, s)
                    : st->kind == KILN_STEP_ALIAS    ? scan_alias(L, g, st, s)
                                                     : KILN_BUG("step kind");
    KILN_TRYF(e, "memory plan, step %d", s);
  }
  for (int i = 0; i < g->outputs.len; i++) {
    int v = g->outputs.data[i];
    if (v >= 0 && g->values.data[v].kind == KILN_VALUE_NODE && L->def[v] < 0)
      return KILN_BUG("memory plan: no step computes output '%s'", g->values.data[v].name);
  }
  if (!KILN_MUTANT(125)) extend_outputs(L, g); /* mutant 125: after the in-place merges */
  for (int s = 0; inplace && s < L->n_steps; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL || !st->inplace) continue;
    for (int o = 0; o < st->n_args; o++)
      if (st->inplace[o] >= 0 && st->inplace[o] < st->n_args)
        try_inplace(L, g, st, s, o, st->inplace[o]);
  }
  if (KILN_MUTANT(125)) extend_outputs(L, g);
  return KILN_OK;
}

/* ---- placement ---- */
typedef int (*block_cmp)(const void *, const void *);
static _Thread_local const block *g_sort_blocks; /* qsort has no context argument */

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)
static int dur(const block *b) {
  return b->last - b->first;
}
static int cmp_size(const void *x, const void *y) {
  const block *a = &g_sort_blocks[*(const int *)x], *b = &g_sort_blocks[*(const int *)y];
  int c = CMP(b->bytes, a->bytes);
  if (!c) c = CMP(dur(b), dur(a));
  return c ? c : CMP(*(const int *)x, *(const int *)y);
}
static int cmp_duration(const void *x, const void *y) {
  const block *a = &g_sort_blocks[*(const int *)x], *b = &g_sort_blocks[*(const int *)y];
  int c = CMP(dur(b), dur(a));
  if (!c) c = CMP(b->bytes, a->bytes);
  return c ? c : CMP(*(const int *)x, *(const int *)y);
}
static int cmp_time(const void *x, const void *y) {
  const block *a = &g_sort_blocks[*(const int *)x], *b = &g_sort_blocks[*(const int *)y];
  int c = CMP(a->first, b->first);
  if (!c) c = CMP(b->bytes, a->bytes);
  return c ? c : CMP(*(const int *)x, *(const int *)y);
}
static int cmp_area(const void *x, const void *y) {
  const block *a = &g_sort_blocks[*(const int *)x], *b = &g_sort_blocks[*(const int *)y];
  double aa = (double)a->bytes * (dur(a) + 1), ab = (double)b->bytes * (dur(b) + 1);
  int c = CMP(ab, aa);
  return c ? c : CMP(*(const int *)x, *(const int *)y);
}

typedef struct heuristic {
  const char *name;
  block_cmp cmp;
  bool best_fit; /* smallest gap that fits; else the lowest */
} heuristic;

static const heuristic HEURISTICS[] = {
    {"size/best-fit", cmp_size, true},         {"size/first-fit", cmp_size, false},
    {"duration/best-fit", cmp_duration, true}, {"time/best-fit", cmp_time, true},
    {"area/best-fit", cmp_area, true},
};
#define N_HEURISTICS ((int)(sizeof HEURISTICS / sizeof HEURISTICS[0]))

static int cmp_offset(const void *x, const void *y) {
  const block *a = *(block *const *)x, *b = *(block *const *)y;
  return KILN_MUTANT(221) ? CMP(b->offset, a->offset) /* mutant 221: highest offset first */
                          : CMP(a->offset, b->offset);
}

/* Offset for b among the placed blocks that overlap it in time. */
static int64_t fit(const block *b, block **near, int n, bool best_fit) {
  qsort(near, (size_t)n, sizeof *near, cmp_offset);
  int64_t cursor = 0, best = -1, best_gap = INT64_MAX;
  for (int i = 0; i < n; i++) {
    int64_t gap = near[i]->offset - cursor;
    if (gap >= b->bytes && gap < best_gap) {
      best = cursor, best_gap = gap;
      if (!best_fit) break;
    }
    int64_t end = near[i]->offset + (KILN_MUTANT(154) ? b : near[i])->bytes; /* mutant 154 */
    if (end > cursor || KILN_MUTANT(152)) cursor = end; /* mutant 152: the last end, not the max */
  }
  if (best >= 0 && KILN_MUTANT(187)) return best_gap; /* mutant 187: the gap's size */
  return best >= 0 ? best : cursor;
}

/* The placed blocks by start step, to find those whose lives overlap a new block's without
 * looking at every placed one (a scan over them made the plan quadratic in the steps): a
 * max-tree over the blocks sorted by first step, each leaf holding its block's last step
 * once placed (-1 before). A query descends only into subtrees that hold an overlap. */
typedef struct live_index {
  int n, size;   /* blocks; leaves (a power of two) */
  int *by_first; /* block ids by first step (then id) */
  int *max_last; /* the tree, 2 * size entries; node 1 is the root */
} live_index;

static _Thread_local const block *g_index_blocks;
static int cmp_first(const void *x, const void *y) {
  const block *a = &g_index_blocks[*(const int *)x], *b = &g_index_blocks[*(const int *)y];
  int c = KILN_MUTANT(188) ? CMP(a->last, b->last) : CMP(a->first, b->first); /* mutant 188 */
  return c ? c : CMP(*(const int *)x, *(const int *)y);
}

static void index_init(live_index *ix, block *blocks, int n) {
  ix->n = n;
  for (ix->size = 1; ix->size < n; ix->size *= 2) {
  }
  ix->by_first = kiln_xcalloc((size_t)n + 1, sizeof *ix->by_first);
  ix->max_last = kiln_xcalloc(2 * (size_t)ix->size, sizeof *ix->max_last);
  for (int i = 0; i < n; i++) ix->by_first[i] = i;
  g_index_blocks = blocks;
  qsort(ix->by_first, (size_t)n, sizeof *ix->by_first, cmp_first);
  for (int i = 0; i < n; i++) blocks[ix->by_first[i]].rank = i;
}

static void index_clear(live_index *ix) {
  for (int i = 0; i < 2 * ix->size; i++) ix->max_last[i] = -1;
}

static void index_place(live_index *ix, const block *b) {
  int i = ix->size + b->rank;
  ix->max_last[i] = KILN_MUTANT(155) ? b->first : b->last; /* mutant 155: the first step */
  for (i /= 2; i >= 1; i /= 2) /* mutant 81: the left child's value taken either way */
    ix->max_last[i] = ix->max_last[2 * i] > ix->max_last[2 * i + 1] || KILN_MUTANT(81)
                          ? ix->max_last[2 * i]
                          : ix->max_last[2 * i + 1];
}

/* Appends to near the placed blocks under tree node `node` (leaves lo..) whose position is
 * below `end` (first step <= b's last) and whose last step is >= b's first. */
static void index_overlaps(const live_index *ix, block *blocks, const block *b, int node, int lo,
                           int width, int end, block **near, int *m) {
  if (lo >= end || ix->max_last[node] < (KILN_MUTANT(189) ? b->last : b->first))
    return; /* mutant 189: pruned against the new block's last step */
  if (width == 1) {
    block *p = &blocks[ix->by_first[lo]];
    if (!(KILN_MUTANT(47) && (p->first == b->last || b->first == p->last)))
      near[(*m)++] = p; /* mutant 47: lives that meet at one step taken as disjoint */
    return;
  }
  index_overlaps(ix, blocks, b, 2 * node, lo, width / 2, end, near, m);
  index_overlaps(ix, blocks, b, 2 * node + 1, lo + width / 2, width / 2, end, near, m);
}

/* The number of blocks whose first step is <= step (a prefix of by_first). */
static int index_prefix(const live_index *ix, const block *blocks, int step) {
  int lo = 0, hi = ix->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (blocks[ix->by_first[mid]].first < step + !KILN_MUTANT(156)) lo = mid + 1; /* mutant 156 */
    else hi = mid;
  }
  return lo;
}

/* Places the blocks in the given order; returns the arena size. */
static int64_t place_order(block *blocks, int n, const int *order, bool best_fit, live_index *ix,
                           block **near) {
  int64_t top = 0;
  index_clear(ix);
  for (int i = 0; i < n; i++) {
    block *b = &blocks[order[i]];
    if (b->last < b->first + KILN_MUTANT(119) || b->bytes == 0) { /* dead or empty; mutant 119 */
      b->offset = 0;
      continue;
    }
    int m = 0;
    int upto = index_prefix(ix, blocks, KILN_MUTANT(117) ? b->first : b->last); /* mutant 117 */
    index_overlaps(ix, blocks, b, 1, 0, ix->size, upto, near, &m);
    b->offset = fit(b, near, m, best_fit);
    if (b->offset + b->bytes > top || KILN_MUTANT(312)) /* mutant 312: the last end, not the max */
      top = b->offset + b->bytes;
    index_place(ix, b);
  }
  return top;
}

/* The search state: the best placement found so far. */
typedef struct placer {
  block *blocks;
  int n;
  int *order, *trial;
  live_index ix;
  block **near;
  int64_t best;
  int64_t *best_off;
  int best_h; /* index in HEURISTICS, or N_HEURISTICS for the local search */
} placer;

static void keep_if_better(placer *P, int64_t size, int h) {
  if (size >= P->best) return;
  P->best = size, P->best_h = h;
  for (int i = 0; i < P->n - KILN_MUTANT(282); i++) /* mutant 282: the last block's not kept */
    P->best_off[i] = P->blocks[i].offset;
}

static int64_t place_heuristic(placer *P, const heuristic *h, int *order) {
  for (int i = 0; i < P->n; i++) order[i] = i;
  g_sort_blocks = P->blocks;
  qsort(order, (size_t)P->n, sizeof *order, h->cmp);
  return place_order(P->blocks, P->n, order, h->best_fit, &P->ix, P->near);
}

/* Local search from the best order: move one block earlier in the order, keep the move
 * when the arena does not grow. Deterministic; stops at the lower bound or after a budget
 * of about 2e7 block comparisons. */
static void local_search(placer *P, const int *start, int64_t start_size, int64_t bound) {
  int n = P->n;
  if (n < 3) return;
  int64_t budget = 20000000 / ((int64_t)n * n + 1), cur = start_size;
  if (budget > 3000) budget = 3000;
  uint64_t rng = 0x2545f4914f6cdd1dull;
  memcpy(P->order, start, (size_t)n * sizeof *start);
  for (int64_t it = 0; it < budget && P->best > bound; it++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int j = 1 + (int)(rng % (uint64_t)(n - 1)), i = (int)((rng >> 32) % (uint64_t)j);
    memcpy(P->trial, P->order, (size_t)n * sizeof *P->order);
    int moved = P->trial[j];
    /* mutant 367: one block too few shifted (the moved block twice, the one before it lost) */
    memmove(P->trial + i + 1, P->trial + i, (size_t)(j - i - KILN_MUTANT(367)) * sizeof *P->trial);
    P->trial[i] = moved;
    int64_t size = place_order(P->blocks, n, P->trial, true, &P->ix, P->near);
    if (size > cur) continue;
    cur = size;
    memcpy(P->order, P->trial, (size_t)n * sizeof *P->order);
    keep_if_better(P, size, N_HEURISTICS);
  }
}

/* Every heuristic (or the one asked for), then a local search from the best; the smallest
 * arena's offsets are left in the blocks. */
static void place_best(block *blocks, int n, int only, bool stress, int64_t bound, int64_t *size,
                       int *h_out) {
  placer P = {blocks, n, NULL, NULL, {0, 0, NULL, NULL}, NULL, INT64_MAX, NULL, -1};
  P.order = kiln_xcalloc((size_t)n + 1, sizeof *P.order);
  P.trial = kiln_xcalloc((size_t)n + 1, sizeof *P.trial);
  index_init(&P.ix, blocks, n);
  P.near = kiln_xcalloc((size_t)n + 1, sizeof *P.near);
  P.best_off = kiln_xcalloc((size_t)n + 1, sizeof *P.best_off);
  int *best_order = kiln_xcalloc((size_t)n + 1, sizeof *best_order);
  int worst_h = -1;
  int64_t worst = -1;
  for (int h = 0; h < N_HEURISTICS; h++) {
    if (only >= 0 && h != only) continue;
    int64_t s = place_heuristic(&P, &HEURISTICS[h], P.order);
    if (s < P.best) memcpy(best_order, P.order, (size_t)n * sizeof *best_order);
    if (s > worst) worst = s, worst_h = h;
    keep_if_better(&P, s, h);
  }
  if (only < 0 && stress && n >= 3) { /* verification: the search from the worst order */
    int64_t s = place_heuristic(&P, &HEURISTICS[worst_h], best_order);
    P.best = INT64_MAX;
    keep_if_better(&P, s, worst_h);
    local_search(&P, best_order, s, -1);
  } else if (only < 0) local_search(&P, best_order, P.best, bound);
  for (int i = 0; i < n; i++) blocks[i].offset = P.best_off[i];
  *size = P.best == INT64_MAX ? 0 : P.best;
  *h_out = P.best_h;
  free(P.order), free(P.trial), free(P.ix.by_first), free(P.ix.max_last), free(P.near),
      free(P.best_off), free(best_order);
}

static int64_t lower_bound(const liveness *L) {
  int64_t *live = kiln_xcalloc((size_t)L->n_steps + 2, sizeof *live);
  for (int i = 0; i < L->blocks.len; i++) {
    const block *b = &L->blocks.data[i];
    for (int s = b->first; s <= b->last && b->bytes; s++) live[s] += b->bytes;
  }
  int64_t best = 0;
  for (int s = 0; s <= L->n_steps; s++)
    if (live[s] > best) best = live[s];
  free(live);
  return best;
}

static void fill_plan(const liveness *L, const kiln_program *p, kiln_plan *plan) {
  plan->n_values = L->n_values;
  plan->loc = kiln_xcalloc((size_t)L->n_values + 1, sizeof *plan->loc);
  for (int v = 0; v < L->n_values; v++) {
    plan->loc[v] = L->loc[v];
    if (L->loc[v].kind == KILN_LOC_ARENA)
      plan->loc[v].offset = L->blocks.data[L->storage[v]].offset;
  }
  int n_args = 0;
  plan->arg_base = kiln_xcalloc((size_t)L->n_steps + 1, sizeof *plan->arg_base);
  for (int s = 0; s < L->n_steps; s++)
    plan->arg_base[s] = n_args, n_args += p->steps.data[s].n_args;
  plan->arg_offset = kiln_xcalloc((size_t)n_args + 1, sizeof *plan->arg_offset);
  for (int a = 0; a < n_args; a++)
    plan->arg_offset[a] = L->arg_block[a] >= 0 && !KILN_MUTANT(222) /* mutant 222: offset 0 */
                              ? L->blocks.data[L->arg_block[a]].offset
                              : L->arg_block[a] >= 0 ? 0 : -1;
  plan->n_inplace = L->n_inplace;
}

/* Offsets and sums stay far from overflow: the blocks together (a bound on any arena and
 * on the lower bound) must be under 2^62 bytes; each block is a checked tensor size. */
static kiln_status check_total(const liveness *L) {
  int64_t total = 0;
  for (int i = 0; i < L->blocks.len; i++) {
    int64_t b = L->blocks.data[i].bytes;
    if (b < 0 || kiln_add_overflow_i64(total, b, &total) || total > ((int64_t)1 << 62))
      return kiln_mem_check(-1, "the memory plan (its values together)");
  }
  return KILN_OK;
}

kiln_status kiln_plan_program(const kiln_program *p, const kiln_plan_opts *o, kiln_plan **out) {
  kiln_plan_opts dflt = {false, -1, false};
  if (!o) o = &dflt;
  if (o->heuristic >= N_HEURISTICS)
    return kiln_invalid("memory plan: no heuristic %d", o->heuristic);
  KILN_TRYF(kiln_program_verify(p), "memory plan");
  liveness L;
  kiln_status st = compute_liveness(p, !o->no_inplace, &L);
  if (st) {
    liveness_free(&L);
    return st;
  }
  st = check_total(&L);
  if (st) {
    liveness_free(&L);
    return st;
  }
  int64_t bound = lower_bound(&L), size;
  int best_h;
  place_best(L.blocks.data, L.blocks.len, o->heuristic, o->search_stress, bound, &size, &best_h);
  kiln_plan *plan = kiln_xcalloc(1, sizeof *plan);
  fill_plan(&L, p, plan);
  plan->arena_bytes = size;
  plan->lower_bound = bound;
  plan->heuristic = best_h < 0              ? "none"
                    : best_h < N_HEURISTICS ? HEURISTICS[best_h].name
                                            : "local search";
  liveness_free(&L);
  *out = plan;
  return KILN_OK;
}

void kiln_plan_free(kiln_plan *p) {
  if (!p) return;
  free(p->loc);
  free(p->arg_base);
  free(p->arg_offset);
  free(p);
}

/* ---- checking a plan ----
 * Recomputes each arena value's life on its own (first and last step that touches it, to
 * the end for graph outputs) and checks every pair of simultaneously live values: their
 * byte ranges must be disjoint, unless they share storage legitimately: one is an alias of
 * the other (same storage class through alias steps), or one takes the other's storage in
 * place at the step where the first dies and the second is born. */
typedef struct span span;
typedef KILN_VEC(span) span_vec;
struct span {
  int first, last;
  int64_t lo, hi;
  int cls;   /* alias class (a value id), -1 for scratch */
  int value; /* or -1 */
};

static int alias_root(const int *parent, int v) {
  while (parent[v] != v) v = parent[v];
  return v;
}

static bool inplace_pair(const kiln_program *p, int s, int cls_a, int cls_b, const int *parent) {
  const kiln_step *st = &p->steps.data[s];
  if (st->kind != KILN_STEP_KERNEL || !st->inplace) return false;
  for (int o = 0; o < st->n_args; o++) {
    int i = st->inplace[o];
    if (i < 0 || i >= st->n_args || st->args[o].kind != KILN_ARG_VALUE ||
        st->args[i].kind != KILN_ARG_VALUE)
      continue;
    int co = alias_root(parent, st->args[o].id), ci = alias_root(parent, st->args[i].id);
    if ((co == cls_a && ci == cls_b) || (co == cls_b && ci == cls_a)) return true;
  }
  return false;
}

static bool spans_conflict(const kiln_program *p, const span *a, const span *b, const int *parent) {
  if (a->first > b->last || b->first > a->last) return false;
  if (a->lo >= b->hi || b->lo >= a->hi) return false;
  if (a->cls >= 0 && a->cls == b->cls) return false;
  if (a->cls < 0 || b->cls < 0) return true;
  int s = -1; /* the one step both touch, in place */
  if (a->last == b->first) s = a->last;
  else if (b->last == a->first) s = b->last;
  return s < 0 || !inplace_pair(p, s, a->cls, b->cls, parent);
}

static void span_touch(span *sp, int v, int s) {
  if (v < 0 || sp[v].value < 0) return;
  if (sp[v].first < 0 || s < sp[v].first) sp[v].first = s;
  if (s > sp[v].last) sp[v].last = s;
}

static void collect_spans(const kiln_program *p, const kiln_plan *plan, span *sp, int *parent,
                          span_vec *scratch) {
  const kiln_graph *g = p->graph;
  for (int v = 0; v < plan->n_values; v++) {
    parent[v] = v;
    const kiln_loc *l = &plan->loc[v];
    bool arena = l->kind == KILN_LOC_ARENA;
    sp[v] =
        (span){-1, -1, arena ? l->offset : 0, arena ? l->offset + l->bytes : 0, v, arena ? v : -1};
  }
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind == KILN_STEP_ALIAS) {
      span_touch(sp, st->src, s), span_touch(sp, st->dst, s);
      parent[alias_root(parent, st->dst)] = alias_root(parent, st->src);
    } else if (st->kind == KILN_STEP_FALLBACK) {
      const kiln_node *n = &g->nodes.data[st->node];
      for (int k = 0; k < n->n_inputs; k++) span_touch(sp, n->inputs[k], s);
      for (int k = 0; k < n->n_outputs; k++) span_touch(sp, n->outputs[k], s);
    } else {
      for (int a = 0; a < st->n_args; a++) {
        const kiln_arg *arg = &st->args[a];
        if (arg->kind == KILN_ARG_VALUE) span_touch(sp, arg->id, s);
        int64_t off = plan->arg_offset[plan->arg_base[s] + a];
        if (arg->kind == KILN_ARG_SCRATCH)
          kiln_vec_push(scratch, ((span){s, s, off, off + arg->bytes, -1, -1}));
      }
    }
  }
  for (int i = 0; i < g->outputs.len; i++) span_touch(sp, g->outputs.data[i], p->steps.len);
}

/* Subgraph reads of fallback nodes also extend lives: the planner counts them. */
static void touch_sub_reads(const kiln_program *p, span *sp) {
  const kiln_graph *g = p->graph;
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_FALLBACK) continue;
    kiln_outer_iter it = kiln_outer_reads(g, &g->nodes.data[st->node]);
    for (int v; kiln_outer_next(&it, &v);) span_touch(sp, v, s);
  }
}

/* Views share the life of what they view: the class's life is the union of its members'. */
static void merge_alias_lives(span *sp, const int *parent, int n) {
  for (int v = 0; v < n; v++) {
    int r = alias_root(parent, v);
    if (sp[v].value < 0 || sp[v].first < 0 || r == v) continue;
    if (sp[r].first < 0 || sp[v].first < sp[r].first) sp[r].first = sp[v].first;
    if (sp[v].last > sp[r].last) sp[r].last = sp[v].last;
  }
  for (int v = 0; v < n; v++) {
    int r = alias_root(parent, v);
    sp[v].cls = r;
    if (r != v && sp[v].value >= 0) sp[v].first = sp[r].first, sp[v].last = sp[r].last;
  }
}

kiln_status kiln_plan_check(const kiln_program *p, const kiln_plan *plan) {
  int n = plan->n_values;
  span *sp = kiln_xcalloc((size_t)n + 1, sizeof *sp);
  int *parent = kiln_xcalloc((size_t)n + 1, sizeof *parent);
  span_vec all = {0};
  collect_spans(p, plan, sp, parent, &all);
  touch_sub_reads(p, sp);
  merge_alias_lives(sp, parent, n);
  for (int v = 0; v < n; v++)
    if (sp[v].value >= 0 && sp[v].first >= 0) kiln_vec_push(&all, sp[v]);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < all.len; i++) {
    const span *a = &all.data[i];
    if (a->lo < 0 || a->hi > plan->arena_bytes || a->lo % PLAN_ALIGN)
      st = KILN_BUG("memory plan: block [%lld, %lld) outside the arena", (long long)a->lo,
                    (long long)a->hi);
    for (int j = i + 1; !st && j < all.len; j++)
      if (spans_conflict(p, a, &all.data[j], parent))
        st = KILN_BUG("memory plan: overlap of [%lld, %lld) (value %d, steps %d..%d) and "
                      "[%lld, %lld) (value %d, steps %d..%d)",
                      (long long)a->lo, (long long)a->hi, a->value, a->first, a->last,
                      (long long)all.data[j].lo, (long long)all.data[j].hi, all.data[j].value,
                      all.data[j].first, all.data[j].last);
  }
  kiln_vec_free(&all);
  free(sp);
  free(parent);
  return st;
}

void kiln_plan_print(const kiln_program *p, const kiln_plan *plan, kiln_strbuf *out) {
  const kiln_graph *g = p->graph;
  kiln_strbuf_printf(out,
                     "memory plan: arena %lld bytes, lower bound %lld (%.3fx), %d in place, "
                     "order %s\n",
                     (long long)plan->arena_bytes, (long long)plan->lower_bound,
                     plan->lower_bound ? (double)plan->arena_bytes / (double)plan->lower_bound
                                       : 1.0,
                     plan->n_inplace, plan->heuristic);
  for (int v = 0; v < plan->n_values; v++) { /* names as in the IR text: one line each */
    const kiln_loc *l = &plan->loc[v];
    if (l->kind != KILN_LOC_ARENA && l->kind != KILN_LOC_HEAP) continue;
    kiln_strbuf_printf(out, "  ");
    kiln_gtext_name(out, '%', g->values.data[v].name);
    if (l->kind == KILN_LOC_ARENA)
      kiln_strbuf_printf(out, ": [%lld, +%lld)\n", (long long)l->offset, (long long)l->bytes);
    else kiln_strbuf_printf(out, ": heap\n");
  }
}
