// The cost of a patched launch site's fast path: the same empty kernel
// launched N times directly and N times through ksrt::site::take() with two
// guards, host time per launch (the launches are asynchronous; the GPU is
// synchronized once at the end of each series). Series alternate, several
// rounds; the medians are printed and written as JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernelsmith_dispatch.h"

__global__ void empty_kernel(float *x, int n) {
  if (x && n < 0)
    x[0] = 0;
}

static double series(bool dispatch, float *x, int n, int launches) {
  static ksrt::site site("empty_kernel", "dispatch_bench.cu", {ksrt::current_arch()});
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; i++) {
    if (dispatch && site.take(ksrt::aligned(x, 16) && ksrt::ceil_div(n, 256) <= 65535))
      empty_kernel<<<1, 32>>>(x, n);
    else
      empty_kernel<<<1, 32>>>(x, n);
  }
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / launches;
}

int main(int argc, char **argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000, rounds = 15;
  float *x = nullptr;
  if (cudaMalloc(&x, 1024) != cudaSuccess) {
    std::fprintf(stderr, "dispatch_bench: no GPU\n");
    return 77;
  }
  series(false, x, 1024, 1000); /* warm-up: module load, first launches */
  series(true, x, 1024, 1000);
  std::vector<double> plain, via;
  for (int r = 0; r < rounds; r++) {
    plain.push_back(series(false, x, 1024, launches));
    via.push_back(series(true, x, 1024, launches));
  }
  std::sort(plain.begin(), plain.end());
  std::sort(via.begin(), via.end());
  double p = plain[rounds / 2], v = via[rounds / 2];
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%-34s %10s\n", "launch path", "ns/launch");
  std::printf("%-34s %10.1f\n", "direct <<<>>>", p);
  std::printf("%-34s %10.1f\n", "through ksrt::site::take()", v);
  std::printf("%-34s %10.1f   (target: not measurable, < 2%% of a launch)\n", "overhead", v - p);
  std::FILE *f = std::fopen(argc > 2 ? argv[2] : "dispatch.json", "w");
  if (f) {
    std::fprintf(f,
                 "{\"device\": \"%s\", \"launches\": %d, \"rounds\": %d, \"direct_ns\": %.2f, "
                 "\"dispatch_ns\": %.2f, \"overhead_ns\": %.2f}\n",
                 prop.name, launches, rounds, p, v, v - p);
    std::fclose(f);
  }
  cudaFree(x);
  return 0;
}
