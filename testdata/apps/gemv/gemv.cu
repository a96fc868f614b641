// gemv: y = A*x with A a rows x cols row-major matrix, one thread per row.
// Each thread walks its own row, so the 32 loads of a warp hit 32 different
// rows (cache lines) at every step.
// Usage: ./gemv [rows] [cols]
#include "../common/app_util.h"

/* kernelsmith:
 *   size timed: rows = 32768, cols = 2048
 *   size small: rows = 1000, cols = 64
 *   size odd:   rows = 1000, cols = 37
 *   size one:   rows = 1, cols = 1
 *   in  A[rows * cols] uniform(-1, 1)
 *   in  x[cols] uniform(-1, 1)
 *   out y[rows] tol(atol = 1e-3, rtol = 1e-4)   # sequential float dot products of cols terms
 *   launch grid = ceil_div(rows, 128), block = 128
 *   flops 2 * rows * cols
 */
template <typename T>
__global__ void gemv_kernel(const T* A, const T* x, T* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        T sum = 0;
        for (int c = 0; c < cols; ++c) sum += A[(size_t)row * cols + c] * x[c];
        y[row] = sum;
    }
}

void launch_gemv(const float* d_A, const float* d_x, float* d_y, int rows, int cols) {
    int threads = 128;
    int blocks = (rows + threads - 1) / threads;
    gemv_kernel<float><<<blocks, threads>>>(d_A, d_x, d_y, rows, cols);
}

int main(int argc, char** argv) {
    const int rows = static_cast<int>(app::arg_size(argc, argv, 1, 32768, 1 << 28));
    const int cols = static_cast<int>(app::arg_size(argc, argv, 2, 2048, 1 << 28));
    const size_t count = size_t(rows) * cols;
    std::printf("gemv: rows=%d cols=%d\n", rows, cols);

    std::vector<float> A(count), x(cols);
    app::fill_uniform(A, -1.0f, 1.0f, 111);
    app::fill_uniform(x, -1.0f, 1.0f, 112);

    float *d_A, *d_x, *d_y;
    CUDA_CHECK(cudaMalloc(&d_A, count * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_x, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, rows * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_A, A.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x, x.data(), cols * sizeof(float), cudaMemcpyHostToDevice));

    launch_gemv(d_A, d_x, d_y, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> y_gpu(rows);
    CUDA_CHECK(cudaMemcpy(y_gpu.data(), d_y, rows * sizeof(float), cudaMemcpyDeviceToHost));

    std::vector<double> y_ref(rows);
    for (int r = 0; r < rows; ++r) {
        double dot = 0.0;
        for (int c = 0; c < cols; ++c) dot += double(A[size_t(r) * cols + c]) * x[c];
        y_ref[r] = dot;
    }
    // Sequential float dot products of `cols` terms of magnitude <= 1.
    const app::CompareResult check =
        app::compare("y", y_ref.data(), y_gpu.data(), rows, 1e-3, 1e-4);

    const float ms = app::time_median_ms(0, [&] { launch_gemv(d_A, d_x, d_y, rows, cols); });

    const int status = app::print_verdict("gemv", {check});
    app::print_timing("gemv", "gemv_kernel", ms);
    CUDA_CHECK(cudaFree(d_A));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    return status;
}
