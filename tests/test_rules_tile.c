/* The matrix-product rule (passes/rules/rules_tile_mm.c): tile_matmul on the
 * sgemm app and on testdata/rules/tile_mm.cu (macro sizes and C89 loops,
 * A * A^T in double with the roles of x and y swapped, A * B^T with leading
 * dimensions), each child checked the way the search uses it: the text it
 * must contain, its launch policy and guards resolved on every size set,
 * and the unit the judge compiles compiled by NVRTC for sm_90. Kernels the
 * rule must leave alone say why; compositions with other rules are
 * rewritten or refused, never broken. */
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
  ks_ctx_init(&s->ctx, "test_rules_tile");
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
  ks_ctx_init(&ctx, "test_rules_tile");
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


/* No barrier under a condition: every __syncthreads of the child sits in
 * the k-tile loop at the top level, whose bound is a kernel parameter or a
 * constant, and no `return` is left. */
static void expect_uniform_barriers(const ks_variant *v) {
  assert_null(strstr(v->source, "return"));
  assert_int_equal(count_of(v->source, "__syncthreads();"), 2);
  const char *loop = strstr(v->source, "for (int ks_k0 = 0;");
  assert_non_null(loop);
  const char *first = strstr(v->source, "__syncthreads();");
  assert_true(first > loop);
}

static void sgemm_app(void **state) {
  (void)state;
  subject *s = open_subject("apps/sgemm", "sgemm_naive_kernel");
  batch b = {0};
  const ks_rule *r = rule("tile_matmul");
  for (size_t c = 0; c < r->nchoices; c++) {
    int param = r->choices[c];
    if (param >= 100000000)
      continue; /* the float4 choices: fast_choices below */
    int tile = param >= 10000 ? param / 10000 : param >= 100 ? param / 100 : param;
    int regs = param >= 10000 ? param / 100 % 100 : param >= 100 ? param % 100 : 1;
    int xregs = param >= 10000 ? param % 100 : 1;
    int rows = tile / regs, cols = tile / xregs;
    ks_variant child = apply_ok(s, &s->in, "tile_matmul", param);
    if (xregs > 1) {
      /* Register tiles of regs x xregs outputs: both indices step through
       * the tile, both loads cover it in steps of the block. */
      expect_text(&child, ks_arena_printf(&s->arena, "float ks_acc[%d][%d];", regs, xregs));
      expect_text(&child, ks_arena_printf(&s->arena,
                                          "int row = blockIdx.y * %d + (threadIdx.y + ks_r * %d);",
                                          tile, rows));
      expect_text(&child, ks_arena_printf(&s->arena,
                                          "int col = blockIdx.x * %d + (threadIdx.x + ks_c * %d);",
                                          tile, cols));
      expect_text(&child, ks_arena_printf(&s->arena,
                                          "ks_ty[threadIdx.y + ks_l * %d][threadIdx.x + ks_m * %d] = "
                                          "(row < M && k < K) ? A[row * K + k] : (float)0;",
                                          rows, cols));
      expect_text(&child, ks_arena_printf(&s->arena,
                                          "ks_acc[ks_r][ks_c] += ks_ty[threadIdx.y + ks_r * %d][ks_kk] * "
                                          "ks_tx[ks_kk][threadIdx.x + ks_c * %d];",
                                          rows, cols));
      expect_text(&child, "acc = ks_acc[ks_r][ks_c];");
      assert_int_equal(count_of(child.source, "C[row * N + col] = alpha * acc + beta * C[row * N + col];"), 1);
      expect_uniform_barriers(&child);
      assert_string_equal(child.block, ks_arena_printf(&s->arena, "dim3(%d, %d)", cols, rows));
      ks_candidate cand = resolve(s, &child, true);
      for (size_t i = 0; i < s->t.nworkloads; i++) {
        const ks_launch_cfg *o = &s->t.workloads[i].launch, *l = &cand.launches[i];
        assert_int_equal(l->grid[0], (o->grid[0] * o->block[0] + tile - 1) / tile);
        assert_int_equal(l->block[0], cols);
        assert_int_equal(l->block[1], rows);
      }
      queue(&b, s, &child, ks_arena_printf(&s->arena, "sgemm_naive_kernel.tile_matmul=%d", param));
      continue;
    }
    expect_text(&child, ks_arena_printf(&s->arena, "__shared__ float ks_ty[%d][%d + 1];", tile, tile));
    expect_text(&child, ks_arena_printf(&s->arena, "__shared__ float ks_tx[%d][%d + 1];", tile, tile));
    expect_text(&child, ks_arena_printf(&s->arena, "float ks_acc[%d];", regs));
    /* Each output's row: the block's tile, the thread's row, its r-th step. */
    expect_text(&child, ks_arena_printf(&s->arena,
                                        "int row = blockIdx.y * %d + (threadIdx.y + ks_r * %d);",
                                        tile, rows));
    expect_text(&child, ks_arena_printf(&s->arena, "int col = blockIdx.x * %d + threadIdx.x;", tile));
    /* Loads: bounds-checked, zero outside, the warp along k for A (row-major)
     * and along col for B. */
    expect_text(&child, ks_arena_printf(&s->arena,
                                        "ks_ty[threadIdx.y + ks_l * %d][threadIdx.x] = (row < M && k < K) ? "
                                        "A[row * K + k] : (float)0;",
                                        rows));
    expect_text(&child, ks_arena_printf(&s->arena,
                                        "ks_tx[threadIdx.y + ks_l * %d][threadIdx.x] = (col < N && k < K) ? "
                                        "B[k * N + col] : (float)0;",
                                        rows));
    expect_text(&child, ks_arena_printf(&s->arena, "for (int ks_k0 = 0; ks_k0 < K; ks_k0 += %d) {", tile));
    /* The user's statement, its operands from the tiles. */
    expect_text(&child, ks_arena_printf(&s->arena,
                                        "ks_acc[ks_r] += ks_ty[threadIdx.y + ks_r * %d][ks_kk] * "
                                        "ks_tx[ks_kk][threadIdx.x];",
                                        rows));
    /* The last k-tile stops at K (no zeros added). */
    expect_text(&child, "for (int ks_kk = 0; ks_k0 + ks_kk < K; ++ks_kk) {");
    expect_text(&child, ks_arena_printf(&s->arena, "if (ks_k0 + %d < K) {", tile - 1));
    /* Prologue and epilogue under the original check. */
    assert_int_equal(count_of(child.source, "if (row < M && col < N) {"), 2);
    expect_text(&child, "ks_acc[ks_r] = acc;");
    expect_text(&child, "acc = ks_acc[ks_r];");
    assert_int_equal(count_of(child.source, "C[row * N + col] = alpha * acc + beta * C[row * N + col];"), 1);
    expect_uniform_barriers(&child);
    assert_string_equal(child.block, ks_arena_printf(&s->arena, "dim3(%d, %d)", tile, rows));
    assert_string_equal(child.grid, ks_arena_printf(&s->arena,
                                                    "dim3(ceil_div(grid_x * block_x, %d), "
                                                    "ceil_div(grid_y * block_y, %d))",
                                                    tile, tile));
    assert_true(has_guard(&child, "grid_x * block_x >= N"));
    assert_true(has_guard(&child, "grid_y * block_y >= M"));
    ks_candidate cand = resolve(s, &child, true);
    for (size_t i = 0; i < s->t.nworkloads; i++) {
      const ks_launch_cfg *o = &s->t.workloads[i].launch, *l = &cand.launches[i];
      assert_int_equal(l->grid[0], (o->grid[0] * o->block[0] + tile - 1) / tile);
      assert_int_equal(l->grid[1], (o->grid[1] * o->block[1] + tile - 1) / tile);
      assert_int_equal(l->block[0], tile);
      assert_int_equal(l->block[1], rows);
    }
    queue(&b, s, &child, ks_arena_printf(&s->arena, "sgemm_naive_kernel.tile_matmul=%d", param));
  }
  compile_all(&b);
  close_subject(s);
}

static void macro_gemm(void **state) {
  (void)state;
  subject *s = open_subject("rules/tile_mm.cu", "gemm_macro_kernel");
  batch b = {0};
  ks_variant child = apply_ok(s, &s->in, "tile_matmul", 3204);
  /* The early return is a `continue` in both phases. */
  assert_int_equal(count_of(child.source, "continue;"), 2);
  /* The C89 loop's inclusive bound, through the macros. */
  expect_text(&child, "for (int ks_k0 = 0; ks_k0 <= (GM_NK - 1); ks_k0 += 32) {");
  expect_text(&child, "(i < GM_NI && k <= (GM_NK - 1)) ? a[i * GM_NK + k] : (float)0;");
  expect_text(&child, "(j < GM_NJ && k <= (GM_NK - 1)) ? b[k * GM_NJ + j] : (float)0;");
  /* sum = 0 runs in the prologue only; the epilogue takes the sum. */
  assert_int_equal(count_of(child.source, "sum = 0.0f;"), 1);
  expect_text(&child, "sum = ks_acc[ks_r];");
  assert_int_equal(count_of(child.source, "c[i * GM_NJ + j] = GM_ALPHA * sum"), 1);
  /* The bounds are macros: the guards hold their values. */
  assert_true(has_guard(&child, "grid_x * block_x >= 150"));
  assert_true(has_guard(&child, "grid_y * block_y >= 200"));
  expect_uniform_barriers(&child);
  resolve(s, &child, true);
  queue(&b, s, &child, "gemm_macro_kernel.tile_matmul=3204");
  ks_variant c16 = apply_ok(s, &s->in, "tile_matmul", 16);
  resolve(s, &c16, true);
  queue(&b, s, &c16, "gemm_macro_kernel.tile_matmul=16");
  compile_all(&b);
  close_subject(s);
}

static void aat_double(void **state) {
  (void)state;
  subject *s = open_subject("rules/tile_mm.cu", "aat_kernel");
  batch b = {0};
  ks_variant child = apply_ok(s, &s->in, "tile_matmul", 3204);
  expect_text(&child, "__shared__ double ks_ty[32][32 + 1];");
  /* row comes from x, col from y: the y operand is a[col * m + t]. Both
   * operands are contiguous along t: the warp loads along t. */
  expect_text(&child, "ks_ty[threadIdx.y + ks_l * 8][threadIdx.x] = (col <= (n - 1) && t < m) ? "
                      "a[col * m + t] : (double)0;");
  expect_text(&child, "ks_tx[threadIdx.x][threadIdx.y + ks_l * 8] = (row <= (n - 1) && t < m) ? "
                      "a[row * m + t] : (double)0;");
  /* Straight into memory: c = 0 once, the sum starts from it, one store. */
  assert_int_equal(count_of(child.source, "c[row * n + col] = 0.0;"), 1);
  expect_text(&child, "ks_acc[ks_r] = c[row * n + col];");
  expect_text(&child, "c[row * n + col] = ks_acc[ks_r];");
  expect_text(&child, "ks_acc[ks_r] += ks_tx[ks_kk][threadIdx.x] * ks_ty[threadIdx.y + ks_r * 8][ks_kk];");
  assert_true(has_guard(&child, "grid_x * block_x > (n - 1)") ||
              has_guard(&child, "grid_x * block_x > ((n - 1))"));
  expect_uniform_barriers(&child);
  resolve(s, &child, true);
  queue(&b, s, &child, "aat_kernel.tile_matmul=3204");
  ks_variant c1602 = apply_ok(s, &s->in, "tile_matmul", 1602);
  resolve(s, &c1602, true);
  queue(&b, s, &c1602, "aat_kernel.tile_matmul=1602");
  compile_all(&b);
  close_subject(s);
}

static void gemm_nt(void **state) {
  (void)state;
  subject *s = open_subject("rules/tile_mm.cu", "gemm_nt_kernel");
  batch b = {0};
  ks_variant child = apply_ok(s, &s->in, "tile_matmul", 3208);
  expect_text(&child, "ks_ty[threadIdx.y + ks_l * 4][threadIdx.x] = (r < rows && kk < depth) ? "
                      "A[r * lda + kk] : (float)0;");
  /* B^T: B is contiguous along k, so the warp runs along k there too. */
  expect_text(&child, "ks_tx[threadIdx.x][threadIdx.y + ks_l * 4] = (q < cols && kk < depth) ? "
                      "B[q * ldb + kk] : (float)0;");
  expect_text(&child, "ks_acc[ks_r] = ks_acc[ks_r] + ks_ty[threadIdx.y + ks_r * 4][ks_kk] * "
                      "ks_tx[ks_kk][threadIdx.x];");
  /* Nested ifs are the bounds check; both phases keep them. */
  assert_int_equal(count_of(child.source, "if (r < rows)"), 2);
  assert_int_equal(count_of(child.source, "C[r * ldc + q] = alpha * acc;"), 1);
  assert_string_equal(child.block, "dim3(32, 4)");
  expect_uniform_barriers(&child);
  resolve(s, &child, true);
  queue(&b, s, &child, "gemm_nt_kernel.tile_matmul=3208");
  compile_all(&b);
  close_subject(s);
}

static void refusals(void **state) {
  (void)state;
  static const struct {
    const char *dir, *kernel, *why;
  } cases[] = {
      {"apps/saxpy", "saxpy_kernel", "not a 2-D kernel"},
      {"apps/transpose", "transpose_naive_kernel", "has no loop"},
      {"apps/stencil2d", "jacobi5_kernel", "has no loop"},
      {"apps/gemv", "gemv_kernel", "not a 2-D kernel"},
      {"rules/tile_mm.cu", "rowsum_kernel", "exactly two operands"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    subject *s = open_subject(cases[i].dir, cases[i].kernel);
    expect_refused(s, &s->in, "tile_matmul", 3204, cases[i].why);
    close_subject(s);
  }
  subject *s = open_subject("apps/sgemm", "sgemm_naive_kernel");
  expect_refused(s, &s->in, "tile_matmul", 3203, "not a tile");
  expect_refused(s, &s->in, "tile_matmul", 64, "not a tile");
  close_subject(s);
}

static void compositions(void **state) {
  (void)state;
  batch b = {0};
  subject *s = open_subject("apps/sgemm", "sgemm_naive_kernel");
  compose(s, &b, "block", 32008, "tile_matmul", 3204, false);
  compose(s, &b, "unroll", 4, "tile_matmul", 3204, false);
  compose(s, &b, "tile_matmul", 3204, "unroll", 4, false);
  compose(s, &b, "tile_matmul", 3204, "launch_bounds", 2, false);
  compose(s, &b, "tile_matmul", 3204, "restrict", 0, false);
  /* Twice: the second sees the shared memory and says so. */
  assert_false(compose(s, &b, "tile_matmul", 3204, "tile_matmul", 1602, false));
  subject *n = open_subject("rules/tile_mm.cu", "gemm_nt_kernel");
  compose(n, &b, "restrict", 0, "tile_matmul", 3204, true);
  compose(n, &b, "tile_matmul", 1604, "fast_math", 0, false);
  compile_all(&b);
  close_subject(s);
  close_subject(n);
}

/* The float4 choices, param = BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx. */
typedef struct fast_param {
  int bm, bn, bk, r, rx;
} fast_param;

static fast_param fast_of(int param) {
  return (fast_param){param / 10000000, param / 10000 % 1000, param / 100 % 100, param / 10 % 10,
                      param % 10};
}

/* What every float4 child holds: two 16-byte aligned double-buffered
 * k-major tiles padded by 4, R x Rx accumulators, the thread's values read
 * from shared memory with float4, one barrier before the k loop and one in
 * it (at the top level, under the loop's own bound), no return; the block
 * and the grid of the tiles; the leading-dimension and alignment guards. */
static void expect_fast(subject *s, const ks_variant *v, int param, const char *ey, const char *ex) {
  fast_param f = fast_of(param);
  int rows = f.bm / f.r, cols = f.bn / f.rx;
  expect_text(v, ks_arena_printf(&s->arena, "__shared__ __align__(16) %s ks_sy[2][%d][%d + 4];", ey,
                                 f.bk, f.bm));
  expect_text(v, ks_arena_printf(&s->arena, "__shared__ __align__(16) %s ks_sx[2][%d][%d + 4];", ex,
                                 f.bk, f.bn));
  expect_text(v, ks_arena_printf(&s->arena, " ks_acc[%d][%d];", f.r, f.rx));
  expect_text(v, ks_arena_printf(&s->arena,
                                 "const float4 ks_t = *(const float4 *)&ks_sy[ks_buf][ks_kk][threadIdx.y "
                                 "* 4 + ks_g * %d];",
                                 rows * 4));
  expect_text(v, ks_arena_printf(&s->arena,
                                 "const float4 ks_t = *(const float4 *)&ks_sx[ks_buf][ks_kk][threadIdx.x "
                                 "* 4 + ks_g * %d];",
                                 cols * 4));
  expect_text(v, ks_arena_printf(&s->arena, "const int ks_tid = threadIdx.y * %d + threadIdx.x;", cols));
  expect_text(v, ks_arena_printf(&s->arena, "ks_k0 += %d) {", f.bk));
  expect_text(v, "ks_buf ^= 1;");
  expect_text(v, "#pragma unroll\n");
  assert_null(strstr(v->source, "return"));
  assert_int_equal(count_of(v->source, "__syncthreads();"), 2);
  const char *loop = strstr(v->source, "ks_k0 = 0;");
  assert_non_null(loop);
  assert_true(strstr(loop, "__syncthreads();") != NULL);
  assert_string_equal(v->block, ks_arena_printf(&s->arena, "dim3(%d, %d)", cols, rows));
  assert_string_equal(v->grid, ks_arena_printf(&s->arena,
                                               "dim3(ceil_div(grid_x * block_x, %d), "
                                               "ceil_div(grid_y * block_y, %d))",
                                               f.bn, f.bm));
}

static const int fast_params[] = {1281280888, 1280640884, 1281281688, 640640844};

static void fast_choices(void **state) {
  (void)state;
  batch b = {0};
  const ks_rule *r = rule("tile_matmul");
  /* Each is a choice of the rule, after the earlier ones. */
  for (size_t i = 0; i < sizeof fast_params / sizeof *fast_params; i++) {
    bool listed = false;
    for (size_t c = 0; c < r->nchoices; c++)
      listed |= r->choices[c] == fast_params[i] && c >= 11;
    assert_true(listed);
  }
  subject *s = open_subject("apps/sgemm", "sgemm_naive_kernel");
  for (size_t i = 0; i < sizeof fast_params / sizeof *fast_params; i++) {
    int param = fast_params[i];
    fast_param f = fast_of(param);
    ks_variant child = apply_ok(s, &s->in, "tile_matmul", param);
    expect_fast(s, &child, param, "float", "float");
    /* A along k: float4 along k, stored transposed; B along col: float4
     * along col, stored as it is. */
    expect_text(&child, "ks_gy[ks_l] = *(const float4 *)&A[row * K + k];");
    expect_text(&child, "ks_gx[ks_l] = *(const float4 *)&B[k * N + col];");
    expect_text(&child, ks_arena_printf(&s->arena, "ks_sy[0][ks_v %% %d * 4 + 3][ks_v / %d] = ks_gy[ks_l].w;",
                                        f.bk / 4, f.bk / 4));
    expect_text(&child, ks_arena_printf(&s->arena,
                                        "*(float4 *)&ks_sx[ks_buf ^ 1][ks_v / %d][ks_v %% %d * 4] = ks_gx[ks_l];",
                                        f.bn / 4, f.bn / 4));
    /* The tails past a bound element by element, zero outside. */
    expect_text(&child, "ks_e[ks_j] = (row < M && k < K) ? A[row * K + k] : (float)0;");
    expect_text(&child, "ks_e[ks_j] = (col < N && k < K) ? B[k * N + col] : (float)0;");
    expect_text(&child, "ks_acc[ks_r][ks_c] += ks_a[ks_r] * ks_b[ks_c];");
    expect_text(&child, "for (int ks_kk = 0; ks_k0 + ks_kk < K; ++ks_kk) {");
    expect_text(&child, "const bool ks_next = ks_k0 + ");
    assert_int_equal(count_of(child.source, "C[row * N + col] = alpha * acc + beta * C[row * N + col];"), 1);
    expect_text(&child, "acc = ks_acc[ks_r][ks_c];");
    assert_true(has_guard(&child, "K % 4 == 0"));
    assert_true(has_guard(&child, "N % 4 == 0"));
    assert_true(has_guard(&child, "aligned(A, 16)"));
    assert_true(has_guard(&child, "aligned(B, 16)"));
    assert_true(has_guard(&child, "grid_x * block_x >= N"));
    assert_true(has_guard(&child, "grid_y * block_y >= M"));
    /* The guards: timed and small hold; odd (N = 37, K = 53) and one fall
     * back to the original. */
    ks_candidate cand = resolve(s, &child, false);
    for (size_t w = 0; w < s->t.nworkloads; w++) {
      const char *size = s->t.workloads[w].size_name;
      bool want = !strcmp(size, "timed") || !strcmp(size, "small");
      if (cand.guards_hold[w] != want)
        fail_msg("tile_matmul=%d: the guards %s on size '%s'", param, want ? "fail" : "hold", size);
      if (!want)
        continue;
      const ks_launch_cfg *o = &s->t.workloads[w].launch, *l = &cand.launches[w];
      assert_int_equal(l->grid[0], (o->grid[0] * o->block[0] + f.bn - 1) / f.bn);
      assert_int_equal(l->grid[1], (o->grid[1] * o->block[1] + f.bm - 1) / f.bm);
      assert_int_equal(l->block[0] * l->block[1], (f.bm / f.r) * (f.bn / f.rx));
    }
    queue(&b, s, &child, ks_arena_printf(&s->arena, "sgemm_naive_kernel.tile_matmul=%d", param));
  }
  /* Compositions: rewritten or refused, never broken. */
  compose(s, &b, "tile_matmul", 1281280888, "restrict", 0, false);
  compose(s, &b, "tile_matmul", 1281280888, "launch_bounds", 2, false);
  compose(s, &b, "tile_matmul", 1281280888, "fast_math", 0, false);
  compose(s, &b, "tile_matmul", 1280640884, "unroll", 4, false);
  assert_false(compose(s, &b, "tile_matmul", 1281280888, "tile_matmul", 1281280888, false));
  compile_all(&b);
  close_subject(s);

  /* A * B^T: both operands along k, both stored transposed; A^T * B: both
   * along their outer index, neither transposed. The leading dimensions
   * are parameters: guards. */
  batch b2 = {0};
  subject *nt = open_subject("rules/tile_mm.cu", "gemm_nt_kernel");
  subject *tn = open_subject("rules/tile_mm.cu", "gemm_tn_kernel");
  for (size_t i = 0; i < sizeof fast_params / sizeof *fast_params; i++) {
    int param = fast_params[i];
    ks_variant c1 = apply_ok(nt, &nt->in, "tile_matmul", param);
    expect_fast(nt, &c1, param, "float", "float");
    expect_text(&c1, "ks_gy[ks_l] = *(const float4 *)&A[r * lda + kk];");
    expect_text(&c1, "ks_gx[ks_l] = *(const float4 *)&B[q * ldb + kk];");
    expect_text(&c1, "both operands transposed");
    expect_text(&c1, "ks_acc[ks_r][ks_c] = ks_acc[ks_r][ks_c] + ks_a[ks_r] * ks_b[ks_c];");
    assert_int_equal(count_of(c1.source, "C[r * ldc + q] = alpha * acc;"), 1);
    assert_true(has_guard(&c1, "lda % 4 == 0"));
    assert_true(has_guard(&c1, "ldb % 4 == 0"));
    assert_true(has_guard(&c1, "aligned(A, 16)"));
    assert_true(has_guard(&c1, "aligned(B, 16)"));
    queue(&b2, nt, &c1, ks_arena_printf(&nt->arena, "gemm_nt_kernel.tile_matmul=%d", param));
    ks_variant c2 = apply_ok(tn, &tn->in, "tile_matmul", param);
    expect_fast(tn, &c2, param, "float", "float");
    expect_text(&c2, "ks_gy[ks_l] = *(const float4 *)&A[kk * lda + r];");
    expect_text(&c2, "ks_gx[ks_l] = *(const float4 *)&B[kk * ldb + q];");
    expect_text(&c2, "neither transposed");
    expect_text(&c2, "*(float4 *)&ks_sy[0][ks_v / ");
    /* The early return is a `continue` in both phases; C += straight into
     * memory: loaded once in the prologue, stored once in the epilogue. */
    assert_int_equal(count_of(c2.source, "ks_acc[ks_r][ks_c] = C[r * cols + q];"), 1);
    assert_int_equal(count_of(c2.source, "C[r * cols + q] = ks_acc[ks_r][ks_c];"), 1);
    assert_true(has_guard(&c2, "lda % 4 == 0"));
    assert_true(has_guard(&c2, "ldb % 4 == 0"));
    ks_candidate cand = resolve(tn, &c2, false);
    for (size_t w = 0; w < tn->t.nworkloads; w++) /* lda = rows: 1024 holds, 37 does not */
      assert_int_equal(cand.guards_hold[w], !strcmp(tn->t.workloads[w].size_name, "timed"));
    queue(&b2, tn, &c2, ks_arena_printf(&tn->arena, "gemm_tn_kernel.tile_matmul=%d", param));
  }
  compose(nt, &b2, "restrict", 0, "tile_matmul", 1281280888, true);
  compile_all(&b2);
  close_subject(nt);
  close_subject(tn);

  /* PolyBench's gemm (testdata/legacy, no spec): tests/golden_tile_fast.sh. */

  /* Where float4 loads cannot apply, each says why. */
  static const struct {
    const char *kernel, *why;
  } no[] = {
      {"gemm_macro_kernel", "(77) is not a multiple of 4"},
      {"aat_kernel", "are not float (double, double)"},
      {"gemm_offset_kernel", "cannot be loaded with float4"},
      {"rowsum_kernel", "exactly two operands"},
  };
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    subject *k = open_subject("rules/tile_mm.cu", no[i].kernel);
    expect_refused(k, &k->in, "tile_matmul", 1281280888, no[i].why);
    close_subject(k);
  }
  subject *bad = open_subject("apps/sgemm", "sgemm_naive_kernel");
  expect_refused(bad, &bad->in, "tile_matmul", 1281280887, "is not BM");
  expect_refused(bad, &bad->in, "tile_matmul", 1281283288, "is not BM");
  expect_refused(bad, &bad->in, "tile_matmul", 320320888, "is not BM");
  close_subject(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sgemm_app),    cmocka_unit_test(macro_gemm),   cmocka_unit_test(aat_double),
      cmocka_unit_test(gemm_nt),      cmocka_unit_test(refusals),     cmocka_unit_test(compositions),
      cmocka_unit_test(fast_choices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
