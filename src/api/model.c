/* The convenience layer of include/kiln.h over the graph IR and the interpreter. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"

struct kiln_model {
  kiln_graph *g;
  kiln_compiled *compiled; /* NULL: run with the interpreter */
};

/* Reads up to n - 1 bytes of the start of a regular file (NUL-terminated) into buf; 0 when
 * the file is not a regular file or cannot be read (the loader then says why). O_NONBLOCK:
 * a FIFO must not hang the sniffing. */
static size_t read_head(const char *path, char *buf, size_t n) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat sb;
  ssize_t k = 0;
  if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) k = read(fd, buf, n - 1);
  if (fd >= 0) close(fd);
  buf[k > 0 ? k : 0] = '\0';
  return k > 0 ? (size_t)k : 0;
}

/* Kiln's text IR starts, after blanks and '#' comments, with the word "graph". No ONNX
 * protobuf can: 'g' would be field 12 with wire type 7, which does not exist. */
static bool is_text_ir(const char *head) {
  const char *p = head;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p != '#') break;
    while (*p && *p != '\n') p++;
  }
  return strncmp(p, "graph", 5) == 0 && (p[5] == ' ' || p[5] == '@' || p[5] == '\t');
}

/* True when the head is text (printable ASCII, blanks, UTF-8): not a protobuf. */
static bool is_text(const char *head, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)head[i];
    if (ch < 0x20 && ch != '\n' && ch != '\r' && ch != '\t') return false;
  }
  return n > 0;
}

static kiln_status load_text(const char *path, kiln_graph **out) {
  char *text;
  size_t len;
  KILN_TRY(kiln_read_file(path, &text, &len));
  kiln_status st = kiln_graph_parse(text, path, out);
  free(text);
  return st;
}

/* A file ending in .kiln, or any file whose content is the text IR, is parsed as text;
 * anything else is an ONNX model. */
static kiln_status load_any(const char *path, kiln_graph **out) {
  size_t n = strlen(path);
  char head[512];
  size_t got = read_head(path, head, sizeof head);
  if ((n > 5 && !strcmp(path + n - 5, ".kiln")) || is_text_ir(head)) return load_text(path, out);
  kiln_status st = kiln_onnx_load(path, out);
  if (st && kiln_status_code(st) == KILN_ERR_INVALID && is_text(head, got)) {
    kiln_status_free(st);
    st = kiln_invalid("%s: not an ONNX model: the file is text, not a protobuf (a file of "
                      "Kiln's text IR starts with 'graph @NAME(' and ends in .kiln)",
                      path);
  }
  return st;
}

kiln_status kiln_load_graph(const char *path, kiln_graph **out) {
  KILN_TRY(load_any(path, out));
  kiln_status st = kiln_ops_validate_model(*out);
  if (!st) st = kiln_ops_infer_graph(*out);
  if (st) {
    kiln_graph_free(*out);
    *out = NULL;
  }
  return st;
}

kiln_status kiln_model_load(const char *path, kiln_model **out) {
  kiln_graph *g;
  KILN_TRY(kiln_load_graph(path, &g));
  *out = kiln_xcalloc(1, sizeof **out);
  (*out)->g = g;
  return KILN_OK;
}

void kiln_model_free(kiln_model *m) {
  if (!m) return;
  kiln_compiled_free(m->compiled);
  kiln_graph_free(m->g);
  free(m);
}

const kiln_graph *kiln_model_graph(const kiln_model *m) {
  return m->g;
}
int kiln_model_num_inputs(const kiln_model *m) {
  return m->g->inputs.len;
}
int kiln_model_num_outputs(const kiln_model *m) {
  return m->g->outputs.len;
}

const char *kiln_model_input_name(const kiln_model *m, int i) {
  return i >= 0 && i < m->g->inputs.len ? m->g->values.data[m->g->inputs.data[i]].name : NULL;
}

const char *kiln_model_output_name(const kiln_model *m, int i) {
  return i >= 0 && i < m->g->outputs.len ? m->g->values.data[m->g->outputs.data[i]].name : NULL;
}

const kiln_type *kiln_model_input_type(const kiln_model *m, int i) {
  return i >= 0 && i < m->g->inputs.len ? &m->g->values.data[m->g->inputs.data[i]].type : NULL;
}

kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i) {
  const kiln_type *t = kiln_model_input_type(m, i);
  return t && t->kind == KILN_TYPE_TENSOR ? t->dtype : KILN_UNDEFINED;
}

int kiln_model_input_rank(const kiln_model *m, int i) {
  const kiln_type *t = kiln_model_input_type(m, i);
  return t && t->kind == KILN_TYPE_TENSOR ? t->rank : -1;
}

static const kiln_dim *input_dim(const kiln_model *m, int i, int d) {
  int rank = kiln_model_input_rank(m, i);
  return d >= 0 && d < rank ? &kiln_model_input_type(m, i)->dims[d] : NULL;
}

int64_t kiln_model_input_dim(const kiln_model *m, int i, int d) {
  const kiln_dim *dim = input_dim(m, i, d);
  return dim && dim->value >= 0 ? dim->value : -1;
}

const char *kiln_model_input_dim_name(const kiln_model *m, int i, int d) {
  const kiln_dim *dim = input_dim(m, i, d);
  return dim && dim->value < 0 ? dim->sym : NULL;
}

bool kiln_model_is_compiled(const kiln_model *m) {
  return m->compiled != NULL;
}

kiln_status kiln_model_compile_opts(kiln_model *m, const kiln_target *t,
                                    const kiln_compile_opts *o) {
  kiln_compiled_free(m->compiled);
  m->compiled = NULL;
  kiln_compile_opts opts;
  if (o) opts = *o;
  else kiln_compile_opts_init(&opts);
  opts.take_graph = false; /* the model keeps its graph */
  return kiln_compile(m->g, t, &opts, &m->compiled);
}

kiln_status kiln_model_bind_inputs(kiln_model *m, const kiln_tensor *const *inputs) {
  if (m->compiled) return kiln_invalid("the model is compiled: bind inputs before compiling");
  return kiln_graph_bind_inputs(m->g, m->g->inputs.len, inputs);
}

void kiln_set_max_memory(int64_t bytes) {
  kiln_mem_set_limit(bytes);
}

const kiln_compiled *kiln_model_compiled(const kiln_model *m) {
  return m->compiled;
}

kiln_status kiln_model_run(kiln_model *m, const kiln_tensor *const *inputs, kiln_tensor **outputs) {
  if (m->compiled)
    return kiln_compiled_run(m->compiled, m->g->inputs.len, (kiln_tensor *const *)inputs, outputs);
  int n_in = m->g->inputs.len, n_out = m->g->outputs.len;
  KILN_TRY(kiln_graph_check_inputs(m->g, n_in, inputs));
  kiln_val **ins = kiln_xcalloc((size_t)n_in + 1, sizeof *ins);
  kiln_val **outs = kiln_xcalloc((size_t)n_out + 1, sizeof *outs);
  for (int i = 0; i < n_in; i++) { /* borrowed: the shells do not own the tensors */
    ins[i] = kiln_val_new(KILN_TYPE_TENSOR);
    ins[i]->t = (kiln_tensor *)inputs[i];
  }
  kiln_status st = kiln_interp_run(m->g, NULL, n_in, ins, outs);
  for (int i = 0; i < n_out; i++) {
    if (!st && (outs[i]->kind != KILN_TYPE_TENSOR || !outs[i]->t))
      st = kiln_unsupported("output '%s' is not a tensor", kiln_model_output_name(m, i));
  }
  for (int i = 0; i < n_out; i++) {
    outputs[i] = st ? NULL : outs[i]->t;
    if (!st) outs[i]->t = NULL;
    kiln_val_free(outs[i]);
  }
  for (int i = 0; i < n_in; i++) {
    ins[i]->t = NULL;
    kiln_val_free(ins[i]);
  }
  free(ins);
  free(outs);
  return st;
}
