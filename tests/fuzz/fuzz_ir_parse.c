/* libFuzzer target for the graph IR text parser.
 * Any input: the parser must return (an error or a graph) without crashing or leaking.
 * When it returns a graph: the graph verifies, and print -> parse -> print gives the
 * same text (the printer's output always parses). Any violation aborts.
 *   fuzz_ir_parse -max_len=4096 corpus_dir seeds_dir */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_ir_parse: %s\n%s\n", what, detail ? detail : "");
  abort();
}

static char *print_graph(const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, -1);
  if (!b.data) fail("the printer wrote nothing", NULL);
  return b.data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(text, "fuzz", &g);
  free(text);
  if (st) {
    if (kiln_status_code(st) != KILN_ERR_INVALID)
      fail("parse error that is not INVALID", kiln_status_message(st));
    kiln_status_free(st);
    return 0;
  }
  if ((st = kiln_graph_verify(g)) != KILN_OK)
    fail("a parsed graph does not verify", kiln_status_message(st));
  char *t1 = print_graph(g);
  kiln_graph *g2 = NULL;
  if ((st = kiln_graph_parse(t1, "printed", &g2)) != KILN_OK) {
    fprintf(stderr, "%s\n", t1);
    fail("printed text does not parse", kiln_status_message(st));
  }
  char *t2 = print_graph(g2);
  if (strcmp(t1, t2) != 0) {
    fprintf(stderr, "--- first print\n%s--- second print\n%s", t1, t2);
    fail("print -> parse -> print is not the identity", NULL);
  }
  free(t1);
  free(t2);
  kiln_graph_free(g2);
  kiln_graph_free(g);
  return 0;
}
