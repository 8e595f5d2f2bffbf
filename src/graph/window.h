/* ONNX window geometry: the output size and padding of one spatial dim of a Conv or pooling
 * window (Conv, ConvInteger, QLinearConv, AveragePool, MaxPool, LpPool), from plain numbers.
 * Only the geometry: attribute decoding and the kernels live with the ops and the lowering,
 * which all ask this one function, so inference, the reference kernels and the compiled
 * kernels cannot disagree on a window.
 *
 *   kiln_window_dim w = {.in = 224, .kernel = 7, .stride = 2, .dilation = 1,
 *                        .pad_begin = 3, .pad_end = 3};
 *   if (kiln_window_resolve(&w, KILN_AUTO_PAD_NOTSET, false) == KILN_WINDOW_OK) ... w.out == 112
 */
#ifndef KILN_GRAPH_WINDOW_H
#define KILN_GRAPH_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

typedef enum kiln_auto_pad {
  KILN_AUTO_PAD_NOTSET,     /* the pads attribute as given */
  KILN_AUTO_PAD_SAME_UPPER, /* out = ceil(in / stride); an odd pad's extra at the end */
  KILN_AUTO_PAD_SAME_LOWER, /* ... at the beginning */
  KILN_AUTO_PAD_VALID,      /* no padding */
  KILN_AUTO_PAD_COUNT
} kiln_auto_pad;

/* "NOTSET" (or ""), "SAME_UPPER", "SAME_LOWER", "VALID"; false for anything else. */
bool kiln_auto_pad_parse(const char *s, kiln_auto_pad *out);

typedef struct kiln_window_dim {
  int64_t in;                 /* input extent; < 0: unknown (out becomes -1) */
  int64_t kernel;             /* kernel extent before dilation */
  int64_t stride, dilation;   /* >= 1 */
  int64_t pad_begin, pad_end; /* in: the pads attribute; out: the padding in effect */
  int64_t out;                /* out: the output extent */
} kiln_window_dim;

typedef enum kiln_window_error {
  KILN_WINDOW_OK,
  KILN_WINDOW_BAD,       /* kernel, stride or dilation < 1, or a negative pad */
  KILN_WINDOW_TOO_LARGE, /* kernel, stride, dilation or a pad above INT32_MAX */
  KILN_WINDOW_LARGER,    /* NOTSET: the dilated kernel is larger than the padded input */
  KILN_WINDOW_ERROR_COUNT
} kiln_window_error;

/* Resolves the padding and output extent of w (ONNX semantics: dilated kernel
 * (kernel - 1) * dilation + 1; with ceil_mode, a last window that would start in the end
 * padding is dropped). With an unknown input extent the arguments are still checked and
 * out is -1, the pads left as given. */
kiln_window_error kiln_window_resolve(kiln_window_dim *w, kiln_auto_pad auto_pad, bool ceil_mode);

#endif
