// stream_y's children of testdata/rules/stream_y.cu run on the CPU
// (emulated blocks, tests/tile_mm_cpu/emu.h) against the originals, bit for
// bit: each child computes the same expressions on the same values (its
// registers hold what the original loads), so with -ffp-contract=off on
// both sides every output, and every element it must not touch, is equal.
// RUN is the run of rows the children were made with; the sizes
// are not multiples of it, so the last run of a column is short.
#define KS_CPU_EMU
#include "emu.h"
#include STREAM_Y_CU
#include VARIANTS
static unsigned ygrid(unsigned gy) { return cdiv(gy, RUN); }
int main() {
  int bad = 0;
  int sizes[][2] = {{13, 11}, {9, 5}, {7, 20}, {10, 37}, {5, 2}, {6, 4}};
  for (auto &sz : sizes) {
    int nx = sz[0], ny = sz[1];
    size_t n = (size_t)nx * ny;
    std::vector<float> a(n), w(n), out(n);
    fill(a, 1); fill(w, 2); fill(out, 3);
    char what[96];
    for (unsigned by = 1; by <= 2u; by++) {
      dim3 b(8, by), g(cdiv(nx, 8), cdiv(ny, by)), gv(g.x, ygrid(g.y));
      std::vector<float> o1 = out, o2 = out;
      launch(g, b, [&] { jacobi2d_tidy(a.data(), o1.data(), nx, ny); });
      launch(gv, b, [&] { jacobi2d_tidy_ks_variant(a.data(), o2.data(), nx, ny); });
      snprintf(what, sizeof what, "jacobi2d_tidy %dx%d block y %u", nx, ny, by);
      bad |= same(what, o1, o2);
      o1 = out, o2 = out;
      launch(g, b, [&] { wide_y(a.data(), w.data(), o1.data(), nx, ny); });
      launch(gv, b, [&] { wide_y_ks_variant(a.data(), w.data(), o2.data(), nx, ny); });
      snprintf(what, sizeof what, "wide_y %dx%d block y %u", nx, ny, by);
      bad |= same(what, o1, o2);
    }
    // the loop form: a 1-D grid, the rows in runs along the new grid y
    std::vector<float> o1 = out, o2 = out;
    unsigned rows = ny - 1 > 1 ? (ny - 1) - 1 : 0;
    dim3 b(4), g(cdiv(nx, 4)), gv(g.x, rows ? cdiv(rows, RUN) : 1);
    launch(g, b, [&] { cols_loop(a.data(), o1.data(), nx, ny); });
    launch(gv, b, [&] { cols_loop_ks_variant(a.data(), o2.data(), nx, ny); });
    snprintf(what, sizeof what, "cols_loop %dx%d", nx, ny);
    bad |= same(what, o1, o2);
  }
  {
    std::vector<float> A(NI * NJ), B(NI * NJ);
    fill(A, 4); fill(B, 5);
    std::vector<float> b1 = B, b2 = B;
    dim3 b(16, 4), g(cdiv(NJ, 16), cdiv(NI, 4));
    launch(g, b, [&] { conv2d_old(A.data(), b1.data()); });
    launch(dim3(g.x, ygrid(g.y)), b, [&] { conv2d_old_ks_variant(A.data(), b2.data()); });
    bad |= same("conv2d_old", b1, b2);
  }
  return bad;
}
