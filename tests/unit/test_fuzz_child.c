/* The child process of kiln fuzz (tools/fuzz_child.c, compiled in here): a finished child's
 * report comes back whole; a child killed by a signal, one that exits without its report, and
 * one that runs past its time are told apart, and the parent goes on. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tools/fuzz_child.c"
#include "harness.h"

typedef struct rep {
  int value;
  char text[64];
} rep;

static void finish(void *user, void *report) {
  rep *r = report;
  r->value = *(int *)user * 2;
  snprintf(r->text, sizeof r->text, "done");
}

static void segv(void *user, void *report) {
  (void)user, (void)report;
  raise(SIGSEGV);
}

static void killed(void *user, void *report) {
  (void)user, (void)report;
  raise(SIGKILL);
}

static void quit(void *user, void *report) {
  (void)user, (void)report;
  _exit(3);
}

static void spin(void *user, void *report) {
  (void)user, (void)report;
  for (;;) pause();
}

static void test_outcomes(void) {
  int in = 21;
  rep r = {0};
  fuzz_child ch;
  CHECK_OK(fuzz_child_run(finish, &in, &r, sizeof r, 10, &ch));
  CHECK(ch.how == FUZZ_CHILD_DONE && r.value == 42 && !strcmp(r.text, "done"));
  /* a fault: killed by SIGSEGV, or (a sanitizer build, whose handler reports the fault) an
   * exit with a nonzero status; either way a crash */
  CHECK_OK(fuzz_child_run(segv, &in, &r, sizeof r, 10, &ch));
  CHECK(ch.how == FUZZ_CHILD_CRASHED && (ch.signal == SIGSEGV || ch.status != 0));
  CHECK_OK(fuzz_child_run(killed, &in, &r, sizeof r, 10, &ch));
  CHECK(ch.how == FUZZ_CHILD_CRASHED && ch.signal == SIGKILL);
  char b[32];
  CHECK(!strcmp(fuzz_child_signal_name(SIGSEGV, b, sizeof b), "SIGSEGV"));
  CHECK(!strcmp(fuzz_child_signal_name(SIGUSR1, b, sizeof b), b) && strstr(b, "signal"));
  CHECK_OK(fuzz_child_run(quit, &in, &r, sizeof r, 10, &ch));
  CHECK(ch.how == FUZZ_CHILD_CRASHED && ch.signal == 0 && ch.status == 3);
  CHECK_OK(fuzz_child_run(spin, &in, &r, sizeof r, 1, &ch));
  CHECK(ch.how == FUZZ_CHILD_TIMEOUT);
  /* the parent goes on: another child after those */
  r.value = 0;
  CHECK_OK(fuzz_child_run(finish, &in, &r, sizeof r, 10, &ch));
  CHECK(ch.how == FUZZ_CHILD_DONE && r.value == 42);
}

TEST_MAIN(T(test_outcomes))
