/* The layer "cpu (standalone C)" of kiln verify (opts.standalone, runner_standalone.c): the
 * program `kiln compile --emit-c` writes, built with the C compiler and run on the inputs.
 * A correct program passes and the replay command carries --standalone; a program whose
 * output copies are broken (a C compiler wrapper that includes a header turning memcpy into
 * memset when it builds model.c, standing in for a bug of the standalone emitter) fails that
 * layer alone and names it; a graph with a step left to a reference kernel skips it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "verify/verify.h"

static char g_tmp[1024];
static int g_par; /* opts.par_threads of run() */

static const char *MODEL = "graph @sa(%x: f32[3,3]) -> (%y: f32[3,4], %s: f32[3,4]) {\n"
                           "  opset \"\" 17\n"
                           "  %w = const f32[3,4] [0.5, -1, 0.25, 2, 1.5, 0.75, -0.5, 1, -2, "
                           "0.125, 1, -0.25]\n"
                           "  %b = const f32[4] [0.1, -0.2, 0.3, -0.4]\n"
                           "  %m = MatMul(%x, %w) : f32[3,4]\n"
                           "  %a = Add(%m, %b) : f32[3,4]\n"
                           "  %y = Relu(%a) : f32[3,4]\n"
                           "  %e = Exp(%m) : f32[3,4]\n"
                           "  %s = Neg(%e) : f32[3,4]\n"
                           "  return %y, %s\n"
                           "}\n";

static const kiln_layer_result *standalone_layer(const kiln_verify_result *r) {
  for (int i = 0; i < r->layers.len; i++)
    if (!strcmp(r->layers.data[i].name, "cpu (standalone C)")) return &r->layers.data[i];
  return NULL;
}

static kiln_verify_result run(const char *cc, const char *fallback) {
  kiln_verify_result r;
  memset(&r, 0, sizeof r);
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(MODEL, "test", &g));
  if (!g) return r;
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_tensor *t;
  if (kiln_tensor_new(KILN_F32, 2, (int64_t[]){3, 3}, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)(i % 5 - 2) / 4.0f;
  kiln_val *in = kiln_val_tensor(t);
  kiln_verify_opts o;
  kiln_verify_opts_init(&o);
  o.compile.cache_dir = g_tmp;
  o.compile.cc = cc;
  o.compile.force_fallback = fallback;
  o.standalone = true;
  o.par_threads = g_par;
  CHECK_OK(kiln_verify_run(g, 1, &in, &o, &r));
  kiln_val_free(in);
  kiln_graph_free(g);
  return r;
}

static void test_standalone_passes(void) {
  kiln_verify_result r = run(NULL, NULL);
  const kiln_layer_result *l = standalone_layer(&r);
  CHECK(l && l->ran && l->ok && !r.failed && r.standalone);
  char cmd[1200];
  CHECK(strstr(kiln_verify_replay_command("case", &r, cmd, sizeof cmd), " --standalone"));
  kiln_verify_result_free(&r);
}

static void test_broken_program_fails(void) {
  char hdr[1200], wrap[1200];
  snprintf(hdr, sizeof hdr, "%s/fault.h", g_tmp);
  snprintf(wrap, sizeof wrap, "%s/cc-wrap.sh", g_tmp);
  FILE *f = fopen(hdr, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs("#include <string.h>\n#define memcpy(d, s, n) memset((d), 0, (n))\n", f);
  fclose(f);
  f = fopen(wrap, "w");
  CHECK(f != NULL);
  if (!f) return;
  fprintf(f,
          "#!/bin/sh\n"
          "for a in \"$@\"; do\n"
          "  if [ \"$a\" = model.c ]; then exec cc -include '%s' \"$@\"; fi\n"
          "done\n"
          "exec cc \"$@\"\n",
          hdr);
  fclose(f);
  chmod(wrap, 0755);
  kiln_verify_result r = run(wrap, NULL);
  const kiln_layer_result *l = standalone_layer(&r);
  CHECK(l && l->ran && !l->ok && r.failed);
  CHECK(r.first_failing >= 0 && l == &r.layers.data[r.first_failing]); /* the cpu layer passed */
  CHECK(strstr(r.where, "standalone C"));
  if (l && l->ok) fprintf(stderr, "the broken standalone program passed\n");
  kiln_verify_result_free(&r);
}

/* skipped, one row even with a second cpu layer (par_threads) */
static void test_fallback_skips(void) {
  g_par = 2;
  kiln_verify_result r = run(NULL, "Exp");
  g_par = 0;
  const kiln_layer_result *l = standalone_layer(&r);
  CHECK(l && !l->ran && strstr(l->msg, "reference kernel") && !r.failed && !r.standalone);
  int rows = 0;
  for (int i = 0; i < r.layers.len; i++)
    rows += !strcmp(r.layers.data[i].name, "cpu (standalone C)");
  CHECK(rows == 1);
  kiln_verify_result_free(&r);
}

static void setup(void) {
  kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_verify_standalone");
}

static void cleanup(void) {
  kiln_test_remove_dir(g_tmp);
}

TEST_MAIN(T(setup), T(test_standalone_passes), T(test_broken_program_fails), T(test_fallback_skips),
          T(cleanup))
