/* The precision policy (src/lower/precision.h): its checks and text form; the default
 * policy lowers to the same kernels bit for bit; a policy that computes elementwise f32
 * values in f16 lowers to native f16 tile IR whose results (tile interpreter and compiled C)
 * stay within the bounds of the reference model for that policy, and outside the bounds of
 * the default policy (so the bound model's accounting is what makes them pass). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "ops/ops.h"
#include "verify/gen/gen.h"
#include "verify/verify.h"

static char g_tmp[1024];

/* ---- the policy API ---- */
static void test_policy_checks(void) {
  kiln_precision_policy p;
  kiln_precision_default(&p);
  CHECK(kiln_precision_is_default(&p));
  CHECK(kiln_precision_compute(&p, KILN_PREC_ELEMENTWISE, KILN_F16) == KILN_F32);
  CHECK(kiln_precision_compute(NULL, KILN_PREC_ELEMENTWISE, KILN_BF16) == KILN_F32);
  CHECK(kiln_precision_compute(&p, KILN_PREC_DATA, KILN_F64) == KILN_F64);
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_REDUCTION, KILN_F32) == KILN_F64);
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_REDUCTION, KILN_I8) == KILN_I64);
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_CONTRACTION, KILN_F16) == KILN_F32);
  /* setting the default's own types keeps the policy the default */
  CHECK_OK(kiln_precision_set(&p, KILN_PREC_REDUCTION, KILN_F16, KILN_F32, KILN_F64));
  CHECK(kiln_precision_is_default(&p));
  CHECK_OK(kiln_precision_set(&p, KILN_PREC_ELEMENTWISE, KILN_F32, KILN_F16, KILN_F16));
  CHECK(!kiln_precision_is_default(&p));
  CHECK(kiln_precision_compute(&p, KILN_PREC_ELEMENTWISE, KILN_F32) == KILN_F16);
  CHECK(kiln_precision_compute(&p, KILN_PREC_REDUCTION, KILN_F32) == KILN_F32);
  CHECK_OK(kiln_precision_set(&p, KILN_PREC_CONTRACTION, KILN_I8, KILN_I8, KILN_I32));
  /* refused */
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_CONTRACTION, KILN_F32, KILN_F16, KILN_F16),
            KILN_ERR_INVALID); /* MMA accumulators are f32 or f64 */
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_REDUCTION, KILN_F32, KILN_F32, KILN_BF16),
            KILN_ERR_INVALID); /* accumulate narrower than compute */
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_ELEMENTWISE, KILN_F32, KILN_I32, KILN_I32),
            KILN_ERR_INVALID);
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_ELEMENTWISE, KILN_I32, KILN_F32, KILN_F32),
            KILN_ERR_INVALID);
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_CONTRACTION, KILN_I32, KILN_I32, KILN_I8),
            KILN_ERR_INVALID);
  CHECK_ERR(kiln_precision_set(&p, KILN_PREC_CLASS_COUNT, KILN_F32, KILN_F32, KILN_F32),
            KILN_ERR_INVALID);
}

static void test_policy_text(void) {
  kiln_precision_policy p;
  kiln_precision_default(&p);
  CHECK_OK(kiln_precision_parse(&p, "elementwise:f32=f16,reduction:bf16=bf16/f32"));
  CHECK(kiln_precision_compute(&p, KILN_PREC_ELEMENTWISE, KILN_F32) == KILN_F16);
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_ELEMENTWISE, KILN_F32) == KILN_F16);
  CHECK(kiln_precision_compute(&p, KILN_PREC_REDUCTION, KILN_BF16) == KILN_BF16);
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_REDUCTION, KILN_BF16) == KILN_F32);
  CHECK_OK(kiln_precision_parse(&p, "contraction:f16=f16")); /* keeps the f32 accumulator */
  CHECK(kiln_precision_accumulate(&p, KILN_PREC_CONTRACTION, KILN_F16) == KILN_F32);
  CHECK_OK(kiln_precision_parse(&p, ""));
  static const char *bad[] = {"elementwise",
                              "pointwise:f32=f16",
                              "elementwise:f99=f16",
                              "elementwise:f32=",
                              "elementwise:f32=f16/",
                              "reduction=f16",
                              "contraction:f32=f16/f16",
                              "elementwise:f32=f16,,x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_ERR(kiln_precision_parse(&p, bad[i]), KILN_ERR_INVALID);
  CHECK(kiln_precision_class_of(KILN_OP_Add) == KILN_PREC_ELEMENTWISE);
  CHECK(kiln_precision_class_of(KILN_OP_ReduceSum) == KILN_PREC_REDUCTION);
  CHECK(kiln_precision_class_of(KILN_OP_Conv) == KILN_PREC_CONTRACTION);
  CHECK(kiln_precision_class_of(KILN_OP_Pad) == KILN_PREC_DATA);
  CHECK(!strcmp(kiln_prec_class_name(KILN_PREC_CONTRACTION), "contraction"));
}

/* ---- lowering ---- */
/* Elementwise chains, a reduction, a contraction with an epilogue, data movement, in f32 and
 * f16: every place the lowering asks the policy. */
static const char *MIXED =
    "graph @mixed(%x: f32[4,16], %h: f16[4,16], %w: f32[16,8]) -> (%y: f32[4,16], %m: f32[4,8], "
    "%r: f32[4,1], %k: f16[4,16], %p: f32[4,18]) {\n"
    "  opset \"\" 17\n"
    "  %a = Add(%x, %x) : f32[4,16]\n"
    "  %y = Tanh(%a) : f32[4,16]\n"
    "  %mm = MatMul(%x, %w) : f32[4,8]\n"
    "  %m = Relu(%mm) : f32[4,8]\n"
    "  %r = ReduceMax(%x) {axes = [1]} : f32[4,1]\n"
    "  %hh = Mul(%h, %h) : f16[4,16]\n"
    "  %k = Softmax(%hh) : f16[4,16]\n"
    "  %pads = const i64[4] [0, 1, 0, 1]\n"
    "  %p = Pad(%y, %pads) : f32[4,18]\n"
    "  return %y, %m, %r, %k, %p\n"
    "}\n";

static kiln_graph *parse_graph(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  kiln_pass_opts po = {.fuse_classify = kiln_lower_fuse_class};
  kiln_pass_ctx ctx = {&po, "fusion", 0};
  if (g) CHECK_OK(kiln_pass_fusion(&ctx, g)); /* fused groups: classes meet in one kernel */
  return g;
}

static char *lowered_text(const char *text, const kiln_precision_policy *p) {
  kiln_graph *g = parse_graph(text);
  if (!g) return NULL;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2, .precision = p};
  kiln_program *prog = NULL;
  kiln_strbuf out = {0};
  CHECK_OK(kiln_lower(g, &lo, &prog));
  if (prog) kiln_program_print(prog, &out);
  kiln_program_free(prog);
  kiln_graph_free(g);
  return out.data;
}

static void test_default_is_identical(void) {
  char *none = lowered_text(MIXED, NULL);
  kiln_precision_policy d;
  kiln_precision_default(&d);
  char *dflt = lowered_text(MIXED, &d);
  /* every rule written out with the default's types */
  kiln_dtype floats[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_F64};
  for (int c = 0; c < KILN_PREC_CLASS_COUNT; c++)
    for (int i = 0; i < 4; i++)
      CHECK_OK(kiln_precision_set(&d, (kiln_prec_class)c, floats[i],
                                  kiln_precision_compute(NULL, (kiln_prec_class)c, floats[i]),
                                  kiln_precision_accumulate(NULL, (kiln_prec_class)c, floats[i])));
  CHECK(kiln_precision_is_default(&d));
  char *spelled = lowered_text(MIXED, &d);
  CHECK(none && dflt && spelled);
  if (none && dflt && spelled) CHECK(!strcmp(none, dflt) && !strcmp(none, spelled));
  CHECK(none && strstr(none, "f32(%") != NULL); /* f16 values widen to f32 by default */
  free(none), free(dflt), free(spelled);
}

static int count_expr(const kiln_texpr *e, kiln_dtype t) {
  if (!e) return 0;
  int n =
      e->kind == KILN_TE_OP && e->args[0] && e->args[0]->type == t && kiln_top_class(e->op) != 's';
  n += count_expr(e->index, t);
  for (int i = 0; i < 3; i++) n += count_expr(e->args[i], t);
  return n;
}

static int count_block(const kiln_tblock *b, kiln_dtype t) {
  int n = 0;
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    n += count_expr(s->extent, t) + count_expr(s->cond, t) + count_expr(s->index, t);
    n += count_expr(s->value, t) + count_block(&s->body, t) + count_block(&s->orelse, t);
  }
  return n;
}

/* ---- an f32 model computed in f16 ---- */
static const char *CHAIN = "graph @chain(%x: f32[8,64], %z: f32[8,64]) -> (%y: f32[8,64]) {\n"
                           "  opset \"\" 17\n"
                           "  %a = Add(%x, %z) : f32[8,64]\n"
                           "  %b = Mul(%a, %x) : f32[8,64]\n"
                           "  %c = Sigmoid(%b) : f32[8,64]\n"
                           "  %d = Sub(%c, %z) : f32[8,64]\n"
                           "  %y = Tanh(%d) : f32[8,64]\n"
                           "  return %y\n"
                           "}\n";

static kiln_tensor *random_input(uint64_t seed) {
  int64_t dims[2] = {8, 64};
  kiln_tensor *t;
  if (kiln_tensor_new(KILN_F32, 2, dims, &t)) abort();
  float *p = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * 6.0 - 3.0);
  }
  return t;
}

static kiln_precision_policy ew_f16(void) {
  kiln_precision_policy p;
  kiln_precision_default(&p);
  CHECK_OK(kiln_precision_set(&p, KILN_PREC_ELEMENTWISE, KILN_F32, KILN_F16, KILN_F16));
  return p;
}

/* Runs the program in the tile interpreter; checks y against r (expect_ok: within the
 * bounds). Returns the largest |y - y_default| (0 when the run failed). */
static void check_against(const kiln_vref *r, const kiln_graph *g, kiln_tensor *y, bool expect_ok) {
  kiln_val *v = kiln_val_tensor(y);
  kiln_vcheck c;
  kiln_vref_check(r, g->outputs.data[0], v, &c);
  if (c.ok != expect_ok) fprintf(stderr, "check: ok %d, ratio %g: %s\n", c.ok, c.max_ratio, c.msg);
  CHECK(c.ok == expect_ok);
  if (!expect_ok) CHECK(c.max_ratio > 1);
  v->t = NULL;
  kiln_val_free(v);
}

static void test_elementwise_f16(void) {
  kiln_graph *g = parse_graph(CHAIN);
  if (!g) return;
  kiln_precision_policy p = ew_f16();
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 1, .precision = &p};
  kiln_program *prog = NULL;
  CHECK_OK(kiln_lower(g, &lo, &prog));
  if (!prog) {
    kiln_graph_free(g);
    return;
  }
  int half = 0;
  for (int i = 0; i < prog->module->kernels.len; i++)
    half += count_block(&prog->module->kernels.data[i]->body, KILN_F16);
  CHECK(half >= 5); /* add, mul, sigmoid's ops, sub, tanh: native f16 arithmetic */
  CHECK_OK(kiln_tmodule_verify(prog->module));
  kiln_tensor *in[2] = {random_input(1), random_input(2)}, *y = NULL;
  CHECK_OK(kiln_program_interp(prog, 2, in, &y));
  kiln_val *vin[2] = {kiln_val_tensor(in[0]), kiln_val_tensor(in[1])};
  kiln_vref *rp = NULL, *rd = NULL;
  CHECK_OK(kiln_vref_compute_prec(g, 2, vin, &p, &rp));
  CHECK_OK(kiln_vref_compute(g, 2, vin, &rd));
  if (y && rp && rd) {
    check_against(rp, g, y, true);  /* the f16 policy's bounds hold */
    check_against(rd, g, y, false); /* f32 bounds do not: the accounting matters */
  }
  kiln_tensor_free(y);
  kiln_vref_free(rp), kiln_vref_free(rd);
  kiln_val_free(vin[0]), kiln_val_free(vin[1]);
  kiln_program_free(prog);
  kiln_graph_free(g);
}

/* x - z of close values: computed in f16, the rounding of x and z to f16 on load is far
 * larger than the difference; the bound must count that rounding (the input's error grows by
 * u_f16 |x|), not only the op's own rounding of the small result. */
static void test_input_rounding(void) {
  kiln_graph *g = parse_graph("graph @e(%x: f32[8,64], %z: f32[8,64]) -> (%y: f32[8,64]) {\n"
                              "  opset \"\" 17\n"
                              "  %y = Sub(%x, %z) : f32[8,64]\n"
                              "  return %y\n"
                              "}\n");
  if (!g) return;
  kiln_precision_policy p = ew_f16();
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 1, .precision = &p};
  kiln_program *prog = NULL;
  CHECK_OK(kiln_lower(g, &lo, &prog));
  kiln_tensor *in[2] = {random_input(5), random_input(6)}, *y = NULL;
  float *xd = in[0]->data, *zd = in[1]->data;
  for (int64_t i = 0; i < in[0]->numel; i++) {
    xd[i] = 9.5f + xd[i] / 2; /* [8, 11): f16 steps of 2^-7 */
    zd[i] = xd[i] * (1 + 0x1p-9f);
  }
  if (prog) CHECK_OK(kiln_program_interp(prog, 2, in, &y));
  kiln_val *vin[2] = {kiln_val_tensor(in[0]), kiln_val_tensor(in[1])};
  kiln_vref *rp = NULL;
  CHECK_OK(kiln_vref_compute_prec(g, 2, vin, &p, &rp));
  if (y && rp) check_against(rp, g, y, true);
  kiln_tensor_free(y);
  kiln_vref_free(rp);
  kiln_val_free(vin[0]), kiln_val_free(vin[1]);
  kiln_program_free(prog);
  kiln_graph_free(g);
}

/* MIXED under policies that give the classes different types (fused prologues, epilogues
 * and reductions meet values of another class): the kernels verify, and every output of the
 * tile interpreter is within the bounds of the policy's reference. */
static void check_mixed_policy(const char *text) {
  kiln_precision_policy p;
  kiln_precision_default(&p);
  CHECK_OK(kiln_precision_parse(&p, text));
  kiln_graph *g = parse_graph(MIXED);
  if (!g) return;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2, .precision = &p};
  kiln_program *prog = NULL;
  CHECK_OK(kiln_lower(g, &lo, &prog));
  if (!prog) {
    fprintf(stderr, "policy %s: not lowered\n", text);
    kiln_graph_free(g);
    return;
  }
  int64_t dx[2] = {4, 16}, dw[2] = {16, 8};
  kiln_tensor *in[3] = {random_input(7), NULL, NULL}, *out[5] = {0};
  in[0]->dims[0] = 4, in[0]->dims[1] = 16, in[0]->numel = 64;
  if (kiln_tensor_new(KILN_F16, 2, dx, &in[1]) || kiln_tensor_new(KILN_F32, 2, dw, &in[2])) abort();
  for (int64_t i = 0; i < 64; i++)
    kiln_store_f64(KILN_F16, in[1]->data, (size_t)i, (i % 9) / 4.0 - 1);
  for (int64_t i = 0; i < 128; i++) ((float *)in[2]->data)[i] = (float)((i % 7) - 3) / 4;
  CHECK_OK(kiln_program_interp(prog, 3, in, out));
  kiln_val *vin[3];
  for (int i = 0; i < 3; i++) vin[i] = kiln_val_tensor(in[i]);
  kiln_vref *r = NULL;
  CHECK_OK(kiln_vref_compute_prec(g, 3, vin, &p, &r));
  for (int o = 0; r && o < g->outputs.len; o++) {
    if (!out[o]) continue;
    kiln_val *v = kiln_val_tensor(out[o]);
    kiln_vcheck c;
    kiln_vref_check(r, g->outputs.data[o], v, &c);
    if (!c.ok) fprintf(stderr, "policy %s, output %d: %s\n", text, o, c.msg);
    CHECK(c.ok);
    kiln_val_free(v);
  }
  kiln_vref_free(r);
  for (int i = 0; i < 3; i++) kiln_val_free(vin[i]);
  kiln_program_free(prog);
  kiln_graph_free(g);
}

static void test_mixed_policies(void) {
  check_mixed_policy("elementwise:f32=f16");
  check_mixed_policy("elementwise:f32=bf16,elementwise:f16=f16");
  check_mixed_policy("reduction:f32=f16/f32,reduction:f16=f16/f32");
  check_mixed_policy("contraction:f32=f16,data:f32=bf16");
  check_mixed_policy("elementwise:f16=f64,reduction:f16=f64");
}

/* The whole verifier with the policy: tile interpreter and compiled C (with native f16
 * arithmetic in the generated code) against the policy's reference, every layer. */
static void test_verify_run_f16(void) {
  kiln_graph *g = parse_graph(CHAIN);
  if (!g) return;
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_precision");
  kiln_verify_opts o;
  kiln_verify_opts_init(&o);
  o.compile.cache_dir = g_tmp;
  o.compile.precision = ew_f16();
  kiln_val *vin[2] = {kiln_val_tensor(random_input(3)), kiln_val_tensor(random_input(4))};
  kiln_verify_result r;
  CHECK_OK(kiln_verify_run(g, 2, vin, &o, &r));
  if (r.failed) {
    kiln_strbuf t = {0};
    kiln_verify_print(&r, &t);
    fprintf(stderr, "%s\n", t.data);
    kiln_strbuf_free(&t);
  }
  CHECK(!r.failed);
  bool cpu = false;
  for (int i = 0; i < r.layers.len; i++)
    cpu |= r.layers.data[i].kind == KILN_LAYER_CPU && r.layers.data[i].ran;
  CHECK(cpu);
  kiln_verify_result_free(&r);
  kiln_val_free(vin[0]), kiln_val_free(vin[1]);
  kiln_graph_free(g);
}

/* The CUDA target with the policy: mapped kernels with native f16 instructions, compiled to
 * PTX by NVRTC where it exists, and the mapped program within the policy's bounds. */
static void test_cuda_f16(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(CHAIN, "test", &g));
  if (!g) return;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.precision = ew_f16();
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, &kiln_target_cuda, &o, &c));
  const kiln_cuda_build *b = kiln_compiled_cuda(c);
  if (b) {
    CHECK(b->n_map[KILN_CUDA_UNMAPPED] == 0);
    CHECK(b->source.data && strstr(b->source.data, "kiln_hadd_f16(") != NULL);
    if (b->nvrtc_found) CHECK(b->nvrtc_ok);
    kiln_tensor *in[2] = {random_input(8), random_input(9)}, *y = NULL;
    CHECK_OK(kiln_program_interp(b->prog, 2, in, &y));
    kiln_val *vin[2] = {kiln_val_tensor(in[0]), kiln_val_tensor(in[1])};
    kiln_vref *r = NULL;
    CHECK_OK(kiln_vref_compute_prec(g, 2, vin, &o.precision, &r));
    if (r && y) check_against(r, g, y, true);
    kiln_vref_free(r);
    kiln_tensor_free(y);
    kiln_val_free(vin[0]), kiln_val_free(vin[1]);
  }
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

/* ---- what campaigns under drawn policies found ---- */
/* Verifies text (every layer: tile, and the cpu layer when cpu) on inputs whose float
 * elements are vals (repeated) under the policy rules; returns whether every layer agreed. */
static bool verify_under(const char *text, const char *rules, const double *vals, int nv,
                         bool cpu) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (!g) return false;
  CHECK_OK(kiln_ops_infer_graph(g));
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_precision");
  kiln_verify_opts o;
  kiln_verify_opts_init(&o);
  o.compile.cache_dir = g_tmp;
  o.targets[KILN_TARGET_CPU] = cpu;
  CHECK_OK(kiln_precision_parse(&o.compile.precision, rules));
  kiln_val *vin[4] = {0};
  int n_in = g->inputs.len;
  for (int i = 0; i < n_in && i < 4; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    kiln_tensor *x = NULL;
    int64_t dims[KILN_MAX_RANK];
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
    CHECK_OK(kiln_tensor_new(t->dtype, t->rank, dims, &x));
    for (int64_t e = 0; x && e < x->numel; e++)
      kiln_store_f64(t->dtype, x->data, (size_t)e, vals[(e + i) % nv]);
    vin[i] = kiln_val_tensor(x);
  }
  kiln_verify_result r;
  CHECK_OK(kiln_verify_run(g, n_in, vin, &o, &r));
  bool ok = !r.failed;
  if (r.failed) {
    kiln_strbuf t = {0};
    kiln_verify_print(&r, &t);
    fprintf(stderr, "under %s:\n%s\n", rules, t.data);
    kiln_strbuf_free(&t);
  }
  char fmt[256];
  kiln_precision_format(&o.compile.precision, fmt, sizeof fmt);
  CHECK(!strcmp(r.precision, fmt)); /* the case's replay flag */
  char cmd[1200], flag[300];
  snprintf(flag, sizeof flag, " --precision-policy %s", fmt);
  CHECK(fmt[0] && strstr(kiln_verify_replay_command("case", &r, cmd, sizeof cmd), flag));
  kiln_verify_result_free(&r);
  for (int i = 0; i < n_in && i < 4; i++) kiln_val_free(vin[i]);
  kiln_graph_free(g);
  return ok;
}

/* Sigmoid of f16 values below -11.1 computed in f16: 1 / (1 + exp(-x)) overflowed exp and
 * gave 0 where the result (down to 6e-8 at x = -16.6) is a representable subnormal. */
static void test_sigmoid_narrow(void) {
  const double v[] = {-16, -13.5, -12, -11.25, -1, 0, 3, 12, -0.0};
  CHECK(verify_under("graph @s(%x: f16[3,9]) -> (%y: f16[3,9]) {\n  opset \"\" 17\n"
                     "  %y = Sigmoid(%x) : f16[3,9]\n  return %y\n}\n",
                     "elementwise:f16=f16", v, 9, true));
}

/* Softplus (and Mish) of f16 values near -7 computed in f16: log1p(e) as log(u) e / (u - 1)
 * multiplied log(u) by e first, about 1e-6, an f16 subnormal with 5% spacing (26 ulps off at
 * -6.8, found by a campaign); e (log(u) / (u - 1)) keeps every factor near 1 or e. */
static void test_softplus_narrow(void) {
  const double v[] = {-6.8, -7.5, -9, -6, -4, -0.5, 0, 2, 9};
  CHECK(verify_under("graph @s(%x: f16[3,9]) -> (%y: f16[3,9], %z: f16[3,9]) {\n"
                     "  opset \"\" 18\n  %y = Softplus(%x) : f16[3,9]\n"
                     "  %z = Mish(%x) : f16[3,9]\n  return %y, %z\n}\n",
                     "elementwise:f16=f16", v, 9, true));
}

/* Float attributes under an f16 compute type: the kernel holds them rounded to f16, so Shrink
 * adds a bias of -0.52490234 (x + bias cancels at x = 0.52490234: 0 for -9.8e-5) and
 * ThresholdedRelu compares with 0.30004883 (x = 0.30004883 is kept by the f32 alpha 0.3, not
 * by the rounded one). The bound counts the rounded attributes (kiln_bnd_policy_attrs). */
static void test_attrs_narrow(void) {
  const double v[] = {0.52490234375, 0.525390625, 0.300048828125, 0.2998046875, -1.25, 2, 0};
  CHECK(verify_under("graph @s(%x: f16[2,7]) -> (%y: f16[2,7], %z: f16[2,7]) {\n"
                     "  opset \"\" 13\n"
                     "  %y = Shrink(%x) {bias=-0.525, lambd=-1.05} : f16[2,7]\n"
                     "  %z = ThresholdedRelu(%x) {alpha=0.3} : f16[2,7]\n  return %y, %z\n}\n",
                     "elementwise:f16=f16/f16", v, 7, true));
  /* Clip-6 holds min and max as float attributes: with f16 data, a result that is one of them
   * is stored rounded to f16 (0.86 as 0.859863), whatever the compute type (f16 values keep
   * the default policy here) */
  CHECK(verify_under("graph @c(%x: f16[2,7]) -> (%y: f16[2,7]) {\n  opset \"\" 9\n"
                     "  %y = Clip(%x) {min=-0.589, max=0.86} : f16[2,7]\n  return %y\n}\n",
                     "elementwise:f32=f64/f64", v, 7, true));
}

/* Average pools whose sums accumulate in f32 (storage bf16): the window count was converted
 * to f64 whatever the accumulator's type, and the kernel did not verify. */
static void test_avgpool_accumulator(void) {
  const double v[] = {0.5, -1.25, 2, 0.75, -0.375};
  CHECK(verify_under("graph @p(%x: bf16[1,2,5,5]) -> (%y: bf16[1,2,4,4], %z: bf16[1,2,1,1]) {\n"
                     "  opset \"\" 17\n"
                     "  %y = AveragePool(%x) {kernel_shape=[2,2]} : bf16[1,2,4,4]\n"
                     "  %z = GlobalAveragePool(%x) : bf16[1,2,1,1]\n  return %y, %z\n}\n",
                     "reduction:bf16=bf16/f32", v, 5, false));
}

/* Contractions of f32 values computed in f64: the packing of B (and of the convolution's
 * input) stored f32 loads into f64 panels. */
static void test_contraction_wider(void) {
  const double v[] = {0.5, -1.25, 2, 0.75, -0.375, 1.5, -2};
  const char *rules = "contraction:f32=f64/f64";
  CHECK(verify_under("graph @m(%a: f32[3,4], %b: f32[4,5], %x: f32[1,2,6,6]) -> (%y: f32[3,5], "
                     "%z: f32[1,3,6,6]) {\n  opset \"\" 17\n"
                     "  %w = const f32[3,2,3,3] [" /* 54 weights */
                     "1,0.5,-1,2,0,1,-0.5,1,0.25,1,0.5,-1,2,0,1,-0.5,1,0.25,"
                     "1,0.5,-1,2,0,1,-0.5,1,0.25,1,0.5,-1,2,0,1,-0.5,1,0.25,"
                     "1,0.5,-1,2,0,1,-0.5,1,0.25,1,0.5,-1,2,0,1,-0.5,1,0.25]\n"
                     "  %y = MatMul(%a, %b) : f32[3,5]\n"
                     "  %z = Conv(%x, %w) {pads=[1,1,1,1]} : f32[1,3,6,6]\n"
                     "  return %y, %z\n}\n",
                     rules, v, 7, false));
  CHECK(verify_under("graph @g(%a: f32[3,4]) -> (%y: f32[3,2]) {\n  opset \"\" 17\n"
                     "  %b = const f32[2,4] [1, -0.5, 2, 0.25, -1, 0.75, 0.5, 1.5]\n"
                     "  %y = Gemm(%a, %b) {transB=1, alpha=0.5} : f32[3,2]\n  return %y\n}\n",
                     rules, v, 7, false));
}

/* The policies kiln fuzz draws: about one graph in four gets one; no compute type narrower
 * than its storage; rules only for the dtypes the graph holds; the text form reads back. */
static void test_drawn_policies(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse("graph @d(%x: f16[4], %z: f32[4]) -> (%y: f16[4], %w: f32[4]) {\n"
                            "  opset \"\" 17\n  %y = Relu(%x) : f16[4]\n"
                            "  %w = Relu(%z) : f32[4]\n  return %y, %w\n}\n",
                            "test", &g));
  if (!g) return;
  int drawn = 0, n = 400;
  for (int s = 0; s < n; s++) {
    kiln_precision_policy p, back;
    bool any = kiln_gen_policy(g, (uint64_t)s * 0x9e3779b97f4a7c15ull, &p);
    CHECK(any == !kiln_precision_is_default(&p));
    drawn += any;
    for (int c = 0; c < KILN_PREC_CLASS_COUNT; c++) {
      kiln_dtype st[] = {KILN_F16, KILN_F32, KILN_BF16, KILN_F64};
      for (int i = 0; i < 4; i++) {
        kiln_dtype ct = kiln_precision_compute(&p, (kiln_prec_class)c, st[i]);
        CHECK(ct == kiln_precision_compute(NULL, (kiln_prec_class)c, st[i]) || ct == st[i] ||
              ct == KILN_F64);
      }
      /* bf16 is not in the graph: its rules stay the default */
      CHECK(kiln_precision_compute(&p, (kiln_prec_class)c, KILN_BF16) == KILN_F32);
    }
    char text[256];
    kiln_precision_format(&p, text, sizeof text);
    CHECK((text[0] != 0) == any);
    kiln_precision_default(&back);
    CHECK_OK(kiln_precision_parse(&back, text));
    for (int c = 0; c < KILN_PREC_CLASS_COUNT; c++)
      for (int t = 1; t < KILN_DTYPE_COUNT; t++) {
        kiln_prec_class pc = (kiln_prec_class)c;
        CHECK(kiln_precision_compute(&back, pc, (kiln_dtype)t) ==
                  kiln_precision_compute(&p, pc, (kiln_dtype)t) &&
              kiln_precision_accumulate(&back, pc, (kiln_dtype)t) ==
                  kiln_precision_accumulate(&p, pc, (kiln_dtype)t));
      }
  }
  CHECK(drawn > n / 8 && drawn < n / 2);
  kiln_graph_free(g);
}

static void cleanup(void) {
  if (g_tmp[0]) kiln_test_remove_dir(g_tmp);
}

TEST_MAIN({"policy_checks", test_policy_checks}, {"policy_text", test_policy_text},
          {"default_is_identical", test_default_is_identical},
          {"elementwise_f16", test_elementwise_f16}, {"input_rounding", test_input_rounding},
          {"mixed_policies", test_mixed_policies}, {"verify_run_f16", test_verify_run_f16},
          {"cuda_f16", test_cuda_f16}, {"sigmoid_narrow", test_sigmoid_narrow},
          {"softplus_narrow", test_softplus_narrow}, {"attrs_narrow", test_attrs_narrow},
          {"avgpool_accumulator", test_avgpool_accumulator},
          {"contraction_wider", test_contraction_wider}, {"drawn_policies", test_drawn_policies},
          {"cleanup", cleanup})
