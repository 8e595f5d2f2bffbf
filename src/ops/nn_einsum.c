/* Einsum: a general equation over any number of operands, with "..." (broadcast, right-aligned
 * across operands), repeated labels within a term (diagonals) and the implicit output form
 * (the ellipsis dims, then the labels used once, in ASCII order). The kernel visits every
 * output element and, inside, every combination of the summed labels: a direct sum of products,
 * in double for floats and in wrapping 64-bit arithmetic for integers. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + KILN_MAX_RANK) /* letters, then ellipsis dims */
#define EIN_MAX_OPS 64

typedef struct ein_term {
  int n;                         /* labels in the term (an ellipsis expands to its dims) */
  int labels[KILN_MAX_RANK * 3]; /* parsed: at most 2*MAX_RANK; expanded: + MAX_RANK-1 */
  bool has_ellipsis;
} ein_term;

typedef struct ein_plan {
  int n_ops, n_ell; /* operands, ellipsis rank */
  ein_term in[EIN_MAX_OPS], out;
  int64_t size[EIN_LABELS];
  bool used[EIN_LABELS];
  int order[EIN_LABELS], n_order, n_outl; /* output labels, then summed labels */
  int64_t stride[EIN_MAX_OPS][EIN_LABELS];
} ein_plan;

static int letter_id(char c) {
  return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A' : -1;
}

/* Parses one term from s[0..len); ellipsis dims are added later, once their rank is known:
 * here an ellipsis is stored as label -1. */
static bool parse_term(const char *s, size_t len, ein_term *t) {
  memset(t, 0, sizeof *t);
  for (size_t i = 0; i < len; i++) {
    if (isspace((unsigned char)s[i])) continue;
    if (s[i] == '.') {
      if (t->has_ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') return false;
      t->has_ellipsis = true;
      i += 2;
      if (t->n >= KILN_MAX_RANK * 2) return false;
      t->labels[t->n++] = -1;
      continue;
    }
    int id = letter_id(s[i]);
    if (id < 0 || t->n >= KILN_MAX_RANK * 2) return false;
    t->labels[t->n++] = id;
  }
  return true;
}

/* Replaces the -1 placeholder of t by `ell` ellipsis labels (the last `ell` of n_ell). */
static void expand_ellipsis(ein_term *t, int ell, int n_ell) {
  int out[KILN_MAX_RANK * 3], n = 0;
  for (int i = 0; i < t->n; i++) {
    if (t->labels[i] != -1) {
      out[n++] = t->labels[i];
      continue;
    }
    for (int e = 0; e < ell; e++) out[n++] = EIN_LETTERS + (n_ell - ell) + e;
  }
  memcpy(t->labels, out, sizeof(int) * (size_t)n);
  t->n = n;
}

static kiln_status ein_parse(kiln_eval_ctx *ctx, const char *eq, ein_plan *p) {
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  p->n_ops = 0;
  for (size_t start = 0;;) {
    size_t end = start;
    while (end < lhs_len && eq[end] != ',') end++;
    if (p->n_ops >= EIN_MAX_OPS || !parse_term(eq + start, end - start, &p->in[p->n_ops]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad equation '%s'", eq);
    p->n_ops++;
    if (end >= lhs_len) break;
    start = end + 1;
  }
  memset(&p->out, 0, sizeof p->out);
  p->out.n = -1; /* implicit */
  if (arrow && !parse_term(arrow + 2, strlen(arrow + 2), &p->out))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad equation '%s'", eq);
  if (p->n_ops != ctx->n_in)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "equation has %d operands, node has %d inputs",
                           p->n_ops, ctx->n_in);
  return KILN_OK;
}

/* Sizes of the labels from the operand shapes (ranks[k], dims[k]); broadcast dims (1) get
 * stride 0. A dim < 0 (unknown, for inference) matches any size. */
static kiln_status ein_bind(kiln_eval_ctx *ctx, const int *ranks, const int64_t *const *dims,
                            ein_plan *p) {
  p->n_ell = 0;
  for (int k = 0; k < p->n_ops; k++) {
    int ell = ranks[k] - (p->in[k].n - (p->in[k].has_ellipsis ? 1 : 0));
    if (ell < 0 || (ell > 0 && !p->in[k].has_ellipsis))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "operand %d: rank %d does not match its term",
                             k, ranks[k]);
    if (ell > p->n_ell) p->n_ell = ell;
  }
  for (int l = 0; l < EIN_LABELS; l++) p->size[l] = 1, p->used[l] = false;
  for (int k = 0; k < p->n_ops; k++) {
    int ell = ranks[k] - (p->in[k].n - (p->in[k].has_ellipsis ? 1 : 0));
    expand_ellipsis(&p->in[k], ell, p->n_ell);
    int64_t st[KILN_MAX_RANK];
    kiln_strides(ranks[k], dims[k], st);
    for (int l = 0; l < EIN_LABELS; l++) p->stride[k][l] = 0;
    for (int i = 0; i < p->in[k].n; i++) {
      int l = p->in[k].labels[i];
      if (l < 0 || l >= EIN_LABELS) return kiln_eval_error(ctx, KILN_ERR_INTERNAL, "label");
      int64_t e = dims[k][i];
      if (e < 0) {
        if (!p->used[l]) p->size[l] = -1;
        p->used[l] = true;
        continue;
      }
      if (p->used[l] && p->size[l] >= 0 && e != p->size[l] && e != 1 && p->size[l] != 1)
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "label sizes %lld and %lld differ",
                               (long long)e, (long long)p->size[l]);
      if (e != 1) p->size[l] = e, p->stride[k][l] += st[i];
      p->used[l] = true;
    }
  }
  return KILN_OK;
}

/* Output labels (explicit, or implicit) then summed labels, into p->order. */
static kiln_status ein_order(kiln_eval_ctx *ctx, ein_plan *p) {
  int count[EIN_LABELS] = {0};
  for (int k = 0; k < p->n_ops; k++)
    for (int i = 0; i < p->in[k].n; i++) count[p->in[k].labels[i]]++;
  bool in_out[EIN_LABELS] = {false};
  if (p->out.n >= 0) {
    expand_ellipsis(&p->out, p->out.has_ellipsis ? p->n_ell : 0, p->n_ell);
  } else {
    p->out.n = 0;
    for (int e = 0; e < p->n_ell; e++) p->out.labels[p->out.n++] = EIN_LETTERS + e;
    for (int k = 0; k < EIN_LETTERS; k++) { /* ASCII order: 'A'..'Z' (ids 26..51), 'a'..'z' */
      int id = (k + 26) % EIN_LETTERS;
      if (count[id] != 1) continue;
      if (p->out.n >= KILN_MAX_RANK)
        return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "output rank above %d", KILN_MAX_RANK);
      p->out.labels[p->out.n++] = id;
    }
  }
  p->n_order = 0;
  for (int i = 0; i < p->out.n; i++) {
    int l = p->out.labels[i];
    if (in_out[l] || !p->used[l])
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "output label repeated or not in the inputs");
    in_out[l] = true;
    p->order[p->n_order++] = l;
  }
  p->n_outl = p->n_order;
  for (int l = 0; l < EIN_LABELS; l++)
    if (p->used[l] && !in_out[l]) p->order[p->n_order++] = l;
  return KILN_OK;
}

typedef struct ein_vals {
  double *f[EIN_MAX_OPS];
  int64_t *i[EIN_MAX_OPS];
  bool is_int;
} ein_vals;

/* Sum over the summed labels for one output element whose operand offsets are base[]. */
static void ein_sum(const ein_plan *p, const ein_vals *v, const int64_t *base, double *out_f,
                    int64_t *out_i) {
  int ns = p->n_order - p->n_outl;
  const int *sl = p->order + p->n_outl;
  int64_t idx[EIN_LABELS] = {0}, off[EIN_MAX_OPS], total = 1;
  for (int j = 0; j < ns; j++) total *= p->size[sl[j]];
  memcpy(off, base, sizeof(int64_t) * (size_t)p->n_ops);
  double accf = 0;
  uint64_t acci = 0;
  for (int64_t t = 0; t < total; t++) {
    if (v->is_int) {
      uint64_t prod = 1;
      for (int k = 0; k < p->n_ops; k++) prod *= (uint64_t)v->i[k][off[k]];
      acci += prod;
    } else {
      double prod = 1;
      for (int k = 0; k < p->n_ops; k++) prod *= v->f[k][off[k]];
      accf += prod;
    }
    for (int j = ns - 1; j >= 0; j--) {
      for (int k = 0; k < p->n_ops; k++) off[k] += p->stride[k][sl[j]];
      if (++idx[j] < p->size[sl[j]]) break;
      for (int k = 0; k < p->n_ops; k++) off[k] -= p->stride[k][sl[j]] * idx[j];
      idx[j] = 0;
    }
  }
  *out_f = accf;
  *out_i = (int64_t)acci;
}

static void ein_run(const ein_plan *p, const ein_vals *v, int64_t n_out, double *yf, int64_t *yi) {
  int64_t idx[EIN_LABELS] = {0}, off[EIN_MAX_OPS] = {0};
  for (int64_t o = 0; o < n_out; o++) {
    double f;
    int64_t i;
    ein_sum(p, v, off, &f, &i);
    if (v->is_int) yi[o] = i;
    else yf[o] = f;
    for (int j = p->n_outl - 1; j >= 0; j--) {
      int l = p->order[j];
      for (int k = 0; k < p->n_ops; k++) off[k] += p->stride[k][l];
      if (++idx[j] < p->size[l]) break;
      for (int k = 0; k < p->n_ops; k++) off[k] -= p->stride[k][l] * idx[j];
      idx[j] = 0;
    }
  }
}

static kiln_status ein_compute(kiln_eval_ctx *ctx, const ein_plan *p, const kiln_tensor *const *x,
                               kiln_tensor *y) {
  ein_vals v;
  memset(&v, 0, sizeof v);
  v.is_int = kiln_dtype_is_int(y->dtype);
  double *yf = NULL;
  int64_t *yi = NULL;
  kiln_status st = KILN_OK;
  for (int k = 0; !st && k < p->n_ops; k++)
    st = v.is_int ? kiln_nn_load_i64(ctx, x[k], &v.i[k]) : kiln_nn_load_f64(ctx, x[k], &v.f[k]);
  if (!st)
    st = kiln_nn_alloc(ctx, y->numel, v.is_int ? sizeof(int64_t) : sizeof(double),
                       v.is_int ? (void **)&yi : (void **)&yf);
  if (!st) {
    ein_run(p, &v, y->numel, yf, yi);
    if (v.is_int) kiln_nn_store_i64(y, yi);
    else kiln_nn_store_f64(y, yf);
  }
  for (int k = 0; k < p->n_ops; k++) free(v.f[k]), free(v.i[k]);
  free(yf), free(yi);
  return st;
}

static kiln_status eval_einsum(kiln_eval_ctx *ctx) {
  const char *eq;
  KILN_TRY(kiln_node_string(ctx->node, "equation", "", &eq));
  if (ctx->n_in > EIN_MAX_OPS || ctx->n_in < 1)
    return kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "%d operands", ctx->n_in);
  const kiln_tensor *x[EIN_MAX_OPS];
  for (int k = 0; k < ctx->n_in; k++) {
    KILN_TRY(kiln_eval_in_req(ctx, k, &x[k]));
    if (x[k]->dtype != x[0]->dtype)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "operand dtypes differ");
  }
  if (!kiln_dtype_is_float(x[0]->dtype) && !kiln_dtype_is_int(x[0]->dtype))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "unsupported dtype %s",
                           kiln_dtype_name(x[0]->dtype));
  int ranks[EIN_MAX_OPS];
  const int64_t *dims_of[EIN_MAX_OPS];
  for (int k = 0; k < ctx->n_in; k++) ranks[k] = x[k]->rank, dims_of[k] = x[k]->dims;
  ein_plan *p = kiln_xcalloc(1, sizeof *p);
  kiln_status st = ein_parse(ctx, eq, p);
  if (!st) st = ein_bind(ctx, ranks, dims_of, p);
  if (!st) st = ein_order(ctx, p);
  if (!st && p->out.n > KILN_MAX_RANK)
    st = kiln_eval_error(ctx, KILN_ERR_UNSUPPORTED, "output rank %d", p->out.n);
  kiln_tensor *y;
  if (!st) {
    int64_t dims[KILN_MAX_RANK];
    for (int i = 0; i < p->out.n; i++) dims[i] = p->size[p->out.labels[i]];
    st = kiln_eval_out(ctx, 0, x[0]->dtype, p->out.n, dims, &y);
  }
  if (!st) st = ein_compute(ctx, p, x, y);
  free(p);
  return st;
}

static kiln_status infer_einsum(kiln_infer_ctx *ctx) {
  if (ctx->n_in < 1 || ctx->n_in > EIN_MAX_OPS) return KILN_OK;
  int ranks[EIN_MAX_OPS];
  int64_t dims[EIN_MAX_OPS][KILN_MAX_RANK];
  const int64_t *dims_of[EIN_MAX_OPS];
  for (int k = 0; k < ctx->n_in; k++) {
    const kiln_type *t = kiln_nn_infer_in(ctx, k);
    if (!t) return KILN_OK;
    ranks[k] = t->rank;
    for (int d = 0; d < t->rank; d++) dims[k][d] = t->dims[d].value;
    dims_of[k] = dims[k];
  }
  const char *eq;
  KILN_TRY(kiln_node_string(ctx->node, "equation", "", &eq));
  kiln_eval_ctx ec = {.graph = ctx->graph, .node = ctx->node, .n_in = ctx->n_in};
  ein_plan *p = kiln_xcalloc(1, sizeof *p);
  kiln_status st = ein_parse(&ec, eq, p);
  if (!st) st = ein_bind(&ec, ranks, dims_of, p);
  if (!st) st = ein_order(&ec, p);
  if (!st && p->out.n <= KILN_MAX_RANK) {
    kiln_type t = kiln_type_tensor(ctx->in[0]->dtype, 0, NULL);
    t.rank = p->out.n;
    for (int i = 0; i < p->out.n; i++) {
      t.dims[i].value = p->size[p->out.labels[i]];
      t.dims[i].sym = NULL;
    }
    ctx->out[0] = t;
  }
  free(p);
  return st;
}

void kiln_nn_register_einsum(kiln_op_impl *table) {
  kiln_nn_set(table, KILN_OP_Einsum, eval_einsum, infer_einsum, 1, -1, 1, 1);
}
