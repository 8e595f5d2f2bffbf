/* Generator builder of control flow: If, whose two branches read values of the outer graph.
 * The runtime runs If as a reference kernel that interprets a branch, so the memory plan must
 * keep every outer value a branch reads alive until the If has run, and a pass that folds a
 * constant condition must pick the right branch. */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

/* One branch of an If (its attribute text, appended to b): a subgraph named name that returns
 * one value of a's type computed from the outer values a and o (same type as a, -1: none) by
 * one of: a itself, a unary op of a, a + o, or a unary op of a + o. */
static void branch(gen *G, kiln_strbuf *b, const char *name, int a, int o) {
  const gen_val *va = gen_v(G, a);
  kiln_dtype dt = va->type.dtype;
  bool sgn = dt != KILN_BOOL && kiln_dtype_class_of(dt) != KILN_CLASS_UINT;
  char ty[160], t1[16], t2[16];
  kiln_type_str(&va->type, ty, sizeof ty);
  snprintf(t1, sizeof t1, "v%d", G->next_name++);
  snprintf(t2, sizeof t2, "v%d", G->next_name++);
  int form = gen_int(&G->rng, 0, o >= 0 ? 3 : 1);
  const char *un = dt == KILN_BOOL ? "Not" : sgn && gen_chance(&G->rng, 0.5) ? "Neg" : "Abs";
  /* a branch returns an outer value as it is only when its type is written where it is
   * defined (an input or a constant): a node's type is known only after inference, and the
   * text parser checks the branch's declared output before that */
  bool typed = va->is_input || va->is_const;
  const char *ret = form == 0 && typed ? va->name : form == 2 ? t1 : t2;
  kiln_strbuf_printf(b, "%s=graph @%s() -> (%%%s: %s) {\n    outer %%%s", name, name, ret, ty,
                     va->name);
  if (o >= 0 && form >= 2) kiln_strbuf_printf(b, ", %%%s", gen_v(G, o)->name);
  kiln_strbuf_printf(b, "\n");
  /* each node typed: the text parser checks a subgraph's outputs against its declaration */
  if (form == 1) kiln_strbuf_printf(b, "    %%%s = %s(%%%s) : %s\n", t2, un, va->name, ty);
  if (form == 0 && !typed)
    kiln_strbuf_printf(b, "    %%%s = Identity(%%%s) : %s\n", t2, va->name, ty);
  if (form >= 2) {
    const char *bin = dt == KILN_BOOL ? "Or" : "Add";
    kiln_strbuf_printf(b, "    %%%s = %s(%%%s, %%%s) : %s\n", t1, bin, va->name, gen_v(G, o)->name,
                       ty);
  }
  if (form == 3) kiln_strbuf_printf(b, "    %%%s = %s(%%%s) : %s\n", t2, un, t1, ty);
  kiln_strbuf_printf(b, "    return %%%s\n  }", ret);
}

/* Half the time, a value computed by a node before the latest one (kernels run between it
 * and the If, so its storage must outlive them), or one of unknown extents (NonZero's: on the
 * heap); -1 when there is none. */
static int older_kernel_value(gen *G) {
  if (!gen_chance(&G->rng, 0.5)) return -1;
  int cand[256], n = 0, dyn[64], nd = 0;
  for (int i = 0; i + 1 < G->vals.len && n < 256; i++) {
    const gen_val *v = &G->vals.data[i];
    if (v->is_input || v->is_const || v->ranged || v->type.kind != KILN_TYPE_TENSOR ||
        v->type.rank < 0 || !gen_dt_bit(v->type.dtype))
      continue;
    if (v->dyn && nd < 64) dyn[nd++] = i;
    else if (!v->dyn && kiln_type_is_static(&v->type)) cand[n++] = i;
  }
  if (nd > 0 && gen_chance(&G->rng, 0.4)) return dyn[gen_int(&G->rng, 0, nd - 1)];
  return n > 0 ? cand[gen_int(&G->rng, 0, n - 1)] : -1;
}

/* If(cond) with a condition that is a graph input, a constant (a pass may pick its branch)
 * or a Not of a boolean input, and two branches of branch(); now and then an elementwise op
 * of the value the branches read after it. */
/* The unary elementwise op of dtype dt that never leaves the domain: Not, Abs or Neg. */
static const char *tame_unary(kiln_dtype dt) {
  return dt == KILN_BOOL ? "Not" : kiln_dtype_class_of(dt) == KILN_CLASS_UINT ? "Abs" : "Neg";
}

bool gen_b_if(gen *G, int op) {
  (void)op;
  /* a third of the time the branches read a fresh elementwise value that an elementwise op
   * after the If reads too: fusion puts both in one group whose only reader outside it is
   * the branch (a value read by a subgraph is a use: the group must store it) */
  bool fused = gen_chance(&G->rng, 1.0 / 3);
  int a = fused ? -1 : older_kernel_value(G);
  if (a < 0) {
    gen_want w = {DT_ALL, 0, 4, DOM_ANY, true, false, 0, false, false};
    a = gen_pick(G, &w);
  }
  if (a < 0) return false;
  if (fused && !gen_v(G, a)->dyn) {
    kiln_dtype dt = gen_v(G, a)->type.dtype;
    a = gen_emit(G, tame_unary(dt), 1, &a, 1, "", DOM_ANY, gen_mag(G, a));
    if (a < 0) return false;
  } else fused = false;
  bool dyn = gen_v(G, a)->dyn;
  kiln_type at = gen_v(G, a)->type; /* a copy: picking may grow (move) the values */
  int o = !dyn && gen_chance(&G->rng, 0.6) ? gen_pick_type(G, &at, DOM_ANY) : -1;
  if (o == a) o = -1;
  kiln_type bt = kiln_type_tensor(KILN_BOOL, 0, NULL);
  int c, form = gen_int(&G->rng, 0, 5);
  if (form == 0) c = gen_new_const(G, &bt, DOM_ANY);
  else if (form == 1) {
    int x = gen_new_input(G, &bt, DOM_ANY);
    c = gen_emit(G, "Not", 1, &x, 1, "", DOM_ANY, 1);
  } else c = gen_new_input(G, &bt, DOM_ANY);
  kiln_strbuf text = {0};
  branch(G, &text, "else_branch", a, o);
  kiln_strbuf_printf(&text, ", ");
  branch(G, &text, "then_branch", a, o);
  double mag = gen_mag(G, a) + (o >= 0 ? gen_mag(G, o) : 0);
  G->vals.data[a].sub_read = true; /* so that it is not made a graph output as a sink is */
  if (o >= 0) G->vals.data[o].sub_read = true;
  int y = gen_emit(G, "If", 1, &c, 1, text.data, DOM_ANY, mag);
  G->vals.data[y].dyn = dyn;
  kiln_strbuf_free(&text);
  /* now and then an elementwise op of a after the If: fusion may put a inside a group whose
   * one reader outside it is the branch, and the group must still store a */
  int u = -1;
  if (!dyn && (fused || gen_chance(&G->rng, 0.3))) {
    if (kiln_dtype_is_float(at.dtype) && at.rank >= 1 && gen_chance(&G->rng, 0.4)) {
      /* Max(a, t), t a Softmax computed after the If (no elementwise group takes it): a's
       * group then runs after t, so after the If, unless the If's read of a orders them */
      int s = gen_new_input(G, &at, DOM_ANY);
      int t = gen_emit(G, "Softmax", 1, &s, 1, "axis=-1", DOM_POS, 1);
      int in[2] = {a, t};
      /* Max: simplify would fold an Add of Neg(x) into a Sub of x, and a leave the group */
      if (t >= 0) u = gen_emit(G, "Max", 2, in, 1, "", DOM_ANY, gen_mag(G, a) + 1);
    } else u = gen_emit(G, tame_unary(at.dtype), 1, &a, 1, "", DOM_ANY, gen_mag(G, a));
  }
  /* now and then the If's result combined elementwise with a (or with the op of a above): a
   * group that held a and that node would both feed the If and read it, so the If's reads of a
   * are edges that fusion and the group order must follow */
  if (!dyn && y >= 0 && gen_chance(&G->rng, 0.35)) {
    int m = u >= 0 && gen_chance(&G->rng, 0.5) ? u : a, in[2] = {m, y};
    if (gen_chance(&G->rng, 0.5)) in[0] = y, in[1] = m;
    gen_emit(G, at.dtype == KILN_BOOL ? "Or" : "Add", 2, in, 1, "", DOM_ANY, 2 * mag + 1);
  }
  return true;
}
