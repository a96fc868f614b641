// Included by ../fragments.cu: not a translation unit of its own.
__global__ void srad_scale(long d_Ne, fp *d_I) {
  int bx = blockIdx.x;
  int tx = threadIdx.x;
  int ei = (bx * NUMBER_THREADS) + tx;
  if (ei < d_Ne) {
    d_I[ei] = d_I[ei] / 255;
  }
}
