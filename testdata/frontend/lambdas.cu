// Launches inside lambdas, inside a class method, and with dynamic shared memory.
#include <cuda_runtime.h>

__global__ void block_sum(const float *in, float *partial, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(partial, buf[0]);
}

struct Reducer {
  int threads = 256;
  void run(const float *in, float *out, int n) {
    auto go = [&](int t) {
      block_sum<<<(n + t - 1) / t, t, t * sizeof(float)>>>(in, out, n);
    };
    go(threads);
  }
};

void reduce_twice(const float *in, float *out, int n) {
  auto launch = [=](int blocks) { block_sum<<<blocks, 512, 512 * sizeof(float)>>>(in, out, n); };
  launch((n + 511) / 512);
  Reducer r;
  r.run(in, out, n);
}
