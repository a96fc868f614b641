/* gemm_accum: C = alpha * A * B + beta * C with the sizes fixed by macros,
 * one thread per element of C in a 32 x 8 block, C scaled and then summed
 * into straight in global memory (the old way, without a local). */
#include <cuda_runtime.h>

#define NI 256
#define NJ 192
#define NK 128

/* kernelsmith:
 *   size timed: ni = 256
 *   scalar alpha = 1.5, beta = 0.5
 *   in    a[256 * 128] uniform(-1, 1)
 *   in    b[128 * 192] uniform(-1, 1)
 *   inout c[256 * 192] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = dim3(6, 32), block = dim3(32, 8)
 *   flops 2 * 256 * 192 * 128
 */
__global__ void gemm_accum_kernel(float alpha, float beta, float *a, float *b, float *c)
{
    int i, j, k;

    j = blockIdx.x * blockDim.x + threadIdx.x;
    i = blockIdx.y * blockDim.y + threadIdx.y;
    if ((i < NI) && (j < NJ))
    {
        c[i * NJ + j] *= beta;
        for (k = 0; k < NK; k++)
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
    }
}

void gemm_accum(float alpha, float beta, float *a, float *b, float *c)
{
    dim3 block(32, 8);
    dim3 grid((NJ + 31) / 32, (NI + 7) / 8);

    gemm_accum_kernel<<<grid, block>>>(alpha, beta, a, b, c);
}
