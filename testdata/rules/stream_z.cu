// stream_z: 3-D stencils with one output per thread at (x, y, z), reading
// the neighbours at z - 1, z and z + 1 of their own (x, y) from global
// memory: a tidy one on a 3-D grid, an old-style one on a 2-D grid with a
// loop over z (macros, a C89 loop), and kernels the rule refuses.
#define NX 40
#define NY 21
#define NZ 27

// tidy: a 3-D grid, z from blockIdx.z, an early return, index locals
__global__ void heat3d_tidy(const float *__restrict__ in, float *__restrict__ out, int nx, int ny,
                            int nz, float c0, float c1) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < 1 || x >= nx - 1 || y < 1 || y >= ny - 1 || z < 1 || z >= nz - 1)
    return;
  size_t plane = (size_t)nx * ny;
  size_t idx = z * plane + (size_t)y * nx + x;
  out[idx] = c0 * in[idx] + c1 * (in[idx - 1] + in[idx + 1] + in[idx - nx] + in[idx + nx] +
                                  in[idx - plane] + in[idx + plane]);
}

// old style: a 2-D grid, the loop over z in the kernel, macro sizes, a C89
// loop, the index written out at every access, no __restrict__
__global__ void jacobi3d_old(float *A, float *B) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  int k;
  if (i > 0 && i < NX - 1 && j > 0 && j < NY - 1) {
    for (k = 1; k <= NZ - 2; k++) {
      B[k * NX * NY + j * NX + i] =
          0.125f * (A[(k - 1) * NX * NY + j * NX + i] + A[(k + 1) * NX * NY + j * NX + i] +
                    A[k * NX * NY + (j - 1) * NX + i] + A[k * NX * NY + (j + 1) * NX + i] +
                    A[k * NX * NY + j * NX + (i - 1)] + A[k * NX * NY + j * NX + (i + 1)]) +
          0.25f * A[k * NX * NY + j * NX + i];
    }
  }
}

// a wider column (z - 2 .. z + 2), the bounds as a block, two inputs
__global__ void wide_z(const float *a, const float *w, float *b, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z >= 2 && z < nz - 2) {
    int at = (z * ny + y) * nx + x;
    int s = nx * ny;
    float t = a[at - 2 * s] + a[at + 2 * s];
    b[at] = w[at] * (t + a[at - s] + a[at] + a[at + s]) + w[at + s];
  }
}

// refused: it reads the buffer it writes (in place)
__global__ void in_place(float *a, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z > 0 && z < nz - 1)
    a[(z * ny + y) * nx + x] = a[((z - 1) * ny + y) * nx + x] + a[((z + 1) * ny + y) * nx + x];
}

// refused: only its own plane of its column (nothing to keep)
__global__ void plane_only(const float *a, float *b, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x > 0 && x < nx - 1 && y < ny && z < nz)
    b[(z * ny + y) * nx + x] = a[(z * ny + y) * nx + x - 1] + a[(z * ny + y) * nx + x + 1];
}

// refused: a branch on the plane
__global__ void z_branch(const float *a, float *b, int nx, int ny, int nz) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z < 1 || z >= nz - 1)
    return;
  int at = (z * ny + y) * nx + x;
  if (z == 1) {
    b[at] = a[at];
    return;
  }
  b[at] = a[at - nx * ny] + a[at + nx * ny];
}

// refused: the plane is a parameter, one launch per plane (PolyBench's
// convolution-3d)
__global__ void plane_param(const float *a, float *b, int nx, int ny, int i) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < nx && y < ny && i > 0)
    b[(i * ny + y) * nx + x] = a[((i - 1) * ny + y) * nx + x] + a[((i + 1) * ny + y) * nx + x];
}

// the launches the rules read; not in tests/stream_z_cpu's CPU build
#ifndef KS_CPU_EMU
void run_all(float *a, float *b, float *w, int nx, int ny, int nz) {
  dim3 block(32, 8);
  dim3 grid((nx + 31) / 32, (ny + 7) / 8, nz);
  heat3d_tidy<<<grid, block>>>(a, b, nx, ny, nz, 0.5f, 0.125f);
  dim3 block2(32, 4);
  dim3 grid2((NX + 31) / 32, (NY + 3) / 4);
  jacobi3d_old<<<grid2, block2>>>(a, b);
  wide_z<<<grid, block>>>(a, w, b, nx, ny, nz);
  in_place<<<grid, block>>>(a, nx, ny, nz);
  plane_only<<<grid, block>>>(a, b, nx, ny, nz);
  z_branch<<<grid, block>>>(a, b, nx, ny, nz);
  for (int i = 1; i < nz - 1; i++)
    plane_param<<<grid2, block2>>>(a, b, nx, ny, i);
}
#endif
