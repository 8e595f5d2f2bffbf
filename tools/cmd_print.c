/* kiln print MODEL: the model in Kiln's text IR, optionally after the graph passes. */
#include <limits.h>
#include <string.h>

#include "cli.h"
#include "pass_flags.h"

static const char *const print_help =
    "usage: kiln print MODEL [--full] [--elide N] [--after PASS|all] [pass flags]\n\n"
    "Prints MODEL (.onnx, .kiln text IR, or a folder holding model.onnx) as Kiln's text IR\n"
    "(docs/IR.md) after type inference. Constants with more than N elements (default 16)\n"
    "are elided as '<N elements>'; --full prints every value, so that the output parses\n"
    "back.\n\n"
    "  --after PASS|all         run the pass pipeline up to and including the first\n"
    "                           application of PASS (all: the whole pipeline) and print the\n"
    "                           result; '--after fusion' shows the fusion groups\n"
    "pass flags (any of them runs the pipeline; output other than the graph goes to stderr):\n";

static void usage_help(void) {
  int n;
  const kiln_pass_info *p = kiln_passes_pipeline(&n);
  fputs(print_help, stdout);
  fputs(kiln_cli_memory_help, stdout);
  fputs(kiln_cli_pass_flags_help, stdout);
  fputs("\nthe pipeline, in order:\n", stdout);
  for (int i = 0; i < n; i++) printf("  %2d. %-10s %s\n", i + 1, p[i].name, p[i].summary);
}

typedef struct print_args {
  const char *path;
  long elide;
  bool run_passes;
  kiln_pass_opts po;
} print_args;

/* Returns -1 when the arguments are fine, else the exit status. */
static int parse_args(int argc, char **argv, print_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    kiln_status err;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage_help();
      return 0;
    }
    if (!strcmp(argv[i], "--full")) a->elide = -1;
    else if (kiln_cli_pass_flag(argv[i], &a->po, &err)) {
      if (err) return kiln_cli_fail("print", err);
      a->run_passes = true;
    } else if (kiln_cli_opt(argc, argv, &i, "--after", &v)) {
      if (!v || (strcmp(v, "all") && !kiln_pass_find(v)))
        return kiln_cli_usage("print", "--after needs a pass name or 'all'");
      a->po.stop_after = v;
      a->run_passes = true;
    } else if (kiln_cli_opt(argc, argv, &i, "--elide", &v)) {
      if (kiln_cli_long("print", "--elide", v, 0, LONG_MAX, &a->elide)) return 2;
    } else if (kiln_cli_max_memory("print", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-') return kiln_cli_usage("print", "unknown option '%s'", argv[i]);
    else if (a->path) return kiln_cli_usage("print", "more than one model given");
    else a->path = argv[i];
  }
  if (!a->path) return kiln_cli_usage("print", "no model given");
  return -1;
}

int kiln_cmd_print(int argc, char **argv) {
  print_args a = {.elide = 16, .po = {.pass_limit = -1, .fuse_classify = kiln_lower_fuse_class}};
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  kiln_graph *g;
  kiln_status st = kiln_cli_load(a.path, &g);
  if (st) return kiln_cli_fail("print", st);
  if (a.run_passes) st = kiln_passes_run(g, &a.po, NULL);
  if (st) {
    kiln_graph_free(g);
    return kiln_cli_fail("print", st);
  }
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, a.elide);
  fwrite(b.data, 1, b.len, stdout);
  kiln_strbuf_free(&b);
  kiln_graph_free(g);
  return 0;
}
