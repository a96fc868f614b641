// Matrix-vector products launched with 32x8 blocks, as a public program
// does. matvec_race's output index depends on threadIdx.x alone, so the 8
// threads of a column of the block read, add to and write every y[i] at
// once: a race, which its scheduling may hide. matvec_guarded sums the 8
// partial products in shared memory and lets threadIdx.y == 0 store; every
// other kernel here is race-free too (or races harmlessly). Used by
// tests/test_insight.c and tests/race_cli.sh.
#include <cuda_runtime.h>

/* kernelsmith:
 *   size timed: n = 2048
 *   size small: n = 100
 *   in    a[n * n] uniform(-1, 1)
 *   in    x[n] uniform(-1, 1)
 *   inout y[n] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-3)
 *   launch grid = ceil_div(n, 32), block = dim3(32, 8)
 *   flops 2 * n * n
 */
__global__ void matvec_race(int n, const float *a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        for (int k = threadIdx.y; k < n; k += blockDim.y)
            y[i] += a[i * n + k] * x[k];
    }
}

__global__ void matvec_guarded(int n, const float *a, const float *x, float *y) {
    __shared__ float part[8][32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    if (i < n)
        for (int k = threadIdx.y; k < n; k += blockDim.y)
            sum += a[i * n + k] * x[k];
    part[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && i < n) {
        for (int r = 1; r < blockDim.y; r++)
            sum += part[r][threadIdx.x];
        y[i] += sum;
    }
}

__global__ void matvec_early_exit(int n, const float *a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.y != 0 || i >= n)
        return;
    float sum = 0.0f;
    for (int k = 0; k < n; k++)
        sum += a[i * n + k] * x[k];
    y[i] += sum;
}

__global__ void matvec_atomic(int n, const float *a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int k = threadIdx.y; k < n; k += blockDim.y)
            atomicAdd(&y[i], a[i * n + k] * x[k]);
}

// Every thread of a column stores the same flag: a race in name only.
__global__ void mark_rows(int n, int *flag) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        flag[i] = 1;
}

void launch_all(int n, const float *a, const float *x, float *y, int *flag) {
    dim3 block(32, 8);
    dim3 grid((n + 31) / 32);
    matvec_race<<<grid, block>>>(n, a, x, y);
    matvec_guarded<<<grid, block>>>(n, a, x, y);
    matvec_early_exit<<<grid, block>>>(n, a, x, y);
    matvec_atomic<<<grid, block>>>(n, a, x, y);
    mark_rows<<<grid, block>>>(n, flag);
}
