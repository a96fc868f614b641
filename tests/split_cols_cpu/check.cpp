// split_cols's children of testdata/rules/split_cols.cu run on the CPU
// (emulated blocks, tests/tile_mm_cpu/emu.h) against the originals. The
// inputs are small integers, so every order of the sums gives the same
// float: the rewrite must give the very bits of the original.
#define KS_CPU_EMU
#include "emu.h"
static float atomicAdd(float *p, float v) { float o = *p; *p += v; return o; }
#include SPLIT_COLS_CU
#include VARIANTS
static void ints(std::vector<float> &v, unsigned seed) {
  for (auto &x : v) { seed = seed * 1664525u + 1013904223u; x = (float)((int)(seed >> 8) % 17 - 8); }
}
// colsum_acc's child, under a grid of `slabs` blocks along y (the split over
// blocks: each block's partial sum lands with atomicAdd, blocks one after the
// other here) or 1.
static int acc_run(unsigned X, unsigned S, unsigned slabs) {
  std::vector<float> a(N_ROWS * N_COLS), t(N_ROWS), y(N_COLS);
  ints(a, 7); ints(t, 8); ints(y, 9);
  std::vector<float> y1 = y, y2 = y;
  dim3 g((N_COLS + 255) / 256), b(256);
  launch(g, b, [&] { colsum_acc(a.data(), t.data(), y1.data()); });
  launch(dim3(cdiv(g.x * b.x, X), slabs), dim3(X, S), [&] { colsum_acc_ks_variant(a.data(), t.data(), y2.data()); });
  char w[64]; snprintf(w, sizeof w, "colsum_acc, %u blocks along y", slabs);
  return same(w, y1, y2);
}

int main() {
  int bad = 0;
  const unsigned X = XOUT, S = SLICES;
#if SLABS_MAX
  // the grid's y as the launch policy makes it (up to SLABS_MAX) and a
  // count that does not divide the loop
  bad |= acc_run(X, S, SLABS_MAX);
  bad |= acc_run(X, S, 3);
#else
  bad |= acc_run(X, S, 1);
  int sizes[][2] = {{100, 64}, {37, 128}, {1, 64}};
  for (auto &s : sizes) {
    int m = s[0], n = s[1];
    std::vector<float> a(m * n), x(m), y(n);
    ints(a, 1); ints(x, 2); ints(y, 3);
    std::vector<float> y1 = y, y2 = y;
    dim3 g((n + 31) / 32), b(32);
    launch(g, b, [&] { colsum_tidy(a.data(), x.data(), y1.data(), 1.5f, 0.5f, m, n); });
    launch(dim3(cdiv(g.x * b.x, X)), dim3(X, S),
           [&] { colsum_tidy_ks_variant(a.data(), x.data(), y2.data(), 1.5f, 0.5f, m, n); });
    char w[64]; snprintf(w, sizeof w, "colsum_tidy %dx%d", m, n);
    bad |= same(w, y1, y2);
  }
  {
    std::vector<float> a(N_ROWS * N_COLS), t(N_ROWS), y(N_COLS);
    ints(a, 4); ints(t, 5); ints(y, 6);
    std::vector<float> y1 = y, y2 = y;
    dim3 g((N_COLS + 255) / 256), b(256);
    launch(g, b, [&] { colsum_old(a.data(), t.data(), y1.data()); });
    launch(dim3(cdiv(g.x * b.x, X)), dim3(X, S), [&] { colsum_old_ks_variant(a.data(), t.data(), y2.data()); });
    bad |= same("colsum_old", y1, y2);
  }
#endif
  return bad;
}
