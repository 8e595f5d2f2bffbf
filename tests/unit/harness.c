#include "harness.h"

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
