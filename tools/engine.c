/* The backends that `kiln run`, `kiln test-onnx` and `kiln bench` share: one engine
 * prepares a graph for a backend (passes, lowering, compilation) and runs it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *const ENGINE_NAMES[KILN_CLI_COMPILED] = {"interp", "opt", "tile"};

kiln_cli_backend kiln_cli_compiled(const kiln_target *t) {
  kiln_cli_backend b = {KILN_CLI_COMPILED, t ? t : kiln_target_default()};
  return b;
}

const char *kiln_cli_backend_name(kiln_cli_backend b) {
  if (b.kind == KILN_CLI_COMPILED) return b.target ? b.target->name : "?";
  return b.kind >= 0 && b.kind < KILN_CLI_COMPILED ? ENGINE_NAMES[b.kind] : "?";
}

/* The engines, then every registered target that runs. */
int kiln_cli_backend_parse(const char *s, kiln_cli_backend *out) {
  for (int k = 0; s && k < KILN_CLI_COMPILED; k++)
    if (!strcmp(s, ENGINE_NAMES[k])) {
      out->kind = (kiln_cli_engine_kind)k, out->target = NULL;
      return 0;
    }
  const kiln_target *t = kiln_target_find(s);
  if (!kiln_target_can_run(t)) return -1;
  *out = kiln_cli_compiled(t);
  return 0;
}

void kiln_cli_backends(kiln_strbuf *b) {
  for (int k = 0; k < KILN_CLI_COMPILED; k++) kiln_strbuf_printf(b, "%s, ", ENGINE_NAMES[k]);
  kiln_target_names(b, ", ", true);
}

int kiln_cli_unknown_backend(const char *cmd, const char *v) {
  kiln_strbuf b = {0};
  kiln_cli_backends(&b);
  const kiln_target *t = kiln_target_find(v);
  int rc = t ? kiln_cli_usage(cmd,
                              "backend '%s': the %s target compiles only (kiln compile --target "
                              "%s); the backends that run: %s",
                              t->name, t->name, t->name, b.data)
             : kiln_cli_usage(cmd, "unknown backend '%s' (one of %s)", v ? v : "", b.data);
  kiln_strbuf_free(&b);
  return rc;
}

static void compiled_summaries(kiln_strbuf *b) {
  int n = 0;
  for (int i = 0; i < kiln_target_count(); i++) {
    const kiln_target *t = kiln_target_at(i);
    if (kiln_target_can_run(t))
      kiln_strbuf_printf(b, "%s%s: %s", n++ ? "; " : "", t->name, t->summary);
  }
}

void kiln_cli_omp_passive(void) {
  setenv("OMP_WAIT_POLICY", "passive", 0);
}

void kiln_cli_put_help(const char *text) {
  static const char *const keys[3] = {"{BACKENDS}", "{TARGETS}", "{COMPILED}"};
  kiln_strbuf lists[3] = {{0}, {0}, {0}};
  kiln_cli_backends(&lists[0]);
  kiln_target_names(&lists[1], "|", false);
  compiled_summaries(&lists[2]);
  for (const char *p = text; *p;) {
    int k = 0;
    while (k < 3 && strncmp(p, keys[k], strlen(keys[k]))) k++;
    if (k < 3) {
      fputs(lists[k].data ? lists[k].data : "", stdout);
      p += strlen(keys[k]);
    } else {
      fputc(*p++, stdout);
    }
  }
  for (int k = 0; k < 3; k++) kiln_strbuf_free(&lists[k]);
}

struct kiln_cli_engine {
  kiln_cli_engine_opts opts;
  kiln_graph *graph;       /* owned */
  kiln_program *program;   /* tile */
  kiln_compiled *compiled; /* a target's compiled code */
  double prepare_seconds;
};

/* The tensors of a list of values; only tensors run on the compiled backends. */
static kiln_status as_tensors(const kiln_graph *g, kiln_val *const *vals, kiln_tensor **ts) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_val *v = vals[i];
    if (!v || v->kind != KILN_TYPE_TENSOR || !v->t)
      return kiln_unsupported("input '%s' is not a tensor: only the interp, opt and cpu backends "
                              "run sequences and optionals",
                              g->values.data[g->inputs.data[i]].name);
    ts[i] = v->t;
  }
  return KILN_OK;
}

/* Binds symbolic dims to the extents of the tensor inputs (sequences and optionals bind
 * nothing). */
static kiln_status bind_inputs(kiln_graph *g, kiln_val *const *inputs) {
  if (!inputs) return KILN_OK;
  int n = g->inputs.len;
  const kiln_tensor **ts = kiln_xcalloc((size_t)n + 1, sizeof *ts);
  for (int i = 0; i < n; i++)
    ts[i] = inputs[i] && inputs[i]->kind == KILN_TYPE_TENSOR ? inputs[i]->t : NULL;
  kiln_status st = kiln_graph_bind_inputs(g, n, ts);
  free(ts);
  return st;
}

static bool dim_given(const kiln_compile_opts *co, const char *sym) {
  for (int i = 0; co && i < co->n_dims; i++)
    if (!strcmp(co->dims[i].sym, sym)) return true;
  return false;
}

kiln_status kiln_cli_check_dims(const kiln_graph *g, const kiln_compile_opts *co) {
  char tb[128];
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    if (v->type.kind != KILN_TYPE_TENSOR) continue;
    if (v->type.rank < 0)
      return kiln_invalid("input '%s' has no known rank: compiled code needs a static shape",
                          v->name);
    for (int d = 0; d < v->type.rank; d++) {
      const kiln_dim *dm = &v->type.dims[d];
      if (dm->value >= 0 || (dm->sym && dim_given(co, dm->sym))) continue;
      kiln_type_str(&v->type, tb, sizeof tb);
      if (dm->sym)
        return kiln_invalid("input '%s' is %s: give the extent of '%s' with --dim %s=N", v->name,
                            tb, dm->sym, dm->sym);
      return kiln_invalid("input '%s' is %s: dim %d has no name and no extent, so --dim cannot "
                          "bind it (name it in the model)",
                          v->name, tb, d);
    }
  }
  return KILN_OK;
}

static kiln_status compile_target(kiln_cli_engine *e) {
  kiln_compile_opts co;
  kiln_compile_opts_init(&co);
  if (e->opts.compile) co = *e->opts.compile;
  if (e->opts.passes) co.passes = *e->opts.passes;
  if (e->opts.threads > 0) co.threads = e->opts.threads;
  co.verbose = co.verbose || e->opts.verbose;
  co.take_graph = false;
  return kiln_compile(e->graph, e->opts.backend.target, &co, &e->compiled);
}

static kiln_status run_passes(kiln_cli_engine *e, bool no_fusion) {
  kiln_pass_opts po;
  memset(&po, 0, sizeof po);
  if (e->opts.passes) po = *e->opts.passes;
  if (!e->opts.passes) po.pass_limit = -1;
  po.no_fusion = po.no_fusion || no_fusion;
  if (!po.fuse_classify) po.fuse_classify = kiln_lower_fuse_class;
  return kiln_passes_run(e->graph, &po, NULL);
}

static kiln_status prepare(kiln_cli_engine *e, kiln_val *const *inputs) {
  if (e->opts.backend.kind != KILN_CLI_INTERP) KILN_TRY(bind_inputs(e->graph, inputs));
  switch (e->opts.backend.kind) {
  case KILN_CLI_INTERP: return KILN_OK;
  case KILN_CLI_COMPILED:
    if (!inputs) KILN_TRY(kiln_cli_check_dims(e->graph, e->opts.compile));
    return compile_target(e);
  case KILN_CLI_OPT: return run_passes(e, true);
  case KILN_CLI_TILE: {
    KILN_TRY(run_passes(e, false));
    kiln_lower_opts lo = {.target = KILN_TARGET_CPU, .threads = 1};
    return kiln_lower(e->graph, &lo, &e->program);
  }
  default: return kiln_unsupported("unknown backend %d", (int)e->opts.backend.kind);
  }
}

kiln_status kiln_cli_engine_new(kiln_graph *g, const kiln_cli_engine_opts *o,
                                kiln_val *const *inputs, kiln_cli_engine **out) {
  double t0 = kiln_clock_seconds();
  kiln_cli_engine *e = kiln_xcalloc(1, sizeof *e);
  e->opts = *o;
  e->graph = g;
  kiln_status st = prepare(e, inputs);
  if (st) {
    kiln_cli_engine_free(e);
    return kiln_status_annotate(st, "backend %s", kiln_cli_backend_name(o->backend));
  }
  e->prepare_seconds = kiln_clock_seconds() - t0;
  *out = e;
  return KILN_OK;
}

static kiln_status run_tensors(kiln_cli_engine *e, kiln_val *const *inputs, kiln_val **outputs) {
  const kiln_graph *g = e->graph;
  int n_in = g->inputs.len, n_out = g->outputs.len;
  kiln_tensor **ins = kiln_xcalloc((size_t)n_in + 1, sizeof *ins);
  kiln_tensor **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  kiln_status st = as_tensors(g, inputs, ins);
  if (!st) st = kiln_program_interp(e->program, n_in, ins, outs);
  for (int i = 0; i < n_out; i++) outputs[i] = st ? NULL : kiln_val_tensor(outs[i]);
  free(ins);
  free(outs);
  return st;
}

kiln_status kiln_cli_engine_run(kiln_cli_engine *e, kiln_val *const *inputs, kiln_val **outputs) {
  if (e->compiled)
    return kiln_compiled_run_vals(e->compiled, e->graph->inputs.len, inputs, outputs);
  if (e->program) return run_tensors(e, inputs, outputs);
  kiln_interp_opts io = {.trace = e->opts.trace};
  return kiln_interp_run(e->graph, &io, e->graph->inputs.len, inputs, outputs);
}

const kiln_graph *kiln_cli_engine_graph(const kiln_cli_engine *e) {
  return e->graph;
}

double kiln_cli_engine_prepare_seconds(const kiln_cli_engine *e) {
  return e->prepare_seconds;
}

void kiln_cli_engine_report(const kiln_cli_engine *e, kiln_strbuf *out) {
  kiln_strbuf_printf(out, "backend %s: prepared in %.1f ms\n",
                     kiln_cli_backend_name(e->opts.backend), e->prepare_seconds * 1e3);
  if (e->program) kiln_program_print(e->program, out);
  if (e->compiled) kiln_compiled_report(e->compiled, out);
}

/* The fallback steps of the program, one line each (nothing when there are none). */
void kiln_cli_engine_fallbacks(const kiln_cli_engine *e, kiln_strbuf *out) {
  const kiln_program *p = e->compiled ? kiln_compiled_program(e->compiled) : e->program;
  const kiln_graph *g = e->compiled ? kiln_compiled_graph(e->compiled) : e->graph;
  char label[200];
  kiln_strbuf lb = {0}, rb = {0}; /* for the terminal: one line each, no escapes */
  for (int i = 0; p && i < p->steps.len; i++) {
    const kiln_step *s = &p->steps.data[i];
    if (s->kind != KILN_STEP_FALLBACK) continue;
    kiln_strbuf_printf(
        out, "fallback %s: %s\n",
        kiln_cli_show(&lb, kiln_node_label(&g->nodes.data[s->node], label, sizeof label)),
        kiln_cli_show(&rb, s->reason ? s->reason : "no reason given"));
  }
  kiln_strbuf_free(&lb), kiln_strbuf_free(&rb);
}

const kiln_compiled *kiln_cli_engine_compiled(const kiln_cli_engine *e) {
  return e->compiled;
}

void kiln_cli_engine_free(kiln_cli_engine *e) {
  if (!e) return;
  kiln_program_free(e->program);
  kiln_compiled_free(e->compiled);
  kiln_graph_free(e->graph);
  free(e);
}
