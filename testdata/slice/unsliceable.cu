// Kernels that cannot be sliced, each for its own reason (nvcc would refuse
// most of them too): the slicer must say why in one line.
#include <algorithm>

float host_helper(float x) { return x * 2.0f; }

__global__ void calls_host(float *x) { x[0] = host_helper(x[0]); }

extern __device__ float defined_elsewhere(float x);

__global__ void calls_extern(float *x) { x[0] = defined_elsewhere(x[0]); }

float host_scale = 2.0f;

__global__ void uses_host_variable(float *x) { x[0] *= host_scale; }

__global__ void uses_std_min(float *x) { x[0] = std::min(x[0], x[1]); }

// A texture reference, read through a device function: CUDA 12 removed
// them, so clang drops the declaration and NVRTC could not compile it.
texture<float, 1, cudaReadModeElementType> weights_tex;

__device__ float weight(int i) { return tex1Dfetch(weights_tex, i); }

__global__ void reads_texture_reference(float *x) { x[threadIdx.x] *= weight(threadIdx.x); }

void run_unsliceable(float *x) {
  calls_host<<<1, 1>>>(x);
  calls_extern<<<1, 1>>>(x);
  uses_host_variable<<<1, 1>>>(x);
  uses_std_min<<<1, 1>>>(x);
  reads_texture_reference<<<1, 32>>>(x);
}
