/* A small protobuf wire-format reader and writer (private to src/onnx).
 *
 * Reading: a kiln_wire reads the fields of one message from a byte span; each
 * field comes back whole (a varint or fixed value, or the span of a
 * length-delimited payload), so an unknown field is skipped by ignoring it.
 * Every step is bounds-checked; errors are KILN_ERR_INVALID and name the field
 * path ("model.graph.node[12].attribute[3]") and the byte offset in the buffer.
 *
 *   kiln_wire r = kiln_wire_sub(ctx, data, len);
 *   kiln_wire_field f;
 *   for (;;) {
 *     KILN_TRY(kiln_wire_next(&r, &f));
 *     if (!f.num) break;            // end of the message
 *     switch (f.num) { case 1: KILN_TRY(kiln_wire_i64(&r, &f, &x)); break; ... }
 *   }
 *
 * Writing: a kiln_wire_writer appends to a strbuf, streams to a FILE, or only
 * counts bytes; nested messages are written by a callback that runs once in
 * counting mode (to learn the length prefix) and once for real, so no
 * message is ever buffered twice. */
#ifndef KILN_ONNX_WIRE_H
#define KILN_ONNX_WIRE_H

#include <stdio.h>

#include "base/base.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX reader assumes a little-endian host (raw_data is little-endian)"
#endif

typedef enum kiln_wire_type {
  KILN_WIRE_VARINT = 0,
  KILN_WIRE_I64 = 1,
  KILN_WIRE_LEN = 2,
  KILN_WIRE_SGROUP = 3, /* groups are rejected */
  KILN_WIRE_EGROUP = 4,
  KILN_WIRE_I32 = 5,
} kiln_wire_type;

#define KILN_WIRE_PATH_MAX 480
#define KILN_WIRE_MAX_DEPTH 64 /* nested messages (subgraphs nest several per level) */

/* Shared by all readers of one buffer. */
typedef struct kiln_wire_ctx {
  const uint8_t *base; /* buffer start, for byte offsets */
  size_t len;
  int depth;
  size_t path_len;
  char path[KILN_WIRE_PATH_MAX];
} kiln_wire_ctx;

/* A reader over the fields of one message. */
typedef struct kiln_wire {
  kiln_wire_ctx *ctx;
  const uint8_t *p, *end;
} kiln_wire;

typedef struct kiln_wire_field {
  uint32_t num; /* 0 at the end of the message */
  kiln_wire_type type;
  uint64_t v;          /* VARINT, I64 and I32 values */
  const uint8_t *data; /* LEN: payload */
  size_t len;
  size_t offset; /* byte offset of the field's tag */
} kiln_wire_field;

void kiln_wire_ctx_init(kiln_wire_ctx *c, const void *data, size_t len, const char *root);
kiln_wire kiln_wire_sub(kiln_wire_ctx *c, const uint8_t *data, size_t len);

/* Path: push appends a component (printf format, e.g. ".node[%d]") and
 * returns the previous length to pass to pop. */
size_t kiln_wire_push(kiln_wire_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kiln_wire_pop(kiln_wire_ctx *c, size_t mark);
/* Enters a nested message (depth check) / leaves it. */
KILN_MUST_USE kiln_status kiln_wire_enter(kiln_wire_ctx *c, size_t offset);
void kiln_wire_leave(kiln_wire_ctx *c);

/* "<path>: <message> at byte <offset>" as KILN_ERR_INVALID (or another code). */
KILN_MUST_USE kiln_status kiln_wire_error(const kiln_wire_ctx *c, kiln_code code, size_t offset,
                                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

KILN_MUST_USE kiln_status kiln_wire_next(kiln_wire *r, kiln_wire_field *f);

/* Typed views of a field; each checks the wire type and names the field on error. */
KILN_MUST_USE kiln_status kiln_wire_i64(const kiln_wire *r, const kiln_wire_field *f, int64_t *out);
KILN_MUST_USE kiln_status kiln_wire_i32(const kiln_wire *r, const kiln_wire_field *f, int32_t *out);
KILN_MUST_USE kiln_status kiln_wire_f32(const kiln_wire *r, const kiln_wire_field *f, float *out);
KILN_MUST_USE kiln_status kiln_wire_bytes(const kiln_wire *r,
                                          const kiln_wire_field *f); /* checks LEN */
/* A name (of a value, node, graph, op type, domain, attribute, dim ...) as kiln_wire_str, but a
 * NUL byte in it is an error: cut at the NUL, "a\0b" and "a\0c" would be one name "a", and a
 * reference to an undefined "x\0y" would read "x". */
KILN_MUST_USE kiln_status kiln_wire_name(const kiln_wire *r, const kiln_wire_field *f,
                                         kiln_arena *a, const char **out);
/* A LEN field as a NUL-terminated copy in arena a (or malloc when a is NULL). */
KILN_MUST_USE kiln_status kiln_wire_str(const kiln_wire *r, const kiln_wire_field *f, kiln_arena *a,
                                        const char **out);

/* Repeated scalar fields, packed (LEN) or not. `elem` is the element's wire
 * type (VARINT, I32 or I64). count gives how many elements this occurrence
 * holds (validating the packing); get decodes them into out[0..count). */
KILN_MUST_USE kiln_status kiln_wire_count(const kiln_wire *r, const kiln_wire_field *f,
                                          kiln_wire_type elem, size_t *out);
KILN_MUST_USE kiln_status kiln_wire_get_varints(const kiln_wire *r, const kiln_wire_field *f,
                                                uint64_t *out);
KILN_MUST_USE kiln_status kiln_wire_get_fixed(const kiln_wire *r, const kiln_wire_field *f,
                                              kiln_wire_type elem, void *out);
/* Decodes one varint from [*p, end); advances *p. false when malformed. */
bool kiln_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* ---- writer ---- */
typedef struct kiln_wire_writer {
  kiln_strbuf *buf;       /* append here, or */
  kiln_file_writer *file; /* stream here (errors kept by the writer); neither: count only */
  uint64_t n;             /* bytes written or counted */
} kiln_wire_writer;

typedef kiln_status (*kiln_wire_msg_fn)(kiln_wire_writer *w, const void *arg);

void kiln_wire_put_raw(kiln_wire_writer *w, const void *p, size_t n);
void kiln_wire_put_varint(kiln_wire_writer *w, uint64_t v);
void kiln_wire_put_tag(kiln_wire_writer *w, uint32_t field, kiln_wire_type type);
void kiln_wire_put_int(kiln_wire_writer *w, uint32_t field, int64_t v);
void kiln_wire_put_f32(kiln_wire_writer *w, uint32_t field, float v);
void kiln_wire_put_bytes(kiln_wire_writer *w, uint32_t field, const void *p, size_t n);
void kiln_wire_put_str(kiln_wire_writer *w, uint32_t field, const char *s); /* skipped if NULL */
void kiln_wire_put_packed_i64(kiln_wire_writer *w, uint32_t field, const int64_t *v, size_t n);
void kiln_wire_put_packed_f32(kiln_wire_writer *w, uint32_t field, const float *v, size_t n);
/* A nested message written by fn(w, arg). */
KILN_MUST_USE kiln_status kiln_wire_put_msg(kiln_wire_writer *w, uint32_t field,
                                            kiln_wire_msg_fn fn, const void *arg);
/* Writes a whole top-level message to a strbuf (sized exactly) or a file. */
KILN_MUST_USE kiln_status kiln_wire_write_buf(kiln_strbuf *out, kiln_wire_msg_fn fn,
                                              const void *arg);
KILN_MUST_USE kiln_status kiln_wire_write_file(const char *path, kiln_wire_msg_fn fn,
                                               const void *arg);

#endif
