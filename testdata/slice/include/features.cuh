// A header with device code in a namespace: a class template whose member
// is defined outside it, and a macro the kernel expands inside another.
#pragma once
#include <cuda_runtime.h>

#define FEAT_EPS 1e-6f
#define FEAT_SAFE_DIV(a, b) ((a) / ((b) + FEAT_EPS))

namespace feat {

template <typename T>
struct Vec2 {
  T x, y;
  __device__ T dot(const Vec2 &o) const;
};

template <typename T>
__device__ T Vec2<T>::dot(const Vec2 &o) const {
  return x * o.x + y * o.y;
}

__device__ inline float norm2(Vec2<float> v) { return v.dot(v); }

} // namespace feat
