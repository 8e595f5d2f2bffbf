/* kiln print MODEL: the model in Kiln's text IR. */
#include <string.h>

#include "cli.h"

static const char *const print_help =
    "usage: kiln print MODEL [--full] [--elide N]\n\n"
    "Prints MODEL (.onnx, or .kiln text IR) as Kiln's text IR (docs/IR.md) after type\n"
    "inference. Constants with more than N elements (default 16) are elided as\n"
    "'<N elements>'; --full prints every value, so that the output parses back.\n";

int kiln_cmd_print(int argc, char **argv) {
  const char *path = NULL;
  long elide = 16;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(print_help, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--full")) elide = -1;
    else if (kiln_cli_opt(argc, argv, &i, "--elide", &v)) {
      if (kiln_cli_int(v, &elide) || elide < 0)
        return kiln_cli_usage("print", "--elide needs a number >= 0");
    } else if (argv[i][0] == '-') return kiln_cli_usage("print", "unknown option '%s'", argv[i]);
    else if (path) return kiln_cli_usage("print", "more than one model given");
    else path = argv[i];
  }
  if (!path) return kiln_cli_usage("print", "no model given");
  kiln_graph *g;
  kiln_status st = kiln_cli_load(path, &g);
  if (st) return kiln_cli_fail("print", st);
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, elide);
  fwrite(b.data, 1, b.len, stdout);
  kiln_strbuf_free(&b);
  kiln_graph_free(g);
  return 0;
}
