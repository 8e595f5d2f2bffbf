/* libFuzzer target for the tile IR text parser and verifier.
 * Any input: the parser returns (an error or a module) without crashing or leaking, and
 * its errors are INVALID. When it returns a module: print -> parse -> print gives the same
 * text; the verifier answers OK or INVALID (never crashes), and gives the same answer on
 * the reparsed module. A verified module whose kernels have no parameters is also run by
 * the interpreter, which must answer OK, FAILED (a runtime error) or OOM. Any violation
 * aborts.
 *   fuzz_tile_parse -max_len=4096 corpus_dir tests/fuzz/fuzz_tile_parse_seeds */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile/tile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_tile_parse: %s\n%s\n", what, detail ? detail : "");
  abort();
}

static char *print_module(const kiln_tmodule *m) {
  kiln_strbuf b = {0};
  kiln_tmodule_print(m, &b);
  return b.data ? b.data : calloc(1, 1);
}

/* Statements executed by b run `mult` times, when every loop extent is a constant;
 * -1 when some is not or the count passes 100000. */
static int64_t work(const kiln_tblock *b, int64_t mult) {
  int64_t total = 0;
  for (int i = 0; i < b->len; i++) {
    const kiln_tstmt *s = b->data[i];
    int64_t w = mult;
    if (s->kind == KILN_TS_FOR) {
      if (s->extent->kind != KILN_TE_INT || s->extent->i > 100000) return -1;
      w = work(&s->body, mult * (s->extent->i > 0 ? s->extent->i : 0));
    } else if (s->kind == KILN_TS_IF) {
      int64_t a = work(&s->body, mult), c = work(&s->orelse, mult);
      w = a < 0 || c < 0 ? -1 : a + c;
    } else if (s->kind == KILN_TS_MMA) {
      const kiln_tmma *mm = &s->mma;
      w = mm->m > 16 || mm->n > 16 || mm->k > 16 ? -1 : mult * mm->m * mm->n * mm->k;
    }
    if (w < 0 || (total += w + 1) > 100000) return -1;
  }
  return total;
}

/* Runs parameterless kernels whose work is small. */
static void run_small(const kiln_tmodule *m) {
  for (int i = 0; i < m->kernels.len; i++) {
    const kiln_tkernel *k = m->kernels.data[i];
    if (k->n_params != 0 || work(&k->body, 1) < 0) continue;
    bool small = true;
    for (int b = 0; b < k->bufs.len; b++) small &= k->bufs.data[b].size <= 4096;
    if (!small) continue;
    kiln_status st = kiln_tkernel_interp(k, NULL);
    if (st && kiln_status_code(st) != KILN_ERR_FAILED && kiln_status_code(st) != KILN_ERR_OOM)
      fail("interpreter error that is neither FAILED nor OOM", kiln_status_message(st));
    kiln_status_free(st);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  kiln_tmodule *m = NULL;
  kiln_status st = kiln_tmodule_parse(text, "fuzz", &m);
  free(text);
  if (st) {
    if (kiln_status_code(st) != KILN_ERR_INVALID)
      fail("parse error that is not INVALID", kiln_status_message(st));
    kiln_status_free(st);
    return 0;
  }
  kiln_status v1 = kiln_tmodule_verify(m);
  if (v1 && kiln_status_code(v1) != KILN_ERR_INVALID)
    fail("verifier error that is not INVALID", kiln_status_message(v1));
  char *t1 = print_module(m);
  kiln_tmodule *m2 = NULL;
  if ((st = kiln_tmodule_parse(t1, "printed", &m2)) != KILN_OK) {
    fprintf(stderr, "%s\n", t1);
    fail("printed text does not parse", kiln_status_message(st));
  }
  char *t2 = print_module(m2);
  if (strcmp(t1, t2) != 0) {
    fprintf(stderr, "--- first print\n%s--- second print\n%s", t1, t2);
    fail("print -> parse -> print is not the identity", NULL);
  }
  kiln_status v2 = kiln_tmodule_verify(m2);
  if ((v1 == KILN_OK) != (v2 == KILN_OK)) {
    fprintf(stderr, "%s\n", t1);
    fail("the verifier disagrees with itself after a round trip",
         v1 ? kiln_status_message(v1) : kiln_status_message(v2));
  }
  if (!v1) run_small(m);
  kiln_status_free(v1);
  kiln_status_free(v2);
  free(t1);
  free(t2);
  kiln_tmodule_free(m2);
  kiln_tmodule_free(m);
  return 0;
}
