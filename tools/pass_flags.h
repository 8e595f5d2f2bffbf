/* The pass manager's command-line flags, shared by `kiln print` and `kiln compile`. */
#ifndef KILN_TOOLS_PASS_FLAGS_H
#define KILN_TOOLS_PASS_FLAGS_H

#include "passes/passes.h"

/* Lines for a --help text, one flag per line, indented by two spaces. */
extern const char *const kiln_cli_pass_flags_help;

/* If arg is a pass flag (--print-after=PASS|all, --time-passes, --disable-pass=NAME[,NAME],
 * --pass-limit=N, --verify-each), stores it in *o and returns true; a bad value (unknown
 * pass, bad number) sets *err to a KILN_ERR_INVALID status. Returns false for any other
 * argument. Strings in *o point into arg. */
bool kiln_cli_pass_flag(const char *arg, kiln_pass_opts *o, kiln_status *err);

#endif
