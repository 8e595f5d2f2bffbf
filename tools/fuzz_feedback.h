/* The feedback of a `kiln fuzz` campaign: what its graphs reached (coverage cells of the
 * generated models, pass rewrites that fired, and in a coverage build the edges of the
 * compiler's own code), a corpus of the genomes that reached something new, and the policy
 * that chooses what to draw next.
 *
 *   fuzz_feedback f;  fuzz_feedback_init(&f, &opts);
 *   loop: fuzz_feedback_next(&f, &gen_opts, seed, &case)   // fresh, or a mutated corpus entry
 *         ... verify the case ...
 *         fuzz_feedback_note(&f, &case, fired)             // new points: kept in the corpus,
 *                                                          // credited to its ops (bandit)
 *
 * Policies: uniform (the op table's own weights, every graph fresh: the campaign of a seed is
 * the same graphs whatever happened before) and bandit: a discounted UCB1 multi-armed bandit
 * over the op rows rewarded by new coverage, half of the fresh graphs drawn by the table's
 * weights, and a share of the graphs mutated from the corpus that follows what mutants pay
 * against fresh graphs (5% to 60%). */
#ifndef KILN_FUZZ_FEEDBACK_H
#define KILN_FUZZ_FEEDBACK_H

#include "verify/gen/gen.h"

typedef enum fuzz_policy { FUZZ_POLICY_UNIFORM, FUZZ_POLICY_BANDIT, FUZZ_POLICY_COUNT } fuzz_policy;
extern const char *const fuzz_policy_names[FUZZ_POLICY_COUNT];

typedef struct fuzz_entry {
  kiln_gen_genome genome;
  int picked; /* times mutated */
  int found;  /* new points it (and its mutants) found */
} fuzz_entry;

typedef struct fuzz_feedback {
  fuzz_policy policy;
  kiln_strmap cells; /* cell key -> graphs that reached it */
  kiln_strmap rows;  /* op name -> row of the op table (the arm a cell credits) */
  uint8_t *edges;    /* coverage build: per edge, the hit-count buckets seen (AFL style) */
  int64_t n_edges;   /* edges seen at least once */
  int64_t points;    /* new points found so far (cells + edge buckets) */
  KILN_VEC(fuzz_entry) corpus;
  int n_ops;
  double *weights; /* per op row, handed to the generator (kiln_gen_opts.op_weights) */
  double *reward, *pulls;
  double total_pulls;
  int64_t fresh, mutated, kept;
  int64_t fresh_table;       /* fresh graphs drawn by the table's weights (TABLE_SHARE) */
  double ema_fresh, ema_mut; /* share of graphs with new points, moving averages (mutants) */
  int64_t mut_used[KILN_GEN_MUT_COUNT], mut_paid[KILN_GEN_MUT_COUNT];
  int last_entry; /* corpus entry the current case was mutated from, -1: fresh */
  int last_kinds[KILN_GEN_MUT_COUNT];
} fuzz_feedback;

void fuzz_feedback_init(fuzz_feedback *f, fuzz_policy p);
void fuzz_feedback_free(fuzz_feedback *f);
/* Builds the next case: fresh from seed, or (bandit) a mutation of a corpus entry drawn from
 * seed. Sets o->op_weights to the policy's weights. */
KILN_MUST_USE kiln_status fuzz_feedback_next(fuzz_feedback *f, kiln_gen_opts *o, uint64_t seed,
                                             kiln_gen_case *out);
/* Counts what the case reached (cells of its graph, the passes in `fired`, the lowering
 * paths in `paths` (kiln_verify_result), edges of the map when the build has them) and returns
 * the new points; rewards the policy and keeps the genome when there are any. Call
 * kiln_edges_reset() before the case runs. */
int64_t fuzz_feedback_note(fuzz_feedback *f, const kiln_gen_case *c, const char *fired,
                           const char *paths);
/* The coverage map: cells reached per kind, the enumerated and absent attribute cells of the
 * universe reached; with report, those never reached (key order) and those excluded with
 * their reason. _print_map adds the edges and the feedback's counts. */
void fuzz_cells_print(const kiln_strmap *cells, FILE *out, bool report);
void fuzz_feedback_print_map(const fuzz_feedback *f, FILE *out, bool report);
/* Cells reached / in the universe. */
void fuzz_feedback_universe(const fuzz_feedback *f, int *reached, int *total);

#endif
