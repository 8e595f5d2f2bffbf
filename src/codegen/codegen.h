/* Code generation: tile IR kernels -> C11 source (CPU) and CUDA C source (GPU).
 *
 * Every function here is pure: it appends source text to a kiln_strbuf and never runs a
 * compiler. The runtime compiles the C with the system compiler into a shared object and
 * dlopens it; the CUDA C goes through NVRTC (or nvcc).
 *
 *   kiln_codegen_opts o = kiln_codegen_opts_default();
 *   kiln_strbuf src = {0};
 *   KILN_TRY(kiln_codegen_c_module(module, &o, &src));
 *   // cc KILN_CODEGEN_C_FLAGS -O2 -march=native -fPIC -shared [-fopenmp] k.c -o k.so -lm
 *   // void (*fn)(void *const *) = dlsym(so, "<prefix><kernel name>");
 *   // fn(args);   args[i] = data of parameter i, in the buffer's dtype
 *
 * ---- Contract of the generated C (the runtime relies on it) ----
 * - One function per kernel: `void <prefix><k->name>(void *const *args)`, external
 *   linkage; args[i] points at the data of parameter i (k->bufs[i]) in its dtype.
 *   Parameters may alias only as the lowering's in-place rule allows (see opts.restrict).
 * - Compiler flags: the runtime MUST pass KILN_CODEGEN_C_FLAGS (-ffp-contract=off: no
 *   contraction of a*b+c into fma outside the MMA intrinsic, so F32/F64 results equal the
 *   tile interpreter's bit for bit) and should pass -O2 (or -O3) -march=native -fPIC
 *   -shared, and -fopenmp when the compiler has it. The code builds (and is correct)
 *   without OpenMP: the pragmas sit under #ifdef _OPENMP. It needs libm (-lm).
 *   It does not need -fwrapv: signed wrap-around is written with unsigned arithmetic.
 * - Semantics are those of kiln_tkernel_interp (tile.h):
 *   F32 arithmetic in float (rounded after every op), with float libm (expf, tanhf, ...);
 *   F64 in double; integers wrap modulo 2^bits; integer DIV/MOD by zero gives 0 (the IR
 *   must guard it: the interpreter reports an error), INT_MIN / -1 gives INT_MIN (MOD: 0);
 *   SHL/SHR by an amount outside [0, bits) give 0; SHR of a signed value is arithmetic;
 *   float MIN/MAX give NaN when either operand is NaN; ROUND is nearbyint (ties to even).
 *   Casts: float -> integer truncates toward zero, then wraps modulo 2^64 (NaN -> 0,
 *   values beyond the 64-bit range saturate), exactly as kiln_store_f64 in dtype.c; to BOOL
 *   is `!= 0`; integer -> F32/F64 is the C conversion (one rounding, to nearest even);
 *   to F16/BF16/float8 rounds to nearest even once from the source value (integers go
 *   through double), float8 saturating like kiln_store_f64; F16/BF16/float8 values are
 *   their bit patterns (uint16_t/uint8_t) and decode exactly.
 *   F16/BF16 arithmetic: the operands widen to float (kiln_f16_to_f32 ...), the F32
 *   operation runs, the result rounds back (kiln_f32_to_f16 ...): the interpreter's bits.
 *   The CUDA backend uses PTX add/sub/mul.rn.f16 (sm_53) and .bf16 (sm_90) for those three
 *   (the same results; a NaN's bits may differ). MAC (acc + a * b, the product exact):
 *   `acc + (float)a * (float)b` for halves, wrapping 32-bit arithmetic for 8-bit integers.
 *   The helpers both need sit in the shared prelude; the CUDA ones for native half
 *   instructions and dp4a are emitted once per unit, before the first kernel using them.
 * - MMA (KILN_TS_MMA) on F32 or F64 accumulates with a fused multiply-add per product,
 *   c = fma(a, b, c) for k increasing, on both the fast and the loop path, in C and CUDA:
 *   the tile interpreter must compute it the same way (fmaf / fma). Integer MMA wraps; with
 *   I8/U8 A and B and an I32 C the CUDA backend adds four products per PTX dp4a (sm_61) when
 *   k is a multiple of 4 (a wrapping sum: the same bits in any grouping).
 * - Fast path of MMA (register-tile microkernel; GCC/Clang vector extensions, AVX-512
 *   intrinsics when __AVX512F__, AVX2+FMA halves when __AVX2__ && __FMA__, scalar fmaf
 *   lanes otherwise): A, B and C all F32; C a LOCAL buffer with ldc == n; b_sn == 1 and
 *   b_sk == n (a packed panel); a_sk == 1 or a_sm == 1; n in {16, 32, 48, 64}; m <= 8.
 *   Anything else runs as plain loops with the same results.
 * - LOCAL and SHARED buffers start uninitialized (the IR writes before it reads). LOCAL
 *   buffers live in the innermost parallel-loop iteration that uses them (per thread);
 *   SHARED ones once per call. Both are 64-byte aligned stack arrays (at most 1 MiB each).
 * - Loops: the outermost PARALLEL loop of each nest becomes `#pragma omp parallel for`
 *   (nested PARALLEL loops run serially), VECTOR adds `#pragma omp simd` (or GCC ivdep),
 *   UNROLL adds `#pragma GCC unroll`. GPU loop kinds and barriers are rejected by the C
 *   backend (map them with the CUDA backend).
 *
 * ---- Contract of the generated CUDA C ----
 * - One `extern "C" __global__ void <prefix><name>(T0 *p0, T1 *p1, ...)` per kernel: the
 *   parameters are device pointers in parameter order (the launch passes their addresses).
 *   No includes: the source compiles with NVRTC alone (compute_XX) or nvcc --ptx.
 * - BLOCK_X/Y/Z loops read blockIdx, THREAD_X/Y/Z loops threadIdx; the launch dimensions
 *   are the largest constant extent per dimension (kiln_codegen_cuda_launch); a loop with a
 *   smaller extent is guarded. SHARED buffers are __shared__; barriers __syncthreads().
 *   Statements with side effects outside every thread loop are rejected when the kernel
 *   has thread loops (every thread would run them).
 * - Compile with --fmad=false (NVRTC) / -fmad=false (nvcc) for the interpreter's results.
 */
#ifndef KILN_CODEGEN_H
#define KILN_CODEGEN_H

#include "tile/tile.h"

/* The flags the runtime must add to the C compiler's command line. */
#define KILN_CODEGEN_C_FLAGS "-ffp-contract=off"
/* The option NVRTC must get (nvcc: -fmad=false). */
#define KILN_CODEGEN_NVRTC_FLAGS "--fmad=false"

typedef enum kiln_isa {
  KILN_ISA_NATIVE,  /* use what the compiler's target macros say (__AVX512F__, ...) */
  KILN_ISA_AVX512,  /* the runtime compiles with AVX-512 (comment and checks only) */
  KILN_ISA_AVX2,    /* idem, AVX2 + FMA */
  KILN_ISA_GENERIC, /* portable C: no intrinsics, vector extensions only */
  KILN_ISA_COUNT
} kiln_isa;

typedef struct kiln_codegen_opts {
  kiln_isa isa;
  bool openmp;        /* emit OpenMP pragmas (under #ifdef _OPENMP) */
  int threads;        /* > 0: num_threads(threads) on parallel loops; 0: OpenMP's default */
  bool restrict_ptrs; /* declare parameter pointers restrict (only if no two alias) */
  const char *prefix; /* symbol prefix of every kernel function ("" or NULL for none) */
} kiln_codegen_opts;

/* isa NATIVE, openmp on, threads 0, restrict off, prefix "". */
kiln_codegen_opts kiln_codegen_opts_default(void);

/* ---- C ---- */
/* Includes and the static inline helpers every kernel uses (conversions, min/max, integer
 * division and shifts, the MMA vector type). */
KILN_MUST_USE kiln_status kiln_codegen_c_prelude(const kiln_codegen_opts *o, kiln_strbuf *out);
/* One kernel function, preceded by a comment naming k->origin. */
KILN_MUST_USE kiln_status kiln_codegen_c_kernel(const kiln_tkernel *k, const kiln_codegen_opts *o,
                                                kiln_strbuf *out);
/* Prelude and every kernel: one translation unit. */
KILN_MUST_USE kiln_status kiln_codegen_c_module(const kiln_tmodule *m, const kiln_codegen_opts *o,
                                                kiln_strbuf *out);
/* True when the C backend maps this MMA to the register-tile microkernel. */
bool kiln_codegen_c_mma_fast(const kiln_tkernel *k, const kiln_tmma *mma);

/* ---- CUDA ---- */
KILN_MUST_USE kiln_status kiln_codegen_cuda_prelude(const kiln_codegen_opts *o, kiln_strbuf *out);
KILN_MUST_USE kiln_status kiln_codegen_cuda_kernel(const kiln_tkernel *k,
                                                   const kiln_codegen_opts *o, kiln_strbuf *out);
KILN_MUST_USE kiln_status kiln_codegen_cuda_module(const kiln_tmodule *m,
                                                   const kiln_codegen_opts *o, kiln_strbuf *out);
/* Launch dimensions of k: grid[d] / block[d] = the largest extent of its BLOCK_d / THREAD_d
 * loops (1 when none); those extents must be constants. */
KILN_MUST_USE kiln_status kiln_codegen_cuda_launch(const kiln_tkernel *k, int64_t grid[3],
                                                   int64_t block[3]);

/* ---- CUDA C -> PTX (nvrtc.c): the one place of this stage that runs a compiler ----
 * Loads libnvrtc with dlopen (CUDA_HOME, CUDA_PATH, the standard install folders, then the
 * loader's search path) and compiles src for arch (e.g. "compute_90") with
 * KILN_CODEGEN_NVRTC_FLAGS. Returns KILN_ERR_UNSUPPORTED when no NVRTC can be loaded,
 * KILN_ERR_FAILED with the compiler log when compilation fails. *out_ptx is malloc'd. */
KILN_MUST_USE kiln_status kiln_codegen_cuda_ptx(const char *src, const char *arch, char **out_ptx);

#endif
