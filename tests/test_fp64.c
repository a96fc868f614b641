/* The fp64 twin of a slice (frontend/slice_fp64.c): the lexical rewrite on
 * snippets, each with its exact expected text; the refusals, each with its
 * reason; and the twins of the test apps' kernels (gelu, softmax,
 * layernorm, and every other float kernel) compiled by NVRTC for sm_90
 * with their converted name expressions (no GPU needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_compile.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_test.h"

static void expect_twin(const char *source, const char *want) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_fp64");
  ks_arena a = KS_ARENA_INIT;
  const char *got = ks_slice_to_fp64(&ctx, &a, source);
  if (!got)
    fail_msg("refused:\n%s\nwith: %s", source, ctx.error);
  if (strcmp(got, want))
    fail_msg("twin of:\n%s\nwanted:\n%s\ngot:\n%s", source, want, got);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void expect_refused(const char *source, const char *needle) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_fp64");
  ks_arena a = KS_ARENA_INIT;
  const char *got = ks_slice_to_fp64(&ctx, &a, source);
  if (got)
    fail_msg("expected a refusal for:\n%s\ngot:\n%s", source, got);
  if (!strstr(ctx.error, needle))
    fail_msg("refusal of:\n%s\nwanted '%s' in: %s", source, needle, ctx.error);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void types_and_literals(void **state) {
  expect_twin("float x = 0.5f * y;", "double x = 0.5 * y;");
  expect_twin("a = 1e-3f + 1.f + .5f + 0x1p-3f + 1.5F + 2e+5f + 6.02E23F;",
              "a = 1e-3 + 1. + .5 + 0x1p-3 + 1.5 + 2e+5 + 6.02E23;");
  /* integers, including hex digits that look like a suffix, stay */
  expect_twin("int m = 0xff | 0xFFu | 0x1f; long k = 12l; double d = 3.0;",
              "int m = 0xff | 0xFFu | 0x1f; long k = 12l; double d = 3.0;");
  expect_twin("float4 v = make_float4(0.f, 1.f, 2.f, 3.f); float2 w; float3 z;",
              "double4 v = make_double4(0., 1., 2., 3.); double2 w; double3 z;");
  expect_twin("extern __shared__ float tile[]; sizeof(float); (float)i; static_cast<float>(i)",
              "extern __shared__ double tile[]; sizeof(double); (double)i; static_cast<double>(i)");
  expect_twin("gemv_kernel<float>", "gemv_kernel<double>");
  expect_twin("reduce<float, 256>", "reduce<double, 256>");
  /* names that merely contain "float" */
  expect_twin("int floatCount, my_float; float_t t;", "int floatCount, my_float; float_t t;");
  expect_twin("#define SCALE 0.7978845608028654f  // sqrt(2 / pi)\n",
              "#define SCALE 0.7978845608028654  // sqrt(2 / pi)\n");
}

static void comments_strings_includes(void **state) {
  expect_twin("/* float 0.5f expf */ s = \"expf 1.0f\"; c = 'f'; // float x = 1.0f\nfloat y;",
              "/* float 0.5f expf */ s = \"expf 1.0f\"; c = 'f'; // float x = 1.0f\ndouble y;");
  expect_twin("#include <float.h>\n  #  include \"float_utils.h\"\nfloat x;",
              "#include <float.h>\n  #  include \"float_utils.h\"\ndouble x;");
  expect_twin("#line 8 \"/src/float.cu\"\nfloat x;", "#line 8 \"/src/float.cu\"\ndouble x;");
}

static void functions(void **state) {
  expect_twin("expf(x) + sqrtf(y) + fmaxf(a, b) + tanhf(z) + normcdff(w) + atan2f(p, q)",
              "exp(x) + sqrt(y) + fmax(a, b) + tanh(z) + normcdf(w) + atan2(p, q)");
  expect_twin("rsqrtf(v) + expm1f(v) + log1pf(v) + erfcf(v) + fmaf(a, b, c) + hypotf(a, b)",
              "rsqrt(v) + expm1(v) + log1p(v) + erfc(v) + fma(a, b, c) + hypot(a, b)");
  expect_twin("sincosf(x, &s, &c); floorf(x); ceilf(x); roundf(x); truncf(x); fmodf(x, y);",
              "sincos(x, &s, &c); floor(x); ceil(x); round(x); trunc(x); fmod(x, y);");
  expect_twin("__expf(x) + __logf(x) + __powf(x, y) + __sinf(x) + __cosf(x) + __tanf(x)",
              "exp(x) + log(x) + pow(x, y) + sin(x) + cos(x) + tan(x)");
  expect_twin("__fsqrt_rn(x) + __fmaf_rn(a, b, c) + __frsqrt_rn(x)",
              "sqrt(x) + fma(a, b, c) + rsqrt(x)");
  /* expansions take their arguments' text, converted, in parentheses */
  expect_twin("__fdividef(a + 1.0f, b)", "((a + 1.0) / (b))");
  expect_twin("y = __frcp_rn(x * 2.0f);", "y = (1.0 / (x * 2.0));");
  expect_twin("__fmul_rn(__fadd_rn(a, b), __fsub_rz(c, f(d, e)))",
              "((((a) + (b))) * (((c) - (f(d, e)))))");
  expect_twin("__fdiv_rn(expf(a), __expf(b))", "((exp(a)) / (exp(b)))");
  expect_twin("__saturatef(v)", "fmin(fmax((v), 0.0), 1.0)");
  expect_twin("__fdividef (a,\n   b)", "((a) / (b))");
  expect_twin("float4 v = __ldg(reinterpret_cast<const float4 *>(p) + i); __stcs(q + i, v);",
              "double4 v = (*(reinterpret_cast<const double4 *>(p) + i)); (*(q + i) = (v));");
  /* conversions to integers stay; integers to floats widen exactly */
  expect_twin("int k = __float2int_rn(x); float f = __int2float_rn(k);",
              "int k = __float2int_rn(x); double f = __int2double_rn(k);");
  expect_twin("CUDART_PI_F * CUDART_INF_F + CUDART_TWO_TO_23_F",
              "CUDART_PI * CUDART_INF + CUDART_TWO_TO_23_F");
  /* members named like functions are members */
  expect_twin("p.expf + q->sqrtf + r . tanhf", "p.expf + q->sqrtf + r . tanhf");
  /* a user's function of its own stays */
  expect_twin("my_expf(x) + expff(x)", "my_expf(x) + expff(x)");
}

static void refusals(void **state) {
  expect_refused("__global__ void k(__half *x) {}", "'__half'");
  expect_refused("float y = __half2float(__float2half(x));", "half-precision");
  expect_refused("__nv_bfloat16 b;", "'__nv_bfloat16'");
  expect_refused("#include <cuda_fp16.h>\n__global__ void k(half *x) {}", "'half'");
  expect_refused("#include <cuda_bf16.h>\nnv_bfloat16 b;", "bfloat16");
  expect_refused("asm volatile(\"mov.b32 %0, %1;\" : \"=r\"(a) : \"r\"(b));", "inline PTX");
  expect_refused("int bits = __float_as_int(x);", "reinterprets the bits");
  expect_refused("nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;",
                 "tensor-core");
  expect_refused("float v = tex2D<float>(t, x, y);", "texture");
  /* refused inside an expansion's arguments too */
  expect_refused("__fdividef(__half2float(h), b)", "half");
  /* without the fp16 header, `half` is a plain name */
  expect_twin("int half = n / 2; float x = half * 0.5f;",
              "int half = n / 2; double x = half * 0.5;");
}

/* ---- twins of the test apps' kernels, compiled ---------------------------- */

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static ks_scan scan;
static ks_scan_options options;
static const char *path;
static ks_compiler compiler;

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_fp64");
  ctx.verbosity = KS_LOG_ERROR;
  path = ks_arena_strdup(&arena, ks_testdata("apps"));
  options = (ks_scan_options){.paths = &path, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &options, &scan) || ks_compiler_init(&ctx, &compiler, "sm_90", NULL)) {
    fprintf(stderr, "setup: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  ks_scan_release(&scan);
  ks_compiler_release(&compiler);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

/* The twin of kernel `name`'s slice, compiled; its source. NULL when it
 * was refused (the reason in ctx.error). */
static const char *twin(const char *name) {
  const ks_kernel *k = NULL;
  ks_slice slice;
  if (ks_scan_lookup(&ctx, &scan, name, &k) ||
      ks_slice_kernel(&ctx, &options, &scan, k, NULL, &arena, &slice))
    fail_msg("%s: %s", name, ctx.error);
  const char *source = ks_slice_to_fp64(&ctx, &arena, slice.source);
  if (!source)
    return NULL;
  const char *expr = ks_slice_to_fp64(&ctx, &arena, slice.name_expressions.items[0]);
  assert_non_null(expr);
  ks_compile_unit unit = {.name = ks_arena_printf(&arena, "%s.fp64.cu", name),
                          .source = source,
                          .name_expressions = &expr,
                          .nnames = 1};
  ks_compile_result r;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &arena, &r), 0);
  if (r.status != KS_COMPILE_OK)
    fail_msg("the twin of %s does not compile: %s\n%s\n---- the twin:\n%s", name, r.reason, r.log,
             source);
  assert_non_null(r.lowered[0]);
  return source;
}

static void gelu(void **state) {
  const char *s = twin("gelu_forward_kernel");
  assert_non_null(s);
  assert_non_null(strstr(s, "#define GELU_SCALING_FACTOR 0.7978845608028654\n"));
  assert_non_null(strstr(s, "double x = inp[i];"));
  assert_non_null(strstr(s, "double cube = 0.044715 * x * x * x;"));
  assert_non_null(strstr(s, "0.5 * x * (1.0 + tanh(GELU_SCALING_FACTOR * (x + cube)))"));
  assert_null(strstr(s, "float"));
}

static void softmax(void **state) {
  const char *s = twin("softmax_rows_kernel");
  assert_non_null(s);
  assert_non_null(strstr(s, "max_val = fmax(max_val, x[c]);"));
  assert_non_null(strstr(s, "sum += exp(x[c] - max_val);"));
  assert_non_null(strstr(s, "double inv_sum = 1.0 / sum;"));
}

static void layernorm(void **state) {
  const char *s = twin("layernorm_forward_kernel");
  assert_non_null(s);
  assert_non_null(strstr(s, "double* __restrict__ out"));
  assert_non_null(strstr(s, "double s = 1.0 / sqrt(var + eps);"));
}

/* A vectorized kernel with the intrinsics the rewrite expands: its twin
 * compiles (CUDA has no __ldg of a double4, for one). */
static void vectorized(void **state) {
  static const char source[] =
      "#include <math_constants.h>\n"
      "__device__ __forceinline__ float act(float x) {\n"
      "  return __saturatef(__fdividef(x, 3.0f)) + __frcp_rn(x) * CUDART_PI_F;\n"
      "}\n"
      "__global__ void vec4(float *__restrict__ out, const float *__restrict__ in, float s,\n"
      "                     int n) {\n"
      "  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;\n"
      "  if (i + 3 < n) {\n"
      "    float4 v = __ldg(reinterpret_cast<const float4 *>(in + i));\n"
      "    float2 w = __ldcs(reinterpret_cast<const float2 *>(in + i));\n"
      "    float4 r = make_float4(act(v.x) + w.y, __expf(v.y) * s, rsqrtf(fabsf(v.z) + 1e-6f),\n"
      "                           __fmaf_rn(v.w, s, __int2float_rn(i)));\n"
      "    __stcs(reinterpret_cast<float4 *>(out + i), r);\n"
      "  }\n"
      "}\n";
  const char *twin_source = ks_slice_to_fp64(&ctx, &arena, source);
  assert_non_null(twin_source);
  const char *expr = "vec4";
  ks_compile_unit unit = {.name = "vec4.fp64.cu", .source = twin_source,
                          .name_expressions = &expr, .nnames = 1};
  ks_compile_result r;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &arena, &r), 0);
  if (r.status != KS_COMPILE_OK)
    fail_msg("the twin does not compile: %s\n%s\n---- the twin:\n%s", r.reason, r.log,
             twin_source);
}

/* Every kernel of the apps: a twin that compiles (integers only: the same
 * text), or a refusal with its reason. */
static void every_app(void **state) {
  size_t twins = 0;
  for (size_t i = 0; i < scan.kernels.len; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    if (twin(k->signature))
      twins++;
    else
      printf("  %s: %s\n", k->qualified_name, ctx.error);
  }
  assert_int_equal(twins, scan.kernels.len);
}

int main(void) {
  const struct CMUnitTest text[] = {
      cmocka_unit_test(types_and_literals),
      cmocka_unit_test(comments_strings_includes),
      cmocka_unit_test(functions),
      cmocka_unit_test(refusals),
  };
  const struct CMUnitTest apps[] = {
      cmocka_unit_test(gelu),
      cmocka_unit_test(softmax),
      cmocka_unit_test(layernorm),
      cmocka_unit_test(vectorized),
      cmocka_unit_test(every_app),
  };
  int failed = cmocka_run_group_tests_name("fp64 twin: text", text, NULL, NULL);
  return failed + cmocka_run_group_tests_name("fp64 twin: apps", apps, setup, teardown);
}
