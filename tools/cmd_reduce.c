/* kiln reduce CASE_DIR: delta-debugs a failing case to a small one that fails the same way
 * (src/verify/reduce*.c). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "verify/reduce/reduce.h"

static const char *const reduce_help =
    "usage: kiln reduce CASE_DIR [--out DIR] [--max-tests N] [--time T] [--exact-signature]\n"
    "                   [-q]\n\n"
    "CASE_DIR is a failing case written by `kiln verify --repro` or `kiln fuzz` (model.onnx,\n"
    "input_<i>.pb, case.txt with the signature layer|pass|op kinds). The reducer keeps an\n"
    "edit only when `kiln verify` on the edited case still fails the same way: the same\n"
    "layer kind and pass, at a node or kernel whose op kinds are among the recorded ones\n"
    "(so that ops fused into the failing kernel can go too), or with --exact-signature\n"
    "the recorded signature itself. It drops graph outputs, deletes nodes (their values\n"
    "become inputs holding their reference data, or readers read an input of the same type\n"
    "instead), turns inputs into constants, shrinks dims of inputs and constants, removes or\n"
    "simplifies attributes, and replaces input data with zeros, ones or small integers,\n"
    "until no edit applies. Each candidate is first checked to be a valid graph that the\n"
    "reference interpreter runs (with no NaN, infinity or unstable element in the reference\n"
    "when the original case had none).\n"
    "It writes the reduced case (model.onnx, model.kiln, inputs, case.txt), prints the sizes\n"
    "before and after, and the command that replays it.\n\n"
    "options:\n"
    "  --out DIR        where to write the reduced case (default CASE_DIR/reduced)\n"
    "  --max-tests N    run the verifier at most N times (default 2000)\n"
    "  --time T         stop after T seconds with the smallest case so far (default 600)\n"
    "  --exact-signature  keep only candidates that fail with the recorded signature\n"
    "  -q               no progress lines on stderr\n\n"
    "Exit status: 0 reduced (the reduced case fails the same way), 1 the case does not fail\n"
    "(or not with its recorded signature) or the reducer failed, 2 bad usage or an invalid case.\n";

typedef struct reduce_args {
  const char *dir, *out;
  kiln_reduce_opts o;
  bool quiet;
} reduce_args;

/* Parses the arguments; -1 after --help, else an exit status (0 to go on). */
static int parse_args(int argc, char **argv, reduce_args *a) {
  kiln_reduce_opts_init(&a->o);
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int mrc;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(reduce_help, stdout);
      fputs(kiln_cli_memory_help, stdout);
      return -1;
    }
    if (!strcmp(argv[i], "-q")) {
      a->quiet = true;
    } else if (!strcmp(argv[i], "--exact-signature")) {
      a->o.exact_signature = true;
    } else if (kiln_cli_opt(argc, argv, &i, "--out", &v)) {
      if (!v || !v[0]) return kiln_cli_usage("reduce", "--out needs a directory");
      a->out = v;
    } else if (kiln_cli_opt(argc, argv, &i, "--max-tests", &v)) {
      if (kiln_cli_int("reduce", "--max-tests", v, 1, 100000000, &a->o.max_tests)) return 2;
    } else if (kiln_cli_opt(argc, argv, &i, "--time", &v)) {
      if (kiln_cli_f64("reduce", "--time", v, 1e-3, 1e9, &a->o.max_seconds)) return 2;
    } else if (kiln_cli_max_memory("reduce", argc, argv, &i, &mrc)) {
      if (mrc > 0) return mrc;
    } else if (argv[i][0] == '-') {
      return kiln_cli_usage("reduce", "unknown option '%s'", argv[i]);
    } else if (a->dir) {
      return kiln_cli_usage("reduce", "more than one case given");
    } else {
      a->dir = argv[i];
    }
  }
  if (!a->dir) return kiln_cli_usage("reduce", "no case directory given");
  return 0;
}

/* The "command: " line of the written case.txt, or a plain replay command. */
static void replay_command(const char *dir, char *out, size_t len) {
  char path[4200], *text = NULL;
  size_t n = 0;
  snprintf(out, len, "kiln verify %s", dir);
  snprintf(path, sizeof path, "%s/case.txt", dir);
  kiln_status st = kiln_read_file(path, &text, &n);
  kiln_status_free(st);
  char c[1400] = "";
  if (text) kiln_verify_case_field(text, "command", c, sizeof c);
  if (c[0]) snprintf(out, len, "%s", c);
  free(text);
}

int kiln_cmd_reduce(int argc, char **argv) {
  reduce_args a;
  memset(&a, 0, sizeof a);
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc < 0 ? 0 : rc;
  char out[4200];
  snprintf(out, sizeof out, "%s/reduced", a.dir);
  if (a.out) snprintf(out, sizeof out, "%s", a.out);
  a.o.log = a.quiet ? NULL : stderr;
  kiln_reduce_result r;
  /* --out never replaces the case being reduced nor a folder of other files */
  kiln_status st = kiln_verify_check_case_dest(out, a.dir);
  if (!st) st = kiln_reduce_case(a.dir, out, NULL, &a.o, &r);
  if (st) return kiln_cli_fail("reduce", st);
  if (!r.reproduced) {
    printf("kiln reduce: %s does not fail (not with its recorded signature): nothing to reduce\n",
           a.dir);
    kiln_reduce_result_free(&r);
    return 1;
  }
  char sizes[200], cmd[4400];
  kiln_reduce_size_str(&r.before, &r.after, sizes, sizeof sizes);
  replay_command(out, cmd, sizeof cmd);
  printf("reduced: %s\n", sizes);
  printf("tests: %d (%d edits kept) in %.1f s%s\n", r.tests, r.kept, r.seconds,
         r.stopped ? "; stopped by --max-tests/--time" : "");
  printf("written: %s\n", out);
  printf("replay: %s\n", cmd);
  kiln_reduce_result_free(&r);
  return 0;
}
