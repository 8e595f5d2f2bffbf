/* Code generation of the low-precision tile IR: mac (the widening multiply-accumulate of
 * int8 and half dot products) and MMAs over int8 operands, compiled as C and compared bit for
 * bit with the tile interpreter on random inputs; the CUDA emitter's native half
 * instructions and dp4a, compiled to PTX (NVRTC) and assembled (ptxas) when the CUDA toolkit
 * is present. (Every F16/BF16 operator is compared with the interpreter in test_codegen.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "harness.h"
#include "runtime/runtime.h"

static char g_tmp[1024];

static void fill(kiln_dtype t, void *p, int64_t n, uint64_t *seed) {
  size_t es = kiln_dtype_size(t);
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = *seed >> 11;
    if (t == KILN_F32) { /* moderate values: sums of products stay finite */
      float f = (float)((double)(r % 2000001) / 1000.0 - 1000.0) / 37.0f;
      memcpy((char *)p + i * es, &f, 4);
    } else {
      memcpy((char *)p + i * es, &r, es); /* every bit pattern, NaN and Inf included */
    }
  }
}

static bool same(kiln_dtype t, const unsigned char *a, const unsigned char *b) {
  size_t n = kiln_dtype_size(t);
  if (!memcmp(a, b, n)) return true;
  return kiln_dtype_is_float(t) && isnan(kiln_load_f64(t, a, 0)) && isnan(kiln_load_f64(t, b, 0));
}

/* Runs every kernel of m in the interpreter and compiled, on the same random inputs. */
static void check_module(kiln_tmodule *m, uint64_t seed) {
  CHECK_OK(kiln_tmodule_verify(m));
  kiln_codegen_opts o = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_c_module(m, &o, &src));
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_cg_prec");
  kiln_cc_opts cc = {.cache_dir = g_tmp, .no_cache = true};
  kiln_module *so = NULL;
  const char *units[1] = {src.data};
  CHECK_OK(kiln_module_build(1, units, &cc, &so, NULL));
  for (int ki = 0; so && ki < m->kernels.len; ki++) {
    const kiln_tkernel *k = m->kernels.data[ki];
    void *a[8], *b[8];
    for (int i = 0; i < k->n_params; i++) {
      size_t bytes = (size_t)k->bufs.data[i].size * kiln_dtype_size(k->bufs.data[i].dtype);
      a[i] = kiln_xmalloc(bytes), b[i] = kiln_xmalloc(bytes);
      fill(k->bufs.data[i].dtype, a[i], k->bufs.data[i].size, &seed);
      memcpy(b[i], a[i], bytes);
    }
    void *fn = NULL;
    CHECK_OK(kiln_tkernel_interp(k, a));
    CHECK_OK(kiln_module_sym(so, k->name, &fn));
    if (fn) ((void (*)(void *const *))fn)(b);
    int bad = 0;
    for (int i = 0; i < k->n_params; i++) {
      kiln_dtype t = k->bufs.data[i].dtype;
      for (int64_t j = 0; j < k->bufs.data[i].size; j++)
        bad += !same(t, (unsigned char *)a[i] + j * kiln_dtype_size(t),
                     (unsigned char *)b[i] + j * kiln_dtype_size(t));
    }
    if (bad) fprintf(stderr, "kernel %s: %d elements differ\n", k->name, bad);
    CHECK(bad == 0);
    for (int i = 0; i < k->n_params; i++) free(a[i]), free(b[i]);
  }
  kiln_module_free(so);
  kiln_strbuf_free(&src);
}

/* y[i] = mac(c[i], a[i], b[i]) for 257 elements */
static void mac_kernel(kiln_tmodule *m, kiln_dtype acc, kiln_dtype ta, kiln_dtype tb) {
  char name[64];
  snprintf(name, sizeof name, "mac_%s_%s_%s", kiln_dtype_name(acc), kiln_dtype_name(ta),
           kiln_dtype_name(tb));
  kiln_tkernel *k = kiln_tkernel_new(m, name);
  int a = kiln_tkernel_param(k, "a", ta, 257), b = kiln_tkernel_param(k, "b", tb, 257);
  int c = kiln_tkernel_param(k, "c", acc, 257), y = kiln_tkernel_param(k, "y", acc, 257);
  int i = kiln_tkernel_var(k, "i", KILN_I64);
  kiln_tstmt *loop = kiln_tfor(k, i, kiln_tint(k, 257), KILN_LOOP_VECTOR);
  kiln_texpr *e = kiln_tmac(k, kiln_tload(k, c, kiln_tv(k, i)), kiln_tload(k, a, kiln_tv(k, i)),
                            kiln_tload(k, b, kiln_tv(k, i)));
  kiln_tblock_push(k, &loop->body, kiln_tstore(k, y, kiln_tv(k, i), e));
  kiln_tblock_push(k, &k->body, loop);
}

static void test_mac(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  kiln_dtype ints[2] = {KILN_I8, KILN_U8};
  for (int x = 0; x < 2; x++)
    for (int y = 0; y < 2; y++) mac_kernel(m, KILN_I32, ints[x], ints[y]);
  mac_kernel(m, KILN_F32, KILN_F16, KILN_F16);
  mac_kernel(m, KILN_F32, KILN_BF16, KILN_BF16);
  check_module(m, 11);
  kiln_tmodule_free(m);
}

/* C[12 x 10] += A[12 x 16] * B[16 x 10] over int8 operands, accumulated in i32 */
static kiln_tkernel *mma_i8_kernel(kiln_tmodule *m, kiln_dtype ta, kiln_dtype tb, int64_t K) {
  char name[64];
  snprintf(name, sizeof name, "mma_%s_%s_k%lld", kiln_dtype_name(ta), kiln_dtype_name(tb),
           (long long)K);
  kiln_tkernel *k = kiln_tkernel_new(m, name);
  int a = kiln_tkernel_param(k, "a", ta, 12 * K), b = kiln_tkernel_param(k, "b", tb, K * 10);
  int c = kiln_tkernel_param(k, "c", KILN_I32, 120);
  kiln_tmma mm = {.c_buf = c, .a_buf = a, .b_buf = b, .ldc = 10, .a_sm = K, .a_sk = 1};
  mm.b_sk = 10, mm.b_sn = 1, mm.m = 12, mm.n = 10, mm.k = K;
  mm.c_off = kiln_tint(k, 0), mm.a_off = kiln_tint(k, 0), mm.b_off = kiln_tint(k, 0);
  kiln_tblock_push(k, &k->body, kiln_tmma_stmt(k, &mm));
  return k;
}

static void test_mma_int8(void) {
  kiln_tmodule *m = kiln_tmodule_new();
  mma_i8_kernel(m, KILN_I8, KILN_I8, 16);
  mma_i8_kernel(m, KILN_U8, KILN_I8, 16);
  mma_i8_kernel(m, KILN_U8, KILN_U8, 7);
  check_module(m, 12);
  kiln_tmodule_free(m);
}

/* ---- CUDA ---- */
static const char *CUDA_MODULE =
    "kernel @half_ops(%a: f16[256] readonly, %b: bf16[256] readonly, %y: f16[256], %z: bf16[256],"
    " %w: f32[256]) {\n"
    "  var $t: i64\n"
    "  for $t in 0..256 thread.x {\n"
    "    %y[$t] = sub(mul(add(%a[$t], 1.5:f16), %a[$t]), exp(%a[$t]))\n"
    "    %z[$t] = select(lt(%b[$t], 0:bf16), mul(%b[$t], %b[$t]), add(%b[$t], %b[$t]))\n"
    "    %w[$t] = mac(mac(0:f32, %a[$t], %a[$t]), %b[$t], %b[$t])\n"
    "  }\n"
    "}\n"
    "kernel @dot_i8(%a: i8[64] readonly, %b: u8[64] readonly, %c: i32[16]) {\n"
    "  var $t: i64\n"
    "  for $t in 0..4 thread.x {\n"
    "    mma %c[mul($t, 4)] += %a[mul($t, 16)] * %b[0] {m=1, n=4, k=16, ldc=4, a_sm=16, a_sk=1, "
    "b_sk=4, b_sn=1}\n"
    "  }\n"
    "}\n";

/* ptxas of the CUDA toolkit ($CUDA_HOME/bin, the PATH, then the standard install folder). */
static bool find_ptxas(char *out, size_t n) {
  const char *home = getenv("CUDA_HOME");
  char cmd[600];
  if (home && *home) {
    snprintf(out, n, "%s/bin/ptxas", home);
    snprintf(cmd, sizeof cmd, "'%s' --version >/dev/null 2>&1", out);
    if (system(cmd) == 0) return true;
  }
  snprintf(out, n, "ptxas");
  if (system("ptxas --version >/dev/null 2>&1") == 0) return true;
  snprintf(out, n, "/usr/local/cuda/bin/ptxas");
  return system("/usr/local/cuda/bin/ptxas --version >/dev/null 2>&1") == 0;
}

static void assemble(const char *ptx) {
  char ptxas[512], path[1200], cmd[3000];
  if (!find_ptxas(ptxas, sizeof ptxas)) {
    fprintf(stderr, "test_codegen_prec: no ptxas: PTX not assembled\n");
    return;
  }
  if (!g_tmp[0]) kiln_test_make_tmp(g_tmp, sizeof g_tmp, "kiln_cg_prec");
  snprintf(path, sizeof path, "%s/k.ptx", g_tmp);
  CHECK_OK(kiln_write_file(path, ptx, strlen(ptx)));
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 '%s' -o '%s/k.cubin'", ptxas, path, g_tmp);
  CHECK(system(cmd) == 0);
}

static void test_cuda(void) {
  kiln_tmodule *m = NULL;
  CHECK_OK(kiln_tmodule_parse(CUDA_MODULE, "cuda.tile", &m));
  if (!m) return;
  CHECK_OK(kiln_tmodule_verify(m));
  kiln_codegen_opts o = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  CHECK_OK(kiln_codegen_cuda_module(m, &o, &src));
  CHECK(src.data && strstr(src.data, "kiln_hmul_f16(kiln_hadd_f16(") != NULL);
  CHECK(src.data && strstr(src.data, "kiln_f32_to_f16(expf(kiln_f16_to_f32(") != NULL);
  CHECK(src.data && strstr(src.data, "kiln_dp4a_su(kiln_pack4(") != NULL);
  const char *guard = src.data ? strstr(src.data, "#define KILN_HALF_NATIVE") : NULL;
  CHECK(guard && !strstr(guard + 1, "#define KILN_HALF_NATIVE")); /* once per unit */
  char *ptx = NULL;
  kiln_status st = src.data ? kiln_codegen_cuda_ptx(src.data, "compute_90", &ptx) : KILN_OK;
  if (st && kiln_status_code(st) == KILN_ERR_UNSUPPORTED) {
    fprintf(stderr, "test_codegen_prec: no NVRTC: CUDA compilation skipped\n");
  } else {
    CHECK_OK(st == KILN_OK ? KILN_OK : kiln_status_annotate(st, "%s", src.data));
    st = KILN_OK;
  }
  kiln_status_free(st);
  if (ptx) {
    CHECK(strstr(ptx, "add.rn.f16") && strstr(ptx, "mul.rn.bf16") && strstr(ptx, "dp4a.s32.u32"));
    assemble(ptx);
  }
  free(ptx);
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

/* Kernels without half arithmetic or int8 MMAs get none of the new helpers. */
static void test_cuda_untouched(void) {
  kiln_tmodule *m = NULL;
  CHECK_OK(kiln_tmodule_parse("kernel @k(%x: f16[4], %y: f32[4]) {\n  var $t: i64\n"
                              "  for $t in 0..4 thread.x {\n    %y[$t] = f32(%x[$t])\n  }\n}\n",
                              "u.tile", &m));
  kiln_codegen_opts o = kiln_codegen_opts_default();
  kiln_strbuf src = {0};
  if (m) CHECK_OK(kiln_codegen_cuda_module(m, &o, &src));
  CHECK(src.data && !strstr(src.data, "KILN_HALF_NATIVE") && !strstr(src.data, "KILN_DP4A"));
  kiln_strbuf_free(&src);
  kiln_tmodule_free(m);
}

static void cleanup(void) {
  if (g_tmp[0]) kiln_test_remove_dir(g_tmp);
}

TEST_MAIN({"mac", test_mac}, {"mma_int8", test_mma_int8}, {"cuda", test_cuda},
          {"cuda_untouched", test_cuda_untouched}, {"cleanup", cleanup})
