/* Element types: names, sizes, and exact conversions between the storage
 * formats and double. All narrow float formats are encoded by one routine
 * that rounds a double to nearest-even in a (sign, E exponent bits, M mantissa
 * bits, bias B) format; each format then decides what overflow means. */
#include <math.h>
#include <string.h>

#include "dtype.h"

typedef struct dtype_info {
  const char *name, *onnx;
  size_t size;
  kiln_dtype_class cls;
  int bits;
} dtype_info;

static const dtype_info infos[KILN_DTYPE_COUNT] = {
    [KILN_UNDEFINED] = {"undef", "UNDEFINED", 0, KILN_CLASS_NONE, 0},
    [KILN_F32] = {"f32", "FLOAT", 4, KILN_CLASS_FLOAT, 32},
    [KILN_U8] = {"u8", "UINT8", 1, KILN_CLASS_UINT, 8},
    [KILN_I8] = {"i8", "INT8", 1, KILN_CLASS_SINT, 8},
    [KILN_U16] = {"u16", "UINT16", 2, KILN_CLASS_UINT, 16},
    [KILN_I16] = {"i16", "INT16", 2, KILN_CLASS_SINT, 16},
    [KILN_I32] = {"i32", "INT32", 4, KILN_CLASS_SINT, 32},
    [KILN_I64] = {"i64", "INT64", 8, KILN_CLASS_SINT, 64},
    [KILN_STRING] = {"string", "STRING", sizeof(char *), KILN_CLASS_STRING, 0},
    [KILN_BOOL] = {"bool", "BOOL", 1, KILN_CLASS_UINT, 8},
    [KILN_F16] = {"f16", "FLOAT16", 2, KILN_CLASS_FLOAT, 16},
    [KILN_F64] = {"f64", "DOUBLE", 8, KILN_CLASS_FLOAT, 64},
    [KILN_U32] = {"u32", "UINT32", 4, KILN_CLASS_UINT, 32},
    [KILN_U64] = {"u64", "UINT64", 8, KILN_CLASS_UINT, 64},
    [KILN_C64] = {"c64", "COMPLEX64", 8, KILN_CLASS_NONE, 64},
    [KILN_C128] = {"c128", "COMPLEX128", 16, KILN_CLASS_NONE, 128},
    [KILN_BF16] = {"bf16", "BFLOAT16", 2, KILN_CLASS_FLOAT, 16},
    [KILN_F8E4M3FN] = {"f8e4m3fn", "FLOAT8E4M3FN", 1, KILN_CLASS_FLOAT, 8},
    [KILN_F8E4M3FNUZ] = {"f8e4m3fnuz", "FLOAT8E4M3FNUZ", 1, KILN_CLASS_FLOAT, 8},
    [KILN_F8E5M2] = {"f8e5m2", "FLOAT8E5M2", 1, KILN_CLASS_FLOAT, 8},
    [KILN_F8E5M2FNUZ] = {"f8e5m2fnuz", "FLOAT8E5M2FNUZ", 1, KILN_CLASS_FLOAT, 8},
    [KILN_U4] = {"u4", "UINT4", 1, KILN_CLASS_UINT, 4},
    [KILN_I4] = {"i4", "INT4", 1, KILN_CLASS_SINT, 4},
    [KILN_F4E2M1] = {"f4e2m1", "FLOAT4E2M1", 1, KILN_CLASS_FLOAT, 4},
    [KILN_F8E8M0] = {"f8e8m0", "FLOAT8E8M0", 1, KILN_CLASS_FLOAT, 8},
    [KILN_U2] = {"u2", "UINT2", 1, KILN_CLASS_UINT, 2},
    [KILN_I2] = {"i2", "INT2", 1, KILN_CLASS_SINT, 2},
};

static const dtype_info *info(kiln_dtype t) {
  return (unsigned)t < KILN_DTYPE_COUNT ? &infos[t] : &infos[KILN_UNDEFINED];
}

const char *kiln_dtype_name(kiln_dtype t) {
  return info(t)->name;
}
const char *kiln_dtype_onnx_name(kiln_dtype t) {
  return info(t)->onnx;
}
size_t kiln_dtype_size(kiln_dtype t) {
  return info(t)->size;
}
kiln_dtype_class kiln_dtype_class_of(kiln_dtype t) {
  return info(t)->cls;
}
int kiln_dtype_bits(kiln_dtype t) {
  return info(t)->bits;
}
bool kiln_dtype_is_float(kiln_dtype t) {
  return info(t)->cls == KILN_CLASS_FLOAT;
}

bool kiln_dtype_is_int(kiln_dtype t) {
  return t != KILN_BOOL && (info(t)->cls == KILN_CLASS_SINT || info(t)->cls == KILN_CLASS_UINT);
}

bool kiln_dtype_valid(int t) {
  return t > 0 && t < KILN_DTYPE_COUNT && t != KILN_C64 && t != KILN_C128;
}

bool kiln_dtype_from_name(const char *s, kiln_dtype *out) {
  for (int t = 1; t < KILN_DTYPE_COUNT; t++) {
    if (strcmp(infos[t].name, s) == 0) {
      *out = (kiln_dtype)t;
      return true;
    }
  }
  return false;
}

/* ---- generic narrow float formats ---- */
typedef struct ffmt {
  int e, m, bias;
  uint32_t max_code; /* largest finite magnitude code */
  uint32_t nan_code; /* magnitude code of NaN (sign added for FN formats) */
  bool ieee;         /* has inf (all-ones exponent, zero mantissa) and NaNs */
  bool uz;           /* FNUZ: NaN is 0x80 (negative zero), no -0 */
} ffmt;

static const ffmt F16 = {5, 10, 15, 0x7BFF, 0x7E00, true, false};
static const ffmt BF16 = {8, 7, 127, 0x7F7F, 0x7FC0, true, false};
static const ffmt E4M3FN = {4, 3, 7, 0x7E, 0x7F, false, false};
static const ffmt E4M3FNUZ = {4, 3, 8, 0x7F, 0x80, false, true};
static const ffmt E5M2 = {5, 2, 15, 0x7B, 0x7F, true, false};
static const ffmt E5M2FNUZ = {5, 2, 16, 0x7F, 0x80, false, true};
static const ffmt E2M1 = {2, 1, 1, 0x7, 0, false, false};

static double decode(const ffmt *f, uint32_t code) {
  uint32_t sign_bit = 1u << (f->e + f->m);
  uint32_t mag = code & (sign_bit - 1);
  bool neg = (code & sign_bit) != 0;
  uint32_t exp = mag >> f->m, mant = mag & ((1u << f->m) - 1);
  if (f->uz && code == f->nan_code) return NAN;
  if (f->ieee && exp == (1u << f->e) - 1) return mant ? NAN : (neg ? -INFINITY : INFINITY);
  if (!f->ieee && !f->uz && f->nan_code && mag == f->nan_code) return NAN;
  double v = exp == 0 ? ldexp((double)mant, 1 - f->bias - f->m)
                      : ldexp((double)(mant | (1u << f->m)), (int)exp - f->bias - f->m);
  return neg ? -v : v;
}

/* Magnitude code of |v| rounded to nearest-even; may exceed the format's range. */
static uint32_t encode_mag(const ffmt *f, double a) {
  if (a == 0) return 0;
  int x;
  frexp(a, &x);
  x -= 1; /* a = 1.xxx * 2^x */
  int emin = 1 - f->bias;
  if (x < emin) return (uint32_t)nearbyint(ldexp(a, f->m - emin)); /* subnormal */
  double q = nearbyint(ldexp(a, f->m - x));
  if (q >= ldexp(1.0, f->m + 1)) {
    q /= 2;
    x += 1;
  }
  double code = ldexp((double)(x + f->bias), f->m) + (q - ldexp(1.0, f->m));
  return code > 0xFFFFFFF ? 0xFFFFFFF : (uint32_t)code;
}

static uint32_t encode(const ffmt *f, double v, bool saturate) {
  uint32_t sign_bit = 1u << (f->e + f->m);
  if (isnan(v)) return f->uz ? f->nan_code : (f->nan_code | (signbit(v) ? sign_bit : 0));
  uint32_t sign = signbit(v) ? sign_bit : 0;
  uint32_t inf_code = ((1u << f->e) - 1) << f->m;
  uint32_t mag;
  if (isinf(v)) {
    mag = saturate || !f->nan_code ? f->max_code : (f->ieee ? inf_code : f->nan_code);
  } else {
    mag = encode_mag(f, fabs(v));
    if (mag > f->max_code) {
      if (saturate || !f->nan_code) mag = f->max_code;
      else mag = f->ieee ? inf_code : f->nan_code;
    }
  }
  if (f->uz) {
    if (mag == f->nan_code) return f->nan_code;
    if (mag == 0) return 0;
  }
  return sign | mag;
}

float kiln_f16_to_f32(uint16_t h) {
  return (float)decode(&F16, h);
}
uint16_t kiln_f32_to_f16(float x) {
  return (uint16_t)encode(&F16, x, false);
}
uint16_t kiln_f64_to_f16(double d) {
  return (uint16_t)encode(&F16, d, false);
}
float kiln_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint16_t kiln_f32_to_bf16(float x) {
  return (uint16_t)encode(&BF16, x, false);
}

static const ffmt *f8fmt(kiln_dtype t) {
  switch (t) {
  case KILN_F8E4M3FN: return &E4M3FN;
  case KILN_F8E4M3FNUZ: return &E4M3FNUZ;
  case KILN_F8E5M2: return &E5M2;
  case KILN_F8E5M2FNUZ: return &E5M2FNUZ;
  default: return NULL;
  }
}

double kiln_f8_to_f64(kiln_dtype t, uint8_t v) {
  if (t == KILN_F8E8M0) return v == 0xFF ? NAN : ldexp(1.0, (int)v - 127);
  const ffmt *f = f8fmt(t);
  return f ? decode(f, v) : NAN;
}

/* E8M0 holds powers of two only; rounding "up" (ONNX's default round_mode). */
static uint8_t encode_e8m0(double v, bool saturate) {
  if (isnan(v) || v <= 0) return isnan(v) ? 0xFF : 0;
  if (isinf(v)) return saturate ? 0xFE : 0xFF;
  int x;
  double m = frexp(v, &x); /* v = m * 2^x, m in [0.5,1) */
  int e = (m == 0.5) ? x - 1 : x;
  e += 127;
  if (e < 0) return 0;
  if (e > 254) return saturate ? 0xFE : 0xFF;
  return (uint8_t)e;
}

uint8_t kiln_f64_to_f8(kiln_dtype t, double v, bool saturate) {
  if (t == KILN_F8E8M0) return encode_e8m0(v, saturate);
  const ffmt *f = f8fmt(t);
  return f ? (uint8_t)encode(f, v, saturate) : 0;
}

double kiln_f4e2m1_to_f64(uint8_t v) {
  return decode(&E2M1, v & 0xF);
}
uint8_t kiln_f64_to_f4e2m1(double v, bool saturate) {
  (void)saturate;           /* float4e2m1 has no inf or NaN: always saturates */
  if (isnan(v)) return 0x7; /* no NaN: the spec maps NaN to max (with sign) */
  return (uint8_t)encode(&E2M1, v, true);
}

/* ---- element load/store ---- */
#define LD(T) (((const T *)p)[i])

double kiln_load_f64(kiln_dtype t, const void *p, size_t i) {
  switch (t) {
  case KILN_F32: return LD(float);
  case KILN_F64: return LD(double);
  case KILN_F16: return decode(&F16, LD(uint16_t));
  case KILN_BF16: return kiln_bf16_to_f32(LD(uint16_t));
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ:
  case KILN_F8E8M0: return kiln_f8_to_f64(t, LD(uint8_t));
  case KILN_F4E2M1: return kiln_f4e2m1_to_f64(LD(uint8_t));
  case KILN_U64: return (double)LD(uint64_t);
  default: return (double)kiln_load_i64(t, p, i);
  }
}

static int64_t sext(uint8_t v, int bits) {
  int64_t x = v & ((1 << bits) - 1);
  return x >= (1 << (bits - 1)) ? x - (1 << bits) : x;
}

int64_t kiln_load_i64(kiln_dtype t, const void *p, size_t i) {
  switch (t) {
  case KILN_U8:
  case KILN_BOOL: return LD(uint8_t);
  case KILN_I8: return LD(int8_t);
  case KILN_U16: return LD(uint16_t);
  case KILN_I16: return LD(int16_t);
  case KILN_I32: return LD(int32_t);
  case KILN_I64: return LD(int64_t);
  case KILN_U32: return LD(uint32_t);
  case KILN_U64: return (int64_t)LD(uint64_t);
  case KILN_U4: return LD(uint8_t) & 0xF;
  case KILN_I4: return sext(LD(uint8_t), 4);
  case KILN_U2: return LD(uint8_t) & 0x3;
  case KILN_I2: return sext(LD(uint8_t), 2);
  default: {
    double d = kiln_load_f64(t, p, i);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

uint64_t kiln_load_u64(kiln_dtype t, const void *p, size_t i) {
  if (t == KILN_U64) return LD(uint64_t);
  if (kiln_dtype_is_float(t)) {
    double d = kiln_load_f64(t, p, i);
    if (d >= 0 && d < 18446744073709551616.0) return (uint64_t)d;
    return (uint64_t)kiln_load_i64(t, p, i);
  }
  return (uint64_t)kiln_load_i64(t, p, i);
}

#define ST(T, v) (((T *)p)[i] = (T)(v))

void kiln_store_u64(kiln_dtype t, void *p, size_t i, uint64_t v) {
  switch (t) {
  case KILN_U8: ST(uint8_t, v); break;
  case KILN_I8: ST(uint8_t, v); break;
  case KILN_BOOL: ST(uint8_t, v != 0); break;
  case KILN_U16:
  case KILN_I16: ST(uint16_t, v); break;
  case KILN_U32:
  case KILN_I32: ST(uint32_t, v); break;
  case KILN_U64:
  case KILN_I64: ST(uint64_t, v); break;
  case KILN_U4:
  case KILN_I4: ST(uint8_t, v & 0xF); break;
  case KILN_U2:
  case KILN_I2: ST(uint8_t, v & 0x3); break;
  default: kiln_store_f64(t, p, i, (double)v); break;
  }
}

void kiln_store_i64(kiln_dtype t, void *p, size_t i, int64_t v) {
  if (kiln_dtype_is_float(t)) {
    kiln_store_f64(t, p, i, (double)v);
    return;
  }
  kiln_store_u64(t, p, i, (uint64_t)v);
}

/* C-like conversion of a double to an integer of `bits` bits: truncate toward
 * zero, then wrap modulo 2^64 (out-of-range values are undefined in C and in
 * ONNX; we pick the deterministic wrap). */
static uint64_t f64_to_bits(double v) {
  if (isnan(v)) return 0;
  v = trunc(v);
  if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return (uint64_t)(int64_t)v;
  if (v >= 0 && v < 18446744073709551616.0) return (uint64_t)v;
  return v < 0 ? (uint64_t)INT64_MIN : UINT64_MAX;
}

void kiln_store_f64(kiln_dtype t, void *p, size_t i, double v) {
  switch (t) {
  case KILN_F32: ST(float, v); break;
  case KILN_F64: ST(double, v); break;
  case KILN_F16: ST(uint16_t, encode(&F16, v, false)); break;
  case KILN_BF16: ST(uint16_t, encode(&BF16, v, false)); break;
  case KILN_F8E4M3FN:
  case KILN_F8E4M3FNUZ:
  case KILN_F8E5M2:
  case KILN_F8E5M2FNUZ:
  case KILN_F8E8M0: ST(uint8_t, kiln_f64_to_f8(t, v, true)); break;
  case KILN_F4E2M1: ST(uint8_t, kiln_f64_to_f4e2m1(v, true)); break;
  case KILN_BOOL: ST(uint8_t, v != 0); break;
  default: kiln_store_u64(t, p, i, f64_to_bits(v)); break;
  }
}

double kiln_u64_to_f64_odd(uint64_t v) {
  if (v < (1ull << 53)) return (double)v;
  int drop = 0;                                 /* the bits past the 53 a double holds: 1 to 11 */
  while (drop < 11 && v >> (53 + drop)) drop++; /* a shift by 64 is undefined */
  uint64_t low = v & ((1ull << drop) - 1);
  return (double)(((v >> drop) | (low != 0)) << drop); /* 53 significant bits: exact */
}

double kiln_i64_to_f64_odd(int64_t v) {
  return v < 0 ? -kiln_u64_to_f64_odd(0 - (uint64_t)v) : kiln_u64_to_f64_odd((uint64_t)v);
}
