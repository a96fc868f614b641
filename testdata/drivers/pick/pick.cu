/* pick: a benchmark driver in the style of many sample programs. The
 * kernels under test are chosen at run time through a function pointer, and
 * every launch goes through that pointer; sizes are macros. Usage: ./pick */
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define N_ELEMS (1 << 22)
#define BLOCK_DIM 128

/* kernelsmith:
 *   size timed: n = 4194304
 *   size small: n = 1000
 *   size odd:   n = 4097
 *   scalar k = 3.0
 *   in  src[n] uniform(-1, 1)
 *   out dst[n] tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void scale_elems(float *dst, const float *src, float k, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = k * src[i];
}

/* kernelsmith:
 *   size timed: n = 4194304
 *   size small: n = 1000
 *   size odd:   n = 4097
 *   scalar k = 3.0
 *   in  src[n] uniform(-1, 1)
 *   out dst[n] tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void offset_elems(float *dst, const float *src, float k, int n)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = src[i] + k;
}

int main(void)
{
  float *d_src, *d_dst;
  float *h = (float *)malloc(N_ELEMS * sizeof(float));
  int i, t, bad = 0;
  void (*kernel)(float *, const float *, float, int);
  const char *name;
  for (i = 0; i < N_ELEMS; i++)
    h[i] = (float)(i % 17) - 8.0f;
  cudaMalloc((void **)&d_src, N_ELEMS * sizeof(float));
  cudaMalloc((void **)&d_dst, N_ELEMS * sizeof(float));
  cudaMemcpy(d_src, h, N_ELEMS * sizeof(float), cudaMemcpyHostToDevice);
  for (t = 0; t < 2; t++) {
    if (t == 0) {
      kernel = &scale_elems;
      name = "scale";
    } else {
      kernel = &offset_elems;
      name = "offset";
    }
    dim3 grid((N_ELEMS + BLOCK_DIM - 1) / BLOCK_DIM), threads(BLOCK_DIM);
    kernel<<<grid, threads>>>(d_dst, d_src, 3.0f, N_ELEMS);
    cudaMemcpy(h, d_dst, N_ELEMS * sizeof(float), cudaMemcpyDeviceToHost);
    for (i = 0; i < N_ELEMS; i++) {
      float x = (float)(i % 17) - 8.0f, want = t == 0 ? 3.0f * x : x + 3.0f;
      if (h[i] != want)
        bad++;
    }
    printf("%s: %s\n", name, bad ? "FAIL" : "PASS");
  }
  cudaFree(d_src);
  cudaFree(d_dst);
  free(h);
  return bad ? 1 : 0;
}
