/* SHA-256 through OpenSSL's libcrypto (Debian's libssl-dev). */
#include "ks_hash.h"

#include <openssl/evp.h>
#include <stdio.h>

void ks_sha256_hex(const void *bytes, size_t n, char out[KS_HASH_HEX]) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes, n, digest, &len, EVP_sha256(), NULL);
  for (unsigned int i = 0; i < len && i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", digest[i]);
  out[64] = '\0';
}
