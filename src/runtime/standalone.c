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

#include "../codegen/codegen.h"
#include "standalone.h"

#define WEIGHTS_MAGIC "KILNWTS1"

typedef struct emitter {
  const kiln_program *p;
  const kiln_plan *plan;
  const kiln_graph *g;
  const char *name;
  int64_t *const_off;  /* per value id: offset in the weights blob, or -1 */
  int64_t *packed_off; /* per packed constant */
  int64_t blob_bytes;
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
  return KILN_OK;
}

static kiln_status write_blob(const emitter *e, const char *path) {
  size_t n = 16 + (size_t)e->blob_bytes;
  unsigned char *buf = calloc(1, n);
  if (!buf) return kiln_error(KILN_ERR_OOM, "standalone C: weights of %zu bytes", n);
  memcpy(buf, WEIGHTS_MAGIC, 8);
  uint64_t payload = (uint64_t)e->blob_bytes;
  memcpy(buf + 8, &payload, 8);
  for (int v = 0; v < e->g->values.len; v++)
    if (e->const_off[v] >= 0) {
      const kiln_tensor *t = e->g->values.data[v].data;
      memcpy(buf + 16 + e->const_off[v], t->data, kiln_tensor_nbytes(t));
    }
  for (int i = 0; i < e->p->packed.len; i++)
    if (e->packed_off[i] >= 0) {
      const kiln_tensor *t = e->p->packed.data[i];
      memcpy(buf + 16 + e->packed_off[i], t->data, kiln_tensor_nbytes(t));
    }
  kiln_status st = kiln_write_file(path, buf, n);
  free(buf);
  return st;
}

/* ---- model.h ---- */
static void emit_io_table(const emitter *e, kiln_strbuf *b, const char *what, int n,
                          const int *ids) {
  kiln_strbuf_printf(b, "const %s_io %s_%s[%d] = {\n", e->name, e->name, what, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const kiln_value *v = &e->g->values.data[ids[i]];
    kiln_strbuf_printf(b, "    {\"%s\", \"%s\", %d, {", v->name, kiln_dtype_name(v->type.dtype),
                       v->type.rank);
    for (int d = 0; d < v->type.rank; d++)
      kiln_strbuf_printf(b, "%s%lld", d ? ", " : "", (long long)v->type.dims[d].value);
    kiln_strbuf_printf(b, "%s}, %lld},\n", v->type.rank ? "" : "0", (long long)value_bytes(v));
  }
  kiln_strbuf_printf(b, "};\n");
}

static void emit_header(const emitter *e, kiln_strbuf *b) {
  const char *n = e->name;
  kiln_strbuf_printf(b,
                     "/* %s.h: graph '%s' compiled by Kiln. Build: cc -O2 main.c %s.c -lm\n"
                     " * (add -fopenmp for threads). Not thread-safe: one run at a time. */\n"
                     "#ifndef %s_H_\n#define %s_H_\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
                     "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n\n"
                     "typedef struct %s_io {\n  const char *name;\n  const char *dtype; /* f32, "
                     "i64, ... (elements in native byte order) */\n  int rank;\n"
                     "  int64_t dims[8];\n  size_t bytes;\n} %s_io;\n\n"
                     "extern const %s_io %s_inputs[], %s_outputs[];\n\n"
                     "/* Reads the weights file (%s.bin) and allocates the arena (%lld bytes).\n"
                     " * Returns 0, or -1 with a message on stderr. */\n"
                     "int %s_init(const char *weights_path);\n"
                     "/* in[i]: data of input i; out[i]: a buffer of %s_outputs[i].bytes.\n"
                     " * Returns 0, or -1 with a message on stderr when the input is invalid\n"
                     " * (an index out of range); the outputs are then not written. */\n"
                     "int %s_run(const void *const *in, void *const *out);\n"
                     "void %s_free(void);\n\n#endif\n",
                     n, e->g->name, n, n, n, n, e->g->inputs.len, n, e->g->outputs.len, n, n, n, n,
                     n, n, (long long)e->plan->arena_bytes, n, n, n, n);
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

/* s as the body of a C string literal (quotes, backslashes and controls escaped). */
static void c_string(kiln_strbuf *b, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') kiln_strbuf_printf(b, "\\%c", ch);
    else if (ch < 32 || ch == 127) kiln_strbuf_printf(b, "\\%03o", ch);
    else if (ch == '%') kiln_strbuf_printf(b, "%%%%");
    else kiln_strbuf_printf(b, "%c", ch);
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
  kiln_strbuf_printf(b, "    if (*(int32_t *)(A + %lld)) {\n      fprintf(stderr, \"%s: ",
                     (long long)off, e->name);
  c_string(b, kiln_node_label(&e->g->nodes.data[st->node], lb, sizeof lb));
  kiln_strbuf_printf(b, ": ");
  c_string(b, st->check_msg);
  kiln_strbuf_printf(b, "\\n\");\n      return -1;\n    }\n");
}

static void emit_steps(const emitter *e, kiln_strbuf *b) {
  for (int s = 0; s < e->p->steps.len; s++) {
    const kiln_step *st = &e->p->steps.data[s];
    if (st->kind != KILN_STEP_KERNEL) continue;
    const kiln_tkernel *k = e->p->module->kernels.data[st->kernel];
    kiln_strbuf_printf(b, "  { /* step %d: %s */\n    void *const a[] = {", s,
                       k->origin ? k->origin : "");
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

static const char *const source_runtime =
    "static unsigned char *A, *W; /* the arena, the weights */\n\n"
    "int %s_init(const char *weights_path) {\n"
    "  FILE *f = fopen(weights_path, \"rb\");\n"
    "  unsigned char head[16];\n"
    "  uint64_t n = 0;\n"
    "  if (!f) {\n    fprintf(stderr, \"%s: cannot open %%s\\n\", weights_path);\n    return -1;\n "
    " }\n"
    "  if (fread(head, 1, 16, f) == 16) memcpy(&n, head + 8, 8);\n"
    "  if (memcmp(head, \"" WEIGHTS_MAGIC "\", 8) || n != %lldu) {\n"
    "    fprintf(stderr, \"%s: %%s is not the weights file of this model\\n\", weights_path);\n"
    "    fclose(f);\n    return -1;\n  }\n"
    "  A = aligned_alloc(64, %lldu);\n  W = aligned_alloc(64, %lldu);\n"
    "  if (!A || !W || fread(W, 1, (size_t)n, f) != (size_t)n) {\n"
    "    fprintf(stderr, \"%s: cannot load %%s\\n\", weights_path);\n"
    "    fclose(f);\n    %s_free();\n    return -1;\n  }\n"
    "  fclose(f);\n  return 0;\n}\n\n"
    "void %s_free(void) {\n  free(A);\n  free(W);\n  A = W = NULL;\n}\n\n";

static kiln_status emit_source(const emitter *e, kiln_strbuf *b) {
  kiln_codegen_opts co = kiln_codegen_opts_default();
  char prefix[128];
  snprintf(prefix, sizeof prefix, "%s_k_", e->name);
  co.prefix = prefix;
  kiln_strbuf_printf(b,
                     "/* %s.c: graph '%s' compiled by Kiln (%d steps). */\n"
                     "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
                     "#include \"%s.h\"\n\n",
                     e->name, e->g->name, e->p->steps.len, e->name);
  KILN_TRY(kiln_codegen_c_module(e->p->module, &co, b));
  kiln_strbuf_printf(b, "\n");
  emit_io_table(e, b, "inputs", e->g->inputs.len, e->g->inputs.data);
  emit_io_table(e, b, "outputs", e->g->outputs.len, e->g->outputs.data);
  int64_t arena = (e->plan->arena_bytes + 64 + 63) / 64 * 64, w = e->blob_bytes + 64;
  const char *n = e->name;
  kiln_strbuf_printf(b, source_runtime, n, n, (long long)e->blob_bytes, n, (long long)arena,
                     (long long)w, n, n, n);
  kiln_strbuf_printf(b, "int %s_run(const void *const *in, void *const *out) {\n", n);
  kiln_strbuf_printf(b, "  (void)in;\n");
  emit_steps(e, b);
  emit_outputs(e, b);
  kiln_strbuf_printf(b, "  return 0;\n}\n");
  return KILN_OK;
}

static kiln_status write_text(const char *dir, const char *file, const char *ext,
                              const kiln_strbuf *b) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s%s", dir, file, ext);
  return kiln_write_file(path, b->data ? b->data : "", b->len);
}

static kiln_status check_name(const char *name) {
  bool ok = name && (name[0] == '_' || (name[0] | 32) >= 'a') && strlen(name) < 64;
  for (const char *s = name; ok && *s; s++)
    ok = *s == '_' || (*s >= '0' && *s <= '9') || ((*s | 32) >= 'a' && (*s | 32) <= 'z');
  return ok ? KILN_OK : kiln_invalid("standalone C: '%s' is not a C identifier", name);
}

static const char *const main_template =
    "/* main.c: runs MODEL, compiled by Kiln.\n"
    " *   cc -O2 main.c MODEL.c -lm   (-fopenmp for threads)\n"
    " *   ./a.out [-w MODEL.bin] [-o DIR] [INPUT.npy ...]\n"
    " * Inputs: one .npy file (or raw bytes) per model input, in the order of MODEL_inputs,\n"
    " * holding exactly that input's dtype and shape; without files the inputs are filled with\n"
    " * a fixed pattern. Prints each output's first values and sum; with -o also writes\n"
    " * DIR/<output name>.npy. */\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "#include \"MODEL.h\"\n"
    "\n"
    "static const char *npy_descr(const char *dtype) {\n"
    "  static const char *const map[][2] = {\n"
    "      {\"f32\", \"<f4\"}, {\"f64\", \"<f8\"}, {\"f16\", \"<f2\"}, {\"i8\", \"|i1\"},  "
    "{\"u8\", \"|u1\"},\n"
    "      {\"i16\", \"<i2\"}, {\"u16\", \"<u2\"}, {\"i32\", \"<i4\"}, {\"u32\", \"<u4\"}, "
    "{\"i64\", \"<i8\"},\n"
    "      {\"u64\", \"<u8\"}, {\"bool\", \"|b1\"}};\n"
    "  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)\n"
    "    if (!strcmp(map[i][0], dtype)) return map[i][1];\n"
    "  return NULL;\n"
    "}\n"
    "\n"
    "/* Reads the data of a .npy file (version 1 to 3) or of a raw file: exactly `bytes`. */\n"
    "static int read_input(const char *path, void *dst, size_t bytes) {\n"
    "  FILE *f = fopen(path, \"rb\");\n"
    "  unsigned char h[12];\n"
    "  long skip = 0;\n"
    "  if (!f) {\n"
    "    perror(path);\n"
    "    return -1;\n"
    "  }\n"
    "  if (fread(h, 1, 12, f) == 12 && !memcmp(h, \"\\x93NUMPY\", 6))\n"
    "    skip = h[6] == 1 ? 10 + (h[8] | h[9] << 8) : 12 + (h[8] | h[9] << 8 | (long)h[10] << "
    "16);\n"
    "  char extra;\n"
    "  int ok = fseek(f, skip, SEEK_SET) == 0 && fread(dst, 1, bytes, f) == bytes &&\n"
    "           fread(&extra, 1, 1, f) == 0;\n"
    "  fclose(f);\n"
    "  if (!ok) fprintf(stderr, \"%s: does not hold %zu bytes of data\\n\", path, bytes);\n"
    "  return ok ? 0 : -1;\n"
    "}\n"
    "\n"
    "static int write_npy(const char *dir, const MODEL_io *io, const void *data) {\n"
    "  char path[4096], head[512], shape[256] = \"\";\n"
    "  const char *descr = npy_descr(io->dtype);\n"
    "  if (!descr) return 0; /* no numpy dtype: skip */\n"
    "  for (int d = 0; d < io->rank; d++)\n"
    "    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), \"%lld%s\",\n"
    "             (long long)io->dims[d], io->rank == 1 ? \",\" : d + 1 < io->rank ? \", \" : "
    "\"\");\n"
    "  int n = snprintf(head, sizeof head, \"{'descr': '%s', 'fortran_order': False, 'shape': "
    "(%s), }\",\n"
    "                   descr, shape);\n"
    "  while ((10 + n + 1) % 64) head[n++] = ' ';\n"
    "  head[n++] = '\\n';\n"
    "  snprintf(path, sizeof path, \"%s/%s.npy\", dir, io->name);\n"
    "  FILE *f = fopen(path, \"wb\");\n"
    "  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 255),\n"
    "                           (unsigned char)(n >> 8)};\n"
    "  int ok = f && fwrite(pre, 1, 10, f) == 10 && fwrite(head, 1, (size_t)n, f) == (size_t)n &&\n"
    "           fwrite(data, 1, io->bytes, f) == io->bytes;\n"
    "  if (f) ok = (fclose(f) == 0) && ok;\n"
    "  if (!ok) perror(path);\n"
    "  return ok ? 0 : -1;\n"
    "}\n"
    "\n"
    "static void fill_pattern(const MODEL_io *io, void *data) {\n"
    "  size_t n = io->bytes;\n"
    "  if (!strcmp(io->dtype, \"f32\"))\n"
    "    for (size_t i = 0; i < n / 4; i++) ((float *)data)[i] = (float)(i % 17) * 0.0625f - "
    "0.5f;\n"
    "  else if (!strcmp(io->dtype, \"i64\"))\n"
    "    for (size_t i = 0; i < n / 8; i++) ((long long *)data)[i] = (long long)(i % 3);\n"
    "  else memset(data, 0, n);\n"
    "}\n"
    "\n"
    "static void summarize(const MODEL_io *io, const void *data) {\n"
    "  printf(\"output %s (%s, %zu bytes):\", io->name, io->dtype, io->bytes);\n"
    "  double sum = 0;\n"
    "  size_t n = 0;\n"
    "  if (!strcmp(io->dtype, \"f32\")) {\n"
    "    n = io->bytes / 4;\n"
    "    for (size_t i = 0; i < n; i++) sum += ((const float *)data)[i];\n"
    "    for (size_t i = 0; i < n && i < 6; i++) printf(\" %.6g\", ((const float *)data)[i]);\n"
    "  } else if (!strcmp(io->dtype, \"i64\")) {\n"
    "    n = io->bytes / 8;\n"
    "    for (size_t i = 0; i < n; i++) sum += (double)((const long long *)data)[i];\n"
    "    for (size_t i = 0; i < n && i < 6; i++) printf(\" %lld\", ((const long long *)data)[i]);\n"
    "  }\n"
    "  printf(\"%s sum %.9g\\n\", n > 6 ? \" ...\" : \"\", sum);\n"
    "}\n"
    "\n"
    "int main(int argc, char **argv) {\n"
    "  const char *weights = \"MODEL.bin\", *out_dir = NULL;\n"
    "  void *in[MODEL_NUM_INPUTS + 1] = {0}, *out[MODEL_NUM_OUTPUTS + 1] = {0};\n"
    "  int n_files = 0, rc = 0;\n"
    "  char **files = calloc((size_t)argc, sizeof *files);\n"
    "  for (int i = 1; i < argc; i++) {\n"
    "    if (!strcmp(argv[i], \"-w\") && i + 1 < argc) weights = argv[++i];\n"
    "    else if (!strcmp(argv[i], \"-o\") && i + 1 < argc) out_dir = argv[++i];\n"
    "    else files[n_files++] = argv[i];\n"
    "  }\n"
    "  if (n_files && n_files != MODEL_NUM_INPUTS) {\n"
    "    fprintf(stderr, \"the model takes %d inputs, %d files given\\n\", MODEL_NUM_INPUTS, "
    "n_files);\n"
    "    return 2;\n"
    "  }\n"
    "  if (MODEL_init(weights) != 0) return 1;\n"
    "  for (int i = 0; i < MODEL_NUM_INPUTS && !rc; i++) {\n"
    "    in[i] = malloc(MODEL_inputs[i].bytes + 1);\n"
    "    if (n_files) rc = read_input(files[i], in[i], MODEL_inputs[i].bytes);\n"
    "    else fill_pattern(&MODEL_inputs[i], in[i]);\n"
    "  }\n"
    "  for (int i = 0; i < MODEL_NUM_OUTPUTS; i++) out[i] = malloc(MODEL_outputs[i].bytes + 1);\n"
    "  if (!rc && MODEL_run((const void *const *)in, out) != 0) rc = -1;\n"
    "  for (int i = 0; i < MODEL_NUM_OUTPUTS && !rc; i++) {\n"
    "    summarize(&MODEL_outputs[i], out[i]);\n"
    "    if (out_dir) rc = write_npy(out_dir, &MODEL_outputs[i], out[i]);\n"
    "  }\n"
    "  for (int i = 0; i < MODEL_NUM_INPUTS; i++) free(in[i]);\n"
    "  for (int i = 0; i < MODEL_NUM_OUTPUTS; i++) free(out[i]);\n"
    "  free(files);\n"
    "  MODEL_free();\n"
    "  return rc ? 1 : 0;\n"
    "}\n";

/* Writes dir/main.c from the template, with MODEL replaced by the name. */
static kiln_status emit_main(const char *dir, const char *name) {
  kiln_strbuf b = {0};
  for (const char *s = main_template; *s;) {
    const char *m = strstr(s, "MODEL");
    size_t n = m ? (size_t)(m - s) : strlen(s);
    kiln_strbuf_append(&b, s, n);
    if (!m) break;
    kiln_strbuf_printf(&b, "%s", name);
    s = m + 5;
  }
  kiln_status st = write_text(dir, "main", ".c", &b);
  kiln_strbuf_free(&b);
  return st;
}

kiln_status kiln_emit_standalone(const kiln_compiled *c, const char *dir, const char *name) {
  KILN_TRY(check_name(name));
  emitter e = {
      kiln_compiled_program(c), kiln_compiled_plan(c), kiln_compiled_graph(c), name, NULL, NULL, 0};
  e.const_off = malloc(sizeof(int64_t) * ((size_t)e.g->values.len + 1));
  e.packed_off = malloc(sizeof(int64_t) * ((size_t)e.p->packed.len + 1));
  memset(e.const_off, 0xff, sizeof(int64_t) * ((size_t)e.g->values.len + 1));
  memset(e.packed_off, 0xff, sizeof(int64_t) * ((size_t)e.p->packed.len + 1));
  kiln_strbuf h = {0}, src = {0};
  char path[4200];
  kiln_status st = layout(&e);
  if (!st) emit_header(&e, &h), st = emit_source(&e, &src);
  if (!st) st = write_text(dir, name, ".h", &h);
  if (!st) st = write_text(dir, name, ".c", &src);
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  if (!st) st = write_blob(&e, path);
  if (!st) st = emit_main(dir, name);
  kiln_strbuf_free(&h);
  kiln_strbuf_free(&src);
  free(e.const_off);
  free(e.packed_off);
  return st;
}
