/* Tests of the capture file of `profile --capture` (backend/capture.c,
 * docs/capture-format.md) without a GPU: the backend's writer read back;
 * the injection library's own writer (runtime/inject/capture_file.c,
 * compiled in) read back by the same reader; every cut of a small file,
 * flipped bytes, a bad magic and a length past the end; which kernel names
 * the library matches; and, where the library is built, the library over
 * test_inject_app's stand-in CUPTI and driver capturing fake launches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "ks_capture.h"
#include "ks_test.h"
#include "ks_ctx.h"

static char tmpdir[PATH_MAX];

static const char *tmp(const char *name) { return ks_test_path(tmpdir, name); }

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return s;
}

static void spit(const char *path, const unsigned char *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The snapshots of the round trip: one allocation that x and y share. */
static float before_xy[16], after_xy[16];

/* axpy(x, y, a, n) with x, y in one allocation, and a pointer that was
 * not captured; blobs 1 (before) and 2 (after). */
static void write_sample(const char *path) {
  ks_ctx ctx = {0};
  ks_capture_writer w;
  assert_int_equal(ks_capture_writer_open(&ctx, path, &w), 0);
  for (int i = 0; i < 16; i++)
    before_xy[i] = (float)i, after_xy[i] = i < 8 ? (float)i : 3.0f * (float)i;
  unsigned long long b, a;
  assert_int_equal(ks_capture_write_blob(&ctx, &w, before_xy, sizeof before_xy, &b), 0);
  assert_int_equal(ks_capture_write_blob(&ctx, &w, after_xy, sizeof after_xy, &a), 0);
  assert_int_equal(b, 1);
  assert_int_equal(a, 2);

  ks_arena arena = KS_ARENA_INIT;
  static const unsigned char xv[8] = {0, 0x10, 0, 0, 0xfe, 0x7f, 0, 0};
  static const unsigned char yv[8] = {0x20, 0x10, 0, 0, 0xfe, 0x7f, 0, 0};
  static const unsigned char av[4] = {0, 0, 0x40, 0x40}; /* 3.0f */
  static const unsigned char nv[4] = {8, 0, 0, 0};
  static const unsigned char zv[8] = {0, 0, 0, 0, 0, 0x80, 0, 0};
  ks_capture_launch l = {.kernel = "_Z4axpyPfS_fi", .launch = 0, .grid = {2, 1, 1},
                         .block = {128, 1, 1}, .smem = 64, .stream = 0x7ffe00001234ull,
                         .device = 0, .api = "cuLaunchKernel", .bytes_needed = 64 + 4096,
                         .bytes = 128};
  ks_capture_param ps[] = {
      {.index = 0, .offset = 0, .size = 8, .kind = KS_CAPTURE_POINTER, .value = xv,
       .memory = "device", .base = 0x7ffe00001000ull, .alloc_size = 64, .ptr_offset = 0,
       .before = 1, .after = 2},
      {.index = 1, .offset = 8, .size = 8, .kind = KS_CAPTURE_POINTER, .value = yv,
       .memory = "device", .base = 0x7ffe00001000ull, .alloc_size = 64, .ptr_offset = 32,
       .before = 1, .after = 2},
      {.index = 2, .offset = 16, .size = 4, .kind = KS_CAPTURE_SCALAR, .value = av},
      {.index = 3, .offset = 20, .size = 4, .kind = KS_CAPTURE_SCALAR, .value = nv},
      {.index = 4, .offset = 24, .size = 8, .kind = KS_CAPTURE_POINTER, .value = zv,
       .memory = "host", .base = 0x800000000000ull, .alloc_size = 4096,
       .not_captured = "not accessible to cuMemcpyDtoH"},
  };
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++)
    *ks_array_push(&arena, &l.params) = ps[i];
  assert_int_equal(ks_capture_write_launch(&ctx, &w, &l), 0);
  assert_int_equal(ks_capture_writer_close(&ctx, &w, true), 0);
  ks_arena_release(&arena);
}

static void crc_is_zlibs_in_both_copies(void **state) {
  assert_int_equal(ks_capture_crc32(0, "123456789", 9), 0xCBF43926u);
  assert_int_equal(ksrt_crc32(0, "123456789", 9), 0xCBF43926u);
  assert_int_equal(ks_capture_crc32(0, "", 0), 0);
  unsigned char bytes[1000];
  for (int i = 0; i < 1000; i++)
    bytes[i] = (unsigned char)(i * 7 + 3);
  assert_int_equal(ks_capture_crc32(ks_capture_crc32(0, bytes, 300), bytes + 300, 700),
                   ksrt_crc32(0, bytes, 1000));
}

static void round_trip(void **state) {
  const char *path = tmp("sample.kscap");
  write_sample(path);
  ks_ctx ctx = {0};
  ks_capture c;
  assert_int_equal(ks_capture_open(&ctx, path, &c), 0);
  assert_true(c.complete);
  assert_int_equal(c.end_launches, 1);
  assert_int_equal(c.launches.len, 1);
  assert_int_equal(c.blobs.len, 2);
  const ks_capture_launch *l = &c.launches.items[0];
  assert_string_equal(l->kernel, "_Z4axpyPfS_fi");
  assert_int_equal(l->grid[0], 2);
  assert_int_equal(l->block[0], 128);
  assert_int_equal(l->smem, 64);
  assert_true(l->stream == 0x7ffe00001234ull);
  assert_string_equal(l->api, "cuLaunchKernel");
  assert_false(l->over_limit);
  assert_int_equal(l->bytes, 128);
  assert_int_equal(l->params.len, 5);
  const ks_capture_param *x = &l->params.items[0], *y = &l->params.items[1];
  assert_int_equal(x->kind, KS_CAPTURE_POINTER);
  assert_true(x->base == 0x7ffe00001000ull && y->base == x->base);
  assert_int_equal(y->ptr_offset, 32);
  assert_int_equal(x->before, 1);
  assert_int_equal(y->before, 1); /* one snapshot for both */
  assert_int_equal(y->after, 2);
  assert_null(x->not_captured);
  assert_string_equal(x->memory, "device");
  static const unsigned char av[4] = {0, 0, 0x40, 0x40};
  assert_int_equal(l->params.items[2].kind, KS_CAPTURE_SCALAR);
  assert_memory_equal(l->params.items[2].value, av, 4);
  const ks_capture_param *z = &l->params.items[4];
  assert_string_equal(z->memory, "host");
  assert_int_equal(z->before, 0);
  assert_string_equal(z->not_captured, "not accessible to cuMemcpyDtoH");

  unsigned char *bytes;
  size_t len;
  assert_int_equal(ks_capture_read_blob(&ctx, &c, 1, &bytes, &len), 0);
  assert_int_equal(len, sizeof before_xy);
  assert_memory_equal(bytes, before_xy, len);
  free(bytes);
  assert_int_equal(ks_capture_read_blob(&ctx, &c, 2, &bytes, &len), 0);
  assert_memory_equal(bytes, after_xy, len);
  free(bytes);
  assert_int_equal(ks_capture_read_blob(&ctx, &c, 3, &bytes, &len), -1);
  assert_non_null(strstr(ctx.error, "no blob 3"));

  char *text = NULL;
  size_t text_len = 0;
  FILE *out = open_memstream(&text, &text_len);
  ks_capture_print(out, &c);
  fclose(out);
  assert_string_equal(text, "  _Z4axpyPfS_fi launch 0: 5 parameters, 3 pointers, 128 B captured "
                            "(1 parameters not captured)\n");
  free(text);
  ks_capture_close(&c);
}

/* The injection library's writer, read by the tool's reader. */
static void inject_writer_is_readable(void **state) {
  const char *path = tmp("inject.kscap");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  unsigned char buf[40];
  for (int i = 0; i < 40; i++)
    buf[i] = (unsigned char)i;
  uint32_t crc_before, crc_after;
  assert_int_equal(ksrt_cap_write_magic(fd), 0);
  assert_int_equal(ksrt_cap_write_blob(fd, 7, buf, sizeof buf, &crc_before), 0);
  buf[0] = 99;
  assert_int_equal(ksrt_cap_write_blob(fd, 8, buf, sizeof buf, &crc_after), 0);
  const unsigned char ptr[8] = {0x10, 0, 0, 0, 1, 0, 0, 0};
  const unsigned char val[4] = {1, 2, 3, 4};
  ksrt_cap_param params[] = {
      {.index = 0, .offset = 0, .size = 8, .kind = "pointer", .value = ptr, .memory = "managed",
       .base = 0x100000000ull, .alloc_size = 40, .ptr_offset = 16, .before = 7, .after = 8},
      {.index = 1, .offset = 8, .size = 4, .kind = "scalar", .value = val},
      {.index = 2, .offset = 12, .size = 4, .kind = "unknown",
       .not_captured = "the launch passed no readable argument values"},
  };
  ksrt_cap_blob blobs[] = {{7, 40, crc_before}, {8, 40, crc_after}};
  ksrt_cap_launch l = {.kernel = "k\"q", .launch = 3, .grid = {1, 2, 3}, .block = {4, 5, 6},
                       .smem = 7, .stream = UINT64_MAX, .device = 1, .api = "cuLaunchKernelEx",
                       .bytes_needed = 40, .bytes = 80, .params = params, .nparams = 3,
                       .blobs = blobs, .nblobs = 2};
  ksrt_jbuf json = KSRT_JBUF_INIT;
  assert_int_equal(ksrt_cap_launch_json(&json, &l), 0);
  assert_int_equal(ksrt_cap_write_record(fd, KSRT_CAP_LAUNCH, NULL, 0, json.data, json.len), 0);
  ksrt_jbuf_release(&json);
  assert_int_equal(ksrt_cap_write_end(fd, 1), 0);
  close(fd);

  ks_ctx ctx = {0};
  ks_capture c;
  assert_int_equal(ks_capture_open(&ctx, path, &c), 0);
  assert_true(c.complete);
  const ks_capture_launch *r = &c.launches.items[0];
  assert_string_equal(r->kernel, "k\"q");
  assert_int_equal(r->launch, 3);
  assert_true(r->stream == UINT64_MAX);
  assert_int_equal(r->device, 1);
  assert_int_equal(r->params.items[0].kind, KS_CAPTURE_POINTER);
  assert_string_equal(r->params.items[0].memory, "managed");
  assert_int_equal(r->params.items[0].ptr_offset, 16);
  assert_int_equal(r->params.items[1].kind, KS_CAPTURE_SCALAR);
  assert_memory_equal(r->params.items[1].value, val, 4);
  assert_int_equal(r->params.items[2].kind, KS_CAPTURE_UNKNOWN);
  assert_null(r->params.items[2].value);
  unsigned char *bytes;
  size_t len;
  assert_int_equal(ks_capture_read_blob(&ctx, &c, 8, &bytes, &len), 0);
  assert_int_equal(len, 40);
  assert_int_equal(bytes[0], 99);
  free(bytes);
  ks_capture_close(&c);
}

/* Byte offsets where records start, for the sample file. */
static size_t record_starts(const unsigned char *p, size_t n, size_t *starts, size_t max) {
  size_t k = 0, pos = KS_CAPTURE_MAGIC_LEN;
  while (pos + 16 <= n && k < max) {
    starts[k++] = pos;
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--)
      len = len << 8 | p[pos + 8 + i];
    pos += 16 + len + 4;
  }
  return k;
}

/* Every cut: an error naming the file, except at a record boundary, where
 * what remains is a capture whose program did not exit normally. */
static void every_truncation_fails_cleanly(void **state) {
  const char *path = tmp("sample.kscap"), *cut = tmp("cut.kscap");
  write_sample(path);
  size_t n;
  unsigned char *p = slurp(path, &n);
  size_t starts[8];
  size_t nrec = record_starts(p, n, starts, 8);
  assert_int_equal(nrec, 4); /* blob, blob, launch, end */
  int boundaries = 0;
  for (size_t len = 0; len < n; len++) {
    spit(cut, p, len);
    ks_ctx ctx = {0};
    ks_capture c;
    int boundary = len == KS_CAPTURE_MAGIC_LEN;
    for (size_t k = 1; k < nrec; k++)
      boundary |= len == starts[k];
    int rc = ks_capture_open(&ctx, cut, &c);
    if (boundary) {
      boundaries++;
      assert_int_equal(rc, 0);
      assert_false(c.complete);
      ks_capture_close(&c);
    } else {
      assert_int_equal(rc, -1);
      assert_non_null(strstr(ctx.error, cut));
      assert_null(strchr(ctx.error, '\n'));
      if (len > KS_CAPTURE_MAGIC_LEN)
        assert_non_null(strstr(ctx.error, ": record "));
    }
  }
  assert_int_equal(boundaries, 4);
  free(p);
}

static void flipped_bytes_are_crc_errors(void **state) {
  const char *path = tmp("sample.kscap"), *bad = tmp("flip.kscap");
  write_sample(path);
  size_t n;
  unsigned char *p = slurp(path, &n);
  size_t starts[8];
  size_t nrec = record_starts(p, n, starts, 8);
  for (size_t k = 0; k < nrec; k++) {
    size_t payload = starts[k] + 16;
    size_t end = k + 1 < nrec ? starts[k + 1] - 4 : n - 4;
    for (size_t at = payload; at < end; at += 5) {
      p[at] ^= 0x20;
      spit(bad, p, n);
      p[at] ^= 0x20;
      ks_ctx ctx = {0};
      ks_capture c;
      assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
      char want[128];
      snprintf(want, sizeof want, ": record %zu at byte %zu: CRC mismatch", k + 1, starts[k]);
      assert_non_null(strstr(ctx.error, want));
    }
  }
  free(p);
}

static void bad_magic_and_versions(void **state) {
  const char *path = tmp("sample.kscap"), *bad = tmp("magic.kscap");
  write_sample(path);
  size_t n;
  unsigned char *p = slurp(path, &n);
  ks_ctx ctx = {0};
  ks_capture c;
  p[0] = 'X';
  spit(bad, p, n);
  assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
  assert_non_null(strstr(ctx.error, "not a capture file"));
  p[0] = 'K';
  p[6] = 2;
  spit(bad, p, n);
  assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
  assert_non_null(strstr(ctx.error, "capture format version 2"));
  spit(bad, (const unsigned char *)"{\"type\":\"start\"}\n", 17);
  assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
  assert_non_null(strstr(ctx.error, "not a capture file"));
  assert_int_equal(ks_capture_open(&ctx, tmp("absent.kscap"), &c), -1);
  assert_non_null(strstr(ctx.error, "cannot open"));
  free(p);
}

static void length_past_the_end(void **state) {
  const char *path = tmp("sample.kscap"), *bad = tmp("long.kscap");
  write_sample(path);
  size_t n;
  unsigned char *p = slurp(path, &n);
  size_t starts[8];
  size_t nrec = record_starts(p, n, starts, 8);
  /* A huge length in the third record, then one just one byte too long. */
  unsigned char save[8];
  memcpy(save, p + starts[2] + 8, 8);
  memset(p + starts[2] + 8, 0xff, 8);
  spit(bad, p, n);
  ks_ctx ctx = {0};
  ks_capture c;
  assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
  char want[96];
  snprintf(want, sizeof want, ": record 3 at byte %zu: length 18446744073709551615 runs past", starts[2]);
  assert_non_null(strstr(ctx.error, want));
  memcpy(p + starts[2] + 8, save, 8);
  uint64_t len = (uint64_t)(n - starts[2] - 16 - 4 + 1);
  for (int i = 0; i < 8; i++)
    p[starts[2] + 8 + i] = (unsigned char)(len >> (8 * i));
  spit(bad, p, n);
  assert_int_equal(ks_capture_open(&ctx, bad, &c), -1);
  assert_non_null(strstr(ctx.error, "runs past the end of the file"));
  assert_true(nrec == 4);
  free(p);
}

/* Metadata found by tests/fuzz/fuzz_capture that the reader took (or died
 * on): a pointer past the end of its allocation, and a size so large that
 * twice it wraps to the length of the value's hex (the arena was asked for
 * 2^63 bytes). Each is refused in one line. */
static void write_launch_json(const char *path, const char *json) {
  size_t n = strlen(json);
  unsigned char h[16] = {KS_CAPTURE_REC_LAUNCH};
  for (int i = 0; i < 8; i++)
    h[8 + i] = (unsigned char)((unsigned long long)n >> (8 * i));
  unsigned crc = ks_capture_crc32(0, json, n);
  unsigned char tail[4] = {(unsigned char)crc, (unsigned char)(crc >> 8),
                           (unsigned char)(crc >> 16), (unsigned char)(crc >> 24)};
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(KS_CAPTURE_MAGIC, 1, KS_CAPTURE_MAGIC_LEN, f);
  fwrite(h, 1, sizeof h, f);
  fwrite(json, 1, n, f);
  fwrite(tail, 1, sizeof tail, f);
  assert_int_equal(fclose(f), 0);
}

static void fuzz_findings_refused(void **state) {
  static const struct {
    const char *param, *want;
  } cases[] = {
      {"{\"index\":0,\"offset\":0,\"size\":8,\"kind\":\"pointer\",\"value\":\"0010000000000000\","
       "\"memory\":\"device\",\"base\":\"0x1000\",\"alloc_size\":64,\"ptr_offset\":75,"
       "\"before\":null,\"after\":null}",
       "parameter 0: 'ptr_offset' 75 is past the end of its allocation (64 bytes)"},
      {"{\"index\":0,\"offset\":0,\"size\":\"0x8000000000000002\",\"kind\":\"scalar\","
       "\"value\":\"aabb\"}",
       "parameter 0: 'value' is not 9223372036854775810 bytes of hex"},
  };
  const char *path = tmp("fuzz.kscap");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char json[1024];
    snprintf(json, sizeof json,
             "{\"kernel\":\"_Z1kPv\",\"launch\":0,\"grid\":[1,1,1],\"block\":[32,1,1],"
             "\"smem\":0,\"stream\":\"0x0\",\"device\":0,\"api\":\"cuLaunchKernel\","
             "\"over_limit\":false,\"bytes_needed\":64,\"bytes\":0,\"params\":[%s],"
             "\"blobs\":[]}",
             cases[i].param);
    write_launch_json(path, json);
    ks_ctx ctx = {0};
    ks_capture c;
    int rc = ks_capture_open(&ctx, path, &c);
    if (!rc)
      ks_capture_close(&c);
    char want[512];
    snprintf(want, sizeof want, "%s: record 1 at byte 8: launch metadata: %s", path,
             cases[i].want);
    if (rc != -1 || strcmp(ctx.error, want))
      fail_msg("case %zu:\n got  %s\n want %s", i, rc ? ctx.error : "(accepted)", want);
  }
}

static void names_match_as_documented(void **state) {
  const char *m = "_ZN2ns5scaleIfLi128EEEvPT_i";
  const char *d = "void ns::scale<float, 128>(float*, int)";
  assert_true(ksrt_cap_name_matches("ns::scale", m, d));
  assert_true(ksrt_cap_name_matches("ns::scale<float,128>", m, d));
  assert_true(ksrt_cap_name_matches("other, ns::scale<float, 128>", m, d));
  assert_true(ksrt_cap_name_matches(m, m, NULL));
  assert_false(ksrt_cap_name_matches("scale", m, d)); /* qualified names only */
  assert_false(ksrt_cap_name_matches("ns::scale<float, 64>", m, d));
  assert_false(ksrt_cap_name_matches("ns::scale", m, NULL));
  assert_true(ksrt_cap_name_matches("k", "_Z1kPfi", "k(float*, int)"));
  assert_true(ksrt_cap_name_matches("(anonymous namespace)::k", "_ZN12_GLOBAL__N_11kEv",
                                    "(anonymous namespace)::k()"));
  assert_true(ksrt_cap_name_matches("a,saxpy", "saxpy", NULL)); /* extern "C" */
  assert_false(ksrt_cap_name_matches("", "saxpy", NULL));
  assert_false(ksrt_cap_name_matches(",,", "saxpy", NULL));
}

/* A capture of one launch whose metadata is `json`, then `tail` (bytes the
 * format forbids after the object, or ""). */
static void write_one_launch(const char *path, const char *json, const char *tail) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  size_t n = strlen(json) + strlen(tail);
  char *payload = malloc(n + 1);
  assert_non_null(payload);
  snprintf(payload, n + 1, "%s%s", json, tail);
  assert_int_equal(ksrt_cap_write_magic(fd), 0);
  assert_int_equal(ksrt_cap_write_record(fd, KSRT_CAP_LAUNCH, NULL, 0, payload, n), 0);
  free(payload);
  close(fd);
}

/* Metadata that parses as JSON but says what docs/capture-format.md does
 * not allow: each refused in one line naming the file, the record and the
 * field. */
#define P0 "{\"index\":0,\"offset\":0,\"size\":4,\"kind\":\"scalar\",\"value\":\"01000000\"}"
#define P1 "{\"index\":1,\"offset\":8,\"size\":8,\"kind\":\"scalar\",\"value\":\"0000000000000000\"}"
static void metadata_the_format_forbids(void **state) {
  static const struct {
    const char *launch, *grid, *block, *smem, *params, *tail, *want;
  } cases[] = {
      {"0", "[1,1,1]", "[32,1,1]", "0", NULL, "", NULL}, /* the valid base */
      {"0", "[65535,65535,65535]", "[1024,1,1]", "49152", NULL, "", NULL},
      {"0", "[0,1,1]", "[32,1,1]", "0", NULL, "",
       "launch metadata: 'grid' [0,1,1]: x must be from 1 to 2147483647"},
      {"0", "[1,65536,1]", "[32,1,1]", "0", NULL, "",
       "launch metadata: 'grid' [1,65536,1]: y must be from 1 to 65535"},
      {"0", "[1,1,1]", "[2048,1,1]", "0", NULL, "",
       "launch metadata: 'block' [2048,1,1]: x must be from 1 to 1024"},
      {"0", "[1,1,1]", "[32,32,2]", "0", NULL, "",
       "launch metadata: 'block' [32,32,2]: 2048 threads, more than a block can have (1024)"},
      {"0", "[1,1,1]", "[32,1,0]", "0", NULL, "",
       "launch metadata: 'block' [32,1,0]: z must be from 1 to 64"},
      {"0", "[1.5,1,1]", "[32,1,1]", "0", NULL, "",
       "launch metadata: 'grid' is not [x,y,z] of whole numbers"},
      {"0.5", "[1,1,1]", "[32,1,1]", "0", NULL, "",
       "launch metadata: 'launch' is missing or not a non-negative integer"},
      {"0", "[1,1,1]", "[32,1,1]", "4294967296", NULL, "",
       "launch metadata: 'smem' 4294967296 does not fit 32 bits"},
      {"0", "[1,1,1]", "[32,1,1]", "0", P0 "," P0, "",
       "launch metadata: parameter 1: 'index' is 0 (parameters are listed in order, from 0, "
       "each once)"},
      {"0", "[1,1,1]", "[32,1,1]", "0",
       P0 ",{\"index\":1099511627776,\"offset\":8,\"size\":4,\"kind\":\"scalar\","
       "\"value\":\"01000000\"}",
       "", "launch metadata: parameter 1: 'index' is 1099511627776"},
      {"0", "[1,1,1]", "[32,1,1]", "0",
       P0 ",{\"index\":1,\"offset\":2,\"size\":4,\"kind\":\"scalar\",\"value\":\"01000000\"}", "",
       "launch metadata: parameter 1: 'offset' 2 overlaps parameter 0 (bytes 0 to 4)"},
      {"0", "[1,1,1]", "[32,1,1]", "0", NULL, "\n",
       "launch metadata: 1 byte after the JSON object"},
      {"0", "[1,1,1]", "[32,1,1]", "0", NULL, " {}",
       "launch metadata: 3 bytes after the JSON object"},
  };
  const char *path = tmp("meta.kscap");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *params = cases[i].params ? cases[i].params : P0 "," P1;
    char json[2048];
    snprintf(json, sizeof json,
             "{\"kernel\":\"k\",\"launch\":%s,\"grid\":%s,\"block\":%s,\"smem\":%s,"
             "\"stream\":\"0x0\",\"device\":0,\"api\":\"cuLaunchKernel\",\"over_limit\":false,"
             "\"bytes_needed\":0,\"bytes\":0,\"params\":[%s],\"blobs\":[]}",
             cases[i].launch, cases[i].grid, cases[i].block, cases[i].smem, params);
    write_one_launch(path, json, cases[i].tail);
    ks_ctx ctx = {0};
    ks_capture c;
    int rc = ks_capture_open(&ctx, path, &c);
    if (!cases[i].want) {
      if (rc)
        fail_msg("case %zu refused: %s", i, ctx.error);
      assert_int_equal(c.launches.len, 1);
      assert_int_equal(c.launches.items[0].params.len, 2);
      ks_capture_close(&c);
      continue;
    }
    char want[512];
    snprintf(want, sizeof want, "%s: record 1 at byte 8: %s", path, cases[i].want);
    if (rc != -1 || !strstr(ctx.error, want))
      fail_msg("case %zu:\n got  %s\n want %s", i, rc ? ctx.error : "(accepted)", want);
    assert_null(strchr(ctx.error, '\n'));
  }

  /* The record header's reserved field, which no CRC covers. */
  const char *sample = tmp("sample.kscap");
  write_sample(sample);
  size_t n;
  unsigned char *p = slurp(sample, &n);
  p[KS_CAPTURE_MAGIC_LEN + 4] = 1;
  spit(path, p, n);
  free(p);
  ks_ctx ctx = {0};
  ks_capture c;
  assert_int_equal(ks_capture_open(&ctx, path, &c), -1);
  char want[512];
  snprintf(want, sizeof want, "%s: record 1 at byte 8: the header's reserved field is 1, not 0",
           path);
  assert_string_equal(ctx.error, want);
}
#undef P0
#undef P1

#ifdef KS_INJECT_APP
/* The library over test_inject_app's stand-in CUPTI and driver: axpy
 * launched three times (two captured), x and y in one allocation; a
 * managed pointer through cuLaunchKernelEx; a kernel not chosen; one over
 * the limit. */
static void library_captures_fake_launches(void **state) {
  char cmd[8 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "cd %s && env KERNELSMITH_PROFILE_OUT=%s/p.jsonl "
           "KERNELSMITH_CAPTURE='_Z4axpyPfS_fi, scale_c,_Z3bigPf' KERNELSMITH_CAPTURE_OUT=%s "
           "KERNELSMITH_CAPTURE_LAUNCHES=2 KERNELSMITH_CAPTURE_LIMIT=524288 %s %s capture "
           ">%s/stdout 2>%s/stderr",
           tmpdir, tmpdir, tmp("app.kscap"), KS_INJECT_APP, KS_INJECT_LIB, tmpdir, tmpdir);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  size_t n;
  unsigned char *err = slurp(tmp("stderr"), &n);
  assert_int_equal(n, 0);
  free(err);

  ks_ctx ctx = {0};
  ks_capture c;
  int ok = ks_capture_open(&ctx, tmp("app.kscap"), &c);
  if (ok)
    fprintf(stderr, "%s\n", ctx.error);
  assert_int_equal(ok, 0);
  assert_true(c.complete);
  assert_int_equal(c.launches.len, 4);
  assert_int_equal(c.blobs.len, 6);
  const ks_capture_launch *l0 = &c.launches.items[0], *l1 = &c.launches.items[1];
  assert_string_equal(l0->kernel, "_Z4axpyPfS_fi");
  assert_int_equal(l0->launch, 0);
  assert_int_equal(l1->launch, 1);
  assert_int_equal(l0->params.len, 4);
  const ks_capture_param *x = &l0->params.items[0], *y = &l0->params.items[1];
  assert_int_equal(x->kind, KS_CAPTURE_POINTER);
  assert_int_equal(y->kind, KS_CAPTURE_POINTER);
  assert_true(x->base == y->base);
  assert_int_equal(y->ptr_offset, 256);
  assert_int_equal(x->before, y->before);
  assert_int_equal(x->alloc_size, 512);
  assert_int_equal(l0->params.items[2].kind, KS_CAPTURE_SCALAR);
  float a;
  memcpy(&a, l0->params.items[2].value, 4);
  assert_true(a == 2.0f);

  /* y = 2x + y: before 1, after 1 + 2i; the next launch starts there. */
  unsigned char *before, *after, *next;
  size_t lb, la, ln;
  assert_int_equal(ks_capture_read_blob(&ctx, &c, x->before, &before, &lb), 0);
  assert_int_equal(ks_capture_read_blob(&ctx, &c, x->after, &after, &la), 0);
  assert_int_equal(ks_capture_read_blob(&ctx, &c, l1->params.items[0].before, &next, &ln), 0);
  assert_int_equal(lb, 512);
  float fb[128], fa[128];
  memcpy(fb, before, 512);
  memcpy(fa, after, 512);
  assert_true(fb[64 + 5] == 1.0f && fa[64 + 5] == 11.0f && fa[5] == 5.0f);
  assert_memory_equal(after, next, 512);
  free(before);
  free(after);
  free(next);

  const ks_capture_launch *s = &c.launches.items[2];
  assert_string_equal(s->kernel, "scale_c");
  assert_string_equal(s->api, "cuLaunchKernelEx");
  assert_int_equal(s->smem, 256);
  assert_string_equal(s->params.items[0].memory, "managed");
  assert_int_equal(s->params.items[0].ptr_offset, 32);
  assert_int_equal(s->params.items[2].kind, KS_CAPTURE_SCALAR); /* a double, not memory */

  const ks_capture_launch *big = &c.launches.items[3];
  assert_string_equal(big->kernel, "_Z3bigPf");
  assert_true(big->over_limit);
  assert_int_equal(big->bytes_needed, 1 << 20);
  assert_int_equal(big->bytes, 0);
  assert_int_equal(big->params.items[0].before, 0);
  assert_string_equal(big->params.items[0].not_captured, "over the capture limit");
  ks_capture_close(&c);
}

/* With a window, the allocation over the limit is snapshotted around its
 * pointer only, and the span is in the file; small ones stay whole. */
static void library_captures_a_window(void **state) {
  char cmd[8 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "cd %s && env KERNELSMITH_PROFILE_OUT=%s/p.jsonl "
           "KERNELSMITH_CAPTURE='_Z4axpyPfS_fi,_Z3bigPf' KERNELSMITH_CAPTURE_OUT=%s "
           "KERNELSMITH_CAPTURE_LIMIT=524288 KERNELSMITH_CAPTURE_WINDOW=4096 %s %s capture "
           ">%s/stdout 2>%s/stderr",
           tmpdir, tmpdir, tmp("window.kscap"), KS_INJECT_APP, KS_INJECT_LIB, tmpdir, tmpdir);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  ks_ctx ctx = {0};
  ks_capture c;
  int ok = ks_capture_open(&ctx, tmp("window.kscap"), &c);
  if (ok)
    fprintf(stderr, "%s\n", ctx.error);
  assert_int_equal(ok, 0);
  assert_int_equal(c.launches.len, 2);
  const ks_capture_param *x = &c.launches.items[0].params.items[0];
  assert_int_equal(x->span_lo, 0);
  assert_int_equal(x->span_hi, 512); /* whole */
  const ks_capture_launch *big = &c.launches.items[1];
  assert_string_equal(big->kernel, "_Z3bigPf");
  assert_false(big->over_limit);
  assert_int_equal(big->bytes_needed, 4096);
  const ks_capture_param *b = &big->params.items[0];
  assert_int_equal(b->alloc_size, 1 << 20);
  assert_int_equal(b->span_lo, 0);
  assert_int_equal(b->span_hi, 4096);
  assert_int_equal(ks_capture_blob_find(&c, b->before)->size, 4096);
  assert_int_equal(ks_capture_blob_find(&c, b->after)->size, 4096);
  ks_capture_close(&c);
}

/* KERNELSMITH_CAPTURE_OUT unwritable: one stderr line, the program unchanged. */
static void library_unwritable_capture_is_one_line(void **state) {
  char cmd[8 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "cd %s && env KERNELSMITH_PROFILE_OUT=%s/p.jsonl KERNELSMITH_CAPTURE=_Z4axpyPfS_fi "
           "KERNELSMITH_CAPTURE_OUT=/nonexistent-dir/c.kscap %s %s capture >%s/stdout 2>%s/stderr",
           tmpdir, tmpdir, KS_INJECT_APP, KS_INJECT_LIB, tmpdir, tmpdir);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  size_t n;
  unsigned char *err = slurp(tmp("stderr"), &n);
  err[n] = 0;
  assert_non_null(strstr((char *)err, "kernelsmith-inject: capture: cannot open"));
  assert_int_equal(strchr((char *)err, '\n') - (char *)err, (long)n - 1);
  free(err);
  unsigned char *out = slurp(tmp("stdout"), &n);
  assert_int_equal(n, 10);
  assert_memory_equal(out, "app: done\n", 10);
  free(out);
}
#endif

static int setup(void **state) {
  snprintf(tmpdir, sizeof tmpdir, "%s/ks_capture_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(crc_is_zlibs_in_both_copies),
      cmocka_unit_test(round_trip),
      cmocka_unit_test(inject_writer_is_readable),
      cmocka_unit_test(every_truncation_fails_cleanly),
      cmocka_unit_test(flipped_bytes_are_crc_errors),
      cmocka_unit_test(bad_magic_and_versions),
      cmocka_unit_test(length_past_the_end),
      cmocka_unit_test(fuzz_findings_refused),
      cmocka_unit_test(names_match_as_documented),
      cmocka_unit_test(metadata_the_format_forbids),
#ifdef KS_INJECT_APP
      cmocka_unit_test(library_captures_fake_launches),
      cmocka_unit_test(library_captures_a_window),
      cmocka_unit_test(library_unwritable_capture_is_one_line),
#endif
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
