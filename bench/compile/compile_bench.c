/* NVRTC compile throughput of the compile service: N distinct variants of a
 * realistic kernel (a vectorized, unrolled elementwise kernel with a device
 * helper), compiled with no cache on every core, as the search does.
 *
 *   compile_bench [N] [THREADS]   (defaults: 160, one per CPU)
 *
 * Prints one line of JSON: variants, threads, seconds, variants per second. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ks_compile.h"

static const char body[] =
    "__device__ __forceinline__ float act(float x) {\n"
    "  float c = 0.044715f * x * x * x;\n"
    "  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + c)));\n"
    "}\n"
    "__global__ void __launch_bounds__(%d) k_%d(float *__restrict__ out,\n"
    "                                        const float *__restrict__ in, int n) {\n"
    "  int i = (blockIdx.x * blockDim.x + threadIdx.x) * %d;\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < %d; u++)\n"
    "    if (i + u < n) out[i + u] = act(in[i + u]) * %d.0f;\n"
    "}\n";

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 160;
  int threads = argc > 2 ? atoi(argv[2]) : 0;
  ks_ctx ctx;
  ks_ctx_init(&ctx, "compile_bench");
  ks_compiler c;
  if (n <= 0 || ks_compiler_init(&ctx, &c, "sm_90", NULL)) {
    fprintf(stderr, "compile_bench: %s\n", n <= 0 ? "N must be positive" : ctx.error);
    return 1;
  }
  c.threads = (unsigned)threads;
  ks_arena arena = KS_ARENA_INIT;
  ks_compile_unit *units = ks_arena_alloc(&arena, (size_t)n * sizeof *units);
  const char **names = ks_arena_alloc(&arena, (size_t)n * sizeof *names);
  static const int blocks[] = {128, 256, 512, 1024};
  for (int i = 0; i < n; i++) {
    int unroll = 1 << (i % 4);
    char *src = ks_arena_printf(&arena, body, blocks[i / 4 % 4], i, unroll, unroll, i + 1);
    names[i] = ks_arena_printf(&arena, "k_%d", i);
    units[i] = (ks_compile_unit){.name = ks_arena_printf(&arena, "v%d.cu", i),
                                 .source = src,
                                 .name_expressions = &names[i],
                                 .nnames = 1,
                                 .candidate = src};
  }
  ks_compile_result *res = ks_arena_alloc(&arena, (size_t)n * sizeof *res);
  double t0 = now();
  int rc = ks_compile(&ctx, &c, units, (size_t)n, &arena, res);
  double secs = now() - t0;
  int ok = 0;
  for (int i = 0; i < n; i++)
    ok += res[i].status == KS_COMPILE_OK;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  printf("{\"benchmark\": \"nvrtc_compile\", \"variants\": %d, \"compiled\": %d, \"threads\": %ld, "
         "\"seconds\": %.3f, \"variants_per_second\": %.1f}\n",
         n, ok, threads ? (long)threads : cpus, secs, n / secs);
  ks_arena_release(&arena);
  ks_compiler_release(&c);
  ks_ctx_release(&ctx);
  return rc || ok != n;
}
