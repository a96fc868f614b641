/* pch: one precompiled header of CUDA's own headers per distinct argument
 * list, built on first use and shared by every parser thread.
 *
 * Clang in CUDA mode includes the whole CUDA runtime wrapper before the first
 * line of every file; parsing that once and loading it for each file makes a
 * scan several times faster. A build that fails (errors in the headers under
 * these flags) is remembered, and those files are parsed without one. */
#ifndef KS_PCH_H
#define KS_PCH_H

#include "ks_model.h"

typedef struct ks_pch_cache ks_pch_cache;

/* `workdir` is a private directory that outlives the cache. */
ks_pch_cache *ks_pch_cache_new(const char *workdir);
/* The precompiled header for `args` (thread-safe), or NULL when none could be
 * built. The path stays valid until the cache is freed. */
const char *ks_pch_get(ks_pch_cache *cache, const ks_strings *args);
void ks_pch_cache_free(ks_pch_cache *cache);

#endif
