// Kernels next to the heavy CUDA headers real code includes: cooperative
// groups, CUB and bf16. Whatever clang makes of those headers, the kernels of
// this file must be reported.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cub/block/block_reduce.cuh>
#include <cuda_bf16.h>

namespace cg = cooperative_groups;

template <int THREADS>
__global__ void row_sum_bf16(const __nv_bfloat16 *in, float *out, int cols) {
  using BlockReduce = cub::BlockReduce<float, THREADS>;
  __shared__ typename BlockReduce::TempStorage temp;
  float acc = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS)
    acc += __bfloat162float(in[blockIdx.x * cols + c]);
  float total = BlockReduce(temp).Sum(acc);
  if (threadIdx.x == 0)
    out[blockIdx.x] = total;
}

__global__ void warp_max(const float *in, float *out, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : -INFINITY;
  v = cg::reduce(warp, v, cg::greater<float>());
  if (warp.thread_rank() == 0)
    out[i / 32] = v;
}

void reduce_rows(const __nv_bfloat16 *in, float *out, int rows, int cols) {
  row_sum_bf16<256><<<rows, 256>>>(in, out, cols);
  warp_max<<<(rows + 255) / 256, 256>>>(out, out, rows);
}
