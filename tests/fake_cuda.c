/* fake_cuda: a stand-in libcuda.so.1 that runs on the CPU, so that the
 * worker's whole evaluation protocol (inputs, poison, guard zones, the four
 * runs, comparisons, timing, recheck, sticky errors, restarts) is tested on
 * machines without a GPU, under the sanitizers.
 *
 * Device memory is host memory (a CUdeviceptr is a host address), every
 * call is synchronous, and a kernel is chosen by its name, not its cubin:
 * each name test_worker_gpu.c compiles has a C twin here that does what the
 * CUDA one does (including the broken ones), and the judge's fixtures in
 * tests/fixtures/fp64 have theirs under their lowered names. A trap or a
 * null store makes a sticky error, as on a GPU: every later call fails
 * with it. "spin" never returns. Loaded by setting LD_LIBRARY_PATH to the
 * directory holding it (the tests set it for the worker only).
 *
 * Only the symbols ks_cuda_load resolves are defined, with the signatures
 * cuda.h declares for them (the compiler checks each against it). */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct CUctx_st {
  int unused;
};
struct CUmod_st {
  unsigned calls; /* the module's `__device__ unsigned calls` (kernel "lazy") */
};
typedef struct kernel_args {
  void **params;
  size_t threads;
  CUmodule module;
} kernel_args;
struct CUfunc_st {
  const char *name;
  CUresult (*run)(const kernel_args *a);
  CUmodule module;
};
struct CUevent_st {
  struct timespec at;
};

static struct CUctx_st the_context;
static CUresult sticky; /* once set, every call fails with it */

#define STICKY()                                                                                   \
  do {                                                                                             \
    if (sticky)                                                                                    \
      return sticky;                                                                               \
  } while (0)

static void *ptr(CUdeviceptr p) { return (void *)(uintptr_t)p; }
static void *arg_ptr(const kernel_args *a, int i) { return ptr(*(CUdeviceptr *)a->params[i]); }
static float arg_f32(const kernel_args *a, int i) { return *(float *)a->params[i]; }
static int arg_i32(const kernel_args *a, int i) { return *(int *)a->params[i]; }
static double arg_f64(const kernel_args *a, int i) { return *(double *)a->params[i]; }

/* ---- the kernels (ARGS: x, y, out, a, n) ---- */

static CUresult saxpy(const kernel_args *k) {
  const float *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  float *out = arg_ptr(k, 2), a = arg_f32(k, 3);
  int n = arg_i32(k, 4);
  for (size_t i = 0; i < k->threads && i < (size_t)n; i++)
    out[i] = a * x[i] + y[i];
  return CUDA_SUCCESS;
}

static CUresult wrong(const kernel_args *k) {
  const float *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  float *out = arg_ptr(k, 2), a = arg_f32(k, 3);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i++)
    out[i] = a * x[i] - y[i];
  return CUDA_SUCCESS;
}

static CUresult skip_odd(const kernel_args *k) {
  const float *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  float *out = arg_ptr(k, 2), a = arg_f32(k, 3);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i += 2)
    out[i] = a * x[i] + y[i];
  return CUDA_SUCCESS;
}

static CUresult oob(const kernel_args *k) {
  const float *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  float *out = arg_ptr(k, 2), a = arg_f32(k, 3);
  for (size_t i = 0; i < k->threads && i <= (size_t)arg_i32(k, 4); i++)
    out[i] = a * x[i] + y[i];
  return CUDA_SUCCESS;
}

static CUresult mod_input(const kernel_args *k) {
  float *x = arg_ptr(k, 0);
  saxpy(k);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i++)
    x[i] = 0;
  return CUDA_SUCCESS;
}

static CUresult nowrite(const kernel_args *k) { return CUDA_SUCCESS; }

static CUresult racy(const kernel_args *k) {
  const float *x = arg_ptr(k, 0);
  float *out = arg_ptr(k, 2);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i++)
    out[i & 4095] = x[i];
  return CUDA_SUCCESS;
}

static CUresult lazy(const kernel_args *k) {
  if (k->module->calls >= 6)
    return CUDA_SUCCESS;
  k->module->calls++;
  return saxpy(k);
}

/* saxpy with the low 13 bits of every result cleared: 10 bits of mantissa,
 * a relative error up to 2^-10. */
static CUresult lowp(const kernel_args *k) {
  const float *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  float *out = arg_ptr(k, 2), a = arg_f32(k, 3);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i++) {
    float v = a * x[i] + y[i];
    uint32_t bits;
    memcpy(&bits, &v, 4);
    bits &= 0xffffe000u;
    memcpy(&out[i], &bits, 4);
  }
  return CUDA_SUCCESS;
}

/* The fp64 twins of saxpy: right, and writing one element past the end. */
static CUresult saxpy_f64(const kernel_args *k) {
  const double *x = arg_ptr(k, 0), *y = arg_ptr(k, 1);
  double *out = arg_ptr(k, 2), a = arg_f64(k, 3);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 4); i++)
    out[i] = a * x[i] + y[i];
  return CUDA_SUCCESS;
}

static CUresult saxpy_f64_oob(const kernel_args *k) {
  double *out = arg_ptr(k, 2);
  saxpy_f64(k);
  out[arg_i32(k, 4)] = 0;
  return CUDA_SUCCESS;
}

/* GELU (tests/fixtures/fp64, by their lowered names): the original, its
 * fp64 twin, a variant in half precision (results rounded to 11
 * significant bits, as the conversions to __half round them) and one with
 * tanh through expf. */
static float gelu_tanh_arg(float x) { return 0.7978845608028654f * (x + 0.044715f * x * x * x); }

static float round_half(float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  bits = (bits + 0x1000u) & 0xffffe000u;
  memcpy(&v, &bits, 4);
  return v;
}

static CUresult gelu(const kernel_args *k) {
  float *out = arg_ptr(k, 0);
  const float *in = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++)
    out[i] = 0.5f * in[i] * (1.0f + tanhf(gelu_tanh_arg(in[i])));
  return CUDA_SUCCESS;
}

static CUresult gelu_f64(const kernel_args *k) {
  double *out = arg_ptr(k, 0);
  const double *in = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++) {
    double x = in[i];
    out[i] = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  }
  return CUDA_SUCCESS;
}

static CUresult gelu_fp16(const kernel_args *k) {
  float *out = arg_ptr(k, 0);
  const float *in = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++) {
    float x = round_half(in[i]);
    out[i] = round_half(0.5f * x * (1.0f + tanhf(gelu_tanh_arg(x))));
  }
  return CUDA_SUCCESS;
}

static CUresult gelu_exp_tanh(const kernel_args *k) {
  float *out = arg_ptr(k, 0);
  const float *in = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++) {
    float t = 1.0f - 2.0f / (expf(2.0f * gelu_tanh_arg(in[i])) + 1.0f);
    out[i] = 0.5f * in[i] * (1.0f + t);
  }
  return CUDA_SUCCESS;
}

/* test_capture_ref_gpu.c's row sums, y[r] = bias[r] + sum_c A[r][c] * x[c]
 * (A, x, bias, y, rows, cols): in order, in adjacent pairs then a tree (cols
 * up to 1024), the same truncated to 10 bits of mantissa, and the fp64
 * twin. As the CUDA ones do, in the same order of operations. */
static float cr_trunc10(float v) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  bits &= 0xffffe000u;
  memcpy(&v, &bits, 4);
  return v;
}

static CUresult cr_rows(const kernel_args *k, int how) {
  const float *A = arg_ptr(k, 0), *x = arg_ptr(k, 1), *bias = arg_ptr(k, 2);
  float *y = arg_ptr(k, 3);
  int rows = arg_i32(k, 4), cols = arg_i32(k, 5);
  for (size_t r = 0; r < k->threads && r < (size_t)rows; r++) {
    const float *a = A + r * (size_t)cols;
    float acc = 0;
    if (!how) {
      for (int c = 0; c < cols; c++)
        acc += a[c] * x[c];
    } else {
      float buf[512];
      int m = cols / 2;
      for (int i = 0; i < m; i++)
        buf[i] = a[2 * i] * x[2 * i] + a[2 * i + 1] * x[2 * i + 1];
      for (int w = m / 2; w >= 1; w /= 2)
        for (int i = 0; i < w; i++)
          buf[i] += buf[i + w];
      acc = buf[0];
      if (how == 2)
        acc = cr_trunc10(acc);
    }
    y[r] = bias ? acc + bias[r] : acc;
  }
  return CUDA_SUCCESS;
}
static CUresult cr_rowsum(const kernel_args *k) { return cr_rows(k, 0); }
static CUresult cr_rowsum_tree(const kernel_args *k) { return cr_rows(k, 1); }
static CUresult cr_rowsum_lowp(const kernel_args *k) { return cr_rows(k, 2); }

static CUresult cr_rowsum_f64(const kernel_args *k) {
  const double *A = arg_ptr(k, 0), *x = arg_ptr(k, 1), *bias = arg_ptr(k, 2);
  double *y = arg_ptr(k, 3);
  int rows = arg_i32(k, 4), cols = arg_i32(k, 5);
  for (size_t r = 0; r < k->threads && r < (size_t)rows; r++) {
    double acc = 0;
    for (int c = 0; c < cols; c++)
      acc += A[r * (size_t)cols + c] * x[c];
    y[r] = bias ? acc + bias[r] : acc;
  }
  return CUDA_SUCCESS;
}

static CUresult trap(const kernel_args *k) { return CUDA_ERROR_LAUNCH_FAILED; }
static CUresult null_store(const kernel_args *k) { return CUDA_ERROR_ILLEGAL_ADDRESS; }

static CUresult spin(const kernel_args *k) {
  for (;;)
    sleep(1);
  return CUDA_SUCCESS;
}

static CUresult copy_h(const kernel_args *k) {
  const unsigned short *x = arg_ptr(k, 0);
  unsigned short *out = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++)
    out[i] = x[i];
  return CUDA_SUCCESS;
}

static CUresult copy_h_ulp(const kernel_args *k) {
  const unsigned short *x = arg_ptr(k, 0);
  unsigned short *out = arg_ptr(k, 1);
  for (size_t i = 0; i < k->threads && i < (size_t)arg_i32(k, 2); i++)
    out[i] = (x[i] & 0x7c00) == 0x7c00 ? x[i] : (unsigned short)(x[i] ^ 1);
  return CUDA_SUCCESS;
}

static CUresult ks_copy(const kernel_args *k) {
  size_t n = *(size_t *)k->params[2];
  memcpy(arg_ptr(k, 1), arg_ptr(k, 0), n * 16);
  return CUDA_SUCCESS;
}

static CUresult ks_fma(const kernel_args *k) {
  float *out = arg_ptr(k, 0);
  for (size_t i = 0; i < k->threads; i++)
    out[i] = (float)i;
  return CUDA_SUCCESS;
}

static const struct {
  const char *name;
  CUresult (*run)(const kernel_args *a);
} kernels[] = {
    {"saxpy", saxpy},   {"same", saxpy},         {"wrong", wrong},     {"skip_odd", skip_odd},
    {"oob", oob},       {"mod_input", mod_input}, {"nowrite", nowrite}, {"racy", racy},
    {"lazy", lazy},     {"trap", trap},          {"null", null_store}, {"spin", spin},
    {"copy_h", copy_h}, {"copy_h_ulp", copy_h_ulp}, {"ks_copy", ks_copy}, {"ks_fma", ks_fma},
    {"lowp", lowp},     {"saxpy_f64", saxpy_f64}, {"saxpy_f64_oob", saxpy_f64_oob},
    {"_Z19gelu_forward_kernelPfPKfi", gelu},      {"_Z19gelu_forward_kernelPdPKdi", gelu_f64},
    {"_Z9gelu_fp16PfPKfi", gelu_fp16},            {"_Z13gelu_exp_tanhPfPKfi", gelu_exp_tanh},
    {"cr_rowsum", cr_rowsum},     {"cr_rowsum_same", cr_rowsum}, {"cr_rowsum_tree", cr_rowsum_tree},
    {"cr_rowsum_lowp", cr_rowsum_lowp}, {"cr_rowsum_f64", cr_rowsum_f64},
};

/* ---- initialisation, devices, contexts ---- */

CUresult cuInit(unsigned int flags) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
};

CUresult cuGetErrorName(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == e) {
      *s = errors[i].name;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == e) {
      *s = errors[i].text;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  snprintf(name, (size_t)len, "Fake GPU (CPU stand-in)");
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 4 << 20; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 1000000; break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 256; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) { *bytes = (size_t)16 << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
  snprintf(id, (size_t)len, "0000:00:00.0");
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = &the_context; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { STICKY(); return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { STICKY(); return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = &the_context; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { STICKY(); return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent_v2(CUcontext *c) { *c = &the_context; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { STICKY(); return CUDA_SUCCESS; }
CUresult cuCtxSetLimit(CUlimit l, size_t v) { STICKY(); return CUDA_SUCCESS; }
CUresult cuCtxGetLimit(size_t *v, CUlimit l) { *v = 0; return CUDA_SUCCESS; }

/* ---- memory ---- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  STICKY();
  *free_bytes = (size_t)1 << 30; /* keeps the ceilings' copy small */
  *total = (size_t)16 << 30;
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  STICKY();
  void *m = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}
/* Frees even after a sticky error (a real driver fails the call, but the
 * process exits and the OS takes the memory back; here the sanitizer would
 * call it a leak). */
CUresult cuMemFree_v2(CUdeviceptr p) { free(ptr(p)); return sticky; }
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n); return CUDA_SUCCESS; }
CUresult cuMemFreeHost(void *p) { free(p); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { STICKY(); memcpy(ptr(d), h, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { STICKY(); memcpy(h, ptr(d), n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { STICKY(); memmove(ptr(d), ptr(s), n); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) { return cuMemcpyHtoD_v2(d, h, n); }
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) { return cuMemcpyDtoH_v2(h, d, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) { return cuMemcpyDtoD_v2(d, src, n); }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { STICKY(); memset(ptr(d), v, n); return CUDA_SUCCESS; }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  STICKY();
  if (d % 4)
    return CUDA_ERROR_INVALID_VALUE; /* as the driver: 4-byte aligned only */
  for (size_t i = 0; i < n; i++)
    memcpy((char *)ptr(d) + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return cuMemsetD8_v2(d, v, n); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) { return cuMemsetD32_v2(d, v, n); }
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p) { return CUDA_ERROR_NOT_SUPPORTED; }

/* ---- modules, functions, launches ---- */

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  STICKY();
  *m = calloc(1, sizeof **m);
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v) {
  return cuModuleLoadData(m, image);
}
CUresult cuModuleUnload(CUmodule m) { free(m); return sticky; }
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *bytes, CUmodule m, const char *name) { return CUDA_ERROR_NOT_FOUND; }

/* Functions are leaked on purpose when the module goes: a real driver's
 * handles die with it, and the worker never uses one after unloading. To
 * keep the sanitizers quiet they are kept in a small pool instead. */
static struct CUfunc_st functions[256];
static size_t nfunctions;

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  STICKY();
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
    if (strcmp(kernels[i].name, name) == 0) {
      struct CUfunc_st *fn = &functions[nfunctions++ % 256];
      fn->name = kernels[i].name;
      fn->run = kernels[i].run;
      fn->module = m;
      *f = fn;
      return CUDA_SUCCESS;
    }
  /* The search's variants of the GELU fixture (`gelu_forward_kernel_ks_variant`
   * and the like, same parameters) run as the original does: enough for
   * optimize to judge on this stand-in (devices_fake_gpu). */
  size_t len = strlen(name);
  if (strstr(name, "gelu_forward_kernel") && len > 6 && !strcmp(name + len - 6, "PfPKfi")) {
    struct CUfunc_st *fn = &functions[nfunctions++ % 256];
    fn->name = "_Z19gelu_forward_kernelPfPKfi";
    fn->run = gelu;
    fn->module = m;
    *f = fn;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_NOT_FOUND;
}
CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  STICKY();
  *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 16 : 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { STICKY(); return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t smem) {
  *n = 8;
  return CUDA_SUCCESS;
}

/* FAKE_CUDA_SLOW_BLOCK=B:MS[,B:MS...] makes every launch with blockDim.x
 * == B take MS milliseconds longer, so that a test can have a search find
 * FAST variants (another block size) and SLOW ones on the stand-in. */
static void slow_block(unsigned bx) {
  static int parsed, n;
  static unsigned block[8];
  static double delay[8];
  if (!parsed) {
    const char *e = getenv("FAKE_CUDA_SLOW_BLOCK");
    for (int used = 0; e && n < 8 && sscanf(e, "%u:%lf%n", &block[n], &delay[n], &used) == 2;) {
      n++;
      e += used;
      e = *e == ',' ? e + 1 : NULL;
    }
    parsed = 1;
  }
  double ms = 0;
  for (int i = 0; i < n; i++)
    if (bx == block[i])
      ms = delay[i];
  if (ms <= 0)
    return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                        CUstream s, void **params, void **extra) {
  STICKY();
  if ((size_t)bx * by * bz > 1024 || !gx || !gy || !gz || !bx || !by || !bz)
    return CUDA_ERROR_INVALID_VALUE;
  kernel_args a = {params, (size_t)gx * gy * gz * bx * by * bz, f->module};
  slow_block(bx);
  CUresult r = f->run(&a);
  if (r != CUDA_SUCCESS)
    sticky = r; /* reported by the next call, as a GPU reports it at the sync */
  return CUDA_SUCCESS;
}

/* ---- streams and events ---- */

CUresult cuStreamCreate(CUstream *s, unsigned int flags) { *s = NULL; return sticky; }
CUresult cuStreamDestroy_v2(CUstream s) { return sticky; }
CUresult cuStreamSynchronize(CUstream s) { return sticky; }
CUresult cuStreamQuery(CUstream s) { return sticky; }
CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  STICKY();
  *e = calloc(1, sizeof **e);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
  STICKY();
  clock_gettime(CLOCK_MONOTONIC, &e->at);
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent e) { return sticky; }
CUresult cuEventQuery(CUevent e) { return sticky; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  STICKY();
  *ms = (float)((b->at.tv_sec - a->at.tv_sec) * 1e3 + (b->at.tv_nsec - a->at.tv_nsec) / 1e6);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent e) { free(e); return sticky; }
