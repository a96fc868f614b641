/* Template kernels whose instances only the host code around them names,
 * in the ways larger code bases write it: a bool template parameter, a
 * template host function instantiated explicitly rather than called, a
 * kernel whose type argument is deduced from a template host function's
 * parameter, and host code sizing its grid with min and max (which nvcc
 * gives host code; clang's CUDA headers only device code). */

/* Doubles every element; with Tail the last partial block is bounded. */
template <unsigned Block, bool Tail>
__global__ void twice_blocked(float *v, int count)
{
    int i;

    i = blockIdx.x * Block + threadIdx.x;
    if (Tail && i >= count)
        return;
    v[i] = 2.0f * v[i];
}

void twice_all(float *v, int count)
{
    int blocks;

    blocks = max(1, (count + 255) / 256);
    if (count % 256)
        twice_blocked<256, true><<<blocks, 256>>>(v, count);
    else
        twice_blocked<256, false><<<min(blocks, 65535), 256>>>(v, count);
}

/* Adds a constant; its element type comes from the host template below. */
template <class V>
__global__ void add_const(V *v, V c, int count)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        v[i] = v[i] + c;
}

template <class W>
void add_const_all(W *v, W c, int count)
{
    add_const<<<(count + 127) / 128, 128>>>(v, c, count);
}

/* The instance is made here, not by a call. */
template void add_const_all<double>(double *v, double c, int count);

/* Sums squares in float; its element type is deduced through the host
 * template below and is __nv_bfloat16 there, a type this file never names
 * in the kernel itself (llm.c's norm_kernel3: the slice needs cuda_bf16.h
 * for the instance's name alone, however the user reached it). */
#include <cuda_bf16.h>

template <class T>
__global__ void sum_squares(float *out, const T *x, int count)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        atomicAdd(out, (float)x[i] * (float)x[i]);
}

template <class T>
void sum_squares_all(float *out, const T *x, int count)
{
    sum_squares<<<(count + 255) / 256, 256>>>(out, x, count);
}

void sum_squares_bf16(float *out, const __nv_bfloat16 *x, int count)
{
    sum_squares_all(out, x, count);
}

/* A function as a template argument, passed on by a host template (llm.c's
 * trimul_global<matmul_tri>): libclang does not read such an argument, the
 * call spells it. */
typedef float (*unary_fn)(float);

__device__ float negate(float x)
{
    return -x;
}

template <unary_fn F>
__global__ void apply_fn(float *v, int count)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        v[i] = F(v[i]);
}

template <unary_fn F>
void apply_all(float *v, int count)
{
    apply_fn<F><<<(count + 255) / 256, 256>>>(v, count);
}

void negate_all(float *v, int count)
{
    apply_all<negate>(v, count);
}
