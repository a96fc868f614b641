// reduce_sum: sum of a float array. Each block reduces its slice in shared
// memory (interleaved addressing), then one atomicAdd per block folds the
// block partial into the result, so the whole sum is a single launch.
// Usage: ./reduce_sum [n]
#include "../common/app_util.h"

#include <climits>

/* kernelsmith:
 *   size timed: n = 1 << 26
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   # Float atomics fold the n / 256 block partials in an unspecified order, so
 *   # the rounding error grows with the magnitude summed: the tolerance is
 *   # relative, and the inputs lean positive (mean 0.25) so that the sum cannot
 *   # cancel to ~0 and make a relative tolerance meaningless.
 *   in    input[n] uniform(-0.5, 1)
 *   inout result[1] const(0) tol(atol = 1e-5, rtol = 2e-4)   # callers zero it
 *   launch grid = ceil_div(n, blockSize), block = blockSize
 */
template <unsigned int blockSize>
__global__ void reduce_sum_kernel(const float* input, float* result, int n) {
    __shared__ float partial[blockSize];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockSize + tid;
    partial[tid] = (i < (unsigned int)n) ? input[i] : 0.0f;
    __syncthreads();

    for (unsigned int s = 1; s < blockSize; s *= 2) {
        if (tid % (2 * s) == 0) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(result, partial[0]);
}

constexpr int kReduceBlock = 256;

// The caller zeroes *d_result: the kernel accumulates into it.
void launch_reduce_sum(const float* d_input, float* d_result, int n) {
    const int num_blocks = (n + kReduceBlock - 1) / kReduceBlock;
    reduce_sum_kernel<kReduceBlock><<<num_blocks, kReduceBlock>>>(d_input, d_result, n);
}

int main(int argc, char** argv) {
    const int n = static_cast<int>(app::arg_size(argc, argv, 1, size_t(1) << 26, INT_MAX - kReduceBlock));
    std::printf("reduce_sum: n=%d\n", n);

    std::vector<float> input(n);
    app::fill_uniform(input, -0.5f, 1.0f, 21);

    const size_t bytes = size_t(n) * sizeof(float);
    float *d_input, *d_result;
    CUDA_CHECK(cudaMalloc(&d_input, bytes));
    CUDA_CHECK(cudaMalloc(&d_result, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_input, input.data(), bytes, cudaMemcpyHostToDevice));

    CUDA_CHECK(cudaMemset(d_result, 0, sizeof(float)));
    launch_reduce_sum(d_input, d_result, n);
    CUDA_CHECK(cudaGetLastError());
    float sum_gpu = 0.0f;
    CUDA_CHECK(cudaMemcpy(&sum_gpu, d_result, sizeof(float), cudaMemcpyDeviceToHost));

    double sum_ref = 0.0, sum_abs = 0.0;
    for (int i = 0; i < n; ++i) {
        sum_ref += input[i];
        sum_abs += std::fabs(input[i]);
    }
    // The float atomics add ~n/256 block partials into a running total in an
    // unspecified order; the rounding error grows with the magnitude summed,
    // so the tolerance is relative to sum|x|, not to the (cancelling) sum.
    const app::CompareResult check =
        app::compare("sum", &sum_ref, &sum_gpu, 1, 1e-4 * sum_abs + 1e-6, 0.0);

    const float ms = app::time_median_ms(
        0, [&] { launch_reduce_sum(d_input, d_result, n); },
        [&] { CUDA_CHECK(cudaMemsetAsync(d_result, 0, sizeof(float), 0)); });

    const int status = app::print_verdict("reduce_sum", {check});
    app::print_timing("reduce_sum", "reduce_sum_kernel", ms);
    CUDA_CHECK(cudaFree(d_input));
    CUDA_CHECK(cudaFree(d_result));
    return status;
}
