/**
 * fdtd2d.cu: 2-D finite-difference time-domain (Yee) update of the fields
 * ex, ey and hz on an NX x NY grid for TMAX steps, double precision.
 *
 * Each step is three kernels, one thread per grid point (2-D, 32x8):
 *   fdtd_step1_kernel: ey from hz (row 0 takes the source _fict_[t]);
 *   fdtd_step2_kernel: ex from hz;
 *   fdtd_step3_kernel: hz from the new ex and ey.
 * The three fields are 9.6 MB each, 29 MB together: they stay in the L2 of
 * an H200 across the time loop.
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

/* Problem size */
#define TMAX 60
#define NX 1000
#define NY 1200
#define NX_BOUND NX
#define NY_BOUND NY

/* Thread block dimensions */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%.17g"

/*
 * Every update is a few double operations on values of size up to TMAX, and
 * the scheme is stable (0.5 * 0.7 * 2 < 1), so rounding stays near
 * TMAX * 4 * 2^-53 * |value| (1e-12 for values of 40), with or without fused
 * multiply-adds. ATOL and RTOL 1e-9 leave room for that and catch anything
 * computed in float.
 */
#define ATOL 1e-9
#define RTOL 1e-9

#define CHECK_CUDA(call)                                                     \
    do {                                                                     \
        cudaError_t status_ = (call);                                        \
        if (status_ != cudaSuccess) {                                        \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,               \
                    cudaGetErrorString(status_));                            \
            printf("fdtd2d: FAIL cuda %s\n", cudaGetErrorString(status_));   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)


void init_arrays(DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
    int i, j;

    for (i = 0; i < TMAX; i++)
    {
        _fict_[i] = (DATA_TYPE) i;
    }

    for (i = 0; i < NX; i++)
    {
        for (j = 0; j < NY; j++)
        {
            ex[i * NY + j] = ((DATA_TYPE) ((i * (j + 1)) % NX)) / NX;
            ey[i * NY + j] = ((DATA_TYPE) ((i * (j + 2)) % NY)) / NY;
            hz[i * NY + j] = ((DATA_TYPE) ((i * (j + 3)) % NX)) / NX;
        }
    }
}


/* The same steps on the host; the three updates of a step in the same order. */
void runFdtd(DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
    int t, i, j;

    for (t = 0; t < TMAX; t++)
    {
        for (j = 0; j < NY; j++)
        {
            ey[0 * NY + j] = _fict_[t];
        }

        for (i = 1; i < NX; i++)
        {
            for (j = 0; j < NY; j++)
            {
                ey[i * NY + j] = ey[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[(i - 1) * NY + j]);
            }
        }

        for (i = 0; i < NX; i++)
        {
            for (j = 1; j < NY; j++)
            {
                ex[i * NY + j] = ex[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[i * NY + (j - 1)]);
            }
        }

        for (i = 0; i < NX - 1; i++)
        {
            for (j = 0; j < NY - 1; j++)
            {
                hz[i * NY + j] = hz[i * NY + j] - 0.7 * (ex[i * NY + (j + 1)] - ex[i * NY + j] + ey[(i + 1) * NY + j] - ey[i * NY + j]);
            }
        }
    }
}


int compareResults(const char *what, DATA_TYPE *ref, DATA_TYPE *got)
{
    int i, first = -1, fail = 0;

    for (i = 0; i < NX * NY; i++)
    {
        if (!(fabs(got[i] - ref[i]) <= ATOL + RTOL * fabs(ref[i])))
        {
            if (first < 0)
                first = i;
            fail++;
        }
    }
    if (fail)
        printf("fdtd2d: FAIL %s[%d] expected " DATA_PRINTF_MODIFIER " got " DATA_PRINTF_MODIFIER " (%d mismatches)\n",
               what, first, ref[first], got[first], fail);
    return fail;
}


__global__ void fdtd_step1_kernel(DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz, int t)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < NX_BOUND) && (j < NY_BOUND))
    {
        if (i == 0)
        {
            ey[i * NY + j] = _fict_[t];
        }
        else
        {
            ey[i * NY + j] = ey[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[(i - 1) * NY + j]);
        }
    }
}


__global__ void fdtd_step2_kernel(DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < NX_BOUND) && (j < NY_BOUND) && (j > 0))
    {
        ex[i * NY + j] = ex[i * NY + j] - 0.5 * (hz[i * NY + j] - hz[i * NY + (j - 1)]);
    }
}


__global__ void fdtd_step3_kernel(DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;

    if ((i < (NX_BOUND - 1)) && (j < (NY_BOUND - 1)))
    {
        hz[i * NY + j] = hz[i * NY + j] - 0.7 * (ex[i * NY + (j + 1)] - ex[i * NY + j] + ey[(i + 1) * NY + j] - ey[i * NY + j]);
    }
}


void fdtdCuda(DATA_TYPE *_fict_, DATA_TYPE *ex, DATA_TYPE *ey, DATA_TYPE *hz, DATA_TYPE *hz_outputFromGpu,
              DATA_TYPE *ex_outputFromGpu, DATA_TYPE *ey_outputFromGpu)
{
    DATA_TYPE *_fict_gpu;
    DATA_TYPE *ex_gpu;
    DATA_TYPE *ey_gpu;
    DATA_TYPE *hz_gpu;
    int t;

    CHECK_CUDA(cudaMalloc((void **)&_fict_gpu, sizeof(DATA_TYPE) * TMAX));
    CHECK_CUDA(cudaMalloc((void **)&ex_gpu, sizeof(DATA_TYPE) * NX * NY));
    CHECK_CUDA(cudaMalloc((void **)&ey_gpu, sizeof(DATA_TYPE) * NX * NY));
    CHECK_CUDA(cudaMalloc((void **)&hz_gpu, sizeof(DATA_TYPE) * NX * NY));

    CHECK_CUDA(cudaMemcpy(_fict_gpu, _fict_, sizeof(DATA_TYPE) * TMAX, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(ex_gpu, ex, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(ey_gpu, ey, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(hz_gpu, hz, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));

    dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
    dim3 grid((size_t)ceil(((float)NY) / ((float)block.x)), (size_t)ceil(((float)NX) / ((float)block.y)));

    for (t = 0; t < TMAX; t++)
    {
        fdtd_step1_kernel<<<grid, block>>>(_fict_gpu, ex_gpu, ey_gpu, hz_gpu, t);
        fdtd_step2_kernel<<<grid, block>>>(ex_gpu, ey_gpu, hz_gpu);
        fdtd_step3_kernel<<<grid, block>>>(ex_gpu, ey_gpu, hz_gpu);
    }
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());

    CHECK_CUDA(cudaMemcpy(hz_outputFromGpu, hz_gpu, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(ex_outputFromGpu, ex_gpu, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(ey_outputFromGpu, ey_gpu, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyDeviceToHost));

    CHECK_CUDA(cudaFree(_fict_gpu));
    CHECK_CUDA(cudaFree(ex_gpu));
    CHECK_CUDA(cudaFree(ey_gpu));
    CHECK_CUDA(cudaFree(hz_gpu));
}


int main()
{
    DATA_TYPE *_fict_ = (DATA_TYPE *)malloc(TMAX * sizeof(DATA_TYPE));
    DATA_TYPE *ex = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    DATA_TYPE *ey = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    DATA_TYPE *hz = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    DATA_TYPE *ex_outputFromGpu = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    DATA_TYPE *ey_outputFromGpu = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    DATA_TYPE *hz_outputFromGpu = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
    int fail;

    if (!_fict_ || !ex || !ey || !hz || !ex_outputFromGpu || !ey_outputFromGpu || !hz_outputFromGpu)
    {
        printf("fdtd2d: FAIL out of host memory\n");
        return 1;
    }

    printf("fdtd2d: NX=%d NY=%d TMAX=%d\n", NX, NY, TMAX);
    init_arrays(_fict_, ex, ey, hz);
    fdtdCuda(_fict_, ex, ey, hz, hz_outputFromGpu, ex_outputFromGpu, ey_outputFromGpu);
    runFdtd(_fict_, ex, ey, hz);

    fail = compareResults("hz", hz, hz_outputFromGpu);
    if (!fail)
        fail = compareResults("ex", ex, ex_outputFromGpu);
    if (!fail)
        fail = compareResults("ey", ey, ey_outputFromGpu);
    if (!fail)
        printf("fdtd2d: PASS\n");

    free(_fict_);
    free(ex);
    free(ey);
    free(hz);
    free(ex_outputFromGpu);
    free(ey_outputFromGpu);
    free(hz_outputFromGpu);
    return fail ? 1 : 0;
}
