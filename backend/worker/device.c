/* device: the worker's hold on its GPU. Opens the driver and the device's
 * primary context once per process, reads the facts hello reports, finds the
 * same device in NVML (by PCI bus id: NVML's order may differ from CUDA's),
 * and loads and launches kernels.
 *
 * It also decides what a CUDA error means. Some leave the context usable (a
 * launch refused for too many threads or too much shared memory, an image
 * built for another GPU); others poison it for good (an illegal address, a
 * trap, a misaligned access): every later call fails the same way. The
 * latter mark the worker dead, so that it answers and exits and the main
 * process starts a clean one. */
#include "worker.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int wk_open(wk_state *w) {
  ks_ctx *ctx = w->ctx;
  w->tried = true;
  ks_gpu_info *gpus = NULL;
  int rc = -1;
  if (ks_cuda_load(ctx, &w->cu)) {
    w->no_device = true;
    goto out;
  }
  int count = ks_cuda_devices(ctx, &w->cu, NULL, 0);
  if (count < 0)
    goto out;
  if (w->ordinal < 0 || w->ordinal >= count) {
    w->no_device = true;
    ks_fail(ctx, "no CUDA device %d (the driver sees %d)", w->ordinal, count);
    goto out;
  }
  gpus = ks_xcalloc((size_t)count, sizeof *gpus);
  if (ks_cuda_devices(ctx, &w->cu, gpus, count) < 0)
    goto out;
  const ks_gpu_info *g = &gpus[w->ordinal];
  if (ks_cuda_check(ctx, &w->cu, w->cu.DeviceGet(&w->dev, w->ordinal), "cuDeviceGet") ||
      ks_cuda_check(ctx, &w->cu, w->cu.DevicePrimaryCtxRetain(&w->context, w->dev),
                    "cuDevicePrimaryCtxRetain"))
    goto out;
  if (ks_cuda_check(ctx, &w->cu, w->cu.CtxSetCurrent(w->context), "cuCtxSetCurrent"))
    goto out;

  ks_device_info *d = &w->info;
  snprintf(d->name, sizeof d->name, "%s", g->name);
  d->cc_major = g->cc_major;
  d->cc_minor = g->cc_minor;
  d->sm_count = g->sm_count;
  d->memory_bytes = g->total_mem;
  d->l2_bytes = (unsigned long long)(g->l2_bytes > 0 ? g->l2_bytes : 0);
  d->driver_version = w->cu.driver_version;
  snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", g->pci_bus_id);
  d->peak_bandwidth = ks_gpu_peak_bandwidth(g);
  w->smem_optin = g->smem_per_block_optin;

  /* The UUID is not in the shared table (it is only needed here): looked up
   * in the already opened driver. Without it the PCI bus id stands in. */
  PFN_cuDeviceGetUuid_v11040 get_uuid = (PFN_cuDeviceGetUuid_v11040)dlsym(w->cu.lib,
                                                                           "cuDeviceGetUuid_v2");
  if (!get_uuid)
    get_uuid = (PFN_cuDeviceGetUuid_v11040)dlsym(w->cu.lib, "cuDeviceGetUuid");
  CUuuid uuid;
  if (get_uuid && get_uuid(&uuid, w->dev) == CUDA_SUCCESS) {
    const unsigned char *b = (const unsigned char *)uuid.bytes;
    snprintf(d->uuid, sizeof d->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
  } else {
    snprintf(d->uuid, sizeof d->uuid, "pci-%s", g->pci_bus_id);
  }

  /* NVML is optional: without it no clock filter, and hello says 0 MHz. */
  if (ks_nvml_load(ctx, &w->nvml) == 0) {
    ks_nvml_sample s;
    if (ks_nvml_device_by_pci(ctx, &w->nvml, g->pci_bus_id, &w->nvml_dev) == 0 &&
        ks_nvml_sample_device(ctx, &w->nvml, w->nvml_dev, &s) == 0) {
      w->have_nvml = true;
      d->sm_clock_max_mhz = s.sm_clock_max_mhz > 0 ? s.sm_clock_max_mhz : 0;
      if (ks_nvml_driver_version(ctx, &w->nvml, d->driver, sizeof d->driver))
        d->driver[0] = '\0';
    } else {
      ks_nvml_unload(&w->nvml);
    }
  }
  ks_debug(ctx, "device %d: %s, NVML %s", w->ordinal, d->name, w->have_nvml ? "yes" : "no");
  w->ready = true;
  rc = 0;
out:
  free(gpus);
  if (rc)
    snprintf(w->open_error, sizeof w->open_error, "%s", ctx->error);
  return rc;
}

void wk_close(wk_state *w) {
  if (w->context) {
    /* After a sticky error these fail like everything else; they are still
     * called so that a healthy worker leaves nothing behind. */
    if (w->flush)
      w->cu.MemFree(w->flush);
    w->cu.DevicePrimaryCtxRelease(w->dev);
  }
  w->flush = 0;
  w->context = NULL;
  if (w->have_nvml)
    ks_nvml_unload(&w->nvml);
  w->have_nvml = false;
  ks_cuda_unload(&w->cu);
  w->ready = false;
}

/* Errors after which the context refuses all work (the CUDA documentation
 * calls them sticky: the process must exit to use the device again). */
static bool sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_UNKNOWN:
    return true;
  default:
    return false;
  }
}

int wk_cuda(wk_state *w, ks_arena *arena, wk_outcome *out, CUresult r, ks_run_status failing,
            const char *kernel, const char *what) {
  if (r == CUDA_SUCCESS)
    return 0;
  /* An error not known to be sticky may still be: if the context now
   * refuses a plain synchronize, it is. */
  bool dead = sticky(r) || w->cu.CtxSynchronize() != CUDA_SUCCESS;
  if (dead)
    w->dead = true;
  if (out->status == KS_RUN_OK) {
    out->status = dead ? KS_RUN_CRASHED : failing;
    out->kernel = kernel;
    out->error = ks_arena_printf(arena, "%s%s%s: %s", kernel ? kernel : "", kernel ? ": " : "",
                                 what, ks_cuda_error(&w->cu, r));
  }
  return -1;
}

int wk_kernel_load(wk_state *w, ks_arena *arena, const ks_module *m, const char *label,
                   const ks_launch_cfg *launch, wk_kernel *k, wk_outcome *out) {
  memset(k, 0, sizeof *k);
  k->label = label;
  k->launch = *launch;
  ks_cuda *cu = &w->cu;
  if (wk_cuda(w, arena, out, cu->ModuleLoadData(&k->module, m->cubin), KS_RUN_LOAD_FAILED, label,
              "cuModuleLoadData"))
    return -1;
  if (wk_cuda(w, arena, out, cu->ModuleGetFunction(&k->fn, k->module, m->function),
              KS_RUN_LOAD_FAILED, label,
              ks_arena_printf(arena, "cuModuleGetFunction(\"%s\")", m->function)))
    return -1;
  if (wk_cuda(w, arena, out, cu->FuncGetAttribute(&k->registers, CU_FUNC_ATTRIBUTE_NUM_REGS, k->fn),
              KS_RUN_LOAD_FAILED, label, "cuFuncGetAttribute") ||
      wk_cuda(w, arena, out,
              cu->FuncGetAttribute(&k->local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->fn),
              KS_RUN_LOAD_FAILED, label, "cuFuncGetAttribute") ||
      wk_cuda(w, arena, out,
              cu->FuncGetAttribute(&k->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn),
              KS_RUN_LOAD_FAILED, label, "cuFuncGetAttribute"))
    return -1;
  for (int i = 0; i < 3; i++)
    if (!launch->grid[i] || !launch->block[i]) {
      out->status = KS_RUN_LAUNCH_FAILED;
      out->kernel = label;
      out->error = ks_arena_printf(arena, "%s: a launch with a zero dimension (grid %u,%u,%u "
                                          "block %u,%u,%u)", label, launch->grid[0],
                                   launch->grid[1], launch->grid[2], launch->block[0],
                                   launch->block[1], launch->block[2]);
      return -1;
    }
  /* Above 48 KiB of shared memory per block (static and dynamic together)
   * a kernel must opt in to the dynamic part. */
  if (launch->smem + (unsigned long long)k->static_smem > 48 * 1024) {
    if (launch->smem + (unsigned long long)k->static_smem > (unsigned long long)w->smem_optin) {
      out->status = KS_RUN_LAUNCH_FAILED;
      out->kernel = label;
      out->error = ks_arena_printf(arena, "%s: %llu bytes of dynamic and %d of static shared "
                                          "memory; the device allows %d per block", label,
                                   launch->smem, k->static_smem, w->smem_optin);
      return -1;
    }
    if (wk_cuda(w, arena, out,
                cu->FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     (int)launch->smem),
                KS_RUN_LAUNCH_FAILED, label, "cuFuncSetAttribute(max dynamic shared memory)"))
      return -1;
  }
  return 0;
}

void wk_kernel_unload(wk_state *w, wk_kernel *k) {
  if (k->module)
    w->cu.ModuleUnload(k->module);
  k->module = NULL;
  k->fn = NULL;
}

int wk_launch(wk_state *w, ks_arena *arena, wk_kernel *k, void **params, bool sync,
              wk_outcome *out) {
  const ks_launch_cfg *l = &k->launch;
  CUresult r = w->cu.LaunchKernel(k->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                  l->block[1], l->block[2], (unsigned)l->smem, NULL, params, NULL);
  if (wk_cuda(w, arena, out, r, KS_RUN_LAUNCH_FAILED, k->label, "cuLaunchKernel"))
    return -1;
  if (sync && wk_cuda(w, arena, out, w->cu.CtxSynchronize(), KS_RUN_CRASHED, k->label,
                      "kernel execution"))
    return -1;
  return 0;
}
