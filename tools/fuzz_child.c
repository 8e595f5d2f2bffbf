/* Work in a child process (fuzz_child.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_child.h"

static void write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    c += w, n -= (size_t)w;
  }
}

static size_t read_all(int fd, void *p, size_t n) {
  char *c = p;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, c + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

kiln_status fuzz_child_run(void (*work)(void *user, void *report), void *user, void *report,
                           size_t size, int timeout_s, fuzz_child *out) {
  memset(out, 0, sizeof *out);
  int fd[2];
  if (pipe(fd) != 0) return kiln_error(KILN_ERR_SYSTEM, "pipe: %s", strerror(errno));
  fflush(stdout), fflush(stderr); /* the child must not print the parent's buffered text */
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fd[0]), close(fd[1]);
    return kiln_error(KILN_ERR_SYSTEM, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(fd[0]);
    signal(SIGALRM, SIG_DFL);
    if (timeout_s > 0) alarm((unsigned)timeout_s);
    work(user, report);
    write_all(fd[1], report, size);
    fflush(stdout), fflush(stderr);
    _exit(0);
  }
  close(fd[1]);
  size_t got = read_all(fd[0], report, size);
  close(fd[0]);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM) out->how = FUZZ_CHILD_TIMEOUT;
  else if (WIFSIGNALED(ws)) out->how = FUZZ_CHILD_CRASHED, out->signal = WTERMSIG(ws);
  else if (got != size || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    out->how = FUZZ_CHILD_CRASHED, out->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  else out->how = FUZZ_CHILD_DONE;
  return KILN_OK;
}

const char *fuzz_child_signal_name(int sig, char *buf, size_t n) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGABRT: return "SIGABRT";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  case SIGKILL: return "SIGKILL";
  default: snprintf(buf, n, "signal %d", sig); return buf;
  }
}
