/* The profile's aggregate (backend/profile.c, profile_json.c): the injection
 * library's JSON lines read and added up (testdata/profile: a normal run, a
 * last line cut mid-write, no end line, a malformed line), names
 * demangled, mapped to the kernels of testdata/profile/hot.cu (an overloaded
 * pair, a template launched with two types, an anonymous namespace, extern
 * "C"), the JSON written and read back, the hot kernels chosen. */
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

#include "ks_profile.h"
#include "ks_scan.h"
#include "ks_test.h"

/* The names nvcc gives the kernels of hot.cu (an anonymous namespace gets
 * a name of its own per file). */
#define AXPY_F "_ZN3hot4axpyEPfPKffi"
#define AXPY_D "_ZN3hot4axpyEPdPKddi"
#define SCALE_F "_ZN3hot5scaleIfLj256EEEvPT_PKS1_S1_m"
#define SCALE_D "_ZN3hot5scaleIdLj128EEEvPT_PKS1_S1_m"
#define ZERO "_ZN38_GLOBAL__N__2b06965b_6_hot_cu_dacb89744zeroEPii"
#define LIBRARY "_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i"

static ks_ctx ctx;
static ks_scan hot;

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_profile");
  ctx.verbosity = KS_LOG_ERROR;
  const char *const paths[] = {ks_testdata("profile/hot.cu")};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &opts, &hot)) {
    fprintf(stderr, "scan of hot.cu failed: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ks_scan_release(&hot);
  ks_ctx_release(&ctx);
  return 0;
}

static const ks_profile_kernel *find(const ks_profile *p, const char *mangled) {
  for (size_t i = 0; i < p->kernels.len; i++)
    if (!strcmp(p->kernels.items[i].mangled, mangled))
      return &p->kernels.items[i];
  fail_msg("no kernel %s in the profile", mangled);
  return NULL;
}

static void read_ok(const char *rel, ks_profile *p) {
  if (ks_profile_read_lines(&ctx, ks_testdata(rel), p))
    fail_msg("%s: %s", rel, ctx.error);
}

/* 1 ns is 1e-6 ms; durations come from 19-digit timestamps. */
#define assert_ms(got, want) assert_true(fabs((got) - (want)) < 1e-9)

/* Sampled: counts beside the timed launches; each process's last count
 * line holds its launches; totals estimated from the timed mean; a kernel
 * counted but never timed has launches and no time. The JSON keeps it. */
static void test_sampled_run(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/sampled.jsonl", &p);
  assert_int_equal(p.sample_percent, 20);
  assert_int_equal(p.launches, 14);
  assert_ms(p.total_ms, 0.021);
  const ks_profile_kernel *hk = find(&p, "_Z3hotv");
  assert_int_equal(hk->launches, 10);
  assert_int_equal(hk->sampled_launches, 2);
  assert_ms(hk->mean_ms, 0.002);
  assert_ms(hk->total_ms, 0.02);
  assert_true(fabs(hk->share - 20.0 / 21.0) < 1e-12);
  const ks_profile_kernel *cold = find(&p, "_Z4coldv");
  assert_int_equal(cold->launches, 1);
  assert_int_equal(cold->sampled_launches, 0);
  assert_ms(cold->total_ms, 0.001);
  const ks_profile_kernel *never = find(&p, "_Z5neverv");
  assert_int_equal(never->launches, 3);
  assert_int_equal(never->untimed, 3);
  assert_ms(never->total_ms, 0);

  char path[64];
  snprintf(path, sizeof path, "/tmp/ks-sampled-%d.json", (int)getpid());
  assert_int_equal(ks_profile_save(&ctx, path, &p), 0);
  ks_profile back;
  if (ks_profile_load(&ctx, path, &back))
    fail_msg("%s", ctx.error);
  unlink(path);
  assert_int_equal(back.sample_percent, 20);
  assert_int_equal(find(&back, "_Z3hotv")->sampled_launches, 2);
  assert_int_equal(find(&back, "_Z4coldv")->sampled_launches, 0);
  ks_profile_release(&back);
  ks_profile_release(&p);
}

static void test_normal_run(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/normal.jsonl", &p);
  assert_true(p.ended_normally);
  assert_int_equal(p.processes, 1);
  assert_int_equal(p.dropped, 3);
  assert_int_equal(p.truncated_lines, 0);
  assert_int_equal(p.launches, 10);
  assert_int_equal(p.kernels.len, 7);
  assert_ms(p.total_ms, 0.025);
  /* Most total time first. */
  assert_string_equal(p.kernels.items[0].mangled, SCALE_F);
  assert_string_equal(p.kernels.items[1].mangled, AXPY_F);
  assert_string_equal(p.kernels.items[6].mangled, "count_ones");

  const ks_profile_kernel *k = find(&p, AXPY_F);
  assert_int_equal(k->launches, 3);
  assert_ms(k->total_ms, 0.006);
  assert_ms(k->mean_ms, 0.002);
  assert_ms(k->min_ms, 0.001);
  assert_ms(k->max_ms, 0.003);
  assert_true(fabs(k->share - 0.24) < 1e-12);
  /* Two configurations: grid 4 twice, grid 8 once. */
  assert_int_equal(k->configs.len, 2);
  assert_int_equal(k->distinct_configs, 2);
  assert_int_equal(k->configs.items[0].grid[0], 4);
  assert_int_equal(k->configs.items[0].launches, 2);
  assert_ms(k->configs.items[0].total_ms, 0.003);
  assert_int_equal(k->configs.items[1].grid[0], 8);
  assert_int_equal(k->configs.items[0].block[0], 256);
  assert_int_equal(k->other_launches, 0);

  /* 500 ns exactly: a double would have rounded the timestamps by 256 ns. */
  k = find(&p, "count_ones");
  assert_ms(k->total_ms, 0.0005);
  assert_int_equal(k->smem_static, 128);
  assert_int_equal(k->configs.items[0].smem_dynamic, 64);
  assert_true(fabs(find(&p, SCALE_F)->share - 0.4) < 1e-12);
  ks_profile_release(&p);
}

static void test_truncated_last_line(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/truncated.jsonl", &p);
  assert_int_equal(p.truncated_lines, 1);
  assert_false(p.ended_normally);
  assert_int_equal(p.launches, 3);
  ks_profile_release(&p);
}

static void test_no_end_line(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/no_end.jsonl", &p);
  assert_false(p.ended_normally);
  assert_int_equal(p.truncated_lines, 0);
  assert_int_equal(p.launches, 3);
  assert_int_equal(p.kernels.len, 2);
  ks_profile_release(&p);
}

static void test_malformed_line(void **state) {
  (void)state;
  ks_profile p;
  const char *path = ks_testdata("profile/malformed.jsonl");
  assert_int_equal(ks_profile_read_lines(&ctx, path, &p), -1);
  char want[4200];
  snprintf(want, sizeof want, "%s:3: not a JSON object", path);
  assert_non_null(strstr(ctx.error, want));
  assert_int_equal(p.kernels.len, 0);
}

/* Lines that are JSON but not what the format says, each named. */
static void test_bad_fields(void **state) {
  (void)state;
  static const struct {
    const char *line, *says;
  } cases[] = {
      {"{\"name\":\"k\"}", "without a \"type\""},
      {"{\"type\":\"kernel\",\"grid\":[1,1,1],\"block\":[1,1,1],\"start_ns\":1,\"end_ns\":2}",
       "without a \"name\""},
      {"{\"type\":\"kernel\",\"name\":\"k\",\"grid\":[1,1,1],\"block\":[1,1,1],\"start_ns\":1.5,"
       "\"end_ns\":2}",
       "whole numbers"},
      {"{\"type\":\"kernel\",\"name\":\"k\",\"grid\":[1,1],\"block\":[1,1,1],\"start_ns\":1,"
       "\"end_ns\":2}",
       "three numbers"},
      {"{\"type\":\"start\",\"version\":2}", "version"},
  };
  char path[] = "/tmp/test_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"type\":\"start\",\"version\":1}\n%s\n", cases[i].line);
    fclose(f);
    ks_profile p;
    assert_int_equal(ks_profile_read_lines(&ctx, path, &p), -1);
    if (!strstr(ctx.error, ":2: ") || !strstr(ctx.error, cases[i].says))
      fail_msg("case %zu: %s", i, ctx.error);
  }
  /* Unknown types are a later version's: skipped. Blank lines too. */
  FILE *f = fopen(path, "w");
  fputs("{\"type\":\"memcpy\",\"bytes\":4}\n\n", f);
  fclose(f);
  ks_profile p;
  assert_int_equal(ks_profile_read_lines(&ctx, path, &p), 0);
  assert_int_equal(p.kernels.len, 0);
  assert_int_equal(p.processes, 0);
  assert_false(p.ended_normally);
  ks_profile_release(&p);
  /* A launch CUPTI could not time (both times 0) counts, without time. */
  f = fopen(path, "w");
  fputs("{\"type\":\"kernel\",\"name\":\"k\",\"grid\":[1,1,1],\"block\":[32,1,1],"
        "\"start_ns\":0,\"end_ns\":0}\n"
        "{\"type\":\"kernel\",\"name\":\"k\",\"grid\":[1,1,1],\"block\":[32,1,1],"
        "\"start_ns\":5000,\"end_ns\":7000}\n", f);
  fclose(f);
  assert_int_equal(ks_profile_read_lines(&ctx, path, &p), 0);
  assert_int_equal(p.kernels.items[0].launches, 2);
  assert_int_equal(p.kernels.items[0].untimed, 1);
  assert_ms(p.kernels.items[0].mean_ms, 0.002);
  assert_ms(p.kernels.items[0].min_ms, 0.002);
  assert_int_equal(p.kernels.items[0].configs.items[0].launches, 2);
  ks_profile_release(&p);
  unlink(path);
}

static void test_demangle(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  assert_string_equal(ks_profile_demangle(&a, "_Z12saxpy_kernelifPfS_"),
                      "saxpy_kernel(int, float, float*, float*)");
  assert_string_equal(ks_profile_demangle(&a, SCALE_D),
                      "void hot::scale<double, 128u>(double*, double const*, double, unsigned long)");
  assert_string_equal(ks_profile_demangle(&a, ZERO), "(anonymous namespace)::zero(int*, int)");
  assert_null(ks_profile_demangle(&a, "count_ones"));
  assert_null(ks_profile_demangle(&a, "i")); /* extern "C" named like a type */
  assert_null(ks_profile_demangle(&a, "_Zgarbage"));
  ks_arena_release(&a);
}

static void assert_source(const ks_profile *p, const char *mangled, const char *signature,
                          unsigned line) {
  const ks_profile_kernel *k = find(p, mangled);
  if (!k->source)
    fail_msg("%s: not mapped", mangled);
  if (strcmp(k->source->signature, signature) || k->source->line != line)
    fail_msg("%s: mapped to %s at line %u, not %s at %u", mangled, k->source->signature,
             k->source->line, signature, line);
  assert_non_null(strstr(k->source->file, "testdata/profile/hot.cu"));
}

static void test_map(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/normal.jsonl", &p);
  assert_int_equal(ks_profile_map(&p, &hot.kernels), 6);
  /* The overloads by their parameter types. */
  assert_source(&p, AXPY_F, "hot::axpy(float *, const float *, float, int)", 10);
  assert_source(&p, AXPY_D, "hot::axpy(double *, const double *, double, int)", 15);
  /* Both instantiations are the one template. */
  assert_source(&p, SCALE_F, "hot::scale(T *__restrict, const T *, T, size_t)", 21);
  assert_source(&p, SCALE_D, "hot::scale(T *__restrict, const T *, T, size_t)", 21);
  assert_ptr_equal(find(&p, SCALE_F)->source, find(&p, SCALE_D)->source);
  assert_source(&p, ZERO, "(anonymous namespace)::zero(int *, int)", 29);
  assert_source(&p, "count_ones", "count_ones(const unsigned int *, unsigned int *, int)", 35);
  assert_null(find(&p, LIBRARY)->source);
  ks_profile_release(&p);
}

/* Overloads whose types only agree once typedefs, qualifiers and spelling
 * are seen through; a kernel whose sources changed still maps by name. */
static void test_map_types(void **state) {
  (void)state;
  ks_kernel ks[2] = {0};
  ks_param p0[] = {{.type = "const std::uint32_t *__restrict"}, {.type = "const size_t"}};
  ks_param p1[] = {{.type = "volatile unsigned *"}, {.type = "long long int"}};
  for (int i = 0; i < 2; i++) {
    ks[i].name = "k";
    ks[i].qualified_name = "ns::k";
    ks[i].params.len = 2;
  }
  ks[0].params.items = p0;
  ks[0].signature = "ns::k(0)";
  ks[1].params.items = p1;
  ks[1].signature = "ns::k(1)";
  ks_kernels kernels = {ks, 2, 2};
  ks_profile p;
  ks_profile_init(&p);
  ks_profile_kernel *a = ks_array_push(&p.arena, &p.kernels);
  a->mangled = a->demangled = "ns::k(unsigned int const*, unsigned long)";
  ks_profile_kernel *b = ks_array_push(&p.arena, &p.kernels);
  b->mangled = b->demangled = "ns::k(unsigned int volatile*, long long)";
  ks_profile_kernel *c = ks_array_push(&p.arena, &p.kernels);
  c->mangled = c->demangled = "ns::k(float*)";
  ks_profile_kernel *d = ks_array_push(&p.arena, &p.kernels);
  d->mangled = d->demangled = "other::k(float*)";
  assert_int_equal(ks_profile_map(&p, &kernels), 3);
  assert_string_equal(p.kernels.items[0].source->signature, "ns::k(0)");
  assert_string_equal(p.kernels.items[1].source->signature, "ns::k(1)");
  assert_non_null(p.kernels.items[2].source);
  assert_null(p.kernels.items[3].source);
  ks_profile_release(&p);

  /* Two files' anonymous namespaces: nvcc's name holds the file's. */
  ks_kernel anon[2] = {0};
  ks_param ip[] = {{.type = "int *"}, {.type = "int"}};
  const char *files[] = {"/src/a.cu", "/src/hot.cu"};
  for (int i = 0; i < 2; i++) {
    anon[i].qualified_name = "(anonymous namespace)::zero";
    anon[i].signature = "(anonymous namespace)::zero(int *, int)";
    anon[i].params = (ks_params){ip, 2, 2};
    anon[i].loc.file = files[i];
  }
  kernels = (ks_kernels){anon, 2, 2};
  ks_profile_init(&p);
  a = ks_array_push(&p.arena, &p.kernels);
  a->mangled = ZERO;
  a->demangled = ks_profile_demangle(&p.arena, ZERO);
  assert_int_equal(ks_profile_map(&p, &kernels), 1);
  assert_string_equal(p.kernels.items[0].source->file, "/src/hot.cu");
  ks_profile_release(&p);
}

static void test_json_round_trip(void **state) {
  (void)state;
  ks_profile p, back;
  read_ok("profile/normal.jsonl", &p);
  ks_profile_map(&p, &hot.kernels);
  *ks_array_push(&p.arena, &p.command) = "./app";
  *ks_array_push(&p.arena, &p.command) = "--size=1 2";
  p.exit_status = 3;
  char path[] = "/tmp/test_profile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(ks_profile_save(&ctx, path, &p), 0);
  if (ks_profile_load(&ctx, path, &back))
    fail_msg("%s", ctx.error);
  assert_int_equal(back.command.len, 2);
  assert_string_equal(back.command.items[1], "--size=1 2");
  assert_int_equal(back.exit_status, 3);
  assert_int_equal(back.signal, 0);
  assert_true(back.ended_normally);
  assert_int_equal(back.dropped, 3);
  assert_int_equal(back.launches, p.launches);
  assert_true(back.total_ms == p.total_ms);
  assert_int_equal(back.kernels.len, p.kernels.len);
  for (size_t i = 0; i < p.kernels.len; i++) {
    const ks_profile_kernel *x = &p.kernels.items[i], *y = &back.kernels.items[i];
    assert_string_equal(x->mangled, y->mangled);
    assert_string_equal(x->demangled, y->demangled);
    assert_int_equal(x->launches, y->launches);
    assert_true(x->total_ms == y->total_ms && x->mean_ms == y->mean_ms && x->share == y->share);
    assert_true(x->min_ms == y->min_ms && x->max_ms == y->max_ms);
    assert_int_equal(x->configs.len, y->configs.len);
    for (size_t c = 0; c < x->configs.len; c++)
      assert_memory_equal(&x->configs.items[c], &y->configs.items[c], sizeof x->configs.items[c]);
    assert_int_equal(!x->source, !y->source);
    if (x->source) {
      assert_string_equal(x->source->signature, y->source->signature);
      assert_string_equal(x->source->file, y->source->file);
      assert_int_equal(x->source->line, y->source->line);
    }
  }
  ks_profile_release(&back);

  /* Not a profile, and a profile of another version. */
  FILE *f = fopen(path, "w");
  fputs("{\"schema\":\"kernelsmith-cc.scan\",\"version\":1}", f);
  fclose(f);
  assert_int_equal(ks_profile_load(&ctx, path, &back), -1);
  assert_non_null(strstr(ctx.error, "not a profile"));
  f = fopen(path, "w");
  fputs("{\"schema\":\"kernelsmith-cc.profile\",\"version\":2}", f);
  fclose(f);
  assert_int_equal(ks_profile_load(&ctx, path, &back), -1);
  assert_non_null(strstr(ctx.error, "version 2"));
  unlink(path);
  ks_profile_release(&p);
}

static char *print_to_string(const ks_profile *p, const ks_profile_print_options *o) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ks_profile_print(f, p, o);
  fclose(f);
  return text;
}

static void test_table(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/normal.jsonl", &p);
  ks_profile_map(&p, &hot.kernels);
  ks_profile_print_options o = {.relative_to = ks_testdata("profile")};
  char *t = print_to_string(&p, &o);
  if (getenv("KS_TEST_SHOW"))
    fputs(t, stderr);
  assert_non_null(strstr(t, "10 launches of 7 kernels, 0.025 ms of kernel time"));
  /* Rank 1: the template instantiation, without its return type, its
   * parameters folded to fit; the overloads keep theirs. */
  assert_non_null(strstr(t, "   1  hot::scale<float, 256u>(...)  "));
  assert_non_null(strstr(t, "   2  hot::axpy(float*, float const*, float, int)  "));
  assert_non_null(strstr(t, "40.0%  hot.cu:21\n"));
  assert_non_null(strstr(t, "cublas_internal::gemvx<128, 16, float>"));
  assert_non_null(strstr(t, "(not in the sources)"));
  assert_non_null(strstr(t, "CUPTI dropped 3 records"));
  assert_null(strstr(t, "did not exit normally"));
  free(t);
  p.signal = 9;
  t = print_to_string(&p, &o);
  assert_non_null(strstr(t, "the application did not exit normally (signal 9); the profile "
                            "holds what ran before"));
  free(t);
  ks_profile_release(&p);
}

static void test_select(void **state) {
  (void)state;
  ks_profile p;
  read_ok("profile/normal.jsonl", &p);
  ks_profile_map(&p, &hot.kernels);
  ks_arena a = KS_ARENA_INIT;
  /* The template's two instantiations add up: 0.4 + 0.08. */
  ks_profile_picks picks = {0};
  ks_profile_select(&p, 1, 0, &a, &picks);
  assert_int_equal(picks.len, 1);
  assert_string_equal(picks.items[0].source->qualified_name, "hot::scale");
  assert_true(fabs(picks.items[0].share - 0.48) < 1e-12);
  /* Top 3: the template, then the two overloads apart. */
  picks = (ks_profile_picks){0};
  ks_profile_select(&p, 3, 0, &a, &picks);
  assert_int_equal(picks.len, 3);
  assert_string_equal(picks.items[1].source->signature, "hot::axpy(float *, const float *, float, int)");
  assert_string_equal(picks.items[2].source->signature,
                      "hot::axpy(double *, const double *, double, int)");
  /* Everything with at least 5%: the library kernel (6%) comes along,
   * without a source, and does not count. */
  picks = (ks_profile_picks){0};
  ks_profile_select(&p, 0, 5, &a, &picks);
  assert_int_equal(picks.len, 4);
  assert_null(picks.items[3].source);
  assert_string_equal(picks.items[3].name,
                      "void cublas_internal::gemvx<128, 16, float>(float const*, float*, int)");
  picks = (ks_profile_picks){0};
  ks_profile_select(&p, 0, 50, &a, &picks);
  assert_int_equal(picks.len, 0);
  ks_arena_release(&a);
  ks_profile_release(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_normal_run),  cmocka_unit_test(test_truncated_last_line),
      cmocka_unit_test(test_sampled_run),
      cmocka_unit_test(test_no_end_line), cmocka_unit_test(test_malformed_line),
      cmocka_unit_test(test_bad_fields),  cmocka_unit_test(test_demangle),
      cmocka_unit_test(test_map),         cmocka_unit_test(test_map_types),
      cmocka_unit_test(test_json_round_trip), cmocka_unit_test(test_table),
      cmocka_unit_test(test_select),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
