/* The pass pipeline (without fusion) on real exported models.
 *
 *   model_passes DIR [--expect-removed PASS=N]     (DIR defaults to $KILN_MODELS)
 *
 * For every DIR/<model>/model.onnx with test_data_set_0/ (input_N.pb, output_N.pb), runs
 * the passes one application at a time with the verifier after each, prints how many nodes
 * each pass removed and how long it took, then runs the optimized graph with the reference
 * interpreter and compares with the expected outputs (|got - want| <= 1e-4 + 1e-3 |want|).
 * With --expect-removed, a model also fails when PASS removed fewer than N nodes (checks
 * that a pass fires on a model made for it). Prints "N passed, N failed" (one check per
 * model) and exits 1 on any failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <dirent.h>

#include "onnx/onnx.h"
#include "ops/ops.h"
#include "passes/passes.h"

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static const char *expect_pass; /* --expect-removed PASS=N */
static long expect_removed;

/* Runs the pipeline pass by pass, printing one line per pass. */
static kiln_status run_pipeline(kiln_graph *g, double *total_ms) {
  int n;
  const kiln_pass_info *p = kiln_passes_pipeline(&n);
  kiln_pass_opts o = {.pass_limit = -1};
  *total_ms = 0;
  for (int i = 0; i < n; i++) {
    if (p[i].run == kiln_pass_fusion) break;
    int before = g->nodes.len;
    kiln_pass_ctx ctx = {&o, p[i].name, 0};
    double t0 = 1e3 * kiln_clock_seconds();
    KILN_TRYF(p[i].run(&ctx, g), "pass %s", p[i].name);
    double ms = 1e3 * kiln_clock_seconds() - t0;
    *total_ms += ms;
    KILN_TRYF(kiln_graph_verify(g), "after pass %s", p[i].name);
    printf("    %-10s nodes %5d -> %5d (removed %5d)  changes %5lld  %8.2f ms\n", p[i].name, before,
           g->nodes.len, before - g->nodes.len, (long long)ctx.changes, ms);
    if (expect_pass && !strcmp(expect_pass, p[i].name) && before - g->nodes.len < expect_removed)
      return kiln_error(KILN_ERR_FAILED, "pass %s removed %d nodes, expected at least %ld",
                        p[i].name, before - g->nodes.len, expect_removed);
  }
  return KILN_OK;
}

static bool close_enough(const kiln_tensor *got, const kiln_tensor *want, char *msg, size_t n) {
  if (got->dtype != want->dtype || got->numel != want->numel) {
    snprintf(msg, n, "dtype or size differs");
    return false;
  }
  double worst = 0;
  for (int64_t i = 0; i < got->numel; i++) {
    double a = kiln_load_f64(got->dtype, got->data, (size_t)i);
    double b = kiln_load_f64(want->dtype, want->data, (size_t)i);
    if (isnan(a) && isnan(b)) continue;
    double err = fabs(a - b) - (1e-4 + 1e-3 * fabs(b));
    if (err > 0 || isnan(err)) {
      snprintf(msg, n, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
      return false;
    }
    worst = fabs(a - b) > worst ? fabs(a - b) : worst;
  }
  snprintf(msg, n, "max abs error %.3g", worst);
  return true;
}

static kiln_status read_inputs(const kiln_graph *g, const char *dir, kiln_val **in) {
  for (int i = 0; i < g->inputs.len; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, i);
    KILN_TRYF(kiln_pb_read_value(path, &g->values.data[g->inputs.data[i]].type, &in[i]), "%s",
              path);
  }
  return KILN_OK;
}

static kiln_status compare_outputs(const kiln_graph *g, const char *dir, kiln_val **out) {
  for (int i = 0; i < g->outputs.len; i++) {
    char path[1200], msg[200];
    kiln_tensor *want;
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, i);
    KILN_TRYF(kiln_pb_read_tensor(path, &want), "%s", path);
    bool ok = out[i] && out[i]->t && close_enough(out[i]->t, want, msg, sizeof msg);
    kiln_tensor_free(want);
    if (!ok) return kiln_error(KILN_ERR_FAILED, "output %d: %s", i, out[i] ? msg : "missing");
    printf("    output %d: %s\n", i, msg);
  }
  return KILN_OK;
}

static kiln_status check_model(const char *dir) {
  char path[1100];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  kiln_graph *g;
  KILN_TRY(kiln_onnx_load(path, &g));
  int before = g->nodes.len;
  double ms;
  kiln_status st = run_pipeline(g, &ms);
  if (!st) printf("    pipeline: %d -> %d nodes in %.1f ms\n", before, g->nodes.len, ms);
  int ni = g->inputs.len, no = g->outputs.len;
  kiln_val **in = kiln_xcalloc((size_t)ni + 1, sizeof *in);
  kiln_val **out = kiln_xcalloc((size_t)no + 1, sizeof *out);
  if (!st) st = read_inputs(g, dir, in);
  if (!st) st = kiln_interp_run(g, NULL, ni, in, out);
  if (!st) st = compare_outputs(g, dir, out);
  for (int i = 0; i < ni; i++) kiln_val_free(in[i]);
  for (int i = 0; i < no; i++) kiln_val_free(out[i]);
  free(in);
  free(out);
  kiln_graph_free(g);
  return st;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 && argv[1][0] != '-' ? argv[1] : getenv("KILN_MODELS");
  for (int i = 1; i + 1 < argc; i++) {
    char *eq = strchr(argv[i + 1], '=');
    if (strcmp(argv[i], "--expect-removed") != 0 || !eq) continue;
    *eq = 0;
    expect_pass = argv[i + 1];
    expect_removed = strtol(eq + 1, NULL, 10);
  }
  DIR *d = root ? opendir(root) : NULL;
  if (!d) {
    fprintf(stderr, "usage: model_passes DIR (or set KILN_MODELS): no folder '%s'\n",
            root ? root : "");
    return 2;
  }
  char *names[256];
  int n = 0, passed = 0, failed = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char dir[1000], probe[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    snprintf(probe, sizeof probe, "%s/test_data_set_0", dir);
    if (exists(probe)) {
      printf("%s\n", names[i]);
      kiln_status st = check_model(dir);
      if (st) printf("FAIL %s: %s\n", names[i], kiln_status_message(st));
      st ? failed++ : passed++;
      kiln_status_free(st);
    }
    free(names[i]);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed || !passed ? 1 : 0;
}
