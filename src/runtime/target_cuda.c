/* The cuda target, compile only: after the shared prologue of the driver (passes with the
 * CUDA fusion classes, lowering planned for a block's threads), map: the CUDA schedule
 * (src/lower/lower_cuda.h); emit: CUDA C, one __global__ function per launch; build: PTX
 * with NVRTC when it can be loaded. Builds the launch manifest and the counts of the report;
 * nothing here touches a GPU (the runtime slots are NULL: the next step is a CUDA runtime). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "graph/graph_text.h"
#include "lower/schedule.h"
#include "rt_internal.h"

/* ---- the lowering's view and map ---- */
static int block_threads(const kiln_compile_opts *o) {
  return o->cuda.threads_per_block > 0 ? o->cuda.threads_per_block : 256;
}

/* The CPU-shaped lowering plans for as many workers as a block has threads. */
static kiln_status cuda_lower_opts(const kiln_compile_opts *o, kiln_lower_opts *lo) {
  if (o->cuda.threads_per_block < 0 || o->cuda.threads_per_block > 1024)
    return kiln_invalid("CUDA: %d threads per block (1..1024)", o->cuda.threads_per_block);
  lo->threads = block_threads(o);
  return KILN_OK;
}

static kiln_status cuda_map(kiln_compiled *c, const kiln_compile_opts *o) {
  kiln_cuda_build *b = kiln_xcalloc(1, sizeof *b);
  c->impl = b;
  b->prog = c->prog;
  b->arch = o->cuda.arch ? o->cuda.arch : "compute_90";
  return kiln_lower_cuda_map(c->prog, block_threads(o), &b->info);
}

/* ---- CUDA C, one function per launch ---- */
static int64_t shared_bytes(const kiln_tkernel *k) {
  int64_t n = 0;
  for (int i = k->n_params; i < k->bufs.len; i++)
    if (k->bufs.data[i].scope == KILN_SCOPE_SHARED)
      n += k->bufs.data[i].size * (int64_t)kiln_dtype_size(k->bufs.data[i].dtype);
  return n;
}

/* The launches of kernel k (step `step`) appended to src and b->launches; on failure the
 * kernel is marked UNMAPPED and neither is changed. */
static void emit_kernel(kiln_cuda_build *b, int step, int ki, kiln_strbuf *src) {
  const kiln_tkernel *k = b->prog->module->kernels.data[ki];
  kiln_codegen_opts o = kiln_codegen_opts_default();
  int n = kiln_cuda_launch_count(k), base = b->launches.len;
  kiln_strbuf text = {0};
  kiln_status st = KILN_OK;
  for (int i = 0; i < n && !st; i++) {
    kiln_tkernel part = *k;
    part.body.len = 1;
    part.body.data = &k->body.data[i];
    if (n > 1) part.name = kiln_arena_printf(k->module->arena, "%s_l%d", k->name, i);
    kiln_cuda_launch l = {part.name, step, ki, {1, 1, 1}, {1, 1, 1}, shared_bytes(k)};
    st = kiln_codegen_cuda_kernel(&part, &o, &text);
    if (!st) st = kiln_codegen_cuda_launch(&part, l.grid, l.block);
    if (!st) kiln_vec_push(&b->launches, l);
  }
  if (st) {
    b->launches.len = base;
    b->info[ki].map = KILN_CUDA_UNMAPPED;
    b->info[ki].reason = kiln_arena_strdup(k->module->arena, kiln_status_message(st));
    kiln_status_free(st);
  } else if (text.len) {
    kiln_strbuf_append(src, text.data, text.len);
  }
  kiln_strbuf_free(&text);
}

static kiln_status emit_all(kiln_cuda_build *b) {
  kiln_codegen_opts o = kiln_codegen_opts_default();
  KILN_TRY(kiln_codegen_cuda_prelude(&o, &b->source));
  const kiln_program *p = b->prog;
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    b->n_fallback_steps += s->kind == KILN_STEP_FALLBACK;
    b->n_alias_steps += s->kind == KILN_STEP_ALIAS;
    if (s->kind == KILN_STEP_KERNEL) emit_kernel(b, i, s->kernel, &b->source);
  }
  return KILN_OK;
}

static void count(kiln_cuda_build *b) {
  const kiln_tmodule *m = b->prog->module;
  for (int i = 0; i < m->kernels.len; i++) {
    kiln_cuda_map map = b->info[i].map;
    b->n_map[map]++;
    if (map == KILN_CUDA_UNUSED) continue;
    b->n_kernels++;
    if (map != KILN_CUDA_UNMAPPED && shared_bytes(m->kernels.data[i]) > 0) b->n_shared++;
  }
}

/* ---- NVRTC ---- */
static void compile_ptx(kiln_cuda_build *b) {
  double t0 = kiln_clock_seconds();
  kiln_status st = kiln_codegen_cuda_ptx(b->source.data, b->arch, &b->ptx);
  b->seconds_nvrtc = kiln_clock_seconds() - t0;
  b->nvrtc_found = !st || kiln_status_code(st) != KILN_ERR_UNSUPPORTED;
  b->nvrtc_ok = !st;
  if (st && b->nvrtc_found) b->nvrtc_log = kiln_xstrdup(kiln_status_message(st));
  kiln_status_free(st);
}

static void cuda_release(kiln_compiled *c) {
  kiln_cuda_build *b = c->impl;
  if (!b) return;
  free(b->info);
  kiln_strbuf_free(&b->source);
  kiln_vec_free(&b->launches);
  free(b->ptx);
  free(b->nvrtc_log);
  free(b);
  c->impl = NULL;
}

static kiln_status cuda_emit(kiln_compiled *c, const kiln_compile_opts *o) {
  (void)o;
  kiln_cuda_build *b = c->impl;
  KILN_TRY(emit_all(b));
  count(b);
  return KILN_OK;
}

/* NVRTC, unless the options say not to; the report's times of the stages before. */
static kiln_status cuda_build(kiln_compiled *c, const kiln_compile_opts *o) {
  kiln_cuda_build *b = c->impl;
  b->seconds_passes = c->stats.seconds[KILN_STAGE_PASSES];
  b->seconds_lower = c->stats.seconds[KILN_STAGE_LOWER];
  b->seconds_codegen = c->stats.seconds[KILN_STAGE_CODEGEN];
  if (!o->cuda.no_nvrtc) compile_ptx(b);
  return KILN_OK;
}

const kiln_cuda_build *kiln_compiled_cuda(const kiln_compiled *c) {
  return c && c->target == &kiln_target_cuda ? c->impl : NULL;
}

/* ---- report and manifest ----
 * Names from the model are data: value names as in the IR text (%name, or %"..." quoted with
 * escapes), node labels, origins and reasons through kiln_esc_line, so each record stays one
 * line whatever the names hold. */
static void put_line(kiln_strbuf *out, const char *s) {
  kiln_esc_line(out, s ? s : "");
}

static void put_label(kiln_strbuf *out, const kiln_node *n) {
  char lb[200];
  put_line(out, kiln_node_label(n, lb, sizeof lb));
}

static void report_kernels(const kiln_cuda_build *b, kiln_strbuf *out) {
  const kiln_program *p = b->prog;
  for (int i = 0; i < p->module->kernels.len; i++) {
    const kiln_cuda_kinfo *ki = &b->info[i];
    if (ki->map != KILN_CUDA_SERIAL && ki->map != KILN_CUDA_UNMAPPED) continue;
    kiln_strbuf_printf(out, "  %s %s (", kiln_cuda_map_name(ki->map),
                       p->module->kernels.data[i]->name);
    put_line(out, p->module->kernels.data[i]->origin);
    kiln_strbuf_printf(out, "): ");
    put_line(out, ki->reason);
    kiln_strbuf_printf(out, "\n");
  }
  for (int i = 0; i < p->steps.len; i++) {
    if (p->steps.data[i].kind != KILN_STEP_FALLBACK) continue;
    kiln_strbuf_printf(out, "  fallback ");
    put_label(out, &p->graph->nodes.data[p->steps.data[i].node]);
    kiln_strbuf_printf(out, ": ");
    put_line(out, p->steps.data[i].reason);
    kiln_strbuf_printf(out, "\n");
  }
}
void kiln_cuda_build_report(const kiln_cuda_build *b, kiln_strbuf *out) {
  const kiln_program *p = b->prog;
  kiln_strbuf_printf(out,
                     "CUDA kernels: %d (%d launches): %d tiled matmul (shared memory), %d "
                     "parallel loops -> blocks x threads, %d one thread, %d not mappable; "
                     "%d use shared memory\n",
                     b->n_kernels, b->launches.len, b->n_map[KILN_CUDA_MATMUL],
                     b->n_map[KILN_CUDA_PARALLEL], b->n_map[KILN_CUDA_SERIAL],
                     b->n_map[KILN_CUDA_UNMAPPED], b->n_shared);
  kiln_strbuf_printf(out, "steps: %d (%d fallback to host reference kernels, %d aliases)\n",
                     p->steps.len, b->n_fallback_steps, b->n_alias_steps);
  report_kernels(b, out);
  kiln_program_print_schedules(b->prog, out);
  kiln_strbuf_printf(out, "time: passes %.3f s, lowering+schedule %.3f s, CUDA C %.3f s\n",
                     b->seconds_passes, b->seconds_lower, b->seconds_codegen);
  if (!b->nvrtc_found) kiln_strbuf_printf(out, "NVRTC: not found (no PTX)\n");
  else if (b->nvrtc_ok)
    kiln_strbuf_printf(out, "NVRTC %s: %d launches compiled to PTX (%zu bytes) in %.2f s\n",
                       b->arch, b->launches.len, b->ptx ? strlen(b->ptx) : (size_t)0,
                       b->seconds_nvrtc);
  else
    kiln_strbuf_printf(out, "NVRTC %s: FAILED in %.2f s:\n%s\n", b->arch, b->seconds_nvrtc,
                       b->nvrtc_log ? b->nvrtc_log : "");
}

static void print_binding(const kiln_program *p, const kiln_arg *a, kiln_strbuf *out) {
  if (a->kind == KILN_ARG_VALUE) kiln_gtext_name(out, '%', p->graph->values.data[a->id].name);
  else if (a->kind == KILN_ARG_PACKED) kiln_strbuf_printf(out, "packed[%d]", a->id);
  else kiln_strbuf_printf(out, "scratch[%lld]", (long long)a->bytes);
}

static void manifest_launch(const kiln_cuda_build *b, const kiln_cuda_launch *l, kiln_strbuf *out) {
  const kiln_step *s = &b->prog->steps.data[l->step];
  const kiln_tkernel *k = b->prog->module->kernels.data[l->kernel];
  kiln_strbuf_printf(out, "step %d launch %s grid %lld %lld %lld block %lld %lld %lld shared %lld",
                     l->step, l->name, (long long)l->grid[0], (long long)l->grid[1],
                     (long long)l->grid[2], (long long)l->block[0], (long long)l->block[1],
                     (long long)l->block[2], (long long)l->shared_bytes);
  for (int i = 0; i < s->n_args && i < k->n_params; i++) {
    kiln_strbuf_printf(out, " %s=", k->bufs.data[i].name);
    print_binding(b->prog, &s->args[i], out);
  }
  kiln_strbuf_printf(out, "\n");
}

static void manifest_step(const kiln_cuda_build *b, int i, int *li, kiln_strbuf *out) {
  const kiln_program *p = b->prog;
  const kiln_step *s = &p->steps.data[i];
  if (s->kind == KILN_STEP_ALIAS) {
    kiln_strbuf_printf(out, "step %d alias ", i);
    kiln_gtext_name(out, '%', p->graph->values.data[s->dst].name);
    kiln_strbuf_printf(out, " = ");
    kiln_gtext_name(out, '%', p->graph->values.data[s->src].name);
    kiln_strbuf_printf(out, "\n");
  } else if (s->kind == KILN_STEP_FALLBACK) {
    kiln_strbuf_printf(out, "step %d host-reference ", i);
    put_label(out, &p->graph->nodes.data[s->node]);
    kiln_strbuf_printf(out, "\n");
  } else if (b->info[s->kernel].map == KILN_CUDA_UNMAPPED) {
    kiln_strbuf_printf(out, "step %d unmapped %s\n", i, p->module->kernels.data[s->kernel]->name);
  }
  for (; *li < b->launches.len && b->launches.data[*li].step == i; (*li)++)
    manifest_launch(b, &b->launches.data[*li], out);
}

static kiln_status write_text(const char *dir, const char *name, const char *data, size_t len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return kiln_write_file(path, data ? data : "", data ? len : 0);
}

void kiln_cuda_build_manifest(const kiln_cuda_build *b, kiln_strbuf *out) {
  kiln_strbuf_printf(out,
                     "# Kiln CUDA launch manifest (source model.cu, compile with %s for %s).\n"
                     "# Steps run in order. `launch NAME grid X Y Z block X Y Z shared BYTES "
                     "PARAM=VALUE...`\n# binds each kernel parameter to a graph value "
                     "(%%name as in the IR text: %%\"...\" quoted with escapes unless bare), "
                     "a prepacked constant (packed[i]) or scratch[bytes].\n",
                     KILN_CODEGEN_NVRTC_FLAGS, b->arch);
  int li = 0;
  for (int i = 0; i < b->prog->steps.len; i++) manifest_step(b, i, &li, out);
}

static void cuda_report(const kiln_compiled *c, kiln_strbuf *out) {
  kiln_cuda_build_report(c->impl, out);
}

kiln_status kiln_cuda_build_write(const kiln_cuda_build *b, const char *dir) {
  kiln_strbuf man = {0}, rep = {0};
  kiln_cuda_build_manifest(b, &man);
  kiln_cuda_build_report(b, &rep);
  kiln_status st = write_text(dir, "model.cu", b->source.data, b->source.len);
  if (!st) st = write_text(dir, "launch.txt", man.data, man.len);
  if (!st) st = write_text(dir, "report.txt", rep.data, rep.len);
  if (!st && b->ptx) st = write_text(dir, "model.ptx", b->ptx, strlen(b->ptx));
  if (!st && !b->ptx) { /* no PTX this time: an earlier one must not pass for this model's */
    char path[4200];
    snprintf(path, sizeof path, "%s/model.ptx", dir);
    if (remove(path) != 0 && errno != ENOENT)
      st = kiln_system_error("cannot remove the earlier '%s'", path);
  }
  kiln_strbuf_free(&man);
  kiln_strbuf_free(&rep);
  return st;
}

const kiln_target kiln_target_cuda = {
    .id = KILN_TARGET_CUDA,
    .name = "cuda",
    .summary = "CUDA C and PTX with NVRTC (compile only: no GPU runtime yet)",
    .fuse_class = kiln_lower_cuda_fuse_class,
    .sched_defaults = kiln_sched_defaults_cuda,
    .supports_node = NULL, /* every node the lowering lowers; others run on the host */
    .lower_opts = cuda_lower_opts,
    .map = cuda_map,
    .emit = cuda_emit,
    .build = cuda_build,
    .report = cuda_report,
    .release = cuda_release,
    /* the runtime slots: NULL until the CUDA runtime exists (compile only) */
};
