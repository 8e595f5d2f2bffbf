/* kiln: the command-line driver. One file per subcommand (cmd_*.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* A command's exit status, or 1 when what it printed did not all reach stdout (a full disk
 * under `kiln print M > FILE`: a truncated file must not come with success). */
static int stdout_checked(int rc) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
  fprintf(stderr, "kiln: cannot write the output: %s\n", errno ? strerror(errno) : "write error");
  return rc ? rc : 1;
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
    if (!strcmp(argv[1], commands[i].name))
      return stdout_checked(commands[i].run(argc - 1, argv + 1));
  fprintf(stderr, "kiln: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}

/* A message for the terminal: no escape sequence (kiln_esc_terminal), and every line after the
 * first indented, so that a name holding a newline cannot pose as a line of its own. */
static void put_message(FILE *f, const char *text) {
  kiln_strbuf b = {0};
  kiln_esc_terminal(&b, text);
  for (const char *p = b.data ? b.data : ""; *p; p++) {
    fputc(*p, f);
    if (*p == '\n' && p[1]) fputs("  ", f);
  }
  kiln_strbuf_free(&b);
}

int kiln_cli_fail(const char *cmd, kiln_status st) {
  fprintf(stderr, "kiln %s: error: ", cmd);
  put_message(stderr, kiln_status_message(st));
  fputc('\n', stderr);
  int code = kiln_status_exit_code(st);
  kiln_status_free(st);
  return code;
}

const char *kiln_cli_show(kiln_strbuf *b, const char *s) {
  kiln_strbuf line = {0};
  kiln_esc_line(&line, s ? s : "");
  b->len = 0;
  if (b->data) b->data[0] = 0;
  kiln_esc_terminal(b, line.data ? line.data : "");
  kiln_strbuf_free(&line);
  return b->data ? b->data : "";
}

void kiln_cli_put_block(FILE *f, const char *text) {
  kiln_strbuf b = {0};
  kiln_esc_terminal(&b, text ? text : "");
  if (b.data) fputs(b.data, f);
  kiln_strbuf_free(&b);
}

int kiln_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf msg = {0};
  kiln_strbuf_vprintf(&msg, fmt, ap);
  fprintf(stderr, "kiln %s: ", cmd);
  put_message(stderr, msg.data ? msg.data : "");
  fprintf(stderr, "\n(see 'kiln %s --help')\n", cmd);
  kiln_strbuf_free(&msg);
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

/* Every numeric option goes through the checked parsers of base.h: the whole value, a range,
 * no overflow, finite floats. A bad value is a usage error naming the option and the range. */
static int number_usage(const char *cmd, kiln_status st) {
  if (!st) return 0;
  int rc = kiln_cli_usage(cmd, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return rc;
}

int kiln_cli_i64(const char *cmd, const char *opt, const char *v, int64_t lo, int64_t hi,
                 int64_t *out) {
  return v ? number_usage(cmd, kiln_parse_i64(v, lo, hi, opt, out))
           : kiln_cli_usage(cmd, "%s needs a value", opt);
}

int kiln_cli_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t *out) {
  if (!v) return kiln_cli_usage(cmd, "%s needs a value", opt);
  char *end = NULL;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || !end || *end || errno == ERANGE || n < lo)
    return kiln_cli_usage(cmd, "%s: '%s' is not an integer in %llu..%llu", opt, v,
                          (unsigned long long)lo, (unsigned long long)UINT64_MAX);
  *out = (uint64_t)n;
  return 0;
}

int kiln_cli_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out) {
  int64_t n;
  int rc = kiln_cli_i64(cmd, opt, v, lo, hi, &n);
  if (!rc) *out = (int)n;
  return rc;
}

int kiln_cli_long(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out) {
  int64_t n;
  int rc = kiln_cli_i64(cmd, opt, v, lo, hi, &n);
  if (!rc) *out = (long)n;
  return rc;
}

int kiln_cli_f64(const char *cmd, const char *opt, const char *v, double lo, double hi,
                 double *out) {
  return v ? number_usage(cmd, kiln_parse_f64(v, lo, hi, opt, out))
           : kiln_cli_usage(cmd, "%s needs a value", opt);
}

int kiln_cli_threads(const char *cmd, const char *v, int *out) {
  return kiln_cli_int(cmd, "--threads", v, 1, KILN_CLI_MAX_THREADS, out);
}

int kiln_cli_dim(const char *cmd, const char *v, char **sym, int64_t *n) {
  const char *eq = v ? strchr(v, '=') : NULL;
  if (!eq || eq == v) return kiln_cli_usage(cmd, "--dim needs SYM=N");
  char opt[300];
  snprintf(opt, sizeof opt, "--dim %.*s", (int)(eq - v < 200 ? eq - v : 200), v);
  if (kiln_cli_i64(cmd, opt, eq + 1, 0, KILN_CLI_MAX_DIM, n)) return 2;
  *sym = kiln_xstrdup(v);
  (*sym)[eq - v] = 0;
  return 0;
}

/* The one place that turns MODEL into a model file: `kiln run DIR` is as common a slip as
 * it is a reasonable request when DIR is a folder of the ONNX test layout. */
kiln_status kiln_cli_model_file(const char *model, char *file, size_t n) {
  struct stat sb;
  if (stat(model, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    if ((size_t)snprintf(file, n, "%s", model) >= n)
      return kiln_error(KILN_ERR_IO, "'%.100s...': the path is too long", model);
    return KILN_OK;
  }
  if ((size_t)snprintf(file, n, "%s/model.onnx", model) >= n)
    return kiln_error(KILN_ERR_IO, "'%.100s...': the path is too long", model);
  if (stat(file, &sb) != 0)
    return kiln_error(KILN_ERR_IO, "'%s' is a folder without model.onnx: give the model file",
                      model);
  return KILN_OK;
}

kiln_status kiln_cli_load(const char *path, kiln_graph **out) {
  char file[4200];
  KILN_TRY(kiln_cli_model_file(path, file, sizeof file));
  return kiln_load_graph(file, out);
}

kiln_status kiln_cli_check_ops(const char *what, const char *list) {
  if (!*list) return kiln_invalid("%s needs op names", what);
  for (const char *p = list;;) {
    size_t n = strcspn(p, ",");
    char op[64];
    snprintf(op, sizeof op, "%.*s", (int)(n < sizeof op ? n : sizeof op - 1), p);
    if (n >= sizeof op || kiln_op_lookup("", op) == KILN_OP_UNKNOWN)
      return kiln_invalid("%s: unknown op '%.*s'", what, (int)(n > 60 ? 60 : n), p);
    if (!p[n]) return KILN_OK;
    p += n + 1;
  }
}

/* Any value of the graph: a symbol of the inputs, or one the exporter gave to an output. */
static bool graph_has_sym(const kiln_graph *g, const char *sym) {
  for (int i = 0; i < g->values.len; i++) {
    const kiln_type *t = &g->values.data[i].type;
    for (int d = 0; t->kind == KILN_TYPE_TENSOR && d < t->rank; d++)
      if (t->dims[d].sym && !strcmp(t->dims[d].sym, sym)) return true;
  }
  return false;
}

kiln_status kiln_cli_check_dim_names(const kiln_graph *g, const kiln_dim_binding *dims, int n) {
  for (int i = 0; i < n; i++) {
    if (graph_has_sym(g, dims[i].sym)) continue;
    kiln_strbuf known = {0};
    for (int k = 0; k < g->inputs.len; k++) {
      const kiln_type *t = &g->values.data[g->inputs.data[k]].type;
      for (int d = 0; t->kind == KILN_TYPE_TENSOR && d < t->rank; d++)
        if (t->dims[d].sym && known.len < 200)
          kiln_strbuf_printf(&known, "%s'%s'", known.len ? ", " : "", t->dims[d].sym);
    }
    kiln_status st =
        kiln_invalid("--dim %s: the model has no symbolic dim of that name (%s%s)", dims[i].sym,
                     known.len ? "it has " : "it has none", known.len ? known.data : "");
    kiln_strbuf_free(&known);
    return st;
  }
  return KILN_OK;
}

int kiln_cli_named_arg(const char *cmd, const char *opt, const char *const *list, int n,
                       const char *v) {
  const char *eq = v ? strchr(v, '=') : NULL;
  if (!eq || eq == v) return kiln_cli_usage(cmd, "%s needs NAME=FILE", opt);
  size_t k = (size_t)(eq - v) + 1; /* NAME= */
  for (int i = 0; i < n; i++)
    if (!strncmp(list[i], v, k))
      return kiln_cli_usage(cmd, "%s '%.*s' is given twice ('%s' and '%s')", opt,
                            (int)(k - 1 > 200 ? 200 : k - 1), v, list[i] + k, eq + 1);
  return 0;
}
