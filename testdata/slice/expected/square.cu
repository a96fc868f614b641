// kernelsmith-cc extract: square from TESTDATA/frontend/macros.cu
#line 9 "TESTDATA/frontend/macros.cu"
#define DEFINE_UNARY(name, expr)                                               \
  __global__ void name(float *x, int n) {                                      \
    int i = blockIdx.x * blockDim.x + threadIdx.x;                             \
    if (i < n)                                                                 \
      x[i] = expr;                                                             \
  }
#line 16 "TESTDATA/frontend/macros.cu"
DEFINE_UNARY(square, x[i] * x[i])
// name expression: square
