/* The generator's op table and the builders of elementwise ops, reductions, Softmax-like
 * rows, scans, casts and the pass patterns (duplicates for cse, x*1, MatMul+bias ...).
 * A builder picks operands (gen_pick*), writes the node (gen_emit) and returns false when it
 * cannot build the op here; inference then accepts or rejects the draw (gen.c). */
#include <stdio.h>
#include <string.h>

#include "gen_internal.h"

#define ATTR(...) (snprintf(a, sizeof a, __VA_ARGS__), a)

static const char *op_name(int op) {
  return kiln_gen_ops[op].name;
}

static gen_want want(int dts, int rmin, int rmax, gen_dom dom) {
  gen_want w = {dts, rmin, rmax, dom, false, false, 0, false, false};
  return w;
}

/* ---- unary elementwise ---- */
typedef enum mag_kind { MG_SAME, MG_ONE, MG_EXP, MG_PI, MG_UNK, MG_ROUND } mag_kind;
typedef struct un_spec {
  const char *name;
  int dts;
  gen_dom in, out;
  mag_kind mag;
} un_spec;

/* Keyed by op: the dtypes it is drawn with, the domain its input must lie in, the domain and
 * magnitude of its output. */
#define UN(nm, ...) [KILN_OP_##nm] = {.name = #nm, __VA_ARGS__}
static const un_spec unary[KILN_OP_COUNT] = {
    UN(Abs, .dts = DT_NUM, .in = DOM_ANY, .out = DOM_NONNEG, .mag = MG_SAME),
    UN(Neg, .dts = DT_FLOAT | DT_INT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Sign, .dts = DT_NUM, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(Relu, .dts = DT_FLOAT | DT_INT, .in = DOM_ANY, .out = DOM_NONNEG, .mag = MG_SAME),
    UN(Acos, .dts = DT_FLOAT, .in = DOM_UNIT, .out = DOM_POS, .mag = MG_PI),
    UN(Acosh, .dts = DT_FLOAT, .in = DOM_GE1, .out = DOM_ANY, .mag = MG_PI),
    UN(Asin, .dts = DT_FLOAT, .in = DOM_UNIT, .out = DOM_ANY, .mag = MG_PI),
    UN(Asinh, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_PI),
    UN(Atan, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_PI),
    UN(Atanh, .dts = DT_FLOAT, .in = DOM_UNIT, .out = DOM_ANY, .mag = MG_PI),
    UN(Ceil, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ROUND),
    UN(Floor, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ROUND),
    UN(Round, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ROUND),
    UN(Cos, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(Sin, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(Tan, .dts = DT_FLOAT, .in = DOM_UNIT, .out = DOM_ANY, .mag = MG_PI),
    UN(Cosh, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_GE1, .mag = MG_EXP),
    UN(Sinh, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_EXP),
    UN(Tanh, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_UNIT, .mag = MG_ONE),
    UN(Erf, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_UNIT, .mag = MG_ONE),
    UN(Exp, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_POS, .mag = MG_EXP),
    UN(Log, .dts = DT_FLOAT, .in = DOM_POS, .out = DOM_ANY, .mag = MG_PI),
    UN(Sqrt, .dts = DT_FLOAT, .in = DOM_NONNEG, .out = DOM_NONNEG, .mag = MG_SAME),
    UN(Reciprocal, .dts = DT_FLOAT, .in = DOM_NONZERO, .out = DOM_ANY, .mag = MG_PI),
    UN(Sigmoid, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_POS, .mag = MG_ONE),
    UN(Softplus, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_POS, .mag = MG_SAME),
    UN(Softsign, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_UNIT, .mag = MG_ONE),
    UN(Mish, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(HardSwish, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(HardSigmoid, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_NONNEG, .mag = MG_ONE),
    UN(Gelu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Elu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Celu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Selu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(LeakyRelu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(ThresholdedRelu, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Swish, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(Shrink, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
    UN(IsNaN, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(IsInf, .dts = DT_FLOAT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(Not, .dts = DT_BOOL, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_ONE),
    UN(BitwiseNot, .dts = DT_INT | DT_UINT, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_UNK),
    UN(Identity, .dts = DT_ALL, .in = DOM_ANY, .out = DOM_ANY, .mag = MG_SAME),
};
#undef UN

static const un_spec *find_unary(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT && unary[op].name ? &unary[op] : NULL;
}

static double out_mag(mag_kind k, double m, kiln_dtype dt) {
  switch (k) {
  case MG_SAME: return m * 1.8 + 1;
  case MG_ONE: return 1;
  case MG_PI: return 4;
  case MG_EXP: return m < 700 ? exp(m) : INFINITY;
  case MG_ROUND: return m + 1;
  default: return kiln_dtype_is_int(dt) || dt == KILN_U8 ? 256 : INFINITY;
  }
}

/* The attributes of the unary ops that have some: random legal values. */
static const char *unary_attrs(gen *G, const char *op, char *a, size_t n) {
  double x = 0.05 + gen_attr_unif(G) * 1.5;
  a[0] = 0;
  /* the float classes besides ordinary values: 0 and -0 (a slope whose zero has a sign),
   * negative (Celu divides by its alpha: never 0) */
  if (strcmp(op, "Celu") && gen_attr_chance(G, 0.15)) x = gen_attr_chance(G, 0.5) ? 0.0 : -0.0;
  else if (gen_attr_chance(G, 0.1)) x = -x;
  if (!strcmp(op, "Elu") || !strcmp(op, "Celu") || !strcmp(op, "LeakyRelu") ||
      !strcmp(op, "ThresholdedRelu") || !strcmp(op, "Swish")) {
    if (gen_attr_chance(G, 0.6)) snprintf(a, n, "alpha=%.3g", x);
  } else if (!strcmp(op, "Selu")) {
    if (gen_attr_chance(G, 0.5)) snprintf(a, n, "alpha=%.3g, gamma=%.3g", x + 0.5, x + 0.2);
  } else if (!strcmp(op, "HardSigmoid")) {
    if (gen_attr_chance(G, 0.6)) snprintf(a, n, "alpha=%.3g, beta=%.3g", x * 0.3, 0.5);
  } else if (!strcmp(op, "Shrink")) {
    /* the defaults (bias 0, lambd 0.5) now and then: the emit layer may leave them out */
    snprintf(a, n, "bias=%.3g, lambd=%.3g", gen_attr_chance(G, 0.3) ? 0.0 : x * 0.5,
             gen_attr_chance(G, 0.3) ? 0.5 : x);
  } else if (!strcmp(op, "Gelu")) {
    if (gen_attr_chance(G, 0.5)) snprintf(a, n, "approximate=\"tanh\"");
  }
  return a;
}

static bool b_unary(gen *G, int op) {
  const un_spec *s = find_unary(kiln_gen_ops[op].op);
  gen_want w = want(s->dts, 0, 6, s->in);
  w.empty_ok = true, w.dyn_ok = true;
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  char a[96];
  unary_attrs(G, s->name, a, sizeof a);
  gen_dom dom = s->out;
  if (!strcmp(s->name, "Relu") && gen_v(G, x)->dom == DOM_POS) dom = DOM_POS;
  if (!strcmp(s->name, "Identity") || !strcmp(s->name, "Sqrt")) dom = gen_v(G, x)->dom;
  int y = gen_emit(G, s->name, 1, &x, 1, a, dom, out_mag(s->mag, gen_mag(G, x), gen_dtype(G, x)));
  G->vals.data[y].dyn = gen_v(G, x)->dyn; /* an unknown extent stays unknown */
  return true;
}

/* Dropout in inference mode, sometimes the mask: before opset 12 a ratio attribute left out
 * or written; from 12 the optional inputs: none, a constant ratio (of x's type or f32), a
 * constant training_mode false (after the ratio, or after an absent one), or training_mode
 * true with ratio 0 (the identity too). */
static bool b_dropout(gen *G, int op) {
  (void)op;
  gen_want w = want(DT_FLOAT, 0, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  int in[3] = {x, -1, -1}, n_in = 1, form = gen_int(&G->rng, 0, 4);
  const char *a = "";
  if (G->opset < 12 && form > 0) a = form == 1 ? "ratio=0.5" : "ratio=0.25";
  else if (form > 0) {
    kiln_type rt = gen_tensor_type(gen_chance(&G->rng, 0.5) ? gen_dtype(G, x) : KILN_F32, 0, NULL);
    kiln_type bt = gen_tensor_type(KILN_BOOL, 0, NULL);
    double ratio = form == 4 ? 0 : gen_chance(&G->rng, 0.5) ? 0.5 : 0.125;
    if (form != 3) in[1] = gen_const_fill(G, &rt, ratio), n_in = 2;
    if (form >= 3) in[2] = gen_const_fill(G, &bt, form == 4 ? 1 : 0), n_in = 3;
  }
  gen_emit(G, "Dropout", n_in, in, gen_chance(&G->rng, 0.2) ? 2 : 1, a, gen_v(G, x)->dom,
           gen_mag(G, x));
  return true;
}

/* Clip with constant bounds (inputs from opset 11), min < max. */
static bool b_clip(gen *G, int op) {
  (void)op;
  gen_want w = want(DT_FLOAT | DT_INT, 0, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  kiln_dtype dt = gen_dtype(G, x);
  int in[3] = {x, -1, -1};
  if (G->opset < 11) { /* Clip-6: min and max are float attributes (absent: no bound) */
    if (!kiln_dtype_is_float(dt)) return false;
    char a[64] = "";
    int len = 0;
    if (gen_attr_chance(G, 0.8)) len = snprintf(a, sizeof a, "min=%.3g", -gen_attr_unif(G));
    if (gen_attr_chance(G, 0.8))
      snprintf(a + len, sizeof a - (size_t)len, "%smax=%.3g", len ? ", " : "", gen_attr_unif(G));
    gen_emit(G, "Clip", 1, in, 1, a, DOM_ANY, gen_mag(G, x));
    return true;
  }
  kiln_type st = kiln_type_tensor(dt, 0, NULL);
  if (gen_chance(&G->rng, 0.8)) in[1] = gen_new_const(G, &st, DOM_ANY);
  if (gen_chance(&G->rng, 0.8)) in[2] = gen_new_const(G, &st, DOM_POS);
  gen_emit(G, "Clip", 3, in, 1, "", DOM_ANY, gen_mag(G, x));
  return true;
}

/* ---- binary and variadic ---- */
typedef struct bin_spec {
  const char *name;
  int dts;
  gen_dom a, b; /* operand domains */
  int out_bool;
  char mag; /* '+' sum, '*' product, 'm' max, '/' quotient (b away from 0), 'b' bool */
} bin_spec;

/* Keyed by op: dtypes, operand domains, whether the result is bool, the magnitude rule. */
#define BIN(nm, ...) [KILN_OP_##nm] = {.name = #nm, __VA_ARGS__}
static const bin_spec binary[KILN_OP_COUNT] = {
    BIN(Add, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = '+'),
    BIN(Sub, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = '+'),
    BIN(Mul, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = '*'),
    BIN(Div, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_NONZERO, .mag = '/'),
    BIN(Mod, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_NONZERO, .mag = 'm'),
    BIN(Pow, .dts = DT_FLOAT, .a = DOM_POS, .b = DOM_ANY, .mag = 'p'),
    BIN(PRelu, .dts = DT_FLOAT, .a = DOM_ANY, .b = DOM_ANY, .mag = '*'),
    BIN(Max, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = 'm'),
    BIN(Min, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = 'm'),
    BIN(Mean, .dts = DT_FLOAT, .a = DOM_ANY, .b = DOM_ANY, .mag = 'm'),
    BIN(Sum, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .mag = '+'),
    BIN(Equal, .dts = DT_INT | DT_BOOL, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(Greater, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(GreaterOrEqual, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(Less, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(LessOrEqual, .dts = DT_NUM, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(And, .dts = DT_BOOL, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(Or, .dts = DT_BOOL, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(Xor, .dts = DT_BOOL, .a = DOM_ANY, .b = DOM_ANY, .out_bool = 1, .mag = 'b'),
    BIN(BitwiseAnd, .dts = DT_INT | DT_UINT, .a = DOM_ANY, .b = DOM_ANY, .mag = 'm'),
    BIN(BitwiseOr, .dts = DT_INT | DT_UINT, .a = DOM_ANY, .b = DOM_ANY, .mag = 'o'),
    BIN(BitwiseXor, .dts = DT_INT | DT_UINT, .a = DOM_ANY, .b = DOM_ANY, .mag = 'o'),
    BIN(BitShift, .dts = DT_UINT, .a = DOM_ANY, .b = DOM_ANY, .mag = 's'),
};
#undef BIN

static const bin_spec *find_binary(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT && binary[op].name ? &binary[op] : NULL;
}

static double bin_mag(char k, double a, double b) {
  switch (k) {
  case '+': return a + b;
  case '*': return a * b;
  case '/': return a * 2;
  case 'm': return fmax(a, b);
  case 'o': return 2 * fmax(a, b) + 1;
  case 's': return a * 8;
  case 'p': return INFINITY;
  default: return 1;
  }
}

/* An identity constant operand for the simplify pass: x*1, x/1, x+(-0), x-0, Max(x,x)... */
static int identity_operand(gen *G, const char *op, kiln_dtype dt) {
  bool f = kiln_dtype_is_float(dt);
  const char *v = !strcmp(op, "Mul") || !strcmp(op, "Div") || !strcmp(op, "Pow") ? "1"
                  : !strcmp(op, "Add") ? (f ? "-0.0" : "0")
                  : !strcmp(op, "Sub") ? "0"
                                       : NULL;
  if (!v || dt == KILN_BOOL) return -1;
  kiln_type t = kiln_type_tensor(dt, 0, NULL);
  int c = gen_new_const(G, &t, DOM_POS);
  char *line = G->lines.data[G->lines.len - 1];
  char *br = strrchr(line, '[');
  snprintf(br, strlen(br) + 1, "[%s]", v); /* "[x]" is never longer than the drawn text */
  G->vals.data[c].mag = 1;
  G->vals.data[c].dom = !strcmp(v, "1") ? DOM_POS : DOM_ANY; /* 0 is in no narrower domain */
  return c;
}

/* Add, Sub, Mul, Div before opset 7: operands of one shape, or B (never larger) broadcast by
 * the attributes broadcast=1 and axis: B's dims are A's dims from axis on (axis left out: the
 * suffix), or B is a scalar. Numpy broadcasting of the same operands means something else
 * wherever B does not match A's suffix. */
static bool b_binary_legacy(gen *G, const bin_spec *s, int a) {
  kiln_dtype dt = gen_dtype(G, a);
  int r = gen_rank(G, a), form = gen_int(&G->rng, 0, 3), axis = 0, len = 0;
  int64_t d[KILN_MAX_RANK];
  char at[48] = "";
  if (r > 0 && gen_is_static(G, a) && form > 0) {
    axis = gen_int(&G->rng, 0, r - 1), len = gen_int(&G->rng, 1, r - axis);
    if (form == 1) axis = r - len; /* the suffix: axis left out */
    for (int i = 0; i < len; i++) d[i] = gen_dim(G, a, axis + i);
    snprintf(at, sizeof at, form == 1 ? "broadcast=1" : "broadcast=1, axis=%d", axis);
  } else if (form == 0 && gen_chance(&G->rng, 0.5)) {
    snprintf(at, sizeof at, "broadcast=1"); /* a scalar B */
  } else len = -1;                          /* A's own shape */
  kiln_type t = len < 0 ? gen_v(G, a)->type : gen_tensor_type(dt, len, d);
  int b = gen_pick_type(G, &t, s->b);
  int in[2] = {a, b};
  gen_emit(G, s->name, 2, in, 1, at, DOM_ANY, bin_mag(s->mag, gen_mag(G, a), gen_mag(G, b)));
  return true;
}

static bool b_binary(gen *G, int op) {
  const bin_spec *s = find_binary(kiln_gen_ops[op].op);
  gen_want w = want(s->dts, 0, 6, s->a);
  w.empty_ok = true;
  int a = gen_pick(G, &w);
  if (a < 0) return false;
  kiln_dtype dt = gen_dtype(G, a);
  if (G->opset < 7) /* the rows that start before 7: Add, Sub, Mul, Div */
    return strchr("+*/", s->mag) && !strchr("PS", s->name[0]) && b_binary_legacy(G, s, a);
  if (kiln_dtype_is_int(dt) && (s->name[0] == 'P')) return false;
  int b = -1;
  bool ident = false;
  if (gen_chance(&G->rng, 0.25)) ident = (b = identity_operand(G, s->name, dt)) >= 0;
  if (b < 0 && s->mag == 'p') { /* Pow: a positive base, a small exponent, float or (T2 is
                                   its own type) an integer one now and then */
    int64_t d1[1] = {1}, e = gen_int(&G->rng, -2, 3);
    if (gen_chance(&G->rng, 0.3))
      b = gen_const_i64(G, 1, &e, gen_chance(&G->rng, 0.5)); /* i64, scalar or [1] */
    else {
      kiln_type t = kiln_type_tensor(dt, gen_int(&G->rng, 0, 1), d1);
      b = gen_new_const(G, &t, DOM_ANY);
    }
  }
  if (b < 0 && gen_chance(&G->rng, 0.05) && s->b == DOM_ANY) b = a;  /* x op x */
  if (b < 0 && strcmp(s->name, "PRelu") && gen_chance(&G->rng, 0.2)) /* PRelu: one way only */
    b = gen_pick_mutual(G, a, s->b, dt);
  if (b < 0) b = gen_pick_bcast(G, a, s->b, dt);
  if (b < 0) return false;
  int in[2] = {a, b};
  if (gen_chance(&G->rng, ident ? 0.5 : 0.3) && s->name[0] != 'P' && s->mag != '/' &&
      s->mag != 's' && strcmp(s->name, "Mod"))
    in[0] = b, in[1] = a; /* the broadcast operand first */
  char attr[32] = "";
  if (s->mag == 's')
    snprintf(attr, sizeof attr, "direction=\"%s\"", gen_attr_chance(G, 0.5) ? "LEFT" : "RIGHT");
  if (!strcmp(s->name, "Mod")) { /* fmod: required (1) for floats; 0 (the default), written
                                     or not, or 1 (the sign of the dividend) for integers */
    if (kiln_dtype_is_float(dt)) snprintf(attr, sizeof attr, "fmod=1");
    else if (gen_attr_chance(G, 0.5)) snprintf(attr, sizeof attr, "fmod=%d", gen_attr_int(G, 0, 1));
  }
  double mag = bin_mag(s->mag, gen_mag(G, a), gen_mag(G, b));
  bool minmax = !strcmp(s->name, "Max") || !strcmp(s->name, "Min"); /* keep a common domain */
  gen_dom dom = minmax && gen_v(G, a)->dom == gen_v(G, b)->dom ? gen_v(G, a)->dom : DOM_ANY;
  if (!strcmp(s->name, "Max") && (gen_v(G, a)->dom == DOM_POS || gen_v(G, b)->dom == DOM_POS))
    dom = DOM_POS;
  int n_in = 2;
  if ((!strcmp(s->name, "Sum") || !strcmp(s->name, "Mean") || !strcmp(s->name, "Max")) &&
      gen_chance(&G->rng, 0.3)) { /* variadic: a third operand */
    int c = gen_pick_bcast(G, a, DOM_ANY, dt);
    int in3[3] = {in[0], in[1], c};
    gen_emit(G, s->name, 3, in3, 1, attr, DOM_ANY, bin_mag(s->mag, mag, gen_mag(G, c)));
    return true;
  }
  gen_emit(G, s->name, n_in, in, 1, attr, dom, mag);
  return true;
}

/* Where(cond, x, y): cond and y broadcast to x (or x to y when swapped). */
static bool b_where(gen *G, int op) {
  (void)op;
  gen_want wx = want(DT_ALL, 0, 6, DOM_ANY);
  wx.empty_ok = true;
  int x = gen_pick(G, &wx);
  if (x < 0) return false;
  int c = gen_chance(&G->rng, 0.15) ? gen_pick_mutual(G, x, DOM_ANY, KILN_BOOL)
                                    : gen_pick_bcast(G, x, DOM_ANY, KILN_BOOL);
  int y = gen_pick_bcast(G, x, DOM_ANY, gen_dtype(G, x));
  int in[3] = {c, x, y};
  if (gen_chance(&G->rng, 0.5)) in[1] = y, in[2] = x;
  gen_emit(G, "Where", 3, in, 1, "", DOM_ANY, fmax(gen_mag(G, x), gen_mag(G, y)));
  return true;
}

/* Transpose(y) with its r axes reversed (magnitude bound mag): the islands' move of a value
 * whose type few ops carry. */
static int reversed_transpose(gen *G, int y, int r, double mag) {
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "perm=[");
  for (int d = 0; d < r; d++) kiln_strbuf_printf(&p, "%s%d", d ? "," : "", r - 1 - d);
  kiln_strbuf_printf(&p, "]");
  int t = gen_emit(G, "Transpose", 1, &y, 1, p.data, DOM_ANY, mag);
  kiln_strbuf_free(&p);
  return t;
}

/* A 4-bit island (opset 21 on): integers within the range of int4 or uint4 cast to it,
 * moved or not (Transpose, Reshape, Flatten, Identity, Unsqueeze: the ops that carry 4-bit
 * types), and cast back to a generated type; the 4-bit value is a graph output now and then.
 * Kiln holds a 4-bit element in a byte (files pack two): what sizes blocks, strides views
 * and copies outputs must agree. The other builders never pick a 4-bit value. */
static bool cast4_island(gen *G) {
  bool sgn = gen_chance(&G->rng, 0.5);
  int64_t dims[3];
  int r = gen_int(&G->rng, 1, 3);
  for (int d = 0; d < r; d++) dims[d] = gen_int(&G->rng, 1, d == r - 1 ? 40 : 6);
  static const kiln_dtype ssrc[] = {KILN_I8, KILN_I32, KILN_I64},
                          usrc[] = {KILN_U8, KILN_I32, KILN_U16};
  kiln_type t = kiln_type_tensor((sgn ? ssrc : usrc)[gen_int(&G->rng, 0, 2)], r, dims);
  int x = gen_new_ranged_input(G, &t, sgn ? -8 : 0, sgn ? 7 : 15);
  char a[64];
  int y = gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d", (int)(sgn ? KILN_I4 : KILN_U4)), DOM_ANY, 15);
  switch (gen_int(&G->rng, 0, 5)) {
  case 0: y = reversed_transpose(G, y, r, 15); break;
  case 1: {
    int64_t m1 = -1;
    int in[2] = {y, gen_const_i64(G, 1, &m1, false)};
    y = gen_emit(G, "Reshape", 2, in, 1, "", DOM_ANY, 15);
    break;
  }
  case 2:
    y = gen_emit(G, "Flatten", 1, &y, 1, ATTR("axis=%d", gen_int(&G->rng, 0, r)), DOM_ANY, 15);
    break;
  case 3: y = gen_emit(G, "Identity", 1, &y, 1, "", DOM_ANY, 15); break;
  case 4: {
    int64_t ax = gen_int(&G->rng, -r - 1, r);
    int in[2] = {y, gen_const_i64(G, 1, &ax, false)};
    y = gen_emit(G, "Unsqueeze", 2, in, 1, "", DOM_ANY, 15);
    break;
  }
  default: break;
  }
  if (gen_chance(&G->rng, 0.3)) G->vals.data[y].keep = true;
  static const kiln_dtype back[] = {KILN_F32, KILN_I32, KILN_F16, KILN_I8, KILN_F64, KILN_I64};
  gen_emit(G, "Cast", 1, &y, 1, ATTR("to=%d", (int)back[gen_int(&G->rng, 0, 5)]), DOM_ANY, 15);
  return true;
}

/* A float8 island (opset 19 on), as a model quantized to float8 holds one: a float value,
 * scaled now and then into the range where the format saturates or is subnormal, cast to one
 * of the four float8 types (saturate written out or not; saturate=0 now and then, which
 * gives NaN or an infinity out of range), moved or not (Reshape and Identity carry float8
 * from opset 19, Transpose from 21), and cast back to a float type; the float8 value is a
 * graph output now and then. The other builders never pick a float8 value. */
static bool cast8_island(gen *G) {
  gen_want w = want(DT_FLOAT, 0, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  if (x < 0 || gen_v(G, x)->dyn) return false;
  static const double scales[] = {1, 1, 1.0 / 64, 16, 300, 20000};
  double sc = scales[gen_int(&G->rng, 0, 5)];
  if (gen_dtype(G, x) == KILN_F16 && sc > 300) sc = 300; /* f16 ends at 65504 */
  if (sc != 1) {
    kiln_type t = gen_v(G, x)->type;
    t.rank = 0;
    int in[2] = {x, gen_const_fill(G, &t, sc)};
    x = gen_emit(G, "Mul", 2, in, 1, "", DOM_ANY, gen_mag(G, x) * sc);
  }
  static const kiln_dtype f8[] = {KILN_F8E4M3FN, KILN_F8E4M3FNUZ, KILN_F8E5M2, KILN_F8E5M2FNUZ};
  kiln_dtype to = f8[gen_int(&G->rng, 0, 3)];
  char a[64], sat[16] = "";
  double u = gen_unif(&G->rng);
  if (u < 0.3) snprintf(sat, sizeof sat, ", saturate=1");
  else if (u < 0.4) snprintf(sat, sizeof sat, ", saturate=0");
  int y = gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d%s", (int)to, sat), DOM_ANY, 57344);
  int r = gen_v(G, y)->type.rank;
  switch (gen_int(&G->rng, 0, G->opset >= 21 && r >= 1 ? 3 : 2)) {
  case 0: {
    int64_t m1 = -1;
    int in[2] = {y, gen_const_i64(G, 1, &m1, false)};
    y = gen_emit(G, "Reshape", 2, in, 1, "", DOM_ANY, 57344);
    break;
  }
  case 1: y = gen_emit(G, "Identity", 1, &y, 1, "", DOM_ANY, 57344); break;
  case 3: y = reversed_transpose(G, y, r, 57344); break;
  default: break;
  }
  if (gen_chance(&G->rng, 0.2)) G->vals.data[y].keep = true;
  static const kiln_dtype back[] = {KILN_F32, KILN_F16, KILN_BF16, KILN_F64};
  gen_emit(G, "Cast", 1, &y, 1, ATTR("to=%d", (int)back[gen_int(&G->rng, 0, 3)]), DOM_ANY, 57344);
  return true;
}

/* Cast to another generated dtype; float -> int only from small values (truncation near
 * an integer is unstable: the input search redraws). */
static bool b_cast(gen *G, int op) {
  if (G->opset >= 21 && !strcmp(op_name(op), "Cast") && gen_chance(&G->rng, 0.15))
    return cast4_island(G);
  if (G->opset >= 19 && !strcmp(op_name(op), "Cast") && gen_chance(&G->rng, 0.2) && cast8_island(G))
    return true;
  gen_want w = want(DT_ALL, 0, 6, DOM_ANY);
  w.dyn_ok = true; /* extents unknown to the generator stay unknown */
  w.empty_ok = true;
  int x = gen_pick(G, &w);
  if (x >= 0 && !gen_v(G, x)->dyn && gen_chance(&G->rng, 0.25)) {
    /* an input of a wide float type of x's shape: what a model casts down on its way in */
    kiln_type t = gen_v(G, x)->type;
    double u = gen_unif(&G->rng); /* or a 64-bit integer input (ids, counts) made a float */
    t.dtype = u < 0.45 ? KILN_F64 : u < 0.75 ? KILN_F32 : KILN_I64;
    x = gen_new_input(G, &t, gen_chance(&G->rng, 0.4) ? DOM_NONNEG : DOM_ANY);
  }
  kiln_dtype to = gen_pick_dt(G, DT_ALL), from = gen_dtype(G, x);
  if (kiln_dtype_is_float(from) && gen_chance(&G->rng, 0.5)) {
    /* a narrowing cast, where rounding, subnormals and the integers a type holds matter */
    static const kiln_dtype from64[] = {KILN_F16, KILN_BF16, KILN_F32, KILN_I64,
                                        KILN_I32, KILN_U64,  KILN_U32},
                            from32[] = {KILN_F16, KILN_BF16, KILN_I64,
                                        KILN_I32, KILN_U64,  KILN_U32},
                            from16[] = {KILN_BF16, KILN_F16, KILN_I32, KILN_I16, KILN_U16};
    gen_dom dx = gen_v(G, x)->dom;
    int u = dx == DOM_POS || dx == DOM_GE1 || dx == DOM_NONNEG ? 0 : -1; /* unsigned: x >= 0 */
    if (from == KILN_F64) to = from64[gen_int(&G->rng, 0, 6 + 2 * u)];
    else if (from == KILN_F32) to = from32[gen_int(&G->rng, 0, 5 + 2 * u)];
    else to = from16[gen_int(&G->rng, from == KILN_F16 ? 0 : 1, 4 + u)];
  }
  if (kiln_dtype_is_int(from) && kiln_dtype_size(from) >= 4 && gen_chance(&G->rng, 0.4)) {
    /* a wide integer into a float type that holds fewer significant bits: rounding (past 2^53
     * for 64-bit integers, where no double holds them) */
    static const kiln_dtype to_float[] = {KILN_BF16, KILN_F32, KILN_F64, KILN_F16};
    to = to_float[gen_int(&G->rng, 0, kiln_dtype_size(from) == 8 ? 3 : 2)];
  }
  char a[64];
  /* a float to an integer type is defined only within the target's range */
  gen_dom d = gen_v(G, x)->dom;
  bool nonneg = d == DOM_POS || d == DOM_GE1 || d == DOM_NONNEG;
  if (kiln_dtype_is_float(gen_dtype(G, x)) && kiln_dtype_class_of(to) == KILN_CLASS_UINT &&
      to != KILN_BOOL && !nonneg)
    to = KILN_I32;
  if (kiln_dtype_is_float(gen_dtype(G, x)) && (to == KILN_I8 || to == KILN_U8) &&
      !(gen_mag(G, x) < 127))
    to = KILN_I32;
  /* saturate (opset 19 on) written out, either value: it changes only casts to float8, which
   * Kiln leaves to the reference kernel; elsewhere it must change nothing */
  char sat[16] = "";
  if (G->opset >= 19 && gen_chance(&G->rng, 0.25))
    snprintf(sat, sizeof sat, "saturate=%d", gen_int(&G->rng, 0, 1));
  if (!strcmp(op_name(op), "CastLike")) {
    int64_t d1[1] = {1};
    kiln_type t = kiln_type_tensor(to, 1, d1);
    int in[2] = {x, gen_new_const(G, &t, DOM_ANY)};
    int y = gen_emit(G, "CastLike", 2, in, 1, sat, DOM_ANY, gen_mag(G, x) + 1);
    G->vals.data[y].dyn = gen_v(G, x)->dyn;
    return true;
  }
  int y = gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d%s%s", (int)to, sat[0] ? ", " : "", sat),
                   gen_v(G, x)->dom == DOM_POS && kiln_dtype_is_float(to) ? DOM_POS : DOM_ANY,
                   gen_mag(G, x) + 1);
  G->vals.data[y].dyn = gen_v(G, x)->dyn;
  return true;
}

/* ---- reductions and rows ---- */
static void axes_list(gen *G, int rank, int64_t *axes, int *n) {
  *n = 0;
  for (int d = 0; d < rank; d++)
    if (gen_chance(&G->rng, 0.5)) axes[(*n)++] = gen_chance(&G->rng, 0.3) ? d - rank : d;
  if (*n == 0 && rank > 0) axes[(*n)++] = gen_int(&G->rng, 0, rank - 1);
}

static bool abs_or_square_sum(const char *name) {
  return !strcmp(name, "ReduceL1") || !strcmp(name, "ReduceSumSquare");
}

static bool b_reduce(gen *G, int op) {
  const char *name = op_name(op);
  bool log = !strcmp(name, "ReduceLogSum"), prod = !strcmp(name, "ReduceProd");
  /* the integer types of the schema where the result is exact: sums of absolute values and of
   * squares too (L2, the means and the logs round: floats only) */
  int dts = !strcmp(name, "ReduceMax") || !strcmp(name, "ReduceMin") ||
                    !strcmp(name, "ReduceSum") || prod || !strcmp(name, "ReduceL1") ||
                    !strcmp(name, "ReduceSumSquare")
                ? DT_NUM
                : DT_FLOAT;
  gen_want w = want(dts, 1, 6, log ? DOM_POS : DOM_ANY);
  if (prod) w.max_mag = 2.5;
  /* an empty reduction is defined where the op has an identity: a sum is 0, a product 1 */
  w.empty_ok = prod || !strcmp(name, "ReduceSum") || !strcmp(name, "ReduceSumSquare") ||
               !strcmp(name, "ReduceL1") || !strcmp(name, "ReduceL2");
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  int r = gen_rank(G, x), n;
  int64_t axes[KILN_MAX_RANK];
  axes_list(G, r, axes, &n);
  int keep = gen_attr_int(G, 0, 1);
  char a[160];
  int in[2] = {x, -1};
  bool as_input = G->opset >= 18 || (G->opset >= 13 && !strcmp(name, "ReduceSum"));
  int len = snprintf(a, sizeof a, "keepdims=%d", keep);
  /* no axes: every dim, or (noop_with_empty_axes=1, where the axes are an input) none */
  bool all = gen_attr_chance(G, 0.15);
  if (as_input && gen_attr_chance(G, 0.3)) {
    int noop = gen_attr_int(G, 0, 1);
    len += snprintf(a + len, sizeof a - (size_t)len, ", noop_with_empty_axes=%d", noop);
    if (noop && all) n = 0; /* the identity */
  }
  if (all) {
    if (n > 0) n = r;
    for (int d = 0; d < n; d++) axes[d] = d;
    if (as_input && gen_chance(&G->rng, 0.5)) /* an empty axes input: the same as none */
      in[1] = gen_const_i64(G, 0, axes, false);
  } else if (as_input && n > 0 && gen_chance(&G->rng, 0.9))
    in[1] = gen_const_i64(G, n, axes, false);
  else if (!as_input && gen_chance(&G->rng, 0.9)) {
    len += snprintf(a + len, sizeof a - (size_t)len, ", axes=[");
    for (int i = 0; i < n; i++)
      len += snprintf(a + len, sizeof a - (size_t)len, "%s%lld", i ? "," : "", (long long)axes[i]);
    snprintf(a + len, sizeof a - (size_t)len, "]");
  }
  double m = gen_mag(G, x), cnt = 1;
  for (int d = 0; d < r; d++) cnt *= (double)gen_dim(G, x, d);
  double mag = prod                                                         ? pow(m, cnt)
               : (!strcmp(name, "ReduceMax") || !strcmp(name, "ReduceMin")) ? m
                                                                            : m * cnt + 8;
  if (kiln_dtype_is_int(gen_dtype(G, x)) && prod && mag > 1e6) return false;
  if (!strcmp(name, "ReduceSumSquare")) mag = m * m * cnt + 8;
  if (kiln_dtype_is_int(gen_dtype(G, x)) && abs_or_square_sum(name) && mag > 1e9)
    return false; /* an absolute value or a square wraps only past this: left out */
  gen_dom dom =
      !strcmp(name, "ReduceL2") || !strcmp(name, "ReduceL1") || !strcmp(name, "ReduceSumSquare")
          ? DOM_NONNEG
          : DOM_ANY;
  gen_emit(G, name, in[1] >= 0 ? 2 : 1, in, 1, a, dom, mag);
  return true;
}

static bool b_argmax(gen *G, int op) {
  gen_want w = want(DT_NUM, 1, 6, DOM_ANY);
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  char a[96];
  ATTR("axis=%d, keepdims=%d, select_last_index=%d", gen_attr_int(G, -r, r - 1),
       gen_attr_int(G, 0, 1), gen_attr_int(G, 0, 1));
  gen_emit(G, op_name(op), 1, &x, 1, a, DOM_NONNEG, 8);
  return true;
}

/* Softmax, LogSoftmax, Hardmax (from opset 13 over one axis; before, over the dims from the axis
 * on, the input coerced to 2-D) */
static bool b_softmax(gen *G, int op) {
  gen_want w = want(DT_FLOAT, 1, 6, DOM_ANY);
  w.empty_ok = true;
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  char a[32] = "";
  if (gen_attr_chance(G, 0.7)) ATTR("axis=%d", gen_attr_int(G, -r, r - 1));
  bool logsm = !strcmp(op_name(op), "LogSoftmax");
  gen_emit(G, op_name(op), 1, &x, 1, a, logsm ? DOM_ANY : DOM_NONNEG, logsm ? INFINITY : 1);
  return true;
}

static bool b_cumsum(gen *G, int op) {
  bool prod = !strcmp(op_name(op), "CumProd");
  gen_want w = want(prod ? DT_FLOAT : DT_NUM, 1, 6, DOM_ANY);
  if (prod) w.max_mag = 2.5;
  w.empty_ok = true;
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  int64_t ax = gen_attr_int(G, -r, r - 1);
  int in[2] = {x, gen_const_i64(G, 1, &ax, true)};
  double n = (double)gen_dim(G, x, (int)(ax < 0 ? ax + r : ax));
  if (gen_chance(&G->rng, 0.25)) { /* the axis known only at run time (i32 or i64, any form) */
    kiln_type at = kiln_type_tensor(gen_chance(&G->rng, 0.5) ? KILN_I64 : KILN_I32, 0, NULL);
    in[1] = gen_new_ranged_input(G, &at, -r, r - 1);
    for (int d = 0; d < r; d++) n = fmax(n, (double)gen_dim(G, x, d));
  }
  char a[64];
  ATTR("exclusive=%d, reverse=%d", gen_attr_int(G, 0, 1), gen_attr_int(G, 0, 1));
  gen_emit(G, op_name(op), 2, in, 1, a, DOM_ANY, prod ? pow(gen_mag(G, x), n) : gen_mag(G, x) * n);
  return true;
}

/* ---- pass patterns ---- */
/* The op of table entry `name`. */
static int op_index(const char *name) {
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if (!strcmp(kiln_gen_ops[i].name, name)) return i;
  return -1;
}

/* Two or three view or cast ops in a row on one value (simplify's chains). */
bool gen_b_chain(gen *G, int op) {
  (void)op;
  static const char *const links[] = {"Transpose", "Reshape",  "Cast", "Unsqueeze", "Squeeze",
                                      "Flatten",   "Identity", "Relu", "Neg"};
  int n = gen_int(&G->rng, 2, 3), n_links = (int)(sizeof links / sizeof links[0]);
  int same = gen_chance(&G->rng, 0.5) ? gen_int(&G->rng, 0, n_links - 1) : -1; /* T(T(x)) ... */
  if (same >= 0 && gen_chance(&G->rng, 0.4)) same = 0; /* Transpose chains: perms compose */
  bool any = false;
  for (int i = 0; i < n; i++) {
    int k = op_index(links[same >= 0 ? same : gen_int(&G->rng, 0, n_links - 1)]);
    int before = G->vals.len;
    if (k >= 0 && kiln_gen_ops[k].build(G, k)) any = true;
    if (G->vals.len > before && !gen_settle(G)) break; /* the next link needs the type */
    if (G->vals.len > before) G->prefer = G->vals.len - 1;
  }
  G->prefer = -1;
  return any;
}

/* Paths that leave an elementwise group and come back (fusion's convexity), and a value used
 * inside and outside a reduction's prologue: a = f(x) and now and then a second member
 * b = f(x) or f(a); an outside node t = g(m) of one member m (a Transpose or a reduction, which
 * no elementwise group swallows); c = a member op t; now and then c op the other member, so
 * that the member that joins last reads the path back (a group's range must widen as members
 * join, and its search must follow every path out of it). */
bool gen_b_diamond(gen *G, int op) {
  (void)op;
  int64_t k = gen_int(&G->rng, 2, 6), dims[2] = {k, k};
  gen_want w = want(DT_FLOAT, 2, 2, DOM_ANY);
  int x = gen_pick(G, &w);
  if (x < 0 || !gen_is_static(G, x) || gen_dim(G, x, 0) != gen_dim(G, x, 1)) {
    kiln_type t = gen_tensor_type(gen_pick_dt(G, DT_FLOAT), 2, dims);
    x = gen_new_input(G, &t, DOM_ANY);
  }
  static const char *const f[] = {"Relu", "Exp", "Neg", "Sigmoid", "Tanh"};
  static const char *const bin[] = {"Add", "Mul", "Sub", "Max"};
  int a = gen_emit(G, f[gen_int(&G->rng, 0, 4)], 1, &x, 1, "", DOM_ANY, 8), b = -1;
  if (gen_chance(&G->rng, 0.5)) {
    int from = gen_chance(&G->rng, 0.5) ? x : a;
    b = gen_emit(G, f[gen_int(&G->rng, 0, 4)], 1, &from, 1, "", DOM_ANY, 8);
  }
  int m = b >= 0 && gen_chance(&G->rng, 0.5) ? b : a, other = m == a ? b : a, t;
  if (gen_chance(&G->rng, 0.5)) t = gen_emit(G, "Transpose", 1, &m, 1, "perm=[1,0]", DOM_ANY, 8);
  else {
    int64_t ax = gen_int(&G->rng, 0, 1);
    int in[2] = {m, gen_const_i64(G, 1, &ax, false)};
    t = gen_emit(G, "ReduceSum", 2, in, 1, "keepdims=1", DOM_ANY, 64);
  }
  /* c reads t and a member: the one t came from, or the other */
  int j = other >= 0 && gen_chance(&G->rng, 0.5) ? other : m;
  int in[2] = {j, t};
  if (gen_chance(&G->rng, 0.3)) in[0] = t, in[1] = j;
  int c = gen_emit(G, bin[gen_int(&G->rng, 0, 1)], 2, in, 1, "", DOM_ANY, 600);
  if (c >= 0 && gen_chance(&G->rng, 0.5)) { /* back to a member that c did not read */
    int back[2] = {c, j == m && other >= 0 ? other : m};
    gen_emit(G, bin[gen_int(&G->rng, 0, 3)], 2, back, 1, "", DOM_ANY, 5000);
  }
  return true;
}

/* The draw table, in draw order (the order is part of a seed's meaning: keep it). Each row
 * names its op (.op; KILN_OP_UNKNOWN for the patterns "(...)", which draw several ops), the
 * first opset it may be drawn in, its relative weight and its builder. */
#define OP(nm, ...)                                                                                \
  { .name = #nm, .op = KILN_OP_##nm, __VA_ARGS__ }
const gen_op kiln_gen_ops[] = {
    OP(Abs, .since = 6, .weight = 2, .build = b_unary),
    OP(Neg, .since = 6, .weight = 2, .build = b_unary),
    OP(Sign, .since = 11, .weight = 1, .build = b_unary),
    OP(Relu, .since = 6, .weight = 4, .build = b_unary),
    OP(Acos, .since = 11, .weight = 1, .build = b_unary),
    OP(Acosh, .since = 11, .weight = 1, .build = b_unary),
    OP(Asin, .since = 11, .weight = 1, .build = b_unary),
    OP(Asinh, .since = 11, .weight = 1, .build = b_unary),
    OP(Atan, .since = 11, .weight = 1, .build = b_unary),
    OP(Atanh, .since = 11, .weight = 1, .build = b_unary),
    OP(Ceil, .since = 6, .weight = 1, .build = b_unary),
    OP(Floor, .since = 6, .weight = 1, .build = b_unary),
    OP(Round, .since = 11, .weight = 1, .build = b_unary),
    OP(Cos, .since = 11, .weight = 1, .build = b_unary),
    OP(Sin, .since = 11, .weight = 1, .build = b_unary),
    OP(Tan, .since = 11, .weight = 1, .build = b_unary),
    OP(Cosh, .since = 11, .weight = 1, .build = b_unary),
    OP(Sinh, .since = 11, .weight = 1, .build = b_unary),
    OP(Tanh, .since = 6, .weight = 2, .build = b_unary),
    OP(Erf, .since = 11, .weight = 1, .build = b_unary),
    OP(Exp, .since = 6, .weight = 2, .build = b_unary),
    OP(Log, .since = 6, .weight = 2, .build = b_unary),
    OP(Sqrt, .since = 6, .weight = 2, .build = b_unary),
    OP(Reciprocal, .since = 6, .weight = 1, .build = b_unary),
    OP(Sigmoid, .since = 6, .weight = 2, .build = b_unary),
    OP(Softplus, .since = 11, .weight = 1, .build = b_unary),
    OP(Softsign, .since = 11, .weight = 1, .build = b_unary),
    OP(Mish, .since = 18, .weight = 1, .build = b_unary),
    OP(HardSwish, .since = 14, .weight = 1, .build = b_unary),
    OP(HardSigmoid, .since = 11, .weight = 1, .build = b_unary),
    OP(Gelu, .since = 20, .weight = 1, .build = b_unary),
    OP(Elu, .since = 11, .weight = 1, .build = b_unary),
    OP(Celu, .since = 12, .weight = 1, .build = b_unary),
    OP(Selu, .since = 11, .weight = 1, .build = b_unary),
    OP(LeakyRelu, .since = 11, .weight = 1, .build = b_unary),
    OP(ThresholdedRelu, .since = 11, .weight = 1, .build = b_unary),
    OP(Swish, .since = 24, .weight = 1, .build = b_unary),
    OP(Shrink, .since = 11, .weight = 1, .build = b_unary),
    OP(IsNaN, .since = 11, .weight = 1, .build = b_unary),
    OP(IsInf, .since = 11, .weight = 1, .build = b_unary),
    OP(Not, .since = 11, .weight = 1, .build = b_unary),
    OP(BitwiseNot, .since = 18, .weight = 1, .build = b_unary),
    OP(Identity, .since = 11, .weight = 2, .build = b_unary),
    OP(Dropout, .since = 11, .weight = 1, .build = b_dropout),
    OP(Clip, .since = 6, .weight = 2, .build = b_clip),
    OP(Add, .since = 6, .weight = 6, .build = b_binary),
    OP(Sub, .since = 6, .weight = 3, .build = b_binary),
    OP(Mul, .since = 6, .weight = 5, .build = b_binary),
    OP(Div, .since = 6, .weight = 3, .build = b_binary),
    OP(Mod, .since = 11, .weight = 1, .build = b_binary),
    OP(Pow, .since = 11, .weight = 2, .build = b_binary),
    OP(PRelu, .since = 11, .weight = 1, .build = b_binary),
    OP(Max, .since = 11, .weight = 2, .build = b_binary),
    OP(Min, .since = 11, .weight = 1, .build = b_binary),
    OP(Mean, .since = 11, .weight = 1, .build = b_binary),
    OP(Sum, .since = 11, .weight = 1, .build = b_binary),
    OP(Equal, .since = 11, .weight = 1, .build = b_binary),
    OP(Greater, .since = 11, .weight = 1, .build = b_binary),
    OP(GreaterOrEqual, .since = 12, .weight = 1, .build = b_binary),
    OP(Less, .since = 11, .weight = 1, .build = b_binary),
    OP(LessOrEqual, .since = 12, .weight = 1, .build = b_binary),
    OP(And, .since = 11, .weight = 1, .build = b_binary),
    OP(Or, .since = 11, .weight = 1, .build = b_binary),
    OP(Xor, .since = 11, .weight = 1, .build = b_binary),
    OP(BitwiseAnd, .since = 18, .weight = 1, .build = b_binary),
    OP(BitwiseOr, .since = 18, .weight = 1, .build = b_binary),
    OP(BitwiseXor, .since = 18, .weight = 1, .build = b_binary),
    OP(BitShift, .since = 11, .weight = 1, .build = b_binary),
    OP(Where, .since = 11, .weight = 2, .build = b_where),
    OP(Cast, .since = 11, .weight = 3, .build = b_cast),
    OP(CastLike, .since = 15, .weight = 1, .build = b_cast),
    OP(ReduceSum, .since = 11, .weight = 3, .build = b_reduce),
    OP(ReduceMean, .since = 11, .weight = 2, .build = b_reduce),
    OP(ReduceMax, .since = 11, .weight = 2, .build = b_reduce),
    OP(ReduceMin, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceProd, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceL1, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceL2, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceLogSum, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceLogSumExp, .since = 11, .weight = 1, .build = b_reduce),
    OP(ReduceSumSquare, .since = 11, .weight = 1, .build = b_reduce),
    OP(ArgMax, .since = 11, .weight = 1, .build = b_argmax),
    OP(ArgMin, .since = 11, .weight = 1, .build = b_argmax),
    OP(Softmax, .since = 11, .weight = 2, .build = b_softmax),
    OP(LogSoftmax, .since = 11, .weight = 1, .build = b_softmax),
    OP(Hardmax, .since = 11, .weight = 1, .build = b_softmax),
    OP(CumSum, .since = 14, .weight = 1, .build = b_cumsum),
    OP(CumProd, .since = 26, .weight = 1, .build = b_cumsum),
    {.name = "(duplicate)", .since = 11, .weight = 3, .build = gen_b_duplicate},
    {.name = "(chain)", .since = 11, .weight = 4, .build = gen_b_chain},
    {.name = "(diamond)", .since = 11, .weight = 2, .build = gen_b_diamond},
    {.name = "(pattern)", .since = 11, .weight = 36, .build = gen_b_pattern},
    /* gen_ops_nn.c */
    OP(MatMul, .since = 6, .weight = 4, .build = gen_b_matmul),
    OP(Gemm, .since = 11, .weight = 2, .build = gen_b_gemm),
    OP(Conv, .since = 11, .weight = 3, .build = gen_b_conv),
    OP(ConvTranspose, .since = 11, .weight = 1, .build = gen_b_conv_transpose),
    OP(MaxPool, .since = 11, .weight = 1, .build = gen_b_pool),
    OP(AveragePool, .since = 11, .weight = 1, .build = gen_b_pool),
    OP(GlobalAveragePool, .since = 11, .weight = 1, .build = gen_b_global_pool),
    OP(GlobalMaxPool, .since = 11, .weight = 1, .build = gen_b_global_pool),
    OP(BatchNormalization, .since = 15, .weight = 2, .build = gen_b_norm),
    OP(LayerNormalization, .since = 17, .weight = 2, .build = gen_b_norm),
    OP(InstanceNormalization, .since = 11, .weight = 1, .build = gen_b_norm),
    OP(GroupNormalization, .since = 21, .weight = 1, .build = gen_b_norm),
    OP(RMSNormalization, .since = 23, .weight = 1, .build = gen_b_norm),
    OP(LpNormalization, .since = 11, .weight = 1, .build = gen_b_norm),
    OP(LRN, .since = 11, .weight = 1, .build = gen_b_norm),
    OP(TopK, .since = 11, .weight = 1, .build = gen_b_topk),
    OP(RNN, .since = 11, .weight = 1, .build = gen_b_rnn),
    OP(GRU, .since = 11, .weight = 1, .build = gen_b_rnn),
    OP(LSTM, .since = 11, .weight = 1, .build = gen_b_rnn),
    OP(Einsum, .since = 12, .weight = 1, .build = gen_b_einsum),
    /* gen_ops_data.c */
    OP(Transpose, .since = 6, .weight = 3, .build = gen_b_transpose),
    OP(Reshape, .since = 11, .weight = 3, .build = gen_b_reshape),
    OP(Flatten, .since = 11, .weight = 1, .build = gen_b_flatten),
    OP(Squeeze, .since = 11, .weight = 1, .build = gen_b_squeeze),
    OP(Unsqueeze, .since = 11, .weight = 1, .build = gen_b_unsqueeze),
    OP(Concat, .since = 11, .weight = 2, .build = gen_b_concat),
    OP(Split, .since = 11, .weight = 1, .build = gen_b_split),
    OP(Slice, .since = 6, .weight = 2, .build = gen_b_slice),
    OP(Pad, .since = 11, .weight = 1, .build = gen_b_pad),
    OP(Tile, .since = 11, .weight = 1, .build = gen_b_tile),
    OP(Expand, .since = 11, .weight = 1, .build = gen_b_expand),
    OP(DepthToSpace, .since = 11, .weight = 1, .build = gen_b_d2s),
    OP(SpaceToDepth, .since = 11, .weight = 1, .build = gen_b_d2s),
    OP(Gather, .since = 11, .weight = 2, .build = gen_b_gather),
    OP(GatherElements, .since = 11, .weight = 1, .build = gen_b_gather_el),
    OP(GatherND, .since = 11, .weight = 1, .build = gen_b_gather_nd),
    OP(ScatterElements, .since = 11, .weight = 1, .build = gen_b_scatter_el),
    OP(ScatterND, .since = 11, .weight = 1, .build = gen_b_scatter_nd),
    OP(Trilu, .since = 14, .weight = 1, .build = gen_b_trilu),
    OP(OneHot, .since = 11, .weight = 1, .build = gen_b_onehot),
    OP(EyeLike, .since = 11, .weight = 1, .build = gen_b_eyelike),
    OP(Shape, .since = 11, .weight = 1, .build = gen_b_shape),
    OP(Size, .since = 11, .weight = 1, .build = gen_b_shape),
    OP(ConstantOfShape, .since = 11, .weight = 1, .build = gen_b_cos),
    OP(NonZero, .since = 11, .weight = 1, .build = gen_b_nonzero),
    OP(If, .since = 11, .weight = 3, .build = gen_b_if), /* subgraph reads: plan, fusion, passes */
    {.name = "(shape chain)", .since = 11, .weight = 1, .build = gen_b_shapechain},
    {.name = "(run-time shapes)", .since = 11, .weight = 3, .build = gen_b_rtshape},
    {.name = "(aliases)", .since = 9, .weight = 3, .build = gen_b_alias},
};
#undef OP
const int kiln_gen_n_ops = (int)(sizeof kiln_gen_ops / sizeof kiln_gen_ops[0]);

/* Ops the generator does not draw, each with the reason (test_op_registry fails for an op
 * with neither a row above nor a reason here). */
static const char *const excluded[KILN_OP_COUNT] = {
    [KILN_OP_AffineGrid] = "not generated yet",
    [KILN_OP_Attention] = "not generated yet",
    [KILN_OP_Bernoulli] = "random results: no oracle to compare with",
    [KILN_OP_BitCast] = "not generated yet",
    [KILN_OP_BlackmanWindow] = "not generated yet",
    [KILN_OP_CausalConvWithState] = "not generated yet",
    [KILN_OP_CenterCropPad] = "not generated yet",
    [KILN_OP_Col2Im] = "not generated yet",
    [KILN_OP_Compress] = "not generated yet",
    [KILN_OP_ConcatFromSequence] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_Constant] = "constants are made as graph initializers by every builder",
    [KILN_OP_ConvInteger] = "not generated yet",
    [KILN_OP_DFT] = "not generated yet",
    [KILN_OP_DeformConv] = "not generated yet",
    [KILN_OP_DequantizeLinear] = "not generated yet",
    [KILN_OP_Det] = "not generated yet",
    [KILN_OP_DynamicQuantizeLinear] = "not generated yet",
    [KILN_OP_GlobalLpPool] = "not generated yet",
    [KILN_OP_GridSample] = "not generated yet",
    [KILN_OP_HammingWindow] = "not generated yet",
    [KILN_OP_HannWindow] = "not generated yet",
    [KILN_OP_ImageDecoder] = "needs image codecs Kiln does not include",
    [KILN_OP_LinearAttention] = "not generated yet",
    [KILN_OP_Loop] = "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_LpPool] = "not generated yet",
    [KILN_OP_MatMulInteger] = "not generated yet",
    [KILN_OP_MaxRoiPool] = "not generated yet",
    [KILN_OP_MaxUnpool] = "not generated yet",
    [KILN_OP_MeanVarianceNormalization] = "not generated yet",
    [KILN_OP_MelWeightMatrix] = "not generated yet",
    [KILN_OP_Multinomial] = "random results: no oracle to compare with",
    [KILN_OP_NegativeLogLikelihoodLoss] = "not generated yet",
    [KILN_OP_NonMaxSuppression] = "not generated yet",
    [KILN_OP_Optional] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_OptionalGetElement] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_OptionalHasElement] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_QLinearConv] = "not generated yet",
    [KILN_OP_QLinearMatMul] = "not generated yet",
    [KILN_OP_QuantizeLinear] = "not generated yet",
    [KILN_OP_RandomNormal] = "random results: no oracle to compare with",
    [KILN_OP_RandomNormalLike] = "random results: no oracle to compare with",
    [KILN_OP_RandomUniform] = "random results: no oracle to compare with",
    [KILN_OP_RandomUniformLike] = "random results: no oracle to compare with",
    [KILN_OP_Range] = "not generated yet",
    [KILN_OP_RegexFullMatch] = "strings: the generator makes numeric graphs",
    [KILN_OP_Resize] = "not generated yet",
    [KILN_OP_ReverseSequence] = "not generated yet",
    [KILN_OP_RoiAlign] = "not generated yet",
    [KILN_OP_RotaryEmbedding] = "not generated yet",
    [KILN_OP_STFT] = "not generated yet",
    [KILN_OP_Scan] = "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_Scatter] = "not generated yet",
    [KILN_OP_SequenceAt] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceConstruct] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceEmpty] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceErase] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceInsert] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceLength] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SequenceMap] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_SoftmaxCrossEntropyLoss] = "not generated yet",
    [KILN_OP_SplitToSequence] =
        "subgraphs, sequences and optionals: the generator makes plain tensor graphs",
    [KILN_OP_StringConcat] = "strings: the generator makes numeric graphs",
    [KILN_OP_StringNormalizer] = "strings: the generator makes numeric graphs",
    [KILN_OP_StringSplit] = "strings: the generator makes numeric graphs",
    [KILN_OP_TensorScatter] = "not generated yet",
    [KILN_OP_TfIdfVectorizer] = "strings: the generator makes numeric graphs",
    [KILN_OP_Unique] = "not generated yet",
    [KILN_OP_Upsample] = "not generated yet",
};

const char *kiln_gen_op_excluded(kiln_op op) {
  return (unsigned)op < KILN_OP_COUNT ? excluded[op] : NULL;
}

int kiln_gen_op_index(kiln_op op) {
  for (int i = 0; i < kiln_gen_n_ops; i++)
    if (op != KILN_OP_UNKNOWN && kiln_gen_ops[i].op == op) return i;
  return -1;
}
