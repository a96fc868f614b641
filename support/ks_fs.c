/* File reading and deterministic tree walks. */
#include "ks_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_alloc.h"

int ks_write_file_whole(ks_ctx *ctx, const char *path, ks_write_fn write, const void *arg) {
  char *tmp = ks_xmalloc(strlen(path) + 32);
  sprintf(tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  int rc = 0;
  if (!f) {
    rc = ks_fail(ctx, "cannot write %s: %s", tmp, strerror(errno));
  } else {
    rc = write(ctx, f, arg);
    if (fclose(f) && !rc)
      rc = ks_fail(ctx, "cannot write %s: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, path))
      rc = ks_fail(ctx, "cannot write %s: %s", path, strerror(errno));
    if (rc)
      unlink(tmp);
  }
  free(tmp);
  return rc;
}

int ks_read_file(ks_ctx *ctx, const char *path, size_t max_bytes, ks_buf *out) {
  ks_buf_reset(out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ks_fail(ctx, "%s: cannot read: %s", path, strerror(errno));
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) < 0) {
    rc = ks_fail(ctx, "%s: cannot read: %s", path, strerror(errno));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = ks_fail(ctx, "%s: not a regular file", path);
    goto out;
  }
  if (max_bytes && (size_t)st.st_size > max_bytes) {
    rc = ks_fail(ctx, "%s: file is larger than %zu bytes", path, max_bytes);
    goto out;
  }
  ks_buf_grow(out, (size_t)st.st_size);
  for (;;) {
    ks_buf_grow(out, 4096);
    ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      rc = ks_fail(ctx, "%s: cannot read: %s", path, strerror(errno));
      goto out;
    }
    if (n == 0)
      break;
    out->len += (size_t)n;
    out->data[out->len] = '\0';
    if (max_bytes && out->len > max_bytes) {
      rc = ks_fail(ctx, "%s: file is larger than %zu bytes", path, max_bytes);
      goto out;
    }
  }
out:
  close(fd);
  return rc;
}

int ks_mkdir_p(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = path + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(path, 0755) && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

bool ks_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool ks_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *ks_realpath(const char *path) { return realpath(path, NULL); }

const char *ks_path_below(const char *path, const char *base) {
  size_t n = strlen(base);
  while (n > 1 && base[n - 1] == '/')
    n--;
  if (strncmp(path, base, n) == 0 && path[n] == '/')
    return path + n + 1;
  return path;
}

bool ks_path_has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  return n > e && strcmp(path + n - e, ext) == 0;
}

char *ks_path_join(const char *dir, const char *name) {
  size_t d = strlen(dir);
  while (d > 1 && dir[d - 1] == '/')
    d--;
  size_t n = strlen(name);
  char *out = ks_xmalloc(d + n + 2);
  memcpy(out, dir, d);
  out[d] = '/';
  memcpy(out + d + 1, name, n + 1);
  return out;
}

char *ks_path_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return ks_xstrdup(".");
  if (slash == path)
    return ks_xstrdup("/");
  return ks_xstrndup(path, (size_t)(slash - path));
}

/* Directories already entered, by device and inode, so that a symlink loop
 * cannot make the walk endless. */
typedef struct walk_state {
  ks_ctx *ctx;
  ks_walk_fn fn;
  void *data;
  struct { dev_t dev; ino_t ino; } *seen;
  size_t nseen, capseen;
} walk_state;

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(walk_state *w, const char *dir, const struct stat *st) {
  for (size_t i = 0; i < w->nseen; i++)
    if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
      return 0;
  if (w->nseen == w->capseen) {
    w->capseen = w->capseen ? w->capseen * 2 : 16;
    w->seen = ks_xrealloc(w->seen, w->capseen * sizeof *w->seen);
  }
  w->seen[w->nseen].dev = st->st_dev;
  w->seen[w->nseen].ino = st->st_ino;
  w->nseen++;

  DIR *d = opendir(dir);
  if (!d) {
    ks_warn(w->ctx, "%s: %s (skipped)", dir, strerror(errno));
    return 0;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue; /* hidden files, ".", "..", .git, .kernelsmith */
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      names = ks_xrealloc(names, cap * sizeof *names);
    }
    names[n++] = ks_xstrdup(e->d_name);
  }
  closedir(d);
  if (n > 1)
    qsort(names, n, sizeof *names, cmp_names);

  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char *path = ks_path_join(dir, names[i]);
    struct stat cst;
    if (!rc && stat(path, &cst) == 0) {
      if (S_ISDIR(cst.st_mode))
        rc = walk_dir(w, path, &cst);
      else if (S_ISREG(cst.st_mode))
        rc = w->fn(path, w->data);
    }
    free(path);
    free(names[i]);
  }
  free(names);
  return rc;
}

int ks_walk(ks_ctx *ctx, const char *root, ks_walk_fn fn, void *data) {
  struct stat st;
  if (stat(root, &st) < 0)
    return ks_fail(ctx, "%s: %s", root, strerror(errno));
  if (S_ISREG(st.st_mode))
    return fn(root, data);
  if (!S_ISDIR(st.st_mode))
    return ks_fail(ctx, "%s: not a file or directory", root);
  walk_state w = {ctx, fn, data, NULL, 0, 0};
  int rc = walk_dir(&w, root, &st);
  free(w.seen);
  return rc;
}

/* Everything inside the directory `fd`, links removed as links. */
static int remove_inside(int fd) {
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = -1;
      continue;
    }
    if (S_ISDIR(sb.st_mode)) {
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0 || remove_inside(sub) || unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR))
        rc = -1;
    } else if (unlinkat(dirfd(d), e->d_name, 0)) {
      rc = -1;
    }
  }
  closedir(d);
  return rc;
}

int ks_remove_tree(ks_ctx *ctx, const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    return ks_fail(ctx, "%s: cannot remove: %s", dir, strerror(errno));
  }
  if (remove_inside(fd) || rmdir(dir))
    return ks_fail(ctx, "%s: cannot remove it all: %s", dir, strerror(errno));
  return 0;
}
