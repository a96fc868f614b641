/* ceilings: the two kernels that measure what a device can do at best, as
 * CUDA source the main process compiles (NVRTC) for the device at hand and
 * sends to the worker (ks_worker_ceilings). Reports put each variant's
 * bandwidth and FLOP rate against these measured ceilings rather than the
 * datasheet's, which no real kernel reaches.
 *
 * ks_copy: a grid-stride float4 copy, the pattern that came closest to the
 * device-to-device copy rate on the H200 (DESIGN.md, "Known ground").
 * ks_fma: KS_CEILING_FMA_CHAINS independent fmaf chains per thread, so that
 * FMA latency is hidden by instruction-level parallelism as well as by
 * warps; the seeds depend on threadIdx and the trip count is a parameter,
 * so the compiler can neither fold the loop nor drop it (the result is
 * stored). */
#include "ks_wire.h"
#include "ks_worker.h"

#define KS_STR_(x) #x
#define KS_STR(x) KS_STR_(x)

_Static_assert(KS_CEILING_FMA_CHAINS == 8, "ks_fma below spells out 8 chains");

const char ks_ceiling_kernels[] =
    "extern \"C\" __global__ void ks_copy(const float4 *in, float4 *out, size_t n) {\n"
    "  size_t stride = (size_t)gridDim.x * blockDim.x;\n"
    "  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)\n"
    "    out[i] = in[i];\n"
    "}\n"
    "\n"
    "/* " KS_STR(KS_CEILING_FMA_CHAINS) " independent chains: 2 FLOPs each per iteration. */\n"
    "extern \"C\" __global__ void ks_fma(float *out, int iters) {\n"
    "  float t = threadIdx.x * 1e-6f;\n"
    "  float a0 = t, a1 = t + 1e-3f, a2 = t + 2e-3f, a3 = t + 3e-3f;\n"
    "  float a4 = t + 4e-3f, a5 = t + 5e-3f, a6 = t + 6e-3f, a7 = t + 7e-3f;\n"
    "  const float m = 0.9999f, c = 1e-4f;\n"
    "  #pragma unroll 4\n"
    "  for (int i = 0; i < iters; i++) {\n"
    "    a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);\n"
    "    a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);\n"
    "  }\n"
    "  out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
    "}\n";
