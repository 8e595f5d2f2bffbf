/* A dense tensor in host memory: dtype, shape, row-major data. Tensors made by
 * kiln_tensor_new own their data (malloc) and are freed with kiln_tensor_free. */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include "dtype.h"

#define KILN_MAX_RANK 8

typedef struct kiln_tensor {
  kiln_dtype dtype;
  int rank;
  int64_t dims[KILN_MAX_RANK];
  int64_t numel;
  void *data; /* numel * kiln_dtype_size(dtype) bytes; for strings, numel char* */
  bool owns_data;
  int64_t reserved; /* bytes counted against the memory limit (base.h) while data is owned */
} kiln_tensor;

/* kiln_tensor_new, kiln_tensor_free and the accessors are declared in include/kiln.h.
 * kiln_tensor_new checks the shape (rank, non-negative dims, element count and byte size
 * without overflow), reserves the bytes under the memory limit (kiln_mem_reserve: an
 * INVALID error "tensor f32[..] needs N bytes, above the limit ...") and allocates zeroed
 * data. */
/* kiln_tensor_new for a companion of tensors that were already allowed (the f64 copy or the
 * error bound of a value, in verification): its bytes are counted, but not refused by the
 * memory limit, so that code which cannot fail there still holds; the next checked
 * allocation sees them. Errors only for a bad shape or a failed allocation. */
KILN_MUST_USE kiln_status kiln_tensor_new_companion(kiln_dtype dtype, int rank, const int64_t *dims,
                                                    kiln_tensor **out);
KILN_MUST_USE kiln_status kiln_tensor_new_scalar_f64(kiln_dtype dtype, double v, kiln_tensor **out);
KILN_MUST_USE kiln_status kiln_tensor_clone(const kiln_tensor *t, kiln_tensor **out);
/* Frees the data of t and leaves it empty (f32[0]), releasing its reserved bytes. */
void kiln_tensor_drop_data(kiln_tensor *t);
/* The largest tensor Kiln holds: 64 TiB. Inference rejects a larger tensor type. */
#define KILN_MAX_TENSOR_BYTES ((int64_t)1 << 46)
size_t kiln_tensor_nbytes(const kiln_tensor *t);
/* Checks and returns the element count of a shape; error on negative dims or overflow. */
KILN_MUST_USE kiln_status kiln_shape_numel(int rank, const int64_t *dims, int64_t *out);
/* Same shape and dtype; data compared bitwise-equal (NaNs with equal bits are equal). */
bool kiln_tensor_same_shape(const kiln_tensor *a, const kiln_tensor *b);
/* Formats "f32[2,3]" into buf. */
const char *kiln_tensor_type_str(const kiln_tensor *t, char *buf, size_t n);

#endif
