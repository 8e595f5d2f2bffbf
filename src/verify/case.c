/* Case directories: a failing graph with its inputs and what failed, replayable with
 * `kiln verify DIR` (see verify.h for the layout). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx.h"
#include "verify.h"

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = kiln_xmalloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static char *input_path(const char *dir, int i) {
  char name[32];
  snprintf(name, sizeof name, "input_%d.pb", i);
  return join(dir, name);
}

/* The --backend flag that replays the layers of res ("" for the default, cpu alone). */
static void backend_flag(const kiln_verify_result *res, kiln_strbuf *out) {
  bool targets[KILN_TARGET_COUNT] = {0};
  for (int i = 0; res && i < res->layers.len; i++) {
    const kiln_target *t = kiln_layer_target(res->layers.data[i].kind);
    if (t) targets[t->id] = true;
  }
  kiln_strbuf list = {0};
  kiln_verify_targets_str(targets, &list);
  if (res && strcmp(list.data, kiln_target_default()->name))
    kiln_strbuf_printf(out, " --backend %s", list.data);
  kiln_strbuf_free(&list);
}

const char *kiln_verify_replay_command(const char *dir, const kiln_verify_result *res, char *buf,
                                       size_t len) {
  char threads[560] = "";
  int at = 0;
  if (res && res->threads > 1)
    at = snprintf(threads, sizeof threads, " --threads %d", res->threads);
  if (res && res->sched_seed)
    at += snprintf(threads + at, sizeof threads - (size_t)at, " --sched-seed %llu",
                   (unsigned long long)res->sched_seed);
  if (res && res->standalone)
    at += snprintf(threads + at, sizeof threads - (size_t)at, " --standalone");
  if (res && res->precision[0]) /* letters, digits and ":=/,": no quoting needed */
    at += snprintf(threads + at, sizeof threads - (size_t)at, " --precision-policy %s",
                   res->precision);
  if (res && res->fallback[0] && (size_t)at < sizeof threads) /* op names: letters, commas */
    snprintf(threads + at, sizeof threads - (size_t)at, " --force-fallback %s", res->fallback);
  kiln_strbuf flag = {0};
  backend_flag(res, &flag);
  snprintf(buf, len, "kiln verify %s%s%s", dir, flag.data ? flag.data : "", threads);
  kiln_strbuf_free(&flag);
  return buf;
}

/* case.txt in dir; its replay command names the case's final folder, named. */
static kiln_status write_info(const char *dir, const char *named, const kiln_verify_result *res) {
  kiln_strbuf b = {0};
  const kiln_layer_result *f =
      res && res->first_failing >= 0 ? &res->layers.data[res->first_failing] : NULL;
  kiln_strbuf_printf(&b, "signature: %s\n", res && res->signature[0] ? res->signature : "-");
  kiln_strbuf_printf(&b, "layer: %s\n", f ? f->name : "-");
  if (res && res->pass[0])
    kiln_strbuf_printf(&b, "pass: %s (application %d)\n", res->pass, res->pass_application);
  else kiln_strbuf_printf(&b, "pass: -\n");
  kiln_strbuf_printf(&b, "where: "); /* names from the model: one line each, escaped */
  kiln_esc_line(&b, res && res->where[0] ? res->where : "-");
  if (f && f->msg[0]) kiln_strbuf_printf(&b, "\nmessage: "), kiln_esc_line(&b, f->msg);
  kiln_strbuf_printf(&b, "\n");
  if (res && res->threads > 1) kiln_strbuf_printf(&b, "threads: %d\n", res->threads);
  if (res && res->precision[0]) kiln_strbuf_printf(&b, "precision: %s\n", res->precision);
  if (res && res->fallback[0]) kiln_strbuf_printf(&b, "fallback: %s\n", res->fallback);
  if (res && res->standalone) kiln_strbuf_printf(&b, "standalone: yes\n");
  char cmd[1200];
  kiln_strbuf_printf(&b, "command: %s\n", kiln_verify_replay_command(named, res, cmd, sizeof cmd));
  char *path = join(dir, "case.txt");
  kiln_status st = kiln_write_file(path, b.data, b.len);
  free(path);
  kiln_strbuf_free(&b);
  return st;
}

void kiln_verify_log(FILE *log, const char *fmt, ...) {
  if (!log) return;
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf text = {0}, line = {0}, shown = {0};
  kiln_strbuf_vprintf(&text, fmt, ap);
  va_end(ap);
  kiln_esc_line(&line, text.data ? text.data : "");
  kiln_esc_terminal(&shown, line.data ? line.data : "");
  fprintf(log, "%s\n", shown.data ? shown.data : "");
  fflush(log);
  kiln_strbuf_free(&text), kiln_strbuf_free(&line), kiln_strbuf_free(&shown);
}

/* The files a case folder holds (model.onnx, model.kiln, case.txt, input_<N>.pb); it may also
 * hold the folder "reduced" (kiln reduce's default --out, kiln fuzz --reduce). */
static bool is_case_file(const char *name) {
  if (!strcmp(name, "model.onnx") || !strcmp(name, "model.kiln") || !strcmp(name, "case.txt"))
    return true;
  if (strncmp(name, "input_", 6)) return false;
  size_t n = strspn(name + 6, "0123456789");
  return n > 0 && !strcmp(name + 6 + n, ".pb");
}

static bool is_case(const char *dir) { /* reduced/ of a case: a case itself (kiln reduce's) */
  kiln_status st = kiln_verify_check_case_dest(dir, NULL);
  bool ok = st == KILN_OK;
  kiln_status_free(st);
  return ok;
}

kiln_status kiln_verify_check_case_dest(const char *dir, const char *input) {
  struct stat sb;
  if (!dir || !*dir) return kiln_invalid("a case needs a folder");
  if (stat(dir, &sb) != 0) return KILN_OK; /* a new folder */
  if (!S_ISDIR(sb.st_mode)) return kiln_invalid("'%s' exists and is not a folder", dir);
  if (input && kiln_same_file(dir, input))
    return kiln_invalid("'%s' is the input folder itself: write the case to another folder", dir);
  char *rd = realpath(dir, NULL), *ri = input ? realpath(input, NULL) : NULL;
  bool under = rd && ri && !strncmp(ri, rd, strlen(rd)) && ri[strlen(rd)] == '/';
  free(rd), free(ri);
  if (under) /* the case replaces dir whole: the input in it would go with it */
    return kiln_invalid("'%s' holds the input '%s': write the case to another folder", dir, input);
  struct stat ib; /* a model or case folder as input: its model.onnx */
  char *model = !input                                         ? NULL
                : stat(input, &ib) == 0 && S_ISDIR(ib.st_mode) ? join(input, "model.onnx")
                                                               : kiln_xstrdup(input);
  DIR *d = opendir(dir);
  kiln_status st = d ? KILN_OK : kiln_system_error("cannot read the folder '%s'", dir);
  for (struct dirent *e; !st && (e = readdir(d));) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, ".."))) continue;
    char *path = join(dir, e->d_name);
    struct stat eb; /* an entry of a case is a file: a folder or link of that name is not ours */
    bool ok = lstat(path, &eb) == 0 &&
              ((S_ISREG(eb.st_mode) && is_case_file(e->d_name)) ||
               (S_ISDIR(eb.st_mode) && !strcmp(e->d_name, "reduced") && is_case(path)));
    if (!ok) {
      st = kiln_invalid("'%s' is a folder that is not a case folder (it holds '%s'): give a new "
                        "or empty folder",
                        dir, e->d_name);
    } else if (model && kiln_same_file(path, model)) {
      st = kiln_invalid("writing the case to '%s' would replace the input model '%s' (its %s): "
                        "give another folder",
                        dir, input, e->d_name);
    }
    free(path);
  }
  if (d) closedir(d);
  free(model);
  return st;
}

static kiln_status write_files(const char *dir, const char *named, const kiln_graph *g, int n_in,
                               kiln_val *const *inputs, const kiln_verify_result *res) {
  char *path = join(dir, "model.onnx");
  kiln_status st = kiln_onnx_save(g, path);
  free(path);
  KILN_TRYF(st, "writing the case");
  kiln_strbuf text = {0};
  kiln_graph_print(g, &text, -1);
  path = join(dir, "model.kiln");
  st = kiln_write_file(path, text.data ? text.data : "", text.len);
  free(path);
  kiln_strbuf_free(&text);
  for (int i = 0; !st && i < n_in; i++) {
    path = input_path(dir, i);
    st = kiln_pb_write_tensor(path, inputs[i]->t, g->values.data[g->inputs.data[i]].name);
    free(path);
  }
  if (!st) st = write_info(dir, named, res);
  return st;
}

/* A case folder is always written whole (kiln_dir_begin: built next to it, renamed into place),
 * so a full disk or a killed run never leaves half a case. An existing folder is replaced
 * whole, so it may hold nothing but an earlier case (kiln_verify_check_case_dest): a folder of
 * the user's own files, or the one holding the input model, is refused, never written into. */
kiln_status kiln_verify_write_case(const char *dir, const kiln_graph *g, int n_in,
                                   kiln_val *const *inputs, const kiln_verify_result *res) {
  if (n_in != g->inputs.len)
    return kiln_invalid("the graph takes %d inputs, %d given", g->inputs.len, n_in);
  for (int i = 0; i < n_in; i++)
    if (!inputs[i] || inputs[i]->kind != KILN_TYPE_TENSOR || !inputs[i]->t)
      return kiln_unsupported("case: input '%s' is not a tensor",
                              g->values.data[g->inputs.data[i]].name);
  kiln_status st = kiln_verify_check_case_dest(dir, NULL);
  kiln_dir_writer w;
  if (!st) st = kiln_dir_begin(dir, &w);
  if (!st) {
    st = write_files(w.tmp, dir, g, n_in, inputs, res);
    if (!st) st = kiln_dir_commit(&w);
    else kiln_dir_abort(&w);
  }
  return st ? kiln_status_annotate(st, "writing the case to '%s'", dir) : KILN_OK;
}

void kiln_verify_case_field(const char *text, const char *key, char *out, size_t len) {
  size_t k = strlen(key);
  out[0] = 0;
  for (const char *p = text; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > k + 1 && !strncmp(p, key, k) && p[k] == ':' && p[k + 1] == ' ') {
      snprintf(out, len, "%.*s", (int)(n - k - 2), p + k + 2);
      return;
    }
    p = e ? e + 1 : NULL;
  }
}

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* The inputs must fit the graph before anything runs: a wrong file is the user's error. */
static kiln_status check_loaded(const char *dir, const kiln_graph *g, kiln_val **vals) {
  char *extra = input_path(dir, g->inputs.len);
  bool more = file_exists(extra);
  free(extra);
  if (more)
    return kiln_invalid("input_%d.pb is one input too many: the model takes %d input%s",
                        g->inputs.len, g->inputs.len, g->inputs.len == 1 ? "" : "s");
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    const kiln_tensor *t = vals[i]->kind == KILN_TYPE_TENSOR ? vals[i]->t : NULL;
    KILN_TRYF(kiln_graph_check_input(v, t), "input_%d.pb", i);
  }
  const kiln_tensor **t = kiln_xcalloc((size_t)g->inputs.len + 1, sizeof *t);
  for (int i = 0; i < g->inputs.len; i++)
    t[i] = vals[i]->kind == KILN_TYPE_TENSOR ? vals[i]->t : NULL;
  kiln_status st = kiln_graph_check_inputs(g, g->inputs.len, t);
  free(t);
  return st;
}

kiln_status kiln_verify_load_inputs(const char *dir, const kiln_graph *g, kiln_val **vals) {
  for (int i = 0; i < g->inputs.len; i++) {
    const kiln_value *v = &g->values.data[g->inputs.data[i]];
    char *path = input_path(dir, i);
    kiln_status st = kiln_pb_read_value(path, &v->type, &vals[i]);
    free(path);
    KILN_TRYF(st, "input %d ('%s')", i, v->name);
  }
  return check_loaded(dir, g, vals);
}

kiln_status kiln_verify_load_case(const char *dir, kiln_graph **g, kiln_val ***inputs, int *n,
                                  char *signature, size_t sig_len) {
  *g = NULL, *inputs = NULL, *n = 0;
  char *path = join(dir, "model.onnx");
  kiln_status st = kiln_onnx_load(path, g);
  free(path);
  if (!st) st = kiln_ops_infer_graph(*g);
  kiln_val **vals = NULL;
  if (!st) {
    vals = kiln_xcalloc((size_t)(*g)->inputs.len + 1, sizeof *vals);
    st = kiln_verify_load_inputs(dir, *g, vals);
  }
  if (!st && signature && sig_len) {
    char *text = NULL;
    size_t len = 0;
    path = join(dir, "case.txt");
    kiln_status e = kiln_read_file(path, &text, &len);
    free(path);
    signature[0] = 0;
    if (!e) kiln_verify_case_field(text, "signature", signature, sig_len);
    kiln_status_free(e); /* a case without case.txt replays without a signature */
    free(text);
  }
  if (st) {
    for (int i = 0; vals && *g && i < (*g)->inputs.len; i++) kiln_val_free(vals[i]);
    free(vals);
    kiln_graph_free(*g);
    *g = NULL;
    return kiln_status_annotate(st, "case '%s'", dir);
  }
  *inputs = vals;
  *n = (*g)->inputs.len;
  return KILN_OK;
}
