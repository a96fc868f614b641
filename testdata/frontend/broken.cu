// A file with a syntax error: the scan reports it with file:line and still
// finds the kernel before the error.
__global__ void survives(float *x) { x[threadIdx.x] = 0.0f; }

void host_side(float *x) {
  survives<<<1, 32>>>(x)   // missing semicolon
  int y = ;
}
