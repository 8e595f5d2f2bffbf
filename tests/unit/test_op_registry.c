/* The op registry is complete: every op of ops.def has what every layer needs, or says
 * explicitly why not. For each op:
 *   - a descriptor row (ops/op_desc.c) whose facts agree with each other;
 *   - a reference kernel (eval) and a shape/type inference (src/ops, its family's file);
 *   - a version: the opset that introduced it (generated: op_attrs.c);
 *   - a bound rule, or an explicit perturbation row with its reason (bound_rules.c);
 *   - a generator entry, or an explicit exclusion with its reason (gen_ops.c);
 *   - a lowering, or an explicit reason to fall back to the reference kernel (lower_table.c).
 * Adding an op to ops.def without the rest fails here, naming the op and what it lacks. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "lower/lower.h"
#include "ops/op_attrs.h"
#include "ops/op_desc.h"
#include "ops/ops.h"
#include "verify/bound/bound_internal.h"
#include "verify/gen/gen_internal.h"

static int missing;

static void lacks(kiln_op op, const char *what) {
  fprintf(stderr, "op %s (family %s) lacks %s\n", kiln_op_name(op), kiln_op_family(op), what);
  missing++;
}

/* ---- lowering ----
 * Whether op has a lowering, or else why it falls back: the lowering table indexed by op
 * (lower/lower_table.c). NULL when it has one; "" when it has neither. */
static const char *lowering_of(kiln_op op) {
  if (kiln_lower_has_lowering(op)) return NULL;
  const char *why = kiln_lower_op_reason(op);
  return why ? why : "";
}

/* ---- the walk ---- */
static bool schema_has_graph_attr(kiln_op op) {
  for (const kiln_op_schema_version *v = kiln_op_attr_versions[op]; v && v->since; v++)
    for (const kiln_attr_schema *a = v->attrs; a && a->name; a++)
      if (a->kind == KILN_ATTR_GRAPH || a->kind == KILN_ATTR_GRAPHS) return true;
  return false;
}

/* The descriptor's facts agree with each other and with the schema. */
static void check_desc(kiln_op op) {
  const kiln_op_desc *d = kiln_op_desc_of(op);
  if (d->cls <= KILN_OPC_NONE || d->cls >= KILN_OPC_COUNT) lacks(op, "a descriptor row");
  if (d->ew != KILN_EWD_NONE && d->cls != KILN_OPC_ELEMENTWISE)
    lacks(op, "class elementwise (it has an elementwise dtype class)");
  if (d->compute_bits && d->ew != KILN_EWD_FLOAT)
    lacks(op, "float elementwise dtypes (it has a compute width)");
  if (d->form != KILN_EWF_NONE && strcmp(kiln_op_family(op), "elementwise"))
    lacks(op, "family elementwise (it has an elementwise form, which elementwise.c registers)");
  if (d->form != KILN_EWF_NONE && d->cls != KILN_OPC_ELEMENTWISE)
    lacks(op, "class elementwise (it has an elementwise form)");
  if (!!(d->flags & KILN_OPF_SUBGRAPH) != schema_has_graph_attr(op))
    lacks(op, "a subgraph flag that matches its schema's graph attributes");
  if (!strcmp(kiln_op_family(op), "misc")) lacks(op, "a family that says what it is");
}

static void check_op(kiln_op op) {
  const kiln_op_impl *impl = kiln_op_get(op);
  check_desc(op);
  if (!impl->eval) lacks(op, "a reference kernel (eval)");
  if (!impl->infer) lacks(op, "a shape inference (infer)");
  if (kiln_op_since(op) < 1) lacks(op, "a version (the opset that introduced it)");
  if (!kiln_bnd_row(op)) lacks(op, "a bound rule or a perturbation row (bound_rules.c)");
  int gi = kiln_gen_op_index(op);
  if (gi < 0 && !kiln_gen_op_excluded(op))
    lacks(op, "a generator entry or an exclusion with a reason (gen_ops.c)");
  if (gi >= 0 && kiln_gen_ops[gi].since < kiln_op_since(op))
    lacks(op, "a generator entry drawn only from the opset that introduced it");
  const char *why = lowering_of(op);
  if (why && !*why) lacks(op, "a lowering or a fallback reason");
}

static void test_every_op_is_complete(void) {
  missing = 0;
  for (int i = 1; i < KILN_OP_COUNT; i++) check_op((kiln_op)i);
  CHECK(missing == 0);
}

/* A reason to be excluded is only for what is not there: an op the generator draws (or
 * lowers) needs none, and a stale exclusion is an error. */
static void test_no_stale_exclusions(void) {
  missing = 0;
  for (int i = 1; i < KILN_OP_COUNT; i++) {
    kiln_op op = (kiln_op)i;
    if (kiln_gen_op_index(op) >= 0 && kiln_gen_op_excluded(op)) lacks(op, "no stale gen exclusion");
    if (kiln_lower_has_lowering(op) && kiln_lower_op_reason(op))
      lacks(op, "no stale lowering fallback reason");
    const bnd_opinfo *b = kiln_bnd_row(op);
    if (b && b->rule != BND_PERTURB && b->perturb_why) lacks(op, "no reason beside its rule");
  }
  CHECK(missing == 0);
}

/* The facts the layers used to keep in their own lists, as the descriptor now gives them. */
static void test_descriptor_facts(void) {
  CHECK(kiln_op_has(KILN_OP_RandomNormal, KILN_OPF_RANDOM));
  CHECK(kiln_op_has(KILN_OP_Dropout, KILN_OPF_RANDOM));
  CHECK(!kiln_op_has(KILN_OP_Add, KILN_OPF_RANDOM));
  CHECK(kiln_op_has(KILN_OP_Add, KILN_OPF_COMMUTATIVE));
  CHECK(!kiln_op_has(KILN_OP_Sub, KILN_OPF_COMMUTATIVE));
  CHECK(kiln_op_has(KILN_OP_Loop, KILN_OPF_SUBGRAPH));
  CHECK(kiln_op_desc_of(KILN_OP_MatMul)->cls == KILN_OPC_CONTRACTION);
  CHECK(kiln_op_desc_of(KILN_OP_ReduceSum)->cls == KILN_OPC_REDUCTION);
  CHECK(kiln_op_desc_of(KILN_OP_Transpose)->cls == KILN_OPC_DATA);
  CHECK(kiln_op_desc_of(KILN_OP_Gelu)->compute_bits == 64);
  CHECK(kiln_op_desc_of(KILN_OP_Exp)->compute_bits == 0);
  CHECK(kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Neg)->ew, KILN_I32));
  CHECK(!kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Neg)->ew, KILN_U8));
  CHECK(!kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Exp)->ew, KILN_I64));
  CHECK(kiln_op_desc_of(KILN_OP_UNKNOWN)->cls == KILN_OPC_NONE);
  CHECK(kiln_op_desc_of((kiln_op)-1)->cls == KILN_OPC_NONE);
}

TEST_MAIN(T(test_every_op_is_complete), T(test_no_stale_exclusions), T(test_descriptor_facts))
