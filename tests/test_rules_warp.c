/* The warp rules (passes/rules/rules_warp_rows.c and rules_warp_reduce.c): warp_rows, warp_reduce and
 * warp_atomic on the kernels of testdata/apps and on kernels written here
 * for what the apps do not cover (a sum that does not start at zero, an
 * if/else of stores, a running sum, an in-place prefix sum, a max tree with
 * blockDim.x, atomics whose value is used), and reduce_stride, the
 * grid-stride accumulation in front of a block or warp sum. For each: applied or not, with
 * the reason; the text that matters in the rewrite; the launch policy and
 * guards resolved on every size set; the child compiled by NVRTC for sm_90
 * after the slice, as the judge compiles it; and compositions with the
 * rules that run before (restrict, unroll, block, launch_bounds). No GPU:
 * what the rewrites compute is argued in docs/rules.md and checked on the
 * GPU by the judge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ks_compile.h"
#include "ks_rules.h"
#include "ks_target.h"
#include "ks_test.h"

/* ---- kernels the apps do not have ------------------------------------------ */

static const char rows_cu[] =
    "// One thread per row, in shapes the apps do not have.\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   size one:   rows = 1, cols = 1\n"
    " *   in    x[rows * cols] uniform(-1, 1)\n"
    " *   in    k[rows * cols] int(-5, 100)\n"
    " *   out   y[rows]\n"
    " *   out   kmax[rows]\n"
    " *   inout total[1] const(0) tol(atol = 1e-3, rtol = 1e-4)\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_stats(const float *x, const int *k, float *y, int *kmax, float *total,\n"
    "                          int rows, int cols) {\n"
    "  int r = threadIdx.x + blockIdx.x * blockDim.x;\n"
    "  if (r >= rows)\n"
    "    return;\n"
    "  float s = x[(size_t)r * cols];\n"
    "  int best = -1;\n"
    "  for (int c = 1; c < cols; c++) {\n"
    "    s = s + x[(size_t)r * cols + c];\n"
    "    best = max(best, k[(size_t)r * cols + c]);\n"
    "  }\n"
    "  if (cols > 1) y[r] = s; else y[r] = 0.0f;\n"
    "  kmax[r] = best;\n"
    "  atomicAdd(total, s);\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   in  x[rows * cols] uniform(-1, 1)\n"
    " *   out y[rows * cols]\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_running_sum(const float *x, float *y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row < rows) {\n"
    "    float run = 0.0f;\n"
    "    for (int c = 0; c < cols; ++c) {\n"
    "      run += x[row * cols + c];\n"
    "      y[row * cols + c] = run;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   inout y[rows * cols] uniform(-1, 1)\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_prefix_in_place(float *y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row < rows)\n"
    "    for (int c = 1; c < cols; ++c) y[row * cols + c] += y[row * cols + c - 1];\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   inout data[rows * cols] uniform(-4, 4)\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void softmax_in_place(float *data, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  float *x = data + (size_t)row * cols;\n"
    "  float m = -3.0e38f;\n"
    "  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);\n"
    "  float s = 0.0f;\n"
    "  for (int c = 0; c < cols; ++c) {\n"
    "    x[c] = expf(x[c] - m);\n"
    "    s += x[c];\n"
    "  }\n"
    "  for (int c = 0; c < cols; ++c) x[c] /= s;\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   inout data[rows * cols] uniform(-4, 4)\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void fill_after_first(float *data, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  float *x = data + (size_t)row * cols;\n"
    "  float s = 0.0f;\n"
    "  for (int c = 0; c < cols; ++c) s += x[c];\n"
    "  for (int c = 1; c < cols; ++c) x[c] = s;\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 2048\n"
    " *   size odd:   n = 37\n"
    " *   in  a[n * n] uniform(-1, 1)\n"
    " *   in  x[n] uniform(-1, 1)\n"
    " *   inout y[n] uniform(-1, 1)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void row_accumulate_global(float *a, float *x, float *y, int n)\n"
    "{\n"
    "\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "\tif (i < n)\n"
    "\t{\n"
    "\t\tint j;\n"
    "\t\tfor (j = 0; j < n; j++)\n"
    "\t\t\ty[i] += a[i * n + j] * x[j];\n"
    "\t}\n"
    "}\n"
    "\n"
    "/* A maximum written as an if, double accumulators (llm.c's naive softmax). */\n"
    "/* kernelsmith:\n"
    " *   size timed: N = 4096, C = 300\n"
    " *   size odd:   N = 37, C = 33\n"
    " *   in  inp[N * C] uniform(-4, 4)\n"
    " *   out out[N * C]\n"
    " *   launch grid = ceil_div(N, 128), block = 128\n"
    " */\n"
    "__global__ void softmax_if_max(float* out, const float* inp, int N, int C) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < N) {\n"
    "        const float* inp_row = inp + i * C;\n"
    "        float* out_row = out + i * C;\n"
    "        double maxval = -INFINITY;\n"
    "        for (int j = 0; j < C; j++) {\n"
    "            if (inp_row[j] > maxval) {\n"
    "                maxval = inp_row[j];\n"
    "            }\n"
    "        }\n"
    "        double sum = 0.0;\n"
    "        for (int j = 0; j < C; j++) {\n"
    "            out_row[j] = expf(inp_row[j] - maxval);\n"
    "            sum += out_row[j];\n"
    "        }\n"
    "        for (int j = 0; j < C; j++) {\n"
    "            out_row[j] /= (float)sum;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   in  x[rows * cols] uniform(-1, 1)\n"
    " *   out y[rows]\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_min_if(const float *x, float *y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  float lo = 3.0e38f;\n"
    "  for (int c = 0; c < cols; c++) if (lo > x[row * cols + c]) lo = x[row * cols + c];\n"
    "  y[row] = lo;\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   in  x[rows * cols] uniform(-1, 1)\n"
    " *   out y[rows]\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_if_other(const float *x, float *y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  float m = 0.0f;\n"
    "  for (int c = 0; c < cols; c++) if (x[row * cols + c] > m) m = 2.0f * x[row * cols + c];\n"
    "  y[row] = m;\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: rows = 4096, cols = 300\n"
    " *   size odd:   rows = 37, cols = 33\n"
    " *   in  x[rows * cols] uniform(-1, 1)\n"
    " *   out y[rows]\n"
    " *   launch grid = ceil_div(rows, 128), block = 128\n"
    " */\n"
    "__global__ void row_even_columns(const float *x, float *y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row >= rows) return;\n"
    "  float s = 0.0f;\n"
    "  for (int c = 0; c < cols; c += 2) s += x[row * cols + c];\n"
    "  y[row] = s;\n"
    "}\n";

static const char reduce_cu[] =
    "// A block's maximum, the classic halving tree over blockDim.x.\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 20\n"
    " *   size odd:   n = 12345\n"
    " *   size one:   n = 1\n"
    " *   in  x[n] uniform(-1, 1)\n"
    " *   out out[ceil_div(n, 256)]\n"
    " *   launch grid = ceil_div(n, 256), block = 256, smem = 256 * sizeof(float)\n"
    " */\n"
    "__global__ void block_max(const float *x, float *out, int n) {\n"
    "  extern __shared__ float buf[];\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  buf[threadIdx.x] = i < n ? x[i] : -3.0e38f;\n"
    "  __syncthreads();\n"
    "  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "    if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] = buf[0];\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 20\n"
    " *   size odd:   n = 12345\n"
    " *   in  x[n] uniform(-1, 1)\n"
    " *   out pairs[ceil_div(n, 128)]\n"
    " *   launch grid = ceil_div(n, 128), block = 128\n"
    " */\n"
    "__global__ void block_first_two(const float *x, float *pairs, int n) {\n"
    "  __shared__ float buf[128];\n"
    "  int tid = threadIdx.x;\n"
    "  int i = blockIdx.x * 128 + tid;\n"
    "  buf[tid] = i < n ? x[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  for (int s = 128 / 2; s > 0; s >>= 1) {\n"
    "    if (tid < s) buf[tid] += buf[tid + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (tid == 0) pairs[blockIdx.x] = buf[0] + buf[1];\n"
    "}\n";

static const char atomics_cu[] =
    "// Atomics on one address per warp, on data-dependent addresses, and one\n"
    "// whose old value is used.\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 20\n"
    " *   size odd:   n = 12345\n"
    " *   size one:   n = 1\n"
    " *   in    x[n] uniform(-1, 1)\n"
    " *   inout count[1] const(0)\n"
    " *   inout total[1] const(0) tol(atol = 1e-2, rtol = 1e-4)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void count_positive(const float *x, int *count, float *total, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n && x[i] > 0.0f) atomicAdd(count, 1);\n"
    "  if (i < n)\n"
    "    atomicAdd(total, x[i]);\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 20\n"
    " *   size odd:   n = 12345\n"
    " *   in    key[n] int(0, 63)\n"
    " *   in    w[n] int(0, 9)\n"
    " *   inout bins[64] const(0)\n"
    " *   inout counts[64] const(0)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void weighted_histogram(const int *key, const int *w, int *bins, unsigned *counts,\n"
    "                                   int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) {\n"
    "    atomicAdd(&bins[key[i]], w[i]);\n"
    "    atomicAdd(counts + key[i], 2u);\n"
    "  }\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 20\n"
    " *   size odd:   n = 12345\n"
    " *   in    x[n] uniform(-1, 1)\n"
    " *   out   kept[n]\n"
    " *   inout counter[1] const(0)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void compact_positive(const float *x, float *kept, int *counter, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n && x[i] > 0.0f) {\n"
    "    int slot = atomicAdd(counter, 1);\n"
    "    kept[slot] = x[i];\n"
    "  }\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 22\n"
    " *   size odd:   n = 1001\n"
    " *   in    x[n] uniform(0, 1)\n"
    " *   inout total[1] const(0) tol(atol = 1e-3, rtol = 1e-4)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void warp_sum(const float *x, float *total, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float v = i < n ? x[i] : 0.0f;\n"
    "  for (int off = 16; off > 0; off /= 2)\n"
    "    v += __shfl_down_sync(0xffffffffu, v, off);\n"
    "  if ((threadIdx.x & 31) == 0)\n"
    "    atomicAdd(total, v);\n"
    "}\n"
    "\n"
    "/* kernelsmith:\n"
    " *   size timed: n = 1 << 22\n"
    " *   size odd:   n = 1001\n"
    " *   in    x[n] int(0, 1000)\n"
    " *   inout peak[1] const(0)\n"
    " *   launch grid = ceil_div(n, 256), block = 256\n"
    " */\n"
    "__global__ void warp_peak(const int *x, int *peak, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  int v = i < n ? x[i] : 0;\n"
    "  for (int off = 16; off > 0; off /= 2)\n"
    "    v = max(v, __shfl_down_sync(0xffffffffu, v, off));\n"
    "  if ((threadIdx.x & 31) == 0)\n"
    "    atomicMax(peak, v);\n"
    "}\n";

/* ---- fixtures -------------------------------------------------------------- */

typedef struct corpus {
  const char *path;
  ks_scan_options opts;
  ks_scan scan;
} corpus;

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;
static corpus apps, mine;
static char mine_dir[64];
static ks_compiler compiler;
static const char *const mine_files[] = {"rows.cu", "reduce.cu", "atomics.cu"};

static int write_file(const char *dir, const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

static int open_corpus(corpus *c, const char *path) {
  c->path = ks_arena_strdup(&arena, path);
  c->opts = (ks_scan_options){.paths = &c->path, .npaths = 1, .no_compdb = true};
  if (ks_scan_run(&ctx, &c->opts, &c->scan)) {
    fprintf(stderr, "setup: scan %s: %s\n", path, ctx.error);
    return -1;
  }
  return 0;
}

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_rules_warp");
  ctx.verbosity = KS_LOG_ERROR;
  snprintf(mine_dir, sizeof mine_dir, "/tmp/ks-test-rules-warp-XXXXXX");
  if (!mkdtemp(mine_dir))
    return -1;
  const char *texts[] = {rows_cu, reduce_cu, atomics_cu};
  for (size_t i = 0; i < 3; i++)
    if (write_file(mine_dir, mine_files[i], texts[i]))
      return -1;
  if (open_corpus(&apps, ks_testdata("apps")) || open_corpus(&mine, mine_dir))
    return -1;
  if (ks_compiler_init(&ctx, &compiler, "sm_90", NULL)) {
    fprintf(stderr, "setup: %s\n", ctx.error);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < 3; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", mine_dir, mine_files[i]);
    remove(path);
  }
  rmdir(mine_dir);
  ks_scan_release(&apps.scan);
  ks_scan_release(&mine.scan);
  ks_compiler_release(&compiler);
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

/* cmocka cuts long messages: the whole text goes to stderr first. */
#define fail_long(...)                                                         \
  do {                                                                         \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
    fail_msg("see above");                                                     \
  } while (0)

/* ---- applying rules ---------------------------------------------------------- */

static ks_target *open_target(corpus *c, const char *name) {
  const ks_kernel *k = NULL;
  ks_target *t = ks_arena_alloc(&arena, sizeof *t);
  if (ks_scan_lookup(&ctx, &c->scan, name, &k) ||
      ks_target_open_kernel(&ctx, &c->opts, &c->scan, k, &arena, t))
    fail_msg("%s: %s", name, ctx.error);
  return t;
}

/* The outcome of the last step of a chain of rules ("restrict",
 * "warp_rows=256") applied to `t` from its seed; every step before it must
 * apply. */
typedef struct outcome {
  ks_rule_result res;
  bool is_template;
} outcome;

static outcome apply_chain(const ks_target *t, const char *chain) {
  outcome o = {0};
  ks_variant parent;
  if (ks_rules_seed(&ctx, t, &arena, &parent, &o.is_template))
    fail_msg("seed: %s", ctx.error);
  char *steps = ks_arena_strdup(&arena, chain);
  for (char *step = strtok(steps, " "); step; step = strtok(NULL, " ")) {
    char *eq = strchr(step, '=');
    int param = 0;
    if (eq) {
      *eq = '\0';
      param = atoi(eq + 1);
    }
    const ks_rule *r = ks_rule_find(step);
    if (!r)
      fail_msg("no rule %s", step);
    ks_rule_input in;
    if (ks_rules_prepare(&ctx, t, &parent, o.is_template, &arena, &in))
      fail_long("%s: the parent does not parse: %s\n%s", chain, ctx.error, parent.source);
    memset(&o.res, 0, sizeof o.res);
    if (r->apply(&ctx, &in, param, &arena, &o.res))
      fail_msg("%s: %s failed: %s", chain, step, ctx.error);
    if (!o.res.applied)
      return o;
    parent = o.res.child;
  }
  return o;
}

static const char *show(const ks_variant *v) {
  return ks_arena_printf(&arena, "grid %s block %s\n%s", v->grid ? v->grid : "(same)",
                         v->block ? v->block : "(same)", v->source);
}

/* Applied; the child resolves on every size set and compiles for sm_90. */
static const ks_variant *applies(corpus *c, const char *kernel, const char *chain, ks_candidate *cand,
                                 const ks_target **target) {
  const ks_target *t = open_target(c, kernel);
  outcome o = apply_chain(t, chain);
  if (!o.res.applied)
    fail_msg("%s: %s does not apply: %s", kernel, chain, o.res.reason);
  assert_non_null(o.res.technique);
  ks_variant *v = ks_arena_alloc(&arena, sizeof *v);
  *v = o.res.child;
  ks_candidate local;
  cand = cand ? cand : &local;
  if (ks_target_candidate(&ctx, t, v, o.is_template, &arena, cand))
    fail_long("%s: %s: policy or guards do not resolve: %s\n%s", kernel, chain, ctx.error, show(v));
  for (size_t i = 0; i < t->nworkloads; i++) {
    const ks_launch_cfg *l = &cand->launches[i];
    unsigned threads = l->block[0] * l->block[1] * l->block[2];
    if (cand->guards_hold[i] && (!threads || threads > 1024 || !l->grid[0]))
      fail_msg("%s: %s: size %s launches (%u, %u, %u) x (%u, %u, %u)", kernel, chain,
               t->workloads[i].size_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
               l->block[2]);
  }
  ks_compile_unit unit = {.name = ks_arena_printf(&arena, "%s.%s.cu", kernel, chain),
                          .source = ks_rules_unit(&arena, t, v, NULL),
                          .name_expressions = &cand->name_expression,
                          .nnames = 1,
                          .candidate = v->source};
  ks_compile_result r;
  assert_int_equal(ks_compile(&ctx, &compiler, &unit, 1, &arena, &r), 0);
  if (r.status != KS_COMPILE_OK)
    fail_long("%s: %s does not compile: %s\n%s\n---- variant:\n%s", kernel, chain, r.reason, r.log,
             show(v));
  if (target)
    *target = t;
  return v;
}

static void not_applied(corpus *c, const char *kernel, const char *chain, const char *reason) {
  outcome o = apply_chain(open_target(c, kernel), chain);
  if (o.res.applied)
    fail_long("%s: %s applies, and should not:\n%s", kernel, chain, show(&o.res.child));
  assert_non_null(o.res.reason);
  if (!strstr(o.res.reason, reason))
    fail_msg("%s: %s: wanted '%s' in the reason: %s", kernel, chain, reason, o.res.reason);
  assert_null(strchr(o.res.reason, '\n'));
}

static void has(const ks_variant *v, const char *text) {
  if (!strstr(v->source, text)) {
    fprintf(stderr, "wanted '%s' in:\n%s\n", text, show(v));
    fail_msg("wanted '%s'", text);
  }
}

static void lacks(const ks_variant *v, const char *text) {
  if (strstr(v->source, text)) {
    fprintf(stderr, "did not want '%s' in:\n%s\n", text, show(v));
    fail_msg("did not want '%s'", text);
  }
}

static bool has_guard(const ks_variant *v, const char *guard) {
  for (size_t i = 0; i < v->requires.len; i++)
    if (!strcmp(v->requires.items[i], guard))
      return true;
  return false;
}

static size_t count(const char *s, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
    n++;
  return n;
}

/* ---- warp_rows --------------------------------------------------------------- */

/* Every size set runs 32 lanes for each thread the original ran, in blocks
 * of `block`, and the guards hold everywhere. */
static void covers_lanes(const ks_target *t, const ks_candidate *cand, unsigned block,
                         unsigned lanes_per_row) {
  for (size_t i = 0; i < t->nworkloads; i++) {
    const ks_launch_cfg *o = &t->workloads[i].launch, *l = &cand->launches[i];
    assert_true(cand->guards_hold[i]);
    assert_int_equal(l->block[0], block);
    assert_int_equal(l->block[1] * l->block[2] * l->grid[1] * l->grid[2], 1);
    unsigned long long lanes = (unsigned long long)l->grid[0] * l->block[0];
    unsigned long long want = (unsigned long long)lanes_per_row * o->grid[0] * o->block[0];
    assert_true(lanes >= want && lanes < want + block);
  }
}

static void covers(const ks_target *t, const ks_candidate *cand, unsigned block) {
  covers_lanes(t, cand, block, 32);
}

static void warp_rows_softmax(void **state) {
  (void)state;
  static const unsigned blocks[] = {128, 256, 512};
  for (size_t b = 0; b < 3; b++) {
    ks_candidate cand;
    const ks_target *t;
    const ks_variant *v = applies(&apps, "softmax_rows_kernel",
                                  ks_arena_printf(&arena, "warp_rows=%u", blocks[b]), &cand, &t);
    covers(t, &cand, blocks[b]);
    assert_string_equal(v->block, ks_arena_printf(&arena, "%u", blocks[b]));
    assert_string_equal(v->grid, ks_arena_printf(&arena, "ceil_div(grid_x * block_x * 32, %u)", blocks[b]));
    assert_int_equal(v->requires.len, 0);
    has(v, "const int ks_lane = threadIdx.x % 32;");
    has(v, "int row = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;");
    /* three loops, each strided; max, then sum, combined across the warp */
    assert_int_equal(count(v->source, "for (int c = ks_lane; c < cols; c += 32)"), 3);
    has(v, "max_val = fmaxf(max_val, __shfl_xor_sync(0xffffffffu, max_val, ks_off));");
    has(v, "sum += __shfl_xor_sync(0xffffffffu, sum, ks_off);");
    /* the sum starts at 0: no lane's start to set aside */
    lacks(v, "ks_sum_before");
    /* the write loop is elementwise: no shuffle after it */
    assert_int_equal(count(v->source, "__shfl_xor_sync"), 2);
  }
}

static void warp_rows_layernorm(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&apps, "layernorm_forward_kernel", "warp_rows=256", &cand, &t);
  covers(t, &cand, 256);
  has(v, "sum += __shfl_xor_sync(0xffffffffu, sum, ks_off);\n    float m = sum / cols;");
  has(v, "var += d * d;\n    }\n    for (int ks_off = 16; ks_off > 0; ks_off >>= 1) var += "
         "__shfl_xor_sync(0xffffffffu, var, ks_off);\n    var /= cols;");
  /* per-row values: one lane writes them */
  has(v, "if (ks_lane == 0) mean[row] = m;");
  has(v, "if (ks_lane == 0) rstd[row] = s;");
  has(v, "for (int c = ks_lane; c < cols; c += 32) y[c] = (x[c] - m) * s * weight[c] + bias[c];");
  lacks(v, "if (ks_lane == 0) y[");
}

static void warp_rows_gemv_and_spmv(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&apps, "gemv_kernel", "warp_rows=128", &cand, &t);
  covers(t, &cand, 128);
  has(v, "template <typename T>");
  has(v, "T sum = 0;");
  has(v, "sum += __shfl_xor_sync(0xffffffffu, sum, ks_off);");
  has(v, "if (ks_lane == 0) y[row] = sum;");
  assert_non_null(strstr(cand.name_expression, "<float>"));

  v = applies(&apps, "spmv_csr_kernel", "warp_rows=512", &cand, &t);
  covers(t, &cand, 512);
  /* an empty row: no lane enters the loop, and the warp adds 32 zeros */
  has(v, "for (int j = row_ptr[row] + ks_lane; j < row_ptr[row + 1]; j += 32)");
  has(v, "dot += __shfl_xor_sync(0xffffffffu, dot, ks_off);");
  has(v, "if (ks_lane == 0) y[row] = dot;");

  /* 8 lanes per row (rows of ~16 nonzeros): the shuffles name the row's
   * group of lanes, since the warp's other groups may have left at the
   * bounds check */
  v = applies(&apps, "spmv_csr_kernel", "warp_rows=25608", &cand, &t);
  covers_lanes(t, &cand, 256, 8);
  assert_string_equal(v->grid, "ceil_div(grid_x * block_x * 8, 256)");
  has(v, "const int ks_lane = threadIdx.x % 8;");
  has(v, "const unsigned ks_mask = 0xffu << (threadIdx.x % 32 / 8 * 8);");
  has(v, "int row = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 8;");
  has(v, "for (int j = row_ptr[row] + ks_lane; j < row_ptr[row + 1]; j += 8)");
  has(v, "for (int ks_off = 4; ks_off > 0; ks_off >>= 1) dot += __shfl_xor_sync(ks_mask, dot, ks_off);");
  lacks(v, "0xffffffffu");
  v = applies(&apps, "gemv_kernel", "warp_rows=12816", &cand, &t);
  covers_lanes(t, &cand, 128, 16);
  has(v, "const unsigned ks_mask = 0xffffu << (threadIdx.x % 32 / 16 * 16);");
  has(v, "sum += __shfl_xor_sync(ks_mask, sum, ks_off);");
}

static void warp_rows_other_shapes(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&mine, "row_stats", "warp_rows=256", &cand, &t);
  covers(t, &cand, 256);
  has(v, "int r = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;");
  has(v, "for (int c = 1 + ks_lane; c < cols; c += 32)");
  /* s starts at column 0's value: set aside, so that it counts once */
  has(v, "auto ks_s_before = s;\n  s = 0;\n");
  has(v, "s += __shfl_xor_sync(0xffffffffu, s, ks_off);\n  s = ks_s_before + s;");
  has(v, "best = max(best, __shfl_xor_sync(0xffffffffu, best, ks_off));");
  /* stores in an if/else without braces: braces keep the else where it was */
  has(v, "if (cols > 1) { if (ks_lane == 0) y[r] = s; } else { if (ks_lane == 0) y[r] = 0.0f; }");
  has(v, "if (ks_lane == 0) kmax[r] = best;");
  has(v, "if (ks_lane == 0) atomicAdd(total, s);");

  not_applied(&mine, "row_running_sum", "warp_rows=256", "'run' is read in a column loop");
  not_applied(&mine, "row_prefix_in_place", "warp_rows=256", "writes 'y[row * cols + c]' and reads");
  not_applied(&mine, "row_even_columns", "warp_rows=256", "step is not 1 ('c += 2')");

  /* in place: each column stays with one lane through the three loops */
  v = applies(&mine, "softmax_in_place", "warp_rows=128", NULL, NULL);
  has(v, "for (int c = ks_lane; c < cols; c += 32) x[c] /= s;");
  /* a loop that gives the columns to other lanes than the loop reading them */
  not_applied(&mine, "fill_after_first", "warp_rows=128", "writes 'x[c]' and reads 'x[c]'");

  /* `y[i] += ...` straight into global memory, C89 loop: after
   * scalar_replace every lane reads y[i] before the loop and lane 0 writes
   * it after; a __syncwarp() orders the two. The rule applies scalar_replace
   * itself, in the same step (ks_rule_then), with its disjoint() guards;
   * the chain of the two rules gives the same text. */
  ks_arena mine_arena = KS_ARENA_INIT;
  outcome o = apply_chain(open_target(&mine, "row_accumulate_global"), "warp_rows=256");
  assert_true(o.res.applied);
  assert_string_equal(o.res.technique, "scalar_replace=1 > warp_rows=256");
  const char *one_step = ks_arena_strdup(&mine_arena, o.res.child.source);
  bool guarded = false;
  for (size_t g = 0; g < o.res.child.requires.len; g++)
    guarded |= !strcmp(o.res.child.requires.items[g], "disjoint(y, a)");
  assert_true(guarded);
  v = applies(&mine, "row_accumulate_global", "scalar_replace warp_rows=256", &cand, &t);
  covers(t, &cand, 256);
  has(v, "for (j = ks_lane; j < n; j += 32)");
  has(v, "ks_acc = ks_ks_acc_before + ks_acc;");
  has(v, "__syncwarp(); if (ks_lane == 0) y[i] = ks_acc;");
  assert_string_equal(one_step, v->source);
  v = applies(&mine, "row_accumulate_global", "warp_rows=256", &cand, &t);
  covers(t, &cand, 256);
  ks_arena_release(&mine_arena);
  /* a maximum or minimum written as an if is one the warp combines */
  v = applies(&mine, "softmax_if_max", "warp_rows=128", &cand, &t);
  covers(t, &cand, 128);
  has(v, "for (int j = ks_lane; j < C; j += 32) {\n            if (inp_row[j] > maxval) {");
  has(v, "maxval = max(maxval, __shfl_xor_sync(0xffffffffu, maxval, ks_off));");
  has(v, "sum += __shfl_xor_sync(0xffffffffu, sum, ks_off);");
  v = applies(&mine, "row_min_if", "warp_rows=128", &cand, &t);
  has(v, "lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, ks_off));");
  /* an if that sets another value than it compares is no maximum */
  not_applied(&mine, "row_if_other", "warp_rows=128", "'m' is carried from one column to the next");
  /* a row whose store is not one element per row stays refused */
  not_applied(&mine, "row_prefix_in_place", "warp_rows=256", "writes 'y[row * cols + c]' and reads");
}

static void warp_rows_does_not_apply(void **state) {
  (void)state;
  not_applied(&apps, "saxpy_kernel", "warp_rows=256", "no loop over a row's columns");
  not_applied(&apps, "gelu_forward_kernel", "warp_rows=256", "no loop over a row's columns");
  not_applied(&apps, "scan_blocks_kernel", "warp_rows=256", "computes no row index");
  not_applied(&apps, "add_block_offsets_kernel", "warp_rows=256", "reads blockIdx outside");
  not_applied(&apps, "reduce_sum_kernel", "warp_rows=256", "computes no row index");
  not_applied(&apps, "histogram_kernel", "warp_rows=256", "no loop over a row's columns");
  not_applied(&apps, "softmax_rows_kernel", "warp_rows=100", "a multiple of 32");
  /* after itself: the row is no longer one thread's */
  not_applied(&apps, "softmax_rows_kernel", "warp_rows=256 warp_rows=128", "computes no row index");
}

static void warp_rows_after_other_rules(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  /* restrict: __ldg reads */
  const ks_variant *v = applies(&apps, "spmv_csr_kernel", "restrict warp_rows=256", &cand, &t);
  has(v, "__ldg(");
  has(v, "+ ks_lane;");
  has(v, "dot += __shfl_xor_sync(0xffffffffu, dot, ks_off);");
  v = applies(&apps, "layernorm_forward_kernel", "restrict warp_rows=128", NULL, NULL);
  has(v, "if (ks_lane == 0) mean[row] = m;");
  v = applies(&apps, "softmax_rows_kernel", "restrict warp_rows=512", NULL, NULL);
  has(v, "max_val = fmaxf(max_val, __shfl_xor_sync(0xffffffffu, max_val, ks_off));");
  /* unroll: the pragma stays on its loop */
  v = applies(&apps, "layernorm_forward_kernel", "unroll=4 warp_rows=256", NULL, NULL);
  has(v, "#pragma unroll 4\n    for (int c = ks_lane; c < cols; c += 32) sum += x[c];\n");
  /* block: the grid composes on the parent's */
  v = applies(&apps, "gemv_kernel", "block=64 warp_rows=256", &cand, &t);
  assert_string_equal(v->grid, "ceil_div(ceil_div(grid_x * block_x, 64) * 64 * 32, 256)");
  covers(t, &cand, 256);
  /* launch_bounds: raised to the new block */
  v = applies(&apps, "softmax_rows_kernel", "launch_bounds=2 warp_rows=512", NULL, NULL);
  has(v, "__launch_bounds__(512, 2)");
  lacks(v, "__launch_bounds__(256");
  /* and after it: restrict, and block (whole warps stay whole) */
  v = applies(&apps, "softmax_rows_kernel", "warp_rows=256 restrict", NULL, NULL);
  has(v, "__shfl_xor_sync");
  v = applies(&apps, "gemv_kernel", "warp_rows=256 block=128", &cand, &t);
  for (size_t i = 0; i < t->nworkloads; i++)
    assert_int_equal(cand.launches[i].block[0] % 32, 0);
}

/* ---- warp_reduce ------------------------------------------------------------- */

static void warp_reduce_reduce_sum(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&apps, "reduce_sum_kernel", "warp_reduce", &cand, &t);
  assert_string_equal(cand.name_expression, "reduce_sum_kernel_ks_variant<256>");
  for (size_t i = 0; i < t->nworkloads; i++)
    assert_true(cand.guards_hold[i]);
  assert_true(has_guard(v, "block_x % 32 == 0"));
  assert_true(has_guard(v, "is_pow2(block_x)"));
  /* the tree's size is a template value: the original loop stays for a
   * block of another size */
  has(v, "if (blockDim.x == blockSize) {");
  has(v, "auto ks_v = partial[tid];");
  has(v, "ks_v += __shfl_down_sync(0xffffffffu, ks_v, ks_off);");
  has(v, "if (tid % 32 == 0) partial[tid] = ks_v;");
  has(v, "ks_v = tid < blockSize / 32 ? partial[tid * 32] : 0;");
  has(v, "if (tid == 0) partial[0] = ks_v;");
  has(v, "} else {\n        for (unsigned int s = 1; s < blockSize; s *= 2) {");
  /* what follows is unchanged */
  has(v, "if (tid == 0) atomicAdd(result, partial[0]);");
  assert_int_equal(count(v->source, "__syncthreads();"), 4);
}

static void warp_reduce_block_max(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&mine, "block_max", "warp_reduce", &cand, &t);
  for (size_t i = 0; i < t->nworkloads; i++)
    assert_true(cand.guards_hold[i]);
  /* blockDim.x is the block: no fallback */
  lacks(v, "if (blockDim.x ==");
  has(v, "auto ks_v = buf[threadIdx.x];");
  has(v, "ks_v = fmaxf(ks_v, __shfl_down_sync(0xffffffffu, ks_v, ks_off));");
  /* max: lanes past the warps read element 0 again, which changes no max */
  has(v, "ks_v = buf[threadIdx.x < blockDim.x / 32 ? threadIdx.x * 32 : 0];");
  has(v, "if (threadIdx.x == 0) out[blockIdx.x] = buf[0];");
  lacks(v, "s >>= 1");

  /* after other rules */
  v = applies(&mine, "block_max", "launch_bounds warp_reduce", NULL, NULL);
  has(v, "__launch_bounds__(256)");
  v = applies(&mine, "block_max", "unroll=2 warp_reduce", NULL, NULL);
  lacks(v, "#pragma unroll");
  v = applies(&apps, "reduce_sum_kernel", "unroll=2 warp_reduce", NULL, NULL);
  has(v, "} else {\n        #pragma unroll 2\n        for (unsigned int s = 1;");
  /* block changes the size of a reduction over blockDim.x; where it
   * applies, warp_reduce follows */
  outcome o = apply_chain(open_target(&mine, "block_max"), "block=128");
  if (o.res.applied) {
    v = applies(&mine, "block_max", "block=128 warp_reduce", NULL, NULL);
    has(v, "__shfl_down_sync");
  }
}

static void warp_reduce_does_not_apply(void **state) {
  (void)state;
  not_applied(&mine, "block_first_two", "warp_reduce", "reads 'buf[1]'");
  not_applied(&apps, "histogram_kernel", "warp_reduce", "no shared-memory tree reduction");
  not_applied(&apps, "saxpy_kernel", "warp_reduce", "no shared-memory tree reduction");
  not_applied(&apps, "scan_blocks_kernel", "warp_reduce", "no shared-memory tree reduction");
  not_applied(&apps, "reduce_sum_kernel", "warp_reduce warp_reduce", "already reduces with warp shuffles");
}

/* ---- reduce_stride (rules_reduce.c) ------------------------------------------ */

static void reduce_stride_applies(void **state) {
  (void)state;
  const ks_target *t;
  ks_candidate cand;
  const ks_variant *v = applies(&apps, "reduce_sum_kernel", "reduce_stride=8", &cand, &t);
  has(v, "float ks_acc = 0;");
  has(v, "for (unsigned int ks_j = i; ks_j < ((unsigned int)n); ks_j += gridDim.x * blockSize)");
  has(v, "ks_acc += input[ks_j];");
  has(v, "partial[tid] = ks_acc;");
  has(v, "if (tid == 0) atomicAdd(result, partial[0]);");
  assert_true(has_guard(v, "n <= grid_x * block_x"));
  /* the grid is capped at 8 blocks per SM where it was larger, and every
   * size set still runs */
  for (size_t i = 0; i < t->nworkloads; i++) {
    assert_true(cand.guards_hold[i]);
    assert_true(cand.launches[i].grid[0] <= t->workloads[i].launch.grid[0]);
  }
  /* with the warp rules, either order */
  v = applies(&apps, "reduce_sum_kernel", "reduce_stride=4 warp_reduce", NULL, NULL);
  has(v, "__shfl_down_sync");
  has(v, "ks_acc += input[ks_j];");
  v = applies(&apps, "reduce_sum_kernel", "warp_reduce reduce_stride=4", NULL, NULL);
  has(v, "ks_acc += input[ks_j];");
  /* a warp-level sum folded by atomicAdd */
  v = applies(&mine, "warp_sum", "reduce_stride=2", NULL, NULL);
  has(v, "for (int ks_j = i; ks_j < n; ks_j += gridDim.x * blockDim.x)");
  has(v, "float v = ks_acc;");
}

static void reduce_stride_does_not_apply(void **state) {
  (void)state;
  not_applied(&mine, "warp_peak", "reduce_stride=2", "not only a sum ('max')");
  not_applied(&mine, "block_max", "reduce_stride=2", "no atomicAdd");
  not_applied(&mine, "count_positive", "reduce_stride=2", "no load");
  not_applied(&mine, "compact_positive", "reduce_stride=2", "stores to global memory");
  not_applied(&apps, "saxpy_kernel", "reduce_stride=2", "no atomicAdd");
  not_applied(&apps, "histogram_kernel", "reduce_stride=2", "blockIdx.x * B + threadIdx.x");
  /* once is all: the capped grid is not larger than the cap */
  not_applied(&apps, "reduce_sum_kernel", "reduce_stride=2 reduce_stride=2", "no larger than");
}

/* ---- warp_atomic ------------------------------------------------------------- */

static void warp_atomic_histogram(void **state) {
  (void)state;
  const ks_variant *v = applies(&apps, "histogram_kernel", "warp_atomic", NULL, NULL);
  has(v, "const unsigned ks_mask = __activemask();");
  has(v, "auto ks_ptr = &bins[data[i]];");
  has(v, "const unsigned ks_peers = __match_any_sync(ks_mask, (unsigned long long)ks_ptr);");
  has(v, "if (ks_lane == __ffs(ks_peers) - 1) atomicAdd(ks_ptr, (unsigned int)__popc(ks_peers));");
  assert_int_equal(count(v->source, "atomicAdd("), 1);
  /* a second time: already aggregated */
  not_applied(&apps, "histogram_kernel", "warp_atomic warp_atomic", "already groups lanes");
}

static void warp_atomic_shapes(void **state) {
  (void)state;
  const ks_variant *v = applies(&mine, "count_positive", "warp_atomic", NULL, NULL);
  /* one address for the warp, the same 1 in every lane: no shuffles */
  has(v, "if (ks_lane == __ffs(ks_mask) - 1) atomicAdd(count, (int)__popc(ks_mask));");
  /* float values per lane: a butterfly when the warp is whole, else the
   * active lanes one by one */
  has(v, "float ks_val = x[i];");
  has(v, "if (ks_mask == 0xffffffffu) {");
  has(v, "ks_val += __shfl_xor_sync(0xffffffffu, ks_val, ks_off);");
  has(v, "ks_sum += __shfl_sync(ks_mask, ks_val, __ffs(ks_m) - 1);");
  has(v, "if (ks_lane == __ffs(ks_mask) - 1) atomicAdd(total, ks_val);");
  lacks(v, "__match_any_sync");

  v = applies(&mine, "weighted_histogram", "warp_atomic", NULL, NULL);
  /* integers per lane, grouped by address: one instruction on sm_80+ */
  has(v, "ks_val = __reduce_add_sync(ks_peers, ks_val);");
  has(v, "#else\n");
  has(v, "auto ks_ptr = counts + key[i];");
  has(v, "atomicAdd(ks_ptr, (unsigned int)(2u) * (unsigned int)__popc(ks_peers));");
  assert_int_equal(count(v->source, "__match_any_sync"), 2);

  /* after warp_rows, lane 0 alone adds the row's sum */
  not_applied(&mine, "row_stats", "warp_rows=128 warp_atomic", "one thread of a block or warp");
}

static void warp_atomic_does_not_apply(void **state) {
  (void)state;
  not_applied(&mine, "compact_positive", "warp_atomic", "uses the value atomicAdd returns");
  not_applied(&apps, "reduce_sum_kernel", "warp_atomic", "one thread of a block or warp");
  not_applied(&apps, "saxpy_kernel", "warp_atomic", "no atomicAdd");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(warp_rows_softmax),
      cmocka_unit_test(warp_rows_layernorm),
      cmocka_unit_test(warp_rows_gemv_and_spmv),
      cmocka_unit_test(warp_rows_other_shapes),
      cmocka_unit_test(warp_rows_does_not_apply),
      cmocka_unit_test(warp_rows_after_other_rules),
      cmocka_unit_test(warp_reduce_reduce_sum),
      cmocka_unit_test(warp_reduce_block_max),
      cmocka_unit_test(warp_reduce_does_not_apply),
      cmocka_unit_test(reduce_stride_applies),
      cmocka_unit_test(reduce_stride_does_not_apply),
      cmocka_unit_test(warp_atomic_histogram),
      cmocka_unit_test(warp_atomic_shapes),
      cmocka_unit_test(warp_atomic_does_not_apply),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
