/* The scan on testdata/frontend: one test per construct a real code base
 * throws at it (templates, macros, overloads, headers, extern "C",
 * namespaces, lambdas, dim3, function pointers, unity builds, broken files).
 * The whole tree is scanned once; each test asserts on the result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ks_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ks_scan.h"

static ks_ctx ctx;
static ks_scan scan;

static int setup(void **state) {
  ks_ctx_init(&ctx, "test_scan");
  ctx.verbosity = KS_LOG_ERROR;
  const char *const paths[] = {ks_testdata("frontend")};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &opts, &scan)) {
    fprintf(stderr, "scan failed: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  ks_scan_release(&scan);
  ks_ctx_release(&ctx);
  return 0;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

static const ks_kernel *kernel(const char *signature) {
  for (size_t i = 0; i < scan.kernels.len; i++)
    if (!strcmp(scan.kernels.items[i].signature, signature))
      return &scan.kernels.items[i];
  fail_msg("no kernel %s", signature);
  return NULL;
}

static size_t count_kernels(const char *qualified_name) {
  size_t n = 0;
  for (size_t i = 0; i < scan.kernels.len; i++)
    n += !strcmp(scan.kernels.items[i].qualified_name, qualified_name);
  return n;
}

static const ks_launch *launch(const char *file, unsigned line) {
  for (size_t i = 0; i < scan.launches.len; i++) {
    const ks_launch *l = &scan.launches.items[i];
    if (ends_with(l->loc.file, file) && l->loc.line == line)
      return l;
  }
  fail_msg("no launch at %s:%u", file, line);
  return NULL;
}

static const ks_kernel *launched(const ks_launch *l) {
  for (size_t i = 0; i < scan.kernels.len; i++)
    if (l->kernel_usr && !strcmp(scan.kernels.items[i].usr, l->kernel_usr))
      return &scan.kernels.items[i];
  return NULL;
}

static const ks_scanned_file *file(const char *name) {
  for (size_t i = 0; i < scan.files.len; i++)
    if (ends_with(scan.files.items[i].path, name))
      return &scan.files.items[i];
  fail_msg("no file %s", name);
  return NULL;
}

static void templates_and_host_launchers(void **state) {
  const ks_kernel *k = kernel("scale(T *__restrict, const T *, T, int)");
  assert_true(k->is_template);
  assert_int_equal(k->tparams.len, 2);
  assert_string_equal(k->tparams.items[1].name, "BLOCK");
  assert_string_equal(k->tparams.items[1].default_arg, "256");
  assert_string_equal(k->max_threads, "BLOCK");
  assert_int_equal(k->static_smem, -1); /* T[BLOCK] depends on T and BLOCK */
  assert_true(k->params.items[0].is_restrict);
  assert_true(k->params.items[1].pointee_const);
  assert_int_equal(k->params.items[2].kind, KS_PARAM_DEPENDENT);
  assert_int_equal(count_kernels("scale"), 1); /* instantiations are not kernels */

  const ks_launch *direct = launch("templates.cu", 20);
  assert_ptr_equal(launched(direct), k);
  assert_false(direct->template_dependent);
  assert_int_equal(direct->template_args.len, 2); /* the default filled in */
  assert_string_equal(direct->template_args.items[0].value, "float");
  assert_string_equal(direct->template_args.items[1].value, "256");

  const ks_launch *dep = launch("templates.cu", 16);
  assert_ptr_equal(launched(dep), k);
  assert_true(dep->template_dependent);
  assert_true(dep->in_template);
  assert_string_equal(dep->enclosing, "launch_scale");
  assert_string_equal(dep->stream, "stream");
  assert_int_equal(dep->via_instantiations.len, 2);
  assert_string_equal(dep->via_instantiations.items[0].items[0].value, "float");
  assert_string_equal(dep->via_instantiations.items[0].items[1].value, "128");
  assert_string_equal(dep->via_instantiations.items[1].items[0].value, "double");
  assert_int_equal(k->instantiations.len, 3);
}

static void macros_in_configurations(void **state) {
  const ks_launch *plain = launch("macros.cu", 22);
  assert_string_equal(plain->grid, "GRID_FOR(n)");
  assert_string_equal(plain->block, "BLOCK_SIZE");
  assert_null(plain->macro);
  assert_null(plain->smem);

  const ks_launch *whole = launch("macros.cu", 23);
  assert_string_equal(whole->macro, "LAUNCH_UNARY");
  assert_string_equal(whole->callee, "negate");
  assert_string_equal(whole->grid, "GRID_FOR(n)");
  assert_string_equal(whole->block, "BLOCK_SIZE");
  assert_int_equal(whole->args.len, 2);
  assert_string_equal(whole->args.items[0], "x");
  assert_string_equal(launched(whole)->name, "negate");

  const ks_launch *cfg = launch("macros.cu", 24);
  assert_string_equal(cfg->macro, "CFG");
  assert_string_equal(cfg->grid, "GRID_FOR(n)");
  assert_string_equal(cfg->block, "BLOCK_SIZE");
}

static void macro_generated_kernels(void **state) {
  const ks_kernel *sq = kernel("square(float *, int)");
  const ks_kernel *neg = kernel("negate(float *, int)");
  assert_string_equal(sq->macro, "DEFINE_UNARY");
  assert_int_equal(sq->loc.line, 16);
  assert_int_equal(neg->loc.line, 17);
  assert_int_equal(sq->launches.len, 2);
  assert_int_equal(neg->launches.len, 1);
}

static void overloads_resolve_per_launch(void **state) {
  const ks_kernel *f = kernel("fill(float *, float, int)");
  const ks_kernel *i = kernel("fill(int *, int, int)");
  const ks_kernel *d = kernel("fill(double *, int)");
  assert_ptr_equal(launched(launch("overloads.cu", 20)), i);
  assert_ptr_equal(launched(launch("overloads.cu", 21)), f);
  assert_ptr_equal(launched(launch("overloads.cu", 22)), d);
  assert_int_equal(f->launches.len, 1);
}

static void header_namespace_extern_c(void **state) {
  const ks_kernel *relu = kernel("ks_test::detail::relu6(float *, int)");
  assert_true(relu->in_header);
  assert_int_equal(relu->callees.len, 2);
  assert_string_equal(relu->callees.items[0].name, "ks_test::detail::relu_clamped");
  assert_int_equal(relu->callees.items[1].depth, 2);
  const ks_kernel *copy = kernel("c_linkage_copy(float *, const float *, int)");
  assert_true(copy->is_extern_c);
  assert_string_equal(copy->qualified_name, "c_linkage_copy");
  /* found once although headers.cu and the header itself are both parsed */
  assert_int_equal(count_kernels("ks_test::detail::relu6"), 1);

  const ks_launch *l = launch("headers.cu", 7);
  assert_string_equal(l->grid, "grid");
  assert_string_equal(l->block, "block");
  assert_string_equal(l->smem, "0");
  assert_string_equal(l->stream, "s");
  const ks_launch *l2 = launch("headers.cu", 8);
  assert_string_equal(l2->grid, "dim3(132 * 4)");
  assert_string_equal(l2->block, "dim3(256, 1, 1)");
}

static void lambdas_and_methods(void **state) {
  const ks_kernel *k = kernel("block_sum(const float *, float *, int)");
  assert_true(k->dynamic_smem);
  assert_int_equal(k->static_smem, 0);
  const ks_launch *in_method = launch("lambdas.cu", 20);
  assert_true(in_method->in_lambda);
  assert_string_equal(in_method->enclosing, "Reducer::run");
  assert_string_equal(in_method->smem, "t * sizeof(float)");
  const ks_launch *in_fn = launch("lambdas.cu", 27);
  assert_true(in_fn->in_lambda);
  assert_string_equal(in_fn->enclosing, "reduce_twice");
  bool atomic = false;
  for (size_t i = 0; i < k->builtins.len; i++)
    atomic |= !strcmp(k->builtins.items[i], "atomicAdd");
  assert_true(atomic);
}

static void function_pointers_and_runtime_api(void **state) {
  const ks_launch *ternary = launch("pointers.cu", 26);
  assert_int_equal(ternary->resolution, KS_RESOLVED_POINTER);
  assert_int_equal(ternary->candidates.len, 2);
  const ks_launch *sw = launch("pointers.cu", 36);
  assert_int_equal(sw->resolution, KS_RESOLVED_POINTER);
  assert_int_equal(sw->candidates.len, 3);
  assert_string_equal(sw->candidates.items[2].template_args.items[0].value, "4");
  const ks_launch *param = launch("pointers.cu", 40);
  assert_int_equal(param->resolution, KS_UNRESOLVED);
  assert_non_null(strstr(param->note, "parameter 'kernel'"));
  const ks_launch *api = launch("pointers.cu", 42);
  assert_int_equal(api->kind, KS_LAUNCH_RUNTIME_API);
  assert_string_equal(api->api, "cudaLaunchKernel");
  assert_string_equal(launched(api)->name, "add_one");
  assert_string_equal(api->grid, "dim3(1)");
  assert_string_equal(api->stream, "nullptr");
  const ks_kernel *unrolled = kernel("add_unrolled(float *, int)");
  assert_int_equal(unrolled->instantiations.len, 3);
}

static void unity_build_reports_once(void **state) {
  assert_int_equal(count_kernels("unity_kernel"), 1);
  const ks_kernel *k = kernel("unity_kernel(int *, int)");
  assert_true(ends_with(k->loc.file, "included_impl.cu"));
  assert_int_equal(k->launches.len, 1);
}

/* A .cu fragment that uses its includer's typedef and macro (Rodinia's
 * style): one kernel, with the includer's types, and the fragment's own
 * parse set aside rather than reported with errors. */
static void fragment_read_in_its_includer(void **state) {
  (void)state;
  assert_int_equal(count_kernels("srad_scale"), 1);
  const ks_kernel *k = kernel("srad_scale(long, fp *)");
  assert_true(ends_with(k->loc.file, "fragments/scale_kernel.cu"));
  assert_true(k->in_header);
  assert_int_equal(k->launches.len, 1);
  const ks_scanned_file *f = file("fragments/scale_kernel.cu");
  assert_int_equal(f->status, KS_FILE_OK);
  assert_int_equal(f->errors, 0);
  assert_non_null(f->included_by);
  assert_true(ends_with(f->included_by, "fragments.cu"));
}

static void broken_file_still_scanned(void **state) {
  const ks_scanned_file *f = file("broken.cu");
  assert_int_equal(f->status, KS_FILE_ERRORS);
  assert_true(f->diags.len >= 1);
  assert_int_equal(f->diags.items[0].loc.line, 6);
  kernel("survives(float *)");
  assert_int_equal(file("overloads.cu")->status, KS_FILE_OK);
}

static void heavy_system_headers(void **state) {
  /* cooperative groups, CUB and bf16 from CUDA 13 under clang 16 */
  kernel("row_sum_bf16(const __nv_bfloat16 *, float *, int)");
  const ks_kernel *k = kernel("warp_max(const float *, float *, int)");
  assert_int_equal(k->launches.len, 1);
  assert_int_equal(file("system_headers.cu")->status, KS_FILE_OK);
}

static void parse_failure_is_contained(void **state) {
  /* The first parse fails (fault injection); the other files still scan. */
  ks_ctx c;
  ks_ctx_init(&c, "test_scan");
  c.verbosity = KS_LOG_ERROR;
  assert_int_equal(ks_ctx_set_faults(&c, "parse:1"), 0);
  const char *const paths[] = {ks_testdata("frontend/overloads.cu"),
                               ks_testdata("frontend/macros.cu")};
  ks_scan_options opts = {.paths = paths, .npaths = 2, .no_compdb = true, .jobs = 1};
  ks_scan s;
  assert_int_equal(ks_scan_run(&c, &opts, &s), 0);
  assert_int_equal(s.files.len, 2);
  int failed = 0, ok = 0;
  for (size_t i = 0; i < s.files.len; i++) {
    failed += s.files.items[i].status == KS_FILE_FAILED;
    ok += s.files.items[i].status == KS_FILE_OK;
  }
  assert_int_equal(failed, 1);
  assert_int_equal(ok, 1);
  assert_true(s.kernels.len >= 2);
  ks_scan_release(&s);
  ks_ctx_release(&c);
}

static void missing_path_is_an_error(void **state) {
  ks_ctx c;
  ks_ctx_init(&c, "test_scan");
  static const char *const paths[] = {"/nonexistent/kernels"};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  ks_scan s;
  assert_int_equal(ks_scan_run(&c, &opts, &s), -1);
  assert_non_null(strstr(c.error, "/nonexistent/kernels"));
  ks_scan_release(&s);
  ks_ctx_release(&c);
}

/* A source the scan cannot read is an error that says so, not a parse
 * failure or "no kernels". Permissions do not apply to root, so chmod 000
 * is tried only as another user; the fault site `read` runs the same path
 * everywhere (CI may run as root). */
static void unreadable_source_is_named(void **state) {
  char dir[] = "/tmp/ks-unreadable-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char file[sizeof dir + 16], other[sizeof dir + 16];
  snprintf(file, sizeof file, "%s/b.cu", dir);
  snprintf(other, sizeof other, "%s/a.cu", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fputs("__global__ void k(float *x) { x[0] = 1; }\n", f);
  fclose(f);
  f = fopen(other, "w");
  assert_non_null(f);
  fputs("__global__ void j(float *x) { x[0] = 2; }\n", f);
  fclose(f);
  char *real = realpath(dir, NULL);
  assert_non_null(real);
  char want[PATH_MAX + 64];
  const char *const paths[] = {dir};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true, .jobs = 1};
  ks_ctx c;
  ks_scan s;

  /* The second source in walk order (b.cu), by fault injection. */
  ks_ctx_init(&c, "test_scan");
  c.verbosity = KS_LOG_ERROR;
  assert_int_equal(ks_ctx_set_faults(&c, "read:2"), 0);
  assert_int_equal(ks_scan_run(&c, &opts, &s), -1);
  snprintf(want, sizeof want, "%s/b.cu: cannot read: Permission denied", real);
  assert_string_equal(c.error, want);
  ks_scan_release(&s);
  ks_ctx_release(&c);

  if (geteuid() == 0) {
    fprintf(stderr, "unreadable_source_is_named: running as root, where chmod 000 does not "
                    "stop a read: only the fault-injected read was checked\n");
  } else {
    assert_int_equal(chmod(file, 0), 0);
    ks_ctx_init(&c, "test_scan");
    c.verbosity = KS_LOG_ERROR;
    assert_int_equal(ks_scan_run(&c, &opts, &s), -1);
    assert_string_equal(c.error, want);
    ks_scan_release(&s);
    ks_ctx_release(&c);
    chmod(file, 0644);
  }
  free(real);
  unlink(file);
  unlink(other);
  rmdir(dir);
}

static void device_side_launch_with_rdc_flags(void **state) {
  /* Flags come from the directory's compile_commands.json (-rdc=true). */
  ks_ctx c;
  ks_ctx_init(&c, "test_scan");
  c.verbosity = KS_LOG_ERROR;
  const char *const paths[] = {ks_testdata("frontend/rdc")};
  ks_scan_options opts = {.paths = paths, .npaths = 1};
  ks_scan s;
  assert_int_equal(ks_scan_run(&c, &opts, &s), 0);
  assert_non_null(s.compile_db);
  assert_int_equal(s.files.items[0].status, KS_FILE_OK);
  assert_int_equal(s.kernels.len, 2);
  assert_int_equal(s.launches.len, 2);
  const ks_launch *from_parent = &s.launches.items[0];
  assert_true(from_parent->device_side);
  assert_string_equal(from_parent->enclosing, "parent");
  assert_string_equal(from_parent->kernel_name, "child");
  assert_false(s.launches.items[1].device_side);
  ks_scan_release(&s);
  ks_ctx_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(templates_and_host_launchers),
      cmocka_unit_test(macros_in_configurations),
      cmocka_unit_test(macro_generated_kernels),
      cmocka_unit_test(fragment_read_in_its_includer),
      cmocka_unit_test(overloads_resolve_per_launch),
      cmocka_unit_test(header_namespace_extern_c),
      cmocka_unit_test(lambdas_and_methods),
      cmocka_unit_test(function_pointers_and_runtime_api),
      cmocka_unit_test(unity_build_reports_once),
      cmocka_unit_test(broken_file_still_scanned),
      cmocka_unit_test(heavy_system_headers),
      cmocka_unit_test(parse_failure_is_contained),
      cmocka_unit_test(missing_path_is_an_error),
      cmocka_unit_test(unreadable_source_is_named),
      cmocka_unit_test(device_side_launch_with_rdc_flags),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
