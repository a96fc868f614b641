// Launch configurations whose every size lives in include/sizes.cuh: dim3
// locals from header macros (one of them chosen by #ifdef), a grid computed
// with ceil from another dim3's members, and a function-like CEIL_DIV. No
// spec: the launch sites alone must evaluate. Used by tests/test_spec.c.
#include <cmath>
#include <cuda_runtime.h>

#include "sizes.cuh"

__global__ void scale_rows(int ni, float *a)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	if ((i < PB_NI) && (j < NJ))
		a[i * NJ + j] *= 2.0f;
}

__global__ void add_one(float *x, int n)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < n)
		x[t] += 1.0f;
}

void run(float *a_gpu, float *x_gpu, int n)
{
	dim3 block(DIM_BLOCK_X, DIM_BLOCK_Y);
	dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));
	scale_rows<<<grid, block>>>(NI, a_gpu);
	add_one<<<CEIL_DIV(NI * NJ, THREADS), THREADS>>>(x_gpu, NI * NJ);
}
