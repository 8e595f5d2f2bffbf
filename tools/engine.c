/* The backends that `kiln run`, `kiln test-onnx` and `kiln bench` share: one engine
 * prepares a graph for a backend (passes, lowering, compilation) and runs it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *const backend_names[KILN_CLI_BACKEND_COUNT] = {"interp", "opt", "tile", "cpu"};

const char *kiln_cli_backend_name(kiln_cli_backend b) {
  return b >= 0 && b < KILN_CLI_BACKEND_COUNT ? backend_names[b] : "?";
}

int kiln_cli_backend_parse(const char *s, kiln_cli_backend *out) {
  for (int b = 0; s && b < KILN_CLI_BACKEND_COUNT; b++)
    if (!strcmp(s, backend_names[b])) {
      *out = (kiln_cli_backend)b;
      return 0;
    }
  return -1;
}

struct kiln_cli_engine {
  kiln_cli_engine_opts opts;
  kiln_graph *graph; /* owned */
  double prepare_seconds;
};

double kiln_cli_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

kiln_status kiln_cli_engine_new(kiln_graph *g, const kiln_cli_engine_opts *o,
                                kiln_val *const *inputs, kiln_cli_engine **out) {
  (void)inputs;
  double t0 = kiln_cli_seconds();
  if (o->backend != KILN_CLI_INTERP) {
    kiln_graph_free(g);
    return kiln_unsupported("backend '%s' is not built yet", kiln_cli_backend_name(o->backend));
  }
  kiln_cli_engine *e = kiln_xcalloc(1, sizeof *e);
  e->opts = *o;
  e->graph = g;
  e->prepare_seconds = kiln_cli_seconds() - t0;
  *out = e;
  return KILN_OK;
}

kiln_status kiln_cli_engine_run(kiln_cli_engine *e, kiln_val *const *inputs, kiln_val **outputs) {
  return kiln_interp_run(e->graph, e->opts.trace ? &(kiln_interp_opts){.trace = true} : NULL,
                         e->graph->inputs.len, inputs, outputs);
}

const kiln_graph *kiln_cli_engine_graph(const kiln_cli_engine *e) {
  return e->graph;
}

double kiln_cli_engine_prepare_seconds(const kiln_cli_engine *e) {
  return e->prepare_seconds;
}

void kiln_cli_engine_report(const kiln_cli_engine *e, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "backend %s: prepared in %.1f ms\n",
                     kiln_cli_backend_name(e->opts.backend), e->prepare_seconds * 1e3);
}

void kiln_cli_engine_free(kiln_cli_engine *e) {
  if (!e) return;
  kiln_graph_free(e->graph);
  free(e);
}
