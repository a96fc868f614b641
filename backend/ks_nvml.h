/* ks_nvml: NVIDIA's management library, loaded at run time, for what the
 * CUDA driver does not say: the clocks the GPU runs at right now, its
 * temperature and power draw, and why its clocks are held down.
 *
 * The timing loop samples it around measurements and drops the samples taken
 * while the SM clock was low or throttled; doctor shows it. NVML is optional
 * everywhere: when libnvidia-ml.so.1 is absent, ks_nvml_load fails with a
 * message and callers carry on without it.
 *
 * The toolkit ships no nvml.h, so the few types needed are declared here,
 * with NVML's values; the ABI is NVML's C ABI (enums as int).
 *
 * Ownership: the caller owns the ks_nvml table; ks_nvml_unload shuts NVML
 * down. Device handles are NVML's and stay valid until then. */
#ifndef KS_NVML_H
#define KS_NVML_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_ctx.h"

typedef struct nvmlDevice_st *ks_nvml_device; /* NVML's nvmlDevice_t */

/* nvmlClocksEventReasons bits (also called throttle reasons). */
enum {
  KS_NVML_REASON_IDLE = 0x1,              /* nothing running: clocks at idle */
  KS_NVML_REASON_APP_CLOCKS = 0x2,        /* application clocks setting */
  KS_NVML_REASON_SW_POWER_CAP = 0x4,      /* power limit reached */
  KS_NVML_REASON_HW_SLOWDOWN = 0x8,       /* hardware slowdown (heat, power brake) */
  KS_NVML_REASON_SYNC_BOOST = 0x10,
  KS_NVML_REASON_SW_THERMAL = 0x20,
  KS_NVML_REASON_HW_THERMAL = 0x40,
  KS_NVML_REASON_HW_POWER_BRAKE = 0x80,
  KS_NVML_REASON_DISPLAY_CLOCKS = 0x100,
};
/* Reasons that make a timing sample untrustworthy: the GPU was slowed by
 * heat or by a hardware brake. The software power cap is left out: a heavy
 * kernel reaches it in steady state, which is its real speed, not noise. */
#define KS_NVML_REASONS_THROTTLED                                                                  \
  (KS_NVML_REASON_HW_SLOWDOWN | KS_NVML_REASON_SW_THERMAL | KS_NVML_REASON_HW_THERMAL |           \
   KS_NVML_REASON_HW_POWER_BRAKE)

typedef struct ks_nvml {
  void *lib; /* dlopen handle of libnvidia-ml.so.1 */

  /* NVML's functions (nvmlReturn_t is an int-sized enum, 0 on success).
   * ClocksEventReasons is nvmlDeviceGetCurrentClocksEventReasons, or its
   * older name ...ClocksThrottleReasons; it may be NULL. */
  int (*Init)(void); /* nvmlInit_v2 */
  int (*Shutdown)(void);
  const char *(*ErrorString)(int result);
  int (*SystemGetDriverVersion)(char *version, unsigned length);
  int (*DeviceGetCount)(unsigned *count); /* _v2 */
  int (*DeviceGetHandleByIndex)(unsigned index, ks_nvml_device *device); /* _v2 */
  int (*DeviceGetHandleByPciBusId)(const char *bus_id, ks_nvml_device *device); /* _v2 */
  int (*DeviceGetName)(ks_nvml_device device, char *name, unsigned length);
  int (*DeviceGetClockInfo)(ks_nvml_device device, int clock_type, unsigned *mhz);
  int (*DeviceGetMaxClockInfo)(ks_nvml_device device, int clock_type, unsigned *mhz);
  int (*DeviceGetTemperature)(ks_nvml_device device, int sensor, unsigned *celsius);
  int (*DeviceGetPowerUsage)(ks_nvml_device device, unsigned *milliwatts);
  int (*DeviceGetEnforcedPowerLimit)(ks_nvml_device device, unsigned *milliwatts);
  int (*DeviceGetClocksEventReasons)(ks_nvml_device device, unsigned long long *reasons);
} ks_nvml;

/* One reading of a device. A value NVML could not give is -1 (reasons: 0
 * with has_reasons false). */
typedef struct ks_nvml_sample {
  int sm_clock_mhz;        /* now */
  int sm_clock_max_mhz;    /* the most it can boost to */
  int mem_clock_mhz;       /* now */
  int temperature_c;       /* GPU core */
  int power_mw;            /* draw now */
  int power_limit_mw;      /* enforced limit */
  unsigned long long reasons; /* KS_NVML_REASON_* holding the clocks down */
  bool has_reasons;
} ks_nvml_sample;

/* Opens libnvidia-ml.so.1 and calls nvmlInit. On failure returns -1 with one
 * sentence ("NVML not available (...)") and leaves `out` zeroed. Fault site
 * "nvml_load" makes it fail as if NVML were absent. */
int ks_nvml_load(ks_ctx *ctx, ks_nvml *out);
/* nvmlShutdown and dlclose; safe on a zeroed table. */
void ks_nvml_unload(ks_nvml *nvml);

/* The driver version NVML reports ("580.159.03") into `out`. */
int ks_nvml_driver_version(ks_ctx *ctx, const ks_nvml *nvml, char *out, size_t size);
/* Number of devices NVML sees (all of the machine's, ignoring
 * CUDA_VISIBLE_DEVICES), or -1. */
int ks_nvml_device_count(ks_ctx *ctx, const ks_nvml *nvml);
/* A device by NVML index. */
int ks_nvml_device_by_index(ks_ctx *ctx, const ks_nvml *nvml, unsigned index,
                            ks_nvml_device *out);
/* The device CUDA knows by this PCI bus id (ks_gpu_info.pci_bus_id): the
 * reliable way from a CUDA ordinal to NVML, whose order may differ. */
int ks_nvml_device_by_pci(ks_ctx *ctx, const ks_nvml *nvml, const char *bus_id,
                          ks_nvml_device *out);
int ks_nvml_device_name(ks_ctx *ctx, const ks_nvml *nvml, ks_nvml_device dev, char *out,
                        size_t size);
/* Reads clocks, temperature and power. Fails only when the device itself
 * cannot be read (e.g. it fell off the bus); a single unsupported query
 * leaves -1 in its field. */
int ks_nvml_sample_device(ks_ctx *ctx, const ks_nvml *nvml, ks_nvml_device dev,
                          ks_nvml_sample *out);
/* True when a sample says the clocks were held down by heat or power, or
 * the SM clock was below `min_fraction` of its maximum (an idle GPU that
 * had not yet clocked up when the sample began). */
bool ks_nvml_sample_throttled(const ks_nvml_sample *sample, double min_fraction);

#endif
