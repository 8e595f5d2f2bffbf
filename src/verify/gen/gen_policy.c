/* Precision policies drawn for generated graphs: the lowering's other compute and
 * accumulate types (src/lower/precision.h), the C emitter's half-precision arithmetic
 * (render_half.c), and the error bounds of a policy (src/verify/bound/bound_prec.c), reached
 * by a campaign instead of by the unit tests alone.
 *
 * Only rules whose results the bounds can judge for any input the generator draws: a value
 * stored in f16 or bf16 computes in its own type (ONNX rounds each node's result to it
 * anyway, so nothing overflows that the storage would not) or in f64; one stored in f32
 * computes in f32 or f64 and may accumulate its reductions in f32. A narrower compute type
 * than the storage (f32 values in f16) overflows where the model does not: that judgment
 * belongs to the precision modes' own verification, not to a campaign looking for bugs. */
#include "gen_internal.h"

static kiln_dtype pick(gen_rng *r, const kiln_dtype *from, int n) {
  return from[gen_int(r, 0, n - 1)];
}

/* A rule for (c, storage) or false for the default. */
static bool draw_rule(gen_rng *r, kiln_prec_class c, kiln_dtype st, kiln_dtype *ct,
                      kiln_dtype *at) {
  if (!gen_chance(r, 0.5)) return false;
  bool narrow = st == KILN_F16 || st == KILN_BF16;
  if (narrow) {
    *ct = gen_chance(r, 0.75) ? st : KILN_F64;
    const kiln_dtype red[] = {*ct, KILN_F32, KILN_F64}, mma[] = {KILN_F32, KILN_F64};
    if (c == KILN_PREC_REDUCTION) *at = *ct == KILN_F64 ? KILN_F64 : pick(r, red, 3);
    else if (c == KILN_PREC_CONTRACTION) *at = *ct == KILN_F64 ? KILN_F64 : pick(r, mma, 2);
    else *at = *ct;
    return true;
  }
  /* f32: f64 arithmetic, or f32 running sums where the default carries them in f64 */
  *ct = gen_chance(r, 0.5) ? KILN_F64 : KILN_F32;
  *at = c == KILN_PREC_ELEMENTWISE || c == KILN_PREC_DATA || *ct == KILN_F64 ? *ct : KILN_F32;
  return true;
}

bool kiln_gen_policy(const kiln_graph *g, uint64_t seed, kiln_precision_policy *p) {
  kiln_precision_default(p);
  gen_rng r;
  gen_rng_seed(&r, seed ^ 0x5eed0f9011c1e5ull);
  if (!gen_chance(&r, 0.25)) return false;
  bool held[KILN_DTYPE_COUNT] = {0};
  for (int v = 0; g && v < g->values.len; v++) {
    const kiln_type *t = &g->values.data[v].type;
    if (t->kind == KILN_TYPE_TENSOR && t->dtype > 0 && t->dtype < KILN_DTYPE_COUNT)
      held[t->dtype] = true;
  }
  const kiln_dtype floats[] = {KILN_F16, KILN_BF16, KILN_F32};
  bool any = false;
  for (int c = 0; c < KILN_PREC_CLASS_COUNT; c++)
    for (int i = 0; i < 3; i++) {
      kiln_dtype ct, at;
      if (!draw_rule(&r, (kiln_prec_class)c, floats[i], &ct, &at) || !held[floats[i]]) continue;
      kiln_status st = kiln_precision_set(p, (kiln_prec_class)c, floats[i], ct, at);
      if (st) { /* a rule the policy refuses is the generator's mistake: left at the default */
        kiln_status_free(st);
        continue;
      }
      any = true;
    }
  if (!any || kiln_precision_is_default(p)) return kiln_precision_default(p), false;
  return true;
}
