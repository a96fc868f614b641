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

// C-style launch setup, as Rodinia writes it: dim3 locals declared bare and
// set member by member; one set under an if, which the site cannot vouch for.
void run_c_style(float *x_gpu, int n)
{
	dim3 threads;
	threads.x = THREADS;
	dim3 blocks;
	blocks.x = CEIL_DIV(NI * NJ, THREADS);
	blocks.y = 1;
	add_one<<<blocks, threads>>>(x_gpu, NI * NJ);
}

__global__ void add_two(float *x, int n)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t < n)
		x[t] += 2.0f;
}

void run_branchy(float *x_gpu, int n)
{
	dim3 threads;
	threads.x = THREADS;
	if (n < THREADS)
		threads.x = 32;
	add_two<<<CEIL_DIV(NI * NJ, THREADS), threads>>>(x_gpu, NI * NJ);
}
