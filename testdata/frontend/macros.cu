// Macros in launch configurations, macro-generated kernels, a launch written
// entirely inside a macro, and a configuration supplied by a macro.
#include <cuda_runtime.h>

#define BLOCK_SIZE 128
#define GRID_FOR(n) (((n) + BLOCK_SIZE - 1) / BLOCK_SIZE)
#define CFG(g, b) <<<g, b>>>

#define DEFINE_UNARY(name, expr)                                               \
  __global__ void name(float *x, int n) {                                      \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                             \
    if (i < n)                                                                 \
      x[i] = expr;                                                             \
  }

DEFINE_UNARY(square, x[i] * x[i])
DEFINE_UNARY(negate, -x[i])

#define LAUNCH_UNARY(kernel, ptr, n) kernel<<<GRID_FOR(n), BLOCK_SIZE>>>(ptr, n)

void apply(float *x, int n) {
  square<<<GRID_FOR(n), BLOCK_SIZE>>>(x, n);
  LAUNCH_UNARY(negate, x, n);
  square CFG(GRID_FOR(n), BLOCK_SIZE)(x, n);
}
