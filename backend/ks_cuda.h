/* ks_cuda: the CUDA driver API, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen, never linked, so that every command
 * that needs no GPU runs on a machine without a driver, and a GPU command
 * there fails with one sentence instead of a loader error. The driver's
 * functions land in a table of pointers (struct ks_cuda) that the caller
 * owns: no globals, and a stand-in table can replace the real one in tests.
 *
 * Each entry is the ABI version that the toolkit's cuda.h maps the plain
 * name to (cuMemAlloc -> cuMemAlloc_v2, ...), typed with that version's
 * PFN_ typedef from cudaTypedefs.h. Entries are named after the driver
 * function without its "cu" prefix, so `cu->MemAlloc(&p, n)` reads like the
 * driver's documentation. Entries marked "optional" may be NULL on old
 * drivers; every other entry is non-NULL after a successful ks_cuda_load.
 *
 * Contexts: use the device's primary context (DevicePrimaryCtxRetain, then
 * CtxSetCurrent; DevicePrimaryCtxRelease when done), which is what the CUDA
 * runtime shares with user code, rather than CtxCreate.
 *
 * Threads: the table is read-only after loading and may be shared. */
#ifndef KS_CUDA_H
#define KS_CUDA_H

#include <cudaTypedefs.h> /* cuda.h's types and the PFN_ typedefs; never linked */
#include <stdbool.h>
#include <stddef.h>

#include "ks_ctx.h"

typedef struct ks_cuda {
  void *lib;          /* dlopen handle of libcuda.so.1 */
  int driver_version; /* cuDriverGetVersion: 12080 for CUDA 12.8 */

  /* Initialisation, version, errors. */
  PFN_cuInit_v2000 Init;
  PFN_cuDriverGetVersion_v2020 DriverGetVersion;
  PFN_cuGetErrorName_v6000 GetErrorName;
  PFN_cuGetErrorString_v6000 GetErrorString;

  /* Devices. */
  PFN_cuDeviceGetCount_v2000 DeviceGetCount;
  PFN_cuDeviceGet_v2000 DeviceGet;
  PFN_cuDeviceGetName_v2000 DeviceGetName;
  PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute;
  PFN_cuDeviceTotalMem_v3020 DeviceTotalMem;
  PFN_cuDeviceGetPCIBusId_v4010 DeviceGetPCIBusId;

  /* Contexts. */
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain;
  PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease;
  PFN_cuCtxSetCurrent_v4000 CtxSetCurrent;
  PFN_cuCtxGetCurrent_v4000 CtxGetCurrent;
  PFN_cuCtxPushCurrent_v4000 CtxPushCurrent;
  PFN_cuCtxPopCurrent_v4000 CtxPopCurrent;
  PFN_cuCtxSynchronize_v2000 CtxSynchronize;
  PFN_cuCtxSetLimit_v3010 CtxSetLimit;
  PFN_cuCtxGetLimit_v3010 CtxGetLimit;
  PFN_cuCtxCreate_v3020 CtxCreate;   /* optional: a private context */
  PFN_cuCtxDestroy_v4000 CtxDestroy; /* optional: pairs with CtxCreate */

  /* Memory. */
  PFN_cuMemGetInfo_v3020 MemGetInfo;
  PFN_cuMemAlloc_v3020 MemAlloc;
  PFN_cuMemFree_v3020 MemFree;
  PFN_cuMemAllocHost_v3020 MemAllocHost; /* pinned, for async copies */
  PFN_cuMemFreeHost_v2000 MemFreeHost;
  PFN_cuMemcpyHtoD_v3020 MemcpyHtoD;
  PFN_cuMemcpyDtoH_v3020 MemcpyDtoH;
  PFN_cuMemcpyDtoD_v3020 MemcpyDtoD;
  PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync;
  PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync;
  PFN_cuMemcpyDtoDAsync_v3020 MemcpyDtoDAsync;
  PFN_cuMemsetD8_v3020 MemsetD8;
  PFN_cuMemsetD32_v3020 MemsetD32;
  PFN_cuMemsetD8Async_v3020 MemsetD8Async;
  PFN_cuMemsetD32Async_v3020 MemsetD32Async;
  PFN_cuMemGetAddressRange_v3020 MemGetAddressRange;
  PFN_cuPointerGetAttribute_v4000 PointerGetAttribute;

  /* Modules and functions. */
  PFN_cuModuleLoadData_v2000 ModuleLoadData;
  PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction;
  PFN_cuModuleGetGlobal_v3020 ModuleGetGlobal;
  PFN_cuModuleUnload_v2000 ModuleUnload;
  PFN_cuFuncGetAttribute_v2020 FuncGetAttribute; /* registers, shared memory */
  PFN_cuFuncSetAttribute_v9000 FuncSetAttribute; /* opt-in shared memory */
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 OccupancyMaxActiveBlocksPerMultiprocessor;

  /* Launch. */
  PFN_cuLaunchKernel_v4000 LaunchKernel;
  PFN_cuLaunchKernelEx_v11060 LaunchKernelEx; /* optional: clusters (CUDA 11.8+) */

  /* Streams and events. */
  PFN_cuStreamCreate_v2000 StreamCreate;
  PFN_cuStreamDestroy_v4000 StreamDestroy;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize;
  PFN_cuStreamQuery_v2000 StreamQuery;
  PFN_cuEventCreate_v2000 EventCreate;
  PFN_cuEventRecord_v2000 EventRecord;
  PFN_cuEventSynchronize_v2000 EventSynchronize;
  PFN_cuEventQuery_v2000 EventQuery;
  /* cuEventElapsedTime_v2 where the driver has it (12.8+), else the first
   * version: both have this signature. */
  PFN_cuEventElapsedTime_v12080 EventElapsedTime;
  PFN_cuEventDestroy_v4000 EventDestroy;
} ks_cuda;

/* Opens libcuda.so.1, resolves the table and calls cuInit(0). On failure
 * returns -1 with one sentence in ctx->error (no driver, a driver too old,
 * or cuInit's error, e.g. no device) and leaves `out` zeroed, nothing held.
 * Fault site "cuda_load" makes it fail as if no driver were installed. */
int ks_cuda_load(ks_ctx *ctx, ks_cuda *out);
/* Releases what ks_cuda_load took; safe on a zeroed table. Contexts and
 * allocations made through the table must be released before. */
void ks_cuda_unload(ks_cuda *cu);

/* "CUDA_ERROR_X: description". The string lives in a per-thread buffer,
 * valid until this thread's next call (as strerror's is); copy it to keep it.
 * Works with a NULL or zeroed table ("CUresult 100"). */
const char *ks_cuda_error(const ks_cuda *cu, CUresult result);
/* When `result` is an error, records "<what>: CUDA_ERROR_X: description"
 * with ks_fail and returns -1; else returns 0. For `if (ks_cuda_check(...))
 * goto out;` after each driver call. */
int ks_cuda_check(ks_ctx *ctx, const ks_cuda *cu, CUresult result, const char *what);

/* What doctor reports and the search plans with, per device. Attributes
 * the driver does not report are 0. */
typedef struct ks_gpu_info {
  int ordinal;              /* CUdevice ordinal, as CUDA_VISIBLE_DEVICES maps it */
  char name[256];           /* "NVIDIA H200" */
  int cc_major, cc_minor;   /* compute capability: 9, 0 */
  int sm_count;             /* multiprocessors */
  size_t total_mem;         /* bytes of device memory */
  int l2_bytes;             /* L2 cache size */
  int mem_clock_khz;        /* peak memory clock */
  int mem_bus_bits;         /* memory bus width */
  int sm_clock_khz;         /* typical SM clock */
  int smem_per_block_optin; /* most shared memory a block may opt in to */
  int smem_per_sm;          /* shared memory per multiprocessor */
  int regs_per_sm;          /* 32-bit registers per multiprocessor */
  int max_threads_per_sm;
  int warp_size;
  bool ecc;                 /* ECC enabled */
  char pci_bus_id[32];      /* "0000:3b:00.0": how NVML finds the same device */
  int driver_version;       /* cuDriverGetVersion: 12080 */
} ks_gpu_info;

/* Fills up to `max` entries of `out` in ordinal order and returns how many
 * devices there are (which may exceed `max`; 0 is not an error), or -1 with
 * ks_fail when the driver cannot be queried. */
int ks_cuda_devices(ks_ctx *ctx, const ks_cuda *cu, ks_gpu_info *out, int max);

/* Peak memory bandwidth in bytes/s from the clock and bus width (double
 * data rate), or 0 when the driver does not report them. */
double ks_gpu_peak_bandwidth(const ks_gpu_info *gpu);

#endif
