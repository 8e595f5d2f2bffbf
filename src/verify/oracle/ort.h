/* ONNX Runtime as a second oracle: runs a graph in ONNX Runtime (the PyPI package, CPU
 * execution provider, all graph optimizations, one intra-op thread) and compares its outputs
 * with the double-precision reference and its error bounds.
 *
 *   kiln_ort_opts oo; kiln_ort_opts_init(&oo);
 *   kiln_ort *ort;
 *   KILN_TRY(kiln_ort_open(&oo, &ort));   // KILN_ERR_UNSUPPORTED: no Python with onnxruntime
 *   kiln_layer_result layer;
 *   KILN_TRY(kiln_ort_check(ort, g, n_in, inputs, ref, &layer));
 *   if (!layer.ran) ...                    // ORT refused the model: layer.msg says why
 *   else if (!layer.ok) ...                // ORT's outputs lie outside the bound: a finding
 *   kiln_ort_close(ort);
 *
 * One Python process serves every request of a kiln_ort (a campaign does not pay Python's
 * start-up per graph). The Python program is embedded in the library (ort_script.c, a copy
 * of scripts/ort_oracle.py) and written to a private temporary folder at open, so the
 * binary does not depend on the source tree. The protocol, on the child's stdin/stdout:
 * the child first writes "ready <ort version> <max opset> <max ir version>"; then, per
 * request, Kiln writes "run\t<dir>\n" (or "trace\t<dir>\n": every node output of the root
 * graph becomes a model output too) for a folder holding model.onnx and input_<i>.pb, and
 * the child writes output_<i>.pb and replies "ok <n>" or "error <message>"; "check\t<dir>"
 * runs onnx.checker on the model.
 *
 * A model whose default-domain opset is newer than the newest that onnxruntime knows is
 * run at that older opset when every node's operator has the same definition in both
 * (onnx.defs since_version); otherwise onnxruntime refuses it.
 *
 * Failures: ORT refusing a model (unknown op, no kernel for a dtype, opset too new ...) is
 * not a finding: kiln_ort_run returns KILN_ERR_UNSUPPORTED with ORT's message, and
 * kiln_ort_check a layer with ran = false. When the Python process dies, it is restarted and
 * the request sent once more (it may have died after the previous request); dying twice on
 * one request, or running past the time limit (the process is killed and restarted), reports
 * that model the same way (did not run, with the reason). Only a process that cannot be
 * (re)started, or files that cannot be written, give an error from kiln_ort_check. */
#ifndef KILN_VERIFY_ORT_H
#define KILN_VERIFY_ORT_H

#include "verify/verify.h"

typedef struct kiln_ort_opts {
  /* The Python interpreter: this, else $KILN_PYTHON, else .venv/bin/python relative to the
   * current directory when it exists, else python3 on the PATH. */
  const char *python;
  double timeout_s; /* per request, and for start-up (default 60) */
  bool keep_files;  /* keep the temporary folder (its path: kiln_ort_dir) */
  FILE *log;        /* restarts, time-outs and Python's stderr path; NULL: silent */
} kiln_ort_opts;
void kiln_ort_opts_init(kiln_ort_opts *o);

typedef struct kiln_ort kiln_ort;

/* Starts the Python process and waits for it to import onnxruntime. KILN_ERR_UNSUPPORTED
 * when that fails, naming the Python tried and how to get one (`make venv`). */
KILN_MUST_USE kiln_status kiln_ort_open(const kiln_ort_opts *o, kiln_ort **out);
void kiln_ort_close(kiln_ort *o); /* NULL allowed */

/* "onnxruntime 1.23.2 (opset <= 23)" */
const char *kiln_ort_version(const kiln_ort *o);
/* The temporary folder (script, requests, Python's stderr in python.log). */
const char *kiln_ort_dir(const kiln_ort *o);

/* Counters over the life of o. */
typedef struct kiln_ort_stats {
  int64_t requests; /* run and trace requests sent */
  int64_t refused;  /* ORT refused the model ("error" replies) */
  int64_t crashes;  /* the process died or hung and was restarted */
  int64_t timeouts; /* of which: a request ran past timeout_s */
} kiln_ort_stats;
kiln_ort_stats kiln_ort_get_stats(const kiln_ort *o);
/* The Python process id (0 when not running), and the per-request time limit (tests). */
int kiln_ort_pid(const kiln_ort *o);
void kiln_ort_set_timeout(kiln_ort *o, double seconds);

/* Runs root graph g (types inferred) in ORT on inputs (one tensor value per graph input,
 * borrowed); outputs[k] receives a new value per graph output (owned by the caller). On
 * error every outputs[k] is NULL. KILN_ERR_UNSUPPORTED: ORT refused the model, crashed or
 * timed out on it (message says which); other codes: Kiln could not export the model, write
 * or read files, or restart Python. */
KILN_MUST_USE kiln_status kiln_ort_run(kiln_ort *o, const kiln_graph *g, int n_in,
                                       kiln_val *const *inputs, kiln_val **outputs);

/* Runs g in ORT and compares every graph output with kiln_vref_check against ref (computed
 * on the same g and inputs). Fills *layer: kind KILN_LAYER_REFERENCE, name "onnxruntime";
 * ran = false when ORT did not run the model (msg: ORT's reason); otherwise ok, max_err,
 * max_ratio, worst_output and, on a mismatch, msg naming the output. Error only as for
 * kiln_ort_run's non-UNSUPPORTED codes. */
KILN_MUST_USE kiln_status kiln_ort_check(kiln_ort *o, const kiln_graph *g, int n_in,
                                         kiln_val *const *inputs, const kiln_vref *ref,
                                         kiln_layer_result *layer);

/* After a failing kiln_ort_check: runs g again with every node output of the root graph made
 * a model output (which also stops ORT fusing across them) and compares each with ref in
 * topological order. *where receives the first node whose outputs ORT computes outside the
 * bound ("node 'n3' (Softmax)"), *signature the finding's signature in the runner's form,
 * "onnxruntime|-|<op kind of that node>" ("onnxruntime|-|" plus the sorted op kinds of the
 * graph when no single node fails alone, e.g. a fused pattern). Both "" when ORT refuses
 * the traced model. */
KILN_MUST_USE kiln_status kiln_ort_locate(kiln_ort *o, const kiln_graph *g, int n_in,
                                          kiln_val *const *inputs, const kiln_vref *ref,
                                          char *where, size_t where_len, char *signature,
                                          size_t sig_len);

/* Runs onnx.checker.check_model (full_check: strict shape inference too) on g as Kiln exports
 * it (kiln_onnx_save), in the same Python process. KILN_OK when the checker accepts it,
 * KILN_ERR_INVALID with the checker's message when not; other codes as for kiln_ort_run. */
KILN_MUST_USE kiln_status kiln_ort_check_model(kiln_ort *o, const kiln_graph *g);

/* The Python program (scripts/ort_oracle.py, embedded). */
extern const char kiln_ort_script[];

#endif
