// A matrix product written the way older code is: sizes as macros (one
// through a second macro), the element type as a macro, a dim3 launch
// computed with ceil, a C89 loop, the sum kept in global memory. No spec:
// its inputs come from a capture, which gives no buffer length (no scalar
// carries one), so apply's guards rely on the lengths the kernel's own
// bounds prove. Used by tests/winners_cli.sh.
#include <cmath>
#include <cuda_runtime.h>

#define NI 64
#define NJ 48
#define NK 32
#define NI_BOUND NI
#define DATA_TYPE float

__global__ void mm_kernel(DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int i = blockIdx.y * blockDim.y + threadIdx.y;

	if ((i < NI_BOUND) && (j < NJ))
	{
		int k;
		for (k = 0; k < NK; k++)
		{
			c[i * NJ + j] += a[i * NK + k] * b[k * NJ + j];
		}
	}
}

void mmCuda(DATA_TYPE *a_gpu, DATA_TYPE *b_gpu, DATA_TYPE *c_gpu)
{
	dim3 block(32, 8);
	dim3 grid((size_t)(ceil(((float)NJ) / ((float)block.x))), (size_t)(ceil(((float)NI) / ((float)block.y))));
	mm_kernel<<<grid, block>>>(a_gpu, b_gpu, c_gpu);
	cudaDeviceSynchronize();
}
