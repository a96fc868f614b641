// A .cu meant to be included by another .cu (unity build): its kernel must be
// reported once, here, even though two translation units see it.
#pragma once
__global__ void unity_kernel(int *flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = i & 1;
}
