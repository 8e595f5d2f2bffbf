/* Protobuf wire format: a bounds-checked reader and a streaming writer. */
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *wire_type_name(unsigned t) {
  static const char *names[] = {"varint",    "64-bit", "length-delimited", "start-group",
                                "end-group", "32-bit", "invalid (6)",      "invalid (7)"};
  return t < 8 ? names[t] : "invalid";
}

/* ---- context and errors ---- */

void kiln_wire_ctx_init(kiln_wire_ctx *c, const void *data, size_t len, const char *root) {
  memset(c, 0, sizeof *c);
  c->base = data;
  c->len = len;
  kiln_wire_push(c, "%s", root);
}

kiln_wire kiln_wire_sub(kiln_wire_ctx *c, const uint8_t *data, size_t len) {
  kiln_wire r = {c, data, data + len};
  return r;
}

size_t kiln_wire_push(kiln_wire_ctx *c, const char *fmt, ...) {
  size_t mark = c->path_len;
  if (mark + 1 >= sizeof c->path) return mark;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(c->path + mark, sizeof c->path - mark, fmt, ap);
  va_end(ap);
  size_t room = sizeof c->path - mark - 1;
  c->path_len = mark + (n < 0 ? 0 : (size_t)n > room ? room : (size_t)n);
  return mark;
}

void kiln_wire_pop(kiln_wire_ctx *c, size_t mark) {
  c->path_len = mark;
  c->path[mark] = '\0';
}

kiln_status kiln_wire_enter(kiln_wire_ctx *c, size_t offset) {
  if (c->depth >= KILN_WIRE_MAX_DEPTH)
    return kiln_wire_error(c, KILN_ERR_INVALID, offset, "messages nested deeper than %d",
                           KILN_WIRE_MAX_DEPTH);
  c->depth++;
  return KILN_OK;
}

void kiln_wire_leave(kiln_wire_ctx *c) {
  c->depth--;
}

kiln_status kiln_wire_error(const kiln_wire_ctx *c, kiln_code code, size_t offset, const char *fmt,
                            ...) {
  kiln_strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  kiln_status st = kiln_error(code, "%s: %s at byte %zu", c->path, b.data ? b.data : "", offset);
  kiln_strbuf_free(&b);
  return st;
}

static size_t off_of(const kiln_wire *r, const uint8_t *p) {
  return (size_t)(p - r->ctx->base);
}

/* ---- reading ---- */

bool kiln_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  const uint8_t *q = *p;
  for (int i = 0; i < 10; i++) {
    if (q >= end) return false;
    uint8_t b = *q++;
    if (i == 9 && b > 1) return false; /* bits beyond 64 */
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *p = q;
      *out = v;
      return true;
    }
  }
  return false; /* more than 10 bytes */
}

static kiln_status bad_varint(const kiln_wire *r, const uint8_t *at, const char *what) {
  bool truncated = true;
  for (const uint8_t *q = at; q < r->end && q < at + 10; q++)
    if (!(*q & 0x80)) truncated = false;
  if (r->end - at >= 10) truncated = false;
  return kiln_wire_error(r->ctx, KILN_ERR_INVALID, off_of(r, at), "%s %s",
                         truncated ? "truncated" : "malformed (over 64 bits)", what);
}

static kiln_status read_payload(kiln_wire *r, kiln_wire_field *f, const uint8_t *tag_at) {
  switch (f->type) {
  case KILN_WIRE_VARINT:
    if (!kiln_wire_varint(&r->p, r->end, &f->v)) return bad_varint(r, r->p, "varint");
    return KILN_OK;
  case KILN_WIRE_I64:
  case KILN_WIRE_I32: {
    size_t n = f->type == KILN_WIRE_I64 ? 8 : 4;
    if ((size_t)(r->end - r->p) < n)
      return kiln_wire_error(r->ctx, KILN_ERR_INVALID, off_of(r, tag_at),
                             "truncated %zu-byte field %u", n, f->num);
    uint64_t v = 0;
    memcpy(&v, r->p, n);
    f->v = v;
    r->p += n;
    return KILN_OK;
  }
  case KILN_WIRE_LEN: {
    uint64_t n;
    if (!kiln_wire_varint(&r->p, r->end, &n)) return bad_varint(r, r->p, "length");
    if (n > (uint64_t)(r->end - r->p))
      return kiln_wire_error(r->ctx, KILN_ERR_INVALID, off_of(r, tag_at),
                             "truncated length-delimited field %u (%llu bytes, %zu left)", f->num,
                             (unsigned long long)n, (size_t)(r->end - r->p));
    f->data = r->p;
    f->len = (size_t)n;
    r->p += n;
    return KILN_OK;
  }
  default:
    return kiln_wire_error(r->ctx, KILN_ERR_INVALID, off_of(r, tag_at),
                           "field %u has unsupported wire type %s", f->num,
                           wire_type_name(f->type));
  }
}

kiln_status kiln_wire_next(kiln_wire *r, kiln_wire_field *f) {
  memset(f, 0, sizeof *f);
  if (r->p >= r->end) return KILN_OK;
  const uint8_t *tag_at = r->p;
  uint64_t tag;
  if (!kiln_wire_varint(&r->p, r->end, &tag)) return bad_varint(r, tag_at, "field tag");
  f->offset = off_of(r, tag_at);
  f->type = (kiln_wire_type)(tag & 7);
  if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
    return kiln_wire_error(r->ctx, KILN_ERR_INVALID, f->offset, "invalid field number %llu",
                           (unsigned long long)(tag >> 3));
  f->num = (uint32_t)(tag >> 3);
  kiln_status st = read_payload(r, f, tag_at);
  if (st) f->num = 0;
  return st;
}

static kiln_status wrong_type(const kiln_wire *r, const kiln_wire_field *f, const char *want) {
  return kiln_wire_error(r->ctx, KILN_ERR_INVALID, f->offset,
                         "field %u has wire type %s, expected %s", f->num, wire_type_name(f->type),
                         want);
}

kiln_status kiln_wire_i64(const kiln_wire *r, const kiln_wire_field *f, int64_t *out) {
  if (f->type != KILN_WIRE_VARINT) return wrong_type(r, f, "varint");
  *out = (int64_t)f->v;
  return KILN_OK;
}

kiln_status kiln_wire_i32(const kiln_wire *r, const kiln_wire_field *f, int32_t *out) {
  if (f->type != KILN_WIRE_VARINT) return wrong_type(r, f, "varint");
  *out = (int32_t)(uint32_t)f->v; /* protobuf int32 semantics: truncate */
  return KILN_OK;
}

kiln_status kiln_wire_f32(const kiln_wire *r, const kiln_wire_field *f, float *out) {
  if (f->type != KILN_WIRE_I32) return wrong_type(r, f, "32-bit");
  uint32_t bits = (uint32_t)f->v;
  memcpy(out, &bits, 4);
  return KILN_OK;
}

kiln_status kiln_wire_bytes(const kiln_wire *r, const kiln_wire_field *f) {
  if (f->type != KILN_WIRE_LEN) return wrong_type(r, f, "length-delimited");
  return KILN_OK;
}

kiln_status kiln_wire_str(const kiln_wire *r, const kiln_wire_field *f, kiln_arena *a,
                          const char **out) {
  KILN_TRY(kiln_wire_bytes(r, f));
  if (a) {
    *out = kiln_arena_strndup(a, (const char *)f->data, f->len);
  } else {
    char *s = kiln_xmalloc(f->len + 1);
    memcpy(s, f->data, f->len);
    s[f->len] = '\0';
    *out = s;
  }
  return KILN_OK;
}

kiln_status kiln_wire_name(const kiln_wire *r, const kiln_wire_field *f, kiln_arena *a,
                           const char **out) {
  KILN_TRY(kiln_wire_bytes(r, f));
  if (f->len && memchr(f->data, 0, f->len))
    return kiln_wire_error(r->ctx, KILN_ERR_INVALID, f->offset,
                           "a name (field %u) holds a NUL byte", f->num);
  return kiln_wire_str(r, f, a, out);
}

static size_t fixed_size(kiln_wire_type elem) {
  return elem == KILN_WIRE_I64 ? 8 : 4;
}

kiln_status kiln_wire_count(const kiln_wire *r, const kiln_wire_field *f, kiln_wire_type elem,
                            size_t *out) {
  if (f->type == elem) {
    *out = 1;
    return KILN_OK;
  }
  if (f->type != KILN_WIRE_LEN)
    return wrong_type(r, f, elem == KILN_WIRE_VARINT ? "varint or packed" : "fixed or packed");
  if (elem != KILN_WIRE_VARINT) {
    size_t sz = fixed_size(elem);
    if (f->len % sz)
      return kiln_wire_error(r->ctx, KILN_ERR_INVALID, f->offset,
                             "packed field %u has %zu bytes, not a multiple of %zu", f->num, f->len,
                             sz);
    *out = f->len / sz;
    return KILN_OK;
  }
  size_t n = 0;
  for (size_t i = 0; i < f->len; i++) n += !(f->data[i] & 0x80);
  if (f->len && (f->data[f->len - 1] & 0x80))
    return kiln_wire_error(r->ctx, KILN_ERR_INVALID, f->offset,
                           "packed field %u ends inside a varint", f->num);
  *out = n;
  return KILN_OK;
}

kiln_status kiln_wire_get_varints(const kiln_wire *r, const kiln_wire_field *f, uint64_t *out) {
  if (f->type == KILN_WIRE_VARINT) {
    out[0] = f->v;
    return KILN_OK;
  }
  const uint8_t *p = f->data, *end = f->data + f->len;
  for (size_t i = 0; p < end; i++) {
    const uint8_t *at = p;
    if (!kiln_wire_varint(&p, end, &out[i]))
      return kiln_wire_error(r->ctx, KILN_ERR_INVALID, off_of(r, at),
                             "malformed varint in packed field %u", f->num);
  }
  return KILN_OK;
}

kiln_status kiln_wire_get_fixed(const kiln_wire *r, const kiln_wire_field *f, kiln_wire_type elem,
                                void *out) {
  (void)r;
  if (f->type == elem) {
    uint64_t v = f->v;
    memcpy(out, &v, fixed_size(elem)); /* little-endian host */
    return KILN_OK;
  }
  if (f->len) memcpy(out, f->data, f->len);
  return KILN_OK;
}

/* ---- writing ---- */

void kiln_wire_put_raw(kiln_wire_writer *w, const void *p, size_t n) {
  w->n += n;
  if (!n) return;
  if (w->buf) kiln_strbuf_append(w->buf, p, n);
  else if (w->file) kiln_file_write(w->file, p, n);
}

void kiln_wire_put_varint(kiln_wire_writer *w, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  kiln_wire_put_raw(w, b, n);
}

void kiln_wire_put_tag(kiln_wire_writer *w, uint32_t field, kiln_wire_type type) {
  kiln_wire_put_varint(w, ((uint64_t)field << 3) | (uint64_t)type);
}

void kiln_wire_put_int(kiln_wire_writer *w, uint32_t field, int64_t v) {
  kiln_wire_put_tag(w, field, KILN_WIRE_VARINT);
  kiln_wire_put_varint(w, (uint64_t)v);
}

void kiln_wire_put_f32(kiln_wire_writer *w, uint32_t field, float v) {
  kiln_wire_put_tag(w, field, KILN_WIRE_I32);
  kiln_wire_put_raw(w, &v, 4);
}

void kiln_wire_put_bytes(kiln_wire_writer *w, uint32_t field, const void *p, size_t n) {
  kiln_wire_put_tag(w, field, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, n);
  kiln_wire_put_raw(w, p, n);
}

void kiln_wire_put_str(kiln_wire_writer *w, uint32_t field, const char *s) {
  if (s) kiln_wire_put_bytes(w, field, s, strlen(s));
}

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

void kiln_wire_put_packed_i64(kiln_wire_writer *w, uint32_t field, const int64_t *v, size_t n) {
  if (!n) return;
  uint64_t len = 0;
  for (size_t i = 0; i < n; i++) len += varint_size((uint64_t)v[i]);
  kiln_wire_put_tag(w, field, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, len);
  for (size_t i = 0; i < n; i++) kiln_wire_put_varint(w, (uint64_t)v[i]);
}

void kiln_wire_put_packed_f32(kiln_wire_writer *w, uint32_t field, const float *v, size_t n) {
  if (!n) return;
  kiln_wire_put_tag(w, field, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, (uint64_t)n * 4);
  kiln_wire_put_raw(w, v, n * 4);
}

static kiln_status count_msg(kiln_wire_msg_fn fn, const void *arg, uint64_t *out) {
  kiln_wire_writer c = {0};
  KILN_TRY(fn(&c, arg));
  *out = c.n;
  return KILN_OK;
}

kiln_status kiln_wire_put_msg(kiln_wire_writer *w, uint32_t field, kiln_wire_msg_fn fn,
                              const void *arg) {
  uint64_t len;
  KILN_TRY(count_msg(fn, arg, &len));
  kiln_wire_put_tag(w, field, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, len);
  if (!w->buf && !w->file) {
    w->n += len;
    return KILN_OK;
  }
  uint64_t before = w->n;
  KILN_TRY(fn(w, arg));
  if (w->n - before != len)
    return KILN_BUG("message size changed between passes (%llu vs %llu)", (unsigned long long)len,
                    (unsigned long long)(w->n - before));
  return KILN_OK;
}

kiln_status kiln_wire_write_buf(kiln_strbuf *out, kiln_wire_msg_fn fn, const void *arg) {
  uint64_t len;
  KILN_TRY(count_msg(fn, arg, &len));
  if (len > SIZE_MAX / 2) return kiln_error(KILN_ERR_OOM, "message too large");
  if (out->cap < out->len + (size_t)len + 1) { /* size exactly: no doubling of a big buffer */
    char *p = realloc(out->data, out->len + (size_t)len + 1);
    if (!p) return kiln_error(KILN_ERR_OOM, "cannot allocate %llu bytes", (unsigned long long)len);
    out->data = p;
    out->cap = out->len + (size_t)len + 1;
  }
  kiln_wire_writer w = {.buf = out};
  KILN_TRY(fn(&w, arg));
  out->data[out->len] = '\0';
  return KILN_OK;
}

kiln_status kiln_wire_write_file(const char *path, kiln_wire_msg_fn fn, const void *arg) {
  kiln_file_writer *f;
  KILN_TRY(kiln_file_open(path, &f));
  kiln_wire_writer w = {.file = f};
  kiln_status st = fn(&w, arg);
  if (st) {
    kiln_file_abort(f);
    return st;
  }
  return kiln_file_commit(f);
}
