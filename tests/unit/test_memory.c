/* Unit tests of the memory limit (src/base/budget.c) and of the places that must respect it:
 * tensors count their bytes while they live, a refusal names the size, the limit and
 * --max-memory, a thread's narrower limit, compiling allocates no arena (it is made at the
 * first run, counted, and given back when the compiled form is freed), the plan is checked
 * against kiln_compile_opts.max_memory, constant folding does not materialize a described
 * tensor, and inference rejects a tensor type whose element count overflows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "harness.h"

static char g_cache[1024];

static kiln_compile_opts opts(void) {
  if (!g_cache[0]) kiln_test_make_tmp(g_cache, sizeof g_cache, "kiln_mem_test");
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cache_dir = g_cache;
  o.threads = 1;
  return o;
}

static kiln_graph *parse(const char *text) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "test", &g));
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

/* The status is an INVALID error whose message holds every one of the words. */
static void check_msg(kiln_status st, const char *a, const char *b) {
  CHECK(st != KILN_OK);
  if (!st) return;
  const char *m = kiln_status_message(st);
  CHECK(kiln_status_code(st) == KILN_ERR_INVALID);
  CHECK(kiln_status_exit_code(st) == 2);
  CHECK(strstr(m, "--max-memory") != NULL);
  for (int i = 0; i < 2; i++) {
    const char *w = i ? b : a;
    if (w && !strstr(m, w)) fprintf(stderr, "message lacks '%s': %s\n", w, m);
    CHECK(!w || strstr(m, w));
  }
  kiln_status_free(st);
}

static void test_tensor_counts_its_bytes(void) {
  int64_t before = kiln_mem_in_use();
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, 2, (const int64_t[]){100, 10}, &t));
  CHECK(kiln_mem_in_use() == before + 4000);
  kiln_tensor *c = NULL;
  CHECK_OK(kiln_tensor_clone(t, &c));
  CHECK(kiln_mem_in_use() == before + 8000);
  kiln_tensor_drop_data(c);
  CHECK(c->numel == 0 && !c->data && kiln_mem_in_use() == before + 4000);
  kiln_tensor view = *t; /* a view owns nothing and releases nothing */
  view.owns_data = false;
  (void)view;
  kiln_tensor_free(c);
  kiln_tensor_free(t);
  CHECK(kiln_mem_in_use() == before);
}

static void test_limit_refuses_and_names(void) {
  kiln_mem_set_limit((int64_t)1 << 20);
  CHECK(kiln_mem_limit() == (int64_t)1 << 20);
  kiln_tensor *t = NULL;
  int64_t before = kiln_mem_in_use();
  check_msg(kiln_tensor_new(KILN_F32, 2, (const int64_t[]){1024, 1024}, &t), "f32[1024,1024]",
            "4194304 bytes");
  CHECK(t == NULL && kiln_mem_in_use() == before); /* nothing reserved by a refusal */
  /* under the limit alone, over it with what is already held */
  kiln_tensor *a = NULL, *b = NULL;
  CHECK_OK(kiln_tensor_new(KILN_U8, 1, (const int64_t[]){600000}, &a));
  check_msg(kiln_tensor_new(KILN_U8, 1, (const int64_t[]){600000}, &b), "already in use", NULL);
  kiln_tensor_free(a);
  CHECK_OK(kiln_tensor_new(KILN_U8, 1, (const int64_t[]){600000}, &b));
  kiln_tensor_free(b);
  kiln_mem_set_limit(0); /* the default again */
  CHECK(kiln_mem_limit() == kiln_mem_default_limit());
  CHECK(kiln_mem_default_limit() > 0 && kiln_mem_default_limit() <= KILN_MEM_DEFAULT_CAP);
}

static void test_thread_limit_and_estimates(void) {
  int64_t prev = kiln_mem_push_limit((int64_t)2 << 20);
  CHECK(kiln_mem_limit() == (int64_t)2 << 20);
  check_msg(kiln_mem_check((int64_t)3 << 20, "the plan of '%s'", "g"), "the plan of 'g'",
            "3145728 bytes");
  check_msg(kiln_mem_check(-1, "an overflowed estimate"), "overflowed", NULL);
  CHECK_OK(kiln_mem_check(1 << 20, "a small one"));
  int64_t before = kiln_mem_in_use();
  CHECK_OK(kiln_mem_reserve(1 << 20, "scratch"));
  CHECK(kiln_mem_in_use() == before + (1 << 20));
  kiln_mem_release(1 << 20);
  CHECK(kiln_mem_in_use() == before);
  kiln_mem_pop_limit(prev);
  CHECK(kiln_mem_limit() == kiln_mem_default_limit());
  /* a companion is counted, not refused */
  prev = kiln_mem_push_limit((int64_t)1 << 20);
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_new_companion(KILN_F64, 1, (const int64_t[]){1 << 18}, &t));
  CHECK(kiln_mem_in_use() == before + ((int64_t)2 << 20));
  kiln_mem_pop_limit(prev);
  kiln_tensor_free(t);
  /* a refusal stays recognizable under added context; other bad input is not one */
  prev = kiln_mem_push_limit((int64_t)1 << 20);
  kiln_status st = kiln_tensor_new(KILN_F32, 1, (const int64_t[]){1 << 20}, &t);
  kiln_mem_pop_limit(prev);
  st = kiln_status_annotate(st, "node 'n'");
  CHECK(kiln_mem_limit_error(st));
  kiln_status_free(st);
  st = kiln_invalid("the model mentions (--max-memory) but is just bad");
  CHECK(!kiln_mem_limit_error(st) && !kiln_mem_limit_error(KILN_OK));
  kiln_status_free(st);
}

static const char *const BIG = "graph @big(%x: f32[N,256,256]) -> (%y: f32[N,256,256]) {\n"
                               "  opset \"\" 17\n"
                               "  %h = Relu(%x) : f32[N,256,256]\n"
                               "  %y = Neg(%h) : f32[N,256,256]\n"
                               "  return %y\n}\n";

/* compile plans the arena without making it; the first run makes it; free gives it back */
static void test_compile_allocates_no_arena(void) {
  kiln_graph *g = parse(BIG);
  if (!g) return;
  kiln_compile_opts o = opts();
  kiln_dim_binding d = {"N", 64};
  o.dims = &d, o.n_dims = 1;
  int64_t before = kiln_mem_in_use();
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  if (!c) {
    kiln_graph_free(g);
    return;
  }
  int64_t arena = kiln_compiled_stats(c)->arena_bytes;
  CHECK(arena >= (int64_t)64 * 256 * 256 * 4);
  CHECK(kiln_mem_in_use() - before < arena / 4); /* no arena yet */
  kiln_tensor *x = NULL, *y = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, 3, (const int64_t[]){64, 256, 256}, &x));
  ((float *)x->data)[5] = 2.0f;
  CHECK_OK(kiln_compiled_run(c, 1, (kiln_tensor *const[]){x}, &y));
  CHECK(y && ((float *)y->data)[5] == -2.0f);
  CHECK(kiln_mem_in_use() - before >= arena); /* the arena, x and y */
  kiln_tensor_free(y);
  kiln_tensor_free(x);
  kiln_compiled_free(c);
  kiln_graph_free(g);
  CHECK(kiln_mem_in_use() == before);
}

/* kiln_compile_opts.max_memory: the plan is refused before anything is allocated */
static void test_plan_over_max_memory(void) {
  kiln_graph *g = parse(BIG);
  if (!g) return;
  kiln_compile_opts o = opts();
  kiln_dim_binding d = {"N", 4000}; /* a 2 GB arena */
  o.dims = &d, o.n_dims = 1;
  o.max_memory = (int64_t)256 << 20;
  kiln_compiled *c = NULL;
  check_msg(kiln_compile(g, NULL, &o, &c), "memory plan", "268435456 bytes");
  CHECK(c == NULL);
  CHECK(kiln_mem_limit() == kiln_mem_default_limit()); /* the thread's limit is restored */
  kiln_graph_free(g);
}

/* ConstantOfShape of a constant shape: neither folding nor lowering computes the tensor */
static void test_constant_of_shape_not_materialized(void) {
  kiln_graph *g = parse("graph @cos() -> (%y: f32[8000,8000]) {\n"
                        "  opset \"\" 17\n"
                        "  %s = const i64[2] [8000, 8000]\n"
                        "  %y = ConstantOfShape(%s) : f32[8000,8000]\n"
                        "  return %y\n}\n");
  if (!g) return;
  kiln_compile_opts o = opts();
  /* under 64 MB the plan (256 MB) is refused: no fold or lowering computed the tensor first
   * (that would have been refused with a message about the ConstantOfShape's output) */
  o.max_memory = (int64_t)64 << 20;
  kiln_compiled *c = NULL;
  check_msg(kiln_compile(g, NULL, &o, &c), "memory plan", "'y'");
  CHECK(c == NULL);
  o.max_memory = (int64_t)512 << 20; /* the result fits once, not twice */
  int64_t before = kiln_mem_in_use();
  CHECK_OK(kiln_compile(g, NULL, &o, &c));
  CHECK(kiln_mem_in_use() - before < ((int64_t)16 << 20)); /* no folded 256 MB constant */
  kiln_tensor *y = NULL;
  if (c) CHECK_OK(kiln_compiled_run(c, 0, NULL, &y));
  CHECK(y && y->numel == 64000000 && ((float *)y->data)[63999999] == 0.0f);
  kiln_tensor_free(y);
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

/* inference: an element count that overflows int64 is bad input, named */
/* Inference of f32[N,256,256] with N bound to n: an INVALID error naming 'x' and `what`. */
static void check_bound_input(int64_t n, const char *what) {
  kiln_graph *g = parse(BIG);
  if (!g) return;
  CHECK_OK(kiln_graph_bind_dims(g, "N", n));
  kiln_status st = kiln_ops_infer_graph(g);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID);
  const char *m = st ? kiln_status_message(st) : "";
  if (!strstr(m, "'x'") || !strstr(m, what)) fprintf(stderr, "unexpected: %s\n", m);
  CHECK(strstr(m, "'x'") && strstr(m, what));
  kiln_status_free(st);
  kiln_graph_free(g);
}

/* inference: an element count that overflows int64 is bad input, named */
static void test_inference_rejects_overflow(void) {
  check_bound_input((int64_t)1 << 44, "more than"); /* 2^62 bytes: over what a tensor holds */
  check_bound_input((int64_t)1 << 48, "overflows"); /* 2^64 elements */
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse("graph @t(%x: f32[2,2]) -> (%y: f32[?,?]) {\n"
                            "  opset \"\" 17\n"
                            "  %r = const i64[2] [4611686018427387904, 4611686018427387904]\n"
                            "  %y = Tile(%x, %r) : f32[?,?]\n"
                            "  return %y\n}\n",
                            "test", &g));
  if (g) CHECK_ERR(kiln_ops_infer_graph(g), KILN_ERR_INVALID); /* the Tile extent overflows */
  kiln_graph_free(g);
}

/* the C API: kiln_set_max_memory bounds the interpreter of kiln_model_run */
static void test_api_limit(void) {
  char dir[1024], path[1100];
  kiln_test_make_tmp(dir, sizeof dir, "kiln_mem_api");
  snprintf(path, sizeof path, "%s/cos.kiln", dir);
  const char *text = "graph @cos() -> (%y: f32[2000,2000]) {\n"
                     "  opset \"\" 17\n"
                     "  %s = const i64[2] [2000, 2000]\n"
                     "  %y = ConstantOfShape(%s) : f32[2000,2000]\n"
                     "  return %y\n}\n";
  CHECK_OK(kiln_write_file(path, text, strlen(text)));
  kiln_model *m = NULL;
  CHECK_OK(kiln_model_load(path, &m));
  kiln_tensor *y = NULL;
  kiln_set_max_memory((int64_t)8 << 20); /* the 16 MB result does not fit */
  if (m) check_msg(kiln_model_run(m, NULL, &y), "'y'", "16000000 bytes");
  CHECK(y == NULL);
  kiln_set_max_memory(0);
  if (m) CHECK_OK(kiln_model_run(m, NULL, &y));
  CHECK(y && y->numel == 4000000);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_test_remove_dir(dir);
}

TEST_MAIN({"tensor_counts_its_bytes", test_tensor_counts_its_bytes},
          {"limit_refuses_and_names", test_limit_refuses_and_names},
          {"thread_limit_and_estimates", test_thread_limit_and_estimates},
          {"compile_allocates_no_arena", test_compile_allocates_no_arena},
          {"plan_over_max_memory", test_plan_over_max_memory},
          {"constant_of_shape_not_materialized", test_constant_of_shape_not_materialized},
          {"inference_rejects_overflow", test_inference_rejects_overflow},
          {"api_limit", test_api_limit})
