// transpose: out = in^T for a rows x cols row-major float matrix, one element
// per thread. Reads are coalesced along a row of `in`; the writes stride by
// `rows` floats, so every thread of a warp writes a different cache line.
// Usage: ./transpose [rows] [cols]   (one argument: square matrix)
#include "../common/app_util.h"

// kernelsmith:
//   size timed: rows = 8192, cols = 8192
//   size small: rows = 64, cols = 48
//   size odd:   rows = 1000, cols = 37
//   size one:   rows = 1, cols = 1
//   in  in[rows * cols] uniform(-100, 100)
//   out out[rows * cols] tol(atol = 0, rtol = 0)   # pure data movement: bit-exact
//   launch grid = dim3(ceil_div(cols, 32), ceil_div(rows, 8)), block = dim3(32, 8)
__global__ void transpose_naive_kernel(float* out, const float* in, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[(size_t)col * rows + row] = in[(size_t)row * cols + col];
}

void launch_transpose(float* d_out, const float* d_in, int rows, int cols) {
    dim3 block(32, 8);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_naive_kernel<<<grid, block>>>(d_out, d_in, rows, cols);
}

int main(int argc, char** argv) {
    // rows bounds grid.y (at most 65535 blocks of 8 rows).
    const int rows = static_cast<int>(app::arg_size(argc, argv, 1, 8192, 65535 * 8));
    const int cols = static_cast<int>(app::arg_size(argc, argv, 2, size_t(rows), 1 << 24));
    const size_t count = size_t(rows) * cols;
    std::printf("transpose: rows=%d cols=%d\n", rows, cols);

    std::vector<float> in(count);
    app::fill_uniform(in, -100.0f, 100.0f, 51);

    const size_t bytes = count * sizeof(float);
    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));

    launch_transpose(d_out, d_in, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out_gpu(count);
    CUDA_CHECK(cudaMemcpy(out_gpu.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    std::vector<float> out_ref(count);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out_ref[size_t(c) * rows + r] = in[size_t(r) * cols + c];
    // Pure data movement: must be bit-exact.
    const app::CompareResult check =
        app::compare("out", out_ref.data(), out_gpu.data(), count, 0.0, 0.0);

    const float ms = app::time_median_ms(0, [&] { launch_transpose(d_out, d_in, rows, cols); });

    const int status = app::print_verdict("transpose", {check});
    app::print_timing("transpose", "transpose_naive_kernel", ms);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    return status;
}
