/* Graph IR text form: printer/parser round trips, bit-exact constants, parser
 * diagnostics, and the verifier. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"

/* ---- helpers ---- */
static char *print_graph(const kiln_graph *g, int64_t elide) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, elide);
  return b.data ? b.data : strdup("");
}

/* Parses text, checks it verifies and prints back identically (text is canonical). */
static void check_canonical(const char *text) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "snippet", &g);
  if (st) {
    fprintf(stderr, "parse failed: %s\n", kiln_status_message(st));
    kiln_status_free(st);
    CHECK(0);
    return;
  }
  CHECK_OK(kiln_graph_verify(g));
  char *out = print_graph(g, -1);
  if (strcmp(out, text) != 0) {
    fprintf(stderr, "round trip differs:\n--- in\n%s--- out\n%s", text, out);
    CHECK(0);
  }
  free(out);
  kiln_graph_free(g);
}

/* Prints g, parses the text, prints again: the two texts must be equal. Returns text 1. */
static char *check_round_trip(const kiln_graph *g) {
  char *t1 = print_graph(g, -1);
  kiln_graph *g2 = NULL;
  CHECK_OK(kiln_graph_parse(t1, "printed", &g2));
  if (!g2) return t1;
  CHECK_OK(kiln_graph_verify(g2));
  char *t2 = print_graph(g2, -1);
  if (strcmp(t1, t2) != 0) {
    fprintf(stderr, "print -> parse -> print differs:\n--- 1\n%s--- 2\n%s", t1, t2);
    CHECK(0);
  }
  free(t2);
  kiln_graph_free(g2);
  return t1;
}

/* ---- round trips of canonical snippets ---- */
static const char *const snippets[] = {
    /* the design example */
    "graph @tiny(%x: f32[batch,3,32,32]) -> (%y: f32[batch,10]) {\n"
    "  opset \"\" 17\n"
    "  %w = const f32[2,3,1,1] [1, -2.5, 0.1, 3e+38, -0, 1e-45]\n"
    "  %c = Conv(%x, %w) {pads=[0,0,0,0], strides=[1,1]} : f32[batch,2,32,32] @conv1\n"
    "  %r = Relu(%c) : f32[batch,2,32,32]\n"
    "  %f = Flatten(%r) {axis=1} : f32[batch,2048]\n"
    "  %y = Gemm(%f, %f) {alpha=1.0, transB=1} : f32[batch,10]\n"
    "  return %y\n"
    "}\n",
    /* quoted names, omitted inputs/outputs, unknown types and dims, node names, zero outputs */
    "graph @\"my graph\"(%\"in put:0\": f32[?,\"seq len\",3], %m: ?) -> (%\"onnx::Add_1\": "
    "f32[*]) {\n"
    "  opset \"\" 21\n"
    "  opset \"com.microsoft\" 1\n"
    "  ir_version 9\n"
    "  producer \"pytorch \\\"2.1\\\"\\n\"\n"
    "  %a/b.c, _ = Dropout(%\"in put:0\", _, _) : f32[?,\"seq len\",3] @/layer.0/Dropout\n"
    "  %\"onnx::Add_1\" = Add(%a/b.c, %m) : f32[*]\n"
    "  %u = Relu(%m)\n"
    "  _ = Identity(%u)\n"
    "  com.microsoft::FusedGemm(%u) {activation=\"Relu\"}\n"
    "  my.domain::\"Weird Op\"<3>(%u)\n"
    "  %v = Relu<13>(%u) @n\n"
    "  return %\"onnx::Add_1\"\n"
    "}\n",
    /* sequence and optional types, every attribute kind */
    "graph @types(%s: seq<f32[2,?]>, %o: opt<i64[]>, %q: opt<seq<bf16[*]>>, %z: undef[3]) -> () {\n"
    "  opset \"\" 18\n"
    "  %a = Identity(%s) {f=0.5, fs=[1.0,-0.0,inf,nan,-nan,nan:0x7fc00001], i=-7, "
    "is=[1,2,-3], s=\"tab\\there\\x00\\xff\", ss=[\"a\", \"\\\"b\\\"\"], t=i64[2] [1, -1], "
    "ts=[f16[] [0.1], bool[3] [true, false, 2]], sp=sparse f32[1] [2], sps=sparse_tensors[], "
    "tp=type opt<seq<u8[1]>>, tps=[type ?, type f8e4m3fn[7]], u=undefined, e1=ints[], "
    "e2=floats[], e3=strings[], e4=tensors[], e5=graphs[], e6=types[], \"odd name\"=1, "
    "\"nan\"=2.0} : seq<f32[2,?]>\n"
    "  return\n"
    "}\n",
    /* subgraphs with outer references, nested two deep */
    "graph @main(%c: bool[], %x: f32[2]) -> (%r: f32[2]) {\n"
    "  opset \"\" 17\n"
    "  %k = const f32[2] [1, 2]\n"
    "  %y = Neg(%x) : f32[2]\n"
    "  %r = If(%c) {else_branch=graph @else() -> (%y: f32[2]) {\n"
    "    outer %y\n"
    "    return %y\n"
    "  }, then_branch=graph @then() -> (%t: f32[2]) {\n"
    "    outer %x, %k, %c\n"
    "    %t = If(%c) {else_branch=graph @e2() -> (%x: f32[2]) {\n"
    "      outer %x\n"
    "      return %x\n"
    "    }, then_branch=graph @t2() -> (%s: f32[2]) {\n"
    "      outer %x, %k\n"
    "      %s = Add(%x, %k) : f32[2]\n"
    "      return %s\n"
    "    }} : f32[2]\n"
    "    return %t\n"
    "  }} : f32[2]\n"
    "  return %r\n"
    "}\n",
    /* graph lists (Loop-like), constants of several dtypes, strings */
    "graph @g() -> (%s: string[2], %b: bool[0]) {\n"
    "  %s = const string[2] [\"\", \"caf\\xc3\\xa9 \\\\ \\r\\n\"]\n"
    "  %b = const bool[0] []\n"
    "  %h = const f16[4] [65504, -inf, 6e-08, nan]\n"
    "  %u = const u64[2] [18446744073709551615, 0]\n"
    "  %i = const i4[3] [-8, 7, 0]\n"
    "  Foo::Bar() {gs=[graph @a() -> () {\n"
    "    return\n"
    "  }, graph @b(%p: f32[]) -> (%p: f32[]) {\n"
    "    return %p\n"
    "  }]}\n"
    "  return %s, %b\n"
    "}\n",
    /* keywords and odd words quoted as op types, domains and dims */
    "graph @k(%x: f32[\"nan\",\"3\",\"inf\",_a]) -> () {\n"
    "  \"opset\"::\"return\"(%x)\n"
    "  \"const\"::\"_\"(%x)\n"
    "  %o = \"outer\"::Foo(%x) : f32[\"\"]\n"
    "  return\n"
    "}\n",
};

static void test_snippets(void) {
  for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++) check_canonical(snippets[i]);
}

/* Non-canonical input parses and prints in canonical form (comments, spacing, implicit
 * outer references, ints promoted in float lists, missing types). */
static void test_lenient_input(void) {
  const char *in = "# a comment\n"
                   "graph @m(%x:f32[2],%c:bool[])->(%r:f32[2]){  # trailing\n"
                   "opset \"ai.onnx\" 17\n"
                   "%r=If(%c){then_branch=graph@t()->(%y:f32[2]){%y=Neg(%x):f32[2] return %y},"
                   "else_branch=graph @e()->(%x:f32[2]){return %x}, fl=[1,2.5], w=0x1p-2}:f32[2]\n"
                   "return %r}";
  const char *want = "graph @m(%x: f32[2], %c: bool[]) -> (%r: f32[2]) {\n"
                     "  opset \"\" 17\n"
                     "  %r = If(%c) {then_branch=graph @t() -> (%y: f32[2]) {\n"
                     "    outer %x\n"
                     "    %y = Neg(%x) : f32[2]\n"
                     "    return %y\n"
                     "  }, else_branch=graph @e() -> (%x: f32[2]) {\n"
                     "    outer %x\n"
                     "    return %x\n"
                     "  }, fl=[1.0,2.5], w=0.25} : f32[2]\n"
                     "  return %r\n"
                     "}\n";
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(in, "lenient", &g));
  if (!g) return;
  CHECK_OK(kiln_graph_verify(g));
  char *out = print_graph(g, -1);
  bool same = strcmp(out, want) == 0;
  if (!same) fputs(out, stderr);
  CHECK(same);
  free(out);
  kiln_graph_free(g);
}

/* ---- a graph built with the builder API, covering every feature ---- */
static kiln_tensor *make_tensor(kiln_dtype dt, int rank, const int64_t *dims) {
  kiln_tensor *t = NULL;
  kiln_status st = kiln_tensor_new(dt, rank, dims, &t);
  if (st) abort();
  return t;
}

static void add_every_attr(kiln_graph *g, int nid, kiln_graph *sub) {
  kiln_node_add_attr(g, nid, "f", KILN_ATTR_FLOAT)->f = 3.0f;
  kiln_node_add_attr(g, nid, "i", KILN_ATTR_INT)->i = INT64_MIN;
  kiln_attr *a = kiln_node_add_attr(g, nid, "s", KILN_ATTR_STRING);
  a->s = "a\0b\"\\";
  a->s_len = 5;
  kiln_tensor *t = make_tensor(KILN_F64, 1, (int64_t[]){2});
  ((double *)t->data)[0] = 0.1;
  ((double *)t->data)[1] = -1e-310;
  kiln_graph_own_tensor(g, t);
  kiln_node_add_attr(g, nid, "t", KILN_ATTR_TENSOR)->t = t;
  kiln_node_add_attr(g, nid, "g", KILN_ATTR_GRAPH)->g = sub;
  a = kiln_node_add_attr(g, nid, "fs", KILN_ATTR_FLOATS);
  a->n = 2;
  a->floats = kiln_graph_alloc(g, 2 * sizeof(float));
  a->floats[0] = 1e-45f;
  a->floats[1] = 16777216.0f;
  a = kiln_node_add_attr(g, nid, "is", KILN_ATTR_INTS);
  a->n = 1;
  a->ints = kiln_graph_alloc(g, sizeof(int64_t));
  a->ints[0] = INT64_MAX;
  a = kiln_node_add_attr(g, nid, "ss", KILN_ATTR_STRINGS);
  a->n = 1;
  a->strings = kiln_graph_alloc(g, sizeof(char *));
  a->strings[0] = "x y";
  a = kiln_node_add_attr(g, nid, "tp", KILN_ATTR_TYPE_PROTO);
  a->tp = kiln_type_tensor(KILN_BF16, 1, (int64_t[]){-1});
  a->tp.kind = KILN_TYPE_SEQUENCE;
  kiln_node_add_attr(g, nid, "u", KILN_ATTR_UNDEFINED);
}

static void test_builder_round_trip(void) {
  kiln_graph *g = kiln_graph_new("built");
  kiln_graph_set_opset(g, "", 19);
  kiln_graph_set_opset(g, "ai.onnx.ml", 3);
  g->ir_version = 8;
  kiln_type tx = kiln_type_tensor(KILN_F32, 2, (int64_t[]){-1, 4});
  tx.dims[0].sym = "N";
  int x = kiln_graph_add_input(g, "x", tx);
  int v;
  kiln_tensor *w = make_tensor(KILN_F32, 1, (int64_t[]){4});
  CHECK_OK(kiln_graph_add_const(g, "w", w, &v));
  int outs[3];
  CHECK_OK(kiln_graph_add_node(g, "Add", "", "", 2, (int[]){x, v}, 1, (const char *[]){"y"}, outs));
  g->values.data[outs[0]].type = tx;
  kiln_graph *sub = kiln_graph_new_sub(g, "body");
  int si = kiln_graph_add_input(sub, "i", kiln_type_tensor(KILN_I64, 0, NULL));
  int sy = kiln_graph_resolve(sub, "y"); /* adds an outer reference */
  CHECK(sy >= 0 && sub->values.data[sy].kind == KILN_VALUE_OUTER);
  int so;
  CHECK_OK(kiln_graph_add_node(sub, "Identity", "", "id", 1, &sy, 1, (const char *[]){"o"}, &so));
  kiln_graph_add_output(sub, so);
  kiln_graph_add_output(sub, si);
  CHECK_OK(kiln_graph_add_node(g, "Custom", "ai.onnx.ml", "custom node", 3, (int[]){outs[0], -1, x},
                               3, (const char *[]){"p", NULL, "q r"}, outs));
  g->values.data[outs[2]].type.kind = KILN_TYPE_OPTIONAL;
  g->values.data[outs[2]].type.elem_seq = true;
  g->values.data[outs[2]].type.dtype = KILN_STRING;
  add_every_attr(g, 1, sub);
  g->nodes.data[1].opset = 2;
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, x);
  CHECK_OK(kiln_graph_verify(g));
  char *text = check_round_trip(g);
  CHECK(strstr(text, "ai.onnx.ml::Custom<2>(%y, _, %x)"));
  CHECK(strstr(text, "%p, _, %\"q r\" = "));
  CHECK(strstr(text, "s=\"a\\x00b\\\"\\\\\""));
  CHECK(strstr(text, "i=-9223372036854775808"));
  CHECK(strstr(text, "t=f64[2] [0.1, -1e-310]"));
  CHECK(strstr(text, "fs=[1e-45,16777216.0]"));
  CHECK(strstr(text, "tp=type seq<bf16[?]>"));
  CHECK(strstr(text, "} : ?, opt<seq<string[*]>> @\"custom node\"\n"));
  CHECK(strstr(text, "    outer %y\n    %o = Identity(%y) @id\n    return %o, %i\n"));
  free(text);
  kiln_graph_free(g);
}

/* ---- bit-exact constants ---- */
/* Prints a constant of dtype dt holding data, parses it back, compares the bytes. */
static void check_const_bits(kiln_dtype dt, const void *data, int64_t n) {
  kiln_graph *g = kiln_graph_new("c");
  kiln_tensor *t = make_tensor(dt, 1, &n);
  memcpy(t->data, data, (size_t)n * kiln_dtype_size(dt));
  int id;
  CHECK_OK(kiln_graph_add_const(g, "c", t, &id));
  kiln_graph_add_output(g, id);
  char *text = check_round_trip(g);
  kiln_graph *g2 = NULL;
  CHECK_OK(kiln_graph_parse(text, "c", &g2));
  if (g2) {
    const kiln_tensor *t2 = g2->values.data[0].data;
    CHECK(t2->dtype == dt && t2->numel == n);
    bool same = memcmp(t2->data, data, (size_t)n * kiln_dtype_size(dt)) == 0;
    if (!same) {
      for (int64_t i = 0; i < n; i++) {
        size_t sz = kiln_dtype_size(dt);
        if (memcmp((const char *)t2->data + i * sz, (const char *)data + i * sz, sz)) {
          fprintf(stderr, "%s element %lld differs\n", kiln_dtype_name(dt), (long long)i);
          break;
        }
      }
    }
    CHECK(same);
  }
  kiln_graph_free(g2);
  free(text);
  kiln_graph_free(g);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void test_const_floats_exhaustive(void) {
  static uint16_t all16[65536];
  for (int i = 0; i < 65536; i++) all16[i] = (uint16_t)i;
  check_const_bits(KILN_F16, all16, 65536);
  check_const_bits(KILN_BF16, all16, 65536);
  uint8_t all8[256];
  for (int i = 0; i < 256; i++) all8[i] = (uint8_t)i;
  const kiln_dtype f8[] = {KILN_F8E4M3FN, KILN_F8E4M3FNUZ, KILN_F8E5M2, KILN_F8E5M2FNUZ,
                           KILN_F8E8M0};
  for (size_t k = 0; k < sizeof f8 / sizeof f8[0]; k++) check_const_bits(f8[k], all8, 256);
  check_const_bits(KILN_F4E2M1, all8, 16);
}

static void test_const_floats_random(void) {
  enum { N = 20000 };
  static uint32_t b32[N];
  static uint64_t b64[N];
  const uint32_t special32[] = {0,           0x80000000u, 1,           0x807fffffu,
                                0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                                0x7f800001u, 0xffffffffu, 0x7f7fffffu};
  for (int i = 0; i < N; i++) {
    b32[i] = i < 11 ? special32[i] : (uint32_t)rng();
    b64[i] = rng();
    if (i % 7 == 0) b64[i] |= 0x7ff0000000000000ull;  /* inf / NaN with payloads */
    if (i % 11 == 0) b64[i] &= 0x800fffffffffffffull; /* subnormals */
  }
  check_const_bits(KILN_F32, b32, N);
  check_const_bits(KILN_F64, b64, N);
}

static void test_const_ints(void) {
  int64_t i64[] = {INT64_MIN, INT64_MAX, 0, -1};
  uint64_t u64[] = {UINT64_MAX, 0, 1ull << 63};
  int32_t i32[] = {INT32_MIN, INT32_MAX};
  uint32_t u32[] = {UINT32_MAX};
  int16_t i16[] = {INT16_MIN, INT16_MAX};
  uint16_t u16[] = {UINT16_MAX};
  int8_t i8[] = {-128, 127};
  uint8_t u8[] = {255, 0};
  uint8_t b[] = {0, 1, 2, 255};
  uint8_t i4[] = {8, 15, 0, 7}; /* -8, -1, 0, 7 */
  uint8_t u4[] = {0, 15};
  uint8_t i2[] = {2, 3, 0, 1};
  uint8_t u2[] = {0, 3};
  check_const_bits(KILN_I64, i64, 4);
  check_const_bits(KILN_U64, u64, 3);
  check_const_bits(KILN_I32, i32, 2);
  check_const_bits(KILN_U32, u32, 1);
  check_const_bits(KILN_I16, i16, 2);
  check_const_bits(KILN_U16, u16, 1);
  check_const_bits(KILN_I8, i8, 2);
  check_const_bits(KILN_U8, u8, 2);
  check_const_bits(KILN_BOOL, b, 4);
  check_const_bits(KILN_I4, i4, 4);
  check_const_bits(KILN_U4, u4, 2);
  check_const_bits(KILN_I2, i2, 4);
  check_const_bits(KILN_U2, u2, 2);
}

static void test_const_strings(void) {
  kiln_graph *g = kiln_graph_new("s");
  kiln_tensor *t = make_tensor(KILN_STRING, 1, (int64_t[]){3});
  char all[256];
  for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
  all[255] = 0;
  char **s = t->data;
  s[0] = strdup(all);
  s[1] = strdup("");
  s[2] = NULL; /* prints as "" */
  int id;
  CHECK_OK(kiln_graph_add_const(g, "s", t, &id));
  char *text = check_round_trip(g);
  kiln_graph *g2 = NULL;
  CHECK_OK(kiln_graph_parse(text, "s", &g2));
  if (g2) {
    char **s2 = g2->values.data[0].data->data;
    CHECK(strcmp(s2[0], all) == 0 && strcmp(s2[1], "") == 0 && strcmp(s2[2], "") == 0);
  }
  kiln_graph_free(g2);
  free(text);
  kiln_graph_free(g);
}

/* NaN payloads are kept: the canonical NaN of a dtype prints "nan" (or "-nan" with the
 * sign bit), every other NaN prints its bits ("nan:0x7fc00001"). */
static void test_nan_spelling(void) {
  const char *in = "graph @n() -> () {\n"
                   "  %a = const f32[4] [nan, -nan, nan:0x7f800001, nan:0xffc00002]\n"
                   "  %b = const f16[3] [nan, -nan, nan:0x7c01]\n"
                   "  %c = const bf16[2] [nan, nan:0xffff]\n"
                   "  %d = const f8e4m3fn[2] [nan, -nan]\n"
                   "  %e = const f8e5m2fnuz[1] [nan]\n"
                   "  %f = const f64[2] [nan, nan:0x7ff0000000000001]\n"
                   "  return\n"
                   "}\n";
  check_canonical(in);
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(in, "n", &g));
  if (!g) return;
  const uint32_t *a = g->values.data[0].data->data;
  CHECK(a[0] == 0x7fc00000u && a[1] == 0xffc00000u && a[2] == 0x7f800001u && a[3] == 0xffc00002u);
  const uint16_t *b = g->values.data[1].data->data;
  CHECK(b[0] == 0x7e00 && b[1] == 0xfe00 && b[2] == 0x7c01);
  const uint8_t *d = g->values.data[3].data->data, *e = g->values.data[4].data->data;
  CHECK(d[0] == 0x7f && d[1] == 0xff && e[0] == 0x80);
  kiln_graph_free(g);
}

static void test_elide(void) {
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse("graph @e() -> () {\n"
                            "  %a = const f32[2,3] [1, 2, 3, 4, 5, 6]\n"
                            "  %b = const i64[2] [1, 2]\n"
                            "  Foo::Bar() {t=f32[3] [1, 2, 3]}\n"
                            "  return\n"
                            "}\n",
                            "e", &g));
  if (!g) return;
  char *s = print_graph(g, 2);
  CHECK(strstr(s, "%a = const f32[2,3] <6 elements>\n"));
  CHECK(strstr(s, "%b = const i64[2] [1, 2]\n"));
  CHECK(strstr(s, "{t=f32[3] <3 elements>}"));
  kiln_graph *g2 = NULL;
  kiln_status st = kiln_graph_parse(s, "elided", &g2);
  CHECK(st &&
        strstr(kiln_status_message(st), "elided:2:23: elided constant data cannot be parsed"));
  kiln_status_free(st);
  free(s);
  kiln_graph_free(g);
}

/* Long attribute lists parse in linear time (a quadratic duplicate check or per-attribute
 * array copy would take minutes here). */
static void test_many_attrs(void) {
  enum { N = 20000 };
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "graph @g(%%x: f32[2]) -> () {\n  Foo::Bar(%%x) {");
  for (int i = 0; i < N; i++) kiln_strbuf_printf(&b, "%sa%d=%d", i ? ", " : "", i, i);
  kiln_strbuf_printf(&b, "}\n  return\n}\n");
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(b.data, "many", &g));
  if (g) {
    CHECK(g->nodes.data[0].n_attrs == N && g->nodes.data[0].attrs[N - 1].i == N - 1);
    CHECK_OK(kiln_graph_verify(g));
    char *out = print_graph(g, -1);
    CHECK(strcmp(out, b.data) == 0);
    free(out);
  }
  kiln_graph_free(g);
  kiln_strbuf_free(&b);
}

/* ---- parser diagnostics ---- */
typedef struct bad_case {
  const char *text;
  const char *message; /* expected prefix: "bad:L:C: message" */
  const char *caret;   /* expected last line (spaces and the caret) */
} bad_case;

#define HDR "graph @g(%x: f32[2]) -> () {\n"
static const bad_case bad_cases[] = {
    {"", "bad:1:1: expected 'graph', found end of input", "^"},
    {"graf @g", "bad:1:1: expected 'graph', found 'graf'", "^"},
    {"graph g", "bad:1:7: expected a graph name (@name), found 'g'", "      ^"},
    {HDR "  %y = Cnv(%x)\n  return\n}", "bad:2:8: unknown op 'Cnv'", "       ^"},
    {HDR "  %y = Relu(%z)\n  return\n}", "bad:2:13: undefined value %z", "            ^"},
    {HDR "  %x = Relu(%x)\n  return\n}", "bad:2:3: value %x is already defined", "  ^"},
    {HDR "  %y, %y = Split(%x)\n  return\n}", "bad:2:7: value %y is defined twice by this node",
     "      ^"},
    {HDR "  %y = Relu(%x) : f32[2], f32[2]\n  return\n}",
     "bad:2:17: more types than the 1 outputs of the node", "                ^"},
    {HDR "  %y = Relu(%x) {a=1, a=2}\n  return\n}", "bad:2:23: attribute 'a' is given twice",
     "                      ^"},
    {HDR "  %y = Relu(%x) {a=[]}\n  return\n}", "bad:2:20: an empty list must name its kind",
     "                   ^"},
    {HDR "  %y = Relu(%x) {a=[1, \"s\"]}\n  return\n}",
     "bad:2:24: a list of ints cannot hold a string", "                       ^"},
    {HDR "  %y = Relu(%x) {a=[[1]]}\n  return\n}", "bad:2:21: attribute lists cannot be nested",
     "                    ^"},
    {HDR "  %c = const f32[3] [1, 2]\n  return\n}", "bad:2:21: 2 values for a tensor of 3 elements",
     "                    ^"},
    {HDR "  %c = const u8[1] [256]\n  return\n}",
     "bad:2:21: integer out of range for the element type u8", "                    ^"},
    {HDR "  %c = const i64[1] [1.5]\n  return\n}", "bad:2:22: expected an integer",
     "                     ^"},
    {HDR "  %c = const f16[1] [\"x\"]\n  return\n}", "bad:2:22: expected a number",
     "                     ^"},
    {HDR "  %c = const f32[1] [nan:0x1ffffffff]\n  return\n}",
     "bad:2:22: cannot read this number as f32", "                     ^"},
    {HDR "  %c = const c64[1] [1]\n  return\n}", "bad:2:14: a tensor cannot hold c64 data",
     "             ^"},
    {HDR "  %c = const f32[2] <2 elements>\n  return\n}",
     "bad:2:21: elided constant data cannot be parsed", "                    ^"},
    {HDR "  %c = const f32[-1] []\n  return\n}", "bad:2:18: a tensor dimension cannot be negative",
     "                 ^"},
    {"graph @g(%x: f33[2]) -> () {\n  return\n}", "bad:1:14: unknown element type 'f33'",
     "             ^"},
    {"graph @g(%x: f32) -> () {\n  return\n}", "bad:1:17: expected '[' after the element type",
     "                ^"},
    {"graph @g(%x: f32[1,2,3,4,5,6,7,8,9]) -> () {\n  return\n}",
     "bad:1:34: more than 8 dimensions", "                                 ^"},
    {"graph @g(%x: f32[-2]) -> () {\n  return\n}", "bad:1:18: a dimension cannot be negative",
     "                 ^"},
    {HDR "  return %x\n}", "bad:2:10: more return values than the 0 declared outputs",
     "         ^"},
    {"graph @g(%x: f32[2]) -> (%x: f32[3]) {\n  return %x\n}",
     "bad:2:10: %x has type f32[2] but the output is declared f32[3]", "         ^"},
    {"graph @g(%x: f32[2]) -> (%y: f32[2]) {\n  return %x\n}",
     "bad:2:10: return value %x does not match the declared output %y", "         ^"},
    {"graph @g(%x: f32[2]) -> (%x: f32[2]) {\n  return\n}",
     "bad:2:3: 0 return values for 1 declared outputs", "  ^"},
    {HDR "  %y = Relu(%x)\n", "bad:3:1: expected a statement or 'return', found end of input", "^"},
    {HDR "  return\n} extra", "bad:3:3: expected end of input after the graph, found 'extra'",
     "  ^"},
    {HDR "  %y = Relu(%x) {s=\"abc}\n  return\n}", "bad:2:20: unterminated string",
     "                   ^"},
    {HDR "  %y = Relu(%x) {s=\"a\\qb\"}\n  return\n}", "bad:2:22: unknown escape '\\q'",
     "                     ^"},
    {HDR "  %y = Relu(%x) {a=0x10}\n  return\n}",
     "bad:2:20: hexadecimal integers are not supported", "                   ^"},
    {HDR "  %y = Relu(%x) {a=1.2.3}\n  return\n}", "bad:2:20: malformed number",
     "                   ^"},
    {HDR "\t%y = Relu(%x) $\n  return\n}", "bad:2:16: unexpected character '$'",
     "\t              ^"},
    {HDR "  %y = Relu(%) \n  return\n}", "bad:2:13: expected a name or a quoted string after '%'",
     "            ^"},
    {HDR "  %\"\" = Relu(%x)\n  return\n}", "bad:2:3: a value name cannot be empty", "  ^"},
    {HDR "  %\"a\\x00\" = Relu(%x)\n  return\n}",
     "bad:2:3: a NUL byte (\\x00) is not allowed in this string", "  ^"},
    {HDR "  outer %x\n  return\n}", "bad:2:3: outer is only allowed in a subgraph", "  ^"},
    {HDR "  %y = Relu(%x)\n  opset \"\" 1\n  return\n}",
     "bad:3:3: opset must come before the first node", "  ^"},
    {HDR "  %y = If(%x) {g=graph @s() -> () {\n    outer %q\n    return\n  }}\n  return\n}",
     "bad:3:11: no value %q in the enclosing graphs", "          ^"},
    {HDR "  %y = If(%x) {g=graph @s() -> () {\n    ir_version 3\n    return\n  }}\n  return\n}",
     "bad:3:5: ir_version is declared in the root graph only", "    ^"},
    {HDR "  %y = Relu(%x) {a=99999999999999999999}\n  return\n}",
     "bad:2:20: integer out of the range of int64", "                   ^"},
    {HDR "  %y = Relu<x>(%x)\n  return\n}", "bad:2:13: expected an integer, found 'x'",
     "            ^"},
    {HDR "  %y = Relu(%x) {\"\"=1}\n  return\n}", "bad:2:18: an attribute name cannot be empty",
     "                 ^"},
    {HDR "  %y = Relu(%x) {a=ints[1.5]}\n  return\n}",
     "bad:2:25: a list of ints cannot hold a float", "                        ^"},
    {HDR "  dom::\"\"(%x)\n  return\n}", "bad:2:8: an op type cannot be empty", "       ^"},
};

static void test_errors(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const bad_case *c = &bad_cases[i];
    kiln_graph *g = (kiln_graph *)1;
    kiln_status st = kiln_graph_parse(c->text, "bad", &g);
    CHECK(g == NULL);
    if (!st) {
      fprintf(stderr, "case %zu parsed but should fail: %s\n", i, c->message);
      CHECK(0);
      kiln_graph_free(g);
      continue;
    }
    const char *msg = kiln_status_message(st);
    const char *last = strrchr(msg, '\n');
    bool ok = strncmp(msg, c->message, strlen(c->message)) == 0 && last &&
              strcmp(last + 1, c->caret) == 0 && kiln_status_code(st) == KILN_ERR_INVALID;
    if (!ok)
      fprintf(stderr, "case %zu: want \"%s\" / \"%s\"\n  got \"%s\"\n", i, c->message, c->caret,
              msg);
    CHECK(ok);
    kiln_status_free(st);
  }
}

/* The source line shown under a message is the offending one, cut around long lines. */
static void test_error_excerpt(void) {
  char text[1200];
  snprintf(text, sizeof text, "%s  %%y = Relu(%%x) {a=\"%0500d\", b=$}\n  return\n}", HDR, 0);
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "long", &g);
  CHECK(st != NULL);
  if (!st) return;
  const char *msg = kiln_status_message(st);
  const char *nl = strchr(msg, '\n');
  CHECK(nl && strstr(msg, "long:2:526: unexpected character '$'"));
  const char *caret = strrchr(msg, '\n');
  CHECK(caret && nl && caret - nl - 1 <= 161); /* excerpt of at most 160 bytes */
  CHECK(caret &&
        strchr(nl + 1, '$') - (nl + 1) == (long)strlen(caret + 1) - 1); /* caret under '$' */
  kiln_status_free(st);
}

/* ---- verifier ---- */
/* x -> Relu -> y -> Neg -> z; output z. */
static kiln_graph *small_graph(void) {
  kiln_graph *g = kiln_graph_new("v");
  kiln_graph_set_opset(g, "", 17);
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 1, (int64_t[]){2}));
  int y, z;
  kiln_status st = kiln_graph_add_node(g, "Relu", "", "r", 1, &x, 1, (const char *[]){"y"}, &y);
  if (!st) st = kiln_graph_add_node(g, "Neg", "", "n", 1, &y, 1, (const char *[]){"z"}, &z);
  if (st) abort();
  kiln_graph_add_output(g, z);
  return g;
}

static void expect_verify_error(kiln_graph *g, const char *needle) {
  free(print_graph(g, -1)); /* the printer copes with broken graphs (under ASan) */
  kiln_status st = kiln_graph_verify(g);
  CHECK(st != NULL);
  if (st && !strstr(kiln_status_message(st), needle)) {
    fprintf(stderr, "verify: want \"%s\", got \"%s\"\n", needle, kiln_status_message(st));
    CHECK(0);
  }
  kiln_status_free(st);
  kiln_graph_free(g);
}

static void test_verify_ok(void) {
  kiln_graph *g = small_graph();
  CHECK_OK(kiln_graph_verify(g));
  kiln_graph_free(g);
}

static void test_verify_errors(void) {
  kiln_graph *g = small_graph(); /* use before definition: swap the nodes */
  kiln_node tmp = g->nodes.data[0];
  g->nodes.data[0] = g->nodes.data[1];
  g->nodes.data[1] = tmp;
  g->values.data[1].node = 1; /* back pointers stay consistent */
  g->values.data[2].node = 0;
  expect_verify_error(g, "graph 'v': node 'n' (Neg): input 0 (%y) is not defined before the node");
  g = small_graph();
  g->nodes.data[0].inputs[0] = 42;
  expect_verify_error(g, "node 'r' (Relu): input 0 refers to value 42, out of range");
  g = small_graph();
  g->values.data[1].out_index = 3; /* %y: broken back pointer */
  expect_verify_error(g, "value %y: node 0 does not list it as output 3");
  g = small_graph();
  g->nodes.data[1].outputs[0] = 1; /* Neg claims %y: two definitions, %z orphaned */
  expect_verify_error(g, "value %z: node 1 does not list it as output 0");
  g = small_graph(); /* Neg gets a second output slot naming the graph input */
  int *outs2 = kiln_graph_alloc(g, 2 * sizeof(int));
  outs2[0] = g->nodes.data[1].outputs[0];
  outs2[1] = 0;
  g->nodes.data[1].outputs = outs2;
  g->nodes.data[1].n_outputs = 2;
  expect_verify_error(g, "node 'n' (Neg): output 1 (%x) is not defined by this node");
  g = small_graph();
  g->outputs.data[0] = 7;
  expect_verify_error(g, "graph output 0 refers to value 7, out of range");
  g = small_graph();
  g->values.data[0].type.rank = 9;
  expect_verify_error(g, "value %x: rank 9 is outside -1..8");
  g = small_graph();
  g->values.data[0].type.kind = (kiln_type_kind)7;
  expect_verify_error(g, "value %x: type kind 7 is out of range");
  g = small_graph();
  g->values.data[0].type.dtype = (kiln_dtype)99;
  expect_verify_error(g, "value %x: element type 99 is out of range");
  g = small_graph();
  g->values.data[2].name = "y";
  expect_verify_error(g, "value %y: the name is used twice");
  g = small_graph();
  g->inputs.len = 0;
  expect_verify_error(g, "input value %x is not listed among the graph inputs");
  g = small_graph();
  g->nodes.data[0].op = KILN_OP_Neg;
  expect_verify_error(g, "node 'r' (Relu): op id");
  g = small_graph();
  kiln_node_add_attr(g, 0, "a", KILN_ATTR_INT);
  kiln_node_add_attr(g, 0, "a", KILN_ATTR_INT);
  expect_verify_error(g, "node 'r' (Relu): attribute 'a' is given twice");
  g = small_graph();
  kiln_node_add_attr(g, 0, "t", KILN_ATTR_TENSOR);
  expect_verify_error(g, "node 'r' (Relu): attribute 't': tensor is NULL");
  g = small_graph();
  kiln_node_add_attr(g, 0, "is", KILN_ATTR_INTS)->n = 2;
  expect_verify_error(g, "attribute 'is': ints is NULL");
  g = small_graph(); /* a constant whose type disagrees with its data */
  int c;
  CHECK_OK(kiln_graph_add_const(g, "c", make_tensor(KILN_I64, 1, (int64_t[]){3}), &c));
  g->values.data[c].type.dims[0].value = 4;
  expect_verify_error(g, "value %c: type i64[4] does not match its data i64[3]");
}

static void test_verify_subgraphs(void) {
  kiln_graph *g = small_graph();
  kiln_graph *sub = kiln_graph_new_sub(g, "body");
  int o = kiln_graph_resolve(sub, "z");
  kiln_graph_add_output(sub, o);
  kiln_node_add_attr(g, 0, "body", KILN_ATTR_GRAPH)->g = sub; /* node 0 runs before %z exists */
  expect_verify_error(g, "graph 'v': node 'r' (Relu): attribute 'body': graph 'body': value %z: "
                         "refers to %z of the parent graph, which is not defined before the node");
  g = small_graph();
  sub = kiln_graph_new_sub(g, "body");
  o = kiln_graph_resolve(sub, "x");
  sub->values.data[o].outer = 99;
  kiln_graph_add_output(sub, o);
  kiln_node_add_attr(g, 1, "body", KILN_ATTR_GRAPH)->g = sub;
  expect_verify_error(g, "attribute 'body': graph 'body': value %x: outer id 99 is out of range");
  g = small_graph();
  sub = kiln_graph_new_sub(g, "body");
  int u;
  CHECK_OK(
      kiln_graph_add_node(sub, "Relu", "", "inner", 1, (int[]){-1}, 1, (const char *[]){"u"}, &u));
  sub->nodes.data[0].inputs[0] = 5;
  kiln_node_add_attr(g, 1, "body", KILN_ATTR_GRAPH)->g = sub;
  expect_verify_error(g, "node 'n' (Neg): attribute 'body': graph 'body': node 'inner' (Relu): "
                         "input 0 refers to value 5, out of range");
  g = small_graph();
  kiln_graph *other = kiln_graph_new("other");
  kiln_node_add_attr(g, 1, "body", KILN_ATTR_GRAPH)->g = other; /* not a subgraph of g */
  expect_verify_error(g, "its graph's parent is not the graph of the node");
  kiln_graph_free(other);
  g = small_graph(); /* an outer value in the root */
  g->values.data[0].kind = KILN_VALUE_OUTER;
  expect_verify_error(g, "value %x: an outer value in a graph that has no parent");
}

/* Whatever the parser accepts, the verifier accepts. */
static void test_parsed_graphs_verify(void) {
  for (size_t i = 0; i < sizeof snippets / sizeof snippets[0]; i++) {
    kiln_graph *g = NULL;
    CHECK_OK(kiln_graph_parse(snippets[i], "s", &g));
    if (g) CHECK_OK(kiln_graph_verify(g));
    kiln_graph_free(g);
  }
}

TEST_MAIN(T(test_snippets), T(test_lenient_input), T(test_builder_round_trip),
          T(test_const_floats_exhaustive), T(test_const_floats_random), T(test_const_ints),
          T(test_const_strings), T(test_nan_spelling), T(test_elide), T(test_many_attrs),
          T(test_errors), T(test_error_excerpt), T(test_verify_ok), T(test_verify_errors),
          T(test_verify_subgraphs), T(test_parsed_graphs_verify))
