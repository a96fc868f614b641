// sgemm: C = alpha*A*B + beta*C, row-major, A is MxK, B is KxN, C is MxN.
// One thread per element of C, each walking a full row of A and column of B
// straight from global memory.
// Usage: ./sgemm [n]  (M = N = K = n)   or   ./sgemm M N K
#include "../common/app_util.h"

/* kernelsmith:
 *   size timed: M = 2048, N = 2048, K = 2048
 *   size small: M = 128, N = 128, K = 128
 *   size odd:   M = 100, N = 37, K = 53
 *   size one:   M = 1, N = 1, K = 1
 *   scalar alpha = 1.25, beta = 0.75
 *   in    A[M * K] uniform(-1, 1)
 *   in    B[K * N] uniform(-1, 1)
 *   inout C[M * N] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-4)   # float sums of K terms
 *   launch grid = dim3(ceil_div(N, 16), ceil_div(M, 16)), block = dim3(16, 16)
 *   flops 2 * M * N * K
 */
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                   const float* __restrict__ B, float beta,
                                   float* __restrict__ C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

void launch_sgemm(int M, int N, int K, float alpha, const float* d_A, const float* d_B,
                  float beta, float* d_C) {
    dim3 block(16, 16);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    sgemm_naive_kernel<<<grid, block>>>(M, N, K, alpha, d_A, d_B, beta, d_C);
}

int main(int argc, char** argv) {
    // 16384 per side keeps every int index below 2^31.
    const size_t kMaxDim = 16384;
    if (argc == 3 || argc > 4) {
        std::fprintf(stderr, "usage: %s [n] | %s M N K\n", argv[0], argv[0]);
        return 2;
    }
    int M, N, K;
    M = N = K = static_cast<int>(app::arg_size(argc, argv, 1, 2048, kMaxDim));
    if (argc > 2) {
        N = static_cast<int>(app::arg_size(argc, argv, 2, 0, kMaxDim));
        K = static_cast<int>(app::arg_size(argc, argv, 3, 0, kMaxDim));
    }
    const float alpha = 1.25f, beta = 0.75f;
    std::printf("sgemm: M=%d N=%d K=%d\n", M, N, K);

    std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
    app::fill_uniform(A, -1.0f, 1.0f, 61);
    app::fill_uniform(B, -1.0f, 1.0f, 62);
    app::fill_uniform(C, -1.0f, 1.0f, 63);

    float *d_A, *d_B, *d_C, *d_C_init;
    CUDA_CHECK(cudaMalloc(&d_A, A.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_B, B.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_C, C.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_C_init, C.size() * sizeof(float)));  // beta*C reads C: keep a copy
    CUDA_CHECK(cudaMemcpy(d_A, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_B, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_C_init, C.data(), C.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_C, d_C_init, C.size() * sizeof(float), cudaMemcpyDeviceToDevice));

    launch_sgemm(M, N, K, alpha, d_A, d_B, beta, d_C);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> C_gpu(C.size());
    CUDA_CHECK(cudaMemcpy(C_gpu.data(), d_C, C.size() * sizeof(float), cudaMemcpyDeviceToHost));

    // i-k-j loop order keeps the inner loop contiguous so the double
    // reference of the default size takes seconds, not minutes.
    std::vector<double> C_ref(C.size()), acc(N);
    for (int i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int k = 0; k < K; ++k) {
            const double a = A[size_t(i) * K + k];
            const float* b = &B[size_t(k) * N];
            for (int j = 0; j < N; ++j) acc[j] += a * b[j];
        }
        for (int j = 0; j < N; ++j)
            C_ref[size_t(i) * N + j] = double(alpha) * acc[j] + double(beta) * C[size_t(i) * N + j];
    }
    // float accumulation over K terms of magnitude <= 1: typical error is
    // ~sqrt(K) * eps * |dot|, far inside atol 1e-3 for K in the thousands.
    const app::CompareResult check =
        app::compare("C", C_ref.data(), C_gpu.data(), C.size(), 1e-3, 1e-4);

    const float ms = app::time_median_ms(
        0, [&] { launch_sgemm(M, N, K, alpha, d_A, d_B, beta, d_C); },
        [&] {
            CUDA_CHECK(cudaMemcpyAsync(d_C, d_C_init, C.size() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, 0));
        });

    const int status = app::print_verdict("sgemm", {check});
    app::print_timing("sgemm", "sgemm_naive_kernel", ms);
    for (float* p : {d_A, d_B, d_C, d_C_init}) CUDA_CHECK(cudaFree(p));
    return status;
}
