// The cost of a patched launch site's fast path: the same empty kernel
// launched N times directly and N times through ksrt::site::take(), host
// time per launch. The launches go in bursts of 128, each timed from its
// first enqueue to its last and followed by an untimed synchronize: a
// series of thousands of launches with one synchronize at the end fills the
// launch queue and then times the GPU's rate of empty kernels (about 4 us
// each on an H200), which hides what the host does per launch. Each series
// is also timed with the guard alone (no launch), which is the dispatch's
// own cost with nothing of the driver's launch path in it. The series differ in their
// guards, written as the emitter writes them:
//   take()            aligned(x, 16) and a grid bound (no driver call)
//   disjoint, known   ksrt::disjoint(x, n, y, n): the interval test
//   disjoint, cached  ks_alias.disjoint(0, x, unknown, y, unknown) on two
//                     cudaMalloc buffers: one driver call per launch
//   disjoint, driver  ksrt::disjoint(x, unknown, y, unknown): two calls
// Series alternate, several rounds; the medians are printed and written as
// JSON, with whether each series took the variant (a series whose guard
// failed measures the wrong path).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernelsmith_dispatch.h"

__global__ void empty_kernel(float *x, float *y, int n) {
  if (x && y && n < 0)
    x[0] = y[0];
}

enum mode { DIRECT, TAKE, KNOWN, CACHED, DRIVER, NMODES };
static const char *const mode_label[NMODES] = {
    "direct <<<>>>", "through ksrt::site::take()", "disjoint, lengths known",
    "disjoint, unknown, alias_cache", "disjoint, unknown, no cache"};
static const char *const mode_key[NMODES] = {"direct_ns", "dispatch_ns", "disjoint_known_ns",
                                             "disjoint_cached_ns", "disjoint_driver_ns"};

/* Each mode's site, as a patched launch has it; `took` says whether the
 * variant branch ran at every launch of the series. */
template <int M>
static double series(float *x, float *y, int n, int launches, bool launch, bool *took) {
  static ksrt::site site("empty_kernel", mode_label[M], {ksrt::current_arch()});
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  const unsigned long long before = site.count(ksrt::path_variant);
  double ns = 0;
  int done = 0;
  volatile bool sink = false;
  while (done < launches) {
    const int burst = std::min(launches - done, 128);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < burst; i++) {
      bool variant = false;
      if (M == TAKE)
        variant = site.take(ksrt::aligned(x, 16) && ksrt::ceil_div(n, 256) <= 65535);
      else if (M == KNOWN)
        variant = site.take(ksrt::disjoint(x, bytes, y, bytes));
      else if (M == CACHED)
        variant = [&] {
          static thread_local ksrt::alias_cache ks_alias;
          return site.take(ks_alias.disjoint(0, x, ksrt::unknown, y, ksrt::unknown));
        }();
      else if (M == DRIVER)
        variant = site.take(ksrt::disjoint(x, ksrt::unknown, y, ksrt::unknown));
      if (!launch)
        sink = variant;
      else if (variant)
        empty_kernel<<<1, 32>>>(x, y, n);
      else
        empty_kernel<<<1, 32>>>(x, y, n);
    }
    auto t1 = std::chrono::steady_clock::now();
    ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
    done += burst;
    if (launch)
      cudaDeviceSynchronize();
  }
  (void)sink;
  *took = M == DIRECT || site.count(ksrt::path_variant) - before == static_cast<unsigned long long>(launches);
  return ns / launches;
}

static double run_mode(int m, float *x, float *y, int n, int launches, bool launch, bool *took) {
  switch (m) {
  case DIRECT: return series<DIRECT>(x, y, n, launches, launch, took);
  case TAKE: return series<TAKE>(x, y, n, launches, launch, took);
  case KNOWN: return series<KNOWN>(x, y, n, launches, launch, took);
  case CACHED: return series<CACHED>(x, y, n, launches, launch, took);
  default: return series<DRIVER>(x, y, n, launches, launch, took);
  }
}

int main(int argc, char **argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 20000, rounds = 15, n = 256;
  float *x = nullptr, *y = nullptr;
  if (cudaMalloc((void **)&x, n * sizeof(float)) != cudaSuccess ||
      cudaMalloc((void **)&y, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "dispatch_bench: no GPU\n");
    return 77;
  }
  bool took[NMODES], all_took[NMODES];
  for (int m = 0; m < NMODES; m++) /* warm-up: module load, first launches, driver lookup */
    run_mode(m, x, y, n, 1000, true, &took[m]);
  /* ns: host time per launch, the guard and the enqueue; guard: the guard
   * alone. Series alternate within each round, so a drift of the clock or
   * of the machine touches every mode alike. */
  std::vector<double> ns[NMODES], guard[NMODES];
  for (int m = 0; m < NMODES; m++)
    all_took[m] = true;
  for (int r = 0; r < rounds; r++)
    for (int m = 0; m < NMODES; m++) {
      ns[m].push_back(run_mode(m, x, y, n, launches, true, &took[m]));
      all_took[m] = all_took[m] && took[m];
      guard[m].push_back(run_mode(m, x, y, n, launches, false, &took[m]));
      all_took[m] = all_took[m] && took[m];
    }
  double median[NMODES], gmedian[NMODES];
  for (int m = 0; m < NMODES; m++) {
    std::sort(ns[m].begin(), ns[m].end());
    std::sort(guard[m].begin(), guard[m].end());
    median[m] = ns[m][rounds / 2];
    gmedian[m] = guard[m][rounds / 2];
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%-34s %12s %10s %10s\n", "launch path", "ns/launch", "overhead", "guard ns");
  for (int m = 0; m < NMODES; m++)
    std::printf("%-34s %12.1f %10.1f %10.1f%s\n", mode_label[m], median[m],
                median[m] - median[DIRECT], gmedian[m] - gmedian[DIRECT],
                all_took[m] ? "" : "   (the variant did NOT run at every launch)");
  std::printf("(ns/launch: host time of a launch, in bursts of 128 below the launch queue's depth;\n"
              " guard ns: the guard and take() alone; target for take(): under 1%% of a launch)\n");
  std::FILE *f = std::fopen(argc > 2 ? argv[2] : "dispatch.json", "w");
  if (f) {
    std::fprintf(f, "{\"device\": \"%s\", \"launches\": %d, \"rounds\": %d, \"burst\": 128",
                 prop.name, launches, rounds);
    for (int m = 0; m < NMODES; m++)
      std::fprintf(f, ", \"%s\": %.2f", mode_key[m], median[m]);
    std::fprintf(f, ", \"overhead_ns\": %.2f", median[TAKE] - median[DIRECT]);
    for (int m = KNOWN; m < NMODES; m++)
      std::fprintf(f, ", \"%.*s_overhead_ns\": %.2f", (int)(std::strlen(mode_key[m]) - 3),
                   mode_key[m], median[m] - median[DIRECT]);
    std::fprintf(f, ", \"guard_only_ns\": {");
    for (int m = TAKE; m < NMODES; m++)
      std::fprintf(f, "%s\"%s\": %.2f", m == TAKE ? "" : ", ", mode_key[m],
                   gmedian[m] - gmedian[DIRECT]);
    std::fprintf(f, "}, \"variant_taken\": {");
    for (int m = TAKE; m < NMODES; m++)
      std::fprintf(f, "%s\"%s\": %s", m == TAKE ? "" : ", ", mode_key[m],
                   all_took[m] ? "true" : "false");
    std::fprintf(f, "}}\n");
    std::fclose(f);
  }
  cudaFree(x);
  cudaFree(y);
  return 0;
}
