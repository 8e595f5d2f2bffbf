/* Schedules (src/lower/schedule.h): the text form and its errors, the CPU defaults (today's
 * decisions at their thresholds), and schedules set from outside: they change the kernels
 * and keep the results (the tile interpreter gives the same bits as with the defaults),
 * and one that cannot apply is an error naming the kernel. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower/lower.h"
#include "lower/schedule.h"
#include "ops/ops.h"

/* ---- the text form ---- */

static void parse_fails(const char *text, const char *want) {
  kiln_sched_set *s = NULL;
  kiln_status st = kiln_sched_set_parse(text, "s.txt", &s);
  const char *msg = st ? kiln_status_message(st) : "OK";
  if (!st || !strstr(msg, want)) fprintf(stderr, "want '%s', got '%s'\n", want, msg);
  CHECK(st && strstr(msg, want) && !s);
  kiln_status_free(st);
  kiln_sched_set_free(s);
}

static void test_parse(void) {
  kiln_sched_set *s = NULL;
  CHECK_OK(kiln_sched_set_parse("# tuned\n\nk3_conv micro=rows nr=16 par=rows  # wide rows\n"
                                "k*_Add split=i1:8 vector=i1_i stage=i0:x:local bind=i0:block.x\n",
                                "s.txt", &s));
  CHECK(kiln_sched_set_len(s) == 2);
  kiln_sched r;
  kiln_arena *a = kiln_arena_new();
  kiln_sched_set_resolve(s, "k3_conv", a, &r);
  CHECK(r.micro == KILN_MICRO_ROWS && r.nr == 16 && r.par == KILN_PAR_ROWS && r.n_dirs == 0);
  CHECK(r.set == (1u << KILN_SF_MICRO | 1u << KILN_SF_NR | 1u << KILN_SF_PAR));
  CHECK(r.line[KILN_SF_NR] == 3);
  kiln_sched_set_resolve(s, "k12_Add", a, &r);
  CHECK(r.set == 0 && r.n_dirs == 4 && r.dirs[0].op == KILN_SD_SPLIT && r.dirs[0].factor == 8);
  CHECK(r.dirs[3].op == KILN_SD_BIND && r.dirs[3].kind == KILN_LOOP_BLOCK_X);
  CHECK(r.dirs[2].scope == KILN_SCOPE_LOCAL && !strcmp(r.dirs[2].buf, "x"));
  CHECK_OK(kiln_sched_set_check_used(s));
  kiln_sched_set_reset_counts(s);
  kiln_sched_set_resolve(s, "k1_Mul", a, &r); /* matches neither */
  kiln_status st = kiln_sched_set_check_used(s);
  CHECK(st && strstr(kiln_status_message(st), "s.txt:3: 'k3_conv' matches no kernel"));
  kiln_status_free(st);
  kiln_arena_free(a);
  kiln_sched_set_free(s);

  parse_fails("k0 mr=4\nk1 frob=2\n", "s.txt:2: unknown field 'frob'");
  parse_fails("# c\nk0 mr=0\n", "s.txt:2:");
  parse_fails("k0 nr=129\n", "s.txt:1:");
  parse_fails("k0 mr=4 mr=8\n", "given twice");
  parse_fails("k0 micro=fast\n", "micro=fast");
  parse_fails("k0 par=all\n", "par=all");
  parse_fails("k0\n", "without fields");
  parse_fails("k-0 mr=4\n", "not a kernel name");
  parse_fails("k0 mr\n", "not FIELD=VALUE");
  parse_fails("k0 split=i1\n", "split=LOOP:FACTOR");
  parse_fails("k0 split=i1:0\n", "split factor");
  parse_fails("k0 bind=i1:warp\n", "not a loop kind");
  parse_fails("k0 stage=i1:x:global\n", "not local or shared");
  parse_fails("k0 gpu_threads=2048\n", "gpu_threads");
  parse_fails("k0 parallel=$i\n", "not a loop variable name");
}

/* ---- the CPU defaults: today's decisions, on both sides of each threshold ---- */

static kiln_sched defaults(kiln_sched_facts f) {
  kiln_sched s = {0};
  if (!f.threads) f.threads = 4;
  if (!f.batch) f.batch = 1;
  CHECK_OK(kiln_sched_defaults_cpu(&f, &s));
  return s;
}

static void test_defaults_cpu(void) {
  kiln_sched_facts mm = {
      .kind = KILN_SCHED_GEMM, .type = KILN_F32, .M = 64, .K = 64, .b_const = true};
  mm.N = 16;
  kiln_sched s = defaults(mm);
  CHECK(s.mr == 8 && s.nr == 16 && s.micro == KILN_MICRO_PACKED);
  mm.N = 17;
  CHECK(defaults(mm).nr == 32);
  /* 2e6 flops: 64*64*244*2 = 1998848 runs serially, 245 columns go parallel */
  mm.N = 244;
  CHECK(defaults(mm).par == KILN_PAR_NONE);
  mm.N = 245;
  CHECK(defaults(mm).par != KILN_PAR_NONE);
  mm.threads = 1;
  CHECK(defaults(mm).par == KILN_PAR_NONE);
  mm.threads = 4;
  mm.b_const = false;
  mm.b_contig = true;
  mm.N = 64;
  s = defaults(mm);
  CHECK(s.micro == KILN_MICRO_INPLACE && s.nr == 64);
  mm.N = 65;
  CHECK(defaults(mm).micro == KILN_MICRO_SCRATCH);
  /* conv rows: at least 24 wide and at least 3/4 of the panels used */
  kiln_sched_facts cv = {.kind = KILN_SCHED_GEMM,
                         .type = KILN_F32,
                         .M = 8,
                         .N = 600,
                         .K = 27,
                         .is_conv = true,
                         .nsp = 2,
                         .out_h = 25,
                         .out_w = 24};
  CHECK(defaults(cv).micro == KILN_MICRO_ROWS); /* 24/32 = 0.75 */
  cv.out_w = 23;
  CHECK(defaults(cv).micro == KILN_MICRO_IM2COL);
  cv.out_w = 33; /* 33/64 */
  CHECK(defaults(cv).micro == KILN_MICRO_IM2COL);
  cv.pointwise = true;
  CHECK(defaults(cv).micro == KILN_MICRO_POINTWISE);
  cv.pointwise = false;
  cv.nsp = 1;
  cv.out_w = 48;
  CHECK(defaults(cv).micro == KILN_MICRO_IM2COL);
  /* depthwise: a plane of at most 2^17 elements; parallel from 2e6 flops */
  kiln_sched_facts dw = {.kind = KILN_SCHED_DWCONV, .nsp = 2, .plane = 1 << 17, .flops = 2e6};
  s = defaults(dw);
  CHECK(s.micro == KILN_MICRO_PLANE && s.par == KILN_PAR_OUTER);
  dw.plane++;
  dw.flops = 1.9e6;
  s = defaults(dw);
  CHECK(s.micro == KILN_MICRO_DIRECT && s.par == KILN_PAR_NONE);
  dw.stress = true;
  CHECK(defaults(dw).par == KILN_PAR_OUTER);
  /* nests: KILN_LOWER_PAR_MIN_ELEMENTS, 0 under stress and on the CUDA target */
  kiln_sched_facts nest = {.kind = KILN_SCHED_NEST, .threads = 4};
  CHECK(defaults(nest).par_min_elements == KILN_LOWER_PAR_MIN_ELEMENTS);
  s = (kiln_sched){0};
  CHECK_OK(kiln_sched_defaults_cuda(&nest, &s));
  CHECK(s.par_min_elements == 0 && s.gpu_threads == 4);
  nest.stress = true;
  CHECK(defaults(nest).par_min_elements == 0);
}

/* ---- schedules set from outside, through the lowering ---- */

static char *model_text(void) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "graph @g(%%x: f32[1,4,12,26], %%a: f32[2,5,9], %%m: f32[2,9,40]) -> "
                         "(%%y: f32[1,6,12,26], %%z: f32[1,4,12,26], %%p: f32[2,5,40], "
                         "%%q: f32[1,4,12,26]) {\n opset \"\" 17\n %%w = const f32[6,4,3,3] [");
  for (int i = 0; i < 216; i++)
    kiln_strbuf_printf(&b, "%s%g", i ? ", " : "", (i % 13) * 0.25 - 1.5);
  kiln_strbuf_printf(&b, "]\n %%d = const f32[4,1,3,3] [");
  for (int i = 0; i < 36; i++) kiln_strbuf_printf(&b, "%s%g", i ? ", " : "", (i % 7) * 0.5 - 1.25);
  kiln_strbuf_printf(&b, "]\n %%y = Conv(%%x, %%w) {pads=[1,1,1,1]} : f32[1,6,12,26]\n"
                         " %%z = Conv(%%x, %%d) {pads=[1,1,1,1], group=4} : f32[1,4,12,26]\n"
                         " %%p = MatMul(%%a, %%m) : f32[2,5,40]\n"
                         " %%q = Mul(%%x, %%x) : f32[1,4,12,26]\n return %%y, %%z, %%p, %%q\n}\n");
  return b.data;
}

static kiln_tensor *input(const kiln_type *t, int seed) {
  int64_t dims[KILN_MAX_RANK];
  for (int d = 0; d < t->rank; d++) dims[d] = t->dims[d].value;
  kiln_tensor *x = NULL;
  CHECK_OK(kiln_tensor_new(KILN_F32, t->rank, dims, &x));
  for (int64_t i = 0; x && i < x->numel; i++)
    ((float *)x->data)[i] = (float)((i * 37 + seed * 11) % 19) * 0.125f - 1.0f;
  return x;
}

typedef struct lowered {
  kiln_program *p;
  kiln_tensor *out[4];
  char *text;
} lowered;

/* Lowers g for 2 threads with sched (NULL: defaults) and runs it in the tile interpreter. */
static kiln_status lower_run(kiln_graph *g, kiln_sched_set *sched, lowered *r) {
  memset(r, 0, sizeof *r);
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 2};
  KILN_TRY(kiln_lower_scheduled(g, &lo, sched, &r->p));
  kiln_tensor *in[3];
  for (int i = 0; i < 3; i++) in[i] = input(&g->values.data[g->inputs.data[i]].type, i);
  CHECK_OK(kiln_program_interp(r->p, 3, in, r->out));
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_strbuf b = {0};
  kiln_tmodule_print(r->p->module, &b);
  r->text = b.data;
  return KILN_OK;
}

static void lowered_free(lowered *r) {
  kiln_program_free(r->p);
  for (int i = 0; i < 4; i++) kiln_tensor_free(r->out[i]);
  free(r->text);
}

static kiln_graph *model(void) {
  char *text = model_text();
  kiln_graph *g = NULL;
  CHECK_OK(kiln_graph_parse(text, "sched", &g));
  free(text);
  if (g) CHECK_OK(kiln_ops_infer_graph(g));
  return g;
}

/* The kernel names the defaults give (the model's order): k0_conv, k1_dwconv, k2_matmul,
 * k3_Mul. */
static const char *const TUNED =
    "k0_conv micro=im2col mr=4 nr=8 par=rows split=ib:3\n"
    "k1_dwconv micro=direct par=none unroll=kp\n"
    "k2_matmul micro=scratch nr=16 par=batch\n"
    "k3_Mul par_min_elements=0 split=i3:8 vector=i3_i stage=i2:v0:local\n";

static void test_set_changes_kernels_not_results(void) {
  kiln_graph *g = model();
  if (!g) return;
  lowered a, b;
  CHECK_OK(lower_run(g, NULL, &a));
  kiln_sched_set *s = NULL;
  CHECK_OK(kiln_sched_set_parse(TUNED, "tuned", &s));
  CHECK_OK(lower_run(g, s, &b));
  if (a.p && b.p) {
    CHECK(a.p->module->kernels.len == 4 && b.p->module->kernels.len == 4);
    CHECK(strcmp(a.text, b.text) != 0);
    for (int i = 0; i < 4; i++) {
      CHECK(a.out[i] && b.out[i] && a.out[i]->numel == b.out[i]->numel);
      if (a.out[i] && b.out[i])
        CHECK(!memcmp(a.out[i]->data, b.out[i]->data, (size_t)a.out[i]->numel * 4));
    }
    kiln_strbuf pa = {0}, pb = {0};
    kiln_program_print_schedules(a.p, &pa);
    kiln_program_print_schedules(b.p, &pb);
    CHECK(strstr(pa.data, "k0_conv micro=rows mr=8 nr=32 par="));
    CHECK(strstr(pa.data, "k1_dwconv micro=plane par="));
    CHECK(strstr(pa.data, "k2_matmul micro=inplace mr=8 nr=40"));
    CHECK(strstr(pb.data, "k0_conv micro=im2col mr=4 nr=8 par=rows split=ib:3  # gemm; loops"));
    CHECK(strstr(pb.data, "k1_dwconv micro=direct par=none unroll=kp"));
    CHECK(strstr(pb.data, "kp:unroll"));
    CHECK(strstr(pb.data, "i3_i:vector"));
    CHECK(strstr(b.text, "local %v0_local"));
    if (!strstr(pb.data, "k0_conv micro=im2col")) fprintf(stderr, "%s%s", pa.data, pb.data);
    kiln_strbuf_free(&pa);
    kiln_strbuf_free(&pb);
  }
  /* a tuner's loop: change one kernel's schedule and lower again */
  CHECK_OK(kiln_sched_set_add(s, "k2_matmul", "par=none mr=2"));
  lowered c;
  CHECK_OK(lower_run(g, s, &c));
  if (c.p) {
    CHECK(c.p->scheds.data[2].mr == 2 && c.p->scheds.data[2].par == KILN_PAR_NONE);
    CHECK(!memcmp(a.out[2]->data, c.out[2]->data, (size_t)a.out[2]->numel * 4));
  }
  lowered_free(&a);
  lowered_free(&b);
  lowered_free(&c);
  kiln_sched_set_free(s);
  kiln_graph_free(g);
}

/* A schedule that cannot apply is an error naming the kernel (and the line). */
static void refused(kiln_graph *g, const char *text, const char *want) {
  kiln_sched_set *s = NULL;
  CHECK_OK(kiln_sched_set_parse(text, "bad", &s));
  lowered r;
  kiln_status st = lower_run(g, s, &r);
  const char *msg = st ? kiln_status_message(st) : "OK";
  if (!st || !strstr(msg, want)) fprintf(stderr, "want '%s', got '%s'\n", want, msg);
  CHECK(st && strstr(msg, want) && kiln_status_code(st) == KILN_ERR_INVALID);
  kiln_status_free(st);
  if (!st) lowered_free(&r);
  kiln_sched_set_free(s);
}

static void test_set_refused(void) {
  kiln_graph *g = model();
  if (!g) return;
  refused(g, "k3_Mul mr=4\n", "line 1: field 'mr' does not apply to kernel k3_Mul");
  refused(g, "k1_dwconv micro=rows\n", "micro=rows");
  refused(g, "k0_conv micro=pointwise\n", "not a 1x1 Conv");
  refused(g, "k2_matmul micro=packed\n", "B is not a constant");
  refused(g, "k0_conv par=outer\n", "par=outer");
  refused(g, "k0_conv mr=4\nk9_conv mr=4\n", "bad:2: 'k9_conv' matches no kernel");
  refused(g, "k3_Mul gpu_threads=64\n", "the cpu target has no GPU threads");
  refused(g, "k3_Mul vector=i0\n", "kernel k3_Mul: vectorize loop 'i0': it is not innermost");
  refused(g, "k3_Mul split=nosuch:2\n", "no loop 'nosuch'");
  refused(g, "k1_dwconv parallel=kp\n", "k1_dwconv");
  refused(g, "k3_Mul stage=i0:v8:local\n", "written inside it");
  refused(g, "k3_Mul tensorize=i0\n", "kernel k3_Mul: tensorize loop 'i0'");
  kiln_graph_free(g);
}

/* tensorize=LOOP: parsed, applied (the matrix-product nest becomes one MMA) and printed */
static void test_tensorize_directive(void) {
  kiln_sched_set *s = NULL;
  CHECK_OK(kiln_sched_set_parse("k_mm tensorize=m\n", "s.txt", &s));
  kiln_sched r;
  kiln_arena *a = kiln_arena_new();
  kiln_sched_set_resolve(s, "k_mm", a, &r);
  CHECK(r.n_dirs == 1 && r.dirs[0].op == KILN_SD_TENSORIZE && !strcmp(r.dirs[0].loop, "m"));
  kiln_tmodule *m = NULL;
  CHECK_OK(kiln_tmodule_parse(
      "kernel @k_mm(%a: i8[20] readonly, %b: i8[30] readonly, %c: i32[24]) {\n"
      " var $m: i64\n var $n: i64\n var $k: i64\n"
      " for $m in 0..4 serial {\n  for $n in 0..6 serial {\n   for $k in 0..5 serial {\n"
      "    %c[add(mul($m, 6), $n)] = mac(%c[add(mul($m, 6), $n)], %a[add(mul($m, 5), $k)],"
      " %b[add(mul($k, 6), $n)])\n   }\n  }\n }\n}\n",
      "k", &m));
  if (m) {
    kiln_tkernel *k = m->kernels.data[0];
    CHECK_OK(kiln_sched_apply(&r, k));
    kiln_strbuf out = {0};
    kiln_tkernel_print(k, &out);
    CHECK(strstr(out.data, "mma %c[0] += %a[0] * %b[0]") && !strstr(out.data, "for "));
    kiln_strbuf_free(&out);
    out = (kiln_strbuf){0};
    kiln_sched_print(&r, k, &out);
    CHECK(strstr(out.data, "k_mm par_min_elements=") && strstr(out.data, " tensorize=m  #"));
    /* a second time: no loop 'm' is left */
    kiln_status st = kiln_sched_apply(&r, k);
    CHECK(st && strstr(kiln_status_message(st), "no loop 'm'"));
    kiln_status_free(st);
    kiln_strbuf_free(&out);
    kiln_tmodule_free(m);
  }
  parse_fails("k0 tensorize=\n", "not FIELD=VALUE");
  kiln_arena_free(a);
  kiln_sched_set_free(s);
}

TEST_MAIN(T(test_parse), T(test_tensorize_directive), T(test_defaults_cpu),
          T(test_set_changes_kernels_not_results), T(test_set_refused))
