// Shared helpers for the kernelsmith-cc test apps.
//
// Header-only so that every app still builds with a single `nvcc app.cu`.
// Everything here is host code; the kernels themselves live in the apps.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <initializer_list>
#include <vector>

// A test program cannot do anything useful after a CUDA error, so report where
// it happened and stop (exit status 1, the same as a failed check).
#define CUDA_CHECK(call)                                                       \
    do {                                                                       \
        cudaError_t cuda_check_err_ = (call);                                  \
        if (cuda_check_err_ != cudaSuccess) {                                  \
            std::fprintf(stderr, "%s:%d: CUDA error %s: %s\n", __FILE__,       \
                         __LINE__, cudaGetErrorName(cuda_check_err_),          \
                         cudaGetErrorString(cuda_check_err_));                 \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

namespace app {

// splitmix64: tiny, seedable and bit-identical everywhere (std::
// distributions are not), so a failing input can be regenerated exactly.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}

    uint64_t next_u64() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

    // Uniform in [lo, hi); 24 random bits is all a float mantissa can hold.
    float uniform(float lo, float hi) {
        const float u = static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f);
        return lo + (hi - lo) * u;
    }

    // Uniform in [lo, hi], inclusive. The modulo bias is negligible for the
    // small ranges used here.
    int64_t uniform_int(int64_t lo, int64_t hi) {
        const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
        return lo + static_cast<int64_t>(next_u64() % span);
    }

private:
    uint64_t state_;
};

inline void fill_uniform(std::vector<float>& v, float lo, float hi, uint64_t seed) {
    Rng rng(seed);
    for (float& e : v) e = rng.uniform(lo, hi);
}

template <typename T>
inline void fill_uniform_int(std::vector<T>& v, int64_t lo, int64_t hi, uint64_t seed) {
    Rng rng(seed);
    for (T& e : v) e = static_cast<T>(rng.uniform_int(lo, hi));
}

// Optional positional size argument argv[index]. Lets the same binary run the
// benchmark size by default and tiny edge cases (./app 7) on request; `max`
// keeps the app's int index arithmetic from overflowing.
inline size_t arg_size(int argc, char** argv, int index, size_t default_value,
                       size_t max_value) {
    if (index >= argc) return default_value;
    const char* s = argv[index];
    char* end = nullptr;
    const unsigned long long v =
        std::isdigit(static_cast<unsigned char>(s[0])) ? std::strtoull(s, &end, 10) : 0;
    if (end == nullptr || *end != '\0' || v == 0 || v > max_value) {
        std::fprintf(stderr, "%s: bad size argument '%s' (expected an integer in [1, %zu])\n",
                     argv[0], s, max_value);
        std::exit(2);
    }
    return static_cast<size_t>(v);
}

// The H200 has 60 MB of L2. Writing 256 MiB of scratch evicts whatever the
// previous run left there, so every timed launch reads its inputs from HBM,
// as it would inside a real pipeline.
constexpr size_t kL2FlushBytes = size_t(256) << 20;

inline void flush_l2(cudaStream_t stream) {
    static void* scratch = nullptr;  // allocated once, released at process exit
    if (scratch == nullptr) CUDA_CHECK(cudaMalloc(&scratch, kL2FlushBytes));
    CUDA_CHECK(cudaMemsetAsync(scratch, 0, kL2FlushBytes, stream));
}

constexpr int kWarmupRuns = 2;
constexpr int kTimedRuns = 20;

struct NoPrepare {
    void operator()() const {}
};

// Median time in ms of `launch()`, which must enqueue its kernel(s) on
// `stream`. `prepare()` runs before every launch, outside the timed region:
// it restores data the kernel updates in place (accumulators, in-place
// outputs) so every repetition does the same, valid work. The median rather
// than the mean keeps one slow outlier (clock ramp, preemption) out.
template <typename Launch, typename Prepare = NoPrepare>
float time_median_ms(cudaStream_t stream, Launch&& launch, Prepare&& prepare = Prepare{}) {
    for (int i = 0; i < kWarmupRuns; ++i) {
        prepare();
        launch();
        CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));

    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> times_ms;
    for (int i = 0; i < kTimedRuns; ++i) {
        prepare();
        flush_l2(stream);
        CUDA_CHECK(cudaEventRecord(start, stream));
        launch();
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop, stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times_ms.push_back(ms);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));

    std::sort(times_ms.begin(), times_ms.end());
    const size_t mid = times_ms.size() / 2;
    return times_ms.size() % 2 ? times_ms[mid] : 0.5f * (times_ms[mid - 1] + times_ms[mid]);
}

struct CompareResult {
    const char* what = "";  // name of the checked output, for the FAIL line
    size_t mismatches = 0;
    size_t first_index = 0;
    double expected = 0.0;
    double got = 0.0;
};

// Element i matches when |got - expected| <= atol + rtol * |expected|. The
// test is written so that NaN never matches. With atol = rtol = 0 it is an
// exact check, which is what integer outputs (histogram, scan) use.
template <typename Ref, typename Out>
CompareResult compare(const char* what, const Ref* expected, const Out* got, size_t n,
                      double atol, double rtol) {
    CompareResult r;
    r.what = what;
    for (size_t i = 0; i < n; ++i) {
        const double e = static_cast<double>(expected[i]);
        const double g = static_cast<double>(got[i]);
        if (!(std::fabs(g - e) <= atol + rtol * std::fabs(e))) {
            if (r.mismatches == 0) {
                r.first_index = i;
                r.expected = e;
                r.got = g;
            }
            ++r.mismatches;
        }
    }
    return r;
}

// Prints "<app>: PASS", or "<app>: FAIL ..." naming the first output that
// mismatched. Returns the process exit status (0 pass, 1 fail).
inline int print_verdict(const char* app_name, std::initializer_list<CompareResult> results) {
    for (const CompareResult& r : results) {
        if (r.mismatches != 0) {
            std::printf("%s: FAIL %s[%zu] expected %.9g got %.9g (%zu mismatches)\n", app_name,
                        r.what, r.first_index, r.expected, r.got, r.mismatches);
            return 1;
        }
    }
    std::printf("%s: PASS\n", app_name);
    return 0;
}

inline void print_timing(const char* app_name, const char* kernel_name, float median_ms) {
    std::printf("%s: kernel %s %.4f ms (median of %d, L2 flushed)\n", app_name, kernel_name,
                median_ms, kTimedRuns);
}

}  // namespace app
