/* test_insight: what the judge learned, told (passes/insight).
 *
 * The race the code shows, on testdata/race/matvec_race.cu (a 32x8 launch
 * whose y[i] += ... ignores threadIdx.y; its guarded, early-exit, atomic
 * and same-value twins must not be reported) and on kernels written here
 * (a cross-block race, a helper call that may compute the index, a loop
 * variable); every kernel of testdata/apps and testdata/legacy with its
 * spec's or its site's launch, none of which races (the table is printed);
 * what runs showed, from evaluations made here; the bound classification
 * with given numbers; the findings' JSON and back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_insight.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_target.h"
#include "ks_test.h"

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;

static const ks_launch_cfg launch_32x8 = {.grid = {64, 1, 1}, .block = {32, 8, 1}};

static ks_race race_of(const char *src, const char *kernel, const ks_launch_cfg *l) {
  ks_race r = {0};
  if (ks_race_static_unit(&ctx, "unit.cu", src, kernel, l, &arena, &r))
    fail_msg("%s does not parse: %s", kernel, ctx.error);
  return r;
}

/* ---- the testdata file, through its slices ---- */

static void testdata_race(void **state) {
  (void)state;
  const char *paths[1] = {ks_testdata("race")};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  ks_scan scan;
  if (ks_scan_run(&ctx, &opts, &scan))
    fail_msg("scan: %s", ctx.error);
  unsigned seen = 0;
  for (size_t i = 0; i < scan.kernels.len; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    ks_slice slice;
    if (ks_slice_kernel(&ctx, &opts, &scan, k, NULL, &arena, &slice))
      fail_msg("%s: %s", k->name, ctx.error);
    ks_race r = race_of(slice.source, k->name, &launch_32x8);
    seen++;
    if (!strcmp(k->name, "matvec_race")) {
      assert_true(r.found && r.shown_by_code);
      assert_string_equal(r.buffer, "y");
      assert_string_equal(r.store, "y[i]");
      assert_string_equal(r.op, "+=");
      assert_true(r.read_modify_write);
      assert_int_equal(r.dim, 'y');
      assert_false(r.blocks);
      assert_int_equal(r.writers, 8);
      assert_string_equal(ks_race_line(&arena, &r),
                          "y[i] written by 8 threads per index (blockDim.y = 8, index "
                          "independent of threadIdx.y)");
      /* the same kernel with one row of threads does not race */
      ks_launch_cfg one = {.grid = {64, 1, 1}, .block = {256, 1, 1}};
      assert_false(race_of(slice.source, k->name, &one).found);
    } else {
      if (r.found)
        fail_msg("%s: reported racing: %s", k->name, ks_race_line(&arena, &r));
      if (!strcmp(k->name, "matvec_atomic"))
        assert_true(r.atomics);
    }
  }
  assert_int_equal(seen, 5);
  ks_scan_release(&scan);
}

/* ---- kernels written here ---- */

static void written_here(void **state) {
  (void)state;
  /* Every block adds into out[threadIdx.x]. */
  ks_race r = race_of("__global__ void k(int n, const float *x, float *out) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) out[threadIdx.x] += x[i];\n"
                      "}\n",
                      "k", &(ks_launch_cfg){.grid = {16, 1, 1}, .block = {256, 1, 1}});
  assert_true(r.found);
  assert_true(r.blocks);
  assert_int_equal(r.dim, 'x');
  assert_string_equal(ks_race_line(&arena, &r), "out[threadIdx.x] written by 16 blocks per index "
                                                "(gridDim.x = 16, index independent of "
                                                "blockIdx.x)");
  /* ... and a block guard on blockIdx.x == 0 makes it one block. */
  r = race_of("__global__ void k(int n, const float *x, float *out) {\n"
              "  if (blockIdx.x == 0) out[threadIdx.x] += x[threadIdx.x];\n"
              "}\n",
              "k", &(ks_launch_cfg){.grid = {16, 1, 1}, .block = {256, 1, 1}});
  assert_false(r.found);
  /* An index from a helper may depend on anything: not reported. */
  r = race_of("__device__ int gid() { return blockIdx.x * blockDim.x + threadIdx.x; }\n"
              "__global__ void k(int n, float *y) {\n"
              "  int i = gid();\n"
              "  if (i < n) y[i] += 1.0f;\n"
              "}\n",
              "k", &launch_32x8);
  assert_false(r.found);
  /* A local pointer into the buffer, a 2-D block indexing y alone. */
  r = race_of("__global__ void k(int n, float *y) {\n"
              "  float *row = y + blockIdx.x * 32;\n"
              "  row[threadIdx.x] = row[threadIdx.x] * 2.0f;\n"
              "}\n",
              "k", &launch_32x8);
  assert_true(r.found);
  assert_string_equal(r.buffer, "y");
  assert_string_equal(r.store, "row[threadIdx.x]");
  assert_true(r.read_modify_write);
  /* A value that depends on threadIdx.y stored without a guard: the last
   * thread's wins. */
  r = race_of("__global__ void k(int n, const float *x, float *y) {\n"
              "  int i = blockIdx.x * 32 + threadIdx.x;\n"
              "  float s = 0;\n"
              "  for (int k = threadIdx.y; k < n; k += 8) s += x[k];\n"
              "  y[i] = s;\n"
              "}\n",
              "k", &launch_32x8);
  assert_true(r.found);
  assert_false(r.read_modify_write);
  /* Both indices used: nothing. */
  r = race_of("__global__ void k(int n, float *y) {\n"
              "  int i = (blockIdx.x * 8 + threadIdx.y) * 32 + threadIdx.x;\n"
              "  y[i] += 1.0f;\n"
              "}\n",
              "k", &launch_32x8);
  assert_false(r.found);
  /* An early return unless threadIdx.y == 0, and a guard through a local
   * thread index. */
  r = race_of("__global__ void k(int n, float *y) {\n"
              "  int t = threadIdx.y * 32 + threadIdx.x;\n"
              "  if (threadIdx.y > 0) return;\n"
              "  y[blockIdx.x * 32 + threadIdx.x] += 1.0f;\n"
              "  if (t == 0) y[blockIdx.x] += 2.0f;\n"
              "}\n",
              "k", &launch_32x8);
  assert_false(r.found);
}

/* ---- the corpora: nothing races ---- */

static unsigned corpus(const char *dir) {
  const char *paths[1] = {dir};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  ks_scan scan;
  if (ks_scan_run(&ctx, &opts, &scan))
    fail_msg("scan of %s: %s", dir, ctx.error);
  unsigned judged = 0;
  printf("%-32s %-22s %s\n", "kernel", "launch", "race");
  for (size_t i = 0; i < scan.kernels.len; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    ks_target t;
    if (ks_target_open_kernel(&ctx, &opts, &scan, k, &arena, &t) &&
        ks_target_open_sites(&ctx, &opts, k, &arena, &t)) {
      printf("%-32s (no target: %s)\n", k->name, ctx.error);
      continue;
    }
    const ks_launch_cfg *l = ks_insight_launch(&t);
    if (!l || !l->block[0]) {
      printf("%-32s (no launch known)\n", k->name);
      ks_target_close(&t);
      continue;
    }
    ks_insight in;
    ks_insight_begin(&ctx, &t, &arena, &in);
    const char *line = ks_race_line(&arena, &in.race);
    printf("%-32s %4ux%ux%u %4ux%ux%u   %s\n", k->name, l->grid[0], l->grid[1], l->grid[2],
           l->block[0], l->block[1], l->block[2], line ? line : "-");
    if (line)
      fail_msg("%s is reported racing: %s", k->name, line);
    judged++;
    ks_target_close(&t);
  }
  ks_scan_release(&scan);
  return judged;
}

static void apps_do_not_race(void **state) {
  (void)state;
  assert_true(corpus(ks_testdata("apps")) >= 12);
}

static void legacy_does_not_race(void **state) {
  (void)state;
  corpus(ks_testdata("legacy"));
}

/* ---- what runs showed ---- */

static ks_eval eval_with(ks_verdict v, bool base_differs, unsigned long long mismatches) {
  ks_eval e = {.verdict = v};
  ks_size_report *sr = ks_array_push(&arena, &e.sizes);
  sr->size = "timed";
  ks_seed_check *sc = ks_array_push(&arena, &sr->seeds);
  sc->base_nondeterministic = base_differs;
  ks_output_check *o = ks_array_push(&arena, &sc->outputs);
  o->buffer = "y";
  o->mismatches = mismatches;
  return e;
}

static void runs_show_it(void **state) {
  (void)state;
  assert_true(ks_race_scheduling_only("block=128 > unroll=4"));
  assert_true(ks_race_scheduling_only("scalar_replace > restrict+ldg"));
  assert_true(ks_race_scheduling_only("launch_bounds=256 > coarsen=2 > vec4"));
  assert_false(ks_race_scheduling_only("fast_math"));
  assert_false(ks_race_scheduling_only("block=128 > warp_reduce"));
  assert_false(ks_race_scheduling_only("llm:tile"));
  assert_false(ks_race_scheduling_only(""));

  ks_race r = {0};
  ks_eval e = eval_with(KS_VERDICT_SAME, false, 0);
  ks_race_add_eval(&r, &e, "");
  assert_false(r.found);
  e = eval_with(KS_VERDICT_WRONG, false, 3);
  ks_race_add_eval(&r, &e, "fast_math");
  assert_false(r.found); /* another arithmetic may differ on its own */
  e = eval_with(KS_VERDICT_WRONG, false, 5);
  ks_race_add_eval(&r, &e, "scalar_replace");
  assert_true(r.found && r.shown_by_runs && !r.shown_by_code);
  assert_int_equal(r.evaluated, 3);
  assert_int_equal(r.wrong, 2);
  assert_int_equal(r.wrong_scheduling, 1);
  assert_string_equal(ks_race_line(&arena, &r),
                      "1 variant that change only scheduling disagrees with the original");
  assert_string_equal(ks_race_search_line(&arena, &r),
                      "2 of 3 variants refused WRONG: their results differ as the racing "
                      "original's do");

  /* The original's own runs differing: a race, unless it uses atomics. */
  ks_race q = {0};
  e = eval_with(KS_VERDICT_SAME, true, 0);
  ks_race_add_eval(&q, &e, "unroll=2");
  e = eval_with(KS_VERDICT_SAME, false, 0);
  ks_race_add_eval(&q, &e, "unroll=4");
  assert_true(q.found);
  assert_string_equal(ks_race_line(&arena, &q),
                      "the original's two runs on the same inputs differed on 1 of 2 seeds");
  assert_string_equal(ks_race_search_line(&arena, &q),
                      "none of 2 variants was refused for a different result");
  ks_race atomics = {.atomics = true};
  e = eval_with(KS_VERDICT_SAME, true, 0);
  ks_race_add_eval(&atomics, &e, "unroll=2");
  assert_false(atomics.found);
}

/* ---- the bound ---- */

static void bound_classified(void **state) {
  (void)state;
  ks_bound b;
  /* saxpy on an H200: 2^26 elements, 805 MB in 0.2 ms, 4 TB/s copy */
  ks_bound_input saxpy = {.median_ms = 0.2, .bytes = 805306368ULL, .flops = 2.0 * (1 << 26),
                          .launch = {.grid = {262144, 1, 1}, .block = {256, 1, 1}},
                          .sm_count = 132, .bandwidth = 4.0e12, .flops_peak = 60e12};
  ks_bound_classify(&arena, &saxpy, &b);
  assert_int_equal(b.kind, KS_BOUND_MEMORY);
  assert_true(b.bw_fraction > 1.0 && b.bw_fraction < 1.01);
  assert_string_equal(b.why, "101% of the measured bandwidth, 1% of the fp32 peak");
  /* sgemm 4096^3: 137 GFLOP in 4 ms (34 TFLOP/s), 201 MB */
  ks_bound_input sgemm = {.median_ms = 4.0, .bytes = 201326592ULL, .flops = 2.0 * 4096.0 * 4096 * 4096,
                          .launch = {.grid = {64, 64, 1}, .block = {16, 16, 1}},
                          .sm_count = 132, .bandwidth = 4.0e12, .flops_peak = 60e12};
  ks_bound_classify(&arena, &sgemm, &b);
  assert_int_equal(b.kind, KS_BOUND_COMPUTE);
  assert_true(b.flop_fraction > 0.57 && b.flop_fraction < 0.58);
  assert_string_equal(b.why, "57% of the fp32 peak, 1% of the measured bandwidth");
  /* A 16-block launch on 132 SMs at 3% of the bandwidth. */
  ks_bound_input small = {.median_ms = 0.05, .bytes = 6000000ULL,
                          .launch = {.grid = {16, 1, 1}, .block = {256, 1, 1}},
                          .sm_count = 132, .bandwidth = 4.0e12, .flops_peak = 60e12};
  ks_bound_classify(&arena, &small, &b);
  assert_int_equal(b.kind, KS_BOUND_LATENCY);
  assert_string_equal(b.why, "16 blocks for 132 SMs");
  assert_int_equal(b.blocks, 16);
  assert_int_equal(b.threads, 4096);
  /* ... the same launch at 80% of the bandwidth is memory-bound all the same */
  small.median_ms = 0.001875;
  ks_bound_classify(&arena, &small, &b);
  assert_int_equal(b.kind, KS_BOUND_MEMORY);
  /* 132 blocks of 32 threads: a block per SM, 1.6% of what they hold */
  ks_bound_input thin = {.median_ms = 1, .bytes = 1000000ULL,
                         .launch = {.grid = {132, 1, 1}, .block = {32, 1, 1}},
                         .sm_count = 132, .bandwidth = 4.0e12};
  ks_bound_classify(&arena, &thin, &b);
  assert_int_equal(b.kind, KS_BOUND_LATENCY);
  assert_string_equal(b.why, "4224 threads fill 2% of what 132 SMs hold");
  /* Nothing measured (the stand-in judge): unknown. */
  ks_bound_input none = {.median_ms = 1, .launch = {.grid = {4096, 1, 1}, .block = {256, 1, 1}}};
  ks_bound_classify(&arena, &none, &b);
  assert_int_equal(b.kind, KS_BOUND_UNKNOWN);
  assert_string_equal(ks_bound_name(b.kind), "unknown");
}

/* ---- JSON and back ---- */

static void json_round_trip(void **state) {
  (void)state;
  ks_insight in = {0};
  assert_string_equal(ks_insight_json(&arena, &in), "{\"race\":null,\"bound\":null}");
  in.race = (ks_race){.found = true, .shown_by_code = true, .buffer = "y", .store = "y[i]",
                      .op = "+=", .read_modify_write = true, .dim = 'y', .writers = 8,
                      .launch = launch_32x8, .seeds_checked = 9, .original_differed = 2,
                      .evaluated = 26, .wrong = 8, .wrong_scheduling = 5, .shown_by_runs = true};
  in.bound = (ks_bound){.kind = KS_BOUND_LATENCY, .why = "16 blocks for 132 SMs", .blocks = 16,
                        .threads = 4096, .fill = 0.015, .bw_fraction = 0.03};
  in.bytes_from = "capture";
  const char *text = ks_insight_json(&arena, &in);
  assert_non_null(strstr(text, "\"summary\":\"y[i] written by 8 threads per index (blockDim.y = "
                               "8, index independent of threadIdx.y); the original's two runs on "
                               "the same inputs differed on 2 of 9 seeds\""));
  assert_non_null(strstr(text, "\"search\":\"8 of 26 variants refused WRONG"));
  assert_non_null(strstr(text, "\"launch\":{\"grid\":[64,1,1],\"block\":[32,8,1]}"));
  assert_non_null(strstr(text, "\"kind\":\"latency\""));
  ks_insight back;
  ks_insight_parse(&arena, text, &back);
  assert_string_equal(ks_insight_json(&arena, &back), text);
  ks_insight_parse(&arena, "not json", &back);
  assert_false(back.race.found);
  assert_int_equal(back.bound.kind, KS_BOUND_UNKNOWN);
}

int main(void) {
  ks_ctx_init(&ctx, "test_insight");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(testdata_race),   cmocka_unit_test(written_here),
      cmocka_unit_test(apps_do_not_race), cmocka_unit_test(legacy_does_not_race),
      cmocka_unit_test(runs_show_it),    cmocka_unit_test(bound_classified),
      cmocka_unit_test(json_round_trip),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return rc;
}
