/* Standalone C (standalone.h): the compiled program written out as C files and weights.
 *
 * The generated model.c holds the kernels (from the C backend) and one function that
 * calls them in step order with pointers computed from the memory plan: arena offsets,
 * offsets in the weights blob (constants and packed constants), and the caller's inputs.
 * Alias steps need no code (the plan gives a view the same offset).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "standalone.h"
#include "standalone_internal.h"

/* The weights file: magic, payload bytes, FNV-1a 64 of the payload (u64s in native byte order,
 * as the loader in standalone_text.c reads them), the payload. */
#define WEIGHTS_MAGIC "KILNWTS2"
enum { WEIGHTS_HEAD = 24, COMMENT_MAX = 200 };

typedef struct emitter {
  const kiln_program *p;
  const kiln_plan *plan;
  const kiln_graph *g;
  const char *name;
  int64_t *const_off;  /* per value id: offset in the weights blob, or -1 */
  int64_t *packed_off; /* per packed constant */
  int64_t blob_bytes;
  uint64_t blob_sum; /* the payload's checksum */
} emitter;

static int64_t value_bytes(const kiln_value *v) {
  int64_t n = (int64_t)kiln_dtype_size(v->type.dtype);
  for (int d = 0; d < v->type.rank; d++) n *= v->type.dims[d].value;
  return n;
}

static int64_t place(emitter *e, int64_t bytes) {
  int64_t off = e->blob_bytes;
  e->blob_bytes += (bytes + 63) / 64 * 64;
  return off;
}

static kiln_status use_value(emitter *e, int v) {
  const kiln_loc *l = &e->plan->loc[v];
  const kiln_value *val = &e->g->values.data[v];
  if (l->kind == KILN_LOC_CONST && e->const_off[v] < 0) {
    if (val->type.dtype == KILN_STRING)
      return kiln_unsupported("standalone C: constant '%s' holds strings", val->name);
    e->const_off[v] = place(e, (int64_t)kiln_tensor_nbytes(val->data));
  }
  if (l->kind == KILN_LOC_HEAP || l->kind == KILN_LOC_NONE)
    return kiln_unsupported("standalone C: value '%s' has no static storage", val->name);
  return KILN_OK;
}

/* The io tables hold at most 8 dims per input or output. */
static kiln_status check_ranks(const emitter *e) {
  for (int k = 0; k < 2; k++) {
    const int *ids = k ? e->g->outputs.data : e->g->inputs.data;
    for (int i = 0; i < (k ? e->g->outputs.len : e->g->inputs.len); i++)
      if (e->g->values.data[ids[i]].type.rank > 8)
        return kiln_unsupported("standalone C: %s '%s' has rank %d (at most 8)",
                                k ? "output" : "input", e->g->values.data[ids[i]].name,
                                e->g->values.data[ids[i]].type.rank);
  }
  return KILN_OK;
}

/* Checks that every step compiles to code and lays out the weights blob. */
static kiln_status layout(emitter *e) {
  char label[200];
  for (int s = 0; s < e->p->steps.len; s++) {
    const kiln_step *st = &e->p->steps.data[s];
    if (st->kind == KILN_STEP_FALLBACK)
      return kiln_unsupported("standalone C needs every node lowered; %s runs its reference "
                              "kernel (%s)",
                              kiln_node_label(&e->g->nodes.data[st->node], label, sizeof label),
                              st->reason ? st->reason : "fallback");
    for (int a = 0; st->kind == KILN_STEP_KERNEL && a < st->n_args; a++) {
      const kiln_arg *arg = &st->args[a];
      if (arg->kind == KILN_ARG_VALUE) KILN_TRY(use_value(e, arg->id));
      else if (arg->kind == KILN_ARG_PACKED && e->packed_off[arg->id] < 0)
        e->packed_off[arg->id] = place(e, (int64_t)kiln_tensor_nbytes(e->p->packed.data[arg->id]));
    }
  }
  for (int i = 0; i < e->g->outputs.len; i++) KILN_TRY(use_value(e, e->g->outputs.data[i]));
  for (int i = 0; i < e->g->inputs.len; i++) {
    const kiln_value *v = &e->g->values.data[e->g->inputs.data[i]];
    if (v->type.kind != KILN_TYPE_TENSOR || !kiln_type_is_static(&v->type))
      return kiln_unsupported("standalone C: input '%s' has no static tensor type", v->name);
  }
  return check_ranks(e);
}

/* FNV-1a 64, as weights_checksum in the emitted loader. */
static uint64_t checksum(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

/* The weights file in memory (WEIGHTS_HEAD + blob_bytes bytes); sets e->blob_sum. */
static kiln_status pack_blob(emitter *e, unsigned char **out) {
  size_t n = WEIGHTS_HEAD + (size_t)e->blob_bytes;
  unsigned char *buf = calloc(1, n);
  *out = buf;
  if (!buf) return kiln_error(KILN_ERR_OOM, "standalone C: weights of %zu bytes", n);
  memcpy(buf, WEIGHTS_MAGIC, 8);
  uint64_t payload = (uint64_t)e->blob_bytes;
  memcpy(buf + 8, &payload, 8);
  for (int v = 0; v < e->g->values.len; v++)
    if (e->const_off[v] >= 0) {
      const kiln_tensor *t = e->g->values.data[v].data;
      memcpy(buf + WEIGHTS_HEAD + e->const_off[v], t->data, kiln_tensor_nbytes(t));
    }
  for (int i = 0; i < e->p->packed.len; i++)
    if (e->packed_off[i] >= 0) {
      const kiln_tensor *t = e->p->packed.data[i];
      memcpy(buf + WEIGHTS_HEAD + e->packed_off[i], t->data, kiln_tensor_nbytes(t));
    }
  e->blob_sum = checksum(buf + WEIGHTS_HEAD, (size_t)e->blob_bytes);
  memcpy(buf + 16, &e->blob_sum, 8);
  return KILN_OK;
}

/* ---- model.h ---- */
static void emit_io_table(const emitter *e, kiln_strbuf *b, const char *what, int n,
                          const int *ids) {
  kiln_strbuf_printf(b, "const %s_io %s_%s[%d] = {\n", e->name, e->name, what, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const kiln_value *v = &e->g->values.data[ids[i]];
    kiln_strbuf file = {0};
    kiln_esc_file_name(&file, v->name);
    kiln_strbuf_printf(b, "    {\"");
    kiln_esc_c_string(b, v->name);
    kiln_strbuf_printf(b, "\", \"");
    kiln_esc_c_string(b, file.data);
    kiln_strbuf_printf(b, "\", \"%s\", %d, {", kiln_dtype_name(v->type.dtype), v->type.rank);
    kiln_strbuf_free(&file);
    for (int d = 0; d < v->type.rank; d++)
      kiln_strbuf_printf(b, "%s%lld", d ? ", " : "", (long long)v->type.dims[d].value);
    kiln_strbuf_printf(b, "%s}, %lld},\n", v->type.rank ? "" : "0", (long long)value_bytes(v));
  }
  kiln_strbuf_printf(b, "};\n");
}

/* The opening of a file's comment: NAME.EXT: graph 'GRAPH' (the name escaped for a comment). */
static void emit_title(const emitter *e, kiln_strbuf *b, const char *ext) {
  kiln_strbuf_printf(b, "/* %s.%s: graph '", e->name, ext);
  kiln_esc_c_comment(b, e->g->name, COMMENT_MAX);
  kiln_strbuf_printf(b, "'");
}

static void emit_header(const emitter *e, kiln_strbuf *b) {
  const char *n = e->name;
  emit_title(e, b, "h");
  kiln_strbuf_printf(
      b,
      " compiled by Kiln. Build: cc -O2 main.c %s.c -lm\n"
      " * (add -fopenmp for threads). Not thread-safe: one run at a time. */\n"
      "#ifndef %s_H_\n#define %s_H_\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
      "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n"
      "typedef struct %s_io {\n  const char *name;\n"
      "  const char *file; /* the name as a file name: bytes outside "
      "[A-Za-z0-9_.-] as %%XX */\n  const char *dtype; /* f32, "
      "i64, ... (elements in native byte order) */\n  int rank;\n"
      "  int64_t dims[8];\n  size_t bytes;\n} %s_io;\n\n"
      "extern const %s_io %s_inputs[], %s_outputs[];\n\n"
      "/* Reads the weights file (%s.bin), checks its size and checksum, and allocates\n"
      " * the arena (%lld bytes). Returns 0, or -1 with a message on stderr (a\n"
      " * missing, foreign, truncated or corrupted file). */\n"
      "int %s_init(const char *weights_path);\n"
      "/* in[i]: data of input i; out[i]: a buffer of %s_outputs[i].bytes.\n"
      " * Returns 0, or -1 with a message on stderr when the input is invalid\n"
      " * (an index out of range); the outputs are then not written. */\n"
      "int %s_run(const void *const *in, void *const *out);\n"
      "void %s_free(void);\n\n#endif\n",
      n, n, n, n, e->g->inputs.len, n, e->g->outputs.len, n, n, n, n, n, n,
      (long long)e->plan->arena_bytes, n, n, n, n);
}

/* ---- model.c ---- */
static void emit_ptr(const emitter *e, int s, int a, kiln_strbuf *b) {
  const kiln_arg *arg = &e->p->steps.data[s].args[a];
  if (arg->kind == KILN_ARG_PACKED) {
    kiln_strbuf_printf(b, "W + %lld", (long long)e->packed_off[arg->id]);
  } else if (arg->kind == KILN_ARG_SCRATCH) {
    kiln_strbuf_printf(b, "A + %lld", (long long)e->plan->arg_offset[e->plan->arg_base[s] + a]);
  } else {
    const kiln_loc *l = &e->plan->loc[arg->id];
    if (l->kind == KILN_LOC_ARENA) kiln_strbuf_printf(b, "A + %lld", (long long)l->offset);
    else if (l->kind == KILN_LOC_CONST)
      kiln_strbuf_printf(b, "W + %lld", (long long)e->const_off[arg->id]);
    else kiln_strbuf_printf(b, "(void *)in[%d]", l->index);
  }
}

/* A kernel that checks its input: its error flag is cleared before and read after. */
static void emit_check(const emitter *e, int s, bool after, kiln_strbuf *b) {
  const kiln_step *st = &e->p->steps.data[s];
  if (!st->check_msg || st->check_arg < 0 || st->check_arg >= st->n_args) return;
  int64_t off = e->plan->arg_offset[e->plan->arg_base[s] + st->check_arg];
  if (!after) {
    kiln_strbuf_printf(b, "    *(int32_t *)(A + %lld) = 0;\n", (long long)off);
    return;
  }
  char lb[200];
  kiln_strbuf msg = {0}; /* one line whatever the names hold, then a C string */
  kiln_strbuf_printf(&msg, "%s: ", e->name);
  kiln_esc_line(&msg, kiln_node_label(&e->g->nodes.data[st->node], lb, sizeof lb));
  kiln_strbuf_printf(&msg, ": ");
  kiln_esc_line(&msg, st->check_msg);
  kiln_strbuf_printf(b, "    if (*(int32_t *)(A + %lld)) {\n      fputs(\"", (long long)off);
  kiln_esc_c_string(b, msg.data);
  kiln_strbuf_printf(b, "\\n\", stderr);\n      return -1;\n    }\n");
  kiln_strbuf_free(&msg);
}

static void emit_steps(const emitter *e, kiln_strbuf *b) {
  for (int s = 0; s < e->p->steps.len; s++) {
    const kiln_step *st = &e->p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    const kiln_tkernel *k = e->p->module->kernels.data[st->kernel];
    kiln_strbuf_printf(b, "  { /* step %d: ", s);
    kiln_esc_c_comment(b, k->origin ? k->origin : "", COMMENT_MAX);
    kiln_strbuf_printf(b, " */\n    void *const a[] = {");
    for (int a = 0; a < st->n_args; a++) {
      kiln_strbuf_printf(b, "%s", a ? ", " : "");
      emit_ptr(e, s, a, b);
    }
    kiln_strbuf_printf(b, "%s};\n", st->n_args ? "" : "0");
    emit_check(e, s, false, b);
    kiln_strbuf_printf(b, "    %s_k_%s(a);\n", e->name, k->name);
    emit_check(e, s, true, b);
    kiln_strbuf_printf(b, "  }\n");
  }
}

static void emit_outputs(const emitter *e, kiln_strbuf *b) {
  for (int i = 0; i < e->g->outputs.len; i++) {
    int v = e->g->outputs.data[i];
    const kiln_loc *l = &e->plan->loc[v];
    kiln_strbuf_printf(b, "  memcpy(out[%d], ", i);
    if (l->kind == KILN_LOC_ARENA) kiln_strbuf_printf(b, "A + %lld", (long long)l->offset);
    else if (l->kind == KILN_LOC_CONST)
      kiln_strbuf_printf(b, "W + %lld", (long long)e->const_off[v]);
    else kiln_strbuf_printf(b, "in[%d]", l->index);
    kiln_strbuf_printf(b, ", %lld);\n", (long long)value_bytes(&e->g->values.data[v]));
  }
}

static kiln_status emit_source(const emitter *e, kiln_strbuf *b) {
  kiln_codegen_opts co = kiln_codegen_opts_default();
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s_k_", e->name);
  co.prefix = prefix;
  emit_title(e, b, "c");
  kiln_strbuf_printf(b,
                     " compiled by Kiln (%d steps). */\n"
                     "#include <errno.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                     "#include <string.h>\n\n#include \"%s.h\"\n\n",
                     e->p->steps.len, e->name);
  KILN_TRY(kiln_codegen_c_module(e->p->module, &co, b));
  kiln_strbuf_printf(b, "\n");
  emit_io_table(e, b, "inputs", e->g->inputs.len, e->g->inputs.data);
  emit_io_table(e, b, "outputs", e->g->outputs.len, e->g->outputs.data);
  int64_t arena = (e->plan->arena_bytes + 64 + 63) / 64 * 64, w = e->blob_bytes + 64;
  const char *n = e->name;
  kiln_strbuf_printf(b,
                     "\nstatic const uint64_t weights_bytes = %lluu, weights_sum = 0x%016llxu;\n"
                     "static const size_t arena_alloc = %lldu, weights_alloc = %lldu;\n\n",
                     (unsigned long long)e->blob_bytes, (unsigned long long)e->blob_sum,
                     (long long)arena, (long long)w);
  kiln_standalone_expand(b, kiln_standalone_weights_c, n);
  kiln_strbuf_printf(b, "int %s_run(const void *const *in, void *const *out) {\n", n);
  kiln_strbuf_printf(b, "  (void)in;\n");
  emit_steps(e, b);
  emit_outputs(e, b);
  kiln_strbuf_printf(b, "  return 0;\n}\n");
  return KILN_OK;
}

static kiln_status write_text(const char *dir, const char *file, const char *ext, const void *data,
                              size_t len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s%s", dir, file, ext);
  return kiln_write_file(path, data ? data : "", len);
}

static kiln_status check_name(const char *name) {
  bool ok = name && (name[0] == '_' || ((name[0] | 32) >= 'a' && (name[0] | 32) <= 'z')) &&
            strlen(name) < 64;
  for (const char *s = name; ok && *s; s++)
    ok = *s == '_' || (*s >= '0' && *s <= '9') || ((*s | 32) >= 'a' && (*s | 32) <= 'z');
  return ok ? KILN_OK : kiln_invalid("standalone C: '%s' is not a C identifier", name);
}

kiln_status kiln_standalone_text(const kiln_program *p, const kiln_plan *plan, const char *name,
                                 kiln_standalone_files *out) {
  memset(out, 0, sizeof *out);
  KILN_TRY(check_name(name));
  emitter e = {p, plan, p->graph, name, NULL, NULL, 0, 0};
  e.const_off = kiln_xmalloc(sizeof(int64_t) * ((size_t)e.g->values.len + 1));
  e.packed_off = kiln_xmalloc(sizeof(int64_t) * ((size_t)e.p->packed.len + 1));
  memset(e.const_off, 0xff, sizeof(int64_t) * ((size_t)e.g->values.len + 1));
  memset(e.packed_off, 0xff, sizeof(int64_t) * ((size_t)e.p->packed.len + 1));
  kiln_status st = layout(&e);
  if (!st) st = pack_blob(&e, &out->bin); /* first: the source holds its checksum */
  if (!st) {
    out->bin_len = WEIGHTS_HEAD + (size_t)e.blob_bytes;
    emit_header(&e, &out->h);
    st = emit_source(&e, &out->c);
  }
  if (!st) kiln_standalone_expand(&out->main, kiln_standalone_main_c, name);
  free(e.const_off);
  free(e.packed_off);
  if (st) kiln_standalone_files_free(out);
  return st;
}

void kiln_standalone_files_free(kiln_standalone_files *f) {
  kiln_strbuf_free(&f->h);
  kiln_strbuf_free(&f->c);
  kiln_strbuf_free(&f->main);
  free(f->bin);
  memset(f, 0, sizeof *f);
}

kiln_status kiln_emit_standalone(const kiln_compiled *c, const char *dir, const char *name) {
  kiln_standalone_files f;
  KILN_TRY(kiln_standalone_text(kiln_compiled_program(c), kiln_compiled_plan(c), name, &f));
  kiln_status st = write_text(dir, name, ".h", f.h.data, f.h.len);
  if (!st) st = write_text(dir, name, ".c", f.c.data, f.c.len);
  if (!st) st = write_text(dir, name, ".bin", f.bin, f.bin_len);
  if (!st) st = write_text(dir, "main", ".c", f.main.data, f.main.len);
  kiln_standalone_files_free(&f);
  return st;
}
