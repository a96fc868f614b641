/* cuda_driver: opens libcuda.so.1, fills the ks_cuda table, and answers the
 * questions about devices that doctor and the planner ask.
 *
 * Symbols are resolved by their exported ABI names ("cuMemAlloc_v2") with
 * dlsym rather than through cuGetProcAddress: the name pins exactly the
 * signature the PFN_ typedef in ks_cuda.h describes, whatever driver version
 * is installed, and it works the same on drivers that predate
 * cuGetProcAddress. */
#include "ks_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table is filled through offsets, which needs function and object
 * pointers to be the same size (POSIX guarantees it for dlsym). */
_Static_assert(sizeof(void *) == sizeof(PFN_cuInit_v2000), "function pointers must fit void *");

typedef struct ks_cuda_symbol {
  const char *name;     /* exported name, e.g. "cuMemAlloc_v2" */
  const char *fallback; /* an older export with the same signature, or NULL */
  size_t offset;        /* of the entry in ks_cuda */
  bool optional;        /* NULL is allowed: not every driver exports it */
} ks_cuda_symbol;

#define KS_REQUIRED(field, name) {name, NULL, offsetof(ks_cuda, field), false}
#define KS_OPTIONAL(field, name) {name, NULL, offsetof(ks_cuda, field), true}

/* Each name is the one cuda.h's `#define cuX cuX_vN` selects, so that the
 * entry's PFN_ type and the function behind it agree. */
static const ks_cuda_symbol symbols[] = {
    KS_REQUIRED(Init, "cuInit"),
    KS_REQUIRED(DriverGetVersion, "cuDriverGetVersion"),
    KS_REQUIRED(GetErrorName, "cuGetErrorName"),
    KS_REQUIRED(GetErrorString, "cuGetErrorString"),

    KS_REQUIRED(DeviceGetCount, "cuDeviceGetCount"),
    KS_REQUIRED(DeviceGet, "cuDeviceGet"),
    KS_REQUIRED(DeviceGetName, "cuDeviceGetName"),
    KS_REQUIRED(DeviceGetAttribute, "cuDeviceGetAttribute"),
    KS_REQUIRED(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    KS_REQUIRED(DeviceGetPCIBusId, "cuDeviceGetPCIBusId"),

    KS_REQUIRED(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    KS_REQUIRED(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    KS_REQUIRED(CtxSetCurrent, "cuCtxSetCurrent"),
    KS_REQUIRED(CtxGetCurrent, "cuCtxGetCurrent"),
    KS_REQUIRED(CtxPushCurrent, "cuCtxPushCurrent_v2"),
    KS_REQUIRED(CtxPopCurrent, "cuCtxPopCurrent_v2"),
    KS_REQUIRED(CtxSynchronize, "cuCtxSynchronize"),
    KS_REQUIRED(CtxSetLimit, "cuCtxSetLimit"),
    KS_REQUIRED(CtxGetLimit, "cuCtxGetLimit"),
    KS_OPTIONAL(CtxCreate, "cuCtxCreate_v2"),
    KS_OPTIONAL(CtxDestroy, "cuCtxDestroy_v2"),

    KS_REQUIRED(MemGetInfo, "cuMemGetInfo_v2"),
    KS_REQUIRED(MemAlloc, "cuMemAlloc_v2"),
    KS_REQUIRED(MemFree, "cuMemFree_v2"),
    KS_REQUIRED(MemAllocHost, "cuMemAllocHost_v2"),
    KS_REQUIRED(MemFreeHost, "cuMemFreeHost"),
    KS_REQUIRED(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    KS_REQUIRED(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    KS_REQUIRED(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    KS_REQUIRED(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    KS_REQUIRED(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    KS_REQUIRED(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    KS_REQUIRED(MemsetD8, "cuMemsetD8_v2"),
    KS_REQUIRED(MemsetD32, "cuMemsetD32_v2"),
    KS_REQUIRED(MemsetD8Async, "cuMemsetD8Async"),
    KS_REQUIRED(MemsetD32Async, "cuMemsetD32Async"),
    KS_REQUIRED(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    KS_REQUIRED(PointerGetAttribute, "cuPointerGetAttribute"),

    KS_REQUIRED(ModuleLoadData, "cuModuleLoadData"),
    KS_REQUIRED(ModuleLoadDataEx, "cuModuleLoadDataEx"),
    KS_REQUIRED(ModuleGetFunction, "cuModuleGetFunction"),
    KS_REQUIRED(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
    KS_REQUIRED(ModuleUnload, "cuModuleUnload"),
    KS_REQUIRED(FuncGetAttribute, "cuFuncGetAttribute"),
    KS_REQUIRED(FuncSetAttribute, "cuFuncSetAttribute"),
    KS_REQUIRED(OccupancyMaxActiveBlocksPerMultiprocessor,
                "cuOccupancyMaxActiveBlocksPerMultiprocessor"),

    KS_REQUIRED(LaunchKernel, "cuLaunchKernel"),
    KS_OPTIONAL(LaunchKernelEx, "cuLaunchKernelEx"),

    KS_REQUIRED(StreamCreate, "cuStreamCreate"),
    KS_REQUIRED(StreamDestroy, "cuStreamDestroy_v2"),
    KS_REQUIRED(StreamSynchronize, "cuStreamSynchronize"),
    KS_REQUIRED(StreamQuery, "cuStreamQuery"),
    KS_REQUIRED(EventCreate, "cuEventCreate"),
    KS_REQUIRED(EventRecord, "cuEventRecord"),
    KS_REQUIRED(EventSynchronize, "cuEventSynchronize"),
    KS_REQUIRED(EventQuery, "cuEventQuery"),
    {"cuEventElapsedTime_v2", "cuEventElapsedTime", offsetof(ks_cuda, EventElapsedTime), false},
    KS_REQUIRED(EventDestroy, "cuEventDestroy_v2"),
};

/* AddressSanitizer protects its "shadow gap" by default, address space the
 * CUDA driver maps for itself, so cuInit fails with CUDA_ERROR_OUT_OF_MEMORY
 * in a sanitized build (KS_SANITIZE). Every program that loads the driver
 * links this file, so the default is lifted here; ASAN_OPTIONS in the
 * environment still overrides it. */
#if defined(__SANITIZE_ADDRESS__)
#define KS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KS_ASAN 1
#endif
#endif
#ifdef KS_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "protect_shadow_gap=0"; }
#endif

static const char no_driver[] =
    "no NVIDIA driver found (libcuda.so.1 could not be loaded): GPU commands need one";

/* What to tell the user beyond cuInit's own words, for the failures that
 * have a usual cause. */
static const char *init_hint(CUresult r) {
  switch (r) {
#ifdef KS_ASAN
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "this is a sanitized build; run it with ASAN_OPTIONS=protect_shadow_gap=0";
#endif
  case CUDA_ERROR_NO_DEVICE:
    return getenv("CUDA_VISIBLE_DEVICES") ? "check CUDA_VISIBLE_DEVICES"
                                          : "GPU commands need a visible GPU";
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "the kernel module and libcuda.so.1 are different versions; reinstall the driver";
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return "this GPU cannot use the forward-compatibility libcuda.so.1 found first; "
           "check LD_LIBRARY_PATH";
  default:
    return "GPU commands need a working driver";
  }
}

int ks_cuda_load(ks_ctx *ctx, ks_cuda *out) {
  memset(out, 0, sizeof *out);
  if (ks_fault(ctx, "cuda_load"))
    return ks_fail(ctx, "%s", no_driver);
  /* RTLD_NODELETE: once cuInit ran, the driver has threads and exit
   * handlers in this process, so its code must stay mapped after dlclose. */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    ks_debug(ctx, "dlopen: %s", dlerror());
    return ks_fail(ctx, "%s", no_driver);
  }
  ks_cuda cu = {.lib = lib};
  int rc = 0;
  for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
    const ks_cuda_symbol *s = &symbols[i];
    void *fn = dlsym(lib, s->name);
    if (!fn && s->fallback)
      fn = dlsym(lib, s->fallback);
    if (!fn && !s->optional) {
      rc = ks_fail(ctx, "the NVIDIA driver is too old (libcuda.so.1 lacks %s): update it to run "
                        "GPU commands", s->name);
      goto out;
    }
    memcpy((char *)&cu + s->offset, &fn, sizeof fn);
  }
  CUresult r = cu.Init(0);
  if (r != CUDA_SUCCESS) {
    rc = ks_fail(ctx, "the NVIDIA driver did not start (cuInit: %s): %s", ks_cuda_error(&cu, r),
                 init_hint(r));
    goto out;
  }
  r = cu.DriverGetVersion(&cu.driver_version);
  if (ks_cuda_check(ctx, &cu, r, "cuDriverGetVersion")) {
    rc = -1;
    goto out;
  }
  *out = cu;
  cu.lib = NULL; /* handed over */
out:
  if (cu.lib)
    dlclose(cu.lib);
  return rc;
}

void ks_cuda_unload(ks_cuda *cu) {
  if (cu->lib)
    dlclose(cu->lib);
  memset(cu, 0, sizeof *cu);
}

const char *ks_cuda_error(const ks_cuda *cu, CUresult result) {
  /* Per thread, so that workers formatting errors at once don't share it;
   * the driver's own strings are static, only the joined text needs room. */
  static _Thread_local char text[384];
  const char *name = NULL, *desc = NULL;
  if (cu && cu->GetErrorName && cu->GetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (cu && cu->GetErrorString && cu->GetErrorString(result, &desc) != CUDA_SUCCESS)
    desc = NULL;
  if (name && desc)
    snprintf(text, sizeof text, "%s: %s", name, desc);
  else if (name)
    snprintf(text, sizeof text, "%s", name);
  else
    snprintf(text, sizeof text, "CUresult %d", (int)result);
  return text;
}

int ks_cuda_check(ks_ctx *ctx, const ks_cuda *cu, CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return 0;
  return ks_fail(ctx, "%s: %s", what, ks_cuda_error(cu, result));
}

/* An attribute, or 0 when this driver does not know it: the newer ones are
 * informative only, so their absence is not an error. */
static int attribute(const ks_cuda *cu, CUdevice dev, CUdevice_attribute which) {
  int value = 0;
  if (cu->DeviceGetAttribute(&value, which, dev) != CUDA_SUCCESS)
    value = 0;
  return value;
}

static int describe(ks_ctx *ctx, const ks_cuda *cu, int ordinal, ks_gpu_info *out) {
  memset(out, 0, sizeof *out);
  out->ordinal = ordinal;
  out->driver_version = cu->driver_version;
  CUdevice dev;
  if (ks_cuda_check(ctx, cu, cu->DeviceGet(&dev, ordinal), "cuDeviceGet") ||
      ks_cuda_check(ctx, cu, cu->DeviceGetName(out->name, (int)sizeof out->name, dev),
                    "cuDeviceGetName") ||
      ks_cuda_check(ctx, cu, cu->DeviceTotalMem(&out->total_mem, dev), "cuDeviceTotalMem"))
    return -1;
  out->cc_major = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  out->cc_minor = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  out->sm_count = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  out->l2_bytes = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  out->mem_clock_khz = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  out->mem_bus_bits = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  out->sm_clock_khz = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  out->smem_per_block_optin =
      attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  out->smem_per_sm = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  out->regs_per_sm = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  out->max_threads_per_sm = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  out->warp_size = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  out->ecc = attribute(cu, dev, CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0;
  if (cu->DeviceGetPCIBusId(out->pci_bus_id, (int)sizeof out->pci_bus_id, dev) != CUDA_SUCCESS)
    out->pci_bus_id[0] = '\0';
  return 0;
}

int ks_cuda_devices(ks_ctx *ctx, const ks_cuda *cu, ks_gpu_info *out, int max) {
  int count = 0;
  if (ks_cuda_check(ctx, cu, cu->DeviceGetCount(&count), "cuDeviceGetCount"))
    return -1;
  for (int i = 0; i < count && i < max; i++)
    if (describe(ctx, cu, i, &out[i])) {
      char prefix[32];
      snprintf(prefix, sizeof prefix, "device %d", i);
      ks_fail_prefix(ctx, prefix);
      return -1;
    }
  return count;
}

double ks_gpu_peak_bandwidth(const ks_gpu_info *gpu) {
  /* Two transfers per clock, bus width in bits. */
  return 2.0 * gpu->mem_clock_khz * 1e3 * (gpu->mem_bus_bits / 8.0);
}
