/* One piece of work in a child process, so that a crash or a hang of what it runs (compiled
 * code that faults, a compiler bug that aborts or loops) is a result of the parent, not the end
 * of the campaign.
 *
 *   report r;  fuzz_child ch;
 *   KILN_TRY(fuzz_child_run(work, &ctx, &r, sizeof r, 120, &ch));
 *   if (ch.how == FUZZ_CHILD_DONE) ... r holds what work wrote ...
 *   else ... crashed (ch.signal) or timed out ...
 *
 * The child runs work(user, report) and sends the report through a pipe, then leaves with
 * _exit (no atexit handlers: a coverage build's counters are not dumped per child; such builds
 * run their campaigns in-process). The parent waits for it. */
#ifndef KILN_FUZZ_CHILD_H
#define KILN_FUZZ_CHILD_H

#include <stddef.h>

#include "base/base.h"

typedef enum fuzz_child_how {
  FUZZ_CHILD_DONE,    /* the work finished and its report came back */
  FUZZ_CHILD_CRASHED, /* killed by a signal (signal), or died without a whole report */
  FUZZ_CHILD_TIMEOUT, /* ran past the time limit and was killed */
} fuzz_child_how;

typedef struct fuzz_child {
  fuzz_child_how how;
  int signal; /* CRASHED by a signal: its number; 0 otherwise */
  int status; /* CRASHED without a signal: the exit status */
} fuzz_child;

/* A failure to fork or make the pipe is KILN_ERR_SYSTEM (the environment). */
KILN_MUST_USE kiln_status fuzz_child_run(void (*work)(void *user, void *report), void *user,
                                         void *report, size_t size, int timeout_s, fuzz_child *out);
/* "SIGSEGV", "SIGABRT", ... ("signal N" for others). */
const char *fuzz_child_signal_name(int sig, char *buf, size_t n);

#endif
