/* CUDA schedule of a lowered program (see lower_cuda.h): tiled shared-memory matmuls for
 * lone MatMuls, block/thread mapping of parallel loops, a one-thread form otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "lower_cuda.h"
#include "lower_ops.h"
#include "schedule.h"

static const char *const MAP_NAMES[KILN_CUDA_MAP_COUNT] = {"unused", "matmul", "parallel", "serial",
                                                           "unmapped"};

const char *kiln_cuda_map_name(kiln_cuda_map m) {
  return m >= 0 && m < KILN_CUDA_MAP_COUNT ? MAP_NAMES[m] : "?";
}

/* ---- which MatMuls become tiled GPU matmuls ---- */
typedef struct mm_dims {
  int64_t M, N, K;
} mm_dims;

static bool f32_static(const kiln_graph *g, int v, const kiln_type **t) {
  *t = v >= 0 ? kiln_lower_static(g, v) : NULL;
  return *t && (*t)->dtype == KILN_F32;
}

/* A MatMul Y = A x B with F32 values, B of rank 2 and A of rank >= 2 (batch dims of A
 * folded into M): Y is then an (M x N) row-major matrix. */
static bool gpu_matmul_dims(const kiln_graph *g, const kiln_node *n, mm_dims *d) {
  const kiln_type *a, *b, *y;
  if (n->op != KILN_OP_MatMul || n->n_inputs != 2 || n->n_outputs < 1) return false;
  if (!f32_static(g, n->inputs[0], &a) || !f32_static(g, n->inputs[1], &b) ||
      !f32_static(g, n->outputs[0], &y))
    return false;
  if (b->rank != 2 || a->rank < 2) return false;
  d->K = a->dims[a->rank - 1].value;
  d->N = b->dims[1].value;
  if (d->K < 1 || d->N < 1 || b->dims[0].value != d->K) return false;
  d->M = kiln_lower_numel(a) / d->K;
  return d->M >= 1 && kiln_lower_numel(y) == d->M * d->N;
}

kiln_fuse_class kiln_lower_cuda_fuse_class(const kiln_graph *g, const kiln_node *n) {
  mm_dims d;
  if (gpu_matmul_dims(g, n, &d)) return KILN_FUSE_OTHER;
  return kiln_lower_fuse_class(g, n);
}

/* ---- the matmul step ---- */
static kiln_arg *value_args(kiln_program *p, const int *vals, int n) {
  kiln_arg *args = kiln_arena_calloc(p->module->arena, (size_t)n, sizeof *args);
  for (int i = 0; i < n; i++) args[i] = (kiln_arg){KILN_ARG_VALUE, vals[i], 0};
  return args;
}

/* True when step s is the one kernel step of a lone MatMul node (its output bound). */
static bool lone_matmul_step(const kiln_program *p, const kiln_step *s, mm_dims *d) {
  if (s->kind != KILN_STEP_KERNEL || s->node < 0) return false;
  const kiln_node *n = &p->graph->nodes.data[s->node];
  if (!gpu_matmul_dims(p->graph, n, d)) return false;
  bool binds_out = false;
  for (int i = 0; i < s->n_args; i++)
    binds_out |= s->args[i].kind == KILN_ARG_VALUE && s->args[i].id == n->outputs[0];
  if (!binds_out) return false;
  int steps_of_node = 0;
  for (int i = 0; i < p->steps.len; i++)
    steps_of_node += p->steps.data[i].kind == KILN_STEP_KERNEL && p->steps.data[i].node == s->node;
  return steps_of_node == 1;
}

/* Replaces the kernel of step s by a tiled GPU matmul bound to A, B and Y. */
static kiln_status to_gpu_matmul(kiln_program *p, kiln_step *s, const mm_dims *d) {
  kiln_tmodule *m = p->module;
  kiln_tkernel *old = m->kernels.data[s->kernel], *k;
  char *name = kiln_arena_printf(m->arena, "%s_gemm", old->name);
  KILN_TRY(kiln_tile_gpu_matmul(m, name, d->M, d->N, d->K, &k));
  m->kernels.len--; /* the new kernel takes the old one's slot */
  m->kernels.data[s->kernel] = k;
  k->origin = old->origin;
  k->bufs.data[2].readonly = false;
  const kiln_node *n = &p->graph->nodes.data[s->node];
  int vals[3] = {n->inputs[0], n->inputs[1], n->outputs[0]};
  s->args = value_args(p, vals, 3);
  s->n_args = 3;
  s->inplace = NULL;
  return KILN_OK;
}

/* ---- other kernels ---- */
/* Wraps the body of k in `for b in 0..1 block.x { for t in 0..1 thread.x { body } }`. */
static void to_serial(kiln_tkernel *k) {
  int vb = kiln_tkernel_var(k, "one_blk", KILN_I64), vt = kiln_tkernel_var(k, "one_thr", KILN_I64);
  kiln_tstmt *blk = kiln_tfor(k, vb, kiln_tint(k, 1), KILN_LOOP_BLOCK_X);
  kiln_tstmt *thr = kiln_tfor(k, vt, kiln_tint(k, 1), KILN_LOOP_THREAD_X);
  thr->body = k->body;
  kiln_tblock_push(k, &blk->body, thr);
  k->body = (kiln_tblock){0};
  kiln_tblock_push(k, &k->body, blk);
}

static kiln_status map_kernel(kiln_tkernel *k, int threads, kiln_cuda_kinfo *info) {
  kiln_status st = kiln_tile_gpu_map(k, threads);
  if (!st) {
    info->map = KILN_CUDA_PARALLEL;
    return KILN_OK;
  }
  if (kiln_status_code(st) != KILN_ERR_UNSUPPORTED) return st;
  info->reason = kiln_arena_strdup(k->module->arena, kiln_status_message(st));
  kiln_status_free(st);
  info->map = KILN_CUDA_SERIAL;
  to_serial(k);
  return KILN_OK;
}

int kiln_cuda_launch_count(const kiln_tkernel *k) {
  return k->body.len;
}

/* The kernel's schedule record, when the lowering made one (it does for every kernel). */
static kiln_sched *sched_of(kiln_program *p, int kernel) {
  return kernel < p->scheds.len ? &p->scheds.data[kernel] : NULL;
}

static kiln_status map_steps(kiln_program *p, int threads, kiln_cuda_kinfo *info) {
  for (int i = 0; i < p->steps.len; i++) {
    kiln_step *s = &p->steps.data[i];
    mm_dims d;
    if (s->kind != KILN_STEP_KERNEL || info[s->kernel].map != KILN_CUDA_UNUSED) continue;
    kiln_sched *sc = sched_of(p, s->kernel);
    if (lone_matmul_step(p, s, &d)) {
      if (sc && (sc->set & (1u << KILN_SF_GPU_THREADS)))
        return kiln_invalid("schedule line %d: gpu_threads does not apply to kernel %s (a tiled "
                            "GPU matmul of 16x16 threads)",
                            sc->line[KILN_SF_GPU_THREADS],
                            p->module->kernels.data[s->kernel]->name);
      KILN_TRY(to_gpu_matmul(p, s, &d));
      info[s->kernel].map = KILN_CUDA_MATMUL;
      if (sc) {
        sc->gpu = KILN_TILE_GPU_MATMUL_SCHEDULE;
        sc->gpu_threads = 256;
      }
    } else {
      int t = sc && sc->gpu_threads ? sc->gpu_threads : threads;
      KILN_TRY(map_kernel(p->module->kernels.data[s->kernel], t, &info[s->kernel]));
      if (sc) sc->gpu = info[s->kernel].map == KILN_CUDA_PARALLEL ? "parallel" : "one thread";
    }
  }
  return KILN_OK;
}

kiln_status kiln_lower_cuda_map(kiln_program *p, int threads, kiln_cuda_kinfo **out_info) {
  *out_info = NULL;
  if (!p) return kiln_invalid("cuda map: no program");
  if (threads < 1 || threads > 1024)
    return kiln_invalid("cuda map: %d threads per block (1..1024)", threads);
  kiln_cuda_kinfo *info = kiln_xcalloc((size_t)p->module->kernels.len + 1, sizeof *info);
  kiln_status st = map_steps(p, threads, info);
  if (st) {
    free(info);
    return kiln_status_annotate(st, "CUDA schedule");
  }
  p->target = KILN_TARGET_CUDA;
  *out_info = info;
  return KILN_OK;
}
