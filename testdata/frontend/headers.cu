// Launches of kernels that live in a header; dim3 configurations; a stream.
#include "include/header_kernels.cuh"

void run_header_kernels(float *a, const float *b, int n, cudaStream_t s) {
  dim3 block(256);
  dim3 grid((n + block.x - 1) / block.x);
  ks_test::detail::relu6<<<grid, block, 0, s>>>(a, n);
  c_linkage_copy<<<dim3(132 * 4), dim3(256, 1, 1), 0, s>>>(a, b, n);
}
