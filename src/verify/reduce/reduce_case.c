/* Reducing a case directory: the predicate is "the runner fails with the recorded signature"
 * (see reduce.h, kiln_reduce_case). */
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

typedef struct case_pred {
  kiln_verify_opts vo; /* the options the failure is checked with */
  char signature[256];
  bool need_clean; /* candidates must have no unstable or non-finite reference element */
  bool exact;      /* the signature itself, not a subset of its op kinds */
  int runs;
  kiln_status env; /* the first run the environment failed (no C compiler, a full disk) */
} case_pred;

/* True when the reference of (g, inputs) has no unstable and no non-finite element. */
static bool clean_reference(const kiln_graph *g, int n_in, kiln_val *const *in) {
  kiln_vref *r = NULL;
  kiln_status s = kiln_vref_compute(g, n_in, in, &r);
  bool ok = !s && r->n_unstable == 0 && r->n_nonfinite == 0;
  kiln_status_free(s);
  if (r) kiln_vref_free(r);
  return ok;
}

/* Runs the runner with p's options; the signature of the failure, "" when none. */
static void run_signature(case_pred *p, const kiln_graph *g, int n_in, kiln_val *const *in,
                          char *sig, size_t len) {
  kiln_verify_result res;
  sig[0] = 0;
  p->runs++;
  kiln_status s = kiln_verify_run(g, n_in, in, &p->vo, &res);
  if (!s && res.failed) snprintf(sig, len, "%s", res.signature);
  if (!s) kiln_verify_result_free(&res);
  if (s && !p->env && kiln_status_code(s) == KILN_ERR_SYSTEM) p->env = s, s = KILN_OK;
  kiln_status_free(s);
}

/* "kind|pass|A,B,C": the same kind and pass, and each op kind of got among those of want. */
static bool subset_failure(const char *want, const char *got) {
  const char *w = strchr(want, '|'), *g = strchr(got, '|');
  w = w ? strchr(w + 1, '|') : NULL;
  g = g ? strchr(g + 1, '|') : NULL;
  if (!w || !g || w - want != g - got || strncmp(want, got, (size_t)(w - want))) return false;
  w++, g++;
  if (!strcmp(w, "-") || !strcmp(g, "-")) return !strcmp(w, g);
  for (const char *p = g; *p;) {
    size_t n = strcspn(p, ",");
    bool found = false;
    for (const char *q = w; *q && !found;) {
      size_t m = strcspn(q, ",");
      found = m == n && !strncmp(p, q, n);
      q += m + (q[m] ? 1 : 0);
    }
    if (!found) return false;
    p += n + (p[n] ? 1 : 0);
  }
  return true;
}

bool kiln_reduce_same_failure(const char *recorded, const char *got, bool exact) {
  if (!recorded || !got || !got[0]) return false;
  return exact ? !strcmp(recorded, got) : subset_failure(recorded, got);
}

static bool matches(const case_pred *p, const char *sig) {
  return kiln_reduce_same_failure(p->signature, sig, p->exact);
}

static bool case_holds(void *user, const kiln_graph *g, int n_in, kiln_val *const *in) {
  case_pred *p = user;
  for (int i = 0; i < n_in; i++) /* a case holds tensors only (kiln_verify_write_case) */
    if (!in[i] || in[i]->kind != KILN_TYPE_TENSOR || !in[i]->t) return false;
  if (p->need_clean && !clean_reference(g, n_in, in)) return false;
  char sig[256];
  run_signature(p, g, n_in, in, sig, sizeof sig);
  return matches(p, sig);
}

/* The layer kind of a signature ("pass|constfold|Add" -> "pass"). */
static void signature_kind(const char *sig, char *out, size_t len) {
  size_t n = strcspn(sig, "|");
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), sig);
}

/* Options that reproduce the signature fastest: without the compiled code when a graph or
 * tile layer fails, and without a layer per pass (bisection names the pass instead). Each
 * choice is kept only when the original case still fails the same way with it. False when it
 * does not with any (got: the signature of the last run, "" for no failure). */
static bool choose_options(case_pred *p, const kiln_graph *g, int n_in, kiln_val *const *in,
                           char *got, size_t len) {
  char kind[32];
  signature_kind(p->signature, kind, sizeof kind);
  bool graph_or_tile = !strcmp(kind, "reference") || !strcmp(kind, "pass") || !strcmp(kind, "tile");
  kiln_verify_opts base = p->vo;
  kiln_verify_opts tries[4] = {base, base, base, base};
  int n = 0;
  if (graph_or_tile) {
    memset(tries[n].targets, 0, sizeof tries[n].targets), tries[n].each_pass = false, n++;
    memset(tries[n].targets, 0, sizeof tries[n].targets), n++;
  }
  tries[n++].each_pass = false;
  n++; /* the recorded options themselves */
  for (int i = 0; i < n; i++) {
    p->vo = tries[i];
    run_signature(p, g, n_in, in, got, len);
    if (matches(p, got)) return true;
  }
  p->vo = base;
  return false;
}

/* The runner's base options from the replay command of case.txt ("--backend none", "--threads 4").
 */
static kiln_status recorded_options(const char *case_dir, kiln_verify_opts *vo) {
  char path[4200], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/case.txt", case_dir);
  kiln_status s = kiln_read_file(path, &text, &len);
  kiln_status_free(s); /* no case.txt: the default options */
  s = KILN_OK;
  if (!text) return KILN_OK;
  char cmd[1400];
  kiln_verify_case_field(text, "command", cmd, sizeof cmd);
  const char *b = strstr(cmd, "--backend ");
  if (b) {
    b += strlen("--backend ");
    size_t n = strcspn(b, " ");
    char list[64];
    snprintf(list, sizeof list, "%.*s", (int)(n < 63 ? n : 63), b);
    s = kiln_verify_parse_targets(list, vo->targets);
    if (s) {
      free(text);
      return kiln_status_annotate(s, "%s", path);
    }
  }
  const char *t = strstr(cmd, "--threads ");
  if (t) {
    t += strlen("--threads ");
    char num[32];
    size_t n = strcspn(t, " \r");
    snprintf(num, sizeof num, "%.*s", (int)(n < 31 ? n : 31), t);
    s = kiln_parse_int(num, 1, 1024, "--threads", &vo->threads);
  }
  const char *pp = s ? NULL : strstr(cmd, "--precision-policy ");
  if (pp) { /* the precision policy the failure was found under */
    pp += strlen("--precision-policy ");
    char rules[300];
    size_t n = strcspn(pp, " \r");
    snprintf(rules, sizeof rules, "%.*s", (int)(n < 299 ? n : 299), pp);
    s = kiln_precision_parse(&vo->compile.precision, rules);
  }
  if (!s && strstr(cmd, " --standalone")) vo->standalone = true; /* the standalone C layer */
  const char *ff = s ? NULL : strstr(cmd, "--force-fallback ");
  if (ff) { /* the ops forced to their reference kernel: kept for the options' lifetime */
    ff += strlen("--force-fallback ");
    static char ops[128];
    size_t n = strcspn(ff, " \r");
    snprintf(ops, sizeof ops, "%.*s", (int)(n < 127 ? n : 127), ff);
    vo->compile.force_fallback = ops;
  }
  free(text);
  return s ? kiln_status_annotate(s, "%s", path) : KILN_OK;
}

/* Whether the options check some target's code. */
static bool any_target(const kiln_verify_opts *vo) {
  for (int t = 0; t < KILN_TARGET_COUNT; t++)
    if (vo->targets[t]) return true;
  return false;
}

/* Writes the reduced case with the result of a run with the options the reduction used (they
 * reproduce the failure; its replay command names the backends they run). */
static kiln_status write_reduced(const char *out_dir, case_pred *p, const kiln_reduce_result *r) {
  kiln_verify_result res;
  KILN_TRY(kiln_verify_run(r->g, r->n_in, r->inputs, &p->vo, &res));
  kiln_status st = kiln_verify_write_case(out_dir, r->g, r->n_in, r->inputs, &res);
  kiln_verify_result_free(&res);
  return st;
}

kiln_status kiln_reduce_case(const char *case_dir, const char *out_dir,
                             const kiln_verify_opts *verify, const kiln_reduce_opts *o,
                             kiln_reduce_result *out) {
  memset(out, 0, sizeof *out);
  kiln_reduce_opts ro;
  if (o) ro = *o;
  else kiln_reduce_opts_init(&ro);
  case_pred p;
  memset(&p, 0, sizeof p);
  if (verify) p.vo = *verify;
  else kiln_verify_opts_init(&p.vo);
  p.vo.log = NULL;
  p.vo.repro_dir = NULL;
  KILN_TRY(recorded_options(case_dir, &p.vo));

  kiln_graph *g = NULL;
  kiln_val **in = NULL;
  int n = 0;
  KILN_TRY(kiln_verify_load_case(case_dir, &g, &in, &n, p.signature, sizeof p.signature));
  if (!p.signature[0] || !strcmp(p.signature, "-")) /* not recorded: the one it shows now */
    run_signature(&p, g, n, in, p.signature, sizeof p.signature);
  p.need_clean = clean_reference(g, n, in);
  p.exact = ro.exact_signature;
  kiln_status st = KILN_OK;
  char got[256] = "";
  if (p.signature[0] && choose_options(&p, g, n, in, got, sizeof got)) {
    kiln_verify_log(ro.log, "reduce: signature %s (checked %s the compiled code, %s)", p.signature,
                    any_target(&p.vo) ? "with" : "without",
                    p.vo.each_pass ? "a layer per pass" : "bisection");
    st = kiln_reduce(g, in, n, case_holds, &p, &ro, out);
  } else if (p.env) { /* the environment, not the case: say so instead of "does not fail" */
    st = p.env, p.env = NULL;
  } else {
    if (p.signature[0])
      kiln_verify_log(ro.log, "reduce: the case does not fail as recorded (%s); it %s%s",
                      p.signature, got[0] ? "fails with " : "passes", got);
    kiln_reduce_measure(g, n, in, &out->before);
    out->after = out->before;
  }
  if (!st && out->reproduced) st = write_reduced(out_dir, &p, out);
  if (!st && ro.log && out->reproduced) {
    char sizes[200];
    kiln_reduce_size_str(&out->before, &out->after, sizes, sizeof sizes);
    fprintf(ro.log, "reduce: %s (%d tests, %.1f s%s)\n", sizes, out->tests, out->seconds,
            out->stopped ? ", stopped by the limit" : "");
  }
  kiln_status_free(p.env);
  for (int i = 0; i < n; i++) kiln_val_free(in[i]);
  free(in);
  kiln_graph_free(g);
  return st;
}
