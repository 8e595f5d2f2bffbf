/* Standalone C (standalone.h), internal: the fixed text of the emitted files. */
#ifndef KILN_RUNTIME_STANDALONE_INTERNAL_H
#define KILN_RUNTIME_STANDALONE_INTERNAL_H

#include "base/base.h"

/* Appends tmpl with every "MODEL" replaced by name. */
void kiln_standalone_expand(kiln_strbuf *b, const char *tmpl, const char *name);

/* model.c's loader of the weights file (MODEL_init with its checksum check, MODEL_free). */
extern const char *const kiln_standalone_weights_c;
/* main.c: reads and checks .npy or raw inputs, runs, writes DIR/FILE.npy outputs. */
extern const char *const kiln_standalone_main_c;

#endif
