/* nvml: opens libnvidia-ml.so.1 and reads what the timing loop and doctor
 * need from it. Like the CUDA driver it is loaded with dlopen, never linked:
 * containers often carry the driver without NVML, and nothing but the
 * sampling of clocks depends on it. */
#include "ks_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* NVML's values, from nvml.h. */
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_TEMPERATURE_GPU = 0,
};

typedef struct ks_nvml_symbol {
  const char *name;
  const char *fallback; /* an older name with the same signature, or NULL */
  size_t offset;
  bool optional;
} ks_nvml_symbol;

#define KS_REQUIRED(field, name) {name, NULL, offsetof(ks_nvml, field), false}

static const ks_nvml_symbol symbols[] = {
    KS_REQUIRED(Init, "nvmlInit_v2"),
    KS_REQUIRED(Shutdown, "nvmlShutdown"),
    KS_REQUIRED(ErrorString, "nvmlErrorString"),
    KS_REQUIRED(SystemGetDriverVersion, "nvmlSystemGetDriverVersion"),
    KS_REQUIRED(DeviceGetCount, "nvmlDeviceGetCount_v2"),
    KS_REQUIRED(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2"),
    KS_REQUIRED(DeviceGetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2"),
    KS_REQUIRED(DeviceGetName, "nvmlDeviceGetName"),
    KS_REQUIRED(DeviceGetClockInfo, "nvmlDeviceGetClockInfo"),
    KS_REQUIRED(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo"),
    KS_REQUIRED(DeviceGetTemperature, "nvmlDeviceGetTemperature"),
    KS_REQUIRED(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage"),
    KS_REQUIRED(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit"),
    /* Renamed in NVML 12; drivers before that export only the old name. */
    {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons",
     offsetof(ks_nvml, DeviceGetClocksEventReasons), true},
};

static const char *nvml_error(const ks_nvml *nvml, int result) {
  const char *s = nvml->ErrorString ? nvml->ErrorString(result) : NULL;
  return s ? s : "unknown NVML error";
}

static int nvml_check(ks_ctx *ctx, const ks_nvml *nvml, int result, const char *what) {
  if (result == NVML_SUCCESS)
    return 0;
  return ks_fail(ctx, "%s: %s", what, nvml_error(nvml, result));
}

int ks_nvml_load(ks_ctx *ctx, ks_nvml *out) {
  memset(out, 0, sizeof *out);
  if (ks_fault(ctx, "nvml_load"))
    return ks_fail(ctx, "NVML not available (libnvidia-ml.so.1 could not be loaded)");
  /* RTLD_NODELETE for the same reason as libcuda: NVML keeps threads of its
   * own, so its code stays mapped after our dlclose. */
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    ks_debug(ctx, "dlopen: %s", dlerror());
    return ks_fail(ctx, "NVML not available (libnvidia-ml.so.1 could not be loaded)");
  }
  ks_nvml nv = {.lib = lib};
  int rc = 0;
  for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
    const ks_nvml_symbol *s = &symbols[i];
    void *fn = dlsym(lib, s->name);
    if (!fn && s->fallback)
      fn = dlsym(lib, s->fallback);
    if (!fn && !s->optional) {
      rc = ks_fail(ctx, "NVML not available (libnvidia-ml.so.1 lacks %s)", s->name);
      goto out;
    }
    memcpy((char *)&nv + s->offset, &fn, sizeof fn);
  }
  int r = nv.Init();
  if (r != NVML_SUCCESS) {
    rc = ks_fail(ctx, "NVML not available (nvmlInit: %s)", nvml_error(&nv, r));
    goto out;
  }
  *out = nv;
  nv.lib = NULL; /* handed over */
out:
  if (nv.lib)
    dlclose(nv.lib);
  return rc;
}

void ks_nvml_unload(ks_nvml *nvml) {
  if (nvml->lib) {
    nvml->Shutdown();
    dlclose(nvml->lib);
  }
  memset(nvml, 0, sizeof *nvml);
}

int ks_nvml_driver_version(ks_ctx *ctx, const ks_nvml *nvml, char *out, size_t size) {
  return nvml_check(ctx, nvml, nvml->SystemGetDriverVersion(out, (unsigned)size),
                    "nvmlSystemGetDriverVersion");
}

int ks_nvml_device_count(ks_ctx *ctx, const ks_nvml *nvml) {
  unsigned count = 0;
  if (nvml_check(ctx, nvml, nvml->DeviceGetCount(&count), "nvmlDeviceGetCount"))
    return -1;
  return (int)count;
}

int ks_nvml_device_by_index(ks_ctx *ctx, const ks_nvml *nvml, unsigned index,
                            ks_nvml_device *out) {
  return nvml_check(ctx, nvml, nvml->DeviceGetHandleByIndex(index, out),
                    "nvmlDeviceGetHandleByIndex");
}

int ks_nvml_device_by_pci(ks_ctx *ctx, const ks_nvml *nvml, const char *bus_id,
                          ks_nvml_device *out) {
  return nvml_check(ctx, nvml, nvml->DeviceGetHandleByPciBusId(bus_id, out),
                    "nvmlDeviceGetHandleByPciBusId");
}

int ks_nvml_device_name(ks_ctx *ctx, const ks_nvml *nvml, ks_nvml_device dev, char *out,
                        size_t size) {
  return nvml_check(ctx, nvml, nvml->DeviceGetName(dev, out, (unsigned)size),
                    "nvmlDeviceGetName");
}

/* A reading, or -1 when NVML cannot give it; remembers a lost GPU, the one
 * failure that makes the whole sample meaningless. */
static int reading(int result, unsigned value, bool *lost) {
  if (result == NVML_ERROR_GPU_IS_LOST)
    *lost = true;
  return result == NVML_SUCCESS ? (int)value : -1;
}

int ks_nvml_sample_device(ks_ctx *ctx, const ks_nvml *nvml, ks_nvml_device dev,
                          ks_nvml_sample *out) {
  memset(out, 0, sizeof *out);
  bool lost = false;
  unsigned v = 0;
  int r;
  /* One statement per query: the call must run before `v` is read. */
  r = nvml->DeviceGetClockInfo(dev, NVML_CLOCK_SM, &v);
  out->sm_clock_mhz = reading(r, v, &lost);
  r = nvml->DeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &v);
  out->sm_clock_max_mhz = reading(r, v, &lost);
  r = nvml->DeviceGetClockInfo(dev, NVML_CLOCK_MEM, &v);
  out->mem_clock_mhz = reading(r, v, &lost);
  r = nvml->DeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &v);
  out->temperature_c = reading(r, v, &lost);
  r = nvml->DeviceGetPowerUsage(dev, &v);
  out->power_mw = reading(r, v, &lost);
  r = nvml->DeviceGetEnforcedPowerLimit(dev, &v);
  out->power_limit_mw = reading(r, v, &lost);
  if (nvml->DeviceGetClocksEventReasons)
    out->has_reasons = nvml->DeviceGetClocksEventReasons(dev, &out->reasons) == NVML_SUCCESS;
  if (!out->has_reasons)
    out->reasons = 0;
  if (lost)
    return ks_fail(ctx, "NVML: %s", nvml_error(nvml, NVML_ERROR_GPU_IS_LOST));
  return 0;
}

bool ks_nvml_sample_throttled(const ks_nvml_sample *sample, double min_fraction) {
  if (sample->has_reasons && (sample->reasons & KS_NVML_REASONS_THROTTLED))
    return true;
  if (sample->sm_clock_mhz > 0 && sample->sm_clock_max_mhz > 0)
    return sample->sm_clock_mhz < min_fraction * sample->sm_clock_max_mhz;
  return false;
}
