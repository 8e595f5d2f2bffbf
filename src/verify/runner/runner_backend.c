/* The backend layers of the runner: the lowered program in the tile interpreter, then the
 * layers of each target the options select: the compiled code of a target that runs (cpu),
 * the mapped program of one that compiles only (cuda) in the tile interpreter.
 *
 * Each layer's run is traced (kiln_program_interp_trace, kiln_compiled_run_trace): the
 * local checks (runner_backend_local.c) check every kernel step against its own group, and the
 * first step that fails names the kernel and the op kinds of its fusion group. A layer
 * that fails only end to end is localized by running it again, checking every value a
 * step produces against the end-to-end reference of the fused graph it was lowered from.
 * A cpu layer compiled for several threads also runs twice and must give the same bits
 * (runner_det.c). */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/schedule.h"
#include "runner_internal.h"

static int layer_threads(const kiln_vrun *r) {
  return r->o->threads > 0 ? r->o->threads : 1;
}

/* The tile layer lowers for the most threads any cpu layer uses (the parallel schedule). */
int kiln_vrun_tile_threads(const kiln_vrun *r) {
  int t = layer_threads(r);
  return r->o->par_threads > t ? r->o->par_threads : t;
}

/* The fault injector of the options when it runs in layers of this kind, else NULL. */
static kiln_step_trace_fn injector(const kiln_vrun *r, kiln_layer_kind kind) {
  unsigned mask = r->o->inject_layers;
  return mask && !(mask & (1u << kind)) ? NULL : r->o->inject;
}

/* ---- describing a step ---- */
static void group_ops(const kiln_graph *g, const kiln_node *first, kiln_strbuf *ops,
                      kiln_strbuf *list) {
  int n = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const kiln_node *nd = &g->nodes.data[i];
    if (nd != first && (first->group <= 0 || nd->group != first->group)) continue;
    kiln_strbuf_printf(ops, "%s,", nd->op_type);
    kiln_strbuf_printf(list, "%s%s", n++ ? ", " : "", nd->op_type);
  }
}

/* where: "kernel k3_fused (MatMul, Add, Relu), step 4, value 'y'" and the group's ops. */
static void describe_step(kiln_vrun *r, const kiln_program *p, int step, int value) {
  const kiln_graph *g = p->graph;
  kiln_strbuf where = {0}, ops = {0}, list = {0};
  if (step < 0 || step >= p->steps.len) {
    kiln_vrun_set_where(r, "the outputs (every step's values agree with the reference)", "");
    return;
  }
  const kiln_step *s = &p->steps.data[step];
  char lb[200];
  if (s->kind == KILN_STEP_ALIAS) {
    kiln_strbuf_printf(&where, "alias step %d ('%s' viewing '%s')", step,
                       g->values.data[s->dst].name, g->values.data[s->src].name);
    const kiln_value *d = &g->values.data[s->dst];
    if (d->kind == KILN_VALUE_NODE) kiln_strbuf_printf(&ops, "%s", g->nodes.data[d->node].op_type);
  } else {
    const kiln_node *first = &g->nodes.data[s->node];
    group_ops(g, first, &ops, &list);
    if (s->kind == KILN_STEP_KERNEL)
      kiln_strbuf_printf(&where, "kernel %s (%s), step %d",
                         p->module->kernels.data[s->kernel]->name, list.data ? list.data : "",
                         step);
    else
      kiln_strbuf_printf(&where, "fallback %s, step %d", kiln_node_label(first, lb, sizeof lb),
                         step);
  }
  if (value >= 0) kiln_strbuf_printf(&where, ", value '%s'", g->values.data[value].name);
  kiln_vrun_set_where(r, where.data, ops.data ? ops.data : "");
  kiln_strbuf_free(&where);
  kiln_strbuf_free(&ops);
  kiln_strbuf_free(&list);
}

/* The step a run error names ("step 4: ..."), or -1. */
static int step_of_error(const char *msg) {
  for (const char *p = strstr(msg, "step "); p; p = strstr(p + 1, "step ")) {
    int s;
    if (sscanf(p, "step %d", &s) == 1) return s;
  }
  return -1;
}

/* ---- the step observer ---- */
typedef struct observer {
  kiln_step_trace_fn inject; /* runs first (or NULL) */
  void *inject_user;
  const kiln_vref *ref; /* of the program's graph */
  bool found;
  int step, value;
  char msg[320];
} observer;

static void observe(void *user, int step, int value, const kiln_tensor *t) {
  observer *ob = user;
  if (ob->inject) ob->inject(ob->inject_user, step, value, t);
  if (ob->found || value >= ob->ref->n_values || !ob->ref->val[value]) return;
  kiln_val shell = {.kind = KILN_TYPE_TENSOR, .t = (kiln_tensor *)t};
  kiln_vcheck c;
  kiln_vref_check(ob->ref, value, &shell, &c);
  if (c.ok) return;
  ob->found = true, ob->step = step, ob->value = value;
  snprintf(ob->msg, sizeof ob->msg, "%s", c.msg);
}

typedef kiln_status (*traced_run)(void *prog, kiln_vrun *r, observer *ob);

kiln_status kiln_vrun_trace_interp(const kiln_vrun *r, const kiln_program *p, kiln_step_trace_fn fn,
                                   void *user) {
  int n_out = p->graph->outputs.len;
  kiln_tensor **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st = kiln_program_interp_trace(p, r->n_in, r->tin, outs, fn, user);
  for (int i = 0; i < n_out; i++) kiln_tensor_free(outs[i]);
  free(outs);
  return st;
}

kiln_status kiln_vrun_trace_compiled(const kiln_vrun *r, kiln_compiled *c, kiln_step_trace_fn fn,
                                     void *user) {
  int n_out = kiln_compiled_graph(c)->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st = kiln_compiled_run_trace(c, r->n_in, r->inputs, outs, fn, user);
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]);
  free(outs);
  return st;
}

static kiln_status trace_interp(void *prog, kiln_vrun *r, observer *ob) {
  return kiln_vrun_trace_interp(r, prog, observe, ob);
}

static kiln_status trace_compiled(void *prog, kiln_vrun *r, observer *ob) {
  return kiln_vrun_trace_compiled(r, prog, observe, ob);
}

/* Localizes the first failure of a backend layer: the first step whose value fails. */
static void localize(kiln_vrun *r, const kiln_program *p, traced_run run, void *prog,
                     const kiln_layer_result *l) {
  kiln_step_trace_fn inject = injector(r, l->kind);
  if (l->errored) { /* the run returned an error: the step it names */
    int s = step_of_error(l->msg);
    if (s >= 0) describe_step(r, p, s, -1);
    else kiln_vrun_set_where(r, "", "");
    return;
  }
  observer ob = {0};
  ob.inject = inject;
  ob.inject_user = r->o->inject_user;
  ob.step = ob.value = -1;
  kiln_vref *ref = NULL;
  kiln_status st =
      kiln_vref_compute_prec(p->graph, r->n_in, r->inputs, &r->o->compile.precision, &ref);
  if (!st) {
    ob.ref = ref;
    st = run(prog, r, &ob);
  }
  if (st) { /* best effort: the layer's message says what failed */
    kiln_status_free(st);
    kiln_vref_free(ref);
    kiln_vrun_set_where(r, "", "");
    return;
  }
  describe_step(r, p, ob.found ? ob.step : -1, ob.found ? ob.value : -1);
  kiln_vref_free(ref);
  if (ob.found) kiln_verify_log(r->o->log, "[verify] first wrong value: %s", ob.msg);
}

/* ---- the local checks ---- */
/* The observer of a layer's run: the local checks (with opts.local) or only the injector. */
static kiln_vlocal *local_new(kiln_vrun *r, const kiln_program *p, kiln_layer_kind kind) {
  return r->o->local ? kiln_vlocal_new(p, r->inputs, injector(r, kind), r->o->inject_user) : NULL;
}

static kiln_step_trace_fn observer_fn(kiln_vrun *r, kiln_vlocal *lc, kiln_layer_kind kind) {
  return lc ? kiln_vlocal_observe : injector(r, kind);
}

static void *observer_user(kiln_vrun *r, kiln_vlocal *lc) {
  return lc ? (void *)lc : r->o->inject_user;
}

/* The first failure of layer l: the step that failed its local check, else a second,
 * traced run against the fused graph's end-to-end reference. */
static void localize_layer(kiln_vrun *r, const kiln_program *p, traced_run run, void *prog,
                           const kiln_layer_result *l, const kiln_vlocal *lc) {
  int step, value;
  if (lc && !l->errored && kiln_vlocal_failure(lc, &step, &value)) {
    describe_step(r, p, step, value);
    kiln_verify_log(r->o->log, "[verify] %s", l->msg);
    return;
  }
  localize(r, p, run, prog, l);
}

/* ---- running a program in the tile interpreter ---- */
/* Compiled code and the program interpreter read the caller's input tensors in place
 * (KILN_LOC_INPUT): a store into one (an in-place merge or a view gone wrong) changes the
 * caller's data, and every later layer would read it. A layer's run must leave their bytes as
 * they were. */
static void check_inputs_kept(kiln_vrun *r, kiln_layer_result *l) {
  for (int i = 0; i < r->n_in; i++)
    if (r->in_hash[i] && kiln_vrun_input_hash(r, i) != r->in_hash[i]) {
      snprintf(l->msg, sizeof l->msg,
               "the run changed graph input '%s' (the caller's tensor, which it must only read)",
               r->g->values.data[r->g->inputs.data[i]].name);
      l->ok = false, l->max_ratio = INFINITY;
      return;
    }
}

static void interp_program(kiln_vrun *r, const kiln_program *p, kiln_layer_result *l,
                           kiln_vlocal *lc) {
  int n_out = p->graph->outputs.len;
  kiln_tensor **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_val **vals = kiln_xcalloc((size_t)n_out + 1, sizeof *vals);
  kiln_status st =
      n_out == r->g->outputs.len
          ? kiln_program_interp_trace(p, r->n_in, r->tin, outs, observer_fn(r, lc, l->kind),
                                      observer_user(r, lc))
          : kiln_invalid("the program has %d outputs, the model %d", n_out, r->g->outputs.len);
  for (int i = 0; i < n_out; i++) vals[i] = outs[i] ? kiln_val_tensor(outs[i]) : NULL;
  if (st) kiln_vrun_errored(r, l, st);
  else kiln_vrun_compare(r, l, vals);
  if (!st) check_inputs_kept(r, l);
  if (lc) kiln_vlocal_finish(lc, l);
  for (int i = 0; i < n_out; i++) kiln_val_free(vals[i]);
  free(vals);
  free(outs);
}

void kiln_vrun_interp_program(kiln_vrun *r, const kiln_program *p, kiln_layer_result *l) {
  interp_program(r, p, l, NULL);
}

static void set_where_error(kiln_vrun *r, const char *stage, const kiln_layer_result *l) {
  char where[160];
  snprintf(where, sizeof where, "%s: %s", stage, l->msg);
  kiln_vrun_set_where(r, where, "");
}

/* ---- tile ---- */
/* The tile verifier on every kernel a step runs (the compiler runs it before emitting C):
 * a kernel whose accesses it cannot prove in bounds is a tile-level failure. */
static kiln_status verify_kernels(const kiln_program *p) {
  for (int s = 0; s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    const kiln_tkernel *k = p->module->kernels.data[st->kernel];
    KILN_TRYF(kiln_tkernel_verify(k), "step %d: kernel %s does not verify", s, k->name);
  }
  return KILN_OK;
}

/* Adds the path name to res->paths unless it is there or the list is full. */
static void add_path(kiln_verify_result *res, const char *name) {
  size_t n = strlen(name), len = strlen(res->paths);
  for (const char *p = res->paths; (p = strstr(p, name)); p += n)
    if ((p == res->paths || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return;
  if (len + n + 2 > sizeof res->paths) return;
  snprintf(res->paths + len, sizeof res->paths - len, "%s%s", len ? "," : "", name);
}

/* The schedules and fallbacks of the lowered program, for the coverage cells of kiln fuzz. */
static void note_paths(kiln_verify_result *res, const kiln_program *p) {
  char name[96];
  for (int i = 0; i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind == KILN_STEP_FALLBACK)
      snprintf(name, sizeof name, "fallback:%s", p->graph->nodes.data[s->node].op_type);
    else if (s->kind == KILN_STEP_KERNEL && s->kernel >= 0 && s->kernel < p->scheds.len) {
      const kiln_sched *k = &p->scheds.data[s->kernel];
      snprintf(name, sizeof name, "sched:%s/%s/%s", kiln_sched_kind_name(k->kind),
               kiln_sched_micro_name(k->micro), kiln_sched_par_name(k->par));
    } else continue;
    add_path(res, name);
  }
}

void kiln_vrun_tile(kiln_vrun *r, kiln_graph *fused) {
  kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_TILE, "tile");
  if (!r->all_tensors) {
    kiln_vrun_skip(l, "an input is not a tensor");
    kiln_vrun_done(r, l);
    return;
  }
  kiln_lower_opts lo = {.target = KILN_TARGET_CPU,
                        .threads = kiln_vrun_tile_threads(r),
                        .force_fallback = r->o->compile.force_fallback,
                        .precision = &r->o->compile.precision};
  kiln_program *p = NULL;
  /* several threads: every parallel schedule, however small the model */
  kiln_status st = kiln_lower_stress(fused, &lo, &p);
  if (st) {
    kiln_vrun_errored(r, l, st);
    if (kiln_vrun_done(r, l)) set_where_error(r, "lowering", l);
    return;
  }
  note_paths(r->res, p);
  if (r->o->gate) kiln_vrun_features(r->res, p); /* what a gate may read */
  st = verify_kernels(p);
  kiln_vlocal *lc = st ? NULL : local_new(r, p, KILN_LAYER_TILE);
  if (st) kiln_vrun_errored(r, l, st);
  else interp_program(r, p, l, lc);
  bool ok = l->ran && l->ok;
  if (kiln_vrun_done(r, l)) localize_layer(r, p, trace_interp, (void *)p, l, lc);
  kiln_vlocal_free(lc);
  if (ok && r->o->sched_seed) kiln_vrun_tile_drawn(r, fused, p);
  kiln_program_free(p);
}

/* ---- a target that runs ---- */
/* Runs c once (traced: local checks, and the determinism record at several threads), then
 * again at several threads, then once untraced as users run it (*untraced: its outputs
 * differ); fills l. Returns the determinism check (or NULL). */
static kiln_vdet *run_compiled(kiln_vrun *r, kiln_compiled *c, int threads, kiln_layer_result *l,
                               kiln_vlocal *lc, bool *untraced) {
  int n_out = kiln_compiled_graph(c)->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_layer_kind kind = l->kind;
  kiln_step_trace_fn obs = observer_fn(r, lc, kind);
  void *obs_user = observer_user(r, lc);
  /* the arena filled with 0xff (NaN in every float type) for the first run and with zeros
   * for the second: a value read before anything wrote it differs between the two */
  bool refill = r->o->determinism && r->o->fill;
  if (refill) kiln_compiled_set_fill(c, 0xff);
  kiln_vdet *det =
      (threads > 1 || refill) && r->o->determinism ? kiln_vdet_new(obs, obs_user) : NULL;
  kiln_status st = kiln_compiled_run_trace(c, r->n_in, r->inputs, outs,
                                           det ? kiln_vdet_observe : obs, det ? det : obs_user);
  if (st) kiln_vrun_errored(r, l, st);
  else kiln_vrun_compare(r, l, outs);
  if (!st) check_inputs_kept(r, l);
  if (lc) kiln_vlocal_finish(lc, l);
  if (refill) kiln_compiled_set_fill(c, 0x00);
  if (!st && det && !kiln_vdet_rerun(det, r, c, threads, refill, injector(r, kind), outs, l))
    kiln_vdet_free(det), det = NULL; /* the same bits: nothing to report */
  /* only where every traced run agreed (a fault injected into the traced runs is not in it) */
  *untraced =
      !st && !det && l->ok && !injector(r, kind) && kiln_vdet_untraced(r, c, threads, outs, l);
  for (int i = 0; i < n_out; i++) kiln_val_free(outs[i]);
  free(outs);
  return det;
}

/* The drawn schedule set the tile layer took (runner_sched.c) for the cpu layer that lowers
 * for the tile layer's threads, parsed; NULL for none. */
static kiln_sched_set *drawn_set(const kiln_vrun *r, const kiln_target *t, int threads) {
  kiln_sched_set *set = NULL;
  if (!r->drawn_sched || t->id != KILN_TARGET_CPU || threads != kiln_vrun_tile_threads(r))
    return NULL;
  kiln_status st = kiln_sched_set_parse(r->drawn_sched, "drawn", &set);
  if (!st) return set;
  kiln_status_free(st); /* it parsed once already */
  return NULL;
}

static void compiled_layer(kiln_vrun *r, const kiln_target *t, int threads, bool named) {
  kiln_layer_kind kind = kiln_layer_of_target(t->id);
  kiln_sched_set *drawn = drawn_set(r, t, threads);
  const char *how = drawn ? "drawn schedule" : "";
  kiln_layer_result *l = named   ? kiln_vrun_layer(r, kind, "%s (%d threads%s%s)", t->name, threads,
                                                 drawn ? ", " : "", how)
                         : drawn ? kiln_vrun_layer(r, kind, "%s (%s)", t->name, how)
                                 : kiln_vrun_layer(r, kind, "%s", t->name);
  kiln_graph *g = NULL;
  kiln_status st = kiln_vrun_copy(r, &g);
  kiln_compile_opts co = r->o->compile;
  co.threads = threads;
  co.schedule = drawn;
  /* several threads: the parallel forms of the kernels (OpenMP loops, their private
   * variables) run even on a small model, as in the tile layer; of the graphs with a schedule
   * seed (half of a campaign's) on half, as they cost compile time (a drawn set was taken by
   * a lowering of the default thresholds: so is its layer) */
  uint64_t ss = r->o->sched_seed;
  co.par_stress = threads > 1 && !drawn && (ss == 0 || ((ss >> 19) & 1));
  /* the memory plan from its local search (checked), on half of the graphs with a schedule
   * seed: small plans reach their lower bound by a heuristic, and the search never ran
   * otherwise */
  co.plan_stress = ss != 0 && ((ss >> 21) & 1);
  co.take_graph = true;
  co.release_weights = false;
  kiln_compiled *c = NULL;
  if (!st) st = kiln_compile(g, t, &co, &c);
  if (st) {
    kiln_sched_set_free(drawn);
    kiln_graph_free(g);
    kiln_vrun_errored(r, l, st);
    if (kiln_vrun_done(r, l)) set_where_error(r, "compiling", l);
    return;
  }
  const kiln_program *p = kiln_compiled_program(c);
  kiln_vlocal *lc = local_new(r, p, kind);
  bool untraced = false;
  kiln_vdet *det = run_compiled(r, c, threads, l, lc, &untraced);
  int step, value, x_step = -1, x_value = -1;
  bool inexact = !det && !untraced && l->ran && l->ok &&
                 kiln_vrun_exact(r, c, injector(r, kind), r->o->inject_user, l, &x_step, &x_value);
  if (kiln_vrun_done(r, l)) {
    if (inexact) describe_step(r, p, x_step, x_value);
    else if (untraced) kiln_vrun_set_where(r, "the outputs of the untraced run", "");
    else if (det && kiln_vdet_where(det, &step, &value)) describe_step(r, p, step, value);
    else if (det) kiln_vrun_set_where(r, "the outputs (every step's values were the same)", "");
    else localize_layer(r, p, trace_compiled, c, l, lc);
  }
  kiln_vdet_free(det);
  kiln_vlocal_free(lc);
  /* once, after the first layer of the cpu target (its threads do not matter: no OpenMP) */
  if (r->o->standalone && t->id == KILN_TARGET_CPU && !r->standalone_tried)
    r->standalone_tried = true, kiln_vrun_standalone(r, c);
  kiln_compiled_free(c);
  kiln_sched_set_free(drawn);
}

static void run_layers(kiln_vrun *r, const kiln_target *t) {
  int n = layer_threads(r), par = r->o->par_threads;
  compiled_layer(r, t, n, n > 1);
  if (par > 1 && par != n) compiled_layer(r, t, par, true);
}

/* ---- a target that compiles only ---- */
/* Why its device layer is skipped. */
static const char *device_note(const kiln_target *t) {
  if (t->id != KILN_TARGET_CUDA) return "running its kernels is not supported yet";
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return "no CUDA device (the CUDA driver library cannot be loaded)";
  dlclose(h);
  return "a CUDA driver is present, but running kernels on the device is not supported yet";
}

/* The step whose kernel the first error of an NVRTC log lies in: the log names lines of
 * kiln.cu ("kiln.cu(LINE): error: ..."); the kernel is the last __global__ function that
 * starts before LINE. -1 when the log names none. */
int kiln_vrun_nvrtc_step(const kiln_program *p, const char *src, const char *log) {
  const char *at = log ? strstr(log, "kiln.cu(") : NULL;
  if (!at || !src) return -1;
  long line = strtol(at + strlen("kiln.cu("), NULL, 10), n = 1;
  const char *kernel = NULL;
  for (const char *q = src; *q && n <= line; q++) {
    if (q[0] == '_' && !strncmp(q, "__global__ void ", 16)) kernel = q + 16;
    if (*q == '\n') n++;
  }
  for (int s = 0; kernel && s < p->steps.len; s++) {
    const kiln_step *st = &p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    const char *name = p->module->kernels.data[st->kernel]->name;
    size_t len = strlen(name);
    if (!strncmp(kernel, name, len) && kernel[len] == '(') return s;
  }
  return -1;
}

/* The layer "cuda (NVRTC)": whether NVRTC took the CUDA C of c (built with NVRTC). */
static void nvrtc_layer(kiln_vrun *r, const kiln_target *t, const kiln_compiled *c,
                        const kiln_program *p) {
  kiln_layer_result *l = kiln_vrun_layer(r, kiln_layer_of_target(t->id), "%s (NVRTC)", t->name);
  const kiln_cuda_build *b = c ? kiln_compiled_cuda(c) : NULL;
  if (!b) kiln_vrun_skip(l, "the CUDA C was not built");
  else if (!b->nvrtc_found) kiln_vrun_skip(l, "NVRTC cannot be loaded");
  else if (b->nvrtc_ok) l->ok = true;
  else {
    const char *log = b->nvrtc_log ? b->nvrtc_log : "";
    const char *first = strstr(log, "kiln.cu(");
    l->ok = false;
    snprintf(l->msg, sizeof l->msg, "NVRTC rejected the CUDA C: %s", first ? first : log);
    for (char *q = l->msg; *q; q++) /* one line */
      if (*q == '\n' || *q == '\r') *q = ' ';
  }
  if (kiln_vrun_done(r, l)) {
    int step = kiln_vrun_nvrtc_step(p, b ? b->source.data : NULL, b ? b->nvrtc_log : NULL);
    if (step >= 0) describe_step(r, p, step, -1);
    else set_where_error(r, "NVRTC", l);
  }
  if (b && b->nvrtc_found) l->seconds = b->seconds_nvrtc;
}

/* The target's program (mapped: kiln_target.map) in the tile interpreter, then its device
 * (skipped); for cuda with opts.cuda_ptx, NVRTC on its CUDA C first (the layer "cuda
 * (NVRTC)"). */
static void interp_layers(kiln_vrun *r, const kiln_target *t) {
  kiln_layer_kind kind = kiln_layer_of_target(t->id);
  kiln_layer_result *l = kiln_vrun_layer(r, kind, "%s (tile interpreter)", t->name);
  kiln_graph *g = NULL;
  kiln_compiled *c = NULL;
  kiln_compile_opts co = r->o->compile;
  bool ptx = t->id == KILN_TARGET_CUDA && r->o->cuda_ptx;
  co.cuda.no_nvrtc = !ptx;
  kiln_status st = r->all_tensors ? kiln_vrun_copy(r, &g) : KILN_OK;
  if (!r->all_tensors) kiln_vrun_skip(l, "an input is not a tensor");
  else if (!st) st = kiln_compile(g, t, &co, &c);
  const kiln_program *p = c ? kiln_compiled_program(c) : NULL;
  if (st) {
    kiln_vrun_errored(r, l, st);
    char stage[80];
    snprintf(stage, sizeof stage, "%s lowering", t->id == KILN_TARGET_CUDA ? "CUDA" : t->name);
    if (kiln_vrun_done(r, l)) set_where_error(r, stage, l);
  } else if (p) {
    kiln_vlocal *lc = local_new(r, p, kind);
    interp_program(r, p, l, lc);
    if (kiln_vrun_done(r, l)) localize_layer(r, p, trace_interp, (void *)p, l, lc);
    kiln_vlocal_free(lc);
  } else {
    kiln_vrun_done(r, l);
  }
  if (!st && ptx && p) nvrtc_layer(r, t, c, p);
  kiln_compiled_free(c);
  kiln_graph_free(g);
  l = kiln_vrun_layer(r, kind, "%s (device)", t->name);
  kiln_vrun_skip(l, "%s", device_note(t));
  kiln_vrun_done(r, l);
}

void kiln_vrun_target(kiln_vrun *r, const kiln_target *t) {
  if (kiln_target_can_run(t)) run_layers(r, t);
  else interp_layers(r, t);
}
