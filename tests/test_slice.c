/* The slicer on every kernel of the test corpus: each slice compiles with
 * NVRTC for sm_90 (no GPU needed) and its name expressions lower; what
 * cannot be sliced fails with its one-line reason; no host code leaks in;
 * macros, namespaces, includes and instances come along.
 *
 * testdata/apps, testdata/frontend and testdata/slice are scanned once each;
 * every kernel is sliced and compiled once, and the tests below read those
 * results. The test links the backend for NVRTC; the frontend never does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_nvrtc.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_test.h"
#include "ks_toolkit.h"

typedef struct sliced {
  const ks_kernel *kernel;
  const ks_scan_options *opts;
  const ks_scan *scan;
  int rc;            /* of ks_slice_kernel */
  const char *error; /* its message when it failed */
  ks_slice slice;
  int compiled;      /* of ks_nvrtc_compile_named */
  const char *compile_error;
  const char **lowered; /* one per name expression */
} sliced;

enum { CORPORA = 3 };

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static ks_scan scans[CORPORA];
static ks_scan_options options[CORPORA];
static const char *paths[CORPORA];
static const char *extra[] = {"-DFEATURE_SCALE=2.0f"};
static sliced *results;
static size_t nresults;
static char include_opt[4200], cccl_opt[4200];

/* NVRTC as the judge will run it: sm_90, C++17, the toolkit's headers. */
static void compile(sliced *r) {
  const char *opts[8] = {"-arch=sm_90", "-std=c++17", include_opt, cccl_opt};
  size_t n = 4;
  for (size_t i = 0; i < r->slice.options.len && n < 8; i++)
    opts[n++] = r->slice.options.items[i];
  ks_nvrtc_unit unit = {.source = r->slice.source,
                        .name = r->kernel->name,
                        .options = opts,
                        .noptions = n,
                        .name_expressions = r->slice.name_expressions.items,
                        .nnames = r->slice.name_expressions.len};
  char **lowered = calloc(unit.nnames + 1, sizeof *lowered);
  ks_buf cubin = KS_BUF_INIT, log = KS_BUF_INIT;
  r->compiled = ks_nvrtc_compile_named(&ctx, &unit, &cubin, &log, lowered);
  if (r->compiled)
    r->compile_error = ks_arena_printf(&arena, "%s\n%s", ctx.error, log.data);
  r->lowered = ks_arena_alloc(&arena, (unit.nnames + 1) * sizeof *r->lowered);
  for (size_t i = 0; i < unit.nnames; i++) {
    r->lowered[i] = lowered[i] ? ks_arena_strdup(&arena, lowered[i]) : NULL;
    free(lowered[i]);
  }
  free(lowered);
  ks_buf_release(&cubin);
  ks_buf_release(&log);
}

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_slice");
  ctx.verbosity = KS_LOG_ERROR;
  ks_toolkit tk;
  if (ks_toolkit_find(&ctx, &tk)) {
    fprintf(stderr, "%s\n", ctx.error);
    return -1;
  }
  snprintf(include_opt, sizeof include_opt, "-I%s", tk.include);
  snprintf(cccl_opt, sizeof cccl_opt, "-I%s/cccl", tk.include);
  const char *dirs[CORPORA] = {"apps", "frontend", "slice"};
  size_t total = 0;
  for (int c = 0; c < CORPORA; c++) {
    paths[c] = ks_arena_strdup(&arena, ks_testdata(dirs[c]));
    options[c] = (ks_scan_options){.paths = &paths[c], .npaths = 1, .no_compdb = true};
    if (c == 2) {
      options[c].extra_args = extra;
      options[c].nextra = 1;
    }
    if (ks_scan_run(&ctx, &options[c], &scans[c])) {
      fprintf(stderr, "scan of %s failed: %s\n", dirs[c], ctx.error);
      return -1;
    }
    total += scans[c].kernels.len;
  }
  results = calloc(total, sizeof *results);
  for (int c = 0; c < CORPORA; c++)
    for (size_t i = 0; i < scans[c].kernels.len; i++) {
      sliced *r = &results[nresults++];
      r->kernel = &scans[c].kernels.items[i];
      r->opts = &options[c];
      r->scan = &scans[c];
      r->rc = ks_slice_kernel(&ctx, r->opts, r->scan, r->kernel, NULL, &arena, &r->slice);
      if (r->rc)
        r->error = ks_arena_strdup(&arena, ctx.error);
      else
        compile(r);
    }
  return 0;
}

static int teardown(void **state) {
  for (int c = 0; c < CORPORA; c++)
    ks_scan_release(&scans[c]);
  free(results);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

static const sliced *find(const char *signature) {
  for (size_t i = 0; i < nresults; i++)
    if (!strcmp(results[i].kernel->signature, signature))
      return &results[i];
  fail_msg("no kernel %s", signature);
  return NULL;
}

static const sliced *ok(const char *signature) {
  const sliced *r = find(signature);
  if (r->rc)
    fail_msg("%s did not slice: %s", signature, r->error);
  if (r->compiled)
    fail_msg("%s: NVRTC: %s\n---- the slice:\n%s", signature, r->compile_error, r->slice.source);
  return r;
}

static bool has(const ks_strings *list, const char *s) {
  for (size_t i = 0; i < list->len; i++)
    if (!strcmp(list->items[i], s))
      return true;
  return false;
}

static bool in_corpus(const sliced *r, int c) { return r->scan == &scans[c]; }

/* Kernels that cannot be sliced, with the reason each must give. */
static const struct {
  const char *signature, *reason;
} unsliceable[] = {
    {"calls_host(float *)", "it calls host function 'host_helper' (unsliceable.cu:5)"},
    {"calls_extern(float *)", "it calls device function 'defined_elsewhere', whose definition "
                              "is not in the scanned files (unsliceable.cu:9)"},
    {"uses_host_variable(float *)", "it uses host variable 'host_scale' (unsliceable.cu:13)"},
    {"uses_std_min(float *)", "it uses 'std::min' from <algorithm>, which NVRTC does not provide"},
    {"reads_texture_reference(float *)",
     "it reads the texture reference 'weights_tex' (declared at unsliceable.cu:21), which CUDA 12 "
     "removed: NVRTC cannot compile it, so the kernel stays as written (a cudaTextureObject_t "
     "parameter read with tex1Dfetch<T> would make it one kernelsmith-cc can optimize)"},
};

static const char *expected_failure(const char *signature) {
  for (size_t i = 0; i < sizeof unsliceable / sizeof *unsliceable; i++)
    if (!strcmp(unsliceable[i].signature, signature))
      return unsliceable[i].reason;
  return NULL;
}

/* Every kernel: sliced and compiled, or refused for its known reason. */
static void every_kernel_compiles_or_says_why(void **state) {
  size_t per_corpus[CORPORA] = {0};
  for (size_t i = 0; i < nresults; i++) {
    const sliced *r = &results[i];
    const char *reason = expected_failure(r->kernel->signature);
    if (reason) {
      if (!r->rc)
        fail_msg("%s should not slice", r->kernel->signature);
      assert_string_equal(r->error, reason);
      assert_null(strchr(r->error, '\n'));
      continue;
    }
    ok(r->kernel->signature);
    for (size_t k = 0; k < r->slice.name_expressions.len; k++)
      if (!r->lowered[k] || !*r->lowered[k])
        fail_msg("%s: no lowered name for %s", r->kernel->signature,
                 r->slice.name_expressions.items[k]);
    for (int c = 0; c < CORPORA; c++)
      per_corpus[c] += in_corpus(r, c);
  }
  assert_int_equal(per_corpus[0], 14); /* the test apps */
  assert_int_equal(per_corpus[1], 19); /* every kernel of testdata/frontend */
}

static void lowered(const char *signature, const char *expression, const char *mangled) {
  const sliced *r = ok(signature);
  for (size_t i = 0; i < r->slice.name_expressions.len; i++)
    if (!strcmp(r->slice.name_expressions.items[i], expression)) {
      assert_string_equal(r->lowered[i], mangled);
      return;
    }
  fail_msg("%s: no name expression %s", signature, expression);
}

static void template_instances_lower(void **state) {
  lowered("reduce_sum_kernel(const float *, float *, int)", "reduce_sum_kernel<256>",
          "_Z17reduce_sum_kernelILj256EEvPKfPfi");
  lowered("gemv_kernel(const T *, const T *, T *, int, int)", "gemv_kernel<float>",
          "_Z11gemv_kernelIfEvPKT_S2_PS0_ii");
  const char *scale = "scale(T *__restrict, const T *, T, int)";
  lowered(scale, "scale<float, 128>", "_Z5scaleIfLi128EEvPT_PKS0_S0_i");
  lowered(scale, "scale<double, 512>", "_Z5scaleIdLi512EEvPT_PKS0_S0_i");
  lowered(scale, "scale<float, 256>", "_Z5scaleIfLi256EEvPT_PKS0_S0_i");
  lowered("add_unrolled(float *, int)", "add_unrolled<4>", "_Z12add_unrolledILi4EEvPfi");
  lowered("row_sum_bf16(const __nv_bfloat16 *, float *, int)", "row_sum_bf16<256>",
          "_Z12row_sum_bf16ILi256EEvPK13__nv_bfloat16Pfi");
  lowered("c_linkage_copy(float *, const float *, int)", "c_linkage_copy", "c_linkage_copy");
  /* Deduced inside a host template: found in the unit, not in the text. */
  lowered("deduced_kernel(T *, int)", "deduced_kernel<float>", "_Z14deduced_kernelIfEvPT_i");
  lowered("deduced_kernel(T *, int)", "deduced_kernel<double>", "_Z14deduced_kernelIdEvPT_i");
  /* A functor type as the argument: its declaration is in the unit. */
  const sliced *apply = ok("apply_kernel(float *, int, Op)");
  assert_true(has(&apply->slice.name_expressions, "apply_kernel<AddOne>"));
  assert_non_null(strstr(apply->slice.source, "struct AddOne"));
}

static void no_host_code(void **state) {
  const sliced *r = ok("saxpy_kernel(int, float, float *, float *)");
  const char *src = r->slice.source;
  assert_null(strstr(src, "main("));
  assert_null(strstr(src, "launch_saxpy"));
  assert_null(strstr(src, "#include <cstdio>"));
  assert_null(strstr(src, "app::"));
  assert_null(strstr(src, "CUDA_CHECK"));
  assert_int_equal(r->slice.dependencies.len, 0);
  assert_int_equal(r->slice.includes.len, 0);
  /* Only the kernel's own macro comes with it. */
  const sliced *gelu = ok("gelu_forward_kernel(float *__restrict, const float *__restrict, int)");
  assert_non_null(strstr(gelu->slice.source, "#define GELU_SCALING_FACTOR"));
  assert_null(strstr(gelu->slice.source, "BLOCK_SIZE"));
}

static void macro_generated_kernels(void **state) {
  const sliced *sq = ok("square(float *, int)");
  assert_non_null(strstr(sq->slice.source, "#define DEFINE_UNARY(name, expr)"));
  assert_non_null(strstr(sq->slice.source, "DEFINE_UNARY(square, x[i] * x[i])"));
  assert_null(strstr(sq->slice.source, "negate"));
  assert_null(strstr(sq->slice.source, "LAUNCH_UNARY"));
  assert_true(has(&sq->slice.dependencies, "DEFINE_UNARY"));
}

static void header_kernels_keep_namespaces(void **state) {
  const sliced *r = ok("ks_test::detail::relu6(float *, int)");
  const char *src = r->slice.source;
  const char *ns = strstr(src, "namespace ks_test {\nnamespace detail {\n");
  assert_non_null(ns);
  assert_true(strstr(src, "clampf(float v") > ns);
  assert_true(strstr(src, "relu_clamped(float v)") > strstr(src, "clampf(float v"));
  assert_true(strstr(src, "__global__ void relu6") > strstr(src, "relu_clamped(float v)"));
  assert_non_null(strstr(src, "} // namespace detail\n} // namespace ks_test\n"));
  assert_null(strstr(src, "c_linkage_copy"));
  assert_true(has(&r->slice.dependencies, "ks_test::detail::clampf"));
  assert_true(has(&r->slice.name_expressions, "ks_test::detail::relu6"));
  assert_non_null(strstr(r->slice.file, "headers.cu")); /* parsed where it is used */
  const sliced *c = ok("c_linkage_copy(float *, const float *, int)");
  assert_non_null(strstr(c->slice.source, "extern \"C\" {\n"));
}

static void toolkit_headers_are_included(void **state) {
  const sliced *bf = ok("row_sum_bf16(const __nv_bfloat16 *, float *, int)");
  assert_true(has(&bf->slice.includes, "cuda_bf16.h"));
  assert_true(has(&bf->slice.includes, "cub/block/block_reduce.cuh"));
  assert_false(has(&bf->slice.includes, "cooperative_groups.h"));
  const sliced *wm = ok("warp_max(const float *, float *, int)");
  assert_true(has(&wm->slice.includes, "cooperative_groups.h"));
  assert_true(has(&wm->slice.includes, "cooperative_groups/reduce.h"));
  assert_true(has(&wm->slice.includes, "cuda/std/cmath")); /* INFINITY */
  assert_non_null(strstr(wm->slice.source, "namespace cg = cooperative_groups;"));
  const sliced *sm = ok("softmax_rows_kernel(float *, const float *, int, int)");
  assert_true(has(&sm->slice.includes, "cuda/std/cmath"));
  assert_null(strstr(sm->slice.source, "cuda_runtime.h"));
}

/* libc's math constants are plain numbers NVRTC lacks: defined in the
 * slice, not mistaken for the toolkit's (and so left out). */
static void libc_constants_are_defined(void **state) {
  (void)state;
  const sliced *g = ok("gelu_scaled(float *, int)");
  assert_non_null(strstr(g->slice.source, "#define M_PI 3.14159265358979323846"));
}

/* What host code gives device code: a libc typedef is written out, a
 * __constant__ variable template copied with its template header, and
 * std::numeric_limits is libcu++'s (every kernel here also compiles,
 * above). */
static void host_idioms_are_carried(void **state) {
  (void)state;
  const char *src = ok("taps_row(float *, const float *, uint)")->slice.source;
  assert_non_null(strstr(src, "typedef unsigned int uint;"));
  assert_non_null(strstr(src, "template <class V>\n__constant__ V taps_of[TAPS];"));
  src = ok("block_min(float *, const float *, int)")->slice.source;
  assert_non_null(strstr(src, "#include <cuda/std/limits>"));
  assert_non_null(strstr(src, "using ::cuda::std::numeric_limits;"));
  /* Deduced through a template host function: the scan follows the
   * argument to the host function's parameter (E is fill_all's E, which is
   * float where fill_floats calls it), the slice has the same instance. */
  const sliced *f = ok("fill_as(E *, int)");
  assert_int_equal(f->kernel->instantiations.len, 1);
  assert_string_equal(f->kernel->instantiations.items[0].items[0].value, "float");
  assert_true(has(&f->slice.name_expressions, "fill_as<float>"));
}

/* Instances only host code names (testdata/slice/template_launchers.cu). */
static void template_instances_from_host_code(void **state) {
  (void)state;
  /* Host code that sizes its grid with min and max parses (nvcc has host
   * overloads of both); before, each was an error in the file. */
  const ks_scanned_file *tl = NULL;
  for (size_t i = 0; i < scans[2].files.len; i++)
    if (strstr(scans[2].files.items[i].path, "template_launchers.cu"))
      tl = &scans[2].files.items[i];
  assert_non_null(tl);
  assert_int_equal(tl->status, KS_FILE_OK);
  /* A bool argument is true or false, not libclang's one-bit -1. */
  const sliced *t = ok("twice_blocked(float *, int)");
  assert_int_equal(t->kernel->instantiations.len, 2);
  assert_string_equal(t->kernel->instantiations.items[0].items[0].value, "256");
  assert_string_equal(t->kernel->instantiations.items[0].items[1].value, "true");
  assert_string_equal(t->kernel->instantiations.items[1].items[1].value, "false");
  assert_true(has(&t->slice.name_expressions, "twice_blocked<256, true>"));
  /* An explicit instantiation of the host template instantiates the
   * kernel it launches, its type deduced from the call's arguments. */
  const sliced *a = ok("add_const(V *, V, int)");
  assert_int_equal(a->kernel->instantiations.len, 1);
  assert_string_equal(a->kernel->instantiations.items[0].items[0].param, "V");
  assert_string_equal(a->kernel->instantiations.items[0].items[0].value, "double");
  assert_true(has(&a->slice.name_expressions, "add_const<double>"));
  /* A function passed as a template argument through a host template: the
   * argument as the call writes it, the slice compiles with it. */
  const sliced *f = ok("apply_fn(float *, int)");
  assert_int_equal(f->kernel->instantiations.len, 1);
  assert_string_equal(f->kernel->instantiations.items[0].items[0].value, "negate");
  assert_true(has(&f->slice.name_expressions, "apply_fn<negate>"));
}

static void dynamic_parallelism_needs_rdc(void **state) {
  const sliced *p = ok("parent(int *, int)");
  assert_true(has(&p->slice.options, "-rdc=true"));
  assert_non_null(strstr(p->slice.source, "__global__ void child("));
  const sliced *c = ok("child(int *, int)");
  assert_int_equal(c->slice.options.len, 0);
  const sliced *m = ok("device_malloc_kernel(float **, size_t)");
  assert_true(has(&m->slice.options, "-rdc=true"));
}

/* The compile command's code generation travels with the slice, in
 * NVRTC's spelling, so that the judge compiles as the user's build does. */
static void codegen_options_from_the_compile_command(void **state) {
  const char *dir = ks_arena_strdup(&arena, ks_testdata("frontend/rdc"));
  ks_scan_options o = {.paths = &dir, .npaths = 1};
  ks_scan sc;
  assert_int_equal(ks_scan_run(&ctx, &o, &sc), 0);
  const ks_kernel *k = NULL;
  assert_int_equal(ks_scan_lookup(&ctx, &sc, "parent", &k), 0);
  ks_slice sl;
  assert_int_equal(ks_slice_kernel(&ctx, &o, &sc, k, NULL, &arena, &sl), 0);
  assert_int_equal(sl.codegen.len, 3);
  assert_string_equal(sl.codegen.items[0], "--use_fast_math");
  assert_string_equal(sl.codegen.items[1], "--ftz=false");
  assert_string_equal(sl.codegen.items[2], "--maxrregcount=64");
  ks_scan_release(&sc);
}

static void what_a_slice_carries(void **state) {
  const sliced *r = ok("features_kernel(float *, const Point *, int, Mode)");
  const char *src = r->slice.source;
  /* The forward declaration first, the definition after the kernel. */
  const char *decl = strstr(src, "__device__ float defined_later(float x);");
  const char *kernel = strstr(src, "__global__ void features_kernel");
  assert_non_null(decl);
  assert_true(kernel > decl);
  assert_true(strstr(src, "__device__ float defined_later(float x) {") > kernel);
  /* constexpr host helpers become __host__ __device__. */
  assert_non_null(strstr(src, "__host__ __device__ constexpr int ceil_div"));
  /* Host-only members leave; device ones and = default stay. */
  assert_null(strstr(src, "print()"));
  assert_null(strstr(src, "explicit Accum(float start)"));
  assert_non_null(strstr(src, "Accum() = default;"));
  assert_non_null(strstr(src, "__device__ void add(float v)"));
  /* The template and the specialization the kernel uses. */
  assert_non_null(strstr(src, "struct Width {"));
  assert_non_null(strstr(src, "struct Width<double> {"));
  /* The member defined outside its class template, in its namespace. */
  assert_non_null(strstr(src, "__device__ T Vec2<T>::dot(const Vec2 &o) const {"));
  assert_non_null(strstr(src, "namespace feat {"));
  assert_non_null(strstr(src, "using namespace feat;"));
  assert_non_null(strstr(src, "__constant__ float coefficients[4]"));
  /* ... and named as the device state a capture does not hold; the
   * types and functions are not. */
  assert_true(has(&r->slice.variables, "coefficients"));
  assert_int_equal(r->slice.variables.len, 1);
  assert_non_null(strstr(src, "enum class Mode"));
  assert_non_null(strstr(src, "namespace {\n"));
  assert_non_null(strstr(src, "typedef struct {\n  float x, y;\n} Point;"));
  /* Macros, the ones they use, and the command line's. */
  assert_non_null(strstr(src, "#define FEAT_SAFE_DIV(a, b)"));
  assert_non_null(strstr(src, "#define FEAT_EPS 1e-6f"));
  assert_non_null(strstr(src, "#define HALF_TILE (TILE / 2)"));
  assert_non_null(strstr(src, "#define TILE 32"));
  assert_non_null(strstr(src, "#define FEATURE_SCALE 2.0f"));
  assert_null(strstr(src, "#include <cstdio>"));
  assert_null(strstr(src, "run_features"));
  /* A conditional cut by a declaration's extent comes whole; device code
   * only the device side compiles (__CUDA_ARCH__ >= 800) is followed. */
  assert_non_null(strstr(src, "#ifdef __CUDACC__\n__host__ __device__\n#endif\ninline float sign_of"));
  assert_non_null(strstr(src, "__device__ float ampere_scale(float v)"));
  /* #line points at the user's files. */
  assert_non_null(strstr(src, "features.cuh\"\ntemplate <typename T>\nstruct Vec2"));
}

static void lookup_by_name_and_signature(void **state) {
  const ks_kernel *k = NULL;
  const ks_scan *fe = &scans[1];
  assert_int_equal(ks_scan_lookup(&ctx, fe, "fill", &k), -1);
  assert_non_null(strstr(ctx.error, "fill(float *, float, int), fill(int *, int, int), "
                                    "fill(double *, int)"));
  assert_null(strchr(ctx.error, '\n'));
  assert_int_equal(ks_scan_lookup(&ctx, fe, "fill(int*, int, int)", &k), 0);
  assert_string_equal(k->signature, "fill(int *, int, int)");
  assert_int_equal(ks_scan_lookup(&ctx, fe, "detail::relu6", &k), 0);
  assert_string_equal(k->qualified_name, "ks_test::detail::relu6");
  assert_int_equal(ks_scan_lookup(&ctx, fe, "relu6", &k), 0);
  assert_int_equal(ks_scan_lookup(&ctx, fe, "relu", &k), -1);
  assert_non_null(strstr(ctx.error, "did you mean: ks_test::detail::relu6"));
  assert_int_equal(ks_scan_lookup(&ctx, fe, "nothing_like_it", &k), -1);
  assert_non_null(strstr(ctx.error, "kernels: survives"));
}

static void instances_given_by_hand(void **state) {
  const sliced *r = find("scale(T *__restrict, const T *, T, int)");
  ks_slice s;
  assert_int_equal(ks_slice_kernel(&ctx, r->opts, r->scan, r->kernel, "<double, 64>", &arena, &s), 0);
  assert_int_equal(s.name_expressions.len, 1);
  assert_string_equal(s.name_expressions.items[0], "scale<double, 64>");
  sliced by_hand = {.kernel = r->kernel, .slice = s};
  compile(&by_hand);
  if (by_hand.compiled)
    fail_msg("%s", by_hand.compile_error);
  assert_string_equal(by_hand.lowered[0], "_Z5scaleIdLi64EEvPT_PKS0_S0_i");

  /* Given as the launch sites give it, the instance's argument type still
   * joins the closure: the slice includes the header that declares it. */
  const sliced *sq = find("sum_squares(float *, const T *, int)");
  assert_int_equal(ks_slice_kernel(&ctx, sq->opts, sq->scan, sq->kernel, "<__nv_bfloat16>", &arena, &s),
                   0);
  assert_non_null(strstr(s.source, "#include <cuda_bf16.h>"));
  sliced bf = {.kernel = sq->kernel, .slice = s};
  compile(&bf);
  if (bf.compiled)
    fail_msg("%s", bf.compile_error);

  const sliced *plain = find("saxpy_kernel(int, float, float *, float *)");
  assert_int_equal(ks_slice_kernel(&ctx, plain->opts, plain->scan, plain->kernel, "float",
                                   &arena, &s),
                   -1);
  assert_non_null(strstr(ctx.error, "is not a template"));
}

/* Fault site slice_parse: the re-parse fails, and says which file. */
static void a_failed_parse_is_an_error(void **state) {
  const sliced *r = find("saxpy_kernel(int, float, float *, float *)");
  ks_slice s;
  assert_int_equal(ks_ctx_set_faults(&ctx, "slice_parse:1"), 0);
  int rc = ks_slice_kernel(&ctx, r->opts, r->scan, r->kernel, NULL, &arena, &s);
  ks_ctx_set_faults(&ctx, "");
  assert_int_equal(rc, -1);
  assert_non_null(strstr(ctx.error, "saxpy.cu: libclang could not parse this file"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_kernel_compiles_or_says_why),
      cmocka_unit_test(template_instances_lower),
      cmocka_unit_test(no_host_code),
      cmocka_unit_test(macro_generated_kernels),
      cmocka_unit_test(header_kernels_keep_namespaces),
      cmocka_unit_test(toolkit_headers_are_included),
      cmocka_unit_test(libc_constants_are_defined),
      cmocka_unit_test(dynamic_parallelism_needs_rdc),
      cmocka_unit_test(codegen_options_from_the_compile_command),
      cmocka_unit_test(host_idioms_are_carried),
      cmocka_unit_test(template_instances_from_host_code),
      cmocka_unit_test(what_a_slice_carries),
      cmocka_unit_test(lookup_by_name_and_signature),
      cmocka_unit_test(instances_given_by_hand),
      cmocka_unit_test(a_failed_parse_is_an_error),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
