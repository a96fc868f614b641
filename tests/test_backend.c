/* test_backend: the backend's device layer on any machine, GPU or not.
 *
 * What must hold everywhere: loading the driver either works or fails with
 * one sentence and leaves nothing held; NVRTC is linked, recent, and
 * compiles a kernel to an sm_90 cubin without a GPU; NVML's absence is a
 * message, not a crash. The fault sites make the "absent" paths testable on
 * a machine that does have a driver and NVML. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cuda.h"
#include "ks_nvml.h"
#include "ks_nvrtc.h"

static int setup_ctx(void **state) {
  ks_ctx *ctx = calloc(1, sizeof *ctx);
  ks_ctx_init(ctx, "test_backend");
  ctx->verbosity = KS_LOG_ERROR;
  *state = ctx;
  return 0;
}

static int teardown_ctx(void **state) {
  ks_ctx_release(*state);
  free(*state);
  return 0;
}

static bool table_is_zero(const void *table, size_t size) {
  const unsigned char *p = table;
  for (size_t i = 0; i < size; i++)
    if (p[i])
      return false;
  return true;
}

static void test_cuda_load_without_driver(void **state) {
  ks_ctx *ctx = *state;
  ks_cuda cu;
  if (!ks_cuda_load(ctx, &cu)) {
    /* A working driver: the absent path is covered by the fault test below. */
    print_message("note: a CUDA driver is present (version %d); the no-driver assertion is "
                  "skipped\n", cu.driver_version);
    assert_non_null(cu.LaunchKernel);
    assert_true(cu.driver_version > 0);
    ks_cuda_unload(&cu);
    assert_true(table_is_zero(&cu, sizeof cu));
    return;
  }
  /* Either no libcuda.so.1 at all, or one that could not start: both are a
   * single sentence naming what is wrong, and nothing is held. */
  assert_true(strstr(ctx->error, "driver") != NULL);
  assert_null(strchr(ctx->error, '\n'));
  assert_true(table_is_zero(&cu, sizeof cu));
  ks_cuda_unload(&cu); /* harmless on the zeroed table */
}

static void test_cuda_load_fault(void **state) {
  ks_ctx *ctx = *state;
  assert_int_equal(ks_ctx_set_faults(ctx, "cuda_load:1"), 0);
  ks_cuda cu;
  assert_int_equal(ks_cuda_load(ctx, &cu), -1);
  assert_string_equal(ctx->error, "no NVIDIA driver found (libcuda.so.1 could not be loaded): "
                                  "GPU commands need one");
  assert_null(cu.lib);
  ctx->nfaults = 0;
}

static void test_cuda_error_without_table(void **state) {
  (void)state;
  /* Formatting must not need a driver: messages are built on failure paths. */
  assert_string_equal(ks_cuda_error(NULL, CUDA_ERROR_NO_DEVICE), "CUresult 100");
  ks_cuda zero = {0};
  assert_string_equal(ks_cuda_error(&zero, CUDA_ERROR_INVALID_VALUE), "CUresult 1");
  ks_ctx *ctx = *state;
  assert_int_equal(ks_cuda_check(ctx, &zero, CUDA_SUCCESS, "cuMemAlloc"), 0);
  assert_int_equal(ks_cuda_check(ctx, &zero, CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"), -1);
  assert_string_equal(ctx->error, "cuMemAlloc: CUresult 2");
}

static void test_nvrtc_version(void **state) {
  (void)state;
  int major = 0, minor = -1;
  assert_int_equal(ks_nvrtc_version(&major, &minor), 0);
  assert_true(major >= 12);
  assert_true(minor >= 0);
}

static void test_nvrtc_archs(void **state) {
  ks_ctx *ctx = *state;
  int archs[64];
  int n = ks_nvrtc_archs(ctx, archs, 64);
  assert_true(n > 0 && n <= 64);
  bool has_90 = false;
  for (int i = 0; i < n; i++) {
    if (i)
      assert_true(archs[i] > archs[i - 1]);
    has_90 |= archs[i] == 90;
  }
  assert_true(has_90);
  /* A short array gets the first entries and the full count. */
  int first[2];
  assert_int_equal(ks_nvrtc_archs(ctx, first, 2), n);
  assert_int_equal(first[0], archs[0]);
}

static void test_nvrtc_smoke_sm90(void **state) {
  ks_ctx *ctx = *state;
  size_t bytes = 0;
  int rc = ks_nvrtc_smoke(ctx, "sm_90", &bytes);
  if (rc)
    fail_msg("smoke compile failed: %s", ctx->error);
  assert_true(bytes > 0);
}

static void test_nvrtc_compile_cubin_is_elf(void **state) {
  ks_ctx *ctx = *state;
  const char *options[] = {"-arch=sm_90", "-std=c++17"};
  ks_nvrtc_unit unit = {
      .source = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n",
      .name = "k.cu", .options = options, .noptions = 2};
  ks_buf cubin = KS_BUF_INIT, log = KS_BUF_INIT;
  assert_int_equal(ks_nvrtc_compile(ctx, &unit, &cubin, &log), 0);
  assert_true(cubin.len > 4);
  assert_memory_equal(cubin.data, "\177ELF", 4);
  ks_buf_release(&cubin);
  ks_buf_release(&log);
}

static void test_nvrtc_compile_error(void **state) {
  ks_ctx *ctx = *state;
  const char *options[] = {"-arch=sm_90"};
  ks_nvrtc_unit unit = {.source = "__global__ void k(int *x) { x[0] = undeclared; }\n",
                        .name = "bad.cu", .options = options, .noptions = 1};
  ks_buf cubin = KS_BUF_INIT, log = KS_BUF_INIT;
  assert_int_equal(ks_nvrtc_compile(ctx, &unit, &cubin, &log), -1);
  assert_int_equal(cubin.len, 0);
  assert_true(strstr(log.data, "undeclared") != NULL);
  /* The message names the unit and quotes the error line, on one line. */
  assert_true(strstr(ctx->error, "bad.cu") == ctx->error);
  assert_true(strstr(ctx->error, "undeclared") != NULL);
  assert_null(strchr(ctx->error, '\n'));
  ks_buf_release(&cubin);
  ks_buf_release(&log);
}

static void test_nvrtc_ptx_only_is_an_error(void **state) {
  ks_ctx *ctx = *state;
  size_t bytes = 1;
  assert_int_equal(ks_nvrtc_smoke(ctx, "compute_90", &bytes), -1);
  assert_int_equal(bytes, 0);
  assert_true(strstr(ctx->error, "sm_XX") != NULL);
}

static void test_nvrtc_fault(void **state) {
  ks_ctx *ctx = *state;
  assert_int_equal(ks_ctx_set_faults(ctx, "nvrtc_compile:1"), 0);
  size_t bytes = 1;
  assert_int_equal(ks_nvrtc_smoke(ctx, "sm_90", &bytes), -1);
  assert_int_equal(bytes, 0);
  assert_true(strstr(ctx->error, "fault injected") != NULL);
  /* Only the first call fails. */
  assert_int_equal(ks_nvrtc_smoke(ctx, "sm_90", &bytes), 0);
  ctx->nfaults = 0;
}

static void test_nvml_absent_handled(void **state) {
  ks_ctx *ctx = *state;
  ks_nvml nvml;
  if (!ks_nvml_load(ctx, &nvml)) {
    print_message("note: NVML is present; checking that it answers instead\n");
    char version[96];
    assert_int_equal(ks_nvml_driver_version(ctx, &nvml, version, sizeof version), 0);
    assert_true(ks_nvml_device_count(ctx, &nvml) >= 0);
    ks_nvml_unload(&nvml);
  } else {
    assert_true(strncmp(ctx->error, "NVML not available", 18) == 0);
    assert_true(table_is_zero(&nvml, sizeof nvml));
  }
  ks_nvml_unload(&nvml); /* harmless on the zeroed table */
  /* The absent path, forced. */
  assert_int_equal(ks_ctx_set_faults(ctx, "nvml_load:1"), 0);
  assert_int_equal(ks_nvml_load(ctx, &nvml), -1);
  assert_string_equal(ctx->error, "NVML not available (libnvidia-ml.so.1 could not be loaded)");
  assert_null(nvml.lib);
  ctx->nfaults = 0;
}

static void test_nvml_throttle_rule(void **state) {
  (void)state;
  ks_nvml_sample s = {.sm_clock_mhz = 1980, .sm_clock_max_mhz = 1980, .has_reasons = true};
  assert_false(ks_nvml_sample_throttled(&s, 0.9));
  s.reasons = KS_NVML_REASON_SW_POWER_CAP; /* steady state under load */
  assert_false(ks_nvml_sample_throttled(&s, 0.9));
  s.reasons = KS_NVML_REASON_HW_THERMAL;
  assert_true(ks_nvml_sample_throttled(&s, 0.9));
  s.reasons = 0;
  s.sm_clock_mhz = 345; /* still idle when the sample began */
  assert_true(ks_nvml_sample_throttled(&s, 0.9));
  s.sm_clock_mhz = -1; /* unknown clocks decide nothing */
  assert_false(ks_nvml_sample_throttled(&s, 0.9));
}

static void test_peak_bandwidth(void **state) {
  (void)state;
  /* H100 SXM: 2619 MHz HBM3 on a 5120-bit bus is 3.35 TB/s. */
  ks_gpu_info g = {.mem_clock_khz = 2619000, .mem_bus_bits = 5120};
  double bw = ks_gpu_peak_bandwidth(&g);
  assert_true(bw > 3.35e12 && bw < 3.36e12);
  ks_gpu_info unknown = {0};
  assert_true(ks_gpu_peak_bandwidth(&unknown) == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cuda_load_without_driver, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_cuda_load_fault, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_cuda_error_without_table, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_version, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_archs, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_smoke_sm90, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_compile_cubin_is_elf, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_compile_error, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_ptx_only_is_an_error, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvrtc_fault, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvml_absent_handled, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_nvml_throttle_rule, setup_ctx, teardown_ctx),
      cmocka_unit_test_setup_teardown(test_peak_bandwidth, setup_ctx, teardown_ctx),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
