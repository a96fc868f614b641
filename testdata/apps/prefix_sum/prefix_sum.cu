// prefix_sum: inclusive scan of an int array in three launches:
//   1. scan_blocks_kernel      - each block scans its chunk (Hillis-Steele in
//                                shared memory) and writes the chunk total;
//   2. scan_block_sums_kernel  - one block scans the chunk totals, chunk by
//                                chunk, carrying the running sum;
//   3. add_block_offsets_kernel - adds the total of all earlier chunks to
//                                every element of a chunk.
// Usage: ./prefix_sum [n]
#include "../common/app_util.h"

#include <climits>

#define SCAN_BLOCK 512
#define SUMS_BLOCK 1024

// Hillis-Steele inclusive scan of buf[0 .. blockDim.x). Each step reads
// before the barrier and writes after it, so no thread reads a value that
// was already updated in the same step.
__device__ void block_inclusive_scan(int* buf) {
    int tid = threadIdx.x;
    for (int offset = 1; offset < (int)blockDim.x; offset *= 2) {
        int addend = (tid >= offset) ? buf[tid - offset] : 0;
        __syncthreads();
        buf[tid] += addend;
        __syncthreads();
    }
}

/* kernelsmith:
 *   size timed: n = 1 << 26
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   in  in[n] int(-3, 7)
 *   out out[n]
 *   out block_sums[ceil_div(n, 512)]   # one chunk total per block
 *   launch grid = ceil_div(n, 512), block = 512, smem = 512 * sizeof(int)
 */
__global__ void scan_blocks_kernel(const int* in, int* out, int* block_sums, int n) {
    extern __shared__ int buf[];  // blockDim.x ints
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    buf[tid] = (i < n) ? in[i] : 0;  // zero padding leaves the chunk total unchanged
    __syncthreads();
    block_inclusive_scan(buf);
    if (i < n) out[i] = buf[tid];
    if (tid == blockDim.x - 1) block_sums[blockIdx.x] = buf[tid];
}

/* kernelsmith:
 *   size timed: num_blocks = 131072   # the chunk totals of n = 1 << 26
 *   size small: num_blocks = 1000
 *   size odd:   num_blocks = 12345
 *   size one:   num_blocks = 1
 *   inout block_sums[num_blocks] int(-1536, 3584)   # totals of 512 values in -3..7
 */
__global__ void scan_block_sums_kernel(int* block_sums, int num_blocks) {
    extern __shared__ int buf[];  // blockDim.x ints
    int tid = threadIdx.x;
    int carry = 0;
    for (int base = 0; base < num_blocks; base += blockDim.x) {
        int i = base + tid;
        buf[tid] = (i < num_blocks) ? block_sums[i] : 0;
        __syncthreads();
        block_inclusive_scan(buf);
        if (i < num_blocks) block_sums[i] = buf[tid] + carry;
        carry += buf[blockDim.x - 1];
        __syncthreads();  // everyone has read buf before the next chunk overwrites it
    }
}

/* kernelsmith:
 *   size timed: n = 1 << 26
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   inout out[n] int(-1000, 1000)
 *   in    scanned_block_sums[ceil_div(n, 512)] int(-100000, 100000)
 *   # block b adds the total of chunks 0 .. b-1: the chunk is the 512-thread block
 *   launch grid = ceil_div(n, 512), block = 512
 */
__global__ void add_block_offsets_kernel(int* out, const int* scanned_block_sums, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x > 0 && i < n) out[i] += scanned_block_sums[blockIdx.x - 1];
}

void launch_scan_blocks(const int* d_in, int* d_out, int* d_block_sums, int n, int num_blocks) {
    scan_blocks_kernel<<<num_blocks, SCAN_BLOCK, SCAN_BLOCK * sizeof(int)>>>(d_in, d_out,
                                                                             d_block_sums, n);
}

void launch_scan_block_sums(int* d_block_sums, int num_blocks) {
    scan_block_sums_kernel<<<1, SUMS_BLOCK, SUMS_BLOCK * sizeof(int)>>>(d_block_sums, num_blocks);
}

void launch_add_block_offsets(int* d_out, const int* d_block_sums, int n, int num_blocks) {
    add_block_offsets_kernel<<<num_blocks, SCAN_BLOCK>>>(d_out, d_block_sums, n);
}

// d_block_sums holds (n + SCAN_BLOCK - 1) / SCAN_BLOCK ints of scratch.
void inclusive_scan(const int* d_in, int* d_out, int* d_block_sums, int n) {
    const int num_blocks = (n + SCAN_BLOCK - 1) / SCAN_BLOCK;
    launch_scan_blocks(d_in, d_out, d_block_sums, n, num_blocks);
    launch_scan_block_sums(d_block_sums, num_blocks);
    launch_add_block_offsets(d_out, d_block_sums, n, num_blocks);
}

int main(int argc, char** argv) {
    // Values average 2, so the largest n keeps every prefix inside int.
    const int n = static_cast<int>(app::arg_size(argc, argv, 1, size_t(1) << 26, 1 << 29));
    std::printf("prefix_sum: n=%d\n", n);

    std::vector<int> in(n);
    app::fill_uniform_int(in, -3, 7, 91);

    const int num_blocks = (n + SCAN_BLOCK - 1) / SCAN_BLOCK;
    const size_t bytes = size_t(n) * sizeof(int);
    int *d_in, *d_out, *d_block_sums;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMalloc(&d_block_sums, num_blocks * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));
    // Garbage in the output buffers makes a missed write show up.
    CUDA_CHECK(cudaMemset(d_out, 0xff, bytes));
    CUDA_CHECK(cudaMemset(d_block_sums, 0xff, num_blocks * sizeof(int)));

    inclusive_scan(d_in, d_out, d_block_sums, n);
    CUDA_CHECK(cudaGetLastError());
    std::vector<int> out_gpu(n);
    CUDA_CHECK(cudaMemcpy(out_gpu.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    std::vector<int64_t> out_ref(n);
    int64_t running = 0;
    for (int i = 0; i < n; ++i) out_ref[i] = running += in[i];
    const app::CompareResult check =
        app::compare("out", out_ref.data(), out_gpu.data(), n, 0.0, 0.0);

    // Kernel 1 rewrites out and the block sums from the untouched input, so
    // repeated runs need no reset.
    const float ms =
        app::time_median_ms(0, [&] { inclusive_scan(d_in, d_out, d_block_sums, n); });

    const int status = app::print_verdict("prefix_sum", {check});
    app::print_timing("prefix_sum",
                      "scan_blocks_kernel+scan_block_sums_kernel+add_block_offsets_kernel", ms);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_block_sums));
    return status;
}
