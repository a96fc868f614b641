/* scalar_replace (passes/rules/rules_scalar.c) and hoist_invariant
 * (passes/rules/rules_hoist.c) on the kernels of testdata/rules/loops (a gemm
 * that scales C and sums into it in global memory, a matrix-vector product
 * in both access orders, a window entropy filter) and on small kernels
 * written here: the text of each rewrite, its guards, the reasons of the
 * kernels they must leave alone, and the two rules composed with each
 * other and with every rule; every child compiled by NVRTC for sm_90 after
 * the slice, as the judge compiles it. */
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

static char tmpdir[] = "/tmp/ks_loops_XXXXXX";

static rh_tree loops, mine;

#define SPEC                                                                               \
  "/* kernelsmith:\n"                                                                      \
  " *   size timed: n = 4096\n"                                                            \
  " *   size odd:   n = 77\n"                                                              \
  " *   scalar rate = 0.5\n"                                                               \
  " *   in    a[n] uniform(-1, 1)\n"                                                       \
  " *   inout c[n] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-3)\n"                         \
  " *   launch grid = ceil_div(n, 128), block = 128\n"                                     \
  " */\n"
#define I "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    int k;\n    if (i >= n) return;\n"

static const char kernels[] =
    "__device__ float twice(float x) { return 2 * x; }\n"
    SPEC
    "__global__ void decay(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 8; k++)\n"
    "        c[i] = c[i] * __expf(-rate) + sqrtf(rate) * powf(rate, 2.0f) + __expf(-rate);\n"
    "}\n"
    SPEC
    "__global__ void pragma_loop(int n, float rate, const float *a, float *c) {\n" I
    "    c[i] = 0;\n"
    "    #pragma unroll 4\n"
    "    for (k = 0; k < 16; k += 1) { c[i] -= a[(i + k) % n] * logf(rate + 1.0f); }\n"
    "}\n"
    SPEC
    "__global__ void two_indices(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 4; k++) { c[i] += a[k % n]; c[(i + 1) % n] += rate; }\n"
    "}\n"
    SPEC
    "__global__ void moving(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = i; k < n; k++) c[k] += rate * a[k];\n"
    "}\n"
    SPEC
    "__global__ void barrier(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 4; k++) { c[i] += a[k % n]; __syncthreads(); }\n"
    "}\n"
    SPEC
    "__global__ void early_exit(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 4; k++) { if (a[k % n] > rate) return; c[i] += a[k % n]; }\n"
    "}\n"
    SPEC
    "__global__ void calls_own(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 4; k++) c[i] += twice(a[k % n]);\n"
    "}\n"
    SPEC
    "__global__ void via_local(int n, float rate, const float *a, float *c) {\n" I
    "    float *p = &c[i];\n"
    "    for (k = 0; k < 4; k++) *p += a[k % n];\n"
    "}\n"
    SPEC
    "__global__ void gathered(int n, float rate, const float *a, float *c) {\n" I
    "    for (k = 0; k < 4; k++) c[(int)a[i] & 0] += rate;\n"
    "}\n"
    SPEC
    "__global__ void int_div(int n, float rate, const float *a, float *c) {\n" I
    "    float s = 0;\n"
    "    for (k = 0; k < 4; k++) s += sqrtf((float)(n / (n - i))) * a[k % n];\n"
    "    c[i] = s;\n"
    "}\n"
    SPEC
    "__global__ void literal_only(int n, float rate, const float *a, float *c) {\n" I
    "    float s = 0;\n"
    "    for (k = 0; k < 4; k++) s += sqrtf(2.0f) * a[k % n] + expf(a[0]);\n"
    "    c[i] = s;\n"
    "}\n";

static int setup(void **state) {
  (void)state;
  if (rh_setup("test_rules_loops") || !mkdtemp(tmpdir))
    return -1;
  const char *file = ks_arena_printf(&rh_arena, "%s/loops.cu", tmpdir);
  FILE *f = fopen(file, "w");
  if (!f || fputs(kernels, f) < 0 || fclose(f))
    return -1;
  if (rh_open_tree(&loops, ks_arena_strdup(&rh_arena, ks_testdata("rules/loops"))) ||
      rh_open_tree(&mine, ks_arena_strdup(&rh_arena, tmpdir)))
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rh_close_tree(&loops);
  rh_close_tree(&mine);
  unlink(ks_arena_printf(&rh_arena, "%s/loops.cu", tmpdir));
  rmdir(tmpdir);
  rh_teardown();
  return 0;
}

static void scalar_replace_rewrites(void **state) {
  (void)state;
  /* C scaled right before the loop: one load, one store */
  rh_subject *s = rh_open_kernel(&loops, "gemm_accum_kernel");
  ks_variant v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "        float ks_acc = c[i * NJ + j] * beta;\n"
             "        for (k = 0; k < NK; k++)\n"
             "            ks_acc += alpha * a[i * NK + k] * b[k * NJ + j];\n"
             "        c[i * NJ + j] = ks_acc;\n    }\n");
  assert_int_equal(rh_count(v.source, "c[i * NJ + j]"), 2);
  rh_guard(&v, "disjoint(c, a)");
  rh_guard(&v, "disjoint(c, b)");
  assert_int_equal(v.requires.len, 2);
  /* its own child: nothing left */
  rh_not_applied(rh_next_input(s, &v), "scalar_replace", 0, "writes no global memory");

  /* the loop is the body of an if without braces: braces added */
  s = rh_open_kernel(&loops, "mv_rows_kernel");
  v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "    if (i < n)\n    {\n        float ks_acc = x1[i];\n"
             "        for (j = 0; j < n; j++)\n            ks_acc += a[i * n + j] * y1[j];\n"
             "        x1[i] = ks_acc;\n    }\n");
  rh_guard(&v, "disjoint(x1, a)");
  rh_guard(&v, "disjoint(x1, y1)");

  /* x2[i] = x2[i] + ..., `<=`, `j += 1` */
  s = rh_open_kernel(&loops, "mv_cols_kernel");
  v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "    float ks_acc = x2[i];\n    for (j = 0; j <= n - 1; j += 1)\n    {\n"
             "        ks_acc = ks_acc + a[j * n + i] * y2[j];\n    }\n    x2[i] = ks_acc;\n");

  /* set to zero before the loop nest: the outer loop gets the register */
  s = rh_open_kernel(&loops, "window_entropy_kernel");
  v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "    float ks_acc = 0.0f;\n    for (dy = -R; dy <= R; dy++)\n");
  rh_has(&v, "            ks_acc -= v / s * (logf(v) - logf(s));\n        }\n"
             "    ent[y * w + x] = ks_acc;\n");
  rh_guard(&v, "disjoint(ent, img)");
  /* the first loop nest writes nothing: left alone */
  rh_has(&v, "            s += img[yy * w + xx];\n");

  /* a plain assignment that reads the element; the pragma stays on its loop */
  s = rh_open_kernel(&mine, "decay");
  v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "    float ks_acc = c[i];\n    for (k = 0; k < 8; k++)\n"
             "        ks_acc = ks_acc * __expf(-rate) + sqrtf(rate) * powf(rate, 2.0f) + "
             "__expf(-rate);\n    c[i] = ks_acc;\n");
  s = rh_open_kernel(&mine, "pragma_loop");
  v = rh_applied(s, &s->in, "scalar_replace", 0, NULL);
  rh_has(&v, "    float ks_acc = 0;\n    #pragma unroll 4\n    for (k = 0; k < 16; k += 1) "
             "{ ks_acc -= a[(i + k) % n] * logf(rate + 1.0f); }\n    c[i] = ks_acc;\n");
  rh_guard(&v, "disjoint(c, a)");
  rh_compile_queued();
}

static void hoist_invariant_rewrites(void **state) {
  (void)state;
  rh_subject *s = rh_open_kernel(&loops, "window_entropy_kernel");
  ks_variant v = rh_applied(s, &s->in, "hoist_invariant", 0, NULL);
  rh_has(&v, "    ent[y * w + x] = 0.0f;\n    const float ks_inv = logf(s);\n"
             "    for (dy = -R; dy <= R; dy++)\n");
  rh_has(&v, "ent[y * w + x] -= v / s * (logf(v) - ks_inv);");
  assert_int_equal(v.requires.len, 0);
  rh_not_applied(rh_next_input(s, &v), "hoist_invariant", 0, "logf(v) uses 'v'");

  /* equal expressions share one local; the product of two calls is one */
  s = rh_open_kernel(&mine, "decay");
  v = rh_applied(s, &s->in, "hoist_invariant", 0, NULL);
  rh_has(&v, "    const float ks_inv = __expf(-rate);\n"
             "    const float ks_inv2 = sqrtf(rate) * powf(rate, 2.0f);\n"
             "    for (k = 0; k < 8; k++)\n"
             "        c[i] = c[i] * ks_inv + ks_inv2 + ks_inv;\n");
  /* above the pragma, not between it and its loop */
  s = rh_open_kernel(&mine, "pragma_loop");
  v = rh_applied(s, &s->in, "hoist_invariant", 0, NULL);
  rh_has(&v, "    const float ks_inv = logf(rate + 1.0f);\n    #pragma unroll 4\n    for (k = 0;");
  rh_compile_queued();
}

static void kernels_they_refuse(void **state) {
  (void)state;
  static const struct {
    const char *kernel, *rule, *why;
  } cases[] = {
      {"two_indices", "scalar_replace", "reaches 'c' at two indices (i and (i+1)%n)"},
      {"moving", "scalar_replace", "c[k]: its index uses 'k', which the loop changes"},
      {"barrier", "scalar_replace", "calls __syncthreads"},
      {"early_exit", "scalar_replace", "returns from inside the loop"},
      {"calls_own", "scalar_replace", "calls twice, a function of the code's own"},
      {"via_local", "scalar_replace", "stores to *p (through the local pointer 'p')"},
      {"gathered", "scalar_replace", "its index reads memory"},
      {"int_div", "hoist_invariant", "the integer division n / (n - i)"},
      {"literal_only", "hoist_invariant", "sqrtf(2.0f) has only literals"},
      {"mv_rows_kernel", "hoist_invariant", "no math function is called inside a loop"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    rh_tree *t = strstr(cases[k].kernel, "_kernel") ? &loops : &mine;
    rh_subject *s = rh_open_kernel(t, cases[k].kernel);
    rh_not_applied(&s->in, cases[k].rule, 0, cases[k].why);
  }
}

/* Each of the two after every rule's first applicable choice, and every
 * rule after each of the two: a refusal or a child that compiles. */
static void compositions(void **state) {
  (void)state;
  static const char *const subjects[] = {"gemm_accum_kernel", "mv_rows_kernel", "mv_cols_kernel",
                                         "window_entropy_kernel", "decay", "pragma_loop"};
  static const char *const ours[] = {"scalar_replace", "hoist_invariant"};
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  unsigned both = 0;
  for (size_t k = 0; k < sizeof subjects / sizeof *subjects; k++) {
    rh_tree *t = strstr(subjects[k], "_kernel") ? &loops : &mine;
    rh_subject *s = rh_open_kernel(t, subjects[k]);
    for (size_t r = 0; r < nrules; r++) {
      size_t nch = rules[r]->nchoices ? rules[r]->nchoices : 1;
      for (size_t c = 0; c < nch; c++) {
        int param = rules[r]->nchoices ? rules[r]->choices[c] : 0;
        ks_rule_result first = rh_apply(&s->in, rules[r]->name, param);
        if (!first.applied)
          continue;
        rh_check_child(s, &first.child,
                       ks_arena_printf(&rh_arena, "%s.%s=%d", subjects[k], rules[r]->name, param),
                       NULL);
        ks_rule_input *next = rh_next_input(s, &first.child);
        for (size_t o = 0; o < 2; o++) {
          ks_rule_result res = rh_apply(next, ours[o], 0);
          if (!res.applied)
            continue;
          both += !strcmp(rules[r]->name, ours[1 - o]);
          rh_check_child(s, &res.child,
                         ks_arena_printf(&rh_arena, "%s.%s=%d.%s", subjects[k], rules[r]->name,
                                         param, ours[o]),
                         NULL);
        }
        break;
      }
    }
  }
  /* decay, pragma_loop and the entropy filter take both, in either order */
  assert_true(both >= 6);
  rh_compile_queued();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(scalar_replace_rewrites),
      cmocka_unit_test(hoist_invariant_rewrites),
      cmocka_unit_test(kernels_they_refuse),
      cmocka_unit_test(compositions),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
