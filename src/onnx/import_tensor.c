/* TensorProto, SparseTensorProto and TypeProto decoding.
 *
 * A TensorProto is read in two passes over its fields: the first collects
 * dims, dtype, the raw_data span and how many elements each typed field
 * holds (so the tensor is allocated once, at its final size); the second
 * decodes the typed fields straight into the tensor. raw_data is copied once
 * (and unpacked for sub-byte types); external data is read with pread
 * straight into the tensor. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

enum {
  F_DIMS = 1,
  F_DTYPE = 2,
  F_SEGMENT = 3,
  F_FLOAT = 4,
  F_INT32 = 5,
  F_STRING = 6,
  F_INT64 = 7,
  F_NAME = 8,
  F_RAW = 9,
  F_DOUBLE = 10,
  F_UINT64 = 11,
  F_EXTERNAL = 13,
  F_LOCATION = 14,
  F_NFIELDS = 15
};

typedef struct tensor_msg {
  size_t offset; /* of the message, for errors */
  int rank;
  int64_t dims[KILN_MAX_RANK];
  int32_t dtype;
  const char *name;
  const uint8_t *raw;
  size_t raw_len;
  bool has_raw;
  int32_t location;
  const char *ext_location, *ext_offset, *ext_length;
  size_t counts[F_NFIELDS]; /* elements per typed data field */
} tensor_msg;

static kiln_status terr(kiln_onnx_src *s, const tensor_msg *m, kiln_code code, const char *msg) {
  return kiln_wire_error(&s->w, code, m->offset, "tensor '%s': %s", m->name ? m->name : "", msg);
}

void kiln_onnx_release(const kiln_onnx_src *s, const uint8_t *p, size_t n) {
  if (!s->mapped || !n) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static bool sub_byte(kiln_dtype t) {
  int bits = kiln_dtype_bits(t);
  return bits > 0 && bits < 8;
}

kiln_status kiln_onnx_packed_bytes(kiln_dtype t, int64_t numel, size_t *out) {
  int bits = kiln_dtype_bits(t);
  int64_t n;
  if (bits > 0 && bits < 8) {
    int per = 8 / bits;
    n = numel / per + (numel % per != 0);
  } else if (kiln_mul_overflow_i64(numel, (int64_t)kiln_dtype_size(t), &n)) {
    return kiln_invalid("tensor of %lld elements overflows its byte size", (long long)numel);
  }
  *out = (size_t)n;
  return KILN_OK;
}

/* ---- pass 1: field survey ---- */

static kiln_status read_entry(kiln_onnx_src *s, const kiln_wire_field *f, kiln_arena *a,
                              tensor_msg *m) {
  kiln_wire r = kiln_wire_sub(&s->w, f->data, f->len), tmp = r;
  kiln_wire_field e;
  const char *key = NULL, *val = NULL;
  size_t val_len = 0;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &e));
    if (!e.num) break;
    if (e.num == 1) KILN_TRY(kiln_wire_str(&tmp, &e, a, &key));
    if (e.num == 2) {
      KILN_TRY(kiln_wire_str(&tmp, &e, a, &val));
      val_len = (size_t)e.len;
    }
  }
  if (!key || !val) return KILN_OK;
  if (strlen(val) != val_len)
    return kiln_invalid("external data entry '%s' contains a NUL byte", key);
  if (strcmp(key, "location") == 0) m->ext_location = val;
  else if (strcmp(key, "offset") == 0) m->ext_offset = val;
  else if (strcmp(key, "length") == 0) m->ext_length = val;
  return KILN_OK;
}

static kiln_status read_dims(kiln_onnx_src *s, const kiln_wire *r, const kiln_wire_field *f,
                             tensor_msg *m) {
  size_t n;
  KILN_TRY(kiln_wire_count(r, f, KILN_WIRE_VARINT, &n));
  if (n > (size_t)(KILN_MAX_RANK - m->rank))
    return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f->offset, "tensor has more than %d dims",
                           KILN_MAX_RANK);
  uint64_t v[KILN_MAX_RANK];
  KILN_TRY(kiln_wire_get_varints(r, f, v));
  for (size_t i = 0; i < n; i++) m->dims[m->rank++] = (int64_t)v[i];
  return KILN_OK;
}

static kiln_wire_type data_elem_type(uint32_t field) {
  switch (field) {
  case F_FLOAT: return KILN_WIRE_I32;
  case F_DOUBLE: return KILN_WIRE_I64;
  case F_STRING: return KILN_WIRE_LEN;
  default: return KILN_WIRE_VARINT;
  }
}

static kiln_status survey_field(kiln_onnx_src *s, kiln_wire *r, const kiln_wire_field *f,
                                kiln_arena *a, tensor_msg *m) {
  size_t n;
  switch (f->num) {
  case F_DIMS: return read_dims(s, r, f, m);
  case F_DTYPE: return kiln_wire_i32(r, f, &m->dtype);
  case F_SEGMENT: return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f->offset, "tensor segments");
  case F_NAME: return kiln_wire_name(r, f, a, &m->name);
  case F_RAW:
    KILN_TRY(kiln_wire_bytes(r, f));
    m->raw = f->data, m->raw_len = f->len, m->has_raw = true;
    return KILN_OK;
  case F_EXTERNAL: KILN_TRY(kiln_wire_bytes(r, f)); return read_entry(s, f, a, m);
  case F_LOCATION: return kiln_wire_i32(r, f, &m->location);
  case F_STRING:
    KILN_TRY(kiln_wire_bytes(r, f));
    m->counts[F_STRING]++;
    return KILN_OK;
  case F_FLOAT:
  case F_INT32:
  case F_INT64:
  case F_DOUBLE:
  case F_UINT64:
    KILN_TRY(kiln_wire_count(r, f, data_elem_type(f->num), &n));
    m->counts[f->num] += n; /* bounded by the buffer length: no overflow */
    return KILN_OK;
  default: return KILN_OK; /* doc_string, metadata_props, unknown fields */
  }
}

/* The typed field that holds elements of dtype t. */
static uint32_t data_field_of(kiln_dtype t) {
  switch (t) {
  case KILN_F32: return F_FLOAT;
  case KILN_STRING: return F_STRING;
  case KILN_I64: return F_INT64;
  case KILN_F64: return F_DOUBLE;
  case KILN_U32:
  case KILN_U64: return F_UINT64;
  default: return F_INT32;
  }
}

static const char *field_name(uint32_t f) {
  switch (f) {
  case F_FLOAT: return "float_data";
  case F_INT32: return "int32_data";
  case F_STRING: return "string_data";
  case F_INT64: return "int64_data";
  case F_DOUBLE: return "double_data";
  default: return "uint64_data";
  }
}

/* ---- pass 2: element decoding ---- */

/* Unpacks n sub-byte elements of `bits` bits from src into one byte each.
 * Runs backwards so src may be the start of dst (in-place unpacking). */
static void unpack_bits(uint8_t *dst, const uint8_t *src, int64_t n, int bits) {
  int per = 8 / bits;
  uint8_t mask = (uint8_t)((1u << bits) - 1);
  for (int64_t i = n - 1; i >= 0; i--)
    dst[i] = (uint8_t)((src[i / per] >> ((i % per) * bits)) & mask);
}

/* Stores value v (an int32_data/int64_data/uint64_data element) at *pos. */
static void store_word(kiln_tensor *t, size_t *pos, uint64_t v) {
  int bits = kiln_dtype_bits(t->dtype);
  uint8_t *d = t->data;
  if (bits > 0 && bits < 8) {
    for (int k = 0; k < 8 / bits && (int64_t)*pos < t->numel; k++)
      d[(*pos)++] = (uint8_t)((v >> (k * bits)) & ((1u << bits) - 1));
    return;
  }
  if ((int64_t)*pos >= t->numel) return;
  size_t sz = kiln_dtype_size(t->dtype);
  if (t->dtype == KILN_BOOL) v = v != 0;
  memcpy(d + *pos * sz, &v, sz); /* low bytes: little-endian */
  (*pos)++;
}

static kiln_status decode_field(kiln_onnx_src *s, const kiln_wire *r, const kiln_wire_field *f,
                                kiln_tensor *t, size_t *pos) {
  if (f->num == F_STRING) {
    char **strs = t->data;
    if ((int64_t)*pos < t->numel)
      KILN_TRY(kiln_wire_str(r, f, NULL, (const char **)&strs[(*pos)++]));
    return KILN_OK;
  }
  if (f->num == F_FLOAT || f->num == F_DOUBLE) {
    size_t n, sz = f->num == F_FLOAT ? 4 : 8;
    KILN_TRY(kiln_wire_count(r, f, data_elem_type(f->num), &n));
    if (n > (size_t)t->numel - *pos) return KILN_BUG("element count changed");
    KILN_TRY(kiln_wire_get_fixed(r, f, data_elem_type(f->num), (uint8_t *)t->data + *pos * sz));
    *pos += n;
    return KILN_OK;
  }
  if (f->type == KILN_WIRE_VARINT) {
    store_word(t, pos, f->v);
    return KILN_OK;
  }
  const uint8_t *p = f->data, *end = f->data + f->len;
  while (p < end) {
    uint64_t v;
    const uint8_t *at = p;
    if (!kiln_wire_varint(&p, end, &v))
      return kiln_wire_error(&s->w, KILN_ERR_INVALID, (size_t)(at - s->w.base),
                             "malformed varint in packed field %u", f->num);
    store_word(t, pos, v);
  }
  return KILN_OK;
}

static kiln_status decode_typed(kiln_onnx_src *s, const uint8_t *data, size_t len, uint32_t field,
                                kiln_tensor *t) {
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  size_t pos = 0;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    if (f.num == field) KILN_TRY(decode_field(s, &r, &f, t, &pos));
  }
  if (t->dtype == KILN_STRING) /* numel matched the count: every slot is set */
    for (int64_t i = 0; i < t->numel; i++)
      if (!((char **)t->data)[i]) ((char **)t->data)[i] = kiln_xstrdup("");
  return KILN_OK;
}

static kiln_status check_typed(kiln_onnx_src *s, const tensor_msg *m, kiln_dtype dt, int64_t numel,
                               uint32_t *out_field) {
  uint32_t want = data_field_of(dt);
  char msg[160];
  for (uint32_t fl = F_FLOAT; fl < F_NFIELDS; fl++) {
    if (fl == want || !m->counts[fl]) continue;
    snprintf(msg, sizeof msg, "field %s cannot hold elements of type %s", field_name(fl),
             kiln_dtype_onnx_name(dt));
    return terr(s, m, KILN_ERR_INVALID, msg);
  }
  size_t expect = (size_t)numel; /* sub-byte types: one packed byte per int32_data word */
  if (sub_byte(dt)) KILN_TRY(kiln_onnx_packed_bytes(dt, numel, &expect));
  if (m->counts[want] != expect) {
    snprintf(msg, sizeof msg, "%s has %zu elements, the shape needs %zu", field_name(want),
             m->counts[want], expect);
    return terr(s, m, KILN_ERR_INVALID, msg);
  }
  *out_field = want;
  return KILN_OK;
}

/* ---- external data ---- */

static kiln_status parse_size(kiln_onnx_src *s, const tensor_msg *m, const char *key, const char *v,
                              int64_t *out) {
  kiln_status st = kiln_parse_i64(v, 0, INT64_MAX, key, out);
  if (!st) return KILN_OK;
  char msg[300];
  snprintf(msg, sizeof msg, "external data %s", kiln_status_message(st));
  kiln_status_free(st);
  return terr(s, m, KILN_ERR_INVALID, msg);
}

/* Normalizes a relative path lexically; false if it is absolute or climbs out with "..". */
static bool normalize_rel(const char *in, kiln_strbuf *out) {
  if (!in[0] || in[0] == '/') return false;
  size_t marks[256];
  int depth = 0;
  for (const char *p = in; *p;) {
    const char *q = strchr(p, '/');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      if (depth == 0) return false;
      out->len = marks[--depth];
      if (out->data) out->data[out->len] = '\0';
    } else if (n && !(n == 1 && p[0] == '.')) {
      if (depth == 256) return false;
      marks[depth++] = out->len;
      if (out->len) kiln_strbuf_append(out, "/", 1);
      kiln_strbuf_append(out, p, n);
    }
    p += n + (q != NULL);
  }
  return depth > 0;
}

/* Opens base_dir/location after checking it stays inside base_dir (symlinks resolved). */
static kiln_status open_external(kiln_onnx_src *s, const tensor_msg *m, int *out_fd) {
  kiln_strbuf rel = {0}, full = {0};
  kiln_status st = KILN_OK;
  char *real_base = NULL, *real_file = NULL;
  if (!normalize_rel(m->ext_location, &rel)) {
    st = terr(s, m, KILN_ERR_INVALID,
              "external data location must be a relative path inside the model's folder");
    goto done;
  }
  kiln_strbuf_printf(&full, "%s/%s", s->base_dir, rel.data);
  real_base = realpath(s->base_dir, NULL);
  real_file = realpath(full.data, NULL);
  if (!real_base || !real_file) {
    st = kiln_wire_error(&s->w, KILN_ERR_IO, m->offset,
                         "tensor '%s': cannot open external data '%s': %s", m->name ? m->name : "",
                         full.data, strerror(errno));
    goto done;
  }
  size_t bl = strlen(real_base);
  if (strncmp(real_file, real_base, bl) != 0 || (real_file[bl] != '/' && bl > 1)) {
    st = terr(s, m, KILN_ERR_INVALID, "external data location leaves the model's folder");
    goto done;
  }
  st = kiln_open_read(real_file, out_fd); /* a folder or a FIFO is refused, never waited on */
  if (st) st = kiln_status_annotate(st, "external data of tensor '%s'", m->name ? m->name : "");
done:
  free(real_base);
  free(real_file);
  kiln_strbuf_free(&rel);
  kiln_strbuf_free(&full);
  return st;
}

static kiln_status pread_all(int fd, void *dst, size_t n, int64_t off, const char *name) {
  uint8_t *d = dst;
  while (n) {
    ssize_t k = pread(fd, d, n > (1u << 30) ? (1u << 30) : n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return kiln_error(KILN_ERR_IO, "tensor '%s': cannot read external data", name);
    d += k, n -= (size_t)k, off += k;
  }
  return KILN_OK;
}

/* The tensor of the message's dtype and shape, allocated only once the data
 * present has been checked to fill it: a few bytes of input never make a huge
 * allocation. */
static kiln_status alloc_tensor(kiln_onnx_src *s, const tensor_msg *m, kiln_tensor **out) {
  kiln_status st = kiln_tensor_new((kiln_dtype)m->dtype, m->rank, m->dims, out);
  if (st)
    st = kiln_status_annotate(st, "%s: tensor '%s' at byte %zu", s->w.path, m->name ? m->name : "",
                              m->offset);
  return st;
}

/* The bytes [off, off + len) of a file of `size` bytes hold the tensor's `need` bytes (len
 * < 0: not given, then the file must end where the tensor does). Each message says which
 * number is wrong: "'w.bin' has 3000 bytes: the tensor needs 4000 bytes from offset 0,
 * 1000 are missing". */
static kiln_status check_extent(kiln_onnx_src *s, const tensor_msg *m, int64_t off, int64_t len,
                                int64_t size, int64_t need) {
  char msg[512];
  const char *f = m->ext_location;
  if (len >= 0 && len != need)
    snprintf(msg, sizeof msg, "external data length is %lld bytes, the tensor needs %lld",
             (long long)len, (long long)need);
  else if (off > size)
    snprintf(msg, sizeof msg, "external data offset %lld is past the end of '%.200s' (%lld bytes)",
             (long long)off, f, (long long)size);
  else if (size - off < need)
    snprintf(msg, sizeof msg,
             "external data file '%.200s' has %lld bytes: the tensor needs %lld bytes from offset "
             "%lld, %lld are missing",
             f, (long long)size, (long long)need, (long long)off, (long long)(need - (size - off)));
  else if (len < 0 && size - off > need)
    snprintf(msg, sizeof msg,
             "external data file '%.200s' has %lld bytes after offset %lld, the tensor needs "
             "%lld (no length is given, so the data must end the file)",
             f, (long long)(size - off), (long long)off, (long long)need);
  else return KILN_OK;
  return terr(s, m, KILN_ERR_INVALID, msg);
}

static kiln_status read_external(kiln_onnx_src *s, const tensor_msg *m, int64_t numel,
                                 kiln_tensor **out) {
  if (!s->base_dir)
    return terr(s, m, KILN_ERR_INVALID, "external data is not allowed here (no model folder)");
  if (m->dtype == KILN_STRING)
    return terr(s, m, KILN_ERR_INVALID, "string tensors cannot be external");
  if (!m->ext_location) return terr(s, m, KILN_ERR_INVALID, "external data has no location");
  int64_t off = 0, len = -1;
  if (m->ext_offset) KILN_TRY(parse_size(s, m, "offset", m->ext_offset, &off));
  if (m->ext_length) KILN_TRY(parse_size(s, m, "length", m->ext_length, &len));
  size_t need;
  KILN_TRY(kiln_onnx_packed_bytes((kiln_dtype)m->dtype, numel, &need));
  int fd;
  KILN_TRY(open_external(s, m, &fd));
  struct stat sb;
  kiln_status st = KILN_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = terr(s, m, KILN_ERR_INVALID, "external data is not a regular file");
  else st = check_extent(s, m, off, len, (int64_t)sb.st_size, (int64_t)need);
  if (!st) st = alloc_tensor(s, m, out);
  if (!st) st = pread_all(fd, (*out)->data, need, off, m->name ? m->name : "");
  close(fd);
  if (!st && sub_byte((*out)->dtype))
    unpack_bits((*out)->data, (*out)->data, numel, kiln_dtype_bits((*out)->dtype));
  return st;
}

/* ---- TensorProto ---- */

/* memcpy in slices, letting the OS drop each slice of a mapped file once copied:
 * loading peaks at one copy of the weights, not one plus the largest tensor. */
static void copy_released(const kiln_onnx_src *s, uint8_t *dst, const uint8_t *src, size_t n) {
  const size_t slice = (size_t)4 << 20;
  for (size_t done = 0; done < n; done += slice) {
    size_t k = n - done < slice ? n - done : slice;
    memcpy(dst + done, src + done, k);
    kiln_onnx_release(s, src + done, k);
  }
}

static kiln_status read_raw(kiln_onnx_src *s, const tensor_msg *m, int64_t numel,
                            kiln_tensor **out) {
  if (m->dtype == KILN_STRING)
    return terr(s, m, KILN_ERR_INVALID, "string tensors cannot use raw_data");
  size_t need;
  KILN_TRY(kiln_onnx_packed_bytes((kiln_dtype)m->dtype, numel, &need));
  if (m->raw_len != need) {
    char msg[128];
    snprintf(msg, sizeof msg, "raw_data has %zu bytes, the shape needs %zu", m->raw_len, need);
    return terr(s, m, KILN_ERR_INVALID, msg);
  }
  KILN_TRY(alloc_tensor(s, m, out));
  kiln_tensor *t = *out;
  if (sub_byte(t->dtype)) unpack_bits(t->data, m->raw, numel, kiln_dtype_bits(t->dtype));
  else copy_released(s, t->data, m->raw, need);
  if (t->dtype == KILN_BOOL)
    for (int64_t i = 0; i < numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
  return KILN_OK;
}

static kiln_status check_dtype(kiln_onnx_src *s, const tensor_msg *m) {
  if (kiln_dtype_valid(m->dtype)) return KILN_OK;
  char msg[96];
  if (m->dtype == KILN_C64 || m->dtype == KILN_C128) {
    snprintf(msg, sizeof msg, "complex element type %s", kiln_dtype_onnx_name(m->dtype));
    return terr(s, m, KILN_ERR_UNSUPPORTED, msg);
  }
  snprintf(msg, sizeof msg, "invalid data_type %d", (int)m->dtype);
  return terr(s, m, KILN_ERR_INVALID, msg);
}

static kiln_status build_tensor(kiln_onnx_src *s, const tensor_msg *m, const uint8_t *data,
                                size_t len, kiln_tensor **out) {
  KILN_TRY(check_dtype(s, m));
  int64_t numel;
  kiln_status st = kiln_shape_numel(m->rank, m->dims, &numel);
  if (st)
    return kiln_status_annotate(st, "%s: tensor '%s' at byte %zu", s->w.path,
                                m->name ? m->name : "", m->offset);
  if (m->location == 1) return read_external(s, m, numel, out);
  if (m->location != 0) return terr(s, m, KILN_ERR_INVALID, "invalid data_location");
  if (m->has_raw) return read_raw(s, m, numel, out);
  uint32_t field;
  KILN_TRY(check_typed(s, m, (kiln_dtype)m->dtype, numel, &field));
  KILN_TRY(alloc_tensor(s, m, out));
  return decode_typed(s, data, len, field, *out);
}

kiln_status kiln_onnx_read_tensor(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                  const char **out_name, kiln_tensor **out) {
  tensor_msg m;
  memset(&m, 0, sizeof m);
  m.offset = (size_t)(data - s->w.base);
  kiln_arena *scratch = a ? a : kiln_arena_new();
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  kiln_status st = KILN_OK;
  kiln_tensor *t = NULL;
  for (;;) {
    if ((st = kiln_wire_next(&r, &f)) || !f.num) break;
    if ((st = survey_field(s, &r, &f, scratch, &m))) break;
  }
  if (!st) st = build_tensor(s, &m, data, len, &t);
  if (!st && out_name && a) *out_name = m.name ? m.name : "";
  if (!a) kiln_arena_free(scratch);
  if (st) {
    kiln_tensor_free(t);
    return st;
  }
  kiln_onnx_release(s, data, len);
  *out = t;
  return KILN_OK;
}

/* ---- SparseTensorProto -> dense ---- */

static kiln_status scatter(kiln_onnx_src *s, size_t off, const kiln_tensor *vals,
                           const kiln_tensor *idx, kiln_tensor *dense) {
  int64_t nnz = vals->numel;
  bool coords = idx->rank == 2;
  if (vals->rank != 1 || !(idx->rank == 1 || coords) || idx->dims[0] != nnz ||
      (coords && idx->dims[1] != dense->rank) || !kiln_dtype_is_int(idx->dtype))
    return kiln_wire_error(&s->w, KILN_ERR_INVALID, off,
                           "sparse tensor: values must be [NNZ] and indices [NNZ] or [NNZ,rank]");
  size_t sz = kiln_dtype_size(dense->dtype);
  for (int64_t k = 0; k < nnz; k++) {
    int64_t lin = 0;
    for (int d = 0; d < (coords ? dense->rank : 1); d++) {
      int64_t i = kiln_load_i64(idx->dtype, idx->data, (size_t)(coords ? k * dense->rank + d : k));
      int64_t ext = coords ? dense->dims[d] : dense->numel;
      if (i < 0 || i >= ext)
        return kiln_wire_error(&s->w, KILN_ERR_INVALID, off,
                               "sparse tensor: index %lld out of range", (long long)i);
      lin = lin * ext + i;
    }
    memcpy((uint8_t *)dense->data + (size_t)lin * sz, (const uint8_t *)vals->data + (size_t)k * sz,
           sz);
  }
  return KILN_OK;
}

static kiln_status sparse_fields(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                 const char **name, kiln_tensor **vals, kiln_tensor **idx,
                                 tensor_msg *m) {
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num == 3) {
      KILN_TRY(read_dims(s, &r, &f, m));
    } else if (f.num == 1 || f.num == 2) {
      kiln_tensor **dst = f.num == 1 ? vals : idx;
      KILN_TRY(kiln_wire_bytes(&r, &f));
      kiln_tensor_free(*dst);
      *dst = NULL;
      size_t mark = kiln_wire_push(&s->w, f.num == 1 ? ".values" : ".indices");
      kiln_status st = kiln_onnx_read_tensor(s, f.data, f.len, a, f.num == 1 ? name : NULL, dst);
      kiln_wire_pop(&s->w, mark);
      KILN_TRY(st);
    }
  }
}

/* A sparse tensor's dense form is allocated from its dims alone, so it is capped:
 * a few bytes of input must not ask for terabytes. */
#define MAX_SPARSE_DENSE_BYTES ((int64_t)1 << 30)

static kiln_status check_dense_size(kiln_onnx_src *s, size_t off, kiln_dtype dt,
                                    const tensor_msg *m) {
  int64_t numel, bytes;
  kiln_status st = kiln_shape_numel(m->rank, m->dims, &numel);
  if (st) return kiln_status_annotate(st, "%s: sparse tensor at byte %zu", s->w.path, off);
  if (kiln_mul_overflow_i64(numel, (int64_t)kiln_dtype_size(dt), &bytes) ||
      bytes > MAX_SPARSE_DENSE_BYTES)
    return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, off,
                           "sparse tensor of %lld elements: dense form above %lld bytes",
                           (long long)numel, (long long)MAX_SPARSE_DENSE_BYTES);
  return KILN_OK;
}

kiln_status kiln_onnx_read_sparse(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                  const char **out_name, kiln_tensor **out) {
  size_t off = (size_t)(data - s->w.base);
  kiln_tensor *vals = NULL, *idx = NULL, *dense = NULL;
  const char *name = "";
  tensor_msg m;
  memset(&m, 0, sizeof m);
  kiln_status st = sparse_fields(s, data, len, a, &name, &vals, &idx, &m);
  if (!st && (!vals || !idx))
    st = kiln_wire_error(&s->w, KILN_ERR_INVALID, off, "sparse tensor lacks values or indices");
  if (!st && vals->dtype == KILN_STRING)
    st = kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, off, "sparse string tensors");
  if (!st) st = check_dense_size(s, off, vals->dtype, &m);
  if (!st) st = kiln_tensor_new(vals->dtype, m.rank, m.dims, &dense);
  if (!st) st = scatter(s, off, vals, idx, dense);
  kiln_tensor_free(vals);
  kiln_tensor_free(idx);
  if (st) {
    kiln_tensor_free(dense);
    return st;
  }
  if (out_name) *out_name = name;
  *out = dense;
  return KILN_OK;
}

/* ---- TypeProto ---- */

static kiln_status read_dim(kiln_onnx_src *s, const kiln_wire_field *df, kiln_arena *a,
                            kiln_dim *d) {
  kiln_wire r = kiln_wire_sub(&s->w, df->data, df->len);
  kiln_wire_field f;
  d->value = -1;
  d->sym = NULL;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num == 1) {
      KILN_TRY(kiln_wire_i64(&r, &f, &d->value));
      if (d->value < 0)
        return kiln_wire_error(&s->w, KILN_ERR_INVALID, f.offset, "negative dimension %lld",
                               (long long)d->value);
      d->sym = NULL;
    } else if (f.num == 2) {
      KILN_TRY(kiln_wire_name(&r, &f, a, &d->sym));
      d->value = -1;
      if (!d->sym[0]) d->sym = NULL;
    }
  }
}

static kiln_status read_shape(kiln_onnx_src *s, const kiln_wire_field *sf, kiln_arena *a,
                              kiln_type *t) {
  kiln_wire r = kiln_wire_sub(&s->w, sf->data, sf->len);
  kiln_wire_field f;
  t->rank = 0;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num != 1) continue;
    KILN_TRY(kiln_wire_bytes(&r, &f));
    if (t->rank == KILN_MAX_RANK)
      return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f.offset, "rank above %d", KILN_MAX_RANK);
    KILN_TRY(read_dim(s, &f, a, &t->dims[t->rank++]));
  }
}

static kiln_status read_tensor_type(kiln_onnx_src *s, const kiln_wire_field *tf, kiln_arena *a,
                                    kiln_type *t) {
  kiln_wire r = kiln_wire_sub(&s->w, tf->data, tf->len);
  kiln_wire_field f;
  int32_t et = 0;
  *t = kiln_type_unknown();
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) break;
    if (f.num == 1) KILN_TRY(kiln_wire_i32(&r, &f, &et));
    if (f.num == 2) {
      KILN_TRY(kiln_wire_bytes(&r, &f));
      KILN_TRY(read_shape(s, &f, a, t));
    }
  }
  if (et == KILN_C64 || et == KILN_C128)
    return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, tf->offset, "complex element type");
  if (et != 0 && !kiln_dtype_valid(et))
    return kiln_wire_error(&s->w, KILN_ERR_INVALID, tf->offset, "invalid elem_type %d", (int)et);
  t->kind = KILN_TYPE_TENSOR;
  t->dtype = (kiln_dtype)et;
  return KILN_OK;
}

static kiln_status read_type_rec(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                 kiln_type *out);

/* Sequence/Optional wrapper: its one field (elem_type = 1) is a TypeProto. */
static kiln_status read_elem(kiln_onnx_src *s, const kiln_wire_field *wf, kiln_arena *a,
                             kiln_type *elem) {
  kiln_wire r = kiln_wire_sub(&s->w, wf->data, wf->len);
  kiln_wire_field f;
  *elem = kiln_type_unknown();
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num == 1) {
      KILN_TRY(kiln_wire_bytes(&r, &f));
      KILN_TRY(read_type_rec(s, f.data, f.len, a, elem));
    }
  }
}

static kiln_status wrap_type(kiln_onnx_src *s, const kiln_wire_field *f, kiln_type elem,
                             kiln_type *out) {
  bool seq = f->num == 4;
  if (elem.kind == KILN_TYPE_TENSOR || (elem.kind == KILN_TYPE_UNKNOWN && seq)) {
    *out = elem;
    out->kind = seq ? KILN_TYPE_SEQUENCE : KILN_TYPE_OPTIONAL;
    return KILN_OK;
  }
  if (!seq && elem.kind == KILN_TYPE_SEQUENCE) {
    *out = elem;
    out->kind = KILN_TYPE_OPTIONAL;
    out->elem_seq = true;
    return KILN_OK;
  }
  return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f->offset, "%s of a %s",
                         seq ? "sequence" : "optional",
                         elem.kind == KILN_TYPE_UNKNOWN ? "missing type" : "non-tensor type");
}

static kiln_status read_type_rec(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                 kiln_type *out) {
  size_t off = (size_t)(data - s->w.base);
  KILN_TRY(kiln_wire_enter(&s->w, off));
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  kiln_status st = KILN_OK;
  *out = kiln_type_unknown();
  while (!st) {
    if ((st = kiln_wire_next(&r, &f)) || !f.num) break;
    if (f.num == 1 || f.num == 4 || f.num == 9 || f.num == 5 || f.num == 8)
      if ((st = kiln_wire_bytes(&r, &f))) break;
    kiln_type elem;
    switch (f.num) {
    case 1: st = read_tensor_type(s, &f, a, out); break;
    case 4:
    case 9:
      st = read_elem(s, &f, a, &elem);
      if (!st) st = wrap_type(s, &f, elem, out);
      break;
    case 5:
    case 8:
      st = kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f.offset, "%s types",
                           f.num == 5 ? "map" : "sparse tensor");
      break;
    default: break;
    }
  }
  kiln_wire_leave(&s->w);
  return st;
}

kiln_status kiln_onnx_read_type(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_arena *a,
                                kiln_type *out) {
  return read_type_rec(s, data, len, a, out);
}
