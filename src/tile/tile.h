/* Tile IR: one kernel as a loop nest over explicit buffers.
 *
 * A kernel has buffers (parameters in global memory, and shared or local scratch),
 * scalar variables (loop indices and mutable locals such as accumulators) and a body
 * of statements: loops with a kind, conditionals, stores, assignments, barriers and a
 * matrix-multiply-accumulate tile intrinsic. Expressions are typed trees of constants,
 * variables, loads, arithmetic, comparisons, casts, selects and math intrinsics.
 * Buffers are flat: an access names an element index (an i64 expression).
 *
 * Scalar types are kiln_dtype values. Arithmetic works on BOOL, the integer types, F16,
 * BF16, F32 and F64; the float8 and sub-byte types are storage types: a load gives a value
 * of the buffer's dtype that must be cast before arithmetic, and a store takes one.
 * F16 and BF16 arithmetic is native: every result is rounded to the type (round to nearest,
 * ties to even) from the F32 operation on the exactly widened operands (see tile_scalar.c).
 * MAC is the widening multiply-accumulate of low-precision dot products (I8/U8 into I32,
 * F16/BF16 into F32). Index arithmetic and loop variables are I64.
 *
 * Everything lives in the module's arena; freeing the module is one call.
 *
 *   kiln_tmodule *m = kiln_tmodule_new();
 *   kiln_tkernel *k = kiln_tkernel_new(m, "add1");
 *   int x = kiln_tkernel_param(k, "x", KILN_F32, 1024);
 *   int y = kiln_tkernel_param(k, "y", KILN_F32, 1024);
 *   int i = kiln_tkernel_var(k, "i", KILN_I64);
 *   kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, 1024), KILN_LOOP_PARALLEL);
 *   kiln_tblock_push(k, &loop->body,
 *                    kiln_tstore(k, y, kiln_tv(k, i),
 *                                kiln_tbin(k, KILN_TOP_ADD, kiln_tload(k, x, kiln_tv(k, i)),
 *                                          kiln_tfloat(k, KILN_F32, 1.0))));
 *   kiln_tblock_push(k, &k->body, loop);
 *   ... kiln_tmodule_free(m);
 */
#ifndef KILN_TILE_H
#define KILN_TILE_H

#include "base/base.h"
#include "base/dtype.h"

/* ---- expression operators ----
 * X(NAME, text, arity, class); class: 'a' arithmetic (ints and floats), 'i' integer or
 * bool only, 'f' float only (math intrinsics), 'c' comparison (result BOOL), 'l' logical
 * (BOOL operands), 's' select, 'm' widening multiply-accumulate. The text is the printed
 * name. Float operators apply to F16, BF16, F32 and F64. */
#define KILN_TOPS(X)                                                                               \
  X(NEG, "neg", 1, 'a')                                                                            \
  X(ABS, "abs", 1, 'a')                                                                            \
  X(NOT, "not", 1, 'l')                                                                            \
  X(BITNOT, "bitnot", 1, 'i')                                                                      \
  X(EXP, "exp", 1, 'f')                                                                            \
  X(LOG, "log", 1, 'f')                                                                            \
  X(SQRT, "sqrt", 1, 'f')                                                                          \
  X(SIN, "sin", 1, 'f')                                                                            \
  X(COS, "cos", 1, 'f')                                                                            \
  X(TAN, "tan", 1, 'f')                                                                            \
  X(ASIN, "asin", 1, 'f')                                                                          \
  X(ACOS, "acos", 1, 'f')                                                                          \
  X(ATAN, "atan", 1, 'f')                                                                          \
  X(SINH, "sinh", 1, 'f')                                                                          \
  X(COSH, "cosh", 1, 'f')                                                                          \
  X(TANH, "tanh", 1, 'f')                                                                          \
  X(ASINH, "asinh", 1, 'f')                                                                        \
  X(ACOSH, "acosh", 1, 'f')                                                                        \
  X(ATANH, "atanh", 1, 'f')                                                                        \
  X(ERF, "erf", 1, 'f')                                                                            \
  X(FLOOR, "floor", 1, 'f')                                                                        \
  X(CEIL, "ceil", 1, 'f')                                                                          \
  X(ROUND, "round", 1, 'f') /* to nearest, ties to even */                                         \
  X(ISNAN, "isnan", 1, 'c')                                                                        \
  X(ISINF, "isinf", 1, 'c')                                                                        \
  X(ADD, "add", 2, 'a')                                                                            \
  X(SUB, "sub", 2, 'a')                                                                            \
  X(MUL, "mul", 2, 'a')                                                                            \
  X(DIV, "div", 2, 'a') /* integers: truncating; the caller guards zero */                         \
  X(MOD, "mod", 2, 'a') /* integers: C remainder; floats: fmod */                                  \
  X(MIN, "min", 2, 'a') /* floats: NaN if either is NaN */                                         \
  X(MAX, "max", 2, 'a') /* floats: NaN if either is NaN */                                         \
  X(POW, "pow", 2, 'f')                                                                            \
  X(ATAN2, "atan2", 2, 'f')                                                                        \
  X(AND, "and", 2, 'i') /* bitwise on ints, logical on BOOL */                                     \
  X(OR, "or", 2, 'i')                                                                              \
  X(XOR, "xor", 2, 'i')                                                                            \
  X(SHL, "shl", 2, 'i')                                                                            \
  X(SHR, "shr", 2, 'i')                                                                            \
  X(LT, "lt", 2, 'c')                                                                              \
  X(LE, "le", 2, 'c')                                                                              \
  X(GT, "gt", 2, 'c')                                                                              \
  X(GE, "ge", 2, 'c')                                                                              \
  X(EQ, "eq", 2, 'c')                                                                              \
  X(NE, "ne", 2, 'c')                                                                              \
  X(SELECT, "select", 3, 's') /* select(cond: BOOL, a, b) */                                       \
  /* mac(acc, a, b) = acc + a * b with a, b widened to acc's type: the product is exact, so        \
   * only the addition rounds (F32) or wraps modulo 2^32 (I32). Operand types: a and b both        \
   * I8 or U8 (in any mix) with acc I32, or both F16 or both BF16 with acc F32. */                 \
  X(MAC, "mac", 3, 'm')

typedef enum kiln_top {
#define X(name, text, arity, cls) KILN_TOP_##name,
  KILN_TOPS(X)
#undef X
      KILN_TOP_COUNT
} kiln_top;

const char *kiln_top_name(kiln_top op); /* "add" */
int kiln_top_arity(kiln_top op);
char kiln_top_class(kiln_top op);
kiln_top kiln_top_lookup(const char *name); /* KILN_TOP_COUNT if none */

/* ---- expressions ---- */
typedef enum kiln_texpr_kind {
  KILN_TE_INT,   /* integer or bool constant (i) */
  KILN_TE_FLOAT, /* float constant (f) of F16, BF16, F32 or F64, exact in its type */
  KILN_TE_VAR,   /* variable (var) */
  KILN_TE_LOAD,  /* buf[index] */
  KILN_TE_OP,    /* op(args[0..arity)) */
  KILN_TE_CAST,  /* (type) args[0]: floats to ints truncate toward zero; narrow floats round
                    to nearest even */
  KILN_TE_KIND_COUNT
} kiln_texpr_kind;

typedef struct kiln_texpr {
  kiln_texpr_kind kind;
  kiln_dtype type; /* the value's scalar type */
  kiln_top op;
  int64_t i;
  double f;
  int var;
  int buf;
  struct kiln_texpr *index;   /* LOAD */
  struct kiln_texpr *args[3]; /* OP, CAST */
} kiln_texpr;

/* ---- statements ---- */
typedef enum kiln_loop_kind {
  KILN_LOOP_SERIAL,
  KILN_LOOP_PARALLEL, /* CPU threads */
  KILN_LOOP_VECTOR,   /* SIMD lanes; iterations independent */
  KILN_LOOP_UNROLL,
  KILN_LOOP_BLOCK_X, /* GPU grid dimensions */
  KILN_LOOP_BLOCK_Y,
  KILN_LOOP_BLOCK_Z,
  KILN_LOOP_THREAD_X, /* GPU block dimensions */
  KILN_LOOP_THREAD_Y,
  KILN_LOOP_THREAD_Z,
  KILN_LOOP_KIND_COUNT
} kiln_loop_kind;

const char *kiln_loop_kind_name(kiln_loop_kind k); /* "serial", "parallel", "vector", "unroll",
                                                      "block.x", ..., "thread.z" */

typedef enum kiln_tstmt_kind {
  KILN_TS_FOR,     /* for var in [0, extent) kind { body } */
  KILN_TS_IF,      /* if cond { body } else { orelse } */
  KILN_TS_STORE,   /* buf[index] = value */
  KILN_TS_ASSIGN,  /* var = value */
  KILN_TS_BARRIER, /* all GPU threads of a block reach here before any goes on */
  KILN_TS_MMA,     /* matrix-multiply-accumulate on a tile, see kiln_tmma */
  KILN_TS_KIND_COUNT
} kiln_tstmt_kind;

struct kiln_tstmt;
typedef struct kiln_tblock {
  int len, cap;
  struct kiln_tstmt **data;
} kiln_tblock;

/* C[c_off + m*ldc + n] += sum_{k<K} A[a_off + m*a_sm + k*a_sk] * B[b_off + k*b_sk + n*b_sn]
 * for m < M, n < N, in the element type of C (A and B are loaded and cast to it; the
 * products are accumulated in increasing k, for F32 and F64 as one fused multiply-add per
 * k: c = fma(a, b, c); integers multiply then add, wrapping). C accumulates in an integer
 * type, F32 or F64 (not F16/BF16: a half accumulator has no agreed rounding; accumulate in
 * F32 and cast). I8/U8 A and B with an I32 C are the int8 dot product: each product is
 * exact and the sum wraps modulo 2^32, so any grouping (the CUDA backend's 4-way dp4a)
 * gives the same bits. The C backends map F32 MMAs to a register-tile microkernel (or
 * loops when the strides do not fit one). */
typedef struct kiln_tmma {
  int c_buf, a_buf, b_buf;
  kiln_texpr *c_off, *a_off, *b_off;
  int64_t ldc, a_sm, a_sk, b_sk, b_sn;
  int64_t m, n, k;
} kiln_tmma;

typedef struct kiln_tstmt {
  kiln_tstmt_kind kind;
  int var;             /* FOR: loop variable; ASSIGN: target */
  kiln_texpr *extent;  /* FOR: trip count (I64, >= 0) */
  kiln_loop_kind loop; /* FOR */
  kiln_texpr *cond;    /* IF */
  int buf;             /* STORE */
  kiln_texpr *index;   /* STORE */
  kiln_texpr *value;   /* STORE, ASSIGN */
  kiln_tblock body;    /* FOR, IF (then) */
  kiln_tblock orelse;  /* IF */
  kiln_tmma mma;       /* MMA */
} kiln_tstmt;

/* ---- kernels and modules ---- */
typedef enum kiln_tscope {
  KILN_SCOPE_GLOBAL, /* a kernel parameter */
  KILN_SCOPE_SHARED, /* GPU block shared memory; CPU: a per-kernel-call scratch array */
  KILN_SCOPE_LOCAL,  /* registers or stack of one thread */
  KILN_SCOPE_COUNT
} kiln_tscope;

const char *kiln_tscope_name(kiln_tscope s); /* "global", "shared", "local" */

typedef struct kiln_tbuf {
  const char *name;
  kiln_dtype dtype;
  kiln_tscope scope;
  int64_t size;  /* elements */
  bool readonly; /* GLOBAL: the kernel never stores to it */
} kiln_tbuf;

typedef struct kiln_tvar {
  const char *name;
  kiln_dtype type;
} kiln_tvar;

typedef struct kiln_tkernel {
  const char *name;         /* a C identifier, unique in the module */
  const char *origin;       /* the graph nodes it came from, for comments ("conv1, relu1") */
  KILN_VEC(kiln_tbuf) bufs; /* the GLOBAL ones first, in parameter order */
  int n_params;
  KILN_VEC(kiln_tvar) vars;
  kiln_tblock body;
  struct kiln_tmodule *module;
} kiln_tkernel;

typedef struct kiln_tmodule {
  kiln_arena *arena;
  KILN_VEC(kiln_tkernel *) kernels;
  /* Lowering policy, not semantics: loop nests over fewer elements than this get no
   * PARALLEL loop (on a CPU, starting threads costs more than such work). Set by the
   * lowering from the schedule of the kernel it is building (src/lower/schedule.h);
   * 0 makes every nest parallel (GPU targets). */
  int64_t par_min_elements;
  /* Lowering policy too: the precision policy the lowering builds this module's kernels
   * with (a const kiln_precision_policy *, src/lower/precision.h; NULL: the default). The
   * tile IR never reads it: the kernels carry the chosen types. */
  const void *lower_precision;
} kiln_tmodule;

kiln_tmodule *kiln_tmodule_new(void);
void kiln_tmodule_free(kiln_tmodule *m);
kiln_tkernel *kiln_tkernel_new(kiln_tmodule *m, const char *name);
kiln_tkernel *kiln_tmodule_find(const kiln_tmodule *m, const char *name); /* NULL if none */

/* Parameters must be added before any other buffer. Return the buffer id. */
int kiln_tkernel_param(kiln_tkernel *k, const char *name, kiln_dtype dtype, int64_t size);
int kiln_tkernel_buf(kiln_tkernel *k, const char *name, kiln_dtype dtype, kiln_tscope scope,
                     int64_t size);
int kiln_tkernel_var(kiln_tkernel *k, const char *name, kiln_dtype type);
char *kiln_tkernel_strdup(kiln_tkernel *k, const char *s);

/* ---- builders (arena-allocated; the type rules are checked by the verifier) ---- */
kiln_texpr *kiln_tint(kiln_tkernel *k, int64_t v); /* I64 */
kiln_texpr *kiln_tconst_int(kiln_tkernel *k, kiln_dtype type, int64_t v);
/* v rounded to type (F16, BF16, F32: to nearest even, as a C literal is) */
kiln_texpr *kiln_tfloat(kiln_tkernel *k, kiln_dtype type, double v);
kiln_texpr *kiln_tv(kiln_tkernel *k, int var);
kiln_texpr *kiln_tload(kiln_tkernel *k, int buf, kiln_texpr *index);
kiln_texpr *kiln_tun(kiln_tkernel *k, kiln_top op, kiln_texpr *a);
kiln_texpr *kiln_tbin(kiln_tkernel *k, kiln_top op, kiln_texpr *a, kiln_texpr *b);
kiln_texpr *kiln_tselect(kiln_tkernel *k, kiln_texpr *c, kiln_texpr *a, kiln_texpr *b);
kiln_texpr *kiln_tmac(kiln_tkernel *k, kiln_texpr *acc, kiln_texpr *a, kiln_texpr *b);
kiln_texpr *kiln_tcast(kiln_tkernel *k, kiln_dtype type, kiln_texpr *a);
/* Index helpers with constant folding: a + b, a * c (c constant) */
kiln_texpr *kiln_tadd(kiln_tkernel *k, kiln_texpr *a, kiln_texpr *b);
kiln_texpr *kiln_tmul(kiln_tkernel *k, kiln_texpr *a, int64_t c);

kiln_tstmt *kiln_tfor(kiln_tkernel *k, int var, kiln_texpr *extent, kiln_loop_kind kind);
kiln_tstmt *kiln_tif(kiln_tkernel *k, kiln_texpr *cond);
kiln_tstmt *kiln_tstore(kiln_tkernel *k, int buf, kiln_texpr *index, kiln_texpr *value);
kiln_tstmt *kiln_tassign(kiln_tkernel *k, int var, kiln_texpr *value);
kiln_tstmt *kiln_tbarrier(kiln_tkernel *k);
kiln_tstmt *kiln_tmma_stmt(kiln_tkernel *k, const kiln_tmma *mma);
void kiln_tblock_push(kiln_tkernel *k, kiln_tblock *b, kiln_tstmt *s);

/* Result type of op applied to operands of type t (BOOL for comparisons; for SELECT and
 * MAC, t is the type of the first value operand: a, acc). */
kiln_dtype kiln_top_result(kiln_top op, kiln_dtype t);
/* True for the types arithmetic works on (BOOL, ints, F16, BF16, F32, F64). */
bool kiln_tile_arith_type(kiln_dtype t);
/* True for the float types arithmetic works on (F16, BF16, F32, F64). */
bool kiln_tile_float_type(kiln_dtype t);
/* True for F16 and BF16, the types whose arithmetic rounds an F32 result. */
bool kiln_tile_half_type(kiln_dtype t);
/* Whether the double v is exactly a value of float type t (NaN counts as exact). */
bool kiln_tile_float_exact(kiln_dtype t, double v);

/* ---- printer, parser, verifier, interpreter (tile_print.c, tile_parse.c, tile_verify.c,
 * tile_interp.c); the text form is described in docs/TILE_IR.md ---- */
void kiln_tkernel_print(const kiln_tkernel *k, kiln_strbuf *out);
void kiln_tmodule_print(const kiln_tmodule *m, kiln_strbuf *out);
/* Parses a module (one or more kernels); errors give line:col with a caret. */
KILN_MUST_USE kiln_status kiln_tmodule_parse(const char *text, const char *filename,
                                             kiln_tmodule **out);
/* Checks ids, types, scopes, loop kinds and that every buffer access is in bounds for all
 * values of the loop variables, or guarded by an enclosing condition that proves it. */
KILN_MUST_USE kiln_status kiln_tkernel_verify(const kiln_tkernel *k);
KILN_MUST_USE kiln_status kiln_tmodule_verify(const kiln_tmodule *m);
/* Runs k sequentially (every loop kind as a serial loop; for GPU kernels, threads of a
 * block run in lockstep between barriers). args[i] points at parameter i's data, in the
 * buffer's dtype. Out-of-bounds accesses are errors, never undefined behaviour. */
KILN_MUST_USE kiln_status kiln_tkernel_interp(const kiln_tkernel *k, void *const *args);
/* The same with parameters tracked as fresh memory (track NULL: none; else per parameter):
 * KILN_TRACK_READS: loading an element the kernel has not stored is an error (scratch space,
 * whose bytes on a target are what its last user left); KILN_TRACK_OUTPUT: that, and when
 * the kernel ends every element must have been stored (a value the kernel defines: an element
 * it leaves holds whatever the memory held), unless a KILN_TRACK_FLAG parameter (an I32 error
 * flag, kiln_step.check_arg) holds nonzero then: the step fails, its outputs unused. */
enum { KILN_TRACK_NONE, KILN_TRACK_READS, KILN_TRACK_OUTPUT, KILN_TRACK_FLAG };
KILN_MUST_USE kiln_status kiln_tkernel_interp_tracked(const kiln_tkernel *k, void *const *args,
                                                      const uint8_t *track);

#endif
