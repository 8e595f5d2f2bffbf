/* Files (src/base/file.c): the writer's temporary + rename, its failures (full disk,
 * /dev/full, folders, FIFOs, missing folders) with errno's text and nothing left behind, the
 * reader's refusal of non-files without blocking; and the kernel cache that only costs time
 * when it cannot be written (src/runtime/module.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "runtime/runtime.h"

static char g_dir[512];

static char *path_in(const char *name) {
  kiln_strbuf b = {0};
  kiln_strbuf_printf(&b, "%s/%s", g_dir, name);
  return b.data;
}

/* Entries of dir other than "." and ".." (temporaries included). */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += !(e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")));
  if (d) closedir(d);
  return n;
}

static bool file_is(const char *path, const char *text) {
  char *data = NULL;
  size_t len = 0;
  kiln_status st = kiln_read_file(path, &data, &len);
  bool ok = !st && len == strlen(text) && !memcmp(data, text, len);
  kiln_status_free(st);
  free(data);
  return ok;
}

static bool message_has(kiln_status st, const char *text) {
  return st && strstr(kiln_status_message(st), text) != NULL;
}

static void test_write_replace(void) {
  char *p = path_in("a.txt");
  CHECK_OK(kiln_write_file(p, "first", 5));
  CHECK(file_is(p, "first"));
  kiln_file_writer *w = NULL;
  CHECK_OK(kiln_file_open(p, &w));
  kiln_file_write(w, "sec", 3);
  kiln_file_printf(w, "ond %d", 2);
  CHECK(file_is(p, "first"));       /* the old content stays until the commit */
  CHECK(count_entries(g_dir) == 2); /* a.txt and the temporary */
  CHECK_OK(kiln_file_commit(w));
  CHECK(file_is(p, "second 2"));
  CHECK(count_entries(g_dir) == 1);
  CHECK_OK(kiln_file_open(p, &w));
  kiln_file_write(w, "third", 5);
  kiln_file_abort(w); /* nothing of it is left */
  CHECK(file_is(p, "second 2"));
  CHECK(count_entries(g_dir) == 1);
  CHECK_OK(kiln_write_file(p, "", 0));
  CHECK(file_is(p, ""));
  unlink(p);
  free(p);
}

static void test_write_refused(void) {
  char *dir = path_in("sub"), *fifo = path_in("fifo"), *missing = path_in("no/such/x");
  CHECK(mkdir(dir, 0755) == 0 && mkfifo(fifo, 0644) == 0);
  kiln_status st = kiln_write_file(dir, "x", 1);
  CHECK(st && kiln_status_code(st) == KILN_ERR_IO && message_has(st, "folder"));
  kiln_status_free(st);
  st = kiln_write_file(fifo, "x", 1);
  CHECK(st && kiln_status_code(st) == KILN_ERR_IO && message_has(st, "FIFO"));
  kiln_status_free(st);
  st = kiln_write_file(missing, "x", 1); /* a path that leads nowhere: bad input */
  CHECK(st && kiln_status_code(st) == KILN_ERR_IO && message_has(st, "No such file"));
  kiln_status_free(st);
  CHECK_ERR(kiln_write_file("", "x", 1), KILN_ERR_IO);
  CHECK(count_entries(g_dir) == 2);
  rmdir(dir), unlink(fifo);
  free(dir), free(fifo), free(missing);
}

/* /dev/full is written in place (a device cannot be renamed over) and fails at the flush. */
static void test_write_dev_full(void) {
  if (access("/dev/full", W_OK) != 0) {
    printf("SKIP /dev/full: not writable here\n");
    return;
  }
  kiln_status st = kiln_write_file("/dev/full", "data", 4);
  CHECK(st && kiln_status_code(st) == KILN_ERR_SYSTEM);
  CHECK(message_has(st, "No space left on device") && message_has(st, "/dev/full"));
  CHECK(kiln_status_exit_code(st) == 1);
  kiln_status_free(st);
  CHECK_OK(kiln_write_file("/dev/null", "data", 4));
}

/* A real full disk: a 32 KiB tmpfs (root only; skipped with the reason otherwise). */
static void test_write_full_disk(void) {
  char *mnt = path_in("full");
  CHECK(mkdir(mnt, 0755) == 0);
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=32k") != 0) {
    printf("SKIP full disk: cannot mount a tmpfs (%s)\n", strerror(errno));
    rmdir(mnt);
    free(mnt);
    return;
  }
  size_t n = 256 * 1024;
  char *big = kiln_xcalloc(n, 1);
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "%s/big.bin", mnt);
  kiln_status st = kiln_write_file(p.data, big, n);
  CHECK(st && kiln_status_code(st) == KILN_ERR_SYSTEM);
  CHECK(message_has(st, "No space left on device"));
  kiln_status_free(st);
  CHECK(count_entries(mnt) == 0);                /* neither a truncated file nor the temporary */
  CHECK_OK(kiln_write_file(p.data, "small", 5)); /* the space came back */
  CHECK(file_is(p.data, "small"));
  st = kiln_write_file(p.data, big, n); /* a failed replacement keeps the old file */
  CHECK(st && kiln_status_code(st) == KILN_ERR_SYSTEM);
  kiln_status_free(st);
  CHECK(file_is(p.data, "small") && count_entries(mnt) == 1);
  umount(mnt);
  rmdir(mnt);
  kiln_strbuf_free(&p);
  free(big);
  free(mnt);
}

static void test_read_refused(void) {
  char *dir = path_in("rdir"), *fifo = path_in("rfifo");
  CHECK(mkdir(dir, 0755) == 0 && mkfifo(fifo, 0644) == 0);
  char *data = NULL;
  size_t len;
  kiln_status st = kiln_read_file(dir, &data, &len);
  CHECK(st && kiln_status_code(st) == KILN_ERR_IO && message_has(st, "folder"));
  CHECK(!message_has(st, "bytes")); /* once "9223372036854775807 bytes do not fit" */
  kiln_status_free(st);
  st = kiln_read_file(fifo, &data, &len); /* no writer: must not block */
  CHECK(st && kiln_status_code(st) == KILN_ERR_IO && message_has(st, "FIFO"));
  kiln_status_free(st);
  int fd = -1;
  CHECK_ERR(kiln_open_read("/dev/null", &fd), KILN_ERR_IO);
  CHECK_ERR(kiln_open_read(g_dir, &fd), KILN_ERR_IO);
  CHECK(data == NULL);
  rmdir(dir), unlink(fifo);
  free(dir), free(fifo);
}

static void test_same_file(void) {
  char *a = path_in("s1"), *hard = path_in("s2"), *soft = path_in("s3"), *other = path_in("s4");
  CHECK_OK(kiln_write_file(a, "x", 1));
  CHECK_OK(kiln_write_file(other, "x", 1));
  CHECK(link(a, hard) == 0 && symlink(a, soft) == 0);
  CHECK(kiln_same_file(a, hard) && kiln_same_file(a, soft) && kiln_same_file(soft, hard));
  CHECK(!kiln_same_file(a, other) && !kiln_same_file(a, "/no/such/file"));
  unlink(a), unlink(hard), unlink(soft), unlink(other);
  free(a), free(hard), free(soft), free(other);
}

/* ---- folders written whole ---- */
static void test_dir_writer(void) {
  char *dir = path_in("whole"), *f = path_in("whole/a.txt"), *sub = path_in("whole/src");
  kiln_dir_writer w;
  CHECK_OK(kiln_dir_begin(dir, &w));
  kiln_strbuf p = {0};
  kiln_strbuf_printf(&p, "%s/a.txt", w.tmp);
  CHECK_OK(kiln_write_file(p.data, "one", 3));
  CHECK(access(dir, F_OK) != 0); /* nothing under the final name before the commit */
  CHECK_OK(kiln_dir_commit(&w));
  CHECK(file_is(f, "one"));
  CHECK_OK(kiln_dir_begin(dir, &w)); /* a replacement: the old folder stays whole meanwhile */
  p.len = 0;
  kiln_strbuf_printf(&p, "%s/src", w.tmp);
  CHECK_OK(kiln_make_dirs(p.data));
  kiln_strbuf_printf(&p, "/b.c");
  CHECK_OK(kiln_write_file(p.data, "two", 3));
  CHECK(file_is(f, "one") && access(sub, F_OK) != 0);
  CHECK_OK(kiln_dir_commit(&w));
  CHECK(access(f, F_OK) != 0 && access(sub, F_OK) == 0); /* the old content is gone */
  CHECK_OK(kiln_dir_begin(dir, &w));
  p.len = 0;
  kiln_strbuf_printf(&p, "%s/c.txt", w.tmp);
  CHECK_OK(kiln_write_file(p.data, "three", 5));
  kiln_dir_abort(&w);
  CHECK(access(sub, F_OK) == 0 && count_entries(g_dir) == 1); /* no temporary folder left */
  kiln_dir_abort(&w);                                         /* twice is harmless */
  char *stale = path_in(".whole.kiln-tmp.AbC123"), *fresh = path_in(".whole.kiln-tmp.XyZ789");
  CHECK(mkdir(stale, 0755) == 0 && mkdir(fresh, 0755) == 0);
  struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  CHECK(utimensat(AT_FDCWD, stale, old, 0) == 0);
  CHECK_OK(kiln_dir_begin(dir, &w)); /* a killed writer's old folder is swept, a recent kept */
  CHECK(access(stale, F_OK) != 0 && access(fresh, F_OK) == 0);
  kiln_dir_abort(&w);
  rmdir(fresh);
  free(stale), free(fresh);
  kiln_test_remove_dir(dir);
  kiln_strbuf_free(&p);
  free(dir), free(f), free(sub);
}

/* ---- the kernel cache: unusable is slow, not fatal ---- */
static const char *const src1[1] = {"int kiln_tf_one(void) { return 1; }\n"};

static void build_and_call(const char *cache) {
  kiln_cc_opts o = {NULL, NULL, cache, false, 1, NULL, false};
  kiln_module *m = NULL;
  CHECK_OK(kiln_module_build(1, src1, &o, &m, NULL));
  void *f = NULL;
  if (m) CHECK_OK(kiln_module_sym(m, "kiln_tf_one", &f));
  CHECK(f && ((int (*)(void))f)() == 1);
  kiln_module_free(m);
}

static void test_cache_unusable(void) {
  char *file = path_in("cache_file"), *under = path_in("cache_file/sub");
  CHECK_OK(kiln_write_file(file, "x", 1));
  build_and_call(file);  /* a file */
  build_and_call(under); /* a path under a file */
  char *mnt = path_in("cache_full");
  CHECK(mkdir(mnt, 0755) == 0);
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=16k") == 0) {
    char *fill = path_in("cache_full/fill"), *zeros = kiln_xcalloc(1, 1 << 20);
    kiln_status_free(kiln_write_file(fill, zeros, 1 << 20)); /* fails: the disk is full */
    int fd = open(fill, O_WRONLY | O_CREAT, 0644);           /* fill it for real */
    while (fd >= 0 && write(fd, zeros, 4096) > 0) {
    }
    if (fd >= 0) close(fd);
    build_and_call(mnt); /* a full disk */
    umount(mnt);
    free(fill), free(zeros);
  } else {
    printf("SKIP full cache: cannot mount a tmpfs (%s)\n", strerror(errno));
  }
  kiln_cc_opts nocc = {"/nonexistent/cc", NULL, file, false, 1, NULL, false};
  kiln_module *m = NULL;
  kiln_status st = kiln_module_build(1, src1, &nocc, &m, NULL);
  CHECK(st && kiln_status_code(st) == KILN_ERR_SYSTEM && kiln_status_exit_code(st) == 1);
  kiln_status_free(st);
  unlink(file), rmdir(mnt);
  free(file), free(under), free(mnt);
}

static void setup(void) {
  kiln_test_make_tmp(g_dir, sizeof g_dir, "kiln_file");
}

static void test_all(void) {
  setup();
  test_write_replace();
  test_write_refused();
  test_write_dev_full();
  test_write_full_disk();
  test_read_refused();
  test_same_file();
  test_dir_writer();
  test_cache_unusable();
  kiln_test_remove_dir(g_dir);
}

TEST_MAIN({"file", test_all})
