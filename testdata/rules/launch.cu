// Edge cases of the launch rules (passes/rules_launch.c), checked by
// tests/test_rules.c: each kernel exercises one way a rule applies or
// declines.
#include <cuda_runtime.h>

// No bounds check: the grid is exact, so `block` must guard divisibility.
// kernelsmith:
//   size timed: n = 1 << 20
//   size odd:   n = 4096
//   inout x[n] uniform(-1, 1)
//   launch grid = n / 256, block = 256
__global__ void exact_grid(float *x, int n) {
  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f;
}

// An early return and a return inside the body: both become `continue`; the
// index is unsigned; an existing __launch_bounds__ is replaced.
// kernelsmith:
//   size timed: n = 1 << 20
//   size odd:   n = 12345
//   in  in[n] uniform(-1, 1)
//   out out[n]
//   launch grid = ceil_div(n, 128), block = 128
__global__ void __launch_bounds__(128) early_return(const float *in, float *out, unsigned n) {
  unsigned i = threadIdx.x + blockDim.x * blockIdx.x;
  if (i >= n)
    return;
  float v = in[i];
  if (v < 0.0f) {
    out[i] = 0.0f;
    return;
  }
  out[i] = v * v;
}

// The bound is a buffer-derived local: the loop counter is widened.
// kernelsmith:
//   size timed: n = 1 << 20
//   size odd:   n = 12345
//   in  in[n] uniform(-1, 1)
//   out out[n]
//   launch grid = ceil_div(n, 256), block = 256
__global__ void local_bound(const float *in, float *out, int n) {
  const int half = n / 2;
  int i = (int)(blockIdx.x * blockDim.x) + (int)threadIdx.x;
  if (i < half + half + (n & 1)) {
    out[i] = in[i] + 1.0f;
  }
}

// One thread per block counts the block: a block size is part of the result.
// kernelsmith:
//   size timed: n = 1 << 20
//   size odd:   n = 12345
//   in    in[n] uniform(-1, 1)
//   inout count[1] const(0)
//   launch grid = ceil_div(n, 256), block = 256
__global__ void per_block(const float *in, unsigned *count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0 && i < n && in[i] > 2.0f)
    atomicAdd(count, 1u);
}

// Launches, so that the scanner sees a configuration for each kernel.
void run_all(float *x, const float *in, float *out, unsigned *count, int n) {
  exact_grid<<<n / 256, 256>>>(x, n);
  early_return<<<(n + 127) / 128, 128>>>(in, out, n);
  local_bound<<<(n + 255) / 256, 256>>>(in, out, n);
  per_block<<<(n + 255) / 256, 256>>>(in, count, n);
}
