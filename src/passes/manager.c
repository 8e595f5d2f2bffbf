/* The pass manager: the pipeline in order, dumps, timing, disabled passes, the bisection
 * limit and the verifier after each pass.
 *
 * Each entry of the pipeline is one pass application; the bisection limit N runs the first
 * N applications that are not disabled and skips the rest, logging each decision as LLVM's
 * opt-bisect does ("BISECT: running pass (3) constfold"). */
#include <string.h>
#include <time.h>

#include "passes.h"

/* Why this order: infer gives every value the static type the later passes test;
 * identity removes no-op nodes so that chains become adjacent; shapefold turns Shape/Size
 * of static values into constants, which constfold then carries through the shape
 * arithmetic (Gather, Concat, Unsqueeze ...); simplify works best on folded constants
 * (x*1 needs the 1 to be a constant); bnfold needs constant Conv weights; cse after the
 * rewrites finds more duplicates; dce removes everything the others left unused; infer
 * again refines types that depended on values that are now constant; fusion last. */
static const kiln_pass_info pipeline[] = {
    {"infer", kiln_pass_infer, "shape and type inference"},
    {"identity", kiln_pass_identity, "remove Identity and inference-mode Dropout"},
    {"infer", kiln_pass_infer, "shape and type inference"},
    {"shapefold", kiln_pass_shapefold, "Shape/Size of static values to constants"},
    {"constfold", kiln_pass_constfold, "evaluate nodes of constant inputs"},
    {"simplify", kiln_pass_simplify, "algebraic identities and canonical forms"},
    {"bnfold", kiln_pass_bnfold, "fold inference BatchNormalization into Conv/Gemm"},
    {"cse", kiln_pass_cse, "merge equal nodes and equal constants"},
    {"dce", kiln_pass_dce, "remove unused nodes and constants"},
    {"infer", kiln_pass_infer, "shape and type inference"},
    {"fusion", kiln_pass_fusion, "group nodes into kernels"},
};
/* Entries FOLD_FIRST..FOLD_LAST (infer, shapefold, constfold) repeat until they change
 * nothing: a folded Shape makes a Reshape or Slice static, whose result is the input of the
 * next Shape (ShuffleNet's channel split), so one round is not enough. Each round counts as
 * pass applications for the bisection limit. */
enum { FOLD_FIRST = 2, FOLD_LAST = 4, FOLD_MAX_ROUNDS = 32 };
enum { N_PIPELINE = (int)(sizeof pipeline / sizeof pipeline[0]) };

const kiln_pass_info *kiln_passes_pipeline(int *n) {
  *n = N_PIPELINE;
  return pipeline;
}

const kiln_pass_info *kiln_pass_find(const char *name) {
  for (int i = 0; i < N_PIPELINE; i++)
    if (!strcmp(pipeline[i].name, name)) return &pipeline[i];
  return NULL;
}

/* True if `name` is in the comma-separated list (or the list is "all" and all_ok). */
static bool in_list(const char *list, const char *name, bool all_ok) {
  if (!list || !list[0]) return false;
  if (all_ok && !strcmp(list, "all")) return true;
  size_t len = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == len && !strncmp(p, name, n)) return true;
    p += n + (e ? 1 : 0);
  }
  return false;
}

/* Every name of a comma-separated list must be a pass. */
static kiln_status check_list(const char *list, const char *what, bool all_ok) {
  if (!list) return KILN_OK;
  if (all_ok && !strcmp(list, "all")) return KILN_OK;
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    bool known = false;
    for (int i = 0; i < N_PIPELINE && !known; i++)
      known = strlen(pipeline[i].name) == n && !strncmp(pipeline[i].name, p, n);
    if (!known) return kiln_invalid("%s: unknown pass '%.*s'", what, (int)n, p);
    p += n + (e ? 1 : 0);
  }
  return KILN_OK;
}

typedef struct run_record {
  const char *name;
  bool ran;
  double ms;
  int64_t changes;
} run_record;

static void dump(FILE *log, const char *pass, const kiln_graph *g) {
  kiln_strbuf b = {0};
  kiln_graph_print(g, &b, 16);
  fprintf(log, "// after %s\n", pass);
  if (b.data) fwrite(b.data, 1, b.len, log);
  kiln_strbuf_free(&b);
}

static void print_times(FILE *log, const run_record *r, int n) {
  double total = 0;
  fprintf(log, "// pass timings\n//  #  %-10s %10s %8s\n", "pass", "ms", "changes");
  for (int i = 0; i < n; i++) {
    if (!r[i].ran) {
      fprintf(log, "// %2d  %-10s %10s %8s\n", i + 1, r[i].name, "skipped", "-");
      continue;
    }
    fprintf(log, "// %2d  %-10s %10.3f %8lld\n", i + 1, r[i].name, r[i].ms,
            (long long)r[i].changes);
    total += r[i].ms;
  }
  fprintf(log, "//     %-10s %10.3f\n", "total", total);
}

/* Index of the last pipeline entry to consider: the first application of stop_after. */
static int last_entry(const kiln_pass_opts *o) {
  for (int i = 0; o->stop_after && strcmp(o->stop_after, "all") != 0 && i < N_PIPELINE; i++)
    if (!strcmp(pipeline[i].name, o->stop_after)) return i;
  return N_PIPELINE - 1;
}

static bool verify_forced(void) {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

static kiln_status run_one(const kiln_pass_info *p, const kiln_pass_opts *o, kiln_graph *g,
                           run_record *rec) {
  kiln_pass_ctx ctx = {o, p->name, 0};
  double t0 = 1e3 * kiln_clock_seconds();
  KILN_TRYF(p->run(&ctx, g), "pass %s", p->name);
  rec->ms += 1e3 * kiln_clock_seconds() - t0; /* summed over the rounds of the folding loop */
  rec->changes += ctx.changes;
  rec->ran = true;
  if (o->verify_each || verify_forced())
    KILN_TRYF(kiln_graph_verify(g), "the graph after pass %s does not verify (a bug in the pass)",
              p->name);
  return KILN_OK;
}

kiln_status kiln_passes_run(kiln_graph *g, const kiln_pass_opts *opts, kiln_pass_stats *out) {
  kiln_pass_opts dflt = {.pass_limit = -1};
  const kiln_pass_opts *o = opts ? opts : &dflt;
  FILE *log = o->log ? o->log : stderr;
  kiln_pass_stats stats = {0};
  KILN_TRY(check_list(o->print_after, "print-after", true));
  KILN_TRY(check_list(o->disable, "disable-pass", false));
  if (o->stop_after && (strchr(o->stop_after, ',') || !o->stop_after[0]))
    return kiln_invalid("after: '%s' is not one pass name", o->stop_after);
  KILN_TRY(check_list(o->stop_after, "after", true));
  KILN_TRYF(kiln_graph_verify(g), "the graph given to the passes does not verify");
  run_record rec[N_PIPELINE];
  memset(rec, 0, sizeof rec);
  int64_t counted = 0;
  int last = last_entry(o);
  int64_t round_changes = 0;
  int rounds = 0;
  for (int i = 0; i < N_PIPELINE; i++) {
    const kiln_pass_info *p = &pipeline[i];
    if (i == FOLD_FIRST) round_changes = 0;
    if (i == FOLD_LAST + 1 && last > FOLD_LAST && round_changes > 0 && ++rounds < FOLD_MAX_ROUNDS) {
      i = FOLD_FIRST - 1; /* another round of folding */
      continue;
    }
    if (o->no_fusion && p->run == kiln_pass_fusion) break;
    if (i > last) break;
    rec[i].name = p->name;
    if (in_list(o->disable, p->name, false)) {
      stats.skipped++;
      continue;
    }
    counted++;
    if (o->pass_limit >= 0) {
      bool run = counted <= o->pass_limit;
      fprintf(log, "BISECT: %srunning pass (%lld) %s\n", run ? "" : "NOT ", (long long)counted,
              p->name);
      if (!run) {
        stats.skipped++;
        continue;
      }
    }
    int64_t before = rec[i].changes;
    KILN_TRY(run_one(p, o, g, &rec[i]));
    stats.applied++;
    stats.changes += rec[i].changes - before;
    if (i >= FOLD_FIRST && i <= FOLD_LAST && p->run != kiln_pass_infer)
      round_changes += rec[i].changes - before;
    if (in_list(o->print_after, p->name, true)) dump(log, p->name, g);
  }
  if (o->time_passes) {
    int n = 0;
    while (n < N_PIPELINE && rec[n].name) n++;
    print_times(log, rec, n);
  }
  if (out) *out = stats;
  return KILN_OK;
}
