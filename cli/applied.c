/* applied: the record of apply --write's changes and the project root both
 * apply and revert are confined to (applied.h). */
#include "applied.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_fs.h"
#include "ks_safe_write.h"

enum { MANIFEST_MAX = 16 << 20 };

char *ks_applied_root(ks_ctx *ctx, const char *store_dir) {
  char *parent = ks_path_dirname(store_dir);
  char *root = ks_realpath(parent);
  if (!root)
    ks_fail(ctx, "%s: cannot find the project root (the store's parent): %s", parent,
            strerror(errno));
  free(parent);
  return root;
}

static bool is_hex64(const char *s, size_t n) {
  if (n != KS_HASH_HEX - 1)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

static bool path_below(const char *root, const char *path) {
  size_t n = strlen(root);
  while (n && root[n - 1] == '/')
    n--;
  return !strncmp(path, root, n) && path[n] == '/' && path[n + 1];
}

/* Why the record of `rel` (relative to the root) may not be acted on, or
 * NULL: it stays below the root once its links are resolved, and outside
 * .git and the store. */
static const char *confine(ks_arena *a, const ks_applied_log *log, const char *rel) {
  if (!*rel)
    return "an empty path";
  for (const char *p = rel; *p;) {
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && !strncmp(p, "..", 2))
      return ks_arena_printf(a, "'%s' climbs out of the project with '..'", rel);
    if (n == 4 && !strncasecmp(p, ".git", 4))
      return ks_arena_printf(a, "'%s' lies inside .git", rel);
    p += n + (end != NULL);
  }
  ks_ctx scratch;
  ks_ctx_init(&scratch, "revert");
  char *abs = ks_path_join(log->root, rel), *to = NULL;
  const char *why = NULL;
  if (ks_safe_write_check_within(&scratch, log->root, abs, &to))
    why = ks_arena_strdup(a, scratch.error);
  else if (log->store && (path_below(log->store, to) || !strcmp(log->store, to)))
    why = ks_arena_printf(a, "'%s' lies inside the store %s", rel, log->store);
  free(to);
  free(abs);
  ks_ctx_release(&scratch);
  return why;
}

/* One manifest line: this format's ("done NEW ORIG PATH") or the older one
 * ("NEW ORIG /ABSOLUTE/PATH"). */
static void parse_line(ks_arena *a, const ks_applied_log *log, const char *p, unsigned line,
                       ks_applied *c) {
  memset(c, 0, sizeof *c);
  c->line = ks_arena_strdup(a, p);
  bool old = true;
  if (!strncmp(p, "done ", 5) || !strncmp(p, "pending ", 8)) {
    old = false;
    c->pending = p[0] == 'p';
    p += c->pending ? 8 : 5;
  }
  const char *a1 = strchr(p, ' '), *a2 = a1 ? strchr(a1 + 1, ' ') : NULL;
  if (!a2 || !is_hex64(p, (size_t)(a1 - p)) ||
      !(is_hex64(a1 + 1, (size_t)(a2 - a1 - 1)) || (a2 - a1 == 2 && a1[1] == '-')) || !a2[1]) {
    c->refused = ks_arena_printf(a, "%s:%u: not a line of the apply record; refused",
                                 log->manifest, line);
    return;
  }
  c->new_sha = ks_arena_strndup(a, p, (size_t)(a1 - p));
  c->orig_sha = a1[1] == '-' ? NULL : ks_arena_strndup(a, a1 + 1, (size_t)(a2 - a1 - 1));
  const char *path = a2 + 1, *why = NULL, *rel = path;
  if (old && path[0] != '/')
    why = ks_arena_printf(a, "'%s' is not an absolute path (this line has the older format)",
                          path);
  else if (old && !path_below(log->root, path))
    why = ks_arena_printf(a, "'%s' lies outside the project %s", path, log->root);
  else if (!old && path[0] == '/')
    why = ks_arena_printf(a, "'%s' is absolute; a record names a path relative to the "
                             "project root",
                          path);
  if (!why && old)
    rel = path + strlen(log->root) + (log->root[strlen(log->root) - 1] != '/');
  if (!why)
    why = confine(a, log, rel);
  if (why)
    c->refused = ks_arena_printf(a, "%s:%u: refused: %s", log->manifest, line, why);
  else
    c->path = ks_arena_strdup(a, rel);
}

static int read_manifest(ks_ctx *ctx, ks_arena *a, ks_applied_log *log) {
  struct stat st;
  if (lstat(log->manifest, &st) < 0)
    return errno == ENOENT ? 0 : ks_fail(ctx, "%s: %s", log->manifest, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return ks_fail(ctx, "%s: not a regular file; the apply record is refused", log->manifest);
  ks_buf text = KS_BUF_INIT;
  if (ks_read_file(ctx, log->manifest, MANIFEST_MAX, &text)) {
    ks_buf_release(&text);
    return -1;
  }
  log->exists = true;
  ks_sha256_hex(text.data, text.len, log->sha);
  unsigned line = 0;
  for (char *p = text.data; p && *p;) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    line++;
    if (*p)
      parse_line(a, log, p, line, ks_array_push(a, &log->items));
    p = nl ? nl + 1 : NULL;
  }
  ks_buf_release(&text);
  return 0;
}

int ks_applied_open(ks_ctx *ctx, const char *store_dir, bool create, ks_arena *a,
                    ks_applied_log *out) {
  memset(out, 0, sizeof *out);
  out->lock = -1;
  char *root = ks_applied_root(ctx, store_dir);
  if (!root)
    return -1;
  out->root = ks_arena_strdup(a, root);
  free(root);
  if (create && mkdir(store_dir, 0777) && errno != EEXIST)
    return ks_fail(ctx, "cannot create %s: %s", store_dir, strerror(errno));
  char *store = ks_realpath(store_dir);
  if (!store)
    return errno == ENOENT && !create ? 0 : ks_fail(ctx, "%s: %s", store_dir, strerror(errno));
  out->store = ks_arena_strdup(a, store);
  free(store);
  out->dir = ks_arena_printf(a, "%s/applied", out->store);
  out->manifest = ks_arena_printf(a, "%s/manifest", out->dir);
  struct stat st;
  if (lstat(out->dir, &st) < 0) {
    if (errno != ENOENT)
      return ks_fail(ctx, "%s: %s", out->dir, strerror(errno));
    if (!create)
      return 0;
    if (mkdir(out->dir, 0777) && errno != EEXIST)
      return ks_fail(ctx, "cannot create %s: %s", out->dir, strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    return ks_fail(ctx, "%s: not a directory (a symbolic link is not followed); the apply "
                        "record is refused",
                   out->dir);
  }
  const char *lock = ks_arena_printf(a, "%s/lock", out->dir);
  out->lock = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out->lock < 0)
    return ks_fail(ctx, "%s: %s", lock, strerror(errno));
  if (flock(out->lock, LOCK_EX | LOCK_NB) < 0) {
    int err = errno;
    close(out->lock);
    out->lock = -1;
    return err == EWOULDBLOCK
               ? ks_fail(ctx, "another apply --write or revert is working on %s; try again "
                              "when it is done",
                         out->dir)
               : ks_fail(ctx, "%s: cannot lock: %s", lock, strerror(err));
  }
  return read_manifest(ctx, a, out);
}

void ks_applied_close(ks_applied_log *log) {
  if (log->lock >= 0)
    close(log->lock);
  log->lock = -1;
}

const char *ks_applied_abs(ks_arena *a, const ks_applied_log *log, const ks_applied *c) {
  return ks_arena_printf(a, "%s/%s", log->root, c->path);
}

static const char *orig_path(ks_arena *a, const ks_applied_log *log, const char *sha) {
  return ks_arena_printf(a, "%s/%s.orig", log->dir, sha);
}

int ks_applied_original(ks_ctx *ctx, const ks_applied_log *log, const ks_applied *c, ks_arena *a,
                        const char **text, size_t *len) {
  const char *keep = orig_path(a, log, c->orig_sha);
  struct stat st;
  if (lstat(keep, &st) < 0 || !S_ISREG(st.st_mode))
    return ks_fail(ctx, "%s: the original of %s is %s", keep, c->path,
                   errno == ENOENT ? "missing" : "not a regular file");
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

int ks_applied_save(ks_ctx *ctx, ks_applied_log *log) {
  ks_buf text = KS_BUF_INIT;
  for (size_t i = 0; i < log->items.len; i++) {
    const ks_applied *c = &log->items.items[i];
    if (c->refused)
      ks_buf_addf(&text, "%s\n", c->line);
    else
      ks_buf_addf(&text, "%s %s %s %s\n", c->pending ? "pending" : "done", c->new_sha,
                  c->orig_sha ? c->orig_sha : "-", c->path);
  }
  int rc = ks_safe_write_within(ctx, log->dir, log->manifest, log->exists ? log->sha : NULL,
                                text.data ? text.data : "", text.len);
  if (!rc) {
    log->exists = true;
    ks_sha256_hex(text.data ? text.data : "", text.len, log->sha);
  }
  ks_buf_release(&text);
  return rc;
}

void ks_applied_prune(const ks_applied_log *log) {
  if (!log->dir)
    return;
  DIR *d = opendir(log->dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n != KS_HASH_HEX - 1 + 5 || strcmp(e->d_name + KS_HASH_HEX - 1, ".orig") ||
        !is_hex64(e->d_name, KS_HASH_HEX - 1))
      continue;
    char sha[KS_HASH_HEX];
    memcpy(sha, e->d_name, KS_HASH_HEX - 1);
    sha[KS_HASH_HEX - 1] = '\0';
    bool named = false; /* a refused line keeps what it names (a project moved back) */
    for (size_t i = 0; i < log->items.len && !named; i++) {
      const ks_applied *c = &log->items.items[i];
      named = c->refused ? strstr(c->line, sha) != NULL : c->orig_sha && !strcmp(c->orig_sha, sha);
    }
    struct stat st;
    if (!named && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
  ks_safe_write_sweep(log->dir);
}

/* --- writing a set of changes -------------------------------------------------- */

/* Keeps the original text of a change as applied/SHA.orig (once: a kept
 * one whose text is not its name is written again). */
static int keep_original(ks_ctx *ctx, ks_applied_log *log, const ks_applied_change *ch,
                         const char *sha, ks_arena *a) {
  const char *keep = orig_path(a, log, sha);
  char now[KS_HASH_HEX];
  struct stat st;
  bool exists = lstat(keep, &st) == 0;
  if (exists && S_ISREG(st.st_mode) && !ks_file_sha256(ctx, keep, now) && !strcmp(now, sha))
    return 0;
  if (exists && !S_ISREG(st.st_mode))
    return ks_fail(ctx, "%s: not a regular file", keep);
  return ks_safe_write_within(ctx, log->dir, keep, exists ? now : NULL, ch->original,
                              ch->original_len);
}

static void note_failure(ks_ctx *ctx, char *first, size_t size, const char *prefix) {
  if (!*first)
    snprintf(first, size, "%s%s", prefix, ctx->error);
}

int ks_applied_write(ks_ctx *ctx, ks_applied_log *log, ks_applied_change *changes, size_t n,
                     ks_arena *a) {
  for (size_t i = 0; i < n; i++) {
    changes[i].written = false;
    if (strchr(changes[i].rel, '\n'))
      return ks_fail(ctx, "%s: a file name with a line break cannot be recorded; nothing was "
                          "written",
                     changes[i].path);
  }
  /* What killed writers of a pending change left beside its file. */
  for (size_t i = 0; i < log->items.len; i++)
    if (!log->items.items[i].refused && log->items.items[i].pending)
      ks_safe_write_clean(ks_applied_abs(a, log, &log->items.items[i]));
  /* 1. the originals */
  const char **shas = ks_arena_alloc(a, (n + 1) * sizeof *shas);
  for (size_t i = 0; i < n; i++) {
    char *sha = ks_arena_alloc(a, KS_HASH_HEX);
    ks_sha256_hex(changes[i].original ? changes[i].original : "", changes[i].original_len, sha);
    shas[i] = changes[i].original ? sha : NULL;
    if (shas[i] && keep_original(ctx, log, &changes[i], sha, a)) {
      ks_fail_prefix(ctx, ks_arena_printf(a, "cannot keep the original of %s (nothing was "
                                             "changed)",
                                          changes[i].rel));
      return -1;
    }
  }
  /* 2. the intent */
  size_t base = log->items.len;
  for (size_t i = 0; i < n; i++) {
    ks_applied *c = ks_array_push(a, &log->items);
    memset(c, 0, sizeof *c);
    char *sha = ks_arena_alloc(a, KS_HASH_HEX);
    ks_sha256_hex(changes[i].text, changes[i].len, sha);
    c->new_sha = sha;
    c->orig_sha = shas[i];
    c->path = changes[i].rel;
    c->pending = true;
  }
  if (ks_applied_save(ctx, log)) {
    log->items.len = base;
    ks_fail_prefix(ctx, "cannot record the changes before making them (nothing was changed)");
    return -1;
  }
  /* 3. the files, in order */
  char first[sizeof ctx->error] = "";
  for (size_t i = 0; i < n && !*first; i++) {
    if (!ks_safe_write_within(ctx, log->root, changes[i].path, shas[i], changes[i].text,
                              changes[i].len)) {
      changes[i].written = true;
      continue;
    }
    note_failure(ctx, first, sizeof first, "");
    char now[KS_HASH_HEX]; /* written, and a later step failed (syncing the directory) */
    ks_ctx scratch;
    ks_ctx_init(&scratch, "apply");
    changes[i].written = ks_is_file(changes[i].path) &&
                         !ks_file_sha256(&scratch, changes[i].path, now) &&
                         !strcmp(now, log->items.items[base + i].new_sha);
    ks_ctx_release(&scratch);
  }
  /* 4. done; a change not made leaves no record */
  size_t kept = base;
  for (size_t i = 0; i < n; i++)
    if (changes[i].written) {
      log->items.items[kept] = log->items.items[base + i];
      log->items.items[kept++].pending = false;
    }
  log->items.len = kept;
  if (ks_applied_save(ctx, log)) {
    size_t written = kept - base;
    note_failure(ctx, first, sizeof first,
                 ks_arena_printf(a, "%zu file%s written, but marking %s done in the record "
                                    "failed (revert still undoes %s): ",
                                 written, written == 1 ? "" : "s", written == 1 ? "it" : "them",
                                 written == 1 ? "it" : "them"));
  }
  if (*first) {
    snprintf(ctx->error, sizeof ctx->error, "%s", first);
    return -1;
  }
  return 0;
}
