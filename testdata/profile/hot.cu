// Kernels a profile maps back to the sources (tests/test_profile.c): an
// overloaded pair, a template launched with two types, a kernel in an
// anonymous namespace and an extern "C" one. nvcc compiles it (the test's
// mangled names are nvcc's); the test only scans it.
#include <cuda_runtime.h>
#include <stddef.h>

namespace hot {

__global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

__global__ void axpy(double *y, const double *x, double a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

template <typename T, unsigned BLOCK>
__global__ void scale(T *__restrict__ out, const T *in, T alpha, size_t n) {
  size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = alpha * in[i];
}

} // namespace hot

namespace {
__global__ void zero(int *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0;
}
} // namespace

extern "C" __global__ void count_ones(const unsigned *x, unsigned *count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] == 1u) atomicAdd(count, 1u);
}

void run(float *f, const float *cf, double *d, const double *cd, int *k, unsigned *u, int n) {
  hot::axpy<<<(n + 255) / 256, 256>>>(f, cf, 2.0f, n);
  hot::axpy<<<(n + 255) / 256, 256>>>(d, cd, 2.0, n);
  hot::scale<float, 256><<<(n + 255) / 256, 256>>>(f, cf, 3.0f, (size_t)n);
  hot::scale<double, 128><<<(n + 127) / 128, 128>>>(d, cd, 3.0, (size_t)n);
  zero<<<(n + 255) / 256, 256>>>(k, n);
  count_ones<<<(n + 255) / 256, 256>>>(u, u + n, n);
}
