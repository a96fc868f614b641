/* test_gpu_driver: the driver table end to end on a real GPU.
 *
 * Creates a context on device 0, allocates, sets, copies and checks memory,
 * then compiles a kernel with NVRTC for the device's own architecture,
 * loads the cubin, launches it between two events, and checks what it
 * wrote. It is the path the GPU worker takes for every candidate, so it
 * exercises the same entries of the table.
 *
 * Without a driver or a GPU it prints "SKIP: ..." and exits 77, which ctest
 * reports as skipped (SKIP_RETURN_CODE). A plain program rather than a
 * cmocka suite: one linear story with one cleanup path reads better here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ks_cuda.h"
#include "ks_nvml.h"
#include "ks_nvrtc.h"

enum { SKIP = 77, N = 1 << 20 };

static const char kernel_source[] =
    "extern \"C\" __global__ void twice(int *out, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) out[i] = 2 * i;\n"
    "}\n";

/* Runs a driver call; on error reports it and leaves through `out`. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    if (ks_cuda_check(&ctx, &cu, (call), #call)) {                                                 \
      printf("FAIL: %s\n", ctx.error);                                                            \
      rc = 1;                                                                                      \
      goto out;                                                                                    \
    }                                                                                              \
  } while (0)

static void print_gpu(const ks_gpu_info *g) {
  printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %d KiB, %d-bit bus at %d MHz, PCI %s, "
         "driver %d\n",
         g->ordinal, g->name, g->cc_major, g->cc_minor, g->sm_count,
         (double)g->total_mem / (1 << 30), g->l2_bytes / 1024, g->mem_bus_bits,
         g->mem_clock_khz / 1000, g->pci_bus_id, g->driver_version);
}

/* NVML is optional: report what it says about the device, if anything. */
static void print_nvml(ks_ctx *ctx, const ks_gpu_info *g) {
  ks_nvml nvml;
  ks_nvml_device dev;
  ks_nvml_sample s;
  char version[96] = "";
  if (ks_nvml_load(ctx, &nvml)) {
    printf("nvml: %s\n", ctx->error);
    return;
  }
  if (ks_nvml_driver_version(ctx, &nvml, version, sizeof version) ||
      ks_nvml_device_by_pci(ctx, &nvml, g->pci_bus_id, &dev) ||
      ks_nvml_sample_device(ctx, &nvml, dev, &s))
    printf("nvml: %s\n", ctx->error);
  else
    printf("nvml: driver %s; SM %d/%d MHz, memory %d MHz, %d C, %d/%d mW, reasons 0x%llx%s\n",
           version, s.sm_clock_mhz, s.sm_clock_max_mhz, s.mem_clock_mhz, s.temperature_c,
           s.power_mw, s.power_limit_mw, s.reasons, s.has_reasons ? "" : " (unknown)");
  ks_nvml_unload(&nvml);
}

int main(void) {
  ks_ctx ctx;
  ks_ctx_init(&ctx, "test_gpu_driver");
  ks_cuda cu;
  if (ks_cuda_load(&ctx, &cu)) {
    printf("SKIP: no CUDA driver/GPU (%s)\n", ctx.error);
    ks_ctx_release(&ctx);
    return SKIP;
  }
  int rc = 0;
  bool have_ctx = false;
  CUdevice dev = 0;
  CUcontext context = NULL;
  CUdeviceptr buf = 0;
  CUmodule module = NULL;
  CUstream stream = NULL;
  CUevent start = NULL, stop = NULL;
  ks_buf cubin = KS_BUF_INIT, log = KS_BUF_INIT;
  int *host = calloc(N, sizeof *host);

  ks_gpu_info gpu;
  int count = ks_cuda_devices(&ctx, &cu, &gpu, 1);
  if (count < 0) {
    printf("FAIL: %s\n", ctx.error);
    rc = 1;
    goto out;
  }
  if (count == 0) {
    printf("SKIP: no CUDA driver/GPU (the driver sees no device)\n");
    rc = SKIP;
    goto out;
  }
  print_gpu(&gpu);
  print_nvml(&ctx, &gpu);

  /* The primary context, as the worker will use it. */
  CHECK(cu.DeviceGet(&dev, 0));
  CHECK(cu.DevicePrimaryCtxRetain(&context, dev));
  have_ctx = true;
  CHECK(cu.CtxSetCurrent(context));

  /* Memory: set every byte, read back; then a round trip through the host. */
  CHECK(cu.MemAlloc(&buf, N * sizeof *host));
  CHECK(cu.MemsetD8(buf, 0xab, N * sizeof *host));
  CHECK(cu.MemcpyDtoH(host, buf, N * sizeof *host));
  for (size_t i = 0; i < N * sizeof *host; i++)
    if (((unsigned char *)host)[i] != 0xab) {
      printf("FAIL: byte %zu is 0x%02x after cuMemsetD8(0xab)\n", i, ((unsigned char *)host)[i]);
      rc = 1;
      goto out;
    }
  for (int i = 0; i < N; i++)
    host[i] = -i;
  CHECK(cu.MemcpyHtoD(buf, host, N * sizeof *host));
  memset(host, 0, N * sizeof *host);
  CHECK(cu.MemcpyDtoH(host, buf, N * sizeof *host));
  for (int i = 0; i < N; i++)
    if (host[i] != -i) {
      printf("FAIL: element %d is %d after a round trip, not %d\n", i, host[i], -i);
      rc = 1;
      goto out;
    }
  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK(cu.MemGetAddressRange(&base, &size, buf + 4));
  if (base != buf || size < N * sizeof *host) {
    printf("FAIL: cuMemGetAddressRange gave base %llx size %zu\n", (unsigned long long)base, size);
    rc = 1;
    goto out;
  }

  /* Compile for this device, load, look at the function, launch. */
  char arch[32];
  snprintf(arch, sizeof arch, "-arch=sm_%d%d", gpu.cc_major, gpu.cc_minor);
  const char *options[] = {arch};
  ks_nvrtc_unit unit = {.source = kernel_source, .name = "twice.cu", .options = options, .noptions = 1};
  if (ks_nvrtc_compile(&ctx, &unit, &cubin, &log)) {
    printf("FAIL: %s\n%s", ctx.error, log.data);
    rc = 1;
    goto out;
  }
  CHECK(cu.ModuleLoadData(&module, cubin.data));
  CUfunction fn;
  CHECK(cu.ModuleGetFunction(&fn, module, "twice"));
  int regs = 0, max_threads = 0;
  CHECK(cu.FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
  CHECK(cu.FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
  printf("kernel: %zu-byte cubin, %d registers, up to %d threads per block\n", cubin.len, regs,
         max_threads);

  CHECK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cu.EventCreate(&start, CU_EVENT_DEFAULT));
  CHECK(cu.EventCreate(&stop, CU_EVENT_DEFAULT));
  CHECK(cu.MemsetD32Async(buf, 0xffffffffu, N, stream));
  int n = N;
  void *params[] = {&buf, &n};
  unsigned block = 256, grid = (N + block - 1) / block;
  CHECK(cu.EventRecord(start, stream));
  CHECK(cu.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL));
  CHECK(cu.EventRecord(stop, stream));
  CHECK(cu.EventSynchronize(stop));
  float ms = 0;
  CHECK(cu.EventElapsedTime(&ms, start, stop));
  CHECK(cu.MemcpyDtoHAsync(host, buf, N * sizeof *host, stream));
  CHECK(cu.StreamSynchronize(stream));
  for (int i = 0; i < N; i++)
    if (host[i] != 2 * i) {
      printf("FAIL: out[%d] = %d, expected %d\n", i, host[i], 2 * i);
      rc = 1;
      goto out;
    }
  printf("launch: %d ints written in %.3f ms; all correct\n", N, ms);
  CHECK(cu.CtxSynchronize());

out:
  /* Release in reverse order; the context must be current for the rest. */
  if (start)
    cu.EventDestroy(start);
  if (stop)
    cu.EventDestroy(stop);
  if (stream)
    cu.StreamDestroy(stream);
  if (module)
    cu.ModuleUnload(module);
  if (buf)
    cu.MemFree(buf);
  if (have_ctx)
    cu.DevicePrimaryCtxRelease(dev);
  ks_buf_release(&cubin);
  ks_buf_release(&log);
  free(host);
  ks_cuda_unload(&cu);
  ks_ctx_release(&ctx);
  if (!rc)
    printf("PASS\n");
  return rc;
}
