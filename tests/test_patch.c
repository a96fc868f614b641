/* Unit tests of support/ks_patch: every diff is applied by `git apply` (and
 * by `patch -p1` where it is installed) to the old text and must give the
 * new text byte for byte; random diffs are applied in memory and checked
 * for minimality against an LCS table; a few diffs are compared with
 * `git diff`'s hunks or written out whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_buf.h"
#include "ks_ctx.h"
#include "ks_patch.h"

/* Tests must not depend on the user's git configuration (apply.whitespace,
 * core.autocrlf, diff.indentHeuristic...). */
#define GIT "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git"

static bool have_patch;

static void write_bytes(const char *path, const char *bytes, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  ks_buf b = KS_BUF_INIT;
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)))
    ks_buf_add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return ks_buf_detach(&b);
}

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  if (rc != 0)
    fail_msg("command failed (%d): %s", rc, cmd);
}

static char *make_dir(void) {
  char tmpl[] = "/tmp/ks-patch-XXXXXX";
  assert_non_null(mkdtemp(tmpl));
  return strdup(tmpl);
}

static void remove_dir(char *dir) {
  run("rm -rf '%s'", dir);
  free(dir);
}

static const char *PATH = "src/kernel.cu";

/* Sets up `dir` with the old file (none when old is NULL) and the diff. */
static void stage(const char *dir, const char *old, size_t old_len, const ks_buf *diff) {
  char path[512];
  snprintf(path, sizeof path, "%s/src", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/%s", dir, PATH);
  if (old)
    write_bytes(path, old, old_len);
  snprintf(path, sizeof path, "%s/change.diff", dir);
  write_bytes(path, diff->data, diff->len);
}

static void assert_file_is(const char *dir, const char *text, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, PATH);
  size_t got_len = 0;
  char *got = read_bytes(path, &got_len);
  assert_non_null(got);
  assert_int_equal(got_len, len);
  assert_memory_equal(got, text, len);
  free(got);
}

/* The diff of old -> new, applied by git (and patch) to old, gives new. */
static void check_diff_len(const char *old, size_t old_len, const char *new, size_t new_len,
                           ks_buf *diff) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_buf_reset(diff);
  assert_int_equal(ks_patch_diff(&ctx, PATH, old, old_len, new, new_len, 3, diff), 0);
  ks_ctx_release(&ctx);
  if (old && old_len == new_len && !memcmp(old, new, old_len)) {
    assert_int_equal(diff->len, 0);
    return;
  }
  assert_true(diff->len > 0);
  char *dir = make_dir();
  stage(dir, old, old_len, diff);
  run("cd '%s' && " GIT " apply --whitespace=nowarn --check change.diff && " GIT " apply --whitespace=nowarn change.diff", dir);
  assert_file_is(dir, new, new_len);
  remove_dir(dir);
  if (!have_patch)
    return;
  dir = make_dir();
  stage(dir, old, old_len, diff);
  run("cd '%s' && patch -p1 -s --fuzz=0 --dry-run < change.diff >/dev/null && "
      "patch -p1 -s --fuzz=0 --no-backup-if-mismatch < change.diff",
      dir);
  assert_file_is(dir, new, new_len);
  remove_dir(dir);
}

static void check_diff(const char *old, const char *new, ks_buf *diff) {
  check_diff_len(old, old ? strlen(old) : 0, new, strlen(new), diff);
}

static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

/* Numbered lines "lineN\n" for N in [from, to). */
static void numbered(ks_buf *b, int from, int to) {
  for (int i = from; i < to; i++)
    ks_buf_addf(b, "line%d\n", i);
}

static void change_in_the_middle(void **state) {
  ks_buf diff = KS_BUF_INIT;
  check_diff("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\n", &diff);
  assert_string_equal(diff.data, "diff --git a/src/kernel.cu b/src/kernel.cu\n"
                                 "--- a/src/kernel.cu\n"
                                 "+++ b/src/kernel.cu\n"
                                 "@@ -1,7 +1,7 @@\n"
                                 " a\n"
                                 " b\n"
                                 " c\n"
                                 "-d\n"
                                 "+D\n"
                                 " e\n"
                                 " f\n"
                                 " g\n");
  ks_buf_release(&diff);
}

static void additions_at_start_and_end(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 20);
  ks_buf_adds(&new, "#include \"kernelsmith_dispatch.h\"\n\n");
  numbered(&new, 0, 20);
  check_diff(old.data, new.data, &diff);
  assert_non_null(strstr(diff.data, "@@ -1,3 +1,5 @@\n+#include \"kernelsmith_dispatch.h\"\n+\n line0\n"));
  ks_buf_adds(&new, "tail1\ntail2\n");
  check_diff(old.data, new.data, &diff);
  assert_int_equal(count(diff.data, "\n@@ "), 2);
  assert_non_null(strstr(diff.data, "@@ -18,3 +20,5 @@ line16\n line17\n line18\n line19\n+tail1\n+tail2\n"));
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

static void deletions(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 30);
  numbered(&new, 0, 10);
  numbered(&new, 15, 30);
  check_diff(old.data, new.data, &diff);
  assert_int_equal(count(diff.data, "\n-"), 6); /* and the --- line */
  assert_int_equal(count(diff.data, "\n+"), 1); /* the +++ line only */
  assert_non_null(strstr(diff.data, "@@ -8,11 +8,6 @@ line6\n"));
  /* everything deleted but the first line */
  check_diff(old.data, "line0\n", &diff);
  assert_int_equal(count(diff.data, "\n-"), 30); /* 29 and the --- line */
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

static void far_changes_make_two_hunks(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 40);
  numbered(&new, 0, 5);
  ks_buf_adds(&new, "changed5\n");
  numbered(&new, 6, 30);
  ks_buf_adds(&new, "changed30\n");
  numbered(&new, 31, 40);
  check_diff(old.data, new.data, &diff);
  assert_int_equal(count(diff.data, "\n@@ "), 2);
  assert_non_null(strstr(diff.data, "@@ -3,7 +3,7 @@"));
  assert_non_null(strstr(diff.data, "@@ -28,7 +28,7 @@"));
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

/* Changes 6 unchanged lines apart have touching contexts: one hunk; 7 apart,
 * two, as git and diff do. */
static void near_changes_share_a_hunk(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 30);
  numbered(&new, 0, 10);
  ks_buf_adds(&new, "x10\n");
  numbered(&new, 11, 17);
  ks_buf_adds(&new, "x17\n");
  numbered(&new, 18, 30);
  check_diff(old.data, new.data, &diff);
  assert_int_equal(count(diff.data, "\n@@ "), 1);
  assert_non_null(strstr(diff.data, "@@ -8,14 +8,14 @@ line6\n"));
  ks_buf_reset(&new);
  numbered(&new, 0, 10);
  ks_buf_adds(&new, "x10\n");
  numbered(&new, 11, 18);
  ks_buf_adds(&new, "x18\n");
  numbered(&new, 19, 30);
  check_diff(old.data, new.data, &diff);
  assert_int_equal(count(diff.data, "\n@@ "), 2);
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

static void missing_final_newline(void **state) {
  ks_buf diff = KS_BUF_INIT;
  /* old lacks it, new has it */
  check_diff("a\nb\nc", "a\nb\nc\n", &diff);
  assert_non_null(strstr(diff.data, "-c\n\\ No newline at end of file\n+c\n"));
  /* new lacks it */
  check_diff("a\nb\nc\n", "a\nb\nc", &diff);
  assert_non_null(strstr(diff.data, "-c\n+c\n\\ No newline at end of file\n"));
  /* both lack it, the last line is context */
  check_diff("a\nb\nc\nd\ne", "a\nB\nc\nd\ne", &diff);
  assert_non_null(strstr(diff.data, " e\n\\ No newline at end of file\n"));
  /* both lack it and the last line changes */
  check_diff("a\nb\nc", "a\nb\nC", &diff);
  assert_non_null(strstr(diff.data, "-c\n\\ No newline at end of file\n+C\n\\ No newline at end of file\n"));
  /* a one-line file without newline, to and from empty */
  check_diff("x", "y", &diff);
  check_diff("", "x", &diff);
  check_diff("x", "", &diff);
  ks_buf_release(&diff);
}

static void crlf_lines(void **state) {
  ks_buf diff = KS_BUF_INIT;
  const char *old = "int a;\r\nint b;\r\nint c;\r\nint d;\r\n";
  const char *new = "int a;\r\nint b;\r\nint bb;\r\nint c;\r\nint d;\r\n";
  check_diff(old, new, &diff);
  assert_non_null(strstr(diff.data, " int b;\r\n+int bb;\r\n int c;\r\n"));
  /* a line whose ending alone changes is a changed line */
  check_diff("a\r\nb\r\nc\r\n", "a\r\nb\nc\r\n", &diff);
  assert_non_null(strstr(diff.data, "-b\r\n+b\n"));
  /* mixed endings and no final newline */
  check_diff("a\r\nb\nc\r", "a\r\nB\nc\r", &diff);
  assert_non_null(strstr(diff.data, " c\r\n\\ No newline at end of file\n"));
  ks_buf_release(&diff);
}

static void empty_sides(void **state) {
  ks_buf diff = KS_BUF_INIT;
  check_diff("", "a\nb\n", &diff);
  assert_non_null(strstr(diff.data, "@@ -0,0 +1,2 @@\n+a\n+b\n"));
  check_diff("a\nb\n", "", &diff);
  assert_non_null(strstr(diff.data, "@@ -1,2 +0,0 @@\n-a\n-b\n"));
  check_diff("a\n", "", &diff);
  assert_non_null(strstr(diff.data, "@@ -1 +0,0 @@\n-a\n"));
  ks_buf_release(&diff);
}

static void identical_texts_give_nothing(void **state) {
  ks_buf diff = KS_BUF_INIT;
  check_diff("a\nb\n", "a\nb\n", &diff);
  check_diff("", "", &diff);
  check_diff("x", "x", &diff);
  ks_buf_release(&diff);
}

static void new_file(void **state) {
  ks_buf diff = KS_BUF_INIT;
  check_diff_len(NULL, 0, "a\nb\n", 4, &diff);
  assert_non_null(strstr(diff.data, "new file mode 100644\n--- /dev/null\n+++ b/src/kernel.cu\n"
                                    "@@ -0,0 +1,2 @@\n"));
  ks_buf_release(&diff);
}

/* A new kernel inserted between two functions reads as one block that starts
 * with the kernel and ends with its blank line; a changed launch is -/+. */
static void inserted_function_reads_well(void **state) {
  const char *old = "#include <cuda_runtime.h>\n"
                    "\n"
                    "__global__ void scale(float *x, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n)\n"
                    "    x[i] *= 2.0f;\n"
                    "}\n"
                    "\n"
                    "void run(float *x, int n) {\n"
                    "  scale<<<(n + 255) / 256, 256>>>(x, n);\n"
                    "}\n";
  const char *new = "#include <cuda_runtime.h>\n"
                    "\n"
                    "__global__ void scale(float *x, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n)\n"
                    "    x[i] *= 2.0f;\n"
                    "}\n"
                    "\n"
                    "__global__ void scale_ks1(float *x, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n)\n"
                    "    x[i] += x[i];\n"
                    "}\n"
                    "\n"
                    "void run(float *x, int n) {\n"
                    "  scale_ks1<<<(n + 255) / 256, 256>>>(x, n);\n"
                    "}\n";
  ks_buf diff = KS_BUF_INIT;
  check_diff(old, new, &diff);
  assert_non_null(strstr(diff.data, " \n"
                                    "+__global__ void scale_ks1(float *x, int n) {\n"
                                    "+  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "+  if (i < n)\n"
                                    "+    x[i] += x[i];\n"
                                    "+}\n"
                                    "+\n"
                                    " void run(float *x, int n) {\n"
                                    "-  scale<<<(n + 255) / 256, 256>>>(x, n);\n"
                                    "+  scale_ks1<<<(n + 255) / 256, 256>>>(x, n);\n"
                                    " }\n"));
  ks_buf_release(&diff);
}

/* On source-like edits whose placement is ambiguous, the hunks are git's
 * (with its indent heuristic), header line and all. */
static void hunks_match_git(void **state) {
  const char *cases[][2] = {
      {"void a() {\n  x();\n}\n\nvoid b() {\n  y();\n}\n",
       "void a() {\n  x();\n}\n\nvoid n() {\n  z();\n}\n\nvoid b() {\n  y();\n}\n"},
      {"void a() {\n  x();\n}\n", "void a() {\n  x();\n}\n\nvoid n() {\n  z();\n}\n"},
      {"int f() {\n  if (a) {\n    b();\n  }\n  return 0;\n}\n",
       "int f() {\n  if (a) {\n    b();\n  }\n  if (c) {\n    b();\n  }\n  return 0;\n}\n"},
      {"struct s {\n  int a;\n};\n\nint g;\n",
       "struct s {\n  int a;\n  int b;\n};\n\nstruct t {\n  int a;\n};\n\nint g;\n"},
  };
  char *dir = make_dir();
  char old_path[512], new_path[512], out_path[512];
  snprintf(old_path, sizeof old_path, "%s/old", dir);
  snprintf(new_path, sizeof new_path, "%s/new", dir);
  snprintf(out_path, sizeof out_path, "%s/git.diff", dir);
  ks_buf diff = KS_BUF_INIT;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    check_diff(cases[c][0], cases[c][1], &diff);
    write_bytes(old_path, cases[c][0], strlen(cases[c][0]));
    write_bytes(new_path, cases[c][1], strlen(cases[c][1]));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && " GIT " diff --no-index --no-color --indent-heuristic -U3 old new > git.diff",
             dir);
    assert_int_equal(WEXITSTATUS(system(cmd)), 1); /* 1: the files differ */
    size_t len;
    char *git = read_bytes(out_path, &len);
    assert_non_null(git);
    const char *git_hunks = strstr(git, "\n@@ ");
    const char *our_hunks = strstr(diff.data, "\n@@ ");
    assert_non_null(git_hunks);
    assert_non_null(our_hunks);
    assert_string_equal(our_hunks, git_hunks);
    free(git);
  }
  ks_buf_release(&diff);
  remove_dir(dir);
}

static void header_shows_the_definition_above(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  ks_buf_adds(&old, "__global__ void k(float *x) {\r\n");
  ks_buf_adds(&new, "__global__ void k(float *x) {\r\n");
  for (int i = 0; i < 12; i++) {
    ks_buf_addf(&old, "  x[%d] = 0;\r\n", i);
    ks_buf_addf(&new, "  x[%d] = %d;\r\n", i, i == 8);
  }
  check_diff(old.data, new.data, &diff);
  assert_non_null(strstr(diff.data, "@@ -7,7 +7,7 @@ __global__ void k(float *x) {\n"));
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

static void odd_paths_are_quoted(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_buf diff = KS_BUF_INIT;
  assert_int_equal(ks_patch_diff(&ctx, "my dir/k.cu", "a\n", 2, "b\n", 2, 3, &diff), 0);
  assert_non_null(strstr(diff.data, "diff --git a/my dir/k.cu b/my dir/k.cu\n--- a/my dir/k.cu\t\n"));
  ks_buf_reset(&diff);
  assert_int_equal(ks_patch_diff(&ctx, "q\"\\\t\xc3\xa9.cu", "a\n", 2, "b\n", 2, 3, &diff), 0);
  assert_non_null(strstr(diff.data, "--- \"a/q\\\"\\\\\\t\\303\\251.cu\"\n"));
  /* git reads the quoted name back */
  char *dir = make_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/q\"\\\t\xc3\xa9.cu", dir);
  write_bytes(path, "a\n", 2);
  snprintf(path, sizeof path, "%s/change.diff", dir);
  write_bytes(path, diff.data, diff.len);
  run("cd '%s' && " GIT " apply change.diff", dir);
  snprintf(path, sizeof path, "%s/q\"\\\t\xc3\xa9.cu", dir);
  size_t len;
  char *got = read_bytes(path, &len);
  assert_non_null(got);
  assert_int_equal(len, 2);
  assert_memory_equal(got, "b\n", 2);
  free(got);
  remove_dir(dir);
  assert_int_equal(ks_patch_diff(&ctx, "/abs/k.cu", "a\n", 2, "b\n", 2, 3, &diff), -1);
  assert_int_equal(ks_patch_diff(&ctx, "k.cu", "a\0b\n", 4, "b\n", 2, 3, &diff), -1);
  assert_non_null(strstr(ctx.error, "k.cu"));
  ks_buf_release(&diff);
  ks_ctx_release(&ctx);
}

static char *apply_in_memory(const char *old, size_t old_len, const char *diff, size_t *out_len,
                             size_t *removed, size_t *added);

/* Less or more context than 3: the same change, smaller or larger hunks;
 * without context git needs --unidiff-zero. */
static void other_context_sizes(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 20);
  numbered(&new, 0, 5);
  ks_buf_adds(&new, "x5\n");
  numbered(&new, 6, 8);
  ks_buf_adds(&new, "x8\n");
  numbered(&new, 9, 20);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  const unsigned sizes[] = {0, 1, 10};
  const char *headers[] = {"@@ -6 +6 @@ line4\n", "@@ -5,6 +5,6 @@ line3\n", "@@ -1,19 +1,19 @@\n"};
  const size_t hunks[] = {2, 1, 1};
  for (size_t i = 0; i < 3; i++) {
    ks_buf_reset(&diff);
    assert_int_equal(ks_patch_diff(&ctx, PATH, old.data, old.len, new.data, new.len, sizes[i], &diff), 0);
    assert_non_null(strstr(diff.data, headers[i]));
    assert_int_equal(count(diff.data, "\n@@ "), hunks[i]);
    size_t len, removed, added;
    char *got = apply_in_memory(old.data, old.len, diff.data, &len, &removed, &added);
    assert_int_equal(len, new.len);
    assert_memory_equal(got, new.data, len);
    free(got);
  }
  ks_buf_reset(&diff);
  assert_int_equal(ks_patch_diff(&ctx, PATH, old.data, old.len, new.data, new.len, 0, &diff), 0);
  char *dir = make_dir();
  stage(dir, old.data, old.len, &diff);
  run("cd '%s' && " GIT " apply --unidiff-zero change.diff", dir);
  assert_file_is(dir, new.data, new.len);
  remove_dir(dir);
  ks_ctx_release(&ctx);
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

/* --- random texts, applied in memory ------------------------------------------- */

typedef struct lines {
  const char **at;
  size_t *len;
  size_t n;
} lines;

static lines split(const char *text, size_t len) {
  lines l = {malloc((len + 1) * sizeof(char *)), malloc((len + 1) * sizeof(size_t)), 0};
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && text[j] != '\n')
      j++;
    if (j < len)
      j++;
    l.at[l.n] = text + i;
    l.len[l.n++] = j - i;
    i = j;
  }
  return l;
}

static void free_lines(lines *l) {
  free(l->at);
  free(l->len);
}

static size_t lcs(const lines *a, const lines *b) {
  size_t *row = calloc((b->n + 1) * (a->n + 1), sizeof *row);
  size_t w = b->n + 1;
  for (size_t i = 1; i <= a->n; i++)
    for (size_t j = 1; j <= b->n; j++) {
      bool eq = a->len[i - 1] == b->len[j - 1] && !memcmp(a->at[i - 1], b->at[j - 1], a->len[i - 1]);
      size_t best = row[(i - 1) * w + j] > row[i * w + j - 1] ? row[(i - 1) * w + j] : row[i * w + j - 1];
      row[i * w + j] = eq ? row[(i - 1) * w + j - 1] + 1 : best;
    }
  size_t r = row[a->n * w + b->n];
  free(row);
  return r;
}

/* Applies a diff of ours to `old` strictly (context must match, line
 * numbers must agree); returns the result and counts the -/+ lines. */
static char *apply_in_memory(const char *old, size_t old_len, const char *diff, size_t *out_len,
                             size_t *removed, size_t *added) {
  lines o = split(old, old_len);
  ks_buf out = KS_BUF_INIT;
  size_t next = 0; /* next old line not yet copied */
  *removed = *added = 0;
  const char *p = strstr(diff, "\n@@ ");
  p = p ? p + 1 : diff + strlen(diff);
  while (*p) {
    unsigned long os, oc = 1, ns, nc = 1;
    assert_true(p[0] == '@' && p[1] == '@');
    char *e;
    os = strtoul(p + 4, &e, 10);
    if (*e == ',')
      oc = strtoul(e + 1, &e, 10);
    assert_int_equal(e[0], ' ');
    assert_int_equal(e[1], '+');
    ns = strtoul(e + 2, &e, 10);
    if (*e == ',')
      nc = strtoul(e + 1, &e, 10);
    (void)ns;
    size_t start = oc ? os - 1 : os;
    assert_true(start >= next);
    for (; next < start; next++)
      ks_buf_add(&out, o.at[next], o.len[next]);
    p = strchr(p, '\n') + 1;
    size_t seen_old = 0, seen_new = 0;
    while (*p && !(p[0] == '@' && p[1] == '@')) {
      const char *eol = strchr(p, '\n');
      size_t len = (size_t)(eol - p); /* without the diff's own newline */
      bool no_eol = eol[1] == '\\';
      const char *body = p + 1;
      size_t body_len = len - 1 + (no_eol ? 0 : 1);
      if (p[0] == ' ' || p[0] == '-') {
        assert_true(next < o.n);
        assert_int_equal(o.len[next], body_len);
        assert_memory_equal(o.at[next], body, body_len);
        if (p[0] == ' ')
          ks_buf_add(&out, body, body_len);
        else
          ++*removed;
        next++;
        seen_old++;
      }
      if (p[0] == ' ' || p[0] == '+')
        seen_new++;
      if (p[0] == '+') {
        ks_buf_add(&out, body, body_len);
        ++*added;
      }
      p = eol + 1;
      if (no_eol)
        p = strchr(p, '\n') + 1;
    }
    assert_int_equal(seen_old, oc);
    assert_int_equal(seen_new, nc);
  }
  for (; next < o.n; next++)
    ks_buf_add(&out, o.at[next], o.len[next]);
  free_lines(&o);
  *out_len = out.len;
  return ks_buf_detach(&out);
}

static void random_text(ks_buf *b, unsigned *seed, int nlines, int alphabet) {
  static const char *const pieces[] = {"}\n", "\n", "  x();\n", "  if (a) {\n", "int f() {\n",
                                       "  y();\r\n", "    z();\n", "  return 0;\n"};
  ks_buf_reset(b);
  for (int i = 0; i < nlines; i++)
    ks_buf_adds(b, pieces[rand_r(seed) % alphabet]);
  if (b->len && rand_r(seed) % 4 == 0)
    b->len--, b->data[b->len] = '\0'; /* no final newline */
}

static void check_random(const char *old, size_t old_len, const char *new, size_t new_len,
                         unsigned context, ks_buf *diff) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_buf_reset(diff);
  assert_int_equal(ks_patch_diff(&ctx, PATH, old, old_len, new, new_len, context, diff), 0);
  ks_ctx_release(&ctx);
  size_t len, removed, added;
  char *got = apply_in_memory(old, old_len, diff->data, &len, &removed, &added);
  assert_int_equal(len, new_len);
  assert_memory_equal(got, new, new_len);
  free(got);
  lines a = split(old, old_len), b = split(new, new_len);
  size_t common = lcs(&a, &b);
  assert_int_equal(removed, a.n - common); /* minimal */
  assert_int_equal(added, b.n - common);
  free_lines(&a);
  free_lines(&b);
}

static void random_diffs_apply_and_are_minimal(void **state) {
  unsigned seed = 12345;
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  for (int iter = 0; iter < 3000; iter++) {
    int alphabet = 2 + iter % 7;
    random_text(&old, &seed, rand_r(&seed) % 40, alphabet);
    if (iter % 3 == 0) {
      /* an edit of the old text: a few lines replaced, inserted, removed */
      ks_buf_reset(&new);
      ks_buf_add(&new, old.data, old.len);
      ks_buf piece = KS_BUF_INIT;
      random_text(&piece, &seed, rand_r(&seed) % 8, alphabet);
      size_t at = old.len ? (size_t)rand_r(&seed) % old.len : 0;
      size_t cut = old.len - at ? (size_t)rand_r(&seed) % (old.len - at) % 20 : 0;
      ks_buf_reset(&new);
      ks_buf_add(&new, old.data, at);
      ks_buf_add(&new, piece.data, piece.len);
      ks_buf_add(&new, old.data + at + cut, old.len - at - cut);
      ks_buf_release(&piece);
    } else {
      random_text(&new, &seed, rand_r(&seed) % 40, alphabet);
    }
    check_random(old.data, old.len, new.data, new.len, (unsigned)iter % 5, &diff);
    if (iter % 100 == 0) /* and through git and patch now and then */
      check_diff_len(old.data, old.len, new.data, new.len, &diff);
  }
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

/* Big inputs: a block added to a 100k-line file is found at once; two
 * scrambled 20k-line texts exceed the exact search's budget and still
 * give a diff that applies. */
static void big_inputs(void **state) {
  ks_buf old = KS_BUF_INIT, new = KS_BUF_INIT, diff = KS_BUF_INIT;
  numbered(&old, 0, 100000);
  numbered(&new, 0, 50000);
  ks_buf_adds(&new, "__global__ void added() {\n}\n\n");
  numbered(&new, 50000, 100000);
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_patch_diff(&ctx, PATH, old.data, old.len, new.data, new.len, 3, &diff), 0);
  assert_string_equal(strstr(diff.data, "@@"), "@@ -49998,6 +49998,9 @@ line49996\n"
                                               " line49997\n line49998\n line49999\n"
                                               "+__global__ void added() {\n"
                                               "+}\n"
                                               "+\n"
                                               " line50000\n line50001\n line50002\n");
  unsigned seed = 7;
  ks_buf_reset(&old);
  ks_buf_reset(&new);
  for (int i = 0; i < 20000; i++) {
    ks_buf_addf(&old, "l%d\n", rand_r(&seed) % 60);
    ks_buf_addf(&new, "l%d\n", rand_r(&seed) % 60);
  }
  ks_buf_reset(&diff);
  assert_int_equal(ks_patch_diff(&ctx, PATH, old.data, old.len, new.data, new.len, 3, &diff), 0);
  ks_ctx_release(&ctx);
  size_t len, removed, added;
  char *got = apply_in_memory(old.data, old.len, diff.data, &len, &removed, &added);
  assert_int_equal(len, new.len);
  assert_memory_equal(got, new.data, new.len);
  free(got);
  ks_buf_release(&old);
  ks_buf_release(&new);
  ks_buf_release(&diff);
}

int main(void) {
  have_patch = system("command -v patch >/dev/null 2>&1") == 0;
  if (!have_patch)
    fprintf(stderr, "note: no `patch` program; diffs are checked with git apply only\n");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(change_in_the_middle),
      cmocka_unit_test(additions_at_start_and_end),
      cmocka_unit_test(deletions),
      cmocka_unit_test(far_changes_make_two_hunks),
      cmocka_unit_test(near_changes_share_a_hunk),
      cmocka_unit_test(missing_final_newline),
      cmocka_unit_test(crlf_lines),
      cmocka_unit_test(empty_sides),
      cmocka_unit_test(identical_texts_give_nothing),
      cmocka_unit_test(new_file),
      cmocka_unit_test(inserted_function_reads_well),
      cmocka_unit_test(hunks_match_git),
      cmocka_unit_test(header_shows_the_definition_above),
      cmocka_unit_test(odd_paths_are_quoted),
      cmocka_unit_test(other_context_sizes),
      cmocka_unit_test(random_diffs_apply_and_are_minimal),
      cmocka_unit_test(big_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
