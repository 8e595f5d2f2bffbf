/* C code generation: kernels built with the tile IR builders are emitted as C, compiled
 * with the system compiler into a shared object, run, and compared bit for bit with the
 * tile interpreter (NaNs compare equal to NaNs). Skips the compiled part when no C compiler
 * works. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "harness.h"

/* ---- compiling and loading ---- */
typedef void (*kernel_fn)(void *const *args);

typedef struct built {
  void *so;
  char dir[512];
} built;

static int cc_state; /* 0 unknown, 1 works, -1 absent */
static bool have_openmp;

static const char *tmpdir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

static bool run_cmd(const char *cmd) {
  return system(cmd) == 0;
}

static bool cc_works(void) {
  if (cc_state) return cc_state > 0;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cc --version >/dev/null 2>&1");
  cc_state = run_cmd(cmd) ? 1 : -1;
  if (cc_state > 0) {
    snprintf(cmd, sizeof cmd,
             "echo 'int main(void){return 0;}' | cc -fopenmp -x c - -o %s/kiln_cg_omp_probe "
             ">/dev/null 2>&1",
             tmpdir());
    have_openmp = run_cmd(cmd);
  } else {
    fprintf(stderr, "test_codegen: no working C compiler: compiled checks skipped\n");
  }
  return cc_state > 0;
}

/* Compiles src into a shared object and opens it; false (and a CHECK failure) if not. */
static bool build(const char *src, const char *extra, built *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->dir, sizeof out->dir, "%s/kiln_cg_XXXXXX", tmpdir());
  if (!mkdtemp(out->dir)) {
    CHECK(!"mkdtemp");
    return false;
  }
  char path[600], cmd[2048];
  snprintf(path, sizeof path, "%s/k.c", out->dir);
  CHECK_OK(kiln_write_file(path, src, strlen(src)));
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -O2 -march=native -fPIC -shared %s %s %s -Wall -Werror "
           "-Wno-unused-function -Wno-unknown-pragmas %s/k.c -o %s/k.so -lm 2>%s/log",
           KILN_CODEGEN_C_FLAGS, have_openmp ? "-fopenmp" : "", extra ? extra : "", out->dir,
           out->dir, out->dir);
  if (!run_cmd(cmd)) {
    char log[700];
    snprintf(log, sizeof log, "%s/log", out->dir);
    char *text = NULL;
    size_t n = 0;
    if (!kiln_read_file(log, &text, &n)) fprintf(stderr, "cc failed:\n%.3000s\n", text);
    free(text);
    fprintf(stderr, "source kept in %s/k.c\n", out->dir);
    CHECK(!"C compilation failed");
    return false;
  }
  snprintf(path, sizeof path, "%s/k.so", out->dir);
  out->so = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  CHECK(out->so != NULL);
  return out->so != NULL;
}

static void unbuild(built *b) {
  char cmd[700];
  if (b->so) dlclose(b->so);
  if (getenv("KILN_KEEP")) return;
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->dir);
  run_cmd(cmd);
}

static kernel_fn lookup(built *b, const char *name) {
  kernel_fn f;
  void *p = dlsym(b->so, name);
  CHECK(p != NULL);
  memcpy(&f, &p, sizeof f);
  return f;
}

/* ---- comparing ---- */
static bool same_elem(kiln_dtype t, const unsigned char *a, const unsigned char *b) {
  size_t n = kiln_dtype_size(t);
  if (!memcmp(a, b, n)) return true;
  if (t == KILN_F32) {
    float x, y;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
    return isnan(x) && isnan(y);
  }
  if (t == KILN_F64) {
    double x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    return isnan(x) && isnan(y);
  }
  if (kiln_dtype_is_float(t)) {
    double x = kiln_load_f64(t, a, 0), y = kiln_load_f64(t, b, 0);
    return isnan(x) && isnan(y);
  }
  return false;
}

/* Counts differing elements of parameter p; prints the first few. */
static int compare_param(const kiln_tkernel *k, int p, const void *want, const void *got) {
  const kiln_tbuf *b = &k->bufs.data[p];
  size_t es = kiln_dtype_size(b->dtype);
  int bad = 0;
  for (int64_t i = 0; i < b->size; i++) {
    const unsigned char *x = (const unsigned char *)want + i * es;
    const unsigned char *y = (const unsigned char *)got + i * es;
    if (same_elem(b->dtype, x, y)) continue;
    if (bad++ < 4)
      fprintf(stderr, "  %s: %s[%lld]: interp %.17g, compiled %.17g\n", k->name, b->name,
              (long long)i, kiln_load_f64(b->dtype, x, 0), kiln_load_f64(b->dtype, y, 0));
  }
  return bad;
}

/* Runs k with the interpreter and compiled (from its own module's C), on copies of the
 * same inputs; returns the number of differing elements. */
static int run_both_in(const kiln_tkernel *k, void **inputs, built *so) {
  int n = k->n_params, bad = 0;
  void **a = kiln_xcalloc((size_t)n, sizeof(void *)), **b = kiln_xcalloc((size_t)n, sizeof(void *));
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)k->bufs.data[i].size * kiln_dtype_size(k->bufs.data[i].dtype);
    a[i] = kiln_xmalloc(bytes + 1), b[i] = kiln_xmalloc(bytes + 1);
    memcpy(a[i], inputs[i], bytes), memcpy(b[i], inputs[i], bytes);
  }
  kiln_status st = kiln_tkernel_interp(k, a);
  CHECK_OK(st == KILN_OK ? KILN_OK : st);
  kernel_fn f = lookup(so, k->name);
  if (f) f(b);
  for (int i = 0; i < n; i++) bad += compare_param(k, i, a[i], b[i]);
  for (int i = 0; i < n; i++) free(a[i]), free(b[i]);
  free(a), free(b);
  return bad;
}

static void fill_random(kiln_dtype t, void *p, int64_t n, uint64_t *seed) {
  unsigned char *q = p;
  size_t es = kiln_dtype_size(t);
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = *seed >> 11;
    if (t == KILN_F32) {
      float f = (float)((double)(r % 2000001) / 1000.0 - 1000.0) / 37.0f;
      memcpy(q + i * es, &f, 4);
    } else if (t == KILN_F64) {
      double d = ((double)(r % 2000001) / 1000.0 - 1000.0) / 37.0;
      memcpy(q + i * es, &d, 8);
    } else if (t == KILN_BOOL) {
      q[i] = r & 1;
    } else {
      memcpy(q + i * es, &r, es);
    }
  }
}

/* Emits k's module, compiles it, runs k on random inputs (or the given ones) and compares. */
static void check_kernel_inputs(kiln_tkernel *k, void **inputs) {
  CHECK_OK(kiln_tkernel_verify(k));
  kiln_codegen_opts o = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_c_module(k->module, &o, &src));
  if (!src.data || !cc_works()) {
    kiln_strbuf_free(&src);
    return;
  }
  built so;
  if (build(src.data, NULL, &so)) {
    int bad = run_both_in(k, inputs, &so);
    if (bad) fprintf(stderr, "%s: %d elements differ\n%s\n", k->name, bad, src.data);
    CHECK(bad == 0);
  }
  unbuild(&so);
  kiln_strbuf_free(&src);
}

static void check_kernel(kiln_tkernel *k, uint64_t seed) {
  void **in = kiln_xcalloc((size_t)k->n_params + 1, sizeof(void *));
  for (int i = 0; i < k->n_params; i++) {
    const kiln_tbuf *b = &k->bufs.data[i];
    in[i] = kiln_xcalloc((size_t)b->size + 1, kiln_dtype_size(b->dtype));
    fill_random(b->dtype, in[i], b->size, &seed);
  }
  check_kernel_inputs(k, in);
  for (int i = 0; i < k->n_params; i++) free(in[i]);
  free(in);
}

/* ---- kernels ---- */
static kiln_texpr *ld(kiln_tkernel *k, int buf, int var) {
  return kiln_tload(k, buf, kiln_tv(k, var));
}

static void test_add1_parallel(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "add1");
  k->origin = "add_1, relu */ 2";
  int x = kiln_tkernel_param(k, "x", KILN_F32, 1000);
  int y = kiln_tkernel_param(k, "y", KILN_F32, 1000);
  int i = kiln_tkernel_var(k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, 1000), KILN_LOOP_PARALLEL);
  kiln_tblock_push(
      k, &loop->body,
      kiln_tstore(k, y, kiln_tv(k, i),
                  kiln_tbin(k, KILN_TOP_ADD, ld(k, x, i), kiln_tfloat(k, KILN_F32, 0.1))));
  kiln_tblock_push(k, &k->body, loop);
  check_kernel(k, 1);
  kiln_strbuf src = {0};
  kiln_codegen_opts o = kiln_codegen_opts_default();
  o.prefix = "my_";
  CHECK_OK(kiln_codegen_c_kernel(k, &o, &src));
  CHECK(strstr(src.data, "void my_add1(void *const *args)") != NULL);
  CHECK(strstr(src.data, "add_1, relu * / 2") != NULL); /* the comment stays closed */
  CHECK(strstr(src.data, "#pragma omp parallel for") != NULL);
  CHECK(strstr(src.data, "0x1.99999ap-4f") != NULL); /* exact float constant */
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

TEST_MAIN(T(test_add1_parallel))
