/* ONNX Conv / pooling window geometry. See window.h. */
#include <string.h>

#include "window.h"

bool kiln_auto_pad_parse(const char *s, kiln_auto_pad *out) {
  static const char *const NAMES[KILN_AUTO_PAD_COUNT] = {"NOTSET", "SAME_UPPER", "SAME_LOWER",
                                                         "VALID"};
  if (!*s) s = "NOTSET";
  for (int i = 0; i < KILN_AUTO_PAD_COUNT; i++)
    if (!strcmp(s, NAMES[i])) {
      *out = (kiln_auto_pad)i;
      return true;
    }
  return false;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

kiln_window_error kiln_window_resolve(kiln_window_dim *w, kiln_auto_pad auto_pad, bool ceil_mode) {
  int64_t in = w->in, s = w->stride, k = w->kernel, dil = w->dilation;
  if (s <= 0 || dil <= 0 || k <= 0 || w->pad_begin < 0 || w->pad_end < 0) return KILN_WINDOW_BAD;
  if (k > INT32_MAX || dil > INT32_MAX || s > INT32_MAX || w->pad_begin > INT32_MAX ||
      w->pad_end > INT32_MAX)
    return KILN_WINDOW_TOO_LARGE;
  int64_t dk = (k - 1) * dil + 1;
  if (in < 0) {
    w->out = -1;
    return KILN_WINDOW_OK;
  }
  switch (auto_pad) {
  case KILN_AUTO_PAD_SAME_UPPER:
  case KILN_AUTO_PAD_SAME_LOWER: {
    w->out = floor_div(in + s - 1, s);
    int64_t total = (w->out - 1) * s + dk - in;
    if (total < 0) total = 0;
    w->pad_begin = auto_pad == KILN_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
    w->pad_end = total - w->pad_begin;
    return KILN_WINDOW_OK;
  }
  case KILN_AUTO_PAD_VALID:
    w->pad_begin = w->pad_end = 0;
    w->out = in >= dk ? floor_div(in - dk, s) + 1 : 0;
    return KILN_WINDOW_OK;
  default: break;
  }
  int64_t span = in + w->pad_begin + w->pad_end - dk;
  if (span < 0) return KILN_WINDOW_LARGER;
  int64_t out = ceil_mode ? floor_div(span + s - 1, s) + 1 : span / s + 1;
  if (ceil_mode && (out - 1) * s >= in + w->pad_begin) out--;
  w->out = out;
  return KILN_WINDOW_OK;
}
