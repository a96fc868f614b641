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

/* The SHA-256 of a file's contents as 64 hex digits. Returns 0, or -1 with
 * ks_fail naming the file. */
int ks_file_sha256(ks_ctx *ctx, const char *path, char out_hex[KS_HASH_HEX]);

/* True when `name` (a file name, no directory) is one of ks_safe_write's
 * temporary files, left behind by a killed writer. */
bool ks_safe_write_is_temp(const char *name);

#endif
