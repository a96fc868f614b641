// Template kernels, template host launchers, explicit and deduced arguments.
#include <cuda_runtime.h>

template <typename T, int BLOCK = 256>
__global__ void __launch_bounds__(BLOCK) scale(T *__restrict__ out, const T *in, T alpha, int n) {
  __shared__ T staged[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  staged[threadIdx.x] = i < n ? in[i] : T(0);
  __syncthreads();
  if (i < n)
    out[i] = alpha * staged[threadIdx.x];
}

template <typename T, int BLOCK>
void launch_scale(T *out, const T *in, T alpha, int n, cudaStream_t stream) {
  scale<T, BLOCK><<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(out, in, alpha, n);
}

void run_all(float *f, const float *cf, double *d, const double *cd, int n) {
  scale<float><<<(n + 255) / 256, 256>>>(f, cf, 2.0f, n);
  launch_scale<float, 128>(f, cf, 3.0f, n, 0);
  launch_scale<double, 512>(d, cd, 4.0, n, 0);
}
