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
#include "lower/gpu.h"
#include "tile/tile_sched.h"

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
static bool build_cc(const char *cc, const char *src, const char *extra, built *out) {
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
           "%s -std=c11 -O2 -march=native -fPIC -shared %s %s %s -Wall -Werror "
           "-Wno-unused-function -Wno-unknown-pragmas %s/k.c -o %s/k.so -lm 2>%s/log",
           cc, KILN_CODEGEN_C_FLAGS, have_openmp ? "-fopenmp" : "", extra ? extra : "", out->dir,
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

static bool build(const char *src, const char *extra, built *out) {
  return build_cc("cc", src, extra, out);
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
  CHECK(strstr(src.data, "add_1, relu \\x2A/ 2") != NULL); /* the comment stays closed */
  CHECK(strstr(src.data, "#pragma omp parallel for") != NULL);
  CHECK(strstr(src.data, "0x1.99999ap-4f") != NULL); /* exact float constant */
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

/* Compiles the whole module once and checks every kernel on random inputs. */
typedef void (*fill_fn)(const kiln_tkernel *k, void **in);

static void check_module_with(kiln_tmodule *m, uint64_t seed, fill_fn fill,
                              const kiln_codegen_opts *o, const char *flags) {
  CHECK_OK(kiln_tmodule_verify(m));
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_c_module(m, o, &src));
  if (!src.data || !cc_works()) {
    kiln_strbuf_free(&src);
    return;
  }
  built so;
  if (build(src.data, flags, &so)) {
    for (int i = 0; i < m->kernels.len; i++) {
      kiln_tkernel *k = m->kernels.data[i];
      void **in = kiln_xcalloc((size_t)k->n_params + 1, sizeof(void *));
      for (int j = 0; j < k->n_params; j++) {
        const kiln_tbuf *b = &k->bufs.data[j];
        in[j] = kiln_xcalloc((size_t)b->size + 1, kiln_dtype_size(b->dtype));
        fill_random(b->dtype, in[j], b->size, &seed);
      }
      if (fill) fill(k, in);
      int bad = run_both_in(k, in, &so);
      if (bad) fprintf(stderr, "kernel %s: %d elements differ\n", k->name, bad);
      CHECK(bad == 0);
      for (int j = 0; j < k->n_params; j++) free(in[j]);
      free(in);
    }
  }
  unbuild(&so);
  kiln_strbuf_free(&src);
}

static void check_module(kiln_tmodule *m, uint64_t seed, fill_fn fill) {
  kiln_codegen_opts o = kiln_codegen_opts_default();
  check_module_with(m, seed, fill, &o, NULL);
}

/* F16 and BF16 get random bit patterns: every class of value, NaN and Inf included */
static const kiln_dtype arith_types[] = {KILN_I8,  KILN_I16, KILN_I32, KILN_I64,
                                         KILN_U8,  KILN_U16, KILN_U32, KILN_U64,
                                         KILN_F32, KILN_F64, KILN_F16, KILN_BF16};
#define N_ARITH ((int)(sizeof arith_types / sizeof arith_types[0]))
#define LEN 203

static kiln_loop_kind kind_of(int i) {
  static const kiln_loop_kind kinds[] = {KILN_LOOP_SERIAL, KILN_LOOP_PARALLEL, KILN_LOOP_VECTOR,
                                         KILN_LOOP_UNROLL};
  return kinds[i % 4];
}

/* y[i] = op(a[i], b[i]) (binary) or op(a[i]) (unary), with the divisor and shift count
 * guarded so the interpreter has no undefined case. */
static void op_kernel(kiln_tmodule *m, kiln_top op, kiln_dtype t, int n) {
  char name[64];
  snprintf(name, sizeof name, "%s_%s", kiln_top_name(op), kiln_dtype_name(t));
  kiln_tkernel *k = kiln_tkernel_new(m, name);
  int arity = kiln_top_arity(op);
  int a = kiln_tkernel_param(k, "a", t, LEN);
  int b = kiln_tkernel_param(k, "b", t, LEN);
  kiln_dtype rt = op == KILN_TOP_SELECT ? t : kiln_top_result(op, t);
  int y = kiln_tkernel_param(k, "y", rt, LEN);
  int i = kiln_tkernel_var(k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, LEN), kind_of(n));
  kiln_texpr *x = ld(k, a, i), *z = ld(k, b, i), *e;
  bool is_int = !kiln_dtype_is_float(t);
  if (is_int && (op == KILN_TOP_DIV || op == KILN_TOP_MOD))
    z = kiln_tselect(k, kiln_tbin(k, KILN_TOP_EQ, z, kiln_tconst_int(k, t, 0)),
                     kiln_tconst_int(k, t, 7), z);
  if (op == KILN_TOP_SHL || op == KILN_TOP_SHR)
    z = kiln_tbin(k, KILN_TOP_AND, z, kiln_tconst_int(k, t, 2 * kiln_dtype_bits(t) - 1));
  if (op == KILN_TOP_SELECT) e = kiln_tselect(k, kiln_tbin(k, KILN_TOP_LT, x, z), x, z);
  else e = arity == 1 ? kiln_tun(k, op, x) : kiln_tbin(k, op, x, z);
  kiln_tblock_push(k, &loop->body, kiln_tstore(k, y, kiln_tv(k, i), e));
  kiln_tblock_push(k, &k->body, loop);
}

static bool op_applies(kiln_top op, kiln_dtype t) {
  char c = kiln_top_class(op);
  bool fl = kiln_dtype_is_float(t);
  if (c == 'l' || c == 'm') return false; /* MAC: test_mac */
  if (c == 'i') return !fl;
  if (c == 'f') return fl;
  if (op == KILN_TOP_ISNAN || op == KILN_TOP_ISINF) return fl;
  return true;
}

static void test_ops(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  int n = 0;
  for (int ti = 0; ti < N_ARITH; ti++)
    for (int op = 0; op < KILN_TOP_COUNT; op++)
      if (op_applies((kiln_top)op, arith_types[ti]))
        op_kernel(m, (kiln_top)op, arith_types[ti], n++);
  /* logical operators on BOOL */
  kiln_top bool_ops[] = {KILN_TOP_NOT, KILN_TOP_AND, KILN_TOP_OR,    KILN_TOP_XOR,
                         KILN_TOP_EQ,  KILN_TOP_NE,  KILN_TOP_SELECT};
  for (size_t i = 0; i < sizeof bool_ops / sizeof bool_ops[0]; i++)
    op_kernel(m, bool_ops[i], KILN_BOOL, n++);
  CHECK(m->kernels.len > 250);
  check_module(m, 7, NULL);
  kiln_tmodule_free(m);
}

/* ---- casts ---- */
static const kiln_dtype cast_types[] = {
    KILN_BOOL,       KILN_I8,     KILN_I16,        KILN_I32, KILN_I64, KILN_U8,   KILN_U16,
    KILN_U32,        KILN_U64,    KILN_F32,        KILN_F64, KILN_F16, KILN_BF16, KILN_F8E4M3FN,
    KILN_F8E4M3FNUZ, KILN_F8E5M2, KILN_F8E5M2FNUZ, KILN_I4,  KILN_U4,  KILN_I2,   KILN_U2};
#define N_CAST ((int)(sizeof cast_types / sizeof cast_types[0]))

static bool is_intlike(kiln_dtype t) {
  return !kiln_dtype_is_float(t);
}

/* Float sources cast to integers get values in the target's range (else the interpreter
 * reports the undefined case); sub-byte sources get valid codes. */
static void fill_cast(const kiln_tkernel *k, void **in) {
  kiln_dtype from = k->bufs.data[0].dtype, to = k->bufs.data[1].dtype;
  uint64_t seed = (uint64_t)from * 131 + (uint64_t)to;
  for (int64_t i = 0; i < LEN; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(seed >> 11) / 9007199254740992.0; /* [0, 1) */
    if (from == KILN_I4 || from == KILN_U4 || from == KILN_I2 || from == KILN_U2)
      ((uint8_t *)in[0])[i] =
          (uint8_t)(seed >> 40) & (from == KILN_I4 || from == KILN_U4 ? 0xF : 0x3);
    if (!kiln_dtype_is_float(from) || !is_intlike(to) || to == KILN_BOOL) continue;
    double lo = 0, hi;
    int bits = to == KILN_I4 || to == KILN_U4   ? 4
               : to == KILN_I2 || to == KILN_U2 ? 2
                                                : kiln_dtype_bits(to);
    bool sgn = kiln_dtype_class_of(to) == KILN_CLASS_SINT;
    hi = ldexp(1, sgn ? bits - 1 : bits);
    if (sgn) lo = -hi;
    if (hi > 1e6) lo = lo < 0 ? -1e6 : 0, hi = 1e6; /* keep it representable and varied */
    kiln_store_f64(from, in[0], (size_t)i, lo + (hi - lo) * u);
    double back = kiln_load_f64(from, in[0], (size_t)i);
    if (!(trunc(back) >= lo && trunc(back) < hi)) kiln_store_f64(from, in[0], (size_t)i, 0.5);
  }
}

static void test_casts(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  for (int a = 0; a < N_CAST; a++) {
    for (int b = 0; b < N_CAST; b++) {
      if (a == b) continue;
      char name[64];
      snprintf(name, sizeof name, "cast_%s_%s", kiln_dtype_name(cast_types[a]),
               kiln_dtype_name(cast_types[b]));
      kiln_tkernel *k = kiln_tkernel_new(m, name);
      int x = kiln_tkernel_param(k, "x", cast_types[a], LEN);
      int y = kiln_tkernel_param(k, "y", cast_types[b], LEN);
      int i = kiln_tkernel_var(k, "i", KILN_I64);
      kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, LEN), kind_of(a + b));
      kiln_tblock_push(k, &loop->body,
                       kiln_tstore(k, y, kiln_tv(k, i), kiln_tcast(k, cast_types[b], ld(k, x, i))));
      kiln_tblock_push(k, &k->body, loop);
    }
  }
  check_module(m, 11, fill_cast);
  kiln_tmodule_free(m);
}

/* ---- loops, variables, local buffers, conditionals ---- */
static kiln_texpr *at2(kiln_tkernel *k, int i, int64_t stride, int j) {
  return kiln_tadd(k, kiln_tmul(k, kiln_tv(k, i), stride), kiln_tv(k, j));
}

/* y[i] = sum_j x[i][j] in a parallel loop: the accumulator is private to each thread;
 * a second parallel loop reuses the same accumulator; a variable set outside is read
 * inside. */
static void reduce_kernel(kiln_tmodule *m) {
  kiln_tkernel *k = kiln_tkernel_new(m, "row_sums");
  int x = kiln_tkernel_param(k, "x", KILN_F32, 64 * 37);
  int y = kiln_tkernel_param(k, "y", KILN_F32, 64);
  int z = kiln_tkernel_param(k, "z", KILN_F32, 64);
  int i = kiln_tkernel_var(k, "i", KILN_I64), j = kiln_tkernel_var(k, "j", KILN_I64);
  int acc = kiln_tkernel_var(k, "acc", KILN_F32), sc = kiln_tkernel_var(k, "scale", KILN_F32);
  kiln_tblock_push(k, &k->body, kiln_tassign(k, sc, kiln_tfloat(k, KILN_F32, 0.75)));
  for (int pass = 0; pass < 2; pass++) {
    kiln_tstmt *li = kiln_tfor(k, i, kiln_tint(k, 64), KILN_LOOP_PARALLEL);
    kiln_tblock_push(k, &li->body, kiln_tassign(k, acc, kiln_tfloat(k, KILN_F32, 0)));
    kiln_tstmt *lj = kiln_tfor(k, j, kiln_tint(k, 37), KILN_LOOP_SERIAL);
    kiln_texpr *v = kiln_tload(k, x, at2(k, i, 37, j));
    if (pass) v = kiln_tbin(k, KILN_TOP_MUL, v, kiln_tv(k, sc));
    kiln_tblock_push(k, &lj->body,
                     kiln_tassign(k, acc, kiln_tbin(k, KILN_TOP_ADD, kiln_tv(k, acc), v)));
    kiln_tblock_push(k, &li->body, lj);
    kiln_tblock_push(k, &li->body, kiln_tstore(k, pass ? z : y, kiln_tv(k, i), kiln_tv(k, acc)));
    kiln_tblock_push(k, &k->body, li);
  }
}

/* A LOCAL tile per row, filled by a vector loop and read back reversed by an unrolled loop,
 * under a condition with an else branch. */
static void local_kernel(kiln_tmodule *m) {
  kiln_tkernel *k = kiln_tkernel_new(m, "local_tiles");
  int x = kiln_tkernel_param(k, "x", KILN_F64, 16 * 9);
  int y = kiln_tkernel_param(k, "y", KILN_F64, 16 * 9);
  int t = kiln_tkernel_buf(k, "t", KILN_F64, KILN_SCOPE_LOCAL, 16);
  int i = kiln_tkernel_var(k, "i", KILN_I64), j = kiln_tkernel_var(k, "j", KILN_I64);
  kiln_tstmt *li = kiln_tfor(k, i, kiln_tint(k, 9), KILN_LOOP_PARALLEL);
  kiln_tstmt *lv = kiln_tfor(k, j, kiln_tint(k, 16), KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &lv->body,
                   kiln_tstore(k, t, kiln_tv(k, j),
                               kiln_tbin(k, KILN_TOP_MUL, kiln_tload(k, x, at2(k, j, 9, i)),
                                         kiln_tfloat(k, KILN_F64, -2.5))));
  kiln_tblock_push(k, &li->body, lv);
  kiln_tstmt *lu = kiln_tfor(k, j, kiln_tint(k, 16), KILN_LOOP_SERIAL);
  kiln_texpr *rev = kiln_tbin(k, KILN_TOP_SUB, kiln_tint(k, 15), kiln_tv(k, j));
  kiln_tstmt *cond =
      kiln_tif(k, kiln_tbin(k, KILN_TOP_GT, kiln_tload(k, t, rev), kiln_tfloat(k, KILN_F64, 0)));
  kiln_tblock_push(k, &cond->body, kiln_tstore(k, y, at2(k, i, 16, j), kiln_tload(k, t, rev)));
  kiln_tblock_push(
      k, &cond->orelse,
      kiln_tstore(k, y, at2(k, i, 16, j), kiln_tun(k, KILN_TOP_EXP, kiln_tload(k, t, rev))));
  kiln_tblock_push(k, &lu->body, cond);
  kiln_tblock_push(k, &li->body, lu);
  kiln_tblock_push(k, &k->body, li);
  kiln_tstmt *un = kiln_tfor(k, j, kiln_tint(k, 5), KILN_LOOP_UNROLL);
  kiln_tblock_push(k, &un->body, kiln_tstore(k, y, kiln_tv(k, j), kiln_tfloat(k, KILN_F64, 1e300)));
  kiln_tblock_push(k, &k->body, un);
}

static void test_loops_and_locals(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  reduce_kernel(m);
  local_kernel(m);
  check_module(m, 3, NULL);
  kiln_strbuf src = {0};
  kiln_codegen_opts o = kiln_codegen_opts_default();
  o.openmp = false;
  CHECK_OK(kiln_codegen_c_module(m, &o, &src));
  CHECK(strstr(src.data, "omp parallel") == NULL);
  CHECK(strstr(src.data, "KILN_SIMD\n") != NULL && strstr(src.data, "KILN_UNROLL(5)") != NULL);
  CHECK(strstr(src.data, "_Alignas(64) double t[16];") != NULL);
  /* without OpenMP the code builds and runs too */
  check_module_with(m, 5, NULL, &o, "-fno-openmp");
  o.openmp = true, o.threads = 2, o.isa = KILN_ISA_GENERIC, o.restrict_ptrs = true;
  check_module_with(m, 6, NULL, &o, NULL);
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

/* ---- MMA ---- */
typedef struct mma_case {
  int64_t m, n, k;
  bool a_rows;       /* A row-major (a_sk == 1) or column-major (a_sm == 1) */
  bool c_local;      /* accumulate in a LOCAL tile (else directly in the parameter) */
  bool b_packed;     /* B a packed panel (b_sk == n, b_sn == 1) or transposed */
  kiln_dtype ct, at; /* C's and A's types (B is F32, or F64 when C is) */
  bool fast;         /* expected path */
} mma_case;

/* C[m x n] (+)= A[m x 2k] B[2k x n] as two MMAs of depth k in a serial loop. */
static kiln_tkernel *mma_kernel(kiln_tmodule *mod, const mma_case *c, int id) {
  char name[64];
  snprintf(name, sizeof name, "mma%d_%lldx%lldx%lld", id, (long long)c->m, (long long)c->n,
           (long long)c->k);
  kiln_tkernel *k = kiln_tkernel_new(mod, name);
  int64_t M = c->m, N = c->n, K = c->k;
  kiln_dtype bt = c->ct == KILN_F64 ? KILN_F64 : KILN_F32;
  int a = kiln_tkernel_param(k, "a", c->at, M * 2 * K);
  int b = kiln_tkernel_param(k, "b", bt, 2 * K * N);
  int cp = kiln_tkernel_param(k, "c", c->ct, M * N);
  int acc = c->c_local ? kiln_tkernel_buf(k, "acc", c->ct, KILN_SCOPE_LOCAL, M * N) : cp;
  int i = kiln_tkernel_var(k, "i", KILN_I64), kb = kiln_tkernel_var(k, "kb", KILN_I64);
  if (c->c_local) {
    kiln_tstmt *l = kiln_tfor(k, i, kiln_tint(k, M * N), KILN_LOOP_VECTOR);
    kiln_tblock_push(k, &l->body, kiln_tstore(k, acc, kiln_tv(k, i), ld(k, cp, i)));
    kiln_tblock_push(k, &k->body, l);
  }
  kiln_tmma mm = {.c_buf = acc, .a_buf = a, .b_buf = b, .ldc = N, .m = M, .n = N, .k = K};
  mm.c_off = kiln_tint(k, 0);
  mm.a_sm = c->a_rows ? 2 * K : 1, mm.a_sk = c->a_rows ? 1 : M;
  mm.a_off = kiln_tmul(k, kiln_tv(k, kb), c->a_rows ? K : K * M);
  mm.b_sk = c->b_packed ? N : 1, mm.b_sn = c->b_packed ? 1 : 2 * K;
  mm.b_off = kiln_tmul(k, kiln_tv(k, kb), c->b_packed ? K * N : K);
  kiln_tstmt *lk = kiln_tfor(k, kb, kiln_tint(k, 2), KILN_LOOP_SERIAL);
  kiln_tblock_push(k, &lk->body, kiln_tmma_stmt(k, &mm));
  kiln_tblock_push(k, &k->body, lk);
  if (c->c_local) {
    kiln_tstmt *l = kiln_tfor(k, i, kiln_tint(k, M * N), KILN_LOOP_SERIAL);
    kiln_tblock_push(k, &l->body, kiln_tstore(k, cp, kiln_tv(k, i), ld(k, acc, i)));
    kiln_tblock_push(k, &k->body, l);
  }
  CHECK(kiln_codegen_c_mma_fast(k, &lk->body.data[0]->mma) == c->fast);
  return k;
}

/* Small integers: every product and sum is exact, whatever the rounding steps. */
static void fill_small_ints(const kiln_tkernel *k, void **in) {
  uint64_t seed = 99;
  for (int p = 0; p < k->n_params; p++)
    for (int64_t i = 0; i < k->bufs.data[p].size; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      kiln_store_f64(k->bufs.data[p].dtype, in[p], (size_t)i, (double)((int)(seed >> 59) - 16) / 2);
    }
}

static const mma_case mma_cases[] = {
    {8, 32, 64, true, true, true, KILN_F32, KILN_F32, true},
    {6, 48, 33, true, true, true, KILN_F32, KILN_F32, true},
    {8, 64, 5, false, true, true, KILN_F32, KILN_F32, true},
    {1, 16, 1, true, true, true, KILN_F32, KILN_F32, true},
    {3, 16, 17, false, true, true, KILN_F32, KILN_F32, true},
    {5, 20, 9, true, true, true, KILN_F32, KILN_F32, false},  /* n not a vector multiple */
    {9, 16, 4, true, true, true, KILN_F32, KILN_F32, false},  /* m > 8 */
    {4, 32, 8, true, false, true, KILN_F32, KILN_F32, false}, /* C not local */
    {4, 32, 8, true, true, false, KILN_F32, KILN_F32, false}, /* B not packed */
    {4, 16, 8, true, true, true, KILN_F64, KILN_F64, false},  /* F64 */
    {4, 16, 8, false, true, true, KILN_F32, KILN_F16, false}, /* A in F16 */
    {2, 3, 7, true, true, false, KILN_I32, KILN_I8, false},   /* integers */
};

static void test_mma(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  for (size_t i = 0; i < sizeof mma_cases / sizeof mma_cases[0]; i++)
    mma_kernel(m, &mma_cases[i], (int)i);
  check_module(m, 1, fill_small_ints);
  kiln_strbuf src = {0};
  kiln_codegen_opts o = kiln_codegen_opts_default();
  CHECK_OK(kiln_codegen_c_module(m, &o, &src));
  CHECK(
      strstr(src.data, "kiln_mma_f32_8x32(acc + 0, a + (kb * 64), 128, 1, b + (kb * 2048), 64);"));
  CHECK(strstr(src.data, "(loops)") != NULL);
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

/* The fast path on arbitrary floats: one fused multiply-add per product, k increasing. */
static void test_mma_fma_contract(void) {
  if (!cc_works()) return;
  kiln_tmodule *m = kiln_tmodule_new();
  mma_case c = {6, 48, 50, false, true, true, KILN_F32, KILN_F32, true};
  kiln_tkernel *k = mma_kernel(m, &c, 0);
  kiln_strbuf src = {0};
  kiln_codegen_opts o = kiln_codegen_opts_default();
  CHECK_OK(kiln_codegen_c_module(m, &o, &src));
  float a[6 * 100], b[100 * 48], c0[6 * 48], want[6 * 48];
  uint64_t seed = 5;
  fill_random(KILN_F32, a, 600, &seed), fill_random(KILN_F32, b, 4800, &seed);
  fill_random(KILN_F32, c0, 288, &seed);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 48; j++) {
      float acc = c0[i * 48 + j];
      for (int p = 0; p < 100; p++) acc = fmaf(a[p * 6 + i], b[p * 48 + j], acc);
      want[i * 48 + j] = acc;
    }
  /* Each way the prelude spells the vector FMA: the compiler's AVX-512 builtin (native
   * here), its AVX2 builtin, <immintrin.h> (the fallback of compilers without the
   * builtins), portable C; with clang too when it is installed. */
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const struct {
    const char *cc, *flags;
    bool run;
  } ways[] = {{"cc", NULL, true},
              {"cc", "-mno-avx512f", avx2},
              {"cc", "-DKILN_FMA_FROM_HEADER", true},
              {"cc", "-mno-avx512f -DKILN_FMA_FROM_HEADER", avx2},
              {"cc", "-DKILN_GENERIC", true},
              {"clang", NULL, run_cmd("clang --version >/dev/null 2>&1")},
              {"clang", "-mno-avx512f", avx2 && run_cmd("clang --version >/dev/null 2>&1")}};
  for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
    if (!ways[w].run) {
      fprintf(stderr, "SKIPPED: FMA spelled by %s %s (no such compiler or CPU feature)\n",
              ways[w].cc, ways[w].flags ? ways[w].flags : "");
      continue;
    }
    built so;
    if (build_cc(ways[w].cc, src.data, ways[w].flags, &so)) {
      float cc[6 * 48];
      memcpy(cc, c0, sizeof cc);
      kernel_fn f = lookup(&so, k->name);
      if (f) f((void *[]){a, b, cc});
      if (memcmp(cc, want, sizeof want))
        fprintf(stderr, "FMA spelled by %s %s differs\n", ways[w].cc,
                ways[w].flags ? ways[w].flags : "");
      CHECK(!memcmp(cc, want, sizeof want));
    }
    unbuild(&so);
  }
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

/* ---- CUDA ---- */
/* Compiles CUDA source to PTX with NVRTC, else nvcc; returns false when neither exists. */
static bool cuda_compile(const char *src, const char *what) {
  char *ptx = NULL;
  kiln_status st = kiln_codegen_cuda_ptx(src, "compute_90", &ptx);
  if (st == KILN_OK) {
    CHECK(strstr(ptx, ".entry") != NULL);
    free(ptx);
    return true;
  }
  if (kiln_status_code(st) != KILN_ERR_UNSUPPORTED) {
    fprintf(stderr, "%s: %s\n%s\n", what, kiln_status_message(st), src);
    CHECK(!"NVRTC compilation failed");
    kiln_status_free(st);
    return true;
  }
  kiln_status_free(st);
  if (!run_cmd("nvcc --version >/dev/null 2>&1")) {
    fprintf(stderr, "%s: no NVRTC and no nvcc: CUDA compilation skipped\n", what);
    return false;
  }
  built b;
  snprintf(b.dir, sizeof b.dir, "%s/kiln_cu_XXXXXX", tmpdir());
  if (!mkdtemp(b.dir)) return false;
  char path[600], cmd[1600];
  snprintf(path, sizeof path, "%s/k.cu", b.dir);
  CHECK_OK(kiln_write_file(path, src, strlen(src)));
  snprintf(cmd, sizeof cmd, "nvcc --ptx -arch=compute_90 -fmad=false %s -o %s/k.ptx", path, b.dir);
  CHECK(run_cmd(cmd));
  b.so = NULL;
  unbuild(&b);
  return true;
}

static void run_interp(const kiln_tkernel *k, void **args) {
  kiln_status st = kiln_tkernel_interp(k, args);
  CHECK_OK(st);
}

static void test_gpu_matmul(void) {
  int64_t sizes[][3] = {{45, 37, 29}, {64, 64, 32}, {1, 1, 1}};
  for (int t = 0; t < 3; t++) {
    int64_t M = sizes[t][0], N = sizes[t][1], K = sizes[t][2];
    kiln_tmodule *m = kiln_tmodule_new();
    kiln_tkernel *k = NULL;
    CHECK_OK(kiln_tile_gpu_matmul(m, "sgemm", M, N, K, &k));
    if (!k) {
      kiln_tmodule_free(m);
      continue;
    }
    CHECK_OK(kiln_tkernel_verify(k));
    float *a = kiln_xmalloc((size_t)(M * K) * 4), *b = kiln_xmalloc((size_t)(K * N) * 4);
    float *c = kiln_xcalloc((size_t)(M * N), 4);
    uint64_t seed = 17;
    fill_random(KILN_F32, a, M * K, &seed), fill_random(KILN_F32, b, K * N, &seed);
    run_interp(k, (void *[]){a, b, c});
    int bad = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        float acc = 0;
        for (int64_t p = 0; p < K; p++) acc = acc + a[i * K + p] * b[p * N + j];
        bad += c[i * N + j] != acc;
      }
    CHECK(bad == 0);
    int64_t grid[3], block[3];
    CHECK_OK(kiln_codegen_cuda_launch(k, grid, block));
    CHECK(grid[0] == (N + 31) / 32 && grid[1] == (M + 31) / 32 && grid[2] == 1);
    CHECK(block[0] == 16 && block[1] == 16 && block[2] == 1);
    kiln_codegen_opts o = kiln_codegen_opts_default();
    kiln_strbuf src = {0};
    CHECK_OK(kiln_codegen_cuda_module(m, &o, &src));
    CHECK(src.data && strstr(src.data, "__shared__ float As[512];") != NULL);
    CHECK(src.data && strstr(src.data, "__syncthreads();") != NULL);
    CHECK(src.data &&
          strstr(src.data, "extern \"C\" __global__ void sgemm(const float *a") != NULL);
    if (t == 0 && src.data) cuda_compile(src.data, "sgemm");
    kiln_strbuf cs = {0};
    CHECK_ERR(kiln_codegen_c_module(m, &o, &cs), KILN_ERR_UNSUPPORTED); /* GPU loops in C */
    kiln_strbuf_free(&cs);
    kiln_strbuf_free(&src);
    free(a), free(b), free(c);
    kiln_tmodule_free(m);
  }
}

/* Runs k on copies of the same random inputs before and after gpu_map; the results match. */
static void check_gpu_map(kiln_tkernel *k, int threads, bool guarded) {
  int n = k->n_params;
  void *before[8], *after[8];
  uint64_t seed = 23;
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)k->bufs.data[i].size * kiln_dtype_size(k->bufs.data[i].dtype);
    before[i] = kiln_xmalloc(bytes), after[i] = kiln_xmalloc(bytes);
    fill_random(k->bufs.data[i].dtype, before[i], k->bufs.data[i].size, &seed);
    memcpy(after[i], before[i], bytes);
  }
  run_interp(k, before);
  CHECK_OK(kiln_tile_gpu_map(k, threads));
  CHECK_OK(kiln_tkernel_verify(k));
  run_interp(k, after);
  for (int i = 0; i < n; i++) CHECK(compare_param(k, i, before[i], after[i]) == 0);
  kiln_codegen_opts o = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_cuda_prelude(&o, &src));
  CHECK_OK(kiln_codegen_cuda_kernel(k, &o, &src));
  CHECK(src.data && (strstr(src.data, "threadIdx.x") != NULL));
  CHECK(src.data && (strstr(src.data, "blockIdx.x") != NULL));
  CHECK(src.data && (strstr(src.data, "if ((((") != NULL) == guarded);
  if (src.data) cuda_compile(src.data, k->name);
  kiln_strbuf_free(&src);
  for (int i = 0; i < n; i++) free(before[i]), free(after[i]);
}

static void test_gpu_map(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  reduce_kernel(m);
  kiln_tkernel *k = m->kernels.data[0];
  /* the top-level assignment makes it not CPU-shaped: unchanged */
  CHECK_ERR(kiln_tile_gpu_map(k, 128), KILN_ERR_UNSUPPORTED);
  CHECK(k->body.data[0]->kind == KILN_TS_ASSIGN && k->body.len == 3);
  CHECK(k->body.data[1]->loop == KILN_LOOP_PARALLEL);
  kiln_tmodule_free(m);

  m = kiln_tmodule_new();
  kiln_tkernel *ew = kiln_tkernel_new(m, "ew");
  int x = kiln_tkernel_param(ew, "x", KILN_F32, 1000);
  int y = kiln_tkernel_param(ew, "y", KILN_F16, 1000);
  int i = kiln_tkernel_var(ew, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(ew, i, kiln_tint(ew, 1000), KILN_LOOP_PARALLEL);
  kiln_texpr *e = kiln_tun(ew, KILN_TOP_TANH, ld(ew, x, i));
  kiln_tblock_push(ew, &loop->body,
                   kiln_tstore(ew, y, kiln_tv(ew, i), kiln_tcast(ew, KILN_F16, e)));
  kiln_tblock_push(ew, &ew->body, loop);
  check_gpu_map(ew, 256, true);
  int64_t grid[3], block[3];
  CHECK_OK(kiln_codegen_cuda_launch(ew, grid, block));
  CHECK(grid[0] == 4 && block[0] == 256);

  /* a row reduction: the accumulator is private to each GPU thread */
  kiln_tkernel *rk = kiln_tkernel_new(m, "rows");
  int rx = kiln_tkernel_param(rk, "x", KILN_F32, 64 * 37);
  int ry = kiln_tkernel_param(rk, "y", KILN_F32, 64);
  int ri = kiln_tkernel_var(rk, "i", KILN_I64), rj = kiln_tkernel_var(rk, "j", KILN_I64);
  int acc = kiln_tkernel_var(rk, "acc", KILN_F32);
  kiln_tstmt *li = kiln_tfor(rk, ri, kiln_tint(rk, 64), KILN_LOOP_PARALLEL);
  kiln_tblock_push(rk, &li->body, kiln_tassign(rk, acc, kiln_tfloat(rk, KILN_F32, 0)));
  kiln_tstmt *lj = kiln_tfor(rk, rj, kiln_tint(rk, 37), KILN_LOOP_SERIAL);
  kiln_tblock_push(rk, &lj->body,
                   kiln_tassign(rk, acc,
                                kiln_tbin(rk, KILN_TOP_MAX, kiln_tv(rk, acc),
                                          kiln_tload(rk, rx, at2(rk, ri, 37, rj)))));
  kiln_tblock_push(rk, &li->body, lj);
  kiln_tblock_push(rk, &li->body, kiln_tstore(rk, ry, kiln_tv(rk, ri), kiln_tv(rk, acc)));
  kiln_tblock_push(rk, &rk->body, li);
  check_gpu_map(rk, 32, false);
  CHECK_OK(kiln_codegen_cuda_launch(rk, grid, block));
  CHECK(grid[0] == 2 && block[0] == 32);
  kiln_tmodule_free(m);
}

/* ---- microkernel speed (KILN_BENCH=1): one thread, operands in L1 ---- */
static void bench_one(int64_t M, int64_t N) {
  const int64_t K = 128, R = 40000;
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_tkernel *k = kiln_tkernel_new(m, "bench");
  int a = kiln_tkernel_param(k, "a", KILN_F32, M * K);
  int b = kiln_tkernel_param(k, "b", KILN_F32, K * N);
  int c = kiln_tkernel_param(k, "c", KILN_F32, M * N);
  int acc = kiln_tkernel_buf(k, "acc", KILN_F32, KILN_SCOPE_LOCAL, M * N);
  int i = kiln_tkernel_var(k, "i", KILN_I64), r = kiln_tkernel_var(k, "r", KILN_I64);
  kiln_tstmt *z = kiln_tfor(k, i, kiln_tint(k, M * N), KILN_LOOP_VECTOR);
  kiln_tblock_push(k, &z->body, kiln_tstore(k, acc, kiln_tv(k, i), kiln_tfloat(k, KILN_F32, 0)));
  kiln_tblock_push(k, &k->body, z);
  kiln_tmma mm = {.c_buf = acc,
                  .a_buf = a,
                  .b_buf = b,
                  .ldc = N,
                  .a_sm = K,
                  .a_sk = 1,
                  .b_sk = N,
                  .b_sn = 1,
                  .m = M,
                  .n = N,
                  .k = K};
  mm.c_off = kiln_tint(k, 0), mm.a_off = kiln_tint(k, 0), mm.b_off = kiln_tint(k, 0);
  kiln_tstmt *lr = kiln_tfor(k, r, kiln_tint(k, R), KILN_LOOP_SERIAL);
  kiln_tblock_push(k, &lr->body, kiln_tmma_stmt(k, &mm));
  kiln_tblock_push(k, &k->body, lr);
  kiln_tstmt *o = kiln_tfor(k, i, kiln_tint(k, M * N), KILN_LOOP_SERIAL);
  kiln_tblock_push(k, &o->body, kiln_tstore(k, c, kiln_tv(k, i), ld(k, acc, i)));
  kiln_tblock_push(k, &k->body, o);
  kiln_codegen_opts opts = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_c_module(m, &opts, &src));
  built so;
  if (build(src.data, NULL, &so)) {
    float *A = kiln_xcalloc((size_t)(M * K), 4), *B = kiln_xcalloc((size_t)(K * N), 4);
    float *C = kiln_xcalloc((size_t)(M * N), 4);
    kernel_fn f = lookup(&so, "bench");
    double best = 1e9;
    for (int t = 0; f && t < 3; t++) {
      double t0 = kiln_clock_seconds();
      f((void *[]){A, B, C});
      double dt = kiln_clock_seconds() - t0;
      best = dt < best ? dt : best;
    }
    printf("mma microkernel %lldx%lld (k=%lld): %.1f GFLOP/s on one core\n", (long long)M,
           (long long)N, (long long)K, 2.0 * (double)(M * N * K * R) / best * 1e-9);
    free(A), free(B), free(C);
  }
  unbuild(&so);
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

static void bench_mma(void) {
  if (!getenv("KILN_BENCH") || !cc_works()) return;
  bench_one(8, 32);
  bench_one(6, 48);
  bench_one(4, 64);
}

/* Matrix-product nests made MMAs by the tensorize schedule transform compile and give the
 * interpreter's bits: i8 x u8 into i32, f16 mac into f32. */
static void test_tensorized(void) {
  static const char *const types[][3] = {{"i8", "u8", "i32"}, {"f16", "f16", "f32"}};
  for (int t = 0; t < 2; t++) {
    char text[1024];
    snprintf(text, sizeof text,
             "kernel @tz%d(%%a: %s[20] readonly, %%b: %s[30] readonly, %%c: %s[24]) {\n"
             " var $m: i64\n var $n: i64\n var $k: i64\n"
             " for $m in 0..4 serial {\n  for $n in 0..6 serial {\n   for $k in 0..5 serial {\n"
             "    %%c[add(mul($m, 6), $n)] = mac(%%c[add(mul($m, 6), $n)], %%a[add(mul($m, 5),"
             " $k)], %%b[add(mul($k, 6), $n)])\n   }\n  }\n }\n}\n",
             t, types[t][0], types[t][1], types[t][2]);
    kiln_tmodule *m = NULL;
    CHECK_OK(kiln_tmodule_parse(text, "tz", &m));
    if (!m) continue;
    kiln_tkernel *k = m->kernels.data[0];
    CHECK_OK(kiln_tsched_tensorize(k, kiln_tsched_find(k, "m")));
    CHECK(k->body.len == 1 && k->body.data[0]->kind == KILN_TS_MMA);
    CHECK_OK(kiln_tkernel_verify(k));
    check_kernel(k, 77 + (uint64_t)t);
    kiln_tmodule_free(m);
  }
}

TEST_MAIN(T(test_add1_parallel), T(test_tensorized), T(test_ops), T(test_casts),
          T(test_loops_and_locals), T(test_mma), T(test_mma_fma_contract), T(test_gpu_matmul),
          T(test_gpu_map), T(bench_mma))
