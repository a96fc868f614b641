/* Kernels written the way older and academic CUDA code is written: sizes
 * as macros (one naming another), the loop variable declared at the top
 * and assigned in the loop, `j += 1`, `j = j + 1`, `<=`, 2-D blocks and
 * dim3 launches. Each has a tidy twin among the test apps; the rules must
 * see them as the compiler does (passes/rules_meaning.c) and rewrite them
 * the same way. Checked by tests/test_rules.c and tests/golden_rules.sh. */
#include <cuda_runtime.h>

#define NX 2048
#define NY 1536
#define N_BOUND NX        /* a macro that is another macro */
#define ROWS_BOUND (NY)
#define LEN (1 << 20)
#define LEN_BOUND LEN
#define W 1024
#define H 768
#define H_BOUND H
#define TAPS 7
#define DIM_BLOCK 256

/* One thread per row, C89 style: j declared with the other locals, the
 * bound a macro naming a macro, the step `j += 1`. */
/* kernelsmith:
 *   size timed: rows = 1536, cols = 2048
 *   in  a[rows * cols] uniform(-1, 1)
 *   in  x[cols] uniform(-1, 1)
 *   out y[rows] tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(rows, 256), block = 256
 *   flops 2 * rows * cols
 */
__global__ void mv_rows_c89(float *a, float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j;
    float t;

    if (i < ROWS_BOUND)
    {
        t = 0.0f;
        for (j = 0; j < N_BOUND; j += 1)
        {
            t += a[i * NX + j] * x[j];
        }
        y[i] = t;
    }
}

/* The transposed product: `<=` with the last index, `j = j + 1`, the
 * bounds check as an early return with the operands swapped. */
/* kernelsmith:
 *   size timed: rows = 1536, cols = 2048
 *   in  a[rows * cols] uniform(-1, 1)
 *   in  x[rows] uniform(-1, 1)
 *   out y[cols] tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(cols, 256), block = 256
 */
__global__ void mvt_cols_c89(const float *a, const float *x, float *y)
{
    int j;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0;

    if (NX <= i)
        return;
    for (j = 0; j <= NY - 1; j = j + 1)
        sum += a[j * NX + i] * x[j];
    y[i] = sum;
}

/* The column variable is read after its loop: each lane would end with
 * its own value, so warp_rows must refuse. */
/* kernelsmith:
 *   size timed: rows = 1536, cols = 2048
 *   in  a[rows * cols] uniform(-1, 1)
 *   in  x[cols] uniform(-1, 1)
 *   out y[rows] tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(rows, 256), block = 256
 */
__global__ void mv_rows_used_after(float *a, float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j;
    float t = 0.0f;

    if (i < NY)
    {
        for (j = 0; j != NX; j++)
            t += a[i * NX + j] * x[j];
        y[i] = t + (float)j;
    }
}

/* `j != end` with the step 1: the lanes' stride of 32 must test `<`. */
/* kernelsmith:
 *   size timed: rows = 1536, cols = 2048
 *   in  a[rows * cols] uniform(-1, 1)
 *   in  x[cols] uniform(-1, 1)
 *   out y[rows] tol(atol = 1e-3, rtol = 1e-4)
 *   launch grid = ceil_div(rows, 128), block = 128
 */
__global__ void mv_rows_ne(const float *a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NY) {
        int j;
        float t = 0.0f;
        for (j = 0; NX != j; ++j)
            t += a[i * NX + j] * x[j];
        y[i] = t;
    }
}

enum { CLIP_COUNT = 3 << 16 };

/* The length is an enumerator at namespace scope. */
/* kernelsmith:
 *   size timed: n = 3 << 16
 *   inout v[n] uniform(-2, 2) tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void clip_enum_len(float *v)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= CLIP_COUNT)
        return;
    v[k] = fminf(fmaxf(v[k], -1.0f), 1.0f);
}

/* Element-wise, the length a macro naming a macro. */
/* kernelsmith:
 *   size timed: n = 1 << 20
 *   in  src[n] uniform(-1, 1)
 *   out dst[n] tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void axpb_macro_len(float *dst, const float *src)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < LEN_BOUND)
        dst[idx] = 2.0f * src[idx] + 1.0f;
}

/* A 2-D block over a fixed image, launched with dim3 locals; the bound of
 * the rows a macro naming a macro. */
/* kernelsmith:
 *   size timed: w = 1024, h = 768
 *   inout img[w * h] uniform(-1, 1) tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = dim3(w / 16, h / 16), block = dim3(16, 16)
 */
__global__ void halve_image(float *img)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < H_BOUND && col < W)
        img[row * W + col] = img[row * W + col] * 0.5f;
}

/* A three-point blur along the rows from one image into another, the
 * bounds macros naming macros: vectorize_2d folds them for its guard. */
/* kernelsmith:
 *   size timed: w = 1024, h = 768
 *   in  src[w * h] uniform(-1, 1)
 *   out dst[w * h] tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = dim3(w / 16, h / 16), block = dim3(16, 16)
 */
__global__ void blur_rows_macro(const float *src, float *dst)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < H_BOUND && col >= 1 && col < W - 1)
        dst[row * W + col] = 0.25f * src[row * W + col - 1] + 0.5f * src[row * W + col] +
                             0.25f * src[row * W + col + 1];
}

/* The bound is a const local computed from the scalars. */
/* kernelsmith:
 *   size timed: nrow = 1024, ncol = 1024
 *   size odd:   nrow = 37, ncol = 1001
 *   inout v[nrow * ncol] uniform(-1, 1) tol(atol = 1e-6, rtol = 1e-6)
 *   launch grid = ceil_div(nrow * ncol, 256), block = 256
 */
__global__ void bump_const_local(float *v, int nrow, int ncol)
{
    const int count = nrow * ncol;
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count)
        v[k] = v[k] + 1.0f;
}

/* A short filter: the tap loop's trip count is a macro, written with `<=`
 * and `t = t + 1` on a variable declared outside. */
/* kernelsmith:
 *   size timed: n = 1 << 20
 *   size odd:   n = 12345
 *   in  x[n + 6] uniform(-1, 1)
 *   in  w[7] uniform(-1, 1)
 *   out y[n] tol(atol = 1e-5, rtol = 1e-5)
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void fir_c89(const float *x, const float *w, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t;
    float acc;
    if (i < n) {
        acc = 0.0f;
        for (t = 0; t <= TAPS - 1; t = t + 1)
            acc += w[t] * x[i + t];
        y[i] = acc;
    }
}

/* Rodinia's style: the block and thread indexes copied to locals, the
 * block size a macro in the index (the launch uses the same macro), a
 * `long` element count. coarsen and vectorize see the global index through
 * the aliases and require the block to be that size. */
#define NUMBER_THREADS 512
/* kernelsmith:
 *   size timed: ne = 1 << 22
 *   inout img[ne] uniform(0, 255) tol(atol = 1e-4, rtol = 1e-4)
 *   launch grid = ceil_div(ne, 512), block = 512
 */
__global__ void extract_alias(long ne, float *img)
{
    int bx = blockIdx.x;
    int tx = threadIdx.x;
    int ei = (bx * NUMBER_THREADS) + tx;
    if (ei < ne) {
        img[ei] = expf(img[ei] / 255);
    }
}

/* The block size a macro in the index, written out without aliases, in a
 * grid-stride-free kernel block and grid_stride can take (the launch uses
 * the macro too); and the same index from a function-like macro, which a
 * rewrite must not edit inside. */
#define SCALE_BLOCK 256
#define GLOBAL_ID(b) (blockIdx.x * (b) + threadIdx.x)
/* kernelsmith:
 *   size timed: n = 1 << 22
 *   in x[n] uniform(-1, 1)
 *   out y[n]
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void scale_macro_block(const float *x, float *y, int n)
{
    int i = blockIdx.x * SCALE_BLOCK + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

/* kernelsmith:
 *   size timed: n = 1 << 22
 *   in x[n] uniform(-1, 1)
 *   out y[n]
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void scale_macro_index(const float *x, float *y, int n)
{
    int i = GLOBAL_ID(SCALE_BLOCK);
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

/* The thread's place in its block read beside the index: a block of
 * another size would scale other elements. block and grid_stride decline. */
/* kernelsmith:
 *   size timed: n = 1 << 22
 *   in x[n] uniform(-1, 1)
 *   out y[n]
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void scale_first_half(const float *x, float *y, int n)
{
    int tx = threadIdx.x;
    int i = blockIdx.x * SCALE_BLOCK + tx;
    if (i < n)
        y[i] = tx < SCALE_BLOCK / 2 ? 2.0f * x[i] : x[i];
}

void run_all(float *a, float *x, float *y, float *img, float *v, int nrow, int ncol, int n)
{
    dim3 threads(DIM_BLOCK);
    dim3 blocks((NY + DIM_BLOCK - 1) / DIM_BLOCK);
    mv_rows_c89<<<blocks, threads>>>(a, x, y);
    dim3 blocks_t((NX + DIM_BLOCK - 1) / DIM_BLOCK);
    mvt_cols_c89<<<blocks_t, threads>>>(a, x, y);
    mv_rows_used_after<<<blocks, threads>>>(a, x, y);
    axpb_macro_len<<<(LEN + DIM_BLOCK - 1) / DIM_BLOCK, DIM_BLOCK>>>(y, x);
    dim3 block2(16, 16);
    dim3 grid2(W / 16, H / 16);
    halve_image<<<grid2, block2>>>(img);
    bump_const_local<<<(nrow * ncol + 255) / 256, 256>>>(v, nrow, ncol);
    fir_c89<<<(n + 255) / 256, 256>>>(x, a, y, n);
    mv_rows_ne<<<(NY + 127) / 128, 128>>>(a, x, y);
    clip_enum_len<<<(CLIP_COUNT + 255) / 256, 256>>>(v);
    dim3 threads_e;
    threads_e.x = NUMBER_THREADS;
    dim3 blocks_e((n + NUMBER_THREADS - 1) / NUMBER_THREADS);
    extract_alias<<<blocks_e, threads_e>>>((long)n, img);
    scale_macro_block<<<(n + SCALE_BLOCK - 1) / SCALE_BLOCK, SCALE_BLOCK>>>(x, y, n);
    scale_macro_index<<<(n + SCALE_BLOCK - 1) / SCALE_BLOCK, SCALE_BLOCK>>>(x, y, n);
    scale_first_half<<<(n + SCALE_BLOCK - 1) / SCALE_BLOCK, SCALE_BLOCK>>>(x, y, n);
}
