/* Kernel modules: translation units of C -> objects -> one shared object -> dlopen.
 *
 * Units are compiled in parallel (one compiler process per job) and linked into a shared
 * object. Objects and libraries are cached on disk, keyed by a 128-bit hash of the source,
 * the flags and the compiler's identity (its --version text, the command and the CPU,
 * because of -march=native). A cache entry is a file with a header (magic, size, hash of
 * the payload) written to a temporary name and renamed into place, so readers never see
 * a partial entry; an entry whose header does not match its payload is rebuilt.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/mutate.h"
#include "runtime.h"

extern char **environ;

struct kiln_module {
  void *handle;
};

/* ---- hashing ---- */
typedef struct hash128 {
  uint64_t a, b;
} hash128;

static uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
static uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  return k ^ (k >> 33);
}

/* Two 64-bit lanes that mix every 8-byte word differently; chained over several calls. */
static void hash_update(hash128 *h, const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t a = h->a ^ (n * 0x9e3779b97f4a7c15ull), b = h->b + n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    a = rotl((a ^ w) * 0x87c37b91114253d5ull, 31) + b;
    b = rotl((b + w) * 0x4cf5ad432745937full, 27) ^ a;
  }
  uint64_t w = 0;
  memcpy(&w, s + i, n - i);
  a = rotl((a ^ w) * 0x87c37b91114253d5ull, 31) + b;
  b = rotl((b + w) * 0x4cf5ad432745937full, 27) ^ a;
  h->a = fmix(a + b), h->b = fmix(b ^ rotl(a, 17));
}

static void hash_str(hash128 *h, const char *s) {
  hash_update(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static void hash_hex(hash128 h, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
}

/* ---- running commands ---- */
typedef struct job {
  pid_t pid;
  char *log;
  int unit;
} job;

static kiln_status spawn_sh(const char *cmd, const char *log, pid_t *out) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[] = {"sh", "-c", (char *)cmd, NULL};
  int rc = posix_spawn(out, "/bin/sh", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) return kiln_error(KILN_ERR_SYSTEM, "cannot run '%s': %s", cmd, strerror(rc));
  return KILN_OK;
}

/* Whether a command that exited with rc failed for the environment's sake rather than
 * rejecting its input: the shell found no such program (127) or could not execute it (126),
 * the exit status was lost (-1), or its log reports a full disk. Code that a working compiler
 * rejects is KILN_ERR_FAILED (a bug in the C Kiln generated); these are KILN_ERR_SYSTEM. */
static kiln_code command_failure(int rc, const char *log_text) {
  if (rc == 126 || rc == 127 || rc < 0) return KILN_ERR_SYSTEM;
  if (log_text && (strstr(log_text, strerror(ENOSPC)) || strstr(log_text, strerror(EDQUOT))))
    return KILN_ERR_SYSTEM;
  return KILN_ERR_FAILED;
}

static int exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* With SIGCHLD ignored by the host program, children are reaped by the system and
 * waitpid fails with ECHILD: the exit code is then unknown, taken as success (a missing
 * object or library fails the next step with a clear message). */
static int wait_exit(pid_t pid) {
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return errno == ECHILD ? 0 : -1;
  return exit_code(status);
}

/* Seconds the C compiler may run without one of its processes finishing: $KILN_CC_TIMEOUT,
 * else 900. A compiler that hangs is killed and the build fails as the environment's error
 * (exit 1) with a message naming the limit, never a silent hang. */
static kiln_status cc_timeout(int *out) {
  const char *e = getenv("KILN_CC_TIMEOUT");
  *out = 900;
  if (!e || !*e) return KILN_OK;
  return kiln_parse_int(e, 1, 86400, "KILN_CC_TIMEOUT (seconds)", out);
}

/* Waits until one of our n processes ends (only ours: a library must not reap the host
 * program's children); returns its index and its exit code in *rc. After timeout_s seconds
 * it kills and reaps all n and returns -1. */
static int wait_any(const job *running, int n, int timeout_s, int *rc) {
  double end = kiln_clock_seconds() + timeout_s;
  for (;;) {
    for (int i = 0; i < n; i++) {
      int status;
      pid_t r = waitpid(running[i].pid, &status, WNOHANG);
      if (r == running[i].pid) return *rc = exit_code(status), i;
      if (r < 0 && errno != EINTR) return *rc = errno == ECHILD ? 0 : -1, i;
    }
    if (kiln_clock_seconds() > end) {
      for (int i = 0; i < n; i++) kill(running[i].pid, SIGKILL);
      for (int i = 0; i < n; i++) wait_exit(running[i].pid);
      return *rc = -1, -1;
    }
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
}

static kiln_status timed_out(const char *what, int timeout_s) {
  return kiln_error(KILN_ERR_SYSTEM,
                    "%s did not finish in %d s and was stopped (KILN_CC_TIMEOUT sets the limit "
                    "in seconds)",
                    what, timeout_s);
}

/* The first lines of a compiler log, for error messages. */
static char *log_head(const char *path, int max_lines) {
  char *text = NULL;
  size_t len;
  kiln_status st = kiln_read_file(path, &text, &len);
  if (st) {
    kiln_status_free(st);
    return kiln_xstrdup("(no output)");
  }
  int lines = 0;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n' && ++lines == max_lines) {
      text[i] = 0;
      break;
    }
  return text;
}

static kiln_status run_sh(const char *cmd, const char *log, const char *what) {
  int limit;
  KILN_TRY(cc_timeout(&limit));
  job j = {0};
  KILN_TRY(spawn_sh(cmd, log, &j.pid));
  int rc;
  if (wait_any(&j, 1, limit, &rc) < 0) return timed_out(what, limit);
  if (rc == 0) return KILN_OK;
  char *head = log_head(log, 20);
  kiln_status st =
      kiln_error(command_failure(rc, head), "%s failed (exit %d): %s\n%s", what, rc, cmd, head);
  free(head);
  return st;
}

/* Single quotes for the shell. */
static void sh_quote(kiln_strbuf *b, const char *s) {
  kiln_strbuf_append(b, "'", 1);
  for (; *s; s++) {
    if (*s == '\'') kiln_strbuf_append(b, "'\\''", 4);
    else kiln_strbuf_append(b, s, 1);
  }
  kiln_strbuf_append(b, "'", 1);
}

/* ---- directories ---- */
char *kiln_cache_dir(const char *override) {
  if (override && *override) return kiln_xstrdup(override);
  const char *e = getenv("KILN_CACHE_DIR");
  if (e && *e) return kiln_xstrdup(e);
  kiln_strbuf b = {0};
  if ((e = getenv("XDG_CACHE_HOME")) && *e) kiln_strbuf_printf(&b, "%s/kiln", e);
  else if ((e = getenv("HOME")) && *e) kiln_strbuf_printf(&b, "%s/.cache/kiln", e);
  return b.data;
}

static void remove_tree(const char *dir, int n_files, char **files) {
  for (int i = 0; i < n_files; i++) unlink(files[i]);
  rmdir(dir);
}

/* Build folders (flat) of compiles that were killed: removed once a day old. */
static void sweep_stale_builds(const char *cache) {
  DIR *d = opendir(cache);
  if (!d) return;
  struct dirent *e;
  time_t now = time(NULL);
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "tmp.", 4)) continue;
    char dir[4096], file[4352];
    snprintf(dir, sizeof dir, "%s/%s", cache, e->d_name);
    struct stat sb;
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode) || now - sb.st_mtime < 24 * 3600) continue;
    DIR *sub = opendir(dir);
    for (struct dirent *f; sub && (f = readdir(sub));) {
      if (f->d_name[0] == '.' && (!f->d_name[1] || !strcmp(f->d_name, ".."))) continue;
      snprintf(file, sizeof file, "%s/%s", dir, f->d_name);
      unlink(file);
    }
    if (sub) closedir(sub);
    rmdir(dir);
  }
  closedir(d);
}

/* ---- cache entries: "KILNC2 <size> <hash>\n" + payload ---- */
#define ENTRY_MAGIC "KILNC2"

/* The hash of an entry's payload, seeded with the entry's own name ("lib/KEY", "obj/KEY"):
 * an entry copied or renamed to another key or kind (a swapped object and library) fails
 * the check like a damaged one, and is rebuilt. */
static hash128 entry_hash(const char *path, const void *data, size_t n) {
  const char *p = path + strlen(path);
  for (int slashes = 0; p > path; p--)
    if (p[-1] == '/' && ++slashes == 2) break;
  hash128 h = {1, 2};
  hash_str(&h, p);
  hash_update(&h, data, n);
  return h;
}

static kiln_status entry_write(const char *path, const void *data, size_t n) {
  hash128 h = entry_hash(path, data, n);
  char hex[33];
  hash_hex(h, hex);
  kiln_file_writer *f;
  KILN_TRY(kiln_file_open(path, &f)); /* a temporary next to the entry, renamed into place */
  kiln_file_printf(f, ENTRY_MAGIC " %zu %s\n", n, hex);
  kiln_file_write(f, data, n);
  return kiln_file_commit(f);
}

/* "KILNC2 <size> <32 hex digits>\n": the header's length, or 0 when it is malformed. The size
 * goes through the checked parser like any number read from a file (an entry may be damaged). */
static size_t entry_header(const char *text, size_t len, int64_t *size, char hex[33]) {
  const size_t m = strlen(ENTRY_MAGIC " ");
  if (len <= m || strncmp(text, ENTRY_MAGIC " ", m)) return 0;
  const char *p = text + m, *sp = strchr(p, ' '), *nl = sp ? strchr(sp, '\n') : NULL;
  char num[32];
  if (!nl || sp - p >= (ptrdiff_t)sizeof num || nl - sp - 1 != 32) return 0;
  snprintf(num, sizeof num, "%.*s", (int)(sp - p), p);
  memcpy(hex, sp + 1, 32);
  hex[32] = 0;
  kiln_status st = kiln_parse_i64(num, 0, INT64_MAX, "cache entry size", size);
  kiln_status_free(st);
  return st ? 0 : (size_t)(nl + 1 - text);
}

/* The payload of a valid entry (malloc'd), or false for a missing or corrupt one. */
static bool entry_read(const char *path, char **data, size_t *n) {
  char *text;
  size_t len;
  kiln_status st = kiln_read_file(path, &text, &len);
  if (st) {
    kiln_status_free(st);
    return false;
  }
  char hex[33], want[33];
  int64_t size = -1;
  size_t skip = entry_header(text, len, &size, hex);
  bool ok = skip && len - skip == (uint64_t)size;
  if (ok) {
    hash_hex(entry_hash(path, text + skip, (size_t)size), want);
    ok = !strcmp(hex, want);
  }
  if (!ok) {
    free(text);
    return false;
  }
  memmove(text, text + skip, (size_t)size);
  *data = text, *n = (size_t)size;
  return true;
}

static kiln_status copy_entry_out(const char *entry, const char *dst, bool *hit) {
  char *data;
  size_t n;
  *hit = entry_read(entry, &data, &n);
  if (!*hit) return KILN_OK;
  kiln_status st = kiln_write_file(dst, data, n);
  free(data);
  return st;
}

static kiln_status store_entry(const char *entry, const char *file) {
  char *data;
  size_t n;
  KILN_TRY(kiln_read_file(file, &data, &n));
  kiln_status st = entry_write(entry, data, n);
  free(data);
  return st;
}

/* A fresh private folder "PARENT/PREFIX.XXXXXX" (PARENT NULL: $TMPDIR or /tmp). */
static kiln_status make_temp_dir(const char *parent, const char *prefix, char **out) {
  const char *td = getenv("TMPDIR");
  kiln_strbuf t = {0};
  kiln_strbuf_printf(&t, "%s/%s.XXXXXX", parent ? parent : td && *td ? td : "/tmp", prefix);
  if (!mkdtemp(t.data)) {
    kiln_status st = kiln_system_error("cannot create a build folder '%s'", t.data);
    kiln_strbuf_free(&t);
    return st;
  }
  *out = t.data;
  return KILN_OK;
}

/* ---- the compiler: identity and OpenMP support, probed once per command ---- */
typedef struct probe {
  char *cc;
  hash128 ident;
  bool openmp;
  bool gcc_params; /* takes --param vect-epilogues-nomask=0 (GCC) */
} probe;

static KILN_VEC(probe) g_probes; /* under g_probe_lock */
static pthread_mutex_t g_probe_lock = PTHREAD_MUTEX_INITIALIZER;

static void hash_cpu(hash128 *h) {
  char *text;
  size_t len;
  kiln_status st = kiln_read_file("/proc/cpuinfo", &text, &len);
  if (st) {
    kiln_status_free(st);
    return;
  }
  char *end = strstr(text, "\n\n"); /* the first processor's block */
  if (end) *end = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) hash_str(h, line);
  free(text);
}

/* Whether cc builds text into a shared object with flags. */
static kiln_status probe_build(const char *cc, const char *tmpdir, const char *flags,
                               const char *text, bool *out) {
  char src[4096], so[4096], log[4096];
  snprintf(src, sizeof src, "%s/cc_probe.c", tmpdir);
  snprintf(so, sizeof so, "%s/cc_probe.so", tmpdir);
  snprintf(log, sizeof log, "%s/cc_probe.log", tmpdir);
  KILN_TRY(kiln_write_file(src, text, strlen(text)));
  kiln_strbuf cmd = {0};
  kiln_strbuf_printf(&cmd, "%s %s -fPIC -shared -o ", cc, flags);
  sh_quote(&cmd, so), kiln_strbuf_append(&cmd, " ", 1), sh_quote(&cmd, src);
  kiln_status st = run_sh(cmd.data, log, "C compiler probe");
  *out = st == KILN_OK;
  kiln_status_free(st);
  kiln_strbuf_free(&cmd);
  unlink(src), unlink(so), unlink(log);
  return KILN_OK;
}

static kiln_status probe_compiler_locked(const char *cc, const char *tmpdir, probe *out) {
  for (int i = 0; i < g_probes.len; i++)
    if (!strcmp(g_probes.data[i].cc, cc)) return *out = g_probes.data[i], KILN_OK;
  char log[4096];
  snprintf(log, sizeof log, "%s/version.log", tmpdir);
  kiln_strbuf cmd = {0};
  kiln_strbuf_printf(&cmd, "%s --version", cc);
  kiln_status st = run_sh(cmd.data, log, "the C compiler");
  kiln_strbuf_free(&cmd);
  if (st) { /* the environment lacks a tool: not a failure of Kiln or of the model */
    unlink(log);
    kiln_status sys = kiln_error(KILN_ERR_SYSTEM,
                                 "no usable C compiler '%s' (set CC or the cc "
                                 "option): %s",
                                 cc, kiln_status_message(st));
    kiln_status_free(st);
    return sys;
  }
  probe p = {
      NULL, {3, 4}, false, false}; /* p.cc once nothing can fail (it leaked on a full disk) */
  char *text;
  size_t len;
  KILN_TRY(kiln_read_file(log, &text, &len));
  unlink(log);
  if (!len) { /* a full disk can swallow the output: never key the cache on nothing */
    free(text);
    return kiln_error(KILN_ERR_SYSTEM, "the C compiler '%s' printed no version", cc);
  }
  hash_str(&p.ident, cc);
  hash_update(&p.ident, text, len);
  free(text);
  hash_cpu(&p.ident);
  KILN_TRY(probe_build(
      cc, tmpdir, "-fopenmp",
      "#include <omp.h>\nint kiln_omp_probe(void) { return omp_get_max_threads(); }\n", &p.openmp));
  KILN_TRY(probe_build(cc, tmpdir, "-Werror --param vect-epilogues-nomask=0",
                       "int kiln_param_probe(void) { return 1; }\n", &p.gcc_params));
  p.cc = kiln_xstrdup(cc);
  kiln_vec_push(&g_probes, p);
  *out = p;
  return KILN_OK;
}

/* In a private folder of its own: the probe must not depend on a usable kernel cache. */
static kiln_status probe_compiler(const char *cc, probe *out) {
  char *tmpdir = NULL;
  pthread_mutex_lock(&g_probe_lock);
  bool known = false;
  for (int i = 0; i < g_probes.len && !known; i++)
    if (!strcmp(g_probes.data[i].cc, cc)) *out = g_probes.data[i], known = true;
  kiln_status st = known ? KILN_OK : make_temp_dir(NULL, "kiln-probe", &tmpdir);
  if (!st && !known) st = probe_compiler_locked(cc, tmpdir, out);
  pthread_mutex_unlock(&g_probe_lock);
  if (tmpdir) rmdir(tmpdir);
  free(tmpdir);
  return st;
}

static const char *default_cc(const char *cc) {
  return cc && *cc ? cc : getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
}

kiln_status kiln_cc_probe(const char *cc) {
  probe p;
  return probe_compiler(default_cc(cc), &p);
}

/* ---- a build ---- */
typedef struct build {
  const kiln_cc_opts *o;
  const char *cc;
  char *cache; /* NULL: no cache */
  char *tmpdir;
  KILN_VEC(char *) files; /* made in tmpdir, removed at the end */
  probe pr;
  kiln_strbuf flags;
  int n_units;
  hash128 *keys;
  bool *have;                /* object present in tmpdir */
  kiln_status cache_failure; /* the first failed store into the cache, or KILN_OK */
} build;

static char *tmp_file(build *b, const char *fmt, int i) {
  char name[64], *path;
  snprintf(name, sizeof name, fmt, i);
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "%s/%s", b->tmpdir, name);
  path = p.data;
  kiln_vec_push(&b->files, path);
  return path;
}

static char *entry_path(const build *b, const char *kind, hash128 key) {
  char hex[33];
  hash_hex(key, hex);
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "%s/%s/%s", b->cache, kind, hex);
  return p.data;
}

static kiln_status make_cache_dirs(const char *cache) {
  char sub[4096];
  KILN_TRY(kiln_make_dirs(cache));
  snprintf(sub, sizeof sub, "%s/obj", cache);
  KILN_TRY(kiln_make_dirs(sub));
  snprintf(sub, sizeof sub, "%s/lib", cache);
  KILN_TRY(kiln_make_dirs(sub));
  if (access(cache, W_OK)) return kiln_system_error("cannot write to '%s'", cache);
  return KILN_OK;
}

/* cache: the cache folder to use (the build folder is made inside it, so that entries are
 * renamed within one file system and the library is loaded from a folder known to allow
 * it), or NULL for a private build folder in $TMPDIR. */
static kiln_status build_init(build *b, const kiln_cc_opts *o, const char *cache) {
  memset(b, 0, sizeof *b);
  b->o = o;
  b->cc = default_cc(o->cc);
  if (cache) {
    KILN_TRY(make_cache_dirs(cache));
    b->cache = kiln_xstrdup(cache);
    sweep_stale_builds(b->cache);
  }
  KILN_TRY(make_temp_dir(b->cache, b->cache ? "tmp" : "kiln", &b->tmpdir));
  KILN_TRY(probe_compiler(b->cc, &b->pr));
  /* GCC 12 vectorizes the epilogue of an `omp simd` loop of guarded 64-bit loads wrongly with
   * AVX2 (a constant Pad of u64 lost elements); epilogues stay scalar where the flag exists */
  /* mutant 422: the kernels built with -ffast-math (NaN, infinities and -0 assumed away) */
  kiln_strbuf_printf(&b->flags, "-O2 -march=native -fPIC%s%s%s%s%s",
                     KILN_MUTANT(422) ? " -ffast-math" : "", b->pr.openmp ? " -fopenmp" : "",
                     b->pr.gcc_params ? " --param vect-epilogues-nomask=0" : "",
                     o->cflags ? " " : "", o->cflags ? o->cflags : "");
  return KILN_OK;
}

static void build_free(build *b) {
  if (b->tmpdir) remove_tree(b->tmpdir, b->files.len, b->files.data);
  for (int i = 0; i < b->files.len; i++) free(b->files.data[i]);
  kiln_vec_free(&b->files);
  kiln_strbuf_free(&b->flags);
  free(b->cache);
  free(b->tmpdir);
  free(b->keys);
  free(b->have);
  kiln_status_free(b->cache_failure);
}

static kiln_status keep_sources(const build *b, int n, const char *const *sources) {
  KILN_TRY(kiln_make_dirs(b->o->keep_sources));
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/unit%d.c", b->o->keep_sources, i);
    KILN_TRY(kiln_write_file(path, sources[i], strlen(sources[i])));
  }
  return KILN_OK;
}

static kiln_status start_compile(build *b, int i, const char *source, job *j) {
  char *src = tmp_file(b, "unit%d.c", i);
  char *obj = tmp_file(b, "unit%d.o", i);
  j->log = tmp_file(b, "unit%d.log", i);
  j->unit = i;
  KILN_TRY(kiln_write_file(src, source, strlen(source)));
  kiln_strbuf cmd = {0};
  kiln_strbuf_printf(&cmd, "%s %s -c -o ", b->cc, b->flags.data);
  sh_quote(&cmd, obj), kiln_strbuf_append(&cmd, " ", 1), sh_quote(&cmd, src);
  if (b->o->verbose) fprintf(stderr, "[kiln] cc unit %d (%zu bytes of C)\n", i, strlen(source));
  kiln_status st = spawn_sh(cmd.data, j->log, &j->pid);
  kiln_strbuf_free(&cmd);
  return st;
}

static kiln_status finish_compile(build *b, const job *j, int rc) {
  if (rc == 0) {
    b->have[j->unit] = true;
    return KILN_OK;
  }
  char *head = log_head(j->log, 20);
  kiln_status st =
      kiln_error(command_failure(rc, head), "the C compiler (%s) failed on unit %d (exit %d):\n%s",
                 b->cc, j->unit, rc, head);
  free(head);
  return st;
}

/* Compiles the units not found in the cache, `jobs` processes at a time. */
static kiln_status compile_units(build *b, const char *const *sources) {
  int jobs = b->o->jobs > 0 ? b->o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN), limit;
  if (jobs < 1) jobs = 1;
  KILN_TRY(cc_timeout(&limit));
  job *running = kiln_xcalloc((size_t)jobs, sizeof *running);
  int n_running = 0, next = 0;
  kiln_status st = KILN_OK;
  while (next < b->n_units || n_running > 0) {
    while (!st && n_running < jobs && next < b->n_units) {
      int i = next++;
      if (b->have[i]) continue;
      st = start_compile(b, i, sources[i], &running[n_running]);
      if (!st) n_running++;
    }
    if (!n_running) break;
    int rc, k = wait_any(running, n_running, limit, &rc);
    if (k < 0) {
      kiln_status_free(st);
      st = timed_out("the C compiler", limit);
      break;
    }
    kiln_status e = finish_compile(b, &running[k], rc);
    if (!st) st = e;
    else kiln_status_free(e);
    running[k] = running[--n_running];
    if (st && next < b->n_units) next = b->n_units; /* stop starting, drain the rest */
  }
  free(running);
  return st;
}

static hash128 unit_key(const build *b, const char *source) {
  hash128 h = b->pr.ident;
  hash_str(&h, "unit");
  hash_str(&h, b->flags.data);
  hash_str(&h, source);
  return h;
}

static hash128 library_key(const build *b) {
  hash128 h = b->pr.ident;
  hash_str(&h, "library");
  hash_str(&h, b->flags.data);
  hash_update(&h, b->keys, (size_t)b->n_units * sizeof *b->keys);
  return h;
}

static kiln_status lookup_units(build *b, kiln_cc_stats *stats) {
  for (int i = 0; b->cache && i < b->n_units; i++) {
    char *entry = entry_path(b, "obj", b->keys[i]);
    char *obj = tmp_file(b, "unit%d.o", i);
    kiln_status st = copy_entry_out(entry, obj, &b->have[i]);
    free(entry);
    KILN_TRY(st);
    stats->n_units_cached += b->have[i];
  }
  return KILN_OK;
}

/* A failure to store into the cache only costs time: it is kept (the first one) for the
 * warning, and the build goes on. */
static void keep_cache_failure(build *b, kiln_status st) {
  if (!st) return;
  if (!b->cache_failure) b->cache_failure = st;
  else kiln_status_free(st);
}

static void store_units(build *b, const bool *cached) {
  for (int i = 0; b->cache && i < b->n_units; i++) {
    if (cached[i]) continue;
    char *entry = entry_path(b, "obj", b->keys[i]);
    kiln_strbuf obj = {0};
    kiln_strbuf_printf(&obj, "%s/unit%d.o", b->tmpdir, i);
    keep_cache_failure(b, store_entry(entry, obj.data));
    free(entry);
    kiln_strbuf_free(&obj);
  }
}

static kiln_status link_library(build *b, const char *lib) {
  kiln_strbuf cmd = {0};
  kiln_strbuf_printf(&cmd, "%s -shared -fPIC%s -o ", b->cc, b->pr.openmp ? " -fopenmp" : "");
  sh_quote(&cmd, lib);
  for (int i = 0; i < b->n_units; i++) {
    kiln_strbuf obj = {0};
    kiln_strbuf_printf(&obj, "%s/unit%d.o", b->tmpdir, i);
    kiln_strbuf_append(&cmd, " ", 1), sh_quote(&cmd, obj.data);
    kiln_strbuf_free(&obj);
  }
  kiln_strbuf_printf(&cmd, " -lm");
  char *log = tmp_file(b, "link%d.log", 0);
  kiln_status st = run_sh(cmd.data, log, "linking the kernels");
  kiln_strbuf_free(&cmd);
  return st;
}

/* OpenMP runtimes must stay loaded once their threads exist, even when a module that
 * brought them in is closed. */
static void pin_openmp_runtime(void) {
  const char *names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE | RTLD_GLOBAL);
}

static kiln_status load_library(const char *lib, kiln_module **out) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) return kiln_error(KILN_ERR_FAILED, "cannot load the kernels: %s", dlerror());
  pin_openmp_runtime();
  *out = kiln_xcalloc(1, sizeof **out);
  (*out)->handle = h;
  return KILN_OK;
}

static kiln_status build_library(build *b, const char *const *sources, const char *lib,
                                 kiln_cc_stats *stats) {
  KILN_TRY(lookup_units(b, stats));
  bool *cached = kiln_xcalloc((size_t)b->n_units + 1, sizeof *cached);
  memcpy(cached, b->have, (size_t)b->n_units * sizeof *cached);
  kiln_status st = compile_units(b, sources);
  if (!st) store_units(b, cached);
  free(cached);
  KILN_TRY(st);
  return link_library(b, lib);
}

/* One build in the cache folder cache (NULL: a private folder without a cache). */
static kiln_status build_in(const char *cache, int n_units, const char *const *sources,
                            const kiln_cc_opts *o, kiln_module **out, kiln_cc_stats *stats,
                            kiln_status *cache_failure) {
  memset(stats, 0, sizeof *stats);
  stats->n_units = n_units;
  build b;
  kiln_status st = build_init(&b, o, cache);
  if (!st && o->keep_sources) st = keep_sources(&b, n_units, sources);
  if (st) {
    build_free(&b);
    return st;
  }
  b.n_units = n_units;
  b.keys = kiln_xcalloc((size_t)n_units, sizeof *b.keys);
  b.have = kiln_xcalloc((size_t)n_units, sizeof *b.have);
  for (int i = 0; i < n_units; i++) b.keys[i] = unit_key(&b, sources[i]);
  char *lib = tmp_file(&b, "kernels%d.so", 0);
  char *entry = b.cache ? entry_path(&b, "lib", library_key(&b)) : NULL;
  bool hit = false;
  if (entry) st = copy_entry_out(entry, lib, &hit);
  if (!st && hit) {
    st = load_library(lib, out);
    stats->library_cached = !st;
    if (st) kiln_status_free(st), st = KILN_OK, hit = false; /* unusable entry: rebuild */
  }
  if (!st && !hit) st = build_library(&b, sources, lib, stats);
  if (!st && !hit && entry) keep_cache_failure(&b, store_entry(entry, lib));
  if (!st && !hit) st = load_library(lib, out);
  free(entry);
  *cache_failure = b.cache_failure, b.cache_failure = KILN_OK;
  build_free(&b);
  return st;
}

/* One line on stderr per process: an unusable cache is worth knowing, not worth a flood. */
static void warn_cache(const char *cache, kiln_status why) {
  static int warned;
  if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
  const char *msg = kiln_status_message(why);
  fprintf(stderr,
          "kiln: warning: the kernel cache '%s' is not usable (%.*s); compiling without "
          "it\n",
          cache, (int)strcspn(msg, "\n"), msg);
}

/* An unusable cache (a file, read-only, full) only costs time: a build that fails in the
 * cache is tried again in a private folder, and a store that fails is skipped. Only a
 * build that fails there too is an error, and then it is that build's error. */
kiln_status kiln_module_build(int n_units, const char *const *sources, const kiln_cc_opts *o,
                              kiln_module **out, kiln_cc_stats *stats) {
  kiln_cc_opts dflt = {0};
  kiln_cc_stats dummy;
  if (!o) o = &dflt;
  if (!stats) stats = &dummy;
  *out = NULL;
  if (n_units < 1) return kiln_invalid("kiln_module_build: no translation unit");
  char *cache = o->no_cache ? NULL : kiln_cache_dir(o->cache_dir);
  kiln_status failure = KILN_OK;
  kiln_status st = build_in(cache, n_units, sources, o, out, stats, &failure);
  if (st && cache) {
    kiln_status_free(failure);
    failure = st;
    st = build_in(NULL, n_units, sources, o, out, stats, &(kiln_status){KILN_OK});
  }
  if (!st && failure) warn_cache(cache, failure);
  kiln_status_free(failure);
  free(cache);
  return st;
}

kiln_status kiln_module_sym(kiln_module *m, const char *name, void **out) {
  dlerror();
  *out = dlsym(m->handle, name);
  if (!*out) return KILN_BUG("kernel '%s' missing from the module", name);
  return KILN_OK;
}

void kiln_module_free(kiln_module *m) {
  if (!m) return;
  dlclose(m->handle);
  free(m);
}
