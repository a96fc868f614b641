// CPU emulation of the CUDA built-ins these kernels use: the threads of a
// block run as std::threads with a barrier for __syncthreads; blocks run one
// after the other, so function-static arrays stand for __shared__ memory.
#include <barrier>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
struct dim3 { unsigned x = 1, y = 1, z = 1; dim3() {} dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {} };
thread_local dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
std::barrier<> *g_bar;
inline void __syncthreads() { g_bar->arrive_and_wait(); }
#define __global__
#define __shared__ static
#define __restrict__
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
template <class T> T __ldg(const T *p) { return *p; }
template <class F> void launch(dim3 g, dim3 b, F f) {
  gridDim = g; blockDim = b;
  for (unsigned bz = 0; bz < g.z; bz++) for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
    std::barrier<> bar(b.x * b.y * b.z);
    g_bar = &bar;
    std::vector<std::thread> ts;
    for (unsigned tz = 0; tz < b.z; tz++) for (unsigned ty = 0; ty < b.y; ty++) for (unsigned tx = 0; tx < b.x; tx++)
      ts.emplace_back([=] { threadIdx = dim3(tx, ty, tz); blockIdx = dim3(bx, by, bz); f(); });
    for (auto &t : ts) t.join();
  }
}
static unsigned cdiv(unsigned a, unsigned b) { return (a + b - 1) / b; }
template <class T> void fill(std::vector<T> &v, unsigned seed) {
  for (auto &x : v) { seed = seed * 1664525u + 1013904223u; x = (T)((int)(seed >> 8) % 2001 - 1000) / (T)997; }
}
template <class T> int same(const char *what, const std::vector<T> &a, const std::vector<T> &b) {
  if (memcmp(a.data(), b.data(), a.size() * sizeof(T))) {
    size_t i = 0; while (a[i] == b[i]) i++;
    printf("%s: DIFFER at %zu: %.17g vs %.17g\n", what, i, (double)a[i], (double)b[i]);
    return 1;
  }
  printf("%s: bitwise equal (%zu elements)\n", what, a.size());
  return 0;
}
