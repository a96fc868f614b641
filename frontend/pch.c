/* Precompiled headers for the CUDA wrapper, keyed by the argument list. */
#include "pch.h"

#include <clang-c/Index.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_hash.h"

typedef struct pch_entry {
  char key[KS_HASH_HEX];
  char *path; /* NULL when the build failed */
} pch_entry;

struct ks_pch_cache {
  pthread_mutex_t lock; /* held while building, so each key is built once */
  char *workdir;
  pch_entry *entries;
  size_t n, cap;
};

ks_pch_cache *ks_pch_cache_new(const char *workdir) {
  ks_pch_cache *c = ks_xcalloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  c->workdir = ks_xstrdup(workdir);
  return c;
}

static char *build(const char *workdir, size_t id, const ks_strings *args) {
  char *source = NULL, *pch = NULL;
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "%s/pch-%zu.cu", workdir, id);
  source = ks_buf_detach(&b);
  ks_buf_addf(&b, "%s/pch-%zu.pch", workdir, id);
  pch = ks_buf_detach(&b);
  FILE *f = fopen(source, "w");
  if (!f)
    goto fail;
  fclose(f);

  CXIndex index = clang_createIndex(0, 0);
  CXTranslationUnit unit = NULL;
  enum CXErrorCode rc = clang_parseTranslationUnit2(
      index, source, (const char *const *)args->items, (int)args->len, NULL, 0,
      CXTranslationUnit_ForSerialization, &unit);
  int saved = -1;
  if (rc == CXError_Success && unit)
    saved = clang_saveTranslationUnit(unit, pch, clang_defaultSaveOptions(unit));
  if (unit)
    clang_disposeTranslationUnit(unit);
  clang_disposeIndex(index);
  /* The source stays: loading a precompiled header checks that the files it
   * was made from still exist. The cache removes both. */
  free(source);
  if (saved != CXSaveError_None) {
    remove(pch);
    free(pch);
    return NULL;
  }
  return pch;
fail:
  free(source);
  free(pch);
  return NULL;
}

/* Include directories of the user's own (-I, -iquote, -idirafter) cannot
 * change what CUDA's headers mean, and clang does not check them when it
 * loads a precompiled header: leaving them out lets files of different
 * targets share one. Macros, system directories, forced includes and the
 * language standard stay. */
static bool user_include_flag(const char *arg) {
  return !strcmp(arg, "-I") || !strcmp(arg, "-iquote") || !strcmp(arg, "-idirafter");
}

static void header_args(const ks_strings *args, ks_strings *out, ks_arena *arena) {
  for (size_t i = 0; i < args->len; i++) {
    const char *a = args->items[i];
    if (user_include_flag(a)) {
      i++;
      continue;
    }
    if (!strncmp(a, "-I", 2))
      continue;
    *ks_array_push(arena, out) = a;
  }
}

const char *ks_pch_get(ks_pch_cache *cache, const ks_strings *all_args) {
  ks_arena arena = KS_ARENA_INIT;
  ks_strings filtered = {0}, *args = &filtered;
  header_args(all_args, &filtered, &arena);
  ks_buf joined = KS_BUF_INIT;
  for (size_t i = 0; i < args->len; i++) {
    ks_buf_adds(&joined, args->items[i]);
    ks_buf_addc(&joined, '\x1f');
  }
  char key[KS_HASH_HEX];
  ks_sha256_hex(joined.data, joined.len, key);
  ks_buf_release(&joined);

  pthread_mutex_lock(&cache->lock);
  const char *path = NULL;
  size_t i;
  for (i = 0; i < cache->n; i++)
    if (!strcmp(cache->entries[i].key, key))
      break;
  if (i == cache->n) {
    if (cache->n == cache->cap) {
      cache->cap = cache->cap ? cache->cap * 2 : 4;
      cache->entries = ks_xrealloc(cache->entries, cache->cap * sizeof *cache->entries);
    }
    memcpy(cache->entries[i].key, key, sizeof key);
    cache->entries[i].path = build(cache->workdir, i, args);
    cache->n++;
  }
  path = cache->entries[i].path;
  pthread_mutex_unlock(&cache->lock);
  ks_arena_release(&arena);
  return path;
}

void ks_pch_cache_free(ks_pch_cache *cache) {
  if (!cache)
    return;
  for (size_t i = 0; i < cache->n; i++) {
    char source[4200];
    snprintf(source, sizeof source, "%s/pch-%zu.cu", cache->workdir, i);
    remove(source);
    if (cache->entries[i].path)
      remove(cache->entries[i].path);
    free(cache->entries[i].path);
  }
  free(cache->entries);
  free(cache->workdir);
  pthread_mutex_destroy(&cache->lock);
  free(cache);
}
