/* Standalone C: a compiled model written out as a program that needs nothing but a C
 * compiler and libm.
 *
 *   kiln_emit_standalone(c, "out", "model") writes
 *     out/model.h    the API: model_init(weights file), model_run(inputs, outputs),
 *                    model_free(), and tables of the inputs and outputs (names, dtypes,
 *                    shapes, bytes)
 *     out/model.c    the kernels (the C backend's code, OpenMP pragmas under #ifdef) and
 *                    the steps of the program over one arena laid out by the memory plan
 *     out/model.bin  the constants the kernels read (weights, prepacked panels)
 *     out/main.c     an example: reads .npy (or raw) inputs, runs, writes .npy outputs
 *   and builds with `cc -O2 main.c model.c -lm` (add -fopenmp for threads).
 *
 * Every step must be a kernel or an alias: a program with fallback steps (nodes that run
 * their reference kernel) is KILN_ERR_UNSUPPORTED, naming the first such node. */
#ifndef KILN_RUNTIME_STANDALONE_H
#define KILN_RUNTIME_STANDALONE_H

#include "runtime.h"

/* name: the file stem and symbol prefix (a C identifier). dir must exist. */
kiln_status kiln_emit_standalone(const kiln_compiled *c, const char *dir, const char *name);

#endif
