// layernorm: LayerNorm forward over the last dimension of a rows x cols
// matrix, one thread per row; also stores each row's mean and 1/stddev,
// which the backward pass needs.
// Usage: ./layernorm [rows] [cols]
#include "../common/app_util.h"

/* kernelsmith:
 *   size timed: rows = 65536, cols = 1024
 *   size small: rows = 1000, cols = 64
 *   size odd:   rows = 333, cols = 37
 *   size one:   rows = 1, cols = 1
 *   scalar eps = 1e-5
 *   in  inp[rows * cols] uniform(-2, 3)
 *   in  weight[cols] uniform(0.5, 1.5)
 *   in  bias[cols] uniform(-0.5, 0.5)
 *   # sequential float sums over a row: the error grows with cols
 *   out out[rows * cols] tol(atol = 1e-4, rtol = 1e-4)
 *   out mean[rows] tol(atol = 1e-5, rtol = 1e-4)
 *   out rstd[rows] tol(atol = 1e-5, rtol = 1e-4)
 *   launch grid = ceil_div(rows, 128), block = 128
 */
__global__ void layernorm_forward_kernel(float* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, const float* __restrict__ inp,
                                         const float* __restrict__ weight,
                                         const float* __restrict__ bias, int rows, int cols,
                                         float eps) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;

    const float* x = inp + (size_t)row * cols;
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += x[c];
    float m = sum / cols;

    // Two-pass variance: E[(x-m)^2] does not cancel like E[x^2] - m^2 does.
    float var = 0.0f;
    for (int c = 0; c < cols; ++c) {
        float d = x[c] - m;
        var += d * d;
    }
    var /= cols;
    float s = 1.0f / sqrtf(var + eps);

    float* y = out + (size_t)row * cols;
    for (int c = 0; c < cols; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[row] = m;
    rstd[row] = s;
}

void launch_layernorm_forward(float* d_out, float* d_mean, float* d_rstd, const float* d_inp,
                              const float* d_weight, const float* d_bias, int rows, int cols,
                              float eps, cudaStream_t stream) {
    const int block_size = 128;
    const int grid_size = (rows + block_size - 1) / block_size;
    layernorm_forward_kernel<<<grid_size, block_size, 0, stream>>>(
        d_out, d_mean, d_rstd, d_inp, d_weight, d_bias, rows, cols, eps);
}

int main(int argc, char** argv) {
    const int rows = static_cast<int>(app::arg_size(argc, argv, 1, 65536, 1 << 24));
    const int cols = static_cast<int>(app::arg_size(argc, argv, 2, 1024, 1 << 20));
    const float eps = 1e-5f;
    const size_t count = size_t(rows) * cols;
    std::printf("layernorm: rows=%d cols=%d\n", rows, cols);

    std::vector<float> inp(count), weight(cols), bias(cols);
    app::fill_uniform(inp, -2.0f, 3.0f, 41);
    app::fill_uniform(weight, 0.5f, 1.5f, 42);
    app::fill_uniform(bias, -0.5f, 0.5f, 43);

    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreate(&stream));

    const size_t bytes = count * sizeof(float);
    float *d_inp, *d_out, *d_weight, *d_bias, *d_mean, *d_rstd;
    CUDA_CHECK(cudaMalloc(&d_inp, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMalloc(&d_weight, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_bias, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_mean, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_rstd, rows * sizeof(float)));
    CUDA_CHECK(cudaMemcpyAsync(d_inp, inp.data(), bytes, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(d_weight, weight.data(), cols * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaMemcpyAsync(d_bias, bias.data(), cols * sizeof(float), cudaMemcpyHostToDevice,
                               stream));

    launch_layernorm_forward(d_out, d_mean, d_rstd, d_inp, d_weight, d_bias, rows, cols, eps,
                             stream);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out_gpu(count), mean_gpu(rows), rstd_gpu(rows);
    CUDA_CHECK(cudaMemcpyAsync(out_gpu.data(), d_out, bytes, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(mean_gpu.data(), d_mean, rows * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(rstd_gpu.data(), d_rstd, rows * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));

    std::vector<double> out_ref(count), mean_ref(rows), rstd_ref(rows);
    for (int r = 0; r < rows; ++r) {
        const float* x = &inp[size_t(r) * cols];
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) sum += x[c];
        const double m = sum / cols;
        double var = 0.0;
        for (int c = 0; c < cols; ++c) var += (x[c] - m) * (x[c] - m);
        const double s = 1.0 / std::sqrt(var / cols + eps);
        for (int c = 0; c < cols; ++c)
            out_ref[size_t(r) * cols + c] = (x[c] - m) * s * weight[c] + bias[c];
        mean_ref[r] = m;
        rstd_ref[r] = s;
    }
    // Sequential float sums over a row: error grows with cols, hence 1e-4.
    const app::CompareResult check_out =
        app::compare("out", out_ref.data(), out_gpu.data(), count, 1e-4, 1e-4);
    const app::CompareResult check_mean =
        app::compare("mean", mean_ref.data(), mean_gpu.data(), rows, 1e-5, 1e-4);
    const app::CompareResult check_rstd =
        app::compare("rstd", rstd_ref.data(), rstd_gpu.data(), rows, 1e-5, 1e-4);

    const float ms = app::time_median_ms(stream, [&] {
        launch_layernorm_forward(d_out, d_mean, d_rstd, d_inp, d_weight, d_bias, rows, cols, eps,
                                 stream);
    });

    const int status = app::print_verdict("layernorm", {check_out, check_mean, check_rstd});
    app::print_timing("layernorm", "layernorm_forward_kernel", ms);
    for (float* p : {d_inp, d_out, d_weight, d_bias, d_mean, d_rstd}) CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return status;
}
