/* Kernels that check their input (kiln_step.check_arg): Gather, GatherElements, GatherND,
 * ScatterElements, ScatterND and CumSum with an axis known at run time report an index
 * out of range as an error, like the reference interpreter, in the program interpreter and
 * in the compiled CPU code; in-range inputs give the reference results, also after a
 * failed run (the error flag is cleared before each kernel). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "harness.h"

typedef struct check_case {
  const char *name;
  const char *text;   /* one node; its inputs: %x (f32 data) then integer inputs */
  int n_int;          /* integer inputs after %x */
  int64_t good[2][8]; /* values of the integer inputs, in range */
  int64_t bad[2][8];  /* values with one index out of range */
} check_case;

static const check_case cases[] = {
    {"Gather",
     "graph @t(%x: f32[5,3], %i: i64[2]) -> (%y: f32[2,3]) {\n  opset \"\" 13\n"
     "  %y = Gather(%x, %i) : f32[2,3]\n  return %y\n}\n",
     1,
     {{4, -5}},
     {{1, 5}}},
    {"Gather",
     "graph @t(%x: f32[2,6], %i: i32[3]) -> (%y: f32[2,3]) {\n  opset \"\" 13\n"
     "  %y = Gather(%x, %i) {axis=1} : f32[2,3]\n  return %y\n}\n",
     1,
     {{0, 5, -6}},
     {{0, -7, 2}}},
    {"GatherElements",
     "graph @t(%x: f32[3,4], %i: i64[2,4]) -> (%y: f32[2,4]) {\n  opset \"\" 13\n"
     "  %y = GatherElements(%x, %i) : f32[2,4]\n  return %y\n}\n",
     1,
     {{0, 1, 2, -3, 2, 2, -1, 0}},
     {{0, 1, 2, -3, 2, 3, -1, 0}}},
    {"GatherND",
     "graph @t(%x: f32[4,3], %i: i64[2,1]) -> (%y: f32[2,3]) {\n  opset \"\" 13\n"
     "  %y = GatherND(%x, %i) : f32[2,3]\n  return %y\n}\n",
     1,
     {{3, -4}},
     {{4, 0}}},
    {"ScatterElements",
     "graph @t(%x: f32[3,3], %i: i64[1,3], %u: f32[1,3]) -> (%y: f32[3,3]) {\n"
     "  opset \"\" 18\n"
     "  %y = ScatterElements(%x, %i, %u) : f32[3,3]\n  return %y\n}\n",
     1,
     {{0, -1, 2}},
     {{0, 3, 2}}},
    {"ScatterND",
     "graph @t(%x: f32[4,2], %i: i64[2,1], %u: f32[2,2]) -> (%y: f32[4,2]) {\n"
     "  opset \"\" 18\n"
     "  %y = ScatterND(%x, %i, %u) {reduction=\"add\"} : f32[4,2]\n  return %y\n}\n",
     1,
     {{1, -4}},
     {{-5, 1}}},
    {"CumSum",
     "graph @t(%x: f32[2,3], %a: i64[]) -> (%y: f32[2,3]) {\n  opset \"\" 14\n"
     "  %y = CumSum(%x, %a) : f32[2,3]\n  return %y\n}\n",
     1,
     {{-1}},
     {{2}}},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "test", &g);
  if (!st) st = kiln_ops_infer_graph(g);
  if (st) fprintf(stderr, "parse: %s\n", kiln_status_message(st));
  kiln_status_free(st);
  return g;
}

/* The inputs of case c: %x counts up from -1.5 in steps of 0.25; the integer inputs hold
 * vals[j] (updates, if any, count too). */
static int make_inputs(const kiln_graph *g, const int64_t (*vals)[8], int n_int, kiln_tensor **in) {
  int n = g->inputs.len;
  for (int i = 0; i < n; i++) {
    const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
    int64_t dims[KILN_MAX_RANK];
    for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
    if (kiln_tensor_new(t->dtype, t->rank, dims, &in[i])) abort();
    for (int64_t e = 0; e < in[i]->numel; e++) {
      if (kiln_dtype_is_float(t->dtype))
        kiln_store_f64(t->dtype, in[i]->data, (size_t)e, -1.5 + 0.25 * (double)(e + 3 * i));
      else kiln_store_i64(t->dtype, in[i]->data, (size_t)e, i - 1 < n_int ? vals[i - 1][e] : 0);
    }
  }
  return n;
}

static void free_inputs(int n, kiln_tensor **in) {
  for (int i = 0; i < n; i++) kiln_tensor_free(in[i]);
}

/* The reference result of text on in, or NULL when the reference reports an error. */
static kiln_tensor *reference(const char *text, int n, kiln_tensor **in) {
  kiln_graph *g = parse(text);
  kiln_val *vin[8], *out[1] = {0};
  for (int i = 0; i < n; i++) vin[i] = kiln_val_tensor(in[i]);
  kiln_status st = kiln_interp_run(g, NULL, n, vin, out);
  kiln_status_free(st);
  kiln_tensor *y = NULL;
  if (!st) y = out[0]->t, out[0]->t = NULL;
  kiln_val_free(out[0]);
  for (int i = 0; i < n; i++) vin[i]->t = NULL, kiln_val_free(vin[i]);
  kiln_graph_free(g);
  return y;
}

static bool same(const kiln_tensor *a, const kiln_tensor *b) {
  if (!a || !b || a->numel != b->numel) return false;
  for (int64_t e = 0; e < a->numel; e++)
    if (fabs(kiln_load_f64(a->dtype, a->data, (size_t)e) -
             kiln_load_f64(b->dtype, b->data, (size_t)e)) > 1e-6)
      return false;
  return true;
}

/* An error of code INVALID whose message names the op and says "out of range". */
static bool reports(kiln_status st, const char *op) {
  bool ok = st && kiln_status_code(st) == KILN_ERR_INVALID &&
            strstr(kiln_status_message(st), "out of range") && strstr(kiln_status_message(st), op);
  if (!ok)
    fprintf(stderr, "  expected an out-of-range error for %s, got: %s\n", op,
            st ? kiln_status_message(st) : "OK");
  kiln_status_free(st);
  return ok;
}

/* ---- the lowered program ---- */
static bool step_checks(const kiln_program *p) {
  int checked = 0;
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL || st->check_arg < 0) continue;
    checked++;
    const kiln_tkernel *k = p->module->kernels.data[st->kernel];
    if (!st->check_msg || st->check_arg >= st->n_args ||
        st->args[st->check_arg].kind != KILN_ARG_SCRATCH ||
        k->bufs.data[st->check_arg].dtype != KILN_I32 || k->bufs.data[st->check_arg].size != 1)
      return false;
  }
  return checked == 1 && p->n_fallback == 0;
}

static bool verify_all(const kiln_program *p) {
  bool ok = true;
  for (int i = 0; i < p->module->kernels.len; i++) {
    kiln_status st = kiln_tkernel_verify(p->module->kernels.data[i]);
    if (st) fprintf(stderr, "verify: %s\n", kiln_status_message(st)), ok = false;
    kiln_status_free(st);
  }
  return ok;
}

/* good, bad, then good again: the flag does not stick */
static bool interp_case(const check_case *c, const kiln_program *p, const kiln_graph *g) {
  kiln_tensor *in[8], *out[1] = {0};
  bool ok = true;
  for (int round = 0; round < 3; round++) {
    int n = make_inputs(g, round == 1 ? c->bad : c->good, c->n_int, in);
    kiln_tensor *ref = reference(c->text, n, in);
    kiln_status st = kiln_program_interp(p, n, in, out);
    if (round == 1) {
      ok &= ref == NULL; /* the reference reports it too */
      ok &= reports(st, c->name);
    } else {
      if (st) fprintf(stderr, "  program: %s\n", kiln_status_message(st));
      ok &= !st && same(out[0], ref);
      kiln_status_free(st);
    }
    kiln_tensor_free(out[0]), out[0] = NULL;
    kiln_tensor_free(ref);
    free_inputs(n, in);
  }
  return ok;
}

static void test_program_interp(void) {
  for (int i = 0; i < N_CASES; i++) {
    const check_case *c = &cases[i];
    kiln_graph *g = parse(c->text);
    CHECK(g != NULL);
    if (!g) continue;
    kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 4};
    kiln_program *p = NULL;
    CHECK_OK(kiln_lower(g, &lo, &p));
    bool ok = p && verify_all(p) && step_checks(p) && interp_case(c, p, g);
    if (!ok) fprintf(stderr, "  case %d (%s) failed\n", i, c->name);
    CHECK(ok);
    kiln_program_free(p);
    kiln_graph_free(g);
  }
}

/* Kernels that cannot see a bad index check nothing. */
static void test_unchecked_steps(void) {
  kiln_graph *g = parse("graph @t(%x: f32[4], %i: i64[2]) -> (%y: f32[4], %z: f32[2]) {\n"
                        "  opset \"\" 13\n  %y = Relu(%x) : f32[4]\n"
                        "  %z = Gather(%x, %i) {axis=0} : f32[2]\n  return %y, %z\n}\n");
  CHECK(g != NULL);
  if (!g) return;
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 1, .force_fallback = "Gather"};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  CHECK(p && p->steps.len == 2);
  for (int s = 0; p && s < p->steps.len; s++) {
    CHECK(p->steps.data[s].check_arg == -1);
    CHECK(p->steps.data[s].check_msg == NULL);
  }
  kiln_program_free(p);
  kiln_graph_free(g);
}

/* ---- the compiled CPU code ---- */
static char g_cache[1024];

static bool compiled_case(const check_case *c) {
  kiln_graph *g = parse(c->text);
  if (!g) return false;
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_cache;
  o.threads = 2;
  o.take_graph = true;
  kiln_compiled *cc = NULL;
  kiln_status st = kiln_compile(g, NULL, &o, &cc);
  if (st) {
    fprintf(stderr, "  compile: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    kiln_graph_free(g);
    return false;
  }
  bool ok = kiln_compiled_stats(cc)->n_fallback_steps == 0;
  kiln_tensor *in[8], *out[1] = {0};
  for (int round = 0; round < 4; round++) { /* good, bad, bad, good */
    bool bad = round == 1 || round == 2;
    const kiln_graph *cg = kiln_compiled_graph(cc);
    int n = make_inputs(cg, bad ? c->bad : c->good, c->n_int, in);
    kiln_tensor *ref = reference(c->text, n, in);
    st = kiln_compiled_run(cc, n, in, out);
    if (bad) {
      ok &= reports(st, c->name);
    } else {
      if (st) fprintf(stderr, "  compiled: %s\n", kiln_status_message(st));
      ok &= !st && same(out[0], ref);
      kiln_status_free(st);
    }
    kiln_tensor_free(out[0]), out[0] = NULL;
    kiln_tensor_free(ref);
    free_inputs(n, in);
  }
  kiln_compiled_free(cc);
  return ok;
}

static void test_compiled(void) {
  const char *t = getenv("TMPDIR");
  snprintf(g_cache, sizeof g_cache, "%s/kiln_check_test_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_cache)) abort();
  for (int i = 0; i < N_CASES; i++) {
    bool ok = compiled_case(&cases[i]);
    if (!ok) fprintf(stderr, "  compiled case %d (%s) failed\n", i, cases[i].name);
    CHECK(ok);
  }
  kiln_test_remove_dir(g_cache);
}

TEST_MAIN(T(test_program_interp), T(test_unchecked_steps), T(test_compiled))
