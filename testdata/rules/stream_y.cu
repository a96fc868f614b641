// stream_y: 2-D stencils with one output per thread at (x, y), reading the
// rows y - 1, y and y + 1 of their own column (and of the columns beside
// it) from global memory: a tidy one with an early return and index
// locals, an old-style one (macro sizes and bounds, the index written out
// at every access, no __restrict__, coefficients assigned at the top), a
// wider window that reads its output at its own element, a 1-D grid with a
// loop over the rows, and kernels the rule refuses.
#define NI 45
#define NJ 70
#define NI_BOUND (NI)
#define NJ_BOUND (NJ)
#define DATA_TYPE float

// tidy: 5-point jacobi, an early return, index locals
__global__ void jacobi2d_tidy(const float *__restrict__ in, float *__restrict__ out, int nx,
                              int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1)
    return;
  int idx = y * nx + x;
  out[idx] = 0.2f * (in[idx] + in[idx - 1] + in[idx + 1] + in[idx - nx] + in[idx + nx]);
}

// old style: a 3x3 convolution as PolyBench writes it; the three columns
// j - 1, j, j + 1 each get a window of registers
__global__ void conv2d_old(DATA_TYPE *A, DATA_TYPE *B) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;

  DATA_TYPE c11, c12, c13, c21, c22, c23, c31, c32, c33;

  c11 = +0.2f;  c21 = +0.5f;  c31 = -0.8f;
  c12 = -0.3f;  c22 = +0.6f;  c32 = -0.9f;
  c13 = +0.4f;  c23 = +0.7f;  c33 = +0.10f;

  if ((i < NI_BOUND - 1) && (j < NJ_BOUND - 1) && (i > 0) && (j > 0)) {
    B[i * NJ + j] = c11 * A[(i - 1) * NJ + (j - 1)] + c21 * A[(i - 1) * NJ + (j + 0)] + c31 * A[(i - 1) * NJ + (j + 1)]
                  + c12 * A[(i + 0) * NJ + (j - 1)] + c22 * A[(i + 0) * NJ + (j + 0)] + c32 * A[(i + 0) * NJ + (j + 1)]
                  + c13 * A[(i + 1) * NJ + (j - 1)] + c23 * A[(i + 1) * NJ + (j + 0)] + c33 * A[(i + 1) * NJ + (j + 1)];
  }
}

// a wider column (y - 2 .. y + 2) over two inputs, the bounds as a block,
// the output read at its own element before its store (fdtd's update)
__global__ void wide_y(const float *a, const float *w, float *b, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < nx && y >= 2 && y < ny - 2) {
    int at = y * nx + x;
    float t = a[at - 2 * nx] + a[at + 2 * nx];
    b[at] = b[at] - w[at] * (t + a[at - nx] + a[at] + a[at + nx]) + w[at + nx];
  }
}

// a 1-D grid along x, each thread looping over the rows of its column
__global__ void cols_loop(const float *a, float *b, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x < nx) {
    for (int y = 1; y < ny - 1; y++)
      b[y * nx + x] = 0.25f * a[(y - 1) * nx + x] + 0.5f * a[y * nx + x] + 0.25f * a[(y + 1) * nx + x];
  }
}

// refused: it reads the buffer it writes on other rows (in place)
__global__ void in_place_y(float *a, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < nx && y > 0 && y < ny - 1)
    a[y * nx + x] = a[(y - 1) * nx + x] + a[(y + 1) * nx + x];
}

// refused: its own row alone (nothing to keep)
__global__ void row_only(const float *a, float *b, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x > 0 && x < nx - 1 && y < ny)
    b[y * nx + x] = a[y * nx + x - 1] + a[y * nx + x] + a[y * nx + x + 1];
}

// refused: a branch on the row (fdtd's first step)
__global__ void y_branch(const float *a, float *b, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny)
    return;
  if (y == 0) {
    b[x] = a[x];
    return;
  }
  b[y * nx + x] = a[y * nx + x] - a[(y - 1) * nx + x];
}

// the launches the rules read; not in tests/stream_y_cpu's CPU build
#ifndef KS_CPU_EMU
void run_all(float *a, float *b, float *w, int nx, int ny) {
  dim3 block(32, 8);
  dim3 grid((nx + 31) / 32, (ny + 7) / 8);
  jacobi2d_tidy<<<grid, block>>>(a, b, nx, ny);
  dim3 block2(32, 4);
  dim3 grid2((NJ + 31) / 32, (NI + 3) / 4);
  conv2d_old<<<grid2, block2>>>(a, b);
  wide_y<<<grid, block>>>(a, w, b, nx, ny);
  cols_loop<<<(nx + 127) / 128, 128>>>(a, b, nx, ny);
  in_place_y<<<grid, block>>>(a, nx, ny);
  row_only<<<grid, block>>>(a, b, nx, ny);
  y_branch<<<grid, block>>>(a, b, nx, ny);
}
#endif
