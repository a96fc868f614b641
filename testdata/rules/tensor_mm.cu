// Matrix products for the tile_mma rule (tests/tile_mma.sh): the tensor-core
// rewrite of tile_matmul's pattern. Two __half products in two styles (a tidy
// one with restrict pointers and scalar sizes; an old-style one with macro
// sizes, a typedef'd element type, a C89 loop, no spec and a sum straight
// into global memory), a bfloat16 A * B^T, a float product whose spec allows
// TF32, one whose default tolerance does not and one with no spec; then
// kernels the rule must leave alone: products rounded to __half, a __half
// accumulator, double and integer operands, a scaled product.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// C = alpha * A * B + beta * C; A is M x K, B K x N, __half, C float.
// Products of halves are exact in float: a variant only reorders the sums.
/* kernelsmith:
 *   size timed: M = 2048, N = 2048, K = 2048
 *   size small: M = 128, N = 96, K = 64
 *   size odd:   M = 100, N = 37, K = 53
 *   size one:   M = 1, N = 1, K = 1
 *   scalar alpha = 1.25, beta = 0.75
 *   in    A[M * K] uniform(-1, 1)
 *   in    B[K * N] uniform(-1, 1)
 *   inout C[M * N] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-4)   # float sums of K terms
 *   flops 2 * M * N * K
 */
__global__ void hgemm_tidy_kernel(int M, int N, int K, float alpha,
                                  const __half *__restrict__ A,
                                  const __half *__restrict__ B, float beta,
                                  float *__restrict__ C) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

void launch_hgemm_tidy(int M, int N, int K, float alpha, const __half *A, const __half *B,
                       float beta, float *C) {
    hgemm_tidy_kernel<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(M, N, K, alpha, A, B,
                                                                         beta, C);
}

/* The same in PolyBench's style: no spec, sizes in macros, the element
 * type a typedef, C89 declarations, C scaled and then summed into. */
#define NI 200
#define NJ 150
#define NK 77
#define BETA 0.5f

typedef __half DATA_TYPE;

__global__ void hgemm_old_kernel(DATA_TYPE *A, DATA_TYPE *B, float *C)
{
	int i, j, k;

	j = blockIdx.x * blockDim.x + threadIdx.x;
	i = blockIdx.y * blockDim.y + threadIdx.y;

	if ((i < NI) && (j < NJ))
	{
		C[i * NJ + j] *= BETA;
		for (k = 0; k < NK; k++)
		{
			C[i * NJ + j] += (float)A[i * NK + k] * (float)B[k * NJ + j];
		}
	}
}

void hgemm_old(DATA_TYPE *A, DATA_TYPE *B, float *C)
{
	dim3 block(32, 8);
	dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));
	hgemm_old_kernel<<<grid, block>>>(A, B, C);
}

// C = A * B^T in bfloat16 with leading dimensions: A is rows x depth (lda),
// B cols x depth (ldb); `acc = acc + ...` and the bounds in nested ifs.
/* kernelsmith:
 *   size timed: rows = 1024, cols = 768, depth = 512
 *   size small: rows = 64, cols = 32, depth = 16
 *   size odd:   rows = 45, cols = 67, depth = 35
 *   size one:   rows = 1, cols = 1, depth = 1
 *   scalar lda = depth, ldb = depth + 3, ldc = cols
 *   in  A[rows * lda] uniform(-1, 1)
 *   in  B[cols * ldb] uniform(-1, 1)
 *   out C[rows * ldc] tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(cols, 16), ceil_div(rows, 16)), block = dim3(16, 16)
 */
__global__ void bgemm_nt_kernel(int rows, int cols, int depth, const __nv_bfloat16 *A, int lda,
                                const __nv_bfloat16 *B, int ldb, float *C, int ldc)
{
	int r = blockIdx.y * blockDim.y + threadIdx.y;
	int q = blockIdx.x * blockDim.x + threadIdx.x;

	if (r < rows)
		if (q < cols) {
			float acc = 0.0f;
			for (int kk = 0; kk < depth; ++kk)
				acc = acc + __bfloat162float(A[r * lda + kk]) * __bfloat162float(B[q * ldb + kk]);
			C[r * ldc + q] = acc;
		}
}

void bgemm_nt(int rows, int cols, int depth, const __nv_bfloat16 *A, int lda,
              const __nv_bfloat16 *B, int ldb, float *C, int ldc)
{
	bgemm_nt_kernel<<<dim3((cols + 15) / 16, (rows + 15) / 16), dim3(16, 16)>>>(rows, cols, depth, A, lda, B, ldb, C, ldc);
}

// C = A^T * B in float (A is K x M), with a tolerance that allows TF32: its
// inputs rounded to 10 mantissa bits (2^-11 each) put the products within
// about 2^-10 of the exact ones, and the sums' errors, random in sign, grow
// like sqrt(K): rtol 1e-2, and an atol for the sums that cancel near zero.
/* kernelsmith:
 *   size timed: M = 2048, N = 2048, K = 2048
 *   size small: M = 128, N = 96, K = 64
 *   size odd:   M = 100, N = 37, K = 53
 *   size one:   M = 1, N = 1, K = 1
 *   in  A[K * M] uniform(-1, 1)
 *   in  B[K * N] uniform(-1, 1)
 *   out C[M * N]
 *   tolerance atol = 5e-2, rtol = 1e-2
 *   flops 2 * M * N * K
 */
__global__ void sgemm_tn_loose_kernel(int M, int N, int K, const float *__restrict__ A,
                                      const float *__restrict__ B, float *__restrict__ C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) sum += A[k * M + row] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

void sgemm_tn_loose(int M, int N, int K, const float *A, const float *B, float *C) {
    sgemm_tn_loose_kernel<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(M, N, K, A, B, C);
}

// The same product with float's default tolerance (rtol 1e-4): no TF32.
/* kernelsmith:
 *   size timed: M = 1024, N = 1024, K = 1024
 *   size odd:   M = 100, N = 37, K = 53
 *   in  A[M * K] uniform(-1, 1)
 *   in  B[K * N] uniform(-1, 1)
 *   out C[M * N]
 */
__global__ void sgemm_strict_kernel(int M, int N, int K, const float *__restrict__ A,
                                    const float *__restrict__ B, float *__restrict__ C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++) sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

void sgemm_strict(int M, int N, int K, const float *A, const float *B, float *C) {
    sgemm_strict_kernel<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(M, N, K, A, B, C);
}

// The same again with no spec (its launch site alone): no tolerance was
// given, so no TF32 either.
__global__ void sgemm_nospec_kernel(const float *A, const float *B, float *C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float sum = 0.0f;
        for (int k = 0; k < n; k++) sum += A[row * n + k] * B[k * n + col];
        C[row * n + col] = sum;
    }
}

void sgemm_nospec(const float *A, const float *B, float *C, int n) {
    sgemm_nospec_kernel<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, n);
}

// __half * __half is cuda_fp16's operator: each product rounded to __half
// before the float sum, which the tensor cores' exact products would not
// reproduce.
/* kernelsmith:
 *   size timed: n = 512
 *   in  A[n * n] uniform(-1, 1)
 *   in  B[n * n] uniform(-1, 1)
 *   out C[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void hgemm_halfprod_kernel(const __half *A, const __half *B, float *C, int n) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; k++) acc += __half2float(A[i * n + k] * B[k * n + j]);
        C[i * n + j] = acc;
    }
}

// A __half accumulator.
/* kernelsmith:
 *   size timed: n = 512
 *   in  A[n * n] uniform(-1, 1)
 *   in  B[n * n] uniform(-1, 1)
 *   out C[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void hgemm_halfacc_kernel(const __half *A, const __half *B, __half *C, int n) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        __half acc = __float2half(0.0f);
        for (int k = 0; k < n; k++) acc += A[i * n + k] * B[k * n + j];
        C[i * n + j] = acc;
    }
}

// double operands.
/* kernelsmith:
 *   size timed: n = 512
 *   in  A[n * n] uniform(-1, 1)
 *   in  B[n * n] uniform(-1, 1)
 *   out C[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void dgemm_kernel(const double *A, const double *B, double *C, int n) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        double acc = 0.0;
        for (int k = 0; k < n; k++) acc += A[i * n + k] * B[k * n + j];
        C[i * n + j] = acc;
    }
}

// integer operands.
/* kernelsmith:
 *   size timed: n = 512
 *   in  A[n * n] int(-100, 100)
 *   in  B[n * n] int(-100, 100)
 *   out C[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void igemm_kernel(const int *A, const int *B, int *C, int n) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        int acc = 0;
        for (int k = 0; k < n; k++) acc += A[i * n + k] * B[k * n + j];
        C[i * n + j] = acc;
    }
}

// alpha inside the sum: each term is rounded after the scaling, which a
// sum of exact products scaled once would not reproduce.
/* kernelsmith:
 *   size timed: n = 512
 *   scalar alpha = 1.5
 *   in  A[n * n] uniform(-1, 1)
 *   in  B[n * n] uniform(-1, 1)
 *   out C[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void hgemm_scaled_kernel(const __half *A, const __half *B, float *C, int n, float alpha) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && j < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; k++) acc += alpha * __half2float(A[i * n + k]) * __half2float(B[k * n + j]);
        C[i * n + j] = acc;
    }
}
