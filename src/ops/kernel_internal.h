/* Private interface of the op families quant, seqmodel, signal, text, random, loss and
 * vision (src/graph/ops.def): the register functions of the files a family spans and the
 * helpers their kernels share (kernel_util.c). Not for use outside src/ops. */
#ifndef KILN_OPS_KERNEL_INTERNAL_H
#define KILN_OPS_KERNEL_INTERNAL_H

#include "ops.h"

/* Parts of a family kept in their own file; the family's kiln_ops_register_<family> calls
 * them. */
void kiln_quant_register_qlinear(kiln_op_impl *table);      /* quant_qlinear.c */
void kiln_seqmodel_register_rnn(kiln_op_impl *table);       /* seqmodel_rnn.c */
void kiln_seqmodel_register_attention(kiln_op_impl *table); /* seqmodel_attention.c */
void kiln_text_register_tfidf(kiln_op_impl *table);         /* text_tfidf.c */

/* Sets the arity and the kernel of one table entry. */
void kiln_kern_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, int min_in, int max_in,
                   int min_out, int max_out);

/* Whether the node asks for output i (present and not omitted). */
bool kiln_kern_want_out(const kiln_eval_ctx *ctx, int i);

/* Rounds v to the precision of the float dtype t (identity for f64 and non-float types). */
double kiln_kern_round_to(kiln_dtype t, double v);

/* Loads a whole tensor as doubles (malloc'd; caller frees). Error on overflow or a
 * non-numeric dtype. */
KILN_MUST_USE kiln_status kiln_kern_load_all_f64(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                                 double **out);

/* Reads the scalar (or single-element) value of an optional input as int64 / double;
 * *present is false when the input is omitted. */
KILN_MUST_USE kiln_status kiln_kern_scalar_i64(const kiln_eval_ctx *ctx, int i, bool *present,
                                               int64_t *out);
KILN_MUST_USE kiln_status kiln_kern_scalar_f64(const kiln_eval_ctx *ctx, int i, bool *present,
                                               double *out);

/* Checks that t is a float tensor ("what" names it in the message). */
KILN_MUST_USE kiln_status kiln_kern_need_float(const kiln_eval_ctx *ctx, const kiln_tensor *t,
                                               const char *what);

/* n * m with an error naming the node on overflow. */
KILN_MUST_USE kiln_status kiln_kern_mul(const kiln_eval_ctx *ctx, int64_t n, int64_t m,
                                        int64_t *out);

/* ---- UTF-8 (text_regex.c) ---- */
/* Decodes one code point from s (n bytes available); returns its length, or 0 for an
 * invalid or truncated sequence. */
size_t kiln_text_utf8_decode(const char *s, size_t n, uint32_t *out);
/* Encodes c (<= 0x10FFFF) into out (4 bytes room); returns the length. */
size_t kiln_text_utf8_encode(uint32_t c, char *out);

/* ---- RE2-syntax regular expressions (text_regex.c) ----
 * A Thompson-NFA matcher (linear time, like RE2) for the RE2 syntax subset without
 * Unicode classes (\p); unsupported syntax is a compile error. */
typedef struct kiln_text_regex kiln_text_regex;
KILN_MUST_USE kiln_status kiln_text_regex_compile(const char *pattern, kiln_text_regex **out);
bool kiln_text_regex_fullmatch(const kiln_text_regex *re, const char *s);
void kiln_text_regex_free(kiln_text_regex *re);

#endif
