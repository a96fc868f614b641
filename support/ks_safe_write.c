/* Replacing a user's file: lock, hash check, temporary file, fsync, rename,
 * directory fsync. See ks_safe_write.h for the contract. */
#include "ks_safe_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_fs.h"

/* A name of 255 bytes plus our tags would exceed NAME_MAX; two files whose
 * names share 200 bytes then share a lock, which only serializes them. */
enum { NAME_KEEP = 200, TEMP_RANDOM = 6, LOCK_TRIES = 1000 };
static const char TEMP_TAG[] = ".kernelsmith-tmp.";
static const char LOCK_TAG[] = ".kernelsmith.lock";

/* The file that is replaced: the caller's path, or a symbolic link's target,
 * so the link survives. All strings are malloc'd. */
typedef struct target {
  const char *shown; /* the caller's path, for messages */
  const char *undone; /* "not written" or "not removed", ending every refusal */
  char *path;
  char *dir;
  char *stem;        /* "." + the name cut to NAME_KEEP bytes */
  char *lock_path;
} target;

static void target_release(target *t) {
  free(t->path);
  free(t->dir);
  free(t->stem);
  free(t->lock_path);
}

static int target_init(ks_ctx *ctx, const char *root, const char *path, const char *undone,
                       target *t) {
  memset(t, 0, sizeof *t);
  t->shown = path;
  t->undone = undone;
  if (root && ks_safe_write_check_within(ctx, root, path, NULL)) {
    char why[sizeof ctx->error];
    snprintf(why, sizeof why, "%s", ctx->error);
    return ks_fail(ctx, "%s; %s", why, undone);
  }
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    t->path = ks_realpath(path);
    if (!t->path)
      return ks_fail(ctx, "%s: symbolic link to a file that cannot be reached (%s); %s", path,
                     strerror(errno), undone);
  } else {
    t->path = ks_xstrdup(path);
  }
  const char *slash = strrchr(t->path, '/');
  const char *name = slash ? slash + 1 : t->path;
  if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
    return ks_fail(ctx, "%s: not a file name; %s", path, undone);
  t->dir = ks_path_dirname(t->path);
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, ".%.*s", NAME_KEEP, name);
  t->stem = ks_buf_detach(&b);
  ks_buf_addf(&b, "%s/%s%s", t->dir, t->stem, LOCK_TAG);
  t->lock_path = ks_buf_detach(&b);
  return 0;
}

/* --- the lock -------------------------------------------------------------- */

/* The lock file is removed by its holder before it lets go, so a waiter may
 * end up holding a lock on a file no longer in the directory; it checks that
 * the name still leads to the file it locked, and tries again if not. */
static int lock_take(ks_ctx *ctx, const target *t, int *out) {
  for (int tries = 0; tries < LOCK_TRIES; tries++) {
    if (ks_fault(ctx, "safe_write.lock"))
      return ks_fail(ctx, "%s: cannot take the lock %s: injected fault; %s", t->shown,
                     t->lock_path, t->undone);
    int fd = open(t->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EACCES) /* another user's lock file: reading is enough to lock */
      fd = open(t->lock_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return ks_fail(ctx, "%s: cannot create the lock %s: %s; %s", t->shown, t->lock_path,
                     strerror(errno), t->undone);
    int rc;
    while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
      continue;
    if (rc < 0) {
      int err = errno;
      close(fd);
      return ks_fail(ctx, "%s: cannot lock %s: %s; %s", t->shown, t->lock_path, strerror(err),
                     t->undone);
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(t->lock_path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      *out = fd;
      return 0;
    }
    close(fd);
  }
  return ks_fail(ctx, "%s: cannot lock %s: it keeps being replaced; %s", t->shown,
                 t->lock_path, t->undone);
}

static void lock_drop(const target *t, int fd) {
  unlink(t->lock_path); /* still ours: removing it before closing is what waiters expect */
  close(fd);
}

/* --- names ------------------------------------------------------------------ */

static bool is_random_part(const char *s) {
  size_t n = 0;
  for (; s[n]; n++) {
    char c = s[n];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  }
  return n == TEMP_RANDOM;
}

bool ks_safe_write_is_temp(const char *name) {
  size_t n = strlen(name), tag = sizeof TEMP_TAG - 1;
  if (name[0] != '.' || n < 2 + tag + TEMP_RANDOM)
    return false;
  const char *at = name + n - TEMP_RANDOM - tag;
  return !memcmp(at, TEMP_TAG, tag) && is_random_part(at + tag);
}

/* Temporary files of this same file left by a writer that was killed. Only
 * called with the lock held, so no live writer owns one of them. */
static void remove_stale_temps(const char *dir, const char *stem_name) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  size_t stem = strlen(stem_name), tag = sizeof TEMP_TAG - 1;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *name = e->d_name;
    if (strncmp(name, stem_name, stem) || strncmp(name + stem, TEMP_TAG, tag) ||
        !is_random_part(name + stem + tag))
      continue;
    struct stat st;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      unlinkat(dirfd(d), name, 0);
  }
  closedir(d);
}

/* The process's umask, read without changing it where /proc tells it
 * (umask() can only be read by setting it, which races with other threads). */
static mode_t current_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  if (f) {
    char line[256];
    unsigned mask;
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "Umask: %o", &mask) == 1) {
        fclose(f);
        return (mode_t)mask;
      }
    fclose(f);
  }
  mode_t mask = umask(022);
  umask(mask);
  return mask;
}

/* --- the current contents ---------------------------------------------------- */

typedef struct current {
  bool exists;
  struct stat st;
  char sha[KS_HASH_HEX];
} current;

static int read_current(ks_ctx *ctx, const target *t, current *cur) {
  memset(cur, 0, sizeof *cur);
  int fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    return ks_fail(ctx, "%s: %s; %s", t->shown, strerror(errno), t->undone);
  }
  cur->exists = true;
  ks_buf text = KS_BUF_INIT;
  int rc = 0;
  if (fstat(fd, &cur->st) < 0) {
    rc = ks_fail(ctx, "%s: %s; %s", t->shown, strerror(errno), t->undone);
    goto out;
  }
  if (!S_ISREG(cur->st.st_mode)) {
    rc = ks_fail(ctx, "%s: not a regular file; %s", t->shown, t->undone);
    goto out;
  }
  if (cur->st.st_nlink > 1) {
    rc = ks_fail(ctx, "%s: has %ju hard links, which a rename would split; %s", t->shown,
                 (uintmax_t)cur->st.st_nlink, t->undone);
    goto out;
  }
  /* root may write anything; a file nobody may write is still meant to stay */
  if (!(cur->st.st_mode & 0222)) {
    rc = ks_fail(ctx, "%s: read-only (mode %04o); %s", t->shown,
                 (unsigned)(cur->st.st_mode & 07777), t->undone);
    goto out;
  }
  if (access(t->path, W_OK) < 0) {
    rc = ks_fail(ctx, "%s: not writable (%s); %s", t->shown, strerror(errno), t->undone);
    goto out;
  }
  ks_buf_grow(&text, (size_t)cur->st.st_size);
  for (;;) {
    ks_buf_grow(&text, 1 << 16);
    ssize_t n = read(fd, text.data + text.len, text.cap - text.len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = ks_fail(ctx, "%s: %s; %s", t->shown, strerror(errno), t->undone);
      goto out;
    }
    if (n == 0)
      break;
    text.len += (size_t)n;
  }
  ks_sha256_hex(text.data, text.len, cur->sha);
out:
  ks_buf_release(&text);
  close(fd);
  return rc;
}

static bool valid_hex(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
          (s[n] >= 'A' && s[n] <= 'F')))
      return false;
  return n == KS_HASH_HEX - 1;
}

static bool same_hex(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = *a >= 'A' && *a <= 'F' ? (char)(*a - 'A' + 'a') : *a;
    char y = *b >= 'A' && *b <= 'F' ? (char)(*b - 'A' + 'a') : *b;
    if (x != y)
      return false;
  }
  return *a == *b;
}

static int check_expected(ks_ctx *ctx, const target *t, const current *cur, const char *expect) {
  if (!expect && cur->exists)
    return ks_fail(ctx, "%s: created since it was read; %s", t->shown, t->undone);
  if (expect && !cur->exists)
    return ks_fail(ctx, "%s: deleted since it was read; %s", t->shown, t->undone);
  if (expect && !same_hex(expect, cur->sha))
    return ks_fail(ctx, "%s: changed since it was read; %s", t->shown, t->undone);
  return 0;
}

/* Whether the file is still the one that was hashed, for writers that do not
 * take our lock: same inode, size and times. */
static bool unchanged_since(const target *t, const current *cur) {
  struct stat now;
  if (lstat(t->path, &now) < 0)
    return !cur->exists && errno == ENOENT;
  return cur->exists && now.st_dev == cur->st.st_dev && now.st_ino == cur->st.st_ino &&
         now.st_size == cur->st.st_size && now.st_mtim.tv_sec == cur->st.st_mtim.tv_sec &&
         now.st_mtim.tv_nsec == cur->st.st_mtim.tv_nsec &&
         now.st_ctim.tv_sec == cur->st.st_ctim.tv_sec &&
         now.st_ctim.tv_nsec == cur->st.st_ctim.tv_nsec;
}

/* --- writing ---------------------------------------------------------------- */

static int write_all(int fd, const char *text, size_t len) {
  while (len) {
    ssize_t n = write(fd, text, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    text += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Fills the temporary file and makes it durable, with the original's mode
 * and, where we may, its owner (a change of owner clears set-id bits, so
 * the mode comes after). */
static int fill_temp(ks_ctx *ctx, const target *t, const current *cur, int fd, const char *tmp,
                     const char *text, size_t len) {
  mode_t mode = cur->exists ? cur->st.st_mode & 07777 : 0644 & ~current_umask();
  if (ks_fault(ctx, "safe_write.write")) {
    errno = EIO;
    goto failed;
  }
  if (write_all(fd, text, len) < 0)
    goto failed;
  if (cur->exists && fchown(fd, cur->st.st_uid, cur->st.st_gid) < 0)
    (void)!fchown(fd, (uid_t)-1, cur->st.st_gid); /* not root: keep at least the group */
  if (fchmod(fd, mode) < 0)
    goto failed;
  if (ks_fault(ctx, "safe_write.fsync")) {
    errno = EIO;
    goto failed;
  }
  if (fsync(fd) < 0)
    goto failed;
  return 0;
failed:
  return ks_fail(ctx, "%s: writing %s: %s; not written", t->shown, tmp, strerror(errno));
}

static int sync_dir(ks_ctx *ctx, const target *t) {
  if (ks_fault(ctx, "safe_write.dir_fsync")) {
    errno = EIO;
    goto failed;
  }
  int fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    goto failed;
  /* Some file systems cannot sync a directory and say so; nothing is lost. */
  int rc = fsync(fd) < 0 && errno != EINVAL && errno != EROFS ? -1 : 0;
  int err = errno;
  close(fd);
  errno = err;
  if (!rc)
    return 0;
failed:
  return ks_fail(ctx, "%s: written, but syncing directory %s failed: %s", t->shown, t->dir,
                 strerror(errno));
}

/* Moves the temporary file into place. A file that did not exist is created
 * with link(), which fails rather than replace one that appeared meanwhile. */
static int put_in_place(ks_ctx *ctx, const target *t, const current *cur, const char *tmp) {
  if (!cur->exists) {
    if (link(tmp, t->path) == 0) {
      unlink(tmp);
      return 0;
    }
    if (errno == EEXIST)
      return ks_fail(ctx, "%s: created since it was read; not written", t->shown);
    if (errno != EPERM && errno != ENOSYS && errno != EOPNOTSUPP && errno != EXDEV)
      return ks_fail(ctx, "%s: %s; not written", t->shown, strerror(errno));
    /* a file system without hard links: the check before was the best we can do */
  }
  if (rename(tmp, t->path) < 0)
    return ks_fail(ctx, "%s: renaming %s: %s; not written", t->shown, tmp, strerror(errno));
  return 0;
}

int ks_safe_write(ks_ctx *ctx, const char *path, const char *expect_sha256_hex,
                  const char *text, size_t len) {
  return ks_safe_write_within(ctx, NULL, path, expect_sha256_hex, text, len);
}

int ks_safe_write_within(ks_ctx *ctx, const char *root, const char *path,
                         const char *expect_sha256_hex, const char *text, size_t len) {
  if (expect_sha256_hex && !valid_hex(expect_sha256_hex))
    return ks_fail(ctx, "%s: '%s' is not a SHA-256 in hex; not written", path,
                   expect_sha256_hex);
  target t;
  int rc = target_init(ctx, root, path, "not written", &t);
  if (rc) {
    target_release(&t);
    return rc;
  }
  int lock = -1, fd = -1;
  char *tmp = NULL;
  bool placed = false;
  current cur;
  ks_buf b = KS_BUF_INIT;
  if ((rc = lock_take(ctx, &t, &lock)))
    goto out;
  remove_stale_temps(t.dir, t.stem);
  if ((rc = read_current(ctx, &t, &cur)) || (rc = check_expected(ctx, &t, &cur, expect_sha256_hex)))
    goto out;
  ks_buf_addf(&b, "%s/%s%sXXXXXX", t.dir, t.stem, TEMP_TAG);
  tmp = ks_buf_detach(&b);
  fd = mkstemp(tmp);
  if (fd < 0) {
    rc = ks_fail(ctx, "%s: cannot create a temporary file beside it: %s; not written", path,
                 strerror(errno));
    free(tmp);
    tmp = NULL;
    goto out;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  if ((rc = fill_temp(ctx, &t, &cur, fd, tmp, text, len)))
    goto out;
  int closed = close(fd);
  fd = -1;
  if (closed < 0) {
    rc = ks_fail(ctx, "%s: writing %s: %s; not written", path, tmp, strerror(errno));
    goto out;
  }
  if (ks_fault(ctx, "safe_write.before_rename")) {
    rc = ks_fail(ctx, "%s: injected fault before the rename; not written", path);
    goto out;
  }
  if (!unchanged_since(&t, &cur)) {
    rc = ks_fail(ctx, "%s: changed since it was read; not written", path);
    goto out;
  }
  if ((rc = put_in_place(ctx, &t, &cur, tmp)))
    goto out;
  placed = true;
  rc = sync_dir(ctx, &t);
out:
  if (fd >= 0)
    close(fd);
  if (tmp && !placed)
    unlink(tmp);
  free(tmp);
  if (lock >= 0)
    lock_drop(&t, lock);
  target_release(&t);
  return rc;
}

int ks_file_sha256(ks_ctx *ctx, const char *path, char out_hex[KS_HASH_HEX]) {
  ks_buf text = KS_BUF_INIT;
  int rc = ks_read_file(ctx, path, 0, &text);
  if (!rc)
    ks_sha256_hex(text.data, text.len, out_hex);
  ks_buf_release(&text);
  return rc;
}

/* --- confinement -------------------------------------------------------------- */

/* `path` made absolute against the working directory (malloc'd). */
static char *absolute(const char *path) {
  if (path[0] == '/')
    return ks_xstrdup(path);
  char *cwd = getcwd(NULL, 0);
  if (!cwd)
    return NULL;
  char *out = ks_path_join(cwd, path);
  free(cwd);
  return out;
}

/* Where `path` leads without following its last component: its deepest
 * existing directory resolved, the rest as written (malloc'd; NULL with
 * errno when a directory cannot be read, or the unresolved rest would climb
 * with "..", which no file system resolves through a missing directory). */
static char *resolve_parent(const char *path) {
  char *abs = absolute(path);
  if (!abs)
    return NULL;
  char *out = NULL;
  size_t slash = strlen(abs);
  while (slash > 0 && abs[slash] != '/')
    slash--; /* abs[0] is '/': the loop ends there at the latest */
  for (;;) {
    abs[slash] = '\0';
    char *real = realpath(slash ? abs : "/", NULL);
    int err = errno;
    abs[slash] = '/';
    if (real) {
      bool plain = true; /* the unresolved rest: plain names only */
      for (const char *p = abs + slash; *p && plain;) {
        const char *name = p + 1, *end = strchr(name, '/');
        size_t n = end ? (size_t)(end - name) : strlen(name);
        plain = !((n == 1 && name[0] == '.') || (n == 2 && name[0] == '.' && name[1] == '.'));
        p = name + n;
      }
      if (plain) {
        ks_buf b = KS_BUF_INIT;
        ks_buf_addf(&b, "%s%s", strcmp(real, "/") ? real : "", abs + slash);
        out = ks_buf_detach(&b);
      } else {
        err = EINVAL;
      }
      free(real);
      errno = err;
      break;
    }
    if (err != ENOENT || !slash) {
      errno = err;
      break;
    }
    while (slash > 0 && abs[--slash] != '/')
      continue;
  }
  free(abs);
  return out;
}

static bool below(const char *root, const char *path) {
  size_t n = strlen(root);
  while (n && root[n - 1] == '/')
    n--;
  return !strncmp(path, root, n) && path[n] == '/' && path[n + 1];
}

int ks_safe_write_check_within(ks_ctx *ctx, const char *root, const char *path,
                               char **resolved) {
  if (resolved)
    *resolved = NULL;
  struct stat st;
  bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
  char *to = link ? ks_realpath(path) : resolve_parent(path);
  if (!to)
    return link ? ks_fail(ctx, "%s: a symbolic link that leads nowhere (%s)", path, strerror(errno))
                : ks_fail(ctx, "%s: cannot be resolved (%s)", path, strerror(errno));
  if (!below(root, to)) {
    int rc = link ? ks_fail(ctx, "%s: a symbolic link to %s, outside %s", path, to, root)
                  : ks_fail(ctx, "%s: outside %s (it leads to %s)", path, root, to);
    free(to);
    return rc;
  }
  if (resolved)
    *resolved = to;
  else
    free(to);
  return 0;
}

/* --- removing ----------------------------------------------------------------- */

int ks_safe_remove_within(ks_ctx *ctx, const char *root, const char *path,
                          const char *expect_sha256_hex) {
  if (!valid_hex(expect_sha256_hex))
    return ks_fail(ctx, "%s: '%s' is not a SHA-256 in hex; not removed", path, expect_sha256_hex);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) /* the link is not what was created */
    return ks_fail(ctx, "%s: now a symbolic link; not removed", path);
  target t;
  int rc = target_init(ctx, root, path, "not removed", &t);
  int lock = -1;
  current cur;
  if (rc || (rc = lock_take(ctx, &t, &lock)))
    goto out;
  remove_stale_temps(t.dir, t.stem);
  if ((rc = read_current(ctx, &t, &cur)) || !cur.exists)
    goto out;
  if ((rc = check_expected(ctx, &t, &cur, expect_sha256_hex)))
    goto out;
  if (unlink(t.path) < 0) {
    rc = ks_fail(ctx, "%s: %s; not removed", path, strerror(errno));
    goto out;
  }
  if (sync_dir(ctx, &t))
    rc = ks_fail(ctx, "%s: removed, but syncing its directory failed", path);
out:
  if (lock >= 0)
    lock_drop(&t, lock);
  target_release(&t);
  return rc;
}

/* --- what killed writers left ----------------------------------------------------- */

/* The stem ("." + a file name cut) of one of our lock or temporary files in
 * a directory listing, or 0 when `name` is neither. */
static size_t leftover_stem(const char *name) {
  size_t n = strlen(name), lock = sizeof LOCK_TAG - 1, tag = sizeof TEMP_TAG - 1;
  if (name[0] != '.')
    return 0;
  if (n > lock + 1 && !strcmp(name + n - lock, LOCK_TAG))
    return n - lock;
  if (ks_safe_write_is_temp(name))
    return n - tag - TEMP_RANDOM;
  return 0;
}

/* Takes the lock of `stem` in `dir` without waiting; when no writer holds
 * it, removes that file's temporary files and the lock file (as a holder
 * does: removed while held, so a waiter sees it is gone and tries again). */
static void clean_stem(const char *dir, const char *stem) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, "%s/%s%s", dir, stem, LOCK_TAG);
  char *lock_path = ks_buf_detach(&b);
  int fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EACCES)
    fd = open(lock_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat held, named;
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 &&
      stat(lock_path, &named) == 0 && held.st_dev == named.st_dev &&
      held.st_ino == named.st_ino) {
    remove_stale_temps(dir, stem);
    unlink(lock_path);
  }
  if (fd >= 0)
    close(fd);
  free(lock_path);
}

/* Cleans every stem of `dir` with leftovers, or only `only` when given. */
static void clean_dir(const char *dir, const char *only) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  KS_ARRAY(char *) stems = {0};
  ks_arena a = KS_ARENA_INIT;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = leftover_stem(e->d_name);
    if (!n || (only && (strlen(only) != n || strncmp(only, e->d_name, n))))
      continue;
    bool seen = false;
    for (size_t i = 0; i < stems.len && !seen; i++)
      seen = strlen(stems.items[i]) == n && !strncmp(stems.items[i], e->d_name, n);
    if (!seen)
      *ks_array_push(&a, &stems) = ks_arena_strndup(&a, e->d_name, n);
  }
  closedir(d);
  for (size_t i = 0; i < stems.len; i++)
    clean_stem(dir, stems.items[i]);
  ks_arena_release(&a);
}

void ks_safe_write_clean(const char *path) {
  struct stat st;
  char *real = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? ks_realpath(path) : NULL;
  const char *p = real ? real : path;
  const char *slash = strrchr(p, '/');
  const char *name = slash ? slash + 1 : p;
  char *dir = ks_path_dirname(p);
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b, ".%.*s", NAME_KEEP, name);
  char *stem = ks_buf_detach(&b);
  if (*name)
    clean_dir(dir, stem);
  free(stem);
  free(dir);
  free(real);
}

void ks_safe_write_sweep(const char *dir) { clean_dir(dir, NULL); }
