/* ONNX import and export, and tensor files (.pb TensorProto, .npy).
 *
 * The protobuf wire format is decoded by a small reader of our own (wire.c):
 * bounds-checked at every step, no allocation proportional to anything but the
 * data actually present. See docs/DESIGN.md ("ONNX reader"). */
#ifndef KILN_ONNX_H
#define KILN_ONNX_H

#include "ops/ops.h"

/* Loads a ModelProto. External data files are resolved relative to the model's
 * folder and must stay inside it. Node op ids are resolved; unknown ops of the
 * default domain, and ops of other domains, are an error (KILN_ERR_UNSUPPORTED)
 * naming the node. Nodes are sorted topologically (a cycle is an error). */
KILN_MUST_USE kiln_status kiln_onnx_load(const char *path, kiln_graph **out);
/* Same from memory; base_dir NULL forbids external data. */
KILN_MUST_USE kiln_status kiln_onnx_load_bytes(const void *data, size_t len, const char *base_dir,
                                               kiln_graph **out);
/* Serializes g as a ModelProto (all data inline). */
KILN_MUST_USE kiln_status kiln_onnx_save_bytes(const kiln_graph *g, kiln_strbuf *out);
KILN_MUST_USE kiln_status kiln_onnx_save(const kiln_graph *g, const char *path);

/* Tensor files. A .pb file holds a TensorProto, or for values of sequence/optional
 * type a SequenceProto/OptionalProto: `expected` (may be NULL = tensor) selects. */
KILN_MUST_USE kiln_status kiln_pb_read_value(const char *path, const kiln_type *expected,
                                             kiln_val **out);
KILN_MUST_USE kiln_status kiln_pb_read_tensor(const char *path, kiln_tensor **out);
KILN_MUST_USE kiln_status kiln_pb_write_tensor(const char *path, const kiln_tensor *t,
                                               const char *name);
KILN_MUST_USE kiln_status kiln_npy_read(const char *path, kiln_tensor **out);
KILN_MUST_USE kiln_status kiln_npy_write(const char *path, const kiln_tensor *t);
/* Whether .npy can hold tensors of dtype t (strings, bfloat16, float8 ... cannot). */
bool kiln_npy_has_dtype(kiln_dtype t);
/* Reads .npy or .pb by the file's extension. */
KILN_MUST_USE kiln_status kiln_tensor_file_read(const char *path, const kiln_type *expected,
                                                kiln_val **out);

#endif
