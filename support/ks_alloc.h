/* ks_alloc: allocation that cannot return NULL, and the arena.
 *
 * Policy: running out of memory aborts with a message (as git's xmalloc does);
 * every other failure in library code is returned as a value.
 *
 * The arena owns everything allocated from it; ks_arena_release frees it all
 * at once. A scan result, or one search generation, lives in one arena, so
 * nothing inside it is freed one by one. An arena is not thread-safe: give
 * each thread its own. */
#ifndef KS_ALLOC_H
#define KS_ALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

void *ks_xmalloc(size_t n);
void *ks_xcalloc(size_t count, size_t size);
void *ks_xrealloc(void *p, size_t n);
char *ks_xstrdup(const char *s);
char *ks_xstrndup(const char *s, size_t n);

typedef struct ks_arena_block ks_arena_block;

typedef struct ks_arena {
  ks_arena_block *head; /* newest block first */
  size_t allocated;     /* bytes obtained from malloc, for memory reports */
} ks_arena;

#define KS_ARENA_INIT {NULL, 0}

/* Zeroed, aligned for any type. */
void *ks_arena_alloc(ks_arena *arena, size_t n);
char *ks_arena_strdup(ks_arena *arena, const char *s);
char *ks_arena_strndup(ks_arena *arena, const char *s, size_t n);
char *ks_arena_printf(ks_arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ks_arena_release(ks_arena *arena);

/* Arena-backed arrays: declare with KS_ARRAY(T), append with ks_array_push,
 * which returns a pointer to a new zeroed element. Growth copies into a new
 * arena block (the old one is reclaimed with the arena). */
#define KS_ARRAY(T)                                                            \
  struct {                                                                     \
    T *items;                                                                  \
    size_t len, cap;                                                           \
  }

/* The one array-of-strings type every module shares. */
typedef KS_ARRAY(const char *) ks_strings;

void *ks_array_grow_(ks_arena *arena, void *items, size_t *cap, size_t len,
                     size_t elem_size);

#define ks_array_push(arena, arr)                                              \
  ((arr)->len == (arr)->cap                                                    \
       ? (void)((arr)->items = ks_array_grow_((arena), (arr)->items,           \
                                              &(arr)->cap, (arr)->len,         \
                                              sizeof *(arr)->items))           \
       : (void)0,                                                              \
   &(arr)->items[(arr)->len++])

#endif
