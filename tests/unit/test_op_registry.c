/* The op registry is complete: every op of ops.def has what every layer needs, or says
 * explicitly why not. For each op:
 *   - a descriptor row (ops/op_desc.c) whose facts agree with each other;
 *   - a reference kernel (eval) and a shape/type inference (src/ops, its family's file);
 *   - a version: the opset that introduced it (op_versions.c);
 *   - a bound rule, or an explicit perturbation row with its reason (bound_rules.c);
 *   - a generator entry, or an explicit exclusion with its reason (gen_ops.c);
 *   - a lowering, or an explicit reason to fall back to the reference kernel.
 * Adding an op to ops.def without the rest fails here, naming the op and what it lacks. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/op_attrs.h"
#include "ops/op_desc.h"
#include "ops/ops.h"
#include "verify/bound/bound_internal.h"
#include "verify/gen/gen_internal.h"

static int missing;

static void lacks(kiln_op op, const char *what) {
  fprintf(stderr, "op %s (family %s) lacks %s\n", kiln_op_name(op), kiln_op_family(op), what);
  missing++;
}

/* ---- lowering ----
 * Whether op has a lowering, or else why it falls back (the reason, NULL when it has one).
 * This is the one place to point at the lowering table indexed by op once there is one;
 * until then the probe is: an elementwise compute definition (the descriptor's .ew, which
 * lower_ew.c reads) or a lowering in src/lower that names the op, and the reasons below
 * for the rest. */
static char *lower_src;

static void load_lower_src(void) {
  static const char *const files[] = {
      "src/lower/lower.c",       "src/lower/lower_conv.c",   "src/lower/lower_data.c",
      "src/lower/lower_index.c", "src/lower/lower_matmul.c", "src/lower/lower_misc.c",
      "src/lower/lower_norm.c",  "src/lower/lower_pool.c",   "src/lower/lower_reduce.c"};
  /* the source folder: this file's path less tests/unit/..., else the working folder */
  char root[1024] = "";
  const char *me = __FILE__, *tail = strstr(me, "tests/unit/test_op_registry.c");
  if (tail && (size_t)(tail - me) < sizeof root) memcpy(root, me, (size_t)(tail - me));
  size_t len = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s%s", root, files[i]);
    FILE *f = fopen(path, "rb");
    if (!f) f = fopen(files[i], "rb");
    if (!f) {
      fprintf(stderr, "cannot read %s (run from the source folder)\n", files[i]);
      continue;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
      lower_src = realloc(lower_src, len + n + 1);
      memcpy(lower_src + len, buf, n);
      len += n;
    }
    fclose(f);
  }
  if (lower_src) lower_src[len] = 0;
}

static bool lowering_names(kiln_op op) {
  char key[96];
  snprintf(key, sizeof key, "KILN_OP_%s", kiln_op_name(op));
  size_t k = strlen(key);
  for (const char *p = lower_src; p && (p = strstr(p, key)); p += k) {
    char c = p[k];
    if (!(c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return true;
  }
  return false;
}

#define SEQ "sequences and optionals run in the interpreter"
#define SUB "subgraph bodies run in the interpreter"
#define RND "random: the reference generator is the definition"
#define STR "strings have no tile-IR type"
#define TODO(what) "no compute definition yet (" what ")"
static const char *const fallback_why[KILN_OP_COUNT] = {
    [KILN_OP_AffineGrid] = TODO("grid generation"),
    [KILN_OP_Attention] = TODO("attention"),
    [KILN_OP_Bernoulli] = RND,
    [KILN_OP_BitCast] = TODO("reinterpretation of bits"),
    [KILN_OP_BlackmanWindow] = TODO("window"),
    [KILN_OP_CausalConvWithState] = TODO("state-space recurrence"),
    [KILN_OP_CenterCropPad] = TODO("crop and pad"),
    [KILN_OP_Col2Im] = TODO("col2im"),
    [KILN_OP_Compress] = "output shape depends on the data",
    [KILN_OP_ConcatFromSequence] = SEQ,
    [KILN_OP_ConvInteger] = TODO("integer convolution"),
    [KILN_OP_ConvTranspose] = TODO("transposed convolution"),
    [KILN_OP_DFT] = TODO("transform"),
    [KILN_OP_DeformConv] = TODO("deformable convolution"),
    [KILN_OP_DequantizeLinear] = TODO("quantization"),
    [KILN_OP_Det] = TODO("determinant"),
    [KILN_OP_DynamicQuantizeLinear] = TODO("quantization"),
    [KILN_OP_Einsum] = TODO("einsum"),
    [KILN_OP_GRU] = TODO("recurrence"),
    [KILN_OP_GlobalLpPool] = TODO("Lp pooling"),
    [KILN_OP_GridSample] = TODO("grid sampling"),
    [KILN_OP_HammingWindow] = TODO("window"),
    [KILN_OP_HannWindow] = TODO("window"),
    [KILN_OP_If] = SUB,
    [KILN_OP_ImageDecoder] = "unsupported: needs image codecs",
    [KILN_OP_LSTM] = TODO("recurrence"),
    [KILN_OP_LinearAttention] = TODO("state-space recurrence"),
    [KILN_OP_Loop] = SUB,
    [KILN_OP_LpPool] = TODO("Lp pooling"),
    [KILN_OP_MatMulInteger] = TODO("integer matmul"),
    [KILN_OP_MaxRoiPool] = TODO("RoI pooling"),
    [KILN_OP_MaxUnpool] = TODO("unpooling"),
    [KILN_OP_MeanVarianceNormalization] = TODO("normalization"),
    [KILN_OP_MelWeightMatrix] = TODO("mel matrix"),
    [KILN_OP_Multinomial] = RND,
    [KILN_OP_NegativeLogLikelihoodLoss] = TODO("loss"),
    [KILN_OP_NonMaxSuppression] = "output shape depends on the data",
    [KILN_OP_NonZero] = "output shape depends on the data",
    [KILN_OP_Optional] = SEQ,
    [KILN_OP_OptionalGetElement] = SEQ,
    [KILN_OP_OptionalHasElement] = SEQ,
    [KILN_OP_QLinearConv] = TODO("quantized convolution"),
    [KILN_OP_QLinearMatMul] = TODO("quantized matmul"),
    [KILN_OP_QuantizeLinear] = TODO("quantization"),
    [KILN_OP_RNN] = TODO("recurrence"),
    [KILN_OP_RandomNormal] = RND,
    [KILN_OP_RandomNormalLike] = RND,
    [KILN_OP_RandomUniform] = RND,
    [KILN_OP_RandomUniformLike] = RND,
    [KILN_OP_Range] = TODO("range"),
    [KILN_OP_RegexFullMatch] = STR,
    [KILN_OP_Resize] = TODO("resize"),
    [KILN_OP_ReverseSequence] = TODO("reverse sequence"),
    [KILN_OP_RoiAlign] = TODO("RoI align"),
    [KILN_OP_RotaryEmbedding] = TODO("rotary embedding"),
    [KILN_OP_STFT] = TODO("transform"),
    [KILN_OP_Scan] = SUB,
    [KILN_OP_SequenceAt] = SEQ,
    [KILN_OP_SequenceConstruct] = SEQ,
    [KILN_OP_SequenceEmpty] = SEQ,
    [KILN_OP_SequenceErase] = SEQ,
    [KILN_OP_SequenceInsert] = SEQ,
    [KILN_OP_SequenceLength] = SEQ,
    [KILN_OP_SequenceMap] = SUB,
    [KILN_OP_SoftmaxCrossEntropyLoss] = TODO("loss"),
    [KILN_OP_SplitToSequence] = SEQ,
    [KILN_OP_StringConcat] = STR,
    [KILN_OP_StringNormalizer] = STR,
    [KILN_OP_StringSplit] = STR,
    [KILN_OP_TensorScatter] = TODO("tensor scatter"),
    [KILN_OP_TfIdfVectorizer] = STR,
    [KILN_OP_TopK] = TODO("top-k"),
    [KILN_OP_Unique] = "output shape depends on the data",
    [KILN_OP_Upsample] = TODO("upsample"),
};

/* NULL: op has a lowering; else the reason it falls back ("" when there is none). */
static const char *lowering_of(kiln_op op) {
  if (kiln_op_desc_of(op)->ew != KILN_EWD_NONE || lowering_names(op)) return NULL;
  return fallback_why[op] ? fallback_why[op] : "";
}

/* ---- the walk ---- */
static bool schema_has_graph_attr(kiln_op op) {
  for (const kiln_op_schema_version *v = kiln_op_attr_versions[op]; v && v->since; v++)
    for (const kiln_attr_schema *a = v->attrs; a && a->name; a++)
      if (a->kind == KILN_ATTR_GRAPH || a->kind == KILN_ATTR_GRAPHS) return true;
  return false;
}

/* The descriptor's facts agree with each other and with the schema. */
static void check_desc(kiln_op op) {
  const kiln_op_desc *d = kiln_op_desc_of(op);
  if (d->cls <= KILN_OPC_NONE || d->cls >= KILN_OPC_COUNT) lacks(op, "a descriptor row");
  if (d->ew != KILN_EWD_NONE && d->cls != KILN_OPC_ELEMENTWISE)
    lacks(op, "class elementwise (it has an elementwise dtype class)");
  if (d->compute_bits && d->ew != KILN_EWD_FLOAT)
    lacks(op, "float elementwise dtypes (it has a compute width)");
  if (!!(d->flags & KILN_OPF_SUBGRAPH) != schema_has_graph_attr(op))
    lacks(op, "a subgraph flag that matches its schema's graph attributes");
  if (!strcmp(kiln_op_family(op), "misc")) lacks(op, "a family that says what it is");
}

static void check_op(kiln_op op) {
  const kiln_op_impl *impl = kiln_op_get(op);
  check_desc(op);
  if (!impl->eval) lacks(op, "a reference kernel (eval)");
  if (!impl->infer) lacks(op, "a shape inference (infer)");
  if (kiln_op_since(op) < 1) lacks(op, "a version (the opset that introduced it)");
  if (!kiln_bnd_row(op)) lacks(op, "a bound rule or a perturbation row (bound_rules.c)");
  int gi = kiln_gen_op_index(op);
  if (gi < 0 && !kiln_gen_op_excluded(op))
    lacks(op, "a generator entry or an exclusion with a reason (gen_ops.c)");
  if (gi >= 0 && kiln_gen_ops[gi].since < kiln_op_since(op))
    lacks(op, "a generator entry drawn only from the opset that introduced it");
  const char *why = lowering_of(op);
  if (why && !*why) lacks(op, "a lowering or a fallback reason");
}

static void test_every_op_is_complete(void) {
  load_lower_src();
  CHECK(lower_src != NULL);
  missing = 0;
  for (int i = 1; i < KILN_OP_COUNT; i++) check_op((kiln_op)i);
  CHECK(missing == 0);
  free(lower_src);
  lower_src = NULL;
}

/* A reason to be excluded is only for what is not there: an op the generator draws (or
 * lowers) needs none, and a stale exclusion is an error. */
static void test_no_stale_exclusions(void) {
  load_lower_src();
  missing = 0;
  for (int i = 1; i < KILN_OP_COUNT; i++) {
    kiln_op op = (kiln_op)i;
    if (kiln_gen_op_index(op) >= 0 && kiln_gen_op_excluded(op)) lacks(op, "no stale gen exclusion");
    if (fallback_why[op] && !lowering_of(op)) lacks(op, "no stale lowering fallback reason");
    const bnd_opinfo *b = kiln_bnd_row(op);
    if (b && b->rule != BND_PERTURB && b->perturb_why) lacks(op, "no reason beside its rule");
  }
  CHECK(missing == 0);
  free(lower_src);
  lower_src = NULL;
}

/* The facts the layers used to keep in their own lists, as the descriptor now gives them. */
static void test_descriptor_facts(void) {
  CHECK(kiln_op_has(KILN_OP_RandomNormal, KILN_OPF_RANDOM));
  CHECK(kiln_op_has(KILN_OP_Dropout, KILN_OPF_RANDOM));
  CHECK(!kiln_op_has(KILN_OP_Add, KILN_OPF_RANDOM));
  CHECK(kiln_op_has(KILN_OP_Add, KILN_OPF_COMMUTATIVE));
  CHECK(!kiln_op_has(KILN_OP_Sub, KILN_OPF_COMMUTATIVE));
  CHECK(kiln_op_has(KILN_OP_Loop, KILN_OPF_SUBGRAPH));
  CHECK(kiln_op_desc_of(KILN_OP_MatMul)->cls == KILN_OPC_CONTRACTION);
  CHECK(kiln_op_desc_of(KILN_OP_ReduceSum)->cls == KILN_OPC_REDUCTION);
  CHECK(kiln_op_desc_of(KILN_OP_Transpose)->cls == KILN_OPC_DATA);
  CHECK(kiln_op_desc_of(KILN_OP_Gelu)->compute_bits == 64);
  CHECK(kiln_op_desc_of(KILN_OP_Exp)->compute_bits == 0);
  CHECK(kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Neg)->ew, KILN_I32));
  CHECK(!kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Neg)->ew, KILN_U8));
  CHECK(!kiln_ew_dtypes_take(kiln_op_desc_of(KILN_OP_Exp)->ew, KILN_I64));
  CHECK(kiln_op_desc_of(KILN_OP_UNKNOWN)->cls == KILN_OPC_NONE);
  CHECK(kiln_op_desc_of((kiln_op)-1)->cls == KILN_OPC_NONE);
}

TEST_MAIN(T(test_every_op_is_complete), T(test_no_stale_exclusions), T(test_descriptor_facts))
