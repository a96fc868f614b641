/* ks_hash: content hashes (SHA-256, hex) for source identity and cache keys. */
#ifndef KS_HASH_H
#define KS_HASH_H

#include <stddef.h>

enum { KS_HASH_HEX = 65 }; /* 64 hex digits and the NUL */

void ks_sha256_hex(const void *bytes, size_t n, char out[KS_HASH_HEX]);

#endif
