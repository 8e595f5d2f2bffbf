#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kiln_test_failed_checks;

int kiln_test_run(const kiln_test_case *cases, int n) {
  int passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    int before = kiln_test_failed_checks;
    cases[i].fn();
    if (kiln_test_failed_checks == before) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAIL %s\n", cases[i].name);
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

void kiln_test_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (e->d_type == DT_DIR) kiln_test_remove_dir(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

void kiln_test_make_tmp(char *buf, size_t n, const char *prefix) {
  const char *t = getenv("TMPDIR");
  snprintf(buf, n, "%s/%s_XXXXXX", t && *t ? t : "/tmp", prefix);
  if (!mkdtemp(buf)) abort();
}
