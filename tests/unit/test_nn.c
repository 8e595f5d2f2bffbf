/* Unit tests of the 'reduce' and 'nn' reference kernels: the opset variants and edge cases
 * that ONNX's node tests do not reach (old opsets, integer exactness, empty reductions,
 * deterministic dropout, ...) and the shape inference of these ops. Each test builds a
 * one-node graph and runs it in the interpreter. */
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
  double f;
  int64_t i;
  const char *s;
  const int64_t *ints;
  int n;
} attr_spec;

#define AF(n, v)                                                                                   \
  { n, KILN_ATTR_FLOAT, v, 0, NULL, NULL, 0 }
#define AI(n, v)                                                                                   \
  { n, KILN_ATTR_INT, 0, v, NULL, NULL, 0 }
#define AS(n, v)                                                                                   \
  { n, KILN_ATTR_STRING, 0, 0, v, NULL, 0 }
#define AIS(n, ...)                                                                                \
  {                                                                                                \
    n, KILN_ATTR_INTS, 0, 0, NULL, (const int64_t[]){__VA_ARGS__},                                 \
        (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))                            \
  }

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})
#define IV(...) ((const int64_t[]){__VA_ARGS__})
#define INS(...) ((kiln_tensor *[]){__VA_ARGS__})
#define ATTRS(...) ((const attr_spec[]){__VA_ARGS__})
#define NA(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

static kiln_tensor *mk(kiln_dtype dt, int rank, const int64_t *dims, const double *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) kiln_store_f64(dt, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *mki(kiln_dtype dt, int rank, const int64_t *dims, const int64_t *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) kiln_store_i64(dt, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *mkz(kiln_dtype dt, int rank, const int64_t *dims) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
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
    if (attrs[k].ints) {
      a->n = attrs[k].n;
      a->ints = kiln_graph_alloc(g, sizeof(int64_t) * (size_t)(attrs[k].n ? attrs[k].n : 1));
      memcpy(a->ints, attrs[k].ints, sizeof(int64_t) * (size_t)attrs[k].n);
    }
  }
}

/* Runs op (opset) on the inputs (NULL entries are omitted inputs; the tensors are freed) and
 * returns its n_out outputs (out[k] NULL when the output is omitted: out_used[k] false). */
static kiln_status run_n(const char *op, int64_t opset, int n_in, kiln_tensor **ins, int n_attrs,
                         const attr_spec *attrs, int n_out, kiln_tensor **out) {
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
    ids[k] =
        kiln_graph_add_input(g, name, kiln_type_tensor(ins[k]->dtype, ins[k]->rank, ins[k]->dims));
    vals[n_vals++] = kiln_val_tensor(ins[k]);
  }
  const char *names[8] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"};
  int y[8];
  for (int k = 0; k < n_out; k++) out[k] = NULL;
  kiln_status st = kiln_graph_add_node(g, op, "", "n0", n_in, ids, n_out, names, y);
  if (!st) {
    add_attrs(g, kiln_graph_last_node(g), n_attrs, attrs);
    for (int k = 0; k < n_out; k++) kiln_graph_add_output(g, y[k]);
    kiln_val *res[8] = {NULL};
    st = kiln_interp_run(g, NULL, n_vals, vals, res);
    for (int k = 0; k < n_out; k++) {
      if (!st && res[k]) {
        out[k] = res[k]->t;
        res[k]->t = NULL;
      }
      kiln_val_free(res[k]);
    }
  }
  for (int k = 0; k < n_vals; k++) kiln_val_free(vals[k]);
  kiln_graph_free(g);
  return st;
}

static kiln_status run1(const char *op, int64_t opset, int n_in, kiln_tensor **ins, int n_attrs,
                        const attr_spec *attrs, kiln_tensor **out) {
  return run_n(op, opset, n_in, ins, n_attrs, attrs, 1, out);
}

static bool near(double got, double want) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= 1e-5 + 1e-5 * fabs(want);
}

static void check_shape(const kiln_tensor *t, int rank, const int64_t *dims) {
  CHECK(t->rank == rank);
  for (int d = 0; d < rank && d < t->rank; d++) CHECK(t->dims[d] == dims[d]);
}

/* Checks t's dtype, shape and values (as doubles); frees t. */
static void expect(kiln_tensor *t, kiln_dtype dt, int rank, const int64_t *dims, const double *v) {
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->dtype == dt);
  check_shape(t, rank, dims);
  for (int64_t i = 0; i < t->numel; i++) {
    double got = kiln_load_f64(t->dtype, t->data, (size_t)i);
    if (!near(got, v[i])) {
      fprintf(stderr, "  element %lld: got %.17g, want %.17g\n", (long long)i, got, v[i]);
      CHECK(near(got, v[i]));
    }
  }
  kiln_tensor_free(t);
}

static void expect_i(kiln_tensor *t, kiln_dtype dt, int rank, const int64_t *dims,
                     const int64_t *v) {
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->dtype == dt);
  check_shape(t, rank, dims);
  for (int64_t i = 0; i < t->numel; i++) {
    int64_t got = kiln_dtype_class_of(dt) == KILN_CLASS_UINT
                      ? (int64_t)kiln_load_u64(t->dtype, t->data, (size_t)i)
                      : kiln_load_i64(t->dtype, t->data, (size_t)i);
    if (got != v[i]) {
      fprintf(stderr, "  element %lld: got %lld, want %lld\n", (long long)i, (long long)got,
              (long long)v[i]);
      CHECK(got == v[i]);
    }
  }
  kiln_tensor_free(t);
}

/* ---- reductions ---- */

static void test_reduce_axes_attribute_before_13(void) {
  kiln_tensor *y;
  CHECK_OK(run1("ReduceSum", 11, 1, INS(mk(KILN_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6))), 2,
                ATTRS(AIS("axes", 1), AI("keepdims", 0)), &y));
  expect(y, KILN_F32, 1, D(2), V(6, 15));
  /* ReduceMean takes axes as an attribute up to opset 17 */
  CHECK_OK(run1("ReduceMean", 17, 1, INS(mk(KILN_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6))), 1,
                ATTRS(AIS("axes", 0)), &y));
  expect(y, KILN_F32, 2, D(1, 3), V(2.5, 3.5, 4.5));
}

static void test_reduce_axes_input_and_noop(void) {
  kiln_tensor *y;
  kiln_tensor *empty = mki(KILN_I64, 1, D(0), IV(0));
  CHECK_OK(run1("ReduceSum", 13, 2, INS(mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4)), empty), 1,
                ATTRS(AI("noop_with_empty_axes", 1)), &y));
  expect(y, KILN_F32, 2, D(2, 2), V(1, 2, 3, 4));
  CHECK_OK(
      run1("ReduceSum", 13, 2, INS(mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4)), NULL), 0, NULL, &y));
  expect(y, KILN_F32, 2, D(1, 1), V(10));
  /* noop returns the input itself, not its square (spec and ONNX Runtime) */
  CHECK_OK(run1("ReduceSumSquare", 18, 2,
                INS(mk(KILN_F32, 1, D(2), V(-1, 3)), mki(KILN_I64, 1, D(0), IV(0))), 1,
                ATTRS(AI("noop_with_empty_axes", 1)), &y));
  expect(y, KILN_F32, 1, D(2), V(-1, 3));
  CHECK_OK(run1("ReduceL2", 18, 2,
                INS(mk(KILN_F32, 2, D(2, 2), V(3, 1, 4, 1)), mki(KILN_I64, 1, D(1), IV(-2))), 1,
                ATTRS(AI("keepdims", 0)), &y));
  expect(y, KILN_F32, 1, D(2), V(5, sqrt(2)));
  CHECK_ERR(run1("ReduceSum", 13, 2,
                 INS(mk(KILN_F32, 1, D(2), V(1, 2)), mki(KILN_I64, 1, D(1), IV(3))), 0, NULL, &y),
            KILN_ERR_INVALID);
}

static void test_reduce_integers_are_exact(void) {
  kiln_tensor *y;
  int64_t big = INT64_C(1) << 62;
  CHECK_OK(run1("ReduceProd", 13, 1, INS(mki(KILN_I64, 1, D(3), IV(big, 3, 1))), 0, NULL, &y));
  expect_i(y, KILN_I64, 1, D(1), IV((int64_t)((uint64_t)big * 3)));
  CHECK_OK(
      run1("ReduceSum", 13, 1, INS(mki(KILN_I64, 1, D(2), IV(INT64_MAX - 1, 1))), 0, NULL, &y));
  expect_i(y, KILN_I64, 1, D(1), IV(INT64_MAX));
  kiln_tensor *u;
  if (kiln_tensor_new(KILN_U64, 1, D(2), &u)) abort();
  ((uint64_t *)u->data)[0] = UINT64_MAX - 4;
  ((uint64_t *)u->data)[1] = 7;
  CHECK_OK(run1("ReduceMax", 13, 1, INS(u), 0, NULL, &y));
  CHECK(y && y->dtype == KILN_U64 && ((uint64_t *)y->data)[0] == UINT64_MAX - 4);
  kiln_tensor_free(y);
  CHECK_OK(run1("ReduceMin", 20, 1, INS(mki(KILN_BOOL, 1, D(3), IV(1, 0, 1))), 0, NULL, &y));
  expect_i(y, KILN_BOOL, 1, D(1), IV(0));
}

static void test_reduce_empty_set(void) {
  kiln_tensor *y;
  kiln_tensor *axes = mki(KILN_I64, 1, D(1), IV(0));
  CHECK_OK(run1("ReduceMax", 18, 2, INS(mk(KILN_F32, 2, D(0, 2), V(0)), axes), 0, NULL, &y));
  expect(y, KILN_F32, 2, D(1, 2), V(-INFINITY, -INFINITY));
  CHECK_OK(run1("ReduceMin", 18, 2,
                INS(mki(KILN_I32, 2, D(0, 1), IV(0)), mki(KILN_I64, 1, D(1), IV(0))), 0, NULL, &y));
  expect_i(y, KILN_I32, 2, D(1, 1), IV(INT32_MAX));
  CHECK_OK(run1("ReduceProd", 18, 1, INS(mk(KILN_F32, 2, D(0, 2), V(0))), 0, NULL, &y));
  expect(y, KILN_F32, 2, D(1, 1), V(1));
  CHECK_OK(run1("ReduceLogSumExp", 18, 1, INS(mk(KILN_F32, 1, D(0), V(0))), 0, NULL, &y));
  expect(y, KILN_F32, 1, D(1), V(-INFINITY));
}

static void test_reduce_log_sum_exp_large(void) {
  kiln_tensor *y;
  CHECK_OK(run1("ReduceLogSumExp", 13, 1, INS(mk(KILN_F32, 1, D(2), V(1000, 1000))), 1,
                ATTRS(AI("keepdims", 0)), &y));
  expect(y, KILN_F32, 0, NULL, V(1000 + log(2)));
}

static void test_arg_select_last_index(void) {
  kiln_tensor *y;
  CHECK_OK(run1("ArgMax", 13, 1, INS(mk(KILN_F32, 1, D(4), V(1, 3, 3, 2))), 1,
                ATTRS(AI("select_last_index", 1)), &y));
  expect_i(y, KILN_I64, 1, D(1), IV(2));
  CHECK_OK(run1("ArgMax", 13, 1, INS(mk(KILN_F32, 1, D(4), V(1, 3, 3, 2))), 0, NULL, &y));
  expect_i(y, KILN_I64, 1, D(1), IV(1));
  CHECK_OK(run1("ArgMin", 11, 1, INS(mki(KILN_I32, 2, D(2, 2), IV(5, -1, -1, 5))), 2,
                ATTRS(AI("axis", 1), AI("keepdims", 0)), &y));
  expect_i(y, KILN_I64, 1, D(2), IV(1, 0));
}

/* ---- softmax family ---- */

static void test_softmax_opset11_flattens(void) {
  kiln_tensor *y;
  double e[4], s = 0;
  for (int i = 0; i < 4; i++) s += e[i] = exp(i + 1);
  CHECK_OK(run1("Softmax", 11, 1, INS(mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4))), 1,
                ATTRS(AI("axis", 0)), &y));
  expect(y, KILN_F32, 2, D(2, 2), V(e[0] / s, e[1] / s, e[2] / s, e[3] / s));
  CHECK_OK(run1("LogSoftmax", 1, 1, INS(mk(KILN_F32, 2, D(1, 2), V(0, 0))), 0, NULL, &y));
  expect(y, KILN_F32, 2, D(1, 2), V(-log(2), -log(2)));
  CHECK_OK(run1("Hardmax", 11, 1, INS(mk(KILN_F32, 3, D(1, 2, 2), V(1, 5, 5, 2))), 0, NULL, &y));
  expect(y, KILN_F32, 3, D(1, 2, 2), V(0, 1, 0, 0));
  CHECK_OK(run1("Hardmax", 13, 1, INS(mk(KILN_F32, 3, D(1, 2, 2), V(1, 5, 5, 2))), 1,
                ATTRS(AI("axis", 1)), &y));
  expect(y, KILN_F32, 3, D(1, 2, 2), V(0, 1, 1, 0));
}

static void test_cumsum_cumprod(void) {
  kiln_tensor *y;
  CHECK_OK(run1("CumSum", 14, 2,
                INS(mki(KILN_I32, 1, D(4), IV(1, 2, 3, 4)), mki(KILN_I64, 0, NULL, IV(0))), 2,
                ATTRS(AI("exclusive", 1), AI("reverse", 1)), &y));
  expect_i(y, KILN_I32, 1, D(4), IV(9, 7, 4, 0));
  CHECK_OK(run1("CumProd", 26, 2,
                INS(mk(KILN_F64, 2, D(2, 2), V(1, 2, 3, 4)), mki(KILN_I32, 1, D(1), IV(-1))), 0,
                NULL, &y));
  expect(y, KILN_F64, 2, D(2, 2), V(1, 2, 3, 12));
}

static void test_topk_variants(void) {
  kiln_tensor *y[2];
  CHECK_OK(
      run_n("TopK", 1, 1, INS(mk(KILN_F32, 1, D(4), V(3, 1, 4, 1))), 1, ATTRS(AI("k", 2)), 2, y));
  expect(y[0], KILN_F32, 1, D(2), V(4, 3));
  expect_i(y[1], KILN_I64, 1, D(2), IV(2, 0));
  CHECK_OK(run_n("TopK", 11, 2,
                 INS(mk(KILN_F32, 1, D(4), V(3, 1, 4, 1)), mki(KILN_I64, 1, D(1), IV(3))), 1,
                 ATTRS(AI("largest", 0)), 2, y));
  expect(y[0], KILN_F32, 1, D(3), V(1, 1, 3));
  expect_i(y[1], KILN_I64, 1, D(3), IV(1, 3, 0));
  CHECK_ERR(run_n("TopK", 11, 2, INS(mk(KILN_F32, 1, D(2), V(1, 2)), mki(KILN_I64, 1, D(1), IV(3))),
                  0, NULL, 2, y),
            KILN_ERR_INVALID);
}

/* ---- convolution ---- */

static void test_conv_1d_and_groups(void) {
  kiln_tensor *y;
  CHECK_OK(run1(
      "Conv", 11, 2,
      INS(mk(KILN_F32, 3, D(1, 1, 5), V(1, 2, 3, 4, 5)), mk(KILN_F32, 3, D(1, 1, 3), V(1, 0, -1))),
      1, ATTRS(AIS("pads", 1, 1)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 5), V(-2, -2, -2, -2, 4));
  /* depthwise, stride 2, dilation 2, bias */
  CHECK_OK(run1("Conv", 22, 3,
                INS(mk(KILN_F64, 3, D(1, 2, 5), V(1, 2, 3, 4, 5, 10, 20, 30, 40, 50)),
                    mk(KILN_F64, 3, D(2, 1, 2), V(1, 1, 1, -1)), mk(KILN_F64, 1, D(2), V(0.5, 0))),
                3, ATTRS(AI("group", 2), AIS("strides", 2), AIS("dilations", 2)), &y));
  expect(y, KILN_F64, 3, D(1, 2, 2), V(4.5, 8.5, -20, -20));
  CHECK_ERR(run1("Conv", 11, 2, INS(mkz(KILN_F32, 3, D(1, 3, 5)), mkz(KILN_F32, 3, D(1, 2, 3))), 0,
                 NULL, &y),
            KILN_ERR_INVALID);
}

static void test_conv_transpose_output_shape(void) {
  kiln_tensor *y;
  CHECK_OK(run1("ConvTranspose", 11, 2,
                INS(mk(KILN_F32, 3, D(1, 1, 3), V(1, 2, 3)), mk(KILN_F32, 3, D(1, 1, 2), V(1, 1))),
                1, ATTRS(AIS("strides", 2)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 6), V(1, 1, 2, 2, 3, 3));
  CHECK_OK(run1("ConvTranspose", 11, 2,
                INS(mk(KILN_F32, 3, D(1, 1, 3), V(1, 2, 3)), mk(KILN_F32, 3, D(1, 1, 2), V(1, 1))),
                2, ATTRS(AIS("strides", 2), AIS("output_shape", 8)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 8), V(1, 1, 2, 2, 3, 3, 0, 0));
  /* output_shape smaller than the full result: total padding 1 goes at the start (spec) */
  CHECK_OK(run1("ConvTranspose", 11, 2,
                INS(mk(KILN_F32, 3, D(1, 1, 3), V(1, 2, 3)), mk(KILN_F32, 3, D(1, 1, 2), V(1, 1))),
                2, ATTRS(AIS("strides", 2), AIS("output_shape", 5)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 5), V(1, 2, 2, 3, 3));
}

static void test_conv_integer_zero_points(void) {
  kiln_tensor *y;
  CHECK_OK(
      run1("ConvInteger", 10, 4,
           INS(mki(KILN_U8, 4, D(1, 1, 1, 2), IV(10, 20)), mki(KILN_U8, 4, D(2, 1, 1, 1), IV(3, 5)),
               mki(KILN_U8, 0, NULL, IV(10)), mki(KILN_U8, 1, D(2), IV(1, 2))),
           0, NULL, &y));
  expect_i(y, KILN_I32, 4, D(1, 2, 1, 2), IV(0, 20, 0, 30));
}

/* ---- pooling ---- */

static void test_maxpool_indices_storage_order(void) {
  kiln_tensor *y[2];
  CHECK_OK(run_n("MaxPool", 12, 1, INS(mk(KILN_F32, 4, D(1, 1, 2, 3), V(1, 6, 3, 4, 5, 2))), 1,
                 ATTRS(AIS("kernel_shape", 2, 2)), 2, y));
  expect(y[0], KILN_F32, 4, D(1, 1, 1, 2), V(6, 6));
  expect_i(y[1], KILN_I64, 4, D(1, 1, 1, 2), IV(1, 1));
  CHECK_OK(run_n("MaxPool", 12, 1, INS(mk(KILN_F32, 4, D(1, 1, 2, 3), V(1, 6, 3, 4, 5, 2))), 2,
                 ATTRS(AIS("kernel_shape", 2, 2), AI("storage_order", 1)), 2, y));
  expect(y[0], KILN_F32, 4, D(1, 1, 1, 2), V(6, 6));
  expect_i(y[1], KILN_I64, 4, D(1, 1, 1, 2), IV(2, 2));
  CHECK_OK(run_n("MaxPool", 12, 1, INS(mki(KILN_I8, 3, D(1, 1, 3), IV(-5, -7, -2))), 2,
                 ATTRS(AIS("kernel_shape", 2), AIS("pads", 1, 0)), 1, y));
  expect_i(y[0], KILN_I8, 3, D(1, 1, 3), IV(-5, -5, -2));
}

static void test_avgpool_ceil_and_pads(void) {
  kiln_tensor *y;
  /* the ceil-mode window past the padding counts only its real elements */
  CHECK_OK(run1("AveragePool", 10, 1, INS(mk(KILN_F32, 3, D(1, 1, 3), V(1, 2, 3))), 4,
                ATTRS(AIS("kernel_shape", 2), AIS("strides", 2), AI("ceil_mode", 1),
                      AI("count_include_pad", 1)),
                &y));
  expect(y, KILN_F32, 3, D(1, 1, 2), V(1.5, 3));
  CHECK_OK(run1("AveragePool", 7, 1, INS(mk(KILN_F32, 3, D(1, 1, 3), V(1, 2, 3))), 4,
                ATTRS(AIS("kernel_shape", 2), AIS("strides", 2), AIS("pads", 1, 0),
                      AI("count_include_pad", 1)),
                &y));
  expect(y, KILN_F32, 3, D(1, 1, 2), V(0.5, 2.5));
  CHECK_OK(run1("LpPool", 1, 1, INS(mk(KILN_F32, 3, D(1, 1, 2), V(3, 4))), 2,
                ATTRS(AIS("kernel_shape", 2), AF("p", 2.0)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 1), V(5));
  CHECK_OK(run1("GlobalLpPool", 2, 1, INS(mk(KILN_F32, 3, D(1, 1, 2), V(3, -4))), 1,
                ATTRS(AI("p", 1)), &y));
  expect(y, KILN_F32, 3, D(1, 1, 1), V(7));
}

static void test_max_roi_pool(void) {
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = i;
  kiln_tensor *y;
  CHECK_OK(run1("MaxRoiPool", 1, 2,
                INS(mk(KILN_F32, 4, D(1, 1, 4, 4), x), mk(KILN_F32, 2, D(1, 5), V(0, 0, 0, 3, 3))),
                1, ATTRS(AIS("pooled_shape", 2, 2)), &y));
  expect(y, KILN_F32, 4, D(1, 1, 2, 2), V(5, 7, 13, 15));
}

/* ---- normalization ---- */

static void test_batchnorm_training(void) {
  kiln_tensor *y[3];
  CHECK_OK(run_n("BatchNormalization", 15, 5,
                 INS(mk(KILN_F32, 2, D(2, 1), V(1, 3)), mk(KILN_F32, 1, D(1), V(1)),
                     mk(KILN_F32, 1, D(1), V(0)), mk(KILN_F32, 1, D(1), V(0)),
                     mk(KILN_F32, 1, D(1), V(1))),
                 2, ATTRS(AI("training_mode", 1), AF("epsilon", 0)), 3, y));
  expect(y[0], KILN_F32, 2, D(2, 1), V(-1, 1));
  expect(y[1], KILN_F32, 1, D(1), V(0.2));
  expect(y[2], KILN_F32, 1, D(1), V(1));
  /* opset 7, per-activation parameters (spatial=0), inference */
  kiln_tensor *z;
  CHECK_OK(run1("BatchNormalization", 7, 5,
                INS(mk(KILN_F32, 3, D(1, 1, 2), V(1, 2)), mk(KILN_F32, 2, D(1, 2), V(1, 2)),
                    mk(KILN_F32, 2, D(1, 2), V(0, 1)), mk(KILN_F32, 2, D(1, 2), V(1, 1)),
                    mk(KILN_F32, 2, D(1, 2), V(1, 1))),
                2, ATTRS(AI("spatial", 0), AF("epsilon", 0)), &z));
  expect(z, KILN_F32, 3, D(1, 1, 2), V(0, 3));
}

static void test_layer_and_group_norm(void) {
  kiln_tensor *y[3];
  CHECK_OK(run_n("LayerNormalization", 17, 3,
                 INS(mk(KILN_F32, 2, D(2, 2), V(1, 3, 2, 2)), mk(KILN_F32, 1, D(2), V(1, 2)),
                     mk(KILN_F32, 1, D(2), V(0, 1))),
                 1, ATTRS(AF("epsilon", 0)), 3, y));
  expect(y[0], KILN_F32, 2, D(2, 2), V(-1, 3, NAN, NAN));
  expect(y[1], KILN_F32, 2, D(2, 1), V(2, 2));
  expect(y[2], KILN_F32, 2, D(2, 1), V(1, INFINITY));
  kiln_tensor *g;
  /* opset 18: one scale and bias per group */
  CHECK_OK(run1("GroupNormalization", 18, 3,
                INS(mk(KILN_F32, 3, D(1, 4, 1), V(1, 3, 5, 5)), mk(KILN_F32, 1, D(2), V(2, 1)),
                    mk(KILN_F32, 1, D(2), V(0, 7))),
                2, ATTRS(AI("num_groups", 2), AF("epsilon", 0)), &g));
  expect(g, KILN_F32, 3, D(1, 4, 1), V(-2, 2, NAN, NAN));
  CHECK_OK(run1("RMSNormalization", 23, 2,
                INS(mk(KILN_F32, 2, D(1, 2), V(3, 4)), mk(KILN_F32, 1, D(2), V(1, 2))), 1,
                ATTRS(AF("epsilon", 0)), &g));
  expect(g, KILN_F32, 2, D(1, 2), V(3 / sqrt(12.5), 8 / sqrt(12.5)));
}

static void test_lrn_lpnorm_mvn(void) {
  kiln_tensor *y;
  CHECK_OK(run1("LRN", 13, 1, INS(mk(KILN_F32, 3, D(1, 2, 1), V(1, 2))), 4,
                ATTRS(AI("size", 2), AF("alpha", 2), AF("beta", 1), AF("bias", 1)), &y));
  expect(y, KILN_F32, 3, D(1, 2, 1), V(1.0 / (1 + 5), 2.0 / (1 + 4)));
  CHECK_OK(
      run1("LpNormalization", 1, 1, INS(mk(KILN_F32, 2, D(2, 2), V(3, 4, 0, 0))), 0, NULL, &y));
  expect(y, KILN_F32, 2, D(2, 2), V(0.6, 0.8, 0, 0));
  CHECK_OK(run1("MeanVarianceNormalization", 9, 1, INS(mk(KILN_F32, 2, D(1, 2), V(1, 3))), 1,
                ATTRS(AIS("axes", 1)), &y));
  expect(y, KILN_F32, 2, D(1, 2), V(-1 / (1 + 1e-9), 1 / (1 + 1e-9)));
}

/* ---- matrix products ---- */

static void test_gemm_variants(void) {
  kiln_tensor *y;
  CHECK_OK(run1("Gemm", 13, 3,
                INS(mk(KILN_F32, 2, D(2, 1), V(1, 2)), mk(KILN_F32, 2, D(2, 1), V(3, 4)),
                    mk(KILN_F32, 1, D(1), V(1))),
                4, ATTRS(AI("transA", 1), AF("alpha", 2), AF("beta", 3), AI("transB", 0)), &y));
  expect(y, KILN_F32, 2, D(1, 1), V(2 * 11 + 3));
  int64_t a = (INT64_C(1) << 40) + 1, b = (INT64_C(1) << 20) + 1;
  CHECK_OK(run1("Gemm", 13, 2,
                INS(mki(KILN_I64, 2, D(1, 1), IV(a)), mki(KILN_I64, 2, D(1, 1), IV(b))), 0, NULL,
                &y));
  expect_i(y, KILN_I64, 2, D(1, 1), IV(a * b));
  CHECK_ERR(run1("Gemm", 9, 2, INS(mk(KILN_F32, 2, D(1, 1), V(1)), mk(KILN_F32, 2, D(1, 1), V(1))),
                 0, NULL, &y),
            KILN_ERR_INVALID);
}

static void test_matmul_shapes_and_ints(void) {
  kiln_tensor *y;
  CHECK_OK(run1("MatMul", 13, 2,
                INS(mki(KILN_I64, 1, D(3), IV(1, 2, 3)), mki(KILN_I64, 1, D(3), IV(4, 5, 6))), 0,
                NULL, &y));
  expect_i(y, KILN_I64, 0, NULL, IV(32));
  /* [2,1,1,2] x [3,2,1]: batch dims [2,1] and [3] broadcast to [2,3] */
  CHECK_OK(run1("MatMul", 13, 2,
                INS(mk(KILN_F32, 4, D(2, 1, 1, 2), V(1, 2, 3, 4)),
                    mk(KILN_F32, 3, D(3, 2, 1), V(1, 0, 0, 1, 1, 1))),
                0, NULL, &y));
  expect(y, KILN_F32, 4, D(2, 3, 1, 1), V(1, 2, 3, 3, 4, 7));
  CHECK_OK(run1("MatMulInteger", 10, 3,
                INS(mki(KILN_U8, 2, D(2, 2), IV(5, 6, 7, 8)), mki(KILN_U8, 2, D(2, 1), IV(1, 1)),
                    mki(KILN_U8, 1, D(2), IV(5, 7))),
                0, NULL, &y));
  expect_i(y, KILN_I32, 2, D(2, 1), IV(1, 1));
}

static void test_einsum_forms(void) {
  kiln_tensor *y;
  CHECK_OK(run1("Einsum", 12, 1, INS(mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4))), 1,
                ATTRS(AS("equation", "ii")), &y));
  expect(y, KILN_F32, 0, NULL, V(5));
  CHECK_OK(run1("Einsum", 12, 1, INS(mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4))), 1,
                ATTRS(AS("equation", "ji")), &y));
  expect(y, KILN_F32, 2, D(2, 2), V(1, 3, 2, 4));
  CHECK_OK(run1("Einsum", 12, 2,
                INS(mk(KILN_F32, 3, D(2, 1, 2), V(1, 2, 3, 4)), mk(KILN_F32, 2, D(2, 1), V(1, 1))),
                1, ATTRS(AS("equation", "...ij,jk->...ik")), &y));
  expect(y, KILN_F32, 3, D(2, 1, 1), V(3, 7));
  CHECK_OK(run1("Einsum", 12, 2,
                INS(mki(KILN_I32, 1, D(2), IV(2, 3)), mki(KILN_I32, 1, D(3), IV(1, 10, 100))), 1,
                ATTRS(AS("equation", "i,j->ji")), &y));
  expect_i(y, KILN_I32, 2, D(3, 2), IV(2, 3, 20, 30, 200, 300));
  CHECK_ERR(run1("Einsum", 12, 1, INS(mk(KILN_F32, 1, D(2), V(1, 2))), 1,
                 ATTRS(AS("equation", "ij->i")), &y),
            KILN_ERR_INVALID);
}

/* ---- misc ---- */

static void test_dropout_modes(void) {
  kiln_tensor *y[2];
  /* opset 7: identity, mask of the input dtype */
  CHECK_OK(run_n("Dropout", 7, 1, INS(mk(KILN_F32, 1, D(2), V(1, 2))), 1, ATTRS(AF("ratio", 0.3)),
                 2, y));
  expect(y[0], KILN_F32, 1, D(2), V(1, 2));
  expect(y[1], KILN_F32, 1, D(2), V(1, 1));
  /* training with seed 0: numpy's MT19937 draws 0.5488, 0.7152, 0.6028, 0.5449 */
  kiln_tensor *ratio = mk(KILN_F32, 0, NULL, V(0.6)), *train = mki(KILN_BOOL, 0, NULL, IV(1));
  CHECK_OK(run_n("Dropout", 13, 3, INS(mk(KILN_F32, 1, D(4), V(1, 1, 1, 1)), ratio, train), 1,
                 ATTRS(AI("seed", 0)), 2, y));
  expect(y[0], KILN_F32, 1, D(4), V(0, 2.5, 2.5, 0));
  expect_i(y[1], KILN_BOOL, 1, D(4), IV(0, 1, 1, 0));
}

static void test_det(void) {
  kiln_tensor *y;
  CHECK_OK(
      run1("Det", 11, 1, INS(mk(KILN_F64, 3, D(2, 2, 2), V(1, 2, 3, 4, 0, 1, 1, 0))), 0, NULL, &y));
  expect(y, KILN_F64, 1, D(2), V(-2, -1));
  CHECK_OK(
      run1("Det", 11, 1, INS(mk(KILN_F32, 2, D(3, 3), V(2, 0, 0, 0, 3, 0, 0, 0, 0))), 0, NULL, &y));
  expect(y, KILN_F32, 0, NULL, V(0));
}

/* ---- shape inference ---- */

static const kiln_type *infer_one(kiln_graph *g, const char *op, int n_in, const int *ins,
                                  int n_attrs, const attr_spec *attrs) {
  int y = -1;
  char name[32];
  snprintf(name, sizeof name, "y%d", g->values.len);
  kiln_status st = kiln_graph_add_node(g, op, "", "", n_in, ins, 1, (const char *[]){name}, &y);
  CHECK_OK(st);
  if (y < 0) return &g->values.data[0].type;
  add_attrs(g, kiln_graph_last_node(g), n_attrs, attrs);
  CHECK_OK(kiln_ops_infer_graph(g));
  return &g->values.data[y].type;
}

static void check_type(const kiln_type *t, kiln_dtype dt, int rank, const int64_t *dims) {
  CHECK(t->kind == KILN_TYPE_TENSOR);
  CHECK(t->dtype == dt);
  CHECK(t->rank == rank);
  for (int d = 0; d < rank && d < t->rank; d++) {
    if (t->dims[d].value != dims[d])
      fprintf(stderr, "  dim %d: got %lld, want %lld\n", d, (long long)t->dims[d].value,
              (long long)dims[d]);
    CHECK(t->dims[d].value == dims[d]);
  }
}

static void test_infer_conv_pool(void) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 17);
  kiln_type xt = kiln_type_tensor(KILN_F32, 4, D(1, 3, 224, 224));
  xt.dims[0].value = -1;
  xt.dims[0].sym = "batch";
  int x = kiln_graph_add_input(g, "x", xt);
  int w = kiln_graph_add_input(g, "w", kiln_type_tensor(KILN_F32, 4, D(64, 3, 7, 7)));
  const kiln_type *t = infer_one(g, "Conv", 2, (int[]){x, w}, 2,
                                 ATTRS(AIS("strides", 2, 2), AIS("pads", 3, 3, 3, 3)));
  CHECK(t->rank == 4 && t->dims[0].sym && !strcmp(t->dims[0].sym, "batch"));
  CHECK(t->dims[1].value == 64 && t->dims[2].value == 112 && t->dims[3].value == 112);
  int c = g->values.len - 1;
  t = infer_one(g, "MaxPool", 1, &c, 3,
                ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2), AI("ceil_mode", 1)));
  CHECK(t->dims[2].value == 56 && t->dims[3].value == 56);
  c = g->values.len - 1;
  t = infer_one(g, "GlobalAveragePool", 1, &c, 0, NULL);
  CHECK(t->rank == 4 && t->dims[1].value == 64 && t->dims[2].value == 1 && t->dims[3].value == 1);
  int tx = kiln_graph_add_input(g, "tx", kiln_type_tensor(KILN_F32, 4, D(1, 2, 3, 3)));
  int tw = kiln_graph_add_input(g, "tw", kiln_type_tensor(KILN_F32, 4, D(2, 4, 3, 3)));
  check_type(infer_one(g, "ConvTranspose", 2, (int[]){tx, tw}, 1, ATTRS(AIS("strides", 2, 2))),
             KILN_F32, 4, D(1, 4, 7, 7));
  check_type(
      infer_one(g, "Einsum", 2, (int[]){tx, tw}, 1, ATTRS(AS("equation", "bcij,cdjk->bdik"))),
      KILN_F32, 4, D(1, 4, 3, 3));
  /* MaxRoiPool had no inference (test_op_registry found it): [num_rois, C, ph, pw] */
  int rois = kiln_graph_add_input(g, "rois", kiln_type_tensor(KILN_F32, 2, D(5, 5)));
  check_type(infer_one(g, "MaxRoiPool", 2, (int[]){tx, rois}, 1, ATTRS(AIS("pooled_shape", 2, 3))),
             KILN_F32, 4, D(5, 2, 2, 3));
  kiln_graph_free(g);
}

static void test_infer_matmul_reduce_norm(void) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 18);
  int a = kiln_graph_add_input(g, "a", kiln_type_tensor(KILN_F32, 3, D(4, 2, 3)));
  int b = kiln_graph_add_input(g, "b", kiln_type_tensor(KILN_F32, 2, D(3, 5)));
  check_type(infer_one(g, "MatMul", 2, (int[]){a, b}, 0, NULL), KILN_F32, 3, D(4, 2, 5));
  kiln_tensor *axes = mki(KILN_I64, 1, D(1), IV(-1));
  int ax;
  CHECK_OK(kiln_graph_add_const(g, "axes", axes, &ax));
  check_type(infer_one(g, "ReduceMean", 2, (int[]){a, ax}, 1, ATTRS(AI("keepdims", 0))), KILN_F32,
             2, D(4, 2));
  check_type(infer_one(g, "ArgMax", 1, &a, 1, ATTRS(AI("axis", 1))), KILN_I64, 3, D(4, 1, 3));
  int m = kiln_graph_add_input(g, "m", kiln_type_tensor(KILN_F32, 2, D(3, 2)));
  check_type(infer_one(g, "Gemm", 2, (int[]){m, b}, 1, ATTRS(AI("transA", 1))), KILN_F32, 2,
             D(2, 5));
  check_type(infer_one(g, "Softmax", 1, &a, 0, NULL), KILN_F32, 3, D(4, 2, 3));
  int y[3], sc = kiln_graph_add_input(g, "sc", kiln_type_tensor(KILN_F32, 1, D(3)));
  CHECK_OK(kiln_graph_add_node(g, "LayerNormalization", "", "", 2, (int[]){a, sc}, 3,
                               (const char *[]){"ln", "mean", "isd"}, y));
  CHECK_OK(kiln_ops_infer_graph(g));
  check_type(&g->values.data[y[1]].type, KILN_F32, 3, D(4, 2, 1));
  kiln_graph_free(g);
}

/* Gemm inference refuses what the kernel refuses: inner dims that differ (transB flipped on a
 * [15,1] B had been typed [17,15]; the reference refused it at run time) and a C that does not
 * broadcast to [M, N]. */
static void test_infer_gemm_refuses(void) {
  for (int k = 0; k < 3; k++) {
    kiln_graph *g = kiln_graph_new("t");
    kiln_graph_set_opset(g, "", 13);
    int a = kiln_graph_add_input(g, "a", kiln_type_tensor(KILN_F32, 2, D(17, 15)));
    int b = kiln_graph_add_input(g, "b", kiln_type_tensor(KILN_F32, 2, D(15, 1)));
    int c = kiln_graph_add_input(g, "c", kiln_type_tensor(KILN_F32, 1, D(k == 2 ? 3 : 1)));
    int y = -1;
    CHECK_OK(kiln_graph_add_node(g, "Gemm", "", "", k ? 3 : 2, (int[]){a, b, c}, 1,
                                 (const char *[]){"y"}, &y));
    add_attrs(g, kiln_graph_last_node(g), 1, ATTRS(AI("transB", k == 0 ? 1 : 0)));
    kiln_status st = kiln_ops_infer_graph(g);
    if (k == 1) CHECK_OK(st); /* [17,15] x [15,1] + [1]: fine */
    else CHECK_ERR(st, KILN_ERR_INVALID);
    kiln_graph_free(g);
  }
}

TEST_MAIN(T(test_reduce_axes_attribute_before_13), T(test_reduce_axes_input_and_noop),
          T(test_reduce_integers_are_exact), T(test_reduce_empty_set),
          T(test_reduce_log_sum_exp_large), T(test_arg_select_last_index),
          T(test_softmax_opset11_flattens), T(test_cumsum_cumprod), T(test_topk_variants),
          T(test_conv_1d_and_groups), T(test_conv_transpose_output_shape),
          T(test_conv_integer_zero_points), T(test_maxpool_indices_storage_order),
          T(test_avgpool_ceil_and_pads), T(test_max_roi_pool), T(test_batchnorm_training),
          T(test_layer_and_group_norm), T(test_lrn_lpnorm_mvn), T(test_gemm_variants),
          T(test_matmul_shapes_and_ints), T(test_einsum_forms), T(test_dropout_modes), T(test_det),
          T(test_infer_conv_pool), T(test_infer_matmul_reduce_norm), T(test_infer_gemm_refuses))
