// What a slice must carry into a standalone unit: a device function defined
// after its user, constexpr host helpers, a class with host-only members,
// a template with an explicit specialization, __constant__ memory, macros
// inside macros, a macro from the command line (-DFEATURE_SCALE=...),
// using-directives, enums, anonymous namespaces, a member defined outside
// its class template, a functor passed as a template argument, a template
// kernel whose arguments are deduced inside a host template, an execution
// space in a conditional, and device code only the device side compiles.
#include <cstdio>
#include <vector>

#include "include/features.cuh"

#define TILE 32
#define HALF_TILE (TILE / 2)
#define SQUARE(x) ((x) * (x))
#ifndef FEATURE_SCALE
#define FEATURE_SCALE 1.0f
#endif

__device__ float defined_later(float x); // defined after the kernel

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

__constant__ float coefficients[4] = {1.0f, 0.5f, 0.25f, 0.125f};

enum class Mode { Add, Mul };

namespace {
__device__ int bump(int x) { return x + 1; }
} // namespace

struct Accum {
  float total;
  Accum() = default;
  explicit Accum(float start) : total(start) {} // host only: not in the slice
  void print() const { std::printf("%f\n", total); } // host only
  __device__ void add(float v) { total += v; }
  __host__ __device__ float get() const { return total; }
};

template <typename T>
struct Width {
  static constexpr int value = 1;
};
template <>
struct Width<double> {
  static constexpr int value = 2;
};

typedef struct {
  float x, y;
} Point;

#ifdef __CUDACC__
__host__ __device__
#endif
inline float sign_of(float v) { return v < 0.0f ? -1.0f : 1.0f; }

#if __CUDA_ARCH__ >= 800
__device__ float ampere_scale(float v) { return v * 2.0f; }
#endif

using namespace feat;

__global__ void features_kernel(float *out, const Point *pts, int n, Mode mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  Accum acc;
  acc.total = 0.0f;
  Vec2<float> v{pts[i].x, pts[i].y};
  acc.add(norm2(v) * coefficients[i % 4]);
  acc.add(FEAT_SAFE_DIV(SQUARE(pts[i].x), HALF_TILE));
  acc.add(defined_later(float(bump(i))) * ceil_div(n, TILE));
#if __CUDA_ARCH__ >= 800
  acc.add(ampere_scale(sign_of(pts[i].y)));
#endif
  out[i] = mode == Mode::Add ? acc.get() + Width<double>::value : acc.get() * FEATURE_SCALE;
}

__device__ float defined_later(float x) { return x * 0.5f; }

struct AddOne {
  __device__ float operator()(float v) const { return v + 1.0f; }
};

template <typename Op>
__global__ void apply_kernel(float *x, int n, Op op) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = op(x[i]);
}

template <typename T>
__global__ void deduced_kernel(T *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = x[i] * T(Width<T>::value);
}

// libc's M_PI (math.h, brought in by the C++ library), through a macro of
// the file's own: NVRTC has no M_PI, so the slice defines it.
#define SQRT_2_OVER_PI sqrtf(2.0f / M_PI)
__global__ void gelu_scaled(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0.5f * x[i] * (1.0f + tanhf(SQRT_2_OVER_PI * x[i]));
}

// The device runtime: relocatable device code for NVRTC.
__global__ void device_malloc_kernel(float **out, size_t bytes) {
  if (cudaMalloc((void **)out, bytes) != cudaSuccess)
    *out = nullptr;
}

template <typename T>
void run_deduced(T *x, int n) {
  deduced_kernel<<<ceil_div(n, 256), 256>>>(x, n);
}

void run_features(float *out, const Point *pts, float *f, double *d, int n) {
  features_kernel<<<ceil_div(n, 256), 256>>>(out, pts, n, Mode::Add);
  apply_kernel<<<ceil_div(n, 256), 256>>>(f, n, AddOne{});
  run_deduced(f, n);
  run_deduced(d, n);
  device_malloc_kernel<<<1, 1>>>(nullptr, 16);
  gelu_scaled<<<ceil_div(n, 256), 256>>>(f, n);
  std::vector<float> host(4);
  Accum(1.0f).print();
}
