/**
 * gemm.cu: C = ALPHA * A * B + BETA * C, single precision.
 *
 * One thread per element of C on a 2-D grid; the thread scales its C element
 * and then accumulates the dot product straight into global memory.
 * Sizes are compile-time macros: A is NI x NK, B is NK x NJ, C is NI x NJ,
 * all row-major.
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda.h>
#include <cuda_runtime.h>

/* Problem size */
#define NI 1024
#define NJ 1088
#define NK 960

#define NI_BOUND NI
#define NJ_BOUND NJ
#define NK_BOUND NK

/* Thread block dimensions */
#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

/* Scalars of the update */
#define ALPHA 1.5f
#define BETA 1.25f

typedef float DATA_TYPE;

/*
 * Every term ALPHA * a * b is positive, so the float sum of the NK + 1 terms
 * is within (NK + 3) * 2^-24 (about 5.9e-5) of the exact value relative to
 * the result, in any summation order and with or without fused multiply-adds.
 * RTOL 2e-4 passes any such reordering and still catches a missing or wrong
 * term; ATOL covers the elements of row 0 (a is 0 there).
 */
#define ATOL 1e-5
#define RTOL 2e-4

#define CUDA_SAFE_CALL(call)                                                   \
	do {                                                                       \
		cudaError_t err = (call);                                              \
		if (err != cudaSuccess) {                                              \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                 \
				cudaGetErrorString(err));                                      \
			printf("gemm: FAIL cuda %s\n", cudaGetErrorString(err));           \
			exit(1);                                                           \
		}                                                                      \
	} while (0)


void init(DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C)
{
	int i, j;

	for (i = 0; i < NI; i++)
		for (j = 0; j < NK; j++)
			A[i * NK + j] = ((DATA_TYPE) ((i * (j + 1)) % 97)) / 97;

	for (i = 0; i < NK; i++)
		for (j = 0; j < NJ; j++)
			B[i * NJ + j] = ((DATA_TYPE) ((i * (j + 2) + 1) % 89)) / 89;

	for (i = 0; i < NI; i++)
		for (j = 0; j < NJ; j++)
			C[i * NJ + j] = ((DATA_TYPE) ((i * j + 3) % 101)) / 101;
}


/* The same update in double, k outside j so that the inner loop is unit-stride. */
void gemm_cpu(DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, double *C_ref)
{
	int i, j, k;
	double a;

	for (i = 0; i < NI; i++)
	{
		for (j = 0; j < NJ; j++)
			C_ref[i * NJ + j] = (double)BETA * C[i * NJ + j];

		for (k = 0; k < NK; k++)
		{
			a = (double)ALPHA * A[i * NK + k];
			for (j = 0; j < NJ; j++)
				C_ref[i * NJ + j] += a * B[k * NJ + j];
		}
	}
}


int compareResults(const char *what, double *ref, DATA_TYPE *got, int n)
{
	int i, first = -1, fail = 0;
	double e, g;

	for (i = 0; i < n; i++)
	{
		e = ref[i];
		g = (double)got[i];
		if (!(fabs(g - e) <= ATOL + RTOL * fabs(e)))
		{
			if (first < 0)
				first = i;
			fail++;
		}
	}
	if (fail)
		printf("gemm: FAIL %s[%d] expected %.9g got %.9g (%d mismatches)\n",
			what, first, ref[first], (double)got[first], fail);
	return fail;
}


__global__ void gemm_kernel(DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
	int i, j, k;

	i = blockIdx.y * blockDim.y + threadIdx.y;
	j = blockIdx.x * blockDim.x + threadIdx.x;

	if ((i < NI_BOUND) && (j < NJ_BOUND))
	{
		c[i * NJ + j] *= BETA;

		for (k = 0; k < NK_BOUND; k++)
		{
			c[i * NJ + j] += ALPHA * a[i * NK + k] * b[k * NJ + j];
		}
	}
}


void gemmCuda(DATA_TYPE *A, DATA_TYPE *B, DATA_TYPE *C, DATA_TYPE *C_outputFromGpu)
{
	DATA_TYPE *A_gpu;
	DATA_TYPE *B_gpu;
	DATA_TYPE *C_gpu;

	CUDA_SAFE_CALL(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NK));
	CUDA_SAFE_CALL(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NK * NJ));
	CUDA_SAFE_CALL(cudaMalloc((void **)&C_gpu, sizeof(DATA_TYPE) * NI * NJ));

	CUDA_SAFE_CALL(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NK, cudaMemcpyHostToDevice));
	CUDA_SAFE_CALL(cudaMemcpy(B_gpu, B, sizeof(DATA_TYPE) * NK * NJ, cudaMemcpyHostToDevice));
	CUDA_SAFE_CALL(cudaMemcpy(C_gpu, C, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));

	dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
	dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));

	gemm_kernel<<<grid, block>>>(A_gpu, B_gpu, C_gpu);
	CUDA_SAFE_CALL(cudaGetLastError());
	CUDA_SAFE_CALL(cudaDeviceSynchronize());

	CUDA_SAFE_CALL(cudaMemcpy(C_outputFromGpu, C_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

	CUDA_SAFE_CALL(cudaFree(A_gpu));
	CUDA_SAFE_CALL(cudaFree(B_gpu));
	CUDA_SAFE_CALL(cudaFree(C_gpu));
}


int main(void)
{
	DATA_TYPE *A;
	DATA_TYPE *B;
	DATA_TYPE *C;
	DATA_TYPE *C_outputFromGpu;
	double *C_ref;
	int fail;

	A = (DATA_TYPE *)malloc(NI * NK * sizeof(DATA_TYPE));
	B = (DATA_TYPE *)malloc(NK * NJ * sizeof(DATA_TYPE));
	C = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
	C_outputFromGpu = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
	C_ref = (double *)malloc(NI * NJ * sizeof(double));
	if (!A || !B || !C || !C_outputFromGpu || !C_ref)
	{
		printf("gemm: FAIL out of host memory\n");
		return 1;
	}

	printf("gemm: NI=%d NJ=%d NK=%d\n", NI, NJ, NK);
	init(A, B, C);
	gemmCuda(A, B, C, C_outputFromGpu);
	gemm_cpu(A, B, C, C_ref);

	fail = compareResults("c", C_ref, C_outputFromGpu, NI * NJ);
	if (!fail)
		printf("gemm: PASS\n");

	free(A);
	free(B);
	free(C);
	free(C_outputFromGpu);
	free(C_ref);

	return fail ? 1 : 0;
}
