/* applied: what `apply --write` changed, so that `revert` can restore it
 * byte for byte. The store directory holds applied/ORIGINAL_SHA.orig (each
 * file's text before the first apply that changed it) and applied/manifest,
 * one line per change, oldest first:
 *
 *     <new sha256> <original sha256, or "-" for a file apply created> <path>
 *
 * Every file is written through ks_safe_write, the manifest last; a change
 * whose manifest line is missing (a kill in between) is found by revert as a
 * file it does not know, and left alone. */
#ifndef KS_APPLIED_H
#define KS_APPLIED_H

#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"

typedef struct ks_applied {
  const char *path;      /* absolute */
  const char *new_sha;   /* what apply wrote */
  const char *orig_sha;  /* what was there; NULL: apply created the file */
} ks_applied;
typedef KS_ARRAY(ks_applied) ks_applieds;

/* Keeps `original` (len bytes, NULL: none) and appends the change. */
int ks_applied_record(ks_ctx *ctx, const char *store_dir, const char *path, const char *original,
                      size_t len, const char *new_text, size_t new_len);
/* The recorded changes, oldest first (none when nothing was applied). */
int ks_applied_read(ks_ctx *ctx, const char *store_dir, ks_arena *a, ks_applieds *out);
/* The original text of a change. */
int ks_applied_original(ks_ctx *ctx, const char *store_dir, const ks_applied *c, ks_arena *a,
                        const char **text, size_t *len);
/* Replaces the manifest with `keep` (the changes not reverted). */
int ks_applied_write(ks_ctx *ctx, const char *store_dir, const ks_applieds *keep);

#endif
