/* The rules proposer: the shared helpers (edits, launch policies, variant
 * files), then every rule with every choice on every kernel of testdata/apps
 * (the first choice on testdata/frontend's), and every two-step composition
 * on the apps: each child must compile with NVRTC for sm_90 after the slice,
 * exactly as the judge compiles it, and its launch policy and guards must
 * resolve on every size set. Prints how often each rule applied. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_target.h"
#include "ks_test.h"
#include "ks_variant_file.h"

/* ---- edits -------------------------------------------------------------- */

static void edits_apply_in_order(void **state) {
  (void)state;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  const char *text = "int i = x;\nif (i < n) y[i] = 1;\n";
  ks_edits e = {0};
  /* Added out of order; insertions at one offset keep their order and go
   * before a replacement starting there. */
  ks_edits_add(&a, &e, 11, 13, "while");
  ks_edits_add(&a, &e, 0, 0, "/*a*/");
  ks_edits_add(&a, &e, 11, 11, "/*1*/");
  ks_edits_add(&a, &e, 0, 0, "/*b*/");
  ks_edits_add(&a, &e, 11, 11, "/*2*/");
  ks_edits_add(&a, &e, 13, 13, "/*end of if*/");
  ks_edits_add(&a, &e, strlen(text), strlen(text), "// tail\n");
  const char *out = ks_edits_apply(&ctx, &a, text, &e);
  assert_non_null(out);
  assert_string_equal(out, "/*a*//*b*/int i = x;\n/*1*//*2*/while/*end of if*/ (i < n) y[i] = 1;\n// tail\n");

  /* No edits: the text itself. */
  ks_edits none = {0};
  assert_string_equal(ks_edits_apply(&ctx, &a, text, &none), text);

  /* Overlaps and edits outside the text are refused. */
  ks_edits overlap = {0};
  ks_edits_add(&a, &overlap, 2, 6, "x");
  ks_edits_add(&a, &overlap, 4, 8, "y");
  assert_null(ks_edits_apply(&ctx, &a, text, &overlap));
  assert_non_null(strstr(ctx.error, "overlap"));
  ks_edits inside = {0};
  ks_edits_add(&a, &inside, 2, 6, "x");
  ks_edits_add(&a, &inside, 4, 4, "y");
  assert_null(ks_edits_apply(&ctx, &a, text, &inside));
  ks_edits same_start = {0};
  ks_edits_add(&a, &same_start, 2, 6, "x");
  ks_edits_add(&a, &same_start, 2, 3, "y");
  assert_null(ks_edits_apply(&ctx, &a, text, &same_start));
  ks_edits outside = {0};
  ks_edits_add(&a, &outside, 5, 500, "x");
  assert_null(ks_edits_apply(&ctx, &a, text, &outside));
  ks_edits backwards = {0};
  ks_edits_add(&a, &backwards, 6, 5, "x");
  assert_null(ks_edits_apply(&ctx, &a, text, &backwards));

  /* Adjacent replacements are fine. */
  ks_edits adjacent = {0};
  ks_edits_add(&a, &adjacent, 0, 3, "long");
  ks_edits_add(&a, &adjacent, 3, 4, "_");
  assert_string_equal(ks_edits_apply(&ctx, &a, "int i;", &adjacent), "long_i;");
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* ---- launch policies ---------------------------------------------------- */

static void expect_policy(const char *grid, const char *block, const char *smem,
                          const char *const want[7]) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_variant v = {.grid = grid, .block = block, .smem = smem};
  ks_rule_policy p;
  if (ks_rule_policy_read(&ctx, &a, &v, &p))
    fail_msg("grid '%s' block '%s': %s", grid ? grid : "", block ? block : "", ctx.error);
  const char *got[7] = {p.grid[0], p.grid[1], p.grid[2], p.block[0], p.block[1], p.block[2], p.smem};
  for (int i = 0; i < 7; i++)
    if (strcmp(got[i], want[i]))
      fail_msg("grid '%s' block '%s': component %d is '%s', expected '%s'", grid ? grid : "",
               block ? block : "", i, got[i], want[i]);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

static void policy_read_and_write(void **state) {
  (void)state;
  expect_policy(NULL, NULL, NULL,
                (const char *const[]){"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "smem"});
  expect_policy("ceil_div(n, 256)", "256", "256 * sizeof(float)",
                (const char *const[]){"ceil_div(n, 256)", "1", "1", "256", "1", "1", "256 * sizeof(float)"});
  expect_policy("dim3(ceil_div(nx, 32), ceil_div(ny, 8))", "dim3(32, 8, 1)", NULL,
                (const char *const[]){"ceil_div(nx, 32)", "ceil_div(ny, 8)", "1", "32", "8", "1", "smem"});
  expect_policy("(a, b, c)", "{16,16}", NULL,
                (const char *const[]){"a", "b", "c", "16", "16", "1", "smem"});
  /* A parenthesized scalar is not a one-element tuple; dim3(x) is. */
  expect_policy("(n + 255) / 256", "(n + 1)", NULL,
                (const char *const[]){"(n + 255) / 256", "1", "1", "(n + 1)", "1", "1", "smem"});
  expect_policy("dim3(min(grid_x, 132 * 4))", NULL, NULL,
                (const char *const[]){"min(grid_x, 132 * 4)", "1", "1", "block_x", "block_y", "block_z", "smem"});

  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_rule_policy p;
  ks_variant bad = {.grid = "dim3(a, b, c, d)"};
  assert_int_equal(ks_rule_policy_read(&ctx, &a, &bad, &p), -1);
  ks_variant empty = {.block = "dim3(a, , c)"};
  assert_int_equal(ks_rule_policy_read(&ctx, &a, &empty, &p), -1);

  /* Writing: defaults give NULL (the original's), y and z of 1 a scalar. */
  ks_variant v = {0};
  assert_int_equal(ks_rule_policy_read(&ctx, &a, &v, &p), 0);
  ks_rule_policy_write(&a, &p, &v);
  assert_null(v.grid);
  assert_null(v.block);
  assert_null(v.smem);
  p.grid[0] = "ceil_div(grid_x * block_x, 128)";
  p.block[0] = "128";
  p.block[1] = p.block[2] = "1";
  p.smem = "0";
  ks_rule_policy_write(&a, &p, &v);
  assert_string_equal(v.grid, "dim3(ceil_div(grid_x * block_x, 128), grid_y, grid_z)");
  assert_string_equal(v.block, "128");
  assert_string_equal(v.smem, "0");
  p.grid[1] = "4";
  p.grid[2] = "1";
  p.block[1] = "8";
  ks_rule_policy_write(&a, &p, &v);
  assert_string_equal(v.grid, "dim3(ceil_div(grid_x * block_x, 128), 4)");
  assert_string_equal(v.block, "dim3(128, 8)");
  /* And back. */
  ks_rule_policy q;
  assert_int_equal(ks_rule_policy_read(&ctx, &a, &v, &q), 0);
  assert_string_equal(q.grid[0], "ceil_div(grid_x * block_x, 128)");
  assert_string_equal(q.grid[1], "4");
  assert_string_equal(q.block[1], "8");

  /* Guards are added once. */
  ks_variant child = {0};
  ks_rule_require(&a, &child, "n % 4 == 0");
  ks_rule_require(&a, &child, "n%4 == 0");
  ks_rule_require(&a, &child, "aligned(x, 16)");
  assert_int_equal(child.requires.len, 2);
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* ---- variant files ------------------------------------------------------ */

static void format_round_trips(void **state) {
  (void)state;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena a = KS_ARENA_INIT;
  ks_variant v = {.source = "__global__ void saxpy_ks_variant(int n, float a, float *x, float *y) {\n"
                            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "  if (i < n) y[i] = a * x[i] + y[i];\n"
                            "}\n",
                  .kernel_name = "saxpy_ks_variant",
                  .grid = "dim3(ceil_div(n, 4 * 256), 1)",
                  .block = "256",
                  .smem = "0"};
  *ks_array_push(&a, &v.requires) = "n % 4 == 0";
  *ks_array_push(&a, &v.requires) = "aligned(x, 16)";
  const char *text = ks_variant_format(&a, &v, "block=256, vec4");
  assert_non_null(strstr(text, "techniques: block=256, vec4"));
  ks_variant back;
  bool is_template;
  if (ks_variant_parse(&ctx, "v.cu", text, "saxpy", &a, &back, &is_template))
    fail_msg("%s\n%s", ctx.error, text);
  assert_false(is_template);
  assert_string_equal(back.kernel_name, v.kernel_name);
  assert_string_equal(back.grid, v.grid);
  assert_string_equal(back.block, v.block);
  assert_string_equal(back.smem, v.smem);
  assert_int_equal(back.requires.len, 2);
  assert_string_equal(back.requires.items[0], "n % 4 == 0");
  assert_string_equal(back.requires.items[1], "aligned(x, 16)");
  assert_non_null(strstr(back.source, v.source));
  /* Formatting what was read gives the same file: the old annotation and
   * technique line are not stacked. */
  assert_string_equal(ks_variant_format(&a, &back, "block=256, vec4"), text);

  assert_string_equal(ks_variant_techniques(&a, &back), "block=256, vec4");
  assert_null(ks_variant_techniques(&a, &v));

  /* No policy, no guards, no techniques; a template kernel. */
  ks_variant t = {.source = "template <typename T>\n__global__ void k_ks_variant(T *x) { x[0] = 1; }\n",
                  .kernel_name = "k_ks_variant"};
  text = ks_variant_format(&a, &t, NULL);
  assert_null(strstr(text, "launch"));
  assert_null(strstr(text, "techniques"));
  assert_int_equal(ks_variant_parse(&ctx, "t.cu", text, "k", &a, &back, &is_template), 0);
  assert_true(is_template);
  assert_null(back.grid);
  assert_int_equal(back.requires.len, 0);
  assert_string_equal(ks_variant_format(&a, &back, NULL), text);

  /* A variant someone wrote, with a line-comment annotation inside. */
  const char *user = "// my variant\n"
                     "// kernelsmith-variant:\n"
                     "//   launch block = 128\n"
                     "__global__ void k(float *x) { x[0] = 1; }\n";
  assert_int_equal(ks_variant_parse(&ctx, "u.cu", user, "k", &a, &back, &is_template), 0);
  text = ks_variant_format(&a, &back, "x");
  assert_int_equal(ks_variant_parse(&ctx, "u2.cu", text, "k", &a, &t, &is_template), 0);
  assert_string_equal(t.block, "128");
  assert_string_equal(t.kernel_name, "k_ks_variant");
  assert_null(strstr(strstr(text, "*/"), "kernelsmith-variant"));
  assert_non_null(strstr(text, "// my variant\n"));
  ks_arena_release(&a);
  ks_ctx_release(&ctx);
}

/* ---- every rule on every kernel ----------------------------------------- */

typedef struct tally {
  char kernels[64][64];
  unsigned applied[64][32]; /* [kernel][rule] */
  size_t nkernels;
} tally;

/* A child waiting for its compile. */
typedef struct pending {
  const char *what;     /* "kernel: rule=param" */
  const ks_target *t;
  ks_compile_unit unit;
  const char *name_expression;
} pending;
typedef KS_ARRAY(pending) pendings;

typedef struct run_state {
  ks_ctx *ctx;
  ks_arena *arena;     /* everything of one directory, until its compile */
  pendings todo;
  unsigned failures;
} run_state;

static void report(run_state *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(run_state *rs, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  rs->failures++;
}

/* The child's launch and guards on every size set, and its unit queued. */
static void check_child(run_state *rs, const ks_target *t, const ks_variant *child, bool is_template,
                        const char *what) {
  ks_candidate cand;
  if (ks_target_candidate(rs->ctx, t, child, is_template, rs->arena, &cand)) {
    report(rs, "%s: its policy or guards do not resolve: %s\n%s", what, rs->ctx->error,
           ks_variant_format(rs->arena, child, what));
    return;
  }
  for (size_t i = 0; i < t->nworkloads; i++) {
    if (!cand.guards_hold[i])
      continue;
    const ks_launch_cfg *l = &cand.launches[i];
    unsigned long long threads = (unsigned long long)l->block[0] * l->block[1] * l->block[2];
    if (!threads || threads > 1024 || !l->grid[0] || !l->grid[1] || !l->grid[2])
      report(rs, "%s: size '%s' launches grid (%u, %u, %u) block (%u, %u, %u)", what,
             t->workloads[i].size_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
             l->block[2]);
  }
  pending *p = ks_array_push(rs->arena, &rs->todo);
  p->what = what;
  p->t = t;
  p->name_expression = cand.name_expression;
  p->unit = (ks_compile_unit){.name = ks_arena_printf(rs->arena, "%s.cu", what),
                              .source = ks_rules_unit(rs->arena, t, child, NULL),
                              .nnames = 1,
                              .candidate = child->source};
}

/* Applies `r` with `param`; on success checks the child and returns it. */
static bool try_rule(run_state *rs, const ks_target *t, const ks_rule_input *in, const ks_rule *r,
                     int param, const char *prefix, ks_variant *child, const char **technique) {
  ks_rule_result res = {0};
  if (r->apply(rs->ctx, in, param, rs->arena, &res)) {
    report(rs, "%s%s=%d: the rule failed: %s", prefix, r->name, param, rs->ctx->error);
    return false;
  }
  if (!res.applied) {
    if (!res.reason || !*res.reason || strchr(res.reason, '\n'))
      report(rs, "%s%s=%d: not applied, and no one-line reason", prefix, r->name, param);
    return false;
  }
  const char *what = ks_arena_printf(rs->arena, "%s%s=%d", prefix, r->name, param);
  if (!res.child.source || !res.child.kernel_name) {
    report(rs, "%s: a child without source or kernel name", what);
    return false;
  }
  if (!res.technique || !*res.technique)
    report(rs, "%s: no technique tag", what);
  check_child(rs, t, &res.child, in->is_template, what);
  *child = res.child;
  *technique = res.technique;
  return true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_directory(const char *rel, bool all_choices, bool compose, tally *tl,
                          unsigned *applied_total, unsigned *units_total) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test");
  ks_arena arena = KS_ARENA_INIT;
  run_state rs = {.ctx = &ctx, .arena = &arena};
  const char *paths[] = {ks_testdata(rel)};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  ks_scan scan;
  double t_start = now_s();
  if (ks_scan_run(&ctx, &opts, &scan))
    fail_msg("scan %s: %s", rel, ctx.error);
  double t_scanned = now_s(), t_targets = 0, t_rules = 0;
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  assert_true(nrules <= 32);
  ks_target *targets = ks_arena_alloc(&arena, (scan.kernels.len + 1) * sizeof *targets);

  for (size_t ki = 0; ki < scan.kernels.len; ki++) {
    const ks_kernel *k = &scan.kernels.items[ki];
    ks_target *t = &targets[ki];
    double t0 = now_s();
    int opened = ks_target_open_kernel(&ctx, &opts, &scan, k, &arena, t);
    t_targets += now_s() - t0;
    if (opened) {
      printf("skip %s (%s): %s\n", k->qualified_name, rel, ctx.error);
      continue;
    }
    size_t row = tl->nkernels++;
    assert_true(row < 64);
    snprintf(tl->kernels[row], sizeof tl->kernels[row], "%s", k->qualified_name);
    ks_variant seed;
    bool is_template;
    if (ks_rules_seed(&ctx, t, &arena, &seed, &is_template)) {
      /* A kernel a macro defines: the syntax tree does not find it yet. */
      if (k->macro)
        printf("NOTE: %s (defined by macro %s): no seed: %s\n", k->qualified_name, k->macro, ctx.error);
      else
        report(&rs, "%s: no seed: %s", k->qualified_name, ctx.error);
      continue;
    }
    assert_int_equal(is_template, k->is_template);
    check_child(&rs, t, &seed, is_template, ks_arena_printf(&arena, "%s:seed", k->qualified_name));
    ks_rule_input in;
    if (ks_rules_prepare(&ctx, t, &seed, is_template, &arena, &in)) {
      report(&rs, "%s: the seed does not parse: %s", k->qualified_name, ctx.error);
      continue;
    }
    ks_variant firsts[32];
    bool have_first[32] = {false};
    for (size_t ri = 0; ri < nrules; ri++) {
      const ks_rule *r = rules[ri];
      size_t nchoices = r->nchoices ? r->nchoices : 1;
      for (size_t ci = 0; ci < nchoices; ci++) {
        int param = r->nchoices ? r->choices[ci] : 0;
        ks_variant child;
        const char *technique;
        if (!try_rule(&rs, t, &in, r, param, ks_arena_printf(&arena, "%s:", k->qualified_name), &child,
                      &technique))
          continue;
        tl->applied[row][ri]++;
        (*applied_total)++;
        if (!have_first[ri]) {
          have_first[ri] = true;
          firsts[ri] = child;
        }
        if (!all_choices)
          break;
      }
    }
    if (!compose)
      continue;
    /* Two steps: each rule's first child, then every other rule's first
     * choice that applies to it. */
    for (size_t ri = 0; ri < nrules; ri++) {
      if (!have_first[ri])
        continue;
      ks_rule_input in2;
      if (ks_rules_prepare(&ctx, t, &firsts[ri], is_template, &arena, &in2)) {
        report(&rs, "%s:%s: the child does not parse: %s", k->qualified_name, rules[ri]->name, ctx.error);
        continue;
      }
      for (size_t rj = 0; rj < nrules; rj++) {
        if (rj == ri)
          continue;
        const ks_rule *r = rules[rj];
        size_t nchoices = r->nchoices ? r->nchoices : 1;
        for (size_t ci = 0; ci < nchoices; ci++) {
          ks_variant child;
          const char *technique;
          if (try_rule(&rs, t, &in2, r, r->nchoices ? r->choices[ci] : 0,
                       ks_arena_printf(&arena, "%s:%s+", k->qualified_name, rules[ri]->name), &child,
                       &technique)) {
            (*applied_total)++;
            break;
          }
        }
      }
    }
  }

  t_rules = now_s() - t_scanned - t_targets;
  /* Every distinct unit in one call: the compile service runs them in
   * parallel. Rules that change only the launch make children with their
   * parent's text: one compile covers them all. */
  size_t n = 0;
  ks_compile_unit *units = ks_arena_alloc(&arena, (rs.todo.len + 1) * sizeof *units);
  ks_compile_result *res = ks_arena_alloc(&arena, (rs.todo.len + 1) * sizeof *res);
  const char **whats = ks_arena_alloc(&arena, (rs.todo.len + 1) * sizeof *whats);
  for (size_t i = 0; i < rs.todo.len; i++) {
    const pending *p = &rs.todo.items[i];
    bool seen = false;
    for (size_t j = 0; j < n && !seen; j++)
      seen = !strcmp(units[j].source, p->unit.source) &&
             !strcmp(units[j].name_expressions[0], p->name_expression);
    if (seen)
      continue;
    units[n] = p->unit;
    units[n].name_expressions = &p->name_expression;
    whats[n++] = p->what;
  }
  ks_compiler compiler;
  if (ks_compiler_init(&ctx, &compiler, "sm_90", NULL))
    fail_msg("compiler: %s", ctx.error);
  double t_compile = now_s();
  if (n && ks_compile(&ctx, &compiler, units, n, &arena, res))
    fail_msg("compile: %s", ctx.error);
  for (size_t i = 0; i < n; i++)
    if (res[i].status != KS_COMPILE_OK)
      report(&rs, "%s does not compile: %s\n%s\n--- variant ---\n%s", whats[i], res[i].reason,
             res[i].log ? res[i].log : "", units[i].candidate);
  printf("%s: %zu children, %zu distinct units compiled; seconds: scan %.1f, targets %.1f, rules %.1f, compile %.1f\n", rel, rs.todo.len, n,
         t_scanned - t_start, t_targets, t_rules, now_s() - t_compile);
  *units_total += (unsigned)n;
  ks_compiler_release(&compiler);
  for (size_t ki = 0; ki < scan.kernels.len; ki++)
    ks_target_close(&targets[ki]);
  ks_scan_release(&scan);
  unsigned failures = rs.failures;
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  if (failures)
    fail_msg("%u failures in %s (listed above)", failures, rel);
}

static void print_tally(const tally *tl) {
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  printf("\nchoices applied, per kernel (rows) and rule (columns):\n%-30s", "");
  for (size_t r = 0; r < nrules; r++)
    printf(" %6.6s", rules[r]->name);
  printf("\n");
  for (size_t k = 0; k < tl->nkernels; k++) {
    printf("%-30.30s", tl->kernels[k]);
    for (size_t r = 0; r < nrules; r++)
      printf(" %6u", tl->applied[k][r]);
    printf("\n");
  }
}

static void every_rule_on_the_apps(void **state) {
  (void)state;
  static tally apps;
  tally *tl = &apps;
  unsigned applied = 0, units = 0;
  run_directory("apps", true, true, tl, &applied, &units);
  print_tally(tl);
  printf("apps: %u rewrites applied, %u units compiled\n", applied, units);
  /* The launch rules apply somewhere, or the patterns are not being seen. */
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  for (size_t r = 0; r < nrules; r++) {
    if (strcmp(rules[r]->name, "block") && strcmp(rules[r]->name, "grid_stride") &&
        strcmp(rules[r]->name, "launch_bounds"))
      continue;
    unsigned sum = 0;
    for (size_t k = 0; k < tl->nkernels; k++)
      sum += tl->applied[k][r];
    if (!sum)
      fail_msg("rule %s applied to no app kernel", rules[r]->name);
  }
}

static void every_rule_on_the_frontend_fixtures(void **state) {
  (void)state;
  static tally fixtures;
  unsigned applied = 0, units = 0;
  run_directory("frontend", false, false, &fixtures, &applied, &units);
  print_tally(&fixtures);
}

/* ---- the launch rules' edge cases (testdata/rules/launch.cu) ---------- */

typedef struct fixture {
  ks_ctx ctx;
  ks_arena arena;
  ks_scan_options opts;
  const char *paths[1];
  ks_scan scan;
} fixture;

/* Applies `rule=param` to the seed of `kernel`; the child compiles where it
 * applies. */
static ks_rule_result apply_to(fixture *f, const char *kernel, const char *rule, int param) {
  const ks_kernel *k;
  if (ks_scan_lookup(&f->ctx, &f->scan, kernel, &k))
    fail_msg("%s", f->ctx.error);
  ks_target *t = ks_arena_alloc(&f->arena, sizeof *t);
  ks_variant seed;
  bool is_template;
  ks_rule_input in;
  if (ks_target_open_kernel(&f->ctx, &f->opts, &f->scan, k, &f->arena, t) ||
      ks_rules_seed(&f->ctx, t, &f->arena, &seed, &is_template) ||
      ks_rules_prepare(&f->ctx, t, &seed, is_template, &f->arena, &in))
    fail_msg("%s: %s", kernel, f->ctx.error);
  ks_rule_result res = {0};
  const ks_rule *r = ks_rule_find(rule);
  assert_non_null(r);
  assert_int_equal(r->apply(&f->ctx, &in, param, &f->arena, &res), 0);
  if (res.applied) {
    ks_candidate cand;
    if (ks_target_candidate(&f->ctx, t, &res.child, is_template, &f->arena, &cand))
      fail_msg("%s %s=%d: %s", kernel, rule, param, f->ctx.error);
    assert_true(cand.guards_hold[0] || cand.guards_hold[1]);
  }
  return res;
}

static bool has_guard(const ks_variant *v, const char *guard) {
  for (size_t i = 0; i < v->requires.len; i++)
    if (!strcmp(v->requires.items[i], guard))
      return true;
  return false;
}

static size_t count(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void launch_rules_edge_cases(void **state) {
  (void)state;
  fixture *f = calloc(1, sizeof *f);
  ks_ctx_init(&f->ctx, "test");
  f->paths[0] = ks_testdata("rules/launch.cu");
  f->opts = (ks_scan_options){.paths = f->paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&f->ctx, &f->opts, &f->scan))
    fail_msg("%s", f->ctx.error);

  /* No bounds check: the new grid must divide the old one exactly. */
  ks_rule_result r = apply_to(f, "exact_grid", "block", 128);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "(grid_x * block_x) % 128 == 0"));
  assert_string_equal(r.child.block, "128");
  assert_string_equal(r.technique, "block=128");
  r = apply_to(f, "exact_grid", "block", 32008);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "2-D"));
  r = apply_to(f, "exact_grid", "grid_stride", 4);
  assert_false(r.applied);

  /* Early return, a return in the body, an unsigned index. */
  r = apply_to(f, "early_return", "grid_stride", 1);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "for (unsigned int i = threadIdx.x + blockDim.x * blockIdx.x; "
                                         "i < n; i += blockDim.x * gridDim.x) {"));
  assert_int_equal(count(r.child.source, "return;"), 0);
  assert_int_equal(count(r.child.source, "continue;"), 1);
  assert_string_equal(r.child.grid, "dim3(min(grid_x, 132 * 1), grid_y, grid_z)");
  assert_true(has_guard(&r.child, "n + min(grid_x, 132 * 1) * block_x <= 4294967296"));
  r = apply_to(f, "early_return", "block", 128);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "already 128"));

  /* An existing __launch_bounds__ is replaced, not doubled. */
  r = apply_to(f, "early_return", "launch_bounds", 2);
  assert_true(r.applied);
  assert_int_equal(count(r.child.source, "__launch_bounds__"), 1);
  assert_non_null(strstr(r.child.source, "__launch_bounds__(128, 2)"));
  assert_true(has_guard(&r.child, "block_x * block_y * block_z == 128"));
  r = apply_to(f, "early_return", "launch_bounds", 0);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "already has __launch_bounds__(128)"));

  /* A bound the guards cannot evaluate: the loop counter is widened. */
  r = apply_to(f, "local_bound", "grid_stride", 2);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "for (long long i = "));
  assert_int_equal(r.child.requires.len, 0);

  /* One thread per block does the work: the block size is in the result. */
  r = apply_to(f, "per_block", "block", 128);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "singles out a thread of each block"));

  ks_scan_release(&f->scan);
  ks_arena_release(&f->arena);
  ks_ctx_release(&f->ctx);
  free(f);
}

static void every_rule_on_the_edge_cases(void **state) {
  (void)state;
  static tally edge;
  unsigned applied = 0, units = 0;
  run_directory("rules/launch.cu", true, true, &edge, &applied, &units);
  print_tally(&edge);
}

/* testdata/rules/loops: kernels in older styles (macro sizes, C89 loops,
 * sums straight into global memory) that scalar_replace and
 * hoist_invariant apply to; every rule and every two-step composition. */
static void every_rule_on_the_loop_kernels(void **state) {
  (void)state;
  static tally loops;
  unsigned applied = 0, units = 0;
  run_directory("rules/loops", true, true, &loops, &applied, &units);
  print_tally(&loops);
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  for (size_t r = 0; r < nrules; r++) {
    if (strcmp(rules[r]->name, "scalar_replace") && strcmp(rules[r]->name, "hoist_invariant"))
      continue;
    unsigned sum = 0;
    for (size_t k = 0; k < loops.nkernels; k++)
      sum += loops.applied[k][r];
    if (!sum)
      fail_msg("rule %s applied to no kernel of testdata/rules/loops", rules[r]->name);
  }
}

/* ---- old-style twins (testdata/rules/meaning/old_style.cu) ----------- */

/* Kernels written as older code is (C89 loops with the variable declared
 * outside, `j += 1`, `<=`, `!=`, sizes as macros naming macros, const
 * locals, enumerators, 2-D blocks) get the rewrites their tidy twins get,
 * with guards folded to what the runtime can evaluate. */
static void old_style_twins(void **state) {
  (void)state;
  fixture *f = calloc(1, sizeof *f);
  ks_ctx_init(&f->ctx, "test");
  f->paths[0] = ks_testdata("rules/meaning/old_style.cu");
  f->opts = (ks_scan_options){.paths = f->paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&f->ctx, &f->opts, &f->scan))
    fail_msg("%s", f->ctx.error);

  /* warp_rows: `int j; for (j = 0; j < N_BOUND; j += 1)` */
  ks_rule_result r = apply_to(f, "mv_rows_c89", "warp_rows", 128);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "for (j = ks_lane; j < N_BOUND; j += 32)"));
  assert_non_null(strstr(r.child.source, "__shfl_xor_sync(0xffffffffu, t, ks_off)"));
  /* `<=` and `j = j + 1`, the check as `NX <= i` with an early return */
  r = apply_to(f, "mvt_cols_c89", "warp_rows", 256);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "for (j = ks_lane; j <= NY - 1; j += 32)"));
  /* `NX != j` becomes `<` (a stride of 32 steps past the end) */
  r = apply_to(f, "mv_rows_ne", "warp_rows", 128);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "for (j = ks_lane; j < (NX); j += 32)"));
  /* a column variable read after its loop: each lane would have its own */
  r = apply_to(f, "mv_rows_used_after", "warp_rows", 128);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "'j' is read after its loop"));

  /* coarsen and vectorize: the guards get the folded bound, never a
   * macro or a local the runtime cannot see */
  r = apply_to(f, "axpb_macro_len", "coarsen", 2);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= 1048576"));
  r = apply_to(f, "axpb_macro_len", "vectorize", 16);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= 1048576"));
  assert_non_null(strstr(r.child.source, "ks_base < (LEN_BOUND) && (LEN_BOUND) - ks_base >= 4"));
  r = apply_to(f, "halve_image", "coarsen", 4);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_y * block_y >= 768"));
  assert_string_equal(r.child.grid, "dim3(grid_x, ceil_div(grid_y, 4), grid_z)");
  /* vectorize_2d: the rows' bound W - 1 folded for the guard, the code
   * keeping the user's macros */
  r = apply_to(f, "blur_rows_macro", "vectorize_2d", 4);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= 1023"));
  assert_true(has_guard(&r.child, "disjoint(src, dst)"));
  assert_non_null(strstr(r.child.source, "col < W - 1"));
  for (size_t i = 0; i < r.child.requires.len; i++)
    assert_null(strstr(r.child.requires.items[i], "W"));
  r = apply_to(f, "bump_const_local", "coarsen", 2);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= (nrow * ncol)"));
  r = apply_to(f, "bump_const_local", "vectorize", 16);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= (nrow * ncol)"));
  r = apply_to(f, "clip_enum_len", "coarsen", 8);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "grid_x * block_x >= 196608"));
  r = apply_to(f, "clip_enum_len", "vectorize", 16);
  assert_true(r.applied);
  for (size_t i = 0; i < r.child.requires.len; i++) {
    assert_null(strstr(r.child.requires.items[i], "CLIP_COUNT"));
    assert_null(strstr(r.child.requires.items[i], "LEN"));
  }

  /* Rodinia's index through aliases, the block size a macro: coarsen and
   * vectorize apply, requiring the block they assume */
  r = apply_to(f, "extract_alias", "coarsen", 2);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 512"));
  assert_non_null(strstr(r.child.source, "int ei = (bx * NUMBER_THREADS) + tx + ks_k * gridDim.x * blockDim.x;"));
  r = apply_to(f, "extract_alias", "vectorize", 16);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 512"));
  assert_true(has_guard(&r.child, "grid_x * block_x >= ne"));
  assert_string_equal(r.child.grid, "dim3(ceil_div(grid_x, 4), grid_y, grid_z)");

  /* block and grid_stride on the same index: the constant becomes
   * blockDim.x (block), or stays with the launch's block required
   * (grid_stride); inside a macro's expansion it cannot be edited */
  r = apply_to(f, "extract_alias", "block", 64);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 512"));
  assert_non_null(strstr(r.child.source, "int ei = (bx * blockDim.x) + tx;"));
  r = apply_to(f, "extract_alias", "grid_stride", 1);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 512"));
  r = apply_to(f, "scale_macro_block", "block", 128);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 256"));
  assert_string_equal(r.child.block, "128");
  assert_non_null(strstr(r.child.source, "int i = blockIdx.x * blockDim.x + threadIdx.x;"));
  r = apply_to(f, "scale_macro_index", "block", 128);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "comes from the macro use 'GLOBAL_ID(SCALE_BLOCK)'"));
  r = apply_to(f, "scale_macro_index", "grid_stride", 1);
  assert_true(r.applied);
  assert_true(has_guard(&r.child, "block_x == 256"));
  r = apply_to(f, "scale_first_half", "block", 128);
  assert_false(r.applied);
  assert_non_null(strstr(r.reason, "it uses threadIdx.x outside its global index"));
  r = apply_to(f, "scale_first_half", "grid_stride", 1);
  assert_false(r.applied);

  /* unroll: a full unroll of `for (t = 0; t <= TAPS - 1; t = t + 1)` */
  r = apply_to(f, "fir_c89", "unroll", 0);
  assert_true(r.applied);
  assert_non_null(strstr(r.child.source, "#pragma unroll\n        for (t = 0; t <= TAPS - 1; t = t + 1)"));
  r = apply_to(f, "mv_rows_c89", "unroll", 0);
  assert_true(r.applied);
  ks_scan_release(&f->scan);
  ks_arena_release(&f->arena);
  ks_ctx_release(&f->ctx);
  free(f);
}

/* Every rule with every choice on them, every child compiled by NVRTC
 * (compositions are the apps' business: on this machine's budget they
 * would double the test's time). */
static void every_rule_on_the_old_style_twins(void **state) {
  (void)state;
  static tally twins;
  unsigned applied = 0, units = 0;
  run_directory("rules/meaning", true, false, &twins, &applied, &units);
  print_tally(&twins);
  size_t nrules;
  const ks_rule *const *rules = ks_rules_all(&nrules);
  static const char *const want[] = {"warp_rows", "coarsen", "vectorize", "unroll"};
  for (size_t w = 0; w < sizeof want / sizeof *want; w++)
    for (size_t ri = 0; ri < nrules; ri++) {
      if (strcmp(rules[ri]->name, want[w]))
        continue;
      unsigned sum = 0;
      for (size_t k = 0; k < twins.nkernels; k++)
        sum += twins.applied[k][ri];
      if (!sum)
        fail_msg("rule %s applied to no old-style kernel", want[w]);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(edits_apply_in_order),
      cmocka_unit_test(policy_read_and_write),
      cmocka_unit_test(format_round_trips),
      cmocka_unit_test(launch_rules_edge_cases),
      cmocka_unit_test(every_rule_on_the_edge_cases),
      cmocka_unit_test(every_rule_on_the_loop_kernels),
      cmocka_unit_test(old_style_twins),
      cmocka_unit_test(every_rule_on_the_old_style_twins),
      cmocka_unit_test(every_rule_on_the_apps),
      cmocka_unit_test(every_rule_on_the_frontend_fixtures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
