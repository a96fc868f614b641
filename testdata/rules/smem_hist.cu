// Histograms for the smem_histogram rule (tests/test_rules_smem.c): keys
// whose range only the bins buffer's length bounds (dynamic shared memory),
// a kernel that already strides over the grid, and kernels the rule must
// leave alone, each with the reason.
#include <cstdint>

// int keys: as many bins as the spec's buffer, more than a block has
// threads in the odd size, too many for shared memory in `many`.
/* kernelsmith:
 *   size timed: n = 1 << 24, nbins = 1000
 *   size small: n = 1000, nbins = 1000
 *   size odd:   n = 12345, nbins = 3000
 *   size one:   n = 1, nbins = 1
 *   size many:  n = 5000, nbins = 20000
 *   in    keys[n] int(0, nbins - 1)
 *   inout bins[nbins] const(0)
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void hist_int_kernel(const int *keys, unsigned int *bins, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&bins[keys[i]], 1u);
}

// Weighted, 64-bit bins through `bins + key`, already a grid-stride loop.
/* kernelsmith:
 *   size timed: n = 1 << 22
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   in    keys[n] int(0, 499)
 *   in    weights[n] int(0, 1000)
 *   inout bins[500] const(0)
 *   launch grid = min(ceil_div(n, 128), 4096), block = 128
 */
__global__ void hist_weighted_kernel(const int *keys, const unsigned int *weights,
                                     unsigned long long *bins, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        unsigned long long w = weights[i];
        atomicAdd(bins + keys[i], w);
    }
}

// 16 bins from a mask: a static array whatever the key's type.
/* kernelsmith:
 *   size timed: n = 1 << 22
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   in    values[n] int(-100000, 100000)
 *   inout bins[16] const(0)
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void hist_mask_kernel(const int *values, int *bins, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) {
        int v = values[i];
        atomicAdd(&bins[v & 15], 1);
    }
}

// Uses what atomicAdd returns: not a histogram the rule can privatize.
/* kernelsmith:
 *   size timed: n = 1 << 20
 *   size small: n = 1000
 *   size one:   n = 1
 *   in    data[n] int(0, 255)
 *   inout bins[256] const(0)
 *   out   slots[n]
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void hist_slots_kernel(const uint8_t *data, unsigned int *bins, unsigned int *slots, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) slots[i] = atomicAdd(&bins[data[i]], 1u);
}

// No bound check: the launch covers exactly n elements.
/* kernelsmith:
 *   size timed: blocks = 4096
 *   size one:   blocks = 1
 *   in    data[blocks * 256] int(0, 255)
 *   inout bins[256] const(0)
 *   launch grid = blocks, block = 256
 */
__global__ void hist_exact_kernel(const unsigned char *data, unsigned int *bins, int blocks) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&bins[data[i]], 1u);
}
