/* Files: reading whole regular files without ever blocking, and writing every file through a
 * temporary name in the same folder that is renamed into place once complete (base.h).
 *
 * A writer never leaves a half-written file under the final name: each write, the flush and
 * the close are checked, and on any failure the temporary is removed and errno's text is
 * kept in a KILN_ERR_SYSTEM error ("No space left on device"). There is no fsync: the
 * guarantee is against a failing write and against Kiln being interrupted, not against a
 * power loss (a rename after a complete close is what the kernel cache and artifacts need,
 * and an fsync per file would slow the cache and fuzz case folders down for no such gain). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

/* A path the user chose that does not lead anywhere is bad input (exit 2); any other failure
 * (full disk, no permission, read-only file system, I/O error) is the environment's (exit 1). */
static bool errno_is_bad_path(int e) {
  return e == ENOENT || e == ENOTDIR || e == ENAMETOOLONG || e == EISDIR || e == ELOOP;
}

static kiln_status open_error(const char *verb, const char *path) {
  if (errno_is_bad_path(errno))
    return kiln_error(KILN_ERR_IO, "cannot %s '%s': %s", verb, path, strerror(errno));
  return kiln_system_error("cannot %s '%s'", verb, path);
}

static kiln_status not_regular(const char *path, mode_t mode) {
  const char *what = S_ISDIR(mode)    ? "a folder"
                     : S_ISFIFO(mode) ? "a FIFO"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                                      : "not a regular file";
  return kiln_error(KILN_ERR_IO, "'%s' is %s, not a file", path, what);
}

kiln_status kiln_open_read(const char *path, int *out_fd) {
  /* O_NONBLOCK: opening a FIFO without a writer must not wait forever. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == EACCES || errno_is_bad_path(errno))
      return kiln_error(KILN_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    return kiln_system_error("cannot open '%s'", path);
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    kiln_status st = kiln_system_error("cannot read '%s'", path);
    close(fd);
    return st;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return not_regular(path, sb.st_mode);
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *out_fd = fd;
  return KILN_OK;
}

static kiln_status read_all(int fd, const char *path, size_t size, char **out_data,
                            size_t *out_len) {
  if (size >= SIZE_MAX) return kiln_error(KILN_ERR_OOM, "cannot read '%s': too large", path);
  char *data = malloc(size + 1);
  if (!data)
    return kiln_error(KILN_ERR_OOM, "cannot read '%s': %zu bytes do not fit in memory", path, size);
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, data + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      kiln_status st = kiln_system_error("cannot read '%s'", path);
      free(data);
      return st;
    }
    if (r == 0) break; /* the file shrank while we read it */
    got += (size_t)r;
  }
  data[got] = 0;
  *out_data = data;
  *out_len = got;
  return KILN_OK;
}

kiln_status kiln_read_file(const char *path, char **out_data, size_t *out_len) {
  int fd;
  KILN_TRY(kiln_open_read(path, &fd));
  struct stat sb;
  kiln_status st = fstat(fd, &sb) != 0 ? kiln_system_error("cannot read '%s'", path) : KILN_OK;
  if (!st) st = read_all(fd, path, (size_t)sb.st_size, out_data, out_len);
  close(fd);
  return st;
}

/* ---- the writer ---- */
struct kiln_file_writer {
  char *path, *tmp; /* tmp NULL: writing in place (a character device such as /dev/null) */
  FILE *f;
  int err; /* errno of the first failed write, 0 if none */
};

/* "DIR/.kiln-tmp.PID.N.R" next to path: short, so a long final name still fits NAME_MAX. */
static char *temp_name(const char *path, unsigned n) {
  const char *slash = strrchr(path, '/');
  int dir_len = slash ? (int)(slash - path) + 1 : 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned r = (unsigned)(ts.tv_nsec ^ (ts.tv_sec << 7)) * 2654435761u;
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%.*s.kiln-tmp.%d.%u.%08x", dir_len, path, (int)getpid(), n, r);
  return b.data;
}

static kiln_status open_temp(kiln_file_writer *w) {
  static unsigned counter;
  for (int tries = 0; tries < 100; tries++) {
    w->tmp = temp_name(w->path, __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 && (w->f = fdopen(fd, "wb"))) return KILN_OK;
    if (fd >= 0) {
      kiln_status st = kiln_system_error("cannot write '%s'", w->path);
      close(fd);
      unlink(w->tmp);
      return st;
    }
    if (errno != EEXIST) return open_error("create", w->path);
    free(w->tmp);
    w->tmp = NULL;
  }
  return kiln_system_error("cannot create a temporary file next to '%s'", w->path);
}

/* An existing character device (/dev/null, /dev/full, a terminal) is written in place: it
 * cannot be replaced by a rename. Folders, FIFOs and sockets are refused. */
static kiln_status open_in_place(kiln_file_writer *w) {
  int fd = open(w->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_error("open", w->path);
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* a terminal: blocking writes */
  w->f = fdopen(fd, "wb");
  if (!w->f) {
    kiln_status st = kiln_system_error("cannot open '%s'", w->path);
    close(fd);
    return st;
  }
  return KILN_OK;
}

kiln_status kiln_file_open(const char *path, kiln_file_writer **out) {
  *out = NULL;
  if (!path || !*path) return kiln_error(KILN_ERR_IO, "empty file name");
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if (exists && !S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode)) return not_regular(path, sb.st_mode);
  size_t n = strlen(path);
  if (path[n - 1] == '/') return kiln_error(KILN_ERR_IO, "'%s' names a folder, not a file", path);
  kiln_file_writer *w = kiln_xcalloc(1, sizeof *w);
  w->path = kiln_xstrdup(path);
  kiln_status st = exists && S_ISCHR(sb.st_mode) ? open_in_place(w) : open_temp(w);
  if (st) {
    free(w->tmp);
    free(w->path);
    free(w);
    return st;
  }
  *out = w;
  return KILN_OK;
}

void kiln_file_printf(kiln_file_writer *w, const char *fmt, ...) {
  kiln_strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  kiln_file_write(w, b.data, b.len);
  kiln_strbuf_free(&b);
}

void kiln_file_write(kiln_file_writer *w, const void *data, size_t len) {
  if (w->err || !len) return; /* a failure is reported once, by kiln_file_commit */
  errno = 0;
  if (fwrite(data, 1, len, w->f) != len) w->err = errno ? errno : EIO;
}

static void writer_free(kiln_file_writer *w) {
  free(w->path);
  free(w->tmp);
  free(w);
}

void kiln_file_abort(kiln_file_writer *w) {
  if (!w) return;
  if (w->f) fclose(w->f);
  if (w->tmp) unlink(w->tmp);
  writer_free(w);
}

kiln_status kiln_file_commit(kiln_file_writer *w) {
  int err = w->err;
  errno = 0;
  if (!err && ferror(w->f)) err = errno ? errno : EIO;
  if (!err && fflush(w->f) != 0) err = errno ? errno : EIO;
  int rc = fclose(w->f);
  w->f = NULL;
  if (!err && rc != 0) err = errno ? errno : EIO;
  if (!err && w->tmp && rename(w->tmp, w->path) != 0) err = errno;
  if (!err) {
    writer_free(w);
    return KILN_OK;
  }
  if (w->tmp) unlink(w->tmp);
  errno = err;
  kiln_status st = kiln_system_error("cannot write '%s'", w->path);
  writer_free(w);
  return st;
}

kiln_status kiln_write_file(const char *path, const void *data, size_t len) {
  kiln_file_writer *w;
  KILN_TRY(kiln_file_open(path, &w));
  kiln_file_write(w, data, len);
  return kiln_file_commit(w);
}

bool kiln_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- folders written whole ---- */
/* dir without trailing slashes, made absolute when it exists (so "." has a parent). */
static char *final_dir(const char *dir) {
  char *real = realpath(dir, NULL);
  if (real) return real;
  char *p = kiln_xstrdup(dir);
  for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--) p[n - 1] = 0;
  return p;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw);

/* Removes the temporaries ".BASE.kiln-tmp.XXXXXX" in par of writers killed over a day ago. */
static void sweep_stale(const char *par, const char *base) {
  DIR *d = opendir(par);
  if (!d) return;
  kiln_strbuf prefix = {0}, path = {0};
  kiln_strbuf_printf(&prefix, ".%.100s.kiln-tmp.", base);
  time_t now = time(NULL);
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, prefix.data, prefix.len) || strlen(e->d_name) != prefix.len + 6)
      continue;
    path.len = 0;
    kiln_strbuf_printf(&path, "%s/%s", par, e->d_name);
    struct stat sb;
    if (lstat(path.data, &sb) == 0 && S_ISDIR(sb.st_mode) && now - sb.st_mtime > 24 * 3600)
      nftw(path.data, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
  closedir(d);
  kiln_strbuf_free(&prefix);
  kiln_strbuf_free(&path);
}

kiln_status kiln_dir_begin(const char *dir, kiln_dir_writer *w) {
  memset(w, 0, sizeof *w);
  if (!dir || !*dir) return kiln_error(KILN_ERR_IO, "empty folder name");
  w->final = final_dir(dir);
  const char *slash = strrchr(w->final, '/');
  kiln_strbuf parent = {0}, tmp = {0};
  if (slash) kiln_strbuf_printf(&parent, "%.*s", (int)(slash - w->final), w->final);
  const char *par = !slash ? "." : slash == w->final ? "/" : parent.data;
  const char *base = slash ? slash + 1 : w->final;
  kiln_status st = kiln_make_dirs(par);
  if (!st) sweep_stale(par, base);
  kiln_strbuf_printf(&tmp, "%s/.%.100s.kiln-tmp.XXXXXX", par, base);
  if (!st && !mkdtemp(tmp.data)) st = kiln_system_error("cannot create a folder next to '%s'", dir);
  kiln_strbuf_free(&parent);
  if (st) {
    kiln_strbuf_free(&tmp);
    free(w->final);
    w->final = NULL;
    return st;
  }
  w->tmp = tmp.data;
  return KILN_OK;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)ftw;
  if (flag == FTW_DP) rmdir(path);
  else unlink(path);
  return 0;
}

void kiln_dir_abort(kiln_dir_writer *w) {
  if (w->tmp) nftw(w->tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS); /* our own folder only */
  free(w->tmp);
  free(w->final);
  memset(w, 0, sizeof *w);
}

kiln_status kiln_dir_commit(kiln_dir_writer *w) {
  struct stat sb;
  kiln_status st = KILN_OK;
  if (stat(w->final, &sb) != 0) {
    if (rename(w->tmp, w->final) != 0) st = kiln_system_error("cannot create '%s'", w->final);
  } else if (renameat2(AT_FDCWD, w->tmp, AT_FDCWD, w->final, RENAME_EXCHANGE) != 0) {
    /* no atomic exchange here: the old folder aside first, then the new one in */
    kiln_strbuf old = {0};
    kiln_strbuf_printf(&old, "%s.old", w->tmp);
    if (rename(w->final, old.data) != 0) st = kiln_system_error("cannot replace '%s'", w->final);
    else if (rename(w->tmp, w->final) != 0) {
      st = kiln_system_error("cannot replace '%s'", w->final);
      rename(old.data, w->final);
    } else {
      free(w->tmp);
      w->tmp = old.data, old.data = NULL; /* removed below */
    }
    kiln_strbuf_free(&old);
  }
  kiln_dir_abort(w); /* after an exchange w->tmp holds the old folder */
  return st;
}

kiln_status kiln_make_dirs(const char *dir) {
  if (!dir || !*dir) return kiln_error(KILN_ERR_INVALID, "empty folder name");
  char *path = kiln_xstrdup(dir);
  kiln_status st = KILN_OK;
  for (char *p = path + 1; !st; p++) {
    bool end = *p == 0;
    if (*p != '/' && !end) continue;
    *p = 0;
    struct stat sb;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) {
      if (errno_is_bad_path(errno))
        st = kiln_error(KILN_ERR_IO, "cannot create folder '%s': %s", path, strerror(errno));
      else st = kiln_system_error("cannot create folder '%s'", path);
    } else if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = kiln_error(KILN_ERR_IO, "'%s' is not a folder", path);
    if (end) break;
    *p = '/';
  }
  free(path);
  return st;
}
