// softmax: row-wise softmax of a rows x cols row-major matrix, one thread
// per row (max pass, sum pass, normalize pass).
// Usage: ./softmax [rows] [cols]
#include "../common/app_util.h"

/* kernelsmith:
 *   size timed: rows = 65536, cols = 1024
 *   size small: rows = 1000, cols = 64
 *   size odd:   rows = 333, cols = 37
 *   size one:   rows = 1, cols = 1
 *   in  in[rows * cols] uniform(-8, 8)
 *   out out[rows * cols] tol(atol = 1e-8, rtol = 1e-4)   # the float row sum carries the error
 *   launch grid = ceil_div(rows, 256), block = 256
 */
__global__ void softmax_rows_kernel(float* out, const float* in, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;

    const float* x = in + (size_t)row * cols;
    float* y = out + (size_t)row * cols;

    // Subtracting the row max keeps expf from overflowing.
    float max_val = -INFINITY;
    for (int c = 0; c < cols; ++c) max_val = fmaxf(max_val, x[c]);

    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += expf(x[c] - max_val);

    float inv_sum = 1.0f / sum;
    for (int c = 0; c < cols; ++c) y[c] = expf(x[c] - max_val) * inv_sum;
}

void launch_softmax(float* d_out, const float* d_in, int rows, int cols) {
    dim3 block(256);
    dim3 grid((rows + block.x - 1) / block.x);
    softmax_rows_kernel<<<grid, block>>>(d_out, d_in, rows, cols);
}

int main(int argc, char** argv) {
    const int rows = static_cast<int>(app::arg_size(argc, argv, 1, 65536, 1 << 24));
    const int cols = static_cast<int>(app::arg_size(argc, argv, 2, 1024, 1 << 20));
    const size_t count = size_t(rows) * cols;
    std::printf("softmax: rows=%d cols=%d\n", rows, cols);

    std::vector<float> in(count);
    app::fill_uniform(in, -8.0f, 8.0f, 31);

    const size_t bytes = count * sizeof(float);
    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));

    launch_softmax(d_out, d_in, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out_gpu(count);
    CUDA_CHECK(cudaMemcpy(out_gpu.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    std::vector<double> out_ref(count);
    for (int r = 0; r < rows; ++r) {
        const float* x = &in[size_t(r) * cols];
        double* y = &out_ref[size_t(r) * cols];
        double max_val = x[0];
        for (int c = 1; c < cols; ++c) max_val = std::max(max_val, double(x[c]));
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += std::exp(x[c] - max_val);
        for (int c = 0; c < cols; ++c) y[c] = std::exp(x[c] - max_val) / sum;
    }
    // The float row sum carries most of the error (~cols * eps worst case).
    const app::CompareResult check =
        app::compare("out", out_ref.data(), out_gpu.data(), count, 1e-8, 1e-4);

    const float ms = app::time_median_ms(0, [&] { launch_softmax(d_out, d_in, rows, cols); });

    const int status = app::print_verdict("softmax", {check});
    app::print_timing("softmax", "softmax_rows_kernel", ms);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    return status;
}
