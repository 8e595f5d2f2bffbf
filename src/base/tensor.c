/* Host tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor.h"

kiln_status kiln_shape_numel(int rank, const int64_t *dims, int64_t *out) {
  if (rank < 0 || rank > KILN_MAX_RANK)
    return kiln_unsupported("rank %d is outside the supported range 0..%d", rank, KILN_MAX_RANK);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0) return kiln_invalid("dimension %d is negative (%lld)", i, (long long)dims[i]);
    if (kiln_mul_overflow_i64(n, dims[i], &n))
      return kiln_invalid("element count of the shape overflows 64 bits");
  }
  *out = n;
  return KILN_OK;
}

static const char *type_str(kiln_dtype dtype, int rank, const int64_t *dims, char *buf, size_t n) {
  kiln_tensor t = {.dtype = dtype, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  return kiln_tensor_type_str(&t, buf, n);
}

kiln_status kiln_tensor_new(kiln_dtype dtype, int rank, const int64_t *dims, kiln_tensor **out) {
  if (!kiln_dtype_valid((int)dtype))
    return kiln_unsupported("element type %d is not supported", (int)dtype);
  int64_t numel, nbytes, stride = 1;
  KILN_TRY(kiln_shape_numel(rank, dims, &numel));
  for (int i = 0; i < rank; i++) /* strides of an empty tensor must not overflow either */
    if (dims[i] > 0 && kiln_mul_overflow_i64(stride, dims[i], &stride))
      return kiln_invalid("the strides of an empty tensor of rank %d overflow 64 bits", rank);
  if (kiln_mul_overflow_i64(numel, (int64_t)kiln_dtype_size(dtype), &nbytes) ||
      nbytes > KILN_MAX_TENSOR_BYTES)
    return kiln_invalid("tensor of %lld elements is too large", (long long)numel);
  while (!kiln_mem_try_reserve(nbytes)) { /* the message is made only on a refusal */
    char tb[160];
    KILN_TRY(kiln_mem_check(nbytes, "tensor %s", type_str(dtype, rank, dims, tb, sizeof tb)));
  } /* (a pass of the check means memory was released meanwhile: try again) */
  void *data = calloc((size_t)(nbytes ? nbytes : 1), 1);
  if (!data) {
    kiln_mem_release(nbytes);
    return kiln_error(KILN_ERR_OOM,
                      "cannot allocate %lld bytes: the machine has less memory than the limit "
                      "of %lld bytes allows (a smaller --max-memory makes this an early error)",
                      (long long)nbytes, (long long)kiln_mem_limit());
  }
  kiln_tensor *t = kiln_xcalloc(1, sizeof *t);
  t->reserved = nbytes;
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  t->numel = numel;
  t->data = data;
  t->owns_data = true;
  *out = t;
  return KILN_OK;
}

kiln_status kiln_tensor_new_companion(kiln_dtype dtype, int rank, const int64_t *dims,
                                      kiln_tensor **out) {
  int64_t prev = kiln_mem_push_limit(INT64_MAX);
  kiln_status st = kiln_tensor_new(dtype, rank, dims, out);
  kiln_mem_pop_limit(prev);
  return st;
}

kiln_status kiln_tensor_new_scalar_f64(kiln_dtype dtype, double v, kiln_tensor **out) {
  KILN_TRY(kiln_tensor_new(dtype, 0, NULL, out));
  kiln_store_f64(dtype, (*out)->data, 0, v);
  return KILN_OK;
}

size_t kiln_tensor_nbytes(const kiln_tensor *t) {
  return (size_t)t->numel * kiln_dtype_size(t->dtype);
}

/* The accessors of the public API (include/kiln.h). */
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) {
  return t->dtype;
}
int kiln_tensor_rank(const kiln_tensor *t) {
  return t->rank;
}
int64_t kiln_tensor_dim(const kiln_tensor *t, int i) {
  return i >= 0 && i < t->rank ? t->dims[i] : -1;
}
int64_t kiln_tensor_numel(const kiln_tensor *t) {
  return t->numel;
}
void *kiln_tensor_data(kiln_tensor *t) {
  return t->data;
}

kiln_status kiln_tensor_clone(const kiln_tensor *t, kiln_tensor **out) {
  kiln_tensor *c;
  KILN_TRY(kiln_tensor_new(t->dtype, t->rank, t->dims, &c));
  if (t->dtype == KILN_STRING) {
    char **dst = c->data;
    char *const *src = t->data;
    for (int64_t i = 0; i < t->numel; i++) dst[i] = kiln_xstrdup(src[i] ? src[i] : "");
  } else {
    memcpy(c->data, t->data, kiln_tensor_nbytes(t));
  }
  *out = c;
  return KILN_OK;
}

void kiln_tensor_free(kiln_tensor *t) {
  if (!t) return;
  if (t->owns_data) {
    if (t->dtype == KILN_STRING && t->data) {
      char **s = t->data;
      for (int64_t i = 0; i < t->numel; i++) free(s[i]);
    }
    free(t->data);
    kiln_mem_release(t->reserved);
  }
  free(t);
}

void kiln_tensor_drop_data(kiln_tensor *t) {
  if (t->owns_data) {
    free(t->data);
    kiln_mem_release(t->reserved);
  }
  t->data = NULL, t->reserved = 0, t->numel = 0, t->rank = 1, t->dims[0] = 0;
}

bool kiln_tensor_same_shape(const kiln_tensor *a, const kiln_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

const char *kiln_tensor_type_str(const kiln_tensor *t, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "%s[", kiln_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}
