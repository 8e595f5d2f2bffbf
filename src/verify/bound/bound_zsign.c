/* Which zeros of a value have a determined sign (kiln_vref.zloose).
 *
 * -0 and +0 compare equal, but 1/x, Atan-like uses and the ops that copy or compare signs
 * tell them apart, and so does ONNX: Neg(+0) is -0, x + (+0) is +0 when x is -0. A
 * comparison may hold an implementation to the reference's sign of a zero only where
 * that sign is certain. Element i of a value is loose (1, else 0) when:
 *  - an implementation may give it either sign: a nonzero reference within the tolerance
 *    of the comparison (KILN_VERIFY_SAFETY times its bound, at least the dtype's floor) of
 *    0, or a zero whose bound exceeds a few subnormals (the underflow terms of the bounds
 *    add up along a chain: a larger bound lets the implementation's value be a number of
 *    either sign), or
 *  - its op may choose the sign of a zero (zero_sign_class: Max of -0 and +0,
 *    a sum that starts at +0, a transcendental function built from other operations) and
 *    the element is 0, or
 *  - its op is one whose zeros' sign IEEE arithmetic or copying determines and an element
 *    it is computed from is loose: the same element of an elementwise op's operands (with
 *    broadcasting), or the element a data movement op copies (the op is run on the
 *    looseness of its data inputs, as the MOVE rule runs it on their errors). */
#include <math.h>
#include <stdlib.h>

#include "bound_internal.h"

/* How op's zeros get their sign: ZS_CHOSEN, the op may choose it (Max, Min, Relu and Clip of
 * -0 and +0, reductions and contractions whose sum starts at +0, Pow, Sign, transcendental
 * functions built from other operations); ZS_ELEMENTWISE, IEEE arithmetic on the same
 * element of the operands determines it (Neg, Abs, Add, Sub, Mul, Div, Sum, Reciprocal,
 * Sqrt, the roundings, float casts, LeakyRelu and PRelu: x or a product); ZS_MOVED, the op
 * copies it (data movement, selection, constants). */
typedef enum zs_class { ZS_CHOSEN, ZS_ELEMENTWISE, ZS_MOVED } zs_class;

static zs_class zero_sign_class(kiln_op op) {
  switch (op) {
  case KILN_OP_Neg:
  case KILN_OP_Abs:
  case KILN_OP_Add:
  case KILN_OP_Sub:
  case KILN_OP_Mul:
  case KILN_OP_Div:
  case KILN_OP_Sum:
  case KILN_OP_Reciprocal:
  case KILN_OP_Sqrt:
  case KILN_OP_Floor:
  case KILN_OP_Ceil:
  case KILN_OP_Round:
  case KILN_OP_Cast:
  case KILN_OP_CastLike:
  case KILN_OP_LeakyRelu:
  case KILN_OP_PRelu: return ZS_ELEMENTWISE;
  case KILN_OP_Identity:
  case KILN_OP_Reshape:
  case KILN_OP_Transpose:
  case KILN_OP_Squeeze:
  case KILN_OP_Unsqueeze:
  case KILN_OP_Flatten:
  case KILN_OP_Slice:
  case KILN_OP_Gather:
  case KILN_OP_GatherElements:
  case KILN_OP_GatherND:
  case KILN_OP_Concat:
  case KILN_OP_Split:
  case KILN_OP_Expand:
  case KILN_OP_Tile:
  case KILN_OP_Pad:
  case KILN_OP_DepthToSpace:
  case KILN_OP_SpaceToDepth:
  case KILN_OP_ReverseSequence:
  case KILN_OP_Compress:
  case KILN_OP_Dropout:
  case KILN_OP_Where:
  case KILN_OP_Constant:
  case KILN_OP_ConstantOfShape:
  case KILN_OP_EyeLike: return ZS_MOVED;
  default: return ZS_CHOSEN;
  }
}

static const kiln_tensor *loose_of(const bnd_node *b, int i) {
  int id = b->n->inputs[i];
  return id >= 0 && kiln_bnd_is_float_val(b->in[i]) ? b->r->zloose[id] : NULL;
}

static bool is_data(const bnd_opinfo *info, int i) {
  return info->mask ? (info->mask >> (i & 31)) & 1 : i == 0;
}

/* The op run on the looseness of its data inputs (zeros where an input has none) into *out
 * (NULL: no data input is loose); false when the op could not run so. */
static bool moved(bnd_node *b, int k, kiln_tensor **out) {
  *out = NULL;
  const bnd_opinfo *info = kiln_bnd_info(b->n->op);
  int ni = b->n->n_inputs;
  bool any = false;
  for (int i = 0; i < ni; i++) any |= is_data(info, i) && loose_of(b, i);
  if (!any) return true;
  kiln_tensor **saved = b->ein;
  b->ein = kiln_xcalloc((size_t)ni + 1, sizeof *b->ein);
  bnd_subst *how = kiln_xcalloc((size_t)ni + 1, sizeof *how);
  for (int i = 0; i < ni; i++) {
    how[i] = is_data(info, i) ? BND_ERR : BND_SAME;
    if (is_data(info, i)) b->ein[i] = (kiln_tensor *)loose_of(b, i);
  }
  kiln_val **outs = NULL;
  kiln_status st = kiln_bnd_eval_how(b, KILN_OP_UNKNOWN, how, &outs);
  free(how);
  free(b->ein);
  b->ein = saved;
  if (st) {
    kiln_status_free(st);
    return false;
  }
  *out = kiln_bnd_take_t(b, outs, k);
  kiln_bnd_free_outs(b, outs);
  return *out != NULL;
}

/* OR of the operands' looseness, broadcast to y. */
static void from_operands(const bnd_node *b, const kiln_tensor *y, double *l) {
  for (int i = 0; i < b->n->n_inputs; i++) {
    const kiln_tensor *li = loose_of(b, i);
    if (!li || !b->in[i]->t || li->numel != b->in[i]->t->numel) continue;
    int64_t *idx = kiln_bnd_bcast_index(b->in[i]->t, y);
    const double *ld = li->data;
    for (int64_t e = 0; e < y->numel; e++)
      if (ld[idx[e]] != 0) l[e] = 1;
    free(idx);
  }
}

kiln_tensor *kiln_bnd_zero_loose(bnd_node *b, int k) {
  kiln_tensor *y = kiln_bnd_out_t(b, b->out, k);
  if (!y) return NULL;
  const kiln_tensor *e = b->eout[k] && b->eout[k]->numel == y->numel ? b->eout[k] : NULL;
  zs_class cls = zero_sign_class(b->n->op);
  bool kept = cls != ZS_CHOSEN;
  kiln_tensor *l = NULL;
  if (cls == ZS_MOVED) {                /* data movement: the op run on its inputs' masks */
    if (!moved(b, k, &l)) kept = false; /* cannot tell: every zero loose */
    if (l && l->numel != y->numel) kiln_tensor_free(l), l = NULL, kept = false;
  }
  if (!l) l = kiln_bnd_zeros_like(y);
  double *ld = l->data;
  if (cls == ZS_ELEMENTWISE) from_operands(b, y, ld);
  const double *yd = y->data, *ed = e ? e->data : NULL;
  kiln_dtype dt = kiln_bnd_out_dtype(b->r, b->n, k);
  double atol = 0, rtol = 0, slack = 64 * kiln_bnd_tiny(dt);
  if (kiln_dtype_is_float(dt)) kiln_bnd_floor(dt, &atol, &rtol);
  int64_t n_loose = 0;
  for (int64_t i = 0; i < y->numel; i++) {
    double err = ed ? ed[i] : 0, a = fabs(yd[i]);
    if (yd[i] == 0 ? !kept || err > slack : a <= fmax(KILN_VERIFY_SAFETY * err, atol + rtol * a))
      ld[i] = 1;
    if (ld[i] != 0) ld[i] = 1, n_loose++;
  }
  if (!n_loose) kiln_tensor_free(l), l = NULL;
  return l;
}
