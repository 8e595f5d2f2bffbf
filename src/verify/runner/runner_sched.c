/* The tile layer under a drawn schedule set: the default schedules are one point of a space
 * (microkernel, register tile, parallel form, loop splits, vector and unrolled loops) that a
 * user (`kiln compile --schedule`) or a tuner may pick anywhere; each point must compute the
 * same values. After the tile layer passes, the graph is lowered again under a set drawn for
 * its kernels and interpreted: a mismatch is a finding ("tile (drawn schedule)"), a set the
 * lowering refuses (a field that does not apply, a directive a transform refuses) is redrawn,
 * up to DRAWS times, and never a finding. */
#include <stdio.h>
#include <string.h>

#include "lower/schedule.h"
#include "runner_internal.h"
#include "tile/tile_sched.h"

/* STAGE_COPIES: elements a staged buffer's copies may move in all (the tile interpreter runs
 * them; KILN_TSCHED_STAGE_MAX bounds one copy) */
enum { DRAWS = 6, MAX_KERNELS = 64, MAX_LINES = 3, STAGE_COPIES = 4096 };

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int pick(uint64_t *s, int n) {
  return n > 0 ? (int)(next(s) % (uint64_t)n) : 0;
}

/* The loop variables of kernel k, outermost first. */
static int loops(const kiln_tkernel *k, const kiln_tblock *b, const char **out, int n, int max) {
  for (int i = 0; i < b->len && n < max; i++) {
    const kiln_tstmt *s = b->data[i];
    if (s->kind == KILN_TS_FOR) out[n++] = k->vars.data[s->var].name;
    n = loops(k, &s->body, out, n, max);
    n = loops(k, &s->orelse, out, n, max);
  }
  return n;
}

static bool conv_micro(kiln_sched_micro m) {
  return m == KILN_MICRO_IM2COL || m == KILN_MICRO_ROWS || m == KILN_MICRO_POINTWISE;
}

/* A GEMM kernel: the microkernel of its family, a register tile, a parallel form. */
static void draw_gemm(const kiln_sched *d, uint64_t *s, kiln_strbuf *b) {
  static const char *const mm[] = {"packed", "inplace", "scratch"};
  static const char *const cv[] = {"im2col", "rows", "pointwise"};
  static const char *const par[] = {"none", "batch", "panels", "rows"};
  const char *micro = conv_micro(d->micro) ? cv[pick(s, 3)] : mm[pick(s, 3)];
  if (pick(s, 2)) kiln_strbuf_printf(b, " micro=%s", micro);
  else micro = kiln_sched_micro_name(d->micro);
  if (pick(s, 2)) kiln_strbuf_printf(b, " mr=%d", 1 + pick(s, 16));
  if (strcmp(micro, "inplace") && pick(s, 2)) kiln_strbuf_printf(b, " nr=%d", 1 + pick(s, 48));
  if (pick(s, 2)) kiln_strbuf_printf(b, " par=%s", par[pick(s, 4)]);
}

static bool stores_to(const kiln_tblock *b, int buf) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    if ((s->kind == KILN_TS_STORE && s->buf == buf) ||
        (s->kind == KILN_TS_MMA && s->mma.c_buf == buf))
      return true;
    if (stores_to(&s->body, buf) || stores_to(&s->orelse, buf)) return true;
  }
  return false;
}

/* The iterations of loop `name`'s body: the product of the extents of the loops around it
 * and its own (a run-time extent counts as 64); 0 when there is no such loop. */
static int64_t trips(const kiln_tkernel *k, const kiln_tblock *b, const char *name, int64_t outer) {
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    int64_t n = outer;
    if (s->kind == KILN_TS_FOR) {
      n *= s->extent->kind == KILN_TE_INT ? (s->extent->i > 0 ? s->extent->i : 1) : 64;
      if (n > ((int64_t)1 << 40)) n = (int64_t)1 << 40; /* no overflow with the size below */
      if (!strcmp(k->vars.data[s->var].name, name)) return n;
    }
    int64_t t = trips(k, &s->body, name, n);
    if (!t) t = trips(k, &s->orelse, name, n);
    if (t) return t;
  }
  return 0;
}

/* A global buffer of k to stage in loop l: a parameter the kernel only reads, small enough
 * for a local copy, and whose copies (one per iteration of l's body) stay cheap to
 * interpret; NULL when there is none. */
static const char *stage_buf(const kiln_tkernel *k, const char *l, uint64_t *s) {
  const char *names[16];
  int n = 0;
  int64_t t = trips(k, &k->body, l, 1);
  for (int b = 0; b < k->bufs.len && n < 16; b++)
    if (k->bufs.data[b].scope == KILN_SCOPE_GLOBAL && t > 0 &&
        k->bufs.data[b].size * t <= STAGE_COPIES && !stores_to(&k->body, b))
      names[n++] = k->bufs.data[b].name;
  return n ? names[pick(s, n)] : NULL;
}

/* One directive on loop l of k: a split with its inner loop vectorized or unrolled, a
 * reorder, a loop bound to the parallel, vector or unrolled kind as it is, a buffer staged
 * into a local copy, or a tensorized nest. A directive that does not apply refuses the set,
 * which is redrawn. */
static void draw_dir(const kiln_tkernel *k, const char *l, uint64_t *s, kiln_strbuf *b) {
  const char *buf;
  switch (pick(s, 20) / 2) { /* tensorize (8) 1 in 20: few nests take it */
  case 0: kiln_strbuf_printf(b, " split=%s:%d", l, 2 + pick(s, 4)); break;
  case 1: kiln_strbuf_printf(b, " split=%s:%d vector=%s_i", l, 2 + pick(s, 7), l); break;
  case 2: kiln_strbuf_printf(b, " split=%s:%d unroll=%s_i", l, 2 + pick(s, 3), l); break;
  case 3: kiln_strbuf_printf(b, " split=%s:%d parallel=%s_o", l, 2 + pick(s, 5), l); break;
  case 4: kiln_strbuf_printf(b, " parallel=%s", l); break;
  case 5: kiln_strbuf_printf(b, " %s=%s", pick(s, 2) ? "vector" : "unroll", l); break;
  case 6:
  case 7:
    if ((buf = stage_buf(k, l, s))) kiln_strbuf_printf(b, " stage=%s:%s:local", l, buf);
    break;
  case 8: kiln_strbuf_printf(b, " %s=%s", pick(s, 2) ? "tensorize" : "reorder", l); break;
  default: kiln_strbuf_printf(b, " reorder=%s", l); break;
  }
}

/* A loop nest: a parallel threshold, then one or two directives on loops drawn. */
static void draw_nest(const kiln_tkernel *k, uint64_t *s, kiln_strbuf *b) {
  static const long long mins[] = {1, 64, 1 << 20};
  if (pick(s, 2)) kiln_strbuf_printf(b, " par_min_elements=%lld", mins[pick(s, 3)]);
  const char *names[16];
  int n = loops(k, &k->body, names, 0, 16);
  if (n == 0) return;
  draw_dir(k, names[pick(s, n)], s, b);
  if (!pick(s, 3)) draw_dir(k, names[pick(s, n)], s, b);
}

/* One schedule set for the kernels of p, in the text form: a line for one to MAX_LINES
 * kernels drawn (a set is refused whole when one line does not apply, so few lines keep most
 * draws usable on large programs). */
static void draw_set(const kiln_program *p, uint64_t *s, kiln_strbuf *b) {
  int n = p->module->kernels.len < p->scheds.len ? p->module->kernels.len : p->scheds.len;
  bool chosen[MAX_KERNELS] = {0};
  int lines = 1 + pick(s, MAX_LINES);
  for (int t = 0; t < lines && n > 0; t++)
    chosen[pick(s, n < MAX_KERNELS ? n : MAX_KERNELS)] = true;
  for (int i = 0; i < n && i < MAX_KERNELS; i++) {
    const kiln_tkernel *k = p->module->kernels.data[i];
    const kiln_sched *d = &p->scheds.data[i];
    if (!chosen[i]) continue; /* this kernel keeps its defaults */
    size_t start = b->len;
    kiln_strbuf_printf(b, "%s", k->name);
    size_t head = b->len;
    if (d->kind == KILN_SCHED_GEMM) draw_gemm(d, s, b);
    else if (d->kind == KILN_SCHED_DWCONV) {
      if (pick(s, 2)) kiln_strbuf_printf(b, " micro=%s", pick(s, 2) ? "plane" : "direct");
      if (pick(s, 2)) kiln_strbuf_printf(b, " par=%s", pick(s, 2) ? "none" : "outer");
    } else draw_nest(k, s, b);
    if (b->len == head) b->len = start, b->data[start] = 0; /* nothing drawn */
    else kiln_strbuf_printf(b, "\n");
  }
}

void kiln_vrun_tile_drawn(kiln_vrun *r, kiln_graph *fused, const kiln_program *p) {
  kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_TILE, "tile (drawn schedule)");
  uint64_t s = r->o->sched_seed;
  int refused = 0;
  char last[200] = "";
  for (int t = 0; t < DRAWS; t++) {
    kiln_strbuf text = {0};
    kiln_strbuf_printf(&text, "%s", "");
    draw_set(p, &s, &text);
    if (text.len == 0) {
      kiln_strbuf_free(&text);
      continue;
    }
    kiln_sched_set *set = NULL;
    kiln_program *q = NULL;
    kiln_lower_opts lo = {.target = KILN_TARGET_CPU,
                          .threads = kiln_vrun_tile_threads(r),
                          .force_fallback = r->o->compile.force_fallback,
                          .precision = &r->o->compile.precision};
    kiln_status st = kiln_sched_set_parse(text.data, "drawn", &set);
    if (!st) st = kiln_lower_scheduled(fused, &lo, set, &q);
    if (!st) st = kiln_sched_set_check_used(set);
    kiln_sched_set_free(set);
    if (st) { /* refused: another draw */
      snprintf(last, sizeof last, "%s", kiln_status_message(st));
      kiln_status_free(st);
      kiln_program_free(q);
      kiln_strbuf_free(&text);
      refused++;
      continue;
    }
    r->res->sched_seed = r->o->sched_seed;
    kiln_vrun_interp_program(r, q, l);
    kiln_program_free(q);
    /* one graph in four compiles the set to C too (the cpu layer, instead of the defaults):
     * staged copies, loops bound by hand and unrolled or vector loops of any kernel in C */
    if (l->ran && l->ok && ((r->o->sched_seed >> 17) & 3) == 0)
      r->drawn_sched = kiln_xstrdup(text.data);
    if (kiln_vrun_done(r, l)) { /* where: the drawn set, on one line */
      for (char *c = text.data; *c; c++) *c = *c == '\n' ? ';' : *c;
      char where[160];
      snprintf(where, sizeof where, "drawn schedule: %s", text.data);
      kiln_vrun_set_where(r, where, "");
    }
    kiln_strbuf_free(&text);
    return;
  }
  kiln_vrun_skip(l, "no drawn schedule set accepted (%d refused%s%s)", refused,
                 last[0] ? ", last: " : "", last);
  kiln_vrun_done(r, l);
}
