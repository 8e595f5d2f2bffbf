/* Kiln base layer: status and errors, arenas, dynamic arrays, strings, hashing.
 * Every other stage includes this header; it includes only the C library and the public
 * API's plain types (include/kiln.h: status codes, dtypes, opaque handles). */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

/* ---- status ------------------------------------------------------------
 * A fallible function returns kiln_status: NULL means success, anything else
 * is a heap-allocated error that the caller owns (free with kiln_status_free).
 * KILN_TRY propagates an error unchanged: the message stays what the user reads and the
 * origin (kiln_status_where: file:line where it was made) stays the first failure's.
 * KILN_TRYF adds context to the message ("while reading 'x': ..."). */

/* kiln_code, kiln_status and KILN_OK are those of the public API (include/kiln.h). */

KILN_MUST_USE kiln_status kiln_status_make(kiln_code code, const char *file, int line,
                                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prepends "context: " to the message of st (which must be an error); returns st. */
KILN_MUST_USE kiln_status kiln_status_annotate(kiln_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Gives st (an error) the code c, keeping its message and origin; returns st. For a check of
 * Kiln's own product that reports through a checker made for user input (the tile verifier on
 * a kernel the lowering made is KILN_ERR_INTERNAL, not the checker's KILN_ERR_INVALID). */
KILN_MUST_USE kiln_status kiln_status_recode(kiln_status st, kiln_code c);
const char *kiln_status_where(kiln_status st); /* "file.c:123" of the origin */
/* Exit status the CLI uses for an error code: 2 for bad input, 1 otherwise. */
int kiln_status_exit_code(kiln_status st);

#define kiln_error(code, ...) kiln_status_make((code), __FILE__, __LINE__, __VA_ARGS__)
#define kiln_invalid(...) kiln_error(KILN_ERR_INVALID, __VA_ARGS__)
/* A broken invariant of Kiln's own code (exit 1), never "bad input". */
#define KILN_BUG(...) kiln_error(KILN_ERR_INTERNAL, __VA_ARGS__)
#define kiln_unsupported(...) kiln_error(KILN_ERR_UNSUPPORTED, __VA_ARGS__)

#define KILN_TRY(expr)                                                                             \
  do {                                                                                             \
    kiln_status kiln_try_st_ = (expr);                                                             \
    if (kiln_try_st_ != KILN_OK) return kiln_try_st_;                                              \
  } while (0)

/* Like KILN_TRY but prepends a formatted context to the message. */
#define KILN_TRYF(expr, ...)                                                                       \
  do {                                                                                             \
    kiln_status kiln_try_st_ = (expr);                                                             \
    if (kiln_try_st_ != KILN_OK) return kiln_status_annotate(kiln_try_st_, __VA_ARGS__);           \
  } while (0)

/* errno's text with a KILN_ERR_SYSTEM code: kiln_system_error("cannot write '%s'", path)
 * gives "cannot write 'x': No space left on device". Call it right after the failing call. */
#define kiln_system_error(...) kiln_status_errno(__FILE__, __LINE__, __VA_ARGS__)
KILN_MUST_USE kiln_status kiln_status_errno(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- checked arithmetic (for sizes that come from input) ---- */
bool kiln_mul_overflow_i64(int64_t a, int64_t b, int64_t *out);
bool kiln_add_overflow_i64(int64_t a, int64_t b, int64_t *out);

/* ---- memory ---- */
void *kiln_xmalloc(size_t n);           /* aborts on OOM: for small internal allocations only */
void *kiln_xcalloc(size_t n, size_t m); /* idem */
void *kiln_xrealloc(void *p, size_t n); /* idem */
char *kiln_xstrdup(const char *s);

/* ---- the memory limit (budget.c) ----------------------------------------
 * One count of the host memory that Kiln's tensors (kiln_tensor_new), compiled arenas and
 * large scratch buffers hold at once, checked against one limit before each allocation: a
 * request that would take the count above the limit is refused with KILN_ERR_INVALID
 * (exit 2), "WHAT needs N bytes, above the limit of M bytes (--max-memory)". Estimates
 * (a memory plan, a constant a pass would create) are checked the same way before anything
 * is allocated. The limit is process-wide (kiln_mem_set_limit, the CLI's --max-memory); a
 * thread may narrow or widen it for a while (kiln_mem_push_limit: kiln_compile_opts.
 * max_memory). Default: 16 GiB or 3/4 of physical memory, whichever is smaller. */
#define KILN_MEM_DEFAULT_CAP ((int64_t)16 << 30)
int64_t kiln_mem_default_limit(void);
int64_t kiln_mem_limit(void);           /* the limit in force on this thread */
void kiln_mem_set_limit(int64_t bytes); /* 0: back to the default */
/* Sets this thread's limit (bytes > 0; else keeps the current one); returns the previous
 * setting for kiln_mem_pop_limit. */
int64_t kiln_mem_push_limit(int64_t bytes);
void kiln_mem_pop_limit(int64_t prev);
int64_t kiln_mem_in_use(void);
/* Error unless `bytes` more fit under the limit (nothing is reserved); the message starts
 * with the formatted WHAT (a value, a tensor type, "the arena of graph 'g'"). A negative
 * `bytes` means "more than any limit" (an overflowed estimate). */
KILN_MUST_USE kiln_status kiln_mem_check(int64_t bytes, const char *what_fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same, and counts the bytes as in use until kiln_mem_release. */
KILN_MUST_USE kiln_status kiln_mem_reserve(int64_t bytes, const char *what_fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* kiln_mem_reserve without a message (for hot paths: build the message on failure). */
bool kiln_mem_try_reserve(int64_t bytes);
void kiln_mem_release(int64_t bytes);
/* True when st is a refusal by the memory limit (made by kiln_mem_check/reserve, whatever
 * context was added since): the user's limit, never a bug of the code that hit it. */
bool kiln_mem_limit_error(kiln_status st);

/* ---- arena ---------------------------------------------------------------
 * A bump allocator that owns everything of one compilation; freed in one call.
 * Allocations are zeroed and 16-byte aligned. */
typedef struct kiln_arena kiln_arena;
kiln_arena *kiln_arena_new(void);
void kiln_arena_free(kiln_arena *a);
void *kiln_arena_alloc(kiln_arena *a, size_t n);
void *kiln_arena_calloc(kiln_arena *a, size_t count, size_t size); /* NULL on overflow */
char *kiln_arena_strdup(kiln_arena *a, const char *s);
char *kiln_arena_strndup(kiln_arena *a, const char *s, size_t n);
char *kiln_arena_printf(kiln_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t kiln_arena_bytes(const kiln_arena *a);

/* ---- dynamic arrays ------------------------------------------------------
 * KILN_VEC(T) is {T *data; int len, cap;}; kiln_vec_push grows with realloc.
 * Arrays inside IR are arena-owned: use kiln_arena_vec_push. */
#define KILN_VEC(T)                                                                                \
  struct {                                                                                         \
    T *data;                                                                                       \
    int len, cap;                                                                                  \
  }
void kiln_vec_grow_(void **data, int *cap, int need, size_t elem);
void kiln_arena_vec_grow_(kiln_arena *a, void **data, int *cap, int need, size_t elem);
#define kiln_vec_push(v, x)                                                                        \
  do {                                                                                             \
    if ((v)->len + 1 > (v)->cap)                                                                   \
      kiln_vec_grow_((void **)&(v)->data, &(v)->cap, (v)->len + 1, sizeof(*(v)->data));            \
    (v)->data[(v)->len++] = (x);                                                                   \
  } while (0)
#define kiln_arena_vec_push(a, v, x)                                                               \
  do {                                                                                             \
    if ((v)->len + 1 > (v)->cap)                                                                   \
      kiln_arena_vec_grow_((a), (void **)&(v)->data, &(v)->cap, (v)->len + 1, sizeof(*(v)->data)); \
    (v)->data[(v)->len++] = (x);                                                                   \
  } while (0)
#define kiln_vec_free(v) (free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)

/* ---- string builder ---- */
typedef struct kiln_strbuf {
  char *data;
  size_t len, cap;
} kiln_strbuf;
void kiln_strbuf_printf(kiln_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kiln_strbuf_vprintf(kiln_strbuf *b, const char *fmt, va_list ap);
void kiln_strbuf_append(kiln_strbuf *b, const char *s, size_t n);
void kiln_strbuf_free(kiln_strbuf *b);

/* ---- diagnostics in source text (diag.c) ----
 * An INVALID error "file:line:col: message" followed by the source line and a caret under
 * the column. */
KILN_MUST_USE kiln_status kiln_source_errorv(const char *file, const char *text, int line, int col,
                                             const char *fmt, va_list ap);

/* ---- hash map: string key -> int64 value (open addressing, owns key copies) ---- */
typedef struct kiln_strmap {
  char **keys;
  int64_t *vals;
  size_t cap, len;
} kiln_strmap;
void kiln_strmap_put(kiln_strmap *m, const char *key, int64_t val);
bool kiln_strmap_get(const kiln_strmap *m, const char *key, int64_t *out_val);
void kiln_strmap_free(kiln_strmap *m);
uint64_t kiln_hash_bytes(const void *p, size_t n, uint64_t seed); /* FNV-1a 64 */

/* ---- numbers from a user or a file (parse.c) ----------------------------
 * The one way to read a number that came from outside: the whole string must be the number
 * (no blanks, no trailing text), within [lo, hi], with no overflow; floats must be finite and
 * not NaN. Errors are KILN_ERR_INVALID and name `what` (an option or a field), the text and
 * the range: "--threads: '100000' is not an integer in 1..1024". */
KILN_MUST_USE kiln_status kiln_parse_i64(const char *s, int64_t lo, int64_t hi, const char *what,
                                         int64_t *out);
KILN_MUST_USE kiln_status kiln_parse_int(const char *s, int lo, int hi, const char *what, int *out);
KILN_MUST_USE kiln_status kiln_parse_f64(const char *s, double lo, double hi, const char *what,
                                         double *out);
/* A byte count with an optional binary unit: 4096, 64K, 512M, 8G, 1T (also KB/KiB, ...). */
KILN_MUST_USE kiln_status kiln_parse_bytes(const char *s, int64_t lo, int64_t hi, const char *what,
                                           int64_t *out);

/* ---- text from a model, escaped for each context it reaches (text.c) -----
 * A model's names, doc strings and metadata are data, never code: everything that reaches
 * emitted source, a manifest, a report or a file name goes through one of these. Each
 * appends to b; s is any NUL-terminated byte string. */
/* Inside a C or CUDA block comment: printable ASCII without '*', '\' and '?' is kept, every
 * other byte is written as \xNN, so no comment closer, line splice or trigraph can form; at
 * most max_len bytes of s are shown, then "...". */
void kiln_esc_c_comment(kiln_strbuf *b, const char *s, size_t max_len);
/* The body of a C string literal: '"', '\' and '?' escaped, other bytes outside printable
 * ASCII as three-digit octal escapes. Not a format string: print it with "%s". */
void kiln_esc_c_string(kiln_strbuf *b, const char *s);
/* One line of a text file read back by Kiln (manifests, case files): '\' as "\\", bytes
 * below 0x20 and 0x7f as \xNN, so the value holds no newline. kiln_unesc_line reverses it in
 * place; a malformed escape is an error. */
void kiln_esc_line(kiln_strbuf *b, const char *s);
KILN_MUST_USE kiln_status kiln_unesc_line(char *s);
/* One file name component from a name, injective: [A-Za-z0-9_-] and non-leading '.' are
 * kept, every other byte is %XX (so "a/b" -> "a%2Fb", "a_b" stays, ".." -> "%2E."); empty is
 * "%00"; a result over 200 bytes is cut and ends in "~" and a 16-hex-digit hash of s. */
void kiln_esc_file_name(kiln_strbuf *b, const char *s);
/* Text for a terminal (error messages, listings on stdout/stderr): newline and tab are kept,
 * other control bytes (ESC above all: no escape sequence from a model reaches the terminal)
 * as \xNN, and so are the UTF-8 forms of the C1 controls and of the bidirectional overrides
 * (U+202A-U+202E, U+2066-U+2069), which could make shown text differ from the real text. */
void kiln_esc_terminal(kiln_strbuf *b, const char *s);
/* The body of a JSON string: '"' and '\\' escaped, control bytes as \u00XX, bytes that are
 * not valid UTF-8 as \uFFFD (the output is always valid JSON). */
void kiln_esc_json(kiln_strbuf *b, const char *s);
/* Text content of an HTML element or a quoted attribute value: & < > " ' as entities,
 * control bytes other than tab and newline as U+FFFD. */
void kiln_esc_html(kiln_strbuf *b, const char *s);

/* ---- clock (clock.c) ----------------------------------------------------
 * Seconds on the monotonic clock (CLOCK_MONOTONIC) from an arbitrary origin: for intervals
 * (stage times, timeouts, benchmarks), never for dates. */
double kiln_clock_seconds(void);

/* ---- files (file.c) ----------------------------------------------------
 * Every file Kiln reads from a user is opened with kiln_open_read: a folder, FIFO, socket or
 * device is refused with a clear message (KILN_ERR_IO, exit 2) and nothing ever blocks.
 * Every file Kiln writes goes through a kiln_file_writer (or kiln_write_file): the bytes go
 * to a temporary file in the same folder, renamed over PATH only once every write, the flush
 * and the close succeeded; on failure the temporary is removed and the error is
 * KILN_ERR_SYSTEM with errno's text ("cannot write 'x': No space left on device", exit 1).
 * A path into a missing folder is KILN_ERR_IO (exit 2). An existing character device
 * (/dev/null, /dev/full) is written in place; an existing folder or FIFO is refused. */
/* Opens a regular file for reading (blocking reads, close-on-exec). */
KILN_MUST_USE kiln_status kiln_open_read(const char *path, int *out_fd);
/* Reads a whole file into a malloc'd buffer (NUL-terminated, not counted in *out_len). */
KILN_MUST_USE kiln_status kiln_read_file(const char *path, char **out_data, size_t *out_len);
/* Writes a whole file: kiln_file_open + kiln_file_write + kiln_file_commit. */
KILN_MUST_USE kiln_status kiln_write_file(const char *path, const void *data, size_t len);
typedef struct kiln_file_writer kiln_file_writer;
KILN_MUST_USE kiln_status kiln_file_open(const char *path, kiln_file_writer **out);
/* Appends; the first failure is kept and reported by kiln_file_commit. */
void kiln_file_write(kiln_file_writer *w, const void *data, size_t len);
void kiln_file_printf(kiln_file_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Flushes, closes and renames into place; frees w whatever the outcome. */
KILN_MUST_USE kiln_status kiln_file_commit(kiln_file_writer *w);
/* Removes the temporary and frees w (NULL is fine): nothing of the file is left. */
void kiln_file_abort(kiln_file_writer *w);
/* True when both paths exist and are the same file (device and inode, links resolved). */
bool kiln_same_file(const char *a, const char *b);
/* mkdir -p: creates path and its missing parents; an existing folder is fine. */
KILN_MUST_USE kiln_status kiln_make_dirs(const char *path);
/* A folder written as a whole: its files go to w->tmp, a new hidden folder next to dir
 * (".NAME.kiln-tmp.XXXXXX"), and kiln_dir_commit renames it to dir, so that a failed or
 * killed writer never leaves a part-written dir. An existing dir is exchanged with it in one
 * rename (renameat2 RENAME_EXCHANGE, else two renames) and then removed whole: the caller
 * makes sure it holds nothing that is not its own. commit and abort free w. Temporary
 * folders of writers killed over a day ago are removed by the next kiln_dir_begin. */
typedef struct kiln_dir_writer {
  char *final, *tmp;
} kiln_dir_writer;
KILN_MUST_USE kiln_status kiln_dir_begin(const char *dir, kiln_dir_writer *w);
KILN_MUST_USE kiln_status kiln_dir_commit(kiln_dir_writer *w);
void kiln_dir_abort(kiln_dir_writer *w); /* removes w->tmp and everything in it */

#endif
