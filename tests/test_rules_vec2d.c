/* vectorize_2d (passes/rules/rules_vectorize_2d.c, rules_vec2d_index.c): on
 * testdata/apps' jacobi5_kernel and on 2-D kernels written here (a copy, a
 * horizontal blur with edge branches inside the bounds check, a vertical
 * difference of ints with its index declared before the check), the text
 * of the rewrite, its launch policy and guards on every size set, and the
 * unit the judge compiles (slice + child) compiled by NVRTC for sm_90.
 * Kernels it must leave alone say why. Compositions: it applies after the
 * rules that keep the kernel's shape, and every rule applied to its child
 * either refuses or gives a child that compiles. */
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
#include "ks_rules.h"
#include "ks_target.h"
#include "ks_test.h"
#include "rules_harness.h"

static char tmpdir[] = "/tmp/ks_vec2d_XXXXXX";

static rh_tree apps, mine;

/* Kernels written for this test: ones it rewrites, then ones it refuses. */
#define SPEC(in_dist)                                                                      \
  "/* kernelsmith:\n"                                                                      \
  " *   size timed: w = 1024, h = 256\n"                                                   \
  " *   size odd:   w = 100, h = 7\n"                                                      \
  " *   size one:   w = 1, h = 1\n"                                                        \
  " *   in  in[w * h] " in_dist "\n"                                                       \
  " *   out out[w * h]\n"                                                                  \
  " *   launch grid = dim3(ceil_div(w, 32), ceil_div(h, 8)), block = dim3(32, 8)\n"        \
  " */\n"
#define XY                                                                                 \
  "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"                                    \
  "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"

static const char kernels[] =
    SPEC("uniform(-1, 1)")
    "__global__ void copy2d(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    out[y * w + x] = 2 * in[y * w + x];\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void blur3(const float *in, float *out, int w, int h) {\n" XY
    "    if (x < w && y < h) {\n"
    "        int i = y * w + x;\n"
    "        if (x == 0 || x == w - 1) {\n"
    "            out[i] = in[i];\n"
    "            return;\n"
    "        }\n"
    "        float s = in[i - 1] + in[i];\n"
    "        s += in[i + 1];\n"
    "        out[i] = s / 3.0f;\n"
    "    }\n"
    "}\n"
    SPEC("int(0, 100)")
    "__global__ void vdiff(const int *in, int *out, int w, int h) {\n"
    "    int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    int i = y * w + x;\n"
    "    if (x >= w || y + 1 >= h)\n"
    "        return;\n"
    "    out[i] = in[i + w] - in[i];\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void rowsum(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    float s = 0;\n"
    "    for (int k = 0; k < 4; ++k) s += in[y * w + x + k];\n"
    "    out[y * w + x] = s;\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void accumulate(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    atomicAdd(&out[y * w + x], in[y * w + x]);\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void stride2(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w / 2 || y >= h) return;\n"
    "    out[y * w + x] = in[y * w + 2 * x];\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void scale_double(const double *in, double *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    out[y * w + x] = 2 * in[y * w + x];\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void in_place(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    out[y * w + x] = out[y * w + x] * 0.5f + in[y * w + x];\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void maybe_read(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w || y >= h) return;\n"
    "    out[y * w + x] = x > 0 ? in[y * w + x - 1] : 0.0f;\n"
    "}\n"
    SPEC("uniform(-1, 1)")
    "__global__ void far_read(const float *in, float *out, int w, int h) {\n" XY
    "    if (x >= w - 5 || y >= h) return;\n"
    "    out[y * w + x] = in[y * w + x + 5];\n"
    "}\n";

static int setup(void **state) {
  (void)state;
  if (rh_setup("test_rules_vec2d") || !mkdtemp(tmpdir))
    return -1;
  const char *file = ks_arena_printf(&rh_arena, "%s/vec2d.cu", tmpdir);
  FILE *f = fopen(file, "w");
  if (!f || fputs(kernels, f) < 0 || fclose(f))
    return -1;
  if (rh_open_tree(&apps, ks_arena_strdup(&rh_arena, ks_testdata("apps"))) ||
      rh_open_tree(&mine, ks_arena_strdup(&rh_arena, tmpdir)))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rh_close_tree(&apps);
  rh_close_tree(&mine);
  unlink(ks_arena_printf(&rh_arena, "%s/vec2d.cu", tmpdir));
  rmdir(tmpdir);
  rh_teardown();
  return 0;
}

/* ---- jacobi5 --------------------------------------------------------------- */

static void jacobi5(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "jacobi5_kernel");
  const char *held;
  ks_variant v = rh_applied(s, &s->in, "vectorize_2d", 4, &held);
  rh_has(&v, "int ks_x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;");
  /* the lanes' conditions: the bounds check and the edge branch */
  rh_has(&v, "        int x = ks_x0 + ks_j;\n        if (x >= nx || y >= ny)\n"
          "            ks_fast = false;\n"
          "        if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)\n");
  /* three rows, one 16-byte load each; the neighbours left and right */
  rh_has(&v, "size_t ks_at0 = (size_t)y * nx + ks_x0;");
  rh_has(&v, "size_t ks_at1 = (size_t)y * nx + ks_x0 - nx;");
  rh_has(&v, "size_t ks_at2 = (size_t)y * nx + ks_x0 + nx;");
  rh_has(&v, "float4 ks_in0 = __ldg(reinterpret_cast<const float4 *>(in + ks_at0));");
  assert_int_equal(rh_count(v.source, "__ldg(reinterpret_cast<const float4 *>(in + "), 3);
  rh_has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  rh_has(&v, "float ks_in0_p1[4] = {ks_in0.y, ks_in0.z, ks_in0.w, __ldg(&in[ks_at0 + 4])};");
  rh_has(&v, "ks_out0[ks_j] = 0.25f * (ks_in0_m1[ks_j] + ks_in0_p1[ks_j] + ks_in1_0[ks_j] + "
          "ks_in2_0[ks_j]);");
  rh_has(&v, "*reinterpret_cast<float4 *>(out + ks_at0) = make_float4(ks_out0[0], ks_out0[1], "
          "ks_out0[2], ks_out0[3]);");
  assert_int_equal(rh_count(v.source, "reinterpret_cast<float4 *>"), 1);
  /* the slow path: the original, once per lane */
  rh_has(&v, "            out[idx] = in[idx];\n            continue;\n");
  assert_int_equal(rh_count(v.source, "return;"), 1);
  assert_non_null(strstr(v.grid, "ceil_div(grid_x, 4)"));
  rh_guard(&v, "nx % 4 == 0");
  rh_guard(&v, "aligned(in, 16)");
  rh_guard(&v, "aligned(out, 16)");
  rh_guard(&v, "disjoint(in, out)");
  rh_guard(&v, "grid_x * block_x >= nx");
  /* sizes timed, small, odd hold (nx = 8192, 64, 1000); one (nx = 1) not */
  assert_string_equal(held, "1110");
  rh_not_applied(&s->in, "vectorize_2d", 8, "only 4");
  /* its own child: no x index any more */
  rh_not_applied(rh_next_input(s, &v), "vectorize_2d", 4, "no global index");
  rh_compile_queued();
}

/* After the rules that keep the shape (launch, __restrict__ + __ldg) it
 * still applies; after coarsen it says why not; every rule on its child
 * refuses or gives a child that compiles. */
static void jacobi5_compositions(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&apps, "jacobi5_kernel");
  static const struct {
    const char *rule;
    int param;
  } before[] = {{"block", 64004}, {"block", 32004}, {"restrict", 0}, {"launch_bounds", 2}};
  for (size_t k = 0; k < sizeof before / sizeof *before; k++) {
    ks_variant p = rh_applied(s, &s->in, before[k].rule, before[k].param, NULL);
    ks_variant v = rh_applied(s, rh_next_input(s, &p), "vectorize_2d", 4, NULL);
    rh_has(&v, "float4 ks_in0 = __ldg(reinterpret_cast<const float4 *>(in + ks_at0));");
    if (!strcmp(before[k].rule, "block"))
      assert_non_null(strstr(v.grid, "ceil_div(ceil_div(grid_x * block_x, "));
    if (!strcmp(before[k].rule, "restrict"))
      rh_has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  }
  ks_variant c = rh_applied(s, &s->in, "coarsen", 2, NULL);
  rh_not_applied(rh_next_input(s, &c), "vectorize_2d", 4, "no bounds check");

  ks_variant v = rh_applied(s, &s->in, "vectorize_2d", 4, NULL);
  ks_rule_input *vin = rh_next_input(s, &v);
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  unsigned took = 0;
  for (size_t r = 0; r < nrules; r++) {
    size_t nch = rules[r]->nchoices ? rules[r]->nchoices : 1;
    for (size_t c2 = 0; c2 < nch; c2++) {
      int param = rules[r]->nchoices ? rules[r]->choices[c2] : 0;
      ks_rule_result res = rh_apply(vin, rules[r]->name, param);
      if (!res.applied)
        continue;
      took++;
      rh_check_child(s, &res.child,
                     ks_arena_printf(&rh_arena, "jacobi5.vec4x.%s=%d", rules[r]->name, param),
                     NULL);
    }
  }
  assert_true(took > 0); /* block, at least */
  rh_compile_queued();
}

/* ---- kernels written here --------------------------------------------------- */

static void kernels_it_rewrites(void **state) {
  (void)state;
  const char *held;
  rh_subject *s = rh_open_kernel(&mine, "copy2d");
  ks_variant v = rh_applied(s, &s->in, "vectorize_2d", 4, &held);
  rh_has(&v, "int ks_at0 = y * w + ks_x0;");
  rh_has(&v, "float ks_in0_0[4] = {ks_in0.x, ks_in0.y, ks_in0.z, ks_in0.w};");
  rh_has(&v, "ks_out0[ks_j] = 2 * ks_in0_0[ks_j];");
  rh_guard(&v, "w % 4 == 0");
  assert_string_equal(held, "110"); /* w = 1 fails w % 4 */

  /* edge branches inside `if (x < w && y < h) { ... }`, a local updated */
  s = rh_open_kernel(&mine, "blur3");
  v = rh_applied(s, &s->in, "vectorize_2d", 4, NULL);
  rh_has(&v, "if (!(x < w && y < h))\n");
  rh_has(&v, "if (x == 0 || x == w - 1)\n");
  rh_has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  rh_has(&v, "float ks_in0_p1[4] = {ks_in0.y, ks_in0.z, ks_in0.w, __ldg(&in[ks_at0 + 4])};");
  rh_has(&v, "s += ks_in0_p1[ks_j];");
  assert_int_equal(rh_count(v.source, "reinterpret_cast<const float4 *>"), 1);
  rh_has(&v, "                continue;\n");

  /* ints; the index declared before the check moves into the lanes */
  s = rh_open_kernel(&mine, "vdiff");
  v = rh_applied(s, &s->in, "vectorize_2d", 4, NULL);
  rh_has(&v, "int ks_at1 = y * w + ks_x0 + w;");
  rh_has(&v, "int4 ks_in1 = __ldg(reinterpret_cast<const int4 *>(in + ks_at1));");
  rh_has(&v, "*reinterpret_cast<int4 *>(out + ks_at0) = make_int4(");
  rh_has(&v, "        int x = ks_x0 + ks_j;\n        int i = y * w + x;\n"
          "        if (x >= w || y + 1 >= h)\n            continue;\n");
  assert_int_equal(rh_count(v.source, "int i = y * w + x;"), 1);
  rh_compile_queued();
}

static void kernels_it_refuses(void **state) {
  (void)state;
  static const struct {
    const char *kernel, *why;
  } cases[] = {
      {"rowsum", "is not straight-line work"},
      {"accumulate", "atomicAdd"},
      {"stride2", "x's coefficient must be 1"},
      {"scale_double", "element type 'double' is not float, int or unsigned"},
      {"in_place", "reads and writes out"},
      {"maybe_read", "only under a condition"},
      {"far_read", "5 from x (at most 4)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    rh_subject *s = rh_open_kernel(&mine, cases[k].kernel);
    rh_not_applied(&s->in, "vectorize_2d", 4, cases[k].why);
  }
  rh_subject *s = rh_open_kernel(&apps, "saxpy_kernel");
  rh_not_applied(&s->in, "vectorize_2d", 4, "a 1-D kernel");
  s = rh_open_kernel(&apps, "transpose_naive_kernel");
  rh_not_applied(&s->in, "vectorize_2d", 4, "coefficient must be 1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(jacobi5),
      cmocka_unit_test(jacobi5_compositions),
      cmocka_unit_test(kernels_it_rewrites),
      cmocka_unit_test(kernels_it_refuses),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
