/* Profiling a compiled program: time per step, by kind, and the slowest steps. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_text.h"
#include "rt_internal.h"

#define PROFILE_TOP 15

static _Thread_local const double *g_times; /* qsort context */
static int cmp_time_desc(const void *a, const void *b) {
  double x = g_times[*(const int *)a], y = g_times[*(const int *)b];
  return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

static void print_step(const kiln_compiled *c, int s, double ms, double total, kiln_strbuf *out) {
  const kiln_step *st = &c->prog->steps.data[s];
  char lb[200];
  kiln_strbuf_printf(out, "  %9.3f ms %5.1f%%  step %d: ", ms, total > 0 ? 100 * ms / total : 0, s);
  if (st->kind == KILN_STEP_KERNEL) {
    const kiln_tkernel *k = c->prog->module->kernels.data[st->kernel];
    kiln_strbuf_printf(out, "kernel %s (", k->name); /* names from the model: one line */
    kiln_esc_line(out, k->origin ? k->origin : "");
    kiln_strbuf_printf(out, ")\n");
  } else if (st->kind == KILN_STEP_FALLBACK) {
    kiln_strbuf_printf(out, "fallback ");
    kiln_esc_line(out, kiln_node_label(&c->g->nodes.data[st->node], lb, sizeof lb));
    kiln_strbuf_printf(out, "\n");
  } else {
    kiln_strbuf_printf(out, "alias ");
    kiln_gtext_name(out, '%', c->g->values.data[st->dst].name);
    kiln_strbuf_printf(out, "\n");
  }
}

static void print_profile(const kiln_compiled *c, int iters, kiln_strbuf *out) {
  int n = c->prog->steps.len;
  double total = 0, by_kind[KILN_STEP_KIND_COUNT] = {0};
  double *ms = kiln_xcalloc((size_t)n + 1, sizeof *ms);
  int *order = kiln_xcalloc((size_t)n + 1, sizeof *order);
  for (int s = 0; s < n; s++) {
    ms[s] = 1e3 * c->step_seconds[s] / iters;
    total += ms[s];
    by_kind[c->prog->steps.data[s].kind] += ms[s];
    order[s] = s;
  }
  kiln_strbuf_printf(out,
                     "profile: %.3f ms per run in steps (%d runs): kernels %.3f ms, "
                     "fallbacks %.3f ms, aliases %.3f ms\n",
                     total, iters, by_kind[KILN_STEP_KERNEL], by_kind[KILN_STEP_FALLBACK],
                     by_kind[KILN_STEP_ALIAS]);
  g_times = ms;
  qsort(order, (size_t)n, sizeof *order, cmp_time_desc);
  for (int i = 0; i < n && i < PROFILE_TOP; i++) print_step(c, order[i], ms[order[i]], total, out);
  free(ms);
  free(order);
}

kiln_status kiln_compiled_profile(kiln_compiled *c, int n_in, kiln_tensor *const *inputs, int iters,
                                  kiln_strbuf *out) {
  if (iters < 1) return kiln_invalid("profile: iterations must be >= 1, not %d", iters);
  int n_out = c->g->outputs.len;
  kiln_tensor **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st = KILN_OK;
  for (int it = 0; !st && it <= iters; it++) {
    if (it == 1) c->step_seconds = kiln_xcalloc((size_t)c->prog->steps.len + 1, sizeof(double));
    st = kiln_compiled_run(c, n_in, inputs, outs);
    for (int i = 0; !st && i < n_out; i++) kiln_tensor_free(outs[i]), outs[i] = NULL;
  }
  if (!st) print_profile(c, iters, out);
  free(c->step_seconds);
  c->step_seconds = NULL;
  free(outs);
  return st;
}
