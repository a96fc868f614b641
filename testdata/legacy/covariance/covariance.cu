/**
 * covariance.cu: sample covariance matrix of M variables observed N times,
 * single precision. data is N x M row-major (one observation per row).
 *
 * Three kernels, launched one after the other from covarianceCuda:
 *   mean_kernel:   mean[j] = sum over i of data[i][j] / N, one thread per
 *                  column (1-D), summed straight into mean[] in global memory;
 *   reduce_kernel: data[i][j] -= mean[j], one thread per element (2-D);
 *   covar_kernel:  symmat[j1][j2] = sum over i of data[i][j1] * data[i][j2]
 *                  / (N - 1) for j2 >= j1, mirrored into symmat[j2][j1];
 *                  one thread per column j1 (1-D), triangular work.
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

/* Problem size */
#define M 500
#define N 600
#define M_BOUND (M)
#define N_BOUND (N)

/* Thread block dimensions for kernel 1 */
#define DIM_THREAD_BLOCK_KERNEL_1_X 256
#define DIM_THREAD_BLOCK_KERNEL_1_Y 1

/* Thread block dimensions for kernel 2 */
#define DIM_THREAD_BLOCK_KERNEL_2_X 32
#define DIM_THREAD_BLOCK_KERNEL_2_Y 8

/* Thread block dimensions for kernel 3 */
#define DIM_THREAD_BLOCK_KERNEL_3_X 256
#define DIM_THREAD_BLOCK_KERNEL_3_Y 1

#define FLOAT_N 600.0f

typedef float DATA_TYPE;

/*
 * The centred data lie in [-0.5, 0.5]: a float sum of N products is within
 * (N + 1) * 2^-24 * sum|products| (sum|products| is about 50 at most here)
 * of the exact value in any order, so symmat is within 3e-6 of the double
 * reference after the division by N - 1. The float mean and centring add
 * far less. Off-diagonal entries are about 3e-3 and diagonal ones 0.083,
 * so ATOL 1e-5 and RTOL 1e-4 still catch any wrong or missing term.
 */
#define ATOL 1e-5
#define RTOL 1e-4

#define CUDA_SAFE_CALL(call)                                                  \
	{                                                                         \
		cudaError_t err = call;                                               \
		if (cudaSuccess != err) {                                             \
			fprintf(stderr, "Cuda error in file '%s' in line %i : %s.\n",     \
				__FILE__, __LINE__, cudaGetErrorString(err));                 \
			printf("covariance: FAIL cuda %s\n", cudaGetErrorString(err));    \
			exit(1);                                                          \
		}                                                                     \
	}


/* The classic rand() recurrence, written out so that every libc agrees. */
static unsigned long next = 1;

static DATA_TYPE my_rand(void)
{
	next = next * 1103515245 + 12345;
	return (DATA_TYPE)((unsigned)(next / 65536) % 32768) / 32768.0f;
}


void init_arrays(DATA_TYPE *data)
{
	int i, j;

	for (i = 0; i < N; i++)
	{
		for (j = 0; j < M; j++)
		{
			data[i * M + j] = my_rand();
		}
	}
}


/* The same three steps in double. */
void covariance_cpu(DATA_TYPE *data_in, double *symmat)
{
	int i, j, j1, j2;
	double *mean = (double *)malloc(M * sizeof(double));
	double *col = (double *)malloc((size_t)M * N * sizeof(double));  /* centred data, one column per row */
	double s;

	for (j = 0; j < M; j++)
	{
		mean[j] = 0.0;
		for (i = 0; i < N; i++)
			mean[j] += data_in[i * M + j];
		mean[j] /= FLOAT_N;
	}

	for (i = 0; i < N; i++)
		for (j = 0; j < M; j++)
			col[j * N + i] = data_in[i * M + j] - mean[j];

	for (j1 = 0; j1 < M; j1++)
	{
		for (j2 = j1; j2 < M; j2++)
		{
			s = 0.0;
			for (i = 0; i < N; i++)
				s += col[j1 * N + i] * col[j2 * N + i];
			s /= (FLOAT_N - 1.0f);
			symmat[j1 * M + j2] = s;
			symmat[j2 * M + j1] = s;
		}
	}

	free(mean);
	free(col);
}


int compareResults(const char *what, double *ref, DATA_TYPE *got, int n)
{
	int i, first = -1, fail = 0;

	for (i = 0; i < n; i++)
	{
		if (!(fabs((double)got[i] - ref[i]) <= ATOL + RTOL * fabs(ref[i])))
		{
			if (first < 0)
				first = i;
			fail++;
		}
	}
	if (fail)
		printf("covariance: FAIL %s[%d] expected %.9g got %.9g (%d mismatches)\n",
			what, first, ref[first], (double)got[first], fail);
	return fail;
}


__global__ void mean_kernel(DATA_TYPE *mean, DATA_TYPE *data, DATA_TYPE float_n)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if (j < M_BOUND)
	{
		mean[j] = 0.0;

		int i;
		for (i = 0; i < N_BOUND; i++)
		{
			mean[j] += data[i * M + j];
		}
		mean[j] /= float_n;
	}
}


__global__ void reduce_kernel(DATA_TYPE *mean, DATA_TYPE *data)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;

	if ((i < N_BOUND) && (j < M_BOUND))
	{
		data[i * M + j] -= mean[j];
	}
}


__global__ void covar_kernel(DATA_TYPE *symmat, DATA_TYPE *data, DATA_TYPE float_n)
{
	int j1 = blockIdx.x * blockDim.x + threadIdx.x;
	int i, j2;

	if (j1 < M_BOUND)
	{
		for (j2 = j1; j2 <= M_BOUND - 1; j2++)
		{
			symmat[j1 * M + j2] = 0.0;
			for (i = 0; i < N_BOUND; i++)
			{
				symmat[j1 * M + j2] += data[i * M + j1] * data[i * M + j2];
			}
			symmat[j1 * M + j2] /= (float_n - 1.0f);
			symmat[j2 * M + j1] = symmat[j1 * M + j2];
		}
	}
}


void covarianceCuda(DATA_TYPE *data, DATA_TYPE *symmat_outputFromGpu)
{
	DATA_TYPE *data_gpu;
	DATA_TYPE *mean_gpu;
	DATA_TYPE *symmat_gpu;

	CUDA_SAFE_CALL(cudaMalloc((void **)&data_gpu, sizeof(DATA_TYPE) * M * N));
	CUDA_SAFE_CALL(cudaMalloc((void **)&symmat_gpu, sizeof(DATA_TYPE) * M * M));
	CUDA_SAFE_CALL(cudaMalloc((void **)&mean_gpu, sizeof(DATA_TYPE) * M));
	CUDA_SAFE_CALL(cudaMemcpy(data_gpu, data, sizeof(DATA_TYPE) * M * N, cudaMemcpyHostToDevice));

	dim3 block1(DIM_THREAD_BLOCK_KERNEL_1_X, DIM_THREAD_BLOCK_KERNEL_1_Y);
	dim3 grid1((size_t)(ceil((float)M) / ((float)DIM_THREAD_BLOCK_KERNEL_1_X)) + 1, 1);

	dim3 block2(DIM_THREAD_BLOCK_KERNEL_2_X, DIM_THREAD_BLOCK_KERNEL_2_Y);
	dim3 grid2((size_t)ceil(((float)M) / ((float)block2.x)), (size_t)ceil(((float)N) / ((float)block2.y)));

	dim3 block3(DIM_THREAD_BLOCK_KERNEL_3_X, DIM_THREAD_BLOCK_KERNEL_3_Y);
	dim3 grid3((size_t)(ceil((float)M / ((float)DIM_THREAD_BLOCK_KERNEL_3_X))), 1);

	mean_kernel<<<grid1, block1>>>(mean_gpu, data_gpu, FLOAT_N);
	CUDA_SAFE_CALL(cudaGetLastError());
	reduce_kernel<<<grid2, block2>>>(mean_gpu, data_gpu);
	CUDA_SAFE_CALL(cudaGetLastError());
	covar_kernel<<<grid3, block3>>>(symmat_gpu, data_gpu, FLOAT_N);
	CUDA_SAFE_CALL(cudaGetLastError());
	CUDA_SAFE_CALL(cudaDeviceSynchronize());

	CUDA_SAFE_CALL(cudaMemcpy(symmat_outputFromGpu, symmat_gpu, sizeof(DATA_TYPE) * M * M, cudaMemcpyDeviceToHost));

	CUDA_SAFE_CALL(cudaFree(data_gpu));
	CUDA_SAFE_CALL(cudaFree(symmat_gpu));
	CUDA_SAFE_CALL(cudaFree(mean_gpu));
}


int main()
{
	DATA_TYPE *data;
	DATA_TYPE *symmat_outputFromGpu;
	double *symmat;
	int fail;

	data = (DATA_TYPE *)malloc(M * N * sizeof(DATA_TYPE));
	symmat_outputFromGpu = (DATA_TYPE *)malloc(M * M * sizeof(DATA_TYPE));
	symmat = (double *)malloc(M * M * sizeof(double));
	if (!data || !symmat_outputFromGpu || !symmat)
	{
		printf("covariance: FAIL out of host memory\n");
		return 1;
	}

	printf("covariance: M=%d N=%d\n", M, N);
	init_arrays(data);
	covarianceCuda(data, symmat_outputFromGpu);
	covariance_cpu(data, symmat);

	fail = compareResults("symmat", symmat, symmat_outputFromGpu, M * M);
	if (!fail)
		printf("covariance: PASS\n");

	free(data);
	free(symmat_outputFromGpu);
	free(symmat);
	return fail ? 1 : 0;
}
