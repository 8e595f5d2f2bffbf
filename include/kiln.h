/* kiln.h — the public C API of Kiln: opaque handles and plain C types only.
 *
 * Kiln reads an ONNX model (or a .kiln text IR file) into a typed graph and runs it, with
 * its reference interpreter or with code compiled for a target. This header is what a
 * program or a language binding uses; it includes only the C library and exposes no
 * internal structure (the stage headers under src/ are Kiln's own business and change
 * without notice). A worked example (error handling shortened):
 *
 *   #include <kiln.h>
 *
 *   kiln_model *m;
 *   kiln_status st = kiln_model_load("resnet18.onnx", &m);
 *   if (st) { fprintf(stderr, "%s\n", kiln_status_message(st)); kiln_status_free(st); return 1; }
 *
 *   int64_t dims[4] = {1, 3, 224, 224};
 *   kiln_tensor *x;
 *   st = kiln_tensor_new(KILN_F32, 4, dims, &x);  // zeroed; fill kiln_tensor_data(x)
 *
 *   kiln_options *o;
 *   kiln_options_new(&o);                         // the defaults: CPU, all cores
 *   st = kiln_model_compile(m, o);                // optional: without it, the interpreter runs
 *   kiln_options_free(o);
 *
 *   kiln_tensor *y[1];
 *   st = kiln_model_run(m, (const kiln_tensor *[]){x}, y);  // one tensor per model output
 *   printf("%s: %lld elements\n", kiln_model_output_name(m, 0), (long
 * long)kiln_tensor_numel(y[0]));
 *
 *   kiln_tensor_free(y[0]);
 *   kiln_tensor_free(x);
 *   kiln_model_free(m);
 *
 * Errors: every fallible call returns a kiln_status, NULL on success, otherwise an error the
 * caller owns (kiln_status_free) with a code and a message. Ignoring one is a compiler
 * warning (KILN_MUST_USE).
 *
 * Memory: everything Kiln allocates for tensors (weights, interpreter values, the compiled
 * arena) counts against one limit, checked before allocating; a model that needs more fails
 * with KILN_ERR_INVALID ("... needs N bytes, above the limit of M bytes"), never by exhausting
 * the machine. kiln_set_max_memory sets it for the process (default: 16 GiB or 3/4 of
 * physical memory, whichever is smaller); kiln_options_set_max_memory for one compiled form.
 *
 * Threads: a model runs one call at a time; use one kiln_model per thread. */
#ifndef KILN_H
#define KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A function whose result must be used: a status to check, an object to free. */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_MUST_USE __attribute__((warn_unused_result))
#else
#define KILN_MUST_USE
#endif

/* ---- status ---- */
typedef enum kiln_code {
  KILN_OK_CODE = 0,
  KILN_ERR_INVALID,     /* bad input: malformed model, bad attribute, ...  (exit 2) */
  KILN_ERR_UNSUPPORTED, /* valid input that Kiln does not handle yet       (exit 2) */
  KILN_ERR_IO,          /* a file could not be read or written             (exit 2) */
  KILN_ERR_OOM,         /* out of memory or size overflow                  (exit 1) */
  KILN_ERR_FAILED,      /* the work itself failed (mismatch, runtime error) (exit 1) */
  KILN_ERR_INTERNAL,    /* a bug in Kiln                                    (exit 1) */
  KILN_ERR_SYSTEM,      /* the environment failed: a write or close (disk full), a missing
                           tool (no C compiler), a resource limit      (exit 1) */
  KILN_CODE_COUNT
} kiln_code;

typedef struct kiln_error *kiln_status; /* NULL: success */
#define KILN_OK ((kiln_status)NULL)

kiln_code kiln_status_code(kiln_status st);
const char *kiln_status_message(kiln_status st); /* "" for KILN_OK */
const char *kiln_code_name(kiln_code code);      /* "invalid input", "i/o error", ... */
void kiln_status_free(kiln_status st);

/* ---- element types (numbered as ONNX's TensorProto.DataType) ---- */
typedef enum kiln_dtype {
  KILN_UNDEFINED = 0,
  KILN_F32 = 1,
  KILN_U8 = 2,
  KILN_I8 = 3,
  KILN_U16 = 4,
  KILN_I16 = 5,
  KILN_I32 = 6,
  KILN_I64 = 7,
  KILN_STRING = 8,
  KILN_BOOL = 9,
  KILN_F16 = 10,
  KILN_F64 = 11,
  KILN_U32 = 12,
  KILN_U64 = 13,
  KILN_C64 = 14,  /* complex64: not supported beyond being named */
  KILN_C128 = 15, /* complex128: idem */
  KILN_BF16 = 16,
  KILN_F8E4M3FN = 17,
  KILN_F8E4M3FNUZ = 18,
  KILN_F8E5M2 = 19,
  KILN_F8E5M2FNUZ = 20,
  KILN_U4 = 21,
  KILN_I4 = 22,
  KILN_F4E2M1 = 23,
  KILN_F8E8M0 = 24,
  KILN_U2 = 25,
  KILN_I2 = 26,
  KILN_DTYPE_COUNT
} kiln_dtype;

/* ---- tensors: dense, row-major, owned by whoever created them ---- */
typedef struct kiln_tensor kiln_tensor;

/* A new zeroed tensor (rank <= 8, dims >= 0; string tensors hold NULL strings). */
KILN_MUST_USE kiln_status kiln_tensor_new(kiln_dtype dtype, int rank, const int64_t *dims,
                                          kiln_tensor **out);
void kiln_tensor_free(kiln_tensor *t);
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
int kiln_tensor_rank(const kiln_tensor *t);
int64_t kiln_tensor_dim(const kiln_tensor *t, int i); /* -1 when i is out of range */
int64_t kiln_tensor_numel(const kiln_tensor *t);
/* The elements: numel values of the dtype's C type (uint16_t bits for f16/bf16, one byte per
 * element for the sub-byte types and bool, char * for strings). */
void *kiln_tensor_data(kiln_tensor *t);
size_t kiln_tensor_nbytes(const kiln_tensor *t);

/* ---- compile options ---- */
typedef struct kiln_options kiln_options;

KILN_MUST_USE kiln_status kiln_options_new(kiln_options **out); /* the defaults */
void kiln_options_free(kiln_options *o);
/* "cpu" (default) or another registered target's name; an unknown name is KILN_ERR_INVALID. */
KILN_MUST_USE kiln_status kiln_options_set_target(kiln_options *o, const char *target);
/* Threads of the compiled kernels, 1..1024; 0: all cores. */
KILN_MUST_USE kiln_status kiln_options_set_threads(kiln_options *o, int threads);
/* Binds a symbolic input dim (repeatable; the name and value are copied). */
KILN_MUST_USE kiln_status kiln_options_set_dim(kiln_options *o, const char *sym, int64_t value);
/* Where compiled kernels are cached (copied; NULL: the default cache). */
KILN_MUST_USE kiln_status kiln_options_set_cache_dir(kiln_options *o, const char *dir);
/* Memory limit of the compiled form in bytes (0: the process limit). */
KILN_MUST_USE kiln_status kiln_options_set_max_memory(kiln_options *o, int64_t bytes);

/* ---- models ---- */
typedef struct kiln_model kiln_model;

/* Loads an ONNX model, a folder holding model.onnx, or a .kiln text IR file, and checks it
 * (types inferred, attributes validated). */
KILN_MUST_USE kiln_status kiln_model_load(const char *path, kiln_model **out);
void kiln_model_free(kiln_model *m);
int kiln_model_num_inputs(const kiln_model *m);
int kiln_model_num_outputs(const kiln_model *m);
const char *kiln_model_input_name(const kiln_model *m, int i);  /* NULL out of range */
const char *kiln_model_output_name(const kiln_model *m, int i); /* idem */
/* The declared type of input i: dtype (KILN_UNDEFINED for a sequence or optional input),
 * rank (-1 when unknown), and dims (-1 for a symbolic or unknown dim, whose name
 * kiln_model_input_dim_name gives, or NULL). */
kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i);
int kiln_model_input_rank(const kiln_model *m, int i);
int64_t kiln_model_input_dim(const kiln_model *m, int i, int d);
const char *kiln_model_input_dim_name(const kiln_model *m, int i, int d);

/* Binds the symbolic dims of the inputs from example tensors (one per input). */
KILN_MUST_USE kiln_status kiln_model_bind_inputs(kiln_model *m, const kiln_tensor *const *inputs);
/* Compiles the model for a target (o NULL: the defaults). Symbolic input dims must be bound
 * (kiln_options_set_dim or kiln_model_bind_inputs). Compiling again replaces the compiled
 * form. The model keeps its meaning: the graph passes rewrite it only into equivalent forms. */
KILN_MUST_USE kiln_status kiln_model_compile(kiln_model *m, const kiln_options *o);
bool kiln_model_is_compiled(const kiln_model *m);
/* Runs the model: with its compiled code after kiln_model_compile (inputs must then have the
 * compiled dtypes and shapes exactly), else with the reference interpreter. inputs: one tensor
 * per model input (borrowed); outputs: receives one new tensor per model output (owned by
 * the caller). Inputs that do not fit the model are KILN_ERR_INVALID naming the input. */
KILN_MUST_USE kiln_status kiln_model_run(kiln_model *m, const kiln_tensor *const *inputs,
                                         kiln_tensor **outputs);

/* The process-wide memory limit in bytes (0: back to the default); see above. */
void kiln_set_max_memory(int64_t bytes);

#ifdef __cplusplus
}
#endif

#endif
