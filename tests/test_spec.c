/* Specs against real kernels (frontend/spec_resolve.c, spec_site.c): every
 * test app and scanner fixture has a spec that checks and resolves; exact
 * numbers for a few; launch sites are evaluated through arguments and macros,
 * or the error says why not; checks and resolution name the field and the
 * size; variant guards. The two testdata trees are scanned once each. The
 * text side (parsing, finding) is in test_spec_text.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ks_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_buf.h"
#include "ks_specs.h"

static ks_ctx ctx;
static ks_scan apps, fixtures, sites, sites_large;
static ks_arena arena = KS_ARENA_INIT;

static int scan_tree_with(const char *rel, const char *const *args, unsigned nargs,
                          ks_scan *out) {
  const char *const paths[] = {ks_testdata(rel)};
  ks_scan_options opts = {
      .paths = paths, .npaths = 1, .no_compdb = true, .extra_args = args, .nextra = nargs};
  if (ks_scan_run(&ctx, &opts, out)) {
    fprintf(stderr, "scan of %s failed: %s\n", rel, ctx.error);
    return -1;
  }
  return 0;
}

static int scan_tree(const char *rel, ks_scan *out) { return scan_tree_with(rel, NULL, 0, out); }

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_spec");
  ctx.verbosity = KS_LOG_ERROR;
  static char include[4096];
  snprintf(include, sizeof include, "-I%s", ks_testdata("sites/include"));
  const char *const args[] = {include, "-DLARGE_DATASET"};
  return scan_tree("apps", &apps) || scan_tree("frontend", &fixtures) ||
                 scan_tree_with("sites", args, 1, &sites) ||
                 scan_tree_with("sites", args, 2, &sites_large)
             ? -1
             : 0;
}

static int teardown(void **state) {
  ks_scan_release(&apps);
  ks_scan_release(&fixtures);
  ks_scan_release(&sites);
  ks_scan_release(&sites_large);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

static const ks_kernel *kernel_in(const ks_scan *scan, const char *name) {
  for (size_t i = 0; i < scan->kernels.len; i++)
    if (ks_spec_names_kernel(name, &scan->kernels.items[i]))
      return &scan->kernels.items[i];
  fail_msg("no kernel %s", name);
  return NULL;
}

static const ks_launch *first_site(const ks_scan *scan, const ks_kernel *k) {
  return k->launches.len ? &scan->launches.items[k->launches.items[0]] : NULL;
}

/* As the spec command does: the first launch site that evaluates. */
static int resolve_any(const ks_scan *scan, const ks_spec *spec, const ks_kernel *k, size_t size,
                       ks_workload *w) {
  if (spec->grid || !k->launches.len)
    return ks_spec_resolve(&ctx, spec, k, NULL, size, &arena, w);
  for (size_t i = 0; i < k->launches.len; i++)
    if (!ks_spec_resolve(&ctx, spec, k, &scan->launches.items[k->launches.items[i]], size, &arena,
                         w))
      return 0;
  return -1;
}

static void find_spec(const ks_scan *scan, const ks_kernel *k, ks_spec *spec) {
  int rc = ks_spec_find(&ctx, scan, k, &arena, spec);
  if (rc)
    fail_msg("%s: %s", k->signature, rc > 0 ? "no spec" : ctx.error);
}

/* Every kernel of the tree: a spec that checks and resolves in every size. */
static size_t all_resolve(const ks_scan *scan) {
  size_t n = 0;
  for (size_t i = 0; i < scan->kernels.len; i++) {
    const ks_kernel *k = &scan->kernels.items[i];
    ks_spec spec;
    find_spec(scan, k, &spec);
    if (ks_spec_check(&ctx, &spec, k))
      fail_msg("%s: %s", k->signature, ctx.error);
    bool timed = false;
    for (size_t s = 0; s < spec.sizes.len; s++) {
      ks_workload w;
      if (resolve_any(scan, &spec, k, s, &w))
        fail_msg("%s: %s", k->signature, ctx.error);
      assert_int_equal(w.args.len, k->params.len);
      assert_true(w.bytes_min > 0);
      timed = timed || w.timed;
    }
    assert_true(timed);
    n++;
  }
  return n;
}

static void every_app_kernel_has_a_spec(void **state) {
  assert_int_equal(all_resolve(&apps), 14);
  /* The apps annotate their kernels; nothing comes from a sidecar. */
  for (size_t i = 0; i < apps.kernels.len; i++) {
    ks_spec spec;
    find_spec(&apps, &apps.kernels.items[i], &spec);
    assert_non_null(strstr(spec.file, ".cu"));
    assert_int_equal(spec.sizes.len, 4);
  }
}

static void every_fixture_kernel_has_a_spec(void **state) {
  assert_int_equal(all_resolve(&fixtures), fixtures.kernels.len);
  assert_true(fixtures.kernels.len >= 18);
  ks_spec spec;
  find_spec(&fixtures, kernel_in(&fixtures, "fill(int *, int, int)"), &spec);
  assert_string_equal(spec.file, "kernelsmith.kspec");
  assert_string_equal(spec.kernel, "fill(int *, int, int)");
  assert_string_equal(spec.scalars.items[0].value, "7");
}

static void saxpy_resolves_exactly(void **state) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_spec spec;
  find_spec(&apps, k, &spec);
  assert_string_equal(spec.file, "saxpy/saxpy.cu");
  assert_int_equal(spec.line, 7);
  assert_null(spec.grid);
  ks_workload w;
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 0, &arena, &w), 0);
  assert_string_equal(w.size_name, "timed");
  assert_true(w.timed);
  /* (n + 255) / 256 from the launch site, n mapped through its arguments. */
  assert_int_equal(w.launch.grid[0], 262144);
  assert_int_equal(w.launch.grid[1], 1);
  assert_int_equal(w.launch.block[0], 256);
  assert_int_equal(w.launch.smem, 0);
  assert_int_equal(w.args.len, 4);
  assert_int_equal(w.args.items[0].kind, KS_ARG_SCALAR);
  assert_int_equal(w.args.items[0].dtype, KS_DT_I32);
  assert_int_equal(w.args.items[0].value.i, 1 << 26);
  assert_int_equal(w.args.items[1].dtype, KS_DT_F32);
  assert_true(w.args.items[1].value.f == 2.5);
  assert_int_equal(w.buffers.len, 2);
  const ks_wbuffer *x = &w.buffers.items[w.args.items[2].buffer];
  const ks_wbuffer *y = &w.buffers.items[w.args.items[3].buffer];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->role, KS_ROLE_IN);
  assert_int_equal(x->dtype, KS_DT_F32);
  assert_int_equal(x->count, 1 << 26);
  assert_int_equal(x->dist, KS_DIST_UNIFORM);
  assert_true(x->a == -1 && x->b == 1);
  assert_int_equal(y->role, KS_ROLE_INOUT);
  assert_true(y->atol == 1e-6 && y->rtol == 1e-6);
  /* x read once, y read and written: 3 * 4 bytes per element. */
  assert_int_equal(w.bytes_min, 3ULL * 4 << 26);
  assert_true(w.flops == 2.0 * (1 << 26));
  /* The odd size. */
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 2, &arena, &w), 0);
  assert_string_equal(w.size_name, "odd");
  assert_int_equal(w.launch.grid[0], (12345 + 255) / 256);
  assert_int_equal(w.bytes_min, 12ULL * 12345);
  /* Without a site and without a launch line there is nothing to run. */
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w), -1);
  assert_string_equal(ctx.error, "saxpy/saxpy.cu:7: the spec needs a 'launch' line: saxpy_kernel "
                                 "has no launch site to take it from");
}

static void gelu_site_expands_macros(void **state) {
  const ks_kernel *k = kernel_in(&apps, "gelu_forward_kernel");
  ks_spec spec;
  ks_workload w;
  find_spec(&apps, k, &spec);
  assert_int_equal(spec.line, 10); /* a // annotation */
  /* (n + BLOCK_SIZE - 1) / BLOCK_SIZE with #define BLOCK_SIZE 256 */
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 1, &arena, &w), 0);
  assert_int_equal(w.launch.grid[0], 4);
  assert_int_equal(w.launch.block[0], 256);
  const ks_wbuffer *out = &w.buffers.items[0];
  assert_int_equal(out->role, KS_ROLE_OUT);
  assert_int_equal(out->count, 1000);
  assert_int_equal(w.bytes_min, 8000);
  /* SUMS_BLOCK * sizeof(int) for the shared memory of a prefix_sum kernel. */
  k = kernel_in(&apps, "scan_block_sums_kernel");
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 0, &arena, &w), 0);
  assert_int_equal(w.launch.grid[0], 1);
  assert_int_equal(w.launch.block[0], 1024);
  assert_int_equal(w.launch.smem, 4096);
}

/* The spec of `k` with its launch line taken out. */
static void without_launch(const ks_spec *in, ks_spec *out) {
  *out = *in;
  out->grid = out->block = out->smem = NULL;
}

static void sites_that_cannot_be_evaluated(void **state) {
  static const struct {
    const char *kernel, *why;
  } cases[] = {
      {"softmax_rows_kernel", "the launch site's grid 'grid' (softmax.cu:36) cannot be evaluated: "
                              "'grid' is a dim3 local variable of launch_softmax"},
      {"transpose_naive_kernel", "'grid' is a dim3 local variable of launch_transpose"},
      {"sgemm_naive_kernel", "'grid' is a dim3 local variable of launch_sgemm"},
      {"jacobi5_kernel", "'blocks' is a dim3 local variable of launch_jacobi5"},
      {"histogram_kernel", "'num_blocks' is a local variable of launch_histogram"},
      {"gemv_kernel", "'blocks' is a local variable of launch_gemv"},
      {"scan_blocks_kernel",
       "'num_blocks' is a parameter of launch_scan_blocks, not an argument of the kernel"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const ks_kernel *k = kernel_in(&apps, cases[i].kernel);
    ks_spec spec, bare;
    ks_workload w;
    find_spec(&apps, k, &spec);
    without_launch(&spec, &bare);
    assert_int_equal(ks_spec_resolve(&ctx, &bare, k, first_site(&apps, k), 0, &arena, &w), -1);
    if (!strstr(ctx.error, "the spec needs a 'launch' line") || !strstr(ctx.error, cases[i].why))
      fail_msg("%s: %s", cases[i].kernel, ctx.error);
  }
  /* A function-like macro is expanded as the preprocessor does:
   * GRID_FOR(n) is (((n) + BLOCK_SIZE - 1) / BLOCK_SIZE). */
  const ks_kernel *k = kernel_in(&fixtures, "square");
  ks_spec spec, bare;
  ks_workload w;
  find_spec(&fixtures, k, &spec);
  without_launch(&spec, &bare);
  assert_int_equal(ks_spec_resolve(&ctx, &bare, k, first_site(&fixtures, k), 0, &arena, &w), 0);
  assert_int_equal(w.launch.grid[0], (1 << 24) / 128);
  assert_int_equal(w.launch.block[0], 128);
}

/* Every size in a header, as the unit's preprocessor defined it (the
 * STANDARD_DATASET branch, not the last #define of NI in the file), dim3
 * locals and a function-like macro: the launch sites evaluate with no spec. */
static void sites_read_header_macros(void **state) {
  ks_launch_cfg cfg;
  const char *why[3];
  const ks_kernel *k = kernel_in(&sites, "scale_rows");
  int failed = ks_spec_site_launch_parts(&ctx, k, first_site(&sites, k), &arena, &cfg, why);
  if (failed)
    fail_msg("scale_rows: %s | %s", why[0] ? why[0] : "-", why[1] ? why[1] : "-");
  assert_int_equal(cfg.block[0], 32);
  assert_int_equal(cfg.block[1], 8);
  assert_int_equal(cfg.grid[0], 512 / 32);
  assert_int_equal(cfg.grid[1], 1024 / 8);
  /* With -DLARGE_DATASET on the command line, that branch. */
  k = kernel_in(&sites_large, "scale_rows");
  failed = ks_spec_site_launch_parts(&ctx, k, first_site(&sites_large, k), &arena, &cfg, why);
  if (failed)
    fail_msg("scale_rows, large: %s | %s", why[0] ? why[0] : "-", why[1] ? why[1] : "-");
  assert_int_equal(cfg.grid[0], 4096 / 32);
  assert_int_equal(cfg.grid[1], 4096 / 8);
  k = kernel_in(&sites, "add_one");
  failed = ks_spec_site_launch_parts(&ctx, k, first_site(&sites, k), &arena, &cfg, why);
  if (failed)
    fail_msg("add_one: %s | %s", why[0] ? why[0] : "-", why[1] ? why[1] : "-");
  assert_int_equal(cfg.grid[0], 1024 * 512 / 256);
  assert_int_equal(cfg.block[0], 256);
  /* The scan carries the definitions the site named, from the header. */
  const ks_launch *site = first_site(&sites, k);
  bool ceil_div = false, threads = false;
  for (size_t i = 0; i < site->macros.len; i++) {
    ceil_div |= !strcmp(site->macros.items[i].name, "CEIL_DIV") &&
                site->macros.items[i].function_like &&
                !strcmp(site->macros.items[i].params, "m, n");
    threads |= !strcmp(site->macros.items[i].name, "THREADS") &&
               !strcmp(site->macros.items[i].value, "256");
  }
  assert_true(ceil_div && threads);
  /* C-style dim3 locals, declared bare and set member by member. */
  assert_int_equal(k->launches.len, 2);
  const ks_launch *c_style = NULL;
  for (size_t i = 0; i < k->launches.len; i++) {
    const ks_launch *l = &sites.launches.items[k->launches.items[i]];
    if (l->enclosing && strstr(l->enclosing, "run_c_style"))
      c_style = l;
  }
  assert_non_null(c_style);
  failed = ks_spec_site_launch_parts(&ctx, k, c_style, &arena, &cfg, why);
  if (failed)
    fail_msg("add_one, C style: %s | %s", why[0] ? why[0] : "-", why[1] ? why[1] : "-");
  assert_int_equal(cfg.grid[0], 1024 * 512 / 256);
  assert_int_equal(cfg.grid[1], 1);
  assert_int_equal(cfg.block[0], 256);
  assert_int_equal(cfg.block[1], 1);
  /* A member set under an if: the site does not evaluate, and says why. */
  k = kernel_in(&sites, "add_two");
  failed = ks_spec_site_launch_parts(&ctx, k, first_site(&sites, k), &arena, &cfg, why);
  assert_true(failed);
  assert_non_null(why[1]);
  assert_non_null(strstr(why[1], "'threads' is a dim3 local variable of run_branchy"));
}

static void templates_take_their_instance(void **state) {
  const ks_kernel *k = kernel_in(&apps, "reduce_sum_kernel");
  ks_spec spec;
  ks_workload w;
  find_spec(&apps, k, &spec);
  assert_int_equal(spec.line, 9); /* above the template <...> line */
  assert_string_equal(ks_spec_instance(&ctx, &spec, k, &arena), "256");
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w), 0);
  assert_int_equal(w.launch.block[0], 256); /* block = blockSize */
  assert_int_equal(w.launch.grid[0], 262144);
  const ks_wbuffer *result = &w.buffers.items[1];
  assert_int_equal(result->role, KS_ROLE_INOUT);
  assert_int_equal(result->count, 1);
  assert_int_equal(result->dist, KS_DIST_CONSTANT);
  assert_true(result->a == 0 && result->rtol == 2e-4);

  k = kernel_in(&apps, "gemv_kernel");
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 2, &arena, &w), 0);
  assert_int_equal(w.buffers.items[0].dtype, KS_DT_F32); /* const T * with T = float */
  assert_int_equal(w.buffers.items[0].count, 37000);

  /* scale is launched with three instantiations: the spec picks one, and
   * the defaults fill the rest. */
  k = kernel_in(&fixtures, "scale");
  find_spec(&fixtures, k, &spec);
  assert_string_equal(ks_spec_instance(&ctx, &spec, k, &arena), "float, 256");
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&fixtures, k), 1, &arena, &w), 0);
  assert_int_equal(w.args.items[2].dtype, KS_DT_F32);      /* T alpha */
  assert_int_equal(w.launch.grid[0], (12345 + 255) / 256); /* (n + BLOCK - 1) / BLOCK */
  spec.instance = "double";
  assert_string_equal(ks_spec_instance(&ctx, &spec, k, &arena), "double, 256");
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 1, &arena, &w), -1);
  spec.instance = NULL;
  assert_int_equal(ks_spec_check(&ctx, &spec, k), -1);
  assert_string_equal(ctx.error, "kernelsmith.kspec:101: template kernel scale is launched as "
                                 "<float, 128>, <double, 512>, <float, 256>: choose one with "
                                 "'instance ...'");
}

static void buffers_and_distributions(void **state) {
  const ks_kernel *k = kernel_in(&apps, "spmv_csr_kernel");
  ks_spec spec;
  ks_workload w;
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 0, &arena, &w), 0);
  const ks_wbuffer *row_ptr = &w.buffers.items[0], *col_idx = &w.buffers.items[1];
  assert_int_equal(row_ptr->count, (1 << 21) + 1);
  assert_int_equal(row_ptr->dist, KS_DIST_SORTED_INT);
  assert_true(row_ptr->a == 0 && row_ptr->b == 16.0 * (1 << 21));
  assert_int_equal(col_idx->dist, KS_DIST_INT);
  assert_true(col_idx->b == (1 << 21) - 1);
  assert_int_equal(col_idx->atol, 0); /* inputs carry no tolerance */
  assert_int_equal(w.launch.grid[0], (1 << 21) / 128);

  k = kernel_in(&apps, "histogram_kernel");
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w), 0);
  assert_int_equal(w.args.items[2].dtype, KS_DT_U64); /* size_t n */
  assert_int_equal(w.buffers.items[0].dtype, KS_DT_U8);
  assert_int_equal(w.buffers.items[1].dtype, KS_DT_U32);
  assert_int_equal(w.buffers.items[1].dist, KS_DIST_CONSTANT);
  assert_true(w.buffers.items[1].atol == 0 && w.buffers.items[1].rtol == 0); /* integers: exact */
  assert_int_equal(w.bytes_min, (1ULL << 28) + 2 * 1024);

  k = kernel_in(&apps, "sgemm_naive_kernel");
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 2, &arena, &w), 0); /* odd */
  assert_int_equal(w.launch.grid[0], 3);                                     /* ceil_div(37, 16) */
  assert_int_equal(w.launch.grid[1], 7);                                     /* ceil_div(100, 16) */
  assert_int_equal(w.launch.block[0], 16);
  assert_int_equal(w.launch.block[1], 16);
  assert_int_equal(w.args.items[0].value.i, 100); /* M from the size set */
  assert_true(w.args.items[3].value.f == 1.25);
  assert_int_equal(w.bytes_min, 4ULL * (100 * 53 + 53 * 37 + 2 * 100 * 37));
  assert_true(w.flops == 2.0 * 100 * 37 * 53);
}

/* Parses one spec text as if written at saxpy.cu:12. */
static int parse(const char *text, ks_spec *out) {
  return ks_spec_parse(&ctx, "saxpy.cu", 12, text, &arena, out);
}

static const char *check_error(const char *text) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_spec spec;
  if (parse(text, &spec))
    fail_msg("'%s' does not parse: %s", text, ctx.error);
  if (!ks_spec_check(&ctx, &spec, k))
    return NULL;
  return ctx.error;
}

static void check_names_the_problem(void **state) {
  static const char base[] = "size timed: n = 100\nscalar a = 2\n";
  static const struct {
    const char *lines, *msg;
  } cases[] = {
      {"in x[n]", "saxpy.cu:12: parameter 'y' (float *) has no buffer: add 'in y[...]', "
                  "'out y[...]' or 'inout y[...]'"},
      {"in x[n]\ninout y[n]\nout z[n]",
       "saxpy.cu:16: buffer 'z': saxpy_kernel has no parameter 'z' (it has: n, a, x, y)"},
      {"in x[n]\ninout y[n]\nin n[4]", "saxpy.cu:16: buffer 'n': parameter 'n' is not a pointer "
                                       "(int); give it with 'scalar n = ...'"},
      {"in x: f64[n]\ninout y[n]",
       "saxpy.cu:14: buffer 'x': element type f64, but the parameter is 'float *'"},
      {"in x[n]\ninout y[n]\nscalar b = 1", "saxpy.cu:16: scalar 'b': saxpy_kernel has no "
                                            "parameter 'b' (it has: n, a, x, y)"},
      {"in x[n]\ninout y[n]\nscalar x = 1",
       "saxpy.cu:16: scalar 'x': parameter 'x' is a pointer (float *); give it a buffer line"},
      {"in x[n]\ninout y[n]\nsize small: m = 1",
       "saxpy.cu:16: size 'small': no variable 'n' (size 'timed' has one)"},
      {"in x[n]\ninout y[n]\nsize small: n = 1, m = 2",
       "saxpy.cu:16: size 'small': variable 'm' is not in size 'timed'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", base, cases[i].lines);
    const char *err = check_error(text);
    if (!err || strcmp(err, cases[i].msg))
      fail_msg("'%s':\n got  %s\n want %s", cases[i].lines, err ? err : "(no error)", cases[i].msg);
  }
  assert_string_equal(
      check_error("in x[n]\ninout y[n]\nsize small: n = 1"),
      "saxpy.cu:12: no timed size: add 'size timed: ...' (the size that is measured)");
  assert_string_equal(check_error("size timed: n = 1\nin x[n]\ninout y[n]"),
                      "saxpy.cu:12: scalar parameter 'a' (float) has no value: add 'scalar a = "
                      "...' or a size variable 'a'");
  assert_null(check_error("size timed: n = 1, a = 3\nin x[n]\ninout y[n]"));
  /* The kernel promises not to write a const pointer. */
  const ks_kernel *g = kernel_in(&apps, "gelu_forward_kernel");
  ks_spec spec;
  assert_int_equal(parse("size timed: n = 4\nout out[n]\ninout inp[n]", &spec), 0);
  assert_int_equal(ks_spec_check(&ctx, &spec, g), -1);
  assert_string_equal(ctx.error, "saxpy.cu:14: buffer 'inp': the parameter is 'const float "
                                 "*__restrict', which the kernel cannot write; make it 'in'");
  /* Records by value are refused with a clear message. */
  ks_kernel fake = *kernel_in(&apps, "saxpy_kernel");
  ks_params params = {0};
  *ks_array_push(&arena, &params) =
      (ks_param){.name = "p", .type = "Params", .kind = KS_PARAM_RECORD};
  fake.params = params;
  assert_int_equal(parse("size timed: n = 1", &spec), 0);
  assert_int_equal(ks_spec_check(&ctx, &spec, &fake), -1);
  assert_string_equal(ctx.error, "saxpy.cu:12: parameter 'p' is a struct passed by value "
                                 "(Params): specs cannot build those yet");
}

static void resolve_errors_name_the_size(void **state) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"size timed: n = 100\nsize one: n = 0 - 1\nscalar a = 2\nin x[n]\ninout y[n]\n"
       "launch grid = 1, block = 1",
       "saxpy.cu:15: size 'one': buffer 'x': length 'n': value -1 is negative"},
      {"size timed: n = 1 << 40\nscalar a = 2\nin x[n]\ninout y[n]\nlaunch grid = 1, block = 1",
       "saxpy.cu:12: size 'timed': scalar 'n' = 1099511627776 does not fit i32"},
      {"size timed: n = 100\nscalar a = 2\nin x[n / m]\ninout y[n]\nlaunch grid = 1, block = 1",
       "saxpy.cu:14: size 'timed': buffer 'x': length 'n / m': unknown name 'm' at column 5"},
      {"size timed: n = 100\nscalar a = 2\nin x[n / (n - 100)]\ninout y[n]\nlaunch grid = 1, block "
       "= 1",
       "saxpy.cu:14: size 'timed': buffer 'x': length 'n / (n - 100)': division by zero at column "
       "3"},
      {"size timed: n = 100\nscalar a = 2\nin x[n] uniform(1, 0)\ninout y[n]\nlaunch grid = 1, "
       "block = 1",
       "saxpy.cu:14: size 'timed': buffer 'x': its low bound is above its high bound"},
      {"size timed: n = 100\nscalar a = 2\nin x[n]\ninout y[n] normal(0, -1)\nlaunch grid = 1, "
       "block = 1",
       "saxpy.cu:15: size 'timed': buffer 'y': its standard deviation is negative"},
      {"size timed: n = 100\nscalar a = 2\nin x[n]\ninout y[n]\nlaunch grid = n - 100, block = 1",
       "saxpy.cu:12: size 'timed': launch: a grid dimension is 0 (grid (0, 1, 1), block (1, 1, "
       "1), from the spec's launch line)"},
      {"size timed: n = 100\nscalar a = 2\nin x[n]\ninout y[n]\nlaunch grid = 1, block = (64, 32)",
       "saxpy.cu:12: size 'timed': launch: the block exceeds 1024 threads (or 1024, 1024, 64 "
       "per dimension) (grid (1, 1, 1), block (64, 32, 1), from the spec's launch line)"},
      {"size timed: n = 100\nscalar a = 2\nin x[n]\ninout y[n]\nlaunch grid = 1, block = 1\n"
       "flops 0 - n",
       "saxpy.cu:12: size 'timed': flops is negative (-100)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ks_spec spec;
    ks_workload w;
    if (parse(cases[i].text, &spec))
      fail_msg("case %zu does not parse: %s", i, ctx.error);
    size_t size = spec.sizes.len - 1;
    if (!ks_spec_resolve(&ctx, &spec, k, NULL, size, &arena, &w))
      fail_msg("case %zu resolved", i);
    if (strcmp(ctx.error, cases[i].msg))
      fail_msg("case %zu:\n got  %s\n want %s", i, ctx.error, cases[i].msg);
  }
  /* Values too large for a double are refused, not turned into inf. */
  {
    ks_spec spec;
    ks_workload w;
    assert_int_equal(parse("size timed: n = 1\nscalar a = 1e308 * 10\nin x[n]\ninout y[n]", &spec),
                     0);
    assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 0, &arena, &w), -1);
    assert_string_equal(ctx.error, "saxpy.cu:13: size 'timed': scalar 'a' '1e308 * 10': "
                                   "floating-point overflow at column 7");
  }
  /* Integer buffers refuse values they cannot hold. */
  const ks_kernel *h = kernel_in(&apps, "histogram_kernel");
  ks_spec spec;
  ks_workload w;
  assert_int_equal(parse("size timed: n = 10\nin data[n] int(0, 256)\ninout bins[256] const(0)\n"
                         "launch grid = 1, block = 1",
                         &spec),
                   0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, h, NULL, 0, &arena, &w), -1);
  assert_string_equal(ctx.error, "saxpy.cu:13: size 'timed': buffer 'data': values from 0 to 256 "
                                 "do not fit u8");
  assert_int_equal(parse("size timed: n = 300\nin data[n] iota\ninout bins[256] const(0)\n"
                         "launch grid = 1, block = 1",
                         &spec),
                   0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, h, NULL, 0, &arena, &w), -1);
  assert_string_equal(ctx.error, "saxpy.cu:13: size 'timed': buffer 'data': values from 0 to 299 "
                                 "do not fit u8");
  /* Later expressions see earlier bindings, len_<param> included. */
  assert_int_equal(
      parse("size timed: n = 10, m = n * 3\nin data[m] uniform\ninout bins[len_data - 14] "
            "const(len_data)\nlaunch grid = 1, block = 1",
            &spec),
      0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, h, NULL, 0, &arena, &w), 0);
  assert_int_equal(w.buffers.items[0].count, 30);
  assert_true(w.buffers.items[0].a == 0 && w.buffers.items[0].b == 100); /* unsigned default */
  assert_int_equal(w.buffers.items[1].count, 16);
  assert_true(w.buffers.items[1].a == 30);
}

/* Floating types narrower than a double refuse values past their largest
 * finite one: the worker converts through float, which C leaves undefined
 * past FLT_MAX, and an infinity is no test input. */
static void narrow_floats_refuse_what_they_cannot_hold(void **state) {
  const ks_kernel *saxpy = kernel_in(&apps, "saxpy_kernel");
  const ks_kernel *bf16 = kernel_in(&fixtures, "row_sum_bf16");
  static const char sx[] = "size timed: n = 100\nscalar a = 2\ninout y[n]\n"
                           "launch grid = 1, block = 1\nin x[n] ";
  static const char bf[] = "size timed: rows = 4, cols = 8\nout out[rows]\n"
                           "launch grid = rows, block = 32\nin in[rows * cols] ";
  static const struct {
    bool is_bf16;
    const char *dist, *msg; /* msg NULL: accepted */
  } cases[] = {
      {false, "uniform(-1e300, 1e300)",
       "saxpy.cu:16: size 'timed': buffer 'x': values from -1.0000000000000001e+300 to "
       "1.0000000000000001e+300 do not fit f32 (largest 3.4028234663852886e+38)"},
      {false, "const(1e39)",
       "saxpy.cu:16: size 'timed': buffer 'x': values from 9.9999999999999994e+38 to "
       "9.9999999999999994e+38 do not fit f32 (largest 3.4028234663852886e+38)"},
      {false, "iota(3.4028234663852886e38 - 1e31)", NULL}, /* + 99 stays below FLT_MAX */
      {false, "const(-3.4028234663852886e38)", NULL},
      {false, "normal(0, 1e38)",
       "saxpy.cu:16: size 'timed': buffer 'x': normal(0, 9.9999999999999998e+37) reaches "
       "8.5800000000000001e+38 "
       "(8.58 standard deviations from its mean), which does not fit f32 (largest "
       "3.4028234663852886e+38)"},
      {false, "normal(1, 1e37)", NULL},
      {true, "const(3.39e38)",
       "saxpy.cu:15: size 'timed': buffer 'in': values from 3.3899999999999999e+38 to "
       "3.3899999999999999e+38 do not fit bf16 (largest 3.3895313892515355e+38)"},
      {true, "uniform(-3.38e38, 3.38e38)", NULL},
      {true, "normal(0, 4e37)",
       "saxpy.cu:15: size 'timed': buffer 'in': normal(0, 3.9999999999999998e+37) reaches "
       "3.4319999999999996e+38 (8.58 standard deviations from its mean), which does not fit "
       "bf16 (largest 3.3895313892515355e+38)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", cases[i].is_bf16 ? bf : sx, cases[i].dist);
    const ks_kernel *k = cases[i].is_bf16 ? bf16 : saxpy;
    ks_spec spec;
    ks_workload w;
    if (parse(text, &spec) || ks_spec_check(&ctx, &spec, k))
      fail_msg("case %zu: %s", i, ctx.error);
    int rc = ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w);
    if (!cases[i].msg) {
      if (rc)
        fail_msg("case %zu refused: %s", i, ctx.error);
      continue;
    }
    if (!rc)
      fail_msg("case %zu (%s) accepted", i, cases[i].dist);
    if (strcmp(ctx.error, cases[i].msg))
      fail_msg("case %zu:\n got  %s\n want %s", i, ctx.error, cases[i].msg);
  }
  /* A scalar parameter likewise. */
  ks_spec spec;
  ks_workload w;
  assert_int_equal(parse("size timed: n = 1\nscalar a = 1e39\nin x[n]\ninout y[n]", &spec), 0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, saxpy, first_site(&apps, saxpy), 0, &arena, &w),
                   -1);
  assert_string_equal(ctx.error, "saxpy.cu:13: size 'timed': scalar 'a' = 9.9999999999999994e+38 "
                                 "does not fit f32 (largest 3.4028234663852886e+38)");
}

/* `instance` on a kernel that is not a template would be ignored. */
/* What a spec says of an input's values (ks_wbuffer.ints_*): the
 * distributions that fill integers, where the element type holds each
 * exactly; nothing for the others. */
static void inputs_known_to_hold_integers(void **state) {
  (void)state;
  const ks_kernel *saxpy = kernel_in(&apps, "saxpy_kernel");
  const ks_kernel *bf16 = kernel_in(&fixtures, "row_sum_bf16");
  static const char sx[] = "size timed: n = 100\nscalar a = 2\ninout y[n]\n"
                           "launch grid = 1, block = 1\nin x[n] ";
  static const char bf[] = "size timed: rows = 4, cols = 8\nout out[rows]\n"
                           "launch grid = rows, block = 32\nin in[rows * cols] ";
  static const struct {
    bool is_bf16;
    const char *dist;
    bool known;
    double lo, hi;
  } cases[] = {
      {false, "int(0, 255)", true, 0, 255},
      {false, "int(-7, 4095)", true, -7, 4095},
      {false, "uniform(1, 2)", false, 0, 0},
      {false, "normal(0, 1)", false, 0, 0},
      {false, "const(3)", true, 3, 3},
      {false, "const(2.5)", false, 0, 0},
      {false, "iota", true, 0, 99},
      {false, "iota(0.5)", false, 0, 0},
      {false, "permutation", true, 0, 99},
      {false, "sorted_int(0, 1000)", true, 0, 1000},
      {false, "int(0, 16777216)", true, 0, 16777216},
      {false, "int(0, 16777217)", false, 0, 0}, /* 2^24 + 1 rounds in a float */
      {true, "int(0, 255)", true, 0, 255},
      {true, "int(0, 300)", false, 0, 0},       /* bf16 holds integers up to 256 exactly */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", cases[i].is_bf16 ? bf : sx, cases[i].dist);
    const ks_kernel *k = cases[i].is_bf16 ? bf16 : saxpy;
    ks_spec spec;
    ks_workload w;
    if (parse(text, &spec) || ks_spec_check(&ctx, &spec, k) ||
        ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w))
      fail_msg("case %zu: %s", i, ctx.error);
    const ks_wbuffer *b = NULL;
    for (size_t j = 0; j < w.buffers.len; j++)
      if (!strcmp(w.buffers.items[j].name, cases[i].is_bf16 ? "in" : "x"))
        b = &w.buffers.items[j];
    assert_non_null(b);
    if (b->ints_known != cases[i].known || b->ints_lo != cases[i].lo || b->ints_hi != cases[i].hi)
      fail_msg("case %zu (%s): known %d [%g, %g]", i, cases[i].dist, b->ints_known, b->ints_lo,
               b->ints_hi);
  }
}

static void instance_needs_a_template(void **state) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_spec spec;
  assert_int_equal(parse("size timed: n = 1, a = 2\nin x[n]\ninout y[n]\ninstance float", &spec),
                   0);
  assert_int_equal(ks_spec_check(&ctx, &spec, k), -1);
  assert_string_equal(ctx.error, "saxpy.cu:12: instance: saxpy_kernel is not a template, so "
                                 "'instance float' has nothing to instantiate; remove the line");
}

/* 20,000 size sets parse, check and resolve, each to its own numbers, the
 * timed one last. Parsing compared every name with every other, and every
 * resolve checked every set: the spec took minutes. */
static void twenty_thousand_size_sets(void **state) {
  enum { N = 20000 };
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_buf text = KS_BUF_INIT;
  for (int i = 0; i < N; i++)
    ks_buf_addf(&text, "size s%d: n = %d\n", i, 3 * i + 1);
  ks_buf_adds(&text, "size timed: n = 1 << 20\nscalar a = 2\nin x[n]\ninout y[n]\n"
                     "launch grid = ceil_div(n, 256), block = 256\n");
  ks_spec spec;
  assert_int_equal(parse(text.data, &spec), 0);
  assert_int_equal(spec.sizes.len, N + 1);
  assert_int_equal(ks_spec_check(&ctx, &spec, k), 0);
  for (size_t s = 0; s <= N; s++) {
    ks_arena a = KS_ARENA_INIT;
    ks_workload w;
    if (ks_spec_resolve(&ctx, &spec, k, NULL, s, &a, &w))
      fail_msg("size %zu: %s", s, ctx.error);
    unsigned long long n = s < N ? 3 * s + 1 : 1ULL << 20;
    assert_int_equal(w.timed, s == N);
    assert_int_equal(w.buffers.items[0].count, n);
    assert_int_equal(w.args.items[0].value.i, (long long)n);
    assert_int_equal(w.launch.grid[0], (n + 255) / 256);
    ks_arena_release(&a);
  }
  /* A name given twice among them is still found, with its first line. */
  ks_buf_adds(&text, "size s12345: n = 1\n");
  assert_int_equal(parse(text.data, &spec), -1);
  assert_string_equal(ctx.error, "saxpy.cu:20017: size 's12345': given twice (first on line "
                                 "12357)");
  ks_buf_release(&text);
}

/* A 10 KB expression is quoted by its first 200 bytes: the reason at the
 * end of the message survives (it was cut off at 2 KB). */
static void long_expressions_keep_the_reason(void **state) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_buf e = KS_BUF_INIT;
  for (int i = 0; i < 2500; i++)
    ks_buf_adds(&e, "n + ");
  ks_buf_adds(&e, "m");
  char excerpt[256];
  snprintf(excerpt, sizeof excerpt, "%.200s...", e.data);
  ks_buf text = KS_BUF_INIT, want = KS_BUF_INIT;
  ks_buf_addf(&text, "size timed: n = 100\nscalar a = 2\nin x[%s]\ninout y[n]\n"
                     "launch grid = 1, block = 1",
              e.data);
  ks_spec spec;
  ks_workload w;
  assert_int_equal(parse(text.data, &spec), 0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w), -1);
  ks_buf_addf(&want, "saxpy.cu:14: size 'timed': buffer 'x': length '%s': unknown name 'm' at "
                     "column 10001",
              excerpt);
  assert_string_equal(ctx.error, want.data);
  /* A syntax error at its end, when the spec is parsed. */
  ks_buf_reset(&text);
  ks_buf_addf(&text, "size timed: n = 100\nscalar a = 2\nin x[%s +]\ninout y[n]", e.data);
  assert_int_equal(parse(text.data, &spec), -1);
  ks_buf_reset(&want);
  ks_buf_addf(&want, "saxpy.cu:14: buffer 'x': length '%s': expected a value at the end "
                     "of the expression",
              excerpt);
  assert_string_equal(ctx.error, want.data);
  /* A variant's policy and guard likewise. */
  ks_variant v = {.kernel_name = "saxpy_v", .file = "v.cu", .grid = e.data};
  assert_int_equal(parse("size timed: n = 100\nscalar a = 2\nin x[n]\ninout y[n]\n"
                         "launch grid = 1, block = 1",
                         &spec),
                   0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, NULL, 0, &arena, &w), 0);
  ks_launch_cfg cfg;
  bool holds;
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &w, &cfg, &holds), -1);
  ks_buf_reset(&want);
  ks_buf_addf(&want, "v.cu: saxpy_v: grid '%s': unknown name 'm' at column 10001", excerpt);
  assert_string_equal(ctx.error, want.data);
  ks_buf_release(&e);
  ks_buf_release(&text);
  ks_buf_release(&want);
}

static void variant_guards(void **state) {
  const ks_kernel *k = kernel_in(&apps, "saxpy_kernel");
  ks_spec spec;
  ks_workload timed, odd;
  find_spec(&apps, k, &spec);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 0, &arena, &timed), 0);
  assert_int_equal(ks_spec_resolve(&ctx, &spec, k, first_site(&apps, k), 2, &arena, &odd), 0);
  ks_variant v = {.kernel_name = "saxpy_vec4",
                  .grid = "ceil_div(n, 4 * block_x)",
                  .block = "block_x",
                  .file = "v1.cu"};
  *ks_array_push(&arena, &v.requires) = "n % 4 == 0";
  *ks_array_push(&arena, &v.requires) = "aligned(x, 16) && ks_aligned(y, 16)";
  *ks_array_push(&arena, &v.requires) = "len_x == n && grid_y == 1 && smem == 0";
  ks_launch_cfg cfg;
  bool hold;
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), 0);
  assert_true(hold);
  assert_int_equal(cfg.grid[0], (1 << 26) / 1024);
  assert_int_equal(cfg.block[0], 256);
  /* 12345 is odd: the guard fails, the original launch stands. */
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &odd, &cfg, &hold), 0);
  assert_false(hold);
  assert_int_equal(cfg.grid[0], (12345 + 255) / 256);
  /* Buffers are 256-byte aligned: more than that is not promised. */
  v.requires.items[1] = "aligned(x, 512)";
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), 0);
  assert_false(hold);
  v.requires.items[1] = "aligned(n, 16)";
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), -1);
  assert_string_equal(ctx.error, "v1.cu: saxpy_vec4: requires 'aligned(n, 16)': aligned(): 'n' is "
                                 "not a pointer parameter of saxpy_kernel");
  v.requires.items[1] = "m > 0";
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), -1);
  assert_string_equal(ctx.error,
                      "v1.cu: saxpy_vec4: requires 'm > 0': unknown name 'm' at column 1");
  v.requires.len = 1;
  v.block = "block_x * 8";
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), -1);
  assert_string_equal(ctx.error, "v1.cu: saxpy_vec4: launch: the block exceeds 1024 threads (or "
                                 "1024, 1024, 64 per dimension) (grid (65536, 1, 1), block (2048, "
                                 "1, 1))");
  v.block = "block_x";
  v.grid = "n / (block_x - 256)";
  assert_int_equal(ks_variant_resolve(&ctx, &v, k, &timed, &cfg, &hold), -1);
  assert_string_equal(ctx.error, "v1.cu: saxpy_vec4: grid 'n / (block_x - 256)': division by zero "
                                 "at column 3");
}

static void names_designate_kernels(void **state) {
  const ks_kernel *relu = kernel_in(&fixtures, "relu6");
  assert_true(ks_spec_names_kernel("ks_test::detail::relu6", relu));
  assert_true(ks_spec_names_kernel("::ks_test::detail::relu6", relu));
  assert_true(ks_spec_names_kernel("relu6", relu));
  assert_true(ks_spec_names_kernel("relu6(float*, int)", relu));
  assert_true(ks_spec_names_kernel("ks_test::detail::relu6( float * , int )", relu));
  assert_false(ks_spec_names_kernel("detail::relu", relu));
  assert_false(ks_spec_names_kernel("relu6(float *)", relu));
  assert_false(ks_spec_names_kernel("other::relu6", relu));
  const ks_kernel *scale = kernel_in(&fixtures, "scale");
  assert_true(ks_spec_names_kernel("scale(T *__restrict__, const T *, T, int)", scale));
}

/* Random lines from spec-like pieces, and random bytes: parsing (and, when
 * it succeeds, checking and resolving) must fail cleanly or succeed, and
 * every failure must name the file. */
int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_app_kernel_has_a_spec),
      cmocka_unit_test(every_fixture_kernel_has_a_spec),
      cmocka_unit_test(saxpy_resolves_exactly),
      cmocka_unit_test(gelu_site_expands_macros),
      cmocka_unit_test(sites_that_cannot_be_evaluated),
      cmocka_unit_test(sites_read_header_macros),
      cmocka_unit_test(templates_take_their_instance),
      cmocka_unit_test(buffers_and_distributions),
      cmocka_unit_test(check_names_the_problem),
      cmocka_unit_test(resolve_errors_name_the_size),
      cmocka_unit_test(narrow_floats_refuse_what_they_cannot_hold),
      cmocka_unit_test(inputs_known_to_hold_integers),
      cmocka_unit_test(instance_needs_a_template),
      cmocka_unit_test(twenty_thousand_size_sets),
      cmocka_unit_test(long_expressions_keep_the_reason),
      cmocka_unit_test(variant_guards),
      cmocka_unit_test(names_designate_kernels),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
