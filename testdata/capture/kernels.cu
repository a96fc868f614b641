// Kernels with no spec, for optimize from captured launches
// (tests/test_capture_target.c writes captures of them).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void axpy(float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

template <typename T>
__global__ void scale(const T *in, T *out, T s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = s * in[i];
}

__global__ void gather(const float *src, const int *idx, float *dst, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = src[idx[i]];
}

void run_axpy(float *x, float *y, float a, int n) {
  axpy<<<(n + 255) / 256, 256>>>(x, y, a, n);
}

void run_scale(const float *in, float *out, float s, int n) {
  scale<float><<<(n + 127) / 128, 128>>>(in, out, s, n);
}

void run_gather(const float *src, const int *idx, float *dst, int n) {
  gather<<<(n + 255) / 256, 256>>>(src, idx, dst, n);
}

struct Params {
  float scale;
  int n;
};

// A struct by value and an optional mask (NULL when unused).
__global__ void masked_scale(Params p, const float *in, float *out, const int *mask) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n && (!mask || mask[i]))
    out[i] = p.scale * in[i];
}

void run_masked_scale(Params p, const float *in, float *out, const int *mask) {
  masked_scale<<<(p.n + 255) / 256, 256>>>(p, in, out, mask);
}

// The element type behind a typedef, as llm.c writes it.
typedef __nv_bfloat16 floatX;
__global__ void relu_x(floatX *out, const floatX *inp, int N) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < N)
    out[i] = (float)inp[i] > 0.0f ? inp[i] : floatX(0.0f);
}

void run_relu_x(floatX *out, const floatX *inp, int N) {
  relu_x<<<(N + 255) / 256, 256>>>(out, inp, N);
}

// Sizes as macros, one thread per row, a C89 loop: no scalar says how long
// `a` is, the code's own extent does (ROWS * COLS).
#define ROWS 16
#define COLS 8
__global__ void row_sums(const float *a, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j;
  if (i < ROWS) {
    float s = 0.0f;
    for (j = 0; j < COLS; j++)
      s += a[i * COLS + j];
    y[i] = s;
  }
}

void run_row_sums(const float *a, float *y) { row_sums<<<1, 32>>>(a, y); }
