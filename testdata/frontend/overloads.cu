// Overloaded kernels: each launch must resolve to its own overload.
#include <cuda_runtime.h>

__global__ void fill(float *x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void fill(int *x, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void fill(double *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0;
}

void fill_all(float *f, int *k, double *d, int n) {
  fill<<<n / 64 + 1, 64>>>(k, 7, n);
  fill<<<n / 64 + 1, 64>>>(f, 1.5f, n);
  fill<<<n / 64 + 1, 64>>>(d, n);
}
