/* libFuzzer target: names from a model are data, never code, in every emitter.
 * The input becomes hostile names on every name of a small fixed graph (tests/fuzz/emit_check.c:
 * comment closers, quotes, backslashes, newlines, control bytes, '..', '/', very long,
 * non-ASCII, raw bytes); the C and CUDA C emitted must tokenize (comments and string literals
 * aside) exactly as with plain names, line-based files keep one record per line, and the IR
 * texts read back the same. Any violation aborts.
 *   fuzz_emit -max_len=2048 corpus_dir tests/fuzz/fuzz_emit_seeds */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit_check.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* long names come from the generator, not from long inputs */
  const char *e = emit_check(data, size);
  if (e) {
    fprintf(stderr, "fuzz_emit: %s\n", e);
    abort();
  }
  return 0;
}
