/* Unit tests of the control family: If, Loop, Scan, the sequence ops and the optional
 * ops. Each test builds a graph (with subgraphs where needed), runs it in the reference
 * interpreter and checks the values, including the errors for bad positions and kinds. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "harness.h"
#include "ops/ops.h"

/* ---- helpers ---- */
static kiln_tensor *mkf(int rank, const int64_t *dims, const double *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(KILN_F32, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) kiln_store_f64(KILN_F32, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *mki(kiln_dtype dt, int rank, const int64_t *dims, const int64_t *v) {
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(dt, rank, dims, &t)) abort();
  for (int64_t i = 0; i < t->numel; i++) kiln_store_i64(dt, t->data, (size_t)i, v[i]);
  return t;
}

static kiln_tensor *scalar_i64(int64_t v) {
  return mki(KILN_I64, 0, NULL, &v);
}
static kiln_tensor *scalar_bool(bool v) {
  int64_t x = v;
  return mki(KILN_BOOL, 0, NULL, &x);
}

static int cnst(kiln_graph *g, const char *name, kiln_tensor *t) {
  int id = -1;
  if (kiln_graph_add_const(g, name, t, &id)) abort();
  return id;
}

/* Adds a node with n_in inputs and n_out outputs named by outs; returns its id. */
static int node(kiln_graph *g, const char *op, int n_in, const int *in, int n_out,
                const char *const *outs, int *out_ids) {
  kiln_status st = kiln_graph_add_node(g, op, "", op, n_in, in, n_out, outs, out_ids);
  if (st) {
    fprintf(stderr, "%s\n", kiln_status_message(st));
    abort();
  }
  return kiln_graph_last_node(g);
}

static int node1(kiln_graph *g, const char *op, int n_in, const int *in, const char *out) {
  int id;
  node(g, op, n_in, in, 1, (const char *const[]){out}, &id);
  return id;
}

static void attr_int(kiln_graph *g, int nd, const char *name, int64_t v) {
  kiln_node_add_attr(g, nd, name, KILN_ATTR_INT)->i = v;
}

static void attr_ints(kiln_graph *g, int nd, const char *name, int n, const int64_t *v) {
  kiln_attr *a = kiln_node_add_attr(g, nd, name, KILN_ATTR_INTS);
  a->n = n;
  a->ints = kiln_graph_alloc(g, (size_t)n * sizeof(int64_t));
  memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}

static void attr_graph(kiln_graph *g, int nd, const char *name, kiln_graph *sub) {
  kiln_node_add_attr(g, nd, name, KILN_ATTR_GRAPH)->g = sub;
}

static kiln_graph *new_graph(int64_t opset) {
  kiln_graph *g = kiln_graph_new("t");
  kiln_graph_set_opset(g, "", opset);
  return g;
}

static kiln_type tt(kiln_dtype dt) {
  return kiln_type_tensor(dt, -1, NULL);
}

/* Runs g on the given values (freed afterwards); outputs in out (caller frees). */
static kiln_status run(kiln_graph *g, int n_in, kiln_val **in, kiln_val **out) {
  for (int i = 0; i < g->outputs.len; i++) out[i] = NULL;
  kiln_status st = kiln_interp_run(g, NULL, n_in, in, out);
  for (int i = 0; i < n_in; i++) kiln_val_free(in[i]);
  return st;
}

static void free_outs(kiln_graph *g, kiln_val **out) {
  for (int i = 0; i < g->outputs.len; i++) kiln_val_free(out[i]);
  kiln_graph_free(g);
}

/* Whether v is an f32/i64 tensor of the given shape and values. */
static bool is_tensor(const kiln_val *v, kiln_dtype dt, int rank, const int64_t *dims,
                      const double *vals) {
  if (!v || v->kind != KILN_TYPE_TENSOR || !v->t || v->t->dtype != dt || v->t->rank != rank)
    return false;
  for (int i = 0; i < rank; i++)
    if (v->t->dims[i] != dims[i]) return false;
  for (int64_t i = 0; i < v->t->numel; i++)
    if (kiln_load_f64(dt, v->t->data, (size_t)i) != vals[i]) {
      fprintf(stderr, "  element %lld: %g, expected %g\n", (long long)i,
              kiln_load_f64(dt, v->t->data, (size_t)i), vals[i]);
      return false;
    }
  return true;
}

static kiln_val *seq_val(int n, kiln_tensor **items) {
  kiln_val *v = kiln_val_new(KILN_TYPE_SEQUENCE);
  v->seq = kiln_seq_new(items[0]->dtype);
  for (int i = 0; i < n; i++) kiln_seq_push(v->seq, items[i]);
  return v;
}

static kiln_type seq_type(kiln_dtype dt) {
  kiln_type t = kiln_type_unknown();
  t.kind = KILN_TYPE_SEQUENCE;
  t.dtype = dt;
  return t;
}

/* ---- sequence ops ---- */
/* Construct [a, b], insert c at -1 (before b), erase position 0, then length and At(-1). */
static void test_sequence_ops(void) {
  kiln_graph *g = new_graph(17);
  int a = kiln_graph_add_input(g, "a", tt(KILN_F32));
  int b = kiln_graph_add_input(g, "b", tt(KILN_F32));
  int c = kiln_graph_add_input(g, "c", tt(KILN_F32));
  int m1 = cnst(g, "m1", scalar_i64(-1));
  int z = cnst(g, "z", mki(KILN_I32, 1, (int64_t[]){1}, (int64_t[]){0}));
  int s = node1(g, "SequenceConstruct", 2, (int[]){a, b}, "s");
  int s2 = node1(g, "SequenceInsert", 3, (int[]){s, c, m1}, "s2");
  int s3 = node1(g, "SequenceErase", 2, (int[]){s2, z}, "s3");
  int len = node1(g, "SequenceLength", 1, (int[]){s3}, "len");
  int at = node1(g, "SequenceAt", 2, (int[]){s3, m1}, "at");
  int s4 = node1(g, "SequenceInsert", 2, (int[]){s3, a}, "s4"); /* append */
  int len4 = node1(g, "SequenceLength", 1, (int[]){s4}, "len4");
  int at4 = node1(g, "SequenceAt", 2, (int[]){s4, m1}, "at4");
  kiln_graph_add_output(g, len);
  kiln_graph_add_output(g, at);
  kiln_graph_add_output(g, len4);
  kiln_graph_add_output(g, at4);
  kiln_graph_add_output(g, s4);
  CHECK_OK(kiln_ops_infer_graph(g));
  CHECK(g->values.data[s4].type.kind == KILN_TYPE_SEQUENCE);
  CHECK(g->values.data[at].type.kind == KILN_TYPE_TENSOR);
  kiln_val *in[3] = {kiln_val_tensor(mkf(1, (int64_t[]){1}, (double[]){1})),
                     kiln_val_tensor(mkf(1, (int64_t[]){2}, (double[]){2, 3})),
                     kiln_val_tensor(mkf(0, NULL, (double[]){4}))};
  kiln_val *out[5];
  CHECK_OK(run(g, 3, in, out));
  CHECK(is_tensor(out[0], KILN_I64, 0, NULL, (double[]){2}));
  CHECK(is_tensor(out[1], KILN_F32, 1, (int64_t[]){2}, (double[]){2, 3}));
  CHECK(is_tensor(out[2], KILN_I64, 0, NULL, (double[]){3}));
  CHECK(is_tensor(out[3], KILN_F32, 1, (int64_t[]){1}, (double[]){1}));
  CHECK(out[4] && out[4]->kind == KILN_TYPE_SEQUENCE && out[4]->seq->len == 3);
  free_outs(g, out);
}

/* Runs one op on a sequence of `n` scalars and a position; returns the status. */
static kiln_status run_pos_op(const char *op, int n, int64_t pos, bool with_tensor,
                              kiln_dtype tensor_dt) {
  kiln_graph *g = new_graph(17);
  int s = kiln_graph_add_input(g, "s", seq_type(KILN_F32));
  int p = cnst(g, "p", scalar_i64(pos));
  int x = cnst(g, "x", mki(tensor_dt, 0, NULL, (int64_t[]){7}));
  int y =
      with_tensor ? node1(g, op, 3, (int[]){s, x, p}, "y") : node1(g, op, 2, (int[]){s, p}, "y");
  kiln_graph_add_output(g, y);
  kiln_tensor *items[4];
  for (int i = 0; i < n; i++) items[i] = mkf(0, NULL, (double[]){i});
  kiln_val *in[1] = {n ? seq_val(n, items) : kiln_val_new(KILN_TYPE_SEQUENCE)};
  if (!n) in[0]->seq = kiln_seq_new(KILN_F32);
  kiln_val *out[1];
  kiln_status st = run(g, 1, in, out);
  free_outs(g, out);
  return st;
}

static void test_sequence_positions(void) {
  CHECK_OK(run_pos_op("SequenceAt", 3, -3, false, KILN_F32));
  CHECK_ERR(run_pos_op("SequenceAt", 3, 3, false, KILN_F32), KILN_ERR_INVALID);
  CHECK_ERR(run_pos_op("SequenceAt", 3, -4, false, KILN_F32), KILN_ERR_INVALID);
  CHECK_ERR(run_pos_op("SequenceAt", 0, 0, false, KILN_F32), KILN_ERR_INVALID);
  CHECK_OK(run_pos_op("SequenceInsert", 3, 3, true, KILN_F32));
  CHECK_OK(run_pos_op("SequenceInsert", 0, 0, true, KILN_F32));
  CHECK_ERR(run_pos_op("SequenceInsert", 3, 4, true, KILN_F32), KILN_ERR_INVALID);
  CHECK_ERR(run_pos_op("SequenceInsert", 3, 0, true, KILN_I64), KILN_ERR_INVALID);
  CHECK_OK(run_pos_op("SequenceErase", 3, -3, false, KILN_F32));
  CHECK_ERR(run_pos_op("SequenceErase", 3, 3, false, KILN_F32), KILN_ERR_INVALID);
  CHECK_ERR(run_pos_op("SequenceErase", 0, 0, false, KILN_F32), KILN_ERR_INVALID);
  /* a tensor where a sequence belongs */
  kiln_graph *g = new_graph(17);
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  kiln_graph_add_output(g, node1(g, "SequenceLength", 1, &x, "y"));
  kiln_val *in[1] = {kiln_val_tensor(mkf(0, NULL, (double[]){1}))}, *out[1];
  CHECK_ERR(run(g, 1, in, out), KILN_ERR_INVALID);
  free_outs(g, out);
}

/* SplitToSequence of [2,5] with scalar split 2 along axis 1 -> [2,2],[2,2],[2,1], then
 * ConcatFromSequence back; no split with keepdims 0 and ConcatFromSequence new_axis. */
static void test_split_concat(void) {
  kiln_graph *g = new_graph(17);
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 2, (int64_t[]){2, 5}));
  int two = cnst(g, "two", scalar_i64(2));
  int sp = node1(g, "SplitToSequence", 2, (int[]){x, two}, "sp");
  attr_int(g, kiln_graph_last_node(g), "axis", 1);
  int n = node1(g, "SequenceLength", 1, &sp, "n");
  int last = node1(g, "SequenceAt", 2, (int[]){sp, cnst(g, "m1", scalar_i64(-1))}, "last");
  int cat = node1(g, "ConcatFromSequence", 1, &sp, "cat");
  attr_int(g, kiln_graph_last_node(g), "axis", -1);
  int rows = node1(g, "SplitToSequence", 1, &x, "rows");
  attr_int(g, kiln_graph_last_node(g), "keepdims", 0);
  int st = node1(g, "ConcatFromSequence", 1, &rows, "st");
  attr_int(g, kiln_graph_last_node(g), "axis", 1);
  attr_int(g, kiln_graph_last_node(g), "new_axis", 1);
  int lens =
      node1(g, "SplitToSequence", 2,
            (int[]){x, cnst(g, "l", mki(KILN_I64, 1, (int64_t[]){2}, (int64_t[]){1, 4}))}, "lens");
  attr_int(g, kiln_graph_last_node(g), "axis", -1);
  int l1 = node1(g, "SequenceAt", 2, (int[]){lens, cnst(g, "one", scalar_i64(1))}, "l1");
  kiln_graph_add_output(g, n);
  kiln_graph_add_output(g, last);
  kiln_graph_add_output(g, cat);
  kiln_graph_add_output(g, st);
  kiln_graph_add_output(g, l1);
  CHECK_OK(kiln_ops_infer_graph(g));
  CHECK(g->values.data[st].type.rank == 2);
  CHECK(g->values.data[rows].type.rank == 1);
  double xv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  kiln_val *in[1] = {kiln_val_tensor(mkf(2, (int64_t[]){2, 5}, xv))}, *out[5];
  CHECK_OK(run(g, 1, in, out));
  CHECK(is_tensor(out[0], KILN_I64, 0, NULL, (double[]){3}));
  CHECK(is_tensor(out[1], KILN_F32, 2, (int64_t[]){2, 1}, (double[]){4, 9}));
  CHECK(is_tensor(out[2], KILN_F32, 2, (int64_t[]){2, 5}, xv));
  CHECK(
      is_tensor(out[3], KILN_F32, 2, (int64_t[]){5, 2}, (double[]){0, 5, 1, 6, 2, 7, 3, 8, 4, 9}));
  CHECK(is_tensor(out[4], KILN_F32, 2, (int64_t[]){2, 4}, (double[]){1, 2, 3, 4, 6, 7, 8, 9}));
  free_outs(g, out);
}

static kiln_status run_split(int64_t split_len, int64_t split_sum) {
  kiln_graph *g = new_graph(17);
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int s = split_len ? cnst(g, "s", scalar_i64(split_len))
                    : cnst(g, "s", mki(KILN_I64, 1, (int64_t[]){2}, (int64_t[]){1, split_sum - 1}));
  kiln_graph_add_output(g, node1(g, "SplitToSequence", 2, (int[]){x, s}, "y"));
  kiln_val *in[1] = {kiln_val_tensor(mkf(1, (int64_t[]){3}, (double[]){1, 2, 3}))}, *out[1];
  kiln_status st = run(g, 1, in, out);
  free_outs(g, out);
  return st;
}

static void test_split_errors(void) {
  CHECK_OK(run_split(2, 0));
  CHECK_OK(run_split(0, 3));
  CHECK_ERR(run_split(-1, 0), KILN_ERR_INVALID);
  CHECK_ERR(run_split(0, 4), KILN_ERR_INVALID);
  /* ConcatFromSequence of mismatched shapes and of an empty sequence */
  kiln_graph *g = new_graph(17);
  int s = kiln_graph_add_input(g, "s", seq_type(KILN_F32));
  kiln_graph_add_output(g, node1(g, "ConcatFromSequence", 1, &s, "y"));
  attr_int(g, 0, "axis", 1);
  kiln_tensor *it[2] = {mkf(2, (int64_t[]){1, 2}, (double[]){1, 2}),
                        mkf(2, (int64_t[]){2, 1}, (double[]){1, 2})};
  kiln_val *in[1] = {seq_val(2, it)}, *out[1];
  CHECK_ERR(run(g, 1, in, out), KILN_ERR_INVALID);
  in[0] = kiln_val_new(KILN_TYPE_SEQUENCE);
  in[0]->seq = kiln_seq_new(KILN_F32);
  CHECK_ERR(run(g, 1, in, out), KILN_ERR_INVALID);
  free_outs(g, out);
}

/* ---- optional ops ---- */
static void test_optional(void) {
  kiln_graph *g = new_graph(18);
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int o = node1(g, "Optional", 1, &x, "o");
  int h = node1(g, "OptionalHasElement", 1, &o, "h");
  int e = node1(g, "OptionalGetElement", 1, &o, "e");
  int empty = node1(g, "Optional", 0, NULL, "empty");
  kiln_attr *ta = kiln_node_add_attr(g, kiln_graph_last_node(g), "type", KILN_ATTR_TYPE_PROTO);
  ta->tp = seq_type(KILN_I64);
  int he = node1(g, "OptionalHasElement", 1, &empty, "he");
  int hn = node1(g, "OptionalHasElement", 1, (int[]){-1}, "hn");
  int ht = node1(g, "OptionalHasElement", 1, &x, "ht");
  int et = node1(g, "OptionalGetElement", 1, &x, "et");
  int ints[] = {o, h, e, empty, he, hn, ht, et};
  for (int i = 0; i < 8; i++) kiln_graph_add_output(g, ints[i]);
  CHECK_OK(kiln_ops_infer_graph(g));
  CHECK(g->values.data[o].type.kind == KILN_TYPE_OPTIONAL);
  CHECK(g->values.data[empty].type.kind == KILN_TYPE_OPTIONAL &&
        g->values.data[empty].type.elem_seq);
  CHECK(g->values.data[e].type.kind == KILN_TYPE_TENSOR);
  kiln_val *in[1] = {kiln_val_tensor(mkf(1, (int64_t[]){2}, (double[]){5, 6}))}, *out[8];
  CHECK_OK(run(g, 1, in, out));
  CHECK(out[0] && out[0]->kind == KILN_TYPE_OPTIONAL && out[0]->t);
  CHECK(is_tensor(out[1], KILN_BOOL, 0, NULL, (double[]){1}));
  CHECK(is_tensor(out[2], KILN_F32, 1, (int64_t[]){2}, (double[]){5, 6}));
  CHECK(out[3] && out[3]->kind == KILN_TYPE_OPTIONAL && !out[3]->t && !out[3]->seq &&
        out[3]->elem_seq && out[3]->opt_dtype == KILN_I64);
  CHECK(is_tensor(out[4], KILN_BOOL, 0, NULL, (double[]){0}));
  CHECK(is_tensor(out[5], KILN_BOOL, 0, NULL, (double[]){0}));
  CHECK(is_tensor(out[6], KILN_BOOL, 0, NULL, (double[]){1}));
  CHECK(is_tensor(out[7], KILN_F32, 1, (int64_t[]){2}, (double[]){5, 6}));
  free_outs(g, out);
}

static kiln_status run_optional_get(int64_t opset, bool empty) {
  kiln_graph *g = new_graph(opset);
  kiln_type t = kiln_type_unknown();
  t.kind = empty ? KILN_TYPE_OPTIONAL : KILN_TYPE_TENSOR;
  t.dtype = KILN_F32;
  int x = kiln_graph_add_input(g, "x", t);
  kiln_graph_add_output(g, node1(g, "OptionalGetElement", 1, &x, "y"));
  kiln_val *v =
      empty ? kiln_val_new(KILN_TYPE_OPTIONAL) : kiln_val_tensor(mkf(0, NULL, (double[]){1}));
  kiln_val *in[1] = {v}, *out[1];
  kiln_status st = run(g, 1, in, out);
  free_outs(g, out);
  return st;
}

static void test_optional_errors(void) {
  CHECK_ERR(run_optional_get(18, true), KILN_ERR_INVALID);  /* empty optional */
  CHECK_ERR(run_optional_get(15, false), KILN_ERR_INVALID); /* tensor before opset 18 */
  CHECK_OK(run_optional_get(18, false));
}

/* ---- If ---- */
/* then: a constant [2] tensor; else: the outer input x itself (shape [3]). */
static kiln_graph *if_graph(void) {
  kiln_graph *g = new_graph(16);
  int c = kiln_graph_add_input(g, "c", tt(KILN_BOOL));
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 1, (int64_t[]){3}));
  (void)x;
  int y = node1(g, "If", 1, &c, "y");
  kiln_graph *th = kiln_graph_new_sub(g, "then");
  kiln_graph_add_output(th, cnst(th, "k", mkf(1, (int64_t[]){2}, (double[]){7, 8})));
  kiln_graph *el = kiln_graph_new_sub(g, "else");
  kiln_graph_add_output(el, kiln_graph_resolve(el, "x"));
  attr_graph(g, 0, "then_branch", th);
  attr_graph(g, 0, "else_branch", el);
  kiln_graph_add_output(g, y);
  return g;
}

static void test_if(void) {
  for (int c = 0; c < 2; c++) {
    kiln_graph *g = if_graph();
    CHECK_OK(kiln_ops_infer_graph(g));
    const kiln_type *yt = &g->values.data[kiln_graph_find(g, "y")].type;
    CHECK(yt->kind == KILN_TYPE_TENSOR && yt->dtype == KILN_F32 && yt->rank == 1 &&
          yt->dims[0].value < 0);
    kiln_val *in[2] = {kiln_val_tensor(scalar_bool(c)),
                       kiln_val_tensor(mkf(1, (int64_t[]){3}, (double[]){1, 2, 3}))};
    kiln_val *out[1];
    CHECK_OK(run(g, 2, in, out));
    if (c) CHECK(is_tensor(out[0], KILN_F32, 1, (int64_t[]){2}, (double[]){7, 8}));
    else CHECK(is_tensor(out[0], KILN_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3}));
    free_outs(g, out);
  }
  /* a condition of two elements */
  kiln_graph *g = if_graph();
  kiln_val *in[2] = {kiln_val_tensor(mki(KILN_BOOL, 1, (int64_t[]){2}, (int64_t[]){1, 0})),
                     kiln_val_tensor(mkf(1, (int64_t[]){3}, (double[]){1, 2, 3}))};
  kiln_val *out[1];
  CHECK_ERR(run(g, 2, in, out), KILN_ERR_INVALID);
  free_outs(g, out);
}

/* ---- Loop ---- */
/* Loop(M?, cond?, seq) built from control ops only: seq_out = SequenceInsert(seq_in, iter),
 * scan = SequenceLength(seq_out), cond_out = OptionalHasElement(iter) (always true). */
static kiln_graph *loop_graph(bool with_m, bool with_cond, int64_t opset) {
  kiln_graph *g = new_graph(opset);
  int m = kiln_graph_add_input(g, "m", tt(KILN_I64));
  int c = kiln_graph_add_input(g, "c", tt(KILN_BOOL));
  int s = kiln_graph_add_input(g, "s", seq_type(KILN_I64));
  int outs[2];
  int nd = node(g, "Loop", 3, (int[]){with_m ? m : -1, with_cond ? c : -1, s}, 2,
                (const char *const[]){"final", "scan"}, outs);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int it = kiln_graph_add_input(b, "it", kiln_type_tensor(KILN_I64, 0, NULL));
  kiln_graph_add_input(b, "cin", kiln_type_tensor(KILN_BOOL, 0, NULL));
  int sin = kiln_graph_add_input(b, "sin", seq_type(KILN_I64));
  int sout = node1(b, "SequenceInsert", 2, (int[]){sin, it}, "sout");
  int len = node1(b, "SequenceLength", 1, &sout, "len");
  int cout = node1(b, "OptionalHasElement", 1, &it, "cout");
  kiln_graph_add_output(b, cout);
  kiln_graph_add_output(b, sout);
  kiln_graph_add_output(b, len);
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  return g;
}

static kiln_status run_loop(bool with_m, int64_t m, bool with_cond, bool c, kiln_val **out) {
  kiln_graph *g = loop_graph(with_m, with_cond, 18);
  CHECK_OK(kiln_ops_infer_graph(g)); /* gives the body outputs' types (for zero trips) */
  kiln_val *in[3] = {kiln_val_tensor(scalar_i64(m)), kiln_val_tensor(scalar_bool(c)),
                     kiln_val_new(KILN_TYPE_SEQUENCE)};
  in[2]->seq = kiln_seq_new(KILN_I64);
  kiln_status st = run(g, 3, in, out);
  kiln_graph_free(g);
  return st;
}

static void test_loop(void) {
  kiln_val *out[2];
  CHECK_OK(run_loop(true, 3, true, true, out));
  CHECK(out[0] && out[0]->kind == KILN_TYPE_SEQUENCE && out[0]->seq->len == 3);
  if (out[0] && out[0]->seq && out[0]->seq->len == 3)
    CHECK(kiln_load_i64(KILN_I64, out[0]->seq->items[2]->data, 0) == 2);
  CHECK(is_tensor(out[1], KILN_I64, 1, (int64_t[]){3}, (double[]){1, 2, 3}));
  kiln_val_free(out[0]);
  kiln_val_free(out[1]);
  /* cond false: no iteration; the scan output is empty with the body's element shape */
  CHECK_OK(run_loop(true, 3, true, false, out));
  CHECK(out[0] && out[0]->seq && out[0]->seq->len == 0);
  CHECK(is_tensor(out[1], KILN_I64, 1, (int64_t[]){0}, NULL));
  kiln_val_free(out[0]);
  kiln_val_free(out[1]);
  /* M without cond */
  CHECK_OK(run_loop(true, 2, false, false, out));
  CHECK(out[0] && out[0]->seq && out[0]->seq->len == 2);
  kiln_val_free(out[0]);
  kiln_val_free(out[1]);
  /* infer: the scan output gains a leading dim */
  kiln_graph *g = loop_graph(true, true, 18);
  CHECK_OK(kiln_ops_infer_graph(g));
  const kiln_type *st = &g->values.data[kiln_graph_find(g, "scan")].type;
  CHECK(st->kind == KILN_TYPE_TENSOR && st->rank == 1 && st->dtype == KILN_I64);
  kiln_graph_free(g);
}

/* A body whose condition output is not a scalar boolean is an error. */
static void test_loop_errors(void) {
  kiln_graph *g = new_graph(18);
  int m = kiln_graph_add_input(g, "m", tt(KILN_I64));
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int out;
  int nd = node(g, "Loop", 3, (int[]){m, -1, x}, 1, (const char *const[]){"y"}, &out);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  kiln_graph_add_input(b, "it", tt(KILN_I64));
  kiln_graph_add_input(b, "cin", tt(KILN_BOOL));
  int xin = kiln_graph_add_input(b, "xin", tt(KILN_F32));
  int seq = node1(b, "SequenceConstruct", 1, &xin, "sq");
  kiln_graph_add_output(b, seq); /* a sequence as condition */
  kiln_graph_add_output(b, xin);
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, out);
  kiln_val *in[2] = {kiln_val_tensor(scalar_i64(2)), kiln_val_tensor(mkf(0, NULL, (double[]){1}))};
  kiln_val *o[1];
  CHECK_ERR(run(g, 2, in, o), KILN_ERR_INVALID);
  free_outs(g, o);
  /* a body with the wrong number of inputs */
  g = new_graph(18);
  m = kiln_graph_add_input(g, "m", tt(KILN_I64));
  nd = node(g, "Loop", 2, (int[]){m, -1}, 0, NULL, NULL);
  b = kiln_graph_new_sub(g, "body");
  kiln_graph_add_input(b, "it", tt(KILN_I64));
  kiln_graph_add_output(b, kiln_graph_find(b, "it"));
  attr_graph(g, nd, "body", b);
  kiln_val *in2[1] = {kiln_val_tensor(scalar_i64(2))};
  CHECK_ERR(run(g, 1, in2, o), KILN_ERR_INVALID);
  kiln_graph_free(g);
}

/* ---- Scan ---- */
/* Scan body from control ops only: the new state is x_t; the scan output is [state, x_t]
 * stacked along a new axis 0. */
static kiln_graph *scan_body(kiln_graph *g) {
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int sin = kiln_graph_add_input(b, "sin", tt(KILN_F32));
  int xt = kiln_graph_add_input(b, "xt", tt(KILN_F32));
  int seq = node1(b, "SequenceConstruct", 2, (int[]){sin, xt}, "sq");
  int pair = node1(b, "ConcatFromSequence", 1, &seq, "pair");
  attr_int(b, kiln_graph_last_node(b), "axis", 0);
  attr_int(b, kiln_graph_last_node(b), "new_axis", 1);
  int sout = node1(b, "SequenceAt", 2, (int[]){seq, cnst(b, "one", scalar_i64(1))}, "sout");
  kiln_graph_add_output(b, sout); /* the new state is x_t */
  kiln_graph_add_output(b, pair);
  return b;
}

/* The same body with opset-8 ops: state out = x_t, scan out = [[s],[x_t]]. */
static kiln_graph *scan8_body(kiln_graph *g) {
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int sin = kiln_graph_add_input(b, "sin", tt(KILN_F32));
  int xt = kiln_graph_add_input(b, "xt", tt(KILN_F32));
  int us = node1(b, "Unsqueeze", 1, &sin, "us");
  attr_ints(b, kiln_graph_last_node(b), "axes", 1, (int64_t[]){0});
  int ux = node1(b, "Unsqueeze", 1, &xt, "ux");
  attr_ints(b, kiln_graph_last_node(b), "axes", 1, (int64_t[]){0});
  int pair = node1(b, "Concat", 2, (int[]){us, ux}, "pair");
  attr_int(b, kiln_graph_last_node(b), "axis", 0);
  int sout = node1(b, "Identity", 1, &xt, "sout");
  kiln_graph_add_output(b, sout);
  kiln_graph_add_output(b, pair);
  return b;
}

/* Scan-9: x [2,3] scanned along axis 1 in reverse; the scan output stacked on axis -1. */
static void test_scan9(void) {
  kiln_graph *g = new_graph(11);
  int s0 = kiln_graph_add_input(g, "s0", tt(KILN_F32));
  int x = kiln_graph_add_input(g, "x", kiln_type_tensor(KILN_F32, 2, (int64_t[]){2, 3}));
  int outs[2];
  int nd = node(g, "Scan", 2, (int[]){s0, x}, 2, (const char *const[]){"fin", "acc"}, outs);
  attr_int(g, nd, "num_scan_inputs", 1);
  attr_ints(g, nd, "scan_input_axes", 1, (int64_t[]){1});
  attr_ints(g, nd, "scan_input_directions", 1, (int64_t[]){1});
  attr_ints(g, nd, "scan_output_axes", 1, (int64_t[]){-1});
  attr_graph(g, nd, "body", scan_body(g));
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_val *in[2] = {kiln_val_tensor(mkf(1, (int64_t[]){2}, (double[]){-1, -2})),
                     kiln_val_tensor(mkf(2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}))};
  kiln_val *out[2];
  CHECK_OK(run(g, 2, in, out));
  /* steps (reverse): x_t = [3,6], [2,5], [1,4]; final state [1,4] */
  CHECK(is_tensor(out[0], KILN_F32, 1, (int64_t[]){2}, (double[]){1, 4}));
  /* pair_t = [[s],[x_t]] of shape [2,2]; stacked at axis 2 -> [2,2,3] */
  CHECK(is_tensor(out[1], KILN_F32, 3, (int64_t[]){2, 2, 3},
                  (double[]){-1, 3, 2, -2, 6, 5, 3, 2, 1, 6, 5, 4}));
  free_outs(g, out);
}

/* Scan-8: batch of 2, max length 3, sequence_lens [3, 1], forward. */
static void test_scan8(void) {
  kiln_graph *g = new_graph(8);
  int lens = kiln_graph_add_input(g, "lens", tt(KILN_I64));
  int s0 = kiln_graph_add_input(g, "s0", tt(KILN_F32));
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int outs[2];
  int nd = node(g, "Scan", 3, (int[]){lens, s0, x}, 2, (const char *const[]){"fin", "acc"}, outs);
  attr_int(g, nd, "num_scan_inputs", 1);
  attr_ints(g, nd, "directions", 1, (int64_t[]){1});
  attr_graph(g, nd, "body", scan8_body(g));
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  kiln_val *in[3] = {kiln_val_tensor(mki(KILN_I64, 1, (int64_t[]){2}, (int64_t[]){3, 1})),
                     kiln_val_tensor(mkf(2, (int64_t[]){2, 1}, (double[]){-1, -2})),
                     kiln_val_tensor(mkf(3, (int64_t[]){2, 3, 1}, (double[]){1, 2, 3, 4, 5, 6}))};
  kiln_val *out[2];
  CHECK_OK(run(g, 3, in, out));
  /* batch 0 reversed over 3 steps: x_t = 3,2,1 -> final 1; batch 1 one step: x_t = 4 */
  CHECK(is_tensor(out[0], KILN_F32, 2, (int64_t[]){2, 1}, (double[]){1, 4}));
  CHECK(is_tensor(out[1], KILN_F32, 4, (int64_t[]){2, 3, 2, 1},
                  (double[]){-1, 3, 3, 2, 2, 1, -2, 4, 0, 0, 0, 0}));
  free_outs(g, out);
  /* a sequence length beyond the maximum */
  g = new_graph(8);
  lens = kiln_graph_add_input(g, "lens", tt(KILN_I64));
  s0 = kiln_graph_add_input(g, "s0", tt(KILN_F32));
  x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  nd = node(g, "Scan", 3, (int[]){lens, s0, x}, 2, (const char *const[]){"fin", "acc"}, outs);
  attr_int(g, nd, "num_scan_inputs", 1);
  attr_graph(g, nd, "body", scan8_body(g));
  kiln_graph_add_output(g, outs[0]);
  kiln_val *in2[3] = {kiln_val_tensor(mki(KILN_I64, 1, (int64_t[]){1}, (int64_t[]){4})),
                      kiln_val_tensor(mkf(2, (int64_t[]){1, 1}, (double[]){0})),
                      kiln_val_tensor(mkf(3, (int64_t[]){1, 3, 1}, (double[]){1, 2, 3}))};
  CHECK_ERR(run(g, 3, in2, out), KILN_ERR_INVALID);
  free_outs(g, out);
}

/* A state that changes shape is an error. */
static void test_scan_state_error(void) {
  kiln_graph *g = new_graph(11);
  int s0 = kiln_graph_add_input(g, "s0", tt(KILN_F32));
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int outs[1];
  int nd = node(g, "Scan", 2, (int[]){s0, x}, 1, (const char *const[]){"fin"}, outs);
  attr_int(g, nd, "num_scan_inputs", 1);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int sin = kiln_graph_add_input(b, "sin", tt(KILN_F32));
  int xt = kiln_graph_add_input(b, "xt", tt(KILN_F32));
  int seq = node1(b, "SequenceConstruct", 2, (int[]){sin, xt}, "sq");
  int cat = node1(b, "ConcatFromSequence", 1, &seq, "cat");
  attr_int(b, kiln_graph_last_node(b), "axis", 0);
  kiln_graph_add_output(b, cat); /* grows every step */
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, outs[0]);
  kiln_val *in[2] = {kiln_val_tensor(mkf(1, (int64_t[]){1}, (double[]){0})),
                     kiln_val_tensor(mkf(2, (int64_t[]){2, 1}, (double[]){1, 2}))};
  kiln_val *out[1];
  CHECK_ERR(run(g, 2, in, out), KILN_ERR_INVALID);
  free_outs(g, out);
}

/* ---- SequenceMap ---- */
/* SequenceMap(seq, t, seq2): body returns SequenceLength(SequenceConstruct(a, b, c)) and
 * ConcatFromSequence([a, b, c]) along axis 0. */
static kiln_graph *seqmap_graph(void) {
  kiln_graph *g = new_graph(17);
  int s = kiln_graph_add_input(g, "s", seq_type(KILN_F32));
  int t = kiln_graph_add_input(g, "t", tt(KILN_F32));
  int s2 = kiln_graph_add_input(g, "s2", seq_type(KILN_F32));
  int outs[2];
  int nd = node(g, "SequenceMap", 3, (int[]){s, t, s2}, 2, (const char *const[]){"y0", "y1"}, outs);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int a = kiln_graph_add_input(b, "a", tt(KILN_F32));
  int bb = kiln_graph_add_input(b, "b", tt(KILN_F32));
  int c = kiln_graph_add_input(b, "c", tt(KILN_F32));
  int sq = node1(b, "SequenceConstruct", 3, (int[]){a, bb, c}, "sq");
  kiln_graph_add_output(b, node1(b, "SequenceLength", 1, &sq, "n"));
  int cat = node1(b, "ConcatFromSequence", 1, &sq, "cat");
  attr_int(b, kiln_graph_last_node(b), "axis", 0);
  kiln_graph_add_output(b, cat);
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  return g;
}

static void test_sequence_map(void) {
  kiln_graph *g = seqmap_graph();
  CHECK_OK(kiln_ops_infer_graph(g));
  CHECK(g->values.data[kiln_graph_find(g, "y0")].type.kind == KILN_TYPE_SEQUENCE);
  kiln_tensor *a[2] = {mkf(1, (int64_t[]){1}, (double[]){1}),
                       mkf(1, (int64_t[]){2}, (double[]){2, 3})};
  kiln_tensor *c[2] = {mkf(1, (int64_t[]){1}, (double[]){9}),
                       mkf(1, (int64_t[]){1}, (double[]){8})};
  kiln_val *in[3] = {seq_val(2, a), kiln_val_tensor(mkf(1, (int64_t[]){1}, (double[]){0})),
                     seq_val(2, c)};
  kiln_val *out[2];
  CHECK_OK(run(g, 3, in, out));
  CHECK(out[0] && out[0]->kind == KILN_TYPE_SEQUENCE && out[0]->seq->len == 2);
  CHECK(out[1] && out[1]->kind == KILN_TYPE_SEQUENCE && out[1]->seq->len == 2);
  if (out[1] && out[1]->seq && out[1]->seq->len == 2) {
    kiln_val v = {.kind = KILN_TYPE_TENSOR, .t = out[1]->seq->items[1]};
    CHECK(is_tensor(&v, KILN_F32, 1, (int64_t[]){4}, (double[]){2, 3, 0, 8}));
  }
  free_outs(g, out);
  /* sequences of different lengths */
  g = seqmap_graph();
  kiln_tensor *a1[1] = {mkf(1, (int64_t[]){1}, (double[]){1})};
  kiln_tensor *c2[2] = {mkf(1, (int64_t[]){1}, (double[]){9}),
                        mkf(1, (int64_t[]){1}, (double[]){8})};
  kiln_val *in2[3] = {seq_val(1, a1), kiln_val_tensor(mkf(1, (int64_t[]){1}, (double[]){0})),
                      seq_val(2, c2)};
  CHECK_ERR(run(g, 3, in2, out), KILN_ERR_INVALID);
  free_outs(g, out);
  /* an empty input sequence gives empty output sequences (of the inferred element type) */
  g = seqmap_graph();
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_val *e1 = kiln_val_new(KILN_TYPE_SEQUENCE), *e2 = kiln_val_new(KILN_TYPE_SEQUENCE);
  e1->seq = kiln_seq_new(KILN_F32);
  e2->seq = kiln_seq_new(KILN_F32);
  kiln_val *in3[3] = {e1, kiln_val_tensor(mkf(1, (int64_t[]){1}, (double[]){0})), e2};
  CHECK_OK(run(g, 3, in3, out));
  CHECK(out[0] && out[0]->seq && out[0]->seq->len == 0 && out[0]->seq->elem == KILN_I64);
  free_outs(g, out);
}

/* Loop-16: a carried optional(seq) that the body returns as a plain sequence is seen by the
 * next iteration as a present optional. Scan output: OptionalHasElement of the carried value. */
static void test_loop_optional_carried(void) {
  kiln_graph *g = new_graph(16);
  int m = kiln_graph_add_input(g, "m", tt(KILN_I64));
  kiln_type ot = seq_type(KILN_I64);
  ot.kind = KILN_TYPE_OPTIONAL;
  ot.elem_seq = true;
  int o = kiln_graph_add_input(g, "o", ot);
  int outs[2];
  int nd = node(g, "Loop", 3, (int[]){m, -1, o}, 2, (const char *const[]){"fin", "has"}, outs);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int it = kiln_graph_add_input(b, "it", kiln_type_tensor(KILN_I64, 0, NULL));
  int cin = kiln_graph_add_input(b, "cin", kiln_type_tensor(KILN_BOOL, 0, NULL));
  int oin = kiln_graph_add_input(b, "oin", ot);
  int h = node1(b, "OptionalHasElement", 1, &oin, "h");
  int sq = node1(b, "SequenceConstruct", 1, &it, "sq");
  kiln_graph_add_output(b, cin);
  kiln_graph_add_output(b, sq);
  kiln_graph_add_output(b, h);
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  CHECK_OK(kiln_ops_infer_graph(g));
  kiln_val *e = kiln_val_new(KILN_TYPE_OPTIONAL);
  e->elem_seq = true;
  e->opt_dtype = KILN_I64;
  kiln_val *in[2] = {kiln_val_tensor(scalar_i64(3)), e}, *out[2];
  CHECK_OK(run(g, 2, in, out));
  CHECK(out[0] && out[0]->kind == KILN_TYPE_SEQUENCE && out[0]->seq->len == 1);
  CHECK(is_tensor(out[1], KILN_BOOL, 1, (int64_t[]){3}, (double[]){0, 1, 1}));
  free_outs(g, out);
}

/* A loop-carried tensor that changes element type is an error. */
static void test_loop_carried_dtype(void) {
  kiln_graph *g = new_graph(13);
  int m = kiln_graph_add_input(g, "m", tt(KILN_I64));
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int out;
  int nd = node(g, "Loop", 3, (int[]){m, -1, x}, 1, (const char *const[]){"y"}, &out);
  kiln_graph *b = kiln_graph_new_sub(g, "body");
  int it = kiln_graph_add_input(b, "it", tt(KILN_I64));
  int cin = kiln_graph_add_input(b, "cin", tt(KILN_BOOL));
  kiln_graph_add_input(b, "xin", tt(KILN_F32));
  kiln_graph_add_output(b, cin);
  kiln_graph_add_output(b, it); /* i64 where f32 was carried */
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, out);
  kiln_val *in[2] = {kiln_val_tensor(scalar_i64(2)), kiln_val_tensor(mkf(0, NULL, (double[]){1}))};
  kiln_val *o[1];
  CHECK_ERR(run(g, 2, in, o), KILN_ERR_INVALID);
  free_outs(g, o);
}

/* Strings travel through SplitToSequence, SequenceInsert and ConcatFromSequence. */
static void test_string_sequences(void) {
  kiln_graph *g = new_graph(17);
  int x = kiln_graph_add_input(g, "x", tt(KILN_STRING));
  int sp = node1(g, "SplitToSequence", 1, &x, "sp");
  int ins = node1(g, "SequenceInsert", 3, (int[]){sp, x, cnst(g, "z", scalar_i64(0))}, "ins");
  int cat = node1(g, "ConcatFromSequence", 1, &ins, "cat");
  attr_int(g, kiln_graph_last_node(g), "axis", 0);
  kiln_graph_add_output(g, cat);
  kiln_tensor *t = NULL;
  if (kiln_tensor_new(KILN_STRING, 1, (int64_t[]){2}, &t)) abort();
  ((char **)t->data)[0] = kiln_xstrdup("ab");
  ((char **)t->data)[1] = kiln_xstrdup("c");
  kiln_val *in[1] = {kiln_val_tensor(t)}, *out[1];
  CHECK_OK(run(g, 1, in, out));
  CHECK(out[0] && out[0]->t && out[0]->t->numel == 4);
  if (out[0] && out[0]->t && out[0]->t->numel == 4) {
    char **s = out[0]->t->data;
    CHECK(!strcmp(s[0], "ab") && !strcmp(s[1], "c") && !strcmp(s[2], "ab") && !strcmp(s[3], "c"));
  }
  free_outs(g, out);
}

/* Scan-9 over a zero-length input: the scan output is empty with the body's shape. */
static void test_scan_empty(void) {
  kiln_graph *g = new_graph(11);
  int s0 = kiln_graph_add_input(g, "s0", tt(KILN_F32));
  int x = kiln_graph_add_input(g, "x", tt(KILN_F32));
  int outs[2];
  int nd = node(g, "Scan", 2, (int[]){s0, x}, 2, (const char *const[]){"fin", "acc"}, outs);
  attr_int(g, nd, "num_scan_inputs", 1);
  kiln_graph *b = scan_body(g);
  int pair = b->outputs.data[1];
  b->values.data[pair].type = kiln_type_tensor(KILN_F32, 2, (int64_t[]){2, 2});
  attr_graph(g, nd, "body", b);
  kiln_graph_add_output(g, outs[0]);
  kiln_graph_add_output(g, outs[1]);
  kiln_val *in[2] = {kiln_val_tensor(mkf(1, (int64_t[]){2}, (double[]){1, 2})),
                     kiln_val_tensor(mkf(2, (int64_t[]){0, 2}, NULL))};
  kiln_val *out[2];
  CHECK_OK(run(g, 2, in, out));
  CHECK(is_tensor(out[0], KILN_F32, 1, (int64_t[]){2}, (double[]){1, 2}));
  CHECK(is_tensor(out[1], KILN_F32, 3, (int64_t[]){0, 2, 2}, NULL));
  free_outs(g, out);
}

TEST_MAIN(T(test_sequence_ops), T(test_sequence_positions), T(test_split_concat),
          T(test_split_errors), T(test_optional), T(test_optional_errors), T(test_if), T(test_loop),
          T(test_loop_errors), T(test_scan9), T(test_scan8), T(test_scan_state_error),
          T(test_sequence_map), T(test_loop_optional_carried), T(test_loop_carried_dtype),
          T(test_string_sequences), T(test_scan_empty))
