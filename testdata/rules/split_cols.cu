// split_cols: column-access matrix-vector kernels, one thread per output j,
// coalesced but with a long loop per thread (tidy and old-style).
#define N_ROWS 4096
#define N_COLS 512

// tidy: a local sum, the epilogue after the loop
__global__ void colsum_tidy(const float *__restrict__ a, const float *__restrict__ x,
                            float *__restrict__ y, float alpha, float beta, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  float acc = 0.0f;
  for (int i = 0; i < m; ++i)
    acc += a[i * n + j] * x[i];
  y[j] = alpha * acc + beta * y[j];
}

// old style: macros as bounds, a C89 loop, summing straight into y[j]
__global__ void colsum_old(float *A, float *tmp, float *y) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N_COLS) {
    int i;
    y[j] = 0.0f;
    for (i = 0; i < N_ROWS; i++) {
      y[j] = y[j] + A[i * N_COLS + j] * tmp[i];
    }
  }
}

// old style, summing straight into y[j] with +=, the output zeroed by the
// host beforehand (as atax's second kernel): the loop may also be split over
// blocks that atomicAdd their partial sums (split_cols=G*10000+X*100+S)
__global__ void colsum_acc(float *A, float *tmp, float *y) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < N_COLS) {
    int i;
    for (i = 0; i < N_ROWS; i += 1)
      y[j] += A[i * N_COLS + j] * tmp[i];
  }
}

// refused: two outputs
__global__ void two_outputs(const float *a, float *y, float *z, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < m; i++)
      acc += a[i * n + j];
    y[j] = acc;
    z[j] = acc;
  }
}

// refused: the output's index is not the global index
__global__ void shifted(const float *a, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < m; i++)
      acc += a[i * n + j];
    y[j + 1] = acc;
  }
}

// refused: the loop count depends on memory
__global__ void ragged(const float *a, const int *len, float *y, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < len[0]; i++)
      acc += a[i * n + j];
    y[j] = acc;
  }
}

// refused: an early exit inside the loop
__global__ void early(const float *a, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < m; i++) {
      if (a[i * n + j] < 0.0f)
        return;
      acc += a[i * n + j];
    }
    y[j] = acc;
  }
}

// refused: an atomic
__global__ void atomic_out(const float *a, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    for (int i = 0; i < m; i++)
      atomicAdd(&y[j], a[i * n + j]);
  }
}

// refused: a 2-D kernel
__global__ void two_d(const float *a, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int k = blockIdx.y;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < m; i++)
      acc += a[(k * m + i) * n + j];
    y[k * n + j] = acc;
  }
}

// refused: shared memory already
__global__ void uses_smem(const float *a, float *y, int m, int n) {
  __shared__ float t[256];
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  t[threadIdx.x] = 0.0f;
  __syncthreads();
  if (j < n) {
    float acc = t[threadIdx.x];
    for (int i = 0; i < m; i++)
      acc += a[i * n + j];
    y[j] = acc;
  }
}

// refused: row access (thread j reads row j; warp_rows's shape)
__global__ void rows(const float *a, const float *x, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) {
    float acc = 0.0f;
    for (int i = 0; i < m; i++)
      acc += a[j * m + i] * x[i];
    y[j] = acc;
  }
}

// the launches the rules read (one thread per output, 256 per block); not
// in tests/split_cols_cpu's CPU build, which has no <<< >>>
#ifndef KS_CPU_EMU
void run_all(float *a, float *x, float *y, float *z, int *len, int m, int n) {
  colsum_tidy<<<(n + 255) / 256, 256>>>(a, x, y, 1.5f, 0.5f, m, n);
  colsum_old<<<(N_COLS + 255) / 256, 256>>>(a, x, y);
  colsum_acc<<<(N_COLS + 255) / 256, 256>>>(a, x, y);
  two_outputs<<<(n + 255) / 256, 256>>>(a, y, z, m, n);
  shifted<<<(n + 255) / 256, 256>>>(a, y, m, n);
  ragged<<<(n + 255) / 256, 256>>>(a, len, y, n);
  early<<<(n + 255) / 256, 256>>>(a, y, m, n);
  atomic_out<<<(n + 255) / 256, 256>>>(a, y, m, n);
  two_d<<<dim3((n + 255) / 256, 4), 256>>>(a, y, m, n);
  uses_smem<<<(n + 255) / 256, 256>>>(a, y, m, n);
  rows<<<(n + 255) / 256, 256>>>(a, x, y, m, n);
}
#endif
