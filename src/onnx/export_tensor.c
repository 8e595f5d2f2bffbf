/* TensorProto, SparseTensorProto and TypeProto writing. Tensors are written as
 * raw_data (little-endian, sub-byte types packed), strings as string_data; the
 * bytes stream from the tensor in small chunks, never through a second copy. */
#include <string.h>

#include "onnx_internal.h"

static bool sub_byte(kiln_dtype t) {
  int bits = kiln_dtype_bits(t);
  return bits > 0 && bits < 8;
}

/* Packs elements [first, first + 8/bits * n) of a one-per-byte buffer into n bytes. */
static void pack_bits(uint8_t *dst, const uint8_t *src, int64_t numel, int64_t first_byte, size_t n,
                      int bits) {
  int per = 8 / bits;
  uint8_t mask = (uint8_t)((1u << bits) - 1);
  for (size_t b = 0; b < n; b++) {
    uint8_t v = 0;
    for (int k = 0; k < per; k++) {
      int64_t i = (first_byte + (int64_t)b) * per + k;
      if (i < numel) v |= (uint8_t)((src[i] & mask) << (k * bits));
    }
    dst[b] = v;
  }
}

static kiln_status put_raw_data(kiln_wire_writer *w, const kiln_tensor *t) {
  size_t nbytes;
  KILN_TRY(kiln_onnx_packed_bytes(t->dtype, t->numel, &nbytes));
  kiln_wire_put_tag(w, 9, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, nbytes);
  if (!sub_byte(t->dtype) && t->dtype != KILN_BOOL) {
    kiln_wire_put_raw(w, t->data, nbytes);
    return KILN_OK;
  }
  uint8_t chunk[4096];
  const uint8_t *src = t->data;
  for (size_t done = 0; done < nbytes;) {
    size_t n = nbytes - done < sizeof chunk ? nbytes - done : sizeof chunk;
    if (t->dtype == KILN_BOOL)
      for (size_t i = 0; i < n; i++) chunk[i] = src[done + i] != 0;
    else pack_bits(chunk, src, t->numel, (int64_t)done, n, kiln_dtype_bits(t->dtype));
    kiln_wire_put_raw(w, chunk, n);
    done += n;
  }
  return KILN_OK;
}

kiln_status kiln_onnx_put_tensor(kiln_wire_writer *w, const kiln_tensor *t, const char *name) {
  if (!kiln_dtype_valid((int)t->dtype))
    return kiln_unsupported("cannot write a tensor of element type %d", (int)t->dtype);
  kiln_wire_put_packed_i64(w, 1, t->dims, (size_t)t->rank);
  kiln_wire_put_int(w, 2, t->dtype);
  if (name && name[0]) kiln_wire_put_str(w, 8, name);
  if (t->dtype != KILN_STRING) return put_raw_data(w, t);
  char *const *s = t->data;
  for (int64_t i = 0; i < t->numel; i++) kiln_wire_put_str(w, 6, s[i] ? s[i] : "");
  return KILN_OK;
}

/* ---- SparseTensorProto: every element, with linear indices ---- */

static kiln_status put_values(kiln_wire_writer *w, const void *arg) {
  kiln_tensor flat = *(const kiln_tensor *)arg;
  flat.rank = 1;
  flat.dims[0] = flat.numel;
  return kiln_onnx_put_tensor(w, &flat, NULL);
}

static kiln_status put_iota(kiln_wire_writer *w, const void *arg) {
  int64_t n = *(const int64_t *)arg;
  kiln_wire_put_packed_i64(w, 1, &n, 1);
  kiln_wire_put_int(w, 2, KILN_I64);
  kiln_wire_put_tag(w, 9, KILN_WIRE_LEN);
  kiln_wire_put_varint(w, (uint64_t)n * 8);
  int64_t chunk[512];
  for (int64_t i = 0; i < n;) {
    int64_t k = 0;
    for (; k < 512 && i < n; k++, i++) chunk[k] = i;
    kiln_wire_put_raw(w, chunk, (size_t)k * 8);
  }
  return KILN_OK;
}

kiln_status kiln_onnx_put_sparse(kiln_wire_writer *w, const kiln_tensor *t) {
  if (t->dtype == KILN_STRING) return kiln_unsupported("sparse string tensors");
  KILN_TRY(kiln_wire_put_msg(w, 1, put_values, t));
  KILN_TRY(kiln_wire_put_msg(w, 2, put_iota, &t->numel));
  kiln_wire_put_packed_i64(w, 3, t->dims, (size_t)t->rank);
  return KILN_OK;
}

/* ---- TypeProto ---- */

static kiln_status put_dim(kiln_wire_writer *w, const void *arg) {
  const kiln_dim *d = arg;
  if (d->value >= 0) kiln_wire_put_int(w, 1, d->value);
  else if (d->sym) kiln_wire_put_str(w, 2, d->sym);
  return KILN_OK;
}

static kiln_status put_shape(kiln_wire_writer *w, const void *arg) {
  const kiln_type *t = arg;
  for (int i = 0; i < t->rank; i++) KILN_TRY(kiln_wire_put_msg(w, 1, put_dim, &t->dims[i]));
  return KILN_OK;
}

static kiln_status put_tensor_type(kiln_wire_writer *w, const void *arg) {
  const kiln_type *t = arg;
  kiln_wire_put_int(w, 1, t->dtype);
  if (t->rank >= 0) KILN_TRY(kiln_wire_put_msg(w, 2, put_shape, t));
  return KILN_OK;
}

static kiln_status put_tensor_type_proto(kiln_wire_writer *w, const void *arg) {
  return kiln_wire_put_msg(w, 1, put_tensor_type, arg);
}

static kiln_status put_seq_of_tensor(kiln_wire_writer *w, const void *arg) {
  return kiln_wire_put_msg(w, 1, put_tensor_type_proto, arg); /* Sequence.elem_type */
}

static kiln_status put_seq_type_proto(kiln_wire_writer *w, const void *arg) {
  return kiln_wire_put_msg(w, 4, put_seq_of_tensor, arg);
}

static kiln_status put_optional(kiln_wire_writer *w, const void *arg) {
  const kiln_type *t = arg;
  return kiln_wire_put_msg(w, 1, t->elem_seq ? put_seq_type_proto : put_tensor_type_proto, arg);
}

kiln_status kiln_onnx_put_type(kiln_wire_writer *w, const kiln_type *t) {
  switch (t->kind) {
  case KILN_TYPE_TENSOR: return kiln_wire_put_msg(w, 1, put_tensor_type, t);
  case KILN_TYPE_SEQUENCE: return kiln_wire_put_msg(w, 4, put_seq_of_tensor, t);
  case KILN_TYPE_OPTIONAL: return kiln_wire_put_msg(w, 9, put_optional, t);
  default: return KILN_OK;
  }
}
