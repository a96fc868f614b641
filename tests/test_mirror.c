/* Unit tests of support/ks_mirror: a temporary project packed on "rank 0"
 * (sources walked, hidden directories skipped, compile_commands.json, a
 * capture named as an extra) and unpacked in place when the tree is here
 * and identical, or into a private copy (byte-identical, the compilation
 * database rewritten, paths mapped) when a file changed or the root moved;
 * hostile blobs refused with the entry named and nothing written outside the
 * private directory; links out of the root refused when packing; the copy
 * removed without following links. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_fs.h"
#include "ks_hash.h"
#include "ks_mirror.h"
#include "ks_test.h"

enum { CAPTURE_BYTES = 300000 };

typedef struct fixture {
  char base[256];       /* resolved mkdtemp directory */
  char root[PATH_MAX];  /* base/proj */
  char tmp[PATH_MAX];   /* base/tmp: TMPDIR, where private copies go */
  char outside[PATH_MAX]; /* base/outside: not part of the project */
  char *old_tmpdir;
  int old_cwd;
  ks_ctx ctx;
  ks_arena arena;
} fixture;

/* The files the walk must pack, in the blob's order. */
static const char *const PACKED[] = {
    "a.cu",          "b.cuh",       "captures/run.kscap", "compile_commands.json",
    "include/util.h", "src/kern.cu", "zz/ab.cu",           "zz/ac.cu"};
enum { NPACKED = sizeof PACKED / sizeof *PACKED };

static void put(const char *dir, const char *rel, const void *bytes, size_t n, mode_t mode) {
  char path[PATH_MAX + 256];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  char *parent = ks_path_dirname(path);
  assert_int_equal(ks_mkdir_p(parent), 0);
  free(parent);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(bytes, 1, n, fp), n);
  assert_int_equal(fclose(fp), 0);
  assert_int_equal(chmod(path, mode), 0);
}

static void puts_(const char *dir, const char *rel, const char *text) {
  put(dir, rel, text, strlen(text), 0644);
}

static char *get(const char *path, size_t *len) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_buf b = KS_BUF_INIT;
  int rc = ks_read_file(&ctx, path, 0, &b);
  ks_ctx_release(&ctx);
  if (rc) {
    ks_buf_release(&b);
    return NULL;
  }
  if (len)
    *len = b.len;
  return ks_buf_detach(&b);
}

/* The compilation database of the tree, with absolute paths into it (and
 * look-alikes that must not be rewritten). */
static char *compdb_text(const char *root) {
  ks_buf b = KS_BUF_INIT;
  ks_buf_addf(&b,
              "[{\"directory\": \"%s/build\", \"file\": \"%s/src/kern.cu\",\n"
              "  \"output\": \"%s/build/kern.o\",\n"
              "  \"arguments\": [\"nvcc\", \"-I%s/include\", \"-isystem\", \"%s/include\", "
              "\"-c\", \"%s/src/kern.cu\", \"-o\", \"%s/build/kern.o\", "
              "\"-I/elsewhere%s/x\", \"%sx/y\"]},\n"
              " {\"directory\": \"%s\", \"file\": \"a.cu\",\n"
              "  \"command\": \"nvcc -I%s/include -DP=\\\"%s\\\" -c %s/a.cu -o a.o "
              "%sother/q.cu\"}]\n",
              root, root, root, root, root, root, root, root, root, root, root, root, root,
              root);
  return ks_buf_detach(&b);
}

static void make_tree(fixture *f) {
  puts_(f->root, "a.cu", "__global__ void a(float *x) { x[0] = 1; }\n");
  puts_(f->root, "b.cuh", "#pragma once\n");
  puts_(f->root, "notes.txt", "not a source: not packed\n");
  puts_(f->root, "include/util.h", "#define N 128\n");
  put(f->root, "src/kern.cu", "#include \"util.h\"\n", 18, 0755);
  puts_(f->root, "zz/ab.cu", "// ab\n");
  puts_(f->root, "zz/ac.cu", "// ac\n");
  puts_(f->root, ".kernelsmith/hidden.cu", "// in a hidden directory: not packed\n");
  puts_(f->root, ".kernelsmith/kernelsmith.db", "store");
  char *capture = malloc(CAPTURE_BYTES);
  for (size_t i = 0; i < CAPTURE_BYTES; i++)
    capture[i] = (char)(i * 2654435761u >> 13); /* NULs and high bytes too */
  put(f->root, "captures/run.kscap", capture, CAPTURE_BYTES, 0644);
  free(capture);
  char *db = compdb_text(f->root);
  puts_(f->root, "compile_commands.json", db);
  free(db);
  puts_(f->outside, "secret.cu", "// outside the root\n");
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  char made[] = "/tmp/ks-mirror-XXXXXX";
  if (!mkdtemp(made))
    return -1;
  char *real = realpath(made, NULL);
  if (!real || strlen(real) >= sizeof f->base)
    return -1;
  snprintf(f->base, sizeof f->base, "%s", real);
  free(real);
  snprintf(f->root, sizeof f->root, "%s/proj", f->base);
  snprintf(f->tmp, sizeof f->tmp, "%s/tmp", f->base);
  snprintf(f->outside, sizeof f->outside, "%s/outside", f->base);
  if (ks_mkdir_p(f->root) || ks_mkdir_p(f->tmp) || ks_mkdir_p(f->outside))
    return -1;
  const char *old = getenv("TMPDIR");
  f->old_tmpdir = old ? strdup(old) : NULL;
  setenv("TMPDIR", f->tmp, 1);
  f->old_cwd = open(".", O_RDONLY | O_DIRECTORY);
  ks_ctx_init(&f->ctx, "test");
  make_tree(f);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  if (fchdir(f->old_cwd))
    return -1;
  close(f->old_cwd);
  if (f->old_tmpdir)
    setenv("TMPDIR", f->old_tmpdir, 1);
  else
    unsetenv("TMPDIR");
  free(f->old_tmpdir);
  char cmd[2 * sizeof f->base + 64];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", f->base, f->base);
  int rc = system(cmd);
  ks_arena_release(&f->arena);
  ks_ctx_release(&f->ctx);
  free(f);
  return rc;
}

/* Entries of a directory, sorted, comma-separated (static buffer). */
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

static void pack_root(fixture *f, ks_buf *blob) {
  const char *paths[] = {f->root};
  char capture[PATH_MAX + 32];
  snprintf(capture, sizeof capture, "%s/captures/run.kscap", f->root);
  const char *extra[] = {capture};
  int rc = ks_mirror_pack(&f->ctx, f->root, paths, 1, NULL, extra, 1, blob);
  if (rc)
    fail_msg("pack: %s", f->ctx.error);
}

static void assert_same_file(const char *a, const char *b) {
  size_t na, nb;
  char *ta = get(a, &na), *tb = get(b, &nb);
  assert_non_null(ta);
  assert_non_null(tb);
  assert_int_equal(na, nb);
  assert_memory_equal(ta, tb, na);
  free(ta);
  free(tb);
}

static void packs_what_the_run_reads_deterministically(void **state) {
  fixture *f = *state;
  ks_buf one = KS_BUF_INIT, two = KS_BUF_INIT;
  pack_root(f, &one);
  pack_root(f, &two);
  assert_int_equal(one.len, two.len);
  assert_memory_equal(one.data, two.data, one.len);
  assert_memory_equal(one.data, "KSMIRROR", 8);
  ks_strings list;
  assert_int_equal(ks_mirror_list(&f->ctx, one.data, one.len, &f->arena, &list), 0);
  assert_int_equal(list.len, NPACKED);
  for (size_t i = 0; i < NPACKED; i++)
    assert_string_equal(list.items[i], PACKED[i]);

  /* The same files named relative to cwd, overlapping, in another order:
   * the same list (the cwd differs, so the manifest does). */
  assert_int_equal(chdir(f->base), 0);
  const char *paths[] = {"proj/zz", "proj/src/", "proj/include", "proj/a.cu", "proj/b.cuh",
                         "proj/zz/ab.cu", "./proj/src/../src"};
  const char *extra[] = {"proj/captures/run.kscap"};
  ks_buf rel = KS_BUF_INIT;
  if (ks_mirror_pack(&f->ctx, "proj", paths, 7, "proj", extra, 1, &rel))
    fail_msg("pack: %s", f->ctx.error);
  assert_int_equal(ks_mirror_list(&f->ctx, rel.data, rel.len, &f->arena, &list), 0);
  assert_int_equal(list.len, NPACKED);
  for (size_t i = 0; i < NPACKED; i++)
    assert_string_equal(list.items[i], PACKED[i]);
  ks_buf_release(&one);
  ks_buf_release(&two);
  ks_buf_release(&rel);
}

static void identical_tree_is_used_in_place(void **state) {
  fixture *f = *state;
  ks_buf blob = KS_BUF_INIT;
  assert_int_equal(chdir(f->base), 0);
  pack_root(f, &blob);
  ks_mirror m;
  if (ks_mirror_unpack(&f->ctx, blob.data, blob.len, &f->arena, &m))
    fail_msg("unpack: %s", f->ctx.error);
  assert_false(m.copied);
  assert_string_equal(m.root, f->root);
  assert_int_equal(m.nfiles, NPACKED);
  assert_string_equal(m.rank0_cwd, f->base);
  const char *mapped = ks_mirror_map(&f->ctx, &m, "proj/src/kern.cu", &f->arena);
  assert_non_null(mapped);
  assert_string_equal(mapped, ks_test_path(f->root, "src/kern.cu"));
  assert_int_equal(ks_mirror_remove(&f->ctx, &m), 0);
  assert_true(ks_is_file(ks_test_path(f->root, "a.cu")));
  assert_string_equal(entries(f->tmp), "");
  ks_buf_release(&blob);
}

/* Every packed file of `from` is in the copy, byte for byte, except the
 * compilation database, which is checked by check_compdb. */
static void assert_copy_of(const char *from, const ks_mirror *m) {
  for (size_t i = 0; i < NPACKED; i++) {
    if (!strcmp(PACKED[i], "compile_commands.json"))
      continue;
    char a[PATH_MAX + 64], b[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s/%s", from, PACKED[i]);
    snprintf(b, sizeof b, "%s/%s", m->root, PACKED[i]);
    assert_same_file(a, b);
  }
  struct stat st;
  assert_int_equal(stat(ks_test_path(m->root, "src/kern.cu"), &st), 0);
  assert_int_equal(st.st_mode & 0100, 0100);
  assert_int_equal(stat(ks_test_path(m->root, "a.cu"), &st), 0);
  assert_int_equal(st.st_mode & 0111, 0);
  assert_false(ks_is_file(ks_test_path(m->root, "notes.txt")));
  assert_false(ks_is_dir(ks_test_path(m->root, ".kernelsmith")));
}

static const char *item(cJSON *o, const char *key) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  assert_true(cJSON_IsString(v));
  return v->valuestring;
}

static void check_compdb(const char *rank0_root, const char *copy) {
  char *text = get(ks_test_path(copy, "compile_commands.json"), NULL);
  assert_non_null(text);
  cJSON *db = cJSON_Parse(text);
  assert_non_null(db);
  assert_int_equal(cJSON_GetArraySize(db), 2);
  char want[8 * PATH_MAX];
  cJSON *e0 = cJSON_GetArrayItem(db, 0), *e1 = cJSON_GetArrayItem(db, 1);
  snprintf(want, sizeof want, "%s/build", copy);
  assert_string_equal(item(e0, "directory"), want);
  snprintf(want, sizeof want, "%s/src/kern.cu", copy);
  assert_string_equal(item(e0, "file"), want);
  snprintf(want, sizeof want, "%s/build/kern.o", copy);
  assert_string_equal(item(e0, "output"), want);
  cJSON *args = cJSON_GetObjectItemCaseSensitive(e0, "arguments");
  assert_int_equal(cJSON_GetArraySize(args), 10);
  snprintf(want, sizeof want, "-I%s/include", copy);
  assert_string_equal(cJSON_GetArrayItem(args, 1)->valuestring, want);
  snprintf(want, sizeof want, "%s/include", copy);
  assert_string_equal(cJSON_GetArrayItem(args, 3)->valuestring, want);
  snprintf(want, sizeof want, "%s/src/kern.cu", copy);
  assert_string_equal(cJSON_GetArrayItem(args, 5)->valuestring, want);
  /* look-alikes stay */
  snprintf(want, sizeof want, "-I/elsewhere%s/x", rank0_root);
  assert_string_equal(cJSON_GetArrayItem(args, 8)->valuestring, want);
  snprintf(want, sizeof want, "%sx/y", rank0_root);
  assert_string_equal(cJSON_GetArrayItem(args, 9)->valuestring, want);
  assert_string_equal(item(e1, "directory"), copy);
  assert_string_equal(item(e1, "file"), "a.cu");
  snprintf(want, sizeof want, "nvcc -I%s/include -DP=\"%s\" -c %s/a.cu -o a.o %sother/q.cu",
           copy, copy, copy, rank0_root);
  assert_string_equal(item(e1, "command"), want);
  cJSON_Delete(db);
  free(text);
}

static void changed_file_gives_a_private_copy(void **state) {
  fixture *f = *state;
  ks_buf blob = KS_BUF_INIT;
  assert_int_equal(chdir(f->base), 0);
  pack_root(f, &blob);
  /* this rank's copy of the project differs in one file */
  char *original = get(ks_test_path(f->root, "zz/ab.cu"), NULL);
  puts_(f->root, "zz/ab.cu", "// edited here\n");
  ks_mirror m;
  if (ks_mirror_unpack(&f->ctx, blob.data, blob.len, &f->arena, &m))
    fail_msg("unpack: %s", f->ctx.error);
  assert_true(m.copied);
  assert_int_equal(m.nfiles, NPACKED);
  assert_string_equal(m.rank0_root, f->root);
  char prefix[PATH_MAX + 64];
  snprintf(prefix, sizeof prefix, "%s/kernelsmith-mirror-", f->tmp);
  assert_int_equal(strncmp(m.root, prefix, strlen(prefix)), 0);
  puts_(f->root, "zz/ab.cu", original);
  free(original);
  assert_copy_of(f->root, &m);
  check_compdb(f->root, m.root);

  const char *mapped = ks_mirror_map(&f->ctx, &m, "proj/src/kern.cu", &f->arena);
  assert_non_null(mapped);
  assert_string_equal(mapped, ks_test_path(m.root, "src/kern.cu"));
  assert_true(ks_is_file(mapped));
  mapped = ks_mirror_map(&f->ctx, &m, ks_test_path(f->root, "include/../zz//ab.cu"), &f->arena);
  assert_string_equal(mapped, ks_test_path(m.root, "zz/ab.cu"));
  mapped = ks_mirror_map(&f->ctx, &m, "proj", &f->arena);
  assert_string_equal(mapped, m.root);
  assert_null(ks_mirror_map(&f->ctx, &m, "/etc/passwd", &f->arena));
  assert_non_null(strstr(f->ctx.error, "/etc/passwd"));
  assert_null(ks_mirror_map(&f->ctx, &m, "proj/../outside/secret.cu", &f->arena));
  assert_null(ks_mirror_map(&f->ctx, &m, "projx/a.cu", &f->arena));

  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", m.root);
  assert_int_equal(ks_mirror_remove(&f->ctx, &m), 0);
  assert_false(m.copied);
  assert_false(ks_is_dir(copy));
  assert_string_equal(entries(f->tmp), "");
  assert_int_equal(ks_mirror_remove(&f->ctx, &m), 0);
  ks_buf_release(&blob);
}

/* The root named through a link on rank 0, and moved on this rank: a copy
 * whose paths map from both names. */
static void renamed_root_gives_a_private_copy(void **state) {
  fixture *f = *state;
  char link[PATH_MAX + 16], moved[PATH_MAX + 16];
  snprintf(link, sizeof link, "%s/plink", f->base);
  snprintf(moved, sizeof moved, "%s/proj2", f->base);
  assert_int_equal(symlink("proj", link), 0);
  char capture[PATH_MAX + 64];
  snprintf(capture, sizeof capture, "%s/captures/run.kscap", link);
  const char *paths[] = {link};
  const char *extra[] = {capture};
  ks_buf blob = KS_BUF_INIT;
  if (ks_mirror_pack(&f->ctx, link, paths, 1, NULL, extra, 1, &blob))
    fail_msg("pack: %s", f->ctx.error);
  assert_int_equal(rename(f->root, moved), 0);
  unlink(link);
  ks_mirror m;
  if (ks_mirror_unpack(&f->ctx, blob.data, blob.len, &f->arena, &m))
    fail_msg("unpack: %s", f->ctx.error);
  assert_true(m.copied);
  assert_string_equal(m.rank0_root, f->root);
  assert_string_equal(m.rank0_root_given, link);
  assert_copy_of(moved, &m);
  check_compdb(f->root, m.root);
  const char *a = ks_mirror_map(&f->ctx, &m, ks_test_path(link, "a.cu"), &f->arena);
  const char *b = ks_mirror_map(&f->ctx, &m, ks_test_path(f->root, "a.cu"), &f->arena);
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(a, ks_test_path(m.root, "a.cu"));
  assert_string_equal(b, a);
  assert_int_equal(ks_mirror_remove(&f->ctx, &m), 0);
  assert_string_equal(entries(f->tmp), "");
  ks_buf_release(&blob);
}

/* --- hostile blobs ------------------------------------------------------------- */

typedef struct entry {
  const char *path;
  size_t path_len; /* 0: strlen(path) */
  const char *data;
  long size_delta; /* added to the size the manifest declares */
} entry;

static void u32(ks_buf *b, uint32_t v) {
  for (int i = 3; i >= 0; i--)
    ks_buf_addc(b, (char)(v >> (8 * i)));
}

static void u64(ks_buf *b, uint64_t v) {
  for (int i = 7; i >= 0; i--)
    ks_buf_addc(b, (char)(v >> (8 * i)));
}

static void str(ks_buf *b, const char *s, size_t n) {
  u32(b, (uint32_t)n);
  ks_buf_add(b, s, n);
}

/* A blob as ks_mirror.h lays it out, with whatever paths and sizes the test
 * wants: the hashes are right, so only the named fault is wrong. */
static void build(ks_buf *out, const char *root, const entry *e, size_t n) {
  ks_buf m = KS_BUF_INIT;
  str(&m, root, strlen(root));
  str(&m, root, strlen(root));
  str(&m, "/", 1);
  u64(&m, n);
  for (size_t i = 0; i < n; i++) {
    size_t plen = e[i].path_len ? e[i].path_len : strlen(e[i].path);
    str(&m, e[i].path, plen);
    u32(&m, 0644);
    u64(&m, (uint64_t)((long)strlen(e[i].data) + e[i].size_delta));
    char hex[KS_HASH_HEX];
    ks_sha256_hex(e[i].data, strlen(e[i].data), hex);
    ks_buf_add(&m, hex, 64);
  }
  ks_buf_reset(out);
  ks_buf_add(out, "KSMIRROR", 8);
  u32(out, 1);
  u32(out, 0);
  u64(out, m.len);
  ks_buf_add(out, m.data, m.len);
  for (size_t i = 0; i < n; i++)
    ks_buf_adds(out, e[i].data);
  ks_buf_release(&m);
}

/* Unpacking fails, the message names `name`, and nothing was written: no
 * private directory is left in TMPDIR, nothing beside it, no /z. */
static void refused(fixture *f, const ks_buf *blob, const char *name) {
  ks_mirror m;
  f->ctx.error[0] = '\0';
  if (ks_mirror_unpack(&f->ctx, blob->data, blob->len, &f->arena, &m) == 0) {
    ks_mirror_remove(&f->ctx, &m);
    fail_msg("unpacked, though it should fail naming %s", name);
  }
  if (!strstr(f->ctx.error, name))
    fail_msg("the message does not name %s: %s", name, f->ctx.error);
  assert_null(strchr(f->ctx.error, '\n'));
  assert_string_equal(entries(f->tmp), "");
  assert_string_equal(entries(f->base), "outside,proj,tmp");
  assert_false(ks_is_file("/z/ab.cu"));
}

static void hostile_blobs_are_refused(void **state) {
  fixture *f = *state;
  const char *root = "/nonexistent-ks-mirror-root"; /* never usable in place */
  ks_buf blob = KS_BUF_INIT;
  entry ok = {"src/ok.cu", 0, "// fine\n", 0};

  entry climbs[] = {ok, {"../ab.cu", 0, "escape\n", 0}};
  build(&blob, root, climbs, 2);
  refused(f, &blob, "\"../ab.cu\": a path that climbs");
  entry deep[] = {{"src/../../../ab.cu", 0, "escape\n", 0}};
  build(&blob, root, deep, 1);
  refused(f, &blob, "src/../../../ab.cu");
  entry absolute[] = {{"/z/ab.cu", 0, "escape\n", 0}, ok};
  build(&blob, root, absolute, 2);
  refused(f, &blob, "\"/z/ab.cu\": an absolute path");
  entry nul[] = {{"zz\0/../ab.cu", 12, "x\n", 0}};
  build(&blob, root, nul, 1);
  refused(f, &blob, "zz\\x00/../ab.cu");
  entry empty[] = {{"a//b.cu", 0, "x\n", 0}};
  build(&blob, root, empty, 1);
  refused(f, &blob, "a//b.cu");
  /* a newline is a legal name, but the message stays one line */
  entry newline[] = {{"a/\n/../../b.cu", 0, "x\n", 0}};
  build(&blob, root, newline, 1);
  refused(f, &blob, "a/\\x0a/../../b.cu");
  entry dup[] = {{"zz/ab.cu", 0, "one\n", 0}, ok, {"zz/ab.cu", 0, "two\n", 0}};
  build(&blob, root, dup, 3);
  refused(f, &blob, "\"zz/ab.cu\": duplicate path");
  entry bigger[] = {{"zz/ab.cu", 0, "one\n", 1}, ok};
  build(&blob, root, bigger, 2);
  refused(f, &blob, "\"zz/ab.cu\": contents do not match");
  entry smaller[] = {ok, {"zz/ab.cu", 0, "one\n", -1}};
  build(&blob, root, smaller, 2);
  refused(f, &blob, "\"zz/ab.cu\": contents do not match");
  entry last_bigger[] = {ok, {"zz/ab.cu", 0, "one\n", 1}};
  build(&blob, root, last_bigger, 2);
  refused(f, &blob, "entry \"zz/ab.cu\" needs 5 bytes, 4 are left");

  /* A real blob cut short: in the last file's contents, in the manifest. */
  ks_buf real = KS_BUF_INIT;
  pack_root(f, &real);
  char moved[PATH_MAX + 16];
  snprintf(moved, sizeof moved, "%s/proj2", f->base);
  assert_int_equal(rename(f->root, moved), 0); /* so that a copy would be made */
  real.len--;
  ks_mirror m;
  assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, real.len, &f->arena, &m), -1);
  assert_non_null(strstr(f->ctx.error, "truncated: entry \"zz/ac.cu\""));
  assert_string_equal(entries(f->tmp), "");
  for (size_t cut = 0; cut < 200; cut += 7) {
    assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, cut, &f->arena, &m), -1);
    assert_non_null(strstr(f->ctx.error, "truncated"));
  }
  real.len++;
  real.data[real.len - 1] ^= 1; /* one flipped bit in the last file */
  assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, real.len, &f->arena, &m), -1);
  assert_non_null(strstr(f->ctx.error, "zz/ac.cu"));
  real.data[real.len - 1] ^= 1;
  ks_buf_add(&real, "x", 1);
  assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, real.len, &f->arena, &m), -1);
  assert_non_null(strstr(f->ctx.error, "1 bytes after the last file"));
  real.len--;
  real.data[8 + 3] = 2; /* a future format */
  assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, real.len, &f->arena, &m), -1);
  assert_non_null(strstr(f->ctx.error, "format version 2"));
  real.data[0] = 'X';
  assert_int_equal(ks_mirror_unpack(&f->ctx, real.data, real.len, &f->arena, &m), -1);
  assert_non_null(strstr(f->ctx.error, "bad magic"));
  assert_string_equal(entries(f->tmp), "");
  ks_buf_release(&real);
  assert_int_equal(rename(moved, f->root), 0);

  /* Paths that pass every check but collide on disk (a file where a
   * directory must go): refused while writing, the private copy removed. */
  entry clash[] = {{"x", 0, "a file\n", 0}, {"x/y.cu", 0, "below it\n", 0}};
  build(&blob, root, clash, 2);
  refused(f, &blob, "x");
  ks_buf_release(&blob);
}

/* --- refusals when packing --------------------------------------------------- */

static void pack_refuses(fixture *f, const char *const *paths, size_t npaths,
                         const char *const *extra, size_t nextra, const char *name,
                         const char *why) {
  ks_buf blob = KS_BUF_INIT;
  f->ctx.error[0] = '\0';
  assert_int_equal(ks_mirror_pack(&f->ctx, f->root, paths, npaths, NULL, extra, nextra, &blob),
                   -1);
  if (!strstr(f->ctx.error, name) || !strstr(f->ctx.error, why))
    fail_msg("expected \"%s\" and \"%s\" in: %s", name, why, f->ctx.error);
  assert_null(strchr(f->ctx.error, '\n'));
  assert_int_equal(blob.len, 0);
  ks_buf_release(&blob);
}

static void links_out_of_the_root_are_refused(void **state) {
  fixture *f = *state;
  const char *paths[] = {f->root};
  char secret[PATH_MAX + 32], link[PATH_MAX + 32];
  snprintf(secret, sizeof secret, "%s/secret.cu", f->outside);

  /* a link inside the root to a file inside it is packed as a file */
  snprintf(link, sizeof link, "%s/src/alias.cu", f->root);
  assert_int_equal(symlink("../a.cu", link), 0);
  ks_buf blob = KS_BUF_INIT;
  assert_int_equal(ks_mirror_pack(&f->ctx, f->root, paths, 1, NULL, NULL, 0, &blob), 0);
  ks_strings list;
  assert_int_equal(ks_mirror_list(&f->ctx, blob.data, blob.len, &f->arena, &list), 0);
  bool found = false;
  for (size_t i = 0; i < list.len; i++)
    found |= !strcmp(list.items[i], "src/alias.cu");
  assert_true(found);
  ks_buf_release(&blob);
  unlink(link);

  /* a source file linked out of the root */
  snprintf(link, sizeof link, "%s/src/evil.cu", f->root);
  assert_int_equal(symlink(secret, link), 0);
  pack_refuses(f, paths, 1, NULL, 0, "src/evil.cu", "outside the root");
  unlink(link);
  /* a directory linked out of the root */
  snprintf(link, sizeof link, "%s/vendor", f->root);
  assert_int_equal(symlink(f->outside, link), 0);
  pack_refuses(f, paths, 1, NULL, 0, "vendor/secret.cu", "outside the root");
  const char *through[] = {link};
  pack_refuses(f, through, 1, NULL, 0, "vendor", "outside the root");
  unlink(link);
  /* a path, an extra, a compilation database outside the root */
  const char *out_paths[] = {f->outside};
  pack_refuses(f, out_paths, 1, NULL, 0, f->outside, "outside the root");
  const char *out_extra[] = {secret};
  pack_refuses(f, paths, 1, out_extra, 1, secret, "outside the root");
  char climbing[PATH_MAX + 32];
  snprintf(climbing, sizeof climbing, "%s/../outside/secret.cu", f->root);
  const char *climb_extra[] = {climbing};
  pack_refuses(f, paths, 1, climb_extra, 1, climbing, "outside the root");
  ks_buf none = KS_BUF_INIT;
  assert_int_equal(
      ks_mirror_pack(&f->ctx, f->root, paths, 1, f->outside, NULL, 0, &none), -1);
  assert_non_null(strstr(f->ctx.error, "compile_commands.json"));
  /* an extra that is not there, a link to nothing */
  char missing[PATH_MAX + 32];
  snprintf(missing, sizeof missing, "%s/captures/missing.kscap", f->root);
  const char *missing_extra[] = {missing};
  pack_refuses(f, paths, 1, missing_extra, 1, missing, "cannot read");
  snprintf(link, sizeof link, "%s/captures/dangling.kscap", f->root);
  assert_int_equal(symlink("nowhere", link), 0);
  const char *dangling_extra[] = {link};
  pack_refuses(f, paths, 1, dangling_extra, 1, link, "cannot read");
  /* an unreadable source (root reads everything: not testable there) */
  if (geteuid() != 0) {
    chmod(ks_test_path(f->root, "b.cuh"), 0);
    pack_refuses(f, paths, 1, NULL, 0, "b.cuh", "cannot read");
  }
}

/* The copy's removal deletes links, never what they point to. */
static void removal_does_not_follow_links(void **state) {
  fixture *f = *state;
  ks_buf blob = KS_BUF_INIT;
  pack_root(f, &blob);
  puts_(f->root, "a.cu", "// changed\n");
  ks_mirror m;
  if (ks_mirror_unpack(&f->ctx, blob.data, blob.len, &f->arena, &m))
    fail_msg("unpack: %s", f->ctx.error);
  assert_true(m.copied);
  char link[PATH_MAX + 32];
  snprintf(link, sizeof link, "%s/escape", m.root);
  assert_int_equal(symlink(f->outside, link), 0);
  snprintf(link, sizeof link, "%s/src/secret.cu", m.root);
  assert_int_equal(symlink(ks_test_path(f->outside, "secret.cu"), link), 0);
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", m.root);
  assert_int_equal(ks_mirror_remove(&f->ctx, &m), 0);
  assert_false(ks_is_dir(copy));
  assert_true(ks_is_file(ks_test_path(f->outside, "secret.cu")));
  assert_string_equal(entries(f->outside), "secret.cu");
  /* a mirror that claims a directory it did not make is not removed */
  ks_mirror fake = {.root = f->outside, .copied = true};
  assert_int_equal(ks_mirror_remove(&f->ctx, &fake), -1);
  assert_true(ks_is_file(ks_test_path(f->outside, "secret.cu")));
  ks_buf_release(&blob);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(packs_what_the_run_reads_deterministically, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(identical_tree_is_used_in_place, setup, teardown),
      cmocka_unit_test_setup_teardown(changed_file_gives_a_private_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(renamed_root_gives_a_private_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(hostile_blobs_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(links_out_of_the_root_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(removal_does_not_follow_links, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
