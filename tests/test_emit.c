/* The launch-site emitter (backend/emit_site.c): guard-language expressions
 * in C++ over a site's own expressions (launch variables, scalar arguments,
 * buffer lengths through the spec's size variables, aligned and disjoint on
 * the arguments), the refusals (side effects evaluated twice, names the
 * site cannot supply, other launch forms), and the whole dispatch
 * expression compiled by nvcc against runtime/kernelsmith_dispatch.h where
 * nvcc is installed. Sites and kernels are built by hand: the scan that
 * makes them has tests of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_emit.h"

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static ks_kernel saxpy;
static ks_spec spec;
static ks_launch site;

static void add_param(ks_kernel *k, const char *name, const char *type, ks_param_kind kind) {
  *ks_array_push(&arena, &k->params) = (ks_param){.name = name, .type = type, .kind = kind,
                                                  .pointee = kind == KS_PARAM_POINTER ? "float" : NULL};
}

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_emit");
  saxpy = (ks_kernel){.name = "saxpy_kernel"};
  add_param(&saxpy, "x", "const float *", KS_PARAM_POINTER);
  add_param(&saxpy, "y", "float *", KS_PARAM_POINTER);
  add_param(&saxpy, "a", "float", KS_PARAM_SCALAR);
  add_param(&saxpy, "count", "int", KS_PARAM_SCALAR);
  /* the spec calls the length n and binds the parameter count to it */
  spec = (ks_spec){.kernel = "saxpy_kernel"};
  *ks_array_push(&arena, &spec.buffers) = (ks_spec_buffer){.param = "x", .length = "n"};
  *ks_array_push(&arena, &spec.buffers) =
      (ks_spec_buffer){.param = "y", .length = "n", .role = KS_ROLE_INOUT, .atol = -1, .rtol = -1};
  *ks_array_push(&arena, &spec.scalars) = (ks_binding){.name = "count", .value = "n"};
  site = (ks_launch){.kind = KS_LAUNCH_CHEVRON, .callee = "saxpy_kernel",
                     .grid = "(len + 255) / 256", .block = "256"};
  const char *args[] = {"d_x", "d_y", "2.0f", "len"};
  for (int i = 0; i < 4; i++)
    *ks_array_push(&arena, &site.args) = args[i];
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

static const char *expr(const char *text) {
  const char *out = NULL;
  if (ks_emit_expr(&ctx, &arena, &site, &saxpy, &spec, text, &out))
    fail_msg("%s: %s", text, ctx.error);
  return out;
}

static void expressions(void **state) {
  (void)state;
  assert_string_equal(expr("grid_x * block_x >= count"),
                      "dim3((len + 255) / 256).x * dim3(256).x >= (len)");
  assert_string_equal(expr("ceil_div(grid_x, 4)"), "(ksrt::ceil_div)(dim3((len + 255) / 256).x, 4)");
  assert_string_equal(expr("aligned(y, 16)"), "ksrt::aligned((d_y), 16)");
  assert_string_equal(expr("ks_aligned(x, 4 * sizeof(float))"),
                      "ksrt::aligned((d_x), 4 * sizeof(float))");
  /* len_x is the spec's n, which the argument of count carries */
  assert_string_equal(expr("len_x % 4 == 0"), "(((long long)(len))) % 4 == 0");
  assert_string_equal(expr("disjoint(x, y)"),
                      "ksrt::disjoint((d_x), ksrt::bytes_of((((long long)(len))), sizeof(*(d_x))), "
                      "(d_y), ksrt::bytes_of((((long long)(len))), sizeof(*(d_y))))");
  assert_string_equal(expr("dim3(min(grid_x, 132 * 8), grid_y, grid_z)"),
                      "dim3((ksrt::min)(dim3((len + 255) / 256).x, 132 * 8), "
                      "dim3((len + 255) / 256).y, dim3((len + 255) / 256).z)");
  assert_string_equal(expr("smem + 1024"), "0 + 1024");
  assert_string_equal(expr("a > 1.5e-3f"), "(2.0f) > 1.5e-3f");
}

static void refusals(void **state) {
  (void)state;
  const char *out;
  assert_int_equal(ks_emit_expr(&ctx, &arena, &site, &saxpy, &spec, "rows > 0", &out), -1);
  assert_non_null(strstr(ctx.error, "'rows' is not a launch variable"));
  assert_int_equal(ks_emit_expr(&ctx, &arena, &site, &saxpy, &spec, "aligned(a, 16)", &out), -1);
  assert_non_null(strstr(ctx.error, "not a pointer parameter"));
  assert_int_equal(ks_emit_expr(&ctx, &arena, &site, &saxpy, &spec, "len_q > 0", &out), -1);
  assert_non_null(strstr(ctx.error, "the length of buffer 'q' is not known"));
  assert_null(strchr(ctx.error, '\n'));

  /* an argument the guard reads has a side effect: the site is left alone */
  ks_launch s = site;
  s.args = (ks_strings){0};
  const char *args[] = {"d_x", "d_y", "2.0f", "len++"};
  for (int i = 0; i < 4; i++)
    *ks_array_push(&arena, &s.args) = args[i];
  const char *req[] = {"grid_x * block_x >= count"};
  ks_variant v = {.requires = {(const char **)req, 1, 1}};
  int archs[] = {90};
  ks_emit_variant ev = {.variant_name = "saxpy_kernel_ks", .v = &v, .archs = archs, .narchs = 1,
                        .where = "saxpy.cu:40"};
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &saxpy, &spec, &ev, &out), -1);
  assert_non_null(strstr(ctx.error, "'len++' has side effects"));
  /* an argument nobody reads may have them */
  s.args.items[1] = "ptrs[i++]";
  s.args.items[3] = "len";
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &saxpy, &spec, &ev, &out), 0);
  /* other launch forms */
  s.kind = KS_LAUNCH_RUNTIME_API;
  s.api = "cudaLaunchKernel";
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &saxpy, &spec, &ev, &out), -1);
  s = site;
  s.device_side = true;
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &saxpy, &spec, &ev, &out), -1);
}

/* `source` compiles with nvcc for sm_90, host and device, the runtime
 * header on the include path; skipped where nvcc is not installed. */
static void nvcc_compiles(const char *source) {
  const char *nvcc = "/usr/local/cuda/bin/nvcc";
  if (access(nvcc, X_OK) != 0) {
    printf("nvcc not installed: the compile check is skipped\n");
    return;
  }
  char dir[] = "/tmp/ks-test-emit-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256], cmd[1024];
  snprintf(path, sizeof path, "%s/site.cu", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "%s -std=c++17 -arch=sm_90 -I%s/runtime -c %s -o %s/site.o 2>&1", nvcc,
           KS_SOURCE_DIR, path, dir);
  int rc = system(cmd);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    printf("could not remove %s\n", dir);
  assert_int_equal(rc, 0);
}

/* A template kernel's variant verified on one instance runs only there:
 * the site's arguments are compared with it, and a site whose arguments are
 * deduced is left alone. */
static void template_instance(void **state) {
  (void)state;
  ks_kernel tk = saxpy;
  tk.tparams = (ks_tparams){0};
  *ks_array_push(&arena, &tk.tparams) = (ks_tparam){.kind = KS_TPARAM_TYPE, .name = "T"};
  *ks_array_push(&arena, &tk.tparams) = (ks_tparam){.kind = KS_TPARAM_VALUE, .name = "B"};
  ks_spec ts = spec;
  ts.instance = "float, 256u";
  ks_launch s = site;
  s.callee = "saxpy_kernel<TData, kBlock>";
  *ks_array_push(&arena, &s.template_args) = (ks_template_arg){"T", "TData"};
  *ks_array_push(&arena, &s.template_args) = (ks_template_arg){"B", "kBlock"};
  ks_variant v = {0};
  int archs[] = {90};
  ks_emit_variant ev = {.variant_name = "saxpy_kernel_ks", .v = &v, .archs = archs, .narchs = 1,
                        .where = "saxpy.cu:40"};
  const char *out = NULL;
  if (ks_emit_launch(&ctx, &arena, &s, NULL, &tk, &ts, &ev, &out))
    fail_msg("%s", ctx.error);
  assert_non_null(strstr(out, "ks_site.take((std::is_same<TData, float>::value && (kBlock) == (256u)))"));
  assert_non_null(strstr(out, "saxpy_kernel_ks<TData, kBlock><<<"));
  /* it compiles for the verified instance and for another */
  char src[8192];
  snprintf(src, sizeof src,
           "#include \"kernelsmith_dispatch.h\"\n"
           "template <typename T, unsigned B>\n"
           "__global__ void saxpy_kernel(const T *x, T *y, T a, int count) {\n"
           "  int i = blockIdx.x * B + threadIdx.x;\n"
           "  if (i < count) y[i] = a * x[i] + y[i];\n"
           "}\n"
           "template <typename T, unsigned B>\n"
           "__global__ void saxpy_kernel_ks(const T *x, T *y, T a, int count) {\n"
           "  int i = blockIdx.x * B + threadIdx.x;\n"
           "  if (i < count) y[i] = a * x[i] + y[i];\n"
           "}\n"
           "template <typename TData, unsigned kBlock>\n"
           "void launch(const TData *d_x, TData *d_y, int len) {\n"
           "  %s;\n"
           "}\n"
           "template void launch<float, 256u>(const float *, float *, int);\n"
           "template void launch<double, 128u>(const double *, double *, int);\n",
           out);
  nvcc_compiles(src);
  /* deduced arguments: refused */
  s.template_args = (ks_template_args){0};
  s.callee = "saxpy_kernel";
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &tk, &ts, &ev, &out), -1);
  assert_non_null(strstr(ctx.error, "verified for saxpy_kernel<float, 256u> only"));
  /* a spec that names no instance: its launch sites' instances were judged */
  ts.instance = NULL;
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &tk, &ts, &ev, &out), 0);
  assert_null(strstr(out, "is_same"));
}

/* The whole expression in a .cu file that also has the original and the
 * variant; nvcc must compile it (host and device) for sm_90. */
static void compiles_with_nvcc(void **state) {
  (void)state;
  const char *req[] = {"grid_x * block_x >= count", "aligned(x, 16)", "aligned(y, 16)",
                       "disjoint(x, y)"};
  ks_variant v = {.grid = "ceil_div(grid_x, 4)", .requires = {(const char **)req, 4, 4}};
  int archs[] = {90};
  ks_emit_variant ev = {.variant_name = "saxpy_kernel_ks", .v = &v, .archs = archs, .narchs = 1,
                        .where = "saxpy.cu:40"};
  const char *out;
  if (ks_emit_launch(&ctx, &arena, &site, "saxpy_kernel<<<(len + 255) / 256, 256>>>(d_x, d_y, 2.0f, len)",
                     &saxpy, &spec, &ev, &out))
    fail_msg("%s", ctx.error);
  assert_non_null(strstr(out, "static ksrt::site ks_site(\"saxpy_kernel\", \"saxpy.cu:40\", {90});"));
  assert_non_null(strstr(out, "     saxpy_kernel_ks<<<(ksrt::ceil_div)(dim3((len + 255) / 256).x, 4), 256, 0, 0>>>(d_x, d_y, 2.0f, len);"));
  assert_non_null(strstr(out, "if (!ks_site.take("));
  assert_non_null(strstr(out, "     saxpy_kernel<<<(len + 255) / 256, 256>>>(d_x, d_y, 2.0f, len);"));
  /* shadow mode: y, the output, with the spec's length n, carried by the
   * argument of count */
  assert_non_null(strstr(out, "} else if (ksrt::verify_on()) {"));
  assert_non_null(strstr(out, "ksrt::shadow ks_shadow(ks_site, {{(void *)(d_y), ((((long long)(len)))) * sizeof(*(d_y)), "
                              "ksrt::output::kind_f32,"));
  assert_non_null(strstr(out, "ks_shadow.between();"));

  char src[8192];
  snprintf(src, sizeof src,
           "#include \"kernelsmith_dispatch.h\"\n"
           "__global__ void saxpy_kernel(const float *x, float *y, float a, int count) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  if (i < count) y[i] = a * x[i] + y[i];\n"
           "}\n"
           "__global__ void saxpy_kernel_ks(const float *x, float *y, float a, int count) {\n"
           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  for (int j = 4 * i; j < count && j < 4 * i + 4; j++) y[j] = a * x[j] + y[j];\n"
           "}\n"
           "void launch(const float *d_x, float *d_y, int len, bool flag) {\n"
           "  if (flag)\n"
           "    %s;\n"
           "  else\n"
           "    %s;\n"
           "}\n",
           out, out);
  nvcc_compiles(src);
}

/* A kernel with no spec (the capture gave none of its lengths): disjoint()
 * uses the footprints the kernel's code proves, and where one is unknown,
 * the run-time check of the allocations through the site's cache. A guard
 * that needs a length nobody knows is refused in one line that says what
 * to write. */
static void lengths_without_a_spec(void **state) {
  (void)state;
  ks_kernel mm = {.name = "mm"};
  add_param(&mm, "a", "const float *", KS_PARAM_POINTER);
  add_param(&mm, "b", "const float *", KS_PARAM_POINTER);
  add_param(&mm, "c", "float *", KS_PARAM_POINTER);
  add_param(&mm, "m", "int", KS_PARAM_SCALAR);
  add_param(&mm, "n", "int", KS_PARAM_SCALAR);
  mm.params.items[1].pointee_const = true;
  ks_launch s = {.kind = KS_LAUNCH_CHEVRON, .callee = "mm", .grid = "grid", .block = "block"};
  const char *args[] = {"d_a", "d_b", "d_c", "M", "N"};
  for (int i = 0; i < 5; i++)
    *ks_array_push(&arena, &s.args) = args[i];
  const char *extents[] = {"1048576", NULL, "m * n", NULL, NULL};
  const char *why[] = {NULL, "its index 'col[k]' is read from memory", NULL, "not a pointer",
                       "not a pointer"};
  const char *req[] = {"disjoint(a, c)", "disjoint(b, c)", "max(block_x, 32) >= 32"};
  ks_variant v = {.requires = {(const char **)req, 3, 3}};
  int archs[] = {90};
  ks_emit_variant ev = {.variant_name = "mm_ks", .v = &v, .archs = archs, .narchs = 1,
                        .where = "mm.cu:9", .extents = extents, .extent_why = why, .nextents = 5};
  const char *out = NULL;
  if (ks_emit_launch(&ctx, &arena, &s, NULL, &mm, NULL, &ev, &out))
    fail_msg("%s", ctx.error);
  assert_non_null(strstr(out, "ksrt::disjoint((d_a), ksrt::bytes_of((1048576), sizeof(*(d_a))), "
                              "(d_c), ksrt::bytes_of((((long long)(int)(M)) * ((long long)(int)(N))), sizeof(*(d_c))))"));
  assert_non_null(strstr(out, "ks_alias.disjoint(0, (d_b), ksrt::unknown, (d_c), "
                              "ksrt::bytes_of((((long long)(int)(M)) * ((long long)(int)(N))), sizeof(*(d_c))))"));
  assert_non_null(strstr(out, "static thread_local ksrt::alias_cache ks_alias;"));
  /* An extent over the launch is computed in 64 bits: grid_x * block_x
   * must not wrap in unsigned int where the kernel's own index does not. */
  extents[0] = "grid_x * block_x";
  if (ks_emit_launch(&ctx, &arena, &s, NULL, &mm, NULL, &ev, &out))
    fail_msg("%s", ctx.error);
  assert_non_null(strstr(out, "ksrt::bytes_of((((long long)dim3(grid).x) * ((long long)dim3(block).x)), "
                              "sizeof(*(d_a)))"));
  extents[0] = "1048576";
  /* a guard that needs b's length itself */
  const char *req2[] = {"len_b % 4 == 0"};
  ks_variant v2 = {.requires = {(const char **)req2, 1, 1}};
  ev.v = &v2;
  assert_int_equal(ks_emit_launch(&ctx, &arena, &s, NULL, &mm, NULL, &ev, &out), -1);
  assert_non_null(strstr(ctx.error, "its guard 'len_b % 4 == 0' cannot be checked here"));
  assert_non_null(strstr(ctx.error, "its index 'col[k]' is read from memory"));
  assert_non_null(strstr(ctx.error, "'in b[LENGTH]'"));
  assert_null(strchr(ctx.error, '\n'));
  ev.v = &v;
  if (ks_emit_launch(&ctx, &arena, &s, NULL, &mm, NULL, &ev, &out))
    fail_msg("%s", ctx.error);
  char src[8192];
  /* The header is included after the file's own includes, where the
   * user's macros are in force: PolyBench's N, a min() macro, names like
   * the header's own. */
  snprintf(src, sizeof src,
           "#define N 8192\n#define A 1\n#define B 2\n#define F32 3\n#define OFF 4\n"
           "#define VARIANT 5\n#define min(a, b) ((a) < (b) ? (a) : (b))\n"
           "#define max(a, b) ((a) > (b) ? (a) : (b))\n"
           "#include \"kernelsmith_dispatch.h\"\n"
           "__global__ void mm(const float *a, const float *b, float *c, int m, int n) {}\n"
           "__global__ void mm_ks(const float *a, const float *b, float *c, int m, int n) {}\n"
           "#define M 1024\n"
           "void launch(const float *d_a, const float *d_b, float *d_c) {\n"
           "  dim3 block(32, 8), grid(32, 128);\n"
           "  %s;\n"
           "}\n",
           out);
  nvcc_compiles(src);
}

/* A file's plan: the variant after the definition, a launch in this file
 * dispatched, a launch that the scan places in another file left alone
 * with a note, the include added once, the text between edits kept. */
static void file_plan(void **state) {
  (void)state;
  const char *text = "#include <cstdio>\n"
                     "__global__ void saxpy_kernel(const float *x, float *y, float a, int count) {}\n"
                     "void run(const float *d_x, float *d_y, int len) {\n"
                     "  saxpy_kernel<<<(len + 255) / 256, 256>>>(d_x, d_y, 2.0f, len);\n"
                     "}\n";
  ks_kernel k = saxpy;
  k.usr = "c:@F@saxpy_kernel";
  const char *def_end = strstr(text, "{}") + 2;
  k.extent.end.offset = (unsigned)(def_end - text);
  ks_variant v = {.source = "__global__ void saxpy_kernel_ks_variant(const float *x, float *y, "
                            "float a, int count) {}\n",
                  .kernel_name = "saxpy_kernel_ks_variant"};
  int archs[] = {90};
  ks_emit_kernel ek = {.k = &k, .spec = &spec, .v = &v, .variant_name = "saxpy_kernel_ks",
                       .comment = "// a comment", .archs = archs, .narchs = 1};
  ks_launch sites[2] = {site, site};
  const char *launch = strstr(text, "saxpy_kernel<<<");
  for (int i = 0; i < 2; i++) {
    sites[i].kernel_usr = k.usr;
    sites[i].extent.begin.offset = (unsigned)(launch - text);
    sites[i].extent.end.offset = (unsigned)(strstr(launch, ";") - text);
    sites[i].loc.line = 4;
  }
  sites[0].loc.file = "/p/a.cu";
  sites[1].loc.file = "/p/b.cu";
  ks_strings notes = {0};
  const char *out = NULL;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, &sites[1], 1,
                                "kernelsmith_dispatch.h", &out, &notes, NULL), 0);
  /* only the other file's launch: nothing dispatches the variant, so the
   * file is left alone, and two notes say why */
  assert_null(out);
  assert_int_equal(notes.len, 2);
  assert_non_null(strstr(notes.items[0], "launched from another file"));
  assert_non_null(strstr(notes.items[1], "a.cu:0: saxpy_kernel: none of its launches can be "
                                         "dispatched; its variant is not added"));
  notes.len = 0;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, NULL, 0,
                                "kernelsmith_dispatch.h", &out, &notes, NULL), 0);
  assert_null(out);
  assert_int_equal(notes.len, 1);
  assert_non_null(strstr(notes.items[0], "the scan resolved no launch of it"));
  notes.len = 0;
  ks_emit_edits edits = {0};
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, sites, 1,
                                "kernelsmith_dispatch.h", &out, &notes, &edits), 0);
  assert_non_null(strstr(out, "#include <cstdio>\n#include \"kernelsmith_dispatch.h\"\n"));
  assert_non_null(strstr(out, "{}\n\n// a comment\n__global__ void saxpy_kernel_ks(const float *x"));
  assert_non_null(strstr(out, "static ksrt::site ks_site(\"saxpy_kernel\", \"a.cu:4\", {90});"));
  assert_int_equal(edits.len, 3);
  /* applying twice changes nothing */
  const char *again = NULL;
  notes.len = 0;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", out, &ek, 1, NULL, 0,
                                "kernelsmith_dispatch.h", &again, &notes, NULL), 0);
  assert_null(again);
  assert_non_null(strstr(notes.items[0], "already in the file"));
}

/* A launch through a function pointer the launching function assigned
 * (cuda-samples' transpose: `kernel = &copy; ... kernel<<<g, b>>>(...)`):
 * each candidate with a winner is dispatched when the pointer holds it, the
 * others launch as written; a candidate without a winner gets no branch. */
static void function_pointer(void **state) {
  (void)state;
  const char *text = "#include <cstdio>\n"
                     "__global__ void saxpy_kernel(const float *x, float *y, float a, int count) {}\n"
                     "__global__ void other(const float *x, float *y, float a, int count) {}\n"
                     "void run(const float *d_x, float *d_y, int len, bool which) {\n"
                     "  void (*kern)(const float *, float *, float, int) = which ? &saxpy_kernel : &other;\n"
                     "  kern<<<(len + 255) / 256, 256>>>(d_x, d_y, 2.0f, len);\n"
                     "}\n";
  ks_kernel k = saxpy;
  k.usr = "c:@F@saxpy_kernel";
  k.extent.end.offset = (unsigned)(strstr(text, "{}") + 2 - text);
  ks_variant v = {.source = "__global__ void saxpy_kernel_ks_variant(const float *x, float *y, "
                            "float a, int count) {}\n",
                  .kernel_name = "saxpy_kernel_ks_variant"};
  int archs[] = {90};
  ks_emit_kernel ek = {.k = &k, .spec = &spec, .v = &v, .variant_name = "saxpy_kernel_ks",
                       .archs = archs, .narchs = 1};
  ks_launch l = site;
  l.callee = "kern";
  l.resolution = KS_RESOLVED_POINTER;
  *ks_array_push(&arena, &l.candidates) = (ks_launch_candidate){.kernel_usr = "c:@F@other"};
  *ks_array_push(&arena, &l.candidates) = (ks_launch_candidate){.kernel_usr = k.usr};
  /* assigned in two places: listed twice, one branch */
  *ks_array_push(&arena, &l.candidates) = (ks_launch_candidate){.kernel_usr = k.usr};
  const char *launch = strstr(text, "kern<<<");
  l.extent.begin.offset = (unsigned)(launch - text);
  l.extent.end.offset = (unsigned)(strstr(launch, ";") - text);
  l.loc = (ks_loc){.file = "/p/a.cu", .line = 6};
  ks_strings notes = {0};
  const char *out = NULL;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, &l, 1,
                                "kernelsmith_dispatch.h", &out, &notes, NULL), 0);
  assert_int_equal(notes.len, 0);
  assert_non_null(out);
  assert_non_null(strstr(out, "  (kern == (decltype(kern))&saxpy_kernel\n   ? [&] {\n"));
  assert_non_null(strstr(out, "saxpy_kernel_ks<<<"));
  assert_null(strstr(strstr(out, "&saxpy_kernel\n") + 1, "&saxpy_kernel\n"));
  assert_non_null(strstr(out, "   : kern<<<(len + 255) / 256, 256>>>(d_x, d_y, 2.0f, len));\n"));
  assert_non_null(strstr(out, "__global__ void saxpy_kernel_ks(const float *x"));
  nvcc_compiles(out);
  /* A kernel in a namespace is named with it, the variant too. */
  k.qualified_name = "app::saxpy_kernel";
  notes.len = 0;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, &l, 1,
                                "kernelsmith_dispatch.h", &out, &notes, NULL), 0);
  assert_non_null(strstr(out, "(kern == (decltype(kern))&app::saxpy_kernel\n"));
  assert_non_null(strstr(out, "app::saxpy_kernel_ks<<<"));
  k.qualified_name = NULL;
  /* A pointer that is not a plain name is evaluated once only: left alone. */
  l.callee = "table[i]";
  notes.len = 0;
  assert_int_equal(ks_emit_file(&ctx, &arena, "/p/a.cu", text, &ek, 1, &l, 1,
                                "kernelsmith_dispatch.h", &out, &notes, NULL), 0);
  assert_null(out);
  assert_int_equal(notes.len, 2);
  assert_non_null(strstr(notes.items[0], "the function pointer 'table[i]' is not a plain name"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(expressions),
      cmocka_unit_test(refusals),
      cmocka_unit_test(template_instance),
      cmocka_unit_test(compiles_with_nvcc),
      cmocka_unit_test(lengths_without_a_spec),
      cmocka_unit_test(file_plan),
      cmocka_unit_test(function_pointer),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
