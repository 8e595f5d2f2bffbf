/* Private to the differential runner (runner*.c): the state of one kiln_verify_run and the
 * helpers its layers share. */
#ifndef KILN_VERIFY_RUNNER_INTERNAL_H
#define KILN_VERIFY_RUNNER_INTERNAL_H

#include "verify/verify.h"

typedef struct kiln_vrun {
  const kiln_graph *g; /* the caller's graph (never modified) */
  int n_in;
  kiln_val *const *inputs;
  const kiln_verify_opts *o;
  kiln_verify_result *res;
  kiln_vref *ref;    /* on g */
  kiln_strbuf onnx;  /* g as a ModelProto: copies load from it */
  bool clone_text;   /* the ONNX round trip changes g: copies parse its text form */
  kiln_strbuf text;  /* g in the text IR (clone_text only) */
  kiln_tensor **tin; /* the inputs as tensors (NULL for a non-tensor input) */
  uint64_t *in_hash; /* of each tensor input's bytes (0 for others): compiled code must keep them */
  bool all_tensors;  /* every input is a tensor (the tile layer runs) */
  double t0;         /* start of the current layer */
  double looseness;  /* of the end-to-end bounds of the graph's outputs */
  kiln_status env;   /* the first layer error caused by the environment (runner_check.c) */
  int env_layer;     /* the index of its layer in res->layers */
  bool standalone_tried; /* the standalone C layer has its row (runner_standalone.c) */
  char *drawn_sched;     /* a drawn schedule set the tile layer took, for the cpu layer to compile
                            (one graph in four of those with one), or NULL */
} kiln_vrun;

/* A new copy of g with its symbolic input dims bound to the inputs (as the compiler does). */
KILN_MUST_USE kiln_status kiln_vrun_copy(kiln_vrun *r, kiln_graph **out);
/* Appends a layer (ran, ok) and starts its clock. The pointer is valid until the next
 * kiln_vrun_layer. */
kiln_layer_result *kiln_vrun_layer(kiln_vrun *r, kiln_layer_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Compares the outputs of a layer (one per graph output, in order) with the reference. */
void kiln_vrun_compare(kiln_vrun *r, kiln_layer_result *l, kiln_val *const *outs);
/* The layer's run returned st (taken): a failure. */
void kiln_vrun_errored(kiln_vrun *r, kiln_layer_result *l, kiln_status st);
void kiln_vrun_skip(kiln_layer_result *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Stops the layer's clock; when it failed and is the first failure, records it. Returns
 * true when this layer is the first failing one (the caller localizes it). */
bool kiln_vrun_done(kiln_vrun *r, kiln_layer_result *l);

/* Signature and where of the first failure: "<kind>|<pass or ->|<op kinds sorted>". ops is
 * a comma-separated list (any order, repeats allowed), or "" for "-". */
void kiln_vrun_set_where(kiln_vrun *r, const char *where, const char *ops);

/* One traced run of program p in the tile interpreter, or of compiled c, on the run's inputs
 * (outputs dropped): fn(user, ...) after each step. */
KILN_MUST_USE kiln_status kiln_vrun_trace_interp(const kiln_vrun *r, const kiln_program *p,
                                                 kiln_step_trace_fn fn, void *user);
KILN_MUST_USE kiln_status kiln_vrun_trace_compiled(const kiln_vrun *r, kiln_compiled *c,
                                                   kiln_step_trace_fn fn, void *user);
/* runner_exact.c: compiled c against the tile interpreter on its own program, bit for bit
 * (opts exact). true: a kernel of exactly rounded operations gave other bits (l failed, its
 * message set; *step and *value name where). inject runs first in the compiled run. */
bool kiln_vrun_exact(kiln_vrun *r, kiln_compiled *c, kiln_step_trace_fn inject, void *inject_user,
                     kiln_layer_result *l, int *step, int *value);

/* runner_pass.c: the pass layers. *final receives the graph after the whole pipeline
 * (fused, bound), or NULL when the passes failed. */
KILN_MUST_USE kiln_status kiln_vrun_passes(kiln_vrun *r, kiln_graph **final);

/* runner_backend.c: the backend layers: the tile layer, and the layers of target t (its
 * compiled code when it runs, else its program in the tile interpreter). */
void kiln_vrun_tile(kiln_vrun *r, kiln_graph *fused);
/* The threads the tile layers lower for (the larger of the layer's and opts par_threads). */
int kiln_vrun_tile_threads(const kiln_vrun *r);
/* Interprets program p on the run's inputs into layer l (compared with the reference). */
void kiln_vrun_interp_program(kiln_vrun *r, const kiln_program *p, kiln_layer_result *l);
/* The tile layer under a drawn schedule set (opts sched_seed; runner_sched.c): p is the
 * program of the default schedules (its kernels, kinds and loops are what is drawn for). */
void kiln_vrun_tile_drawn(kiln_vrun *r, kiln_graph *fused, const kiln_program *p);
/* runner_standalone.c: the layer "cpu (standalone C)" of compiled model c (opts.standalone). */
void kiln_vrun_standalone(kiln_vrun *r, const kiln_compiled *c);
void kiln_vrun_target(kiln_vrun *r, const kiln_target *t);
/* The step of p whose kernel holds the first error of an NVRTC log on src, the CUDA C of p
 * ("kiln.cu(LINE): error ..." and the __global__ function that LINE lies in); -1: none. */
int kiln_vrun_nvrtc_step(const kiln_program *p, const char *src, const char *log);
/* The hash of the bytes of tensor input i (0 for a string or non-tensor input). */
uint64_t kiln_vrun_input_hash(const kiln_vrun *r, int i);
/* runner_features.c: adds the features of program p to res (kiln_verify_result.features). */
struct kiln_program;
void kiln_vrun_features(kiln_verify_result *res, const struct kiln_program *p);

/* runner_det.c: the determinism check of a cpu layer compiled for several threads. Pass
 * kiln_vdet_observe and the kiln_vdet as the first run's step observer (it calls inner
 * first), then kiln_vdet_rerun runs c again (with the injector `inject` only) and compares
 * every step's values and the outputs with the first run's (first: its outputs): true when
 * they differ (l fails, with the message); kiln_vdet_where gives the first differing step. */
typedef struct kiln_vdet kiln_vdet;
kiln_vdet *kiln_vdet_new(kiln_step_trace_fn inner, void *inner_user);
void kiln_vdet_observe(void *user, int step, int value, const kiln_tensor *t);
bool kiln_vdet_rerun(kiln_vdet *d, kiln_vrun *r, kiln_compiled *c, int threads, bool refilled,
                     kiln_step_trace_fn inject, kiln_val *const *first, kiln_layer_result *l);
bool kiln_vdet_where(const kiln_vdet *d, int *step, int *value);
/* Runs c once more the way users run it: untraced, through kiln_compiled_run (the C API's
 * entry) when inputs and outputs are tensors, else kiln_compiled_run_vals. The traced runs
 * take another step loop (run_steps_traced) and keep each step's values until the observer
 * saw them; the outputs must be `first`'s bits. True when they differ or the run fails (l
 * fails, with the message). */
bool kiln_vdet_untraced(kiln_vrun *r, kiln_compiled *c, int threads, kiln_val *const *first,
                        kiln_layer_result *l);
void kiln_vdet_free(kiln_vdet *d);

/* What node n of g computes, by names (op, attributes, inputs with constants by content,
 * group; with_types: output types): equal keys in two graphs compute the same. */
char *kiln_vrun_node_key(const kiln_graph *g, const kiln_node *n, bool with_types);
/* runner_pass_local.c: the local check of a pass layer: the nodes of cur (after the
 * application) that prev (before it) lacks, bounded from prev_ref's values by name, against
 * prev_ref's values of the same names. Fills l's local fields; fails l on a mismatch. */
void kiln_vrun_pass_local(kiln_vrun *r, const kiln_graph *prev, const kiln_vref *prev_ref,
                          const kiln_graph *cur, kiln_layer_result *l);

/* runner_backend_local.c: the local checks of a backend layer's traced run. Create one per run of
 * program p (inputs: one per graph input of p->graph, borrowed), pass kiln_vlocal_observe
 * and it as the run's step observer (it calls inject first), then kiln_vlocal_finish fills
 * the layer's local fields and fails it on a local mismatch. */
typedef struct kiln_vlocal kiln_vlocal;
kiln_vlocal *kiln_vlocal_new(const kiln_program *p, kiln_val *const *inputs,
                             kiln_step_trace_fn inject, void *inject_user);
void kiln_vlocal_observe(void *user, int step, int value, const kiln_tensor *t);
void kiln_vlocal_finish(kiln_vlocal *lc, kiln_layer_result *l);
/* The first step that failed its local check and the value, when one did. */
bool kiln_vlocal_failure(const kiln_vlocal *lc, int *step, int *value);
void kiln_vlocal_free(kiln_vlocal *lc);

/* runner_check.c: what is to blame. The inputs against the graph (count, kinds, dtypes,
 * shapes, one extent per symbolic dim): KILN_ERR_INVALID naming the input. */
KILN_MUST_USE kiln_status kiln_vrun_check_inputs(const kiln_graph *g, int n_in,
                                                 kiln_val *const *inputs);
/* True when layer l's error st comes from the environment (a missing C compiler, a full disk:
 * KILN_ERR_SYSTEM or KILN_ERR_IO); the first such error is kept in r->env (st is not taken),
 * and kiln_verify_run returns it instead of a result (kiln_vrun_take_environment). */
bool kiln_vrun_environment(kiln_vrun *r, const kiln_layer_result *l, kiln_status st);
/* The environment's error to return instead of the result: when its layer is the first
 * failing one (a finding before it stands, and the error is dropped). Takes r->env. */
KILN_MUST_USE kiln_status kiln_vrun_take_environment(kiln_vrun *r);

#endif
