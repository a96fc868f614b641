/* Allocation helpers and the arena; see ks_alloc.h for the policy. */
#include "ks_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void out_of_memory(size_t n) {
  fprintf(stderr, "kernelsmith-cc: out of memory (allocating %zu bytes)\n", n);
  abort();
}

void *ks_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    out_of_memory(n);
  return p;
}

void *ks_xcalloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p)
    out_of_memory(count * size);
  return p;
}

void *ks_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    out_of_memory(n);
  return q;
}

char *ks_xstrdup(const char *s) { return ks_xstrndup(s, strlen(s)); }

char *ks_xstrndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *p = ks_xmalloc(len + 1);
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

struct ks_arena_block {
  ks_arena_block *next;
  size_t size, used;
  max_align_t data[]; /* max_align_t elements keep every allocation aligned */
};

enum { ARENA_BLOCK = 64 * 1024 };

void *ks_arena_alloc(ks_arena *arena, size_t n) {
  const size_t align = _Alignof(max_align_t);
  n = (n + align - 1) & ~(align - 1);
  ks_arena_block *b = arena->head;
  if (!b || b->size - b->used < n) {
    size_t size = n > ARENA_BLOCK / 2 ? n : ARENA_BLOCK;
    b = ks_xmalloc(sizeof *b + size);
    b->size = size;
    b->used = 0;
    arena->allocated += sizeof *b + size;
    /* A large one-off allocation goes behind the current block so that the
     * space left in that block stays usable. */
    if (size == n && arena->head) {
      b->next = arena->head->next;
      arena->head->next = b;
    } else {
      b->next = arena->head;
      arena->head = b;
    }
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  memset(p, 0, n);
  return p;
}

char *ks_arena_strndup(ks_arena *arena, const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *p = ks_arena_alloc(arena, len + 1);
  memcpy(p, s, len);
  return p;
}

char *ks_arena_strdup(ks_arena *arena, const char *s) {
  return s ? ks_arena_strndup(arena, s, SIZE_MAX) : NULL;
}

char *ks_arena_printf(ks_arena *arena, const char *fmt, ...) {
  va_list ap, copy;
  va_start(ap, fmt);
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  char *p = ks_arena_alloc(arena, n > 0 ? (size_t)n + 1 : 1);
  if (n > 0)
    vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void ks_arena_release(ks_arena *arena) {
  ks_arena_block *b = arena->head;
  while (b) {
    ks_arena_block *next = b->next;
    free(b);
    b = next;
  }
  arena->head = NULL;
  arena->allocated = 0;
}

void *ks_array_grow_(ks_arena *arena, void *items, size_t *cap, size_t len,
                     size_t elem_size) {
  size_t ncap = *cap ? *cap * 2 : 4;
  void *p = ks_arena_alloc(arena, ncap * elem_size);
  if (len)
    memcpy(p, items, len * elem_size);
  *cap = ncap;
  return p;
}
