/* Schedule records: the targets' defaults (every threshold named with its reason), names,
 * checks and printing (see schedule.h). Sets of overrides are in schedule_set.c. */
#include <string.h>

#include "base/mutate.h"
#include "schedule.h"
#include "tile/tile_sched.h"

/* ---- the CPU defaults and their thresholds ---- */

/* Register tile rows: 8 rows of C (each NR/16 AVX-512 vectors) plus the broadcast A value
 * and the B vectors fit the 32 vector registers without spilling. */
#define SCHED_MR 8
/* Register tile columns: 32 (two vectors a row) unless the product is at most 16 wide, where
 * a 32-wide tile would compute mostly padding. */
#define SCHED_NR_WIDE 32
#define SCHED_NR_NARROW 16
#define SCHED_NR_NARROW_MAX_N 16
/* A non-constant B of at most this many contiguous columns is read in place as one panel:
 * packing it would cost as much as the product reads it; wider ones are packed so the
 * microkernel streams contiguous panels. */
#define SCHED_INPLACE_MAX_N 64
/* Products under 2e6 flops (about a millisecond's tenth on one core) run on one thread:
 * waking the pool costs more than splitting such work saves. */
#define SCHED_PAR_MIN_FLOPS 2e6
/* Row-aligned conv panels (micro=rows) compute (ppr*NR - OW) padding columns a row: used
 * when rows are at least 24 wide and at most a quarter of the work is padding; narrower
 * rows lose more to the padding than the bounds-test-free copy gains. */
#define SCHED_ROWS_MIN_WIDTH 24
#define SCHED_ROWS_MIN_USE 0.75
/* A depthwise conv copies each channel's padded plane into a LOCAL buffer (micro=plane)
 * when it has at most 2^17 elements (512 KiB of f32): the copy lives on a thread's stack,
 * which is 8 MiB for the main thread but far less for pool threads. */
#define SCHED_PLANE_MAX ((int64_t)1 << 17)
/* Largest register tile a schedule file may ask for (a LOCAL tile of MR*NR elements). */
#define SCHED_MR_MAX 32
#define SCHED_NR_MAX 128

static bool is_set(const kiln_sched *s, kiln_sched_field f) {
  return s->set & (1u << f);
}

static kiln_status field_error(const kiln_sched *s, kiln_sched_field f, const char *value,
                               const char *what) {
  return kiln_invalid("schedule line %d: %s=%s: %s", s->line[f], kiln_sched_field_name(f), value,
                      what);
}

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/* The N the GEMM runs over: row-aligned conv panels pad each output row to whole panels. */
static int64_t gemm_n(const kiln_sched_facts *f, const kiln_sched *s) {
  if (s->micro == KILN_MICRO_ROWS) return f->out_h * ceil_div(f->out_w, s->nr) * s->nr;
  return f->N;
}

static bool rows_pay(const kiln_sched_facts *f, int nr) {
  if (f->nsp != 2) return false;
  int64_t ppr = ceil_div(f->out_w, nr);
  return f->out_w >= SCHED_ROWS_MIN_WIDTH &&
         (double)f->out_w / (double)(ppr * nr) >= SCHED_ROWS_MIN_USE;
}

static kiln_sched_micro gemm_micro(const kiln_sched_facts *f, int nr) {
  if (f->is_conv) {
    if (f->pointwise) return KILN_MICRO_POINTWISE;
    return rows_pay(f, nr) ? KILN_MICRO_ROWS : KILN_MICRO_IM2COL;
  }
  if (f->b_const) return KILN_MICRO_PACKED;
  /* mutant 363: the contiguity of B not asked (a transposed input B taken in place) */
  return (f->b_contig || KILN_MUTANT(363)) && f->N <= SCHED_INPLACE_MAX_N ? KILN_MICRO_INPLACE
                                                                          : KILN_MICRO_SCRATCH;
}

/* Whether micro m can compute this kernel (a set one is checked with it). */
static const char *micro_unfit(const kiln_sched_facts *f, kiln_sched_micro m) {
  switch (m) {
  case KILN_MICRO_PACKED: return f->is_conv || !f->b_const ? "B is not a constant" : NULL;
  case KILN_MICRO_INPLACE:
    if (f->is_conv || f->b_const || !f->b_contig) return "B is not a contiguous input";
    return f->N > SCHED_NR_MAX ? "B is wider than the widest tile (128)" : NULL;
  case KILN_MICRO_SCRATCH: return f->is_conv || f->b_const ? "B is not an input" : NULL;
  case KILN_MICRO_IM2COL: return f->is_conv ? NULL : "not a Conv";
  case KILN_MICRO_ROWS: return f->is_conv && f->nsp == 2 ? NULL : "not a 2-D Conv";
  case KILN_MICRO_POINTWISE: return f->is_conv && f->pointwise ? NULL : "not a 1x1 Conv";
  default: return "not a form of a GEMM";
  }
}

static double split_eff(int64_t n, int threads) {
  if (n <= 0) return 0;
  int64_t rounds = (n + threads - 1) / threads;
  return (double)n / (double)(rounds * threads);
}

/* The loop that splits most evenly over the threads (batches, panels, or row blocks of
 * which the tail runs after the parallel loop, on one thread); tiny products run serially. */
kiln_sched_par kiln_sched_gemm_par(const kiln_sched_facts *f, const kiln_sched *s) {
  int64_t n = gemm_n(f, s), np = ceil_div(n, s->nr);
  double flops = 2.0 * (double)f->M * (double)n * (double)f->K * (double)f->batch;
  int t = f->threads;
  if (t <= 1 || (flops < SCHED_PAR_MIN_FLOPS && !f->stress)) return KILN_PAR_NONE;
  double eb = f->batch > 1 ? split_eff(f->batch, t) : 0, ep = split_eff(np, t);
  int64_t full = f->M / s->mr;
  double em = full > 0 ? split_eff(full, t) * (double)(full * s->mr) / (double)f->M : 0;
  if (s->micro == KILN_MICRO_INPLACE) ep = 0;
  if (eb >= ep && eb >= em && eb > 0) return KILN_PAR_BATCH;
  if (ep >= em) return KILN_PAR_PANELS;
  return KILN_PAR_ROWS;
}

static kiln_status gemm_defaults(const kiln_sched_facts *f, kiln_sched *s) {
  if (!is_set(s, KILN_SF_MR)) s->mr = SCHED_MR;
  if (!is_set(s, KILN_SF_NR))
    s->nr = f->N <= SCHED_NR_NARROW_MAX_N ? SCHED_NR_NARROW : SCHED_NR_WIDE;
  if (!is_set(s, KILN_SF_MICRO)) s->micro = gemm_micro(f, s->nr);
  const char *why = micro_unfit(f, s->micro);
  if (why) return field_error(s, KILN_SF_MICRO, kiln_sched_micro_name(s->micro), why);
  if (s->micro == KILN_MICRO_INPLACE) {
    if (is_set(s, KILN_SF_NR) && s->nr != f->N)
      return field_error(s, KILN_SF_NR, "N", "an in-place B is one panel: nr is its width");
    s->nr = (int)f->N;
  }
  if (!is_set(s, KILN_SF_PAR)) s->par = kiln_sched_gemm_par(f, s);
  if (s->par == KILN_PAR_OUTER)
    return field_error(s, KILN_SF_PAR, "outer", "a GEMM splits batch, panels or rows");
  return KILN_OK;
}

static kiln_status dwconv_defaults(const kiln_sched_facts *f, kiln_sched *s) {
  bool fits = f->nsp == 2 && f->plane <= SCHED_PLANE_MAX;
  if (!is_set(s, KILN_SF_MICRO)) s->micro = fits ? KILN_MICRO_PLANE : KILN_MICRO_DIRECT;
  if (s->micro == KILN_MICRO_PLANE && !fits)
    return field_error(s, KILN_SF_MICRO, "plane",
                       "needs a 2-D conv whose padded plane has at most 131072 elements");
  if (s->micro != KILN_MICRO_PLANE && s->micro != KILN_MICRO_DIRECT)
    return field_error(s, KILN_SF_MICRO, kiln_sched_micro_name(s->micro),
                       "a depthwise Conv is plane or direct");
  bool par = f->threads > 1 && ((double)f->flops >= SCHED_PAR_MIN_FLOPS || f->stress);
  if (!is_set(s, KILN_SF_PAR)) s->par = par ? KILN_PAR_OUTER : KILN_PAR_NONE;
  if (s->par != KILN_PAR_OUTER && s->par != KILN_PAR_NONE)
    return field_error(s, KILN_SF_PAR, kiln_sched_par_name(s->par),
                       "a depthwise Conv is none or outer");
  return KILN_OK;
}

/* CPU: see the thresholds above; nests follow KILN_LOWER_PAR_MIN_ELEMENTS (lower.h). */
kiln_status kiln_sched_defaults_cpu(const kiln_sched_facts *f, kiln_sched *s) {
  s->kind = f->kind;
  if (is_set(s, KILN_SF_GPU_THREADS))
    return field_error(s, KILN_SF_GPU_THREADS, "N", "the cpu target has no GPU threads");
  if (!is_set(s, KILN_SF_PAR_MIN_ELEMENTS))
    s->par_min_elements = f->stress ? 0 : KILN_LOWER_PAR_MIN_ELEMENTS;
  if (f->kind == KILN_SCHED_GEMM) return gemm_defaults(f, s);
  if (f->kind == KILN_SCHED_DWCONV) return dwconv_defaults(f, s);
  return KILN_OK;
}

/* CUDA: the CPU-shaped lowering planned for a block's threads (f->threads), then every
 * parallel loop becomes blocks of gpu_threads threads (lower_cuda.c); every nest is
 * parallel whatever its size, since a GPU kernel's one alternative is one thread. */
kiln_status kiln_sched_defaults_cuda(const kiln_sched_facts *f, kiln_sched *s) {
  unsigned gpu = s->set & (1u << KILN_SF_GPU_THREADS);
  s->set &= ~gpu;
  kiln_status st = kiln_sched_defaults_cpu(f, s);
  s->set |= gpu;
  if (st) return st;
  if (!is_set(s, KILN_SF_PAR_MIN_ELEMENTS)) s->par_min_elements = 0;
  if (!gpu) s->gpu_threads = f->threads;
  return KILN_OK;
}

int kiln_sched_nest_parallel(int64_t total, int64_t par_min_elements, int n, const int64_t *exts) {
  if (total < par_min_elements) return -1;
  for (int d = 0; d < n; d++)
    if (exts[d] > 1) return d;
  return -1;
}

kiln_sched_defaults_fn kiln_sched_defaults_for(kiln_target_id t) {
  return t == KILN_TARGET_CUDA ? kiln_sched_defaults_cuda : kiln_sched_defaults_cpu;
}

/* ---- names ---- */

static const char *const MICRO_NAMES[KILN_MICRO_COUNT] = {
    "auto", "packed", "inplace", "scratch", "im2col", "rows", "pointwise", "plane", "direct"};
static const char *const PAR_NAMES[KILN_PAR_COUNT] = {"auto",   "none", "batch",
                                                      "panels", "rows", "outer"};
static const char *const KIND_NAMES[KILN_SCHED_KIND_COUNT] = {"nest", "gemm", "dwconv"};
static const char *const FIELD_NAMES[KILN_SF_COUNT] = {
    "micro", "mr", "nr", "par", "par_min_elements", "gpu_threads"};

const char *kiln_sched_micro_name(kiln_sched_micro m) {
  return m >= 0 && m < KILN_MICRO_COUNT ? MICRO_NAMES[m] : "?";
}
const char *kiln_sched_par_name(kiln_sched_par p) {
  return p >= 0 && p < KILN_PAR_COUNT ? PAR_NAMES[p] : "?";
}
const char *kiln_sched_kind_name(kiln_sched_kind k) {
  return k >= 0 && k < KILN_SCHED_KIND_COUNT ? KIND_NAMES[k] : "?";
}
const char *kiln_sched_field_name(kiln_sched_field f) {
  return f >= 0 && f < KILN_SF_COUNT ? FIELD_NAMES[f] : "?";
}

/* ---- checks and directives ---- */

/* Fields each kind reads (gpu_threads: any kind, checked by the CUDA defaults). */
static unsigned kind_fields(kiln_sched_kind k) {
  unsigned gpu = 1u << KILN_SF_GPU_THREADS;
  switch (k) {
  case KILN_SCHED_GEMM:
    return gpu | 1u << KILN_SF_MICRO | 1u << KILN_SF_MR | 1u << KILN_SF_NR | 1u << KILN_SF_PAR;
  case KILN_SCHED_DWCONV: return gpu | 1u << KILN_SF_MICRO | 1u << KILN_SF_PAR;
  default: return gpu | 1u << KILN_SF_PAR_MIN_ELEMENTS;
  }
}

kiln_status kiln_sched_check_fields(const kiln_sched *s, const kiln_tkernel *k) {
  unsigned bad = s->set & ~kind_fields(s->kind);
  for (int f = 0; f < KILN_SF_COUNT; f++)
    if (bad & (1u << f))
      return kiln_invalid("schedule line %d: field '%s' does not apply to kernel %s (a %s "
                          "kernel)",
                          s->line[f], kiln_sched_field_name(f), k->name,
                          kiln_sched_kind_name(s->kind));
  return KILN_OK;
}

static int buf_id(const kiln_tkernel *k, const char *name) {
  for (int i = 0; i < k->bufs.len; i++)
    if (!strcmp(k->bufs.data[i].name, name)) return i;
  return -1;
}

static kiln_status apply_one(const kiln_sched_dir *d, kiln_tkernel *k) {
  kiln_tstmt *loop = kiln_tsched_find(k, d->loop);
  if (!loop) return kiln_invalid("no loop '%s' (or more than one)", d->loop);
  char o[96], i[96];
  switch (d->op) {
  case KILN_SD_SPLIT: {
    /* a vector or unrolled loop's kind goes to the inner loop, others stay outside */
    kiln_loop_kind kind = loop->loop;
    bool inner = kind == KILN_LOOP_VECTOR || kind == KILN_LOOP_UNROLL;
    snprintf(o, sizeof o, "%s_o", d->loop);
    snprintf(i, sizeof i, "%s_i", d->loop);
    KILN_TRY(
        kiln_tsched_split(k, loop, d->factor, o, i, inner ? kind : KILN_LOOP_SERIAL, true, NULL));
    if (inner) loop->loop = KILN_LOOP_SERIAL;
    return KILN_OK;
  }
  case KILN_SD_REORDER: return kiln_tsched_reorder(k, loop);
  case KILN_SD_BIND: return kiln_tsched_bind(k, loop, d->kind);
  case KILN_SD_VECTORIZE: return kiln_tsched_vectorize(k, loop);
  case KILN_SD_UNROLL: return kiln_tsched_unroll(k, loop);
  case KILN_SD_TENSORIZE: return kiln_tsched_tensorize(k, loop);
  default: {
    int b = buf_id(k, d->buf);
    if (b < 0) return kiln_invalid("no buffer '%s'", d->buf);
    return kiln_tsched_stage(k, loop, b, d->scope, NULL);
  }
  }
}

kiln_status kiln_sched_apply(const kiln_sched *s, kiln_tkernel *k) {
  for (int i = 0; i < s->n_dirs; i++) {
    kiln_status st = apply_one(&s->dirs[i], k);
    if (st)
      return kiln_status_annotate(st, "schedule line %d: kernel %s", s->dirs[i].line, k->name);
  }
  if (!s->n_dirs) return KILN_OK;
  kiln_status st = kiln_tkernel_verify(k);
  if (!st) return KILN_OK;
  kiln_status bad = kiln_invalid("schedule: kernel %s does not verify after its directives: %s",
                                 k->name, kiln_status_message(st));
  kiln_status_free(st);
  return bad;
}

/* ---- printing ---- */

static void print_loops(const kiln_tkernel *k, const kiln_tblock *b, kiln_strbuf *out) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR)
      kiln_strbuf_printf(out, " %s:%s", k->vars.data[s->var].name, kiln_loop_kind_name(s->loop));
    print_loops(k, &s->body, out);
    print_loops(k, &s->orelse, out);
  }
}

static const char *const OP_NAMES[KILN_SD_COUNT] = {"split",  "reorder", "bind",     "vectorize",
                                                    "unroll", "stage",   "tensorize"};

static void print_dir(const kiln_sched_dir *d, kiln_strbuf *out) {
  switch (d->op) {
  case KILN_SD_SPLIT:
    kiln_strbuf_printf(out, " split=%s:%lld", d->loop, (long long)d->factor);
    break;
  case KILN_SD_BIND:
    kiln_strbuf_printf(out, " bind=%s:%s", d->loop, kiln_loop_kind_name(d->kind));
    break;
  case KILN_SD_STAGE:
    kiln_strbuf_printf(out, " stage=%s:%s:%s", d->loop, d->buf, kiln_tscope_name(d->scope));
    break;
  default: kiln_strbuf_printf(out, " %s=%s", OP_NAMES[d->op], d->loop); break;
  }
}

void kiln_sched_print(const kiln_sched *s, const kiln_tkernel *k, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "%s", k->name);
  if (s->kind != KILN_SCHED_NEST)
    kiln_strbuf_printf(out, " micro=%s", kiln_sched_micro_name(s->micro));
  if (s->kind == KILN_SCHED_GEMM) kiln_strbuf_printf(out, " mr=%d nr=%d", s->mr, s->nr);
  if (s->kind != KILN_SCHED_NEST) kiln_strbuf_printf(out, " par=%s", kiln_sched_par_name(s->par));
  if (s->kind == KILN_SCHED_NEST)
    kiln_strbuf_printf(out, " par_min_elements=%lld", (long long)s->par_min_elements);
  if (s->gpu_threads) kiln_strbuf_printf(out, " gpu_threads=%d", s->gpu_threads);
  for (int i = 0; i < s->n_dirs; i++) print_dir(&s->dirs[i], out);
  kiln_strbuf_printf(out, "  # %s%s%s; loops", kiln_sched_kind_name(s->kind),
                     s->gpu ? ", gpu " : "", s->gpu ? s->gpu : "");
  print_loops(k, &k->body, out);
  kiln_strbuf_printf(out, "; buffers");
  for (int i = 0; i < k->n_params; i++) kiln_strbuf_printf(out, " %s", k->bufs.data[i].name);
}

void kiln_program_print_schedules(const kiln_program *p, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "schedules:\n");
  for (int i = 0; i < p->module->kernels.len && i < p->scheds.len; i++) {
    kiln_strbuf_printf(out, "  ");
    kiln_sched_print(&p->scheds.data[i], p->module->kernels.data[i], out);
    kiln_strbuf_printf(out, "\n");
  }
}
