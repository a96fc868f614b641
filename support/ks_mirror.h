/* ks_mirror: the files one run reads, packed on rank 0 into one blob and
 * recreated on the other ranks of `optimize --mpi`, which may run on hosts
 * without a copy of the user's project.
 *
 * What is packed: under each path (a directory is walked as the scan walks
 * it: sorted, hidden entries skipped) the files with a source or header
 * extension, a file path itself whatever its extension, compile_commands.json
 * at the root and in `compdb_dir`, and each extra file (captures). Every
 * file must lie inside the root after its symbolic links are resolved.
 *
 * The blob (all integers big-endian; a string is a u32 length and its bytes,
 * no NUL):
 *   "KSMIRROR"  u32 format version (1)  u32 0  u64 manifest length M
 *   manifest:   string root (resolved)  string root (as rank 0 named it,
 *               made absolute)  string rank 0's cwd  u64 file count, then
 *               per file: string path relative to the root, u32 mode bits,
 *               u64 size, 64 hex digits of SHA-256
 *   contents:   each file's bytes in manifest order, nothing after.
 * Files are sorted by relative path, so the same tree packs to the same
 * bytes.
 *
 * A rank whose files at rank 0's root are all identical uses them in
 * place; KERNELSMITH_MIRROR_COPY=1 makes it copy them all the same (tests
 * of a host without the project, run on one host).
 *
 * Unpacking checks the whole blob (paths, sizes, hashes, duplicates) before
 * anything is written, writes only inside a fresh private directory, and
 * never follows a symbolic link while writing or removing.
 *
 * Ownership: the blob belongs to the caller (ks_buf); a ks_mirror's strings
 * live in the arena given to ks_mirror_unpack; the private copy on disk
 * stays until ks_mirror_remove. */
#ifndef KS_MIRROR_H
#define KS_MIRROR_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_ctx.h"

typedef struct ks_mirror {
  const char *root; /* where the files are on this rank: rank 0's root itself
                       when every file here is identical (same path, same
                       SHA-256), else a fresh private directory */
  bool copied;      /* root is a private copy (removed by ks_mirror_remove) */
  size_t nfiles;
  const char *rank0_root;       /* rank 0's root, symbolic links resolved */
  const char *rank0_root_given; /* rank 0's root as named there, made
                                   absolute (differs through links) */
  const char *rank0_cwd;        /* rank 0's working directory */
} ks_mirror;

/* Rank 0: packs every file a run over `paths` (files or directories,
 * absolute or relative to cwd, all inside `root`) reads into `out`
 * (replacing its contents): see above. `compdb_dir` may be NULL. A path
 * outside root (after realpath), a symbolic link leading outside root, an
 * unreadable file, or a file that changes while it is read: -1 with a
 * one-line ks_fail naming it, `out` left empty. */
int ks_mirror_pack(ks_ctx *ctx, const char *root, const char *const *paths, size_t npaths,
                   const char *compdb_dir, const char *const *extra, size_t nextra,
                   ks_buf *out);

/* Another rank: if rank 0's root exists here and every file of the blob is
 * there with the same SHA-256, uses it in place (copied false); else makes a
 * private directory ($TMPDIR or /tmp, "kernelsmith-mirror-XXXXXX", mode
 * 0700) and writes every file under it (mode 0644, or 0755 when rank 0's
 * had an executable bit). In a copy, each compile_commands.json has rank 0's
 * root rewritten to the copy's in every "directory", "file" and "output"
 * that starts with it, and wherever it begins a path in an "arguments"
 * element or the "command" text (`-I/root/include` too). A hostile or
 * damaged blob (a path that is absolute, climbs with "..", holds a NUL or an
 * empty component; a duplicate; a size or hash that does not match; a
 * truncated blob): -1 with a one-line ks_fail naming the entry, nothing
 * written. */
int ks_mirror_unpack(ks_ctx *ctx, const void *blob, size_t len, ks_arena *arena,
                     ks_mirror *out);

/* The relative paths of a blob's files, in order, after the same checks as
 * ks_mirror_unpack (for tests and diagnostics); strings in `arena`. */
int ks_mirror_list(ks_ctx *ctx, const void *blob, size_t len, ks_arena *arena,
                   ks_strings *out);

/* A rank-0 path (absolute, or relative to rank 0's cwd) as it is here:
 * inside the mirror's root (made lexically: "." and ".." folded). NULL with
 * ks_fail when it is outside rank 0's root. */
const char *ks_mirror_map(ks_ctx *ctx, const ks_mirror *m, const char *rank0_path,
                          ks_arena *arena);

/* Removes a private copy (recursively, without following symbolic links)
 * and clears `copied`; a no-op when the mirror is used in place. */
int ks_mirror_remove(ks_ctx *ctx, ks_mirror *m);

#endif
