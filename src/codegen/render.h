/* Private to the code generators: the C-like renderer core that the C and CUDA emitters
 * share. A renderer walks one kernel and prints expressions and statements; the target
 * hooks print what differs (loops, barriers, MMA, declarations). */
#ifndef KILN_CODEGEN_RENDER_H
#define KILN_CODEGEN_RENDER_H

#include "codegen.h"

typedef struct kiln_render kiln_render;

typedef struct kiln_render_target {
  bool cuda;
  /* Prints a FOR statement (header, body through kiln_render_block, closing brace). */
  kiln_status (*loop)(kiln_render *r, const kiln_tstmt *s);
  kiln_status (*barrier)(kiln_render *r, const kiln_tstmt *s);
  kiln_status (*mma)(kiln_render *r, const kiln_tstmt *s);
} kiln_render_target;

struct kiln_render {
  const kiln_tkernel *k;
  const kiln_codegen_opts *o;
  const kiln_render_target *t;
  kiln_strbuf *out;
  int indent;
  char **var_names; /* C identifiers, unique in the kernel (malloc'd) */
  char **buf_names;
  bool *loop_var; /* var is the variable of some FOR */
  void *user;     /* the target's own state */
};

void kiln_render_init(kiln_render *r, const kiln_tkernel *k, const kiln_codegen_opts *o,
                      const kiln_render_target *t, kiln_strbuf *out);
void kiln_render_free(kiln_render *r);

/* C type of a dtype's values ("float", "uint16_t" for F16, ...); NULL if none. */
const char *kiln_render_ctype(kiln_dtype t);
/* Checks that the kernel's name is a C identifier and that every buffer and variable has a
 * type the backends can hold. */
KILN_MUST_USE kiln_status kiln_render_check_types(const kiln_tkernel *k);

/* Appends a line at the current indentation. */
void kiln_render_line(kiln_render *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends an expression; index = true for an I64 index or extent (plain C arithmetic:
 * the verifier proves indices in range, so they do not overflow). */
KILN_MUST_USE kiln_status kiln_render_expr(kiln_render *r, const kiln_texpr *e, bool index,
                                           kiln_strbuf *b);
/* Renders an expression into a fresh malloc'd string. */
KILN_MUST_USE kiln_status kiln_render_expr_str(kiln_render *r, const kiln_texpr *e, bool index,
                                               char **out);
KILN_MUST_USE kiln_status kiln_render_stmt(kiln_render *r, const kiln_tstmt *s);
KILN_MUST_USE kiln_status kiln_render_block(kiln_render *r, const kiln_tblock *b);
/* `for (int64_t i = 0; i < n; i++) {` at the current indentation. */
KILN_MUST_USE kiln_status kiln_render_for_header(kiln_render *r, const kiln_tstmt *s);
/* The MMA as plain loops (exact tile.h semantics, fma for floats). */
KILN_MUST_USE kiln_status kiln_render_mma_loops(kiln_render *r, const kiln_tstmt *s);
/* The comment naming the kernel's origin (the graph nodes, escaped by kiln_esc_c_comment: at
 * most KILN_RENDER_ORIGIN_MAX bytes of it are shown). */
enum { KILN_RENDER_ORIGIN_MAX = 1000 };
void kiln_render_origin(kiln_render *r);

/* ---- render_half.c: F16/BF16 operators and MAC ---- */
/* Whether e is an operator on F16/BF16 operands (SELECT aside) or a MAC. */
bool kiln_render_is_half_op(const kiln_texpr *e);
KILN_MUST_USE kiln_status kiln_render_half(kiln_render *r, const kiln_texpr *e, kiln_strbuf *b);
/* CUDA: the native half instruction helpers (once per translation unit, guarded by a macro)
 * when r's kernel uses one; nothing otherwise. */
void kiln_render_half_helpers_cuda(const kiln_render *r, kiln_strbuf *out);

/* The helper functions both preludes share: KILN_FN, bit casts, KILN_INFF etc. must be
 * defined before (by the C or CUDA prelude). */
void kiln_render_helpers(kiln_strbuf *out);

#endif
