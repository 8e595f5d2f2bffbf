/* Shared helpers of the `kiln` subcommands. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdio.h>

#include "api/api.h"
#include "runtime/runtime.h"

/* Each subcommand: argc/argv start at the subcommand name. Returns the exit status. */
int kiln_cmd_info(int argc, char **argv);
int kiln_cmd_print(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
int kiln_cmd_test_onnx(int argc, char **argv);
int kiln_cmd_bench(int argc, char **argv);
int kiln_cmd_compile(int argc, char **argv);
int kiln_cmd_verify(int argc, char **argv);
int kiln_cmd_reduce(int argc, char **argv);
int kiln_cmd_fuzz(int argc, char **argv);

/* Prints "kiln CMD: message" for st to stderr, frees it, returns its exit status (1 or 2). */
int kiln_cli_fail(const char *cmd, kiln_status st);
/* Text from a model or a file (a name, a case name, a reason) for a listing on the terminal:
 * one line (kiln_esc_line) with no escape sequence, C1 control or bidirectional override
 * (kiln_esc_terminal), so that it can neither forge a line nor color or retitle the terminal.
 * b is reset and holds the text; returns it (never NULL). */
const char *kiln_cli_show(kiln_strbuf *b, const char *s);
/* Writes a block of lines composed by the library (a report, a verify table) to f through
 * kiln_esc_terminal. */
void kiln_cli_put_block(FILE *f, const char *text);
/* Prints a usage error and returns 2. */
int kiln_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True if argv[*i] is "--name" (value in argv[*i+1]) or "--name=value"; sets *value and
 * advances *i past the value. A missing value is reported through *value == NULL. */
int kiln_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);
/* --max-memory BYTES (common_flags.c): true when argv[*i] is that option; then sets the
 * process-wide memory limit (kiln_mem_set_limit) and *rc = -1, or prints a usage error and
 * sets *rc = 2. Each command that loads or runs a model takes it and prints the help. */
bool kiln_cli_max_memory(const char *cmd, int argc, char **argv, int *i, int *rc);
extern const char *const kiln_cli_memory_help;
/* The value v of option opt of command cmd as a number in [lo, hi] (kiln_parse_i64/f64):
 * 0 on success; else prints the usage error ("kiln bench: --iters: 'abc' is not an integer
 * in 1..1000000") and returns 2. A missing value (v NULL) is such an error. */
int kiln_cli_i64(const char *cmd, const char *opt, const char *v, int64_t lo, int64_t hi,
                 int64_t *out);
int kiln_cli_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out);
/* An unsigned decimal integer in lo..UINT64_MAX (seeds), reported like kiln_cli_i64. */
int kiln_cli_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t *out);
int kiln_cli_long(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out);
int kiln_cli_f64(const char *cmd, const char *opt, const char *v, double lo, double hi,
                 double *out);
/* --threads of every command: one range, 1..KILN_CLI_MAX_THREADS. */
#define KILN_CLI_MAX_THREADS 1024
int kiln_cli_threads(const char *cmd, const char *v, int *out);
/* A --dim SYM=N value, N in 0..KILN_CLI_MAX_DIM; sym gets a malloc'd copy of SYM. Any
 * extent an int64 holds parses: whether the tensors it makes fit is decided by inference
 * (element counts) and the memory estimate, which name the limit that applies. */
#define KILN_CLI_MAX_DIM INT64_MAX
int kiln_cli_dim(const char *cmd, const char *v, char **sym, int64_t *n);
/* A NAME=FILE value v of option opt (--input, --expect) checked against the ones given
 * before (list, n): 0 when it is well-formed and NAME is new, else prints the usage error
 * and returns 2 (a name given twice is an error, not a silent choice of one). */
int kiln_cli_named_arg(const char *cmd, const char *opt, const char *const *list, int n,
                       const char *v);
/* MODEL as given on the command line: a model file, or a folder in the ONNX test layout
 * (DIR/model.onnx); writes the model file's path to file. A folder without model.onnx, a
 * FIFO or another non-file is an error (exit 2). */
kiln_status kiln_cli_model_file(const char *model, char *file, size_t n);
/* Loads a model (.onnx, or the text IR if the name ends in .kiln; a folder holding
 * model.onnx, see kiln_cli_model_file) and infers types. */
kiln_status kiln_cli_load(const char *path, kiln_graph **out);

/* Comparison of a result against an expected value: |a-e| <= atol + rtol*|e|
 * elementwise for floats, exact for integers, bools and strings; NaN matches NaN.
 * On mismatch, writes a description to msg. */
bool kiln_cli_compare(const kiln_val *got, const kiln_val *want, double rtol, double atol,
                      char *msg, size_t msg_len);

/* ---- backends (engine.c) ----
 * interp: the reference interpreter on the imported graph; opt: the reference interpreter
 * on the graph after the pass pipeline without fusion; tile: lowering, then the program
 * interpreter (tile IR interpreter + reference kernels for fallbacks); then one backend per
 * registered target that runs (runtime/target.h): its compiled code (cpu: compiled C). */
typedef enum kiln_cli_engine_kind {
  KILN_CLI_INTERP,
  KILN_CLI_OPT,
  KILN_CLI_TILE,
  KILN_CLI_COMPILED, /* kiln_compile for a target */
  KILN_CLI_ENGINE_KIND_COUNT
} kiln_cli_engine_kind;

typedef struct kiln_cli_backend {
  kiln_cli_engine_kind kind;
  const kiln_target *target; /* COMPILED */
} kiln_cli_backend;

/* The backend that runs target t's compiled code (NULL: the default target, cpu). */
kiln_cli_backend kiln_cli_compiled(const kiln_target *t);
const char *kiln_cli_backend_name(kiln_cli_backend b);
int kiln_cli_backend_parse(const char *s, kiln_cli_backend *out); /* 0 on success */
/* The backend names, ", "-separated ("interp, opt, tile, cpu"), appended to b. */
void kiln_cli_backends(kiln_strbuf *b);
/* Prints a help text to stdout with "{BACKENDS}" replaced by kiln_cli_backends,
 * "{TARGETS}" by the registered targets ("cpu|cuda") and "{COMPILED}" by "NAME: SUMMARY" of
 * each target that runs ("cpu: compiled C kernels"), so that it names what is registered. */
void kiln_cli_put_help(const char *text);
/* OpenMP threads of verified code sleep at barriers (OMP_WAIT_POLICY=passive unless set):
 * the verifier runs many tiny parallel loops (every parallel form of a small model) on
 * shared cores, where spinning threads cost a scheduler slice per barrier. */
void kiln_cli_omp_passive(void);
/* The usage error of a --backend value that names no backend (exit status 2). */
int kiln_cli_unknown_backend(const char *cmd, const char *v);

typedef struct kiln_cli_engine_opts {
  kiln_cli_backend backend;
  int threads;                      /* cpu: kernel threads (0: all cores) */
  bool trace;                       /* interp, opt: print each node as it runs */
  bool verbose;                     /* cpu: compile progress on stderr */
  const kiln_pass_opts *passes;     /* opt, tile, cpu: pass options; NULL: defaults */
  const kiln_compile_opts *compile; /* cpu: compile options; NULL: defaults */
} kiln_cli_engine_opts;

typedef struct kiln_cli_engine kiln_cli_engine;
/* Takes g over and prepares it for o->backend. inputs (one per graph input, or NULL)
 * bind the symbolic dims of the inputs before tile and cpu compile the graph. */
kiln_status kiln_cli_engine_new(kiln_graph *g, const kiln_cli_engine_opts *o,
                                kiln_val *const *inputs, kiln_cli_engine **out);
/* Compiled code needs static input shapes: without inputs to bind them, every symbolic dim
 * of g's inputs must be bound by co->dims (co may be NULL). The error names the option:
 * "input 'x' is f32[seq,3]: give the extent of 'seq' with --dim seq=N". */
kiln_status kiln_cli_check_dims(const kiln_graph *g, const kiln_compile_opts *co);
/* Runs once: inputs borrowed, one new value per graph output. */
kiln_status kiln_cli_engine_run(kiln_cli_engine *e, kiln_val *const *inputs, kiln_val **outputs);
/* The graph that runs (inputs and outputs in the order of the model). */
const kiln_graph *kiln_cli_engine_graph(const kiln_cli_engine *e);
double kiln_cli_engine_prepare_seconds(const kiln_cli_engine *e);
void kiln_cli_engine_report(const kiln_cli_engine *e, kiln_strbuf *out);
/* One line per fallback step (a node that runs its reference kernel), with the reason. */
void kiln_cli_engine_fallbacks(const kiln_cli_engine *e, kiln_strbuf *out);
const kiln_compiled *kiln_cli_engine_compiled(const kiln_cli_engine *e); /* cpu, else NULL */
void kiln_cli_engine_free(kiln_cli_engine *e);

/* ---- compiled artifacts (cmd_compile.c) ----
 * `kiln compile MODEL -o DIR` writes DIR/manifest.txt, DIR/model.onnx, DIR/src, report.txt;
 * `kiln run DIR` reads them back and compiles again (the kernel cache makes it a lookup). */
typedef struct kiln_cli_artifact {
  char dir[4096], model[4200];
  kiln_compile_opts co; /* threads, dims and pass flags of the manifest */
  KILN_VEC(kiln_dim_binding) dims;
  const kiln_target *target; /* of the manifest: a registered target that runs */
  char *text;                /* the manifest (pass flag values point into it) */
} kiln_cli_artifact;
/* Reads DIR/manifest.txt: "KEY VALUE" lines (LF or CRLF; blank lines and "# ..." skipped);
 * every number is checked (threads 1..KILN_CLI_MAX_THREADS, dims 0..KILN_CLI_MAX_DIM), an
 * unknown key, op or a repeated key is an error naming the line. */
kiln_status kiln_cli_artifact_load(const char *dir, kiln_cli_artifact *out);
void kiln_cli_artifact_free(kiln_cli_artifact *a);

/* Writing an artifact: kiln_cli_artifact_check_dest before anything runs, then the folder
 * is written whole with kiln_dir_begin / kiln_dir_commit (base.h). DIR must be new, empty or
 * an artifact (only its own entries), and must not hold the input model itself. */
kiln_status kiln_cli_artifact_check_dest(const char *dir, const char *model_file);

/* Every name of a comma-separated op list (--force-fallback) is an ONNX op Kiln knows. */
kiln_status kiln_cli_check_ops(const char *what, const char *list);
/* Every bound dim names a symbolic dim of g's inputs (a misspelt --dim is not ignored). */
kiln_status kiln_cli_check_dim_names(const kiln_graph *g, const kiln_dim_binding *dims, int n);
#endif
