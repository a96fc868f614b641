/**
 * atax.cu: y = A^T * (A * x), double precision, A is NX x NY row-major.
 *
 * atax_kernel1: tmp = A * x, one thread per row of A (row access,
 *               uncoalesced), accumulating into tmp in global memory.
 * atax_kernel2: y = A^T * tmp, one thread per column of A (column access,
 *               coalesced); it reads the whole of tmp written by kernel 1.
 * tmp and y start at zero (cudaMemset) and are summed into directly.
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

/* Problem size: A is 160 MB */
#define NX 4000
#define NY 5000

#define NX_BOUND NX
#define NY_BOUND NY

/* Thread block dimensions */
#define DIM_THREAD_BLOCK_X 256
#define DIM_THREAD_BLOCK_Y 1

typedef double DATA_TYPE;

/*
 * The inputs are in [0, 1), so all terms are positive: tmp is within
 * (NY + 1) * 2^-53 and y within (NX + NY + 2) * 2^-53 (about 1e-12) of the
 * exact value relative to the result, in any order of summation. RTOL 1e-10
 * passes any reordering in double; a float computation (relative error near
 * 1e-7) fails.
 */
#define ATOL 1e-12
#define RTOL 1e-10

#define GPU_ERRCHK(ans)                                                     \
	{                                                                       \
		cudaError_t code_ = (ans);                                          \
		if (code_ != cudaSuccess) {                                         \
			fprintf(stderr, "GPUassert: %s %s %d\n",                        \
				cudaGetErrorString(code_), __FILE__, __LINE__);             \
			printf("atax: FAIL cuda %s\n", cudaGetErrorString(code_));      \
			exit(1);                                                        \
		}                                                                   \
	}

/* A small linear congruential generator: the same numbers on every machine. */
static unsigned int seed = 20240607u;

DATA_TYPE rand_uniform(void)
{
	seed = seed * 1103515245u + 12345u;
	return (DATA_TYPE)((seed >> 8) & 0xffffffu) / 16777216.0;
}


void init_array(DATA_TYPE *x, DATA_TYPE *A)
{
	int i, j;

	for (i = 0; i < NY; i++)
		x[i] = rand_uniform();

	for (i = 0; i < NX; i++)
		for (j = 0; j < NY; j++)
			A[i * NY + j] = rand_uniform();
}


void atax_cpu(DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *y, DATA_TYPE *tmp)
{
	int i, j;

	for (i = 0; i < NY; i++)
		y[i] = 0;

	for (i = 0; i < NX; i++)
	{
		tmp[i] = 0;
		for (j = 0; j < NY; j++)
			tmp[i] = tmp[i] + A[i * NY + j] * x[j];

		/* row i's share of every y[j], in the order atax_kernel2 adds them */
		for (j = 0; j < NY; j++)
			y[j] = y[j] + A[i * NY + j] * tmp[i];
	}
}


int compareResults(const char *what, DATA_TYPE *ref, DATA_TYPE *got, int n)
{
	int i, first = -1, fail = 0;

	for (i = 0; i < n; i++)
	{
		if (!(fabs(got[i] - ref[i]) <= ATOL + RTOL * fabs(ref[i])))
		{
			if (first < 0)
				first = i;
			fail++;
		}
	}
	if (fail)
		printf("atax: FAIL %s[%d] expected %.17g got %.17g (%d mismatches)\n",
			what, first, ref[first], got[first], fail);
	return fail;
}


__global__ void atax_kernel1(DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *tmp)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < NX_BOUND)
	{
		int j;
		for (j = 0; j < NY_BOUND; j += 1)
		{
			tmp[i] += A[i * NY + j] * x[j];
		}
	}
}


__global__ void atax_kernel2(DATA_TYPE *A, DATA_TYPE *y, DATA_TYPE *tmp)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < NY_BOUND)
	{
		int i;
		for (i = 0; i < NX_BOUND; i++)
		{
			y[j] += A[i * NY + j] * tmp[i];
		}
	}
}


void ataxGpu(DATA_TYPE *A, DATA_TYPE *x, DATA_TYPE *y_outputFromGpu, DATA_TYPE *tmp_outputFromGpu)
{
	DATA_TYPE *A_gpu;
	DATA_TYPE *x_gpu;
	DATA_TYPE *y_gpu;
	DATA_TYPE *tmp_gpu;

	GPU_ERRCHK(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NX * NY));
	GPU_ERRCHK(cudaMalloc((void **)&x_gpu, sizeof(DATA_TYPE) * NY));
	GPU_ERRCHK(cudaMalloc((void **)&y_gpu, sizeof(DATA_TYPE) * NY));
	GPU_ERRCHK(cudaMalloc((void **)&tmp_gpu, sizeof(DATA_TYPE) * NX));

	GPU_ERRCHK(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NX * NY, cudaMemcpyHostToDevice));
	GPU_ERRCHK(cudaMemcpy(x_gpu, x, sizeof(DATA_TYPE) * NY, cudaMemcpyHostToDevice));
	GPU_ERRCHK(cudaMemset(y_gpu, 0, sizeof(DATA_TYPE) * NY));
	GPU_ERRCHK(cudaMemset(tmp_gpu, 0, sizeof(DATA_TYPE) * NX));

	dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
	dim3 grid1((size_t)(ceil(((float)NX) / ((float)block.x))), 1);
	dim3 grid2((size_t)(ceil(((float)NY) / ((float)block.x))), 1);

	atax_kernel1<<<grid1, block>>>(A_gpu, x_gpu, tmp_gpu);
	GPU_ERRCHK(cudaGetLastError());
	atax_kernel2<<<grid2, block>>>(A_gpu, y_gpu, tmp_gpu);
	GPU_ERRCHK(cudaGetLastError());
	GPU_ERRCHK(cudaDeviceSynchronize());

	GPU_ERRCHK(cudaMemcpy(y_outputFromGpu, y_gpu, sizeof(DATA_TYPE) * NY, cudaMemcpyDeviceToHost));
	GPU_ERRCHK(cudaMemcpy(tmp_outputFromGpu, tmp_gpu, sizeof(DATA_TYPE) * NX, cudaMemcpyDeviceToHost));

	GPU_ERRCHK(cudaFree(A_gpu));
	GPU_ERRCHK(cudaFree(x_gpu));
	GPU_ERRCHK(cudaFree(y_gpu));
	GPU_ERRCHK(cudaFree(tmp_gpu));
}


int main(int argc, char **argv)
{
	DATA_TYPE *A;
	DATA_TYPE *x;
	DATA_TYPE *y;
	DATA_TYPE *tmp;
	DATA_TYPE *y_outputFromGpu;
	DATA_TYPE *tmp_outputFromGpu;
	int fail;

	A = (DATA_TYPE *)malloc(NX * NY * sizeof(DATA_TYPE));
	x = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
	y = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
	tmp = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));
	y_outputFromGpu = (DATA_TYPE *)malloc(NY * sizeof(DATA_TYPE));
	tmp_outputFromGpu = (DATA_TYPE *)malloc(NX * sizeof(DATA_TYPE));
	if (!A || !x || !y || !tmp || !y_outputFromGpu || !tmp_outputFromGpu)
	{
		printf("atax: FAIL out of host memory\n");
		return 1;
	}

	printf("atax: NX=%d NY=%d\n", NX, NY);
	init_array(x, A);
	ataxGpu(A, x, y_outputFromGpu, tmp_outputFromGpu);
	atax_cpu(A, x, y, tmp);

	fail = compareResults("tmp", tmp, tmp_outputFromGpu, NX);
	if (!fail)
		fail = compareResults("y", y, y_outputFromGpu, NY);
	if (!fail)
		printf("atax: PASS\n");

	free(A);
	free(x);
	free(y);
	free(tmp);
	free(y_outputFromGpu);
	free(tmp_outputFromGpu);
	return fail ? 1 : 0;
}
