/* test_worker_gpu: the evaluation protocol on a real GPU, through the real
 * worker. A saxpy kernel is the original; variants compiled with NVRTC break
 * it in every way the protocol must catch, and each must show up in the
 * field of ks_run_result meant for it:
 *
 *   same       identical code: every check clean
 *   wrong      a*x - y: mismatches, first at index 0
 *   skip_odd   writes even elements only: unwritten = mismatches = n/2
 *   oob        writes out[n] too: the guard after "out"
 *   mod_input  also zeroes x: changed_input "x"
 *   nowrite    writes nothing: unwritten = n
 *   racy       many blocks write the same 4096 slots: mismatches (the race
 *              flag itself depends on scheduling and is only reported)
 *   lazy       stops computing after 5 launches: seeds clean, the recheck
 *              after timing fails
 *   trap, null __trap() and a store through NULL: CRASHED, then the
 *              restarted worker serves the next request
 *   spin       never ends: TIMEOUT within the limit, then a restart
 *   big block, missing function: LAUNCH_FAILED, LOAD_FAILED
 *   f16        a copy and a copy off by one unit in the last place: within
 *              the f16 tolerance, with a non-zero error reported
 *   fp64 reference (saxpy_f64, the original's double twin): `same` is as
 *              accurate as the original, whose error is one rounding (the
 *              inputs were widened, not regenerated); `lowp` keeps 10 bits
 *              of mantissa, passes a loose tolerance against the original
 *              and is caught against the reference; a twin that writes
 *              out of bounds is the reference's failure, not the variant's
 *   captured  saxpy on a capture file's bytes (x and y one allocation, y
 *              at an offset, `a` as raw bytes): a replay reproduces the
 *              recorded output bit for bit and counts the diffs of a wrong
 *              recording; variants are verified on those inputs; a missing
 *              file is the request's failure
 * plus timing of the original against itself (similar medians), the same
 * warm (no flush, no recheck; on a GPU no slower than flushed), and the
 * device's ceilings.
 *
 * Without a driver or GPU it prints "SKIP: ..." and exits 77. It reports
 * every case and fails at the end, so one run on a GPU shows everything. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_cuda.h"
#include "ks_nvrtc.h"
#include "ks_wire.h"
#include "ks_worker.h"

enum { SKIP = 77, N = (1 << 20) + 3 };

static const char source[] =
    "#define I (blockIdx.x * blockDim.x + threadIdx.x)\n"
    "#define ARGS const float *x, const float *y, float *out, float a, int n\n"
    "extern \"C\" __global__ void saxpy(ARGS) { int i = I; if (i < n) out[i] = a * x[i] + y[i]; }\n"
    "extern \"C\" __global__ void same(ARGS) { int i = I; if (i < n) out[i] = a * x[i] + y[i]; }\n"
    "extern \"C\" __global__ void wrong(ARGS) { int i = I; if (i < n) out[i] = a * x[i] - y[i]; }\n"
    "extern \"C\" __global__ void skip_odd(ARGS) {\n"
    "  int i = I; if (i < n && i % 2 == 0) out[i] = a * x[i] + y[i]; }\n"
    "extern \"C\" __global__ void oob(ARGS) { int i = I; if (i <= n) out[i] = a * x[i] + y[i]; }\n"
    "extern \"C\" __global__ void mod_input(ARGS) {\n"
    "  int i = I; if (i < n) { out[i] = a * x[i] + y[i]; ((float *)x)[i] = 0; } }\n"
    "extern \"C\" __global__ void nowrite(ARGS) { }\n"
    "extern \"C\" __global__ void racy(ARGS) { int i = I; if (i < n) out[i & 4095] = x[i]; }\n"
    "__device__ unsigned calls;\n"
    "extern \"C\" __global__ void lazy(ARGS) {\n"
    "  int i = I; if (calls >= 6) return;\n"
    "  if (i < n) out[i] = a * x[i] + y[i];\n"
    "  if (i == 0) atomicAdd(&calls, 1u); }\n"
    "extern \"C\" __global__ void trap(ARGS) { int i = I; if (i == 77) __trap(); if (i < n) out[i] = 0; }\n"
    "extern \"C\" __global__ void null(ARGS) {\n"
    "  float *p = (float *)((size_t)out * (size_t)(n < 0)); /* NULL, unknown to the compiler */\n"
    "  int i = I; if (i == 5) p[i] = 1; }\n"
    "extern \"C\" __global__ void spin(ARGS) {  /* volatile global loads: ptxas keeps the loop */\n"
    "  volatile const float *p = x; float first = p[0]; while (p[0] == first) { } }\n"
    "extern \"C\" __global__ void copy_h(const unsigned short *x, unsigned short *out, int n) {\n"
    "  int i = I; if (i < n) out[i] = x[i]; }\n"
    "extern \"C\" __global__ void copy_h_ulp(const unsigned short *x, unsigned short *out, int n) {\n"
    "  int i = I; if (i < n) out[i] = (x[i] & 0x7c00) == 0x7c00 ? x[i] : x[i] ^ 1; }\n"
    "extern \"C\" __global__ void lowp(ARGS) {\n"
    "  int i = I; if (i < n) out[i] = __uint_as_float(__float_as_uint(a * x[i] + y[i]) & 0xffffe000u); }\n"
    "#define ARGS64 const double *x, const double *y, double *out, double a, int n\n"
    "extern \"C\" __global__ void saxpy_f64(ARGS64) { int i = I; if (i < n) out[i] = a * x[i] + y[i]; }\n"
    "extern \"C\" __global__ void saxpy_f64_oob(ARGS64) {\n"
    "  int i = I; if (i < n) out[i] = a * x[i] + y[i]; if (i == n) out[i] = 0; }\n";

static int failures;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      printf("  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                     \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

typedef struct fixture {
  ks_ctx *ctx;
  ks_worker *worker;
  ks_buf cubin;
  ks_workload saxpy, half;
  ks_workload loose;      /* saxpy with atol = rtol = 1e-2 on `out` */
  const char *ref;        /* the fp64 reference run() sends, or NULL */
  unsigned long long seeds[2];
} fixture;

static void saxpy_workload(ks_arena *a, ks_workload *w) {
  *ks_array_push(a, &w->buffers) =
      (ks_wbuffer){.name = "x", .dtype = KS_DT_F32, .count = N, .role = KS_ROLE_IN,
          .dist = KS_DIST_UNIFORM, .a = -1, .b = 1, .atol = -1, .rtol = -1};
  *ks_array_push(a, &w->buffers) =
      (ks_wbuffer){.name = "y", .dtype = KS_DT_F32, .count = N, .role = KS_ROLE_IN,
          .dist = KS_DIST_NORMAL, .a = 0, .b = 1, .atol = -1, .rtol = -1};
  *ks_array_push(a, &w->buffers) =
      (ks_wbuffer){.name = "out", .dtype = KS_DT_F32, .count = N, .role = KS_ROLE_OUT,
          .dist = KS_DIST_UNIFORM, .a = 0, .b = 0, .atol = -1, .rtol = -1};
  for (size_t i = 0; i < 3; i++)
    *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = i};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_F32, .value = {false, 0, 2.0}};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I32, .value = {true, N, 0}};
  w->launch = (ks_launch_cfg){{(N + 255) / 256, 1, 1}, {256, 1, 1}, 0};
}

static void half_workload(ks_arena *a, ks_workload *w) {
  *ks_array_push(a, &w->buffers) =
      (ks_wbuffer){.name = "x", .dtype = KS_DT_F16, .count = N, .role = KS_ROLE_IN,
          .dist = KS_DIST_NORMAL, .a = 0, .b = 10, .atol = -1, .rtol = -1};
  *ks_array_push(a, &w->buffers) =
      (ks_wbuffer){.name = "out", .dtype = KS_DT_F16, .count = N, .role = KS_ROLE_OUT,
          .dist = KS_DIST_UNIFORM, .a = 0, .b = 0, .atol = -1, .rtol = -1};
  for (size_t i = 0; i < 2; i++)
    *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = i};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I32, .value = {true, N, 0}};
  w->launch = (ks_launch_cfg){{(N + 255) / 256, 1, 1}, {256, 1, 1}, 0};
}

/* Runs `cand` against `base` on `work`; prints a one-line summary. */
static ks_run_result run(fixture *f, ks_worker *w, const ks_workload *work, const char *base,
                         const char *cand, bool time, ks_arena *a) {
  ks_run_request req = {.base = {f->cubin.data, f->cubin.len, base},
                        .cand = {f->cubin.data, f->cubin.len, cand},
                        .ref = {f->ref ? f->cubin.data : NULL, f->ref ? f->cubin.len : 0, f->ref},
                        .work = work,
                        .seeds = f->seeds,
                        .nseeds = time ? 1 : 2,
                        .verify = true,
                        .time = time,
                        .recheck_seed = 99,
                        .timing = {.max_seconds = 3}};
  ks_run_result r;
  long long t0 = ks_wire_now_ms();
  if (ks_worker_run(f->ctx, w ? w : f->worker, &req, a, &r)) {
    printf("  FAIL: ks_worker_run: %s\n", f->ctx->error);
    failures++;
    memset(&r, 0, sizeof r);
    r.status = KS_RUN_CRASHED;
    return r;
  }
  printf("%-10s %-13s %5lld ms", cand, ks_wire_status_name(r.status), ks_wire_now_ms() - t0);
  if (r.error)
    printf("  %s", r.error);
  for (size_t i = 0; i < r.seeds.len; i++) {
    const ks_seed_check *s = &r.seeds.items[i];
    const ks_output_check *o = s->outputs.len ? &s->outputs.items[0] : NULL;
    printf("\n    seed %llu: ", s->seed);
    if (o)
      printf("%s: %llu mismatches, %llu unwritten, max abs %.3g rel %.3g, first %lld "
             "(%.6g vs %.6g); ", o->buffer, o->mismatches, o->unwritten, o->max_abs_error,
             o->max_rel_error, o->first_mismatch, o->expected, o->got);
    if (o && o->has_ref)
      printf("vs fp64: original max rel %.3g, variant %.3g, %llu worse, first %lld; ",
             o->ref_base_max_rel, o->ref_cand_max_rel, o->ref_mismatches, o->ref_first_mismatch);
    printf("race %d%s%s, base nondet %d, canary %s%s, base canary %s, changed input %s",
           s->race, s->race_buffer ? " in " : "", s->race_buffer ? s->race_buffer : "",
           s->base_nondeterministic, s->canary_buffer ? s->canary_buffer : "-",
           s->canary_buffer ? (s->canary_before ? " (before)" : " (after)") : "",
           s->base_canary_buffer ? s->base_canary_buffer : "-",
           s->changed_input ? s->changed_input : "-");
  }
  if (r.timed)
    printf("\n    timing: %zu + %zu samples, %u dropped, SM %.0f-%.0f MHz, %.2f s; recheck "
           "%llu mismatches", r.timing.base_ms.len, r.timing.cand_ms.len,
           r.timing.dropped_low_clock, r.timing.sm_clock_min_mhz, r.timing.sm_clock_max_mhz,
           r.timing.seconds, r.timing.recheck.len ? r.timing.recheck.items[0].mismatches : 0);
  printf("\n    registers %d/%d, spills %d/%d, static smem %d/%d\n", r.base_registers,
         r.cand_registers, r.base_spill_bytes, r.cand_spill_bytes, r.base_static_smem,
         r.cand_static_smem);
  return r;
}

static const ks_output_check *out0(const ks_run_result *r, size_t seed) {
  static const ks_output_check none = {.first_mismatch = -1};
  if (seed >= r->seeds.len || !r->seeds.items[seed].outputs.len)
    return &none;
  return &r->seeds.items[seed].outputs.items[0];
}

static void expect_clean(const ks_run_result *r, const char *what) {
  EXPECT(r->status == KS_RUN_OK, "%s: %s", what, r->error ? r->error : "");
  EXPECT(r->seeds.len >= 1, "%s: no seeds", what);
  for (size_t i = 0; i < r->seeds.len; i++) {
    const ks_seed_check *s = &r->seeds.items[i];
    EXPECT(out0(r, i)->mismatches == 0 && out0(r, i)->unwritten == 0, "%s", what);
    EXPECT(!s->race && !s->base_nondeterministic && !s->canary_buffer && !s->base_canary_buffer &&
           !s->changed_input, "%s", what);
  }
}

static double median(const ks_samples *s) {
  double *x = malloc((s->len ? s->len : 1) * sizeof *x);
  memcpy(x, s->items, s->len * sizeof *x);
  for (size_t i = 1; i < s->len; i++) /* insertion sort: a few hundred samples */
    for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
      double t = x[j];
      x[j] = x[j - 1];
      x[j - 1] = t;
    }
  double m = s->len ? (s->len % 2 ? x[s->len / 2] : (x[s->len / 2 - 1] + x[s->len / 2]) / 2) : 0;
  free(x);
  return m;
}

static void cases(fixture *f, ks_arena *a) {
  ks_run_result r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same");
  EXPECT(r.seeds.len == 2, "two seeds");

  r = run(f, NULL, &f->saxpy, "saxpy", "wrong", false, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches > N / 2 &&
         out0(&r, 0)->first_mismatch >= 0, "wrong: mismatches");

  r = run(f, NULL, &f->saxpy, "saxpy", "skip_odd", false, a);
  EXPECT(out0(&r, 0)->unwritten == N / 2 && out0(&r, 0)->mismatches == N / 2 &&
         out0(&r, 0)->first_mismatch == 1, "skip_odd: unwritten %llu", out0(&r, 0)->unwritten);

  r = run(f, NULL, &f->saxpy, "saxpy", "oob", false, a);
  EXPECT(r.seeds.len && r.seeds.items[0].canary_buffer &&
         strcmp(r.seeds.items[0].canary_buffer, "out") == 0 && !r.seeds.items[0].canary_before &&
         out0(&r, 0)->mismatches == 0, "oob: guard after out");

  r = run(f, NULL, &f->saxpy, "saxpy", "mod_input", false, a);
  EXPECT(r.seeds.len && r.seeds.items[0].changed_input &&
         strcmp(r.seeds.items[0].changed_input, "x") == 0, "mod_input: changed x");

  r = run(f, NULL, &f->saxpy, "saxpy", "nowrite", false, a);
  EXPECT(out0(&r, 0)->unwritten == N && out0(&r, 0)->mismatches == N, "nowrite");

  r = run(f, NULL, &f->saxpy, "saxpy", "racy", false, a);
  EXPECT(out0(&r, 0)->mismatches > 0, "racy: mismatches");
  if (r.seeds.len && !r.seeds.items[0].race)
    printf("  NOTE: racy: the two runs happened to agree (scheduling)\n");

  r = run(f, NULL, &f->saxpy, "saxpy", "trap", false, a);
  EXPECT(r.status == KS_RUN_CRASHED && r.error_kernel && strcmp(r.error_kernel, "cand") == 0,
         "trap: crashed in cand");
  r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same after trap");

  r = run(f, NULL, &f->saxpy, "saxpy", "null", false, a);
  EXPECT(r.status == KS_RUN_CRASHED && r.error && strstr(r.error, "ILLEGAL_ADDRESS"),
         "null: illegal address");
  r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same after null");

  r = run(f, NULL, &f->saxpy, "saxpy", "missing_fn", false, a);
  EXPECT(r.status == KS_RUN_LOAD_FAILED && r.error_kernel && strcmp(r.error_kernel, "cand") == 0,
         "missing function: load failed");

  ks_workload wide = f->saxpy;
  ks_run_request req = {.base = {f->cubin.data, f->cubin.len, "saxpy"},
                        .cand = {f->cubin.data, f->cubin.len, "same"},
                        .work = &wide,
                        .cand_launch = {{1, 1, 1}, {2048, 1, 1}, 0},
                        .seeds = f->seeds,
                        .nseeds = 1,
                        .verify = true};
  EXPECT(ks_worker_run(f->ctx, f->worker, &req, a, &r) == 0 && r.status == KS_RUN_LAUNCH_FAILED,
         "2048-thread block: launch failed (%s)", r.error ? r.error : "");
  printf("big block  %-13s %s\n", ks_wire_status_name(r.status), r.error ? r.error : "");

  r = run(f, NULL, &f->half, "copy_h", "copy_h_ulp", false, a);
  /* |x| stays below 64, where an f16 ulp is at most 2^-5. */
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches == 0 &&
         out0(&r, 0)->max_abs_error > 0 && out0(&r, 0)->max_abs_error <= 0.0625,
         "f16: one ulp within tolerance");
  r = run(f, NULL, &f->half, "copy_h", "copy_h", false, a);
  expect_clean(&r, "f16 copy");

  r = run(f, NULL, &f->saxpy, "saxpy", "lazy", true, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches == 0, "lazy: seeds pass");
  EXPECT(r.timed && r.timing.recheck.len && r.timing.recheck.items[0].mismatches > 0,
         "lazy: caught by the recheck");

  r = run(f, NULL, &f->saxpy, "saxpy", "same", true, a);
  EXPECT(r.status == KS_RUN_OK && r.timed, "timing: %s", r.error ? r.error : "");
  EXPECT(r.timing.base_ms.len >= 10 && r.timing.cand_ms.len >= 10, "timing: samples");
  EXPECT(r.timing.recheck.len && r.timing.recheck.items[0].mismatches == 0, "timing: recheck");
  double mb = median(&r.timing.base_ms), mc = median(&r.timing.cand_ms);
  printf("    medians: base %.4f ms, cand %.4f ms (ratio %.3f)\n", mb, mc, mc / mb);
  /* On the GPU one kernel timed against itself agrees within 15%. The CPU
   * stand-in runs kernels on host threads, which a parallel test run
   * starves at random: there only the protocol's plumbing is checked. */
  double spread = getenv("KS_FAKE_CUDA") ? 3.0 : 0.15;
  EXPECT(mb > 0 && fabs(mc / mb - 1) < spread, "timing: similar medians %.4f %.4f", mb, mc);

  /* Warm: no flush and no restore between samples, and no recheck (the
   * flushed request's stands for it). saxpy's 12 MB fit in any L2 from
   * Ampere on, so on a GPU the warm median is no slower than the flushed. */
  ks_run_request warm = {.base = {f->cubin.data, f->cubin.len, "saxpy"},
                         .cand = {f->cubin.data, f->cubin.len, "same"},
                         .work = &f->saxpy,
                         .time = true,
                         .recheck_seed = 99,
                         .timing = {.max_seconds = 3, .warm = true}};
  ks_run_result wr;
  EXPECT(ks_worker_run(f->ctx, f->worker, &warm, a, &wr) == 0 && wr.status == KS_RUN_OK &&
             wr.timed, "warm timing: %s", wr.error ? wr.error : "");
  EXPECT(wr.timing.base_ms.len >= 10 && wr.timing.cand_ms.len >= 10, "warm timing: samples");
  EXPECT(wr.timing.recheck.len == 0, "warm timing: no recheck");
  double wb = median(&wr.timing.base_ms), wc = median(&wr.timing.cand_ms);
  printf("    warm medians: base %.4f ms, cand %.4f ms (flushed base %.4f ms)\n", wb, wc, mb);
  EXPECT(wb > 0 && (getenv("KS_FAKE_CUDA") || wb <= 1.05 * mb),
         "warm timing: no slower than flushed (%.4f vs %.4f ms)", wb, mb);
}

/* The fp64 reference: saxpy's double twin, on the same inputs widened. */
static void reference_cases(fixture *f, ks_arena *a) {
  f->ref = "saxpy_f64";
  ks_run_result r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same, with the reference");
  for (size_t i = 0; i < r.seeds.len; i++) {
    const ks_output_check *o = out0(&r, i);
    /* a = 2: 2x + y is exact in double, and the float result is one
     * rounding of it. Inputs regenerated in double instead of widened
     * would differ from the float ones by far more, where 2x + y cancels. */
    EXPECT(o->has_ref && o->ref_mismatches == 0 && o->ref_first_mismatch == -1,
           "same vs fp64: %llu worse", o->ref_mismatches);
    EXPECT(o->ref_base_max_rel > 0 && o->ref_base_max_rel <= 0x1p-24 * (1 + 1e-9),
           "same vs fp64: the original's error is one rounding (%.3g)", o->ref_base_max_rel);
    EXPECT(o->ref_cand_max_rel == o->ref_base_max_rel &&
           o->ref_cand_max_abs == o->ref_base_max_abs, "same vs fp64: the same error");
  }

  /* Truncated to 10 bits: within 2^-10 of the float result, itself within
   * 2^-24 of the exact one. */
  r = run(f, NULL, &f->loose, "saxpy", "lowp", false, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches == 0,
         "lowp: within 1e-2 of the original (%llu mismatches)", out0(&r, 0)->mismatches);
  EXPECT(out0(&r, 0)->has_ref && out0(&r, 0)->ref_mismatches > N / 4 &&
         out0(&r, 0)->ref_first_mismatch >= 0 && out0(&r, 0)->ref_cand_max_rel > 1e-4 &&
         out0(&r, 0)->ref_cand_max_rel <= 0x1p-10 + 0x1p-23,
         "lowp: caught by the reference (%llu worse, max rel %.3g)", out0(&r, 0)->ref_mismatches,
         out0(&r, 0)->ref_cand_max_rel);

  f->ref = "saxpy_f64_oob";
  r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  EXPECT(r.status == KS_RUN_LAUNCH_FAILED && r.error_kernel && !strcmp(r.error_kernel, "ref") &&
         r.error && strstr(r.error, "out of bounds"), "a twin out of bounds: the reference's");

  f->ref = NULL;
  r = run(f, NULL, &f->loose, "saxpy", "lowp", false, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches == 0 && !out0(&r, 0)->has_ref,
         "lowp without the reference: passes");
}

/* A captured launch of saxpy, as the lead's capture import would build it:
 * x and y are one allocation read from a capture file (y a pointer into
 * it at an offset), `out` is in place with its bytes before and after the
 * launch in the file, `a` travels as raw bytes. */
enum { CM = 4099 };
typedef struct capture_file {
  char path[64];
  unsigned long long xy_at, out_before_at, out_after_at, out_wrong_at;
} capture_file;

static int write_capture(capture_file *c) {
  float *x = malloc(2 * CM * sizeof *x), *before = malloc(CM * sizeof *x),
        *after = malloc(CM * sizeof *x), *wrong = malloc(CM * sizeof *x);
  for (int i = 0; i < CM; i++) {
    x[i] = (float)((i * 37) % 1000) / 7.0f - 50;
    x[CM + i] = (float)((i * 11) % 501) / 3.0f;
    before[i] = -1;
    /* 2x is exact, so FMA or not, the GPU rounds 2x + y as the host does */
    after[i] = wrong[i] = 2.0f * x[i] + x[CM + i];
  }
  wrong[5] += 1.0f;                               /* a mismatch */
  wrong[9] = nextafterf(wrong[9], INFINITY);      /* a bit diff within tolerance */
  strcpy(c->path, "/tmp/ks_capture_XXXXXX");
  int fd = mkstemp(c->path);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  int ok = f != NULL;
  static const char head[24] = "KSCAP\0\1\0 not a real one";
  c->xy_at = sizeof head;
  c->out_before_at = c->xy_at + 2 * CM * sizeof *x;
  c->out_after_at = c->out_before_at + CM * sizeof *x;
  c->out_wrong_at = c->out_after_at + CM * sizeof *x;
  ok = ok && fwrite(head, 1, sizeof head, f) == sizeof head &&
       fwrite(x, sizeof *x, 2 * CM, f) == 2 * CM && fwrite(before, sizeof *x, CM, f) == CM &&
       fwrite(after, sizeof *x, CM, f) == CM && fwrite(wrong, sizeof *x, CM, f) == CM;
  if (f && fclose(f))
    ok = 0;
  free(x), free(before), free(after), free(wrong);
  return ok ? 0 : -1;
}

static void captured_workload(ks_arena *a, const capture_file *c, ks_workload *w) {
  memset(w, 0, sizeof *w);
  w->size_name = "capture";
  w->captured = true;
  *ks_array_push(a, &w->buffers) = (ks_wbuffer){
      .name = "xy", .dtype = KS_DT_F32, .count = 2 * CM, .role = KS_ROLE_IN,
      .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = c->path, .file_offset = c->xy_at};
  *ks_array_push(a, &w->buffers) = (ks_wbuffer){
      .name = "out", .dtype = KS_DT_F32, .count = CM, .role = KS_ROLE_INOUT,
      .dist = KS_DIST_FILE, .atol = -1, .rtol = -1, .file = c->path,
      .file_offset = c->out_before_at, .expect_file = c->path, .expect_offset = c->out_after_at};
  static const float two = 2.0f;
  *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 0, .offset = CM * sizeof(float)};
  *ks_array_push(a, &w->args) = (ks_warg){.kind = KS_ARG_BUFFER, .buffer = 1};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_BYTES, .bytes = (const unsigned char *)&two, .size = sizeof two};
  *ks_array_push(a, &w->args) =
      (ks_warg){.kind = KS_ARG_SCALAR, .dtype = KS_DT_I32, .value = {true, CM, 0}};
  w->launch = (ks_launch_cfg){{(CM + 255) / 256, 1, 1}, {256, 1, 1}, 0};
}

/* The original alone against what the capture recorded. */
static ks_run_result replay(fixture *f, const ks_workload *work, ks_arena *a) {
  ks_run_request req = {.base = {f->cubin.data, f->cubin.len, "saxpy"}, .work = work,
                        .seeds = f->seeds, .nseeds = 2, .replay = true};
  ks_run_result r;
  memset(&r, 0, sizeof r);
  if (ks_worker_run(f->ctx, f->worker, &req, a, &r)) {
    EXPECT(false, "replay: ks_worker_run: %s", f->ctx->error);
    r.status = KS_RUN_CRASHED;
    return r;
  }
  printf("replay     %-13s", ks_wire_status_name(r.status));
  if (r.error)
    printf("  %s", r.error);
  for (size_t i = 0; i < r.seeds.len; i++)
    for (size_t k = 0; k < r.seeds.items[i].outputs.len; k++) {
      const ks_output_check *o = &r.seeds.items[i].outputs.items[k];
      printf("\n    seed %llu: %s: capture %d, %llu bit diffs, %llu mismatches, first %lld "
             "(%.9g vs %.9g)", r.seeds.items[i].seed, o->buffer, o->has_capture,
             o->capture_bit_diffs, o->capture_mismatches, o->capture_first_diff,
             o->capture_expected, o->capture_got);
    }
  printf("\n");
  return r;
}

static void captured_cases(fixture *f, ks_arena *a) {
  capture_file c;
  if (write_capture(&c)) {
    EXPECT(false, "cannot write a capture file in /tmp");
    return;
  }
  ks_workload w;
  captured_workload(a, &c, &w);
  ks_run_result r = replay(f, &w, a);
  EXPECT(r.status == KS_RUN_OK && r.seeds.len == 2, "replay: ran (%s)", r.error ? r.error : "");
  for (size_t i = 0; i < r.seeds.len; i++) {
    const ks_seed_check *s = &r.seeds.items[i];
    EXPECT(s->outputs.len == 1, "replay: one output (xy is an input)");
    const ks_output_check *o = out0(&r, i);
    EXPECT(o->buffer && !strcmp(o->buffer, "out") && o->count == CM && o->has_capture &&
           o->capture_bit_diffs == 0 && o->capture_mismatches == 0 &&
           o->capture_first_diff == -1, "replay: the original reproduces the capture");
    EXPECT(!s->base_canary_buffer, "replay: within its buffers");
  }

  /* The capture's bytes differ: one element beyond tolerance, one ulp. */
  w.buffers.items[1].expect_offset = c.out_wrong_at;
  r = replay(f, &w, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->capture_bit_diffs == 2 &&
         out0(&r, 0)->capture_mismatches == 1 && out0(&r, 0)->capture_first_diff == 5,
         "replay: diffs against a wrong capture");
  w.buffers.items[1].expect_offset = c.out_after_at;

  /* Variants are judged on captured inputs as on generated ones. */
  r = run(f, NULL, &w, "saxpy", "same", false, a);
  expect_clean(&r, "captured: same");
  r = run(f, NULL, &w, "saxpy", "wrong", false, a);
  EXPECT(r.status == KS_RUN_OK && out0(&r, 0)->mismatches > CM / 2, "captured: wrong");
  r = run(f, NULL, &w, "saxpy", "mod_input", false, a);
  EXPECT(r.seeds.len && r.seeds.items[0].changed_input &&
         !strcmp(r.seeds.items[0].changed_input, "xy"), "captured: mod_input changes xy");
  f->ref = "saxpy_f64";
  r = run(f, NULL, &w, "saxpy", "same", false, a);
  f->ref = NULL;
  EXPECT(r.status == KS_RUN_LAUNCH_FAILED && r.error_kernel && !strcmp(r.error_kernel, "ref"),
         "captured: no fp64 reference");

  /* The file gone: the request fails, saying which buffer, file and offset. */
  unlink(c.path);
  r = replay(f, &w, a);
  char want[128];
  snprintf(want, sizeof want, "buffer xy: cannot read %zu bytes at offset 24 of %s",
           2 * CM * sizeof(float), c.path);
  EXPECT(r.status == KS_RUN_LAUNCH_FAILED && r.error && strstr(r.error, want),
         "replay: missing file (%s)", r.error ? r.error : "");
  r = run(f, NULL, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same after a missing capture");
}

/* An endless kernel, with a short limit on a worker of its own. */
static void timeout_case(fixture *f, ks_arena *a) {
  ks_worker_options o = {.timeout_ms = 8000};
  ks_worker *w = NULL;
  if (ks_worker_start(f->ctx, &o, &w)) {
    EXPECT(false, "start: %s", f->ctx->error);
    return;
  }
  /* Let the worker open the device first, so the limit measures the kernel. */
  ks_device_info d;
  EXPECT(ks_worker_hello(f->ctx, w, &d) == 0, "hello: %s", f->ctx->error);
  long long t0 = ks_wire_now_ms();
  ks_run_result r = run(f, w, &f->saxpy, "saxpy", "spin", false, a);
  long long took = ks_wire_now_ms() - t0;
  EXPECT(r.status == KS_RUN_TIMEOUT && took < 8000 + 3000, "spin: timeout (%lld ms)", took);
  r = run(f, w, &f->saxpy, "saxpy", "same", false, a);
  expect_clean(&r, "same after spin");
  ks_worker_stop(w);
}

static void ceilings(fixture *f, const char *arch) {
  ks_buf cubin = KS_BUF_INIT;
  const char *options[] = {arch};
  ks_nvrtc_unit unit = {.source = ks_ceiling_kernels, .name = "ks_ceilings.cu",
                        .options = options, .noptions = 1};
  if (ks_nvrtc_compile(f->ctx, &unit, &cubin, NULL)) {
    EXPECT(false, "ceilings compile: %s", f->ctx->error);
    return;
  }
  ks_module copy = {cubin.data, cubin.len, "ks_copy"}, fma = {cubin.data, cubin.len, "ks_fma"};
  ks_ceilings c;
  long long t0 = ks_wire_now_ms();
  int rc = ks_worker_ceilings(f->ctx, f->worker, &copy, &fma, &c);
  EXPECT(rc == 0, "ceilings: %s", f->ctx->error);
  if (rc == 0)
    printf("ceilings: copy %.3f TB/s (read + write), FMA %.2f TFLOP/s, %lld ms\n",
           c.bandwidth / 1e12, c.flops_fp32 / 1e12, ks_wire_now_ms() - t0);
  /* The CPU stand-in (KS_FAKE_CUDA) measures nothing real. */
  EXPECT(rc || getenv("KS_FAKE_CUDA") || (c.bandwidth > 1e11 && c.flops_fp32 > 1e12),
         "ceilings: plausible");
  ks_buf_release(&cubin);
}

int main(void) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_worker_gpu");
  /* KS_FAKE_CUDA names the directory of the CPU stand-in for libcuda.so.1
   * (tests/fake_cuda.c): the worker gets it, this process does not (NVRTC
   * here looks for a real driver and trips over the stand-in). */
  const char *fake = getenv("KS_FAKE_CUDA");
  if (fake && *fake) {
    setenv("LD_LIBRARY_PATH", fake, 1);
    printf("using the CPU stand-in for the driver in %s\n", fake);
    goto go;
  }
  ks_cuda cu;
  if (ks_cuda_load(&ctx, &cu)) {
    printf("SKIP: no CUDA driver/GPU (%s)\n", ctx.error);
    ks_ctx_release(&ctx);
    return SKIP;
  }
  int count = ks_cuda_devices(&ctx, &cu, NULL, 0);
  ks_cuda_unload(&cu);
  if (count <= 0) {
    printf("SKIP: no CUDA driver/GPU (the driver sees no device)\n");
    ks_ctx_release(&ctx);
    return SKIP;
  }
go:;
  ks_arena a = KS_ARENA_INIT;
  fixture f = {.ctx = &ctx, .cubin = KS_BUF_INIT, .seeds = {1, 0xfeedfacecafebeefull}};
  ks_device_info d;
  ks_worker_options o = {0};
  if (ks_worker_start(&ctx, &o, &f.worker) || ks_worker_hello(&ctx, f.worker, &d)) {
    printf("FAIL: worker: %s\n", ctx.error);
    failures++;
    goto out;
  }
  printf("device: %s, sm_%d%d, %d SMs, L2 %llu MiB, driver %d (%s), %s, max SM clock %d MHz, "
         "peak %.2f TB/s\n", d.name, d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes >> 20,
         d.driver_version, d.driver, d.uuid, d.sm_clock_max_mhz, d.peak_bandwidth / 1e12);
  char arch[32];
  snprintf(arch, sizeof arch, "-arch=sm_%d%d", d.cc_major, d.cc_minor);
  const char *options[] = {arch};
  ks_nvrtc_unit unit = {.source = source, .name = "worker_cases.cu", .options = options,
                        .noptions = 1};
  ks_buf log = KS_BUF_INIT;
  if (ks_nvrtc_compile(&ctx, &unit, &f.cubin, &log)) {
    printf("FAIL: compile: %s\n%s", ctx.error, log.data);
    ks_buf_release(&log);
    failures++;
    goto out;
  }
  ks_buf_release(&log);
  saxpy_workload(&a, &f.saxpy);
  half_workload(&a, &f.half);
  saxpy_workload(&a, &f.loose);
  f.loose.buffers.items[2].atol = f.loose.buffers.items[2].rtol = 1e-2;
  cases(&f, &a);
  reference_cases(&f, &a);
  captured_cases(&f, &a);
  timeout_case(&f, &a);
  ceilings(&f, arch);
out:
  ks_worker_stop(f.worker);
  ks_buf_release(&f.cubin);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
  printf(failures ? "FAIL: %d checks\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
