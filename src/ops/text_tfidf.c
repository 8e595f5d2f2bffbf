/* TfIdfVectorizer (9): counts the n-grams of a pool in each row of X ([C] or [N, C],
 * int32 / int64 / string) and weights the counts.
 *
 * The pool holds the 1-grams, then the 2-grams, ... (ngram_counts gives where each
 * size starts); n-gram i lands in output column ngram_indexes[i]. Only sizes in
 * [min_gram_length, max_gram_length] are counted. An n-gram may skip up to
 * max_skip_count items between its elements (a fixed stride d = skip + 1 for the
 * whole n-gram); 1-grams are counted once, not once per stride, as in ONNX Runtime.
 * TF gives counts; IDF gives weights[col] (1 when no weights) where the count is
 * non-zero; TFIDF gives weights[col] * count. */
#include <stdlib.h>
#include <string.h>

#include "infer_internal.h"

typedef struct tfidf {
  const kiln_tensor *x;
  bool strings;
  const int64_t *pool_i;
  const char *const *pool_s;
  int npool;
  const int64_t *counts, *indexes;
  int ncounts, nindexes;
  const float *weights;
  int nweights;
  int64_t minn, maxn, maxskip, out_size;
  int mode; /* 0 TF, 1 IDF, 2 TFIDF */
} tfidf;

static kiln_status tfidf_mode(kiln_eval_ctx *ctx, tfidf *t) {
  const char *mode;
  KILN_TRY(kiln_node_string(ctx->node, "mode", "TF", &mode));
  if (!strcmp(mode, "TF")) t->mode = 0;
  else if (!strcmp(mode, "IDF")) t->mode = 1;
  else if (!strcmp(mode, "TFIDF")) t->mode = 2;
  else return kiln_eval_error(ctx, KILN_ERR_INVALID, "unknown mode '%s'", mode);
  return KILN_OK;
}

static kiln_status tfidf_pool(kiln_eval_ctx *ctx, tfidf *t) {
  const kiln_attr *ps = kiln_node_attr(ctx->node, "pool_strings");
  int ni;
  KILN_TRY(kiln_node_ints(ctx->node, "pool_int64s", &t->pool_i, &ni));
  if ((ps != NULL) == (ni >= 0))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "exactly one of pool_int64s / pool_strings");
  if (ps) {
    if (ps->kind != KILN_ATTR_STRINGS)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "pool_strings must be strings");
    t->strings = true, t->pool_s = ps->strings, t->npool = ps->n;
  } else {
    t->npool = ni;
  }
  if (t->strings != (t->x->dtype == KILN_STRING))
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X type does not match the pool type");
  return KILN_OK;
}

static kiln_status tfidf_parse(kiln_eval_ctx *ctx, tfidf *t) {
  KILN_TRY(tfidf_mode(ctx, t));
  KILN_TRY(kiln_node_int(ctx->node, "min_gram_length", 0, &t->minn));
  KILN_TRY(kiln_node_int(ctx->node, "max_gram_length", 0, &t->maxn));
  KILN_TRY(kiln_node_int(ctx->node, "max_skip_count", 0, &t->maxskip));
  if (t->minn < 1 || t->maxn < t->minn || t->maxskip < 0)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad gram lengths or max_skip_count");
  KILN_TRY(kiln_node_ints(ctx->node, "ngram_counts", &t->counts, &t->ncounts));
  KILN_TRY(kiln_node_ints(ctx->node, "ngram_indexes", &t->indexes, &t->nindexes));
  KILN_TRY(kiln_node_floats(ctx->node, "weights", &t->weights, &t->nweights));
  KILN_TRY(tfidf_pool(ctx, t));
  if (t->ncounts < 1 || t->nindexes < 1)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "ngram_counts and ngram_indexes are required");
  for (int i = 0; i < t->ncounts; i++)
    if (t->counts[i] < 0 || t->counts[i] > t->npool || (i && t->counts[i] < t->counts[i - 1]))
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "ngram_counts must be increasing in the pool");
  t->out_size = 0;
  for (int i = 0; i < t->nindexes; i++) {
    if (t->indexes[i] < 0 || t->indexes[i] >= (int64_t)1 << 31)
      return kiln_eval_error(ctx, KILN_ERR_INVALID, "bad ngram_indexes value");
    if (t->indexes[i] + 1 > t->out_size) t->out_size = t->indexes[i] + 1;
  }
  return KILN_OK;
}

static bool tfidf_eq(const tfidf *t, int64_t xi, int64_t pi) {
  if (t->strings) {
    const char *s = ((char *const *)t->x->data)[xi];
    return !strcmp(s ? s : "", t->pool_s[pi]);
  }
  return kiln_load_i64(t->x->dtype, t->x->data, (size_t)xi) == t->pool_i[pi];
}

/* Counts the n-grams of size n (pool items [beg, end)) in one row with stride d.
 * `id0` is the index of the first of them among all n-grams. */
static kiln_status tfidf_count(kiln_eval_ctx *ctx, const tfidf *t, int64_t row, int64_t len,
                               int64_t n, int64_t d, int64_t beg, int64_t end, int64_t id0,
                               double *freq) {
  for (int64_t s = 0; s + (n - 1) * d < len; s++) {
    for (int64_t g = 0; beg + (g + 1) * n <= end; g++) {
      bool eq = true;
      for (int64_t k = 0; k < n && eq; k++)
        eq = tfidf_eq(t, row * len + s + k * d, beg + g * n + k);
      if (!eq) continue;
      int64_t id = id0 + g;
      if (id >= t->nindexes)
        return kiln_eval_error(ctx, KILN_ERR_INVALID, "n-gram %lld has no ngram_indexes entry",
                               (long long)id);
      freq[t->indexes[id]] += 1;
      break; /* a duplicate n-gram in the pool counts once, like the first match */
    }
  }
  return KILN_OK;
}

static kiln_status tfidf_row(kiln_eval_ctx *ctx, const tfidf *t, int64_t row, int64_t len,
                             double *freq) {
  int64_t id0 = 0;
  for (int i = 0; i < t->ncounts; i++) {
    int64_t n = i + 1, beg = t->counts[i];
    int64_t end = i + 1 < t->ncounts ? t->counts[i + 1] : t->npool;
    if (n >= t->minn && n <= t->maxn) {
      int64_t maxd = n == 1 ? 1 : t->maxskip + 1;
      for (int64_t d = 1; d <= maxd; d++)
        KILN_TRY(tfidf_count(ctx, t, row, len, n, d, beg, end, id0, freq));
    }
    id0 += (end - beg) / n;
  }
  return KILN_OK;
}

static void tfidf_weigh(const tfidf *t, const double *freq, kiln_tensor *y, int64_t row) {
  for (int64_t c = 0; c < t->out_size; c++) {
    double f = freq[c], w = c < t->nweights ? t->weights[c] : 1.0, v = f;
    if (t->mode == 1) v = f > 0 ? w : 0;
    else if (t->mode == 2) v = w * f;
    kiln_store_f64(y->dtype, y->data, (size_t)(row * t->out_size + c), v);
  }
}

static kiln_status eval_tfidf(kiln_eval_ctx *ctx) {
  tfidf t;
  memset(&t, 0, sizeof t);
  KILN_TRY(kiln_eval_in_req(ctx, 0, &t.x));
  const kiln_tensor *x = t.x;
  if (x->rank != 1 && x->rank != 2)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X must be [C] or [N, C]");
  if (x->dtype != KILN_STRING && x->dtype != KILN_I32 && x->dtype != KILN_I64)
    return kiln_eval_error(ctx, KILN_ERR_INVALID, "X must be string, int32 or int64");
  KILN_TRY(tfidf_parse(ctx, &t));
  int64_t rows = x->rank == 2 ? x->dims[0] : 1, len = x->dims[x->rank - 1];
  kiln_tensor *y;
  if (x->rank == 2) KILN_TRY(kiln_eval_out(ctx, 0, KILN_F32, 2, (int64_t[]){rows, t.out_size}, &y));
  else KILN_TRY(kiln_eval_out(ctx, 0, KILN_F32, 1, &t.out_size, &y));
  double *freq = kiln_xmalloc((size_t)(t.out_size + 1) * sizeof(double));
  kiln_status st = KILN_OK;
  for (int64_t r = 0; r < rows && !st; r++) {
    memset(freq, 0, (size_t)t.out_size * sizeof(double));
    st = tfidf_row(ctx, &t, r, len, freq);
    if (!st) tfidf_weigh(&t, freq, y, r);
  }
  free(freq);
  return st;
}

/* ---- inference ---- */
static kiln_status infer_tfidf(kiln_infer_ctx *ctx) {
  const kiln_type *x = tin_ranked(ctx, 0);
  const int64_t *idx;
  int n;
  kiln_status st = kiln_node_ints(ctx->node, "ngram_indexes", &idx, &n);
  if (st) kiln_status_free(st), n = -1;
  int64_t size = -1;
  for (int i = 0; i < n; i++) size = idx[i] + 1 > size ? idx[i] + 1 : size;
  kiln_dim d = size > 0 ? dval(size) : dunk();
  if (x && x->rank == 2) set_out(ctx, 0, KILN_F32, 2, (kiln_dim[]){x->dims[0], d});
  else set_out(ctx, 0, KILN_F32, 1, &d);
  return KILN_OK;
}

void kiln_text_register_tfidf(kiln_op_impl *table) {
  kiln_kern_set(table, KILN_OP_TfIdfVectorizer, eval_tfidf, 1, 1, 1, 1);
  table[KILN_OP_TfIdfVectorizer].infer = infer_tfidf;
}
