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
  gen_want w = {dts, rmin, rmax, dom, false, false, 0};
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

static const un_spec unary[] = {
    {"Abs", DT_NUM, DOM_ANY, DOM_NONNEG, MG_SAME},
    {"Neg", DT_FLOAT | DT_INT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Sign", DT_NUM, DOM_ANY, DOM_ANY, MG_ONE},
    {"Relu", DT_FLOAT | DT_INT, DOM_ANY, DOM_NONNEG, MG_SAME},
    {"Acos", DT_FLOAT, DOM_UNIT, DOM_POS, MG_PI},
    {"Acosh", DT_FLOAT, DOM_GE1, DOM_ANY, MG_PI},
    {"Asin", DT_FLOAT, DOM_UNIT, DOM_ANY, MG_PI},
    {"Asinh", DT_FLOAT, DOM_ANY, DOM_ANY, MG_PI},
    {"Atan", DT_FLOAT, DOM_ANY, DOM_ANY, MG_PI},
    {"Atanh", DT_FLOAT, DOM_UNIT, DOM_ANY, MG_PI},
    {"Ceil", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ROUND},
    {"Floor", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ROUND},
    {"Round", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ROUND},
    {"Cos", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ONE},
    {"Sin", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ONE},
    {"Tan", DT_FLOAT, DOM_UNIT, DOM_ANY, MG_PI},
    {"Cosh", DT_FLOAT, DOM_ANY, DOM_GE1, MG_EXP},
    {"Sinh", DT_FLOAT, DOM_ANY, DOM_ANY, MG_EXP},
    {"Tanh", DT_FLOAT, DOM_ANY, DOM_UNIT, MG_ONE},
    {"Erf", DT_FLOAT, DOM_ANY, DOM_UNIT, MG_ONE},
    {"Exp", DT_FLOAT, DOM_ANY, DOM_POS, MG_EXP},
    {"Log", DT_FLOAT, DOM_POS, DOM_ANY, MG_PI},
    {"Sqrt", DT_FLOAT, DOM_NONNEG, DOM_NONNEG, MG_SAME},
    {"Reciprocal", DT_FLOAT, DOM_NONZERO, DOM_ANY, MG_PI},
    {"Sigmoid", DT_FLOAT, DOM_ANY, DOM_POS, MG_ONE},
    {"Softplus", DT_FLOAT, DOM_ANY, DOM_POS, MG_SAME},
    {"Softsign", DT_FLOAT, DOM_ANY, DOM_UNIT, MG_ONE},
    {"Mish", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"HardSwish", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"HardSigmoid", DT_FLOAT, DOM_ANY, DOM_NONNEG, MG_ONE},
    {"Gelu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Elu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Celu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Selu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"LeakyRelu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"ThresholdedRelu", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Swish", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"Shrink", DT_FLOAT, DOM_ANY, DOM_ANY, MG_SAME},
    {"IsNaN", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ONE},
    {"IsInf", DT_FLOAT, DOM_ANY, DOM_ANY, MG_ONE},
    {"Not", DT_BOOL, DOM_ANY, DOM_ANY, MG_ONE},
    {"BitwiseNot", DT_INT | DT_U8, DOM_ANY, DOM_ANY, MG_UNK},
    {"Identity", DT_ALL, DOM_ANY, DOM_ANY, MG_SAME},
};

static const un_spec *find_unary(const char *name) {
  for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
    if (!strcmp(unary[i].name, name)) return &unary[i];
  return NULL;
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
  double x = 0.05 + gen_unif(&G->rng) * 1.5;
  a[0] = 0;
  if (!strcmp(op, "Elu") || !strcmp(op, "Celu") || !strcmp(op, "LeakyRelu") ||
      !strcmp(op, "ThresholdedRelu") || !strcmp(op, "Swish")) {
    if (gen_chance(&G->rng, 0.6)) snprintf(a, n, "alpha=%.3g", x);
  } else if (!strcmp(op, "Selu")) {
    if (gen_chance(&G->rng, 0.5)) snprintf(a, n, "alpha=%.3g, gamma=%.3g", x + 0.5, x + 0.2);
  } else if (!strcmp(op, "HardSigmoid")) {
    if (gen_chance(&G->rng, 0.6)) snprintf(a, n, "alpha=%.3g, beta=%.3g", x * 0.3, 0.5);
  } else if (!strcmp(op, "Shrink")) {
    snprintf(a, n, "bias=%.3g, lambd=%.3g", x * 0.5, x);
  } else if (!strcmp(op, "Gelu")) {
    if (gen_chance(&G->rng, 0.5)) snprintf(a, n, "approximate=\"tanh\"");
  }
  return a;
}

static bool b_unary(gen *G, int op) {
  const un_spec *s = find_unary(op_name(op));
  gen_want w = want(s->dts, 0, 4, s->in);
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  char a[96];
  unary_attrs(G, s->name, a, sizeof a);
  gen_dom dom = s->out;
  if (!strcmp(s->name, "Relu") && gen_v(G, x)->dom == DOM_POS) dom = DOM_POS;
  if (!strcmp(s->name, "Identity") || !strcmp(s->name, "Sqrt")) dom = gen_v(G, x)->dom;
  gen_emit(G, s->name, 1, &x, 1, a, dom, out_mag(s->mag, gen_mag(G, x), gen_dtype(G, x)));
  return true;
}

/* Dropout: inference mode (no ratio input, or training_mode false), sometimes the mask. */
static bool b_dropout(gen *G, int op) {
  (void)op;
  gen_want w = want(DT_FLOAT, 0, 4, DOM_ANY);
  int in[1] = {gen_pick(G, &w)};
  gen_emit(G, "Dropout", 1, in, gen_chance(&G->rng, 0.2) ? 2 : 1, "", gen_v(G, in[0])->dom,
           gen_mag(G, in[0]));
  return true;
}

/* Clip with constant bounds (inputs from opset 11), min < max. */
static bool b_clip(gen *G, int op) {
  (void)op;
  gen_want w = want(DT_FLOAT | DT_INT, 0, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  kiln_dtype dt = gen_dtype(G, x);
  int in[3] = {x, -1, -1};
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

static const bin_spec binary[] = {
    {"Add", DT_NUM, DOM_ANY, DOM_ANY, 0, '+'},
    {"Sub", DT_NUM, DOM_ANY, DOM_ANY, 0, '+'},
    {"Mul", DT_NUM, DOM_ANY, DOM_ANY, 0, '*'},
    {"Div", DT_NUM, DOM_ANY, DOM_NONZERO, 0, '/'},
    {"Mod", DT_INT, DOM_ANY, DOM_NONZERO, 0, 'm'},
    {"Pow", DT_FLOAT, DOM_POS, DOM_ANY, 0, 'p'},
    {"PRelu", DT_FLOAT, DOM_ANY, DOM_ANY, 0, '*'},
    {"Max", DT_NUM, DOM_ANY, DOM_ANY, 0, 'm'},
    {"Min", DT_NUM, DOM_ANY, DOM_ANY, 0, 'm'},
    {"Mean", DT_FLOAT, DOM_ANY, DOM_ANY, 0, 'm'},
    {"Sum", DT_NUM, DOM_ANY, DOM_ANY, 0, '+'},
    {"Equal", DT_INT | DT_BOOL, DOM_ANY, DOM_ANY, 1, 'b'},
    {"Greater", DT_NUM, DOM_ANY, DOM_ANY, 1, 'b'},
    {"GreaterOrEqual", DT_NUM, DOM_ANY, DOM_ANY, 1, 'b'},
    {"Less", DT_NUM, DOM_ANY, DOM_ANY, 1, 'b'},
    {"LessOrEqual", DT_NUM, DOM_ANY, DOM_ANY, 1, 'b'},
    {"And", DT_BOOL, DOM_ANY, DOM_ANY, 1, 'b'},
    {"Or", DT_BOOL, DOM_ANY, DOM_ANY, 1, 'b'},
    {"Xor", DT_BOOL, DOM_ANY, DOM_ANY, 1, 'b'},
    {"BitwiseAnd", DT_INT | DT_U8, DOM_ANY, DOM_ANY, 0, 'm'},
    {"BitwiseOr", DT_INT | DT_U8, DOM_ANY, DOM_ANY, 0, 'o'},
    {"BitwiseXor", DT_INT | DT_U8, DOM_ANY, DOM_ANY, 0, 'o'},
    {"BitShift", DT_U8, DOM_ANY, DOM_ANY, 0, 's'},
};

static const bin_spec *find_binary(const char *name) {
  for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
    if (!strcmp(binary[i].name, name)) return &binary[i];
  return NULL;
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

static bool b_binary(gen *G, int op) {
  const bin_spec *s = find_binary(op_name(op));
  gen_want w = want(s->dts, 0, 4, s->a);
  int a = gen_pick(G, &w);
  if (a < 0) return false;
  kiln_dtype dt = gen_dtype(G, a);
  if (kiln_dtype_is_int(dt) && (s->name[0] == 'P')) return false;
  int b = -1;
  bool ident = false;
  if (gen_chance(&G->rng, 0.25)) ident = (b = identity_operand(G, s->name, dt)) >= 0;
  if (b < 0 && s->mag == 'p') { /* Pow: a positive base, a small exponent */
    int64_t d1[1] = {1};
    kiln_type t = kiln_type_tensor(dt, gen_int(&G->rng, 0, 1), d1);
    b = gen_new_const(G, &t, DOM_ANY);
  }
  if (b < 0 && gen_chance(&G->rng, 0.05) && s->b == DOM_ANY) b = a; /* x op x */
  if (b < 0) b = gen_pick_bcast(G, a, s->b, dt);
  if (b < 0) return false;
  int in[2] = {a, b};
  if (gen_chance(&G->rng, ident ? 0.5 : 0.3) && s->name[0] != 'P' && s->mag != '/' &&
      s->mag != 's' && strcmp(s->name, "Mod"))
    in[0] = b, in[1] = a; /* the broadcast operand first */
  char attr[32] = "";
  if (s->mag == 's')
    snprintf(attr, sizeof attr, "direction=\"%s\"", gen_chance(&G->rng, 0.5) ? "LEFT" : "RIGHT");
  if (!strcmp(s->name, "Mod") && gen_chance(&G->rng, 0.3)) return false;
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
  gen_want wx = want(DT_ALL, 0, 4, DOM_ANY);
  int x = gen_pick(G, &wx);
  if (x < 0) return false;
  int c = gen_pick_bcast(G, x, DOM_ANY, KILN_BOOL);
  int y = gen_pick_bcast(G, x, DOM_ANY, gen_dtype(G, x));
  int in[3] = {c, x, y};
  if (gen_chance(&G->rng, 0.5)) in[1] = y, in[2] = x;
  gen_emit(G, "Where", 3, in, 1, "", DOM_ANY, fmax(gen_mag(G, x), gen_mag(G, y)));
  return true;
}

/* Cast to another generated dtype; float -> int only from small values (truncation near
 * an integer is unstable: the input search redraws). */
static bool b_cast(gen *G, int op) {
  gen_want w = want(DT_ALL, 0, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  kiln_dtype to = gen_pick_dt(G, DT_ALL);
  char a[64];
  if (!strcmp(op_name(op), "CastLike")) {
    int64_t d1[1] = {1};
    kiln_type t = kiln_type_tensor(to, 1, d1);
    int in[2] = {x, gen_new_const(G, &t, DOM_ANY)};
    gen_emit(G, "CastLike", 2, in, 1, "", DOM_ANY, gen_mag(G, x) + 1);
    return true;
  }
  gen_emit(G, "Cast", 1, &x, 1, ATTR("to=%d", (int)to),
           gen_v(G, x)->dom == DOM_POS && kiln_dtype_is_float(to) ? DOM_POS : DOM_ANY,
           gen_mag(G, x) + 1);
  return true;
}

/* ---- reductions and rows ---- */
static void axes_list(gen *G, int rank, int64_t *axes, int *n) {
  *n = 0;
  for (int d = 0; d < rank; d++)
    if (gen_chance(&G->rng, 0.5)) axes[(*n)++] = gen_chance(&G->rng, 0.3) ? d - rank : d;
  if (*n == 0 && rank > 0) axes[(*n)++] = gen_int(&G->rng, 0, rank - 1);
}

static bool b_reduce(gen *G, int op) {
  const char *name = op_name(op);
  bool log = !strcmp(name, "ReduceLogSum"), prod = !strcmp(name, "ReduceProd");
  int dts =
      !strcmp(name, "ReduceMax") || !strcmp(name, "ReduceMin") || !strcmp(name, "ReduceSum") || prod
          ? DT_NUM
          : DT_FLOAT;
  gen_want w = want(dts, 1, 4, log ? DOM_POS : DOM_ANY);
  if (prod) w.max_mag = 2.5;
  int x = gen_pick(G, &w);
  if (x < 0) return false;
  int r = gen_rank(G, x), n;
  int64_t axes[KILN_MAX_RANK];
  axes_list(G, r, axes, &n);
  int keep = gen_int(&G->rng, 0, 1);
  char a[160];
  int in[2] = {x, -1};
  bool as_input = G->opset >= 18 || !strcmp(name, "ReduceSum");
  int len = snprintf(a, sizeof a, "keepdims=%d", keep);
  if (as_input && n > 0 && gen_chance(&G->rng, 0.9)) in[1] = gen_const_i64(G, n, axes, false);
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
  gen_dom dom =
      !strcmp(name, "ReduceL2") || !strcmp(name, "ReduceL1") || !strcmp(name, "ReduceSumSquare")
          ? DOM_NONNEG
          : DOM_ANY;
  gen_emit(G, name, in[1] >= 0 ? 2 : 1, in, 1, a, dom, mag);
  return true;
}

static bool b_argmax(gen *G, int op) {
  gen_want w = want(DT_NUM, 1, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  char a[96];
  ATTR("axis=%d, keepdims=%d, select_last_index=%d", gen_int(&G->rng, -r, r - 1),
       gen_int(&G->rng, 0, 1), gen_int(&G->rng, 0, 1));
  gen_emit(G, op_name(op), 1, &x, 1, a, DOM_NONNEG, 8);
  return true;
}

/* Softmax, LogSoftmax, Hardmax (opset 13: one axis) */
static bool b_softmax(gen *G, int op) {
  gen_want w = want(DT_FLOAT, 1, 4, DOM_ANY);
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  char a[32] = "";
  if (gen_chance(&G->rng, 0.7)) ATTR("axis=%d", gen_int(&G->rng, -r, r - 1));
  bool logsm = !strcmp(op_name(op), "LogSoftmax");
  gen_emit(G, op_name(op), 1, &x, 1, a, logsm ? DOM_ANY : DOM_NONNEG, logsm ? INFINITY : 1);
  return true;
}

static bool b_cumsum(gen *G, int op) {
  bool prod = !strcmp(op_name(op), "CumProd");
  gen_want w = want(prod ? DT_FLOAT : DT_NUM, 1, 4, DOM_ANY);
  if (prod) w.max_mag = 2.5;
  int x = gen_pick(G, &w);
  int r = gen_rank(G, x);
  int64_t ax = gen_int(&G->rng, -r, r - 1);
  int in[2] = {x, gen_const_i64(G, 1, &ax, true)};
  char a[64];
  ATTR("exclusive=%d, reverse=%d", gen_int(&G->rng, 0, 1), gen_int(&G->rng, 0, 1));
  double n = (double)gen_dim(G, x, (int)(ax < 0 ? ax + r : ax));
  gen_emit(G, op_name(op), 2, in, 1, a, DOM_ANY, prod ? pow(gen_mag(G, x), n) : gen_mag(G, x) * n);
  return true;
}

/* ---- pass patterns ---- */
/* A copy of an earlier node with the same operands (cse). */
static bool b_duplicate(gen *G, int op) {
  (void)op;
  int n = 0, idx[64];
  for (int i = 0; i < G->lines.len && n < 64; i++)
    if (!strstr(G->lines.data[i], "= const ")) idx[n++] = i;
  if (n == 0) return false;
  const char *line = G->lines.data[idx[gen_int(&G->rng, 0, n - 1)]];
  for (int t = 0; t < 4 && !strstr(line, "alpha=") && gen_chance(&G->rng, 0.5); t++)
    line = G->lines.data[idx[gen_int(&G->rng, 0, n - 1)]]; /* favour nodes with a float attribute */
  const char *eq = strstr(line, " = ");
  int n_out = 1;
  for (const char *p = line; p < eq; p++) n_out += *p == ',';
  gen_val src = G->vals.data[0];
  for (int i = 0; i < G->vals.len; i++) /* the domain of the copied node's first output */
    if (!strncmp(line + 1, G->vals.data[i].name, strlen(G->vals.data[i].name)) &&
        (line[1 + strlen(G->vals.data[i].name)] == ' ' ||
         line[1 + strlen(G->vals.data[i].name)] == ','))
      src = G->vals.data[i];
  kiln_strbuf b = {0};
  int first = G->vals.len;
  for (int k = 0; k < n_out; k++) {
    gen_val v = src;
    snprintf(v.name, sizeof v.name, "v%d", G->next_name++);
    v.is_input = v.is_const = false;
    kiln_vec_push(&G->vals, v);
    kiln_strbuf_printf(&b, "%s%%%s", k ? ", " : "", v.name);
  }
  (void)first;
  const char *alpha = strstr(eq, "alpha=");
  if (alpha && gen_chance(&G->rng, 0.5)) { /* a near-duplicate: another alpha (not for cse) */
    const char *end = alpha + 6 + strspn(alpha + 6, "0123456789.e+-");
    kiln_strbuf_printf(&b, "%.*salpha=%.3g%s", (int)(alpha - eq), eq, 0.05 + gen_unif(&G->rng),
                       end);
  } else kiln_strbuf_printf(&b, "%s", eq);
  kiln_vec_push(&G->lines, b.data);
  return true;
}

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

/* a = f(x); Add(a, g(a)) with g a Transpose or a reduction: a path through a node that
 * an elementwise group must not swallow (fusion's convexity), and a value used inside and
 * outside a reduction's prologue. */
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
  int a = gen_emit(G, f[gen_int(&G->rng, 0, 4)], 1, &x, 1, "", DOM_ANY, 8);
  int b;
  if (gen_chance(&G->rng, 0.5)) b = gen_emit(G, "Transpose", 1, &a, 1, "perm=[1,0]", DOM_ANY, 8);
  else {
    int64_t ax = gen_int(&G->rng, 0, 1);
    int in[2] = {a, gen_const_i64(G, 1, &ax, false)};
    b = gen_emit(G, "ReduceSum", 2, in, 1, "keepdims=1", DOM_ANY, 64);
  }
  int in[2] = {a, b};
  gen_emit(G, gen_chance(&G->rng, 0.5) ? "Add" : "Mul", 2, in, 1, "", DOM_ANY, 600);
  return true;
}

#define OP(name, since, w, fn)                                                                     \
  { name, since, w, fn }
const gen_op kiln_gen_ops[] = {
    OP("Abs", 13, 2, b_unary),
    OP("Neg", 13, 2, b_unary),
    OP("Sign", 13, 1, b_unary),
    OP("Relu", 13, 4, b_unary),
    OP("Acos", 13, 1, b_unary),
    OP("Acosh", 13, 1, b_unary),
    OP("Asin", 13, 1, b_unary),
    OP("Asinh", 13, 1, b_unary),
    OP("Atan", 13, 1, b_unary),
    OP("Atanh", 13, 1, b_unary),
    OP("Ceil", 13, 1, b_unary),
    OP("Floor", 13, 1, b_unary),
    OP("Round", 13, 1, b_unary),
    OP("Cos", 13, 1, b_unary),
    OP("Sin", 13, 1, b_unary),
    OP("Tan", 13, 1, b_unary),
    OP("Cosh", 13, 1, b_unary),
    OP("Sinh", 13, 1, b_unary),
    OP("Tanh", 13, 2, b_unary),
    OP("Erf", 13, 1, b_unary),
    OP("Exp", 13, 2, b_unary),
    OP("Log", 13, 2, b_unary),
    OP("Sqrt", 13, 2, b_unary),
    OP("Reciprocal", 13, 1, b_unary),
    OP("Sigmoid", 13, 2, b_unary),
    OP("Softplus", 13, 1, b_unary),
    OP("Softsign", 13, 1, b_unary),
    OP("Mish", 18, 1, b_unary),
    OP("HardSwish", 14, 1, b_unary),
    OP("HardSigmoid", 13, 1, b_unary),
    OP("Gelu", 20, 1, b_unary),
    OP("Elu", 13, 1, b_unary),
    OP("Celu", 13, 1, b_unary),
    OP("Selu", 13, 1, b_unary),
    OP("LeakyRelu", 13, 1, b_unary),
    OP("ThresholdedRelu", 13, 1, b_unary),
    OP("Swish", 24, 1, b_unary),
    OP("Shrink", 13, 1, b_unary),
    OP("IsNaN", 13, 1, b_unary),
    OP("IsInf", 13, 1, b_unary),
    OP("Not", 13, 1, b_unary),
    OP("BitwiseNot", 18, 1, b_unary),
    OP("Identity", 13, 2, b_unary),
    OP("Dropout", 13, 1, b_dropout),
    OP("Clip", 13, 2, b_clip),
    OP("Add", 13, 6, b_binary),
    OP("Sub", 13, 3, b_binary),
    OP("Mul", 13, 5, b_binary),
    OP("Div", 13, 3, b_binary),
    OP("Mod", 13, 1, b_binary),
    OP("Pow", 13, 2, b_binary),
    OP("PRelu", 13, 1, b_binary),
    OP("Max", 13, 2, b_binary),
    OP("Min", 13, 1, b_binary),
    OP("Mean", 13, 1, b_binary),
    OP("Sum", 13, 1, b_binary),
    OP("Equal", 13, 1, b_binary),
    OP("Greater", 13, 1, b_binary),
    OP("GreaterOrEqual", 13, 1, b_binary),
    OP("Less", 13, 1, b_binary),
    OP("LessOrEqual", 13, 1, b_binary),
    OP("And", 13, 1, b_binary),
    OP("Or", 13, 1, b_binary),
    OP("Xor", 13, 1, b_binary),
    OP("BitwiseAnd", 18, 1, b_binary),
    OP("BitwiseOr", 18, 1, b_binary),
    OP("BitwiseXor", 18, 1, b_binary),
    OP("BitShift", 13, 1, b_binary),
    OP("Where", 13, 2, b_where),
    OP("Cast", 13, 3, b_cast),
    OP("CastLike", 15, 1, b_cast),
    OP("ReduceSum", 13, 3, b_reduce),
    OP("ReduceMean", 13, 2, b_reduce),
    OP("ReduceMax", 13, 2, b_reduce),
    OP("ReduceMin", 13, 1, b_reduce),
    OP("ReduceProd", 13, 1, b_reduce),
    OP("ReduceL1", 13, 1, b_reduce),
    OP("ReduceL2", 13, 1, b_reduce),
    OP("ReduceLogSum", 13, 1, b_reduce),
    OP("ReduceLogSumExp", 13, 1, b_reduce),
    OP("ReduceSumSquare", 13, 1, b_reduce),
    OP("ArgMax", 13, 1, b_argmax),
    OP("ArgMin", 13, 1, b_argmax),
    OP("Softmax", 13, 2, b_softmax),
    OP("LogSoftmax", 13, 1, b_softmax),
    OP("Hardmax", 13, 1, b_softmax),
    OP("CumSum", 14, 1, b_cumsum),
    OP("CumProd", 26, 1, b_cumsum),
    OP("(duplicate)", 13, 3, b_duplicate),
    OP("(chain)", 13, 4, gen_b_chain),
    OP("(diamond)", 13, 2, gen_b_diamond),
    OP("(pattern)", 13, 36, gen_b_pattern),
    /* gen_ops_nn.c */
    OP("MatMul", 13, 4, gen_b_matmul),
    OP("Gemm", 13, 2, gen_b_gemm),
    OP("Conv", 13, 3, gen_b_conv),
    OP("MaxPool", 13, 1, gen_b_pool),
    OP("AveragePool", 13, 1, gen_b_pool),
    OP("GlobalAveragePool", 13, 1, gen_b_global_pool),
    OP("GlobalMaxPool", 13, 1, gen_b_global_pool),
    OP("BatchNormalization", 15, 2, gen_b_norm),
    OP("LayerNormalization", 17, 2, gen_b_norm),
    OP("InstanceNormalization", 13, 1, gen_b_norm),
    OP("GroupNormalization", 21, 1, gen_b_norm),
    OP("RMSNormalization", 23, 1, gen_b_norm),
    OP("LpNormalization", 13, 1, gen_b_norm),
    OP("LRN", 13, 1, gen_b_norm),
    OP("TopK", 13, 1, gen_b_topk),
    OP("Einsum", 13, 1, gen_b_einsum),
    /* gen_ops_data.c */
    OP("Transpose", 13, 3, gen_b_transpose),
    OP("Reshape", 13, 3, gen_b_reshape),
    OP("Flatten", 13, 1, gen_b_flatten),
    OP("Squeeze", 13, 1, gen_b_squeeze),
    OP("Unsqueeze", 13, 1, gen_b_unsqueeze),
    OP("Concat", 13, 2, gen_b_concat),
    OP("Split", 13, 1, gen_b_split),
    OP("Slice", 13, 2, gen_b_slice),
    OP("Pad", 13, 1, gen_b_pad),
    OP("Tile", 13, 1, gen_b_tile),
    OP("Expand", 13, 1, gen_b_expand),
    OP("DepthToSpace", 13, 1, gen_b_d2s),
    OP("SpaceToDepth", 13, 1, gen_b_d2s),
    OP("Gather", 13, 2, gen_b_gather),
    OP("GatherElements", 13, 1, gen_b_gather_el),
    OP("GatherND", 13, 1, gen_b_gather_nd),
    OP("ScatterElements", 13, 1, gen_b_scatter_el),
    OP("ScatterND", 13, 1, gen_b_scatter_nd),
    OP("Trilu", 14, 1, gen_b_trilu),
    OP("OneHot", 13, 1, gen_b_onehot),
    OP("EyeLike", 13, 1, gen_b_eyelike),
    OP("Shape", 13, 1, gen_b_shape),
    OP("Size", 13, 1, gen_b_shape),
    OP("ConstantOfShape", 13, 1, gen_b_cos),
    OP("(shape chain)", 13, 1, gen_b_shapechain),
};
const int kiln_gen_n_ops = (int)(sizeof kiln_gen_ops / sizeof kiln_gen_ops[0]);
