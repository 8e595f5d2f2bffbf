/* The default lookup of the generated schema table (op_attrs.h) and the typed attribute
 * decoders (attr_decode.h). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attr_decode.h"

/* ---- the schema table ---- */

const kiln_op_schema_version *kiln_op_schema_at(kiln_op op, int64_t opset) {
  if ((unsigned)op >= KILN_OP_COUNT) return NULL;
  const kiln_op_schema_version *v = kiln_op_attr_versions[op], *use = NULL;
  if (!v || !v->since) return NULL;
  for (; v->since; v++)
    if (opset <= 0 || v->since <= opset) use = v;
  return use ? use : kiln_op_attr_versions[op];
}

const kiln_attr_schema *kiln_attr_schema_at(kiln_op op, int64_t opset, const char *name) {
  const kiln_op_schema_version *v = kiln_op_schema_at(op, opset);
  if (!v) return NULL;
  for (const kiln_attr_schema *s = v->attrs; s->name; s++)
    if (strcmp(s->name, name) == 0) return s;
  return NULL;
}

/* The attribute's schema when it gives a default of kind k. */
static const kiln_attr_schema *dflt_of(kiln_op op, int64_t opset, const char *name,
                                       kiln_attr_kind k) {
  const kiln_attr_schema *s = kiln_attr_schema_at(op, opset, name);
  return s && s->has_default && s->kind == (int)k ? s : NULL;
}

bool kiln_attr_default_f(kiln_op op, int64_t opset, const char *name, float *out) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_FLOAT);
  if (s) *out = s->f;
  return s != NULL;
}

bool kiln_attr_default_i(kiln_op op, int64_t opset, const char *name, int64_t *out) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_INT);
  if (s) *out = s->i;
  return s != NULL;
}

bool kiln_attr_default_s(kiln_op op, int64_t opset, const char *name, const char **out) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_STRING);
  if (s) *out = s->s;
  return s != NULL;
}

bool kiln_attr_default_floats(kiln_op op, int64_t opset, const char *name, const float **out,
                              int *out_n) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_FLOATS);
  if (s) *out = s->floats, *out_n = s->n;
  return s != NULL;
}

bool kiln_attr_default_ints(kiln_op op, int64_t opset, const char *name, const int64_t **out,
                            int *out_n) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_INTS);
  if (s) *out = s->ints, *out_n = s->n;
  return s != NULL;
}

bool kiln_attr_default_strings(kiln_op op, int64_t opset, const char *name, const char *const **out,
                               int *out_n) {
  const kiln_attr_schema *s = dflt_of(op, opset, name, KILN_ATTR_STRINGS);
  if (s) *out = s->strings, *out_n = s->n;
  return s != NULL;
}

/* ---- single attributes ---- */

static kiln_status missing(const kiln_node *n, const char *name) {
  char lb[160];
  return kiln_invalid("%s: attribute '%s' is missing and %s-%lld gives it no default",
                      kiln_node_label(n, lb, sizeof lb), name, n->op_type, (long long)n->opset);
}

static kiln_status bad_value(const kiln_node *n, const char *name, const char *why) {
  char lb[160];
  return kiln_invalid("%s: attribute '%s' %s", kiln_node_label(n, lb, sizeof lb), name, why);
}

kiln_status kiln_attr_f(const kiln_node *n, const char *name, float *out) {
  if (kiln_node_attr(n, name)) return kiln_node_float(n, name, 0, out);
  if (!kiln_attr_default_f(n->op, n->opset, name, out)) return missing(n, name);
  return KILN_OK;
}

kiln_status kiln_attr_i(const kiln_node *n, const char *name, int64_t *out) {
  if (kiln_node_attr(n, name)) return kiln_node_int(n, name, 0, out);
  if (!kiln_attr_default_i(n->op, n->opset, name, out)) return missing(n, name);
  return KILN_OK;
}

kiln_status kiln_attr_s(const kiln_node *n, const char *name, const char **out) {
  if (kiln_node_attr(n, name)) return kiln_node_string(n, name, NULL, out);
  if (!kiln_attr_default_s(n->op, n->opset, name, out)) return missing(n, name);
  return KILN_OK;
}

kiln_status kiln_attr_ints(const kiln_node *n, const char *name, const int64_t **out, int *out_n) {
  KILN_TRY(kiln_node_ints(n, name, out, out_n));
  if (*out_n < 0) kiln_attr_default_ints(n->op, n->opset, name, out, out_n);
  return KILN_OK;
}

kiln_status kiln_attr_choice(const kiln_node *n, const char *name, const char *const *choices,
                             int *out) {
  const char *v;
  KILN_TRY(kiln_attr_s(n, name, &v));
  for (int k = 0; choices[k]; k++)
    if (strcmp(v, choices[k]) == 0) return *out = k, KILN_OK;
  char lb[160];
  return kiln_invalid("%s: attribute %s='%s' is not valid", kiln_node_label(n, lb, sizeof lb), name,
                      v);
}

/* A 0/1 flag. */
static kiln_status attr_flag(const kiln_node *n, const char *name, bool *out) {
  int64_t v;
  KILN_TRY(kiln_attr_i(n, name, &v));
  if (v != 0 && v != 1) return bad_value(n, name, "must be 0 or 1");
  *out = v != 0;
  return KILN_OK;
}

/* An int attribute of at least lo. */
static kiln_status attr_i_min(const kiln_node *n, const char *name, int64_t lo, int64_t *out) {
  KILN_TRY(kiln_attr_i(n, name, out));
  if (*out < lo) {
    char why[64];
    snprintf(why, sizeof why, "must be at least %lld, not %lld", (long long)lo, (long long)*out);
    return bad_value(n, name, why);
  }
  return KILN_OK;
}

/* Whether the node's schema version has the attribute. */
static bool has(const kiln_node *n, const char *name) {
  return kiln_attr_schema_at(n->op, n->opset, name) != NULL;
}

/* ---- elementwise ---- */

/* HardSwish's ONNX function body: HardSigmoid<alpha = 1/6 (a float attribute), beta = 0.5>. */
static void hardswish_body(kiln_attrs_ew *a) {
  a->alpha = (float)(1.0 / 6.0);
  a->beta = 0.5f;
}

/* Gelu's tanh form in its ONNX function body: float constants 0.044715 and 2/pi (whose square
 * root the body takes in the value's type). */
static kiln_status gelu_attrs(const kiln_node *n, kiln_attrs_ew *a) {
  int mode;
  KILN_TRY(kiln_attr_choice(n, "approximate", (const char *[]){"none", "tanh", NULL}, &mode));
  a->gelu = (kiln_gelu_mode)mode;
  a->gelu_c = 0.044715f;
  a->gelu_k = (float)(2 / M_PI);
  return KILN_OK;
}

/* Clip before opset 11: float bounds; Clip-1 gives no default (absent: unbounded). */
static kiln_status clip_attrs(const kiln_node *n, kiln_attrs_ew *a) {
  a->min = -FLT_MAX;
  a->max = FLT_MAX;
  if (n->opset >= 11) return KILN_OK;
  if (kiln_node_attr(n, "min") || kiln_attr_default_f(n->op, n->opset, "min", &a->min))
    KILN_TRY(kiln_attr_f(n, "min", &a->min));
  if (kiln_node_attr(n, "max") || kiln_attr_default_f(n->op, n->opset, "max", &a->max))
    KILN_TRY(kiln_attr_f(n, "max", &a->max));
  return KILN_OK;
}

kiln_status kiln_attrs_ew_decode(const kiln_node *n, kiln_attrs_ew *a) {
  memset(a, 0, sizeof *a);
  switch (n->op) {
  case KILN_OP_LeakyRelu:
  case KILN_OP_Elu:
  case KILN_OP_Celu:
  case KILN_OP_ThresholdedRelu:
  case KILN_OP_Swish: return kiln_attr_f(n, "alpha", &a->alpha);
  case KILN_OP_HardSigmoid:
    KILN_TRY(kiln_attr_f(n, "alpha", &a->alpha));
    return kiln_attr_f(n, "beta", &a->beta);
  case KILN_OP_Selu:
    KILN_TRY(kiln_attr_f(n, "alpha", &a->alpha));
    return kiln_attr_f(n, "gamma", &a->gamma);
  case KILN_OP_Shrink:
    KILN_TRY(kiln_attr_f(n, "bias", &a->bias));
    return kiln_attr_f(n, "lambd", &a->lambd);
  case KILN_OP_HardSwish: hardswish_body(a); return KILN_OK;
  case KILN_OP_Gelu: return gelu_attrs(n, a);
  case KILN_OP_Clip: return clip_attrs(n, a);
  case KILN_OP_Mod: return attr_flag(n, "fmod", &a->fmod);
  case KILN_OP_BitShift: {
    int dir;
    KILN_TRY(kiln_attr_choice(n, "direction", (const char *[]){"LEFT", "RIGHT", NULL}, &dir));
    a->shift_right = dir == 1;
    return KILN_OK;
  }
  case KILN_OP_IsInf:
    KILN_TRY(attr_flag(n, "detect_negative", &a->detect_negative));
    return attr_flag(n, "detect_positive", &a->detect_positive);
  default: return KILN_OK;
  }
}

/* ---- axes ---- */

/* Checks axis against rank (when rank >= 0) and normalizes it; scalar_ok: a rank-0 input takes
 * axis 0 or -1 (as one of rank 1). */
static kiln_status axis_in(const kiln_node *n, const char *name, int rank, bool scalar_ok,
                           int64_t *axis) {
  if (rank < 0) return KILN_OK;
  int span = rank == 0 && scalar_ok ? 1 : rank;
  if (*axis < -span || *axis >= span) {
    char why[96];
    snprintf(why, sizeof why, "= %lld is out of range for an input of rank %d", (long long)*axis,
             rank);
    return bad_value(n, name, why);
  }
  if (*axis < 0) *axis += span;
  return KILN_OK;
}

kiln_status kiln_attrs_softmax_decode(const kiln_node *n, int rank, kiln_attrs_softmax *a) {
  memset(a, 0, sizeof *a);
  const kiln_op_schema_version *v = kiln_op_schema_at(n->op, n->opset);
  a->coerce_2d = v && v->since < 13; /* Softmax-1 and -11 see the input as 2-D */
  KILN_TRY(kiln_attr_i(n, "axis", &a->axis));
  return axis_in(n, "axis", rank, true, &a->axis);
}

kiln_status kiln_attrs_arg_decode(const kiln_node *n, int rank, kiln_attrs_arg *a) {
  memset(a, 0, sizeof *a);
  KILN_TRY(kiln_attr_i(n, "axis", &a->axis));
  KILN_TRY(attr_flag(n, "keepdims", &a->keepdims));
  if (has(n, "select_last_index"))
    KILN_TRY(attr_flag(n, "select_last_index", &a->select_last_index));
  return axis_in(n, "axis", rank, false, &a->axis);
}

/* ---- reductions ---- */

kiln_status kiln_attrs_reduce_decode(const kiln_node *n, kiln_attrs_reduce *a) {
  memset(a, 0, sizeof *a);
  KILN_TRY(attr_flag(n, "keepdims", &a->keepdims));
  a->n_axes = -1;
  a->axes_input = !has(n, "axes");
  if (has(n, "noop_with_empty_axes"))
    KILN_TRY(attr_flag(n, "noop_with_empty_axes", &a->noop_with_empty_axes));
  if (!a->axes_input) KILN_TRY(kiln_attr_ints(n, "axes", &a->axes, &a->n_axes));
  return KILN_OK;
}

/* ---- normalizations ---- */

static kiln_status lrn_attrs(const kiln_node *n, kiln_attrs_norm *a) {
  KILN_TRY(kiln_attr_f(n, "alpha", &a->alpha));
  KILN_TRY(kiln_attr_f(n, "beta", &a->beta));
  KILN_TRY(kiln_attr_f(n, "bias", &a->bias));
  return attr_i_min(n, "size", 1, &a->size);
}

kiln_status kiln_attrs_norm_decode(const kiln_node *n, kiln_attrs_norm *a) {
  memset(a, 0, sizeof *a);
  if (n->op == KILN_OP_LRN) return lrn_attrs(n, a);
  if (has(n, "epsilon")) {
    KILN_TRY(kiln_attr_f(n, "epsilon", &a->epsilon));
    if (!(a->epsilon >= 0)) return bad_value(n, "epsilon", "must not be negative");
  }
  if (has(n, "momentum")) KILN_TRY(kiln_attr_f(n, "momentum", &a->momentum));
  if (has(n, "training_mode")) KILN_TRY(attr_flag(n, "training_mode", &a->training_mode));
  if (has(n, "is_test")) KILN_TRY(attr_flag(n, "is_test", &a->is_test));
  if (has(n, "axis")) KILN_TRY(kiln_attr_i(n, "axis", &a->axis));
  if (has(n, "stash_type")) KILN_TRY(kiln_attr_i(n, "stash_type", &a->stash_type));
  a->n_axes = -1;
  if (has(n, "axes")) KILN_TRY(kiln_attr_ints(n, "axes", &a->axes, &a->n_axes));
  if (n->op == KILN_OP_GroupNormalization) KILN_TRY(attr_i_min(n, "num_groups", 1, &a->num_groups));
  if (n->op == KILN_OP_LpNormalization) {
    KILN_TRY(kiln_attr_i(n, "p", &a->p));
    if (a->p != 1 && a->p != 2) return bad_value(n, "p", "must be 1 or 2");
  }
  return KILN_OK;
}

/* ---- Gemm ---- */

kiln_status kiln_attrs_gemm_decode(const kiln_node *n, kiln_attrs_gemm *a) {
  memset(a, 0, sizeof *a);
  KILN_TRY(kiln_attr_f(n, "alpha", &a->alpha));
  KILN_TRY(kiln_attr_f(n, "beta", &a->beta));
  KILN_TRY(attr_flag(n, "transA", &a->trans_a));
  return attr_flag(n, "transB", &a->trans_b);
}

/* ---- windows ---- */

/* An ints attribute whose values are all at least lo (n = -1 when absent). */
static kiln_status ints_min(const kiln_node *n, const char *name, int64_t lo, const int64_t **v,
                            int *len) {
  *v = NULL;
  *len = -1;
  if (!has(n, name)) return KILN_OK;
  KILN_TRY(kiln_attr_ints(n, name, v, len));
  for (int i = 0; i < *len; i++)
    if ((*v)[i] < lo) {
      char why[96];
      snprintf(why, sizeof why, "has %lld at position %d (must be at least %lld)",
               (long long)(*v)[i], i, (long long)lo);
      return bad_value(n, name, why);
    }
  return KILN_OK;
}

/* Pooling: every pad smaller than the kernel (a window wholly in the padding has no input
 * element; ONNX Runtime rejects it too). */
static kiln_status pool_pads(const kiln_node *n, const kiln_attrs_window *a) {
  bool pool = n->op == KILN_OP_MaxPool || n->op == KILN_OP_AveragePool || n->op == KILN_OP_LpPool;
  if (!pool || a->n_kernel_shape <= 0 || a->n_pads != 2 * a->n_kernel_shape) return KILN_OK;
  for (int i = 0; i < a->n_pads; i++) {
    int64_t k = a->kernel_shape[i % a->n_kernel_shape];
    if (a->pads[i] >= k) {
      char why[128];
      snprintf(why, sizeof why, "has %lld at position %d, not smaller than the kernel's %lld",
               (long long)a->pads[i], i, (long long)k);
      return bad_value(n, "pads", why);
    }
  }
  return KILN_OK;
}

static kiln_status window_lists(const kiln_node *n, kiln_attrs_window *a) {
  KILN_TRY(ints_min(n, "kernel_shape", 1, &a->kernel_shape, &a->n_kernel_shape));
  KILN_TRY(ints_min(n, "strides", 1, &a->strides, &a->n_strides));
  KILN_TRY(ints_min(n, "dilations", 1, &a->dilations, &a->n_dilations));
  KILN_TRY(ints_min(n, "pads", 0, &a->pads, &a->n_pads));
  if (a->n_pads > 0 && a->n_pads % 2) return bad_value(n, "pads", "must have an even count");
  KILN_TRY(pool_pads(n, a));
  KILN_TRY(ints_min(n, "output_padding", 0, &a->output_padding, &a->n_output_padding));
  return ints_min(n, "output_shape", 0, &a->output_shape, &a->n_output_shape);
}

/* p of LpPool, GlobalLpPool: a float attribute in opset 1, an int later; > 0. */
static kiln_status pool_p(const kiln_node *n, double *p) {
  const kiln_attr_schema *s = kiln_attr_schema_at(n->op, n->opset, "p");
  if (!s) return KILN_OK;
  if (s->kind == KILN_ATTR_FLOAT) {
    float f;
    KILN_TRY(kiln_attr_f(n, "p", &f));
    *p = f;
  } else {
    int64_t i;
    KILN_TRY(kiln_attr_i(n, "p", &i));
    *p = (double)i;
  }
  if (!(*p > 0)) return bad_value(n, "p", "must be positive");
  return KILN_OK;
}

kiln_status kiln_attrs_window_decode(const kiln_node *n, kiln_attrs_window *a) {
  memset(a, 0, sizeof *a);
  KILN_TRY(window_lists(n, a));
  if (has(n, "auto_pad")) {
    int ap; /* "" (written by some exporters) reads as NOTSET */
    KILN_TRY(kiln_attr_choice(
        n, "auto_pad", (const char *[]){"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "", NULL},
        &ap));
    a->auto_pad = ap == KILN_AUTO_PAD_COUNT ? KILN_AUTO_PAD_NOTSET : (kiln_auto_pad)ap;
  }
  a->group = a->offset_group = 1; /* ops without groups: one group */
  if (has(n, "group")) KILN_TRY(attr_i_min(n, "group", 1, &a->group));
  if (has(n, "offset_group")) KILN_TRY(attr_i_min(n, "offset_group", 1, &a->offset_group));
  if (has(n, "ceil_mode")) KILN_TRY(attr_flag(n, "ceil_mode", &a->ceil_mode));
  if (has(n, "count_include_pad"))
    KILN_TRY(attr_flag(n, "count_include_pad", &a->count_include_pad));
  if (has(n, "storage_order")) {
    bool so;
    KILN_TRY(attr_flag(n, "storage_order", &so));
    a->storage_order = so;
  }
  return pool_p(n, &a->p);
}

/* ---- data movement and indexing ---- */

static const char *const reduction_names[] = {"none", "add", "mul", "max", "min", NULL};
static const char *const pad_mode_names[] = {"constant", "reflect", "edge", "wrap", NULL};

const char *kiln_scatter_reduction_name(kiln_scatter_reduction r) {
  return (unsigned)r < KILN_SCATTER_REDUCTION_COUNT ? reduction_names[r] : "?";
}

const char *kiln_pad_mode_name(kiln_pad_mode m) {
  return (unsigned)m < KILN_PAD_MODE_COUNT ? pad_mode_names[m] : "?";
}

static kiln_status data_axis(const kiln_node *n, kiln_attrs_data *a) {
  int64_t dflt;
  if (!has(n, "axis")) return KILN_OK;
  if (kiln_node_attr(n, "axis") || kiln_attr_default_i(n->op, n->opset, "axis", &dflt)) {
    a->has_axis = true;
    return kiln_attr_i(n, "axis", &a->axis);
  }
  if (n->op == KILN_OP_Concat) a->has_axis = true, a->axis = 1; /* Concat-1's documented default */
  return KILN_OK;
}

static kiln_status data_choices(const kiln_node *n, kiln_attrs_data *a) {
  int v;
  if (has(n, "reduction")) {
    KILN_TRY(kiln_attr_choice(n, "reduction", reduction_names, &v));
    a->reduction = (kiln_scatter_reduction)v;
  }
  if (n->op == KILN_OP_Pad && has(n, "mode")) {
    KILN_TRY(kiln_attr_choice(n, "mode", pad_mode_names, &v));
    a->pad_mode = (kiln_pad_mode)v;
  }
  if (n->op == KILN_OP_DepthToSpace && has(n, "mode")) {
    KILN_TRY(kiln_attr_choice(n, "mode", (const char *[]){"DCR", "CRD", NULL}, &v));
    a->crd = v == 1;
  }
  return KILN_OK;
}

static kiln_status data_more(const kiln_node *n, kiln_attrs_data *a) {
  if (n->op == KILN_OP_Pad && has(n, "value")) KILN_TRY(kiln_attr_f(n, "value", &a->pad_value));
  if (has(n, "allowzero")) KILN_TRY(attr_flag(n, "allowzero", &a->allowzero));
  if (has(n, "keepdims")) KILN_TRY(attr_flag(n, "keepdims", &a->keepdims));
  if (has(n, "new_axis")) KILN_TRY(attr_flag(n, "new_axis", &a->new_axis));
  if (has(n, "batch_axis")) KILN_TRY(kiln_attr_i(n, "batch_axis", &a->batch_axis));
  if (has(n, "time_axis")) KILN_TRY(kiln_attr_i(n, "time_axis", &a->time_axis));
  return KILN_OK;
}

kiln_status kiln_attrs_data_decode(const kiln_node *n, kiln_attrs_data *a) {
  memset(a, 0, sizeof *a);
  a->largest = a->sorted = true; /* TopK before opset 11: always the largest, sorted */
  KILN_TRY(data_axis(n, a));
  KILN_TRY(data_choices(n, a));
  if (has(n, "batch_dims")) KILN_TRY(attr_i_min(n, "batch_dims", 0, &a->batch_dims));
  if (has(n, "blocksize")) KILN_TRY(attr_i_min(n, "blocksize", 1, &a->blocksize));
  if (has(n, "upper")) KILN_TRY(attr_flag(n, "upper", &a->upper));
  if (has(n, "k") && n->op == KILN_OP_EyeLike) KILN_TRY(kiln_attr_i(n, "k", &a->k));
  if (has(n, "exclusive")) KILN_TRY(attr_flag(n, "exclusive", &a->exclusive));
  if (has(n, "reverse")) KILN_TRY(attr_flag(n, "reverse", &a->reverse));
  if (has(n, "largest")) KILN_TRY(attr_flag(n, "largest", &a->largest));
  if (has(n, "sorted")) KILN_TRY(attr_flag(n, "sorted", &a->sorted));
  return data_more(n, a);
}

/* ---- conversions ---- */

kiln_status kiln_attrs_cast_decode(const kiln_node *n, kiln_attrs_cast *a) {
  memset(a, 0, sizeof *a);
  a->saturate = true; /* versions without the attribute saturate */
  if (has(n, "saturate")) KILN_TRY(attr_flag(n, "saturate", &a->saturate));
  if (has(n, "round_mode")) {
    int v;
    KILN_TRY(
        kiln_attr_choice(n, "round_mode", (const char *[]){"up", "down", "nearest", NULL}, &v));
    a->round_mode = (kiln_round_mode)v;
  }
  return KILN_OK;
}
