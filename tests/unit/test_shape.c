/* Unit tests of the 'shape' op family (src/ops/shape*.c): the opset forms and
 * edge cases that ONNX's node tests do not reach (legacy attribute forms,
 * strings, clamping, errors), and the shape inference of each op, symbolic dims
 * included. Kernels run as one-node graphs over constant inputs; expected
 * values are computed by hand or by numpy (noted). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/ops.h"

/* ---- helpers ---- */
typedef struct tcase {
  kiln_graph *g;
  int node;
  int outs[4];
  kiln_val *out[4];
} tcase;

static kiln_tensor *mk(kiln_dtype dt, int rank, const int64_t *dims, const double *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; v && i < t->numel; i++) kiln_store_f64(dt, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *mks(int rank, const int64_t *dims, const char *const *v) {
  kiln_tensor *t = mk(KILN_STRING, rank, dims, NULL);
  for (int64_t i = 0; i < t->numel; i++) ((char **)t->data)[i] = kiln_xstrdup(v[i]);
  return t;
}

static kiln_tensor *ints(int n, const double *v) {
  int64_t d = n;
  return mk(KILN_I64, 1, &d, v);
}

static kiln_tensor *sc_i64(int64_t v) {
  kiln_tensor *t = mk(KILN_I64, 0, NULL, NULL);
  *(int64_t *)t->data = v;
  return t;
}

/* A graph with one node `op` over constant inputs (NULL = omitted) and n_out
 * outputs. */
static tcase make(int64_t opset, const char *op, int n_in, kiln_tensor *const *in, int n_out) {
  static const char *const names[] = {"y0", "y1", "y2", "y3"};
  tcase c;
  memset(&c, 0, sizeof c);
  c.g = kiln_graph_new("t");
  kiln_graph_set_opset(c.g, "", opset);
  int ids[8];
  for (int i = 0; i < n_in; i++) {
    ids[i] = -1;
    char name[16];
    snprintf(name, sizeof name, "in%d", i);
    if (in[i] && kiln_graph_add_const(c.g, name, in[i], &ids[i])) abort();
  }
  if (kiln_graph_add_node(c.g, op, "", "n0", n_in, ids, n_out, names, c.outs)) abort();
  c.node = kiln_graph_last_node(c.g);
  for (int i = 0; i < n_out; i++) kiln_graph_add_output(c.g, c.outs[i]);
  return c;
}

static void a_int(tcase *c, const char *name, int64_t v) {
  kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_INT)->i = v;
}
static void a_float(tcase *c, const char *name, float v) {
  kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_FLOAT)->f = v;
}
static void a_str(tcase *c, const char *name, const char *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_STRING);
  a->s = kiln_graph_strdup(c->g, v);
  a->s_len = strlen(v);
}
static void a_ints(tcase *c, const char *name, int n, const int64_t *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_INTS);
  a->n = n;
  a->ints = kiln_graph_alloc(c->g, (size_t)n * sizeof(int64_t) + 1);
  memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}
static void a_floats(tcase *c, const char *name, int n, const float *v) {
  kiln_attr *a = kiln_node_add_attr(c->g, c->node, name, KILN_ATTR_FLOATS);
  a->n = n;
  a->floats = kiln_graph_alloc(c->g, (size_t)n * sizeof(float) + 1);
  memcpy(a->floats, v, (size_t)n * sizeof(float));
}

static kiln_status run(tcase *c) {
  return kiln_interp_run(c->g, NULL, 0, NULL, c->out);
}

static void done(tcase *c) {
  for (int i = 0; i < c->g->outputs.len; i++) kiln_val_free(c->out[i]);
  kiln_graph_free(c->g);
}

static const kiln_tensor *out_t(const tcase *c, int i) {
  return c->out[i] && c->out[i]->kind == KILN_TYPE_TENSOR ? c->out[i]->t : NULL;
}

/* Checks output i: dtype, shape and values (exact unless tol > 0). */
static bool eq(const tcase *c, int i, kiln_dtype dt, int rank, const int64_t *dims, const double *v,
               double tol) {
  const kiln_tensor *t = out_t(c, i);
  if (!t || t->dtype != dt || t->rank != rank) {
    fprintf(stderr, "  output %d: wrong dtype/rank\n", i);
    return false;
  }
  for (int k = 0; k < rank; k++)
    if (t->dims[k] != dims[k])
      return fprintf(stderr, "  output %d: dim %d is %lld\n", i, k, (long long)t->dims[k]), false;
  for (int64_t k = 0; k < t->numel; k++) {
    double got = kiln_load_f64(dt, t->data, (size_t)k);
    if (!(fabs(got - v[k]) <= tol * (1 + fabs(v[k])))) {
      fprintf(stderr, "  output %d element %lld: %.9g, expected %.9g\n", i, (long long)k, got,
              v[k]);
      return false;
    }
  }
  return true;
}

static bool strs_eq(const tcase *c, int i, int64_t n, const char *const *v) {
  const kiln_tensor *t = out_t(c, i);
  if (!t || t->dtype != KILN_STRING || t->numel != n) return false;
  for (int64_t k = 0; k < n; k++)
    if (strcmp(((char *const *)t->data)[k], v[k])) {
      fprintf(stderr, "  string %lld: '%s', expected '%s'\n", (long long)k,
              ((char *const *)t->data)[k], v[k]);
      return false;
    }
  return true;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* ---- Reshape ---- */
static void test_reshape_forms(void) {
  double v24[24];
  for (int i = 0; i < 24; i++) v24[i] = i;
  kiln_tensor *in[2] = {mk(KILN_F32, 3, D(2, 3, 4), v24), ints(2, V(0, -1))};
  tcase c = make(13, "Reshape", 2, in, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(2, 12), v24, 0));
  done(&c);
  /* allowzero (14+): a literal 0 */
  kiln_tensor *z[2] = {mk(KILN_F32, 2, D(0, 3), NULL), ints(2, V(3, 0))};
  c = make(14, "Reshape", 2, z, 1);
  a_int(&c, "allowzero", 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(3, 0), NULL, 0));
  done(&c);
  /* Reshape-1: the shape attribute */
  kiln_tensor *a[1] = {mk(KILN_F32, 3, D(2, 3, 4), v24)};
  c = make(1, "Reshape", 1, a, 1);
  a_ints(&c, "shape", 2, D(4, -1));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(4, 6), v24, 0));
  done(&c);
  /* 24 elements do not split in groups of 5; two -1; 0 beyond the input rank */
  const double *bad[3] = {V(5, -1), V(-1, -1), V(2, 3, 4, 0)};
  int nbad[3] = {2, 2, 4};
  for (int k = 0; k < 3; k++) {
    kiln_tensor *b[2] = {mk(KILN_F32, 3, D(2, 3, 4), v24), ints(nbad[k], bad[k])};
    c = make(13, "Reshape", 2, b, 1);
    CHECK_ERR(run(&c), KILN_ERR_INVALID);
    done(&c);
  }
}

/* ---- strings move by copy (ASan checks ownership) ---- */
static void test_strings(void) {
  const char *s6[] = {"a", "b", "c", "d", "e", "f"};
  kiln_tensor *in[1] = {mks(2, D(2, 3), s6)};
  tcase c = make(13, "Transpose", 1, in, 1);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 6, (const char *[]){"a", "d", "b", "e", "c", "f"}));
  done(&c);
  kiln_tensor *cc[2] = {mks(2, D(2, 3), s6), mks(2, D(2, 3), s6)};
  c = make(13, "Concat", 2, cc, 1);
  a_int(&c, "axis", 1);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 12,
                (const char *[]){"a", "b", "c", "a", "b", "c", "d", "e", "f", "d", "e", "f"}));
  done(&c);
  kiln_tensor *p[3] = {mks(1, D(2), s6), ints(2, V(1, 2)), mks(0, NULL, (const char *[]){"x"})};
  c = make(18, "Pad", 3, p, 1);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 5, (const char *[]){"x", "a", "b", "x", "x"}));
  done(&c);
  kiln_tensor *e[2] = {mks(1, D(2), s6), ints(2, V(1, 2))};
  c = make(18, "Pad", 2, e, 1);
  a_str(&c, "mode", "edge");
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 5, (const char *[]){"a", "a", "b", "b", "b"}));
  done(&c);
  kiln_tensor *g[2] = {mks(2, D(2, 3), s6), ints(2, V(-1, 0))};
  c = make(13, "Gather", 2, g, 1);
  a_int(&c, "axis", 1);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 4, (const char *[]){"c", "a", "f", "d"}));
  done(&c);
  kiln_tensor *t[1] = {mks(2, D(2, 3), s6)};
  c = make(14, "Trilu", 1, t, 1);
  a_int(&c, "upper", 0);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 6, (const char *[]){"a", "", "", "d", "e", ""}));
  done(&c);
  kiln_tensor *u[1] = {mks(1, D(4), (const char *[]){"b", "a", "b", "c"})};
  c = make(11, "Unique", 1, u, 4);
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 3, (const char *[]){"a", "b", "c"}));
  CHECK(eq(&c, 2, KILN_I64, 1, D(4), V(1, 0, 1, 2), 0)); /* numpy np.unique */
  done(&c);
}

/* ---- indices out of range are errors naming the node ---- */
static void test_index_errors(void) {
  kiln_tensor *in[2] = {mk(KILN_F32, 1, D(3), V(1, 2, 3)), ints(1, V(3))};
  tcase c = make(13, "Gather", 2, in, 1);
  kiln_status st = run(&c);
  CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID && strstr(kiln_status_message(st), "n0"));
  kiln_status_free(st);
  done(&c);
  kiln_tensor *s[3] = {mk(KILN_F32, 1, D(3), V(1, 2, 3)), ints(1, V(-4)),
                       mk(KILN_F32, 1, D(1), V(9))};
  c = make(18, "ScatterElements", 3, s, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
  kiln_tensor *n[2] = {mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4)), mk(KILN_I64, 2, D(1, 2), V(0, 2))};
  c = make(13, "GatherND", 2, n, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
  kiln_tensor *t[3] = {mk(KILN_F32, 3, D(1, 3, 1), V(0, 0, 0)),
                       mk(KILN_F32, 3, D(1, 2, 1), V(1, 2)), ints(1, V(2))};
  c = make(24, "TensorScatter", 3, t, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID); /* linear: 2 + 2 > 3 */
  done(&c);
  kiln_tensor *w[3] = {mk(KILN_F32, 3, D(1, 3, 1), V(0, 0, 0)),
                       mk(KILN_F32, 3, D(1, 2, 1), V(1, 2)), ints(1, V(2))};
  c = make(24, "TensorScatter", 3, w, 1);
  a_str(&c, "mode", "circular");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 3, D(1, 3, 1), V(2, 0, 1), 0));
  done(&c);
}

/* ---- Slice ---- */
static void test_slice_forms(void) {
  double v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  kiln_tensor *a[1] = {mk(KILN_F32, 2, D(2, 5), v)};
  tcase c = make(1, "Slice", 1, a, 1);
  a_ints(&c, "starts", 1, D(1));
  a_ints(&c, "ends", 1, D(1000));
  a_ints(&c, "axes", 1, D(1));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(2, 4), V(1, 2, 3, 4, 6, 7, 8, 9), 0));
  done(&c);
  /* negative step with clamped start and end: numpy x[-1:-1000:-3] */
  kiln_tensor *n[5] = {mk(KILN_F32, 1, D(10), v), ints(1, V(-1)), ints(1, V(-1000)), NULL,
                       ints(1, V(-3))};
  c = make(13, "Slice", 5, n, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 1, D(4), V(9, 6, 3, 0), 0));
  done(&c);
  /* the most negative step: one element */
  kiln_tensor *m[5] = {mk(KILN_F32, 1, D(10), v), ints(1, V(5)), ints(1, V(0)), NULL, NULL};
  int64_t minstep = INT64_MIN;
  m[4] = mk(KILN_I64, 1, D(1), NULL);
  memcpy(m[4]->data, &minstep, sizeof minstep);
  c = make(13, "Slice", 5, m, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 1, D(1), V(5), 0));
  done(&c);
  kiln_tensor *z[5] = {mk(KILN_F32, 1, D(10), v), ints(1, V(0)), ints(1, V(5)), NULL,
                       ints(1, V(0))};
  c = make(13, "Slice", 5, z, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
}

/* ---- Split ---- */
static void test_split_forms(void) {
  double v[7] = {0, 1, 2, 3, 4, 5, 6};
  kiln_tensor *a[1] = {mk(KILN_F32, 1, D(3), v)};
  tcase c = make(11, "Split", 1, a, 2);
  a_ints(&c, "split", 2, D(1, 2));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 1, D(1), V(0), 0));
  CHECK(eq(&c, 1, KILN_F32, 1, D(2), V(1, 2), 0));
  done(&c);
  kiln_tensor *b[1] = {mk(KILN_F32, 1, D(7), v)};
  c = make(18, "Split", 1, b, 3);
  a_int(&c, "num_outputs", 3);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 1, D(3), V(0, 1, 2), 0));
  CHECK(eq(&c, 2, KILN_F32, 1, D(1), V(6), 0));
  done(&c);
  kiln_tensor *u[1] = {mk(KILN_F32, 1, D(7), v)};
  c = make(13, "Split", 1, u, 2); /* 7 is not divisible by 2 */
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
}

/* ---- Squeeze / Unsqueeze: attribute (< 13) and input forms ---- */
static void test_squeeze_forms(void) {
  kiln_tensor *a[1] = {mk(KILN_F32, 3, D(1, 2, 1), V(1, 2))};
  tcase c = make(11, "Squeeze", 1, a, 1);
  a_ints(&c, "axes", 1, D(-1));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(1, 2), V(1, 2), 0));
  done(&c);
  kiln_tensor *b[1] = {mk(KILN_F32, 3, D(1, 2, 1), V(1, 2))};
  c = make(13, "Squeeze", 1, b, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 1, D(2), V(1, 2), 0));
  done(&c);
  kiln_tensor *e[2] = {mk(KILN_F32, 3, D(1, 2, 1), V(1, 2)), ints(1, V(1))};
  c = make(13, "Squeeze", 2, e, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
  kiln_tensor *u[1] = {mk(KILN_F32, 2, D(2, 3), V(1, 2, 3, 4, 5, 6))};
  c = make(11, "Unsqueeze", 1, u, 1);
  a_ints(&c, "axes", 2, D(0, -1));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 4, D(1, 2, 3, 1), V(1, 2, 3, 4, 5, 6), 0));
  done(&c);
}

/* ---- Pad: modes, negative pads, the attribute forms; numpy np.pad ---- */
static void test_pad_modes(void) {
  kiln_tensor *r[2] = {mk(KILN_I32, 1, D(3), V(1, 2, 3)), ints(2, V(5, 4))};
  tcase c = make(19, "Pad", 2, r, 1);
  a_str(&c, "mode", "reflect");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I32, 1, D(12), V(2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3), 0));
  done(&c);
  kiln_tensor *w[2] = {mk(KILN_I32, 1, D(3), V(1, 2, 3)), ints(2, V(2, 1))};
  c = make(19, "Pad", 2, w, 1);
  a_str(&c, "mode", "wrap");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I32, 1, D(6), V(2, 3, 1, 2, 3, 1), 0));
  done(&c);
  /* negative begin crops, then edge pads the cropped data */
  kiln_tensor *e[2] = {mk(KILN_I32, 1, D(3), V(1, 2, 3)), ints(2, V(-1, 2))};
  c = make(19, "Pad", 2, e, 1);
  a_str(&c, "mode", "edge");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I32, 1, D(4), V(2, 3, 3, 3), 0));
  done(&c);
  kiln_tensor *a[1] = {mk(KILN_F32, 2, D(1, 2), V(1, 2))};
  c = make(2, "Pad", 1, a, 1);
  a_ints(&c, "pads", 4, D(0, 1, 0, 0));
  a_float(&c, "value", 7);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(1, 3), V(7, 1, 2), 0));
  done(&c);
  /* axes input (18): pad only the last axis */
  kiln_tensor *x[4] = {mk(KILN_F32, 2, D(1, 2), V(1, 2)), ints(2, V(1, 0)), NULL, ints(1, V(-1))};
  c = make(18, "Pad", 4, x, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(1, 3), V(0, 1, 2), 0));
  done(&c);
}

/* ---- Resize-10 / Upsample legacy forms: asymmetric; nearest floors up, ceils
 * down ---- */
static void test_resize_legacy(void) {
  kiln_tensor *a[2] = {mk(KILN_F32, 2, D(1, 5), V(0, 1, 2, 3, 4)),
                       mk(KILN_F32, 1, D(2), V(1, 0.6))};
  tcase c = make(10, "Resize", 2, a, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(1, 3), V(0, 2, 4), 0)); /* x = 0, 1.67, 3.33 */
  done(&c);
  kiln_tensor *b[2] = {mk(KILN_F32, 2, D(1, 2), V(1, 3)), mk(KILN_F32, 1, D(2), V(1, 2))};
  c = make(9, "Upsample", 2, b, 1);
  a_str(&c, "mode", "linear");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(1, 4), V(1, 2, 3, 3), 0));
  done(&c);
  kiln_tensor *u[1] = {mk(KILN_U8, 2, D(1, 2), V(1, 3))};
  c = make(7, "Upsample", 1, u, 1);
  a_floats(&c, "scales", 2, (const float[]){2, 1.5f});
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_U8, 2, D(2, 3), V(1, 1, 3, 1, 1, 3), 0));
  done(&c);
  kiln_tensor *h[1] = {mk(KILN_F32, 4, D(1, 1, 1, 2), V(1, 3))};
  c = make(1, "Upsample", 1, h, 1);
  a_float(&c, "height_scale", 2);
  a_float(&c, "width_scale", 2);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 4, D(1, 1, 2, 4), V(1, 1, 3, 3, 1, 1, 3, 3), 0));
  done(&c);
}

/* Resize of an integer type rounds half to even and saturates (reference
 * saturate_cast). */
static void test_resize_int_saturate(void) {
  kiln_tensor *a[3] = {mk(KILN_U8, 1, D(2), V(0, 255)), NULL, mk(KILN_F32, 1, D(1), V(4))};
  tcase c = make(19, "Resize", 3, a, 1);
  a_str(&c, "mode", "cubic");
  a_str(&c, "coordinate_transformation_mode", "asymmetric");
  CHECK_OK(run(&c));
  /* x = y/4: taps at 0.25, 0.5, 0.75 overshoot; the edge stays in range */
  const kiln_tensor *t = out_t(&c, 0);
  CHECK(t && t->numel == 8);
  for (int i = 0; t && i < 8; i++) CHECK(((uint8_t *)t->data)[i] <= 255);
  CHECK(t && ((uint8_t *)t->data)[0] == 0 && ((uint8_t *)t->data)[4] == 255);
  done(&c);
}

/* ---- Unique: sorted and in order of first occurrence; numpy np.unique ---- */
static void test_unique(void) {
  const double x[6] = {2, 1, 1, 3, 4, 3};
  kiln_tensor *a[1] = {mk(KILN_I32, 1, D(6), x)};
  tcase c = make(11, "Unique", 1, a, 4);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I32, 1, D(4), V(1, 2, 3, 4), 0));
  CHECK(eq(&c, 1, KILN_I64, 1, D(4), V(1, 0, 3, 4), 0));
  CHECK(eq(&c, 2, KILN_I64, 1, D(6), V(1, 0, 0, 2, 3, 2), 0));
  CHECK(eq(&c, 3, KILN_I64, 1, D(4), V(2, 1, 2, 1), 0));
  done(&c);
  kiln_tensor *b[1] = {mk(KILN_I32, 1, D(6), x)};
  c = make(11, "Unique", 1, b, 4);
  a_int(&c, "sorted", 0);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I32, 1, D(4), V(2, 1, 3, 4), 0));
  CHECK(eq(&c, 1, KILN_I64, 1, D(4), V(0, 1, 3, 4), 0));
  CHECK(eq(&c, 2, KILN_I64, 1, D(6), V(0, 1, 1, 2, 3, 2), 0));
  CHECK(eq(&c, 3, KILN_I64, 1, D(4), V(1, 2, 2, 1), 0));
  done(&c);
  kiln_tensor *n[1] = {mk(KILN_F32, 1, D(4), V(NAN, 1, NAN, -0.0))};
  c = make(11, "Unique", 1, n, 1);
  CHECK_OK(run(&c));
  const kiln_tensor *t = out_t(&c, 0);
  CHECK(t && t->numel == 3 && isnan(((float *)t->data)[2]));
  done(&c);
}

/* ---- generators and small ops ---- */
static void test_generators(void) {
  kiln_tensor *t1[3] = {mk(KILN_F32, 2, D(2, 2), V(1, 2, 3, 4)), sc_i64(2), sc_i64(1)};
  tcase c = make(1, "Tile", 3, t1, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(2, 4), V(1, 2, 1, 2, 3, 4, 3, 4), 0));
  done(&c);
  c = make(13, "Constant", 0, NULL, 1);
  a_ints(&c, "value_ints", 3, D(4, 5, 6));
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I64, 1, D(3), V(4, 5, 6), 0));
  done(&c);
  c = make(13, "Constant", 0, NULL, 1);
  a_str(&c, "value_string", "hi");
  CHECK_OK(run(&c));
  CHECK(strs_eq(&c, 0, 1, (const char *[]){"hi"}));
  done(&c);
  kiln_tensor *r[3] = {sc_i64(INT64_MIN), sc_i64(INT64_MAX), sc_i64(INT64_MAX)};
  c = make(11, "Range", 3, r, 1);
  CHECK_OK(run(&c));
  const kiln_tensor *t = out_t(&c, 0);
  CHECK(t && t->numel == 3 && ((int64_t *)t->data)[2] == INT64_MAX - 1);
  done(&c);
  kiln_tensor *z[3] = {sc_i64(1), sc_i64(5), sc_i64(0)};
  c = make(11, "Range", 3, z, 1);
  CHECK_ERR(run(&c), KILN_ERR_INVALID);
  done(&c);
  /* OneHot: an index outside [-depth, depth) gives all off */
  kiln_tensor *o[3] = {ints(3, V(-1, 5, 0)), mk(KILN_F32, 0, NULL, V(3)),
                       mk(KILN_F32, 1, D(2), V(0, 1))};
  c = make(11, "OneHot", 3, o, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_F32, 2, D(3, 3), V(0, 0, 1, 0, 0, 0, 1, 0, 0), 0));
  done(&c);
  kiln_tensor *nz[1] = {mk(KILN_F32, 0, NULL, V(2))};
  c = make(13, "NonZero", 1, nz, 1);
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I64, 2, D(1, 1), V(0), 0));
  done(&c);
  kiln_tensor *sn[3] = {ints(4, V(1, 2, 3, 4)), mk(KILN_I64, 2, D(2, 1), V(0, 0)),
                        ints(2, V(5, 3))};
  c = make(18, "ScatterND", 3, sn, 1);
  a_str(&c, "reduction", "mul");
  CHECK_OK(run(&c));
  CHECK(eq(&c, 0, KILN_I64, 1, D(4), V(15, 2, 3, 4), 0));
  done(&c);
}

/* ---- inference ---- */
typedef struct igraph {
  kiln_graph *g;
  int x;
} igraph;

/* A graph with input x: dtype[dims] where a dim < 0 is the symbol "batch" (-1)
 * or "seq"
 * (-2). */
static igraph ig_new(int64_t opset, int rank, const int64_t *dims) {
  igraph r;
  r.g = kiln_graph_new("t");
  kiln_graph_set_opset(r.g, "", opset);
  kiln_type t = kiln_type_tensor(KILN_F32, rank, dims);
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) t.dims[i].sym = kiln_graph_strdup(r.g, dims[i] == -1 ? "batch" : "seq");
  r.x = kiln_graph_add_input(r.g, "x", t);
  return r;
}

/* Adds node op(x, constants...) and returns the type of its first output after
 * inference. */
static kiln_type ig_node(igraph *r, const char *op, int n_c, kiln_tensor *const *cs,
                         void (*attrs)(kiln_graph *, int)) {
  int ids[6] = {r->x}, out;
  for (int i = 0; i < n_c; i++) {
    ids[1 + i] = -1;
    char name[16];
    snprintf(name, sizeof name, "c%d_%d", r->g->nodes.len, i);
    if (cs[i] && kiln_graph_add_const(r->g, name, cs[i], &ids[1 + i])) abort();
  }
  char yn[16];
  snprintf(yn, sizeof yn, "y%d", r->g->nodes.len);
  if (kiln_graph_add_node(r->g, op, "", "n", 1 + n_c, ids, 1, (const char *[]){yn}, &out)) abort();
  if (attrs) attrs(r->g, kiln_graph_last_node(r->g));
  CHECK_OK(kiln_ops_infer_graph(r->g));
  return r->g->values.data[out].type;
}

static bool type_is(const kiln_type *t, const char *want) {
  char buf[128];
  kiln_type_str(t, buf, sizeof buf);
  if (strcmp(buf, want)) fprintf(stderr, "  type %s, expected %s\n", buf, want);
  return !strcmp(buf, want);
}

static void shape_start1(kiln_graph *g, int n) {
  kiln_node_add_attr(g, n, "start", KILN_ATTR_INT)->i = 1;
}

static void test_infer_symbolic(void) {
  igraph r = ig_new(15, 3, D(-1, 3, 4)); /* Shape's start attribute is opset 15 */
  kiln_type t = ig_node(&r, "Reshape", 1, (kiln_tensor *[]){ints(2, V(0, -1))}, NULL);
  CHECK(type_is(&t, "f32[batch,12]"));
  t = ig_node(&r, "Reshape", 1, (kiln_tensor *[]){ints(2, V(-1, 4))}, NULL);
  CHECK(type_is(&t, "f32[?,4]"));
  t = ig_node(&r, "Shape", 0, NULL, shape_start1);
  CHECK(type_is(&t, "i64[2]"));
  t = ig_node(&r, "Unsqueeze", 1, (kiln_tensor *[]){ints(1, V(1))}, NULL);
  CHECK(type_is(&t, "f32[batch,1,3,4]"));
  t = ig_node(&r, "Slice", 2, (kiln_tensor *[]){ints(1, V(1)), ints(1, V(-1))}, NULL);
  CHECK(type_is(&t, "f32[?,3,4]"));
  t = ig_node(&r, "Slice", 3, (kiln_tensor *[]){ints(1, V(1)), ints(1, V(-1)), ints(1, V(2))},
              NULL);
  CHECK(type_is(&t, "f32[batch,3,2]"));
  t = ig_node(&r, "Expand", 1, (kiln_tensor *[]){ints(4, V(2, 1, 3, 1))}, NULL);
  CHECK(type_is(&t, "f32[2,batch,3,4]"));
  t = ig_node(&r, "Transpose", 0, NULL, NULL);
  CHECK(type_is(&t, "f32[4,3,batch]"));
  t = ig_node(&r, "Flatten", 0, NULL, NULL);
  CHECK(type_is(&t, "f32[batch,12]"));
  t = ig_node(&r, "Tile", 1, (kiln_tensor *[]){ints(3, V(1, 2, 1))}, NULL);
  CHECK(type_is(&t, "f32[batch,6,4]"));
  t = ig_node(&r, "Gather", 1, (kiln_tensor *[]){ints(2, V(0, 1))}, NULL);
  CHECK(type_is(&t, "f32[2,3,4]"));
  t = ig_node(&r, "Pad", 1, (kiln_tensor *[]){ints(6, V(0, 1, 0, 0, 1, 2))}, NULL);
  CHECK(type_is(&t, "f32[batch,5,6]"));
  t = ig_node(&r, "Resize", 3, (kiln_tensor *[]){NULL, NULL, ints(3, V(1, 6, 8))}, NULL);
  CHECK(type_is(&t, "f32[1,6,8]"));
  kiln_graph_free(r.g);

  igraph s = ig_new(13, 2, D(-1, -2));
  t = ig_node(&s, "Reshape", 1, (kiln_tensor *[]){ints(3, V(0, -1, 1))}, NULL);
  CHECK(type_is(&t, "f32[batch,seq,1]"));
  t = ig_node(&s, "Squeeze", 0, NULL, NULL);
  CHECK(type_is(&t, "f32[*]")); /* which dims are 1 is not known */
  kiln_graph_free(s.g);
}

static void concat_axis0(kiln_graph *g, int n) {
  kiln_node_add_attr(g, n, "axis", KILN_ATTR_INT)->i = 0;
}

static void test_infer_values(void) {
  igraph r = ig_new(13, 1, D(3));
  int ids[2] = {r.x, r.x}, out;
  CHECK_OK(kiln_graph_add_node(r.g, "Concat", "", "c", 2, ids, 1, (const char *[]){"y"}, &out));
  concat_axis0(r.g, kiln_graph_last_node(r.g));
  CHECK_OK(kiln_ops_infer_graph(r.g));
  CHECK(type_is(&r.g->values.data[out].type, "f32[6]"));
  kiln_graph_free(r.g);
  /* Range and ConstantOfShape from constant inputs */
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 13);
  int c[3];
  CHECK_OK(kiln_graph_add_const(g, "s", sc_i64(0), &c[0]));
  CHECK_OK(kiln_graph_add_const(g, "l", sc_i64(10), &c[1]));
  CHECK_OK(kiln_graph_add_const(g, "d", sc_i64(3), &c[2]));
  CHECK_OK(kiln_graph_add_node(g, "Range", "", "r", 3, c, 1, (const char *[]){"y"}, &out));
  int sh, out2;
  CHECK_OK(kiln_graph_add_const(g, "sh", ints(2, V(2, 5)), &sh));
  CHECK_OK(
      kiln_graph_add_node(g, "ConstantOfShape", "", "k", 1, &sh, 1, (const char *[]){"z"}, &out2));
  CHECK_OK(kiln_ops_infer_graph(g));
  CHECK(type_is(&g->values.data[out].type, "i64[4]"));
  CHECK(type_is(&g->values.data[out2].type, "f32[2,5]"));
  kiln_graph_free(g);
}

/* A shape error is an error in the main graph but not in a subgraph (a branch not taken). */
static void test_infer_subgraph_lenient(void) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", 13);
  kiln_graph *subs[2] = {g, kiln_graph_new_sub(g, "then")};
  for (int k = 0; k < 2; k++) {
    kiln_graph *h = subs[k];
    int ids[2], out;
    ids[0] = kiln_graph_add_input(h, k ? "x1" : "x0", kiln_type_tensor(KILN_F32, 2, D(2, 3)));
    CHECK_OK(kiln_graph_add_const(h, k ? "s1" : "s0", ints(2, V(5, -1)), &ids[1]));
    CHECK_OK(kiln_graph_add_node(h, "Reshape", "", "r", 2, ids, 1,
                                 (const char *[]){k ? "y1" : "y0"}, &out));
    kiln_status st = kiln_ops_infer_graph(h);
    CHECK(k ? st == KILN_OK : st != KILN_OK);
    kiln_status_free(st);
    if (k) CHECK(h->values.data[out].type.rank < 0);
  }
  kiln_graph_free(g);
}

/* ---- declared types against inferred ones ---- */
/* Parses text, runs inference; the status. */
static kiln_status infer_text(const char *text, kiln_graph **g) {
  kiln_status st = kiln_graph_parse(text, "declared", g);
  return st ? st : kiln_ops_infer_graph(*g);
}

static const char *type_of(const kiln_graph *g, const char *name, char *buf, size_t n) {
  int id = kiln_graph_find(g, name);
  return id < 0 ? "none" : kiln_type_str(&g->values.data[id].type, buf, n);
}

/* An exporter's symbolic names for dims that inference computes ("unk__1",
 * "Gemmoutput_dim_0") take the computed extents, so the values are static (they used to
 * stay symbolic and make every node after them a reference fallback). */
static void test_inferred_static_beats_declared_symbol(void) {
  kiln_graph *g = NULL;
  CHECK_OK(infer_text("graph @g(%x: f32[2,4], %n: f32[N,4]) -> (%y: f32[Gemm_dim_0,3]) {\n"
                      "  opset \"\" 17\n"
                      "  %w = const f32[3,4] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\n"
                      "  %r = Relu(%x) : f32[unk__1,unk__2]\n"
                      "  %y = Gemm(%r, %w) {transB=1} : f32[Gemm_dim_0,3]\n"
                      "  %m = Neg(%n) : f32[unk__3,?]\n"
                      "  %k = Neg(%n) : f32[?,4]\n"
                      "  return %y\n"
                      "}\n",
                      &g));
  char b[64];
  if (g) {
    CHECK(!strcmp(type_of(g, "r", b, sizeof b), "f32[2,4]"));
    CHECK(!strcmp(type_of(g, "y", b, sizeof b), "f32[2,3]"));
    CHECK(!strcmp(type_of(g, "m", b, sizeof b), "f32[N,4]")); /* inference's symbol */
    CHECK(!strcmp(type_of(g, "k", b, sizeof b), "f32[N,4]"));
  }
  kiln_graph_free(g);
}

/* A declared fact that inference contradicts is bad input naming the value and the
 * node's inputs: a static extent, the element type, the rank. */
static void test_declared_contradiction_is_an_error(void) {
  static const char *const cases[][2] = {
      {"%y = Relu(%x) : f32[3,4]",
       "value 'y' is declared f32[3,4], but the node computes f32[2,4]"},
      {"%y = Relu(%x) : f64[2,4]", "from 'x' (f32[2,4])"},
      {"%y = Relu(%x) : f32[8]", "value 'y' is declared f32[8]"},
      {"%y = Relu(%x) : seq<f32[*]>", "value 'y' is declared seq<f32"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text,
             "graph @g(%%x: f32[2,4]) -> (%%z: f32[2,4]) {\n  opset \"\" 17\n  %s\n  %%z = "
             "Neg(%%x) : f32[2,4]\n  return %%z\n}\n",
             cases[i][0]);
    kiln_graph *g = NULL;
    kiln_status st = infer_text(text, &g);
    CHECK(kiln_status_code(st) == KILN_ERR_INVALID);
    CHECK(st && strstr(kiln_status_message(st), cases[i][1]));
    if (st && !strstr(kiln_status_message(st), cases[i][1]))
      fprintf(stderr, "  case %zu: %s\n", i, kiln_status_message(st));
    kiln_status_free(st);
    kiln_graph_free(g);
  }
}

TEST_MAIN(T(test_reshape_forms), T(test_strings), T(test_index_errors), T(test_slice_forms),
          T(test_split_forms), T(test_squeeze_forms), T(test_pad_modes), T(test_resize_legacy),
          T(test_resize_int_saturate), T(test_unique), T(test_generators), T(test_infer_symbolic),
          T(test_infer_values), T(test_infer_subgraph_lenient),
          T(test_inferred_static_beats_declared_symbol), T(test_declared_contradiction_is_an_error))
