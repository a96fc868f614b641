// Two elements per thread, with a tail.
/* kernelsmith-variant:
 *   launch grid = ceil_div(ceil_div(n, 2), 256), block = 256
 */
__global__ void axpy_vec2(int n, float a, const float *x, float *y) {
  int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 1 < n) {
    float2 xv = *reinterpret_cast<const float2 *>(x + i);
    float2 yv = *reinterpret_cast<float2 *>(y + i);
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    *reinterpret_cast<float2 *>(y + i) = yv;
  } else if (i < n) {
    y[i] = a * x[i] + y[i];
  }
}
