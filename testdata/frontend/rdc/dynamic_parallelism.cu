// Dynamic parallelism: a kernel launches a kernel (needs -rdc=true, which
// the compile flags give; clang calls it -fgpu-rdc).
#include <cuda_runtime.h>

__global__ void child(int *data, int depth) {
  data[threadIdx.x] += depth;
}

__global__ void parent(int *data, int depth) {
  if (threadIdx.x == 0 && depth < 4)
    child<<<1, 32>>>(data, depth + 1);
}

void run(int *data) { parent<<<1, 1>>>(data, 0); }
