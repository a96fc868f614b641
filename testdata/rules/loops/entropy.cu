/* entropy: the local entropy of a positive image over a (2R+1)^2 window,
 * -sum p log p with p = v / s and s the window's sum, clamped at the edges;
 * the log of s is taken again for every pixel of the window, and the sum is
 * accumulated straight into the output. 2-D blocks of 16 x 16. */
#include <cuda_runtime.h>

#define R 2
#define TILE 16

/* kernelsmith:
 *   size timed: w = 1024, h = 768
 *   size odd:   w = 77, h = 45
 *   size one:   w = 1, h = 1
 *   in    img[w * h] uniform(0.5, 2)
 *   out   ent[w * h] tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = dim3(ceil_div(w, 16), ceil_div(h, 16)), block = dim3(16, 16)
 */
__global__ void window_entropy_kernel(int w, int h, const float *img, float *ent)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int dx, dy, xx, yy;
    float s, v;

    if (x >= w || y >= h)
        return;
    s = 0.0f;
    for (dy = -R; dy <= R; dy++)
        for (dx = -R; dx <= R; dx++)
        {
            xx = min(max(x + dx, 0), w - 1);
            yy = min(max(y + dy, 0), h - 1);
            s += img[yy * w + xx];
        }
    ent[y * w + x] = 0.0f;
    for (dy = -R; dy <= R; dy++)
        for (dx = -R; dx <= R; dx++)
        {
            xx = min(max(x + dx, 0), w - 1);
            yy = min(max(y + dy, 0), h - 1);
            v = img[yy * w + xx];
            ent[y * w + x] -= v / s * (logf(v) - logf(s));
        }
}

void window_entropy(int w, int h, const float *img, float *ent)
{
    dim3 block(TILE, TILE);
    dim3 grid((w + TILE - 1) / TILE, (h + TILE - 1) / TILE);

    window_entropy_kernel<<<grid, block>>>(w, h, img, ent);
}
