/* Unit tests of support/: strings, arenas, arrays, source-text helpers,
 * fault injection, and tree walks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ks_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_alloc.h"
#include "ks_buf.h"
#include "ks_ctext.h"
#include "ks_ctx.h"
#include "ks_fs.h"
#include "ks_hash.h"

static void buf_grows_and_stays_terminated(void **state) {
  ks_buf b = KS_BUF_INIT;
  assert_string_equal(b.data, "");
  for (int i = 0; i < 1000; i++)
    ks_buf_addf(&b, "%d,", i);
  assert_int_equal(b.len, strlen(b.data));
  assert_memory_equal(b.data, "0,1,2,", 6);
  ks_buf_reset(&b);
  assert_string_equal(b.data, "");
  ks_buf_adds(&b, "x  \n");
  ks_buf_rtrim(&b);
  assert_string_equal(b.data, "x");
  char *owned = ks_buf_detach(&b);
  assert_string_equal(owned, "x");
  assert_string_equal(b.data, "");
  free(owned);
  ks_buf_release(&b);
}

static void buf_limit_truncates(void **state) {
  ks_buf b;
  ks_buf_init(&b, 8);
  assert_int_equal(ks_buf_adds(&b, "12345"), 0);
  assert_int_equal(ks_buf_adds(&b, "67890"), -1);
  assert_true(b.truncated);
  assert_int_equal(b.len, 8);
  assert_string_equal(b.data, "12345678");
  ks_buf_release(&b);
}

static void arena_allocates_zeroed_aligned(void **state) {
  ks_arena a = KS_ARENA_INIT;
  for (int i = 0; i < 5000; i++) {
    char *p = ks_arena_alloc(&a, (size_t)(i % 97) + 1);
    assert_int_equal((uintptr_t)p % _Alignof(max_align_t), 0);
    for (int k = 0; k < i % 97 + 1; k++)
      assert_int_equal(p[k], 0);
    memset(p, 0xAB, (size_t)(i % 97) + 1);
  }
  char *big = ks_arena_alloc(&a, 1 << 20); /* larger than a block */
  big[(1 << 20) - 1] = 1;
  assert_string_equal(ks_arena_printf(&a, "%s-%d", "k", 7), "k-7");
  assert_string_equal(ks_arena_strndup(&a, "abcdef", 3), "abc");
  ks_arena_release(&a);
}

static void array_push_keeps_items(void **state) {
  ks_arena a = KS_ARENA_INIT;
  KS_ARRAY(int) xs = {0};
  for (int i = 0; i < 1000; i++)
    *ks_array_push(&a, &xs) = i;
  assert_int_equal(xs.len, 1000);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(xs.items[i], i);
  ks_arena_release(&a);
}

static void ctext_splits_at_top_level(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_strings parts = {0};
  const char *text = " f(a, b), x[1, 2] , \"s,t\", /* c, d */ 'e', {1, 2} ";
  ks_ctext_split(&a, text, text + strlen(text), &parts);
  assert_int_equal(parts.len, 5);
  assert_string_equal(parts.items[0], "f(a, b)");
  assert_string_equal(parts.items[1], "x[1, 2]");
  assert_string_equal(parts.items[2], "\"s,t\"");
  assert_string_equal(parts.items[3], "/* c, d */ 'e'");
  assert_string_equal(parts.items[4], "{1, 2}");
  ks_strings none = {0};
  const char *blank = "  ";
  ks_ctext_split(&a, blank, blank + 2, &none);
  assert_int_equal(none.len, 0);
  ks_arena_release(&a);
}

static void ctext_finds_outside_comments(void **state) {
  const char *text = "k /* <<< */ \"<<<\" <<<g, b>>>(x)";
  const char *end = text + strlen(text);
  const char *open = ks_ctext_find(text, end, "<<<");
  assert_non_null(open);
  assert_int_equal(open - text, 18);
  const char *paren = strchr(text, '(');
  assert_ptr_equal(ks_ctext_matching(paren, end), end - 1);
  assert_null(ks_ctext_matching(text, end)); /* not a bracket */
}

static void ctext_substitutes_identifiers(void **state) {
  ks_arena a = KS_ARENA_INIT;
  const char *names[] = {"n", "BLOCK"};
  const char *values[] = {"count", "256"};
  const char *out =
      ks_ctext_substitute(&a, "(n + BLOCK - 1) / BLOCK + nn + 1.5f /* n */ + \"n\"", names, values, 2);
  assert_string_equal(out, "(count + 256 - 1) / 256 + nn + 1.5f /* n */ + \"n\"");
  ks_arena_release(&a);
}

static void faults_fire_on_the_nth_call(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_ctx_set_faults(&ctx, "parse:2,nvrtc:0"), 0);
  assert_false(ks_fault(&ctx, "parse"));
  assert_true(ks_fault(&ctx, "parse"));
  assert_false(ks_fault(&ctx, "parse"));
  assert_true(ks_fault(&ctx, "nvrtc"));
  assert_true(ks_fault(&ctx, "nvrtc"));
  assert_false(ks_fault(&ctx, "other"));
  assert_int_equal(ks_ctx_set_faults(&ctx, "parse:x"), -1);
  assert_non_null(strstr(ctx.error, "parse"));
  ks_ctx_release(&ctx);
}

static void fail_prefix_keeps_message(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  assert_int_equal(ks_fail(&ctx, "line %d: bad", 3), -1);
  ks_fail_prefix(&ctx, "spec.txt");
  assert_string_equal(ctx.error, "spec.txt: line 3: bad");
  /* A message that quotes the previous one reads it whole. */
  assert_int_equal(ks_fail(&ctx, "guard '%s': %s", "disjoint(a, c)", ctx.error), -1);
  assert_string_equal(ctx.error, "guard 'disjoint(a, c)': spec.txt: line 3: bad");
  ks_ctx_release(&ctx);
}

/* A message longer than the error buffer keeps its start and its end (the
 * reason), the middle cut; before, the end was lost. */
static void long_failures_keep_their_end(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  char *quoted = malloc(10001);
  assert_non_null(quoted);
  memset(quoted, 'x', 10000);
  quoted[10000] = '\0';
  assert_int_equal(ks_fail(&ctx, "t.cu:3: length '%s': unknown name 'm' at column 9", quoted), -1);
  size_t n = strlen(ctx.error);
  assert_true(n < sizeof ctx.error && n > sizeof ctx.error - 16);
  assert_int_equal(strncmp(ctx.error, "t.cu:3: length 'xxx", 19), 0);
  assert_non_null(strstr(ctx.error, "xxx ... xxx"));
  static const char reason[] = "xxx': unknown name 'm' at column 9";
  assert_string_equal(ctx.error + n - (sizeof reason - 1), reason);
  /* A prefix on a full message keeps the end too. */
  ks_fail_prefix(&ctx, "spec.txt");
  n = strlen(ctx.error);
  assert_int_equal(strncmp(ctx.error, "spec.txt: t.cu:3:", 17), 0);
  assert_string_equal(ctx.error + n - (sizeof reason - 1), reason);
  /* No character is cut in two. */
  for (size_t i = 0; i < 10000; i += 2)
    memcpy(quoted + i, "\xC3\xA9", 2); /* é */
  ks_fail(&ctx, "%s!", quoted);
  n = strlen(ctx.error);
  assert_int_equal(ctx.error[n - 1], '!');
  const char *cut = strstr(ctx.error, " ... ");
  assert_non_null(cut);
  assert_int_equal((cut - ctx.error) % 2, 0);
  assert_int_equal((unsigned char)cut[5], 0xC3);
  free(quoted);
  ks_ctx_release(&ctx);
}

typedef struct seen {
  char paths[16][256];
  int n;
} seen;

static int record(const char *path, void *data) {
  seen *s = data;
  if (s->n < 16)
    snprintf(s->paths[s->n++], 256, "%s", strrchr(path, '/') + 1);
  return 0;
}

static void walk_is_sorted_and_skips_hidden(void **state) {
  char dir[] = "/tmp/ks-walk-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512];
  const char *files[] = {"b.cu", "a.cu", ".hidden.cu", "sub/c.cuh"};
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/sub/loop", dir);
  assert_int_equal(symlink(dir, path), 0); /* a loop back to the root */
  for (size_t i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
  }
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  seen s = {0};
  assert_int_equal(ks_walk(&ctx, dir, record, &s), 0);
  assert_int_equal(s.n, 3);
  assert_string_equal(s.paths[0], "a.cu");
  assert_string_equal(s.paths[1], "b.cu");
  assert_string_equal(s.paths[2], "c.cuh");
  assert_int_equal(ks_walk(&ctx, "/nonexistent/ks", record, &s), -1);
  assert_non_null(strstr(ctx.error, "/nonexistent/ks"));
  ks_ctx_release(&ctx);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void read_file_caps_size(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_buf b = KS_BUF_INIT;
  assert_int_equal(ks_read_file(&ctx, ks_testdata("frontend/overloads.cu"), 0, &b), 0);
  assert_non_null(strstr(b.data, "fill_all"));
  assert_int_equal(ks_read_file(&ctx, ks_testdata("frontend/overloads.cu"), 10, &b), -1);
  assert_non_null(strstr(ctx.error, "larger than"));
  ks_buf_release(&b);
  ks_ctx_release(&ctx);
}

static void sha256_known_value(void **state) {
  char hex[KS_HASH_HEX];
  ks_sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* mkdir -p: nested directories made, an existing one fine, a file in the
 * way refused. */
static void mkdir_p_makes_every_level(void **state) {
  (void)state;
  char dir[] = "/tmp/ks-mkdir-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], file[512];
  snprintf(path, sizeof path, "%s/a/b/c", dir);
  assert_int_equal(ks_mkdir_p(path), 0);
  assert_true(ks_is_dir(path));
  assert_int_equal(ks_mkdir_p(path), 0);
  snprintf(file, sizeof file, "%s/f", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(path, sizeof path, "%s/f/g", dir);
  assert_int_equal(ks_mkdir_p(path), -1);
  assert_false(ks_is_dir(path));
}

static void path_helpers(void **state) {
  assert_string_equal(ks_path_below("/a/b/c.cu", "/a"), "b/c.cu");
  assert_string_equal(ks_path_below("/ab/c.cu", "/a"), "/ab/c.cu");
  assert_true(ks_path_has_ext("x.cu", ".cu"));
  assert_false(ks_path_has_ext("x.cuh", ".cu"));
  char *j = ks_path_join("/a/", "b");
  assert_string_equal(j, "/a/b");
  free(j);
  char *d = ks_path_dirname("/a/b/c");
  assert_string_equal(d, "/a/b");
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(buf_grows_and_stays_terminated),
      cmocka_unit_test(buf_limit_truncates),
      cmocka_unit_test(arena_allocates_zeroed_aligned),
      cmocka_unit_test(array_push_keeps_items),
      cmocka_unit_test(ctext_splits_at_top_level),
      cmocka_unit_test(ctext_finds_outside_comments),
      cmocka_unit_test(ctext_substitutes_identifiers),
      cmocka_unit_test(faults_fire_on_the_nth_call),
      cmocka_unit_test(fail_prefix_keeps_message),
      cmocka_unit_test(long_failures_keep_their_end),
      cmocka_unit_test(walk_is_sorted_and_skips_hidden),
      cmocka_unit_test(read_file_caps_size),
      cmocka_unit_test(sha256_known_value),
      cmocka_unit_test(path_helpers),
      cmocka_unit_test(mkdir_p_makes_every_level),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
