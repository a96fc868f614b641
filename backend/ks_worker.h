/* ks_worker: the GPU worker process and the main process's handle on it.
 *
 * All GPU work runs in `kernelsmith-worker`, a small executable with no
 * libclang, talking to the main process over a pair of pipes
 * (docs/worker-protocol.md). A request carries everything: the cubins, the
 * launch, the inputs' recipe and seeds; no shared files, no pointers, so a
 * worker could as well run on another machine. The worker loads, launches,
 * verifies and times; the main process compiles and decides verdicts.
 *
 * An illegal address, a trap, a hang (wall-clock limit, then SIGKILL) or a
 * sticky CUDA error costs one request: ks_worker_run reports it in the
 * result and restarts the worker, and the evaluation goes on.
 *
 * Ownership: the caller owns the ks_worker (ks_worker_stop). Results are
 * allocated in the arena the caller passes. */
#ifndef KS_WORKER_H
#define KS_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "ks_alloc.h"
#include "ks_ctx.h"
#include "ks_eval.h"
#include "ks_spec.h"

typedef struct ks_worker ks_worker;

typedef struct ks_worker_options {
  const char *executable; /* NULL: kernelsmith-worker beside the running
                             binary, or $KERNELSMITH_WORKER */
  int device;             /* CUDA device ordinal */
  unsigned timeout_ms;    /* wall-clock limit per request before SIGKILL;
                             0: 60000 */
} ks_worker_options;

typedef struct ks_device_info {
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  unsigned long long memory_bytes;
  unsigned long long l2_bytes;
  int driver_version;     /* cuDriverGetVersion */
  char driver[64];        /* NVML's driver version string, or "" */
  char pci_bus_id[32];
  char uuid[64];          /* stable identity, for the ceilings cache */
  double peak_bandwidth;  /* bytes/s from the memory clock and bus width */
  int sm_clock_max_mhz;   /* NVML, 0 when unknown */
} ks_device_info;

/* A compiled kernel to run: a cubin and the lowered name of its function. */
typedef struct ks_module {
  const void *cubin;
  size_t size;
  const char *function;
} ks_module;

typedef struct ks_timing_options {
  unsigned min_samples;       /* per kernel; default 10 */
  unsigned max_samples;       /* per kernel; default 200 */
  double target_rsd;          /* stop when both relative std devs are under
                                 this; default 0.005 */
  double max_seconds;         /* wall-clock cap for the timing loop; default 5 */
  unsigned warmup;            /* launches before timing; default 3 */
  unsigned long long flush_bytes; /* L2 flush buffer; 0: twice the L2 */
  double min_clock_fraction;  /* drop samples taken below this fraction of
                                 the maximum SM clock; default 0.75 */
  bool warm;                  /* no L2 flush and no input restore between
                                 samples: the data stay in L2 and as the last
                                 run left them, as in a program that launches
                                 the kernel back to back (no recheck after) */
} ks_timing_options;

typedef struct ks_run_request {
  ks_module base;            /* the original kernel (always) */
  ks_module cand;            /* the variant; cubin NULL: time base alone */
  ks_module ref;             /* the original's fp64 twin (docs/judge.md, "The
                                fp64 reference"); cubin NULL: none. With a
                                candidate and `verify`, it runs on every
                                seed's inputs widened (f32 -> f64), with the
                                original's launch, and both kernels' float
                                outputs are measured against it */
  const ks_workload *work;   /* buffers, args and the original's launch */
  ks_launch_cfg cand_launch; /* the variant's launch (its policy, evaluated) */
  const unsigned long long *seeds; /* one fresh input set each */
  size_t nseeds;
  bool verify;               /* compare cand with base for every seed */
  bool time;                 /* interleaved timing, then the last timed
                                output rechecked on new inputs */
  bool replay;               /* the original alone, once per seed, its
                                outputs compared with what the workload's
                                capture recorded (expect_file); the result
                                has one seed check per seed, with only
                                the capture fields of its outputs set */
  unsigned long long recheck_seed; /* inputs for that recheck */
  bool no_recheck;           /* time without the recheck: screening asks for
                                it only once the timing made the variant
                                FAST (docs/judge.md, "Screening") */
  ks_timing_options timing;
} ks_run_request;

typedef enum ks_run_status {
  KS_RUN_OK,            /* ran; see the checks */
  KS_RUN_LOAD_FAILED,   /* the module or function would not load */
  KS_RUN_LAUNCH_FAILED, /* launch refused (bad configuration, too much shared
                           memory, too many registers for the block) */
  KS_RUN_CRASHED,       /* illegal address, trap, or the worker died; the
                           worker was restarted */
  KS_RUN_TIMEOUT,       /* exceeded the wall-clock limit; killed, restarted */
  KS_RUN_NO_DEVICE,     /* no driver or no GPU */
} ks_run_status;

typedef KS_ARRAY(double) ks_samples;

typedef struct ks_timing {
  ks_samples base_ms;        /* kept samples, in the order taken */
  ks_samples cand_ms;
  unsigned dropped_low_clock;
  double sm_clock_min_mhz;   /* over the kept samples (NVML; 0 if unknown) */
  double sm_clock_max_mhz;
  double seconds;            /* wall time of the timing loop */
  ks_output_checks recheck;  /* last timed run of the candidate, on fresh
                                inputs, against the original on the same */
} ks_timing;

typedef struct ks_run_result {
  ks_run_status status;
  const char *error;         /* what went wrong, for statuses other than OK */
  const char *error_kernel;  /* "base" or "cand" when a kernel failed */
  ks_seed_checks seeds;
  bool timed;
  ks_timing timing;
  int base_registers, cand_registers;   /* cuFuncGetAttribute */
  int base_spill_bytes, cand_spill_bytes; /* local memory per thread */
  int base_static_smem, cand_static_smem;
} ks_run_result;

int ks_worker_start(ks_ctx *ctx, const ks_worker_options *opts, ks_worker **out);
void ks_worker_stop(ks_worker *worker);
/* Device facts; fails when the worker reports no usable GPU. */
int ks_worker_hello(ks_ctx *ctx, ks_worker *worker, ks_device_info *out);
/* Returns 0 with out->status for anything a candidate can cause; -1 (with
 * ks_fail) only when the tool itself cannot go on (the worker cannot be
 * started again). */
int ks_worker_run(ks_ctx *ctx, ks_worker *worker, const ks_run_request *req, ks_arena *arena,
                  ks_run_result *out);

/* The device's ceilings, measured by the worker: device-to-device copy
 * bandwidth (bytes read + written per second) and FMA rate (FLOP/s), from
 * the given cubins (compiled by the caller from ks_ceiling_kernels). */
typedef struct ks_ceilings {
  double bandwidth;   /* bytes/s */
  double flops_fp32;  /* FLOP/s */
} ks_ceilings;
extern const char ks_ceiling_kernels[]; /* CUDA source: ks_copy, ks_fma */
int ks_worker_ceilings(ks_ctx *ctx, ks_worker *worker, const ks_module *copy,
                       const ks_module *fma, ks_ceilings *out);

#endif
