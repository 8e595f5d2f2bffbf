/* Fusion pass golden tests: text IR in, fusion, printed IR compared with the expected text
 * (groups appear as `group N` at the end of node lines). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"
#include "passes/passes.h"

static void check_fusion(const char *in, const char *expected) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(in, "input", &g));
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_pass_opts po = {.fuse_classify = kiln_lower_fuse_class};
  kiln_pass_ctx ctx = {&po, "fusion", 0};
  CHECK_OK(kiln_pass_fusion(&ctx, g));
  CHECK_OK(kiln_pass_fusion(&ctx, g)); /* idempotent */
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  if (!b.data || strcmp(b.data, expected) != 0) {
    fprintf(stderr, "fusion result differs:\n--- expected\n%s--- got\n%s", expected,
            b.data ? b.data : "");
    CHECK(0);
  }
  kiln_strbuf_free(&b);
  kiln_graph_free(g);
}

// clang-format off
#define HEAD(sig) "graph @t(" sig " {\n  opset \"\" 18\n"

/* (b) an elementwise DAG of one shape; an intermediate used outside stays a group output;
 * the node of another shape starts its own group. */
static void test_elementwise_dag(void) {
  const char *in = HEAD("%x: f32[4,8], %b: f32[8]) -> (%y: f32[4,8], %t: f32[4,8], %z: f32[8])")
      "  %a = Add(%x, %b) : f32[4,8]\n"
      "  %s = Sigmoid(%a) : f32[4,8]\n"
      "  %t = Mul(%a, %s) : f32[4,8]\n"
      "  %y = Add(%t, %x) : f32[4,8]\n"
      "  %n = Neg(%b) : f32[8]\n"
      "  %z = Exp(%n) : f32[8]\n"
      "  return %y, %t, %z\n"
      "}\n";
  const char *out = HEAD("%x: f32[4,8], %b: f32[8]) -> (%y: f32[4,8], %t: f32[4,8], %z: f32[8])")
      "  %a = Add(%x, %b) : f32[4,8] group 1\n"
      "  %s = Sigmoid(%a) : f32[4,8] group 1\n"
      "  %t = Mul(%a, %s) : f32[4,8] group 1\n"
      "  %y = Add(%t, %x) : f32[4,8] group 1\n"
      "  %n = Neg(%b) : f32[8] group 2\n"
      "  %z = Exp(%n) : f32[8] group 2\n"
      "  return %y, %t, %z\n"
      "}\n";
  check_fusion(in, out);
}

/* Convexity: Exp -> Transpose -> Add and Exp -> Add cannot be one group. */
static void test_convexity(void) {
  const char *in = HEAD("%x: f32[4,4]) -> (%y: f32[4,4])")
      "  %e = Exp(%x) : f32[4,4]\n"
      "  %t = Transpose(%e) : f32[4,4]\n"
      "  %y = Add(%e, %t) : f32[4,4]\n"
      "  return %y\n"
      "}\n";
  check_fusion(in, in);
}

/* Convexity counts subgraph reads: Relu -> If (its branches read %a) -> Add. Relu and Add in
 * one group would both feed the If and wait for it; the check once saw node inputs only, and
 * lowering then found the groups in a cycle (an internal error). */
static void test_convexity_through_subgraph(void) {
  const char *in = HEAD("%c: bool[], %x: f32[4]) -> (%y: f32[4])")
      "  %a = Relu(%x) : f32[4]\n"
      "  %b = If(%c) {else_branch=graph @e() -> (%a: f32[4]) {\n"
      "    outer %a\n"
      "    return %a\n"
      "  }, then_branch=graph @t() -> (%n: f32[4]) {\n"
      "    outer %a\n"
      "    %n = Neg(%a) : f32[4]\n"
      "    return %n\n"
      "  }} : f32[4]\n"
      "  %y = Add(%a, %b) : f32[4]\n"
      "  return %y\n"
      "}\n";
  check_fusion(in, in);
}

/* (c) a reduction with its prologue and epilogue: one group. A prologue value also used
 * elsewhere is not pulled in; it fuses with its other users instead. */
static void test_reduction_group(void) {
  const char *in = HEAD("%x: f32[2,4,6], %m: f32[6]) -> (%y: f32[2,4,6])")
      "  %c = const f32[] [0.5]\n"
      "  %s = Mul(%x, %c) : f32[2,4,6]\n"
      "  %a = Add(%s, %m) : f32[2,4,6]\n"
      "  %p = Softmax(%a) : f32[2,4,6]\n"
      "  %y = Mul(%p, %c) : f32[2,4,6]\n"
      "  return %y\n"
      "}\n";
  const char *out = HEAD("%x: f32[2,4,6], %m: f32[6]) -> (%y: f32[2,4,6])")
      "  %c = const f32[] [0.5]\n"
      "  %s = Mul(%x, %c) : f32[2,4,6] group 1\n"
      "  %a = Add(%s, %m) : f32[2,4,6] group 1\n"
      "  %p = Softmax(%a) : f32[2,4,6] group 1\n"
      "  %y = Mul(%p, %c) : f32[2,4,6] group 1\n"
      "  return %y\n"
      "}\n";
  check_fusion(in, out);
  const char *in2 = HEAD("%x: f32[3,5]) -> (%y: f32[3,1], %z: f32[3,5])")
      "  %k = const i64[1] [1]\n"
      "  %e = Exp(%x) : f32[3,5]\n"
      "  %y = ReduceMax(%e, %k) : f32[3,1]\n"
      "  %z = Neg(%e) : f32[3,5]\n"
      "  return %y, %z\n"
      "}\n";
  const char *out2 = HEAD("%x: f32[3,5]) -> (%y: f32[3,1], %z: f32[3,5])")
      "  %k = const i64[1] [1]\n"
      "  %e = Exp(%x) : f32[3,5] group 1\n"
      "  %y = ReduceMax(%e, %k) : f32[3,1]\n"
      "  %z = Neg(%e) : f32[3,5] group 1\n"
      "  return %y, %z\n"
      "}\n";
  check_fusion(in2, out2);
}

/* (a) a contraction with its epilogue chain (bias, residual, activation). */
static void test_contraction_epilogue(void) {
  const char *in = HEAD("%x: f32[4,8], %w: f32[8,16], %b: f32[16], %r: f32[4,16]) -> (%y: f32[4,16])")
      "  %m = MatMul(%x, %w) : f32[4,16]\n"
      "  %a = Add(%m, %b) : f32[4,16]\n"
      "  %s = Add(%a, %r) : f32[4,16]\n"
      "  %y = Relu(%s) : f32[4,16]\n"
      "  return %y\n"
      "}\n";
  const char *out = HEAD("%x: f32[4,8], %w: f32[8,16], %b: f32[16], %r: f32[4,16]) -> (%y: f32[4,16])")
      "  %m = MatMul(%x, %w) : f32[4,16] group 1\n"
      "  %a = Add(%m, %b) : f32[4,16] group 1\n"
      "  %s = Add(%a, %r) : f32[4,16] group 1\n"
      "  %y = Relu(%s) : f32[4,16] group 1\n"
      "  return %y\n"
      "}\n";
  check_fusion(in, out);
}
// clang-format on

TEST_MAIN(T(test_elementwise_dag), T(test_convexity), T(test_convexity_through_subgraph),
          T(test_reduction_group), T(test_contraction_epilogue))
