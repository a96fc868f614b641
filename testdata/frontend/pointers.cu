// Launches through a function pointer, and a switch over template instances.
#include <cuda_runtime.h>

__global__ void add_one(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void add_two(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 2.0f;
}

template <int UNROLL>
__global__ void add_unrolled(float *x, int n) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
    if (base + u < n) x[base + u] += 1.0f;
}

typedef void (*unary_kernel)(float *, int);

void choose(float *x, int n, bool twice) {
  unary_kernel k = twice ? add_two : add_one;
  k<<<(n + 255) / 256, 256>>>(x, n);
}

void dispatch_unroll(float *x, int n, int unroll) {
  void (*k)(float *, int) = nullptr;
  switch (unroll) {
  case 1: k = add_unrolled<1>; break;
  case 2: k = add_unrolled<2>; break;
  default: k = add_unrolled<4>; break;
  }
  k<<<(n + 1023) / 1024, 256>>>(x, n);
}

void run_given(unary_kernel kernel, float *x, int n) {
  kernel<<<1, 32>>>(x, n);
  void *args[] = {&x, &n};
  cudaLaunchKernel((const void *)add_one, dim3(1), dim3(32), args, 0, nullptr);
}
