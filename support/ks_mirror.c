/* The files of a run packed on rank 0 and recreated on the other ranks; see
 * ks_mirror.h for the blob's layout and the guarantees. */
#include "ks_mirror.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_fs.h"
#include "ks_hash.h"

static const char MAGIC[8] = {'K', 'S', 'M', 'I', 'R', 'R', 'O', 'R'};
enum {
  FORMAT_VERSION = 1,
  HEADER_SIZE = 24,              /* magic, version, reserved, manifest length */
  ENTRY_FIXED = 4 + 4 + 8 + 64,  /* path length, mode, size, SHA-256 */
  MAX_PATH_BYTES = 4096,
};
static const char COMPDB[] = "compile_commands.json";
static const char PRIVATE_PREFIX[] = "kernelsmith-mirror-";

/* The extensions a run reads under a directory: what the scan parses and
 * what those files may include. */
static const char *const SOURCE_EXTS[] = {".cu",  ".cuh", ".h",   ".hpp", ".hh",
                                          ".c",   ".cc",  ".cpp", ".cxx", ".inc",
                                          ".inl", ".def", ".cuinc", ".ipp", ".tcc"};

/* A name from a blob or the disk as one printable line: a hostile name with
 * a newline must not split the message. */
static const char *shown(char out[256], const char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n && o < 240; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, 256 - o, "\\x%02x", c);
  }
  if (o >= 240)
    o = (size_t)snprintf(out + 240, 16, "...") + 240;
  out[o] = '\0';
  return out;
}

/* `path` strictly below directory `dir` (both absolute, resolved). */
static bool is_below(const char *path, const char *dir) {
  return ks_path_below(path, dir) != path;
}

static bool is_inside(const char *path, const char *dir) {
  return strcmp(path, dir) == 0 || is_below(path, dir);
}

/* --- packing ------------------------------------------------------------------ */

typedef struct pack_file {
  char *rel;   /* relative to the resolved root (malloc'd) */
  char *path;  /* where rank 0 reads it (malloc'd) */
  unsigned mode;
  size_t size;
} pack_file;

typedef struct pack_state {
  ks_ctx *ctx;
  const char *root; /* resolved */
  bool filter;      /* a walked directory: source extensions only */
  pack_file *files;
  size_t n, cap;
} pack_state;

static bool has_source_ext(const char *path) {
  for (size_t i = 0; i < sizeof SOURCE_EXTS / sizeof *SOURCE_EXTS; i++)
    if (ks_path_has_ext(path, SOURCE_EXTS[i]))
      return true;
  return false;
}

/* Where a walk of `p` starts: its directory resolved and its own name kept,
 * so that a link inside the root to a directory inside the root is packed
 * under the name rank 0's scan will use; the resolved path when that name
 * is not below the root (the root itself, named through a link). Fails when
 * `p` leads outside the root. malloc'd. */
static char *walk_start(pack_state *st, const char *p) {
  char *real = ks_realpath(p);
  if (!real) {
    ks_fail(st->ctx, "%s: cannot read: %s", p, strerror(errno));
    return NULL;
  }
  if (!is_inside(real, st->root)) {
    struct stat lst;
    if (lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode))
      ks_fail(st->ctx, "%s: a symbolic link to %s, outside the root %s", p, real, st->root);
    else
      ks_fail(st->ctx, "%s: outside the root %s (it leads to %s)", p, st->root, real);
    free(real);
    return NULL;
  }
  char *trimmed = ks_xstrdup(p);
  size_t n = strlen(trimmed);
  while (n > 1 && trimmed[n - 1] == '/')
    trimmed[--n] = '\0';
  const char *slash = strrchr(trimmed, '/');
  const char *base = slash ? slash + 1 : trimmed;
  char *out = real;
  if (*base && strcmp(base, ".") && strcmp(base, "..")) {
    char *dir = ks_path_dirname(trimmed);
    char *rdir = ks_realpath(dir);
    char *lex = rdir ? ks_path_join(rdir, base) : NULL;
    if (lex && is_below(lex, st->root)) {
      out = lex;
      free(real);
    } else {
      free(lex);
    }
    free(rdir);
    free(dir);
  }
  free(trimmed);
  return out;
}

/* Adds `path` (below the root as written) after checking that its links
 * stay inside the root and that it is a regular file. */
static int add_file(pack_state *st, const char *path) {
  ks_ctx *ctx = st->ctx;
  const char *rel = ks_path_below(path, st->root);
  if (rel == path)
    return ks_fail(ctx, "%s: outside the root %s", path, st->root);
  char *real = ks_realpath(path);
  if (!real)
    return ks_fail(ctx, "%s: cannot read: %s", path, strerror(errno));
  int rc = 0;
  struct stat sb;
  if (!is_inside(real, st->root))
    rc = ks_fail(ctx, "%s: a symbolic link to %s, outside the root %s", path, real, st->root);
  else if (stat(real, &sb) < 0)
    rc = ks_fail(ctx, "%s: cannot read: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode))
    rc = ks_fail(ctx, "%s: not a regular file", path);
  else if (strlen(rel) >= MAX_PATH_BYTES)
    rc = ks_fail(ctx, "%s: path too long to mirror", path);
  if (!rc) {
    if (st->n == st->cap) {
      st->cap = st->cap ? 2 * st->cap : 64;
      st->files = ks_xrealloc(st->files, st->cap * sizeof *st->files);
    }
    st->files[st->n++] = (pack_file){ks_xstrdup(rel), ks_xstrdup(path),
                                     (unsigned)(sb.st_mode & 07777), (size_t)sb.st_size};
  }
  free(real);
  return rc;
}

static int walk_one(const char *path, void *data) {
  pack_state *st = data;
  if (st->filter && !has_source_ext(path))
    return 0;
  return add_file(st, path) ? 1 : 0;
}

/* A named file (compile_commands.json, an extra): must be a regular file
 * inside the root. */
static int add_named(pack_state *st, const char *p) {
  char *start = walk_start(st, p);
  if (!start)
    return -1;
  int rc = add_file(st, start);
  free(start);
  return rc;
}

static int cmp_rel(const void *a, const void *b) {
  return strcmp(((const pack_file *)a)->rel, ((const pack_file *)b)->rel);
}

static unsigned char *put_u32(unsigned char *p, uint32_t v) {
  for (int i = 3; i >= 0; i--)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--)
    *p++ = (unsigned char)(v >> (8 * i));
  return p;
}

static unsigned char *put_str(unsigned char *p, const char *s) {
  size_t n = strlen(s);
  p = put_u32(p, (uint32_t)n);
  memcpy(p, s, n);
  return p + n;
}

/* Reads `f` straight into its place in the blob: contents are copied once.
 * Its size was taken when it was listed; a different one now means it is
 * being written, and a half-written file must not reach the other ranks. */
static int read_into(ks_ctx *ctx, const pack_file *f, unsigned char *dst) {
  int fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ks_fail(ctx, "%s: cannot read: %s", f->path, strerror(errno));
  int rc = 0;
  struct stat sb;
  if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
    rc = ks_fail(ctx, "%s: cannot read: not a regular file", f->path);
    goto out;
  }
  size_t done = 0;
  while (done < f->size) {
    size_t want = f->size - done > (1u << 30) ? (1u << 30) : f->size - done;
    ssize_t got = read(fd, dst + done, want);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = ks_fail(ctx, "%s: cannot read: %s", f->path, strerror(errno));
      goto out;
    }
    if (got == 0)
      break;
    done += (size_t)got;
  }
  char extra;
  if (done != f->size || (size_t)sb.st_size != f->size || read(fd, &extra, 1) != 0)
    rc = ks_fail(ctx, "%s: changed while it was packed", f->path);
out:
  close(fd);
  return rc;
}

/* The working directory, as the relative paths rank 0 was given mean it. */
static char *current_dir(ks_ctx *ctx) {
  char *cwd = getcwd(NULL, 0);
  if (!cwd)
    ks_fail(ctx, "cannot read the working directory: %s", strerror(errno));
  return cwd;
}

/* `path` made absolute against `cwd` with "." and ".." folded and repeated
 * slashes removed, without touching the disk (malloc'd). */
static char *normalize(const char *cwd, const char *path) {
  char *joined = path[0] == '/' ? ks_xstrdup(path) : ks_path_join(cwd, path);
  size_t n = strlen(joined);
  char *out = ks_xmalloc(n + 2);
  size_t o = 0;
  for (const char *p = joined; *p;) {
    while (*p == '/')
      p++;
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0 || (len == 1 && p[0] == '.')) {
      /* nothing */
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      while (o > 0 && out[o - 1] != '/')
        o--;
      if (o > 0)
        o--; /* the slash before the dropped component */
    } else {
      out[o++] = '/';
      memcpy(out + o, p, len);
      o += len;
    }
    p += len;
  }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  free(joined);
  return out;
}

int ks_mirror_pack(ks_ctx *ctx, const char *root, const char *const *paths, size_t npaths,
                   const char *compdb_dir, const char *const *extra, size_t nextra,
                   ks_buf *out) {
  ks_buf_reset(out);
  pack_state st = {ctx, NULL, false, NULL, 0, 0};
  char *real_root = ks_realpath(root), *cwd = NULL, *given = NULL;
  char (*sha)[KS_HASH_HEX] = NULL;
  int rc = 0;
  if (!real_root) {
    rc = ks_fail(ctx, "%s: cannot read: %s", root, strerror(errno));
    goto out;
  }
  if (!ks_is_dir(real_root)) {
    rc = ks_fail(ctx, "%s: not a directory", root);
    goto out;
  }
  if (strcmp(real_root, "/") == 0) {
    rc = ks_fail(ctx, "%s: the root of the file system cannot be mirrored", root);
    goto out;
  }
  st.root = real_root;
  if (!(cwd = current_dir(ctx))) {
    rc = -1;
    goto out;
  }
  given = normalize(cwd, root);
  for (size_t i = 0; i < npaths && !rc; i++) {
    char *start = walk_start(&st, paths[i]);
    if (!start) {
      rc = -1;
      break;
    }
    st.filter = !ks_is_file(start);
    if (ks_walk(ctx, start, walk_one, &st))
      rc = -1;
    free(start);
  }
  char *root_db = ks_path_join(real_root, COMPDB);
  if (!rc && ks_is_file(root_db))
    rc = add_named(&st, root_db);
  free(root_db);
  if (!rc && compdb_dir) {
    char *db = ks_path_join(compdb_dir, COMPDB);
    rc = add_named(&st, db);
    free(db);
  }
  for (size_t i = 0; i < nextra && !rc; i++)
    rc = add_named(&st, extra[i]);
  if (rc)
    goto out;

  /* One entry per path (a file named twice, a directory inside another),
   * in byte order of the relative path: the same tree, the same blob. */
  if (st.n > 1)
    qsort(st.files, st.n, sizeof *st.files, cmp_rel);
  size_t kept = 0;
  for (size_t i = 0; i < st.n; i++) {
    if (kept && strcmp(st.files[kept - 1].rel, st.files[i].rel) == 0) {
      free(st.files[i].rel);
      free(st.files[i].path);
      continue;
    }
    st.files[kept++] = st.files[i];
  }
  st.n = kept;

  size_t manifest = 3 * 4 + strlen(real_root) + strlen(given) + strlen(cwd) + 8, contents = 0;
  for (size_t i = 0; i < st.n; i++) {
    manifest += ENTRY_FIXED + strlen(st.files[i].rel);
    contents += st.files[i].size;
  }
  size_t total = HEADER_SIZE + manifest + contents;
  if (out->limit && total > out->limit) {
    rc = ks_fail(ctx, "%s: the files to mirror take %zu bytes, more than %zu", root, total,
                 out->limit);
    goto out;
  }
  ks_buf_grow(out, total);
  unsigned char *blob = (unsigned char *)out->data;
  unsigned char *at = blob + HEADER_SIZE + manifest;
  sha = ks_xcalloc(st.n ? st.n : 1, sizeof *sha);
  for (size_t i = 0; i < st.n; i++) {
    if ((rc = read_into(ctx, &st.files[i], at)))
      goto out;
    ks_sha256_hex(at, st.files[i].size, sha[i]);
    at += st.files[i].size;
  }
  unsigned char *p = blob;
  memcpy(p, MAGIC, sizeof MAGIC);
  p = put_u32(p + sizeof MAGIC, FORMAT_VERSION);
  p = put_u32(p, 0);
  p = put_u64(p, manifest);
  p = put_str(p, real_root);
  p = put_str(p, given);
  p = put_str(p, cwd);
  p = put_u64(p, st.n);
  for (size_t i = 0; i < st.n; i++) {
    p = put_str(p, st.files[i].rel);
    p = put_u32(p, st.files[i].mode);
    p = put_u64(p, st.files[i].size);
    memcpy(p, sha[i], 64);
    p += 64;
  }
  out->len = total;
  out->data[total] = '\0';
out:
  if (rc)
    ks_buf_reset(out);
  for (size_t i = 0; i < st.n; i++) {
    free(st.files[i].rel);
    free(st.files[i].path);
  }
  free(st.files);
  free(sha);
  free(real_root);
  free(cwd);
  free(given);
  return rc;
}

/* --- reading a blob ------------------------------------------------------------- */

typedef struct blob_file {
  const char *rel;            /* in the arena */
  unsigned mode;
  size_t size;
  const unsigned char *data;  /* inside the caller's blob */
  char sha[KS_HASH_HEX];
} blob_file;

typedef struct blob {
  const char *root, *root_given, *cwd; /* in the arena */
  blob_file *files;
  size_t n;
} blob;

typedef struct reader {
  ks_ctx *ctx;
  const unsigned char *p;
  size_t end, off; /* the manifest's end; where the next field starts */
} reader;

static int truncated(reader *r, const char *what) {
  return ks_fail(r->ctx, "mirror blob: truncated in the manifest (%s at byte %zu)", what,
                 r->off);
}

static int get_u32(reader *r, const char *what, uint32_t *v) {
  if (r->end - r->off < 4)
    return truncated(r, what);
  *v = 0;
  for (int i = 0; i < 4; i++)
    *v = *v << 8 | r->p[r->off++];
  return 0;
}

static int get_u64(reader *r, const char *what, uint64_t *v) {
  if (r->end - r->off < 8)
    return truncated(r, what);
  *v = 0;
  for (int i = 0; i < 8; i++)
    *v = *v << 8 | r->p[r->off++];
  return 0;
}

/* A string of the manifest; a NUL inside would make the name we check
 * differ from the name a system call sees, so it is refused. */
static int get_str(reader *r, const char *what, ks_arena *arena, const char **out,
                   size_t *len) {
  uint32_t n = 0; /* set on success; gcc -O2 cannot see that */
  if (get_u32(r, what, &n))
    return -1;
  if (r->end - r->off < n)
    return truncated(r, what);
  const char *s = (const char *)r->p + r->off;
  r->off += n;
  if (n >= MAX_PATH_BYTES) {
    char buf[256];
    return ks_fail(r->ctx, "mirror blob: %s \"%s\": longer than %d bytes", what,
                   shown(buf, s, n), MAX_PATH_BYTES);
  }
  if (memchr(s, '\0', n)) {
    char buf[256];
    return ks_fail(r->ctx, "mirror blob: %s \"%s\": holds a NUL byte", what, shown(buf, s, n));
  }
  *out = ks_arena_strndup(arena, s, n);
  *len = n;
  return 0;
}

/* Why a relative path from a blob may not be written below a directory, or
 * NULL when it may. */
static const char *bad_rel(const char *s, size_t n) {
  if (n == 0)
    return "an empty path";
  if (s[0] == '/')
    return "an absolute path";
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j] != '/')
      j++;
    size_t len = j - i;
    if (len == 0)
      return "an empty component";
    if (len == 2 && s[i] == '.' && s[i + 1] == '.')
      return "a path that climbs with \"..\"";
    if (len == 1 && s[i] == '.')
      return "a \".\" component";
    if (j == n - 1)
      return "a trailing slash";
    i = j + 1;
  }
  return NULL;
}

static bool is_hex64(const unsigned char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

static int cmp_file_ptr(const void *a, const void *b) {
  return strcmp((*(blob_file *const *)a)->rel, (*(blob_file *const *)b)->rel);
}

static int check_unique(ks_ctx *ctx, blob *b) {
  if (b->n < 2)
    return 0;
  blob_file **sorted = ks_xmalloc(b->n * sizeof *sorted);
  for (size_t i = 0; i < b->n; i++)
    sorted[i] = &b->files[i];
  qsort(sorted, b->n, sizeof *sorted, cmp_file_ptr);
  int rc = 0;
  for (size_t i = 1; i < b->n && !rc; i++)
    if (strcmp(sorted[i - 1]->rel, sorted[i]->rel) == 0) {
      char buf[256];
      rc = ks_fail(ctx, "mirror blob: entry \"%s\": duplicate path",
                   shown(buf, sorted[i]->rel, strlen(sorted[i]->rel)));
    }
  free(sorted);
  return rc;
}

/* Reads and checks the whole blob: nothing is written before this passes. */
static int parse_blob(ks_ctx *ctx, const void *data, size_t len, ks_arena *arena, blob *b) {
  memset(b, 0, sizeof *b);
  const unsigned char *p = data;
  if (len < HEADER_SIZE)
    return ks_fail(ctx, "mirror blob: truncated (%zu bytes, the header alone takes %d)", len,
                   HEADER_SIZE);
  if (memcmp(p, MAGIC, sizeof MAGIC))
    return ks_fail(ctx, "mirror blob: not a mirror blob (bad magic)");
  reader r = {ctx, p, HEADER_SIZE, sizeof MAGIC};
  uint32_t version = 0, reserved = 0;
  uint64_t manifest = 0, count = 0;
  get_u32(&r, "version", &version);
  get_u32(&r, "reserved", &reserved);
  get_u64(&r, "manifest length", &manifest);
  if (version != FORMAT_VERSION)
    return ks_fail(ctx, "mirror blob: format version %u, this build reads %d", version,
                   FORMAT_VERSION);
  if (manifest > len - HEADER_SIZE)
    return ks_fail(ctx, "mirror blob: truncated (a manifest of %llu bytes, %zu after the "
                        "header)", (unsigned long long)manifest, len - HEADER_SIZE);
  r.end = HEADER_SIZE + (size_t)manifest;
  size_t n;
  if (get_str(&r, "root", arena, &b->root, &n) ||
      get_str(&r, "given root", arena, &b->root_given, &n) ||
      get_str(&r, "cwd", arena, &b->cwd, &n) || get_u64(&r, "file count", &count))
    return -1;
  if (b->root[0] != '/' || b->root_given[0] != '/' || b->cwd[0] != '/' ||
      strcmp(b->root, "/") == 0)
    return ks_fail(ctx, "mirror blob: rank 0's root or cwd is not an absolute path");
  if (count > (r.end - r.off) / ENTRY_FIXED)
    return ks_fail(ctx, "mirror blob: truncated in the manifest (%llu files announced)",
                   (unsigned long long)count);
  b->n = (size_t)count;
  b->files = ks_arena_alloc(arena, (b->n ? b->n : 1) * sizeof *b->files);
  for (size_t i = 0; i < b->n; i++) {
    blob_file *f = &b->files[i];
    uint32_t mode;
    uint64_t size;
    char buf[256];
    if (get_str(&r, "path", arena, &f->rel, &n))
      return -1;
    const char *why = bad_rel(f->rel, n);
    if (why)
      return ks_fail(ctx, "mirror blob: entry \"%s\": %s", shown(buf, f->rel, n), why);
    if (get_u32(&r, "mode", &mode) || get_u64(&r, "size", &size))
      return -1;
    if (r.end - r.off < 64)
      return truncated(&r, "SHA-256");
    if (!is_hex64(p + r.off))
      return ks_fail(ctx, "mirror blob: entry \"%s\": its SHA-256 is not 64 hex digits",
                     shown(buf, f->rel, n));
    memcpy(f->sha, p + r.off, 64);
    f->sha[64] = '\0';
    r.off += 64;
    f->mode = mode;
    if (size > SIZE_MAX) /* a 32-bit host */
      return ks_fail(ctx, "mirror blob: entry \"%s\": too large", shown(buf, f->rel, n));
    f->size = (size_t)size;
  }
  if (r.off != r.end)
    return ks_fail(ctx, "mirror blob: %zu bytes left in the manifest after the last entry",
                   r.end - r.off);
  if (check_unique(ctx, b))
    return -1;
  /* Contents, checked in order against their sizes and hashes: a size that
   * is off by one shows as the hash of the entry it belongs to. */
  size_t at = r.end;
  for (size_t i = 0; i < b->n; i++) {
    blob_file *f = &b->files[i];
    char buf[256], hex[KS_HASH_HEX];
    if (f->size > len - at)
      return ks_fail(ctx, "mirror blob: truncated: entry \"%s\" needs %zu bytes, %zu are left",
                     shown(buf, f->rel, strlen(f->rel)), f->size, len - at);
    f->data = p + at;
    ks_sha256_hex(f->data, f->size, hex);
    if (strcmp(hex, f->sha))
      return ks_fail(ctx, "mirror blob: entry \"%s\": contents do not match its size and "
                          "SHA-256", shown(buf, f->rel, strlen(f->rel)));
    at += f->size;
  }
  if (at != len)
    return ks_fail(ctx, "mirror blob: %zu bytes after the last file (the sizes do not add up)",
                   len - at);
  return 0;
}

int ks_mirror_list(ks_ctx *ctx, const void *data, size_t len, ks_arena *arena,
                   ks_strings *out) {
  memset(out, 0, sizeof *out);
  blob b;
  if (parse_blob(ctx, data, len, arena, &b))
    return -1;
  for (size_t i = 0; i < b.n; i++)
    *ks_array_push(arena, out) = b.files[i].rel;
  return 0;
}

/* --- unpacking ------------------------------------------------------------------ */

/* True when `path` here is a regular file with this size and SHA-256. The
 * file is hashed through a mapping: captures can be hundreds of MB. */
static bool same_file(const char *path, const blob_file *f) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat sb;
  bool same = false;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (size_t)sb.st_size == f->size) {
    char hex[KS_HASH_HEX];
    if (f->size == 0) {
      ks_sha256_hex("", 0, hex);
      same = strcmp(hex, f->sha) == 0;
    } else {
      void *map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        ks_sha256_hex(map, f->size, hex);
        same = strcmp(hex, f->sha) == 0;
        munmap(map, f->size);
      }
    }
  }
  close(fd);
  return same;
}

static bool usable_in_place(ks_ctx *ctx, const blob *b) {
  /* Tests of a host without the project, on one host. */
  const char *copy = getenv("KERNELSMITH_MIRROR_COPY");
  if (copy && *copy && strcmp(copy, "0"))
    return false;
  if (!ks_is_dir(b->root))
    return false;
  for (size_t i = 0; i < b->n; i++) {
    char *path = ks_path_join(b->root, b->files[i].rel);
    bool same = same_file(path, &b->files[i]);
    if (!same)
      ks_debug(ctx, "mirror: %s differs from rank 0's, copying the files", path);
    free(path);
    if (!same)
      return false;
  }
  return true;
}

static bool is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '=' || c == '"' || c == '\'' || c == ',' ||
         c == ':' || c == ';' || c == '@';
}

/* Whether an occurrence of a root at s[i] begins a path: the start, after a
 * separator, or right after a flag (`-I/root/include`, `-isystem/root`);
 * not inside a longer path (`/x/root`). */
static bool path_begins(const char *s, size_t i) {
  if (i == 0 || is_sep(s[i - 1]))
    return true;
  size_t k = i;
  while (k > 0 && !is_sep(s[k - 1]))
    k--;
  if (s[k] != '-')
    return false;
  for (size_t j = k; j < i; j++)
    if (s[j] == '/')
      return false;
  return true;
}

/* `s` with every rank-0 root that begins a path (only at the start when
 * !anywhere) and ends at a '/', a separator or the end replaced by `to`;
 * NULL when nothing changes. `from` is sorted longest first. */
static char *rewrite(const char *s, const char *const *from, size_t nfrom, const char *to,
                     bool anywhere) {
  ks_buf b = KS_BUF_INIT;
  bool changed = false;
  for (size_t i = 0; s[i];) {
    size_t hit = 0;
    if (anywhere ? path_begins(s, i) : i == 0)
      for (size_t k = 0; k < nfrom && !hit; k++) {
        size_t n = strlen(from[k]);
        if (strncmp(s + i, from[k], n))
          continue;
        char after = s[i + n];
        if (after == '\0' || after == '/' || is_sep(after))
          hit = n;
      }
    if (hit) {
      ks_buf_adds(&b, to);
      i += hit;
      changed = true;
    } else {
      ks_buf_addc(&b, s[i++]);
    }
  }
  if (!changed) {
    ks_buf_release(&b);
    return NULL;
  }
  return ks_buf_detach(&b);
}

static void rewrite_item(cJSON *item, const char *const *from, size_t nfrom, const char *to,
                         bool anywhere) {
  if (!cJSON_IsString(item))
    return;
  char *s = rewrite(item->valuestring, from, nfrom, to, anywhere);
  if (s) {
    cJSON_SetValuestring(item, s);
    free(s);
  }
}

/* compile_commands.json with rank 0's root moved to `to`, so that libclang
 * finds the copy's sources and include directories (malloc'd; NULL when the
 * file is not a compilation database: it is then written as it came). */
static char *rewrite_compdb(ks_ctx *ctx, const blob *b, const blob_file *f, const char *to) {
  cJSON *db = cJSON_ParseWithLength((const char *)f->data, f->size);
  if (!cJSON_IsArray(db)) {
    ks_debug(ctx, "mirror: %s is not a JSON array; copied as it is", f->rel);
    cJSON_Delete(db);
    return NULL;
  }
  const char *from[2] = {b->root, b->root_given};
  size_t nfrom = strcmp(b->root, b->root_given) ? 2 : 1;
  if (nfrom == 2 && strlen(from[1]) > strlen(from[0])) {
    from[0] = b->root_given;
    from[1] = b->root;
  }
  cJSON *entry;
  cJSON_ArrayForEach(entry, db) {
    rewrite_item(cJSON_GetObjectItemCaseSensitive(entry, "directory"), from, nfrom, to, false);
    rewrite_item(cJSON_GetObjectItemCaseSensitive(entry, "file"), from, nfrom, to, false);
    rewrite_item(cJSON_GetObjectItemCaseSensitive(entry, "output"), from, nfrom, to, false);
    rewrite_item(cJSON_GetObjectItemCaseSensitive(entry, "command"), from, nfrom, to, true);
    cJSON *arg;
    cJSON *args = cJSON_GetObjectItemCaseSensitive(entry, "arguments");
    if (cJSON_IsArray(args))
      cJSON_ArrayForEach(arg, args) rewrite_item(arg, from, nfrom, to, true);
  }
  char *text = cJSON_Print(db);
  cJSON_Delete(db);
  return text;
}

static int write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Creates `rel` (checked by bad_rel) below the directory `top_fd`: every
 * directory opened with O_NOFOLLOW, the file created with O_EXCL, so that
 * nothing, not even a link planted meanwhile, leads the write elsewhere. */
static int write_below(ks_ctx *ctx, int top_fd, const char *rel, unsigned mode, const void *data,
                       size_t n) {
  char *path = ks_xstrdup(rel);
  int dir = dup(top_fd), rc = 0;
  char *comp = path;
  for (char *slash; dir >= 0 && (slash = strchr(comp, '/')); comp = slash + 1) {
    *slash = '\0';
    if (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST) {
      rc = ks_fail(ctx, "mirror: cannot create the directory %s: %s", path, strerror(errno));
      break;
    }
    int next = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0)
      rc = ks_fail(ctx, "mirror: cannot enter %s: %s", path, strerror(errno));
    close(dir);
    dir = next;
    *slash = '/';
    if (rc)
      break;
  }
  if (!rc && dir < 0)
    rc = ks_fail(ctx, "mirror: cannot open the private directory: %s", strerror(errno));
  if (!rc) {
    mode_t m = (mode & 0111) ? 0755 : 0644;
    int fd = openat(dir, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, m);
    if (fd < 0) {
      rc = ks_fail(ctx, "mirror: cannot create %s: %s", rel, strerror(errno));
    } else {
      if (write_all(fd, data, n))
        rc = ks_fail(ctx, "mirror: cannot write %s: %s", rel, strerror(errno));
      if (close(fd) && !rc)
        rc = ks_fail(ctx, "mirror: cannot write %s: %s", rel, strerror(errno));
    }
  }
  if (dir >= 0)
    close(dir);
  free(path);
  return rc;
}

static int remove_private(ks_ctx *ctx, const char *dir) {
  const char *base = strrchr(dir, '/');
  /* Only ever a directory this module made. */
  if (!base || strncmp(base + 1, PRIVATE_PREFIX, sizeof PRIVATE_PREFIX - 1))
    return ks_fail(ctx, "%s: not a mirror's private directory; not removed", dir);
  return ks_remove_tree(ctx, dir);
}

static int make_copy(ks_ctx *ctx, const blob *b, ks_arena *arena, ks_mirror *out) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp)
    tmp = "/tmp";
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s/%sXXXXXX", tmp, PRIVATE_PREFIX) >= (int)sizeof dir)
    return ks_fail(ctx, "mirror: TMPDIR %s is too long", tmp);
  if (!mkdtemp(dir))
    return ks_fail(ctx, "mirror: cannot create a private directory in %s: %s", tmp,
                   strerror(errno));
  /* libclang and the store see resolved paths; TMPDIR may be a link. */
  char *real = ks_realpath(dir);
  const char *root = ks_arena_strdup(arena, real ? real : dir);
  free(real);
  int rc = 0;
  int top = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0)
    rc = ks_fail(ctx, "mirror: cannot open %s: %s", root, strerror(errno));
  for (size_t i = 0; i < b->n && !rc; i++) {
    const blob_file *f = &b->files[i];
    const char *base = strrchr(f->rel, '/');
    char *text = strcmp(base ? base + 1 : f->rel, COMPDB) == 0
                     ? rewrite_compdb(ctx, b, f, root) : NULL;
    rc = text ? write_below(ctx, top, f->rel, f->mode, text, strlen(text))
              : write_below(ctx, top, f->rel, f->mode, f->data, f->size);
    free(text);
  }
  if (top >= 0)
    close(top);
  if (rc) {
    char why[sizeof ctx->error];
    snprintf(why, sizeof why, "%s", ctx->error);
    remove_private(ctx, root);
    return ks_fail(ctx, "%s", why);
  }
  out->root = root;
  out->copied = true;
  return 0;
}

int ks_mirror_unpack(ks_ctx *ctx, const void *data, size_t len, ks_arena *arena,
                     ks_mirror *out) {
  memset(out, 0, sizeof *out);
  blob b;
  if (parse_blob(ctx, data, len, arena, &b))
    return -1;
  if (usable_in_place(ctx, &b)) {
    out->root = b.root;
    out->copied = false;
  } else if (make_copy(ctx, &b, arena, out)) {
    return -1;
  }
  out->nfiles = b.n;
  out->rank0_root = b.root;
  out->rank0_root_given = b.root_given;
  out->rank0_cwd = b.cwd;
  return 0;
}

const char *ks_mirror_map(ks_ctx *ctx, const ks_mirror *m, const char *rank0_path,
                          ks_arena *arena) {
  char *abs = normalize(m->rank0_cwd, rank0_path);
  const char *roots[2] = {m->rank0_root, m->rank0_root_given};
  const char *result = NULL;
  for (int k = 0; k < 2 && !result; k++) {
    if (strcmp(abs, roots[k]) == 0)
      result = ks_arena_strdup(arena, m->root);
    else if (is_below(abs, roots[k]))
      result = ks_arena_printf(arena, "%s/%s", m->root, ks_path_below(abs, roots[k]));
  }
  if (!result)
    ks_fail(ctx, "%s: outside rank 0's root %s; not mirrored", rank0_path, m->rank0_root);
  free(abs);
  return result;
}

int ks_mirror_remove(ks_ctx *ctx, ks_mirror *m) {
  if (!m->copied)
    return 0;
  int rc = remove_private(ctx, m->root);
  if (!rc)
    m->copied = false;
  return rc;
}
