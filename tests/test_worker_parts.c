/* test_worker_parts: the worker's host-side arithmetic, without a device:
 * half and bfloat16 conversions, every input distribution, scalar argument
 * bytes, poison patterns, default tolerances and timing options, and the
 * element comparison that decides mismatches and unwritten elements, and
 * the measurements against the fp64 reference (run on host slots filled by
 * hand); captured inputs read from a file, the comparison with a capture,
 * and kernel parameters with offsets and raw bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

static void half_conversions(void **state) {
  assert_int_equal(wk_f32_to_f16(1.0f), 0x3C00);
  assert_int_equal(wk_f32_to_f16(-2.0f), 0xC000);
  assert_int_equal(wk_f32_to_f16(65504.0f), 0x7BFF);
  assert_int_equal(wk_f32_to_f16(65520.0f), 0x7C00); /* rounds to infinity */
  assert_int_equal(wk_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
  assert_int_equal(wk_f32_to_f16(2.0e-8f), 0x0000);
  assert_int_equal(wk_f32_to_f16(1.0f + 1.0f / 2048), 0x3C00); /* a tie: to even */
  assert_int_equal(wk_f32_to_f16(1.0f + 3.0f / 2048), 0x3C02);
  assert_true(isnan(wk_f16_to_f32(wk_f32_to_f16(NAN))));
  /* Every half that is not a signalling NaN survives the round trip. */
  for (unsigned h = 0; h < 0x10000; h++) {
    bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    if (nan && !(h & 0x200))
      continue;
    assert_int_equal(wk_f32_to_f16(wk_f16_to_f32((unsigned short)h)), h);
  }
  assert_int_equal(wk_f32_to_bf16(1.0f), 0x3F80);
  assert_int_equal(wk_f32_to_bf16(1.0f + 1.0f / 256), 0x3F80); /* tie to even */
  assert_int_equal(wk_f32_to_bf16(1.0f + 3.0f / 256), 0x3F82);
  assert_true(wk_bf16_to_f32(0xC040) == -3.0f);
  assert_true(isnan(wk_bf16_to_f32(wk_f32_to_bf16(NAN))));
}

static ks_wbuffer buffer(ks_dtype t, unsigned long long n, ks_dist_kind d, double a, double b) {
  return (ks_wbuffer){.name = "b", .dtype = t, .count = n, .role = KS_ROLE_IN,
      .dist = d, .a = a, .b = b, .atol = -1, .rtol = -1};
}

static void distributions(void **state) {
  enum { N = 100000 };
  float *f = malloc(N * sizeof *f), *g = malloc(N * sizeof *g);
  ks_wbuffer b = buffer(KS_DT_F32, N, KS_DIST_UNIFORM, -2, 3);
  wk_fill(&b, 7, 0, f);
  for (int i = 0; i < N; i++)
    assert_true(f[i] >= -2 && f[i] < 3);
  wk_fill(&b, 7, 0, g);
  assert_memory_equal(f, g, N * sizeof *f); /* deterministic */
  wk_fill(&b, 7, 1, g);
  assert_memory_not_equal(f, g, N * sizeof *f); /* another buffer index */
  wk_fill(&b, 8, 0, g);
  assert_memory_not_equal(f, g, N * sizeof *f); /* another seed */
  {
    /* Large buffers are filled chunk by chunk in parallel: still the same
     * bytes every time, chunks differ, and the first million elements are
     * those of a buffer of a million. */
    enum { BIG = 3 * (1 << 20) + 5, CHUNK = 1 << 20 };
    float *p = malloc(BIG * sizeof *p), *q = malloc(BIG * sizeof *q);
    ks_wbuffer big = buffer(KS_DT_F32, BIG, KS_DIST_NORMAL, 0, 1);
    wk_fill(&big, 3, 2, p);
    wk_fill(&big, 3, 2, q);
    assert_memory_equal(p, q, BIG * sizeof *p);
    assert_memory_not_equal(p, p + CHUNK, CHUNK * sizeof *p);
    ks_wbuffer one = buffer(KS_DT_F32, CHUNK, KS_DIST_NORMAL, 0, 1);
    wk_fill(&one, 3, 2, q);
    assert_memory_equal(p, q, CHUNK * sizeof *p);
    double mean = 0;
    for (int i = 0; i < BIG; i++)
      mean += p[i];
    assert_true(fabs(mean / BIG) < 0.01);
    free(p);
    free(q);
  }

  b = buffer(KS_DT_F32, N, KS_DIST_NORMAL, 5, 2);
  wk_fill(&b, 1, 0, f);
  double mean = 0, var = 0;
  for (int i = 0; i < N; i++)
    mean += f[i];
  mean /= N;
  for (int i = 0; i < N; i++)
    var += (f[i] - mean) * (f[i] - mean);
  assert_true(fabs(mean - 5) < 0.05 && fabs(sqrt(var / N) - 2) < 0.05);

  int32_t *k = malloc(N * sizeof *k);
  b = buffer(KS_DT_I32, N, KS_DIST_INT, -3, 3);
  wk_fill(&b, 1, 0, k);
  int seen[7] = {0};
  for (int i = 0; i < N; i++) {
    assert_true(k[i] >= -3 && k[i] <= 3);
    seen[k[i] + 3]++;
  }
  for (int i = 0; i < 7; i++)
    assert_true(seen[i] > N / 10); /* both ends included */

  b = buffer(KS_DT_I32, N, KS_DIST_PERMUTATION, 0, 0);
  wk_fill(&b, 1, 0, k);
  char *hit = calloc(N, 1);
  for (int i = 0; i < N; i++) {
    assert_true(k[i] >= 0 && k[i] < N && !hit[k[i]]);
    hit[k[i]] = 1;
  }
  free(hit);

  b = buffer(KS_DT_I32, 1001, KS_DIST_SORTED_INT, 0, 50000);
  wk_fill(&b, 3, 2, k);
  assert_int_equal(k[0], 0);
  assert_int_equal(k[1000], 50000);
  for (int i = 1; i < 1001; i++)
    assert_true(k[i] >= k[i - 1]);
  assert_true(k[500] > 15000 && k[500] < 35000); /* spread, not piled at one end */

  b = buffer(KS_DT_I32, 10, KS_DIST_IOTA, 5, 0);
  wk_fill(&b, 1, 0, k);
  for (int i = 0; i < 10; i++)
    assert_int_equal(k[i], 5 + i);
  b = buffer(KS_DT_F32, 10, KS_DIST_CONSTANT, 0.25, 0);
  wk_fill(&b, 1, 0, f);
  for (int i = 0; i < 10; i++)
    assert_true(f[i] == 0.25f);

  /* Integers saturate at the type's range instead of wrapping. */
  uint8_t *u = malloc(N);
  b = buffer(KS_DT_U8, N, KS_DIST_UNIFORM, -100, 400);
  wk_fill(&b, 1, 0, u);
  int zeros = 0, maxes = 0;
  for (int i = 0; i < N; i++)
    zeros += u[i] == 0, maxes += u[i] == 255;
  assert_true(zeros > 0 && maxes > 0);

  /* Half: the bits of the rounded value. */
  unsigned short h[4];
  b = buffer(KS_DT_F16, 4, KS_DIST_IOTA, 1, 0);
  wk_fill(&b, 1, 0, h);
  assert_int_equal(h[0], 0x3C00);
  assert_int_equal(h[1], 0x4000);
  assert_true(wk_elem_double(KS_DT_F16, h, 3) == 4.0);
  free(f), free(g), free(k), free(u);
}

static void scalars_and_patterns(void **state) {
  unsigned char b[8];
  wk_scalar_bytes(KS_DT_I32, (ks_value){true, -1, 0}, b);
  assert_memory_equal(b, "\xff\xff\xff\xff\0\0\0\0", 8);
  wk_scalar_bytes(KS_DT_U8, (ks_value){true, 300, 0}, b);
  assert_int_equal(b[0], 44);
  wk_scalar_bytes(KS_DT_F32, (ks_value){true, 3, 0}, b);
  float f;
  memcpy(&f, b, 4);
  assert_true(f == 3.0f);
  wk_scalar_bytes(KS_DT_F16, (ks_value){false, 0, 1.5}, b);
  assert_int_equal(b[0] | b[1] << 8, 0x3E00);
  wk_scalar_bytes(KS_DT_I64, (ks_value){false, 0, -2.6}, b);
  long long ll;
  memcpy(&ll, b, 8);
  assert_true(ll == -3);

  static const ks_dtype floats[] = {KS_DT_F16, KS_DT_BF16, KS_DT_F32, KS_DT_F64};
  for (size_t i = 0; i < 4; i++) {
    wk_poison_bytes(floats[i], 1, b);
    assert_true(isnan(wk_elem_double(floats[i], b, 0)));
    wk_poison_bytes(floats[i], 2, b);
    double v = wk_elem_double(floats[i], b, 0);
    assert_true(isfinite(v) && v < -6e4);
  }
  wk_poison_bytes(KS_DT_F64, 1, b);
  assert_memory_equal(b, b + 4, 4); /* one 32-bit memset writes it */
  wk_poison_bytes(KS_DT_I16, 2, b);
  assert_memory_equal(b, "\xa5\xa5\xa5\xa5\xa5\xa5\xa5\xa5", 8);
}

static void defaults(void **state) {
  double atol, rtol;
  ks_wbuffer b = buffer(KS_DT_F32, 1, KS_DIST_UNIFORM, 0, 1);
  wk_tolerance(&b, &atol, &rtol);
  assert_true(atol == 1e-5 && rtol == 1e-4);
  b.atol = 0;
  wk_tolerance(&b, &atol, &rtol);
  assert_true(atol == 0 && rtol == 1e-4);
  b = buffer(KS_DT_I32, 1, KS_DIST_UNIFORM, 0, 1);
  wk_tolerance(&b, &atol, &rtol);
  assert_true(atol == 0 && rtol == 0);
  ks_timing_options t = {0};
  wk_timing_defaults(&t);
  assert_int_equal(t.min_samples, 10);
  assert_int_equal(t.max_samples, 200);
  assert_true(t.target_rsd == 0.005 && t.max_seconds == 5 && t.min_clock_fraction == 0.75);
  t = (ks_timing_options){.min_samples = 50, .max_samples = 20};
  wk_timing_defaults(&t);
  assert_int_equal(t.max_samples, 50);
  double x[] = {5, 1, 3, 2};
  assert_true(wk_median(x, 4) == 2.5);
}

/* One output buffer of `n` floats with host slots only. */
typedef struct host_case {
  ks_wbuffer spec;
  wk_buffer buf;
  wk_buffers bufs;
  float want[8], got[8], second[8], input[8];
} host_case;

static void host_case_init(host_case *c, ks_role role) {
  memset(c, 0, sizeof *c);
  c->spec = (ks_wbuffer){.name = "out", .dtype = KS_DT_F32, .count = 8, .role = role,
      .dist = KS_DIST_UNIFORM, .a = 0, .b = 0, .atol = -1, .rtol = -1};
  c->buf.spec = &c->spec;
  c->buf.esize = 4;
  c->buf.bytes = 32;
  c->buf.slot[0] = (unsigned char *)c->want;
  c->buf.slot[1] = (unsigned char *)c->second;
  c->buf.slot[2] = (unsigned char *)c->got;
  c->buf.input = (unsigned char *)c->input;
  c->bufs.items = &c->buf;
  c->bufs.len = 1;
}

static float poison(int which) {
  unsigned char b[8];
  float f;
  wk_poison_bytes(KS_DT_F32, which, b);
  memcpy(&f, b, 4);
  return f;
}

static void comparisons(void **state) {
  host_case c;
  host_case_init(&c, KS_ROLE_OUT);
  for (int i = 0; i < 8; i++)
    c.want[i] = c.got[i] = c.second[i] = (float)i + 1;
  c.got[1] = c.want[1] * (1 + 5e-5f);  /* within rtol 1e-4 */
  c.got[2] = c.want[2] + 1e-3f;        /* beyond */
  c.want[3] = NAN, c.got[3] = NAN;     /* both NaN: equal */
  c.want[4] = 0.0f, c.got[4] = -0.0f;  /* equal values, other bits */
  c.got[5] = poison(1), c.second[5] = poison(2); /* never written */
  c.want[6] = INFINITY, c.got[6] = -INFINITY;
  ks_arena a = KS_ARENA_INIT;
  ks_output_checks out = {0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  assert_int_equal(out.len, 1);
  ks_output_check *k = &out.items[0];
  assert_string_equal(k->buffer, "out");
  assert_int_equal(k->count, 8);
  assert_int_equal(k->mismatches, 3); /* 2, 5, 6 */
  assert_int_equal(k->unwritten, 1);
  assert_int_equal(k->first_mismatch, 2);
  assert_true(k->expected == 3.0 && fabs(k->got - 3.001) < 1e-6);
  assert_true(fabs(k->max_abs_error - 1e-3) < 1e-6);

  /* Poison where the original wrote nothing either: not "unwritten". */
  host_case_init(&c, KS_ROLE_OUT);
  c.want[0] = c.got[0] = poison(1), c.second[0] = poison(2);
  out = (ks_output_checks){0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  assert_int_equal(out.items[0].unwritten, 0);
  assert_int_equal(out.items[0].mismatches, 0);

  /* In place: an element left at its input where the original changed it. */
  host_case_init(&c, KS_ROLE_INOUT);
  for (int i = 0; i < 8; i++)
    c.input[i] = (float)i, c.want[i] = c.got[i] = 2.0f * (float)i;
  c.got[3] = c.input[3];
  out = (ks_output_checks){0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, -1, &out);
  assert_int_equal(out.items[0].unwritten, 1);
  assert_int_equal(out.items[0].mismatches, 1);

  /* Integers: exact unless a tolerance is given. */
  host_case_init(&c, KS_ROLE_OUT);
  c.spec.dtype = KS_DT_I32;
  int32_t want[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8] = {1, 2, 3, 4, 5, 6, 7, 9};
  c.buf.slot[0] = (unsigned char *)want;
  c.buf.slot[2] = (unsigned char *)got;
  c.buf.slot[1] = (unsigned char *)got;
  out = (ks_output_checks){0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  assert_int_equal(out.items[0].mismatches, 1);
  assert_true(out.items[0].max_abs_error == 1);
  c.spec.atol = 1;
  out = (ks_output_checks){0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  assert_int_equal(out.items[0].mismatches, 0);
  ks_arena_release(&a);
}

/* The fp64 reference's workload, launch, tolerance and measurements. */
static void reference(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_workload w = {.size_name = "timed", .launch = {{4, 1, 1}, {256, 1, 1}, 1024}};
  *ks_array_push(&a, &w.buffers) =
      (ks_wbuffer){.name = "x", .dtype = KS_DT_F32, .count = 8, .role = KS_ROLE_IN,
          .dist = KS_DIST_UNIFORM, .a = -1, .b = 1, .atol = -1, .rtol = -1};
  *ks_array_push(&a, &w.buffers) =
      (ks_wbuffer){.name = "idx", .dtype = KS_DT_I32, .count = 8, .role = KS_ROLE_IN,
          .dist = KS_DIST_IOTA, .a = 0, .b = 0, .atol = -1, .rtol = -1};
  *ks_array_push(&a, &w.buffers) =
      (ks_wbuffer){.name = "out", .dtype = KS_DT_F32, .count = 8, .role = KS_ROLE_OUT,
          .dist = KS_DIST_UNIFORM, .a = 0, .b = 0, .atol = 1e-2, .rtol = 1e-2};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_F32, .value = {false, 0, 0.1}};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_F32, .value = {true, 3, 0}};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I32, .value = {true, 8, 0}};
  const ks_workload *t = wk_ref_workload(&a, &w);
  assert_int_equal(t->buffers.items[0].dtype, KS_DT_F64);
  assert_int_equal(t->buffers.items[1].dtype, KS_DT_I32);
  assert_int_equal(t->buffers.items[2].dtype, KS_DT_F64);
  assert_true(t->buffers.items[2].atol == 1e-2); /* the rest as it was */
  assert_int_equal(w.buffers.items[0].dtype, KS_DT_F32); /* the original untouched */
  assert_int_equal(t->args.items[0].kind, KS_ARG_BUFFER);
  /* float scalars: exactly the float the original receives */
  assert_int_equal(t->args.items[1].dtype, KS_DT_F64);
  assert_true(t->args.items[1].value.f == (double)0.1f && t->args.items[1].value.f != 0.1);
  assert_true(!t->args.items[2].value.is_int && t->args.items[2].value.f == 3.0);
  assert_int_equal(t->args.items[3].dtype, KS_DT_I32);
  assert_true(t->args.items[3].value.is_int && t->args.items[3].value.i == 8);
  ks_launch_cfg l = wk_ref_launch(&w.launch);
  assert_true(l.grid[0] == 4 && l.block[0] == 256 && l.smem == 2048);

  double atol, rtol;
  wk_ref_tolerance(&w.buffers.items[2], &atol, &rtol); /* loosened: the type's */
  assert_true(atol == 1e-5 && rtol == 1e-4);
  ks_wbuffer tight = w.buffers.items[2];
  tight.atol = 0, tight.rtol = 1e-6;
  wk_ref_tolerance(&tight, &atol, &rtol);
  assert_true(atol == 0 && rtol == 1e-6);

  /* Element by element: the candidate may be as bad as the original, or
   * within the type's tolerance of the exact value; no worse. */
  host_case c;
  host_case_init(&c, KS_ROLE_OUT);
  c.spec.atol = c.spec.rtol = 1e-2;
  double r[8];
  for (int i = 0; i < 8; i++) {
    r[i] = i + 1 + 1.0 / 3;
    c.want[i] = c.got[i] = (float)r[i];
  }
  c.got[1] = (float)(r[1] * (1 + 1e-3));                               /* worse: counted */
  c.got[2] = (float)(r[2] * (1 + 5e-5));                               /* within rtol */
  c.want[3] = (float)(r[3] * (1 + 1e-3)), c.got[3] = (float)(r[3] * (1 + 1.5e-3)); /* as bad */
  r[4] = NAN, c.got[4] = 100;                                          /* nothing exact */
  c.got[5] = NAN;                                                      /* counted */
  c.want[6] = c.got[6] = NAN;                                          /* both wrong alike */
  ks_wbuffer rspec = c.spec;
  rspec.dtype = KS_DT_F64;
  wk_buffer rbuf = {.spec = &rspec, .esize = 8, .bytes = 64};
  rbuf.slot[0] = (unsigned char *)r;
  wk_buffers ref = {.items = &rbuf, .len = 1};
  ks_output_checks out = {0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  assert_int_equal(out.items[0].mismatches, 2); /* 4 and 5; 1e-3 is within 1e-2 */
  wk_ref_compare(&c.bufs, 0, 2, &ref, &out);
  const ks_output_check *k = &out.items[0];
  assert_true(k->has_ref);
  assert_int_equal(k->ref_mismatches, 2);
  assert_int_equal(k->ref_first_mismatch, 1);
  assert_true(k->ref_value == r[1] && k->ref_got == c.got[1] && k->ref_base == c.want[1]);
  assert_true(fabs(k->ref_base_max_rel - 1e-3) < 1e-6);
  assert_true(fabs(k->ref_cand_max_rel - 1.5e-3) < 1e-6);
  assert_true(k->ref_cand_max_abs > k->ref_base_max_abs);

  /* Integer outputs are not measured against the reference. */
  c.spec.dtype = KS_DT_I32;
  out = (ks_output_checks){0};
  wk_compare_outputs(&a, &c.bufs, 0, 2, 1, &out);
  wk_ref_compare(&c.bufs, 0, 2, &ref, &out);
  assert_false(out.items[0].has_ref);
  assert_int_equal(out.items[0].ref_first_mismatch, -1);
  ks_arena_release(&a);
}

/* Kept inputs (buffers.c): a buffer holds the current seed's inputs and the
 * one before; moving between seeds swaps or refills, and the host copy and
 * the device's pristine copy always hold the same seed's values. Device
 * memory is host memory here, through three stand-in driver calls. */
static CUresult host_alloc(CUdeviceptr *p, size_t n) {
  *p = (CUdeviceptr)(uintptr_t)malloc(n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult host_free(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static CUresult host_copy(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}

static void kept_inputs(void **state) {
  enum { N = 4096 };
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  wk_state w = {.ctx = &ctx};
  w.cu.MemAlloc = host_alloc;
  w.cu.MemFree = host_free;
  w.cu.MemcpyHtoD = host_copy;
  ks_wbuffer spec = buffer(KS_DT_F32, N, KS_DIST_NORMAL, 0, 1);
  wk_buffer x = {.spec = &spec, .esize = 4, .bytes = N * 4, .input = malloc(N * 4)};
  assert_int_equal(host_alloc(&x.pristine, N * 4), CUDA_SUCCESS);
  wk_buffers b = {.items = &x, .len = 1};
  float *want = malloc(N * 4);
  static const unsigned long long order[] = {11, 12, 11, 12, 13, 11, 13, 13};
  ks_arena a = KS_ARENA_INIT;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    wk_outcome oc = {KS_RUN_OK, NULL, NULL};
    assert_int_equal(wk_buffers_fill(&w, &a, &b, order[i], &oc), 0);
    wk_fill(&spec, order[i], 0, want);
    assert_memory_equal(x.input, want, N * 4);
    assert_memory_equal((void *)(uintptr_t)x.pristine, want, N * 4);
    assert_true(x.filled && x.filled_seed == order[i]);
    if (i && order[i] != order[i - 1]) /* the seed before is kept beside it */
      assert_true(x.alt_filled && x.alt_seed == order[i - 1]);
  }
  free(want);
  free(x.input);
  free(x.alt_input);
  host_free(x.pristine);
  host_free(x.alt_pristine);
  wk_fill_cache_release(&w);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* A temporary file holding `bytes`; its path in `path` (PATH_MAX room). */
static void temp_file(char *path, const void *bytes, size_t n) {
  strcpy(path, "/tmp/ks_worker_parts_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, bytes, n), (ssize_t)n);
  close(fd);
}

/* Captured inputs (KS_DIST_FILE): the file's bytes at the offset, the same
 * whatever the seed, read again only when the file changes; a missing or
 * short file is the request's failure, naming buffer, file and offset. */
static void file_inputs(void **state) {
  enum { N = 1000, OFFSET = 13 }; /* an odd offset: no alignment assumed */
  unsigned char *content = malloc(OFFSET + N * 4 + 5);
  for (size_t i = 0; i < OFFSET + N * 4 + 5; i++)
    content[i] = (unsigned char)(i * 131 + 7);
  char path[64];
  temp_file(path, content, OFFSET + N * 4 + 5);

  ks_arena a = KS_ARENA_INIT;
  unsigned char got[16];
  assert_null(wk_read_file(&a, path, 2, got, sizeof got));
  assert_memory_equal(got, content + 2, sizeof got);
  const char *why = wk_read_file(&a, path, OFFSET + N * 4, got, sizeof got);
  assert_non_null(why);
  assert_non_null(strstr(why, "the file has 4018 bytes"));
  why = wk_read_file(&a, "/nonexistent/ks.kscap", 0, got, sizeof got);
  assert_non_null(why);
  assert_non_null(strstr(why, "No such file"));

  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  wk_state w = {.ctx = &ctx};
  w.cu.MemAlloc = host_alloc;
  w.cu.MemFree = host_free;
  w.cu.MemcpyHtoD = host_copy;
  ks_wbuffer spec = {.name = "xs", .dtype = KS_DT_F32, .count = N, .role = KS_ROLE_INOUT,
                     .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = path,
                     .file_offset = OFFSET};
  wk_buffer x = {.spec = &spec, .esize = 4, .bytes = N * 4, .input = malloc(N * 4)};
  assert_int_equal(host_alloc(&x.pristine, N * 4), CUDA_SUCCESS);
  wk_buffers b = {.items = &x, .len = 1};
  const unsigned char *pristine = (const unsigned char *)(uintptr_t)x.pristine;
  wk_outcome oc = {KS_RUN_OK, NULL, NULL};
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 1, &oc), 0);
  assert_memory_equal(x.input, content + OFFSET, N * 4);
  assert_memory_equal(pristine, content + OFFSET, N * 4);
  assert_true(x.filled && x.file_key);
  /* Another seed: the same bytes, not read again (a mark left in the host
   * copy stays). */
  x.input[0] ^= 0xff;
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 2, &oc), 0);
  assert_int_equal(x.input[0], content[OFFSET] ^ 0xff);
  assert_memory_equal(pristine, content + OFFSET, N * 4);
  assert_null(x.alt_input); /* no second seed's inputs kept beside */
  /* Another offset, then the file written again: read again. */
  spec.file_offset = OFFSET + 1;
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 2, &oc), 0);
  assert_memory_equal(x.input, content + OFFSET + 1, N * 4);
  for (size_t i = 0; i < OFFSET + N * 4 + 5; i++)
    content[i] = (unsigned char)(i * 17 + 1);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(content, 1, OFFSET + N * 4 + 4, f), OFFSET + N * 4 + 4);
  fclose(f);
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 2, &oc), 0);
  assert_memory_equal(x.input, content + OFFSET + 1, N * 4);
  assert_memory_equal(pristine, content + OFFSET + 1, N * 4);
  assert_int_equal(oc.status, KS_RUN_OK);

  /* Short: the request fails with one line naming everything. */
  spec.file_offset = 100;
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 2, &oc), -1);
  assert_int_equal(oc.status, KS_RUN_LAUNCH_FAILED);
  char *want = ks_arena_printf(&a, "buffer xs: cannot read 4000 bytes at offset 100 of %s: the "
                                   "file has 4017 bytes", path);
  assert_string_equal(oc.error, want);
  assert_null(strchr(oc.error, '\n'));
  assert_false(x.filled);
  /* Missing. */
  unlink(path);
  spec.file_offset = 0;
  oc = (wk_outcome){KS_RUN_OK, NULL, NULL};
  assert_int_equal(wk_buffers_fill(&w, &a, &b, 2, &oc), -1);
  assert_int_equal(oc.status, KS_RUN_LAUNCH_FAILED);
  assert_non_null(strstr(oc.error, "buffer xs: cannot read 4000 bytes at offset 0 of /tmp/"));
  assert_non_null(strstr(oc.error, "No such file"));

  free(x.input);
  free(x.file_key);
  host_free(x.pristine);
  free(content);
  wk_fill_cache_release(&w);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* The replay's comparison with a capture: bit diffs, and of those the
 * mismatches beyond tolerance. */
static void capture_comparison(void **state) {
  ks_wbuffer b = {.name = "y", .dtype = KS_DT_F32, .count = 10, .role = KS_ROLE_INOUT,
                  .dist = KS_DIST_FILE, .atol = -1, .rtol = -1};
  float want[10], got[10];
  for (int i = 0; i < 10; i++)
    want[i] = got[i] = (float)i + 0.5f;
  ks_output_check c = {.capture_first_diff = 7};
  wk_compare_capture(&b, want, got, &c);
  assert_true(c.has_capture);
  assert_true(c.capture_bit_diffs == 0 && c.capture_mismatches == 0 && c.capture_first_diff == -1);

  uint32_t nan_a = 0x7fc00000u, nan_b = 0x7fc00001u;
  memcpy(&want[1], &nan_a, 4), memcpy(&got[1], &nan_a, 4); /* the same NaN: no diff */
  got[2] = want[2] * (1 + 2e-5f);                           /* within rtol: diff only */
  memcpy(&want[3], &nan_a, 4), memcpy(&got[3], &nan_b, 4); /* NaNs apart: diff only */
  want[4] = 0.0f, got[4] = -0.0f;                           /* equal values: diff only */
  got[5] = want[5] + 1e-2f;                                 /* beyond */
  memcpy(&got[6], &nan_a, 4);                               /* NaN for a number: beyond */
  want[7] = INFINITY, got[7] = -INFINITY;                   /* beyond */
  wk_compare_capture(&b, want, got, &c);
  assert_int_equal(c.capture_bit_diffs, 6);
  assert_int_equal(c.capture_mismatches, 3);
  assert_int_equal(c.capture_first_diff, 2);
  assert_true(c.capture_expected == (double)want[2] && c.capture_got == (double)got[2]);

  /* A looser tolerance takes 5 in; the first diff is still the first. */
  b.atol = 0.1;
  wk_compare_capture(&b, want, got, &c);
  assert_int_equal(c.capture_bit_diffs, 6);
  assert_int_equal(c.capture_mismatches, 2);

  /* Integers: every diff is a mismatch, whatever the tolerance. */
  int32_t iw[4] = {1, 2, 3, 4}, ig[4] = {1, 3, 3, 5};
  ks_wbuffer ib = {.name = "n", .dtype = KS_DT_I32, .count = 4, .role = KS_ROLE_OUT,
                   .atol = 1, .rtol = 0};
  wk_compare_capture(&ib, iw, ig, &c);
  assert_int_equal(c.capture_bit_diffs, 2);
  assert_int_equal(c.capture_mismatches, 2);
  assert_true(c.capture_first_diff == 1 && c.capture_expected == 2 && c.capture_got == 3);

  /* Half: NaNs with other payloads are a diff, not a mismatch. */
  uint16_t hw[3] = {0x3c00, 0x7e00, 0x3c00}, hg[3] = {0x3c00, 0x7e01, 0x3c01};
  ks_wbuffer hb = {.name = "h", .dtype = KS_DT_F16, .count = 3, .role = KS_ROLE_OUT,
                   .atol = -1, .rtol = -1};
  wk_compare_capture(&hb, hw, hg, &c);
  assert_int_equal(c.capture_bit_diffs, 2);
  assert_int_equal(c.capture_mismatches, 0); /* one ulp at 1.0 is within f16's 1e-2 */
  assert_true(c.capture_first_diff == 1 && isnan(c.capture_expected) && isnan(c.capture_got));
}

/* Kernel parameters: pointers into a buffer at an offset, scalars, and raw
 * bytes of any size, each where params[i] points. */
static void parameters(void **state) {
  ks_arena a = KS_ARENA_INIT;
  ks_workload w = {.captured = true};
  *ks_array_push(&a, &w.buffers) = (ks_wbuffer){.name = "all", .dtype = KS_DT_F32, .count = 64,
                                                .role = KS_ROLE_INOUT, .dist = KS_DIST_FILE};
  unsigned char blob[40];
  for (int i = 0; i < 40; i++)
    blob[i] = (unsigned char)(200 + i);
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0, .offset = 128};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BYTES, .bytes = blob, .size = 40};
  *ks_array_push(&a, &w.args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I16, .value = {true, -2, 0}};
  *ks_array_push(&a, &w.args) = (ks_warg){.kind = KS_ARG_BYTES, .bytes = blob + 39, .size = 1};
  wk_buffer x = {.spec = &w.buffers.items[0], .ptr = 0x7000001000ull};
  wk_buffers b = {.items = &x, .len = 1};
  wk_buffers_bind(&b, &w);
  CUdeviceptr p;
  memcpy(&p, b.params[0], sizeof p);
  assert_true(p == 0x7000001000ull);
  memcpy(&p, b.params[1], sizeof p);
  assert_true(p == 0x7000001080ull);
  assert_memory_equal(b.params[2], blob, 40);
  int16_t h;
  memcpy(&h, b.params[3], 2);
  assert_int_equal(h, -2);
  assert_int_equal(*(unsigned char *)b.params[4], blob[39]);
  for (int i = 0; i < 5; i++)
    assert_int_equal((uintptr_t)b.params[i] % 16, 0);
  /* Bound again to another workload (a kept set): the new parameters. */
  w.args.items[1].offset = 4;
  wk_buffers_bind(&b, &w);
  memcpy(&p, b.params[1], sizeof p);
  assert_true(p == 0x7000001004ull);
  free(b.params);
  free(b.storage);

  /* The fp64 reference has no twin for any of it. */
  assert_non_null(wk_ref_refusal(&w));
  w.buffers.items[0].dist = KS_DIST_UNIFORM;
  assert_non_null(wk_ref_refusal(&w));
  w.args.len = 1;
  assert_null(wk_ref_refusal(&w));
  ks_arena_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(half_conversions), cmocka_unit_test(distributions),
      cmocka_unit_test(scalars_and_patterns), cmocka_unit_test(defaults),
      cmocka_unit_test(comparisons), cmocka_unit_test(reference),
      cmocka_unit_test(kept_inputs), cmocka_unit_test(file_inputs),
      cmocka_unit_test(capture_comparison), cmocka_unit_test(parameters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
