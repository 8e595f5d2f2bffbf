/* The random model generator: valid root graphs of 1..30 nodes over the ops Kiln compiles
 * (plus a few that fall back), with inputs on which the reference is finite and stable.
 * `kiln fuzz` runs kiln_verify_run on each generated case.
 *
 *   kiln_gen_opts o;
 *   kiln_gen_opts_init(&o);                       // o.max_nodes = 12 ...
 *   kiln_gen_case c;
 *   KILN_TRY(kiln_gen_model(&o, kiln_gen_seed(campaign_seed, j), &c));
 *   if (c.status == KILN_GEN_OK) ... kiln_verify_run(c.g, c.n_in, c.inputs, ...) ...
 *   kiln_gen_case_free(&c);
 *
 * How a graph is built (gen.c): a target node count n is drawn; then, n times, an op is
 * drawn from the op table (gen_ops*.c) and its builder picks operands among the values
 * built so far (graph inputs, constants, earlier outputs; recent values are favoured, so
 * chains, diamonds and reuse appear) or makes new inputs and constants of a shape related
 * to the others, and writes the node in the text IR. The text is parsed and the op table's
 * own inference (kiln_ops_infer_graph) runs; a draw it rejects is dropped and redrawn.
 * Outputs are the values no node reads (some left out: dead branches for dce) and a few
 * inner values. Then inputs are drawn from each input's domain (log: positive, acos: in
 * (-1, 1), div: away from 0, indices in range ...) until the reference (kiln_vref_compute)
 * reports no non-finite and no unstable element, with fewer scales at each retry.
 *
 * Everything depends only on the seed (an own xoshiro256** generator, no global state). */
#ifndef KILN_VERIFY_GEN_H
#define KILN_VERIFY_GEN_H

#include "verify/verify.h"

typedef struct kiln_gen_opts {
  int max_nodes;            /* the node count is drawn in [1, max_nodes] (default 12, at most 30) */
  const double *op_weights; /* per row of the op table (kiln_gen_op_count), multiplied into
                               the table's own weights when an op is drawn; NULL: the table's
                               weights alone (a campaign's policy sets these) */
  const char *ops;          /* comma-separated op names to draw from, NULL: every op of the table */
  bool symbolic;            /* some graph inputs get a symbolic dim "N" (default true) */
  int input_tries;          /* input draws before the graph is dropped (default 8) */
  bool check_inputs;        /* search inputs with kiln_vref_compute (default true); false: one
                               draw, no reference run (tests of the builder alone) */
  double edge_share;        /* share of the graphs whose input search first tries draws at the
                               edges of the inputs' domains (gen_values.c; default 0.3, 0: never) */
} kiln_gen_opts;
void kiln_gen_opts_init(kiln_gen_opts *o);

typedef enum kiln_gen_status {
  KILN_GEN_OK,        /* a valid graph with usable inputs */
  KILN_GEN_INVALID,   /* the reference cannot run the graph (a generator bug: counted) */
  KILN_GEN_NO_INPUTS, /* no input draw gave a finite, stable reference */
  KILN_GEN_STATUS_COUNT
} kiln_gen_status;

/* A graph as the list of choices that built it (its genome). Each accepted node draw is one
 * step: the op-table row and the seeds of its builder's random streams. The builder draws its
 * operands and structure from `seed`, its attribute values from `attr`, its dtypes from `dt`
 * and the shapes of new values from `shape`, so a mutation that changes one of them changes
 * that aspect of the node alone. Replaying a genome gives the same graph; a mutated genome
 * (kiln_gen_mutate) gives a related graph whose steps that no longer fit are skipped. */
enum { KILN_GEN_MAX_STEPS = 48 };
typedef struct kiln_gen_step {
  int op;        /* row of the op table */
  uint64_t seed; /* operands and structure */
  uint32_t attr, dt, shape;
} kiln_gen_step;
typedef struct kiln_gen_genome {
  uint64_t seed; /* graph-level choices: opset, symbol extent, node count, outputs, input data */
  int n;
  kiln_gen_step steps[KILN_GEN_MAX_STEPS];
} kiln_gen_genome;

/* The mutations of kiln_gen_mutate (a campaign's feedback loop counts which ones pay). */
typedef enum kiln_gen_mutation {
  KILN_GEN_MUT_INSERT,  /* a new node draw at some position */
  KILN_GEN_MUT_DELETE,  /* a step removed */
  KILN_GEN_MUT_ATTR,    /* one node's attribute values redrawn */
  KILN_GEN_MUT_TYPE,    /* one node's dtypes redrawn */
  KILN_GEN_MUT_SHAPE,   /* the shapes of one node's new values redrawn */
  KILN_GEN_MUT_OPERAND, /* one node's operands and structure redrawn */
  KILN_GEN_MUT_OP,      /* one node's op replaced */
  KILN_GEN_MUT_SPLICE,  /* steps of another genome inserted */
  KILN_GEN_MUT_GRAPH,   /* the graph-level choices (opset, outputs, input data) redrawn */
  KILN_GEN_MUT_COUNT
} kiln_gen_mutation;
extern const char *const kiln_gen_mutation_names[KILN_GEN_MUT_COUNT];

typedef struct kiln_gen_case {
  kiln_gen_status status;
  kiln_graph *g; /* root graph, types inferred (owned) */
  int n_in;
  kiln_val **inputs; /* one per graph input (owned); NULL unless status is OK */
  int rejected;      /* node draws that inference rejected */
  int input_draws;   /* input draws made */
  char note[256];    /* why the graph is INVALID or has NO_INPUTS */
  int opset;
  kiln_gen_genome genome; /* the steps that built the graph (kiln_gen_from_genome replays it) */
  unsigned edges;         /* bit 1 << KILN_GEN_EDGE_* for each edge kind in the kept inputs */
} kiln_gen_case;

/* Builds the case of `seed`. An error only for bad options (an unknown op name in o->ops)
 * or a failure of the generator itself; an invalid graph or one without usable inputs is
 * a status of the case. */
KILN_MUST_USE kiln_status kiln_gen_model(const kiln_gen_opts *o, uint64_t seed, kiln_gen_case *out);
void kiln_gen_case_free(kiln_gen_case *c);
/* The last check of the input search: a case (status OK) whose graph fails type inference
 * once its symbolic dims are bound to its inputs' extents (a dead node whose shapes agree
 * only for some extent) becomes INVALID, with a note. */
void kiln_gen_check_bound(kiln_gen_case *c);
/* And after it: a case whose graph the reference interpreter refuses when it runs every node
 * (the bounded reference of the search runs only the nodes an output needs: a dead Reshape
 * whose -1 meets 0 elements passes it) becomes INVALID, with a note. */
void kiln_gen_check_whole(kiln_gen_case *c);
/* Builds the case of a genome (steps that no longer fit are skipped; out->genome holds the
 * steps that were kept). */
KILN_MUST_USE kiln_status kiln_gen_from_genome(const kiln_gen_opts *o, const kiln_gen_genome *gn,
                                               kiln_gen_case *out);
/* n_mut mutations of `in` drawn from `seed` (`other`, may be NULL, for splices); the kinds
 * applied are added to kinds_out[KILN_GEN_MUT_COUNT] when given. New ops are drawn with
 * o->op_weights. */
void kiln_gen_mutate(const kiln_gen_opts *o, const kiln_gen_genome *in,
                     const kiln_gen_genome *other, uint64_t seed, int n_mut, kiln_gen_genome *out,
                     int *kinds_out);

/* The edge grid (gen_grid.c): kiln_gen_grid_count() small graphs enumerated, not drawn: the
 * casts from each generated dtype and the NaN-, sign- and range-sensitive elementwise ops of
 * each dtype, on inputs that hold every edge value of their dtype (ties, limits, subnormals,
 * signed zeros, NaN payloads, infinities, integer extremes). Cell k is the same in every run;
 * its status is INVALID (with a note) when the reference finds a result undefined. */
int kiln_gen_grid_count(void);
KILN_MUST_USE kiln_status kiln_gen_grid(int k, kiln_gen_case *out);
/* "casts from f16", "elementwise ops of u8" */
const char *kiln_gen_grid_name(int k, char *buf, size_t len);

/* A precision policy for graph g drawn from seed (gen_policy.c): for about one graph in
 * four, some of the rules of the op classes for the f16, bf16 and f32 values g holds
 * (compute in the storage type or f64, accumulate in f32 or f64; never a compute type
 * narrower than the storage); the default for the others. Returns whether p differs from
 * the default. */
bool kiln_gen_policy(const kiln_graph *g, uint64_t seed, kiln_precision_policy *p);

/* The seed of graph j of a campaign with seed s (a mix of both: neighbouring j give
 * unrelated graphs). Shard i of N runs the j with j % N == i. */
uint64_t kiln_gen_seed(uint64_t s, uint64_t j);
bool kiln_gen_in_shard(uint64_t j, int i, int n);

/* The coverage cells of a graph (gen_cells.c: "op:", "attr:OP.NAME=CLASS", "dtype:", "rank:",
 * "bcast:" keys), each passed to cb (repeats included), and the universe of enumerated
 * attribute values and absent attributes of the generator's ops (each key once or more: the
 * caller deduplicates). kiln_gen_cell_excluded: why a universe cell is never generated (NULL:
 * it should be). */
void kiln_gen_cells(const kiln_graph *g, int64_t opset, void (*cb)(void *, const char *),
                    void *user);
void kiln_gen_cell_universe(void (*cb)(void *, const char *), void *user);
const char *kiln_gen_cell_excluded(const char *cell);

/* The ops of the table, in table order: the generator can emit exactly these. */
int kiln_gen_op_count(void);
const char *kiln_gen_op_name(int i);

/* Edge kinds of input values (gen_values.c): a share of the graphs draws some inputs, or some
 * elements, from these, inside the input's domain; the draw is kept only when the reference
 * is finite and stable on it (else the ordinary search runs). */
typedef enum kiln_gen_edge {
  KILN_GEN_EDGE_LARGE,       /* floats +-[10, 1e4], ints +-[100, 1e6] */
  KILN_GEN_EDGE_EXP_OVER,    /* floats where exp overflows the dtype (f16 > 11.1, f32 > 88.7,
                                f64 > 709.8): Softmax must subtract the max */
  KILN_GEN_EDGE_LIMIT,       /* floats near the dtype's largest finite value; UNIT near +-1,
                                GE1 at 1 (the domain's own edge) */
  KILN_GEN_EDGE_DENORMAL,    /* subnormals of the dtype (f16, f32, f64) */
  KILN_GEN_EDGE_NEGZERO,     /* -0.0 */
  KILN_GEN_EDGE_INT_EXTREME, /* the signed dtype's MIN, MIN + 1, MAX - 1, MAX (they wrap) */
  KILN_GEN_EDGE_UINT_WRAP,   /* unsigned 0, 1, the top bit, max - 1, max: sums wrap */
  KILN_GEN_EDGE_TIE,         /* exact ties: elements copy an earlier element of the same input
                                (ArgMax, TopK, Max and Hardmax break them by the ONNX rule) */
  KILN_GEN_EDGE_NONFINITE,   /* NaN, +Inf, -Inf (floats of unconstrained inputs): ONNX defines
                                how most ops propagate them; the reference is compared exactly */
  KILN_GEN_EDGE_HALF,        /* halves k + 0.5: Round's ties to even, truncating casts */
  KILN_GEN_EDGE_ZERO,        /* exact zeros (+0.0, 0): a row or a whole input of them divides by
                                its own norm, its max is 0 ... */
  KILN_GEN_EDGE_NARROW,      /* floats at the limits of narrower dtypes (65504 and the f16
                                rounding threshold 65520, 2^31, 2^32, 2^63, 2^64, 127, 255 ...):
                                casts that saturate, wrap or round to infinity */
  KILN_GEN_EDGE_COUNT
} kiln_gen_edge;
/* "large", "exp_over", ...: the coverage cell "value:<name>". */
const char *kiln_gen_edge_name(int kind);

#endif
