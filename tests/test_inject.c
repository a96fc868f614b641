/* Tests of the CUPTI injection library of `profile` without a GPU.
 *
 * test_inject (the cmocka tests): the JSON-line writer
 * (runtime/inject/inject_json.c, compiled in so that the sanitizers see it)
 * byte for byte and through Python's strict JSON parser; the library
 * dlopened into a child as the driver would, over the real CUPTI: silent
 * without KERNELSMITH_PROFILE_OUT, one stderr line and an unchanged program
 * when it cannot work; and over a fake CUPTI, the whole recording: records
 * to lines, runtime/driver attribution, dropped records, the end line, the
 * periodic flush before a SIGKILL, fork, many threads, another subscriber.
 *
 * test_inject_app (this file built with KS_INJECT_FAKE_CUPTI): the pretend
 * application of those last tests. It defines CUPTI's functions itself and
 * exports them, so the library, loaded into it, binds to them rather than
 * to libcupti; they play launches and deliver records as CUPTI would. */
#ifdef KS_INJECT_FAKE_CUPTI
#include <cupti.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CUPTI's exported names, defined here; prototypes come from cupti.h. */
#define FAKE_API __attribute__((visibility("default")))

static struct {
  pthread_mutex_t lock;                 /* guards everything below */
  CUpti_CallbackFunc callback;          /* the library's launch callback */
  unsigned char enabled[2][1024];       /* [runtime|driver][cbid] */
  CUpti_BuffersCallbackRequestFunc request;
  CUpti_BuffersCallbackCompleteFunc complete;
  int activity_on;                      /* CONCURRENT_KERNEL enabled */
  uint8_t *buffer;                      /* records not yet delivered */
  size_t size, used;
  size_t dropped;                       /* reported once, then zero */
  int subscribe_fails;                  /* another tool holds CUPTI */
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

static char subscriber_token;

FAKE_API CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb,
                                             void *userdata) {
  if (fake.subscribe_fails)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  fake.callback = cb;
  *sub = (CUpti_SubscriberHandle)(void *)&subscriber_token;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub) {
  fake.callback = NULL;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                                                  CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : -1;
  if (d < 0 || cbid >= 1024 || sub != (CUpti_SubscriberHandle)(void *)&subscriber_token)
    return CUPTI_ERROR_INVALID_PARAMETER;
  fake.enabled[d][cbid] = enable != 0;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                             CUpti_BuffersCallbackCompleteFunc done) {
  fake.request = req;
  fake.complete = done;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || !fake.request)
    return CUPTI_ERROR_INVALID_PARAMETER;
  fake.activity_on = 1;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
  fake.activity_on = 0;
  return CUPTI_SUCCESS;
}

/* Hands the pending buffer to the library, outside our lock as CUPTI
 * would from its own thread. */
static void deliver(void) {
  pthread_mutex_lock(&fake.lock);
  uint8_t *buf = fake.buffer;
  size_t size = fake.size, used = fake.used;
  fake.buffer = NULL;
  fake.used = 0;
  pthread_mutex_unlock(&fake.lock);
  if (buf)
    fake.complete(NULL, 0, buf, size, used);
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  deliver();
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t ms) { return CUPTI_SUCCESS; }

FAKE_API CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                         CUpti_Activity **record) {
  uint8_t *next = *record ? (uint8_t *)*record + sizeof(CUpti_ActivityKernel10) : buffer;
  if ((size_t)(next - buffer) + sizeof(CUpti_ActivityKernel10) > valid)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity *)next;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                                size_t *dropped) {
  pthread_mutex_lock(&fake.lock);
  *dropped = fake.dropped;
  fake.dropped = 0;
  pthread_mutex_unlock(&fake.lock);
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version) {
  *version = 130001;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *t) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return CUPTI_SUCCESS;
}

FAKE_API CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
           ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}

static void api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
                     uint32_t correlation, const char *symbol) {
  int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1;
  if (!fake.callback || !fake.enabled[d][cbid])
    return;
  CUpti_CallbackData data;
  memset(&data, 0, sizeof data);
  data.callbackSite = site;
  data.functionName = "fake";
  data.correlationId = correlation;
  data.symbolName = symbol; /* CUPTI's, for launch callbacks */
  fake.callback(NULL, domain, cbid, &data);
}

/* One record, as the GPU would finish it; the timestamps derive from the
 * correlation id so that lines are predictable. */
static void record(CUpti_ActivityKind kind, const char *name, uint32_t correlation, int gx,
                   int bx, int dyn) {
  CUpti_ActivityKernel10 r;
  memset(&r, 0, sizeof r);
  r.kind = kind;
  r.name = name;
  r.gridX = gx, r.gridY = 1, r.gridZ = 1;
  r.blockX = bx, r.blockY = 2, r.blockZ = 1;
  r.staticSharedMemory = 16;
  r.dynamicSharedMemory = dyn;
  r.streamId = 7, r.deviceId = 0, r.contextId = 1;
  r.correlationId = correlation;
  r.start = 1000000ull + correlation;
  r.end = 2000000ull + correlation;
  int full = 0;
  pthread_mutex_lock(&fake.lock);
  if (fake.activity_on) {
    if (!fake.buffer) {
      size_t max_records = 0;
      fake.request(&fake.buffer, &fake.size, &max_records);
      fake.used = 0;
    }
    if (!fake.buffer)
      fake.dropped++;
    else {
      memcpy(fake.buffer + fake.used, &r, sizeof r);
      fake.used += sizeof r;
      full = fake.size - fake.used < sizeof r;
    }
  }
  pthread_mutex_unlock(&fake.lock);
  if (full)
    deliver();
}

/* A launch through the runtime: its callbacks wrap the driver call the
 * runtime makes (correlation + 1); the record carries `record_corr`. */
static void runtime_launch(CUpti_CallbackId cbid, const char *name, uint32_t corr,
                           uint32_t record_corr) {
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER, corr, name);
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
           corr + 1, name);
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT,
           corr + 1, name);
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_EXIT, corr, name);
  record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, name, record_corr, 4, 32, 0);
}

static void driver_launch(CUpti_CallbackId cbid, const char *name, uint32_t corr, int dyn) {
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_ENTER, corr, name);
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_EXIT, corr, name);
  record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, name, corr, 8, 64, dyn);
}

/* A stand-in for the driver calls argument capture makes (runtime/inject/
 * capture.c looks them up in the process when libcuda is not loaded).
 * "Device memory" is host memory: a few registered allocations. */
typedef struct fake_func {
  const char *name;
  size_t nparams;
  size_t offsets[8], sizes[8];
  const struct fake_func *function; /* set: a CUkernel handle, this its function */
} fake_func;

static struct {
  unsigned char *base;
  size_t size;
  int managed;
} fake_mem[4];

static int fake_alloc_of(CUdeviceptr p) {
  for (int i = 0; i < 4; i++)
    if (fake_mem[i].base && p >= (CUdeviceptr)(uintptr_t)fake_mem[i].base &&
        p < (CUdeviceptr)(uintptr_t)fake_mem[i].base + fake_mem[i].size)
      return i;
  return -1;
}

/* As the driver does, a CUkernel passed where a CUfunction is expected is
 * an invalid handle. */
FAKE_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction f) {
  if (((const fake_func *)(void *)f)->function)
    return CUDA_ERROR_INVALID_HANDLE;
  *name = ((const fake_func *)(void *)f)->name;
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *out, CUkernel k) {
  const fake_func *ff = (const fake_func *)(void *)k;
  if (!ff->function)
    return CUDA_ERROR_INVALID_HANDLE;
  *out = (CUfunction)(void *)ff->function;
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction f, size_t i, size_t *offset, size_t *size) {
  const fake_func *ff = (const fake_func *)(void *)f;
  if (ff->function)
    return CUDA_ERROR_INVALID_HANDLE;
  if (i >= ff->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  *offset = ff->offsets[i];
  *size = ff->sizes[i];
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p) {
  int a = fake_alloc_of(p);
  if (a < 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
  else if (attr == CU_POINTER_ATTRIBUTE_IS_MANAGED)
    *(unsigned int *)data = (unsigned int)fake_mem[a].managed;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  int a = fake_alloc_of(p);
  if (a < 0)
    return CUDA_ERROR_NOT_FOUND;
  *base = (CUdeviceptr)(uintptr_t)fake_mem[a].base;
  *size = fake_mem[a].size;
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

FAKE_API CUresult CUDAAPI cuStreamSynchronize(CUstream s) { return CUDA_SUCCESS; }

FAKE_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) {
  *d = 0;
  return CUDA_SUCCESS;
}

static void launch_call(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, uint32_t corr,
                        void *params) {
  if (!fake.callback || !fake.enabled[1][cbid])
    return;
  static CUresult ok = CUDA_SUCCESS;
  CUpti_CallbackData data;
  memset(&data, 0, sizeof data);
  data.callbackSite = site;
  data.functionName = "fake";
  data.correlationId = corr;
  data.functionParams = params;
  data.functionReturnValue = &ok;
  fake.callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
}

/* axpy(float *x, float *y, float a, int n) with x and y in one allocation,
 * launched three times (y = a*x + y each time); scale_c(double *p, int n,
 * double a) in managed memory through cuLaunchKernelEx; other() not chosen;
 * big(float *) over the limit. */
static void capture_scenario(void) {
  static float xy[128];      /* x = xy[0..63], y = xy[64..127] */
  static double managed[16];
  static unsigned char big[1 << 20];
  fake_mem[0].base = (unsigned char *)xy, fake_mem[0].size = sizeof xy;
  fake_mem[1].base = (unsigned char *)managed, fake_mem[1].size = sizeof managed;
  fake_mem[1].managed = 1;
  fake_mem[2].base = big, fake_mem[2].size = sizeof big;
  for (int i = 0; i < 64; i++)
    xy[i] = (float)i, xy[64 + i] = 1.0f;
  for (int i = 0; i < 16; i++)
    managed[i] = i;

  /* launched as the runtime does, through a CUkernel handle */
  fake_func axpy_fn = {"_Z4axpyPfS_fi", 4, {0, 8, 16, 20}, {8, 8, 4, 4}, NULL};
  fake_func axpy = {"(a CUkernel)", 0, {0}, {0}, &axpy_fn};
  CUdeviceptr x = (CUdeviceptr)(uintptr_t)xy, y = (CUdeviceptr)(uintptr_t)(xy + 64);
  float a = 2.0f;
  int n = 64;
  void *axpy_args[] = {&x, &y, &a, &n};
  for (uint32_t k = 0; k < 3; k++) {
    cuLaunchKernel_params p = {(CUfunction)(void *)&axpy, 2, 1, 1, 32, 1, 1, 0,
                               (CUstream)(uintptr_t)0x5000, axpy_args, NULL};
    launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 100 + k, &p);
    for (int i = 0; i < 64; i++) /* the kernel runs */
      xy[64 + i] += a * xy[i];
    launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 100 + k, &p);
  }

  fake_func scale = {"scale_c", 3, {0, 8, 16}, {8, 4, 8}, NULL};
  CUdeviceptr mp = (CUdeviceptr)(uintptr_t)(managed + 4);
  int m = 12;
  double s = 0.5;
  void *scale_args[] = {&mp, &m, &s};
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = 3, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 64, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.sharedMemBytes = 256;
  cuLaunchKernelEx_params pe = {&cfg, (CUfunction)(void *)&scale, scale_args, NULL};
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_ENTER, 200, &pe);
  for (int i = 4; i < 16; i++)
    managed[i] *= s;
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_EXIT, 200, &pe);

  fake_func other = {"_Z5otherv", 0, {0}, {0}, NULL};
  cuLaunchKernel_params po = {(CUfunction)(void *)&other, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL};
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 300, &po);
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 300, &po);

  fake_func bigf = {"_Z3bigPf", 1, {0}, {8}, NULL};
  CUdeviceptr bp = (CUdeviceptr)(uintptr_t)big;
  void *big_args[] = {&bp};
  cuLaunchKernel_params pb = {(CUfunction)(void *)&bigf, 1, 1, 1, 1, 1, 1, 0, NULL, big_args, NULL};
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 400, &pb);
  launch_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 400, &pb);
}

#define THREADS 4
#define PER_THREAD 25000

static void *launcher(void *arg) {
  uint32_t base = 100 + (uint32_t)(uintptr_t)arg * PER_THREAD * 2;
  for (uint32_t i = 0; i < PER_THREAD; i++) {
    uint32_t corr = base + 2 * i;
    if (i % 2)
      runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "_Z4manyv", corr, corr);
    else
      driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "_Z4manyv", corr, 0);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  const char *scenario = argv[2];
  fake.subscribe_fails = strcmp(scenario, "subscriber-taken") == 0;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  int (*init)(void);
  *(void **)&init = dlsym(h, "InitializeInjection");
  if (!init || init() != 1)
    return 3;

  if (strcmp(scenario, "records") == 0) {
    /* <<<>>> on CUDA 13; the record carries the runtime's id. */
    runtime_launch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "_Z1av", 10, 10);
    /* cudaLaunchKernel; the record carries the nested driver call's id. */
    runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "_Z1bv", 20, 21);
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "k\"q\\\n", 30, 512);
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "_Z1cv", 40, 0);
    /* A kernel whose launch we did not see, and a record of another kind. */
    record(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "_Z1dv", 50, 1, 1, 0);
    record(CUPTI_ACTIVITY_KIND_MEMCPY, "not a kernel", 60, 1, 1, 0);
    pthread_mutex_lock(&fake.lock);
    fake.dropped = 5;
    pthread_mutex_unlock(&fake.lock);
  } else if (strcmp(scenario, "crash") == 0) {
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "_Z5crashv", 10, 0);
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "_Z5crashv", 12, 0);
    printf("app: done\n");
    fflush(stdout);
    usleep(2500 * 1000); /* the library flushes every second */
    raise(SIGKILL);
  } else if (strcmp(scenario, "fork") == 0) {
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "_Z4forkv", 10, 0);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
      exit(0); /* runs atexit: the library must stay quiet in the child */
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
      return 4;
  } else if (strcmp(scenario, "threads") == 0) {
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
      pthread_create(&t[i], NULL, launcher, (void *)i);
    for (int i = 0; i < THREADS; i++)
      pthread_join(t[i], NULL);
  } else if (strcmp(scenario, "sampled") == 0) {
    /* KERNELSMITH_PROFILE_SAMPLE=50 over 200 ms: timed for 100 ms, then
     * not; 10 launches in the first window, 10 in the second. */
    static const char hot[] = "_Z3hotv";
    for (uint32_t i = 0; i < 10; i++)
      driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, hot, 10 + 2 * i, 0);
    usleep(140 * 1000);
    for (uint32_t i = 0; i < 10; i++)
      runtime_launch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, hot, 100 + 2 * i,
                     100 + 2 * i);
  } else if (strcmp(scenario, "sampled-late") == 0) {
    /* KERNELSMITH_PROFILE_SAMPLE=10 over 1000 ms. The first launch comes
     * 150 ms after start-up (the period starts there, so it is timed);
     * hot's second burst comes 150 ms later, in the off phase; late's first
     * launches come after it, and wake timing. */
    static const char hot[] = "_Z3hotv", late[] = "_Z4latev";
    usleep(150 * 1000);
    for (uint32_t i = 0; i < 20; i++)
      driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, hot, 10 + 2 * i, 0);
    usleep(150 * 1000);
    for (uint32_t i = 0; i < 10; i++)
      driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, hot, 100 + 2 * i, 0);
    for (uint32_t i = 0; i < 5; i++) {
      driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, late, 200 + 2 * i, 0);
      usleep(10 * 1000);
    }
  } else if (strcmp(scenario, "capture") == 0) {     capture_scenario();
  } else if (strcmp(scenario, "subscriber-taken") != 0) {
    return 2;
  }
  printf("app: done\n");
  return 0;
}

#else /* the cmocka tests */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject_json.h"

static char tmpdir[PATH_MAX];
static char self_exe[PATH_MAX];

/* `s` through the writer, as a NUL-terminated string owned by the caller. */
static char *escaped(const char *s) {
  ksrt_jbuf b = KSRT_JBUF_INIT;
  assert_int_equal(ksrt_json_string(&b, s), 0);
  char *out = malloc(b.len + 1);
  assert_non_null(out);
  memcpy(out, b.data, b.len);
  out[b.len] = '\0';
  ksrt_jbuf_release(&b);
  return out;
}

static void assert_escapes(const char *in, const char *want) {
  char *got = escaped(in);
  assert_string_equal(got, want);
  free(got);
}

static char *buf_string(const ksrt_jbuf *b) {
  char *out = malloc(b->len + 1);
  assert_non_null(out);
  if (b->len)
    memcpy(out, b->data, b->len);
  out[b->len] = '\0';
  return out;
}

static void plain_names_pass_through(void **state) {
  assert_escapes("_Z12saxpy_kernelifPfS_", "\"_Z12saxpy_kernelifPfS_\"");
  assert_escapes("", "\"\"");
  assert_escapes(NULL, "\"\"");
  /* Template names carry spaces, angle brackets, commas and parentheses. */
  assert_escapes("void k<float, (int)4>(float*)", "\"void k<float, (int)4>(float*)\"");
}

static void quotes_backslashes_and_controls_are_escaped(void **state) {
  assert_escapes("a\"b", "\"a\\\"b\"");
  assert_escapes("a\\b", "\"a\\\\b\"");
  assert_escapes("\\\"", "\"\\\\\\\"\"");
  assert_escapes("l1\nl2\tx\r\b\f", "\"l1\\nl2\\tx\\r\\b\\f\"");
  assert_escapes("\x01\x1f", "\"\\u0001\\u001f\"");
  /* DEL is not a control character for JSON. */
  assert_escapes("\x7f", "\"\x7f\"");
}

static void utf8_is_kept_and_bad_bytes_replaced(void **state) {
  assert_escapes("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  assert_escapes("\xff", "\"\\ufffd\"");
  assert_escapes("a\x80z", "\"a\\ufffdz\"");
  /* Overlong '/', a UTF-16 surrogate, past U+10FFFF: one U+FFFD per byte. */
  assert_escapes("\xc0\xaf", "\"\\ufffd\\ufffd\"");
  assert_escapes("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
  assert_escapes("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  /* A sequence cut short by the end of the string or by a quote. */
  assert_escapes("\xe2\x82", "\"\\ufffd\\ufffd\"");
  assert_escapes("\xe2\"", "\"\\ufffd\\\"\"");
}

static void kernel_line_is_exact(void **state) {
  ksrt_jbuf b = KSRT_JBUF_INIT;
  ksrt_kernel_line k = {
      .name = "_Z12saxpy_kernelifPfS_",
      .grid = {4096, 1, 1},
      .block = {256, 1, 1},
      .smem_static = 0,
      .smem_dynamic = 1024,
      .stream = 7,
      .device = 0,
      .context = 1,
      .correlation = 42,
      .start_ns = 1700000000123456789ull,
      .end_ns = UINT64_MAX,
      .api = "runtime",
  };
  assert_int_equal(ksrt_json_kernel(&b, &k), 0);
  char *got = buf_string(&b);
  assert_string_equal(got,
                      "{\"type\":\"kernel\",\"name\":\"_Z12saxpy_kernelifPfS_\","
                      "\"grid\":[4096,1,1],\"block\":[256,1,1],\"smem_static\":0,"
                      "\"smem_dynamic\":1024,\"stream\":7,\"device\":0,\"context\":1,"
                      "\"correlation\":42,\"start_ns\":1700000000123456789,"
                      "\"end_ns\":18446744073709551615,\"api\":\"runtime\"}\n");
  free(got);
  /* A missing api reads "unknown"; negative dimensions (never from CUPTI)
   * still make valid JSON. */
  b.len = 0;
  k.api = NULL;
  k.grid[0] = -1;
  k.name = "q\"";
  assert_int_equal(ksrt_json_kernel(&b, &k), 0);
  got = buf_string(&b);
  assert_non_null(strstr(got, "\"name\":\"q\\\"\""));
  assert_non_null(strstr(got, "\"grid\":[-1,1,1]"));
  assert_non_null(strstr(got, "\"api\":\"unknown\"}\n"));
  free(got);
  ksrt_jbuf_release(&b);
}

static void start_dropped_end_lines_are_exact(void **state) {
  ksrt_jbuf b = KSRT_JBUF_INIT;
  assert_int_equal(ksrt_json_start(&b, 1234, 130001, 99), 0);
  assert_int_equal(ksrt_json_dropped(&b, 17), 0);
  assert_int_equal(ksrt_json_end(&b, 3, 100), 0);
  char *got = buf_string(&b);
  assert_string_equal(got,
                      "{\"type\":\"start\",\"version\":1,\"pid\":1234,\"cupti_version\":130001,"
                      "\"time_ns\":99}\n"
                      "{\"type\":\"dropped\",\"records\":17}\n"
                      "{\"type\":\"end\",\"kernels\":3,\"time_ns\":100}\n");
  free(got);
  ksrt_jbuf_release(&b);
}

/* Lines written to a file must all load with Python's json module, which
 * rejects raw control characters and (reading the file as UTF-8) invalid
 * bytes; names that were valid UTF-8 must come back unchanged. */
static void every_byte_makes_valid_json(void **state) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/lines.jsonl", tmpdir);
  ksrt_jbuf b = KSRT_JBUF_INIT;
  char name[256];
  for (int i = 1; i < 256; i++) /* every byte alone, then all of them */
    name[i - 1] = (char)i;
  name[255] = '\0';
  char one[2] = {0, 0};
  for (int i = 1; i < 256; i++) {
    one[0] = (char)i;
    ksrt_kernel_line k = {.name = one, .api = "driver"};
    assert_int_equal(ksrt_json_kernel(&b, &k), 0);
  }
  ksrt_kernel_line all = {.name = name, .api = "driver"};
  assert_int_equal(ksrt_json_kernel(&b, &all), 0);
  ksrt_kernel_line round = {.name = "t\"e\\s\tt \xc3\xa9\x01", .api = "runtime"};
  assert_int_equal(ksrt_json_kernel(&b, &round), 0);
  /* A name longer than any buffer guess: a long C++ template instance. */
  size_t long_len = 200000;
  char *long_name = malloc(long_len + 1);
  assert_non_null(long_name);
  for (size_t i = 0; i < long_len; i++)
    long_name[i] = "_Z<>\\\"ab"[i % 8];
  long_name[long_len] = '\0';
  ksrt_kernel_line big = {.name = long_name, .api = "runtime"};
  assert_int_equal(ksrt_json_kernel(&b, &big), 0);
  free(long_name);

  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
  assert_int_equal(fclose(f), 0);
  ksrt_jbuf_release(&b);

  char cmd[2 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys\n"
           "rows=[json.loads(l) for l in open(sys.argv[1],encoding=\"utf-8\",newline=\"\\n\")]\n"
           "assert len(rows)==258, len(rows)\n"
           "assert all(r[\"type\"]==\"kernel\" for r in rows)\n"
           "assert [r[\"name\"] for r in rows[:127]]==[chr(i) for i in range(1,128)]\n"
           "assert all(r[\"name\"]==\"\\ufffd\" for r in rows[127:255])\n"
           "assert rows[256][\"name\"]==\"t\\\"e\\\\s\\tt \\u00e9\\x01\"\n"
           "assert len(rows[257][\"name\"])==200000\n"
           "' %s",
           path);
  assert_int_equal(system(cmd), 0);
}

/* --- the library in a child process --- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  assert_non_null(s);
  size_t n;
  while ((n = fread(s + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) {
      cap *= 2;
      s = realloc(s, cap);
      assert_non_null(s);
    }
  }
  fclose(f);
  s[len] = '\0';
  return s;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* Runs this test binary as a pretend application (see main) with the
 * library injected by hand, as the driver would; `env` is prepended to the
 * command. Returns the exit status; stdout and stderr land in files. */
static int run_child(const char *env) {
  char cmd[4 * PATH_MAX];
  /* The child is sanitized like us, but CUPTI's allocations are not ours. */
  int n = snprintf(cmd, sizeof cmd,
           "cd %s && env -u KERNELSMITH_PROFILE_OUT ASAN_OPTIONS=detect_leaks=0 %s %s "
           "--pretend-app %s >%s/stdout 2>%s/stderr",
           tmpdir, env, self_exe, KS_INJECT_LIB, tmpdir, tmpdir);
  assert_true(n > 0 && (size_t)n < sizeof cmd);
  int rc = system(cmd);
  assert_true(WIFEXITED(rc));
  return WEXITSTATUS(rc);
}

static char *child_file(const char *name) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  return slurp(path);
}

static void silent_without_the_variable(void **state) {
  assert_int_equal(run_child(""), 0);
  char *out = child_file("stdout"), *err = child_file("stderr");
  assert_string_equal(out, "app: done\n");
  assert_string_equal(err, "");
  free(out);
  free(err);
  char *none = child_file("profile.jsonl");
  assert_null(none);
}

static void unwritable_path_is_one_stderr_line(void **state) {
  assert_int_equal(run_child("KERNELSMITH_PROFILE_OUT=/nonexistent-dir/p.jsonl"), 0);
  char *out = child_file("stdout"), *err = child_file("stderr");
  assert_string_equal(out, "app: done\n");
  assert_int_equal(count_lines(err), 1);
  assert_memory_equal(err, "kernelsmith-inject: ", 20);
  assert_non_null(strstr(err, "/nonexistent-dir/p.jsonl"));
  free(out);
  free(err);
}

/* Without a driver CUPTI cannot start: one stderr line, an empty file, the
 * program unchanged. With a driver (a GPU machine): no stderr, a start line
 * and, since the program exits normally, an end line with no kernels. */
static void the_program_runs_unchanged(void **state) {
  char env[PATH_MAX + 64];
  snprintf(env, sizeof env, "KERNELSMITH_PROFILE_OUT=%s/profile.jsonl", tmpdir);
  assert_int_equal(run_child(env), 0);
  char *out = child_file("stdout"), *err = child_file("stderr");
  char *profile = child_file("profile.jsonl");
  assert_string_equal(out, "app: done\n");
  assert_non_null(profile);
  if (*err) {
    assert_int_equal(count_lines(err), 1);
    assert_memory_equal(err, "kernelsmith-inject: ", 20);
    assert_string_equal(profile, "");
  } else {
    assert_int_equal(count_lines(profile), 2);
    assert_memory_equal(profile, "{\"type\":\"start\",\"version\":1,\"pid\":", 34);
    assert_non_null(strstr(profile, "\n{\"type\":\"end\",\"kernels\":0,\"time_ns\":"));
  }
  free(out);
  free(err);
  free(profile);
}

/* --- over the fake CUPTI of test_inject_app --- */

/* Occurrences of `needle` (which holds no newline) in `s`, line by line:
 * the sanitizer's strstr measures the whole haystack on every call, which
 * over a 20 MB profile would take minutes. */
static int count_of(char *s, const char *needle) {
  int n = 0;
  size_t len = strlen(needle);
  while (*s) {
    char *eol = strchr(s, '\n');
    if (eol)
      *eol = '\0';
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += len)
      n++;
    if (!eol)
      break;
    *eol = '\n';
    s = eol + 1;
  }
  return n;
}

/* Runs test_inject_app's `scenario`; the profile is <tmpdir>/fake.jsonl.
 * Returns the exit status, 137 for SIGKILL. */
static int run_fake_env(const char *scenario, const char *env) {
  char cmd[4 * PATH_MAX];
  /* A forked child that exits has the parent's threads on LeakSanitizer's
   * list and warns about them; the other scenarios keep leak checking. */
  const char *asan = strcmp(scenario, "fork") == 0 ? "ASAN_OPTIONS=detect_leaks=0" : env;
  int n = snprintf(cmd, sizeof cmd,
                   "cd %s && rm -f fake.jsonl && env %s KERNELSMITH_PROFILE_OUT=%s/fake.jsonl "
                   "%s %s %s >%s/stdout 2>%s/stderr",
                   tmpdir, asan, tmpdir, KS_INJECT_APP, KS_INJECT_LIB, scenario, tmpdir, tmpdir);
  assert_true(n > 0 && (size_t)n < sizeof cmd);
  int rc = system(cmd);
  if (WIFSIGNALED(rc))
    return 128 + WTERMSIG(rc);
  assert_true(WIFEXITED(rc));
  return WEXITSTATUS(rc);
}

static int run_fake(const char *scenario) { return run_fake_env(scenario, ""); }

static void assert_quiet_app(void) {
  char *out = child_file("stdout"), *err = child_file("stderr");
  assert_string_equal(out, "app: done\n");
  assert_string_equal(err, "");
  free(out);
  free(err);
}

static void fake_records_become_lines(void **state) {
  assert_int_equal(run_fake("records"), 0);
  assert_quiet_app();
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_int_equal(count_lines(p), 8);
  assert_memory_equal(p, "{\"type\":\"start\",\"version\":1,\"pid\":", 34);
  assert_non_null(strstr(p, ",\"cupti_version\":130001,\"time_ns\":"));
  const char *want =
      "{\"type\":\"kernel\",\"name\":\"_Z1av\",\"grid\":[4,1,1],\"block\":[32,2,1],"
      "\"smem_static\":16,\"smem_dynamic\":0,\"stream\":7,\"device\":0,\"context\":1,"
      "\"correlation\":10,\"start_ns\":1000010,\"end_ns\":2000010,\"api\":\"runtime\"}\n"
      "{\"type\":\"kernel\",\"name\":\"_Z1bv\",\"grid\":[4,1,1],\"block\":[32,2,1],"
      "\"smem_static\":16,\"smem_dynamic\":0,\"stream\":7,\"device\":0,\"context\":1,"
      "\"correlation\":21,\"start_ns\":1000021,\"end_ns\":2000021,\"api\":\"runtime\"}\n"
      "{\"type\":\"kernel\",\"name\":\"k\\\"q\\\\\\n\",\"grid\":[8,1,1],\"block\":[64,2,1],"
      "\"smem_static\":16,\"smem_dynamic\":512,\"stream\":7,\"device\":0,\"context\":1,"
      "\"correlation\":30,\"start_ns\":1000030,\"end_ns\":2000030,\"api\":\"driver\"}\n"
      "{\"type\":\"kernel\",\"name\":\"_Z1cv\",\"grid\":[8,1,1],\"block\":[64,2,1],"
      "\"smem_static\":16,\"smem_dynamic\":0,\"stream\":7,\"device\":0,\"context\":1,"
      "\"correlation\":40,\"start_ns\":1000040,\"end_ns\":2000040,\"api\":\"driver\"}\n"
      "{\"type\":\"kernel\",\"name\":\"_Z1dv\",\"grid\":[1,1,1],\"block\":[1,2,1],"
      "\"smem_static\":16,\"smem_dynamic\":0,\"stream\":7,\"device\":0,\"context\":1,"
      "\"correlation\":50,\"start_ns\":1000050,\"end_ns\":2000050,\"api\":\"unknown\"}\n"
      "{\"type\":\"dropped\",\"records\":5}\n"
      "{\"type\":\"end\",\"kernels\":5,\"time_ns\":";
  assert_non_null(strstr(p, want));
  assert_null(strstr(p, "not a kernel"));
  free(p);
}

/* Killed 2.5 s after its launches: the flusher thread had already written
 * them; there is no end line. */
static void fake_crash_keeps_flushed_lines(void **state) {
  assert_int_equal(run_fake("crash"), 137);
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_int_equal(count_of(p, "{\"type\":\"start\""), 1);
  assert_int_equal(count_of(p, "\"name\":\"_Z5crashv\""), 2);
  assert_int_equal(count_of(p, "\"type\":\"end\""), 0);
  assert_int_equal(count_lines(p), 3);
  free(p);
}

/* A forked child exits normally; only the parent writes the end line. */
static void fake_fork_child_writes_nothing(void **state) {
  assert_int_equal(run_fake("fork"), 0);
  assert_quiet_app();
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_int_equal(count_lines(p), 3);
  assert_int_equal(count_of(p, "\"name\":\"_Z4forkv\""), 1);
  assert_int_equal(count_of(p, "{\"type\":\"end\",\"kernels\":1,"), 1);
  free(p);
}

/* 4 threads launch 100000 kernels, half through the runtime, while the
 * flusher thread and full buffers deliver records: every launch is one
 * line with its API. */
static void fake_threads_every_launch_once(void **state) {
  assert_int_equal(run_fake("threads"), 0);
  assert_quiet_app();
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_int_equal(count_lines(p), 100002);
  assert_int_equal(count_of(p, "\"api\":\"runtime\""), 50000);
  assert_int_equal(count_of(p, "\"api\":\"driver\""), 50000);
  assert_int_equal(count_of(p, "{\"type\":\"end\",\"kernels\":100000,"), 1);
  assert_int_equal(count_of(p, "dropped"), 0);
  free(p);
}

/* Sampled: the sample line, every launch counted once (runtime launches
 * and their nested driver calls alike), kernel records only from the
 * windows with kernel activity on. */
static void fake_sampled_counts_every_launch(void **state) {
  assert_int_equal(run_fake_env("sampled", "KERNELSMITH_PROFILE_SAMPLE=50 "
                                           "KERNELSMITH_PROFILE_SAMPLE_PERIOD_MS=200"),
                   0);
  assert_quiet_app();
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_int_equal(count_of(p, "{\"type\":\"sample\",\"percent\":50,\"period_ms\":200,\"after_ms\":0}"), 1);
  /* the last count line before the end line has them all */
  const char *last = strstr(p, ",\"name\":\"_Z3hotv\",\"launches\":20}\n{\"type\":\"end\"");
  assert_non_null(last);
  assert_int_equal(count_of(p, "{\"type\":\"count\",\"pid\":"), count_of(p, "\"type\":\"count\""));
  int timed = count_of(p, "{\"type\":\"kernel\",\"name\":\"_Z3hotv\"");
  /* the first 10 in the first window; the second 10 in the off window,
   * unless the scheduler held the app past it */
  assert_true(timed >= 10 && timed <= 20);
  free(p);
}

/* Sampling's phases follow the launches: the first period starts at the
 * first launch, not at start-up, and a kernel first seen in an untimed
 * phase ends it, so a kernel that runs in a short burst is still timed. */
static void fake_sampled_times_every_kernel(void **state) {
  assert_int_equal(run_fake_env("sampled-late", "KERNELSMITH_PROFILE_SAMPLE=10 "
                                                "KERNELSMITH_PROFILE_SAMPLE_PERIOD_MS=1000"),
                   0);
  assert_quiet_app();
  char *p = child_file("fake.jsonl");
  assert_non_null(p);
  assert_non_null(strstr(p, ",\"name\":\"_Z3hotv\",\"launches\":30}"));
  assert_non_null(strstr(p, ",\"name\":\"_Z4latev\",\"launches\":5}"));
  int hot = count_of(p, "{\"type\":\"kernel\",\"name\":\"_Z3hotv\"");
  int late = count_of(p, "{\"type\":\"kernel\",\"name\":\"_Z4latev\"");
  /* all of the first burst; the second one only if the scheduler held
   * the sampling thread 50 ms past its on phase */
  assert_true(hot >= 20 && hot <= 30);
  /* the first launch may beat the wake; the later ones may not */
  assert_true(late >= 1);
  free(p);
}

/* Another CUPTI client (Nsight, cuda-gdb) holds the process: one line on
 * stderr, no profile, the program unchanged. */
static void fake_subscriber_taken(void **state) {
  assert_int_equal(run_fake("subscriber-taken"), 0);
  char *out = child_file("stdout"), *err = child_file("stderr");
  char *p = child_file("fake.jsonl");
  assert_string_equal(out, "app: done\n");
  assert_int_equal(count_lines(err), 1);
  assert_non_null(strstr(err, "kernelsmith-inject: cuptiSubscribe: "
                              "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
  assert_non_null(p);
  assert_string_equal(p, "");
  free(out);
  free(err);
  free(p);
}

/* The pretend application: loads the library as the driver does, calls
 * InitializeInjection twice (the second call must be a no-op) and exits
 * normally so that the atexit handler runs. */
static int pretend_app(const char *lib) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  int (*init)(void);
  *(void **)&init = dlsym(h, "InitializeInjection");
  if (!init || init() != 1 || init() != 1)
    return 3;
  printf("app: done\n");
  return 0;
}

static int setup(void **state) {
  snprintf(tmpdir, sizeof tmpdir, "%s/ks_inject_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir))
    return -1;
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (n <= 0)
    return -1;
  self_exe[n] = '\0';
  return 0;
}

static int teardown(void **state) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--pretend-app") == 0)
    return pretend_app(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plain_names_pass_through),
      cmocka_unit_test(quotes_backslashes_and_controls_are_escaped),
      cmocka_unit_test(utf8_is_kept_and_bad_bytes_replaced),
      cmocka_unit_test(kernel_line_is_exact),
      cmocka_unit_test(start_dropped_end_lines_are_exact),
      cmocka_unit_test(every_byte_makes_valid_json),
      cmocka_unit_test(silent_without_the_variable),
      cmocka_unit_test(unwritable_path_is_one_stderr_line),
      cmocka_unit_test(the_program_runs_unchanged),
      cmocka_unit_test(fake_records_become_lines),
      cmocka_unit_test(fake_crash_keeps_flushed_lines),
      cmocka_unit_test(fake_fork_child_writes_nothing),
      cmocka_unit_test(fake_threads_every_launch_once),
      cmocka_unit_test(fake_sampled_counts_every_launch),
      cmocka_unit_test(fake_sampled_times_every_kernel),
      cmocka_unit_test(fake_subscriber_taken),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
#endif
