/* CUDA target on a small model: a MatMul (tiled shared-memory GPU matmul), an elementwise
 * group, a Softmax and a batched MatMul (one-thread kernel) are scheduled for the GPU,
 * emitted as CUDA C and compiled with NVRTC (skipped with a message when NVRTC is absent);
 * the mapped program, run by the tile interpreter (GPU loops in lockstep), gives the
 * results of the CPU program and of the reference interpreter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "codegen/codegen.h"
#include "harness.h"

static const char model_text[] =
    "graph @small(%a: f32[5,37], %w: f32[37,45], %c: f32[45], %x: f32[2,3,4], %z: f32[2,4,6])"
    " -> (%p: f32[5,45], %t: f32[5,37], %bm: f32[2,3,6]) {\n"
    "  opset \"\" 17\n"
    "  %m = MatMul(%a, %w) : f32[5,45]\n"
    "  %s = Add(%m, %c) : f32[5,45]\n"
    "  %r = Relu(%s) : f32[5,45]\n"
    "  %p = Softmax(%r) {axis=1} : f32[5,45]\n"
    "  %e = Exp(%a) : f32[5,37]\n"
    "  %t = Mul(%e, %a) : f32[5,37]\n"
    "  %bm = MatMul(%x, %z) : f32[2,3,6]\n"
    "  return %p, %t, %bm\n"
    "}\n";

static kiln_graph *parse(void) {
  kiln_graph *g = NULL;
  kiln_status st = kiln_graph_parse(model_text, "small", &g);
  if (st) fprintf(stderr, "parse: %s\n", kiln_status_message(st));
  kiln_status_free(st);
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

static kiln_tensor *random_input(const kiln_type *t, uint64_t *seed) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL;
  CHECK_OK(kiln_tensor_new(t->dtype, t->rank, dims, &x));
  float *f = (float *)x->data;
  for (int64_t i = 0; x && i < x->numel; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    f[i] = (float)((double)(*seed >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
  return x;
}

static int count_far(const kiln_tensor *a, const kiln_tensor *b) {
  if (!a || !b || a->numel != b->numel) return 1;
  const float *x = (const float *)a->data, *y = (const float *)b->data;
  int bad = 0;
  for (int64_t i = 0; i < a->numel; i++)
    bad += !(fabsf(x[i] - y[i]) <= 1e-5f + 1e-5f * fabsf(y[i]));
  return bad;
}

/* The CPU program of the same model (the default fusion classes and lowering). */
static kiln_program *cpu_program(kiln_graph *g) {
  kiln_pass_opts po = {.pass_limit = -1, .fuse_classify = kiln_lower_fuse_class};
  CHECK_OK(kiln_passes_run(g, &po, NULL));
  kiln_lower_opts lo = {.target = KILN_TARGET_CUDA, .threads = 4};
  kiln_program *p = NULL;
  CHECK_OK(kiln_lower(g, &lo, &p));
  return p;
}

/* Every GPU kernel: verified, and each launch is a block loop (the mapping took place). */
static void check_kernels(const kiln_cuda_build *b) {
  const kiln_tmodule *m = b->prog->module;
  for (int i = 0; i < m->kernels.len; i++) {
    const kiln_tkernel *k = m->kernels.data[i];
    if (b->info[i].map == KILN_CUDA_UNUSED) continue;
    CHECK(b->info[i].map != KILN_CUDA_UNMAPPED);
    CHECK_OK(kiln_tkernel_verify(k));
    for (int s = 0; s < k->body.len; s++)
      CHECK(k->body.data[s]->kind == KILN_TS_FOR && k->body.data[s]->loop >= KILN_LOOP_BLOCK_X &&
            k->body.data[s]->loop <= KILN_LOOP_BLOCK_Z);
  }
  CHECK(b->n_map[KILN_CUDA_MATMUL] == 1);   /* %m */
  CHECK(b->n_map[KILN_CUDA_PARALLEL] >= 2); /* Add+Relu(+Softmax), Exp+Mul */
  CHECK(b->n_map[KILN_CUDA_SERIAL] == 1);   /* the batched MatMul */
  CHECK(b->n_shared == 1 && b->n_fallback_steps == 0);
  const char *src = b->source.data ? b->source.data : "";
  CHECK(strstr(src, "__shared__ float") && strstr(src, "__syncthreads();"));
  CHECK(strstr(src, "blockIdx.x") && strstr(src, "threadIdx.x"));
}

static void check_nvrtc(const kiln_cuda_build *b) {
  if (!b->nvrtc_found) {
    fprintf(stderr, "SKIP: NVRTC not found, the CUDA C was not compiled\n");
    return;
  }
  if (!b->nvrtc_ok) fprintf(stderr, "NVRTC: %s\n", b->nvrtc_log ? b->nvrtc_log : "");
  CHECK(b->nvrtc_ok && b->ptx);
  char entry[256];
  for (int i = 0; b->ptx && i < b->launches.len; i++) {
    snprintf(entry, sizeof entry, ".entry %s(", b->launches.data[i].name);
    CHECK(strstr(b->ptx, entry) != NULL);
  }
}

static void check_same_results(kiln_graph *gc, const kiln_cuda_build *b) {
  kiln_graph *gr = parse(), *gp = parse();
  if (!gr || !gp) return;
  kiln_program *cpu = cpu_program(gp);
  kiln_tensor *in[5], *out_cpu[3] = {0}, *out_gpu[3] = {0};
  kiln_val *vin[5], *ref[3] = {0};
  uint64_t seed = 99;
  for (int i = 0; i < 5; i++) {
    in[i] = random_input(&gc->values.data[gc->inputs.data[i]].type, &seed);
    vin[i] = kiln_val_tensor(in[i]);
  }
  CHECK_OK(kiln_interp_run(gr, NULL, 5, vin, ref));
  if (cpu) CHECK_OK(kiln_program_interp(cpu, 5, in, out_cpu));
  CHECK_OK(kiln_program_interp(b->prog, 5, in, out_gpu));
  for (int o = 0; o < 3; o++) {
    CHECK(ref[o] && count_far(out_gpu[o], ref[o]->t) == 0);
    CHECK(count_far(out_gpu[o], out_cpu[o]) == 0);
    kiln_tensor_free(out_cpu[o]), kiln_tensor_free(out_gpu[o]), kiln_val_free(ref[o]);
  }
  for (int i = 0; i < 5; i++) kiln_val_free(vin[i]);
  kiln_program_free(cpu);
  kiln_graph_free(gp), kiln_graph_free(gr);
}

/* launch.txt has one launch line per launch, each binding its parameters to values. */
static void check_manifest(const kiln_cuda_build *b) {
  char dir[512], path[600];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/kiln_cuda_test_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp failed");
    return;
  }
  CHECK_OK(kiln_cuda_build_write(b, dir));
  snprintf(path, sizeof path, "%s/launch.txt", dir);
  char *text = NULL;
  size_t len = 0;
  CHECK_OK(kiln_read_file(path, &text, &len));
  int launches = 0;
  for (const char *p = text; p && (p = strstr(p, " launch k")); p++) launches++;
  CHECK(launches == b->launches.len);
  CHECK(text && strstr(text, "grid 2 1 1 block 16 16 1 shared 4096 a=%a b=%w c=%m"));
  free(text);
  const char *names[] = {"model.cu", "launch.txt", "report.txt", "model.ptx"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static void test_small_model(void) {
  kiln_graph *g = parse();
  if (!g) return;
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  kiln_compiled *c = NULL;
  CHECK_OK(kiln_compile(g, &kiln_target_cuda, &o, &c));
  const kiln_cuda_build *b = kiln_compiled_cuda(c);
  if (b) {
    check_kernels(b);
    check_nvrtc(b);
    check_same_results(g, b);
    check_manifest(b);
  }
  kiln_compiled_free(c);
  kiln_graph_free(g);
}

static void test_bad_options(void) {
  kiln_graph *g = parse();
  if (!g) return;
  kiln_compile_opts o;
  kiln_compile_opts_init(&o);
  o.cuda.threads_per_block = 2048;
  kiln_compiled *c = NULL;
  CHECK_ERR(kiln_compile(g, &kiln_target_cuda, &o, &c), KILN_ERR_INVALID);
  CHECK(c == NULL);
  kiln_cuda_kinfo *info = NULL;
  CHECK_ERR(kiln_lower_cuda_map(NULL, 256, &info), KILN_ERR_INVALID);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_small_model), T(test_bad_options))
