// saxpy: y = a*x + y over a float vector, one element per thread.
// Usage: ./saxpy [n]
#include "../common/app_util.h"

#include <climits>

/* kernelsmith:
 *   size timed: n = 1 << 26
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   scalar a = 2.5
 *   in    x[n] uniform(-1, 1)
 *   inout y[n] uniform(-1, 1) tol(atol = 1e-6, rtol = 1e-6)   # one rounding per element
 *   flops 2 * n
 */
__global__ void saxpy_kernel(int n, float a, float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

void launch_saxpy(int n, float a, float* d_x, float* d_y) {
    saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, d_x, d_y);
}

int main(int argc, char** argv) {
    const int n = static_cast<int>(app::arg_size(argc, argv, 1, size_t(1) << 26, INT_MAX - 255));
    const float a = 2.5f;
    std::printf("saxpy: n=%d\n", n);

    std::vector<float> x(n), y(n);
    app::fill_uniform(x, -1.0f, 1.0f, 1);
    app::fill_uniform(y, -1.0f, 1.0f, 2);

    const size_t bytes = size_t(n) * sizeof(float);
    float *d_x, *d_y, *d_y_init;
    CUDA_CHECK(cudaMalloc(&d_x, bytes));
    CUDA_CHECK(cudaMalloc(&d_y, bytes));
    CUDA_CHECK(cudaMalloc(&d_y_init, bytes));  // pristine y: saxpy overwrites its input
    CUDA_CHECK(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y_init, y.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, d_y_init, bytes, cudaMemcpyDeviceToDevice));

    launch_saxpy(n, a, d_x, d_y);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> y_gpu(n);
    CUDA_CHECK(cudaMemcpy(y_gpu.data(), d_y, bytes, cudaMemcpyDeviceToHost));

    std::vector<double> y_ref(n);
    for (int i = 0; i < n; ++i) y_ref[i] = double(a) * x[i] + y[i];
    // One rounding (two without FMA contraction) per element.
    const app::CompareResult check = app::compare("y", y_ref.data(), y_gpu.data(), n, 1e-6, 1e-6);

    const float ms = app::time_median_ms(
        0, [&] { launch_saxpy(n, a, d_x, d_y); },
        [&] { CUDA_CHECK(cudaMemcpyAsync(d_y, d_y_init, bytes, cudaMemcpyDeviceToDevice, 0)); });

    const int status = app::print_verdict("saxpy", {check});
    app::print_timing("saxpy", "saxpy_kernel", ms);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_y_init));
    return status;
}
