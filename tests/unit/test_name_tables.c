/* Every name table sized by an enum's COUNT has a name for every value: an enum value added
 * without its name leaves a NULL (or a duplicate) in a table that C zero-fills silently, which
 * this test finds. Names are non-empty, printable, unique, and round-trip through the lookup
 * where one exists. */
#include <string.h>

#include "base/dtype.h"
#include "graph/graph.h"
#include "harness.h"
#include "lower/lower_cuda.h"
#include "lower/schedule.h"
#include "ops/op_desc.h"
#include "runtime/runtime.h"
#include "tile/tile.h"
#include "verify/verify.h"

typedef const char *(*name_fn)(int);

/* Checks names[first..count) of one table; returns the number of bad entries. */
static int check_table(const char *what, int first, int count, name_fn name) {
  int bad = 0;
  for (int i = first; i < count; i++) {
    const char *s = name(i);
    bool ok = s && *s && strcmp(s, "?") != 0;
    for (const char *p = s; ok && *p; p++) ok = *p >= ' ' && *p < 127;
    for (int j = first; ok && j < i; j++) ok = strcmp(name(j), s) != 0;
    if (!ok) {
      fprintf(stderr, "%s: value %d has no unique printable name (%s)\n", what, i, s ? s : "NULL");
      bad++;
    }
  }
  return bad;
}

static const char *code_name(int i) {
  return i == KILN_OK_CODE ? "ok" : kiln_code_name((kiln_code)i);
}
static const char *dtype_name(int i) {
  return kiln_dtype_name((kiln_dtype)i);
}
static const char *dtype_onnx_name(int i) {
  return kiln_dtype_onnx_name((kiln_dtype)i);
}
static const char *op_name(int i) {
  return kiln_op_name((kiln_op)i);
}
static const char *op_class_name(int i) {
  return kiln_op_class_name((kiln_op_class)i);
}
static const char *ew_dtypes_name(int i) {
  return kiln_ew_dtypes_name((kiln_ew_dtypes)i);
}
static const char *attr_kind_name(int i) {
  return kiln_attr_kind_name((kiln_attr_kind)i);
}
static const char *top_name(int i) {
  return kiln_top_name((kiln_top)i);
}
static const char *loop_kind_name(int i) {
  return kiln_loop_kind_name((kiln_loop_kind)i);
}
static const char *scope_name(int i) {
  return kiln_tscope_name((kiln_tscope)i);
}
static const char *cuda_map_name(int i) {
  return kiln_cuda_map_name((kiln_cuda_map)i);
}
static const char *stage_name(int i) {
  return kiln_stage_name((kiln_stage)i);
}
static const char *prec_class_name(int i) {
  return kiln_prec_class_name((kiln_prec_class)i);
}
static const char *target_name(int i) {
  return kiln_target_at(i) ? kiln_target_at(i)->name : NULL;
}
static const char *layer_name(int i) {
  return kiln_layer_kind_name((kiln_layer_kind)i);
}

static const char *sched_kind_name(int i) {
  return kiln_sched_kind_name((kiln_sched_kind)i);
}
static const char *sched_micro_name(int i) {
  return kiln_sched_micro_name((kiln_sched_micro)i);
}
static const char *sched_par_name(int i) {
  return kiln_sched_par_name((kiln_sched_par)i);
}
static const char *sched_field_name(int i) {
  return kiln_sched_field_name((kiln_sched_field)i);
}

static void test_tables(void) {
  CHECK(check_table("kiln_code", 0, KILN_CODE_COUNT, code_name) == 0);
  CHECK(check_table("kiln_dtype", 0, KILN_DTYPE_COUNT, dtype_name) == 0);
  CHECK(check_table("kiln_dtype (ONNX)", 0, KILN_DTYPE_COUNT, dtype_onnx_name) == 0);
  CHECK(check_table("kiln_op", 1, KILN_OP_COUNT, op_name) == 0);
  CHECK(check_table("kiln_op_class", 0, KILN_OPC_COUNT, op_class_name) == 0);
  CHECK(check_table("kiln_ew_dtypes", 0, KILN_EWD_COUNT, ew_dtypes_name) == 0);
  CHECK(check_table("kiln_attr_kind", 0, KILN_ATTR_KIND_COUNT, attr_kind_name) == 0);
  CHECK(check_table("kiln_top", 0, KILN_TOP_COUNT, top_name) == 0);
  CHECK(check_table("kiln_loop_kind", 0, KILN_LOOP_KIND_COUNT, loop_kind_name) == 0);
  CHECK(check_table("kiln_tscope", 0, KILN_SCOPE_COUNT, scope_name) == 0);
  CHECK(check_table("kiln_cuda_map", 0, KILN_CUDA_MAP_COUNT, cuda_map_name) == 0);
  CHECK(check_table("kiln_stage", 0, KILN_STAGE_COUNT, stage_name) == 0);
  CHECK(check_table("kiln_layer_kind", 0, KILN_LAYER_KIND_COUNT, layer_name) == 0);
  CHECK(check_table("kiln_target_id", 0, KILN_TARGET_COUNT, target_name) == 0);
  CHECK(check_table("kiln_prec_class", 0, KILN_PREC_CLASS_COUNT, prec_class_name) == 0);
  CHECK(check_table("kiln_sched_kind", 0, KILN_SCHED_KIND_COUNT, sched_kind_name) == 0);
  CHECK(check_table("kiln_sched_micro", 0, KILN_MICRO_COUNT, sched_micro_name) == 0);
  CHECK(check_table("kiln_sched_par", 0, KILN_PAR_COUNT, sched_par_name) == 0);
  CHECK(check_table("kiln_sched_field", 0, KILN_SF_COUNT, sched_field_name) == 0);
}

/* Every op has a family that is one of the families of src/ops (each with its
 * kiln_ops_register_<family>, ops.h), and a name that looks itself up. */
static void test_ops(void) {
  static const char *const families[] = {"elementwise", "reduce", "nn",       "shape",
                                         "control",     "quant",  "seqmodel", "signal",
                                         "text",        "random", "loss",     "vision"};
  for (int i = 1; i < KILN_OP_COUNT; i++) {
    const char *fam = kiln_op_family((kiln_op)i);
    bool known = false;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
      known |= fam && strcmp(fam, families[f]) == 0;
    CHECK(known);
    CHECK(kiln_op_lookup("", kiln_op_name((kiln_op)i)) == (kiln_op)i);
  }
}

/* Names that have a parser come back as their value. */
static void test_round_trips(void) {
  for (int i = 0; i < KILN_TOP_COUNT; i++)
    CHECK((int)kiln_top_lookup(kiln_top_name((kiln_top)i)) == i);
  for (int i = 1; i < KILN_DTYPE_COUNT; i++) {
    kiln_dtype d;
    if (!kiln_dtype_valid(i)) continue;
    CHECK(kiln_dtype_from_name(kiln_dtype_name((kiln_dtype)i), &d) && d == (kiln_dtype)i);
  }
}

TEST_MAIN(T(test_tables), T(test_ops), T(test_round_trips))
