/* ONNX import: the types a model declares (graph outputs, value_info) merged with Kiln's
 * inference, and the messages for files that are empty, short or of the wrong kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "harness.h"
#include "onnx_builder.h"
#include "ops/ops.h"

/* ValueInfoProto of dtype dt whose dims are numbers ("2") or symbols ("unk__1"). */
static void pb_vinfo_named(pb *g, uint32_t field, const char *name, kiln_dtype dt, int rank,
                           const char *const *dims) {
  pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
  pb_str(&vi, 1, name);
  pb_int(&tt, 1, dt);
  for (int i = 0; i < rank; i++) {
    pb d = {0};
    if (dims[i][0] >= '0' && dims[i][0] <= '9') pb_int(&d, 1, atoll(dims[i]));
    else pb_str(&d, 2, dims[i]);
    pb_msg(&sh, 1, &d);
  }
  pb_msg(&tt, 2, &sh);
  pb_msg(&tp, 1, &tt);
  pb_msg(&vi, 2, &tp);
  pb_msg(g, field, &vi);
}

/* x: f32[2,3] -> Relu -> r -> Neg -> y, with r's value_info and y's output type given. */
static kiln_status relu_neg(const char *const *r_dims, kiln_dtype r_dt, const char *const *y_dims,
                            kiln_graph **out) {
  pb g = {0}, m = {0};
  pb_str(&g, 2, "declared");
  pb_node(&g, "Relu", "x", NULL, "r");
  pb_node(&g, "Neg", "r", NULL, "y");
  pb_vinfo_named(&g, 11, "x", KILN_F32, 2, (const char *const[]){"2", "3"});
  pb_vinfo_named(&g, 12, "y", KILN_F32, 2, y_dims);
  pb_vinfo_named(&g, 13, "r", r_dt, 2, r_dims);
  pb_model(&m, &g);
  kiln_status st = load(&m, out);
  if (!st) st = kiln_ops_infer_graph(*out);
  kiln_strbuf_free(&m);
  return st;
}

static bool type_is(const kiln_graph *g, const char *name, const char *want) {
  char b[64];
  int id = kiln_graph_find(g, name);
  const char *got = id < 0 ? "none" : kiln_type_str(&g->values.data[id].type, b, sizeof b);
  if (strcmp(got, want)) fprintf(stderr, "  '%s' is %s, expected %s\n", name, got, want);
  return !strcmp(got, want);
}

/* After onnx.shape_inference.infer_shapes or from an exporter, value_info and outputs name
 * computed dims ("unk__1", "Negoutput_dim_0"): inference's extents win. */
static void test_declared_symbols_take_inferred_extents(void) {
  kiln_graph *g = NULL;
  CHECK_OK(relu_neg((const char *const[]){"unk__1", "unk__2"}, KILN_F32,
                    (const char *const[]){"Negoutput_dim_0", "3"}, &g));
  if (g) {
    CHECK(type_is(g, "r", "f32[2,3]"));
    CHECK(type_is(g, "y", "f32[2,3]"));
  }
  kiln_graph_free(g);
}

static bool fails_with(kiln_status st, kiln_code code, const char *what) {
  bool ok = kiln_status_code(st) == code && strstr(kiln_status_message(st), what);
  if (!ok) fprintf(stderr, "  got: %s\n", st ? kiln_status_message(st) : "OK");
  kiln_status_free(st);
  return ok;
}

/* A declared static extent or element type that inference contradicts: bad input naming
 * the value. */
static void test_declared_contradictions_name_the_value(void) {
  kiln_graph *g = NULL;
  CHECK(fails_with(
      relu_neg((const char *const[]){"2", "4"}, KILN_F32, (const char *const[]){"2", "3"}, &g),
      KILN_ERR_INVALID, "value 'r' is declared f32[2,4], but the node computes f32[2,3]"));
  kiln_graph_free(g);
  g = NULL;
  CHECK(fails_with(
      relu_neg((const char *const[]){"2", "3"}, KILN_I64, (const char *const[]){"2", "3"}, &g),
      KILN_ERR_INVALID, "value 'r' is declared i64[2,3]"));
  kiln_graph_free(g);
  g = NULL;
  CHECK(fails_with(
      relu_neg((const char *const[]){"2", "3"}, KILN_F32, (const char *const[]){"7", "3"}, &g),
      KILN_ERR_INVALID, "value 'y' is declared f32[7,3]"));
  kiln_graph_free(g);
}

/* ---- messages for files ---- */
static char tmp_dir[256];

static const char *tmp_path(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
  return buf;
}

/* An Identity model over initializer w: f32[4] whose data is external (location, offset
 * and length as given; NULL: not given). */
static kiln_status load_external(const char *location, const char *offset, const char *length) {
  pb t = {0}, g = {0}, m = {0}, e = {0};
  pb_int(&t, 1, 4), pb_int(&t, 2, KILN_F32), pb_str(&t, 8, "w"), pb_int(&t, 14, 1);
  pb_str(&e, 1, "location"), pb_str(&e, 2, location), pb_msg(&t, 13, &e);
  if (offset) pb_str(&e, 1, "offset"), pb_str(&e, 2, offset), pb_msg(&t, 13, &e);
  if (length) pb_str(&e, 1, "length"), pb_str(&e, 2, length), pb_msg(&t, 13, &e);
  pb_msg(&g, 5, &t);
  pb_node(&g, "Identity", "w", NULL, "y");
  pb_vinfo(&g, 12, "y", -1, NULL);
  pb_model(&m, &g);
  kiln_graph *gr = NULL;
  kiln_status st = kiln_onnx_load_bytes(m.data, m.len, tmp_dir, &gr);
  kiln_graph_free(gr);
  kiln_strbuf_free(&m);
  return st;
}

/* Short external data used to say "has 4000 bytes ..., needs 4000": each message now
 * says which number is wrong. */
static void test_external_data_messages(void) {
  float w[3] = {1, 2, 3};
  CHECK_OK(kiln_write_file(tmp_path("w3.bin"), w, sizeof w)); /* 12 bytes of 16 */
  CHECK(
      fails_with(load_external("w3.bin", NULL, NULL), KILN_ERR_INVALID,
                 "'w3.bin' has 12 bytes: the tensor needs 16 bytes from offset 0, 4 are missing"));
  CHECK(
      fails_with(load_external("w3.bin", NULL, "16"), KILN_ERR_INVALID,
                 "'w3.bin' has 12 bytes: the tensor needs 16 bytes from offset 0, 4 are missing"));
  CHECK(fails_with(load_external("w3.bin", "4", "16"), KILN_ERR_INVALID,
                   "needs 16 bytes from offset 4, 8 are missing"));
  CHECK(fails_with(load_external("w3.bin", NULL, "12"), KILN_ERR_INVALID,
                   "external data length is 12 bytes, the tensor needs 16"));
  CHECK(fails_with(load_external("w3.bin", "40", NULL), KILN_ERR_INVALID,
                   "offset 40 is past the end of 'w3.bin' (12 bytes)"));
  CHECK(fails_with(load_external("w3.bin", "-1", NULL), KILN_ERR_INVALID, "external data offset"));
  CHECK(fails_with(load_external("w3.bin", "99999999999999999999", NULL), KILN_ERR_INVALID,
                   "external data offset"));
  float w5[5] = {0};
  CHECK_OK(kiln_write_file(tmp_path("w5.bin"), w5, sizeof w5));
  CHECK(fails_with(load_external("w5.bin", NULL, NULL), KILN_ERR_INVALID,
                   "has 20 bytes after offset 0, the tensor needs 16"));
  CHECK_OK(load_external("w5.bin", "4", NULL));
  CHECK_OK(load_external("w5.bin", NULL, "16"));
}

/* An empty file says so (it used to read "invalid data_type 0" or "the model has no
 * graph"). */
static void test_empty_files(void) {
  CHECK_OK(kiln_write_file(tmp_path("empty.pb"), "", 0));
  CHECK_OK(kiln_write_file(tmp_path("empty.onnx"), "", 0));
  kiln_tensor *t = NULL;
  CHECK(fails_with(kiln_pb_read_tensor(tmp_path("empty.pb"), &t), KILN_ERR_INVALID,
                   "the file is empty"));
  kiln_graph *g = NULL;
  CHECK(fails_with(kiln_load_graph(tmp_path("empty.onnx"), &g), KILN_ERR_INVALID,
                   "the file is empty"));
}

/* The text IR is recognized by its content whatever the file's name; other text is "not
 * an ONNX model" rather than a protobuf wire-type error. */
static void test_text_files(void) {
  const char *ir = "# a comment\n\ngraph @t(%x: f32[2]) -> (%y: f32[2]) {\n"
                   "  opset \"\" 17\n  %y = Relu(%x) : f32[2]\n  return %y\n}\n";
  CHECK_OK(kiln_write_file(tmp_path("model.txt"), ir, strlen(ir)));
  kiln_graph *g = NULL;
  CHECK_OK(kiln_load_graph(tmp_path("model.txt"), &g));
  CHECK(g && g->nodes.len == 1);
  kiln_graph_free(g);
  g = NULL;
  const char *junk = "name,value\nx,1\n";
  CHECK_OK(kiln_write_file(tmp_path("junk.onnx"), junk, strlen(junk)));
  CHECK(fails_with(kiln_load_graph(tmp_path("junk.onnx"), &g), KILN_ERR_INVALID,
                   "not an ONNX model: the file is text"));
}

static void test_setup(void) {
  kiln_test_make_tmp(tmp_dir, sizeof tmp_dir, "onnx_declared");
}

static void test_cleanup(void) {
  kiln_test_remove_dir(tmp_dir);
}

TEST_MAIN(T(test_declared_symbols_take_inferred_extents),
          T(test_declared_contradictions_name_the_value), T(test_setup),
          T(test_external_data_messages), T(test_empty_files), T(test_text_files), T(test_cleanup))
