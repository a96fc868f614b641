// Kernels defined in a header, one of them extern "C", in a namespace.
#pragma once
#include <cuda_runtime.h>

namespace ks_test {
namespace detail {

__device__ inline float clampf(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

__device__ inline float relu_clamped(float v) { return clampf(v, 0.0f, 6.0f); }

__global__ void relu6(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = relu_clamped(x[i]);
}

} // namespace detail
} // namespace ks_test

extern "C" __global__ void c_linkage_copy(float *dst, const float *src, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = src[i];
}
