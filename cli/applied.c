/* applied: the record of apply --write's changes (applied.h). */
#include "applied.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_safe_write.h"

static const char *dir_of(ks_arena *a, const char *store_dir) {
  return ks_arena_printf(a, "%s/applied", store_dir);
}

static int ensure_dir(ks_ctx *ctx, const char *dir) {
  if (mkdir(dir, 0777) && errno != EEXIST)
    return ks_fail(ctx, "cannot create %s: %s", dir, strerror(errno));
  return 0;
}

static int manifest_sha(ks_ctx *ctx, const char *path, char sha[KS_HASH_HEX], bool *exists) {
  *exists = ks_is_file(path);
  return *exists ? ks_file_sha256(ctx, path, sha) : 0;
}

int ks_applied_record(ks_ctx *ctx, const char *store_dir, const char *path, const char *original,
                      size_t len, const char *new_text, size_t new_len) {
  ks_arena a = KS_ARENA_INIT;
  int rc = -1;
  const char *dir = dir_of(&a, store_dir);
  char orig_sha[KS_HASH_HEX] = "-", new_sha[KS_HASH_HEX];
  ks_sha256_hex(new_text, new_len, new_sha);
  if (ensure_dir(ctx, dir))
    goto out;
  if (original) {
    ks_sha256_hex(original, len, orig_sha);
    const char *keep = ks_arena_printf(&a, "%s/%s.orig", dir, orig_sha);
    if (!ks_is_file(keep) && ks_safe_write(ctx, keep, NULL, original, len))
      goto out;
  }
  const char *manifest = ks_arena_printf(&a, "%s/manifest", dir);
  ks_buf text = KS_BUF_INIT;
  char sha[KS_HASH_HEX];
  bool exists;
  if (manifest_sha(ctx, manifest, sha, &exists) ||
      (exists && ks_read_file(ctx, manifest, (size_t)16 << 20, &text))) {
    ks_buf_release(&text);
    goto out;
  }
  ks_buf_addf(&text, "%s %s %s\n", new_sha, orig_sha, path);
  rc = ks_safe_write(ctx, manifest, exists ? sha : NULL, text.data, text.len);
  ks_buf_release(&text);
out:
  ks_arena_release(&a);
  return rc;
}

int ks_applied_read(ks_ctx *ctx, const char *store_dir, ks_arena *a, ks_applieds *out) {
  memset(out, 0, sizeof *out);
  const char *manifest = ks_arena_printf(a, "%s/manifest", dir_of(a, store_dir));
  if (!ks_is_file(manifest))
    return 0;
  ks_buf text = KS_BUF_INIT;
  if (ks_read_file(ctx, manifest, (size_t)16 << 20, &text)) {
    ks_buf_release(&text);
    return -1;
  }
  int rc = 0;
  unsigned line = 0;
  for (char *p = text.data; p && *p;) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    line++;
    char *a1 = strchr(p, ' '), *a2 = a1 ? strchr(a1 + 1, ' ') : NULL;
    if (!a1 || !a2 || a1 - p != KS_HASH_HEX - 1) {
      rc = ks_fail(ctx, "%s:%u: not a line of the apply record", manifest, line);
      break;
    }
    ks_applied *c = ks_array_push(a, out);
    c->new_sha = ks_arena_strndup(a, p, (size_t)(a1 - p));
    c->orig_sha = a2 - a1 - 1 == 1 && a1[1] == '-' ? NULL
                                                     : ks_arena_strndup(a, a1 + 1, (size_t)(a2 - a1 - 1));
    c->path = ks_arena_strdup(a, a2 + 1);
    p = nl ? nl + 1 : NULL;
  }
  ks_buf_release(&text);
  return rc;
}

int ks_applied_original(ks_ctx *ctx, const char *store_dir, const ks_applied *c, ks_arena *a,
                        const char **text, size_t *len) {
  const char *keep = ks_arena_printf(a, "%s/%s.orig", dir_of(a, store_dir), c->orig_sha);
  ks_buf b = KS_BUF_INIT;
  if (ks_read_file(ctx, keep, (size_t)256 << 20, &b)) {
    ks_buf_release(&b);
    return -1;
  }
  char sha[KS_HASH_HEX];
  ks_sha256_hex(b.data, b.len, sha);
  if (strcmp(sha, c->orig_sha)) {
    ks_buf_release(&b);
    return ks_fail(ctx, "%s: damaged (its SHA-256 is not its name)", keep);
  }
  *len = b.len;
  char *t = ks_arena_alloc(a, b.len + 1);
  memcpy(t, b.data, b.len);
  t[b.len] = '\0';
  *text = t;
  ks_buf_release(&b);
  return 0;
}

int ks_applied_write(ks_ctx *ctx, const char *store_dir, const ks_applieds *keep) {
  ks_arena a = KS_ARENA_INIT;
  const char *manifest = ks_arena_printf(&a, "%s/manifest", dir_of(&a, store_dir));
  char sha[KS_HASH_HEX];
  bool exists;
  int rc = manifest_sha(ctx, manifest, sha, &exists);
  if (!rc) {
    ks_buf text = KS_BUF_INIT;
    for (size_t i = 0; i < keep->len; i++)
      ks_buf_addf(&text, "%s %s %s\n", keep->items[i].new_sha,
                  keep->items[i].orig_sha ? keep->items[i].orig_sha : "-", keep->items[i].path);
    rc = ks_safe_write(ctx, manifest, exists ? sha : NULL, text.data ? text.data : "", text.len);
    ks_buf_release(&text);
  }
  ks_arena_release(&a);
  return rc;
}
