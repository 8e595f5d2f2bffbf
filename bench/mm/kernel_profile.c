/* Per-kernel profile of a compiled model: where the time goes.
 *
 * Runs the pass pipeline and the lowering on MODEL, emits the module as C (symbol names =
 * kernel names), builds it with the system compiler, then times every kernel on buffers of
 * its parameter sizes (inputs filled with small values) and prints the kernels sorted by
 * time with their share of the total. Fallback steps are listed, not timed.
 *
 *   built as build/kernel_profile (cmake target kernel_profile):
 *   build/kernel_profile build/models/resnet50/model.onnx [threads] [iters]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "passes/passes.h"

typedef void (*kernel_fn)(void *const *args);

typedef struct row {
  const char *name, *origin;
  double ms;
} row;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int by_time(const void *a, const void *b) {
  double x = ((const row *)a)->ms, y = ((const row *)b)->ms;
  return x < y ? 1 : x > y ? -1 : 0;
}

static kiln_status build(const kiln_program *p, int threads, void **out) {
  kiln_codegen_opts o = kiln_codegen_opts_default();
  o.threads = threads;
  kiln_strbuf src = {0};
  KILN_TRY(kiln_codegen_c_module(p->module, &o, &src));
  const char *tmp = getenv("TMPDIR");
  char dir[400], cpath[512], so[512], cmd[1600];
  snprintf(dir, sizeof dir, "%s/kprof_XXXXXX", tmp && *tmp ? tmp : "/tmp"); /* mkdtemp template */
  if (!mkdtemp(dir)) return kiln_error(KILN_ERR_IO, "mkdtemp %s failed", dir);
  snprintf(cpath, sizeof cpath, "%s/k.c", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  KILN_TRY(kiln_write_file(cpath, src.data, src.len));
  kiln_strbuf_free(&src);
  snprintf(cmd, sizeof cmd, "cc %s -O2 -march=native -fPIC -shared -fopenmp %s -o %s -lm",
           KILN_CODEGEN_C_FLAGS, cpath, so);
  if (system(cmd) != 0) return kiln_error(KILN_ERR_FAILED, "cc failed: %s", cmd);
  *out = dlopen(so, RTLD_NOW);
  if (!*out) return kiln_error(KILN_ERR_FAILED, "dlopen: %s", dlerror());
  return KILN_OK;
}

static double time_kernel(const kiln_tkernel *k, kernel_fn fn, int iters) {
  void *args[64] = {0};
  for (int i = 0; i < k->n_params && i < 64; i++) {
    size_t n = (size_t)k->bufs.data[i].size * kiln_dtype_size(k->bufs.data[i].dtype) + 64;
    args[i] = aligned_alloc(64, (n + 63) / 64 * 64);
    memset(args[i], 0, n);
    if (k->bufs.data[i].dtype == KILN_F32)
      for (int64_t j = 0; j < k->bufs.data[i].size; j++)
        ((float *)args[i])[j] = 0.001f * (float)(j % 13);
  }
  fn(args);
  double best = 1e30;
  for (int r = 0; r < iters; r++) {
    double t = now_ms();
    fn(args);
    t = now_ms() - t;
    if (t < best) best = t;
  }
  for (int i = 0; i < k->n_params && i < 64; i++) free(args[i]);
  return best;
}

static kiln_status run(const char *path, int threads, int iters) {
  kiln_graph *g;
  KILN_TRY(kiln_onnx_load(path, &g));
  KILN_TRY(kiln_ops_infer_graph(g));
  kiln_pass_opts po = {0};
  po.pass_limit = -1;
  KILN_TRY(kiln_passes_run(g, &po, NULL));
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = threads};
  kiln_program *p;
  KILN_TRY(kiln_lower(g, &lo, &p));
  void *so;
  KILN_TRY(build(p, threads, &so));
  int n = p->module->kernels.len;
  row *rows = calloc((size_t)n + 1, sizeof *rows);
  double total = 0;
  for (int i = 0; i < n; i++) {
    const kiln_tkernel *k = p->module->kernels.data[i];
    kernel_fn fn = (kernel_fn)dlsym(so, k->name);
    if (!fn) return kiln_error(KILN_ERR_FAILED, "no symbol %s", k->name);
    rows[i] = (row){k->name, k->origin, time_kernel(k, fn, iters)};
    total += rows[i].ms;
  }
  qsort(rows, (size_t)n, sizeof *rows, by_time);
  printf("%d kernels, %d fallbacks, sum of best kernel times %.3f ms (%d threads)\n", n,
         p->n_fallback, total, threads);
  for (int i = 0; i < n; i++)
    printf("%8.3f ms %5.1f%%  %-14s %.70s\n", rows[i].ms, 100 * rows[i].ms / total, rows[i].name,
           rows[i].origin);
  for (int i = 0; i < p->steps.len; i++)
    if (p->steps.data[i].kind == KILN_STEP_FALLBACK)
      printf("fallback: node %d: %s\n", p->steps.data[i].node, p->steps.data[i].reason);
  free(rows);
  kiln_program_free(p);
  kiln_graph_free(g);
  return KILN_OK;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: kernel_profile MODEL.onnx [threads] [iters]\n");
    return 2;
  }
  kiln_status st = run(argv[1], argc > 2 ? atoi(argv[2]) : 2, argc > 3 ? atoi(argv[3]) : 10);
  if (st) {
    fprintf(stderr, "error: %s\n", kiln_status_message(st));
    return 1;
  }
  return 0;
}
