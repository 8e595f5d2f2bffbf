/* kiln: the command-line driver. One file per subcommand (cmd_*.c). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"info", kiln_cmd_info, "inputs, outputs, opsets, op histogram and parameter count of a model"},
    {"print", kiln_cmd_print, "print a model as Kiln's text IR"},
    {"run", kiln_cmd_run, "run a model on a backend (interpreter, optimized, tile, compiled cpu)"},
    {"test-onnx", kiln_cmd_test_onnx, "run ONNX test cases (model.onnx + test_data_set_*)"},
    {"compile", kiln_cmd_compile, "compile a model for the CPU (artifact, report, standalone C)"},
    {"bench", kiln_cmd_bench, "time repeated runs of a model (latency, throughput)"},
    {"verify", kiln_cmd_verify,
     "check every compiler layer against the reference with error bounds"},
    {"reduce", kiln_cmd_reduce,
     "shrink a failing case (kiln verify --repro, kiln fuzz) to a minimal one"},
    {"fuzz", kiln_cmd_fuzz, "verify random models; failures deduplicated and written as cases"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: kiln COMMAND [options]\n\n"
             "Kiln compiles ONNX models to C kernels and runs them (or checks them against its\n"
             "reference interpreter).\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'kiln COMMAND --help' describes each command.\n"
             "Exit status: 0 success, 1 the work failed, 2 bad usage or bad input.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "kiln: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}

int kiln_cli_fail(const char *cmd, kiln_status st) {
  kiln_strbuf b = {0};
  kiln_esc_terminal(&b, kiln_status_message(st));
  fprintf(stderr, "kiln %s: error: %s\n", cmd, b.data ? b.data : "");
  kiln_strbuf_free(&b);
  int code = kiln_status_exit_code(st);
  kiln_status_free(st);
  return code;
}

int kiln_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf msg = {0}, shown = {0};
  kiln_strbuf_vprintf(&msg, fmt, ap);
  kiln_esc_terminal(&shown, msg.data ? msg.data : "");
  fprintf(stderr, "kiln %s: %s\n(see 'kiln %s --help')\n", cmd, shown.data ? shown.data : "", cmd);
  kiln_strbuf_free(&msg);
  kiln_strbuf_free(&shown);
  va_end(ap);
  return 2;
}

int kiln_cli_opt(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != 0) return 0;
  *value = *i + 1 < argc ? argv[++*i] : NULL;
  return 1;
}

int kiln_cli_double(const char *s, double *out) {
  char *end;
  if (!s || !*s) return -1;
  *out = strtod(s, &end);
  return *end ? -1 : 0;
}

int kiln_cli_int(const char *s, long *out) {
  char *end;
  if (!s || !*s) return -1;
  *out = strtol(s, &end, 10);
  return *end ? -1 : 0;
}

kiln_status kiln_cli_load(const char *path, kiln_graph **out) {
  return kiln_load_graph(path, out);
}
