/* Unit tests of the elementwise reference kernels: each test builds a one-node
 * graph, runs it in the interpreter and checks the output values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/ops.h"

/* ---- helpers ---- */

typedef struct attr_spec {
  const char *name;
  kiln_attr_kind kind;
  double f;      /* FLOAT */
  int64_t i;     /* INT */
  const char *s; /* STRING */
} attr_spec;

#define AF(n, v)                                                                                   \
  { n, KILN_ATTR_FLOAT, v, 0, NULL }
#define AI(n, v)                                                                                   \
  { n, KILN_ATTR_INT, 0, v, NULL }
#define AS(n, v)                                                                                   \
  { n, KILN_ATTR_STRING, 0, 0, v }

/* A tensor from doubles vf or, when vf is NULL, from exact integers vi. */
static kiln_tensor *mk_vals(kiln_dtype dt, int rank, const int64_t *dims, const double *vf,
                            const int64_t *vi) {
  kiln_tensor *t = NULL;
  kiln_status st = kiln_tensor_new(dt, rank, dims, &t);
  if (st) abort();
  for (int64_t i = 0; i < t->numel; i++) {
    if (vf) kiln_store_f64(dt, t->data, (size_t)i, vf[i]);
    else kiln_store_i64(dt, t->data, (size_t)i, vi[i]);
  }
  return t;
}

static kiln_tensor *mk(kiln_dtype dt, int rank, const int64_t *dims, const double *v) {
  return mk_vals(dt, rank, dims, v, NULL);
}

static kiln_tensor *mki(kiln_dtype dt, int rank, const int64_t *dims, const int64_t *v) {
  return mk_vals(dt, rank, dims, NULL, v);
}

static kiln_tensor *mks(int n, const char *const *v) {
  kiln_tensor *t = NULL;
  int64_t d = n;
  if (kiln_tensor_new(KILN_STRING, 1, &d, &t)) abort();
  for (int i = 0; i < n; i++) ((char **)t->data)[i] = kiln_xstrdup(v[i]);
  return t;
}

static void add_attrs(kiln_graph *g, int node, int n_attrs, const attr_spec *attrs) {
  for (int k = 0; k < n_attrs; k++) {
    kiln_attr *a = kiln_node_add_attr(g, node, attrs[k].name, attrs[k].kind);
    a->f = (float)attrs[k].f;
    a->i = attrs[k].i;
    if (attrs[k].s) {
      a->s = kiln_graph_strdup(g, attrs[k].s);
      a->s_len = strlen(attrs[k].s);
    }
  }
}

/* Runs op (opset version) on the inputs (NULL entries are omitted inputs; the
 * tensors are freed) and returns output 0 in *out (NULL on error). */
static kiln_status run_op(const char *op, int64_t opset, int n_in, kiln_tensor **ins, int n_attrs,
                          const attr_spec *attrs, kiln_tensor **out) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", opset);
  int ids[8];
  kiln_val *vals[8];
  int n_vals = 0;
  for (int k = 0; k < n_in; k++) {
    ids[k] = -1;
    if (!ins[k]) continue;
    char name[16];
    snprintf(name, sizeof name, "x%d", k);
    kiln_type t = kiln_type_tensor(ins[k]->dtype, ins[k]->rank, ins[k]->dims);
    ids[k] = kiln_graph_add_input(g, name, t);
    vals[n_vals++] = kiln_val_tensor(ins[k]);
  }
  int y;
  *out = NULL;
  kiln_status st = kiln_graph_add_node(g, op, "", "n0", n_in, ids, 1, (const char *[]){"y"}, &y);
  if (!st) {
    add_attrs(g, kiln_graph_last_node(g), n_attrs, attrs);
    kiln_graph_add_output(g, y);
    kiln_val *res = NULL;
    st = kiln_interp_run(g, NULL, n_vals, vals, &res);
    if (!st && res) {
      *out = res->t;
      res->t = NULL;
    }
    kiln_val_free(res);
  }
  for (int k = 0; k < n_vals; k++) kiln_val_free(vals[k]);
  kiln_graph_free(g);
  return st;
}

static bool near(double got, double want) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= 1e-6 + 1e-6 * fabs(want);
}

/* Checks t's dtype, element count and values: doubles wf (within 1e-6) or, when
 * wf is NULL, exact integers wi. Frees t. */
static void expect_vals(kiln_tensor *t, kiln_dtype dt, int64_t n, const double *wf,
                        const int64_t *wi) {
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->dtype == dt);
  CHECK(t->numel == n);
  for (int64_t i = 0; i < n && i < t->numel; i++) {
    size_t k = (size_t)i;
    bool ok = wf ? near(kiln_load_f64(t->dtype, t->data, k), wf[i])
                 : kiln_load_i64(t->dtype, t->data, k) == wi[i];
    if (!ok)
      fprintf(stderr, "  element %lld: got %.17g, want %.17g\n", (long long)i,
              kiln_load_f64(t->dtype, t->data, k), wf ? wf[i] : (double)wi[i]);
    CHECK(ok);
  }
  kiln_tensor_free(t);
}

static void expect(kiln_tensor *t, kiln_dtype dt, int64_t n, const double *want) {
  expect_vals(t, dt, n, want, NULL);
}

static void expect_i(kiln_tensor *t, kiln_dtype dt, int64_t n, const int64_t *want) {
  expect_vals(t, dt, n, NULL, want);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})
#define IV(...) ((const int64_t[]){__VA_ARGS__})
#define INS(...) ((kiln_tensor *[]){__VA_ARGS__})

/* ---- arithmetic and broadcasting ---- */

static void test_add_broadcast(void) {
  kiln_tensor *y;
  CHECK_OK(run_op(
      "Add", 17, 2,
      INS(mk(KILN_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)), mk(KILN_F32, 1, D(3), V(10, 20, 30))), 0,
      NULL, &y));
  expect(y, KILN_F32, 6, V(11, 22, 33, 14, 25, 36));
  CHECK_OK(run_op("Add", 17, 2,
                  INS(mk(KILN_F32, 2, D(2, 1), V(1, 2)), mk(KILN_F32, 1, D(3), V(10, 20, 30))), 0,
                  NULL, &y));
  expect(y, KILN_F32, 6, V(11, 21, 31, 12, 22, 32));
  CHECK_ERR(run_op("Add", 17, 2,
                   INS(mk(KILN_F32, 1, D(2), V(1, 2)), mk(KILN_F32, 1, D(3), V(1, 2, 3))), 0, NULL,
                   &y),
            KILN_ERR_INVALID);
  CHECK_ERR(run_op("Add", 17, 2,
                   INS(mk(KILN_F32, 1, D(2), V(1, 2)), mk(KILN_F64, 1, D(2), V(1, 2))), 0, NULL,
                   &y),
            KILN_ERR_INVALID);
}

static void test_legacy_broadcast(void) {
  kiln_tensor *y;
  const attr_spec at[] = {AI("broadcast", 1), AI("axis", 0)};
  CHECK_OK(
      run_op("Add", 6, 2,
             INS(mk(KILN_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6)), mk(KILN_F32, 1, D(2), V(10, 20))),
             2, at, &y));
  expect(y, KILN_F32, 6, V(11, 12, 13, 24, 25, 26));
}

static void test_int_wrap_and_div(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Add", 14, 2,
                  INS(mki(KILN_I8, 1, D(2), IV(127, -128)), mki(KILN_I8, 1, D(2), IV(1, -1))), 0,
                  NULL, &y));
  expect_i(y, KILN_I8, 2, IV(-128, 127));
  CHECK_OK(run_op("Mul", 14, 2, INS(mki(KILN_U8, 1, D(1), IV(200)), mki(KILN_U8, 1, D(1), IV(2))),
                  0, NULL, &y));
  expect_i(y, KILN_U8, 1, IV(144));
  CHECK_OK(run_op(
      "Div", 14, 2,
      INS(mki(KILN_I32, 1, D(3), IV(-7, 7, INT32_MIN)), mki(KILN_I32, 1, D(3), IV(2, -2, -1))), 0,
      NULL, &y));
  expect_i(y, KILN_I32, 3, IV(-3, -3, INT32_MIN));
  CHECK_OK(run_op("Sub", 14, 2,
                  INS(mki(KILN_I64, 1, D(1), IV(INT64_MIN)), mki(KILN_I64, 1, D(1), IV(1))), 0,
                  NULL, &y));
  expect_i(y, KILN_I64, 1, IV(INT64_MAX));
  CHECK_ERR(run_op("Div", 14, 2, INS(mki(KILN_I32, 1, D(1), IV(1)), mki(KILN_I32, 1, D(1), IV(0))),
                   0, NULL, &y),
            KILN_ERR_INVALID);
}

static void test_mod(void) {
  kiln_tensor *y;
  kiln_tensor *a = mki(KILN_I32, 1, D(4), IV(-7, 7, -7, 7));
  kiln_tensor *b = mki(KILN_I32, 1, D(4), IV(3, -3, -3, 3));
  CHECK_OK(run_op("Mod", 13, 2, INS(a, b), 0, NULL, &y));
  expect_i(y, KILN_I32, 4, IV(2, -2, -1, 1));
  const attr_spec fm[] = {AI("fmod", 1)};
  a = mki(KILN_I32, 1, D(4), IV(-7, 7, -7, 7));
  b = mki(KILN_I32, 1, D(4), IV(3, -3, -3, 3));
  CHECK_OK(run_op("Mod", 13, 2, INS(a, b), 1, fm, &y));
  expect_i(y, KILN_I32, 4, IV(-1, 1, -1, 1));
  CHECK_OK(run_op("Mod", 13, 2,
                  INS(mk(KILN_F32, 1, D(2), V(-4.5, 5.5)), mk(KILN_F32, 1, D(2), V(2, -2))), 1, fm,
                  &y));
  expect(y, KILN_F32, 2, V(-0.5, 1.5));
}

static void test_pow_mixed(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Pow", 15, 2,
                  INS(mki(KILN_I32, 1, D(3), IV(1, 2, 3)), mk(KILN_F32, 1, D(3), V(4, 0.5, 2))), 0,
                  NULL, &y));
  expect_i(y, KILN_I32, 3, IV(1, 1, 9));
  CHECK_OK(run_op("Pow", 15, 2,
                  INS(mki(KILN_I64, 1, D(3), IV(3, 2, -1)), mki(KILN_I64, 1, D(3), IV(39, -1, 3))),
                  0, NULL, &y));
  expect_i(y, KILN_I64, 3, IV(4052555153018976267LL, 0, -1));
  CHECK_OK(run_op("Pow", 15, 2,
                  INS(mk(KILN_F32, 1, D(2), V(2, 4)), mki(KILN_I64, 1, D(2), IV(3, -1))), 0, NULL,
                  &y));
  expect(y, KILN_F32, 2, V(8, 0.25));
}

/* ---- Clip across versions ---- */

static void test_clip(void) {
  kiln_tensor *y;
  const attr_spec at[] = {AF("min", -1), AF("max", 1)};
  CHECK_OK(run_op("Clip", 6, 1, INS(mk(KILN_F32, 1, D(4), V(-2, 0.5, 2, NAN))), 2, at, &y));
  expect(y, KILN_F32, 4, V(-1, 0.5, 1, NAN));
  CHECK_OK(run_op("Clip", 13, 3,
                  INS(mk(KILN_F32, 1, D(3), V(-2, 0.5, 2)), NULL, mk(KILN_F32, 0, NULL, V(1))), 0,
                  NULL, &y));
  expect(y, KILN_F32, 3, V(-2, 0.5, 1));
  CHECK_OK(run_op("Clip", 13, 3,
                  INS(mk(KILN_F32, 1, D(2), V(-2, 3)), mk(KILN_F32, 0, NULL, V(2)),
                      mk(KILN_F32, 0, NULL, V(1))),
                  0, NULL, &y));
  expect(y, KILN_F32, 2, V(1, 1)); /* min > max gives max */
  CHECK_OK(run_op("Clip", 13, 1, INS(mki(KILN_I8, 1, D(2), IV(-128, 127))), 0, NULL, &y));
  expect_i(y, KILN_I8, 2, IV(-128, 127));
  CHECK_OK(run_op("Clip", 13, 2,
                  INS(mki(KILN_I64, 1, D(2), IV(INT64_MIN, 5)), mki(KILN_I64, 0, NULL, IV(-3))), 0,
                  NULL, &y));
  expect_i(y, KILN_I64, 2, IV(-3, 5));
}

/* ---- variadic ---- */

static void test_variadic(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Max", 13, 3,
                  INS(mk(KILN_F32, 1, D(3), V(1, NAN, 3)), mk(KILN_F32, 1, D(3), V(NAN, 2, 1)),
                      mk(KILN_F32, 0, NULL, V(2))),
                  0, NULL, &y));
  expect(y, KILN_F32, 3, V(NAN, NAN, 3));
  CHECK_OK(run_op("Min", 13, 2,
                  INS(mki(KILN_U64, 1, D(2), IV(-1, 5)), mki(KILN_U64, 1, D(1), IV(7))), 0, NULL,
                  &y));
  expect_i(y, KILN_U64, 2, IV(7, 5));
  CHECK_OK(run_op("Sum", 13, 3,
                  INS(mk(KILN_F64, 1, D(2), V(1, 2)), mk(KILN_F64, 2, D(2, 1), V(10, 20)),
                      mk(KILN_F64, 0, NULL, V(100))),
                  0, NULL, &y));
  expect(y, KILN_F64, 4, V(111, 112, 121, 122));
  CHECK_OK(run_op("Mean", 13, 2,
                  INS(mk(KILN_F16, 1, D(2), V(1, 2)), mk(KILN_F16, 1, D(2), V(2, 5))), 0, NULL,
                  &y));
  expect(y, KILN_F16, 2, V(1.5, 3.5));
  CHECK_OK(run_op("Max", 13, 1, INS(mki(KILN_I16, 1, D(2), IV(-3, 4))), 0, NULL, &y));
  expect_i(y, KILN_I16, 2, IV(-3, 4));
}

/* ---- unary math and activations ---- */

static void test_unary(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Round", 11, 1, INS(mk(KILN_F32, 1, D(5), V(0.5, 1.5, 2.5, -0.5, -1.6))), 0, NULL,
                  &y));
  expect(y, KILN_F32, 5, V(0, 2, 2, -0.0, -2));
  CHECK_OK(run_op("Abs", 13, 1, INS(mki(KILN_I8, 1, D(2), IV(-128, -5))), 0, NULL, &y));
  expect_i(y, KILN_I8, 2, IV(-128, 5));
  CHECK_OK(run_op("Sign", 13, 1, INS(mk(KILN_F32, 1, D(3), V(-2, 0, 3))), 0, NULL, &y));
  expect(y, KILN_F32, 3, V(-1, 0, 1));
  CHECK_OK(run_op("Relu", 14, 1, INS(mki(KILN_I32, 1, D(2), IV(-2, 3))), 0, NULL, &y));
  expect_i(y, KILN_I32, 2, IV(0, 3));
  CHECK_ERR(run_op("Sqrt", 13, 1, INS(mki(KILN_I32, 1, D(1), IV(4))), 0, NULL, &y),
            KILN_ERR_UNSUPPORTED);
  const attr_spec inf[] = {AI("detect_negative", 0)};
  CHECK_OK(
      run_op("IsInf", 20, 1, INS(mk(KILN_F32, 1, D(3), V(INFINITY, -INFINITY, 1))), 1, inf, &y));
  expect(y, KILN_BOOL, 3, V(1, 0, 0));
  CHECK_OK(run_op("IsNaN", 20, 1, INS(mk(KILN_F16, 1, D(2), V(NAN, 1))), 0, NULL, &y));
  expect(y, KILN_BOOL, 2, V(1, 0));
}

static void test_activations(void) {
  kiln_tensor *y;
  const attr_spec tanh_at[] = {AS("approximate", "tanh")};
  double x = 1.5;
  double g = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  CHECK_OK(run_op("Gelu", 20, 1, INS(mk(KILN_F64, 1, D(1), V(x))), 1, tanh_at, &y));
  expect(y, KILN_F64, 1, V(g));
  CHECK_OK(run_op("Gelu", 20, 1, INS(mk(KILN_F64, 1, D(1), V(x))), 0, NULL, &y));
  expect(y, KILN_F64, 1, V(0.5 * x * (1 + erf(x / sqrt(2)))));
  CHECK_OK(run_op("Selu", 6, 1, INS(mk(KILN_F64, 1, D(2), V(-1, 2))), 0, NULL, &y));
  double al = 1.67326319217681884765625, ga = 1.05070102214813232421875;
  expect(y, KILN_F64, 2, V(ga * al * (exp(-1) - 1), ga * 2));
  const attr_spec lr[] = {AF("alpha", 0.5)};
  CHECK_OK(run_op("LeakyRelu", 16, 1, INS(mk(KILN_F32, 1, D(2), V(-2, 3))), 1, lr, &y));
  expect(y, KILN_F32, 2, V(-1, 3));
  CHECK_OK(run_op("HardSwish", 14, 1, INS(mk(KILN_F32, 1, D(3), V(-4, 1, 4))), 0, NULL, &y));
  expect(y, KILN_F32, 3, V(0, 1.0 * (1.0 / 6 + 0.5), 4));
  /* f64: alpha is the float attribute 1/6 of the schema's function body, exactly */
  CHECK_OK(run_op("HardSwish", 14, 1, INS(mk(KILN_F64, 1, D(1), V(1.5))), 0, NULL, &y));
  if (y) CHECK(((double *)y->data)[0] == 1.5 * (1.5 * (double)(float)(1.0 / 6) + 0.5));
  kiln_tensor_free(y);
  const attr_spec gt[] = {AS("approximate", "tanh")};
  CHECK_OK(run_op("Gelu", 20, 1, INS(mk(KILN_F64, 1, D(1), V(0.75))), 1, gt, &y));
  double gx = 0.75,
         gw = 0.5 * gx *
              (1 + tanh(sqrt((double)(float)(2 / M_PI)) * (gx + (double)0.044715f * gx * gx * gx)));
  if (y) CHECK(((double *)y->data)[0] == gw);
  kiln_tensor_free(y);
  const attr_spec sh[] = {AF("lambd", 1.5), AF("bias", 1)};
  CHECK_OK(run_op("Shrink", 9, 1, INS(mki(KILN_I8, 1, D(3), IV(-3, 1, 5))), 2, sh, &y));
  expect_i(y, KILN_I8, 3, IV(-2, 0, 4));
  CHECK_OK(run_op("Softplus", 1, 1, INS(mk(KILN_F64, 1, D(2), V(1000, 0))), 0, NULL, &y));
  expect(y, KILN_F64, 2, V(1000, log(2)));
}

static void test_prelu(void) {
  kiln_tensor *y;
  CHECK_OK(
      run_op("PRelu", 6, 2,
             INS(mk(KILN_F32, 3, D(1, 2, 2), V(-1, 2, -3, 4)), mk(KILN_F32, 1, D(2), V(0.5, 2))), 0,
             NULL, &y));
  expect(y, KILN_F32, 4, V(-0.5, 2, -6, 4)); /* PRelu-6: one slope per channel */
  CHECK_OK(run_op("PRelu", 16, 2,
                  INS(mk(KILN_F32, 2, D(2, 2), V(-1, 2, -3, 4)), mk(KILN_F32, 1, D(2), V(0.5, 2))),
                  0, NULL, &y));
  expect(y, KILN_F32, 4, V(-0.5, 2, -1.5, 4));
  CHECK_ERR(run_op("PRelu", 16, 2,
                   INS(mk(KILN_F32, 1, D(2), V(-1, 2)), mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4))), 0,
                   NULL, &y),
            KILN_ERR_INVALID);
}

/* ---- logic, bitwise, comparisons ---- */

static void test_logic_bits(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Xor", 7, 2,
                  INS(mk(KILN_BOOL, 1, D(2), V(1, 0)), mk(KILN_BOOL, 2, D(2, 1), V(1, 0))), 0, NULL,
                  &y));
  expect(y, KILN_BOOL, 4, V(0, 1, 1, 0));
  const attr_spec right[] = {AS("direction", "RIGHT")}, left[] = {AS("direction", "LEFT")};
  CHECK_OK(run_op("BitShift", 11, 2,
                  INS(mki(KILN_U8, 1, D(2), IV(16, 255)), mki(KILN_U8, 1, D(2), IV(2, 9))), 1,
                  right, &y));
  expect_i(y, KILN_U8, 2, IV(4, 0));
  CHECK_OK(run_op("BitShift", 11, 2,
                  INS(mki(KILN_U8, 1, D(2), IV(16, 255)), mki(KILN_U8, 1, D(2), IV(2, 1))), 1, left,
                  &y));
  expect_i(y, KILN_U8, 2, IV(64, 254));
  CHECK_ERR(run_op("BitShift", 11, 2,
                   INS(mki(KILN_U8, 1, D(1), IV(1)), mki(KILN_U8, 1, D(1), IV(1))), 0, NULL, &y),
            KILN_ERR_INVALID);
  CHECK_OK(run_op("BitwiseNot", 18, 1, INS(mki(KILN_I16, 1, D(2), IV(0, -5))), 0, NULL, &y));
  expect_i(y, KILN_I16, 2, IV(-1, 4));
  CHECK_OK(run_op("Greater", 13, 2,
                  INS(mki(KILN_I64, 1, D(1), IV(9007199254740993LL)),
                      mki(KILN_I64, 1, D(1), IV(9007199254740992LL))),
                  0, NULL, &y));
  expect(y, KILN_BOOL, 1, V(1));
  CHECK_OK(run_op("Equal", 19, 2,
                  INS(mks(3, (const char *[]){"a", "bc", ""}), mks(1, (const char *[]){"bc"})), 0,
                  NULL, &y));
  expect(y, KILN_BOOL, 3, V(0, 1, 0));
  CHECK_OK(run_op("LessOrEqual", 16, 2,
                  INS(mk(KILN_F32, 1, D(3), V(1, 2, NAN)), mk(KILN_F32, 1, D(3), V(1, 1, 1))), 0,
                  NULL, &y));
  expect(y, KILN_BOOL, 3, V(1, 0, 0));
}

/* ---- Where ---- */

static void test_where(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("Where", 16, 3,
                  INS(mk(KILN_BOOL, 2, D(2, 1), V(1, 0)), mki(KILN_I64, 1, D(2), IV(1, 2)),
                      mki(KILN_I64, 0, NULL, IV(9))),
                  0, NULL, &y));
  expect_i(y, KILN_I64, 4, IV(1, 2, 9, 9));
  CHECK_OK(run_op("Where", 16, 3,
                  INS(mk(KILN_BOOL, 1, D(2), V(1, 0)), mks(2, (const char *[]){"a", "b"}),
                      mks(2, (const char *[]){"c", "d"})),
                  0, NULL, &y));
  CHECK(y && strcmp(((char **)y->data)[0], "a") == 0 && strcmp(((char **)y->data)[1], "d") == 0);
  kiln_tensor_free(y);
}

/* ---- Cast ---- */

static kiln_tensor *cast(kiln_tensor *x, kiln_dtype to, int64_t opset, int n_extra,
                         const attr_spec *extra) {
  attr_spec at[4] = {AI("to", to)};
  for (int i = 0; i < n_extra; i++) at[1 + i] = extra[i];
  kiln_tensor *y = NULL;
  CHECK_OK(run_op("Cast", opset, 1, INS(x), 1 + n_extra, at, &y));
  return y;
}

static void test_cast_numbers(void) {
  /* f32 -> f16 rounds to nearest even; 65520 overflows to inf */
  double h = 1 + ldexp(1, -11);
  expect(cast(mk(KILN_F32, 1, D(3), V(h, 65520, -0.1)), KILN_F16, 13, 0, NULL), KILN_F16, 3,
         V(1, INFINITY, -0.0999755859375));
  expect(cast(mk(KILN_F32, 1, D(4), V(-1.7, 2.9, 300, -129)), KILN_I8, 13, 0, NULL), KILN_I8, 4,
         V(-1, 2, 44, 127));
  expect(cast(mk(KILN_F32, 1, D(3), V(0.5, 0, NAN)), KILN_BOOL, 13, 0, NULL), KILN_BOOL, 3,
         V(1, 0, 1));
  expect_i(cast(mki(KILN_I16, 1, D(1), IV(200)), KILN_I8, 13, 0, NULL), KILN_I8, 1, IV(-56));
  /* int64 -> f32 rounds once (2^24+1 -> 2^24) */
  expect(cast(mki(KILN_I64, 1, D(1), IV(16777217)), KILN_F32, 13, 0, NULL), KILN_F32, 1,
         V(16777216));
  expect_i(cast(mk(KILN_F32, 1, D(3), V(-9, 8, 15)), KILN_I4, 21, 0, NULL), KILN_I4, 3,
           IV(7, -8, -1));
}

static void test_cast_float8(void) {
  expect(cast(mk(KILN_F32, 1, D(3), V(1000, -1000, 0.3)), KILN_F8E4M3FN, 19, 0, NULL),
         KILN_F8E4M3FN, 3, V(448, -448, 0.3125));
  const attr_spec nosat[] = {AI("saturate", 0)};
  expect(cast(mk(KILN_F32, 1, D(2), V(1000, INFINITY)), KILN_F8E4M3FN, 19, 1, nosat), KILN_F8E4M3FN,
         2, V(NAN, NAN));
  expect(cast(mk(KILN_F32, 1, D(2), V(1e6, INFINITY)), KILN_F8E5M2, 19, 1, nosat), KILN_F8E5M2, 2,
         V(INFINITY, INFINITY));
  expect(cast(mk(KILN_F32, 1, D(2), V(1e6, INFINITY)), KILN_F8E5M2, 19, 0, NULL), KILN_F8E5M2, 2,
         V(57344, 57344));
  /* e8m0: up rounds non-powers of two up, down truncates, nearest ties up */
  expect(cast(mk(KILN_F32, 1, D(3), V(0.124, 1.1, 1.6)), KILN_F8E8M0, 24, 0, NULL), KILN_F8E8M0, 3,
         V(0.125, 2, 2));
  const attr_spec down[] = {AS("round_mode", "down")}, nearest[] = {AS("round_mode", "nearest")};
  expect(cast(mk(KILN_F32, 1, D(2), V(1.1, 1.6)), KILN_F8E8M0, 24, 1, down), KILN_F8E8M0, 2,
         V(1, 1));
  expect(cast(mk(KILN_F32, 1, D(3), V(1.1, 1.5, 1.6)), KILN_F8E8M0, 24, 1, nearest), KILN_F8E8M0, 3,
         V(1, 2, 2));
}

static void test_cast_strings(void) {
  const char *in[] = {"1.5", "-1e-5", "INF", "-inf", "NaN", "+INF"};
  expect(cast(mks(6, in), KILN_F32, 13, 0, NULL), KILN_F32, 6,
         V(1.5, -1e-5, INFINITY, -INFINITY, NAN, INFINITY));
  const char *ints[] = {"-12", "9223372036854775807"};
  expect_i(cast(mks(2, ints), KILN_I64, 13, 0, NULL), KILN_I64, 2, IV(-12, INT64_MAX));
  kiln_tensor *y = NULL;
  const attr_spec at[] = {AI("to", KILN_I32)};
  const char *bad[] = {"hello"};
  CHECK_ERR(run_op("Cast", 13, 1, INS(mks(1, bad)), 1, at, &y), KILN_ERR_INVALID);
  y = cast(mk(KILN_F32, 1, D(6), V(0.1, 1, 1e-5, 1e20, -2.5, NAN)), KILN_STRING, 13, 0, NULL);
  const char *want[] = {"0.1", "1.0", "1e-05", "1e+20", "-2.5", "nan"};
  for (int i = 0; y && i < 6; i++) {
    const char *got = ((char **)y->data)[i];
    if (strcmp(got, want[i]) != 0) fprintf(stderr, "  got '%s', want '%s'\n", got, want[i]);
    CHECK(strcmp(got, want[i]) == 0);
  }
  kiln_tensor_free(y);
  y = cast(mk(KILN_F16, 1, D(2), V(65504, 0.1)), KILN_STRING, 13, 0, NULL); /* numpy's str */
  CHECK(y && strcmp(((char **)y->data)[0], "6.55e+04") == 0);
  CHECK(y && strcmp(((char **)y->data)[1], "0.1") == 0);
  kiln_tensor_free(y);
  y = cast(mk(KILN_F32, 1, D(2), V(1e7, 1e-4)), KILN_STRING, 13, 0, NULL);
  CHECK(y && strcmp(((char **)y->data)[0], "1e+07") == 0);
  CHECK(y && strcmp(((char **)y->data)[1], "1e-04") == 0);
  kiln_tensor_free(y);
  y = cast(mki(KILN_I64, 1, D(1), IV(-42)), KILN_STRING, 13, 0, NULL);
  CHECK(y && strcmp(((char **)y->data)[0], "-42") == 0);
  kiln_tensor_free(y);
}

static void test_cast_like_and_bitcast(void) {
  kiln_tensor *y;
  CHECK_OK(run_op("CastLike", 15, 2,
                  INS(mk(KILN_F64, 1, D(2), V(1.25, -3)), mk(KILN_I32, 0, NULL, V(0))), 0, NULL,
                  &y));
  expect_i(y, KILN_I32, 2, IV(1, -3));
  const attr_spec to_i32[] = {AI("to", KILN_I32)};
  CHECK_OK(run_op("BitCast", 26, 1, INS(mk(KILN_F32, 1, D(1), V(1.0))), 1, to_i32, &y));
  expect_i(y, KILN_I32, 1, IV(0x3f800000));
  const attr_spec to_i64[] = {AI("to", KILN_I64)};
  CHECK_ERR(run_op("BitCast", 26, 1, INS(mk(KILN_F32, 1, D(1), V(1.0))), 1, to_i64, &y),
            KILN_ERR_INVALID);
  const attr_spec to_name[] = {AS("to", "DOUBLE")};
  CHECK_OK(run_op("Cast", 1, 1, INS(mk(KILN_F32, 1, D(1), V(0.5))), 1, to_name, &y));
  expect(y, KILN_F64, 1, V(0.5));
}

/* ---- Identity on a sequence ---- */

static void test_identity_sequence(void) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 16);
  kiln_type st = kiln_type_unknown();
  st.kind = KILN_TYPE_SEQUENCE;
  st.dtype = KILN_F32;
  int x = kiln_graph_add_input(g, "x", st), y;
  CHECK_OK(kiln_graph_add_node(g, "Identity", "", "id", 1, &x, 1, (const char *[]){"y"}, &y));
  kiln_graph_add_output(g, y);
  kiln_val *in = kiln_val_new(KILN_TYPE_SEQUENCE);
  in->seq = kiln_seq_new(KILN_F32);
  kiln_seq_push(in->seq, mk(KILN_F32, 1, D(2), V(1, 2)));
  kiln_val *out = NULL;
  CHECK_OK(kiln_interp_run(g, NULL, 1, &in, &out));
  CHECK(out && out->kind == KILN_TYPE_SEQUENCE && out->seq && out->seq->len == 1);
  kiln_val_free(out);
  kiln_val_free(in);
  kiln_graph_free(g);
}

/* ---- inference ---- */

static void test_infer(void) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 17);
  int a = kiln_graph_add_input(g, "a", kiln_type_tensor(KILN_F32, 2, D(2, 1)));
  int b = kiln_graph_add_input(g, "b", kiln_type_tensor(KILN_F32, 1, D(3)));
  int s, c, e;
  CHECK_OK(
      kiln_graph_add_node(g, "Add", "", "add", 2, (int[]){a, b}, 1, (const char *[]){"s"}, &s));
  CHECK_OK(
      kiln_graph_add_node(g, "Less", "", "lt", 2, (int[]){s, b}, 1, (const char *[]){"c"}, &c));
  CHECK_OK(kiln_graph_add_node(g, "Cast", "", "cast", 1, &c, 1, (const char *[]){"e"}, &e));
  kiln_attr *to = kiln_node_add_attr(g, kiln_graph_last_node(g), "to", KILN_ATTR_INT);
  to->i = KILN_F16;
  kiln_graph_add_output(g, e);
  CHECK_OK(kiln_ops_infer_graph(g));
  const kiln_type *ts = &g->values.data[s].type, *te = &g->values.data[e].type;
  CHECK(ts->kind == KILN_TYPE_TENSOR && ts->dtype == KILN_F32 && ts->rank == 2);
  CHECK(ts->dims[0].value == 2 && ts->dims[1].value == 3);
  CHECK(g->values.data[c].type.dtype == KILN_BOOL);
  CHECK(te->dtype == KILN_F16 && te->rank == 2 && te->dims[1].value == 3);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_add_broadcast), T(test_legacy_broadcast), T(test_int_wrap_and_div), T(test_mod),
          T(test_pow_mixed), T(test_clip), T(test_variadic), T(test_unary), T(test_activations),
          T(test_prelu), T(test_logic_bits), T(test_where), T(test_cast_numbers),
          T(test_cast_float8), T(test_cast_strings), T(test_cast_like_and_bitcast),
          T(test_identity_sequence), T(test_infer))
