// A small elementwise kernel for the judge's own benchmark: a full
// evaluation (compile, verify on every size set, time) must take under 1 s.
/* kernelsmith:
 *   size timed: n = 1 << 20
 *   size small: n = 1000
 *   size odd:   n = 12345
 *   size one:   n = 1
 *   scalar a = 1.5
 *   in x[n] uniform(-1, 1)
 *   inout y[n] uniform(-1, 1)
 *   launch grid = ceil_div(n, 256), block = 256
 *   flops 2 * n
 */
__global__ void axpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

void run_axpy(int n, float a, const float *x, float *y) {
  axpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
