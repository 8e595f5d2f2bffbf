/* The lowering table (src/lower/lower_table.c) and the attribute checks of inference
 * (src/ops/infer_check.c): every op has a lowering or a stated reason; a fallback's reason
 * is the table's (an op without a lowering) or the one its lowering gives (a node it
 * declines); an invalid node is rejected by inference as bad input, naming the node,
 * instead of becoming a fallback. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"

/* ---- the table ---- */
static void test_every_op_has_a_row(void) {
  int lowered = 0, reasons = 0;
  for (int op = 1; op < KILN_OP_COUNT; op++) {
    const char *why = kiln_lower_op_reason((kiln_op)op);
    if (kiln_lower_has_lowering((kiln_op)op)) {
      lowered++;
      if (why) fprintf(stderr, "%s: a lowering and a reason\n", kiln_op_name((kiln_op)op));
      CHECK(why == NULL);
    } else {
      reasons++;
      if (!why || !why[0])
        fprintf(stderr, "%s: no lowering, no reason\n", kiln_op_name((kiln_op)op));
      CHECK(why != NULL && why[0] != '\0');
    }
  }
  CHECK(!kiln_lower_has_lowering(KILN_OP_UNKNOWN));
  CHECK(kiln_lower_op_reason(KILN_OP_UNKNOWN) != NULL);
  CHECK(!kiln_lower_has_lowering(KILN_OP_COUNT)); /* out of range: the UNKNOWN row */
  CHECK(lowered > 100 && reasons > 50);
  fprintf(stderr, "%d ops with a lowering, %d with a reason\n", lowered, reasons);
}

static void test_known_rows(void) {
  static const kiln_op lowered[] = {KILN_OP_Add,       KILN_OP_Softmax,   KILN_OP_MatMul,
                                    KILN_OP_Conv,      KILN_OP_Transpose, KILN_OP_MaxPool,
                                    KILN_OP_ScatterND, KILN_OP_LRN,       KILN_OP_Hardmax,
                                    KILN_OP_Reshape,   KILN_OP_Dropout,   KILN_OP_Identity};
  for (size_t i = 0; i < sizeof lowered / sizeof lowered[0]; i++)
    CHECK(kiln_lower_has_lowering(lowered[i]));
  CHECK(!kiln_lower_has_lowering(KILN_OP_NonZero));
  CHECK(strstr(kiln_lower_op_reason(KILN_OP_NonZero), "depends on the values") != NULL);
  CHECK(!kiln_lower_has_lowering(KILN_OP_If));
  CHECK(!kiln_lower_has_lowering(KILN_OP_RandomNormal));
}

/* ---- fallbacks through the table ---- */
static kiln_graph *parse_infer(const char *text, kiln_status *infer) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (st) {
    fprintf(stderr, "parse: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    return NULL;
  }
  *infer = kiln_ops_infer_graph(g);
  return g;
}

/* Lowers text (one node) and returns the reason of its only fallback step ("" if none). */
static void fallback_reason(const char *text, char *out, size_t len) {
  out[0] = '\0';
  kiln_status inf = NULL;
  kiln_graph *g = parse_infer(text, &inf);
  CHECK(g != NULL);
  CHECK_OK(inf);
  if (!g) return;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 1};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  for (int i = 0; p && i < p->steps.len; i++)
    if (p->steps.data[i].kind == KILN_STEP_FALLBACK)
      snprintf(out, len, "%s", p->steps.data[i].reason);
  kiln_program_free(p);
  kiln_graph_free(g);
}

static void test_fallback_reasons(void) {
  char why[300], want[300];
  /* an op without a lowering: the table's reason */
  fallback_reason("graph @f(%x: f32[3,3]) -> (%y: f32[]) {\n  opset \"\" 17\n"
                  "  %y = Det(%x) : f32[]\n  return %y\n}\n",
                  why, sizeof why);
  snprintf(want, sizeof want, "no lowering for Det: %s", kiln_lower_op_reason(KILN_OP_Det));
  if (strcmp(why, want)) fprintf(stderr, "Det: '%s'\n", why);
  CHECK(strcmp(why, want) == 0);
  /* a family lowering that has no compute definition for the node's types declines */
  fallback_reason("graph @c(%x: f32[4]) -> (%y: i4[4]) {\n  opset \"\" 21\n"
                  "  %y = Cast(%x) {to=22} : i4[4]\n  return %y\n}\n",
                  why, sizeof why);
  if (!strstr(why, "Cast")) fprintf(stderr, "Cast: '%s'\n", why);
  CHECK(strstr(why, "no lowering for Cast to i4") != NULL);
  /* float8 casts are lowered when they saturate (the default), not when they do not */
#define F8_CAST(SAT)                                                                               \
  "graph @c(%x: f32[4]) -> (%y: f8e4m3fn[4], %z: f16[4]) {\n  opset \"\" 21\n"                     \
  "  %y = Cast(%x) {to=17" SAT "} : f8e4m3fn[4]\n"                                                 \
  "  %z = Cast(%y) {to=10} : f16[4]\n  return %y, %z\n}\n"
  fallback_reason(F8_CAST(""), why, sizeof why);
  if (why[0]) fprintf(stderr, "Cast to f8: '%s'\n", why);
  CHECK(why[0] == '\0');
  fallback_reason(F8_CAST(", saturate=0"), why, sizeof why);
  if (!strstr(why, "saturate=0")) fprintf(stderr, "Cast to f8, saturate=0: '%s'\n", why);
  CHECK(strstr(why, "no lowering for Cast to f8e4m3fn with saturate=0") != NULL);
  /* saturate says nothing about a cast from float8 */
  fallback_reason("graph @c(%x: f8e5m2[4]) -> (%y: f16[4]) {\n  opset \"\" 21\n"
                  "  %y = Cast(%x) {to=10, saturate=0} : f16[4]\n  return %y\n}\n",
                  why, sizeof why);
  if (why[0]) fprintf(stderr, "Cast from f8, saturate=0: '%s'\n", why);
  CHECK(why[0] == '\0');
#undef F8_CAST
  /* a reduction over an empty extent: the family lowering says the input is empty */
  fallback_reason("graph @r(%x: f32[2,0]) -> (%y: f32[2,1]) {\n  opset \"\" 17\n"
                  "  %y = ReduceMax(%x) {axes=[1]} : f32[2,1]\n  return %y\n}\n",
                  why, sizeof why);
  if (!strstr(why, "is empty")) fprintf(stderr, "ReduceMax: '%s'\n", why);
  CHECK(strstr(why, "input 'x' is empty (a zero extent)") != NULL);
  /* a lowered node: no fallback */
  fallback_reason("graph @s(%x: f32[2,3]) -> (%y: f32[2,3]) {\n  opset \"\" 17\n"
                  "  %y = Softmax(%x) {axis=1} : f32[2,3]\n  return %y\n}\n",
                  why, sizeof why);
  CHECK(why[0] == '\0');
}

/* ---- invalid nodes: bad input, from inference ---- */
/* Inference of `node` over %x (type xt) and the constants in consts must fail as INVALID
 * naming the node 'bad'. */
static void check_rejected(const char *xt, const char *consts, const char *node) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @g(%%x: %s) -> (%%y: ?) {\n  opset \"\" 21\n%s  %%y = %s @bad\n  return %%y\n}\n",
           xt, consts, node);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (st) {
    fprintf(stderr, "parse: %s\n%s", kiln_status_message(st), text);
    kiln_status_free(st);
    CHECK(false);
    return;
  }
  st = kiln_ops_infer_graph(g);
  bool ok = st && kiln_status_code(st) == KILN_ERR_INVALID &&
            strstr(kiln_status_message(st), "'bad'") != NULL;
  if (!ok) fprintf(stderr, "%s: %s\n", node, st ? kiln_status_message(st) : "accepted");
  CHECK(ok);
  kiln_status_free(st);
  kiln_graph_free(g);
}

/* TopK with a constant k beyond the axis' extent (two outputs: its own text). */
static void check_topk_rejected(void) {
  const char *text = "graph @g(%x: f32[2,4]) -> (%y: ?) {\n  opset \"\" 21\n"
                     "  %k = const i64[1] [5]\n  %y, %i = TopK(%x, %k) @bad\n  return %y\n}\n";
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  kiln_status st = kiln_ops_infer_graph(g);
  CHECK(st && strstr(kiln_status_message(st), "'bad'") && strstr(kiln_status_message(st), "k=5"));
  kiln_status_free(st);
  kiln_graph_free(g);
}

static void test_invalid_attributes_rejected(void) {
  check_topk_rejected();
  check_rejected("f32[2,4]", "", "Softmax(%x) {axis=9}");
  check_rejected("f32[2,4]", "", "LogSoftmax(%x) {axis=-3}");
  check_rejected("f32[2,4]", "", "Hardmax(%x) {axis=2}");
  /* elementwise attributes out of their range or set (a near-duplicate of the fuzzer moved
   * an IsInf flag to -2: only the reference kernel had refused it) */
  check_rejected("f32[2,4]", "", "IsInf(%x) {detect_negative=-2}");
  /* a flag of any op other than 0 or 1 (a near-copy moved BatchNormalization's training_mode
   * to -1: only the reference kernel refused it) */
  check_rejected("f32[2,4]", "  %s = const f32[4] [1, 1, 1, 1]\n  %b = const f32[4] [0, 0, 0, 0]\n",
                 "BatchNormalization(%x, %s, %b, %b, %s) {training_mode=-1}");
  check_rejected("f32[2,4]", "", "ReduceMax(%x) {keepdims=2}");
  check_rejected("f32[2,4]", "", "Cast(%x) {to=6, round_mode=\"u\"}");
  check_rejected("f32[2,4]", "  %w = const f32[4,4] [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]\n",
                 "Gemm(%x, %w) {transB=3}");
  check_rejected("u8[2,4]", "", "BitShift(%x, %x) {direction=\"UP\"}");
  check_rejected("f32[2,4]", "  %i = const i64[2,4] [0, 0, 0, 0, 0, 0, 0, 0]\n",
                 "GatherElements(%x, %i) {axis=4}");
  check_rejected("f32[2,4]", "  %a = const i64[] [7]\n", "CumSum(%x, %a)");
  check_rejected("f32[2,4]", "", "LpNormalization(%x) {axis=5}");
  check_rejected("f32[2,4]", "", "LpNormalization(%x) {p=3}");
  check_rejected("f32[2,4]", "", "MeanVarianceNormalization(%x) {axes=[5]}");
  check_rejected("f32[1,4,2,2]", "", "DepthToSpace(%x) {blocksize=3}");
  check_rejected("f32[1,4,2,2]", "", "SpaceToDepth(%x) {blocksize=3}");
  check_rejected("f32[1,4,2,2]", "", "LRN(%x) {size=0}");
  check_rejected("f32[2,4]", "  %i = const i64[2,1] [0, 1]\n", "GatherND(%x, %i) {batch_dims=5}");
  check_rejected("f32[2,4]", "  %r = const i64[2] [-1, 1]\n", "Tile(%x, %r)");
  /* updates of shape [3,4] where indices [1,1] and data [1,4] need [1,4]; of rank 1 */
  check_rejected("f32[1,4]",
                 "  %i = const i64[1,1] [0]\n  %u = const f32[3,4] [0,0,0,0,0,0,0,0,0,0,0,0]\n",
                 "ScatterND(%x, %i, %u)");
  check_rejected("f32[1,4]", "  %i = const i64[1,1] [0]\n  %u = const f32[4] [0,0,0,0]\n",
                 "ScatterND(%x, %i, %u)");
  /* MatMul whose inner dims differ ([2,4] x [3,2]: the operands swapped) */
  check_rejected("f32[2,4]", "  %w = const f32[3,2] [0,0,0,0,0,0]\n", "MatMul(%x, %w)");
  check_rejected("f32[2,3,4]", "  %s = const f32[3,4] [1,1,1,1,1,1,1,1,1,1,1,1]\n",
                 "LayerNormalization(%x, %s) {axis=-1}");
  /* Concat of inputs that differ off the axis */
  check_rejected("f32[2,4]", "  %c = const f32[3,3] [0,0,0,0,0,0,0,0,0]\n",
                 "Concat(%x, %c) {axis=0}");
  /* Conv: a kernel_shape other than W's, a bias of another length */
  check_rejected("f32[1,1,4,4]", "  %w = const f32[1,1,2,2] [1, 1, 1, 1]\n",
                 "Conv(%x, %w) {kernel_shape=[3,2]}");
  check_rejected("f32[1,1,4,4]",
                 "  %w = const f32[1,1,2,2] [1, 1, 1, 1]\n  %b = const f32[2] [0, 0]\n",
                 "Conv(%x, %w, %b)");
  check_rejected("f32[1,4,4,4]", "  %w = const f32[2,4,1,1] [1, 1, 1, 1, 1, 1, 1, 1]\n",
                 "Conv(%x, %w) {group=3}");
  /* PRelu's slope broadcasts to X one way only: [2,1] against X [1,3] is invalid, although
     the two broadcast to [2,3] both ways */
  check_rejected("f32[1,3]", "  %s = const f32[2,1] [0.5, 0.5]\n", "PRelu(%x, %s)");
  check_rejected("f32[3]", "  %s = const f32[2,3] [1, 1, 1, 1, 1, 1]\n", "PRelu(%x, %s)");
  /* operands of one type variable with different dtypes */
  check_rejected("f32[3]", "  %h = const f16[3] [1, 1, 1]\n", "Sub(%x, %h)");
  check_rejected("f32[3]", "  %h = const f64[3] [1, 1, 1]\n", "Greater(%x, %h)");
  check_rejected("f32[3]",
                 "  %c = const bool[3] [true, false, true]\n  %h = const f16[3] [1, 1, 1]\n",
                 "Where(%c, %x, %h)");
}

/* Valid attributes at the edges of their ranges pass inference. */
static void test_valid_attributes_pass(void) {
  static const char *const texts[] = {
      "graph @g(%x: f32[2,4]) -> (%y: ?) {\n  opset \"\" 17\n  %y = Softmax(%x) {axis=-2}\n"
      "  return %y\n}\n",
      "graph @g(%x: f32[]) -> (%y: ?) {\n  opset \"\" 17\n  %y = Softmax(%x) {axis=0}\n"
      "  return %y\n}\n",
      "graph @g(%x: f32[1,8,2,2]) -> (%y: ?) {\n  opset \"\" 17\n"
      "  %y = DepthToSpace(%x) {blocksize=2}\n  return %y\n}\n",
      "graph @g(%x: f32[n,4]) -> (%y: ?) {\n  opset \"\" 17\n  %y = Hardmax(%x) {axis=1}\n"
      "  return %y\n}\n",
      "graph @g(%x: f32[2,3], %s: f32[1,3]) -> (%y: ?) {\n  opset \"\" 17\n"
      "  %y = PRelu(%x, %s)\n  return %y\n}\n",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    kiln_status inf = NULL;
    kiln_graph *g = parse_infer(texts[i], &inf);
    CHECK(g != NULL);
    if (inf) fprintf(stderr, "%s", texts[i]);
    CHECK_OK(inf);
    kiln_graph_free(g);
  }
}

TEST_MAIN(T(test_every_op_has_a_row), T(test_known_rows), T(test_fallback_reasons),
          T(test_invalid_attributes_rejected), T(test_valid_attributes_pass))
