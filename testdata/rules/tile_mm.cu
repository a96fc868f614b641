// Matrix products for the tile_matmul rule (tests/test_rules_tile.c): a gemm
// with macro sizes and C89 loops that accumulates in a local set after its
// declaration, A * A^T in double accumulating straight into its output with
// the roles of x and y swapped and inclusive bounds, and A * B^T with leading
// dimensions as parameters; then a kernel the rule must leave alone, and A^T * B
// (both operands contiguous along the outputs' indices), and A * B read at an
// offset.

#define GM_NI 200
#define GM_NJ 150
#define GM_NK 77
#define GM_ALPHA 0.5f
#define GM_BETA 2.0f

// C = ALPHA * A * B + BETA * C; A is NI x NK, B NK x NJ, row-major.
/* kernelsmith:
 *   size timed: ni = 200, nj = 150, nk = 77
 *   in    a[ni * nk] uniform(-1, 1)
 *   in    b[nk * nj] uniform(-1, 1)
 *   inout c[ni * nj] uniform(-1, 1) tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(nj, 32), ceil_div(ni, 4)), block = dim3(32, 4)
 */
__global__ void gemm_macro_kernel(const float *a, const float *b, float *c)
{
	int i, j, k;
	float sum;

	j = blockIdx.x * blockDim.x + threadIdx.x;
	i = blockIdx.y * blockDim.y + threadIdx.y;
	if (i >= GM_NI || j >= GM_NJ)
		return;

	sum = 0.0f;
	for (k = 0; k <= GM_NK - 1; k += 1)
		sum += a[i * GM_NK + k] * b[k * GM_NJ + j];
	c[i * GM_NJ + j] = GM_ALPHA * sum + GM_BETA * c[i * GM_NJ + j];
}

// C = A * A^T (n x n from n x m), the row index along x.
/* kernelsmith:
 *   size timed: n = 1024, m = 512
 *   size small: n = 40, m = 24
 *   size odd:   n = 97, m = 33
 *   size one:   n = 1, m = 1
 *   in  a[n * m] uniform(-1, 1)
 *   out c[n * n] tol(atol = 1e-9, rtol = 1e-9)
 *   launch grid = dim3(ceil_div(n, 8), ceil_div(n, 8)), block = dim3(8, 8)
 */
__global__ void aat_kernel(const double *a, double *c, int n, int m)
{
	int row = blockIdx.x * blockDim.x + threadIdx.x;
	int col = blockIdx.y * blockDim.y + threadIdx.y;
	int t;

	if (row <= n - 1 && col <= n - 1) {
		c[row * n + col] = 0.0;
		for (t = 0; t < m; t++) {
			c[row * n + col] += a[row * m + t] * a[col * m + t];
		}
	}
}

// C = alpha * A * B^T: A is rows x depth (lda), B is cols x depth (ldb).
/* kernelsmith:
 *   size timed: rows = 1024, cols = 768, depth = 512
 *   size small: rows = 64, cols = 32, depth = 16
 *   size odd:   rows = 45, cols = 67, depth = 35
 *   size one:   rows = 1, cols = 1, depth = 1
 *   scalar lda = depth, ldb = depth + 3, ldc = cols, alpha = 1.5
 *   in  A[rows * lda] uniform(-1, 1)
 *   in  B[cols * ldb] uniform(-1, 1)
 *   out C[rows * ldc] tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(cols, 16), ceil_div(rows, 16)), block = dim3(16, 16)
 */
__global__ void gemm_nt_kernel(int rows, int cols, int depth, const float *A, int lda,
                               const float *B, int ldb, float *C, int ldc, float alpha)
{
	int r = blockIdx.y * blockDim.y + threadIdx.y;
	int q = blockIdx.x * blockDim.x + threadIdx.x;

	if (r < rows)
		if (q < cols) {
			float acc = 0.0f;
			for (int kk = 0; kk < depth; ++kk)
				acc = acc + A[r * lda + kk] * B[q * ldb + kk];
			C[r * ldc + q] = alpha * acc;
		}
}

// A row sum times a column: the loop reads one operand only.
/* kernelsmith:
 *   size timed: n = 512
 *   in  a[n * n] uniform(-1, 1)
 *   out c[n * n]
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void rowsum_kernel(const float *a, float *c, int n)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;
	int k;

	if (i < n && j < n) {
		for (k = 0; k < n; k++)
			s += a[i * n + k];
		c[i * n + j] = s * (float)j;
	}
}

// C = A^T * B + C: A is depth x rows (lda), B is depth x cols (ldb), both
// contiguous along the output's index (tile_matmul's float4 choices load
// them along rows and cols, with tails past a bound that is not a multiple
// of 4).
/* kernelsmith:
 *   size timed: rows = 1024, cols = 1024, depth = 512
 *   size odd:   rows = 37, cols = 70, depth = 19
 *   scalar lda = rows, ldb = cols
 *   in    A[depth * lda] uniform(-1, 1)
 *   in    B[depth * ldb] uniform(-1, 1)
 *   inout C[rows * cols] uniform(-1, 1) tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(cols, 16), ceil_div(rows, 16)), block = dim3(16, 16)
 */
__global__ void gemm_tn_kernel(int rows, int cols, int depth, const float *A, int lda,
                               const float *B, int ldb, float *C)
{
	int r = blockIdx.y * blockDim.y + threadIdx.y;
	int q = blockIdx.x * blockDim.x + threadIdx.x;

	if (r >= rows || q >= cols)
		return;
	for (int kk = 0; kk < depth; kk++)
		C[r * cols + q] += A[kk * lda + r] * B[kk * ldb + q];
}

// A * B with A read at an offset: the float4 choices refuse it (an index
// that is not `row * ld + k`), the others tile it.
/* kernelsmith:
 *   size timed: n = 256, off = 4
 *   in  A[n * n + off] uniform(-1, 1)
 *   in  B[n * n] uniform(-1, 1)
 *   out C[n * n] tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(n, 16), ceil_div(n, 16)), block = dim3(16, 16)
 */
__global__ void gemm_offset_kernel(const float *A, const float *B, float *C, int n, int off)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n && j < n) {
		float s = 0.0f;
		for (int k = 0; k < n; k++)
			s += A[i * n + k + off] * B[k * n + j];
		C[i * n + j] = s;
	}
}
