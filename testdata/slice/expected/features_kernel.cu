// kernelsmith-cc extract: features_kernel from TESTDATA/slice/features.cu
#define FEATURE_SCALE 2.0f
#line 6 "TESTDATA/slice/include/features.cuh"
#define FEAT_EPS 1e-6f
#line 7 "TESTDATA/slice/include/features.cuh"
#define FEAT_SAFE_DIV(a, b) ((a) / ((b) + FEAT_EPS))
namespace feat {
#line 11 "TESTDATA/slice/include/features.cuh"
template <typename T>
struct Vec2 {
  T x, y;
  __device__ T dot(const Vec2 &o) const;
};
#line 17 "TESTDATA/slice/include/features.cuh"
template <typename T>
__device__ T Vec2<T>::dot(const Vec2 &o) const {
  return x * o.x + y * o.y;
}
#line 22 "TESTDATA/slice/include/features.cuh"
__device__ inline float norm2(Vec2<float> v) { return v.dot(v); }
#line 13 "TESTDATA/slice/features.cu"
#define TILE 32
#line 14 "TESTDATA/slice/features.cu"
#define HALF_TILE (TILE / 2)
#line 15 "TESTDATA/slice/features.cu"
#define SQUARE(x) ((x) * (x))
} // namespace feat
#line 20 "TESTDATA/slice/features.cu"
__device__ float defined_later(float x);
#line 22 "TESTDATA/slice/features.cu"
__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
#line 24 "TESTDATA/slice/features.cu"
__constant__ float coefficients[4] = {1.0f, 0.5f, 0.25f, 0.125f};
#line 26 "TESTDATA/slice/features.cu"
enum class Mode { Add, Mul };
namespace {
#line 29 "TESTDATA/slice/features.cu"
__device__ int bump(int x) { return x + 1; }
} // namespace (anonymous)
#line 32 "TESTDATA/slice/features.cu"
struct Accum {
  float total;
  Accum() = default;
   // host only: not in the slice
   // host only
  __device__ void add(float v) { total += v; }
  __host__ __device__ float get() const { return total; }
};
#line 41 "TESTDATA/slice/features.cu"
template <typename T>
struct Width {
  static constexpr int value = 1;
};
#line 45 "TESTDATA/slice/features.cu"
template <>
struct Width<double> {
  static constexpr int value = 2;
};
#line 50 "TESTDATA/slice/features.cu"
typedef struct {
  float x, y;
} Point;
#line 54 "TESTDATA/slice/features.cu"
using namespace feat;
#line 56 "TESTDATA/slice/features.cu"
__global__ void features_kernel(float *out, const Point *pts, int n, Mode mode) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  Accum acc;
  acc.total = 0.0f;
  Vec2<float> v{pts[i].x, pts[i].y};
  acc.add(norm2(v) * coefficients[i % 4]);
  acc.add(FEAT_SAFE_DIV(SQUARE(pts[i].x), HALF_TILE));
  acc.add(defined_later(float(bump(i))) * ceil_div(n, TILE));
  out[i] = mode == Mode::Add ? acc.get() + Width<double>::value : acc.get() * FEATURE_SCALE;
}
#line 69 "TESTDATA/slice/features.cu"
__device__ float defined_later(float x) { return x * 0.5f; }
// name expression: features_kernel
