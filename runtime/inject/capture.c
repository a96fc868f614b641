/* The driver side of argument capture (capture.h, docs/capture-format.md).
 *
 * On a chosen launch's API enter: the parameters' bytes (cuFuncGetParamInfo
 * gives their layout), and for each 8-byte parameter the driver knows as a
 * pointer, its whole allocation copied to the host after the launch's stream
 * has drained (BEFORE); on API exit, the stream drained again and the same
 * allocations copied (AFTER); then the launch's metadata. Runtime launches
 * reach the driver's cuLaunchKernel too, so the driver callbacks are enough.
 *
 * The driver is looked up, never linked: libcuda.so.1 as already loaded
 * (RTLD_NOLOAD), else the process's own symbols (the tests' stand-in).
 * Global state for the reason inject.c gives: CUPTI's callbacks and atexit
 * carry no pointer of ours. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "capture.h"

#include <cupti.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PARAMS 1024   /* the driver's own limit is far lower */
#define MAX_KERNELS 1024  /* distinct chosen kernels counted; more are not captured */

typedef struct driver {
  CUresult (*get_name)(const char **, CUfunction);
  CUresult (*kernel_function)(CUfunction *, CUkernel); /* may be NULL */
  CUresult (*param_info)(CUfunction, size_t, size_t *, size_t *);
  CUresult (*pointer_attr)(void *, CUpointer_attribute, CUdeviceptr);
  CUresult (*address_range)(CUdeviceptr *, size_t *, CUdeviceptr);
  CUresult (*copy_dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*stream_sync)(CUstream);
  CUresult (*ctx_device)(CUdevice *);
  CUresult (*error_name)(CUresult, const char **);
  char *(*demangle)(const char *, char *, size_t *, int *);
} driver;

static struct {
  pthread_mutex_t lock;   /* guards everything below but the driver table */
  int fd;                 /* the capture file, -1 when not capturing */
  pid_t pid;              /* the process that opened it */
  char *wanted;           /* KERNELSMITH_CAPTURE */
  uint64_t per_kernel;    /* launches to capture per kernel */
  uint64_t limit;         /* bytes of allocations per launch */
  uint64_t window;        /* KERNELSMITH_CAPTURE_WINDOW: larger allocations
                             are snapshotted only around their pointers */
  uint64_t launches;      /* launch records written */
  uint64_t next_blob;
  struct {
    char *name;
    uint64_t seen;
  } kernels[MAX_KERNELS];
  size_t nkernels;
  int trace;              /* KERNELSMITH_INJECT_TRACE=1: decisions on stderr */
  driver cu;
} cap = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .next_blob = 1};

static atomic_flag reported = ATOMIC_FLAG_INIT;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
  if (atomic_flag_test_and_set(&reported))
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "kernelsmith-inject: capture: %s\n", msg);
}

static const char *cu_error(CUresult r) {
  const char *s = NULL;
  if (!cap.cu.error_name || cap.cu.error_name(r, &s) != CUDA_SUCCESS || !s)
    return "CUDA error";
  return s;
}

/* With cap.lock held: a write failed, so stop for good. */
static void stop_locked(const char *what) {
  report("writing the capture file (%s): %s; capturing stops", what, strerror(errno));
  if (cap.fd >= 0)
    close(cap.fd);
  cap.fd = -1;
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *s = getenv(name);
  if (!s || !*s)
    return fallback;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || *s == '-') {
    report("%s=%s is not a number; using %llu", name, s, (unsigned long long)fallback);
    return fallback;
  }
  return v;
}

static void *lookup(void *h, const char *name) {
  void *p = h ? dlsym(h, name) : NULL;
  return p ? p : dlsym(RTLD_DEFAULT, name);
}

void ksrt_capture_init(void) {
  const char *wanted = getenv("KERNELSMITH_CAPTURE");
  if (!wanted || !*wanted)
    return;
  const char *path = getenv("KERNELSMITH_CAPTURE_OUT");
  if (!path || !*path) {
    report("KERNELSMITH_CAPTURE is set but KERNELSMITH_CAPTURE_OUT is not; nothing is captured");
    return;
  }
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  driver *cu = &cap.cu;
  *(void **)&cu->get_name = lookup(h, "cuFuncGetName");
  *(void **)&cu->param_info = lookup(h, "cuFuncGetParamInfo");
  *(void **)&cu->kernel_function = lookup(h, "cuKernelGetFunction");
  *(void **)&cu->pointer_attr = lookup(h, "cuPointerGetAttribute");
  *(void **)&cu->address_range = lookup(h, "cuMemGetAddressRange_v2");
  *(void **)&cu->copy_dtoh = lookup(h, "cuMemcpyDtoH_v2");
  *(void **)&cu->stream_sync = lookup(h, "cuStreamSynchronize");
  *(void **)&cu->ctx_device = lookup(h, "cuCtxGetDevice");
  *(void **)&cu->error_name = lookup(h, "cuGetErrorName");
  /* Demangling only if the program has libstdc++ (nvcc's programs do):
   * linking it would bring a C++ runtime into C programs. */
  *(void **)&cu->demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!cu->get_name || !cu->param_info || !cu->pointer_attr || !cu->address_range ||
      !cu->copy_dtoh || !cu->stream_sync) {
    report("this CUDA driver lacks cuFuncGetName or cuFuncGetParamInfo (CUDA 12.4 or newer "
           "is needed); nothing is captured");
    return;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    report("cannot open KERNELSMITH_CAPTURE_OUT %s: %s", path, strerror(errno));
    return;
  }
  if (ksrt_cap_write_magic(fd)) {
    report("cannot write %s: %s", path, strerror(errno));
    close(fd);
    return;
  }
  cap.wanted = strdup(wanted);
  cap.per_kernel = env_u64("KERNELSMITH_CAPTURE_LAUNCHES", 1);
  cap.limit = env_u64("KERNELSMITH_CAPTURE_LIMIT", (uint64_t)1 << 30);
  cap.window = env_u64("KERNELSMITH_CAPTURE_WINDOW", 0);
  cap.pid = getpid();
  const char *trace = getenv("KERNELSMITH_INJECT_TRACE");
  cap.trace = trace && *trace == '1';
  if (!cap.wanted) {
    close(fd);
    return;
  }
  cap.fd = fd;
}

void ksrt_capture_finish(void) {
  pthread_mutex_lock(&cap.lock);
  if (cap.fd >= 0 && getpid() == cap.pid) {
    if (ksrt_cap_write_end(cap.fd, cap.launches))
      stop_locked("end record");
    else {
      (void)fsync(cap.fd);
      close(cap.fd);
      cap.fd = -1;
    }
  }
  pthread_mutex_unlock(&cap.lock);
}

/* --- one launch --- */

/* An allocation the launch's pointers point into; one per distinct base. */
typedef struct alloc {
  CUdeviceptr base;
  size_t size;
  /* the bytes snapshotted, [lo, hi): all of them, or with a window the
   * span from the lowest pointer into it to the highest plus the window */
  size_t lo, hi;
  const char *memory;
  uint64_t before, after;   /* blob ids, 0: none */
  const char *not_captured; /* static text */
} alloc;

/* A chosen launch between its API enter and exit, on the thread that made it. */
typedef struct pending {
  ksrt_cap_launch l;
  CUstream stream;
  ksrt_cap_param *params;
  unsigned char *values;    /* the parameters' bytes, back to back */
  alloc *allocs;
  size_t nallocs;
  ksrt_cap_blob *blobs;     /* up to 2 per allocation */
  char *name;               /* owned copy of the mangled name */
} pending;

static _Thread_local pending *current;

static void pending_free(pending *p) {
  if (!p)
    return;
  free(p->params);
  free(p->values);
  free(p->allocs);
  free(p->blobs);
  free(p->name);
  free(p);
}

/* Whether the kernel is chosen and still needs launches; its launch index. */
static int chosen(const char *name, uint64_t *index) {
  char *demangled = NULL;
  if (cap.cu.demangle && name[0] == '_' && name[1] == 'Z') {
    int status = -1;
    demangled = cap.cu.demangle(name, NULL, NULL, &status);
    if (status != 0) {
      free(demangled);
      demangled = NULL;
    }
  }
  int match = ksrt_cap_name_matches(cap.wanted, name, demangled);
  if (cap.trace)
    fprintf(stderr, "kernelsmith-inject: trace: capture: %s (%s): %s\n", name,
            demangled ? demangled : cap.cu.demangle ? "not demangled" : "no __cxa_demangle",
            match ? "chosen" : "not chosen");
  free(demangled);
  if (!match)
    return 0;
  int take = 0;
  pthread_mutex_lock(&cap.lock);
  size_t i = 0;
  while (i < cap.nkernels && strcmp(cap.kernels[i].name, name))
    i++;
  if (i == cap.nkernels && i < MAX_KERNELS && (cap.kernels[i].name = strdup(name)) != NULL)
    cap.nkernels++;
  if (i < cap.nkernels) {
    *index = cap.kernels[i].seen++;
    take = *index < cap.per_kernel && cap.fd >= 0;
  }
  pthread_mutex_unlock(&cap.lock);
  return take;
}

/* Copies every captured allocation and writes it as a blob; `after`
 * selects the snapshot. Blobs are written as they are taken so that only
 * one allocation is ever held in host memory. */
static void snapshot(pending *p, int after) {
  CUresult r = cap.cu.stream_sync(p->stream);
  for (size_t i = 0; i < p->nallocs; i++) {
    alloc *a = &p->allocs[i];
    if (a->not_captured || (after && !a->before))
      continue;
    if (r != CUDA_SUCCESS) {
      a->not_captured = "cuStreamSynchronize failed before the copy";
      continue;
    }
    size_t bytes = a->hi - a->lo;
    void *host = malloc(bytes ? bytes : 1);
    if (!host) {
      a->not_captured = "out of host memory for the copy";
      continue;
    }
    CUresult c = cap.cu.copy_dtoh(host, a->base + a->lo, bytes);
    if (c != CUDA_SUCCESS) {
      a->not_captured = c == CUDA_ERROR_INVALID_VALUE ? "not accessible to cuMemcpyDtoH"
                                                      : "cuMemcpyDtoH failed";
      free(host);
      continue;
    }
    ksrt_cap_blob *b = &p->blobs[p->l.nblobs];
    pthread_mutex_lock(&cap.lock);
    b->id = cap.next_blob++;
    b->size = bytes;
    int ok = cap.fd >= 0 && ksrt_cap_write_blob(cap.fd, b->id, host, bytes, &b->crc32) == 0;
    if (!ok && cap.fd >= 0)
      stop_locked("snapshot");
    pthread_mutex_unlock(&cap.lock);
    free(host);
    if (!ok) {
      a->not_captured = "the capture file could not be written";
      continue;
    }
    p->l.nblobs++;
    p->l.bytes += bytes;
    *(after ? &a->after : &a->before) = b->id;
  }
}

/* Finds or adds the allocation holding `ptr`; -1 when the driver does not
 * know it as memory (then it is a scalar that happens to be 8 bytes). */
static long find_alloc(pending *p, CUdeviceptr ptr, size_t *cap_allocs) {
  unsigned int type = 0;
  if (!ptr || cap.cu.pointer_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS)
    return -1;
  alloc a = {.memory = type == CU_MEMORYTYPE_HOST ? "host" : "device"};
  unsigned int managed = 0;
  if (cap.cu.pointer_attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr) == CUDA_SUCCESS &&
      managed)
    a.memory = "managed";
  if (cap.cu.address_range(&a.base, &a.size, ptr) != CUDA_SUCCESS) {
    a.base = ptr;
    a.size = 0;
    a.not_captured = "cuMemGetAddressRange does not know the allocation";
  }
  for (size_t i = 0; i < p->nallocs; i++)
    if (!a.not_captured && p->allocs[i].base == a.base)
      return (long)i;
  if (p->nallocs == *cap_allocs) {
    size_t n = *cap_allocs ? 2 * *cap_allocs : 8;
    alloc *grown = realloc(p->allocs, n * sizeof *grown);
    if (!grown)
      return -2;
    p->allocs = grown;
    *cap_allocs = n;
  }
  p->allocs[p->nallocs] = a;
  return (long)p->nallocs++;
}

/* The launch's arguments as the callback sees them. */
typedef struct launch_args {
  CUfunction f;
  unsigned grid[3], block[3], smem;
  CUstream stream;
  void **params;
  void **extra;
  const char *api;
} launch_args;

static int launch_args_of(uint32_t cbid, const void *fp, launch_args *a) {
  if (!fp)
    return -1;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz) {
    const cuLaunchKernel_params *k = fp; /* the _ptsz struct is the same */
    *a = (launch_args){k->f, {k->gridDimX, k->gridDimY, k->gridDimZ},
                       {k->blockDimX, k->blockDimY, k->blockDimZ}, k->sharedMemBytes,
                       k->hStream, k->kernelParams, k->extra, "cuLaunchKernel"};
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz) {
    const cuLaunchKernelEx_params *k = fp;
    if (!k->config)
      return -1;
    const CUlaunchConfig *c = k->config;
    *a = (launch_args){k->f, {c->gridDimX, c->gridDimY, c->gridDimZ},
                       {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                       c->hStream, k->kernelParams, k->extra, "cuLaunchKernelEx"};
  } else {
    return -1;
  }
  int ptsz = cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
  if (ptsz && !a->stream)
    a->stream = CU_STREAM_PER_THREAD;
  return 0;
}

/* The packed argument buffer of a launch made with `extra`, or NULL. */
static const unsigned char *extra_buffer(void **extra, size_t *size) {
  const unsigned char *buf = NULL;
  *size = 0;
  for (size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
      *size = *(const size_t *)extra[i + 1];
  }
  return buf;
}

/* Reads the parameters; 0, or -1 out of memory. */
static int read_params(pending *p, const launch_args *a) {
  size_t offsets[MAX_PARAMS], sizes[MAX_PARAMS], n = 0, total = 0;
  while (n < MAX_PARAMS && cap.cu.param_info(a->f, n, &offsets[n], &sizes[n]) == CUDA_SUCCESS)
    total += sizes[n++];
  p->params = calloc(n ? n : 1, sizeof *p->params);
  p->values = malloc(total ? total : 1);
  if (!p->params || !p->values)
    return -1;
  size_t extra_size = 0;
  const unsigned char *extra = a->params ? NULL : extra_buffer(a->extra, &extra_size);
  size_t nalloc_cap = 0, at = 0;
  for (size_t i = 0; i < n; i++) {
    ksrt_cap_param *q = &p->params[i];
    *q = (ksrt_cap_param){.index = (uint32_t)i, .offset = offsets[i], .size = sizes[i],
                          .kind = "scalar"};
    const void *src = a->params                                   ? a->params[i]
                      : extra && offsets[i] + sizes[i] <= extra_size ? extra + offsets[i]
                                                                   : NULL;
    if (!src) {
      q->kind = "unknown";
      q->not_captured = "the launch passed no readable argument values";
      continue;
    }
    memcpy(p->values + at, src, sizes[i]);
    q->value = p->values + at;
    at += sizes[i];
    if (sizes[i] != sizeof(CUdeviceptr))
      continue;
    CUdeviceptr ptr;
    memcpy(&ptr, src, sizeof ptr);
    long k = find_alloc(p, ptr, &nalloc_cap);
    if (k == -2)
      return -1;
    if (k < 0)
      continue;
    q->kind = "pointer";
    q->base = (uint64_t)p->allocs[k].base; /* allocs may still move: the rest at the end */
    q->ptr_offset = (uint64_t)(ptr - p->allocs[k].base);
    q->before = (uint64_t)k; /* the allocation's index until the launch ends */
  }
  p->l.params = p->params;
  p->l.nparams = n;
  p->blobs = calloc(2 * p->nallocs + 1, sizeof *p->blobs);
  if (!p->blobs)
    return -1;
  p->l.blobs = p->blobs;
  for (size_t i = 0; i < p->nallocs; i++) {
    alloc *al = &p->allocs[i];
    al->lo = 0;
    al->hi = al->size;
    if (cap.window && al->size > cap.window) {
      size_t lo = al->size, hi = 0;
      for (size_t k = 0; k < n; k++)
        if (!strcmp(p->params[k].kind, "pointer") && p->params[k].before == i) {
          size_t off = (size_t)p->params[k].ptr_offset;
          lo = off < lo ? off : lo;
          hi = off > hi ? off : hi;
        }
      if (lo <= hi) {
        al->lo = lo;
        al->hi = hi + cap.window < al->size ? hi + cap.window : al->size;
      }
    }
    if (!al->not_captured)
      p->l.bytes_needed += al->hi - al->lo;
  }
  return 0;
}

static void on_enter(uint32_t cbid, const CUpti_CallbackData *cb) {
  launch_args a;
  if (launch_args_of(cbid, cb->functionParams, &a))
    return;
  const char *name = NULL;
  CUresult nr = cap.cu.get_name(&name, a.f);
  /* The runtime (CUDA 12 on) launches through context-independent
   * CUkernel handles passed as CUfunction: the function of this context
   * has the name and the parameter layout. */
  CUfunction fn;
  if (nr == CUDA_ERROR_INVALID_HANDLE && cap.cu.kernel_function &&
      cap.cu.kernel_function(&fn, (CUkernel)(void *)a.f) == CUDA_SUCCESS) {
    a.f = fn;
    nr = cap.cu.get_name(&name, a.f);
  }
  if (nr != CUDA_SUCCESS || !name) {
    if (cap.trace)
      fprintf(stderr, "kernelsmith-inject: trace: capture: cuFuncGetName: %s\n", cu_error(nr));
    return;
  }
  uint64_t index;
  if (!chosen(name, &index))
    return;
  pending *p = calloc(1, sizeof *p);
  if (!p || !(p->name = strdup(name)) || read_params(p, &a)) {
    report("out of memory reading the parameters of %s; it is not captured", name);
    pending_free(p);
    return;
  }
  CUdevice dev = -1;
  if (!cap.cu.ctx_device || cap.cu.ctx_device(&dev) != CUDA_SUCCESS)
    dev = -1;
  p->stream = a.stream;
  ksrt_cap_launch *l = &p->l;
  l->kernel = p->name;
  l->launch = index;
  memcpy(l->grid, a.grid, sizeof l->grid);
  memcpy(l->block, a.block, sizeof l->block);
  l->smem = a.smem;
  l->stream = (uint64_t)(uintptr_t)a.stream;
  l->device = (int32_t)dev;
  l->api = a.api;
  l->over_limit = l->bytes_needed > cap.limit;
  if (l->over_limit)
    for (size_t i = 0; i < p->nallocs; i++)
      if (!p->allocs[i].not_captured)
        p->allocs[i].not_captured = "over the capture limit";
  snapshot(p, 0);
  current = p;
}

static void on_exit_(const CUpti_CallbackData *cb) {
  pending *p = current;
  current = NULL;
  if (!p)
    return;
  CUresult r = cb->functionReturnValue ? *(const CUresult *)cb->functionReturnValue
                                        : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS)
    snapshot(p, 1);
  else
    p->l.error = cu_error(r);
  for (size_t i = 0; i < p->l.nparams; i++) {
    ksrt_cap_param *q = &p->params[i];
    if (strcmp(q->kind, "pointer"))
      continue;
    const alloc *al = &p->allocs[q->before];
    q->memory = al->memory;
    q->alloc_size = al->size;
    if (al->hi - al->lo != al->size) {
      q->span_lo = al->lo;
      q->span_hi = al->hi;
    }
    q->before = al->before;
    q->after = al->after;
    q->not_captured = al->not_captured ? al->not_captured
                      : r != CUDA_SUCCESS ? "the launch failed: no snapshot after it"
                                          : NULL;
  }
  if (cap.trace)
    fprintf(stderr, "kernelsmith-inject: trace: capture: %s launch %llu: %zu parameters, %zu "
                    "allocations, %s\n", p->name, (unsigned long long)p->l.launch, p->l.nparams,
            p->nallocs, p->l.error ? p->l.error : "ok");
  ksrt_jbuf json = KSRT_JBUF_INIT;
  if (ksrt_cap_launch_json(&json, &p->l) == 0) {
    pthread_mutex_lock(&cap.lock);
    if (cap.fd >= 0) {
      if (ksrt_cap_write_record(cap.fd, KSRT_CAP_LAUNCH, NULL, 0, json.data, json.len))
        stop_locked("launch");
      else
        cap.launches++;
    }
    pthread_mutex_unlock(&cap.lock);
  } else {
    report("out of memory describing a launch of %s; it is not captured", p->name);
  }
  ksrt_jbuf_release(&json);
  pending_free(p);
}

void ksrt_capture_on_driver(uint32_t cbid, const void *callback_data) {
  const CUpti_CallbackData *cb = callback_data;
  if (!cb || (cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel &&
              cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz &&
              cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx &&
              cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz))
    return;
  if (cb->callbackSite != CUPTI_API_ENTER)
    on_exit_(cb); /* even when capturing has stopped: the launch's memory is ours */
  else if (__atomic_load_n(&cap.fd, __ATOMIC_RELAXED) >= 0 && getpid() == cap.pid)
    on_enter(cbid, cb);
}
