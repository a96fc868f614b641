// kernelsmith-cc extract: ks_test::detail::relu6 from TESTDATA/frontend/include/header_kernels.cuh
namespace ks_test {
namespace detail {
#line 8 "TESTDATA/frontend/include/header_kernels.cuh"
__device__ inline float clampf(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }
#line 10 "TESTDATA/frontend/include/header_kernels.cuh"
__device__ inline float relu_clamped(float v) { return clampf(v, 0.0f, 6.0f); }
#line 12 "TESTDATA/frontend/include/header_kernels.cuh"
__global__ void relu6(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = relu_clamped(x[i]);
}
} // namespace detail
} // namespace ks_test
// name expression: ks_test::detail::relu6
