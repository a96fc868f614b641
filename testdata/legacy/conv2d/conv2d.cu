/*
 * conv2d.cu: 3x3 convolution of an NI x NJ single-precision image.
 *
 * B(i,j) = sum of Cpq * A(i+p-2, j+q-2) for p, q in 1..3, on the interior;
 * the border of B stays zero. One thread per output pixel on a 2-D grid of
 * 32x8 blocks. A and B are 134 MB each, several times the L2 of an H200.
 * The kernel is launched from main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda_runtime.h>

#define NI 4096
#define NJ 8190
#define NI_BOUND (NI)
#define NJ_BOUND (NJ)

#define DIM_THREAD_BLOCK_X 32
#define DIM_THREAD_BLOCK_Y 8

#define DATA_TYPE float

/* Filter coefficients: row p of the stencil, column q */
#define C11 (+0.10f)
#define C12 (-0.35f)
#define C13 (+0.20f)
#define C21 (+0.45f)
#define C22 (+0.60f)
#define C23 (-0.15f)
#define C31 (-0.30f)
#define C32 (+0.05f)
#define C33 (+0.40f)

/*
 * Nine products of inputs in [0, 1) with coefficients whose magnitudes add
 * up to 2.6: the float result is within about 10 * 2^-24 * 2.6 (1.6e-6) of
 * the exact value whatever the order of the additions. Results near zero
 * need the absolute term.
 */
#define ATOL 1e-5
#define RTOL 1e-5

#define CUDA_CALL(x)                                                       \
  do {                                                                     \
    cudaError_t rc_ = (x);                                                 \
    if (rc_ != cudaSuccess) {                                              \
      fprintf(stderr, "Error %s at %s:%d\n", cudaGetErrorString(rc_),      \
              __FILE__, __LINE__);                                         \
      printf("conv2d: FAIL cuda %s\n", cudaGetErrorString(rc_));           \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* A 64-bit linear congruential generator: every machine draws the same image. */
static unsigned long long state = 88172645463325252ULL;

static DATA_TYPE next_value(void)
{
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (DATA_TYPE)(state >> 40) / 16777216.0f;
}

__global__ void convolution2D_kernel(DATA_TYPE *A, DATA_TYPE *B)
{
  int i, j;

  j = blockIdx.x * blockDim.x + threadIdx.x;
  i = blockIdx.y * blockDim.y + threadIdx.y;

  if ((i < NI_BOUND - 1) && (j < NJ_BOUND - 1) && (i > 0) && (j > 0)) {
    B[i * NJ + j] = C11 * A[(i - 1) * NJ + (j - 1)] + C12 * A[(i - 1) * NJ + j] + C13 * A[(i - 1) * NJ + (j + 1)]
                  + C21 * A[i * NJ + (j - 1)]       + C22 * A[i * NJ + j]       + C23 * A[i * NJ + (j + 1)]
                  + C31 * A[(i + 1) * NJ + (j - 1)] + C32 * A[(i + 1) * NJ + j] + C33 * A[(i + 1) * NJ + (j + 1)];
  }
}

/* The same sum in double for pixel (i, j); 0 on the border. */
static double conv_ref(const DATA_TYPE *A, int i, int j)
{
  if (i == 0 || j == 0 || i == NI - 1 || j == NJ - 1) return 0.0;
  return (double)C11 * A[(i - 1) * NJ + (j - 1)] + (double)C12 * A[(i - 1) * NJ + j] + (double)C13 * A[(i - 1) * NJ + (j + 1)]
       + (double)C21 * A[i * NJ + (j - 1)]       + (double)C22 * A[i * NJ + j]       + (double)C23 * A[i * NJ + (j + 1)]
       + (double)C31 * A[(i + 1) * NJ + (j - 1)] + (double)C32 * A[(i + 1) * NJ + j] + (double)C33 * A[(i + 1) * NJ + (j + 1)];
}

int main()
{
  DATA_TYPE *A, *B;
  DATA_TYPE *A_gpu, *B_gpu;
  int i, j, fail = 0, first_i = -1, first_j = -1;
  double e, first_expected = 0.0, first_got = 0.0;

  A = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  B = (DATA_TYPE *)malloc(NI * NJ * sizeof(DATA_TYPE));
  if (A == NULL || B == NULL) {
    printf("conv2d: FAIL out of host memory\n");
    return 1;
  }
  printf("conv2d: NI=%d NJ=%d\n", NI, NJ);

  for (i = 0; i < NI; ++i)
    for (j = 0; j < NJ; ++j)
      A[i * NJ + j] = next_value();

  CUDA_CALL(cudaMalloc((void **)&A_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CALL(cudaMalloc((void **)&B_gpu, sizeof(DATA_TYPE) * NI * NJ));
  CUDA_CALL(cudaMemcpy(A_gpu, A, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyHostToDevice));
  CUDA_CALL(cudaMemset(B_gpu, 0, sizeof(DATA_TYPE) * NI * NJ));

  dim3 block(DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y);
  dim3 grid((size_t)ceil(((float)NJ) / ((float)block.x)), (size_t)ceil(((float)NI) / ((float)block.y)));

  convolution2D_kernel<<<grid, block>>>(A_gpu, B_gpu);
  CUDA_CALL(cudaGetLastError());
  CUDA_CALL(cudaDeviceSynchronize());

  CUDA_CALL(cudaMemcpy(B, B_gpu, sizeof(DATA_TYPE) * NI * NJ, cudaMemcpyDeviceToHost));

  /* Every pixel, border included, against the double reference. */
  for (i = 0; i < NI; i++) {
    for (j = 0; j < NJ; j++) {
      e = conv_ref(A, i, j);
      if (!(fabs((double)B[i * NJ + j] - e) <= ATOL + RTOL * fabs(e))) {
        if (fail == 0) {
          first_i = i;
          first_j = j;
          first_expected = e;
          first_got = B[i * NJ + j];
        }
        fail++;
      }
    }
  }

  if (fail)
    printf("conv2d: FAIL B[%d] expected %.9g got %.9g (%d mismatches)\n",
           first_i * NJ + first_j, first_expected, first_got, fail);
  else
    printf("conv2d: PASS\n");

  CUDA_CALL(cudaFree(A_gpu));
  CUDA_CALL(cudaFree(B_gpu));
  free(A);
  free(B);
  return fail ? 1 : 0;
}
