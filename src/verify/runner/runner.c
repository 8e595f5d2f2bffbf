/* The differential runner: the reference interpreter, the graph after the passes, the
 * lowered program in the tile interpreter, the compiled C code and the CUDA program, each
 * compared with the double-precision reference of the caller's graph (kiln_vref).
 *
 *   kiln_verify_run: reference -> pass layers (runner_pass.c) -> tile, cpu, cuda
 *   (runner_backend.c) -> on the first failure: the pass (bisected), the node or kernel (where)
 *   and the signature -> the case directory (case.c).
 *
 * The caller's graph is never modified: every layer works on a copy loaded from its
 * serialized form, with the symbolic input dims bound to the inputs as the compiler does. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onnx/onnx.h"
#include "runner_internal.h"

static const char *const LAYER_NAMES[KILN_LAYER_TARGET] = {"reference", "pass", "tile"};

const char *kiln_layer_kind_name(kiln_layer_kind k) {
  if (k >= KILN_LAYER_TARGET && k < KILN_LAYER_KIND_COUNT) return kiln_layer_target(k)->name;
  return k >= 0 && k < KILN_LAYER_TARGET ? LAYER_NAMES[k] : "?";
}

kiln_layer_kind kiln_layer_of_target(kiln_target_id t) {
  return (kiln_layer_kind)(KILN_LAYER_TARGET + t);
}

const kiln_target *kiln_layer_target(kiln_layer_kind k) {
  return kiln_target_at((int)k - KILN_LAYER_TARGET);
}

/* "unknown target 'gpu' in 'cpu,gpu' (cpu, cuda; or none)" */
static kiln_status bad_targets(const char *what, const char *name, const char *list) {
  kiln_strbuf known = {0};
  kiln_target_names(&known, ", ", false);
  kiln_status st =
      kiln_invalid("%s target '%s' in '%s' (%s; or none)", what, name, list, known.data);
  kiln_strbuf_free(&known);
  return st;
}

kiln_status kiln_verify_parse_targets(const char *list, bool targets[KILN_TARGET_COUNT]) {
  for (int i = 0; i < KILN_TARGET_COUNT; i++) targets[i] = false;
  if (!list) list = "";
  if (!strcmp(list, "none")) return KILN_OK;
  const char *p = list;
  do {
    size_t n = strcspn(p, ",");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
    const kiln_target *t = n < 63 ? kiln_target_find(name) : NULL;
    if (!t) return bad_targets(n ? "unknown" : "empty", name, list);
    if (targets[t->id]) return bad_targets("repeated", name, list);
    targets[t->id] = true;
    p += n;
  } while (*p++ == ',');
  return KILN_OK;
}

void kiln_verify_targets_str(const bool targets[KILN_TARGET_COUNT], kiln_strbuf *b) {
  int n = 0;
  for (int i = 0; i < KILN_TARGET_COUNT; i++)
    if (targets[i]) kiln_strbuf_printf(b, "%s%s", n++ ? "," : "", kiln_target_at(i)->name);
  if (!n) kiln_strbuf_printf(b, "none");
}

void kiln_verify_opts_init(kiln_verify_opts *o) {
  memset(o, 0, sizeof *o);
  o->targets[KILN_TARGET_CPU] = true;
  o->each_pass = true;
  o->threads = 1;
  o->determinism = true;
  o->fill = true;
  o->exact = true;
  o->cuda_ptx = true;
  o->local = true;
  kiln_compile_opts_init(&o->compile);
}

/* ---- copies of the caller's graph ---- */
static kiln_status load_copy(const kiln_vrun *r, kiln_graph **out) {
  if (r->clone_text) return kiln_graph_parse(r->text.data, "<copy>", out);
  KILN_TRY(kiln_onnx_load_bytes(r->onnx.data, r->onnx.len, NULL, out));
  (*out)->ir_version = r->g->ir_version; /* export writes its own when g has none */
  kiln_status st = kiln_ops_infer_graph(*out);
  if (st) kiln_graph_free(*out), *out = NULL;
  return st;
}

kiln_status kiln_vrun_copy(kiln_vrun *r, kiln_graph **out) {
  kiln_graph *c;
  KILN_TRY(load_copy(r, &c));
  kiln_status st = kiln_graph_bind_inputs(c, r->n_in, (const kiln_tensor *const *)r->tin);
  if (st) {
    kiln_graph_free(c);
    return kiln_status_annotate(st, "binding the inputs' dims");
  }
  *out = c;
  return KILN_OK;
}

/* The data of the root graph's constants, bit for bit (the text below elides large ones). */
static bool same_constants(const kiln_graph *a, const kiln_graph *b) {
  for (int v = 0; v < a->values.len; v++) {
    const kiln_tensor *x = a->values.data[v].data, *y = b->values.data[v].data;
    if (a->values.data[v].kind != KILN_VALUE_CONST || !x || !y || x->numel <= 16) continue;
    if (x->dtype == KILN_STRING || x->numel != y->numel || x->dtype != y->dtype) return false;
    if (memcmp(x->data, y->data, kiln_tensor_nbytes(x))) return false;
  }
  return true;
}

static bool same_graph(const kiln_graph *a, const kiln_graph *b) {
  kiln_strbuf x = {0}, y = {0};
  kiln_graph_print(a, &x, 16);
  kiln_graph_print(b, &y, 16);
  bool same = x.len == y.len && (!x.len || !memcmp(x.data, y.data, x.len));
  kiln_strbuf_free(&x);
  kiln_strbuf_free(&y);
  return same && a->values.len == b->values.len && same_constants(a, b);
}

/* Serializes g once; when the ONNX round trip does not give g back, copies parse the text
 * IR instead (exact by construction, slower for large constants). */
static kiln_status prepare_copies(kiln_vrun *r) {
  kiln_status st = kiln_onnx_save_bytes(r->g, &r->onnx);
  kiln_graph *c = NULL;
  if (!st) st = load_copy(r, &c);
  bool ok = !st && same_graph(c, r->g);
  kiln_status_free(st);
  kiln_graph_free(c);
  if (ok) return KILN_OK;
  r->clone_text = true;
  kiln_graph_print(r->g, &r->text, -1);
  KILN_TRYF(load_copy(r, &c), "copying the graph");
  kiln_graph_free(c);
  return KILN_OK;
}

/* ---- layers ---- */
kiln_layer_result *kiln_vrun_layer(kiln_vrun *r, kiln_layer_kind kind, const char *fmt, ...) {
  kiln_layer_result l;
  memset(&l, 0, sizeof l);
  l.kind = kind;
  l.ran = true;
  l.ok = true;
  l.worst_output = -1;
  l.looseness = r->looseness;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l.name, sizeof l.name, fmt, ap);
  va_end(ap);
  kiln_vec_push(&r->res->layers, l);
  if (r->o->log) fprintf(r->o->log, "[verify] %s ...\n", l.name), fflush(r->o->log);
  if (r->o->layer_started) r->o->layer_started(r->o->layer_started_user, kind, l.name);
  r->t0 = kiln_clock_seconds();
  return &r->res->layers.data[r->res->layers.len - 1];
}

void kiln_vrun_compare(kiln_vrun *r, kiln_layer_result *l, kiln_val *const *outs) {
  const kiln_graph *g = r->g;
  for (int i = 0; i < g->outputs.len; i++) {
    kiln_vcheck c;
    int v = g->outputs.data[i];
    if (!outs[i]) {
      if (l->ok)
        snprintf(l->msg, sizeof l->msg, "output '%s' was not computed", g->values.data[v].name);
      l->ok = false, l->max_ratio = INFINITY, l->worst_output = i;
      continue;
    }
    kiln_vref_check(r->ref, v, outs[i], &c);
    if (c.max_err > l->max_err) l->max_err = c.max_err;
    if (c.max_ratio > l->max_ratio || l->worst_output < 0)
      l->max_ratio = c.max_ratio > l->max_ratio ? c.max_ratio : l->max_ratio, l->worst_output = i;
    if (!c.ok && l->ok)
      snprintf(l->msg, sizeof l->msg, "output '%s': %s", g->values.data[v].name, c.msg);
    if (!c.ok) l->ok = false;
  }
}

void kiln_vrun_errored(kiln_vrun *r, kiln_layer_result *l, kiln_status st) {
  kiln_vrun_environment(r, l, st);
  l->ok = false;
  l->errored = true;
  l->max_ratio = INFINITY;
  snprintf(l->msg, sizeof l->msg, "%s", kiln_status_message(st));
  kiln_status_free(st);
}

void kiln_vrun_skip(kiln_layer_result *l, const char *fmt, ...) {
  l->ran = false;
  l->ok = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->msg, sizeof l->msg, fmt, ap);
  va_end(ap);
}

bool kiln_vrun_done(kiln_vrun *r, kiln_layer_result *l) {
  kiln_verify_result *res = r->res;
  l->seconds = kiln_clock_seconds() - r->t0;
  if (l->ran && !l->ok) kiln_verify_log(r->o->log, "[verify] %s: %s", l->name, l->msg);
  if (!l->ran || l->ok || res->failed) return false;
  res->failed = true;
  res->first_failing = (int)(l - res->layers.data);
  res->fail_kind = l->kind;
  return true;
}

/* ---- where and signature ---- */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The comma-separated list sorted, each name once ("-" when empty). */
static void sorted_ops(const char *ops, char *out, size_t len) {
  char *copy = kiln_xstrdup(ops ? ops : "");
  const char *items[64];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < 64;
       t = strtok_r(NULL, ",", &save))
    if (*t) items[n++] = t;
  qsort(items, (size_t)n, sizeof items[0], cmp_str);
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && !strcmp(items[i], items[i - 1])) continue;
    int w = snprintf(out + used, len - used, "%s%s", used ? "," : "", items[i]);
    if (w < 0 || (size_t)w >= len - used) break;
    used += (size_t)w;
  }
  if (!used) snprintf(out, len, "-");
  free(copy);
}

void kiln_vrun_set_where(kiln_vrun *r, const char *where, const char *ops) {
  kiln_verify_result *res = r->res;
  char sorted[200];
  sorted_ops(ops, sorted, sizeof sorted);
  snprintf(res->where, sizeof res->where, "%s", where ? where : "");
  snprintf(res->signature, sizeof res->signature, "%s|%s|%s", kiln_layer_kind_name(res->fail_kind),
           res->pass[0] ? res->pass : "-", sorted);
}

int kiln_verify_bisect(int good, int bad, bool (*fails)(void *user, int k), void *user) {
  while (bad - good > 1) {
    int mid = good + (bad - good) / 2;
    if (fails(user, mid)) bad = mid;
    else good = mid;
  }
  return bad;
}

/* ---- how much the end-to-end bounds can judge ---- */
double kiln_verify_looseness(const kiln_vref *r, int v) {
  const kiln_tensor *e = v >= 0 && v < r->n_values ? r->err[v] : NULL;
  const kiln_val *x = v >= 0 && v < r->n_values ? r->val[v] : NULL;
  if (!e || !x || x->kind != KILN_TYPE_TENSOR || !x->t || x->t->numel != e->numel) return 0;
  const double *pe = e->data;
  double max_err = 0, max_val = 0;
  for (int64_t i = 0; i < e->numel; i++) {
    double a = fabs(kiln_load_f64(x->t->dtype, x->t->data, (size_t)i));
    if (!isfinite(a)) continue;
    if (!isfinite(pe[i])) return INFINITY;
    if (pe[i] > max_err) max_err = pe[i];
    if (a > max_val) max_val = a;
  }
  return KILN_VERIFY_SAFETY * max_err / (max_val > 1e-6 ? max_val : 1e-6);
}

static double graph_looseness(const kiln_vref *r, const kiln_graph *g) {
  double worst = 0;
  for (int i = 0; i < g->outputs.len; i++) {
    double x = kiln_verify_looseness(r, g->outputs.data[i]);
    if (!(x <= worst)) worst = x;
  }
  return worst;
}

/* ---- the run ---- */
static void reference_layer(kiln_vrun *r) {
  const kiln_graph *g = r->g;
  kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_REFERENCE, "reference");
  kiln_val **outs = kiln_xcalloc((size_t)g->outputs.len + 1, sizeof *outs);
  kiln_status st = kiln_interp_run(g, NULL, r->n_in, r->inputs, outs);
  if (st) kiln_vrun_errored(r, l, st);
  else kiln_vrun_compare(r, l, outs);
  if (l->ok && (r->ref->n_unstable || r->ref->n_nonfinite))
    snprintf(l->msg, sizeof l->msg, "%lld unstable, %lld non-finite or out-of-range elements: %s",
             (long long)r->ref->n_unstable, (long long)r->ref->n_nonfinite, r->ref->note);
  for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outs[i]);
  free(outs);
  if (kiln_vrun_done(r, l)) kiln_vrun_set_where(r, "", "");
}

uint64_t kiln_vrun_input_hash(const kiln_vrun *r, int i) {
  const kiln_tensor *t = r->tin[i];
  if (!t || t->dtype == KILN_STRING) return 0;
  return kiln_hash_bytes(t->data, kiln_tensor_nbytes(t), (uint64_t)t->numel) | 1;
}

static kiln_status setup(kiln_vrun *r) {
  r->tin = kiln_xcalloc((size_t)r->n_in + 1, sizeof *r->tin);
  r->in_hash = kiln_xcalloc((size_t)r->n_in + 1, sizeof *r->in_hash);
  r->all_tensors = true;
  for (int i = 0; i < r->n_in; i++) {
    const kiln_val *v = r->inputs[i];
    r->tin[i] = v->kind == KILN_TYPE_TENSOR ? v->t : NULL;
    if (!r->tin[i]) r->all_tensors = false;
    r->in_hash[i] = kiln_vrun_input_hash(r, i);
  }
  double t0 = kiln_clock_seconds();
  KILN_TRYF(kiln_vref_compute_prec(r->g, r->n_in, r->inputs, &r->o->compile.precision, &r->ref),
            "the reference cannot run");
  double t1 = kiln_clock_seconds();
  r->looseness = graph_looseness(r->ref, r->g);
  r->res->n_unstable = r->ref->n_unstable;
  if (r->ref->n_unstable)
    snprintf(r->res->unstable_note, sizeof r->res->unstable_note, "%s", r->ref->note);
  KILN_TRY(prepare_copies(r));
  if (r->o->log)
    fprintf(r->o->log, "[verify] reference with bounds %.2f s, copies %.2f s%s\n", t1 - t0,
            kiln_clock_seconds() - t1, r->clone_text ? " (through the text IR)" : "");
  return KILN_OK;
}

static void layers(kiln_vrun *r) {
  reference_layer(r);
  kiln_graph *fused = NULL;
  kiln_status st = kiln_vrun_passes(r, &fused);
  if (st) { /* the runner's own trouble (a copy that cannot be made): a failure too */
    kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_PASS, "passes");
    kiln_vrun_errored(r, l, st);
    if (kiln_vrun_done(r, l)) kiln_vrun_set_where(r, "", "");
  }
  if (fused) {
    kiln_vrun_tile(r, fused);
    kiln_graph_free(fused);
  } else {
    kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_TILE, "tile");
    kiln_vrun_skip(l, "the passes failed: nothing to lower");
    kiln_vrun_done(r, l);
  }
  int pass = -1; /* the gate's answer, asked once, for the targets whose code runs here */
  for (int t = 0; t < kiln_target_count(); t++) {
    const kiln_target *tg = kiln_target_at(t);
    if (!r->o->targets[t]) continue;
    if (kiln_target_can_run(tg) && r->o->gate) {
      if (pass < 0) pass = r->o->gate(r->o->gate_user, r->res);
      if (!pass) continue;
    }
    r->res->compiled_ran |= kiln_target_can_run(tg);
    kiln_vrun_target(r, tg);
  }
}

kiln_status kiln_verify_run(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                            const kiln_verify_opts *o, kiln_verify_result *res) {
  kiln_verify_opts dflt;
  kiln_verify_opts_init(&dflt);
  memset(res, 0, sizeof *res);
  res->first_failing = -1;
  res->threads = o && o->threads > 0 ? o->threads : 1;
  if (o && o->par_threads > res->threads) res->threads = o->par_threads;
  if (o) kiln_precision_format(&o->compile.precision, res->precision, sizeof res->precision);
  if (o && o->compile.force_fallback)
    snprintf(res->fallback, sizeof res->fallback, "%s", o->compile.force_fallback);
  KILN_TRY(kiln_vrun_check_inputs(g, n_in, inputs));
  kiln_vrun r = {.g = g, .n_in = n_in, .inputs = inputs, .o = o ? o : &dflt, .res = res};
  kiln_status st = setup(&r);
  if (!st) layers(&r);
  if (!st) st = kiln_vrun_take_environment(&r); /* not a finding: no case is written */
  kiln_status_free(r.env);
  if (!st && res->failed && r.o->repro_dir) {
    st = kiln_verify_write_case(r.o->repro_dir, g, n_in, inputs, res);
    if (!st) snprintf(res->case_dir, sizeof res->case_dir, "%s", r.o->repro_dir);
  }
  kiln_vref_free(r.ref);
  kiln_strbuf_free(&r.onnx);
  kiln_strbuf_free(&r.text);
  free(r.drawn_sched);
  free(r.tin);
  free(r.in_hash);
  if (st) kiln_verify_result_free(res);
  return st;
}

void kiln_verify_result_free(kiln_verify_result *res) {
  kiln_vec_free(&res->layers);
}

/* ---- the table ---- */
static void print_num(kiln_strbuf *out, bool ran, bool errored, double x) {
  if (!ran || errored) kiln_strbuf_printf(out, " %11s", "-");
  else if (isinf(x)) kiln_strbuf_printf(out, " %11s", "inf");
  else kiln_strbuf_printf(out, " %11.3g", x);
}

/* The status column: ok / FAIL / ERROR / skipped, and what the checks could judge. */
static void print_status(const kiln_layer_result *l, kiln_strbuf *out) {
  bool local = l->local_steps > l->local_unchecked;
  bool loose = !(l->looseness <= KILN_VERIFY_LOOSE);
  const char *status = !l->ran ? "skipped" : l->errored ? "ERROR" : l->ok ? "ok" : "FAIL";
  if (l->ran && l->ok && loose && !local) status = "bound too loose, not judged";
  kiln_strbuf_printf(out, "%s", status);
  bool any = l->ran && (l->local_steps || l->local_unchecked);
  if (any)
    kiln_strbuf_printf(out, " (%d %s checked locally%s", l->local_steps - l->local_unchecked,
                       l->kind == KILN_LAYER_PASS ? "values" : "kernels",
                       loose ? ", end-to-end bound too loose" : "");
  if (any && l->local_unchecked) kiln_strbuf_printf(out, ", %d unchecked", l->local_unchecked);
  if (any && l->local_unstable) kiln_strbuf_printf(out, ", %d unstable", l->local_unstable);
  if (any) kiln_strbuf_printf(out, ")");
  if (l->msg[0]) kiln_strbuf_printf(out, ": "), kiln_esc_line(out, l->msg); /* one line */
  kiln_strbuf_printf(out, "\n");
}

/* The verdict when no layer failed: which layers the bounds could judge. */
static void print_verdict(const kiln_verify_result *res, kiln_strbuf *out) {
  int unjudged = 0, judged = 0;
  double loose = 0;
  for (int i = 0; i < res->layers.len; i++) {
    const kiln_layer_result *l = &res->layers.data[i];
    if (!l->ran) continue;
    bool local = l->local_steps > l->local_unchecked;
    if (!(l->looseness <= KILN_VERIFY_LOOSE) && !local) unjudged++, loose = l->looseness;
    else judged++;
  }
  if (!unjudged) {
    kiln_strbuf_printf(out, "result: every layer agrees with the reference\n");
    return;
  }
  kiln_strbuf_printf(out,
                     "result: no layer disagrees, but the end-to-end bounds are too loose to "
                     "judge %d layer%s (relative bound %.3g > %g); %s\n",
                     unjudged, unjudged == 1 ? "" : "s", loose, KILN_VERIFY_LOOSE,
                     judged ? "the layers marked ok were checked kernel by kernel or within "
                              "their bounds"
                            : "nothing was verified");
}

void kiln_verify_print(const kiln_verify_result *res, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "%-28s %-4s %11s %11s %11s %8s  %s\n", "layer", "ran", "max error",
                     "err/bound", "local", "seconds", "status");
  for (int i = 0; i < res->layers.len; i++) {
    const kiln_layer_result *l = &res->layers.data[i];
    kiln_strbuf_printf(out, "%-28s %-4s", l->name, l->ran ? "yes" : "no");
    print_num(out, l->ran, l->errored, l->max_err);
    print_num(out, l->ran, l->errored, l->max_ratio);
    print_num(out, l->ran && l->local_steps > l->local_unchecked, l->errored, l->local_ratio);
    kiln_strbuf_printf(out, " %8.3f  ", l->seconds);
    print_status(l, out);
  }
  if (res->fired[0]) kiln_strbuf_printf(out, "passes that changed the graph: %s\n", res->fired);
  if (res->n_unstable)
    kiln_strbuf_printf(out,
                       "warning: %lld elements of the reference are unstable (%s): a discrete "
                       "result lies within rounding of its threshold, so a mismatch after it "
                       "may be no bug (try another --seed)\n",
                       (long long)res->n_unstable, res->unstable_note);
  if (!res->failed) {
    print_verdict(res, out);
    return;
  }
  const kiln_layer_result *f = &res->layers.data[res->first_failing];
  char cmd[1200];
  kiln_strbuf_printf(out, "result: FAILED\nfirst failing layer: %s\n", f->name);
  if (res->pass[0])
    kiln_strbuf_printf(out, "pass: %s (application %d)\n", res->pass, res->pass_application);
  kiln_strbuf_printf(out, "where: "); /* names from the model: one escaped line */
  kiln_esc_line(out, res->where[0] ? res->where : "-");
  kiln_strbuf_printf(out, "\nsignature: %s\n", res->signature);
  if (res->case_dir[0])
    kiln_strbuf_printf(out, "case: %s\nreplay: %s\n", res->case_dir,
                       kiln_verify_replay_command(res->case_dir, res, cmd, sizeof cmd));
}
