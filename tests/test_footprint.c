/* test_footprint: the extent of every buffer a kernel touches, proved from
 * its code (passes/footprint/footprint.c).
 *
 * Kernels written here in many styles (PolyBench's macros and C89 loops,
 * 1-D and 2-D guards, early exits, grid-stride loops, stencils, aliases,
 * atomics, templates) are parsed with ks_kast_parse and each parameter's
 * extent is checked exactly, or its refusal with the reason. Every extent
 * with symbols is also evaluated with ks_expr for several sizes and launch
 * shapes and compared with the true largest index + 1, computed by running
 * the kernel's index logic here in C: never smaller, and equal where the
 * kernel's guard is the bound. Kernels built to be refused (hidden uses,
 * changes through references, macros and asm, wrapping unsigned loops)
 * must be. Last, every kernel of testdata/apps (and of testdata/legacy when
 * present, and of testdata/rules) goes through its slice, as the store
 * keeps it, and the table is printed; the apps' obvious extents are
 * asserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ks_expr.h"
#include "ks_footprint.h"
#include "ks_scan.h"
#include "ks_slice.h"
#include "ks_test.h"

static ks_ctx ctx;
static ks_arena arena = KS_ARENA_INIT;

/* ---- helpers ---- */

static ks_footprints of(const char *src, const char *kernel) {
  ks_footprints out;
  if (ks_footprints_from_unit(&ctx, "unit.cu", src, kernel, &arena, &out))
    fail_msg("%s does not parse: %s\n%s", kernel, ctx.error, src);
  return out;
}

static const ks_footprint *param(const ks_footprints *f, const char *name) {
  for (size_t i = 0; i < f->len; i++)
    if (!strcmp(f->items[i].param, name))
      return &f->items[i];
  fail_msg("no parameter '%s'", name);
  return NULL;
}

static void has_extent(const ks_footprints *f, const char *name, const char *extent) {
  const ks_footprint *p = param(f, name);
  if (!p->extent)
    fail_msg("%s: expected extent '%s', got none: %s", name, extent, p->why);
  if (strcmp(p->extent, extent))
    fail_msg("%s: expected extent '%s', got '%s'", name, extent, p->extent);
  assert_null(p->why);
}

static void has_none(const ks_footprints *f, const char *name, const char *why) {
  const ks_footprint *p = param(f, name);
  if (p->extent)
    fail_msg("%s: expected no extent (%s), got '%s'", name, why, p->extent);
  assert_non_null(p->why);
  assert_null(strchr(p->why, '\n'));
  if (!strstr(p->why, why))
    fail_msg("%s: reason '%s' lacks '%s'", name, p->why, why);
}

static void uses(const ks_footprints *f, const char *name, bool read, bool written) {
  const ks_footprint *p = param(f, name);
  if (p->read != read || p->written != written)
    fail_msg("%s: read %d written %d, expected %d %d", name, p->read, p->written, read, written);
}

/* ---- numbers: an extent evaluated, against the truth ---- */

typedef struct env {
  const char *names[16];
  ks_value values[16];
  size_t n;
} env;

static void bind(env *e, const char *name, long long v) {
  e->names[e->n] = name;
  e->values[e->n] = (ks_value){.is_int = true, .i = v};
  e->n++;
}

static env launch(long long gx, long long gy, long long bx, long long by) {
  env e = {0};
  bind(&e, "grid_x", gx);
  bind(&e, "grid_y", gy);
  bind(&e, "grid_z", 1);
  bind(&e, "block_x", bx);
  bind(&e, "block_y", by);
  bind(&e, "block_z", 1);
  return e;
}

static long long value(const char *extent, const env *e) {
  ks_expr_table t = {e->names, e->values, e->n, NULL};
  ks_expr_env ee = {ks_expr_table_lookup, &t};
  ks_value v;
  if (ks_expr_eval(&ctx, extent, &ee, &v))
    fail_msg("'%s' does not evaluate: %s", extent, ctx.error);
  assert_true(v.is_int);
  return v.i;
}

/* The extent is never below the truth (the largest index + 1 the kernel
 * touches, 0 when it touches none); `exact`: equal to it. */
static void covers(const ks_footprints *f, const char *name, const env *e, long long truth,
                   bool exact) {
  const ks_footprint *p = param(f, name);
  assert_non_null(p->extent);
  long long v = value(p->extent, e);
  if (v < truth || (exact && v != truth))
    fail_msg("%s: extent '%s' = %lld, truth %lld", name, p->extent, v, truth);
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- 1-D ---- */

static const char saxpy_src[] =
    "__global__ void saxpy(int n, float a, float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static long long truth_1d(long long n, long long gx, long long bx) {
  long long t = 0;
  for (long long i = 0; i < gx * bx; i++)
    if (i < n)
      t = MAX(t, i + 1);
  return t;
}

/* An extent `n` (or a function of n) of a 1-D kernel against its truth,
 * for launches covering n and launches that do not. */
typedef long long (*truth_fn)(long long n, long long threads);

static long long t_min(long long n, long long threads) { return n < threads ? n : threads; }

static void covers_1d(const ks_footprints *f, const char *name, truth_fn truth, bool exact) {
  static const long long sizes[][3] = {{1000, 4, 256}, {1024, 4, 256}, {7, 1, 32}, {300, 2, 64}};
  for (size_t s = 0; s < 4; s++) {
    long long n = sizes[s][0], gx = sizes[s][1], bx = sizes[s][2];
    env e = launch(gx, 1, bx, 1);
    bind(&e, "n", n);
    /* Exact where the grid covers n; an upper bound where it does not. */
    covers(f, name, &e, truth(n, gx * bx), exact && gx * bx >= n);
  }
}

static long long t_three(long long n, long long threads) { return 3 * t_min(n, threads); }
static long long t_bytes(long long n, long long threads) {
  return t_min(n, threads) ? 4 * t_min(n, threads) + 4 : 0;
}
static long long t_quarter(long long n, long long threads) { return t_min(n / 4, threads); }
static long long t_half(long long n, long long threads) {
  return t_min(n, threads) ? (t_min(n, threads) - 1) / 2 + 1 : 0;
}
static long long t_grid(long long n, long long threads) {
  (void)n;
  return threads;
}

static void saxpy_guarded_by_n(void **state) {
  (void)state;
  ks_footprints f = of(saxpy_src, "saxpy");
  assert_int_equal(f.len, 4);
  has_extent(&f, "x", "n");
  has_extent(&f, "y", "n");
  has_none(&f, "n", "not a pointer");
  has_none(&f, "a", "not a pointer");
  uses(&f, "x", true, false);
  uses(&f, "y", true, true);
  long long sizes[][3] = {{1000, 4, 256}, {1024, 4, 256}, {5, 1, 32}};
  for (size_t s = 0; s < 3; s++) {
    env e = launch(sizes[s][1], 1, sizes[s][2], 1);
    bind(&e, "n", sizes[s][0]);
    long long t = truth_1d(sizes[s][0], sizes[s][1], sizes[s][2]);
    covers(&f, "x", &e, t, true);
    covers(&f, "y", &e, t, true);
  }
  /* More elements than threads: n still bounds every index. */
  env e = launch(1, 1, 32, 1);
  bind(&e, "n", 100);
  covers(&f, "y", &e, truth_1d(100, 1, 32), false);
}

static void no_guard_is_the_grid(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void zero(float *out) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  out[i] = 0;\n"
                       "}\n",
                       "zero");
  has_extent(&f, "out", "grid_x * block_x");
  uses(&f, "out", false, true);
  env e = launch(7, 1, 128, 1);
  covers(&f, "out", &e, 7 * 128, true);
}

static void early_return(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void twice(const float *in, float *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i >= n) return;\n"
                       "  out[i] = in[i] * 2.0f;\n"
                       "}\n"
                       "__global__ void negated(const float *in, float *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (!(i < n)) { return; }\n"
                       "  out[i] = in[i];\n"
                       "}\n",
                       "twice");
  has_extent(&f, "in", "n");
  has_extent(&f, "out", "n");
  uses(&f, "out", false, true);
  covers_1d(&f, "in", t_min, true);
  covers_1d(&f, "out", t_min, true);
  ks_footprints g = of("__global__ void twice(const float *in, float *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (!(i < n)) { return; }\n"
                       "  out[i] = in[i];\n"
                       "}\n",
                       "twice");
  has_extent(&g, "in", "n");
  has_extent(&g, "out", "n");
  covers_1d(&g, "in", t_min, true);
}

static void grid_stride_loop(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void copy(const float *x, float *y, int n) {\n"
                       "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
                       "       i += blockDim.x * gridDim.x)\n"
                       "    y[i] = x[i];\n"
                       "}\n",
                       "copy");
  has_extent(&f, "x", "n");
  has_extent(&f, "y", "n");
  /* n far beyond the grid: the loop covers it all. */
  env e = launch(2, 1, 64, 1);
  bind(&e, "n", 1000);
  covers(&f, "y", &e, 1000, true);
  /* A stride held in a local, C89 style. */
  ks_footprints g = of("__global__ void copy(const float *x, float *y, int n) {\n"
                       "  int i, stride;\n"
                       "  stride = blockDim.x * gridDim.x;\n"
                       "  for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)\n"
                       "    y[i] = x[i];\n"
                       "}\n",
                       "copy");
  has_extent(&g, "x", "n");
  has_extent(&g, "y", "n");
}

static void unsigned_parameters(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void fill(float *a, unsigned n, unsigned m) {\n"
                       "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n * m) a[i] = 1.0f;\n"
                       "}\n",
                       "fill");
  has_extent(&f, "a", "n * m");
  env e = launch(8, 1, 128, 1);
  bind(&e, "n", 30);
  bind(&e, "m", 20);
  covers(&f, "a", &e, 600, true);
  /* i - 1 with i unsigned may wrap when i is 0. */
  ks_footprints g = of("__global__ void prev(float *a, unsigned n) {\n"
                       "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) a[i - 1] = 1.0f;\n"
                       "}\n",
                       "prev");
  has_none(&g, "a", "wrap below zero");
  /* size_t everywhere, like the histogram. */
  ks_footprints h = of("__global__ void count(const unsigned char *data, unsigned int *bins,\n"
                       "                      size_t n) {\n"
                       "  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) atomicAdd(&bins[data[i]], 1u);\n"
                       "}\n",
                       "count");
  has_extent(&h, "data", "n");
  has_none(&h, "bins", "'data[i]', read from memory");
  uses(&h, "data", true, false);
  covers_1d(&h, "data", t_min, true);
}

static void below_the_pointer(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void diff(const float *a, float *d, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) d[i] = a[i] - a[i - 1];\n"
                       "}\n",
                       "diff");
  has_none(&f, "a", "may index below the pointer");
  has_extent(&f, "d", "n");
  ks_footprints g = of("__global__ void diff(const float *a, float *d, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i > 0 && i < n) d[i] = a[i] - a[i - 1];\n"
                       "}\n",
                       "diff");
  has_extent(&g, "a", "n");
  has_extent(&g, "d", "n");
  covers_1d(&g, "a", t_min, true);
  covers_1d(&f, "d", t_min, true);
}

static void const_locals_and_enumerators(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void rgb(float *out, const float *in, int n) {\n"
                       "  const int W = 3;\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) out[i * W + 2] = in[i];\n"
                       "}\n",
                       "rgb");
  has_extent(&f, "out", "3 * n");
  has_extent(&f, "in", "n");
  covers_1d(&f, "out", t_three, true);
  ks_footprints g = of("enum { TILE = 16, HALF = TILE / 2 };\n"
                       "namespace cfg { constexpr int PAD = 4; }\n"
                       "enum class Mode { Add, Mul = 2 };\n"
                       "__global__ void tiles(float *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) out[i * TILE + HALF + cfg::PAD + (int)Mode::Mul] = 0;\n"
                       "}\n",
                       "tiles");
  /* (n - 1) * 16 + 8 + 4 + 2 + 1 */
  has_extent(&g, "out", "16 * n - 1");
  env e = launch(4, 1, 64, 1);
  bind(&e, "n", 100);
  long long t = 0;
  for (long long i = 0; i < 4 * 64; i++)
    if (i < 100)
      t = MAX(t, i * 16 + 8 + 4 + 2 + 1);
  covers(&g, "out", &e, t, true);
  /* A name declared twice (two namespaces) is not guessed. */
  ks_footprints h = of("namespace a { const int K = 4; }\n"
                       "namespace b { const int K = 8; }\n"
                       "using namespace a;\n"
                       "__global__ void k(float *out) { out[K] = 0; }\n",
                       "k");
  has_none(&h, "out", "'K'");
  /* A mutable global is not a constant. */
  ks_footprints m = of("__device__ int K = 4;\n"
                       "__global__ void k(float *out) { out[K] = 0; }\n",
                       "k");
  has_none(&m, "out", "'K'");
}

static void sizeof_of_basic_types(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void bytes(char *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) out[i * sizeof(float) + sizeof(double) - 1] = 0;\n"
                       "}\n",
                       "bytes");
  has_extent(&f, "out", "4 * n + 4");
  covers_1d(&f, "out", t_bytes, true);
}

/* ---- loops in their forms ---- */

static void loop_forms(void **state) {
  (void)state;
  ks_footprints f = of("#define N 256\n"
                       "__global__ void loops(float *a, float *b, float *c, float *d, float *e,\n"
                       "                      float *g, int n) {\n"
                       "  int j;\n"
                       "  for (j = 0; j <= n - 1; j++) a[j] = 0;\n"
                       "  for (j = 0; j != N; ++j) b[j] = 0;\n"
                       "  for (int k = 0; k < n; k += 1) c[k] = 0;\n"
                       "  for (int k = 0; n > k; k += 2) d[k] = 0;\n"
                       "  for (int k = n - 1; k >= 0; k--) e[k] = 0;\n"
                       "  for (int k = 1; k < n; k *= 2) g[k] = 0;\n"
                       "}\n",
                       "loops");
  has_extent(&f, "a", "n");
  has_extent(&f, "b", "256");
  has_extent(&f, "c", "n");
  has_extent(&f, "d", "n");
  has_extent(&f, "e", "n");
  has_extent(&f, "g", "n");
  {
    /* The truth of each loop, run here. */
    long long ns[] = {1, 2, 9, 10, 64};
    for (size_t k = 0; k < 5; k++) {
      long long n = ns[k], ta = 0, tc = 0, td = 0, te = 0, tg = 0;
      for (long long j = 0; j <= n - 1; j++)
        ta = j + 1;
      for (long long j = 0; j < n; j += 1)
        tc = j + 1;
      for (long long j = 0; n > j; j += 2)
        td = j + 1;
      for (long long j = n - 1; j >= 0; j--)
        te = MAX(te, j + 1);
      for (long long j = 1; j < n; j *= 2)
        tg = j + 1;
      env e = launch(1, 1, 1, 1);
      bind(&e, "n", n);
      covers(&f, "a", &e, ta, true);
      covers(&f, "c", &e, tc, true);
      covers(&f, "d", &e, td, n % 2 == 1);
      covers(&f, "e", &e, te, true);
      covers(&f, "g", &e, tg, n == 2);
    }
  }
  /* `j != n` with a signed n: it could start above n and never stop. */
  ks_footprints g = of("__global__ void ne(float *a, int n) {\n"
                       "  for (int j = 0; j != n; j++) a[j] = 0;\n"
                       "}\n"
                       "__global__ void ne_unsigned(float *a, unsigned n) {\n"
                       "  for (unsigned j = 0; j != n; j++) a[j] = 0;\n"
                       "}\n",
                       "ne");
  has_none(&g, "a", "no upper bound");
  ks_footprints h = of("__global__ void ne_unsigned(float *a, unsigned n) {\n"
                       "  for (unsigned j = 0; j != n; j++) a[j] = 0;\n"
                       "}\n",
                       "ne_unsigned");
  has_extent(&h, "a", "n");
  covers_1d(&h, "a", t_min, false);
  /* The loop variable changed in the body, a while loop. */
  ks_footprints w = of("__global__ void w(float *a, float *b, int n) {\n"
                       "  for (int j = 0; j < n; j++) { a[j] = 0; j += a[j] > 0; }\n"
                       "  int k = 0;\n"
                       "  while (k < n) { b[k] = 0; k++; }\n"
                       "}\n",
                       "w");
  has_none(&w, "a", "'j' is modified in the body of its loop");
  has_none(&w, "b", "'k' changes");
}

static void halving_loop(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void tree(float *a) {\n"
                       "  int tid = threadIdx.x;\n"
                       "  for (int s = blockDim.x / 2; s > 0; s >>= 1)\n"
                       "    if (tid < s) a[tid] += a[tid + s];\n"
                       "}\n",
                       "tree");
  has_extent(&f, "a", "2 * (block_x / 2)");
  uses(&f, "a", true, true);
  long long bxs[] = {1, 2, 7, 256};
  for (size_t k = 0; k < 4; k++) {
    long long bx = bxs[k], t = 0;
    for (long long s = bx / 2; s > 0; s >>= 1)
      for (long long tid = 0; tid < bx; tid++)
        if (tid < s)
          t = MAX(t, tid + s + 1);
    env e = launch(1, 1, bx, 1);
    covers(&f, "a", &e, t, bx > 1);
  }
}

static void minimum_bound(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void chunk(float *a, int n) {\n"
                       "  int start = blockIdx.x * 256;\n"
                       "  int end = min(start + 256, n);\n"
                       "  for (int k = start + threadIdx.x; k < end; k += blockDim.x) a[k] = 0;\n"
                       "}\n",
                       "chunk");
  has_extent(&f, "a", "min(256 * grid_x, n)");
  long long cases[][3] = {{1000, 2, 64}, {100, 4, 32}, {600, 3, 256}};
  for (size_t c = 0; c < 3; c++) {
    long long n = cases[c][0], gx = cases[c][1], bx = cases[c][2], t = 0;
    for (long long b = 0; b < gx; b++)
      for (long long tx = 0; tx < bx; tx++) {
        long long end = b * 256 + 256 < n ? b * 256 + 256 : n;
        for (long long k = b * 256 + tx; k < end; k += bx)
          t = MAX(t, k + 1);
      }
    env e = launch(gx, 1, bx, 1);
    bind(&e, "n", n);
    covers(&f, "a", &e, t, true);
  }
}

/* ---- 2-D: matrices and stencils ---- */

static const char gemv_src[] =
    "template <typename T>\n"
    "__global__ void gemv(const T* A, const T* x, T* y, int rows, int cols) {\n"
    "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (row < rows) {\n"
    "    T sum = 0;\n"
    "    for (int c = 0; c < cols; ++c) sum += A[(size_t)row * cols + c] * x[c];\n"
    "    y[row] = sum;\n"
    "  }\n"
    "}\n";

static void gemv_rows_times_cols(void **state) {
  (void)state;
  ks_footprints f = of(gemv_src, "gemv");
  has_extent(&f, "A", "rows * cols");
  has_extent(&f, "x", "cols");
  has_extent(&f, "y", "rows");
  uses(&f, "y", false, true);
  long long cases[][4] = {{100, 50, 1, 128}, {300, 7, 2, 256}};
  for (size_t c = 0; c < 2; c++) {
    long long rows = cases[c][0], cols = cases[c][1], gx = cases[c][2], bx = cases[c][3];
    long long ta = 0, tx = 0, ty = 0;
    for (long long row = 0; row < gx * bx; row++)
      if (row < rows) {
        for (long long k = 0; k < cols; k++) {
          ta = MAX(ta, row * cols + k + 1);
          tx = MAX(tx, k + 1);
        }
        ty = MAX(ty, row + 1);
      }
    env e = launch(gx, 1, bx, 1);
    bind(&e, "rows", rows);
    bind(&e, "cols", cols);
    covers(&f, "A", &e, ta, true);
    covers(&f, "x", &e, tx, true);
    covers(&f, "y", &e, ty, true);
  }
}

static void polybench_gemm(void **state) {
  (void)state;
  ks_footprints f = of("#define NI 512\n"
                       "#define NJ 1024\n"
                       "#define NK 256\n"
                       "#define NI_BOUND NI\n"
                       "#define NJ_BOUND NJ\n"
                       "#define DATA_TYPE float\n"
                       "#define ALPHA 32412.0f\n"
                       "#define BETA 2123.0f\n"
                       "__global__ void gemm_kernel(DATA_TYPE *a, DATA_TYPE *b, DATA_TYPE *c)\n"
                       "{\n"
                       "  int i, j, k;\n"
                       "  j = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  i = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  if ((i < NI_BOUND) && (j < NJ_BOUND))\n"
                       "  {\n"
                       "    c[i * NJ + j] *= BETA;\n"
                       "    for (k = 0; k < NK; k++)\n"
                       "    {\n"
                       "      c[i * NJ + j] += ALPHA * a[i * NK + k] * b[k * NJ + j];\n"
                       "    }\n"
                       "  }\n"
                       "}\n",
                       "gemm_kernel");
  has_extent(&f, "a", "131072");
  has_extent(&f, "b", "262144");
  has_extent(&f, "c", "524288");
  uses(&f, "a", true, false);
  uses(&f, "c", true, true);
}

static void polybench_mvt(void **state) {
  (void)state;
  const char *src = "#define N 4096\n"
                    "#define DATA_TYPE float\n"
                    "__global__ void mvt_kernel1(DATA_TYPE *a, DATA_TYPE *x1, DATA_TYPE *y_1)\n"
                    "{\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < N)\n"
                    "  {\n"
                    "    int j;\n"
                    "    for (j = 0; j < N; j++)\n"
                    "    {\n"
                    "      x1[i] += a[i * N + j] * y_1[j];\n"
                    "    }\n"
                    "  }\n"
                    "}\n"
                    "__global__ void mvt_kernel2(DATA_TYPE *a, DATA_TYPE *x2, DATA_TYPE *y_2)\n"
                    "{\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < N)\n"
                    "  {\n"
                    "    int j;\n"
                    "    for (j = 0; j < N; j++)\n"
                    "    {\n"
                    "      x2[i] += a[j * N + i] * y_2[j];\n"
                    "    }\n"
                    "  }\n"
                    "}\n";
  ks_footprints f = of(src, "mvt_kernel1");
  has_extent(&f, "a", "16777216");
  has_extent(&f, "x1", "4096");
  has_extent(&f, "y_1", "4096");
  ks_footprints g = of(src, "mvt_kernel2");
  has_extent(&g, "a", "16777216");
  has_extent(&g, "x2", "4096");
  has_extent(&g, "y_2", "4096");
}

static void macros_through_macros(void **state) {
  (void)state;
  /* IDX's `*` is between a macro argument and another macro: the tree
   * cannot read it, the unit's #defines can. */
  ks_footprints f = of("#define N 1024\n"
                       "#define ROWS (N / 2)\n"
                       "#define IDX(i, j) ((size_t)(i) * N + (j))\n"
                       "__global__ void k(float *a, float *b) {\n"
                       "  int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < ROWS && j < N) a[IDX(i, j)] = b[IDX(j, i)];\n"
                       "}\n",
                       "k");
  has_extent(&f, "a", "524288");
  has_extent(&f, "b", "1048064");
  uses(&f, "a", false, true);
  uses(&f, "b", true, false);
}

static const char stencil_src[] =
    "__global__ void stencil5(const float *in, float *out, int N, int M) {\n"
    "  int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i > 0 && i < N - 1 && j > 0 && j < M - 1)\n"
    "    out[i * M + j] = 0.2f * (in[i * M + j] + in[(i - 1) * M + j] + in[(i + 1) * M + j]\n"
    "                             + in[i * M + j - 1] + in[i * M + j + 1]);\n"
    "}\n";

static void five_point_stencil(void **state) {
  (void)state;
  ks_footprints f = of(stencil_src, "stencil5");
  has_extent(&f, "in", "N * M - 1");
  has_extent(&f, "out", "N * M - M - 1");
  long long cases[][6] = {{10, 12, 1, 1, 16, 16}, {40, 33, 3, 4, 16, 16}, {3, 3, 1, 1, 8, 8}};
  for (size_t c = 0; c < 3; c++) {
    long long N = cases[c][0], M = cases[c][1], gx = cases[c][2], gy = cases[c][3];
    long long bx = cases[c][4], by = cases[c][5], ti = 0, to = 0;
    for (long long i = 0; i < gy * by; i++)
      for (long long j = 0; j < gx * bx; j++)
        if (i > 0 && i < N - 1 && j > 0 && j < M - 1) {
          to = MAX(to, i * M + j + 1);
          ti = MAX(ti, (i + 1) * M + j + 1);
          ti = MAX(ti, i * M + j + 1 + 1);
        }
    env e = launch(gx, gy, bx, by);
    bind(&e, "N", N);
    bind(&e, "M", M);
    covers(&f, "in", &e, ti, true);
    covers(&f, "out", &e, to, true);
  }
}

/* The apps' Jacobi: an early exit with ||, a boundary branch that
 * returns, and != narrowing the interior. */
static void jacobi_with_boundary(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void jacobi(const float* in, float* out, int nx, int ny) {\n"
                       "  int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  if (x >= nx || y >= ny) return;\n"
                       "  size_t idx = (size_t)y * nx + x;\n"
                       "  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {\n"
                       "    out[idx] = in[idx];\n"
                       "    return;\n"
                       "  }\n"
                       "  out[idx] = 0.25f * (in[idx - 1] + in[idx + 1] + in[idx - nx] +\n"
                       "                      in[idx + nx]);\n"
                       "}\n",
                       "jacobi");
  has_extent(&f, "in", "nx * ny");
  has_extent(&f, "out", "nx * ny");
  env e = launch(3, 2, 16, 16);
  bind(&e, "nx", 40);
  bind(&e, "ny", 30);
  covers(&f, "in", &e, 1200, true);
}

static void transpose_2d(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void t(float* out, const float* in, int rows, int cols) {\n"
                       "  int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  if (row < rows && col < cols)\n"
                       "    out[(size_t)col * rows + row] = in[(size_t)row * cols + col];\n"
                       "}\n",
                       "t");
  has_extent(&f, "out", "rows * cols");
  has_extent(&f, "in", "rows * cols");
  {
    env e = launch(3, 5, 16, 8);
    bind(&e, "rows", 37);
    bind(&e, "cols", 45);
    long long t = 0;
    for (long long row = 0; row < 5 * 8; row++)
      for (long long col = 0; col < 3 * 16; col++)
        if (row < 37 && col < 45)
          t = MAX(t, MAX(col * 37 + row, row * 45 + col) + 1);
    covers(&f, "out", &e, t, true);
    covers(&f, "in", &e, t, true);
  }
  /* Reversed and inclusive comparisons, three dimensions. */
  ks_footprints g = of("__global__ void t3(float* v, int nx, int ny, int nz) {\n"
                       "  int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  int z = blockIdx.z * blockDim.z + threadIdx.z;\n"
                       "  if (nx > x && y <= ny - 1 && z < nz)\n"
                       "    v[(z * ny + y) * nx + x] = 0;\n"
                       "}\n",
                       "t3");
  has_extent(&g, "v", "nx * ny * nz");
  env e = launch(2, 3, 16, 8);
  e.values[2].i = 4; /* grid_z */
  e.values[5].i = 2; /* block_z */
  bind(&e, "nx", 20);
  bind(&e, "ny", 21);
  bind(&e, "nz", 5);
  covers(&g, "v", &e, 20 * 21 * 5, true);
}

static void index_locals(void **state) {
  (void)state;
  /* The index is computed before the guard that bounds it. */
  ks_footprints f = of("#define NX 64\n"
                       "__global__ void k(float *a, int ny) {\n"
                       "  int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
                       "  int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  int idx = i * NX + j;\n"
                       "  if (i < ny && j < NX) a[idx] = 0;\n"
                       "}\n",
                       "k");
  has_extent(&f, "a", "64 * ny");
  {
    env e = launch(4, 4, 16, 16);
    bind(&e, "ny", 50);
    long long t = 0;
    for (long long i = 0; i < 64; i++)
      for (long long j = 0; j < 64; j++)
        if (i < 50 && j < 64)
          t = MAX(t, i * 64 + j + 1);
    covers(&f, "a", &e, t, true);
  }
  /* A value from an earlier loop is not the later loop's variable. */
  ks_footprints g = of("__global__ void k(float *a, int n) {\n"
                       "  int j;\n"
                       "  for (j = 0; j < n; j++) a[j] = 0;\n"
                       "  int last = j;\n"
                       "  for (j = 0; j < 4; j++) a[last + j] = 0;\n"
                       "}\n",
                       "k");
  has_none(&g, "a", "'j'");
}

/* ---- aliases, atomics, loads ---- */

static void row_alias(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void softmax(float* out, const float* in, int rows, int cols) {\n"
                       "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (row >= rows) return;\n"
                       "  const float* x = in + (size_t)row * cols;\n"
                       "  float* y = &out[(size_t)row * cols];\n"
                       "  float m = -1e30f;\n"
                       "  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);\n"
                       "  for (int c = 0; c < cols; ++c) y[c] = expf(x[c] - m);\n"
                       "}\n",
                       "softmax");
  has_extent(&f, "in", "rows * cols");
  has_extent(&f, "out", "rows * cols");
  uses(&f, "in", true, false);
  uses(&f, "out", false, true);
  env e = launch(3, 1, 32, 1);
  bind(&e, "rows", 70);
  bind(&e, "cols", 9);
  covers(&f, "out", &e, 630, true);
  /* An alias that moves is not followed. */
  ks_footprints g = of("__global__ void walk(float* a, int n) {\n"
                       "  float* p = a;\n"
                       "  for (int k = 0; k < n; k++) *p++ = 0;\n"
                       "}\n",
                       "walk");
  has_none(&g, "a", "stored");
}

static void atomics(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void hist(const int *data, int *h, int *g, int *total, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) {\n"
                       "    int bin = data[i];\n"
                       "    atomicAdd(&h[bin], 1);\n"
                       "    atomicAdd(g + threadIdx.x, 1);\n"
                       "    atomicMax(total, bin);\n"
                       "  }\n"
                       "}\n",
                       "hist");
  has_extent(&f, "data", "n");
  has_none(&f, "h", "'data[i]', read from memory");
  has_extent(&f, "g", "block_x");
  has_extent(&f, "total", "1");
  uses(&f, "g", true, true);
  ks_footprints g = of("__global__ void per_thread(int *h) {\n"
                       "  int bin = threadIdx.x;\n"
                       "  atomicAdd(&h[bin], 1);\n"
                       "}\n",
                       "per_thread");
  has_extent(&g, "h", "block_x");
  uses(&g, "h", true, true);
  covers_1d(&f, "data", t_min, true);
  for (long long bx = 1; bx <= 1024; bx *= 4) {
    env e = launch(3, 1, bx, 1);
    covers(&g, "h", &e, bx, true);
    covers(&f, "g", &e, bx, false); /* only threads with i < n add */
  }
}

static void loads_pointers_and_members(void **state) {
  (void)state;
  ks_footprints f = of("struct P { float x, y; };\n"
                       "__global__ void k(const float *a, float *b, const P *pts, float *c, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) {\n"
                       "    b[i] = __ldg(&a[i]) + __ldg(a + i);\n"
                       "    *(c + i) = pts[i].x + pts->y;\n"
                       "  }\n"
                       "}\n",
                       "k");
  has_extent(&f, "a", "n");
  has_extent(&f, "b", "n");
  has_extent(&f, "pts", "n");
  has_extent(&f, "c", "n");
  uses(&f, "a", true, false);
  uses(&f, "c", false, true);
  uses(&f, "pts", true, false);
  covers_1d(&f, "a", t_min, true);
  covers_1d(&f, "pts", t_min, true);
}

static void never_used_and_null_tests(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void bias(float *out, const float *b, const float *unused,\n"
                       "                     int n, int C) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n && b != nullptr && C > 0) out[i] += b[i % C];\n"
                       "}\n",
                       "bias");
  has_extent(&f, "unused", "0");
  uses(&f, "unused", false, false);
  has_extent(&f, "b", "C");
  has_extent(&f, "out", "n");
  long long cs[][2] = {{100, 7}, {5, 9}, {64, 64}};
  for (size_t k = 0; k < 3; k++) {
    long long n = cs[k][0], C = cs[k][1], t = 0;
    for (long long i = 0; i < n; i++)
      t = MAX(t, i % C + 1);
    env e = launch(1, 1, 128, 1);
    bind(&e, "n", n);
    bind(&e, "C", C);
    covers(&f, "b", &e, t, n >= C);
  }
  /* Without C > 0 the remainder's divisor may be anything. */
  ks_footprints g = of("__global__ void bias(float *out, const float *b, int n, int C) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n && b) out[i] += b[i % C];\n"
                       "}\n",
                       "bias");
  has_none(&g, "b", "remainder by 'C'");
}

static void conditional_operator(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void pad(const int *in, int *out, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  out[i] = (i < n) ? in[i] : 0;\n"
                       "}\n",
                       "pad");
  has_extent(&f, "in", "n");
  has_extent(&f, "out", "grid_x * block_x");
  covers_1d(&f, "in", t_min, true);
  covers_1d(&f, "out", t_grid, true);
}

/* ---- what is refused ---- */

static void indirect_index(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void ell(const int *col, const float *val, const float *x,\n"
                       "                    float *y, int rows, int K) {\n"
                       "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (row < rows) {\n"
                       "    float s = 0;\n"
                       "    for (int k = 0; k < K; k++) s += val[row * K + k] * x[col[row * K + k]];\n"
                       "    y[row] = s;\n"
                       "  }\n"
                       "}\n",
                       "ell");
  has_extent(&f, "col", "rows * K");
  has_extent(&f, "val", "rows * K");
  has_none(&f, "x", "its index depends on 'col[row * K + k]', read from memory");
  has_extent(&f, "y", "rows");
  {
    env e = launch(2, 1, 64, 1);
    bind(&e, "rows", 100);
    bind(&e, "K", 6);
    covers(&f, "col", &e, 600, true);
    covers(&f, "val", &e, 600, true);
    covers(&f, "y", &e, 100, true);
  }
  /* CSR: the loop's bounds are read from memory. */
  ks_footprints g = of("__global__ void csr(int rows, const int *rp, const int *ci, const float *v,\n"
                       "                    const float *x, float *y) {\n"
                       "  int row = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (row < rows) {\n"
                       "    float d = 0;\n"
                       "    for (int j = rp[row]; j < rp[row + 1]; ++j) d += v[j] * x[ci[j]];\n"
                       "    y[row] = d;\n"
                       "  }\n"
                       "}\n",
                       "csr");
  has_extent(&g, "rp", "rows + 1");
  {
    env e = launch(2, 1, 64, 1);
    bind(&e, "rows", 100);
    covers(&g, "rp", &e, 101, true);
  }
  has_none(&g, "v", "'rp[row]', read from memory");
  has_none(&g, "ci", "read from memory");
  has_none(&g, "x", "read from memory");
}

static void casts_calls_and_reassignments(void **state) {
  (void)state;
  ks_footprints f = of("__device__ float get(const float *p, int i) { return p[i]; }\n"
                       "__global__ void k(const float *a, const float *b, float *c, float *d,\n"
                       "                  int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n / 4) {\n"
                       "    float4 v = reinterpret_cast<const float4 *>(a)[i];\n"
                       "    c[i] = v.x + get(b, i);\n"
                       "    d += 4;\n"
                       "    d[i] = 0;\n"
                       "  }\n"
                       "}\n",
                       "k");
  has_none(&f, "a", "cast to 'const float4 *'");
  has_none(&f, "b", "passed to 'get'");
  has_none(&f, "d", "reassigned");
  has_extent(&f, "c", "n / 4");
  covers_1d(&f, "c", t_quarter, true);
}

static void hidden_uses(void **state) {
  (void)state;
  /* The tree keeps only a member call's arguments; its object is found
   * in the text. A variable given to a function by reference may change. */
  ks_footprints f = of("struct Acc { float v; __device__ void add(float x) { v += x; } };\n"
                       "__device__ void bump(int &k) { k += 1000; }\n"
                       "__global__ void k(Acc *acc, float *out, const float *in, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) {\n"
                       "    acc[i].add(in[i]);\n"
                       "    int j = i;\n"
                       "    bump(j);\n"
                       "    out[j] = 0;\n"
                       "  }\n"
                       "}\n",
                       "k");
  has_none(&f, "acc", "member call");
  has_none(&f, "out", "'j'");
  has_extent(&f, "in", "n");
  covers_1d(&f, "in", t_min, true);
  /* goto: no path facts hold. */
  ks_footprints g = of("__global__ void k(float *a, int n) {\n"
                       "  int i = threadIdx.x;\n"
                       "  if (i >= n) goto done;\n"
                       "  a[i] = 0;\n"
                       "done:\n"
                       "  return;\n"
                       "}\n",
                       "k");
  has_none(&g, "a", "goto");
  /* A launch from device code: clang leaves the statement out of the tree,
   * so `data` would look unused. */
  ks_footprints h = of("__global__ void child(int *d) { d[threadIdx.x] = 0; }\n"
                       "__global__ void parent(int *data, int *flag) {\n"
                       "  if (threadIdx.x == 0) child<<<1, 32>>>(data);\n"
                       "  flag[0] = 1;\n"
                       "}\n",
                       "parent");
  has_none(&h, "data", "launches kernels");
}

static void templates(void **state) {
  (void)state;
  /* T only as the element type: as for any kernel. */
  ks_footprints f = of(gemv_src, "gemv");
  has_extent(&f, "A", "rows * cols");
  /* A bound that is a template value parameter cannot be named in a guard. */
  ks_footprints g = of("template <typename T, int BLOCK>\n"
                       "__global__ void tile(T *out, const T *in, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) {\n"
                       "    for (int j = 0; j < BLOCK; j++) out[i * BLOCK + j] = in[i];\n"
                       "  }\n"
                       "}\n",
                       "tile");
  has_none(&g, "out", "template parameter 'BLOCK'");
  has_extent(&g, "in", "n");
  covers_1d(&g, "in", t_min, true);
}

static void write_only(void **state) {
  (void)state;
  ks_footprints f = of("__global__ void iota(int *p, int n) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) p[i] = i;\n"
                       "}\n",
                       "iota");
  has_extent(&f, "p", "n");
  uses(&f, "p", false, true);
  covers_1d(&f, "p", t_min, true);
}

static void sign_unknown(void **state) {
  (void)state;
  /* stride's sign is not known: i * stride may be anything. */
  ks_footprints f = of("__global__ void k(float *a, int n, int stride) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (i < n) a[i * stride] = 0;\n"
                       "}\n",
                       "k");
  has_none(&f, "a", "sign of 'stride'");
  /* With stride > 0 on the path it is fine. */
  ks_footprints g = of("__global__ void k(float *a, int n, int stride) {\n"
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "  if (stride <= 0) return;\n"
                       "  if (i < n) a[i * stride] = 0;\n"
                       "}\n",
                       "k");
  has_extent(&g, "a", "n * stride - stride + 1");
  env e = launch(2, 1, 32, 1);
  bind(&e, "n", 50);
  bind(&e, "stride", 3);
  covers(&g, "a", &e, 49 * 3 + 1, true);
}

/* ---- arithmetic and changes the analysis must see ---- */

static void arithmetic_forms(void **state) {
  (void)state;
  ks_footprints f = of(
      "#define STEP(q) q += 2\n"
      "__global__ void k(float *a, float *b, float *c, float *d, float *e, float *f,\n"
      "                  float *g, float *h, float *o, int n, unsigned m) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) a[n - 1 - i] = 0;\n"
      "  b[i & 255] = 0;\n"
      "  if (i < n) c[i >> 1] = 0;\n"
      "  if (i >= n) { d[i] = 0; return; }\n"
      "  for (unsigned j = m; j >= 0; j--) e[j] = 0;\n"
      "  for (unsigned j = m; j > 0; j--) f[j] = 0;\n"
      "  int v;\n"
      "  for (int k = 0; k < 4; k++) { g[v] = 0; v = k; }\n"
      "  int w = i;\n"
      "  STEP(w);\n"
      "  h[w] = 0;\n"
      "  int q = i; int &r = q; r = 1000000; o[q] = 0;\n"
      "}\n",
      "k");
  has_extent(&f, "a", "n");             /* reversed: n - 1 - i */
  has_extent(&f, "b", "min(255, grid_x * block_x - 1) + 1");
  has_extent(&f, "c", "(n - 1) / 2 + 1");
  has_extent(&f, "d", "grid_x * block_x"); /* i >= n: the grid bounds it */
  has_none(&f, "e", "the step of the loop over 'j'"); /* j-- from 0 wraps */
  has_extent(&f, "f", "m + 1");
  has_none(&f, "g", "'v'");             /* read before its assignment */
  has_none(&f, "h", "'w'");             /* changed inside a macro */
  has_none(&f, "o", "'q'");             /* changed through a reference */
  covers_1d(&f, "a", t_min, true);
  covers_1d(&f, "c", t_half, true);
}

static void aliases_and_macros(void **state) {
  (void)state;
  ks_footprints f = of(
      "#define AT(p, i) p[i]\n"
      "#define N 64\n"
      "#define CALLM(q) q->add(1.0f)\n"
      "struct Acc { float v; __device__ void add(float x) { v += x; } };\n"
      "__device__ float get(const float *q, int i);\n"
      "__global__ void k(float *a, float *b, float *c, float *d, float *e, float *f,\n"
      "                  float *g, float *h, Acc *acc, float *s, int n, int off) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i >= n) return;\n"
      "  float *ra = a + off;\n"
      "  ra[i] = 0;\n"
      "  float *rb = b + 2 * i;\n"
      "  rb[1] = rb[0];\n"
      "  float *rc = rb;\n"
      "  rc[0] = 1;\n"
      "  const float *rd = &c[i * N];\n"
      "  for (int k = 0; k < N; k++) d[i] += rd[k];\n"
      "  AT(e, i) = 1;\n"
      "  float *rf = f + n;\n"
      "  rf[-1 - i] = 0;\n"
      "  float *rg = g;\n"
      "  rg = rg + 1;\n"
      "  rg[i] = 0;\n"
      "  float *rh = h + i;\n"
      "  get(rh, 0);\n"
      "  CALLM(acc);\n"
      "  float v;\n"
      "  asm volatile(\"ld.global.f32 %0, [%1];\" : \"=f\"(v) : \"l\"(s + i));\n"
      "}\n",
      "k");
  has_none(&f, "a", "may index below the pointer"); /* off may be negative */
  has_extent(&f, "b", "2 * n");
  uses(&f, "b", true, true);
  has_extent(&f, "c", "64 * n");
  has_extent(&f, "d", "n");
  has_extent(&f, "e", "n");
  has_extent(&f, "f", "n");
  has_none(&f, "g", "stored");
  has_none(&f, "h", "stored");
  has_none(&f, "acc", "member call 'CALLM(acc)'");
  has_none(&f, "s", "asm");
  env e = launch(2, 1, 64, 1);
  bind(&e, "n", 100);
  covers(&f, "b", &e, 200, true);
  covers(&f, "c", &e, 6400, true);
  covers(&f, "f", &e, 100, true);
}

static void named_constants_that_do_not_fit(void **state) {
  (void)state;
  /* 0xFFFFFFFF is -1 as an int: not taken for its 64-bit value. */
  ks_footprints f = of("const int BIG = 0xFFFFFFFF;\n"
                       "const unsigned UBIG = 0xFFFFFFFF;\n"
                       "__global__ void k(float *a, float *b) { a[BIG] = 0; b[UBIG] = 0; }\n",
                       "k");
  has_none(&f, "a", "does not fit its type");
  has_extent(&f, "b", "4294967296");
  /* A macro under #if may be dead (the live one from the command line),
   * and a kernel's own enum shadows the one outside. */
  ks_footprints g = of("#define N 1024\n"
                       "#if 0\n"
                       "#define IDX(i, j) ((i) * N - (j))\n"
                       "#else\n"
                       "#define IDX(i, j) ((i) * N + (j))\n"
                       "#endif\n"
                       "enum { L = 4 };\n"
                       "__global__ void k(float *a, float *b) {\n"
                       "  enum { L = 100 };\n"
                       "  int i = threadIdx.x;\n"
                       "  if (i < 8) a[IDX(i, 1)] = 0;\n"
                       "  b[L] = 0;\n"
                       "}\n",
                       "k");
  has_none(&g, "a", "the macro 'IDX' is defined more than once");
  has_none(&g, "b", "'L', declared inside the kernel");
}

/* ---- the apps, through their slices ---- */

static const char *extent_text(const ks_footprint *p) {
  return p->extent ? p->extent : ks_arena_printf(&arena, "- (%s)", p->why);
}

typedef struct corpus_result {
  const char *kernel;
  ks_footprints f;
} corpus_result;

/* Every kernel of a directory, sliced and analysed, printed as a table. */
static size_t run_corpus(const char *dir, corpus_result *out, size_t max) {
  const char *paths[1] = {dir};
  ks_scan_options opts = {.paths = paths, .npaths = 1, .no_compdb = true};
  ks_scan scan;
  if (ks_scan_run(&ctx, &opts, &scan))
    fail_msg("scan of %s: %s", dir, ctx.error);
  size_t n = 0;
  printf("%-32s %-14s %-5s %s\n", "kernel", "param", "use", "extent");
  for (size_t i = 0; i < scan.kernels.len && n < max; i++) {
    const ks_kernel *k = &scan.kernels.items[i];
    ks_slice slice;
    if (ks_slice_kernel(&ctx, &opts, &scan, k, NULL, &arena, &slice)) {
      printf("%-32s (not sliced: %s)\n", k->name, ctx.error);
      continue;
    }
    corpus_result *r = &out[n++];
    r->kernel = ks_arena_strdup(&arena, k->name);
    if (ks_footprints_from_unit(&ctx, k->name, slice.source, k->name, &arena, &r->f)) {
      printf("%-32s (not parsed: %s)\n", k->name, ctx.error);
      r->f.len = 0;
      continue;
    }
    bool first = true;
    for (size_t j = 0; j < r->f.len; j++) {
      const ks_footprint *p = &r->f.items[j];
      if (!p->extent && !strcmp(p->why, "not a pointer"))
        continue;
      printf("%-32s %-14s %c%c    %s\n", first ? r->kernel : "", p->param, p->read ? 'r' : '-',
             p->written ? 'w' : '-', extent_text(p));
      first = false;
    }
  }
  ks_scan_release(&scan);
  return n;
}

static const ks_footprints *result_of(corpus_result *r, size_t n, const char *kernel) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(r[i].kernel, kernel))
      return &r[i].f;
  fail_msg("kernel %s not analysed", kernel);
  return NULL;
}

static void apps_through_slices(void **state) {
  (void)state;
  corpus_result r[64];
  size_t n = run_corpus(ks_testdata("apps"), r, 64);
  assert_true(n >= 12);
  const ks_footprints *f = result_of(r, n, "saxpy_kernel");
  has_extent(f, "x", "n");
  has_extent(f, "y", "n");
  f = result_of(r, n, "gemv_kernel");
  has_extent(f, "A", "rows * cols");
  has_extent(f, "x", "cols");
  has_extent(f, "y", "rows");
  f = result_of(r, n, "gelu_forward_kernel");
  has_extent(f, "out", "n");
  has_extent(f, "inp", "n");
  f = result_of(r, n, "sgemm_naive_kernel");
  has_extent(f, "A", "M * K");
  has_extent(f, "B", "N * K");
  has_extent(f, "C", "M * N");
  f = result_of(r, n, "transpose_naive_kernel");
  has_extent(f, "out", "rows * cols");
  has_extent(f, "in", "rows * cols");
  f = result_of(r, n, "softmax_rows_kernel");
  has_extent(f, "out", "rows * cols");
  has_extent(f, "in", "rows * cols");
  f = result_of(r, n, "layernorm_forward_kernel");
  has_extent(f, "inp", "rows * cols");
  has_extent(f, "out", "rows * cols");
  has_extent(f, "mean", "rows");
  has_extent(f, "weight", "cols");
  f = result_of(r, n, "jacobi5_kernel");
  has_extent(f, "in", "nx * ny");
  has_extent(f, "out", "nx * ny");
  f = result_of(r, n, "histogram_kernel");
  has_extent(f, "data", "n");
  has_none(f, "bins", "read from memory");
  f = result_of(r, n, "spmv_csr_kernel");
  has_extent(f, "row_ptr", "num_rows + 1");
  has_none(f, "x", "read from memory");
  has_extent(f, "y", "num_rows");
}

/* The rules' corpus: no extent is asserted, each kernel must only be
 * analysed without failing (and without sanitizer reports). */
static void rules_corpus(void **state) {
  (void)state;
  static corpus_result r[64];
  size_t n = run_corpus(ks_testdata("rules"), r, 64);
  assert_true(n >= 8);
}

static void legacy_when_present(void **state) {
  (void)state;
  const char *dir = ks_testdata("legacy");
  struct stat sb;
  if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
    printf("testdata/legacy is not there: nothing to run\n");
    return;
  }
  static corpus_result r[512];
  size_t n = run_corpus(dir, r, 512);
  size_t proved = 0, pointers = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < r[i].f.len; j++) {
      const ks_footprint *p = &r[i].f.items[j];
      if (p->extent || strcmp(p->why, "not a pointer"))
        pointers++;
      proved += p->extent != NULL;
    }
  printf("testdata/legacy: %zu kernels, %zu of %zu pointer extents proved\n", n, proved, pointers);
}

static int setup(void **state) {
  (void)state;
  ks_ctx_init(&ctx, "test_footprint");
  ctx.verbosity = KS_LOG_ERROR;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  ks_arena_release(&arena);
  ks_ctx_release(&ctx);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(saxpy_guarded_by_n),
      cmocka_unit_test(no_guard_is_the_grid),
      cmocka_unit_test(early_return),
      cmocka_unit_test(grid_stride_loop),
      cmocka_unit_test(unsigned_parameters),
      cmocka_unit_test(below_the_pointer),
      cmocka_unit_test(const_locals_and_enumerators),
      cmocka_unit_test(sizeof_of_basic_types),
      cmocka_unit_test(loop_forms),
      cmocka_unit_test(halving_loop),
      cmocka_unit_test(minimum_bound),
      cmocka_unit_test(gemv_rows_times_cols),
      cmocka_unit_test(polybench_gemm),
      cmocka_unit_test(polybench_mvt),
      cmocka_unit_test(macros_through_macros),
      cmocka_unit_test(five_point_stencil),
      cmocka_unit_test(jacobi_with_boundary),
      cmocka_unit_test(transpose_2d),
      cmocka_unit_test(index_locals),
      cmocka_unit_test(row_alias),
      cmocka_unit_test(atomics),
      cmocka_unit_test(loads_pointers_and_members),
      cmocka_unit_test(never_used_and_null_tests),
      cmocka_unit_test(conditional_operator),
      cmocka_unit_test(indirect_index),
      cmocka_unit_test(casts_calls_and_reassignments),
      cmocka_unit_test(hidden_uses),
      cmocka_unit_test(templates),
      cmocka_unit_test(write_only),
      cmocka_unit_test(sign_unknown),
      cmocka_unit_test(arithmetic_forms),
      cmocka_unit_test(aliases_and_macros),
      cmocka_unit_test(named_constants_that_do_not_fit),
      cmocka_unit_test(apps_through_slices),
      cmocka_unit_test(legacy_when_present),
      cmocka_unit_test(rules_corpus),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
