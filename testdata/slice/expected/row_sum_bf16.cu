// kernelsmith-cc extract: row_sum_bf16 from TESTDATA/frontend/system_headers.cu
#include <cuda_bf16.h>
#include <cub/block/block_reduce.cuh>
#line 11 "TESTDATA/frontend/system_headers.cu"
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
// name expression: row_sum_bf16<256>
