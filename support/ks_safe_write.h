/* ks_safe_write: replacing a user's file without ever leaving it half
 * written, and only if nobody changed it since we read it.
 *
 * ks_safe_write takes an advisory lock beside the file, checks that the
 * file's SHA-256 is still the one the caller read, writes the new text to a
 * temporary file in the same directory, fsyncs it, gives it the original's
 * mode (and owner, where permitted), renames it over the original and
 * fsyncs the directory. A reader sees the old contents or the new ones,
 * whole, also across a crash or kill -9 of the writer. On any failure the
 * temporary file is removed and the original is untouched.
 *
 * Names beside the file, in its directory (NAME is the file's name, cut to
 * 200 bytes):
 *   .NAME.kernelsmith.lock          the lock; removed when the write ends
 *   .NAME.kernelsmith-tmp.XXXXXX    the temporary file; a writer killed with
 *                                   -9 cannot remove it, so the next write of
 *                                   the same file does, under the lock (no
 *                                   writer can be using it then)
 * The lock stays beside the file, not in a store: it belongs to the file, so
 * every writer of it (apply from any store, revert, the compiler launcher)
 * excludes the others, and the temporary file must be in that directory
 * anyway for the rename. What a killed writer leaves there (its lock file, its
 * temporary file) is removed by ks_safe_write_clean and ks_safe_write_sweep,
 * under the lock, taken without waiting, so that a live writer's files are
 * never touched; apply and revert call them for every file of their record.
 * Other writers (an editor) do not take the lock: the file's identity
 * (inode, size, modification time) is checked again just before the rename,
 * which leaves a window of microseconds, not of the whole write.
 *
 * What is refused, each with a one-line error naming the file: contents
 * changed since read, a file that exists when it was expected not to (or the
 * reverse), a file that is not regular, not writable by us or by anyone (no
 * write bit in its mode, also for root), or has several hard links (a rename
 * would split them). A symbolic link is followed: its target is replaced and
 * the link stays. Extended attributes and ACLs of the original are not
 * carried over.
 *
 * Fault sites (KERNELSMITH_FAULTS, see ks_ctx.h): safe_write.lock,
 * safe_write.write, safe_write.fsync, safe_write.before_rename,
 * safe_write.dir_fsync (after the rename: the new text is in place, the
 * call still fails). */
#ifndef KS_SAFE_WRITE_H
#define KS_SAFE_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_ctx.h"
#include "ks_hash.h"

/* Replaces `path` with `len` bytes of `text` when the file's SHA-256 (64
 * hex digits) is `expect_sha256_hex`, or, when that is NULL, when the file
 * does not exist (it is then created, atomically refusing to replace a file
 * that appeared meanwhile, with mode 0644 minus the umask). Returns 0, or -1
 * with ks_fail. */
int ks_safe_write(ks_ctx *ctx, const char *path, const char *expect_sha256_hex,
                  const char *text, size_t len);

/* As ks_safe_write, confined to the directory `root` (absolute, free of
 * symbolic links; NULL: anywhere): the file, after its links (and its
 * directory's) are resolved, must lie below `root`, else nothing is written
 * and the one-line error says where it leads. */
int ks_safe_write_within(ks_ctx *ctx, const char *root, const char *path,
                         const char *expect_sha256_hex, const char *text, size_t len);

/* Removes `path` (confined to `root` as above) when its SHA-256 is
 * `expect_sha256_hex`, under the same lock; a file that is not there is not
 * an error. Returns 0, or -1 with ks_fail naming the file ("not removed"). */
int ks_safe_remove_within(ks_ctx *ctx, const char *root, const char *path,
                          const char *expect_sha256_hex);

/* 0 when `path`, its symbolic links and its directory's resolved, lies
 * below `root` (a path whose directories do not exist yet is resolved as
 * far as they do); else -1 with ks_fail: "PATH: a symbolic link to TARGET,
 * outside ROOT" or "PATH: outside ROOT (it leads to TARGET)". `*resolved`,
 * when not NULL, receives where it leads (malloc'd; NULL on failure). */
int ks_safe_write_check_within(ks_ctx *ctx, const char *root, const char *path,
                               char **resolved);

/* Removes the lock file and temporary files a killed writer of `path` left
 * beside it. A lock a live writer holds is left alone (it removes its own). */
void ks_safe_write_clean(const char *path);
/* The same for every file of the directory `dir` (the tool's own
 * directories: the store's record). */
void ks_safe_write_sweep(const char *dir);

/* The SHA-256 of a file's contents as 64 hex digits. Returns 0, or -1 with
 * ks_fail naming the file. */
int ks_file_sha256(ks_ctx *ctx, const char *path, char out_hex[KS_HASH_HEX]);

/* True when `name` (a file name, no directory) is one of ks_safe_write's
 * temporary files, left behind by a killed writer. */
bool ks_safe_write_is_temp(const char *name);

#endif
