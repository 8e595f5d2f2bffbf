/* Tensor files: ONNX .pb (TensorProto, SequenceProto, OptionalProto) and NumPy .npy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

/* ---- .pb ---- */

typedef struct pb_file {
  kiln_onnx_src src;
  uint8_t *data;
  size_t len;
  bool mapped;
  char *dir;
} pb_file;

static kiln_status pb_open(const char *path, const char *root, pb_file *f) {
  memset(f, 0, sizeof *f);
  KILN_TRY(kiln_onnx_map_file(path, &f->data, &f->len, &f->mapped));
  if (f->len == 0) {
    kiln_onnx_unmap(f->data, f->len, f->mapped);
    return kiln_invalid("%s: the file is empty (a .pb file holds one serialized %sProto)", path,
                        !strcmp(root, "sequence")   ? "Sequence"
                        : !strcmp(root, "optional") ? "Optional"
                                                    : "Tensor");
  }
  f->dir = kiln_onnx_dir_of(path);
  kiln_wire_ctx_init(&f->src.w, f->data, f->len, root);
  f->src.base_dir = f->dir;
  f->src.mapped = f->mapped;
  return KILN_OK;
}

static void pb_close(pb_file *f) {
  kiln_onnx_unmap(f->data, f->len, f->mapped);
  free(f->dir);
}

kiln_status kiln_pb_read_tensor(const char *path, kiln_tensor **out) {
  pb_file f;
  KILN_TRY(pb_open(path, "tensor", &f));
  kiln_status st = kiln_onnx_read_tensor(&f.src, f.data, f.len, NULL, NULL, out);
  pb_close(&f);
  return st ? kiln_status_annotate(st, "%s", path) : KILN_OK;
}

/* SequenceProto (tensor_values = 3) into a sequence of dtype elem (UNDEFINED: from the items). */
static kiln_status read_sequence(kiln_onnx_src *s, const uint8_t *data, size_t len, kiln_dtype elem,
                                 kiln_seq **out) {
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  kiln_seq *seq = kiln_seq_new(elem);
  kiln_status st = KILN_OK;
  for (;;) {
    if ((st = kiln_wire_next(&r, &f)) || !f.num) break;
    if (f.num >= 4 && f.num <= 7) {
      st = kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f.offset, "sequences of non-tensors");
      break;
    }
    if (f.num != 3) continue;
    kiln_tensor *t;
    size_t mark = kiln_wire_push(&s->w, ".tensor_values[%d]", seq->len);
    if (!(st = kiln_wire_bytes(&r, &f)))
      st = kiln_onnx_read_tensor(s, f.data, f.len, NULL, NULL, &t);
    kiln_wire_pop(&s->w, mark);
    if (st) break;
    if (seq->elem == KILN_UNDEFINED) seq->elem = t->dtype;
    kiln_seq_push(seq, t);
    if (t->dtype != seq->elem) {
      st = kiln_wire_error(&s->w, KILN_ERR_INVALID, f.offset, "sequence of %s holds a %s tensor",
                           kiln_dtype_name(seq->elem), kiln_dtype_name(t->dtype));
      break;
    }
  }
  if (st) {
    kiln_seq_free(seq);
    return st;
  }
  *out = seq;
  return KILN_OK;
}

/* OptionalProto: tensor_value = 3, sequence_value = 5; neither: an empty optional. */
static kiln_status read_optional(kiln_onnx_src *s, const uint8_t *data, size_t len,
                                 const kiln_type *expected, kiln_val *v) {
  kiln_wire r = kiln_wire_sub(&s->w, data, len);
  kiln_wire_field f;
  for (;;) {
    KILN_TRY(kiln_wire_next(&r, &f));
    if (!f.num) return KILN_OK;
    if (f.num == 4 || f.num == 6 || f.num == 7)
      return kiln_wire_error(&s->w, KILN_ERR_UNSUPPORTED, f.offset, "optionals of non-tensors");
    if (f.num != 3 && f.num != 5) continue;
    KILN_TRY(kiln_wire_bytes(&r, &f));
    kiln_tensor_free(v->t);
    kiln_seq_free(v->seq);
    v->t = NULL, v->seq = NULL;
    if (f.num == 3) KILN_TRY(kiln_onnx_read_tensor(s, f.data, f.len, NULL, NULL, &v->t));
    else KILN_TRY(read_sequence(s, f.data, f.len, expected->dtype, &v->seq));
    v->elem_seq = f.num == 5;
  }
}

static kiln_status read_value(kiln_onnx_src *s, const uint8_t *data, size_t len,
                              const kiln_type *expected, kiln_val **out) {
  kiln_type_kind kind = expected ? expected->kind : KILN_TYPE_TENSOR;
  if (kind == KILN_TYPE_SEQUENCE) {
    kiln_seq *seq;
    KILN_TRY(read_sequence(s, data, len, expected->dtype, &seq));
    *out = kiln_val_new(KILN_TYPE_SEQUENCE);
    (*out)->seq = seq;
    return KILN_OK;
  }
  if (kind == KILN_TYPE_OPTIONAL) {
    kiln_val *v = kiln_val_new(KILN_TYPE_OPTIONAL);
    v->elem_seq = expected->elem_seq;
    v->opt_dtype = expected->dtype;
    kiln_status st = read_optional(s, data, len, expected, v);
    if (st) {
      kiln_val_free(v);
      return st;
    }
    *out = v;
    return KILN_OK;
  }
  kiln_tensor *t;
  KILN_TRY(kiln_onnx_read_tensor(s, data, len, NULL, NULL, &t));
  *out = kiln_val_tensor(t);
  return KILN_OK;
}

kiln_status kiln_pb_read_value(const char *path, const kiln_type *expected, kiln_val **out) {
  pb_file f;
  const char *root = expected && expected->kind == KILN_TYPE_SEQUENCE   ? "sequence"
                     : expected && expected->kind == KILN_TYPE_OPTIONAL ? "optional"
                                                                        : "tensor";
  KILN_TRY(pb_open(path, root, &f));
  kiln_status st = read_value(&f.src, f.data, f.len, expected, out);
  pb_close(&f);
  return st ? kiln_status_annotate(st, "%s", path) : KILN_OK;
}

typedef struct named_tensor {
  const kiln_tensor *t;
  const char *name;
} named_tensor;

static kiln_status put_named(kiln_wire_writer *w, const void *arg) {
  const named_tensor *nt = arg;
  return kiln_onnx_put_tensor(w, nt->t, nt->name);
}

kiln_status kiln_pb_write_tensor(const char *path, const kiln_tensor *t, const char *name) {
  named_tensor nt = {t, name};
  return kiln_wire_write_file(path, put_named, &nt);
}

/* ---- .npy ---- */

typedef struct npy_kind {
  char code[3];
  kiln_dtype dtype;
} npy_kind;

static const npy_kind npy_kinds[] = {
    {"f2", KILN_F16}, {"f4", KILN_F32}, {"f8", KILN_F64}, {"i1", KILN_I8},
    {"i2", KILN_I16}, {"i4", KILN_I32}, {"i8", KILN_I64}, {"u1", KILN_U8},
    {"u2", KILN_U16}, {"u4", KILN_U32}, {"u8", KILN_U64}, {"b1", KILN_BOOL},
};

static kiln_status npy_dtype(const char *descr, kiln_dtype *out) {
  char order = descr[0];
  const char *code = strchr("<>|=", order) && order ? descr + 1 : descr;
  for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++) {
    if (strcmp(code, npy_kinds[i].code) != 0) continue;
    if (order == '>' && code[1] != '1')
      return kiln_unsupported("big-endian .npy data ('%s')", descr);
    *out = npy_kinds[i].dtype;
    return KILN_OK;
  }
  return kiln_unsupported("numpy dtype '%s' is not supported (bfloat16, float8 and 4-bit types "
                          "have no numpy dtype: use a .pb file)",
                          descr);
}

typedef struct npy_header {
  char descr[16];
  bool fortran, has_descr, has_shape;
  int rank;
  int64_t dims[KILN_MAX_RANK];
} npy_header;

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* 'text' or "text" into buf; NULL on error. */
static const char *npy_string(const char *p, char *buf, size_t n) {
  char q = *p;
  if (q != '\'' && q != '"') return NULL;
  const char *e = strchr(p + 1, q);
  if (!e || (size_t)(e - p - 1) >= n) return NULL;
  memcpy(buf, p + 1, (size_t)(e - p - 1));
  buf[e - p - 1] = '\0';
  return e + 1;
}

/* (d0, d1, ...) */
static const char *npy_shape(const char *p, npy_header *h) {
  if (*p++ != '(') return NULL;
  for (p = skip_ws(p); *p != ')'; p = skip_ws(p)) {
    char *end;
    errno = 0;
    long long d = strtoll(p, &end, 10);
    if (end == p || errno || d < 0 || h->rank == KILN_MAX_RANK) return NULL;
    h->dims[h->rank++] = d;
    p = skip_ws(end);
    if (*p == ',') p++;
    else if (*p != ')') return NULL;
  }
  return p + 1;
}

static const char *npy_entry(const char *p, npy_header *h) {
  char key[32];
  if (!(p = npy_string(p, key, sizeof key))) return NULL;
  p = skip_ws(p);
  if (*p++ != ':') return NULL;
  p = skip_ws(p);
  if (strcmp(key, "descr") == 0) {
    h->has_descr = true;
    return npy_string(p, h->descr, sizeof h->descr);
  }
  if (strcmp(key, "shape") == 0) {
    h->has_shape = true;
    return npy_shape(p, h);
  }
  if (strcmp(key, "fortran_order") == 0) {
    if (strncmp(p, "True", 4) == 0) h->fortran = true;
    else if (strncmp(p, "False", 5) != 0) return NULL;
    return p + (h->fortran ? 4 : 5);
  }
  return NULL;
}

static kiln_status npy_parse_header(const char *text, npy_header *h) {
  memset(h, 0, sizeof *h);
  const char *p = skip_ws(text);
  if (*p++ != '{') return kiln_invalid("malformed .npy header");
  for (p = skip_ws(p); *p != '}'; p = skip_ws(p)) {
    if (!(p = npy_entry(p, h))) return kiln_invalid("malformed .npy header: %s", text);
    p = skip_ws(p);
    if (*p == ',') p++;
    else if (*p != '}') return kiln_invalid("malformed .npy header: %s", text);
  }
  if (!h->has_descr || !h->has_shape) return kiln_invalid("incomplete .npy header: %s", text);
  if (h->fortran) return kiln_unsupported(".npy data in Fortran order");
  return KILN_OK;
}

static kiln_status npy_read_header(FILE *f, npy_header *h) {
  uint8_t pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
    return kiln_invalid("not a .npy file");
  uint32_t hlen;
  if (pre[6] == 1) {
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
  } else if (pre[6] == 2 || pre[6] == 3) {
    if (fread(pre + 10, 1, 2, f) != 2) return kiln_invalid("truncated .npy header");
    hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
           (uint32_t)pre[11] << 24;
  } else {
    return kiln_unsupported(".npy format version %d", pre[6]);
  }
  if (hlen > (1u << 20)) return kiln_invalid(".npy header of %u bytes is too long", hlen);
  char *text = kiln_xmalloc(hlen + 1);
  kiln_status st = KILN_OK;
  if (fread(text, 1, hlen, f) != hlen) st = kiln_invalid("truncated .npy header");
  text[hlen] = '\0';
  if (!st) st = npy_parse_header(text, h);
  free(text);
  return st;
}

/* A header that declares more data than a regular file holds is refused before the tensor
 * is allocated (a 100-byte file must not cost the memory its header describes). */
static kiln_status npy_check_size(FILE *f, kiln_dtype dt, const npy_header *h) {
  struct stat sb;
  long at = ftell(f);
  int64_t numel, bytes;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode) || at < 0) return KILN_OK;
  KILN_TRY(kiln_shape_numel(h->rank, h->dims, &numel));
  if (kiln_mul_overflow_i64(numel, (int64_t)kiln_dtype_size(dt), &bytes) ||
      bytes != (int64_t)sb.st_size - at)
    return kiln_invalid(".npy data does not match the shape in its header (%lld bytes of data "
                        "in the file)",
                        (long long)sb.st_size - at);
  return KILN_OK;
}

static kiln_status npy_read_file(FILE *f, kiln_tensor **out) {
  npy_header h;
  KILN_TRY(npy_read_header(f, &h));
  kiln_dtype dt;
  KILN_TRY(npy_dtype(h.descr, &dt));
  KILN_TRY(npy_check_size(f, dt, &h));
  kiln_tensor *t;
  KILN_TRY(kiln_tensor_new(dt, h.rank, h.dims, &t));
  size_t n = kiln_tensor_nbytes(t);
  if (fread(t->data, 1, n, f) != n || fgetc(f) != EOF) {
    kiln_tensor_free(t);
    return kiln_invalid(".npy data does not match the shape in its header");
  }
  if (dt == KILN_BOOL)
    for (int64_t i = 0; i < t->numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
  *out = t;
  return KILN_OK;
}

kiln_status kiln_npy_read(const char *path, kiln_tensor **out) {
  int fd;
  KILN_TRY(kiln_open_read(path, &fd));
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    kiln_status fst = kiln_system_error("cannot read '%s'", path);
    close(fd);
    return fst;
  }
  kiln_status st = npy_read_file(f, out);
  fclose(f);
  return st ? kiln_status_annotate(st, "%s", path) : KILN_OK;
}

bool kiln_npy_has_dtype(kiln_dtype t) {
  for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++)
    if (npy_kinds[i].dtype == t) return true;
  return false;
}

static kiln_status npy_descr_of(kiln_dtype t, char *buf) {
  for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++) {
    if (npy_kinds[i].dtype != t) continue;
    snprintf(buf, 8, "%c%s", npy_kinds[i].code[1] == '1' ? '|' : '<', npy_kinds[i].code);
    return KILN_OK;
  }
  return kiln_unsupported("%s tensors have no numpy dtype: write a .pb file instead",
                          kiln_dtype_onnx_name(t));
}

static void npy_header_text(const kiln_tensor *t, const char *descr, kiln_strbuf *b) {
  kiln_strbuf_printf(b, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->rank; i++) kiln_strbuf_printf(b, "%lld, ", (long long)t->dims[i]);
  if (t->rank) b->len -= t->rank == 1 ? 1 : 2; /* numpy writes (3,) and (2, 3) */
  kiln_strbuf_printf(b, "), }");
  size_t pre = b->len + 1 < 65536 - 10 ? 10 : 12; /* v1 or v2 preamble */
  while ((pre + b->len + 1) % 64) kiln_strbuf_append(b, " ", 1);
  kiln_strbuf_append(b, "\n", 1);
}

kiln_status kiln_npy_write(const char *path, const kiln_tensor *t) {
  char descr[8];
  KILN_TRY(npy_descr_of(t->dtype, descr));
  kiln_strbuf hdr = {0};
  npy_header_text(t, descr, &hdr);
  uint8_t pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  size_t npre = 10;
  if (hdr.len < 65536 - 10) {
    pre[8] = (uint8_t)hdr.len, pre[9] = (uint8_t)(hdr.len >> 8);
  } else {
    pre[6] = 2, npre = 12;
    for (int i = 0; i < 4; i++) pre[8 + i] = (uint8_t)(hdr.len >> (8 * i));
  }
  kiln_file_writer *f;
  kiln_status st = kiln_file_open(path, &f);
  if (!st) {
    kiln_file_write(f, pre, npre);
    kiln_file_write(f, hdr.data, hdr.len);
    kiln_file_write(f, t->data, kiln_tensor_nbytes(t));
    st = kiln_file_commit(f);
  }
  kiln_strbuf_free(&hdr);
  return st;
}

/* ---- by extension ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

kiln_status kiln_tensor_file_read(const char *path, const kiln_type *expected, kiln_val **out) {
  if (ends_with(path, ".pb")) return kiln_pb_read_value(path, expected, out);
  if (!ends_with(path, ".npy"))
    return kiln_invalid("%s: unknown tensor file type (expected .npy or .pb)", path);
  if (expected && expected->kind != KILN_TYPE_TENSOR && expected->kind != KILN_TYPE_UNKNOWN)
    return kiln_invalid("%s: a .npy file holds a tensor, not a sequence or optional", path);
  kiln_tensor *t;
  KILN_TRY(kiln_npy_read(path, &t));
  *out = kiln_val_tensor(t);
  return KILN_OK;
}
