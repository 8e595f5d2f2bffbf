/* Verification: a double-precision reference with error bounds, comparison against it, and
 * the differential runner that checks every layer of the compiler against it.
 *
 * Layering: src/verify sits above the runtime and below the tools; it may include every
 * lower layer (base, graph, ops, onnx, passes, tile, codegen, runtime).
 *
 *   kiln_vref *r;                                  // bound.c
 *   KILN_TRY(kiln_vref_compute(g, n_in, inputs, &r));
 *   kiln_vcheck c;                                 // compare.c
 *   kiln_vref_check(r, g->outputs.data[0], got, &c);   // c.ok, c.max_ratio ...
 *   kiln_vref_free(r);
 *
 *   kiln_verify_opts o; kiln_verify_opts_init(&o);  // runner.c
 *   kiln_verify_result res;
 *   KILN_TRY(kiln_verify_run(g, n_in, inputs, &o, &res));  // res.failed, res.signature
 *   kiln_verify_result_free(&res);
 *
 * See docs/DESIGN.md "Verification" for the error model.
 */
#ifndef KILN_VERIFY_H
#define KILN_VERIFY_H

#include <stdio.h>

#include "ops/ops.h"
#include "runtime/runtime.h"

/* ---- the reference with error bounds (bound*.c) ----
 * For every value of the root graph g that the graph's outputs depend on:
 * - val[v]: the reference value, computed with every floating-point tensor held in double
 *   (F64 tensors; value types F32/F16/BF16/F64 alike), integer, bool and string tensors in
 *   their own dtype (exact);
 * - err[v]: for a floating-point tensor value, an F64 tensor of the same shape: a bound on
 *   |y - val| for the result y of ANY correct implementation that stores the value in its
 *   dtype (accumulation order, fusion, contraction length, rounding of every intermediate
 *   result and of the inputs' errors propagated through the op). NULL for exact values.
 * Elements whose discrete result (a comparison, a rounding to an integer, an arg-max, a cast
 * to an integer type) could change within the input's error bound are "unstable": counted in
 * n_unstable. Finite inputs that produce NaN or Inf in some node count in n_nonfinite, and
 * so do finite values whose error bound reaches the range of their dtype (the note tells the
 * two apart). A
 * generated test input is usable only when both are 0. */
typedef struct kiln_vref {
  const kiln_graph *g; /* borrowed */
  int n_values;        /* g->values.len */
  kiln_val **val;      /* per value id; NULL when not computed */
  kiln_tensor **err;   /* per value id; NULL when exact or not computed */
  kiln_dtype *dtype;   /* per value id: the dtype the graph stores it in (the declared one,
                          or, where inference gave none, the one its op makes); 0 when not
                          computed. Nodes with subgraphs run in these dtypes. */
  /* per value id: which elements' zeros have no determined sign (1 in an F64 tensor of the
   * value's shape; NULL: none): an error interval that holds 0, or an op on the way that
   * may choose the sign of a zero (Max of -0 and +0, a sum that starts at +0; bound_zsign.c).
   * Elsewhere a zero must have the reference's sign: -0 and +0 differ for 1/x and for the
   * ops that copy or compare signs. */
  kiln_tensor **zloose;
  int64_t n_unstable;
  int64_t n_nonfinite;
  char note[256]; /* the first unstable or non-finite node, for messages */
  /* The precision policy the bounds allow for (borrowed; NULL: the default). A node whose
   * class computes (or accumulates) a value of storage dtype t in a type coarser than t
   * (elementwise f32 computed in f16) rounds in that type: its own error counts in that
   * type's unit roundoff, and its float inputs enter it rounded to the compute type. */
  const kiln_precision_policy *precision;
} kiln_vref;

/* Runs g (root graph, types inferred, static or bound by the inputs) on inputs (one per
 * graph input, borrowed). Error when an op cannot run. */
KILN_MUST_USE kiln_status kiln_vref_compute(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                                            kiln_vref **out);
/* kiln_vref_compute with the bounds of implementations that follow precision policy p (NULL:
 * the default, the same as kiln_vref_compute). */
KILN_MUST_USE kiln_status kiln_vref_compute_prec(const kiln_graph *g, int n_in,
                                                 kiln_val *const *inputs,
                                                 const kiln_precision_policy *p, kiln_vref **out);
void kiln_vref_free(kiln_vref *r);
/* A local reference: only the nodes with nodes[node] set (one node, the nodes of a kernel)
 * run, in order; every other value they read (inputs, outputs of other nodes) comes from
 * lookup(user, value_id) (borrowed; NULL: an error naming the value) and counts as exact.
 * The bounds then hold only the nodes' own rounding and the propagation within them: tight
 * where the bounds of a whole deep graph grow too loose to judge a late layer (worst-case
 * propagation through many contractions). Check the values the nodes produce with
 * kiln_vref_check as usual. */
KILN_MUST_USE kiln_status kiln_vref_compute_local(const kiln_graph *g, const bool *nodes,
                                                  kiln_val *(*lookup)(void *user, int value_id),
                                                  void *user, kiln_vref **out);
/* kiln_vref_compute_local with the bounds of precision policy p (kiln_vref.precision). */
KILN_MUST_USE kiln_status kiln_vref_compute_local_prec(
    const kiln_graph *g, const bool *nodes, kiln_val *(*lookup)(void *user, int value_id),
    void *user, const kiln_precision_policy *p, kiln_vref **out);
/* The same, but every value read from outside (lookup) and every constant carries the rounding
 * to its dtype as its error (u |x| + tiny), plus extra_err(user, id) when that returns an error
 * tensor (borrowed, F64, one per element; NULL: none): for comparing a rewritten graph with
 * exact values of the graph before it, where a correct rewrite may store a value rounded (a
 * folded constant: its extra error is the bound the graph before had for that value). */
KILN_MUST_USE kiln_status kiln_vref_compute_local_stored(
    const kiln_graph *g, const bool *nodes, kiln_val *(*lookup)(void *user, int value_id),
    const kiln_tensor *(*extra_err)(void *user, int value_id), void *user, kiln_vref **out);

/* ---- comparison (compare.c) ----
 * got (a value computed by some layer, in the graph's dtype) against value id v of r:
 * element i passes when |got_i - val_i| <= bound_i, where bound_i is the larger of the dtype
 * floor (atol + rtol * |val_i|: f32 1e-5/1.3e-6, f16 1e-5/1e-3, bf16 1e-5/1.6e-2, f64
 * 1e-12/1e-12, float8 types 1e-3/their unit roundoff) and KILN_VERIFY_SAFETY * err_i. NaN and
 * Inf must match val (positions and sign of Inf). Integer, bool and string results must be
 * exact. Dtype or shape differences fail. */
#define KILN_VERIFY_SAFETY 2.0
typedef struct kiln_vcheck {
  bool ok;
  double max_err;    /* max |got - val| over finite elements */
  double max_ratio;  /* max |got - val| / bound (0 for exact values; INFINITY for a NaN/Inf or
                        integer mismatch); > 1 fails */
  int64_t n_bad;     /* elements that fail */
  int64_t first_bad; /* flat index of the first, -1 when none */
  char msg[320];     /* on failure: what differs, where, got, expected, bound */
} kiln_vcheck;
void kiln_vref_check(const kiln_vref *r, int value_id, const kiln_val *got, kiln_vcheck *out);

/* ---- the differential runner (runner.c) ---- */
typedef enum kiln_layer_kind {
  KILN_LAYER_REFERENCE, /* the reference interpreter on the imported graph (its dtypes) */
  KILN_LAYER_PASS,      /* the interpreter on the graph after a pass application */
  KILN_LAYER_TILE,      /* the lowered program in the tile IR interpreter */
  /* One kind per registered target (runtime/target.h), KILN_LAYER_TARGET + its id: a target
   * that runs, its compiled code; one that compiles only, its program in the tile
   * interpreter (and the device, skipped). Named after the target. */
  KILN_LAYER_TARGET,
  KILN_LAYER_CPU = KILN_LAYER_TARGET + KILN_TARGET_CPU,   /* the compiled C code */
  KILN_LAYER_CUDA = KILN_LAYER_TARGET + KILN_TARGET_CUDA, /* the CUDA program */
  KILN_LAYER_KIND_COUNT = KILN_LAYER_TARGET + KILN_TARGET_COUNT
} kiln_layer_kind;
const char *kiln_layer_kind_name(kiln_layer_kind k); /* "reference", "pass", "tile", "cpu" ... */
/* The layer kind of target id t, and the target of a layer kind (NULL for the graph and
 * tile layers). */
kiln_layer_kind kiln_layer_of_target(kiln_target_id t);
const kiln_target *kiln_layer_target(kiln_layer_kind k);

struct kiln_verify_result;
typedef struct kiln_verify_opts {
  /* The targets whose layers run after the tile layer, by id (runtime/target.h): default
   * cpu only (kiln_verify_parse_targets reads a --backend list). */
  bool targets[KILN_TARGET_COUNT];
  bool each_pass; /* a layer per pass application (default true); false: only the graph
                     after all passes, and bisection with the pass limit on a failure */
  int threads;    /* cpu kernel threads (default 1) */
  /* > 1 and != threads: a second cpu layer compiled for this many kernel threads (kiln
   * verify: all cores, what kiln run uses by default); the tile layer then lowers for the
   * larger count, so that the tile verifier sees the parallel schedule. 0 (default): none */
  int par_threads;
  /* default true: a cpu layer compiled for more than one thread runs the compiled code twice
   * and fails unless both runs give the same bits at every step (a data race shows as a
   * difference; where: the first step that differs) */
  bool determinism;
  /* With determinism: the compiled code's arena (values, scratch) and output copies are
   * filled with 0xff before the first run and with zeros before a second run, at any thread
   * count (kiln_compiled_set_fill): a value read before it is written, an output copied
   * short, differ between the two (default true) */
  bool fill;
  /* default true: after a cpu layer passed, its compiled code runs once more, traced, and
   * the tile interpreter runs the same program: at the first step whose values differ bit
   * for bit, a kernel of exactly rounded operations only fails the layer (what a bound
   * cannot see: f32 arithmetic done in double, an fma the C compiler fused;
   * runner_exact.c) */
  bool exact;
  /* A target without a device here (cuda): its CUDA C is also compiled to PTX with NVRTC
   * where NVRTC can be loaded, the layer "cuda (NVRTC)", which fails when NVRTC rejects the
   * source (where: the kernel its first error lies in). Default true; kiln fuzz sets it
   * on the graphs drawn to compile */
  bool cuda_ptx;
  bool local;                /* local checks (default true): every kernel step of the tile, cpu and
                                cuda layers (runner_backend_local.c), and the nodes each pass application
                                changed (runner_pass_local.c, with each_pass) */
  const char *repro_dir;     /* on a failure, write the case there (kiln_verify_write_case); NULL:
                                none */
  FILE *log;                 /* progress and the layer table; NULL: silent */
  kiln_compile_opts compile; /* base options of the cpu layer (cache dir, cc ...) */
  /* Fault injection (tests): called after every step of the tile, cpu and cuda layers' runs
   * with each value the step produced (kiln_step_trace_fn); it may overwrite the tensor's
   * data to check that the runner catches and localizes a wrong kernel. NULL: none. */
  kiln_step_trace_fn inject;
  void *inject_user;
  unsigned inject_layers; /* bit 1 << kind for each layer kind it runs in; 0: every one */
  /* Nonzero: after the tile layer, the graph is lowered again under a schedule set drawn
   * from this seed (other microkernels, register tiles, parallel forms, loop splits,
   * vectorized and unrolled loops: runner_sched.c) and interpreted, a second tile layer
   * "tile (drawn schedule)". A set the lowering refuses is redrawn, never a finding. 0
   * (default): none. */
  uint64_t sched_seed;
  /* The layer "cpu (standalone C)" after the first cpu layer (runner_standalone.c): the
   * compiled model written as the standalone program of `kiln compile --emit-c`, built with
   * the C compiler, run on the inputs and compared with the reference; skipped where the
   * program cannot be written (a reference-kernel step, an input or output without a .npy
   * dtype). Default false: one more C compile and a process. */
  bool standalone;
  /* Called after the tile layer with the result so far (its features: what the lowered
   * program's code is made of, runner_features.c); when it returns false, the layers of the
   * targets whose code runs here (the cpu, a cuda with a GPU) are left out for this graph;
   * a target interpreted instead still runs. A fuzzer compiles the graphs whose code holds
   * what it has rarely compiled. NULL (default): they run. */
  bool (*gate)(void *user, const struct kiln_verify_result *res);
  void *gate_user;
  /* Called as each layer starts, with its kind and name (a fuzzer's child records in memory
   * it shares with the parent where it was, should it die there). NULL (default): none. */
  void (*layer_started)(void *user, kiln_layer_kind kind, const char *name);
  void *layer_started_user;
} kiln_verify_opts;
void kiln_verify_opts_init(kiln_verify_opts *o);
/* A list of registered target names ("cpu,cuda"), or "none": sets targets (every entry).
 * An unknown or repeated name is KILN_ERR_INVALID naming the known ones. */
KILN_MUST_USE kiln_status kiln_verify_parse_targets(const char *list,
                                                    bool targets[KILN_TARGET_COUNT]);
/* The list of the targets set ("cpu,cuda"; "none" when none), appended to b. */
void kiln_verify_targets_str(const bool targets[KILN_TARGET_COUNT], kiln_strbuf *b);

#define KILN_VERIFY_FEATURES 192

typedef struct kiln_layer_result {
  kiln_layer_kind kind;
  char name[64]; /* "reference", "pass 7 constfold", "tile", "cpu" */
  bool ran;      /* false: skipped (reason in msg) */
  bool ok;
  double max_err, max_ratio; /* over all outputs */
  int worst_output;          /* graph output index with max_ratio, -1 when none */
  bool errored;              /* ran, but the layer's run returned an error (msg); not ok */
  double seconds;            /* time the layer took (preparing and running it) */
  /* Local checks (opts.local). Tile, cpu, cuda: each kernel step's values against a
   * reference of its fusion group computed from the values this layer gave the step, read
   * as exact: the bound holds the group's own rounding only, however deep it sits. Pass
   * layers: the nodes the application changed, bounded from the graph before's reference
   * values, against that reference's values of the same names. A mismatch fails the layer
   * (local_failed, msg) even when the outputs pass. */
  int local_steps;     /* kernel steps (pass layers: values) checked */
  int local_unchecked; /* of those, steps (regions) whose local reference could not run */
  int local_unstable;  /* steps whose mismatch lies where the local reference is unstable:
                          not failures */
  double local_ratio;  /* worst |got - val| / bound over the locally checked values */
  bool local_failed;
  /* The end-to-end bounds: the largest relative bound of an output, KILN_VERIFY_SAFETY *
   * max err / max |val| (kiln_verify_looseness). Above KILN_VERIFY_LOOSE the end-to-end
   * comparison cannot judge the layer: the table says "bound too loose". */
  double looseness;
  char msg[384]; /* the failing comparison, the error of a layer that could not run, or
                    why it was skipped */
} kiln_layer_result;

typedef struct kiln_verify_result {
  KILN_VEC(kiln_layer_result) layers;
  bool failed;       /* some layer failed (mismatch, or error on a valid model) */
  int first_failing; /* index in layers, -1 when none */
  kiln_layer_kind fail_kind;
  char pass[32];           /* the pass whose application first breaks the graph ("" when the
                              graph layers pass) */
  int pass_application;    /* its 1-based index in the pipeline's applications (the pass
                              limit that first fails), 0 when none */
  char where[160];         /* the first failing node (graph layers) or kernel/step (tile, cpu,
                              cuda), with its op kinds */
  char signature[256];     /* what a reducer keeps and a fuzzer deduplicates on:
                              "<layer kind>|<pass or ->|<op kinds of where, sorted>" */
  char fired[256];         /* the passes that changed the graph, comma-separated, in pipeline
                              order, each once (for the fuzzer's pass firing counts) */
  char case_dir[1024];     /* where the case was written, "" when not */
  int64_t n_unstable;      /* unstable elements of the reference (kiln_vref.n_unstable): a
                              mismatch downstream of them may be no bug */
  char unstable_note[256]; /* the first unstable node (kiln_vref.note) */
  int threads;             /* the kernel threads to replay with (the larger of opts.threads
                              and opts.par_threads) */
  uint64_t sched_seed;     /* the drawn schedule's seed when that layer ran (replay flag) */
  bool standalone;         /* the standalone C layer ran (replay flag --standalone) */
  char precision[256];     /* opts.compile.precision's rules that differ from the default
                              (kiln_precision_format; replay flag --precision-policy), "" */
  char fallback[128];      /* opts.compile.force_fallback: ops run by their reference kernel
                              (replay flag --force-fallback), "" */
  char paths[512];         /* the lowering paths the tile layer took, comma-separated, each
                              once: "sched:KIND/MICRO/PAR" per kernel schedule and
                              "fallback:OP" per node left to its reference kernel (for the
                              fuzzer's coverage cells) */
  /* The features of the tile layer's program, each a hash of a tuple (runner_features.c),
   * each once, at most KILN_VERIFY_FEATURES; none when the tile layer did not lower or no
   * gate is set (opts.gate: only it reads them). */
  uint32_t features[KILN_VERIFY_FEATURES];
  int n_features;
  bool compiled_ran; /* code compiled for a target ran (the gate let it, or there is none) */
} kiln_verify_result;

/* Verifies g on inputs (both borrowed; g is not modified: the runner works on copies).
 * Returns an error only when the reference itself cannot run or the case cannot be written;
 * a layer that fails or errors is a result (res->failed). */
KILN_MUST_USE kiln_status kiln_verify_run(const kiln_graph *g, int n_in, kiln_val *const *inputs,
                                          const kiln_verify_opts *o, kiln_verify_result *res);
void kiln_verify_result_free(kiln_verify_result *res);
/* The layer table: one line per layer with max error, max error/bound and status, then on
 * a failure the first failing layer, pass, where, signature and case directory. */
void kiln_verify_print(const kiln_verify_result *res, kiln_strbuf *out);
/* The bisection of the pass layers: the smallest k in (good, bad] with fails(user, k),
 * given that fails(good) is false and fails(bad) true (binary search, about
 * log2(bad - good) calls; with several change points it returns one of them). */
/* The relative bound of value v of r: KILN_VERIFY_SAFETY * max err / max(max |val|, 1e-6)
 * over its finite elements; 0 for exact values, INFINITY for a non-finite bound. */
double kiln_verify_looseness(const kiln_vref *r, int v);
/* A relative end-to-end bound above this judges nothing (kiln_layer_result.looseness). */
#define KILN_VERIFY_LOOSE 0.1
int kiln_verify_bisect(int good, int bad, bool (*fails)(void *user, int k), void *user);

/* ---- cases (case.c) ----
 * A case directory holds:
 *   model.onnx   the graph
 *   model.kiln   the same graph in the text IR
 *   input_<i>.pb one TensorProto per graph input, named after it
 *   case.txt     "key: value" lines: signature, layer, pass, where, threads (when > 1), and
 *                "command: kiln verify DIR ..." -- the command that replays it.
 * `kiln verify DIR` loads model.onnx and the inputs of a case directory. */
/* The command that replays res from the case folder dir: "kiln verify DIR" with the --backend
 * and --threads the run used when they are not the defaults. Returns buf. */
/* The value of the line "key: value" of a case.txt text, copied to out ("" when absent). Only a
 * line that starts with the key counts: text from a model inside another field cannot pose as
 * one (fields are written one escaped line each). */
void kiln_verify_case_field(const char *text, const char *key, char *out, size_t len);
const char *kiln_verify_replay_command(const char *dir, const kiln_verify_result *res, char *buf,
                                       size_t len);
/* Whether a case may be written to dir: a new folder, an empty one or an earlier case folder
 * (nothing but the files model.onnx, model.kiln, case.txt, input_<N>.pb and a folder
 * "reduced"), that neither holds input nor has a file that is input (the model or case folder being
 * verified or reduced; NULL: not checked). A case replaces such a folder whole, so a folder of
 * other files is refused (exit 2), never written into. */
KILN_MUST_USE kiln_status kiln_verify_check_case_dest(const char *dir, const char *input);
/* One progress line on log (NULL: none): the formatted text escaped to one line with no
 * escape sequence (kiln_esc_line, kiln_esc_terminal), as names from a model or a case.txt
 * may be part of it. */
void kiln_verify_log(FILE *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether a case may be written to dir: a new folder, an empty one or an earlier case folder
 * (nothing but model.onnx, model.kiln, case.txt, input_<N>.pb), none of whose files is the
 * file input (the model or case folder being verified or reduced; NULL: not checked). A case
 * replaces such a folder whole, so a folder of other files is refused (exit 2), never written
 * into. */
KILN_MUST_USE kiln_status kiln_verify_check_case_dest(const char *dir, const char *input);
KILN_MUST_USE kiln_status kiln_verify_write_case(const char *dir, const kiln_graph *g, int n_in,
                                                 kiln_val *const *inputs,
                                                 const kiln_verify_result *res);
/* Loads a case: *g (types inferred), *inputs (malloc'd array of n values), and the recorded
 * signature (may be NULL). */
KILN_MUST_USE kiln_status kiln_verify_load_case(const char *dir, kiln_graph **g, kiln_val ***inputs,
                                                int *n, char *signature, size_t sig_len);
/* Reads dir/input_<i>.pb, one per graph input of g, into vals (one slot per input, NULL on
 * entry), and checks them against g's inputs (kiln_graph_check_inputs; a file input_<n>.pb
 * beyond the n inputs is an error too): KILN_ERR_INVALID naming the file. A case folder and
 * the test_data_set_<k> folder of an ONNX test layout both hold their inputs this way. */
KILN_MUST_USE kiln_status kiln_verify_load_inputs(const char *dir, const kiln_graph *g,
                                                  kiln_val **vals);

#endif
