/* kiln.h — the public C API of Kiln.
 *
 * Kiln reads an ONNX model into a typed SSA graph IR and runs it. A worked example
 * (error handling shortened; every fallible call returns a kiln_status that is NULL
 * on success and otherwise carries a message, see src/base/base.h):
 *
 *   #include <kiln.h>
 *
 *   kiln_model *m;
 *   kiln_status st = kiln_model_load("resnet18.onnx", &m);
 *   if (st) { fprintf(stderr, "%s\n", kiln_status_message(st)); kiln_status_free(st); return 1; }
 *
 *   int64_t dims[4] = {1, 3, 224, 224};
 *   kiln_tensor *x;
 *   kiln_tensor_new(KILN_F32, 4, dims, &x);          // zeroed; fill x->data (float *)
 *
 *   st = kiln_model_compile(m, NULL);  // optional: compile for this CPU (C kernels, cached)
 *
 *   kiln_tensor *y[1];
 *   st = kiln_model_run(m, (const kiln_tensor *[]){x}, y);  // one tensor per model output
 *   printf("%s -> %lld elements\n", kiln_model_output_name(m, 0), (long long)y[0]->numel);
 *
 *   kiln_tensor_free(y[0]);
 *   kiln_tensor_free(x);
 *   kiln_model_free(m);
 *
 * Memory: everything Kiln allocates for tensors (weights, interpreter values, the compiled
 * arena) counts against one limit, checked before allocating; a model that needs more fails
 * with KILN_ERR_INVALID ("... needs N bytes, above the limit of M bytes (--max-memory)"),
 * never by exhausting the machine. kiln_set_max_memory sets it for the process (default:
 * 16 GiB or 3/4 of physical memory, whichever is smaller); kiln_compile_opts.max_memory
 * sets it for one compiled form (its compilation and its runs). See base.h (kiln_mem_*).
 *
 * Under this convenience layer, the stage headers are public too: the graph IR
 * (graph/graph.h), the operator set and reference interpreter (ops/ops.h), ONNX
 * import/export and tensor files (onnx/onnx.h), the compiler and runtime
 * (runtime/runtime.h: compile options, reports, memory plans). */
#ifndef KILN_H
#define KILN_H

#include "onnx/onnx.h"
#include "runtime/runtime.h"

typedef struct kiln_model kiln_model;

/* Loads an ONNX model (or a .kiln text IR file) and infers its types. */
kiln_status kiln_load_graph(const char *path, kiln_graph **out);
kiln_status kiln_model_load(const char *path, kiln_model **out);
void kiln_model_free(kiln_model *m);
/* The underlying graph (owned by the model). */
const kiln_graph *kiln_model_graph(const kiln_model *m);
int kiln_model_num_inputs(const kiln_model *m);
int kiln_model_num_outputs(const kiln_model *m);
const char *kiln_model_input_name(const kiln_model *m, int i);
const char *kiln_model_output_name(const kiln_model *m, int i);
const kiln_type *kiln_model_input_type(const kiln_model *m, int i);
/* Runs the model: with its compiled code after kiln_model_compile (inputs must then have
 * the compiled dtypes and shapes exactly), else with the reference interpreter. inputs: one
 * tensor per model input (borrowed); outputs: receives one new tensor per model output
 * (owned by the caller). Models whose inputs or outputs are sequences or optionals need
 * kiln_interp_run. */
kiln_status kiln_model_run(kiln_model *m, const kiln_tensor *const *inputs, kiln_tensor **outputs);
/* Compiles the model (pass pipeline, fusion, C kernels built by the system compiler and
 * cached on disk, static memory plan); o NULL for the defaults (kiln_compile_opts_init).
 * Symbolic input dims must be bound: through o->dims, or kiln_model_bind_inputs first.
 * The model's graph is rewritten by the passes (same meaning). Compiling again replaces
 * the compiled form. */
kiln_status kiln_model_compile(kiln_model *m, const kiln_compile_opts *o);
/* Binds the symbolic dims of the model's inputs from example tensors (one per input). */
kiln_status kiln_model_bind_inputs(kiln_model *m, const kiln_tensor *const *inputs);
/* The process-wide memory limit in bytes (0: back to the default); see above. */
void kiln_set_max_memory(int64_t bytes);
/* The compiled form (for kiln_compiled_report and stats), or NULL before compiling. */
const kiln_compiled *kiln_model_compiled(const kiln_model *m);

#endif
