/* Compiled artifacts of `kiln compile -o DIR`: the folder is written whole (kiln_dir_begin:
 * a hidden sibling renamed into place once complete, manifest.txt last), so an interrupted
 * or failed compile never leaves a folder that `kiln run` accepts, and an artifact being
 * replaced stays valid until the new one is complete. DIR must be new, empty or an earlier
 * artifact: a folder holding anything else (the model's own folder, `-o .`) is refused, so
 * that no file of the user is replaced. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lower/schedule.h"
#include "pass_flags.h"

/* The entries an artifact folder may hold; nothing else is ever replaced or removed. */
static const char *const artifact_entries[] = {"manifest.txt", "model.onnx", "report.txt", "src",
                                               "schedule.txt"};

static bool is_artifact_entry(const char *name) {
  for (size_t i = 0; i < sizeof artifact_entries / sizeof artifact_entries[0]; i++)
    if (!strcmp(name, artifact_entries[i])) return true;
  return false;
}

/* src/ of an artifact holds only the kernels' C units (unit<N>.c). */
static bool only_units(const char *src) {
  DIR *d = opendir(src);
  bool ok = d != NULL;
  for (struct dirent *e; ok && (e = readdir(d));) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, ".."))) continue;
    size_t n = strncmp(e->d_name, "unit", 4) ? 0 : strspn(e->d_name + 4, "0123456789");
    char path[PATH_MAX + 300];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", src, e->d_name);
    ok = n > 0 && !strcmp(e->d_name + 4 + n, ".c") && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
  }
  if (d) closedir(d);
  return ok;
}

/* Whether entry name of dir is what an artifact holds there: a file, or src/ of C units. */
static bool is_own_entry(const char *dir, const char *name, bool *manifest) {
  char path[PATH_MAX + 64];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (!is_artifact_entry(name) || lstat(path, &sb) != 0) return false;
  if (!strcmp(name, "src")) return S_ISDIR(sb.st_mode) && only_units(path);
  if (!S_ISREG(sb.st_mode)) return false;
  if (strcmp(name, "manifest.txt")) return true;
  char *text = NULL; /* an artifact's manifest names its format */
  size_t len;
  kiln_status st = kiln_read_file(path, &text, &len);
  *manifest =
      !st && text &&
      (!strncmp(text, "format kiln-artifact ", 21) || strstr(text, "\nformat kiln-artifact "));
  kiln_status_free(st);
  free(text);
  return true;
}

/* An existing DIR is fine when it is empty or is an artifact: a manifest.txt of that format and
 * nothing but the entries Kiln writes (a folder of the user's that merely holds a src/ or a
 * report.txt is not one: it would be replaced whole). */
static kiln_status check_existing(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return kiln_system_error("cannot read the folder '%s'", dir);
  kiln_status st = KILN_OK;
  bool any = false, manifest = false;
  for (struct dirent *e; !st && (e = readdir(d));) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, ".."))) continue;
    any = true;
    if (!is_own_entry(dir, e->d_name, &manifest))
      st = kiln_invalid("-o '%s' is a folder that is not a Kiln artifact (it holds '%s'): give "
                        "a new or empty folder",
                        dir, e->d_name);
  }
  closedir(d);
  if (!st && any && !manifest)
    st = kiln_invalid("-o '%s' is a folder that is not a Kiln artifact (no manifest.txt of one): "
                      "give a new or empty folder",
                      dir);
  return st;
}

kiln_status kiln_cli_artifact_check_dest(const char *dir, const char *model_file) {
  struct stat sb;
  if (!*dir) return kiln_invalid("-o needs a folder");
  if (stat(dir, &sb) != 0) return KILN_OK; /* a new folder */
  if (!S_ISDIR(sb.st_mode)) return kiln_invalid("-o '%s' exists and is not a folder", dir);
  char path[PATH_MAX + 64];
  for (size_t i = 0; i < sizeof artifact_entries / sizeof artifact_entries[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, artifact_entries[i]);
    if (kiln_same_file(path, model_file))
      return kiln_invalid("-o '%s' would replace the input model '%s' (its %s): write the "
                          "artifact to another folder",
                          dir, model_file, artifact_entries[i]);
  }
  return check_existing(dir);
}

/* ---- reading an artifact back (kiln run DIR) ---- */
enum {
  SEEN_FORMAT = 1,
  SEEN_MODEL = 2,
  SEEN_TARGET = 4,
  SEEN_THREADS = 8,
  SEEN_FALLBACK = 16,
  SEEN_SCHEDULE = 32
};

/* "schedule FILE": the kernel schedules of `kiln compile --schedule`, a file of the folder. */
static kiln_status manifest_schedule(kiln_cli_artifact *a, const char *rest) {
  if (!*rest || strchr(rest, '/') || rest[0] == '.')
    return kiln_invalid("'schedule' must name a file of the artifact folder, not '%s'", rest);
  char path[4400], *text;
  size_t len;
  snprintf(path, sizeof path, "%s/%s", a->dir, rest);
  KILN_TRY(kiln_read_file(path, &text, &len));
  kiln_status st = strlen(text) != len ? kiln_invalid("%s: holds a NUL byte", path)
                                       : kiln_sched_set_parse(text, path, &a->co.schedule);
  free(text);
  return st;
}

static kiln_status once(int *seen, int bit, const char *key) {
  if (*seen & bit) return kiln_invalid("'%s' is given twice", key);
  *seen |= bit;
  return KILN_OK;
}

/* "dim SYM N": SYM escaped with kiln_esc_line (it may hold blanks), N after the last blank. */
static kiln_status manifest_dim(kiln_cli_artifact *a, char *rest) {
  char *sp = strrchr(rest, ' ');
  if (!sp || sp == rest) return kiln_invalid("'dim' needs SYM N");
  *sp = 0;
  int64_t n;
  KILN_TRY(kiln_parse_i64(sp + 1, 0, KILN_CLI_MAX_DIM, "dim", &n));
  KILN_TRY(kiln_unesc_line(rest));
  for (int i = 0; i < a->dims.len; i++)
    if (!strcmp(a->dims.data[i].sym, rest)) return kiln_invalid("dim '%s' is given twice", rest);
  kiln_dim_binding b = {kiln_xstrdup(rest), n};
  kiln_vec_push(&a->dims, b);
  return KILN_OK;
}

static kiln_status manifest_kv(kiln_cli_artifact *a, const char *key, char *rest, int *seen) {
  if (!strcmp(key, "format")) {
    KILN_TRY(once(seen, SEEN_FORMAT, key));
    if (strcmp(rest, "kiln-artifact 1")) return kiln_invalid("unknown format '%s'", rest);
  } else if (!strcmp(key, "model")) {
    KILN_TRY(once(seen, SEEN_MODEL, key));
    if (!*rest || strchr(rest, '/') || rest[0] == '.')
      return kiln_invalid("'model' must name a file of the artifact folder, not '%s'", rest);
    snprintf(a->model, sizeof a->model, "%s/%s", a->dir, rest);
  } else if (!strcmp(key, "target")) {
    KILN_TRY(once(seen, SEEN_TARGET, key));
    a->target = kiln_target_find(rest); /* a registered target whose code runs */
    if (!kiln_target_can_run(a->target)) return kiln_unsupported("target '%s'", rest);
  } else if (!strcmp(key, "threads")) {
    KILN_TRY(once(seen, SEEN_THREADS, key));
    /* 0: all cores, as artifacts of earlier versions wrote it */
    KILN_TRY(kiln_parse_int(rest, 0, KILN_CLI_MAX_THREADS, "threads", &a->co.threads));
  } else if (!strcmp(key, "dim")) {
    KILN_TRY(manifest_dim(a, rest));
  } else if (!strcmp(key, "force-fallback")) {
    KILN_TRY(once(seen, SEEN_FALLBACK, key));
    KILN_TRY(kiln_cli_check_ops("force-fallback", rest));
    a->co.force_fallback = rest;
  } else if (!strcmp(key, "schedule")) {
    KILN_TRY(once(seen, SEEN_SCHEDULE, key));
    KILN_TRY(manifest_schedule(a, rest));
  } else if (!strcmp(key, "pass-flag")) {
    kiln_status st = KILN_OK;
    if (!kiln_cli_pass_flag(rest, &a->co.passes, &st)) return kiln_invalid("not a pass flag");
    KILN_TRY(st);
  } else {
    return kiln_invalid("unknown key '%.40s'", key);
  }
  return KILN_OK;
}

/* One line, without its "\n" or "\r\n": blank lines and "# ..." comments are skipped. */
static kiln_status manifest_line(kiln_cli_artifact *a, char *line, int *seen) {
  size_t n = strlen(line);
  if (n && line[n - 1] == '\r') line[--n] = 0;
  while (*line == ' ' || *line == '\t') line++;
  if (!*line || *line == '#') return KILN_OK;
  char *sp = strchr(line, ' ');
  if (!sp) return kiln_invalid("'%.40s' has no value", line);
  *sp = 0;
  return manifest_kv(a, line, sp + 1, seen);
}

kiln_status kiln_cli_artifact_load(const char *dir, kiln_cli_artifact *a) {
  char path[4200];
  size_t len;
  memset(a, 0, sizeof *a);
  kiln_compile_opts_init(&a->co);
  a->target = kiln_target_default();
  snprintf(a->dir, sizeof a->dir, "%s", dir);
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  KILN_TRY(kiln_read_file(path, &a->text, &len));
  if (strlen(a->text) != len) return kiln_invalid("%s: holds a NUL byte", path);
  int no = 0, seen = 0;
  for (char *line = a->text, *next; line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    no++;
    kiln_status st = manifest_line(a, line, &seen);
    if (st) return kiln_status_annotate(st, "%s: line %d", path, no);
  }
  if (!(seen & SEEN_FORMAT)) return kiln_invalid("%s: no 'format' line", path);
  if (!a->model[0]) return kiln_invalid("%s: no 'model' line", path);
  a->co.dims = a->dims.data;
  a->co.n_dims = a->dims.len;
  return KILN_OK;
}

void kiln_cli_artifact_free(kiln_cli_artifact *a) {
  for (int i = 0; i < a->dims.len; i++) free((char *)a->dims.data[i].sym);
  kiln_vec_free(&a->dims);
  kiln_sched_set_free(a->co.schedule);
  a->co.schedule = NULL;
  free(a->text);
}
