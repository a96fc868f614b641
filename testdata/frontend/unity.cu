// Includes another .cu, as unity builds do.
#include <cuda_runtime.h>
#include "included_impl.cu"

void mark(int *flags, int n) { unity_kernel<<<(n + 127) / 128, 128>>>(flags, n); }
