/* ONNX import/export, tensor files, and the reader's handling of malformed input.
 * Node-test models are used when KILN_ONNX_NODE_DIR names the folder of the ONNX
 * backend node tests (onnx/backend/test/data/node); those cases are skipped otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "onnx/onnx.h"
#include "onnx/wire.h"

#include "onnx_builder.h"

static const int64_t dims2[] = {2};

/* x:f32[2] -> Relu -> y */
static void relu_graph(pb *g) {
  pb_str(g, 2, "relu");
  pb_node(g, "Relu", "x", NULL, "y");
  pb_vinfo(g, 11, "x", 1, dims2);
  pb_vinfo(g, 12, "y", 1, dims2);
}

static char *print_graph(const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  return b.data;
}

/* export -> import -> print must equal print of g. */
static void check_roundtrip(const kiln_graph *g) {
  kiln_strbuf bytes = {0};
  CHECK_OK(kiln_onnx_save_bytes(g, &bytes));
  kiln_graph *g2 = NULL;
  CHECK_OK(kiln_onnx_load_bytes(bytes.data, bytes.len, NULL, &g2));
  if (g2) {
    if (!g->ir_version) g2->ir_version = 0; /* exported as the default for its opset */
    char *a = print_graph(g), *b = print_graph(g2);
    CHECK(strcmp(a, b) == 0);
    if (strcmp(a, b) != 0) fprintf(stderr, "--- before\n%s--- after\n%s", a, b);
    free(a);
    free(b);
    kiln_graph_free(g2);
  }
  kiln_strbuf_free(&bytes);
}

/* ---- import of hand-made models ---- */

static void test_minimal_model(void) {
  pb g = {0}, m = {0};
  relu_graph(&g);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    CHECK(gr->nodes.len == 1 && gr->nodes.data[0].op == KILN_OP_Relu);
    CHECK(gr->nodes.data[0].opset == 17);
    CHECK(strcmp(gr->name, "relu") == 0);
    CHECK(gr->inputs.len == 1 && gr->outputs.len == 1);
    CHECK(gr->values.data[gr->inputs.data[0]].type.dims[0].value == 2);
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

/* No ir_version, no producer: found by fuzzing (export used to add producer "kiln"). */
static void test_bare_model(void) {
  pb g = {0}, m = {0}, op = {0};
  relu_graph(&g);
  pb_int(&op, 2, 17);
  pb_msg(&m, 8, &op);
  pb_msg(&m, 7, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    CHECK(gr->producer == NULL && gr->ir_version == 0);
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

static void test_sorts_nodes(void) {
  pb g = {0}, m = {0};
  pb_node(&g, "Relu", "t", NULL, "y"); /* consumer first */
  pb_node(&g, "Neg", "x", NULL, "t");
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    CHECK(gr->nodes.len == 2 && gr->nodes.data[0].op == KILN_OP_Neg);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

static kiln_code load_code(pb *m) { /* loads and frees m; the error code (KILN_OK_CODE if none) */
  kiln_graph *gr = NULL;
  kiln_status st = load(m, &gr);
  kiln_code c = st ? kiln_status_code(st) : KILN_OK_CODE;
  if (st && getenv("KILN_TEST_VERBOSE")) fprintf(stderr, "  %s\n", kiln_status_message(st));
  kiln_status_free(st);
  kiln_graph_free(gr);
  kiln_strbuf_free(m);
  return c;
}

static void test_cycle_and_missing(void) {
  pb g = {0}, m = {0};
  pb_node(&g, "Relu", "b", NULL, "a");
  pb_node(&g, "Neg", "a", NULL, "b");
  pb_vinfo(&g, 12, "a", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);

  pb_node(&g, "Relu", "nope", NULL, "y");
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);

  pb_node(&g, "Relu", "x", NULL, "y"); /* output defined twice */
  pb_node(&g, "Neg", "x", NULL, "y");
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);

  pb_vinfo(&g, 11, "x", 1, dims2); /* graph output never defined */
  pb_vinfo(&g, 12, "zz", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);
}

static void test_duplicate_attribute(void) {
  pb g = {0}, m = {0}, n = {0}, a = {0};
  pb_str(&n, 1, "x"), pb_str(&n, 2, "y"), pb_str(&n, 4, "LeakyRelu");
  pb_str(&a, 1, "alpha"), pb_f32(&a, 2, 0.5f);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "alpha"), pb_f32(&a, 2, 0.25f);
  pb_msg(&n, 5, &a);
  pb_msg(&g, 1, &n);
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);
}

static void test_unsupported_ops(void) {
  pb g = {0}, m = {0}, n = {0};
  pb_node(&g, "NoSuchOp", "x", NULL, "y");
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_UNSUPPORTED);

  pb_str(&n, 1, "x");
  pb_str(&n, 2, "y");
  pb_str(&n, 4, "Relu");
  pb_str(&n, 7, "com.example");
  pb_msg(&g, 1, &n);
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_UNSUPPORTED);
}

static void test_initializers(void) {
  pb g = {0}, m = {0};
  float w[2] = {1.5f, -2};
  pb_tensor(&g, 5, "w", KILN_F32, 1, dims2, w, sizeof w);
  pb_node(&g, "Add", "x", "w", "y");
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 11, "w", 1, dims2); /* listed as input too: still a constant */
  pb_vinfo(&g, 12, "y", 1, dims2);
  uint8_t i4[2] = {0x21, 0x0F}; /* int4 [1, 2, -1], packed low nibble first */
  int64_t d3[] = {3};
  pb_tensor(&g, 5, "q", KILN_I4, 1, d3, i4, 2);
  /* sparse [2,3] named "s" with values 7, 9 at linear indices 1 and 4 */
  pb sp = {0}, vt = {0};
  float vals[2] = {7, 9};
  int64_t idx[2] = {1, 4};
  pb_int(&vt, 1, 2), pb_int(&vt, 2, KILN_F32), pb_str(&vt, 8, "s"), pb_bytes(&vt, 9, vals, 8);
  pb_msg(&sp, 1, &vt);
  pb_tensor(&sp, 2, NULL, KILN_I64, 1, dims2, idx, sizeof idx);
  pb_int(&sp, 3, 2), pb_int(&sp, 3, 3);
  pb_msg(&g, 15, &sp);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    CHECK(gr->inputs.len == 1);
    int wid = kiln_graph_find(gr, "w"), qid = kiln_graph_find(gr, "q"),
        sid = kiln_graph_find(gr, "s");
    CHECK(wid >= 0 && gr->values.data[wid].kind == KILN_VALUE_CONST);
    if (wid >= 0 && gr->values.data[wid].data)
      CHECK(((float *)gr->values.data[wid].data->data)[1] == -2.0f);
    CHECK(qid >= 0 && gr->values.data[qid].data->numel == 3);
    if (qid >= 0) {
      const kiln_tensor *q = gr->values.data[qid].data;
      CHECK(kiln_load_i64(KILN_I4, q->data, 0) == 1 && kiln_load_i64(KILN_I4, q->data, 1) == 2 &&
            kiln_load_i64(KILN_I4, q->data, 2) == -1);
    }
    CHECK(sid >= 0);
    if (sid >= 0) {
      const kiln_tensor *s = gr->values.data[sid].data;
      const float *f = s->data;
      CHECK(s->rank == 2 && s->numel == 6 && f[0] == 0 && f[1] == 7 && f[4] == 9 && f[5] == 0);
    }
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

/* Typed data fields: int32_data for f16/bool/u2, float_data, int64_data, string_data. */
static void test_typed_fields(void) {
  pb g = {0}, m = {0}, t = {0};
  pb_int(&t, 1, 3), pb_int(&t, 2, KILN_F16), pb_str(&t, 8, "h");
  pb_int(&t, 5, 0x3c00), pb_int(&t, 5, 0xc000), pb_int(&t, 5, 0); /* 1, -2, 0 unpacked */
  pb_msg(&g, 5, &t);
  pb_int(&t, 1, 5), pb_int(&t, 2, KILN_U2), pb_str(&t, 8, "c");
  pb_int(&t, 5, 0xE4), pb_int(&t, 5, 0x03); /* 0,1,2,3 | 3 */
  pb_msg(&g, 5, &t);
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_STRING), pb_str(&t, 8, "str");
  pb_str(&t, 6, "ab"), pb_str(&t, 6, "");
  pb_msg(&g, 5, &t);
  uint8_t packed[] = {2, 0xff, 0x01}; /* packed int64 [2, 255] */
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_I64), pb_str(&t, 8, "i");
  pb_bytes(&t, 7, packed, 3);
  pb_msg(&g, 5, &t);
  pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "f"), pb_f32(&t, 4, 2.5f); /* scalar, unpacked float */
  pb_msg(&g, 5, &t);
  pb_node(&g, "Identity", "h", NULL, "y");
  pb_vinfo(&g, 12, "y", -1, NULL);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    const kiln_tensor *h = gr->values.data[kiln_graph_find(gr, "h")].data;
    const kiln_tensor *c = gr->values.data[kiln_graph_find(gr, "c")].data;
    const kiln_tensor *s = gr->values.data[kiln_graph_find(gr, "str")].data;
    const kiln_tensor *i = gr->values.data[kiln_graph_find(gr, "i")].data;
    const kiln_tensor *f = gr->values.data[kiln_graph_find(gr, "f")].data;
    CHECK(kiln_load_f64(KILN_F16, h->data, 1) == -2.0);
    CHECK(c->numel == 5 && ((uint8_t *)c->data)[2] == 2 && ((uint8_t *)c->data)[4] == 3);
    CHECK(strcmp(((char **)s->data)[0], "ab") == 0 && ((char **)s->data)[1][0] == 0);
    CHECK(((int64_t *)i->data)[1] == 255);
    CHECK(f->rank == 0 && ((float *)f->data)[0] == 2.5f);
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

/* Attributes of every kind, and a subgraph that uses an outer value. */
static void test_attributes(void) {
  pb g = {0}, m = {0}, n = {0}, a = {0};
  pb_str(&n, 1, "c"), pb_str(&n, 2, "y"), pb_str(&n, 4, "If");
  pb then = {0}, els = {0};
  pb_node(&then, "Relu", "x", NULL, "t1");
  pb_vinfo(&then, 12, "t1", 1, dims2);
  pb_node(&els, "Neg", "x", NULL, "e1");
  pb_vinfo(&els, 12, "e1", 1, dims2);
  pb_str(&a, 1, "then_branch"), pb_int(&a, 20, KILN_ATTR_GRAPH), pb_msg(&a, 6, &then);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "else_branch"), pb_int(&a, 20, KILN_ATTR_GRAPH), pb_msg(&a, 6, &els);
  pb_msg(&n, 5, &a);
  /* extra attributes of the other kinds (If ignores them) */
  pb_str(&a, 1, "af"), pb_f32(&a, 2, 0.25f); /* no type field: inferred */
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "ai"), pb_int(&a, 20, KILN_ATTR_INT), pb_int(&a, 3, -7);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "as"), pb_int(&a, 20, KILN_ATTR_STRING), pb_str(&a, 4, "hello");
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "afs"), pb_int(&a, 20, KILN_ATTR_FLOATS), pb_f32(&a, 7, 1), pb_f32(&a, 7, 2);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "ais"), pb_int(&a, 20, KILN_ATTR_INTS), pb_int(&a, 8, 3), pb_int(&a, 8, -4);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "aempty"), pb_int(&a, 20, KILN_ATTR_INTS);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "ass"), pb_int(&a, 20, KILN_ATTR_STRINGS), pb_str(&a, 9, "p"), pb_str(&a, 9, "q");
  pb_msg(&n, 5, &a);
  float tv[2] = {3, 4};
  pb_str(&a, 1, "at"), pb_int(&a, 20, KILN_ATTR_TENSOR);
  pb_tensor(&a, 5, NULL, KILN_F32, 1, dims2, tv, sizeof tv);
  pb_msg(&n, 5, &a);
  pb_str(&a, 1, "ats"), pb_int(&a, 20, KILN_ATTR_TENSORS);
  pb_tensor(&a, 10, NULL, KILN_F32, 1, dims2, tv, sizeof tv);
  pb_tensor(&a, 10, NULL, KILN_F32, 0, NULL, tv, 4);
  pb_msg(&n, 5, &a);
  pb tp = {0}, tt = {0}, sq = {0}, inner = {0};
  pb_int(&tt, 1, KILN_I64);
  pb_msg(&inner, 1, &tt);
  pb_msg(&sq, 1, &inner);
  pb_msg(&tp, 4, &sq); /* seq<i64> */
  pb_str(&a, 1, "atp"), pb_int(&a, 20, KILN_ATTR_TYPE_PROTO), pb_msg(&a, 14, &tp);
  pb_msg(&n, 5, &a);
  pb_msg(&g, 1, &n);
  int64_t sc[] = {0};
  pb_vinfo(&g, 11, "c", 0, sc);
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    const kiln_node *nd = &gr->nodes.data[0];
    kiln_graph *tb = NULL;
    CHECK_OK(kiln_node_graph(nd, "then_branch", &tb));
    CHECK(tb && tb->parent == gr && tb->nodes.len == 1);
    if (tb) {
      int xid = kiln_graph_find(tb, "x");
      CHECK(xid >= 0 && tb->values.data[xid].kind == KILN_VALUE_OUTER);
    }
    const kiln_attr *at = kiln_node_attr(nd, "af");
    CHECK(at && at->kind == KILN_ATTR_FLOAT && at->f == 0.25f);
    at = kiln_node_attr(nd, "ais");
    CHECK(at && at->n == 2 && at->ints[1] == -4);
    at = kiln_node_attr(nd, "aempty");
    CHECK(at && at->kind == KILN_ATTR_INTS && at->n == 0);
    at = kiln_node_attr(nd, "ass");
    CHECK(at && at->n == 2 && strcmp(at->strings[1], "q") == 0);
    at = kiln_node_attr(nd, "atp");
    CHECK(at && at->tp.kind == KILN_TYPE_SEQUENCE && at->tp.dtype == KILN_I64);
    at = kiln_node_attr(nd, "ats");
    CHECK(at && at->n == 2 && at->tensors[1]->rank == 0);
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
}

/* A model calling a local function twice; the function imports opset fn_opset of "". */
static void function_model(pb *m, int64_t fn_opset) {
  pb fn = {0}, n = {0}, a = {0}, op = {0};
  pb_str(&fn, 1, "Scale"), pb_str(&fn, 10, "local");
  pb_str(&fn, 4, "X"), pb_str(&fn, 5, "Y"), pb_str(&fn, 6, "alpha");
  pb_str(&n, 1, "X"), pb_str(&n, 1, "X"), pb_str(&n, 2, "T"), pb_str(&n, 4, "Mul");
  pb_msg(&fn, 7, &n); /* FunctionProto.node */
  pb_str(&n, 1, "T"), pb_str(&n, 2, "Y"), pb_str(&n, 4, "LeakyRelu");
  pb_str(&a, 1, "alpha"), pb_int(&a, 20, KILN_ATTR_FLOAT), pb_str(&a, 21, "alpha");
  pb_msg(&n, 5, &a);
  pb_msg(&fn, 7, &n);
  pb_int(&op, 2, fn_opset);
  pb_msg(&fn, 9, &op);
  pb g = {0};
  pb_str(&n, 1, "x"), pb_str(&n, 2, "h"), pb_str(&n, 4, "Scale"), pb_str(&n, 7, "local");
  pb_str(&a, 1, "alpha"), pb_f32(&a, 2, 0.5f);
  pb_msg(&n, 5, &a);
  pb_msg(&g, 1, &n);
  pb_str(&n, 1, "h"), pb_str(&n, 2, "y"), pb_str(&n, 4, "Scale"), pb_str(&n, 7, "local");
  pb_msg(&g, 1, &n);
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(m, &g);
  pb_msg(m, 25, &fn);
}

/* A model-local function called twice, with an attribute reference. */
static void test_function_inlining(void) {
  pb m = {0};
  function_model(&m, 17);
  kiln_graph *gr = NULL;
  CHECK_OK(load(&m, &gr));
  if (gr) {
    CHECK(gr->nodes.len == 4);
    if (gr->nodes.len == 4) {
      CHECK(gr->nodes.data[1].op == KILN_OP_LeakyRelu && gr->nodes.data[1].opset == 17);
      const kiln_attr *al = kiln_node_attr(&gr->nodes.data[1], "alpha");
      CHECK(al && al->f == 0.5f);
      CHECK(!kiln_node_attr(&gr->nodes.data[3], "alpha")); /* not given: op default */
    }
    check_roundtrip(gr);
    kiln_graph_free(gr);
  }
  kiln_strbuf_free(&m);
  function_model(&m, 16); /* another opset version than the model's */
  CHECK(load_code(&m) == KILN_ERR_UNSUPPORTED);
}

/* ---- malformed input ---- */

typedef struct bad_case {
  const char *what;
  const char *bytes;
  size_t len;
} bad_case;

#define BAD(what, lit)                                                                             \
  { what, lit, sizeof(lit) - 1 }

static void test_malformed_bytes(void) {
  static const bad_case cases[] = {
      BAD("truncated varint", "\x08\xff"),
      BAD("varint over 10 bytes", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
      BAD("varint over 64 bits", "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"),
      BAD("wrong wire type for ir_version", "\x0a\x01\x00"),
      BAD("group", "\x0b\x0c"),
      BAD("wire type 7", "\x0f"),
      BAD("field number 0", "\x00\x01"),
      BAD("length past the end", "\x3a\x05\x0a\x00"),
      BAD("truncated fixed32", "\x3a\x02\x0d\x00"),
      BAD("no graph", "\x08\x07"),
      BAD("empty", ""),
      BAD("graph with bad node", "\x3a\x04\x0a\x02\x0a\xff"),
      BAD("string length past the end", "\x12\x7f\x41"),
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kiln_graph *g = NULL;
    kiln_status st = kiln_onnx_load_bytes(cases[i].bytes, cases[i].len, NULL, &g);
    CHECK(st && kiln_status_code(st) == KILN_ERR_INVALID);
    if (!st || kiln_status_code(st) != KILN_ERR_INVALID)
      fprintf(stderr, "  case '%s': %s\n", cases[i].what, st ? kiln_status_message(st) : "OK");
    else if (getenv("KILN_TEST_VERBOSE"))
      fprintf(stderr, "  %s -> %s\n", cases[i].what, kiln_status_message(st));
    kiln_status_free(st);
    kiln_graph_free(g);
  }
}

/* An initializer's tensor message as given, in an Identity model. */
static kiln_code tensor_case(pb *t, const char *base_dir) {
  pb g = {0}, m = {0};
  pb_msg(&g, 5, t);
  pb_node(&g, "Identity", "w", NULL, "y");
  pb_vinfo(&g, 12, "y", -1, NULL);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  kiln_status st = kiln_onnx_load_bytes(m.data, m.len, base_dir, &gr);
  kiln_code c = st ? kiln_status_code(st) : KILN_OK_CODE;
  if (st && getenv("KILN_TEST_VERBOSE")) fprintf(stderr, "  %s\n", kiln_status_message(st));
  kiln_status_free(st);
  kiln_graph_free(gr);
  kiln_strbuf_free(&m);
  return c;
}

static void test_bad_tensors(void) {
  pb t = {0};
  uint8_t four[4] = {0};
  pb_int(&t, 1, -1), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_bytes(&t, 9, four, 4);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* negative dim */
  pb_int(&t, 1, (int64_t)1 << 40), pb_int(&t, 1, (int64_t)1 << 40), pb_int(&t, 2, KILN_F32);
  pb_str(&t, 8, "w"), pb_bytes(&t, 9, four, 4);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* element count overflows */
  pb_int(&t, 1, (int64_t)1 << 40), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w");
  pb_bytes(&t, 9, four, 4);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* huge, with 4 bytes of data */
  pb_int(&t, 1, 3), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_bytes(&t, 9, four, 4);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* raw_data size mismatch */
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_int(&t, 5, 1), pb_int(&t, 5, 1);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* int32_data for FLOAT */
  pb_int(&t, 1, 2), pb_int(&t, 2, 99), pb_str(&t, 8, "w");
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* bad dtype */
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_C64), pb_str(&t, 8, "w");
  CHECK(tensor_case(&t, NULL) == KILN_ERR_UNSUPPORTED); /* complex */
  for (int i = 0; i < 9; i++) pb_int(&t, 1, 1);
  pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_bytes(&t, 9, four, 4);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_UNSUPPORTED); /* rank 9 */
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w");
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* no data */
  pb_int(&t, 1, 2), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_bytes(&t, 4, four, 3);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* packed floats, not a multiple of 4 */
  pb_int(&t, 1, 1), pb_int(&t, 2, KILN_I64), pb_str(&t, 8, "w"), pb_bytes(&t, 7, "\xff", 1);
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* packed varint cut short */
}

/* External data: a tensor file next to the model, and attempts to leave the folder. */
static void ext_tensor(pb *t, const char *location) {
  pb e = {0};
  pb_int(t, 1, 2), pb_int(t, 2, KILN_F32), pb_str(t, 8, "w"), pb_int(t, 14, 1);
  pb_str(&e, 1, "location"), pb_str(&e, 2, location);
  pb_msg(t, 13, &e);
}

/* A template "$TMPDIR/kiln_<tag>_XXXXXX" (TMPDIR defaults to /tmp) for mkdtemp. */
static void temp_template(char *buf, size_t n, const char *tag) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, n, "%s/kiln_%s_XXXXXX", base && *base ? base : "/tmp", tag);
}

static void test_external_data(void) {
  char dir[256], outside[256];
  temp_template(dir, sizeof dir, "onnx");
  temp_template(outside, sizeof outside, "onnx_out");
  if (!mkdtemp(dir) || !mkdtemp(outside)) {
    CHECK(!"mkdtemp");
    return;
  }
  char path[512], link[512], far[512];
  float w[2] = {5, 6};
  snprintf(path, sizeof path, "%s/w.bin", dir);
  snprintf(far, sizeof far, "%s/secret.bin", outside);
  snprintf(link, sizeof link, "%s/link.bin", dir);
  CHECK_OK(kiln_write_file(path, w, sizeof w));
  CHECK_OK(kiln_write_file(far, w, sizeof w));
  CHECK(symlink(far, link) == 0);
  pb t = {0};
  ext_tensor(&t, "w.bin");
  CHECK(tensor_case(&t, dir) == KILN_OK_CODE);
  ext_tensor(&t, "./sub/../w.bin");
  CHECK(tensor_case(&t, dir) == KILN_OK_CODE);
  ext_tensor(&t, "w.bin");
  CHECK(tensor_case(&t, NULL) == KILN_ERR_INVALID); /* no folder: forbidden */
  ext_tensor(&t, far);
  CHECK(tensor_case(&t, dir) == KILN_ERR_INVALID); /* absolute */
  char rel[600];
  snprintf(rel, sizeof rel, "../%s/secret.bin", strrchr(outside, '/') + 1);
  ext_tensor(&t, rel);
  CHECK(tensor_case(&t, dir) == KILN_ERR_INVALID); /* .. escape */
  ext_tensor(&t, "link.bin");
  CHECK(tensor_case(&t, dir) == KILN_ERR_INVALID); /* symlink escape */
  ext_tensor(&t, "missing.bin");
  CHECK(tensor_case(&t, dir) == KILN_ERR_IO);
  pb e = {0};
  pb_int(&t, 1, 4), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_int(&t, 14, 1);
  pb_str(&e, 1, "location"), pb_str(&e, 2, "w.bin"), pb_msg(&t, 13, &e);
  CHECK(tensor_case(&t, dir) == KILN_ERR_INVALID); /* file too short */
  unlink(link), unlink(path), unlink(far), rmdir(dir), rmdir(outside);
}

/* Subgraphs nested deeper than the reader allows: an error, not a stack overflow. */
static void test_deep_nesting(void) {
  pb g = {0};
  relu_graph(&g);
  for (int i = 0; i < 200; i++) {
    pb n = {0}, a = {0}, outer = {0};
    pb_str(&n, 1, "c"), pb_str(&n, 2, "y"), pb_str(&n, 4, "If");
    pb_str(&a, 1, "then_branch"), pb_msg(&a, 6, &g);
    pb_msg(&n, 5, &a);
    pb_msg(&outer, 1, &n);
    g = outer;
  }
  pb m = {0};
  pb_model(&m, &g);
  CHECK(load_code(&m) == KILN_ERR_INVALID);
}

/* Every prefix of a valid model loads or fails cleanly. */
static void test_truncations(void) {
  pb g = {0}, m = {0};
  float w[2] = {1, 2};
  pb_tensor(&g, 5, "w", KILN_F32, 1, dims2, w, sizeof w);
  pb_node(&g, "Add", "x", "w", "y");
  pb_vinfo(&g, 11, "x", 1, dims2);
  pb_vinfo(&g, 12, "y", 1, dims2);
  pb_model(&m, &g);
  int errors = 0;
  for (size_t n = 0; n < m.len; n++) {
    kiln_graph *gr = NULL;
    char *copy = malloc(n + 1); /* exact size, so ASan sees any over-read */
    memcpy(copy, m.data, n);
    kiln_status st = kiln_onnx_load_bytes(copy, n, NULL, &gr);
    errors += st != KILN_OK;
    kiln_status_free(st);
    kiln_graph_free(gr);
    free(copy);
  }
  CHECK(errors > 0);
  kiln_strbuf_free(&m);
}

/* ---- tensor files ---- */

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char buf[512];
  if (!tmpdir[0]) {
    temp_template(tmpdir, sizeof tmpdir, "onnx_t");
    if (!mkdtemp(tmpdir)) return "/nonexistent/x";
  }
  snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
  return buf;
}

static bool same_tensor(const kiln_tensor *a, const kiln_tensor *b) {
  if (a->dtype != b->dtype || !kiln_tensor_same_shape(a, b)) return false;
  if (a->dtype != KILN_STRING) return memcmp(a->data, b->data, kiln_tensor_nbytes(a)) == 0;
  for (int64_t i = 0; i < a->numel; i++)
    if (strcmp(((char **)a->data)[i], ((char **)b->data)[i]) != 0) return false;
  return true;
}

static kiln_tensor *make_tensor(kiln_dtype dt, int rank, const int64_t *dims) {
  kiln_tensor *t = NULL;
  CHECK_OK(kiln_tensor_new(dt, rank, dims, &t));
  if (!t) return NULL;
  for (int64_t i = 0; i < t->numel; i++) {
    if (dt == KILN_STRING) {
      char s[32];
      snprintf(s, sizeof s, "s%lld", (long long)i);
      ((char **)t->data)[i] = kiln_xstrdup(s);
    } else {
      kiln_store_f64(dt, t->data, (size_t)i, (double)((i * 7) % 5) - 2.0);
    }
  }
  return t;
}

static void test_pb_roundtrip(void) {
  static const kiln_dtype dts[] = {
      KILN_F32, KILN_U8,     KILN_I8,       KILN_U16,        KILN_I16,    KILN_I32,
      KILN_I64, KILN_STRING, KILN_BOOL,     KILN_F16,        KILN_F64,    KILN_U32,
      KILN_U64, KILN_BF16,   KILN_F8E4M3FN, KILN_F8E4M3FNUZ, KILN_F8E5M2, KILN_F8E5M2FNUZ,
      KILN_U4,  KILN_I4,     KILN_F4E2M1,   KILN_F8E8M0,     KILN_U2,     KILN_I2};
  int64_t dims[] = {3, 5}; /* odd count: exercises sub-byte padding */
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    kiln_tensor *t = make_tensor(dts[i], 2, dims), *u = NULL;
    if (!t) continue;
    const char *p = tmp_path("t.pb");
    CHECK_OK(kiln_pb_write_tensor(p, t, "name"));
    CHECK_OK(kiln_pb_read_tensor(p, &u));
    CHECK(u && same_tensor(t, u));
    if (u && !same_tensor(t, u)) fprintf(stderr, "  dtype %s differs\n", kiln_dtype_name(dts[i]));
    kiln_tensor_free(t);
    kiln_tensor_free(u);
  }
  kiln_tensor *s = make_tensor(KILN_F32, 0, NULL), *u = NULL; /* scalar */
  CHECK_OK(kiln_pb_write_tensor(tmp_path("s.pb"), s, NULL));
  kiln_val *v = NULL;
  CHECK_OK(kiln_tensor_file_read(tmp_path("s.pb"), NULL, &v));
  CHECK(v && v->kind == KILN_TYPE_TENSOR && same_tensor(s, v->t));
  kiln_val_free(v);
  kiln_tensor_free(s);
  kiln_tensor_free(u);
}

static void test_npy_roundtrip(void) {
  static const kiln_dtype dts[] = {KILN_F32, KILN_F64, KILN_F16, KILN_I8,  KILN_I16, KILN_I32,
                                   KILN_I64, KILN_U8,  KILN_U16, KILN_U32, KILN_U64, KILN_BOOL};
  int64_t dims[] = {2, 3, 4};
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    for (int rank = 0; rank <= 3; rank++) {
      kiln_tensor *t = make_tensor(dts[i], rank, dims), *u = NULL;
      if (!t) continue;
      CHECK_OK(kiln_npy_write(tmp_path("t.npy"), t));
      CHECK_OK(kiln_npy_read(tmp_path("t.npy"), &u));
      CHECK(u && same_tensor(t, u));
      kiln_tensor_free(t);
      kiln_tensor_free(u);
    }
  }
  kiln_tensor *b = make_tensor(KILN_BF16, 1, dims);
  CHECK_ERR(kiln_npy_write(tmp_path("b.npy"), b), KILN_ERR_UNSUPPORTED);
  kiln_tensor_free(b);
  /* hand-written headers */
  static const char fortran[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': "
                                "True, 'shape': (1,), }                  \n\0\0\0\0";
  CHECK_OK(kiln_write_file(tmp_path("f.npy"), fortran, sizeof fortran - 1));
  kiln_tensor *u = NULL;
  CHECK_ERR(kiln_npy_read(tmp_path("f.npy"), &u), KILN_ERR_UNSUPPORTED);
  static const char bf[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<V2', 'fortran_order': "
                           "False, 'shape': (1,), }                 \n\0\0";
  CHECK_OK(kiln_write_file(tmp_path("v.npy"), bf, sizeof bf - 1));
  CHECK_ERR(kiln_npy_read(tmp_path("v.npy"), &u), KILN_ERR_UNSUPPORTED);
  static const char shortd[] = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': "
                               "False, 'shape': (2,), }                 \n\0\0\0\0";
  CHECK_OK(kiln_write_file(tmp_path("s.npy"), shortd, sizeof shortd - 1));
  CHECK_ERR(kiln_npy_read(tmp_path("s.npy"), &u), KILN_ERR_INVALID);
  CHECK_OK(kiln_write_file(tmp_path("j.npy"), "junk", 4));
  CHECK_ERR(kiln_npy_read(tmp_path("j.npy"), &u), KILN_ERR_INVALID);
}

/* ---- ONNX node tests (KILN_ONNX_NODE_DIR) ---- */

static const char *node_dir(void) {
  const char *d = getenv("KILN_ONNX_NODE_DIR");
  return d && d[0] ? d : NULL;
}

/* Loads <dir>/<name>/model.onnx, checks a round trip, and reads its test data. */
static void node_case(const char *name, int min_nodes) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/model.onnx", node_dir(), name);
  kiln_graph *g = NULL;
  CHECK_OK(kiln_onnx_load(path, &g));
  if (!g) {
    fprintf(stderr, "  in case %s\n", name);
    return;
  }
  CHECK(g->nodes.len >= min_nodes);
  check_roundtrip(g);
  for (int i = 0; i < g->inputs.len + g->outputs.len; i++) {
    bool in = i < g->inputs.len;
    int id = in ? g->inputs.data[i] : g->outputs.data[i - g->inputs.len];
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/%s_%d.pb", node_dir(), name,
             in ? "input" : "output", in ? i : i - g->inputs.len);
    if (access(path, R_OK) != 0) continue;
    kiln_val *v = NULL;
    CHECK_OK(kiln_pb_read_value(path, &g->values.data[id].type, &v));
    CHECK(v && v->kind == g->values.data[id].type.kind);
    kiln_val_free(v);
  }
  kiln_graph_free(g);
}

static void test_node_models(void) {
  if (!node_dir()) {
    printf("(KILN_ONNX_NODE_DIR unset: node-test models skipped)\n");
    return;
  }
  node_case("test_add", 1);
  node_case("test_conv_with_strides_padding", 1);
  node_case("test_constant", 1);
  node_case("test_if", 1);
  node_case("test_loop11", 1);
  node_case("test_scan9_sum", 1);
  node_case("test_sequence_insert_at_back", 1);
  node_case("test_optional_get_element_optional_sequence", 1);
  node_case("test_optional_has_element_empty_optional_input", 1);
  node_case("test_if_opt", 1);
  node_case("test_loop16_seq_none", 1);
  node_case("test_cast_FLOAT_to_INT4", 1);
  node_case("test_dequantizelinear_uint2", 1);
  node_case("test_identity_opt", 1);
  node_case("test_strnormalizer_export_monday_casesensintive_lower", 1);
  node_case("test_layer_normalization_2d_axis0_expanded", 5);
}

TEST_MAIN(T(test_minimal_model), T(test_bare_model), T(test_sorts_nodes), T(test_cycle_and_missing),
          T(test_unsupported_ops), T(test_duplicate_attribute), T(test_initializers),
          T(test_typed_fields), T(test_attributes), T(test_function_inlining),
          T(test_malformed_bytes), T(test_bad_tensors), T(test_external_data), T(test_deep_nesting),
          T(test_truncations), T(test_pb_roundtrip), T(test_npy_roundtrip), T(test_node_models))
