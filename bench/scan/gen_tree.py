#!/usr/bin/env python3
"""Generate a deterministic tree of CUDA sources for the scan benchmark.

    bench/scan/gen_tree.py [--files 200] [--lines 300] [--seed 1] [--out DIR]

Writes DIR/src/<module>/<module>_NNN.cu (each about --lines lines, each
including <cuda_runtime.h>, some also <cstdio>, <cmath> and the tree's shared
header DIR/include/bench_common.cuh) and DIR/MANIFEST.json with the number of
kernels (__global__ function definitions; a template counts once, each
overload counts) and launch sites (each <<<...>>> and cudaLaunchKernel call as
written; one inside a template counts once) the tree holds, so a scan can be
checked against it. The same arguments always give the same bytes.
"""
import argparse
import json
import os
import random
import shutil
from string import Template

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "out", "scan-tree")
MODULES = ["optim", "vision", "audio", "physics", "finance", "graph", "sparse", "nlp", "stats", "geom"]

# The shared header: 1 kernel (a template) and 1 launch site, counted once
# however many files include it.
HEADER = """\
// bench_common.cuh: helpers shared by the generated benchmark sources.
#pragma once
#include <cuda_runtime.h>

#define KS_BENCH_CHECK(call)                                   \\
  do {                                                         \\
    cudaError_t ks_err_ = (call);                              \\
    if (ks_err_ != cudaSuccess) return (int)ks_err_;           \\
  } while (0)

struct KsLaunchDims {
  dim3 grid;
  dim3 block;
};

__host__ __device__ inline int ks_ceil_div(int a, int b) { return (a + b - 1) / b; }

inline KsLaunchDims ks_dims_1d(int n, int block) {
  KsLaunchDims d;
  d.block = dim3(block);
  d.grid = dim3(ks_ceil_div(n, block));
  return d;
}

__device__ __forceinline__ float ks_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T>
__device__ __forceinline__ T ks_clamp(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

template <typename T>
__global__ void ks_fill(T* __restrict__ p, T value, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    p[i] = value;
}

template <typename T>
inline void ks_fill_async(T* p, T value, int n, cudaStream_t stream) {
  ks_fill<T><<<ks_ceil_div(n, 256), 256, 0, stream>>>(p, value, n);
}
"""
HEADER_KERNELS, HEADER_LAUNCHES = 1, 1

# ---- kernel pieces ------------------------------------------------------------
# Each: (name, kernels, chevron launches, runtime-API launches, code, driver call).
# $k is the piece's unique name; $K the same in CamelCase.


def elementwise(r, k):
    block = r.choice([128, 256, 512])
    kind = r.choice(["saxpy", "relu", "sigmoid", "clamp", "stride"])
    helper, body = "", "y[i] = a * x[i] + y[i];"
    if kind == "relu":
        body = "y[i] = x[i] > 0.0f ? x[i] : a * x[i];"
    elif kind == "sigmoid":
        helper = ("__device__ __forceinline__ float ${k}_sigmoid(float v) {\n"
                  "  return 1.0f / (1.0f + __expf(-v));\n}\n\n")
        body = "y[i] = ${k}_sigmoid(a * x[i]);"
    elif kind == "clamp":
        helper = ("template <typename T>\n__device__ T ${k}_clamp(T v, T lo, T hi) {\n"
                  "  return v < lo ? lo : (v > hi ? hi : v);\n}\n\n")
        body = "y[i] = ${k}_clamp(x[i] * a, -1.0f, 1.0f);"
    if kind == "stride":
        kernel = """\
__global__ void $k(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = a * x[i] + y[i];
  }
}
"""
        grid = f"const int grid = (n + {block} - 1) / {block} > 1024 ? 1024 : (n + {block} - 1) / {block};"
    else:
        kernel = f"""\
__global__ void $k(int n, float a, const float* __restrict__ x, float* __restrict__ y) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {{
    {body}
  }}
}}
"""
        grid = f"const int grid = (n + {block} - 1) / {block};"
    code = helper + kernel + f"""
void ${{k}}_launch(int n, float a, const float* x, float* y, cudaStream_t stream) {{
  const int block = {block};
  {grid}
  $k<<<grid, block, 0, stream>>>(n, a, x, y);
}}
"""
    return 1, 1, 0, code, "${k}_launch(n, 0.5f, d_a, d_b, stream);"


def reduce_static(r, k):
    code = """\
__global__ void $k(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float buf[256];
  int tid = threadIdx.x;
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x)
    v += in[i];
  buf[tid] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s)
      buf[tid] += buf[tid + s];
    __syncthreads();
  }
  if (tid == 0)
    out[blockIdx.x] = buf[0];
}

// Two passes: per-block partial sums, then one block over the partials.
void ${k}_launch(const float* in, float* partial, float* out, int n, cudaStream_t stream) {
  const int threads = 256;
  int blocks = (n + threads - 1) / threads;
  if (blocks > 1024)
    blocks = 1024;
  $k<<<blocks, threads, 0, stream>>>(in, partial, n);
  $k<<<1, threads, 0, stream>>>(partial, out, blocks);
}
"""
    return 1, 2, 0, code, "${k}_launch(d_a, d_b, d_c, n, stream);"


def reduce_dynamic(r, k):
    code = """\
__global__ void $k(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float sdata[];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = i < n ? in[i] * in[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s)
      sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0)
    atomicAdd(out, sdata[0]);
}

void ${k}_launch(const float* in, float* out, int n, int block, cudaStream_t stream) {
  dim3 grid((n + block - 1) / block);
  size_t smem = block * sizeof(float);
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  $k<<<grid, block, smem, stream>>>(in, out, n);
}
"""
    return 1, 1, 0, code, f"${{k}}_launch(d_a, d_c, n, {r.choice([128, 256, 512])}, stream);"


def template_bounds(r, k):
    minb = r.choice(["", ", 2", ", 4"])
    code = f"""\
template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK{minb}) $k(const T* __restrict__ in, T* __restrict__ out, int n) {{
  __shared__ T tile[BLOCK];
  int tid = threadIdx.x;
  int i = blockIdx.x * BLOCK + tid;
  tile[tid] = i < n ? in[i] : in[0];
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {{
    if (tid < s && tile[tid + s] > tile[tid])
      tile[tid] = tile[tid + s];
    __syncthreads();
  }}
  if (tid == 0)
    out[blockIdx.x] = tile[0];
}}

template <typename T>
void ${{k}}_launch(const T* in, T* out, int n, cudaStream_t stream) {{
  constexpr int kBlock = 128;
  $k<kBlock, T><<<(n + kBlock - 1) / kBlock, kBlock, 0, stream>>>(in, out, n);
}}

void ${{k}}_launch_wide(const float* in, float* out, int n, cudaStream_t stream) {{
  $k<512, float><<<dim3((n + 511) / 512), dim3(512), 0, stream>>>(in, out, n);
}}
"""
    call = ("${k}_launch<float>(d_a, d_b, n, stream);\n"
            "${k}_launch<double>(d_d, d_d + n / 2, n / 2, stream);\n"
            "${k}_launch_wide(d_a, d_c, n, stream);")
    return 1, 2, 0, code, call


def namespaced(r, k):
    rows = r.choice([4, 8])
    code = f"""\
namespace $k {{
namespace detail {{
constexpr int kTile = 32;
constexpr int kRows = {rows};

__global__ void transpose(float* __restrict__ out, const float* __restrict__ in, int width, int height) {{
  __shared__ float tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < width && y + j < height)
      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  for (int j = 0; j < kTile; j += kRows)
    if (x < height && y + j < width)
      out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}}
}}  // namespace detail

void transpose(float* out, const float* in, int width, int height, cudaStream_t stream) {{
  dim3 block(detail::kTile, detail::kRows);
  dim3 grid((width + detail::kTile - 1) / detail::kTile, (height + detail::kTile - 1) / detail::kTile);
  detail::transpose<<<grid, block, 0, stream>>>(out, in, width, height);
}}
}}  // namespace $k
"""
    return 1, 1, 0, code, "${k}::transpose(d_m2, d_m1, m, m, stream);"


def stencil(r, k):
    code = """\
template <int RADIUS>
__global__ void $k(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float s[256 + 2 * RADIUS];
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + RADIUS;
  s[l] = g < n ? in[g] : 0.0f;
  if ((int)threadIdx.x < RADIUS) {
    s[l - RADIUS] = g >= RADIUS ? in[g - RADIUS] : 0.0f;
    s[l + 256] = g + 256 < n ? in[g + 256] : 0.0f;
  }
  __syncthreads();
  if (g < n) {
    float acc = 0.0f;
#pragma unroll
    for (int d = -RADIUS; d <= RADIUS; ++d)
      acc += s[l + d];
    out[g] = acc / (2 * RADIUS + 1);
  }
}

void ${k}_launch(const float* in, float* tmp, float* out, int n, cudaStream_t stream) {
  int blocks = (n + 255) / 256;
  $k<3><<<dim3(blocks), dim3(256)>>>(in, tmp, n);
  $k<1><<<blocks, 256, 0, stream>>>(tmp, out, n);
}
"""
    return 1, 2, 0, code, "${k}_launch(d_a, d_b, d_c, n, stream);"


def histogram(r, k):
    bins = r.choice([32, 64, 128])
    code = f"""\
__global__ void $k(const float* __restrict__ data, unsigned int* __restrict__ bins, int n, float lo, float hi) {{
  __shared__ unsigned int local[{bins}];
  for (int b = threadIdx.x; b < {bins}; b += blockDim.x)
    local[b] = 0;
  __syncthreads();
  float scale = {bins}.0f / (hi - lo);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {{
    int b = (int)((data[i] - lo) * scale);
    b = b < 0 ? 0 : (b > {bins - 1} ? {bins - 1} : b);
    atomicAdd(&local[b], 1u);
  }}
  __syncthreads();
  for (int b = threadIdx.x; b < {bins}; b += blockDim.x)
    atomicAdd(&bins[b], local[b]);
}}

void ${{k}}_launch(const float* data, unsigned int* bins, int n, cudaStream_t stream) {{
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaMemsetAsync(bins, 0, {bins} * sizeof(unsigned int), stream);
  $k<<<sms * 4, 256, 0, stream>>>(data, bins, n, -4.0f, 4.0f);
}}
"""
    return 1, 1, 0, code, "${k}_launch(d_a, d_u, n, stream);"


def softmax(r, k):
    wy = r.choice([2, 4, 8])
    code = f"""\
__device__ __forceinline__ float ${{k}}_warp_max(float v) {{
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}}

__device__ __forceinline__ float ${{k}}_warp_sum(float v) {{
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}}

// One warp per row.
__global__ void $k(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {{
  int row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= rows)
    return;
  const float* x = in + (size_t)row * cols;
  float* y = out + (size_t)row * cols;
  float m = -3.402823466e+38f;
  for (int c = threadIdx.x; c < cols; c += 32)
    m = fmaxf(m, x[c]);
  m = ${{k}}_warp_max(m);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32)
    s += __expf(x[c] - m);
  s = ${{k}}_warp_sum(s);
  for (int c = threadIdx.x; c < cols; c += 32)
    y[c] = __expf(x[c] - m) / s;
}}

void ${{k}}_launch(const float* in, float* out, int rows, int cols, cudaStream_t stream) {{
  dim3 block(32, {wy});
  dim3 grid((rows + block.y - 1) / block.y);
  $k<<<grid, block, 0, stream>>>(in, out, rows, cols);
}}
"""
    return 1, 1, 0, code, "${k}_launch(d_a, d_b, n / 128, 128, stream);"


def matmul(r, k):
    code = """\
template <int TILE>
__global__ void __launch_bounds__(TILE * TILE) $k(const float* A, const float* B, float* C, int N) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (N + TILE - 1) / TILE; ++t) {
    int ac = t * TILE + threadIdx.x;
    int br = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < N && ac < N) ? A[row * N + ac] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (br < N && col < N) ? B[br * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk)
      acc += As[threadIdx.y][kk] * Bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < N && col < N)
    C[row * N + col] = acc;
}

template <int TILE>
void ${k}_gemm(const float* A, const float* B, float* C, int N, cudaStream_t stream) {
  dim3 block(TILE, TILE);
  dim3 grid((N + TILE - 1) / TILE, (N + TILE - 1) / TILE);
  $k<TILE><<<grid, block, 0, stream>>>(A, B, C, N);
}
"""
    return 1, 1, 0, code, "${k}_gemm<16>(d_m1, d_m2, d_m3, m, stream);\n${k}_gemm<32>(d_m1, d_m2, d_m3, m, stream);"


def runtime_api(r, k):
    cast = r.choice(["(const void*)$k", "$k"])
    code = f"""\
__global__ void $k(float* x, float s, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] *= s;
}}

cudaError_t ${{k}}_launch(float* x, float s, int n, cudaStream_t stream) {{
  dim3 block(256);
  dim3 grid((n + 255) / 256);
  void* args[] = {{&x, &s, &n}};
  return cudaLaunchKernel({cast}, grid, block, args, 0, stream);
}}
"""
    return 1, 0, 1, code, "${k}_launch(d_c, 0.25f, n, stream);"


def method(r, k, cmath):
    inv = "(float)(1.0 / std::sqrt(var))" if cmath else "(float)(1.0 / var)"
    code = f"""\
__global__ void $k(float* __restrict__ x, int n, float mean, float inv_std) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = (x[i] - mean) * inv_std;
}}

struct ${{K}}Normalizer {{
  float mean = 0.0f;
  float inv_std = 1.0f;
  int block = 256;

  void fit(const float* host, int n) {{
    double s = 0.0, ss = 0.0;
    for (int i = 0; i < n; ++i) {{
      s += host[i];
      ss += (double)host[i] * host[i];
    }}
    double mu = n ? s / n : 0.0;
    double var = n ? ss / n - mu * mu : 1.0;
    mean = (float)mu;
    inv_std = var > 0.0 ? {inv} : 1.0f;
  }}

  void apply(float* x, int n, cudaStream_t stream) const {{
    $k<<<(n + block - 1) / block, block, 0, stream>>>(x, n, mean, inv_std);
  }}
}};
"""
    return 1, 1, 0, code, "{\n  ${K}Normalizer norm;\n  norm.fit(h, n);\n  norm.apply(d_a, n, stream);\n}"


def lambda_launch(r, k):
    code = """\
__global__ void $k(float* __restrict__ buf, int n, float start, float step) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    buf[i] = start + step * i;
}

void ${k}_fill_all(float* const* bufs, int count, int n, cudaStream_t stream) {
  const dim3 block(128);
  const dim3 grid((n + 127) / 128 > 512 ? 512 : (n + 127) / 128);
  auto enqueue = [&](float* buf, float start) {
    $k<<<grid, block, 0, stream>>>(buf, n, start, 0.5f);
  };
  for (int b = 0; b < count; ++b)
    enqueue(bufs[b], (float)b);
}
"""
    return 1, 1, 0, code, "{\n  float* bufs[2] = {d_b, d_c};\n  ${k}_fill_all(bufs, 2, n, stream);\n}"


def overloads(r, k):
    code = """\
__global__ void $k(float* __restrict__ y, const float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += x[i];
}

__global__ void $k(double* __restrict__ y, const double* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] += x[i];
}

void ${k}_launch(float* y, const float* x, double* yd, const double* xd, int n, cudaStream_t stream) {
  int grid = (n + 255) / 256;
  $k<<<grid, 256, 0, stream>>>(y, x, n);
  $k<<<grid, 256, 0, stream>>>(yd, xd, n);
}
"""
    return 2, 2, 0, code, "${k}_launch(d_b, d_a, d_d, d_d + n / 2, n / 2, stream);"


def anonymous(r, k):
    code = """\
namespace {
__global__ void $k(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = fmaf(a[i], b[i], c[i]);
}
}  // namespace

void ${k}_launch(const float* a, const float* b, float* c, int n, cudaStream_t stream) {
  $k<<<(n + 511) / 512, 512, 0, stream>>>(a, b, c, n);
}
"""
    return 1, 1, 0, code, "${k}_launch(d_a, d_b, d_c, n, stream);"


def uses_header(r, k):
    code = """\
__global__ void $k(const float* __restrict__ in, float* __restrict__ out, int n) {
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += ks_clamp(in[i], -8.0f, 8.0f);
  v = ks_warp_sum(v);
  if ((threadIdx.x & 31) == 0)
    atomicAdd(out, v);
}

void ${k}_launch(const float* in, float* out, int n, cudaStream_t stream) {
  KsLaunchDims d = ks_dims_1d(n, 256);
  ks_fill_async<float>(out, 0.0f, 1, stream);
  $k<<<d.grid, d.block, 0, stream>>>(in, out, n);
}
"""
    return 1, 1, 0, code, "${k}_launch(d_a, d_c, n, stream);"


KERNEL_PIECES = [  # (generator, weight, base names)
    (elementwise, 4, ["saxpy", "axpy", "blend", "activate", "update", "scale_add"]),
    (reduce_static, 2, ["block_sum", "total", "accumulate"]),
    (reduce_dynamic, 2, ["sum_squares", "energy", "norm2"]),
    (template_bounds, 3, ["tiled_max", "block_max", "peak"]),
    (namespaced, 2, ["layout", "xpose", "tiles"]),
    (stencil, 2, ["stencil", "smooth", "box_filter"]),
    (histogram, 2, ["histogram", "bucketize", "binning"]),
    (softmax, 2, ["softmax", "row_softmax", "normalize_rows"]),
    (matmul, 2, ["matmul", "gemm_tiled", "mm"]),
    (runtime_api, 1, ["rescale", "scale_rt", "mul_scalar"]),
    (method, 1, ["standardize", "zscore", "whiten"]),
    (lambda_launch, 1, ["iota", "ramp", "fill_linear"]),
    (overloads, 1, ["add_into", "accumulate_into", "plus_eq"]),
    (anonymous, 1, ["fma3", "fused_mul_add", "madd"]),
]

# ---- host-only pieces (no kernels, no launches) ---------------------------------


def host_piece(r, k, kind, cstdio, cmath):
    if kind == 0:
        return f"""\
void $k(const float* x, float* y, int n, float a) {{
  // CPU reference for checking the device results.
  for (int i = 0; i < n; ++i) {{
    y[i] = a * x[i] + y[i];
  }}
}}
"""
    if kind == 1:
        report = ('      if (bad < 5)\n        printf("mismatch at %d: %f vs %f\\n", i, expected[i], actual[i]);\n'
                  if cstdio else "")
        return f"""\
int $k(const float* expected, const float* actual, int n, float tol) {{
  int bad = 0;
  for (int i = 0; i < n; ++i) {{
    float d = expected[i] - actual[i];
    if (d < 0.0f)
      d = -d;
    if (d > tol) {{
{report}      ++bad;
    }}
  }}
  return bad;
}}
"""
    if kind == 2:
        return f"""\
struct ${{K}}Config {{
  int n = 1 << {r.randrange(16, 24)};
  int block = {r.choice([128, 256, 512])};
  int iterations = {r.randrange(3, 50)};
  bool verbose = false;

  int grid() const {{ return (n + block - 1) / block; }}
  size_t bytes() const {{ return (size_t)n * sizeof(float); }}
  bool valid() const {{ return n > 0 && block > 0 && block <= 1024 && (block % 32) == 0; }}
}};
"""
    if kind == 3:
        sd = "std::sqrt(variance())" if cmath else "variance()"
        return f"""\
struct ${{K}}Stats {{
  long count = 0;
  double mean = 0.0;
  double m2 = 0.0;
  double lo = 1e300;
  double hi = -1e300;

  void add(double x) {{
    ++count;
    double delta = x - mean;
    mean += delta / count;
    m2 += delta * (x - mean);
    if (x < lo)
      lo = x;
    if (x > hi)
      hi = x;
  }}
  double variance() const {{ return count > 1 ? m2 / (count - 1) : 0.0; }}
  double spread() const {{ return {sd}; }}
}};
"""
    if kind == 4:
        return """\
const char* $k(cudaError_t e) {
  switch (e) {
  case cudaSuccess:
    return "success";
  case cudaErrorInvalidValue:
    return "invalid value";
  case cudaErrorMemoryAllocation:
    return "out of memory";
  case cudaErrorInvalidConfiguration:
    return "invalid configuration";
  default:
    return cudaGetErrorString(e);
  }
}
"""
    if kind == 5:
        return f"""\
void $k(float* h, int n, unsigned seed) {{
  // A linear congruential generator: the same inputs on every run.
  unsigned s = seed;
  for (int i = 0; i < n; ++i) {{
    s = s * 1664525u + 1013904223u;
    h[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }}
}}
"""
    return """\
float $k(void (*step)(cudaStream_t), cudaStream_t stream, int reps) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  for (int r = 0; r < reps; ++r)
    step(stream);
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return reps > 0 ? ms / reps : 0.0f;
}
"""


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def driver(prefix, calls, cstdio):
    body = "\n".join("  " + line if line.strip() else "" for c in calls for line in c.split("\n"))
    done = ('  if (err != cudaSuccess)\n    printf("%s: %s\\n", "' + prefix + '", cudaGetErrorString(err));\n'
            if cstdio else "")
    return f"""\
// Runs every kernel of this file once on n elements and m x m matrices.
int {prefix}_run(int n, int m, cudaStream_t stream) {{
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  float *d_m1 = nullptr, *d_m2 = nullptr, *d_m3 = nullptr;
  double* d_d = nullptr;
  unsigned int* d_u = nullptr;
  size_t bytes = (size_t)n * sizeof(float);
  size_t mbytes = (size_t)m * m * sizeof(float);
  cudaMalloc(&d_a, bytes);
  cudaMalloc(&d_b, bytes);
  cudaMalloc(&d_c, bytes);
  cudaMalloc(&d_m1, mbytes);
  cudaMalloc(&d_m2, mbytes);
  cudaMalloc(&d_m3, mbytes);
  cudaMalloc(&d_d, (size_t)n * sizeof(double));
  cudaMalloc(&d_u, 256 * sizeof(unsigned int));
  float* h = new float[n];
  for (int i = 0; i < n; ++i)
    h[i] = (float)(i % 97) * 0.01f;
  cudaMemcpyAsync(d_a, h, bytes, cudaMemcpyHostToDevice, stream);

{body}

  cudaError_t err = cudaStreamSynchronize(stream);
{done}  cudaMemcpy(h, d_c, bytes, cudaMemcpyDeviceToHost);
  delete[] h;
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_c);
  cudaFree(d_m1);
  cudaFree(d_m2);
  cudaFree(d_m3);
  cudaFree(d_d);
  cudaFree(d_u);
  return err == cudaSuccess ? 0 : 1;
}}
"""


def lines(text):
    return text.count("\n")


def gen_file(seed, idx, target_lines):
    r = random.Random(f"{seed}-{idx}")  # str seeds hash the same on every run
    module = MODULES[idx % len(MODULES)]
    prefix = f"{module}_{idx:03d}"
    cstdio, cmath, common = r.random() < 0.5, r.random() < 0.4, r.random() < 0.4
    head = [f"// {prefix}.cu: generated by bench/scan/gen_tree.py (seed {seed}); do not edit.",
            "#include <cuda_runtime.h>"]
    head += ["#include <cstdio>"] * cstdio + ["#include <cmath>"] * cmath
    head += ['#include "../../include/bench_common.cuh"'] * common
    parts, calls, used = ["\n".join(head) + "\n"], [], set()
    kernels = chevrons = runtime = 0
    pieces = [p for p in KERNEL_PIECES]
    weights = [w for _, w, _ in pieces]
    driver_lines = 45
    nkernel_pieces = r.randint(7, 10)
    for j in range(nkernel_pieces + common):
        if j == nkernel_pieces:  # the file's use of the shared header
            gen, base = uses_header, "warp_total"
        else:
            gen, _, names = r.choices(pieces, weights)[0]
            base = r.choice(names)
        name = f"{prefix}_{base}"
        while name in used:
            name += "_v2"
        used.add(name)
        args = (r, name, cmath) if gen is method else (r, name)
        nk, nc, nr, code, call = gen(*args)
        subst = {"k": name, "K": camel(name)}
        parts.append(Template(code).substitute(subst))
        calls.append(Template(call).substitute(subst))
        kernels, chevrons, runtime = kernels + nk, chevrons + nc, runtime + nr
        if sum(map(lines, parts)) + len(parts) + driver_lines + len(calls) * 2 > target_lines:
            break
    n_host, host_kinds = 0, r.sample(range(7), 7)
    while sum(map(lines, parts)) + len(parts) + driver_lines + sum(map(lines, calls)) < target_lines - 8:
        name = f"{prefix}_host{n_host}"
        n_host += 1
        parts.append(Template(host_piece(r, name, host_kinds[(n_host - 1) % 7], cstdio, cmath)).substitute(k=name, K=camel(name)))
    parts.append(driver(prefix, calls, cstdio))
    text = "\n".join(parts)
    return (os.path.join("src", module, prefix + ".cu"), text,
            {"kernels": kernels, "launches_chevron": chevrons, "launches_runtime_api": runtime,
             "includes_common_header": common})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--lines", type=int, default=300, help="about this many lines per file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "include"))
    with open(os.path.join(out, "include", "bench_common.cuh"), "w") as f:
        f.write(HEADER)
    per_file, total_lines = [], 0
    kernels, chevrons, runtime = HEADER_KERNELS, HEADER_LAUNCHES, 0
    for i in range(a.files):
        path, text, counts = gen_file(a.seed, i, a.lines)
        os.makedirs(os.path.dirname(os.path.join(out, path)), exist_ok=True)
        with open(os.path.join(out, path), "w") as f:
            f.write(text)
        n = lines(text)
        total_lines += n
        kernels += counts["kernels"]
        chevrons += counts["launches_chevron"]
        runtime += counts["launches_runtime_api"]
        per_file.append({"path": path, "lines": n, "kernels": counts["kernels"],
                         "launches": counts["launches_chevron"] + counts["launches_runtime_api"],
                         "includes_common_header": counts["includes_common_header"]})
    manifest = {
        "generator": "bench/scan/gen_tree.py", "seed": a.seed, "files": a.files,
        "lines_per_file_target": a.lines, "lines_total": total_lines,
        "kernels": kernels, "launches": chevrons + runtime,
        "launches_chevron": chevrons, "launches_runtime_api": runtime,
        "header": {"path": "include/bench_common.cuh", "kernels": HEADER_KERNELS,
                   "launches": HEADER_LAUNCHES,
                   "included_by": sum(f["includes_common_header"] for f in per_file)},
        "per_file": per_file,
    }
    with open(os.path.join(out, "MANIFEST.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{out}: {a.files} .cu files, {total_lines} lines "
          f"({total_lines // max(a.files, 1)} per file), {kernels} kernels, "
          f"{chevrons + runtime} launch sites ({chevrons} <<<>>>, {runtime} cudaLaunchKernel), "
          f"seed {a.seed}")


if __name__ == "__main__":
    main()
