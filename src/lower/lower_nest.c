/* Helpers shared by the lowerings: static types, loop nests over shapes and the index
 * arithmetic of row-major and broadcast accesses. */
#include <stdio.h>
#include <string.h>

#include "base/mutate.h"
#include "lower_ops.h"

const kiln_type *kiln_lower_static(const kiln_graph *g, int v) {
  if (v < 0 || v >= g->values.len) return NULL;
  const kiln_type *t = &g->values.data[v].type;
  if (t->kind != KILN_TYPE_TENSOR || !kiln_type_is_static(t)) return NULL;
  if (t->dtype == KILN_STRING || !kiln_dtype_valid(t->dtype)) return NULL;
  return t;
}

bool kiln_lower_node_static(const kiln_graph *g, const kiln_node *n) {
  for (int k = 0; k < n->n_inputs; k++)
    if (n->inputs[k] >= 0 && !kiln_lower_static(g, n->inputs[k])) return false;
  for (int k = 0; k < n->n_outputs; k++)
    if (n->outputs[k] >= 0 && !kiln_lower_static(g, n->outputs[k])) return false;
  return true;
}

/* Inference checks every element count (src/ops/infer.c); -1 should an overflow slip by. */
int64_t kiln_lower_numel(const kiln_type *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    if (t->dims[d].value < 0 || kiln_mul_overflow_i64(n, t->dims[d].value, &n)) return -1;
  return n;
}

bool kiln_lower_dtype_ok(kiln_dtype t) {
  return kiln_tile_arith_type(t) || t == KILN_F16 || t == KILN_BF16;
}

/* The precision decision site of the lowering: every compute and accumulate type comes
 * from the module's policy (kiln_lower_opts.precision). */
kiln_dtype kiln_lower_compute_type(const kiln_tkernel *k, kiln_prec_class cls, kiln_dtype t) {
  return kiln_precision_compute(k->module->lower_precision, cls, t);
}

kiln_dtype kiln_lower_acc_type(const kiln_tkernel *k, kiln_prec_class cls, kiln_dtype t) {
  return kiln_precision_accumulate(k->module->lower_precision, cls, t);
}

kiln_texpr *kiln_lower_load(kiln_tkernel *k, kiln_prec_class cls, int buf, kiln_texpr *index) {
  kiln_texpr *e = kiln_tload(k, buf, index);
  return kiln_tcast(k, kiln_lower_compute_type(k, cls, e->type), e);
}

kiln_texpr *kiln_lower_to_storage(kiln_tkernel *k, kiln_dtype dtype, kiln_texpr *v) {
  return kiln_tcast(k, dtype, v);
}

void kiln_lower_nest(kiln_tkernel *k, kiln_tblock *parent, int rank, const int64_t *dims,
                     const char *prefix, bool vector_inner, kiln_nest *out) {
  out->rank = rank;
  kiln_tblock *b = parent;
  int64_t total = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  /* the schedule's parallel loop: an outer one, or the only one of a 1-D nest */
  int64_t pm = k->module->par_min_elements;
  int par = rank == 1 ? (total < pm ? -1 : 0) : kiln_sched_nest_parallel(total, pm, rank - 1, dims);
  for (int d = 0; d < rank; d++) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", prefix, d);
    out->dims[d] = dims[d];
    out->vars[d] = kiln_tkernel_var(k, name, KILN_I64);
    kiln_loop_kind kind = d == par ? KILN_LOOP_PARALLEL : KILN_LOOP_SERIAL;
    if (d == rank - 1 && d != par) kind = vector_inner ? KILN_LOOP_VECTOR : KILN_LOOP_SERIAL;
    kiln_tstmt *loop = kiln_tfor(k, out->vars[d], kiln_tint(k, dims[d]), kind);
    kiln_tblock_push(k, b, loop);
    b = &loop->body;
  }
  out->body = b;
}

kiln_texpr *kiln_lower_bcast_index(kiln_tkernel *k, const kiln_nest *n, const kiln_type *t) {
  kiln_texpr *idx = kiln_tint(k, 0);
  int64_t stride = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    int od = KILN_MUTANT(20) ? d : n->rank - t->rank + d; /* mutant 20: left-aligned broadcast */
    int64_t ext = t->dims[d].value;
    if ((ext != 1 || KILN_MUTANT(362)) && od >= 0)
      idx = /* mutant 362: size-1 dims indexed */
          kiln_tadd(k, kiln_tmul(k, kiln_tv(k, n->vars[od]), stride), idx);
    stride *= ext;
  }
  return idx;
}

kiln_texpr *kiln_lower_index(kiln_tkernel *k, int rank, const int64_t *dims,
                             kiln_texpr *const *idx) {
  kiln_texpr *e = kiln_tint(k, 0);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; d--) {
    if (dims[d] != 1) e = kiln_tadd(k, kiln_tmul(k, idx[d], stride), e);
    stride *= dims[d];
  }
  return e;
}

bool kiln_lower_const_ints(const kiln_graph *g, int v, int64_t *out, int max, int *n) {
  if (v < 0 || g->values.data[v].kind != KILN_VALUE_CONST) return false;
  const kiln_tensor *t = g->values.data[v].data;
  if (!t || !kiln_dtype_is_int(t->dtype) || t->numel > max) return false;
  for (int64_t i = 0; i < t->numel; i++) out[i] = kiln_load_i64(t->dtype, t->data, (size_t)i);
  *n = (int)t->numel;
  return true;
}
