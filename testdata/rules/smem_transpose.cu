// Transposes for the smem_transpose rule (tests/test_rules_smem.c): a
// template with arithmetic on the value, locals and an early return, and a
// copy the rule must leave alone.

// out = in^T * scale + 1, doubles, with the index of the read in a local.
/* kernelsmith:
 *   size timed: rows = 4096, cols = 2048
 *   size small: rows = 64, cols = 48
 *   size odd:   rows = 1000, cols = 37
 *   size one:   rows = 1, cols = 1
 *   scalar scale = 2
 *   instance double
 *   in  in[rows * cols] uniform(-100, 100)
 *   out out[rows * cols]
 *   launch grid = dim3(ceil_div(cols, 16), ceil_div(rows, 16)), block = dim3(16, 16)
 */
template <typename T>
__global__ void transpose_scale_kernel(T *out, const T *in, int rows, int cols, T scale) {
    const int x = threadIdx.x + blockDim.x * blockIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= cols || y >= rows)
        return;
    size_t src = (size_t)y * cols + x;
    T v = in[src] * scale;
    out[(size_t)x * rows + y] = v + (T)1;
}

// A copy: the write is contiguous along x too; nothing to gain.
/* kernelsmith:
 *   size timed: rows = 2048, cols = 2048
 *   size one:   rows = 1, cols = 1
 *   in  in[rows * cols]
 *   out out[rows * cols]
 *   launch grid = dim3(ceil_div(cols, 32), ceil_div(rows, 8)), block = dim3(32, 8)
 */
__global__ void copy2d_kernel(float *out, const float *in, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[(size_t)row * cols + col] = in[(size_t)row * cols + col];
}
