/* A tiny protobuf builder for hand-made ONNX models in the unit tests (static inline functions:
 * each test program includes it once). */
#ifndef KILN_TEST_ONNX_BUILDER_H
#define KILN_TEST_ONNX_BUILDER_H

#include <string.h>

#include "onnx/onnx.h"
#include "onnx/wire.h"

typedef kiln_strbuf pb;

static inline void pb_int(pb *b, uint32_t f, int64_t v) {
  kiln_wire_writer w = {.buf = b};
  kiln_wire_put_int(&w, f, v);
}
static inline void pb_bytes(pb *b, uint32_t f, const void *p, size_t n) {
  kiln_wire_writer w = {.buf = b};
  kiln_wire_put_bytes(&w, f, p, n);
}
static inline void pb_str(pb *b, uint32_t f, const char *s) {
  pb_bytes(b, f, s, strlen(s));
}
static inline void pb_f32(pb *b, uint32_t f, float v) {
  kiln_wire_writer w = {.buf = b};
  kiln_wire_put_f32(&w, f, v);
}
/* Appends child as field f and frees it. */
static inline void pb_msg(pb *b, uint32_t f, pb *child) {
  pb_bytes(b, f, child->data ? child->data : "", child->len);
  kiln_strbuf_free(child);
}

/* ValueInfoProto name: f32 with the given dims (rank -1: no shape). */
static inline void pb_vinfo(pb *g, uint32_t field, const char *name, int rank,
                            const int64_t *dims) {
  pb vi = {0}, tp = {0}, tt = {0}, sh = {0};
  pb_str(&vi, 1, name);
  pb_int(&tt, 1, KILN_F32);
  for (int i = 0; rank >= 0 && i < rank; i++) {
    pb d = {0};
    pb_int(&d, 1, dims[i]);
    pb_msg(&sh, 1, &d);
  }
  if (rank >= 0) pb_msg(&tt, 2, &sh);
  pb_msg(&tp, 1, &tt);
  pb_msg(&vi, 2, &tp);
  pb_msg(g, field, &vi);
}

/* NodeProto with up to two inputs and one output ("" entries are written as omitted). */
static inline void pb_node(pb *g, const char *op, const char *in0, const char *in1,
                           const char *out) {
  pb n = {0};
  if (in0) pb_str(&n, 1, in0);
  if (in1) pb_str(&n, 1, in1);
  pb_str(&n, 2, out);
  pb_str(&n, 4, op);
  pb_msg(g, 1, &n);
}

/* TensorProto: dims, dtype, name and raw bytes. */
static inline void pb_tensor(pb *out, uint32_t field, const char *name, kiln_dtype dt, int rank,
                             const int64_t *dims, const void *raw, size_t n) {
  pb t = {0};
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
  pb_int(&t, 2, dt);
  if (name) pb_str(&t, 8, name);
  if (raw) pb_bytes(&t, 9, raw, n);
  pb_msg(out, field, &t);
}

/* ModelProto (ir 8, opset 17) around graph g (freed). */
static inline void pb_model(pb *m, pb *g) {
  pb op = {0};
  pb_int(m, 1, 8);
  pb_str(m, 2, "test");
  pb_int(&op, 2, 17);
  pb_msg(m, 8, &op);
  pb_msg(m, 7, g);
}

static inline kiln_status load(const pb *m, kiln_graph **out) {
  return kiln_onnx_load_bytes(m->data ? m->data : "", m->len, NULL, out);
}

#endif
