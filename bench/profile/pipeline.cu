// pipeline: an application with several kernels of different kinds, for
// profile's evidence. Each iteration runs four kernels in order on one
// stream, each between two CUDA events; the events of an iteration are read
// while the next one runs, so the GPU is never idle for the host's sake. At the end, one
// line per kernel: "pipeline: kernel NAME mean X ms over N launches" (the
// mean of its event times), which bench/profile/run.sh compares with the
// profile's mean GPU time.
// Usage: ./pipeline [iterations=200] [log2 elements=24]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void scale_bias(float *y, const float *x, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + b;
}

__global__ void smooth3(float *out, const float *in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float l = i > 0 ? in[i - 1] : in[i], r = i + 1 < n ? in[i + 1] : in[i];
    out[i] = 0.25f * l + 0.5f * in[i] + 0.25f * r;
  }
}

__global__ void transpose_tiles(float *out, const float *in, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < cols && y + j < rows)
      tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < rows && y + j < cols)
      out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void row_max(float *out, const float *in, int rows, int cols) {
  int row = blockIdx.x;
  float m = -3.4e38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, in[(size_t)row * cols + c]);
  for (int o = 16; o > 0; o >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float part[32];
  if ((threadIdx.x & 31) == 0)
    part[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
      m = fmaxf(m, part[w]);
    out[row] = m;
  }
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 200;
  int lg = argc > 2 ? std::atoi(argv[2]) : 24;
  if (iters < 1 || lg < 10 || lg > 28) {
    std::fprintf(stderr, "usage: pipeline [iterations>=1] [log2 elements 10..28]\n");
    return 2;
  }
  int n = 1 << lg, cols = 1 << (lg / 2), rows = n / cols;
  size_t bytes = (size_t)n * sizeof(float);
  std::vector<float> h(n);
  for (int i = 0; i < n; i++)
    h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
  float *x, *y, *z, *t, *m;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&z, bytes));
  CHECK(cudaMalloc(&t, bytes));
  CHECK(cudaMalloc(&m, rows * sizeof(float)));
  CHECK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));

  const char *names[4] = {"scale_bias", "smooth3", "transpose_tiles", "row_max"};
  // Two sets of events: an iteration's times are read while the next one
  // runs, so the stream never drains and each kernel's events bracket the
  // kernel alone (not the host's launch latency), as in an application
  // that keeps its GPU busy.
  cudaEvent_t ev[2][5];
  for (auto &set : ev)
    for (auto &e : set)
      CHECK(cudaEventCreate(&e));
  double total[4] = {0, 0, 0, 0};
  auto read = [&](int set) {
    CHECK(cudaEventSynchronize(ev[set][4]));
    for (int k = 0; k < 4; k++) {
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, ev[set][k], ev[set][k + 1]));
      total[k] += ms;
    }
  };
  for (int it = 0; it < iters; it++) {
    cudaEvent_t *e = ev[it & 1];
    CHECK(cudaEventRecord(e[0]));
    scale_bias<<<(n + 255) / 256, 256>>>(y, x, 1.5f, 0.25f, n);
    CHECK(cudaEventRecord(e[1]));
    smooth3<<<(n + 255) / 256, 256>>>(z, y, n);
    CHECK(cudaEventRecord(e[2]));
    transpose_tiles<<<dim3((cols + 31) / 32, (rows + 31) / 32), dim3(32, 8)>>>(t, z, rows, cols);
    CHECK(cudaEventRecord(e[3]));
    row_max<<<cols, 256>>>(m, t, cols, rows); // t is cols x rows
    CHECK(cudaEventRecord(e[4]));
    if (it > 0)
      read((it - 1) & 1);
  }
  read((iters - 1) & 1);
  CHECK(cudaGetLastError());
  // A check that the chain ran: the max of row 0 of the transposed result.
  float got = 0;
  CHECK(cudaMemcpy(&got, m, sizeof got, cudaMemcpyDeviceToHost));
  std::printf("pipeline: n=%d rows=%d cols=%d iterations=%d max0=%.6f\n", n, rows, cols, iters,
              got);
  for (int k = 0; k < 4; k++)
    std::printf("pipeline: kernel %s mean %.5f ms over %d launches\n", names[k], total[k] / iters,
                iters);
  for (float *p : {x, y, z, t, m})
    CHECK(cudaFree(p));
  return 0;
}
