/* Private to the tile IR core (tile_print.c, tile_parse.c, tile_verify.c, tile_interp.c):
 * one-line printing of expressions and statements for diagnostics, name quoting, and the
 * structural and type checks that the interpreter runs before it executes a kernel.
 * The text form is described in docs/TILE_IR.md. */
#ifndef KILN_TILE_TEXT_H
#define KILN_TILE_TEXT_H

#include "tile.h"

/* Appends sigil and name: bare when it matches [A-Za-z_][A-Za-z0-9_.]*, quoted otherwise. */
void kiln_ttext_name(kiln_strbuf *out, char sigil, const char *name);
/* Appends s in double quotes with escapes \" \\ \n \t \r \xHH. */
void kiln_ttext_quote(kiln_strbuf *out, const char *s);
/* Appends a float constant of type t (F32 or F64) as the shortest decimal that reads back
 * to the same value in t ("inf", "-inf", "nan" for the special values). */
void kiln_ttext_float(kiln_strbuf *out, kiln_dtype t, double v);
/* Appends e; tolerates malformed trees (bad ids print as %?N, NULL as <null>). */
void kiln_ttext_expr(const kiln_tkernel *k, const kiln_texpr *e, kiln_strbuf *out);
/* Appends s on one line: loops and conditionals as their header followed by "{ ... }". */
void kiln_ttext_stmt_line(const kiln_tkernel *k, const kiln_tstmt *s, kiln_strbuf *out);

/* The checks the interpreter needs to run k without crashing: ids in range, no NULL
 * operands, every expression of the type the rules give (see kiln_tkernel_verify).
 * Errors name the kernel and the statement. */
KILN_MUST_USE kiln_status kiln_tkernel_check_types(const kiln_tkernel *k);

/* Marks (sets to 1) the variables and buffers that statements outside parallel loops use,
 * the extents of parallel loops included: what the C backend declares once per kernel, one
 * object for all iterations of a parallel loop. A LOCAL buffer or variable left unmarked is
 * private to each iteration (tile_race.c; the interpreter forgets it at each iteration). */
void kiln_tile_mark_outside_parallel(const kiln_tblock *b, uint8_t *vars, uint8_t *bufs);

/* Largest statement and expression nesting the parser accepts and the interpreter and
 * verifier recurse through. */
enum { KILN_TILE_MAX_DEPTH = 256 };

#endif
