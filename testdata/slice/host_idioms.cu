/* Kernels leaning on what host code has around them: a libc typedef
 * (glibc's uint from <sys/types.h>), a __constant__ variable template and
 * std::numeric_limits from <limits>. The slice must carry each so that it
 * compiles with NVRTC, which has none of those headers. */
#include <sys/types.h>
#include <limits>

#define TAPS 5

template <class V>
__constant__ V taps_of[TAPS];

/* A 5-tap filter over a row, the taps read from the variable template. */
__global__ void taps_row(float *dst, const float *src, uint width)
{
    uint x;
    uint t;
    float acc;

    x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x + TAPS > width)
        return;
    acc = 0.0f;
    for (t = 0; t < TAPS; t += 1)
        acc += taps_of<float>[t] * src[x + t];
    dst[x] = acc;
}

/* Each block's smallest element, the identity of min from <limits>. */
__global__ void block_min(float *mins, const float *vals, int count)
{
    __shared__ float best[128];
    int i;
    int s;

    i = blockIdx.x * 128 + threadIdx.x;
    best[threadIdx.x] = i < count ? vals[i] : std::numeric_limits<float>::max();
    __syncthreads();
    for (s = 64; s >= 1; s /= 2) {
        if (threadIdx.x < s && best[threadIdx.x + s] < best[threadIdx.x])
            best[threadIdx.x] = best[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        mins[blockIdx.x] = best[0];
}

/* Launched from a template host function with its argument deduced from
 * the call: the scan cannot tell the instance (no `<>`), the slicer finds
 * it in the host function's instantiation. */
template <class E>
__global__ void fill_as(E *dst, int count)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count)
        dst[i] = (E)7;
}

template <class E>
void fill_all(E *dst, int count)
{
    fill_as<<<(count + 127) / 128, 128>>>(dst, count);
}

void fill_floats(float *dst, int count)
{
    fill_all(dst, count);
}
