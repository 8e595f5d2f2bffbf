/* Standalone C: a compiled model written out as a program that needs nothing but a C
 * compiler and libm.
 *
 *   kiln_emit_standalone(c, "out", "model") writes
 *     out/model.h    the API: model_init(weights file), model_run(inputs, outputs),
 *                    model_free(), and tables of the inputs and outputs (names, dtypes,
 *                    shapes, bytes)
 *     out/model.c    the kernels (the C backend's code, OpenMP pragmas under #ifdef) and
 *                    the steps of the program over one arena laid out by the memory plan
 *     out/model.bin  the constants the kernels read (weights, prepacked panels) after a
 *                    header with their size and FNV-1a 64 checksum, checked by model_init
 *     out/main.c     an example: reads .npy (or raw) inputs, checking dtype, byte order,
 *                    order and shape, runs, writes .npy outputs named as `kiln run
 *                    --output-dir` names them (kiln_esc_file_name: no path can escape -o)
 *   and builds with `cc -O2 main.c model.c -lm` (add -fopenmp for threads).
 *
 * Every step must be a kernel or an alias: a program with fallback steps (nodes that run
 * their reference kernel) is KILN_ERR_UNSUPPORTED, naming the first such node.
 *
 * Names from the model are data: in comments through kiln_esc_c_comment, in string literals
 * through kiln_esc_c_string, in file names through kiln_esc_file_name; no name changes code. */
#ifndef KILN_RUNTIME_STANDALONE_H
#define KILN_RUNTIME_STANDALONE_H

#include "runtime.h"

/* name: the file stem and symbol prefix (a C identifier). dir must exist. */
KILN_MUST_USE kiln_status kiln_emit_standalone(const kiln_compiled *c, const char *dir,
                                               const char *name);

/* The same files as text, written nowhere (tests and fuzzing need no C compiler for it): the
 * program and plan are those of kiln_compiled_program / kiln_compiled_plan, or of kiln_lower
 * and kiln_plan_program. On failure *out is empty. */
typedef struct kiln_standalone_files {
  kiln_strbuf h, c, main; /* NAME.h, NAME.c, main.c */
  unsigned char *bin;     /* NAME.bin */
  size_t bin_len;
} kiln_standalone_files;
KILN_MUST_USE kiln_status kiln_standalone_text(const kiln_program *p, const kiln_plan *plan,
                                               const char *name, kiln_standalone_files *out);
void kiln_standalone_files_free(kiln_standalone_files *f);

#endif
