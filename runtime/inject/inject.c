/* The CUPTI injection library of `kernelsmith-cc profile`. The CUDA driver
 * loads it into the user's program (CUDA_INJECTION64_PATH) and calls
 * InitializeInjection once, during cuInit. From then on every kernel
 * execution comes back as a CUPTI activity record, and each one becomes a
 * "kernel" line of KERNELSMITH_PROFILE_OUT (docs/profile-format.md).
 *
 * It lives in someone else's process, so: nothing of ours is linked, only
 * InitializeInjection is exported, nothing goes to stdout, nothing calls
 * exit or abort, and any failure prints one line to stderr and leaves the
 * program running exactly as it would without us.
 *
 * The state is global, against the project's rule, because CUPTI's buffer
 * callbacks and atexit carry no user pointer and there is one injection
 * per process anyway. */
#include "inject_json.h"
#include "capture.h"
#include "sample.h"

#include <cupti.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KSRT_EXPORT __attribute__((visibility("default")))

/* CUPTI asks for buffers one at a time; 8 MiB holds tens of thousands of
 * kernel records, so a busy program still completes a buffer rarely. */
#define BUFFER_BYTES (8u << 20)
#define BUFFER_ALIGN 8
/* How often records reach the file, so that a crash loses little. */
#define FLUSH_PERIOD_MS 1000

/* Launches whose API we remember, by correlation id modulo the table size.
 * Ids grow by one per API call, so the table is a ring: an entry is only
 * overwritten after 2^20 more calls, far more than are in flight between a
 * launch and the delivery of its record (at most a flush period). */
#define API_SLOTS (1u << 20)
enum { API_UNKNOWN = 0, API_RUNTIME = 1, API_DRIVER = 2 };

static struct {
  pthread_mutex_t lock;        /* guards fd, out, kernels, ended */
  int fd;                      /* the profile file, -1 when passive */
  ksrt_jbuf out;               /* lines waiting for write() */
  uint64_t kernels;            /* kernel lines written */
  int ended;                   /* the end line is written: later records are dropped */
  pid_t pid;                   /* the process that was injected (not a forked child) */
  pthread_mutex_t flush_lock;  /* one flush at a time; guards stopping */
  int stopping;                /* atexit has begun: the flusher thread must not flush */
  _Atomic uint64_t *api_slots; /* (correlation id << 8) | API_* */
  CUpti_SubscriberHandle subscriber;
  bool trace;                  /* KERNELSMITH_INJECT_TRACE=1 */
  bool sampling;               /* KERNELSMITH_PROFILE_SAMPLE (sample.h) */
} g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .flush_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* How deep this thread is inside runtime launch calls: a driver launch
 * made by the runtime on the user's behalf is still a runtime launch. */
static _Thread_local unsigned runtime_depth;

static atomic_flag reported = ATOMIC_FLAG_INIT;

/* The first failure is worth a line on stderr; the rest are its echoes. */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
  if (atomic_flag_test_and_set(&reported))
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kernelsmith-inject: %s; not profiling, the program runs unchanged\n", msg);
}

static const char *cupti_error(CUptiResult r) {
  const char *s = NULL;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
    return "unknown CUPTI error";
  return s;
}

static uint64_t now_ns(void) {
  uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS)
    t = 0;
  return t;
}

/* --- the file --- */

/* Writes what is queued and makes it durable. With g.lock held. On a write
 * error the library turns passive: the program matters more than us. */
static void drain_locked(void) {
  const char *p = g.out.data;
  size_t left = g.out.len;
  while (g.fd >= 0 && left) {
    ssize_t n = write(g.fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      report("writing the profile: %s", n < 0 ? strerror(errno) : "nothing written");
      close(g.fd);
      g.fd = -1;
      break;
    }
    p += n;
    left -= (size_t)n;
  }
  g.out.len = 0;
  /* Pipes and terminals cannot fsync (EINVAL); that is fine. */
  if (g.fd >= 0)
    (void)fsync(g.fd);
}

/* --- which API launched a kernel (the Callback API) --- */

static void note_api(uint32_t correlation, unsigned api) {
  if (!g.api_slots || !correlation)
    return;
  atomic_store_explicit(&g.api_slots[correlation & (API_SLOTS - 1)],
                        ((uint64_t)correlation << 8) | api, memory_order_release);
}

static const char *api_name(uint32_t correlation) {
  if (!g.api_slots || !correlation)
    return "unknown";
  uint64_t v = atomic_load_explicit(&g.api_slots[correlation & (API_SLOTS - 1)],
                                    memory_order_acquire);
  if (v >> 8 != correlation)
    return "unknown";
  switch (v & 0xff) {
  case API_RUNTIME: return "runtime";
  case API_DRIVER: return "driver";
  default: return "unknown";
  }
}

/* The kernel record carries the correlation id of the outermost API call
 * (the runtime's, for <<<>>>); the driver call the runtime makes may carry
 * its own. Both are noted as "runtime", so either way the record matches. */
static void CUPTIAPI on_launch(void *userdata, CUpti_CallbackDomain domain,
                               CUpti_CallbackId cbid, const void *data) {
  const CUpti_CallbackData *cb = data;
  if (g.trace && cb->callbackSite == CUPTI_API_ENTER)
    fprintf(stderr, "kernelsmith-inject: trace: %s %u %s\n",
            domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", (unsigned)cbid,
            cb->functionName ? cb->functionName : "?");
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    ksrt_capture_on_driver(cbid, cb);
  /* Sampling counts every launch once: at the outermost launch call. */
  if (g.sampling && cb->callbackSite == CUPTI_API_ENTER && !runtime_depth)
    ksrt_sample_count(cb->symbolName);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      runtime_depth++;
      note_api(cb->correlationId, API_RUNTIME);
    } else if (runtime_depth) {
      runtime_depth--;
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cb->callbackSite == CUPTI_API_ENTER) {
    note_api(cb->correlationId, runtime_depth ? API_RUNTIME : API_DRIVER);
  }
}

static const CUpti_CallbackId runtime_launches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
#if CUPTI_API_VERSION >= 17
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
#endif
#if CUPTI_API_VERSION >= 130000
    /* What <<<>>> compiles to from CUDA 13 on. */
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
};

static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
#if CUPTI_API_VERSION >= 19
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
#endif
};

/* Subscribes to the launch callbacks only. A CBID this CUPTI does not know
 * is skipped: the kernels it launches are then reported as "unknown". */
static CUptiResult watch_launches(void) {
  CUptiResult r = cuptiSubscribe(&g.subscriber, on_launch, NULL);
  if (r != CUPTI_SUCCESS)
    return r;
  g.api_slots = calloc(API_SLOTS, sizeof *g.api_slots);
  /* KERNELSMITH_INJECT_CALLBACKS=0: kernel records only, every "api"
   * unknown and nothing captured; for measuring what the callbacks cost. */
  const char *cbs = getenv("KERNELSMITH_INJECT_CALLBACKS");
  if (cbs && !strcmp(cbs, "0"))
    return CUPTI_SUCCESS;
  for (size_t i = 0; i < sizeof runtime_launches / sizeof *runtime_launches; i++)
    (void)cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_launches[i]);
  for (size_t i = 0; i < sizeof driver_launches / sizeof *driver_launches; i++)
    (void)cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, driver_launches[i]);
  /* KERNELSMITH_INJECT_TRACE=1: every driver call named on stderr (which
   * entry points a runtime's launches go through). */
  const char *trace = getenv("KERNELSMITH_INJECT_TRACE");
  if (trace && *trace == '1') {
    g.trace = true;
    (void)cuptiEnableDomain(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  return CUPTI_SUCCESS;
}

/* --- activity buffers --- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  void *p = NULL;
  if (posix_memalign(&p, BUFFER_ALIGN, BUFFER_BYTES) != 0)
    p = NULL; /* CUPTI drops the records and says so: a "dropped" line */
  *buffer = p;
  *size = p ? BUFFER_BYTES : 0;
  *max_records = 0; /* as many as fit */
}

/* Every kernel record version since CUpti_ActivityKernel4 begins with the
 * same fields, so reading through Kernel4 works with any CUPTI that
 * delivers a newer record. */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 newest_kernel_record;
#else /* older toolkits: checked when built against CUDA 13 */
typedef CUpti_ActivityKernel4 newest_kernel_record;
#endif
#define SAME_OFFSET(field)                                                              \
  _Static_assert(offsetof(CUpti_ActivityKernel4, field) == offsetof(newest_kernel_record, field), \
                 "CUPTI moved " #field)
SAME_OFFSET(start);
SAME_OFFSET(end);
SAME_OFFSET(deviceId);
SAME_OFFSET(contextId);
SAME_OFFSET(streamId);
SAME_OFFSET(gridX);
SAME_OFFSET(blockZ);
SAME_OFFSET(staticSharedMemory);
SAME_OFFSET(dynamicSharedMemory);
SAME_OFFSET(correlationId);
SAME_OFFSET(name);

static void kernel_line(const CUpti_ActivityKernel4 *k, ksrt_kernel_line *out) {
  *out = (ksrt_kernel_line){
      .name = k->name,
      .grid = {k->gridX, k->gridY, k->gridZ},
      .block = {k->blockX, k->blockY, k->blockZ},
      .smem_static = k->staticSharedMemory,
      .smem_dynamic = k->dynamicSharedMemory,
      .stream = k->streamId,
      .device = k->deviceId,
      .context = k->contextId,
      .correlation = k->correlationId,
      .start_ns = k->start,
      .end_ns = k->end,
      .api = api_name(k->correlationId),
  };
}

/* Runs on CUPTI's thread or inside cuptiActivityFlushAll. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid) {
  pthread_mutex_lock(&g.lock);
  if (g.fd >= 0 && !g.ended && buffer) {
    CUpti_Activity *rec = NULL;
    int lost = 0;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
        continue;
      ksrt_kernel_line line;
      kernel_line((const CUpti_ActivityKernel4 *)rec, &line);
      if (ksrt_json_kernel(&g.out, &line) == 0)
        g.kernels++;
      else
        lost++;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS)
      dropped = 0;
    /* Records we could not write for want of memory are dropped too. */
    if (dropped + (size_t)lost)
      (void)ksrt_json_dropped(&g.out, (uint64_t)dropped + (uint64_t)lost);
    drain_locked();
  }
  pthread_mutex_unlock(&g.lock);
  free(buffer);
}

/* --- flushing: periodically and at exit --- */

/* CUPTI's own periodic flush hands over full buffers only; a default
 * flush every period also hands over the partly filled ones whose records
 * are complete, so that a crash loses at most about one period. */
static void *flusher(void *arg) {
  for (;;) {
    struct timespec ts = {FLUSH_PERIOD_MS / 1000, (FLUSH_PERIOD_MS % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&g.flush_lock);
    if (g.stopping) {
      pthread_mutex_unlock(&g.flush_lock);
      return NULL;
    }
    (void)cuptiActivityFlushAll(0);
    pthread_mutex_unlock(&g.flush_lock);
    if (g.sampling) {
      pthread_mutex_lock(&g.lock);
      if (g.fd >= 0 && !g.ended) {
        (void)ksrt_sample_lines(&g.out, (long)g.pid);
        drain_locked();
      }
      pthread_mutex_unlock(&g.lock);
    }
  }
}

/* The thread must never receive the program's signals: they are the
 * program's business, and a handler running on our thread would surprise it. */
static void start_flusher(void) {
  sigset_t all, old;
  pthread_attr_t attr;
  pthread_t tid;
  sigfillset(&all);
  if (pthread_attr_init(&attr) != 0)
    return;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  (void)pthread_create(&tid, &attr, flusher, NULL); /* without it, CUPTI's period still runs */
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
}

static void at_exit(void) {
  /* A forked child inherits our state but not the CUDA context: the end
   * line belongs to the process that was injected. */
  if (getpid() != g.pid)
    return;
  ksrt_capture_finish();
  ksrt_sample_stop(); /* kernel activity on again, for the forced flush */
  pthread_mutex_lock(&g.flush_lock);
  g.stopping = 1;
  (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_unlock(&g.flush_lock);

  /* Records lost after the last buffer was delivered have no buffer to
   * be reported with. */
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  pthread_mutex_lock(&g.lock);
  if (g.fd >= 0 && !g.ended) {
    if (dropped)
      (void)ksrt_json_dropped(&g.out, dropped);
    if (g.sampling)
      (void)ksrt_sample_lines(&g.out, (long)g.pid);
    (void)ksrt_json_end(&g.out, g.kernels, now_ns());
    g.ended = 1;
    drain_locked();
  }
  pthread_mutex_unlock(&g.lock);
}

/* --- the entry point --- */

/* Undoes what set-up had done before a failure, so CUPTI stays out of the
 * program's way. */
static void stand_down(int activity_enabled) {
  if (activity_enabled)
    (void)cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (g.subscriber) {
    (void)cuptiUnsubscribe(g.subscriber);
    g.subscriber = NULL;
  }
  pthread_mutex_lock(&g.lock);
  if (g.fd >= 0)
    close(g.fd);
  g.fd = -1;
  pthread_mutex_unlock(&g.lock);
}

KSRT_EXPORT int InitializeInjection(void);

/* Always answers 1 (done): a failure here must not change what the driver
 * does for the program. */
int InitializeInjection(void) {
  static atomic_flag called = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&called))
    return 1;
  const char *path = getenv("KERNELSMITH_PROFILE_OUT");
  if (!path || !*path)
    return 1;

  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    report("cannot open KERNELSMITH_PROFILE_OUT %s: %s", path, strerror(errno));
    return 1;
  }
  g.fd = fd;
  g.pid = getpid();

  /* The subscriber first: CUPTI allows one per process, and when another
   * tool (Nsight, cuda-gdb, compute-sanitizer) holds it, we step aside. */
  CUptiResult r = watch_launches();
  if (r != CUPTI_SUCCESS) {
    report("cuptiSubscribe: %s", cupti_error(r));
    stand_down(0);
    return 1;
  }
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityRegisterCallbacks: %s", cupti_error(r));
    stand_down(0);
    return 1;
  }
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    report("cuptiActivityEnable(CONCURRENT_KERNEL): %s", cupti_error(r));
    stand_down(0);
    return 1;
  }
  uint32_t version = 0;
  if (cuptiGetVersion(&version) != CUPTI_SUCCESS)
    version = 0;

  /* Before the start line, so that a file with a start line always gets
   * its end line when the program exits normally. */
  if (atexit(at_exit) != 0) {
    report("atexit failed");
    stand_down(1);
    return 1;
  }
  pthread_mutex_lock(&g.lock);
  int ok = ksrt_json_start(&g.out, (long)g.pid, version, now_ns()) == 0;
  unsigned sample = ksrt_sample_init();
  if (ok && sample) {
    g.sampling = true;
    ok = ksrt_json_sample(&g.out, sample, ksrt_sample_period_ms(), ksrt_sample_after_ms()) == 0;
  }
  if (ok)
    drain_locked();
  ok = ok && g.fd >= 0;
  pthread_mutex_unlock(&g.lock);
  if (!ok) {
    report("cannot write the start line to %s", path);
    stand_down(1);
    return 1;
  }
  /* Optional: older CUPTIs may lack it; our own flusher covers the need. */
  (void)cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
  start_flusher();
  ksrt_sample_start();
  ksrt_capture_init(); /* after the start line: a capture needs the callbacks above */
  return 1;
}
