/* Element types. Numbering follows ONNX TensorProto.DataType so import is a
 * range check. Sub-byte types (int4, uint4, float4e2m1, int2, uint2) are held
 * unpacked in memory, one element per byte; only the file formats pack them.
 * Strings are held as `char *` elements (NUL-terminated, owned by the tensor). */
#ifndef KILN_DTYPE_H
#define KILN_DTYPE_H

#include "base.h"

/* kiln_dtype is the public API's (include/kiln.h, through base.h). */

typedef enum kiln_dtype_class {
  KILN_CLASS_NONE, /* undefined, complex */
  KILN_CLASS_FLOAT,
  KILN_CLASS_SINT,
  KILN_CLASS_UINT, /* bool counts as uint */
  KILN_CLASS_STRING,
} kiln_dtype_class;

const char *kiln_dtype_name(kiln_dtype t);                 /* short IR name: "f32", "i64", "bool" */
const char *kiln_dtype_onnx_name(kiln_dtype t);            /* "FLOAT", "INT64", ... */
bool kiln_dtype_from_name(const char *s, kiln_dtype *out); /* parses the short name */
bool kiln_dtype_valid(int t);                              /* in range and not complex/undefined */
size_t kiln_dtype_size(kiln_dtype t);                      /* bytes per element in memory */
kiln_dtype_class kiln_dtype_class_of(kiln_dtype t);
bool kiln_dtype_is_float(kiln_dtype t);
bool kiln_dtype_is_int(kiln_dtype t); /* signed or unsigned integer, not bool */
int kiln_dtype_bits(kiln_dtype t);    /* storage bits in files (4 for int4, 1 byte for bool) */

/* Scalar conversions. Rounding is to nearest, ties to even. */
float kiln_f16_to_f32(uint16_t h);
uint16_t kiln_f32_to_f16(float f);
uint16_t kiln_f64_to_f16(double d); /* rounds once, directly from double */
float kiln_bf16_to_f32(uint16_t h);
uint16_t kiln_f32_to_bf16(float f);
double kiln_f8_to_f64(kiln_dtype t, uint8_t v);
/* saturate: ONNX's saturate attribute (clamp to max finite instead of inf/nan) */
uint8_t kiln_f64_to_f8(kiln_dtype t, double v, bool saturate);
double kiln_f4e2m1_to_f64(uint8_t v);
uint8_t kiln_f64_to_f4e2m1(double v, bool saturate);

/* Element access by index on a buffer of dtype t. Loading a float type gives its
 * exact value as double; integer types load exactly as int64/uint64. Storing a
 * double into an integer type truncates toward zero and wraps modulo 2^bits
 * (the C-cast behaviour ONNX Cast is tested with); into a float type it rounds. */
double kiln_load_f64(kiln_dtype t, const void *p, size_t i);
int64_t kiln_load_i64(kiln_dtype t, const void *p, size_t i);  /* floats truncate */
uint64_t kiln_load_u64(kiln_dtype t, const void *p, size_t i); /* floats truncate */
void kiln_store_f64(kiln_dtype t, void *p, size_t i, double v);
void kiln_store_i64(kiln_dtype t, void *p, size_t i, int64_t v); /* wraps for narrower ints */
void kiln_store_u64(kiln_dtype t, void *p, size_t i, uint64_t v);
/* A 64-bit integer as a double rounded to odd: truncated to 53 significant bits, the last of
 * them set when a dropped bit was. Rounding that double to a float type of at most 51
 * significant bits (f32, f16, bf16, the float8 types) rounds the integer once, to nearest even,
 * where (double)v would round twice: 2^60 + 2^52 + 1 becomes the bf16 tie 2^60 + 2^52 in a
 * double, then 2^60; the integer itself rounds up, to 2^60 + 2^53. */
double kiln_u64_to_f64_odd(uint64_t v);
double kiln_i64_to_f64_odd(int64_t v);

#endif
