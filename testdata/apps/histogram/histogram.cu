// histogram: 256-bin histogram of a byte array; every element does one
// atomicAdd on the global bins.
// Usage: ./histogram [n]
#include "../common/app_util.h"

#define NUM_BINS 256
#define BLOCK_SIZE 256

/* kernelsmith:
 *   size timed: n = 1 << 28
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   in    data[n] int(0, 255)
 *   inout bins[256] const(0)   # the kernel accumulates: callers zero the bins first
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void histogram_kernel(const unsigned char* data, unsigned int* bins, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1u);
}

// The caller zeroes d_bins: the kernel accumulates into them.
void launch_histogram(const unsigned char* d_data, unsigned int* d_bins, size_t n) {
    unsigned int num_blocks = (unsigned int)((n + BLOCK_SIZE - 1) / BLOCK_SIZE);
    histogram_kernel<<<num_blocks, BLOCK_SIZE>>>(d_data, d_bins, n);
}

int main(int argc, char** argv) {
    const size_t n = app::arg_size(argc, argv, 1, size_t(1) << 28, size_t(1) << 36);
    std::printf("histogram: n=%zu\n", n);

    // Skewed, not uniform: the sum of two uniform bytes (a triangle centred
    // on bin 127), like the value distribution of a natural image.
    std::vector<unsigned char> data(n);
    app::Rng rng(81);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = rng.next_u64();
        data[i] = static_cast<unsigned char>(((r & 0xff) + ((r >> 8) & 0xff)) / 2);
    }

    const size_t bins_bytes = NUM_BINS * sizeof(unsigned int);
    unsigned char* d_data;
    unsigned int* d_bins;
    CUDA_CHECK(cudaMalloc(&d_data, n));
    CUDA_CHECK(cudaMalloc(&d_bins, bins_bytes));
    CUDA_CHECK(cudaMemcpy(d_data, data.data(), n, cudaMemcpyHostToDevice));

    CUDA_CHECK(cudaMemset(d_bins, 0, bins_bytes));
    launch_histogram(d_data, d_bins, n);
    CUDA_CHECK(cudaGetLastError());
    std::vector<unsigned int> bins_gpu(NUM_BINS);
    CUDA_CHECK(cudaMemcpy(bins_gpu.data(), d_bins, bins_bytes, cudaMemcpyDeviceToHost));

    // 64-bit reference counts: a GPU bin that wrapped past 2^32 would show
    // up as a mismatch instead of silently agreeing.
    std::vector<uint64_t> bins_ref(NUM_BINS, 0);
    for (size_t i = 0; i < n; ++i) ++bins_ref[data[i]];
    const app::CompareResult check =
        app::compare("bins", bins_ref.data(), bins_gpu.data(), NUM_BINS, 0.0, 0.0);

    const float ms = app::time_median_ms(
        0, [&] { launch_histogram(d_data, d_bins, n); },
        [&] { CUDA_CHECK(cudaMemsetAsync(d_bins, 0, bins_bytes, 0)); });

    const int status = app::print_verdict("histogram", {check});
    app::print_timing("histogram", "histogram_kernel", ms);
    CUDA_CHECK(cudaFree(d_data));
    CUDA_CHECK(cudaFree(d_bins));
    return status;
}
