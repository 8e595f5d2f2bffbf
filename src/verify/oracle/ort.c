/* ONNX Runtime as a second oracle: the Python process, requests, and the comparison.
 *
 * The child's stdin and stdout are one end of a socketpair (send with MSG_NOSIGNAL, so a
 * child that died gives an error, not SIGPIPE); its stderr is appended to python.log in the
 * temporary folder. Replies are read with poll() against the time limit. */
#include "ort.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onnx/onnx.h"

extern char **environ;

struct kiln_ort {
  kiln_ort_opts o;
  char *python;  /* the interpreter */
  char *why;     /* how it was chosen, for messages */
  char *dir;     /* temporary folder */
  char *req_dir; /* dir/req: the request folder */
  pid_t pid;     /* 0: not running */
  int fd;        /* our end of the socketpair, -1 when not running */
  char buf[4096];
  size_t buf_len;
  char version[96];
  kiln_ort_stats stats;
};

void kiln_ort_opts_init(kiln_ort_opts *o) {
  memset(o, 0, sizeof *o);
  o->timeout_s = 60;
}

const char *kiln_ort_version(const kiln_ort *o) {
  return o->version;
}
const char *kiln_ort_dir(const kiln_ort *o) {
  return o->dir;
}
kiln_ort_stats kiln_ort_get_stats(const kiln_ort *o) {
  return o->stats;
}
int kiln_ort_pid(const kiln_ort *o) {
  return (int)o->pid;
}
void kiln_ort_set_timeout(kiln_ort *o, double seconds) {
  o->o.timeout_s = seconds;
}

/* ---- the process ---- */

static void choose_python(kiln_ort *o) {
  const char *env = getenv("KILN_PYTHON");
  if (o->o.python && *o->o.python) {
    o->python = kiln_xstrdup(o->o.python), o->why = kiln_xstrdup("the python option");
  } else if (env && *env) {
    o->python = kiln_xstrdup(env), o->why = kiln_xstrdup("$KILN_PYTHON");
  } else if (access(".venv/bin/python", X_OK) == 0) {
    o->python = kiln_xstrdup(".venv/bin/python");
    o->why = kiln_xstrdup(".venv/bin/python in the current directory");
  } else {
    o->python = kiln_xstrdup("python3");
    o->why = kiln_xstrdup("python3 on the PATH: no $KILN_PYTHON, no .venv/bin/python here");
  }
}

/* Stops the child (SIGKILL) and reaps it. */
static void stop_child(kiln_ort *o) {
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
  if (o->pid > 0) {
    kill(o->pid, SIGKILL);
    while (waitpid(o->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  o->pid = 0;
  o->buf_len = 0;
}

static double request_limit(const kiln_ort *o) {
  return o->o.timeout_s > 0 ? o->o.timeout_s : 60;
}

/* Reads one reply line (without the newline) into line; "" on time-out or end of file,
 * with *timed_out telling which. */
static void read_line(kiln_ort *o, double timeout_s, char *line, size_t n, bool *timed_out) {
  double deadline = kiln_clock_seconds() + timeout_s;
  *timed_out = false;
  line[0] = 0;
  for (;;) {
    char *nl = memchr(o->buf, '\n', o->buf_len);
    if (nl) {
      size_t len = (size_t)(nl - o->buf), keep = len < n - 1 ? len : n - 1;
      memcpy(line, o->buf, keep);
      line[keep] = 0;
      o->buf_len -= len + 1;
      memmove(o->buf, nl + 1, o->buf_len);
      return;
    }
    if (o->buf_len == sizeof o->buf) o->buf_len = 0; /* an over-long line: drop its start */
    double left = deadline - kiln_clock_seconds();
    if (left <= 0) {
      *timed_out = true;
      return;
    }
    struct pollfd p = {o->fd, POLLIN, 0};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    ssize_t got = r > 0 ? read(o->fd, o->buf + o->buf_len, sizeof o->buf - o->buf_len) : -1;
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return; /* end of file: the child died */
    o->buf_len += (size_t)got;
  }
}

static kiln_status spawn_child(kiln_ort *o, const char *script, const char *log) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
    return kiln_error(KILN_ERR_IO, "socketpair: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  char *argv[] = {o->python, "-u", (char *)script, NULL};
  int rc = posix_spawnp(&o->pid, o->python, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(sv[1]);
  if (rc) {
    close(sv[0]);
    o->pid = 0;
    return kiln_unsupported("no Python with onnxruntime: cannot run '%s' (%s): %s; run `make "
                            "venv` to create .venv with onnxruntime, or set $KILN_PYTHON",
                            o->python, o->why, strerror(rc));
  }
  o->fd = sv[0];
  return KILN_OK;
}

/* Starts the child and waits for "ready <version> <opset> <ir>". */
static kiln_status start_child(kiln_ort *o) {
  kiln_strbuf script = {0}, log = {0};
  kiln_strbuf_printf(&script, "%s/ort_oracle.py", o->dir);
  kiln_strbuf_printf(&log, "%s/python.log", o->dir);
  kiln_status st = spawn_child(o, script.data, log.data);
  if (!st) {
    char line[2048];
    bool timed_out;
    /* importing onnxruntime takes a second or two: at least a minute, whatever the limit */
    read_line(o, fmax(request_limit(o), 60), line, sizeof line, &timed_out);
    char ver[32], num[2][16];
    int opset = 0, ir = 0;
    bool ready = sscanf(line, "ready %31s %15s %15s", ver, num[0], num[1]) == 3;
    kiln_status pst = ready ? kiln_parse_int(num[0], 1, 1000, "opset", &opset) : KILN_OK;
    if (!pst && ready) pst = kiln_parse_int(num[1], 1, 1000, "IR version", &ir);
    ready = ready && !pst;
    kiln_status_free(pst);
    if (ready) {
      snprintf(o->version, sizeof o->version, "onnxruntime %s (opset <= %d)", ver, opset);
    } else {
      const char *why = timed_out ? "it did not start in time"
                        : line[0] ? line
                                  : "it exited (see python.log)";
      st = kiln_unsupported("no Python with onnxruntime: '%s' (%s): %s; run `make venv` to "
                            "create .venv with onnxruntime, or set $KILN_PYTHON",
                            o->python, o->why, why);
      stop_child(o);
    }
  }
  kiln_strbuf_free(&script);
  kiln_strbuf_free(&log);
  return st;
}

static kiln_status make_dirs(kiln_ort *o) {
  const char *td = getenv("TMPDIR");
  kiln_strbuf t = {0};
  kiln_strbuf_printf(&t, "%s/kiln-ort.XXXXXX", td && *td ? td : "/tmp");
  if (!mkdtemp(t.data)) {
    kiln_status st = kiln_error(KILN_ERR_IO, "cannot create '%s': %s", t.data, strerror(errno));
    kiln_strbuf_free(&t);
    return st;
  }
  o->dir = t.data;
  kiln_strbuf r = {0}, s = {0};
  kiln_strbuf_printf(&r, "%s/req", o->dir);
  o->req_dir = r.data;
  if (mkdir(o->req_dir, 0700))
    return kiln_error(KILN_ERR_IO, "cannot create '%s': %s", o->req_dir, strerror(errno));
  kiln_strbuf_printf(&s, "%s/ort_oracle.py", o->dir);
  kiln_status st = kiln_write_file(s.data, kiln_ort_script, strlen(kiln_ort_script));
  kiln_strbuf_free(&s);
  return st;
}

kiln_status kiln_ort_open(const kiln_ort_opts *opts, kiln_ort **out) {
  *out = NULL;
  kiln_ort *o = kiln_xcalloc(1, sizeof *o);
  if (opts) o->o = *opts;
  else kiln_ort_opts_init(&o->o);
  o->fd = -1;
  choose_python(o);
  kiln_status st = make_dirs(o);
  if (!st) st = start_child(o);
  if (st) {
    kiln_ort_close(o);
    return st;
  }
  if (o->o.log) fprintf(o->o.log, "[ort] %s via %s\n", o->version, o->python);
  *out = o;
  return KILN_OK;
}

/* Removes the files of the request folder (flat). */
static void clear_dir(const char *dir, bool remove_dir) {
  char path[4352];
  static const char *const fixed[] = {"model.onnx", "outputs.txt", "ort_oracle.py", "python.log"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, fixed[i]);
    unlink(path);
  }
  for (int i = 0;; i++) { /* input_<i>.pb and output_<i>.pb are numbered without gaps */
    int gone = 0;
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
    gone += unlink(path) == 0;
    snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
    gone += unlink(path) == 0;
    if (!gone) break;
  }
  if (remove_dir) rmdir(dir);
}

void kiln_ort_close(kiln_ort *o) {
  if (!o) return;
  stop_child(o);
  if (o->dir && !o->o.keep_files) {
    if (o->req_dir) clear_dir(o->req_dir, true);
    clear_dir(o->dir, true);
  }
  free(o->python);
  free(o->why);
  free(o->dir);
  free(o->req_dir);
  free(o);
}

/* ---- requests ---- */

static kiln_status write_request(kiln_ort *o, const kiln_graph *g, int n_in,
                                 kiln_val *const *inputs) {
  if (n_in != g->inputs.len)
    return kiln_invalid("onnxruntime: %d inputs given for a graph of %d", n_in, g->inputs.len);
  clear_dir(o->req_dir, false);
  char path[4352];
  snprintf(path, sizeof path, "%s/model.onnx", o->req_dir);
  KILN_TRYF(kiln_onnx_save(g, path), "onnxruntime: exporting the model");
  for (int i = 0; i < n_in; i++) {
    const kiln_val *v = inputs[i];
    const char *name = g->values.data[g->inputs.data[i]].name;
    if (!v || v->kind != KILN_TYPE_TENSOR || !v->t)
      return kiln_unsupported("onnxruntime: input '%s' is not a tensor", name);
    snprintf(path, sizeof path, "%s/input_%d.pb", o->req_dir, i);
    KILN_TRY(kiln_pb_write_tensor(path, v->t, name));
  }
  return KILN_OK;
}

/* Restarts the child after a crash or a time-out; error when it does not come back. */
static kiln_status restart(kiln_ort *o, const char *what) {
  o->stats.crashes++;
  if (o->o.log) fprintf(o->o.log, "[ort] %s; restarting Python\n", what);
  stop_child(o);
  return start_child(o);
}

/* Sends one request and waits for the reply: "ok" or "error", else EOF (died) or time-out. */
typedef enum reply { REPLY_OK, REPLY_ERROR, REPLY_DIED, REPLY_TIMEOUT } reply;

static reply exchange(kiln_ort *o, const char *msg, char *line, size_t n) {
  line[0] = 0;
  size_t len = strlen(msg);
  if (send(o->fd, msg, len, MSG_NOSIGNAL) != (ssize_t)len) return REPLY_DIED;
  bool timed_out;
  read_line(o, request_limit(o), line, n, &timed_out);
  return timed_out                     ? REPLY_TIMEOUT
         : !strncmp(line, "ok ", 3)    ? REPLY_OK
         : !strncmp(line, "error ", 6) ? REPLY_ERROR
                                       : REPLY_DIED;
}

/* One request: KILN_OK with *n_out outputs; an UNSUPPORTED error when ORT refuses the model,
 * runs past the time limit, or its process dies on the request twice (once may be a process
 * that died after the previous request); another error when Python cannot restart. */
static kiln_status request(kiln_ort *o, const char *mode, int *n_out) {
  char msg[4400], line[2048];
  snprintf(msg, sizeof msg, "%s\t%s\n", mode, o->req_dir);
  o->stats.requests++;
  for (int attempt = 0;; attempt++) {
    if (o->pid <= 0) KILN_TRY(restart(o, "Python is not running"));
    reply r = exchange(o, msg, line, sizeof line);
    if (r == REPLY_OK) /* the oracle's count is checked like any number from outside */
      return kiln_status_annotate(kiln_parse_int(line + 3, 0, 1 << 20, "outputs", n_out),
                                  "onnxruntime: bad reply '%.60s'", line);
    if (r == REPLY_ERROR) {
      o->stats.refused++;
      return kiln_unsupported("onnxruntime: %s", line + 6);
    }
    if (r == REPLY_DIED && attempt == 0) {
      KILN_TRY(restart(o, "Python died; sending the request again"));
      continue;
    }
    if (r == REPLY_TIMEOUT) o->stats.timeouts++;
    const char *what = r == REPLY_TIMEOUT ? "onnxruntime ran past the time limit on this model"
                                          : "onnxruntime's Python process died on this model";
    KILN_TRYF(restart(o, what), "%s, and did not restart", what);
    return kiln_unsupported("%s (%.3g s limit); see %s/python.log", what, request_limit(o), o->dir);
  }
}

static kiln_status read_outputs(kiln_ort *o, const kiln_graph *g, int n, kiln_val **outputs) {
  char path[4352];
  for (int k = 0; k < n; k++) {
    const kiln_type *t = &g->values.data[g->outputs.data[k]].type;
    snprintf(path, sizeof path, "%s/output_%d.pb", o->req_dir, k);
    KILN_TRYF(kiln_pb_read_value(path, t->kind == KILN_TYPE_TENSOR ? NULL : t, &outputs[k]),
              "onnxruntime: output %d", k);
  }
  return KILN_OK;
}

kiln_status kiln_ort_run(kiln_ort *o, const kiln_graph *g, int n_in, kiln_val *const *inputs,
                         kiln_val **outputs) {
  for (int k = 0; k < g->outputs.len; k++) outputs[k] = NULL;
  KILN_TRY(write_request(o, g, n_in, inputs));
  int n = 0;
  KILN_TRY(request(o, "run", &n));
  if (n != g->outputs.len)
    return kiln_error(KILN_ERR_FAILED, "onnxruntime gave %d outputs for a graph of %d", n,
                      g->outputs.len);
  kiln_status st = read_outputs(o, g, n, outputs);
  if (st)
    for (int k = 0; k < n; k++) kiln_val_free(outputs[k]), outputs[k] = NULL;
  return st;
}

kiln_status kiln_ort_check_model(kiln_ort *o, const kiln_graph *g) {
  clear_dir(o->req_dir, false);
  char path[4352];
  snprintf(path, sizeof path, "%s/model.onnx", o->req_dir);
  KILN_TRYF(kiln_onnx_save(g, path), "exporting the model");
  int n = 0;
  kiln_status st = request(o, "check", &n);
  if (kiln_status_code(st) != KILN_ERR_UNSUPPORTED ||
      strncmp(kiln_status_message(st), "onnxruntime: ", 13))
    return st;
  o->stats.refused--; /* the checker's verdict, not a refusal of onnxruntime */
  kiln_status inv = kiln_invalid("onnx.checker: %s", kiln_status_message(st) + 13);
  kiln_status_free(st);
  return inv;
}

/* ---- comparison ---- */

static void layer_init(kiln_layer_result *l) {
  memset(l, 0, sizeof *l);
  l->kind = KILN_LAYER_REFERENCE;
  snprintf(l->name, sizeof l->name, "onnxruntime");
  l->worst_output = -1;
}

/* A refusal is a result (did not run); other errors propagate. */
static kiln_status as_not_run(kiln_status st, kiln_layer_result *l) {
  if (kiln_status_code(st) != KILN_ERR_UNSUPPORTED) return st;
  l->ran = false;
  snprintf(l->msg, sizeof l->msg, "did not run: %s", kiln_status_message(st));
  kiln_status_free(st);
  return KILN_OK;
}

kiln_status kiln_ort_check(kiln_ort *o, const kiln_graph *g, int n_in, kiln_val *const *inputs,
                           const kiln_vref *ref, kiln_layer_result *layer) {
  layer_init(layer);
  int n = g->outputs.len;
  kiln_val **outs = kiln_xcalloc((size_t)n + 1, sizeof *outs);
  kiln_status st = kiln_ort_run(o, g, n_in, inputs, outs);
  if (st) {
    free(outs);
    return as_not_run(st, layer);
  }
  layer->ran = layer->ok = true;
  for (int k = 0; k < n; k++) {
    kiln_vcheck c;
    kiln_vref_check(ref, g->outputs.data[k], outs[k], &c);
    if (layer->worst_output < 0 || c.max_ratio > layer->max_ratio)
      layer->worst_output = k, layer->max_ratio = c.max_ratio;
    if (c.max_err > layer->max_err) layer->max_err = c.max_err;
    if (!c.ok && layer->ok)
      snprintf(layer->msg, sizeof layer->msg, "output '%s': %s",
               g->values.data[g->outputs.data[k]].name, c.msg);
    layer->ok = layer->ok && c.ok;
    kiln_val_free(outs[k]);
  }
  free(outs);
  return KILN_OK;
}

/* ---- localizing a mismatch ---- */

/* Marks bad[v] for the traced values (named in outputs.txt) that fail against ref. */
static kiln_status check_traced(kiln_ort *o, const kiln_graph *g, const kiln_vref *ref, int n,
                                bool *bad) {
  char path[4352];
  snprintf(path, sizeof path, "%s/outputs.txt", o->req_dir);
  char *text = NULL;
  size_t len;
  KILN_TRY(kiln_read_file(path, &text, &len));
  char *save = NULL, *name = strtok_r(text, "\n", &save);
  kiln_status st = KILN_OK;
  for (int k = 0; k < n && name && !st; k++, name = strtok_r(NULL, "\n", &save)) {
    int v = kiln_graph_find(g, name);
    if (v < 0 || v >= ref->n_values || !ref->val[v]) continue;
    const kiln_type *t = &g->values.data[v].type;
    if (t->kind != KILN_TYPE_TENSOR) continue;
    kiln_val *got = NULL;
    snprintf(path, sizeof path, "%s/output_%d.pb", o->req_dir, k);
    if ((st = kiln_pb_read_value(path, NULL, &got))) break;
    kiln_vcheck c;
    kiln_vref_check(ref, v, got, &c);
    bad[v] = !c.ok;
    kiln_val_free(got);
  }
  free(text);
  return st;
}

/* "onnxruntime|-|" and the op kinds of the nodes (all when node < 0), sorted, each once. */
static void ops_signature(const kiln_graph *g, int node, char *sig, size_t sig_len) {
  const char *names[KILN_OP_COUNT + 1];
  int n = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    if (node >= 0 && i != node) continue;
    const char *op = g->nodes.data[i].op_type;
    bool seen = false;
    for (int j = 0; j < n && !seen; j++) seen = !strcmp(names[j], op);
    if (!seen && n < KILN_OP_COUNT) names[n++] = op;
  }
  for (int i = 1; i < n; i++) /* insertion sort: a handful of names */
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      const char *t = names[j];
      names[j] = names[j - 1], names[j - 1] = t;
    }
  size_t used = (size_t)snprintf(sig, sig_len, "onnxruntime|-|");
  for (int i = 0; i < n && used < sig_len; i++)
    used += (size_t)snprintf(sig + used, sig_len - used, "%s%s", i ? "," : "", names[i]);
  if (!n && used < sig_len) snprintf(sig + used, sig_len - used, "-");
}

kiln_status kiln_ort_locate(kiln_ort *o, const kiln_graph *g, int n_in, kiln_val *const *inputs,
                            const kiln_vref *ref, char *where, size_t where_len, char *signature,
                            size_t sig_len) {
  where[0] = signature[0] = 0;
  KILN_TRY(write_request(o, g, n_in, inputs));
  int n = 0;
  kiln_status st = request(o, "trace", &n);
  if (st)
    return kiln_status_code(st) == KILN_ERR_UNSUPPORTED ? (kiln_status_free(st), KILN_OK) : st;
  bool *bad = kiln_xcalloc((size_t)g->values.len + 1, sizeof *bad);
  st = check_traced(o, g, ref, n, bad);
  int first = -1;
  for (int i = 0; i < g->nodes.len && first < 0 && !st; i++) {
    const kiln_node *nd = &g->nodes.data[i];
    for (int k = 0; k < nd->n_outputs && first < 0; k++)
      if (nd->outputs[k] >= 0 && bad[nd->outputs[k]]) first = i;
  }
  free(bad);
  if (st) return st;
  if (first >= 0) kiln_node_label(&g->nodes.data[first], where, where_len);
  else snprintf(where, where_len, "the graph as a whole (no node fails with its outputs kept)");
  ops_signature(g, first, signature, sig_len);
  return KILN_OK;
}
