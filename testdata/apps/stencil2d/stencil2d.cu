// stencil2d: one Jacobi sweep of the 5-point Laplace stencil on an nx x ny
// grid (row-major, x fastest). Boundary cells are fixed (Dirichlet) and are
// copied through; every interior cell becomes the mean of its 4 neighbours.
// Usage: ./stencil2d [nx] [ny]   (one argument: square grid)
#include "../common/app_util.h"

#define BLOCK_X 32
#define BLOCK_Y 8

/* kernelsmith:
 *   size timed: nx = 8192, ny = 8192
 *   size small: nx = 64, ny = 16
 *   size odd:   nx = 1000, ny = 37
 *   size one:   nx = 1, ny = 1
 *   in  in[nx * ny] uniform(-1, 1)
 *   out out[nx * ny] tol(atol = 1e-6, rtol = 1e-5)   # three float additions of values in [-1, 1]
 *   launch grid = dim3(ceil_div(nx, 32), ceil_div(ny, 8)), block = dim3(32, 8)
 *   flops 4 * nx * ny
 */
__global__ void jacobi5_kernel(const float* in, float* out, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;

    size_t idx = (size_t)y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
        out[idx] = in[idx];
        return;
    }
    out[idx] = 0.25f * (in[idx - 1] + in[idx + 1] + in[idx - nx] + in[idx + nx]);
}

void launch_jacobi5(const float* d_in, float* d_out, int nx, int ny) {
    dim3 threads(BLOCK_X, BLOCK_Y);
    dim3 blocks((nx + BLOCK_X - 1) / BLOCK_X, (ny + BLOCK_Y - 1) / BLOCK_Y);
    jacobi5_kernel<<<blocks, threads>>>(d_in, d_out, nx, ny);
}

int main(int argc, char** argv) {
    // ny bounds grid.y (at most 65535 blocks of BLOCK_Y rows).
    const int nx = static_cast<int>(app::arg_size(argc, argv, 1, 8192, 1 << 24));
    const int ny = static_cast<int>(app::arg_size(argc, argv, 2, size_t(nx), 65535 * BLOCK_Y));
    const size_t count = size_t(nx) * ny;
    std::printf("stencil2d: nx=%d ny=%d\n", nx, ny);

    std::vector<float> in(count);
    app::fill_uniform(in, -1.0f, 1.0f, 71);

    const size_t bytes = count * sizeof(float);
    float *d_in, *d_out;
    CUDA_CHECK(cudaMalloc(&d_in, bytes));
    CUDA_CHECK(cudaMalloc(&d_out, bytes));
    CUDA_CHECK(cudaMemcpy(d_in, in.data(), bytes, cudaMemcpyHostToDevice));

    launch_jacobi5(d_in, d_out, nx, ny);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out_gpu(count);
    CUDA_CHECK(cudaMemcpy(out_gpu.data(), d_out, bytes, cudaMemcpyDeviceToHost));

    std::vector<double> out_ref(count);
    for (int y = 0; y < ny; ++y) {
        for (int x = 0; x < nx; ++x) {
            const size_t i = size_t(y) * nx + x;
            if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1)
                out_ref[i] = in[i];
            else
                out_ref[i] = 0.25 * (double(in[i - 1]) + in[i + 1] + in[i - nx] + in[i + nx]);
        }
    }
    // Three float additions of values in [-1, 1]: absolute error < 1e-6.
    const app::CompareResult check =
        app::compare("out", out_ref.data(), out_gpu.data(), count, 1e-6, 1e-5);

    const float ms = app::time_median_ms(0, [&] { launch_jacobi5(d_in, d_out, nx, ny); });

    const int status = app::print_verdict("stencil2d", {check});
    app::print_timing("stencil2d", "jacobi5_kernel", ms);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    return status;
}
