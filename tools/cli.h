/* Shared helpers of the `kiln` subcommands. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdio.h>

#include "kiln.h"

/* Each subcommand: argc/argv start at the subcommand name. Returns the exit status. */
int kiln_cmd_info(int argc, char **argv);
int kiln_cmd_print(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
int kiln_cmd_test_onnx(int argc, char **argv);

/* Prints "kiln CMD: message" for st to stderr, frees it, returns its exit status (1 or 2). */
int kiln_cli_fail(const char *cmd, kiln_status st);
/* Prints a usage error and returns 2. */
int kiln_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True if argv[*i] is "--name" (value in argv[*i+1]) or "--name=value"; sets *value and
 * advances *i past the value. A missing value is reported through *value == NULL. */
int kiln_cli_opt(int argc, char **argv, int *i, const char *name, const char **value);
/* Parses a double/int option value, 0 on success. */
int kiln_cli_double(const char *s, double *out);
int kiln_cli_int(const char *s, long *out);
/* Loads a model (.onnx, or the text IR if the name ends in .kiln) and infers types. */
kiln_status kiln_cli_load(const char *path, kiln_graph **out);

/* Comparison of a result against an expected value: |a-e| <= atol + rtol*|e|
 * elementwise for floats, exact for integers, bools and strings; NaN matches NaN.
 * On mismatch, writes a description to msg. */
bool kiln_cli_compare(const kiln_val *got, const kiln_val *want, double rtol, double atol,
                      char *msg, size_t msg_len);

#endif
