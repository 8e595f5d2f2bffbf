/* ONNX Runtime as a second oracle (src/verify/oracle/ort.c). Needs a Python with onnxruntime
 * (.venv/bin/python from the repository root, `make venv`); without one the tests that run
 * models print a skip line and pass. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "onnx/onnx.h"
#include "verify/oracle/ort.h"

static kiln_ort *ort; /* shared by the tests that run models */
static bool ort_available;

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

/* Deterministic inputs in [-1, 1) (+ shift), one per graph input (f32 only). */
static kiln_val **make_inputs(const kiln_graph *g, uint64_t seed, double shift) {
  kiln_val **in = kiln_xcalloc((size_t)g->inputs.len + 1, sizeof *in);
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    int64_t dims[KILN_MAX_RANK];
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
    kiln_tensor *x = NULL;
    CHECK_OK(kiln_tensor_new(t->dtype, t->rank, dims, &x));
    for (int64_t k = 0; x && k < x->numel; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      double v = (double)(seed >> 40) / (double)(1ull << 24) * 2.0 - 1.0 + shift;
      if (t->dtype == KILN_F32) ((float *)x->data)[k] = (float)v;
      else if (t->dtype == KILN_F16) ((uint16_t *)x->data)[k] = kiln_f32_to_f16((float)v);
    }
    in[i] = kiln_val_tensor(x);
  }
  return in;
}

static void free_inputs(const kiln_graph *g, kiln_val **in) {
  for (int i = 0; i < g->inputs.len; i++) kiln_val_free(in[i]);
  free(in);
}

static bool need_ort(const char *test) {
  if (!ort_available) printf("skip %s: no Python with onnxruntime (make venv)\n", test);
  return ort_available;
}

/* Runs the check of g on inputs from seed; ref from ref_shift-shifted inputs (0: the same). */
static void check_model(const char *text, double ref_shift, kiln_layer_result *layer) {
  kiln_graph *g = parse(text);
  if (!g) return;
  kiln_val **in = make_inputs(g, 42, 0), **ref_in = make_inputs(g, 42, ref_shift);
  kiln_vref *ref = NULL;
  CHECK_OK(kiln_vref_compute(g, g->inputs.len, ref_in, &ref));
  if (ref) CHECK_OK(kiln_ort_check(ort, g, g->inputs.len, in, ref, layer));
  kiln_vref_free(ref);
  free_inputs(g, in);
  free_inputs(g, ref_in);
  kiln_graph_free(g);
}

static const char mlp[] =
    "graph @mlp(%x: f32[4,8]) -> (%y: f32[4,5], %p: f32[4,5]) {\n"
    "  opset \"\" 17\n"
    "  %w = const f32[8,5] [0.5, -0.25, 1, 0.75, -1, 0.125, 0.3, -0.7, 0.2, 0.9, -0.4, 0.6,"
    " 0.1, -0.3, 0.8, 0.25, -0.5, 0.45, -0.15, 0.35, 0.05, -0.95, 0.65, -0.55, 0.15, 0.4,"
    " -0.6, 0.7, -0.2, 0.3, 0.85, -0.45, 0.55, -0.35, 0.95, -0.05, 0.12, -0.18, 0.28, -0.38]\n"
    "  %b = const f32[5] [0.1, -0.2, 0.3, -0.4, 0.5]\n"
    "  %m = MatMul(%x, %w) : f32[4,5]\n"
    "  %s = Add(%m, %b) : f32[4,5]\n"
    "  %y = Relu(%s) : f32[4,5]\n"
    "  %p = Softmax(%s) {axis=1} : f32[4,5]\n"
    "  return %y, %p\n"
    "}\n";

static const char conv[] =
    "graph @conv(%x: f32[1,2,5,5]) -> (%y: f32[1,3,3,3]) {\n"
    "  opset \"\" 17\n"
    "  %w = const f32[3,2,2,2] [1, -1, 0.5, 0.25, -0.5, 2, 0.75, -0.25, 0.3, 0.6, -0.9, 0.1,"
    " 0.2, -0.4, 0.8, -0.6, 1.5, -1.25, 0.35, 0.45, -0.55, 0.65, -0.75, 0.85]\n"
    "  %b = const f32[3] [0.1, 0, -0.1]\n"
    "  %y = Conv(%x, %w, %b) {strides=[2, 2], pads=[1, 1, 1, 1]} : f32[1,3,3,3]\n"
    "  return %y\n"
    "}\n";

static void test_mlp_softmax_passes(void) {
  if (!need_ort(__func__)) return;
  kiln_layer_result l;
  check_model(mlp, 0, &l);
  CHECK(!strcmp(l.name, "onnxruntime"));
  CHECK(l.ran && l.ok);
  CHECK(l.max_ratio <= 1 && l.worst_output >= 0);
  if (!l.ok) fprintf(stderr, "mlp: %s\n", l.msg);
}

static void test_conv_passes(void) {
  if (!need_ort(__func__)) return;
  kiln_layer_result l;
  check_model(conv, 0, &l);
  CHECK(l.ran && l.ok);
  if (!l.ok) fprintf(stderr, "conv: %s\n", l.msg);
}

/* Opset 27 (newer than onnxruntime 1.23 knows) runs at its newest opset when the ops did not
 * change; Cast and Reshape only gained types. */
static void test_newer_opset_runs(void) {
  if (!need_ort(__func__)) return;
  kiln_layer_result l;
  check_model("graph @m(%x: f32[2,3]) -> (%y: f32[3,2]) {\n"
              "  opset \"\" 27\n"
              "  %s = const i64[2] [3, 2]\n"
              "  %r = Reshape(%x, %s) : f32[3,2]\n"
              "  %h = Cast(%r) {to=11} : f64[3,2]\n"
              "  %y = Cast(%h) {to=1} : f32[3,2]\n"
              "  return %y\n"
              "}\n",
              0, &l);
  CHECK(l.ran && l.ok);
  if (!l.ran || !l.ok) fprintf(stderr, "opset 27: %s\n", l.msg);
}

/* Rank-0 inputs and outputs stay rank 0 on the way through ORT. */
static void test_scalars(void) {
  if (!need_ort(__func__)) return;
  kiln_layer_result l;
  check_model("graph @m(%x: f32[], %v: f32[3]) -> (%y: f32[], %s: f32[]) {\n"
              "  opset \"\" 21\n"
              "  %y = Relu(%x) : f32[]\n"
              "  %s = ReduceSum(%v) {keepdims=0} : f32[]\n"
              "  return %y, %s\n"
              "}\n",
              0, &l);
  CHECK(l.ran && l.ok);
  if (!l.ran || !l.ok) fprintf(stderr, "scalars: %s\n", l.msg);
}

/* A reference from other inputs: ORT's outputs lie outside the bound; locate names a node. */
static void test_wrong_reference_fails(void) {
  if (!need_ort(__func__)) return;
  kiln_layer_result l;
  check_model(mlp, 0.5, &l);
  CHECK(l.ran && !l.ok);
  CHECK(l.max_ratio > 1);
  CHECK(strstr(l.msg, "output '") != NULL);

  kiln_graph *g = parse(mlp);
  if (!g) return;
  kiln_val **in = make_inputs(g, 42, 0), **ref_in = make_inputs(g, 42, 0.5);
  kiln_vref *ref = NULL;
  CHECK_OK(kiln_vref_compute(g, g->inputs.len, ref_in, &ref));
  char where[160], sig[256];
  if (ref) CHECK_OK(kiln_ort_locate(ort, g, 1, in, ref, where, sizeof where, sig, sizeof sig));
  if (ref) {
    CHECK(!strncmp(sig, "onnxruntime|-|", 14));
    CHECK(where[0] != 0);
    printf("locate: %s / %s\n", where, sig);
  }
  kiln_vref_free(ref);
  free_inputs(g, in);
  free_inputs(g, ref_in);
  kiln_graph_free(g);
}

/* ORT has no CPU kernel for Add on bfloat16: a layer that did not run, with ORT's reason. */
static void test_refused_model_did_not_run(void) {
  if (!need_ort(__func__)) return;
  kiln_graph *g = parse("graph @m(%x: bf16[3]) -> (%y: bf16[3]) {\n"
                        "  opset \"\" 17\n"
                        "  %y = Add(%x, %x) : bf16[3]\n"
                        "  return %y\n"
                        "}\n");
  if (!g) return;
  kiln_tensor *x = NULL;
  CHECK_OK(kiln_tensor_new(KILN_BF16, 1, (int64_t[]){3}, &x));
  kiln_val *in[1] = {kiln_val_tensor(x)};
  kiln_vref *ref = NULL;
  CHECK_OK(kiln_vref_compute(g, 1, in, &ref));
  kiln_layer_result l;
  int64_t refused = kiln_ort_get_stats(ort).refused;
  if (ref) CHECK_OK(kiln_ort_check(ort, g, 1, in, ref, &l));
  if (ref) {
    CHECK(!l.ran);
    CHECK(strstr(l.msg, "did not run: onnxruntime") && strstr(l.msg, "Add"));
  }
  CHECK(kiln_ort_get_stats(ort).refused == refused + 1);
  kiln_val *out[1];
  CHECK_ERR(kiln_ort_run(ort, g, 1, in, out), KILN_ERR_UNSUPPORTED);
  CHECK(out[0] == NULL);
  kiln_vref_free(ref);
  kiln_val_free(in[0]);
  kiln_graph_free(g);
}

/* A Python process that died between requests is restarted; a request past the time limit
 * kills and restarts it and reports the model as not run. */
static void test_restart_after_kill_and_timeout(void) {
  if (!need_ort(__func__)) return;
  kill(kiln_ort_pid(ort), SIGKILL);
  kiln_layer_result l;
  check_model(conv, 0, &l);
  CHECK(l.ran && l.ok);
  CHECK(kiln_ort_get_stats(ort).crashes >= 1);

  kiln_graph *g = parse("graph @m(%a: f32[700,700]) -> (%y: f32[700,700]) {\n"
                        "  opset \"\" 17\n"
                        "  %b = MatMul(%a, %a) : f32[700,700]\n"
                        "  %c = MatMul(%b, %a) : f32[700,700]\n"
                        "  %d = MatMul(%c, %a) : f32[700,700]\n"
                        "  %y = MatMul(%d, %a) : f32[700,700]\n"
                        "  return %y\n"
                        "}\n");
  if (!g) return;
  kiln_val **in = make_inputs(g, 1, 0), *out[1];
  kiln_ort_set_timeout(ort, 0.002);
  kiln_status st = kiln_ort_run(ort, g, 1, in, out);
  CHECK(kiln_status_code(st) == KILN_ERR_UNSUPPORTED);
  CHECK(st && strstr(kiln_status_message(st), "time limit"));
  kiln_status_free(st);
  kiln_ort_set_timeout(ort, 60);
  CHECK(kiln_ort_get_stats(ort).timeouts == 1);
  check_model(mlp, 0, &l); /* the restarted process serves the next request */
  if (!l.ran || !l.ok) fprintf(stderr, "after restart: %s\n", l.msg);
  CHECK(l.ran && l.ok);
  free_inputs(g, in);
  kiln_graph_free(g);
}

/* Kiln's export passes onnx.checker (full check); a value_info that contradicts inference
 * does not. */
static void test_onnx_checker(void) {
  if (!need_ort(__func__)) return;
  const char *models[] = {mlp, conv};
  for (int i = 0; i < 2; i++) {
    kiln_graph *g = parse(models[i]);
    if (g) CHECK_OK(kiln_ort_check_model(ort, g));
    kiln_graph_free(g);
  }
  /* a declared type that inference contradicts: Kiln's inference rejects it too, so the
   * graph goes to the checker as parsed */
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse("graph @m(%x: f32[2,3]) -> (%y: f32[2,3]) {\n"
                            "  opset \"\" 17\n"
                            "  %r = Relu(%x) : f32[2,4]\n"
                            "  %y = Neg(%x) : f32[2,3]\n"
                            "  return %y\n"
                            "}\n",
                            "test", &g));
  if (!g) return;
  kiln_status st = kiln_ort_check_model(ort, g);
  CHECK(kiln_status_code(st) == KILN_ERR_INVALID);
  CHECK(st && strstr(kiln_status_message(st), "onnx.checker"));
  kiln_status_free(st);
  kiln_graph_free(g);
}

static void test_python_missing_is_unsupported(void) {
  kiln_ort_opts o;
  kiln_ort_opts_init(&o);
  o.python = "/nonexistent/kiln-python";
  kiln_ort *x = NULL;
  kiln_status st = kiln_ort_open(&o, &x);
  CHECK(kiln_status_code(st) == KILN_ERR_UNSUPPORTED);
  const char *m = kiln_status_message(st);
  CHECK(strstr(m, "/nonexistent/kiln-python") && strstr(m, "make venv"));
  CHECK(x == NULL);
  kiln_status_free(st);
  /* A program that exits at once instead of answering "ready". */
  o.python = "/bin/false";
  st = kiln_ort_open(&o, &x);
  CHECK(kiln_status_code(st) == KILN_ERR_UNSUPPORTED);
  CHECK(st && strstr(kiln_status_message(st), "/bin/false"));
  kiln_status_free(st);
}

/* The embedded server is scripts/ort_oracle.py (scripts/ort_embed.py regenerates it). */
static void test_embedded_script_matches(void) {
  char *text = NULL;
  size_t len = 0;
  CHECK_OK(kiln_read_file("scripts/ort_oracle.py", &text, &len));
  CHECK(text && !strcmp(text, kiln_ort_script));
  free(text);
}

static void open_ort(void) {
  kiln_ort_opts o;
  kiln_ort_opts_init(&o);
  kiln_status st = kiln_ort_open(&o, &ort);
  if (st) printf("onnxruntime unavailable: %s\n", kiln_status_message(st));
  else printf("%s\n", kiln_ort_version(ort));
  ort_available = st == KILN_OK;
  kiln_status_free(st);
}

static void test_open(void) {
  open_ort();
}

static void test_close(void) {
  kiln_ort_close(ort);
  ort = NULL;
}

TEST_MAIN(T(test_embedded_script_matches), T(test_python_missing_is_unsupported), T(test_open),
          T(test_mlp_softmax_passes), T(test_conv_passes), T(test_newer_opset_runs),
          T(test_scalars), T(test_wrong_reference_fails), T(test_refused_model_did_not_run),
          T(test_onnx_checker), T(test_restart_after_kill_and_timeout), T(test_close))
