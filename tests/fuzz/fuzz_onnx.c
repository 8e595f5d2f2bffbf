/* libFuzzer target for the ONNX reader: any bytes either load or give an error;
 * a model that loads must export, re-import and print the same (ir_version 0, which
 * export replaces by the version that goes with the opset, aside).
 *
 *   cmake -B build-fuzz -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang && cmake --build build-fuzz
 *   build-fuzz/fuzz_onnx -max_len=65536 corpus/   (seed: node-test model.onnx files) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_graph(const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  return b.data ? b.data : kiln_xstrdup("");
}

static void roundtrip(const kiln_graph *g) {
  kiln_strbuf bytes = {0};
  kiln_status st = kiln_onnx_save_bytes(g, &bytes);
  kiln_graph *g2 = NULL;
  if (!st) st = kiln_onnx_load_bytes(bytes.data, bytes.len, NULL, &g2);
  if (st) {
    fprintf(stderr, "round trip failed: %s\n", kiln_status_message(st));
    abort();
  }
  if (!g->ir_version) g2->ir_version = 0; /* exported as the default for its opset */
  char *a = print_graph(g), *b = print_graph(g2);
  if (strcmp(a, b) != 0) {
    fprintf(stderr, "round trip changed the graph:\n--- before\n%s--- after\n%s", a, b);
    abort();
  }
  free(a);
  free(b);
  kiln_graph_free(g2);
  kiln_strbuf_free(&bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_onnx_load_bytes(data, size, NULL, &g);
  if (!st) roundtrip(g);
  kiln_status_free(st);
  kiln_graph_free(g);
  return 0;
}
