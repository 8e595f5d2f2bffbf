/* Feedback of a fuzz campaign: coverage points, corpus, policy (fuzz_feedback.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/edges.h"
#include "cli.h"
#include "fuzz_feedback.h"

const char *const fuzz_policy_names[FUZZ_POLICY_COUNT] = {"uniform", "bandit"};

enum { CORPUS_MAX = 1024 };

/* The bandit forgets: every graph scales the old rewards and pulls by DECAY, so a row whose
 * cells are all found loses its lead (coverage is not a stationary reward). */
#define DECAY 0.997
/* Points per graph of fresh and of mutated graphs, as moving averages (weight EMA_W): the share
 * of mutants follows what they pay, between MUT_MIN and MUT_MAX. */
#define EMA_W 0.03
#define MUT_MIN 0.05
#define MUT_MAX 0.6
/* Share of the fresh graphs drawn by the table's own weights, not the bandit's. Coverage cells
 * are a proxy: a structure of several nodes (a chain a pass folds, an alias read in place, a
 * shape known at run time) has few cells of its own, so the bandit learns within seconds that
 * it pays little and draws it less than the table does, though bugs live in such structures.
 * Half of the fresh graphs keep the table's breadth; the other half follow the bandit. */
#define TABLE_SHARE 0.5

void fuzz_feedback_init(fuzz_feedback *f, fuzz_policy p) {
  memset(f, 0, sizeof *f);
  f->policy = p;
  f->n_ops = kiln_gen_op_count();
  f->weights = kiln_xmalloc(sizeof(double) * (size_t)f->n_ops);
  f->reward = kiln_xcalloc((size_t)f->n_ops, sizeof(double));
  f->pulls = kiln_xcalloc((size_t)f->n_ops, sizeof(double));
  for (int i = 0; i < f->n_ops; i++) {
    f->weights[i] = 1;
    kiln_strmap_put(&f->rows, kiln_gen_op_name(i), i);
  }
  if (kiln_edges_enabled()) f->edges = kiln_xcalloc(KILN_EDGE_MAP, 1);
  f->last_entry = -1;
  f->ema_fresh = f->ema_mut = 0.5; /* even odds until the graphs say otherwise */
}

void fuzz_feedback_free(fuzz_feedback *f) {
  kiln_strmap_free(&f->cells);
  kiln_strmap_free(&f->rows);
  free(f->edges);
  kiln_vec_free(&f->corpus);
  free(f->weights), free(f->reward), free(f->pulls);
}

/* ---- policy: UCB1 over the op rows ----
 * Arm i's value is the mean reward of the graphs that drew it plus an exploration bonus
 * sqrt(2 ln N / n_i); the generator's weight of the row is the table's weight times
 * 0.25 + value / mean value (never 0: every op stays in play). */
static void update_weights(fuzz_feedback *f) {
  double sum = 0, v[1024];
  int n = f->n_ops < 1024 ? f->n_ops : 1024;
  for (int i = 0; i < n; i++) {
    double mean = f->pulls[i] > 0 ? f->reward[i] / f->pulls[i] : 1.0;
    double bonus = f->pulls[i] > 0 ? sqrt(2 * log(f->total_pulls + 1) / f->pulls[i]) : 2.0;
    v[i] = mean + 0.5 * bonus;
    sum += v[i];
  }
  for (int i = 0; i < n; i++) f->weights[i] = 0.25 + (sum > 0 ? v[i] * n / sum : 1.0);
}

/* A cell reached by fewer graphs than this before is rare: a row that reaches one earns
 * RARE_CREDIT. New cells of the schema run out within minutes, and a bandit whose arms all
 * earn 0 draws uniformly again; rare cells keep steering it to the values, dtypes, ranks and
 * broadcast forms of each op that the campaign has seldom drawn (the frontier where new cells
 * and rare compiler paths lie), as rare-branch fuzzers favour inputs that hit rare edges. */
#define RARE 4
#define RARE_CREDIT 0.5

/* Credits each op row of the graph: 1 when a new cell names its op (the cells of a node carry
 * the op's name, so the credit is exact), else 1 when the graph found something that no op owns
 * (a new edge, pass or lowering path) and the row is a pattern of several ops, else RARE_CREDIT
 * when a rare cell names its op, else 0. */
static void reward_ops(fuzz_feedback *f, const kiln_gen_genome *g, const uint8_t *row_new,
                       bool graph_new) {
  bool seen[1024] = {0};
  for (int i = 0; i < f->n_ops; i++) f->reward[i] *= DECAY, f->pulls[i] *= DECAY;
  f->total_pulls *= DECAY;
  for (int s = 0; s < g->n; s++) {
    int op = g->steps[s].op;
    if (op < 0 || op >= f->n_ops || op >= 1024 || seen[op]) continue;
    seen[op] = true;
    bool pattern = kiln_gen_op_name(op)[0] == '(';
    double r = row_new[op] == 2       ? 1.0
               : pattern && graph_new ? 1.0
               : row_new[op] == 1     ? RARE_CREDIT
                                      : 0.0;
    f->pulls[op] += 1, f->reward[op] += r, f->total_pulls += 1;
  }
  update_weights(f);
}

/* ---- corpus ---- */
/* An entry to mutate: among a few drawn, the one with the best find rate (new finds count,
 * much-mutated entries fade). */
static int pick_entry(const fuzz_feedback *f, uint64_t *rs) {
  int best = -1;
  double best_v = -1;
  for (int t = 0; t < 4; t++) {
    *rs = *rs * 6364136223846793005ull + 1442695040888963407ull;
    int e = (int)((*rs >> 33) % (uint64_t)f->corpus.len);
    const fuzz_entry *x = &f->corpus.data[e];
    double v = (1.0 + x->found) / (1.0 + x->picked);
    if (v > best_v) best_v = v, best = e;
  }
  return best;
}

static void keep(fuzz_feedback *f, const kiln_gen_genome *g, int64_t points) {
  f->kept++;
  fuzz_entry e = {.genome = *g, .found = (int)(points < 1000000 ? points : 1000000)};
  if (f->corpus.len < CORPUS_MAX) {
    kiln_vec_push(&f->corpus, e);
    return;
  }
  int worst = 0; /* full: the entry with the worst find rate makes room */
  for (int i = 1; i < f->corpus.len; i++) {
    const fuzz_entry *a = &f->corpus.data[i], *b = &f->corpus.data[worst];
    if ((1.0 + a->found) / (1.0 + a->picked) < (1.0 + b->found) / (1.0 + b->picked)) worst = i;
  }
  f->corpus.data[worst] = e;
}

kiln_status fuzz_feedback_next(fuzz_feedback *f, kiln_gen_opts *o, uint64_t seed,
                               kiln_gen_case *out) {
  f->last_entry = -1;
  memset(f->last_kinds, 0, sizeof f->last_kinds);
  if (f->policy == FUZZ_POLICY_UNIFORM) {
    o->op_weights = NULL;
    f->fresh++;
    return kiln_gen_model(o, seed, out);
  }
  o->op_weights = f->weights;
  uint64_t rs = seed ^ 0x2545f4914f6cdd1dull;
  rs = rs * 6364136223846793005ull + 1442695040888963407ull;
  double p_mut = f->ema_mut / (f->ema_mut + f->ema_fresh + 1e-9);
  p_mut = p_mut < MUT_MIN ? MUT_MIN : p_mut > MUT_MAX ? MUT_MAX : p_mut;
  if (f->corpus.len == 0 || (double)((rs >> 33) % 10000) >= p_mut * 10000) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    if ((double)((rs >> 33) % 10000) < TABLE_SHARE * 10000) o->op_weights = NULL, f->fresh_table++;
    f->fresh++;
    return kiln_gen_model(o, seed, out);
  }
  int e = pick_entry(f, &rs), other = pick_entry(f, &rs);
  f->corpus.data[e].picked++;
  kiln_gen_genome g;
  int n_mut = 1 + (int)((rs >> 40) % 3);
  kiln_gen_mutate(o, &f->corpus.data[e].genome, &f->corpus.data[other].genome, seed, n_mut, &g,
                  f->last_kinds);
  KILN_TRY(kiln_gen_from_genome(o, &g, out));
  if (!out->g) { /* no step of the mutant fits: a fresh graph instead */
    kiln_gen_case_free(out);
    memset(f->last_kinds, 0, sizeof f->last_kinds);
    f->fresh++;
    return kiln_gen_model(o, seed, out);
  }
  f->last_entry = e;
  f->mutated++;
  for (int k = 0; k < KILN_GEN_MUT_COUNT; k++) f->mut_used[k] += f->last_kinds[k];
  return KILN_OK;
}

/* ---- points ---- */
typedef struct note_ctx {
  fuzz_feedback *f;
  int64_t fresh, owned; /* new cells, and of those the ones that name an op row */
  uint8_t *row_new;     /* per op row: 2 a new cell names its op, 1 a rare one (RARE) */
} note_ctx;

/* The op row a cell names ("attr:Conv.group=1" -> Conv), -1 for none. */
static int cell_row(const fuzz_feedback *f, const char *key) {
  const char *c = strchr(key, ':');
  if (!c || strncmp(key, "pass:", 5) == 0 || strncmp(key, "lower:", 6) == 0) return -1;
  size_t n = strcspn(c + 1, ".=");
  char name[64];
  if (n >= sizeof name) return -1;
  memcpy(name, c + 1, n), name[n] = 0;
  int64_t row;
  return kiln_strmap_get(&f->rows, name, &row) ? (int)row : -1;
}

static void note_cell(void *user, const char *key) {
  note_ctx *c = user;
  int64_t n = 0;
  if (!kiln_strmap_get(&c->f->cells, key, &n)) {
    c->fresh++;
    int row = cell_row(c->f, key);
    if (row >= 0 && c->row_new) c->row_new[row] = 2, c->owned++;
  } else if (n < RARE && c->row_new) {
    int row = cell_row(c->f, key);
    if (row >= 0 && !c->row_new[row]) c->row_new[row] = 1;
  }
  kiln_strmap_put(&c->f->cells, key, n + 1);
}

/* AFL's buckets of a hit count: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+. */
static uint8_t bucket(uint8_t n) {
  return n == 0    ? 0
         : n == 1  ? 1
         : n == 2  ? 2
         : n == 3  ? 4
         : n < 8   ? 8
         : n < 16  ? 16
         : n < 32  ? 32
         : n < 128 ? 64
                   : 128;
}

/* New edges of the map (an edge first taken counts; a new hit-count bucket of a known edge is
 * recorded for the summary but is no point: nearly every graph reaches some new bucket, and a
 * reward that every graph earns teaches the policy nothing). */
static int64_t note_edges(fuzz_feedback *f) {
  const uint8_t *m = kiln_edges_map();
  if (!f->edges || !m) return 0;
  int64_t fresh = 0;
  for (int i = 0; i < KILN_EDGE_MAP; i++) {
    if (!m[i]) continue;
    if (!f->edges[i]) f->n_edges++, fresh++;
    f->edges[i] |= bucket(m[i]);
  }
  return fresh;
}

/* A cell per item of a comma-separated list, prefix before each ("pass:" + "cse"). */
static void note_list(note_ctx *x, const char *prefix, const char *items) {
  char *list = kiln_xstrdup(items ? items : ""), *save = NULL;
  for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    char key[160];
    snprintf(key, sizeof key, "%s%s", prefix, w);
    note_cell(x, key);
  }
  free(list);
}

int64_t fuzz_feedback_note(fuzz_feedback *f, const kiln_gen_case *c, const char *fired,
                           const char *paths) {
  uint8_t *row_new = kiln_xcalloc((size_t)f->n_ops + 1, 1);
  note_ctx x = {f, 0, 0, row_new};
  if (c->g) kiln_gen_cells(c->g, c->opset, note_cell, &x);
  for (int k = 0; k < KILN_GEN_EDGE_COUNT; k++) /* inputs at the edges of their domains */
    if ((c->edges >> k) & 1) {
      char key[64];
      snprintf(key, sizeof key, "value:%s", kiln_gen_edge_name(k));
      note_cell(&x, key);
    }
  note_list(&x, "pass:", fired);
  note_list(&x, "lower:", paths);
  int64_t points = x.fresh + note_edges(f);
  f->points += points;
  if (f->policy != FUZZ_POLICY_BANDIT || !c->g) {
    free(row_new);
    return points;
  }
  reward_ops(f, &c->genome, row_new, points > x.owned);
  free(row_new);
  double *ema = f->last_entry >= 0 ? &f->ema_mut : &f->ema_fresh;
  *ema = (1 - EMA_W) * *ema + EMA_W * (points > 0);
  if (points > 0) {
    keep(f, &c->genome, points);
    if (f->last_entry >= 0)
      f->corpus.data[f->last_entry].found += (int)(points < 1000 ? points : 1000);
    for (int k = 0; k < KILN_GEN_MUT_COUNT; k++) f->mut_paid[k] += f->last_kinds[k] > 0;
  }
  return points;
}

/* ---- the map ---- */
typedef struct uni_ctx {
  const kiln_strmap *cells;
  kiln_strmap seen; /* universe keys, deduplicated */
  int reached, total;
  KILN_VEC(char *) missing, excluded;
} uni_ctx;

static void note_universe(void *user, const char *key) {
  uni_ctx *u = user;
  int64_t n;
  if (kiln_strmap_get(&u->seen, key, &n)) return;
  kiln_strmap_put(&u->seen, key, 1);
  if (kiln_gen_cell_excluded(key)) {
    kiln_vec_push(&u->excluded, kiln_xstrdup(key));
    return;
  }
  u->total++;
  if (kiln_strmap_get(u->cells, key, &n)) u->reached++;
  else kiln_vec_push(&u->missing, kiln_xstrdup(key));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void universe(const kiln_strmap *cells, uni_ctx *u) {
  memset(u, 0, sizeof *u);
  u->cells = cells;
  kiln_gen_cell_universe(note_universe, u);
  if (u->missing.len > 1) qsort(u->missing.data, (size_t)u->missing.len, sizeof(char *), cmp_str);
}

static void universe_free(uni_ctx *u) {
  for (int i = 0; i < u->missing.len; i++) free(u->missing.data[i]);
  for (int i = 0; i < u->excluded.len; i++) free(u->excluded.data[i]);
  kiln_vec_free(&u->missing);
  kiln_vec_free(&u->excluded);
  kiln_strmap_free(&u->seen);
}

void fuzz_feedback_universe(const fuzz_feedback *f, int *reached, int *total) {
  uni_ctx u;
  universe(&f->cells, &u);
  *reached = u.reached, *total = u.total;
  universe_free(&u);
}

/* Cells reached per kind ("attr", "dtype", ...). */
static void count_kinds(const kiln_strmap *cells, FILE *out) {
  static const char *const kinds[] = {"op",    "attr", "dtype", "rank", "bcast",
                                      "empty", "pass", "lower", "value"};
  fprintf(out, "cells reached:");
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    int n = 0;
    size_t len = strlen(kinds[k]);
    for (size_t i = 0; i < cells->cap; i++)
      if (cells->keys[i] && !strncmp(cells->keys[i], kinds[k], len) && cells->keys[i][len] == ':')
        n++;
    fprintf(out, " %s %d", kinds[k], n);
  }
  fprintf(out, "\n");
}

void fuzz_cells_print(const kiln_strmap *cells, FILE *out, bool report) {
  uni_ctx u;
  universe(cells, &u);
  count_kinds(cells, out);
  fprintf(out, "enumerated and absent attribute cells: %d of %d reached", u.reached, u.total);
  if (u.excluded.len) fprintf(out, " (%d more not generated on purpose)", u.excluded.len);
  fprintf(out, "\n");
  if (report) {
    fprintf(out, "cells never reached (%d):\n", u.missing.len);
    for (int i = 0; i < u.missing.len; i++) fprintf(out, "  %s\n", u.missing.data[i]);
    for (int i = 0; i < u.excluded.len; i++)
      fprintf(out, "  %s: not generated: %s\n", u.excluded.data[i],
              kiln_gen_cell_excluded(u.excluded.data[i]));
  }
  universe_free(&u);
}

void fuzz_feedback_print_map(const fuzz_feedback *f, FILE *out, bool report) {
  fuzz_cells_print(&f->cells, out, report);
  if (f->edges) fprintf(out, "compiler edges reached: %lld\n", (long long)f->n_edges);
  if (f->policy == FUZZ_POLICY_BANDIT) {
    fprintf(out,
            "feedback: %lld fresh graphs (%lld by the table's weights), %lld mutated, %lld kept in"
            " the corpus (%d now); mutations used/paid:",
            (long long)f->fresh, (long long)f->fresh_table, (long long)f->mutated,
            (long long)f->kept, f->corpus.len);
    for (int k = 0; k < KILN_GEN_MUT_COUNT; k++)
      fprintf(out, " %s %lld/%lld", kiln_gen_mutation_names[k], (long long)f->mut_used[k],
              (long long)f->mut_paid[k]);
    fprintf(out, "\n");
  }
}
