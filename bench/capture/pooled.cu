// pooled: the memory layout of a training program that allocates once and
// carves tensors out of pools (llm.c's params_memory and acts_memory, a
// caching allocator's segments). Two kernels in that style:
//   encoder_forward:  out[b,t,:] = wte[idx[b,t],:] + wpe[t,:]   (an index buffer)
//   residual_forward: out = inp1 + inp2
// Their pointers point into a 2 GiB parameter pool and a 3 GiB activation
// pool, so a whole-allocation capture of one launch is over the default
// --capture-limit; `profile --capture-window` copies only the span the
// launch's pointers reach. The program checks both kernels against the CPU
// and prints "pooled: PASS".
//
// Usage: ./pooled
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            std::exit(1);                                                          \
        }                                                                          \
    } while (0)

__global__ void encoder_forward(float* out, const int* idx, const float* wte, const float* wpe,
                                int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T * C) {
        int bt = i / C, c = i % C, t = bt % T;
        out[i] = wte[idx[bt] * C + c] + wpe[t * C + c];
    }
}

__global__ void residual_forward(float* out, const float* inp1, const float* inp2, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp1[i] + inp2[i];
}

static float frand(unsigned& s) {
    s = s * 1664525u + 1013904223u;
    return float(s >> 8) / float(1u << 24) * 2.0f - 1.0f;
}

int main() {
    const int B = 8, T = 1024, C = 768, V = 8192;
    const size_t BTC = size_t(B) * T * C;
    const size_t MiB = size_t(1) << 20;

    // The pools: parameters first, then the activations at their offsets.
    char *params, *acts;
    int* d_idx;
    CHECK(cudaMalloc(&params, 2048 * MiB));
    CHECK(cudaMalloc(&acts, 3072 * MiB));
    CHECK(cudaMalloc(&d_idx, size_t(B) * T * sizeof(int)));
    float* wte = reinterpret_cast<float*>(params);
    float* wpe = wte + size_t(V) * C;
    float* encoded = reinterpret_cast<float*>(acts + 1024 * MiB);
    float* attn = encoded + BTC;
    float* residual = attn + BTC;

    unsigned s = 1;
    std::vector<float> h_wte(size_t(V) * C), h_wpe(size_t(T) * C), h_attn(BTC);
    std::vector<int> h_idx(size_t(B) * T);
    for (auto& v : h_wte) v = frand(s);
    for (auto& v : h_wpe) v = frand(s);
    for (auto& v : h_attn) v = frand(s);
    for (auto& v : h_idx) v = int((s = s * 1664525u + 1013904223u) >> 8) % V;
    CHECK(cudaMemcpy(wte, h_wte.data(), h_wte.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(wpe, h_wpe.data(), h_wpe.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(attn, h_attn.data(), BTC * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_idx, h_idx.data(), h_idx.size() * 4, cudaMemcpyHostToDevice));

    const int threads = 256;
    const int blocks = int((BTC + threads - 1) / threads);
    encoder_forward<<<blocks, threads>>>(encoded, d_idx, wte, wpe, B, T, C);
    residual_forward<<<blocks, threads>>>(residual, encoded, attn, int(BTC));
    CHECK(cudaGetLastError());
    std::vector<float> h_enc(BTC), h_res(BTC);
    CHECK(cudaMemcpy(h_enc.data(), encoded, BTC * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_res.data(), residual, BTC * 4, cudaMemcpyDeviceToHost));

    size_t bad = 0;
    for (size_t i = 0; i < BTC; ++i) {
        size_t bt = i / C, c = i % C, t = bt % T;
        float e = h_wte[size_t(h_idx[bt]) * C + c] + h_wpe[t * C + c];
        if (h_enc[i] != e || h_res[i] != e + h_attn[i]) ++bad;
    }

    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventRecord(a));
    for (int r = 0; r < 20; ++r)
        residual_forward<<<blocks, threads>>>(residual, encoded, attn, int(BTC));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    std::printf("pooled: %s (%zu of %zu elements differ)\n", bad ? "FAIL" : "PASS", bad, BTC);
    std::printf("pooled: kernel residual_forward %.4f ms\n", ms / 20);
    CHECK(cudaFree(params));
    CHECK(cudaFree(acts));
    CHECK(cudaFree(d_idx));
    return bad ? 1 : 0;
}
