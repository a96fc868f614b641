// A program in the style of Rodinia's srad: the main file defines the types
// and sizes, then includes its kernels, .cu files that do not compile on
// their own (they use fp and NUMBER_THREADS from here). The scan reads them
// as part of this unit, and their slices are made from it.
#include <cuda_runtime.h>

typedef float fp;
#define NUMBER_THREADS 256

#include "fragments/scale_kernel.cu"

void run(fp *d_I, long Ne) {
  dim3 threads;
  threads.x = NUMBER_THREADS;
  dim3 blocks;
  blocks.x = (Ne + NUMBER_THREADS - 1) / NUMBER_THREADS;
  srad_scale<<<blocks, threads>>>(Ne, d_I);
}
