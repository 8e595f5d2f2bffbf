/* The cpu target: kernels as C (identical kernels emitted once, split into translation
 * units), built by the system C compiler into one shared object (parallel compiler
 * processes, disk cache) and loaded; run by the executor (exec.c) over one arena in host
 * memory through the runtime slots below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mutate.h"
#include "codegen/codegen.h"
#include "lower/schedule.h"
#include "rt_internal.h"

/* ---- C source: deduplicated kernels in translation units ---- */
typedef struct csrc {
  int n_unique;
  char **text; /* per unique kernel: its C function */
  int n_units;
  char **units; /* per unit: prelude + kernels */
} csrc;

static void csrc_free(csrc *s) {
  for (int i = 0; i < s->n_unique; i++) free(s->text[i]);
  for (int i = 0; i < s->n_units; i++) free(s->units[i]);
  free(s->text);
  free(s->units);
}

/* k with neutral names: the function "kiln_kernel", buffers b0, b1, ... and variables
 * v0, v1, ... (the lowering names them after graph values), no origin comment. Equal C
 * texts of two such copies compute the same function. */
typedef struct neutral_names {
  kiln_tbuf *bufs;
  kiln_tvar *vars;
  char (*names)[24];
} neutral_names;

static kiln_tkernel neutral(const kiln_tkernel *k, neutral_names *nn) {
  kiln_tkernel anon = *k;
  anon.name = "kiln_kernel";
  anon.origin = "";
  int nb = k->bufs.len, nv = k->vars.len;
  nn->bufs = kiln_xcalloc((size_t)nb + 1, sizeof *nn->bufs);
  nn->vars = kiln_xcalloc((size_t)nv + 1, sizeof *nn->vars);
  nn->names = kiln_xcalloc((size_t)(nb + nv) + 1, sizeof *nn->names);
  for (int i = 0; i < nb; i++) {
    nn->bufs[i] = k->bufs.data[i];
    snprintf(nn->names[i], sizeof nn->names[i], "b%d", i);
    nn->bufs[i].name = nn->names[i];
  }
  for (int i = 0; i < nv; i++) {
    nn->vars[i] = k->vars.data[i];
    snprintf(nn->names[nb + i], sizeof nn->names[nb + i], "v%d", i);
    nn->vars[i].name = nn->names[nb + i];
  }
  anon.bufs.data = nn->bufs;
  anon.vars.data = nn->vars;
  return anon;
}

/* C of the kernel with neutral names, as symbol `name` (NULL: "kiln_kernel", no origin). */
static kiln_status emit_neutral(const kiln_tkernel *k, const kiln_codegen_opts *co,
                                const char *name, kiln_strbuf *out) {
  neutral_names nn;
  kiln_tkernel anon = neutral(k, &nn);
  if (name) anon.name = name, anon.origin = k->origin;
  kiln_status st = kiln_codegen_c_kernel(&anon, co, out);
  free(nn.bufs);
  free(nn.vars);
  free(nn.names);
  return st;
}

/* Index of an earlier kernel with the same neutral text, or -1; on a hash collision with a
 * different text the key moves on, so that symbols stay distinct. */
static int find_same(uint64_t *keys, char **texts, int i) {
  for (int j = 0; j < i; j++) {
    if (keys[j] != keys[i]) continue;
    if (KILN_MUTANT(86) || !strcmp(texts[j], texts[i])) return j; /* mutant 86: key trusted */
    keys[i]++;
    j = -1; /* rescan with the new key */
  }
  return -1;
}

static kiln_status emit_unique(kiln_compiled *c, const kiln_codegen_opts *co, csrc *s) {
  const kiln_tmodule *m = c->prog->module;
  int n = m->kernels.len;
  uint64_t *keys = kiln_xcalloc((size_t)n + 1, sizeof *keys);
  char **texts = kiln_xcalloc((size_t)n + 1, sizeof *texts); /* neutral C per kernel */
  s->text = kiln_xcalloc((size_t)n + 1, sizeof *s->text);
  c->symbols = kiln_xcalloc((size_t)n + 1, sizeof *c->symbols);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < n; i++) {
    const kiln_tkernel *k = m->kernels.data[i];
    kiln_strbuf b = {0};
    st = kiln_tkernel_verify(k); /* the lowering made k: a rejection is Kiln's bug */
    if (st)
      st = kiln_status_annotate(kiln_status_recode(st, KILN_ERR_INTERNAL),
                                "internal error (a bug in Kiln's lowering): kernel %s", k->name);
    if (!st) st = emit_neutral(k, co, NULL, &b);
    texts[i] = b.data ? b.data : kiln_xstrdup("");
    if (st) break;
    size_t hashed = KILN_MUTANT(86) && b.len > 256 ? 256 : b.len; /* mutant 86: a prefix */
    keys[i] = kiln_hash_bytes(texts[i], hashed, 0) ^ ((uint64_t)b.len << 40);
    int same = find_same(keys, texts, i);
    if (same >= 0) {
      c->symbols[i] = c->symbols[same];
      continue;
    }
    c->symbols[i] = kiln_arena_printf(m->arena, "kiln_%016llx", (unsigned long long)keys[i]);
    kiln_strbuf named = {0};
    st = emit_neutral(k, co, c->symbols[i], &named);
    s->text[s->n_unique++] = named.data ? named.data : kiln_xstrdup("");
  }
  for (int i = 0; i < n; i++) free(texts[i]);
  free(texts);
  free(keys);
  return st;
}

/* Units of about equal size, in kernel order: a few per compiler job, so that they
 * compile in parallel and a changed kernel recompiles only its unit. */
static kiln_status split_units(const kiln_codegen_opts *co, int jobs, csrc *s) {
  kiln_strbuf prelude = {0};
  KILN_TRY(kiln_codegen_c_prelude(co, &prelude));
  size_t total = 0;
  for (int i = 0; i < s->n_unique; i++) total += strlen(s->text[i]);
  int want = (s->n_unique + 3) / 4;
  if (want > 4 * jobs) want = 4 * jobs;
  if (want < 1) want = 1;
  size_t per = total / (size_t)want + 1;
  s->units = kiln_xcalloc((size_t)want + s->n_unique + 1, sizeof *s->units);
  kiln_strbuf u = {0};
  for (int i = 0; i <= s->n_unique; i++) {
    bool flush = i == s->n_unique ? (u.len > 0 && !KILN_MUTANT(87)) || s->n_units == 0
                                  : u.len >= per + prelude.len; /* mutant 87: last unit lost */
    if (flush) {
      s->units[s->n_units++] = u.data ? u.data : kiln_xstrdup(prelude.data ? prelude.data : "");
      memset(&u, 0, sizeof u);
    }
    if (i == s->n_unique) break;
    if (!u.len && (s->n_units == 0 || !KILN_MUTANT(157))) /* mutant 157: the first unit only */
      kiln_strbuf_append(&u, prelude.data ? prelude.data : "", prelude.len);
    kiln_strbuf_printf(&u, "\n%s", s->text[i]);
  }
  kiln_strbuf_free(&prelude);
  return KILN_OK;
}

static int n_jobs(const kiln_compile_opts *o) {
  long n = o->jobs > 0 ? o->jobs : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (int)n;
}

/* ---- emit: C source of the unique kernels, in units (kept in c->impl for build) ---- */
static kiln_status cpu_emit(kiln_compiled *c, const kiln_compile_opts *o) {
  kiln_codegen_opts co = kiln_codegen_opts_default();
  co.threads = o->threads;
  csrc *s = kiln_xcalloc(1, sizeof *s);
  c->impl = s;
  kiln_status st = emit_unique(c, &co, s);
  if (!st) st = split_units(&co, n_jobs(o), s);
  c->stats.n_unique_kernels = s->n_unique;
  c->stats.n_units = s->n_units;
  if (o->verbose && !st)
    fprintf(stderr, "[kiln] codegen: %d kernels (%d unique) in %d units\n",
            c->prog->module->kernels.len, s->n_unique, s->n_units);
  return st;
}

static void cpu_release(kiln_compiled *c) {
  if (c->impl) csrc_free(c->impl);
  free(c->impl);
  c->impl = NULL;
}

/* ---- build: the C compiler, one shared object, loaded ---- */
static kiln_status cpu_build(kiln_compiled *c, const kiln_compile_opts *o) {
  csrc *s = c->impl;
  kiln_strbuf flags = {0};
  /* mutant 390: the codegen's required flags (-ffp-contract=off) not passed */
  kiln_strbuf_printf(&flags, "%s%s%s", KILN_MUTANT(390) ? "" : KILN_CODEGEN_C_FLAGS,
                     o->cflags ? " " : "", o->cflags ? o->cflags : "");
  kiln_cc_opts cc = {o->cc,     flags.data,      o->cache_dir, o->no_cache,
                     n_jobs(o), o->keep_sources, o->verbose};
  kiln_cc_stats cs = {0};
  kiln_status st = kiln_module_build(s->n_units, (const char *const *)s->units, &cc, &c->mod, &cs);
  c->stats.n_units_cached = cs.n_units_cached;
  c->stats.library_cached = cs.library_cached;
  kiln_strbuf_free(&flags);
  cpu_release(c); /* the sources are in the module (and the cache) now */
  return st;
}

/* ---- the lowering's view ---- */
static kiln_status cpu_lower_opts(const kiln_compile_opts *o, kiln_lower_opts *lo) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  lo->threads = o->threads > 0 ? o->threads : cores > 0 ? (int)cores : 1;
  return KILN_OK;
}

/* ---- report ---- */
/* Names from the model (graph, origins, node labels, reasons naming values) are data: each
 * goes through kiln_esc_line, so every record of the report stays one line. */
static void report_steps(const kiln_compiled *c, kiln_strbuf *out) {
  const kiln_program *p = c->prog;
  char lb[200];
  for (int i = 0; i < p->module->kernels.len; i++) {
    const kiln_tkernel *k = p->module->kernels.data[i];
    kiln_strbuf_printf(out, "  kernel %s -> %s  (", k->name, c->symbols[i]);
    kiln_esc_line(out, k->origin ? k->origin : "");
    kiln_strbuf_printf(out, ")\n");
  }
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind != KILN_STEP_FALLBACK) continue;
    kiln_strbuf_printf(out, "  fallback ");
    kiln_esc_line(out, kiln_node_label(&c->g->nodes.data[s->node], lb, sizeof lb));
    kiln_strbuf_printf(out, ": ");
    kiln_esc_line(out, s->reason ? s->reason : "");
    kiln_strbuf_printf(out, "\n");
  }
}

static void cpu_report(const kiln_compiled *c, kiln_strbuf *out) {
  const kiln_compile_stats *s = &c->stats;
  kiln_strbuf_printf(out, "graph '");
  kiln_esc_line(out, c->g->name);
  kiln_strbuf_printf(out, "': %d steps (%d kernel, %d fallback, %d alias)\n", s->n_steps,
                     s->n_kernel_steps, s->n_fallback_steps, s->n_alias_steps);
  kiln_strbuf_printf(out, "kernels: %d (%d unique) in %d translation units, %d from the cache%s\n",
                     s->n_kernels, s->n_unique_kernels, s->n_units, s->n_units_cached,
                     s->library_cached ? ", library from the cache" : "");
  report_steps(c, out);
  kiln_program_print_schedules(c->prog, out);
  double ratio = s->lower_bound ? (double)s->arena_bytes / (double)s->lower_bound : 1.0;
  kiln_strbuf_printf(out,
                     "memory: arena %lld bytes, lower bound %lld bytes (%.3fx), %d in place, "
                     "order %s; packed constants %lld bytes\n",
                     (long long)s->arena_bytes, (long long)s->lower_bound, ratio,
                     c->plan->n_inplace, c->plan->heuristic, (long long)s->packed_bytes);
  kiln_strbuf_printf(out, "compile time: %.3f s (", s->total_seconds);
  for (int i = 0; i < KILN_STAGE_COUNT; i++)
    kiln_strbuf_printf(out, "%s%s %.3f", i ? ", " : "", kiln_stage_name((kiln_stage)i),
                       s->seconds[i]);
  kiln_strbuf_printf(out, ")\n");
}

/* ---- running: host memory, kernels called in this process ---- */
static kiln_status cpu_arena_alloc(kiln_compiled *c, int64_t bytes, void **out) {
  KILN_TRY(kiln_mem_reserve(bytes, "the memory plan (arena) of graph '%s'", c->g->name));
  *out = aligned_alloc(64, (size_t)bytes);
  if (!*out) {
    kiln_mem_release(bytes);
    return kiln_error(KILN_ERR_OOM, "cannot allocate the %lld-byte arena",
                      (long long)c->plan->arena_bytes);
  }
  memset(*out, 0, (size_t)bytes);
  return KILN_OK;
}

static void cpu_arena_free(kiln_compiled *c, void *arena, int64_t bytes) {
  (void)c;
  free(arena);
  kiln_mem_release(bytes);
}

static void cpu_copy(kiln_compiled *c, void *dst, const void *src, size_t bytes) {
  (void)c;
  memcpy(dst, src, bytes);
}

static void cpu_run_kernel(kiln_compiled *c, int step) {
  c->xsteps[step].fn(c->xsteps[step].args);
}

const kiln_target kiln_target_cpu = {
    .id = KILN_TARGET_CPU,
    .name = "cpu",
    .summary = "compiled C kernels",
    .fuse_class = kiln_lower_fuse_class,
    .sched_defaults = kiln_sched_defaults_cpu,
    .supports_node = NULL, /* every node the lowering lowers */
    .lower_opts = cpu_lower_opts,
    .map = NULL, /* the program as lowered */
    .emit = cpu_emit,
    .build = cpu_build,
    .report = cpu_report,
    .release = cpu_release,
    .prepare = kiln_exec_prepare,
    .arena_alloc = cpu_arena_alloc,
    .arena_free = cpu_arena_free,
    .copy_in = cpu_copy,
    .copy_out = cpu_copy,
    .run_kernel = cpu_run_kernel,
};
