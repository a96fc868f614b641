/* applied: what `apply --write` changed, so that `revert` can restore it
 * byte for byte, and the project root both of them are confined to.
 *
 * The project root is the store's parent directory, its links resolved.
 * Every path apply writes and revert restores or removes lies below it
 * (after resolving links, the last one too), outside `.git` and outside the
 * store: a record that points elsewhere is refused, in one line naming it,
 * and never acted on (a cloned repository may ship a hostile record).
 *
 * The store directory holds applied/ORIGINAL_SHA.orig (a file's text before
 * the first apply that changed it), applied/lock (held while apply --write
 * or revert works on the record) and applied/manifest, one line per change,
 * oldest first:
 *
 *     <state> <new sha256> <original sha256, or "-" for a file apply created> <path>
 *
 * with the state "pending" (the intent: written before the file is replaced)
 * or "done" (after), and the path relative to the project root. Lines of the
 * older format (`<new> <original> <absolute path>`, written after the file)
 * are read as done changes when their path lies below the root.
 *
 * The order that makes a kill at any moment undoable: the originals are
 * kept, then the manifest gets every change as pending, then the files are
 * replaced (the dispatch header before the files that include it), then the
 * changes are marked done. Revert treats a pending change by the file's
 * hash: still the original (the kill came before the rename), nothing to
 * do; the new text, restored like a done change.
 *
 * Ownership: everything lives in the arena passed to ks_applied_open. */
#ifndef KS_APPLIED_H
#define KS_APPLIED_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_hash.h"

typedef struct ks_applied {
  const char *path;      /* relative to the project root; NULL when refused */
  const char *new_sha;   /* what apply wrote */
  const char *orig_sha;  /* what was there; NULL: apply created the file */
  bool pending;          /* the intent, the write not confirmed */
  const char *refused;   /* why it is not acted on (names the record); NULL: fine */
  const char *line;      /* the manifest line as read, kept as is when refused */
} ks_applied;
typedef KS_ARRAY(ks_applied) ks_applieds;

typedef struct ks_applied_log {
  const char *root;        /* the project root, absolute, links resolved */
  const char *store;       /* the store directory, links resolved */
  const char *dir;         /* STORE/applied */
  const char *manifest;    /* STORE/applied/manifest */
  ks_applieds items;       /* oldest first */
  bool exists;             /* the manifest was there */
  char sha[KS_HASH_HEX];   /* its hash as last read or written */
  int lock;                /* applied/lock, held while open; -1: none */
} ks_applied_log;

/* The project root of `store_dir` (malloc'd), or NULL with ks_fail. */
char *ks_applied_root(ks_ctx *ctx, const char *store_dir);

/* Opens the record of `store_dir`, taking its lock (`create`: making
 * applied/ when it is not there). A missing record is an empty one. */
int ks_applied_open(ks_ctx *ctx, const char *store_dir, bool create, ks_arena *a,
                    ks_applied_log *out);
void ks_applied_close(ks_applied_log *log);

/* A record's path below the root, absolute (arena). */
const char *ks_applied_abs(ks_arena *a, const ks_applied_log *log, const ks_applied *c);

/* The original text of a change, checked against its hash. */
int ks_applied_original(ks_ctx *ctx, const ks_applied_log *log, const ks_applied *c, ks_arena *a,
                        const char **text, size_t *len);

/* Writes the manifest: the items, a refused one as its line was. */
int ks_applied_save(ks_ctx *ctx, ks_applied_log *log);

/* Removes the kept originals no item names. */
void ks_applied_prune(const ks_applied_log *log);

/* One file apply writes. */
typedef struct ks_applied_change {
  const char *path;      /* absolute, below the root (as the patch names it) */
  const char *rel;       /* the same, relative to the root */
  const char *original;  /* its text as read; NULL: apply creates the file */
  size_t original_len;
  const char *text;      /* what apply writes */
  size_t len;
  bool written;          /* out: the file now holds `text` */
} ks_applied_change;

/* Writes `changes` in their order, recorded as above. On a failure the
 * files written before it stay written and recorded (revert undoes them),
 * `written` says which, and the error names the file that was not. */
int ks_applied_write(ks_ctx *ctx, ks_applied_log *log, ks_applied_change *changes, size_t n,
                     ks_arena *a);

#endif
