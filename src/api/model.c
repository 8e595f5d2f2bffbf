/* The convenience layer of include/kiln.h over the graph IR and the interpreter. */
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

struct kiln_model {
  kiln_graph *g;
  kiln_compiled *compiled; /* NULL: run with the interpreter */
};

kiln_status kiln_load_graph(const char *path, kiln_graph **out) {
  size_t n = strlen(path);
  if (n > 5 && !strcmp(path + n - 5, ".kiln")) {
    char *text;
    size_t len;
    KILN_TRY(kiln_read_file(path, &text, &len));
    kiln_status st = kiln_graph_parse(text, path, out);
    free(text);
    KILN_TRY(st);
  } else {
    KILN_TRY(kiln_onnx_load(path, out));
  }
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

kiln_status kiln_model_compile(kiln_model *m, const kiln_compile_opts *o) {
  kiln_compiled_free(m->compiled);
  m->compiled = NULL;
  kiln_compile_opts opts;
  if (o) opts = *o;
  else kiln_compile_opts_init(&opts);
  opts.take_graph = false; /* the model keeps its graph */
  return kiln_compile(m->g, &opts, &m->compiled);
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
