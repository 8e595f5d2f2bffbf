/* The CUDA target: passes -> lowering -> CUDA schedule (src/lower/lower_cuda.h) -> CUDA C,
 * one __global__ function per launch -> PTX with NVRTC. Builds the launch manifest and the
 * counts of the report; nothing here touches a GPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "graph/graph_text.h"
#include "lower/schedule.h"
#include "rt_internal.h"

/* ---- passes and lowering ---- */
static kiln_status check_inputs(const kiln_graph *g) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    if (v->type.kind == KILN_TYPE_TENSOR && !kiln_type_is_static(&v->type))
      return kiln_invalid("input '%s' has symbolic dims: bind them before compiling", v->name);
  }
  return KILN_OK;
}

static kiln_status front(kiln_graph *g, const kiln_compile_opts *o, const kiln_cuda_opts *co,
                         kiln_cuda_build *b) {
  double t0 = kiln_clock_seconds();
  KILN_TRY(kiln_rt_bind_opts(g, o));
  KILN_TRY(check_inputs(g));
  kiln_pass_opts po = o->passes;
  po.fuse_classify = kiln_lower_cuda_fuse_class;
  KILN_TRY(kiln_passes_run(g, &po, NULL));
  double t1 = kiln_clock_seconds();
  b->seconds_passes = t1 - t0;
  int tpb = co->threads_per_block > 0 ? co->threads_per_block : 256;
  /* the CPU schedule plans for as many workers as a block has threads */
  kiln_lower_opts lo = {KILN_TARGET_CUDA, tpb, o->force_fallback, &o->precision};
  KILN_TRY(kiln_lower_scheduled(g, &lo, o->schedule, &b->prog));
  KILN_TRY(kiln_lower_cuda_map(b->prog, tpb, &b->info));
  b->seconds_lower = kiln_clock_seconds() - t1;
  return KILN_OK;
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
  double t0 = kiln_clock_seconds();
  kiln_codegen_opts o = kiln_codegen_opts_default();
  KILN_TRY(kiln_codegen_cuda_prelude(&o, &b->source));
  const kiln_program *p = b->prog;
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    b->n_fallback_steps += s->kind == KILN_STEP_FALLBACK;
    b->n_alias_steps += s->kind == KILN_STEP_ALIAS;
    if (s->kind == KILN_STEP_KERNEL) emit_kernel(b, i, s->kernel, &b->source);
  }
  b->seconds_codegen = kiln_clock_seconds() - t0;
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

kiln_status kiln_compile_cuda(kiln_graph *g, const kiln_compile_opts *o, const kiln_cuda_opts *co,
                              kiln_cuda_build **out) {
  *out = NULL;
  kiln_compile_opts dflt;
  kiln_cuda_opts cdflt = {0};
  if (!o) kiln_compile_opts_init(&dflt), o = &dflt;
  if (!co) co = &cdflt;
  if (co->threads_per_block < 0 || co->threads_per_block > 1024)
    return kiln_invalid("CUDA: %d threads per block (1..1024)", co->threads_per_block);
  kiln_cuda_build *b = kiln_xcalloc(1, sizeof *b);
  b->arch = co->arch ? co->arch : "compute_90";
  kiln_status st = front(g, o, co, b);
  if (!st) st = emit_all(b);
  if (st) {
    kiln_cuda_build_free(b);
    return kiln_status_annotate(st, "compiling for CUDA");
  }
  count(b);
  if (!co->no_nvrtc) compile_ptx(b);
  *out = b;
  return KILN_OK;
}

void kiln_cuda_build_free(kiln_cuda_build *b) {
  if (!b) return;
  kiln_program_free(b->prog);
  free(b->info);
  kiln_strbuf_free(&b->source);
  kiln_vec_free(&b->launches);
  free(b->ptx);
  free(b->nvrtc_log);
  free(b);
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
