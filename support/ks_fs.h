/* ks_fs: reading files, writing the tool's own files whole, and walking
 * source trees.
 *
 * Walks are deterministic (entries sorted by name), skip hidden entries and
 * never visit a directory twice (symlink loops). Paths handed to callbacks
 * are borrowed for the duration of the call. */
#ifndef KS_FS_H
#define KS_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ks_buf.h"
#include "ks_ctx.h"

/* Reads a whole file into `out` (replacing its contents). Fails with a
 * message naming the file when it cannot be read or exceeds `max_bytes`. */
int ks_read_file(ks_ctx *ctx, const char *path, size_t max_bytes, ks_buf *out);

/* Writes the tool's own file `path` (a profile, a report, an export; never
 * a user's source: that is ks_safe_write.h's job) whole or not at all:
 * `write` fills a temporary file beside it, which is renamed over it; a
 * failure (of `write`, which returns -1 with ks_fail, or of the file)
 * leaves the old file and no temporary behind. */
typedef int (*ks_write_fn)(ks_ctx *ctx, FILE *out, const void *arg);
int ks_write_file_whole(ks_ctx *ctx, const char *path, ks_write_fn write, const void *arg);

/* Called for every regular file; return non-zero to stop the walk. */
typedef int (*ks_walk_fn)(const char *path, void *data);

/* Visits `root` itself if it is a file, or every file below it if it is a
 * directory. Returns -1 with ks_fail when `root` does not exist or cannot be
 * read, else the first non-zero value a callback returned, else 0. */
int ks_walk(ks_ctx *ctx, const char *root, ks_walk_fn fn, void *data);

/* realpath() into a malloc'd string, or NULL. */
char *ks_realpath(const char *path);
/* `path` relative to directory `base` when it lies below it, else `path`
 * itself; the result points into `path`. */
const char *ks_path_below(const char *path, const char *base);
/* Extension test, case-sensitive, `ext` with its dot (".cu"). */
bool ks_path_has_ext(const char *path, const char *ext);
bool ks_is_dir(const char *path);
/* mkdir -p: `dir` and every missing directory above it (mode 0755). -1
 * with errno set when one cannot be made. */
int ks_mkdir_p(const char *dir);
/* rm -r: `dir` and everything in it, symbolic links removed as links (never
 * followed). A `dir` that does not exist is no error. */
int ks_remove_tree(ks_ctx *ctx, const char *dir);
bool ks_is_file(const char *path);
/* Joins two path pieces with one '/' into a malloc'd string. */
char *ks_path_join(const char *dir, const char *name);
/* The directory part of `path` (malloc'd; "." when there is none). */
char *ks_path_dirname(const char *path);

#endif
