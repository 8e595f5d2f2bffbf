/* Unit tests of the runtime: kiln_interp_eval_node (fallback evaluation), compiling small
 * graphs end to end (passes, lowering, C, shared object, plan, executor) against the
 * reference interpreter, the kernel cache (hits, corrupt entries rebuilt), compiler errors,
 * input checks and symbolic dims. Cache entries go to a fresh folder under $TMPDIR. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "harness.h"

static char g_cache[1024];

static void make_cache_dir(void) {
  if (g_cache[0]) return;
  const char *t = getenv("TMPDIR");
  snprintf(g_cache, sizeof g_cache, "%s/kiln_rt_test_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_cache)) abort();
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static kiln_tensor *random_tensor(kiln_dtype dt, int rank, const int64_t *dims) {
  kiln_tensor *x = NULL;
  if (kiln_tensor_new(dt, rank, dims, &x)) abort();
  for (int64_t i = 0; i < x->numel; i++) {
    if (kiln_dtype_is_float(dt)) kiln_store_f64(dt, x->data, (size_t)i, rnd() * 4 - 2);
    else kiln_store_i64(dt, x->data, (size_t)i, (int64_t)(rnd() * 11) - 5);
  }
  return x;
}

static kiln_tensor *random_for(const kiln_graph *g, int i) {
  const kiln_type *t = &g->values.data[g->inputs.data[i]].type;
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  return random_tensor(t->dtype, t->rank, dims);
}

static bool close_tensors(const kiln_tensor *a, const kiln_tensor *ref) {
  if (!a || !ref || a->dtype != ref->dtype || a->numel != ref->numel || a->rank != ref->rank)
    return false;
  for (int64_t i = 0; i < a->numel; i++) {
    double x = kiln_load_f64(a->dtype, a->data, (size_t)i);
    double y = kiln_load_f64(ref->dtype, ref->data, (size_t)i);
    if (!(fabs(x - y) <= 1e-5 + 1e-3 * fabs(y)) && !(isnan(x) && isnan(y))) {
      fprintf(stderr, "  element %lld: got %.9g, reference %.9g\n", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static kiln_compile_opts opts(void) {
  make_cache_dir();
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_cache;
  o.threads = 2;
  return o;
}

/* Runs the reference interpreter on a fresh parse of text (the compiled graph is rewritten
 * by the passes) and the compiled form c on the same inputs. */
static bool compare(const char *text, kiln_compiled *c, int n_in, kiln_tensor **in) {
  kiln_graph *ref_g = parse(text);
  if (!ref_g) return false;
  kiln_val *vin[8], *ref[8] = {0};
  kiln_tensor *out[8] = {0};
  for (int i = 0; i < n_in; i++) vin[i] = kiln_val_tensor(in[i]);
  bool ok = true;
  kiln_status st = kiln_interp_run(ref_g, NULL, n_in, vin, ref);
  if (st) fprintf(stderr, "reference: %s\n", kiln_status_message(st)), ok = false;
  kiln_status_free(st);
  st = kiln_compiled_run(c, n_in, in, out);
  if (st) fprintf(stderr, "compiled: %s\n", kiln_status_message(st)), ok = false;
  kiln_status_free(st);
  for (int i = 0; ok && i < ref_g->outputs.len; i++) ok = close_tensors(out[i], ref[i]->t);
  for (int i = 0; i < ref_g->outputs.len; i++) kiln_tensor_free(out[i]), kiln_val_free(ref[i]);
  for (int i = 0; i < n_in; i++) vin[i]->t = NULL, kiln_val_free(vin[i]);
  kiln_graph_free(ref_g);
  return ok;
}

/* Compiles text with o, compares two runs with random inputs; returns the compiled form
 * (or NULL) through keep when asked. */
static bool compile_and_compare(const char *text, const kiln_compile_opts *o,
                                kiln_compiled **keep) {
  kiln_graph *g = parse(text);
  if (!g) return false;
  kiln_compiled *c = NULL;
  kiln_compile_opts oo = *o;
  oo.take_graph = true;
  kiln_status st = kiln_compile(g, NULL, &oo, &c);
  if (st) {
    fprintf(stderr, "compile: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    kiln_graph_free(g);
    return false;
  }
  bool ok = true;
  for (int rep = 0; ok && rep < 2; rep++) {
    kiln_tensor *in[8];
    int n_in = kiln_compiled_graph(c)->inputs.len;
    for (int i = 0; i < n_in; i++) in[i] = random_for(kiln_compiled_graph(c), i);
    ok = compare(text, c, n_in, in);
    for (int i = 0; i < n_in; i++) kiln_tensor_free(in[i]);
  }
  if (!ok) {
    kiln_strbuf b = {0};
    kiln_compiled_report(c, &b);
    kiln_program_print(kiln_compiled_program(c), &b);
    fprintf(stderr, "failed on:\n%s%s", text, b.data);
    kiln_strbuf_free(&b);
  }
  if (keep) *keep = c;
  else kiln_compiled_free(c);
  return ok;
}

static const char *const EW = "graph @ew(%x: f32[4,37], %y: f32[37]) -> (%z: f32[4,37]) {\n"
                              "  opset \"\" 17\n"
                              "  %a = Add(%x, %y) : f32[4,37]\n"
                              "  %b = Relu(%a) : f32[4,37]\n"
                              "  %c = Mul(%b, %x) : f32[4,37]\n"
                              "  %z = Sigmoid(%c) : f32[4,37]\n"
                              "  return %z\n}\n";

static const char *const MIXED =
    "graph @mixed(%x: f32[2,3,8]) -> (%y: f32[6,8], %n: i64[3,?], %s: f32[2,3,1]) {\n"
    "  opset \"\" 17\n"
    "  %shape = const i64[2] [6, 8]\n"
    "  %one = const i64[1] [2]\n"
    "  %r = Reshape(%x, %shape) : f32[6,8]\n"
    "  %e = Exp(%r) : f32[6,8]\n"
    "  %y = Softmax(%e) {axis=1} : f32[6,8]\n"
    "  %t = Tanh(%x) : f32[2,3,8]\n"
    "  %n = NonZero(%t) : i64[3,?]\n"
    "  %s = ReduceSum(%t, %one) {keepdims=1} : f32[2,3,1]\n"
    "  return %y, %n, %s\n}\n";

/* ---- kiln_interp_eval_node ---- */
typedef struct env {
  kiln_val *vals[16];
} env;
static kiln_val *env_lookup(void *user, int v) {
  return v < 16 ? ((env *)user)->vals[v] : NULL;
}

static void test_eval_node(void) {
  kiln_graph *g = parse("graph @e(%x: f32[3], %c: bool[]) -> (%y: f32[3], %z: f32[3]) {\n"
                        "  opset \"\" 17\n"
                        "  %w = const f32[3] [1, 2, 3]\n"
                        "  %y = Add(%x, %w) : f32[3]\n"
                        "  %z = If(%c) {\n"
                        "    then_branch=graph @t() -> (%o: f32[3]) {\n"
                        "      outer %y\n"
                        "      %o = Neg(%y) : f32[3]\n      return %o\n    },\n"
                        "    else_branch=graph @f() -> (%o2: f32[3]) {\n"
                        "      outer %x\n"
                        "      %o2 = Identity(%x) : f32[3]\n      return %o2\n    }} : f32[3]\n"
                        "  return %y, %z\n}\n");
  if (!g) return;
  env e = {0};
  kiln_tensor *x = random_tensor(KILN_F32, 1, (int64_t[]){3});
  float xs[3];
  memcpy(xs, x->data, sizeof xs);
  e.vals[g->inputs.data[0]] = kiln_val_tensor(x);
  kiln_val *out[1] = {0};
  CHECK_OK(kiln_interp_eval_node(g, 0, env_lookup, &e, out)); /* Add with a constant */
  CHECK(out[0] && out[0]->t && ((float *)out[0]->t->data)[2] == xs[2] + 3.0f);
  int y = g->outputs.data[0];
  e.vals[y] = out[0];
  /* If: the condition comes from lookup, the branch reads %y through lookup too */
  CHECK_ERR(kiln_interp_eval_node(g, 1, env_lookup, &e, out), KILN_ERR_INVALID); /* no %c */
  kiln_tensor *c = NULL;
  CHECK_OK(kiln_tensor_new(KILN_BOOL, 0, NULL, &c));
  ((uint8_t *)c->data)[0] = 1;
  e.vals[g->inputs.data[1]] = kiln_val_tensor(c);
  kiln_val *z[1] = {0};
  CHECK_OK(kiln_interp_eval_node(g, 1, env_lookup, &e, z));
  CHECK(z[0] && z[0]->t && ((float *)z[0]->t->data)[0] == -(xs[0] + 1.0f));
  kiln_val_free(z[0]);
  CHECK_ERR(kiln_interp_eval_node(g, 7, env_lookup, &e, z), KILN_ERR_INVALID);
  for (int i = 0; i < 16; i++) kiln_val_free(e.vals[i]);
  kiln_graph_free(g);
}

/* ---- compile and run ---- */
static void test_elementwise_end_to_end(void) {
  kiln_compile_opts o = opts();
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(EW, &o, &c));
  if (!c) return;
  const kiln_compile_stats *s = kiln_compiled_stats(c);
  CHECK(s->n_kernel_steps >= 1 && s->n_fallback_steps == 0);
  CHECK(s->arena_bytes >= s->lower_bound && s->arena_bytes > 0);
  kiln_strbuf b = {0};
  kiln_compiled_report(c, &b);
  CHECK(b.data && strstr(b.data, "compile time") && strstr(b.data, "lower bound"));
  kiln_strbuf_free(&b);
  /* profiling: the slowest steps, then the compiled form still runs normally */
  kiln_tensor *in[2] = {random_for(kiln_compiled_graph(c), 0),
                        random_for(kiln_compiled_graph(c), 1)};
  kiln_strbuf prof = {0};
  CHECK_OK(kiln_compiled_profile(c, 2, in, 3, &prof));
  CHECK(prof.data && strstr(prof.data, "profile:") && strstr(prof.data, "kernel k"));
  CHECK_ERR(kiln_compiled_profile(c, 2, in, 0, &prof), KILN_ERR_INVALID);
  CHECK(compare(EW, c, 2, in));
  kiln_strbuf_free(&prof);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_compiled_free(c);
}

static void test_mixed_steps(void) {
  /* alias (Reshape), kernels, a reduction with a constant axis, a data-dependent fallback */
  kiln_compile_opts o = opts();
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(MIXED, &o, &c));
  if (!c) return;
  const kiln_compile_stats *s = kiln_compiled_stats(c);
  CHECK(s->n_fallback_steps >= 1); /* NonZero */
  kiln_compiled_free(c);
}

/* A constant Pad of 64-bit elements: its inner loop (7 long) stores a guarded load or 0. GCC 12
 * with `omp simd` and AVX2 vectorized the loop's epilogue wrongly (elements 4 and 5 of each
 * row came out 0); the flags of the C compiler must avoid that. */
static void test_guarded_loads_64bit(void) {
  static const char *const dts[] = {"u64", "f64", "i64"};
  for (int i = 0; i < 3; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "graph @p(%%x: %s[2,5,1,4]) -> (%%y: %s[4,7,5,7]) {\n  opset \"\" 18\n"
             "  %%c = const i64[8] [0, 1, 2, 2, 2, 1, 2, 1]\n"
             "  %%y = Pad(%%x, %%c) {mode=\"constant\"} : %s[4,7,5,7]\n  return %%y\n}\n",
             dts[i], dts[i], dts[i]);
    kiln_compile_opts o = opts();
    CHECK(compile_and_compare(text, &o, NULL));
  }
}

/* Data-dependent values on the heap, read by several later steps, freed after the last. */
static void test_heap_values_chain(void) {
  kiln_compile_opts o = opts();
  CHECK(compile_and_compare(
      "graph @h(%x: f32[3,4]) -> (%c: f32[?,2], %s: i64[2], %y: f32[3,4]) {\n  opset \"\" 17\n"
      "  %r = Relu(%x) : f32[3,4]\n  %n = NonZero(%r) : i64[2,?]\n"
      "  %t = Transpose(%n) {perm=[1,0]} : i64[?,2]\n  %c = Cast(%t) {to=1} : f32[?,2]\n"
      "  %s = Shape(%n) : i64[2]\n  %y = Exp(%r) : f32[3,4]\n  return %c, %s, %y\n}\n",
      &o, NULL));
}

static void test_forced_fallback_matches(void) {
  kiln_compile_opts o = opts();
  o.force_fallback = "Add,Sigmoid";
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(EW, &o, &c));
  if (!c) return;
  CHECK(kiln_compiled_stats(c)->n_fallback_steps == 2);
  kiln_strbuf b = {0};
  kiln_compiled_report(c, &b);
  CHECK(b.data && strstr(b.data, "fallback"));
  kiln_strbuf_free(&b);
  kiln_compiled_free(c);
}

static void test_outputs_that_are_inputs_or_constants(void) {
  kiln_compile_opts o = opts();
  CHECK(compile_and_compare("graph @io(%x: f32[5]) -> (%x2: f32[5], %k: f32[2], %n: f32[5]) {\n"
                            "  opset \"\" 17\n  %k = const f32[2] [1.5, -2]\n"
                            "  %x2 = Identity(%x) : f32[5]\n  %n = Neg(%x) : f32[5]\n"
                            "  return %x2, %k, %n\n}\n",
                            &o, NULL));
}

/* Views of inputs and constants (alias steps) as outputs and as fallback operands. */
static void test_views_of_inputs_and_constants(void) {
  const char *text = "graph @v(%x: f32[2,3]) -> (%r: f32[3,2], %n: f32[6], %m: f32[6]) {\n"
                     "  opset \"\" 17\n  %k = const f32[3,2] [1, 2, 3, 4, 5, 6]\n"
                     "  %s = const i64[2] [3, 2]\n  %s6 = const i64[1] [6]\n"
                     "  %r = Reshape(%x, %s) : f32[3,2]\n"
                     "  %kf = Reshape(%k, %s6) : f32[6]\n  %n = Neg(%kf) : f32[6]\n"
                     "  %xf = Reshape(%x, %s6) : f32[6]\n  %m = Mul(%xf, %kf) : f32[6]\n"
                     "  return %r, %n, %m\n}\n";
  kiln_compile_opts o = opts();
  CHECK(compile_and_compare(text, &o, NULL));
  o.force_fallback = "Neg,Mul";
  CHECK(compile_and_compare(text, &o, NULL));
}

/* Sequences in and out: fallback steps, values on the heap, kiln_compiled_run_vals. */
static void test_sequence_values(void) {
  kiln_graph *g =
      parse("graph @sq(%s: seq<f32[*]>, %x: f32[k]) -> (%t: seq<f32[*]>, %n: i64[], %y: f32[k]) {\n"
            "  opset \"\" 17\n  %t = SequenceInsert(%s, %x) : seq<f32[*]>\n"
            "  %n = SequenceLength(%t) : i64[]\n  %y = Exp(%x) : f32[k]\n"
            "  return %t, %n, %y\n}\n");
  if (!g) return;
  kiln_compile_opts o = opts();
  o.take_graph = true;
  kiln_compiled *c = NULL;
  kiln_tensor *x3 = random_tensor(KILN_F32, 1, (int64_t[]){3});
  CHECK_ERR(kiln_graph_bind_inputs(g, 2, (const kiln_tensor *const[]){x3, NULL}), KILN_ERR_INVALID);
  CHECK_OK(kiln_graph_bind_inputs(g, 2, (const kiln_tensor *const[]){NULL, x3}));
  kiln_tensor_free(x3);
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (!c) return kiln_graph_free(g);
  kiln_val *seq = kiln_val_new(KILN_TYPE_SEQUENCE);
  seq->seq = kiln_seq_new(KILN_F32);
  kiln_seq_push(seq->seq, random_tensor(KILN_F32, 1, (int64_t[]){2}));
  kiln_val *x = kiln_val_tensor(random_tensor(KILN_F32, 1, (int64_t[]){3}));
  kiln_val *out[3] = {0};
  for (int rep = 0; rep < 2; rep++) {
    CHECK_OK(kiln_compiled_run_vals(c, 2, (kiln_val *const[]){seq, x}, out));
    CHECK(out[0] && out[0]->kind == KILN_TYPE_SEQUENCE && out[0]->seq && out[0]->seq->len == 2);
    CHECK(out[1] && out[1]->t && ((int64_t *)out[1]->t->data)[0] == 2);
    CHECK(out[2] && out[2]->t &&
          fabs(((float *)out[2]->t->data)[1] - expf(((float *)x->t->data)[1])) < 1e-6);
    for (int i = 0; i < 3; i++) kiln_val_free(out[i]), out[i] = NULL;
  }
  CHECK(seq->seq->len == 1); /* inputs are not modified */
  CHECK_ERR(kiln_compiled_run_vals(c, 2, (kiln_val *const[]){x, x}, out), KILN_ERR_INVALID);
  kiln_tensor *tout[3] = {0};
  CHECK_ERR(kiln_compiled_run(c, 2, (kiln_tensor *const[]){x->t, x->t}, tout), KILN_ERR_INVALID);
  kiln_val_free(seq);
  kiln_val_free(x);
  kiln_compiled_free(c);
}

/* Weights repacked by lowering are released; results stay right. */
static void test_release_weights(void) {
  char text[8192];
  int n = snprintf(text, sizeof text,
                   "graph @w(%%x: f32[4,32]) -> (%%y: f32[4,16]) {\n  opset \"\" 17\n"
                   "  %%w = const f32[32,16] [");
  for (int i = 0; i < 32 * 16; i++)
    n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", i ? ", " : "", (i * 7) % 5 - 2);
  snprintf(
      text + n, sizeof text - (size_t)n,
      "]\n  %%m = MatMul(%%x, %%w) : f32[4,16]\n  %%y = Relu(%%m) : f32[4,16]\n  return %%y\n}\n");
  kiln_compile_opts o = opts();
  o.release_weights = true;
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(text, &o, &c));
  if (!c) return;
  const kiln_graph *g = kiln_compiled_graph(c);
  int w = kiln_graph_find(g, "w");
  CHECK(w >= 0 && kiln_compiled_stats(c)->packed_bytes > 0);
  if (w >= 0 && kiln_compiled_stats(c)->packed_bytes > 0)
    CHECK(g->values.data[w].data->data == NULL && g->values.data[w].data->numel == 0);
  kiln_compiled_free(c);
}

/* A removed If leaves its branches among the graph's subgraphs, their OUTER ids stale after
 * compaction (here id 4 when 3 values remain). Releasing weights once marked every subgraph's
 * reads whenever a step fell back, and wrote one past its array for that id (ASan); it marks
 * the reads of the fallback nodes' own subgraphs now. */
static void test_release_weights_dead_subgraph(void) {
  const char *text = "graph @d(%c: bool[], %x: f32[4]) -> (%y: f32[4]) {\n  opset \"\" 17\n"
                     "  %d0 = const f32[4] [1, 2, 3, 4]\n  %d1 = const f32[4] [1, 2, 3, 4]\n"
                     "  %d2 = const f32[4] [1, 2, 3, 4]\n  %d3 = const f32[4] [1, 2, 3, 4]\n"
                     "  %d4 = const f32[4] [1, 2, 3, 4]\n  %d5 = const f32[4] [1, 2, 3, 4]\n"
                     "  %z = Add(%d0, %d1) : f32[4]\n"
                     "  %k = const f32[4] [5, 6, 7, 8]\n"
                     "  %r = If(%c) {else_branch=graph @e() -> (%k: f32[4]) {\n"
                     "    outer %k\n    return %k\n"
                     "  }, then_branch=graph @t() -> (%k: f32[4]) {\n"
                     "    outer %k\n    return %k\n  }} : f32[4]\n"
                     "  %y = Neg(%x) : f32[4]\n  return %y\n}\n";
  kiln_compile_opts o = opts();
  o.release_weights = true;
  o.force_fallback = "Neg";
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(text, &o, &c));
  if (!c) return;
  CHECK(kiln_compiled_graph(c)->nodes.len == 1 && kiln_compiled_stats(c)->n_fallback_steps == 1);
  kiln_compiled_free(c);
}

/* Identical kernels (same op, same shapes, other values) are compiled once. */
static void test_dedup_kernels(void) {
  kiln_compile_opts o = opts();
  o.passes.no_fusion = true;
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare("graph @d(%x: f32[4,8]) -> (%y: f32[4,8]) {\n  opset \"\" 17\n"
                            "  %a = Relu(%x) : f32[4,8]\n  %b = Neg(%a) : f32[4,8]\n"
                            "  %y = Relu(%b) : f32[4,8]\n  return %y\n}\n",
                            &o, &c));
  if (!c) return;
  const kiln_compile_stats *s = kiln_compiled_stats(c);
  CHECK(s->n_kernels == 3 && s->n_unique_kernels == 2);
  kiln_compiled_free(c);
}

static void test_input_checks(void) {
  kiln_compile_opts o = opts();
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(EW, &o, &c));
  if (!c) return;
  kiln_tensor *in[2] = {random_tensor(KILN_F32, 2, (int64_t[]){4, 36}),
                        random_tensor(KILN_F32, 1, (int64_t[]){37})};
  kiln_tensor *out[1] = {0};
  CHECK_ERR(kiln_compiled_run(c, 2, in, out), KILN_ERR_INVALID); /* shape */
  CHECK_ERR(kiln_compiled_run(c, 1, in, out), KILN_ERR_INVALID); /* count */
  kiln_tensor_free(in[0]);
  in[0] = random_tensor(KILN_F64, 2, (int64_t[]){4, 37});
  CHECK_ERR(kiln_compiled_run(c, 2, in, out), KILN_ERR_INVALID); /* dtype */
  CHECK(out[0] == NULL);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_compiled_free(c);
}

static void test_symbolic_dims(void) {
  const char *text = "graph @s(%x: f32[n,6]) -> (%y: f32[n,6]) {\n  opset \"\" 17\n"
                     "  %a = Abs(%x) : f32[n,6]\n  %y = Sqrt(%a) : f32[n,6]\n  return %y\n}\n";
  kiln_graph *g = parse(text);
  if (!g) return;
  kiln_compile_opts o = opts();
  kiln_compiled *c = NULL;
  CHECK_ERR(kiln_graph_bind_dims(g, "n", -1), KILN_ERR_INVALID);
  kiln_tensor *x = random_tensor(KILN_F32, 2, (int64_t[]){5, 6});
  kiln_tensor *bad = random_tensor(KILN_F32, 2, (int64_t[]){5, 7});
  CHECK_ERR(kiln_graph_bind_inputs(g, 1, (const kiln_tensor *const[]){bad}), KILN_ERR_INVALID);
  CHECK_OK(kiln_graph_bind_inputs(g, 1, (const kiln_tensor *const[]){x}));
  CHECK(kiln_type_is_static(&g->values.data[g->outputs.data[0]].type));
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (c) {
    kiln_tensor *in[1] = {x};
    CHECK(compare(text, c, 1, in));
    kiln_compiled_free(c);
  }
  kiln_graph_free(g); /* after c: not handed over */
  /* binding through the options */
  g = parse(text);
  kiln_dim_binding dims[1] = {{"n", 5}};
  o.n_dims = 1, o.dims = dims, o.take_graph = true;
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (c) {
    kiln_tensor *in[1] = {x};
    CHECK(compare(text, c, 1, in));
    kiln_compiled_free(c);
  }
  kiln_tensor_free(x);
  kiln_tensor_free(bad);
}

/* ---- the cache ---- */
static int corrupt_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    FILE *f = fopen(p, "r+b");
    if (!f) continue;
    fseek(f, -3, SEEK_END);
    fputc('#', f);
    fclose(f);
    n++;
  }
  closedir(d);
  return n;
}

static const char *const CACHED = "graph @cached(%x: f32[33]) -> (%y: f32[33]) {\n"
                                  "  opset \"\" 17\n  %a = Exp(%x) : f32[33]\n"
                                  "  %y = Log(%a) : f32[33]\n  return %y\n}\n";

static void test_cache_hits_and_corruption(void) {
  char dir[1100];
  make_cache_dir();
  snprintf(dir, sizeof dir, "%s/own", g_cache);
  kiln_compile_opts o = opts();
  o.cache_dir = dir;
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(CACHED, &o, &c));
  if (c)
    CHECK(!kiln_compiled_stats(c)->library_cached && kiln_compiled_stats(c)->n_units_cached == 0);
  kiln_compiled_free(c);
  c = NULL;
  CHECK(compile_and_compare(CACHED, &o, &c)); /* warm */
  if (c) CHECK(kiln_compiled_stats(c)->library_cached);
  kiln_compiled_free(c);
  c = NULL;
  char sub[1200];
  snprintf(sub, sizeof sub, "%s/lib", dir);
  CHECK(corrupt_entries(sub) >= 1);
  CHECK(compile_and_compare(CACHED, &o, &c)); /* library rebuilt from cached objects */
  if (c)
    CHECK(!kiln_compiled_stats(c)->library_cached && kiln_compiled_stats(c)->n_units_cached >= 1);
  kiln_compiled_free(c);
  c = NULL;
  snprintf(sub, sizeof sub, "%s/obj", dir);
  CHECK(corrupt_entries(sub) >= 1);
  snprintf(sub, sizeof sub, "%s/lib", dir);
  CHECK(corrupt_entries(sub) >= 1);
  CHECK(compile_and_compare(CACHED, &o, &c)); /* everything rebuilt */
  if (c)
    CHECK(!kiln_compiled_stats(c)->library_cached && kiln_compiled_stats(c)->n_units_cached == 0);
  kiln_compiled_free(c);
  c = NULL;
  CHECK(compile_and_compare(CACHED, &o, &c)); /* and cached again */
  if (c) CHECK(kiln_compiled_stats(c)->library_cached);
  kiln_compiled_free(c);
}

static void test_no_cache(void) {
  kiln_compile_opts o = opts();
  o.no_cache = true;
  kiln_compiled *c = NULL;
  CHECK(compile_and_compare(CACHED, &o, &c));
  if (c) CHECK(!kiln_compiled_stats(c)->library_cached);
  kiln_compiled_free(c);
  /* a cache folder that cannot be made: compiles go on without a cache */
  char file[1200];
  snprintf(file, sizeof file, "%s/a_file", g_cache);
  CHECK_OK(kiln_write_file(file, "x", 1));
  strcat(file, "/cache");
  o = opts();
  o.cache_dir = file;
  c = NULL;
  CHECK(compile_and_compare(CACHED, &o, &c));
  if (c)
    CHECK(!kiln_compiled_stats(c)->library_cached && kiln_compiled_stats(c)->n_units_cached == 0);
  kiln_compiled_free(c);
}

/* ---- module building ---- */
static void test_module_build_and_errors(void) {
  make_cache_dir();
  const char *ok_src[2] = {"int kiln_t_one(void) { return 1; }\n",
                           "int kiln_t_two(void) { return 2; }\n"};
  kiln_cc_opts o = {NULL, NULL, g_cache, false, 2, NULL, false};
  kiln_module *m = NULL;
  kiln_cc_stats st;
  CHECK_OK(kiln_module_build(2, ok_src, &o, &m, &st));
  if (m) {
    void *f = NULL;
    CHECK_OK(kiln_module_sym(m, "kiln_t_two", &f));
    CHECK(f && ((int (*)(void))f)() == 2);
    CHECK_ERR(kiln_module_sym(m, "kiln_t_three", &f), KILN_ERR_INTERNAL);
    kiln_module_free(m);
  }
  const char *bad_src[1] = {"int kiln_t_bad(void) { return syntax error here; }\n"};
  kiln_status e = kiln_module_build(1, bad_src, &o, &m, &st);
  CHECK(e && kiln_status_code(e) == KILN_ERR_FAILED);
  CHECK(e && strstr(kiln_status_message(e), "error")); /* the compiler's own words */
  kiln_status_free(e);
  CHECK(m == NULL);
  /* a failing unit among several compiled in parallel: named, the others drained */
  const char *mixed[3] = {ok_src[0], bad_src[0], ok_src[1]};
  e = kiln_module_build(3, mixed, &o, &m, &st);
  CHECK(e && kiln_status_code(e) == KILN_ERR_FAILED && strstr(kiln_status_message(e), "unit 1"));
  kiln_status_free(e);
  CHECK(m == NULL);
  kiln_cc_opts nocc = o;
  nocc.cc = "/nonexistent/kiln-cc";
  CHECK_ERR(kiln_module_build(1, ok_src, &nocc, &m, &st), KILN_ERR_SYSTEM); /* environment */
  CHECK_ERR(kiln_module_build(0, ok_src, &o, &m, &st), KILN_ERR_INVALID);
  /* a host program that ignores SIGCHLD: builds still work, errors are still reported */
  void (*old_handler)(int) = signal(SIGCHLD, SIG_IGN);
  kiln_cc_opts fresh_o = o;
  fresh_o.no_cache = true;
  CHECK_OK(kiln_module_build(2, ok_src, &fresh_o, &m, &st));
  kiln_module_free(m);
  m = NULL;
  e = kiln_module_build(1, bad_src, &fresh_o, &m, &st);
  CHECK(e && kiln_status_code(e) == KILN_ERR_FAILED);
  kiln_status_free(e);
  signal(SIGCHLD, old_handler);
  /* a build folder left by a killed compile is removed once old; a recent one is kept */
  char stale[1200], fresh[1200], file[1300];
  snprintf(stale, sizeof stale, "%s/tmp.stale1", g_cache);
  snprintf(fresh, sizeof fresh, "%s/tmp.fresh1", g_cache);
  CHECK(mkdir(stale, 0755) == 0 && mkdir(fresh, 0755) == 0);
  snprintf(file, sizeof file, "%s/unit0.c", stale);
  CHECK_OK(kiln_write_file(file, "x", 1));
  struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  CHECK(utimensat(AT_FDCWD, stale, old, 0) == 0);
  CHECK_OK(kiln_module_build(2, ok_src, &o, &m, &st));
  kiln_module_free(m);
  m = NULL;
  CHECK(access(stale, F_OK) != 0 && access(fresh, F_OK) == 0);
  /* a compiler that cannot even answer --version: the environment's failure, not Kiln's */
  kiln_compile_opts co = opts();
  co.cc = "false";
  co.no_cache = true;
  kiln_graph *g = parse(EW);
  kiln_compiled *c = NULL;
  CHECK_ERR(kiln_compile(g, NULL, &co, &c), KILN_ERR_SYSTEM); /* `false --version` fails */
  CHECK(c == NULL);
  kiln_graph_free(g);
}

/* Compiles EW with options o, its C sources kept in g_cache/sub, and returns the first
 * unit's text (the caller frees it; NULL when it failed). */
static char *compiled_source(kiln_compile_opts *o, const char *sub) {
  char dir[1100], path[1200];
  snprintf(dir, sizeof dir, "%s/%s", g_cache, sub);
  o->keep_sources = dir;
  CHECK(compile_and_compare(EW, o, NULL));
  snprintf(path, sizeof path, "%s/unit0.c", dir);
  char *text = NULL;
  size_t n;
  CHECK_OK(kiln_read_file(path, &text, &n));
  return text;
}

static void test_keep_sources(void) {
  kiln_compile_opts o = opts();
  char *text = compiled_source(&o, "sources");
  CHECK(text && strstr(text, "kiln_"));
  free(text);
}

/* A LayerNormalization (with a fused prologue) read for its Mean alone: its Y has no
 * storage, and the kernel stores the statistics only (the lowering refused it: "reduction
 * result is not bound"). */
static void test_layernorm_stats_only(void) {
  kiln_compile_opts o = opts();
  CHECK(compile_and_compare(
      "graph @ln(%a: f32[2,1,4], %b: f32[1,4,1], %s: f32[4,4]) -> (%m: f32[2,1,1]) {\n"
      "  opset \"\" 17\n"
      "  %x = Add(%a, %b) : f32[2,4,4]\n"
      "  %y, %m = LayerNormalization(%x, %s) {axis=-2} : f32[2,4,4], f32[2,1,1]\n"
      "  return %m\n}\n",
      &o, NULL));
}

/* par_stress (verification): a model far below the parallel threshold gets OpenMP loops
 * with several threads, none with one thread or without it, and computes the same. */
static void test_par_stress(void) {
  for (int stress = 0; stress < 2; stress++)
    for (int threads = 1; threads <= 3; threads += 2) {
      kiln_compile_opts o = opts();
      o.threads = threads;
      o.par_stress = stress;
      o.no_cache = true;
      char sub[64];
      snprintf(sub, sizeof sub, "stress%d_%d", stress, threads);
      char *text = compiled_source(&o, sub);
      bool omp = text && strstr(text, "omp parallel for");
      CHECK(omp == (stress && threads > 1));
      free(text);
    }
}

/* The convenience API of kiln.h: interpreter before compiling, compiled code after. */
static void test_model_api(void) {
  make_cache_dir();
  char path[1200];
  snprintf(path, sizeof path, "%s/model.kiln", g_cache);
  const char *text = "graph @m(%x: f32[b,7]) -> (%y: f32[b,7]) {\n  opset \"\" 17\n"
                     "  %a = Mul(%x, %x) : f32[b,7]\n  %y = Tanh(%a) : f32[b,7]\n  return %y\n}\n";
  CHECK_OK(kiln_write_file(path, text, strlen(text)));
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load(path, &m));
  if (!m) return;
  kiln_tensor *x = random_tensor(KILN_F32, 2, (int64_t[]){3, 7});
  kiln_tensor *ref[1] = {0}, *got[1] = {0};
  CHECK_OK(kiln_model_run(m, (const kiln_tensor *const[]){x}, ref));
  CHECK(kiln_model_compiled(m) == NULL);
  kiln_compile_opts o = opts();
  CHECK_ERR(kiln_model_compile_opts(m, NULL, &o), KILN_ERR_INVALID); /* symbolic dims not bound */
  CHECK_OK(kiln_model_bind_inputs(m, (const kiln_tensor *const[]){x}));
  CHECK_OK(kiln_model_compile_opts(m, NULL, &o));
  CHECK(kiln_model_compiled(m) != NULL);
  CHECK_OK(kiln_model_run(m, (const kiln_tensor *const[]){x}, got));
  CHECK(got[0] && ref[0] && close_tensors(got[0], ref[0]));
  CHECK_ERR(kiln_model_bind_inputs(m, (const kiln_tensor *const[]){x}), KILN_ERR_INVALID);
  kiln_tensor_free(ref[0]);
  kiln_tensor_free(got[0]);
  kiln_tensor_free(x);
  kiln_model_free(m);
}

static void test_cleanup(void) {
  kiln_test_remove_dir(g_cache);
  CHECK(access(g_cache, F_OK) != 0);
}

TEST_MAIN(T(test_eval_node), T(test_elementwise_end_to_end), T(test_mixed_steps),
          T(test_heap_values_chain), T(test_guarded_loads_64bit), T(test_forced_fallback_matches),
          T(test_outputs_that_are_inputs_or_constants), T(test_views_of_inputs_and_constants),
          T(test_sequence_values), T(test_release_weights), T(test_release_weights_dead_subgraph),
          T(test_dedup_kernels), T(test_input_checks), T(test_symbolic_dims),
          T(test_cache_hits_and_corruption), T(test_no_cache), T(test_module_build_and_errors),
          T(test_keep_sources), T(test_par_stress), T(test_layernorm_stats_only), T(test_model_api),
          T(test_cleanup))
