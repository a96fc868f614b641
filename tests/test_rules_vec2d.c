/* vectorize_2d (passes/rules_vectorize_2d.c, rules_vec2d_index.c): on
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

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static ks_compiler compiler;
static char tmpdir[] = "/tmp/ks_vec2d_XXXXXX";

/* A scanned directory. */
typedef struct tree {
  ks_scan_options options;
  const char *paths[1];
  ks_scan scan;
} tree;
static tree apps, mine;

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

static int open_tree(tree *t, const char *path) {
  t->paths[0] = path;
  t->options = (ks_scan_options){.paths = t->paths, .npaths = 1, .no_compdb = true};
  return ks_scan_run(&ctx, &t->options, &t->scan);
}

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_rules_vec2d");
  if (!mkdtemp(tmpdir))
    return -1;
  const char *file = ks_arena_printf(&arena, "%s/vec2d.cu", tmpdir);
  FILE *f = fopen(file, "w");
  if (!f || fputs(kernels, f) < 0 || fclose(f))
    return -1;
  if (open_tree(&apps, ks_arena_strdup(&arena, ks_testdata("apps"))) ||
      open_tree(&mine, ks_arena_strdup(&arena, tmpdir)) ||
      ks_compiler_init(&ctx, &compiler, "sm_90", NULL)) {
    fprintf(stderr, "setup: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ks_compiler_release(&compiler);
  ks_scan_release(&apps.scan);
  ks_scan_release(&mine.scan);
  unlink(ks_arena_printf(&arena, "%s/vec2d.cu", tmpdir));
  rmdir(tmpdir);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

typedef struct subject {
  ks_target t;
  bool is_template;
  ks_variant seed;
  ks_rule_input in;
} subject;

static subject *open_kernel(tree *tr, const char *name) {
  subject *s = ks_arena_alloc(&arena, sizeof *s);
  const ks_kernel *k;
  if (ks_scan_lookup(&ctx, &tr->scan, name, &k) ||
      ks_target_open_kernel(&ctx, &tr->options, &tr->scan, k, &arena, &s->t) ||
      ks_rules_seed(&ctx, &s->t, &arena, &s->seed, &s->is_template) ||
      ks_rules_prepare(&ctx, &s->t, &s->seed, s->is_template, &arena, &s->in))
    fail_msg("%s: %s", name, ctx.error);
  return s;
}

/* ---- children: resolved on every size set, compiled in one batch ---------- */

typedef struct queued {
  const char *what;
  ks_compile_unit unit;
  const char *name_expression;
} queued;
static KS_ARRAY(queued) queue;

/* The child's policy and guards on every size set; which sizes its guards
 * hold on, as a string of 0/1 in the order of the spec; its unit queued. */
static const char *check_child(subject *s, const ks_variant *child, const char *what) {
  ks_candidate cand;
  if (ks_target_candidate(&ctx, &s->t, child, s->is_template, &arena, &cand))
    fail_msg("%s: policy or guards do not resolve: %s", what, ctx.error);
  char *held = ks_arena_alloc(&arena, s->t.nworkloads + 1);
  for (size_t i = 0; i < s->t.nworkloads; i++) {
    const ks_launch_cfg *l = &cand.launches[i];
    held[i] = cand.guards_hold[i] ? '1' : '0';
    if (cand.guards_hold[i] && (!l->grid[0] || !l->block[0]))
      fail_msg("%s: size %s: an empty launch", what, s->t.workloads[i].size_name);
  }
  queued *q = ks_array_push(&arena, &queue);
  q->what = what;
  q->name_expression = cand.name_expression;
  q->unit = (ks_compile_unit){.name = ks_arena_printf(&arena, "%s.cu", what),
                              .source = ks_rules_unit(&arena, &s->t, child, NULL),
                              .nnames = 1,
                              .candidate = child->source};
  return held;
}

static void compile_queued(void) {
  size_t n = queue.len;
  if (!n)
    return;
  ks_compile_unit *units = ks_arena_alloc(&arena, n * sizeof *units);
  ks_compile_result *res = ks_arena_alloc(&arena, n * sizeof *res);
  for (size_t i = 0; i < n; i++) {
    units[i] = queue.items[i].unit;
    units[i].name_expressions = &queue.items[i].name_expression;
  }
  assert_int_equal(ks_compile(&ctx, &compiler, units, n, &arena, res), 0);
  for (size_t i = 0; i < n; i++)
    if (res[i].status != KS_COMPILE_OK)
      fail_msg("%s does not compile: %s\n%s\n---- variant:\n%s", queue.items[i].what,
               res[i].reason, res[i].log, queue.items[i].unit.candidate);
  queue.len = 0;
}

static ks_rule_result apply_to(const ks_rule_input *in, const char *rule, int param) {
  const ks_rule *r = ks_rule_find(rule);
  assert_non_null(r);
  ks_rule_result res;
  if (r->apply(&ctx, in, param, &arena, &res))
    fail_msg("%s=%d failed: %s", rule, param, ctx.error);
  if (!res.applied) {
    assert_non_null(res.reason);
    assert_null(strchr(res.reason, '\n'));
  }
  return res;
}

static ks_variant applied(subject *s, const ks_rule_input *in, const char *rule, int param,
                          const char **held) {
  ks_rule_result res = apply_to(in, rule, param);
  if (!res.applied)
    fail_msg("%s=%d on %s does not apply: %s", rule, param, s->t.kernel->name, res.reason);
  assert_non_null(res.technique);
  const char *h = check_child(
      s, &res.child, ks_arena_printf(&arena, "%s.%s=%d", res.child.kernel_name, rule, param));
  if (held)
    *held = h;
  return res.child;
}

static void not_applied(const ks_rule_input *in, const char *rule, int param, const char *why) {
  ks_rule_result res = apply_to(in, rule, param);
  if (res.applied)
    fail_msg("%s=%d applies; expected not (%s):\n%s", rule, param, why, res.child.source);
  if (!strstr(res.reason, why))
    fail_msg("%s=%d: reason '%s', expected '%s' in it", rule, param, res.reason, why);
}

static ks_rule_input *next_input(subject *s, const ks_variant *child) {
  ks_rule_input *in = ks_arena_alloc(&arena, sizeof *in);
  if (ks_rules_prepare(&ctx, &s->t, child, s->is_template, &arena, in))
    fail_msg("the child does not parse: %s\n%s", ctx.error, child->source);
  return in;
}

static void has(const ks_variant *v, const char *text) {
  if (!strstr(v->source, text))
    fail_msg("expected '%s' in:\n%s", text, v->source);
}

static void guard(const ks_variant *v, const char *g) {
  for (size_t i = 0; i < v->requires.len; i++)
    if (!strcmp(v->requires.items[i], g))
      return;
  fail_msg("no guard '%s' (%zu guards)", g, v->requires.len);
}

static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

/* ---- jacobi5 --------------------------------------------------------------- */

static void jacobi5(void **state) {
  (void)state;
  subject *s = open_kernel(&apps, "jacobi5_kernel");
  const char *held;
  ks_variant v = applied(s, &s->in, "vectorize_2d", 4, &held);
  has(&v, "int ks_x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;");
  /* the lanes' conditions: the bounds check and the edge branch */
  has(&v, "        int x = ks_x0 + ks_j;\n        if (x >= nx || y >= ny)\n"
          "            ks_fast = false;\n"
          "        if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)\n");
  /* three rows, one 16-byte load each; the neighbours left and right */
  has(&v, "size_t ks_at0 = (size_t)y * nx + ks_x0;");
  has(&v, "size_t ks_at1 = (size_t)y * nx + ks_x0 - nx;");
  has(&v, "size_t ks_at2 = (size_t)y * nx + ks_x0 + nx;");
  has(&v, "float4 ks_in0 = __ldg(reinterpret_cast<const float4 *>(in + ks_at0));");
  assert_int_equal(count(v.source, "__ldg(reinterpret_cast<const float4 *>(in + "), 3);
  has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  has(&v, "float ks_in0_p1[4] = {ks_in0.y, ks_in0.z, ks_in0.w, __ldg(&in[ks_at0 + 4])};");
  has(&v, "ks_out0[ks_j] = 0.25f * (ks_in0_m1[ks_j] + ks_in0_p1[ks_j] + ks_in1_0[ks_j] + "
          "ks_in2_0[ks_j]);");
  has(&v, "*reinterpret_cast<float4 *>(out + ks_at0) = make_float4(ks_out0[0], ks_out0[1], "
          "ks_out0[2], ks_out0[3]);");
  assert_int_equal(count(v.source, "reinterpret_cast<float4 *>"), 1);
  /* the slow path: the original, once per lane */
  has(&v, "            out[idx] = in[idx];\n            continue;\n");
  assert_int_equal(count(v.source, "return;"), 1);
  assert_non_null(strstr(v.grid, "ceil_div(grid_x, 4)"));
  guard(&v, "nx % 4 == 0");
  guard(&v, "aligned(in, 16)");
  guard(&v, "aligned(out, 16)");
  guard(&v, "disjoint(in, out)");
  guard(&v, "grid_x * block_x >= nx");
  /* sizes timed, small, odd hold (nx = 8192, 64, 1000); one (nx = 1) not */
  assert_string_equal(held, "1110");
  not_applied(&s->in, "vectorize_2d", 8, "only 4");
  /* its own child: no x index any more */
  not_applied(next_input(s, &v), "vectorize_2d", 4, "no global index");
  compile_queued();
}

/* After the rules that keep the shape (launch, __restrict__ + __ldg) it
 * still applies; after coarsen it says why not; every rule on its child
 * refuses or gives a child that compiles. */
static void jacobi5_compositions(void **state) {
  (void)state;
  subject *s = open_kernel(&apps, "jacobi5_kernel");
  static const struct {
    const char *rule;
    int param;
  } before[] = {{"block", 64004}, {"block", 32004}, {"restrict", 0}, {"launch_bounds", 2}};
  for (size_t k = 0; k < sizeof before / sizeof *before; k++) {
    ks_variant p = applied(s, &s->in, before[k].rule, before[k].param, NULL);
    ks_variant v = applied(s, next_input(s, &p), "vectorize_2d", 4, NULL);
    has(&v, "float4 ks_in0 = __ldg(reinterpret_cast<const float4 *>(in + ks_at0));");
    if (!strcmp(before[k].rule, "block"))
      assert_non_null(strstr(v.grid, "ceil_div(ceil_div(grid_x * block_x, "));
    if (!strcmp(before[k].rule, "restrict"))
      has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  }
  ks_variant c = applied(s, &s->in, "coarsen", 2, NULL);
  not_applied(next_input(s, &c), "vectorize_2d", 4, "no bounds check");

  ks_variant v = applied(s, &s->in, "vectorize_2d", 4, NULL);
  ks_rule_input *vin = next_input(s, &v);
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  unsigned took = 0;
  for (size_t r = 0; r < nrules; r++) {
    size_t nch = rules[r]->nchoices ? rules[r]->nchoices : 1;
    for (size_t c2 = 0; c2 < nch; c2++) {
      int param = rules[r]->nchoices ? rules[r]->choices[c2] : 0;
      ks_rule_result res = apply_to(vin, rules[r]->name, param);
      if (!res.applied)
        continue;
      took++;
      check_child(s, &res.child,
                  ks_arena_printf(&arena, "jacobi5.vec4x.%s=%d", rules[r]->name, param));
    }
  }
  assert_true(took > 0); /* block, at least */
  compile_queued();
}

/* ---- kernels written here --------------------------------------------------- */

static void kernels_it_rewrites(void **state) {
  (void)state;
  const char *held;
  subject *s = open_kernel(&mine, "copy2d");
  ks_variant v = applied(s, &s->in, "vectorize_2d", 4, &held);
  has(&v, "int ks_at0 = y * w + ks_x0;");
  has(&v, "float ks_in0_0[4] = {ks_in0.x, ks_in0.y, ks_in0.z, ks_in0.w};");
  has(&v, "ks_out0[ks_j] = 2 * ks_in0_0[ks_j];");
  guard(&v, "w % 4 == 0");
  assert_string_equal(held, "110"); /* w = 1 fails w % 4 */

  /* edge branches inside `if (x < w && y < h) { ... }`, a local updated */
  s = open_kernel(&mine, "blur3");
  v = applied(s, &s->in, "vectorize_2d", 4, NULL);
  has(&v, "if (!(x < w && y < h))\n");
  has(&v, "if (x == 0 || x == w - 1)\n");
  has(&v, "float ks_in0_m1[4] = {__ldg(&in[ks_at0 - 1]), ks_in0.x, ks_in0.y, ks_in0.z};");
  has(&v, "float ks_in0_p1[4] = {ks_in0.y, ks_in0.z, ks_in0.w, __ldg(&in[ks_at0 + 4])};");
  has(&v, "s += ks_in0_p1[ks_j];");
  assert_int_equal(count(v.source, "reinterpret_cast<const float4 *>"), 1);
  has(&v, "                continue;\n");

  /* ints; the index declared before the check moves into the lanes */
  s = open_kernel(&mine, "vdiff");
  v = applied(s, &s->in, "vectorize_2d", 4, NULL);
  has(&v, "int ks_at1 = y * w + ks_x0 + w;");
  has(&v, "int4 ks_in1 = __ldg(reinterpret_cast<const int4 *>(in + ks_at1));");
  has(&v, "*reinterpret_cast<int4 *>(out + ks_at0) = make_int4(");
  has(&v, "        int x = ks_x0 + ks_j;\n        int i = y * w + x;\n"
          "        if (x >= w || y + 1 >= h)\n            continue;\n");
  assert_int_equal(count(v.source, "int i = y * w + x;"), 1);
  compile_queued();
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
    subject *s = open_kernel(&mine, cases[k].kernel);
    not_applied(&s->in, "vectorize_2d", 4, cases[k].why);
  }
  subject *s = open_kernel(&apps, "saxpy_kernel");
  not_applied(&s->in, "vectorize_2d", 4, "a 1-D kernel");
  s = open_kernel(&apps, "transpose_naive_kernel");
  not_applied(&s->in, "vectorize_2d", 4, "coefficient must be 1");
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
