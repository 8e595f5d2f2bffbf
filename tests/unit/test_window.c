/* ONNX window geometry (graph/window.h): output extents and pads under each auto_pad, with
 * dilation and ceil_mode, and the argument checks. */
#include "graph/window.h"
#include "harness.h"

static kiln_window_dim dim(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t pe) {
  kiln_window_dim w = {in, k, s, dil, pb, pe, -7};
  return w;
}

static bool resolves(kiln_window_dim w, kiln_auto_pad ap, bool ceil, int64_t out, int64_t pb,
                     int64_t pe) {
  return kiln_window_resolve(&w, ap, ceil) == KILN_WINDOW_OK && w.out == out && w.pad_begin == pb &&
         w.pad_end == pe;
}

static void test_pads_given(void) {
  CHECK(resolves(dim(224, 7, 2, 1, 3, 3), KILN_AUTO_PAD_NOTSET, false, 112, 3, 3));
  CHECK(resolves(dim(5, 3, 1, 1, 0, 0), KILN_AUTO_PAD_NOTSET, false, 3, 0, 0));
  CHECK(resolves(dim(7, 3, 1, 2, 0, 0), KILN_AUTO_PAD_NOTSET, false, 3, 0, 0)); /* dilated 5 */
  CHECK(resolves(dim(5, 2, 2, 1, 0, 0), KILN_AUTO_PAD_NOTSET, false, 2, 0, 0));
  CHECK(resolves(dim(5, 2, 2, 1, 0, 0), KILN_AUTO_PAD_NOTSET, true, 3, 0, 0)); /* partial last */
  /* ceil_mode: a last window starting in the end padding is dropped (4 + 2 pad, stride 3) */
  CHECK(resolves(dim(4, 1, 3, 1, 0, 2), KILN_AUTO_PAD_NOTSET, true, 2, 0, 2));
}

static void test_auto_pad(void) {
  /* total pad 2: one each side */
  CHECK(resolves(dim(5, 3, 2, 1, 9, 9), KILN_AUTO_PAD_SAME_UPPER, false, 3, 1, 1));
  /* total pad 1: the extra at the end (UPPER) or the beginning (LOWER) */
  CHECK(resolves(dim(6, 3, 2, 1, 0, 0), KILN_AUTO_PAD_SAME_UPPER, false, 3, 0, 1));
  CHECK(resolves(dim(6, 3, 2, 1, 0, 0), KILN_AUTO_PAD_SAME_LOWER, false, 3, 1, 0));
  CHECK(resolves(dim(6, 1, 2, 1, 0, 0), KILN_AUTO_PAD_SAME_UPPER, false, 3, 0, 0)); /* none */
  CHECK(resolves(dim(7, 3, 1, 2, 4, 4), KILN_AUTO_PAD_VALID, false, 3, 0, 0));
  CHECK(resolves(dim(2, 5, 1, 1, 0, 0), KILN_AUTO_PAD_VALID, false, 0, 0, 0)); /* empty */
  kiln_auto_pad ap = KILN_AUTO_PAD_COUNT;
  CHECK(kiln_auto_pad_parse("", &ap) && ap == KILN_AUTO_PAD_NOTSET);
  CHECK(kiln_auto_pad_parse("SAME_LOWER", &ap) && ap == KILN_AUTO_PAD_SAME_LOWER);
  CHECK(kiln_auto_pad_parse("VALID", &ap) && ap == KILN_AUTO_PAD_VALID);
  CHECK(!kiln_auto_pad_parse("same_upper", &ap));
}

static void test_errors(void) {
  kiln_window_dim w = dim(5, 3, 0, 1, 0, 0);
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_NOTSET, false) == KILN_WINDOW_BAD);
  w = dim(5, 3, 1, 1, -1, 0);
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_NOTSET, false) == KILN_WINDOW_BAD);
  w = dim(5, 0, 1, 1, 0, 0);
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_VALID, false) == KILN_WINDOW_BAD);
  w = dim(5, (int64_t)INT32_MAX + 1, 1, 1, 0, 0);
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_NOTSET, false) == KILN_WINDOW_TOO_LARGE);
  w = dim(2, 3, 1, 2, 0, 0); /* dilated 5 > 2 */
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_NOTSET, false) == KILN_WINDOW_LARGER);
  w = dim(-1, 3, 2, 1, 1, 1); /* unknown input: checked, out unknown, pads kept */
  CHECK(kiln_window_resolve(&w, KILN_AUTO_PAD_SAME_UPPER, false) == KILN_WINDOW_OK);
  CHECK(w.out == -1 && w.pad_begin == 1 && w.pad_end == 1);
}

TEST_MAIN(T(test_pads_given), T(test_auto_pad), T(test_errors))
