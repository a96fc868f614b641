/* test_ref_widen: the fp64 reference on captured inputs, host side (no
 * GPU). Snapshots written in the capture format (backend/capture.c's
 * writer) are read back as the worker reads a captured buffer (its file
 * and offset, wk_read_file) and widened into the twin's f64 buffer
 * (wk_widen_f64): every value exactly, bit for bit, subnormals, signed
 * zeros, infinities and NaNs (payloads, signalling ones) included, for f32,
 * f16 and bf16. Then the twin's workload of a captured one (pointers into a
 * widened allocation moved with it) and what the worker refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_capture.h"
#include "worker.h"

static uint64_t bits_of(double d) {
  uint64_t b;
  memcpy(&b, &d, 8);
  return b;
}

/* A capture file with the three snapshots as blobs 1, 2, 3; their offsets. */
static void write_snapshots(const char *path, const void *f32, size_t n32, const void *f16,
                            size_t n16, const void *bf16, size_t nbf, ks_capture *cp) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_capture_writer w;
  unsigned long long id;
  assert_int_equal(ks_capture_writer_open(&ctx, path, &w), 0);
  assert_int_equal(ks_capture_write_blob(&ctx, &w, f32, n32 * 4, &id), 0);
  assert_int_equal(id, 1);
  assert_int_equal(ks_capture_write_blob(&ctx, &w, f16, n16 * 2, &id), 0);
  assert_int_equal(ks_capture_write_blob(&ctx, &w, bf16, nbf * 2, &id), 0);
  assert_int_equal(ks_capture_writer_close(&ctx, &w, true), 0);
  assert_int_equal(ks_capture_open(&ctx, path, cp), 0);
  ks_ctx_release(&ctx);
}

/* The bytes of blob `id` as a captured buffer's inputs: read from the file
 * at the blob's offset, as buffers.c does. */
static void *read_blob(ks_arena *a, const ks_capture *cp, unsigned long long id, size_t bytes) {
  const ks_capture_blob *b = ks_capture_blob_find(cp, id);
  assert_non_null(b);
  void *dst = ks_arena_alloc(a, bytes);
  const char *why = wk_read_file(a, cp->path, b->offset, dst, bytes);
  if (why)
    fail_msg("read blob %llu: %s", id, why);
  return dst;
}

static void widening(void **state) {
  (void)state;
  static const uint32_t f32[] = {
      0x00000000u, 0x80000000u,             /* +0, -0 */
      0x3f800000u, 0xbfc00000u, 0x3dcccccdu, /* 1, -1.5, 0.1f */
      0x00800000u, 0x7f7fffffu,             /* FLT_MIN, FLT_MAX */
      0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u, /* subnormals */
      0x7f800000u, 0xff800000u,             /* +-inf */
      0x7fc00000u, 0xffc00001u, 0x7fc12345u, /* quiet NaNs, signs and payloads */
      0x7f800001u, 0x7fbfffffu,             /* signalling NaNs */
  };
  enum { N32 = sizeof f32 / sizeof *f32 };
  static const uint16_t f16[] = {0x0000, 0x8000, 0x3c00, 0x0001, 0x83ff, 0x0400, 0x7bff,
                                 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe3f};
  enum { N16 = sizeof f16 / sizeof *f16 };
  static const uint16_t bf16[] = {0x0000, 0x8000, 0x3f80, 0x0001, 0x007f, 0x0080, 0x7f7f,
                                  0x7f80, 0xff80, 0x7fc1, 0x7f81};
  enum { NBF = sizeof bf16 / sizeof *bf16 };
  char path[] = "/tmp/ks-ref-widen-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  ks_capture cp;
  write_snapshots(path, f32, N32, f16, N16, bf16, NBF, &cp);
  ks_arena a = KS_ARENA_INIT;

  double out[N32];
  wk_widen_f64(KS_DT_F32, read_blob(&a, &cp, 1, sizeof f32), N32, out);
  for (size_t i = 0; i < N32; i++) {
    float f;
    memcpy(&f, &f32[i], 4);
    uint64_t want;
    if (isnan(f)) /* sign, all-ones exponent, the payload shifted: signalling kept */
      want = (uint64_t)(f32[i] >> 31) << 63 | 0x7ffull << 52 | (uint64_t)(f32[i] & 0x7fffff) << 29;
    else
      want = bits_of((double)f); /* exact: every float is a double */
    if (bits_of(out[i]) != want)
      fail_msg("f32 0x%08x: got 0x%016llx, want 0x%016llx", f32[i],
               (unsigned long long)bits_of(out[i]), (unsigned long long)want);
  }
  /* spot values, stated as numbers */
  assert_true(out[7] == ldexp(1, -149) && out[8] == -ldexp(1, -149));
  assert_true(out[9] == ldexp(0x7fffff, -149) && out[10] == ldexp(1, -127));
  assert_true(out[5] == FLT_MIN && out[6] == FLT_MAX && out[4] == (double)0.1f);
  assert_true(signbit(out[1]) && out[1] == 0 && isinf(out[12]) && out[12] < 0);
  assert_int_equal(bits_of(out[16]), 0x7ff0000020000000ull); /* still signalling */

  double h[N16];
  wk_widen_f64(KS_DT_F16, read_blob(&a, &cp, 2, sizeof f16), N16, h);
  const double hwant[] = {0, -0.0, 1, ldexp(1, -24), -ldexp(1023, -24), ldexp(1, -14), 65504,
                          INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof hwant / sizeof *hwant; i++)
    if (bits_of(h[i]) != bits_of(hwant[i]))
      fail_msg("f16 0x%04x: got %.17g", f16[i], h[i]);
  assert_int_equal(bits_of(h[9]), 0x7ff8000000000000ull);
  assert_int_equal(bits_of(h[10]), 0x7ff0040000000000ull); /* signalling, payload 1 */
  assert_int_equal(bits_of(h[11]), 0xfff8fc0000000000ull);
  /* the worker's own f16 conversion agrees where it is exact */
  for (size_t i = 0; i < 9; i++)
    assert_true(h[i] == (double)wk_f16_to_f32(f16[i]));

  double bf[NBF];
  wk_widen_f64(KS_DT_BF16, read_blob(&a, &cp, 3, sizeof bf16), NBF, bf);
  const double bwant[] = {0, -0.0, 1, ldexp(1, -133), ldexp(127, -133), ldexp(1, -126),
                          ldexp(0xff, 127 - 7), INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof bwant / sizeof *bwant; i++)
    if (bits_of(bf[i]) != bits_of(bwant[i]))
      fail_msg("bf16 0x%04x: got %.17g", bf16[i], bf[i]);
  assert_int_equal(bits_of(bf[9]), 0x7ff8200000000000ull);
  assert_int_equal(bits_of(bf[10]), 0x7ff0200000000000ull);

  /* f64 is copied, integers converted */
  const double d[2] = {0.1, -3};
  double dd[2];
  wk_widen_f64(KS_DT_F64, d, 2, dd);
  assert_memory_equal(d, dd, sizeof d);
  const int32_t ints[2] = {-7, 1 << 30};
  wk_widen_f64(KS_DT_I32, ints, 2, dd);
  assert_true(dd[0] == -7 && dd[1] == 1 << 30);

  ks_capture_close(&cp);
  unlink(path);
  ks_arena_release(&a);
}

/* A captured workload as passes/target_capture.c builds it: x and y one
 * f32 allocation from a file (y at byte 256), a null pointer as raw bytes
 * marked ref_same, an int buffer at an offset. */
static void captured_twin(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_workload w = {.size_name = "capture0", .captured = true,
                   .launch = {{1, 1, 1}, {64, 1, 1}, 0}};
  *ks_array_push(&a, &w.buffers) =
      (ks_wbuffer){.name = "x", .dtype = KS_DT_F32, .count = 128, .role = KS_ROLE_INOUT,
          .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = "/tmp/c.kscap",
          .file_offset = 40};
  *ks_array_push(&a, &w.buffers) =
      (ks_wbuffer){.name = "idx", .dtype = KS_DT_I32, .count = 64, .role = KS_ROLE_IN,
          .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = "/tmp/c.kscap",
          .file_offset = 600};
  static const unsigned char null8[8] = {0};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0, .offset = 256};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 1, .offset = 12};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_BYTES, .bytes = null8, .size = 8, .ref_same = true};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_F32, .value = {false, 0, 0.1f}};
  assert_null(wk_ref_refusal(&w)); /* file inputs are widened like any */
  const ks_workload *t = wk_ref_workload(&a, &w);
  assert_int_equal(t->buffers.items[0].dtype, KS_DT_F64);
  assert_int_equal(t->buffers.items[0].dist, KS_DIST_FILE);
  assert_int_equal(t->buffers.items[0].file_offset, 40); /* read as floats, widened */
  assert_int_equal(t->buffers.items[1].dtype, KS_DT_I32);
  assert_int_equal(t->args.items[1].offset, 512); /* 64 floats in: 64 doubles in */
  assert_int_equal(t->args.items[2].offset, 12);  /* an int buffer stays */
  assert_true(t->args.items[3].kind == KS_ARG_BYTES && t->args.items[3].ref_same);
  assert_int_equal(t->args.items[4].dtype, KS_DT_F64);
  assert_true(t->args.items[4].value.f == (double)0.1f);

  /* raw bytes the twin may read otherwise (a struct): refused, saying so */
  w.args.items[3].ref_same = false;
  const char *why = wk_ref_refusal(&w);
  assert_non_null(why);
  assert_non_null(strstr(why, "raw-byte arguments"));
  w.args.items[3].ref_same = true;
  /* a pointer into the middle of a float */
  w.args.items[1].offset = 258;
  why = wk_ref_refusal(&w);
  assert_non_null(why);
  assert_non_null(strstr(why, "middle of a float"));
  ks_arena_release(&a);
}

/* Elements beyond the tolerance against the original that the reference
 * shows are no less accurate (a sum in another order where it cancels) are
 * excused; one that is less accurate is not. */
static void excused(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  enum { N = 6 };
  float base[N], cand[N];
  double ref[N];
  for (int i = 0; i < N; i++) {
    ref[i] = 1 + i / 3.0;
    base[i] = cand[i] = (float)ref[i];
  }
  /* element 1: the sum cancelled to 1e-3; the original is 4e-5 off, the
   * candidate 4e-5 off the other way: 8e-5 apart, beyond f32's atol 1e-5 +
   * rtol 1e-4 against the original, and no worse than it against fp64 */
  ref[1] = 1e-3, base[1] = (float)(1e-3 + 4e-5), cand[1] = (float)(1e-3 - 4e-5);
  /* element 3: the candidate is off where the original is exact */
  cand[3] = (float)(ref[3] * (1 + 1e-3));
  ks_wbuffer spec = {.name = "y", .dtype = KS_DT_F32, .count = N, .role = KS_ROLE_OUT,
                     .atol = -1, .rtol = -1};
  wk_buffer x = {.spec = &spec, .esize = 4, .bytes = sizeof base};
  x.slot[0] = (unsigned char *)base;
  x.slot[1] = (unsigned char *)cand;
  x.slot[2] = (unsigned char *)cand;
  wk_buffers b = {.items = &x, .len = 1};
  ks_wbuffer rspec = spec;
  rspec.dtype = KS_DT_F64;
  wk_buffer y = {.spec = &rspec, .esize = 8, .bytes = sizeof ref};
  y.slot[0] = (unsigned char *)ref;
  wk_buffers r = {.items = &y, .len = 1};
  ks_output_checks out = {0};
  wk_compare_outputs(&a, &b, 0, 2, 1, &out);
  assert_int_equal(out.items[0].mismatches, 2);
  assert_int_equal(out.items[0].first_mismatch, 1);
  wk_ref_compare(&b, 0, 2, &r, &out);
  const ks_output_check *c = &out.items[0];
  assert_true(c->has_ref);
  assert_int_equal(c->ref_excused, 1);
  assert_int_equal(c->mismatches, 1); /* element 3 is left */
  assert_int_equal(c->first_mismatch, 3);
  assert_true(c->expected == base[3] && c->got == cand[3]);
  assert_int_equal(c->ref_mismatches, 1);
  assert_int_equal(c->ref_first_mismatch, 3);
  ks_arena_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(widening), cmocka_unit_test(captured_twin),
                                     cmocka_unit_test(excused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
