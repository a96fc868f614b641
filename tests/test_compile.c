/* The compile service without a GPU: candidate rules, parallel NVRTC,
 * lowered names of template instances, and the cubin cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_compile.h"

static void expect_refused(const char *source, const char *needle) {
  ks_arena a = KS_ARENA_INIT;
  const char *why = ks_candidate_check(&a, source);
  if (!why || !strstr(why, needle))
    fail_msg("expected a refusal containing '%s' for:\n%s\ngot: %s", needle, source,
             why ? why : "(passed)");
  ks_arena_release(&a);
}

static void expect_allowed(const char *source) {
  ks_arena a = KS_ARENA_INIT;
  const char *why = ks_candidate_check(&a, source);
  if (why)
    fail_msg("expected to pass:\n%s\ngot: %s", source, why);
  ks_arena_release(&a);
}

static void candidate_rules(void **state) {
  expect_allowed("#include <cuda_fp16.h>\n"
                 "#include <cooperative_groups.h>\n"
                 "namespace ns { template <int N> __device__ inline float f(float x) { return x * N; } }\n"
                 "struct Pair { float a, b; __device__ float sum() const { return a + b; } };\n"
                 "__constant__ float coeffs[4] = {1, 2, 3, 4};\n"
                 "__device__ const int kBlock = 256;\n"
                 "static __device__ __forceinline__ float sq(float x) { return x * x; }\n"
                 "extern \"C\" __global__ void __launch_bounds__(256) k(float *y, const float *x, int n) {\n"
                 "  // a comment with <<< and int main() { in it\n"
                 "  const char *s = \"host(){\";\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "  if (i < n) y[i] = sq(x[i]) + coeffs[0] + ns::f<2>(1.0f);\n"
                 "}\n");
  expect_refused("#include <stdio.h>\n__global__ void k() {}\n", "'stdio.h'");
  expect_refused("#include \"../secret.h\"\n__global__ void k() {}\n", "'../secret.h'");
  expect_refused("__global__ void k(int *x) {}\nint helper(int v) { return v + 1; }\n",
                 "line 2: host function 'helper'");
  expect_refused("__global__ void child(int *x) {}\n"
                 "__global__ void k(int *x) { child<<<1, 1>>>(x); }\n",
                 "line 2: a kernel launch from device code");
  expect_refused("__global__ void k(void **a) { cudaLaunchDevice(0, 0, dim3(1), dim3(1), 0, 0); }\n",
                 "cudaLaunchDevice");
  expect_refused("__device__ int calls;\n__global__ void k(int *x) { calls++; }\n",
                 "line 1: mutable __device__ variable 'calls'");
  expect_refused("__device__ float cache[1024] = {0};\n__global__ void k(float *x) {}\n",
                 "mutable __device__ variable 'cache'");
  expect_refused("__managed__ int m;\n__global__ void k() {}\n", "__managed__");
  expect_refused("namespace a {\nnamespace b {\nvoid h() {}\n}\n}\n", "line 3: host function 'h'");
  /* a default argument's '=' does not make a function an initialized variable */
  expect_refused("int scaled(int v, int k = 2) { return v * k; }\n__global__ void k() {}\n",
                 "line 1: host function 'scaled'");
}

static ks_compiler compiler;
static char cache_dir[] = "/tmp/ks-compile-cache-XXXXXX";

static int setup(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  if (!mkdtemp(cache_dir))
    return -1;
  int rc = ks_compiler_init(&ctx, &compiler, "sm_90", cache_dir);
  if (rc)
    fprintf(stderr, "%s\n", ctx.error);
  ks_ctx_release(&ctx);
  return rc;
}

static int teardown(void **state) {
  ks_compiler_release(&compiler);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char templ[] =
    "template <typename T, int B> __global__ void scale(T *x, T a, int n) {\n"
    "  int i = blockIdx.x * B + threadIdx.x;\n"
    "  if (i < n) x[i] *= a;\n"
    "}\n";

static void parallel_compile_names_and_cache(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  enum { N = 12 };
  ks_arena a = KS_ARENA_INIT;
  ks_compile_unit units[N];
  const char *names[] = {"scale<float, 256>", "scale<double, 128>"};
  for (int i = 0; i < N; i++) {
    char *src = ks_arena_printf(&a, "%s// variant %d\n", templ, i);
    units[i] = (ks_compile_unit){.name = ks_arena_printf(&a, "v%d.cu", i),
                                 .source = src,
                                 .name_expressions = names,
                                 .nnames = 2,
                                 .candidate = src};
  }
  ks_compile_result res[N];
  assert_int_equal(ks_compile(&ctx, &compiler, units, N, &a, res), 0);
  for (int i = 0; i < N; i++) {
    if (res[i].status != KS_COMPILE_OK)
      fail_msg("%s: %s\n%s", units[i].name, res[i].reason, res[i].log);
    assert_false(res[i].cached);
    assert_true(res[i].cubin_size > 0);
    assert_string_equal(res[i].lowered[0], "_Z5scaleIfLi256EEvPT_S0_i");
    assert_non_null(strstr(res[i].lowered[1], "scaleIdLi128E"));
  }
  /* Again: every unit from the cache, byte for byte. */
  ks_compile_result again[N];
  assert_int_equal(ks_compile(&ctx, &compiler, units, N, &a, again), 0);
  for (int i = 0; i < N; i++) {
    assert_true(again[i].cached);
    assert_int_equal(again[i].cubin_size, res[i].cubin_size);
    assert_memory_equal(again[i].cubin, res[i].cubin, res[i].cubin_size);
    assert_string_equal(again[i].lowered[0], res[i].lowered[0]);
  }
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* The user's build's code generation: every option a compile command can
 * carry (ks_flags_codegen) is one NVRTC takes, and it changes the machine
 * code and the cache key. */
static void codegen_options(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *src = "__global__ void e(float *x) { x[threadIdx.x] = expf(x[threadIdx.x]) / 3.0f; }\n";
  const char *name = "e";
  static const char *const fast[] = {"--use_fast_math", "--ftz=true", "--prec-div=false",
                                     "--prec-sqrt=false", "--fmad=true", "--maxrregcount=32",
                                     "--extra-device-vectorization"};
  ks_compile_unit units[2] = {
      {.name = "plain.cu", .source = src, .name_expressions = &name, .nnames = 1},
      {.name = "fast.cu", .source = src, .name_expressions = &name, .nnames = 1,
       .extra_options = fast, .nextra = sizeof fast / sizeof *fast}};
  ks_compile_result r[2];
  assert_int_equal(ks_compile(&ctx, &compiler, units, 2, &a, r), 0);
  for (int i = 0; i < 2; i++)
    if (r[i].status != KS_COMPILE_OK)
      fail_msg("%s: %s\n%s", units[i].name, r[i].reason, r[i].log);
  assert_false(r[1].cached); /* not the plain one's cubin */
  assert_false(r[0].cubin_size == r[1].cubin_size &&
               !memcmp(r[0].cubin, r[1].cubin, r[0].cubin_size));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void failures_are_results(void **state) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *bad = "__global__ void k(int *x) { x[0] = undeclared_name; }\n";
  const char *host = "__global__ void k(int *x) {}\nint h() { return 1; }\n";
  ks_compile_unit units[] = {
      {.name = "bad.cu", .source = bad, .candidate = bad},
      {.name = "host.cu", .source = host, .candidate = host},
  };
  ks_compile_result res[2];
  assert_int_equal(ks_compile(&ctx, &compiler, units, 2, &a, res), 0);
  assert_int_equal(res[0].status, KS_COMPILE_FAILED);
  assert_non_null(strstr(res[0].reason, "undeclared_name"));
  assert_non_null(strstr(res[0].log, "undeclared_name"));
  assert_int_equal(res[1].status, KS_COMPILE_REFUSED);
  assert_non_null(strstr(res[1].reason, "host function 'h'"));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(candidate_rules),
      cmocka_unit_test(parallel_compile_names_and_cache),
      cmocka_unit_test(codegen_options),
      cmocka_unit_test(failures_are_results),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
