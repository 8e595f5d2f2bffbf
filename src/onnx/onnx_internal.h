/* Private to src/onnx: the pieces that import, export and the tensor files share. */
#ifndef KILN_ONNX_INTERNAL_H
#define KILN_ONNX_INTERNAL_H

#include "onnx.h"
#include "wire.h"

/* One buffer being decoded: the wire context (path, depth, offsets) and where
 * external data may come from. */
typedef struct kiln_onnx_src {
  kiln_wire_ctx w;
  const char *base_dir; /* NULL: external data is forbidden */
  bool mapped;          /* the buffer is a private file mapping: consumed pages may be dropped */
} kiln_onnx_src;

/* ---- import_tensor.c ---- */
/* Decodes a TensorProto into a new tensor (sub-byte types unpacked, one element
 * per byte). *out_name (if out_name) gets the name, copied into arena a. */
KILN_MUST_USE kiln_status kiln_onnx_read_tensor(kiln_onnx_src *s, const uint8_t *data, size_t len,
                                                kiln_arena *a, const char **out_name,
                                                kiln_tensor **out);
/* Decodes a SparseTensorProto into a new dense tensor. */
KILN_MUST_USE kiln_status kiln_onnx_read_sparse(kiln_onnx_src *s, const uint8_t *data, size_t len,
                                                kiln_arena *a, const char **out_name,
                                                kiln_tensor **out);
/* Decodes a TypeProto; symbol names are copied into arena a. */
KILN_MUST_USE kiln_status kiln_onnx_read_type(kiln_onnx_src *s, const uint8_t *data, size_t len,
                                              kiln_arena *a, kiln_type *out);
/* Lets the OS drop the pages of [p, p+n) when the buffer is a file mapping. */
void kiln_onnx_release(const kiln_onnx_src *s, const uint8_t *p, size_t n);
/* Bytes a tensor of numel elements of dtype t takes in a file (sub-byte types packed). */
KILN_MUST_USE kiln_status kiln_onnx_packed_bytes(kiln_dtype t, int64_t numel, size_t *out);

/* ---- import.c ---- */
/* Maps a file read-only (or reads it when it cannot be mapped); release with kiln_onnx_unmap. */
KILN_MUST_USE kiln_status kiln_onnx_map_file(const char *path, uint8_t **out, size_t *out_len,
                                             bool *mapped);
void kiln_onnx_unmap(uint8_t *data, size_t len, bool mapped);
char *kiln_onnx_dir_of(const char *path); /* malloc'd folder of a path ("." if none) */

/* ---- export_tensor.c ---- */
/* Writes the fields of a TensorProto (raw_data, or string_data for strings). */
KILN_MUST_USE kiln_status kiln_onnx_put_tensor(kiln_wire_writer *w, const kiln_tensor *t,
                                               const char *name);
/* Writes a SparseTensorProto holding every element of t. */
KILN_MUST_USE kiln_status kiln_onnx_put_sparse(kiln_wire_writer *w, const kiln_tensor *t);
/* Writes the fields of a TypeProto. */
KILN_MUST_USE kiln_status kiln_onnx_put_type(kiln_wire_writer *w, const kiln_type *t);

#endif
