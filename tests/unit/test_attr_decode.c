/* Unit tests of the generated attribute schemas (op_attrs.h) and the typed decoders
 * (attr_decode.h): the generated defaults are ONNX's, a decoder's defaults are the table's at
 * every schema version, and a wrong kind or a value out of range is an error naming the node. */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/attr_decode.h"

/* ---- helpers ---- */

/* A graph with one node of op_type (named "n1") at opset; its input is a rank-2 float. */
static kiln_graph *one_node(const char *op_type, int64_t opset, kiln_node **out) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", opset);
  int64_t dims[2] = {2, 3};
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 2, dims));
  const char *outs[] = {"y"};
  kiln_status st = kiln_graph_add_node(g, op_type, "", "n1", 1, &x, 1, outs, NULL);
  CHECK(st == KILN_OK);
  kiln_status_free(st);
  *out = &g->nodes.data[g->nodes.len - 1];
  return g;
}

static void set_f(kiln_graph *g, const char *name, float v) {
  kiln_node_add_attr(g, g->nodes.len - 1, name, KILN_ATTR_FLOAT)->f = v;
}

static void set_i(kiln_graph *g, const char *name, int64_t v) {
  kiln_node_add_attr(g, g->nodes.len - 1, name, KILN_ATTR_INT)->i = v;
}

static void set_s(kiln_graph *g, const char *name, const char *v) {
  kiln_attr *a = kiln_node_add_attr(g, g->nodes.len - 1, name, KILN_ATTR_STRING);
  a->s = kiln_graph_strdup(g, v);
  a->s_len = strlen(v);
}

static void set_ints(kiln_graph *g, const char *name, int n, const int64_t *v) {
  kiln_attr *a = kiln_node_add_attr(g, g->nodes.len - 1, name, KILN_ATTR_INTS);
  a->ints = kiln_graph_alloc(g, (size_t)n * sizeof *a->ints);
  memcpy(a->ints, v, (size_t)n * sizeof *v);
  a->n = n;
}

/* The node's (g's last) value after kiln_node_add_attr moved the attribute array. */
static const kiln_node *last(const kiln_graph *g) {
  return &g->nodes.data[g->nodes.len - 1];
}

/* Checks st is an INVALID error whose message names node "n1" and contains `what`. */
static void check_bad(kiln_status st, const char *what) {
  CHECK(st != KILN_OK && kiln_status_code(st) == KILN_ERR_INVALID);
  if (st) {
    const char *m = kiln_status_message(st);
    if (!strstr(m, "'n1'") || !strstr(m, what)) {
      fprintf(stderr, "unexpected message (want node 'n1' and '%s'): %s\n", what, m);
      kiln_test_failed_checks++;
    }
  }
  kiln_status_free(st);
}

/* ---- the generated table holds ONNX's defaults ---- */

static void test_table_defaults_are_onnx(void) {
  float f = 0;
  int64_t i = 0;
  const char *s = NULL;
  CHECK(kiln_attr_default_f(KILN_OP_LeakyRelu, 16, "alpha", &f) && f == 0.01f);
  CHECK(kiln_attr_default_f(KILN_OP_Selu, 6, "alpha", &f) && f == 1.67326319217681884765625f);
  CHECK(kiln_attr_default_f(KILN_OP_Selu, 22, "gamma", &f) && f == 1.05070102214813232421875f);
  /* Selu-1 states rounder constants than Selu-6 */
  CHECK(kiln_attr_default_f(KILN_OP_Selu, 1, "alpha", &f) && f == 1.6732f);
  CHECK(kiln_attr_default_f(KILN_OP_HardSigmoid, 6, "alpha", &f) && f == 0.2f);
  CHECK(kiln_attr_default_f(KILN_OP_HardSigmoid, 6, "beta", &f) && f == 0.5f);
  CHECK(kiln_attr_default_f(KILN_OP_Elu, 6, "alpha", &f) && f == 1.0f);
  CHECK(kiln_attr_default_f(KILN_OP_Shrink, 9, "lambd", &f) && f == 0.5f);
  CHECK(kiln_attr_default_f(KILN_OP_Clip, 6, "min", &f) && f == -FLT_MAX);
  CHECK(!kiln_attr_default_f(KILN_OP_Clip, 1, "min", &f)); /* Clip-1 gives none */
  CHECK(kiln_attr_default_f(KILN_OP_LRN, 13, "alpha", &f) && f == 0.0001f);
  CHECK(kiln_attr_default_f(KILN_OP_BatchNormalization, 15, "epsilon", &f) && f == 1e-5f);
  CHECK(kiln_attr_default_f(KILN_OP_BatchNormalization, 15, "momentum", &f) && f == 0.9f);
  CHECK(kiln_attr_default_i(KILN_OP_Softmax, 11, "axis", &i) && i == 1);
  CHECK(kiln_attr_default_i(KILN_OP_Softmax, 13, "axis", &i) && i == -1);
  CHECK(kiln_attr_default_i(KILN_OP_ReduceSum, 13, "keepdims", &i) && i == 1);
  CHECK(kiln_attr_default_i(KILN_OP_Conv, 11, "group", &i) && i == 1);
  CHECK(kiln_attr_default_i(KILN_OP_Cast, 19, "saturate", &i) && i == 1);
  CHECK(!kiln_attr_default_i(KILN_OP_Cast, 13, "saturate", &i)); /* no such attribute */
  CHECK(!kiln_attr_default_i(KILN_OP_Cast, 13, "to", &i));       /* required: no default */
  CHECK(kiln_attr_default_s(KILN_OP_Gelu, 20, "approximate", &s) && !strcmp(s, "none"));
  CHECK(kiln_attr_default_s(KILN_OP_Conv, 11, "auto_pad", &s) && !strcmp(s, "NOTSET"));
  const int64_t *axes = NULL;
  int n = 0;
  CHECK(kiln_attr_default_ints(KILN_OP_MeanVarianceNormalization, 13, "axes", &axes, &n));
  CHECK(n == 3 && axes && axes[0] == 0 && axes[1] == 2 && axes[2] == 3);
  const char *const *acts = NULL;
  CHECK(kiln_attr_default_strings(KILN_OP_RNN, 14, "activations", &acts, &n));
  CHECK(n == 2 && acts && !strcmp(acts[0], "Tanh") && !strcmp(acts[1], "Tanh"));
  /* a default of another kind is not returned */
  CHECK(!kiln_attr_default_f(KILN_OP_Softmax, 13, "axis", &f));
}

static void test_schema_version_lookup(void) {
  CHECK(kiln_op_schema_at(KILN_OP_Softmax, 12)->since == 11);
  CHECK(kiln_op_schema_at(KILN_OP_Softmax, 13)->since == 13);
  CHECK(kiln_op_schema_at(KILN_OP_Softmax, 1)->since == 1);
  /* no opset imported: the newest version */
  const kiln_op_schema_version *v = kiln_op_schema_at(KILN_OP_Softmax, 0);
  CHECK(v && v[1].since == 0);
  CHECK(kiln_attr_schema_at(KILN_OP_ReduceMean, 13, "axes") != NULL);
  CHECK(kiln_attr_schema_at(KILN_OP_ReduceMean, 18, "axes") == NULL);
}

/* ---- decoders take the table's defaults ---- */

static void test_decoders_apply_defaults(void) {
  kiln_node *n;
  kiln_graph *g = one_node("LeakyRelu", 16, &n);
  kiln_attrs_ew ew;
  CHECK_OK(kiln_attrs_ew_decode(n, &ew));
  CHECK(ew.alpha == 0.01f);
  kiln_graph_free(g);

  g = one_node("Softmax", 11, &n);
  kiln_attrs_softmax sm;
  CHECK_OK(kiln_attrs_softmax_decode(n, 2, &sm));
  CHECK(sm.axis == 1 && sm.coerce_2d);
  kiln_graph_free(g);
  g = one_node("Softmax", 13, &n);
  CHECK_OK(kiln_attrs_softmax_decode(n, 3, &sm));
  CHECK(sm.axis == 2 && !sm.coerce_2d); /* -1 normalized */
  kiln_graph_free(g);

  g = one_node("Gelu", 20, &n);
  set_s(g, "approximate", "tanh");
  CHECK_OK(kiln_attrs_ew_decode(last(g), &ew));
  CHECK(ew.gelu == KILN_GELU_TANH && ew.gelu_c == 0.044715f);
  kiln_graph_free(g);

  g = one_node("ReduceMean", 13, &n);
  kiln_attrs_reduce rd;
  CHECK_OK(kiln_attrs_reduce_decode(n, &rd));
  CHECK(rd.keepdims && !rd.axes_input && rd.n_axes == -1);
  kiln_graph_free(g);
  g = one_node("ReduceMean", 18, &n);
  CHECK_OK(kiln_attrs_reduce_decode(n, &rd));
  CHECK(rd.keepdims && rd.axes_input && !rd.noop_with_empty_axes);
  kiln_graph_free(g);

  g = one_node("MeanVarianceNormalization", 13, &n);
  kiln_attrs_norm nm;
  CHECK_OK(kiln_attrs_norm_decode(n, &nm));
  CHECK(nm.n_axes == 3 && nm.axes[1] == 2);
  kiln_graph_free(g);

  g = one_node("AveragePool", 19, &n);
  kiln_attrs_window w;
  CHECK_OK(kiln_attrs_window_decode(n, &w));
  CHECK(w.auto_pad == KILN_AUTO_PAD_NOTSET && !w.ceil_mode && !w.count_include_pad);
  CHECK(w.n_strides == -1 && w.group == 1);
  kiln_graph_free(g);
}

/* A decoder field checked against the table at every version of the op's schema. */
typedef struct default_case {
  const char *op;
  const char *attr;
  /* decodes a node with no attributes and returns the field (as a double) */
  double (*get)(const kiln_node *n, kiln_status *st);
  const char *required; /* a required int attribute the node is given (1), or NULL */
} default_case;

#define EW_GETTER(field)                                                                           \
  static double ew_##field(const kiln_node *n, kiln_status *st) {                                  \
    kiln_attrs_ew a;                                                                               \
    *st = kiln_attrs_ew_decode(n, &a);                                                             \
    return a.field;                                                                                \
  }
EW_GETTER(alpha)
EW_GETTER(beta)
EW_GETTER(gamma)
EW_GETTER(bias)
EW_GETTER(lambd)
EW_GETTER(fmod)
EW_GETTER(detect_negative)
EW_GETTER(detect_positive)

#define NORM_GETTER(field)                                                                         \
  static double norm_##field(const kiln_node *n, kiln_status *st) {                                \
    kiln_attrs_norm a;                                                                             \
    *st = kiln_attrs_norm_decode(n, &a);                                                           \
    return (double)a.field;                                                                        \
  }
NORM_GETTER(epsilon)
NORM_GETTER(momentum)
NORM_GETTER(axis)
NORM_GETTER(p)
NORM_GETTER(stash_type)
NORM_GETTER(alpha)
NORM_GETTER(beta)
NORM_GETTER(bias)

static double sm_axis(const kiln_node *n, kiln_status *st) {
  kiln_attrs_softmax a;
  *st = kiln_attrs_softmax_decode(n, -1, &a);
  return (double)a.axis;
}
static double red_keepdims(const kiln_node *n, kiln_status *st) {
  kiln_attrs_reduce a;
  *st = kiln_attrs_reduce_decode(n, &a);
  return a.keepdims;
}
static double red_noop(const kiln_node *n, kiln_status *st) {
  kiln_attrs_reduce a;
  *st = kiln_attrs_reduce_decode(n, &a);
  return a.noop_with_empty_axes;
}
static double arg_axis(const kiln_node *n, kiln_status *st) {
  kiln_attrs_arg a;
  *st = kiln_attrs_arg_decode(n, -1, &a);
  return (double)a.axis;
}
static double arg_keepdims(const kiln_node *n, kiln_status *st) {
  kiln_attrs_arg a;
  *st = kiln_attrs_arg_decode(n, -1, &a);
  return a.keepdims;
}
static double arg_last(const kiln_node *n, kiln_status *st) {
  kiln_attrs_arg a;
  *st = kiln_attrs_arg_decode(n, -1, &a);
  return a.select_last_index;
}
static double gemm_alpha(const kiln_node *n, kiln_status *st) {
  kiln_attrs_gemm a;
  *st = kiln_attrs_gemm_decode(n, &a);
  return a.alpha;
}
static double gemm_beta(const kiln_node *n, kiln_status *st) {
  kiln_attrs_gemm a;
  *st = kiln_attrs_gemm_decode(n, &a);
  return a.beta;
}
static double gemm_ta(const kiln_node *n, kiln_status *st) {
  kiln_attrs_gemm a;
  *st = kiln_attrs_gemm_decode(n, &a);
  return a.trans_a;
}
static double win_group(const kiln_node *n, kiln_status *st) {
  kiln_attrs_window a;
  *st = kiln_attrs_window_decode(n, &a);
  return (double)a.group;
}
static double win_ceil(const kiln_node *n, kiln_status *st) {
  kiln_attrs_window a;
  *st = kiln_attrs_window_decode(n, &a);
  return a.ceil_mode;
}
static double win_cip(const kiln_node *n, kiln_status *st) {
  kiln_attrs_window a;
  *st = kiln_attrs_window_decode(n, &a);
  return a.count_include_pad;
}
static double win_p(const kiln_node *n, kiln_status *st) {
  kiln_attrs_window a;
  *st = kiln_attrs_window_decode(n, &a);
  return a.p;
}

#define DATA_GETTER(field)                                                                         \
  static double data_##field(const kiln_node *n, kiln_status *st) {                                \
    kiln_attrs_data a;                                                                             \
    *st = kiln_attrs_data_decode(n, &a);                                                           \
    return (double)a.field;                                                                        \
  }
DATA_GETTER(axis)
DATA_GETTER(batch_dims)
DATA_GETTER(upper)
DATA_GETTER(k)
DATA_GETTER(exclusive)
DATA_GETTER(reverse)
DATA_GETTER(largest)
DATA_GETTER(sorted)
DATA_GETTER(pad_value)
DATA_GETTER(allowzero)
DATA_GETTER(keepdims)
DATA_GETTER(new_axis)
DATA_GETTER(batch_axis)
DATA_GETTER(time_axis)

static double cast_saturate(const kiln_node *n, kiln_status *st) {
  kiln_attrs_cast a;
  *st = kiln_attrs_cast_decode(n, &a);
  return a.saturate;
}

static const default_case default_cases[] = {
    {"LeakyRelu", "alpha", ew_alpha, NULL},
    {"Elu", "alpha", ew_alpha, NULL},
    {"Celu", "alpha", ew_alpha, NULL},
    {"ThresholdedRelu", "alpha", ew_alpha, NULL},
    {"Swish", "alpha", ew_alpha, NULL},
    {"HardSigmoid", "alpha", ew_alpha, NULL},
    {"HardSigmoid", "beta", ew_beta, NULL},
    {"Selu", "alpha", ew_alpha, NULL},
    {"Selu", "gamma", ew_gamma, NULL},
    {"Shrink", "bias", ew_bias, NULL},
    {"Shrink", "lambd", ew_lambd, NULL},
    {"Mod", "fmod", ew_fmod, NULL},
    {"IsInf", "detect_negative", ew_detect_negative, NULL},
    {"IsInf", "detect_positive", ew_detect_positive, NULL},
    {"Softmax", "axis", sm_axis, NULL},
    {"LogSoftmax", "axis", sm_axis, NULL},
    {"Hardmax", "axis", sm_axis, NULL},
    {"ReduceSum", "keepdims", red_keepdims, NULL},
    {"ReduceMean", "keepdims", red_keepdims, NULL},
    {"ReduceMax", "keepdims", red_keepdims, NULL},
    {"ReduceLogSumExp", "keepdims", red_keepdims, NULL},
    {"ReduceSum", "noop_with_empty_axes", red_noop, NULL},
    {"ReduceL2", "noop_with_empty_axes", red_noop, NULL},
    {"ArgMax", "axis", arg_axis, NULL},
    {"ArgMax", "keepdims", arg_keepdims, NULL},
    {"ArgMin", "select_last_index", arg_last, NULL},
    {"BatchNormalization", "epsilon", norm_epsilon, NULL},
    {"BatchNormalization", "momentum", norm_momentum, NULL},
    {"InstanceNormalization", "epsilon", norm_epsilon, NULL},
    {"LayerNormalization", "epsilon", norm_epsilon, NULL},
    {"LayerNormalization", "axis", norm_axis, NULL},
    {"LayerNormalization", "stash_type", norm_stash_type, NULL},
    {"RMSNormalization", "axis", norm_axis, NULL},
    {"RMSNormalization", "epsilon", norm_epsilon, NULL},
    {"LpNormalization", "axis", norm_axis, NULL},
    {"LpNormalization", "p", norm_p, NULL},
    {"Gemm", "alpha", gemm_alpha, NULL},
    {"Gemm", "beta", gemm_beta, NULL},
    {"Gemm", "transA", gemm_ta, NULL},
    {"Conv", "group", win_group, NULL},
    {"ConvTranspose", "group", win_group, NULL},
    {"MaxPool", "ceil_mode", win_ceil, NULL},
    {"AveragePool", "count_include_pad", win_cip, NULL},
    {"LpPool", "p", win_p, NULL},
    {"LRN", "alpha", norm_alpha, "size"},
    {"LRN", "beta", norm_beta, "size"},
    {"LRN", "bias", norm_bias, "size"},
    {"GroupNormalization", "epsilon", norm_epsilon, "num_groups"},
    {"Gather", "axis", data_axis, NULL},
    {"GatherElements", "axis", data_axis, NULL},
    {"ScatterElements", "axis", data_axis, NULL},
    {"Split", "axis", data_axis, NULL},
    {"OneHot", "axis", data_axis, NULL},
    {"TopK", "axis", data_axis, NULL},
    {"TopK", "largest", data_largest, NULL},
    {"TopK", "sorted", data_sorted, NULL},
    {"Unique", "sorted", data_sorted, NULL},
    {"GatherND", "batch_dims", data_batch_dims, NULL},
    {"Trilu", "upper", data_upper, NULL},
    {"EyeLike", "k", data_k, NULL},
    {"CumSum", "exclusive", data_exclusive, NULL},
    {"CumProd", "reverse", data_reverse, NULL},
    {"Flatten", "axis", data_axis, NULL},
    {"SplitToSequence", "axis", data_axis, NULL},
    {"Pad", "value", data_pad_value, NULL},
    {"Reshape", "allowzero", data_allowzero, NULL},
    {"SplitToSequence", "keepdims", data_keepdims, NULL},
    {"ConcatFromSequence", "new_axis", data_new_axis, "axis"},
    {"ReverseSequence", "batch_axis", data_batch_axis, NULL},
    {"ReverseSequence", "time_axis", data_time_axis, NULL},
    {"Cast", "saturate", cast_saturate, NULL},
    {"QuantizeLinear", "saturate", cast_saturate, NULL},
};

/* The table's default of the attribute at the node's opset, as a double (false: none). */
static bool table_default(const kiln_node *n, const default_case *c, double *out) {
  const kiln_attr_schema *s = kiln_attr_schema_at(n->op, n->opset, c->attr);
  if (!s || !s->has_default) return false;
  *out = s->kind == KILN_ATTR_FLOAT ? (double)s->f : (double)s->i;
  return true;
}

/* Every decoder field above equals the generated table's default at every version of the
 * op's schema: a default written into a decoder (or a decoder reading the wrong attribute)
 * fails here as soon as it differs from ONNX at any version. */
static void test_decoder_defaults_match_table(void) {
  int checked = 0;
  for (size_t k = 0; k < sizeof default_cases / sizeof default_cases[0]; k++) {
    const default_case *c = &default_cases[k];
    kiln_op op = kiln_op_lookup("", c->op);
    CHECK(op != KILN_OP_UNKNOWN);
    for (const kiln_op_schema_version *v = kiln_op_attr_versions[op]; v && v->since; v++) {
      kiln_node *n;
      kiln_graph *g = one_node(c->op, v->since, &n);
      if (c->required) set_i(g, c->required, 1), n = &g->nodes.data[g->nodes.len - 1];
      double want, got;
      kiln_status st0 = KILN_OK;
      c->get(n, &st0); /* a node without optional attributes decodes at every version */
      if (st0) {
        fprintf(stderr, "%s-%d: %s\n", c->op, v->since, kiln_status_message(st0));
        kiln_test_failed_checks++;
      }
      kiln_status_free(st0);
      if (table_default(n, c, &want)) {
        kiln_status st = KILN_OK;
        got = c->get(n, &st);
        if (st || got != want) {
          fprintf(stderr, "%s-%d %s: decoder gives %.9g, the schema %.9g%s%s\n", c->op, v->since,
                  c->attr, got, want, st ? ": " : "", st ? kiln_status_message(st) : "");
          kiln_test_failed_checks++;
        }
        kiln_status_free(st);
        checked++;
      }
      kiln_graph_free(g);
    }
  }
  CHECK(checked > 100);
}

/* ---- every version of every decoded op decodes with only its required attributes ---- */

typedef kiln_status (*decode_fn)(const kiln_node *n);

static kiln_status dec_ew(const kiln_node *n) {
  kiln_attrs_ew a;
  return kiln_attrs_ew_decode(n, &a);
}
static kiln_status dec_softmax(const kiln_node *n) {
  kiln_attrs_softmax a;
  return kiln_attrs_softmax_decode(n, 2, &a);
}
static kiln_status dec_reduce(const kiln_node *n) {
  kiln_attrs_reduce a;
  return kiln_attrs_reduce_decode(n, &a);
}
static kiln_status dec_arg(const kiln_node *n) {
  kiln_attrs_arg a;
  return kiln_attrs_arg_decode(n, 2, &a);
}
static kiln_status dec_norm(const kiln_node *n) {
  kiln_attrs_norm a;
  return kiln_attrs_norm_decode(n, &a);
}
static kiln_status dec_gemm(const kiln_node *n) {
  kiln_attrs_gemm a;
  return kiln_attrs_gemm_decode(n, &a);
}
static kiln_status dec_window(const kiln_node *n) {
  kiln_attrs_window a;
  return kiln_attrs_window_decode(n, &a);
}
static kiln_status dec_data(const kiln_node *n) {
  kiln_attrs_data a;
  return kiln_attrs_data_decode(n, &a);
}
static kiln_status dec_cast(const kiln_node *n) {
  kiln_attrs_cast a;
  return kiln_attrs_cast_decode(n, &a);
}

static const struct {
  decode_fn fn;
  const char *ops; /* space-separated */
} sweep[] = {
    {dec_ew, "LeakyRelu Elu Celu ThresholdedRelu Swish HardSigmoid Selu Shrink HardSwish Gelu "
             "Clip Mod BitShift IsInf"},
    {dec_softmax, "Softmax LogSoftmax Hardmax"},
    {dec_reduce, "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 "
                 "ReduceLogSum ReduceLogSumExp ReduceSumSquare"},
    {dec_arg, "ArgMax ArgMin"},
    {dec_norm, "BatchNormalization InstanceNormalization LayerNormalization RMSNormalization "
               "GroupNormalization LpNormalization LRN MeanVarianceNormalization"},
    {dec_gemm, "Gemm"},
    {dec_window, "Conv ConvTranspose ConvInteger QLinearConv AveragePool MaxPool LpPool "
                 "GlobalLpPool MaxUnpool DeformConv MaxRoiPool"},
    {dec_data, "Concat Split Gather GatherElements GatherND ScatterElements ScatterND OneHot Pad "
               "DepthToSpace SpaceToDepth Trilu EyeLike CumSum CumProd TopK Unique Compress "
               "Flatten Reshape SplitToSequence ConcatFromSequence ReverseSequence"},
    {dec_cast, "Cast CastLike QuantizeLinear"},
};

/* Gives the node (g's last) each attribute its schema version requires, with a valid value. */
static void set_required(kiln_graph *g, const kiln_op_schema_version *v) {
  for (const kiln_attr_schema *a = v->attrs; a->name; a++) {
    if (!a->required) continue;
    if (a->kind == KILN_ATTR_INT) set_i(g, a->name, 1);
    else if (a->kind == KILN_ATTR_FLOAT) set_f(g, a->name, 1.0f);
    else if (a->kind == KILN_ATTR_STRING)
      set_s(g, a->name, !strcmp(a->name, "direction") ? "LEFT" : "FLOAT");
    else if (a->kind == KILN_ATTR_INTS) set_ints(g, a->name, 2, (const int64_t[]){1, 1});
  }
}

static void test_every_version_decodes(void) {
  int checked = 0;
  for (size_t k = 0; k < sizeof sweep / sizeof sweep[0]; k++) {
    char ops[512];
    snprintf(ops, sizeof ops, "%s", sweep[k].ops);
    for (char *save = NULL, *op = strtok_r(ops, " ", &save); op; op = strtok_r(NULL, " ", &save)) {
      kiln_op o = kiln_op_lookup("", op);
      CHECK(o != KILN_OP_UNKNOWN);
      for (const kiln_op_schema_version *v = kiln_op_attr_versions[o]; v && v->since; v++) {
        kiln_node *n;
        kiln_graph *g = one_node(op, v->since, &n);
        set_required(g, v);
        kiln_status st = sweep[k].fn(last(g));
        if (st) {
          fprintf(stderr, "%s-%d: %s\n", op, v->since, kiln_status_message(st));
          kiln_test_failed_checks++;
        }
        kiln_status_free(st);
        kiln_graph_free(g);
        checked++;
      }
    }
  }
  CHECK(checked > 150);
}

/* ---- bad values are errors naming the node ---- */

static void test_wrong_kind_names_node(void) {
  kiln_node *n;
  kiln_graph *g = one_node("LeakyRelu", 16, &n);
  set_i(g, "alpha", 1);
  kiln_attrs_ew ew;
  check_bad(kiln_attrs_ew_decode(last(g), &ew), "alpha");
  kiln_graph_free(g);

  g = one_node("Softmax", 13, &n);
  set_f(g, "axis", 1.0f);
  kiln_attrs_softmax sm;
  check_bad(kiln_attrs_softmax_decode(last(g), 2, &sm), "axis");
  kiln_graph_free(g);
}

static void test_out_of_range_names_node(void) {
  kiln_node *n;
  kiln_graph *g = one_node("Softmax", 13, &n);
  set_i(g, "axis", 9);
  kiln_attrs_softmax sm;
  check_bad(kiln_attrs_softmax_decode(last(g), 2, &sm), "out of range");
  CHECK_OK(kiln_attrs_softmax_decode(last(g), -1, &sm)); /* rank unknown: kept as written */
  CHECK(sm.axis == 9);
  kiln_graph_free(g);

  g = one_node("ArgMax", 13, &n);
  kiln_attrs_arg aa;
  check_bad(kiln_attrs_arg_decode(n, 0, &aa), "out of range"); /* no axis of a scalar */
  kiln_graph_free(g);

  g = one_node("ReduceSum", 13, &n);
  set_i(g, "keepdims", 2);
  kiln_attrs_reduce rd;
  check_bad(kiln_attrs_reduce_decode(last(g), &rd), "keepdims");
  kiln_graph_free(g);

  g = one_node("Gelu", 20, &n);
  set_s(g, "approximate", "fast");
  kiln_attrs_ew ew;
  check_bad(kiln_attrs_ew_decode(last(g), &ew), "approximate");
  kiln_graph_free(g);

  g = one_node("Conv", 11, &n);
  set_i(g, "group", 0);
  kiln_attrs_window w;
  check_bad(kiln_attrs_window_decode(last(g), &w), "group");
  kiln_graph_free(g);

  g = one_node("Conv", 11, &n);
  set_ints(g, "strides", 2, (const int64_t[]){1, 0});
  check_bad(kiln_attrs_window_decode(last(g), &w), "strides");
  kiln_graph_free(g);

  g = one_node("MaxPool", 12, &n);
  set_ints(g, "pads", 3, (const int64_t[]){0, 0, 1});
  check_bad(kiln_attrs_window_decode(last(g), &w), "pads");
  kiln_graph_free(g);

  g = one_node("MaxPool", 12, &n); /* a window wholly in the padding */
  set_ints(g, "kernel_shape", 2, (const int64_t[]){2, 2});
  set_ints(g, "pads", 4, (const int64_t[]){1, 2, 1, 1});
  check_bad(kiln_attrs_window_decode(last(g), &w), "smaller than the kernel");
  kiln_graph_free(g);

  g = one_node("AveragePool", 19, &n);
  set_s(g, "auto_pad", "SAME");
  check_bad(kiln_attrs_window_decode(last(g), &w), "auto_pad");
  kiln_graph_free(g);

  g = one_node("LpNormalization", 22, &n);
  set_i(g, "p", 3);
  kiln_attrs_norm nm;
  check_bad(kiln_attrs_norm_decode(last(g), &nm), "'p'");
  kiln_graph_free(g);

  g = one_node("LRN", 13, &n);
  set_i(g, "size", 0);
  check_bad(kiln_attrs_norm_decode(last(g), &nm), "size");
  kiln_graph_free(g);

  kiln_attrs_data da;
  g = one_node("GatherND", 13, &n);
  set_i(g, "batch_dims", -1);
  check_bad(kiln_attrs_data_decode(last(g), &da), "batch_dims");
  kiln_graph_free(g);

  g = one_node("ScatterElements", 18, &n);
  set_s(g, "reduction", "avg");
  check_bad(kiln_attrs_data_decode(last(g), &da), "reduction");
  kiln_graph_free(g);

  g = one_node("Pad", 19, &n);
  set_s(g, "mode", "mirror");
  check_bad(kiln_attrs_data_decode(last(g), &da), "mode");
  kiln_graph_free(g);

  g = one_node("DepthToSpace", 13, &n);
  set_i(g, "blocksize", 0);
  check_bad(kiln_attrs_data_decode(last(g), &da), "blocksize");
  kiln_graph_free(g);

  g = one_node("Cast", 24, &n);
  set_i(g, "to", KILN_F16);
  set_s(g, "round_mode", "zero");
  kiln_attrs_cast ca;
  check_bad(kiln_attrs_cast_decode(last(g), &ca), "round_mode");
  kiln_graph_free(g);

  g = one_node("LRN", 13, &n); /* size is required: no default to fall back on */
  check_bad(kiln_attrs_norm_decode(n, &nm), "size");
  kiln_graph_free(g);
}

/* Values given on the node win over the defaults. */
static void test_node_values_win(void) {
  kiln_node *n;
  kiln_graph *g = one_node("HardSigmoid", 6, &n);
  set_f(g, "alpha", 0.25f);
  kiln_attrs_ew ew;
  CHECK_OK(kiln_attrs_ew_decode(last(g), &ew));
  CHECK(ew.alpha == 0.25f && ew.beta == 0.5f);
  kiln_graph_free(g);

  g = one_node("AveragePool", 19, &n);
  set_s(g, "auto_pad", "");
  set_i(g, "count_include_pad", 1);
  kiln_attrs_window w;
  CHECK_OK(kiln_attrs_window_decode(last(g), &w));
  CHECK(w.auto_pad == KILN_AUTO_PAD_NOTSET && w.count_include_pad);
  kiln_graph_free(g);

  const char *mode = NULL; /* a string default that changes between versions */
  g = one_node("GridSample", 16, &n);
  CHECK_OK(kiln_attr_s(n, "mode", &mode));
  CHECK(mode && !strcmp(mode, "bilinear"));
  kiln_graph_free(g);
  g = one_node("GridSample", 20, &n);
  CHECK_OK(kiln_attr_s(n, "mode", &mode));
  CHECK(mode && !strcmp(mode, "linear"));
  kiln_graph_free(g);

  g = one_node("Concat", 1, &n); /* Concat-1's documented default axis */
  kiln_attrs_data da;
  CHECK_OK(kiln_attrs_data_decode(n, &da));
  CHECK(da.has_axis && da.axis == 1);
  kiln_graph_free(g);
  g = one_node("Compress", 11, &n); /* no axis: none */
  CHECK_OK(kiln_attrs_data_decode(n, &da));
  CHECK(!da.has_axis);
  kiln_graph_free(g);
  g = one_node("TopK", 10, &n); /* before opset 11 TopK takes the largest, sorted */
  CHECK_OK(kiln_attrs_data_decode(n, &da));
  CHECK(da.largest && da.sorted && da.axis == -1);
  kiln_graph_free(g);
}

TEST_MAIN(T(test_table_defaults_are_onnx), T(test_schema_version_lookup),
          T(test_decoders_apply_defaults), T(test_decoder_defaults_match_table),
          T(test_every_version_decodes), T(test_wrong_kind_names_node),
          T(test_out_of_range_names_node), T(test_node_values_win))
