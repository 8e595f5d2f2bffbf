/* Recurrent ops: RNN (1, 7, 14, 22), GRU (1, 3, 7, 14, 22), LSTM (1, 7, 14, 22).
 *
 * One driver runs every direction (forward, reverse, bidirectional) over the
 * sequence, in double, honouring sequence_lens (steps past a batch entry's length
 * give zeros in Y; Y_h/Y_c hold the state after its last step, zeros for a length of
 * 0), initial states, LSTM peepholes and input_forget (f = 1 - i), GRU
 * linear_before_reset, layout (14+) and clip. Where the spec is silent we follow
 * ONNX Runtime.
 * Gate layouts (ONNX): RNN [i], GRU [z r h], LSTM [i o f c]; peepholes [i o f].
 *
 * Activations: the `activations` list gives, per direction, RNN f, GRU f g, LSTM f g
 * h (defaults Tanh / Sigmoid Tanh / Sigmoid Tanh Tanh). Each activation that takes
 * an alpha (beta) consumes the next value of activation_alpha (activation_beta) in
 * list order, as ONNX Runtime does; missing values take the defaults of the
 * corresponding ONNX op. `clip` bounds the input of every activation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infer_internal.h"

typedef enum {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY,
  ACT_THRESH,
  ACT_STANH,
  ACT_HSIG,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS
} act_kind;

typedef struct act_fn {
  act_kind kind;
  double alpha, beta;
} act_fn;

static const struct {
  const char *name;
  act_kind kind;
  int nparams; /* 0, 1 (alpha) or 2 (alpha, beta) */
  double alpha, beta;
} act_table[] = {
    {"Relu", ACT_RELU, 0, 0, 0},
    {"Tanh", ACT_TANH, 0, 0, 0},
    {"Sigmoid", ACT_SIGMOID, 0, 0, 0},
    {"Affine", ACT_AFFINE, 2, 1.0, 0.0},
    {"LeakyRelu", ACT_LEAKY, 1, 0.01, 0},
    {"ThresholdedRelu", ACT_THRESH, 1, 1.0, 0},
    {"ScaledTanh", ACT_STANH, 2, 1.0, 1.0},
    {"HardSigmoid", ACT_HSIG, 2, 0.2, 0.5},
    {"Elu", ACT_ELU, 1, 1.0, 0},
    {"Softsign", ACT_SOFTSIGN, 0, 0, 0},
    {"Softplus", ACT_SOFTPLUS, 0, 0, 0},
};

static double act_apply(const act_fn *f, double x) {
  switch (f->kind) {
  case ACT_RELU: return x > 0 ? x : 0;
  case ACT_TANH: return tanh(x);
  case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case ACT_AFFINE: return f->alpha * x + f->beta;
  case ACT_LEAKY: return x >= 0 ? x : f->alpha * x;
  case ACT_THRESH: return x >= f->alpha ? x : 0; /* ">=" in the RNN ops' spec */
  case ACT_STANH: return f->alpha * tanh(f->beta * x);
  case ACT_HSIG: return fmax(0.0, fmin(1.0, f->alpha * x + f->beta));
  case ACT_ELU: return x >= 0 ? x : f->alpha * (exp(x) - 1);
  case ACT_SOFTSIGN: return x / (1 + fabs(x));
  case ACT_SOFTPLUS: return x > 30 ? x + log1p(exp(-x)) : log1p(exp(x));
  }
  return x;
}

typedef enum { CELL_RNN, CELL_GRU, CELL_LSTM } cell_kind;

typedef struct rnn {
  cell_kind kind;
  int ngates, nact, ndir;
  bool reverse_only, layout1, lbr, input_forget, has_clip;
  double clip;
  int64_t seq, batch, in, hid;
  act_fn act[2][3];
  /* inputs in double, canonical layouts */
  double *x;    /* [seq, batch, in] */
  double *w;    /* [ndir, G*hid, in] */
  double *r;    /* [ndir, G*hid, hid] */
  double *b;    /* [ndir, 2*G*hid] */
  double *p;    /* [ndir, 3*hid] */
  double *h0;   /* [ndir, batch, hid] */
  double *c0;   /* [ndir, batch, hid] */
  int64_t *len; /* [batch] */
  /* outputs in double, canonical layouts */
  double *y;  /* [seq, ndir, batch, hid] */
  double *yh; /* [ndir, batch, hid] */
  double *yc; /* [ndir, batch, hid] */
} rnn;

static void rnn_free(rnn *m) {
  free(m->x), free(m->w), free(m->r), free(m->b), free(m->p);
  free(m->h0), free(m->c0), free(m->len), free(m->y), free(m->yh), free(m->yc);
}

static kiln_status rnn_parse_acts(const kiln_eval_ctx *ctx, rnn *m) {
  static const char *defaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  const kiln_attr *acts = kiln_node_attr(ctx->node, "activations");
  const float *al, *be;
  int nal, nbe, ial = 0, ibe = 0;
  KILN_TRY(kiln_node_floats(ctx->node, "activation_alpha", &al, &nal));
  KILN_TRY(kiln_node_floats(ctx->node, "activation_beta", &be, &nbe));
  int given = acts && acts->kind == KILN_ATTR_STRINGS ? acts->n : 0;
  if (given && given != m->nact && given != m->nact * m->ndir)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "activations has %d entries, expected %d", given,
                           m->nact * m->ndir);
  for (int d = 0; d < m->ndir; d++) {
    for (int j = 0; j < m->nact; j++) {
      const char *name = given ? acts->strings[(d * m->nact + j) % given] : defaults[m->kind][j];
      size_t k = 0, nt = sizeof act_table / sizeof act_table[0];
      while (k < nt && strcasecmp(act_table[k].name, name)) k++;
      if (k == nt) return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown activation '%s'", name);
      act_fn *f = &m->act[d][j];
      f->kind = act_table[k].kind;
      f->alpha = act_table[k].alpha;
      f->beta = act_table[k].beta;
      if (act_table[k].nparams >= 1 && ial < nal) f->alpha = al[ial++];
      if (act_table[k].nparams >= 2 && ibe < nbe) f->beta = be[ibe++];
    }
  }
  return KILN_OK;
}

static kiln_status rnn_parse_attrs(const kiln_eval_ctx *ctx, rnn *m) {
  const char *dir;
  KILN_TRY(kiln_node_string(ctx->node, "direction", "forward", &dir));
  if (!strcmp(dir, "bidirectional")) m->ndir = 2;
  else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) m->ndir = 1;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown direction '%s'", dir);
  m->reverse_only = !strcmp(dir, "reverse");
  int64_t v;
  KILN_TRY(kiln_node_int(ctx->node, "layout", 0, &v));
  m->layout1 = v != 0;
  KILN_TRY(kiln_node_int(ctx->node, "linear_before_reset", 0, &v));
  m->lbr = v != 0;
  KILN_TRY(kiln_node_int(ctx->node, "input_forget", 0, &v));
  m->input_forget = v != 0;
  m->has_clip = kiln_node_attr(ctx->node, "clip") != NULL;
  float clip = 0;
  KILN_TRY(kiln_node_float(ctx->node, "clip", 0, &clip));
  m->clip = clip;
  if (m->has_clip && !(clip > 0))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "clip must be positive");
  return rnn_parse_acts(ctx, m);
}

/* Loads input i as doubles after checking its shape is exactly dims (rank n). */
static kiln_status rnn_load(const kiln_eval_ctx *ctx, int i, int n, const int64_t *dims,
                            double **out) {
  const kiln_tensor *t = kiln_eval_in(ctx, i);
  bool ok = t && t->rank == n;
  for (int k = 0; ok && k < n; k++) ok = t->dims[k] == dims[k];
  if (!ok) {
    char buf[64];
    return kiln_eval_error(
        ctx, KILN_ERR_INVALID, "input %d has shape %s, expected rank %d [%lld,...]", i,
        t ? kiln_tensor_type_str(t, buf, sizeof buf) : "none", n, (long long)dims[0]);
  }
  return kiln_kern_load_all_f64(ctx, t, out);
}

static double *rnn_zeros(int64_t n) {
  return kiln_xcalloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* Swaps the first two axes of a [a, b, rest] array (layout 1 <-> canonical). */
static void rnn_swap01(double *d, int64_t a, int64_t b, int64_t rest) {
  double *tmp = kiln_xmalloc((size_t)(a * b * rest + 1) * sizeof(double));
  for (int64_t i = 0; i < a; i++)
    for (int64_t j = 0; j < b; j++)
      memcpy(tmp + (j * a + i) * rest, d + (i * b + j) * rest, (size_t)rest * sizeof(double));
  memcpy(d, tmp, (size_t)(a * b * rest) * sizeof(double));
  free(tmp);
}

static kiln_status rnn_load_state(const kiln_eval_ctx *ctx, int i, rnn *m, double **out) {
  int64_t sdims[3] = {m->ndir, m->batch, m->hid};
  if (m->layout1) sdims[0] = m->batch, sdims[1] = m->ndir;
  if (!kiln_eval_in(ctx, i)) {
    *out = rnn_zeros(m->ndir * m->batch * m->hid);
    return KILN_OK;
  }
  KILN_TRY(rnn_load(ctx, i, 3, sdims, out));
  if (m->layout1) rnn_swap01(*out, m->batch, m->ndir, m->hid);
  return KILN_OK;
}

static kiln_status rnn_load_lens(const kiln_eval_ctx *ctx, int i, rnn *m) {
  const kiln_tensor *t = kiln_eval_in(ctx, i);
  m->len = kiln_xmalloc((size_t)(m->batch + 1) * sizeof(int64_t));
  for (int64_t b = 0; b < m->batch; b++) m->len[b] = m->seq;
  if (!t) return KILN_OK;
  if (t->rank != 1 || t->dims[0] != m->batch || !kiln_dtype_is_int(t->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "sequence_lens must be an int vector of %lld",
                           (long long)m->batch);
  for (int64_t b = 0; b < m->batch; b++) {
    m->len[b] = kiln_load_i64(t->dtype, t->data, (size_t)b);
    if (m->len[b] < 0 || m->len[b] > m->seq)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "sequence_lens[%lld] = %lld out of [0, %lld]",
                             (long long)b, (long long)m->len[b], (long long)m->seq);
  }
  return KILN_OK;
}

static kiln_status rnn_load_inputs(const kiln_eval_ctx *ctx, rnn *m) {
  const kiln_tensor *x, *w;
  KILN_TRY(kiln_eval_in_req(ctx, 0, &x));
  KILN_TRY(kiln_eval_in_req(ctx, 1, &w));
  KILN_TRY(kiln_kern_need_float(ctx, x, "X"));
  if (x->rank != 3 || w->rank != 3)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X and W must have rank 3");
  m->seq = m->layout1 ? x->dims[1] : x->dims[0];
  m->batch = m->layout1 ? x->dims[0] : x->dims[1];
  m->in = x->dims[2];
  int64_t gh = w->dims[1];
  if (gh % m->ngates)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "W dim 1 (%lld) not a multiple of %d",
                           (long long)gh, m->ngates);
  m->hid = gh / m->ngates;
  int64_t hs;
  KILN_TRY(kiln_node_int(ctx->node, "hidden_size", m->hid, &hs));
  if (hs != m->hid)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "hidden_size %lld does not match W",
                           (long long)hs);
  KILN_TRY(rnn_load(ctx, 0, 3, x->dims, &m->x));
  if (m->layout1) rnn_swap01(m->x, m->batch, m->seq, m->in);
  KILN_TRY(rnn_load(ctx, 1, 3, (int64_t[]){m->ndir, gh, m->in}, &m->w));
  KILN_TRY(rnn_load(ctx, 2, 3, (int64_t[]){m->ndir, gh, m->hid}, &m->r));
  if (kiln_eval_in(ctx, 3)) KILN_TRY(rnn_load(ctx, 3, 2, (int64_t[]){m->ndir, 2 * gh}, &m->b));
  else m->b = rnn_zeros(m->ndir * 2 * gh);
  KILN_TRY(rnn_load_lens(ctx, 4, m));
  KILN_TRY(rnn_load_state(ctx, 5, m, &m->h0));
  if (m->kind == CELL_LSTM) {
    KILN_TRY(rnn_load_state(ctx, 6, m, &m->c0));
    if (kiln_eval_in(ctx, 7))
      KILN_TRY(rnn_load(ctx, 7, 2, (int64_t[]){m->ndir, 3 * m->hid}, &m->p));
    else m->p = rnn_zeros(m->ndir * 3 * m->hid);
  }
  return KILN_OK;
}

/* ---- one time step of one direction for one batch entry ---- */
typedef struct step_io {
  const double *x; /* [in] */
  double *h, *c;   /* [hid] state, updated in place */
  double *gates;   /* scratch [4*hid] */
  double *tmp;     /* scratch [hid] */
} step_io;

static double act(const rnn *m, int d, int j, double v) {
  if (m->has_clip) v = fmax(-m->clip, fmin(m->clip, v));
  return act_apply(&m->act[d][j], v);
}

/* gates[g*hid + k] = x . W[g*hid+k] + Wb + (h . R[g*hid+k] + Rb unless skip_r) */
static void rnn_gate_pre(const rnn *m, int d, int g, const step_io *io, bool with_r) {
  int64_t gh = m->ngates * m->hid;
  const double *w = m->w + d * gh * m->in, *r = m->r + d * gh * m->hid, *b = m->b + d * 2 * gh;
  for (int64_t k = g * m->hid; k < (g + 1) * m->hid; k++) {
    double s = b[k];
    for (int64_t i = 0; i < m->in; i++) s += io->x[i] * w[k * m->in + i];
    if (with_r) {
      s += b[gh + k];
      for (int64_t i = 0; i < m->hid; i++) s += io->h[i] * r[k * m->hid + i];
    }
    io->gates[k] = s;
  }
}

static void rnn_step_rnn(const rnn *m, int d, step_io *io) {
  rnn_gate_pre(m, d, 0, io, true);
  for (int64_t k = 0; k < m->hid; k++) io->h[k] = act(m, d, 0, io->gates[k]);
}

static void rnn_step_gru(const rnn *m, int d, step_io *io) {
  int64_t H = m->hid, gh = 3 * H;
  const double *r = m->r + d * gh * H, *rb = m->b + d * 2 * gh + gh;
  rnn_gate_pre(m, d, 0, io, true);  /* z */
  rnn_gate_pre(m, d, 1, io, true);  /* r */
  rnn_gate_pre(m, d, 2, io, false); /* x . Wh + Wbh */
  double *z = io->gates, *rg = io->gates + H, *hh = io->gates + 2 * H;
  for (int64_t k = 0; k < H; k++) z[k] = act(m, d, 0, z[k]), rg[k] = act(m, d, 0, rg[k]);
  for (int64_t k = 0; k < H; k++) {
    const double *rrow = r + (2 * H + k) * H;
    double s = 0;
    if (m->lbr) {
      for (int64_t i = 0; i < H; i++) s += io->h[i] * rrow[i];
      s = rg[k] * (s + rb[2 * H + k]);
    } else {
      for (int64_t i = 0; i < H; i++) s += rg[i] * io->h[i] * rrow[i];
      s += rb[2 * H + k];
    }
    io->tmp[k] = act(m, d, 1, hh[k] + s);
  }
  for (int64_t k = 0; k < H; k++) io->h[k] = (1 - z[k]) * io->tmp[k] + z[k] * io->h[k];
}

static void rnn_step_lstm(const rnn *m, int d, step_io *io) {
  int64_t H = m->hid;
  for (int g = 0; g < 4; g++) rnn_gate_pre(m, d, g, io, true);
  const double *p = m->p + d * 3 * H; /* [i o f] */
  double *gi = io->gates, *go = io->gates + H, *gf = io->gates + 2 * H, *gc = io->gates + 3 * H;
  for (int64_t k = 0; k < H; k++) {
    double i = act(m, d, 0, gi[k] + p[k] * io->c[k]);
    double f = m->input_forget ? 1 - i : act(m, d, 0, gf[k] + p[2 * H + k] * io->c[k]);
    double c = act(m, d, 1, gc[k]);
    double cnew = f * io->c[k] + i * c;
    double o = act(m, d, 0, go[k] + p[H + k] * cnew);
    io->c[k] = cnew;
    io->h[k] = o * act(m, d, 2, cnew);
  }
}

static void rnn_run_dir(rnn *m, int d, bool reverse) {
  int64_t H = m->hid;
  step_io io;
  io.gates = kiln_xmalloc((size_t)(4 * H + 1) * sizeof(double));
  io.tmp = kiln_xmalloc((size_t)(H + 1) * sizeof(double));
  for (int64_t b = 0; b < m->batch; b++) {
    io.h = m->yh + (d * m->batch + b) * H;
    io.c = m->yc + (d * m->batch + b) * H;
    memcpy(io.h, m->h0 + (d * m->batch + b) * H, (size_t)H * sizeof(double));
    if (m->kind == CELL_LSTM)
      memcpy(io.c, m->c0 + (d * m->batch + b) * H, (size_t)H * sizeof(double));
    if (m->len[b] == 0) { /* no step: zero final states, as ONNX Runtime */
      memset(io.h, 0, (size_t)H * sizeof(double));
      memset(io.c, 0, (size_t)H * sizeof(double));
    }
    for (int64_t s = 0; s < m->len[b]; s++) {
      int64_t t = reverse ? m->len[b] - 1 - s : s;
      io.x = m->x + (t * m->batch + b) * m->in;
      if (m->kind == CELL_RNN) rnn_step_rnn(m, d, &io);
      else if (m->kind == CELL_GRU) rnn_step_gru(m, d, &io);
      else rnn_step_lstm(m, d, &io);
      memcpy(m->y + ((t * m->ndir + d) * m->batch + b) * H, io.h, (size_t)H * sizeof(double));
    }
  }
  free(io.gates);
  free(io.tmp);
}

/* Writes a canonical [a, b, rest] array as output i, swapping the first two axes first
 * when swap is set (layout 1). */
static kiln_status rnn_store(kiln_eval_ctx *ctx, int i, kiln_dtype dt, int rank,
                             const int64_t *dims, double *data, bool swap, int64_t a, int64_t b,
                             int64_t rest) {
  if (!kiln_kern_want_out(ctx, i)) return KILN_OK;
  if (swap) rnn_swap01(data, a, b, rest);
  kiln_tensor *t;
  KILN_TRY(kiln_eval_out(ctx, i, dt, rank, dims, &t));
  for (int64_t k = 0; k < t->numel; k++) kiln_store_f64(dt, t->data, (size_t)k, data[k]);
  return KILN_OK;
}

static kiln_status rnn_outputs(kiln_eval_ctx *ctx, rnn *m, kiln_dtype dt) {
  int64_t S = m->seq, D = m->ndir, B = m->batch, H = m->hid;
  bool l1 = m->layout1;
  /* Y: [S, D, B, H] or (layout 1) [B, S, D, H] */
  int64_t ydims[4] = {S, D, B, H};
  if (l1) {
    ydims[0] = B, ydims[1] = S, ydims[2] = D;
    /* [S, D, B, H] -> [S, B, D, H] per time step, then swap S and B */
    for (int64_t t = 0; t < S; t++) rnn_swap01(m->y + t * D * B * H, D, B, H);
  }
  KILN_TRY(rnn_store(ctx, 0, dt, 4, ydims, m->y, l1, S, B, D * H));
  int64_t sdims[3] = {l1 ? B : D, l1 ? D : B, H};
  KILN_TRY(rnn_store(ctx, 1, dt, 3, sdims, m->yh, l1, D, B, H));
  if (m->kind == CELL_LSTM) KILN_TRY(rnn_store(ctx, 2, dt, 3, sdims, m->yc, l1, D, B, H));
  return KILN_OK;
}

static kiln_status rnn_run(kiln_eval_ctx *ctx, cell_kind kind) {
  rnn m;
  memset(&m, 0, sizeof m);
  m.kind = kind;
  m.ngates = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 3 : 4;
  m.nact = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 2 : 3;
  kiln_status st = rnn_parse_attrs(ctx, &m);
  if (!st) st = rnn_load_inputs(ctx, &m);
  if (!st) {
    int64_t sdb = m.ndir * m.batch * m.hid, ysz;
    st = kiln_kern_mul(ctx, m.seq, sdb, &ysz);
    if (!st) {
      m.y = rnn_zeros(ysz);
      m.yh = rnn_zeros(sdb);
      m.yc = rnn_zeros(sdb);
      for (int d = 0; d < m.ndir; d++) rnn_run_dir(&m, d, m.reverse_only || d == 1);
      st = rnn_outputs(ctx, &m, kiln_eval_in(ctx, 0)->dtype);
    }
  }
  rnn_free(&m);
  return st;
}

static kiln_status eval_rnn(kiln_eval_ctx *ctx) {
  return rnn_run(ctx, CELL_RNN);
}
static kiln_status eval_gru(kiln_eval_ctx *ctx) {
  return rnn_run(ctx, CELL_GRU);
}
static kiln_status eval_lstm(kiln_eval_ctx *ctx) {
  return rnn_run(ctx, CELL_LSTM);
}

/* ---- recurrent ---- */
static kiln_status infer_rnn(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0), *r = tin_ranked(ctx, 2);
  if (!x || x->rank != 3) return KILN_OK;
  bool l1 = attr_int(ctx, "layout", 0) != 0;
  int64_t ndir = !strcmp(attr_str(ctx, "direction", "forward"), "bidirectional") ? 2 : 1;
  int64_t hs = attr_int(ctx, "hidden_size", -1);
  kiln_dim hid = hs > 0 ? dval(hs) : r && r->rank == 3 ? r->dims[2] : dunk();
  kiln_dim seq = x->dims[l1 ? 1 : 0], batch = x->dims[l1 ? 0 : 1], nd = dval(ndir);
  kiln_dim y[4] = {seq, nd, batch, hid}, ys[3] = {nd, batch, hid};
  if (l1) y[0] = batch, y[1] = seq, y[2] = nd, ys[0] = batch, ys[1] = nd;
  set_out(ctx, 0, x->dtype, 4, y);
  set_out(ctx, 1, x->dtype, 3, ys);
  set_out(ctx, 2, x->dtype, 3, ys);
  return KILN_OK;
}

void kiln_seqmodel_register_rnn(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_RNN, eval_rnn, 3, 6, 0, 2);
  kiln_kern_set(table, KILN_OP_GRU, eval_gru, 3, 6, 0, 2);
  kiln_kern_set(table, KILN_OP_LSTM, eval_lstm, 3, 8, 0, 3);
  table[KILN_OP_RNN].infer = infer_rnn;
  table[KILN_OP_GRU].infer = infer_rnn;
  table[KILN_OP_LSTM].infer = infer_rnn;
}
