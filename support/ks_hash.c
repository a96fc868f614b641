/* SHA-256 through OpenSSL's libcrypto (Debian's libssl-dev). */
#include "ks_hash.h"

#include <openssl/evp.h>
#include <stdio.h>

#include "ks_buf.h"

void ks_sha256_hex(const void *bytes, size_t n, char out[KS_HASH_HEX]) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes, n, digest, &len, EVP_sha256(), NULL);
  for (unsigned int i = 0; i < len && i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", digest[i]);
  out[64] = '\0';
}

/* `s` without whitespace, then a separator no source text holds. */
static void digest_part(ks_buf *b, const char *s) {
  for (; s && *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
      ks_buf_addc(b, *s);
  ks_buf_addc(b, '\x1f');
}

void ks_launch_digest(const ks_launch *l, char out[KS_HASH_HEX]) {
  ks_buf b = KS_BUF_INIT;
  digest_part(&b, l->callee);
  digest_part(&b, l->grid);
  digest_part(&b, l->block);
  digest_part(&b, l->smem);
  digest_part(&b, l->stream);
  for (size_t i = 0; i < l->args.len; i++)
    digest_part(&b, l->args.items[i]);
  for (size_t i = 0; i < l->template_args.len; i++)
    digest_part(&b, l->template_args.items[i].value);
  digest_part(&b, l->context_hash);
  ks_sha256_hex(b.data ? b.data : "", b.len, out);
  ks_buf_release(&b);
}
