/* ks_patch: the unified diff of one file, as `git apply` and `patch -p1`
 * accept it.
 *
 * Lines are split at '\n' and compared byte for byte with their terminator,
 * so a '\r' stays part of its line (CRLF files diff and apply unchanged) and
 * a last line without '\n' differs from the same line with one (emitted with
 * "\ No newline at end of file", as diff does). The diff is minimal in
 * changed lines (Myers' O(ND) algorithm, linear space; lines that occur in
 * only one of the texts are set aside first), then each inserted or deleted
 * block that could sit in several places is moved next to a change of the
 * other text if it can (a replacement reads as one -/+ block), else to where
 * it reads best in source code: after a blank line, at the lowest
 * indentation (the idea of git's indent heuristic; on edits like those apply
 * makes, the hunks are git's). Only
 * a pathological input (tens of thousands of scattered changes) makes the
 * search give up minimality for time; the diff is still correct then.
 *
 * Nothing is allocated that outlives a call; the caller owns `out`. */
#ifndef KS_PATCH_H
#define KS_PATCH_H

#include <stddef.h>

#include "ks_buf.h"
#include "ks_ctx.h"

enum { KS_PATCH_CONTEXT = 3 }; /* the usual lines of context around a change */

/* Appends to `out` the diff that turns `old_text` into `new_text`:
 *   diff --git a/PATH b/PATH
 *   --- a/PATH
 *   +++ b/PATH
 *   @@ -l,n +l,n @@ nearest line above that starts a definition
 * with `context` lines around each change; changes whose contexts touch share
 * a hunk. `path` is relative to the directory the patch is applied in (the
 * repository root) and is quoted as git quotes it when it needs to be.
 * Identical texts append nothing. A NULL `old_text` means the file does not
 * exist yet: the diff creates it ("new file mode 100644", "--- /dev/null");
 * a NULL `new_text` is the empty text. With `context` 0, git applies the
 * diff only with --unidiff-zero, as with any diff without context.
 * Returns 0, or -1 with ks_fail for a text holding a NUL byte (no text diff
 * can carry it) or an empty path. */
int ks_patch_diff(ks_ctx *ctx, const char *path, const char *old_text, size_t old_len,
                  const char *new_text, size_t new_len, unsigned context, ks_buf *out);

#endif
