/* The layer "cpu (standalone C)" (opts.standalone): the compiled model written out as the
 * standalone program that `kiln compile --emit-c` writes (runtime/standalone.h: its own
 * steps over one arena, its weights file, its main.c), built with the C compiler the way its
 * header says (cc -O2 main.c model.c -lm), run on the layer's inputs as raw files, and its
 * .npy outputs compared with the reference. That program executes the plan without the
 * runtime's executor: a fault of the emitter, of the weights layout or of main.c shows only
 * here. Skipped (never a finding) where the program cannot be written: a step left to a
 * reference kernel, an input or output that is not a tensor or has no .npy dtype. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "runner_internal.h"
#include "runtime/standalone.h"

typedef struct sa_dir {
  char *path;
  KILN_VEC(char *) files;
} sa_dir;

static char *sa_file(sa_dir *d, const char *name) {
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "%s/%s", d->path, name);
  kiln_vec_push(&d->files, p.data);
  return p.data;
}

static void sa_dir_free(sa_dir *d) {
  for (int i = 0; i < d->files.len; i++) unlink(d->files.data[i]), free(d->files.data[i]);
  kiln_vec_free(&d->files);
  if (d->path) rmdir(d->path);
  free(d->path);
}

static void sh_quote(kiln_strbuf *b, const char *s) {
  kiln_strbuf_append(b, "'", 1);
  for (; *s; s++) {
    if (*s == '\'') kiln_strbuf_printf(b, "'\\''");
    else kiln_strbuf_append(b, s, 1);
  }
  kiln_strbuf_append(b, "'", 1);
}

/* Why the program cannot be written for this graph and these inputs, or NULL. */
static const char *unsuited(const kiln_vrun *r, const kiln_graph *g) {
  for (int i = 0; i < r->n_in; i++)
    if (!r->tin[i] || !kiln_npy_has_dtype(r->tin[i]->dtype))
      return "an input is not a tensor of a .npy dtype";
  for (int i = 0; i < g->outputs.len; i++) {
    const kiln_type *t = &g->values.data[g->outputs.data[i]].type;
    if (t->kind != KILN_TYPE_TENSOR || !kiln_npy_has_dtype(t->dtype))
      return "an output is not a tensor of a .npy dtype";
  }
  return NULL;
}

/* Runs cmd (sh) with its output to log; KILN_OK when it exits 0. */
static kiln_status run_cmd(const char *what, const kiln_strbuf *cmd, const char *log) {
  kiln_strbuf full = {0};
  kiln_strbuf_printf(&full, "%s >", cmd->data);
  sh_quote(&full, log);
  kiln_strbuf_printf(&full, " 2>&1");
  int rc = system(full.data);
  kiln_strbuf_free(&full);
  if (rc == 0) return KILN_OK;
  char head[600] = "";
  FILE *f = fopen(log, "r");
  size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
  if (f) fclose(f);
  head[n] = 0;
  for (char *q = head; *q; q++)
    if (*q == '\n' || *q == '\r') *q = ' ';
  if (rc == -1) return kiln_system_error("%s: cannot start the shell", what);
  if (WIFSIGNALED(rc)) return kiln_invalid("%s died of signal %d: %s", what, WTERMSIG(rc), head);
  return kiln_invalid("%s exited with status %d: %s", what, WEXITSTATUS(rc), head);
}

/* Writes the program f into d and builds it (a program that does not build is a finding). */
static kiln_status build(const kiln_vrun *r, const kiln_standalone_files *f, sa_dir *d) {
  KILN_TRY(kiln_write_file(sa_file(d, "model.h"), f->h.data, f->h.len));
  KILN_TRY(kiln_write_file(sa_file(d, "model.c"), f->c.data, f->c.len));
  KILN_TRY(kiln_write_file(sa_file(d, "model.bin"), f->bin, f->bin_len));
  KILN_TRY(kiln_write_file(sa_file(d, "main.c"), f->main.data, f->main.len));
  const char *cc = r->o->compile.cc ? r->o->compile.cc : getenv("CC");
  kiln_strbuf cmd = {0};
  kiln_strbuf_printf(&cmd, "cd ");
  sh_quote(&cmd, d->path);
  kiln_strbuf_printf(&cmd, " && %s -O2 main.c model.c -lm -o prog", cc && *cc ? cc : "cc");
  sa_file(d, "prog");
  kiln_status st =
      run_cmd("building the standalone C (cc -O2 main.c model.c -lm)", &cmd, sa_file(d, "cc.log"));
  kiln_strbuf_free(&cmd);
  return st;
}

/* Runs the program on the inputs (raw files) and reads its outputs into outs. */
static kiln_status run_prog(const kiln_vrun *r, const kiln_graph *g, sa_dir *d, kiln_val **outs) {
  kiln_strbuf cmd = {0};
  sh_quote(&cmd, d->path);
  kiln_strbuf_printf(&cmd, "/prog -w ");
  sh_quote(&cmd, d->path);
  kiln_strbuf_printf(&cmd, "/model.bin -o ");
  sh_quote(&cmd, d->path);
  kiln_status st = KILN_OK;
  for (int i = 0; !st && i < r->n_in; i++) {
    char name[32];
    snprintf(name, sizeof name, "in%d.raw", i);
    char *p = sa_file(d, name);
    st = kiln_write_file(p, r->tin[i]->data, kiln_tensor_nbytes(r->tin[i]));
    kiln_strbuf_append(&cmd, " ", 1);
    sh_quote(&cmd, p);
  }
  const char **paths = kiln_xcalloc((size_t)g->outputs.len + 1, sizeof *paths);
  for (int i = 0; i < g->outputs.len; i++) { /* named as main.c names them */
    kiln_strbuf fn = {0};
    kiln_esc_file_name(&fn, g->values.data[g->outputs.data[i]].name);
    kiln_strbuf_printf(&fn, ".npy");
    paths[i] = sa_file(d, fn.data); /* owned by d */
    kiln_strbuf_free(&fn);
  }
  if (!st) st = run_cmd("the standalone program", &cmd, sa_file(d, "run.log"));
  kiln_strbuf_free(&cmd);
  for (int i = 0; !st && i < g->outputs.len; i++) {
    kiln_tensor *t = NULL;
    st = kiln_npy_read(paths[i], &t);
    if (!st) outs[i] = kiln_val_tensor(t);
  }
  free(paths);
  return st;
}

void kiln_vrun_standalone(kiln_vrun *r, const kiln_compiled *c) {
  kiln_layer_result *l = kiln_vrun_layer(r, KILN_LAYER_CPU, "cpu (standalone C)");
  const kiln_program *p = kiln_compiled_program(c);
  const kiln_graph *g = p->graph;
  const char *why = unsuited(r, g);
  if (why) {
    kiln_vrun_skip(l, "%s", why);
    kiln_vrun_done(r, l);
    return;
  }
  kiln_standalone_files f;
  kiln_status st = kiln_standalone_text(p, kiln_compiled_plan(c), "model", &f);
  if (st && kiln_status_code(st) == KILN_ERR_UNSUPPORTED) { /* e.g. a reference-kernel step */
    kiln_vrun_skip(l, "%s", kiln_status_message(st));
    kiln_status_free(st);
    kiln_vrun_done(r, l);
    return;
  }
  r->res->standalone = true;
  sa_dir d = {0};
  if (!st) {
    const char *td = getenv("TMPDIR");
    kiln_strbuf t = {0};
    kiln_strbuf_printf(&t, "%s/kiln-sa.XXXXXX", td && *td ? td : "/tmp");
    if (mkdtemp(t.data)) d.path = t.data, t.data = NULL;
    else st = kiln_system_error("cannot create '%s'", t.data);
    kiln_strbuf_free(&t);
  }
  kiln_val **outs = kiln_xcalloc((size_t)g->outputs.len + 1, sizeof *outs);
  if (!st) st = build(r, &f, &d);
  kiln_standalone_files_free(&f);
  if (!st) st = run_prog(r, g, &d, outs);
  if (st) kiln_vrun_errored(r, l, st);
  else kiln_vrun_compare(r, l, outs);
  if (kiln_vrun_done(r, l)) kiln_vrun_set_where(r, "the standalone C program", "");
  for (int i = 0; i < g->outputs.len; i++) kiln_val_free(outs[i]);
  free(outs);
  sa_dir_free(&d);
}
