/* Time per step of a compiled model on its own test inputs (kiln_compiled_profile).
 *
 * Loads MODEL_DIR/model.onnx, binds the inputs of MODEL_DIR/test_data_set_0, compiles for
 * the CPU and prints the profile: total per run, time by step kind, slowest steps.
 *
 *   built as build/model_profile (cmake target model_profile):
 *   build/model_profile build/models/bert_tiny [threads] [iters]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"
#include "runtime/runtime.h"

static kiln_status read_inputs(const char *dir, const kiln_graph *g, kiln_tensor **ts) {
  for (int i = 0; i < g->inputs.len; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    KILN_TRY(kiln_pb_read_tensor(path, &ts[i]));
  }
  return KILN_OK;
}

static kiln_status run(const char *dir, int threads, int iters) {
  char path[1024];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  kiln_graph *g;
  KILN_TRY(kiln_onnx_load(path, &g));
  kiln_tensor *ts[16] = {0};
  if (g->inputs.len > 16) return kiln_error(KILN_ERR_FAILED, "too many inputs");
  KILN_TRY(read_inputs(dir, g, ts));
  KILN_TRY(kiln_graph_bind_inputs(g, g->inputs.len, (const kiln_tensor *const *)ts));
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.threads = threads;
  o.take_graph = true;
  kiln_compiled *c;
  KILN_TRY(kiln_compile(g, NULL, &o, &c));
  kiln_strbuf out = {0};
  KILN_TRY(kiln_compiled_profile(c, g->inputs.len, ts, iters, &out));
  fwrite(out.data, 1, out.len, stdout);
  kiln_strbuf_free(&out);
  for (int i = 0; i < 16; i++)
    if (ts[i]) kiln_tensor_free(ts[i]);
  kiln_compiled_free(c);
  return KILN_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: model_profile MODEL_DIR [threads] [iters]\n");
    return 2;
  }
  kiln_status st = run(argv[1], argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atoi(argv[3]) : 20);
  if (st) {
    fprintf(stderr, "error: %s\n", kiln_status_message(st));
    return 1;
  }
  return 0;
}
