/**
 * mvt.cu: matrix-vector product and transpose,
 *     x1 = x1 + A * y_1
 *     x2 = x2 + A^T * y_2
 * for an N x N row-major A, single precision.
 *
 * Two kernels, one thread per output element, both accumulating straight
 * into the output vector in global memory:
 *   mvt_kernel1 walks a row of A per thread (row access: the threads of a
 *               warp read N elements apart, uncoalesced);
 *   mvt_kernel2 walks a column of A per thread (column access: the threads
 *               of a warp read neighbouring elements, coalesced).
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

/* Problem size: A is 61 MB, a little more than the L2 of an H200 */
#define N 4000
#define N_BOUND (N)

/* Thread block dimensions */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

#define DATA_TYPE float

/*
 * All terms are positive, so each float result is within (N + 2) * 2^-24
 * (about 2.4e-4) of the exact value relative to the result, whatever the
 * order of the sum. RTOL 5e-4 passes any reordering; ATOL is only a floor
 * (every result is several hundred).
 */
#define ATOL 1e-5
#define RTOL 5e-4

#define CHECK(call)                                                         \
    {                                                                       \
        cudaError_t e_ = call;                                              \
        if (e_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error at %s:%d: %s\n", __FILE__,          \
                    __LINE__, cudaGetErrorString(e_));                      \
            printf("mvt: FAIL cuda %s\n", cudaGetErrorString(e_));          \
            exit(1);                                                        \
        }                                                                   \
    }


void init_array(DATA_TYPE *A, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y_1, DATA_TYPE *y_2)
{
    int i, j;

    for (i = 0; i < N; i++)
    {
        x1[i] = ((DATA_TYPE) (i % 31)) / 31;
        x2[i] = ((DATA_TYPE) ((i + 1) % 37)) / 37;
        y_1[i] = ((DATA_TYPE) ((i + 3) % 41)) / 41;
        y_2[i] = ((DATA_TYPE) ((i + 4) % 43)) / 43;
        for (j = 0; j < N; j++)
        {
            A[i * N + j] = ((DATA_TYPE) ((i * (j + 1) + 7) % 113)) / 113;
        }
    }
}


void runMvt(DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y_1, DATA_TYPE *y_2,
            double *x1_ref, double *x2_ref)
{
    int i, j;

    for (i = 0; i < N; i++)
    {
        x1_ref[i] = x1[i];
        x2_ref[i] = x2[i];
    }

    for (i = 0; i < N; i++)
    {
        for (j = 0; j < N; j++)
        {
            x1_ref[i] = x1_ref[i] + (double)a[i * N + j] * y_1[j];
        }
    }

    /* j outside i: the same sums as x2[i] += a[j][i] * y_2[j], read row by row */
    for (j = 0; j < N; j++)
    {
        for (i = 0; i < N; i++)
        {
            x2_ref[i] = x2_ref[i] + (double)a[j * N + i] * y_2[j];
        }
    }
}


int compareResults(const char *what, double *ref, DATA_TYPE *got)
{
    int i, first = -1, fail = 0;

    for (i = 0; i < N; i++)
    {
        if (!(fabs((double)got[i] - ref[i]) <= ATOL + RTOL * fabs(ref[i])))
        {
            if (first < 0) first = i;
            fail++;
        }
    }
    if (fail)
        printf("mvt: FAIL %s[%d] expected %.9g got %.9g (%d mismatches)\n",
               what, first, ref[first], (double)got[first], fail);
    return fail;
}


__global__ void mvt_kernel1(DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *y_1)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < N_BOUND)
    {
        int j;
        for (j = 0; j < N_BOUND; j++)
        {
            x1[i] += a[i * N + j] * y_1[j];
        }
    }
}


__global__ void mvt_kernel2(DATA_TYPE *a, DATA_TYPE *x2, DATA_TYPE *y_2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < N_BOUND)
    {
        int j;
        for (j = 0; j <= N_BOUND - 1; j += 1)
        {
            x2[i] += a[j * N + i] * y_2[j];
        }
    }
}


void mvtCuda(DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *x2, DATA_TYPE *y_1, DATA_TYPE *y_2,
             DATA_TYPE *x1_outputFromGpu, DATA_TYPE *x2_outputFromGpu)
{
    DATA_TYPE *a_gpu;
    DATA_TYPE *x1_gpu;
    DATA_TYPE *x2_gpu;
    DATA_TYPE *y_1_gpu;
    DATA_TYPE *y_2_gpu;

    CHECK(cudaMalloc((void **)&a_gpu, sizeof(DATA_TYPE) * N * N));
    CHECK(cudaMalloc((void **)&x1_gpu, sizeof(DATA_TYPE) * N));
    CHECK(cudaMalloc((void **)&x2_gpu, sizeof(DATA_TYPE) * N));
    CHECK(cudaMalloc((void **)&y_1_gpu, sizeof(DATA_TYPE) * N));
    CHECK(cudaMalloc((void **)&y_2_gpu, sizeof(DATA_TYPE) * N));
    CHECK(cudaMemcpy(a_gpu, a, sizeof(DATA_TYPE) * N * N, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x1_gpu, x1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x2_gpu, x2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y_1_gpu, y_1, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y_2_gpu, y_2, sizeof(DATA_TYPE) * N, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)ceil((float)N / ((float)DIM_THREAD_BLOCK_X)), 1);

    mvt_kernel1<<<grid, block>>>(a_gpu, x1_gpu, y_1_gpu);
    CHECK(cudaGetLastError());
    mvt_kernel2<<<grid, block>>>(a_gpu, x2_gpu, y_2_gpu);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    CHECK(cudaMemcpy(x1_outputFromGpu, x1_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(x2_outputFromGpu, x2_gpu, sizeof(DATA_TYPE) * N, cudaMemcpyDeviceToHost));

    CHECK(cudaFree(a_gpu));
    CHECK(cudaFree(x1_gpu));
    CHECK(cudaFree(x2_gpu));
    CHECK(cudaFree(y_1_gpu));
    CHECK(cudaFree(y_2_gpu));
}


int main(int argc, char *argv[])
{
    DATA_TYPE *a, *x1, *x2, *y_1, *y_2;
    DATA_TYPE *x1_outputFromGpu, *x2_outputFromGpu;
    double *x1_ref, *x2_ref;
    int fail;

    a = (DATA_TYPE *)malloc(N * N * sizeof(DATA_TYPE));
    x1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    x2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    y_1 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    y_2 = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    x1_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    x2_outputFromGpu = (DATA_TYPE *)malloc(N * sizeof(DATA_TYPE));
    x1_ref = (double *)malloc(N * sizeof(double));
    x2_ref = (double *)malloc(N * sizeof(double));
    if (!a || !x1 || !x2 || !y_1 || !y_2 || !x1_outputFromGpu || !x2_outputFromGpu ||
        !x1_ref || !x2_ref)
    {
        printf("mvt: FAIL out of host memory\n");
        return 1;
    }

    printf("mvt: N=%d\n", N);
    init_array(a, x1, x2, y_1, y_2);
    mvtCuda(a, x1, x2, y_1, y_2, x1_outputFromGpu, x2_outputFromGpu);
    runMvt(a, x1, x2, y_1, y_2, x1_ref, x2_ref);

    fail = compareResults("x1", x1_ref, x1_outputFromGpu);
    if (!fail)
        fail = compareResults("x2", x2_ref, x2_outputFromGpu);
    if (!fail)
        printf("mvt: PASS\n");

    free(a); free(x1); free(x2); free(y_1); free(y_2);
    free(x1_outputFromGpu); free(x2_outputFromGpu);
    free(x1_ref); free(x2_ref);
    return fail ? 1 : 0;
}
