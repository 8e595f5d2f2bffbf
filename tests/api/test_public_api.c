/* The public C API (include/kiln.h) as a program outside Kiln uses it: this file includes
 * kiln.h and the C library alone, and its build sees no folder of src/ (CMake gives it only
 * include/), so it also shows that kiln.h is self-contained and opaque enough to bind to.
 * Prints "N passed, N failed". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln.h>

static int passed, failed;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (cond) passed++;                                                                            \
    else {                                                                                         \
      failed++;                                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

/* Checks st has code want (KILN_OK_CODE: success) and, for an error, that its message holds
 * every needle; frees st. */
static void expect(kiln_status st, kiln_code want, const char *needle, int line) {
  kiln_code got = st ? kiln_status_code(st) : KILN_OK_CODE;
  const char *msg = kiln_status_message(st);
  if (got == want && (!needle || strstr(msg, needle))) passed++;
  else {
    failed++;
    fprintf(stderr, "line %d: expected %s%s%s, got %s: %s\n", line, kiln_code_name(want),
            needle ? " with " : "", needle ? needle : "", kiln_code_name(got), msg);
  }
  kiln_status_free(st);
}
#define EXPECT(expr, code, needle) expect((expr), (code), (needle), __LINE__)

static char dir[64];

static const char *write_model(void) {
  static char path[128];
  snprintf(path, sizeof path, "%s/model.kiln", dir);
  const char *text = "graph @m(%x: f32[b,7]) -> (%y: f32[b,7]) {\n  opset \"\" 17\n"
                     "  %a = Mul(%x, %x) : f32[b,7]\n  %y = Tanh(%a) : f32[b,7]\n  return %y\n}\n";
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) return NULL;
  return path;
}

static void test_tensors(void) {
  kiln_tensor *t = NULL;
  EXPECT(kiln_tensor_new(KILN_F32, 2, (int64_t[]){3, -1}, &t), KILN_ERR_INVALID, NULL);
  EXPECT(kiln_tensor_new(KILN_I64, 2, (int64_t[]){2, 5}, &t), KILN_OK_CODE, NULL);
  if (!t) return;
  CHECK(kiln_tensor_dtype(t) == KILN_I64 && kiln_tensor_rank(t) == 2);
  CHECK(kiln_tensor_dim(t, 0) == 2 && kiln_tensor_dim(t, 1) == 5 && kiln_tensor_dim(t, 2) == -1);
  CHECK(kiln_tensor_numel(t) == 10 && kiln_tensor_nbytes(t) == 80);
  CHECK(((int64_t *)kiln_tensor_data(t))[9] == 0);
  kiln_tensor_free(t);
}

static void test_options(void) {
  kiln_options *o = NULL;
  EXPECT(kiln_options_new(&o), KILN_OK_CODE, NULL);
  if (!o) return;
  EXPECT(kiln_options_set_target(o, "gpu9"), KILN_ERR_INVALID, "gpu9");
  EXPECT(kiln_options_set_target(o, "cpu"), KILN_OK_CODE, NULL);
  EXPECT(kiln_options_set_threads(o, 5000), KILN_ERR_INVALID, "5000");
  EXPECT(kiln_options_set_dim(o, "", 3), KILN_ERR_INVALID, NULL);
  EXPECT(kiln_options_set_dim(o, "b", -2), KILN_ERR_INVALID, NULL);
  EXPECT(kiln_options_set_max_memory(o, -1), KILN_ERR_INVALID, NULL);
  kiln_options_free(o);
}

static kiln_tensor *input(int64_t rows) {
  kiln_tensor *x = NULL;
  EXPECT(kiln_tensor_new(KILN_F32, 2, (int64_t[]){rows, 7}, &x), KILN_OK_CODE, NULL);
  float *d = x ? kiln_tensor_data(x) : NULL;
  for (int64_t i = 0; d && i < rows * 7; i++) d[i] = (float)(i % 11) * 0.25f - 1.0f;
  return x;
}

/* Outputs equal tanh(x * x) within float rounding. */
static void check_output(const kiln_tensor *x, kiln_tensor *y) {
  CHECK(y && kiln_tensor_dtype(y) == KILN_F32 && kiln_tensor_numel(y) == kiln_tensor_numel(x));
  if (!y) return;
  const float *xd = kiln_tensor_data((kiln_tensor *)x), *yd = kiln_tensor_data(y);
  int bad = 0;
  for (int64_t i = 0; i < kiln_tensor_numel(y); i++)
    bad += fabsf(yd[i] - tanhf(xd[i] * xd[i])) > 1e-5f;
  CHECK(bad == 0);
}

static void test_model(void) {
  kiln_model *m = NULL;
  EXPECT(kiln_model_load("/nonexistent/model.onnx", &m), KILN_ERR_IO, "model.onnx");
  const char *path = write_model();
  CHECK(path != NULL);
  EXPECT(kiln_model_load(path, &m), KILN_OK_CODE, NULL);
  if (!m) return;
  CHECK(kiln_model_num_inputs(m) == 1 && kiln_model_num_outputs(m) == 1);
  CHECK(!strcmp(kiln_model_input_name(m, 0), "x") && !strcmp(kiln_model_output_name(m, 0), "y"));
  CHECK(kiln_model_input_name(m, 1) == NULL && kiln_model_output_name(m, -1) == NULL);
  CHECK(kiln_model_input_dtype(m, 0) == KILN_F32 && kiln_model_input_rank(m, 0) == 2);
  CHECK(kiln_model_input_dim(m, 0, 0) == -1 && !strcmp(kiln_model_input_dim_name(m, 0, 0), "b"));
  CHECK(kiln_model_input_dim(m, 0, 1) == 7 && kiln_model_input_dim_name(m, 0, 1) == NULL);
  CHECK(kiln_model_input_dim(m, 0, 2) == -1 && kiln_model_input_dim_name(m, 0, 2) == NULL);

  kiln_tensor *x = input(3), *bad = NULL, *y[1] = {NULL};
  EXPECT(kiln_tensor_new(KILN_F32, 1, (int64_t[]){7}, &bad), KILN_OK_CODE, NULL);
  EXPECT(kiln_model_run(m, (const kiln_tensor *[]){bad}, y), KILN_ERR_INVALID, "'x'");
  EXPECT(kiln_model_run(m, (const kiln_tensor *[]){x}, y), KILN_OK_CODE, NULL);
  check_output(x, y[0]);
  kiln_tensor_free(y[0]);
  y[0] = NULL;
  CHECK(!kiln_model_is_compiled(m));

  kiln_options *o = NULL;
  EXPECT(kiln_options_new(&o), KILN_OK_CODE, NULL);
  if (o) {
    EXPECT(kiln_options_set_cache_dir(o, dir), KILN_OK_CODE, NULL);
    EXPECT(kiln_model_compile(m, o), KILN_ERR_INVALID, "b"); /* symbolic dim not bound */
    EXPECT(kiln_options_set_dim(o, "b", 3), KILN_OK_CODE, NULL);
    EXPECT(kiln_options_set_threads(o, 2), KILN_OK_CODE, NULL);
    EXPECT(kiln_model_compile(m, o), KILN_OK_CODE, NULL);
    kiln_options_free(o);
  }
  CHECK(kiln_model_is_compiled(m));
  kiln_tensor *x4 = input(4);
  EXPECT(kiln_model_run(m, (const kiln_tensor *[]){x4}, y), KILN_ERR_INVALID, "'x'");
  EXPECT(kiln_model_run(m, (const kiln_tensor *[]){x}, y), KILN_OK_CODE, NULL);
  check_output(x, y[0]);
  kiln_tensor_free(y[0]);
  kiln_tensor_free(x4);
  kiln_tensor_free(bad);
  kiln_tensor_free(x);
  kiln_model_free(m);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln_api_XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_tensors();
  test_options();
  test_model();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
