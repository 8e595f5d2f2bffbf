/* Private interface of the 'misc' op family (misc*.c): the register function of each
 * theme file and a few helpers they share. Not for use outside src/ops/misc*.c. */
#ifndef KILN_OPS_MISC_INTERNAL_H
#define KILN_OPS_MISC_INTERNAL_H

#include "ops.h"

/* Each theme file fills the table entries of its ops. */
void kiln_misc_register_loss(kiln_op_impl *table);      /* misc_loss.c */
void kiln_misc_register_quant(kiln_op_impl *table);     /* misc_quant.c */
void kiln_misc_register_qlinear(kiln_op_impl *table);   /* misc_qlinear.c */
void kiln_misc_register_rnn(kiln_op_impl *table);       /* misc_rnn.c */
void kiln_misc_register_signal(kiln_op_impl *table);    /* misc_signal.c */
void kiln_misc_register_attention(kiln_op_impl *table); /* misc_attention.c */
void kiln_misc_register_seqmodel(kiln_op_impl *table);  /* misc_seqmodel.c */
void kiln_misc_register_detect(kiln_op_impl *table);    /* misc_detect.c */
void kiln_misc_register_string(kiln_op_impl *table);    /* misc_string.c */
void kiln_misc_register_tfidf(kiln_op_impl *table);     /* misc_tfidf.c */
void kiln_misc_register_random(kiln_op_impl *table);    /* misc_random.c */
/* Sets the infer function of every misc op (misc_infer.c); call after the above. */
void kiln_misc_register_infer(kiln_op_impl *table);

/* Sets the arity and the kernel of one table entry. */
void kiln_misc_set(kiln_op_impl *table, kiln_op op, kiln_eval_fn eval, int min_in, int max_in,
                   int min_out, int max_out);

/* Whether the node asks for output i (present and not omitted). */
bool kiln_misc_want_out(const kiln_eval_ctx *ctx, int i);

/* Rounds v to the precision of the float dtype t (identity for f64 and non-float types). */
double kiln_misc_round_to(kiln_dtype t, double v);

/* Loads a whole tensor as doubles (malloc'd; caller frees). Error on overflow or a
 * non-numeric dtype. */
kiln_status kiln_misc_load_all_f64(const kiln_eval_ctx *ctx, const kiln_tensor *t, double **out);

/* Reads the scalar (or single-element) value of an optional input as int64 / double;
 * *present is false when the input is omitted. */
kiln_status kiln_misc_scalar_i64(const kiln_eval_ctx *ctx, int i, bool *present, int64_t *out);
kiln_status kiln_misc_scalar_f64(const kiln_eval_ctx *ctx, int i, bool *present, double *out);

/* Checks that t is a float tensor ("what" names it in the message). */
kiln_status kiln_misc_need_float(const kiln_eval_ctx *ctx, const kiln_tensor *t, const char *what);

/* n * m with an error naming the node on overflow. */
kiln_status kiln_misc_mul(const kiln_eval_ctx *ctx, int64_t n, int64_t m, int64_t *out);

/* ---- UTF-8 (misc_regex.c) ---- */
/* Decodes one code point from s (n bytes available); returns its length, or 0 for an
 * invalid or truncated sequence. */
size_t kiln_misc_utf8_decode(const char *s, size_t n, uint32_t *out);
/* Encodes c (<= 0x10FFFF) into out (4 bytes room); returns the length. */
size_t kiln_misc_utf8_encode(uint32_t c, char *out);

/* ---- RE2-syntax regular expressions (misc_regex.c) ----
 * A Thompson-NFA matcher (linear time, like RE2) for the RE2 syntax subset without
 * Unicode classes (\p); unsupported syntax is a compile error. */
typedef struct kiln_misc_regex kiln_misc_regex;
kiln_status kiln_misc_regex_compile(const char *pattern, kiln_misc_regex **out);
bool kiln_misc_regex_fullmatch(const kiln_misc_regex *re, const char *s);
void kiln_misc_regex_free(kiln_misc_regex *re);

#endif
