/* Private to the generator (gen.c: state, operands, text, inference; gen_ops*.c: the op
 * table and one builder per op family). */
#ifndef KILN_VERIFY_GEN_INTERNAL_H
#define KILN_VERIFY_GEN_INTERNAL_H

#include <math.h>

#include "gen.h"

/* The second dim symbol of generated graphs: "N" is its prefix, so that binding must match
 * symbol names whole. */
#define GEN_SYM2 "N2"

/* ---- random numbers: xoshiro256** seeded by splitmix64 ---- */
typedef struct gen_rng {
  uint64_t s[4];
} gen_rng;
void gen_rng_seed(gen_rng *r, uint64_t seed);
uint64_t gen_rng_next(gen_rng *r);
int gen_int(gen_rng *r, int lo, int hi); /* uniform in [lo, hi] */
double gen_unif(gen_rng *r);             /* [0, 1) */
bool gen_chance(gen_rng *r, double p);

/* ---- value domains: what the data of a value is known to satisfy ---- */
typedef enum gen_dom {
  DOM_ANY,     /* floats in [-2, 2], ints in [-6, 6] */
  DOM_POS,     /* floats in [0.25, 3], ints in [1, 6] */
  DOM_UNIT,    /* floats in [-0.9, 0.9] */
  DOM_GE1,     /* floats in [1.1, 3] */
  DOM_NONZERO, /* |x| in [0.5, 2] (floats), [1, 6] (ints) */
  DOM_NONNEG,  /* floats in [0, 2] (Sqrt, Abs outputs) */
  DOM_COUNT
} gen_dom;

/* dtype sets for operand requests */
enum {
  DT_F32 = 1,
  DT_F16 = 2,
  DT_F64 = 4,
  DT_I32 = 8,
  DT_I64 = 16,
  DT_BOOL = 32,
  DT_U8 = 64,
  DT_I8 = 128,
  DT_I16 = 256,
  DT_U16 = 512,
  DT_U32 = 1024,
  DT_U64 = 2048,
  DT_BF16 = 4096,
  DT_FLOAT = DT_F32 | DT_F16 | DT_F64 | DT_BF16,
  DT_INT = DT_I32 | DT_I64 | DT_I8 | DT_I16,
  DT_UINT = DT_U8 | DT_U16 | DT_U32 | DT_U64,
  DT_NUM = DT_FLOAT | DT_INT | DT_UINT,
  DT_ALL = DT_NUM | DT_BOOL,
};
int gen_dt_bit(kiln_dtype t); /* 0 for dtypes the generator does not make */

typedef struct gen_val {
  char name[16];
  kiln_type type; /* from inference once the defining node is accepted */
  bool is_input, is_const;
  gen_dom dom;
  double mag; /* bound on |x| (INFINITY when unknown) */
  int uses;
  bool dead;        /* never a graph output (an output of a multi-output node left unused) */
  bool keep;        /* always a graph output, read by nodes or not */
  bool sub_read;    /* read by a subgraph (an If's branch): not a sink, though no node input */
  bool dyn;         /* dims that depend on the data (NonZero): never picked as an operand; only the
                       builder that made it reads it */
  bool ranged;      /* an integer graph input that holds indices or axes: drawn uniformly in */
  int64_t ilo, ihi; /* [ilo, ihi] (no edge values), never picked as an ordinary operand */
  int n_fix;        /* > 0: a ranged input whose elements are fix[0..n_fix) as written (a shape, */
  int64_t fix[16];  /* repeats, starts or a count known only at run time: gen_new_fixed_input) */
  int64_t ext[KILN_MAX_RANK]; /* an input's extents where its type has an unnamed dim other
                                 than the first (0: from the type, gen_dim_extent) */
} gen_val;

typedef struct gen_input {
  int val; /* index in vals */
  int pos; /* numeric position in the text */
} gen_input;

typedef struct gen {
  gen_rng rng;  /* the current step's operands and structure (gen_int(&G->rng, ...)) */
  gen_rng arng; /* the current step's attribute values (gen_attr_int ...) */
  gen_rng drng; /* the current step's dtypes (gen_pick_dt) */
  gen_rng srng; /* the current step's new shapes (gen_shape) */
  gen_rng frng; /* graph-level: outputs and the input search */
  const kiln_gen_opts *o;
  int opset;
  int64_t sym_n;    /* the extent bound to symbol "N" */
  int64_t sym_m;    /* the extent bound to symbol GEN_SYM2 (fewer inputs take it) */
  kiln_dtype theme; /* graph-level: the dtype most values take where an op allows it (real
                       models are mostly of one dtype), KILN_UNDEFINED: none */
  int focus;        /* graph-level: an op row drawn for half of the fresh node draws, so that
                       one op meets itself and its neighbours in many forms (-1: none) */
  int scale;        /* graph-level: 1, or 64 for a large graph (value and new-input limits
                       times 64: races, thresholds on bytes, plans of large blocks) */
  KILN_VEC(gen_val) vals;
  KILN_VEC(char *) inputs; /* "%name: type" */
  KILN_VEC(char *) lines;  /* constants and nodes, in order */
  kiln_graph *g;           /* the last accepted graph (parsed, inferred) */
  int n_nodes;
  int next_name;
  int max_nodes;           /* of the graph (options clamped to 1..30) */
  int prefer;              /* gen_pick returns this value when it matches (chains), -1: none */
  char why[160];           /* a builder's reason to give up (debugging) */
  kiln_gen_genome *genome; /* the steps accepted so far */
} gen;

/* Attribute values drawn from the attribute stream of the step (a re-attribute mutation
 * redraws these alone): uniform in [lo, hi], with the boundary values lo, hi, 0, 1 and -1
 * (those inside the range) drawn a third of the time. */
int gen_attr_int(gen *G, int lo, int hi);
bool gen_attr_chance(gen *G, double p);
/* An axis 0 <= axis < rank as written: itself or axis - rank (the negative form), drawn. */
int gen_axis_form(gen *G, int axis, int rank);
double gen_attr_unif(gen *G);

/* ---- operand requests ---- */
typedef struct gen_want {
  int dts; /* dtype set (DT_*) */
  int rank_min, rank_max;
  gen_dom dom;       /* the data must lie in this domain (DOM_ANY: anything) */
  bool static_shape; /* no symbolic dims */
  bool no_const;     /* not a constant (inputs whose data the search controls are fine) */
  double max_mag;    /* 0: any */
  bool empty_ok;     /* the op takes empty tensors (a zero extent): elementwise ops; values
                        with no element match only requests that allow them */
  bool dyn_ok;       /* the op needs no extent (unary elementwise): values of unknown extents
                        (dyn) match too, and a new input may get an unnamed dim */
} gen_want;

/* A value matching w: an existing one (recent ones favoured) or a new graph input or
 * constant of a random shape. -1 only when w cannot be met. */
int gen_pick(gen *G, const gen_want *w);
/* An existing value whose type equals or broadcasts to `like` (same dtype, rank <= like's),
 * or a new one; dom as in gen_pick. */
int gen_pick_bcast(gen *G, int like, gen_dom dom, kiln_dtype dt);
/* A new value that broadcasts with `like` both ways (multidirectional): where like has 1 an
 * extent > 1 now and then (often one of like's other extents: [3,1] with [1,3]), elsewhere
 * like's extent or 1, and now and then one more leading dim; the result is larger than like.
 * Falls back to gen_pick_bcast when the result would be too large. */
int gen_pick_mutual(gen *G, int like, gen_dom dom, kiln_dtype dt);
/* An existing value of exactly this type (dims and symbols) or a new input/constant. */
int gen_pick_type(gen *G, const kiln_type *t, gen_dom dom);
/* New graph input / constant of a given type (dims may carry the symbol "N" or GEN_SYM2). */
int gen_new_input(gen *G, const kiln_type *t, gen_dom dom);
int gen_new_const(gen *G, const kiln_type *t, gen_dom dom);
/* A new integer graph input of type t whose elements are drawn in [lo, hi] (indices or an
 * axis known only at run time). */
int gen_new_ranged_input(gen *G, const kiln_type *t, int64_t lo, int64_t hi);
/* A new integer graph input (dtype dt, rank 1 of n elements, or a scalar) holding vals
 * (n <= 16) in every case: an operand the compiler sees only at run time (a shape, repeats,
 * starts, a count), never picked as an ordinary operand. */
int gen_new_fixed_input(gen *G, kiln_dtype dt, int n, const int64_t *vals, bool scalar);
/* A constant of type t (static) with every element x. */
int gen_const_fill(gen *G, const kiln_type *t, double x);
/* An I64 constant of rank 1 (rank 0 when scalar) holding vals. */
/* A float constant of type t whose elements are drawn from vals (n_vals > 0). */
int gen_const_pick(gen *G, const kiln_type *t, int n_vals, const double *vals);
int gen_const_i64(gen *G, int n, const int64_t *vals, bool scalar);
/* A random static shape of rank r with at most max_elems elements (dims >= 1; wider dims in
 * a large graph). */
void gen_shape(gen *G, int r, int64_t max_elems, int64_t *dims);
/* dims -1: the symbol N, -2: the symbol N2, -3: an unnamed unknown dim */
kiln_type gen_tensor_type(kiln_dtype dt, int rank, const int64_t *dims);

/* Writes the node `op(in...) {attrs}` with n_out new outputs of domain dom and magnitude
 * bound mag; in[i] < 0 writes `_`. Returns the index of the first output. */
int gen_emit(gen *G, const char *op, int n_in, const int *in, int n_out, const char *attrs,
             gen_dom dom, double mag);

/* The attribute text of a node of op with the schema's defaults varied (gen_attrs.c): an
 * attribute written with its default value left out now and then, one left out written with
 * its default now and then; the meaning stays. A new string (owned by the caller). */
char *gen_attrs_vary(gen *G, const char *op, const char *attrs);

/* The values of an enumerated attribute (NULL-terminated, at most 6), NULL when the attribute
 * is not enumerated (gen_cells.c). */
const char *const *gen_enum_values(const char *op, const char *name);

/* Types the values written since the last accepted draw (parse and inference of the text
 * so far), so that a pattern can build on them; false when inference rejects the text. */
bool gen_settle(gen *G);

const gen_val *gen_v(const gen *G, int i);
kiln_dtype gen_dtype(const gen *G, int i);
int gen_rank(const gen *G, int i);
/* The extent of a dim: its value, or the extent bound to its symbol (N or N2). */
int64_t gen_dim_extent(const gen *G, const kiln_dim *x);
/* A dim as gen_tensor_type takes it: its extent, or -1 (N), -2 (N2), -3 (unnamed). */
int64_t gen_dim_code(const kiln_dim *x);
/* Extent of dim d of value i; symbolic dims give the bound extent (sym_n, sym_m). */
int64_t gen_dim(const gen *G, int i, int d);
bool gen_is_static(const gen *G, int i);
/* Magnitude of value i (INFINITY when unknown). */
double gen_mag(const gen *G, int i);
/* A random dtype of the set (weighted: f32 most often). */
kiln_dtype gen_pick_dt(gen *G, int dts);

/* One random element of domain dom for dtype dt; s scales the ANY and UNIT ranges. */
double kiln_gen_draw(gen_rng *r, kiln_dtype dt, gen_dom dom, double s);
/* The input search (gen_inputs.c): fills c->inputs and c->status. */
KILN_MUST_USE kiln_status kiln_gen_inputs(gen *G, kiln_gen_case *c);

/* The opset a genome seed draws (its graph-level choices) under o's op list. */
int gen_seed_opset(const kiln_gen_opts *o, uint64_t seed);

/* ---- the op table (gen_ops.c) ---- */
typedef bool (*gen_build_fn)(gen *G, int op_index);
typedef struct gen_op {
  const char *name;
  kiln_op op; /* the op it draws; KILN_OP_UNKNOWN for a pattern of several ops */
  int since;  /* first opset it may be drawn in */
  int weight; /* relative draw weight */
  gen_build_fn build;
} gen_op;
extern const gen_op kiln_gen_ops[];
extern const int kiln_gen_n_ops;
/* The row of kiln_gen_ops that draws op, -1 if none; why the generator does not draw op
 * (NULL when it does, or has no reason recorded). */
int kiln_gen_op_index(kiln_op op);
const char *kiln_gen_op_excluded(kiln_op op);

/* ---- ONNX type constraints (gen_types_table.c, generated by scripts/gen_type_constraints.py;
 * checked by gen_types.c) ---- */
typedef struct gen_type_version {
  int since;        /* 0 ends a list */
  int n_in, var_in; /* formal inputs; var_in: the last one is variadic */
  int n_out, var_out;
  const uint32_t *in, *out; /* per formal parameter: bit 1 << dtype for each allowed dtype */
} gen_type_version;
typedef struct gen_type_op {
  const char *name;
  const gen_type_version *versions; /* increasing since */
} gen_type_op;
extern const gen_type_op kiln_gen_type_ops[];
extern const int kiln_gen_n_type_ops;
/* False (why: the node and dtype) when a node's input or output dtype is not one its schema
 * at `opset` allows. Ops the table does not know are accepted. */
bool gen_types_ok(const kiln_graph *g, int opset, char *why, size_t why_len);
/* The same check of node n alone. */
bool gen_node_types_ok(const kiln_graph *g, int n, int opset, char *why, size_t why_len);

/* builders of the second table file (gen_ops_nn.c) */
bool gen_b_matmul(gen *G, int op);
bool gen_b_gemm(gen *G, int op);
bool gen_b_conv(gen *G, int op);
bool gen_b_conv_transpose(gen *G, int op);
bool gen_b_pool(gen *G, int op);
bool gen_b_global_pool(gen *G, int op);
bool gen_b_norm(gen *G, int op);
bool gen_b_topk(gen *G, int op);
bool gen_b_rnn(gen *G, int op);
kiln_type gen_gemm_c_type(gen *G, kiln_dtype dt, int64_t m, int64_t n, bool m_known);
/* A value for an element of string-list attribute name of op (the recurrent ops'
 * activations), drawn; NULL when the generator knows none. */
const char *gen_list_string(gen *G, const char *op, const char *name);
bool gen_b_einsum(gen *G, int op);
/* builders of gen_ops_data.c */
bool gen_b_transpose(gen *G, int op);
bool gen_b_reshape(gen *G, int op);
bool gen_b_flatten(gen *G, int op);
bool gen_b_squeeze(gen *G, int op);
/* A written Slice bound for position p (-1 <= p <= dim): itself, its negative form, or past an
 * end (dim + k, INT64_MAX, -dim - 1 - k, INT64_MIN). */
int64_t gen_slice_bound(gen *G, int64_t p, int64_t dim);
/* Where a written Slice bound v lands on an axis of extent dim for the step's sign. */
int64_t gen_slice_clamp(int64_t v, int64_t dim, int64_t step);
int gen_emit_axes(gen *G, const char *op, int x, int n, const int64_t *ax);
bool gen_b_unsqueeze(gen *G, int op);
bool gen_b_concat(gen *G, int op);
bool gen_b_split(gen *G, int op);
bool gen_b_slice(gen *G, int op);
bool gen_b_pad(gen *G, int op);
bool gen_b_tile(gen *G, int op);
bool gen_b_expand(gen *G, int op);
bool gen_b_d2s(gen *G, int op);
bool gen_b_gather(gen *G, int op);
bool gen_b_gather_el(gen *G, int op);
bool gen_b_gather_nd(gen *G, int op);
bool gen_b_scatter_el(gen *G, int op);
bool gen_b_scatter_nd(gen *G, int op);
bool gen_b_trilu(gen *G, int op);
bool gen_b_onehot(gen *G, int op);
bool gen_b_eyelike(gen *G, int op);
bool gen_b_shape(gen *G, int op);
bool gen_b_cos(gen *G, int op); /* ConstantOfShape */
bool gen_b_nonzero(gen *G, int op);
/* gen_ops_ctl.c */
bool gen_b_if(gen *G, int op);
bool gen_b_shapechain(gen *G, int op);
/* gen_ops_rt.c: run-time shapes, aliases of one storage */
bool gen_b_rtshape(gen *G, int op);
bool gen_b_alias(gen *G, int op);
/* patterns of gen_ops.c used by the table */
bool gen_b_chain(gen *G, int op);
/* gen_patterns.c: a pass pattern on an inner value, its result read by another node */
bool gen_b_pattern(gen *G, int op);
int gen_op_index(const char *name); /* the table entry of an op name, -1 when none */
bool gen_b_diamond(gen *G, int op);
/* gen_dup.c: a copy or near-copy of an earlier node (cse); gen_copy_last_node copies the last
 * node written (kind 0 exact, 1 same meaning, 2 one attribute changed, 3 two operands of one
 * type swapped, 4 a constant operand differing in one element): the copy's first output, -1 when
 * that variant does not exist. */
bool gen_b_duplicate(gen *G, int op);
int gen_copy_last_node(gen *G, int kind);

/* ---- inputs at the edges of their domain (gen_values.c) ---- */
/* The edge kinds (bits 1 << KILN_GEN_EDGE_*) an input of dtype dt and domain dom can take. */
unsigned gen_edge_kinds(kiln_dtype dt, gen_dom dom);
/* Stores element i of t (any generated numeric dtype): a value of edge kind `kind` (one of
 * gen_edge_kinds(t->dtype, dom)) inside dom; a tie copies an earlier element of t (elements
 * before i must already hold values of dom). */
void gen_edge_store(gen_rng *r, kiln_tensor *t, int64_t i, gen_dom dom, int kind);
/* Element i of float tensor t becomes a NaN of random sign and payload (written as bits). */
void gen_edge_nan(gen_rng *r, kiln_tensor *t, int64_t i);
/* A value of dtype `from` in dom at the edge of what a Cast to `to` must get right: to's
 * subnormals, its rounding ties, its largest values, the infinities (floats), the extremes the
 * source holds exactly, halves to truncate, large integers exact only in f64 (integers). Before the
 * rounding to `from`. */
double gen_cast_edge(gen_rng *r, kiln_dtype from, kiln_dtype to, gen_dom dom);
/* Element i of t (a 64-bit integer dtype) becomes an integer past 2^53, which no double holds,
 * at a rounding tie of the float type `to` (2^q + 2^(q-p), p its significand bits), with a
 * sticky low bit or without: a conversion that goes through a double rounds twice. In dom. */
void gen_cast_edge_wide(gen_rng *r, kiln_tensor *t, int64_t i, kiln_dtype to, gen_dom dom);
/* Whether element i of t lies in dom (finite for floats; -0.0 counts as 0). */
bool gen_edge_in_dom(const kiln_tensor *t, int64_t i, gen_dom dom);

#endif
