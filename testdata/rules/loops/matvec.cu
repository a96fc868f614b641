/* matvec: x1 = x1 + A * y1 and x2 = x2 + A^T * y2, one thread per output
 * element, each summing its row (or column) of A into the output in global
 * memory as it goes. */
#include <cuda_runtime.h>

#define MV_BLOCK 128

/* kernelsmith:
 *   size timed: n = 2048
 *   size odd:   n = 333
 *   size one:   n = 1
 *   in    a[n * n] uniform(-1, 1)
 *   in    y1[n] uniform(-1, 1)
 *   inout x1[n] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(n, 128), block = 128
 *   flops 2 * n * n
 */
__global__ void mv_rows_kernel(int n, float *a, float *y1, float *x1)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j;

    if (i < n)
        for (j = 0; j < n; j++)
            x1[i] += a[i * n + j] * y1[j];
}

/* kernelsmith:
 *   size timed: n = 2048
 *   size odd:   n = 333
 *   size one:   n = 1
 *   in    a[n * n] uniform(-1, 1)
 *   in    y2[n] uniform(-1, 1)
 *   inout x2[n] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(n, 128), block = 128
 *   flops 2 * n * n
 */
__global__ void mv_cols_kernel(int n, float *a, float *y2, float *x2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j;

    if (i >= n)
        return;
    for (j = 0; j <= n - 1; j += 1)
    {
        x2[i] = x2[i] + a[j * n + i] * y2[j];
    }
}

void matvec(int n, float *a, float *y1, float *x1, float *y2, float *x2)
{
    dim3 block(MV_BLOCK);
    dim3 grid((n + MV_BLOCK - 1) / MV_BLOCK);

    mv_rows_kernel<<<grid, block>>>(n, a, y1, x1);
    mv_cols_kernel<<<grid, block>>>(n, a, y2, x2);
}
