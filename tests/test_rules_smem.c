/* The shared-memory rules (passes/rules/rules_smem_hist.c, rules_smem_transpose.c): smem_histogram and
 * smem_transpose on the test apps and on testdata/rules, each child checked
 * the way the search uses it: the text it must contain, its launch policy
 * and guards resolved on every size set (where the guards hold, a launch
 * CUDA accepts), and the unit the judge compiles (slice + child) compiled
 * by NVRTC for sm_90. Kernels the rules must leave alone say why; children
 * of restrict and vectorize are either rewritten or refused, never broken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_target.h"
#include "ks_test.h"

/* A kernel opened as the search opens it: its target, its seed variant and
 * the seed's prepared rule input. */
typedef struct subject {
  ks_ctx ctx;
  ks_arena arena;
  ks_target t;
  ks_variant seed;
  bool is_template;
  ks_rule_input in;
} subject;

static subject *open_subject(const char *rel, const char *kernel) {
  subject *s = calloc(1, sizeof *s);
  ks_ctx_init(&s->ctx, "test_rules_smem");
  const char *paths[] = {ks_testdata(rel)};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  if (ks_target_open(&s->ctx, &opts, kernel, &s->arena, &s->t))
    fail_msg("open %s in %s: %s", kernel, rel, s->ctx.error);
  if (ks_rules_seed(&s->ctx, &s->t, &s->arena, &s->seed, &s->is_template))
    fail_msg("seed %s: %s", kernel, s->ctx.error);
  if (ks_rules_prepare(&s->ctx, &s->t, &s->seed, s->is_template, &s->arena, &s->in))
    fail_msg("prepare %s: %s", kernel, s->ctx.error);
  return s;
}

static void close_subject(subject *s) {
  ks_target_close(&s->t);
  ks_arena_release(&s->arena);
  ks_ctx_release(&s->ctx);
  free(s);
}

static const ks_rule *rule(const char *name) {
  const ks_rule *r = ks_rule_find(name);
  if (!r)
    fail_msg("no rule '%s'", name);
  return r;
}

static ks_variant apply_ok(subject *s, const ks_rule_input *in, const char *name, int param) {
  ks_rule_result res = {0};
  assert_int_equal(rule(name)->apply(&s->ctx, in, param, &s->arena, &res), 0);
  if (!res.applied)
    fail_msg("%s=%d on %s: not applied: %s", name, param, s->t.kernel->name, res.reason);
  assert_non_null(res.child.source);
  assert_non_null(res.technique);
  return res.child;
}

static void expect_refused(subject *s, const ks_rule_input *in, const char *name, int param,
                           const char *why) {
  ks_rule_result res = {0};
  assert_int_equal(rule(name)->apply(&s->ctx, in, param, &s->arena, &res), 0);
  if (res.applied)
    fail_msg("%s=%d on %s: applied, expected a refusal with '%s':\n%s", name, param,
             s->t.kernel->name, why, res.child.source);
  assert_non_null(res.reason);
  assert_null(strchr(res.reason, '\n'));
  if (!strstr(res.reason, why))
    fail_msg("%s on %s: reason '%s' lacks '%s'", name, s->t.kernel->name, res.reason, why);
}

static void expect_text(const ks_variant *v, const char *needle) {
  if (!strstr(v->source, needle))
    fail_msg("missing '%s' in:\n%s", needle, v->source);
}

static size_t count_of(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static bool has_guard(const ks_variant *v, const char *guard) {
  for (size_t i = 0; i < v->requires.len; i++)
    if (!strcmp(v->requires.items[i], guard))
      return true;
  return false;
}

/* The child's launch on every size set: guards hold where `hold_all`
 * (else wherever they hold), with a launch CUDA accepts. Returns the
 * candidate for more checks. */
static ks_candidate resolve(subject *s, const ks_variant *child, bool hold_all) {
  ks_candidate cand;
  if (ks_target_candidate(&s->ctx, &s->t, child, s->is_template, &s->arena, &cand))
    fail_msg("%s: policy or guards do not resolve: %s", s->t.kernel->name, s->ctx.error);
  for (size_t i = 0; i < s->t.nworkloads; i++) {
    if (!cand.guards_hold[i]) {
      if (hold_all)
        fail_msg("%s: a guard fails on size '%s'", s->t.kernel->name, s->t.workloads[i].size_name);
      continue;
    }
    const ks_launch_cfg *l = &cand.launches[i];
    unsigned long long threads = (unsigned long long)l->block[0] * l->block[1] * l->block[2];
    assert_true(threads >= 1 && threads <= 1024);
    assert_true(l->grid[0] >= 1 && l->grid[1] >= 1 && l->grid[1] <= 65535 && l->grid[2] >= 1);
    assert_true(l->smem <= 49152);
  }
  return cand;
}

static const ks_launch_cfg *timed_launch(subject *s, const ks_candidate *cand) {
  for (size_t i = 0; i < s->t.nworkloads; i++)
    if (s->t.workloads[i].timed)
      return &cand->launches[i];
  fail_msg("no timed size");
  return NULL;
}

/* The units the judge would compile, for one NVRTC call per test. */
typedef struct batch {
  ks_compile_unit units[32];
  const char *names[32];
  const char *what[32];
  size_t n;
} batch;

static void queue(batch *b, subject *s, const ks_variant *child, const char *what) {
  assert_true(b->n < 32);
  ks_candidate cand = resolve(s, child, false);
  b->names[b->n] = cand.name_expression;
  b->what[b->n] = what;
  b->units[b->n] = (ks_compile_unit){.name = ks_arena_printf(&s->arena, "%s.cu", what),
                                     .source = ks_rules_unit(&s->arena, &s->t, child, NULL),
                                     .name_expressions = &b->names[b->n],
                                     .nnames = 1,
                                     .candidate = child->source};
  b->n++;
}

static void compile_all(batch *b) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_rules_smem");
  ks_arena arena = KS_ARENA_INIT;
  ks_compiler compiler;
  if (ks_compiler_init(&ctx, &compiler, "sm_90", NULL))
    fail_msg("compiler: %s", ctx.error);
  ks_compile_result res[32];
  if (b->n && ks_compile(&ctx, &compiler, b->units, b->n, &arena, res))
    fail_msg("compile: %s", ctx.error);
  for (size_t i = 0; i < b->n; i++)
    if (res[i].status != KS_COMPILE_OK)
      fail_msg("%s does not compile: %s\n%s\n--- child ---\n%s", b->what[i], res[i].reason,
               res[i].log ? res[i].log : "", b->units[i].candidate);
  ks_compiler_release(&compiler);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
}

/* ---- smem_histogram ------------------------------------------------------- */

static void histogram_app(void **state) {
  (void)state;
  subject *s = open_subject("apps/histogram", "histogram_kernel");
  batch b = {0};
  const ks_rule *r = rule("smem_histogram");
  for (size_t c = 0; c < r->nchoices; c++) {
    int param = r->choices[c];
    ks_variant child = apply_ok(s, &s->in, "smem_histogram", param);
    /* 8-bit keys: 256 static bins, the atomics in shared memory. */
    expect_text(&child, "__shared__ unsigned int ks_hist[256];");
    expect_text(&child, "atomicAdd(&ks_hist[data[i]], 1u)");
    expect_text(&child, "for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; "
                        "i += blockDim.x * gridDim.x) {");
    expect_text(&child, "atomicAdd(&bins[ks_bin], ks_count);");
    expect_text(&child, "if (ks_count != 0)");
    assert_int_equal(count_of(child.source, "__syncthreads();"), 2);
    assert_null(strstr(child.source, "return"));
    assert_null(child.smem);
    assert_string_equal(child.grid, ks_arena_printf(&s->arena, "dim3(min(grid_x, %u), grid_y, grid_z)", 132u * param));
    assert_null(child.block);
    assert_true(has_guard(&child, "grid_x * block_x >= n"));
    ks_candidate cand = resolve(s, &child, true);
    const ks_launch_cfg *l = timed_launch(s, &cand);
    assert_int_equal(l->grid[0], 132u * param);
    assert_int_equal(l->block[0], 256);
    queue(&b, s, &child, ks_arena_printf(&s->arena, "histogram_kernel.smem_histogram=%d", param));
  }
  compile_all(&b);
  close_subject(s);
}

static void histogram_int_keys_dynamic(void **state) {
  (void)state;
  subject *s = open_subject("rules", "hist_int_kernel");
  batch b = {0};
  ks_variant child = apply_ok(s, &s->in, "smem_histogram", 8);
  /* The bins' count is the spec's length, read back in the kernel. */
  expect_text(&child, "extern __shared__ unsigned int ks_hist[];");
  expect_text(&child, "asm volatile(\"mov.u32 %0, %%dynamic_smem_size;\" : \"=r\"(ks_nbins));");
  expect_text(&child, "ks_nbins /= sizeof(unsigned int);");
  expect_text(&child, "ks_bin < ks_nbins;");
  expect_text(&child, "atomicAdd(&ks_hist[keys[i]], 1u);");
  /* The const index steps; the early return moves to the next element. */
  expect_text(&child, "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * "
                      "gridDim.x) {");
  expect_text(&child, "if (i >= n) continue;");
  assert_null(strstr(child.source, "return"));
  assert_string_equal(child.smem, "len_bins * 4");
  assert_true(has_guard(&child, "len_bins * 4 <= 49152"));
  assert_true(has_guard(&child, "grid_x * block_x >= n"));
  /* An int index must not wrap when it steps past n. */
  assert_true(has_guard(&child, "n + min(grid_x, 1056) * block_x <= 2147483647"));
  ks_candidate cand = resolve(s, &child, false);
  for (size_t i = 0; i < s->t.nworkloads; i++) {
    const ks_workload *w = &s->t.workloads[i];
    bool many = !strcmp(w->size_name, "many");
    /* 20000 bins do not fit: the original runs there. */
    assert_int_equal(cand.guards_hold[i], !many);
    if (!many)
      assert_int_equal(cand.launches[i].smem, 4 * w->buffers.items[1].count);
  }
  assert_int_equal(timed_launch(s, &cand)->grid[0], 132u * 8);
  queue(&b, s, &child, "hist_int_kernel.smem_histogram=8");
  compile_all(&b);
  close_subject(s);
}

static void histogram_grid_stride_and_mask(void **state) {
  (void)state;
  batch b = {0};
  /* Already a grid-stride loop, `bins + key`, 64-bit bins. */
  subject *w = open_subject("rules", "hist_weighted_kernel");
  ks_variant child = apply_ok(w, &w->in, "smem_histogram", 4);
  expect_text(&child, "extern __shared__ unsigned long long ks_hist[];");
  expect_text(&child, "atomicAdd(ks_hist + keys[i], w);");
  assert_int_equal(count_of(child.source, "gridDim.x"), 1); /* the user's loop, as it was */
  assert_string_equal(child.smem, "len_bins * 8");
  assert_string_equal(child.grid, "dim3(min(grid_x, 528), grid_y, grid_z)");
  assert_false(has_guard(&child, "grid_x * block_x >= n"));
  resolve(w, &child, true);
  queue(&b, w, &child, "hist_weighted_kernel.smem_histogram=4");

  /* `v & 15`: 16 static bins of int. */
  subject *m = open_subject("rules", "hist_mask_kernel");
  ks_variant masked = apply_ok(m, &m->in, "smem_histogram", 2);
  expect_text(&masked, "__shared__ int ks_hist[16];");
  expect_text(&masked, "atomicAdd(&ks_hist[v & 15], 1);");
  expect_text(&masked, "ks_bin < 16;");
  assert_null(masked.smem);
  resolve(m, &masked, true);
  queue(&b, m, &masked, "hist_mask_kernel.smem_histogram=2");
  compile_all(&b);
  close_subject(w);
  close_subject(m);
}

static void histogram_refusals(void **state) {
  (void)state;
  static const struct {
    const char *dir, *kernel, *why;
  } cases[] = {
      {"apps/saxpy", "saxpy_kernel", "no atomicAdd"},
      {"apps/sgemm", "sgemm_naive_kernel", "no atomicAdd"},
      {"apps/stencil2d", "jacobi5_kernel", "no atomicAdd"},
      {"apps/transpose", "transpose_naive_kernel", "no atomicAdd"},
      {"rules", "hist_slots_kernel", "writes memory other than through atomicAdd"},
      {"rules", "hist_exact_kernel", "no early exit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    subject *s = open_subject(cases[i].dir, cases[i].kernel);
    expect_refused(s, &s->in, "smem_histogram", 4, cases[i].why);
    close_subject(s);
  }
}

/* ---- smem_transpose ------------------------------------------------------- */

static void transpose_app(void **state) {
  (void)state;
  subject *s = open_subject("apps/transpose", "transpose_naive_kernel");
  batch b = {0};
  const ks_rule *r = rule("smem_transpose");
  for (size_t c = 0; c < r->nchoices; c++) {
    int param = r->choices[c], tile = param / 100, rows = param % 100;
    ks_variant child = apply_ok(s, &s->in, "smem_transpose", param);
    expect_text(&child, "__shared__ float ks_tile[32][32 + 1];");
    expect_text(&child, ks_arena_printf(&s->arena, "for (int ks_j = 0; ks_j < 32; ks_j += %d) {", rows));
    /* Load: the user's index expressions, x from threadIdx.x. */
    expect_text(&child, "int col = blockIdx.x * 32 + threadIdx.x;");
    expect_text(&child, "int row = blockIdx.y * 32 + (threadIdx.y + ks_j);");
    expect_text(&child, "if (row < rows && col < cols) ks_tile[threadIdx.y + ks_j][threadIdx.x] = "
                        "in[(size_t)row * cols + col];");
    /* Write: the roles swapped, the store from the transposed tile. */
    expect_text(&child, "int col = blockIdx.x * 32 + (threadIdx.y + ks_j);");
    expect_text(&child, "int row = blockIdx.y * 32 + threadIdx.x;");
    expect_text(&child, "out[(size_t)col * rows + row] = ks_tile[threadIdx.x][threadIdx.y + ks_j];");
    assert_int_equal(count_of(child.source, "__syncthreads();"), 1);
    assert_int_equal(count_of(child.source, "in["), 1);
    assert_string_equal(child.block, ks_arena_printf(&s->arena, "dim3(%d, %d)", tile, rows));
    assert_string_equal(child.grid, "dim3(ceil_div(grid_x * block_x, 32), ceil_div(grid_y * block_y, 32))");
    assert_true(has_guard(&child, "grid_x * block_x >= cols"));
    assert_true(has_guard(&child, "grid_y * block_y >= rows"));
    ks_candidate cand = resolve(s, &child, true);
    for (size_t i = 0; i < s->t.nworkloads; i++) {
      const ks_launch_cfg *o = &s->t.workloads[i].launch, *l = &cand.launches[i];
      /* Every tile of the original's threads, no more. */
      assert_int_equal(l->grid[0], (o->grid[0] * o->block[0] + 31) / 32);
      assert_int_equal(l->grid[1], (o->grid[1] * o->block[1] + 31) / 32);
      assert_int_equal(l->block[0], tile);
      assert_int_equal(l->block[1], rows);
    }
    queue(&b, s, &child, ks_arena_printf(&s->arena, "transpose_naive_kernel.smem_transpose=%d", param));
  }
  compile_all(&b);
  close_subject(s);
}

static void transpose_template_with_locals(void **state) {
  (void)state;
  subject *s = open_subject("rules", "transpose_scale_kernel");
  assert_true(s->is_template);
  batch b = {0};
  ks_variant child = apply_ok(s, &s->in, "smem_transpose", 3208);
  expect_text(&child, "__shared__ T ks_tile[32][32 + 1];");
  /* x is written `threadIdx.x + blockDim.x * blockIdx.x`. */
  expect_text(&child, "const int x = threadIdx.x + 32 * blockIdx.x;");
  expect_text(&child, "const int x = (threadIdx.y + ks_j) + 32 * blockIdx.x;");
  /* The early return becomes `continue`, in both phases. */
  assert_int_equal(count_of(child.source, "continue;"), 2);
  assert_null(strstr(child.source, "return"));
  /* The value is computed once, in the load phase. */
  expect_text(&child, "ks_tile[threadIdx.y + ks_j][threadIdx.x] = v + (T)1;");
  assert_int_equal(count_of(child.source, "in[src]"), 1);
  expect_text(&child, "out[(size_t)x * rows + y] = ks_tile[threadIdx.x][threadIdx.y + ks_j];");
  resolve(s, &child, true);
  queue(&b, s, &child, "transpose_scale_kernel.smem_transpose=3208");
  compile_all(&b);
  close_subject(s);
}

static void transpose_refusals(void **state) {
  (void)state;
  static const struct {
    const char *dir, *kernel, *why;
  } cases[] = {
      {"apps/saxpy", "saxpy_kernel", "not a 2-D kernel"},
      {"apps/sgemm", "sgemm_naive_kernel", "reads its output"},
      {"apps/stencil2d", "jacobi5_kernel", "more than one place"},
      {"apps/histogram", "histogram_kernel", "atomicAdd"},
      {"rules", "copy2d_kernel", "not a transpose"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    subject *s = open_subject(cases[i].dir, cases[i].kernel);
    expect_refused(s, &s->in, "smem_transpose", 3208, cases[i].why);
    close_subject(s);
  }
  /* Parameters that are no tile. */
  subject *s = open_subject("apps/transpose", "transpose_naive_kernel");
  expect_refused(s, &s->in, "smem_transpose", 3207, "not a tile");
  expect_refused(s, &s->in, "smem_transpose", 6432, "not a tile"); /* 2048 threads */
  close_subject(s);
}

/* ---- compositions ---------------------------------------------------------- */

/* `second` applied to the child of `first`: rewritten (and then it compiles)
 * or refused with a reason; never an error. Returns whether it applied. */
static bool compose(subject *s, batch *b, const char *first, int first_param, const char *second,
                    int second_param, bool must_apply) {
  ks_rule_result r1 = {0};
  assert_int_equal(rule(first)->apply(&s->ctx, &s->in, first_param, &s->arena, &r1), 0);
  if (!r1.applied) {
    printf("note: %s does not apply to %s: %s\n", first, s->t.kernel->name, r1.reason);
    assert_false(must_apply);
    return false;
  }
  ks_rule_input in2;
  if (ks_rules_prepare(&s->ctx, &s->t, &r1.child, s->is_template, &s->arena, &in2))
    fail_msg("%s's child of %s does not parse: %s", first, s->t.kernel->name, s->ctx.error);
  ks_rule_result r2 = {0};
  assert_int_equal(rule(second)->apply(&s->ctx, &in2, second_param, &s->arena, &r2), 0);
  if (!r2.applied) {
    printf("note: %s after %s on %s: %s\n", second, first, s->t.kernel->name, r2.reason);
    assert_non_null(r2.reason);
    assert_false(must_apply);
    return false;
  }
  queue(b, s, &r2.child, ks_arena_printf(&s->arena, "%s.%s+%s", s->t.kernel->name, first, second));
  return true;
}

static void compositions(void **state) {
  (void)state;
  batch b = {0};
  subject *h = open_subject("apps/histogram", "histogram_kernel");
  compose(h, &b, "restrict", 0, "smem_histogram", 4, true);
  /* Vector loads of the bytes: rewritten or refused, not broken. */
  compose(h, &b, "vectorize", 16, "smem_histogram", 4, false);
  compose(h, &b, "block", 128, "smem_histogram", 8, true);
  compose(h, &b, "grid_stride", 4, "smem_histogram", 4, false);
  subject *t = open_subject("apps/transpose", "transpose_naive_kernel");
  compose(t, &b, "restrict", 0, "smem_transpose", 3208, true);
  compose(t, &b, "block", 16016, "smem_transpose", 3204, false);
  compile_all(&b);
  close_subject(h);
  close_subject(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(histogram_app),
      cmocka_unit_test(histogram_int_keys_dynamic),
      cmocka_unit_test(histogram_grid_stride_and_mask),
      cmocka_unit_test(histogram_refusals),
      cmocka_unit_test(transpose_app),
      cmocka_unit_test(transpose_template_with_locals),
      cmocka_unit_test(transpose_refusals),
      cmocka_unit_test(compositions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
