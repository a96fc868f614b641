/* ks_hash: content hashes (SHA-256, hex) for source identity and cache keys. */
#ifndef KS_HASH_H
#define KS_HASH_H

#include <stddef.h>

#include "ks_model.h"

enum { KS_HASH_HEX = 65 }; /* 64 hex digits and the NUL */

void ks_sha256_hex(const void *bytes, size_t n, char out[KS_HASH_HEX]);

/* What a launch site runs, as a digest: its callee, configuration and
 * arguments as written, whitespace left out, and the code of its
 * enclosing function up to it (where a `dim3 block(32, 8)` the launch
 * names is set); not its place in the file: a site that only moves keeps
 * its digest. A winner verified with a site's launch is
 * dispatched there only while the digest is the same. */
void ks_launch_digest(const ks_launch *l, char out[KS_HASH_HEX]);

#endif
