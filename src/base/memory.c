/* Allocation helpers, the arena, growable arrays, string builders and a string
 * hash map (files are in file.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

static void oom(void) {
  fputs("kiln: out of memory\n", stderr);
  abort();
}

void *kiln_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom();
  return p;
}

void *kiln_xcalloc(size_t n, size_t m) {
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p) oom();
  return p;
}

void *kiln_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) oom();
  return p;
}

char *kiln_xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(kiln_xmalloc(n), s, n);
}

/* ---- arena: a list of chunks; large requests get a chunk of their own ---- */
typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct kiln_arena {
  chunk *head;
  size_t total;
};

enum { CHUNK_SIZE = 64 * 1024 };

kiln_arena *kiln_arena_new(void) {
  return kiln_xcalloc(1, sizeof(kiln_arena));
}

void kiln_arena_free(kiln_arena *a) {
  if (!a) return;
  for (chunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

static chunk *new_chunk(size_t size) {
  chunk *c = malloc(sizeof(chunk) + size);
  if (!c) oom();
  c->size = size;
  c->used = 0;
  c->next = NULL;
  return c;
}

void *kiln_arena_alloc(kiln_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    if (n > CHUNK_SIZE / 4) { /* big: own chunk, linked behind the current one */
      chunk *big = new_chunk(n);
      big->used = n;
      if (c) {
        big->next = c->next;
        c->next = big;
      } else {
        a->head = big;
      }
      a->total += n;
      memset(big->data, 0, n);
      return big->data;
    }
    c = new_chunk(CHUNK_SIZE);
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

void *kiln_arena_calloc(kiln_arena *a, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) return NULL;
  return kiln_arena_alloc(a, n);
}

char *kiln_arena_strndup(kiln_arena *a, const char *s, size_t n) {
  char *p = kiln_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *kiln_arena_strdup(kiln_arena *a, const char *s) {
  return kiln_arena_strndup(a, s, strlen(s));
}

char *kiln_arena_printf(kiln_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = kiln_arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

size_t kiln_arena_bytes(const kiln_arena *a) {
  return a->total;
}

/* ---- growable arrays ---- */
static int grown_cap(int cap, int need) {
  int c = cap ? cap : 4;
  while (c < need) c *= 2;
  return c;
}

void kiln_vec_grow_(void **data, int *cap, int need, size_t elem) {
  int c = grown_cap(*cap, need);
  *data = kiln_xrealloc(*data, (size_t)c * elem);
  *cap = c;
}

void kiln_arena_vec_grow_(kiln_arena *a, void **data, int *cap, int need, size_t elem) {
  int c = grown_cap(*cap, need);
  void *p = kiln_arena_alloc(a, (size_t)c * elem);
  if (*data) memcpy(p, *data, (size_t)*cap * elem);
  *data = p;
  *cap = c;
}

/* ---- string builder ---- */
void kiln_strbuf_append(kiln_strbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    b->data = kiln_xrealloc(b->data, c);
    b->cap = c;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void kiln_strbuf_vprintf(kiln_strbuf *b, const char *fmt, va_list ap) {
  char small[256];
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    kiln_strbuf_append(b, small, (size_t)n);
    return;
  }
  char *big = kiln_xmalloc((size_t)n + 1);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  kiln_strbuf_append(b, big, (size_t)n);
  free(big);
}

void kiln_strbuf_printf(kiln_strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_strbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

void kiln_strbuf_free(kiln_strbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- string map ---- */
uint64_t kiln_hash_bytes(const void *p, size_t n, uint64_t seed) {
  const unsigned char *s = p;
  uint64_t h = 1469598103934665603ull ^ seed;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
  return h;
}

static size_t map_slot(const kiln_strmap *m, const char *key) {
  size_t i = kiln_hash_bytes(key, strlen(key), 0) & (m->cap - 1);
  while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
  return i;
}

static void map_rehash(kiln_strmap *m) {
  kiln_strmap n = {0};
  n.cap = m->cap ? m->cap * 2 : 16;
  n.keys = kiln_xcalloc(n.cap, sizeof(char *));
  n.vals = kiln_xcalloc(n.cap, sizeof(int64_t));
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = map_slot(&n, m->keys[i]);
    n.keys[j] = m->keys[i];
    n.vals[j] = m->vals[i];
  }
  n.len = m->len;
  free(m->keys);
  free(m->vals);
  *m = n;
}

void kiln_strmap_put(kiln_strmap *m, const char *key, int64_t val) {
  if ((m->len + 1) * 2 > m->cap) map_rehash(m);
  size_t i = map_slot(m, key);
  if (!m->keys[i]) {
    m->keys[i] = kiln_xstrdup(key);
    m->len++;
  }
  m->vals[i] = val;
}

bool kiln_strmap_get(const kiln_strmap *m, const char *key, int64_t *out_val) {
  if (!m->cap) return false;
  size_t i = map_slot(m, key);
  if (!m->keys[i]) return false;
  if (out_val) *out_val = m->vals[i];
  return true;
}

void kiln_strmap_free(kiln_strmap *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}
