/* verify's parts without a program (passes/verify.c, verify_report.c): the
 * dispatch's statistics lines parsed and added up, profiles of runs with
 * and without the variants (lines written here, read by the profile's
 * reader) added up per winner (a namespaced kernel, a template's variant
 * counted as the template), the verdicts and every cause in its order, the
 * failure sentence, and the JSON report read back by ks_verify_not_faster
 * (and refused with the file and the field).
 *
 * `test_verify --not-faster FILE` prints the names ks_verify_not_faster
 * finds, one a line (tests/verify_cli.sh reads the CLI's report with it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ks_test.h"
#include "ks_verify.h"

static ks_ctx ctx;
static char dir[] = "/tmp/test_verify-XXXXXX";

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_verify");
  ctx.verbosity = KS_LOG_ERROR;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  int rc = system(cmd);
  ks_ctx_release(&ctx);
  return rc ? -1 : 0;
}

static const char *write_file(const char *name, const char *text) {
  const char *path = ks_test_path(dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* ---- statistics lines --------------------------------------------------- */

static void test_stats_parse(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_site_stats s;
  assert_true(ks_site_stats_parse(&a, "kernelsmith: saxpy_kernel at saxpy.cu:41: variant 1, off "
                                      "2, other architecture 3, guards failed 4, no device 5\n",
                                  &s));
  assert_string_equal(s.kernel, "saxpy_kernel");
  assert_string_equal(s.where, "saxpy.cu:41");
  for (int p = 0; p < KS_NPATHS; p++)
    assert_int_equal(s.counts[p], p + 1);
  /* A place with a space and a colon; no newline. */
  assert_true(ks_site_stats_parse(&a, "kernelsmith: k at my dir/a b.cu:7: variant 200, off 0, "
                                      "other architecture 0, guards failed 0, no device 0",
                                  &s));
  assert_string_equal(s.where, "my dir/a b.cu:7");
  assert_int_equal(s.counts[KS_PATH_VARIANT], 200);
  /* A path a later header adds is skipped. */
  assert_true(ks_site_stats_parse(&a, "kernelsmith: k at a.cu:1: variant 3, off 0, other "
                                      "architecture 0, guards failed 9, no device 0, later 4\n",
                                  &s));
  assert_int_equal(s.counts[KS_PATH_GUARDS], 9);
  /* A site without a place. */
  assert_true(ks_site_stats_parse(&a, "kernelsmith: k at : variant 1, off 0, other architecture "
                                      "0, guards failed 0, no device 0\n", &s));
  assert_string_equal(s.where, "?");
  /* Other lines. */
  const char *const not_stats[] = {
      "hello\n",
      "kernelsmith: cannot open KERNELSMITH_STATS_FILE /x\n",
      "kernelsmith: k at a.cu:1: off 2, guards failed 0\n",
      "kernelsmith: k at a.cu:1: variant x, off 2\n",
      "kernelsmith: k at a.cu:1: variant 99999999999999999999999, off 2\n",
      "kernelsmith:  at a.cu:1: variant 1, off 2\n",
      "kernelsmith: shadow: saxpy_kernel at saxpy.cu:41: outputs differ\n",
  };
  for (size_t i = 0; i < sizeof not_stats / sizeof *not_stats; i++)
    assert_false(ks_site_stats_parse(&a, not_stats[i], &s));
  ks_arena_release(&a);
}

static void test_stats_read(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  /* Two processes shared the file; other output is skipped. */
  const char *path = write_file(
      "stats", "kernelsmith: k at a.cu:1: variant 3, off 0, other architecture 0, guards failed "
               "1, no device 0\n"
               "something else\n"
               "kernelsmith: j at b.cu:9: variant 0, off 0, other architecture 0, guards failed "
               "0, no device 2\n"
               "kernelsmith: k at a.cu:1: variant 4, off 0, other architecture 0, guards failed "
               "2, no device 0\n");
  ks_site_stats_list list = {0};
  assert_int_equal(ks_site_stats_read(&ctx, path, &a, &list), 0);
  assert_int_equal(list.len, 2);
  assert_string_equal(list.items[0].kernel, "k");
  assert_int_equal(list.items[0].counts[KS_PATH_VARIANT], 7);
  assert_int_equal(list.items[0].counts[KS_PATH_GUARDS], 3);
  assert_int_equal(list.items[1].counts[KS_PATH_NO_DEVICE], 2);
  assert_string_equal(ks_verify_site_paths(&a, &list.items[0]), "variant 7/10, guards failed 3");
  assert_string_equal(ks_verify_site_paths(&a, &list.items[1]), "no device 2");
  /* No file: no site ran. */
  assert_int_equal(ks_site_stats_read(&ctx, ks_test_path(dir, "none"), &a, &list), 0);
  assert_int_equal(list.len, 2);
  ks_arena_release(&a);
}

/* ---- runs added up ------------------------------------------------------ */

static void kline(FILE *f, const char *name, unsigned long long start, unsigned long long ns,
                  unsigned grid) {
  fprintf(f,
          "{\"type\":\"kernel\",\"name\":\"%s\",\"grid\":[%u,1,1],\"block\":[256,1,1],"
          "\"smem_static\":0,\"smem_dynamic\":0,\"stream\":7,\"device\":0,\"context\":1,"
          "\"correlation\":1,\"start_ns\":%llu,\"end_ns\":%llu,\"api\":\"runtime\"}\n",
          name, grid, 1000000000ull + start, 1000000000ull + start + ns);
}

static void read_profile(const char *name, ks_profile *p) {
  if (ks_profile_read_lines(&ctx, ks_test_path(dir, name), p))
    fail_msg("%s", ctx.error);
}

/* A winner as ks_winners_load gives one from the store's facts alone. */
static ks_winner winner(ks_arena *a, const char *name, double speedup, double baseline_ms,
                        unsigned judge_grid) {
  ks_winner w;
  memset(&w, 0, sizeof w);
  w.name = name;
  w.file = "hot.cu";
  w.speedup = speedup;
  w.speedup_low = speedup * 0.95;
  w.speedup_high = speedup * 1.05;
  w.baseline_ms = baseline_ms;
  if (judge_grid) {
    w.have_eval = true;
    ks_size_report *s = ks_array_push(a, &w.eval.sizes);
    memset(s, 0, sizeof *s);
    s->size = "large";
    s->timed = s->guards_hold = true;
    s->launch.grid[0] = judge_grid;
    s->launch.grid[1] = s->launch.grid[2] = 1;
    s->launch.block[0] = 256;
    s->launch.block[1] = s->launch.block[2] = 1;
  }
  return w;
}

static const ks_verify_kernel *kernel(const ks_verify_report *r, const char *name) {
  for (size_t i = 0; i < r->kernels.len; i++)
    if (!strcmp(r->kernels.items[i].name, name))
      return &r->kernels.items[i];
  fail_msg("no kernel %s", name);
  return NULL;
}

static void test_collect(void **state) {
  (void)state;
  /* Without the variants: ns::axpy 4 x 0.2 ms, hot::scale<float, 256> and
   * <double, 128> 2 x 0.3 ms each, a library kernel. With them: axpy_ks
   * 4 x 0.1 ms; scale_ks<float, 256> for the float instance, the double
   * one still the original. */
  FILE *f = fopen(ks_test_path(dir, "off.lines"), "w");
  fputs("{\"type\":\"start\",\"version\":1,\"pid\":1}\n", f);
  for (int i = 0; i < 4; i++)
    kline(f, "_ZN2ns4axpyEPfPKffi", 1000000ull * i, 200000, 4096);
  kline(f, "_ZN3hot5scaleIfLj256EEEvPT_PKS1_S1_m", 5000000, 300000, 64);
  kline(f, "_ZN3hot5scaleIdLj128EEEvPT_PKS1_S1_m", 6000000, 300000, 64);
  kline(f, "_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i", 7000000, 50000, 1);
  fputs("{\"type\":\"end\"}\n", f);
  fclose(f);
  f = fopen(ks_test_path(dir, "on.lines"), "w");
  fputs("{\"type\":\"start\",\"version\":1,\"pid\":1}\n", f);
  for (int i = 0; i < 4; i++)
    kline(f, "_ZN2ns7axpy_ksEPfPKffi", 1000000ull * i, 100000, 1024);
  kline(f, "_ZN3hot8scale_ksIfLj256EEEvPT_PKS1_S1_m", 5000000, 100000, 64);
  kline(f, "_ZN3hot5scaleIdLj128EEEvPT_PKS1_S1_m", 6000000, 300000, 64);
  kline(f, "_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i", 7000000, 50000, 1);
  fputs("{\"type\":\"end\"}\n", f);
  fclose(f);
  const char *stats = write_file(
      "on.stats", "kernelsmith: axpy at hot.cu:20: variant 4, off 0, other architecture 0, "
                  "guards failed 0, no device 0\n"
                  "kernelsmith: scale at hot.cu:30: variant 1, off 0, other architecture 0, "
                  "guards failed 1, no device 0\n");

  ks_arena a = KS_ARENA_INIT;
  ks_winners w;
  memset(&w, 0, sizeof w);
  w.run.id = 7;
  w.run.device = "NVIDIA H200, sm_90";
  /* axpy's judge launched the variant with 1024 blocks, as the program does. */
  *ks_array_push(&a, &w.items) = winner(&a, "ns::axpy", 2.1, 1.0, 1024);
  w.items.items[0].eval.warm_timed = true; /* its data fit in L2 */
  w.items.items[0].eval.warm_speedup = 1.4;
  *ks_array_push(&a, &w.items) = winner(&a, "hot::scale", 3.0, 0.3, 0);
  w.items.items[1].is_template = true;
  w.items.items[1].variant_name = "scale_ks";
  ks_verify_report r;
  ks_verify_begin(&r, &w, &a);
  ks_profile p;
  read_profile("off.lines", &p);
  ks_verify_add_exit(&r, false, 0, p.processes);
  ks_verify_add_profile(&r, &p, false);
  ks_profile_release(&p);
  read_profile("on.lines", &p);
  ks_verify_add_exit(&r, true, 0, p.processes);
  ks_verify_add_profile(&r, &p, true);
  ks_profile_release(&p);
  assert_int_equal(ks_verify_add_stats(&ctx, &r, stats), 0);
  ks_verify_finish(&r);

  assert_int_equal(r.run, 7);
  assert_false(r.failed);
  assert_null(r.failure);
  assert_int_equal(r.unlisted, 1); /* the library's kernel */
  const ks_verify_kernel *ax = kernel(&r, "ns::axpy");
  assert_string_equal(ax->variant, "ns::axpy_ks");
  assert_string_equal(ax->site_name, "axpy");
  assert_float_equal(ax->before.ms, 0.8, 1e-9);
  assert_float_equal(ax->after.ms, 0.4, 1e-9);
  assert_int_equal(ax->before.launches, 4);
  assert_int_equal(ax->after.variant_launches, 4);
  assert_int_equal(ax->before.back_to_back, 3);
  assert_float_equal(ax->speedup, 2.0, 1e-9);
  assert_true(ax->after.have_config);
  assert_int_equal(ax->after.config.grid[0], 1024);
  assert_true(ax->search_warm);
  assert_float_equal(ax->search_warm_speedup, 1.4, 1e-9);
  assert_int_equal(ax->verdict, KS_VERIFY_FASTER);
  assert_null(ax->cause);
  assert_int_equal(ax->sites.len, 1);
  /* The template: scale_ks<float, 256> counted as scale, with the double
   * instance that still ran the original. 0.6 ms before, 0.4 after. */
  const ks_verify_kernel *sc = kernel(&r, "hot::scale");
  assert_string_equal(sc->variant, "hot::scale_ks");
  assert_false(sc->search_warm);
  assert_int_equal(sc->before.launches, 2);
  assert_int_equal(sc->after.launches, 2);
  assert_int_equal(sc->after.variant_launches, 1);
  assert_float_equal(sc->speedup, 1.5, 1e-9);
  assert_int_equal(sc->verdict, KS_VERIFY_SHORT);
  assert_int_equal(sc->cause_kind, KS_CAUSE_GUARDS);
  assert_string_equal(sc->cause, "the variant did not run at 1 of 2 launches (guards failed at "
                                 "hot.cu:30)");
  ks_arena_release(&a);
}

/* ---- verdicts and causes ------------------------------------------------ */

/* A kernel that ran 200 times on each side, the variant at every launch,
 * 0.5 ms a launch before: the search said 2.0x with a 0.5 ms baseline, on
 * the program's launch (grid 4096, block 256). `speedup` in the program. */
static ks_verify_kernel base_kernel(ks_arena *a, double speedup) {
  ks_verify_kernel k;
  memset(&k, 0, sizeof k);
  k.name = k.base = "k";
  k.variant = "k_ks";
  k.site_name = "k";
  k.before.launches = k.before.timed = 200;
  k.before.mean_ms = 0.5;
  k.before.ms = 100;
  k.after.launches = k.after.timed = k.after.variant_launches = 200;
  k.after.mean_ms = 0.5 / speedup;
  k.after.ms = 100 / speedup;
  k.speedup = speedup;
  k.search_speedup = 2.0;
  k.search_baseline_ms = 0.5;
  k.have_judge_launch = k.after.have_config = true;
  k.judge_launch.grid[0] = k.after.config.grid[0] = 4096;
  k.judge_launch.block[0] = k.after.config.block[0] = 256;
  for (int i = 1; i < 3; i++) {
    k.judge_launch.grid[i] = k.after.config.grid[i] = 1;
    k.judge_launch.block[i] = k.after.config.block[i] = 1;
  }
  k.after.config.launches = 200;
  ks_site_stats *s = ks_array_push(a, &k.sites);
  memset(s, 0, sizeof *s);
  s->kernel = "k";
  s->where = "k.cu:10";
  s->counts[KS_PATH_VARIANT] = 200;
  return k;
}

static void test_verdicts(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_verify_kernel k = base_kernel(&a, 1.9);
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_FASTER); /* within 10% of 2.0 */
  assert_null(k.cause);
  k = base_kernel(&a, 1.75);
  ks_verify_judge(&a, &k, false);
  /* More than 10% under the search, still faster: kept, and said. */
  assert_int_equal(k.verdict, KS_VERIFY_SHORT);
  assert_int_equal(k.cause_kind, KS_CAUSE_UNKNOWN);
  assert_string_equal(k.cause, "unknown");
  assert_string_equal(ks_verify_verdict_name(KS_VERIFY_SHORT), "short of the search");
  /* One launch in the program: one cold sample against a median. */
  k = base_kernel(&a, 1.75);
  k.before.launches = 1;
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_SHORT);
  assert_int_equal(k.cause_kind, KS_CAUSE_FEW);
  assert_string_equal(k.cause, "few launches: the program runs it 1 time, each a cold single "
                               "sample, where the search took the median of many");
  /* Faster than the search said by more than a tenth: still faster, and
   * why is said (here the profile shows nothing else). */
  k = base_kernel(&a, 2.4);
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_FASTER);
  assert_int_equal(k.cause_kind, KS_CAUSE_UNKNOWN);
  assert_non_null(strstr(k.cause, "faster in the program (2.40x) than in the search (2.00x): "
                                  "the profile shows the same launch and size"));
  k = base_kernel(&a, 2.4);
  k.search_warm = true;
  k.search_warm_speedup = 2.5;
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_FASTER);
  assert_int_equal(k.cause_kind, KS_CAUSE_WARM);
  assert_non_null(strstr(k.cause, "warm cache: the search measured 2.50x with a warm L2"));
  k = base_kernel(&a, 2.15); /* within a tenth above: nothing to say */
  ks_verify_judge(&a, &k, false);
  assert_null(k.cause);
  k = base_kernel(&a, 0.95);
  k.search_speedup = 1.02;
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_NOT_FASTER); /* below 1.0 */
  k = base_kernel(&a, 1.9);
  ks_verify_judge(&a, &k, true);
  assert_int_equal(k.verdict, KS_VERIFY_FAILED);
  assert_int_equal(k.cause_kind, KS_CAUSE_PROGRAM);
  k = base_kernel(&a, 1.9);
  k.before.launches = k.after.launches = k.after.variant_launches = 0;
  ks_verify_judge(&a, &k, false);
  assert_int_equal(k.verdict, KS_VERIFY_NOT_RUN);
  assert_string_equal(ks_verify_verdict_name(KS_VERIFY_NOT_FASTER), "not faster");
  ks_arena_release(&a);
}

/* Not faster (below 1.0, or the variant did not run) or short of the
 * search (faster, by less than it said): either way the cause is named. */
static void judge_not_faster(ks_arena *a, ks_verify_kernel *k, ks_verify_cause_kind want) {
  ks_verify_judge(a, k, false);
  bool slower = k->speedup < 1.02 || !k->after.variant_launches;
  assert_int_equal(k->verdict, slower ? KS_VERIFY_NOT_FASTER : KS_VERIFY_SHORT);
  assert_int_equal(k->cause_kind, want);
}

static void test_causes_paths(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  /* Every launch's guards failed: the original ran, 1.0x. */
  ks_verify_kernel k = base_kernel(&a, 1.0);
  k.after.variant_launches = 0;
  k.sites.items[0].counts[KS_PATH_VARIANT] = 0;
  k.sites.items[0].counts[KS_PATH_GUARDS] = 200;
  judge_not_faster(&a, &k, KS_CAUSE_GUARDS);
  assert_string_equal(k.cause, "the variant did not run (guards failed at k.cu:10)");
  /* The variant ran, but a site of two failed its guards at 60 of 200:
   * named, even though a different launch would also apply. */
  k = base_kernel(&a, 1.2);
  k.after.variant_launches = 140;
  k.after.config.grid[0] = 1;
  k.sites.items[0].counts[KS_PATH_VARIANT] = 140;
  ks_site_stats *s2 = ks_array_push(&a, &k.sites);
  memset(s2, 0, sizeof *s2);
  s2->kernel = "k";
  s2->where = "k.cu:99";
  s2->counts[KS_PATH_GUARDS] = 60;
  judge_not_faster(&a, &k, KS_CAUSE_GUARDS);
  assert_string_equal(k.cause, "the variant did not run at 60 of 200 launches (guards failed at "
                               "k.cu:99)");
  /* Fewer than a tenth: not the cause. */
  k = base_kernel(&a, 1.2);
  k.sites.items[0].counts[KS_PATH_VARIANT] = 190;
  k.sites.items[0].counts[KS_PATH_GUARDS] = 10;
  judge_not_faster(&a, &k, KS_CAUSE_UNKNOWN);
  /* Switched off; another architecture; no device. */
  k = base_kernel(&a, 1.0);
  k.after.variant_launches = 0;
  k.sites.items[0].counts[KS_PATH_VARIANT] = 0;
  k.sites.items[0].counts[KS_PATH_OFF] = 200;
  judge_not_faster(&a, &k, KS_CAUSE_OFF);
  assert_non_null(strstr(k.cause, "switched off"));
  k.sites.items[0].counts[KS_PATH_OFF] = 0;
  k.sites.items[0].counts[KS_PATH_OTHER_ARCH] = 200;
  judge_not_faster(&a, &k, KS_CAUSE_OTHER_ARCH);
  assert_non_null(strstr(k.cause, "another architecture"));
  k.sites.items[0].counts[KS_PATH_OTHER_ARCH] = 0;
  k.sites.items[0].counts[KS_PATH_NO_DEVICE] = 200;
  judge_not_faster(&a, &k, KS_CAUSE_NO_DEVICE);
  /* No site reported, and only the original ran: not rebuilt. */
  k = base_kernel(&a, 1.0);
  k.after.variant_launches = 0;
  k.sites.len = 0;
  judge_not_faster(&a, &k, KS_CAUSE_NO_DISPATCH);
  /* No statistics, but the variant ran (an older header): not a path cause. */
  k = base_kernel(&a, 1.2);
  k.sites.len = 0;
  judge_not_faster(&a, &k, KS_CAUSE_UNKNOWN);
  ks_arena_release(&a);
}

static void test_causes_numbers(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  /* The program launched the variant with other blocks than the judge. */
  ks_verify_kernel k = base_kernel(&a, 1.2);
  k.after.config.block[0] = 128;
  judge_not_faster(&a, &k, KS_CAUSE_LAUNCH);
  assert_string_equal(k.cause, "a different launch: grid 4096x1x1, block 128x1x1 in the program "
                               "(200 of 200 launches), grid 4096x1x1, block 256x1x1 in the search");
  /* Without the judge's launch that is left out. */
  k.have_judge_launch = false;
  judge_not_faster(&a, &k, KS_CAUSE_UNKNOWN);
  /* Warm: the evaluation's warm speedup is nearer the program's. */
  k = base_kernel(&a, 1.2);
  k.search_warm = true;
  k.search_warm_speedup = 1.25;
  judge_not_faster(&a, &k, KS_CAUSE_WARM);
  assert_string_equal(k.cause, "warm cache: the search measured 1.25x with a warm L2 and 2.00x "
                               "with it flushed; the program's 1.20x is nearer the warm one");
  /* ... and when it is not, the sizes decide. */
  k.search_warm_speedup = 2.5;
  judge_not_faster(&a, &k, KS_CAUSE_UNKNOWN);
  /* Warm without a warm timing: far below the judge's baseline, back to
   * back. */
  k = base_kernel(&a, 1.2);
  k.before.mean_ms = 0.1;
  k.before.back_to_back = 150;
  judge_not_faster(&a, &k, KS_CAUSE_WARM);
  assert_string_equal(k.cause, "warm cache: 0.1 ms a launch in the program, 0.5 ms in the search "
                               "with the L2 flushed, and it runs back to back (150 of 200 "
                               "launches)");
  /* Not back to back: a different size. Larger too. */
  k.before.back_to_back = 20;
  judge_not_faster(&a, &k, KS_CAUSE_SIZE);
  assert_string_equal(k.cause, "a different size: 0.1 ms a launch in the program, 0.5 ms in the "
                               "search");
  k.before.mean_ms = 1.5;
  judge_not_faster(&a, &k, KS_CAUSE_SIZE);
  /* Within 2x: unknown. */
  k.before.mean_ms = 0.9;
  judge_not_faster(&a, &k, KS_CAUSE_UNKNOWN);
  assert_string_equal(ks_verify_cause_name(KS_CAUSE_LAUNCH), "a different launch");
  assert_null(ks_verify_cause_name(KS_CAUSE_NONE));
  ks_arena_release(&a);
}

static void test_failure_sentence(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_verify_report r;
  ks_verify_begin(&r, NULL, &a);
  ks_verify_add_exit(&r, false, 0, 1);
  ks_verify_add_exit(&r, true, 3 << 8, 1); /* exit 3 */
  ks_verify_finish(&r);
  assert_true(r.failed);
  assert_non_null(strstr(r.failure, "the program failed with the variants (exit status 3) and "
                                    "not without them"));
  ks_verify_begin(&r, NULL, &a);
  ks_verify_add_exit(&r, false, 9, 1); /* killed by SIGKILL */
  ks_verify_add_exit(&r, true, 0, 1);
  ks_verify_finish(&r);
  assert_int_equal(r.runs.items[0].exit_code, 137);
  assert_non_null(strstr(r.failure, "failed without the variants (killed by signal 9) and not "
                                    "with them"));
  ks_verify_begin(&r, NULL, &a);
  ks_verify_add_exit(&r, false, 1 << 8, 1);
  ks_verify_add_exit(&r, true, 2 << 8, 1);
  ks_verify_finish(&r);
  assert_non_null(strstr(r.failure, "with the variants (exit status 2) and without them (exit "
                                    "status 1)"));
  ks_arena_release(&a);
}

/* ---- the JSON and its reader -------------------------------------------- */

static void test_json_not_faster(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_verify_report r;
  ks_verify_begin(&r, NULL, &a);
  ks_verify_add_exit(&r, false, 0, 1);
  ks_verify_add_exit(&r, true, 0, 1);
  const double speedups[] = {1.9, 1.0, 0.8};
  const char *const names[] = {"fast", "ns::slow", "slower"};
  for (int i = 0; i < 3; i++) {
    ks_verify_kernel *k = ks_array_push(&a, &r.kernels);
    *k = base_kernel(&a, speedups[i]);
    k->name = names[i];
  }
  ks_verify_finish(&r);
  const char *path = ks_test_path(dir, "verify.json");
  assert_int_equal(ks_verify_save(&ctx, path, &r), 0);
  ks_strings out = {0};
  assert_int_equal(ks_verify_not_faster(&ctx, path, &a, &out), 0);
  assert_int_equal(out.len, 2);
  assert_string_equal(out.items[0], "ns::slow");
  assert_string_equal(out.items[1], "slower");
  /* The table says the same. */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ks_verify_print(f, &r, NULL);
  fclose(f);
  assert_non_null(strstr(text, "the program exited 0 in every run: 1 without the variants, 1 "
                               "with them\n"));
  assert_non_null(strstr(text, "    not faster: unknown\n"));
  free(text);

  struct {
    const char *text, *error;
  } bad[] = {
      {"not json", "not a JSON object"},
      {"{\"schema\": \"kernelsmith-cc.profile\", \"version\": 1}",
       "schema: not kernelsmith-cc.verify"},
      {"{\"schema\": \"kernelsmith-cc.verify\", \"version\": 2}", "version: not 1"},
      {"{\"schema\": \"kernelsmith-cc.verify\", \"version\": 1}", "kernels: not an array"},
      {"{\"schema\": \"kernelsmith-cc.verify\", \"version\": 1, \"kernels\": "
       "[{\"verdict\": \"faster\"}]}",
       "kernels[0].kernel: not a name"},
      {"{\"schema\": \"kernelsmith-cc.verify\", \"version\": 1, \"kernels\": [{\"kernel\": \"k\", "
       "\"verdict\": \"faster\"}, {\"kernel\": \"j\", \"verdict\": \"slow\"}]}",
       "kernels[1].verdict: 'slow' is none of"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *p = write_file("bad.json", bad[i].text);
    ks_strings none = {0};
    assert_int_equal(ks_verify_not_faster(&ctx, p, &a, &none), -1);
    assert_int_equal(strncmp(ctx.error, p, strlen(p)), 0);
    if (!strstr(ctx.error, bad[i].error))
      fail_msg("'%s' lacks '%s'", ctx.error, bad[i].error);
    assert_null(strchr(ctx.error, '\n'));
  }
  assert_int_equal(ks_verify_not_faster(&ctx, ks_test_path(dir, "absent.json"), &a, &out), -1);
  ks_arena_release(&a);
}

/* `test_verify --not-faster FILE`: the reader on the CLI's report. */
static int not_faster_main(const char *path) {
  ks_ctx c;
  ks_ctx_init(&c, "test_verify");
  ks_arena a = KS_ARENA_INIT;
  ks_strings names = {0};
  int rc = ks_verify_not_faster(&c, path, &a, &names);
  if (rc)
    fprintf(stderr, "%s\n", c.error);
  for (size_t i = 0; i < names.len; i++)
    printf("%s\n", names.items[i]);
  ks_arena_release(&a);
  ks_ctx_release(&c);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--not-faster"))
    return not_faster_main(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats_parse),     cmocka_unit_test(test_stats_read),
      cmocka_unit_test(test_collect),         cmocka_unit_test(test_verdicts),
      cmocka_unit_test(test_causes_paths),    cmocka_unit_test(test_causes_numbers),
      cmocka_unit_test(test_failure_sentence), cmocka_unit_test(test_json_not_faster),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
