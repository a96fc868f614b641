// The physical floor the rules-coverage GPU part compares kernels with:
// copy bandwidth (cudaMemcpy device to device: bytes read plus bytes
// written over the time), fp32 FMA rate (a kernel of independent FMA
// chains, 2 FLOPs each), and, for each MxNxK given, cuBLAS's SGEMM
// (column-major C = A * B, default math mode: fp32, no TF32) at that size.
// Prints one JSON object. Built by bench/rules-coverage/gpu.py with nvcc;
// -DKS_NO_CUBLAS builds it without cuBLAS (no sgemm times then).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <vector>
#ifndef KS_NO_CUBLAS
#include <cublas_v2.h>
#endif

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Eight independent chains per thread keep the FMA pipes full; the result
// is stored only when it cannot be, so the compiler keeps every FMA.
__global__ void fma_kernel(float *out, float a, float b, int iters) {
  float x[8];
  for (int i = 0; i < 8; i++) x[i] = threadIdx.x + i;
  for (int it = 0; it < iters; it++)
#pragma unroll
    for (int i = 0; i < 8; i++) x[i] = fmaf(x[i], a, b);
  float s = 0;
  for (int i = 0; i < 8; i++) s += x[i];
  if (s == 1234.5f) out[0] = s;
}

int main(int argc, char **argv) {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  float ms;

  // Copy bandwidth: 1 GiB device to device, well past the L2.
  size_t bytes = (size_t)1 << 30;
  void *a, *b;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  std::vector<float> times;
  for (int r = 0; r < 12; r++) {
    CHECK(cudaEventRecord(t0));
    CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    if (r >= 2) times.push_back(ms);
  }
  double copy_bw = 2.0 * bytes / (median(times) * 1e-3);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));

  // FMA rate.
  float *out;
  CHECK(cudaMalloc(&out, sizeof(float)));
  int iters = 4096, threads = 256, blocks = p.multiProcessorCount * 16;
  times.clear();
  for (int r = 0; r < 12; r++) {
    CHECK(cudaEventRecord(t0));
    fma_kernel<<<blocks, threads>>>(out, 0.999f, 0.001f, iters);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaGetLastError());
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    if (r >= 2) times.push_back(ms);
  }
  double flops = 2.0 * 8 * iters * (double)threads * blocks / (median(times) * 1e-3);

  printf("{\"device\": \"%s\", \"copy_bandwidth\": %.6g, \"flops_fp32\": %.6g, \"sgemm\": [", p.name,
         copy_bw, flops);
#ifndef KS_NO_CUBLAS
  cublasHandle_t h;
  bool have = cublasCreate(&h) == CUBLAS_STATUS_SUCCESS;
  int printed = 0;
  for (int i = 1; i < argc && have; i++) {
    int m, n, k;
    if (sscanf(argv[i], "%dx%dx%d", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) continue;
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, sizeof(float) * m * k));
    CHECK(cudaMalloc(&B, sizeof(float) * k * n));
    CHECK(cudaMalloc(&C, sizeof(float) * m * n));
    CHECK(cudaMemset(A, 0, sizeof(float) * m * k));
    CHECK(cudaMemset(B, 0, sizeof(float) * k * n));
    CHECK(cudaMemset(C, 0, sizeof(float) * m * n));
    float alpha = 1.25f, beta = 0.75f;
    times.clear();
    int status = 0;
    for (int r = 0; r < 23; r++) {
      CHECK(cudaEventRecord(t0));
      status |= cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A, m, B, k, &beta, C, m);
      CHECK(cudaEventRecord(t1));
      CHECK(cudaEventSynchronize(t1));
      CHECK(cudaEventElapsedTime(&ms, t0, t1));
      if (r >= 3) times.push_back(ms);
    }
    printf("%s{\"m\": %d, \"n\": %d, \"k\": %d, \"ms\": %.6g, \"ok\": %s}", printed++ ? ", " : "", m, n, k,
           median(times), status ? "false" : "true");
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
  }
  if (have) cublasDestroy(h);
  printf("], \"cublas\": %s}\n", have ? "true" : "false");
#else
  (void)argc;
  (void)argv;
  printf("], \"cublas\": false}\n");
#endif
  return 0;
}
