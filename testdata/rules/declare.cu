// Kernels whose indices are declared before they are set, C89-style, for
// declare_index (tests/declare_index.sh): the rules read such an index once
// it is declared where it is set, and only when that keeps what the kernel
// computes.

/* The index alone in its declaration. */
__global__ void c89_saxpy(int n, float a, const float *x, float *y)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

/* The index beside a loop counter and a size: only the index moves. */
__global__ void c89_rowscale(int n, int m, const float *s, float *a)
{
    int i, k, half;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    half = m / 2;
    for (k = 0; k < half; k++)
        a[i * m + k] *= s[i];
}

/* Set twice: it stays where it is (the rules refuse it as written). */
__global__ void set_twice(int n, const float *x, float *y)
{
    int i;

    i = 0;
    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
}

/* Set again after the index statement: it stays. */
__global__ void set_again(int n, const float *x, float *y)
{
    int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
    i += n;
    if (i < 2 * n)
        y[i - n] += 1.0f;
}

/* Read before it is set: it stays. */
__global__ void read_first(int n, const float *x, float *y)
{
    int i;

    y[0] = (float)i;
    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
}

void run_declare(int n, float *x, float *y)
{
    c89_saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
    c89_rowscale<<<(n + 255) / 256, 256>>>(n, 8, x, y);
    set_twice<<<(n + 255) / 256, 256>>>(n, x, y);
    set_again<<<(n + 255) / 256, 256>>>(n, x, y);
    read_first<<<(n + 255) / 256, 256>>>(n, x, y);
}
