/* Unit tests of support/ks_safe_write: replacement keeps mode and bytes,
 * refusals leave the file alone and name it, injected faults leave the
 * original whole and no temporary file, concurrent writers lose no update,
 * a writer killed with -9 at random moments never leaves a partial file,
 * confined writes and removals do not follow links out of their root, and
 * what a killed writer leaves (lock, temporary file) is removed, a live
 * writer's never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_safe_write.h"

typedef struct fixture {
  char dir[64];
  char path[128]; /* dir/kernel.cu */
  ks_ctx ctx;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/ks-safe-XXXXXX");
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->path, sizeof f->path, "%s/kernel.cu", f->dir);
  ks_ctx_init(&f->ctx, "test");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", f->dir, f->dir);
  int rc = system(cmd);
  ks_ctx_release(&f->ctx);
  free(f);
  return rc;
}

static void put(const char *path, const char *text, mode_t mode) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
  assert_int_equal(fclose(fp), 0);
  assert_int_equal(chmod(path, mode), 0);
}

static char *get(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  ks_buf b = KS_BUF_INIT;
  char chunk[1 << 16];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, fp)))
    ks_buf_add(&b, chunk, n);
  fclose(fp);
  if (len)
    *len = b.len;
  return ks_buf_detach(&b);
}

static void assert_contents(const char *path, const char *text) {
  size_t len;
  char *got = get(path, &len);
  assert_non_null(got);
  assert_int_equal(len, strlen(text));
  assert_memory_equal(got, text, len);
  free(got);
}

/* The directory's entries, sorted, comma-separated (static buffer). */
static const char *entries(const char *dir) {
  static char out[4096];
  struct dirent **list;
  int n = scandir(dir, &list, NULL, alphasort);
  assert_true(n >= 0);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
      if (out[0])
        strncat(out, ",", sizeof out - strlen(out) - 1);
      strncat(out, list[i]->d_name, sizeof out - strlen(out) - 1);
    }
    free(list[i]);
  }
  free(list);
  return out;
}

static void hash_of(fixture *f, char hex[KS_HASH_HEX]) {
  assert_int_equal(ks_file_sha256(&f->ctx, f->path, hex), 0);
}

static void replaces_and_keeps_mode_and_bytes(void **state) {
  fixture *f = *state;
  put(f->path, "int a;\r\n", 0755);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  const char *text = "int a;\r\nint b;\r\nno newline at the end";
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, text, strlen(text)), 0);
  assert_contents(f->path, text);
  struct stat st;
  assert_int_equal(stat(f->path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0755);
  assert_string_equal(entries(f->dir), "kernel.cu");
  /* the hash of what we wrote is what the next write expects */
  char want[KS_HASH_HEX];
  ks_sha256_hex(text, strlen(text), want);
  hash_of(f, hex);
  assert_string_equal(hex, want);
  chmod(f->path, 0640);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "", 0), 0);
  assert_contents(f->path, "");
  assert_int_equal(stat(f->path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0640);
}

static void new_file_takes_0644_minus_umask(void **state) {
  fixture *f = *state;
  mode_t old = umask(022);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, NULL, "x\n", 2), 0);
  struct stat st;
  assert_int_equal(stat(f->path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0644);
  assert_contents(f->path, "x\n");
  char other[160];
  snprintf(other, sizeof other, "%s/other.cu", f->dir);
  umask(077);
  assert_int_equal(ks_safe_write(&f->ctx, other, NULL, "y\n", 2), 0);
  assert_int_equal(stat(other, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  umask(old);
  assert_string_equal(entries(f->dir), "kernel.cu,other.cu");
}

static void refuses_a_changed_file(void **state) {
  fixture *f = *state;
  put(f->path, "old\n", 0644);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  put(f->path, "edited by the user\n", 0644);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "new\n", 4), -1);
  char want[256];
  snprintf(want, sizeof want, "%s: changed since it was read; not written", f->path);
  assert_string_equal(f->ctx.error, want);
  assert_contents(f->path, "edited by the user\n");
  assert_string_equal(entries(f->dir), "kernel.cu");
  /* upper-case hex is the same hash */
  hash_of(f, hex);
  for (char *p = hex; *p; p++)
    if (*p >= 'a' && *p <= 'f')
      *p = (char)(*p - 'a' + 'A');
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "new\n", 4), 0);
  assert_contents(f->path, "new\n");
  /* not a hash at all */
  assert_int_equal(ks_safe_write(&f->ctx, f->path, "abc", "x", 1), -1);
  assert_non_null(strstr(f->ctx.error, f->path));
  assert_contents(f->path, "new\n");
}

static void null_hash_refuses_an_existing_file(void **state) {
  fixture *f = *state;
  put(f->path, "mine\n", 0644);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, NULL, "new\n", 4), -1);
  assert_non_null(strstr(f->ctx.error, f->path));
  assert_non_null(strstr(f->ctx.error, "not written"));
  assert_contents(f->path, "mine\n");
  assert_string_equal(entries(f->dir), "kernel.cu");
  /* and a hash for a file that is gone */
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  unlink(f->path);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "new\n", 4), -1);
  assert_non_null(strstr(f->ctx.error, "deleted since it was read"));
  assert_string_equal(entries(f->dir), "");
}

/* Each fault site before the rename leaves the original as it was and
 * nothing beside it; a fault after the rename fails with the new text in. */
static void faults_leave_the_original(void **state) {
  fixture *f = *state;
  const char *sites[] = {"safe_write.lock", "safe_write.write", "safe_write.fsync",
                         "safe_write.before_rename"};
  put(f->path, "original\r\n", 0750);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  for (size_t i = 0; i < sizeof sites / sizeof sites[0]; i++) {
    char spec[64];
    snprintf(spec, sizeof spec, "%s:1", sites[i]);
    assert_int_equal(ks_ctx_set_faults(&f->ctx, spec), 0);
    assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "replacement\n", 12), -1);
    assert_non_null(strstr(f->ctx.error, f->path));
    assert_contents(f->path, "original\r\n");
    assert_string_equal(entries(f->dir), "kernel.cu");
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0750);
    /* a new file under the same fault is not created */
    char other[160];
    snprintf(other, sizeof other, "%s/new.cu", f->dir);
    assert_int_equal(ks_ctx_set_faults(&f->ctx, spec), 0);
    assert_int_equal(ks_safe_write(&f->ctx, other, NULL, "x\n", 2), -1);
    assert_string_equal(entries(f->dir), "kernel.cu");
  }
  assert_int_equal(ks_ctx_set_faults(&f->ctx, "safe_write.dir_fsync:1"), 0);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "replacement\n", 12), -1);
  assert_non_null(strstr(f->ctx.error, "written, but"));
  assert_contents(f->path, "replacement\n");
  assert_string_equal(entries(f->dir), "kernel.cu");
  assert_int_equal(ks_ctx_set_faults(&f->ctx, ""), 0);
}

static void refuses_links_and_read_only_files(void **state) {
  fixture *f = *state;
  char hex[KS_HASH_HEX];
  put(f->path, "shared\n", 0644);
  char twin[160];
  snprintf(twin, sizeof twin, "%s/twin.cu", f->dir);
  assert_int_equal(link(f->path, twin), 0);
  hash_of(f, hex);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "new\n", 4), -1);
  assert_non_null(strstr(f->ctx.error, "hard links"));
  assert_contents(twin, "shared\n");
  unlink(twin);
  chmod(f->path, 0444);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "new\n", 4), -1);
  assert_non_null(strstr(f->ctx.error, "read-only"));
  assert_contents(f->path, "shared\n");
  assert_string_equal(entries(f->dir), "kernel.cu");
  char sub[160];
  snprintf(sub, sizeof sub, "%s/sub", f->dir);
  mkdir(sub, 0755);
  assert_int_equal(ks_safe_write(&f->ctx, sub, NULL, "x", 1), -1);
  assert_non_null(strstr(f->ctx.error, sub));
  rmdir(sub);
  snprintf(sub, sizeof sub, "%s/missing/k.cu", f->dir);
  assert_int_equal(ks_safe_write(&f->ctx, sub, NULL, "x", 1), -1);
  assert_non_null(strstr(f->ctx.error, sub));
}

/* Writing through a symbolic link replaces its target and keeps the link. */
static void follows_symbolic_links(void **state) {
  fixture *f = *state;
  put(f->path, "target\n", 0600);
  char link_path[160];
  snprintf(link_path, sizeof link_path, "%s/alias.cu", f->dir);
  assert_int_equal(symlink("kernel.cu", link_path), 0);
  char hex[KS_HASH_HEX];
  assert_int_equal(ks_file_sha256(&f->ctx, link_path, hex), 0);
  assert_int_equal(ks_safe_write(&f->ctx, link_path, hex, "via link\n", 9), 0);
  struct stat st;
  assert_int_equal(lstat(link_path, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  assert_contents(f->path, "via link\n");
  assert_int_equal(stat(f->path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_string_equal(entries(f->dir), "alias.cu,kernel.cu");
  unlink(f->path);
  assert_int_equal(ks_safe_write(&f->ctx, link_path, NULL, "x", 1), -1);
  assert_non_null(strstr(f->ctx.error, link_path));
}

/* A killed writer's temporary files are recognizable and the next write of
 * the same file removes them; other files' are left alone. */
static void stale_temps_are_removed(void **state) {
  fixture *f = *state;
  assert_true(ks_safe_write_is_temp(".kernel.cu.kernelsmith-tmp.Ab3xYz"));
  assert_false(ks_safe_write_is_temp("kernel.cu.kernelsmith-tmp.Ab3xYz"));
  assert_false(ks_safe_write_is_temp(".kernel.cu.kernelsmith-tmp.Ab3xY"));
  assert_false(ks_safe_write_is_temp(".kernel.cu.kernelsmith-tmp.Ab3-Yz"));
  assert_false(ks_safe_write_is_temp(".kernelsmith-tmp.Ab3xYz"));
  char p[192];
  put(f->path, "v1\n", 0644);
  snprintf(p, sizeof p, "%s/.kernel.cu.kernelsmith-tmp.Ab3xYz", f->dir);
  put(p, "half a fi", 0600);
  snprintf(p, sizeof p, "%s/.other.cu.kernelsmith-tmp.Ab3xYz", f->dir);
  put(p, "someone else's", 0600);
  snprintf(p, sizeof p, "%s/.kernel.cu.kernelsmith-tmp.notours", f->dir);
  put(p, "not our pattern", 0600);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "v2\n", 3), 0);
  assert_string_equal(entries(f->dir), ".kernel.cu.kernelsmith-tmp.notours,"
                                       ".other.cu.kernelsmith-tmp.Ab3xYz,kernel.cu");
}

static void file_sha256(void **state) {
  fixture *f = *state;
  put(f->path, "abc", 0644);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  unlink(f->path);
  assert_int_equal(ks_file_sha256(&f->ctx, f->path, hex), -1);
  assert_non_null(strstr(f->ctx.error, f->path));
}

/* Writers in several processes increment a counter in the file, each
 * reading it, then writing with the hash it read, retrying on refusal:
 * with the lock held across check and rename, no increment is lost. */
static void concurrent_writers_lose_nothing(void **state) {
  fixture *f = *state;
  enum { WRITERS = 4, EACH = 25 };
  put(f->path, "count 0\n", 0644);
  pid_t pids[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w])
      continue;
    alarm(60);
    ks_ctx ctx;
    ks_ctx_init(&ctx, "writer");
    for (int done = 0; done < EACH;) {
      char hex[KS_HASH_HEX], *text = get(f->path, NULL);
      int count = 0;
      if (!text || sscanf(text, "count %d", &count) != 1)
        _exit(2);
      ks_sha256_hex(text, strlen(text), hex);
      free(text);
      char next[64];
      int len = snprintf(next, sizeof next, "count %d\n", count + 1);
      if (ks_safe_write(&ctx, f->path, hex, next, (size_t)len) == 0)
        done++;
      else if (!strstr(ctx.error, "changed since it was read"))
        _exit(3);
    }
    _exit(0);
  }
  for (int w = 0; w < WRITERS; w++) {
    int status;
    assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  char want[64];
  snprintf(want, sizeof want, "count %d\n", WRITERS * EACH);
  assert_contents(f->path, want);
  assert_string_equal(entries(f->dir), "kernel.cu");
}

/* A writer replacing a large file over and over is killed with -9 at random
 * moments. The file is always one of the two versions, whole, both to readers
 * while it writes and after the kill. A killed
 * writer may leave its temporary file (.kernel.cu.kernelsmith-tmp.XXXXXX;
 * nothing can remove a file for a process killed with -9); the next write
 * removes it, and its lock file too is gone after that write. */
static void kill_9_never_leaves_a_partial_file(void **state) {
  fixture *f = *state;
  enum { ITERATIONS = 10 };
  const size_t a_len = 24u << 20, b_len = 20u << 20; /* different sizes: truncation shows */
  char *a = malloc(a_len + 1), *b = malloc(b_len + 1);
  for (size_t i = 0; i < a_len; i++)
    a[i] = i % 64 == 63 ? '\n' : (char)('A' + i % 7);
  for (size_t i = 0; i < b_len; i++)
    b[i] = i % 80 == 79 ? '\n' : (char)('a' + i % 11);
  char ha[KS_HASH_HEX], hb[KS_HASH_HEX];
  ks_sha256_hex(a, a_len, ha);
  ks_sha256_hex(b, b_len, hb);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, NULL, a, a_len), 0);
  unsigned seed = (unsigned)time(NULL);
  int versions[2] = {0, 0}, temps_seen = 0, reads = 0;
  for (int it = 0; it < ITERATIONS; it++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (!pid) {
      alarm(60); /* never outlives a failed test by long */
      ks_ctx ctx;
      ks_ctx_init(&ctx, "writer");
      for (;;) {
        char hex[KS_HASH_HEX];
        if (ks_file_sha256(&ctx, f->path, hex))
          _exit(2);
        bool is_a = !strcmp(hex, ha);
        if (ks_safe_write(&ctx, f->path, hex, is_a ? b : a, is_a ? b_len : a_len))
          _exit(3);
      }
    }
    /* Until the kill, read the file as a compiler would, again and again:
     * every read sees one version whole, never one being written. */
    long ms = 20 + (long)(rand_r(&seed) % 1200);
    struct timespec now, until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (until.tv_nsec + ms * 1000000L) / 1000000000L;
    until.tv_nsec = (until.tv_nsec + ms * 1000000L) % 1000000000L;
    do {
      size_t len;
      char *seen = get(f->path, &len), hex[KS_HASH_HEX];
      assert_non_null(seen);
      ks_sha256_hex(seen, len, hex);
      free(seen);
      assert_true(!strcmp(hex, ha) || !strcmp(hex, hb));
      reads++;
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec < until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec));
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status)); /* it was killed, not failed */
    char hex[KS_HASH_HEX];
    hash_of(f, hex);
    bool is_a = !strcmp(hex, ha), is_b = !strcmp(hex, hb);
    assert_true(is_a || is_b);
    versions[is_b]++;
    struct dirent **list;
    int n = scandir(f->dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
      temps_seen += ks_safe_write_is_temp(list[i]->d_name);
      free(list[i]);
    }
    free(list);
  }
  print_message("kill -9: %d times the first version, %d the second, %d temporary files left, "
                "%d whole reads while writing\n",
                versions[0], versions[1], temps_seen, reads);
  char hex[KS_HASH_HEX];
  hash_of(f, hex);
  assert_int_equal(ks_safe_write(&f->ctx, f->path, hex, "done\n", 5), 0);
  assert_string_equal(entries(f->dir), "kernel.cu");
  free(a);
  free(b);
}

/* A confined write: a link (or a directory link) that leads out of the root
 * is not written through, and says where it leads; a link inside is. */
static void confined_writes_stay_inside(void **state) {
  fixture *f = *state;
  char in[96], out[96], p[192], q[192];
  snprintf(in, sizeof in, "%s/in", f->dir);
  snprintf(out, sizeof out, "%s/out", f->dir);
  assert_int_equal(mkdir(in, 0755), 0);
  assert_int_equal(mkdir(out, 0755), 0);
  char *root = realpath(in, NULL);
  snprintf(p, sizeof p, "%s/target.cu", out);
  put(p, "outside\n", 0644);
  char hex[KS_HASH_HEX];
  assert_int_equal(ks_file_sha256(&f->ctx, p, hex), 0);
  snprintf(q, sizeof q, "%s/alias.cu", in);
  assert_int_equal(symlink("../out/target.cu", q), 0);
  assert_int_equal(ks_safe_write_within(&f->ctx, root, q, hex, "x\n", 2), -1);
  assert_non_null(strstr(f->ctx.error, "alias.cu: a symbolic link to "));
  assert_non_null(strstr(f->ctx.error, "/out/target.cu, outside "));
  assert_non_null(strstr(f->ctx.error, "; not written"));
  assert_contents(p, "outside\n");
  /* a directory link out, and a new file through it */
  snprintf(q, sizeof q, "%s/sub", in);
  assert_int_equal(symlink("../out", q), 0);
  snprintf(q, sizeof q, "%s/sub/new.cu", in);
  assert_int_equal(ks_safe_write_within(&f->ctx, root, q, NULL, "x\n", 2), -1);
  assert_non_null(strstr(f->ctx.error, "outside"));
  snprintf(p, sizeof p, "%s/new.cu", out);
  assert_false(ks_is_file(p));
  /* a link inside the root is followed */
  snprintf(p, sizeof p, "%s/real.cu", in);
  put(p, "inside\n", 0644);
  snprintf(q, sizeof q, "%s/ok.cu", in);
  assert_int_equal(symlink("real.cu", q), 0);
  assert_int_equal(ks_file_sha256(&f->ctx, p, hex), 0);
  assert_int_equal(ks_safe_write_within(&f->ctx, root, q, hex, "new\n", 4), 0);
  assert_contents(p, "new\n");
  /* where directories are missing: resolved as far as they exist, and
   * never through a missing directory with ".." */
  snprintf(q, sizeof q, "%s/missing/deeper/x.cu", in);
  char *to = NULL;
  assert_int_equal(ks_safe_write_check_within(&f->ctx, root, q, &to), 0);
  assert_non_null(to);
  assert_true(!strncmp(to, root, strlen(root)));
  free(to);
  snprintf(q, sizeof q, "%s/missing/../../out/target.cu", in);
  assert_int_equal(ks_safe_write_check_within(&f->ctx, root, q, NULL), -1);
  /* the root itself and a path climbing out of it */
  assert_int_equal(ks_safe_write_check_within(&f->ctx, root, root, NULL), -1);
  snprintf(q, sizeof q, "%s/../out/target.cu", in);
  assert_int_equal(ks_safe_write_check_within(&f->ctx, root, q, NULL), -1);
  assert_non_null(strstr(f->ctx.error, "outside"));
  free(root);
}

/* Removal: only with the hash apply wrote, never through a link, and a
 * file already gone is not an error. */
static void confined_removal(void **state) {
  fixture *f = *state;
  char *root = realpath(f->dir, NULL);
  put(f->path, "created\n", 0644);
  char hex[KS_HASH_HEX], other[KS_HASH_HEX];
  hash_of(f, hex);
  ks_sha256_hex("else\n", 5, other);
  assert_int_equal(ks_safe_remove_within(&f->ctx, root, f->path, other), -1);
  assert_non_null(strstr(f->ctx.error, "changed since it was read; not removed"));
  assert_contents(f->path, "created\n");
  char link_path[160];
  snprintf(link_path, sizeof link_path, "%s/alias.cu", f->dir);
  assert_int_equal(symlink("kernel.cu", link_path), 0);
  assert_int_equal(ks_safe_remove_within(&f->ctx, root, link_path, hex), -1);
  assert_non_null(strstr(f->ctx.error, "not removed"));
  unlink(link_path);
  assert_int_equal(ks_safe_remove_within(&f->ctx, root, f->path, hex), 0);
  assert_false(ks_is_file(f->path));
  assert_string_equal(entries(f->dir), "");
  assert_int_equal(ks_safe_remove_within(&f->ctx, root, f->path, hex), 0);
  free(root);
}

/* What killed writers left (their lock files, their temporary files) is
 * removed; the files of a writer that holds its lock are not. */
static void leftovers_of_killed_writers_are_removed(void **state) {
  fixture *f = *state;
  char p[192];
  put(f->path, "v1\n", 0644);
  snprintf(p, sizeof p, "%s/.kernel.cu.kernelsmith.lock", f->dir);
  put(p, "", 0644);
  snprintf(p, sizeof p, "%s/.kernel.cu.kernelsmith-tmp.Ab3xYz", f->dir);
  put(p, "half a fi", 0600);
  snprintf(p, sizeof p, "%s/.other.cu.kernelsmith-tmp.Qw3rTy", f->dir);
  put(p, "someone else's", 0600);
  ks_safe_write_clean(f->path);
  assert_string_equal(entries(f->dir), ".other.cu.kernelsmith-tmp.Qw3rTy,kernel.cu");
  /* a live writer of other.cu holds its lock: its files stay */
  snprintf(p, sizeof p, "%s/.other.cu.kernelsmith.lock", f->dir);
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (!pid) {
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
      _exit(2);
    if (write(ready[1], "x", 1) != 1)
      _exit(3);
    alarm(60);
    pause();
    _exit(0);
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  ks_safe_write_sweep(f->dir);
  assert_string_equal(entries(f->dir), ".other.cu.kernelsmith-tmp.Qw3rTy,"
                                       ".other.cu.kernelsmith.lock,kernel.cu");
  kill(pid, SIGKILL);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  ks_safe_write_sweep(f->dir);
  assert_string_equal(entries(f->dir), "kernel.cu");
  close(ready[0]);
  close(ready[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(replaces_and_keeps_mode_and_bytes, setup, teardown),
      cmocka_unit_test_setup_teardown(new_file_takes_0644_minus_umask, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_a_changed_file, setup, teardown),
      cmocka_unit_test_setup_teardown(null_hash_refuses_an_existing_file, setup, teardown),
      cmocka_unit_test_setup_teardown(faults_leave_the_original, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_links_and_read_only_files, setup, teardown),
      cmocka_unit_test_setup_teardown(follows_symbolic_links, setup, teardown),
      cmocka_unit_test_setup_teardown(stale_temps_are_removed, setup, teardown),
      cmocka_unit_test_setup_teardown(file_sha256, setup, teardown),
      cmocka_unit_test_setup_teardown(concurrent_writers_lose_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(kill_9_never_leaves_a_partial_file, setup, teardown),
      cmocka_unit_test_setup_teardown(confined_writes_stay_inside, setup, teardown),
      cmocka_unit_test_setup_teardown(confined_removal, setup, teardown),
      cmocka_unit_test_setup_teardown(leftovers_of_killed_writers_are_removed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
