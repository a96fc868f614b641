/* The compile service without a GPU: candidate rules, parallel NVRTC,
 * lowered names of template instances, and the cubin cache; the same with
 * nvcc (skipped where there is none), its fallback to NVRTC, and what a
 * cubin says about its functions. */
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
#include "ks_judge.h"

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

/* nvcc: a plain kernel, a template instance in a namespace and a kernel in
 * an anonymous namespace (which nvcc and NVRTC name differently), each
 * found in nvcc's cubin; the second compile from the cache. */
static void nvcc_compiles_plain_and_template_kernels(void **state) {
  if (!*compiler.nvcc)
    skip();
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *src = "namespace ns {\n"
                    "template <typename T, int B> __global__ void scale(T *x, T a, int n) {\n"
                    "  __shared__ T tile[B];\n"
                    "  int i = blockIdx.x * B + threadIdx.x;\n"
                    "  tile[threadIdx.x] = i < n ? x[i] : T(0);\n"
                    "  __syncthreads();\n"
                    "  if (i < n) x[i] = tile[B - 1 - threadIdx.x] * a;\n"
                    "}\n"
                    "}\n"
                    "namespace { __global__ void hidden(float *x) { x[threadIdx.x] += 1.0f; } }\n"
                    "__global__ void plain(float *x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 2; }\n";
  const char *names[] = {"ns::scale<float, 128>", "hidden", "plain"};
  const char *fast[] = {"--use_fast_math"};
  ks_compile_unit unit = {.name = "mixed.cu", .source = src, .name_expressions = names,
                          .nnames = 3, .nvcc = true, .extra_options = fast, .nextra = 1};
  ks_compile_result r, again, nvrtc;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &a, &r), 0);
  if (r.status != KS_COMPILE_OK)
    fail_msg("%s\n%s", r.reason, r.log);
  if (!r.nvcc)
    fail_msg("not compiled by nvcc: %s", r.note ? r.note : "(no note)");
  assert_null(r.note);
  assert_false(r.cached);
  assert_memory_equal(r.cubin, "\177ELF", 4);
  assert_string_equal(r.lowered[0], "_ZN2ns5scaleIfLi128EEEvPT_S1_i");
  assert_non_null(strstr(r.lowered[1], "_GLOBAL__N_"));
  assert_non_null(strstr(r.lowered[1], "6hiddenEPf"));
  assert_string_equal(r.lowered[2], "_Z5plainPfi");
  const char **entries;
  assert_int_equal(ks_cubin_entries(&a, r.cubin, r.cubin_size, &entries), 3);
  for (int i = 0; i < 3; i++) {
    ks_cubin_function f;
    assert_int_equal(ks_cubin_function_info(r.cubin, r.cubin_size, r.lowered[i], &f), 0);
    assert_true(f.registers > 0 && f.registers < 256);
    assert_int_equal(strlen(f.text_sha256), 64);
    assert_true(f.text_bytes > 0);
  }
  ks_cubin_function none;
  assert_int_equal(ks_cubin_function_info(r.cubin, r.cubin_size, "_Z4nonev", &none), -1);
  assert_int_equal(ks_cubin_function_info("not an ELF file", 16, r.lowered[0], &none), -1);

  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &a, &again), 0);
  assert_int_equal(again.status, KS_COMPILE_OK);
  assert_true(again.cached && again.nvcc);
  assert_int_equal(again.cubin_size, r.cubin_size);
  assert_memory_equal(again.cubin, r.cubin, r.cubin_size);
  for (int i = 0; i < 3; i++)
    assert_string_equal(again.lowered[i], r.lowered[i]);
  /* NVRTC's cubin of the same unit is another cache entry, and its names
   * are the same but for the anonymous namespace's. */
  unit.nvcc = false;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &a, &nvrtc), 0);
  assert_int_equal(nvrtc.status, KS_COMPILE_OK);
  assert_false(nvrtc.cached || nvrtc.nvcc);
  assert_string_equal(nvrtc.lowered[0], r.lowered[0]);
  assert_string_equal(nvrtc.lowered[2], r.lowered[2]);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* A unit nvcc rejects (here: one that insists on NVRTC) is compiled by
 * NVRTC, with the reason in the note; the rejection is remembered, so the
 * second compile asks nvcc nothing and finds NVRTC's cubin cached. */
static void nvcc_rejection_falls_back_to_nvrtc(void **state) {
  if (!*compiler.nvcc)
    skip();
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *src = "#ifndef __CUDACC_RTC__\n#error this unit is for NVRTC only\n#endif\n"
                    "__global__ void only_rtc(int *x) { x[0] = 1; }\n";
  const char *name = "only_rtc";
  ks_compile_unit unit = {.name = "rtc.cu", .source = src, .name_expressions = &name,
                          .nnames = 1, .nvcc = true};
  ks_compile_result r, again;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &a, &r), 0);
  assert_int_equal(r.status, KS_COMPILE_OK);
  assert_false(r.nvcc);
  assert_non_null(r.note);
  assert_non_null(strstr(r.note, "nvcc rejected it"));
  assert_non_null(strstr(r.note, "this unit is for NVRTC only"));
  assert_string_equal(r.lowered[0], "_Z8only_rtcPi");
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &a, &again), 0);
  assert_int_equal(again.status, KS_COMPILE_OK);
  assert_true(again.cached);
  assert_false(again.nvcc);
  assert_string_equal(again.note, r.note);
  /* Both compilers refuse: the unit fails with NVRTC's reason. */
  const char *bad = "__global__ void k(int *x) { x[0] = undeclared_name; }\n";
  const char *k = "k";
  ks_compile_unit broken = {.name = "bad.cu", .source = bad, .name_expressions = &k, .nnames = 1,
                            .nvcc = true};
  assert_int_equal(ks_compile(&ctx, &compiler, &broken, 1, &a, &r), 0);
  assert_int_equal(r.status, KS_COMPILE_FAILED);
  assert_non_null(strstr(r.reason, "undeclared_name"));
  assert_non_null(strstr(r.note, "nvcc rejected it"));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* Why the judge compiles with nvcc (docs/judge.md, "Which compiler"):
 * with the options ks_compiler_init gives NVRTC, kernels without shared
 * arrays get nvcc's machine code exactly, so the options match nvcc's
 * defaults; kernels with __shared__ arrays may not (NVRTC addresses shared
 * memory with 64-bit pointers, nvcc with 32-bit ones), which only nvcc
 * itself fixes. The first half is asserted, the second printed. */
static void nvrtc_and_nvcc_machine_code(void **state) {
  if (!*compiler.nvcc)
    skip();
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *src =
      "__global__ void saxpy(int n, float a, const float *x, float *y) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n"
      "__global__ void gelu(float *out, const float *in, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) { float x = in[i];\n"
      "    out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); } }\n"
      "__global__ void warp_sum(const float *in, float *out, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; float v = i < n ? in[i] : 0.f;\n"
      "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n"
      "  if ((threadIdx.x & 31) == 0) atomicAdd(out, v); }\n"
      "__global__ void transpose(const float *in, float *out, int w, int h) {\n"
      "  __shared__ float tile[32][33];\n"
      "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
      "  for (int j = 0; j < 32; j += 8)\n"
      "    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];\n"
      "  __syncthreads();\n"
      "  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;\n"
      "  for (int j = 0; j < 32; j += 8)\n"
      "    if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j]; }\n";
  const char *names[] = {"saxpy", "gelu", "warp_sum", "transpose"};
  ks_compile_unit units[2] = {
      {.name = "same.cu", .source = src, .name_expressions = names, .nnames = 4},
      {.name = "same.cu", .source = src, .name_expressions = names, .nnames = 4, .nvcc = true}};
  ks_compile_result r[2];
  assert_int_equal(ks_compile(&ctx, &compiler, units, 2, &a, r), 0);
  assert_int_equal(r[0].status, KS_COMPILE_OK);
  assert_int_equal(r[1].status, KS_COMPILE_OK);
  assert_true(r[1].nvcc);
  for (int i = 0; i < 4; i++) {
    ks_cubin_function x, y;
    assert_int_equal(ks_cubin_function_info(r[0].cubin, r[0].cubin_size, r[0].lowered[i], &x), 0);
    assert_int_equal(ks_cubin_function_info(r[1].cubin, r[1].cubin_size, r[1].lowered[i], &y), 0);
    bool same = !strcmp(x.text_sha256, y.text_sha256);
    printf("    %-9s NVRTC %d registers %.12s, nvcc %d registers %.12s: %s\n", names[i],
           x.registers, x.text_sha256, y.registers, y.text_sha256, same ? "same" : "different");
    if (i < 3 && !same)
      fail_msg("%s: NVRTC's machine code differs from nvcc's: the options of ks_compiler_init "
               "no longer match nvcc's defaults", names[i]);
  }
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* The judge's choice of compiler (ks_judge_prepare needs no worker):
 * AUTO takes nvcc only when the build's command is known, keeps NVRTC's
 * original for variants nvcc rejects, and judged with NVRTC while the
 * command is known it says whether nvcc's machine code differs. */
static void judge_prepare_chooses_the_compiler(void **state) {
  if (!*compiler.nvcc)
    skip();
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ctx.verbosity = KS_LOG_ERROR; /* the note's warning is expected */
  ks_arena a = KS_ARENA_INIT;
  ks_judge j;
  memset(&j, 0, sizeof j);
  j.compiler = compiler;
  const char *tile = "__global__ void transpose(const float *in, float *out, int w, int h) {\n"
                     "  __shared__ float tile[32][33];\n"
                     "  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;\n"
                     "  for (int j = 0; j < 32; j += 8)\n"
                     "    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];\n"
                     "  __syncthreads();\n"
                     "  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;\n"
                     "  for (int j = 0; j < 32; j += 8)\n"
                     "    if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];\n"
                     "}\n";
  ks_subject s = {.kernel = "transpose", .slice_source = tile, .name_expression = "transpose",
                  .build_known = true};
  j.opts.compiler = KS_COMPILER_AUTO;
  assert_int_equal(ks_judge_prepare(&ctx, &j, &s, &a), 0);
  assert_true(s.nvcc);
  assert_non_null(s.base_nvrtc.cubin);
  assert_null(s.compiler_note);
  assert_null(s.machine_code_note);
  ks_module nvcc_base = s.base, nvrtc_base = s.base_nvrtc;

  /* Build command unknown: NVRTC, and no comparison. */
  s.build_known = false;
  assert_int_equal(ks_judge_prepare(&ctx, &j, &s, &a), 0);
  assert_false(s.nvcc);
  assert_null(s.base_nvrtc.cubin);
  assert_null(s.machine_code_note);

  /* NVRTC asked for, the build's command known: the note exactly when the
   * two compilers' machine code differs. */
  s.build_known = true;
  j.opts.compiler = KS_COMPILER_NVRTC;
  assert_int_equal(ks_judge_prepare(&ctx, &j, &s, &a), 0);
  assert_false(s.nvcc);
  ks_cubin_function x, y;
  assert_int_equal(ks_cubin_function_info(nvrtc_base.cubin, nvrtc_base.size, nvrtc_base.function,
                                          &x), 0);
  assert_int_equal(ks_cubin_function_info(nvcc_base.cubin, nvcc_base.size, nvcc_base.function, &y),
                   0);
  if (strcmp(x.text_sha256, y.text_sha256)) {
    assert_non_null(s.machine_code_note);
    assert_non_null(strstr(s.machine_code_note, "differs from nvcc's"));
    assert_non_null(strstr(s.machine_code_note, "SASS digest"));
  } else {
    assert_null(s.machine_code_note);
  }

  /* nvcc asked for, and the original needs NVRTC: NVRTC, with the reason. */
  s.slice_source = "#ifndef __CUDACC_RTC__\n#error for NVRTC only\n#endif\n"
                   "__global__ void transpose(float *x) { x[0] = 1; }\n";
  j.opts.compiler = KS_COMPILER_NVCC;
  assert_int_equal(ks_judge_prepare(&ctx, &j, &s, &a), 0);
  assert_false(s.nvcc);
  assert_non_null(s.compiler_note);
  assert_non_null(strstr(s.compiler_note, "nvcc rejected it"));
  assert_null(s.machine_code_note);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void compiler_kind_names(void **state) {
  ks_compiler_kind k = KS_COMPILER_NVCC;
  assert_int_equal(ks_compiler_kind_parse("auto", &k), 0);
  assert_int_equal(k, KS_COMPILER_AUTO);
  assert_int_equal(ks_compiler_kind_parse("nvrtc", &k), 0);
  assert_int_equal(k, KS_COMPILER_NVRTC);
  assert_int_equal(ks_compiler_kind_parse("nvcc", &k), 0);
  assert_int_equal(k, KS_COMPILER_NVCC);
  assert_int_equal(ks_compiler_kind_parse("clang", &k), -1);
  assert_string_equal(ks_compiler_kind_name(KS_COMPILER_NVRTC), "nvrtc");
}

/* The fp64 reference captured workloads get by default (ks_judge_prepare,
 * no worker): compiled when there is a captured workload to give it to;
 * a twin the slice has not, or one that does not compile, is one warning
 * line and no reference, not a failure; workloads with no widened form are
 * counted in one line; a spec's `reference fp64` still fails on a twin
 * that does not compile. */
static const char *prepare_warnings(ks_judge *j, ks_subject *s, ks_arena *a, int *rc) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  char *text = NULL;
  size_t len = 0;
  ctx.diag = open_memstream(&text, &len);
  assert_non_null(ctx.diag);
  *rc = ks_judge_prepare(&ctx, j, s, a);
  fclose(ctx.diag);
  const char *out = ks_arena_strdup(a, text ? text : "");
  free(text);
  ks_ctx_release(&ctx);
  return out;
}

static size_t lines(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

static void judge_prepare_capture_reference(void **state) {
  (void)state;
  ks_arena a = KS_ARENA_INIT;
  ks_judge j;
  memset(&j, 0, sizeof j);
  j.compiler = compiler;
  j.opts.compiler = KS_COMPILER_NVRTC;
  ks_workload w[2] = {{.size_name = "capture0", .captured = true},
                      {.size_name = "capture1", .captured = true}};
  ks_subject s = {.kernel = "scale",
                  .slice_source = "__global__ void scale(float *x, int n) {\n"
                                  "  int i = threadIdx.x; if (i < n) x[i] *= 0.5f; }\n",
                  .name_expression = "scale", .workloads = w, .nworkloads = 2,
                  .capture_reference = true,
                  .ref_refusal = "'__half' has no faithful fp64 twin"};
  int rc;
  const char *text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, 0);
  assert_null(s.ref.cubin);
  assert_int_equal(lines(text), 1);
  assert_non_null(strstr(text, "scale: captured inputs are judged against the original alone, "
                               "without the fp64 reference: '__half' has no faithful fp64 twin"));

  /* A twin that does not compile. */
  s.ref_refusal = NULL;
  s.ref_source = "__global__ void scale(double *x, int n) { this does not compile }\n";
  s.ref_name_expression = "scale";
  text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, 0);
  assert_null(s.ref.cubin);
  assert_int_equal(lines(text), 1);
  assert_non_null(strstr(text, "without the fp64 reference: its fp64 twin does not compile"));

  /* One that does: the reference, and one line for the workload that has
   * no widened form. */
  s.ref_source = "__global__ void scale(double *x, int n) {\n"
                 "  int i = threadIdx.x; if (i < n) x[i] *= 0.5; }\n";
  w[1].no_ref = "'p' (Params) is passed by value as raw bytes";
  text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, 0);
  assert_non_null(s.ref.cubin);
  assert_int_equal(lines(text), 1);
  assert_non_null(strstr(text, "1 of 2 captured launches are judged without the fp64 reference "
                               "('capture1': 'p' (Params)"));
  w[1].no_ref = NULL;
  text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, 0);
  assert_non_null(s.ref.cubin);
  assert_string_equal(text, "");

  /* No captured workload: nothing compiled for it, nothing said. */
  w[0].captured = w[1].captured = false;
  text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, 0);
  assert_null(s.ref.cubin);
  assert_string_equal(text, "");

  /* The spec's `reference fp64`: a twin that does not compile fails. */
  s.fp64_reference = true;
  s.ref_source = "__global__ void scale(double *x, int n) { nope }\n";
  text = prepare_warnings(&j, &s, &a, &rc);
  assert_int_equal(rc, -1);
  ks_arena_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(candidate_rules),
      cmocka_unit_test(parallel_compile_names_and_cache),
      cmocka_unit_test(codegen_options),
      cmocka_unit_test(failures_are_results),
      cmocka_unit_test(nvcc_compiles_plain_and_template_kernels),
      cmocka_unit_test(nvcc_rejection_falls_back_to_nvrtc),
      cmocka_unit_test(nvrtc_and_nvcc_machine_code),
      cmocka_unit_test(judge_prepare_chooses_the_compiler),
      cmocka_unit_test(judge_prepare_capture_reference),
      cmocka_unit_test(compiler_kind_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
