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
int main() {
  int bad = 0;
  const unsigned X = XOUT, S = SLICES;
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
  return bad;
}
