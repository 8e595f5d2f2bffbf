/* The internal side of the public API (include/kiln.h): what Kiln's own tools and tests use
 * beyond the opaque handles. Programs outside Kiln include kiln.h alone. */
#ifndef KILN_API_H
#define KILN_API_H

#include "kiln.h"
#include "onnx/onnx.h"
#include "runtime/runtime.h"

/* Loads an ONNX model (or a .kiln text IR file), validates it and infers its types. */
KILN_MUST_USE kiln_status kiln_load_graph(const char *path, kiln_graph **out);
/* The model's graph (owned by the model) and its compiled form (NULL before compiling). */
const kiln_graph *kiln_model_graph(const kiln_model *m);
const kiln_compiled *kiln_model_compiled(const kiln_model *m);
const kiln_type *kiln_model_input_type(const kiln_model *m, int i);
/* kiln_model_compile for target t (NULL: the default) with the full internal options (o NULL:
 * kiln_compile_opts_init). */
KILN_MUST_USE kiln_status kiln_model_compile_opts(kiln_model *m, const kiln_target *t,
                                                  const kiln_compile_opts *o);

#endif
